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
#include <symtrain/rng.h>

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
    /* dropout (threshold 0: none): the (b, h)'s key, the keep threshold of
     * a draw's top 24 bits and the kept values' scale */
    uint64_t head_key;
    uint32_t threshold;
    float scale;
} rows_args_t;

/* Row i's mask of the (b, h) in a: m[j] = scale or 0, j <= i. */
static void mask_row(const rows_args_t *a, int64_t i, float *m) {
    uint64_t row_key = sym_rng_mix(a->head_key ^ (uint64_t)i * 0x9E3779B97F4A7C15ull);
    for (int64_t j = 0; j <= i; j++)
        m[j] = (uint32_t)(sym_rng_hash(row_key, (uint64_t)j) >> 40) >= a->threshold ? a->scale
                                                                                    : 0.0f;
}

/* Rows [lo, hi): s = att * mask (j <= i; 0 above). */
static void dropped_rows(size_t lo, size_t hi, void *arg) {
    const rows_args_t *a = arg;
    int64_t T = a->T;
    for (int64_t i = (int64_t)lo; i < (int64_t)hi; i++) {
        float *row = a->s + i * T;
        const float *p = a->att + i * T;
        mask_row(a, i, row);
        for (int64_t j = 0; j <= i; j++) row[j] *= p[j];
        for (int64_t j = i + 1; j < T; j++) row[j] = 0.0f;
    }
}

/* The (b, h)'s key of dropout d, into a (threshold 0 without). */
static void head_dropout(rows_args_t *a, const sym_attn_dropout_t *d, int64_t b, int64_t h) {
    a->threshold = 0;
    if (!d || d->p <= 0.0f) return;
    uint64_t step_key = sym_rng_mix(d->key ^ sym_rng_mix(d->step + 0x632BE59BD9B4E019ull));
    uint64_t head = (uint64_t)(d->row0 + b) * (uint64_t)d->heads + (uint64_t)(d->h0 + h);
    a->head_key = sym_rng_mix(step_key ^ head * 0xD1B54A32D192ED03ull);
    a->threshold = (uint32_t)((double)d->p * 16777216.0);
    if (a->threshold == 0) a->threshold = 1; /* p > 0 drops something */
    a->scale = 1.0f / (1.0f - d->p);
}

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
int sym_attention_forward_drop(float *out, float *att, float *scratch, const float *qkv, int B,
                               int T, int C, int NH, const sym_attn_dropout_t *d) {
    int rc = check_sizes("attention forward", B, T, C, NH);
    if (rc) return rc;
    int drop = d && d->p > 0.0f;
    if (drop && !scratch)
        return sym__error(SYM_EINVAL, "attention forward with dropout: no scratch; it needs T*T "
                                      "= %lld floats", (long long)T * T);
    int64_t hs = C / NH, C3 = 3 * (int64_t)C, TT = (int64_t)T * T;
    float scale = (float)(1.0 / sqrt((double)hs));
    rows_args_t ra = {NULL, NULL, T, 0, 0, 0.0f};
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < NH; h++) {
            const float *q = qkv + b * T * C3 + h * hs, *k = q + C, *v = q + 2 * (int64_t)C;
            float *A = att + (b * NH + h) * TT;
            /* S (T,T) = q (T,hs) @ k^T (hs,T) * scale */
            sym_gemm(0, 1, T, T, hs, scale, q, C3, k, C3, 0.0f, A, T);
            ra.s = A;
            sym__parallel_for((size_t)T, (size_t)TT, softmax_rows, &ra);
            const float *P = A;
            if (drop) { /* the probabilities kept in A, the dropped ones in scratch */
                head_dropout(&ra, d, b, h);
                ra.s = scratch;
                ra.att = A;
                sym__parallel_for((size_t)T, (size_t)TT, dropped_rows, &ra);
                P = scratch;
            }
            /* out_h (T,hs) = att (T,T) @ v (T,hs) */
            sym_gemm(0, 0, T, hs, T, 1.0f, P, T, v, C3, 0.0f, out + b * T * C + h * hs, C);
        }
    return SYM_OK;
}

int sym_attention_forward(float *out, float *att, const float *qkv, int B, int T, int C,
                          int NH) {
    return sym_attention_forward_drop(out, att, NULL, qkv, B, T, C, NH, NULL);
}

/* ---- backward ---- */

/* Rows [lo, hi): s holds datt (of the dropped probabilities, with dropout:
 * first times the mask); it becomes dS = att * (datt - sum_j att * datt)
 * over j <= i (the sum in double), zeros for j > i. */
static void softmax_bwd_rows(size_t lo, size_t hi, void *arg) {
    const rows_args_t *a = arg;
    int64_t T = a->T;
    float m[a->threshold ? T : 1];
    for (int64_t i = (int64_t)lo; i < (int64_t)hi; i++) {
        float *d = a->s + i * T;
        const float *p = a->att + i * T;
        if (a->threshold) {
            mask_row(a, i, m);
            for (int64_t j = 0; j <= i; j++) d[j] *= m[j];
        }
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
    return sym_attention_backward_drop(dqkv, scratch, dout, qkv, att, B, T, C, NH, NULL);
}

int sym_attention_backward_drop(float *dqkv, float *scratch, const float *dout, const float *qkv,
                                const float *att, int B, int T, int C, int NH,
                                const sym_attn_dropout_t *d) {
    int rc = check_sizes("attention backward", B, T, C, NH);
    if (rc) return rc;
    if (!scratch)
        return sym__error(SYM_EINVAL, "attention backward: no scratch; it needs T*T = %lld floats",
                          (long long)T * T);
    int64_t hs = C / NH, C3 = 3 * (int64_t)C, TT = (int64_t)T * T;
    float scale = (float)(1.0 / sqrt((double)hs));
    rows_args_t ra = {scratch, NULL, T, 0, 0, 0.0f};
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < NH; h++) {
            int64_t off = b * T * C3 + h * hs;
            const float *q = qkv + off, *k = q + C, *v = q + 2 * (int64_t)C;
            float *dq = dqkv + off, *dk = dq + C, *dv = dq + 2 * (int64_t)C;
            const float *A = att + (b * NH + h) * TT;
            const float *g = dout + b * T * C + h * hs; /* dout_h (T,hs), row stride C */
            head_dropout(&ra, d, b, h);
            ra.att = A;
            if (ra.threshold) { /* dv (T,hs) += (att * mask)^T (T,T) @ dout_h (T,hs) */
                sym__parallel_for((size_t)T, (size_t)TT, dropped_rows, &ra);
                sym_gemm(1, 0, T, hs, T, 1.0f, scratch, T, g, C, 1.0f, dv, C3);
            } else { /* dv (T,hs) += att^T (T,T) @ dout_h (T,hs) */
                sym_gemm(1, 0, T, hs, T, 1.0f, A, T, g, C, 1.0f, dv, C3);
            }
            /* datt (T,T) = dout_h (T,hs) @ v^T (hs,T) */
            sym_gemm(0, 1, T, T, hs, 1.0f, g, C, v, C3, 0.0f, scratch, T);
            sym__parallel_for((size_t)T, (size_t)TT, softmax_bwd_rows, &ra);
            /* dq (T,hs) += dS (T,T) @ k (T,hs) * scale; dk += dS^T @ q * scale */
            sym_gemm(0, 0, T, hs, T, scale, scratch, T, k, C3, 1.0f, dq, C3);
            sym_gemm(1, 0, T, hs, T, scale, scratch, T, q, C3, 1.0f, dk, C3);
        }
    return SYM_OK;
}
