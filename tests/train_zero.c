/*
 * train_zero — sharded data parallelism (--zero 1, 2) and gradient
 * accumulation (--micro-batches) train exactly what plain data parallelism trains.
 *
 * The tiny GPT (fp32 on the CPU, AdamW with weight decay on the matrices,
 * the global norm clipped at 0.5 so clipping acts on most steps, buckets of
 * 20 KB so the reduce-scatters overlap backward in 7 buckets) trains 20 steps
 * of 16 sequences on 1 PE and on 4 PEs with --zero 0, 1 and 2; the MLP (SGD
 * with momentum, dropout) the same at 4 PEs. Every step's loss and the final
 * weights must match --zero 0's (and the 1-PE run's) to 1e-5 relative (the
 * MLP's 410 samples end each epoch with a short step of 10: two
 * micro-batches of 5 under --micro-batches 2); the
 * optimizer state checkpointed by --zero 1, gathered from the shards, must
 * match --zero 0's unsharded state element for element (same tolerance), so
 * the gather puts every block where it belongs. Measured differences are
 * about 1e-7 (the reduction order); a run with another seed differs by far
 * more, so the comparison can tell.
 * --batch 16 --micro-batches 4 (4 micro-batches of 4) must match --batch 16 (plain
 * and with --zero 1), with the same bytes reduced a step (one reduction a
 * step, none on the first three micro-batches).
 * Memory: the start line's optimizer-state bytes per PE under --zero 1 and 2
 * are a quarter of --zero 0's (up to one element per bucket), and ZeRO-2
 * says it handed most of the full gradient array back to the OS.
 * Bad input: --zero 3 is refused with a message naming the choices, and an
 * --micro-batches that leaves a PE without a sample of a micro-batch, once.
 */
#include "train_e2e.h"

#define GPT "--generated --model gpt:L=2,C=64,H=4,V=128,T=32 --precision fp32 --device cpu " \
            "--steps 20 --clip 0.5 --bucket-mb 0.02 --threads 1 --lr 0.003 --warmup-steps 2 " \
            "--log-interval 1000"
#define MLP "--generated --train-samples 410 --test-samples 100 --model mlp:784-32-16-10 " \
            "--optimizer sgd --lr 0.05 --batch 40 --steps 20 --clip 0.5 --bucket-mb 0.01 "  \
            "--threads 1 --log-interval 1000"
#define TOL 1e-5

static double rel(double a, double b) { return fabs(a - b) / fmax(fabs(b), 1e-3); }

/* Run `args` on n PEs into name.log, name.jsonl and the checkpoint dir name. */
static void train(int n, const char *name, const char *args) {
    char line[2048];
    snprintf(line, sizeof line, "%s --ckpt-dir %s --metrics %s", args, e2e_path("%s", name),
             e2e_path("%s.jsonl", name));
    e2e_run(n, NULL, NULL, e2e_path("%s.log", name), 0, line);
}

/* Largest relative difference of two runs' losses (every step, within TOL)
 * and final files (model.bin, and optim.bin past its header when `state`,
 * within wtol). */
static double compare(const char *a, const char *b, int state, double wtol) {
    long long na, nb;
    double *la = e2e_losses(e2e_path("%s.jsonl", a), &na), *lb = e2e_losses(e2e_path("%s.jsonl", b), &nb);
    CHECK(na == 20 && nb == 20, "%s: %lld steps, %s: %lld; expected 20", a, na, b, nb);
    double d = 0;
    for (int i = 0; i < 20; i++) {
        CHECK(rel(lb[i], la[i]) <= TOL, "step %d: loss %.9g (%s) vs %.9g (%s)", i + 1, lb[i], b,
              la[i], a);
        d = fmax(d, rel(lb[i], la[i]));
    }
    const char *files[2] = {"model.bin", "optim.bin"};
    for (int f = 0; f <= state; f++) {
        size_t n1, n2;
        float *w1 = e2e_weights(e2e_path("%s", a), files[f], &n1);
        float *w2 = e2e_weights(e2e_path("%s", b), files[f], &n2);
        CHECK(n1 == n2, "%s: %s holds %zu floats, %s's %zu", files[f], a, n1, b, n2);
        size_t from = f ? 8 : 0; /* optim.bin: a 32-byte header (kind, n, steps), the same */
        CHECK(!f || !memcmp(w1, w2, 32), "optim.bin headers differ (%s, %s)", a, b);
        for (size_t i = from; i < n1; i++) {
            /* relative, with a floor at the scale of the weights (0.02 at init) and of
             * the state's small entries (a first moment near 0 is gradients of 1e-3
             * cancelling), where a difference is rounding of the tiny */
            double e = fabs((double)w1[i] - w2[i]) / fmax(fabs(w1[i]), f ? 1e-5 : 1e-2);
            CHECK(e <= wtol, "%s: element %zu is %.9g (%s), %.9g (%s)", files[f], i, w2[i], b,
                  w1[i], a);
            d = fmax(d, e);
        }
        free(w1);
        free(w2);
    }
    free(la);
    free(lb);
    return d;
}

