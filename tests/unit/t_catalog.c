/* t_catalog.c — the catalog's single-pass reader and its lookups (DESIGN 13,
 * 14): references resolved once, O(1) lookups, duplicates, missing names,
 * sections in any order, and the record editing functions. */
#include <stdlib.h>
#include <string.h>

#include "nf_catalog.h"
#include "nf_catalog_int.h"
#include "nf_json.h"
#include "nf_test.h"

/* A small valid catalog: two tensors, a resource, three bindings (one of
 * parts), two uses; pieces replaced by the tests. */
#define OBJ_W "{\"id\":\"w\",\"kind\":\"tensor\",\"shape\":[4,8],\"format\":\"bf16\",\"layout\":\"contiguous_le_v1\",\"offset\":0,\"bytes\":64}"
#define OBJ_V "{\"id\":\"v\",\"kind\":\"tensor\",\"shape\":[8],\"format\":\"fp32\",\"layout\":\"contiguous_le_v1\",\"offset\":256,\"bytes\":32}"
#define OBJ_R "{\"id\":\"r.tok\",\"kind\":\"resource\",\"encoding\":\"raw_bytes_v1\",\"offset\":288,\"bytes\":10}"
#define COMPS "{\"text\":{\"config\":{\"hidden_size\":8, \"rope_theta\": 1000000.0},\"resources\":{\"tokenizer.json\":\"r.tok\"}},\"mtp\":{\"config\":{},\"target\":\"text\"}}"
#define BINDS "{\"text/a\":{\"object\":\"w\"},\"text/b\":{\"parts\":[{\"object\":\"w\",\"range\":[0,16]},{\"object\":\"v\",\"range\":[0,8]}]},\"mtp/c\":{\"object\":\"v\"},\"proposal/head\":{\"object\":\"w\"}}"
#define USES "[{\"parameter\":\"text/a\",\"input\":\"x\",\"activation_policy\":\"A16Only\"},{\"parameter\":\"text/a\",\"input\":\"y\"},{\"parameter\":\"mtp/c\",\"input\":\"x\"}]"
#define FILES "[{\"path\":null,\"payload_bytes\":298}]"

static char *cat_text_c(const char *comps, const char *objects, const char *bindings,
                        const char *uses, const char *extra)
{
    char *t = NULL;
    if (asprintf(&t, "{\"components\":%s,\"objects\":[%s],\"bindings\":%s,\"uses\":%s,"
                     "\"files\":" FILES "%s}",
                 comps, objects, bindings, uses, extra ? extra : "") < 0)
        return NULL;
    return t;
}

static char *cat_text(const char *objects, const char *bindings, const char *uses,
                      const char *extra)
{
    return cat_text_c(COMPS, objects, bindings, uses, extra);
}

/* one component without resources: no reference to r.tok */
static char *cat_min(const char *objects, const char *bindings, const char *uses)
{
    return cat_text_c("{\"text\":{\"config\":{}}}", objects, bindings, uses, NULL);
}

static nf_catalog *parse(const char *text, nf_diags *d)
{
    nf_diags_clear(d);
    return nf_catalog_parse(text, strlen(text), NF_CAT_ARTIFACT, "m.ninfer", d);
}

/* Does d hold a record with this code and pointer? */
static bool has_diag(const nf_diags *d, nf_code code, const char *ptr)
{
    for (size_t i = 0; i < d->n; i++)
        if (d->v[i].code == code && strcmp(d->v[i].pointer, ptr) == 0)
            return true;
    return false;
}

static void test_lookups(void)
{
    nf_diags d = NF_DIAGS_INIT;
    char *t = cat_text(OBJ_W "," OBJ_V "," OBJ_R, BINDS, USES, NULL);
    nf_catalog *c = parse(t, &d);
    CHECK(c && d.n == 0, "the fixture parses clean");
    if (!c) {
        free(t);
        return;
    }
    CHECK_EQ_U64(nf_catalog_find(c, "w"), 0, "object by ID: w is /objects/0");
    CHECK_EQ_U64(nf_catalog_find(c, "r.tok"), 2, "object by ID: r.tok is /objects/2");
    CHECK_EQ_U64(nf_catalog_find(c, "nope"), SIZE_MAX, "a missing object ID: SIZE_MAX");
    CHECK_EQ_U64(nf_catalog_find(c, ""), SIZE_MAX, "the empty ID: SIZE_MAX");
    CHECK_EQ_U64(nf_catalog_find(c, NULL), SIZE_MAX, "NULL: SIZE_MAX");
    CHECK_EQ_U64(nf_catalog_find(c, "w\x01"), SIZE_MAX, "a longer ID with the same prefix: none");
    CHECK_EQ_U64(nf_catalog_binding(c, "text/b"), 1, "binding by name: text/b is the second");
    CHECK_EQ_U64(nf_catalog_binding(c, "text/z"), SIZE_MAX, "a missing binding name: SIZE_MAX");
    CHECK_EQ_U64(nf_catalog_binding(c, "text"), SIZE_MAX, "a component ID is no binding");
    CHECK_EQ_U64(nf_catalog_component(c, "mtp"), 1, "component by ID");
    CHECK_EQ_U64(nf_catalog_component(c, "vision"), SIZE_MAX, "a missing component: SIZE_MAX");
    CHECK_EQ_U64(c->components[1].target_index, 0, "mtp's target resolved to text");
    CHECK_EQ_U64(c->components[0].target_index, SIZE_MAX, "text has no target");
    /* owners: the first segment; proposal/ is text's */
    CHECK_EQ_U64(nf_catalog_owner(c, "text/layers/0/x"), 0, "owner of text/...: text");
    CHECK_EQ_U64(nf_catalog_owner(c, "mtp/c"), 1, "owner of mtp/c: mtp");
    CHECK_EQ_U64(nf_catalog_owner(c, "proposal/head"), SIZE_MAX,
                 "proposal/head without text.proposal: nobody's (spec 9.2)");
    CHECK_EQ_U64(nf_catalog_owner(c, "vision/x"), SIZE_MAX, "no vision component: no owner");
    CHECK_EQ_U64(nf_catalog_owner(c, "text"), SIZE_MAX, "a name without '/' has no owner");
    CHECK_EQ_U64(nf_catalog_owner(c, "textual/x"), SIZE_MAX, "a longer first segment is not text");
    CHECK_EQ_U64(c->bindings[2].component, 1, "the binding carries its owner (mtp/c -> mtp)");
    CHECK_EQ_U64(c->bindings[3].component, SIZE_MAX, "and its binding has no owner either");
    /* references resolved once */
    CHECK_EQ_U64(c->bindings[0].b.obj, 0, "text/a -> object 0");
    CHECK(c->bindings[0].b.object == c->objects[0].id, "the reference shares the object's ID");
    CHECK_EQ_U64(c->bindings[1].b.parts[1].obj, 1, "a part resolved: text/b part 1 -> v");
    CHECK_EQ_U64(c->components[0].resources[0].obj, 2, "the resource reference resolved");
    CHECK_EQ_U64(c->uses[0].binding, 0, "use 0 -> binding text/a");
    CHECK_EQ_U64(c->uses[2].binding, 2, "use 2 -> binding mtp/c");
    CHECK(c->uses[1].parameter == c->bindings[0].name, "a use's parameter shares its binding's name");
    CHECK(c->uses[0].input == c->uses[2].input, "equal inputs are interned once");
    size_t n = 9;
    const size_t *ul = nf_catalog_uses_of(c, 0, &n);
    CHECK(n == 2 && ul && ul[0] == 0 && ul[1] == 1, "the uses of text/a: /uses/0 and /uses/1");
    ul = nf_catalog_uses_of(c, 1, &n);
    CHECK(n == 0 && !ul, "text/b has no use");
    ul = nf_catalog_uses_of(c, 99, &n);
    CHECK(n == 0 && !ul, "a binding index out of range has no uses");
    CHECK_EQ_U64(nf_catalog_use(c, "text/a", "y"), 1, "use by (parameter, input)");
    CHECK_EQ_U64(nf_catalog_use(c, "text/a", "z"), SIZE_MAX, "a missing use: SIZE_MAX");
    CHECK_EQ_U64(nf_catalog_use(c, "text/ay", ""), SIZE_MAX, "the key's parts do not run together");
    /* open members are spans of the text, as written */
    CHECK(c->components[0].config_len == strlen("{\"hidden_size\":8, \"rope_theta\": 1000000.0}") &&
              memcmp(c->components[0].config_text, "{\"hidden_size\":8, \"rope_theta\": 1000000.0}",
                     c->components[0].config_len) == 0,
          "config kept byte for byte (its spaces and 1000000.0)");
    CHECK(c->components[1].config_len == 2, "an empty config: {}");
    size_t tl;
    CHECK(nf_catalog_text(c, &tl) && tl == strlen(t) && memcmp(nf_catalog_text(c, NULL), t, tl) == 0,
          "the catalog text comes back unchanged");
    /* encoding on demand */
    nf_encoding enc;
    CHECK(nf_object_encoding(&c->objects[0], &enc) == NF_ENC_OK && enc.encoded_bytes == 64 &&
              enc.elements == 32,
          "the encoding of w: 64 bytes, 32 elements");
    CHECK_EQ_U64(c->objects[0].elements, 32, "elements kept in the record");
    CHECK(nf_object_encoding(&c->objects[2], &enc) != NF_ENC_OK, "a resource has no tensor encoding");
    nf_catalog_free(c);
    free(t);
    nf_diags_free(&d);
}

