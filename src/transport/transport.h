/*
 * transport.h — the map of symmetric memory and how each peer is reached.
 *
 * Every PE owns two symmetric segments: its symmetric heap and its global and
 * static data. A symmetric address is (segment, offset); the same offset names
 * the same object on every PE. This file is the one place that turns a local
 * symmetric address into the address of the same object on another PE:
 *
 *   - a peer on this host (and the PE itself) has both segments mapped here, so
 *     its address is its mapping's base plus the offset: shared memory, no call;
 *   - a peer on another host is reached through the fabric (ofi), behind the
 *     small ops table at the end, which takes the local address and the PE.
 */
#ifndef SYM_TRANSPORT_H
#define SYM_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>

#include "../util/util.h"
#include "../bootstrap/bootstrap.h"

enum { SYM_SEG_HEAP = 0, SYM_SEG_DATA = 1, SYM_SEG_COUNT = 2 };

typedef struct {
    char *base;  /* this PE's segment */
    size_t size; /* identical on every PE */
} sym_seg_t;

typedef struct {
    /* The peer's segments as mapped in this process; NULL when the peer is on
     * another host. For this PE they equal sym__world.seg[*].base. */
    char *seg[SYM_SEG_COUNT];
    int host;       /* index of the peer's host, 0 .. n_hosts-1 */
    int local_rank; /* rank among the PEs of its host */
    int pid;        /* its process id, for a peer on this host */
} sym_peer_t;

typedef struct {
    int me, npes;
    sym_seg_t seg[SYM_SEG_COUNT];
    sym_peer_t *peer; /* npes entries */
    int n_hosts;
    int n_local;      /* PEs on this host */
    int *local_pes;   /* their PE numbers, in rank order */
} sym_world_t;

extern sym_world_t sym__world;

/* Which segment holds addr, with its offset; -1 when addr is not symmetric. */
static inline int sym__seg_of(const void *addr, size_t *off) {
    for (int s = 0; s < SYM_SEG_COUNT; s++) {
        uintptr_t o = (uintptr_t)addr - (uintptr_t)sym__world.seg[s].base;
        if (o < sym__world.seg[s].size) {
            *off = (size_t)o;
            return s;
        }
    }
    return -1;
}

/* The address of addr's object on `pe`, when `pe` is mapped here (same host);
 * NULL when addr is not symmetric or `pe` is remote. Inline: this is the whole
 * cost of a same-host put beyond the copy. */
static inline void *sym__peer_addr(const void *addr, int pe) {
    const sym_peer_t *p = &sym__world.peer[pe];
    uintptr_t o = (uintptr_t)addr - (uintptr_t)sym__world.seg[SYM_SEG_HEAP].base;
    if (SYM_LIKELY(o < sym__world.seg[SYM_SEG_HEAP].size))
        return p->seg[SYM_SEG_HEAP] ? p->seg[SYM_SEG_HEAP] + o : NULL;
    o = (uintptr_t)addr - (uintptr_t)sym__world.seg[SYM_SEG_DATA].base;
    if (o < sym__world.seg[SYM_SEG_DATA].size)
        return p->seg[SYM_SEG_DATA] ? p->seg[SYM_SEG_DATA] + o : NULL;
    return NULL;
}

static inline int sym__is_symmetric(const void *addr, size_t len) {
    size_t off;
    int s = sym__seg_of(addr, &off);
    return s >= 0 && len <= sym__world.seg[s].size - off;
}

static inline int sym__pe_is_local(int pe) { return sym__world.peer[pe].seg[SYM_SEG_HEAP] != NULL; }

/* ---- same-host segments (shm.c) ---- */

/* Create this PE's segments: a heap of `heap_size` bytes whose byte `align_off`
 * falls on a multiple of `heap_align`, and the program's global and static data
 * moved onto shareable memory. */
void sym__shm_create_segments(size_t heap_size, size_t heap_align, size_t align_off);
/* What a peer on this host needs to map our segments (exchanged at init). */
typedef struct {
    int32_t pid;
    int32_t fd[SYM_SEG_COUNT];
} sym_shm_handle_t;
void sym__shm_handle(sym_shm_handle_t *h);
/* Map the segments of local peer `pe` described by `h`. Fatal with a clear
 * message if the peer's memory cannot be opened. */
void sym__shm_map_peer(int pe, const sym_shm_handle_t *h);
/* Close the file handles once every local peer has mapped (keeps nothing a
 * stranger could open). */
void sym__shm_close_handles(void);
void sym__shm_unmap_all(void);

/* ---- remote peers (ofi) ---- */

/* Atomic operations a remote transport must offer; same-host atomics are CPU
 * atomics (sym__cpu_amo) and never reach this table. */
typedef enum {
    SYM_AMO_FETCH,
    SYM_AMO_SET,
    SYM_AMO_SWAP,
    SYM_AMO_CSWAP,
    SYM_AMO_ADD,
    SYM_AMO_AND,
    SYM_AMO_OR,
    SYM_AMO_XOR,
} sym_amo_op_t;

