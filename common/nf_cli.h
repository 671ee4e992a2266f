/* nf_cli.h — what every command shares: the program name, opening an
 * operand (entry path or "-" for a stream on stdin), diagnostics as text or
 * as the --json records of DESIGN section 3, and the progress line.
 * (Commands stay thin mains over common/; this is their common ground.)
 */
#ifndef NF_CLI_H
#define NF_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "nf_artifact.h"
#include "nf_diag.h"
#include "nf_io.h"
#include "nf_json.h"

#ifdef __cplusplus
extern "C" {
#endif

extern const char *nf_prog;

/* Print "prog: message" to stderr and return NF_EXIT_USAGE (2). */
int nf_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Print "prog version" to stdout. */
void nf_print_version(void);

/* An opened operand: a file artifact, or a stream on stdin (the input is
 * kept here so it can be closed with the artifact). */
typedef struct {
    nf_artifact *a;
    nf_input *in;
    const char *name;
} nf_operand;

/* Open path ("-" = stdin stream). Returns 0 or -1; diagnostics in d (whose
 * `file` the caller sets to the operand's name). */
int nf_operand_open(nf_operand *op, const char *path, const nf_open_opts *o, nf_diags *d);
void nf_operand_close(nf_operand *op);

/* The diagnostics as a JSON array of {"code","pointer","file","message"}. */
nf_jval *nf_diags_json(const nf_diags *d);

/* Print one JSON value on one line to stdout. */
void nf_print_json_line(nf_jval *v);

/* Progress (DESIGN 3): shown on stderr when it is a terminal, or forced.
 * nf_progress_update rate-limits itself to about 4 lines a second. */
typedef struct {
    bool enabled;
    const char *what;
    uint64_t total;
    double t0, last;
} nf_progress;
void nf_progress_init(nf_progress *p, const char *what, uint64_t total, int mode);
/* mode: -1 quiet, 0 auto (isatty(2)), 1 forced */
void nf_progress_update(void *p, uint64_t done, uint64_t total);
void nf_progress_done(nf_progress *p);

/* Monotonic seconds. */
double nf_now(void);

/* Format bytes as "1.5 GiB" into buf. */
const char *nf_human_bytes(uint64_t n, char buf[32]);

#ifdef __cplusplus
}
#endif
#endif
