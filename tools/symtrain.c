/*
 * symtrain — the training CLI.
 *
 *   symrun -n 4 symtrain train [options]     data-parallel training on 4 PEs
 *   symtrain tokenize FILES -o DIR           text to token shards (symtrain_tokenize.c)
 *   symtrain sample --ckpt DIR               text from a trained GPT (symtrain_sample.c)
 *   symtrain plot metrics.jsonl -o curve.svg draw the loss / accuracy curves
 *   symtrain ckpt show|verify DIR            inspect / check a checkpoint (symtrain_ckpt.c)
 *
 * `train` starts the runtime, then parses its options on every PE (they all
 * see the same command line, so they all reach the same verdict); PE 0 alone
 * prints. Exit status: 0 when training finished, or was stopped by SIGTERM /
 * SIGINT after saving its checkpoint; 130 when stopped with nothing saved (no
 * --ckpt-dir); 1 on an error; 2 on bad usage.
 */
#include <errno.h>
#include <math.h>
#include <shmem.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <symtrain/symtrain.h>

#include "envhelp.h"
#include "symtrain_cli.h"

#define EXIT_USAGE 2
#define EXIT_INTERRUPTED 130

static const char usage_text[] =
    "usage: symtrain train [options]          train (several PEs: symrun -n N symtrain train)\n"
    "       symtrain tokenize FILES... -o DIR text to token shards (--help for more)\n"
    "       symtrain sample --ckpt DIR        text from a trained GPT (--help for more)\n"
    "       symtrain plan --model gpt:SPEC --pes N [--device-mem SIZE] ...\n"
    "                                         layouts, their memory and step time, the\n"
    "                                         fastest that fits (--help for more)\n"
    "       symtrain ckpt show|verify DIR     what a checkpoint holds; check every byte of it\n"
    "       symtrain memstore SOCKET          hold in-memory snapshots across restarts of jobs\n"
    "                                         symrun does not start (SYMTRAIN_MEMCKPT_SOCKET)\n"
    "       symtrain plot METRICS -o OUT.svg [--title TEXT]\n"
    "                                         draw the curves of a --metrics file\n"
    "       symtrain --help\n"
    "\n"
    "model\n"
    "  --model SPEC                 mlp:784-512-256-10 (the default: layer widths, input to\n"
    "                               classes), gpt:d12|d24|d36|d48 (GPT-2 small to XL), or\n"
    "                               gpt:L=4,C=256,H=4,V=256,T=256 (layers, width, heads,\n"
    "                               vocabulary, context)\n"
    "  --activation relu|gelu       MLP hidden activation (default relu)\n"
    "  --dropout P                  dropout: an MLP's after each hidden activation (default\n"
    "                               0.2), a GPT's on the embeddings, each residual\n"
    "                               branch and the attention probabilities (default 0; CPU)\n"
    "  --seed S                     weights, data order and dropout (default 1)\n"
    "device\n"
    "  --device auto|cpu|gpu        where a GPT trains (auto: the GPU when there is one)\n"
    "  --precision bf16|fp16|fp32|tf32  GPU compute type; master weights and AdamW stay\n"
    "                               fp32; fp16 scales the loss dynamically; fp32 multiplies\n"
    "                               exactly, tf32 on TF32 tensor cores (default bf16; the\n"
    "                               CPU always computes in fp32)\n"
    "  --loss-scale-growth N        fp16: the loss scale (from 65536) halves at an overflow\n"
    "                               (the step is skipped) and doubles after N good steps\n"
    "                               (default 2000)\n"
    "  --recompute gelu|ln|gelu,ln|off  GPU: recompute the MLP's GELU (the c_fc product)\n"
    "                               and/or the LayerNorms in backward instead of keeping\n"
    "                               them (less memory, more compute; default off)\n"
    "data\n"
    "  --data DIR|GLOB              MLP: Fashion-MNIST IDX files (default $SYMTRAIN_DATA_DIR,\n"
    "                               else " SYM_FASHION_MNIST_DIR ").\n"
    "                               GPT: token shards (default " SYM_TEXT_DATA_DEFAULT ",\n"
    "                               which make data writes). A generated set if absent\n"
    "  --val-data GLOB              GPT validation shards (default: --data with train -> val)\n"
    "  --seq T                      GPT tokens per sequence (default: the model's context)\n"
    "  --generated                  use the generated data set / corpus instead\n"
    "  --train-samples N            use the first N training samples (default all)\n"
    "  --test-samples N             evaluate on the first N test samples / validation\n"
    "                               sequences (default all; GPT 256)\n"
    "optimization\n"
    "  --epochs N                   (default 10)\n"
    "  --batch B                    global batch, split over the PEs (default 128)\n"
    "  --optimizer adamw|sgd        (default adamw)\n"
    "  --lr LR                      peak learning rate (default 0.001)\n"
    "  --warmup EPOCHS              linear warmup, then cosine decay (default 0.25)\n"
    "  --warmup-steps N             the warmup in steps instead\n"
    "  --final-lr-ratio R           the cosine ends at LR * R (default 0.01)\n"
    "  --momentum M                 SGD momentum (default 0.9)\n"
    "  --weight-decay WD            AdamW decoupled / SGD L2; not on biases (default 0.01)\n"
    "  --clip NORM                  clip the global gradient norm; 0 = off (default 1)\n"
    "  --steps N                    train N steps in all, the schedule fitted to them\n"
    "                               (instead of --epochs; the data repeats as needed)\n"
    "  --max-steps N                stop after N steps in all (the schedule unchanged)\n"
    "  --eval-every N               also evaluate every N steps\n"
    "parallelism\n"
    "  --parallel dp=N,tp=M,pp=K    split the PEs: N data-parallel groups, each a GPT split\n"
    "                               over M PEs (tensor parallelism: heads, MLP and\n"
    "                               vocabulary) in K pipeline stages of its blocks (1F1B).\n"
    "                               Any subset, a size not given is 1, and N x M x K must\n"
    "                               be the PE count (default: dp over all). Add ,sp for\n"
    "                               sequence parallelism inside each tp group (the\n"
    "                               LayerNorm/dropout/residual activations split along\n"
    "                               the sequence): --parallel dp=2,tp=2,sp\n"
    "  --tp-overlap C               with tp (without sp): each row-parallel GEMM and\n"
    "                               column-parallel input gradient in C row chunks, a\n"
    "                               chunk's all-reduce running while the next computes\n"
    "                               (default 1: no overlap)\n"
    "  --parallel auto              the layout planner's fastest for this job (symtrain\n"
    "                               plan --runnable): dp, tp, pp, micro-batches and ZeRO\n"
    "                               stage, said in one line with why\n"
    "  --micro-batches M            split each replica's share of a step into M micro-\n"
    "                               batches: with pp the pipeline's (default K), else\n"
    "                               gradient accumulation, the gradients reduced after the\n"
    "                               last only (default 1; CPU). Any layout, any --zero\n"
    "  --inbox-slots S              with pp: slots of each stage's inboxes (default K)\n"
    "  --virtual-stages V           with pp: V model chunks a stage, interleaved 1F1B\n"
    "                               (Megatron's; micro-batches a multiple of K; CPU)\n"
    "  --bucket-mb MB               gradient all-reduce bucket size (default 25)\n"
    "  --zero 0|1|2                 ZeRO: 1 shards the optimizer state over the dp team\n"
    "                               (each tp/pp PE its own part; CPU and GPU PEs), 2\n"
    "                               the gradients too (CPU PEs); default 0: every PE\n"
    "                               holds all of its part\n"
    "  --threads N                  BLAS threads per PE (default: cores, or the container's\n"
    "                               CPU limit, / PEs on the host)\n"
    "load balancing (the global batch and the math stay; which PE computes which sample moves)\n"
    "  --balance off|throughput|score\n"
    "                               each PE's share of the batch follows its measured\n"
    "                               samples/s (throughput) or the utilisation score\n"
    "                               (default off; stragglers are named either way)\n"
    "  --balance-every N|T          rebalance every N steps or every T: 30s, 5m (default 10)\n"
    "  --balance-hysteresis F       move work only for a gain above F (default 0.05)\n"
    "  --balance-weights A,B,C      score: weights of 1 - GPU (or CPU) use, 1 - memory use,\n"
    "                               1 / (latency in ms + 1) (default 0.6,0.3,0.1)\n"
    "  --straggler-factor F         name a PE slower than the median by more than F (1.5)\n"
    "checkpoints (always written at the end, and on SIGTERM / SIGINT)\n"
    "  --ckpt-dir DIR               where checkpoints go\n"
    "  --ckpt-every T               also every T: 30s, 5m, 1h (seconds without a unit)\n"
    "  --ckpt-steps N               also every N steps\n"
    "  --ckpt-at-eval               also after every evaluation (--eval-every, epochs' ends)\n"
    "  --ckpt-keep K                keep the newest K (default 3)\n"
    "  --ckpt-format single|sharded single: PE 0 writes model.bin and optim.bin (the\n"
    "                               default); sharded: every PE writes its slice of every\n"
    "                               tensor it holds, read back in any layout or PE count\n"
    "  --ckpt-async on|off          on (default): snapshot after the step, a background\n"
    "                               thread writes it while training goes on; off: every\n"
    "                               checkpoint is on disk before the next step\n"
    "  --resume                     continue from the newest good checkpoint in --ckpt-dir;\n"
    "                               an error when there is none\n"
    "  --resume=auto                the same, but start from the beginning when there is\n"
    "                               none (a job that restarts itself)\n"
    "  --mem-ckpt-every N           also keep a snapshot in memory every N steps (and at each\n"
    "                               --ckpt-steps checkpoint), each PE's shard copied to a\n"
    "                               buddy PE; under symrun a restart resumes from it and\n"
    "                               reads the disk only when both copies of a shard are gone\n"
    "output\n"
    "  --metrics FILE               append one JSON line per step (and per evaluation)\n"
    "  --metrics-port PORT          every PE serves Prometheus metrics at /metrics on PORT\n"
    "                               plus its rank on the host; 0 picks free ports (each\n"
    "                               logged). Default: $SYMTRAIN_METRICS_PORT, else off\n"
    "  --progress MODE              while an epoch runs: bar (redrawn, fitted to the\n"
    "                               terminal), plain (a line every --log-interval) or off\n"
    "                               (epoch summaries only); auto (default): the bar on\n"
    "                               your terminal, plain lines in a file, a pipe, mpirun\n"
    "  --log-interval S             seconds between plain progress lines (default 10)\n"
    "  --quiet                      only errors and the outcome (accuracy, time, checkpoint)\n"
    "  --sample N                   GPT: generate N tokens at the end (PE 0)\n"
    "  --prompt TEXT                their prompt (default: a new line)\n";

