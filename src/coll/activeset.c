/*
 * activeset.c — the collectives deprecated in OpenSHMEM 1.5 but still defined
 * and widely used: shmem_barrier, broadcast/collect/fcollect/alltoall(s) 32/64
 * and every shmem_TYPE_OP_to_all, on an "active set" (PE_start,
 * logPE_stride, PE_size) with a user pSync array.
 *
 * The active set is no team: only its members call, so nothing can be agreed
 * in advance. Synchronisation lives in pSync itself, used as counting
 * semaphores: a member signals a partner by adding 1 to the partner's
 * pSync[r] (which rests at SHMEM_SYNC_VALUE), the partner waits until it rises
 * above SHMEM_SYNC_VALUE and takes the 1 back. So pSync is at
 * SHMEM_SYNC_VALUE again when nothing is in flight, as the standard requires,
 * and an early signal for the next call is simply counted. Data moves by
 * reading peers' symmetric source (shared memory, or fabric gets).
 */
#include <stdlib.h>
#include <string.h>

#include "coll.h"

#define COUNT_WORD (SHMEM_SYNC_SIZE - 1) /* collect publishes its element count here */

typedef struct {
    int start, stride, size, me;
} aset_t;

/* Arguments are checked before the first synchronisation, so a bad one is
 * reported at once by the PE that passed it, not as a hang or as an error in
 * some other call. */
static void need_symmetric(const char *fn, const char *what, const void *addr, size_t len) {
    if (len && !sym__is_symmetric(addr, len))
        sym__fatal(fn, "%s (%p, %zu bytes) is not symmetric: it must be a global or static "
                       "variable or come from shmem_malloc, and lie wholly inside it",
                   what, addr, len);
}

static void need_root(const char *fn, const aset_t *a, int root) {
    if (root < 0 || root >= a->size)
        sym__fatal(fn, "PE_root %d is out of range: it is an index into the active set, which "
                       "has %d PE%s (0 .. %d)",
                   root, a->size, a->size == 1 ? "" : "s", a->size - 1);
}

static aset_t aset(const char *fn, int start, int logstride, int size, long *pSync) {
    SYM_REQUIRE_INIT(fn);
    aset_t a = {start, 1 << (logstride >= 0 && logstride <= 30 ? logstride : 0), size, -1};
    int np = sym__world.npes;
    if (size < 1 || start < 0 || logstride < 0 || logstride > 30 ||
        (long)start + (long)a.stride * (size - 1) >= np)
        sym__fatal(fn,
                   "the active set (PE_start %d, logPE_stride %d, PE_size %d) does not fit in "
                   "%d PEs",
                   start, logstride, size, np);
    int d = sym__world.me - start;
    if (d < 0 || d % a.stride || d / a.stride >= size)
        sym__fatal(fn, "PE %d is not in the active set (PE_start %d, logPE_stride %d, PE_size %d): "
                       "only the set's PEs may call",
                   sym__world.me, start, logstride, size);
    a.me = d / a.stride;
    need_symmetric(fn, "pSync", pSync, SHMEM_SYNC_SIZE * sizeof *pSync);
    return a;
}

static inline int pe_of(const aset_t *a, int i) { return a->start + i * a->stride; }

/* Dissemination barrier over the active set on pSync[0 .. rounds). */
static void aset_sync(const aset_t *a, long *pSync) {
    for (int r = 0, d = 1; d < a->size; r++, d <<= 1) {
        shmem_long_atomic_add(&pSync[r], 1, pe_of(a, (a->me + d) % a->size));
        SYM_WAIT_UNTIL(__atomic_load_n(&pSync[r], __ATOMIC_ACQUIRE) > SHMEM_SYNC_VALUE);
        __atomic_fetch_sub(&pSync[r], 1, __ATOMIC_ACQ_REL);
    }
}

/* Copy from a member's symmetric memory. */
static void aset_get(const aset_t *a, int i, void *dst, const void *src, size_t len) {
    if (len) shmem_getmem(dst, src, len, pe_of(a, i));
}

void shmem_barrier(int PE_start, int logPE_stride, int PE_size, long *pSync) {
    aset_t a = aset(__func__, PE_start, logPE_stride, PE_size, pSync);
    shmem_quiet();
    aset_sync(&a, pSync);
}

