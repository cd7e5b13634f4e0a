/*
 * model.c — the MLP: parsing "mlp:784-512-256-10", laying out parameters and
 * gradients as flat arrays in one pool region, weight init, and the forward and
 * backward passes that chain the layers.
 *
 * Layout of the flat arrays (floats): layer 0's w (O,I), layer 0's b (O),
 * layer 1's w, ... The gradient array has the same layout plus SYM_GRAD_CTRL
 * control floats at its end. Both arrays are blocks of one pool, symmetric
 * when the model is built for data parallelism, so the gradient all-reduce
 * works in place.
 *
 * Hidden layer l:  z_l = linear_l(h_{l-1});  a_l = act(z_l);  h_l = dropout(a_l)
 * (h_{-1} = x; h_l = a_l when dropout is off). The last layer gives the logits.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <symtrain/nn.h>
#include <symtrain/rng.h>

#include "internal.h"

#define MAX_WIDTH 65536

typedef struct {
    int in, out;
    size_t w_off, b_off; /* in the flat arrays */
    float *z, *a, *h, *mask; /* activations (max_batch, out); hidden layers only */
} layer_t;

struct sym_model {
    sym_model_config_t cfg;
    int max_batch;
    size_t nparams;
    sym_pool_t *state; /* params + grads */
    float *params, *grads;
    sym_pool_t *acts;  /* activations and backward scratch */
    float *logits;     /* (max_batch, C) */
    float *scratch[2]; /* (max_batch, widest hidden) */
    layer_t layer[SYM_MAX_LAYERS];
    int last_batch;    /* rows of the latest forward */
    int last_training;
    uint64_t dropout_key[SYM_MAX_LAYERS];
};

/* ---- config ---- */

int sym_model_parse(const char *spec, sym_model_config_t *cfg) {
    const char *p = spec;
    if (strncmp(p, "mlp:", 4) != 0)
        return sym__error(SYM_EINVAL,
                          "--model '%s': write mlp:IN-HIDDEN-...-OUT, e.g. mlp:784-512-256-10",
                          spec);
    p += 4;
    int n = 0, dims[SYM_MAX_LAYERS + 1];
    for (;;) {
        char *end;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (end == p || errno || v < 1 || v > MAX_WIDTH)
            return sym__error(SYM_EINVAL,
                              "--model '%s': layer widths are whole numbers from 1 to %d, "
                              "joined by '-'",
                              spec, MAX_WIDTH);
        if (n == SYM_MAX_LAYERS + 1)
            return sym__error(SYM_EINVAL, "--model '%s': at most %d linear layers", spec,
                              SYM_MAX_LAYERS);
        dims[n++] = (int)v;
        p = end;
        if (*p == '\0') break;
        if (*p != '-')
            return sym__error(SYM_EINVAL, "--model '%s': unexpected '%c'; widths are joined by "
                                          "'-'", spec, *p);
        p++;
    }
    if (n < 2)
        return sym__error(SYM_EINVAL, "--model '%s': give at least an input and an output width",
                          spec);
    snprintf(cfg->spec, sizeof cfg->spec, "%s", spec);
    cfg->nlayers = n - 1;
    memcpy(cfg->dims, dims, sizeof(int) * (size_t)n);
    return SYM_OK;
}

int sym_act_parse(const char *name, sym_act_t *act) {
    if (!strcmp(name, "relu")) {
        *act = SYM_ACT_RELU;
        return SYM_OK;
    }
    if (!strcmp(name, "gelu")) {
        *act = SYM_ACT_GELU;
        return SYM_OK;
    }
    return sym__error(SYM_EINVAL, "--activation '%s': use relu or gelu", name);
}

/* ---- creation ---- */

static size_t pow2_at_least(size_t x) {
    size_t p = 64;
    while (p < x) p <<= 1;
    return p;
}

static void init_weights(sym_model_t *m) {
    for (int l = 0; l < m->cfg.nlayers; l++) {
        layer_t *L = &m->layer[l];
        sym_rng_t r = sym_rng_stream(sym_rng_key(m->cfg.seed, SYM_RNG_INIT, (uint64_t)l));
        float bound = 1.0f / sqrtf((float)L->in);
        size_t nw = (size_t)L->out * (size_t)L->in;
        for (size_t i = 0; i < nw; i++)
            m->params[L->w_off + i] = (2.0f * sym_rng_uniform(&r) - 1.0f) * bound;
        for (int i = 0; i < L->out; i++)
            m->params[L->b_off + (size_t)i] = (2.0f * sym_rng_uniform(&r) - 1.0f) * bound;
    }
}

