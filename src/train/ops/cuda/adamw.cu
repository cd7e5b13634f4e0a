/*
 * adamw.cu — the optimizer step on the GPU: the global gradient norm (and
 * the clipping factor it implies) and one fused AdamW update over every
 * parameter, fp32 master weights and moments, writing the bf16 or fp16 working copy
 * (CPU reference: sym_grad_norm / sym_grad_clip in optim/clip.c, and
 * sym_optim_step in optim/optim.c).
 *
 * The norm is a two-stage reduction with a fixed shape: NORM_BLOCKS blocks
 * stride over the gradients, each thread summing squares in double, each block
 * its threads in a fixed tree into scratch[block]; then one block sums the
 * NORM_BLOCKS partials the same way. The grid does not depend on the device,
 * so the result is the same bits on every run (and every H200).
 *
 * AdamW follows the CPU's arithmetic operation for operation, with explicit
 * round-to-nearest intrinsics so nvcc does not fuse multiply-adds, and the bias
 * corrections computed on the host exactly as the CPU computes them; given
 * the same gradient scale the updates agree with sym_optim_step's to the bit
 * (the scale itself, from a sum in another order, may differ in its last bit). Weight decay is off inside the no-decay ranges, found by a
 * binary search over their sorted offsets.
 *
 * fp16's loss scale rides on the same two kernels: the norm's final block
 * sees the sum of squares of the scaled gradients, so an inf or NaN anywhere
 * shows there as a non-finite sum, and that one thread updates the scale
 * (symcu_loss_scale_t) and the skip flag AdamW reads. No host is asked.
 */
#include <math.h>

#include "common.cuh"

#define NORM_BLOCKS 512
#define NORM_THREADS 512

/* ---- gradient norm ---- */

size_t symcu_grad_norm_scratch(void) { return NORM_BLOCKS; }

/* part (NORM_BLOCKS) = each block's sum of squares. vec: g is 16-byte
 * aligned, so the body goes 4 floats at a time (more bytes in flight). */
__global__ void __launch_bounds__(NORM_THREADS)
    norm_part_kernel(double *part, const float *g, size_t n, int vec) {
    __shared__ double sh[32];
    double s = 0.0;
    size_t tid = (size_t)blockIdx.x * blockDim.x + threadIdx.x, nth = (size_t)gridDim.x * blockDim.x;
    size_t n4 = vec ? n / 4 : 0;
    const float4 *g4 = reinterpret_cast<const float4 *>(g);
#pragma unroll 4
    for (size_t i = tid; i < n4; i += nth) {
        float4 v = __ldcs(g4 + i);
        s += (double)v.x * v.x + (double)v.y * v.y + (double)v.z * v.z + (double)v.w * v.w;
    }
    for (size_t i = n4 * 4 + tid; i < n; i += nth) {
        double v = g[i];
        s += v * v;
    }
    s = block_sum(s, sh);
    if (threadIdx.x == 0) part[blockIdx.x] = s;
}

/* norm = sqrt(s), s the sum of squares; scale = the clipping factor; with
 * ls, both for the gradients divided by ls->scale, and ls updated. One thread. */
static __device__ void norm_finish(double s, float *norm, float *scale, float max_norm,
                            symcu_loss_scale_t *ls) {
    float S = ls ? ls->scale : 1.0f;
    double nrm = sqrt(s) / (double)S; /* S is a power of 2: exact */
    *norm = (float)nrm;
    /* sym_grad_clip's rule, in the same precision */
    float clip = max_norm > 0.0f && nrm > (double)max_norm
                     ? (float)((double)max_norm / (nrm + 1e-6))
                     : 1.0f;
    *scale = ls ? clip / S : clip;
    if (ls) {
        if (!isfinite(s)) { /* an inf or NaN in the gradients: skip, lower S */
            ls->skipped = 1;
            ls->skipped_total++;
            ls->scale = fmaxf(1.0f, 0.5f * S);
            ls->good = 0;
            *scale = 0.0f;
        } else {
            ls->skipped = 0;
            if (++ls->good >= ls->growth) {
                ls->scale = fminf(SYMCU_LOSS_SCALE_MAX, 2.0f * S);
                ls->good = 0;
            }
        }
    }
}

/* the norm from the partials (NORM_BLOCKS) */
__global__ void __launch_bounds__(NORM_BLOCKS)
    norm_final_kernel(float *norm, float *scale, const double *part, float max_norm,
                      symcu_loss_scale_t *ls) {
    __shared__ double sh[32];
    double s = block_sum(part[threadIdx.x], sh);
    if (threadIdx.x == 0) norm_finish(s, norm, scale, max_norm, ls);
}

int symcu_grad_norm(float *norm, float *scale, double *scratch, const float *g, size_t n,
                    float max_norm, symcu_loss_scale_t *ls, cudaStream_t stream) {
    if (!norm || !scale || !scratch) return SYMCU_INVAL("grad norm: norm, scale and scratch are needed");
    norm_part_kernel<<<NORM_BLOCKS, NORM_THREADS, 0, stream>>>(scratch, g, n, symcu__aligned16(g));
    SYMCU_LAUNCHED("norm_part_kernel");
    norm_final_kernel<<<1, NORM_BLOCKS, 0, stream>>>(norm, scale, scratch, max_norm, ls);
    SYMCU_LAUNCHED("norm_final_kernel");
    return SYM_OK;
}

