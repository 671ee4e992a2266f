/* t_source.c — the manifest source module (nf_source.h, DESIGN 5): parse
 * each kind with its members, the rule diagnostics at their pointers, the
 * text nf_source_write gives (compact and pretty, as json-c writes the
 * same tree), and a frozen source in a frozen record printing as the tree
 * would. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nf_json.h"
#include "nf_source.h"
#include "nf_test.h"

static nf_source *parse(const char *text, nf_diags *d)
{
    nf_diags_clear(d);
    return nf_source_parse(text, strlen(text), 0, "/objects/3/source", "w", NULL, NULL, d);
}

static bool has_diag(const nf_diags *d, nf_code code, const char *ptr)
{
    for (size_t i = 0; i < d->n; i++)
        if (d->v[i].code == code && strcmp(d->v[i].pointer, ptr) == 0)
            return true;
    return false;
}

/* The compact text of a source parsed from text. */
static char *roundtrip(const char *text)
{
    nf_diags d = NF_DIAGS_INIT;
    nf_source *s = parse(text, &d);
    char *t = s && d.n == 0 ? nf_source_text(s) : NULL;
    nf_source_free(s);
    nf_diags_free(&d);
    return t;
}

/* json-c's text of the JSON text (through a tree): what nf_source_write
 * must equal. */
static char *jsonc(const char *text, bool pretty)
{
    nf_diags d = NF_DIAGS_INIT;
    nf_jdoc *doc = nf_jdoc_parse(text, strlen(text), 0, &d);
    char *t = doc ? nf_jval_to_text(nf_jdoc_root(doc), pretty, NULL) : NULL;
    nf_jdoc_free(doc);
    nf_diags_free(&d);
    return t;
}

static void test_parse(void)
{
    nf_diags d = NF_DIAGS_INIT;
    nf_source *s = parse("{\"gguf\": \"/m/x.gguf\", \"tensor\": \"blk.0.attn_q.weight\", "
                         "\"rows\": [2, 6], \"unpermute\": {\"scheme\": \"llama-rope\", "
                         "\"heads\": 4}, \"map\": \"minus-one\"}", &d);
    CHECK(s && d.n == 0, "a gguf source with rows, llama-rope and a map parses");
    CHECK(s && s->kind == NF_SRC_GGUF && !strcmp(s->path, "/m/x.gguf") &&
              !strcmp(s->name, "blk.0.attn_q.weight"), "its kind, path and tensor");
    CHECK(s && s->has_rows && s->rows[0] == 2 && s->rows[1] == 6, "rows [2, 6)");
    CHECK(s && s->has_unpermute && s->unpermute == NF_UNPERMUTE_LLAMA_ROPE &&
              s->unpermute_heads == 4 && s->map == NF_VMAP_MINUS_ONE, "llama-rope of 4 heads, minus-one");
    CHECK_STR(s ? s->pointer : NULL, "/objects/3/source", "its pointer");
    nf_source_free(s);

    s = parse("{\"concat\": [{\"safetensors\": \"a.st\", \"tensor\": \"q\"}, "
              "{\"artifact\": \"b.ninfer\", \"object\": \"k\", \"unpermute\": {\"scheme\": "
              "\"v-heads-tiled\", \"axis\": \"columns\", \"k_heads\": 2, \"v_heads\": 4, "
              "\"head_dim\": 8}}]}", &d);
    CHECK(s && d.n == 0 && s->kind == NF_SRC_CONCAT && s->n_items == 2, "a concat of two items");
    CHECK(s && s->items[0].kind == NF_SRC_SAFETENSORS && s->items[1].kind == NF_SRC_ARTIFACT &&
              !strcmp(s->items[1].name, "k"), "the items' kinds and names");
    CHECK(s && s->items[1].unpermute == NF_UNPERMUTE_V_HEADS_TILED &&
              s->items[1].unpermute_columns && s->items[1].k_heads == 2 &&
              s->items[1].v_heads == 4 && s->items[1].head_dim == 8, "v-heads-tiled on columns");
    CHECK_STR(s && s->n_items == 2 ? s->items[1].pointer : NULL, "/objects/3/source/concat/1",
              "an item's pointer");
    nf_source_free(s);

    s = parse("{\"values\": [1, -2.5, 3e2], \"dtype\": \"f32\"}", &d);
    CHECK(s && d.n == 0 && s->kind == NF_SRC_VALUES && s->n_values == 3 &&
              s->values[1] == -2.5 && s->values[2] == 300.0 && !strcmp(s->dtype, "f32"),
          "inline values and their dtype");
    nf_source_free(s);

    s = parse("{\"file\": \"w.bin\", \"offset\": 4096, \"dtype\": \"bf16\"}", &d);
    CHECK(s && d.n == 0 && s->kind == NF_SRC_FILE && s->offset == 4096, "a file at an offset");
    nf_source_free(s);
    nf_diags_free(&d);
}

