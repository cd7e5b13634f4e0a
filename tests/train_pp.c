/*
 * train_pp — pipeline parallelism of the GPT: stages over the PEs, micro-
 * batches, 1F1B, one-sided inboxes with credits; it trains like the whole
 * model on one PE.
 *
 * Every PE trains the 1-PE model (sym_model_create) on the whole global batch
 * for 20 AdamW steps with clipping, its reference. Then for each layout of the
 * job (2 PEs: pp=2 with 8 micro-batches, and again with inboxes of one slot;
 * 4 PEs: pp=4, dp=2 x pp=2, pp=4 with 8 micro-batches and one slot, and
 * tp=2 x pp=2) the pipeline trains from the same seed on the same global
 * batch. Its weights must start as exactly the 1-PE model's tensors of the
 * same names (their tensor-parallel slices under tp). At every step
 * its loss (from the last stages, summed over the job) must match the
 * reference's to 1e-5 relative; the first step's gradients of every tensor a
 * stage holds (sliced as its weights) (the tied wte's too, after the first and last stage summed
 * theirs) must match the reference's tensor of that name to 1e-5 of the
 * largest gradient; the two copies of wte must still be equal bit for bit at
 * the end; and a sender must never have had more messages in an inbox than it
 * has slots.
 * The credits must really hold a sender back: with one slot, stage 1 waits
 * 0.3 s before its first step, so stage 0's second forward send has to wait
 * for the credit of its first (counted, and timed); without the wait it would
 * overwrite a slot stage 1 has not read (which the receiver checks).
 * Bad layouts (more stages than blocks) are refused with a message.
 */
#include <math.h>
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <symtrain/symtrain.h>

#include "test.h"
#include "train_test.h"

enum { GB = 8, T = 32, V = 128, STEPS = 20 };
static const char spec[] = "gpt:L=4,C=64,H=4,V=128,T=32";
static const float LR = 3e-3f, CLIP = 1.0f;
static float loss_sym[1]; /* symmetric: the job's loss sum */

static int32_t tokens[STEPS][GB][T + 1];

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Sequences [row0, row0 + rows) of step s's batch: inputs and labels. */
static void batch(int s, int row0, int rows, int32_t *in, int32_t *lab) {
    for (int r = 0; r < rows; r++)
        for (int t = 0; t < T; t++) {
            in[r * T + t] = tokens[s][row0 + r][t];
            lab[r * T + t] = tokens[s][row0 + r][t + 1];
        }
}

/* The reference's step on the whole batch: the mean loss; grads (may be
 * NULL) receives the gradients before clipping. */
static double ref_step(sym_model_t *m, sym_optim_t *o, int s, float *grads) {
    int32_t in[GB * T], lab[GB * T];
    batch(s, 0, GB, in, lab);
    sym_input_t x = {GB, T, NULL, in};
    sym_forward_t f = {1, (uint64_t)s, 0};
    sym_tensor_t logits;
    sym_model_zero_grads(m);
    CHECK(sym_model_forward(m, &x, &f, &logits) == 0, "forward: %s", sym_last_error());
    double loss = sym_softmax_xent(&logits, lab, V, 1.0f / (GB * T), &logits, NULL);
    CHECK(sym_model_backward(m, &logits, NULL, NULL) == 0, "backward: %s", sym_last_error());
    size_t np = sym_model_num_params(m);
    if (grads) memcpy(grads, sym_model_grads(m), np * sizeof *grads);
    sym_grad_clip(sym_model_grads(m), np, CLIP);
    sym_optim_step(o, sym_model_params(m), sym_model_grads(m), LR);
    return loss / (GB * T);
}

typedef struct {
    const char *mesh;
    int micro, slots; /* micro-batches a step; inbox slots (0: the default) */
    int slow_start;   /* stage 1 waits before its first step (the credit test) */
} layout_t;

