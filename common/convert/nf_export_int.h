/* nf_export_int.h — what the export's files share (not installed): the
 * export context, the tensors to write and their row sources, reading
 * objects, the value transforms, the tokenizer and architecture key/values
 * in GGUF's encoding. See nf_export.h for the contract. */
#ifndef NF_EXPORT_INT_H
#define NF_EXPORT_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "nf_binder.h"
#include "nf_catalog.h"
#include "nf_codec.h"
#include "nf_export.h"
#include "nf_gguf.h"
#include "nf_io.h"
#include "nf_json.h"
#include "nf_util.h"

/* A piece of a tensor's logical elements: object obj's elements
 * [e0, e0 + n), in C order. */
typedef struct {
    size_t obj;
    uint64_t e0, n;
} ex_run;

/* How a tensor's bytes are made. */
enum {
    EX_COPY,     /* one whole object, the same bytes: copied by the kernel */
    EX_ORIGINAL, /* the object of its original bytes (GGUF-origin), copied */
    EX_ROWS,     /* rows moved or transcoded without decoding (gguf_* rows,
                    q8/q4/q5 groups into Q8_0/Q4_0/Q5_0 blocks) */
    EX_VALUES,   /* decoded to f32, transformed, encoded */
};

/* One tensor to write. Logical elements are R rows of K (the runs, in
 * order); the forward transforms (what llama.cpp's converter does) turn
 * them into the stored tensor: rows permuted (heads), columns tiled
 * (cv != 0), values mapped. */
typedef struct {
    char *name;
    unsigned n_dims;           /* output shape: GGUF ne (ne[0] innermost) */
    uint64_t ne[4];
    uint64_t elements, R, K;
    ex_run *runs;
    size_t n_runs;
    uint64_t *run_at;          /* logical element where run i starts */
    uint64_t heads;
    nf_value_map map;
    uint64_t ck, cv, chd;
    bool force_f32;            /* written F32 whatever the source (vectors, ...) */
    /* GGUF-origin */
    char sha[65];              /* recorded SHA-256 of its bytes ("" when none) */
    size_t original;           /* object of its original bytes, SIZE_MAX: none */
    uint32_t src_type;         /* its type in the source GGUF (UINT32_MAX: none) */
    uint64_t src_offset;       /* absolute offset there */
    /* decided */
    uint32_t type;             /* output ggml type (safetensors: the dtype code) */
    int path;                  /* EX_* */
    bool lossy;
    uint64_t bytes, offset;    /* output bytes, offset in the data section/file */
    bool changed;
    nf_format from;            /* the common source format (NF_FMT_UNKNOWN: mixed) */
} ex_tensor;

typedef struct {
    const nf_export_opts *o;
    nf_diags *d;
    nf_artifact *a;
    nf_catalog *c;
    const char *file;          /* the artifact, for messages */
    nf_arch_plan *plans;
    size_t n_plans;
    ex_tensor *t;
    size_t n_t, cap_t;
    /* one object held in memory */
    size_t cobj;
    uint8_t *cbuf;
    nf_tensor_enc cte;
    uint64_t done, total;      /* progress */
    nf_export_result *r;
    char **rnames;             /* result name lists being built */
} ex_ctx;

/* ---- ex_common (nf_export.c) ---- */
/* The context of one export of o->a (result r zeroed). */
void ex_init(ex_ctx *x, const nf_export_opts *o, nf_export_result *r, nf_diags *d);
/* The raw bytes of key/value kv of a GGUF prefix held at prefix (key with
 * its length, type, value): *p and *n. */
void ex_kv_raw(const char *prefix, const nf_gguf_kv *kv, const char **p, size_t *n);
bool ex_add_tensor(ex_ctx *x, const ex_tensor *t);
void ex_tensors_free(ex_ctx *x);
bool ex_finish_runs(ex_ctx *x, ex_tensor *t); /* run_at, checks the element count */
/* Load object i into x->cbuf (once). Returns 0 or -1 with diagnostics. */
int ex_load(ex_ctx *x, size_t obj);
/* Logical elements [e0, e1) of t as f32 into out. */
int ex_read_f32(ex_ctx *x, const ex_tensor *t, uint64_t e0, uint64_t e1, float *out);
/* The tensors of plan naming nm for the selected plans, from the artifact's
 * bindings (runs through parts, transforms from the plan). */
bool ex_plan_tensors(ex_ctx *x, nf_naming nm);
/* Write the tensors' data: stored rows in order, through out (a file or a
 * stream, sequentially); copies by the kernel where the path says so. */
int ex_write_tensor(ex_ctx *x, ex_tensor *t, nf_output *out, const char *outname);
/* Hash the bytes t would be written as (hex). */
int ex_hash_tensor(ex_ctx *x, ex_tensor *t, char hex[65]);
void ex_progress(ex_ctx *x, uint64_t n);
void ex_warn(ex_ctx *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
bool ex_note_name(char ***list, size_t *n, const char *name);
/* The object of a resource role of component comp (SIZE_MAX: none). */
size_t ex_resource(const nf_catalog *c, size_t comp, const char *role);
/* Read a resource object whole (malloc'ed, *n bytes). */
char *ex_read_resource(ex_ctx *x, size_t obj, size_t *n);
/* --verify: every object's bytes against its carried digest (`digest` at
 * /objects/I for each that differs). Returns 0 or -1. */
int ex_verify(ex_ctx *x);
/* The selection of components (text, and others as the format allows). */
bool ex_select(ex_ctx *x, bool carries_mtp);

/* ---- a growable byte buffer with GGUF's little-endian encodings ---- */
typedef struct {
    unsigned char *p;
    size_t n, cap;
    bool oom;
} ex_buf;
void eb_put(ex_buf *b, const void *s, size_t n);
void eb_u32(ex_buf *b, uint32_t v);
void eb_u64(ex_buf *b, uint64_t v);
void eb_str(ex_buf *b, const char *s, size_t n);   /* u64 length + bytes */
void eb_kv_u32(ex_buf *b, const char *key, uint32_t v);
void eb_kv_f32(ex_buf *b, const char *key, float v);
void eb_kv_bool(ex_buf *b, const char *key, bool v);
void eb_kv_str(ex_buf *b, const char *key, const char *v, size_t n);
/* An array key/value of n elements of type et (strings: eb_str each). The
 * caller writes the elements after it. */
void eb_kv_arr(ex_buf *b, const char *key, uint32_t et, uint64_t n);

/* ---- the key/values of a generated GGUF (nf_export_tok.c) ---- */
/* The architecture's key/values from the text config (and the mtp
 * component's when exported) into b; *n_kv counts them. `schema` naming
 * the config member a needed key comes from, `unsupported` for what
 * llama.cpp cannot hold. */
bool ex_arch_kvs(ex_ctx *x, const nf_arch_plan *text, bool mtp, ex_buf *b, uint64_t *n_kv);
/* The tokenizer's key/values: from the tokenizer.json resource (byte-level
 * BPE), else the tokenizer.* keys of a gguf.prefix resource, else "none"
 * with {arch}.vocab_size; the chat template. */
bool ex_tokenizer_kvs(ex_ctx *x, const char *arch, uint64_t vocab, ex_buf *b, uint64_t *n_kv);

#endif
