/*
 * layernorm.cu — the residual add fused with the LayerNorm that follows it
 * (forward), and the LayerNorm backward (CPU reference: ops/cpu/layernorm.c
 * and residual.c).
 *
 * Every kernel is a template over the compute type E (common.cuh).
 *
 * Forward: one warp per row. The sum a + b is rounded to E and stored (the
 * residual stream), and the statistics are taken of that rounded row, which
 * is what the backward will be given as x: mean, then the variance as the mean
 * of squared deviations (two passes, as the CPU does), rstd = 1 / sqrt(var +
 * 1e-5). The row is re-read from L1/L2 for each pass.
 *
 * Backward: rows are split into at most LNB_BLOCKS contiguous ranges, one per
 * block, a number fixed by N alone. Each warp of a block takes every
 * LNB_WARPS-th row of the range: dx from the row's two means (sum of g*w and of
 * g*w*n), and dw, db into the warp's own fp32 accumulators in shared memory
 * (a lane owns its channels, so there is no contention). The block then sums
 * its warps in order into its partial row of scratch, and a second kernel sums
 * the blocks' partials in a fixed order (16 strided groups, then the groups)
 * into dw and db. No atomics: the same bits
 * every run.
 */
#include "common.cuh"

#define LN_EPS 1e-5f
#define LNF_ROWS 8    /* rows (warps) per block of the forward */
#define LNB_WARPS 8   /* warps per block of the backward */
#define LNB_BLOCKS 512

/* ---- forward ---- */

/* res (N,C), out (N,C), mean (N), rstd (N) from a (N,C) [+ b (N,C)], w (C), bias (C) */
template <typename E>
__global__ void __launch_bounds__(LNF_ROWS * 32)
    ln_fwd_kernel(E *res, E *out, float *mean, float *rstd, const E *a, const E *b, const E *w,
                  const E *bias, int N, int C) {
    int row = blockIdx.x * LNF_ROWS + (threadIdx.x >> 5), lane = threadIdx.x & 31;
    if (row >= N) return;
    size_t off = (size_t)row * C;
    const E *pa = a + off;
    const E *x = b ? res + off : pa;
    float s = 0.0f;
    for (int c = lane * 8; c < C; c += 256) {
        float f[8];
        load8(f, pa + c);
        if (b) {
            float g[8];
            load8(g, b + off + c);
#pragma unroll
            for (int k = 0; k < 8; k++) f[k] += g[k];
            store8(res + off + c, f);
#pragma unroll
            for (int k = 0; k < 8; k++) f[k] = round_to<E>(f[k]);
        }
#pragma unroll
        for (int k = 0; k < 8; k++) s += f[k];
    }
    float m = warp_sum(s) / (float)C;
    float v = 0.0f;
    for (int c = lane * 8; c < C; c += 256) {
        float f[8];
        load8(f, x + c);
#pragma unroll
        for (int k = 0; k < 8; k++) {
            float d = f[k] - m;
            v += d * d;
        }
    }
    v = warp_sum(v) / (float)C;
    float rs = 1.0f / sqrtf(v + LN_EPS);
    for (int c = lane * 8; c < C; c += 256) {
        float f[8], ww[8], bb[8];
        load8(f, x + c);
        load8(ww, w + c);
        load8(bb, bias + c);
#pragma unroll
        for (int k = 0; k < 8; k++) f[k] = (f[k] - m) * rs * ww[k] + bb[k];
        store8(out + off + c, f);
    }
    if (lane == 0) {
        mean[row] = m;
        rstd[row] = rs;
    }
}

int symcu_residual_layernorm_forward(symcu_dtype_t dt, void *res, void *out, float *mean,
                                     float *rstd, const void *a, const void *b, const void *w,
                                     const void *bias, int N, int C, cudaStream_t stream) {
    if (N < 1 || C < 8 || C % 8 || C > 8192)
        return SYMCU_INVAL("layernorm forward: N=%d C=%d; needs N >= 1 and C a multiple of 8 "
                           "up to 8192",
                           N, C);
    if (b && !res) return SYMCU_INVAL("layernorm forward: a residual b without res to store it");
    if (!symcu__aligned16(a) || !symcu__aligned16(out) || (b && !symcu__aligned16(b)) ||
        (b && !symcu__aligned16(res)) || !symcu__aligned16(w) || !symcu__aligned16(bias))
        return SYMCU_INVAL("layernorm forward: tensors must be 16-byte aligned");
    SYMCU_DISPATCH(dt, "layernorm forward",
                   ln_fwd_kernel<E><<<(N + LNF_ROWS - 1) / LNF_ROWS, LNF_ROWS * 32, 0, stream>>>(
                       (E *)res, (E *)out, mean, rstd, (const E *)a, (const E *)b, (const E *)w,
                       (const E *)bias, N, C));
    SYMCU_LAUNCHED("ln_fwd_kernel");
    return SYM_OK;
}

/* ---- backward ---- */

static int lnb_grid(int N) {
    int g = (N + LNB_WARPS - 1) / LNB_WARPS;
    return g < LNB_BLOCKS ? g : LNB_BLOCKS;
}

size_t symcu_layernorm_backward_scratch(int N, int C) {
    return N < 1 || C < 1 ? 0 : (size_t)lnb_grid(N) * 2 * (size_t)C;
}

/* Where element c + k (c = lane * 8 + 256 j, the lane's chunk) of a warp's
 * accumulator row lives: rotated within its chunk by lane / 4, so the 32 lanes'
 * k-th elements fall in 32 different banks. */
