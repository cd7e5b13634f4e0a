/*
 * shmem_wait — point-to-point synchronisation: wait_until, wait_until_all /
 * any / some and their _vector forms, test, test_all / any / some and _vector,
 * status masks, the deprecated shmem_wait, for every P2P type.
 *
 *   1. Semantics, against a reference comparison: random arrays drawn from
 *      values where signedness matters (-2, -1, 0, 1, 2, MIN, MAX), random
 *      status masks (all masked included), every comparison. test_* results are
 *      checked exactly; wait_until_* forms are called where their condition
 *      already holds, and where every element is masked.
 *   2. Wake-up (2 PEs or more): the left neighbour changes elements while this
 *      PE waits; masked elements change first, so a wait that ignored the mask
 *      would return early with a wrong answer.
 */
#include <limits.h>

#include "shmem_test.h"

static const char *NAME = "shmem_wait";
static uint64_t seed;
static int me, npes, right, left;
static long checks;

#define NMAX 16
static const int cmps[] = {SHMEM_CMP_EQ, SHMEM_CMP_NE, SHMEM_CMP_GT,
                           SHMEM_CMP_GE, SHMEM_CMP_LT, SHMEM_CMP_LE};
static const char *cmp_name[] = {"EQ", "NE", "GT", "GE", "LT", "LE"};

/* The reference, derived from < and == only. */
#define REF_CMP(a, cmp, b)                                                           \
    ((cmp) == SHMEM_CMP_EQ   ? (a) == (b)                                            \
     : (cmp) == SHMEM_CMP_NE ? !((a) == (b))                                         \
     : (cmp) == SHMEM_CMP_GT ? !((a) < (b)) && !((a) == (b))                         \
     : (cmp) == SHMEM_CMP_GE ? !((a) < (b))                                          \
     : (cmp) == SHMEM_CMP_LT ? (a) < (b)                                             \
                             : ((a) < (b) || (a) == (b)))

/* Values where a signed/unsigned mix-up or a narrowed type shows. */
#define INTERESTING(T, k)                                                            \
    ((k) == 0   ? (T)0                                                               \
     : (k) == 1 ? (T)1                                                               \
     : (k) == 2 ? (T)2                                                               \
     : (k) == 3 ? (T)-1                                                              \
     : (k) == 4 ? (T)-2                                                              \
     : (k) == 5 ? (T)(((T)-1 < (T)1) ? (T)((uintmax_t)1 << (8 * sizeof(T) - 1)) : (T)0) /* MIN */ \
                : (T)(((T)-1 < (T)1) ? (T)(((uintmax_t)1 << (8 * sizeof(T) - 1)) - 1) : (T)-1)) /* MAX */

