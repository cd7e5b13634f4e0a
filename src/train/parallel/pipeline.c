/*
 * pipeline.c — pipeline parallelism of the GPT (see symtrain/pipeline.h):
 * the split of the blocks into stages, the inboxes with their credits, the
 * 1F1B schedule of one step, the tied embedding's gradient, the clipping norm
 * over the whole pipeline, and a forward-only pass for evaluation.
 *
 * Symmetric layout, the same on every PE (stages hold different layers):
 *   ctl      (2 S + 2) uint64: S forward signals, S backward signals, then this
 *            PE's two credit counters (forward sends, backward sends)
 *   fwd_box  (S, rows x seq x C) floats: activations from the previous stage
 *   bwd_box  (S, rows x seq x C) floats: gradients from the next stage
 *   norm     2 doubles: the clipping norm's sum over the pipeline
 *   then the stage's parameter pool, sized for the largest stage's parameters
 *   (sym_gpt_stage_t.reserve) with its parameters and gradients at the same
 *   offsets on every stage, so the tied wte (offset 0 on the first and the
 *   last stage) is one symmetric address for their all-reduce.
 * A GPT's stages all pass (rows x seq, C) tensors, so one inbox size fits
 * every stage.
 *
 * Message k in a direction lands in slot k % S with signal k + 1. The sender
 * waits until the receiver has returned credit for message k - S (its credit
 * counter >= k + 1 - S); the receiver copies the slot out (the model's forward
 * copies its input, the backward its output's gradient) and adds one to the
 * sender's counter. A slot whose signal is not k + 1 when message k is
 * awaited would mean the sender overran the ring; that is checked and said.
 *
 * A device stage (sym_pipe_use_device) keeps the signals and credits, and its
 * messages go device to device where every neighbour pair reaches the other's
 * memory: each device's own inboxes (the same slots, its compute type), the
 * sender's put a copy into the receiver's slot, then the signal set with an
 * atomic; fwd_box and bwd_box stay unused then. Else through them, as host
 * fp32.
 */
#include <math.h>
#include <shmem.h>
#include <stdlib.h>
#include <string.h>

#include <symtrain/data.h>
#include <symtrain/dist.h>
#include <symtrain/pipeline.h>

#include "internal.h"
#include "models/model.h"
#include "util/util.h"

struct sym_pipe {
    sym_model_config_t cfg;
    sym_pipe_config_t pc;
    int S, s;             /* stages, this PE's */
    int *first, *layers;  /* (S) the plan */
    int prev_pe, next_pe; /* world PEs; -1 at the ends */
    shmem_team_t pp, dp;  /* this pipeline; this stage's dp team (INVALID: none) */
    shmem_team_t tp;      /* this stage's tp team (INVALID: none) */
    int tp_size, tp_rank;
    shmem_team_t tied;    /* the first and last stage of this pipeline (INVALID elsewhere) */
    sym_model_t *model;
    sym_ddp_t *ddp;
    int slots;            /* of each inbox */
    size_t msg_floats;    /* a slot: micro_rows x seq x C */
    uint64_t *ctl;        /* symmetric, see above */
    float *fwd_box, *bwd_box;
    double *norm;         /* symmetric */
    uint64_t fwd_sent, fwd_recv, bwd_sent, bwd_recv; /* grow for the whole run */
    int mslots;           /* the model's activation slots: micro-batches in flight here */
    sym_tensor_t *dlogits; /* (mslots) the head's loss gradient awaiting its backward */
    sym_pipe_stats_t stats;
    sym_pipe_device_t dev; /* dev.forward: a device computes the stage */
    int direct;            /* its messages device to device (dev.put) */
    float *stage_buf;      /* through the host: its output or input gradient on the way out */
};

/* ---- the plan ---- */

/* Contiguous stages balanced by predicted cost: every block costs the same
 * (24 C^2 + 4 T C FLOPs a token forward: its four matrices and attention), the
 * LM head 2 C Vp on the last stage, the embeddings nothing. The last stage
 * takes k blocks, the others split the rest evenly (the earlier ones one more
 * when it does not divide); k minimises the largest stage's cost. */
