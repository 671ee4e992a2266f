/* t_writer.c — the files-table plan (spec 2.3, 3.3) and catalog round trips. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nf_catalog.h"
#include "nf_io.h"
#include "nf_test.h"
#include "nf_util.h"
#include "nf_writer.h"
#include "nf_cli.h" /* nf_diags_print */

static void test_plan_spec_example(void)
{
    /* spec 3.3: json_bytes 65504 -> entry_payload_start 65536; a 32e9 limit
     * puts 31,999,934,464 payload bytes in the entry (exactly 32e9 bytes)
     * and the remaining 4096 in part 1. */
    nf_diags d = NF_DIAGS_INIT;
    nf_file *f = NULL;
    size_t n = 0;
    int rc = nf_plan_files(31999938560ull, 65536, 32000000000ull, "example.ninfer", &f, &n, &d);
    CHECK(rc == 0, "spec 3.3 plan succeeds");
    CHECK_EQ_U64(n, 2, "spec 3.3: two files");
    if (n == 2) {
        CHECK_EQ_U64(f[0].payload_bytes, 31999934464ull, "entry payload");
        CHECK_EQ_U64(65536 + f[0].payload_bytes, 32000000000ull, "entry is exactly 32e9 bytes");
        CHECK(f[0].path == NULL, "entry path is null");
        CHECK_STR(f[1].path, "example.ninfer.part-0001", "part name");
        CHECK_EQ_U64(f[1].payload_bytes, 4096, "part payload");
        CHECK_EQ_U64(f[1].logical_offset, 31999934464ull, "part logical offset");
    }
    for (size_t i = 0; i < n; i++)
        free(f[i].path);
    free(f);
    nf_diags_free(&d);
}

static void test_plan_edges(void)
{
    nf_diags d = NF_DIAGS_INIT;
    nf_file *f = NULL;
    size_t n = 0;
    /* fits exactly: eps + payload == limit -> one file */
    CHECK(nf_plan_files(8192, 4096, 12288, "m", &f, &n, &d) == 0 && n == 1,
          "eps + payload == limit gives one file");
    free(f);
    /* no limit: one file whatever the size */
    CHECK(nf_plan_files(UINT64_MAX - 8192, 4096, 0, "m", &f, &n, &d) == 0 && n == 1,
          "no limit: one file even near 2^64");
    free(f);
    /* eps + payload overflows U64 with a limit: no wrap to "one file"; it
     * would take 2^24 parts, past NF_MAX_PARTS, so it is refused */
    nf_diags_clear(&d);
    CHECK(nf_plan_files(UINT64_MAX - 100, 4096, 1ull << 40, "m", &f, &n, &d) == -1 &&
              nf_diags_count(&d, NF_C_USAGE) == 1,
          "payload near 2^64 with a 1 TiB limit: too many parts, refused");
    /* the same arithmetic below the cap adds up exactly */
    nf_diags_clear(&d);
    uint64_t big = (1ull << 40) * 1000 + 12345;
    CHECK(nf_plan_files(big, 4096, 1ull << 40, "m", &f, &n, &d) == 0, "a 1000 TiB payload plans");
    {
        uint64_t sum = 0, pcap = ((1ull << 40) - 4096) / 4096 * 4096;
        for (size_t i = 0; i < n; i++) {
            sum += f[i].payload_bytes;
            free(f[i].path);
        }
        CHECK_EQ_U64(sum, big, "parts add up to the payload");
        CHECK_EQ_U64(n, 1 + nf_ceil_div_u64(big - pcap, pcap), "entry plus ceil(rest/capacity) parts");
        free(f);
    }
    /* limit too small for the headers */
    nf_diags_clear(&d);
    CHECK(nf_plan_files(100000, 4096, 4096, "m", &f, &n, &d) == -1, "limit == eps refused");
    CHECK(nf_diags_count(&d, NF_C_USAGE) == 1, "as a usage error");
    nf_diags_clear(&d);
    CHECK(nf_plan_files(100000, 4096, 8191, "m", &f, &n, &d) == -1,
          "limit below eps + one page refused");
    /* part numbering: 4 digits, then as many as needed */
    nf_diags_clear(&d);
    CHECK(nf_plan_files(12000 * 4096ull, 4096, 8192, "m.ninfer", &f, &n, &d) == 0, "12000 pages");
    CHECK_EQ_U64(n, 12000, "one page per file");
    if (n == 12000) {
        CHECK_STR(f[9999].path, "m.ninfer.part-9999", "four digits");
        CHECK_STR(f[10000].path, "m.ninfer.part-10000", "five digits past 9999");
    }
    for (size_t i = 0; i < n; i++)
        free(f[i].path);
    free(f);
    nf_diags_free(&d);
}

