/*
 * rma.c — put, get, p, g, strided and non-blocking forms, put-with-signal.
 *
 * Every typed function is a thin wrapper (generated from shmem.h's type tables)
 * around a few inline cores. For a peer on this host a put is: check the PE,
 * translate the destination (transport.h), memcpy. Same-host operations are
 * complete when they return, so the _nbi forms are the blocking ones; for a
 * remote peer the fabric transport decides when the data has gone. Copies
 * larger than half the last-level cache use streaming stores (util/copy.c).
 * An operation of zero elements does nothing and looks at no buffer (the
 * standard's rule), except that a put-with-signal still updates its signal.
 */
#include <stdint.h>
#include <string.h>

#include "runtime.h"

struct symi_ctx sym__ctx_default;
shmem_ctx_t const symi_ctx_default = &sym__ctx_default;

/* ---- cores ---- */

/* Always inlined: each typed function is then its own specialised copy, and a
 * p or g of a constant size is a plain store or load. */
static inline __attribute__((always_inline)) void put_core(shmem_ctx_t ctx, void *dest,
                                                           const void *src, size_t len, int pe,
                                                           int blocking, const char *fn) {
    SYM_REQUIRE_INIT(fn);
    pe = sym__world_pe(ctx, pe, fn);
    if (SYM_UNLIKELY(len == 0)) return; /* a no-op, whatever the pointers (NULL too) */
    sym__count_put(len);
    void *d = sym__peer_range(dest, len, pe, fn);
    if (SYM_LIKELY(d != NULL))
        sym__copy(d, src, len);
    else
        sym__remote->put(ctx->remote, dest, src, len, pe, blocking);
}

static inline __attribute__((always_inline)) void get_core(shmem_ctx_t ctx, void *dest,
                                                           const void *src, size_t len, int pe,
                                                           int blocking, const char *fn) {
    SYM_REQUIRE_INIT(fn);
    pe = sym__world_pe(ctx, pe, fn);
    if (SYM_UNLIKELY(len == 0)) return;
    const void *s = sym__peer_range(src, len, pe, fn);
    if (SYM_LIKELY(s != NULL))
        sym__copy(dest, s, len);
    else
        sym__remote->get(ctx->remote, dest, src, len, pe, blocking);
}

/* The distance in bytes between consecutive elements of a strided range of n
 * elements `stride` elements apart, esize bytes each, computed in checked
 * unsigned arithmetic: the whole extent (n - 1) * |stride| * esize must fit
 * in a ptrdiff_t, or a product that wrapped would slip past the range check
 * (signed overflow is undefined besides). Fatal when it does not fit. */
static ptrdiff_t stride_bytes(ptrdiff_t stride, size_t n, size_t esize, const char *which,
                              const char *fn) {
    if (n < 2) return 0; /* one element: the stride is never used */
    size_t mag = stride < 0 ? (size_t)0 - (size_t)stride : (size_t)stride, step, extent;
    if (__builtin_mul_overflow(mag, esize, &step) || __builtin_mul_overflow(step, n - 1, &extent) ||
        extent > (size_t)PTRDIFF_MAX - esize)
        sym__fatal(fn,
                   "the strided %s (%zu elements of %zu bytes, %td elements apart) spans more "
                   "than the address space; check nelems and the strides",
                   which, n, esize, stride);
    return stride < 0 ? -(ptrdiff_t)step : (ptrdiff_t)step;
}

/* The peer's copy of the strided range base + i * step, i < n, elements of
 * esize bytes (step from stride_bytes, so the extent fits); NULL for a remote
 * peer. The step may be negative. */
static inline char *peer_strided(const void *base, ptrdiff_t step, size_t n, size_t esize,
                                 int pe, const char *fn) {
    size_t extent = (step < 0 ? (size_t)0 - (size_t)step : (size_t)step) * (n - 1);
    uintptr_t lo = (uintptr_t)base - (step < 0 ? extent : 0);
    char *p = sym__peer_range((const void *)lo, extent + esize, pe, fn);
    return p ? p + ((uintptr_t)base - lo) : NULL;
}

