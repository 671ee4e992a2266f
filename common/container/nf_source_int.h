/* nf_source_int.h — what the two halves of the source module share
 * (nf_source.c: parse and write; nf_source_resolve.c: bytes and values).
 * Not installed. */
#ifndef NF_SOURCE_INT_H
#define NF_SOURCE_INT_H

#include "nf_source.h"

/* A values resolution in progress (nf_source_resolve.c). */
typedef struct nf_src_rv nf_src_rv;

/* One row per source kind (ninfer-pack(1) MANIFEST): the member that names
 * the kind, the member that names its tensor or object (NULL: none), what it
 * is when a resource may not have it (NULL: a resource may), and how it
 * resolves to exact bytes (0, 1: decode instead, -1: diagnosed) and to values
 * (target_cols: the object's K; left: elements still needed; depth:
 * concats around it). */
typedef struct {
    const char *key;
    const char *name_key;
    const char *tensor_only; /* a tensor's only: "a resource takes bytes, not X" */
    int (*bytes)(nf_source_inputs *p, const nf_object *o, const nf_source *s,
                 nf_source_segs *out);
    int (*values)(nf_source_inputs *p, const nf_object *o, const nf_source *s, nf_src_rv *r,
                  uint64_t target_cols, uint64_t left, unsigned depth);
} nf_src_kind_info;

extern const nf_src_kind_info nf_src_kinds[NF_SRC_CONCAT + 1];

#endif
