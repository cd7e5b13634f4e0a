/*
 * mpi_coll — the MPI baseline for symbench's training collectives: times
 * MPI_Allreduce, MPI_Reduce_scatter_block, MPI_Allgather and MPI_Bcast on
 * fp32 with the sizes, the timing rule and the table shape symbench prints
 * (tools/symbench_coll.c: a warm-up, then per repetition the slowest rank's
 * mean, the best of REPS repetitions), so bench/run_coll.sh and run_net.sh can
 * put them side by side. Build: mpicc -O2 mpi_coll.c -o mpi_coll.
 *
 *   mpirun -np 2 ./mpi_coll allreduce|reduce_scatter|allgather|broadcast [max_bytes [REPS]]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int iters_for(size_t bytes) {
    if (bytes <= 65536) return 2000;
    if (bytes <= (1 << 20)) return 200;
    if (bytes <= (16 << 20)) return 30;
    return 6;
}

typedef void coll_fn(float *a, float *b, int count, int n);
static void allreduce(float *a, float *b, int count, int n) {
    (void)n;
    MPI_Allreduce(a, b, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
}
static void reduce_scatter(float *a, float *b, int count, int n) {
    MPI_Reduce_scatter_block(a, b, count / n ? count / n : 1, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
}
static void allgather(float *a, float *b, int count, int n) {
    (void)n;
    MPI_Allgather(a, count, MPI_FLOAT, b, count, MPI_FLOAT, MPI_COMM_WORLD);
}
static void broadcast(float *a, float *b, int count, int n) {
    (void)b, (void)n;
    MPI_Bcast(a, count, MPI_FLOAT, 0, MPI_COMM_WORLD);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int me, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    const char *what = argc > 1 ? argv[1] : "allreduce";
    size_t maxb = argc > 2 ? strtoull(argv[2], NULL, 0) : (size_t)256 << 20;
    int reps = argc > 3 ? atoi(argv[3]) : 3;
    coll_fn *fn = !strcmp(what, "allreduce") ? allreduce
                  : !strcmp(what, "reduce_scatter") ? reduce_scatter
                  : !strcmp(what, "allgather") ? allgather
                  : !strcmp(what, "broadcast") ? broadcast : NULL;
    if (!fn || reps < 1) {
        if (me == 0) fprintf(stderr, "usage: mpi_coll allreduce|reduce_scatter|allgather|broadcast [max_bytes [reps]]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    float *a = malloc(maxb), *b = malloc(maxb * (fn == allgather ? (size_t)n : 1));
    if (!a || !b) MPI_Abort(MPI_COMM_WORLD, 1);
    for (size_t i = 0; i < maxb / 4; i++) a[i] = (float)(i % 13);
    if (me == 0)
        printf("# MPI %s, %d ranks, fp32; time of the slowest rank, best of %d\n# %12s %12s %10s %10s\n",
               what, n, reps, "bytes", "time_us", "algbw_GBs", "busbw_GBs");
    for (size_t bytes = 8; bytes <= maxb; bytes *= 2) {
        int count = (int)(bytes / 4);
        int iters = iters_for(bytes);
        double best = 1e30;
        for (int rep = -1; rep < reps; rep++) { /* one warm-up pass, then the timed ones */
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            for (int i = 0; i < (rep < 0 ? 3 : iters); i++) fn(a, b, count, n);
            double t = (MPI_Wtime() - t0) / (rep < 0 ? 3 : iters), tmax;
            MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
            if (rep >= 0 && tmax < best) best = tmax;
        }
        /* nccl-tests definitions */
        double alg = (double)bytes / best / 1e9, factor = 1;
        if (fn == allreduce) factor = 2.0 * (n - 1) / n;
        else if (fn == reduce_scatter || fn == allgather) factor = (double)(n - 1) / n;
        if (fn == allgather) alg *= n; /* allgather size is the output size */
        if (me == 0) printf("  %12zu %12.2f %10.3f %10.3f\n", bytes, best * 1e6, alg, alg * factor);
    }
    MPI_Finalize();
    return 0;
}
