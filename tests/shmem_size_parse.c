/*
 * shmem_size_parse — the size strings of SYMTRAIN_SYMMETRIC_SIZE and every
 * other size setting (src/util/env.c): each accepted spelling gives exactly
 * its number of bytes, and every other spelling is refused — hexadecimal,
 * exponents, inf/nan, signs, fractions of a byte, unknown suffixes, values
 * past SIZE_MAX / 2 — rather than read as something the user did not mean.
 * Then random whole sizes written in every suffix round-trip. The whole
 * numbers and durations of the other settings (and symrun's options) too:
 * the range is enforced, nothing wraps, inf/nan/exponents/signs are refused.
 */
#include <limits.h>

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

/* sym__parse_int over [min, max]: want_ok says whether s is taken (as want). */
static void int_case(const char *s, long min, long max, int want_ok, long want) {
    long v = 12345;
    int ok = sym__parse_int(s, min, max, &v) == 0;
    if (ok != want_ok || (ok && v != want) || (!ok && v != 12345)) {
        fprintf(stderr, "FAIL: int '%s' in [%ld, %ld]: %s %ld\n", s, min, max,
                ok ? "taken as" : "refused, left", v);
        failures++;
    }
}

static void seconds_case(const char *s, int want_ok, double want) {
    double v = -1;
    int ok = sym__parse_seconds(s, &v) == 0;
    if (ok != want_ok || (ok && v != want)) {
        fprintf(stderr, "FAIL: seconds '%s': %s %g\n", s, ok ? "taken as" : "refused", v);
        failures++;
    }
}

static void numbers(void) {
    int_case("0", 0, 10, 1, 0);
    int_case("10", 0, 10, 1, 10);
    int_case("-3", -5, 5, 1, -3);
    int_case("11", 0, 10, 0, 0);
    int_case("-1", 0, 10, 0, 0);
    int_case("4294967295", 0, 1000000, 0, 0); /* once wrapped to -1 */
    int_case("9223372036854775807", 0, LONG_MAX, 1, LONG_MAX);
    int_case("9223372036854775808", 0, LONG_MAX, 0, 0);
    int_case("-9223372036854775808", LONG_MIN, 0, 1, LONG_MIN);
    int_case("99999999999999999999", 0, LONG_MAX, 0, 0);
    static const char *const no_int[] = {"", "-", "+1", " 1", "1 ", "0x10", "1e3", "1.0", "two", "--1"};
    for (size_t i = 0; i < sizeof no_int / sizeof *no_int; i++) int_case(no_int[i], -100, 100, 0, 0);
    seconds_case("30", 1, 30);
    seconds_case("0.5", 1, 0.5);
    seconds_case("1000000000", 1, 1e9);
    static const char *const no_s[] = {"0",  "0.0", "-1",  "inf", "nan", "1e3", "1000000001",
                                       ".5", "5.",  "+5", " 5",  "5 ",  "",    "0x10"};
    for (size_t i = 0; i < sizeof no_s / sizeof *no_s; i++) seconds_case(no_s[i], 0, 0);
}

int main(void) {
    numbers();
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
