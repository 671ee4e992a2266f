/* nf_writer.c — planning, temporaries, crash-safe publication. */
#include "nf_writer.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nf_artifact.h"
#include "nf_json.h"
#include "nf_util.h"

static const char *g_prog = "ninfer";
void nf_writer_set_prog(const char *prog) { g_prog = prog; }

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
        char *t = nf_catalog_serialize(cat, &so, &len);
        if (!t) {
            nf_diag_add(d, NF_C_IO, "", "out of memory serializing the catalog");
            return -1;
        }
        free(t);
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
        char *t = nf_catalog_serialize(cat, &so, &len);
        if (!t) {
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
        free(t);
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

/* ---- temporaries and signals ---- */

#define MAX_TEMPS 4096
static char *g_temps[MAX_TEMPS];
static volatile sig_atomic_t g_ntemps;
static bool g_handlers;

static void on_signal(int sig)
{
    for (sig_atomic_t i = 0; i < g_ntemps; i++)
        if (g_temps[i])
            unlink(g_temps[i]);
    signal(sig, SIG_DFL);
    raise(sig);
}

static void block_signals(sigset_t *old)
{
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGINT);
    sigaddset(&s, SIGTERM);
    sigaddset(&s, SIGHUP);
    sigaddset(&s, SIGPIPE);
    sigprocmask(SIG_BLOCK, &s, old);
}

static int temp_register(char *path)
{
    sigset_t old;
    block_signals(&old);
    int slot = -1;
    for (int i = 0; i < g_ntemps; i++)
        if (!g_temps[i]) {
            slot = i;
            break;
        }
    if (slot < 0 && g_ntemps < MAX_TEMPS)
        slot = g_ntemps++;
    if (slot >= 0)
        g_temps[slot] = path;
    if (!g_handlers) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_signal;
        sigemptyset(&sa.sa_mask);
        int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE};
        for (int i = 0; i < 4; i++) {
            struct sigaction prev;
            sigaction(sigs[i], NULL, &prev);
            if (prev.sa_handler != SIG_IGN)
                sigaction(sigs[i], &sa, NULL);
        }
        g_handlers = true;
    }
    sigprocmask(SIG_SETMASK, &old, NULL);
    return slot;
}

static void temp_forget(const char *path)
{
    sigset_t old;
    block_signals(&old);
    for (int i = 0; i < g_ntemps; i++)
        if (g_temps[i] == path)
            g_temps[i] = NULL;
    sigprocmask(SIG_SETMASK, &old, NULL);
}

/* ---- the writer ---- */

struct nf_writer {
    bool stream;
    nf_output *out;       /* stream */
    uint64_t spos;        /* stream: payload bytes written */
    char *target, *dir, *entry_name;
    nf_plan plan;         /* copy of files table (owned) */
    size_t n_files;
    int *fds;
    char **tmp;           /* temp paths */
    char **final;         /* published paths */
    unsigned char id[16];
    nf_write_opts o;
    bool replace_entry;   /* an entry exists and --force */
    char **old_parts;     /* parts of the replaced set */
    size_t n_old_parts;
};

const unsigned char *nf_writer_artifact_id(const nf_writer *w) { return w->id; }

static void writer_free(nf_writer *w)
{
    if (!w)
        return;
    for (size_t i = 0; i < w->n_files; i++) {
        if (w->fds && w->fds[i] >= 0)
            close(w->fds[i]);
        if (w->tmp && w->tmp[i]) {
            unlink(w->tmp[i]);
            temp_forget(w->tmp[i]);
            free(w->tmp[i]);
        }
        if (w->final)
            free(w->final[i]);
    }
    for (size_t i = 0; i < w->n_old_parts; i++)
        free(w->old_parts[i]);
    free(w->old_parts);
    free(w->fds);
    free(w->tmp);
    free(w->final);
    free(w->target);
    free(w->dir);
    free(w->entry_name);
    free_files(w->plan.files, w->plan.n_files);
    free(w);
}

void nf_writer_abort(nf_writer *w) { writer_free(w); }

static int mkdir_p(const char *dir)
{
    char *p = strdup(dir);
    if (!p)
        return -1;
    for (char *q = p + 1; *q; q++) {
        if (*q != '/')
            continue;
        *q = 0;
        if (mkdir(p, 0777) < 0 && errno != EEXIST) {
            free(p);
            return -1;
        }
        *q = '/';
    }
    int rc = mkdir(p, 0777) < 0 && errno != EEXIST ? -1 : 0;
    free(p);
    return rc;
}

