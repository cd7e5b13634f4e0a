/*
 * model.c — what every model shares: the spec parser that picks the kind,
 * the table of named parameters laid out in one flat array (and a gradient
 * array of the same layout plus SYM_GRAD_CTRL control floats), both blocks of
 * one pool that is symmetric when the model is built for data parallelism,
 * the accessors, and autoregressive sampling. The kinds (mlp.c, gpt.c) add
 * their parameters, activations and passes through sym__model_ops_t.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <symtrain/optim.h>
#include <symtrain/rng.h>

#include "internal.h"
#include "models/model.h"

/* ---- config ---- */

int sym_model_parse(const char *spec, sym_model_config_t *cfg) {
    if (strlen(spec) >= sizeof cfg->spec)
        return sym__error(SYM_EINVAL, "--model '%.40s...': a spec is at most %zu characters",
                          spec, sizeof cfg->spec - 1);
    if (!strncmp(spec, "mlp:", 4)) return sym__mlp_parse(spec, spec + 4, cfg);
    if (!strncmp(spec, "gpt:", 4)) return sym__gpt_parse(spec, spec + 4, cfg);
    return sym__error(SYM_EINVAL,
                      "--model '%s': write mlp:IN-HIDDEN-...-OUT (e.g. mlp:784-512-256-10), "
                      "gpt:d12|d24|d36|d48, or gpt:L=4,C=256,H=4,V=256,T=256",
                      spec);
}

/* ---- the parameter table ---- */

size_t sym__pow2_at_least(size_t x) {
    size_t p = 64;
    while (p < x) p <<= 1;
    return p;
}

size_t sym__model_param(sym_model_t *m, const char *name, int ndim, const int64_t *shape) {
    if (m->nparam == m->param_cap) {
        int cap = m->param_cap ? 2 * m->param_cap : 16;
        sym_param_t *p = realloc(m->param, (size_t)cap * sizeof *p);
        if (!p) {
            sym__error(SYM_ENOMEM, "out of memory for the parameter table");
            return (size_t)-1;
        }
        m->param = p;
        m->param_cap = cap;
    }
    sym_param_t *p = &m->param[m->nparam++];
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "%s", name);
    p->ndim = ndim;
    p->numel = 1;
    for (int d = 0; d < ndim; d++) {
        p->shape[d] = shape[d];
        p->numel *= (size_t)shape[d];
    }
    p->offset = m->nparams;
    p->decay = ndim >= 2;
    p->tp_dim = -1;
    p->index = m->nparam - 1;
    m->nparams += p->numel;
    return p->offset;
}

/* ---- creation ---- */

/* With tensor parallelism: the 1-PE model's table (declared on a model of
 * one PE that gets no arrays), for the whole tensors of checkpoints. */
static int whole_table(sym_model_t *m) {
    sym_model_t one;
    memset(&one, 0, sizeof one);
    one.cfg = m->cfg;
    one.ops = m->ops;
    one.tp = SHMEM_TEAM_INVALID;
    one.tp_size = 1;
    sym__model_set_chunks(&one, NULL); /* the whole model, whatever stage m is */
    one.embed = one.head = one.slots = 1;
    int rc = one.ops->declare(&one);
    one.ops->destroy(&one);
    if (rc) {
        free(one.param);
        return rc;
    }
    m->full = one.param;
    m->full_nparams = one.nparams;
    m->full_ntensors = one.nparam;
    return SYM_OK;
}

int sym_model_create(const sym_model_config_t *cfg, int max_rows, int symmetric,
                     sym_model_t **out) {
    return sym_model_create_tp(cfg, max_rows, symmetric, SHMEM_TEAM_INVALID, out);
}

