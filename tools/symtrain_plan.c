/*
 * symtrain_plan.c — `symtrain plan`: the layouts of a GPT over PEs, their
 * memory per PE and predicted step time, which fit, the fastest
 * (src/train/parallel/plan.c does the arithmetic; this file asks and prints).
 *
 *   symtrain plan --model gpt:d48 --pes 8 --device-mem 141G [--link nvlink]
 *                 [--batch B --seq T] [--device gpu|cpu] [--json]
 *
 * No runtime is started: the planner runs anywhere, for machines it is not on.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <symtrain/symtrain.h>

#include "symtrain_cli.h"

#define EXIT_USAGE 2

static const char plan_usage[] =
    "usage: symtrain plan --model gpt:SPEC --pes N [options]\n"
    "\n"
    "The layouts of a GPT over N PEs (dp x tp x pp, micro-batches, ZeRO stage, recompute),\n"
    "each with its memory per PE (parameters, gradients, optimizer state, activations) and\n"
    "predicted step time; those that do not fit are marked, and the fastest is chosen.\n"
    "\n"
    "  --model SPEC          gpt:d12|d24|d36|d48 or gpt:L=..,C=..,H=..,V=..,T=..\n"
    "  --pes N               PEs in all (default 1)\n"
    "  --device gpu|cpu      (default gpu: one H200 a PE, recorded figures; cpu: this\n"
    "                        machine's, measured now)\n"
    "  --device-mem SIZE     memory a PE may use: 141G, 512M (powers of 1024; default gpu\n"
    "                        140G, an H200's 143,771 MiB; cpu: this machine's memory / PEs)\n"
    "  --batch B             global batch in sequences (default 16)\n"
    "  --seq T               tokens a sequence (default the model's context)\n"
    "  --optimizer adamw|sgd (default adamw)\n"
    "  --link NAME           the link within a node: nvlink, pcie, tcp, ib, shm (default gpu\n"
    "                        nvlink, cpu shm)\n"
    "  --inter-link NAME     the link between nodes (default gpu ib, cpu tcp)\n"
    "  --pes-per-node N      PEs a node (default gpu 8, cpu all)\n"
    "  --bucket-mb MB        gradient all-reduce bucket (default 25)\n"
    "  --whole-vocab         TP keeps the embedding and LM head whole on every PE (our TP\n"
    "                        splits them by vocabulary rows)\n"
    "  --runnable            choose only layouts our code trains today on this device\n"
    "  --no-measure          cpu: use the assumed rates (20 GFLOP/s, 10 GB/s a PE) instead\n"
    "                        of measuring this machine (about a second)\n"    "  --flops RATE          the compute rate a PE, FLOP/s (12.5e9): instead of the\n"
    "                        recorded or measured one (symtrain train --parallel auto\n"
    "                        prints the rates it planned with)\n"
    "  --mem-bw RATE         the optimizer pass's memory rate a PE, bytes/s (5e9)\n"
    "  --virtual-stages V    only pipelines, with V interleaved chunks a stage (symtrain\n"
    "                        train --virtual-stages: the smaller bubble (pp-1)/(Vm), more\n"
    "                        activations in flight); 1: none (default: every V the layers\n"
    "                        and micro-batches allow, 1 included)\n"
    "  --layout L            only this layout: dp=N,tp=M,pp=K[,micro=M,zero=Z,recompute=0|1,\n"
    "                        virtual=V] (micro: micro-batches, default K as in symtrain train)\n"
    "  --all                 list every layout (default: the 20 fastest that fit and the 5\n"
    "                        smallest that do not)\n"
    "  --json                one JSON document instead of the table\n";

static int bad(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int bad(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("symtrain plan: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputs("\n(symtrain plan --help lists the options)\n", stderr);
    va_end(ap);
    return EXIT_USAGE;
}

static int whole(const char *s, long lo, long hi, long *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

/* "12.5e9": a positive finite rate */
static int rate_value(const char *s, double *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v > 0) || !isfinite(v)) return -1;
    *out = v;
    return 0;
}

