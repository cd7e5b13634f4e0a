/*
 * train_gradcheck — every hand-written backward pass against central finite
 * differences of its forward pass, on fresh random inputs (seed printed;
 * SYMTRAIN_TEST_SEED replays one).
 *
 * Each layer is checked through a scalar L = sum(R * y) with random R, so every
 * output element's gradient path is exercised. The forward runs in fp32 and L
 * is summed in double. The derivative is the Richardson extrapolation of
 * central differences with steps h = 5e-3 and h/2: truncation error O(h^4)
 * (a plain central difference, error O(h^2 f'''), was seen 1% off where two
 * GELU layers with large weights curve the loss; at h = 1e-2 one GPT draw,
 * SYMTRAIN_TEST_SEED=1796196602468418, put its attention's c_attn 1.3 times
 * the tolerance off, 0.17 at 5e-3), rounding noise about
 * sqrt(#outputs) * 6e-8 * |y| / h, both far below 1e-4 (25 seeds' worst
 * element at 5e-3: 0.24 of the tolerance). So the check
 * |num - ana| <= 1e-3 + 1e-3 |ana| has headroom, while a gradient off by 1%
 * fails it: every check also verifies that a 3% error in the analytic
 * gradient would have been caught, so the tolerance is known to be tight.
 * ReLU inputs are kept further from its kink than a step can move them, and
 * inputs are redrawn until some gradient is large enough to compare.
 *
 * Backward passes add into their gradients (nn.h), so the buffers start at a
 * known offset that is taken off afterwards: a backward that overwrote would
 * be off by it. The GPT's layers (embedding, LayerNorm, attention, GELU-tanh,
 * residual) are checked the same way, their forwards also against fp64
 * references, and they are run with 1 and 4 threads on inputs large enough
 * to be split, which must agree bit for bit. Last, the whole GPT: every
 * parameter through the mean cross-entropy, the padded vocabulary and a
 * sequence shorter than the context (check_gpt_model).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <symtrain/symtrain.h>

#include "test.h"

#define H 5e-3
#define ATOL 1e-3
#define RTOL 1e-3

static test_rng_t rng;

static float frand(double lo, double hi) { return (float)(lo + (hi - lo) * test_uniform(&rng)); }

static void fill(float *x, size_t n, double lo, double hi) {
    for (size_t i = 0; i < n; i++) x[i] = frand(lo, hi);
}

/* Worst violation of |num - ana| <= ATOL + RTOL |ana| * scale (<= 1 passes). */
static double worst(const double *num, const float *ana, size_t n, double scale, size_t *at) {
    double w = 0;
    for (size_t i = 0; i < n; i++) {
        double a = ana[i] * scale, v = fabs(num[i] - a) / (ATOL + RTOL * fabs(a));
        if (v > w) {
            w = v;
            if (at) *at = i;
        }
    }
    return w;
}

/* Compare, and make sure a 3% error would have failed. */
static void compare(const char *what, const double *num, const float *ana, size_t n) {
    size_t at = 0;
    double w = worst(num, ana, n, 1.0, &at);
    double big = 0;
    for (size_t i = 0; i < n; i++) big = fmax(big, fabs(ana[i]));
    printf("  %-28s %4zu elements, worst error %.3f of tolerance (|grad| up to %.3g)\n", what, n,
           w, big);
    CHECK(w <= 1.0, "%s: element %zu: finite difference %.7g, backward %.7g", what, at, num[at],
          (double)ana[at]);
    CHECK(big > 0.1, "%s: every gradient is below 0.1 (max %g): the check would be vacuous",
          what, big);
    CHECK(worst(num, ana, n, 1.03, NULL) > 1.0,
          "%s: a 3%% error in the gradient would pass: the tolerance is too loose", what);
}

/* ---- layers ---- */

typedef double (*scalar_fn)(void *ctx); /* L at the current parameter values */

/* The central difference of f in p[i] with step h (the step actually taken
 * in fp32, not the nominal one). */
static double central(scalar_fn f, void *ctx, float *p, size_t i, float h) {
    float keep = p[i];
    p[i] = keep + h;
    double up = f(ctx);
    float hi = p[i];
    p[i] = keep - h;
    double down = f(ctx);
    float lo = p[i];
    p[i] = keep;
    return (up - down) / ((double)hi - (double)lo);
}

/* d L / d p[i] for every element of p (n): central differences at h and h/2
 * combined by Richardson extrapolation, (4 D(h/2) - D(h)) / 3, which cancels
 * the h^2 error term: what is left is O(h^4), far below the tolerance even
 * where deep layers with large weights make the loss strongly curved. */
static void numeric(scalar_fn f, void *ctx, float *p, size_t n, double *out) {
    for (size_t i = 0; i < n; i++) {
        double d1 = central(f, ctx, p, i, (float)H), d2 = central(f, ctx, p, i, (float)(H / 2));
        out[i] = (4 * d2 - d1) / 3;
    }
}

static double dot(const float *r, const float *y, size_t n) {
    double s = 0;
    for (size_t i = 0; i < n; i++) s += (double)r[i] * (double)y[i];
    return s;
}

enum { B = 5, I = 7, O = 4 };

typedef struct {
    float x[B * I], w[O * I], b[O], y[B * O], r[B * O];
} lin_t;

static double lin_loss(void *ctx) {
    lin_t *c = ctx;
    sym_tensor_t x = sym_tensor_2d(c->x, B, I), w = sym_tensor_2d(c->w, O, I), y = sym_tensor_2d(c->y, B, O);
    int64_t o = O;
    sym_tensor_t b = sym_tensor_view(c->b, 1, &o);
    CHECK(sym_linear_forward(&x, &w, &b, &y) == 0, "linear forward: %s", sym_last_error());
    return dot(c->r, c->y, B * O);
}

static void check_linear(void) {
    lin_t c;
    fill(c.x, B * I, -1, 1);
    fill(c.w, O * I, -1, 1);
    fill(c.b, O, -1, 1);
    fill(c.r, B * O, -1, 1);
    /* Backward adds into what it is given: start from a known offset and take it off. */
    float dx[B * I], dw[O * I], db[O];
    for (int i = 0; i < B * I; i++) dx[i] = 0.5f;
    for (int i = 0; i < O * I; i++) dw[i] = 0.5f;
    for (int i = 0; i < O; i++) db[i] = 0.5f;
    lin_loss(&c);
    sym_tensor_t x = sym_tensor_2d(c.x, B, I), w = sym_tensor_2d(c.w, O, I);
    sym_tensor_t dy = sym_tensor_2d(c.r, B, O); /* dL/dy = R */
    sym_tensor_t tdx = sym_tensor_2d(dx, B, I), tdw = sym_tensor_2d(dw, O, I);
    int64_t o = O;
    sym_tensor_t tdb = sym_tensor_view(db, 1, &o);
    CHECK(sym_linear_backward_params(&x, &dy, &tdw, &tdb) == 0, "%s", sym_last_error());
    CHECK(sym_linear_backward_input(&w, &dy, &tdx) == 0, "%s", sym_last_error());
    for (int i = 0; i < B * I; i++) dx[i] -= 0.5f;
    for (int i = 0; i < O * I; i++) dw[i] -= 0.5f;
    for (int i = 0; i < O; i++) db[i] -= 0.5f;
    double num[B * I];
    numeric(lin_loss, &c, c.x, B * I, num);
    compare("linear dx", num, dx, B * I);
    numeric(lin_loss, &c, c.w, O * I, num);
    compare("linear dw", num, dw, O * I);
    numeric(lin_loss, &c, c.b, O, num);
    compare("linear db", num, db, O);
}

enum { N = 64 };

