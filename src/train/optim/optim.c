/*
 * optim.c — SGD with momentum and AdamW over a flat parameter array, and their
 * state as bytes for checkpoints (see symtrain/optim.h for the update rules).
 *
 * State layout (little-endian, as in memory): header {magic "SYMO", kind,
 * reserved, n (u64), t (u64)}, then the arrays: SGD's momentum buffer (n), or
 * AdamW's m (n) and v (n).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <symtrain/optim.h>

#include "core/parallel.h"
#include "internal.h"
#include "util/util.h"

#define STATE_MAGIC 0x4F4D5953u /* "SYMO" */

typedef struct {
    uint32_t magic, kind, reserved0, reserved1;
    uint64_t n, t;
} state_hdr_t;

typedef struct {
    size_t off, len;
} range_t;

struct sym_optim {
    sym_optim_config_t cfg;
    size_t n;
    uint64_t t;
    float *buf0; /* SGD momentum, or AdamW m */
    float *buf1; /* AdamW v */
    range_t *no_decay;
    int n_no_decay;
    int owns; /* the state arrays are ours to free (not sym_optim_create_on's) */
};

const char *sym_optim_name(sym_optim_kind_t kind) { return kind == SYM_OPT_SGD ? "sgd" : "adamw"; }

int sym_optim_parse(const char *name, sym_optim_kind_t *kind) {
    if (!strcmp(name, "sgd")) {
        *kind = SYM_OPT_SGD;
        return SYM_OK;
    }
    if (!strcmp(name, "adamw")) {
        *kind = SYM_OPT_ADAMW;
        return SYM_OK;
    }
    return sym__error(SYM_EINVAL, "--optimizer '%s': use sgd or adamw", name);
}

/* ---- life cycle ---- */

int sym_optim_create(const sym_optim_config_t *cfg, size_t n, sym_optim_t **out) {
    *out = NULL;
    sym_optim_t *o = calloc(1, sizeof *o);
    if (!o) return sym__error(SYM_ENOMEM, "out of memory for the optimizer");
    o->cfg = *cfg;
    o->n = n;
    o->owns = 1;
    o->buf0 = sym__calloc_large(n ? n : 1, sizeof(float));
    if (cfg->kind == SYM_OPT_ADAMW) o->buf1 = sym__calloc_large(n ? n : 1, sizeof(float));
    if (!o->buf0 || (cfg->kind == SYM_OPT_ADAMW && !o->buf1)) {
        sym_optim_destroy(o);
        return sym__error(SYM_ENOMEM, "out of memory for the optimizer state (%zu floats)", n);
    }
    /* zero already; faulted in now, on the threads, rather than page by page
     * by the first step or a restore */
    sym__parallel_touch(o->buf0, n * sizeof(float));
    if (o->buf1) sym__parallel_touch(o->buf1, n * sizeof(float));
    *out = o;
    return SYM_OK;
}

int sym_optim_create_on(const sym_optim_config_t *cfg, size_t n, float *buf0, float *buf1,
                        sym_optim_t **out) {
    *out = NULL;
    if (!buf0 || (cfg->kind == SYM_OPT_ADAMW && !buf1))
        return sym__error(SYM_EINVAL, "sym_optim_create_on: AdamW needs two state arrays, SGD one");
    sym_optim_t *o = calloc(1, sizeof *o);
    if (!o) return sym__error(SYM_ENOMEM, "out of memory for the optimizer");
    o->cfg = *cfg;
    o->n = n;
    o->buf0 = buf0;
    o->buf1 = cfg->kind == SYM_OPT_ADAMW ? buf1 : NULL;
    *out = o;
    return SYM_OK;
}

void sym_optim_destroy(sym_optim_t *o) {
    if (!o) return;
    if (o->owns) {
        free(o->buf0);
        free(o->buf1);
    }
    free(o->no_decay);
    free(o);
}

static int cmp_range(const void *a, const void *b) {
    const range_t *x = a, *y = b;
    return x->off < y->off ? -1 : x->off > y->off;
}

int sym_optim_no_decay(sym_optim_t *o, size_t off, size_t len) {
    if (off > o->n || len > o->n - off)
        return sym__error(SYM_EINVAL, "no-decay range [%zu, %zu) is outside %zu parameters", off,
                          off + len, o->n);
    range_t *r = realloc(o->no_decay, sizeof *r * (size_t)(o->n_no_decay + 1));
    if (!r) return sym__error(SYM_ENOMEM, "out of memory");
    o->no_decay = r;
    r[o->n_no_decay++] = (range_t){off, len};
    qsort(r, (size_t)o->n_no_decay, sizeof *r, cmp_range); /* sym_optim_step walks them in order */
    return SYM_OK;
}

uint64_t sym_optim_steps(const sym_optim_t *o) { return o->t; }
float *sym_optim_buffer(sym_optim_t *o, int i) { return i == 0 ? o->buf0 : i == 1 ? o->buf1 : NULL; }
void sym_optim_set_steps(sym_optim_t *o, uint64_t t) { o->t = t; }

/* ---- updates ---- */

typedef struct {
    sym_optim_t *o;
    float *w;
    const float *g;
    size_t base;
    float lr, wd, bc1, bc2;
} step_args_t;