/* ---- the norm of a tensor-parallel model's gradients ---- */

/* part (2,NORM_BLOCKS): each block's sums of squares of the elements outside
 * (part[b]) and inside (part[NORM_BLOCKS + b]) the nr ranges (offset,
 * length), sorted and disjoint. A thread's indices grow, so its cursor into
 * the ranges only moves forward. */
__global__ void __launch_bounds__(NORM_THREADS)
    norm_part2_kernel(double *part, const float *g, size_t n, const uint64_t *r, int nr) {
    __shared__ double sh[32];
    double out = 0.0, in = 0.0;
    int k = 0;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        while (k < nr && r[2 * k] + r[2 * k + 1] <= i) k++;
        double v = g[i];
        if (k < nr && i >= r[2 * k])
            in += v * v;
        else
            out += v * v;
    }
    out = block_sum(out, sh);
    in = block_sum(in, sh);
    if (threadIdx.x == 0) {
        part[blockIdx.x] = out;
        part[NORM_BLOCKS + blockIdx.x] = in;
    }
}

/* sq (2) = the two sums of the partials, as floats */
__global__ void __launch_bounds__(NORM_BLOCKS) sumsq_final_kernel(float *sq, const double *part) {
    __shared__ double sh[32];
    double a = block_sum(part[threadIdx.x], sh);
    double b = block_sum(part[NORM_BLOCKS + threadIdx.x], sh);
    if (threadIdx.x == 0) {
        sq[0] = (float)a;
        sq[1] = (float)b;
    }
}

__global__ void norm_from_sumsq_kernel(float *norm, float *scale, const float *sq, float max_norm,
                                       symcu_loss_scale_t *ls) {
    norm_finish((double)sq[0] + (double)sq[1], norm, scale, max_norm, ls);
}

size_t symcu_grad_sumsq_scratch(void) { return 2 * NORM_BLOCKS; }

int symcu_grad_sumsq(float *sq, double *scratch, const float *g, size_t n, const uint64_t *ranges,
                     int nr, cudaStream_t stream) {
    if (!sq || !scratch || nr < 0 || (nr && !ranges))
        return SYMCU_INVAL("grad sum of squares: sq, scratch and %d ranges are needed", nr);
    norm_part2_kernel<<<NORM_BLOCKS, NORM_THREADS, 0, stream>>>(scratch, g, n, ranges, nr);
    SYMCU_LAUNCHED("norm_part2_kernel");
    sumsq_final_kernel<<<1, NORM_BLOCKS, 0, stream>>>(sq, scratch);
    SYMCU_LAUNCHED("sumsq_final_kernel");
    return SYM_OK;
}

int symcu_grad_norm_from_sumsq(float *norm, float *scale, const float *sq, float max_norm,
                               symcu_loss_scale_t *ls, cudaStream_t stream) {
    if (!norm || !scale || !sq) return SYMCU_INVAL("grad norm: norm, scale and sq are needed");
    norm_from_sumsq_kernel<<<1, 1, 0, stream>>>(norm, scale, sq, max_norm, ls);
    SYMCU_LAUNCHED("norm_from_sumsq_kernel");
    return SYM_OK;
}

/* ---- AdamW ---- */

typedef struct {
    float b1, b2, one_m_b1, one_m_b2, eps;
    float decay;        /* 1 - lr * wd */
    float step;         /* lr / bc1 */
    float inv_sqrt_bc2; /* 1 / sqrtf(bc2) */
} adamw_k_t;

/* Is element i in one of the nr no-decay ranges (off, len), sorted and disjoint? */
__device__ __forceinline__ bool no_decay_at(size_t i, const uint64_t *r, int nr) {
    int lo = 0, hi = nr - 1, found = -1;
    while (lo <= hi) { /* the last range starting at or before i */
        int mid = (lo + hi) >> 1;
        if (__ldg(r + 2 * mid) <= i) {
            found = mid;
            lo = mid + 1;
        } else {
            hi = mid - 1;
        }
    }
    return found >= 0 && i - __ldg(r + 2 * found) < __ldg(r + 2 * found + 1);
}

/* One element's update, the CPU's operations in the CPU's order. */
__device__ __forceinline__ void adamw_one(float &wi, float &mi, float &vi, float gi, bool decay,
                                          const adamw_k_t &k) {
    if (decay) wi = __fmul_rn(wi, k.decay);
    mi = __fadd_rn(__fmul_rn(k.b1, mi), __fmul_rn(k.one_m_b1, gi));
    vi = __fadd_rn(__fmul_rn(k.b2, vi), __fmul_rn(__fmul_rn(k.one_m_b2, gi), gi));
    float den = __fadd_rn(__fmul_rn(__fsqrt_rn(vi), k.inv_sqrt_bc2), k.eps);
    wi = __fsub_rn(wi, __fdiv_rn(__fmul_rn(k.step, mi), den));
}

