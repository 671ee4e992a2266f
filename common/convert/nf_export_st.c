/* nf_export_st.c — artifacts to Hugging Face checkpoint directories
 * (DESIGN 16): config.json, the frontend resources as their files, the
 * tensors under their Hugging Face names in safetensors shards. */
#include "nf_export_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nf_gguf.h"
#include "nf_import.h"
#include "nf_writer.h"

#define HF_DEFAULT_SHARD 5000000000ull /* transformers' max_shard_size "5GB" */

/* safetensors' dtype name of an output type. */
static const char *st_dtype(uint32_t type)
{
    switch (type) {
    case NF_GGML_F32: return "F32";
    case NF_GGML_F16: return "F16";
    case NF_GGML_BF16: return "BF16";
    case NF_GGML_I32: return "I32";
    default: return NULL;
    }
}

/* How a tensor is written: its dtype, copied when one whole object already
 * holds its bytes. */
static bool st_decide(ex_ctx *x, ex_tensor *t)
{
    nf_format f = NF_FMT_UNKNOWN;
    for (size_t i = 0; i < t->n_runs; i++) {
        nf_format g = x->c->objects[t->runs[i].obj].format;
        f = i == 0 ? g : f == g ? f : NF_FMT_UNKNOWN;
    }
    t->from = f;
    t->lossy = false;
    t->path = EX_VALUES;
    switch (f) {
    case NF_FMT_FP32: t->type = NF_GGML_F32; break;
    case NF_FMT_BF16: t->type = NF_GGML_BF16; break;
    case NF_FMT_GGUF_F16: t->type = NF_GGML_F16; break;
    case NF_FMT_INT32: t->type = NF_GGML_I32; break;
    default: {
        /* decoded (or mixed): bf16 when every source is bf16, else the option's */
        bool all_bf16 = t->n_runs > 0;
        for (size_t i = 0; i < t->n_runs; i++)
            all_bf16 &= x->c->objects[t->runs[i].obj].format == NF_FMT_BF16;
        t->type = all_bf16 || !x->o->dtype_f32 ? NF_GGML_BF16 : NF_GGML_F32;
        t->lossy = t->type == NF_GGML_BF16 && !all_bf16;
        break;
    }
    }
    const nf_object *o = t->n_runs ? &x->c->objects[t->runs[0].obj] : NULL;
    bool whole = t->n_runs == 1 && t->runs[0].e0 == 0 && t->runs[0].n == o->elements &&
                 o->layout == NF_LAY_CONTIGUOUS_LE_V1;
    if (whole && (f == NF_FMT_FP32 || f == NF_FMT_BF16 || f == NF_FMT_INT32))
        t->path = EX_COPY;
    else if (t->n_runs == 1 && t->runs[0].e0 == 0 && t->runs[0].n == o->elements &&
             f == NF_FMT_GGUF_F16)
        t->path = EX_COPY; /* gguf_f16 rows are the F16 elements in C order */
    if (t->type == NF_GGML_I32 && t->path != EX_COPY) {
        nf_diag_addf(x->d, NF_C_UNSUPPORTED, x->file, "", "tensor \"%s\": int32 parts are not "
                     "exported", t->name);
        return false;
    }
    unsigned eb = t->type == NF_GGML_F32 || t->type == NF_GGML_I32 ? 4 : 2;
    if (!nf_mul_u64(t->elements, eb, &t->bytes)) {
        nf_diag_addf(x->d, NF_C_RANGE, x->file, "", "tensor \"%s\" is too large", t->name);
        return false;
    }
    t->R = 1;
    t->K = t->elements; /* written as one row of its C-order elements */
    if (t->path == EX_VALUES && t->elements > (4u << 20)) {
        /* rows of the outermost index keep memory to one slice */
        t->K = t->ne[0];
        t->R = t->K ? t->elements / t->K : 0;
    }
    return true;
}

/* A valid Hugging Face tensor name: non-empty UTF-8 without U+0000 or
 * control characters, which the JSON header and the index would carry. */
