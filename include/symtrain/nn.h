/*
 * symtrain/nn.h — layers with hand-written forward and backward passes, the
 * softmax cross-entropy loss, and the models built from them (the MLP and the
 * GPT, by a config string).
 *
 * Shapes are written beside each argument: B is the batch (rows), I and O a
 * layer's input and output widths, C the number of classes (MLP) or the width
 * (GPT), T the sequence length, NH the attention heads, V the vocabulary, and
 * N = B * T the rows of a sequence batch. Tensors are row-major fp32 unless
 * they say otherwise; sums over long ranges (rows, a vocabulary) accumulate in
 * double.
 *
 * Gradients add up. Every backward pass ADDS into the gradients it produces
 * (dw, db and dx), so a weight used twice (the GPT's tied embedding) or a
 * step of several micro-batches sums correctly; the caller zeroes them first.
 * The element-wise activations and dropout are the one exception: their
 * dx = dy * f'(x) overwrites, and may be computed in place (dx == dy).
 *
 * A model is a table of named parameters (sym_param_t) over one flat array,
 * and an explicit forward and backward that chain the layers; the gradients
 * are a second flat array of the same layout (plus SYM_GRAD_CTRL control
 * floats at the end that the trainer all-reduces along with them). Both live
 * in one pool region, symmetric when the model is built for data parallelism.
 */
#ifndef SYMTRAIN_NN_H
#define SYMTRAIN_NN_H

#include <shmem.h> /* shmem_team_t */
#include <stddef.h>
#include <stdint.h>

#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- layers ---- */

/* y (B,O) = x (B,I) @ w^T (O,I) + b (O). */
int sym_linear_forward(const sym_tensor_t *x, const sym_tensor_t *w, const sym_tensor_t *b,
                       sym_tensor_t *y);
/* b may be NULL (no bias): y = x @ w^T. */
/* Given dy (B,O): dw (O,I) += dy^T @ x, db (O) += column sums of dy (db may be
 * NULL when the layer has no bias), and dx (B,I) += dy @ w. */
int sym_linear_backward_params(const sym_tensor_t *x, const sym_tensor_t *dy, sym_tensor_t *dw,
                               sym_tensor_t *db);
int sym_linear_backward_input(const sym_tensor_t *w, const sym_tensor_t *dy, sym_tensor_t *dx);

/* y = max(x, 0); dx = dy where x > 0, else 0. Any shape, contiguous; y may be x. */
void sym_relu_forward(const float *x, float *y, size_t n);
void sym_relu_backward(const float *x, const float *dy, float *dx, size_t n);
/* y = x * Phi(x) (exact GELU, with erf); dx = dy * (Phi(x) + x * phi(x)). */
void sym_gelu_forward(const float *x, float *y, size_t n);
void sym_gelu_backward(const float *x, const float *dy, float *dx, size_t n);

/* Inverted dropout on x (B,W): each element is kept with probability 1 - p and
 * scaled by 1 / (1 - p). The decision for element (r, j) is a pure function of
 * (key, step, row0 + r, j), row0 being the global index of row 0 in the step's
 * global batch, so a PE holding rows [row0, row0 + B) draws what a single PE
 * holding the whole batch would. mask (B,W) receives 0 or 1 / (1 - p);
 * y = x * mask. p = 0 copies. */
void sym_dropout_forward(const float *x, float *y, float *mask, int64_t rows, int64_t width,
                         float p, uint64_t key, uint64_t step, int64_t row0);
/* dx = dy * mask (mask from the forward pass). */
void sym_dropout_backward(const float *dy, const float *mask, float *dx, size_t n);

/* Softmax cross-entropy over the first `classes` columns of logits (B,Cp)
 * (Cp >= classes: a vocabulary padded for speed; the padding columns take no
 * part) with labels (B) in [0, classes). Returns the sum over rows of
 * -log softmax(logits)[label] (in double); *correct (may be NULL) gets the
 * number of rows whose arg-max is the label. When dlogits (B,Cp) is not NULL
 * it receives (softmax - onehot) * grad_scale, the gradient of grad_scale *
 * (the summed loss), and 0 in the padding columns; it may be the logits
 * themselves (computed in place). Returns NAN and records the error when a
 * label is out of range. */
double sym_softmax_xent(const sym_tensor_t *logits, const int32_t *labels, int classes,
                        float grad_scale, sym_tensor_t *dlogits, int64_t *correct);

