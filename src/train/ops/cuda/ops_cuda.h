/*
 * ops_cuda.h — the GPT's GPU kernels (libsymtrain_cuda), private to the
 * training stack: matrix products through cuBLASLt, the fused residual +
 * LayerNorm, causal flash attention, the fused softmax cross-entropy, the
 * embeddings, GELU, the gradient norm and AdamW. Each has a CPU reference of
 * the same contract in src/train/ops/cpu (or src/train/optim), and
 * tests/gpu_train_ops.cu checks one against the other.
 *
 * Conventions, as include/symtrain/nn.h's:
 *   - shapes beside every tensor argument; N = B * T rows; row-major;
 *   - every pointer is device memory, every launcher is asynchronous on
 *     `stream` and host-callable from C;
 *   - activations and weights' working copies are bf16 (symcu_bf16), with fp32
 *     accumulation inside every kernel; parameter gradients, the master
 *     weights and the optimizer state are fp32;
 *   - gradients add up: a backward ADDS into dx, dw and db (the caller zeroes
 *     them first); GELU's backward is the one exception (it overwrites, and may
 *     run in place), as on the CPU;
 *   - deterministic: no atomics on floats anywhere, every reduction runs in a
 *     fixed order over a grid whose size depends only on the shapes, so two runs
 *     on the same inputs give the same bits (on any GPU of the same
 *     architecture, with the same cuBLASLt).
 *
 * Vectorised kernels move 16 bytes (8 bf16) at a time: where a launcher says
 * "C % 8 == 0" it also needs its row pointers 16-byte aligned (cudaMalloc's
 * are). Launchers return 0 (SYM_OK) or a negative SYM_E* code: SYM_EINVAL for
 * a shape they do not support, SYM_ENOMEM when an allocation failed, SYM_EIO
 * when a CUDA or cuBLASLt call failed; symcu_last_error() then holds one
 * sentence naming the call, the file and line, and the cause.
 */
#ifndef SYM_TRAIN_OPS_CUDA_H
#define SYM_TRAIN_OPS_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include <symtrain/error.h>

#ifdef __CUDACC__
#include <cuda_bf16.h>
typedef __nv_bfloat16 symcu_bf16;
#else
typedef uint16_t symcu_bf16; /* the same 16 bits: sym_bf16_to_f32 / sym_f32_to_bf16 */
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The calling thread's latest error sentence ("" if none yet). */
const char *symcu_last_error(void);

/* ---- matrix products (matmul.cu) ---- */

/* A cuBLASLt handle with its workspace (32 MiB) and the scratch of the bias
 * gradient, allocated once here (so products can be captured in a graph).
 * max_bias_grad: the largest OC whose bias gradient matmul_backward computes. */
typedef struct symcu_blas symcu_blas_t;
int symcu_blas_create(symcu_blas_t **out, int max_bias_grad);
void symcu_blas_destroy(symcu_blas_t *h);
/* The bias gradient through cuBLASLt's BGRADB epilogue (on, the default, where
 * cuBLASLt offers it for the shape) or through our own column-sum kernel (off,
 * or where it does not). Returns what the latest matmul_backward used: 1 for
 * the epilogue, 0 for the kernel. */
void symcu_blas_use_bgradb(symcu_blas_t *h, int on);
int symcu_blas_used_bgradb(const symcu_blas_t *h);

/* out (N,OC) = inp (N,C) @ weight^T (OC,C) + bias (OC), weight row-major as
 * nn.Linear's. bias may be NULL. pre_gelu (N,OC) not NULL: the GELU (tanh)
 * is fused into the epilogue, out = gelu(x) and pre_gelu = x = the product plus
 * bias, which the backward needs. bf16 in and out, fp32 accumulation.
 * OC % 8 == 0 when pre_gelu is given (cuBLASLt's aux leading dimension). */
