/*
 * linear.c — the fully connected layer, y = x @ w^T + b, and its backward.
 *
 * w is stored (O,I) as in PyTorch, so the forward multiplies by a transposed
 * view of it and the input gradient by w itself; no copies either way. The
 * backward adds into dw, db and dx (nn.h: gradients add up).
 */
#include <stdlib.h>
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

static int check_bias(const sym_tensor_t *b, int64_t O) {
    if (b && (b->ndim != 1 || b->shape[0] != O))
        return sym__error(SYM_EINVAL, "linear: the bias should have %lld elements", (long long)O);
    return SYM_OK;
}

/* y (B,O) = x (B,I) @ w^T (I,O) + b (O); b may be NULL */
int sym_linear_forward(const sym_tensor_t *x, const sym_tensor_t *w, const sym_tensor_t *b,
                       sym_tensor_t *y) {
    int64_t B = x->shape[0], I = x->shape[1], O = w->shape[0];
    int rc;
    if ((rc = check2(w, O, I, "w")) || (rc = check2(y, B, O, "y")) || (rc = check_bias(b, O)))
        return rc;
    if (b)
        for (int64_t r = 0; r < B; r++)
            memcpy(sym_tensor_f32(y) + r * y->stride[0], b->data, (size_t)O * sizeof(float));
    sym_tensor_t wt = sym_tensor_t2(w);
    return sym_matmul(y, x, &wt, 1.0f, b ? 1.0f : 0.0f);
}

/* dw (O,I) += dy^T (O,B) @ x (B,I); db (O) += sum over rows of dy (B,O) */
int sym_linear_backward_params(const sym_tensor_t *x, const sym_tensor_t *dy, sym_tensor_t *dw,
                               sym_tensor_t *db) {
    int64_t B = x->shape[0], I = x->shape[1], O = dy->shape[1];
    int rc;
    if ((rc = check2(dy, B, O, "dy")) || (rc = check2(dw, O, I, "dw")) || (rc = check_bias(db, O)))
        return rc;
    sym_tensor_t dyt = sym_tensor_t2(dy);
    if ((rc = sym_matmul(dw, &dyt, x, 1.0f, 1.0f))) return rc;
    if (db) {
        /* Column sums in double, rows in order: the same whatever the threads. */
        double *acc = calloc((size_t)O, sizeof *acc);
        if (!acc) return sym__error(SYM_ENOMEM, "out of memory for a bias gradient");
        for (int64_t r = 0; r < B; r++) {
            const float *g = sym_tensor_f32(dy) + r * dy->stride[0];
            for (int64_t o = 0; o < O; o++) acc[o] += g[o];
        }
        float *d = sym_tensor_f32(db);
        for (int64_t o = 0; o < O; o++) d[o] += (float)acc[o];
        free(acc);
    }
    return SYM_OK;
}

/* dx (B,I) += dy (B,O) @ w (O,I) */
int sym_linear_backward_input(const sym_tensor_t *w, const sym_tensor_t *dy, sym_tensor_t *dx) {
    int rc;
    if ((rc = check2(dx, dy->shape[0], w->shape[1], "dx"))) return rc;
    return sym_matmul(dx, dy, w, 1.0f, 1.0f);
}