static void test_rules(void)
{
    nf_diags d = NF_DIAGS_INIT;
    static const struct {
        const char *text;
        nf_code code;
        const char *ptr;
        const char *what;
    } bad[] = {
        {"{\"file\": \"a\", \"gguf\": \"b\", \"tensor\": \"t\"}", NF_C_SCHEMA, "/objects/3/source",
         "two kinds"},
        {"{\"gguf\": \"b\"}", NF_C_SCHEMA, "/objects/3/source/tensor", "a gguf source without tensor"},
        {"{\"file\": \"a\", \"colour\": 1}", NF_C_SCHEMA, "/objects/3/source/colour", "an unknown member"},
        {"{\"file\": \"\"}", NF_C_SCHEMA, "/objects/3/source/file", "an empty path"},
        {"{\"file\": \"a\", \"dtype\": \"f8\"}", NF_C_SCHEMA, "/objects/3/source/dtype", "an unknown dtype"},
        {"{\"file\": \"a\", \"offset\": -1}", NF_C_RANGE, "/objects/3/source/offset", "a negative offset"},
        {"{\"safetensors\": \"a\", \"tensor\": \"t\", \"rows\": [4, 4]}", NF_C_RANGE,
         "/objects/3/source/rows", "empty rows"},
        {"{\"safetensors\": \"a\", \"tensor\": \"t\", \"rows\": [1, 2.5]}", NF_C_SCHEMA,
         "/objects/3/source/rows/1", "a fractional row"},
        {"{\"values\": [1, \"x\"]}", NF_C_SCHEMA, "/objects/3/source/values/1", "a value that is no number"},
        {"{\"concat\": []}", NF_C_SCHEMA, "/objects/3/source/concat", "an empty concat"},
        {"{\"concat\": [{\"gguf\": \"g\"}]}", NF_C_SCHEMA, "/objects/3/source/concat/0/tensor",
         "a bad concat item"},
        {"{\"gguf\": \"g\", \"tensor\": \"t\", \"map\": \"square\"}", NF_C_SCHEMA,
         "/objects/3/source/map", "an unknown map"},
        {"{\"gguf\": \"g\", \"tensor\": \"t\", \"unpermute\": {\"scheme\": \"v-heads-tiled\", "
         "\"axis\": \"rows\", \"k_heads\": 3, \"v_heads\": 4, \"head_dim\": 1}}", NF_C_RANGE,
         "/objects/3/source/unpermute/v_heads", "v_heads not a multiple of k_heads"},
        {"{\"gguf\": \"g\", \"tensor\": \"t\", \"unpermute\": {\"scheme\": \"v-heads-tiled\", "
         "\"axis\": \"columns\", \"k_heads\": 2, \"v_heads\": 4, \"head_dim\": 1, \"offset\": 2}}",
         NF_C_SCHEMA, "/objects/3/source/unpermute/offset", "an offset on columns"},
        {"{\"gguf\": \"g\", \"tensor\": \"t\", \"unpermute\": {\"scheme\": \"llama-rope\", "
         "\"heads\": 0}}", NF_C_RANGE, "/objects/3/source/unpermute/heads", "zero heads"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        nf_source *s = parse(bad[i].text, &d);
        CHECK(s && has_diag(&d, bad[i].code, bad[i].ptr), "%s: %s at %s", bad[i].what,
              nf_code_name(bad[i].code), bad[i].ptr);
        nf_source_free(s);
    }
    nf_source *s = parse("{\"file\": ", &d);
    CHECK(!s && d.n > 0 && !strncmp(d.v[0].pointer, "/objects/3/source", 17),
          "text that is not JSON: no tree, the diagnostic under the source's pointer");
    nf_diags_free(&d);
}

static void test_write(void)
{
    static const char *const texts[] = {
        "{\"gguf\":\"/m/x.gguf\",\"tensor\":\"blk.0.attn_q.weight\",\"rows\":[0,64],"
        "\"unpermute\":{\"scheme\":\"llama-rope\",\"heads\":4}}",
        "{\"safetensors\":\"/m/model.safetensors\",\"tensor\":\"a\\\"b\\\\c\\n\\u0001\","
        "\"unpermute\":{\"scheme\":\"v-heads-tiled\",\"axis\":\"columns\",\"k_heads\":2,"
        "\"v_heads\":4,\"head_dim\":8},\"map\":\"log-neg\"}",
        "{\"values\":[0,1,2,31],\"dtype\":\"i32\"}",
        "{\"values\":[1.0,-2.5,0.10000000000000001],\"dtype\":\"f64\"}",
        "{\"file\":\"/m/x.gguf\",\"offset\":1234}",
        "{\"artifact\":\"/a/b.ninfer\",\"object\":\"text/head\"}",
        "{\"concat\":[{\"gguf\":\"g\",\"tensor\":\"q\",\"rows\":[0,2]},"
        "{\"gguf\":\"g\",\"tensor\":\"k\"}]}",
        "{\"gguf\":\"g\",\"tensor\":\"t\",\"unpermute\":{\"scheme\":\"v-heads-tiled\","
        "\"axis\":\"rows\",\"k_heads\":2,\"v_heads\":4,\"head_dim\":1,\"offset\":3}}",
    };
    for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) {
        char *t = roundtrip(texts[i]);
        CHECK_STR(t, texts[i], "source %zu is written back as json-c's compact text", i);
        char *j = jsonc(texts[i], false);
        CHECK_STR(t, j, "source %zu: the same as json-c writes its tree", i);
        free(t);
        free(j);
    }
    /* pretty at level 0 equals json-c's pretty text of the tree */
    nf_diags d = NF_DIAGS_INIT;
    nf_source *s = parse(texts[6], &d);
    size_t n = s ? nf_source_write(s, true, 0, NULL, 0) : 0;
    char *buf = calloc(n + 1, 1);
    if (s && buf)
        nf_source_write(s, true, 0, buf, n);
    char *j = jsonc(texts[6], true);
    CHECK_STR(buf, j, "pretty: json-c's pretty form");
    /* too small a buffer: nothing written, the whole length returned */
    char small[8] = "xxxxxxx";
    CHECK(s && nf_source_write(s, false, 0, small, 7) == strlen(texts[6]) &&
              !strcmp(small, "xxxxxxx"), "a buffer too small is left as it is");
    free(buf);
    free(j);
    /* pretty at level 3: the closing brace at 6 spaces, members at 8 */
    nf_source a = {.kind = NF_SRC_ARTIFACT, .path = "/a.ninfer", .name = "w"};
    char out[256] = {0};
    nf_source_write(&a, true, 3, out, sizeof out - 1);
    CHECK_STR(out, "{\n        \"artifact\": \"/a.ninfer\",\n        \"object\": \"w\"\n      }",
              "pretty at level 3 (an object's source in a catalog)");
    nf_source_free(s);
    nf_diags_free(&d);
}

