/*
 * train_gpt_gpu_pp — pipeline parallelism on GPU PEs (--device gpu --parallel
 * pp=2, dp=2,pp=2, tp=2,pp=2, tp=2,pp=2,sp; pp=2 and dp=2,pp=2 with
 * --virtual-stages 2), several PEs sharing the one GPU
 * (SYMTRAIN_GPU_SHARE=1), through symrun and the symtrain CLI: the CPU
 * pipeline's schedule, inboxes and credits, each stage's forward and backward
 * on the GPU, activations and their gradients passing GPU to GPU (each GPU's
 * inboxes opened by its neighbours through CUDA IPC; the signals and credits
 * through the host).
 * On gpt:L=4,C=128,H=4,V=126,T=64, global batch 8 in 4 micro-batches, 20
 * steps of AdamW at lr 0.001, evaluated at steps 10 and 20, fp32 unless said:
 *
 *   (a) pp=2 matches the CPU's pp=2 run and the 1-PE CPU run to 1e-4 relative
 *       in every loss, both validation losses and step 1's gradient norm
 *       (later norms to 1e-3): the tied embedding's gradient summed over the
 *       first and last stage, the norm over the pipeline with wte counted once;
 *   (b) dp=2,pp=2, tp=2,pp=2 and tp=2,pp=2,sp on 4 PEs each match the 1-PE
 *       CPU run alike (each stage averaged over its dp team; split over its
 *       tp team; with sp each stage's edges pass its tp rank's block of rows,
 *       and the LayerNorms' gradients are summed over the tp team once a
 *       step);
 *   (j) interleaved virtual stages, pp=2 --virtual-stages 2 (4 chunks of one
 *       block, chunks 0 and 2 on stage 0, 1 and 3 on stage 1; stage 0 takes
 *       chunk 2's input from stage 1 and stage 1 sends chunk 1's output to
 *       stage 0, around the ring) on 2 PEs, dp=2,pp=2 --virtual-stages 2 and
 *       dp=2,pp=2 --virtual-stages 2 --zero 1 and --zero 2 (a stage's blocks
 *       from interleaved chunks, each micro-batch's averages added up) on 4,
 *       and pp=2 --virtual-stages
 *       2 through the host (SYMTRAIN_PIPE_VIA_HOST=1), and tp=2,pp=2 and
 *       tp=2,pp=2,sp --virtual-stages 2 on 4 (every chunk's LayerNorms in
 *       the one sum over the tp team) match the 1-PE CPU run
 *       as (b) does: each GPU stage holds its two chunks' blocks in one
 *       table, runs the chunk each call names, and keeps an inbox a chunk
 *       each way. (j) is its own ctest, train_gpt_gpu_pp_virtual (argv[3]
 *       "virtual").
 *   (c) pp=2 checkpointed at step 10 and resumed to 20: model.bin and optim.bin
 *       byte-identical to the uninterrupted run's;
 *   (d) pp=2 with --dropout 0.1 matches the 1-PE CPU run with it (each
 *       stage's sites keyed as the whole model's);
 *   (e) bf16 pp=2: within train_gpt_gpu's bf16 tolerance (0.05 + 2%) of the
 *       fp32 CPU run, and learning;
 *   (f) in-memory snapshots (--mem-ckpt-every 3) of dp=2,pp=2 on the GPU: PE 2
 *       SIGKILLed after step 13, the restarted job restores step 12 from
 *       memory and ends with the uninterrupted run's losses and files;
 *   (g) the host way (SYMTRAIN_PIPE_VIA_HOST=1: host fp32 messages, what a
 *       pipeline whose GPUs cannot reach each other takes), bf16 pp=2: every
 *       loss identical to (e)'s GPU-to-GPU run (the compute type's values
 *       either way);
 *   (h) ZeRO-1 inside the pipeline (dp=2,pp=2 --zero 1: each stage's moments
 *       sharded over its dp team) matches the 1-PE CPU run alike, and its
 *       step-10 checkpoint resumed to 20 gives the uninterrupted run's files;
 *   (i) tp=2,pp=2,sp with --dropout 0.1 on 12 sequences of 63 (micro-batches
 *       of 3: 189 rows, shards of 95 and 94) matches the 1-PE CPU run with
 *       them (the masks of the global rows); in bf16 within (e)'s tolerance
 *       of it, and through the host (SYMTRAIN_PIPE_VIA_HOST=1: the pipeline
 *       counts each shard's floats, the GPU converts them) every bf16 loss
 *       identical to the GPU-to-GPU run's. (i) is its own ctest,
 *       train_gpt_gpu_pp_sp (argv[3] "sp"), to keep each within its time
 *       limit.
 *
 * SKIP (77) where the GPU part is not built or no GPU is visible.
 */
