/* nf_loadplan.h — what a loader reads for one logical parameter, as data
 * (ninfer-bind(1) --plan; spec 7.1, 11.2): for each part of its
 * binding the object, the element range, whether it is a zero-copy view,
 * the byte interval of each plane the range needs (nf_part_spans), and the
 * file segments those intervals lie in.
 */
#ifndef NF_LOADPLAN_H
#define NF_LOADPLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nf_artifact.h"
#include "nf_binder.h"
#include "nf_catalog.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    size_t object;        /* index into the catalog's objects */
    uint64_t begin, end;  /* element range: the part's, or [0, elements) */
    nf_enc_status status; /* NF_ENC_OK, or why there is no plan (below unset) */
    bool view;            /* a zero-copy view (ninfer-formats(7)) */
    unsigned n_planes;
    nf_plane_span planes[NF_MAX_PLANES]; /* offsets relative to the object */
    size_t first_segment, n_segments;    /* into nf_param_plan.segments */
} nf_part_plan;

typedef struct {
    nf_part_plan *parts;
    size_t n_parts;
    nf_segment *segments; /* every part's planes' file segments, in order */
    size_t n_segments;
} nf_param_plan;

/* The plan of binding b of artifact a (a file artifact: segments come from
 * its files table). Parts naming no object are left out. An object whose
 * encoding cannot be planned is an `unsupported` (unknown format/layout) or
 * `encoding` diagnostic at /objects/N, "object \"ID\": no plan for F/L", its
 * part kept with that status. Returns 0, or -1 when out of memory (an `io`
 * diagnostic). Free with nf_param_plan_free. Cost: O(parts + segments). */
int nf_param_plan_make(nf_artifact *a, const nf_binding *b, nf_param_plan *out, nf_diags *d);

void nf_param_plan_free(nf_param_plan *p);

#ifdef __cplusplus
}
#endif
#endif
