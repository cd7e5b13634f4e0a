/*
 * classifier.cu — the fused softmax cross-entropy over a padded vocabulary,
 * in place: loss per row and dlogits over the logits (CPU reference:
 * sym_softmax_xent in ops/cpu/loss.c).
 *
 * A template over the compute type E (common.cuh). fp16's loss scale is a
 * device float multiplied into the gradient's scale when the kernel runs.
 *
 * One block per row. Pass 1 reads the row once, each thread keeping a running
 * (max, sum of 2^(x - max)) of x = logit * log2 e over its 16-byte chunks
 * (exp2f is one instruction, expf several: with expf the kernel was
 * compute-bound); the pairs are combined (max of the maxima, sums rescaled) by
 * a butterfly in each warp and then across warps in warp order, into the
 * row's log-sum-exp. Pass 2 reads the row
 * again (from L2, usually) and overwrites it with (softmax - onehot) * scale,
 * and zeros in the padding columns. No probability array is kept; the target's
 * logit is read before anything is written.
 */
#include <float.h>
#include <math.h>

#include "common.cuh"

#define XENT_THREADS 512
#define LOG2E 1.4426950408889634f
#define LN2 0.6931471805599453f

/* (m, s) and (m2, s2) -> the pair of their union (base 2: s = sum 2^(x - m)). Symmetric in its two
 * arguments (bit for bit), so the butterfly gives every lane the same pair. */
__device__ __forceinline__ void lse_merge(float &m, float &s, float m2, float s2) {
    float mm = fmaxf(m, m2);
    s = s * exp2f(m - mm) + s2 * exp2f(m2 - mm);
    m = mm;
}

/* Pass 2 of a row z (len, a multiple of 8) whose first `valid` columns count:
 * each thread's chunks become (softmax - onehot at tgt) * scale, from the
 * row's log2 of the sum of e^z, and the columns from `valid` on zeros. */
template <typename E>
__device__ __forceinline__ void dlogits_row(E *z, int valid, int len, int tgt, float lse2,
                                            float scale) {
    for (int c = threadIdx.x * 8; c < len; c += blockDim.x * 8) {
        float f[8];
        load8_cs(f, z + c);
#pragma unroll
        for (int k = 0; k < 8; k++) {
            int col = c + k;
            float p = col < valid ? exp2f(f[k] * LOG2E - lse2) : 0.0f;
            if (col == tgt) p -= 1.0f;
            f[k] = col < valid ? p * scale : 0.0f;
        }
        store8(z + c, f);
    }
}

/* loss (N); logits (N,Vp) become dlogits; targets (N) */
template <typename E>
__global__ void __launch_bounds__(XENT_THREADS)
    xent_kernel(float *loss, E *logits, const int32_t *targets, int V, int Vp, float scale,
                const float *dscale) {
    __shared__ float shm[32], shs[32];
    size_t row = blockIdx.x;
    E *z = logits + row * (size_t)Vp;
    if (dscale) scale *= *dscale;
    int tgt = targets[row];
    int valid = tgt >= 0 && tgt < V;
    float zt = 0.0f;
    if (threadIdx.x == 0 && valid) zt = to_f(z[tgt]);
    /* pass 1: the thread's chunks, in base 2 (x * log2 e; exp2f is one
     * instruction where expf is several); -FLT_MAX, not -inf, so empty pairs
     * merge to 0 */
    float m = -FLT_MAX, s = 0.0f;
    for (int c = threadIdx.x * 8; c < V; c += XENT_THREADS * 8) {
        float f[8];
        load8(f, z + c);
        float cm = -FLT_MAX;
        if (c + 8 <= V) {
#pragma unroll
            for (int k = 0; k < 8; k++) {
                f[k] *= LOG2E;
                cm = fmaxf(cm, f[k]);
            }
        } else {
            for (int k = 0; k < 8; k++) f[k] = c + k < V ? f[k] * LOG2E : -INFINITY;
            for (int k = 0; k < 8; k++) cm = fmaxf(cm, f[k]);
        }
        float mm = fmaxf(m, cm), cs = 0.0f;
#pragma unroll
        for (int k = 0; k < 8; k++) cs += exp2f(f[k] - mm);
        s = s * exp2f(m - mm) + cs;
        m = mm;
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        float m2 = __shfl_xor_sync(0xffffffffu, m, o), s2 = __shfl_xor_sync(0xffffffffu, s, o);
        lse_merge(m, s, m2, s2);
    }
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) {
        shm[warp] = m;
        shs[warp] = s;
    }
    __syncthreads(); /* also: every thread's pass-1 reads are done before pass 2 writes */
    if (warp == 0) {
        m = lane < XENT_THREADS / 32 ? shm[lane] : -FLT_MAX;
        s = lane < XENT_THREADS / 32 ? shs[lane] : 0.0f;
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) {
            float m2 = __shfl_xor_sync(0xffffffffu, m, o), s2 = __shfl_xor_sync(0xffffffffu, s, o);
            lse_merge(m, s, m2, s2);
        }
        if (lane == 0) {
            shm[0] = m;
            shs[0] = s;
        }
    }
    __syncthreads();
    float lse2 = shm[0] + log2f(shs[0]); /* log2 of the sum of e^x */
    if (threadIdx.x == 0) loss[row] = valid ? lse2 * LN2 - zt : NAN;
    dlogits_row(z, V, Vp, tgt, lse2, scale); /* pass 2 */
}