#define DEF_P2P_TEST(T, N)                                                           \
    static void local_##N(test_rng_t *r) {                                           \
        T iv[NMAX], vals[NMAX];                                                      \
        int status[NMAX];                                                            \
        size_t idx[NMAX];                                                            \
        for (int rep = 0; rep < 200; rep++) {                                        \
            size_t n = 1 + (size_t)(test_next(r) % NMAX);                            \
            int all_masked = test_next(r) % 16 == 0;                                 \
            for (size_t i = 0; i < n; i++) {                                         \
                iv[i] = INTERESTING(T, (int)(test_next(r) % 7));                     \
                vals[i] = INTERESTING(T, (int)(test_next(r) % 7));                   \
                status[i] = all_masked || test_next(r) % 4 == 0;                     \
            }                                                                        \
            int ci = (int)(test_next(r) % 6), cmp = cmps[ci];                        \
            T v = INTERESTING(T, (int)(test_next(r) % 7));                           \
            /* the reference: which active elements hold, for v and for vals[] */    \
            size_t hold = 0, hold_v = 0, active = 0;                                 \
            int holds[NMAX], holds_v[NMAX];                                          \
            for (size_t i = 0; i < n; i++) {                                         \
                holds[i] = !status[i] && REF_CMP(iv[i], cmp, v);                     \
                holds_v[i] = !status[i] && REF_CMP(iv[i], cmp, vals[i]);             \
                hold += (size_t)holds[i];                                            \
                hold_v += (size_t)holds_v[i];                                        \
                active += !status[i];                                                \
            }                                                                        \
            const char *cn = cmp_name[ci];                                           \
            CHECK(shmem_##N##_test(&iv[0], cmp, v) == REF_CMP(iv[0], cmp, v),        \
                  "%s test(%s): wrong answer", #T, cn);                              \
            CHECK(shmem_test(&iv[0], cmp, v) == REF_CMP(iv[0], cmp, v),              \
                  "%s generic test(%s): wrong answer", #T, cn);                      \
            CHECK(shmem_##N##_test_all(iv, n, status, cmp, v) == (hold == active),   \
                  "%s test_all(%s) over %zu (%zu active, %zu hold)", #T, cn, n, active, hold); \
            CHECK(shmem_##N##_test_all_vector(iv, n, status, cmp, vals) == (hold_v == active), \
                  "%s test_all_vector(%s)", #T, cn);                                 \
            size_t a = shmem_##N##_test_any(iv, n, status, cmp, v);                  \
            CHECK(hold ? (a < n && holds[a]) : a == SIZE_MAX,                        \
                  "%s test_any(%s) returned %zu (%zu hold)", #T, cn, a, hold);       \
            a = shmem_##N##_test_any_vector(iv, n, status, cmp, vals);               \
            CHECK(hold_v ? (a < n && holds_v[a]) : a == SIZE_MAX,                    \
                  "%s test_any_vector(%s) returned %zu", #T, cn, a);                 \
            size_t k = shmem_##N##_test_some(iv, n, idx, status, cmp, v);           \
            CHECK(k == hold, "%s test_some(%s) returned %zu, %zu hold", #T, cn, k, hold); \
            for (size_t j = 0; j < k; j++)                                           \
                CHECK(idx[j] < n && holds[idx[j]] && (j == 0 || idx[j] > idx[j - 1]), \
                      "%s test_some(%s): index %zu", #T, cn, idx[j]);                \
            k = shmem_##N##_test_some_vector(iv, n, idx, status, cmp, vals);         \
            CHECK(k == hold_v, "%s test_some_vector(%s) returned %zu, %zu hold", #T, cn, k, \
                  hold_v);                                                           \
            for (size_t j = 0; j < k; j++)                                           \
                CHECK(idx[j] < n && holds_v[idx[j]] && (j == 0 || idx[j] > idx[j - 1]), \
                      "%s test_some_vector(%s): index %zu", #T, cn, idx[j]);         \
            CHECK(shmem_test_any(iv, n, status, cmp, v) == shmem_##N##_test_any(iv, n, status, cmp, v), \
                  "%s generic test_any", #T);                                        \
            /* waits whose condition already holds return at once */                 \
            if (hold == active) shmem_##N##_wait_until_all(iv, n, status, cmp, v);   \
            if (hold_v == active) shmem_wait_until_all_vector(iv, n, status, cmp, vals); \
            if (hold) {                                                              \
                a = shmem_##N##_wait_until_any(iv, n, status, cmp, v);               \
                CHECK(a < n && holds[a], "%s wait_until_any(%s) returned %zu", #T, cn, a); \
                k = shmem_##N##_wait_until_some(iv, n, idx, status, cmp, v);         \
                CHECK(k >= 1 && k <= hold, "%s wait_until_some(%s) returned %zu", #T, cn, k); \
                for (size_t j = 0; j < k; j++)                                       \
                    CHECK(holds[idx[j]], "%s wait_until_some(%s): index %zu does not hold", \
                          #T, cn, idx[j]);                                           \
            }                                                                        \
            if (hold_v) {                                                            \
                a = shmem_##N##_wait_until_any_vector(iv, n, status, cmp, vals);     \
                CHECK(a < n && holds_v[a], "%s wait_until_any_vector(%s) returned %zu", #T, cn, a); \
                k = shmem_wait_until_some_vector(iv, n, idx, status, cmp, vals);     \
                CHECK(k >= 1 && k <= hold_v, "%s wait_until_some_vector(%s): %zu", #T, cn, k); \
                for (size_t j = 0; j < k; j++)                                       \
                    CHECK(holds_v[idx[j]], "%s wait_until_some_vector: index %zu", #T, idx[j]); \
            }                                                                        \
            if (REF_CMP(iv[0], cmp, v)) shmem_wait_until(&iv[0], cmp, v);            \
            if (active == 0) {                                                       \
                CHECK(shmem_##N##_wait_until_any(iv, n, status, cmp, v) == SIZE_MAX, \
                      "%s wait_until_any with every element masked", #T);            \
                CHECK(shmem_##N##_wait_until_some(iv, n, idx, status, cmp, v) == 0,  \
                      "%s wait_until_some with every element masked", #T);           \
                CHECK(shmem_##N##_wait_until_any_vector(iv, n, status, cmp, vals) == SIZE_MAX, \
                      "%s wait_until_any_vector with every element masked", #T);     \
                CHECK(shmem_##N##_test_all(iv, n, status, cmp, v) == 1,              \
                      "%s test_all with every element masked", #T);                  \
                shmem_##N##_wait_until_all(iv, n, status, cmp, v);                   \
            }                                                                        \
            checks += 12;                                                            \
        }                                                                            \
    }                                                                                \
    /* Remote wake-up: `iv` (NMAX elements, symmetric) is waited on here and     \
     * written by the left neighbour. Both sides run this; `waiter` says which. */ \
    static void remote_##N(T *iv, int waiter, test_rng_t *r) {                       \
        int status[NMAX];                                                            \
        size_t idx[NMAX];                                                            \
        T vals[NMAX];                                                                \
        for (int form = 0; form < 9; form++) {                                       \
            /* the same draws on both sides (r is a shared stream) */                \
            int ci = (int)(test_next(r) % 6), cmp = cmps[ci];                        \
            T from = (cmp == SHMEM_CMP_LT || cmp == SHMEM_CMP_LE) ? (T)10 : (T)3;    \
            T to = (cmp == SHMEM_CMP_LT || cmp == SHMEM_CMP_LE) ? (T)3 : (T)10;      \
            T v = cmp == SHMEM_CMP_NE ? from : cmp == SHMEM_CMP_EQ ? to : (T)5;      \
            if (cmp == SHMEM_CMP_GE || cmp == SHMEM_CMP_LE) v = to;                  \
            size_t target = (size_t)(test_next(r) % NMAX);                           \
            for (int i = 0; i < NMAX; i++) {                                         \
                status[i] = (size_t)i != target && test_next(r) % 3 == 0;            \
                vals[i] = v;                                                         \
            }                                                                        \
            if (waiter)                                                              \
                for (int i = 0; i < NMAX; i++) iv[i] = from;                         \
            shmem_barrier_all();                                                     \
            if (!waiter) {                                                           \
                /* masked elements first, then the ones that count */                \
                for (int i = 0; i < NMAX; i++)                                       \
                    if (status[i]) shmem_##N##_p(&iv[i], to, right);                 \
                shmem_fence();                                                       \
                if (form == 1 || form == 4) { /* all: every active element, one by one */ \
                    for (int i = 0; i < NMAX; i++)                                   \
                        if (!status[i]) shmem_##N##_p(&iv[i], to, right);            \
                } else {                                                             \
                    shmem_##N##_p(&iv[target], to, right);                           \
                }                                                                    \
                shmem_quiet();                                                       \
            } else {                                                                 \
                size_t a, k;                                                         \
                switch (form) {                                                      \
                case 0:                                                              \
                    shmem_##N##_wait_until(&iv[target], cmp, v);                     \
                    break;                                                           \
                case 1:                                                              \
                    shmem_##N##_wait_until_all(iv, NMAX, status, cmp, v);            \
                    for (int i = 0; i < NMAX; i++)                                   \
                        CHECK(status[i] || iv[i] == to, "%s wait_until_all(%s) returned " \
                              "before element %d changed", #T, cmp_name[ci], i);     \
                    break;                                                           \
                case 2:                                                              \
                    a = shmem_##N##_wait_until_any(iv, NMAX, status, cmp, v);        \
                    CHECK(a == target, "%s wait_until_any(%s) returned %zu, want %zu " \
                          "(masked elements changed first)", #T, cmp_name[ci], a, target); \
                    break;                                                           \
                case 3:                                                              \
                    k = shmem_##N##_wait_until_some(iv, NMAX, idx, status, cmp, v);  \
                    CHECK(k == 1 && idx[0] == target, "%s wait_until_some(%s) returned " \
                          "%zu indices, first %zu, want 1: %zu", #T, cmp_name[ci], k, idx[0], \
                          target);                                                   \
                    break;                                                           \
                case 4:                                                              \
                    shmem_##N##_wait_until_all_vector(iv, NMAX, status, cmp, vals);  \
                    for (int i = 0; i < NMAX; i++)                                   \
                        CHECK(status[i] || iv[i] == to, "%s wait_until_all_vector(%s) " \
                              "returned early", #T, cmp_name[ci]);                   \
                    break;                                                           \
                case 5:                                                              \
                    a = shmem_##N##_wait_until_any_vector(iv, NMAX, status, cmp, vals); \
                    CHECK(a == target, "%s wait_until_any_vector(%s) returned %zu, want %zu", \
                          #T, cmp_name[ci], a, target);                              \
                    break;                                                           \
                case 6:                                                              \
                    k = shmem_##N##_wait_until_some_vector(iv, NMAX, idx, status, cmp, vals); \
                    CHECK(k == 1 && idx[0] == target, "%s wait_until_some_vector(%s)", #T, \
                          cmp_name[ci]);                                             \
                    break;                                                           \
                case 7:                                                              \
                    shmem_wait_until(&iv[target], cmp, v); /* generic */             \
                    break;                                                           \
                default: /* polling with test */                                     \
                    while (!shmem_##N##_test(&iv[target], cmp, v)) {                 \
                    }                                                                \
                    break;                                                           \
                }                                                                    \
                CHECK(iv[target] == to, "%s wait form %d (%s) returned before the change", \
                      #T, form, cmp_name[ci]);                                       \
                checks++;                                                            \
            }                                                                        \
            shmem_barrier_all();                                                     \
        }                                                                            \
    }
SYMI_P2P_TYPES(DEF_P2P_TEST)

/* The deprecated shmem_wait: wait while *ivar == value. */
static short w_short;
static int w_int;
static long w_long;
static long long w_ll;
static long w_plain;

static void deprecated(void) {
    w_short = 1, w_int = 1, w_long = 1, w_ll = 1, w_plain = 1;
    shmem_barrier_all();
    /* my left neighbour changes mine; I change my right neighbour's */
    shmem_short_p(&w_short, 2, right);
    shmem_int_p(&w_int, 2, right);
    shmem_long_p(&w_long, 2, right);
    shmem_longlong_p(&w_ll, 2, right);
    shmem_long_p(&w_plain, 2, right);
    shmem_short_wait(&w_short, 1);
    shmem_int_wait(&w_int, 1);
    shmem_long_wait(&w_long, 1);
    shmem_longlong_wait(&w_ll, 1);
    shmem_wait(&w_plain, 1);
    CHECK(w_short == 2 && w_int == 2 && w_long == 2 && w_ll == 2 && w_plain == 2,
          "deprecated waits returned before the change");
    shmem_barrier_all();
}

int main(void) {
    seed = shmem_test_start(NAME);
    me = shmem_my_pe();
    npes = shmem_n_pes();
    right = shmem_test_right();
    left = shmem_test_left();

    test_rng_t r = test_rng(seed, 100 + (uint64_t)me);
#define LOCAL(T, N) local_##N(&r);
    SYMI_P2P_TYPES(LOCAL)
    if (npes > 1) {
        long long *iv = shmem_calloc(NMAX, sizeof(long long)); /* room for any P2P type */
        CHECK(iv != NULL, "shmem_calloc");
        /* Roles: even PEs wait on their own array while odd PEs write their
         * right neighbour's, then the other way round. In a ring of even size
         * every waiter's left neighbour is a writer. */
        CHECK(npes % 2 == 0, "the wake-up part runs on an even number of PEs");
        for (int step = 0; step < 2; step++) {
            int waiter = (me + step) % 2 == 0;
            test_rng_t shared = test_rng(seed, 900 + (uint64_t)step);
#define REMOTE(T, N) remote_##N((T *)iv, waiter, &shared);
            SYMI_P2P_TYPES(REMOTE)
        }
        shmem_free(iv);
    }
    deprecated();
    char what[96];
    snprintf(what, sizeof what, "%ld checks on PE 0%s", checks,
             npes > 1 ? "" : "; wake-up needs 2 PEs");
    shmem_test_pass(NAME, what);
    shmem_finalize();
    return 0;
}
