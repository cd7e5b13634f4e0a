/*
 * attention.cu — causal multi-head self-attention, forward and backward, as
 * flash-attention-2-style kernels on the tensor cores (mma.sync m16n8k16,
 * bf16 in, fp32 accumulate), never writing the T x T matrix. CPU reference:
 * ops/cpu/attention.c (same qkv layout, same scale 1 / sqrt(hs)).
 *
 * Tiles are 64 queries x 64 keys; a block of 4 warps owns one 64-row tile of
 * one (b, h), each warp 16 of its rows, and walks the tiles of the other side
 * that the causal mask leaves, staging them in shared memory (rows padded by
 * 8 bf16 so the fragment loads are free of bank conflicts).
 *
 *   forward   block = (query tile, b*h). For each key tile: S = q k^T, the
 *             online softmax (running max m and sum l per row, in base 2),
 *             O = O * 2^(m_old - m_new) + P v. At the end out = O / l, and
 *             lse = (m + log2 l) ln 2 per row.
 *   backward  two kernels, no atomics:
 *             1. dQ: block = (query tile, b*h). A first pass over the key
 *                tiles at or before it sums D = rowsum(P * dP), dP = dO V^T
 *                (this is dout . out, but exact: taken from the bf16-rounded
 *                out it costs 3% of dq's accuracy); a second recomputes P and
 *                dP and adds dQ += dS K * scale, dS = P (dP - D). D goes to
 *                the scratch for the next kernel.
 *             2. dK, dV: block = (key tile, b*h); for each query tile at or
 *                after it, P^T = exp(K Q^T * scale - lse), dV += P^T dO,
 *                dP^T = V dO^T, dS^T = P^T (dP^T - D), dK += dS^T Q * scale.
 *             Each element of dqkv is summed by one thread in a fixed order,
 *             so two runs give the same bits.
 *
 * Precision. P and dS are fp32 in the registers; as the A operand of the next
 * product each is split into a bf16 head and a bf16 tail (x = hi + lo, about
 * 16 significant bits), two products instead of one. With P or dS rounded to
 * bf16 once, single elements of out and dqkv err by up to 3% of the tensor's
 * scale (random inputs, T = 256); with the split, by the final bf16 rounding
 * (0.4%). The other operands (q, k, v, dout) are bf16 inputs, exact.
 *
 * Fragment layouts of mma.m16n8k16 (PTX ISA), g = lane / 4, q = lane % 4:
 *   A (16x16, row-major)  a0 = (g, 2q..2q+1)  a1 = (g+8, 2q..)  a2 = (g, 2q+8..)  a3 = (g+8, 2q+8..)
 *   B (16x8, "col")       b0 = (k 2q..2q+1, n g)  b1 = (k 2q+8.., n g)
 *   C (16x8, fp32)        c0,c1 = (g, 2q..2q+1)  c2,c3 = (g+8, 2q..2q+1)
 * Two bf16 share a 32-bit register, the lower column in the lower half. A B
 * fragment reads two consecutive k of one n, so a B operand is staged in
 * shared memory with k contiguous: K^T for S = Q K^T is K itself (row-major),
 * while V for P V is stored transposed (V^T, d-major). The C fragments of two
 * neighbouring n-tiles of S are exactly the A fragment of P for the next
 * product, so P never leaves the registers.
 */
#include <math.h>

#include "common.cuh"

#define BT 64           /* rows of a tile (queries or keys) */
#define NWARPS 4        /* 16 rows each */
#define PAD 8           /* bf16 of padding per shared row */
#define LOG2E 1.4426950408889634f
#define LN2 0.6931471805599453f

/* ---- tensor-core helpers ---- */