/* "141G", "512M", "1.5T", "1048576": bytes (powers of 1024) */
static int size_value(const char *s, size_t *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || !(v > 0) || !isfinite(v)) return -1;
    double mul = 1;
    switch (*end) {
    case 'k': case 'K': mul = 1024.0; end++; break;
    case 'm': case 'M': mul = 1048576.0; end++; break;
    case 'g': case 'G': mul = 1073741824.0; end++; break;
    case 't': case 'T': mul = 1099511627776.0; end++; break;
    }
    if (*end == 'i') end++;
    if (*end == 'B' || *end == 'b') end++;
    if (*end || v * mul > 1e18) return -1;
    *out = (size_t)(v * mul);
    return 0;
}

/* "dp=2,tp=2,pp=1,micro=2,zero=1,recompute=0" (any subset; missing 1, zero 0;
 * micro missing: pp, the micro-batches `symtrain train --parallel` takes) */
static int layout_value(const char *s, sym_plan_layout_t *l) {
    *l = (sym_plan_layout_t){1, 1, 1, 0, 0, 0, 0};
    const char *p = s;
    while (*p) {
        char key[16];
        size_t n = strcspn(p, "=");
        if (!p[n] || n >= sizeof key) return -1;
        memcpy(key, p, n);
        key[n] = '\0';
        char *end;
        errno = 0;
        long v = strtol(p + n + 1, &end, 10);
        if (errno || end == p + n + 1 || v < 0 || v > 1 << 20) return -1;
        if (!strcmp(key, "dp")) l->dp = (int)v;
        else if (!strcmp(key, "tp")) l->tp = (int)v;
        else if (!strcmp(key, "pp")) l->pp = (int)v;
        else if (!strcmp(key, "micro")) l->micro = (int)v;
        else if (!strcmp(key, "zero")) l->zero = (int)v;
        else if (!strcmp(key, "recompute")) l->recompute = (int)v;
        else if (!strcmp(key, "virtual")) l->virtual_stages = (int)v;
        else return -1;
        p = end;
        if (*p == ',') p++;
        else if (*p) return -1;
    }
    if (!l->micro) l->micro = l->pp;
    return 0;
}

static int cpu_cores(void) {
    cpu_set_t set;
    int cpus = 1;
    if (sched_getaffinity(0, sizeof set, &set) == 0) cpus = CPU_COUNT(&set);
    return cpus;
}

static const char *gib(size_t b, char *buf, size_t len) {
    if (b >= (1ull << 30)) snprintf(buf, len, "%.2fG", (double)b / (1ull << 30));
    else snprintf(buf, len, "%.1fM", (double)b / (1ull << 20));
    return buf;
}

static void json_str(const char *s) {
    putchar('"');
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') printf("\\%c", *s);
        else if (*s == '\n') fputs("\\n", stdout);
        else putchar(*s);
    }
    putchar('"');
}

static void json_layout(const sym_plan_result_t *e) {
    const sym_plan_layout_t *l = &e->layout;
    printf("{\"dp\":%d,\"tp\":%d,\"pp\":%d,\"virtual\":%d,\"micro\":%d,\"zero\":%d,"
           "\"recompute\":%d,\"rows\":%d,"
           "\"params_local\":%zu,\"mem\":{\"params\":%zu,\"grads\":%zu,\"optim\":%zu,"
           "\"acts\":%zu,\"total\":%zu},\"fits\":%s,\"time\":{\"compute\":%.6g,\"bubble\":%.6g,"
           "\"tp\":%.6g,\"pp\":%.6g,\"dp\":%.6g,\"dp_total\":%.6g,\"optim\":%.6g,\"step\":%.6g},"
           "\"bubble_share\":%.6g,\"crosses_nodes\":{\"tp\":%s,\"pp\":%s,\"dp\":%s},\"needs\":",
           l->dp, l->tp, l->pp, l->virtual_stages > 1 ? l->virtual_stages : 1, l->micro, l->zero,
           l->recompute, e->rows, e->params_local,
           e->mem.params, e->mem.grads, e->mem.optim, e->mem.acts, e->mem.total,
           e->fits ? "true" : "false", e->t_compute, e->t_bubble, e->t_tp, e->t_pp, e->t_dp,
           e->t_dp_total, e->t_optim, e->t_step, e->bubble, e->tp_inter ? "true" : "false",
           e->pp_inter ? "true" : "false", e->dp_inter ? "true" : "false");
    json_str(e->needs);
    putchar('}');
}

