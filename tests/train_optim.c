/*
 * train_optim — the optimizers, the schedule and clipping against reference
 * formulas computed in double.
 *
 * SGD+momentum and AdamW run 25 steps on random gradients, with a no-decay
 * range (as the trainer marks biases); every parameter is compared with a
 * double-precision reference of the update rule written out here, to fp32
 * rounding (relative 2e-5 after 25 steps). Saving the state mid-way, loading it
 * into a fresh optimizer and continuing must give bit-identical parameters;
 * loading another kind or size is refused. The schedule is checked at its
 * corners, and clipping against the norm computed here.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <symtrain/symtrain.h>

#include "test.h"

enum { N = 257, STEPS = 25, ND_LO = 200, ND_LEN = 40 };

static test_rng_t rng;

static int decays(size_t i) { return !(i >= ND_LO && i < ND_LO + ND_LEN); }

static void check_optimizer(sym_optim_kind_t kind) {
    sym_optim_config_t cfg = {kind, 0.9f, 0.9f, 0.999f, 1e-8f, 0.05f};
    sym_optim_t *o, *fresh;
    CHECK(sym_optim_create(&cfg, N, &o) == 0, "%s", sym_last_error());
    CHECK(sym_optim_no_decay(o, ND_LO, ND_LEN) == 0, "%s", sym_last_error());
    CHECK(sym_optim_no_decay(o, N, 1) == SYM_EINVAL, "a range past the end was accepted");
    float w[N], g[STEPS][N], wcopy[N];
    double rw[N], m[N] = {0}, v[N] = {0};
    for (int i = 0; i < N; i++) rw[i] = w[i] = (float)(2 * test_uniform(&rng) - 1);
    for (int s = 0; s < STEPS; s++)
        for (int i = 0; i < N; i++) g[s][i] = (float)((2 * test_uniform(&rng) - 1) * (i % 7 + 1) * 0.1);
    void *state = NULL;
    size_t state_len = 0;
    for (int s = 0; s < STEPS; s++) {
        double lr = 0.01 * (1 + s % 3);
        if (s == 12) { /* snapshot half-way */
            state_len = sym_optim_state_size(o);
            state = malloc(state_len);
            sym_optim_state_save(o, state);
            memcpy(wcopy, w, sizeof w);
        }
        sym_optim_step(o, w, g[s], (float)lr);
        for (int i = 0; i < N; i++) { /* the reference, in double */
            double wd = decays((size_t)i) ? cfg.weight_decay : 0.0, gi = g[s][i];
            if (kind == SYM_OPT_SGD) {
                gi += wd * rw[i];
                m[i] = cfg.momentum * m[i] + gi;
                rw[i] -= lr * m[i];
            } else {
                rw[i] *= 1 - lr * wd;
                m[i] = cfg.beta1 * m[i] + (1 - cfg.beta1) * gi;
                v[i] = cfg.beta2 * v[i] + (1 - cfg.beta2) * gi * gi;
                double mh = m[i] / (1 - pow(cfg.beta1, s + 1)), vh = v[i] / (1 - pow(cfg.beta2, s + 1));
                rw[i] -= lr * mh / (sqrt(vh) + cfg.eps);
            }
        }
    }
    double worst = 0;
    for (int i = 0; i < N; i++) {
        /* relative, with a floor: near-zero parameters are sums of cancelling
         * updates of size ~1e-2, whose fp32 rounding is ~1e-9 each */
        double err = fabs(w[i] - rw[i]) / (1e-2 + fabs(rw[i]));
        worst = fmax(worst, err);
        CHECK(err < 2e-5, "%s: parameter %d is %.9g, reference %.9g", sym_optim_name(kind), i,
              (double)w[i], rw[i]);
    }
    CHECK(sym_optim_steps(o) == STEPS, "step count %llu", (unsigned long long)sym_optim_steps(o));
    /* resume from the snapshot: bit-identical */
    CHECK(sym_optim_create(&cfg, N, &fresh) == 0, "%s", sym_last_error());
    CHECK(sym_optim_no_decay(fresh, ND_LO, ND_LEN) == 0, "%s", sym_last_error());
    CHECK(sym_optim_state_load(fresh, state, state_len) == 0, "%s", sym_last_error());
    for (int s = 12; s < STEPS; s++) sym_optim_step(fresh, wcopy, g[s], (float)(0.01 * (1 + s % 3)));
    CHECK(memcmp(wcopy, w, sizeof w) == 0, "%s: resuming from saved state is not bit-identical",
          sym_optim_name(kind));
    /* refusals */
    sym_optim_config_t other = cfg;
    other.kind = kind == SYM_OPT_SGD ? SYM_OPT_ADAMW : SYM_OPT_SGD;
    sym_optim_t *x;
    CHECK(sym_optim_create(&other, N, &x) == 0, "%s", sym_last_error());
    CHECK(sym_optim_state_load(x, state, state_len) == SYM_EMISMATCH, "another kind's state loaded");
    sym_optim_destroy(x);
    CHECK(sym_optim_create(&cfg, N + 1, &x) == 0, "%s", sym_last_error());
    CHECK(sym_optim_state_load(x, state, state_len) == SYM_EMISMATCH, "another size's state loaded");
    ((char *)state)[0] ^= 0x55;
    CHECK(sym_optim_state_load(x, state, state_len) == SYM_ECORRUPT, "garbage loaded as state");
    sym_optim_destroy(x);
    printf("  %-6s %d steps match the fp64 reference (worst relative error %.2g); resume is "
           "bit-identical\n", sym_optim_name(kind), STEPS, worst);
    free(state);
    sym_optim_destroy(o);
    sym_optim_destroy(fresh);
}

