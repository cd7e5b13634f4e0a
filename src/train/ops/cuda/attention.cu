/*
 * attention.cu — causal multi-head self-attention, forward and backward, as
 * flash-attention-2-style kernels on the tensor cores (mma.sync m16n8k16,
 * bf16 or fp16 in (the template's E), fp32 accumulate), never writing the
 * T x T matrix; and for fp32, plain kernels of one warp per row (at the end).
 * CPU reference: ops/cpu/attention.c (same qkv layout, same scale 1 / sqrt(hs)).
 *
 * A block of 4 warps owns one 64-row tile of one (b, h), each warp 16 of its
 * rows, and walks the 64-row tiles of the other side that the causal mask
 * leaves. Those tiles are copied into shared memory with cp.async, two
 * buffers deep: tile i+1 arrives while tile i is multiplied. Every tile is
 * stored row-major as it lies in memory (rows padded by 8 bf16, so ldmatrix
 * is free of bank conflicts); ldmatrix gives the fragments of a tile and
 * ldmatrix.trans those of its transpose, so nothing is transposed by hand.
 *
 *   forward   block = (query tile, b*h). For each key tile: S = q k^T, the
 *             online softmax (running max m and sum l per row, in base 2),
 *             O = O * 2^(m_old - m_new) + P v. At the end out = O / l, and
 *             lse = (m + log2 l) ln 2 per row.
 *   backward  three kernels, no atomics:
 *             0. D = rowsum(dout * out) per row (= rowsum(P * dP)).
 *             1. dQ: block = (query tile, b*h); for each key tile at or
 *                before it, P = exp(Q K^T * scale - lse), dP = dO V^T,
 *                dS = P (dP - D), dQ += dS K * scale.
 *             2. dK, dV: block = (key tile, b*h); for each query tile at or
 *                after it, P^T = exp(K Q^T * scale - lse), dV += P^T dO,
 *                dP^T = V dO^T, dS^T = P^T (dP^T - D), dK += dS^T Q * scale.
 *             Each element of dqkv is summed by one thread in a fixed order,
 *             so two runs give the same bits.
 *
 * Precision. P and dS are fp32 in the registers; as the A operand of the next
 * product each is split into an E head and an E tail (x = hi + lo, about
 * 16 significant bits), two products instead of one (SYMCU_ATTN_SPLIT=0 at
 * build time rounds them once, as other flash kernels do: bench/gpt measures
 * what the split costs). The other operands (q, k, v, dout) are bf16 inputs,
 * exact; D is taken from the bf16 out.
 *
 * Fragment layouts of mma.m16n8k16 (PTX ISA), g = lane / 4, q = lane % 4:
 *   A (16x16, row-major)  a0 = (g, 2q..2q+1)  a1 = (g+8, 2q..)  a2 = (g, 2q+8..)  a3 = (g+8, 2q+8..)
 *   B (16x8, "col")       b0 = (k 2q..2q+1, n g)  b1 = (k 2q+8.., n g)
 *   C (16x8, fp32)        c0,c1 = (g, 2q..2q+1)  c2,c3 = (g+8, 2q..2q+1)
 * Two bf16 share a 32-bit register, the lower column in the lower half. The C
 * fragments of two neighbouring n-tiles of S are exactly the A fragment of P
 * for the next product, so P never leaves the registers.
 */
#include <math.h>

#include <type_traits>

#include "common.cuh"

#ifndef SYMCU_ATTN_SPLIT
#define SYMCU_ATTN_SPLIT 1
#endif

#define BT 64           /* rows of a tile (queries or keys) */
#define NWARPS 4        /* 16 rows each */
#define PAD 8           /* bf16 of padding per shared row */
#define LOG2E 1.4426950408889634f
#define LN2 0.6931471805599453f

/* Build-time tuning, measured by bench/gpt/kernels_gpu.sh on an H200
 * (bench/gpt/results/h200_attention_variants.txt): the backward takes
 * SYMCU_ATTN_CHUNK rows of the other side at once (16 or 32: more independent
 * products in flight), and each kernel's registers must allow
 * SYMCU_ATTN_MINB_* blocks per SM (0: the compiler's choice). */
#ifndef SYMCU_ATTN_CHUNK
#define SYMCU_ATTN_CHUNK 32
#endif
#ifndef SYMCU_ATTN_MINB_FWD
#define SYMCU_ATTN_MINB_FWD 4
#endif
#ifndef SYMCU_ATTN_MINB_DQ
#define SYMCU_ATTN_MINB_DQ 3
#endif
#ifndef SYMCU_ATTN_MINB_DKV
#define SYMCU_ATTN_MINB_DKV 3
#endif
#define ATTN_BOUNDS(minb) __launch_bounds__(NWARPS * 32, minb)
#if SYMCU_ATTN_MINB_FWD
#define FWD_BOUNDS ATTN_BOUNDS(SYMCU_ATTN_MINB_FWD)
#else
#define FWD_BOUNDS __launch_bounds__(NWARPS * 32)
#endif
#if SYMCU_ATTN_MINB_DQ
#define DQ_BOUNDS ATTN_BOUNDS(SYMCU_ATTN_MINB_DQ)
#else
#define DQ_BOUNDS __launch_bounds__(NWARPS * 32)
#endif
#if SYMCU_ATTN_MINB_DKV
#define DKV_BOUNDS ATTN_BOUNDS(SYMCU_ATTN_MINB_DKV)
#else
#define DKV_BOUNDS __launch_bounds__(NWARPS * 32)
#endif

constexpr bool kSplit = SYMCU_ATTN_SPLIT != 0;
constexpr int KC = SYMCU_ATTN_CHUNK / 16; /* 16-row steps the backward takes at once */

/* ---- tensor cores and shared memory ---- */

