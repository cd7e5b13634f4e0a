/*
 * attention.c — causal multi-head self-attention (the GPT's), forward and
 * backward, as matrix products per (batch, head) plus a row-wise softmax.
 *
 * For one (b, h), with q, k, v the (T,hs) slices of qkv (row stride 3C) and
 * scale = 1 / sqrt(hs):
 *
 *   forward   S = q k^T * scale                      (T,T)
 *             att = softmax of each row i over j <= i, 0 above the diagonal
 *             out_h = att v                           (T,hs), row stride C
 *   backward  datt = dout_h v^T                       (T,T)
 *             dv += att^T dout_h
 *             dS = att * (datt - rowsum(att * datt))  (j <= i; 0 above)
 *             dq += dS k * scale,  dk += dS^T q * scale
 *
 * The products go to sym_gemm (which may use the BLAS threads), one (b, h)
 * after another; the softmax and its backward, row by row, go to
 * sym__parallel_for (rows are independent, so the result does not depend on
 * the split). The full T x T score matrix is computed and the upper triangle
 * then zeroed: this is the reference the GPU kernels are checked against, and
 * it keeps each step one plain product.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include <symtrain/nn.h>

#include "core/parallel.h"
#include "internal.h"

/* B, T, C, NH at least 1 and C a multiple of NH; else SYM_EINVAL, said once. */
static int check_sizes(const char *fn, int B, int T, int C, int NH) {
    if (B < 1 || T < 1 || C < 1 || NH < 1)
        return sym__error(SYM_EINVAL, "%s: sizes B=%d T=%d C=%d NH=%d must all be at least 1", fn,
                          B, T, C, NH);
    if (C % NH)
        return sym__error(SYM_EINVAL,
                          "%s: the width C=%d is not a multiple of the heads NH=%d; choose a head "
                          "count that divides the width",
                          fn, C, NH);
    return SYM_OK;
}

typedef struct {
    float *s;         /* (T,T): scores in, probabilities out / datt in, dS out */
    const float *att; /* (T,T), the backward's */
    int64_t T;
} rows_args_t;

/* ---- forward ---- */

/* Rows [lo, hi) of s (T,T): the causal softmax of row i over j <= i (the
 * maximum subtracted, the sum in double), zeros for j > i. */
static void softmax_rows(size_t lo, size_t hi, void *arg) {
    const rows_args_t *a = arg;
    int64_t T = a->T;
    for (int64_t i = (int64_t)lo; i < (int64_t)hi; i++) {
        float *row = a->s + i * T;
        float mx = row[0];
        for (int64_t j = 1; j <= i; j++)
            if (row[j] > mx) mx = row[j];
        double sum = 0.0;
        for (int64_t j = 0; j <= i; j++) {
            float e = expf(row[j] - mx);
            row[j] = e;
            sum += e;
        }
        double inv = 1.0 / sum; /* sum >= 1: the maximum contributes exp(0) */
        for (int64_t j = 0; j <= i; j++) row[j] = (float)(row[j] * inv);
        for (int64_t j = i + 1; j < T; j++) row[j] = 0.0f;
    }
}

/* out (B,T,C), att (B,NH,T,T) from qkv (B,T,3C) */
int sym_attention_forward(float *out, float *att, const float *qkv, int B, int T, int C,
                          int NH) {
    int rc = check_sizes("attention forward", B, T, C, NH);
    if (rc) return rc;
    int64_t hs = C / NH, C3 = 3 * (int64_t)C, TT = (int64_t)T * T;
    float scale = (float)(1.0 / sqrt((double)hs));
    rows_args_t ra = {NULL, NULL, T};
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < NH; h++) {
            const float *q = qkv + b * T * C3 + h * hs, *k = q + C, *v = q + 2 * (int64_t)C;
            float *A = att + (b * NH + h) * TT;
            /* S (T,T) = q (T,hs) @ k^T (hs,T) * scale */
            sym_gemm(0, 1, T, T, hs, scale, q, C3, k, C3, 0.0f, A, T);
            ra.s = A;
            sym__parallel_for((size_t)T, (size_t)TT, softmax_rows, &ra);
            /* out_h (T,hs) = att (T,T) @ v (T,hs) */
            sym_gemm(0, 0, T, hs, T, 1.0f, A, T, v, C3, 0.0f, out + b * T * C + h * hs, C);
        }
    return SYM_OK;
}

/* ---- backward ---- */

/* Rows [lo, hi): s holds datt; it becomes dS = att * (datt - sum_j att * datt)
 * over j <= i (the sum in double), zeros for j > i. */
static void softmax_bwd_rows(size_t lo, size_t hi, void *arg) {
    const rows_args_t *a = arg;
    int64_t T = a->T;
    for (int64_t i = (int64_t)lo; i < (int64_t)hi; i++) {
        float *d = a->s + i * T;
        const float *p = a->att + i * T;
        double dot = 0.0;
        for (int64_t j = 0; j <= i; j++) dot += (double)p[j] * d[j];
        float df = (float)dot;
        for (int64_t j = 0; j <= i; j++) d[j] = p[j] * (d[j] - df);
        for (int64_t j = i + 1; j < T; j++) d[j] = 0.0f;
    }
}

/* dqkv (B,T,3C) += the gradient of dout (B,T,C) through the attention, given
 * the forward's qkv (B,T,3C) and att (B,NH,T,T); scratch (T,T). */
int sym_attention_backward(float *dqkv, float *scratch, const float *dout, const float *qkv,
                           const float *att, int B, int T, int C, int NH) {
    int rc = check_sizes("attention backward", B, T, C, NH);
    if (rc) return rc;
    if (!scratch)
        return sym__error(SYM_EINVAL, "attention backward: no scratch; it needs T*T = %lld floats",
                          (long long)T * T);
    int64_t hs = C / NH, C3 = 3 * (int64_t)C, TT = (int64_t)T * T;
    float scale = (float)(1.0 / sqrt((double)hs));
    rows_args_t ra = {scratch, NULL, T};
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < NH; h++) {
            int64_t off = b * T * C3 + h * hs;
            const float *q = qkv + off, *k = q + C, *v = q + 2 * (int64_t)C;
            float *dq = dqkv + off, *dk = dq + C, *dv = dq + 2 * (int64_t)C;
            const float *A = att + (b * NH + h) * TT;
            const float *g = dout + b * T * C + h * hs; /* dout_h (T,hs), row stride C */
            /* datt (T,T) = dout_h (T,hs) @ v^T (hs,T) */
            sym_gemm(0, 1, T, T, hs, 1.0f, g, C, v, C3, 0.0f, scratch, T);
            /* dv (T,hs) += att^T (T,T) @ dout_h (T,hs) */
            sym_gemm(1, 0, T, hs, T, 1.0f, A, T, g, C, 1.0f, dv, C3);
            ra.att = A;
            sym__parallel_for((size_t)T, (size_t)TT, softmax_bwd_rows, &ra);
            /* dq (T,hs) += dS (T,T) @ k (T,hs) * scale; dk += dS^T @ q * scale */
            sym_gemm(0, 0, T, hs, T, scale, scratch, T, k, C3, 1.0f, dq, C3);
            sym_gemm(1, 0, T, hs, T, scale, scratch, T, q, C3, 1.0f, dk, C3);
        }
    return SYM_OK;
}
