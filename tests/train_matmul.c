/*
 * train_matmul — matrix products against a double-precision reference: the
 * configured sym_gemm (OpenBLAS or the built-in kernel) and the built-in
 * blocked kernel itself, for all four transpose combinations, shapes around and
 * beyond the kernel's block sizes (64 / 256 / 1024), padded leading dimensions,
 * alpha and beta (beta = 0 must overwrite NaNs); then sym_matmul on tensor
 * views, and its shape errors.
 *
 * Error bound per element: |c - ref| <= 4 k eps32 * sum_p |a_ip b_pj| (plus the
 * beta term), the standard bound for a k-term fp32 dot product, with 4x slack.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <symtrain/symtrain.h>

#include "test.h"
#include "train/internal.h"

static test_rng_t rng;

typedef void (*gemm_fn)(int, int, int, int, int, float, const float *, int, const float *, int,
                        float, float *, int);

static float *rand_mat(size_t n) {
    float *m = malloc(n * sizeof *m);
    CHECK(m != NULL, "out of memory");
    for (size_t i = 0; i < n; i++) m[i] = (float)(2 * test_uniform(&rng) - 1);
    return m;
}

static void check_one(const char *name, gemm_fn fn, int ta, int tb, int m, int n, int k, float alpha,
                      float beta) {
    /* Stored shapes: A is (m,k) or (k,m) if ta; B is (k,n) or (n,k) if tb; pad the rows. */
    int ar = ta ? k : m, ac = ta ? m : k, br = tb ? n : k, bc = tb ? k : n;
    int lda = ac + 3, ldb = bc + 1, ldc = n + 2;
    float *A = rand_mat((size_t)ar * lda + 1), *Bm = rand_mat((size_t)br * ldb + 1);
    float *C = rand_mat((size_t)m * ldc + 1), *C0 = malloc(((size_t)m * ldc + 1) * sizeof *C0);
    if (beta == 0.0f) /* beta = 0 must not read C: poison it */
        for (size_t i = 0; i < (size_t)m * ldc; i++) C[i] = NAN;
    memcpy(C0, C, ((size_t)m * ldc + 1) * sizeof *C0);
    fn(ta, tb, m, n, k, alpha, A, lda, Bm, ldb, beta, C, ldc);
    for (int i = 0; i < m; i++)
        for (int j = 0; j < ldc; j++) {
            size_t at = (size_t)i * ldc + j;
            if (j >= n) { /* padding is left alone */
                CHECK(memcmp(&C[at], &C0[at], sizeof(float)) == 0,
                      "%s: wrote into the padding at (%d,%d)", name, i, j);
                continue;
            }
            double ref = 0, mag = 0;
            for (int p = 0; p < k; p++) {
                double a = ta ? A[(size_t)p * lda + i] : A[(size_t)i * lda + p];
                double b = tb ? Bm[(size_t)j * ldb + p] : Bm[(size_t)p * ldb + j];
                ref += a * b;
                mag += fabs(a * b);
            }
            ref *= alpha;
            mag *= fabs(alpha);
            if (beta != 0.0f) {
                ref += (double)beta * C0[at];
                mag += fabs((double)beta * C0[at]);
            }
            double tol = 4.0 * (k + 2) * 0x1p-24 * mag + 1e-30;
            CHECK(fabs(C[at] - ref) <= tol,
                  "%s ta=%d tb=%d m=%d n=%d k=%d alpha=%g beta=%g: C(%d,%d) = %.9g, reference "
                  "%.9g (tolerance %.3g)",
                  name, ta, tb, m, n, k, (double)alpha, (double)beta, i, j, (double)C[at], ref, tol);
        }
    free(A);
    free(Bm);
    free(C);
    free(C0);
}

static void check_all(const char *name, gemm_fn fn) {
    static const int shapes[][3] = {{1, 1, 1},   {3, 5, 7},    {64, 64, 64},  {65, 33, 257},
                                    {17, 1, 300}, {2, 1030, 9}, {70, 40, 513}, {5, 3, 0}};
    static const float ab[][2] = {{1, 0}, {0.5f, 1}, {-2, 0.25f}};
    int count = 0;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++)
                for (size_t v = 0; v < sizeof ab / sizeof ab[0]; v++) {
                    check_one(name, fn, ta, tb, shapes[s][0], shapes[s][1], shapes[s][2], ab[v][0],
                              ab[v][1]);
                    count++;
                }
    printf("  %-24s %d products match the fp64 reference\n", name, count);
}

/* sym_matmul reads layouts from strides: a transposed view must equal the
 * explicit transpose. */
