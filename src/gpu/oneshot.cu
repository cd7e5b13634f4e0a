/*
 * oneshot.cu — the small-message algorithm for all four collectives: every
 * GPU pushes its data to every peer that needs it, in 16-byte lines that
 * carry 8 bytes of data and two copies of the block's epoch (the "LL" idea:
 * the flag travels in the same store as the data, so there is no fence and no
 * separate signal; a line is ready when both flags show this epoch). Then each
 * GPU reduces or places what it received, locally, in PE order, so every PE
 * computes bit-identical results.
 *
 * One NVLink crossing per collective: the latency floor. The lines double the
 * bytes, which is why this is for small sizes only (the table in coll.cu).
 * Line slots are double-buffered by epoch parity; before writing parity p a
 * block makes sure its peers have started epoch e-1 (so finished e-2, the
 * last use of that parity: ACK >= e-1) in the world's line area, and epoch e
 * itself in the area the other teams share (gpu.h). A reader zeroes each line it has
 * read, so the slot holds nothing that looks fresh when a writer next fills
 * it, however many epochs later (the flag is only the epoch's low 32 bits).
 * Latency is the point here, so the epoch, that check and the first line of
 * data are loaded together, before anything waits.
 */
#include "kernels.cuh"

/* Block b moves lines [b*chunk, (b+1)*chunk) of each payload.
 *   AR: payload = source (count elements) to every peer; dest = op of all.
 *   RS: payload for PE p = source's part p; dest = op of the parts for me.
 *   AG: payload = source to every peer; dest[q*count..] = PE q's source.
 *   BC: payload = root's source to every peer; dest = it. */
template <int DT>
__global__ void __launch_bounds__(SYM_GPU_THREADS) k_oneshot(const struct sym_gpu_args a) {
    constexpr int ES = sym_dt<DT>::size;
    constexpr int EPL = 8 / ES; /* elements per line */
    const int b = blockIdx.x, t = threadIdx.x, n = a.npes, me = a.me;
    const uint64_t e = block_epoch(a), s0 = block_step(a);
    const uint32_t lf = ll_flag(e);
    const int par = (int)(e & 1);
    const size_t lo = (size_t)b * a.chunk, hi = lo + a.chunk;
    const size_t qstride = (size_t)SYM_GPU_LLCAP * 16; /* bytes between senders' slots */

    const size_t whole = a.count * ES;
    const bool sends = a.coll != SYM_GPU_BROADCAST || me == a.root;
    /* loads in flight together: the epoch (above), peer t's ACK, the first line */
    uint64_t ackv = ~0ull;
    if (t < n && t != me) ackv = ld_volatile(a.flags + FLAG_ACK(b, t));
    const size_t l0 = lo + t;
    const bool pre = sends && a.coll != SYM_GPU_REDUCE_SCATTER && l0 < hi && l0 * 8 < whole;
    uint2 v0 = make_uint2(0, 0);
    if (pre) v0 = line_get(a.src, whole, l0);
    ack_peers(a, e);
    const uint64_t credit = e - (uint64_t)a.ll_lag;
    if (ackv < credit) wait_ge(a.flags + FLAG_ACK(b, t), credit, a, "one-shot credit", t);
    __syncthreads();

    /* ---- push ---- */
    if (sends) {
        for (size_t l = l0; l < hi; l += blockDim.x) {
            uint2 v = v0;
            if (a.coll != SYM_GPU_REDUCE_SCATTER) {
                if (l * 8 >= whole) break;
                if (l != l0) v = line_get(a.src, whole, l);
            }
            for (int k = 1; k < n; k++) {
                int p = me + k < n ? me + k : me + k - n;
                if (a.coll == SYM_GPU_REDUCE_SCATTER) {
                    size_t off, pl;
                    part_range(SYM_GPU_REDUCE_SCATTER, a.count, n, p, ES, &off, &pl);
                    if (l * 8 >= pl * ES) continue;
                    v = line_get(a.src + off * ES, pl * ES, l);
                }
                ll_store(a.peer_ll[p] + (LL_OFF(b, par, me) + (l - lo)) * 16, v, lf);
            }
        }
    }
    __syncthreads(); /* in place: every line is read above before any is written below */

    /* ---- receive ---- */
    for (size_t l = lo + t; l < hi; l += blockDim.x) {
        uint8_t *slot0 = a.ll + (LL_OFF(b, par, 0) + (l - lo)) * 16;
        if (a.coll == SYM_GPU_ALLREDUCE || a.coll == SYM_GPU_REDUCE_SCATTER) {
            const uint8_t *own = a.src;
            size_t len = a.count * ES;
            if (a.coll == SYM_GPU_REDUCE_SCATTER) {
                size_t off, pl;
                part_range(SYM_GPU_REDUCE_SCATTER, a.count, n, me, ES, &off, &pl);
                own = a.src + off * ES;
                len = pl * ES;
            }
            if (l * 8 >= len) break;
            float acc[EPL], x[EPL];
            for (int q = 0; q < n; q++) {
                uint2 v = q != me ? ll_load(slot0 + q * qstride, lf, a, q)
                          : (pre && l == l0) ? v0 : line_get(own, len, l);
                if (q == 0) {
                    unpack<DT, 2>((const uint32_t *)&v, acc);
                } else {
                    unpack<DT, 2>((const uint32_t *)&v, x);
                    opv<EPL>(a.op, acc, x);
                }
            }
            opfinish<EPL>(a.op, n, acc);
            uint2 r;
            pack<DT, 2>(acc, (uint32_t *)&r);
            line_put(a.dst, len, l, r);
        } else if (a.coll == SYM_GPU_ALLGATHER) {
            const size_t len = a.count * ES;
            if (l * 8 >= len) break;
            uint8_t *mine = a.dst + (size_t)me * len;
            if (mine != a.src) line_put(mine, len, l, line_get(a.src, len, l));
            for (int q = 0; q < n; q++)
                if (q != me)
                    line_put(a.dst + (size_t)q * len, len, l,
                             ll_load(slot0 + q * qstride, lf, a, q));
        } else { /* broadcast */
            const size_t len = a.count * ES;
            if (l * 8 >= len) break;
            if (me == a.root) {
                if (a.dst != a.src) line_put(a.dst, len, l, line_get(a.src, len, l));
            } else {
                line_put(a.dst, len, l, ll_load(slot0 + (size_t)a.root * qstride, lf, a, a.root));
            }
        }
    }
    block_end(a, e, s0);
}

cudaError_t sym__gpu_launch_oneshot(const struct sym_gpu_args *a, int blocks, int threads,
                                    cudaStream_t stream) {
    void *args[] = {(void *)a};
    const void *fn = a->dtype == SHMEMX_FLOAT32   ? (const void *)k_oneshot<SHMEMX_FLOAT32>
                     : a->dtype == SHMEMX_FLOAT16 ? (const void *)k_oneshot<SHMEMX_FLOAT16>
                                                  : (const void *)k_oneshot<SHMEMX_BFLOAT16>;
    return sym_launch(fn, blocks, threads, stream, args);
}
