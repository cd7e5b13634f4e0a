/*
 * plan.c — the layout planner (symtrain/plan.h): memory per PE and step time
 * of each dp x tp x pp layout of a GPT, with micro-batches, ZeRO stage and
 * recompute; which fit; the fastest.
 *
 * Memory follows what our code allocates, buffer by buffer (keep the two in
 * step: tests/train_plan_memory.c compares them with the training loop's
 * report):
 *  - CPU (models/gpt.c, model.c, optim/optim.c): parameters and gradients
 *    are one buddy block each of the "parameters" pool (a power of two; the
 *    gradients carry SYM_GRAD_CTRL control floats), AdamW's two moments (SGD's
 *    momentum) are exact fp32 arrays, the activations are gpt_init's buffers,
 *    each a power-of-two block, sized for the batch rows x the model's
 *    context. Tensor parallelism splits the parameters of the column- and
 *    row-parallel layers and the head-local activation buffers (qkv, the
 *    attention matrix, its output, the MLP's hidden layer and their
 *    gradients), not the embeddings, LayerNorms and LM head.
 *    Sequence parallelism (the request's model.seq_parallel, tp > 1) keeps
 *    B x ceil(T / tp) rows of the LayerNorm, dropout and residual buffers and
 *    adds two gathered (N,C) buffers; dropout (model.dropout) its masks.
 *  - GPU (models/gpt_cuda.cu, its one region): fp32 master weights, their
 *    bf16 compute copy, fp32 gradients and moments (18 bytes a parameter),
 *    bf16 activations (no T x T matrix: the attention keeps its row
 *    log-sum-exp), 256-byte aligned. TP splits the head-local buffers (qkv,
 *    attention output, MLP hidden) as Megatron does, the rest stays whole;
 *    sequence parallelism keeps ceil(N / tp) rows of the LayerNorm and
 *    residual buffers (blocks of the N rows) and adds two buffers.
 *  - Pipeline stages: layers cut as pipeline.c cuts them (sym_pipe_plan:
 *    balanced by FLOPs, the LM head's on the last), the embeddings on the
 *    first stage, ln_f and the LM head on the last (which keeps a copy of
 *    the tied wte); 1F1B keeps up to pp micro-batches in flight on the
 *    first stage (min(m, pp - s) on stage s),
 *    each with its blocks' buffers, its input and on the last stage the
 *    head's (gpt_init's slots); the backward's scratch is one set a stage.
 *    With V virtual stages (interleaved, pipeline.c) the layers are cut into
 *    pp V chunks the same way, stage s holding chunks s, pp + s, ...; it
 *    keeps min(m V, (pp - s - 1) 2 + (V - 1) pp + 1) chunk forwards in
 *    flight, each set sized for the stage's largest chunk (and on the last
 *    stage each with the head's buffers).
 *    The heaviest PE is reported.
 *  - ZeRO-1 shards the optimizer state over dp, ZeRO-2 the gradients too. On
 *    the CPU (parallel/zero.c) each PE also keeps its gradient shard beside
 *    the model's whole gradient block, which ZeRO-2 keeps allocated but
 *    partly hands back to the OS (pages, not allocator bytes). On the GPU
 *    ZeRO-2 keeps the shard, two block-sized slots the backward's blocks
 *    rotate through and the edges' (embeddings, ln_f) gradients whole.
 *  - Recompute (not in our code yet) keeps each block's output only, plus
 *    one block's buffers for the recomputed forward.
 *
 * Time, nothing overlapped but the GPU's gradient average (on the CPU the
 * bucketed all-reduce overlaps the backward only where a core is free, which
 * 4 PEs on 2 cores do not have):
 *   compute  the heaviest stage's FLOPs (6 x its parameters + 6 x layers x
 *            context x width per token, x 4/3 with recompute) over the rate;
 *            under TP the work split over tp is the blocks', the embeddings
 *            and LM head are computed whole by each PE unless vocab_parallel,
 *            and the blocks' LayerNorms and residual adds stay whole: 24
 *            passes of a micro-batch's activation a layer at the memory rate
 *   bubble   compute x (pp - 1) / m, i.e. a (pp-1)/(m+pp-1) share of the pipe; with
 *            V virtual stages (pp - 1) / (V m) (Megatron's interleaved schedule)
 *   tp       4 all-reduces a layer a micro-batch (2 forward, 2 backward; 6
 *            with recompute) of rows x T x C activations
 *   pp       2 transfers a micro-batch and chunk (activation forward, gradient back)
 *   dp       the fp32 gradients' all-reduce (ZeRO: reduce-scatter +
 *            all-gather, the same bytes), one latency a bucket; on the GPU
 *            (gpt_cuda.cu averages each bucket while the backward goes on)
 *            only what outlasts the last micro-batch's backward (2/3 of its
 *            compute), plus the embeddings' piece that goes after it (and
 *            ZeRO's all-gather after the optimizer)
 *   optim    AdamW's pass over its shard: 28 bytes a parameter (30 on the GPU)
 *   collective time = latency + bytes x 2(n-1)/n / busbw (all-reduce),
 *   (n-1)/n for reduce-scatter or all-gather, bytes / p2p_bw point to point.
 * Placement: tp innermost, then pp, then dp (Megatron's order): a group
 * crosses nodes when its span exceeds pes_per_node, and then runs at the
 * inter-node link's figures.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <symtrain/nn.h>
#include <symtrain/optim.h>
#include <symtrain/pipeline.h>
#include <symtrain/plan.h>
#include <symtrain/tensor.h>

#include "core/device.h"
#include "internal.h"
#include "models/model.h"
#include "util/util.h"

/* ---- figures ---- */