static void plan(const sym_model_config_t *c, int S, int *first, int *layers) {
    double block = 24.0 * c->n_embd * c->n_embd + 4.0 * c->max_seq * c->n_embd;
    double head = 2.0 * c->n_embd * (double)c->padded_vocab;
    int L = c->n_layer, best = L;
    double best_cost = INFINITY;
    for (int k = S == 1 ? L : 1; k <= L - (S - 1); k++) {
        int rest = L - k, per = S > 1 ? (rest + S - 2) / (S - 1) : 0;
        double cost = fmax(per * block, k * block + head);
        if (cost < best_cost) {
            best_cost = cost;
            best = k;
        }
    }
    int rest = L - best, at = 0;
    for (int s = 0; s < S - 1; s++) {
        layers[s] = rest / (S - 1) + (s < rest % (S - 1));
        first[s] = at;
        at += layers[s];
    }
    layers[S - 1] = best;
    first[S - 1] = at;
}

static sym_gpt_stage_t stage_of(const sym_pipe_t *p, int s, int slots) {
    sym_gpt_stage_t st = {p->first[s], p->layers[s], s == 0, s == p->S - 1, slots, 0};
    return st;
}

/* ---- creation ---- */

void sym_pipe_destroy(sym_pipe_t *p) {
    if (!p) return;
    sym_ddp_destroy(p->ddp);
    sym_model_destroy(p->model);
    if (p->tied != SHMEM_TEAM_INVALID) shmem_team_destroy(p->tied);
    if (p->norm) shmem_free(p->norm);
    if (p->bwd_box) shmem_free(p->bwd_box);
    if (p->fwd_box) shmem_free(p->fwd_box);
    if (p->ctl) shmem_free(p->ctl);
    free(p->dlogits);
    free(p->stage_buf);
    free(p->first);
    free(p->layers);
    free(p);
}

