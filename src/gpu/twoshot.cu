/*
 * twoshot.cu — the NVLink algorithms for medium and large messages, pushed
 * with stores (NVLink carries stores better than remote loads):
 *
 *   all-reduce  = reduce-scatter + all-gather. Each PE owns part `me` of the
 *     vector. Per chunk: (1) push my copy of part p into PE p's slot for me;
 *     (2) once every peer's copy of my part is in, reduce it (PE order), write
 *     it to my dest and push it to every peer (into their dest when dest is
 *     symmetric, else into their slot); (3) copy what peers pushed from the
 *     slots to dest. Each byte crosses NVLink twice, the minimum.
 *   reduce-scatter = steps 1 and 2 with no push of the result.
 *   all-gather, broadcast, all-to-all (k_push) = every sender pushes its
 *     block (all-to-all: the receiver's block) to every receiver, straight
 *     into a symmetric dest (after the receiver says it has reached this
 *     collective), else through slots the receiver empties.
 *
 * Persistent grid: block b handles chunk i*G + b of every part in iteration i,
 * always in its own scratch region b. Handshakes are per block and per peer:
 * a flag store after a fence, of the block's step for the iteration (gpu.h),
 * waited on with ">=" — no grid-wide barrier anywhere. Where a slot is reused
 * before the other side's next data proves it was read (reduce-scatter, slot
 * all-gather, broadcast), slots alternate by iteration parity and the reader
 * returns a "consumed" credit.
 */
#include "kernels.cuh"

/* ---- all-reduce, reduce-scatter ---- */

/* NP: a compile-time bound on npes (2, 4 or 8), so per-peer arrays stay in registers. */
template <int NP> struct twoshot_threads {
    static constexpr int value = NP >= 8 ? SYM_GPU_THREADS / 2 : SYM_GPU_THREADS; /* registers */
};

template <int DT, int NP>
__global__ void __launch_bounds__(twoshot_threads<NP>::value)
    k_twoshot(const struct sym_gpu_args a) {
    constexpr int ES = sym_dt<DT>::size;
    const int b = blockIdx.x, G = gridDim.x, n = a.npes, me = a.me;
    const bool ar = a.coll == SYM_GPU_ALLREDUCE;
    const uint64_t e = block_epoch(a), s0 = block_step(a);
    const size_t che = a.chunk;                       /* elements per chunk */
    const size_t chb = (che * ES + 15) & ~(size_t)15; /* slot bytes */
    uint8_t *region = a.scr + (size_t)b * a.region;
    const size_t reg_off = (size_t)b * a.region;

    /* Slot for sender q. AR: RS slots [0, n), AG slots [n, 2n). RS: parity x n. */
#define RS_SLOT(base, par, q) ((base) + ((ar ? 0 : (size_t)(par) * n) + (size_t)(q)) * chb)
#define AG_SLOT(base, q) ((base) + ((size_t)n + (size_t)(q)) * chb)

    ack_peers(a, e);
    wait_started(a, e, ~0ull, "two-shot start");

    size_t poff[NP], plen[NP];
#pragma unroll
    for (int p = 0; p < NP; p++)
        if (p < n) part_range(a.coll, a.count, n, p, ES, &poff[p], &plen[p]);

    for (int i = 0; i < a.iters; i++) {
        const uint64_t val = step_val(s0, i);
        const int par = i & 1;
        const size_t x0 = ((size_t)i * G + b) * che; /* element offset inside each part */
#define WIDTH(p) (x0 < plen[p] ? (plen[p] - x0 < che ? plen[p] - x0 : che) : 0)

        /* reduce-scatter reuses parity `par` slots: wait until peers consumed i-2 */
        if (!ar && i >= 2)
            wait_peers(a, FLAG_SIG(b, 1, 0), 1, step_val(s0, i - 2), "reduce-scatter credit",
                       ~0ull);

        /* (1) push my copy of part p to PE p */
        for (int k = 1; k < n; k++) {
            int p = me + k < n ? me + k : me + k - n;
            size_t w = WIDTH(p);
            if (w)
                copy1(RS_SLOT(a.peer_scr[p] + reg_off, par, me), a.src + (poff[p] + x0) * ES,
                      w * ES);
        }
        __syncthreads();
        signal_peers(a, FLAG_SIG(b, 0, me), val, ~0ull);
        wait_peers(a, FLAG_SIG(b, 0, 0), 1, val, "reduce-scatter data", ~0ull);

        /* (2) reduce my part, in PE order */
        {
            size_t w = WIDTH(me);
            const uint8_t *in[NP];
            uint8_t *out[NP];
            int nout = 0;
#pragma unroll
            for (int q = 0; q < NP; q++)
                if (q < n) in[q] = q == me ? a.src + (poff[me] + x0) * ES : RS_SLOT(region, par, q);
            if (ar) {
                out[nout++] = a.dst + (poff[me] + x0) * ES;
                for (int k = 1; k < n; k++) {
                    int p = me + k < n ? me + k : me + k - n;
                    out[nout++] = a.dst_sym ? a.peer_dst[p] + (poff[me] + x0) * ES
                                            : AG_SLOT(a.peer_scr[p] + reg_off, me);
                }
            } else {
                out[nout++] = a.dst + x0 * ES;
            }
            reduce_elems<DT, NP, NP>(in, n, out, nout, w, a.op, n);
        }
        __syncthreads();
        /* RS: the slots of parity `par` are free again; AR: my part is out */
        signal_peers(a, FLAG_SIG(b, 1, me), val, ~0ull);
        if (!ar) continue;
        wait_peers(a, FLAG_SIG(b, 1, 0), 1, val, "all-gather data", ~0ull);

        /* (3) results of the other parts */
        if (!a.dst_sym)
            for (int k = 1; k < n; k++) {
                int q = me + k < n ? me + k : me + k - n;
                size_t w = WIDTH(q);
                if (w) copy1(a.dst + (poff[q] + x0) * ES, AG_SLOT(region, q), w * ES);
            }
        /* The next iteration's pushes into the peers' RS slots are safe: each peer
         * sent its AG data for this iteration only after reading them. */
#undef WIDTH
    }
#undef RS_SLOT
#undef AG_SLOT
    block_end(a, e, s0);
}