/* c += a b on E operands (bf16 or fp16), fp32 accumulators. */
template <typename E>
__device__ __forceinline__ void mma16816(float c[4], const uint32_t a[4], uint32_t b0,
                                         uint32_t b1) {
    if constexpr (std::is_same<E, bf16>::value)
        asm volatile(
            "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
            "{%8,%9}, {%0,%1,%2,%3};\n"
            : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    else
        asm volatile(
            "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
            "{%8,%9}, {%0,%1,%2,%3};\n"
            : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ uint32_t smem_addr(const void *p) {
    return (uint32_t)__cvta_generic_to_shared(p);
}

/* Four 8x8 matrices of 16-bit elements; lane i gives the address of row i % 8
 * of matrix i / 8, and register j receives its part of matrix j (transposed:
 * .trans). */
__device__ __forceinline__ void ldsm4(uint32_t r[4], const void *p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_addr(p))
                 : "memory");
}
__device__ __forceinline__ void ldsm4t(uint32_t r[4], const void *p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_addr(p))
                 : "memory");
}

/* The A fragment of rows [r0, r0+16), columns [k0, k0+16) of a row-major
 * shared tile with row stride ld. */
template <typename E>
__device__ __forceinline__ void load_a(uint32_t a[4], const E *s, int ld, int r0, int k0,
                                       int lane) {
    ldsm4(a, s + (r0 + (lane & 15)) * ld + k0 + (lane >> 4) * 8);
}

/* B fragments {b0, b1} of the n-tiles n0 and n0 + 8, k in [k0, k0+16), of a
 * tile stored n-major (element (k, n) at s[n * ld + k]): b[0], b[1] for n0,
 * b[2], b[3] for n0 + 8. */
template <typename E>
__device__ __forceinline__ void load_b(uint32_t b[4], const E *s, int ld, int n0, int k0,
                                       int lane) {
    ldsm4(b, s + (n0 + (lane & 7) + ((lane >> 4) << 3)) * ld + k0 + ((lane >> 3) & 1) * 8);
}

/* The same of a tile stored k-major (element (k, n) at s[k * ld + n]). */
template <typename E>
__device__ __forceinline__ void load_bt(uint32_t b[4], const E *s, int ld, int k0, int n0,
                                        int lane) {
    ldsm4t(b, s + (k0 + (lane & 7) + ((lane >> 3) & 1) * 8) * ld + n0 + (lane >> 4) * 8);
}

/* (lo, hi) rounded to E, in one register; and back. */
template <typename E>
__device__ __forceinline__ uint32_t pack2(float lo, float hi) {
    if constexpr (std::is_same<E, bf16>::value) {
        __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
        return *reinterpret_cast<uint32_t *>(&h);
    } else {
        __half2 h = __floats2half2_rn(lo, hi);
        return *reinterpret_cast<uint32_t *>(&h);
    }
}
template <typename E>
__device__ __forceinline__ float2 unpack2(uint32_t r) {
    return load2(reinterpret_cast<const E *>(&r));
}

/* The A fragment (16 x 16) made of the C fragments x0, x1 of two neighbouring
 * n-tiles, as E heads (hi) and, when splitting, the E rounding of what
 * the heads miss (lo). */
template <typename E>
__device__ __forceinline__ void a_from_c(uint32_t hi[4], uint32_t lo[4], const float x0[4],
                                         const float x1[4]) {
    const float v[8] = {x0[0], x0[1], x0[2], x0[3], x1[0], x1[1], x1[2], x1[3]};
#pragma unroll
    for (int i = 0; i < 4; i++) {
        hi[i] = pack2<E>(v[2 * i], v[2 * i + 1]);
        if constexpr (kSplit) {
            float2 f = unpack2<E>(hi[i]);
            lo[i] = pack2<E>(v[2 * i] - f.x, v[2 * i + 1] - f.y);
        }
    }
}

/* acc (16 x D) += X (16 x 16) @ Y (16 rows k0.. of a row-major shared tile, all
 * D columns): X as a_from_c gives it. */
template <typename E, int D>
__device__ __forceinline__ void mma_rows(float acc[D / 8][4], const uint32_t hi[4],
                                         const uint32_t lo[4], const E *s, int ld, int k0,
                                         int lane) {
#pragma unroll
    for (int dp = 0; dp < D / 16; dp++) {
        uint32_t b[4];
        load_bt(b, s, ld, k0, dp * 16, lane);
        mma16816<E>(acc[2 * dp], hi, b[0], b[1]);
        mma16816<E>(acc[2 * dp + 1], hi, b[2], b[3]);
        if constexpr (kSplit) {
            mma16816<E>(acc[2 * dp], lo, b[0], b[1]);
            mma16816<E>(acc[2 * dp + 1], lo, b[2], b[3]);
        }
    }
}

/* A warp's A fragments of its 16 rows of a row-major shared tile, all KS
 * k-steps: held in registers when HOLD (the small heads), else read at each use. */
template <typename E, int KS, bool HOLD>
struct arows {
    uint32_t r[HOLD ? KS : 1][4];
    const E *s;
    int ld, r0, lane;
    __device__ __forceinline__ void init(const E *s_, int ld_, int r0_, int lane_) {
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
#pragma unroll
            for (int i = 0; i < 4; i++) a[i] = r[ks][i];
        } else {
            load_a(a, s, ld, r0, ks * 16, lane);
        }
    }
};

/* c[0..2) (16 x 16 of this warp's rows against n-tiles n0, n0 + 8) += A B,
 * A the warp's rows of one tile, B^T the rows [n0, n0+16) of another (both
 * row-major, the product over their D columns). */
template <typename E, int D, bool HOLD>
__device__ __forceinline__ void mma_nt(float c[2][4], const arows<E, D / 16, HOLD> &a,
                                       const E *s, int ld, int n0, int lane) {
#pragma unroll
    for (int ks = 0; ks < D / 16; ks++) {
        uint32_t af[4], b[4];
        a.get(af, ks);
        load_b(b, s, ld, n0, ks * 16, lane);
        mma16816<E>(c[0], af, b[0], b[1]);
        mma16816<E>(c[1], af, b[2], b[3]);
    }
}

