/*
 * train_ckpt_layout — checkpoints in every parallel layout of 4 PEs (and 1
 * and 2), through symrun and the CLI, a GPT of 4 blocks, fp32 AdamW:
 *
 *   train_ckpt_layout SYMRUN SYMTRAIN resume LAYOUT
 *     In LAYOUT, a reference run of 8 steps (sharded checkpoints); then the
 *     same run killed by SIGKILL (the last PE, after step 5) and restarted by
 *     `symrun --max-restarts 1`, once with sharded checkpoints and once with
 *     single-writer ones (model.bin, optim.bin: PE 0 gathers every stage's
 *     tensors): each resumes from the newest checkpoint and ends with every
 *     global tensor (weights and AdamW moments) and every loss, the replayed
 *     ones included, bit-identical to the reference.
 *
 *   train_ckpt_layout SYMRUN SYMTRAIN reshard LAYOUT
 *     Step 4 saved (sharded) in LAYOUT is loaded in every other layout, which
 *     saves it again in its own: the global tensors are the same bit for bit
 *     (resharding on load). From the next layout in the list training goes on
 *     to step 8, equal to LAYOUT's own step 8 within fp32 rounding (another
 *     layout sums its gradients and its products in another order); between
 *     dp4 and zero1 (the same sums in the same order) bit for bit.
 *
 *   train_ckpt_layout SYMRUN SYMTRAIN window
 *     The single-writer gather of a model larger than its window (below).
 *
 * LAYOUT is one of the names below; dp2tp2z1 and dp2pp2z2 (ZeRO inside tp and
 * pp) are skipped, as LAYOUT or as a target, by a build that refuses them.
 * pp2v2 and dp2pp2v2 hold two interleaved chunks a stage (--virtual-stages
 * 2): their checkpoints name the same global tensors, so they load at V=1,
 * at another pp and at dp alone, and those load in them.
 */
#include "train_dckpt.h"

/* --device cpu: the layouts' CPU sums (--device auto would take a GPU for dp4,
 * zero1 and pe1 where there is one, and their twins' bits differ there) */
#define GPT "--generated --model gpt:L=4,C=32,H=4,V=125,T=16 --batch 8 --threads 1 " \
            "--lr 0.01 --warmup-steps 2 --bucket-mb 0.01 --device cpu --quiet"
#define STEPS 8
#define TOL 1e-5 /* |a - b| of any element: fp32 rounding, not another run */

typedef struct {
    const char *name;
    int npes;
    const char *args;
} layout_t;

static const layout_t layouts[] = {
    {"dp4", 4, "--parallel dp=4"},           {"dp2tp2", 4, "--parallel dp=2,tp=2"},
    {"dp2pp2", 4, "--parallel dp=2,pp=2"},   {"tp2pp2", 4, "--parallel tp=2,pp=2"},
    {"tp4", 4, "--parallel tp=4"},           {"pp4", 4, "--parallel pp=4"},
    {"pe1", 1, ""},                          {"zero1", 4, "--zero 1"},
    {"zero2", 2, "--zero 2"},                {"dp2tp2z1", 4, "--parallel dp=2,tp=2 --zero 1"},
    {"dp2pp2z2", 4, "--parallel dp=2,pp=2 --zero 2"},
    {"pp2v2", 2, "--parallel pp=2 --virtual-stages 2"},
    {"dp2pp2v2", 4, "--parallel dp=2,pp=2 --virtual-stages 2"},
};
#define NLAYOUTS ((int)(sizeof layouts / sizeof *layouts))

static const layout_t *find(const char *name) {
    for (int i = 0; i < NLAYOUTS; i++)
        if (!strcmp(layouts[i].name, name)) return &layouts[i];
    return NULL;
}

/* symrun -n N [opts] symtrain train GPT LAYOUT --ckpt-dir DIR EXTRA; 0 when
 * this build refuses the layout (a usage error: --zero inside tp or pp before
 * it has them),
 * else it must succeed: 1. */