/* Recorded on the lent H200 (docs/performance.md, 2026-12-01): our d12 step,
 * batch 16 x 1024, at 441,836 tokens/s; FLOPs a token 6 x 124,475,904 + 6 x
 * 12 x 1024 x 768 = 803,478,528: 355.0 TFLOP/s for the whole step (GEMMs,
 * attention, LayerNorms, loss). The GEMMs' floor rate, 790 TFLOP/s, is not
 * used: our step runs at 45% of it. */
#define H200_TOKENS_S 441836.0
#define H200_FLOP_TOKEN 803478528.0
#define H200_HBM 4.3e12 /* the classifier floor's bandwidth in docs/performance.md */

static const sym_plan_link_t links[] = {
    {"nvlink", 362.0e9, 285.6e9, 3.9e-6,
     "recorded: our GPU all-reduce on 2 H200s over NVLink, 362 GB/s busbw at 256 MiB, 3.9 us at "
     "8 B; NVSHMEM put 286 GB/s (docs/performance.md)"},
    {"pcie", 25.0e9, 25.0e9, 10.0e-6,
     "assumed: PCIe Gen5 x16 through the host, 25 GB/s, 10 us (not measured here)"},
    {"ib", 50.0e9, 50.0e9, 10.0e-6,
     "assumed: one 400 Gb/s InfiniBand NIC per GPU, 50 GB/s, 10 us (not measured here)"},
    {"tcp", 3.0e9, 2.8e9, 30.0e-6,
     "recorded: our all-reduce over TCP between network namespaces, about 3.0 GB/s busbw; puts "
     "2.8 GB/s (docs/performance.md); latency assumed 30 us"},
    {"shm", 12.3e9, 12.3e9, 5.0e-6,
     "recorded: our shared-memory all-reduce on 2 PEs of the 2-core VM, 12.3 GB/s busbw from 8 "
     "MiB (docs/performance.md); latency assumed 5 us"},
};

int sym_plan_link(const char *name, sym_plan_link_t *out) {
    for (size_t i = 0; i < sizeof links / sizeof *links; i++)
        if (!strcmp(name, links[i].name)) {
            *out = links[i];
            return SYM_OK;
        }
    return sym__error(SYM_EINVAL, "link '%s': use nvlink, pcie, ib, tcp or shm", name);
}

void sym_plan_defaults(sym_plan_request_t *r, sym_plan_device_t device) {
    memset(r, 0, sizeof *r);
    r->vocab_parallel = 1; /* as our TP splits wte (sym_model_create_tp) */
    r->device = device;
    r->pes = 1;
    r->batch = 16;
    r->optimizer = SYM_OPT_ADAMW;
    r->bucket_bytes = 25u << 20;
    if (device == SYM_PLAN_GPU) {
        r->flops = H200_TOKENS_S * H200_FLOP_TOKEN;
        r->flops_source = "recorded: our gpt:d12 step on one H200, 441,836 tokens/s x 803.5 MFLOP "
                          "a token = 355 TFLOP/s (docs/performance.md); the 790 TFLOP/s GEMM floor "
                          "is not reached by a whole step";
        r->mem_bw = H200_HBM;
        r->mem_bw_source = "recorded: 4.3 TB/s H200 memory bandwidth (docs/performance.md)";
        r->pes_per_node = 8;
        sym_plan_link("nvlink", &r->intra);
        sym_plan_link("ib", &r->inter);
    } else {
        /* sym_plan_measure_cpu replaces these with this machine's figures */
        r->flops = 20e9;
        r->flops_source = "assumed: 20 GFLOP/s a PE (call sym_plan_measure_cpu to measure)";
        r->mem_bw = 10e9;
        r->mem_bw_source = "assumed: 10 GB/s a PE";
        sym_plan_link("shm", &r->intra);
        sym_plan_link("tcp", &r->inter);
    }
}

static double seconds_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* One training pass (forward, loss, backward) of a one-layer GPT of the
 * model's width, heads and vocabulary (at most 4096) on one sequence of up to
 * 256 tokens, on `threads` BLAS threads: the rate our CPU code reaches for
 * this model's shapes, FLOP/s (0 when it cannot be built). */
static double pass_rate(const sym_model_config_t *full, int threads, int *tokens_out) {
    int V = full->vocab < 4096 ? full->vocab : 4096, T = full->max_seq < 256 ? full->max_seq : 256;
    /* about 3 GFLOP at most */
    double per_token = 6.0 * (12.0 * full->n_embd * full->n_embd + (double)V * full->n_embd);
    while (T > 16 && per_token * T > 3e9) T /= 2;
    char spec[128];
    snprintf(spec, sizeof spec, "gpt:L=1,C=%d,H=%d,V=%d,T=%d", full->n_embd, full->n_head, V, T);
    sym_model_config_t cfg;
    memset(&cfg, 0, sizeof cfg);
    sym_model_t *m = NULL;
    int32_t *tok = malloc((size_t)(T + 1) * sizeof *tok);
    if (!tok || sym_model_parse(spec, &cfg) || sym_model_create(&cfg, 1, 0, &m)) {
        free(tok);
        return 0;
    }
    for (int t = 0; t <= T; t++) tok[t] = (int32_t)((t * 2654435761u) % (unsigned)V);
    sym_blas_set_threads(threads);
    double best = 1e30;
    for (int rep = 0; rep < 3; rep++) { /* the first one warms up */
        double t0 = seconds_now();
        sym_input_t in = {1, T, NULL, tok};
        sym_forward_t f = {1, (uint64_t)rep, 0};
        sym_tensor_t logits;
        if (sym_model_forward(m, &in, &f, &logits)) break;
        sym_softmax_xent(&logits, tok + 1, V, 1.0f / T, &logits, NULL);
        sym_model_zero_grads(m);
        if (sym_model_backward(m, &logits, NULL, NULL)) break;
        double dt = seconds_now() - t0;
        if (rep && dt < best) best = dt;
    }
    double flops = sym_model_flops_per_token(m, T) * T;
    sym_model_destroy(m);
    free(tok);
    *tokens_out = T;
    return best < 1e30 ? flops / best : 0;
}

