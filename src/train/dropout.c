/*
 * dropout.c — inverted dropout whose masks are a pure function of
 * (key, step, global row, unit), so any split of a batch over PEs draws the
 * same masks as one PE holding all of it, and a resumed run draws what the
 * uninterrupted run drew.
 */
#include <string.h>

#include <symtrain/nn.h>
#include <symtrain/rng.h>

void sym_dropout_forward(const float *x, float *y, float *mask, int64_t rows, int64_t width,
                         float p, uint64_t key, uint64_t step, int64_t row0) {
    size_t n = (size_t)rows * (size_t)width;
    if (p <= 0.0f) {
        if (y != x) memmove(y, x, n * sizeof *y);
        for (size_t i = 0; i < n; i++) mask[i] = 1.0f;
        return;
    }
    /* Keep when the draw's top 24 bits, as a fraction, are >= p. */
    const uint32_t threshold = (uint32_t)((double)p * 16777216.0);
    const float scale = 1.0f / (1.0f - p);
    const uint64_t step_key = sym_rng_mix(key ^ sym_rng_mix(step + 0x632BE59BD9B4E019ull));
    for (int64_t r = 0; r < rows; r++) {
        uint64_t row_key = sym_rng_mix(step_key ^ (uint64_t)(row0 + r) * 0x9E3779B97F4A7C15ull);
        float *m = mask + r * width;
        for (int64_t j = 0; j < width; j++) {
            uint32_t u = (uint32_t)(sym_rng_hash(row_key, (uint64_t)j) >> 40);
            m[j] = u >= threshold ? scale : 0.0f;
        }
    }
    for (size_t i = 0; i < n; i++) y[i] = x[i] * mask[i];
}

void sym_dropout_backward(const float *dy, const float *mask, float *dx, size_t n) {
    for (size_t i = 0; i < n; i++) dx[i] = dy[i] * mask[i];
}
