/*
 * kernels.cuh — device building blocks shared by the collective kernels:
 * element types (fp32, fp16, bf16 as 16-byte vectors, accumulated in fp32),
 * the reduction operators, system-scope flags with a watchdog, the flagged
 * one-shot lines, and block-wide copy/reduce loops over byte ranges.
 *
 * Loops are block-wide: every thread of the block calls them with the same
 * arguments, and element i of a range is always handled by the same thread
 * whatever the call, which is what makes in-place use safe. Data written by
 * peers is read with ld.global.cg (L2, never a stale L1 line).
 */
#ifndef SYM_GPU_KERNELS_CUH
#define SYM_GPU_KERNELS_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>
#include <stdio.h>

#include "gpu.h"

#define SYM_DEV static __device__ __forceinline__

/* ---- element types ---- */

template <int DT> struct sym_dt;
template <> struct sym_dt<SHMEMX_FLOAT32> {
    static constexpr int size = 4;
    static __device__ __forceinline__ float load(const uint8_t *p) {
        return __ldcg((const float *)p);
    }
    static __device__ __forceinline__ void store(uint8_t *p, float v) { *(float *)p = v; }
    static __device__ __forceinline__ float from_bits(uint32_t b) { return __uint_as_float(b); }
    static __device__ __forceinline__ uint32_t to_bits(float v) { return __float_as_uint(v); }
};
template <> struct sym_dt<SHMEMX_FLOAT16> {
    static constexpr int size = 2;
    static __device__ __forceinline__ float load(const uint8_t *p) {
        return __half2float(__ushort_as_half(__ldcg((const unsigned short *)p)));
    }
    static __device__ __forceinline__ void store(uint8_t *p, float v) {
        *(unsigned short *)p = __half_as_ushort(__float2half_rn(v));
    }
    static __device__ __forceinline__ float from_bits(uint32_t b) {
        return __half2float(__ushort_as_half((unsigned short)b));
    }
    static __device__ __forceinline__ uint32_t to_bits(float v) {
        return __half_as_ushort(__float2half_rn(v));
    }
};
template <> struct sym_dt<SHMEMX_BFLOAT16> {
    static constexpr int size = 2;
    static __device__ __forceinline__ float load(const uint8_t *p) {
        return __uint_as_float((uint32_t)__ldcg((const unsigned short *)p) << 16);
    }
    static __device__ __forceinline__ void store(uint8_t *p, float v) {
        *(unsigned short *)p = __bfloat16_as_ushort(__float2bfloat16_rn(v));
    }
    static __device__ __forceinline__ float from_bits(uint32_t b) {
        return __uint_as_float(b << 16);
    }
    static __device__ __forceinline__ uint32_t to_bits(float v) {
        return __bfloat16_as_ushort(__float2bfloat16_rn(v));
    }
};

/* Unpack W 32-bit words (16-bit types: two elements a word) into floats. */
template <int DT, int W>
SYM_DEV void unpack(const uint32_t *w, float *f) {
#pragma unroll
    for (int i = 0; i < W; i++) {
        if (sym_dt<DT>::size == 4) {
            f[i] = __uint_as_float(w[i]);
        } else {
            f[2 * i] = sym_dt<DT>::from_bits(w[i] & 0xffffu);
            f[2 * i + 1] = sym_dt<DT>::from_bits(w[i] >> 16);
        }
    }
}
template <int DT, int W>
SYM_DEV void pack(const float *f, uint32_t *w) {
#pragma unroll
    for (int i = 0; i < W; i++) {
        if (sym_dt<DT>::size == 4)
            w[i] = __float_as_uint(f[i]);
        else
            w[i] = sym_dt<DT>::to_bits(f[2 * i]) | (sym_dt<DT>::to_bits(f[2 * i + 1]) << 16);
    }
}

/* ---- reduction operators (op is uniform across the block) ---- */

