/*
 * mpi_coll — the MPI baseline for symbench's training collectives: times
 * MPI_Allreduce, MPI_Reduce_scatter_block, MPI_Allgather and MPI_Bcast on
 * fp32 with the sizes and the table shape symbench prints, so bench/run_coll.sh
 * can put them side by side. Build: mpicc -O2 mpi_coll.c -o mpi_coll.
 *
 *   mpirun -np 2 ./mpi_coll allreduce [max_bytes]
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

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int me, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    const char *what = argc > 1 ? argv[1] : "allreduce";
    size_t maxb = argc > 2 ? strtoull(argv[2], NULL, 0) : (size_t)256 << 20;
    float *a = malloc(maxb), *b = malloc(maxb * (strcmp(what, "allgather") ? 1 : (size_t)n));
    if (!a || !b) MPI_Abort(MPI_COMM_WORLD, 1);
    for (size_t i = 0; i < maxb / 4; i++) a[i] = (float)(i % 13);
    if (me == 0) printf("# MPI %s, %d ranks, fp32\n# %12s %12s %10s %10s\n", what, n, "bytes", "time_us", "algbw_GBs", "busbw_GBs");
    for (size_t bytes = 8; bytes <= maxb; bytes *= 2) {
        int count = (int)(bytes / 4);
        int iters = iters_for(bytes);
        double t = 0;
        for (int rep = -1; rep < 1; rep++) { /* one warm-up pass, one timed */
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            for (int i = 0; i < (rep < 0 ? 3 : iters); i++) {
                if (!strcmp(what, "allreduce"))
                    MPI_Allreduce(a, b, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
                else if (!strcmp(what, "reduce_scatter"))
                    MPI_Reduce_scatter_block(a, b, count / n ? count / n : 1, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
                else if (!strcmp(what, "allgather"))
                    MPI_Allgather(a, count, MPI_FLOAT, b, count, MPI_FLOAT, MPI_COMM_WORLD);
                else
                    MPI_Bcast(a, count, MPI_FLOAT, 0, MPI_COMM_WORLD);
            }
            t = (MPI_Wtime() - t0) / iters;
        }
        double tmax;
        MPI_Reduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        /* nccl-tests definitions */
        double alg = (double)bytes / tmax / 1e9, factor = 1;
        if (!strcmp(what, "allreduce")) factor = 2.0 * (n - 1) / n;
        else if (!strcmp(what, "reduce_scatter") || !strcmp(what, "allgather")) factor = (double)(n - 1) / n;
        if (!strcmp(what, "allgather")) alg *= n; /* allgather size is the output size */
        if (me == 0) printf("  %12zu %12.2f %10.3f %10.3f\n", bytes, tmax * 1e6, alg, alg * factor);
    }
    MPI_Finalize();
    return 0;
}
