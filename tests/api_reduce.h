/*
 * api_reduce.h — a reference for the reductions of every type the standard
 * lists (team reductions and the deprecated _to_all), shared by api_teamcoll
 * and api_legacy. Elements are handled through their size and kind (integer,
 * real, complex): inputs are generated straight into the type, and the
 * reference is computed wide (integers as 64-bit patterns, so wrap-around is
 * exact; reals and complexes in long double) in team order, then rounded to
 * the type. Integers and min/max must match exactly, sums and products of
 * reals within a tolerance scaled by the size of the terms.
 */
#ifndef SYM_API_REDUCE_H
#define SYM_API_REDUCE_H

#include <complex.h>
#include <math.h>

#include "api_test.h"

enum { K_INT, K_REAL, K_CPLX };
enum { O_and, O_or, O_xor, O_max, O_min, O_sum, O_prod };
static const char *const op_names[] = {"and", "or", "xor", "max", "min", "sum", "prod"};

#define KIND(T)                                                                      \
    _Generic((T)0, float: K_REAL, double: K_REAL, long double: K_REAL,               \
             float _Complex: K_CPLX, double _Complex: K_CPLX, default: K_INT)
#define SIGNED(T)                                                                    \
    _Generic((T)0, signed char: 1, short: 1, int: 1, long: 1, long long: 1,          \
             char: (char)-1 < 0, default: 0)

/* One (type, op) reduction: its element size and kind, and the call, through
 * a team (api_teamcoll) or an active set (api_legacy). g: generic form. */
typedef struct {
    const char *name;
    size_t es;
    int kind, sgn, op;
    int (*team_call)(shmem_team_t, void *, const void *, size_t, int g);
    void (*aset_call)(void *, const void *, int, int, int, int, void *, long *);
} red_t;

/* A value held wide: integers as 64-bit patterns (sign-extended for signed
 * types), reals and complexes as long double. */
typedef struct {
    uint64_t u;
    long double r;
    long double complex z;
} wide_t;

static wide_t load(const red_t *c, const void *p) {
    wide_t w = {0, 0, 0};
    if (c->kind == K_INT) {
        uint64_t u = 0;
        memcpy(&u, p, c->es);
        if (c->sgn && c->es < 8 && (u >> (8 * c->es - 1)) & 1) u |= ~0ull << (8 * c->es);
        w.u = u;
    } else if (c->kind == K_REAL) {
        w.r = c->es == 4 ? *(const float *)p : c->es == 8 ? *(const double *)p
                                                            : *(const long double *)p;
    } else {
        w.z = c->es == 8 ? *(const float complex *)p : *(const double complex *)p;
    }
    return w;
}

static void store(const red_t *c, void *p, wide_t w) {
    if (c->kind == K_INT) {
        memcpy(p, &w.u, c->es); /* little-endian: the low bytes */
    } else if (c->kind == K_REAL) {
        if (c->es == 4) *(float *)p = (float)w.r;
        else if (c->es == 8) *(double *)p = (double)w.r;
        else *(long double *)p = w.r;
    } else {
        if (c->es == 8) *(float complex *)p = (float complex)w.z;
        else *(double complex *)p = (double complex)w.z;
    }
}

/* Element i of world PE pe's input for reduction case (c, ncase), stored in the
 * type: full random bits where nothing can overflow (bitwise, min/max, and
 * unsigned types of int width or more), small values for signed sums and
 * products (signed overflow is undefined), reals in [-1, 1] ([0.5, 1.5] and
 * moduli near 1 for products). */
