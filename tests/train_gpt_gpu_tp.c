/*
 * train_gpt_gpu_tp — tensor parallelism on GPU PEs (--device gpu --parallel
 * tp=2, dp=2,tp=2 and tp=4), ZeRO-1, sequence parallelism and --tp-overlap on them, several PEs sharing the one GPU
 * (SYMTRAIN_GPU_SHARE=1), through symrun and the symtrain CLI, on
 * gpt:L=2,C=128,H=4,V=126,T=64 (at tp=2 two heads per PE, and the vocabulary
 * of 126 splits into 63 + 63 rows, so each PE's logits are padded to 64
 * columns), global batch 8, 20 steps of AdamW at lr 0.001, evaluated at steps
 * 10 and 20:
 *
 *   (a) --precision fp32: tp=2 on 2 PEs, dp=2,tp=2 and tp=4 on 4 PEs (one
 *       head a PE; 32, 32, 31 and 31 vocabulary rows) each match the
 *       CPU run of the same layout and the 1-PE GPU run to 1e-4 relative in
 *       every step's loss and both validation losses (the vocabulary-parallel
 *       arg-max and loss of the evaluation), and in step 1's gradient norm
 *       before clipping (the same weights and batch: the norm that counts
 *       each element of the split model once; a split tensor's squares left
 *       out, or a whole one's counted twice, moves it by percents); later
 *       norms to 1e-3, since they see the weights' fp32 drift, which the
 *       gradient amplifies (on the H200, tp=2 kept every loss within 2e-7 of
 *       its CPU twin's and every norm within 4e-5, while dp=2,tp=2's norm at
 *       step 18 was 1.9e-4 from its CPU twin's, its losses within 1e-4);
 *       and a second dp=2,tp=2 GPU run repeats the first's losses and norms
 *       exactly (the streams' collectives do not race);
 *   (b) checkpoints at tp=2 on the GPU hold whole tensors: the run's step-10
 *       checkpoint, resumed by 1 CPU PE with no --parallel, goes on with the
 *       uninterrupted GPU run's losses (1e-4); resumed by tp=2 on the GPU it
 *       ends with model.bin and optim.bin byte-identical to the uninterrupted
 *       run's; and the sample the tp=2 GPU run prints from its gathered
 *       weights is the text `symtrain sample` draws from its last checkpoint;
 *   (c) bf16 and fp16 at tp=2 (the tp sums in the compute type, summed in
 *       fp32 and rounded once; fp16 with its dynamic loss scale): smoke
 *       checks, within train_gpt_gpu's bf16 tolerance (0.05 + 2%) of the fp32
 *       CPU tp=2 run, and learning;
 *   (d) --micro-batches on the GPU, fp32: 2 on 1 PE, 2 at dp=2 and 4 at tp=2
 *       each match the CPU run with the same micro-batches and the GPU run of
 *       one batch (to TOL, and the norms as in (a)); with --balance (whose
 *       moving shares the GPU path does not split) they are refused;
 *   (e) --zero 1 on the GPU (AdamW's moments sharded over the dp team; the
 *       gradients reduce-scattered, the weights all-gathered): fp32 at dp=2
 *       and at dp=2,tp=2 each match the same layout without --zero on the
 *       GPU and the CPU's --zero 1 run (to TOL, the norms as in (a): the norm
 *       from the blocks' sums of squares, whole tensors counted once); the
 *       start line's GPU memory is smaller than without --zero by 2 P 4 (1 -
 *       1/dp) bytes, the moments' share (to the line's 0.1 MiB rounding); a
 *       step-10 checkpoint (single-writer, and sharded) resumed with --zero 1
 *       on the GPU ends with model.bin and optim.bin byte-identical to the
 *       uninterrupted run's, and so does a run restored from its in-memory
 *       snapshot of step 12 after PE 1 is SIGKILLed after step 13 (every
 *       loss, replays included, the same bits); fp16 with an inf forced into
 *       PE 0's block at step 5 (SYMTRAIN_TEST_FP16_OVERFLOW) skips step 5 on
 *       both PEs (the global norm): step 5's checkpoint is step 4's, byte
 *       for byte; and bf16 at dp=2 learns within (c)'s tolerance of the fp32
 *       CPU run.
 *   (f) sequence parallelism and --tp-overlap on the GPU, fp32 (gpt_cuda.cu:
 *       the LayerNorm / dropout / residual regions in blocks of rows per tp
 *       PE, reduce-scatters and all-gathers; the chunked all-reduces on a side
 *       stream): tp=2,sp, dp=2,tp=2,sp and tp=2 --tp-overlap 4 each match the
 *       1-PE CPU run and the plain tp GPU run of the layout (to TOL, the norms
 *       as in (a)); the tp=2,sp start line's GPU memory is at least 0.5 MiB
 *       below tp=2's (about 0.9 MiB: half the rows of ln_1, ln_2, the
 *       residuals and their statistics); with --dropout 0.1 tp=2,sp, and
 *       tp=4,sp on 3 sequences of 63 (189 rows: shards of 48 48 48 45),
 *       match the 1-PE CPU run with that dropout (the masks of the global
 *       rows); the tp=2,sp dropout run's step-10 checkpoint resumed with sp
 *       ends with model.bin and optim.bin byte-identical to the
 *       uninterrupted run's (sp inside pipeline stages: train_gpt_gpu_pp).
 *       (f) is its own ctest, train_gpt_gpu_tp_sp (argv[3] "sp"), to keep each
 *       within its time limit.
 *   (g) --zero 2 on the GPU (the gradients sharded too: each block's
 *       reduce-scattered as the backward leaves it, through two rotating
 *       block-sized arrays; gpt_cuda.cu), fp32: dp=2 matches the GPU's
 *       --zero 1 and the CPU's --zero 2 (to TOL, the norms as in (a));
 *       dp=2,tp=2,sp (the blocks' LayerNorms summed over tp with their
 *       units, the averages on the step's stream) and dp=4 with 2
 *       micro-batches (each micro-batch's averages added up in the shard)
 *       match the CPU's --zero 2 runs of the layout; a sharded step-10
 *       checkpoint resumed with --zero 2 ends with model.bin and optim.bin
 *       byte-identical to the uninterrupted run's; fp16 with an inf forced
 *       into the shard at step 5 skips step 5 on both PEs; and with 8 layers
 *       at dp=4 the start line's GPU memory is below --zero 1's by what the
 *       units' sizes say (to 0.1 MiB). Its own ctest, train_gpt_gpu_tp_zero2
 *       (argv[3] "zero2").
 *
 * SKIP (77) where the GPU part is not built or no GPU is visible.
 */
