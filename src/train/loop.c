/*
 * loop.c — the data-parallel training loop (see symtrain/train.h).
 *
 * One step on every PE:
 *   gather this PE's rows of the global batch (data/task.c: images, or
 *   windows of tokens) -> forward -> softmax cross-entropy over the classes or
 *   the vocabulary, its gradient computed in place over the logits (scaled by
 *   npes / (global batch x tokens per sample), so averaging over PEs gives the
 *   mean over the global batch's predictions) -> backward, each finished
 *   gradient bucket's all-reduce started at once -> wait -> clip -> optimizer
 *   step.
 * Two control floats travel at the end of the gradient array: this PE's share
 * of the mean loss (their average is the global batch's mean loss) and a stop
 * flag (non-zero after a SIGTERM / SIGINT on any PE), so the PEs agree on where
 * to stop without another message.
 *
 * With load balancing (--balance, balance/) each PE computes its share of
 * the global batch instead of an even block; the loss gradient's scale stays
 * npes / predictions of the whole batch, so the average over PEs is still the
 * sum over the batch's samples / its size, whatever the shares. After each
 * step the PEs exchange their load records (one small all-gather) and agree
 * on the next step's shares.
 *
 * With --parallel ...,pp=K (the "pipe" blocks) each PE holds one pipeline
 * stage (parallel/pipeline.c): the step runs the stages' micro-batches in the
 * 1F1B order, each dp replica on its block of the batch, and the last
 * stages' loss and the stop flag are summed over the job in one small
 * all-reduce after it.
 *
 * Checkpoints: PE 0 snapshots weights, optimizer state and position after a
 * step and hands them to the background writer (--ckpt-async off: and waits
 * for the write); after every step the PEs agree on PE 0's --ckpt-every
 * verdict and on any failed write, which ends the run (ckpt_agree,
 * ckpt/async.c); every PE reads one on --resume.
 * The position (epoch, sample) plus the seed fix everything else: the
 * permutation, the dropout masks and the learning rate are functions of them;
 * the shares of the next step travel in the manifest.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <sched.h>
#include <shmem.h>
#include <shmemx.h>
#include <signal.h>
#include <sys/resource.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <symtrain/ckpt.h>
#include <symtrain/data.h>
#include <symtrain/dist.h>
#include <symtrain/dtensor.h>
#include <symtrain/metrics.h>
#include <symtrain/pipeline.h>
#include <symtrain/rng.h>
#include <symtrain/train.h>
#include <symtrain/zero.h>

#include "balance/balance.h"
#include "ckpt/async.h"
#include "ckpt/layout.h"
#include "ckpt/peer.h"
#include "core/device.h"
#include "core/parallel.h"
#include "data/task.h"
#include "internal.h"
#include "obs/progress.h"
#include "obs/prom.h"
#include "parallel/autoplan.h"
#include "util/util.h"

#define CTRL_LOSS 0 /* control floats after the gradients */
#define CTRL_STOP 1
#define EVAL_ROWS 512

/* ---- defaults and validation ---- */

void sym_train_defaults(sym_train_config_t *c) {
    memset(c, 0, sizeof *c);
    sym_model_parse("mlp:784-512-256-10", &c->model);
    c->model.act = SYM_ACT_RELU;
    c->model.dropout = 0.2f;
    c->model.seed = 1;
    c->epochs = 10;
    c->global_batch = 128;
    c->optim.kind = SYM_OPT_ADAMW;
    c->optim.momentum = 0.9f;
    c->optim.beta1 = 0.9f;
    c->optim.beta2 = 0.999f;
    c->optim.eps = 1e-8f;
    c->optim.weight_decay = 0.01f;
    c->lr = 1e-3f;
    c->final_lr_ratio = 0.01f;
    c->warmup_epochs = 0.25f;
    c->warmup_steps = -1;
    c->precision = SYM_PREC_BF16;
    c->loss_scale_growth = 2000;
    c->clip = 1.0f;
    c->bucket_mb = 25;
    c->ckpt_keep = 3;
    c->log_interval_s = 10;
    c->balance.policy = SYM_BALANCE_OFF;
    c->balance.every_steps = 10;
    c->balance.hysteresis = 0.05;
    c->balance.straggler = 1.5;
    c->balance.weights[0] = 0.6;
    c->balance.weights[1] = 0.3;
    c->balance.weights[2] = 0.1;
    c->metrics_port = -1;
}

/* The layout's sizes: --parallel's, 1 where not given; dp over every PE
 * when --parallel is not given at all. */
static sym_parallel_t layout_of(const sym_train_config_t *c, int npes) {
    const sym_parallel_t *p = &c->parallel;
    sym_parallel_t l = {npes, 1, 1, 0};
    if (p->dp || p->tp || p->pp) {
        l.dp = p->dp ? p->dp : 1;
        l.tp = p->tp ? p->tp : 1;
        l.pp = p->pp ? p->pp : 1;
    }
    return l;
}

/* Sequence parallelism (--parallel ...,sp) and --tp-overlap against the
 * layout. */
static int validate_gpt_split(const sym_train_config_t *c, const sym_parallel_t *l) {
    if (c->model.seq_parallel && l->tp == 1)
        return sym__error(SYM_EINVAL, "--parallel ...,sp: sequence parallelism splits the "
                                      "activations of a tp group, and there is none; add tp=M "
                                      "(M > 1)");
    if (c->model.tp_chunks > 1 && (l->tp == 1 || c->model.seq_parallel))
        return sym__error(SYM_EINVAL, "--tp-overlap %d overlaps a tp group's all-reduces with "
                                      "its GEMMs; %s",
                          c->model.tp_chunks, l->tp == 1 ? "there is no tp group: add tp=M (M > 1)"
                                                         : "with sp there are none (reduce-scatters "
                                                           "and all-gathers instead): drop one");
    return SYM_OK;
}

/* --micro-batches: a step's micro-batches per data-parallel replica, one
 * option for both kinds: with pp > 1 the pipeline's (default: one per
 * stage), else gradient accumulation (default 1). */
static int micro_of(const sym_train_config_t *c, sym_parallel_t l) {
    return c->micro_batches > 0 ? c->micro_batches : l.pp;
}

/* --parallel against the job and the model. */
static int validate_layout(const sym_train_config_t *c, int npes) {
    sym_parallel_t l = layout_of(c, npes);
    int rc;
    if (l.dp < 1 || l.tp < 1 || l.pp < 1)
        return sym__error(SYM_EINVAL, "--parallel: dp, tp and pp are whole numbers >= 1");
    if ((long)l.dp * l.tp * l.pp != npes)
        return sym__error(SYM_EINVAL,
                          "--parallel dp=%d,tp=%d,pp=%d makes %ld PEs, but the job has %d: make "
                          "dp x tp x pp = %d (a size not given is 1)",
                          l.dp, l.tp, l.pp, (long)l.dp * l.tp * l.pp, npes, npes);
    if ((rc = validate_gpt_split(c, &l))) return rc;
    int V = c->virtual_stages ? c->virtual_stages : 1;
    char why[256];
    if (V > 1 && c->model.kind == SYM_MODEL_GPT &&
        sym_pipe_virtual_check(c->model.n_layer, l.pp, V, micro_of(c, l), why, sizeof why))
        return sym__error(SYM_EINVAL, "%s", why);
    if (l.tp == 1) return SYM_OK;
    const sym_model_config_t *m = &c->model;
    if (m->kind != SYM_MODEL_GPT)
        return sym__error(SYM_EINVAL, "--parallel tp=%d: tensor parallelism splits a GPT "
                                      "(--model gpt:...), not %s; use dp for it",
                          l.tp, m->spec);
    if (m->n_head % l.tp || m->n_embd % l.tp)
        return sym__error(SYM_EINVAL,
                          "--parallel tp=%d: tp must divide the GPT's heads (%d) and width (%d) "
                          "of %s; choose a tp that divides both",
                          l.tp, m->n_head, m->n_embd, m->spec);
    if (m->vocab < l.tp)
        return sym__error(SYM_EINVAL, "--parallel tp=%d: the vocabulary (%d tokens) is split "
                                      "over tp, so it needs at least %d tokens",
                          l.tp, m->vocab, l.tp);
    if (c->balance.policy != SYM_BALANCE_OFF)
        return sym__error(SYM_EINVAL, "--balance moves samples between PEs; with --parallel "
                                      "tp=%d the PEs of a tp group share theirs: use --balance "
                                      "off, or tp=1",
                          l.tp);
    return SYM_OK;
}

/* --mem-ckpt-every: a snapshot is each PE's 1/dp of its own part (any
 * layout: mem_shard), and the disk is where a restart goes without one. */
static int mem_ckpt_validate(const sym_train_config_t *c) {
    if (c->mem_ckpt_every < 0)
        return sym__error(SYM_EINVAL, "--mem-ckpt-every cannot be negative");
    if (c->mem_ckpt_every && !c->ckpt_dir)
        return sym__error(SYM_EINVAL, "--mem-ckpt-every needs --ckpt-dir DIR: the disk is where a "
                                      "restart goes when both in-memory copies of a shard are gone");
    return SYM_OK;
}

int sym_train_validate(const sym_train_config_t *c, int npes) {
    if (c->epochs < 1) return sym__error(SYM_EINVAL, "--epochs must be at least 1");
    if (c->steps < 0) return sym__error(SYM_EINVAL, "--steps cannot be negative");
    if (c->global_batch < 1 || c->global_batch > (1 << 20))
        return sym__error(SYM_EINVAL, "--batch must be between 1 and %d", 1 << 20);
    int rc = c->parallel.plan ? SYM_OK : validate_layout(c, npes); /* auto: the planner's */
    if (rc) return rc;
    int dp = c->parallel.plan ? 1 : layout_of(c, npes).dp;
    if (c->global_batch < dp && dp == npes)
        return sym__error(SYM_EINVAL,
                          "--batch %d is smaller than the number of PEs (%d): every PE needs at "
                          "least one sample per step; raise --batch or use fewer PEs",
                          c->global_batch, npes);
    if (c->global_batch < dp)
        return sym__error(SYM_EINVAL,
                          "--batch %d is smaller than dp (%d): every data-parallel group needs "
                          "at least one sample per step; raise --batch or lower dp",
                          c->global_batch, dp);
    if (!(c->lr > 0) || !isfinite(c->lr)) return sym__error(SYM_EINVAL, "--lr must be positive");
    if (!(c->final_lr_ratio >= 0 && c->final_lr_ratio <= 1))
        return sym__error(SYM_EINVAL, "--final-lr-ratio must be in [0, 1]");
    if (!(c->warmup_epochs >= 0 && (c->steps || c->warmup_epochs <= c->epochs)))
        return sym__error(SYM_EINVAL, "--warmup must be between 0 and --epochs");
    if (!(c->clip >= 0)) return sym__error(SYM_EINVAL, "--clip must be 0 (off) or positive");
    if (!(c->model.dropout >= 0 && c->model.dropout < 1))
        return sym__error(SYM_EINVAL, "--dropout must be in [0, 1)");
    if (!(c->optim.momentum >= 0 && c->optim.momentum < 1))
        return sym__error(SYM_EINVAL, "--momentum must be in [0, 1)");
    if (!(c->optim.beta1 >= 0 && c->optim.beta1 < 1 && c->optim.beta2 >= 0 && c->optim.beta2 < 1))
        return sym__error(SYM_EINVAL, "Adam's betas must be in [0, 1)");
    if (!(c->optim.weight_decay >= 0)) return sym__error(SYM_EINVAL, "--weight-decay must be >= 0");
    if (!(c->bucket_mb > 0)) return sym__error(SYM_EINVAL, "--bucket-mb must be positive");
    if (c->zero < 0 || c->zero > 2)
        return sym__error(SYM_EINVAL, "--zero %d: use 0 (plain data parallelism), 1 (sharded "
                                      "optimizer state) or 2 (sharded gradients too)", c->zero);
    int micro = micro_of(c, layout_of(c, npes));
    if (c->micro_batches < 0) return sym__error(SYM_EINVAL, "--micro-batches must be at least 1");
    if (micro > 1 && c->global_batch < (int64_t)micro * dp)
        return sym__error(SYM_EINVAL,
                          "--micro-batches %d%s splits --batch %d into micro-batches of fewer "
                          "samples than there are data-parallel replicas (%d), and every replica "
                          "needs at least one of each; lower --micro-batches or raise --batch to "
                          "%lld or more",
                          micro, c->micro_batches ? "" : " (pp's default: one per stage)",
                          c->global_batch, dp, (long long)micro * dp);
    if (c->max_steps < 0 || c->train_samples < 0 || c->test_samples < 0 || c->threads < 0 ||
        c->eval_every < 0 || c->seq < 0 || c->sample_tokens < 0 || c->warmup_steps < -1)
        return sym__error(SYM_EINVAL, "step, sample, token and thread counts cannot be negative");
    if (c->model.kind != SYM_MODEL_GPT && (c->seq || c->val_data || c->sample_tokens))
        return sym__error(SYM_EINVAL, "--seq, --val-data and --sample are for a GPT (--model gpt:...)");
    if (c->ckpt_keep < 1) return sym__error(SYM_EINVAL, "--ckpt-keep must be at least 1");
    if (!c->ckpt_dir && (c->resume || c->ckpt_every_s > 0 || c->ckpt_steps > 0 || c->ckpt_at_eval))
        return sym__error(SYM_EINVAL, "--resume, --ckpt-every, --ckpt-steps and --ckpt-at-eval need "
                                      "--ckpt-dir DIR");
    if (c->ckpt_every_s < 0 || c->ckpt_steps < 0)
        return sym__error(SYM_EINVAL, "--ckpt-every and --ckpt-steps cannot be negative");
    if ((rc = mem_ckpt_validate(c))) return rc;
    const sym_balance_config_t *b = &c->balance;
    if (b->policy < SYM_BALANCE_OFF || b->policy > SYM_BALANCE_SCORE)
        return sym__error(SYM_EINVAL, "--balance must be off, throughput or score");
    if (b->every_steps < 1 && !(b->every_s > 0))
        return sym__error(SYM_EINVAL, "--balance-every must be a step count (1 or more) or a "
                                      "duration such as 30s");
    if (!(b->hysteresis >= 0 && b->hysteresis < 1))
        return sym__error(SYM_EINVAL, "--balance-hysteresis must be in [0, 1)");
    if (!(b->straggler > 1) || !isfinite(b->straggler))
        return sym__error(SYM_EINVAL, "--straggler-factor must be more than 1");
    for (int i = 0; i < 3; i++)
        if (!(b->weights[i] >= 0) || !isfinite(b->weights[i]))
            return sym__error(SYM_EINVAL, "--balance-weights must be three numbers >= 0");
    if (c->metrics_port < -1 || c->metrics_port > 65535)
        return sym__error(SYM_EINVAL, "--metrics-port must be a TCP port (1-65535), or 0 for a "
                                      "free one");
    return SYM_OK;
}

/* ---- signals ---- */

static volatile sig_atomic_t stop_signal;

/* The first SIGTERM / SIGINT asks for a clean stop at the end of the step;
 * a second one ends the process at once (a stop that cannot finish, e.g. a
 * PE waiting for one that is gone, must never leave the job unkillable). */
static void on_stop(int sig) {
    if (stop_signal) {
        signal(sig, SIG_DFL);
        raise(sig);
        return;
    }
    stop_signal = sig;
}

/* ---- fault injection for the restart tests ----
 * SYMTRAIN_TEST_KILL_AT="PE:STEP[:ATTEMPT]": on the job's attempt ATTEMPT
 * (SYMTRAIN_RESTART_COUNT; 0, the first, unless named) PE `PE` kills itself
 * with SIGKILL once step STEP is done, the way a crashed machine ends: no
 * checkpoint, no flush. */
static int kill_pe = -1, fail_pe = -1;
static int64_t kill_step = -1, fail_step = -1;

/* SYMTRAIN_TEST_STEP_FAIL="PE:STEP": step STEP fails on PE `PE` alone, as a
 * GPU fault would (tests/train_errors.c: the job must still end at once). */
static void read_kill_spec(void) {
    const char *restart = getenv("SYMTRAIN_RESTART_COUNT");
    int attempt = restart ? atoi(restart) : 0;
    const char *names[2] = {"SYMTRAIN_TEST_KILL_AT", "SYMTRAIN_TEST_STEP_FAIL"};
    int *pes[2] = {&kill_pe, &fail_pe};
    int64_t *steps[2] = {&kill_step, &fail_step};
    for (int i = 0; i < 2; i++) {
        const char *s = getenv(names[i]);
        int pe, at = 0;
        long long step;
        *pes[i] = -1;
        if (s && sscanf(s, "%d:%lld:%d", &pe, &step, &at) >= 2 && at == attempt) {
            *pes[i] = pe;
            *steps[i] = step;
        }
    }
}

/* ---- the run's state ---- */

