/*
 * shmemx_gpu.h — symtrain's GPU part: NVSHMEM bootstrapped by symshmem, GPU
 * symmetric memory, and GPU collectives written as CUDA kernels.
 *
 * Start-up
 *   shmem_init();            every PE, as usual (symrun -n N prog)
 *   shmemx_gpu_init();       every PE: picks a GPU, starts NVSHMEM through its
 *                            unique-id interface (no NVSHMEM launcher needed)
 *   ... shmemx_gpu_malloc, collectives on CUDA streams ...
 *   shmemx_gpu_finalize();   every PE, before shmem_finalize()
 *
 *   GPU choice: PE i of a host (its rank in SHMEM_TEAM_SHARED) takes GPU
 *   i % (GPUs visible), or SYMTRAIN_GPU=k. More PEs on a host than GPUs is an
 *   error unless SYMTRAIN_GPU_SHARE=1 (then PEs share GPUs; NVSHMEM runs them
 *   time-sliced unless CUDA MPS is running, so this is for tests, not speed).
 *   SYMTRAIN_GPU_HEAP_SIZE (default 1G) is the symmetric heap each PE can
 *   allocate from; symtrain adds its own working memory (SYMTRAIN_GPU_SCRATCH,
 *   default 256M) on top.
 *
 * Collectives
 *   Over a team (the _team forms: an OpenSHMEM team, from shmem_team_split_strided
 *   or _2d, SHMEM_TEAM_SHARED, ...; the plain forms: SHMEM_TEAM_WORLD, every
 *   PE of the job), on the given CUDA stream (NULL: the legacy
 *   default stream), with no host synchronisation: each call enqueues kernels
 *   and returns, so collectives can be captured in CUDA graphs. PE numbers
 *   (root, the reduce-scatter and all-gather blocks) are team PE numbers;
 *   a team of one PE is a device copy. Element types:
 *   SHMEMX_FLOAT32, SHMEMX_FLOAT16, SHMEMX_BFLOAT16 (16-bit types are summed in
 *   fp32 and rounded to nearest-even once). Operations: SHMEMX_SUM, SHMEMX_AVG,
 *   SHMEMX_MIN, SHMEMX_MAX, SHMEMX_PROD.
 *   - Every member of the team calls the same collectives on it in the same
 *     order with the same count, dtype, op and root; PEs that share several
 *     teams call the collectives of those teams in the same order. One
 *     collective at a time per PE, whatever its team (issue them on one
 *     stream, or order the streams). Disjoint teams run at the same time.
 *   - Teams: a team's GPU state (its flags and counters, laid out at
 *     shmemx_gpu_init for every team index, so nothing is allocated later) is
 *     made on its first GPU collective, on each member alone, with no
 *     communication: the first call may even be inside a graph capture. It is
 *     released by shmem_team_destroy, which for a team that ran a GPU
 *     collective waits for this GPU to be idle (cudaDeviceSynchronize) and
 *     synchronises the team: every member must destroy it, outside any
 *     capture, before shmemx_gpu_finalize (which releases the rest). Teams of
 *     up to 64 PEs; the NVLink algorithms where the team has at most 8
 *     members and each reaches every other by loads and stores, else the
 *     ring.
 *   - Bad arguments return SHMEMX_ETEAM (SHMEM_TEAM_INVALID, or this PE not in
 *     the team) or SHMEMX_EINVAL (dtype, op, root, a count whose bytes do not
 *     fit a size_t, NULL buffers, an all-to-all's overlapping ones) before
 *     anything is enqueued.
 *   - Buffers may be plain device memory (cudaMalloc, a tensor's storage) or
 *     symmetric (shmemx_gpu_malloc). When `dest` is symmetric on every PE (the
 *     same shmemx_gpu_malloc allocation, same offset) peers write results
 *     straight into it; otherwise they go through symtrain's working memory.
 *     Pass symmetric buffers on every member or on none.
 *   - In place is allowed: dest == source (all-gather: dest == source, or
 *     source == dest + pe*count, pe the team PE number, both meaning the PE's
 *     block is already at dest + pe*count; reduce-scatter: dest == source,
 *     the PE's block of the result landing at the front, or dest == source +
 *     off, off the block's offset (shmemx_block_range), the block reduced
 *     where it lies); all-to-all: never, its dest and source must not overlap).
 *   - Reduce-scatter splits `count` like shmemx_block_range (shmemx.h): team
 *     PE i receives count/n elements, plus one if i < count % n (n members).
 *   Algorithms, chosen by size and team size (SYMTRAIN_GPU_ALGO forces one):
 *   one-shot (small: each GPU pushes its data to every peer in 16-byte lines
 *   that carry a flag, each GPU reduces locally), two-shot (reduce-scatter then
 *   all-gather, pushed with stores over NVLink), ring (put-with-signal through
 *   NVSHMEM, any transport: also between hosts). All-to-all: each sender
 *   pushes block p to member p (over NVLink with stores, straight into a
 *   symmetric dest; else put-with-signal, member k steps away at step k).
 *   docs/performance.md has the measured numbers.
 *
 * Your own kernels with NVSHMEM device calls
 *   #include <nvshmem.h> in a .cu file, compile it with -rdc=true for sm_90,
 *   link libnvshmem_device.a and libnvshmem_host.so.3 into your program, and
 *   after shmemx_gpu_init() call nvshmem_init() once from that program (NVSHMEM
 *   counts initialisations; this one only readies your module's device state).
 *   Call nvshmem_finalize() before shmemx_gpu_finalize(). shmemx_gpu_malloc
 *   memory is NVSHMEM symmetric memory: pass it to nvshmem_* calls as is.
 *   tests/gpu_user_kernel.cu is a complete example.
 *
 * Environment (read at shmemx_gpu_init)
 *   SYMTRAIN_GPU=k, SYMTRAIN_GPU_SHARE=1     GPU choice (above)
 *   SYMTRAIN_GPU_HEAP_SIZE=1G                symmetric heap for shmemx_gpu_malloc
 *   SYMTRAIN_GPU_SCRATCH=256M                working memory (128 per-block regions)
 *   SYMTRAIN_GPU_ALGO, SYMTRAIN_GPU_BLOCKS   force an algorithm / block count
 *   SYMTRAIN_GPU_ONESHOT_MAX, SYMTRAIN_GPU_MIN_CHUNK   move the table's limits
 *   SYMTRAIN_GPU_PDL=0                       no programmatic dependent launch
 *   SYMTRAIN_GPU_TIMEOUT=30                  seconds a kernel waits for a peer before
 *                                            it prints which one and traps (0: never)
 *   SYMTRAIN_GPU_BACKEND=path                the libsymgpu_nvshmem.so to load
 *   SYMTRAIN_TEST_GPU_EPOCH_START=N               a test hook, not a setting: the
 *                                            kernels' 64-bit counters start at N
 *   NVSHMEM's own variables are honoured; NVSHMEM_DISABLE_NVLS=1 is the default.
 *
 * Errors: every int-returning call returns 0 or a negative code (shmemx.h's
 * SHMEMX_E*, or SHMEMX_GPU_E* below) after printing one line saying what was
 * wrong and what to do.
 */