#include "train_e2e.h"

#define MODEL "gpt:L=2,C=128,H=4,V=126,T=64"
#define ARGS "--generated --model " MODEL " --batch 8 --threads 2 --lr 0.001 --warmup-steps 3 " \
             "--eval-every 10 --test-samples 16"
#define STEPS 20
#define TOL 1e-4
#define NORM_DRIFT 1e-3
#define SAMPLE " --sample 30 --prompt KING"

/* Records from..STEPS (1-based) of `got` match those of `ref` (a full run) to
 * tol: losses and the evaluations they both hold; gradient norms to tol at
 * step 1, to NORM_DRIFT after it. */
static void match(const char *what, const char *got, const char *ref, int from, double tol) {
    e2e_match("train_gpt_gpu_tp", what, got, ref, STEPS, from, tol, NORM_DRIFT, 2,
              from <= 10 ? 2 : 1);
}

/* One run of `npes` PEs: the layout (NULL: none) on `device`, metrics into
 * NAME.jsonl, the log NAME.log, `extra` options appended. */
static void train(const char *name, int npes, const char *device, const char *layout,
                  const char *extra) {
    char args[2048];
    snprintf(args, sizeof args, ARGS " --device %s --max-steps %d --metrics %s%s%s %s", device,
             STEPS, e2e_path("%s.jsonl", name), layout ? " --parallel " : "",
             layout ? layout : "", extra ? extra : "");
    e2e_run(npes, NULL, NULL, e2e_path("%s.log", name), 0, args);
}

/* The start lines' "..., N parameters;" and "...; X of GPU memory per PE". */
static void memory_of(const char *log, double *params, double *mem) {
    char *s = e2e_read(log, NULL);
    CHECK(s != NULL, "cannot read %s", log);
    char *at = strstr(s, " parameters; ");
    CHECK(at != NULL, "%s: no \"N parameters\" in the start lines", log);
    char *p = at;
    while (p > s && p[-1] != ' ') p--;
    *params = strtod(p, NULL);
    at = strstr(s, " of GPU memory per PE");
    CHECK(at != NULL, "%s: no \"of GPU memory per PE\" in the start lines", log);
    for (p = at; p > s && p[-1] != ';'; p--)
        ;
    *mem = e2e_size_at(p);
    free(s);
}

/* A dp=2 --zero Z GPU run checkpointed at step 10 in `format`, resumed to
 * STEPS: model.bin and optim.bin identical to the uninterrupted run's (full). */
static void resumed(int zero, const char *format, const char *full) {
    char args[2048];
    const char *dir = e2e_path("ck_z%d_%s", zero, format);
    snprintf(args, sizeof args, ARGS " --device gpu --precision fp32 --parallel dp=2 --zero %d "
             "--max-steps 10 --ckpt-dir %s --ckpt-format %s", zero, dir, format);
    e2e_run(2, NULL, NULL, e2e_path("z%d_half_%s.log", zero, format), 0, args);
    CHECK(e2e_newest(dir, NULL, 0) == 10, "the --zero %d GPU run left no step-10 %s checkpoint",
          zero, format);
    /* the resume writes the single-writer format (it reads either) */
    snprintf(args, sizeof args, ARGS " --device gpu --precision fp32 --parallel dp=2 --zero %d "
             "--max-steps %d --resume --ckpt-dir %s", zero, STEPS, dir);
    const char *rlog = e2e_path("z%d_resumed_%s.log", zero, format);
    e2e_run(2, NULL, NULL, rlog, 0, args);
    e2e_expect_log(rlog, "resumed from ");
    CHECK(e2e_newest(dir, NULL, 0) == STEPS, "the resumed --zero %d GPU run did not reach step %d",
          zero, STEPS);
    e2e_same_ckpt_file(full, dir, "model.bin");
    e2e_same_ckpt_file(full, dir, "optim.bin");
    printf("train_gpt_gpu_tp: dp=2 --zero %d on the GPU, %s step-10 checkpoint + --resume: "
           "model.bin and optim.bin identical to the uninterrupted run's\n", zero, format);
}

