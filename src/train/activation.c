/*
 * activation.c — element-wise activations and their derivatives: ReLU and the
 * exact GELU, x * Phi(x) with Phi the standard normal CDF (through erff).
 */
#include <math.h>
#include <stddef.h>

#include <symtrain/nn.h>

#define INV_SQRT2 0.70710678118654752440f
#define INV_SQRT_2PI 0.39894228040143267794f

void sym_relu_forward(const float *x, float *y, size_t n) {
    for (size_t i = 0; i < n; i++) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

void sym_relu_backward(const float *x, const float *dy, float *dx, size_t n) {
    for (size_t i = 0; i < n; i++) dx[i] = x[i] > 0.0f ? dy[i] : 0.0f;
}

void sym_gelu_forward(const float *x, float *y, size_t n) {
    for (size_t i = 0; i < n; i++) y[i] = 0.5f * x[i] * (1.0f + erff(x[i] * INV_SQRT2));
}

/* d/dx [x Phi(x)] = Phi(x) + x phi(x) */
void sym_gelu_backward(const float *x, const float *dy, float *dx, size_t n) {
    for (size_t i = 0; i < n; i++) {
        float v = x[i];
        float cdf = 0.5f * (1.0f + erff(v * INV_SQRT2));
        float pdf = INV_SQRT_2PI * expf(-0.5f * v * v);
        dx[i] = dy[i] * (cdf + v * pdf);
    }
}

const char *sym_act_name(sym_act_t act) { return act == SYM_ACT_GELU ? "gelu" : "relu"; }
