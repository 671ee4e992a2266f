/* t_catalog.c — the catalog's single-pass reader and its lookups (DESIGN 13,
 * 14): references resolved once, O(1) lookups, duplicates, missing names,
 * sections in any order, and the record editing functions. */
#include <stdlib.h>
#include <string.h>

#include "nf_catalog.h"
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
    CHECK_EQ_U64(nf_catalog_owner(c, "proposal/head"), 0, "owner of proposal/head: text");
    CHECK_EQ_U64(nf_catalog_owner(c, "vision/x"), SIZE_MAX, "no vision component: no owner");
    CHECK_EQ_U64(nf_catalog_owner(c, "text"), SIZE_MAX, "a name without '/' has no owner");
    CHECK_EQ_U64(nf_catalog_owner(c, "textual/x"), SIZE_MAX, "a longer first segment is not text");
    CHECK_EQ_U64(c->bindings[2].component, 1, "the binding carries its owner (mtp/c -> mtp)");
    CHECK_EQ_U64(c->bindings[3].component, 0, "proposal/head's owner is text");
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
    CHECK(!c && d.n == 1 && d.v[0].code == NF_C_JSON, "a truncated text: NULL, one json record (buffer freed)");
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

int main(void)
{
    test_lookups();
    test_duplicates_and_missing();
    test_section_order();
    test_editing();
    test_owned();
    test_records();
    return nf_test_done();
}