/* ---- staging tiles ---- */

__device__ __forceinline__ void cp16(void *dst, const void *src, bool valid) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)),
                 "l"(src), "r"(valid ? 16 : 0)
                 : "memory");
}
__device__ __forceinline__ void cp_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

/* Start copying rows [t0, t0+BT) of a head's (T, D) slice (row stride
 * `stride` elements in global memory) into shared s (BT, D+PAD); rows past T
 * become zeros. */
template <typename E, int D>
__device__ __forceinline__ void stage(E *s, const E *g, size_t stride, int t0, int T) {
    constexpr int CH = D / 8; /* 16-byte chunks per row */
#pragma unroll
    for (int i = threadIdx.x; i < BT * CH; i += NWARPS * 32) {
        int r = i / CH, c = (i % CH) * 8;
        bool ok = t0 + r < T;
        cp16(s + r * (D + PAD) + c, g + (size_t)(ok ? t0 + r : 0) * stride + c, ok);
    }
}

template <int D>
__host__ __device__ constexpr int tile_elems() {
    return BT * (D + PAD);
}

/* ---- forward ---- */

template <int D>
constexpr size_t fwd_smem() {
    return (size_t)5 * tile_elems<D>() * sizeof(uint16_t); /* Q, K x 2, V x 2 */
}

/* out (B,T,C), lse (B,NH,T) from qkv (B,T,3C); grid (ceil(T/BT), B*NH) */
template <typename E, int D, bool DROP>
__global__ void FWD_BOUNDS
    attn_fwd_kernel(E *out, float *lse, const E *qkv, int T, int C, int NH, float sl2,
                    symcu_dropout_t dr) {
    extern __shared__ __align__(16) unsigned char smem_raw[];
    constexpr int LD = D + PAD, DT = D / 8, TE = tile_elems<D>();
    E *sQ = reinterpret_cast<E *>(smem_raw), *sK = sQ + TE, *sV = sK + 2 * TE;
    int nqt = gridDim.x, qt = nqt - 1 - blockIdx.x; /* the longest rows first */
    int bh = blockIdx.y, b = bh / NH, h = bh % NH;
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, q4 = lane & 3;
    size_t stride = 3 * (size_t)C;
    const E *base = qkv + (size_t)b * T * stride + (size_t)h * D;

    stage<E, D>(sQ, base, stride, qt * BT, T);
    stage<E, D>(sK, base + C, stride, 0, T);
    stage<E, D>(sV, base + 2 * (size_t)C, stride, 0, T);
    cp_commit();
    cp_wait<0>();
    __syncthreads();
    arows<E, D / 16, true> qa;
    qa.init(sQ, LD, warp * 16, lane);

    int row0 = qt * BT + warp * 16 + g, row1 = row0 + 8; /* this thread's two rows */
    uint64_t rk0 = 0, rk1 = 0; /* their dropout keys */
    if constexpr (DROP) {
        uint64_t hk = symcu_head_key(dr, b, h);
        rk0 = symcu_row_key(hk, (uint64_t)row0);
        rk1 = symcu_row_key(hk, (uint64_t)row1);
    }
    float o[DT][4];
#pragma unroll
    for (int dt = 0; dt < DT; dt++) o[dt][0] = o[dt][1] = o[dt][2] = o[dt][3] = 0.0f;
    float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.0f, l1 = 0.0f;

    for (int kt = 0; kt <= qt; kt++) {
        const E *cK = sK + (kt & 1) * TE, *cV = sV + (kt & 1) * TE;
        if (kt < qt) { /* the next tile into the other buffers */
            stage<E, D>(sK + ((kt + 1) & 1) * TE, base + C, stride, (kt + 1) * BT, T);
            stage<E, D>(sV + ((kt + 1) & 1) * TE, base + 2 * (size_t)C, stride, (kt + 1) * BT, T);
            cp_commit();
            cp_wait<1>();
        } else {
            cp_wait<0>();
        }
        __syncthreads();
        float s[8][4];
#pragma unroll
        for (int nt = 0; nt < 8; nt++) s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.0f;
#pragma unroll
        for (int np = 0; np < 4; np++) mma_nt<E, D, true>(&s[2 * np], qa, cK, LD, np * 16, lane);
        /* scale to base 2, mask (the diagonal tile holds every key past a row
         * and every key past T), and the rows' maxima over the tile */
        float mx0 = -INFINITY, mx1 = -INFINITY;
#pragma unroll
        for (int nt = 0; nt < 8; nt++)
#pragma unroll
            for (int e = 0; e < 2; e++) {
                int key = kt * BT + nt * 8 + 2 * q4 + e;
                float v0 = s[nt][e] * sl2, v1 = s[nt][2 + e] * sl2;
                if (kt == qt) {
                    if (key > row0 || key >= T) v0 = -INFINITY;
                    if (key > row1 || key >= T) v1 = -INFINITY;
                }
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
        if constexpr (DROP) { /* the sums keep every probability; the product P * mask */
#pragma unroll
            for (int nt = 0; nt < 8; nt++)
#pragma unroll
                for (int e = 0; e < 2; e++) {
                    uint64_t key = (uint64_t)(kt * BT + nt * 8 + 2 * q4 + e);
                    s[nt][e] *= symcu_keep(rk0, key, dr);
                    s[nt][2 + e] *= symcu_keep(rk1, key, dr);
                }
        }
#pragma unroll
        for (int dt = 0; dt < DT; dt++) {
            o[dt][0] *= al0;
            o[dt][1] *= al0;
            o[dt][2] *= al1;
            o[dt][3] *= al1;
        }
#pragma unroll
        for (int kk = 0; kk < BT / 16; kk++) { /* O += P V, 16 keys at a time */
            uint32_t hi[4], lo[4];
            a_from_c<E>(hi, lo, s[2 * kk], s[2 * kk + 1]);
            mma_rows<E, D>(o, hi, lo, cV, LD, kk * 16, lane);
        }
        __syncthreads(); /* everyone is done with these buffers before they refill */
    }
    l0 += __shfl_xor_sync(0xffffffffu, l0, 1);
    l0 += __shfl_xor_sync(0xffffffffu, l0, 2);
    l1 += __shfl_xor_sync(0xffffffffu, l1, 1);
    l1 += __shfl_xor_sync(0xffffffffu, l1, 2);
    float inv0 = 1.0f / l0, inv1 = 1.0f / l1;
    E *ob = out + (size_t)b * T * C + (size_t)h * D;
#pragma unroll
    for (int dt = 0; dt < DT; dt++) {
        int d = dt * 8 + 2 * q4;
        if (row0 < T) store2(ob + (size_t)row0 * C + d, o[dt][0] * inv0, o[dt][1] * inv0);
        if (row1 < T) store2(ob + (size_t)row1 * C + d, o[dt][2] * inv1, o[dt][3] * inv1);
    }
    if (q4 == 0) {
        float *lb = lse + (size_t)bh * T;
        if (row0 < T) lb[row0] = (m0 + log2f(l0)) * LN2;
        if (row1 < T) lb[row1] = (m1 + log2f(l1)) * LN2;
    }
}

/* ---- backward 0: D = rowsum(dout * out) ---- */

/* dvec (B,NH,T); one thread per (b, t, h), neighbours on neighbouring heads */
template <typename E, int D>
__global__ void attn_dvec_kernel(float *dvec, const E *dout, const E *out, int B, int T,
                                 int C, int NH) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (size_t)B * T * NH) return;
    int h = (int)(i % NH);
    size_t bt = i / NH;
    const E *po = out + bt * C + (size_t)h * D, *pd = dout + bt * C + (size_t)h * D;
    float acc = 0.0f;
