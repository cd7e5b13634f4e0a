/*
 * tensor.c — tensor descriptors: dtypes and their conversions, allocation
 * from a pool, views, and the stride-aware matrix product on top of
 * sym_gemm_ex (blas.c).
 */
#include <math.h>
#include <string.h>

#include <symtrain/tensor.h>

#include "internal.h"

/* ---- dtypes ---- */

size_t sym_dtype_size(sym_dtype_t dt) { return dt == SYM_DT_BF16 || dt == SYM_DT_F16 ? 2 : 4; }

static const char *const dtype_names[] = {"fp32", "bf16", "fp16", "int32"};

const char *sym_dtype_name(sym_dtype_t dt) {
    return (unsigned)dt < 4 ? dtype_names[dt] : "unknown";
}

int sym_dtype_parse(const char *name, sym_dtype_t *out) {
    for (int i = 0; i < 4; i++)
        if (!strcmp(name, dtype_names[i])) {
            *out = (sym_dtype_t)i;
            return SYM_OK;
        }
    return sym__error(SYM_EINVAL, "dtype '%s': use fp32, bf16, fp16 or int32", name);
}

float sym_bf16_to_f32(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

uint16_t sym_f32_to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40); /* quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1); /* round to nearest even */
    return (uint16_t)(u >> 16);
}

float sym_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff, u;
    if (e == 0x1f) {
        u = sign | 0x7f800000u | (m << 13); /* inf / NaN */
    } else if (e == 0) {
        float f = ldexpf((float)m, -24); /* zero or subnormal: m * 2^-24 */
        return sign ? -f : f;
    } else {
        u = sign | ((e + 112) << 23) | (m << 13);
    }
    float f;
    memcpy(&f, &u, 4);
    return f;
}

uint16_t sym_f32_to_f16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000);
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return sign | 0x7e00;         /* NaN */
    if (a >= 0x477ff000u) return sign | 0x7c00;        /* rounds past 65504: inf */
    if (a < 0x38800000u) {                             /* below 2^-14: subnormal or 0 */
        float v;
        memcpy(&v, &a, 4);
        return sign | (uint16_t)lrintf(v * 16777216.0f); /* v / 2^-24, ties to even */
    }
    uint32_t r = a + 0xfffu + ((a >> 13) & 1);         /* round to nearest even */
    return sign | (uint16_t)((r - (112u << 23)) >> 13);
}

void sym_convert(void *dst, sym_dtype_t to, const void *src, sym_dtype_t from, size_t n) {
    if (to == from) {
        memmove(dst, src, n * sym_dtype_size(to));
        return;
    }
    for (size_t i = 0; i < n; i++) {
        float v = from == SYM_DT_F32    ? ((const float *)src)[i]
                  : from == SYM_DT_BF16 ? sym_bf16_to_f32(((const uint16_t *)src)[i])
                                        : sym_f16_to_f32(((const uint16_t *)src)[i]);
        if (to == SYM_DT_F32)
            ((float *)dst)[i] = v;
        else if (to == SYM_DT_BF16)
            ((uint16_t *)dst)[i] = sym_f32_to_bf16(v);
        else
            ((uint16_t *)dst)[i] = sym_f32_to_f16(v);
    }
}

/* ---- descriptors ---- */

static void set_contiguous(sym_tensor_t *t, sym_dtype_t dt, int ndim, const int64_t *shape) {
    t->ndim = ndim;
    int64_t s = 1;
    for (int d = ndim - 1; d >= 0; d--) {
        t->shape[d] = shape[d];
        t->stride[d] = s;
        s *= shape[d];
    }
    for (int d = ndim; d < SYM_MAX_DIMS; d++) {
        t->shape[d] = 1;
        t->stride[d] = 0;
    }
    t->dtype = dt;
    t->elem_size = sym_dtype_size(dt);
    t->device = SYM_CPU;
}

int sym_tensor_alloc(sym_tensor_t *t, sym_pool_t *pool, int ndim, const int64_t *shape) {
    return sym_tensor_alloc_dt(t, pool, SYM_DT_F32, ndim, shape);
}