/* --help: the options, then the environment every PE reads. */
static void print_help(void) {
    fputs(usage_text, stdout);
    fputs("\n" SYM_ENV_HELP_RUNTIME SYM_ENV_HELP_TRAIN, stdout);
}

static int runtime_started; /* shmem_init was called */
static int speaker = 1;     /* this process prints (PE 0) */

static void leave(int code) __attribute__((noreturn));
static void leave(int code) {
    fflush(stdout);
    if (runtime_started) shmem_finalize();
    exit(code);
}

static void usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void usage_error(const char *fmt, ...) {
    if (speaker) {
        va_list ap;
        va_start(ap, fmt);
        fputs("symtrain: ", stderr);
        vfprintf(stderr, fmt, ap);
        fputs("\nusage: symtrain train [options] | symtrain plot METRICS -o OUT.svg "
              "(symtrain --help lists the options)\n",
              stderr);
        va_end(ap);
    }
    leave(EXIT_USAGE);
}

/* ---- option values ---- */

static long long int_value(const char *opt, const char *s, long long lo, long long hi) {
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        usage_error("%s '%s': expected a whole number from %lld to %lld", opt, s, lo, hi);
    return v;
}

static double num_value(const char *opt, const char *s, double lo, double hi) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v) || v < lo || v > hi)
        usage_error("%s '%s': expected a number from %g to %g", opt, s, lo, hi);
    return v;
}

