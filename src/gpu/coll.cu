/*
 * coll.cu — the GPU collectives' entry points, over any team (the world
 * versions are SHMEM_TEAM_WORLD's): argument checks, the one algorithm table
 * (by collective, team size and bytes), the grid and chunk each algorithm
 * gets, and the launch on the caller's stream. Nothing here synchronises
 * with the GPU or with other PEs (a team's state is made locally, team.cu),
 * so every collective can be captured in a graph.
 */
#include <string.h>

#include <nvshmem.h>
#include <nvshmemx.h>
#include <shmem.h>

#include "gpu.h"
#include "kernels.cuh"

/* ---- the tuning table ---- */

/* Per GPU count: the largest collective (bytes: the input of all-reduce,
 * reduce-scatter and broadcast, the output of all-gather) that goes one-shot,
 * and the most blocks the two-shot and ring kernels use. One-shot sends the
 * whole vector to every peer, so its limit falls as GPUs are added. */
static const struct tune_row {
    int max_pes;
    size_t oneshot_max;
    int twoshot_blocks;  /* two-shot, push: most blocks ... */
    size_t large;        /* ... below this many bytes, */
    int large_blocks;    /* and from there on (NVLink needs nearly every SM) */
    int ring_blocks;
} tune_table[] = {
    /* 2 x H200 (NV18), measured: docs/performance.md */
    {2, (size_t)512 << 10, 64, (size_t)64 << 20, 128, 16},
    {4, (size_t)128 << 10, 64, (size_t)64 << 20, 128, 16},
    {8, (size_t)64 << 10, 64, (size_t)64 << 20, 128, 16},
    {SYM_GPU_MAXPES, 0, 64, (size_t)64 << 20, 128, 16},
};

/* Bytes of a part each block takes at least (more blocks only above that);
 * SYMTRAIN_GPU_MIN_CHUNK overrides. */
#define TWOSHOT_MIN_CHUNK ((size_t)32 << 10)
#define LL_LINES_PER_BLOCK 512

static const struct tune_row *tune_for(int npes) {
    for (size_t i = 0; i < sizeof tune_table / sizeof tune_table[0]; i++)
        if (npes <= tune_table[i].max_pes) return &tune_table[i];
    return &tune_table[sizeof tune_table / sizeof tune_table[0] - 1];
}

static const char *const coll_names[2][5] = {
    {"shmemx_gpu_allreduce", "shmemx_gpu_reduce_scatter", "shmemx_gpu_allgather",
     "shmemx_gpu_broadcast", "shmemx_gpu_alltoall"},
    {"shmemx_gpu_allreduce_team", "shmemx_gpu_reduce_scatter_team", "shmemx_gpu_allgather_team",
     "shmemx_gpu_broadcast_team", "shmemx_gpu_alltoall_team"}};
static const char *const algo_names[] = {"auto", "oneshot", "twoshot", "ring"};

static size_t div_up(size_t a, size_t b) { return (a + b - 1) / b; }
static int clampi(size_t v, int lo, int hi) {
    return v < (size_t)lo ? lo : v > (size_t)hi ? hi : (int)v;
}

/* Is [p, p+bytes) inside the GPU symmetric heap (*local), and reachable on
 * every member of team t (return value, with peer[] filled by team rank)?
 * nvshmem_ptr answers; the last few answers are kept, since a program passes
 * the same buffers again and again (the cache is emptied whenever symmetric
 * memory is freed or a team's state released). */
static struct sym_cache_entry {
    const void *p;
    size_t bytes;
    const struct sym_gpu_team *t;
    int local, all;
    uint8_t *peer[SYM_GPU_MAXP2P];
} sym_cache[8];
static unsigned sym_cache_next;

void sym__gpu_cache_clear(void) {
    memset(sym_cache, 0, sizeof sym_cache);
    sym_cache_next = 0;
}

