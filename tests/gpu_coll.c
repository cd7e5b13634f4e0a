/*
 * gpu_coll.c — the GPU collectives against an fp64 CPU reference: all-reduce
 * and reduce-scatter for every dtype x op, all-gather, broadcast and
 * all-to-all for every dtype, at odd sizes, with each algorithm forced, with private (cudaMalloc)
 * and symmetric buffers, out of place and in place (all-gather and
 * reduce-scatter in both spellings: the PE's block where it lies, or at the
 * front / the source whole); then sequences of
 * different collectives and algorithms back to back on the same buffers with
 * no host synchronisation, and the same captured in a CUDA graph and replayed
 * (the kernels keep their own epochs, so replays must still match up).
 *
 * Every PE draws every PE's input from the shared seed, so each computes the
 * reference alone. Outputs are poisoned (NaN) first and every element is
 * checked: reductions within a bound that follows from fp32 accumulation and
 * one rounding (min/max exactly), gathers bit for bit, and all-reduce results
 * must be bit-identical on every PE. SYMTRAIN_TEST_QUICK=1 runs a subset (for
 * PEs sharing a GPU, which run time-sliced). SKIP without a GPU.
 *
 * `gpu_coll --teams` (an even number of PEs, 4 or more) runs the same checks
 * on sub-teams instead of the world (the _team entry points): even/odd PEs
 * (split_strided), the rows and columns of a 2-D split, a split_2d y axis of
 * every PE and an x axis of one; every dtype x op on each, sizes from 1
 * element to 4 MB; disjoint teams run at once (each PE works on its own);
 * then the world and four sub-teams interleaved in seeded orders on one
 * stream, once as a graph; then a destroyed team's index reused by a team of
 * other members. Inputs are drawn by world PE, so two teams never reduce the
 * same data and a result mixed up between teams shows.
 *
 * With SYMTRAIN_TEST_GPU_NO_P2P=1 (tests/gpu.cmake's _noP2P runs) no peer is
 * reached by stores, and every case must have run the ring: the way between
 * hosts, checked on one.
 */
#include <math.h>
#include <stdlib.h>

#include "gpu_test.h"

enum { AR, RS, AG, BC, A2A, NCOLL };
static const char *const coll_name[] = {"allreduce", "reduce_scatter", "allgather", "broadcast",
                                        "alltoall"};
static const char *const op_name[] = {"sum", "avg", "min", "max", "prod"};
static const shmemx_dtype_t dtypes[] = {SHMEMX_FLOAT32, SHMEMX_FLOAT16, SHMEMX_BFLOAT16};
static const char *dt_name(shmemx_dtype_t d) {
    return d == SHMEMX_FLOAT32 ? "f32" : d == SHMEMX_FLOAT16 ? "f16" : "bf16";
}

static int me, npes, quick;  /* me, npes: in `team`, the team the cases run on */
static int no_p2p;           /* SYMTRAIN_TEST_GPU_NO_P2P: every collective must be the ring */
static shmem_team_t team;    /* SHMEM_TEAM_WORLD, or the --teams section's */
static uint64_t seed;
static cudaStream_t stream;
static uint8_t *sym_a, *sym_b, *priv_a, *priv_b; /* device buffers, BUF_BYTES each */
static uint8_t *h_in, *h_out, *h_tmp;            /* pinned host */
static double *ref, *scale;
static uint64_t *hashes; /* symmetric, [team kind][npes] (see check_output) */
static size_t BUF_BYTES;
static long ncases;

/* ---- element conversion (host) ---- */

static size_t esize(shmemx_dtype_t d) { return d == SHMEMX_FLOAT32 ? 4 : 2; }