#pragma unroll
    for (int c = 0; c < D; c += 8) {
        float x[8], y[8];
        load8(x, po + c);
        load8(y, pd + c);
#pragma unroll
        for (int k = 0; k < 8; k++) acc += x[k] * y[k];
    }
    size_t b = bt / T, t = bt % T;
    dvec[(b * NH + h) * T + t] = acc;
}

/* ---- backward 1: dQ ---- */

template <int D>
constexpr size_t dq_smem() {
    return (size_t)6 * tile_elems<D>() * sizeof(uint16_t); /* Q, dO, K x 2, V x 2 */
}

/* dqkv's q part += (add) or = from dout, given dvec; grid (ceil(T/BT), B*NH), block =
 * query tile */
template <typename E, int D, bool DROP>
__global__ void DQ_BOUNDS
    attn_dq_kernel(E *dqkv, int add, const E *dout, const E *qkv, const float *lse,
                   const float *dvec, int T, int C, int NH, float scale, float sl2,
                   symcu_dropout_t dr) {
    extern __shared__ __align__(16) unsigned char smem_raw[];
    constexpr int LD = D + PAD, DT = D / 8, TE = tile_elems<D>();
    constexpr bool HOLD = D <= 64;
    E *sQ = reinterpret_cast<E *>(smem_raw), *sO = sQ + TE, *sK = sO + TE,
         *sV = sK + 2 * TE;
    int nqt = gridDim.x, qt = nqt - 1 - blockIdx.x;
    int bh = blockIdx.y, b = bh / NH, h = bh % NH;
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, q4 = lane & 3;
    size_t stride = 3 * (size_t)C;
    const E *base = qkv + (size_t)b * T * stride + (size_t)h * D;
    const E *obase = dout + (size_t)b * T * C + (size_t)h * D;

    stage<E, D>(sQ, base, stride, qt * BT, T);
    stage<E, D>(sO, obase, C, qt * BT, T);
    stage<E, D>(sK, base + C, stride, 0, T);
    stage<E, D>(sV, base + 2 * (size_t)C, stride, 0, T);
    cp_commit();
    int row0 = qt * BT + warp * 16 + g, row1 = row0 + 8;
    const float *lrow = lse + (size_t)bh * T, *drow = dvec + (size_t)bh * T;
    /* rows past T: lse = +inf makes their P zero */
    float L0 = row0 < T ? lrow[row0] * LOG2E : INFINITY, L1 = row1 < T ? lrow[row1] * LOG2E : INFINITY;
    float D0 = row0 < T ? drow[row0] : 0.0f, D1 = row1 < T ? drow[row1] : 0.0f;
    uint64_t rk0 = 0, rk1 = 0;
    if constexpr (DROP) {
        uint64_t hk = symcu_head_key(dr, b, h);
        rk0 = symcu_row_key(hk, (uint64_t)row0);
        rk1 = symcu_row_key(hk, (uint64_t)row1);
    }
    cp_wait<0>();
    __syncthreads();
    arows<E, D / 16, HOLD> qa, oa;
    qa.init(sQ, LD, warp * 16, lane);
    oa.init(sO, LD, warp * 16, lane);

    float dq[DT][4];
#pragma unroll
    for (int dt = 0; dt < DT; dt++) dq[dt][0] = dq[dt][1] = dq[dt][2] = dq[dt][3] = 0.0f;
    for (int kt = 0; kt <= qt; kt++) {
        const E *cK = sK + (kt & 1) * TE, *cV = sV + (kt & 1) * TE;
        if (kt < qt) {
            stage<E, D>(sK + ((kt + 1) & 1) * TE, base + C, stride, (kt + 1) * BT, T);
            stage<E, D>(sV + ((kt + 1) & 1) * TE, base + 2 * (size_t)C, stride, (kt + 1) * BT, T);
            cp_commit();
            cp_wait<1>();
        } else {
            cp_wait<0>();
        }
        __syncthreads();
#pragma unroll
        for (int k0 = 0; k0 < BT / 16; k0 += KC) { /* KC x 16 keys at a time */
            float s[KC][2][4] = {}, dp[KC][2][4] = {};
#pragma unroll
            for (int c = 0; c < KC; c++) {
                mma_nt<E, D, HOLD>(s[c], qa, cK, LD, (k0 + c) * 16, lane);  /* S = Q K^T */
                mma_nt<E, D, HOLD>(dp[c], oa, cV, LD, (k0 + c) * 16, lane); /* dP = dO V^T */
            }
#pragma unroll
            for (int c = 0; c < KC; c++)
#pragma unroll
                for (int j = 0; j < 2; j++)
#pragma unroll
                    for (int e = 0; e < 2; e++) {
                        int key = kt * BT + (k0 + c) * 16 + j * 8 + 2 * q4 + e;
                        float p0 = key > row0 ? 0.0f : exp2f(s[c][j][e] * sl2 - L0);
                        float p1 = key > row1 ? 0.0f : exp2f(s[c][j][2 + e] * sl2 - L1);
                        float g0 = dp[c][j][e], g1 = dp[c][j][2 + e]; /* d(P * mask) */
                        if constexpr (DROP) {
                            g0 *= symcu_keep(rk0, (uint64_t)key, dr);
                            g1 *= symcu_keep(rk1, (uint64_t)key, dr);
                        }
                        s[c][j][e] = p0 * (g0 - D0); /* dS */
                        s[c][j][2 + e] = p1 * (g1 - D1);
                    }
#pragma unroll
            for (int c = 0; c < KC; c++) {
                uint32_t hi[4], lo[4];
                a_from_c<E>(hi, lo, s[c][0], s[c][1]);
                mma_rows<E, D>(dq, hi, lo, cK, LD, (k0 + c) * 16, lane); /* dQ += dS K */
            }
        }
        __syncthreads();
    }
    E *gb = dqkv + (size_t)b * T * stride + (size_t)h * D;
#pragma unroll
    for (int dt = 0; dt < DT; dt++) {
        int d = dt * 8 + 2 * q4;
#pragma unroll
        for (int r = 0; r < 2; r++) {
            int row = r ? row1 : row0;
            if (row >= T) continue;
            E *pq = gb + (size_t)row * stride + d;
            float2 oq = add ? load2(pq) : make_float2(0.0f, 0.0f);
            store2(pq, oq.x + dq[dt][2 * r] * scale, oq.y + dq[dt][2 * r + 1] * scale);
        }
    }
}