/* The whole model, its TP part, or a pipeline stage (st, GPT only). */
static int create(const sym_model_config_t *cfg, int max_rows, int symmetric, shmem_team_t tp,
                  const sym_gpt_stage_t *st, sym_model_t **out) {
    *out = NULL;
    if (max_rows < 0) return sym__error(SYM_EINVAL, "max_rows cannot be negative");
    int tp_size = tp == SHMEM_TEAM_INVALID ? 1 : shmem_team_n_pes(tp);
    if (tp != SHMEM_TEAM_INVALID && shmem_team_my_pe(tp) < 0)
        return sym__error(SYM_EINVAL, "tensor parallelism: this PE is not in the TP team");
    if (tp_size > 1 && cfg->kind != SYM_MODEL_GPT)
        return sym__error(SYM_EINVAL, "tensor parallelism splits a GPT; '%s' is not one",
                          cfg->spec);
    if (tp_size > 1 && (cfg->n_head % tp_size || cfg->n_embd % tp_size))
        return sym__error(SYM_EINVAL, "tensor parallelism over %d PEs needs the heads (%d) and "
                          "the width (%d) divisible by %d", tp_size, cfg->n_head, cfg->n_embd,
                          tp_size);
    if (st && cfg->kind != SYM_MODEL_GPT)
        return sym__error(SYM_EINVAL, "pipeline parallelism splits a GPT; '%s' is not one",
                          cfg->spec);
    if (st && (st->chunks < 1 || st->chunks > SYM_GPT_MAX_CHUNKS || st->slots < 1))
        return sym__error(SYM_EINVAL, "pipeline stage: %d chunks with %d activation slots is "
                          "not a stage (1 to %d chunks, at least one slot)", st->chunks,
                          st->slots, SYM_GPT_MAX_CHUNKS);
    for (int k = 0, end = 0; st && k < st->chunks; k++) {
        if (st->first_layer[k] < end || st->layers[k] < 0 ||
            st->first_layer[k] + st->layers[k] > cfg->n_layer)
            return sym__error(SYM_EINVAL, "pipeline stage: chunk %d's blocks [%d, %d) of a "
                              "%d-block GPT are not after the previous chunk's, inside the model",
                              k, st->first_layer[k], st->first_layer[k] + st->layers[k],
                              cfg->n_layer);
        end = st->first_layer[k] + st->layers[k];
    }
    if (tp_size > 1 && tp_size > cfg->vocab)
        return sym__error(SYM_EINVAL, "tensor parallelism over %d PEs splits the vocabulary "
                          "(%d tokens): every PE needs at least one", tp_size, cfg->vocab);
    sym_model_t *m = calloc(1, sizeof *m);
    if (!m) return sym__error(SYM_ENOMEM, "out of memory for the model");
    m->cfg = *cfg;
    m->max_rows = max_rows;
    m->tp = tp_size > 1 ? tp : SHMEM_TEAM_INVALID;
    m->tp_size = tp_size;
    m->tp_rank = tp_size > 1 ? shmem_team_my_pe(tp) : 0;
    sym__model_set_chunks(m, st);
    m->embed = st ? st->embed : 1;
    m->head = st ? st->head : 1;
    m->slots = st ? st->slots : 1;
    m->ops = cfg->kind == SYM_MODEL_GPT ? &sym__gpt_ops : &sym__mlp_ops;
    int rc = tp_size > 1 || st ? whole_table(m) : SYM_OK; /* a part: the whole one's table too */
    if (rc || (rc = m->ops->declare(m))) goto fail;
    /* Parameters and gradients: two power-of-two blocks of one pool, sized for
     * the largest stage when the stages share one symmetric layout (then the
     * gradients start at the same offset on every stage). */
    size_t room = st && st->reserve > m->nparams ? st->reserve : m->nparams;
    size_t block = sym__pow2_at_least((room + SYM_GRAD_CTRL) * sizeof(float));
    if ((rc = sym_pool_create("parameters", 2 * block, symmetric, &m->state))) goto fail;
    m->params = sym_pool_alloc(m->state, room * sizeof(float));
    m->grads = sym_pool_alloc(m->state, (room + SYM_GRAD_CTRL) * sizeof(float));
    if (!m->params || !m->grads) {
        rc = SYM_ENOMEM;
        goto fail;
    }
    if ((rc = m->ops->init(m)) || (!cfg->undrawn && (rc = m->ops->weights(m)))) goto fail;
    *out = m;
    return SYM_OK;
fail:
    sym_model_destroy(m);
    return rc;
}

