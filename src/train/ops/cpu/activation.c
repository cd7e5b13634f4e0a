/*
 * activation.c — element-wise activations and their derivatives: ReLU, the
 * exact GELU, x * Phi(x) with Phi the standard normal CDF (through erff), and
 * GPT-2's tanh approximation of it, 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
 */
#include <math.h>
#include <stddef.h>

#include <symtrain/nn.h>

#include "core/parallel.h"

#define INV_SQRT2 0.70710678118654752440f
#define INV_SQRT_2PI 0.39894228040143267794f
#define SQRT_2_OVER_PI 0.79788456080286535588f
#define GELU_CUBIC 0.044715f

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

/* With u = sqrt(2/pi) (x + a x^3) and t = tanh(u):
 * y = 0.5 x (1 + t), y' = 0.5 (1 + t) + 0.5 x (1 - t^2) sqrt(2/pi) (1 + 3a x^2).
 * 1 - t^2 is taken as (1 - t)(1 + t), which keeps its digits where t nears +-1. */
static void gelu_tanh_fwd(size_t lo, size_t hi, void *arg) {
    const act_args_t *a = arg;
    for (size_t i = lo; i < hi; i++) {
        float v = a->x[i];
        float t = tanhf(SQRT_2_OVER_PI * (v + GELU_CUBIC * v * v * v));
        a->y[i] = 0.5f * v * (1.0f + t);
    }
}
static void gelu_tanh_bwd(size_t lo, size_t hi, void *arg) {
    const act_args_t *a = arg;
    for (size_t i = lo; i < hi; i++) {
        float v = a->x[i];
        float t = tanhf(SQRT_2_OVER_PI * (v + GELU_CUBIC * v * v * v));
        float sech2 = (1.0f - t) * (1.0f + t);
        float d = 0.5f * (1.0f + t) +
                  0.5f * v * sech2 * SQRT_2_OVER_PI * (1.0f + 3.0f * GELU_CUBIC * v * v);
        a->y[i] = a->dy[i] * d;
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

void sym_gelu_tanh_forward(const float *x, float *y, size_t n) {
    act_args_t a = {x, NULL, y};
    sym__parallel_for(n, n, gelu_tanh_fwd, &a);
}
void sym_gelu_tanh_backward(const float *x, const float *dy, float *dx, size_t n) {
    act_args_t a = {x, dy, dx};
    sym__parallel_for(n, n, gelu_tanh_bwd, &a);
}

const char *sym_act_name(sym_act_t act) { return act == SYM_ACT_GELU ? "gelu" : "relu"; }
