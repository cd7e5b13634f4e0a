/*
 * symtrain/rng.h — counter-based random numbers.
 *
 * Every random draw in training is a pure function of (key, counter): the key
 * comes from the run's seed and what the numbers are for (weight init, the
 * data permutation of an epoch, the dropout masks of a step), the counter says
 * which draw. So the state of a stream is two integers, a checkpoint holds it
 * exactly, and a dropout mask depends on the global position of a sample, not
 * on which PE happens to hold it: N-PE and 1-PE runs draw the same masks.
 */
#ifndef SYMTRAIN_RNG_H
#define SYMTRAIN_RNG_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A stream: draw i is sym_rng_hash(key, i). */
typedef struct {
    uint64_t key;
    uint64_t counter; /* draws taken */
} sym_rng_t;

/* CUDA code draws the same (the GPU's dropout masks): the mix and the hash
 * are device functions too there. */
#ifdef __CUDACC__
#define SYM_RNG_HD __host__ __device__
#else
#define SYM_RNG_HD
#endif

/* A strong 64-bit mix (the splitmix64 / Stafford "mix13" finaliser). */
static inline SYM_RNG_HD uint64_t sym_rng_mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* The value of draw `counter` of the stream keyed `key`. */
static inline SYM_RNG_HD uint64_t sym_rng_hash(uint64_t key, uint64_t counter) {
    return sym_rng_mix(key ^ sym_rng_mix(counter + 0x9E3779B97F4A7C15ull));
}

/* A key for one purpose of one run: mix(seed, purpose, index). */
static inline uint64_t sym_rng_key(uint64_t seed, uint64_t purpose, uint64_t index) {
    return sym_rng_mix(sym_rng_mix(seed ^ 0x5DEECE66Dull) ^ sym_rng_mix(purpose) ^
                       sym_rng_mix(index * 0xD1B54A32D192ED03ull + 1));
}

static inline sym_rng_t sym_rng_stream(uint64_t key) {
    sym_rng_t r = {key, 0};
    return r;
}

static inline uint64_t sym_rng_next(sym_rng_t *r) { return sym_rng_hash(r->key, r->counter++); }

/* Uniform in [0, 1) with 24 random bits (exact in fp32). */
static inline float sym_rng_uniform(sym_rng_t *r) {
    return (float)(sym_rng_next(r) >> 40) * 0x1.0p-24f;
}

/* Uniform integer in [0, n), n > 0, without modulo bias (Lemire). */
static inline uint64_t sym_rng_below(sym_rng_t *r, uint64_t n) {
    for (;;) {
        __uint128_t m = (__uint128_t)sym_rng_next(r) * n;
        uint64_t lo = (uint64_t)m;
        if (lo >= n || lo >= (0 - n) % n) return (uint64_t)(m >> 64);
    }
}

/* Purposes, for sym_rng_key. */
enum {
    SYM_RNG_INIT = 1,    /* weight init; index = layer */
    SYM_RNG_DATA = 2,    /* the epoch's permutation; index = epoch */
    SYM_RNG_DROPOUT = 3, /* dropout masks; index = layer; counter from (step, row, unit) */
    SYM_RNG_SYNTH = 4,   /* the generated data set */
    SYM_RNG_CORPUS = 5,  /* the generated text corpus (sym_corpus_generate) */
    SYM_RNG_SAMPLE = 6   /* token sampling; counter = position */
};

#ifdef __cplusplus
}
#endif

#endif
