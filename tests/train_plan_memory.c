/*
 * train_plan_memory — the planner's memory per PE against what `symtrain
 * train` allocates, layout by layout: each run's start line reports the
 * largest PE's bytes by kind from the allocators (pool blocks, optimizer
 * arrays), and `symtrain plan --device cpu --layout L` must predict the total
 * within 10% (and each kind within 10% where every PE holds the same: no
 * pipeline).
 *
 *   train_plan_memory SYMRUN SYMTRAIN [LAYOUT[:TRAIN ARGS]]...
 *
 * Without layouts: every layout `symtrain train` runs on 1, 2 and 4 PEs:
 * dp=1, dp=2, dp=4 with ZeRO 0, 1, 2 and with two micro-batches,
 * dp=2,tp=2, tp=4, and the pipelines dp=2,pp=2, pp=4, tp=2,pp=2 (with the
 * default micro-batches, one a stage) and dp=2,pp=2 with 4; ZeRO 1 and 2 inside
 * dp=2,tp=2, ZeRO 1 inside dp=2,pp=2, dp=2,tp=2 with two micro-batches, and
 * dp=2,pp=2 with 4 micro-batches and 2 interleaved virtual stages.
 * A layout is the planner's (dp=N,tp=M,pp=K[,micro=M,zero=Z,virtual=V]); it runs as
 * `--parallel dp=N,tp=M,pp=K` where tp or pp > 1, micro=M as --micro-batches M,
 * zero=Z as --zero Z, virtual=V as --virtual-stages V; what follows ':' is
 * passed to `symtrain train` as well, so the layouts of the other issue-17
 * branches can be added once they are merged:
 *   train_plan_memory build/symrun build/symtrain dp=2,tp=2,zero=1 "tp=2,pp=2,micro=4"
 */
#include "train_e2e.h"

#define MODEL "gpt:L=4,C=64,H=4,V=128,T=32"
#define BATCH 8

static const char *const kinds[5] = {"params", "grads", "optim", "acts", "total"};

/* "1.5 MiB" -> bytes; *unit the unit's bytes (the printed value is within 0.05 of them) */
static double size_at(const char *p, double *unit) {
    char *end;
    double v = strtod(p, &end);
    while (*end == ' ') end++;
    double mul = !strncmp(end, "KiB", 3) ? 1024.0
                 : !strncmp(end, "MiB", 3) ? 1048576.0
                 : !strncmp(end, "GiB", 3) ? 1073741824.0
                                           : 1.0;
    *unit = mul;
    return v * mul;
}

/* The training run's memory line: kinds (rounded as printed) and the exact total. */
static void measured(const char *log, double out[5], double unit[4]) {
    char *s = e2e_read(log, NULL);
    CHECK(s != NULL, "cannot read %s", log);
    char *at = strstr(s, "memory per PE (the largest PE's, from the allocators): ");
    if (!at) e2e_show(log);
    CHECK(at != NULL, "%s has no memory line", log);
    static const char *const label[4] = {"parameters ", "gradients ", "optimizer state ",
                                         "activations "};
    for (int i = 0; i < 4; i++) {
        char *p = strstr(at, label[i]);
        CHECK(p != NULL, "the memory line lacks %s", label[i]);
        out[i] = size_at(p + strlen(label[i]), &unit[i]);
    }
    char *b = strstr(at, " in all (");
    CHECK(b != NULL, "the memory line lacks its total");
    out[4] = strtod(b + 9, NULL);
    free(s);
}

static double json_num(const char *s, const char *key) {
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *at = strstr(s, pat);
    CHECK(at != NULL, "no %s in the plan", key);
    return strtod(at + strlen(pat), NULL);
}