static int symmetric(const struct sym_gpu_team *t, const void *p, size_t bytes, uint8_t **peer,
                     int *local) {
    struct sym_gpu_state *g = &sym__gpu;
    int dummy;
    if (!local) local = &dummy;
    *local = 0;
    if (!bytes) return 0;
    for (unsigned i = 0; i < sizeof sym_cache / sizeof sym_cache[0]; i++) {
        struct sym_cache_entry *c = &sym_cache[i];
        if (c->p == p && c->bytes == bytes && c->t == t) {
            *local = c->local;
            if (c->all) memcpy(peer, c->peer, sizeof c->peer);
            return c->all;
        }
    }
    struct sym_cache_entry *c =
        &sym_cache[sym_cache_next++ % (sizeof sym_cache / sizeof sym_cache[0])];
    memset(c, 0, sizeof *c);
    c->p = p;
    c->bytes = bytes;
    c->t = t;
    const char *b = (const char *)p;
    c->local = nvshmem_ptr(b, g->me) && nvshmem_ptr(b + bytes - 1, g->me);
    c->all = c->local && t->p2p;
    for (int q = 0; q < t->fixed.npes && c->all; q++) {
        c->peer[q] = (uint8_t *)nvshmem_ptr(b, t->fixed.pes[q]);
        if (!c->peer[q]) c->all = 0;
    }
    *local = c->local;
    if (c->all) memcpy(peer, c->peer, sizeof c->peer);
    return c->all;
}

/* ---- one entry point for the five collectives ---- */