/* The owner of proposal/ names follows text.proposal (spec 9.2), the
 * same answer for nf_catalog_owner, the binding record and the selection. */
static void test_proposal_owner(void)
{
    nf_diags d = NF_DIAGS_INIT;
    char *t = cat_text_c("{\"mtp\":{\"config\":{},\"target\":\"text\"},"
                         "\"text\":{\"config\":{},\"proposal\":{\"domain\":\"full\"}}}",
                         OBJ_W "," OBJ_V, "{\"proposal/head\":{\"object\":\"w\"},\"mtp/c\":{\"object\":\"v\"}}",
                         "[]", NULL);
    nf_catalog *c = parse(t, &d);
    CHECK(c && d.n == 0, "text with a proposal, listed second, parses clean");
    if (c) {
        CHECK_EQ_U64(nf_catalog_owner(c, "proposal/head"), 1, "proposal/head: text (/components' second)");
        CHECK_EQ_U64(c->bindings[0].component, 1, "its binding carries the same owner");
        CHECK_EQ_U64(nf_catalog_owner(c, "proposal"), SIZE_MAX, "\"proposal\" alone: no owner");
        CHECK_EQ_U64(nf_catalog_owner(c, NULL), SIZE_MAX, "NULL: no owner");
        CHECK_EQ_U64(nf_catalog_owner(NULL, "text/a"), SIZE_MAX, "no catalog: no owner");
    }
    nf_catalog_free(c);
    free(t);
    nf_diags_free(&d);
}

static void test_duplicates_and_missing(void)
{
    nf_diags d = NF_DIAGS_INIT;
    /* a duplicate object ID: reported, the first one wins every lookup */
    char *t = cat_text(OBJ_W "," OBJ_V ",{\"id\":\"w\",\"kind\":\"tensor\",\"shape\":[1],"
                       "\"format\":\"bf16\",\"layout\":\"contiguous_le_v1\",\"offset\":512,\"bytes\":2}",
                       "{\"text/a\":{\"object\":\"w\"}}", "[]", NULL);
    nf_catalog *c = parse(t, &d);
    CHECK(c && has_diag(&d, NF_C_DUPLICATE_ID, "/objects/2/id"), "duplicate object ID -> duplicate-id at /objects/2/id");
    CHECK(c && nf_catalog_find(c, "w") == 0, "the first of two equal IDs wins the lookup");
    CHECK(c && c->bindings[0].b.obj == 0, "and the reference");
    nf_catalog_free(c);
    free(t);
    /* a duplicate use */
    t = cat_text(OBJ_W, "{\"text/a\":{\"object\":\"w\"}}",
                 "[{\"parameter\":\"text/a\",\"input\":\"x\"},{\"parameter\":\"text/a\",\"input\":\"x\"}]",
                 NULL);
    c = parse(t, &d);
    CHECK(c && has_diag(&d, NF_C_DUPLICATE_USE, "/uses/1"), "duplicate (parameter, input) -> duplicate-use at /uses/1");
    CHECK(c && nf_catalog_use(c, "text/a", "x") == 0, "the first use wins the lookup");
    nf_catalog_free(c);
    free(t);
    /* a use whose binding is missing */
    t = cat_text(OBJ_W, "{\"text/a\":{\"object\":\"w\"}}",
                 "[{\"parameter\":\"text/q\",\"input\":\"x\"}]", NULL);
    c = parse(t, &d);
    CHECK(c && has_diag(&d, NF_C_REFERENCE, "/uses/0/parameter"), "a use of a missing binding -> reference at /uses/0/parameter");
    CHECK(c && c->uses[0].binding == SIZE_MAX, "its binding index is SIZE_MAX");
    CHECK(c && c->uses[0].parameter && strcmp(c->uses[0].parameter, "text/q") == 0, "its parameter is kept");
    size_t n = 7;
    CHECK(c && !nf_catalog_uses_of(c, 0, &n) && n == 0, "text/a has no use");
    nf_catalog_free(c);
    free(t);
    /* a binding to a missing object and to a resource */
    t = cat_text(OBJ_W "," OBJ_R, "{\"text/a\":{\"object\":\"nope\"},\"text/b\":{\"object\":\"r.tok\"}}",
                 "[]", NULL);
    c = parse(t, &d);
    CHECK(c && has_diag(&d, NF_C_REFERENCE, "/bindings/text~1a/object"), "a missing object -> reference at /bindings/text~1a/object");
    CHECK(c && has_diag(&d, NF_C_REFERENCE, "/bindings/text~1b/object"), "a resource bound as a tensor -> reference");
    CHECK(c && c->bindings[0].b.obj == SIZE_MAX, "the missing one stays unresolved");
    nf_catalog_free(c);
    free(t);
    /* a target that is no component */
    t = NULL;
    if (asprintf(&t, "{\"components\":{\"text\":{\"config\":{}},\"mtp\":{\"config\":{},\"target\":\"txt\"}},"
                     "\"objects\":[" OBJ_W "],\"bindings\":{},\"uses\":[],\"files\":[{\"path\":null,"
                     "\"payload_bytes\":64}]}") >= 0) {
        c = parse(t, &d);
        CHECK(c && has_diag(&d, NF_C_REFERENCE, "/components/mtp/target"), "an unknown target -> reference");
        CHECK(c && c->components[1].target_index == SIZE_MAX, "and no target index");
        nf_catalog_free(c);
        free(t);
    }
    nf_diags_free(&d);
}

