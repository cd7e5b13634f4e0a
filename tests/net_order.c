/*
 * net_order — small messages between hosts arrive in the order sent. Small
 * puts and puts-with-signal travel as batched messages that the target's
 * threads apply (the waiting thread and the progress thread may each take one
 * at once); a batch overtaking an earlier one would lower a signal or bring
 * back old data. Two streams, each long enough to have hit that:
 *   1. thousands of small all-reduces (oneshot between hosts: one
 *      put-with-signal per peer and round), each result checked;
 *   2. every PE streams puts-with-signal to its right-hand neighbour through a
 *      window of slots; the neighbour sees the signal never go down and every
 *      slot it is told about hold its value.
 */
#include <shmem.h>
#include <shmemx.h>

#include "shmem_test.h"

#define ROUNDS 3000
#define WINDOW 8
#define STREAM 3000

static int64_t vec[64];
static uint64_t slot[WINDOW];
static uint64_t words[2]; /* what the right neighbour acknowledged; the left one's signal */
#define ACKED words[0]
#define SIG words[1]

static uint64_t seen; /* the left neighbour's values read and checked */

/* Check what the left neighbour sent since last time and acknowledge it. */
static void drain(int left) {
    uint64_t s = shmem_signal_fetch(&SIG);
    CHECK(s >= seen, "signal went down from %llu to %llu", (unsigned long long)seen,
          (unsigned long long)s);
    for (uint64_t j = seen + 1; j <= s; j++)
        CHECK(slot[j % WINDOW] == j, "slot for %llu holds %llu (signal %llu)",
              (unsigned long long)j, (unsigned long long)slot[j % WINDOW], (unsigned long long)s);
    if (s > seen) shmem_uint64_atomic_set(&ACKED, s, left);
    seen = s;
}

int main(void) {
    uint64_t seed = shmem_test_start("net_order");
    int me = shmem_my_pe(), n = shmem_n_pes(), right = shmem_test_right(),
        left = shmem_test_left();
    test_rng_t r = test_rng(seed, 0); /* the same sequence on every PE */

    for (int round = 1; round <= ROUNDS; round++) {
        size_t count = 1 + test_next(&r) % 64;
        for (size_t i = 0; i < count; i++) vec[i] = (int64_t)(me + 1) * round + (int64_t)i;
        CHECK(shmemx_allreduce(SHMEM_TEAM_WORLD, vec, vec, count, SHMEMX_INT64, SHMEMX_SUM) == 0,
              "all-reduce %d failed", round);
        for (size_t i = 0; i < count; i++) {
            int64_t want = (int64_t)n * (n + 1) / 2 * round + (int64_t)n * (int64_t)i;
            CHECK(vec[i] == want, "round %d element %zu: %lld, want %lld", round, i,
                  (long long)vec[i], (long long)want);
        }
    }
    shmem_barrier_all();

    /* Value k goes to slot k % WINDOW, then the signal to k; a slot is reused
     * only after the neighbour has acknowledged reading it. Meanwhile this PE
     * reads its left neighbour's stream, so neither waits for the other. */
    for (uint64_t k = 1; k <= STREAM; k++) {
        while (k > WINDOW && shmem_uint64_atomic_fetch(&ACKED, me) < k - WINDOW) {
            uint64_t want[2] = {k - WINDOW, seen + 1};
            shmem_uint64_wait_until_any_vector(words, 2, NULL, SHMEM_CMP_GE, want);
            drain(left);
        }
        shmem_putmem_signal(&slot[k % WINDOW], &k, sizeof k, &SIG, k, SHMEM_SIGNAL_SET, right);
        drain(left);
    }
    while (seen < STREAM) { /* the rest of the left neighbour's stream */
        shmem_uint64_wait_until(&SIG, SHMEM_CMP_GT, seen);
        drain(left);
    }
    shmem_test_pass("net_order", "small all-reduces and put-with-signal streams in order");
    shmem_finalize();
    return 0;
}
