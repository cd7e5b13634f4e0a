/*
 * train_gpt_resume — a GPT run killed mid-way and restarted by `symrun
 * --max-restarts` ends with exactly the weights of a run never interrupted.
 *
 * gpt:L=2,C=32,H=2,V=256,T=32 on the generated corpus, 12 steps of AdamW.
 * A reference run; then the same run with checkpoints every 3 steps, --resume,
 * and SYMTRAIN_TEST_KILL_AT making one PE die by SIGKILL after a given step
 * on the first attempt only: PE 1 of 2 right after step 6 (a checkpoint was
 * just handed to the writer), PE 0 of 1 after step 7 (between two). symrun
 * restarts the job; it resumes from the newest checkpoint written whole
 * before the kill (step 3 or 6) and replays the lost steps. The final
 * model.bin and optim.bin must be byte-identical to the reference's, and every
 * step's loss, the replayed ones included, equal.
 */
#include "train_e2e.h"

#define ARGS "--generated --model gpt:L=2,C=32,H=2,V=256,T=32 --batch 8 --max-steps 12 " \
             "--threads 1 --lr 0.01 --warmup-steps 2 --bucket-mb 0.01 --quiet"
#define STEPS 12

/* Every step record of `other` (replays included) has the reference's loss;
 * with `replayed`, some steps must have been run twice. */
static void same_losses(const char *ref, const char *other, int replayed) {
    long long n;
    double *a = e2e_losses(ref, &n);
    CHECK(n == STEPS, "%s has %lld steps, expected %d", ref, n, STEPS);
    char *s = e2e_read(other, NULL);
    CHECK(s != NULL, "cannot read %s", other);
    int records = 0;
    for (char *line = strtok(s, "\n"); line; line = strtok(NULL, "\n")) {
        if (strstr(line, "\"eval\"")) continue;
        char *ps = strstr(line, "\"step\":"), *pl = strstr(line, "\"loss\":");
        CHECK(ps && pl, "%s: not a step record: %s", other, line);
        long long step = atoll(ps + 7);
        double loss = strtod(pl + 7, NULL);
        CHECK(step >= 1 && step <= n, "%s: step %lld out of range", other, step);
        CHECK(loss == a[step - 1], "step %lld: loss %.9g after the restart, %.9g uninterrupted",
              step, loss, a[step - 1]);
        records++;
    }
    CHECK(records >= n, "%s has %d records for %lld steps", other, records, n);
    if (replayed)
        CHECK(records > n, "%s has %d records for %lld steps: no step was replayed", other, records,
              n);
    free(s);
    free(a);
}

int main(int argc, char **argv) {
    e2e_init(argc, argv, "train_gpt_resume");
    const int npes_list[2] = {2, 1};
    const char *kill[2] = {"SYMTRAIN_TEST_KILL_AT=1:6", "SYMTRAIN_TEST_KILL_AT=0:7"};
    const long long kill_step[2] = {6, 7};
    for (int k = 0; k < 2; k++) {
        int n = npes_list[k];
        char args[1024];
        snprintf(args, sizeof args, ARGS " --ckpt-dir %s --metrics %s", e2e_path("ref%d", n),
                 e2e_path("ref%d.jsonl", n));
        e2e_run(n, NULL, NULL, e2e_path("ref%d.log", n), 0, args);

        snprintf(args, sizeof args, ARGS " --ckpt-dir %s --ckpt-steps 3 --resume --metrics %s",
                 e2e_path("crash%d", n), e2e_path("crash%d.jsonl", n));
        const char *log = e2e_path("crash%d.log", n);
        e2e_run(n, "--max-restarts 1", kill[k], log, 0, args);
        e2e_expect_log(log, "was killed by signal 9");
        e2e_expect_log(log, "restarting the job (restart 1 of 1)");
        e2e_expect_log(log, "the job succeeded after 1 restart");
        /* Which checkpoint the restart finds depends on how far the background
         * writer got before the kill: any whole one up to the kill step. */
        char *text = e2e_read(log, NULL), *at = text ? strstr(text, "resumed from ") : NULL;
        if (at) at = strstr(at, "/step-");
        if (!at) e2e_show(log);
        CHECK(at != NULL, "the restarted job did not say where it resumed");
        long long resumed = atoll(at + 6);
        free(text);
        CHECK(resumed > 0 && resumed % 3 == 0 && resumed <= kill_step[k],
              "resumed from step %lld after a kill at step %lld", resumed, kill_step[k]);
        CHECK(e2e_newest(e2e_path("ref%d", n), NULL, 0) == STEPS, "the reference ended at step %lld",
              e2e_newest(e2e_path("ref%d", n), NULL, 0));
        CHECK(e2e_newest(e2e_path("crash%d", n), NULL, 0) == STEPS,
              "the restarted run ended at step %lld", e2e_newest(e2e_path("crash%d", n), NULL, 0));
        e2e_same_ckpt_file(e2e_path("ref%d", n), e2e_path("crash%d", n), "model.bin");
        e2e_same_ckpt_file(e2e_path("ref%d", n), e2e_path("crash%d", n), "optim.bin");
        same_losses(e2e_path("ref%d.jsonl", n), e2e_path("crash%d.jsonl", n),
                    resumed < kill_step[k]);
        printf("train_gpt_resume: %d PE%s: SIGKILL (%s), restart from step %lld: model.bin, "
               "optim.bin and every loss bit-identical\n",
               n, n == 1 ? "" : "s", kill[k] + 22, resumed);
    }
    e2e_cleanup();
    printf("train_gpt_resume: ok\n");
    return 0;
}