static void row(const sym_plan_result_t *e) {
    const sym_plan_layout_t *l = &e->layout;
    char a[5][24];
    printf("%4d %3d %3d %2d %5d %4d %4s  %8s %8s %8s %8s %8s  %-4s %9.2f %7.2f %7.2f %7.2f %7.2f "
           "%6.2f %9.2f%s%s\n",
           l->dp, l->tp, l->pp, l->virtual_stages > 1 ? l->virtual_stages : 1, l->micro, l->zero, l->recompute ? "on" : "off",
           gib(e->mem.params, a[0], 24), gib(e->mem.grads, a[1], 24), gib(e->mem.optim, a[2], 24),
           gib(e->mem.acts, a[3], 24), gib(e->mem.total, a[4], 24), e->fits ? "yes" : "NO",
           e->t_compute * 1e3, e->t_bubble * 1e3, e->t_tp * 1e3, e->t_pp * 1e3, e->t_dp * 1e3,
           e->t_optim * 1e3, e->t_step * 1e3, e->needs[0] ? "  " : "", e->needs);
}

static void say_choice(const char *what, const sym_plan_result_t *e) {
    const sym_plan_layout_t *l = &e->layout;
    char t[24];
    char v[32] = "";
    if (l->virtual_stages > 1) snprintf(v, sizeof v, " x %d virtual stages", l->virtual_stages);
    printf("%s: dp=%d,tp=%d,pp=%d%s, %d micro-batch%s of %d sequence%s, ZeRO-%d, recompute %s: "
           "%.2f ms a step, %s a PE%s%s\n",
           what, l->dp, l->tp, l->pp, v, l->micro, l->micro == 1 ? "" : "es", e->rows,
           e->rows == 1 ? "" : "s", l->zero, l->recompute ? "on" : "off", e->t_step * 1e3,
           gib(e->mem.total, t, sizeof t), e->needs[0] ? "; needs " : "", e->needs);
}

