/*
 * shmem_test.h — what the multi-PE shmem tests share beyond test.h: one seed
 * for the whole job (PE 0's, sent to every PE before any test draws from it)
 * and the PE numbers a test talks to.
 */
#ifndef SYM_SHMEM_TEST_H
#define SYM_SHMEM_TEST_H

#include <shmem.h>

#include "test.h"

static uint64_t shmem_test_seed_word; /* a global: symmetric, so PE 0 can put into it */

/* Start the runtime, agree on a seed, print it once. Returns the seed. */
static inline uint64_t shmem_test_start(const char *name) {
    shmem_init();
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
