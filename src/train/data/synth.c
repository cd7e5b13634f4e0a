/*
 * synth.c — the generated data set: 10 classes of 28x28 grey images, for
 * machines without Fashion-MNIST and for quick tests.
 *
 * Each class has a template of three soft blobs (drawn from the seed). A sample
 * is its class template, shifted by up to 3 pixels, scaled in brightness, with
 * another class's template mixed in (up to 0.8 of it) and pixel noise on top:
 * learnable, not trivially. Sample i of a split draws from its own stream, so generating
 * the first n samples gives the first n of any larger set.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <symtrain/data.h>
#include <symtrain/rng.h>

#include "internal.h"

#define SIDE 28
#define DIM (SIDE * SIDE)
#define CLASSES 10
#define BLOBS 3

static void make_templates(uint64_t seed, float tmpl[CLASSES][DIM]) {
    sym_rng_t r = sym_rng_stream(sym_rng_key(seed, SYM_RNG_SYNTH, 0));
    for (int c = 0; c < CLASSES; c++) {
        float cx[BLOBS], cy[BLOBS], sig[BLOBS], amp[BLOBS];
        for (int b = 0; b < BLOBS; b++) {
            cx[b] = 6.0f + 16.0f * sym_rng_uniform(&r);
            cy[b] = 6.0f + 16.0f * sym_rng_uniform(&r);
            sig[b] = 2.0f + 3.0f * sym_rng_uniform(&r);
            amp[b] = 0.5f + 0.5f * sym_rng_uniform(&r);
        }
        for (int y = 0; y < SIDE; y++)
            for (int x = 0; x < SIDE; x++) {
                float v = 0.0f;
                for (int b = 0; b < BLOBS; b++) {
                    float dx = (float)x - cx[b], dy = (float)y - cy[b];
                    v += amp[b] * expf(-(dx * dx + dy * dy) / (2.0f * sig[b] * sig[b]));
                }
                tmpl[c][y * SIDE + x] = v > 1.0f ? 1.0f : v;
            }
    }
}

int sym_dataset_generate(int64_t n, uint64_t seed, int train, sym_dataset_t *out) {
    memset(out, 0, sizeof *out);
    if (n < 1) return sym__error(SYM_EINVAL, "a generated data set needs at least one sample");
    float(*tmpl)[DIM] = malloc(sizeof(float) * CLASSES * DIM);
    out->pixels = malloc((size_t)n * DIM);
    out->labels = malloc((size_t)n);
    if (!tmpl || !out->pixels || !out->labels) {
        free(tmpl);
        sym_dataset_free(out);
        return sym__error(SYM_ENOMEM, "out of memory generating %lld samples", (long long)n);
    }
    make_templates(seed, tmpl);
    uint64_t split = train ? 1 : 2;
    for (int64_t i = 0; i < n; i++) {
        sym_rng_t r = sym_rng_stream(sym_rng_key(seed, SYM_RNG_SYNTH, (split << 40) + (uint64_t)i));
        int c = (int)sym_rng_below(&r, CLASSES);
        int other = (int)sym_rng_below(&r, CLASSES);
        int sx = (int)sym_rng_below(&r, 7) - 3, sy = (int)sym_rng_below(&r, 7) - 3;
        float bright = 0.7f + 0.5f * sym_rng_uniform(&r);
        float mix = 0.8f * sym_rng_uniform(&r);
        uint8_t *px = out->pixels + (size_t)i * DIM;
        for (int y = 0; y < SIDE; y++)
            for (int x = 0; x < SIDE; x++) {
                int tx = x - sx, ty = y - sy;
                float t = 0.0f, o = 0.0f;
                if (tx >= 0 && tx < SIDE && ty >= 0 && ty < SIDE) {
                    t = tmpl[c][ty * SIDE + tx];
                    o = tmpl[other][ty * SIDE + tx];
                }
                float v = bright * t + mix * o + 0.6f * (sym_rng_uniform(&r) - 0.5f);
                v = v < 0.0f ? 0.0f : v > 1.0f ? 1.0f : v;
                px[y * SIDE + x] = (uint8_t)lrintf(v * 255.0f);
            }
        out->labels[i] = (uint8_t)c;
    }
    free(tmpl);
    snprintf(out->name, sizeof out->name, "generated");
    out->n = n;
    out->dim = DIM;
    out->classes = CLASSES;
    sym_dataset_set_stats(out);
    return SYM_OK;
}