typedef struct {
    float x[N], y[N], r[N], mask[N];
    int kind; /* 0 relu, 1 gelu, 2 dropout, 3 gelu (tanh) */
} act_t;

static double act_loss(void *ctx) {
    act_t *c = ctx;
    if (c->kind == 0)
        sym_relu_forward(c->x, c->y, N);
    else if (c->kind == 1)
        sym_gelu_forward(c->x, c->y, N);
    else if (c->kind == 3)
        sym_gelu_tanh_forward(c->x, c->y, N);
    else /* 8 rows of 8: the mask is a function of (key, step, row, unit) */
        sym_dropout_forward(c->x, c->y, c->mask, 8, 8, 0.3f, 0xfeed, 7, 3);
    return dot(c->r, c->y, N);
}

static void check_activation(int kind) {
    static const char *names[] = {"relu dx", "gelu dx", "dropout dx", "gelu_tanh dx"};
    act_t c;
    c.kind = kind;
    fill(c.r, N, -1, 1);
    for (int i = 0; i < N; i++) {
        if (kind == 0) { /* at least 2h from the kink, both signs */
            float m = frand(2.5 * H, 2.0);
            c.x[i] = test_uniform(&rng) < 0.5 ? -m : m;
        } else {
            c.x[i] = frand(-3, 3);
        }
    }
    act_loss(&c);
    float dx[N];
    if (kind == 0)
        sym_relu_backward(c.x, c.r, dx, N);
    else if (kind == 1)
        sym_gelu_backward(c.x, c.r, dx, N);
    else if (kind == 3)
        sym_gelu_tanh_backward(c.x, c.r, dx, N);
    else
        sym_dropout_backward(c.r, c.mask, dx, N);
    double num[N];
    numeric(act_loss, &c, c.x, N, num);
    compare(names[kind], num, dx, N);
}

/* Dropout's mask: a function of the global row, so splitting rows over PEs
 * draws the same masks; keeps about 1 - p, scaled by 1 / (1 - p). */
static void check_dropout_masks(void) {
    enum { R = 64, Wd = 96 };
    static float x[R * Wd], y[R * Wd], whole[R * Wd], part[R * Wd];
    for (int i = 0; i < R * Wd; i++) x[i] = 1.0f;
    const float p = 0.25f;
    sym_dropout_forward(x, y, whole, R, Wd, p, 42, 11, 1000);
    /* the same rows as three blocks, as three PEs would hold them */
    int cut[4] = {0, 21, 43, R};
    for (int k = 0; k < 3; k++)
        sym_dropout_forward(x + cut[k] * Wd, y + cut[k] * Wd, part + cut[k] * Wd, cut[k + 1] - cut[k],
                            Wd, p, 42, 11, 1000 + cut[k]);
    size_t kept = 0;
    for (int i = 0; i < R * Wd; i++) {
        CHECK(whole[i] == part[i], "dropout mask element %d differs when the rows are split", i);
        CHECK(whole[i] == 0.0f || whole[i] == 1.0f / (1.0f - p), "mask value %g", (double)whole[i]);
        kept += whole[i] != 0.0f;
    }
    double frac = (double)kept / (R * Wd);
    /* binomial sd = sqrt(p(1-p)/n) ~ 0.0044: allow 5 sd */
    CHECK(fabs(frac - (1 - p)) < 0.022, "dropout kept %.4f of the units, expected %.2f", frac, 1 - p);
    /* another step draws another mask */
    sym_dropout_forward(x, y, part, R, Wd, p, 42, 12, 1000);
    size_t same = 0;
    for (int i = 0; i < R * Wd; i++) same += whole[i] == part[i];
    CHECK(same < (size_t)(0.8 * R * Wd), "dropout masks of two steps agree on %zu of %d units", same,
          R * Wd);
    printf("  %-28s keeps %.4f (p = %.2f), identical when rows are split over PEs\n",
           "dropout masks", frac, (double)p);
}

/* ---- the GPT's layers ---- */

/* Gradient buffers start here and have it taken off after the backward. */
#define GRAD0 0.5f

static void grad_start(float *g, size_t n) {
    for (size_t i = 0; i < n; i++) g[i] = GRAD0;
}
static void grad_unstart(float *g, size_t n) {
    for (size_t i = 0; i < n; i++) g[i] -= GRAD0;
}
static void poison(float *x, size_t n) {
    for (size_t i = 0; i < n; i++) x[i] = NAN;
}

/* GELU-tanh against its formula in double over a wide range (the gradient
 * check above covers [-3, 3]); the backward in place gives the same bits. */
static double gelu_tanh_ref(double x, double *deriv) {
    const double k = 0.79788456080286535588, a = 0.044715; /* sqrt(2/pi) */
    double t = tanh(k * (x + a * x * x * x));
    *deriv = 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * k * (1 + 3 * a * x * x);
    return 0.5 * x * (1 + t);
}

static void check_gelu_tanh_formula(void) {
    enum { G = 4096 };
    static float x[G], y[G], dy[G], dx[G], dxi[G];
    fill(x, G, -8, 8);
    fill(dy, G, -2, 2);
    x[0] = 0.0f;
    x[1] = 1e-20f;
    x[2] = -1e-20f;
    poison(y, G);
    poison(dx, G);
    sym_gelu_tanh_forward(x, y, G);
    sym_gelu_tanh_backward(x, dy, dx, G);
    memcpy(dxi, dy, sizeof dxi);
    sym_gelu_tanh_backward(x, dxi, dxi, G);
    double wy = 0, wd = 0;
    for (int i = 0; i < G; i++) {
        double d, ref = gelu_tanh_ref(x[i], &d);
        d *= dy[i];
        /* fp32 tanhf: a few ulps, and 1 + t loses digits where t nears -1 */
        double ey = fabs(y[i] - ref) / (1e-6 + 1e-6 * fabs(ref));
        double ed = fabs(dx[i] - d) / (1e-5 + 1e-5 * fabs(d));
        CHECK(ey <= 1.0, "gelu_tanh(%.9g) = %.9g, formula in double %.9g", (double)x[i],
              (double)y[i], ref);
        CHECK(ed <= 1.0, "gelu_tanh backward at x %.9g, dy %.9g: %.9g, formula in double %.9g",
              (double)x[i], (double)dy[i], (double)dx[i], d);
        wy = fmax(wy, ey);
        wd = fmax(wd, ed);
    }
    CHECK(memcmp(dx, dxi, sizeof dx) == 0, "gelu_tanh backward in place (dx == dy) differs");
    printf("  %-28s %4d elements in [-8, 8]: y worst %.3f, dx worst %.3f of tolerance\n",
           "gelu_tanh vs fp64 formula", G, wy, wd);
}

/* Residual: out = a + b exactly, in place too; da and db gain dout. */
enum { RN = 64 };

typedef struct {
    float a[RN], b[RN], y[RN], r[RN];
} res_t;

static double res_loss(void *ctx) {
    res_t *c = ctx;
    sym_residual_forward(c->y, c->a, c->b, RN);
    return dot(c->r, c->y, RN);
}

