/*
 * common.cuh — what the .cu files of src/train/ops/cuda share: the CHECK
 * macros (each failure recorded once, with the call, file and line), 16-byte
 * bf16 loads and stores, and deterministic warp and block reductions.
 *
 * Reductions: the butterfly (__shfl_xor) leaves the same bits in every lane,
 * since each step adds the same two values (a + b == b + a in IEEE
 * arithmetic); a block reduction is the warps' sums combined by warp 0 in lane
 * order. So every sum here has one fixed order, whatever the timing.
 */
#ifndef SYM_TRAIN_OPS_CUDA_COMMON_CUH
#define SYM_TRAIN_OPS_CUDA_COMMON_CUH

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include <atomic>

#include "ops_cuda.h"

typedef __nv_bfloat16 bf16;

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

/* ---- 16-byte bf16 vectors ---- */

/* f[0..8) = p[0..8), p 16-byte aligned. */
__device__ __forceinline__ void load8(float f[8], const bf16 *p) {
    int4 r = *reinterpret_cast<const int4 *>(p);
    const __nv_bfloat162 *h = reinterpret_cast<const __nv_bfloat162 *>(&r);
#pragma unroll
    for (int k = 0; k < 4; k++) {
        float2 t = __bfloat1622float2(h[k]);
        f[2 * k] = t.x;
        f[2 * k + 1] = t.y;
    }
}

/* The same through the read-only, evict-first path (data read once). */
__device__ __forceinline__ void load8_cs(float f[8], const bf16 *p) {
    int4 r = __ldcs(reinterpret_cast<const int4 *>(p));
    const __nv_bfloat162 *h = reinterpret_cast<const __nv_bfloat162 *>(&r);
#pragma unroll
    for (int k = 0; k < 4; k++) {
        float2 t = __bfloat1622float2(h[k]);
        f[2 * k] = t.x;
        f[2 * k + 1] = t.y;
    }
}

/* p[0..8) = f[0..8) rounded to nearest even. */
__device__ __forceinline__ void store8(bf16 *p, const float f[8]) {
    int4 r;
    __nv_bfloat162 *h = reinterpret_cast<__nv_bfloat162 *>(&r);
#pragma unroll
    for (int k = 0; k < 4; k++) h[k] = __floats2bfloat162_rn(f[2 * k], f[2 * k + 1]);
    *reinterpret_cast<int4 *>(p) = r;
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

#endif
