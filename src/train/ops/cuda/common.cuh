/*
 * common.cuh — what the .cu files of src/train/ops/cuda share: the CHECK
 * macros (each failure recorded once, with the call, file and line), loads
 * and stores of 8 activations of each compute type (bf16, fp16: 16 bytes;
 * fp32: 32), conversions, and deterministic warp and block reductions.
 *
 * The kernels are templates over the activation type E (bf16, f16 or
 * float); the overloads below let one body serve the three, and
 * SYMCU_DISPATCH turns a launcher's symcu_dtype_t into the instantiation.
 *
 * Reductions: the butterfly (__shfl_xor) leaves the same bits in every lane,
 * since each step adds the same two values (a + b == b + a in IEEE
 * arithmetic); a block reduction is the warps' sums combined by warp 0 in lane
 * order. So every sum here has one fixed order, whatever the timing.
 */
#ifndef SYM_TRAIN_OPS_CUDA_COMMON_CUH
#define SYM_TRAIN_OPS_CUDA_COMMON_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include <atomic>

#include <symtrain/rng.h>

#include "ops_cuda.h"

typedef __nv_bfloat16 bf16;
typedef __half f16;

/* ---- errors ---- */

/* Record "what failed at file:line: why" for symcu_last_error; return code. */
int symcu__fail(int code, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#define SYMCU_CUDA(call)                                                                 \
    do {                                                                                 \
        cudaError_t e_ = (call);                                                         \
        if (e_ != cudaSuccess)                                                           \
            return symcu__fail(SYM_EIO, __FILE__, __LINE__, "%s failed: %s", #call,      \
                               cudaGetErrorString(e_));                                  \
    } while (0)

/* After a <<<>>> launch: a bad configuration shows up here. */
#define SYMCU_LAUNCHED(name) SYMCU_CUDA(cudaGetLastError())

#define SYMCU_INVAL(...) symcu__fail(SYM_EINVAL, __FILE__, __LINE__, __VA_ARGS__)

static inline int symcu__aligned16(const void *p) { return ((uintptr_t)p & 15u) == 0; }

/* Let `kernel` take `bytes` of dynamic shared memory (past the default 48 KiB)
 * on the current device: one driver call per kernel, device and larger size,
 * not one per launch. The flags only grow, so a race sets the same value twice. */
#define SYMCU_SMEM_OPT_IN(kernel, bytes)                                                 \
    do {                                                                                 \
        static std::atomic<int> set_[64];                                                \
        int dev_ = 0, b_ = (int)(bytes);                                                 \
        SYMCU_CUDA(cudaGetDevice(&dev_));                                                \
        if (dev_ < 0 || dev_ >= 64 || set_[dev_].load(std::memory_order_relaxed) < b_) { \
            SYMCU_CUDA(cudaFuncSetAttribute(kernel,                                      \
                                            cudaFuncAttributeMaxDynamicSharedMemorySize, \
                                            b_));                                        \
            if (dev_ >= 0 && dev_ < 64) set_[dev_].store(b_, std::memory_order_relaxed);  \
        }                                                                                \
    } while (0)

/* ---- the compute types ---- */

/* Run the statements after fn (using the type name E) with E the C++ type
 * of symcu_dtype_t dt; an unknown dt returns SYM_EINVAL with fn named. */
#define SYMCU_DISPATCH(dt, fn, ...)                                                      \
    do {                                                                                 \
        switch (dt) {                                                                    \
        case SYMCU_BF16: { typedef bf16 E; __VA_ARGS__; } break;                         \
        case SYMCU_F16: { typedef f16 E; __VA_ARGS__; } break;                           \
        case SYMCU_F32: { typedef float E; __VA_ARGS__; } break;                         \
        default: return SYMCU_INVAL("%s: unknown compute type %d", fn, (int)(dt));       \
        }                                                                                \
    } while (0)

static inline size_t symcu__dtype_size(symcu_dtype_t dt) { return dt == SYMCU_F32 ? 4 : 2; }

__device__ __forceinline__ float to_f(bf16 x) { return __bfloat162float(x); }
__device__ __forceinline__ float to_f(f16 x) { return __half2float(x); }
__device__ __forceinline__ float to_f(float x) { return x; }

/* x rounded to nearest even in T. */
template <typename E> __device__ __forceinline__ E from_f(float x);
template <> __device__ __forceinline__ bf16 from_f<bf16>(float x) { return __float2bfloat16_rn(x); }
template <> __device__ __forceinline__ f16 from_f<f16>(float x) { return __float2half_rn(x); }
template <> __device__ __forceinline__ float from_f<float>(float x) { return x; }

/* x as E holds it: x rounded to E and back. */
template <typename E> __device__ __forceinline__ float round_to(float x) { return to_f(from_f<E>(x)); }

/* Two neighbours: p[0..2) as floats, and p[0..2) = (a, b) rounded; p 4-byte
 * aligned (8 for float). */
__device__ __forceinline__ float2 load2(const bf16 *p) {
    return __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162 *>(p));
}
__device__ __forceinline__ float2 load2(const f16 *p) {
    return __half22float2(*reinterpret_cast<const __half2 *>(p));
}
__device__ __forceinline__ float2 load2(const float *p) { return *reinterpret_cast<const float2 *>(p); }
__device__ __forceinline__ void store2(bf16 *p, float a, float b) {
    *reinterpret_cast<__nv_bfloat162 *>(p) = __floats2bfloat162_rn(a, b);
}
__device__ __forceinline__ void store2(f16 *p, float a, float b) {
    *reinterpret_cast<__half2 *>(p) = __floats2half2_rn(a, b);
}
__device__ __forceinline__ void store2(float *p, float a, float b) {
    *reinterpret_cast<float2 *>(p) = make_float2(a, b);
}

