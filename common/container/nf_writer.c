/* nf_writer.c — planning, temporaries, crash-safe publication. */
#include "nf_writer.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nf_artifact.h"
#include "nf_digest.h"
#include "nf_json.h"
#include "nf_util.h"


/* ---- planning ---- */

int nf_plan_files(uint64_t payload, uint64_t eps, uint64_t limit, const char *entry_name,
                  nf_file **files, size_t *n_files, nf_diags *d)
{
    uint64_t total;
    size_t n;
    uint64_t ecap = 0, pcap = 0;
    bool single = limit == 0 || (nf_add_u64(eps, payload, &total) && total <= limit);
    if (single) {
        n = 1;
    } else {
        if (limit <= eps || limit < 2 * NF_PAGE) {
            nf_diag_add(d, NF_C_USAGE, "",
                        "--max-file-bytes %llu cannot hold the entry's %llu bytes of header and "
                        "catalog plus payload",
                        (unsigned long long)limit, (unsigned long long)eps);
            return -1;
        }
        ecap = (limit - eps) / NF_PAGE * NF_PAGE;
        pcap = (limit - NF_PAGE) / NF_PAGE * NF_PAGE;
        if (ecap == 0 || pcap == 0) {
            nf_diag_add(d, NF_C_USAGE, "",
                        "--max-file-bytes %llu leaves no payload capacity (entry payload starts "
                        "at %llu)",
                        (unsigned long long)limit, (unsigned long long)eps);
            return -1;
        }
        uint64_t rest = payload > ecap ? payload - ecap : 0;
        uint64_t parts = nf_ceil_div_u64(rest, pcap);
        /* a files table of a million parts is already ~60 MB of catalog */
        if (parts >= NF_MAX_PARTS) {
            nf_diag_add(d, NF_C_USAGE, "", "--max-file-bytes %llu would make %llu parts",
                        (unsigned long long)limit, (unsigned long long)parts);
            return -1;
        }
        n = 1 + (size_t)parts;
    }
    /* the files table names the parts after the entry: a name that is not
     * UTF-8 would make a catalog every reader refuses (utf8) */
    if (n > 1 && entry_name &&
        nf_utf8_invalid_at(entry_name, strlen(entry_name)) != strlen(entry_name)) {
        nf_diag_add(d, NF_C_USAGE, "",
                    "the part names derive from the entry's name, which is not valid UTF-8: "
                    "the catalog's files table cannot hold them (name the output in UTF-8)");
        return -1;
    }
    /* nor one with '\\' (spec 3.3: a part path never holds '\\' or '/') */
    if (n > 1 && entry_name && strchr(entry_name, '\\')) {
        nf_diag_add(d, NF_C_USAGE, "",
                    "the part names derive from the entry's name, which contains '\\': a part "
                    "path cannot (spec 3.3; name the output without it)");
        return -1;
    }
    nf_file *f = calloc(n, sizeof *f);
    if (!f) {
        nf_diag_add(d, NF_C_IO, "", "out of memory");
        return -1;
    }
    uint64_t left = payload, pos = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t cap = n == 1 ? payload : i == 0 ? ecap : pcap;
        f[i].payload_bytes = left < cap ? left : cap;
        f[i].logical_offset = pos;
        pos += f[i].payload_bytes;
        left -= f[i].payload_bytes;
        if (i > 0 && asprintf(&f[i].path, "%s.part-%04zu", entry_name, i) < 0) {
            f[i].path = NULL;
            for (size_t k = 0; k < i; k++)
                free(f[k].path);
            free(f);
            nf_diag_add(d, NF_C_IO, "", "out of memory");
            return -1;
        }
    }
    *files = f;
    *n_files = n;
    return 0;
}

static void free_files(nf_file *f, size_t n)
{
    for (size_t i = 0; f && i < n; i++)
        free(f[i].path);
    free(f);
}

void nf_plan_free(nf_plan *p)
{
    free_files(p->files, p->n_files);
    free(p->json);
    memset(p, 0, sizeof *p);
}

int nf_plan_make(const nf_catalog *cat, const nf_write_opts *o, const char *entry_name,
                 bool digests, nf_plan *plan, nf_diags *d)
{
    memset(plan, 0, sizeof *plan);
    nf_serialize_opts so = {0};
    so.digests = digests;
    uint64_t reserve = o->json_bytes;
    size_t len = 0;
    if (!reserve) {
        /* first guess: the catalog with a one-file table, plus room for parts */
        nf_file one = {NULL, cat->payload_bytes, 0};
        so.files = &one;
        so.n_files = 1;
        /* sizes only: the text is written once, when the table settles */
        len = nf_catalog_serialized_len(cat, &so);
        if (len == SIZE_MAX) {
            nf_diag_add(d, NF_C_IO, "", "out of memory serializing the catalog");
            return -1;
        }
        reserve = len;
    }
    for (int iter = 0; iter < 64; iter++) {
        uint64_t me, eps;
        if (!nf_add_u64(32, reserve, &me) || !nf_align_up_u64(me, NF_PAGE, &eps)) {
            nf_diag_add(d, NF_C_RANGE, "", "JSON reservation overflows");
            return -1;
        }
        nf_file *files = NULL;
        size_t nf = 0;
        if (nf_plan_files(cat->payload_bytes, eps, o->max_file_bytes, entry_name, &files, &nf,
                          d) < 0)
            return -1;
        so.files = files;
        so.n_files = nf;
        len = nf_catalog_serialized_len(cat, &so);
        char *t = len != SIZE_MAX && len <= reserve ? nf_catalog_serialize(cat, &so, &len) : NULL;
        if (len == SIZE_MAX || (len <= reserve && !t)) {
            free_files(files, nf);
            nf_diag_add(d, NF_C_IO, "", "out of memory serializing the catalog");
            return -1;
        }
        if (len <= reserve) {
            plan->files = files;
            plan->n_files = nf;
            plan->json = t;
            plan->json_len = len;
            plan->json_bytes = reserve;
            plan->entry_payload_start = eps;
            return 0;
        }
        free_files(files, nf);
        if (o->json_bytes) {
            nf_diag_add(d, NF_C_USAGE, "",
                        "the catalog needs %zu bytes, more than --json-bytes %llu", len,
                        (unsigned long long)o->json_bytes);
            return -1;
        }
        reserve = len; /* grow and recompute the table (spec 11.4 step 4) */
    }
    nf_diag_add(d, NF_C_IO, "", "files table did not settle");
    return -1;
}

char *nf_plan_files_json(const nf_plan *p, bool pretty)
{
    nf_jval *arr = nf_jnew_array();
    for (size_t i = 0; arr && i < p->n_files; i++) {
        nf_jval *f = nf_jnew_object();
        nf_jobj_set(f, "path", p->files[i].path ? nf_jnew_string(p->files[i].path) : NULL);
        nf_jobj_set(f, "payload_bytes", nf_jnew_u64(p->files[i].payload_bytes));
        nf_jarr_push(arr, f);
    }
    char *t = arr ? nf_jval_to_text(arr, pretty, NULL) : NULL;
    nf_jval_free(arr);
    return t;
}

/* ---- the artifact_id ---- */

void nf_catalog_artifact_id(const char *json, size_t len, uint64_t json_bytes,
                            unsigned char id[16])
{
    nf_sha256 *s = nf_sha256_new();
    char hex[65] = "";
    if (s) {
        char sp[256];
        memset(sp, ' ', sizeof sp);
        nf_sha256_update(s, json, len);
        for (uint64_t left = json_bytes > len ? json_bytes - len : 0; left;) {
            size_t k = left > sizeof sp ? sizeof sp : (size_t)left;
            nf_sha256_update(s, sp, k);
            left -= k;
        }
        nf_sha256_final(s, hex);
    }
    for (int i = 0; i < 16; i++) {
        int hi = hex[2 * i], lo = hex[2 * i + 1];
        hi = hi >= 'a' ? hi - 'a' + 10 : hi - '0';
        lo = lo >= 'a' ? lo - 'a' + 10 : lo - '0';
        id[i] = hex[0] ? (unsigned char)(hi << 4 | lo) : 0;
    }
}

int nf_write_id_check(nf_write_opts *o, size_t digests_missing, const char *what,
                      const char *out, nf_diags *d)
{
    if (o->id_mode != NF_ID_REPRODUCIBLE || !digests_missing)
        return 0;
    char msg[512];
    snprintf(msg, sizeof msg,
             "the artifact_id of reproducible output is derived from the catalog's digests, "
             "and %s has none for %zu object%s (write files with -o, or give --artifact-id)",
             what, digests_missing, digests_missing == 1 ? "" : "s");
    if (o->id_best_effort) {
        char w[600];
        snprintf(w, sizeof w, "SOURCE_DATE_EPOCH is set, but %s; the artifact_id is random",
                 msg);
        if (o->warn)
            o->warn(o->warn_ctx, out, w);
        o->id_mode = NF_ID_RANDOM;
        return 0;
    }
    nf_diag_add(d, NF_C_USAGE, "", "--reproducible: %s", msg);
    return -1;
}

/* ---- temporaries and signals ---- */

/* The writers whose temporaries a signal must remove, and the temporary of
 * a single-file output. Each writer's tmp[] array is allocated once for all
 * its files (no cap on their number) and changed only with signals blocked,
 * so the handler, which runs in the thread that blocks them, always sees it
 * whole. */
#define MAX_WRITERS 16
#define MAX_SINGLE 4
static nf_writer *volatile g_writers[MAX_WRITERS];
static char *volatile g_single_tmp[MAX_SINGLE];
static bool g_handlers;
/* the temporary directory of a directory output (nf_dir_out) and the files
 * made in it, removed by a signal like every other temporary */
static char *volatile g_dir_tmp;
static char **volatile g_dir_files;
static volatile size_t g_dir_n;

struct devino {
    dev_t dev;
    ino_t ino;
    const char *name;
};

/* A file beside the new set that publication removes (or keeps, with a
 * warning): a part of the replaced set or a leftover (DESIGN 3). */
enum { SP_REMOVE, SP_REMOVE_LEFTOVER, SP_KEEP_FOREIGN_NAME, SP_KEEP_SHARED, SP_KEEP_UNSURE };
struct surplus {
    char *path;
    unsigned char id[16];
    uint64_t index;       /* its part_index, checked again before removal */
    int act;
    char *other;          /* SP_KEEP_SHARED, SP_KEEP_UNSURE: the other entry's
                             name, or the unreadable file's */
};

struct wfd {
    int fd;
    size_t file;
    uint64_t used;
};

#define WCACHE 4 /* temporaries open at once */

struct nf_writer {
    bool stream;
    nf_output *out;       /* stream */
    uint64_t spos;        /* stream: payload bytes written */
    char *target, *dir, *entry_name;
    nf_plan plan;         /* copy of files table (owned) */
    size_t n_files;
    char **tmp;           /* temporaries (NULL once published or removed) */
    char **final;         /* published paths */
    bool *existed;        /* final[i] (i > 0) held a part when last checked */
    unsigned char (*way_id)[16]; /* that part's artifact_id */
    char **aside;         /* where publication moved what was at final[i] (or,
                             for i = 0, the replaced entry); NULL: nothing */
    struct surplus *surplus; /* what publication removes or keeps, decided
                                under the directory lock */
    size_t n_surplus;
    struct wfd cache[WCACHE];
    uint64_t tick;
    unsigned char id[16];
    nf_write_opts o;
    struct devino *inputs; /* sorted by (dev, ino) */
    size_t n_inputs;
    int slot;             /* index in g_writers, or -1 */
    bool entry_existed;   /* the entry path held a file at open */
    dev_t entry_dev;
    ino_t entry_ino;
    bool have_old;        /* the replaced entry could be read */
    unsigned char old_id[16];
    char *made_dir;       /* the shallowest directory this writer made (NULL:
                             none): removed with the others if still empty
                             when nothing is published */
    bool published;
    char **old_parts;     /* its parts (paths) and their indices */
    uint64_t *old_index;
    size_t n_old_parts;
};

static void on_signal(int sig)
{
    for (int k = 0; k < MAX_WRITERS; k++) {
        nf_writer *w = g_writers[k];
        for (size_t i = 0; w && w->tmp && i < w->n_files; i++)
            if (w->tmp[i])
                unlink(w->tmp[i]);
    }
    for (int k = 0; k < MAX_SINGLE; k++)
        if (g_single_tmp[k])
            unlink(g_single_tmp[k]);
    for (size_t i = 0; g_dir_files && i < g_dir_n; i++)
        unlink(g_dir_files[i]);
    if (g_dir_tmp)
        rmdir(g_dir_tmp);
    /* then the default action (the exit status is the signal's, with a core
     * where the default dumps one): raised now, delivered on return, when
     * the signal is unblocked */
    signal(sig, SIG_DFL);
    raise(sig);
}

