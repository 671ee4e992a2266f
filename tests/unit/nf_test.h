/* nf_test.h — a tiny TAP producer for the C unit tests (tests/unit/t_*.c).
 * Each CHECK is one TAP test line; scripts/run-tests.sh counts them. */
#ifndef NF_TEST_H
#define NF_TEST_H
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static int nf_t_count, nf_t_failed;

#define CHECK(cond, ...) do {                                             \
        int ok_ = !!(cond);                                               \
        nf_t_count++;                                                     \
        if (!ok_) nf_t_failed++;                                          \
        printf("%s %d - ", ok_ ? "ok" : "not ok", nf_t_count);           \
        printf(__VA_ARGS__);                                              \
        printf("\n");                                                     \
        if (!ok_) printf("#   failed at %s:%d: %s\n", __FILE__, __LINE__, #cond); \
    } while (0)

#define CHECK_EQ_U64(got, want, ...) do {                                 \
        uint64_t g_ = (uint64_t)(got), w_ = (uint64_t)(want);             \
        CHECK(g_ == w_, __VA_ARGS__);                                     \
        if (g_ != w_) printf("#   got %" PRIu64 ", want %" PRIu64 "\n", g_, w_); \
    } while (0)

#define CHECK_STR(got, want, ...) do {                                    \
        const char *g_ = (got), *w_ = (want);                             \
        int eq_ = g_ && w_ && strcmp(g_, w_) == 0;                        \
        CHECK(eq_, __VA_ARGS__);                                          \
        if (!eq_) printf("#   got \"%s\", want \"%s\"\n", g_ ? g_ : "(null)", w_ ? w_ : "(null)"); \
    } while (0)

#define SKIP(why, ...) do { nf_t_count++; printf("ok %d - ", nf_t_count); \
        printf(__VA_ARGS__); printf(" # skip %s\n", why); } while (0)

/* Call at the end of main: prints the TAP plan, returns the exit status. */
static inline int nf_test_done(void)
{
    printf("1..%d\n", nf_t_count);
    return nf_t_failed ? 1 : 0;
}
#endif
