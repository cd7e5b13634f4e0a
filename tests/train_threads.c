/*
 * train_threads — the checksums and copies made on a PE's threads
 * (core/parallel.h: an in-memory snapshot's save and restore): at 1, 2, 3
 * and 8 threads, lengths from 0 to past several 4 MiB blocks (on and around
 * the block edges, odd offsets), a CRC continued from one of what came
 * before, every result equal to the one-thread sym__crc32c, every copied byte
 * equal and the poisoned guards past the end untouched.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/parallel.h"
#include "test.h"
#include "util/util.h"

#define MiB ((size_t)1 << 20)
#define POISON 0x5A

int main(void) {
    test_rng_t rng = test_rng(test_seed(), 0);
    size_t cap = 13 * MiB + 64;
    unsigned char *src = malloc(cap), *dst = malloc(cap + 64);
    if (!src || !dst) return 1;
    for (size_t i = 0; i < cap; i++) src[i] = (unsigned char)test_next(&rng);
    const size_t fixed[] = {0, 1, 4095, 4 * MiB - 1, 4 * MiB, 4 * MiB + 1, 8 * MiB, 12 * MiB + 7};
    const int threads[] = {1, 2, 3, 8};
    for (int t = 0; t < 4; t++) {
        sym__threads = threads[t];
        for (int k = 0; k < 14; k++) {
            size_t len = k < 8 ? fixed[k] : (size_t)(test_next(&rng) % (13 * MiB));
            size_t off = (size_t)(test_next(&rng) % 16);
            uint32_t seed = k & 1 ? (uint32_t)test_next(&rng) : 0;
            uint32_t want = sym__crc32c(seed, src + off, len);
            uint32_t got = sym__parallel_crc32c(seed, NULL, src + off, len);
            CHECK(got == want, "%d threads: CRC32C of %zu bytes from %08x: %08x, not %08x",
                  threads[t], len, seed, got, want);
            memset(dst, POISON, len + 64);
            got = sym__parallel_crc32c(seed, dst + 3, src + off, len);
            CHECK(got == want, "%d threads: the copying CRC32C of %zu bytes: %08x, not %08x",
                  threads[t], len, got, want);
            CHECK(!memcmp(dst + 3, src + off, len), "%d threads: the copying CRC32C of %zu bytes "
                  "copied wrong", threads[t], len);
            memset(dst, POISON, len + 64);
            sym__parallel_copy(dst + 1, src + off, len);
            CHECK(!memcmp(dst + 1, src + off, len), "%d threads: the copy of %zu bytes differs",
                  threads[t], len);
            for (size_t i = 0; i < 32; i++)
                CHECK(dst[1 + len + i] == POISON && dst[3 + len + i] == POISON,
                      "%d threads: a copy of %zu bytes wrote past its end", threads[t], len);
        }
    }
    printf("train_threads: ok\n");
    free(src);
    free(dst);
    return 0;
}
