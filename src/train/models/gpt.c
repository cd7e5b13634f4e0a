/*
 * gpt.c — the GPT-2 architecture on the CPU, the reference implementation the
 * GPU kernels are checked against: token + position embeddings, L pre-norm
 * blocks of causal multi-head self-attention and a 4x GELU (tanh) MLP, a
 * final LayerNorm and an LM head tied to the token embedding.
 *
 *   x_0 = wte[tok] + wpe[t]                                   (B,T,C)
 *   block l:  a = x + attn.c_proj(attention(attn.c_attn(ln_1(x))))
 *             x' = a + mlp.c_proj(gelu(mlp.c_fc(ln_2(a))))
 *   logits = ln_f(x_L) @ wte^T                                (B,T,Vp)
 *
 * Parameters (the table of model.c, in this order, so that the gradients of
 * the last layers sit at the end of the flat array where data parallelism
 * starts reducing them first): wte (Vp,C), wpe (T,C), then per block h.l.
 * {ln_1.weight, ln_1.bias (C), attn.c_attn.weight (3C,C), .bias (3C),
 * attn.c_proj.weight (C,C), .bias, ln_2.weight, ln_2.bias, mlp.c_fc.weight
 * (4C,C), .bias (4C), mlp.c_proj.weight (C,4C), .bias (C)}, ln_f.weight,
 * ln_f.bias. Weights are stored (out, in) as PyTorch's nn.Linear stores them.
 *
 * The forward keeps what the backward needs (per block: ln_1 and ln_2
 * outputs with their row statistics, qkv, the attention probabilities and
 * output, the residual stream after each half, the MLP's pre- and
 * post-GELU activations); the backward reuses one block's worth of gradient
 * buffers for every block. Everything is fp32 on the PE's threads; sums over
 * rows and the vocabulary accumulate in double (ops/cpu).
 *
 * Tensor parallelism (sym_model_create_tp, a team of t PEs): each PE holds
 * n_head / t heads. attn.c_attn (3C/t, C: q, k, v rows of its heads) and
 * mlp.c_fc (4C/t, C) are column-parallel, attn.c_proj (C, C/t) and mlp.c_proj
 * (C, 4C/t) row-parallel with their bias added by team PE 0 only; the partial
 * outputs of the row-parallel layers are summed over the team in the forward
 * (tp_sum), the partial input gradients of the column-parallel ones in the
 * backward. The token embedding is vocabulary-parallel, and with it the tied
 * LM head: PE r holds rows [v0, v0 + nv) of wte (sym_shard_range of V over
 * the team, uneven allowed; the padding rows of the 1-PE table belong to
 * none). The embedding is summed over the team (a token's row comes from the
 * PE that holds it, zeros from the others: exact), the LM head gives each PE
 * its nv columns of the logits, which are never gathered (the loss is
 * sym_softmax_xent_shard, through sym_model_xent), and its input gradient is
 * summed over the team. wpe, the LayerNorms and the row-parallel biases are
 * whole on every PE and computed alike on each, so their gradients agree
 * without communication.
 *
 * Sequence parallelism (cfg.seq_parallel with a TP team, Megatron-SP): in the
 * LayerNorm / dropout / residual regions each PE of the team holds only its
 * part of the sequence, the activations (B,T,C) placed Shard(1) over the team
 * (sym_shard_range of T: uneven shards allowed, a PE may hold none). Where
 * plain TP sums a row-parallel output over the team (all-reduce), SP
 * redistributes it Partial -> Shard(1) (a reduce-scatter along the sequence);
 * before each column-parallel GEMM (QKV, MLP up, the LM head) the LayerNorm's
 * shard goes Shard(1) -> Replicate (an all-gather). The backward mirrors it:
 * the residual gradient's shard is all-gathered before each row-parallel
 * layer's backward, the column-parallel layers' partial input gradients
 * reduce-scattered. Only the shards are kept: the backward all-gathers the
 * LayerNorm outputs again (Megatron's choice), so the per-block buffers
 * ln_1, ln_2, the two residuals and their row statistics (and the dropout
 * masks) shrink by the team's size. The LayerNorms' weight gradients then
 * come from a part of the rows on each PE and are summed over the team.
 * Every redistribution is sym_redistribute on a 1-D mesh over the team
 * (symtrain/dtensor.h), whose symmetric scratch (rows x T x C floats) the
 * model allocates: with SP, creating and destroying the model is collective
 * over the whole job. A pipeline stage takes SP too: its edges pass this
 * PE's positions of each sequence (B x tl rows) and their gradients.
 *
 * Dropout (cfg.dropout > 0, training only): GPT-2's embedding dropout and
 * residual dropout on the output of each block's two row-parallel layers
 * (attn.c_proj, mlp.c_proj) before its residual add; GPT-2's dropout on the
 * attention probabilities is not here. A mask is a function of (the site's
 * key, the step, the token's global row (row0 + b) * T + t, the unit), as in
 * ops/cpu/dropout.c, so every split of the batch, the heads or the sequence
 * draws the 1-PE model's masks.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <shmem.h>

#include <symtrain/data.h>
#include <symtrain/dtensor.h>
#include <symtrain/rng.h>

#include "core/parallel.h"
#include "internal.h"
#include "models/model.h"

/* ---- config ---- */

static const struct {
    const char *name;
    int L, C, H;
} presets[] = {{"d12", 12, 768, 12}, {"d24", 24, 1024, 16}, {"d36", 36, 1280, 20},
               {"d48", 48, 1600, 25}};

static int pad_vocab(int v) { return (v + 127) / 128 * 128; }

