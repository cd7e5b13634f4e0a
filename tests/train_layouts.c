/*
 * train_layouts — every layout of 4 PEs, with ZeRO 0, 1 and 2 and with
 * micro-batches, trains the 1-PE GPT (issue 17's matrix), through symrun and
 * the symtrain CLI as a user runs them.
 *
 * The GPT of tests/train_gpt_pp (gpt:L=4,C=64,H=4,V=128,T=32, generated
 * corpus, global batch 8, 20 steps of AdamW with weight decay on the
 * matrices, fp32 on the CPU) at lr 0.001 (at 0.003 step 14's norm jumps to
 * 80, which carries tp=4's fp32 rounding past 2e-5), so clipping at 1 acts
 * on nearly every step; gradient buckets of 50 KB, so every part of the
 * model is reduced (or reduce-scattered) in many buckets while backward
 * runs. Each
 * run's every step's loss and both validation losses (steps 10 and 20) must
 * match the 1-PE run's to 1e-5 relative, and every gradient norm (the whole
 * model's, from the shards under ZeRO) to 2e-5 (the metrics print 6
 * digits). The comparison is not blind: the norm decides the clipping of
 * the early steps, and a run with another seed must differ by far more.
 *
 * Three cases of one program (each short on a loaded machine), each
 * running its own 1-PE reference:
 *   `train_layouts SYMRUN SYMTRAIN dp` — the one-dimensional layouts: dp=4
 *   (ZeRO 0, 1, 2, and 2 micro-batches of gradient accumulation under
 *   ZeRO-2), tp=4 (ZeRO 0, ZeRO-2 over dp=1, which shards nothing and says
 *   so, and 4 micro-batches).
 *   `... dptp` — dp=2 x tp=2 (ZeRO 0, 1, 2, and 2 micro-batches under
 *   ZeRO-1); its checkpoints under ZeRO-1 hold the gathered state: weights
 *   and optimizer state equal element for element to the unsharded run's,
 *   resumed at --zero 2 and at tp=2 on 2 PEs with the reference's losses;
 *   the old --accum refused with a pointer to --micro-batches.
 *   `... pp` — dp=2 x pp=2 (ZeRO 0, 1, 2, and 4 micro-batches under
 *   ZeRO-2), tp=2 x pp=2 and pp=4 (ZeRO 0 and 1 or 2 over dp=1), a 2-PE
 *   pipeline with 8 micro-batches (ZeRO 0 and 1).
 * Under ZeRO the start line's optimizer state per PE is its layout's
 * unsharded state over dp (up to one element per bucket), and ZeRO-2 says
 * it handed most of the full gradients back to the OS.
 *
 * Built with SYM_TEST_GPU (train_layouts_gpu, tests/gpu.cmake) the same
 * matrix trains on GPU PEs sharing the one GPU (--device gpu --precision
 * fp32, SYMTRAIN_GPU_SHARE=1) against the 1-PE GPU run: C=128 (the GPU's
 * attention takes head sizes 32, 64 and 128), losses to 1e-4 and norms to
 * 1e-3 (cuBLAS picks its reduction order by shape, so the splits round
 * apart a little), no optimizer-state lines (the CPU's); and in each part a
 * PE is killed after step 13 in one ZeRO-2 layout (dp=4, dp=2 x tp=2,
 * dp=2 x pp=2) and the job, restarted from its in-memory snapshot of step
 * 12, has every loss of the uninterrupted run, replays included.
 */
#include "train_e2e.h"