/* The switch of sym__cpu_amo for one word width: q points to the word, v and
 * c are the operand and compare value of its type (c is overwritten by CSWAP). */
#define SYM_CPU_AMO_SWITCH(op, q, v, c)                                              \
    switch (op) {                                                                    \
    case SYM_AMO_FETCH: return __atomic_load_n(q, __ATOMIC_ACQUIRE);                 \
    case SYM_AMO_SET: __atomic_store_n(q, v, __ATOMIC_RELEASE); return 0;            \
    case SYM_AMO_SWAP: return __atomic_exchange_n(q, v, __ATOMIC_SEQ_CST);           \
    case SYM_AMO_CSWAP:                                                              \
        __atomic_compare_exchange_n(q, &(c), v, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST); \
        return c;                                                                    \
    case SYM_AMO_ADD: return __atomic_fetch_add(q, v, __ATOMIC_SEQ_CST);             \
    case SYM_AMO_AND: return __atomic_fetch_and(q, v, __ATOMIC_SEQ_CST);             \
    case SYM_AMO_OR: return __atomic_fetch_or(q, v, __ATOMIC_SEQ_CST);               \
    case SYM_AMO_XOR: return __atomic_fetch_xor(q, v, __ATOMIC_SEQ_CST);             \
    }

/* `op` on the `size`-byte (4 or 8) word at p with CPU atomics; returns the old
 * value's bits (0 for SET). Same-host atomics, and a fabric's active-message
 * atomics on their target. */
static inline uint64_t sym__cpu_amo(sym_amo_op_t op, void *p, uint64_t v, uint64_t cmp,
                                    size_t size) {
    if (size == 4) {
        uint32_t *q = p, v32 = (uint32_t)v, c32 = (uint32_t)cmp;
        SYM_CPU_AMO_SWITCH(op, q, v32, c32)
        return 0;
    }
    uint64_t *q = p;
    SYM_CPU_AMO_SWITCH(op, q, v, cmp)
    return 0;
}
#undef SYM_CPU_AMO_SWITCH

typedef struct sym_remote_ops {
    const char *name;
    /* Per-context state: a context's quiet completes only its own operations. */
    void *(*ctx_create)(long options);
    void (*ctx_destroy)(void *ctx);
    void (*put)(void *ctx, void *dest, const void *src, size_t len, int pe, int blocking);
    void (*get)(void *ctx, void *dest, const void *src, size_t len, int pe, int blocking);
    /* Operate on the `size`-byte integer (4 or 8) at dest on pe. `operand` and
     * `compare` hold the value bits; the old value goes to *result when non-NULL.
     * With `blocking` == 0 the result arrives by the next quiet. */
    void (*amo)(void *ctx, sym_amo_op_t op, void *dest, const void *operand,
                const void *compare, void *result, size_t size, int pe, int blocking);
    /* Data then a 64-bit signal update, the signal never visible first; sig_op is
     * 0 for set, 1 for add (the values of SHMEM_SIGNAL_SET / _ADD). */
    void (*put_signal)(void *ctx, void *dest, const void *src, size_t len, uint64_t *sig,
                       uint64_t value, int sig_op, int pe, int blocking);
    void (*fence)(void *ctx);
    void (*quiet)(void *ctx);
} sym_remote_ops_t;

/* NULL when every peer is on this host. */
extern const sym_remote_ops_t *sym__remote;

/* Set when atomics must all go through the fabric, the PE's own included: the
 * provider's atomics are used and they are not atomic with CPU atomics. */
extern int sym__amo_through_fabric;

/* The fabric's settings, read at shmem_init whatever the job's shape (a bad
 * value is named on one host as on many): SYMTRAIN_WAIT, SYMTRAIN_OFI_ATOMICS. */
typedef enum { SYM_WAIT_AUTO, SYM_WAIT_POLL, SYM_WAIT_SLEEP } sym_wait_mode_t;
typedef enum { SYM_ATOMICS_AUTO, SYM_ATOMICS_FABRIC, SYM_ATOMICS_AM } sym_atomics_mode_t;
typedef struct {
    sym_wait_mode_t wait;
    sym_atomics_mode_t atomics;
} sym_fabric_settings_t;
extern sym_fabric_settings_t sym__fabric_settings;

#ifdef SYM_HAVE_OFI
struct sym_boot;
/* SYMTRAIN_OFI_PROVIDER on a job that stays on one host: fatal unless
 * libfabric has that provider (the fabric itself is not opened). */
void sym__ofi_check_provider(const char *prov);
/* Start the fabric transport (a collective over the bootstrap); returns its ops
 * and the default context's state. */
const sym_remote_ops_t *sym__ofi_init(struct sym_boot *boot, void **default_ctx);
void sym__ofi_fini(struct sym_boot *boot);
#endif

#endif
