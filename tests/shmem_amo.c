/*
 * shmem_amo — atomic memory operations.
 *
 *   1. Contention: every PE does M fetch_adds of 1 on a global counter of PE 0:
 *      the total is exactly N*M and the values fetched are N*M distinct numbers
 *      (each PE marks its values in a bitmap on PE 0 with fetch_or; a value
 *      marked twice is a lost update).
 *   2. For every standard AMO type, every PE adds random values into a word of
 *      every PE with add / fetch_add / inc / fetch_inc / ctx / _nbi forms mixed:
 *      each word ends at the exact wrapped sum, and the neighbouring bytes of a
 *      4-byte type stay untouched.
 *   3. Every type and operation in every flavour (plain, ctx_ on
 *      SHMEM_CTX_DEFAULT, C11 generic, generic with ctx, and the _nbi fetching
 *      forms), one writer per word: each fetched value is checked against a
 *      model, and the word's final value is checked on the PE that holds it.
 *      float and double: fetch, set, swap. Then the deprecated names.
 *   4. Mutual exclusion: a lock made of compare_swap, and shmem_set_lock /
 *      shmem_test_lock / shmem_clear_lock, each guarding a non-atomic
 *      get-increment-put on PE 0: the count is exact and no two PEs are ever
 *      inside together.
 */
#include <sched.h>

#include "shmem_test.h"

static const char *NAME = "shmem_amo";
static uint64_t seed;
static int me, npes, right, left;
static long ops_checked;

#define MASK_OF(T) (sizeof(T) == 8 ? ~0ull : (1ull << (8 * sizeof(T))) - 1)

static uint64_t bits_of(const void *v, size_t size) {
    uint64_t b = 0;
    memcpy(&b, v, size);
    return b;
}

/* Check a fetched value (its bits) against the model. */
#define EXPECT(T, got, want, what, fl)                                               \
    do {                                                                             \
        T got_ = (got);                                                              \
        uint64_t g_ = bits_of(&got_, sizeof(T));                                     \
        CHECK(g_ == ((want) & MASK_OF(T)), "%s %s (flavour %s) on PE %d returned 0x%" PRIx64 \
              ", want 0x%" PRIx64, #T, what, flavour[fl], right, g_,                 \
              (uint64_t)((want) & MASK_OF(T)));                                      \
        ops_checked++;                                                               \
    } while (0)

static const char *flavour[4] = {"plain", "ctx_", "generic", "generic ctx"};

/* One call in one of four flavours. */
#define DO4(fl, a, b, c, d)                                                          \
    do {                                                                             \
        switch (fl) {                                                                \
        case 0: a; break;                                                            \
        case 1: b; break;                                                            \
        case 2: c; break;                                                            \
        default: d; break;                                                           \
        }                                                                            \
    } while (0)

/* Values from bits, for T. */
#define VAL(T, bits) ((T)(bits))

/* A random value that differs from `not`. */
static uint64_t rand_other(test_rng_t *r, uint64_t mask, uint64_t not) {
    uint64_t v = test_next(r) & mask;
    return v == not ? (v ^ 1) & mask : v;
}

/* ---- 3. semantics, one writer per word ---- */

/* A value for set/swap that differs from the current one (raw bits of T). */
typedef uint64_t draw_fn(test_rng_t *r, uint64_t not);
/* An operation sequence on the word at w on pe in flavour fl; m is the model
 * (the word's bits) before, the result the model after. */
typedef uint64_t seq_fn(void *w, int pe, test_rng_t *r, int fl, uint64_t m);
typedef uint64_t ext_fn(void *w, int pe, test_rng_t *r, int fl, uint64_t m, draw_fn *draw);

/* fetch, set, swap and their _nbi forms: every AMO type. `m` holds the model
 * bits; values are raw bits of T. */
