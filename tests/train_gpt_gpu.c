/*
 * train_gpt_gpu — the GPT trained on the GPU (--device gpu, bf16) through
 * symrun and the symtrain CLI, checked against the CPU and against itself:
 *
 *   (a) 30 steps of gpt:L=2,C=128,H=2,V=256,T=64 on the generated corpus,
 *       global batch 8, AdamW at lr 0.001 (at 0.003 the CPU run itself
 *       spikes at step 10, gradient norm 200, and bf16 spikes differently): every step's loss is within 0.05 + 2% of the CPU
 *       run's with the same seed (bf16 activations against fp32), the
 *       validation loss too, and the loss falls by more than 1;
 *   (b) a second GPU run with the same seed: the same losses and a
 *       byte-identical final model.bin (the kernels are deterministic);
 *   (c) 2 PEs sharing the one GPU (SYMTRAIN_GPU_SHARE=1; the gradient average
 *       on the GPU collectives, in 3 buckets overlapping backward at
 *       --bucket-mb 0.25, one per block and the embeddings; (e) runs the
 *       default, one bucket) track the 1-PE GPU run within the same
 *       tolerance, and step 1's gradient norm (the same weights and batch)
 *       within 3%, as it is against the CPU: AdamW would hide a gradient
 *       averaged wrongly over the PEs from the losses, the norm does not;
 *   (d) 15 steps, a checkpoint, then --resume to 30: model.bin and optim.bin
 *       byte-identical to the uninterrupted run's;
 *   (e) load balancing on the GPU: the 2 PEs of (c) with PE 1 slowed 3x
 *       (SYMTRAIN_TEST_SLOW_PE) and --balance throughput track (c)'s losses
 *       within the same tolerance while PE 1 ends with the smaller share (the
 *       step's rows change, so the backend replays or captures another graph),
 *       and PE 1 is named a straggler;
 *   (f) sharded checkpoints from the GPU (--ckpt-format sharded): 2 PEs
 *       sharing the GPU save step 15, it verifies, and 1 PE loads it (saving
 *       it again in its own layout): both give the same sample text;
 *   (g) asynchronous snapshots (--ckpt-async on, the default: the state
 *       copied into pinned memory on a side stream while the next step's
 *       forward and backward run, written by the background thread) against
 *       --ckpt-async off, a checkpoint every 5 steps: every one of them
 *       byte-identical (model.bin, optim.bin), step 30 the same as (a)'s run
 *       without checkpoints, and a resume from the asynchronous step 15
 *       byte-identical again; both runs' stall figures are printed.
 *   (h) in-memory snapshots (--mem-ckpt-every 3) from 2 PEs sharing the GPU:
 *       PE 1 SIGKILLed after step 13, symrun restarts the job, which restores
 *       step 12 from memory and ends with the uninterrupted run's losses and
 *       byte-identical files; the same under symrun --spare (the restart's
 *       PEs started beforehand, their GPU context made, waiting);
 *   (i) sharded saves from asynchronous snapshots (each PE's copy into pinned
 *       memory; its shard made and written by the background thread once the
 *       copy is done) against --ckpt-async off: every shard's data file
 *       identical, and they verify.
 *
 * SKIP (77) where the GPU part is not built or no GPU is visible.
 */
#include "train_e2e.h"

#define ARGS "--generated --model gpt:L=2,C=128,H=2,V=256,T=64 --batch 8 --steps 30 " \
             "--lr 0.001 --warmup-steps 3 --threads 4"
#define STEPS 30

static int close_enough(double gpu, double ref) { return fabs(gpu - ref) < 0.05 + 0.02 * fabs(ref); }

/* The validation loss of the outcome line ("validation loss X"), the last one. */
static double final_val(const char *log) {
    char *s = e2e_read(log, NULL), *at = NULL;
    CHECK(s != NULL, "cannot read %s", log);
    for (char *p = s; (p = strstr(p, "validation loss ")); p++) at = p;
    CHECK(at != NULL, "%s reports no validation loss", log);
    double v = strtod(at + 16, NULL);
    free(s);
    return v;
}

static double *losses_of(const char *metrics) {
    long long n;
    double *l = e2e_losses(metrics, &n);
    CHECK(n == STEPS, "%s: %lld steps, expected %d", metrics, n, STEPS);
    return l;
}