/* "d12" or "L=4,C=256,H=4,V=256,T=256" (any subset; the rest as d12's) */
int sym__gpt_parse(const char *spec, const char *p, sym_model_config_t *cfg) {
    int L = 12, C = 768, H = 12, V = 50257, T = 1024, found = 0;
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++)
        if (!strcmp(p, presets[i].name)) {
            L = presets[i].L;
            C = presets[i].C;
            H = presets[i].H;
            found = 1;
        }
    while (!found && *p) {
        char key = *p;
        char *end;
        if (!strchr("LCHVT", key) || p[1] != '=')
            return sym__error(SYM_EINVAL,
                              "--model '%s': a GPT is gpt:d12|d24|d36|d48 or gpt:KEY=N,... with "
                              "keys L (layers), C (width), H (heads), V (vocabulary), T "
                              "(context)",
                              spec);
        errno = 0;
        long v = strtol(p + 2, &end, 10);
        if (end == p + 2 || errno || v < 1 || v > (key == 'V' ? 1 << 20 : 1 << 16))
            return sym__error(SYM_EINVAL, "--model '%s': %c must be a whole number from 1 to %d",
                              spec, key, key == 'V' ? 1 << 20 : 1 << 16);
        if (key == 'L') L = (int)v;
        if (key == 'C') C = (int)v;
        if (key == 'H') H = (int)v;
        if (key == 'V') V = (int)v;
        if (key == 'T') T = (int)v;
        p = end;
        if (*p == ',') p++;
        else if (*p)
            return sym__error(SYM_EINVAL, "--model '%s': unexpected '%c'; separate KEY=N with ','",
                              spec, *p);
    }
    if (L > SYM_GPT_MAX_LAYERS)
        return sym__error(SYM_EINVAL, "--model '%s': at most %d layers", spec, SYM_GPT_MAX_LAYERS);
    if (C % H)
        return sym__error(SYM_EINVAL, "--model '%s': the width C=%d is not a multiple of the "
                                      "heads H=%d",
                          spec, C, H);
    if (V > 65536)
        return sym__error(SYM_EINVAL, "--model '%s': V=%d; token shards hold 16-bit tokens, so V "
                                      "is at most 65536",
                          spec, V);
    snprintf(cfg->spec, sizeof cfg->spec, "%s", spec);
    cfg->kind = SYM_MODEL_GPT;
    cfg->n_layer = L;
    cfg->n_embd = C;
    cfg->n_head = H;
    cfg->vocab = V;
    cfg->padded_vocab = pad_vocab(V);
    cfg->max_seq = T;
    return SYM_OK;
}

/* ---- parameters and activations ---- */

enum { LN1W, LN1B, QKVW, QKVB, PROJW, PROJB, LN2W, LN2B, FCW, FCB, FCPW, FCPB, NBLOCK };

typedef struct { /* one block's activations, sized for max_rows x T rows (R: this PE's
                   * rows of the sequence-parallel regions, N without SP; with TP the
                   * head-local ones Cl = C / tp wide, NHl = NH / tp heads) */
    float *ln1, *ln1_mean, *ln1_rstd; /* (R,C), (R), (R) */
    float *qkv;                       /* (N,3Cl) */
    float *att;                       /* (B,NHl,T,T) */
    float *atty;                      /* (N,Cl) */
    float *res2;                      /* (R,C) x + attention */
    float *ln2, *ln2_mean, *ln2_rstd; /* (R,C), (R), (R) */
    float *fch, *fch_gelu;            /* (N,4Cl) */
    float *res3;                      /* (R,C) the block's output */
    float *mask1, *mask2;             /* (R,C) the residual dropouts' masks (dropout only) */
} block_t;

/* What one forward keeps for its backward: one set per slot (a pipeline stage
 * holds several micro-batches between their forward and their backward). */
typedef struct {
    block_t *block;                   /* (the largest chunk's blocks) the chunk's blocks */
    float *encoded;                   /* (R,C) the embeddings, or the previous stage's output */
    float *emask;                     /* (R,C) the embedding dropout's mask (dropout only) */
    float *lnf, *lnf_mean, *lnf_rstd; /* (N,C) (gathered with SP), (R), (R); the head only */
    float *logits;                    /* (N,Vp); the head only */
    const int32_t *tokens;            /* the forward's input (B,T) */
    int B, T, training;
    int64_t t0, tl;                   /* this PE's positions [t0, t0 + tl) of the sequence */
    uint64_t step;                    /* the forward's step and first global row: the */
    int64_t row0;                     /* attention dropout's masks, drawn again in backward */
} acts_t;

typedef struct {
    size_t wte, wpe, lnfw, lnfb;
    size_t (*off)[NBLOCK];            /* (nl) each block's parameters in the flat arrays */
    sym_pool_t *acts;
    acts_t *slot, *a;                 /* (slots) and the one in use */
    float *scratch;                   /* (N,C) a projection before its residual add */
    /* backward: one block's worth, reused */
    float *dres;                      /* (N,C) the residual stream's gradient */
    float *dln;                       /* (N,C) */
    float *datty;                     /* (N,Cl) */
    float *dqkv;                      /* (N,3Cl) */
    float *dfch;                      /* (N,4Cl) */
    float *datt;                      /* (T,T) */
    /* sequence parallelism (sp != NULL) */
    sym_mesh_t *sp;                   /* "tp=t" over m->tp: the redistributions' mesh */
    void *sp_scratch;                 /* its symmetric scratch (N,C) floats */
    float *full;                      /* (N,C) a LayerNorm output gathered */
    float *dfull;                     /* (N,C) a residual gradient gathered */
    float *lngrad;                    /* (2C) a LayerNorm's weight and bias gradients, this
                                       * PE's rows' share */
    float *dsh;                       /* (R,C) a reduced shard, or a gradient through dropout
                                       * (SP or dropout) */
    uint64_t *drop_key;               /* (1 + 3 nl) embedding, each block's two residual
                                       * sites, then each block's attention probabilities
                                       * (blocks in the order held) */
} gpt_t;

/* Declare a parameter; `index` is its place in the whole model's table (its
 * weights' random stream), whatever part of the model this PE holds. */
static int declare(sym_model_t *m, size_t *off, const char *name, int index, int64_t d0,
                   int64_t d1) {
    int64_t shape[2] = {d0, d1};
    *off = sym__model_param(m, name, d1 ? 2 : 1, shape);
    if (*off == (size_t)-1) return SYM_ENOMEM;
    m->param[m->nparam - 1].index = index;
    return SYM_OK;
}

/* Block i of those held (chunk by chunk): its layer in the whole model. */
static int layer_of(const sym_model_t *m, int i) {
    int k = 0;
    while (k + 1 < m->chunks && i >= m->chunk_at[k + 1]) k++;
    return m->chunk_l0[k] + i - m->chunk_at[k];
}

/* The chunk in use holds the model's embeddings / its head. */
static int embeds(const sym_model_t *m) { return m->embed && m->chunk == 0; }
static int heads(const sym_model_t *m) { return m->head && m->chunk == m->chunks - 1; }

/* The whole model's tensors: wte 0, wpe 1, block l's k-th 2 + 12 l + k, ln_f after. A
 * pipeline stage declares its part: the embeddings (wte also on a last stage
 * without them: the LM head's copy of the tied weight, first in its arrays as
 * on stage 0), its chunks' blocks in ascending order, ln_f. */
