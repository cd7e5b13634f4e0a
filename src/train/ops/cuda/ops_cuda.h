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
 *   - activations and weights' working copies are of the compute type dt
 *     (symcu_dtype_t: bf16, fp16 or fp32; `void *` below), with fp32
 *     accumulation inside every kernel; parameter gradients, the master
 *     weights and the optimizer state are fp32. "Rounded" means to dt,
 *     nearest even (nothing, for fp32);
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

/* The compute type of activations and the weights' working copy. */
typedef enum { SYMCU_BF16 = 0, SYMCU_F16 = 1, SYMCU_F32 = 2 } symcu_dtype_t;

/* The calling thread's latest error sentence ("" if none yet). */
const char *symcu_last_error(void);

/* How a backward pass stores an activation gradient: added into what the
 * buffer holds (as the CPU layers do) or written over it (no memset before,
 * no read of the old values). Parameter gradients are always added into. */
typedef enum { SYMCU_GRAD_SET = 0, SYMCU_GRAD_ADD = 1 } symcu_grad_store_t;

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
 * bias, which the backward needs. dt in and out, fp32 accumulation (for fp32:
 * plain fp32 multiply-adds, TF32 off, unless symcu_blas_use_tf32).
 * OC % 8 == 0 when pre_gelu is given (cuBLASLt's aux leading dimension). */
int symcu_matmul_forward(symcu_blas_t *h, symcu_dtype_t dt, void *out, const void *inp,
                         const void *weight, const void *bias, int N, int C, int OC,
                         void *pre_gelu, cudaStream_t stream);
/* Given dout (N,OC): dinp (N,C) += or = (store) dout @ weight (dt, may be
 * NULL: not wanted), dweight (OC,C) += dout^T @ inp (fp32), dbias (OC) += the
 * column sums of dout (fp32; NULL: no bias). OC <= max_bias_grad when dbias
 * is given. */
int symcu_matmul_backward(symcu_blas_t *h, symcu_dtype_t dt, void *dinp, symcu_grad_store_t store,
                          float *dweight, float *dbias, const void *dout, const void *inp,
                          const void *weight, int N, int C, int OC, cudaStream_t stream);
/* The same products where out (forward) and dout (backward) are rows of ld
 * elements, OC of them used (ld >= OC, ld % 8 == 0): the vocabulary-parallel
 * LM head, whose nv columns per PE need not be a multiple of 8. No bias, no
 * GELU. */
int symcu_matmul_forward_ld(symcu_blas_t *h, symcu_dtype_t dt, void *out, int ld, const void *inp,
                            const void *weight, int N, int C, int OC, cudaStream_t stream);
int symcu_matmul_backward_ld(symcu_blas_t *h, symcu_dtype_t dt, void *dinp,
                             symcu_grad_store_t store, float *dweight, const void *dout, int ld,
                             const void *inp, const void *weight, int N, int C, int OC,
                             cudaStream_t stream);
/* fp32 products through TF32 tensor cores (on) or plain fp32 (off, the
 * default: what the CPU comparison needs). */
void symcu_blas_use_tf32(symcu_blas_t *h, int on);

/* ---- LayerNorm (layernorm.cu) ---- */

/* res (N,C) = a (N,C) + b (N,C) rounded, then out (N,C) = (res - mean)
 * * rstd * w (C) + bias (C), saving mean (N) and rstd (N) = 1 / sqrt(var +
 * 1e-5) (fp32, the biased variance). b == NULL: a plain LayerNorm of a (res is
 * then ignored and may be NULL). C % 8 == 0, C <= 8192. */
int symcu_residual_layernorm_forward(symcu_dtype_t dt, void *res, void *out, float *mean,
                                     float *rstd, const void *a, const void *b, const void *w,
                                     const void *bias, int N, int C, cudaStream_t stream);
/* Floats of scratch symcu_layernorm_backward needs for (N, C). */
size_t symcu_layernorm_backward_scratch(int N, int C);
/* dx (N,C) += (dt), dw (C) +=, db (C) += (fp32) from dout (N,C), given the
 * forward's x (N,C) (its input: the residual sum), w (C), mean (N), rstd (N).
 * dw and db are summed per block in fp32 into scratch, then block by block in
 * a fixed order. C % 8 == 0, C <= 3072. */
int symcu_layernorm_backward(symcu_dtype_t dt, void *dx, float *dw, float *db, float *scratch,
                             const void *dout, const void *x, const void *w, const float *mean,
                             const float *rstd, int N, int C, cudaStream_t stream);

/* ---- dropout (dropout.cu; masks drawn in the kernels) ---- */

/* Inverted dropout with the CPU's masks (ops/cpu/dropout.c and the attention's
 * in ops/cpu/attention.c): a unit is kept when the top 24 bits of its draw,
 * sym_rng_hash(row key, unit), are >= threshold, and then scaled by `scale`.
 * The step's key of the site (sym_rng_mix(key ^ sym_rng_mix(step +
 * SYMCU_DROPOUT_STEP_MIX))) and the batch's first global sequence are read
 * from device memory when a kernel runs, so a CUDA graph replays them with
 * each step's values; nothing is stored: the backward draws the masks again. */
#define SYMCU_DROPOUT_STEP_MIX 0x632BE59BD9B4E019ull
typedef struct {
    const uint64_t *step_key; /* device (1): the site's step key; NULL: no dropout */
    const int64_t *row0;      /* device (1): the global sequence of the batch's sequence 0 */
    uint32_t threshold;       /* (uint32_t)(p * 2^24); the attention's at least 1 */
    float scale;              /* 1 / (1 - p) */
    int h0, heads;            /* the attention's: this PE's first head, the model's heads */
} symcu_dropout_t;

/* out (N,C) = in (N,C) * the mask of rows N = B*T of whole sequences of T
 * tokens (row r is global token row *row0 * T + r, units its C columns);
 * out may be in. The forward on an activation and the backward on its
 * gradient are the same call. C % 8 == 0. */
int symcu_dropout(symcu_dtype_t dt, void *out, const void *in, int N, int C, int T,
                  const symcu_dropout_t *d, cudaStream_t stream);
/* The same on any N rows (>= 0) of the batch from its row `first` (a
 * sequence-parallel shard of the B*T rows: row r is global token row *row0 *
 * T + first + r), whole sequences or not. */
int symcu_dropout_rows(symcu_dtype_t dt, void *out, const void *in, int N, int C, int T,
                       int64_t first, const symcu_dropout_t *d, cudaStream_t stream);

/* ---- causal attention (attention.cu) ---- */

/* out (B,T,C) = softmax(q k^T / sqrt(hs), j <= i) v per head, from qkv
 * (B,T,3C) laid out as sym_attention_forward's; lse (B,NH,T) receives each
 * row's log-sum-exp of the scaled scores (natural log), all the backward needs
 * of the softmax: the T x T matrix is never written. hs = C / NH is 32, 64 or
 * 128. bf16 and fp16 run on the tensor cores; fp32 on plain fp32 arithmetic
 * (one warp per row, for checking against the CPU: not fast). drop (NULL or
 * its step_key NULL: none): dropout on the probabilities, out = (P * mask) v
 * with P's rows summing to 1 before the mask (GPT-2's attn_pdrop); element
 * (i, j) of head h of sequence b is kept as sym_attention_forward_drop keeps
 * it, head h0 + h of `heads` and global sequence *row0 + b. The backward
 * takes the same drop and draws the same masks. */
int symcu_attention_forward(symcu_dtype_t dt, void *out, float *lse, const void *qkv, int B,
                            int T, int C, int NH, const symcu_dropout_t *drop,
                            cudaStream_t stream);
/* dqkv (B,T,3C) += or = (store) the gradient through the attention of dout
 * (B,T,C), given the forward's out (B,T,C), qkv (B,T,3C) and lse (B,NH,T);
 * scratch holds B*NH*T floats (each row's D = sum_j P_ij dP_ij = dout . out). */
int symcu_attention_backward(symcu_dtype_t dt, void *dqkv, symcu_grad_store_t store,
                             float *scratch, const void *dout, const void *out, const void *qkv,
                             const float *lse, int B, int T, int C, int NH,
                             const symcu_dropout_t *drop, cudaStream_t stream);

/* ---- the loss (classifier.cu) ---- */

/* Softmax cross-entropy over the first V columns of logits (N,Vp), in place:
 * loss (N) = -log softmax(logits)[target] (fp32) for targets (N) in [0, V)
 * (NaN for one outside), and the logits become dlogits = (softmax - onehot) *
 * scale (times *dscale, a device float, where dscale is not NULL: fp16's loss
 * scale, read when the kernel runs), 0 in the padding columns [V, Vp). One
 * block per row reads it twice and writes it once. V <= Vp, Vp % 8 == 0. */
int symcu_softmax_xent(symcu_dtype_t dt, float *loss, void *logits, const int32_t *targets, int N,
                       int V, int Vp, float scale, const float *dscale, cudaStream_t stream);

/* Vocabulary-parallel (tensor parallelism; CPU reference:
 * sym_softmax_xent_shard): logits (N,ld) hold this PE's columns [v0, v0 + nv)
 * of the vocabulary, padding in [nv, ld) (ld % 8 == 0); the team's PEs hold
 * disjoint blocks that cover it. The caller reduces over the team between
 * the steps:
 *   symcu_xent_shard_max    rowmax (N) = each row's maximum over its columns;
 *                           then rowmax = the max over the team;
 *   symcu_xent_shard_sums   sums (2,N): [0,N) the sum of e^(z - rowmax), [N,2N)
 *                           the target's logit on the PE holding its column, 0
 *                           on the others; then sums = the sum over the team;
 *   symcu_xent_shard_grad   loss (N) = log-sum-exp - the target's logit, and the
 *                           logits become (softmax - onehot) * scale (times
 *                           *dscale where not NULL), zeros in [nv, ld);
 *   symcu_argmax_shard      (evaluation, after the max over the team) first (N)
 *                           = v0 + the first of this PE's columns holding
 *                           rowmax, as a float, or SYMCU_NO_COLUMN; then first =
 *                           the min over the team: the row's first arg-max.
 * v0 + nv <= 2^24 (a column number is exact as a float). */
#define SYMCU_NO_COLUMN 16777216.0f
int symcu_xent_shard_max(symcu_dtype_t dt, float *rowmax, const void *logits, int N, int nv,
                         int ld, cudaStream_t stream);
int symcu_xent_shard_sums(symcu_dtype_t dt, float *sums, const void *logits,
                          const int32_t *targets, const float *rowmax, int N, int v0, int nv,
                          int ld, cudaStream_t stream);
int symcu_xent_shard_grad(symcu_dtype_t dt, float *loss, void *logits, const int32_t *targets,
                          const float *rowmax, const float *sums, int N, int v0, int nv, int ld,
                          float scale, const float *dscale, cudaStream_t stream);
int symcu_argmax_shard(symcu_dtype_t dt, float *first, const void *logits, const float *rowmax,
                       int N, int v0, int nv, int ld, cudaStream_t stream);

/* ---- embeddings (encoder.cu) ---- */

/* out (B,T,C) = wte (V,C)[tok (B,T)] + wpe (T,C)[t]; tokens in [0, V). C % 8 == 0. */
int symcu_encoder_forward(symcu_dtype_t dt, void *out, const int32_t *tok, const void *wte,
                          const void *wpe, int B, int T, int C, cudaStream_t stream);
/* Vocabulary-parallel (CPU reference: sym_embed_shard_forward): this PE holds
 * rows [v0, v0 + nv) of wte (nv,C); out (B,T,C) = wte[tok - v0] for a token it
 * holds, zeros for the others, + wpe (T,C)[t] where wpe is not NULL (one PE of
 * the team adds it); the sum over the team is the embedding. */
int symcu_encoder_shard_forward(symcu_dtype_t dt, void *out, const int32_t *tok, const void *wte,
                                int v0, int nv, const void *wpe, int B, int T, int C,
                                cudaStream_t stream);
/* Bytes of scratch symcu_encoder_backward needs for N = B * T tokens. */
size_t symcu_encoder_backward_scratch(int N);
/* dwte (V,C) += dout (B,T,C) rows at their tokens, dwpe (T,C) += dout summed
 * over b (fp32). The positions are sorted by token (a stable radix sort), and
 * each token's rows are added into its row of dwte in position order, the
 * order the CPU reference adds them in. C % 8 == 0. */
int symcu_encoder_backward(symcu_dtype_t dt, float *dwte, float *dwpe, void *scratch,
                           size_t scratch_bytes, const void *dout, const int32_t *tok, int B,
                           int T, int C, int V, cudaStream_t stream);
/* The same for rows [v0, v0 + nv) of wte (nv,C): tokens outside them add
 * nothing to dwte; dwpe as above (every PE of the team computes it alike). */
int symcu_encoder_shard_backward(symcu_dtype_t dt, float *dwte, float *dwpe, void *scratch,
                                 size_t scratch_bytes, const void *dout, const int32_t *tok,
                                 int v0, int nv, int B, int T, int C, int V,
                                 cudaStream_t stream);

/* ---- GELU, tanh approximation (gelu.cu) ---- */

/* out (n) = gelu(inp (n)); dinp (n) = dout (n) * gelu'(inp) (overwrites; dinp
 * may be dout). n % 8 == 0. */
int symcu_gelu_forward(symcu_dtype_t dt, void *out, const void *inp, size_t n,
                       cudaStream_t stream);
int symcu_gelu_backward(symcu_dtype_t dt, void *dinp, const void *inp, const void *dout, size_t n,
                        cudaStream_t stream);

/* ---- the optimizer (adamw.cu) ---- */

/* fp16's dynamic loss scale, in device memory: the step reads and updates it
 * on the GPU, so it needs no host synchronisation. */
typedef struct {
    float scale;            /* S: the loss gradient is multiplied by it (symcu_softmax_xent's
                             * dscale), the parameter gradients divided by it (AdamW) */
    uint32_t good;          /* finite steps since S last changed */
    uint32_t growth;        /* S doubles after this many finite steps in a row */
    uint32_t skipped;       /* this step's gradients held an inf or NaN: AdamW skips it */
    uint64_t skipped_total; /* steps skipped so far */
} symcu_loss_scale_t;
#define SYMCU_LOSS_SCALE_INIT 65536.0f  /* 2^16, as PyTorch's GradScaler */
#define SYMCU_LOSS_SCALE_MAX 16777216.0f /* 2^24: S grows no further */

/* Doubles of scratch symcu_grad_norm needs. */
size_t symcu_grad_norm_scratch(void);
/* norm (1) = the L2 norm of g (n) (fp32 of a double sum: per-block partials
 * into scratch, then a fixed-order reduction), and scale (1) = max_norm /
 * (norm + 1e-6) when max_norm > 0 and norm > max_norm, else 1: the factor
 * sym_grad_clip would multiply the gradients by. Both device floats.
 * ls not NULL (device): g holds the gradients times ls->scale; norm is then
 * that of g / S and scale the clipping factor divided by S (what AdamW
 * multiplies g by), and ls is updated: a non-finite sum of squares (an inf or
 * NaN anywhere in g) sets ls->skipped, halves S (not below 1) and restarts
 * the count; a finite one clears skipped and counts a good step, doubling S
 * (up to SYMCU_LOSS_SCALE_MAX) at ls->growth of them. */
int symcu_grad_norm(float *norm, float *scale, double *scratch, const float *g, size_t n,
                    float max_norm, symcu_loss_scale_t *ls, cudaStream_t stream);

/* Tensor parallelism: the norm's sum of squares in two parts, for the caller
 * to sum one of them over the team. sq (2, device floats) = the squares of g
 * (n) outside the nr ranges (offset, length; device uint64, sorted, disjoint)
 * and inside them (fp32 of double sums, fixed order). scratch holds
 * symcu_grad_sumsq_scratch() doubles. Then symcu_grad_norm_from_sumsq: norm
 * and scale (and ls) as symcu_grad_norm gives them for the sum of squares
 * sq[0] + sq[1]. */
size_t symcu_grad_sumsq_scratch(void);
int symcu_grad_sumsq(float *sq, double *scratch, const float *g, size_t n, const uint64_t *ranges,
                     int nr, cudaStream_t stream);
int symcu_grad_norm_from_sumsq(float *norm, float *scale, const float *sq, float max_norm,
                               symcu_loss_scale_t *ls, cudaStream_t stream);

/* The hyperparameters of one AdamW step (symtrain/optim.h's rule). */
typedef struct {
    float lr, beta1, beta2, eps, weight_decay;
    uint64_t t; /* this step's count, from 1 (the bias corrections) */
} symcu_adamw_t;

/* One AdamW step over the n parameters: w (n) fp32 master weights, m (n) and
 * v (n) the moments, from g (n) times *grad_scale (device; NULL: 1, the
 * clipping factor of symcu_grad_norm); wc (n) receives the copy of the
 * updated weights in the compute type dt, bf16 or fp16 (NULL: none, as for
 * fp32, which computes with w itself). Weight decay applies except in the
 * no_decay ranges: nr pairs (offset, length) of device uint64, sorted by offset
 * and disjoint (sym_optim_no_decay's ranges, merged). skip (device, NULL:
 * never): where *skip is nonzero when the kernel runs, nothing is written
 * (fp16's overflowed step). The arithmetic is the CPU's, operation for
 * operation (no fused multiply-adds). */
int symcu_adamw(float *w, symcu_dtype_t dt, void *wc, float *m, float *v, const float *g, size_t n,
                const float *grad_scale, const uint32_t *skip, const uint64_t *no_decay, int nr,
                const symcu_adamw_t *hp, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
