/*
 * train_resize — resuming with a different PE count: a checkpoint written by
 * 2 PEs is resumed by 1 PE and by 3 PEs. The run says so, keeps the global
 * batch, and ends where the uninterrupted 2-PE run ends, to fp32 tolerance
 * (bit for bit is only promised for the same PE count: the gradient average
 * is summed in another order). Same model and tolerance as train_npes; the
 * steps before the checkpoint are not rerun, and the losses after it agree.
 */
#include "train_e2e.h"

#define ARGS "--generated --train-samples 1210 --test-samples 300 --epochs 2 " \
             "--model mlp:784-32-16-10 --activation gelu --dropout 0.2 --batch 50 " \
             "--optimizer sgd --lr 0.05 --quiet"
#define TOL 2e-6

int main(int argc, char **argv) {
    e2e_init(argc, argv, "train_resize");
    char args[1024];
    snprintf(args, sizeof args, ARGS " --ckpt-dir %s --metrics %s", e2e_path("ref"), e2e_path("ref.jsonl"));
    e2e_run(2, NULL, NULL, e2e_path("ref.log"), 0, args);
    size_t nref;
    float *wref = e2e_weights(e2e_path("ref"), "model.bin", &nref);
    long long sref;
    double *lref = e2e_losses(e2e_path("ref.jsonl"), &sref);

    const int to[2] = {1, 3};
    for (int k = 0; k < 2; k++) {
        const char *ck = e2e_path("ck%d", to[k]), *metrics = e2e_path("ck%d.jsonl", to[k]);
        snprintf(args, sizeof args, ARGS " --max-steps 27 --ckpt-dir %s --metrics %s", ck, metrics);
        e2e_run(2, NULL, NULL, e2e_path("first%d.log", to[k]), 0, args);
        CHECK(e2e_newest(ck, NULL, 0) == 27, "the 2-PE part ended at step %lld", e2e_newest(ck, NULL, 0));
        snprintf(args, sizeof args, ARGS " --resume --ckpt-dir %s --metrics %s", ck, metrics);
        const char *log = e2e_path("second%d.log", to[k]);
        e2e_run(to[k], NULL, NULL, log, 0, args);
        e2e_expect_log(log, "step-00000027: step 27");
        char want[128];
        snprintf(want, sizeof want, "written by 2 PEs and this run has %d", to[k]);
        e2e_expect_log(log, want);
        e2e_expect_log(log, "the global batch stays 50");

        size_t n;
        float *w = e2e_weights(ck, "model.bin", &n);
        CHECK(n == nref, "model sizes differ");
        double dw = 0;
        for (size_t i = 0; i < n; i++) dw = fmax(dw, fabs((double)w[i] - wref[i]));
        long long s;
        double *l = e2e_losses(metrics, &s);
        CHECK(s == sref, "%lld steps in all, the reference %lld", s, sref);
        for (long long i = 0; i < s; i++) {
            if (i < 27)
                CHECK(l[i] == lref[i], "step %lld of the 2-PE part differs", i + 1);
            else
                CHECK(fabs(l[i] - lref[i]) <= TOL, "step %lld on %d PEs: loss %.9g, 2 PEs %.9g", i + 1,
                      to[k], l[i], lref[i]);
        }
        CHECK(dw <= TOL, "2 PEs then %d: weights differ from the 2-PE run by %.3g (tolerance %g)",
              to[k], dw, TOL);
        printf("train_resize: 2 PEs to step 27, then %d PE%s: weights within %.2g of the 2-PE run\n",
               to[k], to[k] == 1 ? "" : "s", dw);
        free(w);
        free(l);
    }
    free(wref);
    free(lref);
    e2e_cleanup();
    printf("train_resize: ok\n");
    return 0;
}
