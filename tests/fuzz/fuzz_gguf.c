/* fuzz_gguf.c — libFuzzer harness over the GGUF reader (nf_gguf.h): header,
 * key/values (nested arrays, strings), tensor infos, alignment and bounds.
 *
 * Input: a whole GGUF file, handed to nf_gguf_open as an in-memory regular
 * file (a memfd opened through /proc/self/fd). A file that opens must keep
 * the reader's promises: every tensor's data inside the file and after the
 * data start, every key and tensor found again by name, every value
 * readable as JSON that our strict parser accepts. The same bytes parsed as
 * a prefix held in memory (nf_gguf_open_prefix, what an export reads from a
 * GGUF import's resource) must open whenever the file does, with the same
 * keys and tensors, and give the same values.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_util.h"
#include "nf_gguf.h"
#include "nf_json.h"

int NF_FUZZ_ENTRY(gguf)(const uint8_t *data, size_t size);
int NF_FUZZ_ENTRY(gguf)(const uint8_t *data, size_t size)
{
    int fd = nf_fuzz_memfd(data, size);
    if (fd < 0)
        return 0;
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    nf_diags d = NF_DIAGS_INIT, pd = NF_DIAGS_INIT;
    nf_gguf *g = nf_gguf_open(path, &d);
    nf_gguf *p = nf_gguf_open_prefix(data, size, "prefix", &pd);
    NF_FUZZ_ASSERT(p || pd.n > 0 || pd.dropped > 0, "prefix refused without a diagnostic");
    NF_FUZZ_ASSERT(!g || p, "the file opens, its bytes as a prefix do not");
    if (g && p) {
        NF_FUZZ_ASSERT(g->n_kv == p->n_kv && g->n_tensors == p->n_tensors &&
                           g->data_start == p->data_start,
                       "file and prefix disagree on counts or the data start");
        for (size_t i = 0; i < g->n_tensors; i++)
            NF_FUZZ_ASSERT(!strcmp(g->tensors[i].name, p->tensors[i].name) &&
                               g->tensors[i].offset == p->tensors[i].offset,
                           "tensor %zu differs between file and prefix", i);
        for (size_t i = 0; i < g->n_kv; i++) {
            size_t la = 0, lb = 0;
            char *a = nf_gguf_kv_json(g, &g->kv[i], &la, NULL);
            char *b = nf_gguf_kv_json(p, &p->kv[i], &lb, NULL);
            NF_FUZZ_ASSERT((!a && !b) || (a && b && la == lb && !memcmp(a, b, la)),
                           "key \"%s\" reads differently from the prefix", g->kv[i].key);
            free(a);
            free(b);
        }
    }
    for (size_t i = 0; p && i < p->n_kv; i++)
        free(nf_gguf_kv_json(p, &p->kv[i], NULL, NULL));
    nf_gguf_free(p);
    nf_diags_free(&pd);
    if (g) {
        NF_FUZZ_ASSERT(d.n == 0, "opened with %zu diagnostics", d.n);
        NF_FUZZ_ASSERT(g->file_size == size, "file size %llu, input %zu",
                       (unsigned long long)g->file_size, size);
        /* data_start may lie past the end when there are no tensors (a
         * vocabulary-only file need not pad its header): tensors are
         * checked one by one below */
        for (size_t i = 0; i < g->n_tensors; i++) {
            const nf_gguf_tensor *t = &g->tensors[i];
            NF_FUZZ_ASSERT(t->offset >= g->data_start && t->offset <= size &&
                               t->bytes <= size - t->offset,
                           "tensor %zu [%llu, +%llu) outside the data of a %zu-byte file", i,
                           (unsigned long long)t->offset, (unsigned long long)t->bytes, size);
            NF_FUZZ_ASSERT(t->n_dims <= 4, "tensor %zu has %u dims", i, t->n_dims);
            NF_FUZZ_ASSERT(nf_gguf_find_tensor(g, t->name) != NULL, "tensor \"%s\" not found",
                           t->name);
            char buf[32];
            (void)nf_ggml_type_name(t->type, buf);
            uint64_t be, bb;
            (void)nf_ggml_type_size(t->type, &be, &bb);
        }
        for (size_t i = 0; i < g->n_kv; i++) {
            const nf_gguf_kv *kv = &g->kv[i];
            NF_FUZZ_ASSERT(nf_gguf_find_kv(g, kv->key) != NULL, "key \"%s\" not found", kv->key);
            uint64_t u;
            double f;
            bool b;
            (void)nf_gguf_kv_u64(g, kv, &u);
            (void)nf_gguf_kv_f64(g, kv, &f);
            (void)nf_gguf_kv_bool(g, kv, &b);
            (void)nf_gguf_vtype_name(kv->type);
            size_t len = 0;
            free(nf_gguf_kv_string(g, kv, &len));
            nf_diags kd = NF_DIAGS_INIT;
            char *js = nf_gguf_kv_json(g, kv, &len, &kd);
            /* NULL says why, in exactly one record */
            NF_FUZZ_ASSERT(js || kd.n == 1, "nf_gguf_kv_json of \"%s\" failed without a word",
                           kv->key);
            nf_diags_free(&kd);
            if (js && len < (64u << 20)) {
                nf_diags jd = NF_DIAGS_INIT;
                nf_jdoc *doc = nf_jdoc_parse(js, len, 0, &jd);
                /* the writer caps nesting at NF_GGUF_MAX_DEPTH < 64, and the
                 * text of a value is small next to the parse budget */
                if (!doc)
                    fprintf(stderr, "kv %s: %s: %s\n%.*s\n", kv->key,
                            jd.n ? nf_code_name(jd.v[0].code) : "?", jd.n ? jd.v[0].message : "",
                            (int)(len > 2000 ? 2000 : len), js);
                NF_FUZZ_ASSERT(doc != NULL, "nf_gguf_kv_json of \"%s\" is not valid JSON", kv->key);
                nf_jdoc_free(doc);
                nf_diags_free(&jd);
            }
            free(js);
        }
        (void)nf_gguf_find_kv(g, "general.architecture");
        (void)nf_gguf_find_tensor(g, "");
        nf_gguf_free(g);
    } else {
        NF_FUZZ_ASSERT(d.n > 0 || d.dropped > 0, "refused without a diagnostic");
    }
    nf_diags_free(&d);
    close(fd);
    return 0;
}
