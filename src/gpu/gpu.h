/*
 * gpu.h — private to libsymgpu_nvshmem (the .cu files of src/gpu): the PE's
 * GPU state, the layout of symtrain's symmetric working memory, the argument
 * block every collective kernel takes, and the launchers.
 *
 * Working memory (one nvshmem_malloc at init, zeroed, same offsets on every PE):
 *   scratch  SYM_GPU_MAXB regions of `region` bytes; block b of any kernel
 *            only ever touches region b (its own and its peers'), so a block
 *            count that changes from one collective to the next is harmless.
 *   ll       one-shot lines: [block][epoch parity][sender][SYM_GPU_LLCAP lines]
 *            of 16 bytes = 8 bytes of data + two copies of a 32-bit flag.
 *   flags    64-bit handshake words (FLAG_* below), written by peers.
 *
 * Clocks: every block b keeps two 64-bit counters in device memory, advanced
 * by the kernel itself (so a collective replayed from a CUDA graph still gets
 * new values): its epoch, the collectives it has taken part in, and its step,
 * the last value its handshake flags used. Every PE runs the same collectives
 * with the same grids and iteration counts, so both agree across PEs. A
 * collective of epoch e and `iters` iterations raises step flags to
 * s0 + i + 1 (s0: the step before it) and leaves step at s0 + iters + 1, so
 * every flag only grows; a wait is "flag >= expected", never a reset. 64 bits
 * do not wrap in any run (2^64 collectives at a nanosecond each take 584
 * years); 32-bit epochs wrapped after 2^32, when stale flags satisfied waits.
 * At the start of each collective block b stores e into ACK(b, me) on its
 * peers ("my stream has reached epoch e here, so I am done with region b and
 * dest"): a PE writes into a peer's region b, or straight into its dest, only
 * after that peer's ACK shows it has started the same collective (one-shot
 * lines, double-buffered by epoch parity, need only the one before: ACK >=
 * e-1). A one-shot line's flag is 32 bits (ll_flag(e), never 0), and its
 * reader zeroes it once read, so a line left from an older collective never
 * carries a valid flag whatever the epochs (the writer of the next use of that
 * slot waits for the reader's ACK of the collective after, see oneshot.cu).
 */
#ifndef SYM_GPU_GPU_H
#define SYM_GPU_GPU_H

#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

#include <shmemx_gpu.h>

/* ---- limits ---- */

#define SYM_GPU_MAXB 128   /* blocks of any collective kernel (= scratch regions) */
#define SYM_GPU_MAXB_LL 32 /* blocks of the one-shot kernel */
#define SYM_GPU_MAXP2P 8   /* PEs for the NVLink algorithms (one-shot, two-shot) */
#define SYM_GPU_MAXPES 64  /* PEs for the ring */
#define SYM_GPU_LLCAP 2048 /* one-shot lines per (block, parity, sender): 16 KiB of data */
#define SYM_GPU_THREADS 512

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

/* one-shot line area: offset in 16-byte lines */
#define LL_OFF(b, par, q)                                                            \
    ((((size_t)(b) * 2 + (par)) * SYM_GPU_MAXP2P + (size_t)(q)) * SYM_GPU_LLCAP)
#define LL_BYTES ((size_t)SYM_GPU_MAXB_LL * 2 * SYM_GPU_MAXP2P * SYM_GPU_LLCAP * 16)

/* ---- collectives ---- */

/* Block b's counters (see "Clocks" above). */
struct sym_gpu_clock {
    uint64_t epoch; /* collectives block b has taken part in */
    uint64_t step;  /* the last value block b's step flags were raised to */
};

enum { SYM_GPU_ALLREDUCE = 0, SYM_GPU_REDUCE_SCATTER, SYM_GPU_ALLGATHER, SYM_GPU_BROADCAST };

/* Everything a collective kernel needs, passed by value. Sizes:
 *   src  AR, BC: count elements; RS: count (the whole vector); AG: count (this
 *        PE's block, in place already resolved to dst + me*count)
 *   dst  AR, BC: count; RS: this PE's block (shmemx_block_range); AG: npes*count */
struct sym_gpu_args {
    const uint8_t *src;
    uint8_t *dst;
    size_t count;
    size_t chunk; /* one-shot: lines per block; AR/RS: elements; AG/BC: bytes */
    int iters;    /* persistent-loop iterations per block */
    int coll, dtype, op, root;
    int es;       /* bytes per element */
    int me, npes, next, prev;
    int dst_sym; /* dst is symmetric everywhere: peer_dst valid, peers write into it */
    int src_sym; /* src is symmetric here (the ring puts from it without staging) */
    int p2p;     /* every peer reachable by stores: handshakes are plain stores */
    unsigned long long timeout_ns;
    struct sym_gpu_clock *clock; /* [SYM_GPU_MAXB], this GPU's memory */
    uint8_t *scr;     /* this PE's scratch (symmetric address) */
    uint8_t *ll;      /* this PE's one-shot lines (symmetric address) */
    uint64_t *flags;  /* this PE's flags (symmetric address) */
    size_t region;    /* bytes of scratch per block */
    uint8_t *peer_scr[SYM_GPU_MAXP2P];
    uint8_t *peer_ll[SYM_GPU_MAXP2P];
    uint64_t *peer_flags[SYM_GPU_MAXP2P];
    uint8_t *peer_dst[SYM_GPU_MAXP2P];
};

/* Launchers (one per kernel family); return the launch's cudaError_t. */
cudaError_t sym__gpu_launch_oneshot(const struct sym_gpu_args *a, int blocks, int threads,
                                    cudaStream_t stream);
cudaError_t sym__gpu_launch_twoshot(const struct sym_gpu_args *a, int blocks,
                                    cudaStream_t stream);
cudaError_t sym__gpu_launch_push(const struct sym_gpu_args *a, int blocks, cudaStream_t stream);
cudaError_t sym__gpu_launch_ring(const struct sym_gpu_args *a, int blocks, cudaStream_t stream);

/* ---- the PE's GPU state (init.cu) ---- */

struct sym_gpu_state {
    int ready;
    int me, npes, dev;
    int p2p;            /* every peer reachable by loads/stores (and npes <= MAXP2P) */
    size_t heap;        /* user-visible symmetric heap (SYMTRAIN_GPU_HEAP_SIZE) */
    uint8_t *base;      /* the working memory (nvshmem_malloc) */
    /* every kernel's arguments that are fixed at init (PEs, working memory,
     * epochs, timeout); a collective copies it and fills in the rest */
    struct sym_gpu_args fixed;
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
int sym__gpu_allreduce(void *dest, const void *source, size_t count, shmemx_dtype_t dtype,
                       shmemx_op_t op, shmemx_gpu_stream_t stream);
int sym__gpu_reduce_scatter(void *dest, const void *source, size_t count, shmemx_dtype_t dtype,
                            shmemx_op_t op, shmemx_gpu_stream_t stream);
int sym__gpu_allgather(void *dest, const void *source, size_t count, shmemx_dtype_t dtype,
                       shmemx_gpu_stream_t stream);
int sym__gpu_broadcast(void *dest, const void *source, size_t count, shmemx_dtype_t dtype,
                       int root, shmemx_gpu_stream_t stream);

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