int symcu_matmul_forward(symcu_blas_t *h, symcu_bf16 *out, const symcu_bf16 *inp,
                         const symcu_bf16 *weight, const symcu_bf16 *bias, int N, int C, int OC,
                         symcu_bf16 *pre_gelu, cudaStream_t stream);
/* Given dout (N,OC): dinp (N,C) += dout @ weight (bf16, may be NULL: not
 * wanted), dweight (OC,C) += dout^T @ inp (fp32), dbias (OC) += the column
 * sums of dout (fp32; NULL: no bias). OC <= max_bias_grad when dbias is given. */
int symcu_matmul_backward(symcu_blas_t *h, symcu_bf16 *dinp, float *dweight, float *dbias,
                          const symcu_bf16 *dout, const symcu_bf16 *inp, const symcu_bf16 *weight,
                          int N, int C, int OC, cudaStream_t stream);
/* The same in fp32 throughout (fp32 multiply-add, TF32 off), for checking. */
int symcu_matmul_forward_f32(symcu_blas_t *h, float *out, const float *inp, const float *weight,
                             const float *bias, int N, int C, int OC, float *pre_gelu,
                             cudaStream_t stream);
int symcu_matmul_backward_f32(symcu_blas_t *h, float *dinp, float *dweight, float *dbias,
                              const float *dout, const float *inp, const float *weight, int N,
                              int C, int OC, cudaStream_t stream);

/* ---- LayerNorm (layernorm.cu) ---- */

/* res (N,C) = a (N,C) + b (N,C) rounded to bf16, then out (N,C) = (res - mean)
 * * rstd * w (C) + bias (C), saving mean (N) and rstd (N) = 1 / sqrt(var +
 * 1e-5) (fp32, the biased variance). b == NULL: a plain LayerNorm of a (res is
 * then ignored and may be NULL). C % 8 == 0, C <= 8192. */
int symcu_residual_layernorm_forward(symcu_bf16 *res, symcu_bf16 *out, float *mean, float *rstd,
                                     const symcu_bf16 *a, const symcu_bf16 *b,
                                     const symcu_bf16 *w, const symcu_bf16 *bias, int N, int C,
                                     cudaStream_t stream);
/* Floats of scratch symcu_layernorm_backward needs for (N, C). */
size_t symcu_layernorm_backward_scratch(int N, int C);
/* dx (N,C) += (bf16), dw (C) +=, db (C) += (fp32) from dout (N,C), given the
 * forward's x (N,C) (its input: the residual sum), w (C), mean (N), rstd (N).
 * dw and db are summed per block in fp32 into scratch, then block by block in
 * a fixed order. C % 8 == 0, C <= 3072. */
int symcu_layernorm_backward(symcu_bf16 *dx, float *dw, float *db, float *scratch,
                             const symcu_bf16 *dout, const symcu_bf16 *x, const symcu_bf16 *w,
                             const float *mean, const float *rstd, int N, int C,
                             cudaStream_t stream);

/* ---- causal attention (attention.cu) ---- */

/* out (B,T,C) = softmax(q k^T / sqrt(hs), j <= i) v per head, from qkv
 * (B,T,3C) laid out as sym_attention_forward's; lse (B,NH,T) receives each
 * row's log-sum-exp of the scaled scores (natural log), all the backward needs
 * of the softmax: the T x T matrix is never written. hs = C / NH is 32, 64 or
 * 128. */
int symcu_attention_forward(symcu_bf16 *out, float *lse, const symcu_bf16 *qkv, int B, int T,
                            int C, int NH, cudaStream_t stream);
/* dqkv (B,T,3C) += the gradient through the attention of dout (B,T,C), given
 * the forward's out (B,T,C), qkv (B,T,3C) and lse (B,NH,T); scratch holds
 * B*NH*T floats (each row's D = sum_j P_ij dP_ij = dout . out). */
int symcu_attention_backward(symcu_bf16 *dqkv, float *scratch, const symcu_bf16 *dout,
                             const symcu_bf16 *out, const symcu_bf16 *qkv, const float *lse,
                             int B, int T, int C, int NH, cudaStream_t stream);