/* "optimizer state N bytes per PE" from a run's start line. */
static long long state_bytes(const char *name) {
    char *s = e2e_read(e2e_path("%s.log", name), NULL), *at = s ? strstr(s, "optimizer state ") : NULL;
    if (!at) e2e_show(e2e_path("%s.log", name));
    CHECK(at != NULL, "%s: no optimizer-state line", name);
    long long v = atoll(at + 16);
    free(s);
    return v;
}

static void one_metric(const char *name, const char *key, double *out, int steps) {
    char *s = e2e_read(e2e_path("%s.jsonl", name), NULL);
    CHECK(s != NULL, "cannot read %s.jsonl", name);
    int i = 0;
    for (char *p = s; (p = strstr(p, key)) && i < steps; p += strlen(key)) out[i++] = strtod(p + strlen(key), NULL);
    CHECK(i == steps, "%s.jsonl: %d records of %s, expected %d", name, i, key, steps);
    free(s);
}

int main(int argc, char **argv) {
    e2e_init(argc, argv, "train_zero");
    train(1, "gpt1", GPT " --batch 16");
    train(4, "gpt_z0", GPT " --batch 16");
    train(4, "gpt_z1", GPT " --batch 16 --zero 1");
    train(4, "gpt_z2", GPT " --batch 16 --zero 2");
    train(4, "gpt_seed2", GPT " --batch 16 --zero 1 --seed 2");
    double d;
    d = compare("gpt_z0", "gpt_z1", 1, TOL);
    printf("train_zero: GPT, 4 PEs, --zero 1 vs 0: losses, weights and the gathered AdamW state "
           "within %.2g\n", d);
    d = compare("gpt_z0", "gpt_z2", 1, TOL);
    printf("train_zero: GPT, 4 PEs, --zero 2 vs 0: within %.2g\n", d);
    /* 1 PE vs 4: other matrix shapes, so another rounding in the GEMMs, which
     * AdamW's g / sqrt(v) magnifies where gradients are tiny: the weights
     * differ by up to 1e-4 relative (as much for --zero 0 at 4 PEs) */
    d = compare("gpt1", "gpt_z1", 0, 1e-3);
    printf("train_zero: GPT, 4 PEs --zero 1 vs 1 PE: losses within 1e-5, weights within %.2g\n",
           d);
    size_t n1, n2;
    float *w1 = e2e_weights(e2e_path("gpt_z1"), "model.bin", &n1);
    float *w2 = e2e_weights(e2e_path("gpt_seed2"), "model.bin", &n2);
    double ds = 0;
    for (size_t i = 0; i < n1 && i < n2; i++) ds = fmax(ds, rel(w2[i], w1[i]));
    CHECK(ds > 1000 * TOL, "another seed moves the weights by only %.3g: the comparison is blind", ds);
    free(w1);
    free(w2);
    double norm[20];
    one_metric("gpt_z1", "\"grad_norm\":", norm, 20);
    int clipped = 0;
    for (int i = 0; i < 20; i++) clipped += norm[i] > 0.5;
    CHECK(clipped >= 5, "only %d of 20 steps had a norm above --clip 0.5: clipping is not tested",
          clipped);

    /* memory: a quarter, up to one element per bucket (7 of them) and state array */
    long long b0 = state_bytes("gpt_z0"), b1 = state_bytes("gpt_z1"), b2 = state_bytes("gpt_z2");
    CHECK(b0 > 0 && b1 * 4 >= b0 && b1 * 4 <= b0 + 4 * 7 * 2 * 4 && b2 == b1,
          "optimizer state per PE: %lld bytes unsharded, %lld with --zero 1, %lld with --zero 2: "
          "expected a quarter", b0, b1, b2);
    char *z2 = e2e_read(e2e_path("gpt_z2.log"), NULL), *at = z2 ? strstr(z2, "step 1 handed ") : NULL;
    CHECK(at != NULL, "ZeRO-2 did not say what it freed");
    long long freed = atoll(at + 14), full = (long long)n1 * 4;
    CHECK(freed > full / 2 && freed <= full,
          "ZeRO-2 handed back %lld of %lld gradient bytes: expected most of them", freed, full);
    free(z2);
    printf("train_zero: optimizer state per PE %lld bytes unsharded, %lld (ZeRO-1, 2), ratio %.3f; "
           "ZeRO-2 freed %lld of %lld gradient bytes\n", b0, b1, (double)b1 / b0, freed, full);

    /* accumulation: 4 micro-batches of 4 sequences == one batch of 16 */
    train(4, "gpt_acc", GPT " --batch 16 --micro-batches 4");
    train(4, "gpt_acc_z1", GPT " --batch 16 --micro-batches 4 --zero 1");
    d = fmax(compare("gpt_z0", "gpt_acc", 0, 1e-3), compare("gpt_z0", "gpt_acc_z1", 0, 1e-3));
    double by0[20], by1[20], byz[20], byz1[20];
    one_metric("gpt_z0", "\"bytes_allreduced\":", by0, 20);
    one_metric("gpt_acc", "\"bytes_allreduced\":", by1, 20);
    one_metric("gpt_z1", "\"bytes_allreduced\":", byz, 20);
    one_metric("gpt_acc_z1", "\"bytes_allreduced\":", byz1, 20);
    for (int i = 0; i < 20; i++)
        CHECK(by1[i] == by0[i] && byz1[i] == byz[i] && by0[i] > 0,
              "step %d: %.0f bytes reduced with --micro-batches 4, %.0f without (ZeRO-1: %.0f, %.0f): the "
              "micro-batches before the last must not communicate", i + 1, by1[i], by0[i],
              byz1[i], byz[i]);
    printf("train_zero: --batch 16 --micro-batches 4 vs --batch 16 (plain and ZeRO-1): within %.2g, "
           "the same "
           "bytes reduced a step\n", d);

    /* the MLP, SGD with momentum and dropout */
    train(4, "mlp_z0", MLP);
    train(4, "mlp_z1", MLP " --zero 1");
    train(4, "mlp_z2", MLP " --zero 2 --micro-batches 2");
    d = fmax(compare("mlp_z0", "mlp_z1", 1, TOL), compare("mlp_z0", "mlp_z2", 1, 1e-3));
    printf("train_zero: MLP (SGD), --zero 1 and --zero 2 with --micro-batches 2 vs --zero 0: "
           "within %.2g\n", d);

    e2e_proc_t p = e2e_start(1, NULL, NULL, e2e_path("bad.log"), MLP " --zero 3");
    int rc = e2e_wait(&p);
    CHECK(rc != 0, "--zero 3 was accepted");
    e2e_expect_log(e2e_path("bad.log"), "--zero '3': expected a whole number from 0 to 2");
    p = e2e_start(4, NULL, NULL, e2e_path("bad2.log"), MLP " --batch 8 --micro-batches 4");
    rc = e2e_wait(&p);
    CHECK(rc != 0, "--batch 8 --micro-batches 4 on 4 PEs was accepted");
    e2e_expect_log(e2e_path("bad2.log"), "--micro-batches 4 splits --batch 8 into micro-batches of "
                                         "fewer samples than there are data-parallel replicas (4)");
    CHECK(e2e_count(e2e_path("bad2.log"), "--micro-batches 4 splits") == 1,
          "the message came more than once");
    e2e_cleanup();
    printf("train_zero: ok\n");
    return 0;
}