/* Block every signal a user or the system sends asynchronously (the
 * synchronous faults stay deliverable). */
static void block_signals(sigset_t *old)
{
    sigset_t s;
    sigfillset(&s);
    sigdelset(&s, SIGSEGV);
    sigdelset(&s, SIGBUS);
    sigdelset(&s, SIGFPE);
    sigdelset(&s, SIGILL);
    sigdelset(&s, SIGTRAP);
    sigdelset(&s, SIGABRT);
    sigprocmask(SIG_BLOCK, &s, old);
}

/* Every catchable signal whose default action ends the process (SIGXFSZ
 * aside: writers ignore it, so an over-large file is an EFBIG error). The
 * faults are here too: a handler that finds memory too broken to walk
 * faults again with the signal blocked, which the kernel ends by default. */
static const int g_term_sigs[] = {
    SIGHUP, SIGINT, SIGQUIT, SIGILL, SIGTRAP, SIGABRT, SIGBUS, SIGFPE, SIGUSR1, SIGSEGV,
    SIGUSR2, SIGPIPE, SIGALRM, SIGTERM, SIGXCPU, SIGVTALRM, SIGPROF, SIGSYS,
#ifdef SIGSTKFLT
    SIGSTKFLT,
#endif
#ifdef SIGPOLL
    SIGPOLL,
#endif
#ifdef SIGPWR
    SIGPWR,
#endif
};

static void catch_one(int sig, const struct sigaction *sa)
{
    struct sigaction prev;
    /* a disposition someone chose (ignored, a sanitizer's fault handler, a
     * library user's own) is left alone */
    if (sigaction(sig, NULL, &prev) == 0 && !(prev.sa_flags & SA_SIGINFO) &&
        prev.sa_handler == SIG_DFL)
        sigaction(sig, sa, NULL);
}

static void install_handlers(void)
{
    if (g_handlers)
        return;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof g_term_sigs / sizeof *g_term_sigs; i++)
        catch_one(g_term_sigs[i], &sa);
#ifdef SIGRTMIN
    for (int s = SIGRTMIN; s <= SIGRTMAX; s++) /* real-time signals end a process too */
        catch_one(s, &sa);
#endif
    g_handlers = true;
}

/* Register w for the handler (signals blocked by the caller). */
static int writer_register(nf_writer *w)
{
    install_handlers();
    for (int k = 0; k < MAX_WRITERS; k++)
        if (!g_writers[k]) {
            g_writers[k] = w;
            w->slot = k;
            return 0;
        }
    return -1;
}

/* A warning to the caller's callback (the library prints nothing). */
static void warn(const nf_writer *w, const char *path, const char *what)
{
    if (w->o.warn)
        w->o.warn(w->o.warn_ctx, path, what);
}

/* ---- the writer ---- */

const unsigned char *nf_writer_artifact_id(const nf_writer *w) { return w->id; }

static void cache_close_all(nf_writer *w)
{
    for (int k = 0; k < WCACHE; k++)
        if (w->cache[k].fd >= 0) {
            close(w->cache[k].fd);
            w->cache[k].fd = -1;
        }
}

static void remove_made(const char *dir, char *made);

static void writer_free(nf_writer *w)
{
    if (!w)
        return;
    if (!w->stream)
        cache_close_all(w);
    sigset_t old;
    block_signals(&old);
    for (size_t i = 0; w->tmp && i < w->n_files; i++) {
        char *t = w->tmp[i];
        if (t) {
            unlink(t);
            w->tmp[i] = NULL;
            free(t);
        }
    }
    if (w->slot >= 0)
        g_writers[w->slot] = NULL;
    sigprocmask(SIG_SETMASK, &old, NULL);
    if (!w->published && w->dir)
        remove_made(w->dir, w->made_dir);
    else
        free(w->made_dir);
    for (size_t i = 0; w->final && i < w->n_files; i++)
        free(w->final[i]);
    for (size_t i = 0; i < w->n_old_parts; i++)
        free(w->old_parts[i]);
    for (size_t i = 0; w->aside && i < w->n_files; i++)
        free(w->aside[i]);
    for (size_t i = 0; i < w->n_surplus; i++)
        free(w->surplus[i].path), free(w->surplus[i].other);
    free(w->aside);
    free(w->surplus);
    free(w->way_id);
    free(w->old_parts);
    free(w->old_index);
    free(w->tmp);
    free(w->final);
    free(w->existed);
    free(w->inputs);
    free(w->target);
    free(w->dir);
    free(w->entry_name);
    free_files(w->plan.files, w->plan.n_files);
    free(w);
}

void nf_writer_abort(nf_writer *w) { writer_free(w); }

/* Make dir and its missing parents; *made (when not NULL) gets the
 * shallowest directory this call created (malloc'ed; NULL: none), for
 * remove_made. Returns 0 or -1 with errno. */
static int mkdir_p(const char *dir, char **made)
{
    char *p = strdup(dir);
    if (made)
        *made = NULL;
    if (!p)
        return -1;
    for (char *q = p + 1;; q++) {
        if (*q && *q != '/')
            continue;
        char c = *q;
        *q = 0;
        if (mkdir(p, 0777) == 0) {
            if (made && !*made)
                *made = strdup(p);
        } else if (errno != EEXIST) {
            int e = errno;
            *q = c;
            free(p);
            errno = e;
            return -1;
        }
        *q = c;
        if (!c)
            break;
    }
    free(p);
    return 0;
}

/* After a failure: remove the directories mkdir_p made for dir (made is
 * the shallowest), deepest first, as long as they are empty (DESIGN 3:
 * nothing of a failed writer's own is left; red-team E28). Frees made. */
static void remove_made(const char *dir, char *made)
{
    if (!made)
        return;
    char *p = strdup(dir);
    size_t ml = strlen(made);
    while (p && strlen(p) >= ml && strncmp(p, made, ml) == 0 && rmdir(p) == 0) {
        char *slash = strrchr(p, '/');
        if (!slash || strlen(p) == ml)
            break;
        *slash = 0;
    }
    free(p);
    free(made);
}

/* A temporary's name: ".<base>.tmp-<pid>-XXXXXX" (mkstemp's six). Returns the
 * pid, or 0 when name is not one for base. */