/* ---- the loss (classifier.cu) ---- */

/* Softmax cross-entropy over the first V columns of logits (N,Vp), in place:
 * loss (N) = -log softmax(logits)[target] (fp32) for targets (N) in [0, V)
 * (NaN for one outside), and the logits become dlogits = (softmax - onehot) *
 * scale, 0 in the padding columns [V, Vp). One block per row reads it twice
 * and writes it once. V <= Vp, Vp % 8 == 0. */
int symcu_softmax_xent(float *loss, symcu_bf16 *logits, const int32_t *targets, int N, int V,
                       int Vp, float scale, cudaStream_t stream);

/* ---- embeddings (encoder.cu) ---- */

/* out (B,T,C) = wte (V,C)[tok (B,T)] + wpe (T,C)[t]; tokens in [0, V). C % 8 == 0. */
int symcu_encoder_forward(symcu_bf16 *out, const int32_t *tok, const symcu_bf16 *wte,
                          const symcu_bf16 *wpe, int B, int T, int C, cudaStream_t stream);
/* Bytes of scratch symcu_encoder_backward needs for N = B * T tokens. */
size_t symcu_encoder_backward_scratch(int N);
/* dwte (V,C) += dout (B,T,C) rows at their tokens, dwpe (T,C) += dout summed
 * over b (fp32). The positions are sorted by token (a stable radix sort), and
 * each token's rows are added into its row of dwte in position order, the
 * order the CPU reference adds them in. C % 8 == 0. */
int symcu_encoder_backward(float *dwte, float *dwpe, void *scratch, size_t scratch_bytes,
                           const symcu_bf16 *dout, const int32_t *tok, int B, int T, int C,
                           int V, cudaStream_t stream);

/* ---- GELU, tanh approximation (gelu.cu) ---- */

/* out (n) = gelu(inp (n)); dinp (n) = dout (n) * gelu'(inp) (overwrites; dinp
 * may be dout). n % 8 == 0. */
int symcu_gelu_forward(symcu_bf16 *out, const symcu_bf16 *inp, size_t n, cudaStream_t stream);
int symcu_gelu_backward(symcu_bf16 *dinp, const symcu_bf16 *inp, const symcu_bf16 *dout, size_t n,
                        cudaStream_t stream);

/* ---- the optimizer (adamw.cu) ---- */

/* Doubles of scratch symcu_grad_norm needs. */
size_t symcu_grad_norm_scratch(void);
/* norm (1) = the L2 norm of g (n) (fp32 of a double sum: per-block partials
 * into scratch, then a fixed-order reduction), and scale (1) = max_norm /
 * (norm + 1e-6) when max_norm > 0 and norm > max_norm, else 1: the factor
 * sym_grad_clip would multiply the gradients by. Both device floats. */
int symcu_grad_norm(float *norm, float *scale, double *scratch, const float *g, size_t n,
                    float max_norm, cudaStream_t stream);

/* The hyperparameters of one AdamW step (symtrain/optim.h's rule). */
typedef struct {
    float lr, beta1, beta2, eps, weight_decay;
    uint64_t t; /* this step's count, from 1 (the bias corrections) */
} symcu_adamw_t;

/* One AdamW step over the n parameters: w (n) fp32 master weights, m (n) and
 * v (n) the moments, from g (n) times *grad_scale (device; NULL: 1, the
 * clipping factor of symcu_grad_norm); w16 (n) receives the bf16 copy of the
 * updated weights (NULL: none). Weight decay applies except in the
 * no_decay ranges: nr pairs (offset, length) of device uint64, sorted by offset
 * and disjoint (sym_optim_no_decay's ranges, merged). The arithmetic is the
 * CPU's, operation for operation (no fused multiply-adds). */
int symcu_adamw(float *w, symcu_bf16 *w16, float *m, float *v, const float *g, size_t n,
                const float *grad_scale, const uint64_t *no_decay, int nr,
                const symcu_adamw_t *hp, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
