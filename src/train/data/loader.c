/*
 * loader.c — the epoch permutation and each PE's share of every global batch.
 *
 * The permutation of epoch e is a Fisher-Yates shuffle driven by the stream
 * keyed (seed, SYM_RNG_DATA, e): it depends on nothing else, in particular not
 * on the number of PEs. A global batch is the next B entries of it; PE p takes
 * the contiguous block sym_shard_range(gsize, npes, p) of those, or, with
 * load balancing, the block its share gives it (the shares come from
 * balance/: this file only turns counts into blocks).
 */
#include <stdlib.h>
#include <string.h>

#include <symtrain/data.h>
#include <symtrain/rng.h>

#include "internal.h"

void sym_shard_range(int64_t count, int npes, int pe, int64_t *offset, int64_t *len) {
    int64_t base = count / npes, extra = count % npes;
    *len = base + (pe < extra ? 1 : 0);
    *offset = (int64_t)pe * base + (pe < extra ? pe : extra);
}

int sym_loader_init(sym_loader_t *l, int64_t n, int global_batch, int npes, int pe,
                    uint64_t seed) {
    memset(l, 0, sizeof *l);
    if (n < 1 || global_batch < 1 || npes < 1 || pe < 0 || pe >= npes)
        return sym__error(SYM_EINVAL, "loader: %lld samples, batch %d, PE %d of %d is not valid",
                          (long long)n, global_batch, pe, npes);
    l->perm = malloc(sizeof(int64_t) * (size_t)n);
    l->scaled = malloc(sizeof(int) * (size_t)npes);
    if (!l->perm || !l->scaled) {
        sym_loader_free(l);
        return sym__error(SYM_ENOMEM, "out of memory for the epoch permutation");
    }
    l->n = n;
    l->global_batch = global_batch;
    l->npes = npes;
    l->pe = pe;
    l->seed = seed;
    l->epoch = -1;
    return SYM_OK;
}

void sym_loader_free(sym_loader_t *l) {
    free(l->perm);
    free(l->scaled);
    memset(l, 0, sizeof *l);
}

void sym_loader_set_epoch(sym_loader_t *l, int64_t epoch) {
    if (l->epoch == epoch) return;
    for (int64_t i = 0; i < l->n; i++) l->perm[i] = i;
    sym_rng_t r = sym_rng_stream(sym_rng_key(l->seed, SYM_RNG_DATA, (uint64_t)epoch));
    for (int64_t i = l->n - 1; i > 0; i--) {
        int64_t j = (int64_t)sym_rng_below(&r, (uint64_t)i + 1);
        int64_t t = l->perm[i];
        l->perm[i] = l->perm[j];
        l->perm[j] = t;
    }
    l->epoch = epoch;
    l->key = r.key;
    l->draws = r.counter;
}

/* The even split of the gsize samples from start (sym_shard_range). */
static sym_batch_t even_batch(const sym_loader_t *l, int64_t start, int gsize) {
    sym_batch_t b;
    b.start = start;
    b.gsize = gsize;
    int64_t off, len;
    sym_shard_range(b.gsize, l->npes, l->pe, &off, &len);
    b.row0 = (int)off;
    b.count = (int)len;
    b.idx = l->perm + start + off;
    return b;
}

sym_batch_t sym_loader_batch(const sym_loader_t *l, int64_t start) {
    int64_t left = l->n - start;
    return even_batch(l, start, (int)(left < l->global_batch ? left : l->global_batch));
}

sym_batch_t sym_loader_batch_shares(sym_loader_t *l, int64_t start, const int *shares) {
    return sym_loader_micro_batch(l, start, l->global_batch, shares);
}

sym_batch_t sym_loader_micro_batch(sym_loader_t *l, int64_t start, int size, const int *shares) {
    sym_batch_t b;
    b.start = start;
    int64_t left = l->n - start;
    b.gsize = (int)(left < size ? left : size);
    if (!shares) return even_batch(l, start, b.gsize);
    const int *s = shares;
    if (b.gsize != l->global_batch) {
        sym_shares_scale(shares, l->npes, b.gsize, l->scaled);
        s = l->scaled;
    }
    int off = 0;
    for (int p = 0; p < l->pe; p++) off += s[p];
    b.row0 = off;
    b.count = s[l->pe];
    b.idx = l->perm + start + off;
    return b;
}

/* ---- shares ---- */

/* Weight p: wd[p], or wi[p] when wd is NULL (integer shares, scaled). */
static double weight_of(const double *wd, const int *wi, int p) {
    double w = wd ? wd[p] : (double)wi[p];
    return w > 0 ? w : 0;
}

static void apportion(const double *wd, const int *wi, int npes, int total, int lo, int cap,
                      int *out) {
    double W = 0;
    for (int p = 0; p < npes; p++) W += weight_of(wd, wi, p);
    int sum = 0;
    for (int p = 0; p < npes; p++) {
        double w = weight_of(wd, wi, p);
        double f = W > 0 ? (double)total * w / W : (double)total / npes;
        int n = (int)f;
        out[p] = n < lo ? lo : n > cap ? cap : n;
        sum += out[p];
    }
    /* Fix the rounding one sample at a time: add where the step time grows
     * least, take where it is largest (a zero weight counts as tiny). */
    while (sum != total) {
        int best = -1;
        double bv = 0;
        for (int p = 0; p < npes; p++) {
            double w = weight_of(wd, wi, p);
            if (w < 1e-300) w = 1e-300;
            if (sum < total && out[p] < cap) {
                double v = (out[p] + 1) / w;
                if (best < 0 || v < bv) best = p, bv = v;
            } else if (sum > total && out[p] > lo) {
                double v = out[p] / w;
                if (best < 0 || v > bv) best = p, bv = v;
            }
        }
        if (best < 0) break; /* lo / cap cannot meet total: the caller's bounds are wrong */
        out[best] += sum < total ? 1 : -1;
        sum += sum < total ? 1 : -1;
    }
}

void sym_shares_apportion(const double *weight, int npes, int total, int lo, int cap, int *out) {
    apportion(weight, NULL, npes, total, lo, cap, out);
}

void sym_shares_scale(const int *shares, int npes, int gsize, int *out) {
    int B = 0;
    for (int p = 0; p < npes; p++) B += shares[p];
    if (gsize == B) {
        for (int p = 0; p < npes; p++) out[p] = shares[p];
        return;
    }
    if (gsize < npes) {
        for (int p = 0; p < npes; p++) {
            int64_t off, len;
            sym_shard_range(gsize, npes, p, &off, &len);
            out[p] = (int)len;
        }
        return;
    }
    apportion(NULL, shares, npes, gsize, 1, gsize, out);
}

int64_t sym_loader_steps_per_epoch(const sym_loader_t *l) {
    return (l->n + l->global_batch - 1) / l->global_batch;
}