__device__ __forceinline__ void mma16816(float c[4], const uint32_t a[4], uint32_t b0,
                                         uint32_t b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ uint32_t pack2(float lo, float hi) {
    __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<uint32_t *>(&h);
}

/* Two consecutive bf16 of shared memory as one register. */
__device__ __forceinline__ uint32_t ld2(const bf16 *p) {
    return *reinterpret_cast<const uint32_t *>(p);
}

/* The A fragment of rows [r0, r0+16), columns [k0, k0+16) of a row-major
 * shared tile with row stride ld. */
__device__ __forceinline__ void load_a(uint32_t a[4], const bf16 *s, int ld, int r0, int k0,
                                       int lane) {
    int g = lane >> 2, q = lane & 3;
    const bf16 *p = s + (size_t)(r0 + g) * ld + k0 + 2 * q;
    a[0] = ld2(p);
    a[1] = ld2(p + 8 * ld);
    a[2] = ld2(p + 8);
    a[3] = ld2(p + 8 * ld + 8);
}

/* The B fragment for columns n0..n0+8 and k in [k0, k0+16) of a shared tile
 * stored n-major (element (k, n) at s[n * ld + k]). */
__device__ __forceinline__ void load_b(uint32_t &b0, uint32_t &b1, const bf16 *s, int ld, int n0,
                                       int k0, int lane) {
    int g = lane >> 2, q = lane & 3;
    const bf16 *p = s + (size_t)(n0 + g) * ld + k0 + 2 * q;
    b0 = ld2(p);
    b1 = ld2(p + 8);
}

/* (a, b) as bf16 heads (hi) and the bf16 rounding of what they miss (lo). */
__device__ __forceinline__ void split2(float a, float b, uint32_t &hi, uint32_t &lo) {
    __nv_bfloat162 h = __floats2bfloat162_rn(a, b);
    float2 f = __bfloat1622float2(h);
    hi = *reinterpret_cast<uint32_t *>(&h);
    lo = pack2(a - f.x, b - f.y);
}

/* acc (16 x 8*DT) += X (16 x 64) @ Y (64 x 8*DT): X in C-fragment layout
 * x[8][4] (n-tiles of 8 columns), split hi + lo; Y staged n-major in shared
 * memory (element (k, n) at s[n * ld + k]). */
template <int DT>
__device__ __forceinline__ void mma_x_s(float acc[DT][4], const float x[8][4], const bf16 *s,
                                        int ld, int lane) {
#pragma unroll
    for (int kk = 0; kk < BT / 16; kk++) {
        uint32_t hi[4], lo[4];
        split2(x[2 * kk][0], x[2 * kk][1], hi[0], lo[0]);
        split2(x[2 * kk][2], x[2 * kk][3], hi[1], lo[1]);
        split2(x[2 * kk + 1][0], x[2 * kk + 1][1], hi[2], lo[2]);
        split2(x[2 * kk + 1][2], x[2 * kk + 1][3], hi[3], lo[3]);
#pragma unroll
        for (int dt = 0; dt < DT; dt++) {
            uint32_t b0, b1;
            load_b(b0, b1, s, ld, dt * 8, kk * 16, lane);
            mma16816(acc[dt], hi, b0, b1);
            mma16816(acc[dt], lo, b0, b1);
        }
    }
}

/* A warp's A fragments of 16 rows of a row-major shared tile, all KS k-steps:
 * held in registers when HOLD (the small heads), else read at each use. */
template <int KS, bool HOLD>
struct arows {
    uint32_t r[HOLD ? KS : 1][4];
    const bf16 *s;
    int ld, r0, lane;
    __device__ __forceinline__ void init(const bf16 *s_, int ld_, int r0_, int lane_) {
        s = s_;
        ld = ld_;
        r0 = r0_;
        lane = lane_;
        if constexpr (HOLD) {
#pragma unroll
            for (int ks = 0; ks < KS; ks++) load_a(r[ks], s, ld, r0, ks * 16, lane);
        }
    }
    __device__ __forceinline__ void get(uint32_t a[4], int ks) const {
        if constexpr (HOLD) {
            a[0] = r[ks][0];
            a[1] = r[ks][1];
            a[2] = r[ks][2];
            a[3] = r[ks][3];
        } else {
            load_a(a, s, ld, r0, ks * 16, lane);
        }
    }
};

/* ---- staging tiles ---- */

/* rows [t0, t0+BT) of a head's (T, D) slice (row stride `stride` elements in
 * global memory) into shared s (BT, D+PAD); rows past T become zeros. */
template <int D>
__device__ __forceinline__ void stage_rows(bf16 *s, const bf16 *g, size_t stride, int t0, int T) {
    constexpr int CH = D / 8; /* 16-byte chunks per row */
    for (int i = threadIdx.x; i < BT * CH; i += NWARPS * 32) {
        int r = i / CH, c = (i % CH) * 8;
        int4 v = make_int4(0, 0, 0, 0);
        if (t0 + r < T) v = *reinterpret_cast<const int4 *>(g + (size_t)(t0 + r) * stride + c);
        *reinterpret_cast<int4 *>(s + r * (D + PAD) + c) = v;
    }
}

/* The same rows transposed: s (D, BT+PAD), s[d][r] = row r's element d. */
template <int D>
__device__ __forceinline__ void stage_cols(bf16 *s, const bf16 *g, size_t stride, int t0, int T) {
    constexpr int CH = D / 8;
    for (int i = threadIdx.x; i < BT * CH; i += NWARPS * 32) {
        int r = i % BT, c = (i / BT) * 8; /* neighbouring threads: neighbouring rows */
        int4 v = make_int4(0, 0, 0, 0);
        if (t0 + r < T) v = *reinterpret_cast<const int4 *>(g + (size_t)(t0 + r) * stride + c);
        const bf16 *e = reinterpret_cast<const bf16 *>(&v);
#pragma unroll
        for (int k = 0; k < 8; k++) s[(c + k) * (BT + PAD) + r] = e[k];
    }
}

/* ---- forward ---- */

template <int D>
constexpr size_t fwd_smem() {
    return (size_t)(2 * BT * (D + PAD) + D * (BT + PAD)) * sizeof(bf16);
}

/* out (B,T,C), lse (B,NH,T) from qkv (B,T,3C); grid (ceil(T/BT), B*NH) */
template <int D>
__global__ void __launch_bounds__(NWARPS * 32)
    attn_fwd_kernel(bf16 *out, float *lse, const bf16 *qkv, int T, int C, int NH, float sl2) {
    extern __shared__ __align__(16) unsigned char smem_raw[];
    constexpr int LQ = D + PAD, LV = BT + PAD, KS = D / 16, DT = D / 8;
    bf16 *sQ = reinterpret_cast<bf16 *>(smem_raw); /* (BT, LQ) */
    bf16 *sK = sQ + BT * LQ;                        /* (BT, LQ) */
    bf16 *sVt = sK + BT * LQ;                       /* (D, LV) */
    int nqt = gridDim.x, qt = nqt - 1 - blockIdx.x; /* the longest rows first */
    int bh = blockIdx.y, b = bh / NH, h = bh % NH;
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, q4 = lane & 3;
    size_t stride = 3 * (size_t)C;
    const bf16 *base = qkv + (size_t)b * T * stride + (size_t)h * D;

    stage_rows<D>(sQ, base, stride, qt * BT, T);
    __syncthreads();
    arows<KS, true> qa;
    qa.init(sQ, LQ, warp * 16, lane);

    int row0 = qt * BT + warp * 16 + g, row1 = row0 + 8; /* this thread's two rows */
    float o[DT][4];
#pragma unroll
    for (int dt = 0; dt < DT; dt++) o[dt][0] = o[dt][1] = o[dt][2] = o[dt][3] = 0.0f;
    float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.0f, l1 = 0.0f;

    for (int kt = 0; kt <= qt; kt++) {
        __syncthreads(); /* everyone is done with the previous K, V */
        stage_rows<D>(sK, base + C, stride, kt * BT, T);
        stage_cols<D>(sVt, base + 2 * (size_t)C, stride, kt * BT, T);
        __syncthreads();
        float s[8][4];
#pragma unroll
        for (int nt = 0; nt < 8; nt++) {
            s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.0f;
#pragma unroll
            for (int ks = 0; ks < KS; ks++) {
                uint32_t a[4], b0, b1;
                qa.get(a, ks);
                load_b(b0, b1, sK, LQ, nt * 8, ks * 16, lane);
                mma16816(s[nt], a, b0, b1);
            }
        }
        /* scale to base 2, mask, and the rows' maxima over the tile */
        float mx0 = -INFINITY, mx1 = -INFINITY;
#pragma unroll
        for (int nt = 0; nt < 8; nt++)
#pragma unroll
            for (int e = 0; e < 2; e++) {
                int key = kt * BT + nt * 8 + 2 * q4 + e;
                float v0 = s[nt][e] * sl2, v1 = s[nt][2 + e] * sl2;
                if (key > row0 || key >= T) v0 = -INFINITY;
                if (key > row1 || key >= T) v1 = -INFINITY;
                s[nt][e] = v0;
                s[nt][2 + e] = v1;
                mx0 = fmaxf(mx0, v0);
                mx1 = fmaxf(mx1, v1);
            }
        mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 1));
        mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 2));
        mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 1));
        mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 2));
        /* Key 0 of tile kt <= qt is at or before every row of the query tile,
         * so each row has a finite maximum from the first tile on. */
        float mn0 = fmaxf(m0, mx0), mn1 = fmaxf(m1, mx1);
        float al0 = exp2f(m0 - mn0), al1 = exp2f(m1 - mn1); /* 0 on the first tile */
        m0 = mn0;
        m1 = mn1;
        float rs0 = 0.0f, rs1 = 0.0f;
