/*
 * train_dckpt — sharded checkpoints (--ckpt-format sharded) through symrun and
 * the CLI, MLP and GPT, fp32:
 *   (a) saved at 4 PEs, resumed at 4: every tensor and every loss of the
 *       uninterrupted 4-PE run, bit for bit;
 *   (b) saved at 4, loaded at 2 and at 1 PE, and saved at 2, loaded at 4: the
 *       loaded global state is the saved one bit for bit (the resumed run's
 *       first save, in its own layout, holds the same tensors), and training
 *       on continues to the 4-PE run's end within fp32 rounding (the gradient
 *       average sums in another order: not bit for bit);
 *   (c) a GPT saved at 4 loads at 2, bit for bit (relayout);
 *   (d) a single-writer checkpoint (format 2) loads as well, and a sharded one
 *       by a run that saves single-writer ones (--resume finds the format).
 */
#include "train_dckpt.h"

#define MLP "--generated --train-samples 400 --test-samples 100 --epochs 2 " \
            "--model mlp:784-32-16-10 --batch 40 --optimizer adamw --lr 0.01 --threads 1 --quiet"
#define GPT "--generated --model gpt:L=2,C=64,H=4,V=128,T=32 --batch 8 --threads 1 --lr 0.01 " \
            "--warmup-steps 2 --bucket-mb 0.01 --quiet"
#define SH "--ckpt-format sharded"
#define TOL 2e-5

/* symrun -n np symtrain train ARGS SH --ckpt-dir dir <extra> */
static void train(int np, const char *args, const char *dir, const char *extra, const char *log) {
    char line[2048];
    snprintf(line, sizeof line, "%s " SH " --ckpt-dir %s %s", args, dir, extra);
    e2e_run(np, NULL, NULL, log, 0, line);
}

static void copy_dir(const char *from, const char *to) {
    CHECK(e2e_sh(e2e_path("cp.log"), "cp -a '%s' '%s'", from, to) == 0, "cp -a %s %s", from, to);
}

/* Train `steps` steps at `from` PEs into NAME<from>, copy it to NAME<to>, load
 * it there at `to` PEs (which saves that step in its own layout): the global
 * tensors are the same bit for bit. Returns how many. */
static int relayout(const char *args, int from, int to, const char *name, int steps) {
    char extra[256], want[128];
    const char *a = e2e_path("%s%d", name, from), *b = e2e_path("%s%d", name, to);
    const char *log = e2e_path("%s%d.log", name, to);
    snprintf(extra, sizeof extra, "--max-steps %d", steps);
    train(from, args, a, extra, e2e_path("%s%d.log", name, from));
    copy_dir(a, b);
    snprintf(extra, sizeof extra, "--resume --max-steps %d", steps);
    train(to, args, b, extra, log);
    snprintf(want, sizeof want, "written by %d PEs and this run has %d", from, to);
    e2e_expect_log(log, want);
    snprintf(want, sizeof want, "\"desc\": \"dp=%d\"", to);
    e2e_expect_log(e2e_path("%s%d/step-%08d/manifest.json", name, to, steps), want);
    int nt = dckpt_compare(e2e_path("%s%d/step-%08d", name, from, steps),
                           e2e_path("%s%d/step-%08d", name, to, steps), NULL);
    printf("train_dckpt: %s, %d PEs -> %d: %d tensors loaded bit-identical\n",
           strstr(args, "gpt:") ? "GPT" : "MLP", from, to, nt);
    return nt;
}