void shmem_sync_deprecated(int PE_start, int logPE_stride, int PE_size, long *pSync) {
    aset_t a = aset("shmem_sync", PE_start, logPE_stride, PE_size, pSync);
    aset_sync(&a, pSync);
}

/* ---- data movement ---- */

static void broadcast(const char *fn, void *dest, const void *source, size_t bytes, int root,
                      int start, int logstride, int size, long *pSync) {
    aset_t a = aset(fn, start, logstride, size, pSync);
    need_root(fn, &a, root);
    need_symmetric(fn, "source", source, bytes);
    aset_sync(&a, pSync);
    if (a.me != root) aset_get(&a, root, dest, source, bytes); /* root's dest is untouched */
    aset_sync(&a, pSync);
}

static void fcollect(const char *fn, void *dest, const void *source, size_t bytes, int start,
                     int logstride, int size, long *pSync) {
    aset_t a = aset(fn, start, logstride, size, pSync);
    need_symmetric(fn, "source", source, bytes);
    aset_sync(&a, pSync);
    for (int i = 0; i < size; i++) aset_get(&a, i, (char *)dest + (size_t)i * bytes, source, bytes);
    aset_sync(&a, pSync);
}

static void collect(const char *fn, void *dest, const void *source, size_t bytes, size_t esize,
                    int start, int logstride, int size, long *pSync) {
    aset_t a = aset(fn, start, logstride, size, pSync);
    need_symmetric(fn, "source", source, bytes);
    pSync[COUNT_WORD] = (long)bytes;
    aset_sync(&a, pSync);
    size_t off = 0;
    for (int i = 0; i < size; i++) {
        long b = shmem_long_g(&pSync[COUNT_WORD], pe_of(&a, i));
        aset_get(&a, i, (char *)dest + off, source, (size_t)b);
        off += (size_t)b;
    }
    (void)esize;
    aset_sync(&a, pSync);
    pSync[COUNT_WORD] = SHMEM_SYNC_VALUE;
}

static void alltoalls(const char *fn, void *dest, const void *source, ptrdiff_t dst,
                      ptrdiff_t sst, size_t nelems, size_t esize, int start, int logstride,
                      int size, long *pSync) {
    aset_t a = aset(fn, start, logstride, size, pSync);
    size_t span = (size_t)size * nelems;
    if (dst < 1 || sst < 1)
        sym__fatal(fn, "strides must be at least 1 (dst %td, sst %td)", dst, sst);
    if (span) need_symmetric(fn, "source", source, ((span - 1) * (size_t)sst + 1) * esize);
    aset_sync(&a, pSync);
    if (dst == 1 && sst == 1) { /* alltoall32/64: one block from each member */
        size_t blk = nelems * esize;
        const char *mine = (const char *)source + (size_t)a.me * blk;
        for (int i = 0; i < size; i++) aset_get(&a, i, (char *)dest + (size_t)i * blk, mine, blk);
        aset_sync(&a, pSync);
        return;
    }
    for (int i = 0; i < size; i++)
        for (size_t e = 0; e < nelems; e++)
            aset_get(&a, i, (char *)dest + (size_t)dst * ((size_t)i * nelems + e) * esize,
                     (const char *)source + (size_t)sst * ((size_t)a.me * nelems + e) * esize,
                     esize);
    aset_sync(&a, pSync);
}

#define DEF_ACTIVE_SET(S)                                                            \
    void shmem_broadcast##S(void *dest, const void *source, size_t nelems, int PE_root, \
                            int PE_start, int logPE_stride, int PE_size, long *pSync) { \
        broadcast(__func__, dest, source, nelems * (S / 8), PE_root, PE_start, logPE_stride, \
                  PE_size, pSync);                                                   \
    }                                                                                \
    void shmem_collect##S(void *dest, const void *source, size_t nelems, int PE_start, \
                          int logPE_stride, int PE_size, long *pSync) {              \
        collect(__func__, dest, source, nelems * (S / 8), S / 8, PE_start, logPE_stride, \
                PE_size, pSync);                                                     \
    }                                                                                \
    void shmem_fcollect##S(void *dest, const void *source, size_t nelems, int PE_start, \
                           int logPE_stride, int PE_size, long *pSync) {             \
        fcollect(__func__, dest, source, nelems * (S / 8), PE_start, logPE_stride, PE_size, \
                 pSync);                                                             \
    }                                                                                \
    void shmem_alltoall##S(void *dest, const void *source, size_t nelems, int PE_start, \
                           int logPE_stride, int PE_size, long *pSync) {             \
        alltoalls(__func__, dest, source, 1, 1, nelems, S / 8, PE_start, logPE_stride, \
                  PE_size, pSync);                                                   \
    }                                                                                \
    void shmem_alltoalls##S(void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, \
                            size_t nelems, int PE_start, int logPE_stride, int PE_size, \
                            long *pSync) {                                           \
        alltoalls(__func__, dest, source, dst, sst, nelems, S / 8, PE_start, logPE_stride, \
                  PE_size, pSync);                                                   \
    }