#ifdef SYM_TEST_GPU
#define NAME "train_layouts_gpu"
#define MODEL "gpt:L=4,C=128,H=4,V=128,T=32"
#define DEVICE "--device gpu --precision fp32"
#define TOL 1e-4
#define TOL_NORM 1e-3
#define SEED_DIFF (5 * TOL_NORM)
#define CKPT_TOL 1e-3 /* ZeRO-1's weights and state at step 10 beside --zero 0's */
#else
#define NAME "train_layouts"
#define MODEL "gpt:L=4,C=64,H=4,V=128,T=32"
#define DEVICE "--device cpu"
#define TOL 1e-5
#define TOL_NORM 2e-5
#define SEED_DIFF (100 * TOL_NORM)
#define CKPT_TOL TOL
#endif
#define ARGS "--generated --model " MODEL " --batch 8 --max-steps 20 --threads 1 --lr 0.001 " \
             "--warmup-steps 2 --eval-every 10 " DEVICE " --test-samples 32 --bucket-mb 0.05 "  \
             "--log-interval 1000"
#define STEPS 20

static double rel(double a, double b) { return fabs(a - b) / fmax(fabs(b), 1e-30); }

/* The 1-PE run's losses, norms and validation losses. */
static double l1[STEPS], g1[STEPS], v1[2];

#ifndef SYM_TEST_GPU /* the optimizer-state lines are the CPU's */
/* "optimizer state N bytes per PE" from a run's start line. */
static long long state_bytes(const char *log) {
    char *s = e2e_read(log, NULL), *at = s ? strstr(s, "optimizer state ") : NULL;
    if (!at) e2e_show(log);
    CHECK(at != NULL, "%s: no optimizer-state line", log);
    long long v = atoll(at + 16);
    free(s);
    return v;
}

#endif

typedef struct {
    int npes, dp;
    const char *opts, *name;
    const char *says; /* a line the log must hold (NULL: none) */
} layout_t;

/* Train L from step 0 (or `from`: its --resume, steps from + 1 .. 20) and
 * compare with the 1-PE run. */
static void check(const layout_t *L, const char *extra, int from) {
    char args[2048];
    const char *metrics = e2e_path("%s.jsonl", L->name), *log = e2e_path("%s.log", L->name);
    snprintf(args, sizeof args, ARGS " %s %s --metrics %s", L->opts, extra, metrics);
    e2e_run(L->npes, NULL, NULL, log, 0, args);
#ifdef SYM_TEST_GPU
    e2e_expect_log(log, "on the GPU: ");
    if (L->says && !strstr(L->says, "the state sharded")) e2e_expect_log(log, L->says);
#else
    if (L->says) e2e_expect_log(log, L->says);
#endif
    e2e_expect_log(log, "after 20 steps; total time");
    int n = STEPS - from;
    double l[STEPS], g[STEPS], v[2], dl = 0, dg = 0, dv = 0;
    CHECK(e2e_values(metrics, "loss", 0, l, STEPS) == n, "%s: %d steps", L->name, n);
    CHECK(e2e_values(metrics, "grad_norm", 0, g, STEPS) == n, "%s: norms", L->name);
    int ne = e2e_values(metrics, "test_loss", 1, v, 2);
    CHECK(ne == (from < 10 ? 2 : 1), "%s: %d evaluations", L->name, ne);
    for (int i = 0; i < n; i++) {
        int s = from + i;
        CHECK(rel(l[i], l1[s]) <= TOL, "%s step %d: loss %.8f, 1 PE %.8f", L->name, s + 1, l[i],
              l1[s]);
        CHECK(rel(g[i], g1[s]) <= TOL_NORM, "%s step %d: gradient norm %.6g, 1 PE %.6g",
              L->name, s + 1, g[i], g1[s]);
        dl = fmax(dl, rel(l[i], l1[s]));
        dg = fmax(dg, rel(g[i], g1[s]));
    }
    for (int k = 0; k < ne; k++) {
        int want = k + 2 - ne;
        CHECK(rel(v[k], v1[want]) <= TOL, "%s: validation loss %.6f, 1 PE %.6f", L->name, v[k],
              v1[want]);
        dv = fmax(dv, rel(v[k], v1[want]));
    }
    printf(NAME ": %-24s on %d PEs: losses within %.1e of 1 PE, norms %.1e, "
           "validation %.1e\n", L->name, L->npes, dl, dg, dv);
    fflush(stdout);
}