/* Sections in any order give the same records: objects after the bindings
 * that refer to them, integrity before the objects it names. */
static void test_section_order(void)
{
    nf_diags d = NF_DIAGS_INIT;
    const char *hex = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
    char *t = NULL;
    if (asprintf(&t, "{\"metadata\":{\"integrity\":{\"sha256\":{\"v\":\"%s\",\"ghost\":\"%s\"}},"
                     "\"name\":\"m\"},\"uses\":" USES ",\"bindings\":" BINDS ",\"files\":" FILES
                     ",\"objects\":[" OBJ_W "," OBJ_V "," OBJ_R "],\"components\":" COMPS "}",
                 hex, hex) < 0)
        return;
    nf_catalog *c = parse(t, &d);
    CHECK(c && d.n == 1 && has_diag(&d, NF_C_INTEGRITY, "/metadata/integrity/sha256/ghost"),
          "integrity ahead of the objects: only the digest for no object is reported");
    if (c) {
        CHECK(c->objects[1].has_digest && c->objects[1].digest[0] == 0x00 &&
                  c->objects[1].digest[31] == 0xff,
              "the digest read before its object reaches it");
        char h[65];
        nf_object_digest_hex(&c->objects[1], h);
        CHECK_STR(h, hex, "digest back to hex");
        CHECK(!c->objects[0].has_digest, "an object without a digest has none");
        CHECK_EQ_U64(c->bindings[1].b.parts[1].obj, 1, "parts resolved after the pass");
        CHECK_EQ_U64(c->uses[2].binding, 2, "uses ahead of bindings resolve too");
        CHECK(c->metadata_text && c->metadata_len > 10 && c->metadata_text[0] == '{' &&
                  c->metadata_text[c->metadata_len - 1] == '}',
              "metadata kept as its span");
    }
    nf_catalog_free(c);
    free(t);
    nf_diags_free(&d);
}

/* The record editing of ninfer-quant. */
static void test_editing(void)
{
    nf_diags d = NF_DIAGS_INIT;
    char *t = cat_text(OBJ_W "," OBJ_V "," OBJ_R, BINDS, USES, NULL);
    nf_catalog *c = parse(t, &d);
    if (!c) {
        free(t);
        return;
    }
    CHECK(nf_object_set_digest_hex(&c->objects[0],
                                   "FFEEDDCCBBAA99887766554433221100ffeeddccbbaa99887766554433221100"),
          "a digest set from hex (either case)");
    CHECK(!nf_object_set_digest_hex(&c->objects[0], "abc"), "a short hex digest is refused");
    CHECK(nf_object_set_encoding(c, 0, "q8_g32_fp16", "row_split_k128_v1", 0),
          "an object gets a new encoding");
    CHECK(c->objects[0].format == NF_FMT_Q8_G32_FP16 && c->objects[0].enc_status == NF_ENC_OK &&
              !c->objects[0].has_digest && c->objects[0].has_bytes,
          "format, status and bytes follow; the digest is dropped");
    CHECK_STR(c->objects[0].format_name, "q8_g32_fp16", "the format name");
    CHECK(nf_use_set_policy(c, &c->uses[1], "AllowA8") &&
              strcmp(c->uses[1].activation_policy, "AllowA8") == 0,
          "a use's policy set");
    uint64_t dims[1] = {1};
    size_t k = nf_catalog_add_tensor(c, "a.div", NULL, 0, "fp32", "contiguous_le_v1",
                                     "{\"values\":[1.0],\"dtype\":\"f32\"}");
    CHECK_EQ_U64(k, 3, "a scalar object added at the end");
    CHECK_EQ_U64(nf_catalog_find(c, "a.div"), 3, "and found by its ID");
    CHECK_EQ_U64(nf_catalog_add_tensor(c, "w", dims, 1, "fp32", "contiguous_le_v1", NULL),
                 SIZE_MAX, "an ID in use is refused");
    for (int i = 0; i < 100; i++) {
        char id[32];
        snprintf(id, sizeof id, "more.%d", i);
        nf_catalog_add_tensor(c, id, dims, 1, "fp32", "contiguous_le_v1", NULL);
    }
    CHECK_EQ_U64(nf_catalog_find(c, "more.99"), 103, "a hundred more: the map grows with them");
    CHECK_EQ_U64(nf_catalog_find(c, "w"), 0, "the first ones are still found");
    CHECK(nf_use_add_aux(c, &c->uses[0], "activation_input_divisor", "a.div", 3) &&
              c->uses[0].n_aux == 1 && c->uses[0].aux[0].b.obj == 3,
          "an auxiliary added to a use");
    CHECK(!nf_use_add_aux(c, &c->uses[0], "activation_input_divisor", "a.div", 3),
          "the same role twice is refused");
    CHECK(nf_catalog_set_provenance(c, "quantization", "{\"a\":1.50}") &&
              c->provenance_len == strlen("{\"quantization\":{\"a\":1.50}}") &&
              memcmp(c->provenance_text, "{\"quantization\":{\"a\":1.50}}", c->provenance_len) == 0,
          "provenance member set, its number text kept");
    nf_catalog_free(c);
    free(t);
    nf_diags_free(&d);
}