/* fp16 at dp=2 --zero Z: an inf forced into the averaged gradients (PE 0's
 * block) at step 5 skips the step on both PEs: step 5's checkpoint is step 4's. */
static void fp16_skip(int zero) {
    char args[2048];
    const char *ck4 = e2e_path("ck_z%d_fp16_4", zero), *ck5 = e2e_path("ck_z%d_fp16_5", zero);
    snprintf(args, sizeof args, ARGS " --device gpu --precision fp16 --parallel dp=2 --zero %d "
             "--max-steps 4 --ckpt-dir %s", zero, ck4);
    e2e_run(2, NULL, NULL, e2e_path("z%d_fp16_4.log", zero), 0, args);
    snprintf(args, sizeof args, ARGS " --device gpu --precision fp16 --parallel dp=2 --zero %d "
             "--max-steps 5 --ckpt-dir %s", zero, ck5);
    const char *flog = e2e_path("z%d_fp16_5.log", zero);
    e2e_run(2, NULL, "SYMTRAIN_TEST_FP16_OVERFLOW=5", flog, 0, args);
    e2e_expect_log(flog, "step 5: fp16 overflow");
    CHECK(e2e_newest(ck5, NULL, 0) == 5, "no step-5 checkpoint of the forced fp16 run");
    e2e_same_ckpt_file(ck4, ck5, "model.bin");
    e2e_same_ckpt_file(ck4, ck5, "optim.bin");
    printf("train_gpt_gpu_tp: fp16 dp=2 --zero %d, an inf in PE 0's block at step 5: skipped on "
           "both PEs (step 5's model.bin and optim.bin are step 4's)\n", zero);
}

/* (e) --zero 1 on the GPU */
static void zero_case(void) {
    char args[2048], what[160];
    const char *full = e2e_path("ck_z1_full");
    /* dp=2 and dp=2,tp=2, each against the GPU without --zero and the CPU's --zero 1 */
    train("cpu_dp2_z1", 2, "cpu", "dp=2", "--zero 1");
    train("gpu_dp2", 2, "gpu", "dp=2", "--precision fp32");
    snprintf(args, sizeof args, "--precision fp32 --zero 1 --ckpt-dir %s", full);
    train("gpu_dp2_z1", 2, "gpu", "dp=2", args);
    train("cpu_dp2xtp2_z1", 4, "cpu", "dp=2,tp=2", "--zero 1");
    train("gpu_dp2xtp2_z1", 4, "gpu", "dp=2,tp=2", "--precision fp32 --zero 1");
    static const char *const layouts[2][2] = {{"dp2", "dp=2"}, {"dp2xtp2", "dp=2,tp=2"}};
    for (int i = 0; i < 2; i++) {
        const char *name = layouts[i][0], *lay = layouts[i][1];
        const char *glog = e2e_path("gpu_%s_z1.log", name);
        e2e_expect_log(glog, "on the GPU: ");
        e2e_expect_log(glog, "ZeRO-1 on the GPU: AdamW's moments sharded over the 2 PEs of each "
                             "dp team");
        const char *got = e2e_path("gpu_%s_z1.jsonl", name);
        snprintf(what, sizeof what, "%s --zero 1 on the GPU vs --zero 0 on the GPU", lay);
        match(what, got, e2e_path("gpu_%s.jsonl", name), 1, TOL);
        snprintf(what, sizeof what, "%s --zero 1 on the GPU vs --zero 1 on the CPU", lay);
        match(what, got, e2e_path("cpu_%s_z1.jsonl", name), 1, TOL);
    }

    /* the memory: AdamW's two moments, 1 - 1/dp of them, are gone */
    double P0, P1, mem0, mem1;
    memory_of(e2e_path("gpu_dp2.log"), &P0, &mem0);
    memory_of(e2e_path("gpu_dp2_z1.log"), &P1, &mem1);
    CHECK(P0 == P1 && P0 > 0, "the two dp=2 runs' parameters: %.0f and %.0f", P0, P1);
    double want = 2 * P0 * 4 * (1 - 1.0 / 2), slack = 0.1 * 1048576 + 0.01 * want;
    CHECK(fabs((mem0 - mem1) - want) <= slack, "dp=2 on the GPU: %.0f bytes of GPU memory "
          "without --zero, %.0f with --zero 1: %.0f fewer, expected %.0f (2 P 4 (1 - 1/dp), P = "
          "%.0f) within %.0f", mem0, mem1, mem0 - mem1, want, P0, slack);
    printf("train_gpt_gpu_tp: dp=2 --zero 1 on the GPU holds %.2f MiB less GPU memory per PE "
           "(%.2f MiB: the moments' half)\n", (mem0 - mem1) / 1048576, want / 1048576);

    /* a step-10 checkpoint, single-writer and sharded, resumed with --zero 1 on the GPU */
    resumed(1, "single", full);
    resumed(1, "sharded", full);

    /* in-memory snapshots: PE 1 killed after step 13, the job restarted */
    const char *mlog = e2e_path("z1_mem.log"), *mdir = e2e_path("ck_z1_mem");
    snprintf(args, sizeof args, ARGS " --device gpu --precision fp32 --parallel dp=2 --zero 1 "
             "--max-steps %d --mem-ckpt-every 3 --resume=auto --ckpt-dir %s --metrics %s", STEPS,
             mdir, e2e_path("z1_mem.jsonl"));
    e2e_run(2, "--max-restarts 1", "SYMTRAIN_TEST_KILL_AT=1:13", mlog, 0, args);
    e2e_expect_log(mlog, "was killed by signal 9");
    e2e_expect_log(mlog, "in-memory snapshot of step 12 restored");
    e2e_expect_log(mlog, "the job succeeded after 1 restart");
    e2e_same_losses(e2e_path("gpu_dp2_z1.jsonl"), e2e_path("z1_mem.jsonl"), STEPS, 1);
    e2e_same_ckpt_file(full, mdir, "model.bin");
    e2e_same_ckpt_file(full, mdir, "optim.bin");
    printf("train_gpt_gpu_tp: dp=2 --zero 1 on the GPU, PE 1 killed after step 13: restored "
           "from the in-memory snapshot of step 12, every loss and step 20's files identical\n");

    fp16_skip(1);

    /* bf16 at dp=2: a smoke check against the fp32 CPU run */
    train("bf16_dp2_z1", 2, "gpu", "dp=2", "--precision bf16 --zero 1");
    double lc[STEPS], lb[STEPS], worst = 0;
    CHECK(e2e_fields(e2e_path("cpu_dp2_z1.jsonl"), "\"loss\":", 0, lc, STEPS) == STEPS &&
          e2e_fields(e2e_path("bf16_dp2_z1.jsonl"), "\"loss\":", 0, lb, STEPS) == STEPS,
          "bf16 dp=2 --zero 1: not %d steps", STEPS);
    for (int k = 0; k < STEPS; k++) {
        CHECK(isfinite(lb[k]) && fabs(lb[k] - lc[k]) < 0.05 + 0.02 * fabs(lc[k]), "bf16 dp=2 "
              "--zero 1 on the GPU, step %d: loss %.6f, the fp32 CPU's %.6f (tolerance 0.05 + 2%%)",
              k + 1, lb[k], lc[k]);
        worst = fmax(worst, fabs(lb[k] - lc[k]));
    }
    CHECK(lb[STEPS - 1] < lb[0] - 0.5, "bf16 dp=2 --zero 1: the loss went from %.4f to %.4f",
          lb[0], lb[STEPS - 1]);
    printf("train_gpt_gpu_tp: bf16 dp=2 --zero 1 on the GPU within %.4f of the fp32 CPU run\n",
           worst);
}

