/*
 * symbench-gpu — GPU collective and put benchmarks, each beside its baseline
 * measured in the same run (symbench gpu-* execs this).
 *
 *   symrun -n 2 symbench-gpu gpu-allreduce [options]
 *   symrun -n 2 symbench-gpu gpu-reduce-scatter | gpu-allgather | gpu-broadcast |
 *                            gpu-alltoall
 *   symrun -n 2 symbench-gpu gpu-put [--mpi-table FILE]
 *
 * Collectives: a nccl-tests-style table, one line per size (8 B to 1 GiB by
 * default): symtrain's collective and NCCL's (ncclAllReduce, ...), on the same
 * buffers, in the same process, each timed on a stream and as a CUDA graph of
 * the same ops, with algbw = size / time, busbw = algbw x the nccl-tests factor
 * (all-reduce 2(n-1)/n; reduce-scatter, all-gather, all-to-all (n-1)/n;
 * broadcast 1) and the ratio NCCL time / our time (> 1: we are faster).
 * `size` follows nccl-tests: all-reduce and broadcast the vector,
 * reduce-scatter the input, all-gather the output, all-to-all either (NCCL's
 * is grouped ncclSend/ncclRecv, as nccl-tests'). A time is the median of 3 runs of `iters` ops, the
 * slowest PE's. Before timing each size, one result of ours is checked
 * against NCCL's (column ok).
 *
 * gpu-put: NVSHMEM device put from PE 0 to PE 1: latency (put with signal,
 * ping-pong, half the round trip) and bandwidth (many blocks, one way), beside
 * MPI with host staging (cudaMemcpy D2H, MPI_Send/Recv, H2D), which
 * bench/gpu/mpi_staged.c (symbench-gpu-mpi, run with mpirun) measures and
 * writes to the table named by --mpi-table.
 *
 * Options: -b MIN -e MAX -f FACTOR (sizes, bytes, K/M/G suffixes), -t float|half|
 * bfloat16, -o sum|avg|min|max|prod, -n ITERS (0: by size), --algo auto|oneshot|
 * twoshot|ring, --blocks N, --private (cudaMalloc buffers, not symmetric),
 * --no-nccl, --no-graph, --root R.
 * NCCL_NVLS_ENABLE=0 and NVSHMEM_DISABLE_NVLS=1 are set here unless already set.
 */
#include <cuda_runtime.h>
#include <math.h>
#include <nvshmem.h>
#include <nvshmemx.h>
#include <shmem.h>
#include <shmemx_gpu.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef SYM_HAVE_NCCL
#include <nccl.h>
#endif

static int me, npes;

#define DIE(...)                                                                     \
    do {                                                                             \
        fprintf(stderr, "symbench-gpu: PE %d: ", me);                               \
        fprintf(stderr, __VA_ARGS__);                                                \
        fprintf(stderr, "\n");                                                       \
        exit(1);                                                                     \
    } while (0)
#define CUDA(call)                                                                                 \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess)                                                                     \
            DIE("%s failed at %s:%d: %s", #call, __FILE__, __LINE__, cudaGetErrorString(e_));      \
    } while (0)
