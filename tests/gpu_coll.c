/*
 * gpu_coll.c — the GPU collectives against an fp64 CPU reference: all-reduce
 * and reduce-scatter for every dtype x op, all-gather and broadcast for every
 * dtype, at odd sizes, with each algorithm forced, with private (cudaMalloc)
 * and symmetric buffers, out of place and in place; then sequences of
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
 */
#include <math.h>
#include <stdlib.h>

#include "gpu_test.h"

enum { AR, RS, AG, BC };
static const char *const coll_name[] = {"allreduce", "reduce_scatter", "allgather", "broadcast"};
static const char *const op_name[] = {"sum", "avg", "min", "max", "prod"};
static const shmemx_dtype_t dtypes[] = {SHMEMX_FLOAT32, SHMEMX_FLOAT16, SHMEMX_BFLOAT16};
static const char *dt_name(shmemx_dtype_t d) {
    return d == SHMEMX_FLOAT32 ? "f32" : d == SHMEMX_FLOAT16 ? "f16" : "bf16";
}

static int me, npes, quick;
static uint64_t seed;
static cudaStream_t stream;
static uint8_t *sym_a, *sym_b, *priv_a, *priv_b; /* device buffers, BUF_BYTES each */
static uint8_t *h_in, *h_out, *h_tmp;            /* pinned host */
static double *ref, *scale;
static uint64_t *hashes;                          /* symmetric, npes */
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
} case_t;

static void describe(const case_t *k, char *buf, size_t len) {
    snprintf(buf, len, "case %ld: %s %s %s count=%zu root=%d algo=%s %s %s", ncases,
             coll_name[k->coll], dt_name(k->dtype),
             k->coll <= RS ? op_name[k->op] : "-", k->count, k->root,
             shmemx_gpu_algo_name(k->algo), k->sym ? "symmetric" : "private",
             k->inplace ? "in-place" : "out-of-place");
}