/* ---- backward 2: dK, dV ---- */

template <int D>
constexpr size_t dkv_smem() {
    return (size_t)6 * tile_elems<D>() * sizeof(uint16_t) + 4 * BT * sizeof(float);
}

/* dqkv's k and v parts += (add) or = from dout, given dvec; grid (ceil(T/BT), B*NH),
 * block = key tile */
template <typename E, int D, bool DROP>
__global__ void DKV_BOUNDS
    attn_dkv_kernel(E *dqkv, int add, const E *dout, const E *qkv, const float *lse,
                    const float *dvec, int T, int C, int NH, float scale, float sl2,
                    symcu_dropout_t dr) {
    extern __shared__ __align__(16) unsigned char smem_raw[];
    constexpr int LD = D + PAD, DT = D / 8, TE = tile_elems<D>();
    constexpr bool HOLD = D <= 64;
    E *sK = reinterpret_cast<E *>(smem_raw), *sV = sK + TE, *sQ = sV + TE,
         *sO = sQ + 2 * TE;                               /* Q and dout rows, two buffers each */
    float *sL = reinterpret_cast<float *>(sO + 2 * TE);   /* (2, BT) lse * log2 e, +inf past T */
    float *sD = sL + 2 * BT;                              /* (2, BT) D */
    int nqt = gridDim.x, kt = blockIdx.x; /* the first key tiles have the most work */
    int bh = blockIdx.y, b = bh / NH, h = bh % NH;
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, q4 = lane & 3;
    size_t stride = 3 * (size_t)C;
    const E *base = qkv + (size_t)b * T * stride + (size_t)h * D;
    const E *obase = dout + (size_t)b * T * C + (size_t)h * D;
    const float *lrow = lse + (size_t)bh * T, *drow = dvec + (size_t)bh * T;
    /* thread i < 2 BT carries the lse (i < BT) or D of query i % BT of a tile */
    auto row_stat = [&](int qt) {
        int i = threadIdx.x % BT, t = qt * BT + i;
        if (threadIdx.x < BT) return t < T ? lrow[t] * LOG2E : INFINITY;
        return t < T ? drow[t] : 0.0f;
    };
    auto put_stat = [&](int buf, float v) {
        if (threadIdx.x < BT) sL[buf * BT + threadIdx.x] = v;
        else if (threadIdx.x < 2 * BT) sD[buf * BT + threadIdx.x - BT] = v;
    };

    stage<E, D>(sK, base + C, stride, kt * BT, T);
    stage<E, D>(sV, base + 2 * (size_t)C, stride, kt * BT, T);
    stage<E, D>(sQ, base, stride, kt * BT, T);
    stage<E, D>(sO, obase, C, kt * BT, T);
    cp_commit();
    put_stat(0, row_stat(kt));
    cp_wait<0>();
    __syncthreads();
    arows<E, D / 16, HOLD> ka, va;
    ka.init(sK, LD, warp * 16, lane);
    va.init(sV, LD, warp * 16, lane);
    int key0 = kt * BT + warp * 16 + (lane >> 2), key1 = key0 + 8;
    uint64_t hk = 0;
    if constexpr (DROP) hk = symcu_head_key(dr, b, h);
    float dk[DT][4], dv[DT][4];
#pragma unroll
    for (int dt = 0; dt < DT; dt++)
#pragma unroll
        for (int e = 0; e < 4; e++) dk[dt][e] = dv[dt][e] = 0.0f;

    for (int qt = kt; qt < nqt; qt++) {
        int cur = (qt - kt) & 1;
        const E *cQ = sQ + cur * TE, *cO = sO + cur * TE;
        const float *cL = sL + cur * BT, *cD = sD + cur * BT;
        float next = 0.0f;
        if (qt + 1 < nqt) {
            stage<E, D>(sQ + (cur ^ 1) * TE, base, stride, (qt + 1) * BT, T);
            stage<E, D>(sO + (cur ^ 1) * TE, obase, C, (qt + 1) * BT, T);
            cp_commit();
            if (threadIdx.x < 2 * BT) next = row_stat(qt + 1);
            cp_wait<1>();
        } else {
            cp_wait<0>();
        }
        __syncthreads();
#pragma unroll
        for (int k0 = 0; k0 < BT / 16; k0 += KC) { /* KC x 16 queries at a time */
            float p[KC][2][4] = {}, dp[KC][2][4] = {};
#pragma unroll
            for (int c = 0; c < KC; c++) {
                mma_nt<E, D, HOLD>(p[c], ka, cQ, LD, (k0 + c) * 16, lane);  /* S^T = K Q^T */
                mma_nt<E, D, HOLD>(dp[c], va, cO, LD, (k0 + c) * 16, lane); /* dP^T = V dO^T */
            }
#pragma unroll
            for (int c = 0; c < KC; c++)
#pragma unroll
                for (int j = 0; j < 2; j++)
#pragma unroll
                    for (int e = 0; e < 2; e++) {
                        int qi = (k0 + c) * 16 + j * 8 + 2 * q4 + e, qrow = qt * BT + qi;
                        float L = cL[qi], Dq = cD[qi];
                        float p0 = qrow < key0 ? 0.0f : exp2f(p[c][j][e] * sl2 - L);
                        float p1 = qrow < key1 ? 0.0f : exp2f(p[c][j][2 + e] * sl2 - L);
                        float k0m = 1.0f, k1m = 1.0f; /* the mask of (qrow, key0), (qrow, key1) */
                        if constexpr (DROP) {
                            uint64_t rk = symcu_row_key(hk, (uint64_t)qrow);
                            k0m = symcu_keep(rk, (uint64_t)key0, dr);
                            k1m = symcu_keep(rk, (uint64_t)key1, dr);
                        }
                        p[c][j][e] = p0 * k0m; /* (P * mask)^T, for dV */
                        p[c][j][2 + e] = p1 * k1m;
                        dp[c][j][e] = p0 * (dp[c][j][e] * k0m - Dq); /* dS^T */
                        dp[c][j][2 + e] = p1 * (dp[c][j][2 + e] * k1m - Dq);
                    }
#pragma unroll
            for (int c = 0; c < KC; c++) {
                uint32_t hi[4], lo[4];
                a_from_c<E>(hi, lo, p[c][0], p[c][1]);
                mma_rows<E, D>(dv, hi, lo, cO, LD, (k0 + c) * 16, lane); /* dV += P^T dO */
                a_from_c<E>(hi, lo, dp[c][0], dp[c][1]);
                mma_rows<E, D>(dk, hi, lo, cQ, LD, (k0 + c) * 16, lane); /* dK += dS^T Q */
            }
        }
        if (qt + 1 < nqt) put_stat(cur ^ 1, next);
        __syncthreads();
    }
    /* dqkv += : rows key0, key1 of the k part (column C + h*D) and the v part */
    E *gb = dqkv + (size_t)b * T * stride + (size_t)h * D;
#pragma unroll
    for (int dt = 0; dt < DT; dt++) {
        int d = dt * 8 + 2 * q4;
#pragma unroll
        for (int r = 0; r < 2; r++) {
            int key = r ? key1 : key0;
            if (key >= T) continue;
            E *pk = gb + (size_t)key * stride + C + d;
            E *pv = gb + (size_t)key * stride + 2 * (size_t)C + d;
            float2 ok = add ? load2(pk) : make_float2(0.0f, 0.0f),
                   ov = add ? load2(pv) : make_float2(0.0f, 0.0f);
            store2(pk, ok.x + dk[dt][2 * r] * scale, ok.y + dk[dt][2 * r + 1] * scale);
            store2(pv, ov.x + dv[dt][2 * r], ov.y + dv[dt][2 * r + 1]);
        }
    }
}