/* A values source holds elements of its dtype (ninfer-pack(1)): integer
 * dtypes take JSON integers in range (checked as written), float dtypes any
 * number that rounds to a finite value, which then replaces it. */
static void test_values_dtype(void)
{
    nf_diags d = NF_DIAGS_INIT;
    static const struct {
        const char *values, *dtype;
        nf_code code;    /* 0: accepted */
        size_t at;       /* the value reported */
    } cases[] = {
        {"[1, 300]", "i8", NF_C_RANGE, 1},
        {"[127, -128]", "i8", 0, 0},
        {"[-129]", "i8", NF_C_RANGE, 0},
        {"[-1]", "u8", NF_C_RANGE, 0},
        {"[-0, 255]", "u8", 0, 0},
        {"[256]", "u8", NF_C_RANGE, 0},
        {"[70000]", "i16", NF_C_RANGE, 0},
        {"[-32768, 32767]", "i16", 0, 0},
        {"[65535]", "u16", 0, 0},
        {"[2147483648]", "i32", NF_C_RANGE, 0},
        {"[4294967295]", "u32", 0, 0},
        {"[4294967296]", "u32", NF_C_RANGE, 0},
        {"[-9223372036854775808, 9223372036854775807]", "i64", 0, 0},
        {"[-9223372036854775809]", "i64", NF_C_RANGE, 0}, /* json-c saturates it */
        {"[9223372036854775808]", "i64", NF_C_RANGE, 0},
        {"[0, 18446744073709551615]", "u64", 0, 0},
        {"[18446744073709551616]", "u64", NF_C_RANGE, 0},
        {"[1, 2.5]", "i8", NF_C_SCHEMA, 1},
        {"[2.0]", "i32", NF_C_SCHEMA, 0},
        {"[1e2]", "u8", NF_C_SCHEMA, 0},
        {"[70000]", "f16", NF_C_RANGE, 0},
        {"[65519.99]", "f16", 0, 0},   /* rounds to 65504 */
        {"[-65520]", "f16", NF_C_RANGE, 0}, /* the midpoint: ties to even, 65536 */
        {"[65519.99999999999]", "f16", 0, 0}, /* the double below the midpoint */
        /* bf16's largest + half an ulp (0x7f7f8000 as f32 bits), exactly */
        {"[339617752923046005526922703901628039168]", "bf16", NF_C_RANGE, 0},
        {"[3.3961775292304597e38]", "bf16", 0, 0},
        /* f32's: FLT_MAX + half an ulp, exactly, and the double below */
        {"[340282356779733661637539395458142568448]", "f32", NF_C_RANGE, 0},
        {"[3.4028235677973362e38]", "f32", 0, 0},
        {"[-3.4028236e38]", "f32", NF_C_RANGE, 0},
        {"[1e300]", "f64", 0, 0},
        /* past the double range: infinite in every float dtype, range
         * whatever --allow-nonfinite says (ninfer-pack(1)) */
        {"[1e400]", "f16", NF_C_RANGE, 0},
        {"[1, -1e400]", "f32", NF_C_RANGE, 1},
        {"[1e400]", "f64", NF_C_RANGE, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char text[160], ptr[64];
        snprintf(text, sizeof text, "{\"values\": %s, \"dtype\": \"%s\"}", cases[i].values,
                 cases[i].dtype);
        snprintf(ptr, sizeof ptr, "/objects/3/source/values/%zu", cases[i].at);
        nf_source *s = parse(text, &d);
        bool ok = cases[i].code ? s && d.n == 1 && d.v[0].code == cases[i].code &&
                                      !strcmp(d.v[0].pointer, ptr) &&
                                      !strncmp(d.v[0].message, "object \"w\": value ", 18)
                                : s && d.n == 0;
        CHECK(ok, "%s as %s: %s", cases[i].values, cases[i].dtype,
              cases[i].code ? nf_code_name(cases[i].code) : "accepted");
        if (!ok && d.n)
            printf("#   %s: %s\n", d.v[0].pointer, d.v[0].message);
        nf_source_free(s);
    }
    nf_source *s = parse("{\"values\": [1, 300], \"dtype\": \"i8\"}", &d);
    CHECK_STR(d.n ? d.v[0].message : NULL,
              "object \"w\": value 1 (300) is out of range for dtype i8 (-128..127)",
              "the message names the object, the value and the range");
    nf_source_free(s);
    s = parse("{\"values\": [0.1, 65519.99, 1e-8, 4e-8, -0.0], \"dtype\": \"f16\"}", &d);
    CHECK(s && d.n == 0 && s->values[0] == 0.0999755859375 && s->values[1] == 65504.0 &&
              s->values[2] == 0.0 && s->values[3] == 0x1p-24 && s->values[4] == 0.0 &&
              signbit(s->values[4]),
          "f16 values are the f16 elements they round to (subnormals, signed zero)");
    nf_source_free(s);
    s = parse("{\"values\": [100000000000000000000, -99999999999999999999999]}", &d);
    CHECK(s && d.n == 0 && s->values[0] == 1e20 && s->values[1] == -99999999999999999999999.0,
          "integer literals beyond 64 bits keep their value (json-c saturates them)");
    nf_source_free(s);
    s = parse("{\"values\": [1.00048828125000000001, 1.0009765625], \"dtype\": \"f16\"}", &d);
    CHECK(s && d.n == 0 && s->values[0] == 1.0 && s->values[1] == 1.0009765625,
          "ties to even: 1 + 2^-11 rounds to 1 in f16");
    nf_source_free(s);
    s = parse("{\"values\": [0.1], \"dtype\": \"bf16\"}", &d);
    CHECK(s && d.n == 0 && s->values[0] == 0.10009765625, "0.1 as bf16");
    nf_source_free(s);
    /* an i64/u64 value that a double rounds up past the end is written as
     * the end, which reads back as the same double */
    char *t = roundtrip("{\"values\": [9223372036854775807, -9223372036854775808], \"dtype\": \"i64\"}");
    CHECK_STR(t, "{\"values\":[9223372036854775807,-9223372036854775808],\"dtype\":\"i64\"}",
              "i64 ends written back in range");
    free(t);
    t = roundtrip("{\"values\": [18446744073709551615, 9223372036854775808], \"dtype\": \"u64\"}");
    CHECK_STR(t, "{\"values\":[18446744073709551615,9223372036854775808],\"dtype\":\"u64\"}",
              "u64 values above 2^63 written as integers");
    free(t);
    /* a values source inside a concat is checked too */
    s = parse("{\"concat\": [{\"values\": [1, 2], \"dtype\": \"i8\"}, "
              "{\"values\": [3, -4], \"dtype\": \"u8\"}]}", &d);
    CHECK(s && d.n == 1 && d.v[0].code == NF_C_RANGE &&
              !strcmp(d.v[0].pointer, "/objects/3/source/concat/1/values/1"),
          "a concat item's values: range at its own pointer");
    nf_source_free(s);
    nf_diags_free(&d);
}

/* A frozen source inside a record that is frozen in turn prints as json-c
 * prints the whole tree, compact and pretty (the importer's manifests). */
static void test_frozen(void)
{
    const char *src = "{\"gguf\":\"/g\",\"tensor\":\"t\",\"rows\":[0,2]}";
    nf_jval *o = nf_jnew_object(), *o2 = nf_jnew_object();
    nf_diags d = NF_DIAGS_INIT;
    nf_jdoc *doc = nf_jdoc_parse(src, strlen(src), 0, &d);
    nf_jobj_set(o, "id", nf_jnew_string("t"));
    nf_jobj_set(o, "source", nf_jnew_frozen(src, strlen(src)));
    nf_jobj_set(o2, "id", nf_jnew_string("t"));
    nf_jobj_set(o2, "source", nf_jval_ref(nf_jdoc_root(doc)));
    nf_jval *f = nf_jval_freeze(o);
    nf_jval *arr = nf_jnew_array(), *arr2 = nf_jnew_array();
    nf_jarr_push(arr, f);
    nf_jarr_push(arr2, o2);
    char *a = nf_jval_to_text(arr, true, NULL), *b = nf_jval_to_text(arr2, true, NULL);
    CHECK(f != o || nf_jtype_of(f) == NF_J_STRING, "a record holding a frozen source freezes");
    CHECK_STR(a, b, "and prints, pretty, as the tree does");
    free(a);
    free(b);
    a = nf_jval_to_text(arr, false, NULL);
    b = nf_jval_to_text(arr2, false, NULL);
    CHECK_STR(a, b, "and compact");
    free(a);
    free(b);
    nf_jval_free(arr);
    nf_jval_free(arr2);
    nf_jdoc_free(doc);
    nf_diags_free(&d);
}

int main(void)
{
    test_parse();
    test_rules();
    test_write();
    test_values_dtype();
    test_frozen();
    return nf_test_done();
}