/* (g) --zero 2 on the GPU */
static size_t z2_block(size_t x, size_t n) { return ((x + n - 1) / n + 63) / 64 * 64; }

static void zero2_case(void) {
    char args[2048], what[160];
    const char *full = e2e_path("ck_z2_full");
    train("cpu_dp2_z2", 2, "cpu", "dp=2", "--zero 2");
    train("gpu_dp2_z1", 2, "gpu", "dp=2", "--precision fp32 --zero 1");
    snprintf(args, sizeof args, "--precision fp32 --zero 2 --ckpt-dir %s", full);
    train("gpu_dp2_z2", 2, "gpu", "dp=2", args);
    e2e_expect_log(e2e_path("gpu_dp2_z2.log"), "ZeRO-2 on the GPU: AdamW's moments and the "
                                               "averaged gradients sharded over the 2 PEs");
    match("dp=2 --zero 2 on the GPU vs --zero 1 on the GPU", e2e_path("gpu_dp2_z2.jsonl"),
          e2e_path("gpu_dp2_z1.jsonl"), 1, TOL);
    match("dp=2 --zero 2 on the GPU vs --zero 2 on the CPU", e2e_path("gpu_dp2_z2.jsonl"),
          e2e_path("cpu_dp2_z2.jsonl"), 1, TOL);
    static const struct {
        int npes;
        const char *layout, *name, *extra;
    } more[] = {{4, "dp=2,tp=2,sp", "dp2xtp2sp", ""}, {4, "dp=4", "dp4_mb2", " --micro-batches 2"}};
    for (int i = 0; i < 2; i++) {
        char cpu[64], gpu[64], extra[128];
        snprintf(cpu, sizeof cpu, "cpu_%s_z2", more[i].name);
        snprintf(gpu, sizeof gpu, "gpu_%s_z2", more[i].name);
        snprintf(extra, sizeof extra, "--zero 2%s", more[i].extra);
        train(cpu, more[i].npes, "cpu", more[i].layout, extra);
        snprintf(extra, sizeof extra, "--precision fp32 --zero 2%s", more[i].extra);
        train(gpu, more[i].npes, "gpu", more[i].layout, extra);
        snprintf(what, sizeof what, "%s%s --zero 2 on the GPU vs the CPU", more[i].layout,
                 more[i].extra);
        match(what, e2e_path("%s.jsonl", gpu), e2e_path("%s.jsonl", cpu), 1, TOL);
    }
    printf("train_gpt_gpu_tp: --zero 2 on the GPU (dp=2, dp=2,tp=2,sp, dp=4 with 2 micro-batches) "
           "matches --zero 1 on the GPU and --zero 2 on the CPU\n");

    resumed(2, "sharded", full);

    fp16_skip(2);

    /* the memory, 8 layers at dp=4: --zero 1's g (Pp = 4 zb) and moments (zb each) against
     * --zero 2's shard S, moments S each, two block slots and the edges' arrays */
    double mem[2], P = 0;
    for (int z = 1; z <= 2; z++) {
        char log[64];
        snprintf(log, sizeof log, "mem_z%d.log", z);
        snprintf(args, sizeof args, "--generated --model gpt:L=8,C=128,H=4,V=126,T=64 --batch 8 "
                 "--threads 2 --device gpu --precision fp32 --parallel dp=4 --zero %d "
                 "--max-steps 2", z);
        e2e_run(4, NULL, NULL, e2e_path("%s", log), 0, args);
        memory_of(e2e_path("%s", log), &P, &mem[z - 1]);
    }
    size_t n = 4, C = 128, L = 8, Pz = (size_t)P, blk = 12 * C * C + 13 * C;
    size_t e0 = Pz - L * blk - 2 * C, e1 = 2 * C; /* wte and wpe; ln_f */
    size_t zb = z2_block(Pz, n), cb = z2_block(blk, n), c0 = z2_block(e0, n), c1 = z2_block(e1, n);
    size_t S = L * cb + c0 + c1;
    double z1 = 4.0 * (n * zb + 2 * zb + n * zb), z2 = 4.0 * (Pz + 3 * S + 2 * n * cb + n * (c0 + c1));
    double want = z1 - z2, got = mem[0] - mem[1];
    CHECK(want > 0 && fabs(got - want) <= 0.1 * 1048576, "8 layers at dp=4 on the GPU: --zero 2 "
          "holds %.0f bytes less than --zero 1, the units' sizes say %.0f", got, want);
    printf("train_gpt_gpu_tp: 8 layers at dp=4, --zero 2 holds %.2f MiB less GPU memory per PE "
           "than --zero 1 (%.2f MiB expected)\n", got / 1048576, want / 1048576);
}

