/*
 * sos_threads — threaded programs in the style of Sandia OpenSHMEM's
 * threading, mt_a2a, mt_contention and many-ctx tests:
 * shmem_init_thread(SHMEM_THREAD_MULTIPLE) and shmem_query_thread; T threads
 * per PE each putting its block into every PE on the default context and on
 * a private context of its own; every thread incrementing counters on every
 * PE; a lock taken by every thread; many contexts at once, each quieted.
 *
 * @npes 2 4
 */
#include <pthread.h>
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>

#define T 4
#define BLK 1024
#define NUM_CTX 64

static int me, npes, errors;
static char dst[16][T][BLK]; /* [source PE][thread] */
static long counters[T];
static long lock, locked_total;
static int ctx_data;
static pthread_barrier_t tbar;

static void *thread_main(void *arg) {
    int t = (int)(long)arg;
    char src[BLK];
    shmem_ctx_t ctx;
    int use_ctx = shmem_ctx_create(SHMEM_CTX_PRIVATE, &ctx) == 0;
    for (int i = 0; i < BLK; i++) src[i] = (char)(me * 31 + t * 7 + i);
    /* all-to-all of blocks, half on the private context */
    for (int pe = 0; pe < npes; pe++) {
        if (use_ctx && pe % 2)
            shmem_ctx_putmem(ctx, dst[me][t], src, BLK, pe);
        else
            shmem_putmem(dst[me][t], src, BLK, pe);
    }
    if (use_ctx) shmem_ctx_quiet(ctx);
    shmem_quiet();
    /* contention: every thread of every PE increments every PE's counter t */
    for (int k = 0; k < 50; k++)
        for (int pe = 0; pe < npes; pe++) {
            if (use_ctx && k % 2)
                shmem_ctx_long_atomic_inc(ctx, &counters[t], pe);
            else
                shmem_long_atomic_inc(&counters[t], pe);
        }
    for (int k = 0; k < 10; k++) {
        shmem_set_lock(&lock);
        long v = shmem_long_g(&locked_total, 0);
        shmem_long_p(&locked_total, v + 1, 0);
        shmem_quiet();
        shmem_clear_lock(&lock);
    }
    if (use_ctx) shmem_ctx_destroy(ctx);
    pthread_barrier_wait(&tbar);
    return NULL;
}

int main(void) {
    int provided;
    int ret = shmem_init_thread(SHMEM_THREAD_MULTIPLE, &provided);
    if (ret != 0 || provided != SHMEM_THREAD_MULTIPLE) {
        printf("SHMEM_THREAD_MULTIPLE not provided (ret %d, provided %d)\n", ret, provided);
        shmem_global_exit(1);
    }
    int q;
    shmem_query_thread(&q);
    if (q != provided) errors++;
    me = shmem_my_pe();
    npes = shmem_n_pes();
    if (npes > 16) shmem_global_exit(2);

    pthread_t th[T];
    pthread_barrier_init(&tbar, NULL, T);
    for (long t = 0; t < T; t++) pthread_create(&th[t], NULL, thread_main, (void *)t);
    for (int t = 0; t < T; t++) pthread_join(th[t], NULL);
    pthread_barrier_destroy(&tbar);
    shmem_barrier_all();

    for (int pe = 0; pe < npes; pe++)
        for (int t = 0; t < T; t++)
            for (int i = 0; i < BLK; i++)
                if (dst[pe][t][i] != (char)(pe * 31 + t * 7 + i)) {
                    printf("PE %d: block from PE %d thread %d wrong at %d\n", me, pe, t, i);
                    errors++;
                    i = BLK;
                }
    for (int t = 0; t < T; t++)
        if (counters[t] != 50L * npes) { /* thread t of every PE added 50 here */
            printf("PE %d: counter %d = %ld, want %ld\n", me, t, counters[t], 50L * npes);
            errors++;
        }
    if (me == 0 && locked_total != 10L * T * npes) {
        printf("lock-protected total %ld, want %ld\n", locked_total, 10L * T * npes);
        errors++;
    }

    /* many contexts at once (many-ctx) */
    shmem_ctx_t ctx[NUM_CTX];
    for (int i = 0; i < NUM_CTX; i++)
        if (shmem_ctx_create(SHMEM_CTX_PRIVATE, &ctx[i]) != 0) ctx[i] = SHMEM_CTX_DEFAULT;
    for (int i = 0; i < NUM_CTX; i++) shmem_ctx_int_atomic_inc(ctx[i], &ctx_data, (me + 1) % npes);
    for (int i = 0; i < NUM_CTX; i++) shmem_ctx_quiet(ctx[i]);
    shmem_sync_all();
    if (ctx_data != NUM_CTX) {
        printf("PE %d: ctx_data = %d, want %d\n", me, ctx_data, NUM_CTX);
        errors++;
    }
    for (int i = 0; i < NUM_CTX; i++)
        if (ctx[i] != SHMEM_CTX_DEFAULT) shmem_ctx_destroy(ctx[i]);

    static int all;
    shmem_int_atomic_add(&all, errors, 0);
    shmem_barrier_all();
    if (me == 0) printf("sos_threads: %s (%d PEs x %d threads)\n", all ? "FAILED" : "PASS", npes, T);
    shmem_finalize();
    return errors ? 1 : 0;
}