int main(int argc, char **argv) {
    e2e_init(argc, argv, "train_dckpt");
    char extra[1024];

    /* (a) 4 PEs, 20 steps; and 10 steps + --resume at 4 */
    snprintf(extra, sizeof extra, "--ckpt-steps 5 --metrics %s", e2e_path("ref.jsonl"));
    train(4, MLP, e2e_path("ref"), extra, e2e_path("ref.log"));
    snprintf(extra, sizeof extra, "--max-steps 10 --metrics %s", e2e_path("a10.jsonl"));
    train(4, MLP, e2e_path("a"), extra, e2e_path("a1.log"));
    copy_dir(e2e_path("a10.jsonl"), e2e_path("a.jsonl"));
    snprintf(extra, sizeof extra, "--resume --metrics %s", e2e_path("a.jsonl"));
    train(4, MLP, e2e_path("a"), extra, e2e_path("a2.log"));
    e2e_expect_log(e2e_path("a2.log"), "step-00000010: step 10");
    CHECK(e2e_newest(e2e_path("a"), NULL, 0) == 20, "the resumed run ended at step %lld",
          e2e_newest(e2e_path("a"), NULL, 0));
    int nt = dckpt_compare(e2e_path("ref/step-00000020"), e2e_path("a/step-00000020"), NULL);
    e2e_same_losses(e2e_path("ref.jsonl"), e2e_path("a.jsonl"), 20, 0);
    printf("train_dckpt: 4 PEs, resumed at 4 from step 10: %d tensors and 20 losses bit-identical\n",
           nt);

    /* (b) step 10 of 4 PEs loaded at 2 and at 1 */
    const int to[2] = {2, 1};
    for (int k = 0; k < 2; k++) {
        const char *name = k ? "q" : "r", *d = e2e_path("%s%d", name, to[k]);
        nt = relayout(MLP, 4, to[k], name, 10);
        /* and on to step 20 at that PE count (steps 1..10 were the 4-PE run's) */
        copy_dir(e2e_path("a10.jsonl"), e2e_path("r%d.jsonl", to[k]));
        snprintf(extra, sizeof extra, "--resume --metrics %s", e2e_path("r%d.jsonl", to[k]));
        train(to[k], MLP, d, extra, e2e_path("r%d-on.log", to[k]));
        double diff;
        dckpt_compare(e2e_path("ref/step-00000020"), e2e_path("%s%d/step-00000020", name, to[k]), &diff);
        CHECK(diff <= TOL, "4 PEs then %d: step 20 differs from the 4-PE run by %.3g", to[k], diff);
        long long n, m;
        double *l = e2e_losses(e2e_path("r%d.jsonl", to[k]), &n), *lr = e2e_losses(e2e_path("ref.jsonl"), &m);
        CHECK(n == 20, "%lld steps", n);
        for (long long i = 10; i < n; i++)
            CHECK(fabs(l[i] - lr[i]) <= TOL, "step %lld at %d PEs: loss %.9g, 4 PEs %.9g", i + 1,
                  to[k], l[i], lr[i]);
        free(l);
        free(lr);
        printf("train_dckpt: 4 PEs -> %d, on to step 20: %d tensors within %.2g of the 4-PE run\n",
               to[k], nt, diff);
    }
    /* saved at 2, loaded at 4; (c) a GPT saved at 4, loaded at 2 */
    relayout(MLP, 2, 4, "t", 10);
    relayout(GPT, 4, 2, "g", 6);
    /* symtrain sample reads sharded checkpoints: the same weights, the same text */
    const char *sample = "'%s' sample --ckpt '%s' --prompt 'To be' --max-new-tokens 40";
    CHECK(e2e_sh(e2e_path("s4.txt"), sample, e2e_symtrain, e2e_path("g4")) == 0, "sample of g4");
    CHECK(e2e_sh(e2e_path("s2.txt"), sample, e2e_symtrain, e2e_path("g2")) == 0, "sample of g2");
    e2e_same_file(e2e_path("s4.txt"), e2e_path("s2.txt"));
    CHECK(e2e_lines(e2e_path("s4.txt")) >= 1, "no sample");
    e2e_expect_log(e2e_path("s4.txt"), "To be");

    /* (d) format 2 (PE 0 writes model.bin, optim.bin) read by a sharded resume */
    snprintf(extra, sizeof extra, "%s --ckpt-dir %s --max-steps 10", MLP, e2e_path("old"));
    e2e_run(2, NULL, NULL, e2e_path("old.log"), 0, extra);
    copy_dir(e2e_path("old"), e2e_path("old4"));
    train(4, MLP, e2e_path("old4"), "--resume --max-steps 10", e2e_path("old4.log"));
    e2e_expect_log(e2e_path("old4.log"), "old4/step-00000010: step 10");
    CHECK(e2e_sh(e2e_path("oldshow.log"), "'%s' ckpt show '%s'", e2e_symtrain, e2e_path("old")) == 0,
          "ckpt show of format 2");
    e2e_expect_log(e2e_path("oldshow.log"), "format 2, step 10");
    e2e_expect_log(e2e_path("old4/step-00000010/manifest.json"), "\"desc\": \"dp=4\"");
    nt = dckpt_compare(e2e_path("old/step-00000010"), e2e_path("old4/step-00000010"), NULL);
    printf("train_dckpt: a format-2 checkpoint loads at 4 PEs: %d tensors bit-identical\n", nt);
    /* and back: the sharded one resumed without --ckpt-format, which saves format 2 */
    copy_dir(e2e_path("old4"), e2e_path("back"));
    snprintf(extra, sizeof extra, "%s --ckpt-dir %s --resume --max-steps 12", MLP, e2e_path("back"));
    e2e_run(2, NULL, NULL, e2e_path("back.log"), 0, extra);
    e2e_expect_log(e2e_path("back.log"), "back/step-00000010: step 10");
    e2e_expect_log(e2e_path("back/step-00000012/manifest.json"), "\"version\": 2,");
    printf("train_dckpt: a sharded checkpoint resumed by a single-writer run\n");

    e2e_cleanup();
    printf("train_dckpt: ok\n");
    return 0;
}
