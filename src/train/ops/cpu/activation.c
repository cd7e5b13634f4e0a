/*
 * activation.c — element-wise activations and their derivatives: ReLU, the
 * exact GELU, x * Phi(x) with Phi the standard normal CDF (through erff), and
 * GPT-2's tanh approximation of it, 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

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
/* e^x for the GELU's sigmoid, branch-free so the loops vectorise: x = k ln2 + r
 * with |r| <= ln2 / 2, e^r by its Taylor series to r^7 (truncation below
 * 2e-9 relative), 2^k built in the exponent bits. x is clamped to [-87, 88],
 * where e^x stays a normal float; that only saturates a sigmoid already at
 * 0 or 1 in fp32. About 1e-7 relative error, against libm's expf. */
static inline float exp_approx(float x) {
    x = fminf(fmaxf(x, -87.0f), 88.0f);
    /* round to nearest by the 1.5 * 2^23 trick (vectorises, unlike roundf) */
    float k = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
    float r = x - k * 0.693145751953125f - k * 1.42860682030941723e-6f; /* ln2, split */
    float p = 1.0f + r * (1.0f + r * (0.5f + r * (1.0f / 6 + r * (1.0f / 24 + r * (1.0f / 120 +
                         r * (1.0f / 720 + r * (1.0f / 5040)))))));
    int32_t bits = ((int32_t)k + 127) << 23;
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    return p * scale;
}

/* GPT-2's GELU, 0.5 x (1 + tanh(u)) with u = sqrt(2/pi) (x + 0.044715 x^3),
 * computed as x * s with s = 0.5 (1 + tanh(u)) = 1 / (1 + e^(-2u)): the same
 * function, without tanh's cancellation near -1 and with an exp that
 * vectorises (libm's tanhf was 40% of a small GPT's step). */
/* Built for AVX-512, AVX2 and the baseline, picked at load time. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define VEC_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define VEC_CLONES
#endif

/* 1 + e^(-2u) = 1 / s, u = sqrt(2/pi) (v + 0.044715 v^3): forward and backward share it. */
static inline float gelu_tanh_inv_s(float v) {
    float u = SQRT_2_OVER_PI * (v + GELU_CUBIC * v * v * v);
    return 1.0f + exp_approx(-2.0f * u);
}

VEC_CLONES static void gelu_tanh_fwd(size_t lo, size_t hi, void *arg) {
    const act_args_t *a = arg;
    const float *x = a->x;
    float *y = a->y;
    for (size_t i = lo; i < hi; i++) {
        y[i] = x[i] / gelu_tanh_inv_s(x[i]);
    }
}
/* dy/dx = s + 0.5 x (1 - tanh^2 u) u' = s + 2 x s (1 - s) u' */
VEC_CLONES static void gelu_tanh_bwd(size_t lo, size_t hi, void *arg) {
    const act_args_t *a = arg;
    const float *x = a->x, *dy = a->dy;
    float *dx = a->y;
    for (size_t i = lo; i < hi; i++) {
        float v = x[i], s = 1.0f / gelu_tanh_inv_s(v);
        float du = SQRT_2_OVER_PI * (1.0f + 3.0f * GELU_CUBIC * v * v);
        dx[i] = dy[i] * (s + 2.0f * v * s * (1.0f - s) * du);
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
