/*
 * blas.c — single-precision matrix products: OpenBLAS's cblas_sgemm when the
 * build found it (SYM_HAVE_OPENBLAS), else a cache-blocked kernel of our own.
 *
 * The built-in kernel has the GotoBLAS shape: for each KC x NC panel of op(B)
 * and each MC x KC block of alpha * op(A), both are packed into contiguous
 * strips (NR columns of B, MR rows of A, in the order the micro-kernel reads
 * them; transposes cost one copy, edges are zero-padded), then a micro-kernel
 * computes one MR x NR tile of C in registers over the whole KC depth. The
 * tile is 4 x 8 floats held in eight 4-wide vectors (GCC/Clang vector
 * extensions: SSE on x86-64, NEON on arm64), and the packed B panel (KC x NC
 * floats, 1 MiB) and A block (MC x KC, 64 KiB) stay in L2 / L1.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <symtrain/tensor.h>

#include "parallel.h"
#include "internal.h"

#ifdef SYM_HAVE_OPENBLAS
#include <cblas.h>
#endif

#define MR 4
#define NR 8
#define MC 64   /* multiple of MR */
#define KC 256
#define NC 1024 /* multiple of NR */

typedef float v4f __attribute__((vector_size(16)));

/* ---- the built-in kernel ---- */

static inline float at(const float *X, int ld, int trans, int r, int c) {
    return trans ? X[(size_t)c * ld + r] : X[(size_t)r * ld + c];
}

/* bp: ceil(nc / NR) strips, each (kc, NR): strip s holds op(B)[pc + p][jc + s*NR + j] */
static void pack_b(float *bp, const float *B, int ldb, int tb, int pc, int kc, int jc, int nc) {
    for (int s = 0; s * NR < nc; s++) {
        float *dst = bp + (size_t)s * kc * NR;
        int w = nc - s * NR < NR ? nc - s * NR : NR;
        for (int p = 0; p < kc; p++) {
            for (int j = 0; j < w; j++) dst[p * NR + j] = at(B, ldb, tb, pc + p, jc + s * NR + j);
            for (int j = w; j < NR; j++) dst[p * NR + j] = 0.0f;
        }
    }
}

/* ap: ceil(mc / MR) strips, each (kc, MR): alpha * op(A)[ic + s*MR + i][pc + p] */
static void pack_a(float *ap, const float *A, int lda, int ta, float alpha, int ic, int mc, int pc,
                   int kc) {
    for (int s = 0; s * MR < mc; s++) {
        float *dst = ap + (size_t)s * kc * MR;
        int h = mc - s * MR < MR ? mc - s * MR : MR;
        for (int p = 0; p < kc; p++) {
            for (int i = 0; i < h; i++) dst[p * MR + i] = alpha * at(A, lda, ta, ic + s * MR + i, pc + p);
            for (int i = h; i < MR; i++) dst[p * MR + i] = 0.0f;
        }
    }
}

/* C (h <= MR, w <= NR) += a strip (kc, MR) x b strip (kc, NR) */
static void micro(int kc, const float *a, const float *b, float *C, int ldc, int h, int w) {
    v4f acc[MR][2] = {{{0}}};
    for (int p = 0; p < kc; p++) {
        v4f b0, b1;
        memcpy(&b0, b + p * NR, sizeof b0);
        memcpy(&b1, b + p * NR + 4, sizeof b1);
        for (int i = 0; i < MR; i++) {
            v4f ai = {a[p * MR + i], a[p * MR + i], a[p * MR + i], a[p * MR + i]};
            acc[i][0] += ai * b0;
            acc[i][1] += ai * b1;
        }
    }
    for (int i = 0; i < h; i++) {
        float row[NR];
        memcpy(row, &acc[i][0], sizeof acc[i][0]);
        memcpy(row + 4, &acc[i][1], sizeof acc[i][1]);
        float *c = C + (size_t)i * ldc;
        for (int j = 0; j < w; j++) c[j] += row[j];
    }
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

    float *bp = aligned_alloc(64, sizeof(float) * (size_t)KC * NC);
    float *ap = aligned_alloc(64, sizeof(float) * (size_t)MC * KC);
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
            pack_b(bp, B, ldb, tb, pc, kc, jc, nc);
            for (int ic = 0; ic < m; ic += MC) {
                int mc = m - ic < MC ? m - ic : MC;
                pack_a(ap, A, lda, ta, alpha, ic, mc, pc, kc);
                for (int js = 0; js * NR < nc; js++)
                    for (int is = 0; is * MR < mc; is++) {
                        int h = mc - is * MR < MR ? mc - is * MR : MR;
                        int w = nc - js * NR < NR ? nc - js * NR : NR;
                        micro(kc, ap + (size_t)is * kc * MR, bp + (size_t)js * kc * NR,
                              C + (size_t)(ic + is * MR) * ldc + jc + js * NR, ldc, h, w);
                    }
            }
        }
    }
    free(bp);
    free(ap);
}

