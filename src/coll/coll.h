/*
 * coll.h — the collectives layer's private interface: the reduction engine,
 * the synchronisation words collectives use inside a team's slot, and the
 * algorithms that both the OpenSHMEM collectives and the training collectives
 * (shmemx_*) are built from.
 */
#ifndef SYM_COLL_H
#define SYM_COLL_H

#include <shmemx.h>

#include "../shmem/runtime.h"

/* ---- the reduction engine (reduce.c) ---- */

typedef enum {
    SYM_I8, SYM_I16, SYM_I32, SYM_I64,
    SYM_U8, SYM_U16, SYM_U32, SYM_U64,
    SYM_F32, SYM_F64, SYM_LDBL,
    SYM_C32, SYM_C64, /* float _Complex, double _Complex */
    SYM_F16, SYM_BF16, /* stored as uint16_t, accumulated in fp32 */
    SYM_NTYPES
} sym_dtype_t;

typedef enum { SYM_SUM, SYM_PROD, SYM_MIN, SYM_MAX, SYM_AND, SYM_OR, SYM_XOR, SYM_NOPS } sym_op_t;

extern const size_t sym__dtype_size[SYM_NTYPES];

/* r[i] = in[0][i] op in[1][i] op ... op in[nin-1][i] for i < n, inputs taken in
 * that order (so every PE that reduces the same inputs gets the same bits);
 * then, when avg_n > 0, r[i] /= avg_n; r is stored to each of out[0..nout)
 * (a block at a time, so extra copies cost no extra pass). An output may be
 * one of the inputs. Half types are accumulated in fp32 and rounded once. */
typedef void (*sym_reduce_fn)(void *const *out, int nout, const void *const *in, int nin,
                              size_t n, int avg_n, int stream);
/* stream != 0: store with non-temporal writes, for outputs far larger than the
 * caches (saves the read-for-ownership of every output line). */

/* The kernel for (dtype, op), or NULL if the standard defines no such pair. */
sym_reduce_fn sym__reduce_kernel(sym_dtype_t dtype, sym_op_t op);

/* ---- a reduction request, as the algorithms see it ---- */

typedef struct {
    sym_dtype_t dtype;
    sym_op_t op;
    int avg; /* divide by the team size at the end */
    sym_reduce_fn fn;
    size_t esize;
} sym_redop_t;

int sym__redop(sym_redop_t *r, sym_dtype_t dtype, sym_op_t op, int avg);

/* The common case: one output. */
static inline void sym__reduce1(const sym_redop_t *r, void *out, const void *const *in, int nin,
                                size_t n, int avg_n) {
    void *o[1] = {out};
    r->fn(o, 1, in, nin, n, avg_n, 0);
}

/* ---- synchronisation words in a team's slot ---- */

/* Member words in the slot header: [0, M) team splits (team.c), then the
 * collectives' "ready" and "done" words, one per member, each holding the
 * last round that member finished that step of. Rounds only grow. */
#define SYM_COLL_MAX_MEMBERS 2048
#define SYM_COLL_READY SYM_COLL_MAX_MEMBERS
#define SYM_COLL_DONE (2 * SYM_COLL_MAX_MEMBERS)
_Static_assert(3 * SYM_COLL_MAX_MEMBERS <= SYM_SLOT_PEER_WORDS,
               "the member words of every step kind fit in a slot's header");

/* Tell every member (self included) that this PE reached `round` of step `word`. */
void sym__coll_signal_all(shmem_team_t t, int word, uint64_t round);
/* Tell one member. */
void sym__coll_signal(shmem_team_t t, int member, int word, uint64_t round);
/* Wait until every member has signalled `round` of step `word` here. */
void sym__coll_wait_all(shmem_team_t t, int word, uint64_t round);
void sym__coll_wait(shmem_team_t t, int member, int word, uint64_t round);
/* The team's next round of step `word`: signal it to every member and wait for
 * all of them; returns the round. */
uint64_t sym__coll_sync_all(shmem_team_t t, int word);

/* Begin a collective on t for API call `fn`. A team larger than the member
 * words allow is refused: warns, returns SHMEMX_EINVAL. Otherwise finishes this
 * PE's queued non-blocking collectives on t first, so collectives on a team run
 * one at a time and in call order, and returns 0. */
int sym__coll_enter(const char *fn, shmem_team_t t);

/* ---- scratch layout in a team's slot ---- */

#define SYM_COLL_INBOX_BYTES ((size_t)1 << 20)
#define SYM_COLL_STAGE_BYTES ((SYM_SLOT_SCRATCH - SYM_COLL_INBOX_BYTES) / 2)
static inline char *sym__coll_inbox(shmem_team_t t) { return sym__slot_scratch(t); }
static inline char *sym__coll_stage_in(shmem_team_t t) {
    return sym__slot_scratch(t) + SYM_COLL_INBOX_BYTES;
}
static inline char *sym__coll_stage_out(shmem_team_t t) {
    return sym__slot_scratch(t) + SYM_COLL_INBOX_BYTES + SYM_COLL_STAGE_BYTES;
}

/* ---- moving data ---- */

/* Copy len bytes from `src` on team member m (a symmetric address) into local
 * `dst`: a load through shared memory, or a fabric get. */
void sym__coll_get(shmem_team_t t, int m, void *dst, const void *src, size_t len);
/* Put `len` bytes into member m's copy of dst, then set m's word `word` for
 * this PE to `value`; the signal is never visible before the data. Non-blocking
 * (blocking = 0): src must stay unchanged until a later quiet. */
void sym__coll_put_signal(shmem_team_t t, int m, void *dst, const void *src, size_t len, int word,
                          uint64_t value, int blocking);
/* The address of symmetric `addr` on member m when mapped here, else NULL. */
static inline void *sym__coll_peer(shmem_team_t t, int m, const void *addr) {
    return sym__peer_addr(addr, t->pes[m]);
}
/* Are all members of t mapped here (same host)? */
int sym__coll_all_local(shmem_team_t t);

/* ---- algorithms (allreduce.c, gather.c) ----
 * Called after sym__coll_enter (or from inside a collective that was), so t
 * has at most SYM_COLL_MAX_MEMBERS members. */

/* All-reduce `count` elements; dest and source may each be symmetric or private
 * and may be the same buffer. `algo`: the caller's choice, read from
 * sym__allreduce_algo_forced() when the call (or request) was made, so every
 * member uses the one it was asked for; AUTO is the tuning table. */
int sym__allreduce(shmem_team_t t, void *dest, const void *source, size_t count,
                   const sym_redop_t *r, shmemx_algo_t algo);
int sym__reduce_scatter(shmem_team_t t, void *dest, const void *source, size_t count,
                        const sym_redop_t *r);
int sym__allgather(shmem_team_t t, void *dest, const void *source, size_t bytes);
int sym__broadcast(shmem_team_t t, void *dest, const void *source, size_t bytes, int root,
                   int root_copies);
int sym__allgatherv(shmem_team_t t, void *dest, const void *source, const size_t *bytes,
                    const size_t *displs);
int sym__alltoalls(shmem_team_t t, void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst,
                   size_t nelems, size_t esize);

/* One more all-reduce run by algorithm `algo` (SHMEMX_STATS_*: stats.c). */
void sym__coll_count(int algo);

/* The algorithm SYMTRAIN_ALLREDUCE_ALGO / shmemx_set_allreduce_algo chose
 * (AUTO: none); thread-safe. */
shmemx_algo_t sym__allreduce_algo_forced(void);

#endif