#pragma unroll
        for (int nt = 0; nt < 8; nt++)
#pragma unroll
            for (int e = 0; e < 2; e++) {
                s[nt][e] = exp2f(s[nt][e] - mn0);
                s[nt][2 + e] = exp2f(s[nt][2 + e] - mn1);
                rs0 += s[nt][e];
                rs1 += s[nt][2 + e];
            }
        l0 = l0 * al0 + rs0; /* this thread's share of the row sums: reduced at the end */
        l1 = l1 * al1 + rs1;
#pragma unroll
        for (int dt = 0; dt < DT; dt++) {
            o[dt][0] *= al0;
            o[dt][1] *= al0;
            o[dt][2] *= al1;
            o[dt][3] *= al1;
        }
        mma_x_s<DT>(o, s, sVt, LV, lane); /* O += P V */
    }
    l0 += __shfl_xor_sync(0xffffffffu, l0, 1);
    l0 += __shfl_xor_sync(0xffffffffu, l0, 2);
    l1 += __shfl_xor_sync(0xffffffffu, l1, 1);
    l1 += __shfl_xor_sync(0xffffffffu, l1, 2);
    float inv0 = 1.0f / l0, inv1 = 1.0f / l1;
    bf16 *ob = out + (size_t)b * T * C + (size_t)h * D;