/* ---- fp32: one warp per row, plain arithmetic ---- */

/* The fp32 path is for comparing a GPU run with the CPU's (--precision
 * fp32), not for speed: a warp per query (forward, dQ) or key (dK, dV) row,
 * lane l owning channels l, l + 32, ... of the head, the other side's rows
 * read from global memory in order, every dot product a butterfly sum. Still
 * no T x T matrix, and no atomics (each output row is one warp's). */

/* out (B,T,C), lse (B,NH,T) from qkv (B,T,3C); grid (T, B*NH), 32 threads */
template <int D, bool DROP>
__global__ void attn_fwd_f32_kernel(float *out, float *lse, const float *qkv, int T, int C,
                                    int NH, float scale, symcu_dropout_t dr) {
    constexpr int PL = D / 32;
    int i = blockIdx.x, bh = blockIdx.y, b = bh / NH, h = bh % NH, lane = threadIdx.x;
    size_t stride = 3 * (size_t)C;
    const float *base = qkv + (size_t)b * T * stride + (size_t)h * D;
    float q[PL], o[PL];
#pragma unroll
    for (int k = 0; k < PL; k++) {
        q[k] = base[(size_t)i * stride + lane + 32 * k];
        o[k] = 0.0f;
    }
    float m = -INFINITY, l = 0.0f;
    uint64_t rk = 0;
    if constexpr (DROP) rk = symcu_row_key(symcu_head_key(dr, b, h), (uint64_t)i);
    for (int j = 0; j <= i; j++) {
        const float *kr = base + (size_t)j * stride + C, *vr = kr + C;
        float sc = 0.0f;
#pragma unroll
        for (int k = 0; k < PL; k++) sc += q[k] * kr[lane + 32 * k];
        sc = warp_sum(sc) * scale;
        float mn = fmaxf(m, sc), al = expf(m - mn), p = expf(sc - mn); /* al = 0 at j = 0 */
        l = l * al + p;
        if constexpr (DROP) p *= symcu_keep(rk, (uint64_t)j, dr); /* the sum keeps it */
#pragma unroll
        for (int k = 0; k < PL; k++) o[k] = o[k] * al + p * vr[lane + 32 * k];
        m = mn;
    }
    float *orow = out + ((size_t)b * T + i) * C + (size_t)h * D;
#pragma unroll
    for (int k = 0; k < PL; k++) orow[lane + 32 * k] = o[k] / l;
    if (lane == 0) lse[(size_t)bh * T + i] = m + logf(l);
}