int sym_model_create(const sym_model_config_t *cfg, int max_batch, int symmetric,
                     sym_model_t **out) {
    *out = NULL;
    if (cfg->nlayers < 1 || cfg->nlayers > SYM_MAX_LAYERS)
        return sym__error(SYM_EINVAL, "a model has 1 to %d linear layers", SYM_MAX_LAYERS);
    if (max_batch < 1) return sym__error(SYM_EINVAL, "max_batch must be at least 1");
    if (!(cfg->dropout >= 0.0f && cfg->dropout < 1.0f))
        return sym__error(SYM_EINVAL, "dropout %g is not in [0, 1)", (double)cfg->dropout);
    sym_model_t *m = calloc(1, sizeof *m);
    if (!m) return sym__error(SYM_ENOMEM, "out of memory for the model");
    m->cfg = *cfg;
    m->max_batch = max_batch;

    size_t off = 0, widest = 1;
    for (int l = 0; l < cfg->nlayers; l++) {
        layer_t *L = &m->layer[l];
        L->in = cfg->dims[l];
        L->out = cfg->dims[l + 1];
        L->w_off = off;
        off += (size_t)L->in * (size_t)L->out;
        L->b_off = off;
        off += (size_t)L->out;
        if (l < cfg->nlayers - 1 && (size_t)L->out > widest) widest = (size_t)L->out;
        m->dropout_key[l] = sym_rng_key(cfg->seed, SYM_RNG_DROPOUT, (uint64_t)l);
    }
    m->nparams = off;

    /* Parameters and gradients: two power-of-two blocks of one pool. */
    size_t block = pow2_at_least((off + SYM_GRAD_CTRL) * sizeof(float));
    int rc = sym_pool_create("parameters", 2 * block, symmetric, &m->state);
    if (rc) goto fail;
    m->params = sym_pool_alloc(m->state, off * sizeof(float));
    m->grads = sym_pool_alloc(m->state, (off + SYM_GRAD_CTRL) * sizeof(float));
    if (!m->params || !m->grads) {
        rc = SYM_ENOMEM;
        goto fail;
    }

    /* Activations: per hidden layer z, a, and (with dropout) h and the mask;
     * the logits; two scratch buffers for the backward pass. */
    size_t B = (size_t)max_batch, need = 0;
    int with_dropout = cfg->dropout > 0.0f;
    for (int l = 0; l < cfg->nlayers - 1; l++)
        need += (with_dropout ? 4 : 2) * pow2_at_least(B * (size_t)m->layer[l].out * 4);
    need += pow2_at_least(B * (size_t)cfg->dims[cfg->nlayers] * 4);
    need += 2 * pow2_at_least(B * widest * 4);
    if ((rc = sym_pool_create("activations", pow2_at_least(need), 0, &m->acts))) goto fail;
    for (int l = 0; l < cfg->nlayers - 1; l++) {
        layer_t *L = &m->layer[l];
        size_t bytes = B * (size_t)L->out * sizeof(float);
        L->z = sym_pool_alloc(m->acts, bytes);
        L->a = sym_pool_alloc(m->acts, bytes);
        if (with_dropout) {
            L->h = sym_pool_alloc(m->acts, bytes);
            L->mask = sym_pool_alloc(m->acts, bytes);
        }
        if (!L->z || !L->a || (with_dropout && (!L->h || !L->mask))) {
            rc = SYM_ENOMEM;
            goto fail;
        }
    }
    m->logits = sym_pool_alloc(m->acts, B * (size_t)cfg->dims[cfg->nlayers] * sizeof(float));
    m->scratch[0] = sym_pool_alloc(m->acts, B * widest * sizeof(float));
    m->scratch[1] = sym_pool_alloc(m->acts, B * widest * sizeof(float));
    if (!m->logits || !m->scratch[0] || !m->scratch[1]) {
        rc = SYM_ENOMEM;
        goto fail;
    }
    init_weights(m);
    *out = m;
    return SYM_OK;
fail:
    sym_model_destroy(m);
    return rc;
}

void sym_model_destroy(sym_model_t *m) {
    if (!m) return;
    sym_pool_destroy(m->acts);
    sym_pool_destroy(m->state);
    free(m);
}

/* ---- access ---- */

const sym_model_config_t *sym_model_config(const sym_model_t *m) { return &m->cfg; }
size_t sym_model_num_params(const sym_model_t *m) { return m->nparams; }
float *sym_model_params(sym_model_t *m) { return m->params; }
float *sym_model_grads(sym_model_t *m) { return m->grads; }
int sym_model_num_tensors(const sym_model_t *m) { return 2 * m->cfg.nlayers; }

