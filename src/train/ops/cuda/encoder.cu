/*
 * encoder.cu — the GPT's input embedding, wte[tok] + wpe[t], and its
 * backward (CPU reference: ops/cpu/embed.c).
 *
 * Every kernel is a template over the compute type E (common.cuh).
 *
 * The backward scatters rows of dout into dwte at their tokens, and a token
 * may repeat. Rather than float atomics (whose order, and so rounding, varies
 * run to run), the positions are sorted by token with CUB's radix sort, which
 * is stable: each token's positions come out in increasing order. One block
 * per sorted position then does the work if it starts a run of equal tokens:
 * it adds the run's dout rows into the token's dwte row, one after another in
 * position order — the order of the CPU reference, which adds them straight
 * into dwte the same way, so the two agree bit for bit. dwpe is a plain sum
 * over b per (t, c), again in the CPU's order.
 *
 * The vocabulary-parallel forms (tensor parallelism: this PE holds rows
 * [v0, v0 + nv) of wte) are the same kernels: a token outside the rows gives a
 * zero row forward (the sum over the team fills it in) and nothing backward;
 * the position embedding is added by one PE of the team (wpe NULL on the others).
 */
#include <limits.h>

#include <cub/cub.cuh>

#include "common.cuh"

/* ---- forward ---- */

/* out (N,C) = wte[tok - v0] (zeros for a token outside [v0, v0 + nv)) + wpe[n % T]
 * (nothing where wpe is NULL); one thread per 8 channels of a row */
template <typename E>
__global__ void enc_fwd_kernel(E *out, const int32_t *tok, const E *wte, int v0, int nv,
                               const E *wpe, int N, int T, int C) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x, per = (size_t)C / 8;
    if (i >= (size_t)N * per) return;
    int n = (int)(i / per), c = (int)(i % per) * 8, v = tok[n] - v0;
    float e[8], p[8];
    if (v >= 0 && v < nv) {
        load8(e, wte + (size_t)v * C + c);
    } else {
#pragma unroll
        for (int k = 0; k < 8; k++) e[k] = 0.0f;
    }
    if (wpe) {
        load8(p, wpe + (size_t)(n % T) * C + c);
#pragma unroll
        for (int k = 0; k < 8; k++) e[k] += p[k];
    }
    store8(out + (size_t)n * C + c, e);
}

int symcu_encoder_shard_forward(symcu_dtype_t dt, void *out, const int32_t *tok, const void *wte,
                                int v0, int nv, const void *wpe, int B, int T, int C,
                                cudaStream_t stream) {
    if (B < 1 || T < 1 || C < 8 || C % 8 || v0 < 0 || nv < 0)
        return SYMCU_INVAL("encoder forward: B=%d T=%d C=%d rows [%d, +%d); C must be a multiple "
                           "of 8", B, T, C, v0, nv);
    if (!symcu__aligned16(out) || !symcu__aligned16(wte) || (wpe && !symcu__aligned16(wpe)))
        return SYMCU_INVAL("encoder forward: tensors must be 16-byte aligned");
    size_t n = (size_t)B * T * (C / 8);
    SYMCU_DISPATCH(dt, "encoder forward",
                   enc_fwd_kernel<E><<<(unsigned)((n + 255) / 256), 256, 0, stream>>>(
                       (E *)out, tok, (const E *)wte, v0, nv, (const E *)wpe, B * T, T, C));
    SYMCU_LAUNCHED("enc_fwd_kernel");
    return SYM_OK;
}

int symcu_encoder_forward(symcu_dtype_t dt, void *out, const int32_t *tok, const void *wte,
                          const void *wpe, int B, int T, int C, cudaStream_t stream) {
    if (!wpe) return SYMCU_INVAL("encoder forward: wpe is needed");
    return symcu_encoder_shard_forward(dt, out, tok, wte, 0, INT_MAX, wpe, B, T, C, stream);
}

/* ---- backward ---- */

/* The scratch: keys_out, vals_in, vals_out (N ints each, 256-byte aligned
 * pieces), then CUB's temporary storage. */
static size_t up256(size_t x) { return (x + 255) & ~(size_t)255; }

static size_t cub_temp_bytes(int N) {
    size_t bytes = 0;
    cub::DeviceRadixSort::SortPairs((void *)NULL, bytes, (const int32_t *)NULL, (int32_t *)NULL,
                                    (const int32_t *)NULL, (int32_t *)NULL, N, 0, 32);
    return bytes;
}

size_t symcu_encoder_backward_scratch(int N) {
    if (N < 1) return 0;
    return 3 * up256((size_t)N * sizeof(int32_t)) + up256(cub_temp_bytes(N));
}

__global__ void iota_kernel(int32_t *v, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) v[i] = i;
}