__device__ __forceinline__ int swz(int c, int k) { return c + ((k + ((c >> 3) & 31) / 4) & 7); }

/* dx (N,C) +=; part (gridDim.x, 2, C) = this block's dw and db partials */
template <typename E>
__global__ void __launch_bounds__(LNB_WARPS * 32)
    ln_bwd_kernel(E *dx, float *part, const E *dout, const E *x, const E *w, const float *mean,
                  const float *rstd, int N, int C, int rows_per_block) {
    extern __shared__ float sh[]; /* (LNB_WARPS, 2, C) */
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    float *sdw = sh + (size_t)warp * 2 * C, *sdb = sdw + C;
    for (int i = lane; i < 2 * C; i += 32) sdw[i] = 0.0f;
    __syncwarp();
    int r0 = blockIdx.x * rows_per_block, r1 = min(N, r0 + rows_per_block);
    for (int row = r0 + warp; row < r1; row += LNB_WARPS) {
        size_t off = (size_t)row * C;
        float m = mean[row], rs = rstd[row];
        float sg = 0.0f, sgn = 0.0f;
        for (int c = lane * 8; c < C; c += 256) {
            float g[8], xx[8], ww[8];
            load8(g, dout + off + c);
            load8(xx, x + off + c);
            load8(ww, w + c);
#pragma unroll
            for (int k = 0; k < 8; k++) {
                float n = (xx[k] - m) * rs, gw = g[k] * ww[k];
                sg += gw;
                sgn += gw * n;
                sdw[swz(c, k)] += g[k] * n;
                sdb[swz(c, k)] += g[k];
            }
        }
        float mg = warp_sum(sg) / (float)C, mgn = warp_sum(sgn) / (float)C;
        for (int c = lane * 8; c < C; c += 256) {
            float g[8], xx[8], ww[8], d[8];
            load8(g, dout + off + c);
            load8(xx, x + off + c);
            load8(ww, w + c);
            load8(d, dx + off + c);
#pragma unroll
            for (int k = 0; k < 8; k++) {
                float n = (xx[k] - m) * rs, gw = g[k] * ww[k];
                d[k] += rs * (gw - mg - n * mgn);
            }
            store8(dx + off + c, d);
        }
    }
    __syncthreads();
    float *p = part + (size_t)blockIdx.x * 2 * C;
    for (int i = threadIdx.x; i < 2 * C; i += blockDim.x) {
        int half = i >= C ? C : 0, e = i - half, at = half + swz(e & ~7, e & 7);
        float s = 0.0f;
        for (int q = 0; q < LNB_WARPS; q++) s += sh[(size_t)q * 2 * C + at];
        p[i] = s;
    }
}

/* dw (C) +=, db (C) += the blocks' partials, in a fixed order: block
 * (32 columns) x (FIN_GROUPS groups); thread (x, y) sums partials y,
 * y + FIN_GROUPS, ... of column x, and thread y = 0 then adds the groups in
 * order. */
#define FIN_GROUPS 16
__global__ void __launch_bounds__(32 * FIN_GROUPS)
    ln_bwd_final_kernel(float *dw, float *db, const float *part, int nblocks, int C) {
    __shared__ float sh[FIN_GROUPS][32];
    int i = blockIdx.x * 32 + threadIdx.x, y = threadIdx.y;
    float s = 0.0f;
    if (i < 2 * C)
        for (int q = y; q < nblocks; q += FIN_GROUPS) s += part[(size_t)q * 2 * C + i];
    sh[y][threadIdx.x] = s;
    __syncthreads();
    if (y || i >= 2 * C) return;
    s = 0.0f;
    for (int k = 0; k < FIN_GROUPS; k++) s += sh[k][threadIdx.x];
    if (i < C)
        dw[i] += s;
    else
        db[i - C] += s;
}

int symcu_layernorm_backward(symcu_dtype_t dt, void *dx, float *dw, float *db, float *scratch,
                             const void *dout, const void *x, const void *w, const float *mean,
                             const float *rstd, int N, int C, cudaStream_t stream) {
    if (N < 1 || C < 8 || C % 8 || C > 3072)
        return SYMCU_INVAL("layernorm backward: N=%d C=%d; needs N >= 1 and C a multiple of 8 "
                           "up to 3072",
                           N, C);
    if (!symcu__aligned16(dx) || !symcu__aligned16(dout) || !symcu__aligned16(x) ||
        !symcu__aligned16(w))
        return SYMCU_INVAL("layernorm backward: tensors must be 16-byte aligned");
    int grid = lnb_grid(N), rows = (N + grid - 1) / grid;
    size_t smem = (size_t)LNB_WARPS * 2 * (size_t)C * sizeof(float);
    SYMCU_DISPATCH(dt, "layernorm backward", SYMCU_SMEM_OPT_IN(ln_bwd_kernel<E>, smem);
                   ln_bwd_kernel<E><<<grid, LNB_WARPS * 32, smem, stream>>>(
                       (E *)dx, scratch, (const E *)dout, (const E *)x, (const E *)w, mean, rstd,
                       N, C, rows));
    SYMCU_LAUNCHED("ln_bwd_kernel");
    ln_bwd_final_kernel<<<(2 * C + 31) / 32, dim3(32, FIN_GROUPS), 0, stream>>>(dw, db, scratch,
                                                                        grid, C);
    SYMCU_LAUNCHED("ln_bwd_final_kernel");
    return SYM_OK;
}