/* Parse-owned: the buffer is the catalog's; on failure it is freed. */
static void test_owned(void)
{
    nf_diags d = NF_DIAGS_INIT;
    char *t = cat_text(OBJ_W, "{}", "[]", NULL);
    size_t n = strlen(t);
    nf_catalog *c = nf_catalog_parse_owned(t, n, NF_CAT_ARTIFACT, NULL, &d);
    CHECK(c && nf_catalog_text(c, NULL) == t, "the owned buffer is the catalog's text");
    nf_catalog_free(c);
    nf_diags_clear(&d);
    char *bad = strdup("{\"components\": ");
    c = nf_catalog_parse_owned(bad, strlen(bad), NF_CAT_ARTIFACT, NULL, &d);
    CHECK(!c && d.n == 1 && d.v[0].code == NF_C_HEADER && !strcmp(d.v[0].pointer, ""),
          "a truncated entry catalog: NULL, one header record, no pointer (buffer freed)");
    nf_diags_clear(&d);
    bad = strdup("{\"components\": ");
    c = nf_catalog_parse_owned(bad, strlen(bad), NF_CAT_MANIFEST, NULL, &d);
    CHECK(!c && d.n == 1 && d.v[0].code == NF_C_JSON, "a truncated manifest: json");
    nf_diags_clear(&d);
    /* duplicates found before the cut stay; the cut is the header's */
    bad = strdup("{\"a\": 1, \"a\": 2, \"b\": [tr");
    c = nf_catalog_parse_owned(bad, strlen(bad), NF_CAT_ARTIFACT, NULL, &d);
    CHECK(!c && d.n == 2 && d.v[0].code == NF_C_DUPLICATE_MEMBER && d.v[1].code == NF_C_HEADER,
          "a duplicate, then a cut: duplicate-member and header");
    nf_diags_clear(&d);
    bad = malloc(24);
    memcpy(bad, "{\"a\": 1}   \0\0\0\0\0 x\0\0\0\0\0\0\0", 24);
    c = nf_catalog_parse_owned(bad, 24, NF_CAT_ARTIFACT, NULL, &d);
    CHECK(!c && d.n == 1 && d.v[0].code == NF_C_HEADER,
          "zero bytes after the value: header (%s)", d.n ? d.v[0].message : "");
    nf_diags_clear(&d);
    bad = strdup("{\"a\": 1}  x");
    c = nf_catalog_parse_owned(bad, strlen(bad), NF_CAT_ARTIFACT, NULL, &d);
    CHECK(!c && d.n == 1 && d.v[0].code == NF_C_JSON, "other garbage after the value: json");
    nf_diags_clear(&d);
    char *arr = strdup("[1, 2]");
    c = nf_catalog_parse_owned(arr, strlen(arr), NF_CAT_ARTIFACT, NULL, &d);
    CHECK(!c && d.n == 1 && d.v[0].code == NF_C_SCHEMA, "an array root: NULL, schema");
    nf_diags_free(&d);
}

/* A record's diagnostics keep their order and pointers whatever the text's
 * member order, and escaped member names count as what they spell. */
static void test_records(void)
{
    nf_diags d = NF_DIAGS_INIT;
    char *t = cat_min("{\"bytes\":64,\"sh\\u0061pe\":[4,8],\"layout\":\"contiguous_le_v1\","
                       "\"format\":\"bf16\",\"offset\":0,\"kind\":\"tensor\",\"id\":\"w\",\"x\":1}",
                       "{}", "[]");
    nf_catalog *c = parse(t, &d);
    CHECK(c && d.n == 1 && has_diag(&d, NF_C_SCHEMA, "/objects/0/x"),
          "members in any order, an escaped name: only the unknown member is reported");
    CHECK(c && c->objects[0].rank == 2 && c->objects[0].dims[1] == 8, "the shape read through \\u0061");
    nf_catalog_free(c);
    free(t);
    /* 17 dimensions: a rank error, without reading them */
    t = cat_min("{\"id\":\"w\",\"kind\":\"tensor\",\"shape\":[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1],"
                 "\"format\":\"bf16\",\"layout\":\"contiguous_le_v1\",\"offset\":0,\"bytes\":2}",
                 "{}", "[]");
    c = parse(t, &d);
    CHECK(c && has_diag(&d, NF_C_SCHEMA, "/objects/0/shape"), "rank 17 -> schema at /objects/0/shape");
    nf_catalog_free(c);
    free(t);
    /* U64 fields: negative, above 2^64-1, a fraction */
    t = cat_min("{\"id\":\"w\",\"kind\":\"tensor\",\"shape\":[-1,18446744073709551616],"
                 "\"format\":\"bf16\",\"layout\":\"contiguous_le_v1\",\"offset\":1.5,\"bytes\":-0}",
                 "{}", "[]");
    c = parse(t, &d);
    CHECK(c && has_diag(&d, NF_C_RANGE, "/objects/0/shape/0"), "a negative dimension -> range");
    CHECK(c && has_diag(&d, NF_C_RANGE, "/objects/0/shape/1"), "2^64 -> range");
    CHECK(c && has_diag(&d, NF_C_SCHEMA, "/objects/0/offset"), "1.5 -> schema");
    CHECK(c && has_diag(&d, NF_C_RANGE, "/objects/0/bytes"), "-0 bytes reads as 0: must be positive");
    bool msg = false;
    for (size_t i = 0; i < d.n; i++)
        msg |= strstr(d.v[i].message, "not 1.5") != NULL;
    CHECK(msg, "the message quotes the number as written");
    nf_catalog_free(c);
    free(t);
    nf_diags_free(&d);
}

/* ---- the json-c serializer this writer replaced, kept as the reference:
 * the new one must give the same bytes (compact and pretty) ---- */

static nf_jval *ref_binding_json(const nf_binding *b)
{
    nf_jval *o = nf_jnew_object();
    if (!o)
        return NULL;
    if (!b->parts) {
        nf_jobj_set(o, "object", nf_jnew_string(b->object ? b->object : ""));
        return o;
    }
    nf_jval *arr = nf_jnew_array();
    for (size_t i = 0; arr && i < b->n_parts; i++) {
        nf_jval *p = nf_jnew_object(), *r = nf_jnew_array();
        if (!p || !r) {
            nf_jval_free(p);
            nf_jval_free(r);
            nf_jval_free(arr);
            nf_jval_free(o);
            return NULL;
        }
        nf_jobj_set(p, "object", nf_jnew_string(b->parts[i].object ? b->parts[i].object : ""));
        nf_jarr_push(r, nf_jnew_u64(b->parts[i].begin));
        nf_jarr_push(r, nf_jnew_u64(b->parts[i].end));
        nf_jobj_set(p, "range", r);
        nf_jarr_push(arr, p);
    }
    nf_jobj_set(o, "parts", arr);
    return o;
}

/* The unescaped name of a member (raw_name is a span of accepted JSON). */
static char *ref_member_name(const char *text, nf_span raw_name)
{
    const char *raw = text + raw_name.start;
    if (!memchr(raw, '\\', raw_name.len))
        return strndup(raw, raw_name.len);
    char *quoted = NULL, *out = NULL;
    if (asprintf(&quoted, "\"%.*s\"", (int)raw_name.len, raw) < 0)
        return NULL;
    nf_diags tmp = NF_DIAGS_INIT;
    nf_jdoc *nd = nf_jdoc_parse(quoted, strlen(quoted), 4, &tmp);
    size_t nl = 0;
    const char *name = nd ? nf_jstr(nf_jdoc_root(nd), &nl) : NULL;
    if (name)
        out = strndup(name, nl);
    nf_jdoc_free(nd);
    nf_diags_free(&tmp);
    free(quoted);
    return out;
}