/* dqkv's q part (add: +=, else =) of query row blockIdx.x: dq = scale *
 * sum over j <= i of P_ij (dP_ij - D_i) k_j, P_ij = exp(q_i k_j scale - lse_i),
 * dP_ij = dout_i . v_j */
template <int D, bool DROP>
__global__ void attn_dq_f32_kernel(float *dqkv, int add, const float *dout, const float *qkv,
                                   const float *lse, const float *dvec, int T, int C, int NH,
                                   float scale, symcu_dropout_t dr) {
    constexpr int PL = D / 32;
    int i = blockIdx.x, bh = blockIdx.y, b = bh / NH, h = bh % NH, lane = threadIdx.x;
    size_t stride = 3 * (size_t)C;
    const float *base = qkv + (size_t)b * T * stride + (size_t)h * D;
    const float *dorow = dout + ((size_t)b * T + i) * C + (size_t)h * D;
    float q[PL], g[PL], dq[PL];
#pragma unroll
    for (int k = 0; k < PL; k++) {
        q[k] = base[(size_t)i * stride + lane + 32 * k];
        g[k] = dorow[lane + 32 * k];
        dq[k] = 0.0f;
    }
    float L = lse[(size_t)bh * T + i], Dv = dvec[(size_t)bh * T + i];
    uint64_t rk = 0;
    if constexpr (DROP) rk = symcu_row_key(symcu_head_key(dr, b, h), (uint64_t)i);
    for (int j = 0; j <= i; j++) {
        const float *kr = base + (size_t)j * stride + C, *vr = kr + C;
        float sc = 0.0f, dp = 0.0f;
#pragma unroll
        for (int k = 0; k < PL; k++) {
            sc += q[k] * kr[lane + 32 * k];
            dp += g[k] * vr[lane + 32 * k];
        }
        float gp = warp_sum(dp); /* d(P * mask) */
        if constexpr (DROP) gp *= symcu_keep(rk, (uint64_t)j, dr);
        float p = expf(warp_sum(sc) * scale - L), ds = p * (gp - Dv);
#pragma unroll
        for (int k = 0; k < PL; k++) dq[k] += ds * kr[lane + 32 * k];
    }
    float *qrow = dqkv + ((size_t)b * T + i) * stride + (size_t)h * D;
#pragma unroll
    for (int k = 0; k < PL; k++)
        qrow[lane + 32 * k] = (add ? qrow[lane + 32 * k] : 0.0f) + dq[k] * scale;
}

/* dqkv's k and v parts of key row blockIdx.x: over queries i >= j, dv +=
 * P_ij dout_i, dk += P_ij (dP_ij - D_i) q_i (times scale) */