/* Temporaries of an earlier run that was killed (SIGKILL cannot clean up):
 * ".<entry>[.part-N].tmp-<pid>-XXXXXX" whose writer process is gone. */
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
        const char *t = strstr(n + 1 + el, ".tmp-");
        if (!t)
            continue;
        char *end = NULL;
        long pid = strtol(t + 5, &end, 10);
        if (pid <= 0 || !end || *end != '-' || (kill((pid_t)pid, 0) == 0 || errno != ESRCH))
            continue;
        char *full = nf_path_join(dir, n);
        if (full) {
            unlink(full);
            free(full);
        }
    }
    closedir(dp);
}

/* Parts named "<entry>.part-N" beside a newly published entry that does not
 * list them belong to no artifact (DESIGN 3: leftovers are replaced): they
 * would only confuse the next reader, so they go. */
static void remove_surplus_leftovers(nf_writer *w)
{
    DIR *dp = opendir(w->dir);
    if (!dp)
        return;
    size_t el = strlen(w->entry_name);
    struct dirent *de;
    while ((de = readdir(dp)) != NULL) {
        const char *n = de->d_name;
        if (strncmp(n, w->entry_name, el) != 0 || strncmp(n + el, ".part-", 6) != 0)
            continue;
        const char *q = n + el + 6;
        if (!*q || strspn(q, "0123456789") != strlen(q))
            continue;
        bool ours = false;
        for (size_t i = 1; i < w->n_files; i++)
            ours |= w->plan.files[i].path && strcmp(w->plan.files[i].path, n) == 0;
        if (ours)
            continue;
        char *full = nf_path_join(w->dir, n);
        if (full) {
            if (!w->replace_entry)
                fprintf(stderr, "%s: %s: removing a leftover part with no entry\n", g_prog, full);
            unlink(full);
            free(full);
        }
    }
    closedir(dp);
}

