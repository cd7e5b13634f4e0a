/*
 * p2p.c — point-to-point synchronisation: wait_until and test in all their
 * forms, and shmem_signal_wait_until. A wait polls a local word with acquire
 * loads (so data written before the awaited update is visible after it) and
 * backs off while it polls (util.h), so more PEs than cores make progress.
 */
#include <stdint.h>

#include "runtime.h"

static noreturn void bad_cmp(const char *fn, int cmp) {
    sym__fatal(fn, "comparison %d is not one of SHMEM_CMP_EQ/NE/GT/GE/LT/LE", cmp);
}

#define LOAD(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)

#define DEF_P2P(T, N)                                                                \
    static inline int N##_cmp(T x, int cmp, T v, const char *fn) {                  \
        switch (cmp) {                                                               \
        case SHMEM_CMP_EQ: return x == v;                                            \
        case SHMEM_CMP_NE: return x != v;                                            \
        case SHMEM_CMP_GT: return x > v;                                             \
        case SHMEM_CMP_GE: return x >= v;                                            \
        case SHMEM_CMP_LT: return x < v;                                             \
        case SHMEM_CMP_LE: return x <= v;                                            \
        default: bad_cmp(fn, cmp);                                                   \
        }                                                                            \
    }                                                                                \
    static inline int N##_holds(const T *ivar, int cmp, T v, const char *fn) {       \
        return N##_cmp(LOAD(ivar), cmp, v, fn);                                      \
    }                                                                                \
    /* How many active elements hold; with `idx`, their indices. `vals` NULL means \
     * every element compares with v. */                                            \
    static size_t N##_scan(const T *ivars, size_t n, const int *status, int cmp, T v,  \
                           const T *vals, size_t *idx, size_t *active, const char *fn) { \
        size_t hits = 0, act = 0;                                                    \
        for (size_t i = 0; i < n; i++) {                                             \
            if (status && status[i]) continue;                                       \
            act++;                                                                   \
            if (N##_holds(&ivars[i], cmp, vals ? vals[i] : v, fn)) {                 \
                if (idx) idx[hits] = i;                                              \
                hits++;                                                              \
            }                                                                        \
        }                                                                            \
        *active = act;                                                               \
        return hits;                                                                 \
    }                                                                                \
    static size_t N##_first(const T *ivars, size_t n, const int *status, int cmp, T v, \
                            const T *vals, const char *fn) {                         \
        for (size_t i = 0; i < n; i++)                                               \
            if (!(status && status[i]) && N##_holds(&ivars[i], cmp, vals ? vals[i] : v, fn)) \
                return i;                                                            \
        return SIZE_MAX;                                                             \
    }                                                                                \
    static void N##_wait_all(T *ivars, size_t n, const int *status, int cmp, T v,    \
                             const T *vals, const char *fn) {                        \
        SYM_REQUIRE_INIT(fn);                                                        \
        for (size_t i = 0; i < n; i++)                                               \
            if (!(status && status[i]))                                              \
                SYM_WAIT_UNTIL(N##_holds(&ivars[i], cmp, vals ? vals[i] : v, fn));   \
    }                                                                                \
    static size_t N##_wait_any(T *ivars, size_t n, const int *status, int cmp, T v,  \
                               const T *vals, const char *fn) {                      \
        SYM_REQUIRE_INIT(fn);                                                        \
        size_t act, r;                                                               \
        N##_scan(ivars, n, status, cmp, v, vals, NULL, &act, fn);                    \
        if (!act) return SIZE_MAX;                                                   \
        SYM_WAIT_UNTIL((r = N##_first(ivars, n, status, cmp, v, vals, fn)) != SIZE_MAX); \
        return r;                                                                    \
    }                                                                                \
    static size_t N##_wait_some(T *ivars, size_t n, size_t *idx, const int *status,  \
                                int cmp, T v, const T *vals, const char *fn) {       \
        SYM_REQUIRE_INIT(fn);                                                        \
        size_t act, r;                                                               \
        N##_scan(ivars, n, status, cmp, v, vals, NULL, &act, fn);                    \
        if (!act) return 0;                                                          \
        SYM_WAIT_UNTIL((r = N##_scan(ivars, n, status, cmp, v, vals, idx, &act, fn)) > 0); \
        return r;                                                                    \
    }                                                                                \
    void shmem_##N##_wait_until(T *ivar, int cmp, T cmp_value) {                     \
        SYM_REQUIRE_INIT(__func__);                                                  \
        SYM_WAIT_UNTIL(N##_holds(ivar, cmp, cmp_value, __func__));                   \
    }                                                                                \
    void shmem_##N##_wait_until_all(T *ivars, size_t nelems, const int *status, int cmp, \
                                    T cmp_value) {                                   \
        N##_wait_all(ivars, nelems, status, cmp, cmp_value, NULL, __func__);         \
    }                                                                                \
    size_t shmem_##N##_wait_until_any(T *ivars, size_t nelems, const int *status,    \
                                      int cmp, T cmp_value) {                        \
        return N##_wait_any(ivars, nelems, status, cmp, cmp_value, NULL, __func__);  \
    }                                                                                \
    size_t shmem_##N##_wait_until_some(T *ivars, size_t nelems, size_t *indices,     \
                                       const int *status, int cmp, T cmp_value) {    \
        return N##_wait_some(ivars, nelems, indices, status, cmp, cmp_value, NULL, __func__); \
    }                                                                                \
    void shmem_##N##_wait_until_all_vector(T *ivars, size_t nelems, const int *status, \
                                           int cmp, T *cmp_values) {                 \
        N##_wait_all(ivars, nelems, status, cmp, 0, cmp_values, __func__);           \
    }                                                                                \
    size_t shmem_##N##_wait_until_any_vector(T *ivars, size_t nelems, const int *status, \
                                             int cmp, T *cmp_values) {               \
        return N##_wait_any(ivars, nelems, status, cmp, 0, cmp_values, __func__);    \
    }                                                                                \
    size_t shmem_##N##_wait_until_some_vector(T *ivars, size_t nelems, size_t *indices, \
                                              const int *status, int cmp, T *cmp_values) { \
        return N##_wait_some(ivars, nelems, indices, status, cmp, 0, cmp_values, __func__); \
    }                                                                                \
    int shmem_##N##_test(T *ivar, int cmp, T cmp_value) {                            \
        SYM_REQUIRE_INIT(__func__);                                                  \
        return N##_holds(ivar, cmp, cmp_value, __func__);                            \
    }                                                                                \
    int shmem_##N##_test_all(T *ivars, size_t nelems, const int *status, int cmp,    \
                             T cmp_value) {                                          \
        SYM_REQUIRE_INIT(__func__);                                                  \
        size_t act;                                                                  \
        return N##_scan(ivars, nelems, status, cmp, cmp_value, NULL, NULL, &act, __func__) == act; \
    }                                                                                \
    size_t shmem_##N##_test_any(T *ivars, size_t nelems, const int *status, int cmp, \
                                T cmp_value) {                                       \
        SYM_REQUIRE_INIT(__func__);                                                  \
        return N##_first(ivars, nelems, status, cmp, cmp_value, NULL, __func__);     \
    }                                                                                \
    size_t shmem_##N##_test_some(T *ivars, size_t nelems, size_t *indices,           \
                                 const int *status, int cmp, T cmp_value) {          \
        SYM_REQUIRE_INIT(__func__);                                                  \
        size_t act;                                                                  \
        return N##_scan(ivars, nelems, status, cmp, cmp_value, NULL, indices, &act, __func__); \
    }                                                                                \
    int shmem_##N##_test_all_vector(T *ivars, size_t nelems, const int *status, int cmp, \
                                    T *cmp_values) {                                 \
        SYM_REQUIRE_INIT(__func__);                                                  \
        size_t act;                                                                  \
        return N##_scan(ivars, nelems, status, cmp, 0, cmp_values, NULL, &act, __func__) == act; \
    }                                                                                \
    size_t shmem_##N##_test_any_vector(T *ivars, size_t nelems, const int *status,   \
                                       int cmp, T *cmp_values) {                     \
        SYM_REQUIRE_INIT(__func__);                                                  \
        return N##_first(ivars, nelems, status, cmp, 0, cmp_values, __func__);       \
    }                                                                                \
    size_t shmem_##N##_test_some_vector(T *ivars, size_t nelems, size_t *indices,    \
                                        const int *status, int cmp, T *cmp_values) { \
        SYM_REQUIRE_INIT(__func__);                                                  \
        size_t act;                                                                  \
        return N##_scan(ivars, nelems, status, cmp, 0, cmp_values, indices, &act, __func__); \
    }
SYMI_P2P_TYPES(DEF_P2P)

#define DEF_P2P_OLD(T, N)                                                            \
    void shmem_##N##_wait(volatile T *ivar, T cmp_value) {                           \
        shmem_##N##_wait_until((T *)ivar, SHMEM_CMP_NE, cmp_value);                  \
    }
SYMI_TOALL_BIT_TYPES(DEF_P2P_OLD)
/* The untyped 1.0 forms on a long, for programs built before C11. In
 * parentheses: shmem.h also defines both names as C11 generic macros. */
void(shmem_wait)(volatile long *ivar, long cmp_value) {
    shmem_long_wait_until((long *)ivar, SHMEM_CMP_NE, cmp_value);
}
void(shmem_wait_until)(long *ivar, int cmp, long cmp_value) {
    shmem_long_wait_until(ivar, cmp, cmp_value);
}

uint64_t shmem_signal_wait_until(uint64_t *sig_addr, int cmp, uint64_t cmp_value) {
    SYM_REQUIRE_INIT("shmem_signal_wait_until");
    uint64_t v;
    SYM_WAIT_UNTIL(uint64_cmp(v = LOAD(sig_addr), cmp, cmp_value, "shmem_signal_wait_until"));
    return v;
}
