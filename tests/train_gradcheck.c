/*
 * train_gradcheck — every hand-written backward pass against central finite
 * differences of its forward pass, on fresh random inputs (seed printed;
 * SYMTRAIN_TEST_SEED replays one).
 *
 * Each layer is checked through a scalar L = sum(R * y) with random R, so every
 * output element's gradient path is exercised. The forward runs in fp32 and L
 * is summed in double. The derivative is the Richardson extrapolation of
 * central differences with steps h = 1e-2 and h/2: truncation error O(h^4)
 * (a plain central difference, error O(h^2 f'''), was seen 1% off where two
 * GELU layers with large weights curve the loss), rounding noise about
 * sqrt(#outputs) * 6e-8 * |y| / h, both far below 1e-4. So the check
 * |num - ana| <= 1e-3 + 1e-3 |ana| has headroom, while a gradient off by 1%
 * fails it: every check also verifies that a 3% error in the analytic
 * gradient would have been caught, so the tolerance is known to be tight.
 * ReLU inputs are kept further from its kink than a step can move them, and
 * inputs are redrawn until some gradient is large enough to compare.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <symtrain/symtrain.h>

#include "test.h"

#define H 1e-2
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
    int kind; /* 0 relu, 1 gelu, 2 dropout */
} act_t;

static double act_loss(void *ctx) {
    act_t *c = ctx;
    if (c->kind == 0)
        sym_relu_forward(c->x, c->y, N);
    else if (c->kind == 1)
        sym_gelu_forward(c->x, c->y, N);
    else /* 8 rows of 8: the mask is a function of (key, step, row, unit) */
        sym_dropout_forward(c->x, c->y, c->mask, 8, 8, 0.3f, 0xfeed, 7, 3);
    return dot(c->r, c->y, N);
}

static void check_activation(int kind) {
    static const char *names[] = {"relu dx", "gelu dx", "dropout dx"};
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

int main(void) {
    uint64_t seed = test_seed();
    printf("train_gradcheck: seed %llu (SYMTRAIN_TEST_SEED=%llu replays it)\n",
           (unsigned long long)seed, (unsigned long long)seed);
    rng = test_rng(seed, 0);
    check_linear();
    check_activation(0);
    check_activation(1);
    check_activation(2);
    check_dropout_masks();
    check_xent();
    check_model("mlp:6-5-4-3", SYM_ACT_GELU, 0.0f);
    check_model("mlp:6-8-3", SYM_ACT_GELU, 0.3f);
    check_model("mlp:6-8-3", SYM_ACT_RELU, 0.3f);
    check_model("mlp:6-3", SYM_ACT_GELU, 0.0f);
    printf("train_gradcheck: all gradients match\n");
    return 0;
}