/* ---- all-gather, broadcast and all-to-all ---- */

/* PE p's block of an all-to-all's source: `len` bytes, its chunk [x0, x0 + w)
 * copied to `out` (block-wide). */
static __device__ __forceinline__ void a2a_copy(uint8_t *out, const struct sym_gpu_args &a,
                                                int p, size_t len, size_t x0, size_t w) {
    copy1(out, a.src + (size_t)p * len + x0, w);
}

/* Bytes: block `len` = count * element size. AG: PE q's block lands at
 * dest + q*len; BC: root's block at dest; A2A: PE q's block for me at dest +
 * q*len (source: block p for PE p). chunk = bytes per block per iteration. */
template <int NP>
__global__ void __launch_bounds__(SYM_GPU_THREADS) k_push(const struct sym_gpu_args a) {
    const int b = blockIdx.x, G = gridDim.x, n = a.npes, me = a.me;
    const bool a2a = a.coll == SYM_GPU_ALLTOALL;
    const bool ag = a.coll == SYM_GPU_ALLGATHER || a2a; /* everyone to everyone */
    const bool sender = ag || me == a.root;
    const uint64_t e = block_epoch(a), s0 = block_step(a);
    const size_t len = a.count * (size_t)a.es, chb = a.chunk;
    uint8_t *region = a.scr + (size_t)b * a.region;
    const size_t reg_off = (size_t)b * a.region;
    /* whom I push to (all peers, or none) and whom I receive from */
    const uint64_t all = ~0ull;
    const uint64_t targets = sender ? all : 0;
    const uint64_t sources = ag ? all : (me == a.root ? 0 : 1ull << a.root);
    uint8_t *mine = ag ? a.dst + (size_t)me * len : a.dst; /* where my own block goes */

    /* Receivers must have reached this collective: their stream may still be
     * using dest before it, and their region b before that. */
    ack_peers(a, e);
    wait_started(a, e, targets, "push start");
    if (a.dst_sym) {
        /* push straight into the receivers' dest */
        for (int i = 0; i < a.iters; i++) {
            size_t x0 = ((size_t)i * G + b) * chb;
            if (x0 >= len) break;
            size_t w = len - x0 < chb ? len - x0 : chb;
            if (!sender) continue;
            if (a2a) {
                a2a_copy(mine + x0, a, me, len, x0, w);
                for (int k = 1; k < n; k++) {
                    int p = me + k < n ? me + k : me + k - n;
                    a2a_copy(a.peer_dst[p] + (size_t)me * len + x0, a, p, len, x0, w);
                }
                continue;
            }
            uint8_t *out[NP];
            int nout = 0;
            if (mine != a.src) out[nout++] = mine + x0;
            for (int k = 1; k < n; k++) {
                int p = me + k < n ? me + k : me + k - n;
                out[nout++] = a.peer_dst[p] + (ag ? (size_t)me * len : 0) + x0;
            }
            copy_bytes<NP>(out, nout, a.src + x0, w);
        }
        __syncthreads();
        signal_peers(a, FLAG_SIG(b, 0, me), step_val(s0, 0), targets);
        wait_peers(a, FLAG_SIG(b, 0, 0), 1, step_val(s0, 0), "pushed data", sources);
        block_end(a, e, s0);
        return;
    }

    /* Through slots: [parity][sender] in each receiver's region b. */
    for (int i = 0; i < a.iters; i++) {
        const uint64_t val = step_val(s0, i);
        const int par = i & 1;
        size_t x0 = ((size_t)i * G + b) * chb;
        size_t w = x0 < len ? (len - x0 < chb ? len - x0 : chb) : 0;
        if (i >= 2)
            wait_peers(a, FLAG_SIG(b, 1, 0), 1, step_val(s0, i - 2), "push credit", targets);
        if (a2a && w) {
            a2a_copy(mine + x0, a, me, len, x0, w);
            for (int k = 1; k < n; k++) {
                int p = me + k < n ? me + k : me + k - n;
                a2a_copy(a.peer_scr[p] + reg_off + ((size_t)par * n + me) * chb, a, p, len, x0,
                         w);
            }
        } else if (sender && w) {
            uint8_t *out[NP];
            int nout = 0;
            if (mine != a.src) out[nout++] = mine + x0;
            for (int k = 1; k < n; k++) {
                int p = me + k < n ? me + k : me + k - n;
                out[nout++] = a.peer_scr[p] + reg_off + ((size_t)par * n + me) * chb;
            }
            copy_bytes<NP>(out, nout, a.src + x0, w);
        }
        __syncthreads();
        signal_peers(a, FLAG_SIG(b, 0, me), val, targets);
        wait_peers(a, FLAG_SIG(b, 0, 0), 1, val, "pushed data", sources);
        for (int q = 0; q < n; q++)
            if (((sources >> q) & 1) && q != me && w)
                copy1((ag ? a.dst + (size_t)q * len : a.dst) + x0,
                      region + ((size_t)par * n + q) * chb, w);
        __syncthreads();
        /* the credit: the last two are never waited for, harmless since word
         * FLAG_SIG(b, 1, me) has one writer (me) in every collective */
        signal_peers(a, FLAG_SIG(b, 1, me), val, sources);
    }
    block_end(a, e, s0);
}

