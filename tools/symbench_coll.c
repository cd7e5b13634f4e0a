/*
 * symbench_coll.c — symbench's training-collective benchmarks, printed the way
 * nccl-tests prints them: per size, the time, algbw and busbw.
 *
 *   symrun -n 2 symbench allreduce|reduce_scatter|allgather|broadcast [options]
 *
 * Size is the all-reduce / broadcast message, the reduce-scatter input and the
 * all-gather output (nccl-tests' convention). busbw = algbw x 2(n-1)/n for
 * all-reduce, x (n-1)/n for reduce-scatter and all-gather, x 1 for broadcast.
 * Each row times `iters` back-to-back calls (a warm-up pass first) and prints
 * the slowest PE's mean; the best of --reps repetitions is kept.
 *
 * Two placements are measured unless one is asked for: symmetric buffers
 * (shmem_malloc: peers read and write them in place, the API's fast path;
 * the all-reduce in place, as gradients are reduced, or --out-of-place) and
 * private ones (malloc, out of place: what MPI_Allreduce is given).
 */
#define _GNU_SOURCE
#include <shmem.h>
#include <shmemx.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../src/util/util.h" /* sym__now_s, sym__parse_size */
#include "envhelp.h"
#include "symbench.h"

typedef enum { K_ALLREDUCE, K_REDUCE_SCATTER, K_ALLGATHER, K_BROADCAST } kind_t;

static const struct {
    const char *name;
    kind_t kind;
} kinds[] = {{"allreduce", K_ALLREDUCE},
             {"reduce_scatter", K_REDUCE_SCATTER},
             {"allgather", K_ALLGATHER},
             {"broadcast", K_BROADCAST}};

static const struct {
    const char *name;
    shmemx_dtype_t dt;
} dtypes[] = {{"float", SHMEMX_FLOAT32},  {"double", SHMEMX_FLOAT64}, {"half", SHMEMX_FLOAT16},
              {"bfloat16", SHMEMX_BFLOAT16}, {"int32", SHMEMX_INT32},  {"int64", SHMEMX_INT64}};

static int iters_for(size_t bytes, int base) {
    if (bytes <= 65536) return base;
    double it = (double)base * 65536.0 / (double)bytes * 8;
    return it < 5 ? 5 : (int)it;
}

static int run_one(kind_t k, void *dst, void *src, size_t count, shmemx_dtype_t dt, int n) {
    switch (k) {
    case K_ALLREDUCE: return shmemx_allreduce(SHMEM_TEAM_WORLD, dst, src, count, dt, SHMEMX_SUM);
    case K_REDUCE_SCATTER:
        return shmemx_reduce_scatter(SHMEM_TEAM_WORLD, dst, src, count, dt, SHMEMX_SUM);
    case K_ALLGATHER:
        return shmemx_allgather(SHMEM_TEAM_WORLD, dst, src, count / (size_t)n, dt);
    case K_BROADCAST: return shmemx_broadcast(SHMEM_TEAM_WORLD, dst, src, count, dt, 0);
    }
    return -1;
}

/* why == NULL: --help, on stdout, status 0; else a usage error on stderr, status 2. */
static int usage(const char *why, int me) {
    FILE *f = why ? stderr : stdout;
    if (me == 0) {
        if (why) fprintf(f, "symbench: %s\n", why);
        fprintf(f,
                "usage: symrun -n N symbench allreduce|reduce_scatter|allgather|broadcast "
                "[options]\n"
                "  -b SIZE     smallest size (default 8)\n"
                "  -e SIZE     largest size (default 256M)\n"
                "  -f FACTOR   size step (default 2)\n"
                "  -t TYPE     float|double|half|bfloat16|int32|int64 (default float)\n"
                "  -i N        iterations for sizes up to 64 KiB (default 1000)\n"
                "  -r N        repetitions; the best is kept (default 3)\n"
                "  --symmetric | --private   measure one placement only\n"
                "  --out-of-place            symmetric all-reduce into another buffer\n"
                "                            (default: in place, as gradients are reduced)\n"
                "  --algo A    force the all-reduce algorithm: auto|direct|ring|rd\n"
                "  -h, --help  this text, with the environment variables\n");
        if (!why) fputs("\n" SYM_ENV_HELP_RUNTIME, f);
        fflush(f);
    }
    shmem_finalize();
    return why ? 2 : 0;
}

