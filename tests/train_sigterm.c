/*
 * train_sigterm — graceful preemption: SIGTERM (2 PEs) or SIGINT (1 PE) sent to
 * symrun mid-run makes the PEs agree on a step, finish it, save a checkpoint
 * and exit 0; --resume then finishes the run with exactly the weights and
 * losses of a run that was never stopped.
 *
 * The signal is sent once the metrics file shows 20 steps done; the run is
 * long enough (300 steps) that it is still going. The checkpoint must be at
 * the last step the metrics file recorded before the stop.
 */
#include "train_e2e.h"

#define ARGS "--generated --train-samples 1500 --test-samples 300 --epochs 8 " \
             "--model mlp:784-256-128-10 --batch 40 --max-steps 300"

static void one(int n, int sig) {
    char args[1024];
    snprintf(args, sizeof args, ARGS " --quiet --ckpt-dir %s --metrics %s", e2e_path("ref%d", n),
             e2e_path("ref%d.jsonl", n));
    e2e_run(n, NULL, NULL, e2e_path("ref%d.log", n), 0, args);

    const char *metrics = e2e_path("stop%d.jsonl", n), *ck = e2e_path("stop%d", n);
    snprintf(args, sizeof args, ARGS " --log-interval 0.05 --ckpt-dir %s --metrics %s", ck, metrics);
    const char *log = e2e_path("stop%d.log", n);
    e2e_proc_t p = e2e_start(n, NULL, NULL, log, args);
    for (int waited = 0; e2e_lines(metrics) < 20; waited += 5) {
        CHECK(waited < 60000, "no 20 steps after 60 s");
        e2e_sleep_ms(5);
    }
    kill(p.pid, sig);
    int rc = e2e_wait(&p);
    if (rc != 0) e2e_show(log);
    CHECK(rc == 0, "after %s symrun exited %d, expected 0", strsignal(sig), rc);
    e2e_expect_log(log, "passing it to the PEs");
    e2e_expect_log(log, "stopped by a signal after step");
    long long stopped = e2e_newest(ck, NULL, 0);
    long long recorded;
    free(e2e_losses(metrics, &recorded));
    CHECK(stopped >= 20 && stopped < 300, "the stop checkpoint is at step %lld: the run %s", stopped,
          stopped >= 300 ? "finished before the signal arrived" : "stopped too early");
    CHECK(stopped == recorded, "checkpoint at step %lld, but the last step recorded is %lld", stopped,
          recorded);
    char want[256];
    snprintf(want, sizeof want, "checkpoint %s/step-%08lld", ck, stopped);
    e2e_expect_log(log, want);

    snprintf(args, sizeof args, ARGS " --quiet --resume --ckpt-dir %s --metrics %s", ck, metrics);
    const char *log2 = e2e_path("resume%d.log", n);
    e2e_run(n, NULL, NULL, log2, 0, args);
    snprintf(want, sizeof want, "resumed from %s/step-%08lld", ck, stopped);
    e2e_expect_log(log2, want);
    e2e_same_ckpt_file(e2e_path("ref%d", n), ck, "model.bin");
    e2e_same_ckpt_file(e2e_path("ref%d", n), ck, "optim.bin");
    long long na, nb;
    double *a = e2e_losses(e2e_path("ref%d.jsonl", n), &na), *b = e2e_losses(metrics, &nb);
    CHECK(na == 300 && nb == 300, "%lld and %lld steps recorded", na, nb);
    for (long long i = 0; i < na; i++)
        CHECK(a[i] == b[i], "step %lld: loss %.9g resumed, %.9g uninterrupted", i + 1, b[i], a[i]);
    free(a);
    free(b);
    printf("train_sigterm: %d PE%s, %s at step %lld: exit 0, checkpoint saved; resumed run "
           "bit-identical\n", n, n == 1 ? "" : "s", strsignal(sig), stopped);
}

int main(int argc, char **argv) {
    e2e_init(argc, argv, "train_sigterm");
    one(2, SIGTERM);
    one(1, SIGINT);
    e2e_cleanup();
    printf("train_sigterm: ok\n");
    return 0;
}
