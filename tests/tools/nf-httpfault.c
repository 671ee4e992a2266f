/* nf-httpfault — a small plain-HTTP proxy on loopback that injects faults
 * between a client and a real web server, for the HTTP suites and
 * scripts/bench-remote.sh (test code, not product socket code).
 *
 *   nf-httpfault --free-port            print a free loopback TCP port
 *   nf-httpfault --probe HOST:PORT      exit 0 when HOST:PORT accepts
 *   nf-httpfault --upstream HOST:PORT --port-file F [--pid-file F] [--log F]
 *                [--rate BYTES_PER_S] [--lifetime S] [RULE...]
 *       listen on a free loopback port (written to --port-file), go to the
 *       background, and forward every request to the upstream on a fresh
 *       connection of its own ("Connection: close"), keeping the client's
 *       connection alive. --rate caps what each client connection receives
 *       (response bodies, bytes per second); --lifetime (default 600) ends
 *       the proxy however the suite ended. --log appends one line per
 *       request: "GET PATH range=R if_range=I auth=present|none -> STATUS
 *       [RULE]" (never an Authorization value).
 *
 * A RULE is KIND[=ARG][@PATTERN][#N|xN]: it applies to requests whose path
 * contains PATTERN (all when none), to the Nth such request only (#N) or to
 * the first N (xN; default: every one). The first rule that applies wins.
 *   cut=BYTES        close the connection after BYTES of the response body
 *   status=CODE[:S]  answer CODE (with "Retry-After: S" when given), no upstream
 *   full200          forward without Range and If-Range (the server answers 200)
 *   badrange         shift the response's Content-Range by one byte
 *   encoding         add "Content-Encoding: gzip" to the response
 *   longer=N         send N more body bytes than the range, Content-Length too
 *   shorter=N        send N fewer, Content-Length too
 *   bigtotal         a Content-Range total past U64
 *   redirect=PREFIX  302 to PREFIX followed by the request's path
 *   loop             302 to the request's own path
 *   trickle=BPS      the body at BPS bytes per second
 *   swap=SRC:DST     rename SRC over DST first (the file replaced between
 *                    two requests), then forward
 *   novalidator      drop ETag and Last-Modified from the response (an edge
 *                    that strips them)
 *   longetag=N       replace the response's ETag by a strong one of N bytes
 * Exit status: 0 ok, 1 the probe failed, 2 usage, 3 a socket error.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define PROG "nf-httpfault"
#define HDR_MAX 65536

typedef enum { R_CUT, R_STATUS, R_FULL200, R_BADRANGE, R_ENCODING, R_LONGER, R_SHORTER,
               R_BIGTOTAL, R_REDIRECT, R_LOOP, R_TRICKLE, R_SWAP, R_NOVALIDATOR, R_LONGETAG } rkind;

typedef struct {
    rkind kind;
    char *arg, *pattern, *text;
    long nth, first; /* #N, xN (0: not given) */
    long seen;       /* matching requests so far */
} rule;

static rule *rules;
static size_t n_rules;
static char up_host[64] = "127.0.0.1";
static int up_port;
static double rate;
static FILE *logf;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static void die(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, PROG ": ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(code);
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void sleep_s(double s)
{
    if (s <= 0)
        return;
    struct timespec t = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&t, NULL);
}

static int listen_any(int *port)
{
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0)
        return -1;
    int one = 1;
    setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t l = sizeof a;
    if (bind(s, (struct sockaddr *)&a, sizeof a) < 0 || listen(s, 128) < 0 ||
        getsockname(s, (struct sockaddr *)&a, &l) < 0) {
        close(s);
        return -1;
    }
    *port = ntohs(a.sin_port);
    return s;
}

static int connect_to(const char *host, int port)
{
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0)
        return -1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (inet_pton(AF_INET, host, &a.sin_addr) != 1 ||
        connect(s, (struct sockaddr *)&a, sizeof a) < 0) {
        close(s);
        return -1;
    }
    int one = 1;
    setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return s;
}

