/*
 * embed.c — the GPT's input embedding: a token's row of wte plus its
 * position's row of wpe, and the backward pass that scatters the output
 * gradient back into both tables.
 *
 * The forward is split over rows (each output row is independent). The
 * backward cannot be: a token repeated in the batch adds several rows into one
 * row of dwte, and every b adds into the same row of dwpe. Splitting the rows
 * over threads would make the order of those additions (and so the rounding)
 * depend on the thread count, so the backward is split over blocks of columns
 * instead: a thread owns columns [lo, hi) of dwte and dwpe and walks every
 * (b, t) in order, so each element receives its additions in (b, t) order
 * whatever the threads (nn.h: the order is fixed, by position).
 *
 * Vocabulary parallelism (the _shard forms): a PE holds rows [v0, v0 + nv)
 * of wte only. Its forward writes those tokens' rows and zeros for the others
 * (plus wpe where it is given), so the sum over the team is the whole
 * embedding, exactly: every element is one row's value plus zeros. Its
 * backward adds into its rows only, and into all of dwpe.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <symtrain/nn.h>

#include "core/parallel.h"

/* Columns per block of the backward's split: one 64-byte line of floats, so
 * no two threads write the same cache line of dwte or dwpe. */
#define COL_BLOCK 16

typedef struct {
    float *out;         /* (B,T,C) forward output */
    float *dwte, *dwpe; /* (V,C), (T,C) */
    const float *dout;  /* (B,T,C) */
    const int32_t *tok; /* (B,T) */
    const float *wte, *wpe; /* wpe may be NULL (not added) */
    int64_t T, C, N;        /* N = B * T rows */
    int64_t v0, nv;         /* the rows of wte held: tokens [v0, v0 + nv) */
} embed_args_t;

/* ---- forward ---- */

/* Rows [lo, hi) of out: wte[tok] (or 0, a token not held) + wpe[t] (or 0). */
static void embed_fwd(size_t lo, size_t hi, void *arg) {
    const embed_args_t *a = arg;
    int64_t C = a->C;
    for (int64_t r = (int64_t)lo; r < (int64_t)hi; r++) {
        int64_t v = (int64_t)a->tok[r] - a->v0;
        const float *e = v >= 0 && v < a->nv ? a->wte + v * C : NULL;
        const float *p = a->wpe ? a->wpe + (r % a->T) * C : NULL;
        float *o = a->out + r * C;
        if (e && p)
            for (int64_t c = 0; c < C; c++) o[c] = e[c] + p[c];
        else if (e || p)
            memcpy(o, e ? e : p, (size_t)C * sizeof *o);
        else
            memset(o, 0, (size_t)C * sizeof *o);
    }
}

void sym_embed_shard_forward(float *out, const int32_t *tok, const float *wte, int64_t v0,
                             int64_t nv, const float *wpe, int B, int T, int C) {
    embed_args_t a = {0};
    a.out = out;
    a.tok = tok;
    a.wte = wte;
    a.wpe = wpe;
    a.T = T;
    a.C = C;
    a.N = (int64_t)B * T;
    a.v0 = v0;
    a.nv = nv;
    if (a.N <= 0 || C <= 0) return;
    sym__parallel_for((size_t)a.N, (size_t)a.N * (size_t)C, embed_fwd, &a);
}

/* out (B,T,C) = wte (V,C)[tok (B,T)] + wpe (T,C)[t] */
void sym_embed_forward(float *out, const int32_t *tok, const float *wte, const float *wpe,
                       int B, int T, int C) {
    sym_embed_shard_forward(out, tok, wte, 0, INT64_MAX, wpe, B, T, C);
}

/* ---- backward ---- */

/* Column blocks [lo, hi): every row (b, t) in order adds its slice of dout
 * into dwte[tok] and dwpe[t]. */
static void embed_bwd(size_t lo, size_t hi, void *arg) {
    const embed_args_t *a = arg;
    int64_t C = a->C, c0 = (int64_t)lo * COL_BLOCK, c1 = (int64_t)hi * COL_BLOCK;
    if (c1 > C) c1 = C;
    for (int64_t r = 0; r < a->N; r++) {
        const float *g = a->dout + r * C;
        int64_t v = (int64_t)a->tok[r] - a->v0;
        float *p = a->dwpe + (r % a->T) * C;
        if (v >= 0 && v < a->nv) {
            float *e = a->dwte + v * C;
            for (int64_t c = c0; c < c1; c++) {
                e[c] += g[c];
                p[c] += g[c];
            }
        } else {
            for (int64_t c = c0; c < c1; c++) p[c] += g[c];
        }
    }
}

/* dwte (V,C) += dout (B,T,C) at tok (B,T); dwpe (T,C) += dout summed over b */
void sym_embed_backward(float *dwte, float *dwpe, const float *dout, const int32_t *tok,
                        int B, int T, int C) {
    sym_embed_shard_backward(dwte, dwpe, dout, tok, 0, INT64_MAX, B, T, C);
}

void sym_embed_shard_backward(float *dwte, float *dwpe, const float *dout, const int32_t *tok,
                              int64_t v0, int64_t nv, int B, int T, int C) {
    embed_args_t a = {0};
    a.dwte = dwte;
    a.dwpe = dwpe;
    a.dout = dout;
    a.tok = tok;
    a.T = T;
    a.C = C;
    a.N = (int64_t)B * T;
    a.v0 = v0;
    a.nv = nv;
    if (a.N <= 0 || C <= 0) return;
    size_t blocks = ((size_t)C + COL_BLOCK - 1) / COL_BLOCK;
    sym__parallel_for(blocks, (size_t)a.N * (size_t)C, embed_bwd, &a);
}
