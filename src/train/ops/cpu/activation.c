/*
 * activation.c — element-wise activations and their derivatives: ReLU and the
 * exact GELU, x * Phi(x) with Phi the standard normal CDF (through erff).
 */
#include <math.h>
#include <stddef.h>

#include <symtrain/nn.h>

#include "core/parallel.h"

#define INV_SQRT2 0.70710678118654752440f
#define INV_SQRT_2PI 0.39894228040143267794f

/* The loops, as ranges for sym__parallel_for. */
typedef struct {
    const float *x, *dy;
    float *y;
} act_args_t;

static void relu_fwd(size_t lo, size_t hi, void *arg) {
    const act_args_t *a = arg;
    for (size_t i = lo; i < hi; i++) a->y[i] = a->x[i] > 0.0f ? a->x[i] : 0.0f;
}
static void relu_bwd(size_t lo, size_t hi, void *arg) {
    const act_args_t *a = arg;
    for (size_t i = lo; i < hi; i++) a->y[i] = a->x[i] > 0.0f ? a->dy[i] : 0.0f;
}
static void gelu_fwd(size_t lo, size_t hi, void *arg) {
    const act_args_t *a = arg;
    for (size_t i = lo; i < hi; i++) a->y[i] = 0.5f * a->x[i] * (1.0f + erff(a->x[i] * INV_SQRT2));
}
/* d/dx [x Phi(x)] = Phi(x) + x phi(x) */
static void gelu_bwd(size_t lo, size_t hi, void *arg) {
    const act_args_t *a = arg;
    for (size_t i = lo; i < hi; i++) {
        float v = a->x[i];
        float cdf = 0.5f * (1.0f + erff(v * INV_SQRT2));
        float pdf = INV_SQRT_2PI * expf(-0.5f * v * v);
        a->y[i] = a->dy[i] * (cdf + v * pdf);
    }
}

void sym_relu_forward(const float *x, float *y, size_t n) {
    act_args_t a = {x, NULL, y};
    sym__parallel_for(n, n, relu_fwd, &a);
}
void sym_relu_backward(const float *x, const float *dy, float *dx, size_t n) {
    act_args_t a = {x, dy, dx};
    sym__parallel_for(n, n, relu_bwd, &a);
}
void sym_gelu_forward(const float *x, float *y, size_t n) {
    act_args_t a = {x, NULL, y};
    sym__parallel_for(n, n, gelu_fwd, &a);
}
void sym_gelu_backward(const float *x, const float *dy, float *dx, size_t n) {
    act_args_t a = {x, dy, dx};
    sym__parallel_for(n, n, gelu_bwd, &a);
}

const char *sym_act_name(sym_act_t act) { return act == SYM_ACT_GELU ? "gelu" : "relu"; }