/* (f) sequence parallelism and --tp-overlap on the GPU, fp32 */
static void sp_case(void) {
    char args[2048], what[160];
    train("cpu1", 1, "cpu", NULL, NULL);
    static const struct {
        int npes;
        const char *layout, *name, *extra, *plain;
    } runs[] = {{2, "tp=2,sp", "tp2sp", "", "gpu_tp2"},
                {4, "dp=2,tp=2,sp", "dp2xtp2sp", "", "gpu_dp2xtp2"},
                {2, "tp=2", "tp2overlap", " --tp-overlap 4", "gpu_tp2"}};
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        char gpu[64], extra[256];
        snprintf(gpu, sizeof gpu, "gpu_%s", runs[i].name);
        snprintf(extra, sizeof extra, "--precision fp32%s", runs[i].extra);
        train(gpu, runs[i].npes, "gpu", runs[i].layout, extra);
        const char *glog = e2e_path("%s.log", gpu);
        e2e_expect_log(glog, "on the GPU: ");
        if (strstr(runs[i].layout, "sp"))
            e2e_expect_log(glog, "sequence parallel: LayerNorm, dropout and residual");
        snprintf(what, sizeof what, "%s%s on the GPU vs 1 CPU PE", runs[i].layout, runs[i].extra);
        match(what, e2e_path("%s.jsonl", gpu), e2e_path("cpu1.jsonl"), 1, TOL);
        snprintf(what, sizeof what, "%s%s on the GPU vs %s", runs[i].layout, runs[i].extra,
                 runs[i].plain);
        match(what, e2e_path("%s.jsonl", gpu), e2e_path("%s.jsonl", runs[i].plain), 1, TOL);
    }

    /* the memory: ln_1, ln_2, the two residuals, their statistics, the
     * embeddings' output and the residual gradient hold half the rows at tp=2
     * (one gathered (N,C) buffer and a shard more): at N = 512 rows of C = 128
     * fp32, 2 blocks, about 0.9 MiB less */
    double Pt, Ps, mt, ms;
    memory_of(e2e_path("gpu_tp2.log"), &Pt, &mt);
    memory_of(e2e_path("gpu_tp2sp.log"), &Ps, &ms);
    CHECK(Pt == Ps && Pt > 0, "tp=2 and tp=2,sp: %.0f and %.0f parameters", Pt, Ps);
    CHECK(mt - ms >= 0.5 * 1048576, "tp=2 on the GPU holds %.0f bytes of GPU memory per PE, "
          "tp=2,sp %.0f: %.0f fewer, expected about 0.9 MiB fewer (the LayerNorm and residual "
          "buffers' half)", mt, ms, mt - ms);
    printf("train_gpt_gpu_tp: tp=2,sp on the GPU holds %.2f MiB less GPU memory per PE than "
           "tp=2\n", (mt - ms) / 1048576);

    /* dropout 0.1 with sp: the masks of each PE's rows are the 1-PE run's; and
     * uneven shards: 3 sequences of 63 (189 rows) over tp=4, 48 48 48 45 rows */
    train("cpu1_drop", 1, "cpu", NULL, "--dropout 0.1");
    const char *full = e2e_path("ck_sp_full");
    snprintf(args, sizeof args, "--precision fp32 --dropout 0.1 --ckpt-dir %s", full);
    train("gpu_tp2sp_drop", 2, "gpu", "tp=2,sp", args);
    match("tp=2,sp --dropout 0.1 on the GPU vs 1 CPU PE", e2e_path("gpu_tp2sp_drop.jsonl"),
          e2e_path("cpu1_drop.jsonl"), 1, TOL);
    train("cpu1_odd", 1, "cpu", NULL, "--dropout 0.1 --batch 3 --seq 63");
    train("gpu_tp4sp_odd", 4, "gpu", "tp=4,sp", "--precision fp32 --dropout 0.1 --batch 3 "
          "--seq 63");
    match("tp=4,sp --dropout 0.1, 189 rows (uneven shards), on the GPU vs 1 CPU PE",
          e2e_path("gpu_tp4sp_odd.jsonl"), e2e_path("cpu1_odd.jsonl"), 1, TOL);

    /* a step-10 checkpoint of the sp dropout run, resumed with sp on the GPU */
    const char *half = e2e_path("ck_sp_half");
    snprintf(args, sizeof args, ARGS " --device gpu --precision fp32 --dropout 0.1 --parallel "
             "tp=2,sp --max-steps 10 --ckpt-dir %s", half);
    e2e_run(2, NULL, NULL, e2e_path("sp_half.log"), 0, args);
    CHECK(e2e_newest(half, NULL, 0) == 10, "the tp=2,sp GPU run left no step-10 checkpoint");
    snprintf(args, sizeof args, ARGS " --device gpu --precision fp32 --dropout 0.1 --parallel "
             "tp=2,sp --max-steps %d --resume --ckpt-dir %s", STEPS, half);
    e2e_run(2, NULL, NULL, e2e_path("sp_resumed.log"), 0, args);
    e2e_expect_log(e2e_path("sp_resumed.log"), "resumed from ");
    CHECK(e2e_newest(half, NULL, 0) == STEPS, "the resumed tp=2,sp GPU run did not reach step %d",
          STEPS);
    e2e_same_ckpt_file(full, half, "model.bin");
    e2e_same_ckpt_file(full, half, "optim.bin");
    printf("train_gpt_gpu_tp: tp=2,sp --dropout 0.1 on the GPU, step-10 checkpoint + --resume: "
           "model.bin and optim.bin identical to the uninterrupted run's\n");
}

