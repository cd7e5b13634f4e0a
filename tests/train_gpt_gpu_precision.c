/*
 * train_gpt_gpu_precision — `--precision fp32` and `--precision fp16` on the
 * GPU, through symrun and the symtrain CLI, on
 * gpt:L=2,C=128,H=2,V=256,T=64, global batch 8, AdamW at lr 0.001:
 *
 *   (a) fp32 against the CPU: 20 steps, every loss within 1e-4 relative of
 *       the CPU run's and step 1's gradient norm within 1e-4 (bf16 needs 2%
 *       and 3%: fp32 activations and exact fp32 products leave only the
 *       order of sums); --precision tf32 (the products on TF32 tensor cores)
 *       within bf16's tolerance (0.05 + 2%);
 *   (b) fp16 (dynamic loss scaling from 2^16) tracks the fp32 GPU run over 30
 *       steps within train_gpt_gpu's bf16 tolerance (0.05 + 2%), and every
 *       step record carries its loss scale;
 *   (c) a forced overflow (SYMTRAIN_TEST_FP16_OVERFLOW=5: +inf into one
 *       gradient at step 5), --loss-scale-growth 3: up to step 5, step 5 and
 *       only the steps the unforced run skipped are skipped; the scale halves
 *       there and is back after 3 good steps; steps 1-5 have the unforced run's losses bit
 *       for bit (the skip comes after the loss); the run goes on to the end;
 *       the log names the skip; and the checkpoint after the skipped step 5
 *       holds the same model.bin and optim.bin (moments and AdamW's step
 *       count) as the unforced run's after step 4: the skip changed nothing.
 *
 * SKIP (77) where the GPU part is not built or no GPU is visible.
 */
#include "train_e2e.h"

#define ARGS "--generated --model gpt:L=2,C=128,H=2,V=256,T=64 --batch 8 --lr 0.001 " \
             "--warmup-steps 3 --threads 4"

static double *losses_of(const char *metrics, long long steps) {
    long long n;
    double *l = e2e_losses(metrics, &n);
    CHECK(n == steps, "%s: %lld steps, expected %lld", metrics, n, steps);
    return l;
}

/* The number after "key": in step `step`'s record (the last one of that step);
 * NAN for a null; the record must have the key. */
static double field(const char *metrics, long long step, const char *key) {
    char *s = e2e_read(metrics, NULL), *rec = NULL, want[48], k[64];
    CHECK(s != NULL, "cannot read %s", metrics);
    snprintf(want, sizeof want, "{\"step\":%lld,", step);
    snprintf(k, sizeof k, "\"%s\":", key);
    for (char *p = s; (p = strstr(p, want)); p++) rec = p;
    CHECK(rec != NULL, "%s: no record of step %lld", metrics, step);
    char *nl = strchr(rec, '\n'), *at = strstr(rec, k);
    CHECK(at && (!nl || at < nl), "%s: step %lld's record has no %s", metrics, step, key);
    at += strlen(k);
    double v = strncmp(at, "null", 4) ? strtod(at, NULL) : NAN;
    free(s);
    return v;
}