static long temp_pid(const char *name, const char *base)
{
    size_t bl = strlen(base);
    if (name[0] != '.' || strncmp(name + 1, base, bl) != 0 || strncmp(name + 1 + bl, ".tmp-", 5))
        return 0;
    const char *p = name + 1 + bl + 5;
    char *end = NULL;
    errno = 0;
    long pid = strtol(p, &end, 10);
    if (errno || pid <= 0 || end == p || *end != '-' || strlen(end + 1) != 6)
        return 0;
    for (const char *q = end + 1; *q; q++)
        if (!((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') || (*q >= '0' && *q <= '9')))
            return 0;
    return pid;
}

static void block_signals(sigset_t *old);

/* Create the temporary ".<base>.tmp-<pid>-XXXXXX" in dir (the one home of
 * the writers' temporaries: artifact sets and single files alike) with the
 * umask's mode, registered in *slot for the signal handler with signals
 * blocked, so no signal can leave an unregistered one behind. With retry
 * (not NULL), EMFILE/ENFILE runs retry(ctx), which closes descriptors, and
 * tries once more. Returns the fd, or -errno (*slot untouched). */
static int make_temp(const char *dir, const char *base, char *volatile *slot,
                     void (*retry)(void *), void *ctx)
{
    char *t = NULL;
    if (asprintf(&t, "%s/.%s.tmp-%ld-XXXXXX", dir, base, (long)getpid()) < 0)
        return -ENOMEM;
    mode_t um = umask(0);
    umask(um);
    sigset_t old;
    block_signals(&old);
    int fd = mkostemp(t, O_CLOEXEC);
    int e = errno;
    if (fd < 0 && (e == EMFILE || e == ENFILE) && retry) {
        retry(ctx);
        memcpy(t + strlen(t) - 6, "XXXXXX", 6); /* a failed call may change it */
        fd = mkostemp(t, O_CLOEXEC);
        e = errno;
    }
    if (fd >= 0)
        *slot = t;
    sigprocmask(SIG_SETMASK, &old, NULL);
    if (fd < 0) {
        free(t);
        return -e;
    }
    fchmod(fd, 0666 & ~um); /* honour the umask like any other created file */
    return fd;
}

/* "<entry>.part-<digits>": the digits' start, or NULL. */
static const char *part_suffix(const char *name, const char *entry)
{
    size_t el = strlen(entry);
    if (strncmp(name, entry, el) != 0 || strncmp(name + el, ".part-", 6) != 0)
        return NULL;
    const char *q = name + el + 6;
    return *q && strspn(q, "0123456789") == strlen(q) ? q : NULL;
}

/* Temporaries of an earlier run that was killed (SIGKILL cannot clean up):
 * ".<entry>[.part-N].tmp-<pid>-XXXXXX", regular files whose writer process
 * is gone. */
static void remove_stale_temps(const char *dir, const char *entry)
{
    DIR *dp = opendir(dir);
    if (!dp)
        return;
    size_t el = strlen(entry);
    struct dirent *de;
    while ((de = readdir(dp)) != NULL) {
        const char *n = de->d_name;
        if (n[0] != '.' || strncmp(n + 1, entry, el) != 0)
            continue;
        /* the base is the entry, or one of its part names */
        const char *t = strstr(n + 1 + el, ".tmp-");
        if (!t)
            continue;
        size_t bl = (size_t)(t - (n + 1));
        char base[NAME_MAX + 1];
        if (bl > NAME_MAX)
            continue;
        memcpy(base, n + 1, bl);
        base[bl] = 0;
        if (strcmp(base, entry) != 0 && !part_suffix(base, entry))
            continue;
        long pid = temp_pid(n, base);
        if (!pid || kill((pid_t)pid, 0) == 0 || errno != ESRCH)
            continue;
        struct stat st;
        if (fstatat(dirfd(dp), n, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
            unlinkat(dirfd(dp), n, 0);
    }
    closedir(dp);
}

/* ".<base>.old-<pid>", base the entry or one of its part names: the pid
 * (base, NUL-terminated, in base[NAME_MAX + 1]), or 0. */
static long aside_pid(const char *name, const char *entry, char *base)
{
    const char *t = name[0] == '.' ? strrchr(name, '.') : NULL;
    if (!t || t == name || strncmp(t, ".old-", 5) != 0)
        return 0;
    const char *p = t + 5;
    if (!*p || strspn(p, "0123456789") != strlen(p))
        return 0;
    size_t bl = (size_t)(t - (name + 1));
    if (bl == 0 || bl > NAME_MAX)
        return 0;
    memcpy(base, name + 1, bl);
    base[bl] = 0;
    if (strcmp(base, entry) != 0 && !part_suffix(base, entry))
        return 0;
    errno = 0;
    long pid = strtol(p, NULL, 10);
    return errno || pid <= 0 ? 0 : pid;
}

static int lock_dir(const char *dir);
static int publish(const char *tmp, const char *final, bool replace);

/* Does the regular file dir/name start with magic (8 bytes)? link: a
 * symlink to a regular file counts too (an entry path may be one: what
 * --force moved aside is then the link), its target checked before it is
 * opened, so no FIFO or device is. */
static bool has_magic(int dfd, const char *name, const unsigned char *magic, bool link)
{
    int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
    struct stat ls;
    bool via = false;
    if (fd < 0 && errno == ELOOP && link && fstatat(dfd, name, &ls, 0) == 0 &&
        S_ISREG(ls.st_mode)) {
        fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
        via = true;
    }
    if (fd < 0)
        return false;
    struct stat st;
    unsigned char h[8];
    bool ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
              (!via || (st.st_dev == ls.st_dev && st.st_ino == ls.st_ino)) &&
              nf_pread_full(fd, h, 8, 0) == 8 && memcmp(h, magic, 8) == 0;
    close(fd);
    return ok;
}

static void recover_asides(nf_writer *w);

static int devino_cmp(const void *x, const void *y)
{
    const struct devino *a = x, *b = y;
    if (a->dev != b->dev)
        return a->dev < b->dev ? -1 : 1;
    return a->ino < b->ino ? -1 : a->ino > b->ino ? 1 : 0;
}

/* The input st names, or NULL. O(log n). */
static const char *is_input(const nf_writer *w, const struct stat *st)
{
    struct devino k = {st->st_dev, st->st_ino, NULL};
    const struct devino *f =
        w->n_inputs ? bsearch(&k, w->inputs, w->n_inputs, sizeof k, devino_cmp) : NULL;
    return f ? f->name : NULL;
}

/* stat an input: "-" is standard input (a file redirected to it). */
static int stat_input(const char *path, struct stat *st)
{
    return strcmp(path, "-") == 0 ? fstat(0, st) : stat(path, st);
}

static int set_inputs(nf_writer *w, const char *const *inputs, size_t n)
{
    w->inputs = calloc(n ? n : 1, sizeof *w->inputs);
    if (!w->inputs)
        return -1;
    for (size_t k = 0; k < n; k++) {
        struct stat si;
        if (inputs[k] && stat_input(inputs[k], &si) == 0)
            w->inputs[w->n_inputs++] = (struct devino){si.st_dev, si.st_ino,
                                                       strcmp(inputs[k], "-") ? inputs[k]
                                                                              : "standard input"};
    }
    qsort(w->inputs, w->n_inputs, sizeof *w->inputs, devino_cmp);
    return 0;
}

/* Read the 32-byte header of the regular file path without following a
 * symlink or blocking; st must be its lstat. Returns 0 or -1. */
static int read_header(const char *path, const struct stat *st, unsigned char h[32])
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
    if (fd < 0)
        return -1;
    struct stat fs;
    int rc = fstat(fd, &fs) == 0 && fs.st_dev == st->st_dev && fs.st_ino == st->st_ino &&
                     S_ISREG(fs.st_mode) && nf_pread_full(fd, h, 32, 0) == 32
                 ? 0
                 : -1;
    close(fd);
    return rc;
}

/* Does path hold a part of the set `id` at index `index` (DESIGN 3: part
 * magic, artifact_id, part_index), a regular file that is no input? */
static bool proven_part(const nf_writer *w, const char *path, uint64_t index,
                        const unsigned char id[16])
{
    struct stat st;
    unsigned char h[32];
    if (lstat(path, &st) < 0 || !S_ISREG(st.st_mode) || is_input(w, &st) ||
        read_header(path, &st, h) < 0)
        return false;
    return memcmp(h, NF_PART_MAGIC, 8) == 0 && nf_load_le64(h + 8) == index &&
           memcmp(h + 16, id, 16) == 0;
}

/* Remember the parts of the entry we are about to replace: after the new set
 * is published, those that still prove to be its own are removed. */
static void collect_old_parts(nf_writer *w)
{
    nf_diags tmp = NF_DIAGS_INIT;
    nf_open_opts oo = {0};
    nf_artifact *a = nf_artifact_open(w->target, &oo, &tmp);
    nf_diags_free(&tmp);
    if (!a)
        return;
    const nf_catalog *c = nf_artifact_catalog(a);
    memcpy(w->old_id, nf_artifact_header(a)->artifact_id, 16);
    w->have_old = true;
    size_t n = c->n_files ? c->n_files : 1;
    w->old_parts = calloc(n, sizeof *w->old_parts);
    w->old_index = calloc(n, sizeof *w->old_index);
    for (size_t i = 1; w->old_parts && w->old_index && i < c->n_files; i++) {
        const char *p = c->files[i].path;
        /* spec 3.3: a bare name beside the entry; anything else is not ours */
        if (!p || !*p || strchr(p, '/') || !strcmp(p, ".") || !strcmp(p, ".."))
            continue;
        char *full = nf_path_join(w->dir, p);
        if (!full)
            continue;
        w->old_index[w->n_old_parts] = i;
        w->old_parts[w->n_old_parts++] = full;
    }
    nf_artifact_close(a);
}

static const char *kind_name(mode_t m)
{
    return S_ISDIR(m) ? "a directory" : S_ISFIFO(m) ? "a FIFO" : S_ISCHR(m) ? "a character device"
         : S_ISBLK(m) ? "a block device" : S_ISSOCK(m) ? "a socket" : S_ISLNK(m) ? "a symlink"
                                                                          : "not a regular file";
}

/* Check the entry path (DESIGN 3). At open (publish false) this records
 * what exists; at publication (under the directory lock) it insists the
 * entry is as it was. Returns 0 or -1 with a diagnostic. */
static int check_entry(nf_writer *w, bool publish, nf_diags *d)
{
    struct stat ls, st;
    bool ex = lstat(w->target, &ls) == 0;
    if (!ex && errno != ENOENT && errno != ENOTDIR) {
        nf_diag_addf(d, NF_C_IO, w->target, "", "cannot check the output: %s", strerror(errno));
        return -1;
    }
    if (publish && (ex != w->entry_existed ||
                    (ex && (ls.st_dev != w->entry_dev || ls.st_ino != w->entry_ino)))) {
        nf_diag_addf(d, NF_C_IO, w->target, "",
                     ex ? "another writer published this output while this one ran; "
                          "nothing was replaced"
                        : "the entry being replaced was removed while this writer ran; "
                          "nothing was published");
        return -1;
    }
    if (ex) {
        bool follows = stat(w->target, &st) == 0;
        const char *in = follows ? is_input(w, &st) : NULL;
        if (in) {
            nf_diag_addf(d, NF_C_USAGE, w->target, "",
                         "output names an input file (%s); refusing to write", in);
            return -1;
        }
        if (follows && !S_ISREG(st.st_mode)) {
            nf_diag_addf(d, NF_C_USAGE, w->target, "",
                         "output is %s; an artifact's entry must be a regular file path "
                         "(use -o - for a stream)",
                         kind_name(st.st_mode));
            return -1;
        }
        if (!w->o.force) {
            nf_diag_addf(d, NF_C_IO, w->target, "", "output exists; use --force to replace it");
            return -1;
        }
    }
    if (!publish) {
        w->entry_existed = ex;
        w->entry_dev = ex ? ls.st_dev : 0;
        w->entry_ino = ex ? ls.st_ino : 0;
        /* the artifact_id of the set being replaced, from the entry's header
         * alone (its catalog may be broken) */
        unsigned char h[32];
        if (ex && S_ISREG(ls.st_mode) && read_header(w->target, &ls, h) == 0 &&
            memcmp(h, NF_ENTRY_MAGIC, 8) == 0) {
            memcpy(w->old_id, h + 16, 16);
            w->have_old = true;
        }
    }
    return 0;
}

/* ---- what proves a leftover (DESIGN 3) ----
 *
 * A part is a leftover only when no entry in the target's directory owns
 * it: an entry (a regular file there with the entry magic, whatever its
 * name, the target's own name aside) owns every part carrying its
 * artifact_id (spec 2.1: a renamed entry still reads). So does a symlink
 * there to an entry elsewhere (the reader looks for an entry's parts in
 * the directory of the path it was given: `mv m.ninfer /keep/; ln -s
 * /keep/m.ninfer m-v1.ninfer` still reads), unless it leads to the target
 * itself, which then shows the new set. The candidates' artifact_ids are
 * gathered first; then one pass over the directory reads the 32-byte
 * header of each regular file (or symlink to one) once (O_NONBLOCK, a
 * symlink's target checked to be a regular file first) and looks its id
 * up among them (binary search). A file whose header cannot be read, or
 * that holds the entry magic but ends before the artifact_id does (an
 * interrupted download), may be an entry: it counts as owning every
 * candidate. */

struct owners {
    unsigned char (*ids)[16]; /* the candidates' artifact_ids, sorted, unique */
    size_t n, cap;
    char **name;              /* [n]: an entry carrying ids[k], or NULL */
    char *unreadable;         /* a file that may be an entry (see above) */
    const char *why;          /* unreadable's reason: "cannot be read", ... */
    bool scanned;
};

/* o->unreadable's name and reason, as a warning or diagnostic shows them. */
static const char *unsure_cut = "is an entry cut short inside its header";

static int id_cmp(const void *x, const void *y) { return memcmp(x, y, 16); }

static int owners_want(struct owners *o, const unsigned char id[16])
{
    if (o->n == o->cap) {
        size_t nc = o->cap ? 2 * o->cap : 16;
        unsigned char (*v)[16] = realloc(o->ids, nc * sizeof *v);
        if (!v)
            return -1;
        o->ids = v;
        o->cap = nc;
    }
    memcpy(o->ids[o->n++], id, 16);
    return 0;
}

static void owners_free(struct owners *o)
{
    for (size_t k = 0; o->name && k < o->n; k++)
        free(o->name[k]);
    free(o->name);
    free(o->ids);
    free(o->unreadable);
    memset(o, 0, sizeof *o);
}

/* The entry owning parts with this id (NULL: none found). */
static const char *owner_of(const struct owners *o, const unsigned char id[16])
{
    const unsigned char(*k)[16] = o->n ? bsearch(id, o->ids, o->n, 16, id_cmp) : NULL;
    return k ? o->name[k - o->ids] : NULL;
}

/* One pass over w->dir (see above), the target's name and also (when not
 * NULL) left out. Returns 0, or -1 with `io` when the
 * directory cannot be read (nothing can then be proven a leftover). */
static void owners_unsure(struct owners *o, const char *name, const char *why)
{
    if (!o->unreadable && (o->unreadable = strdup(name)) != NULL)
        o->why = why;
}

static int owners_scan(const nf_writer *w, struct owners *o, const char *also, nf_diags *d)
{
    o->scanned = true;
    if (!o->n)
        return 0;
    qsort(o->ids, o->n, 16, id_cmp);
    size_t u = 0;
    for (size_t k = 0; k < o->n; k++)
        if (!u || memcmp(o->ids[u - 1], o->ids[k], 16) != 0)
            memmove(o->ids[u++], o->ids[k], 16);
    o->n = u;
    o->name = calloc(o->n, sizeof *o->name);
    DIR *dp = o->name ? opendir(w->dir) : NULL;
    if (!dp) {
        nf_diag_addf(d, NF_C_IO, w->dir, "",
                     "cannot read the directory to tell leftover parts from other entries' "
                     "parts: %s", o->name ? strerror(errno) : "out of memory");
        return -1;
    }
    int dfd = dirfd(dp);
    char *target = NULL; /* the target's real path, for symlinks to it */
    bool target_done = false;
    struct dirent *de;
    while ((de = readdir(dp)) != NULL) {
        const char *n = de->d_name;
        if (!strcmp(n, ".") || !strcmp(n, "..") || !strcmp(n, w->entry_name) ||
            (also && !strcmp(n, also)) ||
            (de->d_type != DT_REG && de->d_type != DT_LNK && de->d_type != DT_UNKNOWN))
            continue;
        int fd = openat(dfd, n, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
        struct stat ls;
        bool link = false;
        if (fd < 0 && errno == ELOOP) {
            /* a symlink: to a regular file (never opening a FIFO or a
             * device), and not to the target itself */
            link = true;
            if (fstatat(dfd, n, &ls, 0) < 0 || !S_ISREG(ls.st_mode))
                continue; /* dangling, a loop, a FIFO, a directory: no entry */
            if (!target_done) {
                target = realpath(w->target, NULL);
                target_done = true;
            }
            char *lp = target ? nf_path_join(w->dir, n) : NULL;
            char *full = lp ? realpath(lp, NULL) : NULL;
            bool to_target = full && strcmp(full, target) == 0;
            free(lp);
            free(full);
            if (to_target)
                continue;
            fd = openat(dfd, n, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
        }
        if (fd < 0) {
            /* gone, a socket: no entry; anything else may be one */
            if (errno != ENOENT && errno != ELOOP && errno != ENXIO)
                owners_unsure(o, n, "cannot be read");
            continue;
        }
        struct stat st;
        unsigned char h[32];
        ssize_t r = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
                            (!link || (st.st_dev == ls.st_dev && st.st_ino == ls.st_ino))
                        ? nf_pread_full(fd, h, 32, 0)
                        : 0;
        close(fd);
        if (r < 0)
            owners_unsure(o, n, "cannot be read");
        else if (r >= 8 && r < 32 && memcmp(h, NF_ENTRY_MAGIC, 8) == 0)
            owners_unsure(o, n, unsure_cut);
        if (r < 32 || memcmp(h, NF_ENTRY_MAGIC, 8) != 0)
            continue;
        const unsigned char(*k)[16] = bsearch(h + 16, o->ids, o->n, 16, id_cmp);
        if (k && !o->name[k - o->ids])
            o->name[k - o->ids] = strdup(n);
    }
    closedir(dp);
    free(target);
    return 0;
}

/* With --force, the file at the entry path is the user's to replace, but
 * not when it is a part that an entry beside it owns (DESIGN 3: even
 * --force replaces only the parts of the entry it replaces): `-o
 * y.ninfer.part-0001 --force` broke y.ninfer. Returns 0 or -1 (`io`). */
static int check_entry_part(const nf_writer *w, nf_diags *d)
{
    struct stat ls;
    unsigned char h[32];
    if (!w->o.force || lstat(w->target, &ls) < 0 || !S_ISREG(ls.st_mode) ||
        read_header(w->target, &ls, h) < 0 || memcmp(h, NF_PART_MAGIC, 8) != 0)
        return 0;
    struct owners o = {0};
    int rc = owners_want(&o, h + 16) < 0 ? -1 : owners_scan(w, &o, NULL, d);
    const char *own = rc == 0 ? owner_of(&o, h + 16) : NULL;
    if (rc == 0 && (own || o.unreadable)) {
        if (own)
            nf_diag_addf(d, NF_C_IO, w->target, "",
                         "the output is a part of the entry %s beside it (--force replaces an "
                         "entry, never another entry's part); refusing to replace it", own);
        else
            nf_diag_addf(d, NF_C_IO, w->target, "",
                         "the output is a part, and %s beside it %s (it may be the entry that "
                         "owns it); refusing to replace it", o.unreadable, o.why);
        rc = -1;
    } else if (rc < 0 && !nf_diags_exit(d)) {
        nf_diag_add(d, NF_C_IO, "", "out of memory");
    }
    owners_free(&o);
    return rc;
}

/* Is the part in the way at final[i] one of the set being replaced? */
static bool way_is_old(const nf_writer *w, size_t i)
{
    return w->o.force && w->entry_existed && w->have_old &&
           memcmp(w->way_id[i], w->old_id, 16) == 0;
}

/* The parts in the way of the new set's names: a part of the set being
 * replaced, or a leftover, may go; one another entry owns may not. */
static int judge_way(const nf_writer *w, const struct owners *o, nf_diags *d)
{
    for (size_t i = 1; i < w->n_files; i++) {
        if (!w->existed[i])
            continue;
        const char *own = owner_of(o, w->way_id[i]);
        if (own) {
            nf_diag_addf(d, NF_C_IO, w->final[i], "",
                         way_is_old(w, i)
                             ? "this part of the entry being replaced is also used by the entry "
                               "%s (a copy shares its parts); refusing to replace it"
                             : "this part belongs to the entry %s beside it (no leftover); "
                               "refusing to replace it",
                         own);
            return -1;
        }
        if (o->unreadable) {
            nf_diag_addf(d, NF_C_IO, w->final[i], "",
                         "cannot tell whether this part is a leftover: %s beside it %s (it may "
                         "be %s that owns it); refusing to replace it",
                         o->unreadable, o->why,
                         o->why == unsure_cut ? "the one" : "an entry");
            return -1;
        }
    }
    return 0;
}

/* Check every part path the set will take (DESIGN 3): a file in the way
 * must be a regular file with the part magic (its artifact_id is kept in
 * way_id), and no entry beside it may own it. At publication, also decide
 * what goes after publication (plan_surplus). Returns 0 or -1 with a
 * diagnostic. */
static int plan_surplus(nf_writer *w, struct owners *o, nf_diags *d);

static int check_parts(nf_writer *w, bool publish, nf_diags *d)
{
    struct stat ls, st;
    struct owners o = {0};
    int rc = 0;
    for (size_t i = 1; i < w->n_files && !rc; i++) {
        const char *p = w->final[i];
        w->existed[i] = false;
        if (lstat(p, &ls) < 0) {
            if (errno == ENOENT || errno == ENOTDIR)
                continue;
            nf_diag_addf(d, NF_C_IO, p, "", "cannot check the output: %s", strerror(errno));
            rc = -1;
            break;
        }
        const char *in = stat(p, &st) == 0 ? is_input(w, &st) : NULL;
        if (in) {
            nf_diag_addf(d, NF_C_USAGE, p, "", "output names an input file (%s); refusing to write",
                         in);
            rc = -1;
            break;
        }
        if (!S_ISREG(ls.st_mode)) {
            nf_diag_addf(d, NF_C_USAGE, p, "", "this part's path is %s; refusing to replace it",
                         kind_name(ls.st_mode));
            rc = -1;
            break;
        }
        unsigned char h[32];
        if (read_header(p, &ls, h) < 0 || memcmp(h, NF_PART_MAGIC, 8) != 0) {
            nf_diag_addf(d, NF_C_IO, p, "",
                         "a file that is not an NInfer part is in the way of this part; "
                         "refusing to replace it");
            rc = -1;
            break;
        }
        w->existed[i] = true;
        memcpy(w->way_id[i], h + 16, 16);
        if (owners_want(&o, h + 16) < 0) {
            nf_diag_add(d, NF_C_IO, "", "out of memory");
            rc = -1;
        }
    }
    if (!rc && publish)
        rc = plan_surplus(w, &o, d);
    if (!rc && !o.scanned)
        rc = owners_scan(w, &o, NULL, d);
    if (!rc)
        rc = judge_way(w, &o, d);
    owners_free(&o);
    return rc;
}

static nf_writer *writer_new(const nf_plan *plan, nf_diags *d)
{
    /* a write past RLIMIT_FSIZE (ulimit -f) must fail with EFBIG, which is
     * reported (io, exit 3) and cleaned up, rather than kill the process
     * with SIGXFSZ and leave its temporaries behind */
    signal(SIGXFSZ, SIG_IGN);
    nf_writer *w = calloc(1, sizeof *w);
    if (!w)
        goto oom;
    w->slot = -1;
    for (int k = 0; k < WCACHE; k++)
        w->cache[k].fd = -1;
    w->n_files = plan->n_files;
    w->plan = *plan;
    w->plan.json = NULL;
    w->plan.files = calloc(plan->n_files, sizeof *w->plan.files);
    if (!w->plan.files)
        goto oom;
    for (size_t i = 0; i < plan->n_files; i++) {
        w->plan.files[i] = plan->files[i];
        w->plan.files[i].path = plan->files[i].path ? strdup(plan->files[i].path) : NULL;
        if (plan->files[i].path && !w->plan.files[i].path)
            goto oom;
    }
    if (nf_random_bytes(w->id, 16) < 0) {
        nf_diag_add(d, NF_C_IO, "", "cannot read the OS random source");
        writer_free(w);
        return NULL;
    }
    return w;
oom:
    nf_diag_add(d, NF_C_IO, "", "out of memory");
    writer_free(w);
    return NULL;
}

static void make_header(const nf_writer *w, size_t i, unsigned char *h, uint64_t json_bytes)
{
    nf_header_encode(h, i, json_bytes, w->id);
}

/* Close file i's descriptor if it is open. Returns 0 or -1 (`io`). */
static int cache_drop(nf_writer *w, size_t i, nf_diags *d)
{
    for (int k = 0; k < WCACHE; k++)
        if (w->cache[k].fd >= 0 && w->cache[k].file == i) {
            int rc = close(w->cache[k].fd);
            w->cache[k].fd = -1;
            if (rc < 0) {
                nf_diag_addf(d, NF_C_IO, w->final[i], "", "close failed: %s", strerror(errno));
                return -1;
            }
        }
    return 0;
}

static void writer_close_cache(void *w)
{
    cache_close_all(w);
}

/* The slot for a new descriptor: a free one, else the least recently used
 * (closed first). Returns the slot or -1 (`io`: a failed close). */
static int cache_slot(nf_writer *w, nf_diags *d)
{
    int best = 0;
    for (int k = 0; k < WCACHE; k++) {
        if (w->cache[k].fd < 0)
            return k;
        if (w->cache[k].used < w->cache[best].used)
            best = k;
    }
    if (cache_drop(w, w->cache[best].file, d) < 0)
        return -1;
    return best;
}

static void cache_put(nf_writer *w, int k, size_t i, int fd)
{
    w->cache[k] = (struct wfd){fd, i, ++w->tick};
}

/* The descriptor of temporary i, reopened by name when it was closed. */
static int cache_fd(nf_writer *w, size_t i, nf_diags *d)
{
    for (int k = 0; k < WCACHE; k++)
        if (w->cache[k].fd >= 0 && w->cache[k].file == i) {
            w->cache[k].used = ++w->tick;
            return w->cache[k].fd;
        }
    int k = cache_slot(w, d);
    if (k < 0)
        return -1;
    int fd = open(w->tmp[i], O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0 && (errno == EMFILE || errno == ENFILE)) {
        cache_close_all(w);
        fd = open(w->tmp[i], O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
    }
    if (fd < 0) {
        nf_diag_addf(d, NF_C_IO, w->final[i], "", "cannot reopen the temporary %s: %s%s",
                     w->tmp[i], strerror(errno),
                     errno == EMFILE ? " (raise `ulimit -n`)" : "");
        return -1;
    }
    cache_put(w, k, i, fd);
    return fd;
}

/* nf_writer_open_files, and without temporaries (temps false) the writer
 * of a set its caller writes itself (nf_writer_open_adopt). */
static nf_writer *writer_open(const char *target, const nf_plan *plan, const nf_write_opts *o,
                              const char *const *inputs, size_t n_inputs, bool temps,
                              nf_diags *d)
{
    nf_writer *w = writer_new(plan, d);
    if (!w)
        return NULL;
    w->o = *o;
    if (o->id_mode == NF_ID_GIVEN)
        memcpy(w->id, o->id, 16);
    w->target = strdup(target);
    w->dir = nf_dirname_dup(target);
    w->entry_name = strdup(nf_basename(target));
    w->tmp = calloc(w->n_files, sizeof *w->tmp);
    w->final = calloc(w->n_files, sizeof *w->final);
    w->existed = calloc(w->n_files, sizeof *w->existed);
    w->way_id = calloc(w->n_files, sizeof *w->way_id);
    w->aside = calloc(w->n_files, sizeof *w->aside);
    if (!w->target || !w->dir || !w->entry_name || !w->tmp || !w->final || !w->existed ||
        !w->way_id || !w->aside ||
        set_inputs(w, inputs, n_inputs) < 0)
        goto oom;
    if (!*w->entry_name) {
        nf_diag_addf(d, NF_C_USAGE, target, "", "the output path names a directory, not a file");
        writer_free(w);
        return NULL;
    }
    for (size_t i = 0; i < w->n_files; i++) {
        w->final[i] = i == 0 ? strdup(target) : nf_path_join(w->dir, w->plan.files[i].path);
        if (!w->final[i])
            goto oom;
    }
    /* what an interrupted --force left aside goes back first (it may be
     * the entry this writer is about to refuse to replace) */
    recover_asides(w);
    remove_stale_temps(w->dir, w->entry_name);
    /* an output that names an input, a device, a FIFO, a directory, a
     * foreign file or another entry's part is refused before anything is
     * written */
    if (check_entry(w, false, d) < 0 || check_entry_part(w, d) < 0) {
        writer_free(w);
        return NULL;
    }
    if (w->entry_existed)
        collect_old_parts(w);
    if (check_parts(w, false, d) < 0) {
        writer_free(w);
        return NULL;
    }
    /* like `install -D`: a missing output directory is made (DESIGN 1 writes
     * shards/m.ninfer straight away) */
    struct stat st;
    if (stat(w->dir, &st) < 0 && errno == ENOENT && mkdir_p(w->dir, &w->made_dir) < 0) {
        nf_diag_addf(d, NF_C_IO, target, "", "cannot create directory %s: %s", w->dir,
                     strerror(errno));
        writer_free(w);
        return NULL;
    }
    if (!temps)
        return w; /* the caller's own files: nothing here for a signal to remove */
    sigset_t old;
    block_signals(&old);
    int reg = writer_register(w);
    sigprocmask(SIG_SETMASK, &old, NULL);
    if (reg < 0) {
        nf_diag_add(d, NF_C_IO, "", "too many writers at once");
        writer_free(w);
        return NULL;
    }
    for (size_t i = 0; i < w->n_files; i++) {
        int k = cache_slot(w, d);
        if (k < 0) {
            writer_free(w);
            return NULL;
        }
        /* out of descriptors: close the other temporaries and retry */
        int fd = make_temp(w->dir, nf_basename(w->final[i]), &w->tmp[i], writer_close_cache, w);
        if (fd < 0) {
            nf_diag_addf(d, NF_C_IO, w->final[i], "", "cannot create a temporary file in %s: %s%s",
                         w->dir, strerror(-fd), fd == -EMFILE ? " (raise `ulimit -n`)" : "");
            writer_free(w);
            return NULL;
        }
        cache_put(w, k, i, fd); /* slot k is still free after a retry closed them all */
        /* the files grow as they are written (appending into a file is
         * faster than filling a sparse one made full-size first); each is
         * cut to its full length when it is finished, so gaps between
         * objects and the fill read as zeros */
    }
    return w;
oom:
    nf_diag_add(d, NF_C_IO, "", "out of memory");
    writer_free(w);
    return NULL;
}

nf_writer *nf_writer_open_files(const char *target, const nf_plan *plan,
                                const nf_write_opts *o, const char *const *inputs,
                                size_t n_inputs, nf_diags *d)
{
    return writer_open(target, plan, o, inputs, n_inputs, true, d);
}

/* Every caller's stream is standard output: its write errors read as every
 * command's ("prog: (stdout): io: write error: ...", nf_cli.h nf_diag_stdout). */
static void stream_write_error(nf_diags *d, int rc)
{
    nf_diag_addf(d, NF_C_IO, "(stdout)", "", "write error: %s", strerror(-rc));
}

nf_writer *nf_writer_open_stream(nf_output *out, const nf_plan *plan, const nf_write_opts *o,
                                 nf_diags *d)
{
    nf_writer *w = writer_new(plan, d);
    if (!w)
        return NULL;
    w->stream = true;
    w->out = out;
    /* the catalog is final here: its header can be too */
    if (o && o->id_mode == NF_ID_GIVEN)
        memcpy(w->id, o->id, 16);
    else if (o && o->id_mode == NF_ID_REPRODUCIBLE)
        nf_catalog_artifact_id(plan->json, plan->json_len, plan->json_bytes, w->id);
    unsigned char h[32];
    make_header(w, 0, h, plan->json_bytes);
    int rc = nf_output_write(out, h, 32);
    if (!rc)
        rc = nf_output_write(out, plan->json, plan->json_len);
    uint64_t pad = plan->json_bytes - plan->json_len;
    char sp[4096];
    memset(sp, ' ', sizeof sp);
    while (!rc && pad) {
        size_t k = pad > sizeof sp ? sizeof sp : (size_t)pad;
        rc = nf_output_write(out, sp, k);
        pad -= k;
    }
    unsigned char z[NF_PAGE] = {0};
    if (!rc)
        rc = nf_output_write(out, z, (size_t)(plan->entry_payload_start - 32 - plan->json_bytes));
    if (rc) {
        stream_write_error(d, rc);
        writer_free(w);
        return NULL;
    }
    return w;
}

static size_t wfile_for(const nf_writer *w, uint64_t off)
{
    size_t lo = 0, hi = w->n_files;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const nf_file *f = &w->plan.files[mid];
        if (f->logical_offset + f->payload_bytes <= off)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static int stream_pad(nf_writer *w, uint64_t to, nf_diags *d)
{
    static const unsigned char z[65536];
    while (w->spos < to) {
        size_t k = to - w->spos > sizeof z ? sizeof z : (size_t)(to - w->spos);
        int rc = nf_output_write(w->out, z, k);
        if (rc) {
            stream_write_error(d, rc);
            return -1;
        }
        w->spos += k;
    }
    return 0;
}

int nf_writer_write(nf_writer *w, uint64_t off, const void *buf, size_t n, nf_diags *d)
{
    const unsigned char *p = buf;
    if (w->stream) {
        if (off < w->spos) {
            nf_diag_add(d, NF_C_IO, "", "stream writes must be in order");
            return -1;
        }
        if (stream_pad(w, off, d) < 0)
            return -1;
        int rc = nf_output_write(w->out, p, n);
        if (rc) {
            stream_write_error(d, rc);
            return -1;
        }
        w->spos += n;
        return 0;
    }
    while (n) {
        size_t i = wfile_for(w, off);
        if (i >= w->n_files) {
            nf_diag_add(d, NF_C_IO, "", "write past the planned payload");
            return -1;
        }
        const nf_file *f = &w->plan.files[i];
        uint64_t room = f->logical_offset + f->payload_bytes - off;
        size_t k = n < room ? n : (size_t)room;
        uint64_t foff = (i == 0 ? w->plan.entry_payload_start : NF_PAGE) + (off - f->logical_offset);
        int fd = cache_fd(w, i, d);
        if (fd < 0)
            return -1;
        int rc = nf_pwrite_all(fd, p, k, foff);
        if (rc) {
            nf_diag_addf(d, NF_C_IO, w->final[i], "", "write error: %s", strerror(-rc));
            return -1;
        }
        p += k;
        n -= k;
        off += k;
    }
    return 0;
}

static int copy_fallback(int src, uint64_t soff, int dst, uint64_t doff, uint64_t n)
{
    static __thread unsigned char *buf;
    if (!buf && !(buf = malloc(1 << 20)))
        return -ENOMEM;
    while (n) {
        size_t k = n > (1u << 20) ? (1u << 20) : (size_t)n;
        ssize_t r = nf_pread_full(src, buf, k, soff);
        if (r < 0)
            return (int)r;
        if ((size_t)r != k)
            return -ENODATA;
        int rc = nf_pwrite_all(dst, buf, k, doff);
        if (rc)
            return rc;
        n -= k;
        soff += k;
        doff += k;
    }
    return 0;
}

int nf_writer_copy(nf_writer *w, uint64_t off, int src_fd, uint64_t src_off, uint64_t n,
                   nf_diags *d)
{
    if (w->stream) {
        nf_diag_add(d, NF_C_IO, "", "kernel copy needs a file target");
        return -1;
    }
    while (n) {
        size_t i = wfile_for(w, off);
        if (i >= w->n_files) {
            nf_diag_add(d, NF_C_IO, "", "copy past the planned payload");
            return -1;
        }
        const nf_file *f = &w->plan.files[i];
        uint64_t room = f->logical_offset + f->payload_bytes - off;
        uint64_t k = n < room ? n : room;
        int dfd = cache_fd(w, i, d);
        if (dfd < 0)
            return -1;
        loff_t so = (loff_t)src_off;
        loff_t doff = (loff_t)((i == 0 ? w->plan.entry_payload_start : NF_PAGE) +
                               (off - f->logical_offset));
        uint64_t left = k;
        int rc = 0;
        while (left) {
            size_t chunk = left > (1u << 30) ? (1u << 30) : (size_t)left;
            /* the kernel copies up to 25% faster into destination offsets
             * aligned to its large page-cache folios (measured on ext4,
             * Linux 6.18: 0.37 s against 0.48 s for 512 MiB at offset
             * 4096): the unaligned head goes first, the bulk aligned */
            uint64_t mis = (uint64_t)doff & ((2u << 20) - 1);
            if (mis && chunk > (2u << 20) - mis)
                chunk = (size_t)((2u << 20) - mis);
            ssize_t c = copy_file_range(src_fd, &so, dfd, &doff, chunk, 0);
            if (c < 0 && errno == EINTR)
                continue;
            if (c < 0 && (errno == EXDEV || errno == ENOSYS || errno == EINVAL ||
                          errno == EOPNOTSUPP || errno == EBADF)) {
                rc = copy_fallback(src_fd, (uint64_t)so, dfd, (uint64_t)doff, left);
                left = 0;
                break;
            }
            if (c < 0) {
                rc = -errno;
                break;
            }
            if (c == 0) {
                rc = -ENODATA;
                break;
            }
            left -= (uint64_t)c;
        }
        if (rc) {
            nf_diag_addf(d, rc == -ENODATA ? NF_C_INCOMPLETE : NF_C_IO, w->final[i], "",
                         "copy failed: %s",
                         rc == -ENODATA ? "source ended inside the declared range"
                                        : strerror(-rc));
            return -1;
        }
        src_off += k;
        off += k;
        n -= k;
    }
    return 0;
}

static void fsync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
}

/* Move tmp to final. replace: final may exist (a part proven replaceable);
 * otherwise it must not (RENAME_NOREPLACE; link+unlink where the file
 * system lacks it). Returns 0 or -errno. */
static int publish(const char *tmp, const char *final, bool replace)
{
    if (replace)
        return rename(tmp, final) < 0 ? -errno : 0;
    if (renameat2(AT_FDCWD, tmp, AT_FDCWD, final, RENAME_NOREPLACE) == 0)
        return 0;
    if (errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP)
        return -errno;
    if (link(tmp, final) == 0) {
        unlink(tmp);
        return 0;
    }
    if (errno == EEXIST)
        return -EEXIST;
    /* no hard links either (vfat): we hold the directory lock */
    struct stat st;
    if (lstat(final, &st) == 0)
        return -EEXIST;
    return rename(tmp, final) < 0 ? -errno : 0;
}

/* Lock the target's directory (DESIGN 3). Returns the descriptor to close,
 * or -1 when the file system has no locks (publication still never
 * replaces an entry it did not check). */
static int lock_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    while (flock(fd, LOCK_EX) < 0) {
        if (errno == EINTR)
            continue;
        close(fd);
        return -1;
    }
    return fd;
}

static int surplus_add(nf_writer *w, const char *path, const unsigned char id[16],
                       uint64_t index, int act)
{
    struct surplus *v = realloc(w->surplus, (w->n_surplus + 1) * sizeof *v);
    if (!v)
        return -1;
    w->surplus = v;
    char *p = strdup(path);
    if (!p)
        return -1;
    v[w->n_surplus] = (struct surplus){p, {0}, index, act, NULL};
    memcpy(v[w->n_surplus++].id, id, 16);
    return 0;
}

/* Is name one of the new set's part names? */
static bool new_part_name(const nf_writer *w, const char *name)
{
    const char *q = part_suffix(name, w->entry_name);
    if (!q)
        return false;
    /* the new set's part i is named with at least four digits: i itself */
    errno = 0;
    char *end = NULL;
    unsigned long long idx = strtoull(q, &end, 10);
    return !errno && idx >= 1 && idx < w->n_files && strcmp(w->plan.files[idx].path, name) == 0;
}

/* Decide, under the directory lock and before anything moves, what goes
 * once the new set is published (DESIGN 3): the replaced set's parts beyond
 * the new set that prove to be its own (part magic, the old artifact_id,
 * the part_index its files table gives them) at this entry's own part
 * names ("<entry>.part-N": a part the old entry names under another name is
 * another entry's too, a copy's or a renamed one's: red-team B3), unless
 * another entry beside them shares that artifact_id; and, when there was
 * no entry, leftovers at our part names beyond the new set: part magic, and
 * no entry beside them owns them. The candidates' ids join o, which is
 * scanned here. Returns 0 or -1 with a diagnostic. */
static int plan_surplus(nf_writer *w, struct owners *o, nf_diags *d)
{
    for (size_t j = 0; w->have_old && j < w->n_old_parts; j++) {
        const char *p = w->old_parts[j];
        /* one of the new set's names: parsed, not looked for among them */
        bool in_set = new_part_name(w, nf_basename(p));
        if (in_set || !proven_part(w, p, w->old_index[j], w->old_id))
            continue;
        bool own_name = part_suffix(nf_basename(p), w->entry_name) != NULL;
        if (surplus_add(w, p, w->old_id, w->old_index[j],
                        own_name ? SP_REMOVE : SP_KEEP_FOREIGN_NAME) < 0 ||
            (own_name && owners_want(o, w->old_id) < 0))
            goto oom;
    }
    if (!w->entry_existed) {
        DIR *dp = opendir(w->dir);
        struct dirent *de;
        while (dp && (de = readdir(dp)) != NULL) {
            const char *n = de->d_name;
            if (!part_suffix(n, w->entry_name) || new_part_name(w, n))
                continue;
            char *full = nf_path_join(w->dir, n);
            struct stat st;
            unsigned char h[32];
            int bad = 0;
            if (full && lstat(full, &st) == 0 && S_ISREG(st.st_mode) && !is_input(w, &st) &&
                read_header(full, &st, h) == 0 && memcmp(h, NF_PART_MAGIC, 8) == 0 &&
                memcmp(h + 16, w->id, 16) != 0)
                bad = surplus_add(w, full, h + 16, nf_load_le64(h + 8), SP_REMOVE_LEFTOVER) < 0 ||
                      owners_want(o, h + 16) < 0;
            free(full);
            if (bad) {
                closedir(dp);
                goto oom;
            }
        }
        if (dp)
            closedir(dp);
    }
    if (owners_scan(w, o, NULL, d) < 0)
        return -1;
    for (size_t k = 0; k < w->n_surplus; k++) {
        struct surplus *s = &w->surplus[k];
        if (s->act != SP_REMOVE && s->act != SP_REMOVE_LEFTOVER)
            continue;
        const char *own = owner_of(o, s->id);
        if (!own && !o->unreadable)
            continue;
        /* an owned leftover-looking part is simply another artifact's */
        s->act = own && s->act == SP_REMOVE_LEFTOVER ? -1 : own ? SP_KEEP_SHARED : SP_KEEP_UNSURE;
        if (own ? !(s->other = strdup(own))
                : asprintf(&s->other, "%s beside it %s", o->unreadable, o->why) < 0) {
            s->other = NULL;
            goto oom;
        }
    }
    return 0;
oom:
    nf_diag_add(d, NF_C_IO, "", "out of memory");
    return -1;
}

/* After publication: remove (or keep, with a warning) what plan_surplus
 * decided, each file checked again just before it goes. */
static void remove_surplus(nf_writer *w)
{
    for (size_t k = 0; k < w->n_surplus; k++) {
        const struct surplus *s = &w->surplus[k];
        char msg[PATH_MAX + 160];
        switch (s->act) {
        case SP_REMOVE:
        case SP_REMOVE_LEFTOVER:
            if (!proven_part(w, s->path, s->index, s->id))
                break;
            if (s->act == SP_REMOVE_LEFTOVER)
                warn(w, s->path, "removing a leftover part with no entry");
            unlink(s->path);
            break;
        case SP_KEEP_FOREIGN_NAME:
            warn(w, s->path, "kept: a part of the replaced entry, but not named after it "
                             "(another entry may use it)");
            break;
        case SP_KEEP_SHARED:
            snprintf(msg, sizeof msg, "kept: a part of the replaced entry that the entry %s "
                                      "beside it also uses", s->other);
            warn(w, s->path, msg);
            break;
        case SP_KEEP_UNSURE:
            snprintf(msg, sizeof msg, "kept: cannot tell whether an entry owns this part (%s)",
                     s->other);
            warn(w, s->path, msg);
            break;
        default:
            break;
        }
    }
}

/* recover_asides, when the dead writer had published: the parts of the
 * old set (its entry moved aside as the file name, path from) that it had
 * still to remove: those at this entry's own part names that prove to be
 * the old set's, when no other entry beside them shares its artifact_id. */
static void recover_remove_set(nf_writer *w, const char *name, const char *from)
{
    nf_diags tmp = NF_DIAGS_INIT;
    nf_open_opts oo = {0};
    nf_artifact *a = nf_artifact_open(from, &oo, &tmp);
    struct owners o = {0};
    if (!a || owners_want(&o, nf_artifact_header(a)->artifact_id) < 0 ||
        owners_scan(w, &o, name, &tmp) < 0 || o.name[0] || o.unreadable) {
        owners_free(&o);
        nf_diags_free(&tmp);
        nf_artifact_close(a);
        return;
    }
    const nf_catalog *c = nf_artifact_catalog(a);
    for (size_t i = 1; i < c->n_files; i++) {
        const char *p = c->files[i].path;
        if (!p || !part_suffix(p, w->entry_name))
            continue;
        char *full = nf_path_join(w->dir, p);
        if (full && proven_part(w, full, i, nf_artifact_header(a)->artifact_id)) {
            unlink(full);
            char msg[160];
            snprintf(msg, sizeof msg,
                     "removed: a part of the set that an interrupted --force replaced");
            warn(w, full, msg);
        }
        free(full);
    }
    owners_free(&o);
    nf_diags_free(&tmp);
    nf_artifact_close(a);
}

/* What a writer of this target killed inside its publication (SIGKILL, a
 * crash: nothing else can interrupt it) left moved aside. Under the
 * directory lock, for each dead process: when the target has no entry, its
 * publication never finished, so the old entry and the parts it moved go
 * back to their names (a part there now is one the dead writer published:
 * no entry owns it); when the target has one, it finished, and what it
 * moved aside goes. Each with a warning. */
static void recover_asides(nf_writer *w)
{
    DIR *dp = opendir(w->dir);
    if (!dp)
        return;
    struct dirent *de;
    bool any = false;
    char base[NAME_MAX + 1];
    while (!any && (de = readdir(dp)) != NULL) {
        long pid = aside_pid(de->d_name, w->entry_name, base);
        /* our own pid: no publication of ours is under way at open */
        any = pid && (pid == (long)getpid() || (kill((pid_t)pid, 0) < 0 && errno == ESRCH));
    }
    if (!any) {
        closedir(dp);
        return;
    }
    int lock = lock_dir(w->dir);
    sigset_t old;
    block_signals(&old);
    int dfd = dirfd(dp);
    /* two rounds: the parts (and, when the target has an entry, the old
     * entries), then the old entries that go back */
    struct stat st;
    bool target = fstatat(AT_FDCWD, w->target, &st, AT_SYMLINK_NOFOLLOW) == 0;
    for (int round = 0; round < 2; round++) {
        rewinddir(dp);
        while ((de = readdir(dp)) != NULL) {
            const char *n = de->d_name;
            long pid = aside_pid(n, w->entry_name, base);
            if (!pid || (pid != (long)getpid() && (kill((pid_t)pid, 0) == 0 || errno != ESRCH)))
                continue;
            bool entry = strcmp(base, w->entry_name) == 0;
            if (!(round == 0 ? !entry || target : entry && !target))
                continue;
            char *from = nf_path_join(w->dir, n), *to = nf_path_join(w->dir, base);
            char msg[160];
            if (!from || !to || !has_magic(dfd, n, entry ? NF_ENTRY_MAGIC : NF_PART_MAGIC, entry)) {
                free(from);
                free(to);
                continue;
            }
            if (target) {
                if (entry)
                    recover_remove_set(w, n, from);
                unlink(from);
                snprintf(msg, sizeof msg,
                         "removed: %s that an interrupted --force (process %ld) replaced",
                         entry ? "the old entry" : "a part", pid);
                warn(w, from, msg);
            } else {
                struct stat ts;
                bool there = lstat(to, &ts) == 0;
                /* a part the dead writer published is replaced; anything
                 * else that appeared at the name since is left alone */
                if (!there || (!entry && S_ISREG(ts.st_mode) &&
                               has_magic(dfd, base, NF_PART_MAGIC, false))) {
                    if ((entry ? publish(from, to, false) : (rename(from, to) < 0 ? -errno : 0)) ==
                        0) {
                        snprintf(msg, sizeof msg,
                                 "put back: an interrupted --force (process %ld) had moved it "
                                 "aside", pid);
                        warn(w, to, msg);
                    }
                }
            }
            free(from);
            free(to);
        }
    }
    closedir(dp);
    sigprocmask(SIG_SETMASK, &old, NULL);
    if (lock >= 0)
        close(lock);
}

/* ---- moving aside (--force, leftovers) ----
 *
 * Under the directory lock, what publication replaces first moves to
 * ".<name>.old-<pid>" beside it: the old entry, then whatever is in the way
 * of each new part. After the new set is published these go; on a failure
 * they are put back. Only SIGKILL or a crash can leave them behind: the
 * next writer of the same target puts them back (when no entry was
 * published) or removes them (when one was): recover_asides. */

/* ".<base>.old-<pid>" for path (in w->dir). */
static char *aside_path(const nf_writer *w, const char *path)
{
    char *t = NULL;
    if (asprintf(&t, "%s/.%s.old-%ld", w->dir, nf_basename(path), (long)getpid()) < 0)
        return NULL;
    return t;
}

/* Move path (file i's final name, or the entry for i = 0) aside. Returns 0
 * or -1 with `io`. */
static int move_aside(nf_writer *w, size_t i, const char *path, nf_diags *d)
{
    char *a = aside_path(w, path);
    int e = a ? publish(path, a, false) : -ENOMEM;
    if (e) {
        nf_diag_addf(d, NF_C_IO, path, "", "cannot move the file being replaced aside: %s",
                     e == -EEXIST ? "its temporary name is taken" : strerror(-e));
        free(a);
        return -1;
    }
    w->aside[i] = a;
    return 0;
}

/* After a failed publication: every file moved aside goes back to its name
 * (the new parts there were removed first). */
static void put_back(nf_writer *w, nf_diags *d)
{
    for (size_t k = w->n_files; k-- > 0;) {
        if (!w->aside[k])
            continue;
        const char *to = k == 0 ? w->target : w->final[k];
        if (rename(w->aside[k], to) < 0)
            nf_diag_addf(d, NF_C_IO, to, "", "cannot put the replaced file back (it is %s): %s",
                         w->aside[k], strerror(errno));
        free(w->aside[k]);
        w->aside[k] = NULL;
    }
}

/* nf_writer_finish; filled, when not NULL, is the entry's first 32 +
 * json_bytes bytes with the catalog and its spaces already in place from
 * byte 32 (the writer takes it: no copy of the catalog text). */
static int writer_finish(nf_writer *w, const char *json, size_t len, unsigned char *filled,
                         nf_diags *d);

int nf_writer_finish(nf_writer *w, const char *json, size_t len, nf_diags *d)
{
    return writer_finish(w, json, len, NULL, d);
}

/* Publish the finished files w->tmp[] (DESIGN 3): serialized by the
 * directory lock, signals held back until the set is whole; on failure the
 * parts already published are unlinked, or moved back to back[i] when the
 * files are the caller's (nf_writer_publish_adopted), and what was moved
 * aside is put back. Returns 0 or -1; w is the caller's to free. */
static int publish_set(nf_writer *w, char *const *back, nf_diags *d)
{
    /* publication: serialized by the directory lock, signals held back
     * until the set is whole (DESIGN 3) */
    int lock = lock_dir(w->dir);
    sigset_t old;
    block_signals(&old);
    int rc = check_entry(w, true, d);
    if (!rc)
        rc = check_entry_part(w, d);
    if (!rc)
        rc = check_parts(w, true, d);
    /* with --force the old entry moves aside first (no moment shows an old
     * entry beside new parts), then what is in the way of each new part;
     * a failure puts everything back */
    if (!rc && w->entry_existed)
        rc = move_aside(w, 0, w->target, d);
    size_t done = 0; /* parts published */
    for (size_t i = 1; !rc && i < w->n_files; i++) {
        if (w->existed[i] && move_aside(w, i, w->final[i], d) < 0) {
            rc = -1;
            break;
        }
        int e = publish(w->tmp[i], w->final[i], false);
        if (e) {
            nf_diag_addf(d, NF_C_IO, w->final[i], "", "cannot publish: %s",
                         e == -EEXIST ? "another file appeared at this part's name"
                                      : strerror(-e));
            rc = -1;
            break;
        }
        free(w->tmp[i]);
        w->tmp[i] = NULL;
        done = i;
    }
    if (!rc) {
        int e = publish(w->tmp[0], w->target, false);
        if (e) {
            nf_diag_addf(d, NF_C_IO, w->target, "", "cannot publish: %s",
                         e == -EEXIST ? "another writer published this output meanwhile"
                                      : strerror(-e));
            rc = -1;
        } else {
            free(w->tmp[0]);
            w->tmp[0] = NULL;
        }
    }
    if (rc) {
        /* un-publish the parts already moved, put back what was moved
         * aside: nothing half written stays, the old set is as it was */
        for (size_t i = 1; i <= done; i++)
            if (back)
                rename(w->final[i], back[i]); /* the caller's file, back where it was */
            else
                unlink(w->final[i]);
        put_back(w, d);
    } else {
        if (w->o.sync)
            fsync_dir(w->dir);
        /* the new set is in place: the surplus goes, then what was in the
         * way of the new parts, the old entry last (while it is there, a
         * writer killed meanwhile left a record of what was still to go:
         * recover_asides) */
        remove_surplus(w);
        for (size_t i = w->n_files; i-- > 0;)
            if (w->aside[i]) {
                if (i > 0 && !way_is_old(w, i))
                    warn(w, w->final[i], "replacing a leftover part with no entry");
                unlink(w->aside[i]);
            }
        w->published = true;
    }
    sigprocmask(SIG_SETMASK, &old, NULL);
    if (lock >= 0)
        close(lock);
    return rc;
}

static int writer_finish(nf_writer *w, const char *json, size_t len, unsigned char *filled,
                         nf_diags *d)
{
    int rc = 0;
    if (w->stream) {
        if (stream_pad(w, w->plan.files[0].payload_bytes, d) < 0 ||
            (rc = nf_output_finish(w->out)) != 0) {
            if (rc)
                stream_write_error(d, rc);
            writer_free(w);
            return -1;
        }
        writer_free(w);
        return 0;
    }
    if (len > w->plan.json_bytes) {
        nf_diag_add(d, NF_C_IO, "", "catalog grew past its reservation (%zu > %llu)", len,
                    (unsigned long long)w->plan.json_bytes);
        free(filled);
        writer_free(w);
        return -1;
    }
    /* header + catalog + trailing spaces; fill stays zero from ftruncate */
    size_t hl = (size_t)(32 + w->plan.json_bytes);
    unsigned char *head = filled ? filled : malloc(hl);
    if (!head) {
        nf_diag_add(d, NF_C_IO, "", "out of memory");
        writer_free(w);
        return -1;
    }
    if (!filled) {
        memcpy(head + 32, json, len);
        memset(head + 32 + len, ' ', hl - 32 - len);
    }
    /* the catalog is final: a reproducible id is its digest (the parts'
     * headers below carry it too) */
    if (w->o.id_mode == NF_ID_REPRODUCIBLE)
        nf_catalog_artifact_id((const char *)head + 32, len, w->plan.json_bytes, w->id);
    make_header(w, 0, head, w->plan.json_bytes);
    for (size_t i = 0; i < w->n_files; i++) {
        int fd = cache_fd(w, i, d);
        if (fd < 0) {
            free(head);
            writer_free(w);
            return -1;
        }
        unsigned char h[32];
        make_header(w, i, h, 0);
        uint64_t size = (i == 0 ? w->plan.entry_payload_start : NF_PAGE) +
                        w->plan.files[i].payload_bytes;
        if (ftruncate(fd, (off_t)size) < 0) {
            nf_diag_addf(d, NF_C_IO, w->final[i], "", "cannot size the output: %s",
                         strerror(errno));
            free(head);
            writer_free(w);
            return -1;
        }
        rc = i == 0 ? nf_pwrite_all(fd, head, hl, 0) : nf_pwrite_all(fd, h, 32, 0);
        if (rc) {
            nf_diag_addf(d, NF_C_IO, w->final[i], "", "write error: %s", strerror(-rc));
            free(head);
            writer_free(w);
            return -1;
        }
        if (w->o.sync && fdatasync(fd) < 0) {
            nf_diag_addf(d, NF_C_IO, w->final[i], "", "sync failed: %s", strerror(errno));
            free(head);
            writer_free(w);
            return -1;
        }
        if (cache_drop(w, i, d) < 0) {
            free(head);
            writer_free(w);
            return -1;
        }
    }
    free(head);
    rc = publish_set(w, NULL, d);
    writer_free(w);
    return rc;
}

int nf_writer_finish_catalog(nf_writer *w, const nf_catalog *c, bool digests, nf_diags *d)
{
    if (w->stream)
        return writer_finish(w, NULL, 0, NULL, d);
    nf_serialize_opts so = {0};
    so.files = w->plan.files;
    so.n_files = w->plan.n_files;
    so.digests = digests;
    /* serialized straight into the entry's first bytes (DESIGN 14: the
     * catalog text once in memory, not twice) */
    size_t hl = (size_t)(32 + w->plan.json_bytes);
    unsigned char *head = malloc(hl);
    size_t len = head ? nf_catalog_serialize_to(c, &so, (char *)head + 32, hl - 32) : SIZE_MAX;
    if (len == SIZE_MAX) {
        size_t need = head ? nf_catalog_serialized_len(c, &so) : SIZE_MAX;
        if (need != SIZE_MAX)
            nf_diag_add(d, NF_C_IO, "", "catalog grew past its reservation (%zu > %llu)", need,
                        (unsigned long long)w->plan.json_bytes);
        else
            nf_diag_add(d, NF_C_IO, "", "out of memory serializing the catalog");
        free(head);
        writer_free(w);
        return -1;
    }
    memset(head + 32 + len, ' ', hl - 32 - len);
    return writer_finish(w, NULL, len, head, d);
}

/* ---- single-file outputs ---- */

enum { OUT_CREATE, OUT_REPLACE, OUT_THROUGH, OUT_STDOUT };

/* Decide how path is written (see nf_writer.h). *real gets the path to
 * create or replace (a symlink resolved). Returns 0 or -1. */
static int single_plan(const char *path, bool force, const char *const *inputs, size_t n_inputs,
                       int *how, char **real, nf_diags *d)
{
    struct stat ls, st;
    *real = NULL;
    if (!*path || path[strlen(path) - 1] == '/') {
        nf_diag_addf(d, NF_C_USAGE, path, "", "the output path names a directory, not a file");
        return -1;
    }
    if (lstat(path, &ls) < 0) {
        if (errno != ENOENT) {
            nf_diag_addf(d, NF_C_IO, path, "", "cannot check the output: %s", strerror(errno));
            return -1;
        }
        *how = OUT_CREATE;
        *real = strdup(path);
        goto done;
    }
    if (stat(path, &st) < 0) {
        /* a symlink to nothing: the link itself is the file in the way */
        if (!force) {
            nf_diag_addf(d, NF_C_IO, path, "", "output exists (a dangling symlink); use --force "
                                               "to replace it");
            return -1;
        }
        *how = OUT_REPLACE;
        *real = strdup(path);
        goto done;
    }
    for (size_t k = 0; k < n_inputs; k++) {
        struct stat si;
        if (inputs[k] && stat_input(inputs[k], &si) == 0 && si.st_dev == st.st_dev &&
            si.st_ino == st.st_ino) {
            nf_diag_addf(d, NF_C_USAGE, path, "",
                         "output names an input file (%s); refusing to write",
                         strcmp(inputs[k], "-") ? inputs[k] : "standard input");
            return -1;
        }
    }
    if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)) {
        *how = OUT_THROUGH;
        return 0;
    }
    if (!S_ISREG(st.st_mode)) {
        nf_diag_addf(d, NF_C_USAGE, path, "", "output is %s; refusing to write to it",
                     kind_name(st.st_mode));
        return -1;
    }
    struct stat so;
    if (fstat(1, &so) == 0 && S_ISREG(so.st_mode) && so.st_dev == st.st_dev &&
        so.st_ino == st.st_ino) {
        *how = OUT_STDOUT; /* -o /dev/stdout > file: the shell opened it for us */
        return 0;
    }
    if (!force) {
        nf_diag_addf(d, NF_C_IO, path, "", "output exists; use --force to replace it");
        return -1;
    }
    *how = OUT_REPLACE;
    *real = realpath(path, NULL);
done:
    if (!*real) {
        nf_diag_addf(d, NF_C_IO, path, "", "cannot resolve the output path: %s", strerror(errno));
        return -1;
    }
    return 0;
}

int nf_stdout_check(const char *const *inputs, size_t n_inputs, nf_diags *d)
{
    struct stat so;
    if (fstat(1, &so) < 0 || !S_ISREG(so.st_mode))
        return 0;
    for (size_t k = 0; k < n_inputs; k++) {
        struct stat si;
        if (inputs[k] && stat_input(inputs[k], &si) == 0 && si.st_dev == so.st_dev &&
            si.st_ino == so.st_ino) {
            nf_diag_addf(d, NF_C_USAGE, "(stdout)", "",
                         "standard output names an input file (%s); refusing to write",
                         strcmp(inputs[k], "-") ? inputs[k] : "standard input");
            return -1;
        }
    }
    return 0;
}

int nf_output_file_check(const char *path, bool force, const char *const *inputs,
                         size_t n_inputs, nf_diags *d)
{
    int how;
    char *real = NULL;
    int rc = single_plan(path, force, inputs, n_inputs, &how, &real, d);
    free(real);
    return rc;
}

/* A free slot of g_single_tmp, or NULL. */
static char *volatile *single_slot(void)
{
    for (int k = 0; k < MAX_SINGLE; k++)
        if (!g_single_tmp[k])
            return &g_single_tmp[k];
    return NULL;
}

struct nf_file_out {
    char *path;           /* as given, for messages */
    char *real, *dir, *made;
    char *volatile *slot; /* the temporary (NULL: written through) */
    int how, fd;
};

static void file_out_free(nf_file_out *f, bool remove)
{
    if (!f)
        return;
    if (f->fd > 1)
        close(f->fd);
    if (f->slot) {
        sigset_t old;
        block_signals(&old);
        char *t = *f->slot;
        if (remove && t)
            unlink(t);
        *f->slot = NULL;
        sigprocmask(SIG_SETMASK, &old, NULL);
        free(t);
    }
    if (remove && f->dir)
        remove_made(f->dir, f->made); /* nothing of ours left: not even the directories */
    else
        free(f->made);
    free(f->dir);
    free(f->real);
    free(f->path);
    free(f);
}

nf_file_out *nf_file_out_open(const char *path, bool force, const char *const *inputs,
                              size_t n_inputs, nf_diags *d)
{
    nf_file_out *f = calloc(1, sizeof *f);
    if (!f || !(f->path = strdup(path ? path : NF_STDOUT_PATH))) {
        free(f);
        nf_diag_add(d, NF_C_IO, "", "out of memory");
        return NULL;
    }
    f->fd = -1;
    signal(SIGXFSZ, SIG_IGN);
    if (!path) {
        if (nf_stdout_check(inputs, n_inputs, d) < 0) {
            file_out_free(f, false);
            return NULL;
        }
        f->how = OUT_STDOUT;
        f->fd = 1;
        return f;
    }
    if (single_plan(path, force, inputs, n_inputs, &f->how, &f->real, d) < 0) {
        file_out_free(f, false);
        return NULL;
    }
    if (f->how == OUT_STDOUT || f->how == OUT_THROUGH) {
        f->fd = f->how == OUT_STDOUT ? 1 : open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
        if (f->fd < 0) {
            nf_diag_addf(d, NF_C_IO, path, "", "cannot open: %s", strerror(errno));
            file_out_free(f, false);
            return NULL;
        }
        return f;
    }
    struct stat st;
    f->dir = nf_dirname_dup(f->real);
    if (!f->dir || !(f->slot = single_slot())) {
        nf_diag_addf(d, NF_C_IO, path, "", "out of memory (or too many outputs at once)");
        f->slot = NULL;
        file_out_free(f, false);
        return NULL;
    }
    if (stat(f->dir, &st) < 0 && errno == ENOENT && mkdir_p(f->dir, &f->made) < 0) {
        nf_diag_addf(d, NF_C_IO, path, "", "cannot create directory %s: %s", f->dir,
                     strerror(errno));
        f->slot = NULL;
        file_out_free(f, true);
        return NULL;
    }
    install_handlers();
    f->fd = make_temp(f->dir, nf_basename(f->real), f->slot, NULL, NULL);
    if (f->fd < 0) {
        nf_diag_addf(d, NF_C_IO, path, "", "cannot write: %s", strerror(-f->fd));
        f->slot = NULL;
        file_out_free(f, true);
        return NULL;
    }
    return f;
}

int nf_file_out_fd(const nf_file_out *f) { return f->fd; }

bool nf_file_out_regular(const nf_file_out *f) { return f->slot != NULL; }

const char *nf_file_out_name(const nf_file_out *f) { return f->path; }

int nf_file_out_finish(nf_file_out *f, bool sync, nf_diags *d)
{
    if (!f)
        return -1;
    int rc = 0;
    if (f->slot) {
        if (sync && fdatasync(f->fd) < 0)
            rc = -errno;
        if (close(f->fd) < 0 && !rc)
            rc = -errno;
        f->fd = -1;
        if (!rc)
            rc = publish(*f->slot, f->real, f->how == OUT_REPLACE);
        if (!rc && sync)
            fsync_dir(f->dir);
    } else if (f->fd > 1) {
        if (close(f->fd) < 0)
            rc = -errno;
        f->fd = -1;
    }
    if (rc)
        nf_diag_addf(d, NF_C_IO, f->path, "", "cannot write: %s",
                     rc == -EEXIST ? "a file appeared at this path meanwhile" : strerror(-rc));
    file_out_free(f, rc != 0);
    return rc ? -1 : 0;
}

void nf_file_out_abort(nf_file_out *f) { file_out_free(f, true); }

int nf_write_file(const char *path, const void *buf, size_t n, bool force,
                  const char *const *inputs, size_t n_inputs, nf_diags *d)
{
    nf_file_out *f = nf_file_out_open(path, force, inputs, n_inputs, d);
    if (!f)
        return -1;
    int rc = nf_write_all(f->fd, buf, n);
    if (rc) {
        nf_diag_addf(d, NF_C_IO, path, "", "cannot write: %s", strerror(-rc));
        nf_file_out_abort(f);
        return -1;
    }
    return nf_file_out_finish(f, false, d);
}

/* ---- directory outputs ---- */

bool nf_safe_file_name(const char *s, size_t len)
{
    return len > 0 && memchr(s, '/', len) == NULL && memchr(s, '\0', len) == NULL &&
           !(len == 1 && s[0] == '.') && !(len == 2 && s[0] == '.' && s[1] == '.');
}

struct nf_dir_out {
    char *path, *target, *parent, *made;
    char *tmp;            /* the temporary directory (g_dir_tmp) */
    bool existed;         /* the target was a directory at open */
    bool force;
    dev_t dev;
    ino_t ino;
};

/* Remove the tree at dirfd/name without following symlinks (a replaced
 * directory output). */
static void remove_tree_at(int dirfd, const char *name, unsigned depth)
{
    int fd = depth < 64 ? openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                        : -1;
    DIR *dp = fd >= 0 ? fdopendir(fd) : NULL;
    if (dp) {
        struct dirent *de;
        while ((de = readdir(dp)) != NULL) {
            if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
                continue;
            struct stat st;
            if (fstatat(fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode))
                remove_tree_at(fd, de->d_name, depth + 1);
            else
                unlinkat(fd, de->d_name, 0);
        }
        closedir(dp);
    } else if (fd >= 0) {
        close(fd);
    }
    unlinkat(dirfd, name, AT_REMOVEDIR);
}

static void dir_out_free(nf_dir_out *o, bool remove)
{
    if (!o)
        return;
    sigset_t old;
    block_signals(&old);
    char **files = g_dir_files;
    size_t n = g_dir_n;
    g_dir_files = NULL;
    g_dir_n = 0;
    char *tmp = g_dir_tmp;
    g_dir_tmp = NULL;
    sigprocmask(SIG_SETMASK, &old, NULL);
    for (size_t i = 0; i < n; i++) {
        if (remove)
            unlink(files[i]);
        free(files[i]);
    }
    free(files);
    if (remove && tmp)
        rmdir(tmp);
    free(tmp);
    if (remove && o->parent)
        remove_made(o->parent, o->made);
    else
        free(o->made);
    free(o->parent);
    free(o->target);
    free(o->path);
    free(o);
}

/* Is a directory entry in dir other than "." and ".."? (-1: cannot read.) */
static int dir_has_entries(const char *dir)
{
    DIR *dp = opendir(dir);
    if (!dp)
        return -1;
    struct dirent *de;
    int has = 0;
    while (!has && (de = readdir(dp)) != NULL)
        has = strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
    closedir(dp);
    return has;
}

/* The target as it is now: 0 absent, 1 an empty directory, 2 a directory
 * with entries (needs force); -1 refused (a diagnostic). */
static int dir_target_state(const nf_dir_out *o, nf_diags *d)
{
    struct stat ls;
    if (lstat(o->target, &ls) < 0) {
        if (errno == ENOENT)
            return 0;
        nf_diag_addf(d, NF_C_IO, o->path, "", "cannot check the output: %s", strerror(errno));
        return -1;
    }
    if (!S_ISDIR(ls.st_mode)) {
        nf_diag_addf(d, NF_C_USAGE, o->path, "", "output is %s, not a directory; refusing to "
                     "write to it", S_ISREG(ls.st_mode) ? "a regular file" : kind_name(ls.st_mode));
        return -1;
    }
    int has = dir_has_entries(o->target);
    if (has < 0) {
        nf_diag_addf(d, NF_C_IO, o->path, "", "cannot read the output directory: %s",
                     strerror(errno));
        return -1;
    }
    if (has && !o->force) {
        nf_diag_addf(d, NF_C_IO, o->path, "", "output directory exists and is not empty; use "
                    "--force to replace it");
        return -1;
    }
    return has ? 2 : 1;
}

nf_dir_out *nf_dir_out_open(const char *dir, bool force, const char *const *inputs,
                            size_t n_inputs, nf_diags *d)
{
    nf_dir_out *o = calloc(1, sizeof *o);
    if (!o || !(o->path = strdup(dir)) || !(o->target = strdup(dir))) {
        if (o)
            free(o->path);
        free(o);
        nf_diag_add(d, NF_C_IO, "", "out of memory");
        return NULL;
    }
    o->force = force;
    size_t l = strlen(o->target);
    while (l > 1 && o->target[l - 1] == '/')
        o->target[--l] = 0;
    const char *base = nf_basename(o->target);
    if (!*dir || !strcmp(base, ".") || !strcmp(base, "..") || !strcmp(o->target, "/")) {
        nf_diag_addf(d, NF_C_USAGE, dir, "", "give the output directory by a name (not '.', "
                    "'..' or '/'): it is built beside and renamed into place");
        dir_out_free(o, false);
        return NULL;
    }
    if (g_dir_tmp) {
        nf_diag_addf(d, NF_C_IO, dir, "", "one directory output at a time");
        dir_out_free(o, false);
        return NULL;
    }
    int state = dir_target_state(o, d);
    if (state < 0) {
        dir_out_free(o, false);
        return NULL;
    }
    /* an input inside the directory a --force would replace, or the
     * directory itself as an input */
    char *rt = state ? realpath(o->target, NULL) : NULL;
    for (size_t k = 0; rt && k < n_inputs; k++) {
        char *ri = inputs[k] && strcmp(inputs[k], "-") ? realpath(inputs[k], NULL) : NULL;
        size_t rl = strlen(rt);
        if (ri && strncmp(ri, rt, rl) == 0 && (ri[rl] == '/' || ri[rl] == 0)) {
            nf_diag_addf(d, NF_C_USAGE, dir, "", "output directory holds an input file (%s); "
                         "refusing to write", inputs[k]);
            free(ri);
            free(rt);
            dir_out_free(o, false);
            return NULL;
        }
        free(ri);
    }
    free(rt);
    o->existed = state > 0;
    o->parent = nf_dirname_dup(o->target);
    struct stat st;
    if (!o->parent || (stat(o->parent, &st) < 0 && errno == ENOENT &&
                       mkdir_p(o->parent, &o->made) < 0)) {
        nf_diag_addf(d, NF_C_IO, dir, "", "cannot create directory %s: %s",
                     o->parent ? o->parent : dir, strerror(errno));
        dir_out_free(o, true);
        return NULL;
    }
    char *t = NULL;
    if (asprintf(&t, "%s/.%s.tmp-%ld-XXXXXX", o->parent, nf_basename(o->target),
                 (long)getpid()) < 0) {
        nf_diag_addf(d, NF_C_IO, dir, "", "out of memory");
        dir_out_free(o, true);
        return NULL;
    }
    install_handlers();
    sigset_t old;
    block_signals(&old);
    bool made = mkdtemp(t) != NULL;
    int e = errno;
    if (made)
        g_dir_tmp = t;
    sigprocmask(SIG_SETMASK, &old, NULL);
    if (!made) {
        nf_diag_addf(d, NF_C_IO, dir, "", "cannot make a temporary directory beside it: %s",
                     strerror(e));
        free(t);
        dir_out_free(o, true);
        return NULL;
    }
    mode_t um = umask(0);
    umask(um);
    chmod(t, 0777 & ~um); /* as mkdir(1) would make it */
    return o;
}

int nf_dir_out_create(nf_dir_out *o, const char *name, nf_diags *d)
{
    if (!nf_safe_file_name(name, strlen(name))) {
        nf_diag_addf(d, NF_C_SCHEMA, o->path, "", "\"%s\" is not a safe file name (a '/', '.' "
                     "or '..')", name);
        return -1;
    }
    char *p = nf_path_join(g_dir_tmp, name);
    char **v = p ? realloc(g_dir_files, (g_dir_n + 1) * sizeof *v) : NULL;
    if (!v) {
        free(p);
        nf_diag_addf(d, NF_C_IO, o->path, "", "out of memory");
        return -1;
    }
    mode_t um = umask(0);
    umask(um);
    sigset_t old;
    block_signals(&old);
    g_dir_files = v;
    int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0666 & ~um);
    int e = errno;
    if (fd >= 0)
        g_dir_files[g_dir_n++] = p;
    sigprocmask(SIG_SETMASK, &old, NULL);
    if (fd < 0) {
        nf_diag_addf(d, NF_C_IO, o->path, "", "cannot create %s: %s", name,
                     e == EEXIST ? "the name is taken twice" : strerror(e));
        free(p);
        return -1;
    }
    return fd;
}

int nf_dir_out_finish(nf_dir_out *o, bool sync, nf_diags *d)
{
    int rc = 0;
    if (sync) {
        for (size_t i = 0; i < g_dir_n; i++) {
            int fd = open(g_dir_files[i], O_RDONLY | O_CLOEXEC);
            if (fd >= 0) {
                fsync(fd);
                close(fd);
            }
        }
        fsync_dir(g_dir_tmp);
    }
    int lk = lock_dir(o->parent);
    sigset_t old;
    block_signals(&old);
    nf_diags chk = NF_DIAGS_INIT;
    int state = dir_target_state(o, &chk);
    bool refused = state < 0;
    if (refused) {
        nf_diags_move(d, &chk);
        rc = -EEXIST;
    } else if (state == 0) {
        if (renameat2(AT_FDCWD, g_dir_tmp, AT_FDCWD, o->target, RENAME_NOREPLACE) < 0)
            rc = -errno;
    } else if (state == 1) {
        /* over an empty directory: rename(2) replaces it, and fails if it
         * is not empty any more */
        if (rename(g_dir_tmp, o->target) < 0)
            rc = -errno;
    } else {
        /* --force over a directory with entries: swap, then remove the old */
        if (renameat2(AT_FDCWD, g_dir_tmp, AT_FDCWD, o->target, RENAME_EXCHANGE) < 0) {
            rc = -errno;
        } else {
            int pfd = open(o->parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            if (pfd >= 0) {
                remove_tree_at(pfd, nf_basename(g_dir_tmp), 0);
                close(pfd);
            }
        }
    }
    nf_diags_free(&chk);
    if (!rc) {
        /* published: nothing of it is a temporary any more */
        for (size_t i = 0; i < g_dir_n; i++)
            free(g_dir_files[i]);
        free(g_dir_files);
        g_dir_files = NULL;
        g_dir_n = 0;
        free(g_dir_tmp);
        g_dir_tmp = NULL;
    }
    sigprocmask(SIG_SETMASK, &old, NULL);
    if (lk >= 0)
        close(lk);
    if (rc && !refused)
        nf_diag_addf(d, NF_C_IO, o->path, "", "cannot publish the directory: %s",
                     rc == -EEXIST || rc == -ENOTEMPTY ? "something appeared at this path meanwhile"
                                                       : strerror(-rc));
    if (!rc && sync)
        fsync_dir(o->parent);
    dir_out_free(o, rc != 0);
    return rc ? -1 : 0;
}

void nf_dir_out_abort(nf_dir_out *o) { dir_out_free(o, true); }

/* ---- a set written elsewhere, published here (ninfer-fetch) ---- */

nf_writer *nf_writer_open_adopt(const char *target, char *const *names, size_t n,
                                const unsigned char id[16], const nf_write_opts *o, nf_diags *d)
{
    nf_plan plan = {0};
    plan.n_files = n;
    plan.files = calloc(n ? n : 1, sizeof *plan.files);
    if (!plan.files) {
        nf_diag_add(d, NF_C_IO, "", "out of memory");
        return NULL;
    }
    for (size_t i = 1; i < n; i++)
        plan.files[i].path = names[i];
    nf_write_opts wo = *o;
    wo.id_mode = NF_ID_GIVEN; /* the set's own: what proves its parts ours */
    memcpy(wo.id, id, 16);
    nf_writer *w = writer_open(target, &plan, &wo, NULL, 0, false, d);
    free(plan.files);
    return w;
}

int nf_writer_publish_adopted(nf_writer *w, char *const *tmp, nf_diags *d)
{
    int rc = 0;
    for (size_t i = 0; i < w->n_files && !rc; i++)
        if (!(w->tmp[i] = strdup(tmp[i]))) {
            nf_diag_add(d, NF_C_IO, "", "out of memory");
            rc = -1;
        }
    if (!rc)
        rc = publish_set(w, tmp, d);
    /* the caller's files are the caller's: never removed here */
    for (size_t i = 0; i < w->n_files; i++) {
        free(w->tmp[i]);
        w->tmp[i] = NULL;
    }
    writer_free(w);
    return rc;
}
