/*
 * pipeline.c — pipeline parallelism of the GPT (see symtrain/pipeline.h):
 * the split of the blocks into stages (and, with virtual stages, into model
 * chunks interleaved over them), the inboxes with their credits, the 1F1B
 * schedule of one step (Megatron's interleaved one with virtual stages), the
 * tied embedding's gradient, the clipping norm over the whole pipeline, and a
 * forward-only pass for evaluation.
 *
 * Virtual stages (V > 1, pc.virtual_stages): the blocks are cut into S x V
 * model chunks, chunk c on pipeline rank c % S, so rank r holds its local
 * chunks k = 0 .. V-1, the model's chunks k S + r. A micro-batch goes rank 0
 * -> 1 -> ... -> S-1 and on to rank 0's next chunk; its gradient the way
 * back. The embeddings are on chunk 0 (rank 0), ln_f and the LM head on chunk
 * S V - 1 (rank S-1), as without virtual stages, so the tied wte's pair is
 * the same. With V = 1 everything below reads with one chunk, k = 0.
 *
 * Symmetric layout, the same on every PE (stages hold different layers):
 *   ctl      (2 V S' + 2 V) uint64, S' the slots of an inbox: for each local
 *            chunk k, S' forward signals then S' backward signals; then this
 *            PE's credit counters, two per chunk of the receiver (forward
 *            sends to chunk k, backward sends to chunk k)
 *   fwd_box  (V, S', rows x seq x C) floats: activations into chunk k from
 *            the previous chunk (the previous rank's, or rank S-1's chunk
 *            k - 1 on rank 0); with sequence parallelism rows x ceil(seq /
 *            tp) x C, room for any tp rank's shard (edge_floats)
 *   bwd_box  (V, S', rows x seq x C) floats, or as fwd_box's with SP:
 *            gradients into chunk k from the next chunk (the next rank's, or
 *            rank 0's chunk k + 1 on rank S-1)
 *   norm     2 doubles: the clipping norm's sum over the pipeline
 *   then the stage's parameter pool, sized for the largest stage's parameters
 *   (sym_gpt_stage_t.reserve) with its parameters and gradients at the same
 *   offsets on every stage, so the tied wte (offset 0 on the first and the
 *   last stage) is one symmetric address for their all-reduce.
 * A GPT's chunks all pass (rows x seq, C) tensors (with SP a tp rank's
 * shard of one), so one inbox size fits every one.
 *
 * Each inbox (chunk, direction) has one sender, and the sender one credit
 * counter for it. Message k into an inbox lands in slot k % S' with signal
 * k + 1. The sender waits until the receiver has returned credit for message
 * k - S' (its credit counter >= k + 1 - S'); the receiver copies the slot out
 * (the model's forward copies its input, the backward its output's gradient)
 * and adds one to the sender's counter. A slot whose signal is not k + 1 when
 * message k is awaited would mean the sender overran the ring; that is
 * checked and said. With virtual stages a sender held back by a full inbox
 * could close a cycle of waits around the ring: pipe_create plays the
 * step's schedule with the inboxes' slots (fits()) and refuses slots that
 * would deadlock.
 *
 * A device stage (sym_pipe_use_device; its V chunks, the device told which
 * one each call runs) keeps the signals and credits, and its messages go
 * device to device where every neighbour pair reaches the other's memory:
 * each device's own inboxes (the same V x S' slots a direction, its compute
 * type; chunk k's slot n % S' is the device's box k S' + n % S'), the
 * sender's put a copy into the receiver's slot, then the signal set with an
 * atomic; fwd_box and bwd_box stay unused then. Else through them, as host
 * fp32.
 */
#include <math.h>
#include <stdio.h>
#include <shmem.h>
#include <stdlib.h>
#include <string.h>

#include <symtrain/data.h>
#include <symtrain/dist.h>
#include <symtrain/pipeline.h>

#include "internal.h"
#include "models/model.h"
#include "util/util.h"

enum { MAXV = SYM_GPT_MAX_CHUNKS };

