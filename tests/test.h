/*
 * test.h — helpers for symtrain's tests. A test is a program that fails loudly:
 * the first failed check prints where and why and exits 1 (symrun then ends the
 * other PEs and fails too). Inputs are random, from a seed printed at the start
 * (set SYMTRAIN_TEST_SEED to replay one).
 */
#ifndef SYM_TEST_H
#define SYM_TEST_H

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int test_pe = -1;

#define CHECK(cond, ...)                                                             \
    do {                                                                             \
        if (!(cond)) {                                                               \
            fprintf(stderr, "FAIL %s:%d (PE %d): %s: ", __FILE__, __LINE__, test_pe, #cond); \
            fprintf(stderr, __VA_ARGS__);                                            \
            fprintf(stderr, "\n");                                                   \
            fflush(stderr);                                                          \
            exit(1);                                                                 \
        }                                                                            \
    } while (0)

#define CHECK_EQ_INT(a, b)                                                           \
    CHECK((long long)(a) == (long long)(b), "%lld != %lld", (long long)(a), (long long)(b))

/* xorshift64*: small, fast, good enough for test data. */
typedef struct {
    uint64_t s;
} test_rng_t;

static inline uint64_t test_next(test_rng_t *r) {
    uint64_t x = r->s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    r->s = x;
    return x * 0x2545F4914F6CDD1Dull;
}

static inline double test_uniform(test_rng_t *r) { return (double)(test_next(r) >> 11) * 0x1.0p-53; }

/* The run's seed: SYMTRAIN_TEST_SEED, else the clock. Every PE must use the
 * same seed where the test needs agreement, so PE 0's is what tests share. */
static inline uint64_t test_seed(void) {
    const char *s = getenv("SYMTRAIN_TEST_SEED");
    if (s && *s) return strtoull(s, NULL, 0);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000003ull ^ (uint64_t)ts.tv_nsec;
}

static inline test_rng_t test_rng(uint64_t seed, uint64_t stream) {
    test_rng_t r = {seed * 0x9E3779B97F4A7C15ull + stream * 0xD1B54A32D192ED03ull + 1};
    for (int i = 0; i < 4; i++) test_next(&r);
    return r;
}

#ifdef SHMEM_TEAM_WORLD
/* The start of a test on PEs, after shmem_init: sets test_pe, gives every PE
 * PE 0's seed (its globals are symmetric), and PE 0 prints it as
 * "NAME: seed S, N PEs". */
static uint64_t test_seed_src, test_seed_dst;
static inline uint64_t test_pe_start(const char *name) {
    test_pe = shmem_my_pe();
    test_seed_src = test_seed();
    shmem_broadcastmem(SHMEM_TEAM_WORLD, &test_seed_dst, &test_seed_src, sizeof test_seed_src, 0);
    uint64_t seed = test_pe == 0 ? test_seed_src : test_seed_dst;
    if (test_pe == 0)
        printf("%s: seed %llu, %d PEs\n", name, (unsigned long long)seed, shmem_n_pes());
    return seed;
}
#endif

/* A fresh directory $TMPDIR/NAME.XXXXXX (or under /tmp) into dir[len]. */
static inline void test_mkdtemp(char *dir, size_t len, const char *name) {
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, len, "%s/%s.XXXXXX", tmp && *tmp ? tmp : "/tmp", name);
    CHECK(mkdtemp(dir) != NULL, "mkdtemp %s", dir);
}

static inline void test_fill(void *buf, size_t n, test_rng_t *r) {
    unsigned char *p = (unsigned char *)buf; /* (C++ too: gpu_user_kernel.cu) */
    for (size_t i = 0; i < n; i++) p[i] = (unsigned char)test_next(r);
}

#endif
