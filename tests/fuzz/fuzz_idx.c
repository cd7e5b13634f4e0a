/*
 * fuzz_idx — libFuzzer target for the Fashion-MNIST IDX loader
 * (src/train/data/idx.c, the production code, built with ASan and UBSan).
 *
 * One input is two files: a little-endian u16 L, then L bytes of the image
 * file, then the label file (the rest). Both are written to a scratch
 * directory under the names the loader looks for and loaded with
 * sym_dataset_load_fashion, as `symtrain train --data DIR` does; gzip or
 * plain is the loader's business (zlib reads both). A load that succeeds must
 * hold what it says: every sample is gathered (the loader's own
 * sym_dataset_gather), so a dimension that lied would read past the buffer
 * and the sanitizer would stop here. A load that fails must say why. Any
 * allocation above -malloc_limit_mb is reported by libFuzzer as a bug: a
 * header may not make the loader allocate what the file does not hold.
 *
 * Seeds: tests/fuzz/seeds/idx (valid pairs, plain and gzip; crafted headers).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <symtrain/data.h>
#include <symtrain/error.h>

#include "fuzz.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    const char *names[2] = {"train-images-idx3-ubyte", "train-labels-idx1-ubyte"};
    fuzz_scratch("fuzz_idx", names);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 2) return 0;
    size_t l = (size_t)data[0] | (size_t)data[1] << 8;
    if (l > size - 2) l = size - 2;
    fuzz_put(0, data + 2, l);
    fuzz_put(1, data + 2 + l, size - 2 - l);
    sym_dataset_t ds;
    int rc = sym_dataset_load_fashion(fuzz_dir, 1, &ds);
    if (rc) {
        if (!sym_last_error()[0]) abort(); /* a refusal says why */
        return 0;
    }
    if (ds.n < 1 || ds.dim < 1 || ds.classes != 10) abort();
    float *x = malloc(sizeof(float) * (size_t)ds.dim);
    if (!x) abort();
    for (int64_t i = 0; i < ds.n; i++) {
        int32_t y;
        sym_dataset_gather(&ds, &i, 1, x, &y);
        if (y < 0 || y > 9) abort();
    }
    free(x);
    sym_dataset_free(&ds);
    return 0;
}