int main(int argc, char **argv) {
    e2e_init(argc, argv, "train_gpt_gpu_precision");
    char args[2048];

    /* (a) fp32 on the GPU against the CPU */
    const char *log32 = e2e_path("fp32.log");
    snprintf(args, sizeof args, ARGS " --steps 20 --device gpu --precision fp32 --metrics %s",
             e2e_path("fp32.jsonl"));
    e2e_proc_t p = e2e_start(1, NULL, NULL, log32, args);
    int rc = e2e_wait(&p);
    if (rc != 0 && e2e_no_gpu(log32)) {
        printf("SKIP: train_gpt_gpu_precision: no GPU or no GPU part\n");
        e2e_cleanup();
        return 77;
    }
    if (rc != 0) e2e_show(log32);
    CHECK(rc == 0, "symtrain train %s: exit status %d", args, rc);
    e2e_expect_log(log32, "on the GPU: ");
    snprintf(args, sizeof args, ARGS " --steps 20 --device cpu --metrics %s",
             e2e_path("cpu.jsonl"));
    e2e_run(1, NULL, NULL, e2e_path("cpu.log"), 0, args);
    double *g32 = losses_of(e2e_path("fp32.jsonl"), 20), *cpu = losses_of(e2e_path("cpu.jsonl"), 20);
    double worst = 0;
    for (int k = 0; k < 20; k++) {
        double rel = fabs(g32[k] - cpu[k]) / fabs(cpu[k]);
        worst = fmax(worst, rel);
        CHECK(rel < 1e-4, "fp32 on the GPU, step %d: loss %.9g, the CPU's %.9g (relative %.2e, "
              "tolerance 1e-4)", k + 1, g32[k], cpu[k], rel);
    }
    double n32 = field(e2e_path("fp32.jsonl"), 1, "grad_norm"),
           ncpu = field(e2e_path("cpu.jsonl"), 1, "grad_norm");
    CHECK(fabs(n32 - ncpu) <= 1e-4 * ncpu, "fp32 on the GPU: step 1's gradient norm %.9g, the "
          "CPU's %.9g", n32, ncpu);
    CHECK(g32[19] < g32[0] - 0.5, "fp32 on the GPU: the loss went from %.4f to %.4f: not learning",
          g32[0], g32[19]);
    printf("train_gpt_gpu_precision: fp32 on the GPU vs the CPU: 20 losses within %.2e relative "
           "(step 1's gradient norm %.9g vs %.9g)\n", worst, n32, ncpu);
    snprintf(args, sizeof args, ARGS " --steps 20 --device gpu --precision tf32 --metrics %s",
             e2e_path("tf32.jsonl"));
    e2e_run(1, NULL, NULL, e2e_path("tf32.log"), 0, args);
    e2e_expect_log(e2e_path("tf32.log"), "products in TF32");
    double *t32 = losses_of(e2e_path("tf32.jsonl"), 20);
    worst = 0;
    for (int k = 0; k < 20; k++) {
        worst = fmax(worst, fabs(t32[k] - cpu[k]));
        CHECK(fabs(t32[k] - cpu[k]) < 0.05 + 0.02 * fabs(cpu[k]), "tf32, step %d: loss %.6f, the "
              "CPU's %.6f (tolerance 0.05 + 2%%)", k + 1, t32[k], cpu[k]);
    }
    printf("train_gpt_gpu_precision: tf32 on the GPU vs the CPU: within %.4f\n", worst);
    free(t32);

    /* (b) fp16 tracks fp32, 30 steps */
    snprintf(args, sizeof args, ARGS " --steps 30 --device gpu --precision fp32 --metrics %s",
             e2e_path("fp32_30.jsonl"));
    e2e_run(1, NULL, NULL, e2e_path("fp32_30.log"), 0, args);
    snprintf(args, sizeof args, ARGS " --steps 30 --device gpu --precision fp16 --metrics %s",
             e2e_path("fp16.jsonl"));
    e2e_run(1, NULL, NULL, e2e_path("fp16.log"), 0, args);
    e2e_expect_log(e2e_path("fp16.log"), "fp16 (dynamic loss scaling)");
    e2e_expect_log(e2e_path("fp16.log"), "loss scale");
    double *f16 = losses_of(e2e_path("fp16.jsonl"), 30), *f32 = losses_of(e2e_path("fp32_30.jsonl"), 30);
    int natural = 0;
    worst = 0;
    for (int k = 0; k < 30; k++) {
        worst = fmax(worst, fabs(f16[k] - f32[k]));
        CHECK(fabs(f16[k] - f32[k]) < 0.05 + 0.02 * fabs(f32[k]), "fp16, step %d: loss %.6f, "
              "fp32's %.6f (tolerance 0.05 + 2%%)", k + 1, f16[k], f32[k]);
        double sc = field(e2e_path("fp16.jsonl"), k + 1, "loss_scale");
        CHECK(sc >= 1 && sc <= 16777216, "fp16, step %d: loss scale %g", k + 1, sc);
        natural += field(e2e_path("fp16.jsonl"), k + 1, "skipped") != 0;
    }
    printf("train_gpt_gpu_precision: fp16 tracks fp32 within %.4f over 30 steps (%d step%s "
           "skipped by a real overflow)\n", worst, natural, natural == 1 ? "" : "s");

    /* (c) a forced overflow at step 5 */
    const char *G = " --steps 12 --device gpu --precision fp16 --loss-scale-growth 3";
    snprintf(args, sizeof args, ARGS "%s --metrics %s", G, e2e_path("ref.jsonl"));
    e2e_run(1, NULL, NULL, e2e_path("ref.log"), 0, args);
    const char *flog = e2e_path("forced.log");
    snprintf(args, sizeof args, ARGS "%s --metrics %s", G, e2e_path("forced.jsonl"));
    e2e_run(1, NULL, "SYMTRAIN_TEST_FP16_OVERFLOW=5", flog, 0, args);
    e2e_expect_log(flog, "step 5: fp16 overflow");
    const char *ref = e2e_path("ref.jsonl"), *forced = e2e_path("forced.jsonl");
    double *lr_ = losses_of(ref, 12), *lf = losses_of(forced, 12);
    /* after step 5 the two runs differ (another scale, other weights), and so
     * may any real overflow of the growing scale: only the forced run's own
     * records are checked there */
    for (int k = 1; k <= 12; k++) {
        CHECK(isfinite(lf[k - 1]), "step %d: loss %g after the forced overflow", k, lf[k - 1]);
        if (k > 5) continue;
        int sr = field(ref, k, "skipped") != 0, sf = field(forced, k, "skipped") != 0;
        CHECK(sf == (sr || k == 5), "step %d: skipped %d with the forced overflow at step 5, %d "
              "without", k, sf, sr);
        CHECK(lf[k - 1] == lr_[k - 1], "step %d: loss %.9g with the forced overflow, %.9g "
              "without (the steps up to the skip are the same)", k, lf[k - 1], lr_[k - 1]);
    }
    double s4 = field(forced, 4, "loss_scale"), s5 = field(forced, 5, "loss_scale");
    CHECK(s5 == s4 / 2 || (s4 == 1 && s5 == 1), "the loss scale went from %g (step 4) to %g at "
          "the skipped step 5, not halved", s4, s5);
    CHECK(isnan(field(forced, 5, "grad_norm")), "the overflowed step 5 reports a finite "
          "gradient norm (null expected)");
    int clean = 1;
    for (int k = 6; k <= 8; k++) clean &= field(forced, k, "skipped") == 0;
    if (clean)
        CHECK(field(forced, 8, "loss_scale") == s4, "3 good steps after the skip (growth 3) the "
              "scale is %g, before it %g", field(forced, 8, "loss_scale"), s4);
    int nskip = 0;
    for (int k = 1; k <= 12; k++) nskip += field(forced, k, "skipped") != 0;
    char said[64];
    snprintf(said, sizeof said, "fp16: %d of 12 steps skipped", nskip);
    e2e_expect_log(flog, said);
    printf("train_gpt_gpu_precision: forced overflow at step 5: skipped, scale %g -> %g%s, the "
           "run goes on to step 12 (loss %.4f)\n", s4, s5, clean ? ", back after 3 good steps" : "",
           lf[11]);
    { /* the state after the skipped step 5 is the state after step 4 */
        snprintf(args, sizeof args, ARGS "%s --max-steps 4 --ckpt-dir %s", G, e2e_path("ck4"));
        e2e_run(1, NULL, NULL, e2e_path("ck4.log"), 0, args);
        snprintf(args, sizeof args, ARGS "%s --max-steps 5 --ckpt-dir %s", G, e2e_path("ck5"));
        e2e_run(1, NULL, "SYMTRAIN_TEST_FP16_OVERFLOW=5", e2e_path("ck5.log"), 0, args);
        CHECK(e2e_newest(e2e_path("ck5"), NULL, 0) == 5, "no step-5 checkpoint of the forced run");
        e2e_same_ckpt_file(e2e_path("ck4"), e2e_path("ck5"), "model.bin");
        e2e_same_ckpt_file(e2e_path("ck4"), e2e_path("ck5"), "optim.bin");
        printf("train_gpt_gpu_precision: after the skipped step 5, model.bin and optim.bin are "
               "the same bits as after step 4\n");
    }
    free(g32);
    free(cpu);
    free(f16);
    free(f32);
    free(lr_);
    free(lf);
    e2e_cleanup();
    printf("train_gpt_gpu_precision: ok\n");
    return 0;
}