#define DEF_EXT_SEQ(T, N)                                                            \
    static uint64_t ext_##N(void *wv, int pe, test_rng_t *r, int fl, uint64_t m,     \
                            draw_fn *draw) {                                         \
        T *w = wv;                                                                   \
        const uint64_t M = MASK_OF(T);                                               \
        shmem_ctx_t c = SHMEM_CTX_DEFAULT;                                           \
        T v, got, fetched;                                                           \
        uint64_t b = draw(r, m);                                                     \
        memcpy(&v, &b, sizeof(T));                                                   \
        DO4(fl, shmem_##N##_atomic_set(w, v, pe), shmem_ctx_##N##_atomic_set(c, w, v, pe), \
            shmem_atomic_set(w, v, pe), shmem_atomic_set(c, w, v, pe));              \
        m = b;                                                                       \
        DO4(fl, got = shmem_##N##_atomic_fetch(w, pe),                               \
            got = shmem_ctx_##N##_atomic_fetch(c, w, pe), got = shmem_atomic_fetch(w, pe), \
            got = shmem_atomic_fetch(c, w, pe));                                     \
        EXPECT(T, got, m, "fetch after set", fl);                                    \
        b = draw(r, m);                                                              \
        memcpy(&v, &b, sizeof(T));                                                   \
        DO4(fl, got = shmem_##N##_atomic_swap(w, v, pe),                             \
            got = shmem_ctx_##N##_atomic_swap(c, w, v, pe),                          \
            got = shmem_atomic_swap(w, v, pe), got = shmem_atomic_swap(c, w, v, pe));  \
        EXPECT(T, got, m, "swap", fl);                                               \
        m = b;                                                                       \
        DO4(fl, shmem_##N##_atomic_fetch_nbi(&fetched, w, pe),                       \
            shmem_ctx_##N##_atomic_fetch_nbi(c, &fetched, w, pe),                    \
            shmem_atomic_fetch_nbi(&fetched, w, pe),                                 \
            shmem_atomic_fetch_nbi(c, &fetched, w, pe));                             \
        shmem_quiet();                                                               \
        EXPECT(T, fetched, m, "fetch_nbi", fl);                                      \
        b = draw(r, m);                                                              \
        memcpy(&v, &b, sizeof(T));                                                   \
        DO4(fl, shmem_##N##_atomic_swap_nbi(&fetched, w, v, pe),                     \
            shmem_ctx_##N##_atomic_swap_nbi(c, &fetched, w, v, pe),                  \
            shmem_atomic_swap_nbi(&fetched, w, v, pe),                               \
            shmem_atomic_swap_nbi(c, &fetched, w, v, pe));                           \
        shmem_ctx_quiet(c);                                                          \
        EXPECT(T, fetched, m, "swap_nbi", fl);                                       \
        (void)M;                                                                     \
        return b;                                                                    \
    }
SYMI_AMO_EXT_TYPES(DEF_EXT_SEQ)

