/*
 * amo.c — atomic memory operations.
 *
 * Every AMO type is 4 or 8 bytes, and every operation the standard defines is
 * a function of the bits alone (two's complement add is the same for signed and
 * unsigned; fetch, set, swap and compare-swap of a float move or compare its
 * bits). So one core works on uint32_t / uint64_t: for a peer on this host it is
 * a CPU atomic on the mapped word, for a remote peer one fabric atomic. The
 * typed functions convert to and from bits.
 */
#include <string.h>

#include "runtime.h"

/* Apply `op` to the `size`-byte word at `dest` on (ctx, pe); returns the old
 * value's bits. For the _nbi forms `fetch` receives the old value (remotely:
 * by the next quiet). */
static inline uint64_t amo_core(shmem_ctx_t ctx, sym_amo_op_t op, void *dest, uint64_t v,
                                uint64_t cmp, size_t size, int pe, void *fetch, int blocking,
                                const char *fn) {
    SYM_REQUIRE_INIT(fn);
    pe = sym__world_pe(ctx, pe, fn);
    if (SYM_UNLIKELY((uintptr_t)dest & (size - 1)))
        sym__fatal(fn, "address %p is not aligned to the %zu-byte atomic type", dest, size);
    void *d = sym__peer_range(dest, size, pe, fn);
    uint64_t old = 0;
    if (SYM_LIKELY(d != NULL && !sym__amo_through_fabric)) {
        old = sym__cpu_amo(op, d, v, cmp, size);
        if (fetch) memcpy(fetch, &old, size);
        return old;
    }
    /* Remote: operands in their own width, as the fabric expects. */
    uint32_t v32 = (uint32_t)v, c32 = (uint32_t)cmp, r32 = 0;
    const void *pv = size == 4 ? (const void *)&v32 : (const void *)&v;
    const void *pc = size == 4 ? (const void *)&c32 : (const void *)&cmp;
    if (!blocking) {
        sym__remote->amo(ctx->remote, op, dest, pv, pc, fetch, size, pe, 0);
        return 0;
    }
    void *res = op == SYM_AMO_SET ? NULL : (size == 4 ? (void *)&r32 : (void *)&old);
    sym__remote->amo(ctx->remote, op, dest, pv, pc, res, size, pe, 1);
    if (size == 4) old = r32;
    if (fetch) memcpy(fetch, &old, size);
    return old;
}

static inline uint64_t bits_of(const void *v, size_t size) {
    uint64_t b = 0;
    memcpy(&b, v, size);
    return b;
}

#define CTX_DEFAULT (&sym__ctx_default)

/* One fetching operation in its four shapes: ctx or not, blocking or _nbi. */
#define DEF_FETCHING(T, N, NAME, OP, PARAMS, VAL, CMP)                          \
    T shmem_ctx_##N##_atomic_##NAME(shmem_ctx_t ctx, T *dest PARAMS, int pe) {       \
        T r;                                                                         \
        uint64_t b = amo_core(ctx, OP, dest, VAL, CMP, sizeof(T), pe, NULL, 1, __func__); \
        memcpy(&r, &b, sizeof(T));                                                   \
        return r;                                                                    \
    }                                                                                \
    T shmem_##N##_atomic_##NAME(T *dest PARAMS, int pe) {                            \
        T r;                                                                         \
        uint64_t b = amo_core(CTX_DEFAULT, OP, dest, VAL, CMP, sizeof(T), pe, NULL, 1, __func__); \
        memcpy(&r, &b, sizeof(T));                                                   \
        return r;                                                                    \
    }                                                                                \
    void shmem_ctx_##N##_atomic_##NAME##_nbi(shmem_ctx_t ctx, T *fetch, T *dest PARAMS, \
                                             int pe) {                               \
        amo_core(ctx, OP, dest, VAL, CMP, sizeof(T), pe, fetch, 0, __func__);        \
    }                                                                                \
    void shmem_##N##_atomic_##NAME##_nbi(T *fetch, T *dest PARAMS, int pe) {         \
        amo_core(CTX_DEFAULT, OP, dest, VAL, CMP, sizeof(T), pe, fetch, 0, __func__); \
    }

/* One non-fetching operation, ctx or not. */
#define DEF_UPDATE(T, N, NAME, OP, PARAMS, VAL)                                      \
    void shmem_ctx_##N##_atomic_##NAME(shmem_ctx_t ctx, T *dest PARAMS, int pe) {    \
        amo_core(ctx, OP, dest, VAL, 0, sizeof(T), pe, NULL, 1, __func__);           \
    }                                                                                \
    void shmem_##N##_atomic_##NAME(T *dest PARAMS, int pe) {                         \
        amo_core(CTX_DEFAULT, OP, dest, VAL, 0, sizeof(T), pe, NULL, 1, __func__);   \
    }

#define COMMA ,
#define VALUE bits_of(&value, sizeof value)
#define COND bits_of(&cond, sizeof cond)

