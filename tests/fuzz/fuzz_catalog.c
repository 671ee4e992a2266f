/* fuzz_catalog.c — libFuzzer harness over nf_catalog_parse (the strict JSON
 * pre-scan, json-c, and every rule of spec 11.1 and DESIGN 13), in both
 * modes, and over serialization:
 *
 *   - NF_CAT_ARTIFACT: a catalog that parses without any diagnostic must
 *     serialize (with its own files table and digests) to text that parses
 *     without any diagnostic, and serializing that again gives the same text
 *     (one round trip reaches a fixed point);
 *   - NF_CAT_MANIFEST: a manifest that parses clean must serialize in the
 *     manifest form to text that parses clean again; after nf_catalog_layout
 *     succeeds, its artifact form (one file holding the payload) must parse
 *     clean as a stored catalog (what ninfer-pack writes, ninfer-verify reads).
 *
 * Input: the catalog text itself (no framing).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "nf_catalog.h"

static void cat_dump(const char *what, const nf_diags *d, const char *text, size_t len)
{
    for (size_t i = 0; i < d->n; i++)
        fprintf(stderr, "%s: %s: %s: %s\n", what, d->v[i].pointer, nf_code_name(d->v[i].code),
                d->v[i].message);
    fprintf(stderr, "text: %.*s\n", (int)(len > 4000 ? 4000 : len), text);
}

/* Parse text in mode and require no diagnostic. Returns the catalog. */
static nf_catalog *cat_must_parse(const char *text, size_t len, nf_cat_mode mode,
                                  const char *what)
{
    nf_diags d = NF_DIAGS_INIT;
    nf_catalog *c = nf_catalog_parse(text, len, mode, "e.ninfer", &d);
    if (!c || d.n || d.dropped)
        cat_dump(what, &d, text, len);
    NF_FUZZ_ASSERT(c && d.n == 0 && d.dropped == 0, "%s does not parse clean", what);
    nf_diags_free(&d);
    return c;
}

static void cat_artifact(const uint8_t *data, size_t size)
{
    nf_diags d = NF_DIAGS_INIT;
    nf_catalog *c = nf_catalog_parse((const char *)data, size, NF_CAT_ARTIFACT, "e.ninfer", &d);
    bool clean = c && d.n == 0 && d.dropped == 0;
    nf_diags_free(&d);
    if (!c)
        return;
    nf_serialize_opts so = {0};
    so.files = c->files;
    so.n_files = c->n_files;
    so.digests = true;
    size_t len = 0;
    char *text = nf_catalog_serialize(c, &so, &len);
    if (text && clean) {
        nf_catalog *c2 = cat_must_parse(text, len, NF_CAT_ARTIFACT, "serialized catalog");
        nf_serialize_opts so2 = so;
        so2.files = c2->files;
        so2.n_files = c2->n_files;
        size_t len2 = 0;
        char *text2 = nf_catalog_serialize(c2, &so2, &len2);
        if (text2 && (len2 != len || memcmp(text, text2, len) != 0))
            fprintf(stderr, "first:  %.*s\nsecond: %.*s\n", (int)(len > 2000 ? 2000 : len), text,
                    (int)(len2 > 2000 ? 2000 : len2), text2);
        NF_FUZZ_ASSERT(!text2 || (len2 == len && memcmp(text, text2, len) == 0),
                       "serialize(parse(serialize(c))) differs from serialize(c)");
        free(text2);
        nf_catalog_free(c2);
        /* the pretty form must parse the same */
        so.pretty = true;
        size_t plen = 0;
        char *pretty = nf_catalog_serialize(c, &so, &plen);
        if (pretty)
            nf_catalog_free(cat_must_parse(pretty, plen, NF_CAT_ARTIFACT, "pretty catalog"));
        free(pretty);
    }
    free(text);
    /* the manifest view of a stored catalog (ninfer-cat --manifest) */
    if (clean) {
        nf_serialize_opts mo = {0};
        mo.manifest = true;
        mo.artifact_path = "e.ninfer";
        size_t mlen = 0;
        char *m = nf_catalog_serialize(c, &mo, &mlen);
        if (m)
            nf_catalog_free(cat_must_parse(m, mlen, NF_CAT_MANIFEST, "manifest view"));
        free(m);
    }
    nf_catalog_free(c);
}

static void cat_manifest(const uint8_t *data, size_t size)
{
    nf_diags d = NF_DIAGS_INIT;
    nf_catalog *c = nf_catalog_parse((const char *)data, size, NF_CAT_MANIFEST, "e.ninfer", &d);
    bool clean = c && d.n == 0 && d.dropped == 0;
    nf_diags_free(&d);
    if (!c)
        return;
    nf_serialize_opts so = {0};
    so.manifest = true;
    size_t len = 0;
    char *text = nf_catalog_serialize(c, &so, &len);
    if (text && clean)
        nf_catalog_free(cat_must_parse(text, len, NF_CAT_MANIFEST, "serialized manifest"));
    free(text);
    nf_diags ld = NF_DIAGS_INIT;
    int rc = nf_catalog_layout(c, &ld);
    nf_diags_free(&ld);
    if (rc == 0 && clean && c->payload_bytes > 0) {
        nf_file one = {NULL, c->payload_bytes, 0};
        nf_serialize_opts ao = {0};
        ao.files = &one;
        ao.n_files = 1;
        ao.digests = true;
        size_t alen = 0;
        char *art = nf_catalog_serialize(c, &ao, &alen);
        if (art)
            nf_catalog_free(cat_must_parse(art, alen, NF_CAT_ARTIFACT, "laid-out manifest"));
        free(art);
    }
    nf_catalog_free(c);
}

int NF_FUZZ_ENTRY(catalog)(const uint8_t *data, size_t size);
int NF_FUZZ_ENTRY(catalog)(const uint8_t *data, size_t size)
{
    cat_artifact(data, size);
    cat_manifest(data, size);
    return 0;
}