int sym_pipe_create(const sym_model_config_t *cfg, sym_mesh_t *mesh, const sym_pipe_config_t *pc,
                    sym_pipe_t **out) {
    *out = NULL;
    int ppd = sym_mesh_dim(mesh, "pp"), dpd = sym_mesh_dim(mesh, "dp"),
        tpd = sym_mesh_dim(mesh, "tp");
    if (ppd < 0) return sym__error(SYM_EINVAL, "pipeline: the mesh has no pp dimension");
    if (cfg->kind != SYM_MODEL_GPT)
        return sym__error(SYM_EINVAL, "pipeline parallelism splits a GPT; '%s' is not one",
                          cfg->spec);
    int S = sym_mesh_size(mesh, ppd);
    if (S > cfg->n_layer)
        return sym__error(SYM_EINVAL, "pp=%d stages for a GPT of %d blocks: every stage needs "
                          "at least one block; use pp=%d or fewer", S, cfg->n_layer,
                          cfg->n_layer);
    if (pc->micro_batches < 1 || pc->micro_rows < 1 || pc->seq < 1 || pc->inbox_slots < 0)
        return sym__error(SYM_EINVAL, "pipeline: %d micro-batches of %d sequences of %d tokens, "
                          "%d inbox slots: each must be at least 1 (slots: 0 for the default)",
                          pc->micro_batches, pc->micro_rows, pc->seq, pc->inbox_slots);
    sym_pipe_t *p = calloc(1, sizeof *p);
    if (!p) return sym__error(SYM_ENOMEM, "pipeline: out of memory");
    p->cfg = *cfg;
    p->pc = *pc;
    p->S = S;
    p->s = sym_mesh_coord(mesh, ppd);
    p->pp = sym_mesh_team(mesh, ppd);
    p->dp = dpd >= 0 && (sym_mesh_size(mesh, dpd) > 1 || pc->shard) ? sym_mesh_team(mesh, dpd)
                                                                     : SHMEM_TEAM_INVALID;
    p->tied = SHMEM_TEAM_INVALID;
    p->tp_size = tpd >= 0 ? sym_mesh_size(mesh, tpd) : 1;
    p->tp = p->tp_size > 1 ? sym_mesh_team(mesh, tpd) : SHMEM_TEAM_INVALID;
    p->tp_rank = p->tp_size > 1 ? sym_mesh_coord(mesh, tpd) : 0;
    p->prev_pe = p->s > 0 ? shmem_team_translate_pe(p->pp, p->s - 1, SHMEM_TEAM_WORLD) : -1;
    p->next_pe = p->s < S - 1 ? shmem_team_translate_pe(p->pp, p->s + 1, SHMEM_TEAM_WORLD) : -1;
    p->slots = pc->inbox_slots ? pc->inbox_slots : S;
    p->msg_floats = (size_t)pc->micro_rows * (size_t)pc->seq * (size_t)cfg->n_embd;
    int rc = SYM_OK, M = pc->micro_batches;
    int mslots = S - p->s < M ? S - p->s : M; /* micro-batches in flight on this stage */
    p->first = calloc((size_t)S, sizeof *p->first);
    p->layers = calloc((size_t)S, sizeof *p->layers);
    p->mslots = mslots;
    p->dlogits = calloc((size_t)mslots, sizeof *p->dlogits);
    if (!p->first || !p->layers || !p->dlogits) {
        rc = sym__error(SYM_ENOMEM, "pipeline: out of memory");
        goto fail;
    }
    plan(cfg, S, p->first, p->layers);
    /* The symmetric part, in the same order and sizes on every PE. */
    size_t box = (size_t)p->slots * p->msg_floats * sizeof(float);
    p->ctl = shmem_calloc((size_t)(2 * p->slots + 2), sizeof *p->ctl);
    p->fwd_box = shmem_malloc(box);
    p->bwd_box = shmem_malloc(box);
    p->norm = shmem_calloc(2, sizeof *p->norm);
    if (!p->ctl || !p->fwd_box || !p->bwd_box || !p->norm) {
        char want[32];
        rc = sym__error(SYM_ENOMEM, "pipeline: no room on the symmetric heap for two inboxes "
                        "of %d slots (%s each); raise SYMTRAIN_SYMMETRIC_SIZE or lower the "
                        "micro-batch's size", p->slots, sym__fmt_size(box, want, sizeof want));
        goto fail;
    }
    size_t reserve = 0;
    for (int s = 0; s < S; s++) {
        sym_gpt_stage_t st = stage_of(p, s, 1);
        size_t n = sym__model_stage_params(cfg, p->tp_size, &st);
        if (n > reserve) reserve = n;
    }
    sym_gpt_stage_t st = stage_of(p, p->s, mslots);
    st.reserve = reserve;
    if ((rc = sym_model_create_stage(cfg, pc->params_only ? 0 : pc->micro_rows, 1, p->tp, &st,
                                     &p->model)))
        goto fail;
    if (S > 1 && shmem_team_split_strided(p->pp, 0, S - 1, 2, NULL, 0, &p->tied)) {
        rc = sym__error(SYM_ECOMM, "pipeline: shmem_team_split_strided failed for the tied "
                        "embedding's pair (no free team slots)");
        goto fail;
    }
    if (p->dp != SHMEM_TEAM_INVALID && !pc->params_only) {
        int nt = sym_model_num_tensors(p->model);
        size_t *cuts = malloc((size_t)nt * sizeof *cuts);
        if (!cuts) {
            rc = sym__error(SYM_ENOMEM, "pipeline: out of memory");
            goto fail;
        }
        for (int i = 0; i < nt; i++) cuts[i] = sym_model_param(p->model, i)->offset;
        rc = sym_ddp_create(p->dp, sym_model_grads(p->model), sym_model_num_params(p->model),
                            cuts, nt, (size_t)(pc->bucket_mb * 1024 * 1024), &p->ddp);
        free(cuts);
        if (rc) goto fail;
    }
    *out = p;
    return SYM_OK;
fail:
    sym_pipe_destroy(p);
    return rc;
}