void sym_model_tensor_info(const sym_model_t *m, int i, size_t *offset, size_t *numel,
                           int *is_bias) {
    const layer_t *L = &m->layer[i / 2];
    int bias = i % 2;
    if (offset) *offset = bias ? L->b_off : L->w_off;
    if (numel) *numel = bias ? (size_t)L->out : (size_t)L->out * (size_t)L->in;
    if (is_bias) *is_bias = bias;
}

static sym_tensor_t weight(float *flat, const layer_t *L) {
    return sym_tensor_2d(flat + L->w_off, L->out, L->in);
}

static sym_tensor_t bias(float *flat, const layer_t *L) {
    int64_t n = L->out;
    return sym_tensor_view(flat + L->b_off, 1, &n);
}

/* The input of layer l (B, in): x for layer 0, else the previous layer's output. */
static float *layer_input(const sym_model_t *m, const float *x, int l) {
    if (l == 0) return (float *)x;
    const layer_t *P = &m->layer[l - 1];
    return (m->last_training && m->cfg.dropout > 0.0f) ? P->h : P->a;
}

/* ---- forward ---- */

int sym_model_forward(sym_model_t *m, const float *x, int batch, const sym_forward_t *f,
                      sym_tensor_t *logits) {
    if (batch < 0 || batch > m->max_batch)
        return sym__error(SYM_EINVAL, "forward: batch %d is larger than the model's %d", batch,
                          m->max_batch);
    m->last_batch = batch;
    m->last_training = f->training;
    int nl = m->cfg.nlayers;
    for (int l = 0; l < nl; l++) {
        layer_t *L = &m->layer[l];
        sym_tensor_t in = sym_tensor_2d(layer_input(m, x, l), batch, L->in);
        sym_tensor_t out = sym_tensor_2d(l == nl - 1 ? m->logits : L->z, batch, L->out);
        sym_tensor_t w = weight(m->params, L), b = bias(m->params, L);
        int rc = sym_linear_forward(&in, &w, &b, &out);
        if (rc) return rc;
        if (l == nl - 1) break;
        size_t n = (size_t)batch * (size_t)L->out;
        if (m->cfg.act == SYM_ACT_GELU)
            sym_gelu_forward(L->z, L->a, n);
        else
            sym_relu_forward(L->z, L->a, n);
        if (f->training && m->cfg.dropout > 0.0f)
            sym_dropout_forward(L->a, L->h, L->mask, batch, L->out, m->cfg.dropout,
                                m->dropout_key[l], f->step, f->row0);
    }
    *logits = sym_tensor_2d(m->logits, batch, m->cfg.dims[nl]);
    return SYM_OK;
}

/* ---- backward ---- */

int sym_model_backward(sym_model_t *m, const float *x, const sym_tensor_t *dlogits,
                       sym_grad_ready_fn ready, void *user) {
    int B = m->last_batch, nl = m->cfg.nlayers;
    if (!m->last_training)
        return sym__error(SYM_EINVAL, "backward needs a training forward pass first");
    if (dlogits->shape[0] != B || dlogits->shape[1] != m->cfg.dims[nl])
        return sym__error(SYM_EINVAL, "backward: dlogits should be (%d,%d)", B, m->cfg.dims[nl]);
    sym_tensor_t dcur = *dlogits;
    memset(m->grads, 0, m->nparams * sizeof(float));
    for (int l = nl - 1; l >= 0; l--) {
        layer_t *L = &m->layer[l];
        sym_tensor_t in = sym_tensor_2d(layer_input(m, x, l), B, L->in);
        sym_tensor_t dw = weight(m->grads, L), db = bias(m->grads, L);
        int rc = sym_linear_backward_params(&in, &dcur, &dw, &db);
        if (rc) return rc;
        if (ready) ready(user, L->w_off); /* this layer and all after it are final */
        if (l == 0) break;
        /* Through layer l's input: the previous layer's dropout and activation. */
        layer_t *P = &m->layer[l - 1];
        sym_tensor_t w = weight(m->params, L);
        sym_tensor_t dh = sym_tensor_2d(m->scratch[l % 2], B, L->in);
        size_t n = (size_t)B * (size_t)L->in;
        memset(dh.data, 0, n * sizeof(float));
        if ((rc = sym_linear_backward_input(&w, &dcur, &dh))) return rc;
        float *d = dh.data;
        if (m->cfg.dropout > 0.0f) sym_dropout_backward(d, P->mask, d, n);
        if (m->cfg.act == SYM_ACT_GELU)
            sym_gelu_backward(P->z, d, d, n);
        else
            sym_relu_backward(P->z, d, d, n);
        dcur = dh;
    }
    return SYM_OK;
}
