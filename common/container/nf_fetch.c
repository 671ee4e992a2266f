/* nf_fetch.c — a download that proves what it receives, resumes, and
 * publishes at once. Phases: choose the files, take the target and the
 * resume directory, read the state an earlier run left, check every part's
 * header, receive the rest in order while hashing, publish. */
#include "nf_fetch.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nf_digest.h"
#include "nf_objhash.h"
#include "nf_select.h"

#define SAVE_EVERY (64ull << 20) /* proven bytes between two saves of the state */
#define SLICE ((size_t)256 << 10) /* bytes written, then hashed, at a time */
#define VAL_MAX 256

typedef struct {
    bool need;
    uint64_t size;              /* file bytes */
    char val[VAL_MAX];          /* validator now */
    char saved_val[VAL_MAX];    /* as an earlier run saw it */
    uint64_t saved_size;
    bool saved;
    int fd;                     /* its file in the resume directory, or -1 */
    bool dirty;                 /* written since the last sync */
} ffile;

typedef struct {
    nf_artifact *a;
    const nf_catalog *c;
    const nf_fetch_opts *o;
    nf_diags *d;
    char *rpath;                /* the resume directory */
    int dfd;                    /* it, opened and locked */
    ffile *f;
    size_t n;
    char entry_sha[65];         /* of the entry's header and catalog */
    char *url;                  /* without query */
    uint64_t frontier;          /* logical bytes before this are proven */
    uint64_t saved_frontier;
    bool *check;                /* objects to hash: a digest, and every file fetched */
    char (*got)[65];
} fstate;

