/*
 * train_plan_auto — `symtrain train --parallel auto` through symrun on 4 PEs,
 * as a user runs it:
 *  - it trains, and says its layout in one line with the rates it planned
 *    with; `symtrain plan --runnable` given those rates (--flops, --mem-bw)
 *    chooses the same layout (dp, tp, pp, micro-batches, ZeRO stage);
 *  - the run is that layout's: the layout line of the loop says it, and its
 *    losses are bit-identical to a run given the layout by hand;
 *  - at batch 8 (any layout possible) and at batch 2 (dp at most 2, so the
 *    planner must split the model: tp or pp); with --virtual-stages 2 a
 *    pipeline of 2 chunks a stage, kept in --ckpt-dir's parallel-auto
 *    (",v=2") and taken from there by a --resume without the option;
 *  - with --ckpt-dir beside it (a pipeline does not checkpoint in every
 *    build) it still picks a layout that trains;
 *  - the rate is measured on the BLAS threads the run trains with (--threads);
 *  - a PE killed mid-run, the job restarted by symrun with --resume=auto: the
 *    restart keeps the layout the job started with (--ckpt-dir's
 *    parallel-auto) and ends with the weights and losses of that layout run
 *    by hand without a kill; a file there that is not a layout, or a layout
 *    this job cannot train, is said and planned again; a fresh run into
 *    that directory (refused: it holds checkpoints) leaves the file as it was;
 *  - --zero or --micro-batches beside auto: one clear message, the
 *    whole job ends.
 *
 *   train_plan_auto SYMRUN SYMTRAIN [restart]   (restart: the kill and restart only)
 */
#include "train_e2e.h"

#define MODEL "gpt:L=4,C=64,H=4,V=128,T=32"
#define STEPS 3

typedef struct {
    int dp, tp, pp, micro, zero, virt;
    double gflops, gbs;
} choice_t;

/* The "--parallel auto: ..." line of a log. */
static choice_t chosen(const char *log) {
    char *s = e2e_read(log, NULL);
    CHECK(s != NULL, "cannot read %s", log);
    const char *at = strstr(s, "--parallel auto: ");
    if (!at) e2e_show(log);
    CHECK(at != NULL, "%s does not say the layout --parallel auto chose", log);
    choice_t c;
    char mb[16];
    int n = sscanf(at, "--parallel auto: dp=%d,tp=%d,pp=%d, %d %15[a-z-], ZeRO-%d", &c.dp, &c.tp,
                   &c.pp, &c.micro, mb, &c.zero);
    CHECK(n == 6, "cannot read the layout in: %.200s", at);
    const char *v = strstr(at, "ZeRO-");
    c.virt = 1;
    sscanf(v, "ZeRO-%*d, %d virtual stages", &c.virt);
    const char *r = strstr(at, "CPU measured on PE 0: ");
    CHECK(r != NULL, "the line does not say the rates: %.300s", at);
    CHECK(sscanf(r, "CPU measured on PE 0: %lf GFLOP/s, %lf GB/s", &c.gflops, &c.gbs) == 2,
          "cannot read the rates in: %.200s", r);
    CHECK(c.dp * c.tp * c.pp == 4, "layout dp=%d tp=%d pp=%d is not 4 PEs", c.dp, c.tp, c.pp);
    CHECK(c.gflops > 0 && c.gbs > 0, "rates %g GFLOP/s, %g GB/s", c.gflops, c.gbs);
    free(s);
    return c;
}

static int json_int(const char *p, const char *key) {
    char pat[32];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *at = strstr(p, pat);
    CHECK(at != NULL, "no %s in the plan", key);
    return atoi(at + strlen(pat));
}

/* `symtrain plan` with the run's rates (and its --virtual-stages, `virt` > 0)
 * chooses the same layout. */