/* Strided: element i moves from source[i * sst] to dest[i * dst]. */
static void iput_core(shmem_ctx_t ctx, void *dest, const void *src, ptrdiff_t dst, ptrdiff_t sst,
                      size_t nelems, size_t esize, int pe, const char *fn) {
    SYM_REQUIRE_INIT(fn);
    if (!nelems) return;
    pe = sym__world_pe(ctx, pe, fn);
    sym__count_put(nelems * esize);
    ptrdiff_t ds = stride_bytes(dst, nelems, esize, "destination", fn);
    ptrdiff_t ss = stride_bytes(sst, nelems, esize, "source", fn);
    char *d = peer_strided(dest, ds, nelems, esize, pe, fn);
    const char *s = src;
    for (size_t i = 0; i < nelems; i++, s += ss) {
        if (d)
            memcpy(d + (ptrdiff_t)i * ds, s, esize);
        else
            sym__remote->put(ctx->remote, (char *)dest + (ptrdiff_t)i * ds, s, esize, pe, 1);
    }
}

static void iget_core(shmem_ctx_t ctx, void *dest, const void *src, ptrdiff_t dst, ptrdiff_t sst,
                      size_t nelems, size_t esize, int pe, const char *fn) {
    SYM_REQUIRE_INIT(fn);
    if (!nelems) return;
    pe = sym__world_pe(ctx, pe, fn);
    ptrdiff_t ds = stride_bytes(dst, nelems, esize, "destination", fn);
    ptrdiff_t ss = stride_bytes(sst, nelems, esize, "source", fn);
    const char *s = peer_strided(src, ss, nelems, esize, pe, fn);
    char *d = dest;
    for (size_t i = 0; i < nelems; i++, d += ds) {
        if (s)
            memcpy(d, s + (ptrdiff_t)i * ss, esize);
        else
            sym__remote->get(ctx->remote, d, (const char *)src + (ptrdiff_t)i * ss, esize, pe, 1);
    }
}

static inline void check_sig_op(int sig_op, const char *fn) {
    if (SYM_UNLIKELY(sig_op != SHMEM_SIGNAL_SET && sig_op != SHMEM_SIGNAL_ADD))
        sym__fatal(fn, "sig_op %d is neither SHMEM_SIGNAL_SET nor SHMEM_SIGNAL_ADD", sig_op);
}

/* The data, then the signal: a waiter that sees the signal sees the data. With
 * no data (len 0) dest and src are not looked at, but the signal is still
 * updated, as the standard has it. */
static inline void put_signal_core(shmem_ctx_t ctx, void *dest, const void *src, size_t len,
                                   uint64_t *sig, uint64_t value, int sig_op, int pe,
                                   int blocking, const char *fn) {
    SYM_REQUIRE_INIT(fn);
    check_sig_op(sig_op, fn);
    pe = sym__world_pe(ctx, pe, fn);
    sym__count_put(len);
    void *d = SYM_LIKELY(len != 0) ? sym__peer_range(dest, len, pe, fn) : NULL;
    uint64_t *s = sym__peer_range(sig, sizeof *sig, pe, fn); /* NULL: a remote peer */
    if (SYM_LIKELY(s != NULL)) {
        if (len) sym__copy(d, src, len); /* fenced when it streams: the signal comes after */
        if (sig_op == SHMEM_SIGNAL_SET)
            __atomic_store_n(s, value, __ATOMIC_RELEASE);
        else
            __atomic_fetch_add(s, value, __ATOMIC_RELEASE);
        return;
    }
    sym__remote->put_signal(ctx->remote, dest, src, len, sig, value, sig_op, pe, blocking);
}

/* ---- typed families ---- */

