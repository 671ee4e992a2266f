/* nf_cli.h — what every command shares: the program name, opening an
 * operand (entry path or "-" for a stream on stdin), diagnostics as text or
 * as --json records (ninfer-verify(1) --json), and the progress line.
 * (Commands stay thin mains over common/; this is their common ground.)
 */
#ifndef NF_CLI_H
#define NF_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "nf_artifact.h"
#include "nf_diag.h"
#include "nf_http.h"
#include "nf_io.h"
#include <getopt.h>
#include "nf_json.h"
#include "nf_writer.h"

#ifdef __cplusplus
extern "C" {
#endif

extern const char *nf_prog;

/* Print "prog: usage: message (see 'prog --help')" to stderr, one line,
 * and return NF_EXIT_USAGE (2). */
int nf_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The usage error for the option getopt_long just refused (call it for the
 * '?' it returns; commands set opterr = 0 so getopt prints nothing itself):
 * "unrecognized option '--x'", "option '--x' needs an argument", or
 * "invalid option '-x'". Returns NF_EXIT_USAGE. */
int nf_bad_option(int argc, char **argv, const struct option *lo);

/* A size option's value (nf_size_parse: K M G T and KiB... powers of 1024,
 * KB MB GB TB powers of 1000): 0 with *out set, or the usage error "bad
 * OPT 'ARG': why" printed and NF_EXIT_USAGE; zero is refused too unless
 * zero_ok. */
int nf_size_opt(const char *opt, const char *arg, bool zero_ok, uint64_t *out);

/* Check a --component C[,C...] argument: component IDs are non-empty
 * (spec 2), so '' and an empty element (',', 'text,', 'a,,b') are usage
 * errors, never "no component". Returns 0, or prints the usage error and
 * returns NF_EXIT_USAGE. */
int nf_component_arg_check(const char *arg);

/* When the first n bytes of a would-be manifest (pack's operand, quant -i)
 * are another kind of file, the one-line next step for the user ("this is
 * an NInfer artifact: ninfer-cat --manifest prints its manifest", a part, a
 * GGUF, a zstd frame); NULL when they may be JSON. Needs n >= 8 to tell. */
const char *nf_not_manifest_hint(const void *p, size_t n);

/* Print one line per record of d to f (nf_diag_line: "<prog>: <file>:
 * <pointer>: <code>: <message>", escaped), then the line about dropped
 * records if any. */
void nf_diags_print(const nf_diags *d, const char *prog, FILE *f);

/* Write s to f escaped as nf_text_escape does (control characters and
 * invalid UTF-8 as \xHH). */
void nf_fput_text(const char *s, FILE *f);

/* The separators a field of a text listing escapes besides controls
 * (nf_text_escape_also): the list comma, the escape's own backslash and
 * the quote, so that no name splits a field, forges one or a line. */
#define NF_FIELD_ESCAPES "\\,\""

/* Write s to f as one field of a text listing (escaped with
 * NF_FIELD_ESCAPES); width > 0 pads it with spaces to that many bytes. */
void nf_fput_field(const char *s, int width, FILE *f);

/* Print "prog version" to stdout. */
void nf_print_version(void);

/* Standard output's name in diagnostics: "prog: (stdout): io: ...". */
#define NF_STDOUT_NAME "(stdout)"

/* Add the one diagnostic every command gives for a failed write to standard
 * output (exit 3): "(stdout)", no pointer, code io,
 * "write error: <strerror(err)>". err is a positive errno value. */
void nf_diag_stdout(nf_diags *d, int err);

/* Flush standard output now (after one operand's output, so that its write
 * error is told with the right errno and beside that operand's other
 * diagnostics): on a write error, now or since the last check, add
 * nf_diag_stdout to d, clear the stream's error flag (nf_stdout_close does
 * not tell it again) and return -1; else 0. */
int nf_stdout_flush(nf_diags *d);

/* Flush and close standard output and rank a write error there into rc
 * (nf_exit_combine with NF_EXIT_IO): a full disk, /dev/full, or any earlier
 * failed write (the stream's error flag) prints, on stderr,
 *   "prog: (stdout): io: write error: <strerror>"
 * and makes the status 3 unless rc is already 1 or 2. A standard output
 * that was closed (">&-") and never written to is not an error. Call it last
 * in main (`return nf_stdout_close(rc);`), --help and --version included;
 * later calls return rc unchanged. */
int nf_stdout_close(int rc);

/* ---- artifacts over HTTP (ninfer(5) Artifacts over HTTP) ----
 *
 * The options every reading command shares for an http:// or https://
 * operand, and the one client (nf_http.h) the process reads them with,
 * made when the first URL operand is opened: NINFER_TOKEN is its bearer
 * token (a process that holds one sets RLIMIT_CORE to 0 and is not
 * dumpable), ~/.netrc is read by libcurl, NINFER_HTTP_TRACE=1 prints one
 * line per request on stderr, NINFER_HTTP_BACKOFF=SECONDS sets the first
 * retry's wait (0.5 s; for tests). */
enum { NF_O_URLS = 1100, NF_O_CACERT, NF_O_RETRIES, NF_O_JOBS, NF_O_STALL };
#define NF_REMOTE_LONGOPTS                                              \
    {"urls", required_argument, 0, NF_O_URLS},                           \
    {"cacert", required_argument, 0, NF_O_CACERT},                       \
    {"retries", required_argument, 0, NF_O_RETRIES},                     \
    {"jobs", required_argument, 0, NF_O_JOBS},                           \
    {"stall-timeout", required_argument, 0, NF_O_STALL}

/* Usage text of the remote options (within 80 columns). */
extern const char nf_remote_usage[];

/* Print a command's --help text with the remote options' usage before its
 * "Exit status" paragraph (at the end when it has none). */
void nf_help_print(const char *text);

/* Handle one remote option. Returns 1 when c was one, 0 when not, or
 * NF_EXIT_USAGE after printing a usage error. */
int nf_remote_cli_opt(int c, const char *arg);

/* The default case of a command's option switch: a remote option (0: go
 * on), else the usage error for the option getopt_long refused
 * (nf_bad_option; NF_EXIT_USAGE, to return). */
int nf_remote_or_bad_option(int c, int argc, char **argv, const struct option *lo);

/* For an operand path that is a URL: o->http (the process's client, made
 * on first use) and o->urls from --urls (whose first line must be path).
 * A path that is no URL leaves o alone (--urls then is a usage error).
 * Returns 0, or -1 with a diagnostic (io: the client cannot be made;
 * usage: --urls cannot be read or does not start with path). */
int nf_remote_open_opts(nf_open_opts *o, const char *path, nf_diags *d);

/* What a diagnostic calls the operand path: path itself, or for a URL the
 * URL without its query string and credentials (kept for the process's
 * life). */
const char *nf_display_name(const char *path);

/* The requests made so far (false when no URL was opened). */
bool nf_remote_stats(nf_http_stats *s);

/* The process's client (NULL until a URL is opened). */
nf_http *nf_remote_client(void);

/* An opened operand: a file artifact, or a stream on stdin (the input is
 * kept here so it can be closed with the artifact). */
typedef struct {
    nf_artifact *a;
    nf_input *in;
    const char *name;
} nf_operand;

/* Open path ("-" = stdin stream; an http:// or https:// URL with the
 * remote options, nf_remote_open_opts). Returns 0 or -1; diagnostics in d
 * (whose `file` the caller sets to nf_display_name(path)). */
int nf_operand_open(nf_operand *op, const char *path, const nf_open_opts *o, nf_diags *d);
void nf_operand_close(nf_operand *op);

/* Standard output onto an input (`ninfer-cat A >> A`: ninfer-cat(1)): when
 * standard output is a regular file that is the operand path (for "-",
 * the file standard input reads), one of artifact a's files (a NULL or a
 * stream: the path alone) or one of extra[0..n_extra), compared by device
 * and inode, add `usage` on "(stdout)" and return -1, before anything is
 * written; else 0. Costs one stat per file, only when standard output is a
 * regular file. */
int nf_stdout_operand_check(const char *path, const nf_artifact *a, const char *const *extra,
                            size_t n_extra, nf_diags *d);

/* nf_operand_open for a command that writes to standard output: standard
 * output is checked against the path (and extra[]) before anything is
 * read, then against the artifact's parts (nf_stdout_operand_check).
 * Returns 0; -1 when the operand cannot be opened (diagnostics in d); or
 * NF_STDOUT_REFUSED with the one `usage` diagnostic, op closed. */
#define NF_STDOUT_REFUSED (-2)
int nf_operand_open_out(nf_operand *op, const char *path, const nf_open_opts *o,
                        const char *const *extra, size_t n_extra, nf_diags *d);

/* The same for the operands paths[0..n) of a command that writes for each
 * in turn (verify, bind --check): all are checked before the first is
 * written for, each artifact opened (options o) for its files table only
 * when standard output is a regular file. Returns 0 or -1. */
int nf_stdout_operands_check(char *const *paths, size_t n, const nf_open_opts *o,
                             const char *const *extra, size_t n_extra, nf_diags *d);

/* The files table as ninfer-cat(1) --files shows it: an array of
 * {"index", "path" (the entry's own file name for index 0),
 * "payload_bytes", "logical_offset", "file_bytes"}; only files with
 * need[i] when need is not NULL. */
nf_jval *nf_files_json(const nf_artifact *a, const bool *need);

/* The diagnostics as a JSON array of {"code","pointer","file","message"}. */
nf_jval *nf_diags_json(const nf_diags *d);

/* Print one JSON value on one line to stdout. */
void nf_print_json_line(nf_jval *v);

/* Progress (--progress): shown on stderr when it is a terminal, or forced.
 * nf_progress_update rate-limits itself to about 4 lines a second. */
typedef struct {
    bool enabled, shown; /* shown: a line is on stderr, not ended yet */
    const char *what;
    uint64_t total;
    double t0, last;
} nf_progress;
void nf_progress_init(nf_progress *p, const char *what, uint64_t total, int mode);
/* mode: -1 quiet, 0 auto (isatty(2)), 1 forced */
void nf_progress_update(void *p, uint64_t done, uint64_t total);
/* End the progress line (a newline) if one was shown: call it before the
 * command prints its result or diagnostics. */
void nf_progress_done(nf_progress *p);
/* End whichever progress line is shown (the next update draws it again
 * below): before a line printed while the work runs (a warning, a report
 * line). */
void nf_progress_break(void);

/* Options shared by the two writers, ninfer-pack(1) and ninfer-split(1). */
typedef struct {
    nf_write_opts w;
    bool dry_run, no_digests, verify, quiet;
    const char *out;   /* -o: entry path; NULL or "-" for a stream on stdout */
    int zstd;          /* stream output compression level (0: none) */
    int progress;      /* -1 quiet, 0 auto, 1 forced */
    uint64_t max_json_bytes; /* --max-json-bytes: the readers' cap, which
                                --json-bytes may not pass (default 256M) */
} nf_writer_cli;

enum {
    NF_O_MAX_FILE = 1000, NF_O_JSON_BYTES, NF_O_DRY_RUN, NF_O_FORCE, NF_O_NO_DIGESTS,
    NF_O_ZSTD, NF_O_PROGRESS, NF_O_NO_SYNC, NF_O_VERIFY, NF_O_REPRODUCIBLE, NF_O_ARTIFACT_ID,
};

/* --reproducible and --artifact-id HEX (ninfer(5), "Reproducible output"),
 * for the writers and ninfer-cat's stream: c one of NF_O_REPRODUCIBLE,
 * NF_O_ARTIFACT_ID. Returns 1 when c was one (w updated), 0 when not, or
 * NF_EXIT_USAGE after printing a usage error (not 32 hex digits, or both
 * options). */
int nf_id_opt(nf_write_opts *w, int c, const char *arg);
/* After the options: SOURCE_DATE_EPOCH set (and neither option given)
 * implies --reproducible, as a best effort (nf_write_opts.id_best_effort). */
void nf_id_env(nf_write_opts *w);
#define NF_ID_LONGOPTS                                                   \
    {"reproducible", no_argument, 0, NF_O_REPRODUCIBLE},                 \
    {"artifact-id", required_argument, 0, NF_O_ARTIFACT_ID}
/* getopt_long entries for the shared options ('-o', '-q' go in the short
 * option string "o:q"). */
#define NF_WRITER_LONGOPTS                                              \
    {"output", required_argument, 0, 'o'},                               \
    {"max-file-bytes", required_argument, 0, NF_O_MAX_FILE},             \
    {"json-bytes", required_argument, 0, NF_O_JSON_BYTES},               \
    {"dry-run", no_argument, 0, NF_O_DRY_RUN},                           \
    {"force", no_argument, 0, NF_O_FORCE},                               \
    {"no-digests", no_argument, 0, NF_O_NO_DIGESTS},                     \
    {"zstd", optional_argument, 0, NF_O_ZSTD},                           \
    {"progress", no_argument, 0, NF_O_PROGRESS},                         \
    {"quiet", no_argument, 0, 'q'},                                      \
    {"no-sync", no_argument, 0, NF_O_NO_SYNC},                           \
    NF_ID_LONGOPTS

/* Usage text of the shared options. */
extern const char nf_writer_usage[];

/* Handle one shared option. Returns 1 when c was one (wc updated), 0 when
 * not, or NF_EXIT_USAGE after printing a usage error. */
int nf_writer_cli_opt(nf_writer_cli *wc, int c, const char *arg);
/* An nf_warn_fn that prints "prog: path: msg" on stderr (controls
 * escaped, as diagnostics are). */
void nf_cli_warn(void *ctx, const char *path, const char *msg);
/* Defaults (sync on, progress auto, warnings by nf_cli_warn). */
void nf_writer_cli_init(nf_writer_cli *wc);
/* After parsing: a stream target can't be split; --json-bytes above
 * max_json_bytes would make a catalog every reader refuses with its cap
 * (and an allocation of that size); --reproducible with --no-digests:
 * usage. Then SOURCE_DATE_EPOCH (nf_id_env). Returns 0 or exit 2. */
int nf_writer_cli_check(nf_writer_cli *wc);

/* The library's output options (nf_writer.h) from the parsed command line:
 * progress goes to pr (initialized here, labelled what; the caller calls
 * nf_progress_done), and with --dry-run the plan to *dry (zeroed here;
 * nf_plan_free it). */
void nf_writer_cli_out(const nf_writer_cli *wc, nf_out_opts *o, nf_progress *pr,
                       const char *what, nf_plan *dry);

/* --dry-run's output: the plan's files table as pretty JSON on stdout. A
 * write error is nf_diag_stdout in d. Returns 0 or -1. */
int nf_print_plan(const nf_plan *plan, nf_diags *d);

/* Format bytes as "1.5 GiB" into buf. */
const char *nf_human_bytes(uint64_t n, char buf[32]);

#ifdef __cplusplus
}
#endif
#endif