sym_model_t *sym_pipe_model(sym_pipe_t *p) { return p->model; }
int sym_pipe_stage(const sym_pipe_t *p) { return p->s; }
int sym_pipe_stages(const sym_pipe_t *p) { return p->S; }
sym_pipe_stats_t sym_pipe_stats(const sym_pipe_t *p) { return p->stats; }
sym_ddp_t *sym_pipe_ddp(sym_pipe_t *p) { return p->ddp; }
shmem_team_t sym_pipe_team(const sym_pipe_t *p) { return p->pp; }
shmem_team_t sym_pipe_tied_team(const sym_pipe_t *p) { return p->tied; }
int sym_pipe_slots(const sym_pipe_t *p) { return p->mslots; }

void sym_pipe_inbox(const sym_pipe_t *p, int *slots, size_t *elems) {
    *slots = p->slots;
    *elems = p->msg_floats;
}
int sym_pipe_direct(const sym_pipe_t *p) { return p->direct; }

/* Device to device: each PE's inbox handle to its neighbours, who open it;
 * the pipeline then agrees (one that cannot reach a neighbour sends the
 * whole pipeline through the host). Collective over the world. */
static int link_devices(sym_pipe_t *p) {
    const char *via = getenv("SYMTRAIN_PIPE_VIA_HOST");
    int want = p->dev.put && p->dev.inbox_handle && p->dev.peer_open && !(via && *via == '1');
    unsigned char *h = shmem_malloc(SYM_PIPE_HANDLE_BYTES); /* collective */
    if (!h)
        return sym__error(SYM_ENOMEM, "pipeline: no %d bytes of symmetric memory for the inbox "
                          "handles; raise SYMTRAIN_SYMMETRIC_SIZE", SYM_PIPE_HANDLE_BYTES);
    int cannot = !want || (p->dev.inbox_handle(p->dev.ctx, h) != 0);
    shmem_barrier_all(); /* every handle written */
    unsigned char peer[SYM_PIPE_HANDLE_BYTES];
    for (int next = 0; next <= 1 && !cannot; next++) {
        int pe = next ? p->next_pe : p->prev_pe;
        if (pe < 0) continue;
        shmem_getmem(peer, h, sizeof peer, pe);
        cannot = p->dev.peer_open(p->dev.ctx, next, peer) != 0;
    }
    p->norm[0] = cannot; /* the norm's symmetric word, free until the first step */
    int rc = p->S > 1 ? sym__comm_sum_f64(p->pp, p->norm, 1) : SYM_OK;
    shmem_free(h); /* collective: after every get */
    if (rc) return rc;
    p->direct = p->norm[0] == 0.0;
    return SYM_OK;
}

int sym_pipe_use_device(sym_pipe_t *p, const sym_pipe_device_t *d) {
    if (!p->pc.params_only || !d || !d->forward || !d->backward)
        return sym__error(SYM_EINVAL, "pipeline: a device stage needs a pipeline created with "
                          "params_only and both of its calls");
    p->dev = *d;
    int rc = link_devices(p);
    if (rc) return rc;
    if (!p->direct && !p->stage_buf && !(p->stage_buf = malloc(p->msg_floats * sizeof(float))))
        return sym__error(SYM_ENOMEM, "pipeline: out of memory for the stage's staging buffer");
    return SYM_OK;
}

void sym_pipe_layers(const sym_pipe_t *p, int s, int *first, int *layers) {
    *first = s >= 0 && s < p->S ? p->first[s] : 0;
    *layers = s >= 0 && s < p->S ? p->layers[s] : 0;
}

/* ---- the inboxes ---- */

enum { FWD = 1, BWD = 0 };

static uint64_t *signal_word(sym_pipe_t *p, int fwd, uint64_t k) {
    return p->ctl + (fwd ? 0 : p->slots) + k % (uint64_t)p->slots;
}
static uint64_t *credit_word(sym_pipe_t *p, int fwd) {
    return p->ctl + 2 * p->slots + (fwd ? 0 : 1);
}
static float *slot_of(sym_pipe_t *p, int fwd, uint64_t k) {
    return (fwd ? p->fwd_box : p->bwd_box) + (k % (uint64_t)p->slots) * p->msg_floats;
}

/* The next message's number in a direction, once its slot is free: slot
 * k % S still holds message k - S until its credit comes back. */
