/*
 * train_balance — dynamic load balancing, end to end on 4 PEs with one slowed.
 *
 * Every PE sleeps SYMTRAIN_TEST_SAMPLE_MS per sample it computes (a device's
 * work: time without CPU, so 4 PEs on 2 loaded cores keep steady speeds) and
 * PE 2 takes 3x as long (SYMTRAIN_TEST_SLOW_PE=2:3). The sleeps dwarf the
 * real compute of the small models, so the PEs' speeds are known.
 *   - MLP, --balance off vs throughput, same seed: every step's loss equal to
 *     fp32 rounding (only which PE computes which sample moved); the step
 *     time the balanced shares give at the PEs' measured speeds (the slowest
 *     PE's share / speed; median of the last 30 steps) within 15% of the ideal
 *     (the global batch / the sum of the speeds) and at most 2/3 of the even
 *     split's; the shares sum to the batch, each >= 1, the slow PE's the
 *     smallest; PE 2 named a straggler in the log and the metrics. The wall
 *     step times are printed, not checked: what balancing gains in time is
 *     bench/balance/run.sh's to measure (on a loaded machine the PEs' real
 *     compute and scheduling move them).
 *   - resume: a copy of the balanced run's step-20 checkpoint holds the shares;
 *     the resumed run uses them at step 21, and its losses are bit-identical
 *     to the original's for as long as the shares agree (the whole tail when
 *     the balancer does not move work), fp32-close after.
 *   - GPT: off vs throughput, losses equal to fp32 rounding with work moved.
 *   - score: with every weight 0 the scores tie and the split stays even; with
 *     the CPU-use weight raised to 20 (the PEs' use differs by a few percent
 *     here: they mostly sleep) the shares move with the score, stay bounded
 *     and sum to the batch, and the losses still equal the static run's.
 *   - bad options: one message and exit status 2.
 */
#include "train_e2e.h"

#define MLP "--generated --train-samples 2000 --test-samples 100 --model mlp:784-32-10 " \
            "--batch 48 --max-steps 40 --threads 1 --log-interval 1000"
#define GPT "--generated --model gpt:L=1,C=32,H=2,V=256,T=32 --device cpu --batch 16 " \
            "--max-steps 14 --threads 1 --lr 0.01 --warmup-steps 2 --quiet"
#define SLOW "SYMTRAIN_TEST_SLOW_PE=2:3"
#define NPES 4
#define TOL 2e-6 /* relative; the runs measured 1e-7 apart */
#define MAXSTEP 64

/* One step record of a metrics file. */
typedef struct {
    int seen;
    double loss, samples_per_s;
    int share[NPES];
    double speed[NPES];
    int straggler[NPES];
} rec_t;

static double num_after(const char *s, const char *key) {
    const char *p = strstr(s, key);
    CHECK(p != NULL, "no %s in %s", key, s);
    return strtod(p + strlen(key), NULL);
}

/* recs[step]; the last record of a step wins. Returns the highest step. */
static int read_metrics(const char *path, rec_t *recs) {
    memset(recs, 0, sizeof(rec_t) * MAXSTEP);
    char *text = e2e_read(path, NULL);
    CHECK(text != NULL, "cannot read %s", path);
    int hi = 0;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        if (strstr(line, "\"eval\"")) continue;
        int step = (int)num_after(line, "\"step\":");
        CHECK(step >= 1 && step < MAXSTEP, "%s: step %d", path, step);
        rec_t *r = &recs[step];
        r->seen = 1;
        r->loss = num_after(line, "\"loss\":");
        r->samples_per_s = num_after(line, "\"samples_per_s\":");
        const char *pes = strstr(line, "\"pes\":[");
        CHECK(pes != NULL, "%s: step %d has no per-PE part", path, step);
        for (int p = 0; p < NPES; p++) {
            char key[32];
            snprintf(key, sizeof key, "{\"pe\":%d,", p);
            const char *e = strstr(pes, key);
            CHECK(e != NULL, "%s: step %d lacks PE %d", path, step, p);
            r->share[p] = (int)num_after(e, "\"share\":");
            r->speed[p] = num_after(e, "\"samples_per_s\":");
            r->straggler[p] = (int)num_after(e, "\"straggler\":");
        }
        if (step > hi) hi = step;
    }
    free(text);
    return hi;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The median step time (batch / samples_per_s) of steps lo..hi. */