#pragma unroll
    for (int dt = 0; dt < DT; dt++) {
        int d = dt * 8 + 2 * q4;
        if (row0 < T)
            *reinterpret_cast<__nv_bfloat162 *>(ob + (size_t)row0 * C + d) =
                __floats2bfloat162_rn(o[dt][0] * inv0, o[dt][1] * inv0);
        if (row1 < T)
            *reinterpret_cast<__nv_bfloat162 *>(ob + (size_t)row1 * C + d) =
                __floats2bfloat162_rn(o[dt][2] * inv1, o[dt][3] * inv1);
    }
    if (q4 == 0) {
        float *lb = lse + (size_t)bh * T;
        if (row0 < T) lb[row0] = (m0 + log2f(l0)) * LN2;
        if (row1 < T) lb[row1] = (m1 + log2f(l1)) * LN2;
    }
}

/* ---- backward: dQ (and D) ---- */

template <int D>
constexpr size_t dq_smem() {
    return (size_t)(4 * BT * (D + PAD) + D * (BT + PAD)) * sizeof(bf16);
}

/* dqkv's q part += from dout; dvec (B,NH,T) = rowsum(P dP); grid (ceil(T/BT),
 * B*NH), block = query tile */
template <int D>
__global__ void __launch_bounds__(NWARPS * 32)
    attn_dq_kernel(bf16 *dqkv, float *dvec, const bf16 *dout, const bf16 *qkv, const float *lse,
                   int T, int C, int NH, float scale, float sl2) {
    extern __shared__ __align__(16) unsigned char smem_raw[];
    constexpr int LR = D + PAD, LT = BT + PAD, KS = D / 16, DT = D / 8;
    bf16 *sQ = reinterpret_cast<bf16 *>(smem_raw); /* (BT, LR) each */
    bf16 *sO = sQ + BT * LR;
    bf16 *sK = sO + BT * LR;
    bf16 *sV = sK + BT * LR;
    bf16 *sKt = sV + BT * LR; /* (D, LT) */
    int nqt = gridDim.x, qt = nqt - 1 - blockIdx.x;
    int bh = blockIdx.y, b = bh / NH, h = bh % NH;
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, q4 = lane & 3;
    size_t stride = 3 * (size_t)C;
    const bf16 *base = qkv + (size_t)b * T * stride + (size_t)h * D;
    const bf16 *obase = dout + (size_t)b * T * C + (size_t)h * D;

    stage_rows<D>(sQ, base, stride, qt * BT, T);
    stage_rows<D>(sO, obase, C, qt * BT, T);
    __syncthreads();
    arows<KS, (D <= 64)> qa, oa;
    qa.init(sQ, LR, warp * 16, lane);
    oa.init(sO, LR, warp * 16, lane);
    int row0 = qt * BT + warp * 16 + g, row1 = row0 + 8;
    const float *lrow = lse + (size_t)bh * T;
    float L0 = row0 < T ? lrow[row0] * LOG2E : INFINITY, L1 = row1 < T ? lrow[row1] * LOG2E : INFINITY;

    /* s = Q K^T and dp = dO V^T for n-tile nt of the staged key tile */
#define SDP(nt, s, dp)                                                                   \
    do {                                                                                 \
        _Pragma("unroll") for (int ks = 0; ks < KS; ks++) {                              \
            uint32_t a[4], b0, b1;                                                       \
            qa.get(a, ks);                                                               \
            load_b(b0, b1, sK, LR, (nt) * 8, ks * 16, lane);                             \
            mma16816(s, a, b0, b1);                                                      \
            oa.get(a, ks);                                                               \
            load_b(b0, b1, sV, LR, (nt) * 8, ks * 16, lane);                             \
            mma16816(dp, a, b0, b1);                                                     \
        }                                                                                \
    } while (0)

    /* pass 1: D = rowsum(P dP), this thread's share, then the quad's */
    float D0 = 0.0f, D1 = 0.0f;
    for (int kt = 0; kt <= qt; kt++) {
        __syncthreads();
        stage_rows<D>(sK, base + C, stride, kt * BT, T);
        stage_rows<D>(sV, base + 2 * (size_t)C, stride, kt * BT, T);
        __syncthreads();
#pragma unroll
        for (int nt = 0; nt < 8; nt++) {
            float s[4] = {0.0f, 0.0f, 0.0f, 0.0f}, dp[4] = {0.0f, 0.0f, 0.0f, 0.0f};
            SDP(nt, s, dp);
#pragma unroll
            for (int e = 0; e < 2; e++) {
                int key = kt * BT + nt * 8 + 2 * q4 + e;
                if (key <= row0 && key < T) D0 += exp2f(s[e] * sl2 - L0) * dp[e];
                if (key <= row1 && key < T) D1 += exp2f(s[2 + e] * sl2 - L1) * dp[2 + e];
            }
        }
    }
    D0 += __shfl_xor_sync(0xffffffffu, D0, 1);
    D0 += __shfl_xor_sync(0xffffffffu, D0, 2);
    D1 += __shfl_xor_sync(0xffffffffu, D1, 1);
    D1 += __shfl_xor_sync(0xffffffffu, D1, 2);
    if (q4 == 0) {
        if (row0 < T) dvec[(size_t)bh * T + row0] = D0;
        if (row1 < T) dvec[(size_t)bh * T + row1] = D1;
    }

    /* pass 2: dQ += dS K */
    float dq[DT][4];
#pragma unroll
    for (int dt = 0; dt < DT; dt++) dq[dt][0] = dq[dt][1] = dq[dt][2] = dq[dt][3] = 0.0f;
    for (int kt = 0; kt <= qt; kt++) {
        __syncthreads();
        stage_rows<D>(sK, base + C, stride, kt * BT, T);
        stage_rows<D>(sV, base + 2 * (size_t)C, stride, kt * BT, T);
        stage_cols<D>(sKt, base + C, stride, kt * BT, T);
        __syncthreads();
        float ds[8][4];
#pragma unroll
        for (int nt = 0; nt < 8; nt++) {
            float s[4] = {0.0f, 0.0f, 0.0f, 0.0f}, dp[4] = {0.0f, 0.0f, 0.0f, 0.0f};
            SDP(nt, s, dp);
#pragma unroll
            for (int e = 0; e < 2; e++) {
                int key = kt * BT + nt * 8 + 2 * q4 + e;
                float p0 = key > row0 || key >= T ? 0.0f : exp2f(s[e] * sl2 - L0);
                float p1 = key > row1 || key >= T ? 0.0f : exp2f(s[2 + e] * sl2 - L1);
                ds[nt][e] = p0 * (dp[e] - D0);
                ds[nt][2 + e] = p1 * (dp[2 + e] - D1);
            }
        }
        mma_x_s<DT>(dq, ds, sKt, LT, lane);
    }
#undef SDP
    bf16 *gb = dqkv + (size_t)b * T * stride + (size_t)h * D;
#pragma unroll
    for (int dt = 0; dt < DT; dt++) {
        int d = dt * 8 + 2 * q4;
#pragma unroll
        for (int r = 0; r < 2; r++) {
            int row = r ? row1 : row0;
            if (row >= T) continue;
            __nv_bfloat162 *pq = reinterpret_cast<__nv_bfloat162 *>(gb + (size_t)row * stride + d);
            float2 oq = __bfloat1622float2(*pq);
            *pq = __floats2bfloat162_rn(oq.x + dq[dt][2 * r] * scale,
                                        oq.y + dq[dt][2 * r + 1] * scale);
        }
    }
}

