/* nf-stlist — the tensors of safetensors files with the library's reader,
 * for the export tests: one line per tensor, name TAB dtype TAB shape
 * (d0xd1.., "scalar" for rank 0) TAB the SHA-256 of its bytes, sorted by
 * name across every FILE given (a sharded checkpoint lists as one).
 *
 *   nf-stlist FILE...
 *
 * Exit status: 0 ok, 1 a file the reader refuses (its diagnostics on
 * stderr), 2 usage, 3 I/O.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nf_cli.h"
#include "nf_digest.h"
#include "nf_io.h"
#include "nf_layout.h"
#include "nf_safetensors.h"

static int line_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv)
{
    nf_prog = "nf-stlist";
    if (argc < 2) {
        fprintf(stderr, "usage: nf-stlist FILE...\n");
        return 2;
    }
    char **lines = NULL;
    size_t n = 0;
    int ex = 0;
    for (int a = 1; a < argc && !ex; a++) {
        nf_diags d = NF_DIAGS_INIT;
        nf_safetensors *st = nf_safetensors_open(argv[a], &d);
        nf_diags_print(&d, nf_prog, stderr);
        ex = st ? 0 : nf_diags_exit(&d) ? nf_diags_exit(&d) : 1;
        nf_diags_free(&d);
        FILE *f = st ? fopen(argv[a], "rb") : NULL;
        for (size_t i = 0; st && i < st->n_tensors && !ex; i++) {
            const nf_st_tensor *t = &st->tensors[i];
            unsigned char *b = malloc(t->bytes ? t->bytes : 1);
            if (!b || !f || fseeko(f, (off_t)t->offset, SEEK_SET) ||
                fread(b, 1, t->bytes, f) != t->bytes) {
                fprintf(stderr, "nf-stlist: %s: cannot read \"%s\"\n", argv[a], t->name);
                free(b);
                ex = 3;
                break;
            }
            nf_sha256 *h = nf_sha256_new();
            char hex[65], shape[256], *line = NULL;
            nf_sha256_update(h, b, t->bytes);
            nf_sha256_final(h, hex);
            free(b);
            nf_shape_str(t->dims, t->rank, shape, sizeof shape);
            if (asprintf(&line, "%s\t%s\t%s\t%s", t->name, t->dtype, shape, hex) < 0)
                return 3;
            char **v = realloc(lines, (n + 1) * sizeof *v);
            if (!v)
                return 3;
            lines = v;
            lines[n++] = line;
        }
        if (f)
            fclose(f);
        nf_safetensors_free(st);
    }
    qsort(lines, n, sizeof *lines, line_cmp);
    for (size_t i = 0; i < n; i++) {
        if (!ex)
            printf("%s\n", lines[i]);
        free(lines[i]);
    }
    free(lines);
    return ex;
}
