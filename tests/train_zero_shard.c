/*
 * train_zero_shard — the sharded pieces under --zero, on every PE of the job:
 * the reduce-scattered buckets (sym_ddp_shard), ZeRO-2's release of reduced
 * pages, and the sharded optimizer (sym_zero_*) against an unsharded one.
 *
 * A symmetric gradient array cut into tensors of random sizes (some large
 * enough to span pages), every other one a "bias" without weight decay. Each
 * PE fills it with its own random values (from the shared seed and its PE
 * number, so every PE knows every PE's values and the exact average in fp64).
 * Per bucket size (1 bucket, several, many):
 *  - the members' blocks (sym_ddp_block) tile every bucket exactly, in team
 *    order, and each PE's shard is the packed concatenation of its blocks;
 *  - after a backward-like sequence of ready calls and finish, every element
 *    of the shard is the fp64 average to fp32 rounding;
 *  - ZeRO-2: the pages wholly inside each bucket are handed back
 *    (bytes_released = their sum), read as zero, and sym_ddp_zero_grads
 *    leaves the whole array zero;
 *  - sym_zero_clip's norm is the fp64 norm of the whole averaged gradient and
 *    clips by the same factor; three sym_zero_step's of AdamW (decay on the
 *    "matrices" only) leave every PE's full parameter array equal to an
 *    unsharded sym_optim_step run on the fp64 averages (to fp32 rounding);
 *  - the gathered state (PE 0 alone, one-sided) has the unsharded state's
 *    header and arrays, and a fresh sym_zero loaded from it steps to the same
 *    parameters bit for bit as the original.
 * Then ZeRO inside a mesh: the job split into two teams (even and odd PEs,
 * like two pipeline stages) whose parts of the model differ in size (one
 * about 25 times the other); each shards its own part over its team.
 * Every PE's next symmetric allocation must land at the same offset (the
 * state is sized for the job's largest shard), and with sym_zero_norm_over
 * (every other tensor counted; the sums then summed over the pairs of the
 * two teams' k-th PEs) the norm is the fp64 one of exactly those tensors'
 * averages over the teams the pair spans; sym_zero_state_get gathers the
 * team's state into an unsharded optimizer and sym_zero_state_put hands a
 * fresh zero its shard of it, which then steps bit for bit as the first.
 */
#include <math.h>
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <symtrain/symtrain.h>

#include "test.h"

enum { NT = 17, STEPS = 3 };

static float value(uint64_t seed, int pe, int step, size_t i) {
    test_rng_t r = test_rng(seed ^ ((uint64_t)step << 32), (uint64_t)pe * 1000003u + i);
    return (float)(2 * test_uniform(&r) - 1);
}

static double avg_of(uint64_t seed, int n, int step, size_t i) {
    double a = 0;
    for (int pe = 0; pe < n; pe++) a += value(seed, pe, step, i);
    return a / n;
}

/* One step's gradients on this PE, then the buckets' reductions as backward would start them. */
static void reduce(sym_ddp_t *d, float *g, size_t count, const size_t *cuts, uint64_t seed,
                   int me, int step) {
    sym_ddp_zero_grads(d);
    for (size_t i = 0; i < count; i++) CHECK(g[i] == 0.0f, "grads[%zu] not zero after zero_grads", i);
    for (size_t i = 0; i < count; i++) g[i] = value(seed, me, step, i);
    sym_ddp_begin(d);
    for (int t = NT - 1; t >= 0; t--) sym_ddp_ready(d, cuts[t]);
    CHECK(sym_ddp_finish(d) == 0, "%s", sym_last_error());
}

