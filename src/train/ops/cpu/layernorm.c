/*
 * layernorm.c — layer normalisation over the last dimension (PyTorch's
 * nn.LayerNorm: biased variance, eps 1e-5) and its backward pass.
 *
 * The forward keeps each row's mean and rstd = 1 / sqrt(var + eps) (fp32) for
 * the backward, which recomputes the normalised row from them, as llm.c does;
 * both passes compute it by the same expression, (x - mean) * rstd in fp32.
 * Row statistics are accumulated in double.
 *
 * Rows are independent in the forward and in dx, so those are split over
 * rows. dw and db are sums over every row: they are split over blocks of
 * columns instead, each thread summing all rows of its columns in order (in
 * double), so the result is the same bits whatever the thread count; partial
 * sums per thread, combined afterwards, would round differently for each
 * split.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include <symtrain/nn.h>

#include "core/parallel.h"

#define LN_EPS 1e-5
/* Columns per block of the dw / db split (one cache line of floats), and
 * columns summed at once within a block's range (the double accumulators). */
#define COL_BLOCK 16
#define COL_TILE 256

typedef struct {
    float *out, *mean, *rstd; /* forward: (N,C), (N), (N) */
    float *dx, *dw, *db;      /* backward: (N,C), (C), (C) */
    const float *x, *w, *b, *dout;
    const float *cmean, *crstd; /* the forward's, in the backward */
    int64_t N, C;
} ln_args_t;

/* ---- forward ---- */

/* Rows [lo, hi): statistics in double, then out = norm * w + b. */
static void ln_fwd(size_t lo, size_t hi, void *arg) {
    const ln_args_t *a = arg;
    int64_t C = a->C;
    for (int64_t r = (int64_t)lo; r < (int64_t)hi; r++) {
        const float *x = a->x + r * C;
        double s = 0.0;
        for (int64_t c = 0; c < C; c++) s += x[c];
        double m = s / (double)C, v = 0.0;
        for (int64_t c = 0; c < C; c++) {
            double d = (double)x[c] - m;
            v += d * d;
        }
        v /= (double)C; /* biased, as PyTorch normalises */
        float mf = (float)m, rs = (float)(1.0 / sqrt(v + LN_EPS));
        float *o = a->out + r * C;
        for (int64_t c = 0; c < C; c++) o[c] = (x[c] - mf) * rs * a->w[c] + a->b[c];
        a->mean[r] = mf;
        a->rstd[r] = rs;
    }
}

/* out (N,C) = (x (N,C) - mean) * rstd * w (C) + b (C); saves mean (N), rstd (N) */
void sym_layernorm_forward(float *out, float *mean, float *rstd, const float *x,
                           const float *w, const float *b, int64_t N, int C) {
    if (N <= 0 || C <= 0) return;
    ln_args_t a = {0};
    a.out = out;
    a.mean = mean;
    a.rstd = rstd;
    a.x = x;
    a.w = w;
    a.b = b;
    a.N = N;
    a.C = C;
    sym__parallel_for((size_t)N, (size_t)N * (size_t)C, ln_fwd, &a);
}

/* ---- backward ---- */

/* Rows [lo, hi) of dx. With n = norm and g = dout * w, the row's gradient is
 * dx += rstd * (g - mean(g) - n * mean(g * n)); the two means in double. */
static void ln_bwd_dx(size_t lo, size_t hi, void *arg) {
    const ln_args_t *a = arg;
    int64_t C = a->C;
    for (int64_t r = (int64_t)lo; r < (int64_t)hi; r++) {
        const float *x = a->x + r * C, *g = a->dout + r * C;
        float m = a->cmean[r], rs = a->crstd[r];
        double sg = 0.0, sgn = 0.0;
        for (int64_t c = 0; c < C; c++) {
            float n = (x[c] - m) * rs, gw = g[c] * a->w[c];
            sg += gw;
            sgn += (double)gw * n;
        }
        float mg = (float)(sg / (double)C), mgn = (float)(sgn / (double)C);
        float *dx = a->dx + r * C;
        for (int64_t c = 0; c < C; c++) {
            float n = (x[c] - m) * rs, gw = g[c] * a->w[c];
            dx[c] += rs * (gw - mg - n * mgn);
        }
    }
}

/* Column blocks [lo, hi) of dw and db: every row, in order, into double
 * accumulators for COL_TILE columns at a time. */
static void ln_bwd_dwdb(size_t lo, size_t hi, void *arg) {
    const ln_args_t *a = arg;
    int64_t C = a->C, c0 = (int64_t)lo * COL_BLOCK, c1 = (int64_t)hi * COL_BLOCK;
    if (c1 > C) c1 = C;
    double aw[COL_TILE], ab[COL_TILE];
    for (int64_t t0 = c0; t0 < c1; t0 += COL_TILE) {
        int64_t w = c1 - t0 < COL_TILE ? c1 - t0 : COL_TILE;
        for (int64_t j = 0; j < w; j++) aw[j] = ab[j] = 0.0;
        for (int64_t r = 0; r < a->N; r++) {
            const float *x = a->x + r * C + t0, *g = a->dout + r * C + t0;
            float m = a->cmean[r], rs = a->crstd[r];
            for (int64_t j = 0; j < w; j++) {
                float n = (x[j] - m) * rs;
                aw[j] += (double)g[j] * n;
                ab[j] += g[j];
            }
        }
        for (int64_t j = 0; j < w; j++) {
            a->dw[t0 + j] += (float)aw[j];
            a->db[t0 + j] += (float)ab[j];
        }
    }
}

/* dx (N,C) +=, dw (C) +=, db (C) += from dout (N,C), given the forward's x
 * (N,C), w (C), mean (N) and rstd (N). */
void sym_layernorm_backward(float *dx, float *dw, float *db, const float *dout,
                            const float *x, const float *w, const float *mean,
                            const float *rstd, int64_t N, int C) {
    if (N <= 0 || C <= 0) return;
    ln_args_t a = {0};
    a.dx = dx;
    a.dw = dw;
    a.db = db;
    a.dout = dout;
    a.x = x;
    a.w = w;
    a.cmean = mean;
    a.crstd = rstd;
    a.N = N;
    a.C = C;
    size_t work = (size_t)N * (size_t)C;
    sym__parallel_for((size_t)N, work, ln_bwd_dx, &a);
    sym__parallel_for(((size_t)C + COL_BLOCK - 1) / COL_BLOCK, work, ln_bwd_dwdb, &a);
}
