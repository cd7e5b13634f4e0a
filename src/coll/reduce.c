/*
 * reduce.c — the one reduction engine: a kernel per (element type, operation),
 * used by the OpenSHMEM reductions and the training collectives alike.
 *
 * A kernel combines nin input vectors into one, a block at a time: the block's
 * accumulator lives on the stack (so the output may alias an input and the
 * compiler sees no aliasing), every input is folded in, the optional average is
 * applied, and the block is stored. Blocks stay in L1. fp16 and bf16 are
 * widened to fp32 for the whole fold and rounded once (F16C where the CPU has
 * it). Kernels are cloned for AVX2 and chosen at load time.
 */
#include <complex.h>
#include <string.h>

#include "coll.h"
#include "half.h"

#define BLK 512

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define SYM_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define SYM_CLONES
#endif

/* Copy a finished block to an output: plain stores, or (stream) non-temporal
 * 32-byte stores for the aligned middle. */
#if defined(__x86_64__)
#include <immintrin.h>
__attribute__((target("avx"))) static void store_stream(char *dst, const char *src, size_t len) {
    size_t head = (32 - ((uintptr_t)dst & 31)) & 31;
    if (head > len) head = len;
    memcpy(dst, src, head);
    size_t i = head;
    for (; i + 32 <= len; i += 32)
        _mm256_stream_si256((__m256i *)(dst + i), _mm256_loadu_si256((const __m256i *)(src + i)));
    memcpy(dst + i, src + i, len - i);
}
static int have_avx;
__attribute__((constructor)) static void detect_avx(void) { have_avx = __builtin_cpu_supports("avx"); }
static inline void store_block(void *dst, const void *src, size_t len, int stream) {
    if (stream && have_avx)
        store_stream(dst, src, len);
    else
        memcpy(dst, src, len);
}
static inline void store_done(int stream) {
    if (stream) _mm_sfence(); /* streamed stores are ordered before what follows */
}
#else
static inline void store_block(void *dst, const void *src, size_t len, int stream) {
    (void)stream;
    memcpy(dst, src, len);
}
static inline void store_done(int stream) { (void)stream; }
#endif

#define OP_SUM(a, b) ((a) + (b))
#define OP_PROD(a, b) ((a) * (b))
#define OP_MIN(a, b) ((b) < (a) ? (b) : (a))
#define OP_MAX(a, b) ((b) > (a) ? (b) : (a))
#define OP_AND(a, b) ((a) & (b))
#define OP_OR(a, b) ((a) | (b))
#define OP_XOR(a, b) ((a) ^ (b))

/* A kernel for element type T whose values combine with OP. */
#define KERNEL(name, T, OP)                                                          \
    SYM_CLONES static void name(void *const *out, int nout, const void *const *in,   \
                                int nin, size_t n, int avg_n, int stream) {          \
        for (size_t b = 0; b < n; b += BLK) {                                        \
            size_t m = n - b < BLK ? n - b : BLK;                                    \
            T acc[BLK];                                                              \
            const T *a0 = (const T *)in[0] + b;                                      \
            if (nin == 1) {                                                          \
                for (size_t j = 0; j < m; j++) acc[j] = a0[j];                       \
            } else {                                                                 \
                const T *a1 = (const T *)in[1] + b;                                  \
                for (size_t j = 0; j < m; j++) acc[j] = OP(a0[j], a1[j]);            \
            }                                                                        \
            for (int k = 2; k < nin; k++) {                                          \
                const T *ak = (const T *)in[k] + b;                                  \
                for (size_t j = 0; j < m; j++) acc[j] = OP(acc[j], ak[j]);           \
            }                                                                        \
            if (avg_n > 0)                                                           \
                for (size_t j = 0; j < m; j++) acc[j] = (T)(acc[j] / (T)avg_n);      \
            for (int q = 0; q < nout; q++)                                           \
                store_block((T *)out[q] + b, acc, m * sizeof(T), stream);            \
        }                                                                            \
        store_done(stream);                                                          \
    }

