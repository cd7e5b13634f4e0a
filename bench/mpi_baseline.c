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

static long iters = 20000, iters_large = 100;
static int reps = 5, window = 64;
static size_t min_size = 1, max_size = (size_t)64 << 20;
static int me, npes, peer;
static char *win_buf, *local_buf;
static MPI_Win win;

static long iters_for(size_t size) {
    if (size <= 8192) return iters;
    long n = (long)((double)iters_large * (1 << 20) / (double)size);
    if (n > iters) n = iters;
    return n < 4 ? 4 : n;
}

static long win_for(size_t size) { return size >= ((size_t)1 << 20) ? 1 : window; }

static void table(const char *test, const char *measure, const char *what, const char *col) {
    if (me) return;
    printf("# mpi_baseline %s %s: %s, %d ranks\n# size %s\n", test, measure, what, npes, col);
    fflush(stdout);
}

static void row(size_t size, double v) {
    if (me) return;
    printf("%-10zu %12.4f\n", size, v);
    fflush(stdout);
}

typedef void body_fn(size_t size, long n);

static double measure(body_fn *body, size_t size, long n) {
    body(size, n / 10 + 1);
    double best = 0;
    for (int r = 0; r < reps; r++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        body(size, n);
        double t = (MPI_Wtime() - t0) / (double)n;
        if (r == 0 || t < best) best = t;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    return best;
}

static void pingpong_body(size_t s, long n) {
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

static void put_lat(size_t s, long n) {
    if (me) return;
    for (long i = 0; i < n; i++) {
        MPI_Put(local_buf, (int)s, MPI_BYTE, peer, 0, (int)s, MPI_BYTE, win);
        MPI_Win_flush(peer, win);
    }
}
static void put_bw(size_t s, long n) {
    if (me) return;
    long w = win_for(s);
    for (long i = 0; i < n; i += w) {
        for (long k = 0; k < w; k++) MPI_Put(local_buf, (int)s, MPI_BYTE, peer, 0, (int)s, MPI_BYTE, win);
        MPI_Win_flush(peer, win);
    }
}
static void get_lat(size_t s, long n) {
    if (me) return;
    for (long i = 0; i < n; i++) {
        MPI_Get(local_buf, (int)s, MPI_BYTE, peer, 0, (int)s, MPI_BYTE, win);
        MPI_Win_flush(peer, win);
    }
}
static void get_bw(size_t s, long n) {
    if (me) return;
    long w = win_for(s);
    for (long i = 0; i < n; i += w) {
        for (long k = 0; k < w; k++) MPI_Get(local_buf, (int)s, MPI_BYTE, peer, 0, (int)s, MPI_BYTE, win);
        MPI_Win_flush(peer, win);
    }
}
static void atomic_body(size_t s, long n) {
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
static void barrier_body(size_t s, long n) {
    (void)s;
    for (long i = 0; i < n; i++) MPI_Barrier(MPI_COMM_WORLD);
}

static void sweep(const char *test, const char *what_lat, body_fn *lat, const char *what_bw,
                  body_fn *bw) {
    table(test, "latency", what_lat, "latency_us");
    for (size_t s = min_size; s <= max_size; s *= 2) row(s, measure(lat, s, iters_for(s)) * 1e6);
    table(test, "bandwidth", what_bw, "bandwidth_GBs");
    for (size_t s = min_size; s <= max_size; s *= 2) {
        long n = (iters_for(s) + win_for(s) - 1) / win_for(s) * win_for(s);
        row(s, (double)s / measure(bw, s, n) * 1e-9);
    }
}

static int want(const char *test, const char *name) {
    return !strcmp(test, "all") || !strcmp(test, name);
}

static size_t parse_size(const char *v) {
    char *end;
    double x = strtod(v, &end);
    if (*end == 'K' || *end == 'k') x *= 1024;
    if (*end == 'M' || *end == 'm') x *= 1024 * 1024;
    if (*end == 'G' || *end == 'g') x *= 1024.0 * 1024 * 1024;
    return (size_t)x;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &npes);
    peer = npes > 1 ? 1 : 0;
    const char *test = argc > 1 ? argv[1] : "all";
    for (int i = 2; i + 1 < argc; i += 2) {
        const char *a = argv[i], *v = argv[i + 1];
        if (!strcmp(a, "-i") || !strcmp(a, "--iters")) iters = atol(v);
        else if (!strcmp(a, "--iters-large")) iters_large = atol(v);
        else if (!strcmp(a, "-r") || !strcmp(a, "--reps")) reps = atoi(v);
        else if (!strcmp(a, "-w") || !strcmp(a, "--window")) window = atoi(v);
        else if (!strcmp(a, "--min-size")) min_size = parse_size(v);
        else if (!strcmp(a, "--max-size")) max_size = parse_size(v);
        else {
            if (!me) fprintf(stderr, "mpi_baseline: unknown option %s\n", a);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
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
        row(sizeof(long), measure(pingpong_body, 8, iters * 20) * 1e6 / 2);
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
        row(sizeof(long), measure(atomic_body, 8, iters * 20) * 1e6);
    }
    if (want(test, "barrier")) {
        table("barrier", "latency", "MPI_Barrier, all ranks", "latency_us");
        row(0, measure(barrier_body, 0, iters * 5) * 1e6);
    }
    if (!me) printf("# mpi_baseline: done\n");
    fflush(stdout);
    MPI_Win_unlock_all(win);
    MPI_Win_free(&win);
    free(local_buf);
    MPI_Finalize();
    return 0;
}