#ifdef SYM_HAVE_NCCL
#define NCCL(call)                                                                                 \
    do {                                                                                           \
        ncclResult_t r_ = (call);                                                                  \
        if (r_ != ncclSuccess)                                                                     \
            DIE("%s failed at %s:%d: %s", #call, __FILE__, __LINE__, ncclGetErrorString(r_));      \
    } while (0)
#endif

enum { AR, RS, AG, BC, A2A, PUT };

struct opts {
    int coll;
    size_t min, max;
    double factor;
    shmemx_dtype_t dtype;
    shmemx_op_t op;
    int iters; /* 0: by size */
    shmemx_gpu_algo_t algo;
    int blocks;
    int priv;
    int nccl;
    int graph;
    int root;
    const char *mpi_table;
};

/* ---- small helpers ---- */

/* symshmem's size parser (src/util/env.c): 512, 64K, 1.5M, 2G, 4GiB; 0 on success */
extern "C" int sym__parse_size(const char *s, size_t *out);

static size_t parse_size(const char *opt, const char *s) {
    size_t v;
    if (sym__parse_size(s, &v) != 0) {
        fprintf(stderr, "symbench-gpu: %s '%s' is not a size; write e.g. 8, 64K, 16M or 1G\n",
                opt, s);
        exit(2);
    }
    return v;
}

static void fmt_size(size_t b, char *buf, size_t len) {
    if (b >= (1u << 30) && b % (1u << 30) == 0) snprintf(buf, len, "%zuG", b >> 30);
    else if (b >= (1u << 20) && b % (1u << 20) == 0) snprintf(buf, len, "%zuM", b >> 20);
    else if (b >= 1024 && b % 1024 == 0) snprintf(buf, len, "%zuK", b >> 10);
    else snprintf(buf, len, "%zu", b);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* symmetric scratch for exchanging numbers between PEs: [0] in, [1] out */
static double *xchg;
/* The largest value any PE passes (collective). */
static double max_over_pes(double v) {
    xchg[0] = v;
    shmem_double_max_reduce(SHMEM_TEAM_WORLD, &xchg[1], &xchg[0], 1);
    return xchg[1];
}

/* ---- random inputs (never time on zeros) ---- */

__global__ void fill_kernel(uint8_t *p, size_t n, int es, uint32_t seed) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        uint32_t h = (uint32_t)i * 2654435761u ^ seed;
        h ^= h >> 15;
        h *= 2246822519u;
        h ^= h >> 13;
        float v = ((float)(h % 2001u) - 1000.0f) / 1000.0f;
        if (es == 4) {
            ((float *)p)[i] = v;
        } else {
            uint32_t u = __float_as_uint(v);
            ((uint16_t *)p)[i] = (uint16_t)(u >> 16); /* bf16 bits; a valid fp16 too */
        }
    }
}

/* ---- one collective, ours or NCCL's ---- */

struct bench {
    struct opts o;
    size_t es;
    uint8_t *src, *dst;
    cudaStream_t stream;
#ifdef SYM_HAVE_NCCL
    ncclComm_t comm;
#endif
};

/* count: elements as the caller of the collective gives them */
static void run_ours(struct bench *b, size_t count) {
    int st = 0;
    switch (b->o.coll) {
    case AR:
        st = shmemx_gpu_allreduce(b->dst, b->src, count, b->o.dtype, b->o.op, b->stream);
        break;
    case RS:
        st = shmemx_gpu_reduce_scatter(b->dst, b->src, count, b->o.dtype, b->o.op, b->stream);
        break;
    case AG: st = shmemx_gpu_allgather(b->dst, b->src, count, b->o.dtype, b->stream); break;
    case BC:
        st = shmemx_gpu_broadcast(b->dst, b->src, count, b->o.dtype, b->o.root, b->stream);
        break;
    case A2A: st = shmemx_gpu_alltoall(b->dst, b->src, count, b->o.dtype, b->stream); break;
    }
    if (st) DIE("collective failed: %s", shmemx_gpu_strerror(st));
}

