/*
 * train_tp — tensor parallelism for the GPT: a model split over a TP team
 * trains like the whole model on one PE.
 *
 * Every PE trains the 1-PE model (sym_model_create) on the whole global
 * batch, its reference. Then, for each mesh over the job (tp=n, dp=2 x tp=n/2,
 * dp=n: the mesh's tp rows split the model, its dp rows average gradients
 * with the bucketed DDP of the real loop), the split model
 * (sym_model_create_tp) trains from the same seed on the same global batch,
 * each dp row taking its share of the sequences, for a few AdamW steps at a
 * high learning rate. Its loss (averaged over dp) must match the reference's
 * at every step to 1e-5 relative; its initial weights must be exactly, and its
 * first gradients to 1e-5 of the largest gradient, the slices of the
 * reference's that this PE should hold (the test's own slicing rule: q, k, v
 * rows of its heads for attn.c_attn, rows for mlp.c_fc, columns for the two
 * c_proj, its block of the vocabulary for wte, whole for the rest). The
 * vocabulary (62) does not divide over 4 PEs, so the vocabulary-parallel
 * embedding and cross-entropy (logits never gathered) run uneven blocks.
 * The first gradients' norm (sym_model_grad_norm: split tensors summed over
 * the team, whole ones once) is the reference's; gathering the split
 * weights gives the reference's whole tensors back, and scattering them
 * gives this PE's part.
 * The parameter table must name the right split shapes, and a GPT whose
 * heads do not divide over the team is refused.
 */
#include <math.h>
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <symtrain/symtrain.h>

#include "test.h"
#include "train_test.h"

enum { GB = 4, T = 16, STEPS = 5 };
enum { V = 62 };
static const char spec[] = "gpt:L=2,C=32,H=4,V=62,T=16";
static float loss_sym; /* symmetric: the dp average of the loss */

static int32_t tokens[STEPS][GB][T + 1];

/* One step on sequences [row0, row0 + rows) of step s's batch; the mean loss.
 * grads (may be NULL) receives the gradients before the update. */