static int run(int coll, shmem_team_t team, void *dest, const void *source, size_t count,
               shmemx_dtype_t dtype, int op, int root, cudaStream_t stream) {
    struct sym_gpu_state *g = &sym__gpu;
    const char *fn = coll_names[team != SHMEM_TEAM_WORLD][coll];
    if (!g->ready) {
        sym__warn(fn, "called before shmemx_gpu_init; call shmemx_gpu_init() after shmem_init()");
        return SHMEMX_GPU_ENOINIT;
    }
    if (team == SHMEM_TEAM_INVALID || shmem_team_my_pe(team) < 0) {
        sym__warn(fn, "the team is invalid or this PE is not a member");
        return SHMEMX_ETEAM;
    }
    int n = shmem_team_n_pes(team), me = shmem_team_my_pe(team);
    if (dtype != SHMEMX_FLOAT32 && dtype != SHMEMX_FLOAT16 && dtype != SHMEMX_BFLOAT16) {
        sym__warn(fn, "dtype %d is not supported on the GPU; use SHMEMX_FLOAT32, SHMEMX_FLOAT16 "
                  "or SHMEMX_BFLOAT16", (int)dtype);
        return SHMEMX_EINVAL;
    }
    if ((coll == SYM_GPU_ALLREDUCE || coll == SYM_GPU_REDUCE_SCATTER) &&
        (op < SHMEMX_SUM || op > SHMEMX_PROD)) {
        sym__warn(fn, "op %d is not a shmemx_op_t", op);
        return SHMEMX_EINVAL;
    }
    if (coll == SYM_GPU_BROADCAST && (root < 0 || root >= n)) {
        sym__warn(fn, "root %d is not a PE of the team (0..%d)", root, n - 1);
        return SHMEMX_EINVAL;
    }
    size_t es = dtype == SHMEMX_FLOAT32 ? 4 : 2;
    const bool a2a = coll == SYM_GPU_ALLTOALL;
    /* count-blocks in dest (and in an all-to-all's source) */
    size_t members = coll == SYM_GPU_ALLGATHER || a2a ? (size_t)n : 1;
    if (count > SIZE_MAX / es / members) {
        sym__warn(fn, "count %zu of %zu-byte elements%s is more bytes than a size_t holds", count,
                  es, members > 1 ? " from each member" : "");
        return SHMEMX_EINVAL;
    }
    if (count == 0) return 0;
    if (n > SYM_GPU_MAXPES) {
        sym__warn(fn, "a team of %d PEs: the GPU collectives support up to %d", n,
                  SYM_GPU_MAXPES);
        return SHMEMX_EINVAL;
    }
    bool src_needed = coll != SYM_GPU_BROADCAST || me == root;
    if (!dest || (src_needed && !source)) {
        sym__warn(fn, "dest or source is NULL with count %zu", count);
        return SHMEMX_EINVAL;
    }
    const uint8_t *src = (const uint8_t *)source;
    uint8_t *dst = (uint8_t *)dest;
    size_t dst_bytes = coll == SYM_GPU_ALLGATHER || a2a ? (size_t)n * count * es
                       : coll == SYM_GPU_REDUCE_SCATTER ? part_max(coll, count, n, (int)es) * es
                                                        : count * es;
    if (coll == SYM_GPU_ALLGATHER && src == dst) src = dst + (size_t)me * count * es;
    if (coll == SYM_GPU_BROADCAST && me != root) src = dst;
    if (a2a && (uintptr_t)src < (uintptr_t)dst + dst_bytes &&
        (uintptr_t)dst < (uintptr_t)src + dst_bytes) {
        sym__warn(fn, "dest and source overlap (an all-to-all is never in place); pass "
                  "separate buffers of %zu bytes each", dst_bytes);
        return SHMEMX_EINVAL;
    }

    /* one member: a copy */
    if (n == 1) {
        if (dst != src)
            SYM_GPU_CUDA(fn,
                         cudaMemcpyAsync(dst, src, count * es, cudaMemcpyDeviceToDevice, stream));
        g->last_algo = SHMEMX_GPU_ALGO_ONESHOT;
        return 0;
    }

    const struct sym_gpu_team *t = sym__gpu_team(team);
    struct sym_gpu_args a = t->fixed;
    a.src = src;
    a.dst = dst;
    a.count = count;
    a.coll = coll;
    a.dtype = dtype;
    a.op = op;
    a.root = root;
    a.es = (int)es;
    a.dst_sym = symmetric(t, dst, dst_bytes, a.peer_dst, NULL);
    uint8_t *src_peer[SYM_GPU_MAXP2P];
    (void)symmetric(t, src, (a2a ? (size_t)n : 1) * count * es, src_peer, &a.src_sym);

    /* ---- choose ---- */
    const struct tune_row *tune = tune_for(n);
    size_t bytes = coll == SYM_GPU_ALLGATHER || a2a ? (size_t)n * count * es : count * es;
    size_t oneshot_max = g->oneshot_max ? g->oneshot_max : tune->oneshot_max;
    /* one-shot payload per peer, in lines, and the blocks it needs */
    size_t payload = coll == SYM_GPU_REDUCE_SCATTER ? part_max(coll, count, n, (int)es) * es
                                                    : count * es;
    size_t lines = div_up(payload, 8);
    bool ll_fits = t->p2p && div_up(lines, SYM_GPU_LLCAP) <= SYM_GPU_MAXB_LL;
    shmemx_gpu_algo_t algo = g->force_algo;
    if (algo == SHMEMX_GPU_ALGO_AUTO)
        algo = !t->p2p                            ? SHMEMX_GPU_ALGO_RING
               : (bytes <= oneshot_max && ll_fits) ? SHMEMX_GPU_ALGO_ONESHOT
                                                   : SHMEMX_GPU_ALGO_TWOSHOT;
    if (algo == SHMEMX_GPU_ALGO_ONESHOT && a2a) /* no line form: pushes over NVLink */
        algo = t->p2p ? SHMEMX_GPU_ALGO_TWOSHOT : SHMEMX_GPU_ALGO_RING;
    if (algo == SHMEMX_GPU_ALGO_ONESHOT && !ll_fits)
        algo = t->p2p ? SHMEMX_GPU_ALGO_TWOSHOT : SHMEMX_GPU_ALGO_RING;
    if (algo == SHMEMX_GPU_ALGO_TWOSHOT && !t->p2p) algo = SHMEMX_GPU_ALGO_RING;

    const size_t min_chunk = g->min_chunk ? g->min_chunk : TWOSHOT_MIN_CHUNK;
    cudaError_t ce;
    int blocks;
    if (algo == SHMEMX_GPU_ALGO_ONESHOT) {
        int want = g->force_blocks ? g->force_blocks : (int)div_up(lines, LL_LINES_PER_BLOCK);
        blocks = clampi((size_t)want, (int)div_up(lines, SYM_GPU_LLCAP), SYM_GPU_MAXB_LL);
        if (blocks < 1) blocks = 1;
        a.chunk = div_up(lines, (size_t)blocks);
        size_t threads = (a.chunk + 31) / 32 * 32;
        int th = clampi(threads, 32, SYM_GPU_THREADS);
        ce = sym__gpu_launch_oneshot(&a, blocks, th, stream);
    } else if (algo == SHMEMX_GPU_ALGO_TWOSHOT) {
        int maxb = g->force_blocks      ? clampi((size_t)g->force_blocks, 1, SYM_GPU_MAXB)
                   : bytes >= tune->large ? tune->large_blocks
                                          : tune->twoshot_blocks;
        if (coll == SYM_GPU_ALLREDUCE || coll == SYM_GPU_REDUCE_SCATTER) {
            size_t pmax = part_max(coll, count, n, (int)es); /* elements */
            size_t epv = 16 / es;
            size_t che_max = (a.region / (2 * (size_t)n)) / 16 * 16 / es;
            blocks = g->force_blocks ? maxb : clampi(div_up(pmax * es, min_chunk), 1, maxb);
            size_t che = div_up(div_up(pmax, (size_t)blocks), epv) * epv;
            if (che > che_max) che = che_max;
            a.chunk = che;
            a.iters = (int)div_up(div_up(pmax, che), (size_t)blocks);
            ce = sym__gpu_launch_twoshot(&a, blocks, stream);
        } else {
            size_t len = count * es;
            blocks = g->force_blocks ? maxb : clampi(div_up(len, min_chunk), 1, maxb);
            size_t chb = div_up(div_up(len, (size_t)blocks), 16) * 16;
            size_t chb_max =
                a.dst_sym ? ((size_t)4 << 20) : (a.region / (2 * (size_t)n)) / 16 * 16;
            if (chb > chb_max) chb = chb_max;
            a.chunk = chb;
            a.iters = (int)div_up(div_up(len, chb), (size_t)blocks);
            ce = sym__gpu_launch_push(&a, blocks, stream);
        }
    } else {
        int maxb = g->force_blocks ? clampi((size_t)g->force_blocks, 1, SYM_GPU_MAXB)
                                   : tune->ring_blocks;
        int S = sym__gpu_ring_slots(coll, n);
        size_t slot_max = (a.region / (2 * (size_t)S)) / 16 * 16;
        bool reduce = coll == SYM_GPU_ALLREDUCE || coll == SYM_GPU_REDUCE_SCATTER;
        size_t unit = reduce ? es : 1; /* chunk counts elements, or bytes */
        size_t plen = reduce ? part_max(coll, count, n, (int)es) : count * es;
        blocks = g->force_blocks ? maxb : clampi(div_up(plen * unit, min_chunk), 1, maxb);
        size_t ch = div_up(div_up(plen, (size_t)blocks), 16 / unit) * (16 / unit);
        if (ch * unit > slot_max) ch = slot_max / unit;
        a.chunk = ch;
        a.iters = (int)div_up(div_up(plen, ch), (size_t)blocks);
        ce = sym__gpu_launch_ring(&a, blocks, stream);
    }
    if (ce != cudaSuccess) {
        sym__warn(fn, "kernel launch (%s, %d blocks) failed: %s", algo_names[algo],
                  blocks, cudaGetErrorString(ce));
        return SHMEMX_GPU_ECUDA;
    }
    g->last_algo = algo;
    return 0;
}