/* metadata members other than integrity, their values as written */
static bool ref_meta_member(void *vctx, const char *text, nf_span raw_name, nf_span value)
{
    nf_jval *m = vctx;
    char *name = ref_member_name(text, raw_name);
    if (name && strcmp(name, "integrity") != 0)
        nf_jobj_set(m, name, nf_jnew_raw(text + value.start, value.len));
    free(name);
    return true;
}

static char *ref_serialize(const nf_catalog *c, const nf_serialize_opts *op, size_t *len)
{
    nf_jval *root = nf_jnew_object();
    if (!root)
        return NULL;
    nf_jval *comps = nf_jnew_object();
    for (size_t i = 0; i < c->n_components; i++) {
        const nf_component *k = &c->components[i];
        nf_jval *o = nf_jnew_object();
        nf_jobj_set(o, "config", nf_jnew_raw(k->config_text ? k->config_text : "{}",
                                             k->config_text ? k->config_len : 2));
        if (k->target)
            nf_jobj_set(o, "target", nf_jnew_string(k->target));
        if (k->n_resources) {
            nf_jval *r = nf_jnew_object();
            for (size_t j = 0; j < k->n_resources; j++)
                nf_jobj_set(r, k->resources[j].role, nf_jnew_string(k->resources[j].object));
            nf_jobj_set(o, "resources", r);
        }
        if (k->has_proposal) {
            nf_jval *p = nf_jnew_object();
            nf_jobj_set(p, "domain", nf_jnew_string(k->proposal_indexed ? "indexed" : "full"));
            if (k->has_rows)
                nf_jobj_set(p, "rows", nf_jnew_u64(k->proposal_rows));
            nf_jobj_set(o, "proposal", p);
        }
        nf_jobj_set(comps, k->id, o);
    }
    nf_jobj_set(root, "components", comps);

    nf_jval *objs = nf_jnew_array();
    for (size_t i = 0; i < c->n_objects; i++) {
        const nf_object *ob = &c->objects[i];
        nf_jval *o = nf_jnew_object();
        /* a catalog with problems may lack any of these: write "" */
        nf_jobj_set(o, "id", nf_jnew_string(ob->id ? ob->id : ""));
        if (ob->kind == NF_OBJ_TENSOR) {
            nf_jobj_set(o, "kind", nf_jnew_string("tensor"));
            nf_jval *sh = nf_jnew_array();
            for (unsigned r = 0; r < ob->rank; r++)
                nf_jarr_push(sh, nf_jnew_u64(ob->dims[r]));
            nf_jobj_set(o, "shape", sh);
            nf_jobj_set(o, "format", nf_jnew_string(ob->format_name ? ob->format_name : ""));
            nf_jobj_set(o, "layout", nf_jnew_string(ob->layout_name ? ob->layout_name : ""));
        } else {
            nf_jobj_set(o, "kind", nf_jnew_string("resource"));
            nf_jobj_set(o, "encoding", nf_jnew_string(ob->encoding_name ? ob->encoding_name
                                                                        : "raw_bytes_v1"));
        }
        if (!op->manifest) {
            nf_jobj_set(o, "offset", nf_jnew_u64(ob->offset));
            nf_jobj_set(o, "bytes", nf_jnew_u64(ob->bytes));
        } else if (ob->kind == NF_OBJ_RESOURCE && ob->bytes_given && !op->artifact_path) {
            nf_jobj_set(o, "bytes", nf_jnew_u64(ob->bytes));
        }
        if (ob->kind == NF_OBJ_TENSOR && ob->has_divisors)
            nf_jobj_set(o, "divisors", nf_jnew_u64(ob->divisors));
        if (op->manifest && !op->artifact_path && ob->source_raw) {
            nf_jobj_set(o, "source", nf_jnew_raw(ob->source_raw, strlen(ob->source_raw)));
        } else if (op->manifest && op->artifact_path) {
            nf_jval *s = nf_jnew_object();
            nf_jobj_set(s, "artifact", nf_jnew_string(op->artifact_path));
            nf_jobj_set(s, "object", nf_jnew_string(ob->id ? ob->id : ""));
            nf_jobj_set(o, "source", s);
        }
        nf_jarr_push(objs, o);
    }
    nf_jobj_set(root, "objects", objs);

    nf_jval *binds = nf_jnew_object();
    for (size_t i = 0; i < c->n_bindings; i++)
        nf_jobj_set(binds, c->bindings[i].name, ref_binding_json(&c->bindings[i].b));
    nf_jobj_set(root, "bindings", binds);

    nf_jval *uses = nf_jnew_array();
    for (size_t i = 0; i < c->n_uses; i++) {
        const nf_use *u = &c->uses[i];
        nf_jval *o = nf_jnew_object();
        nf_jobj_set(o, "parameter", nf_jnew_string(u->parameter ? u->parameter : ""));
        nf_jobj_set(o, "input", nf_jnew_string(u->input ? u->input : ""));
        if (u->activation_policy)
            nf_jobj_set(o, "activation_policy", nf_jnew_string(u->activation_policy));
        if (u->n_aux) {
            nf_jval *a = nf_jnew_object();
            for (size_t j = 0; j < u->n_aux; j++)
                nf_jobj_set(a, u->aux[j].role, ref_binding_json(&u->aux[j].b));
            nf_jobj_set(o, "auxiliaries", a);
        }
        nf_jarr_push(uses, o);
    }
    nf_jobj_set(root, "uses", uses);

    if (!op->manifest && op->files) {
        nf_jval *files = nf_jnew_array();
        for (size_t i = 0; i < op->n_files; i++) {
            nf_jval *f = nf_jnew_object();
            nf_jobj_set(f, "path", op->files[i].path ? nf_jnew_string(op->files[i].path) : NULL);
            nf_jobj_set(f, "payload_bytes", nf_jnew_u64(op->files[i].payload_bytes));
            nf_jarr_push(files, f);
        }
        nf_jobj_set(root, "files", files);
    }

    bool any_digest = false;
    if (op->digests && !op->manifest)
        for (size_t i = 0; i < c->n_objects; i++)
            any_digest |= c->objects[i].has_digest;
    if (c->has_metadata || any_digest) {
        nf_jval *m = nf_jnew_object();
        if (c->metadata_text)
            nf_jspan_members(c->metadata_text, nf_jspan_root(c->metadata_text, c->metadata_len),
                             ref_meta_member, m);
        if (any_digest) {
            nf_jval *in = nf_jnew_object(), *sh = nf_jnew_object();
            for (size_t i = 0; i < c->n_objects; i++)
                if (c->objects[i].has_digest) {
                    char hex[65];
                    nf_object_digest_hex(&c->objects[i], hex);
                    nf_jobj_set(sh, c->objects[i].id, nf_jnew_string(hex));
                }
            nf_jobj_set(in, "sha256", sh);
            nf_jobj_set(m, "integrity", in);
        }
        nf_jobj_set(root, "metadata", m);
    }
    if (c->provenance_text)
        nf_jobj_set(root, "provenance", nf_jnew_raw(c->provenance_text, c->provenance_len));
    char *text = nf_jval_to_text(root, op->pretty, len);
    nf_jval_free(root);
    return text;
}