void sym_plan_measure_cpu(sym_plan_request_t *r, int cores) {
    static char fsrc[256], bsrc[200];
    if (cores < 1) cores = 1;
    int pes = r->pes > 0 ? r->pes : 1, threads = pes <= cores ? cores / pes : 1, T = 0;
    double share = pes <= cores ? 1.0 : (double)cores / pes; /* of a core, time-shared */
    double rate = pass_rate(&r->model, threads, &T);
    if (rate > 0) {
        r->flops = rate * share;
        snprintf(fsrc, sizeof fsrc,
                 "measured now: a training pass of a 1-layer GPT of this width (C=%d, %d "
                 "tokens) on %d thread%s, %.1f GFLOP/s, x %.2f for %d PEs on %d cores",
                 r->model.n_embd, T, threads, threads == 1 ? "" : "s", rate / 1e9, share, pes,
                 cores);
        r->flops_source = fsrc;
    }
    /* memory: a 64 MiB copy (read + write) */
    size_t bytes = 64u << 20;
    char *s = malloc(bytes), *d = malloc(bytes);
    double bw = 0;
    if (s && d) {
        memset(s, 1, bytes);
        memset(d, 0, bytes);
        for (int rep = 0; rep < 3; rep++) {
            double t0 = seconds_now();
            memcpy(d, s, bytes);
            double rate = 2.0 * (double)bytes / (seconds_now() - t0);
            if (rate > bw) bw = rate;
        }
    }
    free(s);
    free(d);
    double bw_share = pes <= cores ? 1.0 : (double)cores / pes;
    if (bw > 0) {
        r->mem_bw = bw * bw_share;
        snprintf(bsrc, sizeof bsrc, "measured now: a 64 MiB copy %.1f GB/s, x %.2f a PE", bw / 1e9,
                 bw_share);
        r->mem_bw_source = bsrc;
    }
}

/* ---- the model's sizes ---- */

static size_t up256(size_t x) { return (x + 255) & ~(size_t)255; }

/* One block's parameters on a PE of tp (the biases of the row-parallel layers whole). */
static size_t block_params(size_t C, int tp) {
    size_t Cl = C / (size_t)tp;
    return 2 * C + (3 * Cl * C + 3 * Cl) + (C * Cl + C) + 2 * C + (4 * Cl * C + 4 * Cl) +
           (C * 4 * Cl + C);
}

/* The wte parameters the heaviest PE holds: Vp x C whole, or with
 * vocab_parallel over tp > 1 the largest block of the vocabulary's rows
 * (sym_shard_range over the unpadded vocabulary: the first PE's, rounded up),
 * as sym_model_create_tp splits it. */
static size_t wte_params(const sym_model_config_t *m, int tp, int vp) {
    size_t rows = vp && tp > 1 ? ((size_t)m->vocab + (size_t)tp - 1) / (size_t)tp
                               : (size_t)m->padded_vocab;
    return rows * (size_t)m->n_embd;
}

size_t sym_plan_params(const sym_model_config_t *m, int tp, int vocab_parallel) {
    size_t C = (size_t)m->n_embd;
    return wte_params(m, tp, vocab_parallel) + (size_t)m->max_seq * C +
           (size_t)m->n_layer * block_params(C, tp) + 2 * C;
}

typedef struct {
    int layers, first, last, inflight;
    int slot_layers; /* the blocks an activation set holds: the largest chunk's */
} stage_t;

/* Stage s of pp with V chunks a stage: its layers (the model's blocks cut
 * into pp V chunks as pipeline.c cuts them, sym_pipe_plan; chunk c on stage
 * c % pp) and the forwards in flight (micro-batches, or with V > 1 chunk
 * forwards). */
static stage_t stage_of(const sym_model_config_t *m, int pp, int V, int mb, int s) {
    stage_t st;
    int n = pp * V, first[SYM_GPT_MAX_LAYERS], layers[SYM_GPT_MAX_LAYERS];
    sym_pipe_plan(m, n, first, layers);
    st.layers = st.slot_layers = 0;
    for (int c = s; c < n; c += pp) {
        int k = layers[c];
        st.layers += k;
        if (k > st.slot_layers) st.slot_layers = k;
    }
    st.first = s == 0;
    st.last = s == pp - 1;
    if (V == 1) {
        st.inflight = pp - s < mb ? pp - s : mb;
    } else {
        st.inflight = (pp - s - 1) * 2 + (V - 1) * pp + 1;
        if (st.inflight > mb * V) st.inflight = mb * V;
    }
    if (st.inflight < 1) st.inflight = 1;
    return st;
}

