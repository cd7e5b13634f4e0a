/*
 * train_errors — an error that one PE alone finds ends the whole job at once,
 * and a second SIGTERM ends a PE that is still busy with the first.
 *
 *   - --ckpt-dir naming a regular file, and --metrics in a directory that does
 *     not exist: PE 0 alone creates them; the other PEs used to wait in the
 *     first gradient all-reduce for good (and PE 0 in a collective free), and
 *     SIGTERM did not end them. Now every PE learns of it before the first
 *     step: the job exits 1 within seconds with the message said once.
 *   - A step that fails on one PE alone mid-run (SYMTRAIN_TEST_STEP_FAIL, as a
 *     GPU fault): that PE skips the collective frees and exits; symrun ends
 *     the others within seconds.
 *   - SIGTERM asks for a clean stop at the end of the step; a second one
 *     during that step ends the process at once (it used to be ignored).
 *   - Interrupted without --ckpt-dir, the run exits 130 (it said 0 having
 *     saved nothing).
 *   - --resume with another --lr or schedule length says which changed (it
 *     took them silently), and says when the checkpoint's run had finished.
 */
#include <signal.h>
#include <time.h>

#include "train_e2e.h"

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static void one_pe_fails(const char *what, const char *env, const char *args, const char *needle) {
    const char *log = e2e_path("%s.log", what);
    double t0 = now_s();
    e2e_run(2, NULL, env, log, 1, args);
    double dt = now_s() - t0;
    CHECK(dt < 20, "%s: the job took %.1f s to end", what, dt);
    CHECK(e2e_count(log, needle) == 1, "%s: '%s' is not said exactly once", what, needle);
    printf("train_errors: %s: the job ended in %.1f s, the cause said once\n", what, dt);
}

/* One PE without symrun: `symtrain train --model MODEL --generated --batch B
 * --steps N --threads 1 --quiet`, output into log. */
static pid_t start_one_pe(const char *log, const char *model, const char *batch, const char *steps) {
    pid_t pid = e2e_fork_logged(log);
    if (pid == 0) {
        execl(e2e_symtrain, e2e_symtrain, "train", "--model", model, "--generated", "--batch",
              batch, "--steps", steps, "--threads", "1", "--quiet", (char *)NULL);
        _exit(127);
    }
    return pid;
}

int main(int argc, char **argv) {
    e2e_init(argc, argv, "train_errors");
    char args[2048];
    const char *file = e2e_path("a-file");
    FILE *f = fopen(file, "w");
    CHECK(f && fclose(f) == 0, "create %s", file);
    snprintf(args, sizeof args, "--generated --train-samples 512 --test-samples 64 --ckpt-dir %s",
             file);
    one_pe_fails("ckpt-dir-is-a-file", NULL, args, "is not a directory");
    snprintf(args, sizeof args, "--generated --train-samples 512 --test-samples 64 --metrics %s",
             e2e_path("missing/m.jsonl"));
    one_pe_fails("metrics-dir-missing", NULL, args, "cannot open metrics file");
    /* A step failing on PE 1 alone (as a GPU fault does), with --ckpt-dir: PE
     * 1 used to wait in teardown's collective frees while PE 0 waited in the
     * next step's all-reduce, until symrun's timeout. */
    snprintf(args, sizeof args, "--generated --train-samples 512 --test-samples 64 --ckpt-dir %s",
             e2e_path("ck-fail"));
    one_pe_fails("step-fails-on-one-pe", "SYMTRAIN_TEST_STEP_FAIL=1:3", args,
                 "step 3 failed on this PE alone");

    /* Two SIGTERMs to one PE in the middle of a long step (a GPT of 2 x 512
     * tokens at 256 wide, one thread): the second ends it by the signal. */
    const char *log = e2e_path("twice.log");
    pid_t pid = start_one_pe(log, "gpt:L=8,C=256,H=4,V=256,T=512", "2", "50");
    e2e_sleep_ms(3000); /* past start-up, inside a step */
    kill(pid, SIGTERM);
    e2e_sleep_ms(50);
    double t0 = now_s();
    kill(pid, SIGTERM);
    int st;
    CHECK(waitpid(pid, &st, 0) == pid, "waitpid");
    double dt = now_s() - t0;
    if (!(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM)) e2e_show(log);
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM,
          "a second SIGTERM did not end the PE (exit status %d)", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    CHECK(dt < 2, "the second SIGTERM took %.1f s to end the PE", dt);
    printf("train_errors: a second SIGTERM ended a busy PE in %.2f s\n", dt);

    /* One SIGINT without --ckpt-dir: a clean stop with nothing saved is 130. */
    log = e2e_path("interrupted.log");
    pid = start_one_pe(log, "gpt:L=2,C=64,H=2,V=256,T=64", "4", "100000");
    e2e_sleep_ms(2000);
    kill(pid, SIGINT);
    CHECK(waitpid(pid, &st, 0) == pid, "waitpid");
    if (!(WIFEXITED(st) && WEXITSTATUS(st) == 130)) e2e_show(log);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 130, "interrupted with nothing saved: exit status %d, "
          "expected 130", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    e2e_expect_log(log, "nothing saved");
    printf("train_errors: interrupted with nothing saved: exit status 130\n");
    /* --resume with a changed --lr or schedule says so; a finished run says so. */
    const char *ck = e2e_path("ck");
    snprintf(args, sizeof args, "--model gpt:L=1,C=16,H=2,V=256,T=16 --generated --batch 4 "
             "--steps 6 --ckpt-dir %s --quiet", ck);
    e2e_run(1, NULL, NULL, e2e_path("first.log"), 0, args);
    snprintf(args, sizeof args, "--model gpt:L=1,C=16,H=2,V=256,T=16 --generated --batch 4 "
             "--steps 6 --ckpt-dir %s --resume", ck);
    log = e2e_path("again.log");
    e2e_run(1, NULL, NULL, log, 0, args);
    e2e_expect_log(log, "had already finished (step 6 of 6)");
    snprintf(args, sizeof args, "--model gpt:L=1,C=16,H=2,V=256,T=16 --generated --batch 4 "
             "--steps 9 --lr 0.002 --ckpt-dir %s --resume", ck);
    log = e2e_path("changed.log");
    e2e_run(1, NULL, NULL, log, 0, args);
    e2e_expect_log(log, "trained with --lr 0.001 and this run asks for 0.002");
    e2e_expect_log(log, "schedule was 6 steps long and this run's is 9");
    printf("train_errors: --resume names a changed --lr and schedule, and a finished run\n");
    printf("train_errors: ok\n");
    e2e_cleanup();
    return 0;
}