static bool same_file(const struct stat *a, const struct stat *b)
{
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

/* Remember the parts of the entry we are about to replace, so the surplus
 * can go after the new set is published. */
static void collect_old_parts(nf_writer *w)
{
    nf_diags tmp = NF_DIAGS_INIT;
    nf_open_opts oo = {0};
    nf_artifact *a = nf_artifact_open(w->target, &oo, &tmp);
    nf_diags_free(&tmp);
    if (!a)
        return;
    const nf_catalog *c = nf_artifact_catalog(a);
    w->old_parts = calloc(c->n_files ? c->n_files : 1, sizeof *w->old_parts);
    for (size_t i = 1; w->old_parts && i < c->n_files; i++)
        if (c->files[i].path)
            w->old_parts[w->n_old_parts++] = nf_path_join(w->dir, c->files[i].path);
    nf_artifact_close(a);
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
    w->n_files = plan->n_files;
    w->plan = *plan;
    w->plan.json = NULL;
    w->plan.files = calloc(plan->n_files, sizeof *w->plan.files);
    if (!w->plan.files)
        goto oom;
    for (size_t i = 0; i < plan->n_files; i++) {
        w->plan.files[i] = plan->files[i];
        w->plan.files[i].path = plan->files[i].path ? strdup(plan->files[i].path) : NULL;
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
    memset(h, 0, 32);
    memcpy(h, i == 0 ? NF_ENTRY_MAGIC : NF_PART_MAGIC, 8);
    nf_store_le64(h + 8, i == 0 ? json_bytes : (uint64_t)i);
    memcpy(h + 16, w->id, 16);
}

nf_writer *nf_writer_open_files(const char *target, const nf_plan *plan,
                                const nf_write_opts *o, const char *const *inputs,
                                size_t n_inputs, nf_diags *d)
{
    nf_writer *w = writer_new(plan, d);
    if (!w)
        return NULL;
    w->o = *o;
    w->target = strdup(target);
    w->dir = nf_dirname_dup(target);
    w->entry_name = strdup(nf_basename(target));
    w->fds = malloc(w->n_files * sizeof *w->fds);
    w->tmp = calloc(w->n_files, sizeof *w->tmp);
    w->final = calloc(w->n_files, sizeof *w->final);
    if (!w->target || !w->dir || !w->entry_name || !w->fds || !w->tmp || !w->final) {
        nf_diag_add(d, NF_C_IO, "", "out of memory");
        writer_free(w);
        return NULL;
    }
    for (size_t i = 0; i < w->n_files; i++) {
        w->fds[i] = -1;
        w->final[i] = i == 0 ? strdup(target) : nf_path_join(w->dir, w->plan.files[i].path);
    }
    /* an output that names an input is refused before anything is written */
    for (size_t i = 0; i < w->n_files; i++) {
        struct stat so;
        if (stat(w->final[i], &so) < 0)
            continue;
        for (size_t k = 0; k < n_inputs; k++) {
            struct stat si;
            if (inputs[k] && stat(inputs[k], &si) == 0 && same_file(&so, &si)) {
                nf_diag_addf(d, NF_C_USAGE, w->final[i], "",
                             "output names an input file (%s); refusing to write", inputs[k]);
                writer_free(w);
                return NULL;
            }
        }
    }
    /* like `install -D`: a missing output directory is made (DESIGN 1 writes
     * shards/m.ninfer straight away) */
    struct stat st;
    if (stat(w->dir, &st) < 0 && errno == ENOENT && mkdir_p(w->dir) < 0) {
        nf_diag_addf(d, NF_C_IO, target, "", "cannot create directory %s: %s", w->dir,
                     strerror(errno));
        writer_free(w);
        return NULL;
    }
    remove_stale_temps(w->dir, w->entry_name);
    if (lstat(target, &st) == 0) {
        if (!o->force) {
            nf_diag_addf(d, NF_C_IO, target, "", "output exists; use --force to replace it");
            writer_free(w);
            return NULL;
        }
        if (S_ISDIR(st.st_mode)) {
            nf_diag_addf(d, NF_C_IO, target, "", "output is a directory");
            writer_free(w);
            return NULL;
        }
        w->replace_entry = true;
        collect_old_parts(w);
    }
    for (size_t i = 0; i < w->n_files; i++) {
        char *t = NULL;
        if (asprintf(&t, "%s/.%s.tmp-%ld-XXXXXX", w->dir, nf_basename(w->final[i]),
                     (long)getpid()) < 0) {
            nf_diag_add(d, NF_C_IO, "", "out of memory");
            writer_free(w);
            return NULL;
        }
        /* create and register with signals blocked: no moment where a
         * signal could leave an unregistered temporary behind */
        sigset_t old;
        block_signals(&old);
        int fd = mkostemp(t, O_CLOEXEC);
        int e = errno;
        if (fd >= 0) {
            w->tmp[i] = t;
            temp_register(t);
        }
        sigprocmask(SIG_SETMASK, &old, NULL);
        if (fd < 0) {
            nf_diag_addf(d, NF_C_IO, w->final[i], "", "cannot create a temporary file in %s: %s",
                         w->dir, strerror(e));
            free(t);
            writer_free(w);
            return NULL;
        }
        w->fds[i] = fd;
        fchmod(fd, 0644 & ~0u);
        /* the full length up front: gaps between objects read as zeros */
        uint64_t start = i == 0 ? w->plan.entry_payload_start : NF_PAGE;
        uint64_t size = start + w->plan.files[i].payload_bytes;
        if (ftruncate(fd, (off_t)size) < 0) {
            nf_diag_addf(d, NF_C_IO, w->final[i], "", "cannot size the output: %s",
                         strerror(errno));
            writer_free(w);
            return NULL;
        }
    }
    /* honour the umask like any other created file */
    mode_t um = umask(0);
    umask(um);
    for (size_t i = 0; i < w->n_files; i++)
        fchmod(w->fds[i], 0666 & ~um);
    return w;
}

nf_writer *nf_writer_open_stream(nf_output *out, const nf_plan *plan, nf_diags *d)
{
    nf_writer *w = writer_new(plan, d);
    if (!w)
        return NULL;
    w->stream = true;
    w->out = out;
    unsigned char h[32];
    make_header(w, 0, h, plan->json_bytes);
    static const char spaces[256] = {0};
    (void)spaces;
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
        nf_diag_add(d, NF_C_IO, "", "write error: %s", strerror(-rc));
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
            nf_diag_add(d, NF_C_IO, "", "write error: %s", strerror(-rc));
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
            nf_diag_add(d, NF_C_IO, "", "write error: %s", strerror(-rc));
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
        int rc = nf_pwrite_all(w->fds[i], p, k, foff);
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
        loff_t so = (loff_t)src_off;
        loff_t doff = (loff_t)((i == 0 ? w->plan.entry_payload_start : NF_PAGE) +
                               (off - f->logical_offset));
        uint64_t left = k;
        int rc = 0;
        while (left) {
            size_t chunk = left > (1u << 30) ? (1u << 30) : (size_t)left;
            ssize_t c = copy_file_range(src_fd, &so, w->fds[i], &doff, chunk, 0);
            if (c < 0 && errno == EINTR)
                continue;
            if (c < 0 && (errno == EXDEV || errno == ENOSYS || errno == EINVAL ||
                          errno == EOPNOTSUPP || errno == EBADF)) {
                rc = copy_fallback(src_fd, (uint64_t)so, w->fds[i], (uint64_t)doff, left);
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
            nf_diag_addf(d, rc == -ENODATA ? NF_C_LENGTH : NF_C_IO, w->final[i], "",
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

int nf_writer_finish(nf_writer *w, const char *json, size_t len, nf_diags *d)
{
    int rc = 0;
    if (w->stream) {
        if (stream_pad(w, w->plan.files[0].payload_bytes, d) < 0 ||
            (rc = nf_output_finish(w->out)) != 0) {
            if (rc)
                nf_diag_add(d, NF_C_IO, "", "write error: %s", strerror(-rc));
            writer_free(w);
            return -1;
        }
        writer_free(w);
        return 0;
    }
    if (len > w->plan.json_bytes) {
        nf_diag_add(d, NF_C_IO, "", "catalog grew past its reservation (%zu > %llu)", len,
                    (unsigned long long)w->plan.json_bytes);
        writer_free(w);
        return -1;
    }
    /* header + catalog + trailing spaces; fill stays zero from ftruncate */
    size_t hl = (size_t)(32 + w->plan.json_bytes);
    unsigned char *head = malloc(hl);
    if (!head) {
        nf_diag_add(d, NF_C_IO, "", "out of memory");
        writer_free(w);
        return -1;
    }
    make_header(w, 0, head, w->plan.json_bytes);
    memcpy(head + 32, json, len);
    memset(head + 32 + len, ' ', hl - 32 - len);
    rc = nf_pwrite_all(w->fds[0], head, hl, 0);
    free(head);
    for (size_t i = 1; !rc && i < w->n_files; i++) {
        unsigned char h[32];
        make_header(w, i, h, 0);
        rc = nf_pwrite_all(w->fds[i], h, 32, 0);
        if (rc) {
            nf_diag_addf(d, NF_C_IO, w->final[i], "", "write error: %s", strerror(-rc));
            writer_free(w);
            return -1;
        }
    }
    if (rc) {
        nf_diag_addf(d, NF_C_IO, w->final[0], "", "write error: %s", strerror(-rc));
        writer_free(w);
        return -1;
    }
    for (size_t i = 0; i < w->n_files; i++) {
        if (w->o.sync && fdatasync(w->fds[i]) < 0) {
            nf_diag_addf(d, NF_C_IO, w->final[i], "", "sync failed: %s", strerror(errno));
            writer_free(w);
            return -1;
        }
        if (close(w->fds[i]) < 0) {
            w->fds[i] = -1;
            nf_diag_addf(d, NF_C_IO, w->final[i], "", "close failed: %s", strerror(errno));
            writer_free(w);
            return -1;
        }
        w->fds[i] = -1;
    }
    /* with --force the old entry goes first: no moment shows an old entry
     * beside new parts */
    if (w->replace_entry && unlink(w->target) < 0 && errno != ENOENT) {
        nf_diag_addf(d, NF_C_IO, w->target, "", "cannot remove the old entry: %s",
                     strerror(errno));
        writer_free(w);
        return -1;
    }
    for (size_t k = 0; k < w->n_files; k++) {
        size_t i = (k + 1) % w->n_files; /* parts 1..n-1 first, the entry last */
        if (w->n_files == 1)
            i = 0;
        struct stat st;
        if (i > 0 && lstat(w->final[i], &st) == 0 && !w->replace_entry)
            fprintf(stderr, "%s: %s: replacing a leftover part with no entry\n", g_prog,
                    w->final[i]);
        if (rename(w->tmp[i], w->final[i]) < 0) {
            nf_diag_addf(d, NF_C_IO, w->final[i], "", "cannot publish: %s", strerror(errno));
            /* un-publish the parts already moved: nothing half written */
            for (size_t j = 0; j < k; j++) {
                size_t pj = (j + 1) % w->n_files;
                unlink(w->final[pj]);
            }
            writer_free(w);
            return -1;
        }
        temp_forget(w->tmp[i]);
        free(w->tmp[i]);
        w->tmp[i] = NULL;
        if (w->o.sync && i == 0)
            fsync_dir(w->dir);
        if (w->n_files == 1)
            break;
    }
    /* parts named like ours that the new set does not list: leftovers of an
     * interrupted run, or the surplus of a replaced set whose entry could
     * not be read */
    remove_surplus_leftovers(w);
    for (size_t j = 0; j < w->n_old_parts; j++) {
        bool keep = false;
        for (size_t i = 1; i < w->n_files; i++)
            keep |= strcmp(w->old_parts[j], w->final[i]) == 0;
        if (!keep)
            unlink(w->old_parts[j]);
    }
    writer_free(w);
    return 0;
}

int nf_writer_finish_catalog(nf_writer *w, const nf_catalog *c, bool digests, nf_diags *d)
{
    size_t len = 0;
    char *json = NULL;
    if (!w->stream) {
        nf_serialize_opts so = {0};
        so.files = w->plan.files;
        so.n_files = w->plan.n_files;
        so.digests = digests;
        json = nf_catalog_serialize(c, &so, &len);
        if (!json) {
            nf_diag_add(d, NF_C_IO, "", "out of memory serializing the catalog");
            writer_free(w);
            return -1;
        }
    }
    int rc = nf_writer_finish(w, json, len, d);
    free(json);
    return rc;
}