/* "30", "30s", "5m", "1.5h" -> seconds */
static double duration_value(const char *opt, const char *s) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    double mul = 1;
    if (*end == 's')
        end++;
    else if (*end == 'm')
        mul = 60, end++;
    else if (*end == 'h')
        mul = 3600, end++;
    if (errno || end == s || *end || !isfinite(v) || v <= 0)
        usage_error("%s '%s': expected a duration such as 30s, 5m or 1h", opt, s);
    return v * mul;
}

/* ---- train ---- */

/* --parallel dp=N,tp=M,pp=K[,sp]: any subset, each at most once (the sizes are
 * checked against the job by sym_train_validate); sp sets the model's
 * sequence parallelism. */
static void parallel_value(const char *v, sym_parallel_t *p, sym_model_config_t *model) {
    static const char *const form = "write dp=N,tp=M,pp=K (any of them, sizes >= 1 multiplying "
                                    "to the PE count) and optionally sp (sequence parallelism), "
                                    "e.g. --parallel dp=2,tp=2, dp=2,tp=2,sp or auto";
    memset(p, 0, sizeof *p);
    model->seq_parallel = 0;
    if (!strcmp(v, "auto")) {
        p->plan = 1;
        return;
    }
    const char *s = v;
    if (!*v || v[strlen(v) - 1] == ',') usage_error("--parallel '%s': %s", v, form);
    do {
        int *slot = NULL;
        if (!strncmp(s, "sp", 2) && (s[2] == ',' || !s[2])) {
            if (model->seq_parallel) usage_error("--parallel '%s': sp is given twice; %s", v, form);
            model->seq_parallel = 1;
            s += s[2] ? 3 : 2;
            continue;
        }
        if (!strncmp(s, "dp=", 3)) slot = &p->dp;
        if (!strncmp(s, "tp=", 3)) slot = &p->tp;
        if (!strncmp(s, "pp=", 3)) slot = &p->pp;
        if (!slot) {
            int n = (int)strcspn(s, "=,");
            usage_error("--parallel '%s': unknown key '%.*s'; %s", v, n, s, form);
        }
        if (*slot) usage_error("--parallel '%s': %.2s is given twice; %s", v, s, form);
        char *end;
        errno = 0;
        long n = strtol(s + 3, &end, 10);
        if (errno || end == s + 3 || n < 1 || n > 1 << 20 || (*end && *end != ','))
            usage_error("--parallel '%s': %.2s needs a whole number from 1 to %d; %s", v, s,
                        1 << 20, form);
        *slot = (int)n;
        s = *end ? end + 1 : end;
    } while (*s);
}