/* ---- dispatch ---- */

static void gemm_int(int ta, int tb, int m, int n, int k, float alpha, const float *A, int lda,
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

/* Pieces of at most GEMM_PIECE along each of m, n, k keep every size inside
 * BLAS's int; the k pieces add up in C (beta for the first only). */
#define GEMM_PIECE ((int64_t)1 << 30)

void sym_gemm(int ta, int tb, int64_t m, int64_t n, int64_t k, float alpha, const float *A,
              int64_t lda, const float *B, int64_t ldb, float beta, float *C, int64_t ldc) {
    if (m <= 0 || n <= 0) return;
    if (lda > INT_MAX || ldb > INT_MAX || ldc > INT_MAX) {
        /* Rows longer than BLAS can address: a plain loop, accumulated in double. */
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                double acc = 0;
                for (int64_t p = 0; p < k; p++)
                    acc += (double)(ta ? A[p * lda + i] : A[i * lda + p]) *
                           (double)(tb ? B[j * ldb + p] : B[p * ldb + j]);
                float *c = &C[i * ldc + j];
                *c = (float)(alpha * acc) + (beta == 0.0f ? 0.0f : beta * *c);
            }
        return;
    }
    for (int64_t i0 = 0; i0 < m; i0 += GEMM_PIECE)
        for (int64_t j0 = 0; j0 < n; j0 += GEMM_PIECE) {
            int mi = (int)(m - i0 < GEMM_PIECE ? m - i0 : GEMM_PIECE);
            int nj = (int)(n - j0 < GEMM_PIECE ? n - j0 : GEMM_PIECE);
            float *c = C + i0 * ldc + j0;
            if (k <= 0) {
                gemm_int(ta, tb, mi, nj, 0, alpha, A, (int)lda, B, (int)ldb, beta, c, (int)ldc);
                continue;
            }
            for (int64_t p0 = 0; p0 < k; p0 += GEMM_PIECE) {
                int kp = (int)(k - p0 < GEMM_PIECE ? k - p0 : GEMM_PIECE);
                const float *a = ta ? A + p0 * lda + i0 : A + i0 * lda + p0;
                const float *b = tb ? B + j0 * ldb + p0 : B + p0 * ldb + j0;
                gemm_int(ta, tb, mi, nj, kp, alpha, a, (int)lda, b, (int)ldb,
                         p0 == 0 ? beta : 1.0f, c, (int)ldc);
            }
        }
}

/* op(X)'s rows x cols as stored: `rows` lines of `cols` elements, `ld` apart. */
static float *widen(const void *X, sym_dtype_t dt, int trans, int64_t r, int64_t c, int64_t ld) {
    int64_t lines = trans ? c : r, len = trans ? r : c;
    float *w = malloc((size_t)(lines * len) * sizeof(float) + 1);
    if (!w) return NULL;
    for (int64_t i = 0; i < lines; i++)
        sym_convert(w + i * len, SYM_DT_F32, (const char *)X + i * ld * 2, dt, (size_t)len);
    return w;
}

int sym_gemm_ex(int ta, int tb, int64_t m, int64_t n, int64_t k, float alpha, const void *A,
                sym_dtype_t adt, int64_t lda, const void *B, sym_dtype_t bdt, int64_t ldb,
                float beta, float *C, int64_t ldc) {
    if (adt == SYM_DT_I32 || bdt == SYM_DT_I32)
        return sym__error(SYM_EINVAL, "a matrix product of int32 operands");
    if (adt == SYM_DT_F32 && bdt == SYM_DT_F32) {
        sym_gemm(ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
        return SYM_OK;
    }
    /* Narrow operands are widened once (exact), then multiplied in fp32. */
    float *wa = NULL, *wb = NULL;
    const float *a = A, *b = B;
    if (adt != SYM_DT_F32) {
        if (!(wa = widen(A, adt, ta, m, k, lda))) goto oom;
        a = wa;
        lda = ta ? m : k;
    }
    if (bdt != SYM_DT_F32) {
        if (!(wb = widen(B, bdt, tb, k, n, ldb))) goto oom;
        b = wb;
        ldb = tb ? k : n;
    }
    sym_gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, C, ldc);
    free(wa);
    free(wb);
    return SYM_OK;
oom:
    free(wa);
    return sym__error(SYM_ENOMEM, "out of memory widening a %lld x %lld x %lld product to fp32",
                      (long long)m, (long long)n, (long long)k);
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
    sym__threads = threads; /* also the element-wise loops' (parallel.h) */
#if defined(SYM_HAVE_OPENBLAS) && defined(SYM_HAVE_OPENBLAS_THREADS)
    openblas_set_num_threads(threads);
#else
    (void)threads; /* the built-in kernel is single-threaded */
#endif
}