DEF_ACTIVE_SET(32)
DEF_ACTIVE_SET(64)

/* ---- reductions: each member reduces everything into a private buffer, in
 * member order (so all agree bit for bit), then the results are stored after
 * a second sync, since dest may be source. pWrk is not needed. ---- */

static void to_all(const char *fn, void *dest, const void *source, int nreduce,
                   sym_dtype_t dtype, sym_op_t op, int start, int logstride, int size,
                   long *pSync) {
    aset_t a = aset(fn, start, logstride, size, pSync);
    if (nreduce < 0) sym__fatal(fn, "nreduce %d is negative", nreduce);
    sym_redop_t r;
    sym__redop(&r, dtype, op, 0);
    size_t bytes = (size_t)nreduce * r.esize;
    need_symmetric(fn, "source", source, bytes);
    char *acc = malloc(bytes ? bytes : 1), *in = malloc(bytes ? bytes : 1);
    if (!acc || !in) sym__fatal(fn, "out of memory");
    aset_sync(&a, pSync);
    for (int i = 0; i < size; i++) {
        const void *src = i == a.me ? source : sym__peer_addr(source, pe_of(&a, i));
        if (!src) {
            aset_get(&a, i, in, source, bytes);
            src = in;
        }
        if (i == 0) {
            memcpy(acc, src, bytes);
        } else {
            const void *two[2] = {acc, src};
            sym__reduce1(&r, acc, two, 2, (size_t)nreduce, 0);
        }
    }
    aset_sync(&a, pSync);
    if (bytes) memcpy(dest, acc, bytes); /* dest may be NULL for zero elements */
    free(acc);
    free(in);
}

#define TA_short SYM_I16
#define TA_int SYM_I32
#define TA_long (sizeof(long) == 8 ? SYM_I64 : SYM_I32)
#define TA_longlong SYM_I64
#define TA_float SYM_F32
#define TA_double SYM_F64
#define TA_longdouble SYM_LDBL
#define TA_complexf SYM_C32
#define TA_complexd SYM_C64
#define TAOP_and SYM_AND
#define TAOP_or SYM_OR
#define TAOP_xor SYM_XOR
#define TAOP_max SYM_MAX
#define TAOP_min SYM_MIN
#define TAOP_sum SYM_SUM
#define TAOP_prod SYM_PROD

#define DEF_TOALL(T, N, OP)                                                          \
    void shmem_##N##_##OP##_to_all(T *dest, const T *source, int nreduce, int PE_start, \
                                   int logPE_stride, int PE_size, T *pWrk, long *pSync) { \
        (void)pWrk;                                                                  \
        to_all(__func__, dest, source, nreduce, TA_##N, TAOP_##OP, PE_start, logPE_stride, \
               PE_size, pSync);                                                      \
    }
#define DEF_TOALL_BIT(T, N) DEF_TOALL(T, N, and) DEF_TOALL(T, N, or) DEF_TOALL(T, N, xor)
#define DEF_TOALL_MINMAX(T, N) DEF_TOALL(T, N, max) DEF_TOALL(T, N, min)
#define DEF_TOALL_ARITH(T, N) DEF_TOALL(T, N, sum) DEF_TOALL(T, N, prod)
SYMI_TOALL_BIT_TYPES(DEF_TOALL_BIT)
SYMI_TOALL_MINMAX_TYPES(DEF_TOALL_MINMAX)
SYMI_TOALL_ARITH_TYPES(DEF_TOALL_ARITH)
