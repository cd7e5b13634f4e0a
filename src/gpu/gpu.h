/*
 * gpu.h — private to libsymgpu_nvshmem (the .cu files of src/gpu): the PE's
 * GPU state, the layout of symtrain's symmetric working memory, each team's
 * state, the argument block every collective kernel takes, and the launchers.
 *
 * Working memory (one nvshmem_malloc at init, zeroed, same offsets on every PE):
 *   scratch  SYM_GPU_MAXB regions of `region` bytes; block b of any kernel
 *            only ever touches region b (its own and its peers'), so a block
 *            count that changes from one collective to the next is harmless.
 *            Shared by every team: a peer writes into my region b, or my dest,
 *            only after my ACK shows I have started that very collective, so
 *            my earlier collectives, of any team, are complete (my stream runs
 *            one at a time).
 *   ll       one-shot lines: two areas of [block][epoch parity][sender]
 *            [SYM_GPU_LLCAP lines] of 16 bytes = 8 bytes of data + two copies
 *            of a 32-bit flag. Area 0 is the world's; area 1 is shared by every
 *            other team (see "one-shot credit" below).
 *   flags    SYM_GPU_MAXTEAMS areas of 64-bit handshake words (FLAG_* below),
 *            written by peers: one per team index (shmemx_team_index), so each
 *            team's counters only ever meet its own. A team's area is zeroed
 *            when the team is destroyed (team.cu), after every member's GPU is
 *            idle, before the index can be given to another team.
 *
 * Clocks: every block b of every team keeps two 64-bit counters in device
 * memory, advanced by the kernel itself (so a collective replayed from a CUDA
 * graph still gets new values): its epoch, the collectives of that team it
 * has taken part in, and its step, the last value its handshake flags used.
 * Every member runs the team's collectives with the same grids and iteration
 * counts, so both agree across the members. A
 * collective of epoch e and `iters` iterations raises step flags to
 * s0 + i + 1 (s0: the step before it) and leaves step at s0 + iters + 1, so
 * every flag only grows; a wait is "flag >= expected", never a reset. 64 bits
 * do not wrap in any run (2^64 collectives at a nanosecond each take 584
 * years); 32-bit epochs wrapped after 2^32, when stale flags satisfied waits.
 * At the start of each collective block b stores e into ACK(b, me) on its
 * peers ("my stream has reached epoch e here, so I am done with region b and
 * dest"): a PE writes into a peer's region b, or straight into its dest, only
 * after that peer's ACK shows it has started the same collective.
 *
 * One-shot credit: the world's lines (area 0), double-buffered by epoch
 * parity, need only the collective before: ACK >= e-1 (`ll_lag` 1; no other
 * team writes area 0, so the last use of parity e&1 there was the world's
 * e-2). Area 1 is written by several teams' members, so there a writer waits
 * for ACK >= e (`ll_lag` 0): the reader is in this very collective, and every
 * line written to it is one it reads. A one-shot line's flag is 32 bits
 * (ll_flag(e), never 0), and its reader zeroes it once read, so a line left
 * from an older collective never carries a valid flag whatever the epochs
 * (the writer of the next use of that slot waits for the reader's ACK of the
 * collective after, see oneshot.cu).
 *
 * Members are team ranks everywhere in the kernels (flag indices, peer
 * arrays); NVSHMEM calls take world PE numbers (pes[], next_pe, prev_pe),
 * which are NVSHMEM's own (init.cu checks that the two numberings agree).
 */
#ifndef SYM_GPU_GPU_H
#define SYM_GPU_GPU_H

#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

#include <shmemx_gpu.h>

#include "backend.h"

/* ---- limits ---- */

#define SYM_GPU_MAXB 128   /* blocks of any collective kernel (= scratch regions) */
#define SYM_GPU_MAXB_LL 32 /* blocks of the one-shot kernel */
#define SYM_GPU_MAXP2P 8   /* PEs for the NVLink algorithms (one-shot, two-shot) */
#define SYM_GPU_MAXPES 64  /* PEs for the ring */
#define SYM_GPU_LLCAP 2048 /* one-shot lines per (block, parity, sender): 16 KiB of data */
#define SYM_GPU_THREADS 512
#define SYM_GPU_MAXTEAMS SHMEMX_TEAM_INDEX_MAX /* flag areas and clocks: one per team index */

/* ---- flag words (uint64 index into the flag area) ---- */

#define FLAG_ACK(b, p) ((size_t)(b) * SYM_GPU_MAXPES + (size_t)(p))
#define FLAG_SIG_BASE ((size_t)SYM_GPU_MAXB * SYM_GPU_MAXPES)
/* ph 0: data for step, ph 1: second-phase data or "consumed" credit */
#define FLAG_SIG(b, ph, p) (FLAG_SIG_BASE + ((size_t)(b) * 2 + (ph)) * SYM_GPU_MAXP2P + (size_t)(p))
#define FLAG_RING_BASE (FLAG_SIG_BASE + (size_t)SYM_GPU_MAXB * 2 * SYM_GPU_MAXP2P)
#define SYM_GPU_RING_SLOTS (2 * SYM_GPU_MAXPES)
#define FLAG_RING(b, par, s)                                                         \
    (FLAG_RING_BASE + ((size_t)(b) * 2 + (par)) * SYM_GPU_RING_SLOTS + (size_t)(s))