static int gpt_declare(sym_model_t *m) {
    const sym_model_config_t *c = &m->cfg;
    int64_t C = c->n_embd;
    gpt_t *g = calloc(1, sizeof *g);
    if (!g || !(g->off = calloc((size_t)(m->nl ? m->nl : 1), sizeof *g->off))) {
        free(g);
        return sym__error(SYM_ENOMEM, "out of memory for the model");
    }
    m->impl = g;
    int rc;
    m->v0 = 0; /* the vocabulary rows this PE holds: all (padded) without TP */
    m->nv = c->padded_vocab;
    if (m->tp_size > 1) sym_shard_range(c->vocab, m->tp_size, m->tp_rank, &m->v0, &m->nv);
    if (m->embed || m->head) {
        if ((rc = declare(m, &g->wte, "wte", 0, m->nv, C))) return rc;
        if (m->tp_size > 1) m->param[m->nparam - 1].tp_dim = 0;
    }
    if (m->embed && (rc = declare(m, &g->wpe, "wpe", 1, c->max_seq, C))) return rc;
    static const char *const names[NBLOCK] = {
        "ln_1.weight", "ln_1.bias", "attn.c_attn.weight", "attn.c_attn.bias",
        "attn.c_proj.weight", "attn.c_proj.bias", "ln_2.weight", "ln_2.bias",
        "mlp.c_fc.weight", "mlp.c_fc.bias", "mlp.c_proj.weight", "mlp.c_proj.bias"};
    int64_t Cl = C / m->tp_size; /* this PE's share of the width (its heads) */
    const int64_t shape[NBLOCK][2] = {{C, 0},      {C, 0},      {3 * Cl, C}, {3 * Cl, 0},
                                      {C, Cl},     {C, 0},      {C, 0},      {C, 0},
                                      {4 * Cl, C}, {4 * Cl, 0}, {C, 4 * Cl}, {C, 0}};
    /* tensor parallelism: column-parallel layers split their rows, row-parallel ones
     * their columns; the biases of the row-parallel ones are whole */
    const int tp_dim[NBLOCK] = {-1, -1, 0, 0, 1, -1, -1, -1, 0, 0, 1, -1};
    for (int i = 0; i < m->nl; i++)
        for (int k = 0; k < NBLOCK; k++) {
            char name[64];
            int l = layer_of(m, i);
            snprintf(name, sizeof name, "h.%d.%s", l, names[k]);
            if ((rc = declare(m, &g->off[i][k], name, 2 + NBLOCK * l + k, shape[k][0],
                              shape[k][1])))
                return rc;
            if (m->tp_size > 1) m->param[m->nparam - 1].tp_dim = tp_dim[k];
        }
    int lnf = 2 + NBLOCK * c->n_layer;
    if (m->head && ((rc = declare(m, &g->lnfw, "ln_f.weight", lnf, C, 0)) ||
                    (rc = declare(m, &g->lnfb, "ln_f.bias", lnf + 1, C, 0))))
        return rc;
    return SYM_OK;
}

