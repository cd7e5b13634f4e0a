/*
 * dropout.c — inverted dropout whose masks are a pure function of
 * (key, step, global row, unit), so any split of a batch over PEs draws the
 * same masks as one PE holding all of it, and a resumed run draws what the
 * uninterrupted run drew.
 */
#include <string.h>

#include <symtrain/nn.h>
#include <symtrain/rng.h>

#include "core/parallel.h"

typedef struct {
    const float *x, *dy, *mask;
    float *y, *m;
    int64_t width, row0;
    uint32_t threshold;
    float scale;
    uint64_t step_key;
} drop_args_t;

/* Rows [lo, hi): draw the mask and apply it. */
static void drop_fwd(size_t lo, size_t hi, void *arg) {
    const drop_args_t *a = arg;
    for (int64_t r = (int64_t)lo; r < (int64_t)hi; r++) {
        uint64_t row_key = sym_rng_mix(a->step_key ^ (uint64_t)(a->row0 + r) * 0x9E3779B97F4A7C15ull);
        float *m = a->m + r * a->width;
        for (int64_t j = 0; j < a->width; j++) {
            uint32_t u = (uint32_t)(sym_rng_hash(row_key, (uint64_t)j) >> 40);
            m[j] = u >= a->threshold ? a->scale : 0.0f;
        }
        for (int64_t j = 0; j < a->width; j++) a->y[r * a->width + j] = a->x[r * a->width + j] * m[j];
    }
}

static void drop_bwd(size_t lo, size_t hi, void *arg) {
    const drop_args_t *a = arg;
    for (size_t i = lo; i < hi; i++) a->y[i] = a->dy[i] * a->mask[i];
}

void sym_dropout_forward(const float *x, float *y, float *mask, int64_t rows, int64_t width,
                         float p, uint64_t key, uint64_t step, int64_t row0) {
    size_t n = (size_t)rows * (size_t)width;
    if (p <= 0.0f) {
        if (y != x) memmove(y, x, n * sizeof *y);
        for (size_t i = 0; i < n; i++) mask[i] = 1.0f;
        return;
    }
    /* Keep when the draw's top 24 bits, as a fraction, are >= p. */
    drop_args_t a = {0};
    a.x = x;
    a.y = y;
    a.m = mask;
    a.width = width;
    a.row0 = row0;
    a.threshold = (uint32_t)((double)p * 16777216.0);
    a.scale = 1.0f / (1.0f - p);
    a.step_key = sym_rng_mix(key ^ sym_rng_mix(step + 0x632BE59BD9B4E019ull));
    sym__parallel_for((size_t)rows, n, drop_fwd, &a); /* split by rows */
}

void sym_dropout_backward(const float *dy, const float *mask, float *dx, size_t n) {
    drop_args_t a = {0};
    a.dy = dy;
    a.mask = mask;
    a.y = dx;
    sym__parallel_for(n, n, drop_bwd, &a);
}