static void test_roundtrip(void)
{
    const char *text =
        "{\"components\":{\"text\":{\"config\":{\"rope_theta\":1000000.0,\"eps\":1e-06,"
        "\"big\":123456789012345678901234567890,\"neg\":-0},\"resources\":{\"tok\":\"r\"}}},"
        "\"objects\":[{\"id\":\"w\",\"kind\":\"tensor\",\"shape\":[7168,5120],"
        "\"format\":\"q4_g64_fp16\",\"layout\":\"row_split_k128_v1\",\"offset\":0,"
        "\"bytes\":19496960},{\"id\":\"r\",\"kind\":\"resource\",\"encoding\":\"raw_bytes_v1\","
        "\"offset\":19496960,\"bytes\":5}],"
        "\"bindings\":{\"text/q\":{\"parts\":[{\"object\":\"w\",\"range\":[0,31457280]}]}},"
        "\"uses\":[{\"parameter\":\"text/q\",\"input\":\"text/x\",\"activation_policy\":\"A16Only\"}],"
        "\"files\":[{\"path\":null,\"payload_bytes\":19496965}],"
        "\"metadata\":{\"name\":\"t\",\"n\":1.50},\"provenance\":{\"x\":[1.0,2e3]}}";
    nf_diags d = NF_DIAGS_INIT;
    nf_catalog *c = nf_catalog_parse(text, strlen(text), NF_CAT_ARTIFACT, "m.ninfer", &d);
    CHECK(c && nf_diags_exit(&d) == 0, "spec 12.3 q4 object validates (%zu problems)", d.n);
    if (!c)
        return;
    nf_serialize_opts so = {c->files, c->n_files, false, false, NULL, false};
    size_t len;
    char *out = nf_catalog_serialize(c, &so, &len);
    CHECK(out && strstr(out, "\"config\":{\"rope_theta\":1000000.0,\"eps\":1e-06,"
                             "\"big\":123456789012345678901234567890,\"neg\":-0}"),
          "config numbers keep their text");
    CHECK(out && strstr(out, "\"metadata\":{\"name\":\"t\",\"n\":1.50}"), "metadata kept");
    CHECK(out && strstr(out, "\"provenance\":{\"x\":[1.0,2e3]}"), "provenance kept");
    CHECK(out && strcmp(out, text) == 0, "serialize(parse(x)) == x for a canonical catalog");
    free(out);
    nf_catalog_free(c);
    nf_diags_free(&d);
}

static int parse_code(const char *text, nf_code code)
{
    nf_diags d = NF_DIAGS_INIT;
    nf_catalog *c = nf_catalog_parse(text, strlen(text), NF_CAT_ARTIFACT, "m.ninfer", &d);
    int k = (int)nf_diags_count(&d, code);
    if (!k)
        nf_diags_print(&d, "t_writer", stdout);
    nf_catalog_free(c);
    nf_diags_free(&d);
    return k;
}

#define CAT(objs, extra)                                                                 \
    "{\"components\":{\"text\":{\"config\":{}}},\"objects\":[" objs "],\"bindings\":{}," \
    "\"uses\":[],\"files\":[{\"path\":null,\"payload_bytes\":1024}]" extra "}"
#define T(shape, fmt, lay, off, bytes)                                                     \
    "{\"id\":\"t\",\"kind\":\"tensor\",\"shape\":" shape ",\"format\":\"" fmt "\",\"layout\":\"" lay \
    "\",\"offset\":" off ",\"bytes\":" bytes "}"