static void ferr(fstate *s, const char *file, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void ferr(fstate *s, const char *file, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    nf_diag_addf(s->d, NF_C_IO, file ? file : s->rpath, "", "%s", msg);
}

/* ---- the resume directory ---- */

static bool ours(const char *name)
{
    if (!strcmp(name, "state") || !strcmp(name, "state.tmp"))
        return true;
    return name[0] == 'f' && name[1] && strspn(name + 1, "0123456789") == strlen(name + 1);
}

static bool private_dir(const struct stat *st)
{
    return S_ISDIR(st->st_mode) && st->st_uid == geteuid() && (st->st_mode & 07777) == 0700;
}

/* Open (making it when absent) and lock the resume directory; with reset
 * empty it first. Only our own names, as regular files, may be in it. */
static int open_rdir(fstate *s, bool reset)
{
    struct stat ls, st;
    bool made = false;
    if (lstat(s->rpath, &ls) < 0) {
        if (errno != ENOENT) {
            ferr(s, NULL, "cannot check the resume directory: %s", strerror(errno));
            return -1;
        }
        if (mkdir(s->rpath, 0700) < 0) {
            ferr(s, NULL, "cannot make the resume directory: %s", strerror(errno));
            return -1;
        }
        made = true;
    } else if (!private_dir(&ls)) {
        ferr(s, NULL, "this is not a private resume directory (a directory of mode 0700 that "
             "you own); refusing to use or follow it");
        return -1;
    }
    s->dfd = open(s->rpath, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (s->dfd < 0 || fstat(s->dfd, &st) < 0) {
        ferr(s, NULL, "cannot open the resume directory: %s", strerror(errno));
        return -1;
    }
    if (made)
        fchmod(s->dfd, 0700);
    if (fstat(s->dfd, &st) < 0 || !private_dir(&st) ||
        (!made && (st.st_dev != ls.st_dev || st.st_ino != ls.st_ino))) {
        ferr(s, NULL, "the resume directory changed while it was opened; refusing it");
        return -1;
    }
    if (flock(s->dfd, LOCK_EX | LOCK_NB) < 0) {
        ferr(s, NULL, errno == EWOULDBLOCK ? "another ninfer-fetch is using this resume directory"
                                           : "cannot lock the resume directory: %s",
             strerror(errno));
        return -1;
    }
    int dup_fd = dup(s->dfd);
    DIR *dp = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
    if (!dp) {
        if (dup_fd >= 0)
            close(dup_fd);
        ferr(s, NULL, "cannot list the resume directory: %s", strerror(errno));
        return -1;
    }
    int rc = 0;
    struct dirent *de;
    while (rc == 0 && (de = readdir(dp)) != NULL) {
        const char *nm = de->d_name;
        if (!strcmp(nm, ".") || !strcmp(nm, ".."))
            continue;
        struct stat fs;
        if (!ours(nm) || fstatat(s->dfd, nm, &fs, AT_SYMLINK_NOFOLLOW) < 0 ||
            !S_ISREG(fs.st_mode)) {
            char *full = nf_path_join(s->rpath, nm);
            ferr(s, full, "not a file of ninfer-fetch's resume directory; refusing to go on "
                 "(remove it)");
            free(full);
            rc = -1;
        } else if (reset && unlinkat(s->dfd, nm, 0) < 0) {
            ferr(s, NULL, "cannot empty the resume directory: %s", strerror(errno));
            rc = -1;
        }
    }
    closedir(dp);
    return rc;
}

/* The resume directory is still the one opened (nothing swapped it). */
static bool rdir_same(fstate *s)
{
    struct stat a, b;
    return lstat(s->rpath, &a) == 0 && fstat(s->dfd, &b) == 0 && a.st_dev == b.st_dev &&
           a.st_ino == b.st_ino && private_dir(&a);
}

/* ---- the state file ---- */

static void hexenc(const char *s, char *out, size_t cap)
{
    static const char hx[] = "0123456789abcdef";
    size_t k = 0;
    for (; *s && k + 3 < cap; s++) {
        out[k++] = hx[(unsigned char)*s >> 4];
        out[k++] = hx[(unsigned char)*s & 15];
    }
    out[k] = 0;
}

static bool hexdec(const char *s, char *out, size_t cap)
{
    size_t n = strlen(s), k = 0;
    if (n % 2 || n / 2 >= cap)
        return false;
    for (size_t i = 0; i < n; i += 2) {
        unsigned v;
        if (sscanf(s + i, "%2x", &v) != 1)
            return false;
        out[k++] = (char)v;
    }
    out[k] = 0;
    return true;
}

static int save_state(fstate *s)
{
    nf_text t = {0};
    char line[2 * VAL_MAX + 128];
    snprintf(line, sizeof line, "ninfer-fetch-state 1\nentry %s\nfrontier %llu\n", s->entry_sha,
             (unsigned long long)s->frontier);
    nf_text_puts(&t, line);
    nf_text_puts(&t, "url ");
    nf_text_puts(&t, s->url);
    nf_text_puts(&t, "\ncomponent ");
    nf_text_puts(&t, s->o->component ? s->o->component : "-");
    nf_text_puts(&t, "\n");
    for (size_t i = 0; i < s->n; i++) {
        if (!s->f[i].need)
            continue;
        char hv[2 * VAL_MAX + 1];
        hexenc(s->f[i].val, hv, sizeof hv);
        snprintf(line, sizeof line, "file %zu %llu %s\n", i, (unsigned long long)s->f[i].size,
                 hv[0] ? hv : "-");
        nf_text_puts(&t, line);
    }
    size_t len;
    char *txt = nf_text_take(&t, &len);
    if (!txt)
        return -1;
    int fd = openat(s->dfd, "state.tmp", O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
                    0600);
    int rc = fd < 0 ? -errno : nf_write_all(fd, txt, len);
    if (!rc && s->o->w.sync && fdatasync(fd) < 0)
        rc = -errno;
    if (fd >= 0)
        close(fd);
    if (!rc && renameat(s->dfd, "state.tmp", s->dfd, "state") < 0)
        rc = -errno;
    free(txt);
    if (rc) {
        ferr(s, NULL, "cannot save the resume state: %s", strerror(-rc));
        return -1;
    }
    s->saved_frontier = s->frontier;
    return 0;
}

/* What an earlier run left: its frontier when it fetched the same entry
 * (header and catalog), URL and selection; every file's length and
 * validator as it saw them. */
static void load_state(fstate *s)
{
    int fd = openat(s->dfd, "state", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    char *txt = NULL;
    size_t len = 0;
    if (fd < 0)
        return;
    int rc = nf_read_all(fd, 1u << 26, &txt, &len);
    close(fd);
    if (rc < 0) {
        free(txt);
        return;
    }
    bool entry_ok = false, url_ok = false, comp_ok = false, magic = false;
    uint64_t frontier = 0;
    for (char *ln = txt, *nl; ln && *ln; ln = nl) {
        nl = strchr(ln, '\n');
        if (nl)
            *nl++ = 0;
        unsigned long long a, b;
        size_t i;
        char v[2 * VAL_MAX + 2];
        if (!strcmp(ln, "ninfer-fetch-state 1"))
            magic = true;
        else if (!strncmp(ln, "entry ", 6))
            entry_ok = !strcmp(ln + 6, s->entry_sha);
        else if (!strncmp(ln, "url ", 4))
            url_ok = !strcmp(ln + 4, s->url);
        else if (!strncmp(ln, "component ", 10))
            comp_ok = !strcmp(ln + 10, s->o->component ? s->o->component : "-");
        else if (sscanf(ln, "frontier %llu", &a) == 1)
            frontier = a;
        else if (sscanf(ln, "file %zu %llu %513s", &i, &b, v) == 3 && i < s->n) {
            s->f[i].saved = true;
            s->f[i].saved_size = b;
            if (strcmp(v, "-") == 0)
                s->f[i].saved_val[0] = 0;
            else if (!hexdec(v, s->f[i].saved_val, VAL_MAX))
                s->f[i].saved = false;
        }
    }
    free(txt);
    if (magic && entry_ok && url_ok && comp_ok)
        s->frontier = frontier;
    else
        for (size_t i = 0; i < s->n; i++)
            s->f[i].saved = false;
}

/* ---- the files ---- */

static int file_fd(fstate *s, size_t i, bool truncate)
{
    ffile *f = &s->f[i];
    if (f->fd >= 0 && !truncate)
        return f->fd;
    if (f->fd < 0) {
        char nm[32];
        snprintf(nm, sizeof nm, "f%zu", i);
        /* the umask's mode, as every writer's files: the directory keeps them private */
        f->fd = openat(s->dfd, nm, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0666);
        if (f->fd < 0) {
            ferr(s, NULL, "cannot open %s in the resume directory: %s", nm, strerror(errno));
            return -1;
        }
    }
    if (truncate && ftruncate(f->fd, 0) < 0) {
        ferr(s, NULL, "cannot empty a file in the resume directory: %s", strerror(errno));
        return -1;
    }
    return f->fd;
}

/* Sync the files written since the last save, then save the frontier. */
static int checkpoint(fstate *s)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->f[i].dirty && s->f[i].fd >= 0) {
            if (s->o->w.sync && fdatasync(s->f[i].fd) < 0) {
                ferr(s, nf_artifact_file_path(s->a, i), "cannot sync its download: %s",
                     strerror(errno));
                return -1;
            }
            s->f[i].dirty = false;
        }
    return save_state(s);
}

/* File i's bytes before its payload, as they must be once its checks
 * passed: header, catalog text and its spaces (the entry), zero fill. */
static int write_head(fstate *s, size_t i)
{
    const nf_header *h = nf_artifact_header(s->a);
    uint64_t ps = nf_artifact_file_payload_start(s->a, i);
    unsigned char *b = calloc(1, (size_t)ps);
    int fd = file_fd(s, i, false);
    if (!b || fd < 0) {
        free(b);
        if (fd >= 0)
            ferr(s, NULL, "out of memory");
        return -1;
    }
    nf_header_encode(b, i, h->json_bytes, h->artifact_id);
    if (i == 0) {
        size_t jl;
        const char *j = nf_artifact_json(s->a, &jl);
        memcpy(b + 32, j, jl);
        memset(b + 32 + jl, ' ', (size_t)nf_artifact_json_pad(s->a));
    }
    int rc = nf_pwrite_all(fd, b, (size_t)ps, 0);
    free(b);
    if (rc) {
        ferr(s, nf_artifact_file_path(s->a, i), "cannot write its download: %s", strerror(-rc));
        return -1;
    }
    s->f[i].dirty = true;
    return 0;
}

/* The digest of the entry's header and catalog, as the state names them. */
static void entry_digest(nf_artifact *a, char out[65])
{
    const nf_header *h = nf_artifact_header(a);
    unsigned char raw[32];
    nf_header_encode(raw, 0, h->json_bytes, h->artifact_id);
    nf_sha256 *x = nf_sha256_new();
    if (!x) {
        out[0] = 0;
        return;
    }
    nf_sha256_update(x, raw, 32);
    size_t jl;
    const char *j = nf_artifact_json(a, &jl);
    nf_sha256_update(x, j, jl);
    char pad[32];
    snprintf(pad, sizeof pad, "+%llu", (unsigned long long)nf_artifact_json_pad(a));
    nf_sha256_update(x, pad, strlen(pad));
    nf_sha256_final(x, out);
}

/* A file that is not as an earlier run saw it starts over, and so does
 * every object that reaches into it: the frontier goes back to the start
 * of the first such file (files lie in logical order), or of the object
 * that straddles it. A file is as it was when the server gives the same
 * length and validator as before (a file without a validator never is:
 * nothing could tell a new version of it) and the resume directory still
 * holds every byte of it the state counts as received (a download removed
 * or cut short since, or published by a run stopped before it removed its
 * state, is fetched again, never taken for zeros). */
static void drop_changed(fstate *s)
{
    const nf_catalog *c = s->c;
    for (size_t i = 0; i < s->n; i++) {
        ffile *f = &s->f[i];
        const nf_file *fl = &c->files[i];
        if (!f->need || s->frontier <= fl->logical_offset)
            continue;
        bool same = f->saved && f->val[0] && f->saved_size == f->size &&
                    !strcmp(f->saved_val, f->val);
        if (same) {
            uint64_t end = fl->logical_offset + fl->payload_bytes;
            uint64_t held = nf_artifact_file_payload_start(s->a, i) +
                            ((s->frontier < end ? s->frontier : end) - fl->logical_offset);
            char nm[32];
            struct stat st;
            snprintf(nm, sizeof nm, "f%zu", i);
            same = fstatat(s->dfd, nm, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
                   (uint64_t)st.st_size >= held;
        }
        if (same)
            continue;
        uint64_t start = fl->logical_offset;
        size_t k = nf_catalog_object_after(c, start);
        if (k < c->n_objects && c->objects[k].offset < start)
            start = c->objects[k].offset;
        if (s->frontier > start)
            s->frontier = start;
        return;
    }
}

/* ---- receiving ---- */

static void digest_error(fstate *s, size_t k, const char *got)
{
    const nf_object *o = &s->c->objects[k];
    char said[65], ptr[48];
    nf_object_digest_hex(o, said);
    snprintf(ptr, sizeof ptr, "/objects/%zu", k);
    size_t first, last;
    const char *file = nf_artifact_path(s->a);
    if (nf_artifact_file_span(s->a, o->offset, o->bytes, &first, &last) && first == last)
        file = nf_artifact_file_path(s->a, first);
    nf_diag_addf(s->d, NF_C_DIGEST, file, ptr,
                 "object \"%s\": sha256 %s, metadata.integrity says %s; nothing was published",
                 o->id, got, said);
}

static int receive(fstate *s, nf_fetch_result *r)
{
    const nf_catalog *c = s->c;
    nf_range *rg = calloc(s->n ? s->n : 1, sizeof *rg);
    if (!rg) {
        ferr(s, NULL, "out of memory");
        return -1;
    }
    size_t nr = 0;
    uint64_t total = 0;
    for (size_t i = 0; i < s->n; i++) {
        if (!s->f[i].need)
            continue;
        const nf_file *fl = &c->files[i];
        total += fl->payload_bytes;
        uint64_t from = fl->logical_offset, end = from + fl->payload_bytes;
        if (s->frontier > from)
            from = s->frontier < end ? s->frontier : end;
        r->resumed += from - fl->logical_offset;
        if (from < end)
            rg[nr++] = (nf_range){from, end - from};
    }
    /* the first object to prove: the first checkable one from the frontier */
    size_t cur = 0;
    while (cur < c->n_objects && (!s->check[cur] || c->objects[cur].offset < s->frontier))
        cur++;
    nf_seqhash *h = nf_seqhash_new(c, s->check, s->got);
    nf_scan_opts so = {s->o->jobs, 4u << 20, 4u << 20};
    nf_scan *sc = h && nr ? nf_scan_new(s->a, rg, nr, &so, s->d) : NULL;
    free(rg);
    if (!h || (nr && !sc)) {
        if (!h)
            ferr(s, NULL, "out of memory");
        nf_seqhash_free(h);
        return -1;
    }
    int rc = 0;
    size_t file, len;
    uint64_t off;
    const void *buf;
    uint64_t done = r->resumed;
    while (sc && (rc = nf_scan_next(sc, &file, &off, &buf, &len, s->d)) > 0) {
        const nf_file *fl = &c->files[file];
        uint64_t foff = nf_artifact_file_payload_start(s->a, file) + (off - fl->logical_offset);
        int fd = file_fd(s, file, false);
        /* written and hashed a slice at a time, so that the hash reads the
         * bytes the copy into the page cache has just brought into cache */
        int e = fd < 0 ? -1 : 0;
        bool oom = false;
        for (size_t at = 0; !e && !oom && at < len; at += SLICE) {
            size_t k = len - at < SLICE ? len - at : SLICE;
            e = nf_pwrite_all(fd, (const char *)buf + at, k, foff + at);
            if (!e)
                oom = nf_seqhash_feed(h, off + at, (const char *)buf + at, k) < 0;
        }
        if (e) {
            if (fd >= 0)
                ferr(s, nf_artifact_file_path(s->a, file), "cannot write its download: %s",
                     strerror(-e));
            rc = -1;
            break;
        }
        s->f[file].dirty = true;
        if (oom) {
            ferr(s, NULL, "out of memory");
            rc = -1;
            break;
        }
        r->bytes += len;
        done += len;
        /* prove what completed; the frontier stops at the first object
         * that is still open */
        bool bad = false;
        for (; cur < c->n_objects; cur++) {
            if (!s->check[cur])
                continue;
            if (!s->got[cur][0])
                break;
            char said[65];
            nf_object_digest_hex(&c->objects[cur], said);
            if (strcmp(said, s->got[cur]) != 0) {
                digest_error(s, cur, s->got[cur]);
                bad = true;
                break;
            }
            r->digests_checked++;
        }
        if (bad) {
            rc = -1;
            break;
        }
        uint64_t reach = off + len;
        if (cur < c->n_objects && c->objects[cur].offset < reach)
            reach = c->objects[cur].offset;
        if (reach > s->frontier)
            s->frontier = reach;
        if (s->frontier - s->saved_frontier >= SAVE_EVERY && checkpoint(s) < 0) {
            rc = -1;
            break;
        }
        if (s->o->progress)
            s->o->progress(s->o->progress_ctx, done, total);
    }
    nf_scan_free(sc);
    nf_seqhash_free(h);
    return rc < 0 ? -1 : 0;
}

/* ---- the whole ---- */

static void fstate_free(fstate *s)
{
    for (size_t i = 0; s->f && i < s->n; i++)
        if (s->f[i].fd >= 0)
            close(s->f[i].fd);
    if (s->dfd >= 0)
        close(s->dfd);
    free(s->f);
    free(s->rpath);
    free(s->url);
    free(s->check);
    free(s->got);
}

/* Which files to fetch: all, or what the selection needs (and the entry). */
static int choose(fstate *s)
{
    const nf_catalog *c = s->c;
    for (size_t i = 0; i < s->n; i++)
        s->f[i].need = !s->o->component;
    if (s->o->component) {
        bool *comps = calloc(c->n_components ? c->n_components : 1, sizeof *comps);
        bool *objs = calloc(c->n_objects ? c->n_objects : 1, sizeof *objs);
        bool *need = calloc(s->n, sizeof *need);
        int rc = comps && objs && need ? nf_select(c, s->o->component, true, comps, objs, s->d)
                                       : -1;
        for (size_t k = 0; rc == 0 && k < c->n_objects; k++)
            if (objs[k])
                nf_artifact_files_touched(s->a, c->objects[k].offset, c->objects[k].bytes, need);
        for (size_t i = 0; rc == 0 && i < s->n; i++)
            s->f[i].need = need[i];
        free(comps);
        free(objs);
        free(need);
        if (rc < 0)
            return -1;
    }
    s->f[0].need = true;
    /* objects to prove: those with a digest whose every file is fetched */
    for (size_t k = 0; k < c->n_objects; k++) {
        const nf_object *o = &c->objects[k];
        size_t first, last;
        bool all = o->has_digest && o->bytes &&
                   nf_artifact_file_span(s->a, o->offset, o->bytes, &first, &last);
        for (size_t i = first; all && i <= last; i++)
            all = s->f[i].need;
        s->check[k] = all;
    }
    return 0;
}

int nf_fetch(nf_artifact *a, const char *target, const nf_fetch_opts *o, nf_fetch_result *r,
             nf_diags *d)
{
    memset(r, 0, sizeof *r);
    const nf_catalog *c = nf_artifact_catalog(a);
    fstate s = {.a = a, .c = c, .o = o, .d = d, .dfd = -1, .n = c->n_files};
    nf_writer *w = NULL;
    char **names = NULL, **tmps = NULL;
    int rc = -1;
    s.f = calloc(s.n, sizeof *s.f);
    s.check = calloc(c->n_objects ? c->n_objects : 1, sizeof *s.check);
    s.got = calloc(c->n_objects ? c->n_objects : 1, sizeof *s.got);
    s.url = strdup(nf_artifact_path(a));
    char *dir = nf_dirname_dup(target);
    if (dir && *nf_basename(target))
        asprintf(&s.rpath, "%s/.%s.ninfer-fetch", dir, nf_basename(target));
    free(dir);
    if (!s.f || !s.check || !s.got || !s.url || !s.rpath) {
        nf_diag_add(d, NF_C_IO, "", "out of memory");
        goto out;
    }
    for (size_t i = 0; i < s.n; i++)
        s.f[i].fd = -1;
    if (choose(&s) < 0)
        goto out;
    bool any_digest = false;
    for (size_t k = 0; k < c->n_objects; k++)
        any_digest |= c->objects[k].has_digest;
    if (!any_digest && c->n_objects) {
        if (o->require_digests) {
            nf_diag_add(d, NF_C_INTEGRITY, "/metadata",
                        "the artifact has no digests (metadata.integrity); --require-digests "
                        "refuses it");
            goto out;
        }
        if (o->w.warn)
            o->w.warn(o->w.warn_ctx, nf_artifact_path(a),
                      "warning: no digests (metadata.integrity): every other rule is checked, "
                      "the bytes themselves cannot be");
    }
    /* the target: refused now, before any payload moves, when it is taken */
    size_t np = 0;
    names = calloc(s.n, sizeof *names);
    tmps = calloc(s.n, sizeof *tmps);
    if (!names || !tmps) {
        nf_diag_add(d, NF_C_IO, "", "out of memory");
        goto out;
    }
    for (size_t i = 0; i < s.n; i++)
        if (s.f[i].need) {
            names[np] = i ? c->files[i].path : NULL;
            np++;
        }
    w = nf_writer_open_adopt(target, names, np, nf_artifact_header(a)->artifact_id, &o->w, d);
    if (!w)
        goto out;
    if (open_rdir(&s, o->no_resume) < 0)
        goto out;
    entry_digest(a, s.entry_sha);
    if (!o->no_resume)
        load_state(&s);
    /* every part's header, length and fill (spec 3.2), and every file's
     * length and validator as the server has them now */
    for (size_t i = 0; i < s.n; i++) {
        if (!s.f[i].need)
            continue;
        if (nf_artifact_file_check(a, i, d) < 0)
            goto out;
        nf_artifact_file_remote(a, i, &s.f[i].size, s.f[i].val, VAL_MAX);
    }
    drop_changed(&s);
    for (size_t i = 0; i < s.n; i++) {
        if (!s.f[i].need)
            continue;
        const nf_file *fl = &c->files[i];
        bool keep = s.frontier > fl->logical_offset;
        if (file_fd(&s, i, !keep) < 0 || write_head(&s, i) < 0)
            goto out;
        r->total += s.f[i].size;
    }
    if (save_state(&s) < 0 || receive(&s, r) < 0) {
        checkpoint(&s);
        goto out;
    }
    /* every file whole: its length, synced, then published */
    for (size_t i = 0; i < s.n; i++) {
        if (!s.f[i].need)
            continue;
        if (ftruncate(s.f[i].fd, (off_t)s.f[i].size) < 0 ||
            (o->w.sync && fdatasync(s.f[i].fd) < 0)) {
            ferr(&s, nf_artifact_file_path(a, i), "cannot finish its download: %s",
                 strerror(errno));
            goto out;
        }
    }
    if (checkpoint(&s) < 0)
        goto out;
    r->names = calloc(np, sizeof *r->names);
    r->sha = o->file_digests ? calloc(np, sizeof *r->sha) : NULL;
    if (!r->names || (o->file_digests && !r->sha)) {
        nf_diag_add(d, NF_C_IO, "", "out of memory");
        goto out;
    }
    size_t k = 0;
    for (size_t i = 0; i < s.n; i++) {
        if (!s.f[i].need)
            continue;
        asprintf(&tmps[k], "%s/f%zu", s.rpath, i);
        r->names[k] = strdup(i ? c->files[i].path : nf_basename(target));
        if (!tmps[k] || !r->names[k]) {
            nf_diag_add(d, NF_C_IO, "", "out of memory");
            goto out;
        }
        if (r->sha) {
            int e = nf_digest_file(tmps[k], r->sha[k]);
            if (e < 0) {
                ferr(&s, nf_artifact_file_path(a, i), "cannot read its download: %s",
                     strerror(-e));
                goto out;
            }
        }
        k++;
    }
    r->n = np;
    if (!rdir_same(&s)) {
        ferr(&s, NULL, "the resume directory was replaced while fetching; nothing was published");
        goto out;
    }
    int pr = nf_writer_publish_adopted(w, tmps, d);
    w = NULL;
    if (pr < 0)
        goto out;
    r->files = np;
    /* published: the resume directory goes */
    unlinkat(s.dfd, "state", 0);
    unlinkat(s.dfd, "state.tmp", 0);
    for (size_t i = 0; i < s.n; i++) {
        char nm[32];
        snprintf(nm, sizeof nm, "f%zu", i);
        unlinkat(s.dfd, nm, 0);
    }
    rmdir(s.rpath);
    rc = 0;
out:
    nf_writer_abort(w);
    for (size_t i = 0; tmps && i < s.n; i++)
        free(tmps[i]);
    free(tmps);
    free(names);
    fstate_free(&s);
    return rc;
}

void nf_fetch_result_free(nf_fetch_result *r)
{
    for (size_t i = 0; r->names && i < r->n; i++)
        free(r->names[i]);
    free(r->names);
    free(r->sha);
    memset(r, 0, sizeof *r);
}