static void check_residual(void) {
    res_t c;
    fill(c.a, RN, -1, 1);
    fill(c.b, RN, -1, 1);
    fill(c.r, RN, -1, 1);
    poison(c.y, RN);
    res_loss(&c);
    float t[RN];
    memcpy(t, c.a, sizeof t);
    sym_residual_forward(t, t, c.b, RN); /* out == a */
    for (int i = 0; i < RN; i++) {
        CHECK(c.y[i] == c.a[i] + c.b[i], "residual element %d: %g + %g gave %g", i,
              (double)c.a[i], (double)c.b[i], (double)c.y[i]);
        CHECK(t[i] == c.y[i], "residual in place (out == a), element %d differs", i);
    }
    float da[RN], db[RN];
    grad_start(da, RN);
    grad_start(db, RN);
    sym_residual_backward(da, db, c.r, RN);
    grad_unstart(da, RN);
    grad_unstart(db, RN);
    double num[RN];
    numeric(res_loss, &c, c.a, RN, num);
    compare("residual da", num, da, RN);
    numeric(res_loss, &c, c.b, RN, num);
    compare("residual db", num, db, RN);
    /* da == db: the one buffer gains dout twice */
    float both[RN];
    grad_start(both, RN);
    sym_residual_backward(both, both, c.r, RN);
    for (int i = 0; i < RN; i++)
        CHECK(both[i] == (GRAD0 + c.r[i]) + c.r[i], "residual backward with da == db, element %d",
              i);
}

/* Embedding: a batch of 2 sequences of 3 in which one token appears three
 * times (twice in one sequence, once at the same position in the other). */
enum { EB = 2, ET = 3, EC = 4, EV = 5 };

typedef struct {
    float wte[EV * EC], wpe[ET * EC], y[EB * ET * EC], r[EB * ET * EC];
    int32_t tok[EB * ET];
} emb_t;

static double emb_loss(void *ctx) {
    emb_t *c = ctx;
    sym_embed_forward(c->y, c->tok, c->wte, c->wpe, EB, ET, EC);
    return dot(c->r, c->y, EB * ET * EC);
}

static void check_embed(void) {
    emb_t c;
    fill(c.wte, EV * EC, -1, 1);
    fill(c.wpe, ET * EC, -1, 1);
    fill(c.r, EB * ET * EC, -1, 1);
    for (int i = 0; i < EB * ET; i++) c.tok[i] = (int32_t)(test_next(&rng) % EV);
    c.tok[1] = c.tok[0];      /* (0,1) repeats (0,0) */
    c.tok[ET + 1] = c.tok[0]; /* (1,1): another sequence, the same position as (0,1) */
    poison(c.y, EB * ET * EC);
    emb_loss(&c);
    for (int r = 0; r < EB * ET; r++)
        for (int j = 0; j < EC; j++) {
            float want = c.wte[c.tok[r] * EC + j] + c.wpe[(r % ET) * EC + j];
            CHECK(c.y[r * EC + j] == want, "embedding row %d column %d: %g, wte + wpe is %g", r, j,
                  (double)c.y[r * EC + j], (double)want);
        }
    float dwte[EV * EC], dwpe[ET * EC], rte[EV * EC], rpe[ET * EC];
    grad_start(dwte, EV * EC);
    grad_start(dwpe, ET * EC);
    sym_embed_backward(dwte, dwpe, c.r, c.tok, EB, ET, EC);
    /* the contract's order: every (b, t) in turn, in fp32, onto the start */
    grad_start(rte, EV * EC);
    grad_start(rpe, ET * EC);
    for (int r = 0; r < EB * ET; r++)
        for (int j = 0; j < EC; j++) {
            rte[c.tok[r] * EC + j] += c.r[r * EC + j];
            rpe[(r % ET) * EC + j] += c.r[r * EC + j];
        }
    CHECK(memcmp(dwte, rte, sizeof rte) == 0, "embedding dwte differs from the (b, t)-order sums");
    CHECK(memcmp(dwpe, rpe, sizeof rpe) == 0, "embedding dwpe differs from the (b, t)-order sums");
    grad_unstart(dwte, EV * EC);
    grad_unstart(dwpe, ET * EC);
    double num[EV * EC];
    numeric(emb_loss, &c, c.wte, EV * EC, num);
    compare("embedding dwte (token x3)", num, dwte, EV * EC);
    numeric(emb_loss, &c, c.wpe, ET * EC, num);
    compare("embedding dwpe", num, dwpe, ET * EC);
}

/* LayerNorm: rows off-centre (x in [-1, 3]); the forward against fp64. */
enum { LNR = 4, LNC = 6 };

typedef struct {
    float x[LNR * LNC], w[LNC], b[LNC], y[LNR * LNC], r[LNR * LNC], mean[LNR], rstd[LNR];
} ln_t;

static double ln_loss(void *ctx) {
    ln_t *c = ctx;
    sym_layernorm_forward(c->y, c->mean, c->rstd, c->x, c->w, c->b, LNR, LNC);
    return dot(c->r, c->y, LNR * LNC);
}

/* mean, rstd (biased variance, eps 1e-5) and out of row x (C) in double */
static void ln_ref(const float *x, const float *w, const float *b, int C, double *mean,
                   double *rstd, double *out) {
    double m = 0, v = 0;
    for (int j = 0; j < C; j++) m += x[j];
    m /= C;
    for (int j = 0; j < C; j++) v += (x[j] - m) * (x[j] - m);
    v /= C;
    *mean = m;
    *rstd = 1 / sqrt(v + 1e-5);
    for (int j = 0; j < C; j++) out[j] = (x[j] - m) * *rstd * w[j] + b[j];
}

static void check_layernorm(void) {
    ln_t c;
    fill(c.x, LNR * LNC, -1, 3);
    fill(c.w, LNC, -1.5, 1.5);
    fill(c.b, LNC, -1, 1);
    fill(c.r, LNR * LNC, -1, 1);
    poison(c.y, LNR * LNC);
    poison(c.mean, LNR);
    poison(c.rstd, LNR);
    ln_loss(&c);
    for (int r = 0; r < LNR; r++) {
        double m, rs, out[LNC];
        ln_ref(c.x + r * LNC, c.w, c.b, LNC, &m, &rs, out);
        CHECK(fabs(c.mean[r] - m) <= 1e-6 * (1 + fabs(m)), "layernorm row %d: mean %.9g, fp64 %.9g",
              r, (double)c.mean[r], m);
        CHECK(fabs(c.rstd[r] - rs) <= 1e-6 * rs, "layernorm row %d: rstd %.9g, fp64 %.9g", r,
              (double)c.rstd[r], rs);
        for (int j = 0; j < LNC; j++)
            CHECK(fabs(c.y[r * LNC + j] - out[j]) <= 1e-5 * (1 + fabs(out[j])),
                  "layernorm row %d column %d: %.9g, fp64 %.9g", r, j, (double)c.y[r * LNC + j],
                  out[j]);
    }
    /* A constant row: variance 0, so rstd is 1 / sqrt(eps) and out is b. */
    float cx[LNC], cy[LNC], cm, crs;
    for (int j = 0; j < LNC; j++) cx[j] = 2.5f;
    sym_layernorm_forward(cy, &cm, &crs, cx, c.w, c.b, 1, LNC);
    CHECK(cm == 2.5f && fabs(crs - 1 / sqrt(1e-5)) <= 1e-6 * crs,
          "layernorm of a constant row: mean %.9g, rstd %.9g (1 / sqrt(1e-5) = %.9g)", (double)cm,
          (double)crs, 1 / sqrt(1e-5));
    for (int j = 0; j < LNC; j++)
        CHECK(cy[j] == c.b[j], "layernorm of a constant row: column %d is %g, not b = %g", j,
              (double)cy[j], (double)c.b[j]);
    float dx[LNR * LNC], dw[LNC], db[LNC];
    grad_start(dx, LNR * LNC);
    grad_start(dw, LNC);
    grad_start(db, LNC);
    sym_layernorm_backward(dx, dw, db, c.r, c.x, c.w, c.mean, c.rstd, LNR, LNC);
    grad_unstart(dx, LNR * LNC);
    grad_unstart(dw, LNC);
    grad_unstart(db, LNC);
    double num[LNR * LNC];
    numeric(ln_loss, &c, c.x, LNR * LNC, num);
    compare("layernorm dx", num, dx, LNR * LNC);
    numeric(ln_loss, &c, c.w, LNC, num);
    compare("layernorm dw", num, dw, LNC);
    numeric(ln_loss, &c, c.b, LNC, num);
    compare("layernorm db", num, db, LNC);
}