#define DEF_RMA(T, N)                                                                \
    void shmem_ctx_##N##_put(shmem_ctx_t ctx, T *dest, const T *source, size_t nelems, \
                             int pe) {                                               \
        put_core(ctx, dest, source, nelems * sizeof(T), pe, 1, __func__);            \
    }                                                                                \
    void shmem_##N##_put(T *dest, const T *source, size_t nelems, int pe) {          \
        put_core(&sym__ctx_default, dest, source, nelems * sizeof(T), pe, 1, __func__); \
    }                                                                                \
    void shmem_ctx_##N##_put_nbi(shmem_ctx_t ctx, T *dest, const T *source,          \
                                 size_t nelems, int pe) {                            \
        put_core(ctx, dest, source, nelems * sizeof(T), pe, 0, __func__);            \
    }                                                                                \
    void shmem_##N##_put_nbi(T *dest, const T *source, size_t nelems, int pe) {      \
        put_core(&sym__ctx_default, dest, source, nelems * sizeof(T), pe, 0, __func__); \
    }                                                                                \
    void shmem_ctx_##N##_get(shmem_ctx_t ctx, T *dest, const T *source, size_t nelems, \
                             int pe) {                                               \
        get_core(ctx, dest, source, nelems * sizeof(T), pe, 1, __func__);            \
    }                                                                                \
    void shmem_##N##_get(T *dest, const T *source, size_t nelems, int pe) {          \
        get_core(&sym__ctx_default, dest, source, nelems * sizeof(T), pe, 1, __func__); \
    }                                                                                \
    void shmem_ctx_##N##_get_nbi(shmem_ctx_t ctx, T *dest, const T *source,          \
                                 size_t nelems, int pe) {                            \
        get_core(ctx, dest, source, nelems * sizeof(T), pe, 0, __func__);            \
    }                                                                                \
    void shmem_##N##_get_nbi(T *dest, const T *source, size_t nelems, int pe) {      \
        get_core(&sym__ctx_default, dest, source, nelems * sizeof(T), pe, 0, __func__); \
    }                                                                                \
    void shmem_ctx_##N##_p(shmem_ctx_t ctx, T *dest, T value, int pe) {              \
        put_core(ctx, dest, &value, sizeof(T), pe, 1, __func__);                     \
    }                                                                                \
    void shmem_##N##_p(T *dest, T value, int pe) {                                   \
        put_core(&sym__ctx_default, dest, &value, sizeof(T), pe, 1, __func__);       \
    }                                                                                \
    T shmem_ctx_##N##_g(shmem_ctx_t ctx, const T *source, int pe) {                  \
        T v;                                                                         \
        get_core(ctx, &v, source, sizeof(T), pe, 1, __func__);                       \
        return v;                                                                    \
    }                                                                                \
    T shmem_##N##_g(const T *source, int pe) {                                       \
        T v;                                                                         \
        get_core(&sym__ctx_default, &v, source, sizeof(T), pe, 1, __func__);         \
        return v;                                                                    \
    }                                                                                \
    void shmem_ctx_##N##_iput(shmem_ctx_t ctx, T *dest, const T *source, ptrdiff_t dst, \
                              ptrdiff_t sst, size_t nelems, int pe) {                \
        iput_core(ctx, dest, source, dst, sst, nelems, sizeof(T), pe, __func__);     \
    }                                                                                \
    void shmem_##N##_iput(T *dest, const T *source, ptrdiff_t dst, ptrdiff_t sst,    \
                          size_t nelems, int pe) {                                   \
        iput_core(&sym__ctx_default, dest, source, dst, sst, nelems, sizeof(T), pe, __func__); \
    }                                                                                \
    void shmem_ctx_##N##_iget(shmem_ctx_t ctx, T *dest, const T *source, ptrdiff_t dst, \
                              ptrdiff_t sst, size_t nelems, int pe) {                \
        iget_core(ctx, dest, source, dst, sst, nelems, sizeof(T), pe, __func__);     \
    }                                                                                \
    void shmem_##N##_iget(T *dest, const T *source, ptrdiff_t dst, ptrdiff_t sst,    \
                          size_t nelems, int pe) {                                   \
        iget_core(&sym__ctx_default, dest, source, dst, sst, nelems, sizeof(T), pe, __func__); \
    }                                                                                \
    void shmem_ctx_##N##_put_signal(shmem_ctx_t ctx, T *dest, const T *source,       \
                                    size_t nelems, uint64_t *sig_addr, uint64_t signal, \
                                    int sig_op, int pe) {                            \
        put_signal_core(ctx, dest, source, nelems * sizeof(T), sig_addr, signal, sig_op, \
                        pe, 1, __func__);                                            \
    }                                                                                \
    void shmem_##N##_put_signal(T *dest, const T *source, size_t nelems,             \
                                uint64_t *sig_addr, uint64_t signal, int sig_op, int pe) { \
        put_signal_core(&sym__ctx_default, dest, source, nelems * sizeof(T), sig_addr,   \
                        signal, sig_op, pe, 1, __func__);                            \
    }                                                                                \
    void shmem_ctx_##N##_put_signal_nbi(shmem_ctx_t ctx, T *dest, const T *source,   \
                                        size_t nelems, uint64_t *sig_addr,           \
                                        uint64_t signal, int sig_op, int pe) {       \
        put_signal_core(ctx, dest, source, nelems * sizeof(T), sig_addr, signal, sig_op, \
                        pe, 0, __func__);                                            \
    }                                                                                \
    void shmem_##N##_put_signal_nbi(T *dest, const T *source, size_t nelems,         \
                                    uint64_t *sig_addr, uint64_t signal, int sig_op,  \
                                    int pe) {                                        \
        put_signal_core(&sym__ctx_default, dest, source, nelems * sizeof(T), sig_addr,   \
                        signal, sig_op, pe, 0, __func__);                            \
    }