static void check_tensor_matmul(void) {
    enum { M = 9, K = 13, N = 6 };
    float *a = rand_mat(M * K), *bt = rand_mat(N * K), *c1 = malloc(M * N * 4), *c2 = malloc(M * N * 4);
    float b[K * N];
    for (int p = 0; p < K; p++)
        for (int j = 0; j < N; j++) b[p * N + j] = bt[j * K + p];
    sym_tensor_t A = sym_tensor_2d(a, M, K), Bt = sym_tensor_2d(bt, N, K), Bv = sym_tensor_t2(&Bt);
    sym_tensor_t Bx = sym_tensor_2d(b, K, N), C1 = sym_tensor_2d(c1, M, N), C2 = sym_tensor_2d(c2, M, N);
    CHECK(!sym_tensor_is_contiguous(&Bv) && sym_tensor_is_contiguous(&Bx), "contiguity flags");
    CHECK(Bv.shape[0] == K && Bv.shape[1] == N, "transposed view shape (%lld,%lld)",
          (long long)Bv.shape[0], (long long)Bv.shape[1]);
    CHECK(sym_matmul(&C1, &A, &Bv, 1, 0) == 0, "%s", sym_last_error());
    CHECK(sym_matmul(&C2, &A, &Bx, 1, 0) == 0, "%s", sym_last_error());
    for (int i = 0; i < M * N; i++)
        CHECK(fabsf(c1[i] - c2[i]) <= 1e-5f * (1 + fabsf(c2[i])), "view product differs at %d: %g vs %g",
              i, (double)c1[i], (double)c2[i]);
    /* rows view: the product of rows [2, 7) is rows [2, 7) of the product */
    sym_tensor_t Ar = sym_tensor_rows(&A, 2, 5), Cr = sym_tensor_2d(c1, 5, N);
    CHECK(sym_matmul(&Cr, &Ar, &Bx, 1, 0) == 0, "%s", sym_last_error());
    for (int i = 0; i < 5 * N; i++)
        CHECK(fabsf(c1[i] - c2[2 * N + i]) <= 1e-5f * (1 + fabsf(c1[i])), "rows view differs at %d", i);
    /* shape errors are refused, not computed */
    sym_tensor_t Cbad = sym_tensor_2d(c1, M, N + 1);
    CHECK(sym_matmul(&Cbad, &A, &Bx, 1, 0) == SYM_EINVAL, "a (9,13)@(13,6)->(9,7) product was accepted");
    CHECK(strstr(sym_last_error(), "do not chain") != NULL, "message: %s", sym_last_error());
    sym_tensor_t Ct = sym_tensor_t2(&C2);
    CHECK(sym_matmul(&Ct, &Bv, &A, 1, 0) == SYM_EINVAL, "a transposed result was accepted");
    printf("  %-24s strided views, rows views and shape errors behave\n", "sym_matmul");
    free(a);
    free(bt);
    free(c1);
    free(c2);
}

/* ---- dtypes: conversions and narrow operands ---- */

/* fp32 -> bf16 / fp16 round to nearest even, back exactly; specials kept. */
static void check_conversions(void) {
    CHECK(sym_dtype_size(SYM_DT_F32) == 4 && sym_dtype_size(SYM_DT_BF16) == 2 &&
              sym_dtype_size(SYM_DT_F16) == 2 && sym_dtype_size(SYM_DT_I32) == 4,
          "dtype sizes");
    sym_dtype_t dt;
    CHECK(sym_dtype_parse("bf16", &dt) == 0 && dt == SYM_DT_BF16 && sym_dtype_parse("f32", &dt) != 0,
          "dtype names");
    /* exact values survive both ways */
    static const float exact[] = {0.0f, -0.0f, 1.0f, -2.5f, 0.15625f, 65504.0f, 0x1p-24f, 0x1p-14f};
    for (size_t i = 0; i < sizeof exact / sizeof *exact; i++) {
        CHECK(sym_f16_to_f32(sym_f32_to_f16(exact[i])) == exact[i], "fp16 round trip of %g", (double)exact[i]);
        if (exact[i] != 65504.0f && exact[i] != 0x1p-24f)
            CHECK(sym_bf16_to_f32(sym_f32_to_bf16(exact[i])) == exact[i], "bf16 round trip of %g",
                  (double)exact[i]);
    }
    /* ties to even: 1 + 2^-8 is halfway between two bf16 values (1 and 1 + 2^-7) */
    CHECK(sym_bf16_to_f32(sym_f32_to_bf16(1.0f + 0x1p-8f)) == 1.0f, "bf16 tie not to even");
    CHECK(sym_bf16_to_f32(sym_f32_to_bf16(1.0f + 3 * 0x1p-8f)) == 1.0f + 0x1p-6f, "bf16 tie up to even");
    CHECK(sym_f16_to_f32(sym_f32_to_f16(1.0f + 0x1p-11f)) == 1.0f, "fp16 tie not to even");
    CHECK(isinf(sym_f16_to_f32(sym_f32_to_f16(70000.0f))), "fp16 overflow is not inf");
    CHECK(isnan(sym_f16_to_f32(sym_f32_to_f16(NAN))) && isnan(sym_bf16_to_f32(sym_f32_to_bf16(NAN))),
          "NaN lost");
    CHECK(sym_f16_to_f32(sym_f32_to_f16(0x1p-25f)) == 0.0f &&
              sym_f16_to_f32(sym_f32_to_f16(0x1.8p-24f)) == 0x1p-23f,
          "fp16 subnormal rounding");
    /* random values: the nearest representable, so the error is at most half a step */
    for (int i = 0; i < 100000; i++) {
        float v = (float)((2 * test_uniform(&rng) - 1) * 1000);
        float b = sym_bf16_to_f32(sym_f32_to_bf16(v)), h = sym_f16_to_f32(sym_f32_to_f16(v));
        CHECK(fabs((double)b - v) <= fabs((double)v) * 0x1p-8 * 1.0000001, "bf16 of %.9g is %.9g", (double)v, (double)b);
        CHECK(fabs((double)h - v) <= fabs((double)v) * 0x1p-11 * 1.0000001 + 0x1p-25, "fp16 of %.9g is %.9g",
              (double)v, (double)h);
    }
    printf("  %-24s bf16 / fp16 round to nearest even, specials and subnormals kept\n", "conversions");
}