SYM_DEV float op1(int op, float a, float b) {
    switch (op) {
    case SHMEMX_MIN: return fminf(a, b);
    case SHMEMX_MAX: return fmaxf(a, b);
    case SHMEMX_PROD: return a * b;
    default: return a + b; /* SUM, AVG */
    }
}
template <int N>
SYM_DEV void opv(int op, float *acc, const float *x) {
    switch (op) {
    case SHMEMX_MIN:
#pragma unroll
        for (int i = 0; i < N; i++) acc[i] = fminf(acc[i], x[i]);
        break;
    case SHMEMX_MAX:
#pragma unroll
        for (int i = 0; i < N; i++) acc[i] = fmaxf(acc[i], x[i]);
        break;
    case SHMEMX_PROD:
#pragma unroll
        for (int i = 0; i < N; i++) acc[i] *= x[i];
        break;
    default:
#pragma unroll
        for (int i = 0; i < N; i++) acc[i] += x[i];
    }
}
template <int N>
SYM_DEV void opfinish(int op, int npes, float *acc) {
    if (op == SHMEMX_AVG) {
        float d = (float)npes;
#pragma unroll
        for (int i = 0; i < N; i++) acc[i] = acc[i] / d;
    }
}

/* ---- flags (system scope: the writer is another GPU) ---- */

