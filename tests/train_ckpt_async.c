/*
 * train_ckpt_async — checkpoints written in the background (--ckpt-async on,
 * the default) against the same run writing each one before the next step
 * (--ckpt-async off), through symrun and the symtrain CLI:
 *   - the same bytes: every file of every checkpoint (both formats; the
 *     manifests up to their "created" time and own checksum), and a resume
 *     from an asynchronous checkpoint ends bit-identical to an uninterrupted run;
 *   - SIGTERM while a write is in flight (seen as its staging directory):
 *     exit 0, that checkpoint committed, then the stop checkpoint; the resume
 *     is bit-identical;
 *   - SIGKILL while a write is in flight: the restart resumes from the
 *     checkpoint before it, never the half-written one, and ends bit-identical;
 *   - a write that fails after the start (the directory made unwritable, as
 *     nobody when the test runs as root): every PE ends, exit 1, one message
 *     naming the cause, a few steps after the checkpoint that failed.
 *   - --ckpt-at-eval: a checkpoint after each evaluation, in both formats.
 * SYMTRAIN_TEST_CKPT_WRITE_DELAY_MS makes each write pause once its data
 * files are written, so the signals land inside a write.
 */
#include "train_e2e.h"

#define ARGS "--generated --train-samples 1500 --test-samples 300 --epochs 8 " \
             "--model mlp:784-256-128-10 --batch 40"

/* Files equal, a manifest up to the lines that differ between two writes of
 * the same state (its time of creation and so its own checksum). */
static void same_manifest(const char *a, const char *b) {
    char *x = e2e_read(a, NULL), *y = e2e_read(b, NULL);
    CHECK(x && y, "read %s and %s", a, b);
    char *lx = x, *ly = y;
    for (;;) {
        char *ex = strchr(lx, '\n'), *ey = strchr(ly, '\n');
        if (ex) *ex = '\0';
        if (ey) *ey = '\0';
        if (!strstr(lx, "\"created\"") && !strstr(lx, "\"manifest_crc32c\""))
            CHECK(!strcmp(lx, ly), "%s and %s differ:\n  %s\n  %s", a, b, lx, ly);
        CHECK(!ex == !ey, "%s and %s have different lengths", a, b);
        if (!ex) break;
        lx = ex + 1;
        ly = ey + 1;
    }
    free(x);
    free(y);
}

/* Every file of checkpoint directory a is in b with the same bytes. */
static int same_ckpt_dir(const char *a, const char *b) {
    DIR *d = opendir(a);
    CHECK(d != NULL, "opendir %s", a);
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char pa[1024], pb[1024];
        snprintf(pa, sizeof pa, "%s/%s", a, e->d_name);
        snprintf(pb, sizeof pb, "%s/%s", b, e->d_name);
        if (!strcmp(e->d_name, "manifest.json"))
            same_manifest(pa, pb);
        else
            e2e_same_file(pa, pb);
        n++;
    }
    closedir(d);
    return n;
}

/* Async and sync write the same checkpoints; a resume from the async ones is exact. */
static void same_bytes(const char *fmt, int n) {
    char args[1024];
    const char *on = e2e_path("on-%s", fmt), *off = e2e_path("off-%s", fmt);
    snprintf(args, sizeof args, ARGS " --quiet --ckpt-format %s --ckpt-steps 5 --ckpt-keep 100 "
             "--max-steps 20 --ckpt-dir %s", fmt, on);
    e2e_run(n, NULL, NULL, e2e_path("on-%s.log", fmt), 0, args);
    snprintf(args, sizeof args, ARGS " --quiet --ckpt-format %s --ckpt-steps 5 --ckpt-keep 100 "
             "--max-steps 20 --ckpt-async off --ckpt-dir %s", fmt, off);
    e2e_run(n, NULL, NULL, e2e_path("off-%s.log", fmt), 0, args);
    int files = 0;
    for (int s = 5; s <= 20; s += 5)
        files += same_ckpt_dir(e2e_path("off-%s/step-%08d", fmt, s),
                               e2e_path("on-%s/step-%08d", fmt, s));
    /* continue the async run to 40 and against one that never stopped */
    const char *ref = e2e_path("ref-%s", fmt);
    snprintf(args, sizeof args, ARGS " --quiet --ckpt-format %s --max-steps 40 --ckpt-dir %s",
             fmt, ref);
    e2e_run(n, NULL, NULL, e2e_path("ref-%s.log", fmt), 0, args);
    const char *log = e2e_path("resume-%s.log", fmt);
    snprintf(args, sizeof args, ARGS " --ckpt-format %s --ckpt-steps 5 --ckpt-keep 100 "
             "--max-steps 40 --resume --ckpt-dir %s", fmt, on);
    e2e_run(n, NULL, NULL, log, 0, args);
    e2e_expect_log(log, "resumed from");
    e2e_expect_log(log, "(--ckpt-async on)"); /* the stall figures */
    files += same_ckpt_dir(e2e_path("ref-%s/step-%08d", fmt, 40), e2e_path("on-%s/step-%08d", fmt, 40));
    printf("train_ckpt_async: %s, %d PEs: steps 5-20 async == sync (%d files compared); resumed "
           "at 20, step 40 == an uninterrupted run\n", fmt, n, files);
}