/* sym_gemm_ex with bf16 and fp16 operands equals sym_gemm on the widened
 * values (the widening is exact, the accumulation fp32), for every transpose. */
static void check_narrow_gemm(void) {
    enum { M = 37, N = 29, K = 300 };
    for (int dt = 1; dt <= 2; dt++)
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++) {
                int lda = (ta ? M : K) + 2, ldb = (tb ? K : N) + 1;
                int ar = ta ? K : M, br = tb ? N : K;
                uint16_t *A = malloc(sizeof(uint16_t) * (size_t)ar * lda);
                uint16_t *B = malloc(sizeof(uint16_t) * (size_t)br * ldb);
                float *Aw = malloc(sizeof(float) * (size_t)ar * lda), *Bw = malloc(sizeof(float) * (size_t)br * ldb);
                float *C = malloc(sizeof(float) * M * N), *R = malloc(sizeof(float) * M * N);
                CHECK(A && B && Aw && Bw && C && R, "out of memory");
                sym_dtype_t t = (sym_dtype_t)dt;
                for (int i = 0; i < ar * lda; i++) {
                    float v = (float)(2 * test_uniform(&rng) - 1);
                    A[i] = t == SYM_DT_BF16 ? sym_f32_to_bf16(v) : sym_f32_to_f16(v);
                }
                for (int i = 0; i < br * ldb; i++) {
                    float v = (float)(2 * test_uniform(&rng) - 1);
                    B[i] = t == SYM_DT_BF16 ? sym_f32_to_bf16(v) : sym_f32_to_f16(v);
                }
                sym_convert(Aw, SYM_DT_F32, A, t, (size_t)ar * lda);
                sym_convert(Bw, SYM_DT_F32, B, t, (size_t)br * ldb);
                for (int i = 0; i < M * N; i++) C[i] = NAN;
                CHECK(sym_gemm_ex(ta, tb, M, N, K, 0.5f, A, t, lda, B, t, ldb, 0.0f, C, N) == 0, "%s",
                      sym_last_error());
                sym_gemm(ta, tb, M, N, K, 0.5f, Aw, lda, Bw, ldb, 0.0f, R, N);
                CHECK(memcmp(C, R, sizeof(float) * M * N) == 0,
                      "%s ta=%d tb=%d: the narrow product differs from the widened one", sym_dtype_name(t),
                      ta, tb);
                free(A), free(B), free(Aw), free(Bw), free(C), free(R);
            }
    float c = 0;
    int32_t ia = 1;
    CHECK(sym_gemm_ex(0, 0, 1, 1, 1, 1, &ia, SYM_DT_I32, 1, &ia, SYM_DT_I32, 1, 0, &c, 1) == SYM_EINVAL,
          "an int32 product was accepted");
    printf("  %-24s bf16 / fp16 operands, all transposes: equal to fp32 on the widened values\n",
           "sym_gemm_ex");
}

/* sym_gemm takes 64-bit sizes; the table's kernels take int. */
static void gemm64(int ta, int tb, int m, int n, int k, float alpha, const float *A, int lda,
                   const float *B, int ldb, float beta, float *C, int ldc) {
    sym_gemm(ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}

int main(void) {
    uint64_t seed = test_seed();
    printf("train_matmul: seed %llu; sym_gemm is %s\n", (unsigned long long)seed, sym_blas_name());
    rng = test_rng(seed, 1);
    check_all("sym_gemm", gemm64);
    check_all("built-in blocked kernel", sym__gemm_blocked);
    check_tensor_matmul();
    check_conversions();
    check_narrow_gemm();
    printf("train_matmul: ok\n");
    return 0;
}
