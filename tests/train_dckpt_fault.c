/*
 * train_dckpt_fault — sharded checkpoints when things go wrong, 4 PEs:
 *   (a) PE 2 dies after writing its shard of step 10, before the commit
 *       (SYMTRAIN_TEST_CKPT_EXIT_AT=2:10): step 10 never appears, step 5 is
 *       whole and verifies, and --resume from it ends bit-identical to the
 *       uninterrupted run; the staging directory left behind is removed by
 *       the next commit;
 *   (b) a flipped byte in one shard of the newest checkpoint: named, and the
 *       one before it used; `ckpt verify` exits 1 naming the file;
 *   (c) a missing shard of the only checkpoint: --resume exits 1 with one
 *       message naming the file, no PE left hanging;
 *   (d) `ckpt show` and `ckpt verify` say what the checkpoint holds.
 */
#include "train_dckpt.h"

#define MLP "--generated --train-samples 400 --test-samples 100 --epochs 2 " \
            "--model mlp:784-32-16-10 --batch 40 --optimizer adamw --lr 0.01 --threads 1 --quiet " \
            "--ckpt-format sharded --ckpt-steps 5"

static void flip_byte(const char *path, long at) {
    FILE *f = fopen(path, "r+b");
    CHECK(f != NULL, "open %s", path);
    CHECK(fseek(f, at, SEEK_SET) == 0, "seek");
    int c = fgetc(f);
    CHECK(c != EOF, "read %s", path);
    fseek(f, at, SEEK_SET);
    fputc(c ^ 0x40, f);
    fclose(f);
}

int main(int argc, char **argv) {
    e2e_init(argc, argv, "train_dckpt_fault");
    char line[2048];
    const char *ref = e2e_path("ref"), *ck = e2e_path("ck");
    snprintf(line, sizeof line, MLP " --ckpt-dir %s --metrics %s", ref, e2e_path("ref.jsonl"));
    e2e_run(4, NULL, NULL, e2e_path("ref.log"), 0, line);

    /* (a) killed between its shard and the commit */
    snprintf(line, sizeof line, MLP " --ckpt-dir %s --metrics %s", ck, e2e_path("ck.jsonl"));
    e2e_proc_t p = e2e_start(4, NULL, "SYMTRAIN_TEST_CKPT_EXIT_AT=2:10", e2e_path("kill.log"), line);
    int rc = e2e_wait(&p);
    if (rc == 0) e2e_show(e2e_path("kill.log"));
    CHECK(rc != 0, "the job went on after PE 2 was killed");
    e2e_expect_log(e2e_path("kill.log"), "was killed by signal 9");
    CHECK(e2e_newest(ck, NULL, 0) == 5, "after the kill the newest checkpoint is step %lld, not 5",
          e2e_newest(ck, NULL, 0));
    CHECK(dckpt_staging(ck) == 1, "no staging directory of step 10 was left behind");
    CHECK(e2e_sh(e2e_path("v1.log"), "'%s' ckpt verify '%s'", e2e_symtrain, ck) == 0,
          "ckpt verify after the kill");
    e2e_expect_log(e2e_path("v1.log"), "step-00000005: ok");
    snprintf(line, sizeof line, MLP " --ckpt-dir %s --resume --metrics %s", ck, e2e_path("ck.jsonl"));
    e2e_run(4, NULL, NULL, e2e_path("resume.log"), 0, line);
    e2e_expect_log(e2e_path("resume.log"), "step-00000005: step 5");
    int nt = dckpt_compare(e2e_path("ref/step-00000020"), e2e_path("ck/step-00000020"), NULL);
    e2e_same_losses(e2e_path("ref.jsonl"), e2e_path("ck.jsonl"), 20, 1);
    CHECK(dckpt_staging(ck) == 0, "the killed save's staging directory is still there");
    printf("train_dckpt_fault: PE 2 killed before step 10's commit: step 5 intact, resumed from it "
           "to %d tensors and every loss bit-identical\n", nt);

    /* (d) show and verify of a whole one */
    const char *show = e2e_path("show.log");
    CHECK(e2e_sh(show, "'%s' ckpt show '%s/step-00000020'", e2e_symtrain, ref) == 0, "ckpt show");
    e2e_expect_log(show, "format 3, step 20 (2 epochs + 0 samples), dp=4");
    e2e_expect_log(show, "18 tensors:");
    e2e_expect_log(show, "4 files:");
    e2e_expect_log(show, "shard-00003.bin      PE 3");
    char *text = e2e_read(show, NULL), *at = strstr(text, "\n    fc0.weight ");
    CHECK(at && strstr(at, "fp32") && strstr(at, "32x784") && strstr(at, "4 slices") &&
              strstr(at, "100352 bytes"), "ckpt show's line of fc0.weight: %s", text);
    free(text);
    CHECK(e2e_sh(e2e_path("v2.log"), "'%s' ckpt verify '%s'", e2e_symtrain, ref) == 0, "ckpt verify");
    CHECK(e2e_count(e2e_path("v2.log"), ": ok: step ") == 3, "verify did not pass all three");

    /* (b) a flipped byte in shard 1 of step 20 */
    flip_byte(e2e_path("ref/step-00000020/shard-00001.bin"), 3000);
    CHECK(e2e_sh(e2e_path("v3.log"), "'%s' ckpt verify '%s'", e2e_symtrain, ref) == 1,
          "ckpt verify of a damaged shard did not exit 1");
    e2e_expect_log(e2e_path("v3.log"), "step-00000020/shard-00001.bin is damaged");
    e2e_expect_log(e2e_path("v3.log"), "step-00000015: ok");
    snprintf(line, sizeof line, MLP " --ckpt-dir %s --resume --max-steps 15", ref);
    const char *log = e2e_path("damaged.log");
    e2e_run(4, NULL, NULL, log, 0, line);
    e2e_expect_log(log, "step-00000020 is damaged");
    e2e_expect_log(log, "shard-00001.bin is damaged");
    e2e_expect_log(log, "using the one before it");
    e2e_expect_log(log, "step-00000015: step 15");
    CHECK(e2e_count(log, "using the one before it") == 1, "the damage was reported more than once");
    printf("train_dckpt_fault: a flipped byte in a shard: named, step 15 used\n");

    /* (c) the only checkpoint lacks a shard */
    const char *one = e2e_path("one");
    snprintf(line, sizeof line, MLP " --ckpt-dir %s --max-steps 5", one);
    e2e_run(4, NULL, NULL, e2e_path("one.log"), 0, line);
    CHECK(unlink(e2e_path("one/step-00000005/shard-00003.bin")) == 0, "unlink");
    snprintf(line, sizeof line, MLP " --ckpt-dir %s --resume", one);
    log = e2e_path("missing.log");
    e2e_run(4, NULL, NULL, log, 1, line);
    e2e_expect_log(log, "shard-00003.bin is missing");
    e2e_expect_log(log, "no usable checkpoint");
    CHECK(e2e_count(log, "shard-00003.bin is missing") == 1, "the missing shard was named more than once");
    CHECK(e2e_sh(e2e_path("v4.log"), "'%s' ckpt verify '%s'", e2e_symtrain, one) == 1,
          "ckpt verify of a missing shard did not exit 1");
    e2e_expect_log(e2e_path("v4.log"), "shard-00003.bin is missing");
    printf("train_dckpt_fault: a missing shard: named, the job exits 1\n");

    e2e_cleanup();
    printf("train_dckpt_fault: ok\n");
    return 0;
}