#include "train_e2e.h"

#define MODEL "gpt:L=4,C=128,H=4,V=126,T=64"
#define ARGS "--generated --model " MODEL " --batch 8 --threads 2 --lr 0.001 --warmup-steps 3 " \
             "--eval-every 10 --test-samples 16"
#define STEPS 20
#define TOL 1e-4
#define NORM_DRIFT 1e-3
#define NAME "train_gpt_gpu_pp"

/* One run of `npes` PEs on `device` to `steps` (e2e_train with this test's options). */
static void train(const char *name, int npes, const char *device, int steps, const char *extra) {
    e2e_train(name, npes, ARGS, device, steps, extra);
}

/* (i) sp inside the stages: dropout, uneven shards, bf16, both ways of the messages */
static void sp_case(void) {
    const char *odd = "--parallel tp=2,pp=2,sp --micro-batches 4 --dropout 0.1 --batch 12 "
                      "--seq 63";
    char extra[256];
    train("cpu1_odd", 1, "cpu", STEPS, "--dropout 0.1 --batch 12 --seq 63");
    setenv("SYMTRAIN_GPU_SHARE", "1", 1);
    snprintf(extra, sizeof extra, "--precision fp32 %s", odd);
    train("gpu_sp_odd", 4, "gpu", STEPS, extra);
    const char *log = e2e_path("gpu_sp_odd.log");
    e2e_expect_log(log, "activations and gradients go GPU to GPU");
    e2e_expect_log(log, "sequence parallel: LayerNorm, dropout and residual");
    e2e_match(NAME, "tp=2,pp=2,sp --dropout 0.1, 189-row micro-batches (shards of 95 and 94), on "
              "the GPU vs 1 CPU PE", e2e_path("gpu_sp_odd.jsonl"), e2e_path("cpu1_odd.jsonl"),
              STEPS, 1, TOL, NORM_DRIFT, 2, 2);
    snprintf(extra, sizeof extra, "--precision bf16 %s", odd);
    train("bf16_sp_odd", 4, "gpu", STEPS, extra);
    e2e_low_precision(NAME, "bf16 tp=2,pp=2,sp --dropout 0.1 on the GPU vs the fp32 CPU run",
                      e2e_path("bf16_sp_odd.jsonl"), e2e_path("cpu1_odd.jsonl"), STEPS);
    setenv("SYMTRAIN_PIPE_VIA_HOST", "1", 1);
    train("bf16_sp_odd_host", 4, "gpu", STEPS, extra);
    unsetenv("SYMTRAIN_PIPE_VIA_HOST");
    e2e_expect_log(e2e_path("bf16_sp_odd_host.log"),
                   "activations and gradients go through the host");
    e2e_same_losses(e2e_path("bf16_sp_odd.jsonl"), e2e_path("bf16_sp_odd_host.jsonl"), STEPS, 0);
    printf(NAME ": bf16 tp=2,pp=2,sp through the host (fp32 messages): every loss identical to "
           "the GPU-to-GPU run's\n");
}