/* compare_swap, fetch_inc, inc, fetch_add, add, and their _nbi forms. */
#define DEF_STD_SEQ(T, N)                                                            \
    static uint64_t std_##N(void *wv, int pe, test_rng_t *r, int fl, uint64_t m) {   \
        T *w = wv;                                                                   \
        const uint64_t M = MASK_OF(T);                                               \
        shmem_ctx_t c = SHMEM_CTX_DEFAULT;                                           \
        T got, fetched;                                                              \
        /* a compare that fails leaves the word */                                   \
        uint64_t wrong = (m ^ (1 + (test_next(r) & 0xff))) & M, nv = rand_other(r, M, m); \
        DO4(fl, got = shmem_##N##_atomic_compare_swap(w, VAL(T, wrong), VAL(T, nv), pe), \
            got = shmem_ctx_##N##_atomic_compare_swap(c, w, VAL(T, wrong), VAL(T, nv), pe), \
            got = shmem_atomic_compare_swap(w, VAL(T, wrong), VAL(T, nv), pe),       \
            got = shmem_atomic_compare_swap(c, w, VAL(T, wrong), VAL(T, nv), pe));   \
        EXPECT(T, got, m, "compare_swap (failing)", fl);                             \
        DO4(fl, got = shmem_##N##_atomic_compare_swap(w, VAL(T, m), VAL(T, nv), pe), \
            got = shmem_ctx_##N##_atomic_compare_swap(c, w, VAL(T, m), VAL(T, nv), pe), \
            got = shmem_atomic_compare_swap(w, VAL(T, m), VAL(T, nv), pe),           \
            got = shmem_atomic_compare_swap(c, w, VAL(T, m), VAL(T, nv), pe));       \
        EXPECT(T, got, m, "compare_swap (succeeding)", fl);                          \
        m = nv;                                                                      \
        DO4(fl, got = shmem_##N##_atomic_fetch_inc(w, pe),                           \
            got = shmem_ctx_##N##_atomic_fetch_inc(c, w, pe),                        \
            got = shmem_atomic_fetch_inc(w, pe), got = shmem_atomic_fetch_inc(c, w, pe)); \
        EXPECT(T, got, m, "fetch_inc", fl);                                          \
        m = (m + 1) & M;                                                             \
        DO4(fl, shmem_##N##_atomic_inc(w, pe), shmem_ctx_##N##_atomic_inc(c, w, pe), \
            shmem_atomic_inc(w, pe), shmem_atomic_inc(c, w, pe));                    \
        m = (m + 1) & M;                                                             \
        uint64_t a = test_next(r) & M;                                               \
        DO4(fl, got = shmem_##N##_atomic_fetch_add(w, VAL(T, a), pe),                \
            got = shmem_ctx_##N##_atomic_fetch_add(c, w, VAL(T, a), pe),             \
            got = shmem_atomic_fetch_add(w, VAL(T, a), pe),                          \
            got = shmem_atomic_fetch_add(c, w, VAL(T, a), pe));                      \
        EXPECT(T, got, m, "fetch_add", fl);                                          \
        m = (m + a) & M;                                                             \
        a = test_next(r) & M;                                                        \
        DO4(fl, shmem_##N##_atomic_add(w, VAL(T, a), pe),                            \
            shmem_ctx_##N##_atomic_add(c, w, VAL(T, a), pe),                         \
            shmem_atomic_add(w, VAL(T, a), pe), shmem_atomic_add(c, w, VAL(T, a), pe)); \
        m = (m + a) & M;                                                             \
        /* _nbi fetching forms: the value is there after a quiet */                  \
        nv = rand_other(r, M, m);                                                    \
        DO4(fl, shmem_##N##_atomic_compare_swap_nbi(&fetched, w, VAL(T, wrong), VAL(T, nv), pe), \
            shmem_ctx_##N##_atomic_compare_swap_nbi(c, &fetched, w, VAL(T, wrong), VAL(T, nv), pe), \
            shmem_atomic_compare_swap_nbi(&fetched, w, VAL(T, wrong), VAL(T, nv), pe), \
            shmem_atomic_compare_swap_nbi(c, &fetched, w, VAL(T, wrong), VAL(T, nv), pe)); \
        shmem_quiet();                                                               \
        if (wrong != m) EXPECT(T, fetched, m, "compare_swap_nbi (failing)", fl);     \
        else m = nv;                                                                 \
        DO4(fl, shmem_##N##_atomic_compare_swap_nbi(&fetched, w, VAL(T, m), VAL(T, nv), pe), \
            shmem_ctx_##N##_atomic_compare_swap_nbi(c, &fetched, w, VAL(T, m), VAL(T, nv), pe), \
            shmem_atomic_compare_swap_nbi(&fetched, w, VAL(T, m), VAL(T, nv), pe),   \
            shmem_atomic_compare_swap_nbi(c, &fetched, w, VAL(T, m), VAL(T, nv), pe)); \
        shmem_quiet();                                                               \
        EXPECT(T, fetched, m, "compare_swap_nbi (succeeding)", fl);                  \
        m = nv;                                                                      \
        DO4(fl, shmem_##N##_atomic_fetch_inc_nbi(&fetched, w, pe),                   \
            shmem_ctx_##N##_atomic_fetch_inc_nbi(c, &fetched, w, pe),                \
            shmem_atomic_fetch_inc_nbi(&fetched, w, pe),                             \
            shmem_atomic_fetch_inc_nbi(c, &fetched, w, pe));                         \
        shmem_ctx_quiet(c);                                                          \
        EXPECT(T, fetched, m, "fetch_inc_nbi", fl);                                  \
        m = (m + 1) & M;                                                             \
        a = test_next(r) & M;                                                        \
        DO4(fl, shmem_##N##_atomic_fetch_add_nbi(&fetched, w, VAL(T, a), pe),        \
            shmem_ctx_##N##_atomic_fetch_add_nbi(c, &fetched, w, VAL(T, a), pe),     \
            shmem_atomic_fetch_add_nbi(&fetched, w, VAL(T, a), pe),                  \
            shmem_atomic_fetch_add_nbi(c, &fetched, w, VAL(T, a), pe));              \
        shmem_quiet();                                                               \
        EXPECT(T, fetched, m, "fetch_add_nbi", fl);                                  \
        return (m + a) & M;                                                          \
    }
