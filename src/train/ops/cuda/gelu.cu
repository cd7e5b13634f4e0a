/*
 * gelu.cu — GPT-2's GELU, the tanh approximation, element-wise forward and
 * backward on the compute type (CPU reference: sym_gelu_tanh_* in ops/cpu/activation.c,
 * the same formulas). The forward is normally fused into the matmul's epilogue
 * (matmul.cu, GELU_AUX_BIAS); these kernels are the standalone form and the
 * backward, which overwrites (in place allowed), as element-wise activations do.
 *
 *   y  = 0.5 x (1 + t),  t = tanh(sqrt(2/pi) (x + 0.044715 x^3))
 *   y' = 0.5 (1 + t) + 0.5 x (1 - t)(1 + t) sqrt(2/pi) (1 + 3 * 0.044715 x^2)
 */
#include "common.cuh"

#define SQRT_2_OVER_PI 0.79788456080286535588f
#define GELU_CUBIC 0.044715f

__device__ __forceinline__ float gelu_t(float x) {
    return tanhf(SQRT_2_OVER_PI * (x + GELU_CUBIC * x * x * x));
}

/* out (n) = gelu(inp (n)); one thread per 8 elements */
template <typename E>
__global__ void gelu_fwd_kernel(E *out, const E *inp, size_t n8) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n8) return;
    float x[8];
    load8_cs(x, inp + i * 8);
#pragma unroll
    for (int k = 0; k < 8; k++) x[k] = 0.5f * x[k] * (1.0f + gelu_t(x[k]));
    store8(out + i * 8, x);
}

/* dinp (n) = dout (n) * gelu'(inp (n)); dinp may be dout */
template <typename E>
__global__ void gelu_bwd_kernel(E *dinp, const E *inp, const E *dout, size_t n8) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n8) return;
    float x[8], g[8];
    load8_cs(x, inp + i * 8);
    load8(g, dout + i * 8);
#pragma unroll
    for (int k = 0; k < 8; k++) {
        float v = x[k], t = gelu_t(v), sech2 = (1.0f - t) * (1.0f + t);
        float d = 0.5f * (1.0f + t) + 0.5f * v * sech2 * SQRT_2_OVER_PI * (1.0f + 3.0f * GELU_CUBIC * v * v);
        g[k] *= d;
    }
    store8(dinp + i * 8, g);
}

static int check(const char *fn, size_t n, const void *a, const void *b, const void *c) {
    if (n % 8) return SYMCU_INVAL("%s: n=%zu must be a multiple of 8", fn, n);
    if (!symcu__aligned16(a) || !symcu__aligned16(b) || (c && !symcu__aligned16(c)))
        return SYMCU_INVAL("%s: tensors must be 16-byte aligned", fn);
    return SYM_OK;
}

int symcu_gelu_forward(symcu_dtype_t dt, void *out, const void *inp, size_t n,
                       cudaStream_t stream) {
    int rc = check("gelu forward", n, out, inp, NULL);
    if (rc || !n) return rc;
    size_t n8 = n / 8;
    SYMCU_DISPATCH(dt, "gelu forward",
                   gelu_fwd_kernel<E><<<(unsigned)((n8 + 255) / 256), 256, 0, stream>>>(
                       (E *)out, (const E *)inp, n8));
    SYMCU_LAUNCHED("gelu_fwd_kernel");
    return SYM_OK;
}

int symcu_gelu_backward(symcu_dtype_t dt, void *dinp, const void *inp, const void *dout, size_t n,
                        cudaStream_t stream) {
    int rc = check("gelu backward", n, dinp, inp, dout);
    if (rc || !n) return rc;
    size_t n8 = n / 8;
    SYMCU_DISPATCH(dt, "gelu backward",
                   gelu_bwd_kernel<E><<<(unsigned)((n8 + 255) / 256), 256, 0, stream>>>(
                       (E *)dinp, (const E *)inp, (const E *)dout, n8));
    SYMCU_LAUNCHED("gelu_bwd_kernel");
    return SYM_OK;
}