SYMI_RMA_TYPES(DEF_RMA)

/* Sized forms: element size S bits. */
#define DEF_SIZED(S)                                                                 \
    void shmem_ctx_put##S(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, \
                          int pe) {                                                  \
        put_core(ctx, dest, source, nelems * (S / 8), pe, 1, __func__);              \
    }                                                                                \
    void shmem_put##S(void *dest, const void *source, size_t nelems, int pe) {       \
        put_core(&sym__ctx_default, dest, source, nelems * (S / 8), pe, 1, __func__); \
    }                                                                                \
    void shmem_ctx_put##S##_nbi(shmem_ctx_t ctx, void *dest, const void *source,     \
                                size_t nelems, int pe) {                             \
        put_core(ctx, dest, source, nelems * (S / 8), pe, 0, __func__);              \
    }                                                                                \
    void shmem_put##S##_nbi(void *dest, const void *source, size_t nelems, int pe) { \
        put_core(&sym__ctx_default, dest, source, nelems * (S / 8), pe, 0, __func__); \
    }                                                                                \
    void shmem_ctx_get##S(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, \
                          int pe) {                                                  \
        get_core(ctx, dest, source, nelems * (S / 8), pe, 1, __func__);              \
    }                                                                                \
    void shmem_get##S(void *dest, const void *source, size_t nelems, int pe) {       \
        get_core(&sym__ctx_default, dest, source, nelems * (S / 8), pe, 1, __func__); \
    }                                                                                \
    void shmem_ctx_get##S##_nbi(shmem_ctx_t ctx, void *dest, const void *source,     \
                                size_t nelems, int pe) {                             \
        get_core(ctx, dest, source, nelems * (S / 8), pe, 0, __func__);              \
    }                                                                                \
    void shmem_get##S##_nbi(void *dest, const void *source, size_t nelems, int pe) { \
        get_core(&sym__ctx_default, dest, source, nelems * (S / 8), pe, 0, __func__); \
    }                                                                                \
    void shmem_ctx_iput##S(shmem_ctx_t ctx, void *dest, const void *source,          \
                           ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe) {    \
        iput_core(ctx, dest, source, dst, sst, nelems, S / 8, pe, __func__);         \
    }                                                                                \
    void shmem_iput##S(void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, \
                       size_t nelems, int pe) {                                      \
        iput_core(&sym__ctx_default, dest, source, dst, sst, nelems, S / 8, pe, __func__); \
    }                                                                                \
    void shmem_ctx_iget##S(shmem_ctx_t ctx, void *dest, const void *source,          \
                           ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe) {    \
        iget_core(ctx, dest, source, dst, sst, nelems, S / 8, pe, __func__);         \
    }                                                                                \
    void shmem_iget##S(void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, \
                       size_t nelems, int pe) {                                      \
        iget_core(&sym__ctx_default, dest, source, dst, sst, nelems, S / 8, pe, __func__); \
    }                                                                                \
    void shmem_ctx_put##S##_signal(shmem_ctx_t ctx, void *dest, const void *source,  \
                                   size_t nelems, uint64_t *sig_addr, uint64_t signal, \
                                   int sig_op, int pe) {                             \
        put_signal_core(ctx, dest, source, nelems * (S / 8), sig_addr, signal, sig_op, pe, \
                        1, __func__);                                                \
    }                                                                                \
    void shmem_put##S##_signal(void *dest, const void *source, size_t nelems,        \
                               uint64_t *sig_addr, uint64_t signal, int sig_op, int pe) { \
        put_signal_core(&sym__ctx_default, dest, source, nelems * (S / 8), sig_addr,     \
                        signal, sig_op, pe, 1, __func__);                            \
    }                                                                                \
    void shmem_ctx_put##S##_signal_nbi(shmem_ctx_t ctx, void *dest, const void *source, \
                                       size_t nelems, uint64_t *sig_addr,            \
                                       uint64_t signal, int sig_op, int pe) {        \
        put_signal_core(ctx, dest, source, nelems * (S / 8), sig_addr, signal, sig_op, pe, \
                        0, __func__);                                                \
    }                                                                                \
    void shmem_put##S##_signal_nbi(void *dest, const void *source, size_t nelems,    \
                                   uint64_t *sig_addr, uint64_t signal, int sig_op,   \
                                   int pe) {                                         \
        put_signal_core(&sym__ctx_default, dest, source, nelems * (S / 8), sig_addr,     \
                        signal, sig_op, pe, 0, __func__);                            \
    }