/* The step of a staging directory (.tmp-step-N.PID) in ckdir, or -1. */
static long long in_flight(const char *ckdir) {
    DIR *d = opendir(ckdir);
    if (!d) return -1;
    struct dirent *e;
    long long step = -1;
    while ((e = readdir(d)))
        if (!strncmp(e->d_name, ".tmp-step-", 10)) step = atoll(e->d_name + 10);
    closedir(d);
    return step;
}

#define DELAY "SYMTRAIN_TEST_CKPT_WRITE_DELAY_MS=800"

/* SIGTERM while a write is in flight commits it, then the stop checkpoint. */
static void sigterm_in_flight(const char *fmt, int n) {
    char args[1024];
    const char *ref = e2e_path("tref-%s", fmt), *ck = e2e_path("term-%s", fmt);
    snprintf(args, sizeof args, ARGS " --quiet --ckpt-format %s --max-steps 60 --ckpt-dir %s "
             "--metrics %s", fmt, ref, e2e_path("tref-%s.jsonl", fmt));
    e2e_run(n, NULL, NULL, e2e_path("tref-%s.log", fmt), 0, args);
    const char *metrics = e2e_path("term-%s.jsonl", fmt), *log = e2e_path("term-%s.log", fmt);
    snprintf(args, sizeof args, ARGS " --ckpt-format %s --max-steps 60 --ckpt-steps 10 "
             "--ckpt-keep 100 --ckpt-dir %s --metrics %s", fmt, ck, metrics);
    e2e_proc_t p = e2e_start(n, NULL, DELAY, log, args);
    long long flying = -1;
    for (int waited = 0; (flying = in_flight(ck)) < 0; waited += 2) {
        CHECK(waited < 60000, "no checkpoint write in flight after 60 s");
        e2e_sleep_ms(2);
    }
    kill(p.pid, SIGTERM);
    int rc = e2e_wait(&p);
    if (rc != 0) e2e_show(log);
    CHECK(rc == 0, "SIGTERM during the write of step %lld: exit %d, expected 0", flying, rc);
    e2e_expect_log(log, "stopped by a signal after step");
    long long recorded, stopped = e2e_newest(ck, NULL, 0);
    free(e2e_losses(metrics, &recorded));
    CHECK(stopped == recorded && stopped > flying && stopped < 60,
          "the stop checkpoint is at step %lld, the last step recorded %lld, the write in "
          "flight was step %lld's", stopped, recorded, flying);
    struct stat st;
    CHECK(stat(e2e_path("term-%s/step-%08lld/manifest.json", fmt, flying), &st) == 0,
          "the write in flight at the SIGTERM (step %lld) was not committed", flying);
    CHECK(in_flight(ck) < 0, "a staging directory is left in %s", ck);
    CHECK(e2e_sh(e2e_path("verify-%s.log", fmt), "%s ckpt verify %s/step-%08lld", e2e_symtrain,
                 ck, flying) == 0, "symtrain ckpt verify of step %lld failed", flying);
    snprintf(args, sizeof args, ARGS " --quiet --ckpt-format %s --max-steps 60 --resume "
             "--ckpt-dir %s", fmt, ck);
    e2e_run(n, NULL, NULL, e2e_path("term2-%s.log", fmt), 0, args);
    int files = same_ckpt_dir(e2e_path("tref-%s/step-%08d", fmt, 60),
                              e2e_path("term-%s/step-%08d", fmt, 60));
    printf("train_ckpt_async: %s, %d PEs: SIGTERM during step %lld's write: it committed, then "
           "the stop checkpoint (step %lld); resumed, step 60 == uninterrupted (%d files)\n",
           fmt, n, flying, stopped, files);
}

