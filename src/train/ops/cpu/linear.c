/*
 * linear.c — the fully connected layer, y = x @ w^T + b, and its backward.
 *
 * w is stored (O,I) as in PyTorch, so the forward multiplies by a transposed
 * view of it and the input gradient by w itself; no copies either way.
 */
#include <string.h>

#include <symtrain/nn.h>

#include "internal.h"

static int check2(const sym_tensor_t *t, int64_t r, int64_t c, const char *what) {
    if (t->ndim != 2 || t->shape[0] != r || t->shape[1] != c)
        return sym__error(SYM_EINVAL, "linear: %s should be (%lld,%lld), is (%lld,%lld)", what,
                          (long long)r, (long long)c, (long long)t->shape[0],
                          (long long)(t->ndim > 1 ? t->shape[1] : 1));
    return SYM_OK;
}

/* y (B,O) = x (B,I) @ w^T (I,O) + b (O) */
int sym_linear_forward(const sym_tensor_t *x, const sym_tensor_t *w, const sym_tensor_t *b,
                       sym_tensor_t *y) {
    int64_t B = x->shape[0], I = x->shape[1], O = w->shape[0];
    int rc;
    if ((rc = check2(w, O, I, "w")) || (rc = check2(y, B, O, "y"))) return rc;
    if (b->ndim != 1 || b->shape[0] != O)
        return sym__error(SYM_EINVAL, "linear: b should have %lld elements", (long long)O);
    for (int64_t r = 0; r < B; r++) memcpy(y->data + r * y->stride[0], b->data, (size_t)O * 4);
    sym_tensor_t wt = sym_tensor_t2(w);
    return sym_matmul(y, x, &wt, 1.0f, 1.0f);
}

/* dw (O,I) = dy^T (O,B) @ x (B,I); db (O) = sum over rows of dy (B,O) */
int sym_linear_backward_params(const sym_tensor_t *x, const sym_tensor_t *dy, sym_tensor_t *dw,
                               sym_tensor_t *db) {
    int64_t B = x->shape[0], I = x->shape[1], O = dy->shape[1];
    int rc;
    if ((rc = check2(dy, B, O, "dy")) || (rc = check2(dw, O, I, "dw"))) return rc;
    if (db->ndim != 1 || db->shape[0] != O)
        return sym__error(SYM_EINVAL, "linear: db should have %lld elements", (long long)O);
    sym_tensor_t dyt = sym_tensor_t2(dy);
    if ((rc = sym_matmul(dw, &dyt, x, 1.0f, 0.0f))) return rc;
    memset(db->data, 0, (size_t)O * sizeof(float));
    for (int64_t r = 0; r < B; r++) {
        const float *g = dy->data + r * dy->stride[0];
        for (int64_t o = 0; o < O; o++) db->data[o] += g[o];
    }
    return SYM_OK;
}

/* dx (B,I) = dy (B,O) @ w (O,I) */
int sym_linear_backward_input(const sym_tensor_t *w, const sym_tensor_t *dy, sym_tensor_t *dx) {
    int rc;
    if ((rc = check2(dx, dy->shape[0], w->shape[1], "dx"))) return rc;
    return sym_matmul(dx, dy, w, 1.0f, 0.0f);
}