#ifdef SYM_HAVE_NCCL
static ncclDataType_t nccl_type(shmemx_dtype_t d) {
    return d == SHMEMX_FLOAT32 ? ncclFloat32 : d == SHMEMX_FLOAT16 ? ncclFloat16 : ncclBfloat16;
}
static ncclRedOp_t nccl_op(shmemx_op_t op) {
    switch (op) {
    case SHMEMX_AVG: return ncclAvg;
    case SHMEMX_MIN: return ncclMin;
    case SHMEMX_MAX: return ncclMax;
    case SHMEMX_PROD: return ncclProd;
    default: return ncclSum;
    }
}
static void run_nccl(struct bench *b, size_t count) {
    ncclDataType_t t = nccl_type(b->o.dtype);
    switch (b->o.coll) {
    case AR:
        NCCL(ncclAllReduce(b->src, b->dst, count, t, nccl_op(b->o.op), b->comm, b->stream));
        break;
    case RS:
        NCCL(ncclReduceScatter(b->src, b->dst, count / npes, t, nccl_op(b->o.op), b->comm,
                               b->stream));
        break;
    case AG: NCCL(ncclAllGather(b->src, b->dst, count, t, b->comm, b->stream)); break;
    case BC: NCCL(ncclBroadcast(b->src, b->dst, count, t, b->o.root, b->comm, b->stream)); break;
    case A2A: /* NCCL's all-to-all: grouped sends and receives (as nccl-tests' alltoall) */
        NCCL(ncclGroupStart());
        for (int p = 0; p < npes; p++) {
            size_t off = (size_t)p * count * b->es;
            NCCL(ncclSend(b->src + off, count, t, p, b->comm, b->stream));
            NCCL(ncclRecv(b->dst + off, count, t, p, b->comm, b->stream));
        }
        NCCL(ncclGroupEnd());
        break;
    }
}
#endif

typedef void (*run_fn)(struct bench *, size_t);

/* Median over 3 runs of `iters` ops (microseconds per op), slowest PE. */
static double time_ops(struct bench *b, run_fn fn, size_t count, int iters, int graph) {
    cudaEvent_t t0, t1;
    CUDA(cudaEventCreate(&t0));
    CUDA(cudaEventCreate(&t1));
    cudaGraphExec_t exec = NULL;
    if (graph) {
        cudaGraph_t g;
        CUDA(cudaStreamBeginCapture(b->stream, cudaStreamCaptureModeThreadLocal));
        for (int i = 0; i < iters; i++) fn(b, count);
        CUDA(cudaStreamEndCapture(b->stream, &g));
        CUDA(cudaGraphInstantiate(&exec, g, 0));
        CUDA(cudaGraphDestroy(g));
        CUDA(cudaGraphLaunch(exec, b->stream)); /* warm-up */
    } else {
        for (int i = 0; i < 5; i++) fn(b, count);
    }
    CUDA(cudaStreamSynchronize(b->stream));
    double t[3];
    for (int r = 0; r < 3; r++) {
        shmem_barrier_all();
        CUDA(cudaEventRecord(t0, b->stream));
        if (graph)
            CUDA(cudaGraphLaunch(exec, b->stream));
        else
            for (int i = 0; i < iters; i++) fn(b, count);
        CUDA(cudaEventRecord(t1, b->stream));
        CUDA(cudaEventSynchronize(t1));
        float ms;
        CUDA(cudaEventElapsedTime(&ms, t0, t1));
        t[r] = ms * 1000.0 / iters;
    }
    qsort(t, 3, sizeof t[0], cmp_double);
    if (exec) CUDA(cudaGraphExecDestroy(exec));
    CUDA(cudaEventDestroy(t0));
    CUDA(cudaEventDestroy(t1));
    return max_over_pes(t[1]);
}

/* Our result against NCCL's on a sample of the output: 1 ok, 0 not. */
static int check_vs_nccl(struct bench *b, size_t count, size_t out_bytes) {
#ifdef SYM_HAVE_NCCL
    size_t n = out_bytes < 65536 ? out_bytes : 65536;
    uint8_t *h1 = (uint8_t *)malloc(2 * n), *h2 = h1 + n;
    run_ours(b, count);
    CUDA(cudaMemcpyAsync(h1, b->dst + out_bytes - n, n, cudaMemcpyDeviceToHost, b->stream));
    run_nccl(b, count);
    CUDA(cudaMemcpyAsync(h2, b->dst + out_bytes - n, n, cudaMemcpyDeviceToHost, b->stream));
    CUDA(cudaStreamSynchronize(b->stream));
    int ok = 1;
    for (size_t i = 0; i + b->es <= n && ok; i += b->es) {
        double x, y;
        if (b->es == 4) {
            float f, g;
            memcpy(&f, h1 + i, 4);
            memcpy(&g, h2 + i, 4);
            x = f;
            y = g;
        } else {
            uint16_t u, v;
            memcpy(&u, h1 + i, 2);
            memcpy(&v, h2 + i, 2);
            if (b->o.dtype == SHMEMX_BFLOAT16) {
                uint32_t a = (uint32_t)u << 16, c = (uint32_t)v << 16;
                float f, g;
                memcpy(&f, &a, 4);
                memcpy(&g, &c, 4);
                x = f;
                y = g;
            } else {
                x = (double)__half2float(__ushort_as_half(u));
                y = (double)__half2float(__ushort_as_half(v));
            }
        }
        double tol = (b->o.dtype == SHMEMX_FLOAT32 ? 1e-5 : 2e-2) * (fabs(y) + npes);
        if (!(fabs(x - y) <= tol)) ok = 0;
    }
    free(h1);
    return max_over_pes(ok ? 0 : 1) == 0;
#else
    (void)b;
    (void)count;
    (void)out_bytes;
    return 1;
#endif
}

