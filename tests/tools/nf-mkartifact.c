/* nf-mkartifact — frame an NInfer v3 artifact by hand from a catalog text,
 * so tests can build valid and hostile artifacts that our own writer would
 * never make (DESIGN section 12; spec sections 2 and 3).
 *
 * Entry file (spec 3.1):
 *   [0,8)    magic 4e 49 4e 46 45 52 00 03
 *   [8,16)   json_bytes, U64 little-endian
 *   [16,32)  artifact_id
 *   [32,32+json_bytes)              the catalog text (space-padded to --json-bytes)
 *   [32+json_bytes, payload_start)  fill (zero, or --fill-byte)
 *   payload_start = align_up(32 + json_bytes, 4096), then segment 0.
 * Part file i (spec 3.2):
 *   [0,8) magic 4e 49 4e 50 52 54 00 03, [8,16) part_index, [16,32) artifact_id,
 *   [32,4096) fill, then segment i.
 *
 * With --json-bytes raw:N the header says N but the file holds the catalog text
 * exactly as given; fill and segment 0 (only when segment 0 is non-empty)
 * then follow at align_up(32 + catalog length, 4096). Nothing about N is
 * checked or computed, so N may be 0, past EOF or 2^64-1.
 *
 * The payload streams in 1 MiB chunks; `--payload zero:N` makes N zero bytes
 * with ftruncate (sparse: a 32 GB payload costs no disk). Every output goes
 * to a temporary name in its target directory; parts are renamed into place
 * first and the entry last; on any failure or SIGINT/SIGTERM/SIGHUP the
 * temporaries (and anything already renamed by this run) are removed.
 *
 * Standalone: libc and the header-only helpers of nf_util.h only.
 * Exit status: 0 ok, 2 usage, 3 I/O or system error.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "nf_util.h"

#define PROG "nf-mkartifact"
#define CHUNK (1u << 20)
#define PART_PAYLOAD_START 4096u

static const char usage_text[] =
    "usage: " PROG " --catalog FILE [OPTIONS] -o ENTRY\n"
    "Frame an NInfer v3 artifact by hand (valid or deliberately hostile).\n"
    "\n"
    "  --catalog FILE        catalog text, used byte for byte ('-' = stdin)\n"
    "  --json-bytes N        pad the catalog with spaces to N bytes (error if\n"
    "                        longer); the header says N (default: its length)\n"
    "  --json-bytes raw:N    write N into the header, write the catalog as given\n"
    "  --payload FILE        logical payload bytes (default: none)\n"
    "  --payload zero:N      N zero bytes, written sparse with ftruncate\n"
    "  --segments B0,B1,...  cut the payload: B0 into the entry, Bi into part i\n"
    "                        (must add up to the payload; default: one segment)\n"
    "  --artifact-id HEX     32 hex digits (default 0102...0f10)\n"
    "  --part-names N1,N2,.. names of parts 1,2,... relative to ENTRY's directory\n"
    "                        (default ENTRY.part-0001, ENTRY.part-0002, ...)\n"
    "  --part-id HEX         artifact_id written into the part headers\n"
    "  --part-index I1,I2,.. part_index written into parts 1,2,... (default i)\n"
    "  --fill-byte X         fill byte (0..255, decimal or 0xHH; default 0)\n"
    "  -o ENTRY              the entry file to write (required)\n"
    "  -h, --help            show this help\n"
    "\n"
    "Sizes are decimal, optionally with K M G T (powers of 1024).\n"
    "Exit: 0 ok, 2 usage, 3 I/O error.\n";

/* ---- temporaries ---------------------------------------------------------- */

typedef struct {
    char *tmp;   /* temporary path */
    char *final; /* target path */
} out_t;

static out_t *outs;
static size_t n_outs;
static volatile sig_atomic_t *tmp_live;  /* temp exists */
static volatile sig_atomic_t *published; /* renamed into place by this run */

static void cleanup(void)
{
    for (size_t i = 0; i < n_outs; i++) {
        if (tmp_live && tmp_live[i] && outs[i].tmp) {
            unlink(outs[i].tmp);
            tmp_live[i] = 0;
        }
        if (published && published[i] && outs[i].final) {
            unlink(outs[i].final);
            published[i] = 0;
        }
    }
}