static size_t stage_params(const sym_model_config_t *m, const stage_t *st, int tp, int vp) {
    size_t C = (size_t)m->n_embd, p = (size_t)st->layers * block_params(C, tp);
    if (st->first) p += wte_params(m, tp, vp) + (size_t)m->max_seq * C;
    if (st->last) p += 2 * C + (st->first ? 0 : wte_params(m, tp, vp));
    return p;
}

/* Activation bytes of a stage for micro-batches of `rows` sequences: what
 * each micro-batch in flight keeps from its forward for its backward
 * (*slot), and the buffers one backward at a time reuses (returned). */
static size_t stage_acts(const sym_plan_request_t *r, const stage_t *st, int rows, int tp,
                         int recompute, size_t *slot) {
    const sym_model_config_t *m = &r->model;
    size_t B = (size_t)rows, T = (size_t)m->max_seq, C = (size_t)m->n_embd, N = B * T;
    size_t NH = (size_t)m->n_head, Vp = (size_t)m->padded_vocab, L = (size_t)st->slot_layers;
    if (r->device == SYM_PLAN_CPU) {
        /* gpt_init: per slot each block's ln1, mean, rstd, qkv, att, atty, res2, ln2,
         * mean, rstd, fch, fch_gelu, res3 (and two dropout masks), then encoded (its
         * mask) and on the last stage lnf, mean, rstd, logits; shared scratch, dres,
         * dln, datty, dqkv, dfch, datt (and with sequence parallelism full, dfull,
         * lngrad; dsh with SP or dropout). Each a power-of-two block of floats.
         * Sequence parallelism keeps R = B x ceil(T / tp) rows of the LayerNorm /
         * dropout / residual buffers; TP splits the head-local ones. */
        int sp = tp > 1 && m->seq_parallel, drop = m->dropout > 0.0f;
        size_t R = sp ? B * ((T + (size_t)tp - 1) / (size_t)tp) : N;
        size_t Cl = C / (size_t)tp, NHl = NH / (size_t)tp; /* TP: this PE's heads */
        const size_t blk[] = {R * C, R, R, N * 3 * Cl, B * NHl * T * T, N * Cl, R * C,
                              R * C, R, R, N * 4 * Cl, N * 4 * Cl, R * C, R * C, R * C};
        size_t one = 0, shared = 0;
        for (size_t i = 0; i < (drop ? 15u : 13u); i++) one += sym__pow2_at_least(blk[i] * 4);
        *slot = recompute ? L * sym__pow2_at_least(N * C * 4) : L * one;
        if (recompute) shared += one; /* the recomputed block's buffers */
        const size_t per[] = {R * C, R * C, N * C, R, R, N * Vp}; /* encoded, emask, head */
        for (size_t i = 0; i < (st->last ? 6u : 2u); i++)
            if (i != 1 || drop) *slot += sym__pow2_at_least(per[i] * 4);
        const size_t oth[] = {N * C, N * C, N * C, N * Cl, N * 3 * Cl, N * 4 * Cl, T * T,
                              N * C, N * C, 2 * C, R * C};
        for (size_t i = 0; i < sizeof oth / sizeof *oth; i++)
            if (i < 7 || (i < 10 && sp) || (i == 10 && (sp || drop)))
                shared += sym__pow2_at_least(oth[i] * 4);
        return shared;
    }
    /* gpt_cuda.cu carve(): bf16 activations, fp32 row statistics; for a
     * pipeline the blocks, the input and the head's buffers kept a micro-batch.
     * Sequence parallelism (tp > 1; in a pipeline's stages too) keeps Rs =
     * ceil(N / tp) rows of ln1, res2, ln2, res3, their statistics, encoded and
     * dres; proj, dln and the head's lnf take the gathered tp Rs rows, and it
     * adds a gathered (full) and a shard (dsh) buffer */
    size_t t = (size_t)tp, Cl = C / t, NHl = NH / t;
    int sp = tp > 1 && m->seq_parallel;
    size_t Rs = sp ? (N + t - 1) / t : N, Ng = sp ? Rs * t : N;
    size_t one = 4 * up256(Rs * C * 2)                       /* ln1, res2, ln2, res3 */
                 + up256(N * 3 * Cl * 2) + up256(N * Cl * 2) /* qkv, atty */
                 + 2 * up256(N * 4 * Cl * 2)                 /* fch, fch_gelu */
                 + 4 * up256(Rs * 4) + up256(N * NHl * 4);   /* means, rstds, lse */
    size_t Vl = r->vocab_parallel ? Vp / t : Vp;
    *slot = (recompute ? L * up256(Rs * C * 2) : L * one) + up256(Rs * C * 2) /* encoded */
            + (st->last ? up256(Ng * C * 2) + up256(N * Vl * 2) + 2 * up256(Rs * 4) : 0);
    return (recompute ? one : 0) + 2 * up256(Ng * C * 2) + up256(Rs * C * 2) +
           up256(N * C * 2) + (st->last ? 0 : up256(N * C * 2)) /* proj dln dres datty, lnf
                                                                  * where it is not kept */
           + (sp ? up256(Ng * C * 2) + up256(Rs * C * 2) : 0)     /* full, dsh */
           + up256(N * 3 * Cl * 2) + up256(N * 4 * Cl * 2)        /* dqkv, dfch */
           + (st->last ? 0 : 2 * up256(N * 4)) + 2 * up256(N * 4) /* lnf stats, losses, hits */
           + up256(N * NHl * 4)                                   /* att */
           + 3 * up256(N * 4) + 2 * up256(N * 4);                 /* encoder scratch, tok, tgt */
}

