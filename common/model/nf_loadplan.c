/* nf_loadplan.c — one parameter's load plan as data (DESIGN 6, 8; spec
 * 7.1, 11.2). */
#include "nf_loadplan.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    nf_param_plan *p;
    size_t cap;
    bool oom;
} seg_acc;

static int add_segment(void *vc, size_t file, nf_rfile *src, int fd, uint64_t file_off,
                       uint64_t range_off, uint64_t len)
{
    seg_acc *s = vc;
    (void)src;
    (void)fd;
    (void)range_off;
    if (s->p->n_segments == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 8;
        nf_segment *v = realloc(s->p->segments, cap * sizeof *v);
        if (!v) {
            s->oom = true;
            return 1;
        }
        s->p->segments = v, s->cap = cap;
    }
    s->p->segments[s->p->n_segments++] = (nf_segment){file, file_off, len};
    return 0;
}

/* Part k's plan: its encoding, range, spans and their segments. */
static int plan_part(nf_artifact *a, const nf_object *ob, size_t oi, const nf_binding *b, size_t k,
                     nf_part_plan *pp, seg_acc *acc, nf_diags *d)
{
    nf_tensor_enc te;
    const char *why = NULL;
    pp->object = oi;
    pp->status = nf_tensor_enc_init(&te, ob->format, ob->layout, ob->dims, ob->rank,
                                    ob->divisors, &why);
    pp->begin = b->parts ? b->parts[k].begin : 0;
    pp->end = b->parts ? b->parts[k].end : (pp->status == NF_ENC_OK ? te.enc.elements : 0);
    pp->first_segment = acc->p->n_segments;
    if (pp->status != NF_ENC_OK) {
        char *q = nf_ptr_index("/objects", oi);
        nf_diag_add(d, pp->status == NF_ENC_UNSUPPORTED ? NF_C_UNSUPPORTED : NF_C_ENCODING,
                    q ? q : "", "object \"%s\": no plan for %s/%s%s%s", ob->id, ob->format_name,
                    ob->layout_name, why ? ": " : "", why ? why : "");
        free(q);
        return 0;
    }
    pp->n_planes = nf_part_spans(&te, pp->begin, pp->end, pp->planes, &pp->view);
    for (unsigned j = 0; j < pp->n_planes; j++) {
        const nf_plane_span *sp = &pp->planes[j];
        if (sp->bytes)
            nf_artifact_segments(a, ob->offset + sp->offset, sp->bytes, add_segment, acc, d);
        if (acc->oom)
            return -1;
    }
    pp->n_segments = acc->p->n_segments - pp->first_segment;
    return 0;
}

int nf_param_plan_make(nf_artifact *a, const nf_binding *b, nf_param_plan *out, nf_diags *d)
{
    const nf_catalog *c = nf_artifact_catalog(a);
    memset(out, 0, sizeof *out);
    size_t n = b->parts ? b->n_parts : 1;
    out->parts = calloc(n ? n : 1, sizeof *out->parts);
    seg_acc acc = {out, 0, false};
    if (!out->parts)
        goto oom;
    for (size_t k = 0; k < n; k++) {
        size_t oi = b->parts ? b->parts[k].obj : b->obj;
        if (oi >= c->n_objects)
            continue;
        nf_part_plan *pp = &out->parts[out->n_parts++];
        if (plan_part(a, &c->objects[oi], oi, b, k, pp, &acc, d) < 0)
            goto oom;
    }
    return 0;
oom:
    nf_param_plan_free(out);
    nf_diag_add(d, NF_C_IO, "", "out of memory");
    return -1;
}

void nf_param_plan_free(nf_param_plan *p)
{
    free(p->parts);
    free(p->segments);
    memset(p, 0, sizeof *p);
}