static bool hf_name_ok(const char *s)
{
    size_t n = strlen(s);
    if (!n || nf_utf8_invalid_at(s, n) != n)
        return false;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20)
            return false;
    return true;
}

/* The JSON header of one shard (tensors [a, b)), padded with spaces to 8. */
static char *st_header(ex_ctx *x, size_t a, size_t b, size_t *len)
{
    nf_jval *h = nf_jnew_object(), *md = nf_jnew_object();
    nf_jobj_set(md, "format", nf_jnew_string("pt"));
    nf_jobj_set(h, "__metadata__", md);
    uint64_t off = 0;
    for (size_t i = a; i < b; i++) {
        const ex_tensor *t = &x->t[i];
        nf_jval *e = nf_jnew_object(), *sh = nf_jnew_array(), *dof = nf_jnew_array();
        nf_jobj_set(e, "dtype", nf_jnew_string(st_dtype(t->type)));
        for (unsigned k = t->n_dims; k-- > 0;)
            nf_jarr_push(sh, nf_jnew_u64(t->ne[k]));
        nf_jobj_set(e, "shape", sh);
        nf_jarr_push(dof, nf_jnew_u64(off));
        nf_jarr_push(dof, nf_jnew_u64(off + t->bytes));
        nf_jobj_set(e, "data_offsets", dof);
        nf_jobj_set(h, t->name, e);
        off += t->bytes;
    }
    size_t n = 0;
    char *txt = nf_jval_to_text(h, false, &n);
    nf_jval_free(h);
    if (!txt)
        return NULL;
    size_t padded = (n + 7) / 8 * 8;
    char *p = realloc(txt, padded + 1);
    if (!p) {
        free(txt);
        return NULL;
    }
    memset(p + n, ' ', padded - n);
    p[padded] = 0;
    *len = padded;
    return p;
}

/* Write buf to a new file `name` of the directory output. */
static int put_file(ex_ctx *x, nf_dir_out *dir, const char *name, const void *buf, size_t n)
{
    int fd = nf_dir_out_create(dir, name, x->d);
    if (fd < 0)
        return -1;
    int rc = nf_write_all(fd, buf, n);
    if (close(fd) < 0 && !rc)
        rc = -errno;
    if (rc) {
        nf_diag_addf(x->d, NF_C_IO, x->o->out, "", "cannot write %s: %s", name, strerror(-rc));
        return -1;
    }
    x->r->bytes += n;
    return ex_note_name(&x->r->files, &x->r->n_files, name) ? 0 : -1;
}

/* One shard: the header, then the tensors [a, b) in order. */
static int st_shard(ex_ctx *x, nf_dir_out *dir, const char *name, size_t a, size_t b)
{
    size_t hl = 0;
    char *hdr = st_header(x, a, b, &hl);
    if (!hdr) {
        nf_diag_add(x->d, NF_C_IO, "", "out of memory");
        return -1;
    }
    int fd = nf_dir_out_create(dir, name, x->d);
    if (fd < 0) {
        free(hdr);
        return -1;
    }
    nf_output *out = nf_output_open_fd(fd, 0, false);
    unsigned char l8[8];
    nf_store_le64(l8, hl);
    int rc = out ? nf_output_write(out, l8, 8) : -ENOMEM;
    if (!rc)
        rc = nf_output_write(out, hdr, hl);
    if (rc)
        nf_diag_addf(x->d, NF_C_IO, x->o->out, "", "cannot write %s: %s", name, strerror(-rc));
    for (size_t i = a; !rc && i < b; i++) {
        ex_tensor *t = &x->t[i];
        rc = ex_write_tensor(x, t, out, name);
        if (!rc) {
            x->r->tensors++;
            x->r->copied += t->path == EX_COPY ? t->bytes : 0;
            x->r->lossy += t->lossy;
        }
    }
    if (!rc && (rc = nf_output_finish(out)))
        nf_diag_addf(x->d, NF_C_IO, x->o->out, "", "cannot write %s: %s", name, strerror(-rc));
    if (out)
        x->r->bytes += nf_output_pos(out);
    nf_output_close(out);
    if (close(fd) < 0 && !rc) {
        nf_diag_addf(x->d, NF_C_IO, x->o->out, "", "cannot write %s: %s", name, strerror(errno));
        rc = -1;
    }
    free(hdr);
    if (!rc && !ex_note_name(&x->r->files, &x->r->n_files, name))
        rc = -1;
    return rc ? -1 : 0;
}

