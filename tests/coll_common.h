/*
 * coll_common.h — shared pieces of the collectives tests: every PE can compute
 * every PE's input from the seed (so references need no communication), an
 * fp64 reference reduction, tolerances per type, and a check that all PEs hold
 * the same bits.
 */
#ifndef SYM_COLL_COMMON_H
#define SYM_COLL_COMMON_H

#include <math.h>
#include <shmem.h>
#include <shmemx.h>

#include "../src/coll/half.h"
#include "shmem_test.h"

static const char *const dtype_name[] = {"fp32", "fp64", "fp16", "bf16", "int32", "int64"};
static const char *const op_name[] = {"sum", "avg", "min", "max", "prod"};

/* Value of element i of PE p's input: integers in a small range, floats in
 * [-1, 1] (products: [0.5, 1.5] so they neither vanish nor overflow). Stored in
 * the dtype's own format; *v gets the exact value as a double. */
static void gen_elem(uint64_t seed, int p, size_t i, shmemx_dtype_t dt, shmemx_op_t op, void *out,
                     double *v) {
    test_rng_t r = test_rng(seed ^ (i * 0x9E3779B97F4A7C15ull), (uint64_t)p + 1);
    double u = test_uniform(&r);
    int prod = op == SHMEMX_PROD;
    switch (dt) {
    case SHMEMX_INT32:
    case SHMEMX_INT64: {
        long long x = prod ? (long long)(u * 5) - 2 : (long long)(u * 201) - 100;
        if (prod && x == 0) x = 1;
        *v = (double)x;
        if (dt == SHMEMX_INT32)
            *(int32_t *)out = (int32_t)x;
        else
            *(int64_t *)out = x;
        return;
    }
    default: break;
    }
    double x = prod ? 0.5 + u : 2 * u - 1;
    switch (dt) {
    case SHMEMX_FLOAT32: *(float *)out = (float)x; *v = (float)x; return;
    case SHMEMX_FLOAT64: *(double *)out = x; *v = x; return;
    case SHMEMX_FLOAT16: {
        uint16_t h = sym__f32_to_f16((float)x);
        *(uint16_t *)out = h;
        *v = sym__f16_to_f32(h);
        return;
    }
    case SHMEMX_BFLOAT16: {
        uint16_t h = sym__f32_to_bf16((float)x);
        *(uint16_t *)out = h;
        *v = sym__bf16_to_f32(h);
        return;
    }
    default: return;
    }
}

static double get_elem(const void *buf, size_t i, shmemx_dtype_t dt) {
    switch (dt) {
    case SHMEMX_FLOAT32: return ((const float *)buf)[i];
    case SHMEMX_FLOAT64: return ((const double *)buf)[i];
    case SHMEMX_FLOAT16: return sym__f16_to_f32(((const uint16_t *)buf)[i]);
    case SHMEMX_BFLOAT16: return sym__bf16_to_f32(((const uint16_t *)buf)[i]);
    case SHMEMX_INT32: return ((const int32_t *)buf)[i];
    case SHMEMX_INT64: return (double)((const int64_t *)buf)[i];
    default: return NAN;
    }
}

/* Unit roundoff of each type (0 for integers: exact). */
static double unit_roundoff(shmemx_dtype_t dt) {
    switch (dt) {
    case SHMEMX_FLOAT32: return 0x1p-24;
    case SHMEMX_FLOAT64: return 0x1p-53;
    case SHMEMX_FLOAT16: return 0x1p-11;
    case SHMEMX_BFLOAT16: return 0x1p-8;
    default: return 0;
    }
}

/* Check element i of a reduction of n PEs' inputs: got vs the fp64 reference.
 * Sums and products may differ by one rounding per combining step plus the
 * final rounding to the type; min and max are exact; integers are exact. */
static void check_reduced(double got, const double *terms, int n, shmemx_dtype_t dt,
                          shmemx_op_t op, const char *what, size_t i) {
    double ref = terms[0], mag = fabs(terms[0]);
    for (int p = 1; p < n; p++) {
        switch (op) {
        case SHMEMX_SUM:
        case SHMEMX_AVG: ref += terms[p]; mag += fabs(terms[p]); break;
        case SHMEMX_PROD: ref *= terms[p]; mag *= fabs(terms[p]); break;
        case SHMEMX_MIN: ref = terms[p] < ref ? terms[p] : ref; break;
        case SHMEMX_MAX: ref = terms[p] > ref ? terms[p] : ref; break;
        default: break;
        }
    }
    if (op == SHMEMX_AVG) {
        if (dt == SHMEMX_INT32 || dt == SHMEMX_INT64)
            ref = (double)((long long)ref / n);
        else {
            ref /= n;
            mag /= n;
        }
    }
    double u = unit_roundoff(dt);
    double tol = (op == SHMEMX_MIN || op == SHMEMX_MAX) ? 0 : (n + 2) * u * mag;
    if (dt == SHMEMX_FLOAT16) tol += 0x1p-24; /* subnormal spacing */
    CHECK(fabs(got - ref) <= tol, "%s: element %zu = %.9g, reference %.9g (tolerance %.3g)", what,
          i, got, ref, tol);
}

/* Every PE of the world must hold the same bytes: compare a hash through an
 * all-gather. */
__attribute__((unused)) static void check_same_everywhere(const void *buf, size_t bytes, const char *what) {
    uint64_t h = 0xcbf29ce484222325ull;
    const unsigned char *c = buf;
    for (size_t i = 0; i < bytes; i++) h = (h ^ c[i]) * 0x100000001b3ull;
    int n = shmem_n_pes();
    uint64_t *all = malloc((size_t)n * sizeof *all);
    CHECK(all, "out of memory");
    CHECK_EQ_INT(shmemx_allgather(SHMEM_TEAM_WORLD, all, &h, 1, SHMEMX_INT64), 0);
    for (int p = 0; p < n; p++)
        CHECK(all[p] == h, "%s: PE %d's result differs from PE %d's", what, p, shmem_my_pe());
    free(all);
}

#endif
