/*
 * train_parallel — `symtrain train --parallel dp=N,tp=M` through symrun, as a
 * user runs it: every layout trains the 1-PE GPT.
 *
 * gpt:L=2,C=64,H=4,V=126,T=32 on the generated corpus, global batch 8, 20
 * steps of AdamW at lr 0.001 (2 warmup steps), clipping at 1 (the first
 * steps clip; at lr 0.01 fp32 noise grows past 1e-5 in 20 steps even between
 * dp=4 and 1 PE), evaluated at steps 10 and 20. The vocabulary (126) does not divide over 4 PEs, so tp=4
 * holds uneven blocks of it (32, 32, 31, 31 rows). Layouts: dp=4, dp=2,tp=2
 * and tp=4 on 4 PEs, tp=2 on 2. Each must match the 1-PE run to 1e-5 relative
 * in every step's loss, every validation loss and (2e-5: the metrics print 6
 * digits) every gradient norm before clipping, the norm that counts each
 * element of the split model once; the 1-PE loss must fall, so the
 * comparison is not blind. Each log states its layout once, and dp=2,tp=2
 * samples the 1-PE model's text from its gathered weights.
 *
 * Bad layouts (the sizes' product is not the PE count, an unknown key, a tp
 * that does not divide the heads, a vocabulary
 * smaller than tp) end the job
 * with exit status 2 and one message, before anything trains.
 *
 * Checkpoints at tp>1 hold the whole tensors: a dp=2,tp=2 run killed at step
 * 7 (PE 1, a tp peer of PE 0) and restarted ends with the bytes of one never
 * interrupted; and a tp=4 run's checkpoint at step 10, resumed by tp=2 on 2
 * PEs, goes on with the 1-PE run's losses.
 *
 * Two tests of one program, to stay short each: `train_parallel SYMRUN
 * SYMTRAIN` (the layouts and the refusals) and `... resume` (the
 * checkpoints); each runs the 1-PE reference itself.
 */
#include "train_e2e.h"

#define MODEL "gpt:L=2,C=64,H=4,V=126,T=32"
#define ARGS "--generated --device cpu --batch 8 --threads 1 --lr 0.001 --warmup-steps 2 " \
             "--eval-every 10 --test-samples 16 --bucket-mb 0.05"
#define STEPS 20
#define SAMPLE " --sample 30 --prompt KING"
#define SAMPLE_HEAD "a sample (30 tokens, temperature 1, top-k 40):\nKING"
#define TOL 1e-5
#define TOL_NORM 2e-5

static double rel(double a, double b) { return fabs(a - b) / fmax(fabs(b), 1e-30); }

/* A number after `key` in each record of a metrics file (e2e_fields). */
static int field(const char *metrics, const char *key, int evals, double *out, int cap) {
    return e2e_fields(metrics, key, evals, out, cap);
}

/* Records `from`..STEPS (1-based) of `metrics` match the 1-PE run's. */
static void same_as_one_pe(const char *what, const char *metrics, int from) {
    double want[STEPS], got[STEPS], wn[STEPS], gn[STEPS], wv[2], gv[2];
    CHECK(field(e2e_path("np1.jsonl"), "\"loss\":", 0, want, STEPS) == STEPS, "np1: steps");
    CHECK(field(e2e_path("np1.jsonl"), "\"grad_norm\":", 0, wn, STEPS) == STEPS, "np1: norms");
    CHECK(field(e2e_path("np1.jsonl"), "\"test_loss\":", 1, wv, 2) == 2, "np1: evaluations");
    int k = STEPS - from + 1;
    CHECK(field(metrics, "\"loss\":", 0, got, STEPS) == k, "%s: not %d step records", what, k);
    CHECK(field(metrics, "\"grad_norm\":", 0, gn, STEPS) == k, "%s: norms", what);
    double worst = 0;
    for (int i = 0; i < k; i++) {
        int s = from - 1 + i;
        CHECK(rel(got[i], want[s]) <= TOL, "%s step %d: loss %.9g, 1 PE %.9g (%.2g relative)",
              what, s + 1, got[i], want[s], rel(got[i], want[s]));
        CHECK(rel(gn[i], wn[s]) <= TOL_NORM, "%s step %d: gradient norm %.7g, 1 PE %.7g", what,
              s + 1, gn[i], wn[s]);
        worst = fmax(worst, rel(got[i], want[s]));
    }
    int ne = field(metrics, "\"test_loss\":", 1, gv, 2);
    CHECK(ne == (from == 1 ? 2 : 1), "%s: %d evaluations", what, ne);
    for (int i = 0; i < ne; i++)
        CHECK(rel(gv[i], wv[2 - ne + i]) <= TOL, "%s: validation loss %.9g, 1 PE %.9g", what,
              gv[i], wv[2 - ne + i]);
    printf("train_parallel: %-9s steps %d-%d match 1 PE (worst loss %.2g relative)\n", what,
           from, STEPS, worst);
}

/* The sample at the end of a log (its heading and what follows). */
static char *sample_of(const char *log) {
    char *s = e2e_read(log, NULL), *at = s ? strstr(s, SAMPLE_HEAD) : NULL;
    if (!at) e2e_show(log);
    CHECK(at != NULL, "%s has no sample", log);
    char *copy = strdup(at);
    free(s);
    return copy;
}

