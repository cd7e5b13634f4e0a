/*
 * net_flood — the fabric keeps moving when the provider's queues are full.
 *
 * Run by net_hosts.sh with the provider's transmit and receive queues a few
 * entries deep (FI_OFI_RXM_TX_SIZE, FI_TCP_TX_SIZE, FI_NET_TX_SIZE ... set
 * tiny by tests/net.cmake) and its data moved only when someone reads the
 * completion queue (tcp;ofi_rxm is manual-progress; net is made so by
 * FI_NET_DISABLE_AUTO_PROGRESS). A post then often returns -FI_EAGAIN: in a
 * thread flushing a batch, in the progress thread replying to an atomic or
 * acknowledging a batch, in two threads of a PE at once. Whoever retries must
 * drive the queue itself, or every thread waits for another to.
 *
 * Two threads per PE (one on the default context, one on its own) send every
 * other PE, round after round: small non-blocking puts (batches), larger ones
 * (fi_write), non-fetching atomic adds and a fetching one (active messages the
 * target's CPU applies and replies to), a put with signal add; then a quiet.
 * At the end every PE checks the last round's data from every sender and
 * thread, and that every add arrived. A deadlock ends the test after
 * DEADLINE_S with a message instead of hanging.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <shmem.h>

#include "shmem_test.h"

#define THREADS 2
#define ROUNDS 60
#define SMALL 48       /* small puts a round, to each PE */
#define SMALL_LEN 40   /* bytes each (not a multiple of 8: padded in the batch) */
#define LARGE 3        /* larger puts a round, to each PE */
#define LARGE_LEN 6000 /* over the batching limit: fi_write */
#define ADDS 48        /* non-fetching atomic adds a round, to each PE */
#define SIGNALS 24     /* puts with signal set a round: a batch sent at once each */
#define SIGNAL_LEN 320 /* past an injected message (net: 128 bytes), short of a write */
#define AREA (SIGNALS * SIGNAL_LEN) /* bytes the small puts and those with signal cover */
#define DEADLINE_S 120

static int me, npes;
static char *small_dst, *large_dst; /* [thread][from][...] */
static long *counter;               /* [thread][from] */
static uint64_t *sig;               /* [thread][from] */
static uint64_t *sig_set;           /* [thread][from] */

static size_t slot(int t, int from) { return (size_t)t * (size_t)npes + (size_t)from; }

static char pattern(int round, int from, int t, size_t i) {
    return (char)(round * 7 + from * 31 + t * 13 + (int)(i % 251));
}

static void on_alarm(int s) {
    (void)s;
    static const char msg[] = "net_flood: FAIL: no end after 120 s with tiny provider queues: "
                              "the fabric's progress deadlocked\n";
    (void)!write(2, msg, sizeof msg - 1);
    _exit(1);
}

static void *sender(void *arg) {
    int t = (int)(intptr_t)arg;
    shmem_ctx_t ctx = SHMEM_CTX_DEFAULT;
    if (t) CHECK(shmem_ctx_create(SHMEM_CTX_PRIVATE, &ctx) == 0, "shmem_ctx_create failed");
    static _Thread_local char src[AREA + LARGE * LARGE_LEN];
    for (int round = 1; round <= ROUNDS; round++) {
        for (size_t i = 0; i < sizeof src; i++) src[i] = pattern(round, me, t, i);
        for (int k = 1; k < npes; k++) {
            int pe = (me + k) % npes;
            char *sd = small_dst + slot(t, me) * AREA;
            char *ld = large_dst + slot(t, me) * LARGE * LARGE_LEN;
            for (int i = 0; i < SMALL; i++)
                shmem_ctx_putmem_nbi(ctx, sd + i * SMALL_LEN, src + i * SMALL_LEN, SMALL_LEN, pe);
            for (int i = 0; i < ADDS; i++) shmem_ctx_long_atomic_add(ctx, &counter[slot(t, me)], 1, pe);
            for (int i = 0; i < LARGE; i++)
                shmem_ctx_putmem_nbi(ctx, ld + i * LARGE_LEN, src + AREA + i * LARGE_LEN,
                                     LARGE_LEN, pe);
            for (int i = 0; i < SIGNALS; i++)
                shmem_ctx_putmem_signal_nbi(ctx, sd + i * SIGNAL_LEN, src + i * SIGNAL_LEN, SIGNAL_LEN,
                                            &sig_set[slot(t, me)], (uint64_t)round, SHMEM_SIGNAL_SET, pe);
            shmem_ctx_putmem_signal(ctx, sd, src, 8, &sig[slot(t, me)], 1, SHMEM_SIGNAL_ADD, pe);
            long old = shmem_ctx_long_atomic_fetch_add(ctx, &counter[slot(t, me)], 0, pe);
            CHECK(old >= (long)(round - 1) * ADDS, "PE %d thread %d round %d: PE %d's counter "
                  "reads %ld, below the %ld adds of earlier rounds", me, t, round, pe, old,
                  (long)(round - 1) * ADDS);
        }
        shmem_ctx_quiet(ctx);
    }
    if (t) shmem_ctx_destroy(ctx);
    return NULL;
}

