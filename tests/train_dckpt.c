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
 *   (c) a GPT saved at 4 loads at 2, bit for bit;
 *   (d) a single-writer checkpoint (format 2) loads as well.
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

int main(int argc, char **argv) {
    e2e_init(argc, argv, "train_dckpt");
    char extra[1024];

    /* (a) 4 PEs, 20 steps; and 10 steps + --resume at 4 */
    snprintf(extra, sizeof extra, "--ckpt-steps 5 --metrics %s", e2e_path("ref.jsonl"));
    train(4, MLP, e2e_path("ref"), extra, e2e_path("ref.log"));
    snprintf(extra, sizeof extra, "--max-steps 10 --metrics %s", e2e_path("a10.jsonl"));
    train(4, MLP, e2e_path("a"), extra, e2e_path("a1.log"));
    copy_dir(e2e_path("a"), e2e_path("s4")); /* step 10 at 4 PEs, for (b) */
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
        const char *d = e2e_path("r%d", to[k]), *log = e2e_path("r%d.log", to[k]);
        copy_dir(e2e_path("s4"), d);
        /* no steps left to --max-steps 10: the run saves step 10 in its own layout */
        train(to[k], MLP, d, "--resume --max-steps 10", log);
        char want[64];
        snprintf(want, sizeof want, "written by 4 PEs and this run has %d", to[k]);
        e2e_expect_log(log, want);
        const char *show = e2e_path("show%d.log", to[k]);
        CHECK(e2e_sh(show, "'%s' ckpt show '%s/step-00000010'", e2e_symtrain, d) == 0, "ckpt show");
        snprintf(want, sizeof want, "dp=%d", to[k]);
        e2e_expect_log(show, want);
        nt = dckpt_compare(e2e_path("s4/step-00000010"), e2e_path("r%d/step-00000010", to[k]), NULL);
        /* and on to step 20 at that PE count (steps 1..10 were the 4-PE run's) */
        copy_dir(e2e_path("a10.jsonl"), e2e_path("r%d.jsonl", to[k]));
        snprintf(extra, sizeof extra, "--resume --metrics %s", e2e_path("r%d.jsonl", to[k]));
        train(to[k], MLP, d, extra, e2e_path("r%d-on.log", to[k]));
        double diff;
        dckpt_compare(e2e_path("ref/step-00000020"), e2e_path("r%d/step-00000020", to[k]), &diff);
        CHECK(diff <= TOL, "4 PEs then %d: step 20 differs from the 4-PE run by %.3g", to[k], diff);
        long long n, m;
        double *l = e2e_losses(e2e_path("r%d.jsonl", to[k]), &n), *lr = e2e_losses(e2e_path("ref.jsonl"), &m);
        CHECK(n == 20, "%lld steps", n);
        for (long long i = 10; i < n; i++)
            CHECK(fabs(l[i] - lr[i]) <= TOL, "step %lld at %d PEs: loss %.9g, 4 PEs %.9g", i + 1,
                  to[k], l[i], lr[i]);
        free(l);
        free(lr);
        printf("train_dckpt: 4 PEs -> %d: %d tensors loaded bit-identical; step 20 within %.2g of "
               "the 4-PE run\n", to[k], nt, diff);
    }
    /* saved at 2, loaded at 4 */
    train(2, MLP, e2e_path("t2"), "--max-steps 10", e2e_path("t2.log"));
    copy_dir(e2e_path("t2"), e2e_path("t4"));
    train(4, MLP, e2e_path("t4"), "--resume --max-steps 10", e2e_path("t4.log"));
    e2e_expect_log(e2e_path("t4.log"), "written by 2 PEs and this run has 4");
    e2e_expect_log(e2e_path("t4/step-00000010/manifest.json"), "\"desc\": \"dp=4\"");
    nt = dckpt_compare(e2e_path("t2/step-00000010"), e2e_path("t4/step-00000010"), NULL);
    printf("train_dckpt: 2 PEs -> 4: %d tensors loaded bit-identical\n", nt);

    /* (c) GPT: 4 -> 2 */
    train(4, GPT, e2e_path("g4"), "--max-steps 6", e2e_path("g4.log"));
    copy_dir(e2e_path("g4"), e2e_path("g2"));
    train(2, GPT, e2e_path("g2"), "--resume --max-steps 6", e2e_path("g2.log"));
    e2e_expect_log(e2e_path("g2.log"), "written by 4 PEs and this run has 2");
    e2e_expect_log(e2e_path("g2/step-00000006/manifest.json"), "\"desc\": \"dp=2\"");
    nt = dckpt_compare(e2e_path("g4/step-00000006"), e2e_path("g2/step-00000006"), NULL);
    printf("train_dckpt: GPT 4 PEs -> 2: %d tensors loaded bit-identical\n", nt);

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

    e2e_cleanup();
    printf("train_dckpt: ok\n");
    return 0;
}
