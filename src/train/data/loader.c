/*
 * loader.c — the epoch permutation and each PE's share of every global batch.
 *
 * The permutation of epoch e is a Fisher-Yates shuffle driven by the stream
 * keyed (seed, SYM_RNG_DATA, e): it depends on nothing else, in particular not
 * on the number of PEs. A global batch is the next B entries of it; PE p takes
 * the contiguous block sym_shard_range(gsize, npes, p) of those.
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
    if (!l->perm) return sym__error(SYM_ENOMEM, "out of memory for the epoch permutation");
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

sym_batch_t sym_loader_batch(const sym_loader_t *l, int64_t start) {
    sym_batch_t b;
    b.start = start;
    int64_t left = l->n - start;
    b.gsize = (int)(left < l->global_batch ? left : l->global_batch);
    int64_t off, len;
    sym_shard_range(b.gsize, l->npes, l->pe, &off, &len);
    b.row0 = (int)off;
    b.count = (int)len;
    b.idx = l->perm + start + off;
    return b;
}

int64_t sym_loader_steps_per_epoch(const sym_loader_t *l) {
    return (l->n + l->global_batch - 1) / l->global_batch;
}