#define FLAG_RDONE_BASE (FLAG_RING_BASE + (size_t)SYM_GPU_MAXB * 2 * SYM_GPU_RING_SLOTS)
#define FLAG_RDONE(b) (FLAG_RDONE_BASE + (size_t)(b))
#define FLAG_COUNT (FLAG_RDONE_BASE + SYM_GPU_MAXB)
/* bytes of one team's flag area */
#define FLAG_AREA_BYTES ((FLAG_COUNT * sizeof(uint64_t) + 255) & ~(size_t)255)

/* one-shot line area: offset in 16-byte lines */
#define LL_OFF(b, par, q)                                                            \
    ((((size_t)(b) * 2 + (par)) * SYM_GPU_MAXP2P + (size_t)(q)) * SYM_GPU_LLCAP)
#define LL_BYTES ((size_t)SYM_GPU_MAXB_LL * 2 * SYM_GPU_MAXP2P * SYM_GPU_LLCAP * 16) /* one area */

/* ---- collectives ---- */

/* Block b's counters (see "Clocks" above). */
struct sym_gpu_clock {
    uint64_t epoch; /* collectives block b has taken part in */
    uint64_t step;  /* the last value block b's step flags were raised to */
};

enum {
    SYM_GPU_ALLREDUCE = 0,
    SYM_GPU_REDUCE_SCATTER,
    SYM_GPU_ALLGATHER,
    SYM_GPU_BROADCAST,
    SYM_GPU_ALLTOALL
};

/* Everything a collective kernel needs, passed by value. Sizes:
 *   src  AR, BC: count elements; RS: count (the whole vector); AG: count (this
 *        PE's block, in place already resolved to dst + me*count); A2A: npes*count
 *        (block p for member p)
 *   dst  AR, BC: count; RS: this PE's block (shmemx_block_range); AG: npes*count;
 *        A2A: npes*count (block p from member p), not overlapping src */
struct sym_gpu_args {
    const uint8_t *src;
    uint8_t *dst;
    size_t count;
    size_t chunk; /* one-shot: lines per block; AR/RS: elements; AG/BC: bytes */
    int iters;    /* persistent-loop iterations per block */
    int coll, dtype, op, root;
    int es;       /* bytes per element */
    int me, npes, next, prev; /* team ranks */
    int next_pe, prev_pe;     /* world PEs of next and prev (NVSHMEM calls) */
    int ll_lag;               /* one-shot credit: a peer's ACK >= e - ll_lag (gpu.h) */
    int dst_sym; /* dst is symmetric everywhere: peer_dst valid, peers write into it */
    int src_sym; /* src is symmetric here (the ring puts from it without staging) */
    int p2p;     /* every peer reachable by stores: handshakes are plain stores */
    unsigned long long timeout_ns;
    struct sym_gpu_clock *clock; /* [SYM_GPU_MAXB], the team's, this GPU's memory */
    uint8_t *scr;     /* this PE's scratch (symmetric address) */
    uint8_t *ll;      /* this PE's one-shot line area for the team (symmetric address) */
    uint64_t *flags;  /* this PE's flag area for the team (symmetric address) */
    size_t region;    /* bytes of scratch per block */
    uint8_t *peer_scr[SYM_GPU_MAXP2P];
    uint8_t *peer_ll[SYM_GPU_MAXP2P];
    uint64_t *peer_flags[SYM_GPU_MAXP2P];
    uint8_t *peer_dst[SYM_GPU_MAXP2P];
    int pes[SYM_GPU_MAXPES]; /* world PE of each member (messages) */
};

/* The ring's slots per parity in each block's region: one per receive step,
 * and one to stage a private source (an all-to-all's n-1: it sends n-1
 * blocks an iteration). */
static inline __host__ __device__ int sym__gpu_ring_slots(int coll, int n) {
    return coll == SYM_GPU_ALLREDUCE   ? 2 * n - 1
           : coll == SYM_GPU_BROADCAST ? 2
           : coll == SYM_GPU_ALLTOALL  ? 2 * n - 2
                                       : n;
}

/* Launchers (one per kernel family); return the launch's cudaError_t. */
cudaError_t sym__gpu_launch_oneshot(const struct sym_gpu_args *a, int blocks, int threads,
                                    cudaStream_t stream);
cudaError_t sym__gpu_launch_twoshot(const struct sym_gpu_args *a, int blocks,
                                    cudaStream_t stream);
cudaError_t sym__gpu_launch_push(const struct sym_gpu_args *a, int blocks, cudaStream_t stream);
cudaError_t sym__gpu_launch_ring(const struct sym_gpu_args *a, int blocks, cudaStream_t stream);

