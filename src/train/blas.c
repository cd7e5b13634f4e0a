/*
 * blas.c — single-precision matrix products: OpenBLAS's cblas_sgemm when the
 * build found it (SYM_HAVE_OPENBLAS), else a cache-blocked kernel.
 *
 * The blocked kernel packs a KC x NC panel of op(B) and an MC x KC block of
 * alpha * op(A) into contiguous buffers (so transposes cost one copy, not
 * strided loads in the inner loop), then runs i-p-j loops whose innermost loop
 * walks a row of C and a row of the B panel with unit stride, which the
 * compiler vectorises. Blocks are sized so the A block and a panel row stay in
 * L1/L2 on common CPUs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <symtrain/tensor.h>

#include "internal.h"

#ifdef SYM_HAVE_OPENBLAS
#include <cblas.h>
#endif

#define MC 64
#define KC 256
#define NC 1024

/* ---- the built-in kernel ---- */

static inline float at(const float *X, int ld, int trans, int r, int c) {
    return trans ? X[(size_t)c * ld + r] : X[(size_t)r * ld + c];
}

void sym__gemm_blocked(int ta, int tb, int m, int n, int k, float alpha, const float *A,
                       int lda, const float *B, int ldb, float beta, float *C, int ldc) {
    /* C = beta * C first; beta == 0 overwrites (no NaN from old contents). */
    for (int i = 0; i < m; i++) {
        float *c = C + (size_t)i * ldc;
        if (beta == 0.0f)
            memset(c, 0, (size_t)n * sizeof *c);
        else if (beta != 1.0f)
            for (int j = 0; j < n; j++) c[j] *= beta;
    }
    if (m == 0 || n == 0 || k == 0 || alpha == 0.0f) return;

    /* Stack buffers would be 1.3 MB; one heap buffer per call is cheap next to
     * the product itself. */
    float *bp = malloc(sizeof(float) * (size_t)KC * NC);
    float *ap = malloc(sizeof(float) * (size_t)MC * KC);
    if (!bp || !ap) {
        /* No memory for packing: compute straight from the operands. */
        free(bp);
        free(ap);
        for (int i = 0; i < m; i++)
            for (int p = 0; p < k; p++) {
                float a = alpha * at(A, lda, ta, i, p);
                float *c = C + (size_t)i * ldc;
                for (int j = 0; j < n; j++) c[j] += a * at(B, ldb, tb, p, j);
            }
        return;
    }
    for (int jc = 0; jc < n; jc += NC) {
        int nc = n - jc < NC ? n - jc : NC;
        for (int pc = 0; pc < k; pc += KC) {
            int kc = k - pc < KC ? k - pc : KC;
            /* bp (kc, nc) = op(B)[pc.., jc..] */
            for (int p = 0; p < kc; p++) {
                float *dst = bp + (size_t)p * nc;
                if (!tb)
                    memcpy(dst, B + (size_t)(pc + p) * ldb + jc, (size_t)nc * sizeof(float));
                else
                    for (int j = 0; j < nc; j++) dst[j] = B[(size_t)(jc + j) * ldb + pc + p];
            }
            for (int ic = 0; ic < m; ic += MC) {
                int mc = m - ic < MC ? m - ic : MC;
                /* ap (mc, kc) = alpha * op(A)[ic.., pc..] */
                for (int i = 0; i < mc; i++)
                    for (int p = 0; p < kc; p++)
                        ap[(size_t)i * kc + p] = alpha * at(A, lda, ta, ic + i, pc + p);
                for (int i = 0; i < mc; i++) {
                    float *restrict c = C + (size_t)(ic + i) * ldc + jc;
                    const float *arow = ap + (size_t)i * kc;
                    for (int p = 0; p < kc; p++) {
                        const float a = arow[p];
                        const float *restrict b = bp + (size_t)p * nc;
                        for (int j = 0; j < nc; j++) c[j] += a * b[j];
                    }
                }
            }
        }
    }
    free(bp);
    free(ap);
}

/* ---- dispatch ---- */

void sym_gemm(int ta, int tb, int m, int n, int k, float alpha, const float *A, int lda,
              const float *B, int ldb, float beta, float *C, int ldc) {
    if (m <= 0 || n <= 0) return;
#ifdef SYM_HAVE_OPENBLAS
    if (k > 0) {
        cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                    m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
        return;
    }
#endif
    sym__gemm_blocked(ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}

const char *sym_blas_name(void) {
#ifdef SYM_HAVE_OPENBLAS
#ifdef OPENBLAS_VERSION
    static char name[96];
    if (!name[0]) { /* OPENBLAS_VERSION reads " OpenBLAS 0.3.21 " */
        const char *v = OPENBLAS_VERSION;
        while (*v == ' ') v++;
        size_t len = strlen(v);
        while (len && v[len - 1] == ' ') len--;
        snprintf(name, sizeof name, "%.*s (cblas_sgemm)", (int)len, v);
    }
    return name;
#else
    return "OpenBLAS (cblas_sgemm)";
#endif
#else
    return "built-in blocked kernel";
#endif
}

void sym_blas_set_threads(int threads) {
    if (threads < 1) threads = 1;
#if defined(SYM_HAVE_OPENBLAS) && defined(SYM_HAVE_OPENBLAS_THREADS)
    openblas_set_num_threads(threads);
#else
    (void)threads; /* the built-in kernel is single-threaded */
#endif
}