/* w, m, v (n) updated from g (n) * *gscale; w16 (n) the copy in E (bf16 or
 * fp16). vec: the fp32 arrays are 16-byte aligned and w16 8-byte, so the body
 * goes 4 at a time. Nothing where *skip. */
template <typename E>
__global__ void adamw_kernel(float *w, E *w16, float *m, float *v, const float *g, size_t n,
                             const float *gscale, const uint32_t *skip, const uint64_t *ranges,
                             int nr, adamw_k_t k, int vec) {
    if (skip && *skip) return;
    float sc = gscale ? *gscale : 1.0f;
    size_t tid = (size_t)blockIdx.x * blockDim.x + threadIdx.x, nth = (size_t)gridDim.x * blockDim.x;
    size_t n4 = vec ? n / 4 : 0;
    for (size_t c = tid; c < n4; c += nth) {
        float4 w4 = reinterpret_cast<float4 *>(w)[c], m4 = reinterpret_cast<float4 *>(m)[c];
        float4 v4 = reinterpret_cast<float4 *>(v)[c], g4 = __ldcs(reinterpret_cast<const float4 *>(g) + c);
        float *wp = &w4.x, *mp = &m4.x, *vp = &v4.x, *gp = &g4.x;
#pragma unroll
        for (int e = 0; e < 4; e++) {
            size_t i = c * 4 + e;
            float gi = gscale ? __fmul_rn(gp[e], sc) : gp[e]; /* sym_grad_clip: g[i] *= scale */
            adamw_one(wp[e], mp[e], vp[e], gi, !(nr > 0 && no_decay_at(i, ranges, nr)), k);
        }
        reinterpret_cast<float4 *>(w)[c] = w4;
        reinterpret_cast<float4 *>(m)[c] = m4;
        reinterpret_cast<float4 *>(v)[c] = v4;
        if (w16) {
            store2(w16 + c * 4, w4.x, w4.y);
            store2(w16 + c * 4 + 2, w4.z, w4.w);
        }
    }
    for (size_t i = n4 * 4 + tid; i < n; i += nth) {
        float wi = w[i], mi = m[i], vi = v[i], gi = gscale ? __fmul_rn(g[i], sc) : g[i];
        adamw_one(wi, mi, vi, gi, !(nr > 0 && no_decay_at(i, ranges, nr)), k);
        m[i] = mi;
        v[i] = vi;
        w[i] = wi;
        if (w16) w16[i] = from_f<E>(wi);
    }
}

int symcu_adamw(float *w, symcu_dtype_t dt, void *wc, float *m, float *v, const float *g, size_t n,
                const float *grad_scale, const uint32_t *skip, const uint64_t *no_decay, int nr,
                const symcu_adamw_t *hp, cudaStream_t stream) {
    if (wc && dt != SYMCU_BF16 && dt != SYMCU_F16)
        return SYMCU_INVAL("adamw: a working copy of compute type %d; bf16 or fp16 only (fp32 "
                           "computes with the master weights)", (int)dt);
    if (!hp || hp->t < 1) return SYMCU_INVAL("adamw: the step count t starts at 1");
    if (nr < 0 || (nr > 0 && !no_decay)) return SYMCU_INVAL("adamw: %d no-decay ranges and no array", nr);
    if (!n) return SYM_OK;
    /* the CPU's expressions (optim.c): bc in double, then float */
    float bc1 = (float)(1.0 - pow((double)hp->beta1, (double)hp->t));
    float bc2 = (float)(1.0 - pow((double)hp->beta2, (double)hp->t));
    adamw_k_t k;
    k.b1 = hp->beta1;
    k.b2 = hp->beta2;
    k.one_m_b1 = 1.0f - hp->beta1;
    k.one_m_b2 = 1.0f - hp->beta2;
    k.eps = hp->eps;
    k.decay = 1.0f - hp->lr * hp->weight_decay;
    k.step = hp->lr / bc1;
    k.inv_sqrt_bc2 = 1.0f / sqrtf(bc2);
    int vec = symcu__aligned16(w) && symcu__aligned16(m) && symcu__aligned16(v) &&
              symcu__aligned16(g) && ((uintptr_t)wc & 7u) == 0;
    size_t blocks = (n / (vec ? 4 : 1) + 255) / 256;
    if (blocks > 132 * 16) blocks = 132 * 16; /* a grid-stride loop past this */
    if (blocks < 1) blocks = 1;
    if (dt == SYMCU_F16)
        adamw_kernel<f16><<<(unsigned)blocks, 256, 0, stream>>>(w, (f16 *)wc, m, v, g, n, grad_scale,
                                                               skip, no_decay, nr, k, vec);
    else
        adamw_kernel<bf16><<<(unsigned)blocks, 256, 0, stream>>>(w, (bf16 *)wc, m, v, g, n,
                                                                grad_scale, skip, no_decay, nr, k,
                                                                vec);
    SYMCU_LAUNCHED("adamw_kernel");
    return SYM_OK;
}
