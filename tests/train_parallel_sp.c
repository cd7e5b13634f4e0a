/*
 * train_parallel_sp — `symtrain train --parallel ...,sp` (sequence
 * parallelism) and a GPT's --dropout through symrun, as a user runs them.
 *
 * gpt:L=2,C=64,H=4,V=126,T=30 on the generated corpus (30-token sequences:
 * uneven over 4 PEs, 8 8 7 7 positions), global batch 8, 12 steps of AdamW,
 * dropout 0.1. Layouts tp=4,sp and dp=2,tp=2,sp on 4 PEs and tp=2,sp on 2,
 * tp=4 with its all-reduces overlapped in 5 row chunks (--tp-overlap 5), and
 * the pipelines pp=2 (2 PEs), dp=2,pp=2, tp=2,pp=2 and tp=2,pp=2,sp (4; a
 * micro-batch a stage, each stage drawing its blocks' masks; with sp each
 * stage passes on its tp rank's positions of the sequences)
 * must give every step's loss of the 1-PE run with the same dropout to 1e-5
 * relative, and the SP ones say once that they are sequence parallel; the 1-PE loss must
 * fall, and differ from the run without --dropout (whose log must not name a
 * dropout: a GPT's default is none).
 *
 * A dp=2,tp=2,sp run with dropout, its PE 1 (a tp peer of PE 0) killed at step
 * 7 and restarted by symrun, ends with the weights, optimizer state and losses
 * of one never interrupted, bit for bit (the masks follow the step and row).
 *
 * Refused with exit status 2 and one message, before anything trains: sp
 * without a tp group, and sp with --tp-overlap.
 */
#include "train_e2e.h"

#define MODEL "gpt:L=2,C=64,H=4,V=126,T=30"
#define ARGS "--generated --device cpu --batch 8 --threads 1 --lr 0.001 --warmup-steps 2 " \
             "--test-samples 16 --bucket-mb 0.05 --model " MODEL
#define STEPS 12

/* The step records' losses of a metrics file (n of them, checked). */
static void losses(const char *metrics, double *out) {
    long long n;
    double *l = e2e_losses(metrics, &n);
    CHECK(n == STEPS, "%s has %lld steps, not %d", metrics, n, STEPS);
    memcpy(out, l, STEPS * sizeof *out);
    free(l);
}

/* A bad option set: exit status 2, `needle` said once, nothing trained. */
static void refused(int npes, const char *opts, const char *needle) {
    static int nbad;
    char args[1024];
    const char *log = e2e_path("bad%d.log", nbad++);
    snprintf(args, sizeof args, ARGS " --max-steps 2 %s", opts);
    e2e_run(npes, NULL, NULL, log, 2, args);
    if (e2e_count(log, needle) != 1) e2e_show(log);
    CHECK(e2e_count(log, needle) == 1, "%s: \"%s\" not said exactly once", opts, needle);
    CHECK(!e2e_log_has(log, "step 1"), "%s trained", opts);
}

int main(int argc, char **argv) {
    e2e_init(argc, argv, "train_parallel_sp");
    char args[1024];
    double want[STEPS], plain[STEPS], got[STEPS];
    snprintf(args, sizeof args, ARGS " --max-steps %d --metrics %s", STEPS,
             e2e_path("plain.jsonl"));
    e2e_run(1, NULL, NULL, e2e_path("plain.log"), 0, args);
    CHECK(!e2e_log_has(e2e_path("plain.log"), "dropout"), "a GPT without --dropout dropped");
    losses(e2e_path("plain.jsonl"), plain);
    snprintf(args, sizeof args, ARGS " --dropout 0.1 --max-steps %d --metrics %s", STEPS,
             e2e_path("np1.jsonl"));
    e2e_run(1, NULL, NULL, e2e_path("np1.log"), 0, args);
    e2e_expect_log(e2e_path("np1.log"), "dropout 0.1 on the embeddings");
    losses(e2e_path("np1.jsonl"), want);
    CHECK(want[STEPS - 1] < want[0] - 0.3, "1 PE: the loss went from %.4f to %.4f: not learning",
          want[0], want[STEPS - 1]);
    CHECK(fabs(want[STEPS - 1] - plain[STEPS - 1]) > 1e-4, "--dropout 0.1 changed nothing: "
          "%.8f and %.8f", want[STEPS - 1], plain[STEPS - 1]);

    static const struct {
        int npes;
        const char *layout, *name;
    } runs[] = {{4, "tp=4,sp", "tp4sp"},
                {4, "dp=2,tp=2,sp", "dp2xtp2sp"},
                {2, "tp=2,sp", "tp2sp"},
                {4, "tp=4 --tp-overlap 5", "tp4overlap"},
                {2, "pp=2", "pp2"},
                {4, "dp=2,pp=2", "dp2xpp2"},
                {4, "tp=2,pp=2", "tp2xpp2"},
                {4, "tp=2,pp=2,sp", "tp2xpp2sp"}};
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        snprintf(args, sizeof args, ARGS " --dropout 0.1 --max-steps %d --metrics %s "
                 "--parallel %s", STEPS, e2e_path("%s.jsonl", runs[i].name), runs[i].layout);
        const char *log = e2e_path("%s.log", runs[i].name);
        e2e_run(runs[i].npes, NULL, NULL, log, 0, args);
        int sp = strstr(runs[i].layout, "sp") != NULL;
        CHECK(e2e_count(log, "sequence parallel: LayerNorm, dropout and residual") == sp,
              "%s: the log does not say %s that it is sequence parallel", runs[i].name,
              sp ? "once" : "nothing");
        losses(e2e_path("%s.jsonl", runs[i].name), got);
        double worst = 0;
        for (int s = 0; s < STEPS; s++) {
            double r = fabs(got[s] - want[s]) / fabs(want[s]);
            CHECK(r <= 1e-5, "%s step %d: loss %.9g, 1 PE %.9g (%.2g relative)", runs[i].name,
                  s + 1, got[s], want[s], r);
            worst = fmax(worst, r);
        }
        printf("train_parallel_sp: %-10s %d steps match 1 PE with dropout 0.1 (worst %.2g "
               "relative)\n", runs[i].name, STEPS, worst);
    }
    snprintf(args, sizeof args, ARGS " --dropout 0.1 --max-steps %d --parallel dp=2,tp=2,sp",
             STEPS);
    long long at = e2e_crash_resume(args, 4, "SYMTRAIN_TEST_KILL_AT=1:7", 7, 5, STEPS);
    printf("train_parallel_sp: dp2xtp2,sp with dropout killed at step 7, resumed from step %lld: "
           "bit-identical\n", at);
    refused(2, "--parallel dp=2,sp", "sequence parallelism splits the activations of a tp "
                                     "group, and there is none");
    refused(2, "--parallel tp=2,sp --tp-overlap 2", "with sp there are none");
    e2e_cleanup();
    printf("train_parallel_sp: ok\n");
    return 0;
}
