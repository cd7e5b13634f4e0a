/*
 * util_copy — the copy of same-host puts and gets (src/util/copy.c).
 *
 * sym__copy_nt (streaming stores) and sym__copy at thresholds of 0, 1000
 * bytes and never: every size 0-320, and around each line and page multiple
 * and the measured thresholds (512 KiB - 4 MiB) up to 8 MiB + 1, at source and
 * destination offsets 0-63 apart within a line; random source bytes, a
 * destination poisoned with 64 guard bytes on each side that must stay, and
 * every byte compared. Then the threshold: the measurement returns a measured
 * power of two or its fallback (and the fallback when it cannot map its
 * buffers; a largest size that is no power-of-two multiple of the smallest
 * stays inside its buffers); shmem_init's setup takes SYMTRAIN_COPY_NT_MIN as given (0 turns
 * streaming off) and otherwise measures at the first copy of 512 KiB or more,
 * and copies on both sides of what it measured are right.
 */
#include "test.h"
#include "util/util.h"

#define GUARD 64
#define POISON 0xA5

static unsigned char *src_buf, *dst_buf;
static test_rng_t rng;

/* Copy n bytes from src_buf + so to dst_buf + GUARD + doff with fn; check the
 * copy and both guards. */
static void one(const char *what, void (*fn)(void *, const void *, size_t), size_t n,
                size_t so, size_t doff) {
    unsigned char *d = dst_buf + GUARD + doff;
    memset(dst_buf, POISON, n + doff + 2 * GUARD);
    fn(d, src_buf + so, n);
    size_t bad = SIZE_MAX;
    if (memcmp(d, src_buf + so, n) != 0)
        for (bad = 0; d[bad] == src_buf[so + bad]; bad++) {}
    CHECK(bad == SIZE_MAX, "%s of %zu bytes (source offset %zu, destination offset %zu) differs "
          "at byte %zu", what, n, so, doff, bad);
    for (size_t i = 0; i < GUARD + doff; i++)
        CHECK(dst_buf[i] == POISON, "%s of %zu bytes (offsets %zu, %zu) wrote %zu bytes before "
              "the destination", what, n, so, doff, GUARD + doff - i);
    for (size_t i = 0; i < GUARD; i++)
        CHECK(d[n + i] == POISON, "%s of %zu bytes (offsets %zu, %zu) wrote byte %zu past the end",
              what, n, so, doff, i);
}

static void copy_default(void *d, const void *s, size_t n) { sym__copy(d, s, n); }

/* Every function and threshold at size n and a few offset pairs (all 64x64
 * pairs below 4 KiB, where it is cheap). */
static void sizes_at(size_t n) {
    static const size_t pairs[][2] = {{0, 0}, {1, 0}, {0, 1}, {7, 33}, {63, 63}, {17, 48}, {48, 17}};
    static const size_t thresholds[] = {0, 1000, SIZE_MAX};
    for (size_t t = 0; t < SYM_ARRAY_LEN(thresholds); t++) {
        sym__copy_nt_min = thresholds[t];
        char what[64];
        snprintf(what, sizeof what, "sym__copy (threshold %zu)", thresholds[t]);
        if (n < 4096 && t == 0)
            for (size_t so = 0; so < 64; so += 5)
                for (size_t doff = 0; doff < 64; doff += 3) one(what, copy_default, n, so, doff);
        for (size_t p = 0; p < SYM_ARRAY_LEN(pairs); p++)
            one(what, copy_default, n, pairs[p][0], pairs[p][1]);
    }
    for (size_t p = 0; p < SYM_ARRAY_LEN(pairs); p++) {
        one("sym__copy_nt", sym__copy_nt, n, pairs[p][0], pairs[p][1]);
    }
}

