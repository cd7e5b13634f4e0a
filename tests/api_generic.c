/*
 * api_generic — C11 generic selection: every generic name of shmem.h called
 * with every type the standard lists for its family, spelled as the standard
 * spells them (the base C types and the fixed-width typedefs int8_t ..
 * uint64_t, size_t, ptrdiff_t), with and without a context. It is built with
 * -Werror: a type that selects nothing, or a function of the wrong type (a
 * pointer mismatch), fails the build. Then each call runs and its result is
 * checked, so a selection of the wrong width would fail the run.
 *
 * The type lists below are the standard's tables, written out here on purpose
 * (not taken from shmem.h), so the header is checked against them.
 */
#include <complex.h>

#include "api_test.h"

/* OpenSHMEM 1.5 Table 5 (RMA, collectives). */
#define RMA_TYPES(X)                                                                 \
    X(float, float) X(double, double) X(long double, longdouble) X(char, char)       \
    X(signed char, schar) X(short, short) X(int, int) X(long, long)                  \
    X(long long, longlong) X(unsigned char, uchar) X(unsigned short, ushort)         \
    X(unsigned int, uint) X(unsigned long, ulong) X(unsigned long long, ulonglong)   \
    X(int8_t, int8) X(int16_t, int16) X(int32_t, int32) X(int64_t, int64)            \
    X(uint8_t, uint8) X(uint16_t, uint16) X(uint32_t, uint32) X(uint64_t, uint64)    \
    X(size_t, size) X(ptrdiff_t, ptrdiff)
/* Table 6: standard AMO types; extended adds float and double; bitwise. */
#define AMO_STD_TYPES(X)                                                             \
    X(int, int) X(long, long) X(long long, longlong) X(unsigned int, uint)           \
    X(unsigned long, ulong) X(unsigned long long, ulonglong) X(int32_t, int32)       \
    X(int64_t, int64) X(uint32_t, uint32) X(uint64_t, uint64) X(size_t, size)        \
    X(ptrdiff_t, ptrdiff)
#define AMO_EXT_TYPES(X) X(float, float) X(double, double) AMO_STD_TYPES(X)
#define AMO_BIT_TYPES(X)                                                             \
    X(unsigned int, uint) X(unsigned long, ulong) X(unsigned long long, ulonglong)   \
    X(int32_t, int32) X(int64_t, int64) X(uint32_t, uint32) X(uint64_t, uint64)
/* Point-to-point synchronisation types. */
#define P2P_TYPES(X)                                                                 \
    X(short, short) X(int, int) X(long, long) X(long long, longlong)                 \
    X(unsigned short, ushort) X(unsigned int, uint) X(unsigned long, ulong)          \
    X(unsigned long long, ulonglong) X(int32_t, int32) X(int64_t, int64)             \
    X(uint32_t, uint32) X(uint64_t, uint64) X(size_t, size) X(ptrdiff_t, ptrdiff)
/* Reduction types: bitwise, min/max, sum/prod. */
#define RED_BIT_TYPES(X)                                                             \
    X(unsigned char, uchar) X(unsigned short, ushort) X(unsigned int, uint)          \
    X(unsigned long, ulong) X(unsigned long long, ulonglong) X(int8_t, int8)         \
    X(int16_t, int16) X(int32_t, int32) X(int64_t, int64) X(uint8_t, uint8)          \
    X(uint16_t, uint16) X(uint32_t, uint32) X(uint64_t, uint64) X(size_t, size)
#define RED_MINMAX_TYPES(X)                                                          \
    X(char, char) X(signed char, schar) X(short, short) X(int, int) X(long, long)    \
    X(long long, longlong) X(ptrdiff_t, ptrdiff) X(unsigned char, uchar)             \
    X(unsigned short, ushort) X(unsigned int, uint) X(unsigned long, ulong)          \
    X(unsigned long long, ulonglong) X(int8_t, int8) X(int16_t, int16)               \
    X(int32_t, int32) X(int64_t, int64) X(uint8_t, uint8) X(uint16_t, uint16)        \
    X(uint32_t, uint32) X(uint64_t, uint64) X(size_t, size) X(float, float)          \
    X(double, double) X(long double, longdouble)
