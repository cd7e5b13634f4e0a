/*
 * layout.h — a run's state in any parallel layout as slices of global tensors
 * (ckpt/layout.c): what each PE writes to a checkpoint and what it reads back.
 *
 * The global tensors are the 1-PE model's ("h.0.attn.c_attn.weight", whole
 * shape) and, per kind of optimizer state, the same named "exp_avg.NAME",
 * "exp_avg_sq.NAME" (AdamW) or "momentum.NAME" (SGD). A PE holds boxes of them:
 * its pipeline stage's tensors, their tensor-parallel pieces
 * (sym_model_param_pieces), and with ZeRO only its blocks of the optimizer
 * state. Saving, every element of the job's state is written by exactly one
 * PE: a part several PEs hold alike (data-parallel replicas; tensors whole on
 * every PE of a tp group; the last pipeline stage's copy of the tied wte) is
 * split between them, or left to its first holder. Loading, each PE names
 * every box it holds and reads it from whatever slices a checkpoint stored
 * (resharding), or copies it out of whole arrays (the single-writer format).
 */
#ifndef SYM_TRAIN_CKPT_LAYOUT_H
#define SYM_TRAIN_CKPT_LAYOUT_H

#include <stddef.h>

#include <symtrain/ckpt.h>
#include <symtrain/nn.h>
#include <symtrain/zero.h>

#define SYM_CKPT_KINDS 3 /* the parameters, then up to two optimizer state arrays */

typedef struct {
    sym_model_t *model;          /* this PE's part: a stage, its tp piece */
    float *params;               /* its parameters' array (NULL: the model's) */
    int nstate;                  /* optimizer state arrays: 1 (SGD) or 2 (AdamW) */
    const char *state_name[2];   /* their prefixes: "momentum"; "exp_avg", "exp_avg_sq" */
    float *state[2];             /* the whole local arrays (P floats each); or NULL and */
    sym_zero_t *zero;            /* ZeRO: its blocks of them (sym_zero_block) */
    int dp, dp_rank;             /* PEs holding this same part (same stage and tp rank) */
    int tp_rank;                 /* in the tp group (0 without) */
    int skip_tied;               /* a stage after the first: its wte is stage 0's copy */
    int pad_owner;               /* with tp: writes wte's padding rows (zeros; PE 0) */
} sym__ckpt_layout_t;

/* Slices, each with its kind (0 parameters, 1 + k state array k) and the
 * offset in floats of its tensor in the whole model's flat array. */
typedef struct {
    sym_ckpt_slice_t *s;
    int *kind;
    size_t *woff;
    int n, cap;
    float *zeros; /* the padding rows' data */
} sym__ckpt_slices_t;

/* save: the slices this PE writes; else those it holds (to be read). Their
 * data point into the run's arrays. 0, SYM_ENOMEM. */
int sym__ckpt_layout_slices(const sym__ckpt_layout_t *L, int save, sym__ckpt_slices_t *out);
void sym__ckpt_slices_free(sym__ckpt_slices_t *s);
/* Keep the parameters' slices (kind 0) alone, in their order. The slices
 * are kind-major (the padding rows' last), so without tp's padding rows
 * these are a prefix of the whole list. */
void sym__ckpt_slices_keep_params(sym__ckpt_slices_t *s);
/* Between the slices and whole arrays (whole[kind], laid out as the whole
 * model's flat array), either way. Local. */
void sym__ckpt_slices_copy(const sym__ckpt_slices_t *s, float *const *whole, int to_whole);
/* Every PE (collective over SHMEM_TEAM_WORLD) with its save slices: PE 0's
 * whole arrays (whole[kind], the others pass NULLs) get every PE's, PE by
 * PE through a symmetric window of a few MiB. */
int sym__ckpt_slices_gather(const sym__ckpt_slices_t *s, float *const *whole);

#endif