int main(int argc, char **argv) {
    e2e_init(argc, argv, "train_gpt_gpu_tp");
    char args[2048];

    /* the 1-PE GPU run: the reference, and the skip */
    const char *log1 = e2e_path("gpu1.log");
    snprintf(args, sizeof args, ARGS " --device gpu --precision fp32 --max-steps %d --metrics %s",
             STEPS, e2e_path("gpu1.jsonl"));
    e2e_proc_t p = e2e_start(1, NULL, NULL, log1, args);
    int rc = e2e_wait(&p);
    if (rc != 0 && e2e_no_gpu(log1)) {
        printf("SKIP: train_gpt_gpu_tp: no GPU or no GPU part\n");
        e2e_cleanup();
        return 77;
    }
    if (rc != 0) e2e_show(log1);
    CHECK(rc == 0, "symtrain train %s: exit status %d", args, rc);
    double l1[STEPS];
    CHECK(e2e_fields(e2e_path("gpu1.jsonl"), "\"loss\":", 0, l1, STEPS) == STEPS, "gpu1: steps");
    CHECK(l1[STEPS - 1] < l1[0] - 0.5, "1 GPU PE: the loss went from %.4f to %.4f: not learning",
          l1[0], l1[STEPS - 1]);
    setenv("SYMTRAIN_GPU_SHARE", "1", 1); /* several PEs on the one GPU */

    if (argc > 3 && !strcmp(argv[3], "sp")) { /* (f) alone: its plain tp twins first */
        train("gpu_tp2", 2, "gpu", "tp=2", "--precision fp32");
        train("gpu_dp2xtp2", 4, "gpu", "dp=2,tp=2", "--precision fp32");
        sp_case();
        e2e_cleanup();
        printf("train_gpt_gpu_tp sp: ok\n");
        return 0;
    }
    if (argc > 3 && !strcmp(argv[3], "zero2")) { /* (g) alone */
        zero2_case();
        e2e_cleanup();
        printf("train_gpt_gpu_tp zero2: ok\n");
        return 0;
    }
    CHECK(argc <= 3, "train_gpt_gpu_tp: unknown part '%s' (none: (a) to (e); sp: (f); zero2: "
          "(g))", argv[3]);

    /* (a) fp32: tp=2, dp=2 x tp=2 and tp=4, each against its CPU twin and the 1-PE GPU run */
    static const struct {
        int npes;
        const char *layout, *name, *says;
    } runs[] = {{2, "tp=2", "tp2", "layout dp=1 tp=2 pp=1: 1 data-parallel group of 2 PEs"},
                {4, "dp=2,tp=2", "dp2xtp2", "layout dp=2 tp=2 pp=1: 2 data-parallel groups"},
                {4, "tp=4", "tp4", "layout dp=1 tp=4 pp=1: 1 data-parallel group of 4 PEs"}};
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        char cpu[64], gpu[64], extra[600] = "--precision fp32";
        snprintf(cpu, sizeof cpu, "cpu_%s", runs[i].name);
        snprintf(gpu, sizeof gpu, "gpu_%s", runs[i].name);
        if (i == 0) /* the tp=2 run also saves (b) and samples */
            snprintf(extra, sizeof extra, "--precision fp32 --ckpt-dir %s" SAMPLE,
                     e2e_path("ck_full"));
        train(cpu, runs[i].npes, "cpu", runs[i].layout, NULL);
        train(gpu, runs[i].npes, "gpu", runs[i].layout, extra);
        const char *glog = e2e_path("%s.log", gpu);
        e2e_expect_log(glog, runs[i].says);
        e2e_expect_log(glog, "on the GPU: ");
        char what[128];
        snprintf(what, sizeof what, "%s on the GPU vs the CPU", runs[i].name);
        match(what, e2e_path("%s.jsonl", gpu), e2e_path("%s.jsonl", cpu), 1, TOL);
        snprintf(what, sizeof what, "%s on the GPU vs 1 GPU PE", runs[i].name);
        match(what, e2e_path("%s.jsonl", gpu), e2e_path("gpu1.jsonl"), 1, TOL);
    }

    { /* dp=2,tp=2 again: the same bits (no race between the streams' collectives) */
        train("gpu_dp2xtp2_again", 4, "gpu", "dp=2,tp=2", "--precision fp32");
        double a[STEPS], b[STEPS], na[STEPS], nb[STEPS];
        CHECK(e2e_fields(e2e_path("gpu_dp2xtp2.jsonl"), "\"loss\":", 0, a, STEPS) == STEPS &&
              e2e_fields(e2e_path("gpu_dp2xtp2_again.jsonl"), "\"loss\":", 0, b, STEPS) == STEPS &&
              e2e_fields(e2e_path("gpu_dp2xtp2.jsonl"), "\"grad_norm\":", 0, na, STEPS) == STEPS &&
              e2e_fields(e2e_path("gpu_dp2xtp2_again.jsonl"), "\"grad_norm\":", 0, nb, STEPS) ==
                  STEPS, "dp2xtp2 on the GPU: not %d steps", STEPS);
        for (int k = 0; k < STEPS; k++)
            CHECK(a[k] == b[k] && na[k] == nb[k], "two dp=2,tp=2 GPU runs, step %d: loss %.9g and "
                  "%.9g, gradient norm %.9g and %.9g", k + 1, a[k], b[k], na[k], nb[k]);
        printf("train_gpt_gpu_tp: two dp2xtp2 runs on the GPU: the same losses and norms\n");
    }

    /* (b) the tp=2 GPU checkpoint holds whole tensors */
    const char *half = e2e_path("ck_half");
    snprintf(args, sizeof args, ARGS " --device gpu --precision fp32 --parallel tp=2 --max-steps "
             "10 --ckpt-dir %s", half);
    e2e_run(2, NULL, NULL, e2e_path("half.log"), 0, args);
    CHECK(e2e_newest(half, NULL, 0) == 10, "the tp=2 GPU run left no step-10 checkpoint");
    CHECK(e2e_sh(e2e_path("cp.log"), "cp -a '%s' '%s'", half, e2e_path("ck_cpu")) == 0, "cp");
    snprintf(args, sizeof args, ARGS " --device cpu --max-steps %d --resume --ckpt-dir %s "
             "--metrics %s", STEPS, e2e_path("ck_cpu"), e2e_path("cpu_resumed.jsonl"));
    e2e_run(1, NULL, NULL, e2e_path("cpu_resumed.log"), 0, args);
    e2e_expect_log(e2e_path("cpu_resumed.log"), "resumed from ");
    match("the tp=2 GPU checkpoint resumed by 1 CPU PE", e2e_path("cpu_resumed.jsonl"),
          e2e_path("gpu_tp2.jsonl"), 11, TOL);
    snprintf(args, sizeof args, ARGS " --device gpu --precision fp32 --parallel tp=2 --max-steps "
             "%d --resume --ckpt-dir %s", STEPS, half);
    e2e_run(2, NULL, NULL, e2e_path("gpu_resumed.log"), 0, args);
    e2e_expect_log(e2e_path("gpu_resumed.log"), "resumed from ");
    CHECK(e2e_newest(half, NULL, 0) == STEPS, "the resumed tp=2 GPU run did not reach step %d",
          STEPS);
    e2e_same_ckpt_file(e2e_path("ck_full"), half, "model.bin");
    e2e_same_ckpt_file(e2e_path("ck_full"), half, "optim.bin");
    printf("train_gpt_gpu_tp: tp=2 on the GPU, step-10 checkpoint + --resume: model.bin and "
           "optim.bin identical to the uninterrupted run's\n");
    const char *txt = e2e_path("sample.txt");
    CHECK(e2e_sh(txt, "'%s' sample --ckpt '%s' --prompt KING --max-new-tokens 30", e2e_symtrain,
                 e2e_path("ck_full")) == 0, "symtrain sample --ckpt of the tp=2 GPU run");
    char *want = e2e_read(txt, NULL), *said = e2e_read(e2e_path("gpu_tp2.log"), NULL);
    CHECK(want && said && strlen(want) > 4 + 1, "no sample text");
    if (!strstr(said, want)) e2e_show(e2e_path("gpu_tp2.log"));
    CHECK(strstr(said, want) != NULL, "the tp=2 GPU run's sample is not `symtrain sample`'s "
          "text from its checkpoint:\n%s", want);
    printf("train_gpt_gpu_tp: the tp=2 GPU run samples its checkpoint's text\n");
    free(want);
    free(said);

    /* (c) bf16 and fp16 at tp=2: smoke checks against the fp32 CPU run */
    static const struct {
        const char *prec, *name, *says;
    } low[] = {{"bf16", "bf16_tp2", "bf16 (fp32 master weights)"},
               {"fp16", "fp16_tp2", "fp16 (dynamic loss scaling)"}};
    double lc[STEPS];
    CHECK(e2e_fields(e2e_path("cpu_tp2.jsonl"), "\"loss\":", 0, lc, STEPS) == STEPS, "cpu tp2: steps");
    for (size_t i = 0; i < sizeof low / sizeof low[0]; i++) {
        char prec[32];
        snprintf(prec, sizeof prec, "--precision %s", low[i].prec);
        train(low[i].name, 2, "gpu", "tp=2", prec);
        e2e_expect_log(e2e_path("%s.log", low[i].name), low[i].says);
        double lb[STEPS], worst = 0;
        const char *met = e2e_path("%s.jsonl", low[i].name);
        CHECK(e2e_fields(met, "\"loss\":", 0, lb, STEPS) == STEPS, "%s: steps", low[i].prec);
        for (int k = 0; k < STEPS; k++) {
            CHECK(isfinite(lb[k]) && fabs(lb[k] - lc[k]) < 0.05 + 0.02 * fabs(lc[k]), "%s tp=2 on "
                  "the GPU, step %d: loss %.6f, the fp32 CPU's %.6f (tolerance 0.05 + 2%%)",
                  low[i].prec, k + 1, lb[k], lc[k]);
            worst = fmax(worst, fabs(lb[k] - lc[k]));
        }
        CHECK(lb[STEPS - 1] < lb[0] - 0.5, "%s tp=2: the loss went from %.4f to %.4f", low[i].prec,
              lb[0], lb[STEPS - 1]);
        printf("train_gpt_gpu_tp: %s tp=2 on the GPU within %.4f of the fp32 CPU run\n",
               low[i].prec, worst);
    }
    { /* fp16's loss scale is in every step's record, within its bounds */
        double sc[STEPS];
        CHECK(e2e_fields(e2e_path("fp16_tp2.jsonl"), "\"loss_scale\":", 0, sc, STEPS) == STEPS,
              "fp16 tp=2: not %d loss scales", STEPS);
        for (int k = 0; k < STEPS; k++)
            CHECK(sc[k] >= 1 && sc[k] <= 16777216, "fp16 tp=2, step %d: loss scale %g", k + 1, sc[k]);
    }

    /* (d) --micro-batches on the GPU (fp32): the gradients of each micro-batch
     * added on the GPU, the last one's step averaging and updating */
    static const struct {
        int npes, micro;
        const char *layout, *name, *whole;
    } acc[] = {{1, 2, NULL, "mb2", "gpu1"}, {2, 2, "dp=2", "dp2_mb2", "gpu1"},
               {2, 4, "tp=2", "tp2_mb4", "gpu_tp2"}};
    for (size_t i = 0; i < sizeof acc / sizeof acc[0]; i++) {
        char cpu[64], gpu[64], extra[128], what[160];
        snprintf(cpu, sizeof cpu, "cpu_%s", acc[i].name);
        snprintf(gpu, sizeof gpu, "gpu_%s", acc[i].name);
        snprintf(extra, sizeof extra, "--micro-batches %d", acc[i].micro);
        train(cpu, acc[i].npes, "cpu", acc[i].layout, extra);
        snprintf(extra, sizeof extra, "--precision fp32 --micro-batches %d", acc[i].micro);
        train(gpu, acc[i].npes, "gpu", acc[i].layout, extra);
        e2e_expect_log(e2e_path("%s.log", gpu), "on the GPU: ");
        snprintf(what, sizeof what, "%s, %d micro-batches, on the GPU vs the CPU",
                 acc[i].layout ? acc[i].layout : "1 PE", acc[i].micro);
        match(what, e2e_path("%s.jsonl", gpu), e2e_path("%s.jsonl", cpu), 1, TOL);
        snprintf(what, sizeof what, "%s, %d micro-batches, on the GPU vs one batch (%s)",
                 acc[i].layout ? acc[i].layout : "1 PE", acc[i].micro, acc[i].whole);
        match(what, e2e_path("%s.jsonl", gpu), e2e_path("%s.jsonl", acc[i].whole), 1, TOL);
    }
    snprintf(args, sizeof args, ARGS " --device gpu --parallel dp=2 --micro-batches 2 --balance "
             "throughput");
    e2e_run(2, NULL, NULL, e2e_path("mb_refused.log"), 1, args);
    e2e_expect_log(e2e_path("mb_refused.log"), "--micro-batches with --balance trains on CPU PEs "
                                               "for now");

    zero_case();

    e2e_cleanup();
    printf("train_gpt_gpu_tp: ok\n");
    return 0;
}