int sym__gpu_allreduce(shmem_team_t team, void *dest, const void *source, size_t count,
                       shmemx_dtype_t dtype, shmemx_op_t op, shmemx_gpu_stream_t stream) {
    return run(SYM_GPU_ALLREDUCE, team, dest, source, count, dtype, op, 0, (cudaStream_t)stream);
}

int sym__gpu_reduce_scatter(shmem_team_t team, void *dest, const void *source, size_t count,
                            shmemx_dtype_t dtype, shmemx_op_t op, shmemx_gpu_stream_t stream) {
    return run(SYM_GPU_REDUCE_SCATTER, team, dest, source, count, dtype, op, 0,
               (cudaStream_t)stream);
}

int sym__gpu_allgather(shmem_team_t team, void *dest, const void *source, size_t count,
                       shmemx_dtype_t dtype, shmemx_gpu_stream_t stream) {
    return run(SYM_GPU_ALLGATHER, team, dest, source, count, dtype, SHMEMX_SUM, 0,
               (cudaStream_t)stream);
}

int sym__gpu_broadcast(shmem_team_t team, void *dest, const void *source, size_t count,
                       shmemx_dtype_t dtype, int root, shmemx_gpu_stream_t stream) {
    return run(SYM_GPU_BROADCAST, team, dest, source, count, dtype, SHMEMX_SUM, root,
               (cudaStream_t)stream);
}

int sym__gpu_alltoall(shmem_team_t team, void *dest, const void *source, size_t count,
                      shmemx_dtype_t dtype, shmemx_gpu_stream_t stream) {
    return run(SYM_GPU_ALLTOALL, team, dest, source, count, dtype, SHMEMX_SUM, 0,
               (cudaStream_t)stream);
}
