/* nf_cli.c — shared command plumbing. */
#include "nf_cli.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "nf_util.h"

const char *nf_prog = "ninfer";

int nf_usage_error(const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "%s: ", nf_prog);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, " (see '%s --help')\n", nf_prog);
    return NF_EXIT_USAGE;
}

void nf_print_version(void)
{
    printf("%s %s\n", nf_prog, NF_VERSION);
}

int nf_operand_open(nf_operand *op, const char *path, const nf_open_opts *o, nf_diags *d)
{
    memset(op, 0, sizeof *op);
    op->name = path;
    if (strcmp(path, "-") == 0) {
        op->in = nf_input_open_fd(0, false);
        if (!op->in) {
            nf_diag_add(d, NF_C_IO, "", "out of memory");
            return -1;
        }
        op->a = nf_artifact_open_stream(op->in, "-", o, d);
    } else {
        op->a = nf_artifact_open(path, o, d);
    }
    return op->a ? 0 : -1;
}

void nf_operand_close(nf_operand *op)
{
    nf_artifact_close(op->a);
    nf_input_close(op->in);
    op->a = NULL;
    op->in = NULL;
}

nf_jval *nf_diags_json(const nf_diags *d)
{
    nf_jval *arr = nf_jnew_array();
    for (size_t i = 0; arr && i < d->n; i++) {
        const nf_diag *r = &d->v[i];
        nf_jval *o = nf_jnew_object();
        nf_jobj_set(o, "code", nf_jnew_string(nf_code_name(r->code)));
        nf_jobj_set(o, "pointer", nf_jnew_string(r->pointer));
        nf_jobj_set(o, "file", nf_jnew_string(r->file));
        nf_jobj_set(o, "message", nf_jnew_string(r->message));
        nf_jarr_push(arr, o);
    }
    return arr;
}

void nf_print_json_line(nf_jval *v)
{
    size_t n = 0;
    char *t = nf_jval_to_text(v, false, &n);
    if (t) {
        fwrite(t, 1, n, stdout);
        fputc('\n', stdout);
        free(t);
    }
}

double nf_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

const char *nf_human_bytes(uint64_t n, char buf[32])
{
    static const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    double v = (double)n;
    int i = 0;
    while (v >= 1024 && i < 5) {
        v /= 1024;
        i++;
    }
    snprintf(buf, 32, i ? "%.1f %s" : "%.0f %s", v, u[i]);
    return buf;
}

void nf_progress_init(nf_progress *p, const char *what, uint64_t total, int mode)
{
    memset(p, 0, sizeof *p);
    p->what = what;
    p->total = total;
    p->enabled = mode > 0 || (mode == 0 && isatty(2));
    p->t0 = p->last = nf_now();
}

void nf_progress_update(void *vp, uint64_t done, uint64_t total)
{
    nf_progress *p = vp;
    if (!p || !p->enabled)
        return;
    double t = nf_now();
    if (t - p->last < 0.25 && done < total)
        return;
    p->last = t;
    double el = t - p->t0, rate = el > 0 ? (double)done / el : 0;
    char a[32], b[32], r[32];
    double eta = rate > 0 ? (double)(total - done) / rate : 0;
    fprintf(stderr, "\r%s: %s: %s / %s, %s/s, ETA %.0fs   ", nf_prog, p->what,
            nf_human_bytes(done, a), nf_human_bytes(total, b), nf_human_bytes((uint64_t)rate, r),
            eta);
}

void nf_progress_done(nf_progress *p)
{
    if (p && p->enabled && nf_now() - p->t0 > 0.25)
        fputc('\n', stderr);
}
