/*
 * residual.c — the GPT's residual connection, out = a + b, and its backward,
 * which hands the output gradient to both branches (adding, as every backward
 * does: nn.h).
 *
 * Both loops are element-wise and split over the threads. Each element is
 * read before anything is written, so out may be a or b in the forward, and
 * in the backward da may be db (it then gains 2 dout) or dout itself.
 */
#include <stddef.h>

#include <symtrain/nn.h>

#include "core/parallel.h"

typedef struct {
    float *out, *da, *db;
    const float *a, *b, *dout;
} res_args_t;

/* ---- forward ---- */

static void res_fwd(size_t lo, size_t hi, void *arg) {
    const res_args_t *r = arg;
    for (size_t i = lo; i < hi; i++) r->out[i] = r->a[i] + r->b[i];
}

/* out (n) = a (n) + b (n) */
void sym_residual_forward(float *out, const float *a, const float *b, size_t n) {
    res_args_t r = {0};
    r.out = out;
    r.a = a;
    r.b = b;
    sym__parallel_for(n, n, res_fwd, &r);
}

/* ---- backward ---- */

static void res_bwd(size_t lo, size_t hi, void *arg) {
    const res_args_t *r = arg;
    for (size_t i = lo; i < hi; i++) {
        float g = r->dout[i];
        r->da[i] += g;
        r->db[i] += g;
    }
}

/* da (n) += dout (n), db (n) += dout */
void sym_residual_backward(float *da, float *db, const float *dout, size_t n) {
    res_args_t r = {0};
    r.da = da;
    r.db = db;
    r.dout = dout;
    sym__parallel_for(n, n, res_bwd, &r);
}