/* Serialize c with o by both writers; they must agree byte for byte. */
static bool same_as_reference(const nf_catalog *c, const nf_serialize_opts *o, const char *what)
{
    size_t n1 = 0, n2 = 0;
    char *a = nf_catalog_serialize(c, o, &n1), *b = ref_serialize(c, o, &n2);
    bool eq = a && b && n1 == n2 && memcmp(a, b, n1) == 0;
    if (!eq)
        printf("# %s\n# new: %.*s\n# ref: %.*s\n", what, (int)(n1 > 3000 ? 3000 : n1), a ? a : "",
               (int)(n2 > 3000 ? 3000 : n2), b ? b : "");
    bool len_ok = a && nf_catalog_serialized_len(c, o) == n1;
    free(a);
    free(b);
    return eq && len_ok;
}

static void serializer_cases(const char *text, nf_cat_mode mode, const char *what)
{
    nf_diags d = NF_DIAGS_INIT;
    nf_catalog *c = nf_catalog_parse(text, strlen(text), mode, "m.ninfer", &d);
    CHECK(c != NULL, "%s parses", what);
    if (!c)
        return;
    nf_serialize_opts so = {0};
    so.files = c->files;
    so.n_files = c->n_files;
    so.digests = true;
    for (int pretty = 0; pretty < 2; pretty++) {
        so.pretty = pretty;
        so.manifest = false;
        so.artifact_path = NULL;
        CHECK(same_as_reference(c, &so, what), "%s: artifact form, %s: the same bytes as json-c",
              what, pretty ? "pretty" : "compact");
        so.manifest = true;
        CHECK(same_as_reference(c, &so, what), "%s: manifest form, %s: the same bytes", what,
              pretty ? "pretty" : "compact");
        so.artifact_path = "/a/b \"c\".ninfer";
        CHECK(same_as_reference(c, &so, what), "%s: manifest of an artifact, %s: the same bytes",
              what, pretty ? "pretty" : "compact");
    }
    nf_catalog_free(c);
    nf_diags_free(&d);
}

/* The compact text of a source without json-c equals json-c's. */
static void test_compact(void)
{
    static const char *const cases[] = {
        "{\"file\": \"/a/b\", \"offset\": 0, \"dtype\": \"f32\"}",
        "{ \"values\" : [ 1.0, 1E5, -0.0, 1e400, -0, 0, 12345678901234567890, 18446744073709551615,"
        " 9223372036854775808, -9223372036854775808, -9223372036854775809, -99999999999999999999,"
        " 1.5e-3 ], \"dtype\":\"f32\" }",
        "{\"a\" : \"\\/\\u00e9\\u0001\\u001F\\n\\\"\\\\\" , \"b\":[ true,false, null, {}, [] ]}",
        "{\"concat\":[{\"safetensors\":\"x\",\"tensor\":\"t\",\"rows\":[0,4]},"
        "{\"gguf\":\"g\",\"tensor\":\"u\",\"unpermute\":{\"scheme\":\"llama-rope\",\"heads\":8}}]}",
        "{\"n\\u0061me\":\"\\ud83d\\ude00\", \"\\t\":1}",
        "\"a string\"", "-0", "[-0,[-0]]",
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        nf_diags d = NF_DIAGS_INIT;
        nf_jdoc *doc = nf_jdoc_parse(cases[i], strlen(cases[i]), 0, &d);
        char *want = doc ? nf_jval_to_text(nf_jdoc_root(doc), false, NULL) : NULL;
        size_t n = 0;
        char *got = nf_json_c_compact(cases[i], strlen(cases[i]), &n);
        CHECK(want && got && strcmp(want, got) == 0 && n == strlen(want),
              "compact text %zu equals json-c's (%s)", i, got ? got : "(null)");
        free(want);
        free(got);
        nf_jdoc_free(doc);
        nf_diags_free(&d);
    }
    /* what it leaves to json-c */
    CHECK(!nf_json_c_compact("[18446744073709551616]", 22, NULL), "an integer above U64: json-c's");
    CHECK(!nf_json_c_compact("{\"a\\u0000b\":1}", 14, NULL), "a name with U+0000: json-c's");
}