/* model.safetensors.index.json: the total size and which shard holds each
 * tensor, names sorted as transformers writes them. */
/* qsort_r order of tensor indices by name, then index. */
static int by_name(const void *a, const void *b, void *ctx)
{
    const ex_tensor *t = ctx;
    size_t i = *(const size_t *)a, k = *(const size_t *)b;
    int c = strcmp(t[i].name, t[k].name);
    return c ? c : (i > k) - (i < k);
}

static char *st_index(ex_ctx *x, const size_t *shard_of, size_t n_shards, uint64_t total,
                      size_t *len)
{
    size_t *ord = malloc((x->n_t + 1) * sizeof *ord);
    if (!ord)
        return NULL;
    for (size_t i = 0; i < x->n_t; i++)
        ord[i] = i;
    qsort_r(ord, x->n_t, sizeof *ord, by_name, x->t);
    nf_jval *root = nf_jnew_object(), *md = nf_jnew_object(), *wm = nf_jnew_object();
    nf_jobj_set(md, "total_size", nf_jnew_u64(total));
    nf_jobj_set(root, "metadata", md);
    for (size_t i = 0; i < x->n_t; i++) {
        char name[64];
        snprintf(name, sizeof name, "model-%05zu-of-%05zu.safetensors", shard_of[ord[i]] + 1,
                 n_shards);
        nf_jobj_set(wm, x->t[ord[i]].name, nf_jnew_string(name));
    }
    nf_jobj_set(root, "weight_map", wm);
    char *t = nf_jval_to_text(root, true, len);
    nf_jval_free(root);
    free(ord);
    return t;
}