/* SIGKILL of the writing PE while a write is in flight: the restart takes the one before. */
static void kill_in_flight(void) {
    /* step 20's save waits for step 10's write (1 s), then is in flight at step 25 */
    setenv("SYMTRAIN_TEST_CKPT_WRITE_DELAY_MS", "1000", 1);
    long long resumed = e2e_crash_resume(ARGS " --quiet --max-steps 40", 2,
                                         "SYMTRAIN_TEST_KILL_AT=0:25", 25, 10, 40);
    unsetenv("SYMTRAIN_TEST_CKPT_WRITE_DELAY_MS");
    CHECK(resumed == 10, "resumed from step %lld: step 20's write was in flight at the kill, "
          "and step 10's is the newest committed", resumed);
    printf("train_ckpt_async: PE 0 killed at step 25 during step 20's write: resumed from step "
           "10, the half-written one ignored; step 40 == uninterrupted\n");
}

/* The directory becomes unwritable after the first checkpoint: the job ends. */
static void write_fails(const char *fmt, int n) {
    const char *ck = e2e_path("fail-%s", fmt), *out = e2e_path("out-%s", fmt);
    CHECK(mkdir(ck, 0700) == 0 && mkdir(out, 0700) == 0, "mkdir");
    CHECK(chmod(e2e_dir, 0711) == 0, "chmod %s", e2e_dir); /* nobody may pass through */
    test_give_to_nobody(ck);
    test_give_to_nobody(out);
    const char *metrics = e2e_path("out-%s/m.jsonl", fmt), *log = e2e_path("fail-%s.log", fmt);
    char args[1024];
    snprintf(args, sizeof args, ARGS " --ckpt-format %s --max-steps 300 --ckpt-steps 10 "
             "--ckpt-dir %s --metrics %s", fmt, ck, metrics);
    e2e_nobody = 1;
    e2e_proc_t p = e2e_start(n, NULL, NULL, log, args);
    e2e_nobody = 0;
    struct stat st;
    for (int waited = 0; stat(e2e_path("fail-%s/step-00000010/manifest.json", fmt), &st); waited += 1) {
        CHECK(waited < 60000, "no first checkpoint after 60 s");
        e2e_sleep_ms(1);
    }
    CHECK(chmod(ck, 0500) == 0, "chmod %s", ck);
    int rc = e2e_wait(&p);
    if (rc != 1 || e2e_count(log, "a checkpoint could not be written") != 1) e2e_show(log);
    CHECK(rc == 1, "an unwritable --ckpt-dir: exit %d, expected 1", rc);
    CHECK(e2e_count(log, "a checkpoint could not be written") == 1, "not one message");
    e2e_expect_log(log, strerror(EACCES));
    e2e_expect_log(log, "--resume continues from the newest checkpoint");
    CHECK(!e2e_log_has(log, "stopped by a signal") && !e2e_log_has(log, "test accuracy"),
          "the run went on after the failed write");
    long long recorded;
    free(e2e_losses(metrics, &recorded));
    long long newest = e2e_newest(ck, NULL, 0);
    CHECK(recorded < 300 && newest < recorded, "stopped at step %lld (newest checkpoint %lld)",
          recorded, newest);
    /* (a staging directory may be left: made before the chmod, it cannot be
     * removed without the directory's write permission; it is never read) */
    CHECK(chmod(ck, 0700) == 0, "chmod %s", ck);
    snprintf(args, sizeof args, ARGS " --quiet --ckpt-format %s --max-steps %lld --resume "
             "--ckpt-dir %s", fmt, newest + 2, ck);
    const char *log2 = e2e_path("fail2-%s.log", fmt);
    e2e_nobody = 1;
    e2e_run(n, NULL, NULL, log2, 0, args);
    e2e_nobody = 0;
    char want[1024];
    snprintf(want, sizeof want, "resumed from %s/step-%08lld", ck, newest);
    e2e_expect_log(log2, want);
    printf("train_ckpt_async: %s, %d PEs: --ckpt-dir unwritable after step %lld's checkpoint: "
           "every PE ended at step %lld, exit 1, one message (%s); --resume took step %lld\n", fmt,
           n, newest, recorded,
           strerror(EACCES), newest);
}

