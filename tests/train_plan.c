/*
 * train_plan — `symtrain plan` as a user runs it, its numbers against values
 * worked out by hand here (not by the planner's code):
 *  - gpt:d12 on 1 CPU PE, batch 4: 124,475,904 parameters exactly, and the
 *    CPU code's allocations kind by kind (pool blocks of gpt.c / model.c,
 *    AdamW's arrays); it fits in 16 GiB and is the choice.
 *  - gpt:d48 on 1 H200 at batch 16 x 1024, ZeRO 0: the GPU region of
 *    gpt_cuda.cu, 70,727,063,808 bytes: it fits in 141G and not in 64G;
 *    at batch 64 x 1024 it does not fit in 141G.
 *  - gpt:d12 on 1 H200: 8.44 GiB, beside the 8.4 GiB region our d12 run
 *    recorded (bench/gpt/results/h200_d12_bf16_symtrain.log).
 *  - gpt:d48 on 8 H200s: a choice is reported, it fits, it is the fastest of
 *    the listed layouts that fit, and its data-parallel all-reduce time is
 *    latency x buckets + 2 (n-1)/n x bytes / busbw by hand.
 *  - a 100B GPT on 64 GPUs of 8 a node: its parameter count exactly, an answer,
 *    TP inside a node, the data-parallel group across nodes, and the
 *    assumptions said.
 *  - TP on the CPU: the whole-width LayerNorms and residual adds each PE of
 *    the group still does, by hand;
 *  - bad input: one clear message, exit status 2.
 */
#include "train_e2e.h"

/* The number after "key": at or after p (NULL-safe). */
static double num(const char *p, const char *key) {
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *at = p ? strstr(p, pat) : NULL;
    CHECK(at != NULL, "no \"%s\" in the plan's JSON", key);
    return strtod(at + strlen(pat), NULL);
}

static int boolean(const char *p, const char *key) {
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *at = strstr(p, pat);
    CHECK(at != NULL, "no \"%s\" in the plan's JSON", key);
    return !strncmp(at + strlen(pat), "true", 4);
}

/* Run `symtrain plan ARGS --json`; the output (malloc'd). */
static char *plan(const char *log, const char *args) {
    int rc = e2e_sh(log, "%s plan %s --json", e2e_symtrain, args);
    if (rc != 0) e2e_show(log);
    CHECK(rc == 0, "symtrain plan %s: exit status %d", args, rc);
    char *s = e2e_read(log, NULL);
    CHECK(s && s[0] == '{', "symtrain plan %s: not JSON", args);
    return s;
}

static void near(double got, double want, double tol, const char *what) {
    CHECK(fabs(got - want) <= tol * fabs(want), "%s: %.9g, by hand %.9g", what, got, want);
}

