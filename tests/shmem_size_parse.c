/*
 * shmem_size_parse — the size strings of SYMTRAIN_SYMMETRIC_SIZE and every
 * other size setting (src/util/env.c): each accepted spelling gives exactly
 * its number of bytes, and every other spelling is refused — hexadecimal,
 * exponents, inf/nan, signs, fractions of a byte, unknown suffixes, values
 * past SIZE_MAX / 2 — rather than read as something the user did not mean.
 * Then random whole sizes written in every suffix round-trip.
 */
#include "test.h"
#include "util/util.h"

static int failures;

static void good(const char *s, uint64_t want) {
    size_t v = 12345;
    int rc = sym__parse_size(s, &v);
    if (rc != 0 || v != want) {
        fprintf(stderr, "FAIL: '%s' gave rc %d, %zu; want %" PRIu64 "\n", s, rc, v, want);
        failures++;
    }
}

static void bad(const char *s) {
    size_t v = 12345;
    int rc = sym__parse_size(s, &v);
    if (rc == 0 || v != 12345) {
        fprintf(stderr, "FAIL: '%s' was taken as %zu; it is not a size\n", s, v);
        failures++;
    }
}

int main(void) {
    const uint64_t K = 1024, M = K * K, G = M * K, T = G * K;
    good("0", 0);
    good("12345", 12345);
    good("  4096\n", 4096); /* sysfs cache sizes end in a newline */
    good("64k", 64 * K);
    good("1536K", 1536 * K);
    good("3M", 3 * M);
    good("2.5MiB", 2 * M + M / 2);
    good("2.50m", 2 * M + M / 2);
    good("1G", G);
    good("1gb", G);
    good("1.5G", G + G / 2);
    good("2T", 2 * T);
    good("1.25TiB", T + T / 4);
    good("0.5K", 512);
    good("1.0", 1); /* a fraction of zero is a whole number */
    good("0.0009765625M", 1024); /* 2^-10 M, exactly */

    bad("");
    bad("   ");
    bad("0x10");  /* hexadecimal: strtod read it as 16 */
    bad("0X1p4"); /* hexadecimal float */
    bad("1e3");   /* an exponent: strtod read 1000 */
    bad("1E3K");
    bad("1.5");   /* one and a half bytes */
    bad("0.3K");  /* 307.2 bytes */
    bad("1.1M");
    bad("inf");
    bad("nan");
    bad("-1");
    bad("+1");
    bad(".5K");
    bad("5.K");
    bad("12Q");
    bad("1P");    /* no P: T is the largest */
    bad("1KK");
    bad("1 K");
    bad("1K 2");
    bad("512B");  /* B only after a K, M, G or T */
    bad("99999999999999999999999");
    bad("16777216T"); /* 2^64 bytes */
    bad("9223372036854775808"); /* more than SIZE_MAX / 2 */
    bad("8388608T");  /* 2^63 */

    /* Random whole sizes in every unit round-trip. */
    test_rng_t r = test_rng(test_seed(), 1);
    static const char *const unit[] = {"", "K", "M", "G", "T"};
    for (int i = 0; i < 10000; i++) {
        int u = (int)(test_next(&r) % 5);
        uint64_t x = test_next(&r) % (u == 0 ? UINT64_C(1) << 40 : UINT64_C(1) << 20);
        uint64_t want = x << (10 * u);
        char buf[64];
        snprintf(buf, sizeof buf, "%" PRIu64 "%s", x, unit[u]);
        good(buf, want);
        if (u > 0) { /* and half a unit more: a whole number of bytes */
            snprintf(buf, sizeof buf, "%" PRIu64 ".5%s", x, unit[u]);
            good(buf, want + (UINT64_C(1) << (10 * u - 1)));
        }
    }
    if (failures) {
        fprintf(stderr, "shmem_size_parse: %d failures\n", failures);
        return 1;
    }
    printf("shmem_size_parse: PASS (accepted spellings exact, %s)\n",
           "hex, exponents, inf/nan, signs, byte fractions, unknown suffixes refused");
    return 0;
}
