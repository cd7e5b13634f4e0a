/*
 * dropout.cu — inverted dropout on whole sequences with the CPU's masks
 * (ops/cpu/dropout.c: row r's key sym_rng_mix(step key ^ global row * golden),
 * unit j kept when the top 24 bits of sym_rng_hash(row key, j) reach the
 * threshold). The same kernel is the forward on an activation and the
 * backward on its gradient: nothing is stored between them.
 */
#include "common.cuh"

/* out = in * mask, one thread per 8 units of a row (n8 = N * C / 8 of them) */
template <typename E>
__global__ void dropout_kernel(E *out, const E *in, size_t n8, int C, int T, symcu_dropout_t d) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n8) return;
    size_t r = i / (size_t)(C / 8);
    int j0 = (int)(i % (size_t)(C / 8)) * 8;
    uint64_t row_key = symcu_row_key(*d.step_key, (uint64_t)(*d.row0 * T) + r);
    float x[8];
    load8(x, in + i * 8);
#pragma unroll
    for (int k = 0; k < 8; k++) x[k] *= symcu_keep(row_key, (uint64_t)(j0 + k), d);
    store8(out + i * 8, x);
}

int symcu_dropout(symcu_dtype_t dt, void *out, const void *in, int N, int C, int T,
                  const symcu_dropout_t *d, cudaStream_t stream) {
    if (!d || !d->step_key || !d->row0)
        return SYMCU_INVAL("dropout: no mask (the step key and first row are device pointers)");
    if (N < 0 || C < 8 || C % 8 || T < 1 || N % T)
        return SYMCU_INVAL("dropout: N=%d C=%d T=%d: C a multiple of 8, N whole sequences", N, C,
                           T);
    if (!symcu__aligned16(out) || !symcu__aligned16(in))
        return SYMCU_INVAL("dropout: tensors must be 16-byte aligned");
    if (!N) return SYM_OK;
    size_t n8 = (size_t)N * (size_t)(C / 8);
    SYMCU_DISPATCH(dt, "dropout",
                   dropout_kernel<E><<<(unsigned)((n8 + 255) / 256), 256, 0, stream>>>(
                       (E *)out, (const E *)in, n8, C, T, *d));
    SYMCU_LAUNCHED("dropout_kernel");
    return SYM_OK;
}
