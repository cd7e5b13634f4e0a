/*
 * env.c — reading settings from the environment. A malformed value is an error
 * that names the variable; it is never silently replaced by a default.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* Decimal digits [s, e) as a uint64; -1 when they do not fit. */
static int decimal(const char *s, const char *e, uint64_t *out) {
    uint64_t v = 0;
    for (; s < e; s++)
        if (__builtin_mul_overflow(v, 10, &v) ||
            __builtin_add_overflow(v, (uint64_t)(*s - '0'), &v))
            return -1;
    *out = v;
    return 0;
}

/* The grammar: digits, an optional fraction ".digits", an optional K, M, G
 * or T (powers of 1024, either case) optionally followed by "i" and/or "B",
 * blanks around. No sign, no hexadecimal, no exponent, no inf or nan (strtod
 * would take them all), and the value must be a whole number of bytes:
 * "1.5" and "0.3K" are refused, "1.5K" (1536) is not. Computed exactly in
 * integers: x.f * 2^k is whole when 10^n (n fraction digits) divides f * 2^k. */
int sym__parse_size(const char *s, size_t *out) {
    if (!s) return -1;
    while (isspace((unsigned char)*s)) s++;
    const char *p = s;
    while (isdigit((unsigned char)*p)) p++;
    const char *int_end = p, *frac = p, *frac_end = p;
    if (p == s) return -1;
    if (*p == '.') {
        frac = ++p;
        while (isdigit((unsigned char)*p)) p++;
        frac_end = p;
        if (frac == frac_end) return -1;
    }
    int shift = 0;
    switch (toupper((unsigned char)*p)) {
    case 'K': shift = 10; break;
    case 'M': shift = 20; break;
    case 'G': shift = 30; break;
    case 'T': shift = 40; break;
    default: break;
    }
    if (shift) {
        p++;
        if (*p == 'i' || *p == 'I') p++;
        if (*p == 'b' || *p == 'B') p++;
    }
    while (isspace((unsigned char)*p)) p++;
    if (*p) return -1;

    uint64_t whole, bytes;
    if (decimal(s, int_end, &whole) || whole > (UINT64_MAX >> shift)) return -1;
    bytes = whole << shift;
    while (frac_end > frac && frac_end[-1] == '0') frac_end--; /* "2.50" is "2.5" */
    int n = (int)(frac_end - frac);
    if (n) {
        /* f / 10^n * 2^shift = (f / 5^n) * 2^(shift - n): whole only if 5^n
         * divides f and, when n > shift, 2^(n - shift) divides the quotient. */
        uint64_t f, five = 1;
        if (n > 27 || decimal(frac, frac_end, &f)) return -1; /* 5^27 < 2^64 < 5^28 */
        for (int i = 0; i < n; i++) five *= 5;
        if (f % five) return -1;
        f /= five;
        if (n > shift) {
            if (f & ((UINT64_C(1) << (n - shift)) - 1)) return -1;
            f >>= n - shift;
        } else {
            if (f > (UINT64_MAX >> (shift - n))) return -1;
            f <<= shift - n;
        }
        if (__builtin_add_overflow(bytes, f, &bytes)) return -1;
    }
    if (bytes > SIZE_MAX / 2) return -1;
    *out = (size_t)bytes;
    return 0;
}

size_t sym__env_size(const char *name, size_t dflt) {
    const char *s = getenv(name);
    if (!s || !*s) return dflt;
    size_t v;
    if (sym__parse_size(s, &v) != 0)
        sym__fatal("environment",
                   "%s='%s' is not a size: write a whole number of bytes, or a number with a "
                   "K, M, G or T suffix (powers of 1024), e.g. %s=512M or %s=1.5G; "
                   "hexadecimal, exponents and fractions of a byte are not taken",
                   name, s, name, name);
    return v;
}

/* ---- numbers, durations, choices ---- */

int sym__parse_int(const char *s, long min, long max, long *out) {
    if (!s) return -1;
    const char *p = s;
    int neg = *p == '-';
    if (neg) p++;
    const char *digits = p;
    while (isdigit((unsigned char)*p)) p++;
    uint64_t mag;
    if (p == digits || *p || decimal(digits, p, &mag)) return -1;
    if (neg ? mag > (uint64_t)LONG_MAX + 1 : mag > (uint64_t)LONG_MAX) return -1;
    long v = neg ? (long)(0 - mag) : (long)mag;
    if (v < min || v > max) return -1;
    *out = v;
    return 0;
}

int sym__parse_seconds(const char *s, double *out) {
    if (!s) return -1;
    const char *p = s;
    while (isdigit((unsigned char)*p)) p++;
    if (p == s) return -1;
    if (*p == '.') {
        const char *frac = ++p;
        while (isdigit((unsigned char)*p)) p++;
        if (p == frac) return -1;
    }
    if (*p) return -1;
    double v = strtod(s, NULL); /* only digits and one point got here */
    if (!(v > 0) || v > SYM_MAX_SECONDS) return -1;
    *out = v;
    return 0;
}

long sym__env_int(const char *name, long dflt, long min, long max) {
    const char *s = getenv(name);
    if (!s || !*s) return dflt;
    long v;
    if (sym__parse_int(s, min, max, &v) != 0) {
        char unset[48] = ""; /* a default outside the range stands for "not given" */
        if (dflt >= min && dflt <= max) snprintf(unset, sizeof unset, "; unset, it is %ld", dflt);
        sym__fatal("environment", "%s='%s' is not a whole number from %ld to %ld%s", name, s,
                   min, max, unset);
    }
    return v;
}

double sym__env_seconds(const char *name, double dflt) {
    const char *s = getenv(name);
    if (!s || !*s) return dflt;
    double v;
    if (sym__parse_seconds(s, &v) != 0)
        sym__fatal("environment", "%s='%s' is not a duration: write a number of seconds above "
                   "0 and at most %.0f, e.g. %s=30 or %s=0.5 (no sign, exponent, inf or nan); "
                   "unset, it is %g",
                   name, s, SYM_MAX_SECONDS, name, name, dflt);
    return v;
}

int sym__env_choice(const char *name, const char *const *choices, int dflt) {
    const char *s = getenv(name);
    if (!s || !*s) return dflt;
    char list[256] = "";
    size_t n = 0;
    for (int i = 0; choices[i]; i++) {
        if (!strcmp(s, choices[i])) return i;
        if (n < sizeof list)
            n += (size_t)snprintf(list + n, sizeof list - n, "%s%s",
                                  i ? (choices[i + 1] ? ", " : " or ") : "", choices[i]);
    }
    sym__fatal("environment", "%s='%s' is not one of %s%s%s", name, s, list,
               dflt >= 0 ? "; unset, it is " : "", dflt >= 0 ? choices[dflt] : "");
}

int sym__env_flag(const char *name, int dflt) {
    static const char *const bits[] = {"0", "1", NULL};
    return sym__env_choice(name, bits, dflt ? 1 : 0);
}

const char *sym__env_first(const char *const *names) {
    for (; *names; names++) {
        const char *s = getenv(*names);
        if (s && *s) return *names;
    }
    return NULL;
}

char *sym__fmt_size(size_t bytes, char *buf, size_t len) {
    static const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024 && u < 4) {
        v /= 1024;
        u++;
    }
    if (u == 0)
        snprintf(buf, len, "%zu B", bytes);
    else
        snprintf(buf, len, "%.1f %s", v, unit[u]);
    return buf;
}