static void test_rules(void)
{
    CHECK(parse_code(CAT(T("[2,4]", "bf16", "contiguous_le_v1", "0", "15"), ""), NF_C_SIZE) == 1,
          "bytes != encoded size -> size");
    CHECK(parse_code(CAT(T("[2,4]", "bf16", "contiguous_le_v1", "1e3", "16"), ""), NF_C_SCHEMA) == 1,
          "1e3 offset -> schema");
    CHECK(parse_code(CAT(T("[2,4]", "bf16", "contiguous_le_v1", "256.0", "16"), ""), NF_C_SCHEMA) == 1,
          "256.0 offset -> schema");
    CHECK(parse_code(CAT(T("[2,4]", "bf16", "contiguous_le_v1", "18446744073709551616", "16"), ""),
                     NF_C_RANGE) == 1,
          "2^64 offset -> range");
    CHECK(parse_code(CAT(T("[2,4]", "bf16", "contiguous_le_v1", "-1", "16"), ""), NF_C_RANGE) == 1,
          "negative offset -> range");
    CHECK(parse_code(CAT(T("[2,4]", "bf16", "contiguous_le_v1", "128", "16"), ""), NF_C_ALIGNMENT) == 1,
          "offset 128 -> alignment");
    CHECK(parse_code(CAT(T("[2,4]", "bf16", "contiguous_le_v1", "1024", "16"), ""), NF_C_BOUNDS) == 1,
          "past the payload -> bounds");
    CHECK(parse_code(CAT(T("[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]", "bf16", "contiguous_le_v1", "0", "2"), ""),
                     NF_C_SCHEMA) == 1,
          "rank 17 -> schema");
    CHECK(parse_code(CAT(T("[0]", "bf16", "contiguous_le_v1", "0", "2"), ""), NF_C_RANGE) == 1,
          "dimension 0 -> range");
    CHECK(parse_code(CAT(T("[4294967296,4294967296]", "bf16", "contiguous_le_v1", "0", "2"), ""),
                     NF_C_RANGE) == 1,
          "element count overflowing U64 -> range");
    CHECK(parse_code(CAT(T("[100,128]", "nvfp4", "block_scale_k16_m128x4_v1", "0", "2"), ""),
                     NF_C_ENCODING) == 1,
          "nvfp4 with N %% 128 != 0 -> encoding");
    CHECK(parse_code(CAT(T("[2,4]", "q4_g64_fp16", "contiguous_le_v1", "0", "2"), ""), NF_C_ENCODING) == 1,
          "q4 with contiguous_le_v1 -> encoding");
    CHECK(parse_code(CAT(T("[2,4]", "bf16", "contiguous_le_v1", "0", "16") ","
                         T("[2,4]", "bf16", "contiguous_le_v1", "256", "16"), ""),
                     NF_C_DUPLICATE_ID) == 1,
          "duplicate object ID -> duplicate-id");
    CHECK(parse_code(CAT("{\"id\":\"a\",\"kind\":\"resource\",\"encoding\":\"raw_bytes_v1\",\"offset\":0,\"bytes\":10},"
                         "{\"id\":\"b\",\"kind\":\"resource\",\"encoding\":\"raw_bytes_v1\",\"offset\":5,\"bytes\":10}", ""),
                     NF_C_OVERLAP) == 1,
          "overlapping objects -> overlap");
    CHECK(parse_code(CAT("{\"id\":\"a\",\"kind\":\"resource\",\"encoding\":\"raw_bytes_v1\",\"offset\":100,\"bytes\":10},"
                         "{\"id\":\"b\",\"kind\":\"resource\",\"encoding\":\"raw_bytes_v1\",\"offset\":5,\"bytes\":10}", ""),
                     NF_C_ORDER) == 1,
          "decreasing offsets -> order");
    CHECK(parse_code(CAT(T("[2,4]", "bf16", "contiguous_le_v1", "0", "16"),
                         ",\"metadata\":{\"integrity\":{\"sha256\":{\"t\":\"ABC\"}}}"),
                     NF_C_INTEGRITY) == 1,
          "malformed digest -> integrity");
}

/* nf_fdpool (nf_io.h): 12 files through a pool of 3 descriptors; each
 * pinned file reads its own bytes after being closed and reopened; a file
 * replaced by rename is -ESTALE, never another file's bytes. */
