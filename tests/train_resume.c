/*
 * train_resume — a crash mid-run, restarted by `symrun --max-restarts`, ends
 * with exactly the weights of a run that was never interrupted.
 *
 * For 1 and 2 PEs: a reference run; then the same run with checkpoints every
 * 16 steps, --resume=auto, and SYMTRAIN_TEST_KILL_AT making one PE die by SIGKILL
 * after a given step on the first attempt only (PE 1 of 2, right after a
 * checkpoint was handed to the writer; PE 0 of 1, mid-way between two). symrun
 * restarts the job, which resumes from the newest checkpoint written whole
 * before the kill and replays the lost steps. The final model and optimizer state must be byte-identical to
 * the reference, and every step's loss — replayed ones included — equal.
 */
#include "train_e2e.h"

#define ARGS "--generated --train-samples 1500 --test-samples 300 --epochs 3 " \
             "--model mlp:784-48-24-10 --batch 40 --dropout 0.2 --quiet"

int main(int argc, char **argv) {
    e2e_init(argc, argv, "train_resume");
    const int npes_list[2] = {1, 2};
    const char *kill[2] = {"SYMTRAIN_TEST_KILL_AT=0:58", "SYMTRAIN_TEST_KILL_AT=1:48"};
    const long long kill_step[2] = {58, 48};
    for (int k = 0; k < 2; k++) {
        int n = npes_list[k];
        /* 1500 samples / 40 = 38 steps per epoch, 3 epochs */
        long long resumed = e2e_crash_resume(ARGS, n, kill[k], kill_step[k], 16, 114);
        printf("train_resume: %d PE%s: SIGKILL (%s), restart from step %lld: weights, optimizer "
               "state and every loss bit-identical\n", n, n == 1 ? "" : "s", kill[k] + 22, resumed);
    }
    e2e_cleanup();
    printf("train_resume: ok\n");
    return 0;
}