int symcu_softmax_xent(symcu_dtype_t dt, float *loss, void *logits, const int32_t *targets, int N,
                       int V, int Vp, float scale, const float *dscale, cudaStream_t stream) {
    if (N < 1 || V < 1 || V > Vp || Vp % 8)
        return SYMCU_INVAL("softmax cross-entropy: N=%d V=%d Vp=%d; needs N >= 1, 1 <= V <= Vp "
                           "and Vp a multiple of 8",
                           N, V, Vp);
    if (!symcu__aligned16(logits))
        return SYMCU_INVAL("softmax cross-entropy: logits must be 16-byte aligned");
    SYMCU_DISPATCH(dt, "softmax cross-entropy",
                   xent_kernel<E><<<N, XENT_THREADS, 0, stream>>>(loss, (E *)logits, targets, V,
                                                                  Vp, scale, dscale));
    SYMCU_LAUNCHED("xent_kernel");
    return SYM_OK;
}

/* ---- vocabulary-parallel: this PE's nv columns of each row ----
 * The three passes of the fused kernel, split where the team must agree on a
 * per-row number (the caller all-reduces between them): the local maximum
 * (then the max over the team), the local sum of e^(z - max) and the target's
 * logit where this PE holds its column (then the sum over the team), and the
 * loss and gradient from the team's log-sum-exp. Rows are (N, ld), ld % 8 == 0,
 * columns [nv, ld) padding; each PE holds vocabulary columns [v0, v0 + nv). */

#define SHARD_THREADS 256

/* The maximum (or, with MIN, the minimum) of every thread's v over the block,
 * returned to every thread; sh holds 32 floats. */
template <bool MIN>
__device__ __forceinline__ float block_extreme(float v, float *sh) {
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        float w = __shfl_xor_sync(0xffffffffu, v, o);
        v = MIN ? fminf(v, w) : fmaxf(v, w);
    }
    __syncthreads();
    if (lane == 0) sh[warp] = v;
    __syncthreads();
    v = lane < nw ? sh[lane] : (MIN ? FLT_MAX : -FLT_MAX);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        float w = __shfl_xor_sync(0xffffffffu, v, o);
        v = MIN ? fminf(v, w) : fmaxf(v, w);
    }
    return v;
}

/* rowmax (N) = the maximum of logits (N,ld) over columns [0, nv) */
template <typename E>
__global__ void __launch_bounds__(SHARD_THREADS)
    xent_max_kernel(float *rowmax, const E *logits, int nv, int ld) {
    __shared__ float sh[32];
    const E *z = logits + (size_t)blockIdx.x * ld;
    float m = -FLT_MAX;
    for (int c = threadIdx.x * 8; c < nv; c += SHARD_THREADS * 8) {
        float f[8];
        load8(f, z + c);
        for (int k = 0; k < 8 && c + k < nv; k++) m = fmaxf(m, f[k]);
    }
    m = block_extreme<false>(m, sh);
    if (threadIdx.x == 0) rowmax[blockIdx.x] = m;
}

/* sums (2,N): sums[r] = the sum of e^(z - rowmax[r]) over columns [0, nv);
 * sums[N + r] = the target's logit where it is one of this PE's columns, else 0 */
template <typename E>
__global__ void __launch_bounds__(SHARD_THREADS)
    xent_sums_kernel(float *sums, const E *logits, const int32_t *targets, const float *rowmax,
                     int v0, int nv, int ld, int N) {
    __shared__ float sh[32];
    size_t row = blockIdx.x;
    const E *z = logits + row * ld;
    float m2 = rowmax[row] * LOG2E, s = 0.0f;
    for (int c = threadIdx.x * 8; c < nv; c += SHARD_THREADS * 8) {
        float f[8];
        load8(f, z + c);
        for (int k = 0; k < 8 && c + k < nv; k++) s += exp2f(f[k] * LOG2E - m2);
    }
    s = block_sum(s, sh);
    if (threadIdx.x == 0) {
        int t = targets[row] - v0;
        sums[row] = s;
        sums[N + row] = t >= 0 && t < nv ? to_f(z[t]) : 0.0f;
    }
}

/* loss (N) = log-sum-exp - the target's logit; logits (N,ld) become
 * (softmax - onehot) * scale (* *dscale), zeros in [nv, ld) */
