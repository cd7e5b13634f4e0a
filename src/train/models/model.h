/*
 * model.h — what the model files share (src/train/models): the model object,
 * its parameter table, and the operations each kind of model supplies.
 *
 * model.c owns everything common: parsing a spec into a config, the table of
 * named parameters and the flat parameter / gradient arrays it lays out in
 * one pool (symmetric for data parallelism), the accessors, and sampling.
 * mlp.c and gpt.c each add their parameters, their activations and an
 * explicit forward and backward pass.
 */
#ifndef SYM_TRAIN_MODEL_H
#define SYM_TRAIN_MODEL_H

#include <symtrain/nn.h>
#include <symtrain/pipeline.h>

typedef struct {
    /* Add the parameters (sym__model_param) and return 0 or an error. */
    int (*declare)(sym_model_t *m);
    /* After the flat arrays exist: activations (m->impl). */
    int (*init)(sym_model_t *m);
    /* The initial weights from cfg.seed (sym_model_draw_weights). */
    int (*weights)(sym_model_t *m);
    int (*forward)(sym_model_t *m, const sym_input_t *in, const sym_forward_t *f,
                   sym_tensor_t *logits);
    int (*backward)(sym_model_t *m, const sym_tensor_t *dlogits, sym_grad_ready_fn ready,
                    void *user);
    void (*destroy)(sym_model_t *m); /* frees m->impl */
    /* Pipeline stages (GPT; NULL for the MLP): which activation set the next
     * forward / backward uses, and the input's gradient after a backward. */
    void (*use_slot)(sym_model_t *m, int slot);
    const float *(*input_grad)(const sym_model_t *m);
    /* Tensor parallelism (NULL for kinds that are not split): copy between
     * parameter i's whole tensor `full` and team PE k's part of it, `part`
     * (k's shape of the table entry), to the whole (to_full) or to the part. */
    void (*shard_copy)(const sym_model_t *m, int i, int k, float *full, float *part, int to_full);
    /* The same split as boxes: parameter i of this PE as pieces of the whole
     * tensor (at most SYM_PARAM_MAX_PIECES); returns how many. */
    int (*pieces)(const sym_model_t *m, int i, sym_param_piece_t *pc);
} sym__model_ops_t;

struct sym_model {
    sym_model_config_t cfg;
    const sym__model_ops_t *ops;
    int max_rows;
    sym_param_t *param; /* the table (nparam entries, ascending offsets) */
    int nparam, param_cap;
    size_t nparams;     /* floats in the flat arrays */
    sym_pool_t *state;  /* params + grads */
    float *params, *grads;
    void *impl;         /* the kind's activations and scratch */
    sym_pool_t *acts;   /* the kind's activations pool (NULL: none), for sym_model_memory */
    shmem_team_t tp;    /* tensor parallelism: the team the GPT's blocks are split over */
    int tp_size, tp_rank; /* 1 and 0 without */
    /* pipeline parallelism (sym_model_create_stage): the part of the GPT held
     * here; the whole model otherwise (one chunk of n_layer blocks, embed and head 1) */
    int nl;             /* blocks held, over all chunks */
    int chunks, chunk;  /* model chunks held (virtual stages; 1 without), the one in use */
    int chunk_l0[SYM_GPT_MAX_CHUNKS], chunk_nl[SYM_GPT_MAX_CHUNKS];
                        /* chunk k: blocks [chunk_l0[k], chunk_l0[k] + chunk_nl[k]) */
    int chunk_at[SYM_GPT_MAX_CHUNKS]; /* its first block's place among the nl held */
    int embed, head;    /* wte + wpe (chunk 0); ln_f + the LM head, with its copy of wte
                           (the last chunk) */
    int slots;          /* activation sets (micro-batches between forward and backward) */
    int64_t v0, nv;     /* GPT: the rows of wte held, [v0, v0 + nv) (0 and Vp without TP) */
    sym_param_t *full;  /* with TP: the 1-PE model's table (same names, whole shapes) */
    size_t full_nparams;
    int full_ntensors;  /* entries of full */
};

extern const sym__model_ops_t sym__mlp_ops, sym__gpt_ops;

/* Append a parameter of `shape` to the table; returns its offset in floats,
 * or (size_t)-1 with the error recorded. Decay: matrices (ndim >= 2). */
size_t sym__model_param(sym_model_t *m, const char *name, int ndim, const int64_t *shape);

/* The parameters (floats) a GPT stage holds: its table declared on a scratch
 * model, nothing allocated. */
size_t sym__model_stage_params(const sym_model_config_t *cfg, int tp_size,
                               const sym_gpt_stage_t *st);

/* m's chunks from st (NULL: one chunk, the whole model's blocks). */
void sym__model_set_chunks(sym_model_t *m, const sym_gpt_stage_t *st);

/* The next power of two >= x, at least 64 (a buddy block). */
size_t sym__pow2_at_least(size_t x);

/* Parsers of each kind's spec (the part after "mlp:" / "gpt:"). */
int sym__mlp_parse(const char *spec, const char *body, sym_model_config_t *cfg);
int sym__gpt_parse(const char *spec, const char *body, sym_model_config_t *cfg);

#endif
