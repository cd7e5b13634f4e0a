/*
 * bench/dtensor/redistribute.c — sym_redistribute beside the collective that
 * does the same on even sizes, same run, same PEs.
 *
 *   symrun -n P bench_redistribute [ITERS]
 *
 * A (rows, 256) fp32 tensor on a 1-D mesh over every PE, rows a multiple of
 * P so that the shmemx collectives, which split evenly, apply:
 *   S(0) -> R      beside shmemx_allgather         (source symmetric)
 *   P    -> S(0)   beside shmemx_reduce_scatter    (source symmetric)
 *   P    -> R      beside shmemx_allreduce         (in place, symmetric)
 *   S(0) -> S(1)   beside shmem_alltoallmem        (symmetric; the baseline
 *                  moves the same bytes but leaves them unpacked)
 * The baselines get their best case (symmetric buffers, nothing to pack);
 * sym_redistribute starts from private memory and packs into its scratch.
 * Each figure is the slowest PE's mean over ITERS calls after 3 warm-ups.
 */
#include <shmem.h>
#include <shmemx.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <symtrain/symtrain.h>

static double t_max_src, t_max_dst; /* symmetric, for the slowest PE's time */

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double slowest(double t) {
    t_max_src = t;
    shmem_double_max_reduce(SHMEM_TEAM_WORLD, &t_max_dst, &t_max_src, 1);
    return t_max_dst;
}

static void die(const char *what) {
    fprintf(stderr, "bench_redistribute: %s: %s\n", what, sym_last_error());
    exit(1);
}

int main(int argc, char **argv) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes(), iters = argc > 1 ? atoi(argv[1]) : 20;
    char spec[32];
    snprintf(spec, sizeof spec, "tp=%d", n);
    sym_mesh_t *mesh;
    sym_pool_t *pool;
    if (sym_mesh_create(SHMEM_TEAM_WORLD, spec, &mesh)) die("mesh");
    if (sym_pool_create("bench", (size_t)1 << 30, 0, &pool)) die("pool");
    static const int64_t kib[] = {64, 1024, 16384}; /* the whole tensor's size */
    if (me == 0) {
        printf("# %d PEs, fp32 (rows, 256), %d iterations; microseconds, slowest PE\n", n, iters);
        printf("%10s %-14s %12s %12s %8s   %s\n", "bytes", "transition", "redistribute",
               "baseline", "ratio", "baseline is");
    }
    for (size_t si = 0; si < sizeof kib / sizeof kib[0]; si++) {
        int64_t cols = 256, rows = kib[si] * 1024 / 4 / cols;
        rows -= rows % n;
        int64_t shape[2] = {rows, cols};
        size_t full = (size_t)(rows * cols), part = full / (size_t)n;
        float *sa = shmem_malloc(full * 4), *sb = shmem_malloc(full * 4);
        if (!sa || !sb) die("shmem_malloc");
        memset(sa, 0, full * 4);
        struct {
            const char *name, *base;
            sym_placement_t from, to;
        } cases[] = {
            {"S(0) -> R", "shmemx_allgather", sym_shard(0), sym_replicate()},
            {"P -> S(0)", "shmemx_reduce_scatter", sym_partial(SYM_PARTIAL_SUM), sym_shard(0)},
            {"P -> R", "shmemx_allreduce", sym_partial(SYM_PARTIAL_SUM), sym_replicate()},
            {"S(0) -> S(1)", "shmem_alltoallmem", sym_shard(0), sym_shard(1)},
        };
        for (int c = 0; c < 4; c++) {
            sym_dtensor_t x, y;
            if (sym_dtensor_alloc(&x, mesh, SYM_DT_F32, 2, shape, &cases[c].from, pool) ||
                sym_dtensor_alloc(&y, mesh, SYM_DT_F32, 2, shape, &cases[c].to, pool))
                die("alloc");
            double t[2];
            for (int which = 0; which < 2; which++) {
                for (int i = -3; i < iters; i++) {
                    if (i == 0) {
                        shmem_barrier_all();
                        t[which] = now();
                    }
                    int rc = 0;
                    if (which == 0) rc = sym_redistribute(&x, &y);
                    else if (c == 0) rc = shmemx_allgather(SHMEM_TEAM_WORLD, sb, sa, part,
                                                           SHMEMX_FLOAT32);
                    else if (c == 1) rc = shmemx_reduce_scatter(SHMEM_TEAM_WORLD, sb, sa, full,
                                                                SHMEMX_FLOAT32, SHMEMX_SUM);
                    else if (c == 2) rc = shmemx_allreduce(SHMEM_TEAM_WORLD, sa, sa, full,
                                                           SHMEMX_FLOAT32, SHMEMX_SUM);
                    else rc = shmem_alltoallmem(SHMEM_TEAM_WORLD, sb, sa, part / (size_t)n * 4);
                    if (rc) die(cases[c].name);
                }
                t[which] = slowest((now() - t[which]) / iters * 1e6);
            }
            if (me == 0)
                printf("%10zu %-14s %12.1f %12.1f %8.2f   %s\n", full * 4, cases[c].name, t[0],
                       t[1], t[0] / t[1], cases[c].base);
            sym_dtensor_free(&x);
            sym_dtensor_free(&y);
        }
        shmem_free(sb);
        shmem_free(sa);
    }
    sym_pool_destroy(pool);
    sym_mesh_destroy(mesh);
    shmem_finalize();
    return 0;
}
