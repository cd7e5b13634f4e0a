/*
 * train_ckpt_full — a disk that fills up in the middle of a checkpoint write:
 * the writer says so (the file system, what the file needs and what is free,
 * "free N or choose another --ckpt-dir"), the half-written checkpoint never
 * becomes visible, the one before it stays whole, and --resume uses it.
 *
 * The test enters a private mount namespace (unshare, as root; SKIP with a
 * one-line notice where that is not allowed) and mounts a tmpfs for each
 * format: room for one checkpoint of the GPT below but not for a second
 * beside it. Single-writer: 1000 KiB, a checkpoint about 690 KiB. Sharded:
 * 900 KiB; a checkpoint is 650 KiB of shards and 47 KiB of manifest (and
 * while it is committed 48 KiB of indexes), so step 2 fits and step 4 (1400
 * KiB beside it) never; no PE writes its shard of step 4 while PE 0 commits
 * step 2 (they used to, up to 510 KiB, and the tmpfs had to be 1350 KiB for
 * step 2's commit to fit). A 4-PE pipeline (dp=2,pp=2) saves at steps 2, 4 and 6
 * with --ckpt-keep 1, once sharded (every PE writes its shard) and once
 * single-writer (PE 0 gathers the stages): step 2 is written, step 4's write
 * runs out of space, the job ends with the message, step 2 verifies, and a
 * --resume run starts from it.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <sys/mount.h>

#include "train_e2e.h"

#define GPT "--generated --model gpt:L=4,C=32,H=4,V=125,T=16 --batch 8 --threads 1 " \
            "--lr 0.01 --warmup-steps 2 --bucket-mb 0.01 --quiet --parallel dp=2,pp=2"

int main(int argc, char **argv) {
    if (unshare(CLONE_NEWNS) < 0) {
        printf("train_ckpt_full: SKIP: no private mount namespace here (unshare: %s; run as root)\n",
               strerror(errno));
        return 77;
    }
    /* our mounts stay ours, and the tmpfs goes with the namespace */
    CHECK(mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0, "mount --make-rprivate /: %s",
          strerror(errno));
    e2e_init(argc, argv, "train_ckpt_full");
    const char *format[2] = {"sharded", "single"}, *size[2] = {"900k", "1000k"};
    for (int f = 0; f < 2; f++) {
        char line[2048];
        const char *small = e2e_path("small-%s", format[f]);
        CHECK(mkdir(small, 0700) == 0, "mkdir %s: %s", small, strerror(errno));
        char opts[64];
        snprintf(opts, sizeof opts, "size=%s,mode=0700", size[f]);
        CHECK(mount("tmpfs", small, "tmpfs", 0, opts) == 0, "mount tmpfs on %s: %s", small,
              strerror(errno));
        const char *dir = e2e_path("small-%s/ck", format[f]), *log = e2e_path("%s.log", format[f]);
        snprintf(line, sizeof line, GPT " --ckpt-format %s --ckpt-dir %s --ckpt-keep 1 "
                 "--ckpt-steps 2 --max-steps 6", format[f], dir);
        e2e_run(4, NULL, NULL, log, 1, line); /* the last checkpoint too: the job fails */
        e2e_expect_log(log, "no space left on the file system of ");
        e2e_expect_log(log, dir);
        e2e_expect_log(log, "or choose another --ckpt-dir");
        char want[256];
        snprintf(want, sizeof want, "%s/.tmp-step-00000004", dir);
        CHECK(e2e_log_has(log, want), "the message does not name the checkpoint being written");
        /* nothing half-written is left, step 2 is whole */
        CHECK(e2e_newest(dir, NULL, 0) == 2, "%s: the newest checkpoint is step %lld, not 2",
              format[f], e2e_newest(dir, NULL, 0));
        CHECK(e2e_sh(e2e_path("ls.log"), "ls -A '%s' | grep -v '^step-00000002$' | "
                     "grep -v '^.lock$' | grep .", dir) != 0,
              "%s holds more than step 2 (see %s)", dir, e2e_path("ls.log"));
        CHECK(e2e_sh(e2e_path("verify-%s.log", format[f]), "'%s' ckpt verify '%s'", e2e_symtrain,
                     dir) == 0, "symtrain ckpt verify %s", dir);
        /* and --resume takes it */
        const char *rlog = e2e_path("resume-%s.log", format[f]);
        snprintf(line, sizeof line, GPT " --ckpt-format %s --ckpt-dir %s --resume --max-steps 2",
                 format[f], dir);
        e2e_run(4, NULL, NULL, rlog, 0, line);
        snprintf(want, sizeof want, "resumed from %s/step-00000002: step 2", dir);
        e2e_expect_log(rlog, want);
        printf("train_ckpt_full: %s: the disk filled while writing step 4: named, nothing left "
               "half-written, step 2 whole and resumed from\n", format[f]);
        umount(small);
    }
    e2e_cleanup();
    printf("train_ckpt_full: ok\n");
    return 0;
}
