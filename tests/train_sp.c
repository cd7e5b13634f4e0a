/*
 * train_sp — sequence parallelism (Megatron-SP) for the GPT: the LayerNorm,
 * dropout and residual regions split along the sequence over the TP team
 * train exactly like plain TP and like the whole model on one PE.
 *
 * Every PE trains the 1-PE model (sym_model_create) on the whole global batch,
 * its reference, with dropout off and on (0.1: the embeddings and both
 * residual branches of every block, masks keyed by the token's global row).
 * Then, for each mesh over the job (tp=n and, on 4 PEs, dp=2 x tp=2), the
 * model split over the tp rows trains from the same seed on the same batch,
 * each dp row taking its share of the sequences, once with plain TP and once
 * with SP, and once with plain TP whose all-reduces overlap its GEMMs in 3
 * row chunks (cfg.tp_chunks), for a few SGD steps (momentum): every step's
 * loss (averaged over dp) must match the reference's to 1e-5 relative, and
 * the final weights the reference's slices to 1e-5 of each tensor's largest
 * weight, and SP's and the overlapped run's those of plain TP's. The sequence (15 tokens, and 3 tokens for one step) does not
 * divide over 2 or 4 PEs, so the shards are uneven, and at tp=4 a 3-token
 * sequence leaves one PE no positions at all. With dropout on, most logits of
 * a training forward must differ from an evaluation forward's (the masks are
 * really drawn).
 * Memory: SP's activation pool holds less than plain TP's, by exactly what
 * the planner (sym_plan_evaluate, models/gpt.c's buffers) predicts, and the
 * planner's activation bytes for both equal the pools'; plain TP over the
 * reference's rows holds less than the reference (its heads' buffers only).
 */
#include <math.h>
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <symtrain/symtrain.h>

#include "test.h"
#include "train_test.h"

enum { GB = 4, T = 15, SHORT = 3, STEPS = 5 };
enum { V = 62 };
static const char spec[] = "gpt:L=2,C=32,H=4,V=62,T=15";
static float loss_sym; /* symmetric: the dp average of the loss */

static int32_t tokens[STEPS][GB][T + 1];

static sym_optim_t *sgd(sym_model_t *m) {
    sym_optim_config_t oc = {SYM_OPT_SGD, 0.9f, 0, 0, 0, 0};
    sym_optim_t *o;
    CHECK(sym_optim_create(&oc, sym_model_num_params(m), &o) == 0, "%s", sym_last_error());
    return o;
}

/* Step s's sequences [row0, row0 + rows): the mean loss; the last step uses
 * only the first SHORT tokens of each sequence. */
static double train_step(sym_model_t *m, sym_optim_t *o, sym_ddp_t *ddp, int s, int row0,
                         int rows) {
    int seq = s == STEPS - 1 ? SHORT : T;
    int32_t in[GB * T], lab[GB * T];
    for (int r = 0; r < rows; r++)
        for (int t = 0; t < seq; t++) {
            in[r * seq + t] = tokens[s][row0 + r][t];
            lab[r * seq + t] = tokens[s][row0 + r][t + 1];
        }
    sym_input_t x = {rows, seq, NULL, in};
    sym_forward_t f = {1, (uint64_t)s, row0};
    sym_tensor_t logits;
    sym_model_zero_grads(m);
    CHECK(sym_model_forward(m, &x, &f, &logits) == 0, "forward: %s", sym_last_error());
    double loss = sym_model_xent(m, &logits, lab, 1.0f / (rows * seq), &logits, NULL);
    if (ddp) sym_ddp_begin(ddp);
    CHECK(sym_model_backward(m, &logits, ddp ? sym_ddp_ready : NULL, ddp) == 0, "backward: %s",
          sym_last_error());
    if (ddp) CHECK(sym_ddp_finish(ddp) == 0, "ddp: %s", sym_last_error());
    sym_optim_step(o, sym_model_params(m), sym_model_grads(m), 0.2f);
    return loss / (rows * seq);
}

/* Weights w of model m against ref (whole tensors from w_ref if whole, else
 * the same split): each within 1e-5 of its tensor's largest |weight|. */
