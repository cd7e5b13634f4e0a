/*
 * train_plan_tp — the planner's memory per PE for tensor parallelism against
 * what our code allocates: the GPT built with sym_model_create_tp over the
 * tp teams of a mesh (dp=1,tp=n and, on 4 PEs, dp=2,tp=2), as tests/train_tp.c
 * trains it, with its AdamW state; its pools' blocks in use and the
 * optimizer's arrays (sym_model_memory, sym_optim_bytes) against
 * sym_plan_evaluate for the same layout, each kind within 10%, and the
 * planner's parameter count exactly the model's. (symtrain train runs TP
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
        sym_plan_layout_t l = {dp, tp, 1, 1, 0, 0};
        sym_plan_result_t e;
        CHECK(sym_plan_evaluate(&r, &l, &e) == 0, "%s", sym_last_error());
        CHECK(e.params_local == sym_model_num_params(m), "%s: the planner holds %zu parameters "
              "a PE, the model %zu", meshes[mi], e.params_local, sym_model_num_params(m));
        CHECK(sym_plan_params(&cfg, tp, 0) == sym_model_num_params(m), "sym_plan_params");
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
    if (shmem_my_pe() == 0) printf("train_plan_tp: ok\n");
    shmem_finalize();
    return 0;
}