/* ---- what our code does today ---- */

enum { F_TP = 1, F_PP = 2, F_ZERO = 4, F_ACCUM = 8, F_RECOMPUTE = 16, F_ZERO2 = 32,
       F_PP_ZERO = 64, F_PP_SP = 128, F_VIRTUAL = 256 };

/* Features each device's training does (tp, pp, ZeRO and accumulation on
 * the CPU, in any combination). The GPU (--device gpu) trains tp, pp,
 * accumulation, ZeRO-1 and 2 and sequence parallelism (inside pipelines too;
 * with --tp-overlap), but not the planner's whole-block recompute: the GPU's
 * --recompute gelu,ln keeps each block's other buffers. Both train virtual pipeline
 * stages (a GPU stage's activation sets sized for its largest chunk, as
 * stage_of counts them). */
static const unsigned have[2] = {F_TP | F_PP | F_ZERO | F_ACCUM | F_ZERO2 | F_PP_ZERO | F_PP_SP |
                                     F_VIRTUAL,
                                 F_TP | F_PP | F_ZERO | F_ACCUM | F_ZERO2 | F_PP_ZERO | F_PP_SP |
                                     F_VIRTUAL};

static void say_needs(const sym_plan_request_t *r, unsigned used, char *buf, size_t len) {
    static const char *const name[] = {"tp",        "pp",     "zero",         "micro-batches",
                                       "recompute", "zero=2", "zero with pp", "sp with pp",
                                       "virtual stages"};
    unsigned missing = used & ~have[r->device];
    buf[0] = '\0';
    for (int i = 0; i < 9; i++)
        if (missing & (1u << i)) {
            size_t at = strlen(buf);
            snprintf(buf + at, len - at, "%s%s", at ? "," : "", name[i]);
        }
    if (buf[0]) {
        size_t at = strlen(buf);
        snprintf(buf + at, len - at, " (not on the %s yet)", r->device ? "GPU" : "CPU");
    }
}

/* ---- evaluation ---- */

static double allreduce_t(const sym_plan_link_t *k, int n, double bytes) {
    if (n <= 1 || bytes <= 0) return 0;
    return k->latency + bytes * 2.0 * (n - 1) / n / k->busbw;
}

