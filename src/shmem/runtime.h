/*
 * runtime.h — state shared by the files of the OpenSHMEM layer: the runtime's
 * life cycle, argument checks every call makes, teams and contexts, and the
 * symmetric layout of the runtime's own memory.
 */
#ifndef SYM_RUNTIME_H
#define SYM_RUNTIME_H

#include <shmem.h>
#include <stdatomic.h>

#include "../bootstrap/bootstrap.h"
#include "../transport/transport.h"
#include "../util/util.h"

/* ---- life cycle ---- */

enum { SYM_RT_NEW = 0, SYM_RT_RUNNING = 1, SYM_RT_FINALIZED = 2 };

typedef struct {
    int state;
    int thread_level;
    sym_boot_t *boot;
    size_t heap_user_size; /* what SYMTRAIN_SYMMETRIC_SIZE asked for */
    size_t internal_size;  /* the runtime's part at the start of the heap segment */
    char hostname[64];
} sym_runtime_t;

extern sym_runtime_t sym__rt;

/* Every API call starts with this: calls before shmem_init (or after
 * shmem_finalize) end the program with a message naming the call. */
noreturn void sym__not_running(const char *fn);
#define SYM_REQUIRE_INIT(fn)                                                         \
    do {                                                                             \
        if (SYM_UNLIKELY(sym__rt.state != SYM_RT_RUNNING)) sym__not_running(fn);     \
    } while (0)

noreturn void sym__bad_pe(const char *fn, int pe, int npes);
noreturn void sym__bad_addr(const char *fn, const void *addr, int pe);

/* ---- teams ---- */

#define SYM_MAX_TEAMS 32
#define SYM_RESERVED_SLOTS 4 /* world, shared, and the runtime's host and leaders teams */
#define SYM_SLOT_SIZE ((size_t)4 << 20)    /* each team's symmetric working memory */
#define SYM_SLOT_HEADER ((size_t)64 << 10) /* sync words at the start of a slot */

/* The symmetric words at the start of a team's slot. Counters only grow: a
 * waiter compares with the number of events it expects, so no reset races. */
typedef struct {
    _Alignas(64) uint64_t barrier[64]; /* dissemination rounds */
    _Alignas(64) uint64_t psync[64];   /* free for the collectives' own counters */
    _Alignas(64) uint64_t peer[];      /* per-member words, up to the header's end */
} sym_slot_hdr_t;

#define SYM_SLOT_PEER_WORDS ((SYM_SLOT_HEADER - sizeof(sym_slot_hdr_t)) / sizeof(uint64_t))

struct symi_team {
    int size;       /* members */
    int me;         /* my index in the team */
    int *pes;       /* world PE of member i */
    int *index_of;  /* team index of world PE p, or -1: npes entries */
    int slot;       /* its slot in the runtime's part of the heap */
    uint64_t epoch; /* barriers this PE has completed on the team */
    shmem_team_config_t config;
    long config_mask;
    int n_ctx;      /* contexts created on it and not destroyed */
    uint64_t coll_round; /* the collectives' step counter (src/coll), equal on all members */
    int coll_cma;        /* can every member read every other's private memory
                          * (allreduce.c): 0 not found out yet, 1 yes, -1 no;
                          * found out together, so equal on all members */
};

struct symi_ctx {
    shmem_team_t team;
    long options;
    void *remote; /* the remote transport's per-context state */
    struct symi_ctx *prev, *next; /* the live contexts (ctx.c), for shmem_finalize */
};

/* Destroy the contexts the program did not (shmem_finalize, transport still up). */
void sym__ctx_fini_all(void);

extern struct symi_team sym__team_world, sym__team_shared;
/* The runtime's own: the PEs of this host, and the first PE of each host (a
 * team this PE belongs to only if it is first on its host). */
extern struct symi_team sym__team_host, sym__team_leaders;
extern struct symi_ctx sym__ctx_default;

/* This PE's slot of team t (symmetric: same offset on every member). */
static inline sym_slot_hdr_t *sym__slot(shmem_team_t t) {
    return (sym_slot_hdr_t *)(sym__world.seg[SYM_SEG_HEAP].base + (size_t)t->slot * SYM_SLOT_SIZE);
}
/* The working memory after the slot's header. */
static inline char *sym__slot_scratch(shmem_team_t t) {
    return (char *)sym__slot(t) + SYM_SLOT_HEADER;
}
#define SYM_SLOT_SCRATCH (SYM_SLOT_SIZE - SYM_SLOT_HEADER)

/* Check a team handle passed by the user. */
void sym__check_team(const char *fn, shmem_team_t t);
/* A synchronising call (sync, collective) given SHMEM_TEAM_INVALID: the
 * standard has it return non-zero and do nothing; since a program that ignores
 * that computes with garbage, say so the first time. Returns -1. */