int main(int argc, char **argv) {
    e2e_init(argc, argv, "train_plan_memory");
    static const char *const dflt[] = {"dp=1",       "dp=2",        "dp=4",
                                       "dp=4,zero=1", "dp=4,zero=2", "dp=4,micro=2",
                                       "dp=2,tp=2",  "tp=4",        "dp=2,pp=2",
                                       "pp=4",       "tp=2,pp=2",   "dp=2,pp=2,micro=4",
                                       "dp=2,tp=2,zero=1", "dp=2,tp=2,zero=2", "dp=2,pp=2,zero=1",
                                       "dp=2,tp=2,micro=2", "dp=2,pp=2,micro=4,virtual=2"};
    int n = argc > 3 ? argc - 3 : (int)(sizeof dflt / sizeof *dflt);
    for (int li = 0; li < n; li++) {
        char spec[256], extra[256] = "";
        snprintf(spec, sizeof spec, "%s", argc > 3 ? argv[3 + li] : dflt[li]);
        char *colon = strchr(spec, ':');
        if (colon) {
            snprintf(extra, sizeof extra, "%s", colon + 1);
            *colon = '\0';
        }
        int dp = 1, tp = 1, pp = 1, micro = 0, zero = 0, virt = 0;
        for (char *t = spec; t && *t; t = strchr(t, ',') ? strchr(t, ',') + 1 : NULL) {
            if (!strncmp(t, "dp=", 3)) dp = atoi(t + 3);
            if (!strncmp(t, "tp=", 3)) tp = atoi(t + 3);
            if (!strncmp(t, "pp=", 3)) pp = atoi(t + 3);
            if (!strncmp(t, "micro=", 6)) micro = atoi(t + 6);
            if (!strncmp(t, "zero=", 5)) zero = atoi(t + 5);
            if (!strncmp(t, "virtual=", 8)) virt = atoi(t + 8);
        }
        int pes = dp * tp * pp;
        CHECK(pes >= 1 && pes <= 16, "layout %s: %d PEs", spec, pes);
        char args[1024], par[192] = "";
        size_t at = 0;
        if (tp > 1 || pp > 1)
            at += (size_t)snprintf(par + at, sizeof par - at, " --parallel dp=%d,tp=%d,pp=%d", dp,
                                   tp, pp);
        if (micro)
            at += (size_t)snprintf(par + at, sizeof par - at, " --micro-batches %d", micro);
        if (virt)
            at += (size_t)snprintf(par + at, sizeof par - at, " --virtual-stages %d", virt);
        if (zero) snprintf(par + at, sizeof par - at, " --zero %d", zero);
        snprintf(args, sizeof args,
                 "--generated --model " MODEL " --batch %d --max-steps 1 --test-samples 4 --threads 1 --lr 0.01%s %s",
                 BATCH, par, extra);
        const char *log = e2e_path("train-%d.log", li);
        e2e_run(pes, NULL, NULL, log, 0, args);
        double got[5], unit[4];
        measured(log, got, unit);

        const char *plog = e2e_path("plan-%d.json", li);
        int rc = e2e_sh(plog, "%s plan --device cpu --no-measure --model " MODEL " --pes %d --batch %d "
                        "--layout %s --device-mem 1T --json", e2e_symtrain, pes, BATCH, spec);
        if (rc) e2e_show(plog);
        CHECK(rc == 0, "symtrain plan --layout %s: exit %d", spec, rc);
        char *s = e2e_read(plog, NULL);
        const char *lay = strstr(s, "\"layouts\":");
        CHECK(lay != NULL, "no layouts in the plan");
        double want[5];
        for (int k = 0; k < 5; k++) want[k] = json_num(strstr(lay, "\"mem\":"), kinds[k]);
        printf("%-24s measured / predicted bytes:", spec);
        for (int k = 0; k < 5; k++) printf(" %s %.0f / %.0f", kinds[k], got[k], want[k]);
        printf("\n");
        double rel = fabs(want[4] - got[4]) / got[4];
        CHECK(rel <= 0.10, "layout %s: predicted %.0f bytes a PE, measured %.0f (%.1f%% off)", spec,
              want[4], got[4], 100 * rel);
        if (pp == 1)
            for (int k = 0; k < 4; k++) {
                /* 10%, plus the printed kind's rounding (0.05 of its unit) */
                CHECK(fabs(want[k] - got[k]) <= 0.10 * got[k] + 0.05 * unit[k],
                      "layout %s: %s predicted %.0f, measured %.0f", spec, kinds[k], want[k],
                      got[k]);
            }
        free(s);
    }
    e2e_cleanup();
    printf("train_plan_memory: ok\n");
    return 0;
}