#ifndef SHMEMX_GPU_H
#define SHMEMX_GPU_H

#include <shmemx.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A CUDA stream: cudaStream_t is `struct CUstream_st *`, so pass one as is. */
typedef struct CUstream_st *shmemx_gpu_stream_t;

/* GPU error codes (shmemx.h's SHMEMX_EINVAL and SHMEMX_ENOMEM are used too). */
#define SHMEMX_GPU_ERRNO_MAP(X)                                                      \
    X(ENODEV, -20, "no usable GPU")                                                  \
    X(ETOOFEW, -21, "fewer GPUs than PEs on this host")                              \
    X(ENOLIB, -22, "NVSHMEM library could not be loaded")                            \
    X(EHEAP, -23, "GPU symmetric heap too large or exhausted")                       \
    X(ECUDA, -24, "CUDA call failed")                                                \
    X(ENVSHMEM, -25, "NVSHMEM call failed")                                          \
    X(ENOINIT, -26, "shmemx_gpu_init has not been called")
#define SHMEMX_GPU_ERRNO_DEF(name, code, msg) SHMEMX_GPU_##name = code,
enum { SHMEMX_GPU_ERRNO_MAP(SHMEMX_GPU_ERRNO_DEF) SHMEMX_GPU_ELAST_ = -27 };
#undef SHMEMX_GPU_ERRNO_DEF

/* The message for any SHMEMX_E* or SHMEMX_GPU_E* code. */
const char *shmemx_gpu_strerror(int err);

/* ---- start-up ---- */

/* Collective over every PE, after shmem_init. Returns 0, or SHMEMX_GPU_ENODEV,
 * _ETOOFEW, _ENOLIB, _EHEAP, ... on every PE (the PEs agree before NVSHMEM
 * starts, so a problem on one PE never leaves the others waiting). Calling it
 * again after success returns 0. */
int shmemx_gpu_init(void);
/* Collective: frees symtrain's GPU memory and stops NVSHMEM. */
int shmemx_gpu_finalize(void);
/* The CUDA device this PE uses (after shmemx_gpu_init), else -1. */
int shmemx_gpu_device(void);

