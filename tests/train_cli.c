/*
 * train_cli — what a person sees from `symtrain`: usage errors (exit 2, one
 * message even with several PEs), data errors (exit 1, naming the file or the
 * package to install; --micro-batches with --balance on --device gpu, which
 * the GPU does not train, exit 1), the progress lines and summary when stdout is not a
 * terminal, the metrics file, and `symtrain plot` turning it into an SVG.
 */
#include "train_e2e.h"


/* Run symtrain directly (one PE, no symrun) and expect `code` and `needle`. */
static void direct(const char *what, int code, const char *needle, const char *args) {
    const char *log = e2e_path("direct.log");
    int rc = e2e_sh(log, "%s %s", e2e_symtrain, args);
    if (rc != code || (needle && !e2e_log_has(log, needle))) e2e_show(log);
    CHECK(rc == code, "%s: symtrain %s exited %d, expected %d", what, args, rc, code);
    if (needle) CHECK(e2e_log_has(log, needle), "%s: the output does not say \"%s\"", what, needle);
    printf("  %-30s exit %d\n", what, rc);
}

int main(int argc, char **argv) {
    e2e_init(argc, argv, "train_cli");
    printf("train_cli: usage and errors\n");
    direct("no command", 2, "say what to do", "");
    direct("unknown command", 2, "unknown command 'fly'", "fly");
    direct("--help", 0, "--ckpt-every T", "--help");
    direct("unknown option", 2, "unknown option '--bogus'", "train --bogus");
    direct("a near miss", 2, "unknown option '--epoch'; did you mean --epochs?", "train --epoch 3");
    direct("malformed number", 2, "--batch 'many': expected a whole number", "train --batch many");
    direct("value missing", 2, "--epochs needs a value", "train --epochs");
    direct("bad model", 2, "--model 'mlp:784': give at least an input and an output width",
           "train --model mlp:784");
    direct("bad model kind", 2, "write mlp:IN-HIDDEN-...-OUT", "train --model cnn:1-2");
    direct("--resume without dir", 2, "need --ckpt-dir DIR", "train --resume");
    direct("--resume=auto without dir", 2, "need --ckpt-dir DIR", "train --resume=auto");
    direct("--resume=bogus", 2, "--resume=bogus: write --resume", "train --ckpt-dir x --resume=bogus");
    direct("--resum=auto", 2, "did you mean --resume?", "train --resum=auto");
    direct("--quiet=1", 2, "--quiet takes no value", "train --quiet=1");
    direct("--help: --resume=auto", 0, "--resume=auto", "--help");
    direct("bad duration", 2, "expected a duration such as 30s", "train --ckpt-dir x --ckpt-every soon");
    char args[1024];
    snprintf(args, sizeof args, "train --data %s", e2e_path("nowhere"));
    direct("missing data directory", 1, "apt-get install dataset-fashion-mnist", args);
    CHECK(e2e_log_has(e2e_path("direct.log"), "--data DIR"), "the message does not mention --data");
    mkdir(e2e_path("bad"), 0755);
    FILE *f = fopen(e2e_path("bad/train-images-idx3-ubyte.gz"), "w");
    CHECK(f && fputs("not gzip, not IDX", f) >= 0 && fclose(f) == 0, "write");
    f = fopen(e2e_path("bad/train-labels-idx1-ubyte.gz"), "w");
    CHECK(f && fclose(f) == 0, "write");
    snprintf(args, sizeof args, "train --data %s", e2e_path("bad"));
    direct("damaged data file", 1, "bad/train-images-idx3-ubyte.gz", args);
    direct("model does not fit data", 1, "use mlp:784-...-10", "train --generated --model mlp:100-10");
    /* moving shares of micro-batches train on the CPU: said before any GPU is looked for */
    direct("--balance, micro-batches, GPU", 1, "--micro-batches with --balance trains on CPU PEs "
           "for now; drop it, or pass --device cpu",
           "train --generated --model gpt:L=1,C=16,H=2,V=128,T=16 --device gpu --micro-batches 2 "
           "--balance throughput --steps 1");
    /* the default location empty: say how to install, then train on generated data */
    snprintf(args, sizeof args,
             "SYMTRAIN_DATA_DIR=%s %s train --train-samples 300 --test-samples 100 --model mlp:784-8-10 "
             "--epochs 1 --quiet", e2e_path("nowhere"), e2e_symtrain);
    const char *fb = e2e_path("fallback.log");
    CHECK(e2e_sh(fb, "%s", args) == 0, "the fallback run failed");
    e2e_expect_log(fb, "apt-get install dataset-fashion-mnist");
    e2e_expect_log(fb, "falling back to a generated data set (300 training and 100 test images");
    e2e_expect_log(fb, "test accuracy");
    CHECK(e2e_count(fb, "\n") == 3, "with --quiet: expected 3 lines (missing files, fallback, outcome)");
    printf("  %-30s exit 0, generated data\n", "no data at the default place");

    /* several PEs: usage errors exit 2, said once */
    const char *log = e2e_path("np3.log");
    e2e_run(3, NULL, NULL, log, 2, "--bogus");
    CHECK(e2e_count(log, "unknown option '--bogus'") == 1, "3 PEs printed the usage error %d times",
          e2e_count(log, "unknown option '--bogus'"));
    e2e_run(3, NULL, NULL, log, 2, "--batch 2");
    e2e_expect_log(log, "smaller than the number of PEs (3)");
    printf("  %-30s exit 2, said once\n", "3 PEs, bad usage");
    /* the same refusal from 2 PEs: said once, before any GPU is looked for */
    e2e_run(2, NULL, NULL, log, 1, "--generated --model gpt:L=2,C=16,H=2,V=128,T=16 "
            "--device gpu --micro-batches 2 --balance throughput --steps 1");
    CHECK(e2e_count(log, "--micro-batches with --balance trains on CPU PEs") == 1,
          "--balance with micro-batches on 2 GPU PEs: not said once");
    printf("  %-30s exit 1, said once\n", "--balance, micro-batches, 2 PEs");

    /* progress lines, summary, metrics */
    printf("train_cli: a run as a person sees it\n");
    const char *metrics = e2e_path("m.jsonl");
    /* big enough that an epoch takes a while, so progress lines appear */
    const char *ck = e2e_path("ck");
    snprintf(args, sizeof args,
             "--generated --train-samples 3000 --test-samples 200 --model mlp:784-256-10 --batch 50 "
             "--threads 1 --epochs 2 --log-interval 0.01 --metrics %s --ckpt-dir %s "
             "--ckpt-every 0.01s --ckpt-keep 1000", metrics, ck);
    log = e2e_path("run.log");
    e2e_run(2, NULL, NULL, log, 0, args);
    e2e_expect_log(log, "2 PEs x 1 BLAS thread");
    e2e_expect_log(log, "global batch 50 (25 per PE)");
    e2e_expect_log(log, "generated: 3000 training / 200 test samples");
    e2e_expect_log(log, "epoch 1/2  ");   /* a plain progress line */
    e2e_expect_log(log, "samples/s  loss ");
    e2e_expect_log(log, "ETA");
    e2e_expect_log(log, "test accuracy");
    e2e_expect_log(log, "total time");
    CHECK(!e2e_log_has(log, "\r") && !e2e_log_has(log, "\033["), "terminal control codes in a file");
    long long steps;
    free(e2e_losses(metrics, &steps));
    CHECK(steps == 120, "metrics recorded %lld steps, expected 2 x 60", steps);
    CHECK(e2e_count(metrics, "\"eval\":1") == 2, "expected 2 evaluation records");
    static const char *fields[] = {"\"epoch\":", "\"lr\":", "\"samples_per_s\":", "\"compute_s\":",
                                   "\"comm_s\":", "\"bytes_allreduced\":", "\"grad_norm\":", "\"test_acc\":"};
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        CHECK(e2e_log_has(metrics, fields[i]), "the metrics file has no %s", fields[i]);
    /* checkpoints by time, and the final one */
    int nck = 0;
    DIR *d = opendir(ck);
    CHECK(d != NULL, "no checkpoint directory %s", ck);
    for (struct dirent *e; (e = readdir(d));) nck += !strncmp(e->d_name, "step-", 5);
    closedir(d);
    CHECK(nck >= 2, "--ckpt-every 0.01s wrote %d checkpoints in a run of 120 steps", nck);
    CHECK(e2e_newest(ck, NULL, 0) == 120, "the final checkpoint is at step %lld", e2e_newest(ck, NULL, 0));
    printf("  progress lines, summary, metrics records; %d checkpoints by time + the final one\n", nck - 1);

    /* plot */
    const char *svg = e2e_path("curve.svg");
    log = e2e_path("plot.log");
    CHECK(e2e_sh(log, "%s plot %s -o %s --title 'cli test'", e2e_symtrain, metrics, svg) == 0, "plot failed");
    char *pic = e2e_read(svg, NULL);
    CHECK(pic && !strncmp(pic, "<svg", 4) && strstr(pic, "</svg>"), "%s is not an SVG", svg);
    CHECK(e2e_count(svg, "<polyline") == 3, "expected 3 curves (raw loss, smoothed, accuracy)");
    CHECK(e2e_count(svg, "<circle") == 2, "expected one accuracy marker per epoch");
    CHECK(strstr(pic, "cli test") != NULL, "the title is missing");
    free(pic);
    CHECK(e2e_sh(log, "%s plot %s", e2e_symtrain, metrics) == 2, "plot without -o did not exit 2");
    CHECK(e2e_sh(log, "%s plot %s -o %s", e2e_symtrain, e2e_path("run.log"), svg) == 1,
          "plotting a non-metrics file did not fail");
    e2e_expect_log(log, "holds no step records: it is not a symtrain metrics file");
    /* the bad path is not handed back as something to run */
    CHECK(!e2e_log_has(log, "--metrics /"), "plot's advice echoes the bad path");
    CHECK(e2e_sh(log, "%s plot %s -o %s", e2e_symtrain, e2e_path("none.jsonl"), svg) == 1,
          "plotting a missing file did not fail");
    e2e_expect_log(log, "cannot open");
    printf("  plot: SVG with loss, smoothed loss and accuracy curves; bad input refused\n");
    e2e_cleanup();
    printf("train_cli: ok\n");
    return 0;
}