/* The same over a vocabulary split across the PEs of `team` (vocabulary
 * parallelism): logits (B,nv) are this PE's columns [v0, v0 + nv) of the
 * `classes` (every PE's block together covers them), labels (B) in
 * [0, classes), dlogits (B,nv) may be NULL or the logits. The logits are never
 * gathered: the row maximum, the sum of exponentials and the target's logit
 * are all-reduced over the team. Collective over the team; every member gets
 * the same total and *correct. */
double sym_softmax_xent_shard(const sym_tensor_t *logits, const int32_t *labels, int64_t v0,
                              int classes, shmem_team_t team, float grad_scale,
                              sym_tensor_t *dlogits, int64_t *correct);

/* ---- the GPT's layers (raw row-major arrays, N = B * T rows) ---- */

/* out (B,T,C) = wte[tok[b,t]] (V,C) + wpe[t] (T,C); tokens must be in [0, V). */
void sym_embed_forward(float *out, const int32_t *tok, const float *wte, const float *wpe,
                       int B, int T, int C);
/* dwte (V,C) += dout rows at their tokens, dwpe (T,C) += dout summed over b.
 * The order of the additions is fixed (by position), whatever the threads. */
void sym_embed_backward(float *dwte, float *dwpe, const float *dout, const int32_t *tok,
                        int B, int T, int C);

/* Vocabulary parallelism: wte (nv,C) holds rows [v0, v0 + nv) of the table.
 * out (B,T,C) = wte[tok - v0] for the tokens held, 0 for the others, plus
 * wpe[t] where wpe is not NULL (give it on one PE of the team): summed over
 * the team, the whole embedding, bit for bit. */
void sym_embed_shard_forward(float *out, const int32_t *tok, const float *wte, int64_t v0,
                             int64_t nv, const float *wpe, int B, int T, int C);
/* dwte (nv,C) += dout rows of the tokens held, dwpe (T,C) += dout summed over b
 * (every token). The order of the additions is that of sym_embed_backward. */
void sym_embed_shard_backward(float *dwte, float *dwpe, const float *dout, const int32_t *tok,
                              int64_t v0, int64_t nv, int B, int T, int C);

/* out (N,C) = (x - mean) * rstd * w (C) + b (C), with mean (N) and rstd (N) =
 * 1 / sqrt(var + 1e-5) of each row saved for the backward pass. */
void sym_layernorm_forward(float *out, float *mean, float *rstd, const float *x,
                           const float *w, const float *b, int64_t N, int C);
/* dx (N,C) +=, dw (C) +=, db (C) += from dout (N,C). */
void sym_layernorm_backward(float *dx, float *dw, float *db, const float *dout,
                            const float *x, const float *w, const float *mean,
                            const float *rstd, int64_t N, int C);

/* Causal multi-head self-attention. qkv (B,T,3C) holds q, k, v side by side
 * (head h of q is columns [h*hs, (h+1)*hs), hs = C / NH; k and v follow at C
 * and 2C). out (B,T,C) = softmax(q k^T / sqrt(hs), masked to j <= i) v per
 * head; att (B,NH,T,T) receives those probabilities (zero above the
 * diagonal), which the backward pass needs. Returns 0 or SYM_EINVAL (C not a
 * multiple of NH). */
int sym_attention_forward(float *out, float *att, const float *qkv, int B, int T, int C,
                          int NH);
/* dqkv (B,T,3C) += the gradient through the attention of dout (B,T,C), given
 * the forward's qkv and att; scratch holds T*T floats. */
int sym_attention_backward(float *dqkv, float *scratch, const float *dout, const float *qkv,
                           const float *att, int B, int T, int C, int NH);
/* Inverted dropout on the attention probabilities (GPT-2's attn_pdrop): p,
 * and where the mask comes from. Element (i, j) of head h of sequence b is
 * kept by a pure function of (key, step, row0 + b, h0 + h, i, j), so heads
 * split over PEs (h0: this PE's first, of `heads`) or sequences split over
 * them (row0: the batch's first global row) draw the 1-PE run's masks. */
typedef struct {
    float p;
    uint64_t key, step;
    int64_t row0;
    int h0, heads;
} sym_attn_dropout_t;
/* The same passes with dropout d (NULL: none): out = (att * mask) v, att
 * keeps the probabilities before the mask (the backward draws the mask
 * again, nothing is stored); scratch (T*T floats) is the forward's too. */
int sym_attention_forward_drop(float *out, float *att, float *scratch, const float *qkv, int B,
                               int T, int C, int NH, const sym_attn_dropout_t *d);
