/* nf-mkcatalog — write a large synthetic catalog for the scale tests and
 * scripts/bench-catalog.sh (DESIGN 14: a 1,000,000-object catalog must
 * still work).
 *
 *   nf-mkcatalog [--digests] N FILE
 *
 * Writes to FILE (or '-' for stdout) the compact catalog text of one text
 * component with an empty config, N bf16 tensors of shape [1] ("o0000000",
 * 2 bytes each, at 256-byte aligned offsets), N bindings "text/p0000000"
 * (whole objects), no uses, one file whose payload ends with the last
 * object, and with --digests a metadata.integrity entry per object (the
 * SHA-256 of two zero bytes: frame it with `nf-mkartifact --payload
 * zero:SIZE`, SIZE printed on stderr, and every digest checks). The same N
 * gives the same bytes. About 150 bytes a record, 230 with digests.
 *
 * Standalone: libc only. Exit status: 0 ok, 2 usage, 3 I/O error.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROG "nf-mkcatalog"

/* SHA-256 of two zero bytes */
static const char ZZ[] = "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7";

int main(int argc, char **argv)
{
    bool digests = false;
    int i = 1;
    if (i < argc && !strcmp(argv[i], "--digests")) {
        digests = true;
        i++;
    }
    if (argc - i != 2) {
        fprintf(stderr, "usage: " PROG " [--digests] N FILE\n");
        return 2;
    }
    char *end = NULL;
    errno = 0;
    unsigned long long n = strtoull(argv[i], &end, 10);
    if (errno || !end || *end || n == 0 || n > 100000000ull) {
        fprintf(stderr, PROG ": N must be 1..100000000\n");
        return 2;
    }
    FILE *f = strcmp(argv[i + 1], "-") ? fopen(argv[i + 1], "w") : stdout;
    if (!f) {
        fprintf(stderr, PROG ": %s: %s\n", argv[i + 1], strerror(errno));
        return 3;
    }
    static char buf[1 << 20];
    setvbuf(f, buf, _IOFBF, sizeof buf);
    fputs("{\"components\":{\"text\":{\"config\":{}}},\"objects\":[", f);
    for (unsigned long long k = 0; k < n; k++)
        fprintf(f, "%s{\"id\":\"o%07llu\",\"kind\":\"tensor\",\"shape\":[1],\"format\":\"bf16\","
                   "\"layout\":\"contiguous_le_v1\",\"offset\":%llu,\"bytes\":2}",
                k ? "," : "", k, k * 256);
    fputs("],\"bindings\":{", f);
    for (unsigned long long k = 0; k < n; k++)
        fprintf(f, "%s\"text/p%07llu\":{\"object\":\"o%07llu\"}", k ? "," : "", k, k);
    unsigned long long payload = (n - 1) * 256 + 2;
    fprintf(f, "},\"uses\":[],\"files\":[{\"path\":null,\"payload_bytes\":%llu}]", payload);
    if (digests) {
        fputs(",\"metadata\":{\"integrity\":{\"sha256\":{", f);
        for (unsigned long long k = 0; k < n; k++)
            fprintf(f, "%s\"o%07llu\":\"%s\"", k ? "," : "", k, ZZ);
        fputs("}}}", f);
    }
    fputs("}", f);
    if (fflush(f) != 0 || ferror(f) || (f != stdout && fclose(f) != 0)) {
        fprintf(stderr, PROG ": write error: %s\n", strerror(errno));
        return 3;
    }
    fprintf(stderr, "%llu\n", payload);
    return 0;
}