int main(void) {
    uint64_t seed = test_seed();
    printf("util_copy: seed %llu\n", (unsigned long long)seed);
    rng = test_rng(seed, 0);
    const size_t max = ((size_t)8 << 20) + 1;
    src_buf = malloc(max + 64);
    dst_buf = malloc(max + 64 + 2 * GUARD);
    CHECK(src_buf && dst_buf, "out of memory");
    test_fill(src_buf, max + 64, &rng);

    /* ---- the copies ---- */
    for (size_t n = 0; n <= 320; n++) sizes_at(n);
    static const size_t bases[] = {4096, 65536, (size_t)512 << 10, (size_t)1 << 20,
                                   (size_t)2 << 20, (size_t)4 << 20, (size_t)8 << 20};
    static const long deltas[] = {-65, -64, -63, -1, 0, 1, 63};
    for (size_t b = 0; b < SYM_ARRAY_LEN(bases); b++)
        for (size_t k = 0; k < SYM_ARRAY_LEN(deltas); k++)
            if ((long)bases[b] + deltas[k] >= 0 && bases[b] + deltas[k] <= max)
                sizes_at(bases[b] + deltas[k]);
    sizes_at(max);

    /* ---- the threshold ---- */
    double tc, ts;
    size_t lo = (size_t)64 << 10, hi = (size_t)1 << 20, v = sym__copy_measure(lo, hi, 12345, &tc, &ts);
    CHECK(v == 12345 || (v >= lo && v <= hi && (v & (v - 1)) == 0),
          "the measurement gave %zu: neither its fallback nor a power of two from %zu to %zu", v,
          lo, hi);
    CHECK(tc > 0 && ts > 0, "the measurement reports times of %g and %g us", tc, ts);
    printf("measured from 64 KiB to 1 MiB: %zu (cached memcpy %.1f us, streaming %.1f us at the "
           "last size)\n", v, tc, ts);
    CHECK_EQ_INT(sym__copy_measure(lo, (size_t)1 << 62, 777, &tc, &ts), 777);
    /* hi not a power-of-two multiple of lo (half of a 6 MiB L3 is 3 MiB): the
     * confirmation at twice 128 KiB once copied past the 2 x 192 KiB mapping. */
    uint32_t crc = sym__crc32c(0, src_buf, max + 64); /* a mapping it may land next to */
    v = sym__copy_measure(lo, 3 * lo, 999, &tc, &ts);
    CHECK(v == 999 || v == lo || v == 2 * lo, "the measurement up to 192 KiB gave %zu", v);
    CHECK(sym__crc32c(0, src_buf, max + 64) == crc, "the measurement wrote outside its buffers");

    unsetenv("SYMTRAIN_COPY_NT_MIN");
    sym__copy_init();
    size_t before = sym__copy_nt_min;
    CHECK(before >= ((size_t)512 << 10), "before measuring, copies from %zu bytes stream", before);
    one("the first large sym__copy", copy_default, (size_t)512 << 10, 3, 5);
    size_t after = sym__copy_nt_min;
    CHECK(after >= ((size_t)512 << 10), "after measuring, copies from %zu bytes stream", after);
    for (size_t n = (size_t)256 << 10; n <= ((size_t)8 << 20); n *= 2) /* both sides of it */
        for (long dn = -1; dn <= 1; dn++) one("sym__copy (measured)", copy_default, n + dn, 5, 60);
    printf("shmem_init's threshold: %zu before the first large copy, %zu after\n", before, after);
    sym__copy_init(); /* a second shmem_init keeps what was measured */
    CHECK_EQ_INT(sym__copy_nt_min, after);
    setenv("SYMTRAIN_COPY_NT_MIN", "64K", 1);
    sym__copy_init();
    CHECK_EQ_INT(sym__copy_nt_min, 65536);
    one("sym__copy (SYMTRAIN_COPY_NT_MIN=64K)", copy_default, 65536 + 7, 9, 1);
    setenv("SYMTRAIN_COPY_NT_MIN", "0", 1);
    sym__copy_init();
    CHECK(sym__copy_nt_min == SIZE_MAX, "SYMTRAIN_COPY_NT_MIN=0 left the threshold at %zu",
          sym__copy_nt_min);
    /* CRC32C: the check value, the copy that checksums, two pieces' CRCs joined */
    CHECK(sym__crc32c(0, "123456789", 9) == 0xE3069283u, "CRC32C of \"123456789\" is %08x",
          sym__crc32c(0, "123456789", 9));
    for (int t = 0; t < 200; t++) {
        size_t len = (size_t)(test_next(&rng) % 100000);
        size_t cut = len ? (size_t)(test_next(&rng) % len) : 0;
        size_t off = (size_t)(test_next(&rng) % 8);
        uint32_t whole = sym__crc32c(0, src_buf + off, len);
        memset(dst_buf, 0xA5, len + 16);
        CHECK(sym__crc32c_copy(0, dst_buf + 3, src_buf + off, len) == whole, "crc32c_copy of %zu",
              len);
        CHECK(!memcmp(dst_buf + 3, src_buf + off, len) && dst_buf[3 + len] == 0xA5,
              "crc32c_copy of %zu bytes copied wrong", len);
        uint32_t a = sym__crc32c(0, src_buf + off, cut);
        uint32_t b = sym__crc32c(0, src_buf + off + cut, len - cut);
        CHECK(sym__crc32c_combine(a, b, len - cut) == whole, "crc32c_combine at %zu of %zu", cut, len);
    }
    printf("util_copy: ok\n");
    free(src_buf), free(dst_buf);
    return 0;
}