/* N(0, 1) from two uniforms (Box-Muller), in double. */
static double normal(sym_rng_t *r) {
    double u1 = ((double)(sym_rng_next(r) >> 11) + 1.0) * 0x1.0p-53; /* (0, 1] */
    double u2 = (double)(sym_rng_next(r) >> 11) * 0x1.0p-53;
    return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

/* Element k of a weight drawn from stream `key`: normal() from counters 2k
 * and 2k + 1, so any split of the elements over threads draws the same bits
 * (gpt:d12's 124M draws take seconds on one thread: a restart's start-up). */
typedef struct {
    float *dst;
    uint64_t key;
    double sd;
} draw_t;

static void draw_range(size_t lo, size_t hi, void *arg) {
    const draw_t *d = arg;
    for (size_t k = lo; k < hi; k++) {
        sym_rng_t r = {d->key, 2 * (uint64_t)k};
        d->dst[k] = (float)(d->sd * normal(&r));
    }
}

/* Copy n floats between the whole tensor and a part, either way. */
static void move(float *whole, float *part, size_t n, int to_whole) {
    if (to_whole)
        memcpy(whole, part, n * sizeof *part);
    else
        memcpy(part, whole, n * sizeof *part);
}

/* Between parameter i's whole tensor `full` (the 1-PE table's shape) and
 * team PE k's part of it under tensor parallelism: its columns (tp_dim 1),
 * its rows (tp_dim 0; for attn.c_attn its heads' rows of each of the three
 * sections q, k and v; for wte its block of the vocabulary), or all of it. */
static void gpt_shard_copy(const sym_model_t *m, int i, int k, float *full, float *part,
                           int to_full) {
    const sym_param_t *p = &m->param[i], *w = sym_model_full_param(m, i);
    int64_t t = m->tp_size, rows = w->shape[0], cols = w->ndim > 1 ? w->shape[1] : 1;
    if (p->tp_dim < 0) {
        move(full, part, w->numel, to_full);
    } else if (p->tp_dim == 1) {
        int64_t pc = cols / t;
        for (int64_t r = 0; r < rows; r++)
            move(full + r * cols + k * pc, part + r * pc, (size_t)pc, to_full);
    } else if (!strcmp(p->name, "wte")) {
        int64_t lo, len;
        sym_shard_range(m->cfg.vocab, (int)t, k, &lo, &len);
        move(full + lo * cols, part, (size_t)(len * cols), to_full);
    } else {
        int64_t sec = strstr(p->name, "c_attn") ? 3 : 1, per = rows / sec / t;
        for (int64_t s = 0; s < sec; s++)
            move(full + (s * per * t + k * per) * cols, part + s * per * cols,
                 (size_t)(per * cols), to_full);
    }
}

/* Parameter i of team PE k as pieces of the whole tensor (what gpt_shard_copy
 * moves, as boxes): its columns (tp_dim 1), its rows (tp_dim 0: one block, or
 * attn.c_attn's three q, k, v sections; wte its vocabulary rows), or all. */
static int gpt_pieces(const sym_model_t *m, int i, sym_param_piece_t *pc) {
    const sym_param_t *p = &m->param[i], *w = sym_model_full_param(m, i);
    int64_t t = m->tp_size, k = m->tp_rank, rows = w->shape[0];
    int n = 1;
    memset(pc, 0, 3 * sizeof *pc);
    for (int d = 0; d < p->ndim; d++) pc[0].count[d] = p->shape[d];
    if (p->tp_dim == 1) {
        pc[0].whole[1] = k * p->shape[1];
    } else if (p->tp_dim == 0 && !strcmp(p->name, "wte")) {
        pc[0].whole[0] = m->v0;
    } else if (p->tp_dim == 0) {
        int64_t sec = strstr(p->name, "c_attn") ? 3 : 1, per = rows / sec / t;
        for (int64_t s = 0; s < sec; s++) {
            pc[s] = pc[0];
            pc[s].part[0] = s * per;
            pc[s].whole[0] = s * per * t + k * per;
            pc[s].count[0] = per;
        }
        n = (int)sec;
    }
    return n;
}

/* The 1-PE model's weights, or this PE's slices of them (tensor parallelism:
 * each split matrix is drawn whole from its stream, then sliced). */
static int init_weights(sym_model_t *m) {
    const sym_model_config_t *c = &m->cfg;
    double resid_std = 0.02 / sqrt(2.0 * c->n_layer);
    for (int i = 0; i < m->nparam; i++) {
        const sym_param_t *p = &m->param[i];
        float *w = m->params + p->offset, *full = NULL;
        size_t n = p->numel;
        const char *tail = strrchr(p->name, '.');
        if (p->ndim == 1) { /* LayerNorm weights 1, every bias and LayerNorm bias 0 */
            float v = strstr(p->name, "ln_") && !strcmp(tail, ".weight") ? 1.0f : 0.0f;
            for (size_t k = 0; k < n; k++) w[k] = v;
            continue;
        }
        double sd = strstr(p->name, "c_proj.weight") ? resid_std : 0.02;
        size_t whole = sym_model_full_param(m, i)->numel;
        n = !strcmp(p->name, "wte") ? (size_t)c->vocab * (size_t)c->n_embd : whole;
        if (p->tp_dim >= 0 && !(full = malloc(whole * sizeof *full)))
            return sym__error(SYM_ENOMEM, "out of memory drawing %s", p->name);
        float *dst = full ? full : w;
        draw_t d = {dst, sym_rng_key(c->seed, SYM_RNG_INIT, (uint64_t)p->index), sd};
        sym__parallel_for(n, n, draw_range, &d);
        for (size_t k = n; k < whole; k++) dst[k] = 0.0f; /* the vocabulary's padding rows */
        if (full) gpt_shard_copy(m, i, m->tp_rank, full, w, 0);
        free(full);
    }
    return SYM_OK;
}

/* Sequence parallelism: on a TP team with cfg.seq_parallel. */
static int sp_on(const sym_model_t *m) { return m->tp_size > 1 && m->cfg.seq_parallel; }

/* The mesh of the sequence-parallel redistributions and its scratch (n floats). */
static int sp_create(sym_model_t *m, gpt_t *g, size_t n) {
    char spec[32];
    snprintf(spec, sizeof spec, "tp=%d", m->tp_size);
    int rc = sym_mesh_create(m->tp, spec, &g->sp);
    if (rc) return rc;
    if (!(g->sp_scratch = shmem_malloc(n * sizeof(float)))) /* every PE: the same size */
        return sym__error(SYM_ENOMEM, "sequence parallelism: no %zu bytes of symmetric memory "
                          "for the redistributions' scratch; raise SYMTRAIN_SYMMETRIC_SIZE",
                          n * sizeof(float));
    return sym_mesh_attach_scratch(g->sp, g->sp_scratch, n * sizeof(float));
}

static int gpt_init(sym_model_t *m) {
    gpt_t *g = m->impl;
    const sym_model_config_t *c = &m->cfg;
    int rc;
    if (m->max_rows == 0) return SYM_OK; /* parameters only */
    size_t B = (size_t)m->max_rows, T = (size_t)c->max_seq, C = (size_t)c->n_embd;
    size_t N = B * T, NH = (size_t)c->n_head, Vp = (size_t)c->padded_vocab;
    size_t S = (size_t)m->slots, nl = (size_t)m->nl, nb = 0; /* nb: the largest chunk's */
    for (int k = 0; k < m->chunks; k++)
        if ((size_t)m->chunk_nl[k] > nb) nb = (size_t)m->chunk_nl[k];
    int sp = sp_on(m), drop = c->dropout > 0.0f;
    /* R: the rows of the sequence-parallel regions, the largest shard's (team PE 0's) */
    size_t R = sp ? B * ((T + (size_t)m->tp_size - 1) / (size_t)m->tp_size) : N;
    if (!(g->slot = calloc(S, sizeof *g->slot)) ||
        (drop && !(g->drop_key = malloc((1 + 3 * nl) * sizeof *g->drop_key))))
        return sym__error(SYM_ENOMEM, "out of memory");
    for (size_t s = 0; s < S; s++)
        if (!(g->slot[s].block = calloc(nb ? nb : 1, sizeof(block_t))))
            return sym__error(SYM_ENOMEM, "out of memory for the model");
    if (drop) g->drop_key[0] = sym_rng_key(c->seed, SYM_RNG_DROPOUT, 0);
    for (size_t i = 0; drop && i < nl; i++) { /* sites of the whole model: 1 + 2 l + k, then */
        uint64_t l = (uint64_t)layer_of(m, (int)i); /* the attention's 1 + 2 L + l */
        for (uint64_t k = 0; k < 2; k++)
            g->drop_key[1 + 2 * i + k] = sym_rng_key(c->seed, SYM_RNG_DROPOUT, 1 + 2 * l + k);
        g->drop_key[1 + 2 * nl + i] =
            sym_rng_key(c->seed, SYM_RNG_DROPOUT, 1 + 2 * (uint64_t)c->n_layer + l);
    }
    /* Every buffer in floats; the pool is sized for their power-of-two blocks. */
    /* TP: the head-local buffers (qkv, the attention, its output, the MLP's hidden
     * layer and their gradients) hold this PE's heads, Cl = C / tp wide */
    size_t Cl = C / (size_t)m->tp_size, NHl = NH / (size_t)m->tp_size;
    size_t per_block[] = {R * C, R, R, N * 3 * Cl, B * NHl * T * T, N * Cl, R * C,
                          R * C, R, R, N * 4 * Cl, N * 4 * Cl, R * C, R * C, R * C};
    size_t per_slot[] = {R * C, R * C, N * C, R, R, N * Vp}; /* encoded, emask, the head's */
    size_t shared[] = {N * C, N * C, N * C, N * Cl, N * 3 * Cl, N * 4 * Cl, T * T,
                       N * C, N * C, 2 * C, R * C};
    size_t nblock = drop ? 15 : 13, nshared = sp ? 11 : 7;
    size_t need = 0;
    for (size_t i = 0; i < nblock; i++) need += S * nb * sym__pow2_at_least(per_block[i] * 4);
    for (size_t i = 0; i < 6; i++)
        if ((i != 1 || drop) && (i < 2 || m->head))
            need += S * sym__pow2_at_least(per_slot[i] * 4);
    for (size_t i = 0; i < nshared; i++) need += sym__pow2_at_least(shared[i] * 4);
    if (drop && !sp) need += sym__pow2_at_least(shared[10] * 4); /* dsh */
    if ((rc = sym_pool_create("activations", sym__pow2_at_least(need), 0, &g->acts))) return rc;
    m->acts = g->acts;
    if (sp && (rc = sp_create(m, g, N * C))) return rc;
    size_t k = 0;
#define TAKE(ptr, sizes)                                                  \
    do {                                                                  \
        if (!((ptr) = sym_pool_alloc(g->acts, (sizes)[k] * sizeof(float)))) \
            return SYM_ENOMEM;                                            \
        k++;                                                              \
    } while (0)
    for (size_t s = 0; s < S; s++) {
        acts_t *a = &g->slot[s];
        for (size_t l = 0; l < nb; l++) {
            block_t *b = &a->block[l];
            k = 0;
            TAKE(b->ln1, per_block);
            TAKE(b->ln1_mean, per_block);
            TAKE(b->ln1_rstd, per_block);
            TAKE(b->qkv, per_block);
            TAKE(b->att, per_block);
            TAKE(b->atty, per_block);
            TAKE(b->res2, per_block);
            TAKE(b->ln2, per_block);
            TAKE(b->ln2_mean, per_block);
            TAKE(b->ln2_rstd, per_block);
            TAKE(b->fch, per_block);
            TAKE(b->fch_gelu, per_block);
            TAKE(b->res3, per_block);
            if (drop) {
                TAKE(b->mask1, per_block);
                TAKE(b->mask2, per_block);
            }
        }
        k = 0;
        TAKE(a->encoded, per_slot);
        if (drop) TAKE(a->emask, per_slot);
        k = 2;
        if (m->head) {
            TAKE(a->lnf, per_slot);
            TAKE(a->lnf_mean, per_slot);
            TAKE(a->lnf_rstd, per_slot);
            TAKE(a->logits, per_slot);
        }
    }
    k = 0;
    TAKE(g->scratch, shared);
    TAKE(g->dres, shared);
    TAKE(g->dln, shared);
    TAKE(g->datty, shared);
    TAKE(g->dqkv, shared);
    TAKE(g->dfch, shared);
    TAKE(g->datt, shared);
    if (sp) {
        TAKE(g->full, shared);
        TAKE(g->dfull, shared);
        TAKE(g->lngrad, shared);
    }
    k = 10;
    if (sp || drop) TAKE(g->dsh, shared);
#undef TAKE
    g->a = &g->slot[0];
    return SYM_OK;
}

static void gpt_destroy(sym_model_t *m) {
    gpt_t *g = m->impl;
    if (!g) return;
    sym_pool_destroy(g->acts);
    m->acts = NULL;
    sym_mesh_destroy(g->sp); /* before its scratch */
    if (g->sp_scratch) shmem_free(g->sp_scratch);
    free(g->drop_key);
    for (int s = 0; g->slot && s < m->slots; s++) free(g->slot[s].block);
    free(g->slot);
    free(g->off);
    free(g);
    m->impl = NULL;
}

static void gpt_use_slot(sym_model_t *m, int slot) {
    gpt_t *g = m->impl;
    if (g->slot) g->a = &g->slot[slot];
}

static const float *gpt_input_grad(const sym_model_t *m) {
    const gpt_t *g = m->impl;
    return g->dres;
}

/* ---- the passes ---- */

/* A linear layer over rows: out (N,O) = in (N,I) @ w^T (O,I) + b (O) (b may be NULL). */
static int linear(float *out, const float *in, const float *w, const float *b, int64_t N,
                  int64_t I, int64_t O) {
    sym_tensor_t x = sym_tensor_2d((float *)in, N, I), tw = sym_tensor_2d((float *)w, O, I);
    sym_tensor_t y = sym_tensor_2d(out, N, O), tb = sym_tensor_view((float *)b, 1, &O);
    return sym_linear_forward(&x, &tw, b ? &tb : NULL, &y);
}

/* dw (O,I) +=, db (O) += (db may be NULL), din (N,I) += from dout (N,O). */
static int linear_back(float *din, float *dw, float *db, const float *dout, const float *in,
                       const float *w, int64_t N, int64_t I, int64_t O) {
    sym_tensor_t x = sym_tensor_2d((float *)in, N, I), tw = sym_tensor_2d((float *)w, O, I);
    sym_tensor_t dy = sym_tensor_2d((float *)dout, N, O), tdw = sym_tensor_2d(dw, O, I);
    sym_tensor_t tdb = sym_tensor_view(db, 1, &O), dx = sym_tensor_2d(din, N, I);
    int rc = sym_linear_backward_params(&x, &dy, &tdw, db ? &tdb : NULL);
    if (!rc) rc = sym_linear_backward_input(&tw, &dy, &dx);
    return rc;
}

/* Tensor parallelism: x (n floats, a row-parallel layer's partial output or a
 * column-parallel layer's partial input gradient) summed over the TP team. */
static int tp_sum(const sym_model_t *m, float *x, size_t n) {
    return m->tp_size > 1 ? sym__comm_sum(m->tp, x, n) : SYM_OK;
}

/* ---- sequence parallelism: redistributions of (B,T,C) activations ---- */

/* dst placed `to` from src placed `from` over the TP team's mesh. */
static int sp_move(const gpt_t *g, float *dst, sym_placement_t to, const float *src,
                   sym_placement_t from, int B, int T, int C) {
    int64_t global[3] = {B, T, C}, ls[3], ld[3];
    sym_dtensor_t x, y;
    int rc;
    if ((rc = sym_dtensor_local_shape(g->sp, SYM_DT_F32, 3, global, &from, ls, NULL)) ||
        (rc = sym_dtensor_local_shape(g->sp, SYM_DT_F32, 3, global, &to, ld, NULL)))
        return rc;
    sym_tensor_t tx = sym_tensor_view((float *)src, 3, ls), ty = sym_tensor_view(dst, 3, ld);
    if ((rc = sym_dtensor_wrap(&x, g->sp, &tx, 3, global, &from)) ||
        (rc = sym_dtensor_wrap(&y, g->sp, &ty, 3, global, &to)))
        return rc;
    return sym_redistribute(&x, &y);
}

/* Before a column-parallel GEMM: the whole (N,C) input of a LayerNorm's
 * output, this PE's shard (R,C) all-gathered with SP (Shard(1) -> Replicate). */
static int col_input(const sym_model_t *m, gpt_t *g, const float *ln, const float **in) {
    const acts_t *a = g->a;
    *in = ln;
    if (!g->sp) return SYM_OK;
    *in = g->full;
    return sp_move(g, g->full, sym_replicate(), ln, sym_shard(1), a->B, a->T, m->cfg.n_embd);
}

/* After a row-parallel GEMM (its partial output in part, (N,C)), or a
 * column-parallel one's backward (its partial input gradient): the sum over
 * the team, all of it (all-reduce, in place), or with SP this PE's rows
 * (Partial(sum) -> Shard(1), a reduce-scatter into g->dsh). *out: the result. */
static int row_output(const sym_model_t *m, gpt_t *g, float *part, float **out) {
    const acts_t *a = g->a;
    int C = m->cfg.n_embd;
    *out = part;
    if (!g->sp) return tp_sum(m, part, (size_t)a->B * a->T * C);
    *out = g->dsh;
    return sp_move(g, g->dsh, sym_shard(1), part, sym_partial(SYM_PARTIAL_SUM), a->B, a->T, C);
}

/* Before a row-parallel layer's backward: the whole gradient of its output,
 * the residual gradient's shard d (R,C) all-gathered with SP. */
static int row_grad(const sym_model_t *m, gpt_t *g, const float *d, const float **out) {
    const acts_t *a = g->a;
    *out = d;
    if (!g->sp) return SYM_OK;
    *out = g->dfull;
    return sp_move(g, g->dfull, sym_replicate(), d, sym_shard(1), a->B, a->T, m->cfg.n_embd);
}

/* LayerNorm backward on this PE's R rows; with SP the weight and bias
 * gradients of those rows are summed over the team before they are added. */
static int ln_backward(const sym_model_t *m, gpt_t *g, float *dx, float *dw, float *db,
                       const float *dout, const float *x, const float *w, const float *mean,
                       const float *rstd, int64_t R) {
    int C = m->cfg.n_embd, rc;
    if (!g->sp) {
        sym_layernorm_backward(dx, dw, db, dout, x, w, mean, rstd, R, C);
        return SYM_OK;
    }
    memset(g->lngrad, 0, 2 * (size_t)C * sizeof(float));
    sym_layernorm_backward(dx, g->lngrad, g->lngrad + C, dout, x, w, mean, rstd, R, C);
    if ((rc = sym__comm_sum(m->tp, g->lngrad, 2 * (size_t)C))) return rc;
    for (int i = 0; i < C; i++) {
        dw[i] += g->lngrad[i];
        db[i] += g->lngrad[C + i];
    }
    return SYM_OK;
}

/* ---- tensor parallelism: the all-reduces overlapped with the GEMMs (tp_chunks) ---- */

enum { MAX_CHUNKS = 64 };

/* Plain TP (no SP) with cfg.tp_chunks > 1. */
static int overlapped(const sym_model_t *m, const gpt_t *g) {
    return m->tp_size > 1 && !g->sp && m->cfg.tp_chunks > 1;
}

/* Rows [*r0, *r1) of chunk k of N rows in K chunks. */
static void chunk_rows(int64_t N, int K, int k, int64_t *r0, int64_t *r1) {
    *r0 = N * k / K;
    *r1 = N * (k + 1) / K;
}

/* Wait for the n started requests; the first error (rc) wins. */
static int wait_all(sym__req_t *req, int n, int rc) {
    for (int k = 0; k < n; k++) {
        int w = sym__comm_wait(req[k]);
        if (!rc) rc = w;
    }
    return rc;
}

/* A row-parallel layer summed over the team: out (N,O) = in (N,I) @ w^T + b
 * (b on team PE 0 only, may be NULL), then row_output (*y: the sum, or with
 * SP this PE's shard). Overlapped: in row chunks, each chunk's all-reduce
 * started as soon as it is computed, while the next one computes. */
static int row_parallel(const sym_model_t *m, gpt_t *g, float *out, const float *in,
                        const float *w, const float *b, int64_t N, int64_t I, int64_t O,
                        float **y) {
    int rc;
    if (!overlapped(m, g)) {
        if ((rc = linear(out, in, w, b, N, I, O))) return rc;
        return row_output(m, g, out, y);
    }
    sym__req_t req[MAX_CHUNKS];
    int K = m->cfg.tp_chunks < MAX_CHUNKS ? m->cfg.tp_chunks : MAX_CHUNKS, n = 0;
    if (K > N) K = (int)(N > 0 ? N : 1);
    rc = SYM_OK;
    for (int k = 0; k < K && !rc; k++) {
        int64_t r0, r1;
        chunk_rows(N, K, k, &r0, &r1);
        if (r1 == r0) continue;
        if (!(rc = linear(out + r0 * O, in + r0 * I, w, b, r1 - r0, I, O)) &&
            !(rc = sym__comm_sum_start(m->tp, out + r0 * O, (size_t)((r1 - r0) * O), &req[n])))
            n++;
    }
    *y = out;
    return wait_all(req, n, rc);
}

/* A column-parallel layer's backward: dw (O,I) +=, db (O) += (may be NULL),
 * din (N,I) += dout (N,O) @ w, the partial input gradient then summed over
 * the team (row_output: *dl the sum, or with SP this PE's shard). Overlapped:
 * the input gradient first, in row chunks whose all-reduces start at once,
 * then the weight gradient while they run. */
static int col_parallel_back(const sym_model_t *m, gpt_t *g, float *din, float *dw, float *db,
                             const float *dout, const float *in, const float *w, int64_t N,
                             int64_t I, int64_t O, float **dl) {
    int rc;
    if (!overlapped(m, g)) {
        if ((rc = linear_back(din, dw, db, dout, in, w, N, I, O))) return rc;
        return row_output(m, g, din, dl);
    }
    sym__req_t req[MAX_CHUNKS];
    int K = m->cfg.tp_chunks < MAX_CHUNKS ? m->cfg.tp_chunks : MAX_CHUNKS, n = 0;
    if (K > N) K = (int)(N > 0 ? N : 1);
    sym_tensor_t tw = sym_tensor_2d((float *)w, O, I);
    rc = SYM_OK;
    for (int k = 0; k < K && !rc; k++) {
        int64_t r0, r1;
        chunk_rows(N, K, k, &r0, &r1);
        if (r1 == r0) continue;
        sym_tensor_t dy = sym_tensor_2d((float *)dout + r0 * O, r1 - r0, O);
        sym_tensor_t dx = sym_tensor_2d(din + r0 * I, r1 - r0, I);
        if (!(rc = sym_linear_backward_input(&tw, &dy, &dx)) &&
            !(rc = sym__comm_sum_start(m->tp, din + r0 * I, (size_t)((r1 - r0) * I), &req[n])))
            n++;
    }
    if (!rc) {
        sym_tensor_t x = sym_tensor_2d((float *)in, N, I), dy = sym_tensor_2d((float *)dout, N, O);
        sym_tensor_t tdw = sym_tensor_2d(dw, O, I), tdb = sym_tensor_view(db, 1, &O);
        rc = sym_linear_backward_params(&x, &dy, &tdw, db ? &tdb : NULL);
    }
    *dl = din;
    return wait_all(req, n, rc);
}

/* ---- dropout ---- */

/* Dropout site `site` (0 the embeddings, 1 + 2 l + k block l's k-th) on x
 * (B,tl,C): this PE's positions [t0, t0 + tl) of every sequence, in place;
 * mask (B,tl,C). Masks follow the token's global row (row0 + b) * T + t. */
static void dropout_forward(const sym_model_t *m, const gpt_t *g, const sym_forward_t *f,
                            int site, float *x, float *mask) {
    const acts_t *a = g->a;
    int64_t C = m->cfg.n_embd, tl = a->tl, T = a->T;
    if (tl == T) { /* the whole sequences: consecutive global rows */
        sym_dropout_forward(x, x, mask, a->B * T, C, m->cfg.dropout, g->drop_key[site], f->step,
                            f->row0 * T);
        return;
    }
    for (int64_t b = 0; b < a->B; b++)
        sym_dropout_forward(x + b * tl * C, x + b * tl * C, mask + b * tl * C, tl, C,
                            m->cfg.dropout, g->drop_key[site], f->step, (f->row0 + b) * T + a->t0);
}

/* Did the forward drop? (training with dropout) */
static int dropped(const gpt_t *g) { return g->drop_key && g->a->training; }

/* Block l's (of those held) attention dropout (dropped() only): its key, the forward's step
 * and rows, this PE's heads among the model's (tp: team PE r holds heads
 * [r NHl, (r + 1) NHl)). */
static sym_attn_dropout_t attn_dropout(const sym_model_t *m, const gpt_t *g, int l) {
    int NHl = m->cfg.n_head / m->tp_size;
    sym_attn_dropout_t d = {m->cfg.dropout, g->drop_key ? g->drop_key[1 + 2 * m->nl + l] : 0,
                            g->a->step, g->a->row0, m->tp_rank * NHl, m->cfg.n_head};
    return d;
}

/* The gradient of a dropped branch: d * mask into g->dsh (R,C), or d itself. */
static const float *dropout_backward(gpt_t *g, const float *d, const float *mask, size_t n) {
    if (!dropped(g)) return d;
    sym_dropout_backward(d, mask, g->dsh, n);
    return g->dsh;
}

/* The whole model: tokens -> logits (N,Vp). A pipeline stage runs its chunk
 * in use: tokens (embeddings) or in->x (N,C), the previous chunk's output,
 * copied in; out the logits (head) or its last block's output (N,C). With SP
 * every residual-stream tensor below is this PE's (B,tl,C) shard, R = B tl
 * rows. */
static int gpt_forward(sym_model_t *m, const sym_input_t *in, const sym_forward_t *f,
                       sym_tensor_t *logits) {
    gpt_t *g = m->impl;
    acts_t *a = g->a;
    const sym_model_config_t *c = &m->cfg;
    int B = in->rows, T = in->seq, C = c->n_embd;
    int Cl = C / m->tp_size, NHl = c->n_head / m->tp_size; /* this PE's heads */
    int embed = embeds(m), at = m->chunk_at[m->chunk], nl = m->chunk_nl[m->chunk];
    if ((embed ? !in->tokens : !in->x) || T < 1 || T > c->max_seq)
        return sym__error(SYM_EINVAL, "a GPT's forward needs %s (rows, seq) with seq in "
                                      "1..%d, not %d",
                          embed ? "tokens" : "the previous stage's activations", c->max_seq, T);
    int64_t N = (int64_t)B * T;
    for (int64_t i = 0; embed && i < N; i++)
        if (in->tokens[i] < 0 || in->tokens[i] >= c->vocab)
            return sym__error(SYM_EINVAL, "token %d at position %lld is not in the model's "
                                          "vocabulary [0, %d)",
                              (int)in->tokens[i], (long long)i, c->vocab);
    a->tokens = in->tokens;
    a->B = B;
    a->T = T;
    a->training = f->training;
    a->t0 = 0;
    a->tl = T;
    a->step = f->step;
    a->row0 = f->row0;
    if (g->sp) sym_shard_range(T, m->tp_size, m->tp_rank, &a->t0, &a->tl);
    int64_t R = (int64_t)B * a->tl;
    size_t RC = (size_t)R * C;
    int drop = dropped(g);
    const float *P = m->params, *lin;
    float *y;
    int rc;
    if (embed) {
        /* the embedding: this PE's vocabulary rows (wpe added once), summed over the team */
        sym_embed_shard_forward(g->sp ? g->scratch : a->encoded, in->tokens, P + g->wte, m->v0,
                                m->nv, m->tp_rank == 0 ? P + g->wpe : NULL, B, T, C);
        if ((rc = row_output(m, g, g->sp ? g->scratch : a->encoded, &y))) return rc;
        if (y != a->encoded) memcpy(a->encoded, y, RC * sizeof(float));
        if (drop) dropout_forward(m, g, f, 0, a->encoded, a->emask);
    } else { /* the previous stage's output: with SP this PE's positions (R rows) */
        memcpy(a->encoded, in->x, RC * sizeof(float));
    }
    for (int l = 0; l < nl; l++) {
        block_t *b = &a->block[l];
        const size_t *o = g->off[at + l];
        const float *x = l == 0 ? a->encoded : a->block[l - 1].res3;
        sym_layernorm_forward(b->ln1, b->ln1_mean, b->ln1_rstd, x, P + o[LN1W], P + o[LN1B], R, C);
        const float *pb = m->tp_rank == 0 ? P + o[PROJB] : NULL; /* a whole bias, added once */
        if ((rc = col_input(m, g, b->ln1, &lin)) ||
            (rc = linear(b->qkv, lin, P + o[QKVW], P + o[QKVB], N, C, 3 * Cl)))
            return rc;
        sym_attn_dropout_t ad = attn_dropout(m, g, at + l);
        if ((rc = sym_attention_forward_drop(b->atty, b->att, g->datt, b->qkv, B, T, Cl, NHl,
                                             drop ? &ad : NULL)))
            return rc;
        if ((rc = row_parallel(m, g, g->scratch, b->atty, P + o[PROJW], pb, N, Cl, C, &y)))
            return rc;
        if (drop) dropout_forward(m, g, f, 1 + 2 * (at + l), y, b->mask1);
        sym_residual_forward(b->res2, x, y, RC);
        sym_layernorm_forward(b->ln2, b->ln2_mean, b->ln2_rstd, b->res2, P + o[LN2W],
                              P + o[LN2B], R, C);
        if ((rc = col_input(m, g, b->ln2, &lin)) ||
            (rc = linear(b->fch, lin, P + o[FCW], P + o[FCB], N, C, 4 * Cl)))
            return rc;
        sym_gelu_tanh_forward(b->fch, b->fch_gelu, (size_t)N * 4 * Cl);
        pb = m->tp_rank == 0 ? P + o[FCPB] : NULL;
        if ((rc = row_parallel(m, g, g->scratch, b->fch_gelu, P + o[FCPW], pb, N, 4 * Cl, C, &y)))
            return rc;
        if (drop) dropout_forward(m, g, f, 2 + 2 * (at + l), y, b->mask2);
        sym_residual_forward(b->res3, b->res2, y, RC);
    }
    float *xL = nl ? a->block[nl - 1].res3 : a->encoded;
    if (!heads(m)) { /* with SP this PE's positions, as the next stage's same tp rank takes them */
        *logits = sym_tensor_2d(xL, R, C);
        return SYM_OK;
    }
    /* ln_f, then the LM head over the whole sequence (with SP ln_f's shard gathered) */
    sym_layernorm_forward(g->sp ? g->dsh : a->lnf, a->lnf_mean, a->lnf_rstd, xL, P + g->lnfw,
                          P + g->lnfb, R, C);
    if (g->sp && (rc = sp_move(g, a->lnf, sym_replicate(), g->dsh, sym_shard(1), B, T, C)))
        return rc;
    if ((rc = linear(a->logits, a->lnf, P + g->wte, NULL, N, C, m->nv))) return rc;
    *logits = sym_tensor_2d(a->logits, N, m->nv); /* this PE's columns of the vocabulary */
    return SYM_OK;
}

/* The chunk in use: dlogits (N,Vp), or on a chunk without the head the
 * gradient of its output (N,C; with SP this PE's (R,C) rows); a chunk without
 * the embeddings leaves its input's gradient (N,C) in g->dres
 * (sym_model_input_grad). With SP g->dres holds this PE's (R,C) rows. ready
 * hears each block's parameters final, the chunk's lowest last (offset 0 on
 * chunk 0, where the embeddings and the head's wte lie below the blocks). */
static int gpt_backward(sym_model_t *m, const sym_tensor_t *dlogits, sym_grad_ready_fn ready,
                        void *user) {
    gpt_t *g = m->impl;
    acts_t *a = g->a;
    const sym_model_config_t *c = &m->cfg;
    int head = heads(m), at = m->chunk_at[m->chunk], nl = m->chunk_nl[m->chunk];
    int B = a->B, T = a->T, C = c->n_embd, W = head ? (int)m->nv : C;
    int Cl = C / m->tp_size, NHl = c->n_head / m->tp_size;
    int64_t N = (int64_t)B * T, R = (int64_t)B * a->tl, rows = head ? N : R;
    if (!a->training) return sym__error(SYM_EINVAL, "backward needs a training forward pass first");
    if (dlogits->shape[0] != rows || dlogits->shape[1] != W || !sym_tensor_is_contiguous(dlogits))
        return sym__error(SYM_EINVAL, "backward: %s should be (%lld,%d) and contiguous",
                          head ? "dlogits" : "the output's gradient", (long long)rows, W);
    const float *P = m->params, *dlog = sym_tensor_f32(dlogits), *d;
    float *G = m->grads, *dl;
    size_t NC = (size_t)N * C, RC = (size_t)R * C;
    int rc;
    const float *xL = nl ? a->block[nl - 1].res3 : a->encoded;
    if (head) { /* LM head (tied to wte; its input gradient summed over the vocabulary's PEs) and ln_f */
        memset(g->dln, 0, NC * sizeof(float));
        if ((rc = col_parallel_back(m, g, g->dln, G + g->wte, NULL, dlog, a->lnf, P + g->wte, N, C,
                                    W, &dl)))
            return rc;
        memset(g->dres, 0, RC * sizeof(float));
        if ((rc = ln_backward(m, g, g->dres, G + g->lnfw, G + g->lnfb, dl, xL, P + g->lnfw,
                              a->lnf_mean, a->lnf_rstd, R)))
            return rc;
        if (ready) ready(user, g->lnfw);
    } else {
        memcpy(g->dres, dlog, RC * sizeof(float));
    }
    for (int l = nl - 1; l >= 0; l--) {
        block_t *b = &a->block[l];
        const size_t *o = g->off[at + l];
        const float *x = l == 0 ? a->encoded : a->block[l - 1].res3, *lin;
        /* dres holds d res3: through the MLP half into d res2 (the residual adds) */
        memset(g->dfch, 0, (size_t)N * 4 * Cl * sizeof(float));
        if ((rc = row_grad(m, g, dropout_backward(g, g->dres, b->mask2, RC), &d)) ||
            (rc = linear_back(g->dfch, G + o[FCPW], G + o[FCPB], d, b->fch_gelu, P + o[FCPW], N,
                              4 * Cl, C)))
            return rc;
        sym_gelu_tanh_backward(b->fch, g->dfch, g->dfch, (size_t)N * 4 * Cl);
        memset(g->dln, 0, NC * sizeof(float));
        if ((rc = col_input(m, g, b->ln2, &lin)) ||
            (rc = col_parallel_back(m, g, g->dln, G + o[FCW], G + o[FCB], g->dfch, lin,
                                    P + o[FCW], N, C, 4 * Cl, &dl)) ||
            (rc = ln_backward(m, g, g->dres, G + o[LN2W], G + o[LN2B], dl, b->res2, P + o[LN2W],
                              b->ln2_mean, b->ln2_rstd, R)))
            return rc;
        /* dres holds d res2: through the attention half into d x */
        memset(g->datty, 0, (size_t)N * Cl * sizeof(float));
        if ((rc = row_grad(m, g, dropout_backward(g, g->dres, b->mask1, RC), &d)) ||
            (rc = linear_back(g->datty, G + o[PROJW], G + o[PROJB], d, b->atty, P + o[PROJW], N,
                              Cl, C)))
            return rc;
        memset(g->dqkv, 0, (size_t)N * 3 * Cl * sizeof(float));
        sym_attn_dropout_t ad = attn_dropout(m, g, at + l);
        if ((rc = sym_attention_backward_drop(g->dqkv, g->datt, g->datty, b->qkv, b->att, B, T,
                                              Cl, NHl, dropped(g) ? &ad : NULL)))
            return rc;
        memset(g->dln, 0, NC * sizeof(float));
        if ((rc = col_input(m, g, b->ln1, &lin)) ||
            (rc = col_parallel_back(m, g, g->dln, G + o[QKVW], G + o[QKVB], g->dqkv, lin,
                                    P + o[QKVW], N, C, 3 * Cl, &dl)) ||
            (rc = ln_backward(m, g, g->dres, G + o[LN1W], G + o[LN1B], dl, x, P + o[LN1W],
                              b->ln1_mean, b->ln1_rstd, R)))
            return rc;
        if (ready) ready(user, o[LN1W]);
    }
    if (embeds(m)) { /* through the embedding dropout; the whole sequences for wte's rows */
        if (dropped(g)) sym_dropout_backward(g->dres, a->emask, g->dres, RC);
        if ((rc = row_grad(m, g, g->dres, &d))) return rc;
        sym_embed_shard_backward(G + g->wte, G + g->wpe, d, a->tokens, m->v0, m->nv, B, T, C);
    }
    if (ready && m->chunk == 0) ready(user, 0);
    return SYM_OK;
}

const sym__model_ops_t sym__gpt_ops = {gpt_declare,  gpt_init,     init_weights, gpt_forward,
                                       gpt_backward, gpt_destroy,  gpt_use_slot,
                                       gpt_input_grad, gpt_shard_copy, gpt_pieces};