static void same_as_plan(const choice_t *c, int batch, int tag, int virt_given) {
    const char *log = e2e_path("plan-%d.json", tag);
    char extra[32] = "";
    if (virt_given) snprintf(extra, sizeof extra, "--virtual-stages %d", virt_given);
    int rc = e2e_sh(log, "%s plan --device cpu --model " MODEL " --pes 4 --batch %d --runnable "
                    "--flops %.6ge9 --mem-bw %.6ge9 --json %s", e2e_symtrain, batch, c->gflops,
                    c->gbs, extra);
    if (rc) e2e_show(log);
    CHECK(rc == 0, "symtrain plan: exit %d", rc);
    char *s = e2e_read(log, NULL);
    const char *ch = strstr(s, "\"runnable_choice\":{");
    CHECK(ch != NULL, "the plan has no runnable choice");
    int dp = json_int(ch, "dp"), tp = json_int(ch, "tp"), pp = json_int(ch, "pp");
    int micro = json_int(ch, "micro"), zero = json_int(ch, "zero"), virt = json_int(ch, "virtual");
    printf("batch %d%s%s: train chose dp=%d tp=%d pp=%d V=%d micro=%d zero=%d; symtrain plan "
           "dp=%d tp=%d pp=%d V=%d micro=%d zero=%d (%.6g GFLOP/s, %.6g GB/s)\n", batch,
           *extra ? " " : "", extra, c->dp, c->tp, c->pp, c->virt, c->micro, c->zero, dp, tp, pp,
           virt, micro, zero, c->gflops, c->gbs);
    CHECK(dp == c->dp && tp == c->tp && pp == c->pp && virt == c->virt && micro == c->micro &&
          zero == c->zero, "--parallel auto and symtrain plan chose differently");
    free(s);
}

/* An auto run at `batch` (with `extra`: --virtual-stages V, other options),
 * checked against the plan and a run of its layout by hand. */
static choice_t auto_run(int batch, int tag, const char *extra) {
    char args[1024];
    const char *log = e2e_path("auto-%d.log", tag), *met = e2e_path("auto-%d.jsonl", tag);
    snprintf(args, sizeof args, "--generated --model " MODEL " --device cpu --test-samples 4 --batch %d "
             "--max-steps %d --threads 1 --lr 0.01 --parallel auto --metrics %s %s", batch, STEPS,
             met, extra);
    e2e_run(4, NULL, NULL, log, 0, args);
    choice_t c = chosen(log);
    char line[96];
    snprintf(line, sizeof line, "layout dp=%d tp=%d pp=%d", c.dp, c.tp, c.pp);
    e2e_expect_log(log, line);
    const char *v = strstr(extra, "--virtual-stages ");
    same_as_plan(&c, batch, tag, v ? atoi(v + 17) : 0);

    char by_hand[256];
    size_t at = (size_t)snprintf(by_hand, sizeof by_hand, "--parallel dp=%d,tp=%d,pp=%d", c.dp,
                                 c.tp, c.pp);
    if (c.pp > 1 || c.micro > 1)
        at += (size_t)snprintf(by_hand + at, sizeof by_hand - at, " --micro-batches %d", c.micro);
    if (c.zero) at += (size_t)snprintf(by_hand + at, sizeof by_hand - at, " --zero %d", c.zero);
    if (c.virt > 1) snprintf(by_hand + at, sizeof by_hand - at, " --virtual-stages %d", c.virt);
    const char *hlog = e2e_path("hand-%d.log", tag), *hmet = e2e_path("hand-%d.jsonl", tag);
    snprintf(args, sizeof args, "--generated --model " MODEL " --device cpu --test-samples 4 --batch %d "
             "--max-steps %d --threads 1 --lr 0.01 %s --metrics %s", batch, STEPS, by_hand, hmet);
    e2e_run(4, NULL, NULL, hlog, 0, args);
    e2e_same_losses(hmet, met, STEPS, 0);
    return c;
}

