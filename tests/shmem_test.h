/*
 * shmem_test.h — what the multi-PE tests share beyond test.h: starting the
 * runtime with one seed for the whole job (PE 0's, sent to every PE before any
 * test draws from it), the PE numbers a test talks to, and the pass line.
 */
#ifndef SYM_SHMEM_TEST_H
#define SYM_SHMEM_TEST_H

#include <shmem.h>

#include "test.h"

static uint64_t shmem_test_seed_word; /* a global: symmetric, so PE 0 can put into it */

/* With the runtime started: agree on PE 0's seed, print it once, return it. */
static inline uint64_t shmem_test_agree_seed(const char *name) {
    test_pe = shmem_my_pe();
    int n = shmem_n_pes();
    if (test_pe == 0) {
        uint64_t s = test_seed();
        for (int pe = 0; pe < n; pe++) shmem_uint64_p(&shmem_test_seed_word, s, pe);
        printf("%s: %d PE%s, seed 0x%" PRIx64 " (replay with SYMTRAIN_TEST_SEED=0x%" PRIx64 ")\n",
               name, n, n == 1 ? "" : "s", s, s);
        fflush(stdout);
    }
    shmem_barrier_all();
    return shmem_test_seed_word;
}

/* Start the runtime at thread `level` (SHMEM_THREAD_SINGLE: plain shmem_init),
 * agree on a seed, print it once. Returns the seed. */
static inline uint64_t shmem_test_start_level(const char *name, int level) {
    if (level == SHMEM_THREAD_SINGLE) {
        shmem_init();
    } else {
        int provided = -1;
        CHECK(shmem_init_thread(level, &provided) == 0, "shmem_init_thread(%d) failed", level);
        CHECK(provided == level, "asked thread level %d, provided %d", level, provided);
    }
    return shmem_test_agree_seed(name);
}

static inline uint64_t shmem_test_start(const char *name) {
    return shmem_test_start_level(name, SHMEM_THREAD_SINGLE);
}

/* splitmix64's finaliser: a well-mixed 64-bit function of x, for test data
 * every PE can compute for every PE from the seed. */
static inline uint64_t shmem_test_mix(uint64_t x) {
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

static inline int shmem_test_right(void) { return (shmem_my_pe() + 1) % shmem_n_pes(); }
static inline int shmem_test_left(void) {
    return (shmem_my_pe() + shmem_n_pes() - 1) % shmem_n_pes();
}

/* PE 0 reports success after every PE got here. */
static inline void shmem_test_pass(const char *name, const char *what) {
    shmem_barrier_all();
    if (shmem_my_pe() == 0) printf("%s: PASS (%s)\n", name, what);
    fflush(stdout);
}

#endif
