/*
 * train_ckpt_safety — checkpoints never lose data, and a changed manifest is
 * never trusted: each case damages or attacks a real checkpoint directory and
 * runs `symrun symtrain train` on it as a user would.
 *
 *   - Without --resume, a directory of an earlier run's checkpoints is an
 *     error (it used to be pruned away as the new run saved).
 *   - Every manifest unreadable (chmod 000; as root the run drops to nobody,
 *     for whom that is a real EACCES): --resume stops with exit 1 naming the
 *     file and the errno, and every checkpoint is still there (it used to start
 *     from scratch, exit 0, and prune the good checkpoints away).
 *   - A `step-*` symbolic link to a directory of someone else's files, due for
 *     pruning: the link and every file of its target survive (pruning used to
 *     follow it and unlink every file there).
 *   - The newest manifest's `sample` edited (the JSON still valid): named as
 *     damaged by its checksum, the one before used, the final weights those
 *     of a run never interrupted (it used to continue at the wrong place).
 *   - Under umask 0 the checkpoint directories are 0700 and files 0600.
 *   - --resume with nothing to resume from is an error; --resume=auto starts
 *     from the beginning.
 */
#include "train_e2e.h"

#define ARGS "--generated --train-samples 400 --test-samples 100 --epochs 2 " \
             "--model mlp:784-16-10 --batch 40 --dropout 0.1 --threads 1 --quiet"

static const char *const names[] = {"model.bin", "optim.bin", "manifest.json"};

static int exists(const char *p) {
    struct stat st;
    return lstat(p, &st) == 0;
}

static void expect_steps(const char *ck, const int *steps, int n, const char *after) {
    for (int i = 0; i < n; i++)
        for (int k = 0; k < 3; k++) {
            char p[700];
            snprintf(p, sizeof p, "%s/step-%08d/%s", ck, steps[i], names[k]);
            CHECK(exists(p), "after %s, %s is gone", after, p);
        }
}

static void copy_file(const char *from, const char *to) {
    size_t len;
    char *s = e2e_read(from, &len);
    CHECK(s != NULL, "read %s", from);
    FILE *f = fopen(to, "wb");
    CHECK(f && fwrite(s, 1, len, f) == len && fclose(f) == 0, "write %s", to);
    free(s);
}