int sym__invalid_team(const char *fn);
void sym__team_init_world(void);
void sym__team_fini_all(void);

/* ---- synchronisation used inside the runtime ---- */

/* Barrier over a team without a quiet first. */
void sym__team_barrier(shmem_team_t t);

/* 64-bit atomic add on a symmetric word of any PE (shm or remote). */
void sym__atomic_add_u64(uint64_t *dest, uint64_t value, int pe);
/* Wait until a local symmetric word reaches at least `value`. */
static inline void sym__wait_ge(const uint64_t *w, uint64_t value) {
    SYM_WAIT_UNTIL(__atomic_load_n(w, __ATOMIC_ACQUIRE) >= value);
}

/* ---- the collectives layer's non-blocking requests ---- */

/* Set by src/coll when its progress thread starts: waits until this PE's
 * queued non-blocking collectives have completed, and with stop != 0 then
 * ends and joins the thread. shmem_team_destroy and shmem_finalize call it
 * before freeing what the requests use (a hook: this layer sits below coll). */
extern void (*sym__coll_drain_hook)(int stop);

/* ---- heap ---- */

void sym__heap_init(void);
void sym__heap_fini(void);
/* Bytes of the user heap in blocks handed out now; any thread may ask. */
size_t sym__heap_in_use(void);

/* ---- counters (shmemx_stats) ----
 * Each thread counts its puts in its own block, so the hot path is two plain
 * stores to thread-local memory (no atomic read-modify-write, no shared cache
 * line); the first put of a thread links its block into the list a reader
 * sums, and a thread that ends folds its counts into the retired total. */
typedef struct sym_put_count {
    uint64_t puts, bytes;            /* written by the owning thread alone */
    int linked;
    struct sym_put_count *prev, *next;
} sym_put_count_t;

extern __thread sym_put_count_t sym__put_count __attribute__((tls_model("initial-exec")));
void sym__put_count_link(sym_put_count_t *c);
/* The puts and bytes of every thread, the ended ones too. */
void sym__put_count_sum(uint64_t *puts, uint64_t *bytes);

static inline void sym__count_put(size_t len) {
    sym_put_count_t *c = &sym__put_count;
    if (SYM_UNLIKELY(!c->linked)) sym__put_count_link(c);
    __atomic_store_n(&c->puts, c->puts + 1, __ATOMIC_RELAXED);
    __atomic_store_n(&c->bytes, c->bytes + len, __ATOMIC_RELAXED);
}

/* ---- contexts ---- */

/* The world PE a context's team-relative PE number names. */
static inline int sym__ctx_pe(shmem_ctx_t ctx, int pe, const char *fn) {
    shmem_team_t t = ctx->team;
    if (SYM_UNLIKELY((unsigned)pe >= (unsigned)t->size)) sym__bad_pe(fn, pe, t->size);
    return t->pes[pe];
}

/* The world PE of (ctx, pe), checked. The default context's team is the world. */
static inline int sym__world_pe(shmem_ctx_t ctx, int pe, const char *fn) {
    if (SYM_LIKELY(ctx == &sym__ctx_default)) {
        if (SYM_UNLIKELY((unsigned)pe >= (unsigned)sym__world.npes))
            sym__bad_pe(fn, pe, sym__world.npes);
        return pe;
    }
    if (SYM_UNLIKELY(ctx == SHMEM_CTX_INVALID))
        sym__fatal(fn, "the context is SHMEM_CTX_INVALID (did shmem_ctx_create fail?)");
    return sym__ctx_pe(ctx, pe, fn);
}

/* The peer's copy of [addr, addr+len) when the peer is mapped here, NULL for a
 * remote peer. An address that is not symmetric, or a range that runs off the
 * end of its segment, is fatal. */
static inline __attribute__((always_inline)) void *sym__peer_range(const void *addr, size_t len,
                                                                   int pe, const char *fn) {
    size_t off;
    int s = sym__seg_of(addr, &off);
    if (SYM_UNLIKELY(s < 0 || len > sym__world.seg[s].size - off)) sym__bad_addr(fn, addr, pe);
    char *base = sym__world.peer[pe].seg[s];
    return base ? base + off : NULL;
}

/* Ordering of operations on a context: same-host operations are complete when
 * they return, so only the remote transport has anything to wait for. */
static inline void sym__ctx_quiet(shmem_ctx_t ctx) {
    atomic_thread_fence(memory_order_seq_cst);
    if (sym__remote) sym__remote->quiet(ctx->remote);
}
static inline void sym__ctx_fence(shmem_ctx_t ctx) {
    atomic_thread_fence(memory_order_seq_cst);
    if (sym__remote) sym__remote->fence(ctx->remote);
}

#endif
