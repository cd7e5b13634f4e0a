/*
 * api_lock — shmem_set_lock / shmem_test_lock / shmem_clear_lock under
 * contention from every PE.
 *
 * Several locks (a global, heap ones from shmem_calloc and shmem_malloc zeroed
 * by each PE), each guarding a counter on a different PE. Every PE takes
 * random locks many times, with set_lock or by spinning on test_lock, and
 * inside does a non-atomic read-modify-write of the guarded counter (get,
 * a yield to widen the window, put): a lost update shows mutual exclusion
 * failed. An atomic "inside" count per lock must read 0 on entry. At the end
 * each counter equals the number of times its lock was taken (summed over PEs
 * by a reduction). Then test_lock is checked against a lock held by PE 0:
 * every other PE must see it taken, and get it once it is released.
 */
#include <sched.h>

#include "api_test.h"

#define NLOCKS 4
#define ROUNDS 400

static long glock;            /* lock 0: a global */
static long counter[NLOCKS];  /* counter k lives on PE k % n */
static long inside[NLOCKS];   /* ditto */
static long taken[NLOCKS], total[NLOCKS];
static long held_flag, probe_done;

int main(void) {
    uint64_t seed = api_start("api_lock", SHMEM_THREAD_SINGLE);
    int me = shmem_my_pe(), n = shmem_n_pes();
    long *heap = shmem_calloc(2, sizeof(long));           /* locks 1 and 2 */
    long *other = shmem_malloc(sizeof(long) * 8);          /* lock 3 */
    CHECK(heap && other, "shmem_calloc / shmem_malloc failed");
    other[3] = 0;
    shmem_barrier_all(); /* locks must be zero on every PE before first use */
    long *locks[NLOCKS] = {&glock, &heap[0], &heap[1], &other[3]};

    test_rng_t r = api_rng(seed, me, 1, 0);
    for (int k = 0; k < ROUNDS; k++) {
        int l = (int)(test_next(&r) % NLOCKS);
        int owner = l % n;
        if (test_next(&r) & 1) {
            shmem_set_lock(locks[l]);
        } else {
            while (shmem_test_lock(locks[l]) != 0) sched_yield();
        }
        long in = shmem_long_atomic_fetch_inc(&inside[l], owner);
        CHECK(in == 0, "round %d: lock %d: %ld other PE(s) inside", k, l, in);
        long v = shmem_long_g(&counter[l], owner);
        if (test_next(&r) % 3 == 0) sched_yield();
        shmem_long_p(&counter[l], v + 1, owner);
        shmem_long_atomic_add(&inside[l], -1, owner);
        shmem_clear_lock(locks[l]);
        taken[l]++;
    }
    shmem_barrier_all();
    CHECK_EQ_INT(shmem_long_sum_reduce(SHMEM_TEAM_WORLD, total, taken, NLOCKS), 0);
    long all = 0;
    for (int l = 0; l < NLOCKS; l++) {
        all += total[l];
        if (l % n == me)
            CHECK(counter[l] == total[l],
                  "lock %d: the guarded counter is %ld but the lock was taken %ld times (a lost "
                  "update: two PEs were inside at once)", l, counter[l], total[l]);
    }
    CHECK_EQ_INT(all, (long)n * ROUNDS);

    /* test_lock sees a held lock as taken, and takes it once released */
    if (me == 0) {
        shmem_set_lock(&glock);
        for (int p = 0; p < n; p++) shmem_long_atomic_set(&held_flag, 1, p);
        shmem_long_wait_until(&probe_done, SHMEM_CMP_EQ, n - 1);
        shmem_clear_lock(&glock);
    } else {
        shmem_long_wait_until(&held_flag, SHMEM_CMP_EQ, 1);
        CHECK(shmem_test_lock(&glock) != 0, "test_lock took a lock PE 0 holds");
        shmem_long_atomic_inc(&probe_done, 0);
    }
    shmem_barrier_all();
    if (me != 0) {
        while (shmem_test_lock(&glock) != 0) sched_yield();
        long in = shmem_long_atomic_fetch_inc(&inside[0], 0);
        CHECK(in == 0, "test_lock: %ld other PE(s) inside", in);
        shmem_long_atomic_add(&inside[0], -1, 0);
        shmem_clear_lock(&glock);
    }
    shmem_barrier_all();
    /* an uncontended lock: test_lock takes it at once; set_lock after clear */
    if (me == n - 1) {
        CHECK_EQ_INT(shmem_test_lock(other + 3), 0);
        shmem_clear_lock(other + 3);
        shmem_set_lock(other + 3);
        shmem_clear_lock(other + 3);
    }
    shmem_barrier_all();
    shmem_free(other);
    shmem_free(heap);
    char what[128];
    snprintf(what, sizeof what, "%d lock acquisitions by %d PEs over %d locks, no lost update",
             n * ROUNDS, n, NLOCKS);
    api_pass(what);
    shmem_finalize();
    return 0;
}