static void same_weights(const char *what, sym_model_t *m, const float *w, sym_model_t *ref,
                         const float *w_ref, int whole, int tp, int tr) {
    for (int i = 0; i < sym_model_num_tensors(m); i++) {
        const sym_param_t *p = sym_model_param(m, i), *q = sym_model_param(ref, i);
        float big = 0;
        for (size_t k = 0; k < q->numel; k++) big = fmaxf(big, fabsf(w_ref[q->offset + k]));
        for (size_t k = 0; k < p->numel; k++) {
            float e = whole ? slice_of(p, w_ref + q->offset, tp, tr, k, V) : w_ref[q->offset + k];
            CHECK(fabsf(w[p->offset + k] - e) <= 1e-5f * big, "%s: %s[%zu] = %.8g, expected %.8g "
                  "(largest %.3g)", what, p->name, k, w[p->offset + k], e, big);
        }
    }
}

/* A training forward of the model (with dropout) gives other logits than an
 * evaluation one: most of them differ, so the masks are really drawn. */
static void dropout_drops(sym_model_t *m) {
    int32_t in[GB * T];
    for (int r = 0; r < GB; r++)
        for (int t = 0; t < T; t++) in[r * T + t] = tokens[0][r][t];
    sym_input_t x = {GB, T, NULL, in};
    sym_tensor_t logits;
    sym_forward_t train = {1, 0, 0}, eval = {0, 0, 0};
    CHECK(sym_model_forward(m, &x, &train, &logits) == 0, "%s", sym_last_error());
    size_t n = (size_t)sym_tensor_numel(&logits), differ = 0;
    float *a = malloc(n * sizeof *a);
    CHECK(a != NULL, "out of memory");
    memcpy(a, sym_tensor_f32(&logits), n * sizeof *a);
    CHECK(sym_model_forward(m, &x, &eval, &logits) == 0, "%s", sym_last_error());
    const float *b = sym_tensor_f32(&logits);
    for (size_t i = 0; i < n; i++) differ += fabsf(a[i] - b[i]) > 1e-6f * fabsf(b[i]);
    CHECK(differ > (size_t)GB * T * V / 2, "dropout changed %zu of the %d logits of the "
          "vocabulary", differ, GB * T * V);
    free(a);
}