/* Attention: B=2, T=5, C=8 in 2 heads of 4; the forward against fp64. */
enum { AB = 2, AT = 5, AC = 8, ANH = 2, AHS = AC / ANH };

typedef struct {
    float qkv[AB * AT * 3 * AC], out[AB * AT * AC], att[AB * ANH * AT * AT], r[AB * AT * AC];
    float scratch[AT * AT];
    const sym_attn_dropout_t *drop; /* NULL: none */
} attn_t;

static double attn_loss(void *ctx) {
    attn_t *c = ctx;
    CHECK(sym_attention_forward_drop(c->out, c->att, c->scratch, c->qkv, AB, AT, AC, ANH,
                                     c->drop) == 0, "%s", sym_last_error());
    return dot(c->r, c->out, AB * AT * AC);
}

static void check_attention(void) {
    attn_t c;
    c.drop = NULL;
    fill(c.qkv, AB * AT * 3 * AC, -2, 2);
    fill(c.r, AB * AT * AC, -1, 1);
    poison(c.out, AB * AT * AC);
    poison(c.att, AB * ANH * AT * AT);
    attn_loss(&c);
    double wa = 0, wo = 0;
    for (int b = 0; b < AB; b++)
        for (int h = 0; h < ANH; h++) {
            const float *base = c.qkv + b * AT * 3 * AC + h * AHS;
            const float *A = c.att + (b * ANH + h) * AT * AT;
            double p[AT][AT] = {{0}};
            for (int i = 0; i < AT; i++) {
                double mx = -1e300, sum = 0, fsum = 0;
                for (int j = 0; j <= i; j++) {
                    double s = 0;
                    for (int d = 0; d < AHS; d++)
                        s += (double)base[i * 3 * AC + d] * base[j * 3 * AC + AC + d];
                    p[i][j] = s / sqrt((double)AHS);
                    mx = fmax(mx, p[i][j]);
                }
                for (int j = 0; j <= i; j++) sum += p[i][j] = exp(p[i][j] - mx);
                for (int j = 0; j < AT; j++) {
                    float got = A[i * AT + j];
                    if (j > i) {
                        CHECK(got == 0.0f, "att[%d,%d] row %d column %d (above the diagonal) is %g",
                              b, h, i, j, (double)got);
                        continue;
                    }
                    p[i][j] /= sum;
                    fsum += got;
                    CHECK(fabs(got - p[i][j]) <= 1e-6,
                          "att[%d,%d] row %d column %d: %.9g, fp64 %.9g", b, h, i, j, (double)got,
                          p[i][j]);
                    wa = fmax(wa, fabs(got - p[i][j]) / 1e-6);
                }
                CHECK(fabs(fsum - 1) <= 1e-6, "att[%d,%d] row %d sums to %.9g", b, h, i, fsum);
                for (int d = 0; d < AHS; d++) {
                    double o = 0;
                    for (int j = 0; j <= i; j++) o += p[i][j] * base[j * 3 * AC + 2 * AC + d];
                    float got = c.out[(b * AT + i) * AC + h * AHS + d];
                    double e = fabs(got - o) / (1e-5 * (1 + fabs(o)));
                    CHECK(e <= 1.0, "attention out[%d,%d,%d]: %.9g, fp64 %.9g", b, i, h * AHS + d,
                          (double)got, o);
                    wo = fmax(wo, e);
                }
            }
        }
    printf("  %-28s att worst %.3f, out worst %.3f of tolerance; causal, rows sum to 1\n",
           "attention vs fp64", wa, wo);
    float dqkv[AB * AT * 3 * AC], scratch[AT * AT];
    grad_start(dqkv, AB * AT * 3 * AC);
    poison(scratch, AT * AT);
    CHECK(sym_attention_backward(dqkv, scratch, c.r, c.qkv, c.att, AB, AT, AC, ANH) == 0, "%s",
          sym_last_error());
    grad_unstart(dqkv, AB * AT * 3 * AC);
    double num[AB * AT * 3 * AC];
    numeric(attn_loss, &c, c.qkv, AB * AT * 3 * AC, num);
    compare("attention dqkv", num, dqkv, AB * AT * 3 * AC);
    /* A width that the heads do not divide, and an empty sequence, are refused. */
    CHECK(sym_attention_forward(c.out, c.att, c.qkv, AB, AT, AC, 3) == SYM_EINVAL &&
              strstr(sym_last_error(), "not a multiple"),
          "attention forward with C=8, NH=3 was not refused: %s", sym_last_error());
    CHECK(sym_attention_backward(dqkv, scratch, c.r, c.qkv, c.att, AB, AT, AC, 3) == SYM_EINVAL,
          "attention backward with C=8, NH=3 was not refused");
    CHECK(sym_attention_forward(c.out, c.att, c.qkv, AB, 0, AC, ANH) == SYM_EINVAL,
          "attention forward with T=0 was not refused");
}

/* Attention with dropout on its probabilities (p 0.3): the gradient through
 * the fixed masks; the masks of heads and sequences computed apart (a PE's
 * heads from h0, a PE's sequences from row0) are those computed together;
 * about 1 - p of a long row's probabilities kept. */
static const sym_attn_dropout_t attn_drop = {0.3f, 0xa77e, 3, 5, 1, 3};

static void check_attention_dropout(void) {
    attn_t c;
    c.drop = &attn_drop;
    fill(c.qkv, AB * AT * 3 * AC, -2, 2);
    fill(c.r, AB * AT * AC, -1, 1);
    poison(c.out, AB * AT * AC);
    double with = attn_loss(&c);
    float plain[AB * AT * AC], scratch[AT * AT];
    CHECK(sym_attention_forward(plain, c.att, c.qkv, AB, AT, AC, ANH) == 0, "%s", sym_last_error());
    CHECK(fabs(dot(c.r, plain, AB * AT * AC) - with) > 1e-3, "attention dropout changed nothing");
    attn_loss(&c); /* att: the probabilities before the mask, as the backward needs */
    float dqkv[AB * AT * 3 * AC];
    grad_start(dqkv, AB * AT * 3 * AC);
    poison(scratch, AT * AT);
    CHECK(sym_attention_backward_drop(dqkv, scratch, c.r, c.qkv, c.att, AB, AT, AC, ANH,
                                      &attn_drop) == 0, "%s", sym_last_error());
    grad_unstart(dqkv, AB * AT * 3 * AC);
    double num[AB * AT * 3 * AC];
    numeric(attn_loss, &c, c.qkv, AB * AT * 3 * AC, num);
    compare("attention dropout dqkv", num, dqkv, AB * AT * 3 * AC);
    attn_loss(&c); /* out again at the unperturbed qkv */
    /* apart: each sequence alone (row0 + b) and each head alone (h0 + h, of the same heads) */
    float att1[AT * AT], out1[AT * AC / ANH], qkv1[AT * 3 * AC / ANH];
    int hs = AC / ANH;
    for (int b = 0; b < AB; b++)
        for (int h = 0; h < ANH; h++) {
            for (int i = 0; i < AT; i++)
                for (int part = 0; part < 3; part++)
                    memcpy(qkv1 + i * 3 * hs + part * hs,
                           c.qkv + (b * AT + i) * 3 * AC + part * AC + h * hs, hs * sizeof(float));
            sym_attn_dropout_t one = attn_drop;
            one.row0 = attn_drop.row0 + b;
            one.h0 = attn_drop.h0 + h;
            CHECK(sym_attention_forward_drop(out1, att1, scratch, qkv1, 1, AT, hs, 1, &one) == 0,
                  "%s", sym_last_error());
            for (int i = 0; i < AT; i++)
                for (int d = 0; d < hs; d++)
                    CHECK(fabs(out1[i * hs + d] - c.out[(b * AT + i) * AC + h * hs + d]) <=
                              1e-5 * (1 + fabs(out1[i * hs + d])), /* a mask's change: ~0.1 */
                          "attention dropout of sequence %d head %d alone differs at %d,%d: %.9g "
                          "and %.9g", b, h, i, d, out1[i * hs + d],
                          c.out[(b * AT + i) * AC + h * hs + d]);
        }
    /* a long row: the kept share */
    enum { LT = 512 };
    static float lqkv[LT * 3 * 8], lout[LT * 8], latt[LT * LT], lscr[LT * LT];
    fill(lqkv, LT * 3 * 8, -0.01, 0.01);
    sym_attn_dropout_t d = attn_drop;
    CHECK(sym_attention_forward_drop(lout, latt, lscr, lqkv, 1, LT, 8, 1, &d) == 0, "%s",
          sym_last_error());
    size_t kept = 0, total = 0;
    for (int i = 0; i < LT; i++)
        for (int j = 0; j <= i; j++, total++) kept += lscr[i * LT + j] != 0.0f;
    double frac = (double)kept / (double)total;
    CHECK(fabs(frac - (1 - d.p)) < 0.01, "attention dropout kept %.4f of the probabilities, "
          "expected %.2f", frac, 1 - d.p);
    printf("  %-28s masks the same apart and together; %.4f of %zu kept (p %.1f)\n",
           "attention dropout", frac, total, (double)d.p);
}