static void test_fdpool(void)
{
    char dir[] = "/tmp/t_writer_fdpool_XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "temporary directory");
    nf_fdpool *p = nf_fdpool_new(3);
    CHECK(p != NULL, "pool");
    nf_fdref *r[12];
    char path[12][64];
    for (int i = 0; i < 12; i++) {
        snprintf(path[i], sizeof path[i], "%s/f%02d", dir, i);
        int fd = open(path[i], O_RDWR | O_CREAT | O_TRUNC, 0600);
        unsigned char b[100];
        memset(b, i, sizeof b);
        CHECK(fd >= 0 && write(fd, b, sizeof b) == (ssize_t)sizeof b, "write f%02d", i);
        r[i] = nf_fdpool_add(p, path[i], fd);
        CHECK(r[i] != NULL, "add f%02d", i);
    }
    int open_now = 0;
    for (int fd = 0; fd < 1024; fd++) {
        char lk[64], tgt[256];
        snprintf(lk, sizeof lk, "/proc/self/fd/%d", fd);
        ssize_t n = readlink(lk, tgt, sizeof tgt - 1);
        if (n > 0) {
            tgt[n] = 0;
            open_now += strncmp(tgt, dir, strlen(dir)) == 0;
        }
    }
    CHECK_EQ_U64(open_now, 3, "at most cap descriptors stay open");
    for (int round = 0; round < 2; round++)
        for (int i = 0; i < 12; i++) {
            unsigned char b[10];
            ssize_t n = nf_fdref_pread(r[i], b, sizeof b, 90);
            CHECK(n == 10 && b[0] == i && b[9] == i, "f%02d reads its bytes (round %d)", i, round);
        }
    /* four pins at once: the pool grows past its cap while they are held */
    int fds[4];
    for (int i = 0; i < 4; i++)
        fds[i] = nf_fdref_pin(r[i]);
    CHECK(fds[0] >= 0 && fds[1] >= 0 && fds[2] >= 0 && fds[3] >= 0, "four pins");
    for (int i = 0; i < 4; i++)
        nf_fdref_unpin(r[i]);
    CHECK_EQ_U64(nf_fdref_size(r[5]), 100, "size");
    CHECK_STR(nf_fdref_path(r[5]), path[5], "path");
    /* f11 is closed now (least recently used); replace it */
    char tmp[80];
    snprintf(tmp, sizeof tmp, "%s/new", dir);
    int fd = open(tmp, O_RDWR | O_CREAT | O_TRUNC, 0600);
    CHECK(fd >= 0 && write(fd, "xxxxxxxxxx", 10) == 10, "replacement");
    close(fd);
    for (int i = 4; i < 10; i++) /* make sure f11 was evicted */
        nf_fdref_pread(r[i], tmp + 70, 1, 0);
    CHECK(rename(tmp, path[11]) == 0, "rename over f11");
    unsigned char b[10];
    CHECK_EQ_U64((uint64_t)-nf_fdref_pread(r[11], b, sizeof b, 0), ESTALE,
                 "a replaced file is -ESTALE");
    nf_fdpool_free(p);
    for (int i = 0; i < 12; i++)
        unlink(path[i]);
    rmdir(dir);
}

/* Sizes as coreutils reads them: K M G T and KiB ... powers of 1024, KB MB
 * GB TB powers of 1000; each refusal says why. */
static void test_sizes(void)
{
    static const struct {
        const char *s;
        uint64_t v;
    } ok[] = {{"0", 0}, {"4096", 4096}, {"1K", 1024}, {"1k", 1024}, {"1KiB", 1024},
              {"1KB", 1000}, {"1kB", 1000}, {"10M", 10485760}, {"10MiB", 10485760},
              {"10MB", 10000000}, {"2G", 2147483648ull}, {"2GB", 2000000000ull},
              {"3T", 3298534883328ull}, {"3TB", 3000000000000ull},
              {"18446744073709551615", UINT64_MAX}, {"16777215T", 16777215ull << 40},
              {"18446744TB", 18446744000000000000ull}};
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
        uint64_t v = 7;
        const char *why = nf_size_parse(ok[i].s, &v);
        CHECK(!why && v == ok[i].v, "size '%s' = %llu (%s)", ok[i].s,
              (unsigned long long)ok[i].v, why ? why : "ok");
    }
    static const struct {
        const char *s, *why;
    } bad[] = {{"", "empty"}, {"-1", "negative"}, {"-1K", "negative"},
               {"+1", "not a number"}, {" 1", "not a number"}, {"K", "not a number"},
               {"1.5G", "not a whole number"}, {"1X", "unknown suffix"},
               {"1KiBB", "unknown suffix"}, {"1Kib", "unknown suffix"}, {"1 K", "unknown suffix"},
               {"1P", "unknown suffix"}, {"18446744073709551616", "too large"},
               {"16777216T", "too large"}, {"18446745TB", "too large"}};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        uint64_t v = 7;
        const char *why = nf_size_parse(bad[i].s, &v);
        CHECK(why && !strncmp(why, bad[i].why, strlen(bad[i].why)) && v == 7,
              "size '%s' refused: %s", bad[i].s, why ? why : "(accepted)");
    }
}

static void test_relative(void)
{
    static const char *const cases[][3] = {
        {"/a/b/c", "/a/b", "c"},       {"/a/b", "/a/b", "."},        {"/a/x", "/a/b", "../x"},
        {"/x/y", "/a/b", "../../x/y"}, {"/a/bc", "/a/b", "../bc"},   {"/a/b", "/a/bc", "../b"},
        {"/a", "/", "a"},              {"/", "/a/b", "../.."},       {"/a/b/c/d", "/a", "b/c/d"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *r = nf_path_relative(cases[i][0], cases[i][1]);
        CHECK_STR(r, cases[i][2], "%s relative to %s", cases[i][0], cases[i][1]);
        free(r);
    }
}

int main(void)
{
    test_sizes();
    test_relative();
    test_fdpool();
    test_plan_spec_example();
    test_plan_edges();
    test_roundtrip();
    test_rules();
    return nf_test_done();
}