SYM_DEV uint64_t ld_volatile(const uint64_t *p) {
    uint64_t v;
    asm volatile("ld.volatile.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}
SYM_DEV uint64_t ld_acquire(const uint64_t *p) {
    uint64_t v;
    asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}
SYM_DEV void st_release(uint64_t *p, uint64_t v) {
    asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
SYM_DEV void st_relaxed(uint64_t *p, uint64_t v) {
    asm volatile("st.relaxed.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
SYM_DEV unsigned long long globaltimer(void) {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

/* Wait until *p >= want: poll with volatile loads, then one acquire load so
 * what the writer stored before its release is visible. A wait longer than the
 * timeout means the PEs disagree about which collective comes next: say so
 * and trap. */
SYM_DEV void wait_ge(const uint64_t *p, uint64_t want, const struct sym_gpu_args &a,
                     const char *what, int peer) {
    uint64_t v = ld_volatile(p);
    if (v < want) {
        unsigned long long t0 = globaltimer();
        unsigned spins = 0;
        while ((v = ld_volatile(p)) < want) {
            if (a.timeout_ns && (++spins & 1023) == 0 && globaltimer() - t0 > a.timeout_ns) {
                printf("symtrain: PE %d: GPU collective stuck: block %d waited %.0f s for %s "
                       "from PE %d (have %#llx, want %#llx); do all members of the team call "
                       "the same collectives in the same order?\n",
                       a.pes[a.me], (int)blockIdx.x, (double)a.timeout_ns * 1e-9, what,
                       a.pes[peer],
                       (unsigned long long)v, (unsigned long long)want);
                __trap();
            }
        }
    }
    (void)ld_acquire(p);
}

/* Programmatic dependent launch (sm_90): the next kernel on the stream may be
 * launched while this one runs, but nothing here touches memory before the
 * previous grid has completed and its writes are visible. */
SYM_DEV void grid_dep_wait(void) { asm volatile("griddepcontrol.wait;" ::: "memory"); }
SYM_DEV void grid_dep_launch(void) {
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
}

/* The block's epoch for this collective (see gpu.h). Every kernel starts
 * here: wait for the previous grid (programmatic launch), let the next one be
 * launched, read the epoch. */
SYM_DEV uint64_t block_epoch(const struct sym_gpu_args &a) {
    grid_dep_wait();
    grid_dep_launch();
    return *(volatile uint64_t *)&a.clock[blockIdx.x].epoch + 1;
}

/* The block's step before this collective (after block_epoch). */
SYM_DEV uint64_t block_step(const struct sym_gpu_args &a) {
    return *(volatile uint64_t *)&a.clock[blockIdx.x].step;
}

/* The flag value of iteration i, step s0 before the collective: s0 + i + 1. */
SYM_DEV uint64_t step_val(uint64_t s0, int i) { return s0 + (uint64_t)i + 1; }

/* Start of a collective for block b on NVLink: tell every peer "my stream
 * has reached epoch e here" (ACK(b, me) = e), so I am done with region b and
 * dest may be written. A relaxed store: the previous kernel, and every read it
 * made of region b, is complete. */
SYM_DEV void ack_peers(const struct sym_gpu_args &a, uint64_t e) {
    int t = threadIdx.x;
    if (t < a.npes && t != a.me) st_relaxed(a.peer_flags[t] + FLAG_ACK(blockIdx.x, a.me), e);
}

/* End of a collective for this block: record the epoch, and the step past
 * every value this collective's flags used (s0 + 1 .. s0 + max(iters, 1)). */
SYM_DEV void block_end(const struct sym_gpu_args &a, uint64_t e, uint64_t s0) {
    __syncthreads();
    if (threadIdx.x == 0) {
        a.clock[blockIdx.x].epoch = e;
        a.clock[blockIdx.x].step = s0 + (uint64_t)a.iters + 1;
    }
}

/* Threads 0..npes-1 wait until each peer in `mask` has started epoch `e`
 * (its ACK >= e), then the block synchronises. No acquire: nothing is read on
 * the strength of it, only written. */
SYM_DEV void wait_started(const struct sym_gpu_args &a, uint64_t e, uint64_t mask,
                          const char *what) {
    int t = threadIdx.x;
    if (t < a.npes && t != a.me && ((mask >> t) & 1)) {
        const uint64_t *f = a.flags + FLAG_ACK(blockIdx.x, t);
        if (ld_volatile(f) < e) wait_ge(f, e, a, what, t);
    }
    __syncthreads();
}

/* Threads 0..npes-1 wait for peer t's flag at `idx` to reach `want` (peers in
 * `mask` only), then the block synchronises. */
SYM_DEV void wait_peers(const struct sym_gpu_args &a, size_t idx_base, int per_peer,
                        uint64_t want, const char *what, uint64_t mask) {
    int t = threadIdx.x;
    if (t < a.npes && t != a.me && ((mask >> t) & 1))
        wait_ge(a.flags + idx_base + (size_t)per_peer * t, want, a, what, t);
    __syncthreads();
}

/* After a block-wide barrier: raise flag `idx` on each peer in mask with a
 * release store (the barrier makes the block's earlier stores part of it). */
SYM_DEV void signal_peers(const struct sym_gpu_args &a, size_t idx, uint64_t val, uint64_t mask) {
    int t = threadIdx.x;
    if (t < a.npes && t != a.me && ((mask >> t) & 1)) st_release(a.peer_flags[t] + idx, val);
}

/* ---- one-shot lines: 8 data bytes + the flag twice, in one 16-byte store ---- */

/* The 32-bit flag of epoch e's lines: its low bits, never 0 (a read line). */
SYM_DEV uint32_t ll_flag(uint64_t e) {
    uint32_t f = (uint32_t)e;
    return f ? f : 1;
}

SYM_DEV void ll_store(uint8_t *line, uint2 v, uint32_t flag) {
    asm volatile("st.volatile.global.v4.u32 [%0], {%1,%2,%3,%4};" ::"l"(line), "r"(v.x),
                 "r"(flag), "r"(v.y), "r"(flag)
                 : "memory");
}
/* Wait for the line to carry `flag` in both halves, read it, and zero it. */
SYM_DEV uint2 ll_load(uint8_t *line, uint32_t flag, const struct sym_gpu_args &a, int peer) {
    uint32_t x, f0, y, f1;
    unsigned long long t0 = 0;
    unsigned spins = 0;
    for (;;) {
        asm volatile("ld.volatile.global.v4.u32 {%0,%1,%2,%3}, [%4];"
                     : "=r"(x), "=r"(f0), "=r"(y), "=r"(f1)
                     : "l"(line)
                     : "memory");
        if (f0 == flag && f1 == flag) break; /* fresh: written in this collective */
        if (a.timeout_ns && (++spins & 1023) == 0) {
            if (!t0)
                t0 = globaltimer();
            else if (globaltimer() - t0 > a.timeout_ns) {
                printf("symtrain: PE %d: GPU collective stuck: block %d waited %.0f s for "
                       "one-shot data from PE %d (flag %u, want %u); do all members of the "
                       "team call the same collectives in the same order?\n",
                       a.pes[a.me], (int)blockIdx.x, (double)a.timeout_ns * 1e-9, a.pes[peer],
                       f0, flag);
                __trap();
            }
        }
    }
    /* Zero it, so it can never pass for a later collective's line, however
     * many epochs go by before this slot is written again (the next writer
     * waits for our ACK of the collective after this one: our kernel, this
     * store included, has completed by then). */
    asm volatile("st.volatile.global.v4.u32 [%0], {%1,%1,%1,%1};" ::"l"(line), "r"(0u) : "memory");
    return make_uint2(x, y);
}

/* Bytes [8l, 8l+8) of a `len`-byte range as one line (zero past the end). */
SYM_DEV uint2 line_get(const uint8_t *base, size_t len, size_t l) {
    size_t off = l * 8;
    if (off + 8 <= len && (((uintptr_t)(base + off)) & 7) == 0)
        return __ldcg((const uint2 *)(base + off));
    uint32_t w[2] = {0, 0};
    for (int k = 0; k < 8 && off + k < len; k++)
        w[k >> 2] |= (uint32_t)base[off + k] << (8 * (k & 3));
    return make_uint2(w[0], w[1]);
}
SYM_DEV void line_put(uint8_t *base, size_t len, size_t l, uint2 v) {
    size_t off = l * 8;
    if (off + 8 <= len && (((uintptr_t)(base + off)) & 7) == 0) {
        *(uint2 *)(base + off) = v;
        return;
    }
    uint32_t w[2] = {v.x, v.y};
    for (int k = 0; k < 8 && off + k < len; k++)
        base[off + k] = (uint8_t)(w[k >> 2] >> (8 * (k & 3)));
}

/* ---- block-wide copy: one source, up to MAXOUT destinations ---- */

template <typename T, int U, int MAXOUT>
SYM_DEV void copy_w(uint8_t *const *out, int nout, const uint8_t *in, size_t n) {
    const T *s = (const T *)in;
    size_t T_ = blockDim.x;
    size_t i = threadIdx.x;
    for (; i + (U - 1) * T_ < n; i += U * T_) {
        T v[U];
#pragma unroll
        for (int u = 0; u < U; u++) v[u] = __ldcg(s + i + u * T_);
#pragma unroll
        for (int o = 0; o < MAXOUT; o++)
            if (o < nout) {
#pragma unroll
                for (int u = 0; u < U; u++) ((T *)out[o])[i + u * T_] = v[u];
            }
    }
    for (; i < n; i += T_) {
        T v = __ldcg(s + i);
#pragma unroll
        for (int o = 0; o < MAXOUT; o++)
            if (o < nout) ((T *)out[o])[i] = v;
    }
}

/* out[o][0..bytes) = in[0..bytes) for every o < nout <= MAXOUT. */
template <int MAXOUT>
SYM_DEV void copy_bytes(uint8_t *const *out, int nout, const uint8_t *in, size_t bytes) {
    if (bytes == 0 || nout == 0) return;
    uintptr_t al = (uintptr_t)in | bytes;
    for (int o = 0; o < nout; o++) al |= (uintptr_t)out[o];
    if ((al & 15) == 0) {
        copy_w<uint4, 4, MAXOUT>(out, nout, in, bytes / 16);
    } else if ((al & 3) == 0) {
        copy_w<uint32_t, 4, MAXOUT>(out, nout, in, bytes / 4);
    } else if ((al & 1) == 0) {
        copy_w<unsigned short, 4, MAXOUT>(out, nout, in, bytes / 2);
    } else {
        copy_w<unsigned char, 4, MAXOUT>(out, nout, in, bytes);
    }
}
SYM_DEV void copy1(uint8_t *out, const uint8_t *in, size_t bytes) {
    uint8_t *o[1] = {out};
    copy_bytes<1>(o, 1, in, bytes);
}

/* ---- block-wide reduce: n inputs (in PE order), up to MAXOUT outputs ---- */

/* out[o][i] = op(in[0][i], ..., in[nin-1][i]) (then /npes for AVG), i < w
 * elements, nin <= MAXIN, nout <= MAXOUT (compile-time bounds keep the
 * pointers and loaded vectors in registers). 16-byte vectors when every
 * pointer is 16-byte aligned, then an element tail; element-wise otherwise. */
/* One 16-byte vector of the result from the inputs' vectors x[0..nin). */
template <int DT, int MAXIN>
SYM_DEV uint4 reduce_vec(const uint4 *x, int nin, int op, int npes) {
    constexpr int EPV = 16 / sym_dt<DT>::size;
    float acc[EPV], t[EPV];
    unpack<DT, 4>((const uint32_t *)&x[0], acc);
#pragma unroll
    for (int q = 1; q < MAXIN; q++)
        if (q < nin) {
            unpack<DT, 4>((const uint32_t *)&x[q], t);
            opv<EPV>(op, acc, t);
        }
    opfinish<EPV>(op, npes, acc);
    uint4 r;
    pack<DT, 4>(acc, (uint32_t *)&r);
    return r;
}

template <int DT, int MAXIN, int MAXOUT>
SYM_DEV void reduce_elems(const uint8_t *const *in, int nin, uint8_t *const *out, int nout,
                          size_t w, int op, int npes) {
    constexpr int ES = sym_dt<DT>::size;
    constexpr int EPV = 16 / ES;
    if (w == 0) return;
    uintptr_t al = 0;
    for (int q = 0; q < nin; q++) al |= (uintptr_t)in[q];
    for (int o = 0; o < nout; o++) al |= (uintptr_t)out[o];
    size_t nv = (al & 15) == 0 ? w / EPV : 0;
    size_t T_ = blockDim.x;
    size_t v = threadIdx.x;
    /* two vectors a thread per trip: twice the loads in flight */
    for (; v + T_ < nv; v += 2 * T_) {
        uint4 x0[MAXIN], x1[MAXIN];
#pragma unroll
        for (int q = 0; q < MAXIN; q++)
            if (q < nin) {
                x0[q] = __ldcg((const uint4 *)in[q] + v);
                x1[q] = __ldcg((const uint4 *)in[q] + v + T_);
            }
        uint4 r0 = reduce_vec<DT, MAXIN>(x0, nin, op, npes);
        uint4 r1 = reduce_vec<DT, MAXIN>(x1, nin, op, npes);
#pragma unroll
        for (int o = 0; o < MAXOUT; o++)
            if (o < nout) {
                ((uint4 *)out[o])[v] = r0;
                ((uint4 *)out[o])[v + T_] = r1;
            }
    }
    for (; v < nv; v += T_) {
        uint4 x[MAXIN];
#pragma unroll
        for (int q = 0; q < MAXIN; q++)
            if (q < nin) x[q] = __ldcg((const uint4 *)in[q] + v);
        uint4 r = reduce_vec<DT, MAXIN>(x, nin, op, npes);
#pragma unroll
        for (int o = 0; o < MAXOUT; o++)
            if (o < nout) ((uint4 *)out[o])[v] = r;
    }
    for (size_t i = nv * EPV + threadIdx.x; i < w; i += T_) {
        float acc = sym_dt<DT>::load(in[0] + i * ES);
        for (int q = 1; q < nin; q++) acc = op1(op, acc, sym_dt<DT>::load(in[q] + i * ES));
        opfinish<1>(op, npes, &acc);
        for (int o = 0; o < nout; o++) sym_dt<DT>::store(out[o] + i * ES, acc);
    }
}

/* ---- launching (host) ---- */

/* Launch `fn` with programmatic stream serialisation (the kernels call
 * griddepcontrol.wait before touching memory, so this only hides launch
 * latency). Where the attribute is refused, launch plainly from then on. */
static inline cudaError_t sym_launch(const void *fn, int blocks, int threads, cudaStream_t st,
                                     void **args) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3((unsigned)blocks);
    cfg.blockDim = dim3((unsigned)threads);
    cfg.stream = st;
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    if (sym__gpu.pdl) {
        cfg.attrs = attr;
        cfg.numAttrs = 1;
        cudaError_t e = cudaLaunchKernelExC(&cfg, fn, args);
        if (e == cudaSuccess) return e;
        (void)cudaGetLastError();
        sym__gpu.pdl = 0;
    }
    cfg.attrs = NULL;
    cfg.numAttrs = 0;
    return cudaLaunchKernelExC(&cfg, fn, args);
}

/* ---- partitions ---- */

/* Part p of an n-way split of `count` elements. The all-reduce's own split
 * keeps parts a multiple of 16 bytes (so vectors stay aligned); the
 * reduce-scatter's is the public one (shmemx_block_range). */
static __host__ __device__ __forceinline__ void part_range(int coll, size_t count, int n, int p,
                                                           int es, size_t *off, size_t *len) {
    size_t N = (size_t)n, P = (size_t)p;
    if (coll == SYM_GPU_REDUCE_SCATTER) {
        size_t q = count / N, rem = count % N;
        *off = P * q + (P < rem ? P : rem);
        *len = q + (P < rem ? 1 : 0);
    } else {
        size_t epv = 16 / (size_t)es;
        size_t pl = ((count + N - 1) / N + epv - 1) / epv * epv;
        size_t o = P * pl < count ? P * pl : count;
        *off = o;
        *len = count - o < pl ? count - o : pl;
    }
}

/* The longest part of that split. */
static __host__ __device__ __forceinline__ size_t part_max(int coll, size_t count, int n,
                                                          int es) {
    size_t off, len;
    part_range(coll, count, n, 0, es, &off, &len);
    return len;
}

#endif