int sym_attention_backward_drop(float *dqkv, float *scratch, const float *dout, const float *qkv,
                                const float *att, int B, int T, int C, int NH,
                                const sym_attn_dropout_t *d);

/* GELU, tanh approximation (GPT-2's): y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
 * dx = dy * y'(x) (overwrites; in place allowed). */
void sym_gelu_tanh_forward(const float *x, float *y, size_t n);
void sym_gelu_tanh_backward(const float *x, const float *dy, float *dx, size_t n);

/* out (n) = a + b (out may be a or b); the backward of a sum is dout to both. */
void sym_residual_forward(float *out, const float *a, const float *b, size_t n);
/* da (n) += dout, db (n) += dout. */
void sym_residual_backward(float *da, float *db, const float *dout, size_t n);

/* ---- models ---- */

#define SYM_MAX_LAYERS 8 /* linear layers in an MLP */
#define SYM_GRAD_CTRL 16 /* control floats after the gradients (one cache line) */
#define SYM_GPT_MAX_LAYERS 256

typedef enum { SYM_ACT_RELU = 0, SYM_ACT_GELU = 1 } sym_act_t;
typedef enum { SYM_MODEL_MLP = 0, SYM_MODEL_GPT = 1 } sym_model_kind_t;

typedef struct {
    char spec[128];            /* "mlp:784-512-256-10", "gpt:d12", ... as given */
    sym_model_kind_t kind;
    /* MLP */
    int nlayers;               /* linear layers: dims has nlayers + 1 entries */
    int dims[SYM_MAX_LAYERS + 1];
    sym_act_t act;             /* after every hidden linear layer */
    float dropout;             /* MLP: after every hidden activation; GPT: on the embeddings
                                  and each block's two residual branches; 0 = none */
    /* GPT (GPT-2's architecture) */
    int n_layer;               /* L: transformer blocks */
    int n_embd;                /* C: width */
    int n_head;                /* NH: attention heads (C % NH == 0) */
    int vocab;                 /* V: tokens in [0, V) */
    int padded_vocab;          /* Vp >= V: rows of the embedding (a multiple of 128) */
    int max_seq;               /* T: the longest context (rows of the position embedding) */
    int seq_parallel;          /* under tensor parallelism: split the LayerNorm, dropout and
                                  residual regions along the sequence (Megatron-SP) */
    int tp_chunks;             /* under tensor parallelism without SP: each row-parallel GEMM
                                  (and column-parallel input gradient) in this many row chunks,
                                  chunk i's all-reduce running while chunk i+1 computes
                                  (0 or 1: one GEMM, then one all-reduce) */
    uint64_t seed;             /* weight init and dropout masks */
    int undrawn;               /* create the weights as zeros, to be drawn by
                                  sym_model_draw_weights or filled by a restore */
} sym_model_config_t;

/* Parse a model spec into cfg->spec, kind and the kind's fields; other fields
 * (act, dropout, seed) are left alone:
 *   "mlp:D0-D1-...-Dn"   2 <= n + 1 <= SYM_MAX_LAYERS + 1 widths, each 1..65536
 *   "gpt:d12"            GPT-2 small (124M): L=12, C=768, NH=12, V=50257 padded
 *                        to 50304, T=1024; d24 (350M: 1024 wide, 16 heads), d36
 *                        (774M: 1280, 20), d48 (1.5B: 1600, 25)
 *   "gpt:L=4,C=256,H=4,V=256,T=256"  any of the five; the rest as gpt:d12's */
int sym_model_parse(const char *spec, sym_model_config_t *cfg);
const char *sym_act_name(sym_act_t act);
int sym_act_parse(const char *name, sym_act_t *act);

/* One entry of a model's parameter table: a named tensor in the flat arrays. */
typedef struct {
    char name[64];     /* "h.3.attn.c_attn.weight", "fc0.bias", ... */
    int ndim;
    int64_t shape[SYM_MAX_DIMS];
    size_t offset;     /* floats into the flat parameter (and gradient) array */
    size_t numel;
    int decay;         /* AdamW's weight decay applies: the matrices (ndim >= 2) */
    int tp_dim;        /* tensor parallelism: -1 whole on every PE of the TP team, else
                        * the dimension split over it (shape is this PE's part) */
    int index;         /* its place in the whole model's table (a pipeline stage holds
                        * part of it; the weights' random stream follows this index) */
} sym_param_t;

typedef struct sym_model sym_model_t; /* opaque */