/* The planner's activation bytes a PE for this model on layout dp x tp. */
static size_t planned_acts(const sym_model_config_t *cfg, int n, int dp, int tp) {
    sym_plan_request_t r;
    sym_plan_defaults(&r, SYM_PLAN_CPU);
    r.model = *cfg;
    r.pes = n;
    r.batch = GB;
    sym_plan_layout_t l = {dp, tp, 1, 1, 0, 0, 0};
    sym_plan_result_t e;
    CHECK(sym_plan_evaluate(&r, &l, &e) == 0, "%s", sym_last_error());
    return e.mem.acts;
}

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    uint64_t seed = test_pe_start("train_sp");
    if (n != 2 && n != 4) {
        if (me == 0) printf("train_sp: SKIP: runs on 2 or 4 PEs (tp=2, tp=4, dp=2 x tp=2)\n");
        shmem_finalize();
        return 77;
    }
    test_gpt_tokens(&tokens[0][0][0], STEPS, GB, T, V, seed);
    for (int di = 0; di < 2; di++) {
        sym_model_config_t cfg = test_gpt_config(spec, seed);
        cfg.dropout = di ? 0.1f : 0.0f;
        /* the reference: the whole model, the whole batch, on every PE alone */
        sym_model_t *ref;
        CHECK(sym_model_create(&cfg, GB, 0, &ref) == 0, "%s", sym_last_error());
        if (cfg.dropout > 0) dropout_drops(ref);
        sym_optim_t *ro = sgd(ref);
        double want[STEPS];
        for (int s = 0; s < STEPS; s++) want[s] = train_step(ref, ro, NULL, s, 0, GB);
        CHECK(want[STEPS - 2] < want[0] - 0.1, "the reference did not learn: %.4f -> %.4f",
              want[0], want[STEPS - 2]);
        const float *wr = sym_model_params(ref);

        char meshes[2][32];
        int nm = 0;
        snprintf(meshes[nm++], 32, "dp=1,tp=%d", n);
        if (n == 4) snprintf(meshes[nm++], 32, "dp=2,tp=2");
        for (int mi = 0; mi < nm; mi++) {
            sym_mesh_t *mesh;
            CHECK(sym_mesh_create(SHMEM_TEAM_WORLD, meshes[mi], &mesh) == 0, "%s",
                  sym_last_error());
            int dp = sym_mesh_size(mesh, 0), dr = sym_mesh_coord(mesh, 0);
            int tp = sym_mesh_size(mesh, 1), tr = sym_mesh_coord(mesh, 1);
            shmem_team_t dteam = sym_mesh_team(mesh, 0), tteam = sym_mesh_team(mesh, 1);
            float *w_tp = NULL;
            size_t acts[3];
            for (int mode = 0; mode < 3; mode++) { /* plain TP, SP, TP overlapped */
                static const char *const name[3] = {"", ",sp", " overlap 3"};
                int sp = mode == 1;
                char what[160];
                snprintf(what, sizeof what, "%s%s dropout %.1f", meshes[mi], name[mode],
                         (double)cfg.dropout);
                sym_model_config_t mc = cfg;
                mc.seq_parallel = sp;
                mc.tp_chunks = mode == 2 ? 3 : 0;
                sym_model_t *m;
                CHECK(sym_model_create_tp(&mc, GB / dp, 1, tteam, &m) == 0, "%s",
                      sym_last_error());
                size_t cuts[512], pb, gb;
                int nc = sym_model_num_tensors(m);
                for (int i = 0; i < nc; i++) cuts[i] = sym_model_param(m, i)->offset;
                sym_ddp_t *ddp = NULL;
                CHECK(sym_ddp_create(dteam, sym_model_grads(m), sym_model_num_params(m), cuts,
                                     nc, 4096, &ddp) == 0, "%s", sym_last_error());
                sym_optim_t *o = sgd(m);
                for (int s = 0; s < STEPS; s++) {
                    loss_sym = (float)train_step(m, o, ddp, s, dr * (GB / dp), GB / dp);
                    CHECK(sym_allreduce_sum_f32(dteam, &loss_sym, 1) == 0, "%s",
                          sym_last_error());
                    double got = loss_sym / dp;
                    CHECK(fabs(got - want[s]) <= 1e-5 * fabs(want[s]), "%s step %d: loss %.8f, "
                          "1 PE %.8f (%.2g relative)", what, s, got, want[s],
                          fabs(got - want[s]) / want[s]);
                    if (me == 0)
                        printf("train_sp: %-28s step %d loss %.6f  (1 PE %.6f)\n", what, s, got,
                               want[s]);
                }
                const float *w = sym_model_params(m);
                same_weights(what, m, w, ref, wr, 1, tp, tr);
                if (mode == 0) {
                    CHECK((w_tp = malloc(sym_model_num_params(m) * sizeof *w_tp)) != NULL,
                          "out of memory");
                    memcpy(w_tp, w, sym_model_num_params(m) * sizeof *w_tp);
                } else {
                    same_weights(what, m, w, m, w_tp, 0, tp, tr); /* against plain TP */
                }
                sym_model_memory(m, &pb, &gb, &acts[mode]);
                size_t plan = planned_acts(&mc, n, dp, tp);
                CHECK(plan == acts[mode], "%s: the planner predicts %zu activation bytes a PE, "
                      "the pool holds %zu", what, plan, acts[mode]);
                sym_optim_destroy(o);
                sym_ddp_destroy(ddp);
                sym_model_destroy(m);
            }
            CHECK(acts[1] < acts[0] && acts[2] == acts[0], "%s: SP holds %zu activation bytes, "
                  "plain TP %zu, overlapped TP %zu", meshes[mi], acts[1], acts[0], acts[2]);
            if (dp == 1) { /* the same rows as the reference: TP splits the head-local buffers */
                size_t rp, rg, racts;
                sym_model_memory(ref, &rp, &rg, &racts);
                CHECK(acts[0] < racts, "%s: plain TP holds %zu activation bytes, 1 PE %zu",
                      meshes[mi], acts[0], racts);
                if (me == 0)
                    printf("train_sp: %s: plain TP holds %zu activation bytes a PE, 1 PE %zu "
                           "(%.3fx)\n", meshes[mi], acts[0], racts, (double)acts[0] / racts);
            }
            if (me == 0)
                printf("train_sp: %s dropout %.1f: activations a PE %zu bytes with SP, %zu "
                       "without (%.3fx), as the planner predicts\n",
                       meshes[mi], (double)cfg.dropout, acts[1], acts[0],
                       (double)acts[1] / (double)acts[0]);
            free(w_tp);
            sym_mesh_destroy(mesh);
        }
        sym_optim_destroy(ro);
        sym_model_destroy(ref);
    }
    if (me == 0) printf("train_sp: ok\n");
    shmem_finalize();
    return 0;
}