int main(int argc, char **argv) {
    e2e_init(argc, argv, "train_ckpt_safety");
    char args[1024];
    const char *ref = e2e_path("ref"), *ck = e2e_path("ck");
    snprintf(args, sizeof args, ARGS " --ckpt-dir %s", ref);
    e2e_run(1, NULL, NULL, e2e_path("ref.log"), 0, args); /* 20 steps */
    snprintf(args, sizeof args, ARGS " --ckpt-dir %s --ckpt-steps 4 --max-steps 12", ck);
    e2e_run(1, NULL, NULL, e2e_path("part.log"), 0, args);
    const int three[] = {4, 8, 12};
    expect_steps(ck, three, 3, "the first part");

    /* an earlier run's checkpoints, no --resume */
    const char *log = e2e_path("again.log");
    snprintf(args, sizeof args, ARGS " --ckpt-dir %s --ckpt-steps 4", ck);
    e2e_run(1, NULL, NULL, log, 1, args);
    e2e_expect_log(log, "holds checkpoints of an earlier run (up to step 12)");
    e2e_expect_log(log, "pass --resume");
    expect_steps(ck, three, 3, "a run without --resume");
    printf("train_ckpt_safety: an earlier run's checkpoints without --resume: exit 1, all kept\n");

    /* every manifest unreadable */
    if (!test_can_drop()) {
        printf("train_ckpt_safety: note: root cannot become nobody here: the unreadable-manifest "
               "case is skipped\n");
    } else {
        CHECK(chmod(e2e_dir, 0711) == 0, "chmod %s", e2e_dir); /* nobody may pass through */
        test_give_to_nobody(ck);
        for (int i = 0; i < 3; i++)
            CHECK(chmod(e2e_path("ck/step-%08d/manifest.json", three[i]), 0) == 0, "chmod");
        log = e2e_path("unreadable.log");
        snprintf(args, sizeof args, ARGS " --ckpt-dir %s --ckpt-steps 4 --resume", ck);
        e2e_nobody = 1;
        e2e_run(1, NULL, NULL, log, 1, args);
        e2e_nobody = 0;
        e2e_expect_log(log, e2e_path("ck/step-00000012/manifest.json"));
        e2e_expect_log(log, strerror(EACCES));
        e2e_expect_log(log, "nothing older is taken in its place");
        CHECK(!e2e_log_has(log, "starting from the beginning") && !e2e_log_has(log, "resumed from"),
              "an unreadable checkpoint was passed over");
        for (int i = 0; i < 3; i++)
            CHECK(chmod(e2e_path("ck/step-%08d/manifest.json", three[i]), 0600) == 0, "chmod");
        expect_steps(ck, three, 3, "--resume with unreadable manifests");
        printf("train_ckpt_safety: unreadable manifests: exit 1 naming the file and %s, all "
               "kept\n", strerror(EACCES));
    }

    /* a step-* link into someone else's files, older than anything kept */
    const char *victim = e2e_path("victim");
    CHECK(mkdir(victim, 0700) == 0, "mkdir %s", victim);
    for (int k = 0; k < 3; k++) /* a checkpoint's files, its manifest listing them */
        copy_file(e2e_path("ck/step-00000004/%s", names[k]), e2e_path("victim/%s", names[k]));
    copy_file(e2e_path("part.log"), e2e_path("victim/precious.txt"));
    CHECK(symlink(victim, e2e_path("ck/step-00000001")) == 0, "symlink");

    /* the newest manifest edited: still JSON, sample 40 -> 80 */
    const char *man = e2e_path("ck/step-00000012/manifest.json");
    char *text = e2e_read(man, NULL), *at = text ? strstr(text, "\"sample\": 80,") : NULL;
    CHECK(at != NULL, "%s does not say \"sample\": 80", man);
    memcpy(at, "\"sample\": 40,", 13);
    FILE *f = fopen(man, "wb");
    CHECK(f && fputs(text, f) >= 0 && fclose(f) == 0, "write %s", man);
    free(text);

    log = e2e_path("resume.log");
    snprintf(args, sizeof args, ARGS " --ckpt-dir %s --ckpt-steps 4 --resume", ck);
    mode_t mask = umask(0);
    e2e_run(1, NULL, NULL, log, 0, args);
    umask(mask);
    e2e_expect_log(log, "step-00000012 is damaged");
    e2e_expect_log(log, "does not match its own checksum");
    e2e_expect_log(log, "resumed from");
    e2e_expect_log(log, "step-00000008: step 8");
    e2e_same_file(e2e_path("ref/step-00000020/model.bin"), e2e_path("ck/step-00000020/model.bin"));
    e2e_same_file(e2e_path("ref/step-00000020/optim.bin"), e2e_path("ck/step-00000020/optim.bin"));
    printf("train_ckpt_safety: an edited manifest: named by its checksum, resumed from step 8, "
           "final weights bit-identical\n");
    for (int k = 0; k < 3; k++)
        CHECK(exists(e2e_path("victim/%s", names[k])), "pruning removed victim/%s through a link",
              names[k]);
    CHECK(exists(e2e_path("victim/precious.txt")), "pruning removed victim/precious.txt");
    CHECK(exists(e2e_path("ck/step-00000001")), "the link itself was removed");
    CHECK(!exists(e2e_path("ck/step-00000004")) && !exists(e2e_path("ck/step-00000008")),
          "the run did not prune its old checkpoints");
    printf("train_ckpt_safety: a step-* link due for pruning: it and its target's files kept\n");
    struct stat st;
    const char *step = e2e_path("ck/step-00000020");
    CHECK(stat(step, &st) == 0 && (st.st_mode & 07777) == 0700, "%s is %o under umask 0", step,
          st.st_mode & 07777);
    for (int k = 0; k < 3; k++) {
        const char *p = e2e_path("ck/step-00000020/%s", names[k]);
        CHECK(stat(p, &st) == 0 && (st.st_mode & 07777) == 0600, "%s is %o under umask 0", p,
              st.st_mode & 07777);
    }
    printf("train_ckpt_safety: under umask 0: checkpoint directories 0700, files 0600\n");

    /* nothing to resume from */
    const char *fresh = e2e_path("fresh");
    log = e2e_path("must.log");
    snprintf(args, sizeof args, ARGS " --max-steps 2 --ckpt-dir %s --resume", fresh);
    e2e_run(1, NULL, NULL, log, 1, args);
    e2e_expect_log(log, "nothing to resume from");
    e2e_expect_log(log, "--resume=auto");
    CHECK(e2e_newest(fresh, NULL, 0) < 0, "a failed --resume wrote a checkpoint");
    log = e2e_path("auto.log");
    snprintf(args, sizeof args, ARGS " --max-steps 2 --ckpt-dir %s --resume=auto", fresh);
    CHECK(stat(fresh, &st) != 0 || rmdir(fresh) == 0, "rmdir %s", fresh);
    e2e_run(1, NULL, NULL, log, 0, args);
    e2e_expect_log(log, "starting from the beginning");
    CHECK(e2e_newest(fresh, NULL, 0) == 2, "--resume=auto did not train from the start");
    CHECK(stat(fresh, &st) == 0 && (st.st_mode & 07777) == 0700, "%s is %o", fresh,
          st.st_mode & 07777);
    printf("train_ckpt_safety: nothing to resume from: --resume exit 1, --resume=auto starts "
           "over\n");
    e2e_cleanup();
    printf("train_ckpt_safety: ok\n");
    return 0;
}
