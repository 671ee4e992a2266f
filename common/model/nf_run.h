/* nf_run.h — the engine's load path made observable (ninfer-run(1); spec 4.2,
 * 5.3, 7.3, 11.2): select components, collect the parents their bindings
 * and uses reference (every other object stays unread), read each parent
 * once, build row views, and run every use's projection y = W x with the
 * kernel for its format/layout, checked against the CPU reference.
 */
#ifndef NF_RUN_H
#define NF_RUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "nf_artifact.h"
#include "nf_diag.h"
#include "nf_json.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    bool cuda;               /* device backing and kernels; else host + CPU kernels */
    const char *components;  /* comma-separated IDs; NULL: "text" (or all without text) */
    /* the activations read on demand (instead of input): called once, when
     * the largest K of the selected uses is known, with n = that K (not
     * called when no use is selected); fills x[0..n) and returns 0, or adds
     * a diagnostic (usage: fewer values; io: a read error) and returns -1.
     * So an --input file is read no further than the run needs. */
    int (*read_input)(void *ctx, uint16_t *x, size_t n, nf_diags *d);
    void *read_input_ctx;
    const char *input_name;  /* the input's name in diagnostics (NULL: d's file) */
    const uint16_t *input;   /* bf16 activations (at least the largest K), or NULL:
                                a deterministic input per use */
    size_t input_len;
    unsigned threads;        /* CPU threads (0: all): kernels, and the load's
                                read-and-hash workers (CUDA: 0 is min(4, CPUs)) */
    unsigned iters;          /* timed runs per projection (median), after an
                                untimed warm-up (at least one run and 5 ms on
                                the CPU; nf_device_gemv's on the device) */
    bool no_digests;         /* read the parents without checking their
                                metadata.integrity digests (nf_load.h) */
    bool a16_only;           /* every use on A16; else (the default) a use whose
                                activation_policy is AllowA8 or AllowA4 runs on
                                the CPU's A8 path (nf_gemv.h; spec 8), checked
                                against the A8 reference; A16Only uses and the
                                device always run A16 */
} nf_run_opts;

/* Run. Fills *report (a JSON object: device, components, parents, bytes
 * read, load rate, digests checked, objects loaded and left unread, one
 * record per use with time, GB/s, max relative error, the worst error over
 * its bound, rows out of bound, "activation": "a16" or "a8") and returns 0,
 * or -1 with diagnostics: digest (a parent whose bytes do not hash to its
 * metadata.integrity digest: nothing runs), component-missing (a selected
 * component absent), codes (a kernel result outside the reference bound;
 * non-finite values compare by class: NaN where the reference is NaN, the
 * same infinity where it is infinite), unsupported (a device or
 * kernel this build lacks), io (read errors), usage (a given input shorter
 * than the largest K, or holding a NaN or infinity among its first K
 * values: the user's input, not the artifact), auxiliary (an input_columns
 * that is not K int32 indices below K). A use with an input_columns
 * auxiliary (spec 8) runs on the gathered input x[input_columns[c]], kernel
 * and reference alike; its record says "input_columns": true. Bindings of
 * up to 1024 row parts are views where each part is one (nf_rows_are_view:
 * nvfp4 parts are whole 128-row blocks); other bindings are "gather". */
int nf_run(nf_artifact *a, const nf_run_opts *o, nf_jval **report, nf_diags *d);

#ifdef __cplusplus
}
#endif
#endif
