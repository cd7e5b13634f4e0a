/*
 * dataset.c — what every data set shares: normalisation statistics, turning a
 * batch of byte images into fp32, truncation, and freeing.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <symtrain/data.h>

void sym_dataset_set_stats(sym_dataset_t *ds) {
    /* A histogram makes this exact and cheap: 256 bins, then two sums. */
    uint64_t hist[256] = {0};
    size_t total = (size_t)ds->n * (size_t)ds->dim;
    for (size_t i = 0; i < total; i++) hist[ds->pixels[i]]++;
    double s = 0, s2 = 0;
    for (int v = 0; v < 256; v++) {
        double x = v / 255.0;
        s += x * (double)hist[v];
        s2 += x * x * (double)hist[v];
    }
    double mean = total ? s / (double)total : 0.0;
    double var = total ? s2 / (double)total - mean * mean : 1.0;
    ds->mean = (float)mean;
    ds->std = (float)(var > 1e-12 ? sqrt(var) : 1.0);
}

void sym_dataset_gather(const sym_dataset_t *ds, const int64_t *idx, int count, float *x,
                        int32_t *y) {
    float lut[256];
    float inv = 1.0f / ds->std;
    for (int v = 0; v < 256; v++) lut[v] = ((float)v / 255.0f - ds->mean) * inv;
    for (int r = 0; r < count; r++) {
        const uint8_t *src = ds->pixels + (size_t)idx[r] * (size_t)ds->dim;
        float *dst = x + (size_t)r * (size_t)ds->dim;
        for (int j = 0; j < ds->dim; j++) dst[j] = lut[src[j]];
        y[r] = ds->labels[idx[r]];
    }
}

void sym_dataset_truncate(sym_dataset_t *ds, int64_t n) {
    if (n > 0 && n < ds->n) ds->n = n;
}

void sym_dataset_free(sym_dataset_t *ds) {
    free(ds->pixels);
    free(ds->labels);
    memset(ds, 0, sizeof *ds);
}
