/*
 * train_shard — the loader's sharding, as every PE of a job would compute it.
 *
 * For PE counts 1..7, data set sizes with and without a short last batch, and
 * batch sizes from the PE count up: over each epoch every sample is used
 * exactly once across the PEs; the PEs' blocks of each global batch, put side
 * by side in PE order, are exactly the batch one PE would take (which is what
 * makes N-PE training equal 1-PE training); each PE's block is its
 * sym_shard_range. The permutation depends only on (seed, epoch): recomputed
 * it is the same, another epoch or seed gives another one. Uneven shares (load
 * balancing): apportioned counts sum to the total within their bounds and are
 * min-max optimal for their weights; the loader's blocks with shares still
 * tile each global batch in PE order, so the samples of a step do not change.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <symtrain/symtrain.h>

#include "test.h"

static void check_range(void) {
    for (int64_t count = 0; count < 40; count++)
        for (int n = 1; n <= 9; n++) {
            int64_t next = 0;
            for (int pe = 0; pe < n; pe++) {
                int64_t off, len;
                sym_shard_range(count, n, pe, &off, &len);
                CHECK(off == next, "count %lld, %d PEs: PE %d starts at %lld, not %lld",
                      (long long)count, n, pe, (long long)off, (long long)next);
                CHECK(len == count / n || len == count / n + 1, "unbalanced block %lld", (long long)len);
                next += len;
            }
            CHECK(next == count, "count %lld, %d PEs: blocks cover %lld", (long long)count, n, (long long)next);
        }
}

static void check_sharding(uint64_t seed) {
    static const int64_t sizes[] = {1, 7, 100, 1003, 4096};
    int configs = 0;
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        int64_t n = sizes[si];
        int *used = malloc(sizeof(int) * (size_t)n);
        for (int npes = 1; npes <= 7; npes++) {
            int batches[] = {npes, npes + 1, 3 * npes + 2, 64, 1000};
            for (size_t bi = 0; bi < sizeof batches / sizeof batches[0]; bi++) {
                int B = batches[bi];
                if (B < npes) continue;
                sym_loader_t one, pes[7];
                CHECK(sym_loader_init(&one, n, B, 1, 0, seed) == 0, "%s", sym_last_error());
                for (int pe = 0; pe < npes; pe++)
                    CHECK(sym_loader_init(&pes[pe], n, B, npes, pe, seed) == 0, "%s", sym_last_error());
                for (int64_t epoch = 0; epoch < 3; epoch++) {
                    memset(used, 0, sizeof(int) * (size_t)n);
                    sym_loader_set_epoch(&one, epoch);
                    for (int pe = 0; pe < npes; pe++) sym_loader_set_epoch(&pes[pe], epoch);
                    int64_t steps = 0;
                    for (int64_t start = 0; start < n; start += B, steps++) {
                        sym_batch_t whole = sym_loader_batch(&one, start);
                        CHECK(whole.gsize == (n - start < B ? n - start : B), "global batch size %d", whole.gsize);
                        int pos = 0;
                        for (int pe = 0; pe < npes; pe++) {
                            sym_batch_t b = sym_loader_batch(&pes[pe], start);
                            int64_t off, len;
                            sym_shard_range(whole.gsize, npes, pe, &off, &len);
                            CHECK(b.gsize == whole.gsize && b.row0 == off && b.count == len,
                                  "n %lld B %d: PE %d of %d has rows [%d, +%d) of %d, expected [%lld, +%lld)",
                                  (long long)n, B, pe, npes, b.row0, b.count, b.gsize, (long long)off, (long long)len);
                            CHECK(b.row0 == pos, "PE %d's block does not follow PE %d's", pe, pe - 1);
                            for (int k = 0; k < b.count; k++) {
                                int64_t s = b.idx[k];
                                CHECK(s >= 0 && s < n, "sample %lld out of range", (long long)s);
                                CHECK(s == whole.idx[pos + k],
                                      "n %lld B %d epoch %lld: PE %d row %d is sample %lld, one PE "
                                      "takes %lld there", (long long)n, B, (long long)epoch, pe, k,
                                      (long long)s, (long long)whole.idx[pos + k]);
                                used[s]++;
                            }
                            pos += b.count;
                        }
                        CHECK(pos == whole.gsize, "the blocks cover %d of %d rows", pos, whole.gsize);
                    }
                    CHECK(steps == sym_loader_steps_per_epoch(&one), "steps per epoch %lld vs %lld",
                          (long long)steps, (long long)sym_loader_steps_per_epoch(&one));
                    for (int64_t s = 0; s < n; s++)
                        CHECK(used[s] == 1, "n %lld, B %d, %d PEs, epoch %lld: sample %lld used %d times",
                              (long long)n, B, npes, (long long)epoch, (long long)s, used[s]);
                }
                sym_loader_free(&one);
                for (int pe = 0; pe < npes; pe++) sym_loader_free(&pes[pe]);
                configs++;
            }
        }
        free(used);
    }
    printf("  %d (size, PEs, batch) combinations x 3 epochs: every sample once per epoch, shards "
           "= the 1-PE batch\n", configs);
}

static void check_permutation(uint64_t seed) {
    enum { N = 5000 };
    sym_loader_t a, b, c;
    CHECK(sym_loader_init(&a, N, 100, 1, 0, seed) == 0 && sym_loader_init(&b, N, 37, 3, 2, seed) == 0 &&
          sym_loader_init(&c, N, 100, 1, 0, seed + 1) == 0, "%s", sym_last_error());
    int64_t *e0 = malloc(sizeof(int64_t) * N);
    sym_loader_set_epoch(&a, 0);
    memcpy(e0, a.perm, sizeof(int64_t) * N);
    sym_loader_set_epoch(&a, 1);
    sym_loader_set_epoch(&b, 0); /* other batch and PE count: same permutation */
    CHECK(memcmp(e0, b.perm, sizeof(int64_t) * N) == 0, "the permutation depends on the batch or PE count");
    sym_loader_set_epoch(&c, 0);
    int same_epoch = 0, same_seed = 0, fixed = 0;
    for (int i = 0; i < N; i++) {
        same_epoch += e0[i] == a.perm[i];
        same_seed += e0[i] == c.perm[i];
        fixed += e0[i] == i;
    }
    /* a random permutation has about one fixed point */
    CHECK(same_epoch < 20 && same_seed < 20 && fixed < 20,
          "permutations look alike: %d equal across epochs, %d across seeds, %d fixed points",
          same_epoch, same_seed, fixed);
    sym_loader_set_epoch(&a, 0);
    CHECK(memcmp(e0, a.perm, sizeof(int64_t) * N) == 0, "epoch 0 recomputed differs");
    printf("  permutation: a function of (seed, epoch) only\n");
    free(e0);
    sym_loader_free(&a);
    sym_loader_free(&b);
    sym_loader_free(&c);
}