struct sym_pipe {
    sym_model_config_t cfg;
    sym_pipe_config_t pc;
    int S, s;             /* stages, this PE's */
    int V;                /* model chunks a stage holds (virtual stages) */
    int *first, *layers;  /* (S V) the plan: chunk c holds blocks [first[c], + layers[c]) */
    int prev_pe, next_pe; /* world PEs; -1 at the ends (with V > 1 a ring: S-1 -> 0) */
    shmem_team_t pp, dp;  /* this pipeline; this stage's dp team (INVALID: none) */
    shmem_team_t tp;      /* this stage's tp team (INVALID: none) */
    int tp_size, tp_rank;
    shmem_team_t tied;    /* the first and last stage of this pipeline (INVALID elsewhere) */
    sym_model_t *model;
    sym_ddp_t *ddp;
    int slots;            /* of each inbox */
    size_t msg_floats;    /* a slot: micro_rows x seq x C (SP: x ceil(seq / tp)) */
    uint64_t *ctl;        /* symmetric, see above */
    float *fwd_box, *bwd_box;
    double *norm;         /* symmetric */
    /* grow for the whole run: sent into the receiver's chunk k, received into ours */
    uint64_t fwd_sent[MAXV], fwd_recv[MAXV], bwd_sent[MAXV], bwd_recv[MAXV];
    int mslots;           /* the model's activation slots: chunk forwards in flight here */
    sym_tensor_t *dlogits; /* (mslots) the head's loss gradient awaiting its backward */
    int *set_of;          /* (V M) the activation set of (chunk, micro-batch) in flight */
    int *free_sets, nfree; /* (mslots) a stack of the sets not in flight */
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
void sym_pipe_plan(const sym_model_config_t *c, int S, int *first, int *layers) {
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

/* Rank s's stage: its chunks s, S + s, ..., (V-1) S + s of the plan. */
static sym_gpt_stage_t stage_of(const sym_pipe_t *p, int s, int slots) {
    sym_gpt_stage_t st;
    memset(&st, 0, sizeof st);
    st.chunks = p->V;
    for (int k = 0; k < p->V; k++) {
        st.first_layer[k] = p->first[k * p->S + s];
        st.layers[k] = p->layers[k * p->S + s];
    }
    st.embed = s == 0;
    st.head = s == p->S - 1;
    st.slots = slots;
    return st;
}

/* ---- the schedule ---- */

/* Forward micro-step i (fwd) or backward micro-step i of a step of M
 * micro-batches: its local chunk and micro-batch. With V > 1 Megatron's
 * interleaved order: groups of S micro-batches, chunk by chunk (the
 * backwards from the last chunk down); M is a multiple of S. */
static void step_of(int S, int V, int M, int fwd, int i, int *chunk, int *mb) {
    if (V == 1) {
        *chunk = 0;
        *mb = i;
        return;
    }
    int g = i % (S * V) / S;
    *chunk = fwd ? g : V - 1 - g;
    *mb = i / (S * V) * S + i % S;
    (void)M;
}

/* Rank s's forwards before its first backward (of M V micro-steps): 1F1B's
 * S - s - 1, or the interleaved schedule's (S - s - 1) 2 + (V - 1) S. */
static int warmup(int S, int V, int M, int s) {
    int w = V == 1 ? S - s - 1 : (S - s - 1) * 2 + (V - 1) * S;
    return w < M * V ? w : M * V;
}

/* Whether one step of M micro-batches completes with inboxes of `slots`:
 * every rank's schedule played, a receive waiting for its message, a send
 * for a free slot (the credit of message k - slots). Messages sent in a
 * step are received in it, so the next step starts from empty inboxes. */
static int fits(int S, int V, int M, int slots) {
    int n = S * V * 2, total = M * V, ok = 0;
    /* per rank: the next micro-step (forwards f, backwards b), and whether its
     * receive is done; per inbox (rank, chunk, direction): sent, received */
    int *f = calloc((size_t)S, sizeof *f), *b = calloc((size_t)S, sizeof *b);
    int *got = calloc((size_t)S, sizeof *got);
    int *sent = calloc((size_t)n, sizeof *sent), *recv = calloc((size_t)n, sizeof *recv);
    if (!f || !b || !got || !sent || !recv) goto out;
#define BOX(r, k, fw) (((r) * V + (k)) * 2 + (fw))
    for (int progress = 1; progress;) {
        progress = 0;
        for (int r = 0; r < S; r++) {
            int w = warmup(S, V, M, r);
            while (b[r] < total) {
                int fw = f[r] < total && (f[r] < w || f[r] == b[r] + w), k, mb;
                step_of(S, V, M, fw, fw ? f[r] : b[r], &k, &mb);
                int first = r == 0 && k == 0, last = r == S - 1 && k == V - 1;
                int in = fw ? !first : !last, out = fw ? !last : !first;
                if (in && !got[r]) {
                    if (sent[BOX(r, k, fw)] == recv[BOX(r, k, fw)]) break;
                    recv[BOX(r, k, fw)]++; /* copied out: its credit back */
                    got[r] = 1;
                }
                if (out) {
                    int to = fw ? (r + 1) % S : (r + S - 1) % S;
                    int tk = fw ? (r == S - 1 ? k + 1 : k) : (r == 0 ? k - 1 : k);
                    if (sent[BOX(to, tk, fw)] - recv[BOX(to, tk, fw)] >= slots) break;
                    sent[BOX(to, tk, fw)]++;
                }
                got[r] = 0;
                if (fw)
                    f[r]++;
                else
                    b[r]++;
                progress = 1;
            }
        }
    }
#undef BOX
    ok = 1;
    for (int r = 0; r < S; r++) ok &= b[r] == total;
out:
    free(f);
    free(b);
    free(got);
    free(sent);
    free(recv);
    return ok;
}

/* ---- creation ---- */

int sym_pipe_virtual_check(int n_layer, int S, int V, int M, char *why, size_t len) {
    if (V < 1 || V > SYM_GPT_MAX_CHUNKS)
        snprintf(why, len, "--virtual-stages %d: use 1 (one stage a PE) to %d", V,
                 SYM_GPT_MAX_CHUNKS);
    else if (V > 1 && S == 1)
        snprintf(why, len, "--virtual-stages %d interleaves the stages of a pipeline, and there "
                 "is none; add pp=K (K > 1) to --parallel, or drop --virtual-stages", V);
    else if ((long)S * V > n_layer)
        snprintf(why, len, "pp=%d x --virtual-stages %d makes %ld model chunks for a GPT of %d "
                 "blocks: every chunk needs at least one block; lower --virtual-stages to %d, "
                 "or use a GPT of %ld blocks or more", S, V, (long)S * V, n_layer,
                 n_layer / S > 1 ? n_layer / S : 1, (long)S * V);
    else if (V > 1 && M % S)
        snprintf(why, len, "--micro-batches %d: the interleaved schedule of --virtual-stages %d "
                 "needs the micro-batches a multiple of pp=%d; pass --micro-batches %d", M, V, S,
                 (M + S - 1) / S * S);
    else
        return 0;
    return 1;
}

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
    free(p->set_of);
    free(p->free_sets);
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
    int S = sym_mesh_size(mesh, ppd), V = pc->virtual_stages ? pc->virtual_stages : 1;
    if (S > cfg->n_layer)
        return sym__error(SYM_EINVAL, "pp=%d stages for a GPT of %d blocks: every stage needs "
                          "at least one block; use pp=%d or fewer", S, cfg->n_layer,
                          cfg->n_layer);
    if (pc->micro_batches < 1 || pc->micro_rows < 1 || pc->seq < 1 || pc->inbox_slots < 0)
        return sym__error(SYM_EINVAL, "pipeline: %d micro-batches of %d sequences of %d tokens, "
                          "%d inbox slots: each must be at least 1 (slots: 0 for the default)",
                          pc->micro_batches, pc->micro_rows, pc->seq, pc->inbox_slots);
    char why[256];
    if (sym_pipe_virtual_check(cfg->n_layer, S, V, pc->micro_batches, why, sizeof why))
        return sym__error(SYM_EINVAL, "%s", why);
    sym_pipe_t *p = calloc(1, sizeof *p);
    if (!p) return sym__error(SYM_ENOMEM, "pipeline: out of memory");
    p->cfg = *cfg;
    p->pc = *pc;
    p->S = S;
    p->V = V;
    p->s = sym_mesh_coord(mesh, ppd);
    p->pp = sym_mesh_team(mesh, ppd);
    p->dp = dpd >= 0 && (sym_mesh_size(mesh, dpd) > 1 || pc->shard) ? sym_mesh_team(mesh, dpd)
                                                                     : SHMEM_TEAM_INVALID;
    p->tied = SHMEM_TEAM_INVALID;
    p->tp_size = tpd >= 0 ? sym_mesh_size(mesh, tpd) : 1;
    p->tp = p->tp_size > 1 ? sym_mesh_team(mesh, tpd) : SHMEM_TEAM_INVALID;
    p->tp_rank = p->tp_size > 1 ? sym_mesh_coord(mesh, tpd) : 0;
    int ring = V > 1 || p->s > 0; /* a previous chunk on another rank */
    p->prev_pe = ring ? shmem_team_translate_pe(p->pp, (p->s + S - 1) % S, SHMEM_TEAM_WORLD) : -1;
    ring = V > 1 || p->s < S - 1;
    p->next_pe = ring ? shmem_team_translate_pe(p->pp, (p->s + 1) % S, SHMEM_TEAM_WORLD) : -1;
    int rc = SYM_OK, M = pc->micro_batches;
    p->slots = pc->inbox_slots ? pc->inbox_slots : S;
    while (V > 1 && !pc->inbox_slots && !fits(S, V, M, p->slots)) p->slots++;
    if (V > 1 && !fits(S, V, M, p->slots)) {
        int need = p->slots;
        while (!fits(S, V, M, need)) need++;
        rc = sym__error(SYM_EINVAL, "--inbox-slots %d: the interleaved schedule of pp=%d, "
                        "--virtual-stages %d, %d micro-batches would deadlock (a send waiting "
                        "for a credit around the ring); use --inbox-slots %d or more, or leave "
                        "it out", p->slots, S, V, M, need);
        goto fail;
    }
    /* with SP a stage passes a tp rank's shard: at most ceil(seq / tp) positions
     * of each sequence (a CPU stage's), or ceil(rows x seq / tp) rows (a device's) */
    int sp = cfg->seq_parallel && p->tp_size > 1;
    size_t seq_max = sp ? ((size_t)pc->seq + (size_t)p->tp_size - 1) / (size_t)p->tp_size
                        : (size_t)pc->seq;
    p->msg_floats = (size_t)pc->micro_rows * seq_max * (size_t)cfg->n_embd;
    /* chunk forwards in flight on this stage: the warm-up's and one more */
    int mslots = warmup(S, V, M, p->s) + 1;
    if (mslots > M * V) mslots = M * V;
    p->first = calloc((size_t)(S * V), sizeof *p->first);
    p->layers = calloc((size_t)(S * V), sizeof *p->layers);
    p->mslots = mslots;
    p->dlogits = calloc((size_t)mslots, sizeof *p->dlogits);
    p->set_of = calloc((size_t)(M * V), sizeof *p->set_of);
    p->free_sets = calloc((size_t)mslots, sizeof *p->free_sets);
    if (!p->first || !p->layers || !p->dlogits || !p->set_of || !p->free_sets) {
        rc = sym__error(SYM_ENOMEM, "pipeline: out of memory");
        goto fail;
    }
    sym_pipe_plan(cfg, S * V, p->first, p->layers);
    /* The symmetric part, in the same order and sizes on every PE. */
    size_t box = (size_t)V * (size_t)p->slots * p->msg_floats * sizeof(float);
    p->ctl = shmem_calloc((size_t)(2 * V * p->slots + 2 * V), sizeof *p->ctl);
    p->fwd_box = shmem_malloc(box);
    p->bwd_box = shmem_malloc(box);
    p->norm = shmem_calloc(2, sizeof *p->norm);
    if (!p->ctl || !p->fwd_box || !p->bwd_box || !p->norm) {
        char want[32];
        rc = sym__error(SYM_ENOMEM, "pipeline: no room on the symmetric heap for two inboxes "
                        "of %d slots for each of %d chunks (%s each); raise "
                        "SYMTRAIN_SYMMETRIC_SIZE or lower the micro-batch's size", p->slots, V,
                        sym__fmt_size(box, want, sizeof want));
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

void sym_pipe_layers(const sym_pipe_t *p, int c, int *first, int *layers) {
    *first = c >= 0 && c < p->S * p->V ? p->first[c] : 0;
    *layers = c >= 0 && c < p->S * p->V ? p->layers[c] : 0;
}
int sym_pipe_virtual(const sym_pipe_t *p) { return p->V; }

/* ---- the inboxes ---- */

enum { FWD = 1, BWD = 0 };

/* Inbox (chunk k, direction) of this PE's layout: message n's signal and slot. */
static uint64_t *signal_word(sym_pipe_t *p, int fwd, int k, uint64_t n) {
    return p->ctl + (size_t)k * 2 * (size_t)p->slots + (fwd ? 0 : p->slots) +
           n % (uint64_t)p->slots;
}
static float *slot_of(sym_pipe_t *p, int fwd, int k, uint64_t n) {
    size_t at = (size_t)k * (size_t)p->slots + n % (uint64_t)p->slots;
    return (fwd ? p->fwd_box : p->bwd_box) + at * p->msg_floats;
}
/* The sender's credits for its messages into the receiver's chunk k. */
static uint64_t *credit_word(sym_pipe_t *p, int fwd, int k) {
    return p->ctl + 2 * (size_t)p->V * (size_t)p->slots + 2 * (size_t)k + (fwd ? 0 : 1);
}

/* The local chunk of the next rank (fwd) or the previous one that local chunk
 * k sends to: the same k, or across the ring's seam (rank S-1 -> 0) the next
 * (previous) one. */
static int peer_chunk(const sym_pipe_t *p, int fwd, int k) {
    if (fwd) return p->s == p->S - 1 ? k + 1 : k;
    return p->s == 0 ? k - 1 : k;
}
/* Local chunk k holds the model's first / last chunk. */
static int first_chunk(const sym_pipe_t *p, int k) { return p->s == 0 && k == 0; }
static int last_chunk(const sym_pipe_t *p, int k) { return p->s == p->S - 1 && k == p->V - 1; }

/* The next message's number into the receiver's chunk k in a direction, once
 * its slot is free: slot n % S' still holds message n - S' until its credit
 * comes back. */
static uint64_t take_slot(sym_pipe_t *p, int fwd, int k) {
    uint64_t n = fwd ? p->fwd_sent[k]++ : p->bwd_sent[k]++, S = (uint64_t)p->slots;
    uint64_t *credit = credit_word(p, fwd, k);
    if (n >= S) {
        if (shmem_uint64_atomic_fetch(credit, shmem_my_pe()) < n + 1 - S) p->stats.credit_waits++;
        shmem_uint64_wait_until(credit, SHMEM_CMP_GE, n + 1 - S);
    }
    uint64_t ahead = n + 1 - shmem_uint64_atomic_fetch(credit, shmem_my_pe());
    if (ahead > p->stats.max_ahead) p->stats.max_ahead = ahead;
    p->stats.sent++;
    return n;
}

/* Message n into local chunk k's inbox as a device's box: chunk k's slots
 * follow the lower chunks' in its inboxes of a direction (pipeline.h). */
static int device_box(const sym_pipe_t *p, int k, uint64_t n) {
    return k * p->slots + (int)(n % (uint64_t)p->slots);
}

/* Send chunk k's output (fwd; activation set `slot`'s) or its input's
 * gradient to the next or previous chunk: n floats of src through the host,
 * or device to device (the copy complete, then the signal). */
static int send(sym_pipe_t *p, int fwd, int k, int slot, const float *src, size_t n) {
    int to = peer_chunk(p, fwd, k);
    uint64_t m = take_slot(p, fwd, to);
    int pe = fwd ? p->next_pe : p->prev_pe;
    if (!p->direct) {
        shmem_putmem_signal(slot_of(p, fwd, to, m), src, n * sizeof(float),
                            signal_word(p, fwd, to, m), m + 1, SHMEM_SIGNAL_SET, pe);
        return SYM_OK;
    }
    int rc = p->dev.put(p->dev.ctx, slot, fwd, device_box(p, to, m));
    if (rc) return rc;
    shmem_uint64_atomic_set(signal_word(p, fwd, to, m), m + 1, pe);
    return SYM_OK;
}

/* The next message into chunk k from the previous (fwd) or next chunk: its
 * slot, which stays ours until release(). */
static int receive(sym_pipe_t *p, int fwd, int k, const float **msg) {
    uint64_t n = fwd ? p->fwd_recv[k] : p->bwd_recv[k];
    uint64_t v = shmem_signal_wait_until(signal_word(p, fwd, k, n), SHMEM_CMP_GE, n + 1);
    if (v != n + 1)
        return sym__error(SYM_ECOMM, "pipeline stage %d, chunk %d: inbox slot %llu holds "
                          "message %llu where %llu was due: the %s stage overran its credits",
                          p->s, k, (unsigned long long)(n % (uint64_t)p->slots),
                          (unsigned long long)(v - 1), (unsigned long long)n,
                          fwd ? "previous" : "next");
    *msg = slot_of(p, fwd, k, n);
    return SYM_OK;
}

/* Chunk k's slot is copied out: a credit back to its sender. */
static void release(sym_pipe_t *p, int fwd, int k) {
    if (fwd)
        p->fwd_recv[k]++;
    else
        p->bwd_recv[k]++;
    shmem_uint64_atomic_add(credit_word(p, fwd, k), 1, fwd ? p->prev_pe : p->next_pe);
}

/* ---- one step ---- */

/* The floats a stage's edge passes for a micro-batch of `rows` sequences
 * (an activation or its gradient): (rows x seq, C), or with sequence
 * parallelism this tp rank's shard, the one its partners on the next and
 * previous stage (the same tp rank) hold: a CPU stage's positions
 * sym_shard_range(seq, tp, rank) of each sequence, a device's block of the
 * rows x seq rows (pipeline.h). */
static size_t edge_floats(const sym_pipe_t *p, int rows) {
    size_t N = (size_t)rows * (size_t)p->pc.seq, C = (size_t)p->cfg.n_embd;
    size_t tp = (size_t)p->tp_size, r = (size_t)p->tp_rank;
    if (!p->cfg.seq_parallel || tp < 2) return N * C;
    if (p->dev.forward) { /* rows [r R, r R + n) of N, R = ceil(N / tp) */
        size_t R = (N + tp - 1) / tp, r0 = r * R;
        return (r0 >= N ? 0 : N - r0 < R ? N - r0 : R) * C;
    }
    int64_t t0, tl;
    sym_shard_range(p->pc.seq, p->tp_size, p->tp_rank, &t0, &tl);
    return (size_t)rows * (size_t)tl * C;
}

/* Forward of one micro-batch (rows sequences; tok on the first chunk, lab on
 * the last) through local chunk k in activation slot `slot`: receive,
 * compute (the model, or the device: its output in stage_buf), send on; the
 * last chunk's loss (and, training, its gradient in place of the logits). f:
 * the pass (training, and the dropout masks' step and first row). */
static int forward(sym_pipe_t *p, int k, int slot, int rows, sym_forward_t f, const int32_t *tok,
                   const int32_t *lab, float scale, double *lsum, int64_t *correct) {
    sym_model_t *m = p->model;
    int rc, first = first_chunk(p, k), last = last_chunk(p, k);
    const float *x = NULL, *out = NULL;
    size_t n = 0; /* floats of the output sent on */
    double l = 0;
    if (!first && (rc = receive(p, FWD, k, &x))) return rc;
    if (p->dev.forward) {
        int box = p->direct && !first ? device_box(p, k, p->fwd_recv[k]) : -1;
        rc = p->dev.forward(p->dev.ctx, slot, k, rows, &f, first ? tok : NULL, last ? lab : NULL,
                            box < 0 ? x : NULL, box, scale,
                            last || p->direct ? NULL : p->stage_buf, &l, correct);
        out = p->stage_buf;
        n = edge_floats(p, rows);
    } else {
        sym_model_use_chunk(m, k);
        sym_model_use_slot(m, slot);
        sym_input_t in = {rows, p->pc.seq, x, first ? tok : NULL};
        sym_tensor_t y;
        if (!(rc = sym_model_forward(m, &in, &f, &y)) && last) {
            l = sym_model_xent(m, &y, lab, scale, f.training ? &y : NULL, correct);
            p->dlogits[slot] = y;
        } else if (!rc) {
            out = sym_tensor_f32(&y);
            n = (size_t)y.shape[0] * (size_t)y.shape[1];
        }
    }
    if (!first) release(p, FWD, k);
    if (rc) return rc;
    if (!last) return send(p, FWD, k, slot, out, n);
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

/* Backward through local chunk k of the micro-batch in `slot` (rows
 * sequences): the model's, whose last one for the chunk (`last`) starts the
 * dp average of each gradient bucket as it finishes (the chunks' last ones
 * come from the highest chunk down, so the buckets finish in order), or the
 * device's (`first`: its gradients start from zero). */
static int backward(sym_pipe_t *p, int k, int slot, int rows, int first, int last) {
    sym_model_t *m = p->model;
    size_t n = edge_floats(p, rows), C = (size_t)p->cfg.n_embd; /* the gradient's (n / C, C) */
    const float *g = NULL;
    int rc, head = last_chunk(p, k), embed = first_chunk(p, k);
    if (!head && (rc = receive(p, BWD, k, &g))) return rc;
    if (p->dev.backward) {
        int box = p->direct && g ? device_box(p, k, p->bwd_recv[k]) : -1;
        rc = p->dev.backward(p->dev.ctx, slot, k, box < 0 ? g : NULL, box,
                             !embed && !p->direct ? p->stage_buf : NULL, first);
    } else {
        sym_model_use_chunk(m, k);
        sym_model_use_slot(m, slot);
        sym_tensor_t dy = g ? sym_tensor_2d((float *)g, (int64_t)(n / C), (int64_t)C)
                            : p->dlogits[slot];
        sym_grad_ready_fn ready = p->tied != SHMEM_TEAM_INVALID ? ready_but_wte : sym_ddp_ready;
        rc = sym_model_backward(m, &dy, last && p->ddp ? ready : NULL, p->ddp);
    }
    if (!head) release(p, BWD, k);
    if (rc) return rc;
    if (!embed)
        return send(p, BWD, k, slot,
                    p->dev.backward ? p->stage_buf : sym_model_input_grad(m), n);
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
    int M = p->pc.micro_batches, T = p->pc.seq, S = p->S, V = p->V, rc = SYM_OK;
    *loss_sum = 0;
    if (rows < 0 || rows > M * p->pc.micro_rows)
        return sym__error(SYM_EINVAL, "pipeline step: %d sequences, more than %d micro-batches "
                          "of %d", rows, M, p->pc.micro_rows);
    if (rows < M) /* a short last batch: no empty micro-batches (interleaved: a multiple of S) */
        M = V == 1 ? rows : rows - rows % S;
    if (M < 1)
        return sym__error(SYM_EINVAL, "pipeline step: %d sequences cannot fill a multiple of "
                          "pp=%d micro-batches for the interleaved schedule; give every "
                          "replica at least %d sequences a step (raise --batch)", rows, S, S);
    int total = M * V, warm = warmup(S, V, M, p->s), f = 0, b = 0, r0, n, k, i;
    int dev = p->dev.forward != NULL; /* the device zeroes, sums and averages its own */
    if (!dev && p->pc.shard)
        sym_ddp_zero_grads(p->ddp); /* ZeRO-2: the pages handed back are zero already */
    else if (!dev)
        sym_model_zero_grads(p->model);
    if (p->ddp && !dev) sym_ddp_begin(p->ddp);
    p->nfree = p->mslots;
    for (int j = 0; j < p->mslots; j++) p->free_sets[j] = p->mslots - 1 - j; /* 0 on top */
    while (!rc && b < total) {
        /* 1F1B: the warm-up forwards, then a forward before each backward while any are left */
        if (f < total && (f < warm || f == b + warm)) {
            step_of(S, V, M, 1, f, &k, &i);
            micro(rows, M, i, &r0, &n);
            size_t at = (size_t)r0 * (size_t)T;
            sym_forward_t pass = {1, step, row0 + r0};
            int set = p->set_of[k * M + i] = p->free_sets[--p->nfree];
            rc = forward(p, k, set, n, pass, tokens + at, labels + at, grad_scale, loss_sum,
                         NULL);
            f++;
        } else {
            step_of(S, V, M, 0, b, &k, &i);
            micro(rows, M, i, &r0, &n);
            int set = p->set_of[k * M + i];
            rc = backward(p, k, set, n, b == 0, i == M - 1);
            p->free_sets[p->nfree++] = set;
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
        size_t at = (size_t)r0 * (size_t)T;
        sym_forward_t pass = {0, 0, 0};
        for (int k = 0; !rc && k < p->V; k++) { /* through this rank's chunks in turn */
            int64_t c = 0;
            rc = forward(p, k, 0, n, pass, tokens + at, labels + at, 1.0f, loss_sum, &c);
            *correct += c;
        }
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