/* Step 1's gradient norm before clipping (the same weights and batch in
 * every run, so a wrongly scaled or unaveraged gradient shows here even where
 * AdamW, being scale-free, hides it in the losses). */
static double first_norm(const char *metrics) {
    char *s = e2e_read(metrics, NULL);
    CHECK(s != NULL, "cannot read %s", metrics);
    char *at = strstr(s, "\"step\":1,");
    char *g = at ? strstr(at, "\"grad_norm\":") : NULL;
    CHECK(g != NULL, "%s: no gradient norm for step 1", metrics);
    double v = strtod(g + 12, NULL);
    free(s);
    return v;
}

static void same_norm(const char *what, double got, double ref) {
    CHECK(fabs(got - ref) <= 0.03 * ref, "%s: step 1's gradient norm %.6f, reference %.6f (3%%)",
          what, got, ref);
    printf("train_gpt_gpu: %s: step 1's gradient norm %.6f, reference %.6f\n", what, got, ref);
}

/* Two GPT runs that should track each other: every step within tolerance. */
static void track(const char *what, const double *got, const double *ref) {
    double worst = 0;
    for (int k = 0; k < STEPS; k++) {
        worst = fmax(worst, fabs(got[k] - ref[k]));
        CHECK(close_enough(got[k], ref[k]), "%s, step %d: loss %.6f, reference %.6f (tolerance "
              "0.05 + 2%%)", what, k + 1, got[k], ref[k]);
    }
    printf("train_gpt_gpu: %s: every step's loss within %.4f of the reference (last %.4f vs "
           "%.4f)\n", what, worst, got[STEPS - 1], ref[STEPS - 1]);
}