static uint64_t take_slot(sym_pipe_t *p, int fwd) {
    uint64_t k = fwd ? p->fwd_sent++ : p->bwd_sent++, S = (uint64_t)p->slots;
    uint64_t *credit = credit_word(p, fwd);
    if (k >= S) {
        if (shmem_uint64_atomic_fetch(credit, shmem_my_pe()) < k + 1 - S) p->stats.credit_waits++;
        shmem_uint64_wait_until(credit, SHMEM_CMP_GE, k + 1 - S);
    }
    uint64_t ahead = k + 1 - shmem_uint64_atomic_fetch(credit, shmem_my_pe());
    if (ahead > p->stats.max_ahead) p->stats.max_ahead = ahead;
    p->stats.sent++;
    return k;
}

/* Send this stage's output (fwd; activation set `slot`'s) or its input's
 * gradient to the next or previous stage: n floats of src through the host,
 * or device to device (the copy complete, then the signal). */
static int send(sym_pipe_t *p, int fwd, int slot, const float *src, size_t n) {
    uint64_t k = take_slot(p, fwd);
    int pe = fwd ? p->next_pe : p->prev_pe;
    if (!p->direct) {
        shmem_putmem_signal(slot_of(p, fwd, k), src, n * sizeof(float), signal_word(p, fwd, k),
                            k + 1, SHMEM_SIGNAL_SET, pe);
        return SYM_OK;
    }
    int rc = p->dev.put(p->dev.ctx, slot, fwd, (int)(k % (uint64_t)p->slots));
    if (rc) return rc;
    shmem_uint64_atomic_set(signal_word(p, fwd, k), k + 1, pe);
    return SYM_OK;
}

/* The next message from the previous (fwd) or next stage: its slot, which
 * stays ours until release(). */
static int receive(sym_pipe_t *p, int fwd, const float **msg) {
    uint64_t k = fwd ? p->fwd_recv : p->bwd_recv;
    uint64_t v = shmem_signal_wait_until(signal_word(p, fwd, k), SHMEM_CMP_GE, k + 1);
    if (v != k + 1)
        return sym__error(SYM_ECOMM, "pipeline stage %d: inbox slot %llu holds message %llu where "
                          "%llu was due: the %s stage overran its credits", p->s,
                          (unsigned long long)(k % (uint64_t)p->slots),
                          (unsigned long long)(v - 1), (unsigned long long)k,
                          fwd ? "previous" : "next");
    *msg = slot_of(p, fwd, k);
    return SYM_OK;
}

/* The slot is copied out: a credit back to its sender. */
static void release(sym_pipe_t *p, int fwd) {
    if (fwd)
        p->fwd_recv++;
    else
        p->bwd_recv++;
    shmem_uint64_atomic_add(credit_word(p, fwd), 1, fwd ? p->prev_pe : p->next_pe);
}

/* ---- one step ---- */

/* Forward of one micro-batch (rows sequences; tok on the first stage, lab on
 * the last) in activation slot `slot`: receive, compute (the model, or the
 * device: its output in stage_buf), send on; the last stage's loss (and,
 * training, its gradient in place of the logits). f: the pass (training, and
 * the dropout masks' step and first row). */
