/*
 * train_resume — a crash mid-run, restarted by `symrun --max-restarts`, ends
 * with exactly the weights of a run that was never interrupted.
 *
 * For 1 and 2 PEs: a reference run; then the same run with checkpoints every
 * 16 steps, --resume, and SYMTRAIN_TEST_KILL_AT making one PE die by SIGKILL
 * after a given step on the first attempt only (PE 1 of 2, right after a
 * checkpoint was handed to the writer; PE 0 of 1, mid-way between two). symrun
 * restarts the job, which resumes from the newest checkpoint written whole
 * before the kill and replays the lost steps. The final model and optimizer state must be byte-identical to
 * the reference, and every step's loss — replayed ones included — equal.
 */
#include "train_e2e.h"

#define ARGS "--generated --train-samples 1500 --test-samples 300 --epochs 3 " \
             "--model mlp:784-48-24-10 --batch 40 --dropout 0.2 --quiet"

/* Every step record of `other` (replays included) has the reference's loss;
 * with `replayed`, some steps must have been run twice. */
static void same_losses(const char *ref, const char *other, long long steps, int replayed) {
    long long n;
    double *a = e2e_losses(ref, &n);
    CHECK(n == steps, "%s has %lld steps, expected %lld", ref, n, steps);
    char *s = e2e_read(other, NULL);
    CHECK(s != NULL, "cannot read %s", other);
    int records = 0;
    for (char *line = strtok(s, "\n"); line; line = strtok(NULL, "\n")) {
        if (strstr(line, "\"eval\"")) continue;
        long long step = atoll(strstr(line, "\"step\":") + 7);
        double loss = strtod(strstr(line, "\"loss\":") + 7, NULL);
        CHECK(step >= 1 && step <= n, "step %lld out of range", step);
        CHECK(loss == a[step - 1], "step %lld: loss %.9g after the restart, %.9g uninterrupted", step,
              loss, a[step - 1]);
        records++;
    }
    CHECK(records >= n, "%s has %d records for %lld steps", other, records, n);
    if (replayed) CHECK(records > n, "%s has %d records for %lld steps: no step was replayed", other, records, n);
    free(s);
    free(a);
}

int main(int argc, char **argv) {
    e2e_init(argc, argv, "train_resume");
    const int npes_list[2] = {1, 2};
    const char *kill[2] = {"SYMTRAIN_TEST_KILL_AT=0:58", "SYMTRAIN_TEST_KILL_AT=1:48"};
    const long long kill_step[2] = {58, 48};
    for (int k = 0; k < 2; k++) {
        int n = npes_list[k];
        char args[1024];
        snprintf(args, sizeof args, ARGS " --ckpt-dir %s --metrics %s", e2e_path("ref%d", n),
                 e2e_path("ref%d.jsonl", n));
        e2e_run(n, NULL, NULL, e2e_path("ref%d.log", n), 0, args);

        snprintf(args, sizeof args, ARGS " --ckpt-dir %s --ckpt-steps 16 --resume --metrics %s",
                 e2e_path("crash%d", n), e2e_path("crash%d.jsonl", n));
        const char *log = e2e_path("crash%d.log", n);
        e2e_run(n, "--max-restarts 1", kill[k], log, 0, args);
        e2e_expect_log(log, "was killed by signal 9");
        e2e_expect_log(log, "restarting the job (restart 1 of 1)");
        e2e_expect_log(log, "the job succeeded after 1 restart");
        /* Which checkpoint the restart finds depends on how far the background
         * writer got before the kill (fsync takes a while): any whole one up
         * to the kill step will do, and the result must be the same. */
        char *text = e2e_read(log, NULL), *at = text ? strstr(text, "resumed from ") : NULL;
        if (at) at = strstr(at, "/step-");
        CHECK(at != NULL, "the restarted job did not say where it resumed");
        long long resumed = atoll(at + 6);
        free(text);
        CHECK(resumed > 0 && resumed % 16 == 0 && resumed <= kill_step[k],
              "resumed from step %lld after a kill at step %lld", resumed, kill_step[k]);
        /* 1500 samples / 40 = 38 steps per epoch, 3 epochs */
        CHECK(e2e_newest(e2e_path("ref%d", n), NULL, 0) == 114, "reference ended at step %lld",
              e2e_newest(e2e_path("ref%d", n), NULL, 0));
        CHECK(e2e_newest(e2e_path("crash%d", n), NULL, 0) == 114, "restarted run ended at step %lld",
              e2e_newest(e2e_path("crash%d", n), NULL, 0));
        e2e_same_ckpt_file(e2e_path("ref%d", n), e2e_path("crash%d", n), "model.bin");
        e2e_same_ckpt_file(e2e_path("ref%d", n), e2e_path("crash%d", n), "optim.bin");
        /* the steps between the checkpoint and the kill ran twice */
        same_losses(e2e_path("ref%d.jsonl", n), e2e_path("crash%d.jsonl", n), 114,
                    resumed < kill_step[k]);
        printf("train_resume: %d PE%s: SIGKILL (%s), restart from step %lld: weights, optimizer "
               "state and every loss bit-identical\n", n, n == 1 ? "" : "s", kill[k] + 22, resumed);
    }
    e2e_cleanup();
    printf("train_resume: ok\n");
    return 0;
}