int nf_export_safetensors(const nf_export_opts *o, nf_export_result *r, nf_diags *d)
{
    ex_ctx x;
    ex_init(&x, o, r, d);
    int rc = -1;
    nf_dir_out *dir = NULL;
    size_t *shard_of = NULL;
    /* the directory is checked (and its temporary made) before any work */
    dir = nf_dir_out_open(o->out, o->force, o->inputs, o->n_inputs, d);
    if (!dir || ex_verify(&x) || !ex_select(&x, true))
        goto out;
    /* HF names; the multimodal prefix of an import's object IDs kept */
    const char *sel[2] = {NF_TEXT_COMPONENT, "mtp"};
    size_t n_sel = nf_catalog_component(x.c, "mtp") != SIZE_MAX ? 2 : 1;
    if (o->n_components) {
        n_sel = 1;
        for (size_t k = 0; k < o->n_components; k++)
            if (!strcmp(o->components[k], "mtp"))
                n_sel = 2;
    }
    nf_bind_opts bo = {.components = sel, .n_components = n_sel};
    if (nf_binder_plans(x.c, &bo, &x.plans, &x.n_plans, d) != 0 || nf_diags_exit(d))
        goto out;
    if (!ex_plan_tensors(&x, NF_NAMING_HF))
        goto out;
    for (size_t i = 0; i < x.n_t; i++) {
        ex_tensor *t = &x.t[i];
        char alt[1024];
        if (!strncmp(t->name, "model.", 6) && nf_catalog_find(x.c, t->name) == SIZE_MAX) {
            snprintf(alt, sizeof alt, "model.language_model.%s", t->name + 6);
            if (nf_catalog_find(x.c, alt) != SIZE_MAX) {
                char *n = strdup(alt);
                if (n) {
                    free(t->name);
                    t->name = n;
                }
            }
        }
        if (!hf_name_ok(t->name)) {
            nf_diag_addf(d, NF_C_SCHEMA, x.file, "", "\"%s\" is not a tensor name a checkpoint "
                         "can hold", t->name);
            goto out;
        }
        if (!st_decide(&x, t))
            goto out;
    }
    /* every resource of the text component as its file: roles checked first */
    size_t ti = nf_catalog_component(x.c, NF_TEXT_COMPONENT);
    const nf_component *tc = &x.c->components[ti];
    for (size_t i = 0; i < tc->n_resources; i++) {
        const char *role = tc->resources[i].role;
        if (!strcmp(role, NF_GGUF_PREFIX_ROLE))
            continue;
        if (!nf_safe_file_name(role, strlen(role)) || !strcmp(role, "config.json") ||
            !strncmp(role, "model.safetensors", 17) || !strncmp(role, "model-", 6)) {
            char *ptr = nf_ptr_join("/components/text/resources", role, strlen(role));
            nf_diag_addf(d, NF_C_SCHEMA, x.file, ptr ? ptr : "", "resource role \"%s\" is not a "
                         "file name the checkpoint can take (a '/', '.', '..' or U+0000, or a "
                         "name the export writes itself)", role);
            free(ptr);
            goto out;
        }
    }
    /* shards: tensors in order, each shard at most max_shard_bytes (a
     * larger tensor alone) */
    uint64_t cap = o->max_shard_bytes ? o->max_shard_bytes : HF_DEFAULT_SHARD, total = 0, in = 0;
    size_t n_shards = x.n_t ? 1 : 0;
    shard_of = calloc(x.n_t + 1, sizeof *shard_of);
    if (!shard_of) {
        nf_diag_add(d, NF_C_IO, "", "out of memory");
        goto out;
    }
    for (size_t i = 0; i < x.n_t; i++) {
        if (in && in + x.t[i].bytes > cap) {
            n_shards++;
            in = 0;
        }
        shard_of[i] = n_shards - 1;
        in += x.t[i].bytes;
        total += x.t[i].bytes;
    }
    x.total = total;
    rc = put_file(&x, dir, "config.json", tc->config_text, tc->config_len);
    for (size_t i = 0; !rc && i < tc->n_resources; i++) {
        if (!strcmp(tc->resources[i].role, NF_GGUF_PREFIX_ROLE))
            continue;
        size_t n = 0;
        char *p = ex_read_resource(&x, tc->resources[i].obj, &n);
        rc = p ? put_file(&x, dir, tc->resources[i].role, p, n) : -1;
        free(p);
    }
    if (!rc && n_shards == 1) {
        rc = st_shard(&x, dir, "model.safetensors", 0, x.n_t);
    } else if (!rc && n_shards > 1) {
        for (size_t s = 0, a = 0; !rc && s < n_shards; s++) {
            size_t b = a;
            while (b < x.n_t && shard_of[b] == s)
                b++;
            char name[64];
            snprintf(name, sizeof name, "model-%05zu-of-%05zu.safetensors", s + 1, n_shards);
            rc = st_shard(&x, dir, name, a, b);
            a = b;
        }
        size_t il = 0;
        char *idx = rc ? NULL : st_index(&x, shard_of, n_shards, total, &il);
        if (!rc && !idx) {
            nf_diag_add(d, NF_C_IO, "", "out of memory");
            rc = -1;
        }
        if (!rc)
            rc = put_file(&x, dir, "model.safetensors.index.json", idx, il);
        free(idx);
    }
    if (!rc) {
        rc = nf_dir_out_finish(dir, o->sync, d);
        dir = NULL;
    }
out:
    if (dir)
        nf_dir_out_abort(dir);
    free(shard_of);
    ex_tensors_free(&x);
    nf_arch_plans_free(x.plans, x.n_plans);
    return rc ? -1 : 0;
}