static void check_schedule(void) {
    sym_lr_schedule_t s = {1e-3f, 1e-5f, 10, 110};
    CHECK(fabsf(sym_lr_at(&s, 0) - 1e-4f) < 1e-9f, "first warmup step %g", (double)sym_lr_at(&s, 0));
    CHECK(fabsf(sym_lr_at(&s, 9) - 1e-3f) < 1e-9f, "last warmup step %g", (double)sym_lr_at(&s, 9));
    for (int k = 0; k < 9; k++) CHECK(sym_lr_at(&s, k) < sym_lr_at(&s, k + 1), "warmup not increasing");
    CHECK(fabsf(sym_lr_at(&s, 10) - 1e-3f) < 1e-9f, "peak %g", (double)sym_lr_at(&s, 10));
    double mid = 1e-5 + (1e-3 - 1e-5) * 0.5;
    CHECK(fabs(sym_lr_at(&s, 60) - mid) < 1e-8, "cosine midpoint %g, expected %g", (double)sym_lr_at(&s, 60), mid);
    CHECK(fabsf(sym_lr_at(&s, 110) - 1e-5f) < 1e-10f, "end %g", (double)sym_lr_at(&s, 110));
    CHECK(fabsf(sym_lr_at(&s, 500) - 1e-5f) < 1e-10f, "after the end %g", (double)sym_lr_at(&s, 500));
    for (int k = 10; k < 110; k++) CHECK(sym_lr_at(&s, k) >= sym_lr_at(&s, k + 1), "cosine rises at %d", k);
    sym_lr_schedule_t flat = {2e-3f, 0, 0, 0};
    CHECK(sym_lr_at(&flat, 7) == 2e-3f, "no warmup, no decay span: %g", (double)sym_lr_at(&flat, 7));
    printf("  %-6s warmup, peak, cosine midpoint and end are right\n", "lr");
}

static void check_clip(void) {
    float g[N], h[N];
    double ref = 0;
    for (int i = 0; i < N; i++) {
        g[i] = (float)(2 * test_uniform(&rng) - 1);
        ref += (double)g[i] * g[i];
    }
    ref = sqrt(ref);
    memcpy(h, g, sizeof g);
    double norm = sym_grad_clip(h, N, ref * 2); /* below the limit: untouched */
    CHECK(fabs(norm - ref) < 1e-12 * ref && !memcmp(g, h, sizeof g), "clip below the limit");
    norm = sym_grad_clip(h, N, 0.5);
    CHECK(fabs(norm - ref) < 1e-12 * ref, "reported norm %g, reference %g", norm, ref);
    double after = sym_grad_norm(h, N);
    CHECK(fabs(after - 0.5) < 1e-5, "norm after clipping to 0.5 is %.8f", after);
    for (int i = 0; i < N; i++)
        CHECK(fabs(h[i] - g[i] * 0.5 / ref) < 1e-6, "element %d not scaled uniformly", i);
    memcpy(h, g, sizeof g);
    sym_grad_clip(h, N, 0); /* 0: off */
    CHECK(!memcmp(g, h, sizeof g), "clip 0 changed the gradients");
    printf("  %-6s norm %.4f clipped to 0.5 exactly, direction kept\n", "clip", ref);
}

int main(void) {
    uint64_t seed = test_seed();
    printf("train_optim: seed %llu\n", (unsigned long long)seed);
    rng = test_rng(seed, 2);
    check_optimizer(SYM_OPT_SGD);
    check_optimizer(SYM_OPT_ADAMW);
    check_schedule();
    check_clip();
    printf("train_optim: ok\n");
    return 0;
}
