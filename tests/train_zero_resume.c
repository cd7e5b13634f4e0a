/*
 * train_zero_resume — a --zero 1 run killed mid-way and restarted by `symrun
 * --max-restarts` ends with exactly the weights and the optimizer state of a
 * run never interrupted.
 *
 * The tiny GPT on 4 PEs, 12 steps of AdamW, the optimizer state sharded over
 * the PEs (ZeRO-1): PE 0 gathers the shards one-sidedly for each checkpoint
 * (every 3 steps), and on resume every PE takes its shard of the gathered
 * state back. PE 2, which owns a quarter of that state, dies by SIGKILL
 * after step 7 on the first attempt; the job resumes from step 3 or 6 and
 * replays the lost steps. model.bin and optim.bin must be byte-identical to
 * the reference's, and every loss, the replayed ones included, equal.
 * Then the checkpoint's independence of the layout: a --zero 1 checkpoint of
 * 4 PEs at step 6, resumed with --zero 2 on 2 PEs and with --zero 0 on 1 PE,
 * continues with the uninterrupted run's losses (to 1e-5 relative).
 */
#include "train_e2e.h"

#define ARGS "--generated --model gpt:L=2,C=64,H=4,V=128,T=32 --precision fp32 --device cpu " \
             "--batch 8 --max-steps 12 --threads 1 --lr 0.01 --warmup-steps 2 --bucket-mb 0.02 " \
             "--zero 1 --quiet"

int main(int argc, char **argv) {
    e2e_init(argc, argv, "train_zero_resume");
    long long resumed = e2e_crash_resume(ARGS, 4, "SYMTRAIN_TEST_KILL_AT=2:7", 7, 3, 12);
    printf("train_zero_resume: 4 PEs, --zero 1: SIGKILL of PE 2 after step 7, restart from step "
           "%lld: model.bin, optim.bin and every loss bit-identical\n", resumed);
    /* the gathered state does not depend on the layout: 6 steps of --zero 1 on
     * 4 PEs, then on to step 12 with --zero 2 on 2 PEs, and with --zero 0 on 1,
     * match the uninterrupted run to fp32 rounding (other PE counts: another
     * summation order) */
    char line[2048];
    const char *part[2] = {"--zero 2", "--zero 0"};
    const int np[2] = {2, 1};
    for (int k = 0; k < 2; k++) {
        const char *dir = e2e_path("part%d", k);
        /* a later --max-steps wins; it only stops, so the schedule is the same */
        snprintf(line, sizeof line, ARGS " --max-steps 6 --ckpt-dir %s", dir);
        e2e_run(4, NULL, NULL, e2e_path("part%d.log", k), 0, line);
        snprintf(line, sizeof line, ARGS " %s --resume --ckpt-dir %s --metrics %s", part[k], dir,
                 e2e_path("part%d.jsonl", k));
        e2e_run(np[k], NULL, NULL, e2e_path("part%d_resume.log", k), 0, line);
        long long n, m;
        double *ref = e2e_losses(e2e_path("ref4.jsonl"), &n);
        char *s = e2e_read(e2e_path("part%d.jsonl", k), NULL);
        CHECK(s != NULL, "no metrics from the resumed run");
        m = 0;
        for (char *l = strtok(s, "\n"); l; l = strtok(NULL, "\n")) {
            if (strstr(l, "\"eval\"")) continue;
            long long step = atoll(strstr(l, "\"step\":") + 7);
            double loss = strtod(strstr(l, "\"loss\":") + 7, NULL);
            CHECK(step >= 7 && step <= 12, "the resumed run reports step %lld", step);
            CHECK(fabs(loss - ref[step - 1]) <= 1e-5 * fabs(ref[step - 1]),
                  "%s on %d PE%s, resumed from a --zero 1 checkpoint: step %lld loss %.9g, "
                  "uninterrupted %.9g", part[k], np[k], np[k] == 1 ? "" : "s", step, loss,
                  ref[step - 1]);
            m++;
        }
        CHECK(m == 6, "the resumed run took %lld steps, expected 6", m);
        free(s);
        free(ref);
        printf("train_zero_resume: a --zero 1 checkpoint of 4 PEs resumed with %s on %d PE%s: "
               "steps 7-12 within 1e-5 of the uninterrupted run\n", part[k], np[k],
               np[k] == 1 ? "" : "s");
    }
    e2e_cleanup();
    printf("train_zero_resume: ok\n");
    return 0;
}
