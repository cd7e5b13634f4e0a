/*
 * mlp.c — the MLP: parsing "mlp:784-512-256-10", its parameters (fc0.weight
 * (O,I), fc0.bias (O), fc1.weight, ... in the flat arrays of model.c), weight
 * init, and the forward and backward passes that chain the layers.
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
#include "models/model.h"

#define MAX_WIDTH 65536

typedef struct {
    int in, out;
    size_t w_off, b_off; /* in the flat arrays */
    float *z, *a, *h, *mask; /* activations (max_rows, out); hidden layers only */
} layer_t;

typedef struct {
    sym_pool_t *acts;  /* activations and backward scratch */
    float *logits;     /* (max_rows, C) */
    float *scratch[2]; /* (max_rows, widest hidden) */
    layer_t layer[SYM_MAX_LAYERS];
    const float *x;    /* the latest forward's input (rows, D0) */
    int last_batch;    /* rows of the latest forward */
    int last_training;
    uint64_t dropout_key[SYM_MAX_LAYERS];
} mlp_t;

/* ---- config ---- */

int sym__mlp_parse(const char *spec, const char *p, sym_model_config_t *cfg) {
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
    cfg->kind = SYM_MODEL_MLP;
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

static int mlp_declare(sym_model_t *m) {
    const sym_model_config_t *cfg = &m->cfg;
    if (cfg->nlayers < 1 || cfg->nlayers > SYM_MAX_LAYERS)
        return sym__error(SYM_EINVAL, "a model has 1 to %d linear layers", SYM_MAX_LAYERS);
    if (!(cfg->dropout >= 0.0f && cfg->dropout < 1.0f))
        return sym__error(SYM_EINVAL, "dropout %g is not in [0, 1)", (double)cfg->dropout);
    mlp_t *n = calloc(1, sizeof *n);
    if (!n) return sym__error(SYM_ENOMEM, "out of memory for the model");
    m->impl = n;
    for (int l = 0; l < cfg->nlayers; l++) {
        layer_t *L = &n->layer[l];
        L->in = cfg->dims[l];
        L->out = cfg->dims[l + 1];
        char name[32];
        int64_t wshape[2] = {L->out, L->in}, bshape[1] = {L->out};
        snprintf(name, sizeof name, "fc%d.weight", l);
        if ((L->w_off = sym__model_param(m, name, 2, wshape)) == (size_t)-1) return SYM_ENOMEM;
        snprintf(name, sizeof name, "fc%d.bias", l);
        if ((L->b_off = sym__model_param(m, name, 1, bshape)) == (size_t)-1) return SYM_ENOMEM;
        n->dropout_key[l] = sym_rng_key(cfg->seed, SYM_RNG_DROPOUT, (uint64_t)l);
    }
    return SYM_OK;
}

static int init_weights(sym_model_t *m) {
    mlp_t *n = m->impl;
    for (int l = 0; l < m->cfg.nlayers; l++) {
        layer_t *L = &n->layer[l];
        sym_rng_t r = sym_rng_stream(sym_rng_key(m->cfg.seed, SYM_RNG_INIT, (uint64_t)l));
        float bound = 1.0f / sqrtf((float)L->in);
        size_t nw = (size_t)L->out * (size_t)L->in;
        for (size_t i = 0; i < nw; i++)
            m->params[L->w_off + i] = (2.0f * sym_rng_uniform(&r) - 1.0f) * bound;
        for (int i = 0; i < L->out; i++)
            m->params[L->b_off + (size_t)i] = (2.0f * sym_rng_uniform(&r) - 1.0f) * bound;
    }
    return SYM_OK;
}

static int mlp_init(sym_model_t *m) {
    mlp_t *n = m->impl;
    const sym_model_config_t *cfg = &m->cfg;
    if (m->max_rows == 0) return SYM_OK; /* parameters only */
    /* Activations: per hidden layer z, a, and (with dropout) h and the mask;
     * the logits; two scratch buffers for the backward pass. */
    size_t B = (size_t)m->max_rows, need = 0, widest = 1;
    int with_dropout = cfg->dropout > 0.0f;
    for (int l = 0; l < cfg->nlayers - 1; l++) {
        size_t w = (size_t)n->layer[l].out;
        need += (with_dropout ? 4 : 2) * sym__pow2_at_least(B * w * 4);
        if (w > widest) widest = w;
    }
    need += sym__pow2_at_least(B * (size_t)cfg->dims[cfg->nlayers] * 4);
    need += 2 * sym__pow2_at_least(B * widest * 4);
    int rc;
    if ((rc = sym_pool_create("activations", sym__pow2_at_least(need), 0, &n->acts))) return rc;
    m->acts = n->acts;
    for (int l = 0; l < cfg->nlayers - 1; l++) {
        layer_t *L = &n->layer[l];
        size_t bytes = B * (size_t)L->out * sizeof(float);
        L->z = sym_pool_alloc(n->acts, bytes);
        L->a = sym_pool_alloc(n->acts, bytes);
        if (with_dropout) {
            L->h = sym_pool_alloc(n->acts, bytes);
            L->mask = sym_pool_alloc(n->acts, bytes);
        }
        if (!L->z || !L->a || (with_dropout && (!L->h || !L->mask))) return SYM_ENOMEM;
    }
    n->logits = sym_pool_alloc(n->acts, B * (size_t)cfg->dims[cfg->nlayers] * sizeof(float));
    n->scratch[0] = sym_pool_alloc(n->acts, B * widest * sizeof(float));
    n->scratch[1] = sym_pool_alloc(n->acts, B * widest * sizeof(float));
    if (!n->logits || !n->scratch[0] || !n->scratch[1]) return SYM_ENOMEM;
    return SYM_OK;
}

static void mlp_destroy(sym_model_t *m) {
    mlp_t *n = m->impl;
    if (!n) return;
    sym_pool_destroy(n->acts);
    m->acts = NULL;
    free(n);
    m->impl = NULL;
}

static sym_tensor_t weight(float *flat, const layer_t *L) {
    return sym_tensor_2d(flat + L->w_off, L->out, L->in);
}

static sym_tensor_t bias(float *flat, const layer_t *L) {
    int64_t n = L->out;
    return sym_tensor_view(flat + L->b_off, 1, &n);
}

/* The input of layer l (B, in): x for layer 0, else the previous layer's output. */
static float *layer_input(const sym_model_t *m, int l) {
    const mlp_t *n = m->impl;
    if (l == 0) return (float *)n->x;
    const layer_t *P = &n->layer[l - 1];
    return (n->last_training && m->cfg.dropout > 0.0f) ? P->h : P->a;
}

/* ---- forward ---- */

static int mlp_forward(sym_model_t *m, const sym_input_t *in, const sym_forward_t *f,
                       sym_tensor_t *logits) {
    mlp_t *n = m->impl;
    int batch = in->rows;
    if (!in->x) return sym__error(SYM_EINVAL, "an MLP's forward needs inputs x");
    n->x = in->x;
    n->last_batch = batch;
    n->last_training = f->training;
    int nl = m->cfg.nlayers;
    for (int l = 0; l < nl; l++) {
        layer_t *L = &n->layer[l];
        sym_tensor_t x = sym_tensor_2d(layer_input(m, l), batch, L->in);
        sym_tensor_t out = sym_tensor_2d(l == nl - 1 ? n->logits : L->z, batch, L->out);
        sym_tensor_t w = weight(m->params, L), b = bias(m->params, L);
        int rc = sym_linear_forward(&x, &w, &b, &out);
        if (rc) return rc;
        if (l == nl - 1) break;
        size_t cnt = (size_t)batch * (size_t)L->out;
        if (m->cfg.act == SYM_ACT_GELU)
            sym_gelu_forward(L->z, L->a, cnt);
        else
            sym_relu_forward(L->z, L->a, cnt);
        if (f->training && m->cfg.dropout > 0.0f)
            sym_dropout_forward(L->a, L->h, L->mask, batch, L->out, m->cfg.dropout,
                                n->dropout_key[l], f->step, f->row0);
    }
    *logits = sym_tensor_2d(n->logits, batch, m->cfg.dims[nl]);
    return SYM_OK;
}

/* ---- backward ---- */

static int mlp_backward(sym_model_t *m, const sym_tensor_t *dlogits, sym_grad_ready_fn ready,
                        void *user) {
    mlp_t *n = m->impl;
    int B = n->last_batch, nl = m->cfg.nlayers;
    if (!n->last_training)
        return sym__error(SYM_EINVAL, "backward needs a training forward pass first");
    if (dlogits->shape[0] != B || dlogits->shape[1] != m->cfg.dims[nl])
        return sym__error(SYM_EINVAL, "backward: dlogits should be (%d,%d)", B, m->cfg.dims[nl]);
    sym_tensor_t dcur = *dlogits;
    for (int l = nl - 1; l >= 0; l--) {
        layer_t *L = &n->layer[l];
        sym_tensor_t x = sym_tensor_2d(layer_input(m, l), B, L->in);
        sym_tensor_t dw = weight(m->grads, L), db = bias(m->grads, L);
        int rc = sym_linear_backward_params(&x, &dcur, &dw, &db);
        if (rc) return rc;
        if (ready) ready(user, L->w_off); /* this layer and all after it are final */
        if (l == 0) break;
        /* Through layer l's input: the previous layer's dropout and activation. */
        layer_t *P = &n->layer[l - 1];
        sym_tensor_t w = weight(m->params, L);
        sym_tensor_t dh = sym_tensor_2d(n->scratch[l % 2], B, L->in);
        size_t cnt = (size_t)B * (size_t)L->in;
        float *d = dh.data;
        memset(d, 0, cnt * sizeof(float));
        if ((rc = sym_linear_backward_input(&w, &dcur, &dh))) return rc;
        if (m->cfg.dropout > 0.0f) sym_dropout_backward(d, P->mask, d, cnt);
        if (m->cfg.act == SYM_ACT_GELU)
            sym_gelu_backward(P->z, d, d, cnt);
        else
            sym_relu_backward(P->z, d, d, cnt);
        dcur = dh;
    }
    return SYM_OK;
}

const sym__model_ops_t sym__mlp_ops = {mlp_declare, mlp_init, init_weights, mlp_forward, mlp_backward,
                                       mlp_destroy, NULL,     NULL,        NULL,
                                       NULL}; /* never split */
