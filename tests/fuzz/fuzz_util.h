/* fuzz_util.h — small helpers shared by the libFuzzer harnesses
 * (tests/fuzz/fuzz_*.c) and by tests/unit/t_regress.c, which includes the
 * harnesses to replay tests/fuzz/crashes/ without libFuzzer.
 *
 * Every harness defines its entry point through NF_FUZZ_ENTRY(name): under
 * libFuzzer (NF_FUZZ_REGRESS undefined) that is LLVMFuzzerTestOneInput;
 * t_regress.c defines NF_FUZZ_REGRESS and gets nf_fuzz_<name>_one instead,
 * so all harnesses link into one test program.
 */
#ifndef NF_FUZZ_UTIL_H
#define NF_FUZZ_UTIL_H

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#ifdef NF_FUZZ_REGRESS
#define NF_FUZZ_ENTRY(name) nf_fuzz_##name##_one
#else
#define NF_FUZZ_ENTRY(name) LLVMFuzzerTestOneInput
#endif

/* A property the harness asserts (not a crash of the code under test, but
 * a wrong answer): print what broke and abort, which libFuzzer reports as a
 * crash and keeps the input. */
#define NF_FUZZ_ASSERT(cond, ...)                                              \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "fuzz property failed at %s:%d: %s: ", __FILE__,  \
                    __LINE__, #cond);                                          \
            fprintf(stderr, __VA_ARGS__);                                      \
            fputc('\n', stderr);                                               \
            abort();                                                           \
        }                                                                      \
    } while (0)

/* An in-memory regular file holding data[0..n): a memfd (tmpfs-backed,
 * S_ISREG), so readers that insist on regular files accept it. Returns the
 * fd (seek position 0) or -1. */
static inline int nf_fuzz_memfd(const void *data, size_t n)
{
    int fd = memfd_create("nf-fuzz", MFD_CLOEXEC);
    if (fd < 0)
        return -1;
    const unsigned char *p = data;
    size_t left = n;
    while (left) {
        ssize_t w = write(fd, p, left);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            close(fd);
            return -1;
        }
        p += w;
        left -= (size_t)w;
    }
    if (lseek(fd, 0, SEEK_SET) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Write data[0..n) to path (created or truncated). Returns 0 or -1. */
static inline int nf_fuzz_write_file(const char *path, const void *data, size_t n)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return -1;
    const unsigned char *p = data;
    size_t left = n;
    while (left) {
        ssize_t w = write(fd, p, left);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            close(fd);
            return -1;
        }
        p += w;
        left -= (size_t)w;
    }
    return close(fd);
}

/* A private scratch directory, made once per process: under /dev/shm (RAM)
 * when it exists, else under $TMPDIR or /tmp. Removed at exit only as far
 * as the harness removes its own files; the directory name says "nf-fuzz". */
static inline const char *nf_fuzz_scratch_dir(void)
{
    static char dir[256];
    if (dir[0])
        return dir;
    const char *bases[] = {"/dev/shm", getenv("TMPDIR"), "/tmp"};
    for (size_t i = 0; i < sizeof bases / sizeof *bases; i++) {
        if (!bases[i] || !bases[i][0])
            continue;
        snprintf(dir, sizeof dir, "%s/nf-fuzz-XXXXXX", bases[i]);
        if (mkdtemp(dir))
            return dir;
    }
    dir[0] = 0;
    return NULL;
}

static inline uint32_t nf_fuzz_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

#endif