/* ---- vectors of 8: 16-byte bf16 / fp16, 32-byte fp32 ---- */

/* A 16-bit type's pair (__nv_bfloat162, __half2) to floats and back, nearest even. */
__device__ __forceinline__ float2 pair_f(__nv_bfloat162 h) { return __bfloat1622float2(h); }
__device__ __forceinline__ float2 pair_f(__half2 h) { return __half22float2(h); }
__device__ __forceinline__ void pair_set(__nv_bfloat162 &h, float a, float b) {
    h = __floats2bfloat162_rn(a, b);
}
__device__ __forceinline__ void pair_set(__half2 &h, float a, float b) { h = __floats2half2_rn(a, b); }

/* f[0..8) from the 16 bytes r of four pairs P; and the 16 bytes of f rounded. */
template <typename P>
__device__ __forceinline__ void unpack8(float f[8], int4 r) {
    const P *h = reinterpret_cast<const P *>(&r);
#pragma unroll
    for (int k = 0; k < 4; k++) {
        float2 t = pair_f(h[k]);
        f[2 * k] = t.x;
        f[2 * k + 1] = t.y;
    }
}
template <typename P>
__device__ __forceinline__ int4 pack8(const float f[8]) {
    int4 r;
    P *h = reinterpret_cast<P *>(&r);
#pragma unroll
    for (int k = 0; k < 4; k++) pair_set(h[k], f[2 * k], f[2 * k + 1]);
    return r;
}

/* f[0..8) = p[0..8), p 16-byte aligned; load8_cs through the read-only,
 * evict-first path (data read once); store8: p[0..8) = f[0..8) rounded to
 * nearest even. */
__device__ __forceinline__ void load8(float f[8], const bf16 *p) {
    unpack8<__nv_bfloat162>(f, *reinterpret_cast<const int4 *>(p));
}
__device__ __forceinline__ void load8_cs(float f[8], const bf16 *p) {
    unpack8<__nv_bfloat162>(f, __ldcs(reinterpret_cast<const int4 *>(p)));
}
__device__ __forceinline__ void store8(bf16 *p, const float f[8]) {
    *reinterpret_cast<int4 *>(p) = pack8<__nv_bfloat162>(f);
}
__device__ __forceinline__ void load8(float f[8], const f16 *p) {
    unpack8<__half2>(f, *reinterpret_cast<const int4 *>(p));
}
__device__ __forceinline__ void load8_cs(float f[8], const f16 *p) {
    unpack8<__half2>(f, __ldcs(reinterpret_cast<const int4 *>(p)));
}
__device__ __forceinline__ void store8(f16 *p, const float f[8]) {
    *reinterpret_cast<int4 *>(p) = pack8<__half2>(f);
}

/* And for fp32: two 16-byte moves (p 16-byte aligned). */
__device__ __forceinline__ void load8(float f[8], const float *p) {
    float4 a = reinterpret_cast<const float4 *>(p)[0], b = reinterpret_cast<const float4 *>(p)[1];
    f[0] = a.x, f[1] = a.y, f[2] = a.z, f[3] = a.w, f[4] = b.x, f[5] = b.y, f[6] = b.z, f[7] = b.w;
}
__device__ __forceinline__ void load8_cs(float f[8], const float *p) {
    float4 a = __ldcs(reinterpret_cast<const float4 *>(p)),
           b = __ldcs(reinterpret_cast<const float4 *>(p) + 1);
    f[0] = a.x, f[1] = a.y, f[2] = a.z, f[3] = a.w, f[4] = b.x, f[5] = b.y, f[6] = b.z, f[7] = b.w;
}
__device__ __forceinline__ void store8(float *p, const float f[8]) {
    reinterpret_cast<float4 *>(p)[0] = make_float4(f[0], f[1], f[2], f[3]);
    reinterpret_cast<float4 *>(p)[1] = make_float4(f[4], f[5], f[6], f[7]);
}

/* ---- reductions ---- */

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ double warp_sum_d(double v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

/* The sum over the block of every thread's v, returned to every thread.
 * blockDim.x a multiple of 32, at most 1024; `sh` holds 32 values; the block
 * must call it together. */
template <typename F>
__device__ __forceinline__ F block_sum(F v, F *sh) {
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    __syncthreads(); /* sh may hold the previous call's values */
    if (lane == 0) sh[warp] = v;
    __syncthreads();
    v = lane < nw ? sh[lane] : (F)0;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

/* ---- dropout masks (symcu_dropout_t; the CPU's draws, symtrain/rng.h) ---- */

/* The key of row i under `key` (a step key, or an attention head's). */
__device__ __forceinline__ uint64_t symcu_row_key(uint64_t key, uint64_t i) {
    return sym_rng_mix(key ^ i * 0x9E3779B97F4A7C15ull);
}
/* Unit j's factor in the row: d.scale when kept, else 0. */
__device__ __forceinline__ float symcu_keep(uint64_t row_key, uint64_t j,
                                            const symcu_dropout_t &d) {
    return (uint32_t)(sym_rng_hash(row_key, j) >> 40) >= d.threshold ? d.scale : 0.0f;
}
/* The key of head h (this PE's) of sequence b of the batch (attention). */
__device__ __forceinline__ uint64_t symcu_head_key(const symcu_dropout_t &d, int b, int h) {
    uint64_t head = (uint64_t)(*d.row0 + b) * (uint64_t)d.heads + (uint64_t)(d.h0 + h);
    return sym_rng_mix(*d.step_key ^ head * 0xD1B54A32D192ED03ull);
}

#endif
