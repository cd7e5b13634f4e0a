/*
 * dropout.cu — inverted dropout on whole sequences with the CPU's masks
 * (ops/cpu/dropout.c: row r's key sym_rng_mix(step key ^ global row * golden),
 * unit j kept when the top 24 bits of sym_rng_hash(row key, j) reach the
 * threshold); symcu_dropout_rows on any run of the batch's rows (a
 * sequence-parallel shard: rows [first, first + N) of its B*T). The same
 * kernel is the forward on an activation and the backward on its gradient:
 * nothing is stored between them.
 */
#include "common.cuh"

/* out = in * mask, one thread per 8 units of a row (n8 = N * C / 8 of them);
 * row r is global token row *row0 * T + first + r */
template <typename E>
__global__ void dropout_kernel(E *out, const E *in, size_t n8, int C, int T, int64_t first,
                               symcu_dropout_t d) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n8) return;
    size_t r = i / (size_t)(C / 8);
    int j0 = (int)(i % (size_t)(C / 8)) * 8;
    uint64_t row_key = symcu_row_key(*d.step_key, (uint64_t)(*d.row0 * T + first) + r);
    float x[8];
    load8(x, in + i * 8);
#pragma unroll
    for (int k = 0; k < 8; k++) x[k] *= symcu_keep(row_key, (uint64_t)(j0 + k), d);
    store8(out + i * 8, x);
}

int symcu_dropout_rows(symcu_dtype_t dt, void *out, const void *in, int N, int C, int T,
                       int64_t first, const symcu_dropout_t *d, cudaStream_t stream) {
    if (!d || !d->step_key || !d->row0)
        return SYMCU_INVAL("dropout: no mask (the step key and first row are device pointers)");
    if (N < 0 || C < 8 || C % 8 || T < 1 || first < 0)
        return SYMCU_INVAL("dropout: N=%d C=%d T=%d first row %lld: C a multiple of 8, N and the "
                           "first row not negative", N, C, T, (long long)first);
    if (!symcu__aligned16(out) || !symcu__aligned16(in))
        return SYMCU_INVAL("dropout: tensors must be 16-byte aligned");
    if (!N) return SYM_OK;
    size_t n8 = (size_t)N * (size_t)(C / 8);
    SYMCU_DISPATCH(dt, "dropout",
                   dropout_kernel<E><<<(unsigned)((n8 + 255) / 256), 256, 0, stream>>>(
                       (E *)out, (const E *)in, n8, C, T, first, *d));
    SYMCU_LAUNCHED("dropout_kernel");
    return SYM_OK;
}

int symcu_dropout(symcu_dtype_t dt, void *out, const void *in, int N, int C, int T,
                  const symcu_dropout_t *d, cudaStream_t stream) {
    if (T < 1 || N % T)
        return SYMCU_INVAL("dropout: N=%d T=%d: N whole sequences (symcu_dropout_rows takes any "
                           "rows)", N, T);
    return symcu_dropout_rows(dt, out, in, N, C, T, 0, d, stream);
}