static int forward(sym_pipe_t *p, int slot, int rows, sym_forward_t f, const int32_t *tok,
                   const int32_t *lab, float scale, double *lsum, int64_t *correct) {
    sym_model_t *m = p->model;
    int rc, last = p->s == p->S - 1;
    const float *x = NULL, *out = NULL;
    size_t n = 0; /* floats of the output sent on */
    double l = 0;
    if (p->s > 0 && (rc = receive(p, FWD, &x))) return rc;
    if (p->dev.forward) {
        int box = p->direct && p->s > 0 ? (int)(p->fwd_recv % (uint64_t)p->slots) : -1;
        rc = p->dev.forward(p->dev.ctx, slot, rows, &f, p->s == 0 ? tok : NULL, last ? lab : NULL,
                            box < 0 ? x : NULL, box, scale,
                            last || p->direct ? NULL : p->stage_buf, &l, correct);
        out = p->stage_buf;
        n = (size_t)rows * (size_t)p->pc.seq * (size_t)p->cfg.n_embd;
    } else {
        sym_model_use_slot(m, slot);
        sym_input_t in = {rows, p->pc.seq, x, p->s == 0 ? tok : NULL};
        sym_tensor_t y;
        if (!(rc = sym_model_forward(m, &in, &f, &y)) && last) {
            l = sym_model_xent(m, &y, lab, scale, f.training ? &y : NULL, correct);
            p->dlogits[slot] = y;
        } else if (!rc) {
            out = sym_tensor_f32(&y);
            n = (size_t)y.shape[0] * (size_t)y.shape[1];
        }
    }
    if (p->s > 0) release(p, FWD);
    if (rc) return rc;
    if (!last) return send(p, FWD, slot, out, n);
    if (isnan(l)) return sym__error(SYM_EINVAL, "pipeline stage %d: the loss is not a number", p->s);
    if (p->tp_rank == 0) /* the tp team computes the same loss: counted once */
        *lsum += l;
    else if (correct)
        *correct = 0;
    return SYM_OK;
}

/* The first and last stage: every finished bucket's dp reduction starts
 * but the one at offset 0 (wte's), which waits for the tied sum. */
static void ready_but_wte(void *ddp, size_t lo) { sym_ddp_ready(ddp, lo ? lo : 1); }

/* Backward of the micro-batch in `slot` (rows sequences): the model's, whose
 * last one (`last`) starts the dp average of each gradient bucket as it
 * finishes, or the device's (`first`: its gradients start from zero). */
static int backward(sym_pipe_t *p, int slot, int rows, int first, int last) {
    sym_model_t *m = p->model;
    /* the activations between stages: N = rows x seq of them, or with sequence
     * parallelism this tp rank's positions of each sequence (its partners on
     * the next and previous stage have the same rank: the same positions) */
    int64_t t0 = 0, tl = p->pc.seq;
    if (p->cfg.seq_parallel && p->tp_size > 1)
        sym_shard_range(p->pc.seq, p->tp_size, p->tp_rank, &t0, &tl);
    size_t N = (size_t)rows * (size_t)tl, C = (size_t)p->cfg.n_embd;
    const float *g = NULL;
    int rc;
    if (p->s < p->S - 1 && (rc = receive(p, BWD, &g))) return rc;
    if (p->dev.backward) {
        int box = p->direct && g ? (int)(p->bwd_recv % (uint64_t)p->slots) : -1;
        rc = p->dev.backward(p->dev.ctx, slot, box < 0 ? g : NULL, box,
                             p->s > 0 && !p->direct ? p->stage_buf : NULL, first);
    } else {
        sym_model_use_slot(m, slot);
        sym_tensor_t dy = g ? sym_tensor_2d((float *)g, (int64_t)N, (int64_t)C) : p->dlogits[slot];
        sym_grad_ready_fn ready = p->tied != SHMEM_TEAM_INVALID ? ready_but_wte : sym_ddp_ready;
        rc = sym_model_backward(m, &dy, last && p->ddp ? ready : NULL, p->ddp);
    }
    if (p->s < p->S - 1) release(p, BWD);
    if (rc) return rc;
    if (p->s > 0)
        return send(p, BWD, slot, p->dev.backward ? p->stage_buf : sym_model_input_grad(m), N * C);
    return SYM_OK;
}

/* Micro-batch i of `rows` split into M: its first row and its rows (the
 * first rows % M one more). */
static void micro(int rows, int M, int i, int *row0, int *n) {
    *n = rows / M + (i < rows % M);
    *row0 = i * (rows / M) + (i < rows % M ? i : rows % M);
}