int main(int argc, char **argv) {
    e2e_init(argc, argv, "train_plan");
    const char *log = e2e_path("plan.json");

    /* ---- d12, 1 CPU PE, batch 4 x 1024 ---- */
    /* wte 50304 x 768 + wpe 1024 x 768 + 12 x (12 x 768^2 + 13 x 768) + ln_f 2 x 768 */
    const double d12 = 38633472.0 + 786432.0 + 12 * (7077888.0 + 9984.0) + 1536.0;
    char *s = plan(log, "--model gpt:d12 --pes 1 --device cpu --no-measure --batch 4 --device-mem 16G "
                        "--layout dp=1");
    CHECK(num(s, "params") == d12 && d12 == 124475904.0, "d12 parameters %.0f", num(s, "params"));
    const char *mem = strstr(s, "\"layouts\":");
    CHECK(mem != NULL, "no layouts");
    /* parameters: 4 x P = 497,903,616 bytes in a 512 MiB buddy block; gradients
     * (P + 16 control floats) the same block; AdamW 2 x 4 x P exactly */
    CHECK(num(mem, "params") == 536870912.0, "params block %.0f", num(mem, "params"));
    CHECK(num(mem, "grads") == 536870912.0, "grads block %.0f", num(mem, "grads"));
    CHECK(num(mem, "optim") == 8 * d12, "AdamW state %.0f", num(mem, "optim"));
    /* activations, N = 4 x 1024 rows, each buffer a power-of-two block:
     * a block: ln1, atty, res2, ln2, res3 (N x C x 4 = 12 MiB -> 16 MiB) x 5,
     *   four row statistics (16 KiB), qkv (36 MiB -> 64), att (4 x 12 x 1024^2 x 4
     *   = 192 MiB -> 256), fch and fch_gelu (48 MiB -> 64) x 2: 528 MiB + 64 KiB;
     * the rest: encoded, lnf, scratch, dres, dln, datty (16 MiB) x 6, two row
     *   statistics (16 KiB), logits (4096 x 50304 x 4 = 786 MiB -> 1 GiB), dqkv
     *   and dfch (64 MiB) x 2, datt (1024^2 x 4 = 4 MiB) */
    const double MiB = 1048576.0, KiB = 1024.0;
    const double acts = 12 * (528 * MiB + 64 * KiB) + (96 + 128 + 4 + 1024) * MiB + 32 * KiB;
    CHECK(num(mem, "acts") == acts, "activations %.0f, by hand %.0f", num(mem, "acts"), acts);
    CHECK(num(mem, "total") == 2 * 536870912.0 + 8 * d12 + acts, "total %.0f", num(mem, "total"));
    CHECK(boolean(mem, "fits"), "d12 on 1 PE fits in 16 GiB");
    free(s);
    /* and among all its layouts the plain one (dp=1, no micro-batches) is chosen */
    s = plan(log, "--model gpt:d12 --pes 1 --device cpu --no-measure --batch 4 --device-mem 16G");
    const char *ch = strstr(s, "\"choice\":{");
    CHECK(ch != NULL, "d12 on 1 PE: no choice");
    CHECK(num(ch, "dp") == 1 && num(ch, "micro") == 1 && num(ch, "zero") == 0 &&
              num(ch, "recompute") == 0,
          "d12 on 1 PE chose %s", ch);
    free(s);

    /* ---- d48 on 1 H200, batch 16 x 1024, ZeRO 0 ---- */
    /* P = 1,557,686,400: weights fp32 + bf16 (6 P), gradients 4 P, moments 8 P;
     * bf16 activations, N = 16384, C = 1600, 25 heads, a block: ln1 res2 ln2 res3
     * 4 x N x C x 2, qkv 3NC x 2, atty NC x 2, fch + fch_gelu 2 x 4NC x 2, four
     * fp32 row statistics 4 x N x 4, lse N x 25 x 4 = 840,761,344 bytes x 48;
     * the rest: six NC x 2, dqkv, dfch, logits N x 50304 x 2, four N floats, the
     * attention scratch N x 25 x 4, encoder scratch and tokens 5 x N x 4 */
    const double P48 = 1557686400.0, N = 16384, C = 1600;
    const double blk = 4 * N * C * 2 + 3 * N * C * 2 + N * C * 2 + 2 * 4 * N * C * 2 + 4 * N * 4 +
                       N * 25 * 4;
    const double rest = 6 * N * C * 2 + 3 * N * C * 2 + 4 * N * C * 2 + N * 50304 * 2 + 4 * N * 4 +
                        N * 25 * 4 + 5 * N * 4;
    const double d48 = 18 * P48 + 48 * blk + rest;
    CHECK(blk == 840761344.0 && d48 == 70727063808.0, "hand sums %.0f %.0f", blk, d48);
    s = plan(log, "--model gpt:d48 --pes 1 --device gpu --batch 16 --seq 1024 --device-mem 141G "
                  "--layout dp=1,zero=0");
    CHECK(num(s, "params") == P48, "d48 parameters %.0f", num(s, "params"));
    mem = strstr(s, "\"layouts\":");
    CHECK(num(mem, "total") == d48, "d48 on one H200: %.0f bytes, by hand %.0f",
          num(mem, "total"), d48);
    CHECK(boolean(mem, "fits"), "d48 at 16 x 1024 fits in 141 GiB (66 GiB)");
    free(s);
    s = plan(log, "--model gpt:d48 --pes 1 --device gpu --batch 16 --device-mem 64G "
                  "--layout dp=1,zero=0");
    CHECK(!boolean(strstr(s, "\"layouts\":"), "fits"), "d48 at 16 x 1024 does not fit in 64 GiB");
    free(s);
    s = plan(log, "--model gpt:d48 --pes 1 --device gpu --batch 64 --device-mem 141G "
                  "--layout dp=1,zero=0");
    CHECK(!boolean(strstr(s, "\"layouts\":"), "fits"), "d48 at 64 x 1024 does not fit in 141G");
    free(s);

    /* ---- d12 on 1 H200 beside the recorded run's region (8.4 GiB) ---- */
    s = plan(log, "--model gpt:d12 --pes 1 --device gpu --batch 16 --layout dp=1");
    near(num(strstr(s, "\"layouts\":"), "total") / 1073741824.0, 8.4, 0.01,
         "d12 on one H200, GiB (recorded: 8.4)");
    free(s);
    /* tensor parallelism trains on GPUs: a tp layout needs nothing the build lacks */
    s = plan(log, "--model gpt:d12 --pes 2 --device gpu --batch 16 --layout tp=2");
    CHECK(strstr(s, "\"needs\":\"\"") != NULL, "tp=2 on 2 GPUs: the plan says it needs something:\n%s",
          s);
    free(s);

    /* ---- d48 on 8 H200s ---- */
    s = plan(log, "--model gpt:d48 --pes 8 --device gpu --batch 16 --device-mem 141G");
    ch = strstr(s, "\"choice\":{");
    CHECK(ch != NULL, "d48 on 8 GPUs: no choice");
    CHECK(num(ch, "dp") * num(ch, "tp") * num(ch, "pp") == 8, "the choice is not 8 PEs");
    CHECK(boolean(ch, "fits"), "the choice does not fit");
    double best = num(ch, "step");
    int fitting = 0;
    for (const char *p = strstr(s, "\"layouts\":"); (p = strstr(p, "\"fits\":")); p++) {
        if (strncmp(p + 7, "true", 4)) continue;
        fitting++;
        CHECK(num(p, "step") >= best, "a layout that fits is faster than the choice");
    }
    CHECK(fitting > 1, "only %d layouts of d48 on 8 GPUs fit", fitting);
    /* the runnable choice: a layout our GPU code trains, the fastest of them */
    const char *run = strstr(s, "\"runnable_choice\":{");
    CHECK(run && num(run, "dp") * num(run, "tp") * num(run, "pp") == 8 &&
              strstr(run, "\"needs\":\"\"") && num(run, "step") >= best,
          "d48 on 8 GPUs: no runnable choice of 8 PEs, or one faster than the choice");
    free(s);
    /* dp=8 ZeRO-0: the fp32 gradients, 4 P bytes in ceil(4P / 25 MiB) = 238 buckets,
     * over NVLink at 362 GB/s busbw, 3.9 us */
    s = plan(log, "--model gpt:d48 --pes 8 --device gpu --batch 16 --device-mem 141G "
                  "--layout dp=8");
    run = strstr(s, "\"layouts\":");
    CHECK(run && num(run, "dp") == 8 && num(run, "zero") == 0 && num(run, "micro") == 1,
          "d48 --layout dp=8: not dp=8 ZeRO-0 with one micro-batch");
    near(num(strstr(run, "\"time\":"), "dp_total"), 238 * 3.9e-6 + 2.0 * 7 / 8 * 4 * P48 / 362e9,
         1e-4, "dp all-reduce seconds");
    /* overlapped with the backward (2/3 of 56.6 ms) but for the last piece, the
     * embeddings' (50304 + 1024) x 1600 fp32 gradients: 3.9 us + 2 x 7/8 x bytes / busbw */
    near(num(strstr(run, "\"time\":"), "dp"), 3.9e-6 + 2.0 * 7 / 8 * 4 * 51328 * 1600.0 / 362e9,
         1e-4, "dp all-reduce seconds left after the backward");
    /* compute: 2 x 1024 tokens a PE x (6 P + 6 x 48 x 1024 x 1600) FLOPs at 441,836 x
     * 803,478,528 FLOP/s */
    near(num(strstr(run, "\"time\":"), "compute"),
         2048 * (6 * P48 + 6 * 48 * 1024 * 1600.0) / (441836.0 * 803478528.0), 1e-4,
         "compute seconds");
    free(s);

    /* ---- 100B on 64 GPUs, 8 a node ---- */
    /* 50304 x 10240 + 2048 x 10240 + 80 x (12 x 10240^2 + 13 x 10240) + 2 x 10240 */
    const double p100 = 515112960.0 + 20971520.0 + 80 * (1258291200.0 + 133120.0) + 20480.0;
    s = plan(log, "--model gpt:L=80,C=10240,H=80,V=50257,T=2048 --pes 64 --pes-per-node 8 "
                  "--device gpu --batch 512 --device-mem 141G");
    CHECK(num(s, "params") == p100 && p100 == 101210050560.0, "100B parameters %.0f",
          num(s, "params"));
    ch = strstr(s, "\"choice\":{");
    CHECK(ch != NULL, "100B on 64 GPUs: no choice");
    CHECK(num(ch, "dp") * num(ch, "tp") * num(ch, "pp") == 64, "the choice is not 64 PEs");
    CHECK(num(ch, "tp") <= 8 && !boolean(strstr(ch, "\"crosses_nodes\":"), "tp"),
          "TP crosses a node");
    CHECK(num(ch, "dp") == 1 || boolean(strstr(ch, "\"crosses_nodes\":"), "dp"),
          "a data-parallel group of 64 PEs over 8 nodes must cross nodes");
    CHECK(num(ch, "total") <= 141.0 * 1073741824.0, "the choice does not fit");
    CHECK(strstr(s, "\"assumptions\":[") && strstr(s, "assumed: one 400 Gb/s InfiniBand"),
          "the assumptions are not said");
    free(s);

    /* ---- the CPU rate measured at plan time (a training pass of the model's width) ---- */
    s = plan(log, "--model gpt:L=2,C=64,H=4,V=128,T=32 --pes 2 --device cpu --batch 8");
    CHECK(strstr(s, "measured now: a training pass of a 1-layer GPT of this width (C=64"),
          "the CPU rate is not measured: %s", s);
    CHECK(num(strstr(s, "\"rates\":"), "flops") > 1e6, "a measured rate of %g FLOP/s",
          num(strstr(s, "\"rates\":"), "flops"));
    CHECK(num(strstr(s, "\"choice\":{"), "step") > 0, "no predicted step time");
    free(s);

    /* ---- TP on the CPU: the LayerNorms and residual adds stay whole ---- */
    /* tp=2 and dp=2 split the same FLOPs (the blocks and the vocabulary over tp,
     * or the batch over dp) but for ln_f (12 C a token, whole under tp); under
     * tp each PE also makes 24 passes over the (4 x 32, 64) fp32 activation a
     * layer at the memory rate, half of which the split rate already counts:
     * 0.5 x 2 layers x 24 x 32,768 B / 10 GB/s + 12 x 64 x 64 tokens / 20 GFLOP/s */
    {
        const char *cpu = "--model gpt:L=2,C=64,H=4,V=128,T=32 --pes 2 --device cpu --no-measure "
                          "--batch 4 --device-mem 1G --flops 20e9 --mem-bw 10e9 --layout";
        char args[256];
        snprintf(args, sizeof args, "%s tp=2", cpu);
        s = plan(log, args);
        double tp = num(strstr(s, "\"layouts\":"), "compute");
        free(s);
        snprintf(args, sizeof args, "%s dp=2", cpu);
        s = plan(log, args);
        double dp = num(strstr(s, "\"layouts\":"), "compute");
        free(s);
        near(tp - dp, 0.5 * 2 * 24 * 32768.0 / 10e9 + 12.0 * 64 * 64 / 20e9, 1e-3,
             "tp=2 less dp=2 compute");
    }

    /* ---- the table, and bad input ---- */
    int rc = e2e_sh(log, "%s plan --model gpt:d48 --pes 8 --device-mem 141G", e2e_symtrain);
    CHECK(rc == 0, "the table: exit %d", rc);
    e2e_expect_log(log, "choice: dp=");
    e2e_expect_log(log, "assumptions:");
    rc = e2e_sh(log, "%s plan --model mlp:784-10 --pes 2", e2e_symtrain);
    CHECK(rc == 2, "an MLP: exit %d", rc);
    e2e_expect_log(log, "the planner plans a GPT");
    rc = e2e_sh(log, "%s plan --model gpt:d12 --pes 4 --layout dp=3", e2e_symtrain);
    CHECK(rc == 2, "a layout of 3 PEs on 4: exit %d", rc);
    e2e_expect_log(log, "dp=3 x tp=1 x pp=1 is 3 PEs, not the 4 asked");
    rc = e2e_sh(log, "%s plan --model gpt:d12 --pes 4 --device-mem 12Q", e2e_symtrain);
    CHECK(rc == 2, "a bad size: exit %d", rc);
    e2e_expect_log(log, "--device-mem '12Q': expected a size such as 141G or 512M");
    e2e_cleanup();
    printf("train_plan: ok\n");
    return 0;
}
