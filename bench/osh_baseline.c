/*
 * osh_baseline — the point-to-point benchmarks of tools/symbench.c, built
 * against Open MPI's OpenSHMEM (oshcc), so bench/run_shmem.sh can put the two
 * side by side. The loops, iteration counts, warm-up and "best of --reps"
 * rule are symbench's; the tables have the same shape, titled
 * "# osh_baseline <test> <measure>: ...".
 *
 *   oshcc -O2 osh_baseline.c -o osh_baseline
 *   SHMEM_SYMMETRIC_SIZE=256M UCX_TLS=sm,self oshrun -np 2 ./osh_baseline all
 *
 * Open MPI's OpenSHMEM may crash inside shmem_finalize on this machine: every
 * result is printed and flushed before it is called.
 */
#include <shmem.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double baseline_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
static void baseline_barrier(void) { shmem_barrier_all(); }
static void baseline_abort(int code) { shmem_global_exit(code); }
#define BASELINE_NAME "osh_baseline"
#define BASELINE_UNIT "PEs"
#include "baseline.h"

static char *sym_buf, *local_buf;
static long pp_flag, amo_word;

static void pingpong_body(size_t size, long n, void *arg) {
    (void)size;
    long *base = arg;
    if (me == 0) {
        for (long i = 1; i <= n; i++) {
            long v = *base + i;
            shmem_long_p(&pp_flag, v, peer);
            shmem_long_wait_until(&pp_flag, SHMEM_CMP_EQ, v);
        }
    } else if (me == peer) {
        for (long i = 1; i <= n; i++) {
            long v = *base + i;
            shmem_long_wait_until(&pp_flag, SHMEM_CMP_EQ, v);
            shmem_long_p(&pp_flag, v, 0);
        }
    }
    *base += n;
}

static void put_lat(size_t s, long n, void *a) {
    (void)a;
    if (me) return;
    for (long i = 0; i < n; i++) {
        shmem_putmem(sym_buf + slice(i, s), local_buf + slice(i, s), s, peer);
        shmem_quiet();
    }
}
static void put_bw(size_t s, long n, void *a) {
    (void)a;
    if (me) return;
    long w = win_for(s);
    for (long i = 0; i < n; i += w) {
        for (long k = 0; k < w; k++)
            shmem_putmem_nbi(sym_buf + slice(i + k, s), local_buf + slice(i + k, s), s, peer);
        shmem_quiet();
    }
}
static void get_lat(size_t s, long n, void *a) {
    (void)a;
    if (me) return;
    for (long i = 0; i < n; i++) {
        shmem_getmem(local_buf + slice(i, s), sym_buf + slice(i, s), s, peer);
        shmem_quiet();
    }
}
static void get_bw(size_t s, long n, void *a) {
    (void)a;
    if (me) return;
    long w = win_for(s);
    for (long i = 0; i < n; i += w) {
        for (long k = 0; k < w; k++)
            shmem_getmem_nbi(local_buf + slice(i + k, s), sym_buf + slice(i + k, s), s, peer);
        shmem_quiet();
    }
}
static void atomic_body(size_t s, long n, void *a) {
    (void)s;
    (void)a;
    if (me) return;
    long sink = 0;
    for (long i = 0; i < n; i++) sink += shmem_long_atomic_fetch_add(&amo_word, 1, peer);
    __asm__ __volatile__("" ::"r"(sink));
}
static void barrier_body(size_t s, long n, void *a) {
    (void)s;
    (void)a;
    for (long i = 0; i < n; i++) shmem_barrier_all();
}

int main(int argc, char **argv) {
    shmem_init();
    me = shmem_my_pe();
    npes = shmem_n_pes();
    peer = npes > 1 ? 1 : 0;
    const char *test = parse_options(argc, argv);
    sym_buf = shmem_malloc(buffer_bytes());
    local_buf = aligned_alloc(4096, buffer_bytes()); /* as symbench */
    if (!sym_buf || !local_buf) {
        if (!me) fprintf(stderr, "osh_baseline: cannot allocate %zu bytes; raise "
                                 "SHMEM_SYMMETRIC_SIZE\n", max_size);
        shmem_global_exit(1);
    }
    memset(sym_buf, 3, buffer_bytes());
    memset(local_buf, 1, buffer_bytes());
    shmem_barrier_all();

    if (want(test, "pingpong") && npes > 1) {
        table("pingpong", "latency", "shmem_long_p + shmem_long_wait_until, one way", "latency_us");
        long base = 0;
        row(sizeof(long), measure(pingpong_body, 8, iters * 20, &base) * 1e6 / 2);
    }
    if (want(test, "put"))
        sweep("put", "shmem_putmem + shmem_quiet, PE 0 to PE 1", put_lat,
              "shmem_putmem_nbi x window + shmem_quiet, PE 0 to PE 1", put_bw);
    if (want(test, "get"))
        sweep("get", "shmem_getmem + shmem_quiet, PE 0 from PE 1", get_lat,
              "shmem_getmem_nbi x window + shmem_quiet, PE 0 from PE 1", get_bw);
    if (want(test, "atomic")) {
        table("atomic", "latency", "shmem_long_atomic_fetch_add, PE 0 on PE 1", "latency_us");
        row(sizeof(long), measure(atomic_body, 8, iters * 20, NULL) * 1e6);
    }
    if (want(test, "barrier")) {
        table("barrier", "latency", "shmem_barrier_all, all PEs", "latency_us");
        row(0, measure(barrier_body, 0, iters * 5, NULL) * 1e6);
    }
    if (!me) printf("# osh_baseline: done\n");
    fflush(stdout);
    fflush(stderr);
    shmem_barrier_all();
    shmem_finalize(); /* may crash in Open MPI here; the results are out */
    return 0;
}
