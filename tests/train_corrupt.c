/*
 * train_corrupt — `--resume` with damaged checkpoints: each damaged one is
 * named with its cause, the newest good one is used, and the run still ends
 * bit-identical to one that was never interrupted.
 *
 * Round 1: checkpoints every 16 steps up to step 80 (keep 3: 48, 64, 80); a
 * byte of step 80's model.bin flipped -> resume from 64.
 * Round 2: after that run (final checkpoint 114), its manifest cut in half, a
 * directory step-00000300 with no manifest and a temporary directory as a
 * crashed writer leaves them -> 300 and 114 named, 80 (still damaged) named,
 * resume from 64 again. Round 3: nothing usable -> --resume is an error
 * (exit 1, nothing removed); --resume=auto says so and starts from the
 * beginning.
 */
#include "train_e2e.h"

#define ARGS "--generated --train-samples 1500 --test-samples 300 --epochs 3 " \
             "--model mlp:784-48-24-10 --batch 40 --dropout 0.2 --quiet"

static void flip_byte(const char *path, long at) {
    FILE *f = fopen(path, "r+b");
    CHECK(f != NULL, "open %s", path);
    fseek(f, at, SEEK_SET);
    int c = fgetc(f);
    fseek(f, at, SEEK_SET);
    fputc(c ^ 0x01, f);
    CHECK(fclose(f) == 0, "close %s", path);
}

int main(int argc, char **argv) {
    e2e_init(argc, argv, "train_corrupt");
    char args[1024];
    const char *ref = e2e_path("ref"), *ck = e2e_path("ck");
    snprintf(args, sizeof args, ARGS " --ckpt-dir %s", ref);
    e2e_run(1, NULL, NULL, e2e_path("ref.log"), 0, args);

    snprintf(args, sizeof args, ARGS " --ckpt-dir %s --ckpt-steps 16 --max-steps 80", ck);
    e2e_run(1, NULL, NULL, e2e_path("part.log"), 0, args);
    struct stat st;
    CHECK(stat(e2e_path("ck/step-00000048"), &st) == 0 && stat(e2e_path("ck/step-00000080"), &st) == 0 &&
          stat(e2e_path("ck/step-00000032"), &st) != 0, "--ckpt-keep 3 did not leave steps 48, 64, 80");

    /* round 1 */
    flip_byte(e2e_path("ck/step-00000080/model.bin"), 1001);
    snprintf(args, sizeof args, ARGS " --ckpt-dir %s --resume", ck);
    const char *log = e2e_path("r1.log");
    e2e_run(1, NULL, NULL, log, 0, args);
    e2e_expect_log(log, "step-00000080 is damaged");
    e2e_expect_log(log, "CRC32C");
    e2e_expect_log(log, "using the one before it");
    e2e_expect_log(log, "resumed from");
    e2e_expect_log(log, "step-00000064: step 64");
    e2e_same_ckpt_file(ref, ck, "model.bin");
    e2e_same_ckpt_file(ref, ck, "optim.bin");
    printf("train_corrupt: flipped byte in the newest checkpoint: named, previous one used, final "
           "weights bit-identical\n");

    /* round 2 */
    const char *man = e2e_path("ck/step-00000114/manifest.json");
    CHECK(stat(man, &st) == 0 && truncate(man, st.st_size / 2) == 0, "truncate %s", man);
    CHECK(mkdir(e2e_path("ck/step-00000300"), 0755) == 0, "mkdir");
    CHECK(mkdir(e2e_path("ck/.tmp-step-00000400.12345"), 0755) == 0, "mkdir");
    log = e2e_path("r2.log");
    e2e_run(1, NULL, NULL, log, 0, args);
    e2e_expect_log(log, "step-00000300 is damaged");
    e2e_expect_log(log, "no manifest.json");
    e2e_expect_log(log, "step-00000114 is damaged");
    e2e_expect_log(log, "not valid JSON");
    e2e_expect_log(log, "step-00000080 is damaged");
    e2e_expect_log(log, "step-00000064: step 64");
    CHECK(stat(e2e_path("ck/.tmp-step-00000400.12345"), &st) != 0,
          "a crashed writer's temporary directory was not cleaned up");
    /* a later step than any this run wrote is never pruned (readers pass over it) */
    CHECK(stat(e2e_path("ck/step-00000300"), &st) == 0, "step 300, later than 114, was removed");
    e2e_same_file(e2e_path("ref/step-00000114/model.bin"), e2e_path("ck/step-00000114/model.bin"));
    printf("train_corrupt: cut manifest, missing manifest, leftover temporary directory: named or "
           "ignored, resumed from 64, bit-identical\n");

    /* round 3: damage every checkpoint */
    for (int s = 0; s <= 300; s++) {
        char p[64];
        snprintf(p, sizeof p, "ck/step-%08d/manifest.json", s);
        unlink(e2e_path("%s", p));
    }
    log = e2e_path("r3.log");
    e2e_run(1, NULL, NULL, log, 1, args); /* --resume must resume */
    e2e_expect_log(log, "holds no usable checkpoint (4 damaged)");
    e2e_expect_log(log, "--resume=auto");
    CHECK(e2e_newest(ck, NULL, 0) == 300, "a failed --resume changed the checkpoints");
    printf("train_corrupt: nothing usable: --resume is an error (exit 1), nothing removed\n");
    snprintf(args, sizeof args, ARGS " --ckpt-dir %s --resume=auto", ck);
    log = e2e_path("r3auto.log");
    e2e_run(1, NULL, NULL, log, 0, args);
    e2e_expect_log(log, "holds no usable checkpoint");
    e2e_expect_log(log, "starting from the beginning");
    e2e_same_file(e2e_path("ref/step-00000114/model.bin"), e2e_path("ck/step-00000114/model.bin"));
    printf("train_corrupt: nothing usable, --resume=auto: said so, trained from the start, same "
           "weights\n");
    e2e_cleanup();
    printf("train_corrupt: ok\n");
    return 0;
}
