/*
 * symtrain/plan.h — the layout planner: for a GPT, a PE count, a device and
 * its links, the memory per PE and the step time of every data x tensor x
 * pipeline layout (with micro-batches, ZeRO stage and recompute), which of
 * them fit, and the fastest (src/train/parallel/plan.c; `symtrain plan`).
 *
 * Memory is what our code allocates, kind by kind, for the PE that holds the
 * most (the CPU's pool blocks of models/gpt.c, the GPU's one region of
 * models/gpt_cuda.cu); it is checked against the training loop's own report
 * (tests/train_plan_memory.c). Time is a model: compute = FLOPs / the
 * device's rate, communication = latency + bytes / the link's collective
 * bandwidth, the pipeline bubble (pp - 1) / (m + pp - 1), nothing overlapped
 * but the GPU's gradient average with the backward (as gpt_cuda.cu does).
 * The rates come with the request (sym_plan_defaults fills recorded figures;
 * sym_plan_measure_cpu measures this machine's CPU) and every figure used is
 * named in the answer (sym_plan_assumptions).
 */
#ifndef SYMTRAIN_PLAN_H
#define SYMTRAIN_PLAN_H

#include <stddef.h>

#include "nn.h"
#include "train.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { SYM_PLAN_CPU = 0, SYM_PLAN_GPU = 1 } sym_plan_device_t;

/* A link between PEs: its all-reduce bus bandwidth (bytes/s, nccl-tests'
 * busbw), point-to-point bandwidth (bytes/s) and small-message latency (s). */
typedef struct {
    char name[16];
    double busbw, p2p_bw, latency;
    const char *source; /* where the figures come from ("recorded: ...", "assumed: ...") */
} sym_plan_link_t;

typedef struct {
    sym_model_config_t model; /* a GPT (sym_model_parse) */
    int pes;                  /* PEs in all */
    int pes_per_node;         /* PEs that share the intra-node link (0: all of them) */
    sym_plan_device_t device;
    size_t device_mem;        /* bytes each PE may use (0: no limit) */
    int batch;                /* global batch, sequences */
    int seq;                  /* tokens per sequence (0: the model's context) */
    int optimizer;            /* sym_optim_kind_t */
    double flops;             /* the device's training rate per PE, FLOP/s */
    const char *flops_source;
    double mem_bw;            /* bytes/s per PE, for the optimizer's pass */
    const char *mem_bw_source;
    sym_plan_link_t intra, inter; /* within a node; between nodes */
    size_t bucket_bytes;      /* the gradient all-reduce's bucket (--bucket-mb) */
    int vocab_parallel;       /* TP splits the embedding and LM head (0: whole on every PE,
                                 as models/gpt.c does today) */
    int runnable_only;        /* choose only layouts our code trains today on this device */
    int virtual_stages;       /* pipeline candidates at V interleaved chunks a stage: 0 every
                                 V the layers and micro-batches allow (1 included), 1 none,
                                 V > 1 that V alone, and then no layout without a pipeline */
} sym_plan_request_t;

typedef struct {
    int dp, tp, pp;
    int micro;     /* micro-batches per step (per data-parallel replica) */
    int zero;      /* 0, 1 (optimizer state sharded) or 2 (and gradients) */
    int recompute; /* 1: keep each block's input only, recompute its forward in the backward */
    int virtual_stages; /* V model chunks a pipeline stage, interleaved 1F1B (0, 1: one) */
} sym_plan_layout_t;

/* Bytes per PE, by kind. */
typedef struct {
    size_t params, grads, optim, acts, total;
} sym_plan_mem_t;

typedef struct {
    sym_plan_layout_t layout;
    int rows;            /* sequences per micro-batch on one PE */
    size_t params_local; /* parameters held by the heaviest PE */
    sym_plan_mem_t mem;  /* the heaviest PE's */
    int fits;            /* mem.total <= device_mem */
    double t_compute, t_bubble, t_tp, t_pp, t_dp, t_optim, t_step; /* seconds */
    double t_dp_total;   /* the gradient average's whole time (t_dp: what the backward does
                            not hide) */
    double bubble;       /* (pp - 1) / (V m + pp - 1) */
    int dp_inter, tp_inter, pp_inter; /* the collective crosses nodes */
    char needs[96];      /* what the layout needs that our code does not do yet ("" none) */
} sym_plan_result_t;

/* Recorded figures for the device (GPU: one H200 and NVLink; CPU: this
 * repository's 2-core VM measurements) and the request's other defaults:
 * batch 16, the model's context, AdamW, all PEs on one node (GPU: 8 a node). */
void sym_plan_defaults(sym_plan_request_t *r, sym_plan_device_t device);

/* Measure this CPU: a single-thread sgemm rate and a memory bandwidth, in
 * about 0.2 s; `threads` per PE with `pes` PEs on `cores` cores sets the
 * per-PE share. Fills r->flops and r->mem_bw with their sources. */
void sym_plan_measure_cpu(sym_plan_request_t *r, int cores);

/* A link by name: nvlink, pcie, tcp, ib, shm. Returns 0, or SYM_EINVAL. */
int sym_plan_link(const char *name, sym_plan_link_t *out);

/* Exact parameter count of a GPT split over tp (the heaviest PE's; pp = 1). */
size_t sym_plan_params(const sym_model_config_t *m, int tp, int vocab_parallel);

/* One layout. Returns 0, or SYM_EINVAL with the reason (layout not possible:
 * the product is not the PE count, tp does not divide the heads, ...). */
int sym_plan_evaluate(const sym_plan_request_t *r, const sym_plan_layout_t *l,
                      sym_plan_result_t *out);

/* Every possible layout, fastest first (those that fit before those that do
 * not). *out is malloc'd; free it. Returns 0 or an error. */
int sym_plan_candidates(const sym_plan_request_t *r, sym_plan_result_t **out, int *n);

/* The fastest layout that fits (and, with runnable_only, that our code trains
 * today): what `--parallel auto` uses. Returns 0, or SYM_ENOMEM when none
 * fits (the message says what the smallest needs). */
int sym_plan_choose(const sym_plan_request_t *r, sym_plan_layout_t *out);

/* The request `--parallel auto` makes for a run of `c` on npes PEs: its model,
 * global batch, sequence, optimizer and bucket; the device's figures from
 * sym_plan_defaults (the CPU's then measured by sym_plan_measure_cpu on one
 * PE, whose choice is broadcast: src/train/parallel/autoplan.c);
 * runnable_only; device_mem as the caller knows it (CPU: the host's memory /
 * its PEs; 0: no limit). */
void sym_plan_train_request(const sym_train_config_t *c, int npes, int gpu, size_t device_mem,
                            sym_plan_request_t *r);

/* The figures and assumptions behind the answer, one per line. */
void sym_plan_assumptions(const sym_plan_request_t *r, char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif
