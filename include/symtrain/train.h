/*
 * symtrain/train.h — the data-parallel training loop behind `symtrain train`.
 *
 * Two kinds of job run through the same loop: an MLP classifying images
 * (Fashion-MNIST, or a generated set) and a GPT learning to predict the next
 * token of a text (token shards, or a generated corpus). Every PE runs
 * sym_train_run with the same config after shmem_init. Each step: gather this
 * PE's block of the global batch (samples, or sequences of seq + 1 tokens),
 * forward, loss, backward with the gradient buckets all-reduced as they
 * become ready, clip, one optimizer step.
 * Weights stay identical on every PE (same init, same averaged gradients), so
 * PE 0 alone prints, writes the metrics file and writes checkpoints.
 *
 * SIGTERM or SIGINT: the PEs agree (a flag travels with the gradients), finish
 * the step, PE 0 saves a checkpoint, and sym_train_run returns normally.
 *
 * Load balancing (balance, below): the PEs' blocks of each global batch
 * follow their measured speeds instead of being even; the global batch, the
 * samples of each step and the gradient (summed over the samples, divided by
 * the global batch) stay those of the even split, up to fp32 rounding.
 */
#ifndef SYMTRAIN_TRAIN_H
#define SYMTRAIN_TRAIN_H

#include <stdint.h>

#include "nn.h"
#include "optim.h"

/* Where `make data` puts the Shakespeare shards, relative to the directory
 * symtrain runs in (the project root for `make run`). */
#define SYM_TEXT_DATA_DEFAULT "build/data/shakespeare/train_*.bin"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { SYM_TRAIN_AUTO = 0, SYM_TRAIN_CPU = 1, SYM_TRAIN_GPU = 2 } sym_train_device_t;

/* Dynamic load balancing (docs/training.md): which share of every global
 * batch each PE computes. The global batch and the samples of each step stay
 * those of the even split; only which PE computes which sample moves. */
typedef enum {
    SYM_BALANCE_OFF = 0,        /* the even split (sym_shard_range) */
    SYM_BALANCE_THROUGHPUT = 1, /* shares proportional to each PE's smoothed samples/s */
    SYM_BALANCE_SCORE = 2       /* softmax of w0 (1 - GPU/CPU use) + w1 (1 - memory use)
                                   + w2 / (latency in ms + 1) */
} sym_balance_policy_t;

typedef struct {
    sym_balance_policy_t policy;
    int64_t every_steps;   /* rebalance every N steps (used when every_s is 0) */
    double every_s;        /* or every this many seconds */
    double hysteresis;     /* move work only for more than this fraction of a gain */
    double straggler;      /* slower than the median by more than this factor: named */
    double weights[3];     /* the score's weights */
} sym_balance_config_t;

/* How the PEs split the work (--parallel dp=N,tp=M,pp=K): dp data-parallel
 * replicas, each a GPT split over tp PEs (tensor parallelism), pp pipeline
 * stages. The PE count is dp x tp x pp; with pp = 1 PE i sits at tp
 * coordinate i % tp and dp coordinate i / tp (the mesh "dp=N,tp=M": a tp
 * group is tp consecutive PEs).
 * A tp group reads the same samples; the dp groups split the global batch.
 * All 0 (not given): dp over every PE, tp = pp = 1. */
typedef struct {
    int dp, tp, pp; /* 0 where not given: 1 */
    int plan;       /* --parallel auto: the layout planner chooses dp, tp, pp, the
                       micro-batches and the ZeRO stage for the job (symtrain/plan.h) */
} sym_parallel_t;

