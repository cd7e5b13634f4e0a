/*
 * train_gpt_resume — a GPT run killed mid-way and restarted by `symrun
 * --max-restarts` ends with exactly the weights of a run never interrupted.
 *
 * gpt:L=2,C=32,H=2,V=256,T=32 on the generated corpus, 12 steps of AdamW.
 * A reference run; then the same run with checkpoints every 3 steps, --resume=auto,
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

int main(int argc, char **argv) {
    e2e_init(argc, argv, "train_gpt_resume");
    const int npes_list[2] = {2, 1};
    const char *kill[2] = {"SYMTRAIN_TEST_KILL_AT=1:6", "SYMTRAIN_TEST_KILL_AT=0:7"};
    const long long kill_step[2] = {6, 7};
    for (int k = 0; k < 2; k++) {
        int n = npes_list[k];
        long long resumed = e2e_crash_resume(ARGS, n, kill[k], kill_step[k], 3, STEPS);
        printf("train_gpt_resume: %d PE%s: SIGKILL (%s), restart from step %lld: model.bin, "
               "optim.bin and every loss bit-identical\n",
               n, n == 1 ? "" : "s", kill[k] + 22, resumed);
    }
    e2e_cleanup();
    printf("train_gpt_resume: ok\n");
    return 0;
}
