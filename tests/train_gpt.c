/*
 * train_gpt — a GPT trained through symrun and the symtrain CLI, as a user
 * runs it: 1, 2 and 4 PEs with the same global batch give the same loss at
 * every step, the validation loss is reported, and the trained model writes
 * a sample.
 *
 * gpt:L=2,C=32,H=2,V=256,T=32 on the generated corpus, global batch 8 (8, 4
 * and 2 sequences per PE), 12 steps of AdamW at lr 0.01 after a 2-step warmup,
 * evaluated at step 6 and at the end. Each PE scales its loss gradient by
 * npes / (global batch x tokens), so the all-reduced average is the global
 * batch's mean: the runs differ only by the fp32 rounding of a different
 * summation order, which the losses show at about 1e-7 relative. The
 * tolerance is 1e-5 relative, for each step's loss, the validation losses and
 * (with 2e-5, the metrics printing 6 digits) each step's gradient norm before
 * clipping, which AdamW and clipping cannot hide a wrongly scaled gradient
 * from. A run with another seed is checked to differ by far more, and the
 * loss must fall, so the comparison is not blind.
 */
#include "train_e2e.h"

#define ARGS "--generated --model gpt:L=2,C=32,H=2,V=256,T=32 --batch 8 --max-steps 12 " \
             "--threads 1 --lr 0.01 --warmup-steps 2 --eval-every 6 --bucket-mb 0.01 --sample 50"
#define STEPS 12
#define TOL 1e-5
#define TOL_NORM 2e-5 /* 1e-5, plus the metrics' 6 digits of grad_norm */
#define SAMPLE_HEAD "a sample (50 tokens, temperature 1, top-k 40):\n"

static double rel(double a, double b) { return fabs(a - b) / fmax(fabs(b), 1e-30); }

/* The gradient norm of every step 1..STEPS of a metrics file (before clipping:
 * the all-reduced gradient's, so a wrong per-PE scale shows even where AdamW
 * and clipping would hide it in the losses). */
static void grad_norms(const char *metrics, double out[STEPS]) {
    char *s = e2e_read(metrics, NULL);
    CHECK(s != NULL, "cannot read %s", metrics);
    int seen = 0;
    for (char *line = strtok(s, "\n"); line; line = strtok(NULL, "\n")) {
        if (strstr(line, "\"eval\"")) continue;
        char *ps = strstr(line, "\"step\":"), *pg = strstr(line, "\"grad_norm\":");
        CHECK(ps && pg, "%s: a step record without step or grad_norm: %s", metrics, line);
        long long step = atoll(ps + 7);
        CHECK(step >= 1 && step <= STEPS, "%s: step %lld", metrics, step);
        out[step - 1] = strtod(pg + 12, NULL);
        seen++;
    }
    CHECK(seen == STEPS, "%s has %d step records, expected %d", metrics, seen, STEPS);
    free(s);
}

/* The validation losses of a metrics file's eval records at steps 6 and 12. */
static void eval_losses(const char *metrics, double out[2]) {
    char *s = e2e_read(metrics, NULL);
    CHECK(s != NULL, "cannot read %s", metrics);
    int seen = 0;
    for (char *line = strtok(s, "\n"); line; line = strtok(NULL, "\n")) {
        if (!strstr(line, "\"eval\"")) continue;
        char *ps = strstr(line, "\"step\":"), *pl = strstr(line, "\"test_loss\":");
        CHECK(ps && pl, "%s: an eval record without step or test_loss: %s", metrics, line);
        long long step = atoll(ps + 7);
        CHECK(step == 6 || step == 12, "%s: an evaluation at step %lld", metrics, step);
        out[step / 6 - 1] = strtod(pl + 12, NULL);
        seen |= 1 << (step / 6 - 1);
    }
    CHECK(seen == 3, "%s lacks the evaluations at steps 6 and 12", metrics);
    free(s);
}

/* The sample: everything after its heading (prompt, 50 tokens, a newline). */
static void check_sample(const char *log, const char *prompt) {
    size_t len;
    char *s = e2e_read(log, &len);
    CHECK(s != NULL, "cannot read %s", log);
    char *at = strstr(s, SAMPLE_HEAD);
    if (!at) e2e_show(log);
    CHECK(at != NULL, "%s has no sample heading \"%s\"", log, SAMPLE_HEAD);
    at += strlen(SAMPLE_HEAD);
    size_t rest = len - (size_t)(at - s), want = strlen(prompt) + 50 + 1;
    CHECK(!strncmp(at, prompt, strlen(prompt)), "%s: the sample does not start with its prompt",
          log);
    /* each token of V=256 is one byte */
    CHECK(rest == want && at[rest - 1] == '\n',
          "%s: %zu bytes follow the sample heading, expected the prompt, 50 tokens and a newline "
          "(%zu)", log, rest, want);
    free(s);
}

