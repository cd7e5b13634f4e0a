/*
 * train_lock — two jobs at once on one checkpoint directory or one metrics
 * file. While job A (2 PEs) trains with --ckpt-dir D --metrics M:
 *   - job B with --ckpt-dir D is refused at once (exit 1), naming who holds D
 *     (host and A's PE 0's pid), and leaves D as it was; its message names
 *     the program once ("symtrain train: PE 0: ...");
 *   - job C with --metrics M is refused (exit 1), naming A's PE 0's pid;
 * then A stops on SIGTERM (saving), and a job resuming from D runs: the locks
 * went with A. It names the checkpoint's epoch both ways: as the progress
 * lines count (from 1) and as the manifest holds it (from 0).
 */
#include "train_e2e.h"

#define LONG_JOB "--generated --train-samples 2000 --test-samples 32 --batch 16 --epochs 100"

/* The pid of job A's PE 0: the symrun child that holds the lock file. */
static int holder_pid(const char *lockfile) {
    char *s = NULL;
    for (int i = 0; i < 600 && !(s = e2e_read(lockfile, NULL), s && strstr(s, "pid ")); i++) {
        free(s);
        s = NULL;
        e2e_sleep_ms(50);
    }
    CHECK(s && strstr(s, "pid "), "job A never wrote %s", lockfile);
    int pid = atoi(strstr(s, "pid ") + 4);
    free(s);
    return pid;
}

int main(int argc, char **argv) {
    e2e_init(argc, argv, "train_lock");
    const char *ck = e2e_path("ck"), *metrics = e2e_path("m.jsonl");
    char args[1024];
    snprintf(args, sizeof args, LONG_JOB " --ckpt-dir %s --metrics %s", ck, metrics);
    const char *log_a = e2e_path("a.log");
    e2e_proc_t a = e2e_start(2, NULL, NULL, log_a, args);
    int pid = holder_pid(e2e_path("ck/.lock"));
    char host[128] = "";
    gethostname(host, sizeof host - 1);
    /* A's metrics file is open once its first record is out. */
    for (int i = 0; i < 600 && e2e_lines(metrics) < 1; i++) e2e_sleep_ms(50);
    CHECK(e2e_lines(metrics) >= 1, "job A wrote no metrics record");

    /* B: the same --ckpt-dir. */
    const char *log_b = e2e_path("b.log");
    snprintf(args, sizeof args, LONG_JOB " --ckpt-dir %s --metrics %s", ck, e2e_path("b.jsonl"));
    e2e_run(2, NULL, NULL, log_b, 1, args);
    char want[400];
    snprintf(want, sizeof want, "symtrain train: PE 0: checkpoint directory %s is in use by "
             "another running job (host %s, pid %d)", ck, host, pid);
    e2e_expect_log(log_b, want);
    e2e_expect_log(log_b, "give this run another --ckpt-dir");
    CHECK(!e2e_log_has(log_b, "symtrain: PE 0: symtrain train"), "the message names symtrain twice");
    CHECK(e2e_newest(ck, NULL, 0) < 0, "job B left a checkpoint in A's directory");
    printf("train_lock: a second job on the checkpoint directory refused, naming host %s pid %d\n",
           host, pid);

    /* C: the same --metrics. */
    const char *log_c = e2e_path("c.log");
    snprintf(args, sizeof args, LONG_JOB " --ckpt-dir %s --metrics %s", e2e_path("ck_c"), metrics);
    e2e_run(2, NULL, NULL, log_c, 1, args);
    snprintf(want, sizeof want, "metrics file %s is being written by another running job (pid %d "
             "on this host)", metrics, pid);
    e2e_expect_log(log_c, want);
    CHECK(e2e_newest(e2e_path("ck_c"), NULL, 0) < 0, "refused job C saved a checkpoint");
    printf("train_lock: a second job on the metrics file refused, naming pid %d\n", pid);

    /* A stops cleanly (a checkpoint); then D resumes from its directory. */
    CHECK(kill(a.pid, SIGTERM) == 0, "kill: %s", strerror(errno));
    int rc = e2e_wait(&a);
    if (rc != 0) e2e_show(log_a);
    CHECK(rc == 0, "job A: exit status %d after SIGTERM", rc);
    CHECK(e2e_newest(ck, NULL, 0) >= 0, "job A saved no checkpoint on SIGTERM");
    const char *log_d = e2e_path("d.log");
    long long before = e2e_newest(ck, NULL, 0);
    snprintf(args, sizeof args, LONG_JOB " --ckpt-dir %s --metrics %s --resume --max-steps %lld",
             ck, metrics, before + 2);
    /* It says the checkpoint's epoch as the manifest holds it, and as the
     * progress lines count it. */
    char manifest[800];
    CHECK(e2e_newest(ck, manifest, sizeof manifest - 16) == before, "no step %lld", before);
    strcat(manifest, "/manifest.json");
    char *mf = e2e_read(manifest, NULL);
    CHECK(mf && strstr(mf, "\"epoch\": "), "%s holds no epoch", manifest);
    long long epoch = atoll(strstr(mf, "\"epoch\": ") + 9);
    free(mf);
    e2e_run(2, NULL, NULL, log_d, 0, args);
    snprintf(want, sizeof want, "epoch %lld of 100, sample", epoch + 1);
    e2e_expect_log(log_d, want);
    snprintf(want, sizeof want, "(\"epoch\": %lld in its manifest, which counts from 0)", epoch);
    e2e_expect_log(log_d, want);
    CHECK(e2e_newest(ck, NULL, 0) == before + 2, "the resumed job did not save step %lld",
          before + 2);
    printf("train_lock: once job A ended, a job resumed from its directory and metrics file\n");

    e2e_cleanup();
    printf("train_lock: PASS\n");
    return 0;
}