static const char *const coll_names[] = {"gpu-allreduce", "gpu-reduce-scatter", "gpu-allgather",
                                         "gpu-broadcast", "gpu-alltoall", "gpu-put"};
static const char *const op_names[] = {"sum", "avg", "min", "max", "prod"};

static void bench_coll(struct opts *o) {
    struct bench b;
    memset(&b, 0, sizeof b);
    b.o = *o;
    b.es = o->dtype == SHMEMX_FLOAT32 ? 4 : 2;
    CUDA(cudaStreamCreateWithFlags(&b.stream, cudaStreamNonBlocking));
    size_t src_bytes = o->max, dst_bytes = o->max;
    if (o->coll == AG) src_bytes = o->max / npes + 64;
    if (o->coll == RS) dst_bytes = o->max / npes + 64;
    if (o->priv) {
        CUDA(cudaMalloc((void **)&b.src, src_bytes));
        CUDA(cudaMalloc((void **)&b.dst, dst_bytes));
    } else {
        b.src = (uint8_t *)shmemx_gpu_malloc(src_bytes);
        b.dst = (uint8_t *)shmemx_gpu_malloc(dst_bytes);
        if (!b.src || !b.dst)
            DIE("shmemx_gpu_malloc of %zu + %zu bytes failed", src_bytes, dst_bytes);
    }
    fill_kernel<<<256, 256>>>(b.src, src_bytes / b.es, (int)b.es, 12345u + (uint32_t)me);
    CUDA(cudaGetLastError());
    CUDA(cudaDeviceSynchronize());
    shmemx_gpu_set_algo(o->algo, o->blocks);
    int have_nccl = 0;
#ifdef SYM_HAVE_NCCL
    if (o->nccl) {
        ncclUniqueId id;
        ncclUniqueId *box = (ncclUniqueId *)shmem_malloc(sizeof id);
        if (me == 0) {
            NCCL(ncclGetUniqueId(&id));
            for (int p = 0; p < npes; p++) shmem_putmem(box, &id, sizeof id, p);
        }
        shmem_barrier_all();
        id = *box;
        shmem_free(box);
        NCCL(ncclCommInitRank(&b.comm, npes, id, me));
        have_nccl = 1;
    }
#endif
    double fac = o->coll == AR   ? 2.0 * (npes - 1) / npes
                 : o->coll == BC ? 1.0
                                 : (double)(npes - 1) / npes;
    if (me == 0) {
        cudaDeviceProp prop;
        CUDA(cudaGetDeviceProperties(&prop, shmemx_gpu_device()));
        int nv = 0;
#ifdef SYM_HAVE_NCCL
        ncclGetVersion(&nv);
#endif
        printf(
            "# symbench-gpu %s: %d PEs, %s, dtype %s%s%s, %s buffers, algo %s%s, NCCL %d.%d.%d%s\n",
            coll_names[o->coll], npes, prop.name,
            o->dtype == SHMEMX_FLOAT32   ? "float"
            : o->dtype == SHMEMX_FLOAT16 ? "half"
                                         : "bfloat16",
            o->coll <= RS ? ", op " : "", o->coll <= RS ? op_names[o->op] : "",
            o->priv ? "private (cudaMalloc)" : "symmetric", shmemx_gpu_algo_name(o->algo),
            o->blocks ? " (forced blocks)" : "", nv / 10000, (nv / 100) % 100, nv % 100,
            have_nccl ? "" : " (not measured)");
        printf("# busbw factor %.3f; ratio = NCCL time / symtrain time (>1: symtrain faster); "
               "g_ = CUDA graph of the same ops\n", fac);
        printf("# %10s %11s %5s %7s | %9s %8s %8s %9s %8s | %9s %8s %8s %9s %8s | %6s %6s %3s\n",
               "size", "count", "type", "algo", "time_us", "algbw", "busbw", "g_time", "g_busbw",
               "time_us", "algbw", "busbw", "g_time", "g_busbw", "ratio", "g_rat", "ok");
        fflush(stdout);
    }
    for (size_t size = o->min; size <= o->max;
         size = (size_t)(size * o->factor) > size ? (size_t)(size * o->factor) : size + 1) {
        /* AR, BC: elements; RS: input elements; AG: output; A2A: either (npes blocks) */
        size_t count = size / b.es;
        if (o->coll == RS || o->coll == AG || o->coll == A2A) count = count / npes * npes;
        if (count == 0) continue;
        size_t call_count = o->coll == AG || o->coll == A2A ? count / npes : count; /* the call's */
        size_t bytes = count * b.es;
        size_t out_bytes = o->coll == RS ? bytes / npes : bytes;
        int iters = o->iters               ? o->iters
                    : bytes <= (64u << 10) ? 500
                    : bytes <= (1u << 20)  ? 200
                    : bytes <= (64u << 20) ? 50
                                           : 10;
        int ok = have_nccl ? check_vs_nccl(&b, call_count, out_bytes) : 1;
        double t_us = time_ops(&b, run_ours, call_count, iters, 0);
        shmemx_gpu_algo_t used = shmemx_gpu_last_algo();
        double tg_us = o->graph ? time_ops(&b, run_ours, call_count, iters, 1) : NAN;
        double n_us = NAN, ng_us = NAN;
#ifdef SYM_HAVE_NCCL
        if (have_nccl) {
            n_us = time_ops(&b, run_nccl, call_count, iters, 0);
            if (o->graph) ng_us = time_ops(&b, run_nccl, call_count, iters, 1);
        }
#endif
        if (me == 0) {
            char sz[32];
            fmt_size(bytes, sz, sizeof sz);
            double alg = bytes / t_us / 1e3, algn = bytes / n_us / 1e3;
            printf("  %10s %11zu %5s %7s | %9.2f %8.2f %8.2f %9.2f %8.2f | %9.2f %8.2f %8.2f %9.2f "
                   "%8.2f | %6.2f %6.2f %3s\n",
                   sz, count,
                   o->dtype == SHMEMX_FLOAT32   ? "f32"
                   : o->dtype == SHMEMX_FLOAT16 ? "f16"
                                                : "bf16",
                   shmemx_gpu_algo_name(used), t_us, alg, alg * fac, tg_us,
                   bytes / tg_us / 1e3 * fac, n_us, algn, algn * fac, ng_us,
                   bytes / ng_us / 1e3 * fac, n_us / t_us, ng_us / tg_us, ok ? "ok" : "BAD");
            fflush(stdout);
        }
    }
#ifdef SYM_HAVE_NCCL
    if (have_nccl) NCCL(ncclCommDestroy(b.comm));
#endif
    CUDA(cudaStreamSynchronize(b.stream));
    if (o->priv) {
        cudaFree(b.src);
        cudaFree(b.dst);
    } else {
        shmemx_gpu_free(b.dst);
        shmemx_gpu_free(b.src);
    }
    CUDA(cudaStreamDestroy(b.stream));
}