int sym_model_create_tp(const sym_model_config_t *cfg, int max_rows, int symmetric,
                        shmem_team_t tp, sym_model_t **out) {
    return create(cfg, max_rows, symmetric, tp, NULL, out);
}

int sym_model_create_stage(const sym_model_config_t *cfg, int max_rows, int symmetric,
                           shmem_team_t tp, const sym_gpt_stage_t *st, sym_model_t **out) {
    return create(cfg, max_rows, symmetric, tp, st, out);
}

size_t sym__model_stage_params(const sym_model_config_t *cfg, int tp_size,
                               const sym_gpt_stage_t *st) {
    sym_model_t m;
    memset(&m, 0, sizeof m);
    m.cfg = *cfg;
    m.tp_size = tp_size;
    sym__model_set_chunks(&m, st);
    m.embed = st->embed;
    m.head = st->head;
    m.slots = st->slots;
    m.ops = &sym__gpt_ops;
    size_t n = m.ops->declare(&m) ? 0 : m.nparams;
    m.ops->destroy(&m);
    free(m.param);
    return n;
}

void sym__model_set_chunks(sym_model_t *m, const sym_gpt_stage_t *st) {
    m->chunks = st ? st->chunks : 1;
    m->chunk = 0;
    m->nl = 0;
    for (int k = 0; k < m->chunks; k++) {
        m->chunk_l0[k] = st ? st->first_layer[k] : 0;
        m->chunk_nl[k] = st ? st->layers[k] : m->cfg.n_layer;
        m->chunk_at[k] = m->nl;
        m->nl += m->chunk_nl[k];
    }
}

void sym_model_use_chunk(sym_model_t *m, int chunk) {
    if (chunk >= 0 && chunk < m->chunks) m->chunk = chunk;
}

void sym_model_use_slot(sym_model_t *m, int slot) {
    if (m->ops->use_slot && slot >= 0 && slot < m->slots) m->ops->use_slot(m, slot);
}

const float *sym_model_input_grad(const sym_model_t *m) {
    return m->ops->input_grad && !(m->embed && m->chunk == 0) ? m->ops->input_grad(m) : NULL;
}

int sym_model_draw_weights(sym_model_t *m) { return m->ops->weights(m); }

void sym_model_destroy(sym_model_t *m) {
    if (!m) return;
    if (m->ops && m->ops->destroy) m->ops->destroy(m);
    sym_pool_destroy(m->state);
    free(m->param);
    free(m->full);
    free(m);
}

/* ---- access ---- */

const sym_model_config_t *sym_model_config(const sym_model_t *m) { return &m->cfg; }
size_t sym_model_num_params(const sym_model_t *m) { return m->nparams; }

void sym_model_memory(const sym_model_t *m, size_t *params, size_t *grads, size_t *acts) {
    *params = sym_pool_block_bytes(m->state, m->params);
    *grads = sym_pool_block_bytes(m->state, m->grads);
    *acts = m->acts ? sym_pool_used_bytes(m->acts) : 0;
}
float *sym_model_params(sym_model_t *m) { return m->params; }
float *sym_model_grads(sym_model_t *m) { return m->grads; }
void sym_model_zero_grads(sym_model_t *m) { memset(m->grads, 0, m->nparams * sizeof(float)); }
int sym_model_num_tensors(const sym_model_t *m) { return m->nparam; }
const sym_param_t *sym_model_param(const sym_model_t *m, int i) { return &m->param[i]; }

size_t sym_model_full_num_params(const sym_model_t *m) {
    return m->full ? m->full_nparams : m->nparams;
}