int sym_cli_plan(int argc, char **argv) {
    const char *model = NULL, *link = NULL, *inter = NULL, *device = "gpu", *layout_s = NULL;
    long pes = 1, batch = 16, seq = 0, ppn = -1, virt = 0;
    size_t mem = 0;
    double bucket_mb = 25, flops = 0, mem_bw = 0;
    int json = 0, all = 0, vp = 1, runnable = 0, sgd = 0, measure = 1;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(plan_usage, stdout);
            return 0;
        }
        if (!strcmp(a, "--json")) { json = 1; continue; }
        if (!strcmp(a, "--all")) { all = 1; continue; }
        if (!strcmp(a, "--whole-vocab")) { vp = 0; continue; }
        if (!strcmp(a, "--runnable")) { runnable = 1; continue; }
        if (!strcmp(a, "--no-measure")) { measure = 0; continue; }
        static const char *const valued[] = {"--model", "--pes", "--device", "--device-mem",
                                             "--batch", "--seq", "--optimizer", "--link",
                                             "--inter-link", "--pes-per-node", "--bucket-mb",
                                             "--layout", "--flops", "--mem-bw",
                                             "--virtual-stages", NULL};
        int known = 0;
        for (int k = 0; valued[k]; k++) known |= !strcmp(a, valued[k]);
        if (!known) return bad("unknown option '%s'", a);
        if (i + 1 >= argc) return bad("%s needs a value", a);
        const char *v = argv[++i];
        if (!strcmp(a, "--model")) model = v;
        else if (!strcmp(a, "--device")) device = v;
        else if (!strcmp(a, "--link")) link = v;
        else if (!strcmp(a, "--inter-link")) inter = v;
        else if (!strcmp(a, "--layout")) layout_s = v;
        else if (!strcmp(a, "--pes") && whole(v, 1, 1 << 20, &pes))
            return bad("--pes '%s': expected a whole number from 1 to %d", v, 1 << 20);
        else if (!strcmp(a, "--virtual-stages") && whole(v, 1, 32, &virt))
            return bad("--virtual-stages '%s': expected a whole number from 1 to 32", v);
        else if (!strcmp(a, "--batch") && whole(v, 1, 1 << 24, &batch))
            return bad("--batch '%s': expected a whole number from 1 to %d", v, 1 << 24);
        else if (!strcmp(a, "--seq") && whole(v, 1, 1 << 20, &seq))
            return bad("--seq '%s': expected a whole number from 1 to %d", v, 1 << 20);
        else if (!strcmp(a, "--pes-per-node") && whole(v, 1, 1 << 20, &ppn))
            return bad("--pes-per-node '%s': expected a whole number from 1", v);
        else if (!strcmp(a, "--device-mem") && size_value(v, &mem))
            return bad("--device-mem '%s': expected a size such as 141G or 512M", v);
        else if ((!strcmp(a, "--flops") || !strcmp(a, "--mem-bw")) &&
                 rate_value(v, a[2] == 'f' ? &flops : &mem_bw))
            return bad("%s '%s': expected a positive rate such as 12.5e9", a, v);
        else if (!strcmp(a, "--bucket-mb")) {
            char *end;
            bucket_mb = strtod(v, &end);
            if (end == v || *end || !(bucket_mb > 0) || bucket_mb > 1 << 20)
                return bad("--bucket-mb '%s': expected a positive number of MiB", v);
        } else if (!strcmp(a, "--optimizer")) {
            if (!strcmp(v, "sgd")) sgd = 1;
            else if (strcmp(v, "adamw")) return bad("--optimizer '%s': use adamw or sgd", v);
        }
    }
    if (!model) return bad("name the model: --model gpt:d48 (or gpt:L=..,C=..,H=..,V=..,T=..)");
    sym_plan_device_t dev;
    if (!strcmp(device, "gpu")) dev = SYM_PLAN_GPU;
    else if (!strcmp(device, "cpu")) dev = SYM_PLAN_CPU;
    else return bad("--device '%s': use gpu or cpu", device);
    sym_plan_request_t r;
    sym_plan_defaults(&r, dev);
    if (sym_model_parse(model, &r.model)) return bad("%s", sym_last_error());
    if (r.model.kind != SYM_MODEL_GPT) return bad("--model '%s': the planner plans a GPT", model);
    if (seq > r.model.max_seq)
        return bad("--seq %ld is longer than the model's context (%d)", seq, r.model.max_seq);
    r.pes = (int)pes;
    r.batch = (int)batch;
    r.seq = (int)seq;
    r.optimizer = sgd ? SYM_OPT_SGD : SYM_OPT_ADAMW;
    r.bucket_bytes = (size_t)(bucket_mb * 1048576.0);
    r.vocab_parallel = vp;
    r.runnable_only = runnable;
    r.virtual_stages = (int)virt;
    if (ppn > 0) r.pes_per_node = (int)ppn;
    if (dev == SYM_PLAN_CPU) r.pes_per_node = ppn > 0 ? (int)ppn : 0;
    if (link && sym_plan_link(link, &r.intra)) return bad("--link: %s", sym_last_error());
    if (inter && sym_plan_link(inter, &r.inter)) return bad("--inter-link: %s", sym_last_error());
    if (mem) {
        r.device_mem = mem;
    } else if (dev == SYM_PLAN_GPU) {
        r.device_mem = (size_t)143771 << 20;
    } else {
        long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
        if (pages > 0 && page > 0) r.device_mem = (size_t)pages * (size_t)page / (size_t)pes;
    }
    if (dev == SYM_PLAN_CPU && measure && !(flops > 0 && mem_bw > 0))
        sym_plan_measure_cpu(&r, cpu_cores());
    if (flops > 0) {
        r.flops = flops;
        r.flops_source = "given: --flops";
    }
    if (mem_bw > 0) {
        r.mem_bw = mem_bw;
        r.mem_bw_source = "given: --mem-bw";
    }

    sym_plan_result_t *res = NULL, one;
    int n = 0;
    if (layout_s) {
        sym_plan_layout_t l;
        if (layout_value(layout_s, &l))
            return bad("--layout '%s': write dp=N,tp=M,pp=K[,micro=M,zero=Z,recompute=0|1,"
                       "virtual=V]",
                       layout_s);
        if (sym_plan_evaluate(&r, &l, &one)) return bad("--layout %s: %s", layout_s, sym_last_error());
        res = &one;
        n = 1;
    } else if (sym_plan_candidates(&r, &res, &n)) {
        fprintf(stderr, "symtrain plan: %s\n", sym_last_error());
        return 1;
    }
    int best = -1, best_run = -1;
    for (int i = 0; i < n; i++) {
        if (res[i].fits && best < 0) best = i;
        if (res[i].fits && !res[i].needs[0] && best_run < 0) best_run = i;
    }
    int choice = runnable ? best_run : best;
    char assume[4096];
    sym_plan_assumptions(&r, assume, sizeof assume);
    size_t total = sym_plan_params(&r.model, 1, 0);
    if (json) {
        printf("{\"model\":");
        json_str(r.model.spec);
        printf(",\"params\":%zu,\"pes\":%d,\"pes_per_node\":%d,\"device\":\"%s\",\"device_mem\":%zu,"
               "\"batch\":%d,\"seq\":%d,\"rates\":{\"flops\":%.6g,\"mem_bw\":%.6g,\"intra\":{"
               "\"name\":\"%s\",\"busbw\":%.6g,\"latency\":%.6g},\"inter\":{\"name\":\"%s\","
               "\"busbw\":%.6g,\"latency\":%.6g}},\"choice\":",
               total, r.pes, r.pes_per_node ? r.pes_per_node : r.pes, device, r.device_mem,
               r.batch, r.seq ? r.seq : r.model.max_seq, r.flops, r.mem_bw, r.intra.name,
               r.intra.busbw, r.intra.latency, r.inter.name, r.inter.busbw, r.inter.latency);
        if (choice >= 0) json_layout(&res[choice]);
        else fputs("null", stdout);
        fputs(",\"runnable_choice\":", stdout);
        if (best_run >= 0) json_layout(&res[best_run]);
        else fputs("null", stdout);
        fputs(",\"layouts\":[", stdout);
        for (int i = 0; i < n; i++) {
            if (i) putchar(',');
            json_layout(&res[i]);
        }
        fputs("],\"assumptions\":[", stdout);
        int first = 1;
        for (char *line = strtok(assume, "\n"); line; line = strtok(NULL, "\n"), first = 0) {
            if (!first) putchar(',');
            json_str(line);
        }
        fputs("]}\n", stdout);
    } else {
        char m[24];
        printf("%s: %zu parameters; %d PE%s (%s, %s a PE), global batch %d x %d tokens\n",
               r.model.spec, total, r.pes, r.pes == 1 ? "" : "s", device,
               gib(r.device_mem, m, sizeof m), r.batch, r.seq ? r.seq : r.model.max_seq);
        printf("                                 memory per PE (GiB or MiB)                 "
               "predicted step (ms)\n");
        printf("  dp  tp  pp  V micro zero rcmp    params    grads    optim     acts    total  fits"
               "   compute  bubble      tp      pp      dp  optim      step  needs\n");
        int shown_fit = 0, shown_no = 0, hidden = 0;
        for (int i = 0; i < n; i++) {
            if (!all && (res[i].fits ? shown_fit++ >= 20 : shown_no++ >= 5)) {
                hidden++;
                continue;
            }
            row(&res[i]);
        }
        if (hidden) printf("(%d more layouts; --all lists them)\n", hidden);
        if (best >= 0) say_choice("choice", &res[best]);
        if (best_run >= 0 && best_run != best)
            say_choice("fastest our code trains today", &res[best_run]);
        if (best < 0)
            printf("nothing fits in %s a PE: use more PEs, a smaller --batch, or a smaller "
                   "model\n", gib(r.device_mem, m, sizeof m));
        printf("assumptions:\n");
        for (char *line = strtok(assume, "\n"); line; line = strtok(NULL, "\n"))
            printf("  %s\n", line);
    }
    if (res != &one) free(res);
    return 0;
}