/* ---- backward: dK, dV ---- */

template <int D>
constexpr size_t dkv_smem() {
    return (size_t)(4 * BT * (D + PAD) + 2 * D * (BT + PAD)) * sizeof(bf16) +
           2 * BT * sizeof(float);
}

/* dqkv's k and v parts += from dout, given dvec from attn_dq_kernel; grid
 * (ceil(T/BT), B*NH), block = key tile */
template <int D>
__global__ void __launch_bounds__(NWARPS * 32)
    attn_dkv_kernel(bf16 *dqkv, const bf16 *dout, const bf16 *qkv, const float *lse,
                    const float *dvec, int T, int C, int NH, float scale, float sl2) {
    extern __shared__ __align__(16) unsigned char smem_raw[];
    constexpr int LR = D + PAD, LT = BT + PAD, KS = D / 16, DT = D / 8;
    bf16 *sK = reinterpret_cast<bf16 *>(smem_raw); /* (BT, LR) each */
    bf16 *sV = sK + BT * LR;
    bf16 *sQ = sV + BT * LR;
    bf16 *sO = sQ + BT * LR; /* dout rows */
    bf16 *sQt = sO + BT * LR; /* (D, LT) each */
    bf16 *sOt = sQt + D * LT;
    float *sL = reinterpret_cast<float *>(sOt + D * LT); /* lse * log2 e, +inf past T */
    float *sD = sL + BT;                                   /* D */
    int nqt = gridDim.x, kt = blockIdx.x; /* the first key tiles have the most work */
    int bh = blockIdx.y, b = bh / NH, h = bh % NH;
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, q4 = lane & 3;
    size_t stride = 3 * (size_t)C;
    const bf16 *base = qkv + (size_t)b * T * stride + (size_t)h * D;
    const bf16 *obase = dout + (size_t)b * T * C + (size_t)h * D;
    const float *lrow = lse + (size_t)bh * T, *drow = dvec + (size_t)bh * T;

    stage_rows<D>(sK, base + C, stride, kt * BT, T);
    stage_rows<D>(sV, base + 2 * (size_t)C, stride, kt * BT, T);
    __syncthreads();
    arows<KS, (D <= 64)> ka, va;
    ka.init(sK, LR, warp * 16, lane);
    va.init(sV, LR, warp * 16, lane);
    int key0 = kt * BT + warp * 16 + g, key1 = key0 + 8;
    float dk[DT][4], dv[DT][4];
#pragma unroll
    for (int dt = 0; dt < DT; dt++)
#pragma unroll
        for (int e = 0; e < 4; e++) dk[dt][e] = dv[dt][e] = 0.0f;

    for (int qt = kt; qt < nqt; qt++) {
        __syncthreads();
        stage_rows<D>(sQ, base, stride, qt * BT, T);
        stage_rows<D>(sO, obase, C, qt * BT, T);
        stage_cols<D>(sQt, base, stride, qt * BT, T);
        stage_cols<D>(sOt, obase, C, qt * BT, T);
        for (int i = threadIdx.x; i < BT; i += NWARPS * 32) {
            int t = qt * BT + i;
            sL[i] = t < T ? lrow[t] * LOG2E : INFINITY;
            sD[i] = t < T ? drow[t] : 0.0f;
        }
        __syncthreads();
        /* S^T (16 keys x 64 queries) = K Q^T */
        float p[8][4];
#pragma unroll
        for (int nt = 0; nt < 8; nt++) {
            p[nt][0] = p[nt][1] = p[nt][2] = p[nt][3] = 0.0f;
#pragma unroll
            for (int ks = 0; ks < KS; ks++) {
                uint32_t a[4], b0, b1;
                ka.get(a, ks);
                load_b(b0, b1, sQ, LR, nt * 8, ks * 16, lane);
                mma16816(p[nt], a, b0, b1);
            }
        }
        /* P^T = 2^(S^T * scale * log2 e - lse * log2 e), 0 where query < key */
#pragma unroll
        for (int nt = 0; nt < 8; nt++)
#pragma unroll
            for (int e = 0; e < 2; e++) {
                int qi = nt * 8 + 2 * q4 + e, qrow = qt * BT + qi;
                float L = sL[qi];
                p[nt][e] = qrow < key0 ? 0.0f : exp2f(p[nt][e] * sl2 - L);
                p[nt][2 + e] = qrow < key1 ? 0.0f : exp2f(p[nt][2 + e] * sl2 - L);
            }
        mma_x_s<DT>(dv, p, sOt, LT, lane); /* dV += P^T dO */
        /* dP^T = V dO^T, then dS^T = P^T (dP^T - D) in place */
#pragma unroll
        for (int nt = 0; nt < 8; nt++) {
            float dp[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
            for (int ks = 0; ks < KS; ks++) {
                uint32_t a[4], b0, b1;
                va.get(a, ks);
                load_b(b0, b1, sO, LR, nt * 8, ks * 16, lane);
                mma16816(dp, a, b0, b1);
            }
#pragma unroll
            for (int e = 0; e < 2; e++) {
                float Dq = sD[nt * 8 + 2 * q4 + e];
                p[nt][e] *= dp[e] - Dq;
                p[nt][2 + e] *= dp[2 + e] - Dq;
            }
        }
        mma_x_s<DT>(dk, p, sQt, LT, lane); /* dK += dS^T Q (the scale at the end) */
    }
    /* dqkv += : rows key0, key1 of the k part (column C + h*D) and the v part */
    bf16 *gb = dqkv + (size_t)b * T * stride + (size_t)h * D;
#pragma unroll
    for (int dt = 0; dt < DT; dt++) {
        int d = dt * 8 + 2 * q4;
#pragma unroll
        for (int r = 0; r < 2; r++) {
            int key = r ? key1 : key0;
            if (key >= T) continue;
            __nv_bfloat162 *pk =
                reinterpret_cast<__nv_bfloat162 *>(gb + (size_t)key * stride + C + d);
            __nv_bfloat162 *pv =
                reinterpret_cast<__nv_bfloat162 *>(gb + (size_t)key * stride + 2 * (size_t)C + d);
            float2 ok = __bfloat1622float2(*pk), ov = __bfloat1622float2(*pv);
            *pk = __floats2bfloat162_rn(ok.x + dk[dt][2 * r] * scale,
                                        ok.y + dk[dt][2 * r + 1] * scale);
            *pv = __floats2bfloat162_rn(ov.x + dv[dt][2 * r], ov.y + dv[dt][2 * r + 1]);
        }
    }
}

/* ---- launchers ---- */

static int check(const char *fn, int B, int T, int C, int NH, int *D) {
    if (B < 1 || T < 1 || C < 1 || NH < 1 || C % NH)
        return SYMCU_INVAL("%s: sizes B=%d T=%d C=%d NH=%d: all at least 1 and C a multiple of "
                           "NH",
                           fn, B, T, C, NH);
    *D = C / NH;
    if (*D != 32 && *D != 64 && *D != 128)
        return SYMCU_INVAL("%s: head size C/NH = %d; the kernels take 32, 64 or 128", fn, *D);
    if (B * NH > 65535) return SYMCU_INVAL("%s: B*NH = %d exceeds a grid's y size", fn, B * NH);
    return SYM_OK;
}

template <int D>
static int fwd(bf16 *out, float *lse, const bf16 *qkv, int B, int T, int C, int NH,
               cudaStream_t stream) {
    size_t sm = fwd_smem<D>();
    SYMCU_SMEM_OPT_IN(attn_fwd_kernel<D>, sm);
    dim3 grid((T + BT - 1) / BT, B * NH);
    float sl2 = (float)(1.0 / sqrt((double)D)) * LOG2E;
    attn_fwd_kernel<D><<<grid, NWARPS * 32, sm, stream>>>(out, lse, qkv, T, C, NH, sl2);
    SYMCU_LAUNCHED("attn_fwd_kernel");
    return SYM_OK;
}

int symcu_attention_forward(symcu_bf16 *out, float *lse, const symcu_bf16 *qkv, int B, int T,
                            int C, int NH, cudaStream_t stream) {
    int D = 0, rc = check("attention forward", B, T, C, NH, &D);
    if (rc) return rc;
    switch (D) {
    case 32: return fwd<32>(out, lse, qkv, B, T, C, NH, stream);
    case 64: return fwd<64>(out, lse, qkv, B, T, C, NH, stream);
    default: return fwd<128>(out, lse, qkv, B, T, C, NH, stream);
    }
}

template <int D>
static int bwd(bf16 *dqkv, float *dvec, const bf16 *dout, const bf16 *qkv, const float *lse,
               int B, int T, int C, int NH, cudaStream_t stream) {
    float scale = (float)(1.0 / sqrt((double)D)), sl2 = scale * LOG2E;
    dim3 grid((T + BT - 1) / BT, B * NH);
    size_t s1 = dq_smem<D>(), s2 = dkv_smem<D>();
    SYMCU_SMEM_OPT_IN(attn_dq_kernel<D>, s1);
    SYMCU_SMEM_OPT_IN(attn_dkv_kernel<D>, s2);
    attn_dq_kernel<D><<<grid, NWARPS * 32, s1, stream>>>(dqkv, dvec, dout, qkv, lse, T, C, NH,
                                                         scale, sl2);
    SYMCU_LAUNCHED("attn_dq_kernel");
    attn_dkv_kernel<D><<<grid, NWARPS * 32, s2, stream>>>(dqkv, dout, qkv, lse, dvec, T, C, NH,
                                                          scale, sl2);
    SYMCU_LAUNCHED("attn_dkv_kernel");
    return SYM_OK;
}

int symcu_attention_backward(symcu_bf16 *dqkv, float *scratch, const symcu_bf16 *dout,
                             const symcu_bf16 *qkv, const float *lse, int B, int T, int C, int NH,
                             cudaStream_t stream) {
    int D = 0, rc = check("attention backward", B, T, C, NH, &D);
    if (rc) return rc;
    switch (D) {
    case 32: return bwd<32>(dqkv, scratch, dout, qkv, lse, B, T, C, NH, stream);
    case 64: return bwd<64>(dqkv, scratch, dout, qkv, lse, B, T, C, NH, stream);
    default: return bwd<128>(dqkv, scratch, dout, qkv, lse, B, T, C, NH, stream);
    }
}