#ifndef SYM_TEST_GPU
/* ZeRO's state per PE: the same layout's unsharded state over dp, up to one
 * element per bucket (at most 40 of 50 KB) and state array (AdamW: 2). */
static void check_state(const char *name0, const char *name, int dp, int zero) {
    long long b0 = state_bytes(e2e_path("%s.log", name0));
    long long b = state_bytes(e2e_path("%s.log", name));
    CHECK(b0 > 0 && b * dp >= b0 && b * dp <= b0 + (long long)dp * 40 * 2 * 4,
          "%s: optimizer state %lld bytes per PE, %s %lld unsharded: expected 1/%d", name, b,
          name0, b0, dp);
    if (zero == 2) {
        char *s = e2e_read(e2e_path("%s.log", name), NULL);
        char *at = s ? strstr(s, "step 1 handed ") : NULL;
        CHECK(at != NULL, "%s: ZeRO-2 did not say what it freed", name);
        long long freed = atoll(at + 14);
        char *of = strstr(at, " of the ");
        CHECK(of != NULL, "%s: no gradient size in the ZeRO-2 line", name);
        long long full = atoll(of + 8);
        CHECK(freed > full / 2 && freed <= full,
              "%s: ZeRO-2 handed back %lld of %lld gradient bytes: expected most", name, freed,
              full);
        free(s);
    }
    printf("train_layouts: %-24s optimizer state %lld bytes per PE, %.3f of unsharded\n", name, b,
           (double)b / b0);
}

#endif

/* dp=2 x tp=2 checkpoints under ZeRO: the gathered state, any --zero and layout resumes it. */
static void checkpoints(void) {
    const char *dir[3];
    for (int z = 0; z < 2; z++) { /* 10 steps of --zero 0 and 1, each saved at step 10 */
        char args[2048];
        dir[z] = e2e_path("ck_z%d", z);
        snprintf(args, sizeof args, ARGS " --parallel dp=2,tp=2 --zero %d --max-steps 10 "
                 "--ckpt-dir %s", z, dir[z]);
        e2e_run(4, NULL, NULL, e2e_path("ck_z%d.log", z), 0, args);
    }
    /* the gathered state: element for element the unsharded one (the weights
     * too); relative, floored where entries are tiny (rounding of the small) */
    const char *files[2] = {"model.bin", "optim.bin"};
    double d = 0;
    for (int f = 0; f < 2; f++) {
        size_t n0, n1;
        float *w0 = e2e_weights(dir[0], files[f], &n0), *w1 = e2e_weights(dir[1], files[f], &n1);
        CHECK(n0 == n1 && n0 > 1000, "%s: %zu floats unsharded, %zu under ZeRO-1", files[f], n0,
              n1);
        CHECK(!f || !memcmp(w0, w1, 32), "optim.bin headers differ");
        for (size_t i = f ? 8 : 0; i < n0; i++) {
            double e = fabs((double)w1[i] - w0[i]) / fmax(fabs(w0[i]), f ? 1e-6 : 1e-2);
            CHECK(e <= CKPT_TOL, "%s: element %zu is %.9g under ZeRO-1, %.9g unsharded", files[f], i,
                  w1[i], w0[i]);
            d = fmax(d, e);
        }
        free(w0);
        free(w1);
    }
    printf("train_layouts: dp=2,tp=2 checkpoints at step 10: ZeRO-1's gathered weights and AdamW "
           "state within %.1e of --zero 0's\n", d);
    /* resumed at another --zero, and at another layout */
    char extra[1024];
    e2e_sh(e2e_path("cp.log"), "cp -r '%s' '%s'", dir[1], e2e_path("ck_z1b"));
    dir[2] = e2e_path("ck_z1b");
    const layout_t res[2] = {
        {4, 2, "--parallel dp=2,tp=2 --zero 2", "resumed_dp2tp2_z2", "resumed from "},
        {2, 1, "--parallel tp=2", "resumed_tp2_z0", "the checkpoint was written by 4 PEs"},
    };
    for (int k = 0; k < 2; k++) {
        snprintf(extra, sizeof extra, "--resume --ckpt-dir %s", dir[1 + k]);
        check(&res[k], extra, 10);
    }
}