const sym_param_t *sym_model_full_param(const sym_model_t *m, int i) {
    return m->full ? &m->full[m->param[i].index] : &m->param[i];
}

const sym_param_t *sym_model_whole_table(const sym_model_t *m, int *n) {
    *n = m->full ? m->full_ntensors : m->nparam;
    return m->full ? m->full : m->param;
}

const sym_param_t *sym_model_find_param(const sym_model_t *m, const char *name) {
    for (int i = 0; i < m->nparam; i++)
        if (!strcmp(m->param[i].name, name)) return &m->param[i];
    return NULL;
}

int sym_model_classes(const sym_model_t *m) {
    return m->cfg.kind == SYM_MODEL_GPT ? m->cfg.vocab : m->cfg.dims[m->cfg.nlayers];
}

int sym_model_logit_width(const sym_model_t *m) {
    return m->cfg.kind == SYM_MODEL_GPT ? (int)m->nv : m->cfg.dims[m->cfg.nlayers];
}

/* ---- tensor parallelism: whole tensors, the loss, the gradient norm ---- */

int sym_model_tp_size(const sym_model_t *m) { return m->tp_size; }

int sym_model_gather(sym_model_t *m, const float *part, float *full) {
    if (m->tp_size == 1) {
        memcpy(full, part, m->nparams * sizeof *full);
        return SYM_OK;
    }
    /* Each PE writes its parts (the whole tensors: PE 0 only) into zeros; the
     * sum over the team is every tensor whole. */
    memset(full, 0, m->full_nparams * sizeof *full);
    for (int i = 0; i < m->nparam; i++)
        if (m->param[i].tp_dim >= 0 || m->tp_rank == 0)
            m->ops->shard_copy(m, i, m->tp_rank, full + m->full[m->param[i].index].offset,
                               (float *)part + m->param[i].offset, 1);
    return sym__comm_sum(m->tp, full, m->full_nparams);
}

void sym_model_scatter(const sym_model_t *m, const float *full, float *part) {
    if (m->tp_size == 1) {
        memcpy(part, full, m->nparams * sizeof *part);
        return;
    }
    for (int i = 0; i < m->nparam; i++)
        m->ops->shard_copy(m, i, m->tp_rank, (float *)full + m->full[m->param[i].index].offset,
                           part + m->param[i].offset, 0);
}

int sym_model_param_pieces(const sym_model_t *m, int i, sym_param_piece_t *pc) {
    if (m->tp_size > 1 && m->ops->pieces) return m->ops->pieces(m, i, pc);
    const sym_param_t *p = &m->param[i];
    memset(pc, 0, sizeof *pc);
    for (int d = 0; d < p->ndim; d++) pc->count[d] = p->shape[d];
    return 1;
}

double sym_model_xent(const sym_model_t *m, const sym_tensor_t *logits, const int32_t *labels,
                      float grad_scale, sym_tensor_t *dlogits, int64_t *correct) {
    if (m->tp_size == 1)
        return sym_softmax_xent(logits, labels, sym_model_classes(m), grad_scale, dlogits,
                                correct);
    return sym_softmax_xent_shard(logits, labels, m->v0, m->cfg.vocab, m->tp, grad_scale,
                                  dlogits, correct);
}

double sym_model_grad_norm(const sym_model_t *m, const float *g) {
    if (m->tp_size == 1) return sym_grad_norm(g, m->nparams);
    double sq[2] = {0, 0}; /* the split tensors' squares, summed over the team; the whole ones' */
    for (int i = 0; i < m->nparam; i++) {
        const sym_param_t *p = &m->param[i];
        double s = sym_grad_norm(g + p->offset, p->numel);
        sq[p->tp_dim < 0] += s * s;
    }
    if (sym__comm_sum_f64(m->tp, sq, 1)) return NAN;
    return sqrt(sq[0] + sq[1]);
}