/* (j) interleaved virtual stages: both ways of the messages, with dp and ZeRO-1 and 2 */
static void virtual_case(void) {
    train("cpu1", 1, "cpu", STEPS, "");
    setenv("SYMTRAIN_GPU_SHARE", "1", 1);
    static const struct {
        const char *name, *opts, *what;
        int npes, via_host;
    } vruns[] = {
        {"gpu_pp2v2", "--parallel pp=2 --virtual-stages 2",
         "pp=2 --virtual-stages 2 on the GPU vs 1 CPU PE", 2, 0},
        {"gpu_dp2pp2v2", "--parallel dp=2,pp=2 --virtual-stages 2",
         "dp=2,pp=2 --virtual-stages 2 on the GPU vs 1 CPU PE", 4, 0},
        {"gpu_z1v2", "--parallel dp=2,pp=2 --virtual-stages 2 --zero 1",
         "dp=2,pp=2 --virtual-stages 2 --zero 1 on the GPU vs 1 CPU PE", 4, 0},
        {"gpu_z2v2", "--parallel dp=2,pp=2 --virtual-stages 2 --zero 2",
         "dp=2,pp=2 --virtual-stages 2 --zero 2 on the GPU vs 1 CPU PE", 4, 0},
        {"gpu_pp2v2_host", "--parallel pp=2 --virtual-stages 2",
         "pp=2 --virtual-stages 2 on the GPU through the host vs 1 CPU PE", 2, 1},
        {"gpu_tp2pp2v2", "--parallel tp=2,pp=2 --virtual-stages 2",
         "tp=2,pp=2 --virtual-stages 2 on the GPU vs 1 CPU PE", 4, 0},
        {"gpu_tp2pp2v2sp", "--parallel tp=2,pp=2,sp --virtual-stages 2",
         "tp=2,pp=2,sp --virtual-stages 2 on the GPU vs 1 CPU PE", 4, 0}};
    for (size_t i = 0; i < sizeof vruns / sizeof vruns[0]; i++) {
        char extra[256];
        snprintf(extra, sizeof extra, "--precision fp32 %s --micro-batches 4", vruns[i].opts);
        if (vruns[i].via_host) setenv("SYMTRAIN_PIPE_VIA_HOST", "1", 1);
        train(vruns[i].name, vruns[i].npes, "gpu", STEPS, extra);
        unsetenv("SYMTRAIN_PIPE_VIA_HOST");
        const char *log = e2e_path("%s.log", vruns[i].name);
        e2e_expect_log(log, "pipeline: 2 stages x 2 virtual stages");
        e2e_expect_log(log, vruns[i].via_host ? "activations and gradients go through the host"
                                              : "activations and gradients go GPU to GPU");
        e2e_match(NAME, vruns[i].what, e2e_path("%s.jsonl", vruns[i].name),
                  e2e_path("cpu1.jsonl"), STEPS, 1, TOL, NORM_DRIFT, 2, 2);
    }
}