int sym_tensor_alloc_dt(sym_tensor_t *t, sym_pool_t *pool, sym_dtype_t dt, int ndim,
                        const int64_t *shape) {
    memset(t, 0, sizeof *t);
    if (ndim < 1 || ndim > SYM_MAX_DIMS)
        return sym__error(SYM_EINVAL, "a tensor has 1 to %d dimensions, not %d", SYM_MAX_DIMS,
                          ndim);
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] < 0) return sym__error(SYM_EINVAL, "negative tensor dimension %lld",
                                            (long long)shape[d]);
        if (shape[d] && n > INT64_MAX / 4 / shape[d])
            return sym__error(SYM_EINVAL, "a tensor of that shape does not fit in memory");
        n *= shape[d];
    }
    set_contiguous(t, dt, ndim, shape);
    t->data = sym_pool_alloc(pool, (size_t)n * sym_dtype_size(dt));
    if (!t->data) return SYM_ENOMEM; /* the pool said why */
    t->pool = pool;
    return SYM_OK;
}

void sym_tensor_free(sym_tensor_t *t) {
    if (t->pool && t->data) sym_pool_free(t->pool, t->data);
    memset(t, 0, sizeof *t);
}

sym_tensor_t sym_tensor_view_dt(void *data, sym_dtype_t dt, int ndim, const int64_t *shape) {
    sym_tensor_t t;
    memset(&t, 0, sizeof t);
    set_contiguous(&t, dt, ndim, shape);
    t.data = data;
    return t;
}

sym_tensor_t sym_tensor_view(float *data, int ndim, const int64_t *shape) {
    return sym_tensor_view_dt(data, SYM_DT_F32, ndim, shape);
}

sym_tensor_t sym_tensor_2d(float *data, int64_t rows, int64_t cols) {
    int64_t shape[2] = {rows, cols};
    return sym_tensor_view(data, 2, shape);
}

sym_tensor_t sym_tensor_rows(const sym_tensor_t *t, int64_t first, int64_t count) {
    sym_tensor_t v = *t;
    v.pool = NULL;
    v.data = (char *)t->data + first * t->stride[0] * (int64_t)t->elem_size;
    v.shape[0] = count;
    return v;
}

sym_tensor_t sym_tensor_t2(const sym_tensor_t *t) {
    sym_tensor_t v = *t;
    v.pool = NULL;
    v.shape[0] = t->shape[1];
    v.shape[1] = t->shape[0];
    v.stride[0] = t->stride[1];
    v.stride[1] = t->stride[0];
    return v;
}

int64_t sym_tensor_numel(const sym_tensor_t *t) {
    int64_t n = 1;
    for (int d = 0; d < t->ndim; d++) n *= t->shape[d];
    return n;
}

int sym_tensor_is_contiguous(const sym_tensor_t *t) {
    int64_t s = 1;
    for (int d = t->ndim - 1; d >= 0; d--) {
        if (t->shape[d] != 1 && t->stride[d] != s) return 0;
        s *= t->shape[d];
    }
    return 1;
}

/* ---- matrix product ---- */

/* How a 2-D operand is stored: row-major (*trans = 0, ld = stride[0]) or as a
 * transposed view of a row-major matrix (*trans = 1, ld = stride[1]). */
static int layout(const sym_tensor_t *t, int *trans, int64_t *ld) {
    if (t->ndim != 2 || t->device != SYM_CPU) return -1;
    if (t->stride[1] == 1 || t->shape[1] == 1) {
        *trans = 0;
        *ld = t->stride[0] > t->shape[1] ? t->stride[0] : t->shape[1];
        return 0;
    }
    if (t->stride[0] == 1 || t->shape[0] == 1) {
        *trans = 1;
        *ld = t->stride[1] > t->shape[0] ? t->stride[1] : t->shape[0];
        return 0;
    }
    return -1;
}

int sym_matmul(sym_tensor_t *c, const sym_tensor_t *a, const sym_tensor_t *b, float alpha,
               float beta) {
    int ta, tb, tc;
    int64_t lda, ldb, ldc;
    if (layout(a, &ta, &lda) || layout(b, &tb, &ldb) || layout(c, &tc, &ldc) || tc ||
        c->dtype != SYM_DT_F32)
        return sym__error(SYM_EINVAL, "sym_matmul: operands must be 2-D CPU tensors with a "
                                      "unit stride (and the result row-major fp32)");
    int64_t m = a->shape[0], k = a->shape[1], n = b->shape[1];
    if (b->shape[0] != k || c->shape[0] != m || c->shape[1] != n)
        return sym__error(SYM_EINVAL,
                          "sym_matmul: shapes do not chain: (%lld,%lld) @ (%lld,%lld) -> "
                          "(%lld,%lld)",
                          (long long)m, (long long)k, (long long)b->shape[0], (long long)n,
                          (long long)c->shape[0], (long long)c->shape[1]);
    return sym_gemm_ex(ta, tb, m, n, k, alpha, a->data, a->dtype, lda, b->data, b->dtype, ldb,
                       beta, c->data, ldc);
}
