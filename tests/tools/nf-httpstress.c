/* nf-httpstress — many threads reading one URL at once through one nf_http
 * client (nf_http.h): streamed requests given up half way, requests
 * cancelled at once, whole preads (large ones cut into parallel requests),
 * every byte compared with the local copy the server serves. For the
 * client's own threading (tests/http.bats; run it under the sanitizers).
 *
 *   nf-httpstress URL FILE [THREADS [ROUNDS]]
 *
 * Exit status: 0 every byte right, 1 a mismatch or a failed read, 2 usage.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nf_http.h"

static nf_http *h;
static const char *url;
static unsigned char *ref;
static size_t reflen;
static int rounds = 60;

static void *worker(void *arg)
{
    unsigned seed = (unsigned)(size_t)arg;
    nf_hfile *f = nf_hfile_new(h, url, false);
    unsigned char *buf = malloc(1u << 21);
    for (int i = 0; f && buf && i < rounds; i++) {
        size_t off = (size_t)rand_r(&seed) % reflen, n = (size_t)rand_r(&seed) % (1u << 21);
        if (off + n > reflen)
            n = reflen - off;
        nf_rerr e;
        if (i % 3 == 0) {
            unsigned char win[65536];
            nf_hreq *r = nf_hreq_start(f, off, n, win, sizeof win);
            const void *p;
            ssize_t k;
            size_t got = 0;
            while (got < n / 2 && (k = nf_hreq_read(r, &p, &e)) > 0) {
                if (memcmp(p, ref + off + got, (size_t)k) != 0) {
                    fprintf(stderr, "nf-httpstress: streamed bytes differ at %zu\n", off + got);
                    exit(1);
                }
                got += (size_t)k;
            }
            nf_hreq_free(r);
        } else if (i % 3 == 1) {
            nf_hreq_free(nf_hreq_start(f, off, n, buf, n));
        } else {
            ssize_t r = nf_hfile_pread(f, buf, n, off, &e);
            if (r != (ssize_t)n || memcmp(buf, ref + off, n) != 0) {
                fprintf(stderr, "nf-httpstress: pread at %zu: %s\n", off, r < 0 ? e.msg : "bytes differ");
                exit(1);
            }
        }
    }
    free(buf);
    nf_hfile_free(f);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 3 || argc > 5) {
        fprintf(stderr, "usage: nf-httpstress URL FILE [THREADS [ROUNDS]]\n");
        return 2;
    }
    url = argv[1];
    int threads = argc > 3 ? atoi(argv[3]) : 8;
    if (argc > 4)
        rounds = atoi(argv[4]);
    FILE *fp = fopen(argv[2], "rb");
    if (!fp || fseek(fp, 0, SEEK_END) != 0 || (reflen = (size_t)ftell(fp)) == 0)
        return 2;
    rewind(fp);
    ref = malloc(reflen);
    if (!ref || fread(ref, 1, reflen, fp) != reflen)
        return 2;
    fclose(fp);
    nf_http_opts o = {0};
    o.retries = -1;
    o.jobs = 4;
    h = nf_http_new(&o);
    if (!h || threads < 1 || threads > 64)
        return 2;
    pthread_t t[64];
    for (int i = 0; i < threads; i++)
        pthread_create(&t[i], NULL, worker, (void *)(size_t)(i + 1));
    for (int i = 0; i < threads; i++)
        pthread_join(t[i], NULL);
    nf_http_stats st;
    nf_http_get_stats(h, &st);
    printf("%llu requests, every byte right\n", (unsigned long long)st.requests);
    nf_http_free(h);
    free(ref);
    return 0;
}