typedef struct {
    const sym_train_config_t *cfg;
    int me, npes, speak;
    sym__task_t task;
    sym_model_t *model;          /* on a GPU run: the host copy (parameters only) */
    const struct sym_cuda_backend *gpu; /* NULL: the CPU trains */
    sym_gpu_model_t *gm;
    size_t P;
    sym_optim_t *opt;            /* NULL with ZeRO: the shards' optimizer is zero's */
    sym_ddp_t *ddp;
    sym_zero_t *zero;            /* --zero 1 or 2 */
    int accum;                   /* micro-batches per step */
    shmem_team_t dp_team; /* the gradient average's team, on the CPU (ddp) and the GPU alike */
    sym_parallel_t lay;   /* the layout: dp x tp (x pp) = npes */
    int dp_rank, tp_rank; /* this PE's coordinates */
    sym_mesh_t *mesh;     /* tp > 1: the dp x tp mesh (its teams), else NULL */
    shmem_team_t tp_team; /* tp > 1: the tensor-parallel group, else SHMEM_TEAM_INVALID */
    int time_due;         /* PE 0's clock says a --ckpt-every checkpoint is due (ckpt_agree) */
    int eval_due;         /* --ckpt-at-eval: an evaluation since the last save check */
    int restored;         /* the state came from a checkpoint or an in-memory snapshot */
    double spare_waited;  /* symrun --spare: how long this PE waited to be needed; -1: no spare */
    double t_setup[6];    /* the process's start (its age at setup), setup's start, the data
                           * loaded, the model made, the optimizer made, the buffers made:
                           * a restart's --resume says them */
    int alone;            /* an error this PE reported alone, not yet agreed: the others may be
                             inside a collective (teardown then skips the collective frees) */
    sym_loader_t loader;
    sym_lr_schedule_t sched;
    int64_t steps_per_epoch;
    int64_t epochs;    /* --epochs, or as many as --steps needs */
    float *x;          /* images: (rows, dim) */
    int32_t *tok, *y;  /* text: (rows, seq) inputs; labels (rows * seq) */
    int rows;          /* the batch buffers' and the model's rows */
    int64_t *eidx;     /* (rows) */
    float *evalbuf;    /* symmetric, 4 floats */
    int max_local;     /* the even split's largest block */
    int threads;       /* BLAS threads per PE */
    sym__balance_t *bal;
    sym_pe_record_t *pes; /* (npes) the metrics' per-PE part */
    sym_ckpt_writer_t *writer;   /* PE 0's, format 2; or */
    sym_ckpt_dist_t *dist;       /* every PE's, --ckpt-format sharded */
    int ckpt_lock;               /* PE 0: its hold on --ckpt-dir (sym_ckpt_lock), or -1 */
    int lock_pending;            /* PE 0: ckpt_lock waits for a dying holder (finish_lock) */
    sym_peer_t *peer;            /* --mem-ckpt-every: the in-memory snapshots (NULL: none) */
    sym_metrics_t *metrics;
    sym_prom_t *prom;            /* this PE's Prometheus endpoint (NULL: none) */
    int prom_share, prom_speed, prom_straggler; /* the balancer's gauge families */
    sym_progress_t progress;
    int64_t step, epoch, sample; /* position: steps done; the next sample */
    int64_t saved_step;          /* the newest checkpoint's step (-1 none) */
    double last_save;
    int64_t skipped;             /* fp16 on the GPU: steps whose update an overflow skipped */
    float loss_scale;            /* and the loss scale after the latest step */
    /* ---- pipe: pipeline parallelism (--parallel ...,pp=K with K > 1) ---- */
    sym_mesh_t *pipe_mesh;
    sym_pipe_t *pipe;            /* NULL: no pipeline; r->model is then its stage */
    int dp_n, dp_me;             /* data-parallel replicas and this PE's (npes, me without pp) */
    /* ---- end pipe ---- */
    /* ---- async: checkpoints written in the background (ckpt/async.c) ---- */
    sym__ckpt_async_t *ckasync;  /* with --ckpt-dir: the per-step agreement, the stall figures */
    sym__ckpt_slices_t later;    /* a GPU's sharded save: its slices of the snapshot buffers,
                                  * read by the writer thread */
    float *snap_params;          /* the snapshot buffers (snap_take; GPU: pinned): P floats, */
    void *snap_ostate;           /* and optim.bin's bytes */
    double step_s;               /* this run's steps' time, step_n of them (the stall's yardstick) */
    int64_t step_n;
    /* ---- end async ---- */
} run_t;

static int gpu_sync_host(run_t *r);
static int gpu_sync_params(run_t *r);
static int agree_tp(run_t *r, float *stop);

/* ZeRO on the GPU (--device gpu --zero 1 or 2): the backend shards AdamW's
 * moments (and with 2 the gradients) over the dp team and the host keeps
 * whole arrays (r->opt) as the checkpoint's copy, so bringing them over
 * (gpu_sync_host) is collective over the dp team. r->zero, the CPU's ZeRO,
 * stays NULL. */
static int gpu_zero(const run_t *r) { return r->gpu && r->cfg->zero; }

/* Errors every PE sees alike are printed by PE 0 alone. The other PEs then
 * wait for the job to be ended (PE 0's own failure ends it), at most
 * REPORT_WAIT_S: were they to exit first, symrun would end PE 0 at once,
 * often before it had said why. */
#define REPORT_WAIT_S 2.0

