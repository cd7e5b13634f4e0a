/*
 * train_gpt_pp — a GPT trained in pipeline stages through symrun and the
 * symtrain CLI (--parallel dp=N,pp=K, --micro-batches, --inbox-slots), as a
 * user runs it: every layout gives the 1-PE run's losses.
 *
 * gpt:L=4,C=64,H=4,V=128,T=32 on the generated corpus, global batch 8, 20
 * steps of AdamW with clipping, fp32 on the CPU, evaluated at steps 10 and
 * 20. Layouts: pp=2 on 2 PEs with 8 micro-batches of one sequence; dp=2 x
 * pp=2 on 4 PEs (each replica 4 sequences in 2 micro-batches); tp=2 x pp=2
 * (each stage's heads split over 2 PEs, 8 sequences in 2 micro-batches);
 * pp=4 on 4 PEs with 8 micro-batches and inboxes of one slot (a send waits
 * for the previous message's credit). tests/train_pp checks more layouts, and the credits,
 * inside one program. Each step's loss (from the
 * last stages) and the validation losses must match the 1-PE run's to 1e-5
 * relative, step 1's gradient norm over the whole pipeline to 2e-5 (the
 * metrics print 6 digits) and later ones to 1e-4 (AMD's and Haswell's
 * OpenBLAS kernels round a product by how it is split); the loss must fall, and a run with another seed
 * must differ by far more (its gradient norm at step 2), so the comparison
 * is not blind. A dp=2,pp=2 run with --sample gathers every stage's weights
 * on PE 0 and prints the text `symtrain sample` draws from its last
 * checkpoint. A mesh that does not fit the job and --inbox-slots without a
 * pipeline are refused with a message saying so (its checkpoints:
 * tests/train_ckpt_layout).
 */
#include "train_e2e.h"

#define ARGS "--generated --model gpt:L=4,C=64,H=4,V=128,T=32 --batch 8 --max-steps 20 " \
             "--threads 1 --lr 0.003 --warmup-steps 2 --eval-every 10 --device cpu "      \
             "--test-samples 32"
#define STEPS 20
#define TOL 1e-5
#define TOL_NORM 2e-5 /* step 1's gradient norm: the same weights, summed in another order */
/* later norms: the weights' rounding differences since, through AdamW (OpenBLAS's
 * Haswell and Zen kernels round each product by how it is split) */
#define TOL_NORM_LATER 1e-4

static double rel(double a, double b) { return fabs(a - b) / fmax(fabs(b), 1e-30); }

typedef struct {
    int npes;
    const char *opts, *name;
} layout_t;

