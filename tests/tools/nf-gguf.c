/* nf-gguf — look into a GGUF file, or the prefix of one (what an import
 * keeps as its resource gguf.prefix), with the library's GGUF reader, for
 * the tests:
 *
 *   nf-gguf [--prefix] kv FILE KEY     the key's value as JSON (exit 1: absent)
 *   nf-gguf [--prefix] str FILE KEY    a string key's bytes as they are
 *   nf-gguf [--prefix] keys FILE       every key, in order: key TAB type
 *   nf-gguf [--prefix] tensors FILE    every tensor, in order: name TAB type
 *                                      TAB ne0xne1.. TAB offset TAB bytes
 *   nf-gguf [--prefix] data FILE       the data section's offset (the
 *                                      prefix's length; the file's length
 *                                      when it holds no tensors and ends first)
 *   nf-gguf sha FILE NAME              the SHA-256 of the tensor's bytes
 *
 * --prefix reads FILE as a GGUF's bytes [0, data offset) (no tensor data).
 * Exit status: 0 ok, 1 not found or a GGUF the reader refuses (its
 * diagnostics on stderr), 2 usage, 3 I/O.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nf_cli.h"
#include "nf_digest.h"
#include "nf_gguf.h"
#include "nf_io.h"

int main(int argc, char **argv)
{
    nf_prog = "nf-gguf";
    bool prefix = argc > 1 && !strcmp(argv[1], "--prefix");
    int a = prefix ? 2 : 1;
    if (argc - a < 2 || ((!strcmp(argv[a], "kv") || !strcmp(argv[a], "str")) && argc - a != 3) ||
        (!strcmp(argv[a], "sha") && (argc - a != 3 || prefix))) {
        fprintf(stderr, "usage: nf-gguf [--prefix] kv|keys|tensors FILE [KEY]; nf-gguf sha FILE NAME\n");
        return 2;
    }
    const char *cmd = argv[a], *path = argv[a + 1];
    nf_diags d = NF_DIAGS_INIT;
    char *buf = NULL;
    size_t n = 0;
    nf_gguf *g = NULL;
    if (prefix) {
        int rc = nf_read_path(path, true, 1ull << 32, &buf, &n);
        if (rc < 0) {
            fprintf(stderr, "nf-gguf: %s: cannot read\n", path);
            return 3;
        }
        g = nf_gguf_open_prefix(buf, n, path, &d);
    } else {
        g = nf_gguf_open(path, &d);
    }
    nf_diags_print(&d, nf_prog, stderr);
    int ex = nf_diags_exit(&d);
    nf_diags_free(&d);
    if (!g) {
        free(buf);
        return ex ? ex : 1;
    }
    char tb[32];
    if (!strcmp(cmd, "kv")) {
        const nf_gguf_kv *kv = nf_gguf_find_kv(g, argv[a + 2]);
        size_t len = 0;
        char *j = kv ? nf_gguf_kv_json(g, kv, &len, NULL) : NULL;
        if (j)
            printf("%s\n", j);
        ex = j ? 0 : 1;
        free(j);
    } else if (!strcmp(cmd, "str")) {
        size_t len = 0;
        char *v = nf_gguf_kv_string(g, nf_gguf_find_kv(g, argv[a + 2]), &len);
        if (v)
            fwrite(v, 1, len, stdout);
        ex = v ? 0 : 1;
        free(v);
    } else if (!strcmp(cmd, "keys")) {
        for (size_t i = 0; i < g->n_kv; i++)
            printf("%s\t%s\n", g->kv[i].key, nf_gguf_vtype_name(g->kv[i].type));
    } else if (!strcmp(cmd, "tensors")) {
        for (size_t i = 0; i < g->n_tensors; i++) {
            const nf_gguf_tensor *t = &g->tensors[i];
            printf("%s\t%s\t", t->name, nf_ggml_type_name(t->type, tb));
            for (unsigned k = 0; k < t->n_dims; k++)
                printf("%s%llu", k ? "x" : "", (unsigned long long)t->ne[k]);
            printf("\t%llu\t%llu\n", (unsigned long long)t->offset, (unsigned long long)t->bytes);
        }
    } else if (!strcmp(cmd, "data")) {
        printf("%llu\n", (unsigned long long)(g->data_start < g->file_size || prefix
                                                   ? g->data_start : g->file_size));
    } else if (!strcmp(cmd, "sha")) {
        const nf_gguf_tensor *t = nf_gguf_find_tensor(g, argv[a + 2]);
        unsigned char *b = t ? malloc(t->bytes ? t->bytes : 1) : NULL;
        if (b && nf_gguf_read_tensor(g, t, 0, b, t->bytes) == 0) {
            nf_sha256 *h = nf_sha256_new();
            char hex[65];
            nf_sha256_update(h, b, t->bytes);
            nf_sha256_final(h, hex);
            printf("%s\n", hex);
        } else {
            ex = 1;
        }
        free(b);
    } else {
        fprintf(stderr, "nf-gguf: unknown command '%s'\n", cmd);
        ex = 2;
    }
    nf_gguf_free(g);
    free(buf);
    return ex;
}