int symbench_coll(const char *test, int argc, char **argv) {
    int me = shmem_my_pe(), n = shmem_n_pes();
    kind_t kind = K_ALLREDUCE;
    int found = 0;
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (!strcmp(test, kinds[i].name)) {
            kind = kinds[i].kind;
            found = 1;
        }
    if (!found) return usage("unknown collective", me);
    size_t minb = 8, maxb = (size_t)256 << 20;
    double factor = 2;
    int base_iters = 1000, reps = 3, want_sym = 1, want_priv = 1, sym_oop = 0;
    shmemx_dtype_t dt = SHMEMX_FLOAT32;
    const char *tname = "float";
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--symmetric")) {
            want_priv = 0;
            continue;
        }
        if (!strcmp(a, "--private")) {
            want_sym = 0;
            continue;
        }
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) return usage(NULL, me);
        if (!strcmp(a, "--out-of-place")) {
            sym_oop = 1;
            continue;
        }
        if (!v) return usage("an option needs a value", me);
        i++;
        if (!strcmp(a, "-b") || !strcmp(a, "-e")) {
            size_t s;
            if (sym__parse_size(v, &s) || !s) return usage("sizes are positive, e.g. 8, 64K, 1G", me);
            *(strcmp(a, "-b") ? &maxb : &minb) = s;
        } else if (!strcmp(a, "-f")) {
            factor = atof(v);
            if (factor <= 1) return usage("-f must be above 1", me);
        } else if (!strcmp(a, "-i")) {
            base_iters = atoi(v);
            if (base_iters < 1) return usage("-i must be at least 1", me);
        } else if (!strcmp(a, "-r")) {
            reps = atoi(v);
            if (reps < 1) return usage("-r must be at least 1", me);
        } else if (!strcmp(a, "-t")) {
            found = 0;
            for (size_t k = 0; k < sizeof dtypes / sizeof dtypes[0]; k++)
                if (!strcmp(v, dtypes[k].name)) {
                    dt = dtypes[k].dt;
                    tname = dtypes[k].name;
                    found = 1;
                }
            if (!found) return usage("unknown type", me);
        } else if (!strcmp(a, "--algo")) {
            int al = -1;
            for (int k = 0; k < SHMEMX_ALGO_COUNT; k++)
                if (!strcmp(v, shmemx_algo_name((shmemx_algo_t)k))) al = k;
            if (al < 0) return usage("--algo is auto, direct, ring or rd", me);
            shmemx_set_allreduce_algo((shmemx_algo_t)al);
        } else {
            return usage("unknown option", me);
        }
    }
    if (minb > maxb) return usage("-b is above -e", me);
    size_t es = shmemx_dtype_size(dt);
    /* Buffers for the largest size: input and output (all-gather output = size). */
    size_t in_bytes = maxb, out_bytes = maxb;
    char *sym_in = shmem_malloc(in_bytes), *sym_out = shmem_malloc(out_bytes);
    char *priv_in = malloc(in_bytes), *priv_out = malloc(out_bytes);
    if (!sym_in || !sym_out || !priv_in || !priv_out) {
        if (me == 0)
            fprintf(stderr, "symbench: cannot allocate 2 x %zu bytes; raise SYMTRAIN_SYMMETRIC_SIZE "
                    "(e.g. SYMTRAIN_SYMMETRIC_SIZE=%zuM) or lower -e\n",
                    in_bytes, 2 * (in_bytes >> 20) + 64);
        shmem_global_exit(1);
    }
    /* Real values (not zeros): small integers, exact in every type. */
    for (size_t i = 0; i < in_bytes / es; i++) {
        double x = (double)((i * 7 + (size_t)me) % 5);
        switch (dt) {
        case SHMEMX_FLOAT32: ((float *)sym_in)[i] = ((float *)priv_in)[i] = (float)x; break;
        case SHMEMX_FLOAT64: ((double *)sym_in)[i] = ((double *)priv_in)[i] = x; break;
        case SHMEMX_INT32: ((int32_t *)sym_in)[i] = ((int32_t *)priv_in)[i] = (int32_t)x; break;
        case SHMEMX_INT64: ((int64_t *)sym_in)[i] = ((int64_t *)priv_in)[i] = (int64_t)x; break;
        default: ((uint16_t *)sym_in)[i] = ((uint16_t *)priv_in)[i] = (uint16_t)(0x3c00 + (i % 4)); break;
        }
    }
    double busf = kind == K_ALLREDUCE   ? 2.0 * (n - 1) / n
                  : kind == K_BROADCAST ? 1.0
                                        : (double)(n - 1) / n;
    if (me == 0) {
        printf("# symbench %s: %d PEs, %s, sum; time of the slowest PE, best of %d\n", test, n,
               tname, reps);
        printf("# %12s %12s", "size", "count");
        if (want_sym) printf(" %11s %10s %10s", "sym_us", "sym_algbw", "sym_busbw");
        if (want_priv) printf(" %11s %10s %10s", "priv_us", "priv_algbw", "priv_busbw");
        printf("\n");
    }
    static double tmax, mine; /* symmetric (globals): the max over PEs */
    for (double fb = (double)minb; fb <= (double)maxb; fb *= factor) {
        size_t bytes = (size_t)fb / es * es;
        if (!bytes) bytes = es;
        size_t count = bytes / es;
        if (kind == K_ALLGATHER || kind == K_REDUCE_SCATTER) {
            count -= count % (size_t)n;
            if (!count) count = (size_t)n;
            bytes = count * es;
        }
        int iters = iters_for(bytes, base_iters);
        double res[2] = {0, 0};
        for (int place = 0; place < 2; place++) {
            if ((place == 0 && !want_sym) || (place == 1 && !want_priv)) continue;
            /* symmetric: all-reduce in place (as gradients are reduced), the
             * others out of place; private: out of place */
            char *src = place == 0 ? sym_in : priv_in;
            char *dst = place == 0 ? (kind == K_ALLREDUCE && !sym_oop ? sym_in : sym_out) : priv_out;
            double best = 1e30;
            for (int rep = -1; rep < reps; rep++) {
                shmem_barrier_all();
                double t0 = sym__now_s();
                for (int it = 0; it < (rep < 0 ? 2 : iters); it++)
                    if (run_one(kind, dst, src, count, dt, n)) shmem_global_exit(1);
                mine = (sym__now_s() - t0) / (rep < 0 ? 2 : iters);
                shmem_barrier_all();
                shmem_double_max_reduce(SHMEM_TEAM_WORLD, &tmax, &mine, 1);
                if (rep >= 0 && tmax < best) best = tmax;
            }
            res[place] = best;
        }
        if (me == 0) {
            printf("  %12zu %12zu", bytes, count);
            for (int place = 0; place < 2; place++) {
                if ((place == 0 && !want_sym) || (place == 1 && !want_priv)) continue;
                double alg = (double)bytes / res[place] / 1e9;
                printf(" %11.2f %10.3f %10.3f", res[place] * 1e6, alg, alg * busf);
            }
            printf("\n");
            fflush(stdout);
        }
    }
    shmem_barrier_all();
    shmem_free(sym_in);
    shmem_free(sym_out);
    free(priv_in);
    free(priv_out);
    shmem_finalize();
    return 0;
}