int main(int argc, char **argv) {
    e2e_init(argc, argv, NAME);
    char args[2048];

    /* the skip: one GPU PE, no pipeline */
    snprintf(args, sizeof args, ARGS " --device gpu --precision fp32 --max-steps 1");
    e2e_gpu_first(NAME, "probe", args);
    if (argc > 3 && !strcmp(argv[3], "sp")) { /* (i) alone */
        sp_case();
        e2e_cleanup();
        printf(NAME ": sp: ok\n");
        return 0;
    }
    if (argc > 3 && !strcmp(argv[3], "virtual")) { /* (j) alone */
        virtual_case();
        e2e_cleanup();
        printf(NAME ": virtual: ok\n");
        return 0;
    }
    CHECK(argc <= 3, NAME ": unknown part '%s' (none: (a) to (h); sp: (i); virtual: (j))",
          argv[3]);
    train("cpu1", 1, "cpu", STEPS, "");
    train("cpu1_drop", 1, "cpu", STEPS, "--dropout 0.1");
    setenv("SYMTRAIN_GPU_SHARE", "1", 1); /* several PEs on the one GPU */

    /* (a) pp=2 against the CPU's pp=2 and the 1-PE run */
    train("cpu_pp2", 2, "cpu", STEPS, "--parallel pp=2 --micro-batches 4");
    snprintf(args, sizeof args, "--precision fp32 --parallel pp=2 --micro-batches 4 --ckpt-dir %s "
             "--ckpt-steps 10", e2e_path("ck_full"));
    train("gpu_pp2", 2, "gpu", STEPS, args);
    e2e_expect_log(e2e_path("gpu_pp2.log"), "pipeline: 2 stages");
    e2e_expect_log(e2e_path("gpu_pp2.log"), "on the GPU: ");
    e2e_expect_log(e2e_path("gpu_pp2.log"), "activations and gradients go GPU to GPU");
    e2e_match(NAME, "pp=2 on the GPU vs the CPU's pp=2", e2e_path("gpu_pp2.jsonl"),
              e2e_path("cpu_pp2.jsonl"), STEPS, 1, TOL, NORM_DRIFT, 2, 2);
    e2e_match(NAME, "pp=2 on the GPU vs 1 CPU PE", e2e_path("gpu_pp2.jsonl"),
              e2e_path("cpu1.jsonl"), STEPS, 1, TOL, NORM_DRIFT, 2, 2);

    /* (b) with dp and with tp */
    static const struct {
        const char *name, *layout, *what;
    } runs[] = {{"gpu_dp2pp2", "dp=2,pp=2", "dp=2,pp=2 on the GPU vs 1 CPU PE"},
                {"gpu_tp2pp2", "tp=2,pp=2", "tp=2,pp=2 on the GPU vs 1 CPU PE"},
                {"gpu_tp2pp2sp", "tp=2,pp=2,sp", "tp=2,pp=2,sp on the GPU vs 1 CPU PE"}};
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        char extra[256];
        snprintf(extra, sizeof extra, "--precision fp32 --parallel %s --micro-batches 4",
                 runs[i].layout);
        train(runs[i].name, 4, "gpu", STEPS, extra);
        e2e_match(NAME, runs[i].what, e2e_path("%s.jsonl", runs[i].name), e2e_path("cpu1.jsonl"),
                  STEPS, 1, TOL, NORM_DRIFT, 2, 2);
    }

    /* (c) resume at step 10: the same bytes */
    const char *half = e2e_path("ck_half");
    snprintf(args, sizeof args, "--precision fp32 --parallel pp=2 --micro-batches 4 --ckpt-dir %s",
             half);
    train("half", 2, "gpu", 10, args);
    snprintf(args, sizeof args, "--precision fp32 --parallel pp=2 --micro-batches 4 --ckpt-dir %s "
             "--resume", half);
    train("resumed", 2, "gpu", STEPS, args);
    e2e_expect_log(e2e_path("resumed.log"), "resumed from ");
    CHECK(e2e_newest(half, NULL, 0) == STEPS, "the resumed run did not reach step %d", STEPS);
    e2e_same_ckpt_file(e2e_path("ck_full"), half, "model.bin");
    e2e_same_ckpt_file(e2e_path("ck_full"), half, "optim.bin");
    printf(NAME ": pp=2 on the GPU, step-10 checkpoint + --resume: model.bin and optim.bin "
           "identical to the uninterrupted run's\n");

    /* (d) dropout through the stages */
    train("gpu_pp2_drop", 2, "gpu", STEPS,
          "--precision fp32 --parallel pp=2 --micro-batches 4 --dropout 0.1");
    e2e_match(NAME, "pp=2 with dropout on the GPU vs 1 CPU PE", e2e_path("gpu_pp2_drop.jsonl"),
              e2e_path("cpu1_drop.jsonl"), STEPS, 1, TOL, NORM_DRIFT, 2, 2);

    /* (e) bf16 */
    train("bf16_pp2", 2, "gpu", STEPS, "--precision bf16 --parallel pp=2 --micro-batches 4");
    e2e_low_precision(NAME, "bf16 pp=2 on the GPU vs the fp32 CPU run",
                      e2e_path("bf16_pp2.jsonl"), e2e_path("cpu1.jsonl"), STEPS);

    /* (g) the host way: the same bf16 losses */
    setenv("SYMTRAIN_PIPE_VIA_HOST", "1", 1);
    train("bf16_pp2_host", 2, "gpu", STEPS, "--precision bf16 --parallel pp=2 --micro-batches 4");
    unsetenv("SYMTRAIN_PIPE_VIA_HOST");
    e2e_expect_log(e2e_path("bf16_pp2_host.log"), "activations and gradients go through the host");
    e2e_same_losses(e2e_path("bf16_pp2.jsonl"), e2e_path("bf16_pp2_host.jsonl"), STEPS, 0);
    printf(NAME ": bf16 pp=2 through the host: every loss identical to the GPU-to-GPU run's\n");

    /* (h) ZeRO-1 inside the pipeline, and its resume */
    const char *zfull = e2e_path("ck_zfull"), *zhalf = e2e_path("ck_zhalf");
    snprintf(args, sizeof args, "--precision fp32 --parallel dp=2,pp=2 --micro-batches 4 --zero 1 "
             "--ckpt-dir %s --ckpt-steps 10", zfull);
    train("gpu_z1", 4, "gpu", STEPS, args);
    e2e_match(NAME, "dp=2,pp=2 --zero 1 on the GPU vs 1 CPU PE", e2e_path("gpu_z1.jsonl"),
              e2e_path("cpu1.jsonl"), STEPS, 1, TOL, NORM_DRIFT, 2, 2);
    snprintf(args, sizeof args, "--precision fp32 --parallel dp=2,pp=2 --micro-batches 4 --zero 1 "
             "--ckpt-dir %s", zhalf);
    train("z1_half", 4, "gpu", 10, args);
    snprintf(args, sizeof args, "--precision fp32 --parallel dp=2,pp=2 --micro-batches 4 --zero 1 "
             "--ckpt-dir %s --resume", zhalf);
    train("z1_resumed", 4, "gpu", STEPS, args);
    e2e_same_ckpt_file(zfull, zhalf, "model.bin");
    e2e_same_ckpt_file(zfull, zhalf, "optim.bin");
    printf(NAME ": dp=2,pp=2 --zero 1 on the GPU, step-10 checkpoint + --resume: model.bin and "
           "optim.bin identical to the uninterrupted run's\n");

    /* (f) in-memory snapshots of GPU stages: a killed PE, restored from memory */
    const char *mlog = e2e_path("mem.log");
    snprintf(args, sizeof args, ARGS " --device gpu --precision fp32 --parallel dp=2,pp=2 "
             "--micro-batches 2 --max-steps %d --ckpt-steps 10 --mem-ckpt-every 3 --ckpt-dir %s "
             "--metrics %s", STEPS, e2e_path("ck_mref"), e2e_path("mem_ref.jsonl"));
    e2e_run(4, NULL, NULL, e2e_path("mem_ref.log"), 0, args);
    snprintf(args, sizeof args, ARGS " --device gpu --precision fp32 --parallel dp=2,pp=2 "
             "--micro-batches 2 --max-steps %d --ckpt-steps 10 --mem-ckpt-every 3 --resume=auto "
             "--ckpt-dir %s --metrics %s", STEPS, e2e_path("ck_mem"), e2e_path("mem.jsonl"));
    e2e_run(4, "--max-restarts 1", "SYMTRAIN_TEST_KILL_AT=2:13", mlog, 0, args);
    e2e_expect_log(mlog, "was killed by signal 9");
    e2e_expect_log(mlog, "in-memory snapshot of step 12 restored");
    e2e_expect_log(mlog, "the job succeeded after 1 restart");
    e2e_same_losses(e2e_path("mem_ref.jsonl"), e2e_path("mem.jsonl"), STEPS, 1);
    e2e_same_ckpt_file(e2e_path("ck_mref"), e2e_path("ck_mem"), "model.bin");
    e2e_same_ckpt_file(e2e_path("ck_mref"), e2e_path("ck_mem"), "optim.bin");
    printf(NAME ": dp=2,pp=2 on the GPU, PE 2 killed after step 13: restored from the in-memory "
           "snapshot of step 12, every loss and step 20's files identical\n");
    e2e_cleanup();
    printf(NAME ": ok\n");
    return 0;
}