/* ---- one team's state (team.cu) ---- */

/* Made on the team's first GPU collective from the team's members and the
 * reach table, with no communication (every member computes the same);
 * cleared when the team is destroyed or at finalize. */
struct sym_gpu_team {
    shmem_team_t team; /* NULL: no state at this index */
    int p2p;           /* every member reaches every other by loads/stores (<= MAXP2P) */
    /* every kernel's arguments that are fixed for the team (members, working
     * memory, clocks, timeout); a collective copies it and fills in the rest */
    struct sym_gpu_args fixed;
};

/* The team's state, made if it has none (team: valid, this PE a member, at
 * most SYM_GPU_MAXPES members). */
struct sym_gpu_team *sym__gpu_team(shmem_team_t team);
/* At init, collective: which PEs' GPU memory each PE reaches by loads and stores. */
int sym__gpu_reach_init(sym_gpu_agree_fn agree);
/* At finalize: forget every team's state and the reach table. */
void sym__gpu_teams_fini(void);
/* shmem_team_destroy's callback (shmemx_team_destroy_callback_add): release
 * the team's state; synchronises the team where it has some. */
extern "C" void sym__gpu_team_destroyed(shmem_team_t team, void *arg);

/* ---- the PE's GPU state (init.cu) ---- */

struct sym_gpu_state {
    int ready;
    int me, npes, dev;  /* world */
    size_t heap;        /* user-visible symmetric heap (SYMTRAIN_GPU_HEAP_SIZE) */
    uint8_t *base;      /* the working memory (nvshmem_malloc) */
    size_t off_ll, off_flags, region; /* its layout (above) */
    uint8_t **peer_base;  /* [npes]: base as world PE p's GPU memory seen from here, or NULL */
    uint64_t *reach;      /* [npes][reach_words]: bit q of row p: PE p reaches PE q */
    int reach_words;
    struct sym_gpu_clock *clocks; /* [SYM_GPU_MAXTEAMS][SYM_GPU_MAXB], this GPU's memory */
    uint64_t epoch0;              /* where every clock starts (a test hook, init.cu) */
    int no_p2p;                   /* no team uses loads and stores (a test hook, init.cu) */
    unsigned long long timeout_ns;
    struct sym_gpu_team teams[SYM_GPU_MAXTEAMS]; /* by shmemx_team_index */
    /* tuning */
    shmemx_gpu_algo_t force_algo;
    int force_blocks;
    size_t oneshot_max; /* 0: the table's */
    size_t min_chunk;   /* 0: coll.cu's */
    int pdl;            /* launch with programmatic stream serialisation */
    shmemx_gpu_algo_t last_algo;
};
extern struct sym_gpu_state sym__gpu;

/* coll.cu */
void sym__gpu_cache_clear(void); /* after symmetric memory is freed */
int sym__gpu_allreduce(shmem_team_t team, void *dest, const void *source, size_t count,
                       shmemx_dtype_t dtype, shmemx_op_t op, shmemx_gpu_stream_t stream);
int sym__gpu_reduce_scatter(shmem_team_t team, void *dest, const void *source, size_t count,
                            shmemx_dtype_t dtype, shmemx_op_t op, shmemx_gpu_stream_t stream);
int sym__gpu_allgather(shmem_team_t team, void *dest, const void *source, size_t count,
                       shmemx_dtype_t dtype, shmemx_gpu_stream_t stream);
int sym__gpu_broadcast(shmem_team_t team, void *dest, const void *source, size_t count,
                       shmemx_dtype_t dtype, int root, shmemx_gpu_stream_t stream);
int sym__gpu_alltoall(shmem_team_t team, void *dest, const void *source, size_t count,
                      shmemx_dtype_t dtype, shmemx_gpu_stream_t stream);

/* ---- symshmem's util layer (src/util/util.h is C11; these are its C names) ---- */
extern "C" {
extern int sym__log_pe;
void sym__warn(const char *where, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
size_t sym__env_size(const char *name, size_t dflt);
long sym__env_int(const char *name, long dflt, long min, long max);
double sym__env_seconds(const char *name, double dflt);
int sym__env_choice(const char *name, const char *const *choices, int dflt);
int sym__env_flag(const char *name, int dflt);
char *sym__fmt_size(size_t bytes, char *buf, size_t len);
}

/* A failed CUDA call inside a public function: say where, return ECUDA. */
#define SYM_GPU_CUDA(where, call)                                                    \
    do {                                                                             \
        cudaError_t e_ = (call);                                                     \
        if (e_ != cudaSuccess) {                                                     \
            sym__warn(where, "%s failed at %s:%d: %s", #call, __FILE__, __LINE__,    \
                      cudaGetErrorString(e_));                                       \
            return SHMEMX_GPU_ECUDA;                                                 \
        }                                                                            \
    } while (0)

#endif