/* Kill PE 1 at step 3 of 6 (checkpoints every 2), symrun restarts the job. */
static void restart_keeps_layout(void) {
    const char *ck = e2e_path("crash"), *log = e2e_path("crash.log"), *met = e2e_path("crash.jsonl");
    char args[1024];
    snprintf(args, sizeof args, "--generated --model " MODEL " --device cpu --test-samples 4 "
             "--batch 2 --steps 6 --threads 1 --lr 0.01 --parallel auto --ckpt-dir %s "
             "--ckpt-steps 2 --resume=auto --metrics %s", ck, met);
    e2e_run(4, "--max-restarts 1", "SYMTRAIN_TEST_KILL_AT=1:3", log, 0, args);
    e2e_expect_log(log, "restarting the job (restart 1 of 1)");
    choice_t c = chosen(log); /* the first attempt's */
    char kept[256];
    snprintf(kept, sizeof kept, "--parallel auto: dp=%d,tp=%d,pp=%d, %d micro-batch%s, ZeRO-%d, "
             "kept from %s/parallel-auto", c.dp, c.tp, c.pp, c.micro, c.micro == 1 ? "" : "es",
             c.zero, ck);
    e2e_expect_log(log, kept);
    CHECK(e2e_count(log, "--parallel auto: ") == 2, "%s: not one choice an attempt", log);

    const char *ref = e2e_path("ref"), *rmet = e2e_path("ref.jsonl");
    char by_hand[128];
    snprintf(by_hand, sizeof by_hand, "--parallel dp=%d,tp=%d,pp=%d%s", c.dp, c.tp, c.pp,
             c.zero ? (c.zero == 1 ? " --zero 1" : " --zero 2") : "");
    CHECK(c.micro == 1, "batch 2: %d micro-batches", c.micro);
    snprintf(args, sizeof args, "--generated --model " MODEL " --device cpu --test-samples 4 "
             "--batch 2 --steps 6 --threads 1 --lr 0.01 %s --ckpt-dir %s --metrics %s", by_hand,
             ref, rmet);
    e2e_run(4, NULL, NULL, e2e_path("ref.log"), 0, args);
    CHECK(e2e_newest(ck, NULL, 0) == 6 && e2e_newest(ref, NULL, 0) == 6, "not both at step 6");
    e2e_same_ckpt_file(ref, ck, "model.bin");
    e2e_same_losses(rmet, met, 6, 0);

    /* what parallel-auto holds is checked, not trusted */
    static const char *const bad[] = {"tp=4\n", "dp=8,tp=1,pp=1,micro=1,zero=0\n",
                                      "dp=2,tp=1,pp=2,micro=1,zero=0,v=x\n",
                                      "dp=2,tp=1,pp=2,micro=1,zero=0,v=2\n"};
    static const char *const said[] = {"is not a layout", "which does not train this job",
                                       "is not a layout", "which does not train this job"};
    for (int i = 0; i < 4; i++) {
        char path[600];
        snprintf(path, sizeof path, "%s/parallel-auto", ck);
        FILE *f = fopen(path, "w");
        CHECK(f && fputs(bad[i], f) >= 0 && fclose(f) == 0, "cannot write %s", path);
        log = e2e_path("bad-%d.log", i);
        snprintf(args, sizeof args, "--generated --model " MODEL " --device cpu --test-samples 4 "
                 "--batch 2 --steps %d --threads 1 --lr 0.01 --parallel auto --ckpt-dir %s "
                 "--ckpt-steps 2 --resume", 8 + 2 * i, ck);
        e2e_run(4, NULL, NULL, log, 0, args);
        e2e_expect_log(log, said[i]);
        chosen(log);
        char *s = e2e_read(path, NULL);
        CHECK(s && !strncmp(s, "dp=", 3) && strstr(s, ",zero="), "%s holds '%s' after planning "
              "again", path, s ? s : "");
        free(s);
    }
    /* a fresh run into that directory is refused, and leaves what its job kept */
    char path[600];
    snprintf(path, sizeof path, "%s/parallel-auto", ck);
    char *before = e2e_read(path, NULL);
    snprintf(args, sizeof args, "--generated --model " MODEL " --device cpu --test-samples 4 "
             "--batch 8 --steps 2 --threads 1 --parallel auto --ckpt-dir %s", ck);
    e2e_run(4, NULL, NULL, e2e_path("fresh.log"), 1, args);
    e2e_expect_log(e2e_path("fresh.log"), "holds checkpoints of an earlier run");
    char *after = e2e_read(path, NULL);
    CHECK(before && after && !strcmp(before, after), "%s changed from '%s' to '%s'", path,
          before ? before : "", after ? after : "");
    free(before);
    free(after);
}