SYMI_AMO_STD_TYPES(DEF_STD_SEQ)

/* fetch_and, and, fetch_or, or, fetch_xor, xor, and the _nbi fetching forms. */
#define BITOP(T, N, OP, fl, w, a, pe, got)                                           \
    DO4(fl, got = shmem_##N##_atomic_fetch_##OP(w, VAL(T, a), pe),                    \
        got = shmem_ctx_##N##_atomic_fetch_##OP(c, w, VAL(T, a), pe),                 \
        got = shmem_atomic_fetch_##OP(w, VAL(T, a), pe),                              \
        got = shmem_atomic_fetch_##OP(c, w, VAL(T, a), pe))
#define BITOP_NF(T, N, OP, fl, w, a, pe)                                             \
    DO4(fl, shmem_##N##_atomic_##OP(w, VAL(T, a), pe),                                \
        shmem_ctx_##N##_atomic_##OP(c, w, VAL(T, a), pe), shmem_atomic_##OP(w, VAL(T, a), pe), \
        shmem_atomic_##OP(c, w, VAL(T, a), pe))
#define BITOP_NBI(T, N, OP, fl, f, w, a, pe)                                         \
    DO4(fl, shmem_##N##_atomic_fetch_##OP##_nbi(f, w, VAL(T, a), pe),                 \
        shmem_ctx_##N##_atomic_fetch_##OP##_nbi(c, f, w, VAL(T, a), pe),              \
        shmem_atomic_fetch_##OP##_nbi(f, w, VAL(T, a), pe),                           \
        shmem_atomic_fetch_##OP##_nbi(c, f, w, VAL(T, a), pe))

#define DEF_BIT_SEQ(T, N)                                                            \
    static uint64_t bit_##N(void *wv, int pe, test_rng_t *r, int fl, uint64_t m) {   \
        T *w = wv;                                                                   \
        const uint64_t M = MASK_OF(T);                                               \
        shmem_ctx_t c = SHMEM_CTX_DEFAULT;                                           \
        T got, fetched;                                                              \
        uint64_t a = test_next(r) & M;                                               \
        BITOP(T, N, and, fl, w, a, pe, got);                                         \
        EXPECT(T, got, m, "fetch_and", fl);                                          \
        m &= a;                                                                      \
        a = test_next(r) & M;                                                        \
        BITOP(T, N, or, fl, w, a, pe, got);                                          \
        EXPECT(T, got, m, "fetch_or", fl);                                           \
        m |= a;                                                                      \
        a = test_next(r) & M;                                                        \
        BITOP(T, N, xor, fl, w, a, pe, got);                                         \
        EXPECT(T, got, m, "fetch_xor", fl);                                          \
        m ^= a;                                                                      \
        a = test_next(r) & M;                                                        \
        BITOP_NF(T, N, and, fl, w, a, pe);                                           \
        m &= a;                                                                      \
        a = test_next(r) & M;                                                        \
        BITOP_NF(T, N, or, fl, w, a, pe);                                            \
        m |= a;                                                                      \
        a = test_next(r) & M;                                                        \
        BITOP_NF(T, N, xor, fl, w, a, pe);                                           \
        m ^= a;                                                                      \
        a = test_next(r) & M;                                                        \
        BITOP_NBI(T, N, and, fl, &fetched, w, a, pe);                                \
        shmem_quiet();                                                               \
        EXPECT(T, fetched, m, "fetch_and_nbi", fl);                                  \
        m &= a;                                                                      \
        a = test_next(r) & M;                                                        \
        BITOP_NBI(T, N, or, fl, &fetched, w, a, pe);                                 \
        shmem_quiet();                                                               \
        EXPECT(T, fetched, m, "fetch_or_nbi", fl);                                   \
        m |= a;                                                                      \
        a = test_next(r) & M;                                                        \
        BITOP_NBI(T, N, xor, fl, &fetched, w, a, pe);                                \
        shmem_quiet();                                                               \
        EXPECT(T, fetched, m, "fetch_xor_nbi", fl);                                  \
        return m ^ a;                                                                \
    }
SYMI_AMO_BIT_TYPES(DEF_BIT_SEQ)

/* Draws for set/swap: integers take any bits; floats take finite values. */
#define DEF_DRAW(T, N)                                                               \
    static uint64_t draw_##N(test_rng_t *r, uint64_t not) {                          \
        return rand_other(r, MASK_OF(T), not);                                       \
    }
SYMI_AMO_STD_TYPES(DEF_DRAW)
static uint64_t draw_float(test_rng_t *r, uint64_t not) {
    float f = (float)((test_uniform(r) - 0.5) * 1e6);
    uint64_t b = bits_of(&f, sizeof f);
    return b == not ? bits_of(&(float){f + 1.0f}, sizeof f) : b;
}
static uint64_t draw_double(test_rng_t *r, uint64_t not) {
    double d = (test_uniform(r) - 0.5) * 1e12;
    uint64_t b = bits_of(&d, sizeof d);
    return b == not ? bits_of(&(double){d + 1.0}, sizeof d) : b;
}

/* Which sequences each type has (every type: fetch/set/swap; the standard
 * types: compare_swap and the adds; the bitwise types: and/or/xor). One 8-byte
 * word per type. */
typedef struct {
    const char *name;
    size_t size;
    ext_fn *ext;
    draw_fn *draw;
    seq_fn *std, *bit;
} amo_type_t;

static amo_type_t amo_types[32];
static int n_amo_types;

static void register_types(void) {
    amo_types[n_amo_types++] = (amo_type_t){"float", sizeof(float), ext_float, draw_float, 0, 0};
    amo_types[n_amo_types++] = (amo_type_t){"double", sizeof(double), ext_double, draw_double, 0, 0};
#define REG(T, N) amo_types[n_amo_types++] = (amo_type_t){#N, sizeof(T), ext_##N, draw_##N, std_##N, 0};
    SYMI_AMO_STD_TYPES(REG)
#undef REG
#define REGBIT(T, N)                                                                 \
    for (int i = 0; i < n_amo_types; i++)                                            \
        if (!strcmp(amo_types[i].name, #N)) amo_types[i].bit = bit_##N;
    SYMI_AMO_BIT_TYPES(REGBIT)
#undef REGBIT
}

static void semantics(uint64_t *words, uint64_t *expect) {
    /* words: one per type, on every PE; I operate on my right neighbour's. */
    for (int i = 0; i < n_amo_types; i++) words[i] = 0;
    shmem_barrier_all();
    for (int i = 0; i < n_amo_types; i++) {
        amo_type_t *t = &amo_types[i];
        test_rng_t r = test_rng(seed, 7000 + (uint64_t)i * 64 + (uint64_t)me);
        uint64_t m = 0;
        for (int fl = 0; fl < 4; fl++) {
            m = t->ext(&words[i], right, &r, fl, m, t->draw);
            if (t->std) m = t->std(&words[i], right, &r, fl, m);
            if (t->bit) m = t->bit(&words[i], right, &r, fl, m);
        }
        shmem_uint64_p(&expect[i], m, right);
    }
    shmem_barrier_all();
    for (int i = 0; i < n_amo_types; i++) {
        uint64_t got = bits_of(&words[i], amo_types[i].size);
        uint64_t upper = amo_types[i].size == 4 ? words[i] >> 32 : 0;
        CHECK(got == expect[i], "%s word after PE %d's operations: 0x%" PRIx64 ", want 0x%" PRIx64,
              amo_types[i].name, left, got, expect[i]);
        CHECK(upper == 0, "a 4-byte %s atomic changed the next 4 bytes: 0x%" PRIx64,
              amo_types[i].name, upper);
    }
    shmem_barrier_all();
}

/* ---- deprecated names (1.3), the generic ones too ---- */

#define DEF_OLD(T, N)                                                                \
    static void old_##N(T *w, int pe) {                                              \
        shmem_##N##_set(w, (T)5, pe);                                                \
        CHECK(shmem_##N##_fetch(w, pe) == (T)5, "shmem_%s_fetch", #N);               \
        CHECK(shmem_##N##_swap(w, (T)9, pe) == (T)5, "shmem_%s_swap", #N);           \
        CHECK(shmem_##N##_cswap(w, (T)9, (T)11, pe) == (T)9, "shmem_%s_cswap", #N);  \
        CHECK(shmem_##N##_cswap(w, (T)1, (T)12, pe) == (T)11, "shmem_%s_cswap (failing)", #N); \
        CHECK(shmem_##N##_finc(w, pe) == (T)11, "shmem_%s_finc", #N);                \
        shmem_##N##_inc(w, pe);                                                      \
        CHECK(shmem_##N##_fadd(w, (T)-20, pe) == (T)13, "shmem_%s_fadd", #N);        \
        shmem_##N##_add(w, (T)100, pe);                                              \
        CHECK(shmem_fetch(w, pe) == (T)93, "generic shmem_fetch (%s)", #N);          \
        shmem_set(w, (T)1, pe);                                                      \
        CHECK(shmem_cswap(w, (T)1, (T)2, pe) == (T)1, "generic shmem_cswap (%s)", #N); \
        CHECK(shmem_finc(w, pe) == (T)2, "generic shmem_finc (%s)", #N);             \
        shmem_inc(w, pe);                                                            \
        CHECK(shmem_fadd(w, (T)3, pe) == (T)4, "generic shmem_fadd (%s)", #N);       \
        shmem_add(w, (T)-7, pe);                                                     \
        CHECK(shmem_##N##_fetch(w, pe) == (T)0, "after the generic deprecated calls (%s)", #N); \
        ops_checked += 16;                                                           \
    }
SYMI_AMO_OLD_STD_TYPES(DEF_OLD)

static void deprecated(void) {
    static int s_int;
    static long s_long;
    static long long s_ll;
    static float s_float;
    static double s_double;
    shmem_barrier_all(); /* I use my right neighbour's statics, my left uses mine */
    old_int(&s_int, right);
    old_long(&s_long, right);
    old_longlong(&s_ll, right);
    shmem_float_set(&s_float, 1.5f, right);
    CHECK(shmem_float_fetch(&s_float, right) == 1.5f, "shmem_float_fetch");
    CHECK(shmem_float_swap(&s_float, -2.25f, right) == 1.5f, "shmem_float_swap");
    shmem_double_set(&s_double, 3.5, right);
    CHECK(shmem_double_fetch(&s_double, right) == 3.5, "shmem_double_fetch");
    CHECK(shmem_double_swap(&s_double, 1e300, right) == 3.5, "shmem_double_swap");
    CHECK(shmem_fetch(&s_double, right) == 1e300, "generic shmem_fetch (double)");
    shmem_set(&s_float, 7.0f, right);
    CHECK(shmem_swap(&s_long, 77L, right) == 0, "shmem_swap (long)");
    CHECK(shmem_long_g(&s_long, right) == 77, "shmem_swap stored");
    shmem_barrier_all();
    CHECK(s_float == 7.0f && s_double == 1e300 && s_long == 77 && s_int == 0 && s_ll == 0,
          "statics after PE %d's deprecated calls: %g %g %ld %d %lld", left, s_float, s_double,
          s_long, s_int, s_ll);
    shmem_barrier_all();
}

/* ---- 2. random adds from everyone into everyone, every standard type ---- */

#define K_ADDS 300

#define DEF_CONTEND(T, N)                                                            \
    static void contend_##N(T *w, int ti) {                                          \
        shmem_ctx_t c = SHMEM_CTX_DEFAULT;                                           \
        T sink;                                                                      \
        test_rng_t r = test_rng(seed, 50000 + (uint64_t)ti * 4096 + (uint64_t)me);   \
        for (int k = 0; k < K_ADDS; k++)                                             \
            for (int d = 0; d < npes; d++) {                                         \
                int pe = (me + d) % npes;                                            \
                T v = VAL(T, test_next(&r) & MASK_OF(T));                            \
                switch ((k + d) % 7) {                                               \
                case 0: shmem_##N##_atomic_add(w, v, pe); break;                     \
                case 1: (void)shmem_##N##_atomic_fetch_add(w, v, pe); break;         \
                case 2: shmem_##N##_atomic_inc(w, pe); break;                        \
                case 3: (void)shmem_ctx_##N##_atomic_fetch_inc(c, w, pe); break;     \
                case 4: shmem_atomic_add(c, w, v, pe); break;                        \
                case 5: shmem_##N##_atomic_fetch_add_nbi(&sink, w, v, pe); break;    \
                default: shmem_atomic_fetch_inc_nbi(&sink, w, pe); break;            \
                }                                                                    \
            }                                                                        \
        shmem_quiet();                                                               \
    }                                                                                \
    static uint64_t contend_sum_##N(int ti) {                                        \
        uint64_t sum = 0;                                                            \
        for (int s = 0; s < npes; s++) {                                             \
            test_rng_t r = test_rng(seed, 50000 + (uint64_t)ti * 4096 + (uint64_t)s); \
            for (int k = 0; k < K_ADDS; k++)                                         \
                for (int d = 0; d < npes; d++) {                                     \
                    uint64_t v = test_next(&r) & MASK_OF(T);                         \
                    if ((s + d) % npes != me) continue;                              \
                    int kind = (k + d) % 7;                                          \
                    sum += (kind == 2 || kind == 3 || kind == 6) ? 1 : v;            \
                }                                                                    \
        }                                                                            \
        return sum & MASK_OF(T);                                                     \
    }
SYMI_AMO_STD_TYPES(DEF_CONTEND)

static void contention_all_types(uint64_t *words) {
    int ti = 0;
    for (int i = 0; i < 32; i++) words[i] = 0;
    shmem_barrier_all();
#define RUN(T, N) contend_##N((T *)&words[ti], ti), ti++;
    SYMI_AMO_STD_TYPES(RUN)
#undef RUN
    shmem_barrier_all();
    ti = 0;
#define VERIFY(T, N)                                                                 \
    {                                                                                \
        uint64_t want = contend_sum_##N(ti), got = bits_of(&words[ti], sizeof(T));   \
        CHECK(got == want, "%s: %d PEs x %d mixed adds into PE %d: 0x%" PRIx64 ", want 0x%" PRIx64, \
              #T, npes, K_ADDS, me, got, want);                                      \
        CHECK(sizeof(T) == 8 || (words[ti] >> 32) == 0, "%s adds spilled into the next bytes", #T); \
        ops_checked += (long)npes * K_ADDS;                                          \
        ti++;                                                                        \
    }
    SYMI_AMO_STD_TYPES(VERIFY)
#undef VERIFY
    shmem_barrier_all();
}

/* ---- 1. N PEs x M fetch_adds of 1 on one global ---- */

#define M_ADDS 2000
static long counter;            /* a global, on PE 0 */
static unsigned long seen[(4096 * M_ADDS) / 64 + 1]; /* bitmap of fetched values, on PE 0 */

static void counter_contention(void) {
    shmem_barrier_all();
    for (int i = 0; i < M_ADDS; i++) {
        long old = shmem_long_atomic_fetch_add(&counter, 1, 0);
        CHECK(old >= 0 && old < (long)npes * M_ADDS, "fetch_add returned %ld, outside [0, %d)",
              old, npes * M_ADDS);
        unsigned long bit = 1ul << (old % 64);
        unsigned long prev = shmem_ulong_atomic_fetch_or(&seen[old / 64], bit, 0);
        CHECK(!(prev & bit), "the value %ld was fetched twice: an update was lost", old);
    }
    shmem_barrier_all();
    if (me == 0)
        CHECK(counter == (long)npes * M_ADDS, "%d PEs x %d fetch_adds gave %ld, want %ld", npes,
              M_ADDS, counter, (long)npes * M_ADDS);
    ops_checked += M_ADDS;
}

/* ---- 4. mutual exclusion ---- */

#define M_LOCK 200
static long cs_lock;   /* compare_swap lock word, on PE 0: 0 free, else holder + 1 */
static long cs_inside; /* PEs inside the critical section, on PE 0 */
static long cs_count;  /* incremented non-atomically under the lock, on PE 0 */
static long std_lock;  /* for shmem_set_lock */

static void critical_section(const char *lock) {
    long in = shmem_long_atomic_fetch_inc(&cs_inside, 0);
    CHECK(in == 0, "%s: %ld other PE(s) inside the critical section with me", lock, in);
    long v = shmem_long_g(&cs_count, 0);
    if (v % 7 == 0) sched_yield(); /* widen the window for a broken lock */
    shmem_long_p(&cs_count, v + 1, 0);
    shmem_long_atomic_add(&cs_inside, -1, 0);
}

static void locks(void) {
    shmem_barrier_all();
    for (int i = 0; i < M_LOCK; i++) {
        long prev;
        while ((prev = shmem_long_atomic_compare_swap(&cs_lock, 0, me + 1, 0)) != 0) {
            CHECK(prev >= 1 && prev <= npes && prev != me + 1,
                  "compare_swap lock holds %ld (I am PE %d)", prev, me);
            sched_yield();
        }
        critical_section("compare_swap lock");
        shmem_quiet(); /* the count is written before the lock is seen free */
        CHECK(shmem_long_atomic_swap(&cs_lock, 0, 0) == me + 1, "the lock changed hands while "
              "held by PE %d", me);
    }
    shmem_barrier_all();
    if (me == 0)
        CHECK(cs_count == (long)npes * M_LOCK, "compare_swap lock: count %ld, want %ld", cs_count,
              (long)npes * M_LOCK);
    shmem_barrier_all();
    for (int i = 0; i < M_LOCK; i++) {
        if (i % 2) {
            shmem_set_lock(&std_lock);
        } else {
            while (shmem_test_lock(&std_lock)) sched_yield();
        }
        critical_section("shmem_set_lock/shmem_test_lock");
        shmem_clear_lock(&std_lock);
    }
    shmem_barrier_all();
    if (me == 0)
        CHECK(cs_count == 2L * npes * M_LOCK, "shmem_set_lock: count %ld, want %ld",
              cs_count - (long)npes * M_LOCK, (long)npes * M_LOCK);
    ops_checked += 2 * M_LOCK;
}

int main(void) {
    seed = shmem_test_start(NAME);
    me = shmem_my_pe();
    npes = shmem_n_pes();
    right = shmem_test_right();
    left = shmem_test_left();
    CHECK(npes <= 4096, "the bitmap holds 4096 PEs' values");
    register_types();

    uint64_t *words = shmem_calloc(32, sizeof(uint64_t));
    uint64_t *expect = shmem_calloc(32, sizeof(uint64_t));
    CHECK(words && expect, "shmem_calloc");

    counter_contention();
    contention_all_types(words);
    semantics(words, expect);
    deprecated();
    locks();

    shmem_free(words);
    shmem_free(expect);
    char what[128];
    snprintf(what, sizeof what, "%d AMO types, %ld operations checked on PE 0", n_amo_types,
             ops_checked);
    shmem_test_pass(NAME, what);
    shmem_finalize();
    return 0;
}
