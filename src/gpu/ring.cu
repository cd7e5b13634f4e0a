/*
 * ring.cu — the ring, on NVSHMEM's put-with-signal, so it runs over any
 * transport NVSHMEM has (NVLink, and InfiniBand/EFA between hosts): the
 * algorithm used where a peer cannot be reached by stores, and available
 * everywhere through SYMTRAIN_GPU_ALGO=ring.
 *
 *   all-reduce: n-1 reduce-scatter steps then n-1 all-gather steps; at send
 *   step j (< n-1) PE me sends its partial of chunk (me-1-j) to `next`, so
 *   after the last one it holds chunk me complete; all-gather steps forward
 *   what arrives. Reduce-scatter stops after the first half; all-gather is the
 *   second half alone; broadcast is a chain from the root. All-to-all is no
 *   ring: at step k (1..n-1) PE me puts its block for member me+k into that
 *   member's slot k-1, and takes member me-k's block from its own slot k-1.
 *
 * Each step's data lands in its own slot of the receiver's region b (slots
 * alternate by iteration parity), with the slot's signal set to the block's
 * step for the iteration (64-bit, see gpu.h). Partials are reduced in place
 * in the slot they arrived in and forwarded from there (symmetric memory, so
 * any transport can read it); a private source is staged through a slot
 * first when the transport needs registered memory. After iteration i the receiver
 * tells `prev` it may reuse parity i's slots (RDONE); a sender starting
 * iteration i >= 2 waits for that, and before the first two for `next` to
 * have started this collective (its ACK, see gpu.h). All-to-all: the ACKs
 * go to every member, and each receiver returns a credit per sender and
 * parity (slot words n-1 .. 2n-3), the last two waited for before the
 * kernel ends, so none is still in flight when a later collective uses
 * those words for data. next and prev are team
 * ranks (flags, messages); the NVSHMEM calls take their world PEs.
 */
#include <nvshmem.h>
#include <nvshmemx.h>

#include "kernels.cuh"

/* Block-wide put of `bytes` from local `src` into `dst` (a symmetric address)
 * on `pe`, then the signal; a zero-byte send is the signal alone. */
static __device__ __forceinline__ void ring_send(uint8_t *dst, const uint8_t *src, size_t bytes,
                                                 uint64_t *sig, uint64_t val, int pe) {
    __syncthreads();
    if (bytes)
        nvshmemx_putmem_signal_nbi_block(dst, src, bytes, sig, val, NVSHMEM_SIGNAL_SET, pe);
    else if (threadIdx.x == 0)
        nvshmemx_signal_op(sig, val, NVSHMEM_SIGNAL_SET, pe);
}

static __device__ __forceinline__ void ring_wait(const struct sym_gpu_args &a, size_t idx,
                                                 uint64_t want, const char *what, int peer) {
    if (threadIdx.x == 0) wait_ge(a.flags + idx, want, a, what, peer);
    __syncthreads();
}

