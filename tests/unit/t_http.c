/* t_http.c — the URL rules of nf_http.h (ninfer(5) Artifacts over HTTP):
 * what is printed of a URL, a part's URL beside its entry, hosts compared;
 * and nf_rstream over local files (nf_rfile.h): pieces in order, chunks of
 * at most the buffer, a file that ends inside a piece. Transfers themselves
 * are tested against a real nginx in tests/http*.bats. */
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "nf_http.h"
#include "nf_io.h"
#include "nf_rfile.h"
#include "nf_test.h"

static void check_display(const char *url, const char *want)
{
    char *d = nf_url_display(url);
    CHECK_STR(d, want, "display %s", url);
    free(d);
}

static void check_sibling(const char *url, const char *name, const char *want)
{
    char *d = nf_url_sibling(url, name);
    CHECK_STR(d, want, "part %s beside %s", name, url);
    free(d);
}

static void test_urls(void)
{
    CHECK(nf_is_url("http://h/x") && nf_is_url("HTTPS://h/x") && !nf_is_url("ftp://h/x") &&
              !nf_is_url("m.ninfer") && !nf_is_url("http:/x") && !nf_is_url("-"),
          "http:// and https:// are URLs, nothing else");
    /* query strings, fragments and credentials never printed */
    check_display("https://user:pw@hub.example:8443/a/m.ninfer?X-Amz-Signature=s#f",
                  "https://hub.example:8443/a/m.ninfer");
    check_display("http://h/m.ninfer", "http://h/m.ninfer");
    check_display("http://a@b@h/x?y", "http://h/x");
    check_display("http://h?q=1", "http://h");
    /* the last segment replaced, percent-encoded, the query dropped */
    check_sibling("https://h/r/main/m.ninfer?download=1", "m.ninfer.part-0001",
                  "https://h/r/main/m.ninfer.part-0001");
    check_sibling("http://h/dir/m%20x.ninfer", "m x+é.ninfer.part-0002",
                  "http://h/dir/m%20x%2B%C3%A9.ninfer.part-0002");
    check_sibling("http://h", "p", "http://h/p");
    check_sibling("http://h/", "a~b_c-d.e", "http://h/a~b_c-d.e");
    check_sibling("http://u:p@h:81/x/y", "%/?#", "http://u:p@h:81/x/%25%2F%3F%23");
    char *b = nf_url_basename("https://h/a/b%20c.ninfer?x=1");
    CHECK_STR(b, "b%20c.ninfer", "basename");
    free(b);
    CHECK(nf_url_same_origin("https://Hub.Example/a", "https://hub.example:443/b"),
          "hosts compare without case, a default port as the scheme's");
    CHECK(!nf_url_same_origin("https://hub.example/a", "https://hub.example:8443/b"),
          "another port is another origin");
    CHECK(!nf_url_same_origin("https://hub.example/a", "http://hub.example/b"),
          "another scheme is another origin");
    CHECK(!nf_url_same_origin("https://hub.example/a", "https://cdn.example/a"),
          "another host is another host");
    CHECK(!nf_url_same_origin("https://evil@hub.example.attacker/a", "https://hub.example/a"),
          "userinfo is no host");
    CHECK(!nf_url_same_origin("http://h:80x/a", "http://h/a"), "a malformed port matches nothing");
    CHECK(nf_url_same_origin("http://[::1]:8/a", "http://[::1]:8/b"), "IPv6 literals");
    CHECK(!nf_url_same_origin("http://[::1]:8/a", "http://[::1]/b"), "IPv6 literals, ports apart");
}

/* Two local files read in order through nf_rstream: pieces across both,
 * chunks never over 4 MiB, every byte in place; then a piece past the end. */
static void test_rstream_local(void)
{
    char a[] = "/tmp/t_http_aXXXXXX", bn[] = "/tmp/t_http_bXXXXXX";
    int fa = mkstemp(a), fb = mkstemp(bn);
    size_t na = 5u << 20, nb = 1000;
    unsigned char *da = malloc(na), *db = malloc(nb);
    for (size_t i = 0; i < na; i++)
        da[i] = (unsigned char)(i * 7 + (i >> 9));
    for (size_t i = 0; i < nb; i++)
        db[i] = (unsigned char)(255 - i);
    CHECK(fa >= 0 && fb >= 0 && nf_write_all(fa, da, na) == 0 && nf_write_all(fb, db, nb) == 0,
          "fixtures");
    close(fa);
    close(fb);
    nf_fdpool *pool = nf_fdpool_new(2);
    nf_rerr e;
    nf_rfile *ra = nf_rfile_open(a, pool, NULL, false, &e), *rb = nf_rfile_open(bn, pool, NULL,
                                                                             false, &e);
    CHECK(ra && rb && !nf_rfile_is_remote(ra), "local byte sources");
    uint64_t sz = 0;
    CHECK(nf_rfile_size(ra, &sz) && sz == na, "a local file's size at open");
    nf_rpiece p[3] = {{ra, 100, na - 200}, {rb, 0, 0}, {rb, 10, 990}};
    nf_rstream *s = nf_rstream_new(p, 3, NULL);
    size_t piece, len, got[3] = {0, 0, 0}, maxlen = 0;
    uint64_t off;
    const void *buf;
    int bad = 0, r;
    while ((r = nf_rstream_next(s, &piece, &off, &buf, &len, &e)) > 0) {
        const unsigned char *q = buf, *src = piece == 0 ? da : db;
        bad |= memcmp(q, src + off, len) != 0;
        bad |= off != p[piece].off + got[piece];
        got[piece] += len;
        if (len > maxlen)
            maxlen = len;
    }
    CHECK(r == 0 && !bad, "every byte in order");
    CHECK(got[0] == na - 200 && got[1] == 0 && got[2] == 990, "every piece whole");
    CHECK(maxlen <= (4u << 20), "chunks of at most 4 MiB (%zu)", maxlen);
    nf_rstream_free(s);
    nf_rpiece past = {rb, 900, 200};
    s = nf_rstream_new(&past, 1, NULL);
    r = nf_rstream_next(s, &piece, &off, &buf, &len, &e);
    CHECK(r == -1 && e.kind == NF_RE_SHORT, "a file that ends inside the range: NF_RE_SHORT");
    nf_rstream_free(s);
    CHECK(!nf_rfile_open("/nonexistent/x", pool, NULL, false, &e) && e.kind == NF_RE_MISSING,
          "a missing file");
    CHECK(!nf_rfile_open("/tmp", pool, NULL, false, &e) && e.kind == NF_RE_NOTREG,
          "a directory is no byte source");
    CHECK(nf_rfile_pin(ra, &e) >= 0, "a local file's descriptor, pinned");
    nf_rfile_unpin(ra);
    nf_rfile_close(ra);
    nf_rfile_close(rb);
    nf_fdpool_free(pool);
    unlink(a);
    unlink(bn);
    free(da);
    free(db);
}

int main(void)
{
    test_urls();
    test_rstream_local();
    return nf_test_done();
}