/* Build the model: one pool for parameters + gradients (+ control floats),
 * symmetric if `symmetric` (collective: every PE, same config), then weights
 * drawn from cfg->seed. MLP: PyTorch's default, U(-1/sqrt(I), 1/sqrt(I)) for
 * w and b. GPT: GPT-2's, N(0, 0.02) for the matrices and embeddings (the
 * residual projections attn.c_proj and mlp.c_proj N(0, 0.02 / sqrt(2 L))),
 * biases 0, LayerNorm weights 1; the padding rows of the embedding are 0.
 * max_rows bounds the rows of a forward pass (samples, or sequences of up
 * to T tokens): activations are preallocated for it from a private pool;
 * 0 makes a model of parameters only (a GPU run's host copy), whose forward
 * is refused. */
int sym_model_create(const sym_model_config_t *cfg, int max_rows, int symmetric,
                     sym_model_t **out);
/* The same, split over the PEs of `tp` (tensor parallelism, Megatron-style;
 * GPT only, every PE of the team calls it with the same config): each PE
 * holds n_head / tp of the heads. attn.c_attn and mlp.c_fc are split by
 * output rows (column-parallel: attn.c_attn's q, k and v rows of this PE's
 * heads), attn.c_proj and mlp.c_proj by input columns (row-parallel, their
 * bias added once); wte is split by vocabulary rows (vocabulary-parallel:
 * team PE r holds rows sym_shard_range(V, tp, r), uneven allowed) and with it
 * the tied LM head, whose logits stay split (sym_model_xent); everything else
 * is whole on every PE. The forward sums the embedding and
 * each row-parallel output over the team (one all-reduce after attention, one
 * after the MLP), the backward the gradients of the two column-parallel
 * inputs; the whole-tensor parameters' gradients come out the same on every
 * PE of the team. Weights are the slices of the 1-PE model's, so the losses
 * match a 1-PE run to fp32 rounding. A team of one PE is sym_model_create.
 * Needs n_head and n_embd divisible by the team's size. With
 * cfg->seq_parallel (sequence parallelism, models/gpt.c) the sums become
 * reduce-scatters along the sequence and all-gathers, the LayerNorm and
 * residual activations are split along the sequence (any length: uneven
 * parts), and the call (and sym_model_destroy) is collective over the whole
 * job, which allocates the redistributions' symmetric scratch. */
int sym_model_create_tp(const sym_model_config_t *cfg, int max_rows, int symmetric,
                        shmem_team_t tp, sym_model_t **out);
/* The initial weights from the config's seed, as create draws them without
 * cfg->undrawn (the same bits); this PE's part only, no communication. */
int sym_model_draw_weights(sym_model_t *m);
void sym_model_destroy(sym_model_t *m);
const sym_model_config_t *sym_model_config(const sym_model_t *m);

/* The flat parameters (P floats) and gradients (P + SYM_GRAD_CTRL floats). */
size_t sym_model_num_params(const sym_model_t *m);
/* Bytes the model holds, from its pools' allocator: the parameters' and the
 * gradients' blocks, and the activations' blocks in use (a power of two each). */
void sym_model_memory(const sym_model_t *m, size_t *params, size_t *grads, size_t *acts);
float *sym_model_params(sym_model_t *m);
float *sym_model_grads(sym_model_t *m);
/* Set the P gradients to 0 (backward adds into them). */
void sym_model_zero_grads(sym_model_t *m);

/* The parameter table, in layout order (ascending offsets). */
int sym_model_num_tensors(const sym_model_t *m);
const sym_param_t *sym_model_param(const sym_model_t *m, int i);
/* The entry named `name`, or NULL. */
const sym_param_t *sym_model_find_param(const sym_model_t *m, const char *name);

/* Classes the loss is over (MLP: the last width; GPT: V) and the width of a
 * logits row (MLP: the same; GPT: Vp, or with TP this PE's block of V). */
int sym_model_classes(const sym_model_t *m);
int sym_model_logit_width(const sym_model_t *m);
/* ---- tensor parallelism (sym_model_create_tp) ----
 * The PEs of the TP team over which the model is split (1 without). */
int sym_model_tp_size(const sym_model_t *m);
/* The 1-PE model's table and size: the same tensors in the same order, with
 * their whole shapes and offsets (the model's own without TP). */
size_t sym_model_full_num_params(const sym_model_t *m);
const sym_param_t *sym_model_full_param(const sym_model_t *m, int i);
/* The 1-PE model's whole table (*n entries): every tensor, also those a
 * pipeline stage does not hold, with whole shapes and offsets. */