int main(int argc, char **argv) {
    e2e_init(argc, argv, "train_gpt_gpu");
    char args[2048];
    const char *log1 = e2e_path("gpu1.log");
    snprintf(args, sizeof args, ARGS " --device gpu --metrics %s --ckpt-dir %s",
             e2e_path("gpu1.jsonl"), e2e_path("ck1"));
    e2e_proc_t p = e2e_start(1, NULL, NULL, log1, args);
    int rc = e2e_wait(&p);
    if (rc != 0 && e2e_no_gpu(log1)) {
        char *s = e2e_read(log1, NULL), *line = s ? strstr(s, "--device gpu") : NULL;
        if (line && strchr(line, '\n')) *strchr(line, '\n') = '\0';
        printf("SKIP: train_gpt_gpu: %s\n", line ? line : "no GPU");
        free(s);
        e2e_cleanup();
        return 77;
    }
    if (rc != 0) e2e_show(log1);
    CHECK(rc == 0, "symtrain train %s: exit status %d", args, rc);
    e2e_expect_log(log1, "on the GPU: ");

    /* (a) against the CPU */
    snprintf(args, sizeof args, ARGS " --device cpu --metrics %s", e2e_path("cpu.jsonl"));
    e2e_run(1, NULL, NULL, e2e_path("cpu.log"), 0, args);
    double *g1 = losses_of(e2e_path("gpu1.jsonl")), *cpu = losses_of(e2e_path("cpu.jsonl"));
    track("1 PE on the GPU vs the CPU", g1, cpu);
    same_norm("1 PE on the GPU vs the CPU", first_norm(e2e_path("gpu1.jsonl")),
              first_norm(e2e_path("cpu.jsonl")));
    CHECK(g1[STEPS - 1] < g1[0] - 1.0, "the GPU loss went from %.4f to %.4f: not learning", g1[0],
          g1[STEPS - 1]);
    double vg = final_val(log1), vc = final_val(e2e_path("cpu.log"));
    CHECK(close_enough(vg, vc), "validation loss on the GPU %.6f, on the CPU %.6f", vg, vc);
    printf("train_gpt_gpu: validation loss GPU %.6f, CPU %.6f\n", vg, vc);

    /* (b) the same run again: the same bits */
    snprintf(args, sizeof args, ARGS " --device gpu --metrics %s --ckpt-dir %s",
             e2e_path("gpu2.jsonl"), e2e_path("ck2"));
    e2e_run(1, NULL, NULL, e2e_path("gpu2.log"), 0, args);
    double *g2 = losses_of(e2e_path("gpu2.jsonl"));
    for (int k = 0; k < STEPS; k++)
        CHECK(g2[k] == g1[k], "two GPU runs with the same seed, step %d: loss %.9g and %.9g",
              k + 1, g2[k], g1[k]);
    e2e_same_ckpt_file(e2e_path("ck1"), e2e_path("ck2"), "model.bin");
    printf("train_gpt_gpu: two GPU runs: identical losses and model.bin\n");

    /* (c) 2 PEs sharing the GPU */
    snprintf(args, sizeof args, ARGS " --device gpu --bucket-mb 0.25 --metrics %s",
             e2e_path("gpu_np2.jsonl"));
    e2e_run(2, NULL, "SYMTRAIN_GPU_SHARE=1", e2e_path("gpu_np2.log"), 0, args);
    double *g2pe = losses_of(e2e_path("gpu_np2.jsonl"));
    track("2 PEs sharing the GPU vs 1 PE", g2pe, g1);
    same_norm("2 PEs sharing the GPU vs 1 PE", first_norm(e2e_path("gpu_np2.jsonl")),
              first_norm(e2e_path("gpu1.jsonl")));
    snprintf(args, sizeof args, ARGS " --device gpu --seed 2 --metrics %s", e2e_path("seed2.jsonl"));
    e2e_run(1, NULL, NULL, e2e_path("seed2.log"), 0, args);
    double *s2 = losses_of(e2e_path("seed2.jsonl")), d2 = 0;
    for (int k = 0; k < STEPS; k++) d2 = fmax(d2, fabs(s2[k] - g1[k]));
    CHECK(d2 > 0.02, "another seed changes the GPU losses by only %.4f: the comparison is blind",
          d2);
    printf("train_gpt_gpu: another seed moves the GPU losses by up to %.4f\n", d2);

    /* (d) checkpoint at 15, resume to 30 */
    snprintf(args, sizeof args, ARGS " --device gpu --max-steps 15 --ckpt-dir %s",
             e2e_path("ck3"));
    e2e_run(1, NULL, NULL, e2e_path("half.log"), 0, args);
    CHECK(e2e_newest(e2e_path("ck3"), NULL, 0) == 15, "the first half left no step-15 checkpoint");
    snprintf(args, sizeof args, ARGS " --device gpu --resume --ckpt-dir %s", e2e_path("ck3"));
    e2e_run(1, NULL, NULL, e2e_path("resumed.log"), 0, args);
    e2e_expect_log(e2e_path("resumed.log"), "resumed from ");
    CHECK(e2e_newest(e2e_path("ck3"), NULL, 0) == STEPS, "the resumed run did not reach step %d",
          STEPS);
    e2e_same_ckpt_file(e2e_path("ck1"), e2e_path("ck3"), "model.bin");
    e2e_same_ckpt_file(e2e_path("ck1"), e2e_path("ck3"), "optim.bin");
    printf("train_gpt_gpu: checkpoint at step 15 + --resume: model.bin and optim.bin identical "
           "to the uninterrupted run's\n");

    /* (e) balanced, PE 1 slowed */
    setenv("SYMTRAIN_GPU_SHARE", "1", 1);
    const char *blog = e2e_path("gpu_bal.log");
    snprintf(args, sizeof args, ARGS " --device gpu --balance throughput --balance-every 5 "
             "--metrics %s", e2e_path("gpu_bal.jsonl"));
    e2e_run(2, NULL, "SYMTRAIN_TEST_SLOW_PE=1:3", blog, 0, args);
    double *gb = losses_of(e2e_path("gpu_bal.jsonl"));
    track("2 PEs on the GPU, balanced with PE 1 slowed, vs even", gb, g2pe);
    e2e_expect_log(blog, "PE 1 is a straggler");
    e2e_expect_log(blog, "balance after step");
    char *m = e2e_read(e2e_path("gpu_bal.jsonl"), NULL), *last = NULL;
    CHECK(m != NULL, "no metrics from the balanced GPU run");
    for (char *q = m; (q = strstr(q, "{\"pe\":1,\"share\":")); q++) last = q;
    CHECK(last != NULL, "the balanced GPU run's metrics have no per-PE shares");
    int share1 = atoi(last + strlen("{\"pe\":1,\"share\":"));
    CHECK(share1 >= 1 && share1 < 4, "the slowed PE 1 computes %d of the 8 samples at the end", share1);
    printf("train_gpt_gpu: balanced on the GPU: the slowed PE 1 ends with %d of 8 samples\n", share1);
    free(m);
    free(gb);

    /* (f) sharded, from the GPU: 2 PEs -> 1 */
    snprintf(args, sizeof args, ARGS " --device gpu --max-steps 15 --ckpt-format sharded "
             "--ckpt-dir %s", e2e_path("ck5"));
    e2e_run(2, NULL, NULL, e2e_path("sh2.log"), 0, args);
    CHECK(e2e_sh(e2e_path("sh_verify.log"), "'%s' ckpt verify '%s'", e2e_symtrain,
                 e2e_path("ck5")) == 0, "ckpt verify of the GPU's sharded checkpoint");
    CHECK(e2e_sh(e2e_path("cp.log"), "cp -a '%s' '%s'", e2e_path("ck5"), e2e_path("ck6")) == 0, "cp");
    snprintf(args, sizeof args, ARGS " --device gpu --max-steps 15 --ckpt-format sharded --resume "
             "--ckpt-dir %s", e2e_path("ck6"));
    e2e_run(1, NULL, NULL, e2e_path("sh1.log"), 0, args);
    e2e_expect_log(e2e_path("sh1.log"), "written by 2 PEs and this run has 1");
    e2e_expect_log(e2e_path("ck6/step-00000015/manifest.json"), "\"desc\": \"dp=1\"");
    const char *sample = "'%s' sample --ckpt '%s' --prompt 'To be' --max-new-tokens 40";
    CHECK(e2e_sh(e2e_path("sh2.txt"), sample, e2e_symtrain, e2e_path("ck5")) == 0, "sample");
    CHECK(e2e_sh(e2e_path("sh1.txt"), sample, e2e_symtrain, e2e_path("ck6")) == 0, "sample");
    e2e_same_file(e2e_path("sh2.txt"), e2e_path("sh1.txt"));
    printf("train_gpt_gpu: a sharded checkpoint of 2 PEs on the GPU loads at 1 PE: the same text\n");

    /* (g) asynchronous snapshots from the GPU against synchronous ones */
    const char *alog = e2e_path("async.log"), *slog = e2e_path("sync.log");
    snprintf(args, sizeof args, ARGS " --device gpu --ckpt-steps 5 --ckpt-keep 100 --ckpt-dir %s",
             e2e_path("ck7"));
    e2e_run(1, NULL, NULL, alog, 0, args);
    snprintf(args, sizeof args, ARGS " --device gpu --ckpt-steps 5 --ckpt-keep 100 "
             "--ckpt-async off --ckpt-dir %s", e2e_path("ck8"));
    e2e_run(1, NULL, NULL, slog, 0, args);
    for (int k = 5; k <= STEPS; k += 5) {
        e2e_same_file(e2e_path("ck7/step-%08d/model.bin", k), e2e_path("ck8/step-%08d/model.bin", k));
        e2e_same_file(e2e_path("ck7/step-%08d/optim.bin", k), e2e_path("ck8/step-%08d/optim.bin", k));
    }
    e2e_same_ckpt_file(e2e_path("ck1"), e2e_path("ck7"), "model.bin");
    e2e_same_ckpt_file(e2e_path("ck1"), e2e_path("ck7"), "optim.bin");
    CHECK(e2e_sh(e2e_path("cp7.log"), "mkdir '%s' && cp -a '%s/step-00000015' '%s/'",
                 e2e_path("ck9"), e2e_path("ck7"), e2e_path("ck9")) == 0, "cp");
    snprintf(args, sizeof args, ARGS " --device gpu --resume --ckpt-dir %s", e2e_path("ck9"));
    e2e_run(1, NULL, NULL, e2e_path("async_resumed.log"), 0, args);
    e2e_expect_log(e2e_path("async_resumed.log"), "step-00000015: step 15");
    e2e_same_ckpt_file(e2e_path("ck1"), e2e_path("ck9"), "model.bin");
    e2e_same_ckpt_file(e2e_path("ck1"), e2e_path("ck9"), "optim.bin");
    const char *logs[2] = {alog, slog};
    for (int i = 0; i < 2; i++) {
        char *t = e2e_read(logs[i], NULL), *at = t ? strstr(t, "symtrain: checkpoints: ") : NULL;
        if (!at) e2e_show(logs[i]);
        CHECK(at != NULL, "%s gives no stall figures", logs[i]);
        *strchrnul(at, '\n') = '\0';
        printf("train_gpt_gpu: %s\n", at + strlen("symtrain: "));
        free(t);
    }
    printf("train_gpt_gpu: async GPU snapshots every 5 steps == --ckpt-async off, byte for byte; "
           "step 30 == the run without checkpoints; resumed from the async step 15: identical\n");

    /* (i) sharded saves from asynchronous GPU snapshots against synchronous ones */
    for (int async = 0; async < 2; async++) {
        snprintf(args, sizeof args, ARGS " --device gpu --max-steps 15 --ckpt-format sharded "
                 "--ckpt-steps 5 --ckpt-keep 100 --ckpt-async %s --ckpt-dir %s",
                 async ? "on" : "off", e2e_path("cks%d", async));
        e2e_run(2, NULL, NULL, e2e_path("shasync%d.log", async), 0, args);
    }
    for (int k = 5; k <= 15; k += 5)
        for (int pe = 0; pe < 2; pe++) /* the indices are in the manifest then */
            e2e_same_file(e2e_path("cks0/step-%08d/shard-%05d.bin", k, pe),
                          e2e_path("cks1/step-%08d/shard-%05d.bin", k, pe));
    CHECK(e2e_sh(e2e_path("shasync_verify.log"), "'%s' ckpt verify '%s'", e2e_symtrain,
                 e2e_path("cks1")) == 0, "ckpt verify of the async sharded checkpoints");
    printf("train_gpt_gpu: sharded saves of 2 GPU PEs from asynchronous snapshots (written by the "
           "background thread after the copy) == --ckpt-async off, every shard at steps 5, 10, 15\n");

    /* (h) in-memory snapshots from the GPU: PE 1 of 2 killed after step 13 */
    const char *mlog = e2e_path("mem_ref.log");
    snprintf(args, sizeof args, ARGS " --device gpu --ckpt-steps 10 --mem-ckpt-every 3 "
             "--ckpt-dir %s --metrics %s", e2e_path("ck10"), e2e_path("mem_ref.jsonl"));
    e2e_run(2, NULL, NULL, mlog, 0, args);
    /* ... and again under symrun --spare: the restart's PEs started beforehand
     * (their GPU context made) take over */
    for (int spare = 0; spare < 2; spare++) {
        const char *name = spare ? "mem_spare" : "mem", *ck = spare ? "ck12" : "ck11";
        mlog = e2e_path("%s.log", name);
        snprintf(args, sizeof args, ARGS " --device gpu --ckpt-steps 10 --mem-ckpt-every 3 "
                 "--resume=auto --ckpt-dir %s --metrics %s", e2e_path("%s", ck),
                 e2e_path("%s.jsonl", name));
        e2e_run(2, spare ? "--max-restarts 1 --spare" : "--max-restarts 1",
                "SYMTRAIN_TEST_KILL_AT=1:13", mlog, 0, args);
        e2e_expect_log(mlog, "was killed by signal 9");
        e2e_expect_log(mlog, "in-memory snapshot of step 12 restored");
        e2e_expect_log(mlog, "the job succeeded after 1 restart");
        if (spare) e2e_expect_log(mlog, "was done before it was needed; it waited");
        e2e_same_losses(e2e_path("mem_ref.jsonl"), e2e_path("%s.jsonl", name), STEPS, 1);
        e2e_same_ckpt_file(e2e_path("ck10"), e2e_path("%s", ck), "model.bin");
        e2e_same_ckpt_file(e2e_path("ck10"), e2e_path("%s", ck), "optim.bin");
        printf("train_gpt_gpu: 2 PEs on the GPU, PE 1 killed after step 13%s: restored from the "
               "in-memory snapshot of step 12, every loss and step 30's files identical\n",
               spare ? ", under symrun --spare (the spares took over)" : "");
    }

    free(g1);
    free(g2);
    free(g2pe);
    free(s2);
    free(cpu);
    e2e_cleanup();
    printf("train_gpt_gpu: ok\n");
    return 0;
}