/* ZeRO over two teams with parts of different sizes (see the top). */
static void mesh_case(uint64_t seed, int me, int n) {
    static const size_t sizes[2][4] = {{40000, 300, 90000, 200}, {3000, 50, 2000, 30}};
    int part = me % 2, nt = 4;
    shmem_team_t team, pair; /* my part's PEs (a column of 2); the k-th PEs of both (a row) */
    CHECK(shmem_team_split_2d(SHMEM_TEAM_WORLD, 2, NULL, 0, &pair, NULL, 0, &team) == 0,
          "2-d split: %s", sym_last_error());
    int k = shmem_team_my_pe(team);
    sym_param_t table[4];
    memset(table, 0, sizeof table);
    size_t cuts[4], count = 0;
    for (int t = 0; t < nt; t++) {
        cuts[t] = table[t].offset = count;
        table[t].numel = sizes[part][t];
        table[t].decay = t % 2 == 0;
        count += sizes[part][t];
    }
    size_t cap = 0;
    for (int t = 0; t < nt; t++) cap += sizes[0][t];
    float *g = shmem_malloc(cap * sizeof *g), *w = shmem_malloc(cap * sizeof *w);
    CHECK(g && w, "out of memory");
    sym_optim_config_t oc = {SYM_OPT_ADAMW, 0.9f, 0.9f, 0.999f, 1e-8f, 0.1f};
    sym_ddp_t *d, *d2;
    sym_zero_t *z, *z2;
    CHECK(sym_ddp_create(team, g, count, cuts, nt, 64 * 1024, &d) == 0, "%s", sym_last_error());
    CHECK(sym_zero_create(2, d, team, &oc, count, table, nt, &z) == 0, "%s", sym_last_error());
    /* the next symmetric allocation: one offset on every PE */
    char *probe = shmem_malloc(64);
    long *off = shmem_malloc(4 * sizeof *off);
    CHECK(probe && off, "out of memory");
    off[0] = off[1] = (long)(probe - (char *)g);
    CHECK(shmem_long_max_reduce(SHMEM_TEAM_WORLD, off + 2, off, 1) == 0 &&
          shmem_long_min_reduce(SHMEM_TEAM_WORLD, off + 3, off + 1, 1) == 0, "reductions");
    CHECK(off[2] == off[3], "after ZeRO over parts of different sizes the next symmetric "
          "allocation is at offset %ld on one PE, %ld on another", off[3], off[2]);
    unsigned char counted[4] = {1, 0, 1, 0};
    CHECK(sym_zero_norm_over(z, counted, &pair, 1) == 0, "%s", sym_last_error());
    /* one step's gradients: member j of part q holds value(seed, 2 j + q, 0, i) */
    sym_ddp_zero_grads(d);
    for (size_t i = 0; i < count; i++) g[i] = value(seed, me, 0, i);
    sym_ddp_begin(d);
    for (int t = nt - 1; t >= 0; t--) sym_ddp_ready(d, cuts[t]);
    CHECK(sym_ddp_finish(d) == 0, "%s", sym_last_error());
    double sq = 0; /* the pair's parts: mine, and the other part's k-th PE if it has one */
    for (int q = 0; q < 2; q++) {
        int qn = (n - q + 1) / 2;
        if (k >= qn) continue;
        for (int t = 0, at = 0; t < nt; at += (int)sizes[q][t], t++) {
            if (!counted[t]) continue;
            for (size_t i = 0; i < sizes[q][t]; i++) {
                double a = 0;
                for (int j = 0; j < qn; j++) a += value(seed, 2 * j + q, 0, (size_t)at + i);
                a /= qn;
                sq += a * a;
            }
        }
    }
    double norm;
    CHECK(sym_zero_clip(z, NULL, 0, 0, &norm) == 0, "%s", sym_last_error());
    CHECK(fabs(norm - sqrt(sq)) <= 1e-6 * sqrt(sq), "PE %d: norm over the mesh %.9g, fp64 %.9g",
          me, norm, sqrt(sq));
    for (size_t i = 0; i < count; i++) w[i] = value(seed, 999, 0, i);
    CHECK(sym_zero_step(z, w, 0.01f) == 0, "%s", sym_last_error());
    /* the team's state, gathered whole, then a fresh zero's shard of it */
    sym_optim_t *full;
    CHECK(sym_optim_create(&oc, count, &full) == 0, "%s", sym_last_error());
    CHECK(sym_zero_state_get(z, full) == 0 && sym_optim_steps(full) == 1, "%s", sym_last_error());
    CHECK(sym_ddp_create(team, g, count, cuts, nt, 64 * 1024, &d2) == 0 &&
          sym_zero_create(2, d2, team, &oc, count, table, nt, &z2) == 0, "%s", sym_last_error());
    shmem_barrier_all(); /* every PE has read its peers' state before any steps again */
    sym_zero_state_put(z2, full);
    CHECK(sym_zero_steps(z2) == 1, "the fresh zero is at step %llu",
          (unsigned long long)sym_zero_steps(z2));
    float *w1 = malloc(count * sizeof *w1);
    CHECK(w1 != NULL, "out of memory");
    memcpy(w1, w, count * sizeof *w);
    sym_ddp_t *dd[2] = {d, d2};
    sym_zero_t *zz[2] = {z, z2};
    float *keep = malloc(count * sizeof *keep);
    CHECK(keep != NULL, "out of memory");
    for (int v = 0; v < 2; v++) { /* the same second step from the same weights, twice */
        memcpy(w, w1, count * sizeof *w);
        shmem_barrier_all();
        sym_ddp_zero_grads(dd[v]);
        for (size_t i = 0; i < count; i++) g[i] = value(seed, me, 1, i);
        sym_ddp_begin(dd[v]);
        CHECK(sym_ddp_finish(dd[v]) == 0, "%s", sym_last_error());
        CHECK(sym_zero_clip(zz[v], NULL, 0, 0, &norm) == 0 && sym_zero_step(zz[v], w, 0.01f) == 0,
              "%s", sym_last_error());
        if (v == 0) memcpy(keep, w, count * sizeof *w);
    }
    CHECK(!memcmp(keep, w, count * sizeof *w), "the zero given its shard by sym_zero_state_put "
          "stepped differently");
    free(keep);
    free(w1);
    sym_optim_destroy(full);
    sym_zero_destroy(z2);
    sym_ddp_destroy(d2);
    shmem_free(off);
    shmem_free(probe);
    sym_zero_destroy(z);
    sym_ddp_destroy(d);
    shmem_free(w);
    shmem_free(g);
    shmem_team_destroy(pair);
    shmem_team_destroy(team);
    if (me == 0)
        printf("  ZeRO over 2 teams of %zu and %zu parameters: one symmetric layout, the norm "
               "over the mesh, state get / put\n", count, count / 25);
}

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    uint64_t seed = test_pe_start("train_zero_shard");
    long page = sysconf(_SC_PAGESIZE);

    test_rng_t r = test_rng(seed, 99);
    size_t cuts[NT], count = 0;
    sym_param_t table[NT];
    memset(table, 0, sizeof table);
    for (int t = 0; t < NT; t++) {
        cuts[t] = count;
        size_t len = 1 + (size_t)(test_next(&r) % (t % 4 == 0 ? 30000 : 700));
        table[t].offset = count;
        table[t].numel = len;
        table[t].decay = t % 2 == 0; /* "matrices" decay, "biases" do not */
        snprintf(table[t].name, sizeof table[t].name, "t%d", t);
        count += len;
    }
    float *g = shmem_malloc(count * sizeof *g);
    /* parameters: symmetric, as the model's are (the all-gather reads peers') */
    float *w = shmem_malloc(count * sizeof *w), *w2 = shmem_malloc(count * sizeof *w2);
    float *wref = malloc(count * sizeof *wref), *gref = malloc(count * sizeof *gref);
    CHECK(g && w && wref && gref && w2, "out of memory");
    sym_optim_config_t oc = {SYM_OPT_ADAMW, 0.9f, 0.9f, 0.999f, 1e-8f, 0.1f};

    static const double bucket_kib[] = {100000, 40, 4};
    for (size_t bk = 0; bk < sizeof bucket_kib / sizeof bucket_kib[0]; bk++) {
        for (int stage = 1; stage <= 2; stage++) {
            sym_ddp_t *d;
            CHECK(sym_ddp_create(SHMEM_TEAM_WORLD, g, count, cuts, NT,
                                 (size_t)(bucket_kib[bk] * 1024), &d) == 0, "%s", sym_last_error());
            sym_zero_t *z;
            CHECK(sym_zero_create(stage, d, SHMEM_TEAM_WORLD, &oc, count, table, NT, &z) == 0, "%s",
                  sym_last_error());
            int nb = sym_ddp_num_buckets(d);
            /* the blocks tile every bucket in team order; shards pack them */
            size_t total = 0;
            for (int k = 0; k < n; k++) {
                size_t at = 0;
                for (int b = 0; b < nb; b++) {
                    size_t so, len = sym_ddp_block(d, b, k, &so);
                    CHECK(so == at, "member %d, bucket %d: shard offset %zu, expected %zu", k, b, so, at);
                    at += len;
                }
                CHECK(at == sym_ddp_shard_len(d, k), "member %d's shard is %zu, blocks sum to %zu", k,
                      sym_ddp_shard_len(d, k), at);
                total += at;
            }
            CHECK(total == count, "the shards hold %zu of %zu parameters", total, count);
            CHECK(sym_zero_shard_len(z) == sym_ddp_shard_len(d, shmem_team_my_pe(SHMEM_TEAM_WORLD)),
                  "zero's shard differs from the buckets'");
            CHECK(sym_zero_state_bytes(z) == sym_zero_shard_len(z) * 8, "AdamW's state is m and v");
            CHECK(sym_zero_state_shard(z, 0) && sym_zero_state_shard(z, 1) &&
                  !sym_zero_state_shard(z, 2), "AdamW's shard arrays are m and v");

            for (size_t i = 0; i < count; i++) w[i] = wref[i] = value(seed, 999, 0, i);
            sym_optim_t *ref;
            CHECK(sym_optim_create(&oc, count, &ref) == 0, "%s", sym_last_error());
            for (int t = 0; t < NT; t++)
                if (!table[t].decay) sym_optim_no_decay(ref, table[t].offset, table[t].numel);
            double worst = 0;
            for (int step = 0; step < STEPS; step++) {
                reduce(d, g, count, cuts, seed, me, step);
                sym_ddp_stats_t st = sym_ddp_stats(d);
                uint64_t pages = 0;
                for (int b = 0; b < nb && stage == 2; b++) {
                    size_t lo, hi;
                    sym_ddp_bucket(d, b, &lo, &hi);
                    uintptr_t a = ((uintptr_t)(g + lo) + page - 1) & ~(uintptr_t)(page - 1);
                    uintptr_t e = (uintptr_t)(g + hi) & ~(uintptr_t)(page - 1);
                    if (e > a) pages += e - a;
                    for (float *p = (float *)a; (uintptr_t)p < e; p++)
                        CHECK(*p == 0.0f, "ZeRO-2: a released gradient reads %g, not 0", (double)*p);
                }
                CHECK(st.bytes_released == pages, "stage %d: %llu bytes released, expected %llu",
                      stage, (unsigned long long)st.bytes_released, (unsigned long long)pages);
                /* the shard: this PE's blocks of the average, packed; the reference: all of it */
                for (size_t i = 0; i < count; i++) gref[i] = (float)avg_of(seed, n, step, i);
                double sq = 0;
                for (size_t i = 0; i < count; i++) sq += (double)gref[i] * gref[i];
                float ctrl[2] = {(float)me, 1.0f};
                double norm;
                double max_norm = sqrt(sq) * 0.5; /* clipping acts */
                CHECK(sym_zero_clip(z, ctrl, 2, max_norm, &norm) == 0, "%s", sym_last_error());
                CHECK(fabs(norm - sqrt(sq)) <= 1e-6 * sqrt(sq), "norm %.9g, fp64 %.9g", norm, sqrt(sq));
                CHECK(fabs(ctrl[0] - (n - 1) / 2.0) < 1e-6 && ctrl[1] == 1.0f,
                      "control floats %g %g, expected their averages %g 1", (double)ctrl[0],
                      (double)ctrl[1], (n - 1) / 2.0);
                sym_grad_clip(gref, count, max_norm);
                CHECK(sym_zero_step(z, w, 0.01f) == 0, "%s", sym_last_error());
                sym_optim_step(ref, wref, gref, 0.01f);
                for (size_t i = 0; i < count; i++) {
                    double e = fabs((double)w[i] - wref[i]), tol = 1e-5 * (fabs(wref[i]) + 1e-2);
                    /* Where the summands cancel, AdamW's g / (sqrt(v) + eps) turns the fp32
                     * rounding of the average (the collective's against this test's fp64
                     * one, up to about 2^-19) into lr * eps * dg / (|g| + eps)^2, up to
                     * twice the learning rate: allowed, and the reference then continues
                     * from the sharded weight. */
                    double ga = fabs(gref[i]) + (double)oc.eps;
                    double amp = fmin(2 * 0.01, 0.01 * oc.eps * 0x1p-19 / (ga * ga));
                    int cancel = amp > 0.1 * tol;
                    if (cancel) tol += amp;
                    else worst = fmax(worst, e);
                    CHECK(e <= tol, "bucket %g KiB, stage %d, step %d: parameter %zu is %.9g, "
                          "unsharded %.9g (its averaged gradient %.3g)", bucket_kib[bk], stage,
                          step, i, (double)w[i], (double)wref[i], (double)gref[i]);
                    if (cancel) wref[i] = w[i]; /* the next steps compare from the same weight */
                }
            }
            /* the gathered state: PE 0 alone, between steps */
            size_t ss = sym_zero_state_size(z);
            CHECK(ss == sym_optim_state_size(ref), "gathered state %zu bytes, unsharded %zu", ss,
                  sym_optim_state_size(ref));
            char *buf = shmem_malloc(ss), *rbuf = shmem_malloc(ss); /* broadcast: symmetric */
            CHECK(buf && rbuf, "out of memory");
            sym_optim_state_save(ref, rbuf);
            if (me == 0) {
                CHECK(sym_zero_state_save(z, buf) == 0, "%s", sym_last_error());
                CHECK(!memcmp(buf, rbuf, 32), "the gathered state's header differs");
                const float *a = (const float *)(buf + 32), *b = (const float *)(rbuf + 32);
                for (size_t i = 0; i < 2 * count; i++)
                    /* the reference's gradient is the fp64 average rounded once: a
                     * tiny one differs by the fp32 sum's rounding (1e-7 of the inputs) */
                    CHECK(fabs(a[i] - b[i]) <= 1e-5 * fabs(b[i]) + 1e-7,
                          "gathered state element %zu: %.9g, unsharded %.9g", i, (double)a[i],
                          (double)b[i]);
            }
            shmem_barrier_all();
            shmem_broadcastmem(SHMEM_TEAM_WORLD, rbuf, buf, ss, 0); /* PE 0's bytes everywhere */
            if (me != 0) memcpy(buf, rbuf, ss); /* the root's dest is left alone */
            /* resume: a fresh zero from the gathered state steps like the original */
            sym_ddp_t *d2;
            sym_zero_t *z2;
            CHECK(sym_ddp_create(SHMEM_TEAM_WORLD, g, count, cuts, NT,
                                 (size_t)(bucket_kib[bk] * 1024), &d2) == 0, "%s", sym_last_error());
            CHECK(sym_zero_create(stage, d2, SHMEM_TEAM_WORLD, &oc, count, table, NT, &z2) == 0,
                  "%s", sym_last_error());
            CHECK(sym_zero_state_load(z2, buf, ss) == 0, "%s", sym_last_error());
            CHECK(sym_zero_steps(z2) == STEPS, "resumed at step %llu",
                  (unsigned long long)sym_zero_steps(z2));
            memcpy(w2, w, count * sizeof *w);
            reduce(d, g, count, cuts, seed, me, STEPS);
            double norm;
            CHECK(sym_zero_clip(z, NULL, 0, 0, &norm) == 0 && sym_zero_step(z, w, 0.01f) == 0, "%s",
                  sym_last_error());
            reduce(d2, g, count, cuts, seed, me, STEPS);
            CHECK(sym_zero_clip(z2, NULL, 0, 0, &norm) == 0 && sym_zero_step(z2, w2, 0.01f) == 0,
                  "%s", sym_last_error());
            CHECK(!memcmp(w, w2, count * sizeof *w), "the resumed shards stepped differently");
            CHECK(sym_zero_state_load(z2, buf, ss - 4) != 0, "a truncated state was accepted");
            shmem_free(buf);
            shmem_free(rbuf);
            sym_zero_destroy(z2);
            sym_ddp_destroy(d2);
            sym_optim_destroy(ref);
            sym_zero_destroy(z);
            sym_ddp_destroy(d);
            if (me == 0)
                printf("  buckets of %6g KiB (%2d), ZeRO-%d: shards tile the buckets, averages, "
                       "norm, %d AdamW steps (worst %.2g), gathered state and resume\n",
                       bucket_kib[bk], nb, stage, STEPS, worst);
        }
    }
    shmem_free(w);
    shmem_free(w2);
    free(wref);
    free(gref);
    shmem_free(g);
    mesh_case(seed, me, n);
    if (me == 0) printf("train_zero_shard: ok\n");
    shmem_finalize();
    return 0;
}
