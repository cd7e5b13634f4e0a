/*
 * api_test.h — what the tests of the full OpenSHMEM API (tests/api_*.c) share
 * beyond test.h: starting the runtime at a thread level, one seed for the
 * whole job (PE 0's, sent to every PE before anything is drawn from it), the
 * random streams each PE can recompute for any other PE (so references need no
 * communication), and the pass line.
 */
#ifndef SYM_API_TEST_H
#define SYM_API_TEST_H

#include <shmem.h>

#include "shmem_test.h"

#define API_LEN(a) (sizeof(a) / sizeof((a)[0]))

static const char *api_name = "?";

/* Start the runtime at `level` (SHMEM_THREAD_SINGLE for plain shmem_init),
 * agree on a seed and print it once. Returns the seed. */
static inline uint64_t api_start(const char *name, int level) {
    api_name = name;
    return shmem_test_start_level(name, level);
}

/* The random stream of (world PE, purpose, case): the same on every PE. */
static inline test_rng_t api_rng(uint64_t seed, int pe, int purpose, int ncase) {
    return test_rng(seed ^ ((uint64_t)purpose << 40) ^ ((uint64_t)ncase << 16),
                    (uint64_t)pe + 1);
}

/* Fill with the bytes of (pe, purpose, ncase)'s stream. */
static inline void api_fill(void *buf, size_t n, uint64_t seed, int pe, int purpose, int ncase) {
    test_rng_t r = api_rng(seed, pe, purpose, ncase);
    test_fill(buf, n, &r);
}

/* Every PE got here; PE 0 prints the pass line with what was checked. */
static inline void api_pass(const char *what) {
    shmem_barrier_all();
    if (shmem_my_pe() == 0) printf("%s: PASS (%s)\n", api_name, what);
    fflush(stdout);
}

#endif