/* Options that take a value; the rest are flags. */
static const char *const valued[] = {
    "--model", "--activation", "--dropout", "--seed", "--data", "--train-samples",
    "--test-samples", "--epochs", "--batch", "--optimizer", "--lr", "--warmup",
    "--final-lr-ratio", "--momentum", "--weight-decay", "--clip", "--max-steps", "--bucket-mb",
    "--zero", "--accum",
    "--threads", "--balance", "--balance-every", "--balance-hysteresis", "--balance-weights",
    "--straggler-factor", "--ckpt-dir", "--ckpt-every", "--ckpt-steps", "--ckpt-keep", "--ckpt-format", "--ckpt-async",
    "--mem-ckpt-every", "--metrics",
    "--metrics-port",
    "--log-interval", "--progress", "--device", "--precision", "--recompute",
    "--loss-scale-growth", "--steps", "--val-data", "--seq", "--warmup-steps", "--eval-every",
    "--sample", "--prompt", "--parallel", "--micro-batches", "--inbox-slots", "--virtual-stages", "--tp-overlap",
    NULL};

static const char *const flags[] = {"--generated", "--resume", "--quiet", "--help",
                                    "--ckpt-at-eval", NULL};

/* Edit distance of a and b (short strings), for "did you mean". */
static int distance(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    if (la > 63 || lb > 63) return 99;
    int d[64][64];
    for (size_t i = 0; i <= la; i++) d[i][0] = (int)i;
    for (size_t j = 0; j <= lb; j++) d[0][j] = (int)j;
    for (size_t i = 1; i <= la; i++)
        for (size_t j = 1; j <= lb; j++) {
            int best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
            if (d[i - 1][j] + 1 < best) best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best) best = d[i][j - 1] + 1;
            d[i][j] = best;
        }
    return d[la][lb];
}