/* A bad --parallel: exit status 2, `needle` said once, nothing trained. */
static void refused(int npes, const char *model, const char *layout, const char *needle) {
    char args[1024];
    const char *log = e2e_path("bad-%s.log", layout);
    snprintf(args, sizeof args, ARGS " --model %s --max-steps 2 --parallel %s", model, layout);
    e2e_run(npes, NULL, NULL, log, 2, args);
    if (e2e_count(log, needle) != 1) e2e_show(log);
    CHECK(e2e_count(log, needle) == 1, "--parallel %s: \"%s\" not said exactly once", layout,
          needle);
    CHECK(!e2e_log_has(log, "validation loss"), "--parallel %s trained", layout);
}

/* The 1-PE reference, np1.jsonl. */
static void one_pe(char *args, size_t len) {
    snprintf(args, len, ARGS " --model " MODEL " --max-steps %d --metrics %s" SAMPLE, STEPS,
             e2e_path("np1.jsonl"));
    const char *log = e2e_path("np1.log");
    e2e_run(1, NULL, NULL, log, 0, args);
    e2e_expect_log(log, "layout dp=1 tp=1 pp=1");
    double l[STEPS];
    CHECK(field(e2e_path("np1.jsonl"), "\"loss\":", 0, l, STEPS) == STEPS, "np1: steps");
    CHECK(l[STEPS - 1] < l[0] - 0.5, "1 PE: the loss went from %.4f to %.4f: not learning",
          l[0], l[STEPS - 1]);
}

/* Checkpoints at tp > 1. */
static void resumes(char *args, size_t len) {
    /* killed and restarted at dp=2,tp=2: bit for bit */
    snprintf(args, len, ARGS " --model " MODEL " --max-steps %d --parallel dp=2,tp=2", STEPS);
    long long at = e2e_crash_resume(args, 4, "SYMTRAIN_TEST_KILL_AT=1:7", 7, 5, STEPS);
    printf("train_parallel: dp2xtp2 killed at step 7, resumed from step %lld: bit-identical\n",
           at);

    /* a tp=4 checkpoint resumed by tp=2: the checkpoint holds whole tensors */
    snprintf(args, len, ARGS " --model " MODEL " --max-steps 10 --parallel tp=4 --ckpt-dir %s",
             e2e_path("moved"));
    e2e_run(4, NULL, NULL, e2e_path("moved-tp4.log"), 0, args);
    snprintf(args, len, ARGS " --model " MODEL " --max-steps %d --parallel tp=2 "
             "--ckpt-dir %s --resume --metrics %s", STEPS, e2e_path("moved"),
             e2e_path("moved.jsonl"));
    e2e_run(2, NULL, NULL, e2e_path("moved-tp2.log"), 0, args);
    e2e_expect_log(e2e_path("moved-tp2.log"), "resumed from ");
    same_as_one_pe("tp4->tp2", e2e_path("moved.jsonl"), 11);
}

int main(int argc, char **argv) {
    e2e_init(argc, argv, "train_parallel");
    char args[1024];
    one_pe(args, sizeof args);
    if (argc > 3 && !strcmp(argv[3], "resume")) {
        resumes(args, sizeof args);
        e2e_cleanup();
        printf("train_parallel resume: ok\n");
        return 0;
    }
    static const struct {
        int npes;
        const char *layout, *name, *says;
    } runs[] = {{4, "dp=4", "dp4", "layout dp=4 tp=1 pp=1"},
                {4, "dp=2,tp=2", "dp2xtp2", "layout dp=2 tp=2 pp=1: 2 data-parallel groups"},
                {4, "tp=4", "tp4", "layout dp=1 tp=4 pp=1: 1 data-parallel group of 4 PEs"},
                {2, "tp=2", "tp2", "layout dp=1 tp=2 pp=1"}};
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        snprintf(args, sizeof args, ARGS " --model " MODEL " --max-steps %d --metrics %s "
                 "--parallel %s%s", STEPS, e2e_path("%s.jsonl", runs[i].name), runs[i].layout,
                 i == 1 ? SAMPLE : "");
        const char *log = e2e_path("%s.log", runs[i].name);
        e2e_run(runs[i].npes, NULL, NULL, log, 0, args);
        e2e_expect_log(log, runs[i].says);
        CHECK(e2e_count(log, "layout dp=") == 1, "%s: the layout is not said once",
              runs[i].name);
        same_as_one_pe(runs[i].name, e2e_path("%s.jsonl", runs[i].name), 1);
    }
    /* dp=2,tp=2 sampled from its gathered weights: the 1-PE model's text */
    char *a = sample_of(e2e_path("np1.log")), *b = sample_of(e2e_path("dp2xtp2.log"));
    CHECK(!strcmp(a, b), "dp2xtp2 sampled\n%s\nand 1 PE\n%s", b, a);
    free(a);
    free(b);

    refused(4, MODEL, "dp=2", "--parallel dp=2,tp=1,pp=1 makes 2 PEs, but the job has 4");
    refused(4, MODEL, "dp=2,xp=2", "unknown key 'xp'");
    refused(4, "gpt:L=2,C=48,H=6,V=126,T=32", "tp=4", "tp must divide the GPT's heads (6)");
    refused(4, "gpt:L=2,C=64,H=4,V=3,T=32", "dp=1,tp=4", "the vocabulary (3 tokens) is split");

    e2e_cleanup();
    printf("train_parallel: ok\n");
    return 0;
}