int main(void) {
    signal(SIGALRM, on_alarm);
    alarm(DEADLINE_S);
    shmem_test_start_level("net_flood", SHMEM_THREAD_MULTIPLE);
    me = shmem_my_pe();
    npes = shmem_n_pes();
    CHECK(npes >= 2, "needs 2 PEs or more");
    size_t slots = (size_t)THREADS * (size_t)npes;
    small_dst = shmem_calloc(slots, AREA);
    large_dst = shmem_calloc(slots * LARGE, LARGE_LEN);
    counter = shmem_calloc(slots, sizeof *counter);
    sig = shmem_calloc(slots, sizeof *sig);
    sig_set = shmem_calloc(slots, sizeof *sig_set);
    CHECK(small_dst && large_dst && counter && sig && sig_set, "shmem_calloc failed");
    shmem_barrier_all();

    pthread_t th[THREADS];
    for (int t = 0; t < THREADS; t++)
        CHECK(pthread_create(&th[t], NULL, sender, (void *)(intptr_t)t) == 0, "pthread_create");
    for (int t = 0; t < THREADS; t++) pthread_join(th[t], NULL);
    shmem_barrier_all();

    for (int t = 0; t < THREADS; t++)
        for (int from = 0; from < npes; from++) {
            if (from == me) continue;
            const char *sd = small_dst + slot(t, from) * AREA;
            const char *ld = large_dst + slot(t, from) * LARGE * LARGE_LEN;
            for (size_t i = 0; i < (size_t)AREA; i++)
                CHECK(sd[i] == pattern(ROUNDS, from, t, i),
                      "small put byte %zu from PE %d thread %d is %d, want %d", i, from, t, sd[i],
                      pattern(ROUNDS, from, t, i));
            for (size_t i = 0; i < (size_t)LARGE * LARGE_LEN; i++)
                CHECK(ld[i] == pattern(ROUNDS, from, t, (size_t)AREA + i),
                      "large put byte %zu from PE %d thread %d is wrong", i, from, t);
            CHECK(counter[slot(t, from)] == (long)ROUNDS * ADDS,
                  "PE %d thread %d's adds: %ld arrived, want %ld", from, t, counter[slot(t, from)],
                  (long)ROUNDS * ADDS);
            CHECK(sig[slot(t, from)] == ROUNDS, "PE %d thread %d's signal adds: %lu, want %d",
                  from, t, (unsigned long)sig[slot(t, from)], ROUNDS);
            CHECK(sig_set[slot(t, from)] == ROUNDS, "PE %d thread %d's signal sets: %lu, want %d",
                  from, t, (unsigned long)sig_set[slot(t, from)], ROUNDS);
        }
    shmem_test_pass("net_flood", "two threads a PE flooding every PE through tiny provider queues");
    shmem_free(small_dst);
    shmem_free(large_dst);
    shmem_free(counter);
    shmem_free(sig);
    shmem_free(sig_set);
    shmem_finalize();
    return 0;
}
