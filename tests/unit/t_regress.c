/* t_regress.c — replay every input the fuzzers ever crashed on
 * (tests/fuzz/crashes/<harness>-*) through the same code paths as the
 * libFuzzer harnesses, which this file includes; each input runs in a child
 * process, and one TAP line says it finished without a signal or a failed
 * property. Under `make test SANITIZE=1` the replay runs with ASan and
 * UBSan, as the fuzzers did.
 *
 * The crash directory is found from this source file's location (or
 * NF_FUZZ_CRASHES); fuzz_gguf's inputs are replayed only when the GGUF
 * reader is built.
 */
#define NF_FUZZ_REGRESS 1

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nf_test.h"

#include "../fuzz/fuzz_catalog.c"
#include "../fuzz/fuzz_reader.c"
#include "../fuzz/fuzz_safetensors.c"
#include "../fuzz/fuzz_gguf.c"

typedef int (*fuzz_fn)(const uint8_t *, size_t);

static const struct {
    const char *prefix;
    fuzz_fn fn;
} harnesses[] = {
    {"reader-", nf_fuzz_reader_one},
    {"catalog-", nf_fuzz_catalog_one},
    {"safetensors-", nf_fuzz_safetensors_one},
    {"gguf-", nf_fuzz_gguf_one},
};

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static unsigned char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 4096, len = 0;
    unsigned char *buf = malloc(cap);
    while (buf) {
        size_t r = fread(buf + len, 1, cap - len, f);
        len += r;
        if (len < cap)
            break;
        unsigned char *nb = realloc(buf, cap * 2);
        if (!nb) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = nb;
        cap *= 2;
    }
    fclose(f);
    *n = len;
    return buf;
}

/* Run fn on the file in a child; returns a description of the failure or
 * NULL when it ran clean. */
static const char *replay(fuzz_fn fn, const char *path, char *why, size_t whylen)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(why, whylen, "fork failed");
        return why;
    }
    if (pid == 0) {
        size_t n = 0;
        unsigned char *data = slurp(path, &n);
        if (!data)
            _exit(97);
        /* stdout belongs to the TAP stream: the harness speaks on stderr */
        fn(data, n);
        free(data);
        exit(0); /* atexit handlers remove the harness's scratch files */
    }
    int st = 0;
    while (waitpid(pid, &st, 0) < 0)
        ;
    if (WIFSIGNALED(st)) {
        snprintf(why, whylen, "killed by signal %d", WTERMSIG(st));
        return why;
    }
    if (WEXITSTATUS(st) != 0) {
        snprintf(why, whylen, "exit status %d", WEXITSTATUS(st));
        return why;
    }
    return NULL;
}

int main(void)
{
    char dir[4096];
    const char *env = getenv("NF_FUZZ_CRASHES");
    if (env && *env) {
        snprintf(dir, sizeof dir, "%s", env);
    } else {
        /* __FILE__ is tests/unit/t_regress.c, relative to the repository */
        snprintf(dir, sizeof dir, "%s", __FILE__);
        char *slash = strrchr(dir, '/');
        if (slash)
            *slash = 0;
        else
            snprintf(dir, sizeof dir, ".");
        strncat(dir, "/../fuzz/crashes", sizeof dir - strlen(dir) - 1);
    }
    DIR *dh = opendir(dir);
    if (!dh) {
        SKIP("no crash directory", "replay of fuzzer crash inputs in %s", dir);
        return nf_test_done();
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;
    while ((de = readdir(dh))) {
        if (de->d_name[0] == '.')
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            char **nn = realloc(names, cap * sizeof *names);
            if (!nn)
                break;
            names = nn;
        }
        names[n] = strdup(de->d_name);
        if (names[n])
            n++;
    }
    closedir(dh);
    qsort(names, n, sizeof *names, cmp_names);
    size_t ran = 0;
    for (size_t i = 0; i < n; i++) {
        char path[8192];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        struct stat sb;
        if (stat(path, &sb) < 0 || !S_ISREG(sb.st_mode))
            continue;
        fuzz_fn fn = NULL;
        for (size_t h = 0; h < sizeof harnesses / sizeof *harnesses; h++)
            if (strncmp(names[i], harnesses[h].prefix, strlen(harnesses[h].prefix)) == 0)
                fn = harnesses[h].fn;
        if (!fn) {
            if (strncmp(names[i], "gguf-", 5) == 0)
                SKIP("the GGUF reader is not built", "%s", names[i]);
            else if (strcmp(names[i], "README") != 0)
                CHECK(0, "%s: no harness for this name (want reader-, catalog-, safetensors- "
                         "or gguf-)", names[i]);
            continue;
        }
        char why[128];
        const char *bad = replay(fn, path, why, sizeof why);
        CHECK(bad == NULL, "%s replays clean%s%s", names[i], bad ? ": " : "", bad ? bad : "");
        ran++;
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    if (ran == 0)
        SKIP("no crash inputs yet", "replay of fuzzer crash inputs in %s", dir);
    return nf_test_done();
}