static int train(const layout_t *l, const char *opts, const char *env, const char *dir,
                 const char *extra, const char *log) {
    char line[2048];
    snprintf(line, sizeof line, GPT " %s --ckpt-dir %s %s", l->args, dir, extra);
    e2e_proc_t p = e2e_start(l->npes, opts, env, log, line);
    int rc = e2e_wait(&p);
    if (rc == 2 && e2e_log_has(log, "they are not in this build")) return 0; /* a usage error */
    if (rc) e2e_show(log);
    CHECK(rc == 0, "symrun -n %d symtrain train %s: exit status %d", l->npes, line, rc);
    return 1;
}

/* LAYOUT itself is refused here: SKIP, said once. */
static void skip_refused(const layout_t *l, int ran) {
    if (ran) return;
    printf("train_ckpt_layout: SKIP: this build refuses %s (%s)\n", l->name, l->args);
    e2e_cleanup();
    exit(77);
}

static void resume_case(const layout_t *l) {
    char extra[1024], env[64];
    snprintf(extra, sizeof extra, "--ckpt-format sharded --max-steps %d --ckpt-steps 4 --metrics %s",
             STEPS, e2e_path("ref.jsonl"));
    skip_refused(l, train(l, NULL, NULL, e2e_path("ref"), extra, e2e_path("ref.log")));
    snprintf(env, sizeof env, "SYMTRAIN_TEST_KILL_AT=%d:5", l->npes - 1);
    const char *format[2] = {"sharded", "single"};
    for (int f = 0; f < 2; f++) {
        const char *dir = e2e_path("crash-%s", format[f]), *log = e2e_path("crash-%s.log", format[f]);
        snprintf(extra, sizeof extra, "--ckpt-format %s --max-steps %d --ckpt-steps 2 "
                 "--resume=auto --metrics %s", format[f], STEPS, e2e_path("crash-%s.jsonl", format[f]));
        train(l, "--max-restarts 1", env, dir, extra, log);
        e2e_expect_log(log, "was killed by signal 9");
        e2e_expect_log(log, "the job succeeded after 1 restart");
        long long from = e2e_resumed_from(log);
        CHECK(from == 2 || from == 4, "%s: resumed from step %lld after a kill at step 5", l->name,
              from);
        CHECK(e2e_newest(dir, NULL, 0) == STEPS, "the restarted run ended at step %lld",
              e2e_newest(dir, NULL, 0));
        int nt = dckpt_compare(e2e_path("ref/step-%08d", STEPS),
                               e2e_path("crash-%s/step-%08d", format[f], STEPS), NULL);
        e2e_same_losses(e2e_path("ref.jsonl"), e2e_path("crash-%s.jsonl", format[f]), STEPS, 1);
        printf("train_ckpt_layout: %s, %s checkpoints: PE %d SIGKILLed after step 5, restarted "
               "from step %lld: %d tensors and %d losses bit-identical\n",
               l->name, format[f], l->npes - 1, from, nt, STEPS);
    }
}

static void reshard_case(const layout_t *l, int li) {
    char extra[1024];
    snprintf(extra, sizeof extra, "--ckpt-format sharded --max-steps %d --ckpt-steps 4", STEPS);
    skip_refused(l, train(l, NULL, NULL, e2e_path("src"), extra, e2e_path("src.log")));
    const char *src4 = e2e_path("src/step-00000004");
    int loaded = 0, nt = 0;
    for (int k = 1; k < NLAYOUTS; k++) {
        const layout_t *to = &layouts[(li + k) % NLAYOUTS];
        const char *dir = e2e_path("to-%s", to->name), *log = e2e_path("to-%s.log", to->name);
        CHECK(e2e_sh(e2e_path("cp.log"), "mkdir -p '%s' && cp -a '%s' '%s/'", dir, src4, dir) == 0,
              "copy %s", src4);
        /* the next layout trains on to the end; so does the other of dp4 and
         * zero1, which sum in the same order: bit for bit */
        int twin = (!strcmp(l->name, "dp4") && !strcmp(to->name, "zero1")) ||
                   (!strcmp(l->name, "zero1") && !strcmp(to->name, "dp4"));
        int on = k == 1 || twin;
        snprintf(extra, sizeof extra, "--ckpt-format sharded --resume --max-steps %d",
                 on ? STEPS : 4);
        if (!train(to, NULL, NULL, dir, extra, log)) {
            printf("train_ckpt_layout: this build refuses %s: not loaded there\n", to->name);
            continue;
        }
        e2e_expect_log(log, "step-00000004: step 4");
        if (to->npes == l->npes) e2e_expect_log(log, "the checkpoint was written in layout ");
        if (on) {
            double diff;
            dckpt_compare(e2e_path("src/step-%08d", STEPS), e2e_path("to-%s/step-%08d", to->name, STEPS),
                          &diff);
            CHECK(twin ? diff == 0 : diff <= TOL, "%s step 4 trained on in %s: step 8 differs "
                  "by %.3g", l->name, to->name, diff);
            printf("train_ckpt_layout: %s step 4 trained on in %s to step 8: every tensor within "
                   "%.2g of %s's own\n", l->name, to->name, diff, l->name);
            continue;
        }
        nt = dckpt_compare(src4, e2e_path("to-%s/step-00000004", to->name), NULL);
        loaded++;
    }
    printf("train_ckpt_layout: %s step 4 loaded in %d other layouts (and saved there): %d global "
           "tensors bit-identical in each\n", l->name, loaded, nt);
}