int main(int argc, char **argv) {
    e2e_init(argc, argv, "train_gpt");
    char args[1024];
    const int npes[3] = {1, 2, 4};
    for (int i = 0; i < 3; i++) {
        int n = npes[i];
        snprintf(args, sizeof args, ARGS " --metrics %s", e2e_path("np%d.jsonl", n));
        e2e_run(n, NULL, NULL, e2e_path("np%d.log", n), 0, args);
    }
    snprintf(args, sizeof args, ARGS " --seed 2 --prompt KING --metrics %s",
             e2e_path("seed2.jsonl"));
    e2e_run(2, NULL, NULL, e2e_path("seed2.log"), 0, args);

    long long s1;
    double *l1 = e2e_losses(e2e_path("np1.jsonl"), &s1), v1[2];
    CHECK(s1 == STEPS, "the 1-PE run took %lld steps, expected %d", s1, STEPS);
    CHECK(l1[STEPS - 1] < l1[0] - 0.5, "the loss went from %.4f to %.4f in %d steps: not learning",
          l1[0], l1[STEPS - 1], STEPS);
    eval_losses(e2e_path("np1.jsonl"), v1);
    double g1[STEPS];
    grad_norms(e2e_path("np1.jsonl"), g1);
    for (int i = 0; i < 3; i++) {
        int n = npes[i];
        const char *log = e2e_path("np%d.log", n);
        e2e_expect_log(log, "step 6: validation loss ");
        e2e_expect_log(log, "step 12: validation loss ");
        e2e_expect_log(log, "after 12 steps; total time");
        CHECK(e2e_count(log, "validation loss ") == 3 && e2e_count(log, "(next-token accuracy ") == 3,
              "%d PEs: expected 3 validation lines (steps 6 and 12, and the outcome)", n);
        check_sample(log, "\n");
        if (n == 1) continue;
        long long sk;
        double *lk = e2e_losses(e2e_path("np%d.jsonl", n), &sk), vk[2], dl = 0;
        CHECK(sk == s1, "%d PEs took %lld steps, 1 PE %lld", n, sk, s1);
        for (long long k = 0; k < s1; k++) {
            dl = fmax(dl, rel(lk[k], l1[k]));
            CHECK(rel(lk[k], l1[k]) <= TOL, "%d PEs, step %lld: loss %.9g, 1 PE %.9g", n, k + 1,
                  lk[k], l1[k]);
        }
        double gk[STEPS], dg = 0;
        grad_norms(e2e_path("np%d.jsonl", n), gk);
        for (int k = 0; k < STEPS; k++) {
            dg = fmax(dg, rel(gk[k], g1[k]));
            CHECK(rel(gk[k], g1[k]) <= TOL_NORM, "%d PEs, step %d: gradient norm %.6g, 1 PE %.6g",
                  n, k + 1, gk[k], g1[k]);
        }
        eval_losses(e2e_path("np%d.jsonl", n), vk);
        for (int e = 0; e < 2; e++)
            CHECK(rel(vk[e], v1[e]) <= TOL, "%d PEs: validation loss at step %d %.9g, 1 PE %.9g",
                  n, 6 * (e + 1), vk[e], v1[e]);
        char *m = e2e_read(e2e_path("np%d.jsonl", n), NULL);
        CHECK(m && !strstr(m, "\"bytes_allreduced\":0,") && !strstr(m, "\"bytes_allreduced\":0}"),
              "%d PEs: a step all-reduced nothing", n);
        free(m);
        printf("train_gpt: %d PEs vs 1 PE: every step's loss within %.2g relative (tolerance %g), "
               "gradient norm within %.2g (%g), validation losses %.6f / %.6f\n",
               n, dl, TOL, dg, TOL_NORM, vk[0], vk[1]);
        free(lk);
    }
    long long s2;
    double *l2 = e2e_losses(e2e_path("seed2.jsonl"), &s2), d2 = 0;
    CHECK(s2 == s1, "the --seed 2 run took %lld steps", s2);
    for (long long k = 0; k < s1; k++) d2 = fmax(d2, rel(l2[k], l1[k]));
    CHECK(d2 > 100 * TOL, "another seed changes the losses by only %.3g: the comparison is blind",
          d2);
    check_sample(e2e_path("seed2.log"), "KING");
    printf("train_gpt: loss %.4f -> %.4f in %d steps; another seed differs by %.3g; the samples "
           "are 50 tokens after their prompts\n",
           l1[0], l1[STEPS - 1], STEPS, d2);
    free(l1);
    free(l2);
    e2e_cleanup();
    printf("train_gpt: ok\n");
    return 0;
}