/* ---- the same bits whatever the threads ---- */

/* Large enough that each loop covers >= 4 * SYM_PAR_CHUNK elements, so 4
 * threads split it 4 ways: LayerNorm (N,C), the embedding (B,T,C) over V
 * tokens (each about 8 times), attention (B=1) with T*T per head. */
enum { DN = 512, DC = 512, DB = 4, DT = 128, DE = 512, DV = 64, QT = 512, QC = 64, QH = 2 };

enum { S_LN_Y, S_LN_MEAN, S_LN_RSTD, S_LN_DX, S_LN_DW, S_LN_DB, S_EM_OUT, S_EM_DWTE, S_EM_DWPE,
       S_AT_OUT, S_AT_ATT, S_AT_DQKV, NSEG };

static const struct {
    const char *name;
    size_t n;
} seg[NSEG] = {
    {"layernorm out", DN * DC}, {"layernorm mean", DN},      {"layernorm rstd", DN},
    {"layernorm dx", DN * DC},  {"layernorm dw", DC},        {"layernorm db", DC},
    {"embedding out", DB * DT * DE}, {"embedding dwte", DV * DE}, {"embedding dwpe", DT * DE},
    {"attention out", QT * QC}, {"attention att", QH * QT * QT}, {"attention dqkv", QT * 3 * QC},
};

typedef struct {
    float *ln_x, *ln_w, *ln_b, *ln_g; /* (DN,DC), (DC), (DC), (DN,DC) */
    float *wte, *wpe, *em_g;          /* (DV,DE), (DT,DE), (DB,DT,DE) */
    int32_t *tok;                     /* (DB,DT) */
    float *qkv, *at_g, *scratch;      /* (QT,3QC), (QT,QC), (QT,QT) */
} gpt_in_t;

static float *alloc_fill(size_t n, double lo, double hi) {
    float *x = malloc(n * sizeof *x);
    CHECK(x != NULL, "out of memory for %zu floats", n);
    fill(x, n, lo, hi);
    return x;
}

/* Every output of the layers with `threads` threads, from the same start. */
static void run_gpt_layers(int threads, const gpt_in_t *in, float **o) {
    sym_blas_set_threads(threads);
    for (int s = 0; s < NSEG; s++) grad_start(o[s], seg[s].n);
    sym_layernorm_forward(o[S_LN_Y], o[S_LN_MEAN], o[S_LN_RSTD], in->ln_x, in->ln_w, in->ln_b, DN,
                          DC);
    sym_layernorm_backward(o[S_LN_DX], o[S_LN_DW], o[S_LN_DB], in->ln_g, in->ln_x, in->ln_w,
                           o[S_LN_MEAN], o[S_LN_RSTD], DN, DC);
    sym_embed_forward(o[S_EM_OUT], in->tok, in->wte, in->wpe, DB, DT, DE);
    sym_embed_backward(o[S_EM_DWTE], o[S_EM_DWPE], in->em_g, in->tok, DB, DT, DE);
    CHECK(sym_attention_forward(o[S_AT_OUT], o[S_AT_ATT], in->qkv, 1, QT, QC, QH) == 0, "%s",
          sym_last_error());
    CHECK(sym_attention_backward(o[S_AT_DQKV], in->scratch, in->at_g, in->qkv, o[S_AT_ATT], 1, QT,
                                 QC, QH) == 0,
          "%s", sym_last_error());
}

/* Does this machine's BLAS give the attention's products (QT x QT x QT/QH)
 * bit for bit at 1 and 4 threads? OpenBLAS's Haswell and Zen kernels do not:
 * an element's sum order follows how the product is split. */
static int blas_thread_invariant(void) {
    size_t n = (size_t)QT * QT;
    float *a = alloc_fill(n, -1, 1), *b = alloc_fill(n, -1, 1), *c1 = malloc(n * sizeof *c1),
          *c4 = malloc(n * sizeof *c4);
    CHECK(c1 && c4, "out of memory");
    int same = 1;
    for (int shape = 0; shape < 2; shape++) {
        int64_t k = shape ? QT : QC / QH, m = QT, nn = shape ? QC / QH : QT;
        sym_blas_set_threads(1);
        sym_gemm(0, shape == 0, m, nn, k, 1.0f, a, k, b, shape ? nn : k, 0.0f, c1, nn);
        sym_blas_set_threads(4);
        sym_gemm(0, shape == 0, m, nn, k, 1.0f, a, k, b, shape ? nn : k, 0.0f, c4, nn);
        same &= !memcmp(c1, c4, (size_t)(m * nn) * sizeof *c1);
    }
    sym_blas_set_threads(1);
    free(a);
    free(b);
    free(c1);
    free(c4);
    return same;
}