/* Elements [base + lo, base + hi): the split comes from sym__parallel_for. */
static void sgd_part(size_t lo, size_t hi, void *arg) {
    const step_args_t *a = arg;
    const float mu = a->o->cfg.momentum, lr = a->lr, wd = a->wd;
    float *buf = a->o->buf0, *w = a->w;
    const float *g = a->g;
    for (size_t i = a->base + lo; i < a->base + hi; i++) {
        float d = g[i] + wd * w[i];
        buf[i] = mu * buf[i] + d;
        w[i] -= lr * buf[i];
    }
}

static void adamw_part(size_t lo, size_t hi, void *arg) {
    const step_args_t *a = arg;
    const sym_optim_t *o = a->o;
    const float b1 = o->cfg.beta1, b2 = o->cfg.beta2, eps = o->cfg.eps;
    float *m = o->buf0, *v = o->buf1, *w = a->w;
    const float *g = a->g;
    const float decay = 1.0f - a->lr * a->wd;
    const float step = a->lr / a->bc1, inv_sqrt_bc2 = 1.0f / sqrtf(a->bc2);
    for (size_t i = a->base + lo; i < a->base + hi; i++) {
        w[i] *= decay;
        m[i] = b1 * m[i] + (1.0f - b1) * g[i];
        v[i] = b2 * v[i] + (1.0f - b2) * g[i] * g[i];
        w[i] -= step * m[i] / (sqrtf(v[i]) * inv_sqrt_bc2 + eps);
    }
}

static void step_range(sym_optim_t *o, float *w, const float *g, size_t lo, size_t hi, float lr,
                       float wd, float bc1, float bc2) {
    if (lo >= hi) return;
    step_args_t a = {o, w, g, lo, lr, wd, bc1, bc2};
    sym__parallel_for(hi - lo, hi - lo, o->cfg.kind == SYM_OPT_SGD ? sgd_part : adamw_part, &a);
}

void sym_optim_step(sym_optim_t *o, float *w, const float *g, float lr) {
    o->t++;
    float bc1 = 1.0f, bc2 = 1.0f;
    if (o->cfg.kind == SYM_OPT_ADAMW) {
        bc1 = (float)(1.0 - pow((double)o->cfg.beta1, (double)o->t));
        bc2 = (float)(1.0 - pow((double)o->cfg.beta2, (double)o->t));
    }
    /* Walk the parameters in order: decayed stretches between no-decay ranges
     * (kept sorted by sym_optim_no_decay). */
    size_t pos = 0;
    for (int r = 0; r < o->n_no_decay; r++) {
        size_t lo = o->no_decay[r].off, hi = lo + o->no_decay[r].len;
        if (lo < pos) lo = pos;
        step_range(o, w, g, pos, lo, lr, o->cfg.weight_decay, bc1, bc2);
        step_range(o, w, g, lo, hi, lr, 0.0f, bc1, bc2);
        if (hi > pos) pos = hi;
    }
    step_range(o, w, g, pos, o->n, lr, o->cfg.weight_decay, bc1, bc2);
}

/* ---- state ---- */

size_t sym_optim_bytes(const sym_optim_t *o) {
    return o->n * sizeof(float) * (o->cfg.kind == SYM_OPT_ADAMW ? 2 : 1);
}

size_t sym_optim_state_size(const sym_optim_t *o) {
    return sizeof(state_hdr_t) + o->n * sizeof(float) * (o->cfg.kind == SYM_OPT_ADAMW ? 2 : 1);
}

size_t sym_optim_state_header(const sym_optim_t *o, void *buf) {
    state_hdr_t h = {STATE_MAGIC, (uint32_t)o->cfg.kind, 0, 0, o->n, o->t};
    memcpy(buf, &h, sizeof h);
    return sizeof h;
}

void sym_optim_state_save(const sym_optim_t *o, void *buf) {
    char *p = buf;
    p += sym_optim_state_header(o, buf);
    memcpy(p, o->buf0, o->n * sizeof(float));
    if (o->cfg.kind == SYM_OPT_ADAMW) memcpy(p + o->n * sizeof(float), o->buf1, o->n * sizeof(float));
}

int sym_optim_state_load(sym_optim_t *o, const void *buf, size_t len) {
    state_hdr_t h;
    if (len < sizeof h) return sym__error(SYM_ECORRUPT, "optimizer state is %zu bytes: too short", len);
    memcpy(&h, buf, sizeof h);
    if (h.magic != STATE_MAGIC) return sym__error(SYM_ECORRUPT, "this is not optimizer state");
    if (h.kind != (uint32_t)o->cfg.kind)
        return sym__error(SYM_EMISMATCH, "the saved optimizer is %s, this run uses %s",
                          sym_optim_name((sym_optim_kind_t)h.kind), sym_optim_name(o->cfg.kind));
    if (h.n != o->n)
        return sym__error(SYM_EMISMATCH, "the saved optimizer holds %llu parameters, the model %zu",
                          (unsigned long long)h.n, o->n);
    if (len != sym_optim_state_size(o))
        return sym__error(SYM_ECORRUPT, "optimizer state is %zu bytes, expected %zu", len,
                          sym_optim_state_size(o));
    const char *p = (const char *)buf + sizeof h;
    memcpy(o->buf0, p, o->n * sizeof(float));
    if (o->cfg.kind == SYM_OPT_ADAMW) memcpy(o->buf1, p + o->n * sizeof(float), o->n * sizeof(float));
    o->t = h.t;
    return SYM_OK;
}
