/*
 * shmemx.h — symtrain's extensions to OpenSHMEM.
 *
 * Training collectives
 *   All-reduce, reduce-scatter, all-gather and broadcast over a team, for the
 *   element types training needs (fp32, fp64, fp16, bf16, int32, int64) and the
 *   operations sum, avg, min, max, prod. fp16 and bf16 are stored as uint16_t
 *   and accumulated in fp32, rounded to nearest-even when stored.
 *
 *   Buffers may be symmetric (shmem_malloc, globals) or private (malloc, the
 *   stack): a symmetric source lets peers read it in place, which is fastest;
 *   a private one is staged through the team's working memory in chunks. In
 *   place (dest == source) is allowed everywhere. Every member of the team calls
 *   with the same count, dtype, op and root, and with buffers of the same kind
 *   (all symmetric or all private, for dest and for source): the algorithm is
 *   chosen from them on each member. A broadcast reads only the root's source;
 *   the other members may pass NULL.
 *
 *   Partition: reduce-scatter splits `count` elements into one block per
 *   member, block i holding count / n elements plus one more for i < count % n
 *   (shmemx_block_range gives a member's block).
 *
 *   Non-blocking forms return a request and run on a progress thread, so the
 *   collective advances while the caller computes, without calls into the
 *   library. Requests complete in the order they were started (on every team).
 *   Buffers must not be touched until the request completes. A request's
 *   lifetime is explicit: shmemx_req_wait / _test / _waitall / _testany only
 *   complete requests and may be called again on a complete one (same status);
 *   shmemx_req_free alone releases it. shmem_team_destroy and shmem_finalize
 *   complete the requests still outstanding first; handles stay valid after
 *   shmem_finalize until freed. The all-reduce algorithm a request uses is the
 *   one forced (shmemx_set_allreduce_algo) when it was made.
 *
 *   Every function returns 0, or a negative SHMEMX_E* code after printing one
 *   line saying what was wrong. The codes lie in -100 ... -199, apart from
 *   symtrain's SYM_E* (-1 ...) and the GPU part's SHMEMX_GPU_E* (-20 ...), so
 *   a code names the library it came from.
 *
 * Version
 *   SHMEMX_VERSION_MAJOR / _MINOR / _PATCH / _STRING / _HEX (shmemx_version.h,
 *   generated from the project version) are what a program was compiled
 *   against; shmemx_version() is the library it runs with.
 */
#ifndef SHMEMX_H
#define SHMEMX_H

#include <shmem.h>
#include <shmemx_version.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    SHMEMX_FLOAT32 = 0,
    SHMEMX_FLOAT64,
    SHMEMX_FLOAT16, /* IEEE binary16 in a uint16_t */
    SHMEMX_BFLOAT16, /* bfloat16 in a uint16_t */
    SHMEMX_INT32,
    SHMEMX_INT64,
    SHMEMX_DTYPE_COUNT
} shmemx_dtype_t;

typedef enum {
    SHMEMX_SUM = 0,
    SHMEMX_AVG, /* sum divided by the team size (integer types: truncated) */
    SHMEMX_MIN,
    SHMEMX_MAX,
    SHMEMX_PROD,
    SHMEMX_OP_COUNT
} shmemx_op_t;

/* Error codes: an X-macro list, so names and messages stay together. */
#define SHMEMX_ERRNO_MAP(X)                                                          \
    X(EINVAL, -101, "invalid argument")                                              \
    X(ENOMEM, -102, "out of memory")                                                 \
    X(ETEAM, -103, "invalid team, or this PE is not a member")                       \
    X(EBUSY, -104, "request still in progress")
#define SHMEMX_ERRNO_DEF(name, code, msg) SHMEMX_##name = code,
enum { SHMEMX_OK = 0, SHMEMX_ERRNO_MAP(SHMEMX_ERRNO_DEF) };
#undef SHMEMX_ERRNO_DEF
/* "invalid argument" etc. for a SHMEMX_E* code, "success" for 0, "unknown
 * error" for anything else. */
const char *shmemx_strerror(int err);

/* The library's version, (major << 16) | (minor << 8) | patch, and as text. */
unsigned shmemx_version(void);
const char *shmemx_version_string(void);

size_t shmemx_dtype_size(shmemx_dtype_t dtype);

/* The block of a `count`-element vector that member `pe` of an `npes`-member
 * team owns in a reduce-scatter: elements [*offset, *offset + *len). */