static void check_thread_independence(void) {
    int blas_same = blas_thread_invariant();
    gpt_in_t in;
    in.ln_x = alloc_fill((size_t)DN * DC, -1, 3);
    in.ln_w = alloc_fill(DC, -1.5, 1.5);
    in.ln_b = alloc_fill(DC, -1, 1);
    in.ln_g = alloc_fill((size_t)DN * DC, -1, 1);
    /* dw and db are summed in double, which would hide a changed order of the
     * rows once rounded to fp32. So rows 0 and DN-1 get the same x and
     * gradients of +-1e12, which cancel: what is left is the other rows' sum
     * with the rounding steps of 1e12 (about 1e-4) it took in the order it was
     * added, and a different order shows in fp32. */
    memcpy(in.ln_x + (size_t)(DN - 1) * DC, in.ln_x, DC * sizeof *in.ln_x);
    for (int j = 0; j < DC; j++) {
        in.ln_g[j] = 1e12f;
        in.ln_g[(size_t)(DN - 1) * DC + j] = -1e12f;
    }
    in.wte = alloc_fill((size_t)DV * DE, -1, 1);
    in.wpe = alloc_fill((size_t)DT * DE, -1, 1);
    in.em_g = alloc_fill((size_t)DB * DT * DE, -1, 1);
    in.qkv = alloc_fill((size_t)QT * 3 * QC, -2, 2);
    in.at_g = alloc_fill((size_t)QT * QC, -1, 1);
    in.scratch = alloc_fill((size_t)QT * QT, -1, 1);
    in.tok = malloc(DB * DT * sizeof *in.tok);
    CHECK(in.tok != NULL, "out of memory");
    for (int i = 0; i < DB * DT; i++) in.tok[i] = (int32_t)(test_next(&rng) % DV);
    float *one[NSEG], *four[NSEG];
    for (int s = 0; s < NSEG; s++) {
        one[s] = malloc(seg[s].n * sizeof(float));
        four[s] = malloc(seg[s].n * sizeof(float));
        CHECK(one[s] && four[s], "out of memory for %s", seg[s].name);
    }
    run_gpt_layers(1, &in, one);
    run_gpt_layers(4, &in, four);
    sym_blas_set_threads(1);
    double blas_diff = 0; /* the attention's, where the BLAS is not thread-invariant */
    for (int s = 0; s < NSEG; s++) {
        if (s >= S_AT_OUT && !blas_same) { /* its products' rounding, relative to the largest */
            double big = 0, d = 0;
            for (size_t i = 0; i < seg[s].n; i++) big = fmax(big, fabs(one[s][i]));
            for (size_t i = 0; i < seg[s].n; i++) d = fmax(d, fabs(one[s][i] - four[s][i]));
            CHECK(d <= 1e-5 * big, "%s: 1 and 4 threads differ by %g (largest %g)", seg[s].name, d,
                  big);
            blas_diff = fmax(blas_diff, d / fmax(big, 1e-30));
            continue;
        }
        size_t i = 0;
        while (i < seg[s].n && memcmp(&one[s][i], &four[s][i], sizeof(float)) == 0) i++;
        CHECK(i == seg[s].n, "%s element %zu: %.9g with 1 thread, %.9g with 4", seg[s].name, i,
              (double)one[s][i], (double)four[s][i]);
    }
    /* ... and the embedding's sums are the (b, t)-order ones of the contract */
    float *rte = malloc((size_t)DV * DE * sizeof *rte);
    float *rpe = malloc((size_t)DT * DE * sizeof *rpe);
    CHECK(rte && rpe, "out of memory");
    grad_start(rte, (size_t)DV * DE);
    grad_start(rpe, (size_t)DT * DE);
    for (int r = 0; r < DB * DT; r++)
        for (int j = 0; j < DE; j++) {
            rte[(size_t)in.tok[r] * DE + j] += in.em_g[(size_t)r * DE + j];
            rpe[(size_t)(r % DT) * DE + j] += in.em_g[(size_t)r * DE + j];
        }
    CHECK(memcmp(rte, four[S_EM_DWTE], (size_t)DV * DE * sizeof *rte) == 0,
          "embedding dwte with 4 threads differs from the (b, t)-order sums");
    CHECK(memcmp(rpe, four[S_EM_DWPE], (size_t)DT * DE * sizeof *rpe) == 0,
          "embedding dwpe with 4 threads differs from the (b, t)-order sums");
    if (blas_same)
        printf("  %-28s layernorm %dx%d, embedding %dx%dx%d (V %d), attention T %d: 1 and 4 "
               "threads agree bit for bit\n",
               "thread independence", DN, DC, DB, DT, DE, DV, QT);
    else
        printf("  %-28s layernorm %dx%d, embedding %dx%dx%d (V %d): 1 and 4 threads agree bit for "
               "bit; attention T %d within %.1e of its largest value (this machine's %s sums its "
               "products in another order at 4 threads)\n",
               "thread independence", DN, DC, DB, DT, DE, DV, QT, blas_diff, sym_blas_name());
    free(rte);
    free(rpe);
    for (int s = 0; s < NSEG; s++) {
        free(one[s]);
        free(four[s]);
    }
    free(in.ln_x);
    free(in.ln_w);
    free(in.ln_b);
    free(in.ln_g);
    free(in.wte);
    free(in.wpe);
    free(in.em_g);
    free(in.qkv);
    free(in.at_g);
    free(in.scratch);
    free(in.tok);
}

/* ---- softmax cross-entropy ---- */

enum { SB = 6, SC = 5 };

typedef struct {
    float z[SB * (SC + 2)]; /* two padding columns */
    int32_t y[SB];
} xent_t;

static double xent_loss(void *ctx) {
    xent_t *c = ctx;
    sym_tensor_t z = sym_tensor_2d(c->z, SB, SC + 2);
    return sym_softmax_xent(&z, c->y, SC, 1.0f, NULL, NULL);
}

static void check_xent(void) {
    xent_t c;
    enum { SP = SC + 2 };
    fill(c.z, SB * SP, -3, 3);
    for (int i = 0; i < SB; i++) c.y[i] = (int32_t)(test_next(&rng) % SC);
    for (int r = 0; r < SB; r++) c.z[r * SP + SC] = 50.0f; /* padding: must take no part */
    float dz[SB * SP];
    for (int i = 0; i < SB * SP; i++) dz[i] = NAN;
    sym_tensor_t z = sym_tensor_2d(c.z, SB, SP), tdz = sym_tensor_2d(dz, SB, SP);
    int64_t correct = -1;
    double l = sym_softmax_xent(&z, c.y, SC, 1.0f, &tdz, &correct);
    /* reference loss and accuracy in double */
    double ref = 0;
    int64_t right = 0;
    for (int r = 0; r < SB; r++) {
        double m = -1e300, s = 0;
        int best = 0;
        for (int k = 0; k < SC; k++)
            if (c.z[r * SP + k] > m) m = c.z[r * SP + k], best = k;
        for (int k = 0; k < SC; k++) s += exp(c.z[r * SP + k] - m);
        ref += m + log(s) - c.z[r * SP + c.y[r]];
        right += best == c.y[r];
        CHECK(dz[r * SP + SC] == 0.0f && dz[r * SP + SC + 1] == 0.0f,
              "row %d: the padding columns' gradient is not 0", r);
    }
    CHECK(fabs(l - ref) < 1e-9 * (1 + ref), "softmax cross-entropy %.12g, reference %.12g", l, ref);
    CHECK(correct == right, "correct %lld, reference %lld", (long long)correct, (long long)right);
    double num[SB * SP];
    numeric(xent_loss, &c, c.z, SB * SP, num);
    compare("softmax cross-entropy dz", num, dz, SB * SP);
    /* In place (dlogits == logits) gives the same gradient, bit for bit. */
    float zz[SB * SP];
    memcpy(zz, c.z, sizeof zz);
    sym_tensor_t tzz = sym_tensor_2d(zz, SB, SP);
    double l2 = sym_softmax_xent(&tzz, c.y, SC, 1.0f, &tzz, NULL);
    CHECK(l2 == l && memcmp(zz, dz, sizeof zz) == 0, "in-place cross-entropy differs");
    /* A label outside the classes is refused, not read past. */
    c.y[2] = SC;
    CHECK(isnan(sym_softmax_xent(&z, c.y, SC, 1.0f, NULL, NULL)) &&
              strstr(sym_last_error(), "not in [0, 5)"),
          "an out-of-range label was not refused: %s", sym_last_error());
}

/* ---- the whole model ---- */

typedef struct {
    sym_model_t *m;
    float x[B * 6];
    int32_t y[B];
} model_ctx_t;

