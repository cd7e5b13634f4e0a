/*
 * train_plan_tp — the planner's memory per PE for tensor parallelism against
 * what our code allocates: the GPT built with sym_model_create_tp over the
 * tp teams of a mesh (dp=1,tp=n and, on 4 PEs, dp=2,tp=2), as tests/train_tp.c
 * trains it, with its AdamW state; its pools' blocks in use and the
 * optimizer's arrays (sym_model_memory, sym_optim_bytes) against
 * sym_plan_evaluate for the same layout, each kind within 10%, and the
 * planner's parameter count exactly the model's. Then sym_plan_choose on the
 * request a run makes (sym_plan_train_request, `--parallel auto`): a layout
 * of the PE count, the fastest runnable one, and one clear message when
 * nothing fits. (symtrain train runs TP
 * once --parallel lands; tests/train_plan_memory.c then checks it end to end.)
 */
#include <math.h>
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <symtrain/symtrain.h>

#include "test.h"

enum { GB = 8 };
static const char spec[] = "gpt:L=2,C=64,H=4,V=128,T=32";

int main(void) {
    shmem_init();
    int n = shmem_n_pes();
    test_pe_start("train_plan_tp");
    sym_model_config_t cfg;
    memset(&cfg, 0, sizeof cfg);
    CHECK(sym_model_parse(spec, &cfg) == 0, "%s", sym_last_error());
    char meshes[2][32];
    int nm = 0;
    snprintf(meshes[nm++], 32, "dp=1,tp=%d", n);
    if (n == 4) snprintf(meshes[nm++], 32, "dp=2,tp=2");
    for (int mi = 0; mi < nm; mi++) {
        sym_mesh_t *mesh;
        CHECK(sym_mesh_create(SHMEM_TEAM_WORLD, meshes[mi], &mesh) == 0, "%s", sym_last_error());
        int dp = sym_mesh_size(mesh, 0), tp = sym_mesh_size(mesh, 1);
        sym_model_t *m;
        CHECK(sym_model_create_tp(&cfg, GB / dp, 1, sym_mesh_team(mesh, 1), &m) == 0, "%s",
              sym_last_error());
        sym_optim_config_t oc = {SYM_OPT_ADAMW, 0, 0.9f, 0.95f, 1e-8f, 0.1f};
        sym_optim_t *o;
        CHECK(sym_optim_create(&oc, sym_model_num_params(m), &o) == 0, "%s", sym_last_error());
        size_t got[5];
        sym_model_memory(m, &got[0], &got[1], &got[3]);
        got[2] = sym_optim_bytes(o);
        got[4] = got[0] + got[1] + got[2] + got[3];

        sym_plan_request_t r;
        sym_plan_defaults(&r, SYM_PLAN_CPU);
        r.model = cfg;
        r.pes = n;
        r.batch = GB;
        sym_plan_layout_t l = {dp, tp, 1, 1, 0, 0, 0};
        sym_plan_result_t e;
        CHECK(sym_plan_evaluate(&r, &l, &e) == 0, "%s", sym_last_error());
        CHECK(e.params_local == sym_model_num_params(m), "%s: the planner holds %zu parameters "
              "a PE, the model %zu", meshes[mi], e.params_local, sym_model_num_params(m));
        CHECK(sym_plan_params(&cfg, tp, 1) == sym_model_num_params(m), "sym_plan_params");
        size_t want[5] = {e.mem.params, e.mem.grads, e.mem.optim, e.mem.acts, e.mem.total};
        static const char *const kind[5] = {"parameters", "gradients", "optimizer", "activations",
                                            "total"};
        for (int k = 0; k < 5; k++)
            CHECK(fabs((double)want[k] - (double)got[k]) <= 0.10 * (double)got[k],
                  "%s: %s predicted %zu bytes, allocated %zu", meshes[mi], kind[k], want[k],
                  got[k]);
        if (shmem_my_pe() == 0)
            printf("train_plan_tp: %s: allocated %zu bytes a PE, predicted %zu\n", meshes[mi],
                   got[4], want[4]);
        sym_optim_destroy(o);
        sym_model_destroy(m);
        sym_mesh_destroy(mesh);
    }
    /* --parallel auto: the request from a run's config, the choice on every PE alike */
    sym_train_config_t tc;
    sym_train_defaults(&tc);
    tc.model = cfg;
    tc.global_batch = GB;
    sym_plan_request_t r;
    sym_plan_train_request(&tc, n, 0, (size_t)1 << 30, &r);
    sym_plan_layout_t l;
    CHECK(sym_plan_choose(&r, &l) == 0, "%s", sym_last_error());
    CHECK(l.dp * l.tp * l.pp == n && !l.recompute, "auto chose dp=%d tp=%d pp=%d recompute %d",
          l.dp, l.tp, l.pp, l.recompute);
    sym_plan_result_t *all;
    int na;
    CHECK(sym_plan_candidates(&r, &all, &na) == 0 && na > 1, "%s", sym_last_error());
    sym_plan_result_t e;
    CHECK(sym_plan_evaluate(&r, &l, &e) == 0, "%s", sym_last_error());
    for (int i = 0; i < na; i++)
        if (all[i].fits && !all[i].needs[0])
            CHECK(all[i].t_step >= e.t_step, "auto: a faster runnable layout exists");
    free(all);
    r.device_mem = 1024; /* nothing fits: one clear message */
    CHECK(sym_plan_choose(&r, &l) == SYM_ENOMEM, "a 1 KiB device");
    CHECK(strstr(sym_last_error(), "fits in 1.0 KiB a PE") != NULL, "%s", sym_last_error());
    if (shmem_my_pe() == 0) printf("train_plan_tp: ok\n");
    shmem_finalize();
    return 0;
}