static void on_signal(int sig)
{
    for (size_t i = 0; i < n_outs; i++) {
        if (tmp_live[i] && outs[i].tmp)
            unlink(outs[i].tmp);
        if (published[i] && outs[i].final)
            unlink(outs[i].final);
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

static void install_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
}

static void die_io(const char *path, const char *what, int err)
{
    cleanup();
    if (err)
        fprintf(stderr, PROG ": %s: %s: %s\n", path, what, strerror(err));
    else
        fprintf(stderr, PROG ": %s: %s\n", path, what);
    exit(3);
}

static void die_oom(void)
{
    cleanup();
    fputs(PROG ": out of memory\n", stderr);
    exit(3);
}

__attribute__((format(printf, 1, 2), noreturn))
static void usage_error(const char *fmt, ...)
{
    va_list ap;
    fputs(PROG ": ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputs(" (try --help)\n", stderr);
    exit(2);
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        die_oom();
    return p;
}

static char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *xasprintf(const char *fmt, ...)
{
    va_list ap;
    char *s;
    va_start(ap, fmt);
    int r = vasprintf(&s, fmt, ap);
    va_end(ap);
    if (r < 0)
        die_oom();
    return s;
}

/* ---- parsing ---------------------------------------------------------------- */

static int parse_u64(const char *s, uint64_t *out)
{
    if (!s || !*s)
        return 0;
    uint64_t v = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9')
            return 0;
        if (!nf_mul_u64(v, 10, &v) || !nf_add_u64(v, (uint64_t)(*s - '0'), &v))
            return 0;
    }
    *out = v;
    return 1;
}

/* Decimal with an optional K/M/G/T (x1024^k) suffix, optional "B"/"iB". */
static int parse_size(const char *s, uint64_t *out)
{
    if (!s || !*s)
        return 0;
    size_t n = 0;
    while (s[n] >= '0' && s[n] <= '9')
        n++;
    if (n == 0)
        return 0;
    char digits[32];
    if (n >= sizeof digits)
        return 0;
    memcpy(digits, s, n);
    digits[n] = '\0';
    uint64_t v;
    if (!parse_u64(digits, &v))
        return 0;
    const char *u = s + n;
    unsigned shift = 0;
    if (*u) {
        switch (*u) {
        case 'k': case 'K': shift = 10; break;
        case 'm': case 'M': shift = 20; break;
        case 'g': case 'G': shift = 30; break;
        case 't': case 'T': shift = 40; break;
        default: return 0;
        }
        u++;
        if (strcmp(u, "") != 0 && strcmp(u, "B") != 0 && strcmp(u, "iB") != 0)
            return 0;
    }
    if (!nf_mul_u64(v, (uint64_t)1 << shift, &v))
        return 0;
    *out = v;
    return 1;
}

/* Split a comma list into a malloc'ed array of malloc'ed strings. Empty
 * items are kept (the caller decides whether they are allowed). */
static char **split_list(const char *s, size_t *count)
{
    size_t n = 1;
    for (const char *p = s; *p; p++)
        n += *p == ',';
    char **v = xmalloc(n * sizeof *v);
    size_t i = 0;
    const char *start = s;
    for (const char *p = s;; p++) {
        if (*p == ',' || *p == '\0') {
            size_t len = (size_t)(p - start);
            v[i] = xmalloc(len + 1);
            memcpy(v[i], start, len);
            v[i][len] = '\0';
            i++;
            if (*p == '\0')
                break;
            start = p + 1;
        }
    }
    *count = n;
    return v;
}

static int hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

static int parse_id(const char *s, unsigned char id[16])
{
    if (strlen(s) != 32)
        return 0;
    for (int i = 0; i < 16; i++) {
        int hi = hexval((unsigned char)s[2 * i]), lo = hexval((unsigned char)s[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return 0;
        id[i] = (unsigned char)(hi << 4 | lo);
    }
    return 1;
}

static int parse_byte(const char *s, int *out)
{
    uint64_t v = 0;
    if ((s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))) {
        const char *p = s + 2;
        if (!*p || strlen(p) > 2)
            return 0;
        for (; *p; p++) {
            int h = hexval((unsigned char)*p);
            if (h < 0)
                return 0;
            v = v * 16 + (uint64_t)h;
        }
    } else if (!parse_u64(s, &v) || v > 255) {
        return 0;
    }
    *out = (int)v;
    return 1;
}

/* ---- paths and files -------------------------------------------------------- */

static char *dirname_dup(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        return xasprintf(".");
    if (slash == path)
        return xasprintf("/");
    return xasprintf("%.*s", (int)(slash - path), path);
}

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

static mode_t file_mode(void)
{
    mode_t m = umask(0);
    umask(m);
    return 0666 & ~m;
}

static int open_temp(size_t k)
{
    char *dir = dirname_dup(outs[k].final);
    outs[k].tmp = xasprintf("%s/.%s.tmpXXXXXX", dir, base_name(outs[k].final));
    free(dir);
    int fd = mkstemp(outs[k].tmp);
    if (fd < 0)
        die_io(outs[k].final, "cannot create a temporary file beside it", errno);
    tmp_live[k] = 1;
    if (fchmod(fd, file_mode()) != 0)
        die_io(outs[k].final, "chmod", errno);
    return fd;
}

static void write_all(int fd, const void *p, size_t n, const char *path)
{
    const char *c = p;
    while (n > 0) {
        ssize_t w = write(fd, c, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            die_io(path, "write", errno);
        }
        if (w == 0)
            die_io(path, "write", EIO);
        c += w;
        n -= (size_t)w;
    }
}

/* n copies of byte b. */
static void write_fill(int fd, int b, uint64_t n, const char *path)
{
    static unsigned char buf[65536];
    memset(buf, b, sizeof buf);
    while (n > 0) {
        size_t k = n < sizeof buf ? (size_t)n : sizeof buf;
        write_all(fd, buf, k, path);
        n -= k;
    }
}

/* The payload source: a file read in order, or zeros. */
typedef struct {
    int fd; /* -1: zeros */
    const char *name;
    unsigned char *buf;
} src_t;

/* Append `bytes` payload bytes at the current end of fd, whose length is
 * `at` so far. */
static void put_segment(src_t *src, int fd, uint64_t at, uint64_t bytes, const char *path)
{
    if (bytes == 0)
        return;
    if (src->fd < 0) {
        uint64_t end;
        if (!nf_add_u64(at, bytes, &end) || end > (uint64_t)INT64_MAX)
            die_io(path, "file size out of range", EFBIG);
        if (ftruncate(fd, (off_t)end) != 0)
            die_io(path, "ftruncate", errno);
        return;
    }
    while (bytes > 0) {
        size_t want = bytes < CHUNK ? (size_t)bytes : CHUNK;
        ssize_t r = read(src->fd, src->buf, want);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            die_io(src->name, "read", errno);
        }
        if (r == 0)
            die_io(src->name, "payload file ended early (did it shrink?)", 0);
        write_all(fd, src->buf, (size_t)r, path);
        bytes -= (uint64_t)r;
    }
}

static void close_out(int fd, size_t k)
{
    if (close(fd) != 0)
        die_io(outs[k].final, "close", errno);
}

static unsigned char *read_catalog(const char *path, size_t *len)
{
    int fd = strcmp(path, "-") == 0 ? 0 : open(path, O_RDONLY);
    if (fd < 0)
        die_io(path, "cannot open catalog", errno);
    size_t cap = 65536, n = 0;
    unsigned char *p = xmalloc(cap);
    for (;;) {
        if (n == cap) {
            if (cap > SIZE_MAX / 2)
                die_oom();
            cap *= 2;
            unsigned char *q = realloc(p, cap);
            if (!q)
                die_oom();
            p = q;
        }
        ssize_t r = read(fd, p + n, cap - n);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            die_io(path, "read", errno);
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    if (fd != 0)
        close(fd);
    *len = n;
    return p;
}

/* ---- main ------------------------------------------------------------------ */

int main(int argc, char **argv)
{
    enum { O_CATALOG = 256, O_JSONB, O_PAYLOAD, O_SEGMENTS, O_AID, O_PNAMES, O_PID, O_PINDEX, O_FILL };
    static const struct option opts[] = {
        {"catalog", required_argument, NULL, O_CATALOG},
        {"json-bytes", required_argument, NULL, O_JSONB},
        {"payload", required_argument, NULL, O_PAYLOAD},
        {"segments", required_argument, NULL, O_SEGMENTS},
        {"artifact-id", required_argument, NULL, O_AID},
        {"part-names", required_argument, NULL, O_PNAMES},
        {"part-id", required_argument, NULL, O_PID},
        {"part-index", required_argument, NULL, O_PINDEX},
        {"fill-byte", required_argument, NULL, O_FILL},
        {"output", required_argument, NULL, 'o'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *catalog_path = NULL, *payload_arg = NULL, *segments_arg = NULL;
    const char *pnames_arg = NULL, *pindex_arg = NULL, *entry = NULL;
    unsigned char aid[16], pid[16];
    int have_pid = 0, fill = 0, json_mode = 0; /* 0 default, 1 padded, 2 raw */
    uint64_t json_arg = 0;
    for (int i = 0; i < 16; i++)
        aid[i] = (unsigned char)(i + 1);

    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "ho:", opts, NULL)) != -1) {
        switch (c) {
        case O_CATALOG: catalog_path = optarg; break;
        case O_JSONB:
            if (strncmp(optarg, "raw:", 4) == 0) {
                json_mode = 2;
                if (!parse_u64(optarg + 4, &json_arg))
                    usage_error("--json-bytes: '%s' is not raw: and a decimal U64", optarg);
            } else {
                json_mode = 1;
                if (!parse_size(optarg, &json_arg))
                    usage_error("--json-bytes: '%s' is not a size", optarg);
            }
            break;
        case O_PAYLOAD: payload_arg = optarg; break;
        case O_SEGMENTS: segments_arg = optarg; break;
        case O_AID:
            if (!parse_id(optarg, aid))
                usage_error("--artifact-id: '%s' is not 32 hex digits", optarg);
            break;
        case O_PNAMES: pnames_arg = optarg; break;
        case O_PID:
            if (!parse_id(optarg, pid))
                usage_error("--part-id: '%s' is not 32 hex digits", optarg);
            have_pid = 1;
            break;
        case O_PINDEX: pindex_arg = optarg; break;
        case O_FILL:
            if (!parse_byte(optarg, &fill))
                usage_error("--fill-byte: '%s' is not a byte (0..255 or 0xHH)", optarg);
            break;
        case 'o': entry = optarg; break;
        case 'h': fputs(usage_text, stdout); return 0;
        default: usage_error("unknown option or missing argument: '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc)
        usage_error("unexpected operand '%s'", argv[optind]);
    if (!catalog_path)
        usage_error("--catalog is required");
    if (!entry || !*entry)
        usage_error("-o ENTRY is required");
    if (strcmp(entry, "-") == 0)
        usage_error("-o -: this tool writes files only");
    if (!have_pid)
        memcpy(pid, aid, 16);

    /* The payload source and its length. */
    src_t src = {.fd = -1, .name = NULL, .buf = NULL};
    uint64_t payload_len = 0;
    if (payload_arg && strncmp(payload_arg, "zero:", 5) == 0) {
        if (!parse_size(payload_arg + 5, &payload_len))
            usage_error("--payload: '%s' is not zero: and a size", payload_arg);
    }

    /* Segments (checked against the length once a file's size is known). */
    size_t nseg = 1;
    uint64_t *seg = NULL;
    if (segments_arg) {
        char **items = split_list(segments_arg, &nseg);
        seg = xmalloc(nseg * sizeof *seg);
        for (size_t i = 0; i < nseg; i++) {
            if (!parse_size(items[i], &seg[i]))
                usage_error("--segments: '%s' is not a size", items[i]);
            free(items[i]);
        }
        free(items);
    }
    size_t nparts = nseg - 1;

    char **pnames = NULL;
    if (pnames_arg) {
        size_t n;
        pnames = split_list(pnames_arg, &n);
        if (n != nparts)
            usage_error("--part-names gives %zu names for %zu parts", n, nparts);
        for (size_t i = 0; i < n; i++)
            if (!*pnames[i])
                usage_error("--part-names: name %zu is empty", i + 1);
    }
    uint64_t *pindex = NULL;
    if (pindex_arg) {
        size_t n;
        char **items = split_list(pindex_arg, &n);
        if (n != nparts)
            usage_error("--part-index gives %zu values for %zu parts", n, nparts);
        pindex = xmalloc(n * sizeof *pindex);
        for (size_t i = 0; i < n; i++) {
            if (!parse_u64(items[i], &pindex[i]))
                usage_error("--part-index: '%s' is not a decimal U64", items[i]);
            free(items[i]);
        }
        free(items);
    }

    /* Inputs. */
    size_t cat_len;
    unsigned char *cat = read_catalog(catalog_path, &cat_len);
    if (payload_arg && strncmp(payload_arg, "zero:", 5) != 0) {
        src.name = payload_arg;
        src.fd = open(payload_arg, O_RDONLY);
        if (src.fd < 0)
            die_io(payload_arg, "cannot open payload", errno);
        struct stat st;
        if (fstat(src.fd, &st) != 0)
            die_io(payload_arg, "stat", errno);
        if (!S_ISREG(st.st_mode))
            die_io(payload_arg, "payload is not a regular file", 0);
        payload_len = (uint64_t)st.st_size;
        src.buf = xmalloc(CHUNK);
    }
    if (!seg) {
        seg = xmalloc(sizeof *seg);
        seg[0] = payload_len;
    }
    uint64_t sum = 0;
    for (size_t i = 0; i < nseg; i++)
        if (!nf_add_u64(sum, seg[i], &sum))
            usage_error("--segments: the sum overflows U64");
    if (sum != payload_len)
        usage_error("--segments add up to %llu bytes, the payload has %llu",
                    (unsigned long long)sum, (unsigned long long)payload_len);

    /* Entry layout. */
    uint64_t header_json, text_len, pad_len = 0, fill_from, payload_start;
    if (json_mode == 1) {
        if (json_arg < cat_len)
            usage_error("--json-bytes %llu: the catalog is longer (%zu bytes)",
                        (unsigned long long)json_arg, cat_len);
        header_json = json_arg;
        pad_len = json_arg - cat_len;
    } else {
        header_json = json_mode == 2 ? json_arg : (uint64_t)cat_len;
    }
    text_len = json_mode == 2 ? (uint64_t)cat_len : cat_len + pad_len;
    if (!nf_add_u64(32, text_len, &fill_from) || !nf_align_up_u64(fill_from, 4096, &payload_start))
        usage_error("--json-bytes: the entry layout overflows U64");

    /* Output names. */
    n_outs = nseg;
    outs = calloc(n_outs, sizeof *outs);
    tmp_live = calloc(n_outs, sizeof *tmp_live);
    published = calloc(n_outs, sizeof *published);
    if (!outs || !tmp_live || !published)
        die_oom();
    outs[0].final = xasprintf("%s", entry);
    char *entry_dir = dirname_dup(entry);
    for (size_t i = 1; i < nseg; i++)
        outs[i].final = pnames ? xasprintf("%s/%s", entry_dir, pnames[i - 1])
                               : xasprintf("%s.part-%04zu", entry, i);
    install_signals();

    /* Entry. */
    int fd = open_temp(0);
    unsigned char hdr[32];
    static const unsigned char emagic[8] = {0x4e, 0x49, 0x4e, 0x46, 0x45, 0x52, 0x00, 0x03};
    memcpy(hdr, emagic, 8);
    nf_store_le64(hdr + 8, header_json);
    memcpy(hdr + 16, aid, 16);
    write_all(fd, hdr, 32, outs[0].final);
    write_all(fd, cat, cat_len, outs[0].final);
    write_fill(fd, ' ', pad_len, outs[0].final);
    if (json_mode != 2 || seg[0] > 0) {
        write_fill(fd, fill, payload_start - fill_from, outs[0].final);
        put_segment(&src, fd, payload_start, seg[0], outs[0].final);
    }
    close_out(fd, 0);

    /* Parts. */
    static const unsigned char pmagic[8] = {0x4e, 0x49, 0x4e, 0x50, 0x52, 0x54, 0x00, 0x03};
    for (size_t i = 1; i < nseg; i++) {
        fd = open_temp(i);
        memcpy(hdr, pmagic, 8);
        nf_store_le64(hdr + 8, pindex ? pindex[i - 1] : (uint64_t)i);
        memcpy(hdr + 16, pid, 16);
        write_all(fd, hdr, 32, outs[i].final);
        write_fill(fd, fill, PART_PAYLOAD_START - 32, outs[i].final);
        put_segment(&src, fd, PART_PAYLOAD_START, seg[i], outs[i].final);
        close_out(fd, i);
    }

    /* Publish: parts first, the entry last (spec 11.4). */
    for (size_t k = nseg; k-- > 0;) {
        size_t i = k == 0 ? 0 : nseg - k; /* 1, 2, ..., nseg-1, then 0 */
        if (rename(outs[i].tmp, outs[i].final) != 0)
            die_io(outs[i].final, "cannot rename into place", errno);
        tmp_live[i] = 0;
        published[i] = 1;
    }

    if (src.fd >= 0)
        close(src.fd);
    for (size_t i = 0; i < n_outs; i++) {
        free(outs[i].tmp);
        free(outs[i].final);
    }
    free(outs);
    outs = NULL;
    n_outs = 0;
    free((void *)tmp_live);
    free((void *)published);
    if (pnames) {
        for (size_t i = 0; i < nparts; i++)
            free(pnames[i]);
        free(pnames);
    }
    free(pindex);
    free(seg);
    free(entry_dir);
    free(cat);
    free(src.buf);
    return 0;
}
