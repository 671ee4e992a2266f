/* fuzz_safetensors.c — libFuzzer harness over the safetensors header reader
 * (nf_safetensors.h): the 8-byte length, its cap, the strict JSON pre-scan,
 * dtypes, shapes, data_offsets, bounds and overlap.
 *
 * Input: a whole safetensors file, handed to nf_safetensors_open as an
 * in-memory regular file (a memfd opened through /proc/self/fd). A file
 * that opens must keep the reader's promises: every tensor inside the data
 * region, bytes = elements x dtype size, and every name found again.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_util.h"
#include "nf_safetensors.h"

int NF_FUZZ_ENTRY(safetensors)(const uint8_t *data, size_t size);
int NF_FUZZ_ENTRY(safetensors)(const uint8_t *data, size_t size)
{
    int fd = nf_fuzz_memfd(data, size);
    if (fd < 0)
        return 0;
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    nf_diags d = NF_DIAGS_INIT;
    nf_safetensors *st = nf_safetensors_open(path, &d);
    if (st) {
        NF_FUZZ_ASSERT(d.n == 0, "opened with %zu diagnostics", d.n);
        NF_FUZZ_ASSERT(st->file_size == size, "file size %llu, input %zu",
                       (unsigned long long)st->file_size, size);
        for (size_t i = 0; i < st->n_tensors; i++) {
            const nf_st_tensor *t = &st->tensors[i];
            NF_FUZZ_ASSERT(t->offset >= st->data_start && t->offset <= size &&
                               t->bytes <= size - t->offset,
                           "tensor %zu [%llu, +%llu) outside the %zu-byte file", i,
                           (unsigned long long)t->offset, (unsigned long long)t->bytes, size);
            NF_FUZZ_ASSERT(t->elem_bytes == nf_st_dtype_bytes(t->dtype) &&
                               (uint64_t)t->elements * t->elem_bytes == t->bytes,
                           "tensor %zu: %llu bytes for %llu elements of %s", i,
                           (unsigned long long)t->bytes, (unsigned long long)t->elements,
                           t->dtype);
            NF_FUZZ_ASSERT(t->rank <= NF_MAX_RANK, "rank %u", t->rank);
            const nf_st_tensor *f = nf_safetensors_find(st, t->name);
            NF_FUZZ_ASSERT(f != NULL, "tensor \"%s\" is not found by name", t->name);
        }
        (void)nf_safetensors_find(st, "");
        nf_safetensors_free(st);
    }
    nf_diags_free(&d);
    close(fd);
    return 0;
}