static void wait_for_the_end(void) {
    double until = sym__now_s() + REPORT_WAIT_S;
    while (!stop_signal && sym__now_s() < until) { /* symrun's SIGTERM sets it */
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

static int report(run_t *r, int rc, int replicated) {
    if (rc && !replicated) r->alone = 1;
    if (rc && (!replicated || r->me == 0))
        sym__warn("symtrain train", "%s", sym_last_error());
    else if (rc)
        wait_for_the_end();
    return rc;
}

static void note(run_t *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(run_t *r, const char *fmt, ...) {
    if (r->me != 0) return;
    sym__progress_clear(&r->progress);
    va_list ap;
    va_start(ap, fmt);
    fputs("symtrain: ", stdout);
    vprintf(fmt, ap);
    fputc('\n', stdout);
    va_end(ap);
    fflush(stdout);
}

/* ---- data ---- */

static void say_note(void *user, const char *text) { note(user, "%s", text); }

/* The balancer's lines: stragglers always, rebalances unless --quiet. */
static void say_balance(void *user, int warning, const char *text) {
    run_t *r = user;
    if (warning || r->speak) note(r, "%s", text);
}

/* What the checkpoint records as the model's nonlinearity. */
static const char *act_label(const sym_model_config_t *m) {
    return m->kind == SYM_MODEL_GPT ? "gelu-tanh" : sym_act_name(m->act);
}

/* ---- checkpoints ---- */

static void say_damaged(void *user, const char *msg) {
    run_t *r = user;
    if (r->me == 0) sym__warn("symtrain train", "%s", msg);
}

/* The checkpoint's RNG state is the one its seed and epoch give (save() below
 * writes it so): the data order of that epoch, the dropout stream's key. */
static int rng_matches(run_t *r, const sym_ckpt_meta_t *m) {
    sym_loader_set_epoch(&r->loader, m->epoch);
    return m->data_key == r->loader.key && m->data_counter == r->loader.draws &&
           m->dropout_key == sym_rng_key(m->seed, SYM_RNG_DROPOUT, 0);
}

/* ---- the optimizer state, whole or sharded (ZeRO: gathered, the same bytes) ---- */

static size_t optim_state_size(const run_t *r) {
    return r->zero ? sym_zero_state_size(r->zero) : sym_optim_state_size(r->opt);
}
static int optim_state_save(const run_t *r, void *buf) {
    if (r->zero) return sym_zero_state_save(r->zero, buf);
    sym_optim_state_save(r->opt, buf);
    return SYM_OK;
}
static uint64_t optim_steps(const run_t *r) {
    return r->zero ? sym_zero_steps(r->zero) : sym_optim_steps(r->opt);
}
/* This PE's optimizer state arrays, in bytes. */
static size_t optim_state_bytes(const run_t *r) {
    return r->zero ? sym_zero_state_bytes(r->zero) : sym_optim_bytes(r->opt);
}


/* ---- ckptlay: the run's layout as checkpoint slices (ckpt/layout.h) ---- */

static const char *const state_name[2][2] = {{"momentum", ""}, {"exp_avg", "exp_avg_sq"}};

/* Which boxes of the global tensors this PE holds, and which of them it writes. */
static void ckpt_layout(const run_t *r, sym__ckpt_layout_t *L) {
    memset(L, 0, sizeof *L);
    int adam = r->cfg->optim.kind == SYM_OPT_ADAMW;
    L->model = r->model;
    L->nstate = adam ? 2 : 1;
    for (int k = 0; k < L->nstate; k++) {
        L->state_name[k] = state_name[adam][k];
        L->state[k] = r->opt ? sym_optim_buffer(r->opt, k) : NULL;
    }
    L->zero = r->zero;
    L->dp = r->lay.dp;
    L->dp_rank = r->dp_rank;
    if (r->lay.tp > 1) L->tp_rank = r->tp_rank;
    L->skip_tied = r->pipe && sym_pipe_stage(r->pipe) > 0;
    L->pad_owner = r->me == 0;
}

/* A layout as a sharded checkpoint's manifest names it: "dp=4", "dp=2,tp=2,zero=1",
 * "pp=2,v=2" (v: virtual stages, which change what each stage holds). */
static void spell_layout(int dp, int tp, int pp, int v, int zero, char *out, size_t len) {
    int n = snprintf(out, len, "dp=%d", dp);
    if (tp > 1 && n > 0 && (size_t)n < len) n += snprintf(out + n, len - n, ",tp=%d", tp);
    if (pp > 1 && n > 0 && (size_t)n < len) n += snprintf(out + n, len - n, ",pp=%d", pp);
    if (v > 1 && n > 0 && (size_t)n < len) n += snprintf(out + n, len - n, ",v=%d", v);
    if (zero && n > 0 && (size_t)n < len) snprintf(out + n, len - n, ",zero=%d", zero);
}

/* This run's. */
static void ckpt_layout_name(const run_t *r, char *out, size_t len) {
    spell_layout(r->lay.dp, r->lay.tp, r->lay.pp, r->pipe ? sym_pipe_virtual(r->pipe) : 1,
                 r->zero || gpu_zero(r) ? r->cfg->zero : 0, out, len);
}

static void set_optim_steps(run_t *r, uint64_t t) {
    if (r->zero)
        sym_zero_set_steps(r->zero, t);
    else
        sym_optim_set_steps(r->opt, t);
}

static int agree(run_t *r, int rc);

/* tp or pp > 1: the whole parameters and optimizer state, as ckpt_state_get
 * gives them, on PE 0 (*params malloc'd), from every PE's slices (collective
 * over the job; the other PEs get nothing). Without ostate: the parameters
 * alone (a sample's weights). */
static int ckpt_state_gather(run_t *r, float **params, int *owned, void **ostate, size_t *osize) {
    size_t W = sym_model_full_num_params(r->model);
    sym_optim_t *o = NULL;
    sym__ckpt_layout_t L;
    sym__ckpt_slices_t mine;
    *params = NULL;
    *owned = 1;
    if (ostate) *ostate = NULL;
    if (osize) *osize = 0;
    ckpt_layout(r, &L);
    int rc = sym__ckpt_layout_slices(&L, 1, &mine);
    if (!rc && !ostate) sym__ckpt_slices_keep_params(&mine);
    if (!rc && r->me == 0 && !(*params = malloc(W * sizeof **params)))
        rc = sym__error(SYM_ENOMEM, "out of memory for the whole model (%zu floats)", W);
    if (!rc && r->me == 0 && ostate) rc = sym_optim_create(&r->cfg->optim, W, &o);
    if (rc) report(r, rc, 0);
    if (!(rc = agree(r, rc))) {
        float *whole[SYM_CKPT_KINDS] = {*params, o ? sym_optim_buffer(o, 0) : NULL,
                                        o ? sym_optim_buffer(o, 1) : NULL};
        rc = sym__ckpt_slices_gather(&mine, whole);
    }
    sym__ckpt_slices_free(&mine);
    if (!rc && o) {
        sym_optim_set_steps(o, optim_steps(r));
        *osize = sym_optim_state_size(o);
        if (!(*ostate = malloc(*osize)))
            rc = sym__error(SYM_ENOMEM, "out of memory for a checkpoint");
        else
            sym_optim_state_save(o, *ostate);
    }
    sym_optim_destroy(o);
    return rc;
}

/* ---- end ckptlay ---- */

/* ---- checkpoint state, whatever the layout ----
 * A single-writer checkpoint holds every tensor whole, laid out as the 1-PE
 * model lays it out (sym_model_whole_table), so it does not depend on
 * --parallel and a resume into any layout is exact. With tp or pp > 1 every
 * PE sends PE 0 its slices (ckpt_state_gather); else PE 0 holds them all
 * (ckpt_state_get; with ZeRO it reads the other shards one-sidedly). */

/* Before a gather of the whole model (W floats) into buffers each PE of the
 * tp group allocated: every one has them (have), or none gathers and all
 * return the same error, so no PE waits in a gather another skipped. */
static int tp_all_have(run_t *r, int have, size_t W) {
    float missing = have ? 0.0f : 1.0f;
    int rc = sym__comm_sum(r->tp_team, &missing, 1);
    if (rc || missing == 0.0f) return rc;
    return sym__error(SYM_ENOMEM, "out of memory for the whole model's tensors (%zu floats) on "
                      "%g PE%s of a tp group", W, (double)missing, missing > 1.0f ? "s" : "");
}

/* Single-writer saves gather every PE's slices (collective over the job). */
static int ckpt_gathers(const run_t *r) { return r->lay.tp > 1 || r->lay.pp > 1; }

/* This PE takes part in saving checkpoints: PE 0, or every PE when they
 * gather or when the GPU's state is gathered over dp first (gpu_zero). */
static int ckpt_member(const run_t *r) { return ckpt_gathers(r) || r->me == 0 || gpu_zero(r); }

/* dp alone, PE 0: the whole parameters (*params: the model's own array,
 * *owned 0) and the optimizer state (*ostate, malloc'd, *osize bytes,
 * sym_optim_state_save's format; ZeRO: gathered, the same bytes). */
static int ckpt_state_get(run_t *r, float **params, int *owned, void **ostate, size_t *osize) {
    int rc = SYM_OK;
    *params = sym_model_params(r->model);
    *owned = 0;
    *osize = optim_state_size(r);
    if (!(*ostate = malloc(*osize)))
        rc = sym__error(SYM_ENOMEM, "out of memory for a checkpoint");
    else
        rc = optim_state_save(r, *ostate);
    return rc;
}

/* The run's parameters and optimizer state from a checkpoint's whole ones
 * (params: sym_model_full_num_params floats; ostate: osize bytes): each PE
 * copies out the boxes it holds (ckpt/layout.h), in any layout. Local. */
static int ckpt_state_put(run_t *r, const float *params, const void *ostate, size_t osize) {
    sym_optim_t *o;
    sym__ckpt_layout_t L;
    sym__ckpt_slices_t want;
    int rc = sym_optim_create(&r->cfg->optim, sym_model_full_num_params(r->model), &o);
    if (!rc) rc = sym_optim_state_load(o, ostate, osize); /* says what does not fit */
    ckpt_layout(r, &L);
    if (!rc && !(rc = sym__ckpt_layout_slices(&L, 0, &want))) {
        float *whole[SYM_CKPT_KINDS] = {(float *)params, sym_optim_buffer(o, 0),
                                        sym_optim_buffer(o, 1)};
        sym__ckpt_slices_copy(&want, whole, 0);
        sym__ckpt_slices_free(&want);
        set_optim_steps(r, sym_optim_steps(o));
    }
    sym_optim_destroy(o);
    return rc;
}

/* The load failed with rc: with nothing to resume from (SYM_ENOENT) or only
 * damaged checkpoints (SYM_ECORRUPT, left in place) --resume=auto starts over
 * (0), --resume stops. A checkpoint that cannot be read (SYM_EIO) always
 * stops the run. */
static int resume_failed(run_t *r, int rc) {
    const sym_train_config_t *c = r->cfg;
    if ((rc == SYM_ENOENT || rc == SYM_ECORRUPT) && c->resume == SYM_RESUME_AUTO) {
        note(r, "--resume=auto: %s; starting from the beginning", sym_last_error());
        return SYM_OK;
    }
    if (rc == SYM_ENOENT || rc == SYM_ECORRUPT) {
        char why[1024];
        snprintf(why, sizeof why, "%s", sym_last_error());
        rc = sym__error(rc, "--resume: %s, so there is nothing to resume from; pass "
                        "--resume=auto to start from the beginning when there is none", why);
    }
    return report(r, rc, 1);
}

/* The checkpoint at `path` is of this run: model, seed, batch, optimizer,
 * data, position and RNG state (not the weights' sizes: the format's). */
static int check_meta(run_t *r, const sym_ckpt_meta_t *m, const char *path) {
    const sym_train_config_t *c = r->cfg;
    if (strcmp(m->model, c->model.spec) || strcmp(m->activation, act_label(&c->model)))
        return sym__error(SYM_EMISMATCH,
                          "%s holds a %s model (%s) and this run asks for %s (%s); pass the same "
                          "--model and --activation, or another --ckpt-dir",
                          path, m->model, m->activation, c->model.spec, act_label(&c->model));
    if (m->seed != c->model.seed)
        return sym__error(SYM_EMISMATCH, "%s was trained with --seed %llu, this run has --seed %llu",
                          path, (unsigned long long)m->seed, (unsigned long long)c->model.seed);
    if (m->global_batch != c->global_batch)
        return sym__error(SYM_EMISMATCH,
                          "%s was trained with --batch %d (the global batch), this run asks for "
                          "%d; resume with --batch %d",
                          path, m->global_batch, c->global_batch, m->global_batch);
    if (strcmp(m->optimizer, sym_optim_name(c->optim.kind)))
        return sym__error(SYM_EMISMATCH, "%s used the %s optimizer, this run asks for %s", path,
                          m->optimizer, sym_optim_name(c->optim.kind));
    if (strcmp(m->dataset, r->task.name) || m->train_samples != r->task.n_train)
        return sym__error(SYM_EMISMATCH,
                          "%s was trained on %lld samples of %s, this run has %lld of %s", path,
                          (long long)m->train_samples, m->dataset, (long long)r->task.n_train,
                          r->task.name);
    if (m->epoch < 0 || m->sample < 0 || m->sample >= r->task.n_train || m->step < 0)
        return sym__error(SYM_ECORRUPT, "%s holds an impossible position (epoch %lld, sample %lld)",
                          path, (long long)m->epoch, (long long)m->sample);
    if (!rng_matches(r, m))
        return sym__error(SYM_ECORRUPT,
                          "%s is damaged: its RNG state is not the one --seed %llu gives at epoch "
                          "%lld (data stream %llu:%llu, dropout stream %llu)",
                          path, (unsigned long long)m->seed, (long long)m->epoch,
                          (unsigned long long)m->data_key, (unsigned long long)m->data_counter,
                          (unsigned long long)m->dropout_key);
    return SYM_OK;
}

/* The weights and optimizer state are in: take the position and say what changed. */
static void resumed(run_t *r, const sym_ckpt_meta_t *m, const char *path) {
    const sym_train_config_t *c = r->cfg;
    if (m->nshares == r->npes && c->balance.policy != SYM_BALANCE_OFF)
        sym__balance_restore(r->bal, m->shares, m->speeds);
    else if (m->nshares && c->balance.policy != SYM_BALANCE_OFF)
        note(r, "the checkpoint's shares are for %d PEs and this run has %d: the balancer starts "
                "from the even split",
             m->nshares, r->npes);
    r->restored = 1;
    r->step = m->step;
    r->epoch = m->epoch;
    r->sample = m->sample;
    r->saved_step = m->step;
    /* Epochs as the progress lines count them (from 1), and as the manifest
     * holds them (from 0), so the two never seem to disagree. */
    note(r, "resumed from %s: step %lld, epoch %lld of %lld, sample %lld of %lld (\"epoch\": %lld "
            "in its manifest, which counts from 0)",
         path, (long long)m->step, (long long)m->epoch + 1, (long long)r->epochs,
         (long long)m->sample, (long long)r->task.n_train, (long long)m->epoch);
    /* Settings the run may change: said, so a changed one is never a surprise. */
    if (m->lr > 0 && (float)m->lr != c->lr)
        note(r, "the checkpoint was trained with --lr %g and this run asks for %g: the schedule "
                "continues at the new rate from step %lld",
             m->lr, (double)c->lr, (long long)m->step);
    if (m->total_steps > 0 && m->total_steps != r->sched.total_steps)
        note(r, "the checkpoint's schedule was %lld steps long and this run's is %lld (--epochs "
                "or --steps changed): the learning rate follows the new length from here",
             (long long)m->total_steps, (long long)r->sched.total_steps);
    if (m->total_steps > 0 && m->step >= r->sched.total_steps)
        note(r, "the checkpoint's run had already finished (step %lld of %lld): nothing is left "
                "to train; raise --epochs or --steps to go on",
             (long long)m->step, (long long)r->sched.total_steps);
    if (m->world_size == r->npes && m->blas_threads != r->threads)
        note(r, "the checkpoint was written with %d BLAS thread%s per PE and this run uses %d: "
                "training continues, equal up to fp32 rounding (pass --threads %d to continue "
                "bit for bit)",
             m->blas_threads, m->blas_threads == 1 ? "" : "s", r->threads, m->blas_threads);
    if (m->world_size != r->npes)
        note(r, "the checkpoint was written by %d PE%s and this run has %d: the global batch "
                "stays %d, so training continues as before, equal up to fp32 rounding in the "
                "gradient average (bit for bit only with %d PE%s)",
             m->world_size, m->world_size == 1 ? "" : "s", r->npes, c->global_batch,
             m->world_size, m->world_size == 1 ? "" : "s");
}

static int resume(run_t *r) {
    const sym_train_config_t *c = r->cfg;
    sym_ckpt_t ck;
    int rc = sym_ckpt_load_latest(c->ckpt_dir, &ck, say_damaged, r);
    if (rc) return resume_failed(r, rc);
    const sym_ckpt_meta_t *m = &ck.meta;
    const sym_ckpt_file_t *mf = sym_ckpt_file(&ck, "model.bin");
    const sym_ckpt_file_t *of = sym_ckpt_file(&ck, "optim.bin");
    size_t W = sym_model_full_num_params(r->model); /* the whole model's */
    if ((rc = check_meta(r, m, ck.path)))
        ;
    else if (!mf || mf->size != W * sizeof(float) || m->params != W)
        rc = sym__error(SYM_EMISMATCH, "%s: model.bin does not hold the %zu parameters of %s",
                        ck.path, W, c->model.spec);
    else if (!of)
        rc = sym__error(SYM_ECORRUPT, "%s has no optim.bin", ck.path);
    else
        rc = ckpt_state_put(r, mf->data, of->data, of->size);
    if (rc) {
        sym_ckpt_release(&ck);
        return report(r, rc, 1);
    }
    resumed(r, m, ck.path);
    sym_ckpt_release(&ck);
    return SYM_OK;
}

/* ---- sharded checkpoints (--ckpt-format sharded, ckpt/shard.c) ----
 * Every parameter and each kind of optimizer state is one global tensor
 * ("h.0.ln_1.weight", "exp_avg.h.0.ln_1.weight"). Saving, each PE writes
 * its 1/N of every one (split along dim 0: a pointer into the array);
 * resuming, each PE reads every tensor whole (DP replicates them), from
 * whatever slices the checkpoint's layout stored. */

static void say_damaged_here(void *user, const char *msg) {
    (void)user;
    sym__warn("symtrain train", "%s", msg);
}

/* Which reader --resume takes: the sharded one (which reads both formats)
 * with --ckpt-format sharded, or when the newest checkpoint PE 0 finds in
 * --ckpt-dir is sharded; PE 0's verdict is every PE's (the reader is collective). */
static int sharded_on_disk(run_t *r) {
    if (r->cfg->ckpt_sharded) return 1;
    r->evalbuf[0] = r->me == 0 && sym_ckpt_format(r->cfg->ckpt_dir) == SYM_CKPT_SHARDED_VERSION;
    if (sym_allreduce_sum_f32(SHMEM_TEAM_WORLD, r->evalbuf, 1)) return 0;
    return r->evalbuf[0] > 0.0f;
}

static int resume_sharded(run_t *r) {
    const sym_train_config_t *c = r->cfg;
    sym_dckpt_t *ck;
    int rc = sym_dckpt_open_latest(c->ckpt_dir, &ck, say_damaged_here, r);
    if (rc) return resume_failed(r, rc);
    const sym_ckpt_meta_t *m = sym_dckpt_meta(ck);
    const char *path = sym_dckpt_path(ck);
    if ((rc = check_meta(r, m, path))) {
        sym_dckpt_close(ck);
        return report(r, rc, 1);
    }
    size_t W = sym_model_full_num_params(r->model);
    sym__ckpt_layout_t L;
    sym__ckpt_slices_t want = {0};
    ckpt_layout(r, &L);
    if (m->params != W)
        rc = sym__error(SYM_EMISMATCH, "%s holds %llu parameters, %s has %zu", path,
                        (unsigned long long)m->params, c->model.spec, W);
    else /* the boxes this PE holds, from whatever slices the checkpoint's layout stored */
        rc = sym__ckpt_layout_slices(&L, 0, &want);
    for (int i = 0; !rc && i < want.n; i++) rc = sym_dckpt_read(ck, &want.s[i]);
    sym__ckpt_slices_free(&want);
    /* Each PE read its own slices: one that failed says why, all stop. */
    if (rc) report(r, rc, 0);
    if ((rc = agree(r, rc))) {
        sym_dckpt_close(ck);
        return rc;
    }
    set_optim_steps(r, m->optim_steps);
    resumed(r, m, path);
    /* Another layout: the run's first save writes this step in its own. */
    char lay[64];
    ckpt_layout_name(r, lay, sizeof lay);
    if (m->world_size != r->npes || sym_dckpt_version(ck) != SYM_CKPT_SHARDED_VERSION ||
        strcmp(sym_dckpt_layout(ck), lay))
        r->saved_step = -1;
    if (m->world_size == r->npes && sym_dckpt_version(ck) == SYM_CKPT_SHARDED_VERSION &&
        strcmp(sym_dckpt_layout(ck), lay))
        note(r, "the checkpoint was written in layout %s and this run's is %s: the same global "
                "tensors, loaded bit for bit; training continues equal up to fp32 rounding where "
                "the new layout sums in another order (tp, pp; --zero at the same dp is exact)",
             sym_dckpt_layout(ck), lay);
    sym_dckpt_close(ck);
    return SYM_OK;
}

/* ---- async: the snapshot buffers ----
 * With the whole-tensor format and tp = 1 (PE 0 writes the model's own
 * arrays), the snapshot goes into two buffers allocated at the first
 * checkpoint and kept (no page faults after it), and the writer thread
 * writes those buffers themselves (sym__ckpt_save_borrowed): one copy of
 * the state in all, the bytes ckpt_state_get makes. The CPU copies the
 * parameters and the optimizer state into them (snap_cpu). The GPU, with
 * --ckpt-async on, copies the fp32 master weights and AdamW's moments into
 * them (pinned memory) on a side stream after the step, and returns
 * (snap_gpu): the next step's forward and backward run meanwhile (its AdamW,
 * the first kernel to change them, waits for the copy), and the writer
 * thread waits for the copy (snap_gpu_ready) before it reads them. Either
 * way the write before is waited for first: it reads the same buffers. */

static int snap_direct(const run_t *r) {
    const sym_train_config_t *c = r->cfg;
    /* ZeRO on the CPU or the GPU: the state is gathered first */
    return r->writer && r->lay.tp == 1 && !c->zero && !r->pipe &&
           (!r->gpu || (!c->ckpt_sync && c->optim.kind == SYM_OPT_ADAMW));
}

/* On the writer thread, before it reads the buffers. */
static int snap_gpu_ready(void *user) {
    run_t *r = user;
    int rc = r->gpu->snapshot_wait(r->gm);
    return rc ? sym__error(rc, "GPU snapshot: %s", r->gpu->error()) : SYM_OK;
}

/* The buffers (pinned on the GPU), once: P floats and osize bytes. */
static int snap_buffers(run_t *r, size_t osize) {
    size_t bytes = r->P * sizeof(float);
    if (r->snap_params) return SYM_OK;
    r->snap_params = r->gpu ? r->gpu->host_alloc(r->gm, bytes) : malloc(bytes);
    r->snap_ostate = r->gpu ? r->gpu->host_alloc(r->gm, osize) : malloc(osize);
    if (r->snap_params && r->snap_ostate) return SYM_OK;
    if (r->gpu)
        return report(r, sym__error(SYM_ENOMEM, "GPU snapshot: %s; --ckpt-async off copies "
                                    "the state to the host synchronously instead",
                                    r->gpu->error()), 0);
    return report(r, sym__error(SYM_ENOMEM, "out of memory for a checkpoint's snapshot (%zu "
                                "bytes)", bytes + osize), 0);
}

static void snap_free(run_t *r) {
    if (r->gpu) {
        if (r->snap_params) r->gpu->host_free(r->gm, r->snap_params);
        if (r->snap_ostate) r->gpu->host_free(r->gm, r->snap_ostate);
    } else {
        free(r->snap_params);
        free(r->snap_ostate);
    }
}

/* The snapshot into the buffers: *params (P floats) and *ostate (*osize
 * bytes: optim.bin, sym_optim_state_save's format). On the GPU the copy is
 * only started. */
static int snap_take(run_t *r, float **params, void **ostate, size_t *osize) {
    size_t bytes = r->P * sizeof(float);
    *osize = sym_optim_state_size(r->opt);
    int rc = snap_buffers(r, *osize);
    if (rc) return rc;
    sym__ckpt_async_poll(r->ckasync, r->writer, r->dist, 1); /* the write before is done with them */
    char *o = r->snap_ostate;
    if (r->gpu) {
        size_t hdr = *osize - 2 * bytes; /* AdamW: the header, m, v */
        uint64_t t = 0;
        if ((rc = r->gpu->snapshot_start(r->gm, r->snap_params, (float *)(o + hdr),
                                         (float *)(o + hdr + bytes), &t)))
            return report(r, sym__error(rc, "GPU snapshot: %s", r->gpu->error()), 0);
        sym_optim_set_steps(r->opt, t);
        sym_optim_state_header(r->opt, o);
    } else {
        memcpy(r->snap_params, sym_model_params(r->model), bytes);
        sym_optim_state_save(r->opt, o);
    }
    *params = r->snap_params;
    *ostate = o;
    return SYM_OK;
}

/* A sharded save on the GPU from an asynchronous snapshot: AdamW, no ZeRO
 * (the moments are gathered first), --ckpt-async on. */
static int dist_later(const run_t *r) {
    return r->dist && r->gpu && !r->cfg->ckpt_sync && r->cfg->optim.kind == SYM_OPT_ADAMW &&
           !gpu_zero(r);
}

/* The GPU's state into the snapshot buffers (snap_take: once the previous
 * save is done with them; collective, it is committed first), the layout's
 * arrays pointed at them. */
static int dist_snapshot(run_t *r, sym__ckpt_layout_t *L) {
    float *params;
    void *ostate;
    size_t osize, bytes = r->P * sizeof(float);
    int rc = snap_take(r, &params, &ostate, &osize);
    if (rc) return rc;
    sym__ckpt_slices_free(&r->later); /* the previous save's */
    char *o = (char *)ostate + (osize - 2 * bytes); /* m, v after the header */
    L->params = params;
    L->state[0] = (float *)o;
    L->state[1] = (float *)(o + bytes);
    return SYM_OK;
}

/* A checkpoint's meta for the current state: position, RNG streams, the run's
 * settings and the balancer's shares (pointing into the balancer). */
static void ckpt_meta(run_t *r, sym_ckpt_meta_t *m) {
    const sym_train_config_t *c = r->cfg;
    memset(m, 0, sizeof *m);
    m->step = r->step;
    m->epoch = r->epoch;
    m->sample = r->sample;
    m->world_size = r->npes;
    m->blas_threads = r->threads;
    m->global_batch = c->global_batch;
    m->seed = c->model.seed;
    sym_loader_set_epoch(&r->loader, r->epoch); /* the stream of the epoch saved */
    m->data_key = r->loader.key;
    m->data_counter = r->loader.draws;
    m->dropout_key = sym_rng_key(c->model.seed, SYM_RNG_DROPOUT, 0);
    snprintf(m->model, sizeof m->model, "%s", c->model.spec);
    snprintf(m->activation, sizeof m->activation, "%s", act_label(&c->model));
    m->dropout = c->model.dropout;
    m->params = sym_model_full_num_params(r->model);
    snprintf(m->optimizer, sizeof m->optimizer, "%s", sym_optim_name(c->optim.kind));
    m->optim_steps = optim_steps(r);
    snprintf(m->dataset, sizeof m->dataset, "%s", r->task.name);
    m->train_samples = r->task.n_train;
    m->lr = c->lr;
    m->total_steps = r->sched.total_steps;
    if (sym__balance_shares(r->bal)) {
        const int *shares;
        const double *speeds;
        sym__balance_state(r->bal, &shares, &speeds);
        snprintf(m->balance, sizeof m->balance, "%s", sym__balance_policy_name(c->balance.policy));
        m->nshares = r->npes;
        m->shares = (int *)shares;
        m->speeds = (double *)speeds;
    }
}

/* Hand a snapshot of the current state to the writer: PE 0 (with tp or pp > 1
 * every PE gathers the snapshot to it; with ZeRO on the GPU every PE takes
 * part in gathering the moments), or every PE with sharded checkpoints. */
static int save(run_t *r) {
    const sym_train_config_t *c = r->cfg;
    if (r->saved_step == r->step || (!r->dist && (!ckpt_member(r) || !c->ckpt_dir)))
        return SYM_OK;
    int direct = snap_direct(r), later = dist_later(r); /* into the kept buffers */
    sym__ckpt_layout_t L;
    ckpt_layout(r, &L);
    if (r->gpu && !direct && !later) {
        int rc = gpu_sync_host(r);
        if (rc) return rc;
    }
    if (later) {
        int rc = dist_snapshot(r, &L);
        if (rc) return rc;
    }
    if (!r->dist && !ckpt_gathers(r) && r->me != 0) { /* gpu_zero: its part was the gather */
        r->saved_step = r->step;
        return SYM_OK;
    }
    float *params = NULL;
    void *ostate = NULL;
    size_t osize = 0, W = sym_model_full_num_params(r->model);
    int owned = 0, rc = r->dist            ? SYM_OK
                        : direct          ? snap_take(r, &params, &ostate, &osize)
                        : ckpt_gathers(r) ? ckpt_state_gather(r, &params, &owned, &ostate, &osize)
                                          : ckpt_state_get(r, &params, &owned, &ostate, &osize);
    if (rc || (!r->dist && r->me != 0)) {
        if (owned) free(params);
        free(ostate);
        r->saved_step = r->step;
        return rc ? report(r, rc, 0) : SYM_OK;
    }
    sym_ckpt_meta_t m;
    ckpt_meta(r, &m);
    if (r->dist) { /* every PE: its part of every tensor */
        sym__ckpt_slices_t mine;
        if ((rc = sym__ckpt_layout_slices(&L, 1, &mine))) return report(r, rc, 0);
        if (later) { /* the writer reads them once the copy is done */
            r->later = mine;
            rc = sym_ckpt_dist_save_later(r->dist, &m, mine.s, mine.n, snap_gpu_ready, r);
        } else {
            rc = sym_ckpt_dist_save(r->dist, &m, mine.s, mine.n);
            sym__ckpt_slices_free(&mine);
        }
        sym__ckpt_async_failed(r->ckasync, rc, 1); /* an earlier save's: ckpt_agree ends the run */
        r->saved_step = r->step;
        r->last_save = sym__now_s();
        return SYM_OK;
    }
    sym_ckpt_file_t files[2] = {
        {"model.bin", params, W * sizeof(float), 0},
        {"optim.bin", ostate, osize, 0},
    };
    /* The tensor table: every parameter in model.bin, and its optimizer state
     * (after the state's header, one fp32 array of P per kind of state). */
    int nt, adam = c->optim.kind == SYM_OPT_ADAMW;
    const sym_param_t *table = sym_model_whole_table(r->model, &nt); /* every stage's too */
    int nstate = adam ? 2 : 1;
    size_t hdr = osize - (size_t)nstate * W * sizeof(float);
    sym_ckpt_tensor_t *tab = calloc((size_t)nt * (size_t)(1 + nstate), sizeof *tab);
    if (!tab) {
        if (owned) free(params);
        if (!direct) free(ostate);
        return report(r, sym__error(SYM_ENOMEM, "out of memory for a checkpoint"), 0);
    }
    for (int i = 0; i < nt; i++) {
        const sym_param_t *p = &table[i];
        for (int k = 0; k <= nstate; k++) {
            sym_ckpt_tensor_t *e = &tab[k * nt + i];
            if (k == 0)
                snprintf(e->name, sizeof e->name, "%s", p->name);
            else
                snprintf(e->name, sizeof e->name, "%s.%s", state_name[adam][k - 1], p->name);
            snprintf(e->file, sizeof e->file, "%s", k ? "optim.bin" : "model.bin");
            e->dtype = SYM_DT_F32;
            e->ndim = p->ndim;
            memcpy(e->shape, p->shape, sizeof e->shape);
            e->offset = (k ? hdr + (size_t)(k - 1) * W * sizeof(float) : 0) +
                        p->offset * sizeof(float);
        }
    }
    m.tensors = tab;
    m.ntensors = nt * (1 + nstate);
    rc = direct ? sym__ckpt_save_borrowed(r->writer, &m, files, 2,
                                          r->gpu ? snap_gpu_ready : NULL, r)
                : sym_ckpt_save(r->writer, &m, files, 2);
    free(tab);
    if (owned) free(params);
    if (!direct) free(ostate);
    sym__ckpt_async_failed(r->ckasync, rc, 1); /* the previous save's: ckpt_agree ends the run */
    r->saved_step = r->step;
    r->last_save = sym__now_s();
    return SYM_OK;
}

/* ---- in-memory snapshots on buddy PEs (--mem-ckpt-every, ckpt/peer.h) ----
 * A PE's shard is its 1/dp of the part of the model it trains (its tp piece
 * of its pipeline stage: its flat parameter and optimizer arrays), split over
 * its dp team, the PEs that hold that part alike; with ZeRO the optimizer
 * state in it is the PE's own blocks. So in any layout a dp team's shards
 * hold its part whole. (A sharded checkpoint's slices would not: they split a
 * tensor whole on every PE of a tp group over the tp ranks too, and leave a
 * later stage's copy of the tied wte out.) Each shard and the checkpoint's
 * meta go to the PE's own region of symrun's store and to its buddy's; after
 * a restart every PE reads its part back from its dp team's shards, from
 * whichever copy survived, before anyone looks at the disk. */

#define MEM_WORDS 9 /* a shard's first slice: the layout it is of (mem_words) */

typedef struct {
    sym_ckpt_slice_t *s; /* the layout words, the parameters, the optimizer state */
    int n;
    int32_t words[MEM_WORDS];
} mem_shard_t;

/* What a shard of dp rank d of this PE's part says it is: a version, dp, tp,
 * pp, --zero, then d, the tp rank, the stage and the virtual stages (which
 * change the blocks a stage holds). */
static void mem_words(const run_t *r, int d, int32_t *w) {
    int32_t v[MEM_WORDS] = {2, r->lay.dp, r->lay.tp, r->lay.pp, r->cfg->zero, d, r->tp_rank,
                            r->pipe ? sym_pipe_stage(r->pipe) : 0,
                            r->pipe ? sym_pipe_virtual(r->pipe) : 1};
    memcpy(w, v, sizeof v);
}

/* A layout as ckpt_layout_name spells it, from a shard's words. */
static void mem_layout_name(const int32_t *w, char *out, size_t len) {
    if (w[0] != 2) {
        snprintf(out, len, "an unknown one");
        return;
    }
    spell_layout(w[1], w[2], w[3], w[8], w[4], out, len);
}

/* The world PE that is dp rank d of this PE's dp team. */
static int mem_pe(const run_t *r, int d) {
    if (r->lay.dp == 1) return r->me;
    return shmem_team_translate_pe(r->dp_team, d, SHMEM_TEAM_WORLD);
}

/* Elements [start, start + count) of a flat array of `whole` as slice data. */
static void mem_add(mem_shard_t *sh, const char *name, sym_dtype_t dt, void *data, size_t whole,
                    size_t start, size_t count) {
    sym_ckpt_slice_t *s = &sh->s[sh->n++];
    snprintf(s->name, sizeof s->name, "%s", name);
    s->dtype = dt;
    s->ndim = 1;
    s->shape[0] = (int64_t)whole;
    s->start[0] = (int64_t)start;
    s->count[0] = (int64_t)count;
    s->data = data;
}

/* Dp rank d's shard of this PE's part, pointing into this PE's arrays (the
 * layout words into sh->words): the words, block d of the parameters, then
 * the optimizer state's block d (ZeRO: this PE's blocks, d being its rank).
 * params_only: the first two alone, a prefix (another PE's shard with ZeRO,
 * whose optimizer blocks are that PE's). sh->s is malloc'd. */
static int mem_shard(run_t *r, int d, int params_only, mem_shard_t *sh) {
    int adam = r->cfg->optim.kind == SYM_OPT_ADAMW, nstate = adam ? 2 : 1;
    int nb = r->zero ? sym_zero_num_blocks(r->zero) : 1;
    sh->n = 0;
    if (!(sh->s = calloc((size_t)(2 + nstate * nb), sizeof *sh->s)))
        return sym__error(SYM_ENOMEM, "PE %d: out of memory for an in-memory snapshot's table",
                          r->me);
    mem_words(r, d, sh->words);
    mem_add(sh, "layout", SYM_DT_I32, sh->words, MEM_WORDS, 0, MEM_WORDS);
    size_t off, len;
    shmemx_block_range(r->P, r->lay.dp, d, &off, &len);
    mem_add(sh, "params", SYM_DT_F32, sym_model_params(r->model) + off, r->P, off, len);
    for (int k = 0; k < nstate && !params_only; k++) {
        float *buf = r->zero ? sym_zero_state_shard(r->zero, k) : sym_optim_buffer(r->opt, k);
        if (buf && !r->zero)
            mem_add(sh, state_name[adam][k], SYM_DT_F32, buf + off, r->P, off, len);
        for (int b = 0; buf && r->zero && b < nb; b++) {
            size_t lo, soff, n = sym_zero_block(r->zero, b, &lo, &soff);
            mem_add(sh, state_name[adam][k], SYM_DT_F32, buf + soff, r->P, lo, n);
        }
    }
    return SYM_OK;
}

/* Setup, before a resume: map the store (collective). Without one (not
 * started by symrun) the run keeps to the disk, and says so. */
static int mem_open(run_t *r) {
    if (!r->cfg->mem_ckpt_every) return SYM_OK;
    mem_shard_t mine;
    int rc = mem_shard(r, r->dp_rank, 0, &mine);
    if (rc) return report(r, rc, 1);
    size_t bytes = 0; /* this PE's; the store's shards are the largest PE's */
    for (int i = 0; i < mine.n; i++)
        bytes += (size_t)sym_ckpt_slice_elems(&mine.s[i]) * sym_dtype_size(mine.s[i].dtype);
    free(mine.s);
    rc = sym_peer_open(bytes, r->npes, &r->peer);
    if (rc == SYM_ENOENT) {
        note(r, "--mem-ckpt-every: %s; checkpoints go to the disk alone", sym_last_error());
        return SYM_OK;
    }
    return rc ? report(r, rc, 1) : SYM_OK;
}

/* After a step (every PE alike): a snapshot every --mem-ckpt-every steps and
 * at each --ckpt-steps checkpoint, before the disk's. On the GPU the state is
 * brought to the host arrays first (with tp each PE its piece). */
static void mem_snapshot(run_t *r) {
    const sym_train_config_t *c = r->cfg;
    if (!r->peer || (r->step % c->mem_ckpt_every && (!c->ckpt_steps || r->step % c->ckpt_steps)))
        return;
    int rc = r->gpu ? gpu_sync_host(r) : SYM_OK;
    sym_ckpt_meta_t m;
    ckpt_meta(r, &m);
    mem_shard_t mine = {0};
    int ok = !rc && !mem_shard(r, r->dp_rank, 0, &mine);
    if ((rc = sym_peer_save(r->peer, &m, mine.s, ok ? mine.n : -1))) /* collective, even so */
        sym__warn("symtrain train", "an in-memory snapshot could not be taken: %s", sym_last_error());
    free(mine.s);
}

static void say_memory(void *user, const char *msg) {
    note(user, "%s; reading --ckpt-dir instead", msg);
}

/* The shards this PE reads say they are of this run's layout: 0. A restart
 * planned again (--parallel auto) may train another, whose parts differ: 1
 * on every PE, PE 0 having said so, and the disk (which reshards) is next.
 * Collective. */
static int mem_other_layout(run_t *r, const sym_ckpt_meta_t *m) {
    int32_t want[MEM_WORDS], got[MEM_WORDS] = {0};
    int other = 0;
    for (int d = 0; d < r->lay.dp && !other; d++) {
        sym_ckpt_slice_t s = {.dtype = SYM_DT_I32, .ndim = 1, .shape = {MEM_WORDS},
                              .count = {MEM_WORDS}, .data = got};
        mem_words(r, d, want);
        other = sym_peer_read(r->peer, mem_pe(r, d), &s, 1, 1) || memcmp(want, got, sizeof want);
    }
    float n = other ? 1.0f : 0.0f;
    int rc = sym__comm_sum(SHMEM_TEAM_WORLD, &n, 1);
    if (rc) return report(r, rc, 1);
    if (n == 0.0f) return 0;
    char was[64], is[64];
    mem_layout_name(got, was, sizeof was);
    mem_words(r, 0, want);
    mem_layout_name(want, is, sizeof is);
    if (other)
        note(r, "the in-memory snapshot of step %lld was taken in layout %s and this run's is "
                "%s; reading --ckpt-dir instead", (long long)m->step, was, is);
    else
        note(r, "the in-memory snapshot of step %lld is not of this run's layout (%s) on %g "
                "PE%s; reading --ckpt-dir instead", (long long)m->step, is, (double)n,
             n > 1.0f ? "s" : "");
    return 1;
}

/* --resume after a restart: 1 when the state came from the in-memory
 * snapshots, 0 when there is none to take (the disk is next), or an error. */
static int resume_memory(run_t *r) {
    if (!r->peer || sym__env_int("SYMTRAIN_RESTART_COUNT", 0, 0, LONG_MAX) == 0) return 0;
    double t0 = sym__now_s();
    sym_ckpt_meta_t m;
    int rc = sym_peer_find(r->peer, &m, say_memory, r);
    if (rc == SYM_ENOENT) return 0;
    size_t W = sym_model_full_num_params(r->model);
    if (!rc) rc = check_meta(r, &m, "the in-memory snapshot");
    if (!rc && m.params != W)
        rc = sym__error(SYM_EMISMATCH, "the in-memory snapshot holds %llu parameters, %s has %zu",
                        (unsigned long long)m.params, r->cfg->model.spec, W);
    if (rc) return report(r, rc, 1);
    if ((rc = mem_other_layout(r, &m))) return rc > 0 ? 0 : rc;
    for (int d = 0; !rc && d < r->lay.dp; d++) { /* this PE's part, from its dp team's shards */
        mem_shard_t sh;
        int others = r->zero && d != r->dp_rank; /* ZeRO: their parameters' blocks alone */
        if (!(rc = mem_shard(r, d, others, &sh)))
            rc = sym_peer_read(r->peer, mem_pe(r, d), sh.s, sh.n, others);
        free(sh.s);
    }
    if (rc) report(r, rc, 0);
    if ((rc = agree(r, rc))) return rc;
    set_optim_steps(r, m.optim_steps);
    char from[1024];
    int len = 0;
    for (int q = 0; q < r->npes && len < (int)sizeof from - 200; q++) {
        char where[200];
        sym_peer_describe(r->peer, q, where, sizeof where);
        len += snprintf(from + len, sizeof from - (size_t)len, "%sPE %d's %s", q ? ", " : "", q,
                        where);
    }
    note(r, "in-memory snapshot of step %lld restored in %.3f s: %s", (long long)m.step,
         sym__now_s() - t0, from);
    resumed(r, &m, "the in-memory snapshot");
    r->saved_step = -1; /* the disk may lack this step: the next checkpoint writes it */
    return 1;
}

/* ---- evaluation ---- */

/* Mean loss and accuracy over the evaluation split (images: the test set;
 * text: the first validation sequences, every prediction counted); each PE
 * takes a block. */
static int evaluate(run_t *r, double *loss, double *acc) {
    const sym__task_t *t = &r->task;
    r->eval_due = r->cfg->ckpt_at_eval; /* every PE evaluates at the same steps */
    int64_t off, len; /* this dp group's block (its tp PEs compute it together) */
    sym_shard_range(t->n_eval, r->lay.dp, r->dp_rank, &off, &len);
    double lsum = 0;
    int64_t right = 0;
    sym_forward_t f = {0, 0, 0};
    for (int64_t i = 0; i < len; i += r->rows) {
        int rows = (int)(len - i < r->rows ? len - i : r->rows);
        for (int k = 0; k < rows; k++) r->eidx[k] = off + i + k;
        sym_input_t in;
        sym__task_gather(t, 0, r->eidx, rows, r->x, r->tok, r->y, &in);
        int64_t c;
        double l;
        if (r->pipe) { /* pipe: the last stages' sums; 0 on the others */
            int rc = sym_pipe_eval(r->pipe, r->tok, r->y, rows, &l, &c);
            if (rc) return report(r, rc, 0);
        } else if (r->gpu) {
            int rc = r->gpu->eval(r->gm, r->tok, r->y, rows, t->seq, &l, &c);
            if (rc) return report(r, sym__error(rc, "GPU evaluation: %s", r->gpu->error()), 0);
        } else {
            sym_tensor_t logits;
            int rc = sym_model_forward(r->model, &in, &f, &logits);
            if (rc) return report(r, rc, 0);
            l = sym_model_xent(r->model, &logits, r->y, 1.0f, NULL, &c);
            if (isnan(l)) return report(r, SYM_EINVAL, 0);
        }
        lsum += l;
        right += c;
    }
    int counts = r->tp_rank == 0; /* a tp group's PEs hold the same sums: one counts them */
    r->evalbuf[0] = counts ? (float)right : 0.0f;
    r->evalbuf[1] = counts ? (float)lsum : 0.0f;
    int rc = sym_allreduce_sum_f32(SHMEM_TEAM_WORLD, r->evalbuf, 2);
    if (rc) return report(r, rc, 1);
    double predictions = (double)t->n_eval * t->seq;
    *acc = r->evalbuf[0] / predictions;
    *loss = r->evalbuf[1] / predictions;
    return SYM_OK;
}

/* An evaluation between epochs, as a line. */
static void say_eval(run_t *r, double loss, double acc) {
    if (!r->speak) return;
    struct rusage ru;
    char mem[32];
    getrusage(RUSAGE_SELF, &ru);
    sym__fmt_size((size_t)ru.ru_maxrss * 1024, mem, sizeof mem);
    if (r->task.text)
        note(r, "step %lld: validation loss %.4f (next-token accuracy %.1f%%); PE 0 peak memory %s",
             (long long)r->step, loss, 100.0 * acc, mem);
    else
        note(r, "step %lld: test loss %.4f, accuracy %.2f%%", (long long)r->step, loss,
             100.0 * acc);
}

/* An evaluation's numbers into the metrics file and the endpoint. */
static void record_eval(run_t *r, double loss, double acc) {
    if (r->metrics && sym_metrics_eval(r->metrics, r->step, r->epoch, loss, acc))
        sym__warn("symtrain train", "%s", sym_last_error());
    sym__prom_eval(r->prom, loss, acc);
}

/* ---- a sample of the trained GPT (PE 0, at the end) ---- */

static void print_token(void *user, int32_t tok) {
    (void)user;
    char text[SYM_TOKEN_TEXT_MAX];
    fwrite(text, 1, (size_t)sym_detokenize_one(tok, text), stdout);
}

/* whole: NULL, or the whole model's weights (a model split over a tp group). */
static int say_sample(run_t *r, const float *whole) {
    const sym_train_config_t *c = r->cfg;
    const char *prompt = c->sample_prompt && *c->sample_prompt ? c->sample_prompt : "\n";
    int n = (int)strlen(prompt), total = n + c->sample_tokens;
    int32_t *tok = malloc((size_t)total * sizeof *tok);
    if (!tok) return report(r, sym__error(SYM_ENOMEM, "out of memory for a sample"), 0);
    for (int i = 0; i < n; i++) tok[i] = (unsigned char)prompt[i];
    sym_model_t *m = r->model, *host = NULL;
    int rc = SYM_OK;
    if (r->gpu || whole) { /* the GPU's or the whole weights, in a host model that can run forward */
        if (r->gpu && !whole && !(rc = gpu_sync_params(r))) whole = sym_model_params(r->model);
        sym_model_config_t hc = c->model;
        hc.undrawn = 1; /* the weights are copied in */
        if (!rc && !(rc = sym_model_create(&hc, 1, 0, &host)))
            memcpy(sym_model_params(host), whole, sym_model_num_params(host) * sizeof(float));
        if (rc) {
            free(tok);
            return report(r, rc, 0);
        }
        m = host;
    }
    note(r, "a sample (%d tokens, temperature 1, top-k 40):", c->sample_tokens);
    fputs(prompt, stdout);
    rc = sym_model_generate(m, tok, n, c->sample_tokens, 1.0f, 40, c->model.seed, print_token,
                            NULL);
    sym_model_destroy(host);
    fputs("\n", stdout);
    fflush(stdout);
    free(tok);
    return rc ? report(r, rc, 0) : SYM_OK;
}

/* ---- setup ---- */

/* --metrics-port: this PE's endpoint on the port plus its rank on the host
 * (0: a free one). Whatever goes wrong is said, and training goes on. */
static void serve_metrics(run_t *r) {
    int port = r->cfg->metrics_port, local = shmem_team_my_pe(SHMEM_TEAM_SHARED);
    char why[512] = "";
    if (port && port + local > 65535)
        snprintf(why, sizeof why, "port %d + this PE's rank on the host (%d) is past 65535; "
                                  "choose a lower --metrics-port", port, local);
    else
        r->prom = sym__prom_start(port ? port + local : 0, r->me, why, sizeof why);
    if (!r->prom) {
        /* the same on every PE without libmicrohttpd: PE 0 says it */
        if (r->me == 0 || strstr(why, "libmicrohttpd") == NULL)
            sym__warn("symtrain train", "PE %d: %s; training goes on without the metrics endpoint",
                      r->me, why);
        return;
    }
    char host[256] = "localhost";
    gethostname(host, sizeof host - 1);
    sym__progress_clear(&r->progress);
    printf("symtrain: PE %d serves Prometheus metrics at http://%s:%d/metrics\n", r->me, host,
           sym__prom_port(r->prom));
    fflush(stdout);
    sym__prom_start_facts(r->prom,
                          (uint64_t)sym__env_int("SYMTRAIN_RESTART_COUNT", 0, 0, LONG_MAX), 0);
    r->prom_share = sym__prom_family(r->prom, "symtrain_balance_share_samples",
                                     "Samples of the global batch this PE computes a step");
    r->prom_speed = sym__prom_family(r->prom, "symtrain_balance_samples_per_second",
                                     "This PE's smoothed compute speed, as the balancer sees it");
    r->prom_straggler = sym__prom_family(r->prom, "symtrain_straggler",
                                         "1 while this PE is slower per sample than the median "
                                         "by more than --straggler-factor");
}

/* The balancer's view of this PE, for the Prometheus endpoint. */
static void prom_balance(run_t *r, const sym_step_record_t *rec) {
    if (!r->prom || rec->npes <= r->me) return;
    const sym_pe_record_t *pe = &rec->pes[r->me];
    sym__prom_family_set(r->prom, r->prom_share, pe->share);
    sym__prom_family_set(r->prom, r->prom_speed, pe->samples_per_s);
    sym__prom_family_set(r->prom, r->prom_straggler, pe->straggler);
}

static int blas_threads(const sym_train_config_t *c) {
    if (c->threads) return c->threads;
    cpu_set_t set;
    int cpus = 1;
    if (sched_getaffinity(0, sizeof set, &set) == 0) cpus = CPU_COUNT(&set);
    long quota = sym__cpu_limit(); /* a container's CPU limit */
    if (quota > 0 && quota < cpus) cpus = (int)quota;
    int local = shmem_team_n_pes(SHMEM_TEAM_SHARED);
    int t = cpus / (local > 0 ? local : 1);
    return t < 1 ? 1 : t;
}

/* --device: the GPU for a GPT where the CUDA part and a GPU are there (auto),
 * or as asked. Every PE reaches the same verdict, or the job ends. */
static int choose_device(run_t *r) {
    const sym_train_config_t *c = r->cfg;
    if (c->device == SYM_TRAIN_CPU && (c->recompute_gelu || c->recompute_ln))
        return report(r, sym__error(SYM_EINVAL, "--recompute is for the GPU (--device gpu); the "
                                                "CPU keeps every activation"), 1);
    /* tp or pp > 1: the CPU's, unless --device gpu asks for the GPU */
    if (c->device == SYM_TRAIN_CPU ||
        ((r->lay.tp > 1 || r->lay.pp > 1) && c->device != SYM_TRAIN_GPU))
        return SYM_OK;
    /* micro-batches with shares that move: the CPU loop's */
    int micro = c->micro_batches > 1;
    if (micro && c->balance.policy != SYM_BALANCE_OFF) {
        if (c->device == SYM_TRAIN_GPU)
            return report(r, sym__error(SYM_EINVAL, "--micro-batches with --balance trains on CPU "
                                                    "PEs for now; drop it, or pass --device cpu"),
                          1);
        return SYM_OK;
    }
    int gpt = c->model.kind == SYM_MODEL_GPT;
    if (!gpt) {
        if (c->device == SYM_TRAIN_GPU)
            return report(r, sym__error(SYM_EINVAL, "--device gpu trains a GPT (--model gpt:...); "
                                                    "the MLP trains on the CPU"), 1);
        return SYM_OK;
    }
    /* An earlier attempt's PEs still ending (symrun's fast restart) hold their
     * GPU memory until their very end: this PE's must not be refused for it. */
    const struct sym_cuda_backend *be = sym__cuda_backend();
    if (be && sym__wait_dying(60.0))
        note(r, "an earlier attempt's PEs have not ended after 60 s; using the GPU beside them");
    int gpus = be ? be->device_count() : 0;
    char why[1024];
    snprintf(why, sizeof why, "%s", be ? be->error() : sym_last_error());
    if (be && !gpus && !why[0]) snprintf(why, sizeof why, "no GPU is visible to this process");
    /* agree: a PE without a GPU makes the whole job choose the CPU (auto) or fail */
    r->evalbuf[0] = gpus > 0 ? 0.0f : 1.0f;
    int rc = sym_allreduce_sum_f32(SHMEM_TEAM_WORLD, r->evalbuf, 1);
    if (rc) return report(r, rc, 1);
    int missing = (int)r->evalbuf[0];
    if (missing && c->device == SYM_TRAIN_GPU)
        return report(r, sym__error(SYM_ENOENT, "--device gpu: %d PE%s cannot use a GPU: %s",
                                    missing, missing == 1 ? "" : "s", why), 0);
    if (missing) return SYM_OK; /* auto: the CPU */
    r->gpu = be;
    return SYM_OK;
}

/* A pipeline stage on the GPU (sym_pipe_device_t's calls, ctx the run). */
static int pipe_gpu_forward(void *ctx, int slot, int chunk, int rows, const sym_forward_t *f,
                            const int32_t *tok, const int32_t *lab, const float *x, int box,
                            float scale, float *y, double *loss, int64_t *correct) {
    run_t *r = ctx;
    int rc = r->gpu->stage_forward(r->gm, slot, chunk, tok, lab, x, box, rows, r->task.seq,
                                   f->step, f->row0, f->training, scale, y, loss, correct);
    return rc ? sym__error(rc, "GPU stage forward: %s", r->gpu->error()) : SYM_OK;
}

static int pipe_gpu_backward(void *ctx, int slot, int chunk, const float *dy, int box,
                             float *dx, int first) {
    run_t *r = ctx;
    int rc = r->gpu->stage_backward(r->gm, slot, chunk, dy, box, dx, first);
    return rc ? sym__error(rc, "GPU stage backward: %s", r->gpu->error()) : SYM_OK;
}

static int pipe_gpu_put(void *ctx, int slot, int fwd, int box) {
    run_t *r = ctx;
    int rc = r->gpu->stage_put(r->gm, slot, fwd, box);
    return rc ? sym__error(rc, "GPU stage: %s", r->gpu->error()) : SYM_OK;
}

static int pipe_gpu_handle(void *ctx, void *handle) {
    run_t *r = ctx;
    return r->gpu->stage_inbox_handle(r->gm, handle);
}

/* Not reachable: said once (PE 0's view), and the pipeline goes through the host. */
static int pipe_gpu_open(void *ctx, int next, const void *handle) {
    run_t *r = ctx;
    int rc = r->gpu->stage_peer_open(r->gm, next, handle);
    if (rc) note(r, "%s", r->gpu->error());
    return rc;
}

/* The GPU model from the host copy's weights (after a resume: the checkpoint's). */
static int gpu_create(run_t *r) {
    const sym_train_config_t *c = r->cfg;
    sym_gpu_opts_t o;
    memset(&o, 0, sizeof o);
    o.precision = c->precision;
    o.recompute_gelu = c->recompute_gelu;
    o.recompute_ln = c->recompute_ln;
    o.loss_scale_growth = c->loss_scale_growth;
    o.optim = c->optim;
    o.dp_team = r->dp_team;
    o.use_graph = 1;
    o.bucket_bytes = (size_t)(c->bucket_mb * 1024 * 1024);
    o.tp_team = r->tp_team; /* tp > 1: the model is split over it (this PE's table) */
    o.zero = c->zero; /* 1: AdamW's moments sharded over dp_team, 2: the gradients too */
    int rows = r->rows;
    o.pp_team = o.tied_team = SHMEM_TEAM_INVALID;
    if (r->pipe) { /* this PE's stage (its chunks s, S + s, ...) and the pipeline's teams */
        int s = sym_pipe_stage(r->pipe), S = sym_pipe_stages(r->pipe);
        int V = sym_pipe_virtual(r->pipe);
        o.stage_chunks = V;
        for (int k = 0; k < V; k++)
            sym_pipe_layers(r->pipe, k * S + s, &o.stage_first[k], &o.stage_layers[k]);
        o.stage_embed = s == 0;
        o.stage_head = s == S - 1;
        o.slots = sym_pipe_slots(r->pipe);
        o.pp_team = sym_pipe_team(r->pipe);
        o.tied_team = sym_pipe_tied_team(r->pipe);
        sym_pipe_inbox(r->pipe, &o.inbox_slots, &o.inbox_elems);
        o.inbox_slots *= V; /* one inbox a chunk each way, chunk k's slots after k - 1's */
        int M = micro_of(c, r->lay);
        rows = (r->max_local + M - 1) / M; /* a micro-batch's (pipe_create's micro_rows) */
    }
    if (r->lay.tp > 1) {
        int64_t lo, len;
        sym_shard_range(c->model.vocab, r->lay.tp, r->tp_rank, &lo, &len);
        o.vocab_lo = (int)lo;
        o.vocab_len = (int)len;
    }
    int nt = sym_model_num_tensors(r->model);
    const sym_param_t *table = sym_model_param(r->model, 0);
    int rc = r->gpu->create(&c->model, rows, table, nt, sym_model_params(r->model), r->P, &o,
                            &r->gm);
    if (rc) return report(r, sym__error(rc, "GPU model: %s", r->gpu->error()), 0);
    if (r->pipe) {
        sym_pipe_device_t d = {r,       pipe_gpu_forward, pipe_gpu_backward,
                               pipe_gpu_put, pipe_gpu_handle,  pipe_gpu_open};
        if ((rc = sym_pipe_use_device(r->pipe, &d))) return report(r, rc, 0);
        note(r, "pipeline: activations and gradients go %s",
             sym_pipe_direct(r->pipe) ? "GPU to GPU (CUDA IPC), the signals through the host"
                                      : "through the host (fp32)");
    }
    sym__balance_use_gpu(r->bal, r->gpu->pci_bus_id(r->gm));
    if (sym_optim_steps(r->opt) &&
        (rc = r->gpu->set_state(r->gm, sym_model_params(r->model), sym_optim_buffer(r->opt, 0),
                                sym_optim_buffer(r->opt, 1), sym_optim_steps(r->opt))))
        return report(r, sym__error(rc, "GPU model: %s", r->gpu->error()), 0);
    return SYM_OK;
}

/* Bring the GPU's weights and optimizer state to the host copy. With
 * --zero 1 the GPU's moments are sharded: this gathers them over the dp team,
 * so every PE of it calls this alike (gpu_zero); a PE alone takes the
 * weights only (gpu_sync_params). */
static int gpu_sync_host(run_t *r) {
    uint64_t t = 0;
    int rc = r->gpu->get_state(r->gm, sym_model_params(r->model), sym_optim_buffer(r->opt, 0),
                               sym_optim_buffer(r->opt, 1), &t);
    if (rc) return report(r, sym__error(rc, "GPU model: %s", r->gpu->error()), 0);
    sym_optim_set_steps(r->opt, t);
    return SYM_OK;
}

/* The GPU's weights alone to the host copy: local to this PE, whatever --zero. */
static int gpu_sync_params(run_t *r) {
    int rc = r->gpu->get_state(r->gm, sym_model_params(r->model), NULL, NULL, NULL);
    return rc ? report(r, sym__error(rc, "GPU model: %s", r->gpu->error()), 0) : SYM_OK;
}

/* ---- memory by kind (the planner's check, tests/train_plan_memory.c) ----
 * What the model and optimizer hold, from their allocators: the parameter
 * and gradient blocks, the optimizer's arrays, the activation blocks in use.
 * Each kind's largest over the PEs, and the largest PE's total (collective). */
static int memory_report(run_t *r) {
    size_t k[5];
    sym_model_memory(r->model, &k[0], &k[1], &k[3]);
    k[2] = optim_state_bytes(r);
    if (r->zero) k[1] += sym_zero_shard_len(r->zero) * sizeof(float); /* the gradient shard */
    k[4] = k[0] + k[1] + k[2] + k[3];
    long *buf = shmem_malloc(10 * sizeof(long)); /* collective */
    if (!buf) return report(r, sym__error(SYM_ENOMEM, "symmetric heap exhausted"), 1);
    for (int i = 0; i < 5; i++) buf[i] = (long)k[i];
    int rc = shmem_long_max_reduce(SHMEM_TEAM_WORLD, buf + 5, buf, 5);
    if (!rc && r->speak) {
        char s[5][32];
        for (int i = 0; i < 5; i++) sym__fmt_size((size_t)buf[5 + i], s[i], sizeof s[i]);
        note(r, "memory per PE (the largest PE's, from the allocators): parameters %s, gradients "
                "%s, optimizer state %s, activations %s; %s in all (%ld bytes)",
             s[0], s[1], s[2], s[3], s[4], buf[9]);
    }
    shmem_free(buf);
    return rc ? report(r, sym__error(SYM_EIO, "the memory report's reduction failed"), 1) : SYM_OK;
}

/* ---- pipe: pipeline parallelism (--parallel dp=N,pp=K; symtrain/pipeline.h) ---- */

const char *sym__pipe_refusal(const sym_train_config_t *c) {
    if (c->model.kind != SYM_MODEL_GPT)
        return "pp: pipeline stages split a GPT's blocks; pass --model gpt:...";
    if (c->balance.policy != SYM_BALANCE_OFF)
        return "pp: load balancing moves samples between replicas; a pipeline's stages pass "
               "fixed micro-batches; pass --balance off";
    return NULL;
}

/* With pp > 1: the pipeline's mesh (dp, pp, and tp inside each stage), and
 * what a pipeline cannot do yet; --inbox-slots without a pipeline is
 * refused. Every PE reaches the same verdict (the same options). */
static int pipe_plan(run_t *r) {
    const sym_train_config_t *c = r->cfg;
    const sym_parallel_t *l = &r->lay;
    const char *why = l->pp == 1 ? "--inbox-slots and --virtual-stages are for a pipeline; "
                                   "add pp=K (K > 1)"
                                 : sym__pipe_refusal(c);
    if (why)
        return report(r, sym__error(SYM_EINVAL, "--parallel dp=%d,tp=%d,pp=%d: %s", l->dp, l->tp,
                                    l->pp, why), 1);
    /* dp outermost, tp innermost: the PEs of a tp group consecutive, then the stages */
    char spec[64];
    snprintf(spec, sizeof spec, "dp=%d,pp=%d,tp=%d", l->dp, l->pp, l->tp);
    int rc = sym_mesh_create(SHMEM_TEAM_WORLD, spec, &r->pipe_mesh);
    if (rc) return report(r, rc, 1);
    int dpd = sym_mesh_dim(r->pipe_mesh, "dp"), tpd = sym_mesh_dim(r->pipe_mesh, "tp");
    r->dp_team = sym_mesh_team(r->pipe_mesh, dpd); /* the PEs holding the same stage */
    r->dp_rank = sym_mesh_coord(r->pipe_mesh, dpd);
    if (l->tp > 1) {
        r->tp_team = sym_mesh_team(r->pipe_mesh, tpd);
        r->tp_rank = sym_mesh_coord(r->pipe_mesh, tpd);
    }
    return SYM_OK;
}

/* This PE's stage (r->model) and the pipeline's inboxes. */
static int pipe_create(run_t *r) {
    const sym_train_config_t *c = r->cfg;
    int M = micro_of(c, r->lay);
    sym_pipe_config_t pc = {M, (r->max_local + M - 1) / M, r->task.seq, c->inbox_slots,
                            c->bucket_mb, c->zero != 0, r->gpu != NULL, c->virtual_stages};
    int rc = sym_pipe_create(&c->model, r->pipe_mesh, &pc, &r->pipe);
    if (rc) return report(r, rc, 1);
    r->model = sym_pipe_model(r->pipe);
    char plan[512] = "";
    size_t at = 0;
    int S = sym_pipe_stages(r->pipe), V = sym_pipe_virtual(r->pipe), slots;
    size_t elems;
    for (int s = 0; s < S * V && at < sizeof plan; s++) {
        int first, n;
        sym_pipe_layers(r->pipe, s, &first, &n);
        at += (size_t)snprintf(plan + at, sizeof plan - at, "%s%d-%d", s ? ", " : "", first,
                               first + n - 1);
    }
    sym_pipe_inbox(r->pipe, &slots, &elems);
    if (V == 1)
        note(r, "pipeline: %d stages (blocks %s), %d micro-batches of up to %d sequences, 1F1B, "
                "inboxes of %d slots; %d data-parallel replica%s",
             S, plan, M, pc.micro_rows, slots, r->lay.dp, r->lay.dp == 1 ? "" : "s");
    else
        note(r, "pipeline: %d stages x %d virtual stages (chunk c on stage c %% %d; blocks %s), "
                "%d micro-batches of up to %d sequences, interleaved 1F1B, inboxes of %d slots "
                "a chunk; %d data-parallel replica%s",
             S, V, S, plan, M, pc.micro_rows, slots, r->lay.dp, r->lay.dp == 1 ? "" : "s");
    return SYM_OK;
}

/* ---- end pipe ---- */

/* ---- ZeRO inside a mesh (tp, pp) ----
 * Each PE shards its own part of the model (its tp slice of its stage) over
 * its dp team; the clipping norm must still be the whole model's: a tensor
 * whole on every PE of a tp team counts on tp rank 0 alone, the last
 * stage's copy of the tied wte nowhere (stage 0 counts it), and the dp
 * teams' sums are summed over tp, then over the pipeline. */
static int zero_norm(run_t *r) {
    if (!r->pipe_mesh && !r->mesh) return SYM_OK; /* dp alone: the team's sum is the norm */
    int nt = sym_model_num_tensors(r->model), n = 0, rc;
    int last = r->pipe && sym_pipe_stages(r->pipe) > 1 &&
               sym_pipe_stage(r->pipe) == sym_pipe_stages(r->pipe) - 1;
    unsigned char *counted = malloc((size_t)nt);
    if (!counted) return sym__error(SYM_ENOMEM, "out of memory for ZeRO");
    for (int i = 0; i < nt; i++) {
        const sym_param_t *p = sym_model_param(r->model, i);
        counted[i] = (p->tp_dim >= 0 || r->tp_rank == 0) && !(last && p->index == 0);
    }
    shmem_team_t teams[2];
    if (r->lay.tp > 1) teams[n++] = r->tp_team;
    if (r->pipe && r->lay.pp > 1) teams[n++] = sym_pipe_team(r->pipe);
    rc = sym_zero_norm_over(r->zero, counted, teams, n);
    free(counted);
    return rc;
}

/* Seconds since this process started (/proc; 0 where it cannot say). */
static double process_age_s(void) {
    double up = 0;
    unsigned long long start = 0;
    FILE *f = fopen("/proc/uptime", "r");
    if (!f) return 0;
    int ok = fscanf(f, "%lf", &up) == 1;
    fclose(f);
    char buf[1024];
    f = fopen("/proc/self/stat", "r");
    if (!f) return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')'); /* the name may hold spaces; field 22 is starttime */
    for (int field = 2; p && field < 22; field++) p = strchr(p + 1, ' ');
    if (!ok || !p || sscanf(p + 1, "%llu", &start) != 1) return 0;
    double age = up - (double)start / (double)sysconf(_SC_CLK_TCK);
    return age > 0 ? age : 0;
}

/* symrun --spare: this PE was started ahead of a failure and waits here, its
 * start-up done, for symrun to need it (then told the pids of the attempt
 * before, still ending: SYMTRAIN_DYING_PIDS) or to end it; before anything
 * it does with --ckpt-dir (its lock; --parallel auto's kept layout: then it
 * waits before the planner). The wait goes to r->spare_waited. */
static int spare_wait(run_t *r) {
    long fd = sym__env_int("SYMTRAIN_SPARE_FD", -1, 0, INT_MAX);
    if (fd < 0) return SYM_OK;
    /* what a restore writes first (the optimizer's moments, untouched since
     * calloc) faulted in now rather than after the failure */
    for (int i = 0; r->opt && i < 2; i++) {
        float *state = sym_optim_buffer(r->opt, i);
        if (state) sym__parallel_touch(state, r->P * sizeof(float));
    }
    fflush(NULL); /* what it said so far goes out when it takes over, in order */
    double t0 = sym__now_s();
    char pids[1024];
    size_t n = 0;
    while (n + 1 < sizeof pids) {
        ssize_t got = read((int)fd, pids + n, 1);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) _exit(0); /* symrun ended this spare unneeded */
        if (pids[n] == '\n') break;
        n++;
    }
    pids[n] = '\0';
    close((int)fd);
    unsetenv("SYMTRAIN_SPARE_FD");
    if (n && setenv("SYMTRAIN_DYING_PIDS", pids, 1))
        return report(r, sym__error(SYM_ENOMEM, "out of memory"), 0);
    r->spare_waited = sym__now_s() - t0;
    return SYM_OK;
}

/* A restart's --resume: where the start-up before the restore went (PE 0's);
 * a spare's was done before it was needed. */
static void say_setup(run_t *r) {
    const double *t = r->t_setup, waited = r->spare_waited;
    if (waited >= 0) {
        note(r, "a spare: its start-up (%.2f s) was done before it was needed; it waited %.2f s",
             t[0] + t[5] - t[1], waited);
        return;
    }
    note(r, "start-up before the restore: %.2f s (process start and shmem_init %.2f s, the data "
            "%.2f s, the model, optimizer and buffers %.2f s: the model %.2f, the optimizer "
            "%.2f, the rest %.2f)",
         t[0] + sym__now_s() - t[1], t[0], t[2] - t[1], t[5] - t[2], t[3] - t[2], t[4] - t[3],
         t[5] - t[4]);
}

static int setup(run_t *r) {
    const sym_train_config_t *c = r->cfg;
    r->t_setup[0] = process_age_s();
    r->t_setup[1] = sym__now_s();
    int rc = sym_train_validate(c, r->npes);
    if (rc) return report(r, rc, 1);
    r->lay = layout_of(c, r->npes);
    r->dp_team = SHMEM_TEAM_WORLD; /* without tp: every PE one data-parallel replica */
    r->tp_team = SHMEM_TEAM_INVALID;
    r->dp_rank = r->me;
    int threads = r->threads = blas_threads(c);
    sym_blas_set_threads(threads);
    if ((rc = sym__task_load(&r->task, c, &c->model, say_note, r))) return report(r, rc, 1);
    r->t_setup[2] = sym__now_s();
    const sym__task_t *t = &r->task;
    r->evalbuf = shmem_calloc(4, sizeof(float)); /* collective */
    if (!r->evalbuf) return report(r, sym__error(SYM_ENOMEM, "symmetric heap exhausted"), 1);
    if ((c->parallel.pp > 1 || c->inbox_slots || c->virtual_stages > 1) && (rc = pipe_plan(r)))
        return rc;
    if (r->lay.tp > 1 && r->lay.pp == 1) { /* the mesh: a tp group of consecutive PEs in each dp row */
        char spec[64];
        snprintf(spec, sizeof spec, "dp=%d,tp=%d", r->lay.dp, r->lay.tp);
        if ((rc = sym_mesh_create(SHMEM_TEAM_WORLD, spec, &r->mesh))) return report(r, rc, 1);
        r->dp_team = sym_mesh_team(r->mesh, 0);
        r->tp_team = sym_mesh_team(r->mesh, 1);
        r->dp_rank = sym_mesh_coord(r->mesh, 0);
        r->tp_rank = sym_mesh_coord(r->mesh, 1);
    }

    /* The batch's rows; an MLP evaluates in larger blocks, a GPT in batches.
     * A balanced PE may take up to twice the even block (never more than the
     * batch less one sample for each other PE). */
    r->max_local = (c->global_batch + r->lay.dp - 1) / r->lay.dp;
    int cap = r->max_local;
    if (c->balance.policy != SYM_BALANCE_OFF) {
        cap = 2 * r->max_local;
        if (cap > c->global_batch - r->npes + 1) cap = c->global_batch - r->npes + 1;
    }
    /* --micro-batches without a pipeline (accumulation): the model holds one
     * micro-batch's rows (the even split of the largest over dp; balanced, a
     * PE's share scaled to a micro-batch stays within cap) */
    int accum = r->pipe_mesh ? 1 : micro_of(c, r->lay), step_rows = cap;
    if (accum > 1 && c->balance.policy == SYM_BALANCE_OFF)
        step_rows = ((c->global_batch + accum - 1) / accum + r->lay.dp - 1) / r->lay.dp;
    int rows = r->rows = t->text || step_rows > EVAL_ROWS ? step_rows : EVAL_ROWS;
    r->pes = calloc((size_t)r->npes, sizeof *r->pes);
    if (!r->pes) return report(r, sym__error(SYM_ENOMEM, "out of memory"), 1);
    if ((rc = sym__balance_create(&c->balance, c->global_batch, cap, threads, say_balance, r,
                                  &r->bal)))
        return report(r, rc, 1);
    if ((rc = choose_device(r))) return rc;
    /* On the GPU the host keeps a parameters-only copy (init, checkpoints, samples). */
    if (r->pipe_mesh) {
        if ((rc = pipe_create(r))) return rc;
    } else if ((rc = sym_model_create_tp(&c->model, r->gpu ? 0 : rows, !r->gpu, r->tp_team,
                                         &r->model))) {
        return report(r, rc, 1);
    }
    r->P = sym_model_num_params(r->model);
    r->accum = accum;
    r->t_setup[3] = sym__now_s();
    /* the GPU (any --zero) keeps whole host arrays: the checkpoint's copy */
    if ((!c->zero || r->gpu) && (rc = sym_optim_create(&c->optim, r->P, &r->opt)))
        return report(r, rc, 1);
    r->t_setup[4] = sym__now_s();
    int nt = sym_model_num_tensors(r->model);
    size_t *cuts = malloc((size_t)nt * sizeof *cuts);
    if (!cuts) return report(r, sym__error(SYM_ENOMEM, "out of memory for the gradient buckets"), 0);
    for (int i = 0; i < nt && !rc; i++) {
        const sym_param_t *p = sym_model_param(r->model, i);
        cuts[i] = p->offset;
        if (r->opt && !p->decay) rc = sym_optim_no_decay(r->opt, p->offset, p->numel);
    }
    size_t bucket = (size_t)(c->bucket_mb * 1024 * 1024);
    /* ZeRO's buckets leave the control floats out: sym_zero_clip averages them;
     * a pipeline averages each stage over its dp team */
    if (!rc && !r->gpu && !r->pipe)
        rc = sym_ddp_create(r->dp_team, sym_model_grads(r->model),
                            r->P + (c->zero ? 0 : SYM_GRAD_CTRL), cuts, nt, bucket, &r->ddp);
    free(cuts);
    if (!rc && c->zero && !r->gpu) /* a pipeline's: the stage's buckets over its dp team */
        rc = sym_zero_create(c->zero, r->pipe ? sym_pipe_ddp(r->pipe) : r->ddp, r->dp_team,
                             &c->optim, r->P, sym_model_param(r->model, 0), nt, &r->zero);
    if (!rc && r->zero) rc = zero_norm(r);
    if (rc) return report(r, rc, 1);
    if ((rc = sym_loader_init(&r->loader, t->n_train, c->global_batch, r->lay.dp, r->dp_rank,
                              c->model.seed)))
        return report(r, rc, 1);
    r->steps_per_epoch = sym_loader_steps_per_epoch(&r->loader);
    r->sched.peak = c->lr;
    r->sched.final = c->lr * c->final_lr_ratio;
    r->sched.total_steps = r->steps_per_epoch * c->epochs;
    r->epochs = c->epochs;
    if (c->steps) {
        r->sched.total_steps = c->steps;
        r->epochs = (c->steps + r->steps_per_epoch - 1) / r->steps_per_epoch;
    }
    r->sched.warmup = c->warmup_steps >= 0
                          ? c->warmup_steps
                          : (int64_t)llround(c->warmup_epochs * (double)r->steps_per_epoch);

    size_t R = (size_t)rows, per = (size_t)t->seq;
    r->x = malloc(sizeof(float) * R * (size_t)(t->text ? 1 : t->dim));
    r->tok = malloc(sizeof(int32_t) * R * per);
    r->y = malloc(sizeof(int32_t) * R * per);
    r->eidx = malloc(sizeof(int64_t) * R);
    if (!r->x || !r->tok || !r->y || !r->eidx)
        return report(r, sym__error(SYM_ENOMEM, "out of memory for the batch buffers"), 0);

    r->saved_step = -1;
    r->t_setup[5] = sym__now_s();
    if ((rc = spare_wait(r))) return rc;
    /* PE 0 holds --ckpt-dir before anyone reads it: two jobs saving into one
     * directory would prune and shadow each other's checkpoints. (Not made
     * for a --resume that will find nothing there and stop.) Every PE learns
     * whether it could, before the collective reads of a resume. */
    struct stat ck_st;
    int ck_missing = c->ckpt_dir && stat(c->ckpt_dir, &ck_st) != 0;
    if (r->me == 0 && c->ckpt_dir && !(ck_missing && c->resume == SYM_RESUME_MUST) &&
        (rc = sym_ckpt_lock_begin(c->ckpt_dir, &r->ckpt_lock, &r->lock_pending)))
        report(r, rc, 0);
    if ((rc = agree(r, rc))) return rc;
    if ((rc = mem_open(r))) return rc;
    if (c->resume && sym__env_int("SYMTRAIN_RESTART_COUNT", 0, 0, LONG_MAX) > 0) say_setup(r);
    int from_memory = c->resume ? resume_memory(r) : 0;
    if (from_memory < 0) return from_memory;
    double t_read = sym__now_s(); /* beside the in-memory restore's time */
    if (c->resume && !from_memory && (rc = sharded_on_disk(r) ? resume_sharded(r) : resume(r)))
        return rc;
    if (c->resume && !from_memory && r->step > 0 && c->mem_ckpt_every)
        note(r, "the checkpoint was read in %.3f s", sym__now_s() - t_read);
    /* --resume creates the model undrawn (sym_train_run): the weights are
     * drawn only now that nothing was restored over them */
    if (c->model.undrawn && !r->restored && (rc = sym_model_draw_weights(r->model)))
        return report(r, rc, 1);
    if (r->gpu && (rc = gpu_create(r))) return rc;
    /* Starting over in a directory of checkpoints would remove them as it
     * saves, or leave newer ones to shadow its own on the next --resume. */
    int64_t earlier = r->me == 0 && !c->resume && c->ckpt_dir ? sym_ckpt_newest_step(c->ckpt_dir) : -1;
    if (earlier >= 0)
        rc = report(r, sym__error(SYM_EINVAL, "%s holds checkpoints of an earlier run (up to "
                                  "step %lld): pass --resume to continue from them, or "
                                  "another --ckpt-dir to start over",
                                  c->ckpt_dir, (long long)earlier), 0);
    if (c->ckpt_dir && c->ckpt_sharded) { /* collective: every PE writes its shards */
        char layout[64];
        ckpt_layout_name(r, layout, sizeof layout);
        if ((rc = agree(r, rc))) return rc; /* PE 0 said why */
        if ((rc = sym_ckpt_dist_create(c->ckpt_dir, c->ckpt_keep, layout, &r->dist)))
            return report(r, rc, 1);
    }
    if (rc) return rc;
    if (r->me == 0 && c->ckpt_dir && !c->ckpt_sharded &&
        (rc = sym_ckpt_writer_create(c->ckpt_dir, c->ckpt_keep, &r->writer)))
        return report(r, rc, 0);
    if (r->me == 0 && c->metrics_path && (rc = sym_metrics_open(c->metrics_path, &r->metrics)))
        return report(r, rc, 0);
    if (c->metrics_port >= 0) serve_metrics(r);
    /* a pipeline's stages hold different amounts of GPU memory: the heaviest PE's is said */
    double gpu_mem_max = 0;
    if (r->gpu && r->lay.pp > 1) {
        r->evalbuf[0] = (float)r->gpu->memory(r->gm);
        if ((rc = shmem_float_max_reduce(SHMEM_TEAM_WORLD, r->evalbuf + 1, r->evalbuf, 1)))
            return report(r, sym__error(SYM_ECOMM, "the GPU memory's maximum over the PEs "
                                                   "failed (%d)", rc), 0);
        gpu_mem_max = r->evalbuf[1];
    }

    if (r->speak) {
        char bsz[32];
        int nb = r->ddp ? sym_ddp_num_buckets(r->ddp) : 0;
        const sym_model_config_t *m = &c->model;
        if (t->text)
            note(r, "%s (%d layers, %d wide, %d heads, vocabulary %d, context %d), %zu "
                    "parameters; %s: %lld training / %lld validation sequences of %d tokens",
                 m->spec, m->n_layer, m->n_embd, m->n_head, m->vocab, m->max_seq,
                 sym_model_full_num_params(r->model), t->name,
                 (long long)t->n_train, (long long)t->n_eval, t->seq);
        if (t->text && m->dropout > 0)
            note(r, "dropout %g on the embeddings, each block's two residual branches and its "
                    "attention probabilities",
                 (double)m->dropout);
        if (!t->text)
            note(r, "%s (%s, dropout %g), %zu parameters; %s: %lld training / %lld test samples",
                 m->spec, sym_act_name(m->act), (double)m->dropout, r->P, t->name,
                 (long long)t->n_train, (long long)t->n_eval);
        char len[64];
        if (c->steps)
            snprintf(len, sizeof len, "%lld steps", (long long)c->steps);
        else
            snprintf(len, sizeof len, "%d epoch%s = %lld steps", c->epochs,
                     c->epochs == 1 ? "" : "s", (long long)r->sched.total_steps);
        static const char *const prec[] = {"fp32", "bf16 (fp32 master weights)",
                                           "fp16 (dynamic loss scaling)",
                                           "fp32 (products in TF32)"};
        if (r->lay.tp > 1)
            note(r, "layout dp=%d tp=%d pp=%d: %d data-parallel group%s of %d PEs, each "
                    "holding %zu of the %zu parameters (heads and vocabulary split over tp)%s",
                 r->lay.dp, r->lay.tp, r->lay.pp, r->lay.dp, r->lay.dp == 1 ? "" : "s",
                 r->lay.tp, r->P, sym_model_full_num_params(r->model),
                 m->seq_parallel ? "; sequence parallel: LayerNorm, dropout and residual "
                                   "activations split along the sequence over tp"
                                 : "");
        else
            note(r, "layout dp=%d tp=%d pp=%d", r->lay.dp, r->lay.tp, r->lay.pp);
        char gmem[32], saved[160] = "";
        if (r->gpu && r->gpu->memory_saved(r->gm)) {
            char sz[32];
            snprintf(saved, sizeof saved, " (--recompute %s%s%s spares %s)",
                     c->recompute_gelu ? "gelu" : "", c->recompute_gelu && c->recompute_ln ? "," : "",
                     c->recompute_ln ? "ln" : "",
                     sym__fmt_size(r->gpu->memory_saved(r->gm), sz, sizeof sz));
        }
        if (gpu_mem_max > 0) {
            char sz[32];
            size_t at = strlen(saved);
            snprintf(saved + at, sizeof saved - at, " (the heaviest stage's; PE 0 holds %s)",
                     sym__fmt_size(r->gpu->memory(r->gm), sz, sizeof sz));
        }
        if (r->gpu)
            note(r, "%d PE%s on the GPU: %s; %s; %s of GPU memory per PE%s; global batch %d (%d "
                    "per %s); adamw, lr %g; %s",
                 r->npes, r->npes == 1 ? "" : "s", r->gpu->describe(r->gm), prec[c->precision % 4],
                 sym__fmt_size(gpu_mem_max > 0 ? (size_t)gpu_mem_max : r->gpu->memory(r->gm),
                               gmem, sizeof gmem),
                 saved, c->global_batch,
                 r->max_local, r->lay.tp > 1 ? "dp group" : "PE", (double)c->lr, len);
        else
            note(r, "%d PE%s x %d BLAS thread%s (%s); global batch %d (%d per %s); %s, lr %g; "
                    "%s; %d gradient bucket%s (%s)",
                 r->npes, r->npes == 1 ? "" : "s", threads, threads == 1 ? "" : "s",
                 sym_blas_name(), c->global_batch, r->max_local,
                 r->lay.tp > 1 ? "dp group" : "PE", sym_optim_name(c->optim.kind),
                 (double)c->lr, len, nb, nb == 1 ? "" : "s",
                 sym__fmt_size((r->P + SYM_GRAD_CTRL) * 4, bsz, sizeof bsz));
        if (r->gpu && c->zero == 1 && r->lay.dp > 1)
            note(r, "ZeRO-1 on the GPU: AdamW's moments sharded over the %d PEs of each dp team "
                    "(the gradients reduce-scattered after backward, the weights all-gathered "
                    "after AdamW)", r->lay.dp);
        else if (r->gpu && c->zero == 2 && r->lay.dp > 1)
            note(r, "ZeRO-2 on the GPU: AdamW's moments and the averaged gradients sharded over "
                    "the %d PEs of each dp team (each block's gradients reduce-scattered as the "
                    "backward leaves it, through two rotating block-sized arrays)", r->lay.dp);
        else if (r->gpu && c->zero)
            note(r, "ZeRO-%d over dp=1: nothing to shard, each PE holds its part's whole state",
                 c->zero);
        int M = micro_of(c, r->lay);
        char micro[96]; /* the step's micro-batches, said by either device's line */
        snprintf(micro, sizeof micro, "%d micro-batch%s of %d per step%s", M, M == 1 ? "" : "es",
                 (c->global_batch + M - 1) / M,
                 r->pipe ? " (the pipeline's)" : M > 1 ? " (gradients accumulated)" : "");
        if (r->gpu && M > 1) note(r, "%s", micro);
        if (!r->gpu) { /* the bytes, exactly: tests compare them across --zero */
            char how[160];
            if (!c->zero)
                snprintf(how, sizeof how, "not sharded");
            else if (r->lay.dp == 1) /* a layout without dp replicas: nothing to shard over */
                snprintf(how, sizeof how, "ZeRO-%d over dp=1: nothing to shard, each PE holds "
                         "its part's whole state", c->zero);
            else
                snprintf(how, sizeof how, "ZeRO-%d: %s sharded over the %d PEs of each dp team",
                         c->zero, c->zero == 1 ? "the state" : "the state and the gradients",
                         r->lay.dp);
            note(r, "optimizer state %zu bytes per PE (%s); %s", optim_state_bytes(r), how,
                 micro);
        }
        const sym_balance_config_t *bc = &c->balance;
        char every[32];
        if (bc->every_s > 0)
            snprintf(every, sizeof every, "%gs", bc->every_s);
        else
            snprintf(every, sizeof every, "%lld steps", (long long)bc->every_steps);
        if (bc->policy != SYM_BALANCE_OFF && r->npes > 1)
            note(r, "load balancing: %s, every %s, hysteresis %g%%; a PE takes 1 to %d samples "
                    "of a step",
                 sym__balance_policy_name(bc->policy), every, 100 * bc->hysteresis, cap);
    }
    return SYM_OK;
}

static void teardown(run_t *r) {
    sym__prom_stop(r->prom);
    if (r->writer) sym_ckpt_writer_destroy(r->writer);
    if (r->alone) { /* the others may wait in a collective: no collective frees; the caller exits */
        sym_ckpt_unlock(r->ckpt_lock);
        if (r->metrics && sym_metrics_close(r->metrics))
            sym__warn("symtrain train", "%s", sym_last_error());
        return;
    }
    sym_ckpt_dist_destroy(r->dist);
    snap_free(r); /* the writers are done with them */
    sym__ckpt_slices_free(&r->later);
    sym_peer_close(r->peer);
    sym_ckpt_unlock(r->ckpt_lock);
    sym__balance_destroy(r->bal);
    free(r->pes);
    if (r->metrics && sym_metrics_close(r->metrics))
        sym__warn("symtrain train", "%s", sym_last_error());
    if (r->evalbuf) shmem_free(r->evalbuf);
    sym__ckpt_async_destroy(r->ckasync);
    free(r->x);
    free(r->tok);
    free(r->y);
    free(r->eidx);
    sym_loader_free(&r->loader);
    sym_zero_destroy(r->zero);
    sym_ddp_destroy(r->ddp);
    if (r->gm) r->gpu->destroy(r->gm);
    sym_optim_destroy(r->opt);
    if (r->pipe) { /* pipe: the model is the pipeline's stage */
        r->model = NULL;
        sym_pipe_destroy(r->pipe);
    }
    sym_mesh_destroy(r->pipe_mesh);
    sym_model_destroy(r->model);
    sym_mesh_destroy(r->mesh);
    sym__task_free(&r->task);
}

/* ---- one step ---- */

/* The metrics line of a step that took dt seconds, comm of them communicating. */
static void record(const run_t *r, sym_step_record_t *rec, float loss, float lr, double norm,
                   int gsize, double dt, double comm, uint64_t bytes) {
    memset(rec, 0, sizeof *rec);
    if (r->npes > 1) sym__balance_record(r->bal, r->pes, rec);
    rec->step = r->step;
    rec->epoch = r->epoch;
    rec->loss = loss;
    rec->lr = lr;
    rec->grad_norm = norm;
    rec->samples_per_s = gsize / (dt > 1e-9 ? dt : 1e-9);
    rec->tokens_per_s = rec->samples_per_s * r->task.seq;
    rec->comm_s = comm;
    rec->compute_s = dt - comm;
    rec->bytes_allreduced = bytes;
}

static void gpu_fp16_record(run_t *r, sym_step_record_t *rec, const sym_gpu_step_t *st);

/* The step on the GPU: everything but the data stays there; the PEs agree on
 * the mean loss and the stop flag with one small collective afterwards. */
static int gpu_step(run_t *r, const sym_batch_t *b, double t0, float *loss_out,
                    double *norm_out, sym_step_record_t *rec, int *stop) {
    const sym_train_config_t *c = r->cfg;
    double predictions = (double)b->gsize * r->task.seq;
    float lr = sym_lr_at(&r->sched, r->step);
    sym_gpu_step_t st;
    /* scaled so that the average over the dp team is the mean over the batch */
    float scale = (float)(r->lay.dp / predictions);
    double lsum = 0;
    int rows = b->count, rc = SYM_OK;
    int64_t row0 = b->row0; /* the dropout masks' rows, as step()'s */
    /* --micro-batches: each one's gradients added on the GPU, the last one's
     * step averages and updates (the split is the CPU loop's, step()) */
    for (int i = 0; !rc && r->accum > 1 && i < r->accum; i++) {
        int64_t at, size;
        sym_shard_range(b->gsize, r->accum, i, &at, &size);
        sym_batch_t mb = sym_loader_micro_batch(&r->loader, r->sample + at, (int)size, NULL);
        sym_input_t in;
        if (mb.count)
            sym__task_gather(&r->task, 1, mb.idx, mb.count, r->x, r->tok, r->y, &in);
        double l = 0;
        row0 = at + mb.row0;
        if (i == r->accum - 1)
            rows = mb.count;
        else if (mb.count)
            rc = r->gpu->accumulate(r->gm, r->tok, r->y, mb.count, r->task.seq,
                                    (uint64_t)r->step, row0, scale, &l);
        lsum += l;
    }
    if (!rc)
        rc = r->gpu->train_step(r->gm, r->tok, r->y, rows, r->task.seq, (uint64_t)r->step, row0,
                                lr, scale, c->clip, &st);
    if (rc) return report(r, sym__error(rc, "GPU step: %s", r->gpu->error()), 0);
    sym__balance_computed(r->bal, t0, b->count, st.compute_s);
    double t1 = sym__now_s();
    /* a tp group's PEs hold the same loss: its tp PE 0 counts it */
    r->evalbuf[0] = r->tp_rank == 0 ? (float)((lsum + st.loss_sum) / predictions) : 0.0f;
    r->evalbuf[1] = stop_signal ? 1.0f : 0.0f;
    if ((rc = sym_allreduce_sum_f32(SHMEM_TEAM_WORLD, r->evalbuf, 2))) return report(r, rc, 1);
    if (r->lay.tp > 1 && (rc = agree_tp(r, &r->evalbuf[1]))) return report(r, rc, 0);
    if ((rc = sym__balance_exchange(r->bal, r->step + 1))) return report(r, rc, 1);
    *loss_out = r->evalbuf[0];
    *stop = r->evalbuf[1] > 0.0f;
    *norm_out = st.grad_norm;
    r->step++;
    r->sample += b->gsize;
    double dt = sym__now_s() - t0;
    double comm = sym__now_s() - t1;
    record(r, rec, *loss_out, lr, st.grad_norm, b->gsize, dt, comm,
           r->npes > 1 ? r->P * sym_dtype_size(SYM_DT_F32) : 0);
    gpu_fp16_record(r, rec, &st);
    return SYM_OK;
}

/* fp16 on the GPU: the step's loss scale into its record, a skipped update said. */
static void gpu_fp16_record(run_t *r, sym_step_record_t *rec, const sym_gpu_step_t *st) {
    if (r->cfg->precision != SYM_PREC_FP16) return;
    rec->loss_scale = st->loss_scale;
    rec->skipped = st->skipped;
    r->loss_scale = st->loss_scale;
    if (st->skipped) {
        r->skipped++;
        note(r, "step %lld: fp16 overflow (an inf or NaN gradient): the update was skipped; loss "
                "scale now %g", (long long)r->step, (double)st->loss_scale);
    }
}

/* What ZeRO-2 frees, said once (after step 1): st, the step's buckets. */
static void say_zero2(run_t *r, const sym_ddp_stats_t *st) {
    if (r->cfg->zero == 2 && r->step == 1 && r->speak)
        note(r, "ZeRO-2: step 1 handed %llu of the %zu bytes of full gradients back to the OS "
                "as their buckets were reduced; this PE keeps a %zu-byte shard",
             (unsigned long long)st->bytes_released, r->P * sizeof(float),
             sym_zero_shard_len(r->zero) * sizeof(float));
}

/* pipe: the step through the pipeline; the last stages' loss and the stop
 * flag summed over the job (so PE 0 has them), the norm over the pipeline. */
static int pipe_step(run_t *r, const sym_batch_t *b, double t0, float *loss_out,
                     double *norm_out, sym_step_record_t *rec, int *stop) {
    const sym_train_config_t *c = r->cfg;
    double predictions = (double)b->gsize * r->task.seq, lsum;
    int rc = sym_pipe_step(r->pipe, r->tok, r->y, b->count, (uint64_t)r->step, b->row0,
                           (float)(r->lay.dp / predictions),
                           &lsum);
    if (rc) return report(r, rc, 0);
    sym__balance_computed(r->bal, t0, b->count, -1);
    double t1 = sym__now_s();
    r->evalbuf[0] = (float)(lsum / predictions);
    r->evalbuf[1] = stop_signal ? 1.0f : 0.0f;
    float lr = sym_lr_at(&r->sched, r->step);
    sym_gpu_step_t st; /* the GPU's stages: the device ends the step (the tied sum, dp, norm, AdamW) */
    if ((rc = sym_allreduce_sum_f32(SHMEM_TEAM_WORLD, r->evalbuf, 2)) ||
        (rc = sym__balance_exchange(r->bal, r->step + 1)))
        return report(r, rc, 0);
    if (r->gpu && (rc = r->gpu->stage_update(r->gm, lr, c->clip, &st)))
        return report(r, sym__error(rc, "GPU step: %s", r->gpu->error()), 0);
    if (r->gpu)
        *norm_out = st.grad_norm;
    else if ((rc = r->zero ? sym_zero_clip(r->zero, NULL, 0, c->clip, norm_out) /* the shards' */
                           : sym_pipe_clip(r->pipe, c->clip, norm_out)))
        return report(r, rc, 0);
    float *g = sym_model_grads(r->model);
    *loss_out = r->evalbuf[0];
    *stop = r->evalbuf[1] > 0.0f;
    g[r->P + CTRL_STOP] = r->evalbuf[1]; /* read again at the epoch's end */
    if (r->zero && (rc = sym_zero_step(r->zero, sym_model_params(r->model), lr)))
        return report(r, rc, 0);
    if (!r->zero && !r->gpu) sym_optim_step(r->opt, sym_model_params(r->model), g, lr);
    r->step++;
    r->sample += b->gsize;
    if (r->zero) {
        sym_ddp_stats_t st = sym_ddp_stats(sym_pipe_ddp(r->pipe));
        say_zero2(r, &st);
    }
    double now = sym__now_s();
    record(r, rec, *loss_out, lr, *norm_out, b->gsize, now - t0, now - t1, 0);
    if (r->gpu) gpu_fp16_record(r, rec, &st);
    return SYM_OK;
}

/* With tp > 1, after the gradient average: the stop flag (*stop, agreed over
 * each dp group by the average) agreed over the tp group too, so over the
 * job. (PE 0's verdict on a --ckpt-every checkpoint reaches every PE in
 * ckpt_agree, after the step.) */
static int agree_tp(run_t *r, float *stop) {
    float v = *stop > 0.0f ? 1.0f : 0.0f;
    int rc = sym__comm_sum(r->tp_team, &v, 1);
    if (rc) return rc;
    *stop = v > 0.0f ? 1.0f : 0.0f;
    return SYM_OK;
}

/* Returns 0 or an error; *stop gets the agreed stop flag.
 * With --micro-batches N and no pipeline (gradient accumulation), with or
 * without tp, the step's global batch is split into N micro-batches
 * (sym_shard_range: the first take one sample more); each one's backward adds
 * into the same gradients, and only the last one's starts the buckets'
 * reductions, so the others communicate nothing. The loss gradient's scale
 * is npes / the whole batch's predictions, and a micro-batch's rows keep
 * their numbers within the batch (the dropout masks), so the step computes
 * what one pass over the batch does, up to the summation order, in the
 * activation memory of a micro-batch. */
static int step(run_t *r, float *loss_out, double *norm_out, sym_step_record_t *rec, int *stop) {
    const sym_train_config_t *c = r->cfg;
    double t0 = sym__now_s();
    const int *shares = sym__balance_shares(r->bal);
    sym_batch_t whole = sym_loader_batch_shares(&r->loader, r->sample, shares);
    if (r->gpu || r->pipe) {
        sym_input_t in;
        if (r->accum == 1) /* else gpu_step gathers each micro-batch */
            sym__task_gather(&r->task, 1, whole.idx, whole.count, r->x, r->tok, r->y, &in);
        return r->pipe ? pipe_step(r, &whole, t0, loss_out, norm_out, rec, stop)
                       : gpu_step(r, &whole, t0, loss_out, norm_out, rec, stop);
    }
    int gsize = whole.gsize;
    /* Scaled so that the average over the dp groups is the mean over the
     * global batch's predictions; the gradient overwrites the logits (with tp,
     * this PE's columns of them, the loss the same on every PE of the group). */
    double predictions = (double)gsize * r->task.seq;
    int dp = r->lay.dp;
    float scale = (float)(dp / predictions);
    float *g = sym_model_grads(r->model);
    if (r->zero)
        sym_ddp_zero_grads(r->ddp); /* ZeRO-2: the pages handed back are zero already */
    else
        sym_model_zero_grads(r->model);
    sym_ddp_begin(r->ddp);
    double lsum = 0;
    int count = 0, rc;
    for (int i = 0; i < r->accum; i++) {
        int64_t at, size;
        sym_shard_range(gsize, r->accum, i, &at, &size);
        int last = i == r->accum - 1;
        sym_batch_t b = r->accum == 1 ? whole
                                      : sym_loader_micro_batch(&r->loader, r->sample + at,
                                                               (int)size, shares);
        sym_tensor_t logits;
        if (b.count) {
            sym_input_t in;
            sym__task_gather(&r->task, 1, b.idx, b.count, r->x, r->tok, r->y, &in);
            sym_forward_t f = {1, (uint64_t)r->step, (int)at + b.row0};
            if ((rc = sym_model_forward(r->model, &in, &f, &logits))) return report(r, rc, 0);
            double l = sym_model_xent(r->model, &logits, r->y, scale, &logits, NULL);
            if (isnan(l)) return report(r, SYM_EINVAL, 0);
            lsum += l;
            count += b.count;
        }
        if (last) { /* the control floats travel with the last micro-batch's buckets */
            g[r->P + CTRL_LOSS] = (float)(lsum * dp / predictions);
            g[r->P + CTRL_STOP] = stop_signal ? 1.0f : 0.0f;
        }
        /* a PE without rows here (a short last batch) adds nothing; finish
         * starts whatever its hook did not */
        if (b.count &&
            (rc = sym_model_backward(r->model, &logits, last ? sym_ddp_ready : NULL, r->ddp)))
            return report(r, rc, 0);
    }
    sym__balance_computed(r->bal, t0, count, -1);
    if ((rc = sym_ddp_finish(r->ddp))) return report(r, rc, 0);
    if (r->lay.tp > 1 && (rc = agree_tp(r, g + r->P + CTRL_STOP))) return report(r, rc, 0);
    if ((rc = sym__balance_exchange(r->bal, r->step + 1))) return report(r, rc, 0);
    float lr = sym_lr_at(&r->sched, r->step);
    double tz = 0; /* ZeRO's norm exchange and all-gather: communication too */
    if (r->zero) { /* the norm from the shards, the update of this PE's, the all-gather */
        tz = sym__now_s();
        if ((rc = sym_zero_clip(r->zero, g + r->P, 2, c->clip, norm_out)) ||
            (rc = sym_zero_step(r->zero, sym_model_params(r->model), lr)))
            return report(r, rc, 0);
        tz = sym__now_s() - tz;
    }
    *loss_out = g[r->P + CTRL_LOSS];
    *stop = g[r->P + CTRL_STOP] > 0.0f;
    if (!r->zero) {
        if (r->lay.tp == 1) {
            *norm_out = sym_grad_clip(g, r->P, c->clip);
        } else { /* every element of the whole model once (sym_model_grad_norm) */
            *norm_out = sym_model_grad_norm(r->model, g);
            if (isnan(*norm_out)) return report(r, SYM_ECOMM, 0);
            sym_grad_scale_to(g, r->P, *norm_out, c->clip);
        }
        sym_optim_step(r->opt, sym_model_params(r->model), g, lr);
    }
    r->step++;
    r->sample += gsize;

    double dt = sym__now_s() - t0;
    sym_ddp_stats_t st = sym_ddp_stats(r->ddp);
    say_zero2(r, &st);
    record(r, rec, *loss_out, lr, *norm_out, gsize, dt, st.wait_s + st.issue_s + tz,
           st.bytes_reduced);
    return SYM_OK;
}

/* Setup fails on one PE alone for some causes (PE 0 cannot create the
 * checkpoint directory or the metrics file): every PE learns it here, before
 * the first step's collectives, so none waits for a PE that has given up. A
 * failure before the symmetric buffer existed was the same on every PE. */
static int agree(run_t *r, int rc) {
    if (!r->evalbuf) return rc;
    r->evalbuf[0] = rc ? 1.0f : 0.0f;
    int e = sym_allreduce_sum_f32(SHMEM_TEAM_WORLD, r->evalbuf, 1);
    if (e) return report(r, e, 1);
    r->alone = 0; /* every PE knows now */
    return r->evalbuf[0] > 0.0f ? (rc ? rc : SYM_EIO) : SYM_OK;
}

/* The checkpoint writer's figures to the Prometheus endpoint. */
static void prom_ckpt(run_t *r) {
    if (!r->writer && !r->dist) return;
    sym_ckpt_stats_t cs = r->dist ? sym_ckpt_dist_stats(r->dist) : sym_ckpt_writer_stats(r->writer);
    sym__prom_ckpt(r->prom, &cs);
}

/* A checkpoint is due after this step: every --ckpt-steps, after an
 * evaluation (--ckpt-at-eval), or by PE 0's --ckpt-every verdict, which
 * ckpt_agree told every PE. The whole-tensor format: only ever true on the
 * PEs that take part in saving; sharded: on every PE (each writes). */
static int save_due(const run_t *r) {
    const sym_train_config_t *c = r->cfg;
    if (!c->ckpt_dir || (!r->dist && !ckpt_member(r))) return 0;
    return (c->ckpt_steps && r->step % c->ckpt_steps == 0) || r->eval_due || r->time_due;
}

/* ---- async: the step loop's side of background checkpoints (ckpt/async.c) ---- */

/* After every step and at the end, on every PE (with --ckpt-dir): a
 * finished write's failure is collected (`wait`: the write in flight is
 * waited for first, the run's end), PE 0's --ckpt-every verdict (due by its
 * clock and no write in flight: async.c's policy) becomes every PE's
 * r->time_due, and a write that failed on any PE ends the run here, on
 * every PE, said once. */
static int ckpt_agree(run_t *r, int wait) {
    const sym_train_config_t *c = r->cfg;
    if (!r->ckasync) return SYM_OK;
    sym__ckpt_async_poll(r->ckasync, r->writer, r->dist, wait);
    int here = r->me == 0 && c->ckpt_every_s > 0 &&
               sym__now_s() - r->last_save >= c->ckpt_every_s &&
               !sym__ckpt_in_flight(r->writer, r->dist);
    int teller, rc = sym__ckpt_async_agree(r->ckasync, here, &r->time_due, &teller);
    if (rc && teller)
        sym__warn("symtrain train", "%s", sym_last_error());
    else if (rc)
        wait_for_the_end();
    return rc;
}

/* PE 0 took --ckpt-dir's lock while the last attempt's PE 0 was still ending
 * (its pages being freed: it holds the lock until then): taken now, before
 * anything is written there. A job that took it meanwhile ends this one. */
static void finish_lock(run_t *r) {
    r->lock_pending = 0;
    int rc = sym_ckpt_lock_finish(r->cfg->ckpt_dir, r->ckpt_lock);
    if (!rc) return;
    r->ckpt_lock = -1;
    sym__warn("symtrain train", "%s", sym_last_error());
    shmem_global_exit(1);
}

/* save(), timed for the stall figures: the step loop's time lost to a
 * checkpoint. With --ckpt-async off the write is waited for here too (the
 * same bytes, written before the next step: the baseline). */
static void checkpoint(run_t *r) {
    if (!r->ckasync || r->saved_step == r->step) return;
    if (r->lock_pending) finish_lock(r);
    double t0 = sym__now_s();
    save(r);
    if (r->cfg->ckpt_sync) sym__ckpt_async_poll(r->ckasync, r->writer, r->dist, 1);
    sym__ckpt_async_stall(r->ckasync, sym__now_s() - t0);
}

/* What checkpoints cost the step loop, said at the end (PE 0). */
static void say_stall(run_t *r) {
    int64_t n;
    double total, largest;
    if (!r->ckasync || !r->speak || (!r->writer && !r->dist)) return;
    sym__ckpt_async_figures(r->ckasync, &n, &total, &largest);
    if (!n) return;
    sym_ckpt_stats_t cs = r->dist ? sym_ckpt_dist_stats(r->dist) : sym_ckpt_writer_stats(r->writer);
    note(r, "checkpoints: %lld taken (--ckpt-async %s); they stalled the step loop %.1f ms each "
            "(largest %.1f ms), against %.1f ms a step; each took %.1f ms on disk%s",
         (long long)n, r->cfg->ckpt_sync ? "off" : "on", 1e3 * total / (double)n, 1e3 * largest,
         r->step_n ? 1e3 * r->step_s / (double)r->step_n : 0.0,
         cs.saves ? 1e3 * cs.seconds / (double)cs.saves : 0.0,
         r->cfg->ckpt_sync ? ", in the stall" : ", in the background");
}

/* ---- the loop ---- */

int sym_train_run(const sym_train_config_t *cfg, sym_train_result_t *res) {
    /* torchrun numbers its attempts in TORCHELASTIC_RESTART_COUNT: the one
     * SYMTRAIN_RESTART_COUNT (symrun's) is read as, where symrun set none */
    const char *elastic = getenv("TORCHELASTIC_RESTART_COUNT");
    if (elastic && !getenv("SYMTRAIN_RESTART_COUNT")) setenv("SYMTRAIN_RESTART_COUNT", elastic, 0);
    memset(res, 0, sizeof *res);
    res->test_acc = -1;
    double t_start = sym__now_s();
    run_t r;
    memset(&r, 0, sizeof r);
    r.ckpt_lock = -1;
    r.spare_waited = -1;
    r.cfg = cfg;
    r.me = shmem_my_pe();
    r.npes = shmem_n_pes();
    r.speak = r.me == 0 && !cfg->quiet;
    sym__progress_init(&r.progress, r.speak, cfg->progress, cfg->log_interval_s);
    read_kill_spec();

    struct sigaction sa, old_term, old_int;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    stop_signal = 0;
    sigaction(SIGTERM, &sa, &old_term);
    sigaction(SIGINT, &sa, &old_int);

    int rc = SYM_OK, stopped = 0;
    sym_train_config_t planned; /* --parallel auto: the planner's layout in cfg's place */
    if (cfg->parallel.plan) rc = spare_wait(&r); /* before the planner reads --ckpt-dir */
    if (!rc && cfg->parallel.plan) {
        char why[768];
        if ((rc = report(&r, sym__train_autoplan(cfg, &planned, why, sizeof why), 1)) == SYM_OK) {
            cfg = r.cfg = &planned;
            note(&r, "%s", why);
        }
    }
    sym_train_config_t restoring; /* --resume: the weights drawn only if nothing is restored */
    if (!rc && cfg->resume) {
        restoring = *cfg;
        restoring.model.undrawn = 1;
        cfg = r.cfg = &restoring;
    }
    if (!rc) rc = agree(&r, setup(&r));
    if (!rc && cfg->ckpt_dir) { /* collective */
        int e = sym__ckpt_async_create(&r.ckasync);
        rc = agree(&r, e ? report(&r, e, 0) : SYM_OK);
        /* The GPU's pinned snapshot buffers now, not in the first checkpoint's
         * stall (pinning gpt:d12's 1.5 GB takes about 0.6 s). */
        if (!rc && r.gpu) /* every PE agrees; PE 0 alone writes */
            rc = agree(&r, snap_direct(&r) || dist_later(&r)
                                ? snap_buffers(&r, sym_optim_state_size(r.opt))
                                : SYM_OK);
    }
    if (!rc && !r.gpu) rc = memory_report(&r); /* the planner's check */
    r.progress.seq = r.task.seq;
    if (!rc && r.gpu) {
        r.progress.peak_flops = r.gpu->peak_flops(r.gm);
        r.progress.flops_per_sample = sym_model_flops_per_token(r.model, r.task.seq) * r.task.seq *
                                      r.npes; /* the whole job's, against one GPU's peak x PEs */
        r.progress.peak_flops *= r.npes;
        sym__prom_start_facts(
            r.prom, (uint64_t)sym__env_int("SYMTRAIN_RESTART_COUNT", 0, 0, LONG_MAX),
            r.gpu->memory(r.gm));
    }
    r.last_save = sym__now_s();
    int64_t epoch_rows = 0;
    double epoch_loss = 0, test_loss = -1, test_acc = -1;
    int evaluated = 0;
    int64_t eval_step = -1;
    /* --steps sets the run's length (and the schedule's); --max-steps only stops early. */
    int64_t step_limit = INT64_MAX;
    if (cfg->steps) step_limit = cfg->steps;
    if (cfg->max_steps && cfg->max_steps < step_limit) step_limit = cfg->max_steps;
    while (!rc && r.epoch < r.epochs && !stopped && r.step < step_limit) {
        sym_loader_set_epoch(&r.loader, r.epoch);
        sym__progress_epoch(&r.progress, r.epoch, r.epochs, r.task.n_train, r.sample);
        epoch_rows = 0;
        epoch_loss = 0;
        evaluated = 0;
        while (r.sample < r.task.n_train && r.step < step_limit) {
            float loss = 0;
            double norm = 0;
            sym_step_record_t rec;
            int stop = 0;
            int64_t before = r.sample;
            double ts = sym__now_s();
            if ((rc = step(&r, &loss, &norm, &rec, &stop))) break;
            if (r.me == fail_pe && r.step == fail_step &&
                (rc = report(&r, sym__error(SYM_EIO, "step %lld failed on this PE alone "
                                            "(SYMTRAIN_TEST_STEP_FAIL)", (long long)r.step), 0)))
                break;
            r.step_s += sym__now_s() - ts;
            r.step_n++;
            epoch_loss += (double)loss * (double)(r.sample - before);
            epoch_rows += r.sample - before;
            if (r.metrics && sym_metrics_step(r.metrics, &rec))
                sym__warn("symtrain train", "%s", sym_last_error());
            sym__prom_step(r.prom, &rec, sym__progress_mfu(&r.progress, rec.samples_per_s));
            prom_balance(&r, &rec);
            if (r.prom) prom_ckpt(&r);
            sym__progress_update(&r.progress, r.sample, epoch_loss / (double)epoch_rows);
            if (r.me == kill_pe && r.step == kill_step) raise(SIGKILL);
            if ((rc = ckpt_agree(&r, 0))) break; /* a failed write ends the run; sharded: commit */
            /* Where a checkpoint taken now would resume. */
            if (r.sample >= r.task.n_train) break; /* the epoch's end: evaluate first */
            if (cfg->eval_every && r.step % cfg->eval_every == 0) {
                if ((rc = evaluate(&r, &test_loss, &test_acc))) break;
                eval_step = r.step;
                say_eval(&r, test_loss, test_acc);
                record_eval(&r, test_loss, test_acc);
            }
            if (stop) {
                stopped = 1;
                break;
            }
            mem_snapshot(&r);
            if (save_due(&r)) checkpoint(&r);
            r.eval_due = 0;
        }
        if (rc) break;
        if (r.sample >= r.task.n_train) { /* the epoch is complete */
            if ((rc = evaluate(&r, &test_loss, &test_acc))) break;
            evaluated = 1;
            record_eval(&r, test_loss, test_acc);
            sym__progress_end_epoch(&r.progress, r.sample, epoch_rows ? epoch_loss / epoch_rows : 0,
                                    test_acc);
            r.epoch++;
            r.sample = 0;
            /* The stop flag of the epoch's last step, or a step-count checkpoint due there. */
            const float *g = sym_model_grads(r.model);
            if (g[r.P + CTRL_STOP] > 0.0f) stopped = 1;
            if (!stopped && r.epoch < r.epochs) mem_snapshot(&r);
            if (!stopped && r.epoch < r.epochs && save_due(&r)) checkpoint(&r);
            r.eval_due = 0;
        }
    }
    if (!rc && !evaluated && !stopped && eval_step != r.step) {
        /* Ended mid-epoch (--max-steps): evaluate where it stands. */
        sym__progress_clear(&r.progress);
        rc = evaluate(&r, &test_loss, &test_acc);
        if (!rc) record_eval(&r, test_loss, test_acc);
    }
    if (!rc) checkpoint(&r); /* the final (or preemption) checkpoint, if --ckpt-dir */
    /* every PE: the writes committed before the end, or the run fails here */
    if (!rc && !(rc = ckpt_agree(&r, 1)) && (r.writer || r.dist))
        snprintf(res->checkpoint, sizeof res->checkpoint, "%s",
                 r.dist ? sym_ckpt_dist_last_path(r.dist) : sym_ckpt_last_path(r.writer));
    if (r.writer || r.dist) prom_ckpt(&r);
    if (!rc) say_stall(&r);
    double secs = sym__now_s() - t_start;
    float *whole = NULL; /* tp or pp > 1: the sample's weights, gathered on PE 0 */
    int sample = !rc && r.task.text && cfg->sample_tokens > 0 && !stopped;
    if (sample && r.pipe) { /* every stage's slices (collective over the job) */
        int owned;
        if ((r.gpu && (rc = gpu_sync_params(&r))) ||
            (rc = ckpt_state_gather(&r, &whole, &owned, NULL, NULL)))
            report(&r, rc, 0);
    } else if (sample && r.lay.tp > 1 && r.dp_rank == 0) {
        size_t W = sym_model_full_num_params(r.model);
        whole = malloc(W * sizeof *whole);
        if ((r.gpu && (rc = gpu_sync_params(&r))) || (rc = tp_all_have(&r, whole != NULL, W)) ||
            (rc = sym_model_gather(r.model, sym_model_params(r.model), whole)))
            report(&r, rc, 0);
    }
    if (!rc && r.me == 0) { /* the outcome is said even with --quiet */
        if (stopped)
            note(&r, "stopped by a signal after step %lld%s%s", (long long)r.step,
                 res->checkpoint[0] ? "; checkpoint " : " (no --ckpt-dir: nothing saved)",
                 res->checkpoint);
        else if (res->checkpoint[0])
            note(&r, "checkpoint %s", res->checkpoint);
        if (r.task.text && test_acc >= 0)
            note(&r, "validation loss %.4f (next-token accuracy %.1f%%) after %lld steps; "
                     "total time %.1f s",
                 test_loss, 100.0 * test_acc, (long long)r.step, secs);
        else if (test_acc >= 0 && !stopped)
            note(&r, "test accuracy %.2f%% (loss %.4f) after %lld steps; total time %.1f s",
                 100.0 * test_acc, test_loss, (long long)r.step, secs);
        else if (test_acc >= 0)
            note(&r, "test accuracy at the last epoch's end %.2f%%; total time %.1f s",
                 100.0 * test_acc, secs);
        if (r.gpu && cfg->precision == SYM_PREC_FP16)
            note(&r, "fp16: %lld of %lld steps skipped (overflow); loss scale %g at the end",
                 (long long)r.skipped, (long long)r.step, (double)r.loss_scale);
        if (sample) rc = say_sample(&r, whole);
    }
    free(whole);
    res->steps = r.step;
    res->epochs_done = r.epoch;
    res->test_acc = test_acc;
    res->test_loss = test_loss;
    res->seconds = secs;
    res->stopped = stopped;
    teardown(&r);
    sigaction(SIGTERM, &old_term, NULL);
    sigaction(SIGINT, &old_int, NULL);
    return rc;
}