SYMI_SIZES(DEF_SIZED)

/* ---- untyped ---- */

void shmem_ctx_putmem(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe) {
    put_core(ctx, dest, source, nelems, pe, 1, __func__);
}
void shmem_putmem(void *dest, const void *source, size_t nelems, int pe) {
    put_core(&sym__ctx_default, dest, source, nelems, pe, 1, __func__);
}
void shmem_ctx_putmem_nbi(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems,
                          int pe) {
    put_core(ctx, dest, source, nelems, pe, 0, __func__);
}
void shmem_putmem_nbi(void *dest, const void *source, size_t nelems, int pe) {
    put_core(&sym__ctx_default, dest, source, nelems, pe, 0, __func__);
}
void shmem_ctx_getmem(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe) {
    get_core(ctx, dest, source, nelems, pe, 1, __func__);
}
void shmem_getmem(void *dest, const void *source, size_t nelems, int pe) {
    get_core(&sym__ctx_default, dest, source, nelems, pe, 1, __func__);
}
void shmem_ctx_getmem_nbi(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems,
                          int pe) {
    get_core(ctx, dest, source, nelems, pe, 0, __func__);
}
void shmem_getmem_nbi(void *dest, const void *source, size_t nelems, int pe) {
    get_core(&sym__ctx_default, dest, source, nelems, pe, 0, __func__);
}
void shmem_ctx_putmem_signal(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems,
                             uint64_t *sig_addr, uint64_t signal, int sig_op, int pe) {
    put_signal_core(ctx, dest, source, nelems, sig_addr, signal, sig_op, pe, 1, __func__);
}
void shmem_putmem_signal(void *dest, const void *source, size_t nelems, uint64_t *sig_addr,
                         uint64_t signal, int sig_op, int pe) {
    put_signal_core(&sym__ctx_default, dest, source, nelems, sig_addr, signal, sig_op, pe, 1,
                    __func__);
}
void shmem_ctx_putmem_signal_nbi(shmem_ctx_t ctx, void *dest, const void *source,
                                 size_t nelems, uint64_t *sig_addr, uint64_t signal,
                                 int sig_op, int pe) {
    put_signal_core(ctx, dest, source, nelems, sig_addr, signal, sig_op, pe, 0, __func__);
}
void shmem_putmem_signal_nbi(void *dest, const void *source, size_t nelems, uint64_t *sig_addr,
                             uint64_t signal, int sig_op, int pe) {
    put_signal_core(&sym__ctx_default, dest, source, nelems, sig_addr, signal, sig_op, pe, 0,
                    __func__);
}

/* ---- signals ---- */

uint64_t shmem_signal_fetch(const uint64_t *sig_addr) {
    SYM_REQUIRE_INIT("shmem_signal_fetch");
    return __atomic_load_n(sig_addr, __ATOMIC_ACQUIRE);
}

/* ---- ordering ---- */

void shmem_ctx_fence(shmem_ctx_t ctx) {
    SYM_REQUIRE_INIT("shmem_ctx_fence");
    if (ctx != SHMEM_CTX_INVALID) sym__ctx_fence(ctx);
}
void shmem_fence(void) {
    SYM_REQUIRE_INIT("shmem_fence");
    sym__ctx_fence(&sym__ctx_default);
}
void shmem_ctx_quiet(shmem_ctx_t ctx) {
    SYM_REQUIRE_INIT("shmem_ctx_quiet");
    if (ctx != SHMEM_CTX_INVALID) sym__ctx_quiet(ctx);
}
void shmem_quiet(void) {
    SYM_REQUIRE_INIT("shmem_quiet");
    sym__ctx_quiet(&sym__ctx_default);
}

/* ---- cache management: nothing to do on cache-coherent machines ---- */

void shmem_clear_cache_inv(void) {}
void shmem_set_cache_inv(void) {}
void shmem_clear_cache_line_inv(void *dest) { (void)dest; }
void shmem_set_cache_line_inv(void *dest) { (void)dest; }
void shmem_udcflush(void) {}
void shmem_udcflush_line(void *dest) { (void)dest; }