/* The single-writer gather in windows: a GPT whose parts are larger than the
 * 4 MiB symmetric window (several rounds per PE), saved at tp=2,pp=2 in one
 * file by PE 0, against the same run saved sharded and rewritten in one
 * file by 1 PE: model.bin and optim.bin byte for byte. */
static void window_case(void) {
    const char *args = "--generated --model gpt:L=2,C=256,H=4,V=125,T=16 --batch 4 --threads 1 "
                       "--lr 0.01 --quiet --max-steps 2";
    char line[2048];
    snprintf(line, sizeof line, "%s --parallel tp=2,pp=2 --ckpt-format single --ckpt-dir %s", args,
             e2e_path("single"));
    e2e_run(4, NULL, NULL, e2e_path("single.log"), 0, line);
    snprintf(line, sizeof line, "%s --parallel tp=2,pp=2 --ckpt-format sharded --ckpt-dir %s", args,
             e2e_path("sharded"));
    e2e_run(4, NULL, NULL, e2e_path("sharded.log"), 0, line);
    snprintf(line, sizeof line, "%s --ckpt-format single --resume --ckpt-dir %s", args,
             e2e_path("sharded"));
    e2e_run(1, NULL, NULL, e2e_path("one.log"), 0, line);
    e2e_expect_log(e2e_path("sharded/step-00000002/manifest.json"), "\"version\": 2,");
    e2e_same_ckpt_file(e2e_path("single"), e2e_path("sharded"), "model.bin");
    e2e_same_ckpt_file(e2e_path("single"), e2e_path("sharded"), "optim.bin");
    printf("train_ckpt_layout: a 1.6M-parameter GPT at tp=2,pp=2 gathered to PE 0 through the "
           "window: model.bin and optim.bin byte for byte those of its sharded save\n");
}

int main(int argc, char **argv) {
    if (argc == 4 && !strcmp(argv[3], "window")) {
        e2e_init(argc, argv, "train_ckpt_layout-window");
        window_case();
        e2e_cleanup();
        printf("train_ckpt_layout window: ok\n");
        return 0;
    }
    const layout_t *l = argc == 5 ? find(argv[4]) : NULL;
    if (!l || (strcmp(argv[3], "resume") && strcmp(argv[3], "reshard"))) {
        fprintf(stderr, "usage: %s SYMRUN SYMTRAIN resume|reshard LAYOUT | window\n", argv[0]);
        return 2;
    }
    char name[64];
    snprintf(name, sizeof name, "train_ckpt_layout-%s-%s", argv[3], l->name);
    e2e_init(argc, argv, name);
    if (!strcmp(argv[3], "resume"))
        resume_case(l);
    else
        reshard_case(l, (int)(l - layouts));
    e2e_cleanup();
    printf("train_ckpt_layout %s %s: ok\n", argv[3], l->name);
    return 0;
}