static void check_apportion(uint64_t seed) {
    test_rng_t rng = test_rng(seed, 1);
    int cases = 0;
    for (int npes = 1; npes <= 9; npes++)
        for (int total = npes; total <= 300; total += 1 + total / 7) {
            double w[9];
            int out[9];
            for (int t = 0; t < 20; t++, cases++) {
                for (int p = 0; p < npes; p++) /* speeds over three decades, some zero */
                    w[p] = t % 5 == 4 && p == 0 ? 0 : 0.01 + (double)(test_next(&rng) % 100000) / 1000;
                int cap = t % 2 ? total : (2 * ((total + npes - 1) / npes) < total - npes + 1
                                               ? 2 * ((total + npes - 1) / npes)
                                               : total - npes + 1);
                if (cap < 1) cap = 1;
                sym_shares_apportion(w, npes, total, 1, cap, out);
                int sum = 0;
                for (int p = 0; p < npes; p++) {
                    CHECK(out[p] >= 1 && out[p] <= cap, "%d PEs, total %d: PE %d gets %d (1..%d)",
                          npes, total, p, out[p], cap);
                    sum += out[p];
                }
                CHECK(sum == total, "%d PEs: shares sum to %d, not %d", npes, sum, total);
                /* min-max optimal: no PE above the floor is slower than any PE with room
                 * would be with one sample more */
                double worst = 0, best_add = INFINITY;
                for (int p = 0; p < npes; p++) {
                    double wp = w[p] > 1e-300 ? w[p] : 1e-300;
                    if (out[p] > 1 && out[p] / wp > worst) worst = out[p] / wp;
                    if (out[p] < cap && (out[p] + 1) / wp < best_add) best_add = (out[p] + 1) / wp;
                }
                CHECK(worst <= best_add * (1 + 1e-12),
                      "%d PEs, total %d: a share of time %g could move to one of time %g", npes,
                      total, worst, best_add);
                /* integer weights that already sum to the total come back unchanged */
                double wi[9];
                for (int p = 0; p < npes; p++) wi[p] = out[p];
                int again[9];
                sym_shares_apportion(wi, npes, total, 1, cap, again);
                CHECK(!memcmp(again, out, sizeof(int) * (size_t)npes), "shares are not a fixed point");
            }
        }
    printf("  %d apportionments: sum, bounds and min-max optimality hold\n", cases);
}