int sym_plan_evaluate(const sym_plan_request_t *r, const sym_plan_layout_t *l,
                      sym_plan_result_t *o) {
    memset(o, 0, sizeof *o);
    o->layout = *l;
    const sym_model_config_t *m = &r->model;
    if (m->kind != SYM_MODEL_GPT)
        return sym__error(SYM_EINVAL, "the planner plans a GPT (--model gpt:...), not %s", m->spec);
    if (l->dp < 1 || l->tp < 1 || l->pp < 1 || l->micro < 1)
        return sym__error(SYM_EINVAL, "dp, tp, pp and the micro-batches are at least 1");
    if ((long long)l->dp * l->tp * l->pp != r->pes)
        return sym__error(SYM_EINVAL, "dp=%d x tp=%d x pp=%d is %lld PEs, not the %d asked",
                          l->dp, l->tp, l->pp, (long long)l->dp * l->tp * l->pp, r->pes);
    if (m->n_head % l->tp || m->n_embd % l->tp)
        return sym__error(SYM_EINVAL, "tp=%d must divide the heads (%d) and the width (%d)", l->tp,
                          m->n_head, m->n_embd);
    if (l->pp > m->n_layer)
        return sym__error(SYM_EINVAL, "pp=%d is more stages than the %d layers", l->pp,
                          m->n_layer);
    if (l->zero < 0 || l->zero > 2) return sym__error(SYM_EINVAL, "ZeRO stage is 0, 1 or 2");
    int V = l->virtual_stages > 1 ? l->virtual_stages : 1;
    char why[256];
    if (V > 1 && sym_pipe_virtual_check(m->n_layer, l->pp, V, l->micro, why, sizeof why))
        return sym__error(SYM_EINVAL, "%s", why);
    int local = (r->batch + l->dp - 1) / l->dp; /* sequences of a replica (the loader's split) */
    if (r->batch < l->dp)
        return sym__error(SYM_EINVAL, "--batch %d is smaller than dp=%d", r->batch, l->dp);
    if (local % l->micro)
        return sym__error(SYM_EINVAL, "%d micro-batches do not divide the replica's %d sequences",
                          l->micro, local);
    int rows = o->rows = local / l->micro;
    int ppn = r->pes_per_node > 0 ? r->pes_per_node : r->pes;
    o->tp_inter = l->tp > ppn;
    o->pp_inter = l->pp > 1 && l->tp * l->pp > ppn;
    o->dp_inter = l->dp > 1 && r->pes > ppn;
    const sym_plan_link_t *ktp = o->tp_inter ? &r->inter : &r->intra;
    const sym_plan_link_t *kpp = o->pp_inter ? &r->inter : &r->intra;
    const sym_plan_link_t *kdp = o->dp_inter ? &r->inter : &r->intra;
    int gpu = r->device == SYM_PLAN_GPU, adam = r->optimizer == SYM_OPT_ADAMW;
    int vp = r->vocab_parallel;

    /* memory: the heaviest stage */
    for (int s = 0; s < l->pp; s++) {
        stage_t st = stage_of(m, l->pp, V, l->micro, s);
        if (l->pp == 1) st.inflight = 1; /* one micro-batch's buffers, reused */
        size_t P = stage_params(m, &st, l->tp, vp);
        size_t Pz1 = l->zero >= 1 ? (P + (size_t)l->dp - 1) / (size_t)l->dp : P;
        size_t Pz2 = l->zero >= 2 ? Pz1 : P;
        sym_plan_mem_t mem;
        if (gpu && l->zero == 2 && l->dp > 1) {
            /* ZeRO-2 (gpt_cuda.cu's units): each block and each edge (the
             * embeddings, the last stage's wte copy, ln_f) split in blocks of
             * c = ceil(x / dp) rounded to 64 floats; the shard of all of them,
             * two block-sized slots, the edges' arrays whole */
            size_t C = (size_t)m->n_embd, n = (size_t)l->dp, wte = wte_params(m, l->tp, vp);
            size_t pb = sym_gpu_zero_block(block_params(C, l->tp), n), S = (size_t)st.layers * pb;
            size_t edges[3] = {st.first ? wte + (size_t)m->max_seq * C : 0,
                               st.last && !st.first ? wte : 0, st.last ? 2 * C : 0}, e = 0;
            for (int k = 0; k < 3; k++) {
                S += sym_gpu_zero_block(edges[k], n);
                e += n * sym_gpu_zero_block(edges[k], n);
            }
            mem.params = up256(P * 4) + up256(P * 2);
            mem.grads = up256(S * 4) + 2 * up256(n * pb * 4) + up256(e * 4);
            mem.optim = 2 * up256(S * 4);
        } else if (gpu) {
            mem.params = up256(P * 4) + up256(P * 2);
            mem.grads = up256(Pz2 * 4);
            mem.optim = 2 * up256(Pz1 * 4);
        } else {
            mem.params = sym__pow2_at_least(P * 4);
            /* ZeRO (zero.c): the model's whole gradient block stays allocated
             * (ZeRO-2 hands its pages back to the OS as buckets are reduced,
             * which the allocators do not count), plus the shard the
             * reduce-scatters fill */
            mem.grads = sym__pow2_at_least((P + SYM_GRAD_CTRL) * 4) + (l->zero ? Pz1 * 4 : 0);
            mem.optim = (size_t)(adam ? 2 : 1) * Pz1 * 4;
        }
        size_t slot, shared = stage_acts(r, &st, rows, l->tp, l->recompute, &slot);
        mem.acts = (size_t)st.inflight * slot + shared;
        mem.total = mem.params + mem.grads + mem.optim + mem.acts;
        if (mem.total > o->mem.total) {
            o->mem = mem;
            o->params_local = P;
        }
    }
    o->fits = !r->device_mem || o->mem.total <= r->device_mem;

    /* compute: the heaviest stage's FLOPs for the replica's tokens, over the rate */
    double T = r->seq ? r->seq : m->max_seq, C = m->n_embd, tokens = (double)local * T;
    double worst = 0;
    for (int s = 0; s < l->pp; s++) {
        stage_t st = stage_of(m, l->pp, V, l->micro, s);
        double f = st.layers * (6.0 * (double)block_params((size_t)C, 1) + 6.0 * T * C) / l->tp;
        double head = 6.0 * ((double)m->padded_vocab * C + (double)m->max_seq * C);
        if (st.last) f += vp ? head / l->tp : head; /* the LM head, tied with wte */
        if (st.last) f += 6.0 * 2 * C;               /* ln_f */
        if (f > worst) worst = f;
    }
    double re = l->recompute ? 4.0 / 3.0 : 1.0;
    o->t_compute = worst * tokens * re / r->flops;
    double elt = gpu ? 2 : 4, act = (double)rows * T * C * elt;
    int layers_stage = m->n_layer / l->pp + (m->n_layer % l->pp != 0);
    /* Under TP every PE of the group still does the blocks' LayerNorms and
     * residual adds on the whole width (gpt.c; Megatron without sequence
     * parallelism): about 24 passes over a (rows x T, C) activation a layer,
     * forward and backward, at the memory rate. The rate above has them split
     * over tp with the rest; the (1 - 1/tp) left is added back. */
    if (l->tp > 1)
        o->t_compute += (1.0 - 1.0 / l->tp) * layers_stage * l->micro * 24.0 * act / r->mem_bw;
    o->bubble = (double)(l->pp - 1) / (double)(V * l->micro + l->pp - 1);
    o->t_bubble = o->t_compute * (l->pp - 1) / (V * l->micro);
    /* communication */
    /* sequence parallelism: the same bytes as reduce-scatter + all-gather pairs, plus
     * the backward's 2 all-gathers of the LayerNorm outputs (one all-reduce's worth) */
    o->t_tp = l->tp > 1 ? (double)layers_stage * l->micro *
                              ((l->recompute ? 6 : 4) + (m->seq_parallel ? 1 : 0)) *
                              allreduce_t(ktp, l->tp, act)
                        : 0;
    o->t_pp = l->pp > 1 ? 2.0 * (V * l->micro + l->pp - 2) * (kpp->latency + act / kpp->p2p_bw)
                        : 0;
    double gbytes = (double)o->params_local * 4;
    if (l->dp > 1) {
        double nb = ceil(gbytes / (double)(r->bucket_bytes ? r->bucket_bytes : 1));
        o->t_dp_total = allreduce_t(kdp, l->dp, gbytes) + (nb - 1) * kdp->latency;
        if (l->zero) o->t_dp_total += kdp->latency; /* reduce-scatter + all-gather */
        o->t_dp = o->t_dp_total;
        if (gpu) {
            /* Our GPU step averages each bucket on a side stream while the backward goes
             * on; the last piece (the embeddings, after their backward) waits, and so
             * would ZeRO's all-gather after the optimizer (half the bytes). */
            double last = fmin(gbytes, 4.0 * ((double)wte_params(m, l->tp, vp) +
                                              (double)m->max_seq * m->n_embd));
            double after = l->zero ? 0.5 : 0.0, t_bwd = o->t_compute * 2.0 / 3.0 / l->micro;
            double over = allreduce_t(kdp, l->dp, gbytes - last) +
                          fmax(nb - 2, 0) * kdp->latency;
            o->t_dp = (1 - after) * (fmax(over - t_bwd, 0) + allreduce_t(kdp, l->dp, last)) +
                      after * o->t_dp_total;
        }
    }
    double pz = l->zero ? (double)o->params_local / l->dp : (double)o->params_local;
    o->t_optim = pz * (gpu ? 30.0 : adam ? 28.0 : 16.0) / r->mem_bw;
    o->t_step = o->t_compute + o->t_bubble + o->t_tp + o->t_pp + o->t_dp + o->t_optim;

    unsigned used = (l->tp > 1 ? F_TP : 0) | (l->pp > 1 ? F_PP : 0) | (l->zero ? F_ZERO : 0) |
                    (l->pp == 1 && l->micro > 1 ? F_ACCUM : 0) | (l->recompute ? F_RECOMPUTE : 0) |
                    (l->zero == 2 ? F_ZERO2 : 0) | (l->zero && l->pp > 1 ? F_PP_ZERO : 0) |
                    (m->seq_parallel && l->tp > 1 && l->pp > 1 ? F_PP_SP : 0) |
                    (V > 1 ? F_VIRTUAL : 0);
    say_needs(r, used, o->needs, sizeof o->needs);
    return SYM_OK;
}