/* The known option closest to `opt` when it is a near miss (2 edits), else NULL. */
static const char *closest(const char *opt) {
    const char *best = NULL;
    int bd = 3;
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; (pass ? flags : valued)[i]; i++) {
            int d = distance(opt, (pass ? flags : valued)[i]);
            if (d < bd) bd = d, best = (pass ? flags : valued)[i];
        }
    return best;
}

static int listed(const char *const *list, const char *opt) {
    for (int i = 0; list[i]; i++)
        if (!strcmp(opt, list[i])) return 1;
    return 0;
}

static void parse_train(int argc, char **argv, sym_train_config_t *c) {
    sym_train_defaults(c);
    int dropout_given = 0;
    const char *port = getenv("SYMTRAIN_METRICS_PORT");
    if (port && *port) c->metrics_port = (int)int_value("SYMTRAIN_METRICS_PORT", port, 0, 65535);
    for (int i = 0; i < argc; i++) {
        char opt[64];
        const char *a = argv[i], *v = NULL, *eq = strchr(a, '=');
        if (strncmp(a, "--", 2) != 0) usage_error("unexpected argument '%s'", a);
        size_t n = eq ? (size_t)(eq - a) : strlen(a);
        if (n >= sizeof opt) usage_error("unknown option '%s'", a);
        memcpy(opt, a, n);
        opt[n] = '\0';
        if (listed(valued, opt)) {
            if (eq)
                v = eq + 1;
            else if (i + 1 < argc)
                v = argv[++i];
            else
                usage_error("%s needs a value", opt);
        } else if (eq && listed(flags, opt) && strcmp(opt, "--resume")) {
            usage_error("%s takes no value", opt); /* --resume=auto: the one flag with a value */
        }
        if (!strcmp(opt, "--help")) {
            if (speaker) print_help();
            leave(0);
        } else if (!strcmp(opt, "--parallel")) {
            parallel_value(v, &c->parallel, &c->model);
        } else if (!strcmp(opt, "--model")) {
            if (sym_model_parse(v, &c->model)) usage_error("%s", sym_last_error());
        } else if (!strcmp(opt, "--activation")) {
            if (sym_act_parse(v, &c->model.act)) usage_error("%s", sym_last_error());
        } else if (!strcmp(opt, "--dropout")) {
            c->model.dropout = (float)num_value(opt, v, 0, 0.95);
            dropout_given = 1;
        } else if (!strcmp(opt, "--seed")) {
            c->model.seed = (uint64_t)int_value(opt, v, 0, INT64_MAX);
        } else if (!strcmp(opt, "--data")) {
            c->data_dir = v;
        } else if (!strcmp(opt, "--device")) {
            if (!strcmp(v, "auto")) c->device = SYM_TRAIN_AUTO;
            else if (!strcmp(v, "cpu")) c->device = SYM_TRAIN_CPU;
            else if (!strcmp(v, "gpu")) c->device = SYM_TRAIN_GPU;
            else usage_error("--device '%s': use auto, cpu or gpu", v);
        } else if (!strcmp(opt, "--precision")) {
            if (!strcmp(v, "fp32")) c->precision = 0;
            else if (!strcmp(v, "bf16")) c->precision = 1;
            else if (!strcmp(v, "fp16")) c->precision = 2;
            else if (!strcmp(v, "tf32")) c->precision = 3;
            else usage_error("--precision '%s': use bf16, fp16, fp32 or tf32", v);
        } else if (!strcmp(opt, "--loss-scale-growth")) {
            c->loss_scale_growth = (int)int_value(opt, v, 1, 1 << 30);
        } else if (!strcmp(opt, "--recompute")) {
            c->recompute_gelu = c->recompute_ln = 0;
            if (!strcmp(v, "gelu")) c->recompute_gelu = 1;
            else if (!strcmp(v, "ln")) c->recompute_ln = 1;
            else if (!strcmp(v, "gelu,ln") || !strcmp(v, "ln,gelu")) c->recompute_gelu = c->recompute_ln = 1;
            else if (strcmp(v, "off")) usage_error("--recompute '%s': use gelu, ln, gelu,ln or off", v);
        } else if (!strcmp(opt, "--steps")) {
            c->steps = int_value(opt, v, 1, INT64_MAX);
        } else if (!strcmp(opt, "--val-data")) {
            c->val_data = v;
        } else if (!strcmp(opt, "--seq")) {
            c->seq = (int)int_value(opt, v, 1, 1 << 20);
        } else if (!strcmp(opt, "--warmup-steps")) {
            c->warmup_steps = int_value(opt, v, 0, INT64_MAX);
        } else if (!strcmp(opt, "--eval-every")) {
            c->eval_every = int_value(opt, v, 1, INT64_MAX);
        } else if (!strcmp(opt, "--sample")) {
            c->sample_tokens = (int)int_value(opt, v, 0, 1000000);
        } else if (!strcmp(opt, "--prompt")) {
            c->sample_prompt = v;
        } else if (!strcmp(opt, "--generated")) {
            c->generated = 1;
        } else if (!strcmp(opt, "--train-samples")) {
            c->train_samples = int_value(opt, v, 1, INT32_MAX);
        } else if (!strcmp(opt, "--test-samples")) {
            c->test_samples = int_value(opt, v, 1, INT32_MAX);
        } else if (!strcmp(opt, "--epochs")) {
            c->epochs = (int)int_value(opt, v, 1, 100000);
        } else if (!strcmp(opt, "--batch")) {
            c->global_batch = (int)int_value(opt, v, 1, 1 << 20);
        } else if (!strcmp(opt, "--optimizer")) {
            if (sym_optim_parse(v, &c->optim.kind)) usage_error("%s", sym_last_error());
        } else if (!strcmp(opt, "--lr")) {
            c->lr = (float)num_value(opt, v, 1e-9, 100);
        } else if (!strcmp(opt, "--warmup")) {
            c->warmup_epochs = (float)num_value(opt, v, 0, 100000);
        } else if (!strcmp(opt, "--final-lr-ratio")) {
            c->final_lr_ratio = (float)num_value(opt, v, 0, 1);
        } else if (!strcmp(opt, "--momentum")) {
            c->optim.momentum = (float)num_value(opt, v, 0, 0.9999);
        } else if (!strcmp(opt, "--weight-decay")) {
            c->optim.weight_decay = (float)num_value(opt, v, 0, 10);
        } else if (!strcmp(opt, "--clip")) {
            c->clip = (float)num_value(opt, v, 0, 1e9);
        } else if (!strcmp(opt, "--max-steps")) {
            c->max_steps = int_value(opt, v, 1, INT64_MAX);
        } else if (!strcmp(opt, "--bucket-mb")) {
            c->bucket_mb = num_value(opt, v, 1e-6, 1 << 20);
        } else if (!strcmp(opt, "--tp-overlap")) {
            c->model.tp_chunks = (int)int_value(opt, v, 1, 64);
        } else if (!strcmp(opt, "--micro-batches")) {
            c->micro_batches = (int)int_value(opt, v, 1, 1 << 20);
        } else if (!strcmp(opt, "--inbox-slots")) {
            c->inbox_slots = (int)int_value(opt, v, 1, 1 << 16);
        } else if (!strcmp(opt, "--virtual-stages")) {
            c->virtual_stages = (int)int_value(opt, v, 1, 32);
        } else if (!strcmp(opt, "--zero")) {
            c->zero = (int)int_value(opt, v, 0, 2);
        } else if (!strcmp(opt, "--accum")) { /* the earlier name: said where it went */
            usage_error("--accum is now --micro-batches %s: one option splits a step into "
                        "micro-batches, a pipeline's with pp, gradient accumulation without", v);
        } else if (!strcmp(opt, "--threads")) {
            c->threads = (int)int_value(opt, v, 1, 1024);
        } else if (!strcmp(opt, "--balance")) {
            if (!strcmp(v, "off")) c->balance.policy = SYM_BALANCE_OFF;
            else if (!strcmp(v, "throughput")) c->balance.policy = SYM_BALANCE_THROUGHPUT;
            else if (!strcmp(v, "score")) c->balance.policy = SYM_BALANCE_SCORE;
            else usage_error("--balance '%s': use off, throughput or score", v);
        } else if (!strcmp(opt, "--balance-every")) {
            size_t len = strlen(v);
            if (len && strchr("smh", v[len - 1])) {
                c->balance.every_s = duration_value(opt, v);
            } else {
                c->balance.every_steps = int_value(opt, v, 1, INT64_MAX);
                c->balance.every_s = 0;
            }
        } else if (!strcmp(opt, "--balance-hysteresis")) {
            c->balance.hysteresis = num_value(opt, v, 0, 0.99);
        } else if (!strcmp(opt, "--balance-weights")) {
            double *w = c->balance.weights;
            char tail;
            if (sscanf(v, "%lf,%lf,%lf%c", &w[0], &w[1], &w[2], &tail) != 3 || !(w[0] >= 0) ||
                !(w[1] >= 0) || !(w[2] >= 0) || !isfinite(w[0] + w[1] + w[2]))
                usage_error("--balance-weights '%s': expected three numbers >= 0 such as "
                            "0.6,0.3,0.1", v);
        } else if (!strcmp(opt, "--straggler-factor")) {
            c->balance.straggler = num_value(opt, v, 1.01, 1e6);
        } else if (!strcmp(opt, "--ckpt-dir")) {
            if (!*v) usage_error("--ckpt-dir needs a directory");
            c->ckpt_dir = v;
        } else if (!strcmp(opt, "--ckpt-every")) {
            c->ckpt_every_s = duration_value(opt, v);
        } else if (!strcmp(opt, "--ckpt-steps")) {
            c->ckpt_steps = int_value(opt, v, 1, INT64_MAX);
        } else if (!strcmp(opt, "--mem-ckpt-every")) {
            c->mem_ckpt_every = int_value(opt, v, 1, INT64_MAX);
        } else if (!strcmp(opt, "--ckpt-keep")) {
            c->ckpt_keep = (int)int_value(opt, v, 1, 1000000);
        } else if (!strcmp(opt, "--ckpt-format")) {
            if (strcmp(v, "single") && strcmp(v, "sharded"))
                usage_error("--ckpt-format '%s': write single or sharded", v);
            c->ckpt_sharded = !strcmp(v, "sharded");
        } else if (!strcmp(opt, "--ckpt-async")) {
            if (strcmp(v, "on") && strcmp(v, "off"))
                usage_error("--ckpt-async '%s': write on (background writes) or off", v);
            c->ckpt_sync = !strcmp(v, "off");
        } else if (!strcmp(opt, "--resume")) {
            if (eq && strcmp(eq + 1, "auto"))
                usage_error("--resume=%s: write --resume (continue from a checkpoint, an error "
                            "when there is none) or --resume=auto (else start from the beginning)",
                            eq + 1);
            c->resume = eq ? SYM_RESUME_AUTO : SYM_RESUME_MUST;
        } else if (!strcmp(opt, "--metrics")) {
            c->metrics_path = v;
        } else if (!strcmp(opt, "--metrics-port")) {
            c->metrics_port = (int)int_value(opt, v, 0, 65535);
        } else if (!strcmp(opt, "--progress")) {
            if (!strcmp(v, "auto")) c->progress = SYM_PROGRESS_AUTO;
            else if (!strcmp(v, "plain")) c->progress = SYM_PROGRESS_PLAIN;
            else if (!strcmp(v, "bar")) c->progress = SYM_PROGRESS_BAR;
            else if (!strcmp(v, "off")) c->progress = SYM_PROGRESS_OFF;
            else usage_error("--progress '%s': use auto, plain, bar or off", v);
        } else if (!strcmp(opt, "--log-interval")) {
            c->log_interval_s = num_value(opt, v, 0.01, 1e6);
        } else if (!strcmp(opt, "--quiet")) {
            c->quiet = 1;
        } else if (!strcmp(opt, "--ckpt-at-eval")) {
            c->ckpt_at_eval = 1;
        } else {
            const char *near = closest(opt);
            if (near) usage_error("unknown option '%s'; did you mean %s?", a, near);
            usage_error("unknown option '%s'", a);
        }
    }
    if (!dropout_given && c->model.kind == SYM_MODEL_GPT) c->model.dropout = 0; /* a GPT's default */
}

