/*
 * shmem_stats — shmemx_stats counts exactly: a random number of puts of random
 * sizes (put, p, iput, put-with-signal, nbi) from the main thread and from
 * threads that then end (their counts must survive them), read while a
 * reader thread polls the counters; the heap in use follows shmem_malloc and
 * shmem_free; each all-reduce counts once under the algorithm that ran
 * (forced: ring and rd; a team of one: self).
 */
#include <pthread.h>
#include <shmemx.h>
#include <stdio.h>

#include "shmem_test.h"

#define MAXLEN 4096
static char dst[MAXLEN];
static uint64_t sig;
static int reading = 1;

typedef struct {
    test_rng_t rng;
    int n;
    uint64_t bytes;
} work_t;

/* n puts of random lengths to the right neighbour; returns their bytes. */
static void *put_some(void *arg) {
    work_t *w = arg;
    char src[MAXLEN] = {0};
    int right = shmem_test_right();
    w->bytes = 0;
    for (int i = 0; i < w->n; i++) {
        size_t len = 1 + test_next(&w->rng) % MAXLEN;
        switch (i % 5) {
        case 0: shmem_putmem(dst, src, len, right); break;
        case 1: shmem_putmem_nbi(dst, src, len, right); break;
        case 2: shmem_char_p(dst, 'x', right), len = 1; break;
        case 3: shmem_putmem_signal(dst, src, len, &sig, 1, SHMEM_SIGNAL_SET, right); break;
        case 4: /* len elements 8 apart: len bytes */
            len = 1 + len % (MAXLEN / 8);
            shmem_char_iput(dst, src, 8, 1, len, right);
            break;
        }
        w->bytes += len;
    }
    return NULL;
}

static void *reader(void *arg) {
    (void)arg;
    uint64_t last = 0;
    while (__atomic_load_n(&reading, __ATOMIC_ACQUIRE)) {
        shmemx_stats_t s;
        shmemx_stats(&s);
        CHECK(s.puts >= last, "the put count went back from %llu to %llu",
              (unsigned long long)last, (unsigned long long)s.puts);
        last = s.puts;
    }
    return NULL;
}

int main(void) {
    uint64_t seed = shmem_test_start_level("shmem_stats", SHMEM_THREAD_MULTIPLE);
    int me = shmem_my_pe(), n = shmem_n_pes();
    shmemx_stats_t s0, s1;
    shmemx_stats(&s0);
    CHECK(s0.heap_size > 0 && s0.heap_in_use <= s0.heap_size, "heap %llu in use of %llu",
          (unsigned long long)s0.heap_in_use, (unsigned long long)s0.heap_size);

    pthread_t rd;
    CHECK(pthread_create(&rd, NULL, reader, NULL) == 0, "pthread_create");
    work_t w[3];
    for (int t = 0; t < 3; t++) {
        w[t].rng = test_rng(seed, (uint64_t)(me * 3 + t));
        w[t].n = 50 + (int)(test_next(&w[t].rng) % 200);
    }
    put_some(&w[0]);
    pthread_t th[2];
    for (int t = 1; t < 3; t++)
        CHECK(pthread_create(&th[t - 1], NULL, put_some, &w[t]) == 0, "thread");
    for (int t = 1; t < 3; t++) pthread_join(th[t - 1], NULL); /* ended: their counts retire */
    __atomic_store_n(&reading, 0, __ATOMIC_RELEASE);
    pthread_join(rd, NULL);
    shmem_quiet();
    shmemx_stats(&s1);
    uint64_t puts = (uint64_t)(w[0].n + w[1].n + w[2].n);
    uint64_t bytes = w[0].bytes + w[1].bytes + w[2].bytes;
    CHECK(s1.puts - s0.puts == puts, "counted %llu puts, made %llu",
          (unsigned long long)(s1.puts - s0.puts), (unsigned long long)puts);
    CHECK(s1.put_bytes - s0.put_bytes == bytes, "counted %llu bytes, put %llu",
          (unsigned long long)(s1.put_bytes - s0.put_bytes), (unsigned long long)bytes);

    /* the heap in use: up by the block, back after the free */
    shmem_barrier_all();
    shmemx_stats(&s0);
    void *p = shmem_malloc(100000); /* a 128 KiB block */
    shmemx_stats(&s1);
    CHECK(s1.heap_in_use - s0.heap_in_use == 131072, "in use grew by %llu, want 131072",
          (unsigned long long)(s1.heap_in_use - s0.heap_in_use));
    shmem_free(p);
    shmemx_stats(&s1);
    CHECK(s1.heap_in_use == s0.heap_in_use, "in use %llu after the free, %llu before",
          (unsigned long long)s1.heap_in_use, (unsigned long long)s0.heap_in_use);

    /* all-reduces by algorithm */
    float *v = shmem_calloc(1024, sizeof(float));
    static const struct { shmemx_algo_t force; int stat; } cases[] = {
        {SHMEMX_ALGO_RING, SHMEMX_STATS_RING}, {SHMEMX_ALGO_RD, SHMEMX_STATS_RD}};
    for (int c = 0; c < 2; c++) {
        shmemx_set_allreduce_algo(cases[c].force);
        shmemx_stats(&s0);
        for (int k = 0; k < 3; k++)
            CHECK(shmemx_allreduce(SHMEM_TEAM_WORLD, v, v, 1024, SHMEMX_FLOAT32, SHMEMX_SUM) == 0,
                  "allreduce");
        shmemx_stats(&s1);
        int want = n == 1 ? SHMEMX_STATS_SELF : cases[c].stat;
        for (int a = 0; a < SHMEMX_STATS_ALGOS; a++)
            CHECK(s1.allreduce[a] - s0.allreduce[a] == (a == want ? 3u : 0u),
                  "forced %s: %s counted %llu", shmemx_algo_name(cases[c].force),
                  shmemx_stats_algo_name(a),
                  (unsigned long long)(s1.allreduce[a] - s0.allreduce[a]));
    }
    shmemx_set_allreduce_algo(SHMEMX_ALGO_AUTO);
    CHECK(!strcmp(shmemx_stats_algo_name(SHMEMX_STATS_HIERARCHICAL), "hierarchical") &&
              !strcmp(shmemx_stats_algo_name(SHMEMX_STATS_ALGOS), "unknown"),
          "algorithm names");
    shmem_free(v);
    shmem_test_pass("shmem_stats", "puts, bytes, heap in use and all-reduces counted exactly");
    shmem_finalize();
    return 0;
}