/* ---- the search ---- */

static int chunks(const sym_plan_layout_t *l) {
    return l->virtual_stages > 1 ? l->virtual_stages : 1;
}

static int faster(const void *pa, const void *pb) {
    const sym_plan_result_t *a = pa, *b = pb;
    if (a->fits != b->fits) return a->fits ? -1 : 1;
    if (!a->fits) return a->mem.total < b->mem.total ? -1 : a->mem.total > b->mem.total;
    if (a->t_step != b->t_step) return a->t_step < b->t_step ? -1 : 1;
    /* ties: the simpler layout (less ZeRO, no recompute, less tp, less pp) */
    const sym_plan_layout_t *x = &a->layout, *y = &b->layout;
    if (x->zero != y->zero) return x->zero - y->zero;
    if (x->recompute != y->recompute) return x->recompute - y->recompute;
    if (x->tp != y->tp) return x->tp - y->tp;
    if (x->pp != y->pp) return x->pp - y->pp;
    if (chunks(x) != chunks(y)) return chunks(x) - chunks(y);
    return x->micro - y->micro;
}

int sym_plan_candidates(const sym_plan_request_t *r, sym_plan_result_t **out, int *n) {
    *out = NULL;
    *n = 0;
    if (r->pes < 1) return sym__error(SYM_EINVAL, "--pes must be at least 1");
    if (r->batch < 1) return sym__error(SYM_EINVAL, "--batch must be at least 1");
    if (!(r->flops > 0) || !(r->mem_bw > 0) || !(r->intra.busbw > 0) || !(r->inter.busbw > 0))
        return sym__error(SYM_EINVAL, "the planner needs positive compute, memory and link rates");
    int cap = 256, count = 0;
    sym_plan_result_t *res = malloc((size_t)cap * sizeof *res);
    if (!res) return sym__error(SYM_ENOMEM, "out of memory for the plan");
    int ppn = r->pes_per_node > 0 ? r->pes_per_node : r->pes;
    for (int tp = 1; tp <= r->pes; tp++) {
        if (r->pes % tp || tp > ppn) continue; /* TP stays within a node */
        for (int pp = 1; pp <= r->pes / tp; pp++) {
            if ((r->pes / tp) % pp) continue;
            int dp = r->pes / tp / pp;
            int local = (r->batch + dp - 1) / dp;
            for (int micro = 1; micro <= local; micro++) {
                if (local % micro) continue;
                /* micro-batches: powers of two, and the whole batch one row each */
                if ((micro & (micro - 1)) && micro != local) continue;
                /* virtual stages: the one asked, or of every count a stage's layers
                 * allow (sym_plan_evaluate drops those the micro-batches do not) the
                 * fastest, one row a layout */
                int v0 = r->virtual_stages > 0 ? r->virtual_stages : 1, v1 = v0;
                if (pp > 1 && r->virtual_stages == 0)
                    v1 = r->model.n_layer / pp < SYM_GPT_MAX_CHUNKS ? r->model.n_layer / pp
                                                                     : SYM_GPT_MAX_CHUNKS;
                if (pp == 1 && r->virtual_stages > 1) continue; /* pipelines alone */
                if (pp == 1) v0 = v1 = 0;
                for (int zero = 0; zero <= (dp > 1 ? 2 : 0); zero++)
                    for (int rc = 0; rc <= 1; rc++) {
                        sym_plan_result_t e, best;
                        int any = 0;
                        for (int v = v0; v <= v1; v++) {
                            sym_plan_layout_t l = {dp, tp, pp, micro, zero, rc, v};
                            if (sym_plan_evaluate(r, &l, &e)) continue; /* not possible */
                            if (!any++ || faster(&e, &best) < 0) best = e;
                        }
                        if (!any) continue;
                        if (count == cap) {
                            sym_plan_result_t *bigger =
                                realloc(res, (size_t)(cap *= 2) * sizeof *res);
                            if (!bigger) {
                                free(res);
                                return sym__error(SYM_ENOMEM, "out of memory for the plan");
                            }
                            res = bigger;
                        }
                        res[count++] = best;
                    }
            }
        }
    }
    if (!count) {
        free(res);
        return sym__error(SYM_EINVAL, "no layout of %s on %d PEs is possible (tp must divide the "
                          "heads %d and the width %d, pp at most the %d layers, dp at most the "
                          "batch %d%s)", r->model.spec, r->pes, r->model.n_head, r->model.n_embd,
                          r->model.n_layer, r->batch, r->virtual_stages > 1 ? "; --virtual-stages: "
                          "a pipeline whose micro-batches are a multiple of pp, pp x V chunks at "
                          "most the layers" : "");
    }
    qsort(res, (size_t)count, sizeof *res, faster);
    *out = res;
    *n = count;
    return SYM_OK;
}

