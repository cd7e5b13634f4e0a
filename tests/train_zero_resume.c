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
    e2e_cleanup();
    printf("train_zero_resume: ok\n");
    return 0;
}