/* ---- gpu-put: NVSHMEM device puts ---- */

/* PE 0 puts `bytes` to PE 1 with a signal; PE 1 answers the same way; iters
 * round trips, by one block (a warp for small messages). */
__global__ void pingpong_kernel(uint8_t *buf, size_t bytes, uint64_t *sig, int iters, int me,
                                uint64_t base) {
    int peer = 1 - me;
    for (int i = 0; i < iters; i++) {
        uint64_t v = base + (uint64_t)i + 1;
        if (me == 1) {
            if (threadIdx.x == 0) nvshmem_signal_wait_until(sig, NVSHMEM_CMP_GE, v);
            __syncthreads();
        }
        nvshmemx_putmem_signal_nbi_block(buf, buf, bytes, sig, v, NVSHMEM_SIGNAL_SET, peer);
        if (me == 0) {
            if (threadIdx.x == 0) nvshmem_signal_wait_until(sig, NVSHMEM_CMP_GE, v);
            __syncthreads();
        }
    }
    if (threadIdx.x == 0) nvshmem_quiet();
}

/* PE 0 streams `bytes` to PE 1, split over the grid, iters times. */
__global__ void stream_kernel(uint8_t *dst, const uint8_t *src, size_t bytes, int iters) {
    size_t per = (bytes + gridDim.x - 1) / gridDim.x;
    per = (per + 15) & ~(size_t)15;
    size_t off = per * blockIdx.x;
    size_t n = off < bytes ? (bytes - off < per ? bytes - off : per) : 0;
    for (int i = 0; i < iters; i++)
        if (n) nvshmemx_putmem_nbi_block(dst + off, src + off, n, 1);
    if (threadIdx.x == 0) nvshmem_quiet();
}

