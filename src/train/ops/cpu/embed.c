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
 */
#include <stddef.h>
#include <stdint.h>

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
    const float *wte, *wpe;
    int64_t T, C, N; /* N = B * T rows */
} embed_args_t;

/* ---- forward ---- */

/* Rows [lo, hi) of out: wte[tok] + wpe[t]. */
static void embed_fwd(size_t lo, size_t hi, void *arg) {
    const embed_args_t *a = arg;
    int64_t C = a->C;
    for (int64_t r = (int64_t)lo; r < (int64_t)hi; r++) {
        const float *e = a->wte + (int64_t)a->tok[r] * C;
        const float *p = a->wpe + (r % a->T) * C;
        float *o = a->out + r * C;
        for (int64_t c = 0; c < C; c++) o[c] = e[c] + p[c];
    }
}

/* out (B,T,C) = wte (V,C)[tok (B,T)] + wpe (T,C)[t] */
void sym_embed_forward(float *out, const int32_t *tok, const float *wte, const float *wpe,
                       int B, int T, int C) {
    embed_args_t a = {0};
    a.out = out;
    a.tok = tok;
    a.wte = wte;
    a.wpe = wpe;
    a.T = T;
    a.C = C;
    a.N = (int64_t)B * T;
    if (a.N <= 0 || C <= 0) return;
    sym__parallel_for((size_t)a.N, (size_t)a.N * (size_t)C, embed_fwd, &a);
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
        float *e = a->dwte + (int64_t)a->tok[r] * C;
        float *p = a->dwpe + (r % a->T) * C;
        for (int64_t c = c0; c < c1; c++) {
            e[c] += g[c];
            p[c] += g[c];
        }
    }
}

/* dwte (V,C) += dout (B,T,C) at tok (B,T); dwpe (T,C) += dout summed over b */
void sym_embed_backward(float *dwte, float *dwpe, const float *dout, const int32_t *tok,
                        int B, int T, int C) {
    embed_args_t a = {0};
    a.dwte = dwte;
    a.dwpe = dwpe;
    a.dout = dout;
    a.tok = tok;
    a.T = T;
    a.C = C;
    a.N = (int64_t)B * T;
    if (a.N <= 0 || C <= 0) return;
    size_t blocks = ((size_t)C + COL_BLOCK - 1) / COL_BLOCK;
    sym__parallel_for(blocks, (size_t)a.N * (size_t)C, embed_bwd, &a);
}