/* Block i: if sorted position i starts a run of one token in [v0, v0 + nv),
 * dwte[token - v0] += the run's dout rows in order. keys (N) sorted tokens,
 * pos (N) their positions. */
template <typename E>
__global__ void enc_bwd_wte_kernel(float *dwte, const E *dout, const int32_t *keys,
                                   const int32_t *pos, int N, int C, int v0, int nv) {
    int i = blockIdx.x;
    int tok = keys[i];
    if ((i > 0 && keys[i - 1] == tok) || tok < v0 || tok - v0 >= nv) return;
    float *drow = dwte + (size_t)(tok - v0) * C;
    for (int c = threadIdx.x * 8; c < C; c += blockDim.x * 8) {
        float acc[8];
#pragma unroll
        for (int k = 0; k < 8; k++) acc[k] = drow[c + k];
        for (int j = i; j < N && keys[j] == tok; j++) {
            float g[8];
            load8(g, dout + (size_t)pos[j] * C + c);
#pragma unroll
            for (int k = 0; k < 8; k++) acc[k] += g[k];
        }
#pragma unroll
        for (int k = 0; k < 8; k++) drow[c + k] = acc[k];
    }
}

/* dwpe (T,C) += sum over b of dout (B,T,C), b in order; a thread per element */
template <typename E>
__global__ void enc_bwd_wpe_kernel(float *dwpe, const E *dout, int B, int T, int C) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (size_t)T * C) return;
    float acc = dwpe[i];
    for (int b = 0; b < B; b++) acc += to_f(dout[(size_t)b * T * C + i]);
    dwpe[i] = acc;
}

int symcu_encoder_shard_backward(symcu_dtype_t dt, float *dwte, float *dwpe, void *scratch,
                                 size_t scratch_bytes, const void *dout, const int32_t *tok,
                                 int v0, int nv, int B, int T, int C, int V,
                                 cudaStream_t stream) {
    if (B < 1 || T < 1 || C < 8 || C % 8 || V < 1 || v0 < 0 || nv < 0)
        return SYMCU_INVAL("encoder backward: B=%d T=%d C=%d V=%d; C must be a multiple of 8",
                           B, T, C, V);
    if ((size_t)B * T > 0x7fffffff) return SYMCU_INVAL("encoder backward: B*T overflows an int");
    int N = B * T;
    size_t need = symcu_encoder_backward_scratch(N);
    if (!scratch || scratch_bytes < need || !symcu__aligned16(scratch))
        return SYMCU_INVAL("encoder backward: scratch of %zu bytes; it needs %zu "
                           "(symcu_encoder_backward_scratch), 16-byte aligned",
                           scratch_bytes, need);
    if (!symcu__aligned16(dout)) return SYMCU_INVAL("encoder backward: dout must be 16-byte aligned");
    char *p = (char *)scratch;
    size_t piece = up256((size_t)N * sizeof(int32_t));
    int32_t *keys = (int32_t *)p, *vin = (int32_t *)(p + piece), *vout = (int32_t *)(p + 2 * piece);
    void *temp = p + 3 * piece;
    size_t temp_bytes = cub_temp_bytes(N);
    int bits = 1;
    while (bits < 31 && (1 << bits) < V) bits++;
    iota_kernel<<<(N + 255) / 256, 256, 0, stream>>>(vin, N);
    SYMCU_LAUNCHED("iota_kernel");
    SYMCU_CUDA(cub::DeviceRadixSort::SortPairs(temp, temp_bytes, tok, keys, vin, vout, N, 0, bits,
                                               stream));
    SYMCU_DISPATCH(dt, "encoder backward",
                   enc_bwd_wte_kernel<E><<<N, 128, 0, stream>>>(dwte, (const E *)dout, keys, vout,
                                                                N, C, v0, nv));
    SYMCU_LAUNCHED("enc_bwd_wte_kernel");
    size_t tc = (size_t)T * C;
    SYMCU_DISPATCH(dt, "encoder backward",
                   enc_bwd_wpe_kernel<E><<<(unsigned)((tc + 255) / 256), 256, 0, stream>>>(
                       dwpe, (const E *)dout, B, T, C));
    SYMCU_LAUNCHED("enc_bwd_wpe_kernel");
    return SYM_OK;
}

int symcu_encoder_backward(symcu_dtype_t dt, float *dwte, float *dwpe, void *scratch,
                           size_t scratch_bytes, const void *dout, const int32_t *tok, int B,
                           int T, int C, int V, cudaStream_t stream) {
    return symcu_encoder_shard_backward(dt, dwte, dwpe, scratch, scratch_bytes, dout, tok, 0, V, B,
                                        T, C, V, stream);
}
