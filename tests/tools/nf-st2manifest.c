/* nf-st2manifest — test/demo tool: a manifest for a Hugging Face safetensors
 * checkpoint directory with one tensor object per tensor (bound under the
 * checkpoint's own tensor names), config.json as the text config and the
 * frontend files as resources. The stand-in for ninfer-import until the
 * binder exists; it maps no logical names. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "nf_diag.h"
#include "nf_json.h"
#include "nf_safetensors.h"
#include "nf_util.h"
#include "nf_cli.h" /* nf_diags_print */

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *t = NULL;
    size_t cap = 0;
    ssize_t n = getdelim(&t, &cap, 0, f);
    fclose(f);
    if (n < 0) {
        free(t);
        return NULL;
    }
    *len = (size_t)n;
    return t;
}

int main(int argc, char **argv)
{
    bool list = argc == 3 && !strcmp(argv[1], "--list");
    bool logical = argc == 3 && !strcmp(argv[1], "--logical");
    if ((argc != 2 && !list && !logical) || !strcmp(argv[1], "--help")) {
        fprintf(stderr, "usage: nf-st2manifest CHECKPOINT_DIR > manifest.json\n"
                        "       nf-st2manifest --logical CHECKPOINT_DIR  (bindings text/<tensor>, one\n"
                        "                      A16Only use per rank-2 tensor, input text/<tensor>/input)\n"
                        "       nf-st2manifest --list CHECKPOINT_DIR  (name, offset, bytes per tensor)\n");
        return 2;
    }
    const char *dir = argv[argc - 1];
    if (list) {
        char *sp = nf_path_join(dir, "model.safetensors");
        nf_diags ld = NF_DIAGS_INIT;
        ld.file = sp;
        nf_safetensors *lst = nf_safetensors_open(sp, &ld);
        if (!lst) {
            nf_diags_print(&ld, "nf-st2manifest", stderr);
            return 1;
        }
        for (size_t i = 0; i < lst->n_tensors; i++)
            printf("%s\t%llu\t%llu\n", lst->tensors[i].name,
                   (unsigned long long)lst->tensors[i].offset,
                   (unsigned long long)lst->tensors[i].bytes);
        nf_safetensors_free(lst);
        free(sp);
        return fflush(stdout) ? 3 : 0;
    }
    nf_diags d = NF_DIAGS_INIT;
    char *cfg_path = nf_path_join(dir, "config.json");
    size_t cl = 0;
    char *cfg = slurp(cfg_path, &cl);
    d.file = cfg_path;
    nf_jdoc *cdoc = cfg ? nf_jdoc_parse(cfg, cl, 0, &d) : NULL;
    if (!cdoc) {
        if (!cfg)
            fprintf(stderr, "nf-st2manifest: %s: cannot read\n", cfg_path);
        nf_diags_print(&d, "nf-st2manifest", stderr);
        return 1;
    }
    size_t tl;
    const char *ctext = nf_jdoc_text(cdoc, &tl);
    nf_span rs = nf_jspan_root(ctext, tl);

    char *st_path = nf_path_join(dir, "model.safetensors");
    d.file = st_path;
    nf_safetensors *st = nf_safetensors_open(st_path, &d);
    if (!st) {
        nf_diags_print(&d, "nf-st2manifest", stderr);
        return 1;
    }
    char *abs_st = realpath(st_path, NULL);
    nf_jval *root = nf_jnew_object(), *comps = nf_jnew_object(), *text = nf_jnew_object();
    nf_jval *objs = nf_jnew_array(), *binds = nf_jnew_object(), *res = nf_jnew_object();
    nf_jval *uses = nf_jnew_array();
    nf_jobj_set(text, "config", nf_jnew_raw(ctext + rs.start, rs.len));
    for (size_t i = 0; i < st->n_tensors; i++) {
        const nf_st_tensor *t = &st->tensors[i];
        const char *fmt = !strcmp(t->dtype, "BF16") ? "bf16"
                          : !strcmp(t->dtype, "F32") ? "fp32"
                          : !strcmp(t->dtype, "I32") ? "int32" : NULL;
        if (!fmt) {
            fprintf(stderr, "nf-st2manifest: %s: dtype %s not supported here\n", t->name, t->dtype);
            return 4;
        }
        nf_jval *o = nf_jnew_object(), *sh = nf_jnew_array(), *src = nf_jnew_object();
        nf_jobj_set(o, "id", nf_jnew_string(t->name));
        nf_jobj_set(o, "kind", nf_jnew_string("tensor"));
        for (unsigned k = 0; k < t->rank; k++)
            nf_jarr_push(sh, nf_jnew_u64(t->dims[k]));
        nf_jobj_set(o, "shape", sh);
        nf_jobj_set(o, "format", nf_jnew_string(fmt));
        nf_jobj_set(o, "layout", nf_jnew_string("contiguous_le_v1"));
        nf_jobj_set(src, "safetensors", nf_jnew_string(abs_st));
        nf_jobj_set(src, "tensor", nf_jnew_string(t->name));
        nf_jobj_set(o, "source", src);
        nf_jarr_push(objs, o);
        nf_jval *b = nf_jnew_object();
        nf_jobj_set(b, "object", nf_jnew_string(t->name));
        char pname[1024];
        snprintf(pname, sizeof pname, "%s%s", logical ? "text/" : "", t->name);
        nf_jobj_set(binds, pname, b);
        if (logical && t->rank == 2) {
            char in[1100];
            snprintf(in, sizeof in, "%s/input", pname);
            nf_jval *u = nf_jnew_object();
            nf_jobj_set(u, "parameter", nf_jnew_string(pname));
            nf_jobj_set(u, "input", nf_jnew_string(in));
            nf_jobj_set(u, "activation_policy", nf_jnew_string("A16Only"));
            nf_jarr_push(uses, u);
        }
    }
    static const char *const frontend[] = {
        "config.json", "tokenizer.json", "tokenizer_config.json", "chat_template.jinja",
        "generation_config.json", "special_tokens_map.json", "added_tokens.json",
        "vocab.json", "merges.txt", "tokenizer.model", NULL};
    for (int i = 0; frontend[i]; i++) {
        char *p = nf_path_join(dir, frontend[i]);
        struct stat sb;
        if (stat(p, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size > 0) {
            char *ap = realpath(p, NULL), id[256];
            snprintf(id, sizeof id, "r.%s", frontend[i]);
            nf_jval *o = nf_jnew_object(), *src = nf_jnew_object();
            nf_jobj_set(o, "id", nf_jnew_string(id));
            nf_jobj_set(o, "kind", nf_jnew_string("resource"));
            nf_jobj_set(o, "encoding", nf_jnew_string("raw_bytes_v1"));
            nf_jobj_set(src, "file", nf_jnew_string(ap));
            nf_jobj_set(o, "source", src);
            nf_jarr_push(objs, o);
            nf_jobj_set(res, frontend[i], nf_jnew_string(id));
            free(ap);
        }
        free(p);
    }
    nf_jobj_set(text, "resources", res);
    nf_jobj_set(comps, "text", text);
    nf_jobj_set(root, "components", comps);
    nf_jobj_set(root, "objects", objs);
    nf_jobj_set(root, "bindings", binds);
    nf_jobj_set(root, "uses", uses);
    size_t n;
    char *out = nf_jval_to_text(root, true, &n);
    fwrite(out, 1, n, stdout);
    fputc('\n', stdout);
    free(out);
    nf_jval_free(root);
    nf_safetensors_free(st);
    nf_jdoc_free(cdoc);
    free(cfg);
    free(cfg_path);
    free(st_path);
    free(abs_st);
    return fflush(stdout) ? 3 : 0;
}
