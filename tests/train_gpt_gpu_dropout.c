/*
 * train_gpt_gpu_dropout — a GPT's dropout on the GPU (--device gpu --dropout
 * 0.1: the embedding's, each block's two residual branches' and its
 * attention probabilities'), through symrun and the symtrain CLI, against the
 * CPU. The masks are a pure function of (seed, site, step, global row or
 * head, unit), drawn inside the kernels, so the GPU must drop exactly what the
 * CPU drops in any split. On gpt:L=2,C=128,H=4,V=126,T=64, global batch 8,
 * 20 steps of AdamW at lr 0.001, evaluated (without dropout) at steps 10 and
 * 20, fp32 unless said:
 *
 *   (a) 1 GPU PE matches the 1 CPU PE run to 1e-4 relative in every loss, in
 *       both validation losses and in step 1's gradient norm (later norms to
 *       1e-3), and differs from the GPU run without dropout (the masks act);
 *   (b) dp=2 (2 PEs sharing the GPU: each its own rows, whose masks follow
 *       their global rows), tp=2 (each PE two heads of four: the attention's
 *       masks follow the global head) and dp=2 with --micro-batches 2 (each
 *       micro-batch's first global row) each match the 1-PE CPU run alike;
 *   (c) the run checkpointed at step 10 and resumed to 20 ends with model.bin
 *       and optim.bin byte-identical to the uninterrupted run's (the masks of
 *       a step depend on nothing else);
 *   (d) bf16 at dp=2: within train_gpt_gpu's bf16 tolerance (0.05 + 2%) of
 *       the fp32 CPU run at every step, and learning.
 * The kernels alone are checked against their CPU references, mask for mask,
 * by gpu_train_ops (attention with dropout in fp32, bf16 and fp16; symcu_dropout).
 *
 * SKIP (77) where the GPU part is not built or no GPU is visible.
 */
#include "train_e2e.h"

#define MODEL "gpt:L=2,C=128,H=4,V=126,T=64"
#define ARGS "--generated --model " MODEL " --batch 8 --threads 2 --lr 0.001 --warmup-steps 3 " \
             "--eval-every 10 --test-samples 16 --dropout 0.1"
#define STEPS 20
#define TOL 1e-4
#define NORM_DRIFT 1e-3
#define NAME "train_gpt_gpu_dropout"

/* One run of `npes` PEs on `device` to `steps` (e2e_train with this test's options). */
static void train(const char *name, int npes, const char *device, int steps, const char *extra) {
    e2e_train(name, npes, ARGS, device, steps, extra);
}

int main(int argc, char **argv) {
    e2e_init(argc, argv, NAME);
    char args[2048];

    /* (a) the 1-PE GPU run, and the skip */
    snprintf(args, sizeof args, ARGS " --device gpu --precision fp32 --max-steps %d --metrics %s "
             "--ckpt-dir %s --ckpt-steps 10", STEPS, e2e_path("gpu1.jsonl"), e2e_path("ck_full"));
    e2e_gpu_first(NAME, "gpu1", args);
    const char *log1 = e2e_path("gpu1.log");
    e2e_expect_log(log1, "on the GPU: ");
    train("cpu1", 1, "cpu", STEPS, "");
    e2e_match(NAME, "1 GPU PE vs 1 CPU PE", e2e_path("gpu1.jsonl"), e2e_path("cpu1.jsonl"), STEPS,
              1, TOL, NORM_DRIFT, 2, 2);
    train("gpu1_nodrop", 1, "gpu", STEPS, "--precision fp32 --dropout 0");
    double a[STEPS], b[STEPS];
    CHECK(e2e_fields(e2e_path("gpu1.jsonl"), "\"loss\":", 0, a, STEPS) == STEPS &&
              e2e_fields(e2e_path("gpu1_nodrop.jsonl"), "\"loss\":", 0, b, STEPS) == STEPS,
          "gpu1: not %d steps", STEPS);
    CHECK(fabs(a[0] - b[0]) > 1e-3 * fabs(b[0]), "step 1's loss with dropout, %.9g, is that "
          "without, %.9g: nothing was dropped", a[0], b[0]);
    printf(NAME ": step 1's loss %.6f with dropout 0.1, %.6f without\n", a[0], b[0]);

    /* (b) the splits: each against the 1-PE CPU run */
    setenv("SYMTRAIN_GPU_SHARE", "1", 1); /* several PEs on the one GPU */
    static const struct {
        const char *name, *extra, *what;
    } splits[] = {{"gpu_dp2", "--parallel dp=2", "dp=2 on the GPU vs 1 CPU PE"},
                  {"gpu_tp2", "--parallel tp=2", "tp=2 on the GPU vs 1 CPU PE"},
                  {"gpu_dp2_micro", "--parallel dp=2 --micro-batches 2",
                   "dp=2 x 2 micro-batches on the GPU vs 1 CPU PE"}};
    for (size_t i = 0; i < sizeof splits / sizeof splits[0]; i++) {
        char extra[256];
        snprintf(extra, sizeof extra, "--precision fp32 %s", splits[i].extra);
        train(splits[i].name, 2, "gpu", STEPS, extra);
        e2e_match(NAME, splits[i].what, e2e_path("%s.jsonl", splits[i].name),
                  e2e_path("cpu1.jsonl"), STEPS, 1, TOL, NORM_DRIFT, 2, 2);
    }
    unsetenv("SYMTRAIN_GPU_SHARE");

    /* (c) resume at step 10: the same bytes */
    const char *half = e2e_path("ck_half");
    snprintf(args, sizeof args, "--precision fp32 --ckpt-dir %s", half);
    train("half", 1, "gpu", 10, args);
    snprintf(args, sizeof args, "--precision fp32 --ckpt-dir %s --resume", half);
    train("resumed", 1, "gpu", STEPS, args);
    e2e_expect_log(e2e_path("resumed.log"), "resumed from ");
    CHECK(e2e_newest(half, NULL, 0) == STEPS, "the resumed run did not reach step %d", STEPS);
    e2e_same_ckpt_file(e2e_path("ck_full"), half, "model.bin");
    e2e_same_ckpt_file(e2e_path("ck_full"), half, "optim.bin");
    printf(NAME ": step-10 checkpoint + --resume: model.bin and optim.bin identical to the "
           "uninterrupted run's\n");

    /* (d) bf16 at dp=2 */
    setenv("SYMTRAIN_GPU_SHARE", "1", 1);
    train("bf16_dp2", 2, "gpu", STEPS, "--precision bf16 --parallel dp=2");
    e2e_low_precision(NAME, "bf16 dp=2 on the GPU vs the fp32 CPU run",
                      e2e_path("bf16_dp2.jsonl"), e2e_path("cpu1.jsonl"), STEPS);
    e2e_cleanup();
    printf(NAME ": ok\n");
    return 0;
}
