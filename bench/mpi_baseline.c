/*
 * mpi_baseline — symbench's point-to-point benchmarks expressed in MPI (Open
 * MPI, mpicc), for bench/run_shmem.sh. The loops, iteration counts, warm-up
 * and "best of --reps" rule are symbench's; the tables have the same shape,
 * titled "# mpi_baseline <test> <measure>: ...".
 *
 *   pingpong  MPI_Send / MPI_Recv of one long, one way (= round trip / 2)
 *   put, get  MPI_Put / MPI_Get into a window from MPI_Win_allocate, passive
 *             target (MPI_Win_lock_all): latency = one op + MPI_Win_flush;
 *             bandwidth = a window of ops + MPI_Win_flush
 *   atomic    MPI_Fetch_and_op(MPI_SUM) on a long + MPI_Win_flush
 *   barrier   MPI_Barrier
 *
 *   mpicc -O2 mpi_baseline.c -o mpi_baseline
 *   UCX_TLS=sm,self mpirun -np 2 ./mpi_baseline all
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BASELINE_NAME "mpi_baseline"
#define BASELINE_UNIT "ranks"
static void baseline_barrier(void) { MPI_Barrier(MPI_COMM_WORLD); }
static double baseline_now(void) { return MPI_Wtime(); }
static void baseline_abort(int code) { MPI_Abort(MPI_COMM_WORLD, code); }
#include "baseline.h"

static char *win_buf, *local_buf;
static MPI_Win win;

static void pingpong_body(size_t s, long n, void *arg) {
    (void)arg;
    (void)s;
    long v = 0;
    if (me == 0) {
        for (long i = 0; i < n; i++) {
            MPI_Send(&v, 1, MPI_LONG, peer, 0, MPI_COMM_WORLD);
            MPI_Recv(&v, 1, MPI_LONG, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
    } else if (me == peer) {
        for (long i = 0; i < n; i++) {
            MPI_Recv(&v, 1, MPI_LONG, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(&v, 1, MPI_LONG, 0, 0, MPI_COMM_WORLD);
        }
    }
}

static void put_lat(size_t s, long n, void *arg) {
    (void)arg;
    if (me) return;
    for (long i = 0; i < n; i++) {
        MPI_Put(local_buf, (int)s, MPI_BYTE, peer, 0, (int)s, MPI_BYTE, win);
        MPI_Win_flush(peer, win);
    }
}
static void put_bw(size_t s, long n, void *arg) {
    (void)arg;
    if (me) return;
    long w = win_for(s);
    for (long i = 0; i < n; i += w) {
        for (long k = 0; k < w; k++) MPI_Put(local_buf, (int)s, MPI_BYTE, peer, 0, (int)s, MPI_BYTE, win);
        MPI_Win_flush(peer, win);
    }
}
static void get_lat(size_t s, long n, void *arg) {
    (void)arg;
    if (me) return;
    for (long i = 0; i < n; i++) {
        MPI_Get(local_buf, (int)s, MPI_BYTE, peer, 0, (int)s, MPI_BYTE, win);
        MPI_Win_flush(peer, win);
    }
}
static void get_bw(size_t s, long n, void *arg) {
    (void)arg;
    if (me) return;
    long w = win_for(s);
    for (long i = 0; i < n; i += w) {
        for (long k = 0; k < w; k++) MPI_Get(local_buf, (int)s, MPI_BYTE, peer, 0, (int)s, MPI_BYTE, win);
        MPI_Win_flush(peer, win);
    }
}
static void atomic_body(size_t s, long n, void *arg) {
    (void)arg;
    (void)s;
    if (me) return;
    long one = 1, old = 0, sink = 0;
    for (long i = 0; i < n; i++) {
        MPI_Fetch_and_op(&one, &old, MPI_LONG, peer, (MPI_Aint)max_size, MPI_SUM, win);
        MPI_Win_flush(peer, win);
        sink += old;
    }
    __asm__ __volatile__("" ::"r"(sink));
}
static void barrier_body(size_t s, long n, void *arg) {
    (void)arg;
    (void)s;
    for (long i = 0; i < n; i++) MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &npes);
    peer = npes > 1 ? 1 : 0;
    const char *test = parse_options(argc, argv);
    local_buf = aligned_alloc(4096, (max_size + 4095) & ~(size_t)4095); /* as symbench */
    if (!local_buf ||
        MPI_Win_allocate((MPI_Aint)max_size + 64, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win_buf,
                         &win) != MPI_SUCCESS)
        MPI_Abort(MPI_COMM_WORLD, 1);
    memset(local_buf, 1, max_size);
    memset(win_buf, 3, max_size + 64);
    MPI_Win_lock_all(0, win);
    MPI_Barrier(MPI_COMM_WORLD);

    if (want(test, "pingpong") && npes > 1) {
        table("pingpong", "latency", "MPI_Send + MPI_Recv of one long, one way", "latency_us");
        row(sizeof(long), measure(pingpong_body, 8, iters * 20, NULL) * 1e6 / 2);
    }
    if (want(test, "put"))
        sweep("put", "MPI_Put + MPI_Win_flush, rank 0 to rank 1", put_lat,
              "MPI_Put x window + MPI_Win_flush, rank 0 to rank 1", put_bw);
    if (want(test, "get"))
        sweep("get", "MPI_Get + MPI_Win_flush, rank 0 from rank 1", get_lat,
              "MPI_Get x window + MPI_Win_flush, rank 0 from rank 1", get_bw);
    if (want(test, "atomic")) {
        table("atomic", "latency", "MPI_Fetch_and_op(MPI_SUM) + MPI_Win_flush, rank 0 on rank 1",
              "latency_us");
        row(sizeof(long), measure(atomic_body, 8, iters * 20, NULL) * 1e6);
    }
    if (want(test, "barrier")) {
        table("barrier", "latency", "MPI_Barrier, all ranks", "latency_us");
        row(0, measure(barrier_body, 0, iters * 5, NULL) * 1e6);
    }
    if (!me) printf("# mpi_baseline: done\n");
    fflush(stdout);
    MPI_Win_unlock_all(win);
    MPI_Win_free(&win);
    free(local_buf);
    MPI_Finalize();
    return 0;
}
