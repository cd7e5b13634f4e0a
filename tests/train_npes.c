/*
 * train_npes — N-PE training equals 1-PE training with the same global batch.
 *
 * 1, 2, 3 and 4 PEs train the same model (GELU, dropout 0.2, SGD + momentum)
 * on the same data with global batch 50 over 1210 samples (so the last batch
 * of each epoch has 10 rows, fewer than some PEs' share), with buckets small
 * enough that several all-reduces overlap the backward pass. Each PE's
 * gradient is scaled so the average over PEs is the global-batch mean, and the
 * dropout masks follow the global row, so the runs differ only by the fp32
 * rounding of a different summation order: measured at about 1e-7 in the
 * weights and 3e-7 in the losses. The tolerance, 2e-6, leaves 10x headroom;
 * a real fault (a wrong shard, a missed bucket, a per-PE mask) moves things by
 * 1e-3 or more, and a run with another seed is checked to differ by far more
 * than the tolerance, so the comparison can tell.
 */
#include "train_e2e.h"

#define ARGS "--generated --train-samples 1210 --test-samples 300 --epochs 2 " \
             "--model mlp:784-32-16-10 --activation gelu --dropout 0.2 --batch 50 " \
             "--optimizer sgd --lr 0.05 --bucket-mb 0.01 --quiet"
#define TOL 2e-6

static double max_diff(const float *a, const float *b, size_t n) {
    double d = 0;
    for (size_t i = 0; i < n; i++) d = fmax(d, fabs((double)a[i] - b[i]));
    return d;
}

int main(int argc, char **argv) {
    e2e_init(argc, argv, "train_npes");
    char args[1024];
    for (int n = 1; n <= 4; n++) {
        snprintf(args, sizeof args, ARGS " --ckpt-dir %s --metrics %s", e2e_path("np%d", n),
                 e2e_path("np%d.jsonl", n));
        e2e_run(n, NULL, NULL, e2e_path("np%d.log", n), 0, args);
    }
    snprintf(args, sizeof args, ARGS " --seed 2 --ckpt-dir %s", e2e_path("seed2"));
    e2e_run(2, NULL, NULL, e2e_path("seed2.log"), 0, args);

    size_t n1, nk;
    float *w1 = e2e_weights(e2e_path("np1"), "model.bin", &n1);
    long long s1;
    double *l1 = e2e_losses(e2e_path("np1.jsonl"), &s1);
    CHECK(s1 == 50, "the 1-PE run took %lld steps, expected 2 x ceil(1210 / 50) = 50", s1);
    for (int n = 2; n <= 4; n++) {
        float *wk = e2e_weights(e2e_path("np%d", n), "model.bin", &nk);
        CHECK(nk == n1, "model sizes differ");
        long long sk;
        double *lk = e2e_losses(e2e_path("np%d.jsonl", n), &sk);
        CHECK(sk == s1, "%d PEs took %lld steps, 1 PE %lld", n, sk, s1);
        double dw = max_diff(w1, wk, n1), dl = 0;
        for (long long i = 0; i < s1; i++) {
            dl = fmax(dl, fabs(l1[i] - lk[i]));
            CHECK(fabs(l1[i] - lk[i]) <= TOL, "%d PEs, step %lld: loss %.9g, 1 PE %.9g", n, i + 1,
                  lk[i], l1[i]);
        }
        CHECK(dw <= TOL, "%d PEs: weights differ from 1 PE's by up to %.3g (tolerance %g)", n, dw, TOL);
        /* the all-reduce ran, in several buckets */
        char *m = e2e_read(e2e_path("np%d.jsonl", n), NULL);
        CHECK(m && !strstr(m, "\"bytes_allreduced\":0,") && !strstr(m, "\"bytes_allreduced\":0}"),
              "%d PEs: a step all-reduced nothing", n);
        free(m);
        printf("train_npes: %d PEs vs 1 PE: weights within %.2g, losses within %.2g (tolerance %g)\n",
               n, dw, dl, TOL);
        free(wk);
        free(lk);
    }
    float *ws = e2e_weights(e2e_path("seed2"), "model.bin", &nk);
    double ds = max_diff(w1, ws, n1);
    CHECK(ds > 1000 * TOL, "another seed changes the weights by only %.3g: the comparison is blind", ds);
    printf("train_npes: another seed differs by %.3g, so the tolerance is discriminating\n", ds);
    free(ws);
    free(w1);
    free(l1);
    e2e_cleanup();
    printf("train_npes: ok\n");
    return 0;
}