/* Real floating types: arithmetic and ordering. */
#define REAL_KERNELS(tag, T)                                                         \
    KERNEL(tag##_sum, T, OP_SUM)                                                     \
    KERNEL(tag##_prod, T, OP_PROD)                                                   \
    KERNEL(tag##_min, T, OP_MIN)                                                     \
    KERNEL(tag##_max, T, OP_MAX)
REAL_KERNELS(f32, float)
REAL_KERNELS(f64, double)
REAL_KERNELS(ldbl, long double)

/* Integer types: those and the bitwise operations. */
#define INT_KERNELS(tag, T)                                                          \
    REAL_KERNELS(tag, T)                                                             \
    KERNEL(tag##_and, T, OP_AND)                                                     \
    KERNEL(tag##_or, T, OP_OR)                                                       \
    KERNEL(tag##_xor, T, OP_XOR)
INT_KERNELS(i8, int8_t)
INT_KERNELS(i16, int16_t)
INT_KERNELS(i32, int32_t)
INT_KERNELS(i64, int64_t)
INT_KERNELS(u8, uint8_t)
INT_KERNELS(u16, uint16_t)
INT_KERNELS(u32, uint32_t)
INT_KERNELS(u64, uint64_t)

/* Complex: sum and product only. */
KERNEL(c32_sum, float _Complex, OP_SUM)
KERNEL(c32_prod, float _Complex, OP_PROD)
KERNEL(c64_sum, double _Complex, OP_SUM)
KERNEL(c64_prod, double _Complex, OP_PROD)

/* ---- half types: widen a block to fp32, fold, round back once ---- */

typedef void (*widen_fn)(float *dst, const uint16_t *src, size_t m);
typedef void (*narrow_fn)(uint16_t *dst, const float *src, size_t m);

SYM_CLONES static void bf16_widen(float *dst, const uint16_t *src, size_t m) {
    for (size_t j = 0; j < m; j++) dst[j] = sym__bf16_to_f32(src[j]);
}
SYM_CLONES static void bf16_narrow(uint16_t *dst, const float *src, size_t m) {
    for (size_t j = 0; j < m; j++) dst[j] = sym__f32_to_bf16(src[j]);
}
static void f16_widen_sw(float *dst, const uint16_t *src, size_t m) {
    for (size_t j = 0; j < m; j++) dst[j] = sym__f16_to_f32(src[j]);
}
static void f16_narrow_sw(uint16_t *dst, const float *src, size_t m) {
    for (size_t j = 0; j < m; j++) dst[j] = sym__f32_to_f16(src[j]);
}

#if defined(__x86_64__)
__attribute__((target("avx,f16c"))) static void f16_widen_hw(float *dst, const uint16_t *src,
                                                             size_t m) {
    size_t j = 0;
    for (; j + 8 <= m; j += 8)
        _mm256_storeu_ps(dst + j, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(src + j))));
    for (; j < m; j++) dst[j] = _cvtsh_ss(src[j]);
}
__attribute__((target("avx,f16c"))) static void f16_narrow_hw(uint16_t *dst, const float *src,
                                                              size_t m) {
    size_t j = 0;
    for (; j + 8 <= m; j += 8)
        _mm_storeu_si128((__m128i *)(dst + j),
                         _mm256_cvtps_ph(_mm256_loadu_ps(src + j), _MM_FROUND_TO_NEAREST_INT));
    for (; j < m; j++) dst[j] = _cvtss_sh(src[j], _MM_FROUND_TO_NEAREST_INT);
}
#endif

static widen_fn f16_widen = f16_widen_sw;
static narrow_fn f16_narrow = f16_narrow_sw;

__attribute__((constructor)) static void pick_f16_path(void) {
#if defined(__x86_64__)
    if (__builtin_cpu_supports("f16c") && __builtin_cpu_supports("avx")) {
        f16_widen = f16_widen_hw;
        f16_narrow = f16_narrow_hw;
    }
#endif
}

#define HALF_KERNEL(name, WIDEN, NARROW, OP)                                         \
    SYM_CLONES static void name(void *const *out, int nout, const void *const *in,   \
                                int nin, size_t n, int avg_n, int stream) {          \
        for (size_t b = 0; b < n; b += BLK) {                                        \
            size_t m = n - b < BLK ? n - b : BLK;                                    \
            float acc[BLK], x[BLK];                                                  \
            WIDEN(acc, (const uint16_t *)in[0] + b, m);                              \
            for (int k = 1; k < nin; k++) {                                          \
                WIDEN(x, (const uint16_t *)in[k] + b, m);                            \
                for (size_t j = 0; j < m; j++) acc[j] = OP(acc[j], x[j]);            \
            }                                                                        \
            if (avg_n > 0)                                                           \
                for (size_t j = 0; j < m; j++) acc[j] /= (float)avg_n;               \
            uint16_t h[BLK];                                                         \
            NARROW(h, acc, m);                                                       \
            for (int q = 0; q < nout; q++)                                           \
                store_block((uint16_t *)out[q] + b, h, m * 2, stream);               \
        }                                                                            \
        store_done(stream);                                                          \
    }
#define HALF_KERNELS(tag, WIDEN, NARROW)                                             \
    HALF_KERNEL(tag##_sum, WIDEN, NARROW, OP_SUM)                                    \
    HALF_KERNEL(tag##_prod, WIDEN, NARROW, OP_PROD)                                  \
    HALF_KERNEL(tag##_min, WIDEN, NARROW, OP_MIN)                                    \
    HALF_KERNEL(tag##_max, WIDEN, NARROW, OP_MAX)
HALF_KERNELS(f16, f16_widen, f16_narrow)
HALF_KERNELS(bf16, bf16_widen, bf16_narrow)

/* ---- the table ---- */

const size_t sym__dtype_size[SYM_NTYPES] = {
    [SYM_I8] = 1,  [SYM_I16] = 2, [SYM_I32] = 4, [SYM_I64] = 8,
    [SYM_U8] = 1,  [SYM_U16] = 2, [SYM_U32] = 4, [SYM_U64] = 8,
    [SYM_F32] = 4, [SYM_F64] = 8, [SYM_LDBL] = sizeof(long double),
    [SYM_C32] = sizeof(float _Complex), [SYM_C64] = sizeof(double _Complex),
    [SYM_F16] = 2, [SYM_BF16] = 2,
};

#define ALL_OPS(tag) {tag##_sum, tag##_prod, tag##_min, tag##_max, tag##_and, tag##_or, tag##_xor}
#define REAL_OPS(tag) {tag##_sum, tag##_prod, tag##_min, tag##_max, NULL, NULL, NULL}
#define CPLX_OPS(tag) {tag##_sum, tag##_prod, NULL, NULL, NULL, NULL, NULL}

static const sym_reduce_fn table[SYM_NTYPES][SYM_NOPS] = {
    [SYM_I8] = ALL_OPS(i8),     [SYM_I16] = ALL_OPS(i16),   [SYM_I32] = ALL_OPS(i32),
    [SYM_I64] = ALL_OPS(i64),   [SYM_U8] = ALL_OPS(u8),     [SYM_U16] = ALL_OPS(u16),
    [SYM_U32] = ALL_OPS(u32),   [SYM_U64] = ALL_OPS(u64),   [SYM_F32] = REAL_OPS(f32),
    [SYM_F64] = REAL_OPS(f64),  [SYM_LDBL] = REAL_OPS(ldbl), [SYM_C32] = CPLX_OPS(c32),
    [SYM_C64] = CPLX_OPS(c64),  [SYM_F16] = REAL_OPS(f16),  [SYM_BF16] = REAL_OPS(bf16),
};

sym_reduce_fn sym__reduce_kernel(sym_dtype_t dtype, sym_op_t op) {
    if ((unsigned)dtype >= SYM_NTYPES || (unsigned)op >= SYM_NOPS) return NULL;
    return table[dtype][op];
}

int sym__redop(sym_redop_t *r, sym_dtype_t dtype, sym_op_t op, int avg) {
    r->fn = sym__reduce_kernel(dtype, op);
    if (!r->fn) return -1;
    r->dtype = dtype;
    r->op = op;
    r->avg = avg;
    r->esize = sym__dtype_size[dtype];
    return 0;
}