int main(int argc, char **argv) {
    e2e_init(argc, argv, "train_gpt_pp");
    char args[1024];
    double l1[STEPS], g1[STEPS], v1[2];
    e2e_reference(ARGS, STEPS, l1, g1, 2, v1);

    const layout_t layouts[] = {
        {2, "--parallel pp=2 --micro-batches 8", "pp2_m8"},
        {4, "--parallel dp=2,pp=2", "dp2_pp2"},
        {4, "--parallel tp=2,pp=2", "tp2_pp2"},
        {4, "--parallel pp=4 --micro-batches 8 --inbox-slots 1", "pp4_slot1"},
    };
    const char *plan[] = {"pipeline: 2 stages (blocks 0-1, 2-3), 8 micro-batches of up to 1 "
                          "sequences, 1F1B, inboxes of 2 slots; 1 data-parallel replica",
                          "pipeline: 2 stages (blocks 0-1, 2-3), 2 micro-batches of up to 2 "
                          "sequences, 1F1B, inboxes of 2 slots; 2 data-parallel replicas",
                          "pipeline: 2 stages (blocks 0-1, 2-3), 2 micro-batches of up to 4 "
                          "sequences, 1F1B, inboxes of 2 slots; 1 data-parallel replica",
                          "pipeline: 4 stages (blocks 0-0, 1-1, 2-2, 3-3), 8 micro-batches of "
                          "up to 1 sequences, 1F1B, inboxes of 1 slots"};
    for (size_t i = 0; i < sizeof layouts / sizeof *layouts; i++) {
        const layout_t *L = &layouts[i];
        const char *metrics = e2e_path("%s.jsonl", L->name), *log = e2e_path("%s.log", L->name);
        snprintf(args, sizeof args, ARGS " %s --metrics %s", L->opts, metrics);
        e2e_run(L->npes, NULL, NULL, log, 0, args);
        e2e_expect_log(log, plan[i]);
        e2e_expect_log(log, "after 20 steps; total time");
        double l[STEPS], g[STEPS], v[2], dl = 0, dg = 0, dv = 0;
        CHECK(e2e_values(metrics, "loss", 0, l, STEPS) == STEPS, "%s: %d steps", L->name, STEPS);
        CHECK(e2e_values(metrics, "grad_norm", 0, g, STEPS) == STEPS, "%s: norms", L->name);
        CHECK(e2e_values(metrics, "test_loss", 1, v, 2) == 2, "%s: 2 evaluations", L->name);
        for (int s = 0; s < STEPS; s++) {
            CHECK(rel(l[s], l1[s]) <= TOL, "%s step %d: loss %.8f, 1 PE %.8f", L->name, s + 1,
                  l[s], l1[s]);
            CHECK(rel(g[s], g1[s]) <= (s ? TOL_NORM_LATER : TOL_NORM),
                  "%s step %d: gradient norm %.6g, 1 PE %.6g",
                  L->name, s + 1, g[s], g1[s]);
            dl = fmax(dl, rel(l[s], l1[s]));
            dg = fmax(dg, rel(g[s], g1[s]));
        }
        for (int k = 0; k < 2; k++) {
            CHECK(rel(v[k], v1[k]) <= TOL, "%s: validation loss %.6f, 1 PE %.6f", L->name, v[k],
                  v1[k]);
            dv = fmax(dv, rel(v[k], v1[k]));
        }
        printf("train_gpt_pp: %-10s on %d PEs: losses within %.1e of 1 PE, norms %.1e, "
               "validation %.1e\n", L->name, L->npes, dl, dg, dv);
    }
    /* not blind: another seed differs by far more than the tolerance */
    snprintf(args, sizeof args, ARGS " --seed 2 --parallel pp=2 --max-steps 2 --metrics %s",
             e2e_path("seed2.jsonl"));
    e2e_run(2, NULL, NULL, e2e_path("seed2.log"), 0, args);
    double g2[STEPS];
    CHECK(e2e_values(e2e_path("seed2.jsonl"), "grad_norm", 0, g2, STEPS) == 2, "seed 2: 2 steps");
    CHECK(rel(g2[1], g1[1]) > 100 * TOL_NORM, "another seed gave the same gradient norm %.6g",
          g2[1]);

    /* --sample: the weights of every stage gathered on PE 0 */
    snprintf(args, sizeof args, ARGS " --parallel dp=2,pp=2 --sample 30 --prompt KING --ckpt-dir %s",
             e2e_path("ck_sample"));
    const char *slog = e2e_path("sample_run.log"), *txt = e2e_path("sample.txt");
    e2e_run(4, NULL, NULL, slog, 0, args);
    CHECK(e2e_sh(txt, "'%s' sample --ckpt '%s' --prompt KING --max-new-tokens 30", e2e_symtrain,
                 e2e_path("ck_sample")) == 0, "symtrain sample --ckpt of the pipeline's run");
    char *want = e2e_read(txt, NULL), *said = e2e_read(slog, NULL);
    CHECK(want && said && strlen(want) > 5, "no sample text");
    if (!strstr(said, want)) e2e_show(slog);
    CHECK(strstr(said, want) != NULL, "the pipeline's sample is not `symtrain sample`'s text "
          "from its checkpoint:\n%s", want);
    free(want);
    free(said);
    printf("train_gpt_pp: dp=2,pp=2 --sample prints its checkpoint's text\n");

    /* refused, and said */
    const struct {
        int npes, status; /* 2: a usage error, found before the job starts */
        const char *opts, *says;
    } bad[] = {
        {2, 2, "--parallel dp=3,pp=2", "makes 6 PEs, but the job has 2"},
        {1, 1, "--inbox-slots 4", "add pp=K"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char opts[512];
        snprintf(opts, sizeof opts, "%s", bad[i].opts);
        snprintf(args, sizeof args, ARGS " %s", opts);
        const char *log = e2e_path("bad%zu.log", i);
        e2e_run(bad[i].npes, NULL, NULL, log, bad[i].status, args);
        e2e_expect_log(log, bad[i].says);
    }
    printf("train_gpt_pp: ok\n");
    return 0;
}