/* Reference for the current case into ref[] / scale[] (elements of the output). */
static void reference(const case_t *k, size_t *out_n) {
    size_t es = esize(k->dtype), count = k->count;
    if (k->coll == AR || k->coll == RS) {
        size_t off = 0, len = count;
        if (k->coll == RS) block_of(count, me, &off, &len);
        for (size_t i = 0; i < len; i++) {
            ref[i] = 0;
            scale[i] = k->op == SHMEMX_PROD ? 1 : 0;
        }
        for (int p = 0; p < npes; p++) {
            make_input(h_tmp, p, ncases, count, k->dtype, k->op);
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
        for (int p = 0; p < npes; p++) make_input(h_tmp + (size_t)p * count * es, p, ncases, count, k->dtype, 0);
        *out_n = (size_t)npes * count;
    } else {
        make_input(h_tmp, k->root, ncases, count, k->dtype, 0);
        *out_n = count;
    }
}

static void check_output(const case_t *k, size_t out_n) {
    char what[256];
    describe(k, what, sizeof what);
    size_t es = esize(k->dtype);
    if (k->coll == AG || k->coll == BC) {
        for (size_t i = 0; i < out_n * es; i++)
            if (h_out[i] != h_tmp[i]) {
                size_t e = i / es;
                CHECK(0, "%s: element %zu is %g, want %g (PE %zu's block)", what, e,
                      get(h_out, k->dtype, e), get(h_tmp, k->dtype, e),
                      k->coll == AG ? e / k->count : (size_t)k->root);
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
        /* every PE must hold the same bits */
        uint64_t h = fnv(h_out, out_n * es);
        shmem_putmem(&hashes[me], &h, sizeof h, 0);
        shmem_barrier_all();
        if (me == 0)
            for (int p = 1; p < npes; p++)
                CHECK(hashes[p] == hashes[0], "%s: PE %d's result differs from PE 0's", what, p);
        shmem_barrier_all();
    }
}

static void run_case(const case_t *k) {
    size_t es = esize(k->dtype), count = k->count;
    size_t in_bytes = count * es, off = 0, len = count;
    if (k->coll == RS) block_of(count, me, &off, &len);
    size_t out_n = k->coll == AG ? (size_t)npes * count : k->coll == RS ? len : count;
    size_t out_bytes = out_n * es;
    CHECK(in_bytes <= BUF_BYTES && out_bytes <= BUF_BYTES, "case too large for the buffers");
    uint8_t *a = k->sym ? sym_a : priv_a, *b = k->sym ? sym_b : priv_b;

    shmemx_gpu_set_algo(k->algo, 0);
    /* this PE's input */
    int p_in = k->coll == BC ? k->root : me;
    make_input(h_in, p_in, ncases, count, k->dtype, k->coll <= RS ? k->op : 0);
    uint8_t *src, *dst;
    if (k->inplace) {
        dst = a;
        CUDA(cudaMemsetAsync(a, 0xff, out_bytes > in_bytes ? out_bytes : in_bytes, stream));
        if (k->coll == AG) {
            CUDA(cudaMemcpyAsync(a + (size_t)me * in_bytes, h_in, in_bytes, cudaMemcpyHostToDevice, stream));
            src = (ncases & 1) ? a : a + (size_t)me * in_bytes; /* both spellings of in place */
        } else {
            if (k->coll != BC || me == k->root)
                CUDA(cudaMemcpyAsync(a, h_in, in_bytes, cudaMemcpyHostToDevice, stream));
            src = a;
        }
    } else {
        src = a;
        dst = b;
        CUDA(cudaMemcpyAsync(a, h_in, in_bytes, cudaMemcpyHostToDevice, stream));
        CUDA(cudaMemsetAsync(b, 0xff, out_bytes, stream));
    }
    int st = 0;
    switch (k->coll) {
    case AR: st = shmemx_gpu_allreduce(dst, src, count, k->dtype, k->op, stream); break;
    case RS: st = shmemx_gpu_reduce_scatter(dst, src, count, k->dtype, k->op, stream); break;
    case AG: st = shmemx_gpu_allgather(dst, src, count, k->dtype, stream); break;
    case BC: st = shmemx_gpu_broadcast(dst, src, count, k->dtype, k->root, stream); break;
    }
    char what[256];
    describe(k, what, sizeof what);
    CHECK(st == 0, "%s: returned %d (%s)", what, st, shmemx_gpu_strerror(st));
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
    size_t es = esize(k->dtype), in_bytes = k->count * es;
    size_t off, len;
    block_of(k->count, me, &off, &len);
    size_t out_bytes = (k->coll == AG ? (size_t)npes * k->count : k->coll == RS ? len : k->count) * es;
    if (k->coll != BC || me == k->root)
        CUDA(cudaMemcpyAsync(a, h_in + q->in_off, in_bytes, cudaMemcpyHostToDevice, stream));
    CUDA(cudaMemsetAsync(b, 0xff, out_bytes, stream));
    shmemx_gpu_set_algo(k->algo, 0);
    int st = 0;
    switch (k->coll) {
    case AR: st = shmemx_gpu_allreduce(b, a, k->count, k->dtype, k->op, stream); break;
    case RS: st = shmemx_gpu_reduce_scatter(b, a, k->count, k->dtype, k->op, stream); break;
    case AG: st = shmemx_gpu_allgather(b, a, k->count, k->dtype, stream); break;
    case BC: st = shmemx_gpu_broadcast(b, a, k->count, k->dtype, k->root, stream); break;
    }
    CHECK(st == 0, "queued %s: %d", coll_name[k->coll], st);
    CUDA(cudaMemcpyAsync(h_out + q->out_off, b, out_bytes, cudaMemcpyDeviceToHost, stream));
}

static void sequence(int sym, int graph) {
    static const struct {
        int coll;
        size_t count;
        shmemx_gpu_algo_t algo;
    } plan[] = {
        {BC, 1000, SHMEMX_GPU_ALGO_AUTO},     {AR, 70001, SHMEMX_GPU_ALGO_TWOSHOT},
        {BC, 300001, SHMEMX_GPU_ALGO_AUTO},   {AR, 5, SHMEMX_GPU_ALGO_ONESHOT},
        {AG, 4099, SHMEMX_GPU_ALGO_AUTO},     {RS, 200003, SHMEMX_GPU_ALGO_AUTO},
        {AR, 123457, SHMEMX_GPU_ALGO_RING},   {BC, 17, SHMEMX_GPU_ALGO_RING},
        {AR, 33, SHMEMX_GPU_ALGO_AUTO},       {AG, 100003, SHMEMX_GPU_ALGO_TWOSHOT},
        {RS, 1001, SHMEMX_GPU_ALGO_ONESHOT},  {AR, 400000, SHMEMX_GPU_ALGO_AUTO},
    };
    const int N = (int)(sizeof plan / sizeof plan[0]);
    queued_t q[sizeof plan / sizeof plan[0]];
    uint8_t *a = sym ? sym_a : priv_a, *b = sym ? sym_b : priv_b;
    size_t in_off = 0, out_off = 0;
    long base = ncases;
    for (int i = 0; i < N; i++) {
        case_t *k = &q[i].k;
        memset(k, 0, sizeof *k);
        k->coll = plan[i].coll;
        k->count = plan[i].count;
        k->algo = plan[i].algo;
        k->dtype = dtypes[(base + i) % 3];
        k->op = k->coll <= RS ? (int)((base + i) % 5) : 0;
        k->root = (int)((base + i) % npes);
        k->sym = sym;
        q[i].id = base + i;
        size_t es = esize(k->dtype);
        q[i].in_off = in_off;
        q[i].out_off = out_off;
        in_off += (k->count * es + 15) & ~(size_t)15;
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
            int p_in = q[i].k.coll == BC ? q[i].k.root : me;
            make_input(h_in + q[i].in_off, p_in, ncases, q[i].k.count, q[i].k.dtype,
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
    ncases = base + N + (graph ? 3000010L : 0);
    shmemx_gpu_set_algo(SHMEMX_GPU_ALGO_AUTO, 0);
}

int main(void) {
    shmem_init();
    me = test_pe = shmem_my_pe();
    npes = shmem_n_pes();
    const char *qs = getenv("SYMTRAIN_TEST_QUICK");
    quick = qs && *qs && strcmp(qs, "0") != 0;
    int st = shmemx_gpu_init();
    gpu_test_skip_if_no_gpu(st);
    CHECK_EQ_INT(st, 0);

    seed = shmem_test_agree_seed("gpu_coll");
    if (me == 0 && quick) printf("gpu_coll: quick subset (SYMTRAIN_TEST_QUICK)\n");
    hashes = shmem_malloc(sizeof(uint64_t) * (size_t)npes);
    CHECK(hashes, "shmem_malloc");

    const size_t maxcount = 2500001;
    BUF_BYTES = ((size_t)npes * maxcount * 4 + 4095) & ~(size_t)4095;
    CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    sym_a = shmemx_gpu_malloc(BUF_BYTES);
    sym_b = shmemx_gpu_malloc(BUF_BYTES);
    CHECK(sym_a && sym_b, "shmemx_gpu_malloc");
    CUDA(cudaMalloc((void **)&priv_a, BUF_BYTES));
    CUDA(cudaMalloc((void **)&priv_b, BUF_BYTES));
    CUDA(cudaMallocHost((void **)&h_in, BUF_BYTES));
    CUDA(cudaMallocHost((void **)&h_out, BUF_BYTES));
    h_tmp = malloc(BUF_BYTES);
    ref = malloc(sizeof(double) * (size_t)npes * maxcount);
    scale = malloc(sizeof(double) * (size_t)npes * maxcount);
    CHECK(h_tmp && ref && scale, "malloc");

    /* ---- A: every dtype x op, table's algorithm ---- */
    static const size_t countsA[] = {1, 7, 1000, 65539, 300001};
    static const size_t countsA_quick[] = {7, 65539};
    const size_t *cA = quick ? countsA_quick : countsA;
    int ncA = quick ? 2 : 5;
    for (int coll = AR; coll <= BC; coll++)
        for (int d = 0; d < 3; d++)
            for (int op = 0; op < (coll <= RS ? 5 : 1); op++)
                for (int c = 0; c < ncA; c++) {
                    case_t k = {coll, dtypes[d], op, cA[c], (int)(ncases % npes),
                                SHMEMX_GPU_ALGO_AUTO, (int)(ncases & 1), (int)((ncases >> 1) & 1)};
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
    for (int coll = AR; coll <= BC; coll++)
        for (int al = 0; al < 3; al++)
            for (int c = 0; c < ncB; c++)
                for (int pl = 0; pl < (quick ? 2 : 4); pl++) {
                    if (cB[c] > 300001 && algos[al] == SHMEMX_GPU_ALGO_ONESHOT) continue;
                    int pq = quick ? (int)((ncases + pl) & 3) : pl;
                    case_t k = {coll, dtypes[ncases % 3], (int)(ncases % 5), cB[c],
                                (int)(ncases % npes), algos[al], pq & 1, (pq >> 1) & 1};
                    run_case(&k);
                }
    long after_b = ncases;

    /* ---- C: back to back, stream and graph ---- */
    for (int sym = 0; sym < 2; sym++)
        for (int graph = 0; graph < 2; graph++) sequence(sym, graph);

    shmem_barrier_all();
    if (me == 0)
        printf("gpu_coll: ok: %ld single cases (%ld dtype x op, %ld algorithm x placement), "
               "4 back-to-back sequences (2 as graphs replayed 3 times)\n",
               after_b, after_a, after_b - after_a);
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
