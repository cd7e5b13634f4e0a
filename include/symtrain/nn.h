/*
 * symtrain/nn.h — layers with hand-written forward and backward passes, the
 * softmax cross-entropy loss, and the MLP model built from a config string.
 *
 * Shapes are written beside each argument: B is the batch (rows), I and O a
 * layer's input and output widths, C the number of classes. Every tensor here
 * is row-major 2-D fp32 unless it says otherwise.
 *
 * The model keeps all parameters in one flat array and all gradients in another
 * of the same layout (plus SYM_GRAD_CTRL control floats at the end that the
 * trainer all-reduces along with the gradients). Both live in one pool region,
 * symmetric when the model is built for data parallelism.
 */
#ifndef SYMTRAIN_NN_H
#define SYMTRAIN_NN_H

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
/* Given dy (B,O): dw (O,I) = dy^T @ x, db (O) = column sums of dy, and, when dx
 * is not NULL, dx (B,I) = dy @ w. dw and db are overwritten, not accumulated. */
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

/* Softmax cross-entropy over logits (B,C) with labels (B) in [0, C).
 * Returns the sum over rows of -log softmax(logits)[label] (in double);
 * *correct (may be NULL) gets the number of rows whose arg-max is the label.
 * When dlogits (B,C) is not NULL it receives (softmax - onehot) * grad_scale,
 * the gradient of grad_scale * (the summed loss). */
double sym_softmax_xent(const sym_tensor_t *logits, const uint8_t *labels, float grad_scale,
                        sym_tensor_t *dlogits, int64_t *correct);

/* ---- the model ---- */

#define SYM_MAX_LAYERS 8 /* linear layers in an MLP */
#define SYM_GRAD_CTRL 16 /* control floats after the gradients (one cache line) */

typedef enum { SYM_ACT_RELU = 0, SYM_ACT_GELU = 1 } sym_act_t;

typedef struct {
    char spec[128];            /* "mlp:784-512-256-10" as given */
    int nlayers;               /* linear layers: dims has nlayers + 1 entries */
    int dims[SYM_MAX_LAYERS + 1];
    sym_act_t act;             /* after every hidden linear layer */
    float dropout;             /* after every hidden activation; 0 = none */
    uint64_t seed;             /* weight init and dropout masks */
} sym_model_config_t;

/* Parse "mlp:D0-D1-...-Dn" (2 <= n + 1 <= SYM_MAX_LAYERS + 1 widths, each
 * 1..65536) into cfg->spec, nlayers, dims; other fields are left alone. */
int sym_model_parse(const char *spec, sym_model_config_t *cfg);
const char *sym_act_name(sym_act_t act);
int sym_act_parse(const char *name, sym_act_t *act);

typedef struct sym_model sym_model_t; /* opaque */

/* Build the model: one pool for parameters + gradients (+ control floats),
 * symmetric if `symmetric` (collective: every PE, same config), then weights
 * drawn from cfg->seed (PyTorch's default: U(-1/sqrt(I), 1/sqrt(I)) for w and b).
 * max_batch bounds the rows of a forward pass (activations are preallocated
 * for it from a private pool). */
int sym_model_create(const sym_model_config_t *cfg, int max_batch, int symmetric,
                     sym_model_t **out);
void sym_model_destroy(sym_model_t *m);
const sym_model_config_t *sym_model_config(const sym_model_t *m);

/* The flat parameters (P floats) and gradients (P + SYM_GRAD_CTRL floats). */
size_t sym_model_num_params(const sym_model_t *m);
float *sym_model_params(sym_model_t *m);
float *sym_model_grads(sym_model_t *m);

/* Parameter tensors in layout order: layer i's weight (O,I) then bias (O).
 * *offset (floats into the flat arrays), *numel, *is_bias. */
int sym_model_num_tensors(const sym_model_t *m);
void sym_model_tensor_info(const sym_model_t *m, int i, size_t *offset, size_t *numel,
                           int *is_bias);

typedef struct {
    int training;   /* dropout on */
    uint64_t step;  /* the global step (dropout masks) */
    int64_t row0;   /* global row of this batch's row 0 (dropout masks) */
} sym_forward_t;

/* logits (B,C) for x (B,D0), B <= max_batch. The returned tensor lives in the
 * model's activations until the next forward. */
int sym_model_forward(sym_model_t *m, const float *x, int batch, const sym_forward_t *f,
                      sym_tensor_t *logits);

/* Called during backward each time the gradients [lo, P) of the flat array are
 * final (layers finish from the last to the first). */
typedef void (*sym_grad_ready_fn)(void *user, size_t lo);

/* Backward of the latest training forward: x (B,D0) is its input and dlogits
 * (B,C) the loss gradient. Overwrites every gradient; calls ready (may be NULL)
 * as layers finish. */
int sym_model_backward(sym_model_t *m, const float *x, const sym_tensor_t *dlogits,
                       sym_grad_ready_fn ready, void *user);

#ifdef __cplusplus
}
#endif

#endif