static uint16_t f2bf(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
static double get(const uint8_t *p, shmemx_dtype_t d, size_t i) {
    if (d == SHMEMX_FLOAT32) {
        float f;
        memcpy(&f, p + 4 * i, 4);
        return f;
    }
    uint16_t h;
    memcpy(&h, p + 2 * i, 2);
    if (d == SHMEMX_FLOAT16) {
        _Float16 x;
        memcpy(&x, &h, 2);
        return (double)x;
    }
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static void put(uint8_t *p, shmemx_dtype_t d, size_t i, double v) {
    if (d == SHMEMX_FLOAT32) {
        float f = (float)v;
        memcpy(p + 4 * i, &f, 4);
    } else if (d == SHMEMX_FLOAT16) {
        _Float16 x = (_Float16)(float)v;
        memcpy(p + 2 * i, &x, 2);
    } else {
        uint16_t h = f2bf((float)v);
        memcpy(p + 2 * i, &h, 2);
    }
}
static double unit_roundoff(shmemx_dtype_t d) {
    return d == SHMEMX_FLOAT32 ? 0x1p-24 : d == SHMEMX_FLOAT16 ? 0x1p-11 : 0x1p-8;
}

/* PE p's input for case c (count elements), as the dtype stores it. */
static void make_input(uint8_t *dst, int p, long c, size_t count, shmemx_dtype_t d, int op) {
    test_rng_t r = test_rng(seed, (uint64_t)c * 4096 + (uint64_t)p);
    for (size_t i = 0; i < count; i++) {
        double u = test_uniform(&r);
        double v = op == SHMEMX_PROD ? (0.5 + u) * (test_next(&r) & 1 ? 1 : -1) : 2 * u - 1;
        put(dst, d, i, v);
    }
}

static uint64_t fnv(const uint8_t *p, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

static void block_of(size_t count, int pe, size_t *off, size_t *len) {
    shmemx_block_range(count, npes, pe, off, len);
}

/* The world PE of team PE p: inputs are drawn by world PE, so two teams
 * running the same case at once reduce different data. */
static int wpe(int p) { return shmem_team_translate_pe(team, p, SHMEM_TEAM_WORLD); }

/* The collective of case k on `team` (the world's own entry points for the world). */
static int call(int coll, void *dst, const void *src, size_t count, shmemx_dtype_t d, int op,
                int root) {
    int w = team == SHMEM_TEAM_WORLD;
    switch (coll) {
    case AR:
        return w ? shmemx_gpu_allreduce(dst, src, count, d, op, stream)
                 : shmemx_gpu_allreduce_team(team, dst, src, count, d, op, stream);
    case RS:
        return w ? shmemx_gpu_reduce_scatter(dst, src, count, d, op, stream)
                 : shmemx_gpu_reduce_scatter_team(team, dst, src, count, d, op, stream);
    case AG:
        return w ? shmemx_gpu_allgather(dst, src, count, d, stream)
                 : shmemx_gpu_allgather_team(team, dst, src, count, d, stream);
    case A2A:
        return w ? shmemx_gpu_alltoall(dst, src, count, d, stream)
                 : shmemx_gpu_alltoall_team(team, dst, src, count, d, stream);
    default:
        return w ? shmemx_gpu_broadcast(dst, src, count, d, root, stream)
                 : shmemx_gpu_broadcast_team(team, dst, src, count, d, root, stream);
    }
}

/* Elements of a case's input and output on this PE (in `team`). */
static size_t in_elems(int coll, size_t count) {
    return coll == A2A ? (size_t)npes * count : count;
}
static size_t out_elems(int coll, size_t count) {
    size_t off, len;
    block_of(count, me, &off, &len);
    return coll == AG || coll == A2A ? (size_t)npes * count : coll == RS ? len : count;
}

/* ---- one case ---- */

typedef struct {
    int coll;
    shmemx_dtype_t dtype;
    int op;
    size_t count;
    int root;
    shmemx_gpu_algo_t algo;
    int sym;     /* symmetric buffers */
    int inplace;
    int kind;    /* the team (T_*), T_WORLD unless set */
} case_t;

/* ---- the teams the cases run on ---- */

enum { T_WORLD, T_PARITY, T_ROW, T_COL, T_FULL, T_SINGLE, T_NKINDS };
static const char *kind_name[T_NKINDS] = {
    "world", "parity (even/odd PEs, split_strided)", "row (split_2d x 2)",
    "column (split_2d x 2)", "all PEs (split_2d x 1, y axis)", "one PE (split_2d x 1, x axis)"};
static shmem_team_t teams[T_NKINDS];

static void use_team(int kind) {
    team = teams[kind];
    me = shmem_team_my_pe(team);
    npes = shmem_team_n_pes(team);
}

static void describe(const case_t *k, char *buf, size_t len) {
    snprintf(buf, len, "case %ld: team %s: %s %s %s count=%zu root=%d algo=%s %s %s", ncases,
             kind_name[k->kind],
             coll_name[k->coll], dt_name(k->dtype),
             k->coll <= RS ? op_name[k->op] : "-", k->count, k->root,
             shmemx_gpu_algo_name(k->algo), k->sym ? "symmetric" : "private",
             k->inplace && k->coll != A2A ? "in-place" : "out-of-place");
}

/* Reference for the current case into ref[] / scale[] (elements of the output). */
static void reference(const case_t *k, size_t *out_n) {
    use_team(k->kind);
    size_t es = esize(k->dtype), count = k->count;
    if (k->coll == AR || k->coll == RS) {
        size_t off = 0, len = count;
        if (k->coll == RS) block_of(count, me, &off, &len);
        for (size_t i = 0; i < len; i++) {
            ref[i] = 0;
            scale[i] = k->op == SHMEMX_PROD ? 1 : 0;
        }
        for (int p = 0; p < npes; p++) {
            make_input(h_tmp, wpe(p), ncases, count, k->dtype, k->op);
            for (size_t i = 0; i < len; i++) {
                double x = get(h_tmp, k->dtype, off + i);
                if (p == 0) {
                    ref[i] = x;
                } else {
                    switch (k->op) {
                    case SHMEMX_MIN: ref[i] = fmin(ref[i], x); break;
                    case SHMEMX_MAX: ref[i] = fmax(ref[i], x); break;
                    case SHMEMX_PROD: ref[i] *= x; break;
                    default: ref[i] += x;
                    }
                }
                if (k->op == SHMEMX_PROD)
                    scale[i] *= fabs(x);
                else
                    scale[i] += fabs(x);
            }
        }
        if (k->op == SHMEMX_AVG)
            for (size_t i = 0; i < len; i++) {
                ref[i] /= npes;
                scale[i] /= npes;
            }
        *out_n = len;
    } else if (k->coll == AG) {
        for (int p = 0; p < npes; p++)
            make_input(h_tmp + (size_t)p * count * es, wpe(p), ncases, count, k->dtype, 0);
        *out_n = (size_t)npes * count;
    } else if (k->coll == A2A) { /* block p: PE p's input block me */
        uint8_t *all = h_tmp + (size_t)npes * count * es; /* BUF_BYTES holds both */
        for (int p = 0; p < npes; p++) {
            make_input(all, wpe(p), ncases, (size_t)npes * count, k->dtype, 0);
            memcpy(h_tmp + (size_t)p * count * es, all + (size_t)me * count * es, count * es);
        }
        *out_n = (size_t)npes * count;
    } else {
        make_input(h_tmp, wpe(k->root), ncases, count, k->dtype, 0);
        *out_n = count;
    }
}

static void check_output(const case_t *k, size_t out_n) {
    use_team(k->kind);
    char what[256];
    describe(k, what, sizeof what);
    size_t es = esize(k->dtype);
    if (k->coll == AG || k->coll == BC || k->coll == A2A) {
        for (size_t i = 0; i < out_n * es; i++)
            if (h_out[i] != h_tmp[i]) {
                size_t e = i / es;
                CHECK(0, "%s: element %zu is %g, want %g (PE %zu's block)", what, e,
                      get(h_out, k->dtype, e), get(h_tmp, k->dtype, e),
                      k->coll == BC ? (size_t)k->root : e / k->count);
            }
        return;
    }
    double u = unit_roundoff(k->dtype), err2 = 0, ref2 = 0, sc2 = 0;
    for (size_t i = 0; i < out_n; i++) {
        double got = get(h_out, k->dtype, i);
        CHECK(!isnan(got), "%s: element %zu not written (NaN poison left)", what, i);
        double tol = (k->op == SHMEMX_MIN || k->op == SHMEMX_MAX) ? 0 : 2.0 * npes * u * scale[i] + 1e-30;
        CHECK(fabs(got - ref[i]) <= tol, "%s: element %zu is %.9g, want %.9g (tolerance %.3g)",
              what, i, got, ref[i], tol);
        err2 += (got - ref[i]) * (got - ref[i]);
        ref2 += ref[i] * ref[i];
        sc2 += scale[i] * scale[i];
    }
    double rel = k->dtype == SHMEMX_FLOAT32 ? 1e-5 : k->dtype == SHMEMX_FLOAT16 ? 2e-3 : 1e-2;
    CHECK(sqrt(err2) <= rel * sqrt(sc2 > ref2 ? sc2 : ref2) + 1e-30,
          "%s: |out-ref|/|ref| = %.3g over the vector", what, sqrt(err2) / (sqrt(ref2) + 1e-300));
    if (k->coll == AR) {
        /* every member must hold the same bits (hashes: indexed by team PE, on
         * team PE 0). A row per team kind: a PE can be team PE 0 of teams of
         * several kinds, and a member of one may post its hash while members
         * of another still read theirs (the syncs are per team). */
        uint64_t *row = hashes + (size_t)k->kind * (size_t)shmem_n_pes();
        uint64_t h = fnv(h_out, out_n * es);
        shmem_putmem(&row[me], &h, sizeof h, wpe(0));
        shmem_quiet();
        shmem_team_sync(team);
        if (me == 0)
            for (int p = 1; p < npes; p++)
                CHECK(row[p] == row[0], "%s: team PE %d's result differs from PE 0's",
                      what, p);
        shmem_team_sync(team);
    }
}

static void run_case(const case_t *k) {
    use_team(k->kind);
    size_t es = esize(k->dtype), count = k->count;
    size_t in_bytes = in_elems(k->coll, count) * es, off = 0, len = count;
    if (k->coll == RS) block_of(count, me, &off, &len);
    size_t out_n = out_elems(k->coll, count);
    size_t out_bytes = out_n * es;
    CHECK(in_bytes <= BUF_BYTES && out_bytes <= BUF_BYTES, "case too large for the buffers");
    uint8_t *a = k->sym ? sym_a : priv_a, *b = k->sym ? sym_b : priv_b;

    shmemx_gpu_set_algo(k->algo, 0);
    /* this PE's input */
    int p_in = k->coll == BC ? k->root : me;
    make_input(h_in, wpe(p_in), ncases, in_elems(k->coll, count), k->dtype,
               k->coll <= RS ? k->op : 0);
    uint8_t *src, *dst;
    if (k->inplace && k->coll != A2A) { /* an all-to-all is never in place */
        dst = a;
        CUDA(cudaMemsetAsync(a, 0xff, out_bytes > in_bytes ? out_bytes : in_bytes, stream));
        if (k->coll == AG) {
            CUDA(cudaMemcpyAsync(a + (size_t)me * in_bytes, h_in, in_bytes, cudaMemcpyHostToDevice, stream));
            src = (ncases & 1) ? a : a + (size_t)me * in_bytes; /* both spellings of in place */
        } else {
            if (k->coll != BC || me == k->root)
                CUDA(cudaMemcpyAsync(a, h_in, in_bytes, cudaMemcpyHostToDevice, stream));
            src = a;
            /* reduce-scatter: the block at the front, or where it is (ZeRO-1's form) */
            if (k->coll == RS && (ncases & 1)) dst = a + off * es;
        }
    } else {
        src = a;
        dst = b;
        CUDA(cudaMemcpyAsync(a, h_in, in_bytes, cudaMemcpyHostToDevice, stream));
        CUDA(cudaMemsetAsync(b, 0xff, out_bytes, stream));
    }
    int st = call(k->coll, dst, src, count, k->dtype, k->op, k->root);
    char what[256];
    describe(k, what, sizeof what);
    CHECK(st == 0, "%s: returned %d (%s)", what, st, shmemx_gpu_strerror(st));
    CHECK(!no_p2p || npes < 2 || shmemx_gpu_last_algo() == SHMEMX_GPU_ALGO_RING,
          "%s: ran %s with SYMTRAIN_TEST_GPU_NO_P2P (only the ring reaches no peer by stores)",
          what, shmemx_gpu_algo_name(shmemx_gpu_last_algo()));
    CUDA(cudaMemcpyAsync(h_out, dst, out_bytes, cudaMemcpyDeviceToHost, stream));
    cudaError_t ce = cudaStreamSynchronize(stream);
    CHECK(ce == cudaSuccess, "%s: %s", what, cudaGetErrorString(ce));
    size_t rn;
    reference(k, &rn);
    CHECK(rn == out_n, "internal: reference size");
    check_output(k, out_n);
    ncases++;
}

/* ---- back to back: many collectives queued on one stream, then one check ---- */

typedef struct {
    case_t k;
    size_t in_off, out_off; /* in h_in / h_out */
    long id;
} queued_t;

static void enqueue(const case_t *k, const queued_t *q, uint8_t *a, uint8_t *b) {
    use_team(k->kind);
    size_t es = esize(k->dtype), in_bytes = in_elems(k->coll, k->count) * es;
    size_t out_bytes = out_elems(k->coll, k->count) * es;
    if (k->coll != BC || me == k->root)
        CUDA(cudaMemcpyAsync(a, h_in + q->in_off, in_bytes, cudaMemcpyHostToDevice, stream));
    CUDA(cudaMemsetAsync(b, 0xff, out_bytes, stream));
    shmemx_gpu_set_algo(k->algo, 0);
    int st = call(k->coll, b, a, k->count, k->dtype, k->op, k->root);
    CHECK(st == 0, "queued %s: %d", coll_name[k->coll], st);
    CUDA(cudaMemcpyAsync(h_out + q->out_off, b, out_bytes, cudaMemcpyDeviceToHost, stream));
}

typedef struct {
    int coll;
    size_t count;
    shmemx_gpu_algo_t algo;
    int kind;
} plan_t;

/* The plan's collectives queued on one stream with no host synchronisation
 * (as a graph, replayed 3 times, if `graph`), then every result checked. */
static void sequence(const plan_t *plan, int N, int sym, int graph) {
    queued_t *q = calloc((size_t)N, sizeof *q);
    CHECK(q, "malloc");
    uint8_t *a = sym ? sym_a : priv_a, *b = sym ? sym_b : priv_b;
    size_t in_off = 0, out_off = 0;
    long base = ncases;
    for (int i = 0; i < N; i++) {
        case_t *k = &q[i].k;
        memset(k, 0, sizeof *k);
        k->coll = plan[i].coll;
        k->count = plan[i].count;
        k->algo = plan[i].algo;
        k->kind = plan[i].kind;
        use_team(k->kind);
        k->dtype = dtypes[(base + i) % 3];
        k->op = k->coll <= RS ? (int)((base + i) % 5) : 0;
        k->root = (int)((base + i) % npes);
        k->sym = sym;
        q[i].id = base + i;
        size_t es = esize(k->dtype);
        q[i].in_off = in_off;
        q[i].out_off = out_off;
        in_off += (in_elems(k->coll, k->count) * es + 15) & ~(size_t)15;
        out_off += ((size_t)npes * k->count * es + 15) & ~(size_t)15;
        CHECK(in_off <= BUF_BYTES && out_off <= BUF_BYTES, "sequence too large");
    }
    int reps = graph ? 3 : 1;
    cudaGraphExec_t exec = NULL;
    if (graph) {
        cudaGraph_t g;
        CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
        for (int i = 0; i < N; i++) enqueue(&q[i].k, &q[i], a, b);
        CUDA(cudaStreamEndCapture(stream, &g));
        CUDA(cudaGraphInstantiate(&exec, g, 0));
        CUDA(cudaGraphDestroy(g));
    }
    for (int rep = 0; rep < reps; rep++) {
        /* fresh inputs each replay: the graph reads the same host buffer */
        for (int i = 0; i < N; i++) {
            ncases = q[i].id + rep * 1000003L;
            use_team(q[i].k.kind);
            int p_in = q[i].k.coll == BC ? q[i].k.root : me;
            make_input(h_in + q[i].in_off, wpe(p_in), ncases,
                       in_elems(q[i].k.coll, q[i].k.count), q[i].k.dtype,
                       q[i].k.coll <= RS ? q[i].k.op : 0);
        }
        shmem_barrier_all();
        if (graph)
            CUDA(cudaGraphLaunch(exec, stream));
        else
            for (int i = 0; i < N; i++) enqueue(&q[i].k, &q[i], a, b);
        cudaError_t ce = cudaStreamSynchronize(stream);
        CHECK(ce == cudaSuccess, "sequence (%s, %s): %s", sym ? "symmetric" : "private",
              graph ? "graph" : "stream", cudaGetErrorString(ce));
        uint8_t *save = h_out;
        for (int i = 0; i < N; i++) {
            ncases = q[i].id + rep * 1000003L;
            size_t rn;
            reference(&q[i].k, &rn);
            h_out = save + q[i].out_off;
            check_output(&q[i].k, rn);
            h_out = save;
        }
    }
    if (exec) CUDA(cudaGraphExecDestroy(exec));
    free(q);
    ncases = base + N + (graph ? 3000010L : 0);
    shmemx_gpu_set_algo(SHMEMX_GPU_ALGO_AUTO, 0);
    use_team(T_WORLD);
}

static const plan_t world_plan[] = {
    {BC, 1000, SHMEMX_GPU_ALGO_AUTO, 0},    {AR, 70001, SHMEMX_GPU_ALGO_TWOSHOT, 0},
    {BC, 300001, SHMEMX_GPU_ALGO_AUTO, 0},  {AR, 5, SHMEMX_GPU_ALGO_ONESHOT, 0},
    {AG, 4099, SHMEMX_GPU_ALGO_AUTO, 0},    {RS, 200003, SHMEMX_GPU_ALGO_AUTO, 0},
    {AR, 123457, SHMEMX_GPU_ALGO_RING, 0},  {BC, 17, SHMEMX_GPU_ALGO_RING, 0},
    {AR, 33, SHMEMX_GPU_ALGO_AUTO, 0},      {AG, 100003, SHMEMX_GPU_ALGO_TWOSHOT, 0},
    {RS, 1001, SHMEMX_GPU_ALGO_ONESHOT, 0}, {AR, 400000, SHMEMX_GPU_ALGO_AUTO, 0},
    {A2A, 4099, SHMEMX_GPU_ALGO_AUTO, 0},   {A2A, 70001, SHMEMX_GPU_ALGO_RING, 0},
    {AR, 9, SHMEMX_GPU_ALGO_AUTO, 0},
};

/* ---- the world: sections A, B, C ---- */

static void world_main(void) {
    /* ---- A: every dtype x op, table's algorithm ---- */
    static const size_t countsA[] = {1, 7, 1000, 65539, 300001};
    static const size_t countsA_quick[] = {7, 65539};
    const size_t *cA = quick ? countsA_quick : countsA;
    int ncA = quick ? 2 : 5;
    for (int coll = AR; coll < NCOLL; coll++)
        for (int d = 0; d < 3; d++)
            for (int op = 0; op < (coll <= RS ? 5 : 1); op++)
                for (int c = 0; c < ncA; c++) {
                    case_t k = {coll, dtypes[d], op, cA[c], (int)(ncases % npes),
                                SHMEMX_GPU_ALGO_AUTO, (int)(ncases & 1), (int)((ncases >> 1) & 1),
                                T_WORLD};
                    run_case(&k);
                }
    long after_a = ncases;

    /* ---- B: each algorithm x placement, odd sizes, rotating dtype and op ---- */
    static const size_t countsB[] = {1, 3, 8, 33, 4097, 65536, 300001, 2500001};
    static const size_t countsB_quick[] = {3, 4097, 300001};
    const size_t *cB = quick ? countsB_quick : countsB;
    int ncB = quick ? 3 : 8;
    static const shmemx_gpu_algo_t algos[] = {SHMEMX_GPU_ALGO_ONESHOT, SHMEMX_GPU_ALGO_TWOSHOT,
                                              SHMEMX_GPU_ALGO_RING};
    for (int coll = AR; coll < NCOLL; coll++)
        for (int al = 0; al < 3; al++)
            for (int c = 0; c < ncB; c++)
                for (int pl = 0; pl < (quick ? 2 : 4); pl++) {
                    if (cB[c] > 300001 && algos[al] == SHMEMX_GPU_ALGO_ONESHOT) continue;
                    int pq = quick ? (int)((ncases + pl) & 3) : pl;
                    case_t k = {coll, dtypes[ncases % 3], (int)(ncases % 5), cB[c],
                                (int)(ncases % npes), algos[al], pq & 1, (pq >> 1) & 1, T_WORLD};
                    run_case(&k);
                }
    long after_b = ncases;

    /* ---- C: back to back, stream and graph ---- */
    for (int sym = 0; sym < 2; sym++)
        for (int graph = 0; graph < 2; graph++)
            sequence(world_plan, (int)(sizeof world_plan / sizeof world_plan[0]), sym, graph);

    shmem_barrier_all();
    if (me == 0)
        printf("gpu_coll: ok: %ld single cases (%ld dtype x op, %ld algorithm x placement), "
               "4 back-to-back sequences (2 as graphs replayed 3 times)\n",
               after_b, after_a, after_b - after_a);
}

/* ---- --teams: the collectives over sub-teams (an even number of PEs, 4 or more) ---- */

static void make_teams(void) {
    int wn = shmem_n_pes(), wme = shmem_my_pe();
    shmem_team_t even, odd;
    CHECK_EQ_INT(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, wn / 2, NULL, 0, &even), 0);
    CHECK_EQ_INT(shmem_team_split_strided(SHMEM_TEAM_WORLD, 1, 2, wn / 2, NULL, 0, &odd), 0);
    teams[T_PARITY] = wme % 2 ? odd : even;
    CHECK_EQ_INT(shmem_team_split_2d(SHMEM_TEAM_WORLD, 2, NULL, 0, &teams[T_ROW], NULL, 0,
                                     &teams[T_COL]),
                 0);
    CHECK_EQ_INT(shmem_team_split_2d(SHMEM_TEAM_WORLD, 1, NULL, 0, &teams[T_SINGLE], NULL, 0,
                                     &teams[T_FULL]),
                 0);
    for (int k = 0; k < T_NKINDS; k++)
        CHECK(teams[k] != SHMEM_TEAM_INVALID, "team %s: not made", kind_name[k]);
}

/* Bad arguments: refused on every PE before anything is enqueued (so no PE waits). */
static void team_errors(void) {
    use_team(T_PARITY);
    uint8_t *x = sym_a;
    CHECK_EQ_INT(shmemx_gpu_allreduce_team(SHMEM_TEAM_INVALID, x, x, 1, SHMEMX_FLOAT32,
                                           SHMEMX_SUM, stream), SHMEMX_ETEAM);
    CHECK_EQ_INT(shmemx_gpu_reduce_scatter_team(SHMEM_TEAM_INVALID, x, x, 1, SHMEMX_FLOAT32,
                                                SHMEMX_SUM, stream), SHMEMX_ETEAM);
    CHECK_EQ_INT(shmemx_gpu_allgather_team(SHMEM_TEAM_INVALID, x, x, 1, SHMEMX_FLOAT32, stream),
                 SHMEMX_ETEAM);
    CHECK_EQ_INT(shmemx_gpu_broadcast_team(SHMEM_TEAM_INVALID, x, x, 1, SHMEMX_FLOAT32, 0,
                                           stream), SHMEMX_ETEAM);
    CHECK_EQ_INT(shmemx_gpu_alltoall_team(SHMEM_TEAM_INVALID, x, sym_b, 1, SHMEMX_FLOAT32,
                                          stream), SHMEMX_ETEAM);
    /* an all-to-all's dest and source overlapping (in place, or one block apart) */
    CHECK_EQ_INT(shmemx_gpu_alltoall_team(team, x, x, 1, SHMEMX_FLOAT32, stream), SHMEMX_EINVAL);
    CHECK_EQ_INT(shmemx_gpu_alltoall_team(team, x + 4, x, 1, SHMEMX_FLOAT32, stream),
                 SHMEMX_EINVAL);
    CHECK_EQ_INT(shmemx_gpu_alltoall_team(team, x, x, SIZE_MAX / 4 / (size_t)npes + 1,
                                          SHMEMX_FLOAT32, stream), SHMEMX_EINVAL);
    CHECK_EQ_INT(shmemx_gpu_allreduce_team(team, x, x, SIZE_MAX / 2, SHMEMX_FLOAT32, SHMEMX_SUM,
                                           stream), SHMEMX_EINVAL);
    /* fits for one member, not for the team's npes blocks of dest */
    CHECK_EQ_INT(shmemx_gpu_allgather_team(team, x, x, SIZE_MAX / 4 / (size_t)npes + 1,
                                           SHMEMX_FLOAT32, stream), SHMEMX_EINVAL);
    CHECK_EQ_INT(shmemx_gpu_broadcast_team(team, x, x, 1, SHMEMX_FLOAT32, npes, stream),
                 SHMEMX_EINVAL);
    CHECK_EQ_INT(shmemx_gpu_allreduce_team(team, x, x, 1, SHMEMX_FLOAT64, SHMEMX_SUM, stream),
                 SHMEMX_EINVAL);
    use_team(T_WORLD);
}

/* Every dtype x op of every collective on team `kind`, sizes and algorithms
 * rotating (1 element to 4 MB), placement and in-place rotating. */
static void team_cases(int kind) {
    static const size_t counts[] = {1, 7, 1000, 65539, 300001, 1000003};
    static const shmemx_gpu_algo_t algos[] = {SHMEMX_GPU_ALGO_AUTO, SHMEMX_GPU_ALGO_ONESHOT,
                                              SHMEMX_GPU_ALGO_TWOSHOT, SHMEMX_GPU_ALGO_RING};
    int nc = quick ? 3 : 6;
    for (int coll = AR; coll < NCOLL; coll++)
        for (int d = 0; d < 3; d++)
            for (int op = 0; op < (coll <= RS ? 5 : 1); op++) {
                use_team(kind);
                case_t k = {coll, dtypes[d], op, counts[ncases % nc], (int)(ncases % npes),
                            algos[(ncases / 3) % 4], (int)(ncases & 1),
                            (int)((ncases >> 1) & 1), kind};
                run_case(&k);
            }
}

/* Collectives of the world and of the sub-teams interleaved on one stream,
 * each group of five in an order drawn from the shared seed: `groups` groups. */
static void interleaved(int groups, int sym, int graph, const int *kinds, int nk) {
    static const size_t counts[] = {1, 33, 4099, 30001};
    static const shmemx_gpu_algo_t algos[] = {SHMEMX_GPU_ALGO_AUTO, SHMEMX_GPU_ALGO_ONESHOT,
                                              SHMEMX_GPU_ALGO_TWOSHOT, SHMEMX_GPU_ALGO_RING};
    plan_t plan[64];
    CHECK(groups * nk <= 64, "internal: plan too long");
    test_rng_t r = test_rng(seed, 77 + (uint64_t)ncases);
    int n = 0;
    for (int g = 0; g < groups; g++) {
        int order[T_NKINDS];
        for (int i = 0; i < nk; i++) order[i] = kinds[i];
        for (int i = nk - 1; i > 0; i--) { /* Fisher-Yates, the same on every PE */
            int j = (int)(test_next(&r) % (uint64_t)(i + 1)), t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
        for (int i = 0; i < nk; i++) { /* one draw a statement: a fixed order */
            plan[n].coll = (int)(test_next(&r) % NCOLL);
            plan[n].count = counts[test_next(&r) % 4];
            plan[n].algo = algos[test_next(&r) % 4];
            plan[n++].kind = order[i];
        }
    }
    sequence(plan, n, sym, graph);
}

static void teams_main(void) {
    int wn = shmem_n_pes();
    CHECK(wn >= 4 && wn % 2 == 0, "--teams needs an even number of PEs, 4 or more (got %d)", wn);
    make_teams();
    team_errors();
    long c0 = ncases;
    for (int kind = T_PARITY; kind < T_NKINDS; kind++) team_cases(kind);
    long c1 = ncases;
    /* 40 groups of the world and four sub-teams interleaved, 5 groups a sequence */
    static const int mix[] = {T_WORLD, T_PARITY, T_ROW, T_COL, T_FULL};
    int seqs = quick ? 2 : 8;
    for (int i = 0; i < seqs; i++) interleaved(5, i & 1, i == seqs - 1, mix, 5);
    long c2 = ncases; /* past the sequences' case ids (a graph's are offset) */

    /* A destroyed team's index given to a team of other members: its flags
     * and clocks must start afresh (PE 0's index of the even team now joins
     * it with the last PE, PE 1's of the odd team with PE 2). */
    shmem_team_destroy(teams[T_PARITY]);
    shmem_team_t ends, middle;
    CHECK_EQ_INT(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, wn - 1, 2, NULL, 0, &ends), 0);
    CHECK_EQ_INT(shmem_team_split_strided(SHMEM_TEAM_WORLD, 1, 1, wn - 2, NULL, 0, &middle), 0);
    teams[T_PARITY] = ends != SHMEM_TEAM_INVALID ? ends : middle;
    kind_name[T_PARITY] = "first and last PE / the others (a reused team index)";
    team_cases(T_PARITY);
    for (int i = 0; i < 2; i++) interleaved(5, i, 0, mix, 5);
    long c3 = ncases;

    for (int kind = T_PARITY; kind < T_NKINDS; kind++) shmem_team_destroy(teams[kind]);
    shmem_barrier_all();
    if (shmem_my_pe() == 0)
        printf("gpu_coll --teams: ok: %ld cases on 5 sub-team kinds (every dtype x op), %d "
               "sequences of world and sub-team collectives interleaved (%d collectives, one "
               "sequence as a graph replayed 3 times), %ld after a team index was reused\n",
               c1 - c0, seqs, seqs * 5 * 5, c3 - c2);
}

int main(int argc, char **argv) {
    shmem_init();
    me = test_pe = shmem_my_pe();
    npes = shmem_n_pes();
    team = teams[T_WORLD] = SHMEM_TEAM_WORLD;
    int teams_mode = argc > 1 && !strcmp(argv[1], "--teams");
    const char *qs = getenv("SYMTRAIN_TEST_QUICK");
    quick = qs && *qs && strcmp(qs, "0") != 0;
    const char *np = getenv("SYMTRAIN_TEST_GPU_NO_P2P");
    no_p2p = np && *np && strcmp(np, "0") != 0;
    int st = shmemx_gpu_init();
    gpu_test_skip_if_no_gpu(st);
    CHECK_EQ_INT(st, 0);

    seed = shmem_test_agree_seed("gpu_coll");
    if (me == 0 && quick) printf("gpu_coll: quick subset (SYMTRAIN_TEST_QUICK)\n");
    hashes = shmem_malloc(sizeof(uint64_t) * T_NKINDS * (size_t)npes);
    CHECK(hashes, "shmem_malloc");

    const size_t maxcount = teams_mode ? 1000003 : 2500001;
    BUF_BYTES = ((size_t)npes * maxcount * 4 + 4095) & ~(size_t)4095;
    CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    sym_a = shmemx_gpu_malloc(BUF_BYTES);
    sym_b = shmemx_gpu_malloc(BUF_BYTES);
    CHECK(sym_a && sym_b, "shmemx_gpu_malloc");
    CUDA(cudaMalloc((void **)&priv_a, BUF_BYTES));
    CUDA(cudaMalloc((void **)&priv_b, BUF_BYTES));
    CUDA(cudaMallocHost((void **)&h_in, BUF_BYTES));
    CUDA(cudaMallocHost((void **)&h_out, BUF_BYTES));
    h_tmp = malloc(2 * BUF_BYTES); /* an all-to-all's reference needs a second half */
    ref = malloc(sizeof(double) * (size_t)npes * maxcount);
    scale = malloc(sizeof(double) * (size_t)npes * maxcount);
    CHECK(h_tmp && ref && scale, "malloc");

    if (teams_mode)
        teams_main();
    else
        world_main();
    cudaFree(priv_a);
    cudaFree(priv_b);
    shmemx_gpu_free(sym_b);
    shmemx_gpu_free(sym_a);
    cudaFreeHost(h_in);
    cudaFreeHost(h_out);
    CHECK_EQ_INT(shmemx_gpu_finalize(), 0);
    shmem_free(hashes);
    shmem_finalize();
    return 0;
}