void shmemx_block_range(size_t count, int npes, int pe, size_t *offset, size_t *len);

/* ---- blocking ---- */

/* dest[i] = op over members of source[i], i < count, on every member. */
int shmemx_allreduce(shmem_team_t team, void *dest, const void *source, size_t count,
                     shmemx_dtype_t dtype, shmemx_op_t op);
/* dest (this member's block, see shmemx_block_range) = op over members of the
 * matching block of source (count elements). */
int shmemx_reduce_scatter(shmem_team_t team, void *dest, const void *source, size_t count,
                          shmemx_dtype_t dtype, shmemx_op_t op);
/* dest[m * count + i] = member m's source[i]: count elements from each member. */
int shmemx_allgather(shmem_team_t team, void *dest, const void *source, size_t count,
                     shmemx_dtype_t dtype);
/* dest[i] = root's source[i] on every member (root: a team PE number). */
int shmemx_broadcast(shmem_team_t team, void *dest, const void *source, size_t count,
                     shmemx_dtype_t dtype, int root);

/* ---- non-blocking ---- */

typedef struct shmemx_req *shmemx_req_t;

int shmemx_allreduce_nb(shmem_team_t team, void *dest, const void *source, size_t count,
                        shmemx_dtype_t dtype, shmemx_op_t op, shmemx_req_t *req);
int shmemx_reduce_scatter_nb(shmem_team_t team, void *dest, const void *source, size_t count,
                             shmemx_dtype_t dtype, shmemx_op_t op, shmemx_req_t *req);
int shmemx_allgather_nb(shmem_team_t team, void *dest, const void *source, size_t count,
                        shmemx_dtype_t dtype, shmemx_req_t *req);
int shmemx_broadcast_nb(shmem_team_t team, void *dest, const void *source, size_t count,
                        shmemx_dtype_t dtype, int root, shmemx_req_t *req);
/* Block until the request is complete; returns its status (0, or the
 * SHMEMX_E* code the collective failed with). The request stays allocated. */
int shmemx_req_wait(shmemx_req_t req);
/* Complete: *done = 1 and the status is returned. Still running: *done = 0 and
 * SHMEMX_EBUSY. The request stays allocated either way. */
int shmemx_req_test(shmemx_req_t req, int *done);
/* shmemx_req_wait on each non-NULL reqs[i], i < n; returns 0, or the first
 * failed status in index order. */
int shmemx_req_waitall(shmemx_req_t *reqs, int n);
/* The lowest i < n whose non-NULL reqs[i] is complete: *index = i and its
 * status returned. None complete yet: *index = -1 and SHMEMX_EBUSY. No
 * non-NULL entry: *index = -1 and 0. A complete request is found again by the
 * next call, so the caller frees it and sets its entry to NULL. */
int shmemx_req_testany(shmemx_req_t *reqs, int n, int *index);
/* Release a request (waiting for it first if it is still running). NULL is a
 * no-op. Using the handle afterwards is an error. */
void shmemx_req_free(shmemx_req_t req);

/* ---- versioned replication ----
 *
 * One PE (the primary) publishes successive versions of a buffer to the other
 * members of a team; each replica can poll for, wait for, or read the newest
 * complete version, and never observes a torn update (a mix of two versions).
 * Publishing does not wait for replicas: a slow replica skips versions rather
 * than slowing the primary. Works the same on one host and across hosts.
 */
typedef struct shmemx_replica *shmemx_replica_t;

/* Collective over SHMEM_TEAM_WORLD (it allocates symmetric memory): a
 * replicated buffer of `bytes` among the members of `team`, published by team
 * PE `primary`. PEs outside `team` take part too; their handle only serves to
 * destroy it. */
int shmemx_replica_create(shmem_team_t team, size_t bytes, int primary, shmemx_replica_t *r);
/* Collective over SHMEM_TEAM_WORLD, like creation. */
void shmemx_replica_destroy(shmemx_replica_t r);
/* Primary only: publish `bytes` from src as the next version; returns its
 * number (1, 2, ...). */
uint64_t shmemx_replica_publish(shmemx_replica_t r, const void *src);
/* The newest complete version here (0 before the first). */
uint64_t shmemx_replica_version(shmemx_replica_t r);
/* Copy the newest complete version into dst (bytes long); returns its number,
 * or 0 (dst untouched) before the first. */