static int train_main(int argc, char **argv) {
    shmem_init();
    runtime_started = 1;
    speaker = shmem_my_pe() == 0;
    sym_train_config_t cfg;
    parse_train(argc, argv, &cfg);
    if (sym_train_validate(&cfg, shmem_n_pes())) usage_error("%s", sym_last_error());
    sym_train_result_t res;
    int rc = sym_train_run(&cfg, &res);
    /* Stopped by a signal with nothing saved: 130, as shells expect of Ctrl-C. */
    if (!rc && res.stopped && !cfg.ckpt_dir) leave(EXIT_INTERRUPTED);
    if (rc) {
        /* The message is out. Other PEs may be inside a collective, so do not
         * finalize (it would wait for them); symrun ends the job. */
        fflush(stdout);
        exit(1);
    }
    leave(0);
    return 0;
}

/* ---- plot ---- */

static int plot_main(int argc, char **argv) {
    const char *in = NULL, *out = NULL, *title = NULL;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-o") || !strcmp(a, "--output") || !strcmp(a, "--title")) {
            if (i + 1 >= argc) usage_error("%s needs a value", a);
            if (!strcmp(a, "--title"))
                title = argv[++i];
            else
                out = argv[++i];
        } else if (!strcmp(a, "--help")) {
            fputs(usage_text, stdout);
            exit(0);
        } else if (a[0] == '-' && a[1]) {
            usage_error("plot: unknown option '%s'", a);
        } else if (in) {
            usage_error("plot: one metrics file at a time ('%s' and '%s')", in, a);
        } else {
            in = a;
        }
    }
    if (!in) usage_error("plot: name the metrics file (written by symtrain train --metrics FILE)");
    if (!out) usage_error("plot: name the picture to write with -o OUT.svg");
    if (sym_plot_svg(in, out, title)) {
        fprintf(stderr, "symtrain: plot: %s\n", sym_last_error());
        return 1;
    }
    printf("symtrain: wrote %s\n", out);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) usage_error("say what to do: train, tokenize, sample, plan, ckpt, memstore or plot");
    const char *cmd = argv[1];
    if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
        print_help();
        return 0;
    }
    if (!strcmp(cmd, "train")) return train_main(argc - 2, argv + 2);
    if (!strcmp(cmd, "plot")) return plot_main(argc - 2, argv + 2);
    if (!strcmp(cmd, "tokenize")) return sym_cli_tokenize(argc - 2, argv + 2);
    if (!strcmp(cmd, "sample")) return sym_cli_sample(argc - 2, argv + 2);
    /* ---- plan (issue 17, the planner: tools/symtrain_plan.c) ---- */
    if (!strcmp(cmd, "plan")) return sym_cli_plan(argc - 2, argv + 2);
    /* ---- ckpt (issue 18, inspect / verify checkpoints: tools/symtrain_ckpt.c) ---- */
    if (!strcmp(cmd, "ckpt")) return sym_cli_ckpt(argc - 2, argv + 2);
    /* ---- memstore (issue 18, the snapshot store's holder: tools/symtrain_memstore.c) ---- */
    if (!strcmp(cmd, "memstore")) return sym_cli_memstore(argc - 2, argv + 2);
    usage_error("unknown command '%s'; use train, tokenize, sample, plan, ckpt, memstore or plot",
                cmd);
}
