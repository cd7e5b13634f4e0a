/*
 * tensor.c — tensor descriptors: allocation from a pool, views, and the
 * stride-aware matrix product on top of sym_gemm (blas.c).
 */
#include <string.h>

#include <symtrain/tensor.h>

#include "internal.h"

/* ---- descriptors ---- */

static void set_contiguous(sym_tensor_t *t, int ndim, const int64_t *shape) {
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
    t->dtype = SYM_F32;
    t->device = SYM_CPU;
}

int sym_tensor_alloc(sym_tensor_t *t, sym_pool_t *pool, int ndim, const int64_t *shape) {
    memset(t, 0, sizeof *t);
    if (ndim < 1 || ndim > SYM_MAX_DIMS)
        return sym__error(SYM_EINVAL, "a tensor has 1 to %d dimensions, not %d", SYM_MAX_DIMS,
                          ndim);
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] < 0) return sym__error(SYM_EINVAL, "negative tensor dimension %lld",
                                            (long long)shape[d]);
        n *= shape[d];
    }
    set_contiguous(t, ndim, shape);
    t->data = sym_pool_alloc(pool, (size_t)n * sizeof(float));
    if (!t->data) return SYM_ENOMEM; /* the pool said why */
    t->pool = pool;
    return SYM_OK;
}

void sym_tensor_free(sym_tensor_t *t) {
    if (t->pool && t->data) sym_pool_free(t->pool, t->data);
    memset(t, 0, sizeof *t);
}

sym_tensor_t sym_tensor_view(float *data, int ndim, const int64_t *shape) {
    sym_tensor_t t;
    memset(&t, 0, sizeof t);
    set_contiguous(&t, ndim, shape);
    t.data = data;
    return t;
}

sym_tensor_t sym_tensor_2d(float *data, int64_t rows, int64_t cols) {
    int64_t shape[2] = {rows, cols};
    return sym_tensor_view(data, 2, shape);
}

sym_tensor_t sym_tensor_rows(const sym_tensor_t *t, int64_t first, int64_t count) {
    sym_tensor_t v = *t;
    v.pool = NULL;
    v.data = t->data + first * t->stride[0];
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
static int layout(const sym_tensor_t *t, int *trans, int *ld) {
    if (t->ndim != 2) return -1;
    if (t->stride[1] == 1 || t->shape[1] == 1) {
        *trans = 0;
        *ld = (int)(t->stride[0] > t->shape[1] ? t->stride[0] : t->shape[1]);
        return 0;
    }
    if (t->stride[0] == 1 || t->shape[0] == 1) {
        *trans = 1;
        *ld = (int)(t->stride[1] > t->shape[0] ? t->stride[1] : t->shape[0]);
        return 0;
    }
    return -1;
}

int sym_matmul(sym_tensor_t *c, const sym_tensor_t *a, const sym_tensor_t *b, float alpha,
               float beta) {
    int ta, tb, tc, lda, ldb, ldc;
    if (layout(a, &ta, &lda) || layout(b, &tb, &ldb) || layout(c, &tc, &ldc) || tc)
        return sym__error(SYM_EINVAL, "sym_matmul: operands must be 2-D with a unit stride "
                                      "(and the result row-major)");
    int64_t m = a->shape[0], k = a->shape[1], n = b->shape[1];
    if (b->shape[0] != k || c->shape[0] != m || c->shape[1] != n)
        return sym__error(SYM_EINVAL,
                          "sym_matmul: shapes do not chain: (%lld,%lld) @ (%lld,%lld) -> "
                          "(%lld,%lld)",
                          (long long)m, (long long)k, (long long)b->shape[0], (long long)n,
                          (long long)c->shape[0], (long long)c->shape[1]);
    sym_gemm(ta, tb, (int)m, (int)n, (int)k, alpha, a->data, lda, b->data, ldb, beta, c->data,
             ldc);
    return SYM_OK;
}
