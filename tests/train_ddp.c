/*
 * train_ddp — the bucketed gradient all-reduce, on every PE of the job.
 *
 * A symmetric gradient array cut into "tensors" of random sizes; each PE fills
 * it with its own random values (from the shared seed and its PE number, so
 * every PE can compute every other PE's values and the exact average in
 * double). A backward-like sequence reports the tensors finished from the last
 * to the first; buckets must start as soon as they are wholly finished (before
 * sym_ddp_finish), cover the array exactly, and end at tensor boundaries; after
 * finish every element must equal the fp64 average to fp32 rounding, on every
 * PE. Repeated over several steps and bucket sizes, one bucket included.
 *
 * What the DDP started is observed through sym_ddp_stats (bytes_reduced grows
 * as each bucket's all-reduce starts): after each tensor it must be exactly
 * the buckets lying wholly in the finished part, some of it before the last
 * tensor (the overlap), all of it after finish. With one PE nothing is ever
 * started (the average of one is itself), and that is checked instead.
 */
#include <math.h>
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <symtrain/symtrain.h>

#include "test.h"

enum { NT = 23 };


static float value(uint64_t seed, int pe, int step, size_t i) {
    test_rng_t r = test_rng(seed ^ ((uint64_t)step << 32), (uint64_t)pe * 1000003u + i);
    return (float)(2 * test_uniform(&r) - 1);
}

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    uint64_t seed = test_pe_start("train_ddp");

    /* tensor boundaries: random sizes, the same on every PE */
    test_rng_t r = test_rng(seed, 99);
    size_t cuts[NT], count = 0;
    for (int t = 0; t < NT; t++) {
        cuts[t] = count;
        count += 1 + (size_t)(test_next(&r) % (t % 5 == 0 ? 40000 : 900));
    }
    float *g = shmem_malloc(count * sizeof *g);
    CHECK(g != NULL, "shmem_malloc of %zu floats", count);

    static const double bucket_kib[] = {1, 16, 100, 100000};
    for (size_t bk = 0; bk < sizeof bucket_kib / sizeof bucket_kib[0]; bk++) {
        sym_ddp_t *d;
        CHECK(sym_ddp_create(SHMEM_TEAM_WORLD, g, count, cuts, NT,
                             (size_t)(bucket_kib[bk] * 1024), &d) == 0,
              "%s", sym_last_error());
        int nb = sym_ddp_num_buckets(d);
        /* buckets: launch order from the end, contiguous, at tensor boundaries */
        size_t expect_hi = count;
        for (int b = 0; b < nb; b++) {
            size_t lo, hi;
            sym_ddp_bucket(d, b, &lo, &hi);
            CHECK(hi == expect_hi && lo < hi, "bucket %d is [%zu, %zu), expected to end at %zu", b, lo, hi, expect_hi);
            int at_cut = 0;
            for (int t = 0; t < NT; t++) at_cut |= cuts[t] == lo;
            CHECK(at_cut, "bucket %d starts at %zu, not a tensor boundary", b, lo);
            CHECK(b == nb - 1 || (hi - lo) * 4 >= bucket_kib[bk] * 1024,
                  "bucket %d holds %zu bytes, less than the bucket size", b, (hi - lo) * 4);
            expect_hi = lo;
        }
        CHECK(expect_hi == 0, "buckets do not reach offset 0");
        if (bucket_kib[bk] >= 100000) CHECK(nb == 1, "a bucket larger than everything gave %d buckets", nb);

        for (int step = 0; step < 3; step++) {
            for (size_t i = 0; i < count; i++) g[i] = value(seed, me, step, i);
            sym_ddp_begin(d);
            uint64_t started_early = 0; /* bytes the DDP had started before the last tensor */
            for (int t = NT - 1; t >= 0; t--) {
                if (t == 0) started_early = sym_ddp_stats(d).bytes_reduced;
                sym_ddp_ready(d, cuts[t]);
                /* every bucket wholly inside [cuts[t], count) must be started now */
                int should = 0;
                for (int b = 0; b < nb; b++) {
                    size_t lo, hi;
                    sym_ddp_bucket(d, b, &lo, &hi);
                    should += lo >= cuts[t];
                }
                sym_ddp_stats_t st = sym_ddp_stats(d);
                size_t bytes = 0;
                for (int b = 0; b < should && n > 1; b++) {
                    size_t lo, hi;
                    sym_ddp_bucket(d, b, &lo, &hi);
                    bytes += (hi - lo) * 4;
                }
                CHECK(st.bytes_reduced == bytes, "after tensor %d: %llu bytes started, expected %zu",
                      t, (unsigned long long)st.bytes_reduced, bytes);
            }
            CHECK(sym_ddp_finish(d) == 0, "%s", sym_last_error());
            uint64_t all = sym_ddp_stats(d).bytes_reduced;
            CHECK(all == (n > 1 ? count * 4 : 0), "after finish: %llu bytes started, expected %zu",
                  (unsigned long long)all, n > 1 ? count * 4 : 0);
            if (nb > 1 && n > 1)
                CHECK(started_early > 0, "no bucket started before the backward pass ended (%d "
                      "buckets)", nb);
            double worst = 0;
            for (size_t i = 0; i < count; i++) {
                double avg = 0;
                for (int pe = 0; pe < n; pe++) avg += value(seed, pe, step, i);
                avg /= n;
                double err = fabs(g[i] - avg);
                worst = fmax(worst, err);
                CHECK(err <= 4e-7 * (1 + fabs(avg)) * n, "bucket size %g KiB, step %d: element %zu is %.9g, "
                      "average %.9g", bucket_kib[bk], step, i, (double)g[i], avg);
            }
            /* every PE holds the same result: compare with PE 0's */
            shmem_barrier_all();
            if (me != 0) {
                float *mine = malloc(count * sizeof *mine);
                shmem_getmem(mine, g, count * sizeof *mine, 0);
                CHECK(!memcmp(mine, g, count * sizeof *mine), "PE %d's average differs from PE 0's", me);
                free(mine);
            }
            shmem_barrier_all();
            if (me == 0 && step == 0)
                printf("  buckets of %8g KiB: %2d buckets over %zu floats, worst error %.2g\n",
                       bucket_kib[bk], nb, count, worst);
        }
        sym_ddp_destroy(d);
    }
    /* On a sub-team (the even and the odd PEs, as a data-parallel row of a
     * mesh would be): each team averages its own members only, and the
     * world is usable afterwards. */
    if (n >= 2) {
        shmem_team_t half;
        int parity = me % 2, members = (n - parity + 1) / 2;
        shmem_team_t parent = SHMEM_TEAM_WORLD;
        /* two splits, both collective over the world: PEs of the other parity get NULL */
        shmem_team_t even, odd;
        CHECK(shmem_team_split_strided(parent, 0, 2, (n + 1) / 2, NULL, 0, &even) == 0, "split");
        CHECK(shmem_team_split_strided(parent, 1, 2, n / 2, NULL, 0, &odd) == 0, "split");
        half = parity ? odd : even;
        sym_ddp_t *d;
        CHECK(sym_ddp_create(half, g, count, cuts, NT, 16 * 1024, &d) == 0, "%s", sym_last_error());
        for (size_t i = 0; i < count; i++) g[i] = value(seed, me, 7, i);
        sym_ddp_begin(d);
        for (int t = NT - 1; t >= 0; t--) sym_ddp_ready(d, cuts[t]);
        CHECK(sym_ddp_finish(d) == 0, "%s", sym_last_error());
        for (size_t i = 0; i < count; i++) {
            double avg = 0;
            for (int pe = parity; pe < n; pe += 2) avg += value(seed, pe, 7, i);
            avg /= members;
            CHECK(fabs(g[i] - avg) <= 4e-7 * (1 + fabs(avg)) * members,
                  "sub-team of %d: element %zu is %.9g, the team's average %.9g", members, i,
                  (double)g[i], avg);
        }
        float x[2] = {1.0f, (float)me};
        float *sx = shmem_malloc(sizeof x);
        memcpy(sx, x, sizeof x);
        CHECK(sym_allreduce_sum_f32(SHMEM_TEAM_WORLD, sx, 2) == 0, "%s", sym_last_error());
        CHECK(sx[0] == (float)n && sx[1] == (float)(n * (n - 1) / 2), "world sum after a sub-team");
        shmem_free(sx);
        sym_ddp_destroy(d);
        if (even != SHMEM_TEAM_INVALID) shmem_team_destroy(even);
        if (odd != SHMEM_TEAM_INVALID) shmem_team_destroy(odd);
        if (me == 0) printf("  sub-teams of even and odd PEs: each averages its own members\n");
    }
    shmem_free(g);
    if (me == 0) printf("train_ddp: ok\n");
    shmem_finalize();
    return 0;
}