static void test_serializer(void)
{
    const char *hex = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
    char *t = NULL;
    /* every record kind, escapes in IDs and names, metadata and provenance
     * with numbers written in ways json-c would rewrite */
    if (asprintf(&t, "{\"components\":{\"text\":{\"config\":{\"a\": 1.0, \"b\": [1e3, -0, 2E-2]},"
                     "\"resources\":{\"tok/\\\"x\\\"\\u0001\":\"r.tok\"},\"proposal\":{\"domain\":\"indexed\",\"rows\":5}},"
                     "\"mtp\":{\"config\":{},\"target\":\"text\"},\"vision\":{\"config\":{},\"proposal\":{\"domain\":\"full\"}}},"
                     "\"objects\":[" OBJ_W ",{\"id\":\"v\\t\\u00e9\",\"kind\":\"tensor\",\"shape\":[],\"format\":\"fp32\","
                     "\"layout\":\"contiguous_le_v1\",\"offset\":256,\"bytes\":4},"
                     "{\"id\":\"q\",\"kind\":\"tensor\",\"shape\":[128,64],\"format\":\"nvfp4\",\"layout\":\"block_scale_k16_m128x4_v1\","
                     "\"offset\":512,\"bytes\":4616,\"divisors\":2}," OBJ_R "],"
                     "\"bindings\":{\"text/a\":{\"object\":\"w\"},\"text/b\\/c\":{\"parts\":[{\"object\":\"w\",\"range\":[0,16]},"
                     "{\"object\":\"q\",\"range\":[64,128]}]}},"
                     "\"uses\":[{\"parameter\":\"text/a\",\"input\":\"x\",\"activation_policy\":\"AllowA4\","
                     "\"auxiliaries\":{\"activation_input_divisor\":{\"object\":\"v\\t\\u00e9\"},\"hadamard_signs\":{\"parts\":[{\"object\":\"w\",\"range\":[0,1]}]}}},"
                     "{\"parameter\":\"text/b/c\",\"input\":\"y\"}],"
                     "\"files\":[{\"path\":null,\"payload_bytes\":8192},{\"path\":\"m.ninfer.part-0001\",\"payload_bytes\":100}],"
                     "\"metadata\":{\"name\":\"n\\u0061me\",\"n\\u0061me2\": {\"x\" : [ 1.50 , 2 ]},\"integrity\":{\"sha256\":{\"w\":\"%s\",\"q\":\"%s\"}},\"z\":null},"
                     "\"provenance\":{\"tool\": \"x\", \"n\": 1.0e+5}}",
                 hex, hex) >= 0)
        serializer_cases(t, NF_CAT_ARTIFACT, "a catalog of every record kind");
    free(t);
    /* a manifest: sources kept (json-c's compact form), resource bytes as given */
    serializer_cases("{\"components\":{\"text\":{\"config\":{}}},\"objects\":[{\"id\":\"w\",\"kind\":\"tensor\","
                     "\"shape\":[2,2],\"format\":\"bf16\",\"layout\":\"contiguous_le_v1\",\"source\": {\"values\": "
                     "[1.0, 2, 3e0, -4.5], \"dtype\": \"f32\"}},{\"id\":\"r\",\"kind\":\"resource\",\"encoding\":"
                     "\"raw_bytes_v1\",\"bytes\":3,\"source\":{\"file\":\"a\\/b\",\"offset\":0}}],\"bindings\":{},"
                     "\"uses\":[]}",
                     NF_CAT_MANIFEST, "a manifest with sources");
    /* empty containers at every level */
    serializer_cases("{\"components\":{\"text\":{\"config\":{}}},\"objects\":[" OBJ_W "],\"bindings\":{},"
                     "\"uses\":[],\"files\":[{\"path\":null,\"payload_bytes\":64}],\"metadata\":{},\"provenance\":{}}",
                     NF_CAT_ARTIFACT, "empty bindings, uses, metadata, provenance");
    /* round trip: our own output parses back to the same bytes */
    if (asprintf(&t, "{\"components\":" COMPS ",\"objects\":[" OBJ_W "," OBJ_V "," OBJ_R "],\"bindings\":" BINDS
                     ",\"uses\":" USES ",\"files\":" FILES ",\"metadata\":{\"integrity\":{\"sha256\":{\"v\":\"%s\"}},"
                     "\"k\":1e-06},\"provenance\":{\"x\":[1.0,2e3]}}", hex) >= 0) {
        nf_diags d = NF_DIAGS_INIT;
        nf_catalog *c = nf_catalog_parse(t, strlen(t), NF_CAT_ARTIFACT, "m.ninfer", &d);
        nf_serialize_opts so = {c ? c->files : NULL, c ? c->n_files : 0, true, false, NULL, false};
        size_t n1 = 0, n2 = 0;
        char *a = c ? nf_catalog_serialize(c, &so, &n1) : NULL;
        nf_catalog *c2 = a ? nf_catalog_parse(a, n1, NF_CAT_ARTIFACT, "m.ninfer", &d) : NULL;
        so.files = c2 ? c2->files : NULL;
        char *b = c2 ? nf_catalog_serialize(c2, &so, &n2) : NULL;
        CHECK(a && b && n1 == n2 && memcmp(a, b, n1) == 0 && d.n == 0,
              "serialize(parse(serialize(c))) == serialize(c), byte for byte");
        CHECK(a && strstr(a, "\"k\":1e-06") && strstr(a, "\"provenance\":{\"x\":[1.0,2e3]}") &&
                  strstr(a, "\"rope_theta\": 1000000.0"),
              "number text kept in metadata, provenance and config");
        CHECK(a && strstr(a, "\"integrity\":{\"sha256\":{\"v\":\"00112233"), "the digest written back");
        free(a);
        free(b);
        nf_catalog_free(c);
        nf_catalog_free(c2);
        nf_diags_free(&d);
    }
    free(t);
}

/* The only record with this pointer, and its code and message. */
static bool only_diag(const nf_diags *d, nf_code code, const char *ptr, const char *msg)
{
    return d->n == 1 && d->v[0].code == code && strcmp(d->v[0].pointer, ptr) == 0 &&
           strcmp(d->v[0].message, msg) == 0;
}

/* A record's text as nf_diag keeps it: the first NF_DIAG_MAX_TEXT - 3
 * bytes of want (all ASCII here) and "...". */
static bool same_capped(const char *got, const char *want)
{
    size_t k = NF_DIAG_MAX_TEXT - 3;
    return strlen(want) > NF_DIAG_MAX_TEXT && strlen(got) == NF_DIAG_MAX_TEXT &&
           !strncmp(got, want, k) && !strcmp(got + k, "...");
}

/* Red-team findings A0, A5, A6 and A7 (findings.md), each with the exact
 * record; under SANITIZE=1 these also prove no use-after-free, UB or leak. */