static double model_loss(void *ctx) {
    model_ctx_t *c = ctx;
    sym_forward_t f = {1, 5, 0};
    sym_tensor_t logits;
    sym_input_t in = {B, 1, c->x, NULL};
    CHECK(sym_model_forward(c->m, &in, &f, &logits) == 0, "%s", sym_last_error());
    return sym_softmax_xent(&logits, c->y, 3, 1.0f, NULL, NULL) / B;
}

static void on_ready(void *user, size_t lo) {
    size_t *last = user;
    CHECK(lo < *last, "gradients reported ready out of order (%zu after %zu)", lo, *last);
    *last = lo;
}

static void check_model(const char *spec, sym_act_t act, float dropout) {
    sym_model_config_t cfg;
    memset(&cfg, 0, sizeof cfg);
    CHECK(sym_model_parse(spec, &cfg) == 0, "%s", sym_last_error());
    cfg.act = act;
    cfg.dropout = dropout;
    cfg.seed = test_next(&rng);
    model_ctx_t c;
    CHECK(sym_model_create(&cfg, B, 0, &c.m) == 0, "%s", sym_last_error());
    fill(c.x, B * 6, -2, 2);
    for (int i = 0; i < B; i++) c.y[i] = (int32_t)(test_next(&rng) % 3);
    size_t P = sym_model_num_params(c.m);
    float *params = sym_model_params(c.m);
    /* Larger weights than the init's, so the gradients are not tiny. With ReLU
     * (one hidden layer here), redraw until every pre-activation is further
     * from 0 than a finite step can move it (h * max|x| per weight); redraw
     * too if no gradient reaches 0.1 (dropout and ReLU can silence most). */
    float dl[B * 3];
    sym_tensor_t tdl = sym_tensor_2d(dl, B, 3);
    for (int tries = 0;; tries++) {
        CHECK(tries < 1000, "could not draw usable inputs for %s", spec);
        fill(params, P, -1.5, 1.5);
        if (act == SYM_ACT_RELU) {
            CHECK(cfg.nlayers == 2, "the ReLU check expects one hidden layer");
            int in = cfg.dims[0], hid = cfg.dims[1];
            double closest = 1e9;
            for (int r = 0; r < B; r++)
                for (int j = 0; j < hid; j++) {
                    double z = params[(size_t)hid * in + j]; /* bias after the weight */
                    for (int k = 0; k < in; k++) z += (double)c.x[r * in + k] * params[(size_t)j * in + k];
                    closest = fmin(closest, fabs(z));
                }
            if (closest <= 3 * H * 2.0) continue;
        }
        sym_forward_t f = {1, 5, 0};
        sym_tensor_t logits;
        sym_input_t in = {B, 1, c.x, NULL};
        CHECK(sym_model_forward(c.m, &in, &f, &logits) == 0, "%s", sym_last_error());
        sym_softmax_xent(&logits, c.y, 3, 1.0f / B, &tdl, NULL);
        size_t last = P + 1;
        sym_model_zero_grads(c.m);
        CHECK(sym_model_backward(c.m, &tdl, on_ready, &last) == 0, "%s", sym_last_error());
        CHECK(last == 0, "backward never reported the first layer's gradients ready (last %zu)", last);
        double big = 0;
        for (size_t i = 0; i < P; i++) big = fmax(big, fabs(sym_model_grads(c.m)[i]));
        if (big > 0.1) break;
    }
    float *g = malloc(P * sizeof *g);
    double *num = malloc(P * sizeof *num);
    memcpy(g, sym_model_grads(c.m), P * sizeof *g);
    numeric(model_loss, &c, params, P, num);
    char what[64];
    snprintf(what, sizeof what, "%s %s%s", spec, sym_act_name(act), dropout > 0 ? " dropout" : "");
    compare(what, num, g, P);
    free(g);
    free(num);
    sym_model_destroy(c.m);
}

/* ---- the whole GPT ----
 *
 * gpt:L=2,C=8,H=2,V=11,T=5 on 2 sequences of 4 tokens: the vocabulary is
 * padded to Vp = 128 (117 rows of wte and 117 logit columns that must take no
 * part) and the sequences are shorter than the context (row 4 of wpe is
 * unused). L = the mean softmax cross-entropy over the 8 predictions, as the
 * training loop computes it: sym_softmax_xent with scale 1 / 8, the gradient
 * written over the logits, which the backward then consumes. Every element of
 * every named tensor (2,824 in all, the padding rows of wte included) is
 * checked against finite differences, tensor by tensor. The weights are drawn
 * far wider than GPT-2's N(0, 0.02) init (LayerNorm weights U(0.5, 2), all
 * else U(-0.8, 0.8), the padding rows of wte too), so the attention is not
 * uniform, the gradients are not tiny, and a padding column that leaked into
 * the loss would show; they are redrawn (a few times) until every tensor has
 * a gradient of 0.1 or more, as compare() needs. Also: the gradients of
 * wte's padding rows are exactly 0; the ready hook reports tensor starts in
 * strictly descending order ending at 0, and what it reported final never
 * changes afterwards; a second backward without zeroing doubles every
 * gradient (it adds). */

enum { GB = 2, GS = 4, GV = 11 };

typedef struct {
    sym_model_t *m;
    int32_t tok[GB * GS], y[GB * GS];
} gpt_ctx_t;

static double gpt_loss(void *ctx) {
    gpt_ctx_t *c = ctx;
    sym_forward_t f = {1, 0, 0};
    sym_input_t in = {GB, GS, NULL, c->tok};
    sym_tensor_t logits;
    CHECK(sym_model_forward(c->m, &in, &f, &logits) == 0, "%s", sym_last_error());
    return sym_softmax_xent(&logits, c->y, GV, 1.0f, NULL, NULL) / (GB * GS);
}

/* The ready hook: offsets strictly descending, each the start of a tensor,
 * and a copy of the gradients [lo, P) as they were when reported final. */
#define GPT_MAX_READY 64

typedef struct {
    const sym_model_t *m;
    const float *g;
    size_t P, last;
    int calls;
    size_t lo[GPT_MAX_READY];
    float *snap[GPT_MAX_READY];
} gpt_ready_t;

static void gpt_on_ready(void *user, size_t lo) {
    gpt_ready_t *r = user;
    CHECK(lo < r->last, "gradients reported ready out of order (%zu after %zu)", lo, r->last);
    CHECK(r->calls < GPT_MAX_READY, "more than %d ready calls", GPT_MAX_READY);
    int boundary = 0;
    for (int i = 0; i < sym_model_num_tensors(r->m); i++)
        boundary |= sym_model_param(r->m, i)->offset == lo;
    CHECK(boundary, "ready reported offset %zu, which is not the start of a tensor", lo);
    float *s = malloc((r->P - lo) * sizeof *s);
    CHECK(s != NULL, "out of memory");
    memcpy(s, r->g + lo, (r->P - lo) * sizeof *s);
    r->lo[r->calls] = lo;
    r->snap[r->calls++] = s;
    r->last = lo;
}

/* Forward, loss gradient over the logits in place, backward (adding into the
 * gradients as they are); returns the mean loss. */
static double gpt_backward(gpt_ctx_t *c, gpt_ready_t *ready) {
    sym_forward_t f = {1, 0, 0};
    sym_input_t in = {GB, GS, NULL, c->tok};
    sym_tensor_t logits;
    CHECK(sym_model_forward(c->m, &in, &f, &logits) == 0, "%s", sym_last_error());
    CHECK(logits.shape[0] == GB * GS && logits.shape[1] == sym_model_logit_width(c->m),
          "GPT logits are (%lld,%lld), expected (%d,%d)", (long long)logits.shape[0],
          (long long)logits.shape[1], GB * GS, sym_model_logit_width(c->m));
    double l = sym_softmax_xent(&logits, c->y, GV, 1.0f / (GB * GS), &logits, NULL);
    CHECK(sym_model_backward(c->m, &logits, ready ? gpt_on_ready : NULL, ready) == 0, "%s",
          sym_last_error());
    return l / (GB * GS);
}