template <typename E>
__global__ void __launch_bounds__(SHARD_THREADS)
    xent_grad_kernel(float *loss, E *logits, const int32_t *targets, const float *rowmax,
                     const float *sums, int v0, int nv, int ld, int N, float scale,
                     const float *dscale) {
    size_t row = blockIdx.x;
    E *z = logits + row * ld;
    if (dscale) scale *= *dscale;
    float lse2 = rowmax[row] * LOG2E + log2f(sums[row]); /* log2 of the row's sum of e^z */
    if (threadIdx.x == 0) loss[row] = lse2 * LN2 - sums[N + row];
    dlogits_row(z, nv, ld, targets[row] - v0, lse2, scale);
}

/* first (N) = v0 + the first column of [0, nv) holding rowmax (the team's
 * maximum), as a float; SYMCU_NO_COLUMN where none does */
template <typename E>
__global__ void __launch_bounds__(SHARD_THREADS)
    argmax_first_kernel(float *first, const E *logits, const float *rowmax, int v0, int nv,
                        int ld) {
    __shared__ float sh[32];
    const E *z = logits + (size_t)blockIdx.x * ld;
    float m = rowmax[blockIdx.x], at = SYMCU_NO_COLUMN;
    for (int c = threadIdx.x * 8; c < nv && at == SYMCU_NO_COLUMN; c += SHARD_THREADS * 8) {
        float f[8];
        load8(f, z + c);
        for (int k = 0; k < 8 && c + k < nv; k++)
            if (f[k] == m) {
                at = (float)(v0 + c + k);
                break;
            }
    }
    at = block_extreme<true>(at, sh);
    if (threadIdx.x == 0) first[blockIdx.x] = at;
}

static int shard_args(const char *fn, const void *logits, int N, int v0, int nv, int ld) {
    if (N < 1 || v0 < 0 || nv < 1 || nv > ld || ld % 8 || v0 + nv > (1 << 24))
        return SYMCU_INVAL("%s: N=%d, columns [%d, +%d) in rows of %d; needs N >= 1, 1 <= nv <= "
                           "ld, ld a multiple of 8, v0 + nv <= 2^24", fn, N, v0, nv, ld);
    if (!symcu__aligned16(logits)) return SYMCU_INVAL("%s: logits must be 16-byte aligned", fn);
    return SYM_OK;
}

int symcu_xent_shard_max(symcu_dtype_t dt, float *rowmax, const void *logits, int N, int nv,
                         int ld, cudaStream_t stream) {
    int rc = shard_args("cross-entropy (max)", logits, N, 0, nv, ld);
    if (rc) return rc;
    SYMCU_DISPATCH(dt, "cross-entropy (max)",
                   xent_max_kernel<E><<<N, SHARD_THREADS, 0, stream>>>(rowmax, (const E *)logits,
                                                                       nv, ld));
    SYMCU_LAUNCHED("xent_max_kernel");
    return SYM_OK;
}

int symcu_xent_shard_sums(symcu_dtype_t dt, float *sums, const void *logits,
                          const int32_t *targets, const float *rowmax, int N, int v0, int nv,
                          int ld, cudaStream_t stream) {
    int rc = shard_args("cross-entropy (sums)", logits, N, v0, nv, ld);
    if (rc) return rc;
    SYMCU_DISPATCH(dt, "cross-entropy (sums)",
                   xent_sums_kernel<E><<<N, SHARD_THREADS, 0, stream>>>(
                       sums, (const E *)logits, targets, rowmax, v0, nv, ld, N));
    SYMCU_LAUNCHED("xent_sums_kernel");
    return SYM_OK;
}

int symcu_xent_shard_grad(symcu_dtype_t dt, float *loss, void *logits, const int32_t *targets,
                          const float *rowmax, const float *sums, int N, int v0, int nv, int ld,
                          float scale, const float *dscale, cudaStream_t stream) {
    int rc = shard_args("cross-entropy (gradient)", logits, N, v0, nv, ld);
    if (rc) return rc;
    SYMCU_DISPATCH(dt, "cross-entropy (gradient)",
                   xent_grad_kernel<E><<<N, SHARD_THREADS, 0, stream>>>(
                       loss, (E *)logits, targets, rowmax, sums, v0, nv, ld, N, scale, dscale));
    SYMCU_LAUNCHED("xent_grad_kernel");
    return SYM_OK;
}

int symcu_argmax_shard(symcu_dtype_t dt, float *first, const void *logits, const float *rowmax,
                       int N, int v0, int nv, int ld, cudaStream_t stream) {
    int rc = shard_args("arg-max", logits, N, v0, nv, ld);
    if (rc) return rc;
    SYMCU_DISPATCH(dt, "arg-max",
                   argmax_first_kernel<E><<<N, SHARD_THREADS, 0, stream>>>(
                       first, (const E *)logits, rowmax, v0, nv, ld));
    SYMCU_LAUNCHED("argmax_first_kernel");
    return SYM_OK;
}