#define RED_ARITH_TYPES(X)                                                           \
    RED_MINMAX_TYPES(X) X(float _Complex, complexf) X(double _Complex, complexd)

static int me, n, right, left;
static _Alignas(64) char area[4][512]; /* symmetric scratch, any type */
static uint64_t sig;
static int checks;

#define A(T, k) ((T *)area[k])
#define CHECKV(cond, ...)                                                            \
    do {                                                                             \
        CHECK(cond, __VA_ARGS__);                                                    \
        checks++;                                                                    \
    } while (0)

/* A team collective, its check, and a sync: the next collective may write
 * into dest only after every PE has checked it. */
#define RED(call, cond, what)                                                        \
    do {                                                                             \
        CHECKV((call) == 0 && (cond), what);                                         \
        shmem_sync(SHMEM_TEAM_WORLD);                                                \
    } while (0)

/* A small value of type T that every type holds exactly. */
#define V(T, x) ((T)(x))

/* ---- RMA ---- */

#define TEST_RMA(T, N)                                                               \
    static void rma_##N(void) {                                                      \
        T *d = A(T, 0), s[8];                                                        \
        for (int i = 0; i < 8; i++) s[i] = V(T, me * 10 + i + 1);                    \
        for (int i = 0; i < 64; i++) d[i] = V(T, 0);                                 \
        shmem_barrier_all();                                                         \
        shmem_put(d, s, 1, right);                                                   \
        shmem_put(SHMEM_CTX_DEFAULT, d + 1, s + 1, 1, right);                        \
        shmem_put_nbi(d + 2, s + 2, 1, right);                                       \
        shmem_put_nbi(SHMEM_CTX_DEFAULT, d + 3, s + 3, 1, right);                    \
        shmem_p(d + 4, s[4], right);                                                 \
        shmem_p(SHMEM_CTX_DEFAULT, d + 5, s[5], right);                              \
        shmem_iput(d + 8, s + 6, 2, 1, 1, right);                                    \
        shmem_iput(SHMEM_CTX_DEFAULT, d + 10, s + 7, 2, 1, 1, right);                \
        shmem_put_signal(d + 12, s, 2, &sig, 1, SHMEM_SIGNAL_ADD, right);            \
        shmem_put_signal(SHMEM_CTX_DEFAULT, d + 14, s + 2, 2, &sig, 1, SHMEM_SIGNAL_ADD, right); \
        shmem_put_signal_nbi(d + 16, s + 4, 2, &sig, 1, SHMEM_SIGNAL_ADD, right);    \
        shmem_put_signal_nbi(SHMEM_CTX_DEFAULT, d + 18, s + 6, 2, &sig, 1, SHMEM_SIGNAL_ADD, \
                             right);                                                 \
        shmem_quiet();                                                               \
        shmem_barrier_all();                                                         \
        T want[20] = {0};                                                            \
        for (int i = 0; i < 6; i++) want[i] = V(T, left * 10 + i + 1);               \
        want[8] = V(T, left * 10 + 7);                                               \
        want[10] = V(T, left * 10 + 8);                                              \
        for (int i = 0; i < 8; i++) want[12 + i] = V(T, left * 10 + i + 1);          \
        for (int i = 0; i < 20; i++)                                                 \
            CHECKV(d[i] == want[i], "generic put family on " #T ": element %d wrong", i); \
        T g[8];                                                                      \
        shmem_get(g, d, 1, right);                                                   \
        shmem_get(SHMEM_CTX_DEFAULT, g + 1, d + 1, 1, right);                        \
        shmem_get_nbi(g + 2, d + 2, 1, right);                                       \
        shmem_get_nbi(SHMEM_CTX_DEFAULT, g + 3, d + 3, 1, right);                    \
        shmem_quiet();                                                               \
        g[4] = shmem_g(d + 4, right);                                                \
        g[5] = shmem_g(SHMEM_CTX_DEFAULT, d + 5, right);                             \
        shmem_iget(g + 6, d + 8, 1, 2, 1, right);                                    \
        shmem_iget(SHMEM_CTX_DEFAULT, g + 7, d + 10, 1, 2, 1, right);                \
        for (int i = 0; i < 8; i++)                                                  \
            CHECKV(g[i] == V(T, me * 10 + i + 1), "generic get family on " #T ": element %d", i); \
        shmem_barrier_all();                                                         \
    }
RMA_TYPES(TEST_RMA)

/* ---- atomics: every PE works on PE 0's word ---- */

#define TEST_AMO_EXT(T, N)                                                           \
    static void amo_ext_##N(void) {                                                  \
        T *w = A(T, 1);                                                              \
        if (me == 0) w[0] = V(T, 0);                                                 \
        shmem_barrier_all();                                                         \
        if (me == n - 1) {                                                           \
            shmem_atomic_set(w, V(T, 5), 0);                                         \
            CHECKV(shmem_atomic_fetch(w, 0) == V(T, 5), "generic fetch " #T);        \
            CHECKV(shmem_atomic_swap(w, V(T, 6), 0) == V(T, 5), "generic swap " #T); \
            shmem_atomic_set(SHMEM_CTX_DEFAULT, w, V(T, 7), 0);                      \
            CHECKV(shmem_atomic_fetch(SHMEM_CTX_DEFAULT, w, 0) == V(T, 7), "ctx fetch " #T); \
            CHECKV(shmem_atomic_swap(SHMEM_CTX_DEFAULT, w, V(T, 8), 0) == V(T, 7), "ctx swap " #T); \
            T f = V(T, 0);                                                           \
            shmem_atomic_fetch_nbi(&f, w, 0);                                        \
            shmem_quiet();                                                           \
            CHECKV(f == V(T, 8), "fetch_nbi " #T);                                   \
            shmem_atomic_swap_nbi(&f, w, V(T, 9), 0);                                \
            shmem_quiet();                                                           \
            CHECKV(f == V(T, 8), "swap_nbi " #T);                                    \
            shmem_atomic_fetch_nbi(SHMEM_CTX_DEFAULT, &f, w, 0);                     \
            shmem_atomic_swap_nbi(SHMEM_CTX_DEFAULT, &f, w, V(T, 10), 0);            \
            shmem_quiet();                                                           \
            CHECKV(f == V(T, 9), "ctx swap_nbi " #T);                                \
        }                                                                            \
        shmem_barrier_all();                                                         \
        if (me == 0) CHECKV(w[0] == V(T, 10), "after the extended atomics on " #T);  \
        shmem_barrier_all();                                                         \
    }
AMO_EXT_TYPES(TEST_AMO_EXT)

/* each PE adds: inc 1, fetch_inc 1, add 2, fetch_add 3 (and the ctx and _nbi
 * forms the same): 14 per PE in all; then compare_swap */
#define TEST_AMO_STD(T, N)                                                           \
    static void amo_std_##N(void) {                                                  \
        T *w = A(T, 1), f = V(T, 0);                                                 \
        if (me == 0) w[0] = V(T, 0);                                                 \
        shmem_barrier_all();                                                         \
        shmem_atomic_inc(w, 0);                                                      \
        shmem_atomic_inc(SHMEM_CTX_DEFAULT, w, 0);                                   \
        (void)shmem_atomic_fetch_inc(w, 0);                                          \
        (void)shmem_atomic_fetch_inc(SHMEM_CTX_DEFAULT, w, 0);                       \
        shmem_atomic_fetch_inc_nbi(&f, w, 0);                                        \
        shmem_atomic_fetch_inc_nbi(SHMEM_CTX_DEFAULT, &f, w, 0);                     \
        shmem_atomic_add(w, V(T, 2), 0);                                             \
        shmem_atomic_add(SHMEM_CTX_DEFAULT, w, V(T, 2), 0);                          \
        (void)shmem_atomic_fetch_add(w, V(T, 1), 0);                                 \
        (void)shmem_atomic_fetch_add(SHMEM_CTX_DEFAULT, w, V(T, 1), 0);              \
        shmem_atomic_fetch_add_nbi(&f, w, V(T, 1), 0);                               \
        shmem_atomic_fetch_add_nbi(SHMEM_CTX_DEFAULT, &f, w, V(T, 1), 0);            \
        shmem_quiet();                                                               \
        shmem_barrier_all();                                                         \
        CHECKV(shmem_atomic_fetch(w, 0) == V(T, 14 * n), "increments on " #T);       \
        shmem_barrier_all();                                                         \
        T old = shmem_atomic_compare_swap(w, V(T, 14 * n), V(T, me + 1), 0);         \
        shmem_barrier_all();                                                         \
        T now = shmem_atomic_fetch(w, 0);                                            \
        CHECKV((old == V(T, 14 * n)) == (now == V(T, me + 1)), "compare_swap " #T);  \
        shmem_barrier_all();                                                         \
        if (me == 0) {                                                               \
            T prev = shmem_atomic_compare_swap(SHMEM_CTX_DEFAULT, w, now, V(T, 99), 0); \
            CHECKV(prev == now, "ctx compare_swap " #T);                             \
            shmem_atomic_compare_swap_nbi(&f, w, V(T, 99), V(T, 98), 0);             \
            shmem_atomic_compare_swap_nbi(SHMEM_CTX_DEFAULT, &f, w, V(T, 98), V(T, 97), 0); \
            shmem_quiet();                                                           \
            CHECKV(f == V(T, 98) && w[0] == V(T, 97), "compare_swap_nbi " #T);       \
        }                                                                            \
        shmem_barrier_all();                                                         \
    }
AMO_STD_TYPES(TEST_AMO_STD)

/* bit k of PE 0's word belongs to PE k (k < 32): or sets it, xor flips it
 * twice, and clears it, fetch forms see a consistent word */
#define TEST_AMO_BIT(T, N)                                                           \
    static void amo_bit_##N(void) {                                                  \
        T *w = A(T, 1), f = V(T, 0), mine = (T)((T)1 << me);                         \
        if (me == 0) w[0] = V(T, 0);                                                 \
        shmem_barrier_all();                                                         \
        shmem_atomic_or(w, mine, 0);                                                 \
        shmem_atomic_xor(SHMEM_CTX_DEFAULT, w, mine, 0);                             \
        (void)shmem_atomic_fetch_xor(w, mine, 0);                                    \
        shmem_atomic_fetch_or_nbi(&f, w, mine, 0);                                   \
        shmem_quiet();                                                               \
        CHECKV((f & mine) == mine, "fetch_or_nbi " #T);                              \
        shmem_barrier_all();                                                         \
        CHECKV(shmem_atomic_fetch(w, 0) == (T)(((T)1 << n) - 1), "or/xor " #T);      \
        shmem_barrier_all();                                                         \
        shmem_atomic_and(w, (T)~mine, 0);                                            \
        shmem_barrier_all();                                                         \
        CHECKV(shmem_atomic_fetch(w, 0) == V(T, 0), "and " #T);                      \
        shmem_barrier_all();                                                         \
        (void)shmem_atomic_fetch_or(SHMEM_CTX_DEFAULT, w, mine, 0);                  \
        shmem_atomic_fetch_xor_nbi(SHMEM_CTX_DEFAULT, &f, w, mine, 0);               \
        shmem_atomic_fetch_xor_nbi(&f, w, mine, 0);                                  \
        (void)shmem_atomic_fetch_and(w, (T)~V(T, 0), 0);                             \
        shmem_atomic_fetch_and_nbi(&f, w, (T)~V(T, 0), 0);                           \
        shmem_atomic_fetch_and_nbi(SHMEM_CTX_DEFAULT, &f, w, (T)~V(T, 0), 0);         \
        shmem_atomic_fetch_or_nbi(SHMEM_CTX_DEFAULT, &f, w, V(T, 0), 0);             \
        shmem_atomic_or(SHMEM_CTX_DEFAULT, w, V(T, 0), 0);                           \
        shmem_atomic_and(SHMEM_CTX_DEFAULT, w, (T)~V(T, 0), 0);                      \
        (void)shmem_atomic_fetch_and(SHMEM_CTX_DEFAULT, w, (T)~V(T, 0), 0);          \
        (void)shmem_atomic_fetch_xor(SHMEM_CTX_DEFAULT, w, V(T, 0), 0);              \
        shmem_atomic_xor(w, V(T, 0), 0);                                             \
        shmem_quiet();                                                               \
        shmem_barrier_all();                                                         \
        CHECKV(shmem_atomic_fetch(w, 0) == (T)(((T)1 << n) - 1), "bitwise " #T);     \
        shmem_barrier_all();                                                         \
    }
AMO_BIT_TYPES(TEST_AMO_BIT)

/* the 1.3 generic names */
#define TEST_AMO_OLD(T, N)                                                           \
    static void amo_old_##N(void) {                                                  \
        T *w = A(T, 2);                                                              \
        if (me == 0) w[0] = V(T, 0);                                                 \
        shmem_barrier_all();                                                         \
        shmem_inc(w, 0);                                                             \
        (void)shmem_finc(w, 0);                                                      \
        shmem_add(w, V(T, 2), 0);                                                    \
        (void)shmem_fadd(w, V(T, 3), 0);                                             \
        shmem_barrier_all();                                                         \
        CHECKV(shmem_fetch(w, 0) == V(T, 7 * n), "old generic atomics " #T);         \
        shmem_barrier_all();                                                         \
        if (me == 0) {                                                               \
            CHECKV(shmem_cswap(w, V(T, 7 * n), V(T, 1), 0) == V(T, 7 * n), "shmem_cswap " #T); \
            shmem_set(w, V(T, 4), 0);                                                \
            CHECKV(w[0] == V(T, 4), "shmem_set " #T);                                \
            w[1] = V(T, -3); /* a swap of the wrong width would change it */         \
            CHECKV(shmem_swap(w, V(T, 5), 0) == V(T, 4) && w[0] == V(T, 5) && w[1] == V(T, -3), \
                   "shmem_swap " #T);                                                \
        }                                                                            \
        shmem_barrier_all();                                                         \
    }
#define OLD_STD(X) X(int, int) X(long, long) X(long long, longlong)
OLD_STD(TEST_AMO_OLD)
static void amo_old_fp(void) {
    float *wf = A(float, 2);
    double *wd = A(double, 3);
    if (me == 0) {
        shmem_set(wf, 1.5f, right);
        shmem_set(wd, 2.5, right);
    }
    shmem_barrier_all();
    if (me == 1 % n) {
        CHECKV(shmem_fetch(wf, me) == 1.5f && shmem_fetch(wd, me) == 2.5,
               "shmem_set/fetch on float, double");
        wf[1] = -1.0f;
        CHECKV(shmem_swap(wf, 3.5f, me) == 1.5f && wf[0] == 3.5f && wf[1] == -1.0f,
               "shmem_swap on float");
        CHECKV(shmem_swap(wd, 4.5, me) == 2.5 && wd[0] == 4.5, "shmem_swap on double");
    }
    shmem_barrier_all();
}

/* ---- point-to-point synchronisation ---- */

#define TEST_P2P(T, N)                                                               \
    static void p2p_##N(void) {                                                      \
        T *f = A(T, 2);                                                              \
        for (int i = 0; i < 4; i++) f[i] = V(T, 0);                                  \
        shmem_barrier_all();                                                         \
        T one = V(T, 1), two = V(T, 2);                                              \
        shmem_p(f, one, right);                                                      \
        shmem_wait_until(f, SHMEM_CMP_EQ, one);                                      \
        CHECKV(shmem_test(f, SHMEM_CMP_GE, one) == 1, "test " #T);                   \
        CHECKV(shmem_test(f, SHMEM_CMP_GT, one) == 0, "test GT " #T);                \
        shmem_p(f + 1, two, right);                                                  \
        shmem_p(f + 2, two, right);                                                  \
        int status[3] = {0, 0, 1};                                                   \
        size_t idx[3];                                                               \
        T vals[3] = {one, two, two};                                                 \
        shmem_wait_until_all(f + 1, 2, NULL, SHMEM_CMP_EQ, two);                     \
        CHECKV(shmem_wait_until_any(f, 3, status, SHMEM_CMP_EQ, two) == 1, "wait_until_any " #T); \
        CHECKV(shmem_wait_until_some(f, 3, idx, NULL, SHMEM_CMP_GE, one) == 3,       \
               "wait_until_some " #T);                                               \
        shmem_wait_until_all_vector(f, 3, NULL, SHMEM_CMP_EQ, vals);                 \
        CHECKV(shmem_wait_until_any_vector(f, 3, status, SHMEM_CMP_EQ, vals) < 2,    \
               "wait_until_any_vector " #T);                                         \
        CHECKV(shmem_wait_until_some_vector(f, 3, idx, NULL, SHMEM_CMP_EQ, vals) == 3, \
               "wait_until_some_vector " #T);                                        \
        CHECKV(shmem_test_all(f, 3, NULL, SHMEM_CMP_GE, one) == 1, "test_all " #T);   \
        CHECKV(shmem_test_any(f, 3, NULL, SHMEM_CMP_EQ, two) == 1, "test_any " #T);  \
        CHECKV(shmem_test_some(f, 3, idx, status, SHMEM_CMP_EQ, two) == 1, "test_some " #T); \
        CHECKV(shmem_test_all_vector(f, 3, NULL, SHMEM_CMP_EQ, vals) == 1, "test_all_vector " #T); \
        CHECKV(shmem_test_any_vector(f, 3, NULL, SHMEM_CMP_EQ, vals) == 0, "test_any_vector " #T); \
        CHECKV(shmem_test_some_vector(f, 3, idx, NULL, SHMEM_CMP_NE, vals) == 0,     \
               "test_some_vector " #T);                                              \
        shmem_barrier_all();                                                         \
    }
P2P_TYPES(TEST_P2P)

/* the 1.3 generic shmem_wait(ivar, value): wait while *ivar == value; the
 * flags are volatile, as 1.3 programs declare them */
#define TEST_WAIT_OLD(T, N)                                                          \
    static volatile T wflag_##N[2];                                                  \
    static void wait_old_##N(void) {                                                 \
        wflag_##N[0] = (T)0;                                                         \
        wflag_##N[1] = (T)7; /* a wait of the wrong width would see it */            \
        shmem_barrier_all();                                                         \
        shmem_p((T *)&wflag_##N[0], (T)(me + 1), right);                             \
        shmem_wait(&wflag_##N[0], (T)0);                                             \
        CHECKV(wflag_##N[0] == (T)(left + 1), "generic shmem_wait on volatile " #T); \
        shmem_barrier_all();                                                         \
    }
#define OLD_WAIT(X) X(short, short) X(int, int) X(long, long) X(long long, longlong)
OLD_WAIT(TEST_WAIT_OLD)

/* ---- collectives ---- */

#define TEST_COLL(T, N)                                                              \
    static void coll_##N(void) {                                                     \
        T *s = A(T, 0), *d = A(T, 1);                                                \
        for (int i = 0; i < 8; i++) s[i] = V(T, me * 4 + i + 1);                     \
        shmem_barrier_all();                                                         \
        CHECKV(shmem_broadcast(SHMEM_TEAM_WORLD, d, s, 2, n - 1) == 0, "broadcast " #T); \
        CHECKV(d[0] == V(T, (n - 1) * 4 + 1) && d[1] == V(T, (n - 1) * 4 + 2), "broadcast " #T); \
        shmem_sync(SHMEM_TEAM_WORLD);                                                \
        CHECKV(shmem_fcollect(SHMEM_TEAM_WORLD, d, s, 1) == 0, "fcollect " #T);      \
        for (int p = 0; p < n; p++) CHECKV(d[p] == V(T, p * 4 + 1), "fcollect " #T); \
        shmem_sync(SHMEM_TEAM_WORLD);                                                \
        CHECKV(shmem_collect(SHMEM_TEAM_WORLD, d, s, 1) == 0, "collect " #T);        \
        for (int p = 0; p < n; p++) CHECKV(d[p] == V(T, p * 4 + 1), "collect " #T);  \
        shmem_sync(SHMEM_TEAM_WORLD);                                                \
        CHECKV(shmem_alltoall(SHMEM_TEAM_WORLD, d, s, 1) == 0, "alltoall " #T);      \
        for (int p = 0; p < n; p++) CHECKV(d[p] == V(T, p * 4 + me + 1), "alltoall " #T); \
        shmem_sync(SHMEM_TEAM_WORLD);                                                \
        CHECKV(shmem_alltoalls(SHMEM_TEAM_WORLD, d, s, 1, 1, 1) == 0, "alltoalls " #T); \
        for (int p = 0; p < n; p++) CHECKV(d[p] == V(T, p * 4 + me + 1), "alltoalls " #T); \
        shmem_barrier_all();                                                         \
    }
RMA_TYPES(TEST_COLL)

/* reductions over the PE numbers: and/or/xor of bits, max/min, sum/prod */
#define TEST_RED_BIT(T, N)                                                           \
    static void red_bit_##N(void) {                                                  \
        T *s = A(T, 0), *d = A(T, 1), all = (T)(((T)1 << n) - 1), none = (T)~all;     \
        s[0] = (T)((T)1 << me);                                                      \
        s[1] = (T)~s[0];                                                             \
        RED(shmem_or_reduce(SHMEM_TEAM_WORLD, d, s, 1), d[0] == all, "or_reduce " #T); \
        RED(shmem_and_reduce(SHMEM_TEAM_WORLD, d, s + 1, 1), d[0] == none, "and_reduce " #T); \
        RED(shmem_xor_reduce(SHMEM_TEAM_WORLD, d, s, 1), d[0] == all, "xor_reduce " #T); \
    }
RED_BIT_TYPES(TEST_RED_BIT)

#define TEST_RED_MINMAX(T, N)                                                        \
    static void red_mm_##N(void) {                                                   \
        T *s = A(T, 0), *d = A(T, 1);                                                \
        s[0] = V(T, me + 1);                                                         \
        RED(shmem_max_reduce(SHMEM_TEAM_WORLD, d, s, 1), d[0] == V(T, n), "max_reduce " #T); \
        RED(shmem_min_reduce(SHMEM_TEAM_WORLD, d, s, 1), d[0] == V(T, 1), "min_reduce " #T); \
    }
RED_MINMAX_TYPES(TEST_RED_MINMAX)

#define TEST_RED_ARITH(T, N)                                                         \
    static void red_ar_##N(void) {                                                   \
        T *s = A(T, 0), *d = A(T, 1);                                                \
        s[0] = V(T, me + 1);                                                         \
        long fact = 1;                                                               \
        for (int p = 1; p <= n; p++) fact *= p;                                      \
        RED(shmem_sum_reduce(SHMEM_TEAM_WORLD, d, s, 1), d[0] == V(T, n * (n + 1) / 2), \
            "sum_reduce " #T);                                                       \
        RED(shmem_prod_reduce(SHMEM_TEAM_WORLD, d, s, 1), d[0] == V(T, fact), "prod_reduce " #T); \
    }
RED_ARITH_TYPES(TEST_RED_ARITH)

#define CALL(T, N) rma_##N();
#define CALL_EXT(T, N) amo_ext_##N();
#define CALL_STD(T, N) amo_std_##N();
#define CALL_BIT(T, N) amo_bit_##N();
#define CALL_OLD(T, N) amo_old_##N();
#define CALL_P2P(T, N) p2p_##N();
#define CALL_COLL(T, N) coll_##N();
#define CALL_WAIT_OLD(T, N) wait_old_##N();
#define CALL_RBIT(T, N) red_bit_##N();
#define CALL_RMM(T, N) red_mm_##N();
#define CALL_RAR(T, N) red_ar_##N();

int main(void) {
    api_start("api_generic", SHMEM_THREAD_SINGLE);
    me = shmem_my_pe();
    n = shmem_n_pes();
    CHECK(n <= 5, "products of 1..n must fit a signed char: at most 5 PEs");
    right = (me + 1) % n;
    left = (me + n - 1) % n;
    RMA_TYPES(CALL)
    AMO_EXT_TYPES(CALL_EXT)
    AMO_STD_TYPES(CALL_STD)
    AMO_BIT_TYPES(CALL_BIT)
    OLD_STD(CALL_OLD)
    amo_old_fp();
    P2P_TYPES(CALL_P2P)
    OLD_WAIT(CALL_WAIT_OLD)
    RMA_TYPES(CALL_COLL)
    RED_BIT_TYPES(CALL_RBIT)
    RED_MINMAX_TYPES(CALL_RMM)
    RED_ARITH_TYPES(CALL_RAR)
    /* shmem_sync, both forms */
    static long psync[SHMEM_SYNC_SIZE];
    for (int i = 0; i < SHMEM_SYNC_SIZE; i++) psync[i] = SHMEM_SYNC_VALUE;
    shmem_barrier_all();
    shmem_sync(0, 0, n, psync);
    CHECKV(shmem_sync(SHMEM_TEAM_WORLD) == 0, "shmem_sync(team)");
    char what[96];
    snprintf(what, sizeof what, "%d checks of generic calls on every standard type", checks);
    api_pass(what);
    shmem_finalize();
    return 0;
}