template <int DT>
static const void *twoshot_fn(int npes, int *threads) {
    if (npes <= 2) {
        *threads = twoshot_threads<2>::value;
        return (const void *)k_twoshot<DT, 2>;
    }
    if (npes <= 4) {
        *threads = twoshot_threads<4>::value;
        return (const void *)k_twoshot<DT, 4>;
    }
    *threads = twoshot_threads<8>::value;
    return (const void *)k_twoshot<DT, 8>;
}

cudaError_t sym__gpu_launch_twoshot(const struct sym_gpu_args *a, int blocks,
                                    cudaStream_t stream) {
    int threads;
    const void *fn = a->dtype == SHMEMX_FLOAT32   ? twoshot_fn<SHMEMX_FLOAT32>(a->npes, &threads)
                     : a->dtype == SHMEMX_FLOAT16 ? twoshot_fn<SHMEMX_FLOAT16>(a->npes, &threads)
                                                  : twoshot_fn<SHMEMX_BFLOAT16>(a->npes, &threads);
    void *args[] = {(void *)a};
    return sym_launch(fn, blocks, threads, stream, args);
}

cudaError_t sym__gpu_launch_push(const struct sym_gpu_args *a, int blocks, cudaStream_t stream) {
    void *args[] = {(void *)a};
    const void *fn = a->npes <= 2 ? (const void *)k_push<2>
                     : a->npes <= 4 ? (const void *)k_push<4> : (const void *)k_push<8>;
    return sym_launch(fn, blocks, SYM_GPU_THREADS, stream, args);
}