double sym_model_flops_per_token(const sym_model_t *m, int seq) {
    double f = 6.0 * (double)m->nparams;
    if (m->cfg.kind == SYM_MODEL_GPT) f += 6.0 * m->cfg.n_layer * (double)seq * m->cfg.n_embd;
    return f;
}

/* ---- the passes ---- */

int sym_model_forward(sym_model_t *m, const sym_input_t *in, const sym_forward_t *f,
                      sym_tensor_t *logits) {
    if (in->rows < 0 || in->rows > m->max_rows)
        return sym__error(SYM_EINVAL, "forward: %d rows is more than the model's %d", in->rows,
                          m->max_rows);
    return m->ops->forward(m, in, f, logits);
}

int sym_model_backward(sym_model_t *m, const sym_tensor_t *dlogits, sym_grad_ready_fn ready,
                       void *user) {
    return m->ops->backward(m, dlogits, ready, user);
}

/* ---- sampling ---- */

typedef struct {
    float logit;
    int32_t token;
} cand_t;

static int by_logit_desc(const void *a, const void *b) {
    const cand_t *x = a, *y = b;
    if (x->logit != y->logit) return x->logit < y->logit ? 1 : -1;
    return x->token < y->token ? -1 : x->token > y->token; /* ties: the lower token first */
}

int sym_model_generate(sym_model_t *m, int32_t *tokens, int n, int max_new, float temperature,
                       int top_k, uint64_t seed, void (*each)(void *user, int32_t token),
                       void *user) {
    if (m->cfg.kind != SYM_MODEL_GPT)
        return sym__error(SYM_EINVAL, "sampling needs a GPT model, not %s", m->cfg.spec);
    if (m->tp_size > 1)
        return sym__error(SYM_EINVAL, "sampling reads whole logits rows: give it the 1-PE model "
                                      "(sym_model_gather the parameters into one)");
    if (n < 1) return sym__error(SYM_EINVAL, "sampling needs a prompt of at least one token");
    if (!(temperature >= 0) || !isfinite(temperature))
        return sym__error(SYM_EINVAL, "--temperature must be 0 or more");
    int V = m->cfg.vocab, T = m->cfg.max_seq;
    for (int i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= V)
            return sym__error(SYM_EINVAL, "prompt token %d is not in the vocabulary [0, %d)",
                              (int)tokens[i], V);
    cand_t *c = malloc((size_t)V * sizeof *c);
    if (!c) return sym__error(SYM_ENOMEM, "out of memory for sampling");
    int k = top_k > 0 && top_k < V ? top_k : V;
    uint64_t key = sym_rng_key(seed, SYM_RNG_SAMPLE, 0);
    int rc = SYM_OK;
    for (int t = n; t < n + max_new; t++) {
        int len = t < T ? t : T;
        sym_input_t in = {1, len, NULL, tokens + t - len};
        sym_forward_t f = {0, 0, 0};
        sym_tensor_t logits;
        if ((rc = sym_model_forward(m, &in, &f, &logits))) break;
        const float *z = sym_tensor_f32(&logits) + (int64_t)(len - 1) * logits.stride[0];
        for (int v = 0; v < V; v++) c[v] = (cand_t){z[v], v};
        qsort(c, (size_t)V, sizeof *c, by_logit_desc);
        int32_t pick = c[0].token;
        if (temperature > 0) {
            /* softmax over the top k, in double, then one uniform draw */
            double sum = 0;
            for (int i = 0; i < k; i++) sum += exp(((double)c[i].logit - c[0].logit) / temperature);
            double u = (double)(sym_rng_hash(key, (uint64_t)t) >> 11) * 0x1.0p-53 * sum, acc = 0;
            for (int i = 0; i < k; i++) {
                acc += exp(((double)c[i].logit - c[0].logit) / temperature);
                pick = c[i].token;
                if (acc > u) break;
            }
        }
        tokens[t] = pick;
        if (each) each(user, pick);
    }
    free(c);
    return rc;
}