uint64_t shmemx_replica_read(shmemx_replica_t r, void *dst);
/* Wait until version >= min_version is here, then read it as above. */
uint64_t shmemx_replica_wait(shmemx_replica_t r, uint64_t min_version, void *dst);

/* ---- per-team state kept by libraries (the GPU collectives, shmemx_gpu.h) ----
 *
 * A library that keeps its own state for each team (symmetric flags, say)
 * indexes it by the team's index and learns when the team goes away.
 */
#define SHMEMX_TEAM_INDEX_MAX 32
/* The team's index: the same on every member, different for any two teams
 * alive at once on this PE (disjoint teams made by one split may share one:
 * they have no member in common), 0 for SHMEM_TEAM_WORLD, always below
 * SHMEMX_TEAM_INDEX_MAX. -1 for SHMEM_TEAM_INVALID. A destroyed team's index
 * may be given to a later team. */
int shmemx_team_index(shmem_team_t team);
/* Have fn(team, arg) called on this PE at the start of each
 * shmem_team_destroy, while the team is still usable (fn may synchronise the
 * team: every member destroys it). At most 4 callbacks; 0, or SHMEMX_ENOMEM
 * when all are taken. */
int shmemx_team_destroy_callback_add(void (*fn)(shmem_team_t team, void *arg), void *arg);
/* Remove a callback added with the same fn and arg (none: nothing happens). */
void shmemx_team_destroy_callback_remove(void (*fn)(shmem_team_t team, void *arg), void *arg);

/* ---- algorithm choice (benchmarks and tests; the default is the tuned table) ---- */

typedef enum {
    SHMEMX_ALGO_AUTO = 0,
    SHMEMX_ALGO_DIRECT, /* same host: read peers' memory directly */
    SHMEMX_ALGO_RING,   /* reduce-scatter + all-gather ring on put-with-signal */
    SHMEMX_ALGO_RD,     /* recursive doubling on put-with-signal */
    SHMEMX_ALGO_COUNT
} shmemx_algo_t;
/* Force an all-reduce algorithm for this PE (every member must force the same
 * for the same calls); SYMTRAIN_ALLREDUCE_ALGO=ring|direct|rd|auto does the
 * same at init. Applies to calls and requests made after it; thread-safe. */
void shmemx_set_allreduce_algo(shmemx_algo_t algo);
const char *shmemx_algo_name(shmemx_algo_t algo);

/* ---- runtime counters (metrics: symtrain's Prometheus endpoint reads them) ---- */

/* The all-reduce algorithms as they ran: an X-macro list, index and name.
 * A hierarchical all-reduce (a world spanning hosts) counts once as
 * hierarchical, and its stages count again under the algorithms they used. */
#define SHMEMX_STATS_ALGO_MAP(X)                                                     \
    X(SELF, "self")         /* a team of one: a copy */                            \
    X(ONESHOT, "oneshot")   /* small messages: one exchange of the whole vector */ \
    X(DIRECT, "direct")     /* same host: members read each other's memory */      \
    X(RING, "ring")                                                                \
    X(RD, "rd")                                                                    \
    X(HIERARCHICAL, "hierarchical")
#define SHMEMX_STATS_ALGO_DEF(name, text) SHMEMX_STATS_##name,
enum { SHMEMX_STATS_ALGO_MAP(SHMEMX_STATS_ALGO_DEF) SHMEMX_STATS_ALGOS };
#undef SHMEMX_STATS_ALGO_DEF

/* This PE's counters since shmem_init; counts only grow. */
typedef struct {
    uint64_t heap_size;     /* bytes of the symmetric heap for shmem_malloc */
    uint64_t heap_in_use;   /* of them, in blocks handed out now */
    uint64_t puts;          /* puts this PE issued through the API (put, p, iput, the
                               non-blocking and put-with-signal forms), any thread */
    uint64_t put_bytes;     /* and the bytes they moved */
    uint64_t allreduce[SHMEMX_STATS_ALGOS]; /* all-reduces run, by algorithm */
} shmemx_stats_t;

/* Fill *out. Any thread may call it at any time after shmem_init, while
 * others communicate: it never waits for them (a metrics server's thread
 * reads it while training runs). */
void shmemx_stats(shmemx_stats_t *out);
/* "oneshot" etc. for SHMEMX_STATS_ONESHOT etc.; "unknown" otherwise. */
const char *shmemx_stats_algo_name(int algo);

#ifdef __cplusplus
}
#endif

#endif
