/* nf_realdata.h — where the unit tests find ../shared/realdata (DESIGN 12):
 * $NF_REALDATA, else ../shared/realdata from the working directory (make
 * test runs in the repository root), else beside the repository found from
 * the test binary's own path (build/tests/t_x or build/san/tests/t_x).
 * Tests skip with a message when it is absent. */
#ifndef NF_REALDATA_H
#define NF_REALDATA_H
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static inline const char *nf_realdata_dir(void)
{
    static char dir[PATH_MAX];
    struct stat sb;
    const char *e = getenv("NF_REALDATA");
    if (e && *e) {
        snprintf(dir, sizeof dir, "%s", e);
        return stat(dir, &sb) == 0 ? dir : NULL;
    }
    if (stat("../shared/realdata", &sb) == 0 && S_ISDIR(sb.st_mode))
        return realpath("../shared/realdata", dir) ? dir : NULL;
    char exe[PATH_MAX - 64];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return NULL;
    exe[n] = 0;
    for (int up = 0; up < 5; up++) {
        char *slash = strrchr(exe, '/');
        if (!slash)
            break;
        *slash = 0;
        if (snprintf(dir, sizeof dir, "%s/../shared/realdata", exe) >= (int)sizeof dir)
            return NULL;
        if (stat(dir, &sb) == 0 && S_ISDIR(sb.st_mode))
            return dir;
    }
    return NULL;
}

/* Path of a file under realdata in buf, or NULL when absent. */
static inline const char *nf_realdata(const char *rel, char *buf, size_t n)
{
    const char *d = nf_realdata_dir();
    struct stat sb;
    if (!d)
        return NULL;
    if (snprintf(buf, n, "%s/%s", d, rel) >= (int)n)
        return NULL;
    return stat(buf, &sb) == 0 ? buf : NULL;
}
#endif