struct mpi_row {
    size_t size;
    double lat_us, bw;
};

static int read_mpi_table(const char *path, struct mpi_row *rows, int max) {
    if (!path) return -1;
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char line[256];
    int n = 0;
    while (fgets(line, sizeof line, f) && n < max) {
        if (line[0] == '#') continue;
        if (sscanf(line, "%zu %lf %lf", &rows[n].size, &rows[n].lat_us, &rows[n].bw) == 3) n++;
    }
    fclose(f);
    return n;
}

static void bench_put(struct opts *o) {
    if (npes != 2) DIE("gpu-put runs on 2 PEs (symrun -n 2)");
    uint8_t *buf = (uint8_t *)shmemx_gpu_malloc(o->max);
    uint8_t *dst = (uint8_t *)shmemx_gpu_malloc(o->max);
    uint64_t *sig = (uint64_t *)shmemx_gpu_malloc(sizeof(uint64_t));
    if (!buf || !dst || !sig) DIE("shmemx_gpu_malloc failed");
    CUDA(cudaMemset(sig, 0, sizeof(uint64_t)));
    fill_kernel<<<256, 256>>>(buf, o->max / 4, 4, 777u);
    CUDA(cudaDeviceSynchronize());
    shmem_barrier_all();
    cudaStream_t st;
    CUDA(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    cudaEvent_t t0, t1;
    CUDA(cudaEventCreate(&t0));
    CUDA(cudaEventCreate(&t1));
    struct mpi_row mpi[64];
    int nm = read_mpi_table(o->mpi_table, mpi, 64);
    if (me == 0) {
        printf("# symbench-gpu gpu-put: NVSHMEM device put PE 0 -> PE 1 (GPU %d -> its peer)%s\n",
               shmemx_gpu_device(),
               nm >= 0 ? ", beside MPI with host staging (D2H, MPI_Send/Recv, H2D)" : "");
        if (nm < 0)
            printf("# MPI: not measured (%s)\n", o->mpi_table
                                                     ? "could not read the --mpi-table file; "
                                                       "was symbench-gpu-mpi built and run?"
                                                     : "no --mpi-table given");
        printf("# lat_us: put+signal ping-pong by one block, half the round trip; bw: one way, "
               "GB/s, 1-32 blocks\n");
        printf("# %10s | %9s %9s | %9s %9s | %7s %7s\n", "size", "lat_us", "bw_GBps", "mpi_lat",
               "mpi_bw", "lat_x", "bw_x");
    }
    uint64_t base = 0;
    for (size_t size = o->min; size <= o->max;
         size = (size_t)(size * o->factor) > size ? (size_t)(size * o->factor) : size + 1) {
        int iters = size <= (64u << 10) ? 1000 : size <= (4u << 20) ? 100 : 20;
        /* latency */
        double lat[3];
        for (int r = 0; r < 3; r++) {
            shmem_barrier_all();
            CUDA(cudaEventRecord(t0, st));
            pingpong_kernel<<<1, size <= 4096 ? 32 : 512, 0, st>>>(buf, size, sig, iters, me, base);
            CUDA(cudaGetLastError());
            CUDA(cudaEventRecord(t1, st));
            CUDA(cudaEventSynchronize(t1));
            base += (uint64_t)iters;
            float ms;
            CUDA(cudaEventElapsedTime(&ms, t0, t1));
            lat[r] = ms * 1000.0 / iters / 2;
        }
        qsort(lat, 3, sizeof lat[0], cmp_double);
        /* bandwidth */
        double bw[3];
        for (int r = 0; r < 3; r++) {
            shmem_barrier_all();
            if (me == 0) {
                int blocks = size >= (16u << 20) ? 32 : size >= (1u << 20) ? 8 : 1;
                CUDA(cudaEventRecord(t0, st));
                stream_kernel<<<blocks, 512, 0, st>>>(dst, buf, size, iters);
                CUDA(cudaGetLastError());
                CUDA(cudaEventRecord(t1, st));
                CUDA(cudaEventSynchronize(t1));
                float ms;
                CUDA(cudaEventElapsedTime(&ms, t0, t1));
                bw[r] = (double)size * iters / (ms * 1e-3) / 1e9;
            } else {
                bw[r] = 0;
            }
        }
        shmem_barrier_all();
        qsort(bw, 3, sizeof bw[0], cmp_double);
        if (me == 0) {
            char sz[32];
            fmt_size(size, sz, sizeof sz);
            double ml = NAN, mb = NAN;
            for (int i = 0; i < nm; i++)
                if (mpi[i].size == size) {
                    ml = mpi[i].lat_us;
                    mb = mpi[i].bw;
                }
            printf("  %10s | %9.2f %9.2f | %9.2f %9.2f | %7.1f %7.1f\n", sz, lat[1], bw[1], ml, mb,
                   ml / lat[1], bw[1] / mb);
            fflush(stdout);
        }
    }
    CUDA(cudaStreamDestroy(st));
    shmemx_gpu_free(sig);
    shmemx_gpu_free(dst);
    shmemx_gpu_free(buf);
}

static void usage(void) {
    fprintf(
        stderr,
        "usage: symrun -n N symbench-gpu gpu-allreduce|gpu-reduce-scatter|gpu-allgather|"
        "gpu-broadcast|gpu-alltoall|gpu-put\n"
        "       [-b MIN] [-e MAX] [-f FACTOR] [-t float|half|bfloat16] [-o sum|avg|min|max|prod]\n"
        "       [-n ITERS] [--algo auto|oneshot|twoshot|ring] [--blocks N] [--private]\n"
        "       [--no-nccl] [--no-graph] [--root R] [--mpi-table FILE]\n");
    exit(2);
}

int main(int argc, char **argv) {
    /* NVLink multicast stays off (it can take shared GPUs out of service). */
    if (!getenv("NCCL_NVLS_ENABLE")) setenv("NCCL_NVLS_ENABLE", "0", 1);
    if (!getenv("NVSHMEM_DISABLE_NVLS")) setenv("NVSHMEM_DISABLE_NVLS", "1", 1);
    if (argc < 2) usage();
    struct opts o;
    memset(&o, 0, sizeof o);
    o.min = 8;
    o.max = (size_t)1 << 30;
    o.factor = 2;
    o.dtype = SHMEMX_FLOAT32;
    o.op = SHMEMX_SUM;
    o.nccl = 1;
    o.graph = 1;
    const char *sub = argv[1];
    if (!strcmp(sub, "gpu-allreduce")) o.coll = AR;
    else if (!strcmp(sub, "gpu-reduce-scatter")) o.coll = RS;
    else if (!strcmp(sub, "gpu-allgather")) o.coll = AG;
    else if (!strcmp(sub, "gpu-broadcast")) o.coll = BC;
    else if (!strcmp(sub, "gpu-alltoall")) o.coll = A2A;
    else if (!strcmp(sub, "gpu-put")) {
        o.coll = PUT;
        o.max = (size_t)64 << 20;
    } else usage();
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-b") && v) o.min = parse_size(a, v), i++;
        else if (!strcmp(a, "-e") && v) o.max = parse_size(a, v), i++;
        else if (!strcmp(a, "-f") && v) o.factor = atof(v), i++;
        else if (!strcmp(a, "-n") && v) o.iters = atoi(v), i++;
        else if (!strcmp(a, "-t") && v) {
            o.dtype = !strcmp(v, "half")       ? SHMEMX_FLOAT16
                      : !strcmp(v, "bfloat16") ? SHMEMX_BFLOAT16
                                               : SHMEMX_FLOAT32;
            i++;
        } else if (!strcmp(a, "-o") && v) {
            o.op = !strcmp(v, "avg")    ? SHMEMX_AVG
                   : !strcmp(v, "min")  ? SHMEMX_MIN
                   : !strcmp(v, "max")  ? SHMEMX_MAX
                   : !strcmp(v, "prod") ? SHMEMX_PROD
                                        : SHMEMX_SUM;
            i++;
        } else if (!strcmp(a, "--algo") && v) {
            o.algo = SHMEMX_GPU_ALGO_AUTO; /* also for a name it does not know */
            for (int k = 0; k < SHMEMX_GPU_ALGO_COUNT; k++)
                if (!strcmp(v, shmemx_gpu_algo_name((shmemx_gpu_algo_t)k)))
                    o.algo = (shmemx_gpu_algo_t)k;
            i++;
        } else if (!strcmp(a, "--blocks") && v) o.blocks = atoi(v), i++;
        else if (!strcmp(a, "--root") && v) o.root = atoi(v), i++;
        else if (!strcmp(a, "--mpi-table") && v) o.mpi_table = v, i++;
        else if (!strcmp(a, "--private")) o.priv = 1;
        else if (!strcmp(a, "--no-nccl")) o.nccl = 0;
        else if (!strcmp(a, "--no-graph")) o.graph = 0;
        else usage();
    }
    if (o.factor <= 1) o.factor = 2;
    /* room for the buffers in the symmetric heap, unless the user sized it */
    if (!getenv("SYMTRAIN_GPU_HEAP_SIZE")) {
        char buf[32];
        snprintf(buf, sizeof buf, "%zu", 2 * o.max + ((size_t)256 << 20));
        setenv("SYMTRAIN_GPU_HEAP_SIZE", buf, 1);
    }
    shmem_init();
    me = shmem_my_pe();
    npes = shmem_n_pes();
    int st = shmemx_gpu_init();
    if (st) {
        if (me == 0)
            fprintf(stderr, "symbench-gpu: shmemx_gpu_init: %s\n", shmemx_gpu_strerror(st));
        shmem_finalize();
        return st == SHMEMX_GPU_ENODEV || st == SHMEMX_GPU_ETOOFEW ? 77 : 1;
    }
    if (o.root < 0 || o.root >= npes) o.root = 0;
    xchg = (double *)shmem_malloc(2 * sizeof(double));
    if (o.coll == PUT) {
        nvshmem_init(); /* this program's kernels call NVSHMEM: ready its module */
        bench_put(&o);
        nvshmem_finalize();
    } else {
        bench_coll(&o);
    }
    shmem_free(xchg);
    shmemx_gpu_finalize();
    shmem_finalize();
    return 0;
}