static void run_layout(const layout_t *L, const sym_model_config_t *cfg, sym_model_t *ref,
                       const float *w0, const double *want, const float *g0, float gmax) {
    int me = shmem_my_pe();
    sym_mesh_t *mesh;
    CHECK(sym_mesh_create(SHMEM_TEAM_WORLD, L->mesh, &mesh) == 0, "%s", sym_last_error());
    int ppd = sym_mesh_dim(mesh, "pp"), dpd = sym_mesh_dim(mesh, "dp"), tpd = sym_mesh_dim(mesh, "tp");
    int tp = tpd >= 0 ? sym_mesh_size(mesh, tpd) : 1, tr = tpd >= 0 ? sym_mesh_coord(mesh, tpd) : 0;
    int dp = dpd >= 0 ? sym_mesh_size(mesh, dpd) : 1, dr = dpd >= 0 ? sym_mesh_coord(mesh, dpd) : 0;
    int S = sym_mesh_size(mesh, ppd), s = sym_mesh_coord(mesh, ppd);
    int rows = GB / dp, R = rows / L->micro;
    sym_pipe_config_t pc = {L->micro, R, T, L->slots, 1.0, 0, 0, 1};
    sym_pipe_t *p;
    CHECK(sym_pipe_create(cfg, mesh, &pc, &p) == 0, "%s: %s", L->mesh, sym_last_error());
    CHECK(sym_pipe_stage(p) == s && sym_pipe_stages(p) == S, "stage %d of %d", sym_pipe_stage(p),
          sym_pipe_stages(p));
    sym_model_t *m = sym_pipe_model(p);
    /* the plan covers the blocks once, in order, every stage at least one */
    int at = 0, first, nl;
    for (int k = 0; k < S; k++) {
        sym_pipe_layers(p, k, &first, &nl);
        CHECK(first == at && nl >= 1, "%s: stage %d holds blocks [%d, %d), expected from %d",
              L->mesh, k, first, first + nl, at);
        at += nl;
    }
    CHECK(at == cfg->n_layer, "%s: the stages hold %d of %d blocks", L->mesh, at, cfg->n_layer);
    /* what this stage holds, and its weights: the 1-PE model's tensors of those names */
    sym_pipe_layers(p, s, &first, &nl);
    int nt = sym_model_num_tensors(m);
    CHECK(nt == 12 * nl + (s == 0) * 2 + (s == S - 1) * 2 + (S > 1 && s == S - 1),
          "%s: stage %d holds %d tensors", L->mesh, s, nt);
    CHECK((s == 0 || s == S - 1) == (sym_model_find_param(m, "wte") != NULL),
          "%s: stage %d and wte", L->mesh, s);
    CHECK((s == 0) == (sym_model_find_param(m, "wpe") != NULL), "wpe on stage %d", s);
    CHECK((s == S - 1) == (sym_model_find_param(m, "ln_f.bias") != NULL), "ln_f on stage %d", s);
    size_t np = sym_model_num_params(m);
    for (int i = 0; i < nt; i++) {
        const sym_param_t *a = sym_model_param(m, i), *b = sym_model_find_param(ref, a->name);
        CHECK(b && a->numel * (a->tp_dim >= 0 ? tp : 1) == b->numel &&
                  a->index == (int)(b - sym_model_param(ref, 0)),
              "%s: stage %d's %s is not the 1-PE model's", L->mesh, s, a->name);
        for (size_t k = 0; k < a->numel; k++)
            CHECK(sym_model_params(m)[a->offset + k] == slice_of(a, w0 + b->offset, tp, tr, k, V),
                  "%s: stage %d's %s[%zu] is not the 1-PE model's", L->mesh, s, a->name, k);
    }
    sym_optim_t *o = test_adamw(m);
    float *mg = malloc(np * sizeof *mg);
    CHECK(mg, "out of memory");
    int32_t *in = malloc(sizeof(int32_t) * rows * T), *lab = malloc(sizeof(int32_t) * rows * T);
    CHECK(in && lab, "out of memory");
    double waited = 0;
    for (int st = 0; st < STEPS; st++) {
        batch(st, dr * rows, rows, in, lab);
        double t0 = now_s();
        if (L->slow_start && st == 0 && s == 1) {
            struct timespec ts = {0, 300 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
        double lsum;
        CHECK(sym_pipe_step(p, in, lab, rows, 0, 0, (float)dp / (GB * T), &lsum) == 0, "%s step %d: %s",
              L->mesh, st, sym_last_error());
        if (st == 0) {
            memcpy(mg, sym_model_grads(m), np * sizeof *mg);
            waited = now_s() - t0;
        }
        double norm;
        CHECK(sym_pipe_clip(p, CLIP, &norm) == 0, "%s", sym_last_error());
        sym_optim_step(o, sym_model_params(m), sym_model_grads(m), LR);
        loss_sym[0] = (float)lsum;
        CHECK(sym_allreduce_sum_f32(SHMEM_TEAM_WORLD, loss_sym, 1) == 0, "%s", sym_last_error());
        double got = loss_sym[0] / (GB * T);
        CHECK(fabs(got - want[st]) <= 1e-5 * fabs(want[st]), "%s step %d: loss %.8f, 1 PE %.8f "
              "(%.2g relative)", L->mesh, st, got, want[st], fabs(got - want[st]) / want[st]);
        if (me == 0 && (st % 5 == 0 || st == STEPS - 1))
            printf("train_pp: %-10s M=%d slots=%d step %2d loss %.6f  (1 PE %.6f)\n", L->mesh,
                   L->micro, L->slots, st, got, want[st]);
    }
    /* the first step's gradients, tensor by tensor, against the 1-PE model's */
    for (int i = 0; i < nt; i++) {
        const sym_param_t *a = sym_model_param(m, i), *b = sym_model_find_param(ref, a->name);
        for (size_t k = 0; k < a->numel; k++) {
            float e = slice_of(a, g0 + b->offset, tp, tr, k, V), got = mg[a->offset + k];
            CHECK(fabsf(got - e) <= 1e-5f * gmax, "%s stage %d: d %s[%zu] = %.8g, the 1-PE "
                  "model's %.8g (largest %.3g)", L->mesh, s, a->name, k, got, e, gmax);
        }
    }
    /* the tied weight's two copies: equal bit for bit (same sums, same updates) */
    shmem_barrier_all();
    if (S > 1 && s == 0) {
        size_t n = sym_model_find_param(m, "wte")->numel;
        float *copy = malloc(n * sizeof *copy);
        CHECK(copy, "out of memory");
        int last = shmem_team_translate_pe(sym_mesh_team(mesh, ppd), S - 1, SHMEM_TEAM_WORLD);
        shmem_getmem(copy, sym_model_params(m), n * sizeof *copy, last);
        CHECK(memcmp(copy, sym_model_params(m), n * sizeof *copy) == 0,
              "%s: the last stage's wte has drifted from stage 0's", L->mesh);
        free(copy);
    }
    shmem_barrier_all();
    sym_pipe_stats_t ps = sym_pipe_stats(p);
    int slots = L->slots ? L->slots : S;
    CHECK(ps.max_ahead <= (uint64_t)slots, "%s: %llu messages in an inbox of %d slots", L->mesh,
          (unsigned long long)ps.max_ahead, slots);
    if (S > 1)
        CHECK(ps.sent == (uint64_t)(STEPS * L->micro * ((s > 0) + (s < S - 1))),
              "%s stage %d sent %llu messages", L->mesh, s, (unsigned long long)ps.sent);
    if (L->slow_start && s == 0) {
        CHECK(ps.credit_waits >= 1 && waited >= 0.25, "%s: with one slot and stage 1 late, "
              "stage 0's first step waited %.3f s for %llu credits", L->mesh, waited,
              (unsigned long long)ps.credit_waits);
        printf("train_pp: one slot, stage 1 late by 0.3 s: stage 0 waited %llu times for a "
               "credit (first step %.2f s)\n", (unsigned long long)ps.credit_waits, waited);
    }
    free(in);
    free(lab);
    free(mg);
    sym_optim_destroy(o);
    sym_pipe_destroy(p);
    sym_mesh_destroy(mesh);
}

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    uint64_t seed = test_pe_start("train_pp");
    if (n != 2 && n != 4) {
        if (me == 0) printf("train_pp: SKIP: the layouts are for 2 or 4 PEs, not %d\n", n);
        shmem_finalize();
        return 77;
    }
    sym_blas_set_threads(1);
    sym_model_config_t cfg = test_gpt_config(spec, seed);
    test_gpt_tokens(&tokens[0][0][0], STEPS, GB, T, V, seed);

    sym_model_t *ref;
    CHECK(sym_model_create(&cfg, GB, 0, &ref) == 0, "%s", sym_last_error());
    sym_optim_t *ro = test_adamw(ref);
    size_t np = sym_model_num_params(ref);
    float *g0 = malloc(np * sizeof *g0), *w0 = malloc(np * sizeof *w0);
    CHECK(g0 && w0, "out of memory");
    memcpy(w0, sym_model_params(ref), np * sizeof *w0);
    double want[STEPS];
    for (int s = 0; s < STEPS; s++) want[s] = ref_step(ref, ro, s, s ? NULL : g0);
    float gmax = 0;
    for (size_t i = 0; i < np; i++) gmax = fmaxf(gmax, fabsf(g0[i]));
    CHECK(want[STEPS - 1] < want[0] - 0.3, "the reference did not learn: %.4f -> %.4f", want[0],
          want[STEPS - 1]);

    const layout_t two[] = {{"pp=2", 8, 0, 0}, {"pp=2", 8, 1, 1}};
    const layout_t four[] = {{"pp=4", 4, 0, 0}, {"dp=2,pp=2", 2, 0, 0}, {"pp=4", 8, 1, 0},
                             {"tp=2,pp=2", 4, 0, 0}};
    const layout_t *ls = n == 2 ? two : four;
    int nl = n == 2 ? 2 : 4;
    for (int i = 0; i < nl; i++) run_layout(&ls[i], &cfg, ref, w0, want, g0, gmax);

    /* more stages than blocks: refused, said */
    sym_mesh_t *mesh;
    CHECK(sym_mesh_create(SHMEM_TEAM_WORLD, n == 2 ? "pp=2" : "pp=4", &mesh) == 0, "%s",
          sym_last_error());
    sym_model_config_t small = cfg;
    CHECK(sym_model_parse("gpt:L=1,C=64,H=4,V=128,T=32", &small) == 0, "%s", sym_last_error());
    sym_pipe_config_t pc = {2, 1, T, 0, 1.0, 0, 0, 1};
    sym_pipe_t *p;
    CHECK(sym_pipe_create(&small, mesh, &pc, &p) == SYM_EINVAL, "1 block over %d stages", n);
    CHECK(strstr(sym_last_error(), "at least one block") != NULL, "%s", sym_last_error());
    sym_mesh_destroy(mesh);

    sym_optim_destroy(ro);
    sym_model_destroy(ref);
    free(g0);
    free(w0);
    if (me == 0) printf("train_pp: ok\n");
    shmem_finalize();
    return 0;
}