/* dropout > 0: on the embeddings, the residual branches and the attention
 * probabilities, the masks fixed by (step 0, row 0) */
static void check_gpt_model(float dropout) {
    sym_model_config_t cfg;
    memset(&cfg, 0, sizeof cfg);
    CHECK(sym_model_parse("gpt:L=2,C=8,H=2,V=11,T=5", &cfg) == 0, "%s", sym_last_error());
    cfg.seed = test_next(&rng);
    cfg.dropout = dropout;
    CHECK(cfg.vocab == GV && cfg.padded_vocab == 128 && cfg.max_seq == 5 && GS < cfg.max_seq,
          "gpt:L=2,C=8,H=2,V=11,T=5 parsed to V=%d, Vp=%d, T=%d", cfg.vocab, cfg.padded_vocab,
          cfg.max_seq);
    gpt_ctx_t c;
    CHECK(sym_model_create(&cfg, GB, 0, &c.m) == 0, "%s", sym_last_error());
    const int C = cfg.n_embd, V = cfg.vocab, Vp = cfg.padded_vocab, nt = sym_model_num_tensors(c.m);
    size_t P = sym_model_num_params(c.m);
    float *params = sym_model_params(c.m), *grads = sym_model_grads(c.m);
    CHECK(nt == 2 + 12 * cfg.n_layer + 2, "the GPT has %d tensors, expected %d", nt,
          2 + 12 * cfg.n_layer + 2);
    for (int i = 0; i < GB * GS; i++) {
        c.tok[i] = (int32_t)(test_next(&rng) % GV);
        c.y[i] = (int32_t)(test_next(&rng) % GV);
    }
    c.tok[GS + 1] = c.tok[1]; /* a token at the same position in both sequences */
    c.tok[2] = c.tok[0];      /* and twice in one */
    /* Redraw until every tensor has a gradient of 0.1 or more to compare
     * (with 8 predictions, a LayerNorm's can all be small). */
    gpt_ready_t ready;
    double loss;
    int tries = 0;
    for (;; tries++) {
        CHECK(tries < 1000, "could not draw GPT weights with every tensor's gradient above 0.1");
        for (int i = 0; i < nt; i++) {
            const sym_param_t *p = sym_model_param(c.m, i);
            float *w = params + p->offset;
            if (strstr(p->name, "ln_") && strstr(p->name, ".weight"))
                fill(w, p->numel, 0.5, 2.0);
            else /* wte and wpe too, the padding rows included */
                fill(w, p->numel, -0.8, 0.8);
        }
        /* the analytic gradient, from zero, with the ready hook watching */
        for (int k = 0; k < ready.calls && tries; k++) free(ready.snap[k]);
        memset(&ready, 0, sizeof ready);
        ready.m = c.m;
        ready.g = grads;
        ready.P = P;
        ready.last = P + 1;
        sym_model_zero_grads(c.m);
        loss = gpt_backward(&c, &ready);
        double smallest = 1e9;
        for (int i = 0; i < nt; i++) {
            const sym_param_t *p = sym_model_param(c.m, i);
            double big = 0;
            for (size_t k = 0; k < p->numel; k++) big = fmax(big, fabs(grads[p->offset + k]));
            CHECK(big > 0, "%s has no gradient at all: backward left it 0", p->name);
            smallest = fmin(smallest, big);
        }
        if (smallest > 0.1) break;
    }
    CHECK(fabs(loss - gpt_loss(&c)) <= 1e-6 * loss, "the loss %.9g differs from a forward's %.9g",
          loss, gpt_loss(&c));
    CHECK(ready.calls > 0 && ready.last == 0,
          "backward never reported the first tensors' gradients ready (%d calls, last %zu)",
          ready.calls, ready.last);
    for (int k = 0; k < ready.calls; k++) {
        CHECK(memcmp(ready.snap[k], grads + ready.lo[k], (P - ready.lo[k]) * sizeof(float)) == 0,
              "gradients [%zu, %zu) were reported final, then changed", ready.lo[k], P);
        free(ready.snap[k]);
    }
    float *g = malloc(P * sizeof *g);
    CHECK(g != NULL, "out of memory");
    memcpy(g, grads, P * sizeof *g);
    const sym_param_t *wte = sym_model_find_param(c.m, "wte");
    CHECK(wte && wte->offset == 0 && wte->shape[0] == Vp && wte->shape[1] == C,
          "wte is not the (%d,%d) tensor at offset 0", Vp, C);
    for (size_t i = (size_t)V * C; i < (size_t)Vp * C; i++)
        CHECK(g[i] == 0.0f, "wte padding row %zu (>= V = %d) has gradient %g", i / C, V,
              (double)g[i]);
    /* backward adds: a second pass without zeroing doubles every gradient */
    gpt_backward(&c, NULL);
    for (int i = 0; i < nt; i++) {
        const sym_param_t *p = sym_model_param(c.m, i);
        double big = 0;
        for (size_t k = 0; k < p->numel; k++) big = fmax(big, fabs(g[p->offset + k]));
        for (size_t k = 0; k < p->numel; k++) {
            size_t at = p->offset + k;
            CHECK(fabs(grads[at] - 2.0 * g[at]) <= 1e-5 * big, "%s element %zu: %.9g after two "
                  "backward passes, %.9g after one: backward does not add", p->name, k,
                  (double)grads[at], (double)g[at]);
        }
    }
    /* every tensor against finite differences */
    double *num = malloc(P * sizeof *num);
    CHECK(num != NULL, "out of memory");
    numeric(gpt_loss, &c, params, P, num);
    printf("  gpt:L=2,C=8,H=2,V=11,T=5, %d x %d tokens (Vp %d, T 5), dropout %g, loss %.4f, %d "
           "ready calls, weights drawn %d time%s:\n",
           GB, GS, Vp, (double)dropout, loss, ready.calls, tries + 1, tries ? "s" : "");
    for (int i = 0; i < nt; i++) {
        const sym_param_t *p = sym_model_param(c.m, i);
        char what[80];
        snprintf(what, sizeof what, "gpt %s", p->name);
        compare(what, num + p->offset, g + p->offset, p->numel);
    }
    free(num);
    free(g);
    sym_model_destroy(c.m);
}

int main(void) {
    uint64_t seed = test_seed();
    printf("train_gradcheck: seed %llu (SYMTRAIN_TEST_SEED=%llu replays it)\n",
           (unsigned long long)seed, (unsigned long long)seed);
    rng = test_rng(seed, 0);
    check_linear();
    check_activation(0);
    check_activation(1);
    check_activation(2);
    check_activation(3);
    check_gelu_tanh_formula();
    check_dropout_masks();
    check_residual();
    check_embed();
    check_layernorm();
    check_attention();
    check_attention_dropout();
    check_xent();
    check_model("mlp:6-5-4-3", SYM_ACT_GELU, 0.0f);
    check_model("mlp:6-8-3", SYM_ACT_GELU, 0.3f);
    check_model("mlp:6-8-3", SYM_ACT_RELU, 0.3f);
    check_model("mlp:6-3", SYM_ACT_GELU, 0.0f);
    check_thread_independence(); /* it leaves the threads at 1 */
    check_gpt_model(0.0f);
    check_gpt_model(0.1f);
    printf("train_gradcheck: all gradients match\n");
    return 0;
}