const sym_param_t *sym_model_whole_table(const sym_model_t *m, int *n);
/* full (sym_model_full_num_params floats) = every tensor whole, from `part`
 * (sym_model_num_params floats laid out as this model's table: parameters,
 * gradients or optimizer state) of every PE of the team. Collective over the
 * TP team; the tensors whole on every PE are taken from team PE 0's part. */
int sym_model_gather(sym_model_t *m, const float *part, float *full);
/* part = this PE's slices of the whole tensors in `full` (no communication). */
void sym_model_scatter(const sym_model_t *m, const float *full, float *part);
/* Where this PE's part of parameter i lies in the whole tensor: pieces, each
 * a box of `count` at `part` in the part's shape (the table entry's) and at
 * `whole` in the whole one (sym_model_full_param's); together they are the
 * part. One piece (the whole tensor) without TP; attn.c_attn's q, k and v
 * rows are three. Local. */
#define SYM_PARAM_MAX_PIECES 3
typedef struct {
    int64_t part[SYM_MAX_DIMS], whole[SYM_MAX_DIMS], count[SYM_MAX_DIMS];
} sym_param_piece_t;
int sym_model_param_pieces(const sym_model_t *m, int i, sym_param_piece_t *pc);
/* The loss of logits from sym_model_forward against labels: sym_softmax_xent
 * over sym_model_classes, or with TP sym_softmax_xent_shard over the team
 * (collective; every PE of the team gets the same loss and *correct). */
double sym_model_xent(const sym_model_t *m, const sym_tensor_t *logits, const int32_t *labels,
                      float grad_scale, sym_tensor_t *dlogits, int64_t *correct);
/* The L2 norm of gradients g laid out as the model's table, every element of
 * the whole model counted once: the split tensors' squares summed over the TP
 * team, the whole ones' taken once (collective with TP; NAN if it fails). */
double sym_model_grad_norm(const sym_model_t *m, const float *g);

/* Training FLOPs per token (GPT: 6 x parameters + 6 x L x T x C, the PaLM
 * formula with attention) or per sample (MLP: 6 x parameters). */
double sym_model_flops_per_token(const sym_model_t *m, int seq);

/* A batch for the forward pass. */
typedef struct {
    int rows;              /* samples (MLP) or sequences (GPT) */
    int seq;               /* GPT: tokens per sequence, 1..T; MLP: 1 */
    const float *x;        /* MLP: (rows, D0) */
    const int32_t *tokens; /* GPT: (rows, seq), each in [0, V) */
} sym_input_t;

typedef struct {
    int training;   /* dropout on */
    uint64_t step;  /* the global step (dropout masks) */
    int64_t row0;   /* global row of this batch's row 0 (dropout masks) */
} sym_forward_t;

/* logits (rows * seq, sym_model_logit_width) for the input, rows <= max_rows.
 * The returned tensor lives in the model's activations until the next
 * forward; the input must stay unchanged until the backward pass. */
int sym_model_forward(sym_model_t *m, const sym_input_t *in, const sym_forward_t *f,
                      sym_tensor_t *logits);

/* Called during backward each time the gradients [lo, P) of the flat array are
 * final (layers finish from the last to the first). */
typedef void (*sym_grad_ready_fn)(void *user, size_t lo);

/* Backward of the latest training forward, dlogits (rows * seq, logit width)
 * the loss gradient (it may be the logits tensor itself, and is consumed).
 * ADDS into every gradient (sym_model_zero_grads first for a fresh step);
 * calls ready (may be NULL) as layers finish. */
int sym_model_backward(sym_model_t *m, const sym_tensor_t *dlogits, sym_grad_ready_fn ready,
                       void *user);

/* Autoregressive sampling: extend tokens[0..n) to tokens[0..n + max_new),
 * each new token drawn from softmax(logits / temperature) over the top_k most
 * likely (top_k <= 0: all; temperature 0: the arg-max), a pure function of
 * (seed, position). The context fed to the model is the last T tokens. each
 * (may be NULL) is called with every new token as it is drawn. GPT only;
 * tokens has room for n + max_new. Returns 0 or a SYM_E* code. */
int sym_model_generate(sym_model_t *m, int32_t *tokens, int n, int max_new, float temperature,
                       int top_k, uint64_t seed, void (*each)(void *user, int32_t token),
                       void *user);

#ifdef __cplusplus
}
#endif

#endif