int sym_pipe_step(sym_pipe_t *p, const int32_t *tokens, const int32_t *labels, int rows,
                  uint64_t step, int64_t row0, float grad_scale, double *loss_sum) {
    int M = p->pc.micro_batches, T = p->pc.seq, rc = SYM_OK;
    *loss_sum = 0;
    if (rows < 0 || rows > M * p->pc.micro_rows)
        return sym__error(SYM_EINVAL, "pipeline step: %d sequences, more than %d micro-batches "
                          "of %d", rows, M, p->pc.micro_rows);
    if (rows < M) M = rows; /* a short last batch: no empty micro-batches */
    int slots = p->mslots;
    int warm = p->S - p->s - 1 < M ? p->S - p->s - 1 : M, f = 0, b = 0, r0, n;
    int dev = p->dev.forward != NULL; /* the device zeroes, sums and averages its own */
    if (!dev && p->pc.shard)
        sym_ddp_zero_grads(p->ddp); /* ZeRO-2: the pages handed back are zero already */
    else if (!dev)
        sym_model_zero_grads(p->model);
    if (p->ddp && !dev) sym_ddp_begin(p->ddp);
    while (!rc && b < M) {
        /* 1F1B: the warm-up forwards, then a forward before each backward while any are left */
        if (f < M && (f < warm || f == b + warm)) {
            micro(rows, M, f, &r0, &n);
            size_t at = (size_t)r0 * (size_t)T;
            sym_forward_t pass = {1, step, row0 + r0};
            rc = forward(p, f % slots, n, pass, tokens + at, labels + at, grad_scale, loss_sum,
                         NULL);
            f++;
        } else {
            micro(rows, M, b, &r0, &n);
            rc = backward(p, b % slots, n, b == 0, b == M - 1);
            b++;
        }
    }
    if (rc || dev) return rc;
    /* the tied weight: the embedding's gradient (first stage) + the LM head's
     * (last), before the dp reduction of its bucket (the sums commute) */
    if (p->tied != SHMEM_TEAM_INVALID && /* wte is first on both: this PE's part of it */
        (rc = sym__comm_sum(p->tied, sym_model_grads(p->model),
                            sym_model_param(p->model, 0)->numel)))
        return rc;
    return p->ddp ? sym_ddp_finish(p->ddp) : SYM_OK;
}

int sym_pipe_eval(sym_pipe_t *p, const int32_t *tokens, const int32_t *labels, int rows,
                  double *loss_sum, int64_t *correct) {
    int R = p->pc.micro_rows, T = p->pc.seq, rc = SYM_OK;
    *loss_sum = 0;
    *correct = 0;
    for (int r0 = 0; !rc && r0 < rows; r0 += R) {
        int n = rows - r0 < R ? rows - r0 : R;
        int64_t c = 0;
        size_t at = (size_t)r0 * (size_t)T;
        sym_forward_t pass = {0, 0, 0};
        rc = forward(p, 0, n, pass, tokens + at, labels + at, 1.0f, loss_sum, &c);
        *correct += c;
    }
    return rc;
}

int sym_pipe_clip(sym_pipe_t *p, double max_norm, double *norm) {
    const float *g = sym_model_grads(p->model);
    size_t n = sym_model_num_params(p->model);
    double split = 0, whole = 0;
    for (int t = 0; t < sym_model_num_tensors(p->model); t++) {
        const sym_param_t *q = sym_model_param(p->model, t);
        if (q->index == 0 && p->S > 1 && p->s == p->S - 1)
            continue; /* the last stage's copy of wte: counted on stage 0 */
        double sq = 0;
        for (size_t i = 0; i < q->numel; i++)
            sq += (double)g[q->offset + i] * (double)g[q->offset + i];
        *(q->tp_dim >= 0 ? &split : &whole) += sq;
    }
    /* whole tensors are alike on every PE of a tp team: each counts 1/tp of them */
    p->norm[0] = split + whole / p->tp_size;
    int rc = p->S > 1 ? sym__comm_sum_f64(p->pp, p->norm, 1) : SYM_OK;
    if (!rc && p->tp_size > 1) rc = sym__comm_sum_f64(p->tp, p->norm, 1);
    if (rc) return rc;
    *norm = sqrt(p->norm[0]);
    if (max_norm > 0.0 && *norm > max_norm) {
        float scale = (float)(max_norm / (*norm + 1e-6));
        float *w = sym_model_grads(p->model);
        for (size_t i = 0; i < n; i++) w[i] *= scale;
    }
    return SYM_OK;
}