/* ---- symmetric memory ---- */

/* Collective: `bytes` of GPU symmetric memory at the same offset on every PE
 * (nvshmem_malloc). NULL (after a message naming the heap size) when the heap
 * is exhausted. */
void *shmemx_gpu_malloc(size_t bytes);
/* Collective. */
void shmemx_gpu_free(void *ptr);
/* The address through which this PE's GPU reaches `pe`'s copy of symmetric
 * `ptr` with loads and stores (NVLink), or NULL if it cannot (nvshmem_ptr). */
void *shmemx_gpu_ptr(const void *ptr, int pe);

/* ---- collectives (see the top of this file) ---- */

/* Over the members of `team` (PE numbers are team PE numbers). */
int shmemx_gpu_allreduce_team(shmem_team_t team, void *dest, const void *source, size_t count,
                              shmemx_dtype_t dtype, shmemx_op_t op, shmemx_gpu_stream_t stream);
int shmemx_gpu_reduce_scatter_team(shmem_team_t team, void *dest, const void *source,
                                   size_t count, shmemx_dtype_t dtype, shmemx_op_t op,
                                   shmemx_gpu_stream_t stream);
int shmemx_gpu_allgather_team(shmem_team_t team, void *dest, const void *source, size_t count,
                              shmemx_dtype_t dtype, shmemx_gpu_stream_t stream);
int shmemx_gpu_broadcast_team(shmem_team_t team, void *dest, const void *source, size_t count,
                              shmemx_dtype_t dtype, int root, shmemx_gpu_stream_t stream);
int shmemx_gpu_alltoall_team(shmem_team_t team, void *dest, const void *source, size_t count,
                             shmemx_dtype_t dtype, shmemx_gpu_stream_t stream);

/* The same over SHMEM_TEAM_WORLD: */
/* dest[i] = op over PEs of source[i], i < count, on every PE. */
int shmemx_gpu_allreduce(void *dest, const void *source, size_t count, shmemx_dtype_t dtype,
                         shmemx_op_t op, shmemx_gpu_stream_t stream);
/* dest (this PE's block, shmemx_block_range) = op over PEs of that block of
 * source (count elements in all). */
int shmemx_gpu_reduce_scatter(void *dest, const void *source, size_t count,
                              shmemx_dtype_t dtype, shmemx_op_t op,
                              shmemx_gpu_stream_t stream);
/* dest[p * count + i] = PE p's source[i]. */
int shmemx_gpu_allgather(void *dest, const void *source, size_t count, shmemx_dtype_t dtype,
                         shmemx_gpu_stream_t stream);
/* dest[i] = root's source[i] on every PE (source is read on root only). */
int shmemx_gpu_broadcast(void *dest, const void *source, size_t count, shmemx_dtype_t dtype,
                         int root, shmemx_gpu_stream_t stream);
/* dest[p * count + i] = PE p's source[me * count + i] (source and dest hold
 * npes blocks of count elements each; they must not overlap). */
int shmemx_gpu_alltoall(void *dest, const void *source, size_t count, shmemx_dtype_t dtype,
                        shmemx_gpu_stream_t stream);

/* ---- algorithm choice (benchmarks and tests; default: the tuned table) ---- */

typedef enum {
    SHMEMX_GPU_ALGO_AUTO = 0,
    SHMEMX_GPU_ALGO_ONESHOT, /* flagged 16-byte lines pushed to every peer (small) */
    SHMEMX_GPU_ALGO_TWOSHOT, /* NVLink pushes: reduce-scatter + all-gather */
    SHMEMX_GPU_ALGO_RING,    /* NVSHMEM put-with-signal ring (any transport) */
    SHMEMX_GPU_ALGO_COUNT
} shmemx_gpu_algo_t;

/* Force an algorithm and/or a block count (0: the table's) for this PE's later
 * collectives; every PE must force the same. One-shot falls back to the table
 * where the data is larger than its working memory, NVLink algorithms where a
 * peer is not reachable by loads and stores. SYMTRAIN_GPU_ALGO=oneshot|twoshot|
 * ring|auto and SYMTRAIN_GPU_BLOCKS=n do the same at init. */
void shmemx_gpu_set_algo(shmemx_gpu_algo_t algo, int blocks);
/* The algorithm the last collective on this PE used. */
shmemx_gpu_algo_t shmemx_gpu_last_algo(void);
const char *shmemx_gpu_algo_name(shmemx_gpu_algo_t algo);

#ifdef __cplusplus
}
#endif

#endif