typedef struct {
    /* model */
    sym_model_config_t model;
    sym_parallel_t parallel;
    sym_train_device_t device; /* auto: a GPT on the GPU where there is one */
    int precision;          /* on the GPU: 0 fp32, 1 bf16 (default), 2 fp16, 3 tf32
                               (sym_precision_t); the CPU computes in fp32 */
    int recompute_gelu;     /* on the GPU: recompute activations in backward */
    int recompute_ln;
    int loss_scale_growth;  /* fp16 on the GPU: the loss scale doubles after this many steps
                               without an overflow (default 2000) */
    /* data */
    const char *data_dir;   /* MLP: the IDX directory (NULL: $SYMTRAIN_DATA_DIR or
                               SYM_FASHION_MNIST_DIR). GPT: a glob of training
                               shards (NULL: SYM_TEXT_DATA_DEFAULT). A generated
                               set when the default is not there */
    const char *val_data;   /* GPT: the validation shards' glob (NULL: the training
                               glob's train_ replaced by val_) */
    int generated;          /* use the generated data set / corpus */
    int seq;                /* GPT: tokens per sequence (0 = the model's T) */
    int64_t train_samples;  /* use the first N training samples (0 = all) */
    int64_t test_samples;   /* evaluate on the first N test samples / validation
                               sequences (0 = all; GPT default 256) */
    /* schedule */
    int epochs;
    int global_batch;
    int64_t steps;          /* the run's length in steps, the schedule's too (0: epochs
                               x steps per epoch); epochs repeat the data as needed */
    int64_t max_steps;      /* stop after this many steps in all (0 = no limit); the
                               schedule does not change, so a run can be continued */
    int64_t eval_every;     /* also evaluate every N steps (0 = at epoch ends only) */
    sym_optim_config_t optim;
    float lr;               /* peak */
    float final_lr_ratio;   /* the cosine ends at lr * this */
    float warmup_epochs;    /* warmup length, in epochs (fractions allowed) */
    int64_t warmup_steps;   /* warmup length in steps; -1: from warmup_epochs */
    float clip;             /* max global gradient norm (0 = off) */
    double bucket_mb;       /* gradient bucket size */
    int zero;               /* ZeRO stage: 0 plain data parallelism, 1 sharded optimizer
                             * state, 2 also sharded gradients (symtrain/zero.h) */
    int threads;            /* BLAS threads per PE (0 = cores / PEs on this host) */
    /* ---- pipe: pipeline parallelism (symtrain/pipeline.h) ---- */
    int micro_batches;      /* a step's micro-batches per dp replica: with pp > 1 the
                               pipeline's (0: the stages' count), else gradient
                               accumulation over them (0, 1: one) */
    int inbox_slots;        /* each pipeline inbox's slots (0: the stages' count) */
    int virtual_stages;     /* model chunks a pipeline stage holds, interleaved (0, 1: one) */
    /* ---- end pipe ---- */
    sym_balance_config_t balance;
    /* checkpoints */
    const char *ckpt_dir;   /* NULL: no checkpoints */
    double ckpt_every_s;    /* 0 = not by time */
    int64_t ckpt_steps;     /* 0 = not by step count */
    int ckpt_at_eval;       /* also one after every evaluation (--eval-every, an epoch's end) */
    int ckpt_keep;
    int ckpt_sharded;       /* every PE writes its shards (format 3); 0: PE 0 writes all */
    int ckpt_sync;          /* --ckpt-async off: each checkpoint is written and committed
                               before the next step; 0 (the default): a snapshot is taken
                               after the step and a background thread writes it */
    int64_t mem_ckpt_every; /* in-memory snapshots on buddy PEs every N steps (and at each
                               --ckpt-steps checkpoint); 0: none (ckpt/peer.h) */
    int resume;             /* SYM_RESUME_* */
    /* what a person sees */
    const char *metrics_path;
    int metrics_port;       /* every PE serves Prometheus metrics on this port plus its
                               rank on the host; 0: free ports, each logged; -1: off */
    double log_interval_s;  /* progress lines when stdout is not a terminal */
    int progress;           /* SYM_PROGRESS_*: how progress shows while an epoch runs */
    int quiet;              /* no banner or progress; errors and the outcome still print */
    int sample_tokens;      /* GPT: tokens PE 0 generates at the end (0 = none) */
    const char *sample_prompt; /* their prompt (NULL: a new line) */
} sym_train_config_t;

/* What --resume asks: continue from the newest good checkpoint in ckpt_dir,
 * and when there is none (nothing there, or only damaged ones) stop with an
 * error (MUST), or start from the beginning (AUTO, for a job that restarts
 * itself). A checkpoint that cannot be read is an error either way. */
enum { SYM_RESUME_NO = 0, SYM_RESUME_MUST = 1, SYM_RESUME_AUTO = 2 };

/* How progress shows while an epoch runs (--progress): AUTO, a bar on the
 * user's terminal and plain lines elsewhere (a file, a pipe, the pseudo-
 * terminal a launcher such as mpirun gives each rank); PLAIN, a line every
 * log_interval_s; BAR, a bar redrawn in place; OFF, only each epoch's summary. */
enum { SYM_PROGRESS_AUTO = 0, SYM_PROGRESS_PLAIN = 1, SYM_PROGRESS_BAR = 2, SYM_PROGRESS_OFF = 3 };

typedef struct {
    int64_t steps;          /* steps done in all (including before a resume) */
    int64_t epochs_done;
    double test_acc;        /* after the last epoch; -1 if not evaluated (GPT: the
                               validation set's next-token accuracy) */
    double test_loss;       /* GPT: the validation loss */
    double seconds;         /* wall time of this run */
    int stopped;            /* ended early by SIGTERM / SIGINT */
    char checkpoint[4096];  /* the last checkpoint written ("" if none) */
} sym_train_result_t;

/* The defaults of `symtrain train`. */
void sym_train_defaults(sym_train_config_t *cfg);
/* Check a config; SYM_EINVAL with sym_last_error saying which option is wrong. */
int sym_train_validate(const sym_train_config_t *cfg, int npes);
/* Train. Call on every PE, after shmem_init. Returns 0 or a SYM_E* code; on
 * error the message has been printed (once, by PE 0 when every PE sees it).
 * After an error, end the process without shmem_finalize (the other PEs may
 * be inside a collective; the launcher ends them): an error one PE met alone
 * leaves the run's symmetric allocations in place. */
int sym_train_run(const sym_train_config_t *cfg, sym_train_result_t *result);

#ifdef __cplusplus
}
#endif

#endif