#ifdef SYM_TEST_GPU
/* L's run again with PE `pe` killed after step 13 (the test hook), restarted
 * once from its in-memory snapshot of step 12: every loss, replays included,
 * the uninterrupted run's. */
static void killed(const layout_t *L, int pe) {
    char args[2048], env[64], dir[1024];
    snprintf(dir, sizeof dir, "%s", e2e_path("mem_%s", L->name));
    const char *log = e2e_path("killed_%s.log", L->name);
    snprintf(args, sizeof args, ARGS " %s --mem-ckpt-every 3 --resume=auto --ckpt-dir %s "
             "--metrics %s", L->opts, dir, e2e_path("killed_%s.jsonl", L->name));
    snprintf(env, sizeof env, "SYMTRAIN_TEST_KILL_AT=%d:13", pe);
    e2e_run(L->npes, "--max-restarts 1", env, log, 0, args);
    e2e_expect_log(log, "was killed by signal 9");
    e2e_expect_log(log, "in-memory snapshot of step 12 restored");
    e2e_same_losses(e2e_path("%s.jsonl", L->name), e2e_path("killed_%s.jsonl", L->name), STEPS,
                    1);
    printf(NAME ": %-24s PE %d killed after step 13: restored from the in-memory snapshot of "
           "step 12, every loss the uninterrupted run's\n", L->name, pe);
}
#endif