/* --ckpt-at-eval: a checkpoint after each evaluation (--eval-every 4, and
 * the epochs' ends), in both formats, and nowhere else but the end; without
 * --ckpt-dir it is a usage error. */
static void at_eval(const char *fmt, int n) {
    char args[2048];
    const char *ck = e2e_path("eval-%s", fmt);
    snprintf(args, sizeof args, "--generated --train-samples 400 --test-samples 40 --epochs 2 "
             "--model mlp:784-32-10 --batch 40 --threads 1 --quiet --eval-every 4 --ckpt-at-eval "
             "--ckpt-keep 100 --ckpt-format %s --max-steps 15 --ckpt-dir %s", fmt, ck);
    e2e_run(n, NULL, NULL, e2e_path("eval-%s.log", fmt), 0, args);
    /* 10 steps an epoch: evaluations at 4, 8, 10 (the epoch's end), 12; the end at 15 */
    static const int want[] = {4, 8, 10, 12, 15};
    int found = 0;
    DIR *d = opendir(ck);
    CHECK(d != NULL, "no %s", ck);
    struct dirent *e;
    while ((e = readdir(d)))
        if (!strncmp(e->d_name, "step-", 5)) {
            int s = atoi(e->d_name + 5), ok = 0;
            for (size_t i = 0; i < sizeof want / sizeof *want; i++) ok |= s == want[i];
            CHECK(ok, "%s: a checkpoint of step %d, which follows no evaluation", fmt, s);
            found++;
        }
    closedir(d);
    CHECK(found == 5, "%s: %d checkpoints, not the 5 of steps 4, 8, 10, 12 and 15", fmt, found);
    snprintf(args, sizeof args, "--generated --model mlp:784-32-10 --ckpt-at-eval --max-steps 1");
    e2e_run(1, NULL, NULL, e2e_path("eval-nodir.log", fmt), 2, args);
    e2e_expect_log(e2e_path("eval-nodir.log", fmt), "--ckpt-at-eval need --ckpt-dir DIR");
    printf("train_ckpt_async: --ckpt-at-eval, %s, %d PEs: checkpoints at steps 4, 8, 10, 12 "
           "(the evaluations) and 15 (the end)\n", fmt, n);
}

/* argv[3] picks a part (each a ctest of its own, to stay short): bytes
 * (the default), signals or failures. */
int main(int argc, char **argv) {
    const char *part = argc > 3 ? argv[3] : "bytes";
    e2e_init(argc, argv, "train_ckpt_async");
    if (!strcmp(part, "bytes")) {
        same_bytes("single", 2);
        same_bytes("sharded", 3);
        at_eval("single", 2);
        at_eval("sharded", 2);
    } else if (!strcmp(part, "signals")) {
        sigterm_in_flight("single", 2);
        sigterm_in_flight("sharded", 2);
        kill_in_flight();
    } else if (!strcmp(part, "failures")) {
        if (!test_can_drop()) {
            printf("train_ckpt_async: root cannot become nobody here: SKIP (an unwritable "
                   "directory denies root nothing)\n");
            e2e_cleanup();
            return 77;
        }
        write_fails("single", 2);
        write_fails("sharded", 4);
    } else {
        fprintf(stderr, "train_ckpt_async: unknown part '%s': bytes, signals or failures\n", part);
        return 2;
    }
    e2e_cleanup();
    printf("train_ckpt_async %s: ok\n", part);
    return 0;
}