template <int D, bool DROP>
__global__ void attn_dkv_f32_kernel(float *dqkv, int add, const float *dout, const float *qkv,
                                    const float *lse, const float *dvec, int T, int C, int NH,
                                    float scale, symcu_dropout_t dr) {
    constexpr int PL = D / 32;
    int j = blockIdx.x, bh = blockIdx.y, b = bh / NH, h = bh % NH, lane = threadIdx.x;
    size_t stride = 3 * (size_t)C;
    const float *base = qkv + (size_t)b * T * stride + (size_t)h * D;
    float kk[PL], vv[PL], dk[PL], dv[PL];
    uint64_t hk = 0;
    if constexpr (DROP) hk = symcu_head_key(dr, b, h);
#pragma unroll
    for (int k = 0; k < PL; k++) {
        kk[k] = base[(size_t)j * stride + C + lane + 32 * k];
        vv[k] = base[(size_t)j * stride + 2 * (size_t)C + lane + 32 * k];
        dk[k] = dv[k] = 0.0f;
    }
    for (int i = j; i < T; i++) {
        const float *qr = base + (size_t)i * stride;
        const float *dorow = dout + ((size_t)b * T + i) * C + (size_t)h * D;
        float sc = 0.0f, dp = 0.0f;
#pragma unroll
        for (int k = 0; k < PL; k++) {
            sc += qr[lane + 32 * k] * kk[k];
            dp += dorow[lane + 32 * k] * vv[k];
        }
        float mk = 1.0f; /* the mask of (i, j) */
        if constexpr (DROP) mk = symcu_keep(symcu_row_key(hk, (uint64_t)i), (uint64_t)j, dr);
        float p = expf(warp_sum(sc) * scale - lse[(size_t)bh * T + i]);
        float ds = p * (warp_sum(dp) * mk - dvec[(size_t)bh * T + i]), pm = p * mk;
#pragma unroll
        for (int k = 0; k < PL; k++) {
            dv[k] += pm * dorow[lane + 32 * k];
            dk[k] += ds * qr[lane + 32 * k];
        }
    }
    float *krow = dqkv + ((size_t)b * T + j) * stride + C + (size_t)h * D, *vrow = krow + C;
#pragma unroll
    for (int k = 0; k < PL; k++) {
        krow[lane + 32 * k] = (add ? krow[lane + 32 * k] : 0.0f) + dk[k] * scale;
        vrow[lane + 32 * k] = (add ? vrow[lane + 32 * k] : 0.0f) + dv[k];
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

template <typename E, int D, bool DROP>
static int fwd(E *out, float *lse, const E *qkv, int B, int T, int C, int NH,
               const symcu_dropout_t &dr, cudaStream_t stream) {
    if constexpr (std::is_same<E, float>::value) {
        attn_fwd_f32_kernel<D, DROP><<<dim3(T, B * NH), 32, 0, stream>>>(
            out, lse, qkv, T, C, NH, (float)(1.0 / sqrt((double)D)), dr);
        SYMCU_LAUNCHED("attn_fwd_f32_kernel");
        return SYM_OK;
    } else {
        size_t sm = fwd_smem<D>();
        SYMCU_SMEM_OPT_IN((attn_fwd_kernel<E, D, DROP>), sm);
        dim3 grid((T + BT - 1) / BT, B * NH);
        float sl2 = (float)(1.0 / sqrt((double)D)) * LOG2E;
        attn_fwd_kernel<E, D, DROP><<<grid, NWARPS * 32, sm, stream>>>(out, lse, qkv, T, C, NH,
                                                                       sl2, dr);
        SYMCU_LAUNCHED("attn_fwd_kernel");
        return SYM_OK;
    }
}

/* Dropout is on when drop gives a step key; its sequence and head numbers must fit. */
static int drop_on(const symcu_dropout_t *drop, const char *fn, int NH) {
    if (!drop || !drop->step_key) return 0;
    if (!drop->row0 || drop->h0 < 0 || drop->heads < drop->h0 + NH)
        return SYMCU_INVAL("%s: dropout without its first row, or heads [%d, %d) outside the "
                           "model's %d", fn, drop->h0, drop->h0 + NH, drop->heads);
    return 1;
}

int symcu_attention_forward(symcu_dtype_t dt, void *out, float *lse, const void *qkv, int B,
                            int T, int C, int NH, const symcu_dropout_t *drop,
                            cudaStream_t stream) {
    int D = 0, rc = check("attention forward", B, T, C, NH, &D);
    if (rc) return rc;
    int on = drop_on(drop, "attention forward", NH);
    if (on < 0) return on;
    symcu_dropout_t dr = on ? *drop : symcu_dropout_t{};
#define FWD(DV, ON) fwd<E, DV, ON>((E *)out, lse, (const E *)qkv, B, T, C, NH, dr, stream)
    SYMCU_DISPATCH(dt, "attention forward", switch (D) {
        case 32: return on ? FWD(32, true) : FWD(32, false);
        case 64: return on ? FWD(64, true) : FWD(64, false);
        default: return on ? FWD(128, true) : FWD(128, false);
    });
#undef FWD
    return SYM_OK;
}

template <typename E, int D, bool DROP>
static int bwd(E *dqkv, int add, float *dvec, const E *dout, const E *out, const E *qkv,
               const float *lse, int B, int T, int C, int NH, const symcu_dropout_t &dr,
               cudaStream_t stream) {
    float scale = (float)(1.0 / sqrt((double)D)), sl2 = scale * LOG2E;
    size_t rows = (size_t)B * T * NH;
    attn_dvec_kernel<E, D><<<(unsigned)((rows + 255) / 256), 256, 0, stream>>>(dvec, dout, out, B,
                                                                               T, C, NH);
    SYMCU_LAUNCHED("attn_dvec_kernel");
    if constexpr (std::is_same<E, float>::value) {
        dim3 grid(T, B * NH);
        attn_dq_f32_kernel<D, DROP><<<grid, 32, 0, stream>>>(dqkv, add, dout, qkv, lse, dvec, T,
                                                             C, NH, scale, dr);
        SYMCU_LAUNCHED("attn_dq_f32_kernel");
        attn_dkv_f32_kernel<D, DROP><<<grid, 32, 0, stream>>>(dqkv, add, dout, qkv, lse, dvec, T,
                                                              C, NH, scale, dr);
        SYMCU_LAUNCHED("attn_dkv_f32_kernel");
    } else {
        dim3 grid((T + BT - 1) / BT, B * NH);
        size_t s1 = dq_smem<D>(), s2 = dkv_smem<D>();
        SYMCU_SMEM_OPT_IN((attn_dq_kernel<E, D, DROP>), s1);
        SYMCU_SMEM_OPT_IN((attn_dkv_kernel<E, D, DROP>), s2);
        attn_dq_kernel<E, D, DROP><<<grid, NWARPS * 32, s1, stream>>>(
            dqkv, add, dout, qkv, lse, dvec, T, C, NH, scale, sl2, dr);
        SYMCU_LAUNCHED("attn_dq_kernel");
        attn_dkv_kernel<E, D, DROP><<<grid, NWARPS * 32, s2, stream>>>(
            dqkv, add, dout, qkv, lse, dvec, T, C, NH, scale, sl2, dr);
        SYMCU_LAUNCHED("attn_dkv_kernel");
    }
    return SYM_OK;
}

int symcu_attention_backward(symcu_dtype_t dt, void *dqkv, symcu_grad_store_t store,
                             float *scratch, const void *dout, const void *out, const void *qkv,
                             const float *lse, int B, int T, int C, int NH,
                             const symcu_dropout_t *drop, cudaStream_t stream) {
    int D = 0, rc = check("attention backward", B, T, C, NH, &D);
    if (rc) return rc;
    int on = drop_on(drop, "attention backward", NH);
    if (on < 0) return on;
    symcu_dropout_t dr = on ? *drop : symcu_dropout_t{};
    int add = store == SYMCU_GRAD_ADD;
#define BWD(DV, ON)                                                                        \
    bwd<E, DV, ON>((E *)dqkv, add, scratch, (const E *)dout, (const E *)out, (const E *)qkv, \
                   lse, B, T, C, NH, dr, stream)
    SYMCU_DISPATCH(dt, "attention backward", switch (D) {
        case 32: return on ? BWD(32, true) : BWD(32, false);
        case 64: return on ? BWD(64, true) : BWD(64, false);
        default: return on ? BWD(128, true) : BWD(128, false);
    });
#undef BWD
    return SYM_OK;
}