static void test_hostile_records(void)
{
    nf_diags d = NF_DIAGS_INIT;
    char *long_name = malloc(5001);
    memset(long_name, 'z', 5000);
    long_name[5000] = 0;
    char *t = NULL, *want = NULL;
    nf_catalog *c;
    /* A0: an unknown member in an auxiliary binding is keyed under its
     * role, not under the member's own name (which reused the role's
     * scratch buffer: /uses/0/auxiliaries/z/z) */
    t = cat_min(OBJ_W, "{\"text/a\":{\"object\":\"w\"}}",
                "[{\"parameter\":\"text/a\",\"input\":\"x\",\"auxiliaries\":{\"r\":{\"object\":\"w\",\"z\":1}}}]");
    c = parse(t, &d);
    CHECK(c && only_diag(&d, NF_C_SCHEMA, "/uses/0/auxiliaries/r/z", "unknown member \"z\" in binding"),
          "A0: unknown member z of auxiliary r -> schema at /uses/0/auxiliaries/r/z (got %s)",
          d.n ? d.v[0].pointer : "none");
    nf_catalog_free(c);
    free(t);
    /* A0, the long name that made the buffer move (heap-use-after-free) */
    if (asprintf(&t, "[{\"parameter\":\"text/a\",\"input\":\"x\",\"auxiliaries\":"
                     "{\"activation_input_divisor\":{\"object\":\"w\",\"%s\":1}}}]", long_name) >= 0) {
        char *u = t;
        t = cat_min(OBJ_W, "{\"text/a\":{\"object\":\"w\"}}", u);
        free(u);
        c = parse(t, &d);
        CHECK(asprintf(&want, "/uses/0/auxiliaries/activation_input_divisor/%s", long_name) >= 0 &&
                  c && d.n == 1 && d.v[0].code == NF_C_SCHEMA && same_capped(d.v[0].pointer, want),
              "A0: a 5000-byte unknown member: the pointer keeps the role");
        free(want);
        nf_catalog_free(c);
        free(t);
    }
    /* A0, the same inside an auxiliary's parts */
    if (asprintf(&t, "[{\"parameter\":\"text/a\",\"input\":\"x\",\"auxiliaries\":{\"hadamard_signs\":"
                     "{\"parts\":[{\"object\":\"w\",\"range\":[0,1],\"%s\":1}]}}}]", long_name) >= 0) {
        char *u = t;
        t = cat_min(OBJ_W, "{\"text/a\":{\"object\":\"w\"}}", u);
        free(u);
        c = parse(t, &d);
        CHECK(asprintf(&want, "/uses/0/auxiliaries/hadamard_signs/parts/0/%s", long_name) >= 0 &&
                  c && d.n == 1 && d.v[0].code == NF_C_SCHEMA && same_capped(d.v[0].pointer, want),
              "A0: an unknown member of an auxiliary's part: /uses/0/auxiliaries/hadamard_signs/parts/0/zzz...");
        free(want);
        nf_catalog_free(c);
        free(t);
    }
    /* and a resource role whose reference is no string */
    t = cat_text_c("{\"text\":{\"config\":{},\"resources\":{\"tok\":5}}}", OBJ_W, "{}", "[]", NULL);
    c = parse(t, &d);
    CHECK(c && only_diag(&d, NF_C_SCHEMA, "/components/text/resources/tok",
                         "a resource reference must be a string, not integer"),
          "a resource reference 5 -> schema at /components/text/resources/tok (got %s: %s)",
          d.n ? d.v[0].pointer : "none", d.n ? d.v[0].message : "");
    nf_catalog_free(c);
    free(t);
    /* A5: an empty resources map is valid (spec 4.2) */
    t = cat_text_c("{\"text\":{\"config\":{},\"resources\":{}}}", OBJ_W, "{}", "[]", NULL);
    c = parse(t, &d);
    CHECK(c && d.n == 0 && c->n_components == 1 && c->components[0].n_resources == 0,
          "A5: \"resources\": {} parses clean, no resources");
    nf_catalog_free(c);
    free(t);
    /* A5: an empty component object lacks its config */
    t = cat_text_c("{\"t\":{}}", OBJ_W, "{}", "[]", NULL);
    c = parse(t, &d);
    CHECK(c && only_diag(&d, NF_C_SCHEMA, "/components/t/config",
                         "component lacks required member \"config\""),
          "A5: a component {} -> schema at /components/t/config");
    nf_catalog_free(c);
    free(t);
    /* A6: a repeated root "objects": duplicate-member; the first array's
     * records stay (the sanitized build proves nothing of either leaks) */
    const char *m6 = "{\"components\":{\"text\":{\"config\":{}}},"
                     "\"objects\":[{\"id\":\"a\",\"kind\":\"resource\",\"encoding\":\"raw_bytes_v1\",\"source\":{\"file\":\"blob\"}}],"
                     "\"objects\":[{\"id\":\"b\",\"kind\":\"resource\",\"encoding\":\"raw_bytes_v1\",\"source\":{\"file\":\"blob\"}},"
                     "{\"id\":\"c\",\"kind\":\"resource\",\"encoding\":\"raw_bytes_v1\",\"source\":{\"file\":\"blob2\"}}],"
                     "\"bindings\":{},\"uses\":[]}";
    nf_diags_clear(&d);
    c = nf_catalog_parse(m6, strlen(m6), NF_CAT_MANIFEST, "m.json", &d);
    CHECK(!c && only_diag(&d, NF_C_DUPLICATE_MEMBER, "/objects", "duplicate member \"objects\""),
          "A6: a second \"objects\" -> duplicate-member at /objects, no manifest (got %zu records, %s)",
          d.n, d.n ? d.v[0].message : "");
    nf_catalog_free(c);
    /* the same in a stored catalog whose repeat would hold errors of its
     * own: only the duplicate is reported (the repeat is not read) */
    t = cat_text(OBJ_W "],\"objects\":[{\"id\":\"\"}," OBJ_R, "{}", "[]", NULL);
    c = parse(t, &d);
    CHECK(!c && only_diag(&d, NF_C_DUPLICATE_MEMBER, "/objects", "duplicate member \"objects\""),
          "A6: a repeated \"objects\" in a catalog: duplicate-member only (%zu records)", d.n);
    nf_catalog_free(c);
    free(t);
    /* a root member named "objects\u0000x" is no second "objects": the
     * scanner refuses every member name holding U+0000 (ninfer(5)) */
    t = cat_min(OBJ_W "],\"objects\\u0000x\":[" OBJ_V, "{}", "[]");
    c = parse(t, &d);
    CHECK(!c && d.n == 1 && d.v[0].code == NF_C_SCHEMA && !strcmp(d.v[0].pointer, "/objects?x") &&
              strstr(d.v[0].message, "member name \"objects\\u0000x\" at byte ") &&
              strstr(d.v[0].message, " holds U+0000"),
          "\"objects\\u0000x\" -> schema at /objects?x (%s)", d.n ? d.v[0].message : "");
    nf_catalog_free(c);
    free(t);
    /* A7: parts whose element count passes 2^64-1: range at the parts */
    const char *huge = "{\"id\":\"h\",\"kind\":\"tensor\",\"shape\":[2305843009213693952,2],\"format\":\"bf16\","
                       "\"layout\":\"contiguous_le_v1\",\"offset\":0,\"bytes\":9223372036854775808}";
    const char *part = "{\"object\":\"h\",\"range\":[0,4611686018427387904]}";
    if (asprintf(&t, "{\"components\":{\"text\":{\"config\":{}}},\"objects\":[%s],\"bindings\":"
                     "{\"text/b\":{\"parts\":[%s,%s,%s,%s,{\"object\":\"h\",\"range\":[0,256]}]},"
                     "\"text/c\":{\"parts\":[%s,%s,%s,{\"object\":\"h\",\"range\":[0,4611686018427387903]}]}},"
                     "\"uses\":[],\"files\":[{\"path\":null,\"payload_bytes\":9223372036854775808}]}",
                 huge, part, part, part, part, part, part, part) >= 0) {
        c = parse(t, &d);
        CHECK(c && only_diag(&d, NF_C_RANGE, "/bindings/text~1b/parts",
                             "the parts cover more than 2^64-1 elements (spec 1: sums stay within U64)"),
              "A7: 4 x 2^62 + 256 elements -> range at /bindings/text~1b/parts, text/c (exactly 2^64-1) clean (got %zu: %s %s)",
              d.n, d.n ? d.v[0].pointer : "", d.n ? d.v[0].message : "");
        uint64_t el = 0;
        CHECK(c && !nf_binding_elements(c, &c->bindings[0].b, &el),
              "A7: nf_binding_elements says the sum does not fit");
        nf_catalog_free(c);
        free(t);
    }
    free(long_name);
    nf_diags_free(&d);
}

int main(void)
{
    test_lookups();
    test_proposal_owner();
    test_duplicates_and_missing();
    test_section_order();
    test_editing();
    test_owned();
    test_records();
    test_serializer();
    test_compact();
    test_hostile_records();
    return nf_test_done();
}