int main(int argc, char **argv) {
    e2e_init(argc, argv, "train_plan_auto");
    if (argc > 3 && !strcmp(argv[3], "restart")) { /* ctest train_plan_auto_restart */
        restart_keeps_layout();
        e2e_cleanup();
        printf("train_plan_auto restart: ok\n");
        return 0;
    }

    auto_run(8, 0, "");
    choice_t small = auto_run(2, 1, "");
    CHECK(small.dp <= 2 && small.tp * small.pp >= 2,
          "batch 2 on 4 PEs: dp=%d tp=%d pp=%d (dp is at most the batch)", small.dp, small.tp,
          small.pp);

    /* --virtual-stages beside auto: pipelines of that many chunks a stage alone;
     * the choice kept (",v=2") and taken by a --resume that does not repeat it */
    const char *vck = e2e_path("virt");
    char vextra[700];
    snprintf(vextra, sizeof vextra, "--virtual-stages 2 --ckpt-dir %s --ckpt-steps %d", vck, STEPS);
    choice_t v = auto_run(8, 2, vextra);
    CHECK(v.pp > 1 && v.virt == 2, "--virtual-stages 2: dp=%d tp=%d pp=%d with %d virtual stages",
          v.dp, v.tp, v.pp, v.virt);
    e2e_expect_log(e2e_path("auto-2.log"), "virtual stages (chunk c on stage");
    char vpath[700], want[128];
    snprintf(vpath, sizeof vpath, "%s/parallel-auto", vck);
    snprintf(want, sizeof want, "dp=%d,tp=%d,pp=%d,micro=%d,zero=%d,v=2\n", v.dp, v.tp, v.pp,
             v.micro, v.zero);
    char *vkept = e2e_read(vpath, NULL);
    CHECK(vkept && !strcmp(vkept, want), "%s holds '%s', not '%s'", vpath, vkept ? vkept : "",
          want);
    free(vkept);
    const char *vlog = e2e_path("virt-resume.log");
    char args[512];
    snprintf(args, sizeof args, "--generated --model " MODEL " --device cpu --test-samples 4 "
             "--batch 8 --max-steps %d --threads 1 --lr 0.01 --parallel auto --ckpt-dir %s "
             "--resume", STEPS + 2, vck);
    e2e_run(4, NULL, NULL, vlog, 0, args);
    snprintf(want, sizeof want, "--parallel auto: dp=%d,tp=%d,pp=%d, %d micro-batches, ZeRO-%d, "
             "2 virtual stages, kept from", v.dp, v.tp, v.pp, v.micro, v.zero);
    e2e_expect_log(vlog, want);
    e2e_expect_log(vlog, "virtual stages (chunk c on stage");

    /* beside --ckpt-dir: a layout that trains and checkpoints */
    const char *log = e2e_path("ckpt.log"), *ck = e2e_path("ck");
    snprintf(args, sizeof args, "--generated --model " MODEL " --device cpu --test-samples 4 --batch 2 --max-steps "
             "%d --threads 1 --parallel auto --ckpt-dir %s --ckpt-steps %d", STEPS, ck, STEPS);
    e2e_run(4, NULL, NULL, log, 0, args);
    chosen(log);
    CHECK(e2e_newest(ck, NULL, 0) == STEPS, "no checkpoint of step %d in %s", STEPS, ck);

    /* one PE: its rate measured on the --threads it trains with, not the host's cores */
    log = e2e_path("one.log");
    e2e_run(1, NULL, NULL, log, 0, "--generated --model " MODEL " --device cpu --test-samples 4 "
            "--batch 2 --max-steps 1 --threads 1 --parallel auto");
    e2e_expect_log(log, "GB/s a PE (1 BLAS thread, 1 PE on ");

    /* what auto chooses may not be given beside it */
    static const char *const fixed[] = {"--zero 1", "--micro-batches 2"};
    for (int i = 0; i < 2; i++) {
        log = e2e_path("fixed-%d.log", i);
        snprintf(args, sizeof args, "--generated --model " MODEL " --device cpu --test-samples 4 --batch 8 "
                 "--max-steps 1 --threads 1 --parallel auto %s", fixed[i]);
        e2e_run(4, NULL, NULL, log, 1, args);
        e2e_expect_log(log, "--parallel auto chooses the ZeRO stage and the micro-batches itself");
        CHECK(e2e_count(log, "--parallel auto chooses") == 1, "%s: the message is not said once",
              log);
    }
    e2e_cleanup();
    printf("train_plan_auto: ok\n");
    return 0;
}