static int send_all(int s, const void *p, size_t n)
{
    const char *c = p;
    while (n) {
        ssize_t w = send(s, c, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Read a header block (through "\r\n\r\n") into buf; extra bytes read past
 * it stay in buf after *hlen. Returns bytes in buf, 0 at a clean EOF before
 * any byte, -1 on error. */
static ssize_t read_head(int s, char *buf, size_t cap, size_t *hlen)
{
    size_t n = 0;
    for (;;) {
        if (n >= 4) {
            char *e = memmem(buf, n, "\r\n\r\n", 4);
            if (e) {
                *hlen = (size_t)(e - buf) + 4;
                return (ssize_t)n;
            }
        }
        if (n == cap)
            return -1;
        ssize_t r = recv(s, buf + n, cap - n, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return n == 0 && r == 0 ? 0 : -1;
        n += (size_t)r;
    }
}

/* The value of header name in a header block (NUL-terminated lines with
 * "\r\n"), copied into out; false when absent. */
static bool header(const char *h, size_t hl, const char *name, char *out, size_t cap)
{
    size_t nl = strlen(name);
    const char *p = memchr(h, '\n', hl);
    while (p && (size_t)(p - h) < hl) {
        p++;
        if ((size_t)(h + hl - p) > nl + 1 && !strncasecmp(p, name, nl) && p[nl] == ':') {
            const char *v = p + nl + 1;
            while (*v == ' ')
                v++;
            const char *e = strstr(v, "\r\n");
            size_t k = e ? (size_t)(e - v) : strlen(v);
            if (k >= cap)
                k = cap - 1;
            memcpy(out, v, k);
            out[k] = 0;
            return true;
        }
        p = memchr(p, '\n', (size_t)(h + hl - p));
    }
    return false;
}

/* The header block h with header `name` removed (every occurrence). */
static size_t drop_header(char *h, size_t hl, const char *name)
{
    size_t nl = strlen(name);
    char *p = memchr(h, '\n', hl);
    while (p && (size_t)(p - h) < hl) {
        char *line = p + 1;
        char *e = memmem(line, (size_t)(h + hl - line), "\r\n", 2);
        if (!e)
            break;
        if ((size_t)(e - line) > nl && !strncasecmp(line, name, nl) && line[nl] == ':') {
            size_t cut = (size_t)(e + 2 - line);
            memmove(line, e + 2, (size_t)(h + hl - (e + 2)));
            hl -= cut;
            p = line - 1;
            continue;
        }
        p = e + 1;
    }
    return hl;
}

/* Insert "name: value\r\n" before the blank line ending h. */
static size_t add_header(char *h, size_t hl, size_t cap, const char *name, const char *value)
{
    char line[512];
    int k = snprintf(line, sizeof line, "%s: %s\r\n", name, value);
    if (k < 0 || hl + (size_t)k > cap)
        return hl;
    memmove(h + hl - 2 + k, h + hl - 2, 2);
    memcpy(h + hl - 2, line, (size_t)k);
    return hl + (size_t)k;
}

static rule *match(const char *path, char *tag, size_t tn)
{
    rule *hit = NULL;
    pthread_mutex_lock(&lock);
    /* every rule counts the requests its pattern matches, the first one
     * that applies wins */
    for (size_t i = 0; i < n_rules; i++) {
        rule *r = &rules[i];
        if (r->pattern && !strstr(path, r->pattern))
            continue;
        long k = ++r->seen;
        if (hit || (r->nth && k != r->nth) || (r->first && k > r->first))
            continue;
        hit = r;
        snprintf(tag, tn, " [%s]", r->text);
    }
    pthread_mutex_unlock(&lock);
    return hit;
}

static void logline(const char *method, const char *path, const char *hd, size_t hl, int status,
                    const char *tag)
{
    if (!logf)
        return;
    char range[128] = "-", ifr[300] = "-", auth[8];
    header(hd, hl, "Range", range, sizeof range);
    header(hd, hl, "If-Range", ifr, sizeof ifr);
    bool a = header(hd, hl, "Authorization", auth, sizeof auth);
    pthread_mutex_lock(&lock);
    fprintf(logf, "%s %s range=%s if_range=%s auth=%s -> %d%s\n", method, path, range, ifr,
            a ? "present" : "none", status, tag);
    fflush(logf);
    pthread_mutex_unlock(&lock);
}

/* Send n body bytes from up (some already in pre[0..np)) to the client at
 * the pace asked; stop after cut bytes (< 0: never). Returns 0, or -1 when
 * the client's connection must close. */
static int pump(int c, int up, const char *pre, size_t np, uint64_t n, long long cut, double bps,
                double *t0, uint64_t *sent)
{
    static __thread char buf[1 << 18];
    uint64_t done = 0;
    while (done < n) {
        size_t k;
        if (np) {
            k = np > n - done ? (size_t)(n - done) : np;
            memcpy(buf, pre, k);
            pre += k;
            np -= k;
        } else {
            size_t want = n - done > sizeof buf ? sizeof buf : (size_t)(n - done);
            if (bps > 0 && bps < (double)want)
                want = bps < 16 ? 1 : (size_t)(bps / 16);
            ssize_t r = recv(up, buf, want, 0);
            if (r < 0 && errno == EINTR)
                continue;
            if (r <= 0)
                return -1;
            k = (size_t)r;
        }
        if (cut >= 0 && done + k >= (uint64_t)cut) {
            size_t last = (size_t)((uint64_t)cut - done);
            if (last)
                send_all(c, buf, last);
            return -1;
        }
        for (size_t o = 0; o < k;) {
            size_t piece = k - o;
            if (bps > 0) {
                size_t step = bps < 16 ? 1 : (size_t)(bps / 16);
                if (piece > step)
                    piece = step;
                double due = *t0 + (double)(*sent + piece) / bps;
                sleep_s(due - now());
            }
            if (send_all(c, buf + o, piece) < 0)
                return -1;
            o += piece;
            *sent += piece;
        }
        done += k;
    }
    return 0;
}

static void *serve(void *arg)
{
    int c = (int)(intptr_t)arg;
    char *req = malloc(HDR_MAX), *resp = malloc(HDR_MAX + 1024), *body0 = malloc(HDR_MAX);
    double t0 = now();
    uint64_t sent = 0;
    int one = 1;
    setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    while (req && resp && body0) {
        size_t hl = 0;
        ssize_t got = read_head(c, req, HDR_MAX, &hl);
        if (got <= 0)
            break;
        char method[16] = "", path[4096] = "";
        if (sscanf(req, "%15s %4095s", method, path) != 2)
            break;
        char tag[300] = "";
        rule *r = match(path, tag, sizeof tag);
        rkind k = r ? r->kind : (rkind)-1;
        if (k == R_STATUS || k == R_REDIRECT || k == R_LOOP) {
            char loc[8192] = "", ra[64] = "";
            int code = k == R_STATUS ? atoi(r->arg) : 302;
            const char *colon = k == R_STATUS ? strchr(r->arg, ':') : NULL;
            if (colon)
                snprintf(ra, sizeof ra, "Retry-After: %s\r\n", colon + 1);
            if (k != R_STATUS)
                snprintf(loc, sizeof loc, "Location: %s%s\r\n", k == R_LOOP ? "" : r->arg, path);
            int n = snprintf(resp, HDR_MAX, "HTTP/1.1 %d Fault\r\nContent-Length: 6\r\n%s%s"
                             "Connection: keep-alive\r\n\r\nfault\n", code, ra, loc);
            logline(method, path, req, hl, code, tag);
            if (send_all(c, resp, (size_t)n) < 0)
                break;
            continue;
        }
        if (k == R_SWAP) {
            char src[4096];
            snprintf(src, sizeof src, "%s", r->arg);
            char *colon = strchr(src, ':');
            if (colon) {
                *colon = 0;
                rename(src, colon + 1);
            }
        }
        /* the request upstream: a connection of its own, closed after it */
        size_t ql = drop_header(req, hl, "Connection");
        ql = drop_header(req, ql, "Keep-Alive");
        if (k == R_FULL200) {
            ql = drop_header(req, ql, "Range");
            ql = drop_header(req, ql, "If-Range");
        }
        ql = add_header(req, ql, HDR_MAX, "Connection", "close");
        int up = connect_to(up_host, up_port);
        if (up < 0 || send_all(up, req, ql) < 0) {
            if (up >= 0)
                close(up);
            break;
        }
        size_t rl = 0;
        ssize_t rn = read_head(up, resp, HDR_MAX, &rl);
        if (rn <= 0) {
            close(up);
            break;
        }
        /* body bytes that came with the head, kept before the head is edited */
        size_t pre = (size_t)rn - rl;
        memcpy(body0, resp + rl, pre);
        int status = atoi(resp + 9);
        char cls[64] = "";
        bool has_cl = header(resp, rl, "Content-Length", cls, sizeof cls);
        unsigned long long cl = has_cl ? strtoull(cls, NULL, 10) : 0;
        char cr[128];
        if (k == R_BADRANGE && header(resp, rl, "Content-Range", cr, sizeof cr)) {
            unsigned long long a, b, t;
            if (sscanf(cr, "bytes %llu-%llu/%llu", &a, &b, &t) == 3) {
                char v[128];
                snprintf(v, sizeof v, "bytes %llu-%llu/%llu", a + 1, b + 1, t);
                rl = drop_header(resp, rl, "Content-Range");
                rl = add_header(resp, rl, HDR_MAX, "Content-Range", v);
            }
        }
        if (k == R_BIGTOTAL && header(resp, rl, "Content-Range", cr, sizeof cr)) {
            unsigned long long a, b, t;
            if (sscanf(cr, "bytes %llu-%llu/%llu", &a, &b, &t) == 3) {
                char v[128];
                snprintf(v, sizeof v, "bytes %llu-%llu/99999999999999999999999", a, b);
                rl = drop_header(resp, rl, "Content-Range");
                rl = add_header(resp, rl, HDR_MAX, "Content-Range", v);
            }
        }
        if (k == R_ENCODING)
            rl = add_header(resp, rl, HDR_MAX, "Content-Encoding", "gzip");
        if (k == R_LONGETAG) {
            size_t n = strtoul(r->arg, NULL, 10);
            char *v = n < HDR_MAX / 2 ? malloc(n + 1) : NULL;
            if (v) {
                memset(v, 'e', n);
                v[0] = v[n - 1] = '"';
                v[n] = 0;
                rl = drop_header(resp, rl, "ETag");
                rl = add_header(resp, rl, HDR_MAX, "ETag", v);
                free(v);
            }
        }
        if (k == R_NOVALIDATOR) {
            rl = drop_header(resp, rl, "ETag");
            rl = drop_header(resp, rl, "Last-Modified");
        }
        unsigned long long body = cl, extra = 0;
        if (k == R_LONGER)
            extra = strtoull(r->arg, NULL, 10);
        if (k == R_SHORTER) {
            unsigned long long s = strtoull(r->arg, NULL, 10);
            body = s < cl ? cl - s : 0;
        }
        rl = drop_header(resp, rl, "Connection");
        rl = add_header(resp, rl, HDR_MAX, "Connection", has_cl ? "keep-alive" : "close");
        if (has_cl && (k == R_LONGER || k == R_SHORTER)) {
            char v[32];
            snprintf(v, sizeof v, "%llu", body + extra);
            rl = drop_header(resp, rl, "Content-Length");
            rl = add_header(resp, rl, HDR_MAX, "Content-Length", v);
        }
        logline(method, path, req, hl, status, tag);
        if (send_all(c, resp, rl) < 0) {
            close(up);
            break;
        }
        double bps = k == R_TRICKLE ? atof(r->arg) : rate;
        long long cut = k == R_CUT ? atoll(r->arg) : -1;
        /* a trickle is paced from its own start; --rate per connection */
        double t1 = now();
        uint64_t s1 = 0;
        double *pt = k == R_TRICKLE ? &t1 : &t0;
        uint64_t *ps = k == R_TRICKLE ? &s1 : &sent;
        int pr;
        if (has_cl) {
            pr = pump(c, up, body0, pre, body, cut, bps, pt, ps);
            if (pr == 0 && extra) {
                char z[4096];
                memset(z, 'x', sizeof z);
                for (unsigned long long left = extra; pr == 0 && left;) {
                    size_t q = left > sizeof z ? sizeof z : (size_t)left;
                    pr = send_all(c, z, q);
                    left -= q;
                }
            }
        } else {
            pump(c, up, body0, pre, UINT64_MAX, cut, bps, pt, ps);
            pr = -1;
        }
        close(up);
        if (pr < 0)
            break;
    }
    free(req);
    free(resp);
    free(body0);
    close(c);
    return NULL;
}

static void parse_rule(const char *s)
{
    rule r = {0};
    r.text = strdup(s);
    char *t = strdup(s), *at = strchr(t, '@'), *cnt = strpbrk(at ? at : t, "#");
    char *x = at ? strrchr(at, 'x') : NULL;
    if (cnt) {
        r.nth = atol(cnt + 1);
        *cnt = 0;
    } else if (x && x[1] >= '0' && x[1] <= '9' && strspn(x + 1, "0123456789") == strlen(x + 1)) {
        r.first = atol(x + 1);
        *x = 0;
    }
    if (at) {
        *at = 0;
        r.pattern = strdup(at + 1);
    }
    char *eq = strchr(t, '=');
    if (eq) {
        *eq = 0;
        r.arg = strdup(eq + 1);
    }
    static const char *names[] = {"cut", "status", "full200", "badrange", "encoding", "longer",
                                  "shorter", "bigtotal", "redirect", "loop", "trickle", "swap",
                                  "novalidator", "longetag"};
    size_t i = 0;
    while (i < sizeof names / sizeof *names && strcmp(names[i], t))
        i++;
    if (i == sizeof names / sizeof *names)
        die(2, "unknown rule '%s'", s);
    r.kind = (rkind)i;
    bool needs = r.kind == R_CUT || r.kind == R_STATUS || r.kind == R_LONGER ||
                 r.kind == R_SHORTER || r.kind == R_REDIRECT || r.kind == R_TRICKLE ||
                 r.kind == R_SWAP || r.kind == R_LONGETAG;
    if (needs != (r.arg != NULL))
        die(2, "rule '%s': %s", s, needs ? "needs =ARG" : "takes no argument");
    free(t);
    rules = realloc(rules, (n_rules + 1) * sizeof *rules);
    rules[n_rules++] = r;
}

int main(int argc, char **argv)
{
    const char *port_file = NULL, *pid_file = NULL, *log_file = NULL;
    double lifetime = 600;
    if (argc == 2 && !strcmp(argv[1], "--free-port")) {
        int p, s = listen_any(&p);
        if (s < 0)
            die(3, "no free port: %s", strerror(errno));
        close(s);
        printf("%d\n", p);
        return 0;
    }
    if (argc == 3 && !strcmp(argv[1], "--probe")) {
        char host[64];
        int port;
        if (sscanf(argv[2], "%63[^:]:%d", host, &port) != 2)
            die(2, "--probe HOST:PORT");
        int s = connect_to(host, port);
        if (s < 0)
            return 1;
        close(s);
        return 0;
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--upstream") && v) {
            if (sscanf(v, "%63[^:]:%d", up_host, &up_port) != 2)
                die(2, "--upstream HOST:PORT");
            i++;
        } else if (!strcmp(a, "--port-file") && v) {
            port_file = v, i++;
        } else if (!strcmp(a, "--pid-file") && v) {
            pid_file = v, i++;
        } else if (!strcmp(a, "--log") && v) {
            log_file = v, i++;
        } else if (!strcmp(a, "--rate") && v) {
            rate = atof(v), i++;
        } else if (!strcmp(a, "--lifetime") && v) {
            lifetime = atof(v), i++;
        } else if (a[0] == '-') {
            die(2, "usage: see the comment at the top of tests/tools/nf-httpfault.c");
        } else {
            parse_rule(a);
        }
    }
    if (!up_port || !port_file)
        die(2, "--upstream and --port-file are needed");
    signal(SIGPIPE, SIG_IGN);
    int port, ls = listen_any(&port);
    if (ls < 0)
        die(3, "cannot listen: %s", strerror(errno));
    if (log_file && !(logf = fopen(log_file, "a")))
        die(3, "%s: %s", log_file, strerror(errno));
    /* the background: the suite goes on once the port file is there */
    pid_t child = fork();
    if (child < 0)
        die(3, "fork: %s", strerror(errno));
    if (child > 0) {
        if (pid_file) {
            FILE *f = fopen(pid_file, "w");
            if (f)
                fprintf(f, "%d\n", (int)child), fclose(f);
        }
        char tmp[4200];
        snprintf(tmp, sizeof tmp, "%s.tmp", port_file);
        FILE *f = fopen(tmp, "w");
        if (!f || fprintf(f, "%d\n", port) < 0 || fclose(f) != 0 || rename(tmp, port_file) < 0)
            die(3, "%s: %s", port_file, strerror(errno));
        return 0;
    }
    setsid();
    int dn = open("/dev/null", 0);
    if (dn >= 0) {
        dup2(dn, 0), dup2(dn, 1), dup2(dn, 2);
        close(dn);
    }
    alarm((unsigned)lifetime);
    for (;;) {
        int c = accept4(ls, NULL, NULL, SOCK_CLOEXEC);
        if (c < 0) {
            if (errno == EINTR)
                continue;
            return 3;
        }
        pthread_t t;
        pthread_attr_t at;
        pthread_attr_init(&at);
        pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
        if (pthread_create(&t, &at, serve, (void *)(intptr_t)c) != 0)
            close(c);
        pthread_attr_destroy(&at);
    }
}