static void red_gen(const red_t *c, uint64_t seed, int purpose, int pe, int ncase, size_t i,
                    void *out) {
    test_rng_t r = test_rng(seed ^ (i * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)ncase << 44),
                            (uint64_t)pe + 1 + ((uint64_t)purpose << 32));
    uint64_t b = test_next(&r);
    double u = test_uniform(&r), v = test_uniform(&r);
    wide_t w = {0, 0, 0};
    int arith = c->op == O_sum || c->op == O_prod;
    if (c->kind == K_INT) {
        int small = arith && (c->sgn || c->es < sizeof(int));
        if (!small) {
            w.u = b;
        } else if (c->op == O_sum) {
            w.u = (uint64_t)(int64_t)((int)(u * 61) - 30); /* [-30, 30] */
        } else {
            int64_t x = 1 + (int64_t)(u * 3); /* +-[1, 3] */
            w.u = (uint64_t)((b & 1) && c->sgn ? -x : x);
        }
    } else if (c->kind == K_REAL) {
        w.r = c->op == O_prod ? 0.5 + u : 2 * u - 1;
    } else if (c->op == O_prod) {
        double m = 0.8 + 0.45 * u, a = 6.283185307179586 * v;
        w.z = m * cos(a) + I * (m * sin(a));
    } else {
        w.z = (2 * u - 1) + I * (2 * v - 1);
    }
    store(c, out, w);
}

static wide_t combine(const red_t *c, wide_t a, wide_t b) {
    wide_t w = a;
    switch (c->op) {
    case O_and: w.u = a.u & b.u; break;
    case O_or: w.u = a.u | b.u; break;
    case O_xor: w.u = a.u ^ b.u; break;
    case O_sum:
        w.u = a.u + b.u;
        w.r = a.r + b.r;
        w.z = a.z + b.z;
        break;
    case O_prod:
        w.u = a.u * b.u;
        w.r = a.r * b.r;
        w.z = a.z * b.z;
        break;
    case O_max:
    case O_min: {
        int bigger; /* b > a */
        if (c->kind == K_REAL) bigger = b.r > a.r;
        else if (c->sgn) bigger = (int64_t)b.u > (int64_t)a.u;
        else bigger = b.u > a.u;
        if ((c->op == O_max) == bigger) w = b;
        break;
    }
    }
    return w;
}

static double tolerance(const red_t *c) {
    size_t real_size = c->kind == K_CPLX ? c->es / 2 : c->es;
    return real_size == 4 ? 2e-6 : 1e-14;
}

/* Is `got` the reduction of `terms` (n of them, in team order)? */
static int reduced_ok(const red_t *c, const void *got_p, const wide_t *terms, int n,
                      char *why, size_t whylen) {
    wide_t ref = terms[0];
    long double mag = c->kind == K_CPLX ? cabsl(terms[0].z) : fabsl(terms[0].r);
    for (int k = 1; k < n; k++) {
        ref = combine(c, ref, terms[k]);
        mag += c->kind == K_CPLX ? cabsl(terms[k].z) : fabsl(terms[k].r);
    }
    /* the reference rounded to the type, as the library must store it */
    char refbytes[32];
    store(c, refbytes, ref);
    wide_t want = load(c, refbytes), got = load(c, got_p);
    if (c->kind == K_INT) {
        snprintf(why, whylen, "got 0x%" PRIx64 ", want 0x%" PRIx64, got.u, want.u);
        return got.u == want.u;
    }
    if (c->op == O_max || c->op == O_min) {
        snprintf(why, whylen, "got %.21Lg, want %.21Lg", got.r, want.r);
        return got.r == want.r;
    }
    long double scale = c->op == O_sum ? mag : n * (c->kind == K_CPLX ? cabsl(ref.z)
                                                                       : fabsl(ref.r)) + 1e-30L;
    long double err = c->kind == K_CPLX ? cabsl(got.z - ref.z) : fabsl(got.r - ref.r);
    if (c->kind == K_CPLX)
        snprintf(why, whylen, "got (%.17Lg, %.17Lg), want (%.17Lg, %.17Lg)", creall(got.z),
                 cimagl(got.z), creall(ref.z), cimagl(ref.z));
    else
        snprintf(why, whylen, "got %.21Lg, want %.21Lg", got.r, ref.r);
    return err <= tolerance(c) * scale;
}

#endif