int main(int argc, char **argv) {
    e2e_init(argc, argv, NAME);
    CHECK(argc == 4, "usage: " NAME " SYMRUN SYMTRAIN dp|dptp|pp");
    int which = !strcmp(argv[3], "dp") ? 0 : !strcmp(argv[3], "dptp") ? 1 : 2;
    CHECK(which < 2 || !strcmp(argv[3], "pp"), "usage: " NAME " SYMRUN SYMTRAIN dp|dptp|pp");
    char args[1024];
#ifdef SYM_TEST_GPU
    snprintf(args, sizeof args, ARGS " --max-steps 1");
    e2e_gpu_first(NAME, "probe", args);
    setenv("SYMTRAIN_GPU_SHARE", "1", 1); /* several PEs on the one GPU */
#endif
    e2e_reference(ARGS, STEPS, l1, g1, 2, v1);
    int clipped = 0;
    for (int s = 0; s < STEPS; s++) clipped += g1[s] > 1.0;
    CHECK(clipped >= 3, "only %d steps clip at --clip 1: the norm is not tested", clipped);

    /* micro-batches without pp: gradient accumulation, the same option as a pipeline's */
    static const layout_t dp_layouts[] = {
        {4, 4, "--parallel dp=4", "dp4_z0", NULL},
        {4, 4, "--parallel dp=4 --zero 1", "dp4_z1", NULL},
        {4, 4, "--parallel dp=4 --zero 2", "dp4_z2", NULL},
        {4, 4, "--parallel dp=4 --micro-batches 2 --zero 2", "dp4_m2_z2",
         "2 micro-batches of 4 per step (gradients accumulated)"},
        {4, 1, "--parallel tp=4", "tp4_z0", NULL},
        {4, 1, "--parallel tp=4 --zero 2", "tp4_z2", "ZeRO-2 over dp=1: nothing to shard"},
        {4, 1, "--parallel tp=4 --micro-batches 4", "tp4_m4",
         "4 micro-batches of 2 per step (gradients accumulated)"},
    };
    static const layout_t dptp_layouts[] = {
        {4, 2, "--parallel dp=2,tp=2", "dp2tp2_z0", NULL},
        {4, 2, "--parallel dp=2,tp=2 --zero 1", "dp2tp2_z1",
         "ZeRO-1: the state sharded over the 2 PEs of each dp team"},
        {4, 2, "--parallel dp=2,tp=2 --zero 2", "dp2tp2_z2", NULL},
        {4, 2, "--parallel dp=2,tp=2 --micro-batches 2 --zero 1", "dp2tp2_m2_z1", NULL},
    };
    static const layout_t pp_layouts[] = {
        {4, 2, "--parallel dp=2,pp=2", "dp2pp2_z0", NULL},
        {4, 2, "--parallel dp=2,pp=2 --zero 1", "dp2pp2_z1",
         "2 micro-batches of 4 per step (the pipeline's)"},
        {4, 2, "--parallel dp=2,pp=2 --zero 2", "dp2pp2_z2", NULL},
        {4, 2, "--parallel dp=2,pp=2 --micro-batches 4 --zero 2", "dp2pp2_m4_z2",
         "4 micro-batches of up to 1 sequences"},
        {4, 1, "--parallel tp=2,pp=2", "tp2pp2_z0", NULL},
        {4, 1, "--parallel tp=2,pp=2 --zero 1", "tp2pp2_z1", "ZeRO-1 over dp=1"},
        {4, 1, "--parallel pp=4", "pp4_z0", NULL},
        {4, 1, "--parallel pp=4 --zero 2", "pp4_z2", "ZeRO-2 over dp=1"},
        {2, 1, "--parallel pp=2 --micro-batches 8", "pp2_m8_z0",
         "8 micro-batches of up to 1 sequences"},
        {2, 1, "--parallel pp=2 --micro-batches 8 --zero 1", "pp2_m8_z1", NULL},
    };
    const layout_t *const all[3] = {dp_layouts, dptp_layouts, pp_layouts}, *ls = all[which];
    const size_t count[3] = {sizeof dp_layouts / sizeof *dp_layouts,
                             sizeof dptp_layouts / sizeof *dptp_layouts,
                             sizeof pp_layouts / sizeof *pp_layouts};
    size_t nl = count[which];
    for (size_t i = 0; i < nl; i++) check(&ls[i], "", 0);
#ifdef SYM_TEST_GPU
    killed(&ls[2], 2); /* dp4_z2, dp2tp2_z2, dp2pp2_z2 */
#else
    /* ZeRO over dp > 1 holds 1/dp of its layout's state, the first run of the layout */
    for (size_t i = 0; i < nl; i++) {
        const char *z = strstr(ls[i].opts, "--zero ");
        if (!z || ls[i].dp == 1 || strstr(ls[i].opts, "--micro-batches")) continue;
        size_t base = i;
        while (base > 0 && strstr(ls[base].opts, "--zero ")) base--;
        check_state(ls[base].name, ls[i].name, ls[i].dp, atoi(z + 7));
    }
#endif

    if (which == 1) {
        checkpoints();
        /* the old option's name, refused with where it went */
        snprintf(args, sizeof args, ARGS " --accum 2");
        e2e_run(1, NULL, NULL, e2e_path("accum.log"), 2, args);
        e2e_expect_log(e2e_path("accum.log"), "--accum is now --micro-batches 2");
    }
    /* not blind: another seed differs by far more than the tolerance */
    static const char *const seed2[3] = {"dp=4", "dp=2,tp=2", "dp=2,pp=2"};
    snprintf(args, sizeof args, ARGS " --seed 2 --parallel %s --zero 1 --max-steps 2 --metrics %s",
             seed2[which], e2e_path("seed2.jsonl"));
    e2e_run(4, NULL, NULL, e2e_path("seed2.log"), 0, args);
    double g2[STEPS];
    CHECK(e2e_values(e2e_path("seed2.jsonl"), "grad_norm", 0, g2, STEPS) == 2, "seed 2: 2 steps");
    CHECK(rel(g2[1], g1[1]) > SEED_DIFF, "another seed gave the same gradient norm %.6g",
          g2[1]);
    printf(NAME ": ok\n");
    return 0;
}