/* Uneven shares: every global batch, short ones included, is tiled in PE
 * order by blocks of the shares' sizes (scaled for a short batch). */
static void check_shares_batches(uint64_t seed) {
    test_rng_t rng = test_rng(seed, 2);
    int configs = 0;
    for (int npes = 1; npes <= 7; npes++)
        for (int B = npes; B <= 70; B += 9) {
            int64_t n = 3 * B + (int64_t)(test_next(&rng) % (uint64_t)B); /* a short last batch */
            double w[7];
            int shares[7];
            for (int p = 0; p < npes; p++) w[p] = 1 + (double)(test_next(&rng) % 1000);
            sym_shares_apportion(w, npes, B, 1, B, shares);
            sym_loader_t one, pes[7];
            CHECK(sym_loader_init(&one, n, B, 1, 0, seed) == 0, "%s", sym_last_error());
            for (int pe = 0; pe < npes; pe++)
                CHECK(sym_loader_init(&pes[pe], n, B, npes, pe, seed) == 0, "%s", sym_last_error());
            sym_loader_set_epoch(&one, 1);
            for (int pe = 0; pe < npes; pe++) sym_loader_set_epoch(&pes[pe], 1);
            for (int64_t start = 0; start < n; start += B) {
                sym_batch_t whole = sym_loader_batch(&one, start);
                int scaled[7], pos = 0;
                sym_shares_scale(shares, npes, whole.gsize, scaled);
                for (int pe = 0; pe < npes; pe++) {
                    sym_batch_t b = sym_loader_batch_shares(&pes[pe], start, shares);
                    CHECK(b.gsize == whole.gsize && b.row0 == pos, "PE %d's block starts at %d, not %d",
                          pe, b.row0, pos);
                    CHECK(b.count == (whole.gsize == B ? shares[pe] : scaled[pe]),
                          "PE %d computes %d rows of a batch of %d (share %d)", pe, b.count,
                          whole.gsize, shares[pe]);
                    CHECK(whole.gsize < npes || b.count >= 1, "PE %d gets no sample of %d", pe,
                          whole.gsize);
                    for (int k = 0; k < b.count; k++)
                        CHECK(b.idx[k] == whole.idx[pos + k], "PE %d row %d is another sample", pe, k);
                    pos += b.count;
                }
                CHECK(pos == whole.gsize, "the blocks cover %d of %d rows", pos, whole.gsize);
            }
            sym_loader_free(&one);
            for (int pe = 0; pe < npes; pe++) sym_loader_free(&pes[pe]);
            configs++;
        }
    printf("  %d (PEs, batch) with uneven shares: each global batch tiled in PE order\n", configs);
}

int main(void) {
    uint64_t seed = test_seed();
    printf("train_shard: seed %llu\n", (unsigned long long)seed);
    check_range();
    check_sharding(seed);
    check_permutation(seed);
    check_apportion(seed);
    check_shares_batches(seed);
    printf("train_shard: ok\n");
    return 0;
}