template <int DT>
__global__ void __launch_bounds__(SYM_GPU_THREADS) k_ring(const struct sym_gpu_args a) {
    constexpr int es = sym_dt<DT>::size;
    const int b = blockIdx.x, G = gridDim.x, n = a.npes, me = a.me, next = a.next, prev = a.prev;
    const uint64_t e = block_epoch(a), s0 = block_step(a);
    const int coll = a.coll;
    const bool reduce = coll == SYM_GPU_ALLREDUCE || coll == SYM_GPU_REDUCE_SCATTER;
    const bool a2a = coll == SYM_GPU_ALLTOALL;
    /* slots per parity; R: the receive steps per iteration, R the staging slot
     * (all-to-all: receive slots 0 .. n-2, staging n-1 .. 2n-3) */
    const int S = sym__gpu_ring_slots(coll, n);
    const int R = S - 1;
    /* chunk: elements for reductions, bytes for all-gather/broadcast */
    const size_t chb = ((reduce ? a.chunk * (size_t)es : a.chunk) + 15) & ~(size_t)15;
    uint8_t *region = a.scr + (size_t)b * a.region;
    const bool stage = !a.p2p && !a.src_sym;
    const size_t glen = a.count * (size_t)es; /* all-gather / broadcast block bytes */
    /* does this PE write into `next`? (the end of a broadcast chain does not) */
    const bool sends = coll != SYM_GPU_BROADCAST || me == a.root || next != a.root;

#define SLOT(par, s) (region + ((size_t)(par) * S + (size_t)(s)) * chb)
#define SIG(par, s) (a.flags + FLAG_RING(b, par, s))

    /* "I have reached epoch e" to whoever writes into me (prev; on NVLink or
     * for an all-to-all, all), then wait until those I write into (next;
     * all) have started this collective too */
    const int t = threadIdx.x;
    if (a.p2p)
        ack_peers(a, e);
    else if (a2a && t < n && t != me)
        nvshmemx_signal_op(a.flags + FLAG_ACK(b, me), e, NVSHMEM_SIGNAL_SET, a.pes[t]);
    else if (!a2a && t == 0)
        nvshmemx_signal_op(a.flags + FLAG_ACK(b, me), e, NVSHMEM_SIGNAL_SET, a.prev_pe);
    if (a2a && t < n && t != me)
        wait_ge(a.flags + FLAG_ACK(b, t), e, a, "all-to-all start", t);
    else if (!a2a && t == 0 && sends)
        wait_ge(a.flags + FLAG_ACK(b, next), e, a, "ring start", next);
    __syncthreads();

    for (int i = 0; i < a.iters; i++) {
        const uint64_t val = step_val(s0, i);
        const int par = i & 1;
        if (i >= 2 && sends && !a2a)
            ring_wait(a, FLAG_RDONE(b), step_val(s0, i - 2), "ring slot credit", next);

        if (reduce) {
            const size_t x0 = ((size_t)i * G + b) * a.chunk;
            size_t poff, plen;
#define PART(c, o, w)                                                                \
    do {                                                                             \
        part_range(coll, a.count, n, (c), es, &poff, &plen);                         \
        (w) = x0 < plen ? (plen - x0 < a.chunk ? plen - x0 : a.chunk) : 0;          \
        (o) = (poff + x0) * (size_t)es;                                              \
    } while (0)
            size_t o, w;
            /* send step 0: my own copy of chunk me-1 */
            int c = (me - 1 + n) % n;
            PART(c, o, w);
            const uint8_t *from = a.src + o;
            if (stage && w) {
                copy1(SLOT(par, R), a.src + o, w * es);
                from = SLOT(par, R);
            }
            ring_send(SLOT(par, 0), from, w * es, SIG(par, 0), val, a.next_pe);
            for (int r = 0; r < R; r++) {
                ring_wait(a, FLAG_RING(b, par, r), val, "ring data", prev);
                uint8_t *buf = SLOT(par, r);
                if (r < n - 1) { /* a partial of chunk me-2-r (mod n) */
                    c = ((me - 2 - r) % n + n) % n;
                    PART(c, o, w);
                    const uint8_t *in[2] = {buf, a.src + o};
                    bool last = r == n - 2; /* c == me: complete */
                    uint8_t *out[2] = {buf, buf};
                    int nout = 1;
                    if (last) {
                        uint8_t *d = coll == SYM_GPU_ALLREDUCE ? a.dst + o : a.dst + x0 * es;
                        out[0] = d;
                        nout = 1;
                        if (coll == SYM_GPU_ALLREDUCE) out[nout++] = buf;
                    }
                    reduce_elems<DT, 2, 2>(in, 2, out, nout, w,
                                           last ? a.op : (a.op == SHMEMX_AVG ? SHMEMX_SUM : a.op),
                                           n);
                    if (r + 1 < R)
                        ring_send(SLOT(par, r + 1), buf, w * es, SIG(par, r + 1), val, a.next_pe);
                } else { /* all-gather: complete chunk me-1-j */
                    int j = r - (n - 1);
                    c = ((me - 1 - j) % n + n) % n;
                    PART(c, o, w);
                    if (w) copy1(a.dst + o, buf, w * es);
                    if (r + 1 < R)
                        ring_send(SLOT(par, r + 1), buf, w * es, SIG(par, r + 1), val, a.next_pe);
                }
            }
#undef PART
        } else if (a2a) {
            const size_t x0 = ((size_t)i * G + b) * a.chunk;
            const size_t w = x0 < glen ? (glen - x0 < a.chunk ? glen - x0 : a.chunk) : 0;
            if (w) copy1(a.dst + (size_t)me * glen + x0, a.src + (size_t)me * glen + x0, w);
            for (int k = 1; k < n; k++) { /* member q = me+k: its slot k-1 is mine */
                const int q = me + k < n ? me + k : me + k - n;
                if (i >= 2)
                    ring_wait(a, FLAG_RING(b, par, n - 2 + k), step_val(s0, i - 2),
                              "all-to-all slot credit", q);
                const uint8_t *from = a.src + (size_t)q * glen + x0;
                if (stage && w) {
                    copy1(SLOT(par, n - 2 + k), from, w);
                    from = SLOT(par, n - 2 + k);
                }
                ring_send(SLOT(par, k - 1), from, w, SIG(par, k - 1), val, a.pes[q]);
            }
            for (int k = 1; k < n; k++) { /* member p = me-k's block for me, in slot k-1 */
                const int p = me - k >= 0 ? me - k : me - k + n;
                ring_wait(a, FLAG_RING(b, par, k - 1), val, "all-to-all data", p);
                if (w) copy1(a.dst + (size_t)p * glen + x0, SLOT(par, k - 1), w);
                __syncthreads();
                if (threadIdx.x == 0)
                    nvshmemx_signal_op(a.flags + FLAG_RING(b, par, n - 2 + k), val,
                                       NVSHMEM_SIGNAL_SET, a.pes[p]);
            }
        } else {
            const size_t x0 = ((size_t)i * G + b) * a.chunk;
            const size_t w = x0 < glen ? (glen - x0 < a.chunk ? glen - x0 : a.chunk) : 0;
            if (coll == SYM_GPU_ALLGATHER) {
                uint8_t *mine = a.dst + (size_t)me * glen;
                const uint8_t *from = a.src + x0;
                if (w && mine != a.src) copy1(mine + x0, a.src + x0, w);
                if (stage && w) {
                    copy1(SLOT(par, R), a.src + x0, w);
                    from = SLOT(par, R);
                }
                ring_send(SLOT(par, 0), from, w, SIG(par, 0), val, a.next_pe);
                for (int r = 0; r < R; r++) {
                    ring_wait(a, FLAG_RING(b, par, r), val, "ring data", prev);
                    int c = ((me - 1 - r) % n + n) % n;
                    if (w) copy1(a.dst + (size_t)c * glen + x0, SLOT(par, r), w);
                    if (r + 1 < R)
                        ring_send(SLOT(par, r + 1), SLOT(par, r), w, SIG(par, r + 1), val,
                                  a.next_pe);
                }
            } else if (me == a.root) {
                const uint8_t *from = a.src + x0;
                if (w && a.dst != a.src) copy1(a.dst + x0, a.src + x0, w);
                if (stage && w) {
                    copy1(SLOT(par, R), a.src + x0, w);
                    from = SLOT(par, R);
                }
                ring_send(SLOT(par, 0), from, w, SIG(par, 0), val, a.next_pe);
            } else {
                ring_wait(a, FLAG_RING(b, par, 0), val, "ring data", prev);
                if (w) copy1(a.dst + x0, SLOT(par, 0), w);
                if (next != a.root)
                    ring_send(SLOT(par, 0), SLOT(par, 0), w, SIG(par, 0), val, a.next_pe);
            }
        }
        /* my puts out of parity `par` slots are done and I read what arrived:
         * prev may refill them */
        __syncthreads();
        if (threadIdx.x == 0) {
            nvshmem_quiet();
            if (!a2a && !(coll == SYM_GPU_BROADCAST && me == a.root))
                nvshmemx_signal_op(a.flags + FLAG_RDONE(b), val, NVSHMEM_SIGNAL_SET, a.prev_pe);
        }
    }
    /* all-to-all: every credit sent to me has landed */
    for (int i = a.iters >= 2 ? a.iters - 2 : 0; a2a && i < a.iters; i++)
        for (int k = 1; k < n; k++)
            ring_wait(a, FLAG_RING(b, i & 1, n - 2 + k), step_val(s0, i), "all-to-all slot credit",
                      me + k < n ? me + k : me + k - n);
#undef SLOT
#undef SIG
    __syncthreads();
    if (threadIdx.x == 0 && !a.p2p) nvshmem_quiet();
    block_end(a, e, s0);
}

cudaError_t sym__gpu_launch_ring(const struct sym_gpu_args *a, int blocks, cudaStream_t stream) {
    void *args[] = {(void *)a};
    const void *fn = a->dtype == SHMEMX_FLOAT32   ? (const void *)k_ring<SHMEMX_FLOAT32>
                     : a->dtype == SHMEMX_FLOAT16 ? (const void *)k_ring<SHMEMX_FLOAT16>
                                                  : (const void *)k_ring<SHMEMX_BFLOAT16>;
    return sym_launch(fn, blocks, SYM_GPU_THREADS, stream, args);
}
