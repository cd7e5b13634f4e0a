/*
 * symtrain/optim.h — optimizers over a flat parameter array, the learning-rate
 * schedule, and gradient clipping.
 *
 *   SGD with momentum (PyTorch's form):  g += wd * w;  buf = mu * buf + g;
 *                                        w -= lr * buf
 *   AdamW (Loshchilov & Hutter):         w -= lr * wd * w   (decoupled decay)
 *                                        m = b1 m + (1 - b1) g
 *                                        v = b2 v + (1 - b2) g^2
 *                                        w -= lr * (m / (1 - b1^t)) /
 *                                             (sqrt(v / (1 - b2^t)) + eps)
 *
 * Ranges marked with sym_optim_no_decay (biases) get no weight decay. The
 * state (momentum, or m and v, and the step count t) is saved and restored
 * byte for byte, which is what exact resume needs.
 */
#ifndef SYMTRAIN_OPTIM_H
#define SYMTRAIN_OPTIM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { SYM_OPT_SGD = 0, SYM_OPT_ADAMW = 1 } sym_optim_kind_t;

typedef struct {
    sym_optim_kind_t kind;
    float momentum;     /* SGD */
    float beta1, beta2; /* AdamW */
    float eps;          /* AdamW */
    float weight_decay;
} sym_optim_config_t;

typedef struct sym_optim sym_optim_t; /* opaque */

const char *sym_optim_name(sym_optim_kind_t kind);
int sym_optim_parse(const char *name, sym_optim_kind_t *kind);

/* An optimizer for `n` parameters with zeroed state. */
int sym_optim_create(const sym_optim_config_t *cfg, size_t n, sym_optim_t **out);
/* The same over state arrays the caller owns (n floats each, zeroed; buf1
 * for AdamW only), which destroy leaves alone: the sharded optimizer keeps
 * them in symmetric memory, where another PE can read them. */
int sym_optim_create_on(const sym_optim_config_t *cfg, size_t n, float *buf0, float *buf1,
                        sym_optim_t **out);
void sym_optim_destroy(sym_optim_t *o);
/* Exclude params [off, off + len) from weight decay. */
int sym_optim_no_decay(sym_optim_t *o, size_t off, size_t len);
/* One update of w (n) from g (n) at learning rate lr. */
void sym_optim_step(sym_optim_t *o, float *w, const float *g, float lr);
/* Updates taken so far (t). */
uint64_t sym_optim_steps(const sym_optim_t *o);
/* The state arrays (n floats each): 0 is SGD's momentum or AdamW's m, 1 is
 * AdamW's v (NULL for SGD, and for any other i). For an optimizer whose steps
 * run elsewhere (on a GPU) and whose state is kept here for checkpoints. */
float *sym_optim_buffer(sym_optim_t *o, int i);
void sym_optim_set_steps(sym_optim_t *o, uint64_t t);

/* The state as bytes: a small header (kind, n, t) then the arrays. */
size_t sym_optim_state_size(const sym_optim_t *o);
/* Bytes of its state arrays in memory (SGD: momentum; AdamW: m and v). */
size_t sym_optim_bytes(const sym_optim_t *o);
void sym_optim_state_save(const sym_optim_t *o, void *buf);
/* Only the header, into the first bytes of buf (the arrays after it are the
 * caller's to fill: a GPU's snapshot copies them there); returns its size. */
size_t sym_optim_state_header(const sym_optim_t *o, void *buf);
/* Returns SYM_EMISMATCH when buf holds another kind or size of optimizer,
 * SYM_ECORRUPT when it is not optimizer state at all. */
int sym_optim_state_load(sym_optim_t *o, const void *buf, size_t len);

/* ---- learning-rate schedule: linear warmup, then cosine decay ---- */

typedef struct {
    float peak;          /* after warmup */
    float final;         /* at total_steps */
    int64_t warmup;      /* steps of linear warmup from peak / warmup */
    int64_t total_steps; /* the cosine reaches `final` here */
} sym_lr_schedule_t;

/* The rate for step `step` (0-based): peak * (step + 1) / warmup during warmup,
 * then final + (peak - final) * (1 + cos(pi * progress)) / 2. */
float sym_lr_at(const sym_lr_schedule_t *s, int64_t step);

/* ---- clipping ---- */

/* The L2 norm of g (n), accumulated in double. */
double sym_grad_norm(const float *g, size_t n);
/* Scale g so its norm is at most max_norm (max_norm <= 0: leave it). Returns
 * the norm before clipping. */
double sym_grad_clip(float *g, size_t n, double max_norm);
/* The same scaling for a norm computed elsewhere (a model split over PEs:
 * sym_model_grad_norm). */
void sym_grad_scale_to(float *g, size_t n, double norm, double max_norm);

#ifdef __cplusplus
}
#endif

#endif