static double median_step(const rec_t *r, int lo, int hi, int batch) {
    double t[MAXSTEP];
    int n = 0;
    for (int s = lo; s <= hi; s++) t[n++] = batch / r[s].samples_per_s;
    qsort(t, (size_t)n, sizeof *t, cmp);
    return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

static void same_losses(const rec_t *a, const rec_t *b, int from, int to, const char *what) {
    double worst = 0;
    for (int s = from; s <= to; s++) {
        CHECK(a[s].seen && b[s].seen, "%s: step %d missing", what, s);
        double d = fabs(a[s].loss - b[s].loss) / fmax(fabs(a[s].loss), 1e-30);
        CHECK(d <= TOL, "%s, step %d: loss %.9g vs %.9g (relative %.3g > %g)", what, s, a[s].loss,
              b[s].loss, d, TOL);
        worst = fmax(worst, d);
    }
    printf("train_balance: %s: steps %d..%d losses within %.2g relative (tolerance %g)\n", what,
           from, to, worst, TOL);
}

static int moved(const rec_t *r, int steps) {
    for (int s = 1; s <= steps; s++)
        for (int p = 1; p < NPES; p++)
            if (r[s].share[p] != r[s].share[0]) return 1;
    return 0;
}

static rec_t st[MAXSTEP], bal[MAXSTEP], res[MAXSTEP], gst[MAXSTEP], gbal[MAXSTEP];

int main(int argc, char **argv) {
    e2e_init(argc, argv, "train_balance");
    setenv("SYMTRAIN_TEST_SAMPLE_MS", "3", 1); /* inherited by symrun and the PEs */
    char args[2048];

    /* ---- MLP: static vs balanced ---- */
    snprintf(args, sizeof args, MLP " --balance off --metrics %s", e2e_path("static.jsonl"));
    e2e_run(NPES, NULL, SLOW, e2e_path("static.log"), 0, args);
    snprintf(args, sizeof args,
             MLP " --balance throughput --metrics %s --ckpt-dir %s --ckpt-steps 20",
             e2e_path("bal.jsonl"), e2e_path("bal"));
    e2e_run(NPES, NULL, SLOW, e2e_path("bal.log"), 0, args);
    int n = read_metrics(e2e_path("static.jsonl"), st);
    CHECK(n == 40 && read_metrics(e2e_path("bal.jsonl"), bal) == 40, "the runs took 40 steps");
    same_losses(st, bal, 1, 40, "MLP, balanced vs static");

    for (int s = 1; s <= 40; s++) {
        int sum = 0;
        for (int p = 0; p < NPES; p++) {
            CHECK(bal[s].share[p] >= 1, "step %d: PE %d computed no sample", s, p);
            CHECK(st[s].share[p] == 12, "static step %d: PE %d computed %d, not 12", s, p,
                  st[s].share[p]);
            sum += bal[s].share[p];
        }
        CHECK(sum == 48, "step %d: the shares sum to %d, not the batch 48", s, sum);
    }
    for (int p = 0; p < NPES; p++)
        if (p != 2)
            CHECK(bal[40].share[2] < bal[40].share[p], "the slow PE 2 computes %d, PE %d %d",
                  bal[40].share[2], p, bal[40].share[p]);
    /* the ideal from the PEs' smoothed speeds, the median over the steady steps
     * (one step's can be off on a loaded machine) */
    double ideal_at[MAXSTEP], ratio_at[MAXSTEP], over_at[MAXSTEP], even_at[MAXSTEP];
    for (int s = 11; s <= 40; s++) {
        double sum_speed = 0, given = 0, even = 0;
        for (int p = 0; p < NPES; p++) {
            sum_speed += bal[s].speed[p];
            given = fmax(given, bal[s].share[p] / bal[s].speed[p]);
            even = fmax(even, 12 / bal[s].speed[p]);
        }
        ideal_at[s - 11] = 48 / sum_speed;
        over_at[s - 11] = given / ideal_at[s - 11];
        even_at[s - 11] = given / even;
        ratio_at[s - 11] = bal[s].speed[2] / bal[s].speed[0];
    }
    qsort(ideal_at, 30, sizeof(double), cmp);
    qsort(ratio_at, 30, sizeof(double), cmp);
    qsort(over_at, 30, sizeof(double), cmp);
    qsort(even_at, 30, sizeof(double), cmp);
    double ideal = 0.5 * (ideal_at[14] + ideal_at[15]), tb = median_step(bal, 11, 40, 48),
           ts = median_step(st, 11, 40, 48), over = 0.5 * (over_at[14] + over_at[15]),
           vs_even = 0.5 * (even_at[14] + even_at[15]);
    /* the slowdown took: PE 2 near a third of PE 0's speed (its real compute,
     * which the factor also stretches, and the machine's load move it) */
    double ratio = 0.5 * (ratio_at[14] + ratio_at[15]);
    CHECK(ratio > 0.15 && ratio < 0.5, "PE 2 runs at %.2fx PE 0's speed, set to 1/3", ratio);
    printf("train_balance: MLP steady step (wall, not checked): static %.1f ms, balanced %.1f ms, "
           "ideal %.1f ms; at the measured speeds the shares %d %d %d %d give %.0f%% over the "
           "ideal and %.2fx the even split's\n",
           1e3 * ts, 1e3 * tb, 1e3 * ideal, bal[40].share[0], bal[40].share[1], bal[40].share[2],
           bal[40].share[3], 100 * (over - 1), vs_even);
    CHECK(over <= 1.15, "at the PEs' measured speeds the balanced shares take %.0f%% longer than "
          "the ideal split", 100 * (over - 1));
    CHECK(vs_even <= 2.0 / 3, "at the PEs' measured speeds the balanced shares take %.2fx the "
          "even split's time", vs_even);

    /* stragglers: PE 2, in both logs and in the metrics */
    e2e_expect_log(e2e_path("static.log"), "PE 2 is a straggler");
    e2e_expect_log(e2e_path("bal.log"), "PE 2 is a straggler");
    e2e_expect_log(e2e_path("bal.log"), "balance after step");
    CHECK(e2e_count(e2e_path("bal.log"), "is a straggler") == 1, "another PE was named a straggler");
    CHECK(st[40].straggler[2] && bal[40].straggler[2] && !bal[40].straggler[0] &&
              !bal[40].straggler[1] && !bal[40].straggler[3],
          "the metrics do not name PE 2 (alone) a straggler");
    CHECK(e2e_log_has(e2e_path("bal.jsonl"), "\"stragglers\":[2]"), "no \"stragglers\":[2] record");

    /* ---- resume from the step-20 checkpoint, with its shares ---- */
    CHECK(e2e_sh(e2e_path("cp.log"), "mkdir -p '%s' && cp -r '%s/step-00000020' '%s/'",
                 e2e_path("res"), e2e_path("bal"), e2e_path("res")) == 0,
          "cannot copy the step-20 checkpoint");
    char *manifest = e2e_read(e2e_path("res/step-00000020/manifest.json"), NULL);
    CHECK(manifest && strstr(manifest, "\"balance\": {\"policy\": \"throughput\", \"shares\": ["),
          "the step-20 manifest holds no shares");
    const char *sh = strstr(manifest, "\"shares\": [") + 11;
    int saved[NPES];
    for (int p = 0; p < NPES; p++) {
        saved[p] = (int)strtol(sh, (char **)&sh, 10);
        sh += strspn(sh, ", ");
        CHECK(saved[p] == bal[21].share[p], "the manifest's share of PE %d is %d; step 21 used %d",
              p, saved[p], bal[21].share[p]);
    }
    free(manifest);
    snprintf(args, sizeof args, MLP " --balance throughput --metrics %s --ckpt-dir %s --resume",
             e2e_path("res.jsonl"), e2e_path("res"));
    e2e_run(NPES, NULL, SLOW, e2e_path("res.log"), 0, args);
    e2e_expect_log(e2e_path("res.log"), "resumed from ");
    CHECK(read_metrics(e2e_path("res.jsonl"), res) == 40, "the resumed run did not end at 40");
    CHECK(!res[20].seen && res[21].seen, "the resumed run did not start at step 21");
    int exact = 21;
    for (int s = 21; s <= 40 && !memcmp(res[s].share, bal[s].share, sizeof res[s].share); s++) {
        CHECK(res[s].loss == bal[s].loss, "step %d: loss %.9g after the resume, %.9g before", s,
              res[s].loss, bal[s].loss);
        exact = s;
    }
    for (int p = 0; p < NPES; p++)
        CHECK(res[21].share[p] == saved[p], "step 21 after the resume: PE %d computed %d, saved %d",
              p, res[21].share[p], saved[p]);
    printf("train_balance: resumed at step 21 with the saved shares %d %d %d %d: steps 21..%d "
           "bit-identical\n",
           saved[0], saved[1], saved[2], saved[3], exact);
    if (exact < 40) same_losses(bal, res, exact + 1, 40, "after the shares diverged");

    /* ---- GPT: static vs balanced ---- */
    snprintf(args, sizeof args, GPT " --balance off --metrics %s", e2e_path("gst.jsonl"));
    e2e_run(NPES, NULL, SLOW, e2e_path("gst.log"), 0, args);
    snprintf(args, sizeof args, GPT " --balance throughput --balance-every 5 --metrics %s",
             e2e_path("gbal.jsonl"));
    e2e_run(NPES, NULL, SLOW, e2e_path("gbal.log"), 0, args);
    CHECK(read_metrics(e2e_path("gst.jsonl"), gst) == 14 &&
              read_metrics(e2e_path("gbal.jsonl"), gbal) == 14,
          "the GPT runs took 14 steps");
    CHECK(moved(gbal, 14) && !moved(gst, 14), "the GPT's balancer moved no work (or off did)");
    same_losses(gst, gbal, 1, 14, "GPT, balanced vs static");
    CHECK(gbal[14].share[2] < gbal[14].share[0], "the GPT's slow PE 2 computes %d, PE 0 %d",
          gbal[14].share[2], gbal[14].share[0]);

    /* ---- the score policy ---- */
    snprintf(args, sizeof args, MLP " --max-steps 12 --balance score --balance-weights 0,0,0 --metrics %s",
             e2e_path("tie.jsonl"));
    e2e_run(NPES, NULL, SLOW, e2e_path("tie.log"), 0, args);
    CHECK(read_metrics(e2e_path("tie.jsonl"), res) == 12 && !moved(res, 12),
          "all-zero score weights moved work");
    snprintf(args, sizeof args,
             MLP " --max-steps 12 --balance score --balance-weights 20,0,0 "
                 "--balance-hysteresis 0 --metrics %s",
             e2e_path("score.jsonl"));
    e2e_run(NPES, NULL, SLOW, e2e_path("score.log"), 0, args);
    CHECK(read_metrics(e2e_path("score.jsonl"), res) == 12, "the score run did not take 12 steps");
    CHECK(moved(res, 12), "the score policy never moved work (hysteresis 0)");
    for (int s = 1; s <= 12; s++) {
        int sum = 0;
        for (int p = 0; p < NPES; p++) {
            CHECK(res[s].share[p] >= 1 && res[s].share[p] <= 24, "score, step %d: PE %d computes %d",
                  s, p, res[s].share[p]);
            sum += res[s].share[p];
        }
        CHECK(sum == 48, "score, step %d: the shares sum to %d", s, sum);
    }
    same_losses(st, res, 1, 12, "MLP, score policy vs static");

    /* ---- bad options ---- */
    static const char *const bad[][2] = {
        {"--balance fast", "--balance 'fast': use off, throughput or score"},
        {"--balance-every 0", "--balance-every '0': expected a whole number"},
        {"--balance-weights 0.6,0.3", "--balance-weights '0.6,0.3': expected three numbers"},
        {"--straggler-factor 1", "--straggler-factor '1': expected a number from 1.01"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(args, sizeof args, MLP " %s", bad[i][0]);
        const char *log = e2e_path("bad%zu.log", i);
        e2e_run(2, NULL, NULL, log, 2, args);
        e2e_expect_log(log, bad[i][1]);
        CHECK(e2e_count(log, bad[i][1]) == 1, "%s: said more than once", bad[i][0]);
    }
    printf("train_balance: bad --balance options: one message, exit status 2\n");

    e2e_cleanup();
    printf("train_balance: ok\n");
    return 0;
}