/* fetch is declared on a const source; it only reads. */
#define DEF_AMO_EXT(T, N)                                                            \
    T shmem_ctx_##N##_atomic_fetch(shmem_ctx_t ctx, const T *source, int pe) {       \
        T r;                                                                         \
        uint64_t b = amo_core(ctx, SYM_AMO_FETCH, (void *)source, 0, 0, sizeof(T), pe, NULL, \
                              1, __func__);                                          \
        memcpy(&r, &b, sizeof(T));                                                   \
        return r;                                                                    \
    }                                                                                \
    T shmem_##N##_atomic_fetch(const T *source, int pe) {                            \
        T r;                                                                         \
        uint64_t b = amo_core(CTX_DEFAULT, SYM_AMO_FETCH, (void *)source, 0, 0, sizeof(T), \
                              pe, NULL, 1, __func__);                                \
        memcpy(&r, &b, sizeof(T));                                                   \
        return r;                                                                    \
    }                                                                                \
    void shmem_ctx_##N##_atomic_fetch_nbi(shmem_ctx_t ctx, T *fetch, const T *source, \
                                          int pe) {                                  \
        amo_core(ctx, SYM_AMO_FETCH, (void *)source, 0, 0, sizeof(T), pe, fetch, 0, __func__); \
    }                                                                                \
    void shmem_##N##_atomic_fetch_nbi(T *fetch, const T *source, int pe) {           \
        amo_core(CTX_DEFAULT, SYM_AMO_FETCH, (void *)source, 0, 0, sizeof(T), pe, fetch, 0, \
                 __func__);                                                          \
    }                                                                                \
    DEF_UPDATE(T, N, set, SYM_AMO_SET, COMMA T value, VALUE)                         \
    DEF_FETCHING(T, N, swap, SYM_AMO_SWAP, COMMA T value, VALUE, 0)
SYMI_AMO_EXT_TYPES(DEF_AMO_EXT)

#define DEF_AMO_STD(T, N)                                                            \
    DEF_FETCHING(T, N, compare_swap, SYM_AMO_CSWAP, COMMA T cond COMMA T value, VALUE, COND) \
    DEF_FETCHING(T, N, fetch_inc, SYM_AMO_ADD, , 1, 0)                             \
    DEF_UPDATE(T, N, inc, SYM_AMO_ADD, , 1)                                          \
    DEF_FETCHING(T, N, fetch_add, SYM_AMO_ADD, COMMA T value, VALUE, 0)            \
    DEF_UPDATE(T, N, add, SYM_AMO_ADD, COMMA T value, VALUE)
SYMI_AMO_STD_TYPES(DEF_AMO_STD)

#define DEF_AMO_BIT(T, N)                                                            \
    DEF_FETCHING(T, N, fetch_and, SYM_AMO_AND, COMMA T value, VALUE, 0)            \
    DEF_UPDATE(T, N, and, SYM_AMO_AND, COMMA T value, VALUE)                         \
    DEF_FETCHING(T, N, fetch_or, SYM_AMO_OR, COMMA T value, VALUE, 0)              \
    DEF_UPDATE(T, N, or, SYM_AMO_OR, COMMA T value, VALUE)                           \
    DEF_FETCHING(T, N, fetch_xor, SYM_AMO_XOR, COMMA T value, VALUE, 0)            \
    DEF_UPDATE(T, N, xor, SYM_AMO_XOR, COMMA T value, VALUE)
SYMI_AMO_BIT_TYPES(DEF_AMO_BIT)

/* ---- deprecated names (OpenSHMEM 1.3) ---- */

#define DEF_AMO_OLD_STD(T, N)                                                        \
    T shmem_##N##_cswap(T *dest, T cond, T value, int pe) {                          \
        return shmem_##N##_atomic_compare_swap(dest, cond, value, pe);               \
    }                                                                                \
    T shmem_##N##_finc(T *dest, int pe) { return shmem_##N##_atomic_fetch_inc(dest, pe); } \
    void shmem_##N##_inc(T *dest, int pe) { shmem_##N##_atomic_inc(dest, pe); }     \
    T shmem_##N##_fadd(T *dest, T value, int pe) {                                   \
        return shmem_##N##_atomic_fetch_add(dest, value, pe);                        \
    }                                                                                \
    void shmem_##N##_add(T *dest, T value, int pe) { shmem_##N##_atomic_add(dest, value, pe); }
SYMI_AMO_OLD_STD_TYPES(DEF_AMO_OLD_STD)

#define DEF_AMO_OLD_EXT(T, N)                                                        \
    T shmem_##N##_fetch(const T *source, int pe) { return shmem_##N##_atomic_fetch(source, pe); } \
    void shmem_##N##_set(T *dest, T value, int pe) { shmem_##N##_atomic_set(dest, value, pe); } \
    T shmem_##N##_swap(T *dest, T value, int pe) {                                   \
        return shmem_##N##_atomic_swap(dest, value, pe);                             \
    }
SYMI_AMO_OLD_EXT_TYPES(DEF_AMO_OLD_EXT)

/* In parentheses: shmem.h also defines shmem_swap as the C11 generic macro. */
long(shmem_swap)(long *dest, long value, int pe) { return shmem_long_atomic_swap(dest, value, pe); }