static double train_step(sym_model_t *m, sym_optim_t *o, sym_ddp_t *ddp, int s, int row0,
                         int rows, float *grads) {
    int32_t in[GB * T], lab[GB * T];
    for (int r = 0; r < rows; r++)
        for (int t = 0; t < T; t++) {
            in[r * T + t] = tokens[s][row0 + r][t];
            lab[r * T + t] = tokens[s][row0 + r][t + 1];
        }
    sym_input_t x = {rows, T, NULL, in};
    sym_forward_t f = {1, (uint64_t)s, row0};
    sym_tensor_t logits;
    sym_model_zero_grads(m);
    CHECK(sym_model_forward(m, &x, &f, &logits) == 0, "forward: %s", sym_last_error());
    double loss = sym_model_xent(m, &logits, lab, 1.0f / (rows * T), &logits, NULL);
    if (ddp) sym_ddp_begin(ddp);
    CHECK(sym_model_backward(m, &logits, ddp ? sym_ddp_ready : NULL, ddp) == 0, "backward: %s",
          sym_last_error());
    if (ddp) CHECK(sym_ddp_finish(ddp) == 0, "ddp: %s", sym_last_error());
    if (grads) memcpy(grads, sym_model_grads(m), sym_model_num_params(m) * sizeof *grads);
    sym_optim_step(o, sym_model_params(m), sym_model_grads(m), 1e-2f);
    return loss / (rows * T);
}

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    uint64_t seed = test_pe_start("train_tp");
    sym_model_config_t cfg = test_gpt_config(spec, seed);
    test_gpt_tokens(&tokens[0][0][0], STEPS, GB, T, V, seed);

    /* the reference: the whole model, the whole batch, on every PE alone */
    sym_model_t *ref;
    CHECK(sym_model_create(&cfg, GB, 0, &ref) == 0, "%s", sym_last_error());
    sym_optim_t *ro = test_adamw(ref);
    size_t np = sym_model_num_params(ref);
    float *w0 = malloc(np * sizeof *w0), *g0 = malloc(np * sizeof *g0), *mg = malloc(np * 4);
    CHECK(w0 && g0 && mg, "out of memory");
    memcpy(w0, sym_model_params(ref), np * sizeof *w0);
    double want[STEPS];
    for (int s = 0; s < STEPS; s++) want[s] = train_step(ref, ro, NULL, s, 0, GB, s ? NULL : g0);
    float gmax = 0;
    for (size_t i = 0; i < np; i++) gmax = fmaxf(gmax, fabsf(g0[i]));
    CHECK(want[STEPS - 1] < want[0] - 0.2, "the reference did not learn: %.4f -> %.4f", want[0],
          want[STEPS - 1]);

    if (GB % n) { /* the heads (4) and the global batch (4) split over 1, 2 or 4 PEs */
        if (me == 0) printf("train_tp: SKIP: %d PEs do not divide this GPT's 4 heads\n", n);
        shmem_finalize();
        return 77;
    }
    char meshes[3][32];
    int nm = 0;
    snprintf(meshes[nm++], 32, "dp=1,tp=%d", n);
    if (n % 2 == 0 && n > 2) snprintf(meshes[nm++], 32, "dp=2,tp=%d", n / 2);
    if (n > 1) snprintf(meshes[nm++], 32, "dp=%d,tp=1", n);
    for (int mi = 0; mi < nm; mi++) {
        sym_mesh_t *mesh;
        CHECK(sym_mesh_create(SHMEM_TEAM_WORLD, meshes[mi], &mesh) == 0, "%s", sym_last_error());
        int dp = sym_mesh_size(mesh, 0), dr = sym_mesh_coord(mesh, 0);
        int tp = sym_mesh_size(mesh, 1), tr = sym_mesh_coord(mesh, 1);
        shmem_team_t dteam = sym_mesh_team(mesh, 0), tteam = sym_mesh_team(mesh, 1);
        sym_model_t *m;
        CHECK(sym_model_create_tp(&cfg, GB / dp, 1, tteam, &m) == 0, "%s", sym_last_error());
        CHECK(tp > 1 ? sym_model_num_params(m) < sym_model_num_params(ref)
                     : sym_model_num_params(m) == sym_model_num_params(ref),
              "tp=%d holds %zu of %zu parameters", tp, sym_model_num_params(m),
              sym_model_num_params(ref));
        const sym_param_t *qkv = sym_model_find_param(m, "h.1.attn.c_attn.weight");
        const sym_param_t *proj = sym_model_find_param(m, "h.1.mlp.c_proj.weight");
        const sym_param_t *bias = sym_model_find_param(m, "h.1.mlp.c_proj.bias");
        CHECK(qkv && qkv->shape[0] == 96 / tp && qkv->shape[1] == 32 &&
                  qkv->tp_dim == (tp > 1 ? 0 : -1),
              "c_attn.weight is %lldx%lld split %d", (long long)qkv->shape[0],
              (long long)qkv->shape[1], qkv->tp_dim);
        CHECK(proj && proj->shape[0] == 32 && proj->shape[1] == 128 / tp &&
                  proj->tp_dim == (tp > 1 ? 1 : -1), "mlp.c_proj.weight split wrong");
        CHECK(bias && bias->numel == 32 && bias->tp_dim == -1, "mlp.c_proj.bias split");
        /* the data-parallel average over the dp row, as the loop does it */
        size_t cuts[512];
        int nc = sym_model_num_tensors(m);
        for (int i = 0; i < nc; i++) cuts[i] = sym_model_param(m, i)->offset;
        sym_ddp_t *ddp = NULL;
        CHECK(sym_ddp_create(dteam, sym_model_grads(m), sym_model_num_params(m), cuts, nc, 4096,
                             &ddp) == 0, "%s", sym_last_error());
        /* its weights are the slices of the 1-PE model's, exactly */
        for (int i = 0; i < nc; i++) {
            const sym_param_t *p = sym_model_param(m, i), *q = sym_model_param(ref, i);
            CHECK(!strcmp(p->name, q->name), "tensor %d is %s, not %s", i, p->name, q->name);
            const float *w = sym_model_params(m) + p->offset;
            for (size_t k = 0; k < p->numel; k++)
                CHECK(w[k] == slice_of(p, w0 + q->offset, tp, tr, k, V), "%s: %s[%zu] = %.8g, "
                      "not the 1-PE model's %.8g", meshes[mi], p->name, k, w[k],
                      slice_of(p, w0 + q->offset, tp, tr, k, V));
        }
        sym_optim_t *o = test_adamw(m);
        for (int s = 0; s < STEPS; s++) {
            loss_sym = (float)train_step(m, o, ddp, s, dr * (GB / dp), GB / dp, s ? NULL : mg);
            CHECK(sym_allreduce_sum_f32(dteam, &loss_sym, 1) == 0, "%s", sym_last_error());
            double got = loss_sym / dp;
            CHECK(fabs(got - want[s]) <= 1e-5 * fabs(want[s]), "%s step %d: loss %.8f, 1 PE "
                  "%.8f (%.2g relative)", meshes[mi], s, got, want[s],
                  fabs(got - want[s]) / want[s]);
            if (me == 0)
                printf("train_tp: %-10s step %d loss %.6f  (1 PE %.6f)\n", meshes[mi], s, got,
                       want[s]);
        }
        /* the first step's gradients are the slices of the 1-PE model's (AdamW
         * turns fp32 noise in near-zero gradients into whole steps, so later
         * weights are compared through the losses only) */
        for (int i = 0; i < nc; i++) {
            const sym_param_t *p = sym_model_param(m, i), *q = sym_model_param(ref, i);
            for (size_t k = 0; k < p->numel; k++) {
                float e = slice_of(p, g0 + q->offset, tp, tr, k, V), got = mg[p->offset + k];
                CHECK(fabsf(got - e) <= 1e-5f * gmax, "%s: d %s[%zu] = %.8g, the 1-PE model's "
                      "%.8g (largest %.3g)", meshes[mi], p->name, k, got, e, gmax);
            }
        }
        /* the norm counts every element of the whole model once */
        double want_norm = sym_grad_norm(g0, np), norm = sym_model_grad_norm(m, mg);
        CHECK(fabs(norm - want_norm) <= 1e-5 * want_norm, "%s: gradient norm %.8g, the 1-PE "
              "model's %.8g", meshes[mi], norm, want_norm);
        /* whole tensors: scatter the reference's weights, gather them back */
        CHECK(sym_model_full_num_params(m) == np, "%s: the whole table holds %zu, not %zu",
              meshes[mi], sym_model_full_num_params(m), np);
        float *part = malloc(sym_model_num_params(m) * sizeof *part), *whole = malloc(np * 4);
        CHECK(part && whole, "out of memory");
        sym_model_scatter(m, w0, part);
        for (int i = 0; i < nc; i++) {
            const sym_param_t *p = sym_model_param(m, i), *q = sym_model_param(ref, i);
            for (size_t k = 0; k < p->numel; k++)
                CHECK(part[p->offset + k] == slice_of(p, w0 + q->offset, tp, tr, k, V),
                      "%s: scatter %s[%zu]", meshes[mi], p->name, k);
        }
        CHECK(sym_model_gather(m, part, whole) == 0, "%s", sym_last_error());
        for (size_t k = 0; k < np; k++)
            CHECK(whole[k] == w0[k], "%s: gathered weight %zu is %.8g, not %.8g", meshes[mi], k,
                  whole[k], w0[k]);
        free(part);
        free(whole);
        sym_optim_destroy(o);
        sym_ddp_destroy(ddp);
        sym_model_destroy(m);
        sym_mesh_destroy(mesh);
    }
    if (n > 1 && n % 2 == 0) { /* 3 heads do not split over 2 PEs */
        sym_mesh_t *mesh;
        snprintf(meshes[0], 32, "dp=%d,tp=2", n / 2);
        CHECK(sym_mesh_create(SHMEM_TEAM_WORLD, meshes[0], &mesh) == 0, "%s", sym_last_error());
        sym_model_config_t bad = cfg;
        CHECK(sym_model_parse("gpt:L=1,C=30,H=3,V=64,T=16", &bad) == 0, "%s", sym_last_error());
        sym_model_t *m;
        CHECK(sym_model_create_tp(&bad, 1, 1, sym_mesh_team(mesh, 1), &m) == SYM_EINVAL,
              "3 heads split over 2 PEs");
        CHECK(strstr(sym_last_error(), "heads (3)") != NULL, "%s", sym_last_error());
        sym_mesh_destroy(mesh);
    }
    sym_optim_destroy(ro);
    sym_model_destroy(ref);
    free(w0);
    free(g0);
    free(mg);
    if (me == 0) printf("train_tp: ok\n");
    shmem_finalize();
    return 0;
}