int sym_plan_choose(const sym_plan_request_t *r, sym_plan_layout_t *out) {
    sym_plan_result_t *res;
    int n, rc = sym_plan_candidates(r, &res, &n);
    if (rc) return rc;
    int pick = -1;
    for (int i = 0; i < n && pick < 0; i++)
        if (res[i].fits && (!r->runnable_only || !res[i].needs[0])) pick = i;
    if (pick < 0) {
        /* the smallest layout, for the message */
        const sym_plan_result_t *s = &res[0];
        for (int i = 0; i < n; i++)
            if (res[i].mem.total < s->mem.total) s = &res[i];
        char need[32], have_s[32];
        rc = sym__error(SYM_ENOMEM,
                        "no layout of %s on %d PEs fits in %s a PE%s: the smallest, dp=%d tp=%d "
                        "pp=%d with %d micro-batches, ZeRO-%d%s, needs %s; use more PEs, a smaller "
                        "--batch or a smaller model",
                        r->model.spec, r->pes, sym__fmt_size(r->device_mem, have_s, sizeof have_s),
                        r->runnable_only ? " among the layouts our code trains" : "",
                        s->layout.dp, s->layout.tp, s->layout.pp, s->layout.micro, s->layout.zero,
                        s->layout.recompute ? ", recompute" : "",
                        sym__fmt_size(s->mem.total, need, sizeof need));
        free(res);
        return rc;
    }
    *out = res[pick].layout;
    free(res);
    return SYM_OK;
}

void sym_plan_train_request(const sym_train_config_t *c, int npes, int gpu, size_t device_mem,
                            sym_plan_request_t *r) {
    sym_plan_defaults(r, gpu ? SYM_PLAN_GPU : SYM_PLAN_CPU);
    r->model = c->model;
    r->pes = npes;
    r->pes_per_node = gpu ? r->pes_per_node : 0;
    r->batch = c->global_batch;
    r->seq = c->seq;
    r->optimizer = c->optim.kind;
    r->bucket_bytes = (size_t)(c->bucket_mb * 1048576.0);
    r->virtual_stages = c->virtual_stages; /* given: that V alone; 0: every V */
    r->device_mem = device_mem;
    r->runnable_only = 1;
}

void sym_plan_assumptions(const sym_plan_request_t *r, char *buf, size_t len) {
    int ppn = r->pes_per_node > 0 ? r->pes_per_node : r->pes;
    snprintf(buf, len,
             "compute: %.4g TFLOP/s a PE (%s)\n"
             "optimizer pass: %.4g GB/s a PE (%s)\n"
             "within a node (%d PEs): %s, %.4g GB/s busbw, %.3g us (%s)\n"
             "between nodes: %s, %.4g GB/s busbw, %.3g us (%s)\n"
             "memory: what our %s allocates; %s\n"
             "time: nothing overlapped but the GPU's bucketed gradient average with the "
             "backward; tp innermost, then pp, then dp; the 1F1B bubble "
             "(pp-1)/(m+pp-1), (pp-1)/(Vm+pp-1) with V virtual stages; TP never crosses a "
             "node\n",
             r->flops / 1e12, r->flops_source, r->mem_bw / 1e9, r->mem_bw_source, ppn,
             r->intra.name, r->intra.busbw / 1e9, r->intra.latency * 1e6, r->intra.source,
             r->inter.name, r->inter.busbw / 1e9, r->inter.latency * 1e6, r->inter.source,
             r->device ? "GPU code (models/gpt_cuda.cu's one region)"
                       : "CPU code (the buddy blocks of models/gpt.c and model.c, AdamW's arrays)",
             r->device ? "TP splits the parameters and the head-local activations, sequence "
                         "parallelism the LayerNorm and residual ones (blocks of rows); "
                         "whole-block recompute is not in the GPU code (its --recompute "
                         "gelu,ln keeps more): its rows assume Megatron-style splits"
                       : "TP splits the parameters and the head-local activations (qkv, "
                         "attention, MLP hidden), sequence parallelism the LayerNorm and "
                         "residual ones");
}
