/*
 * train_gpt_gpu_recompute — `--recompute gelu|ln|gelu,ln` on the GPU through
 * symrun and the symtrain CLI: activations recomputed in backward instead of
 * kept give the same training bit for bit, in less GPU memory.
 *
 * gpt:L=3,C=128,H=2,V=256,T=64, global batch 8 (N = 512 rows), 20 steps,
 * bf16, once keeping every activation and once per --recompute setting:
 *   - every step's loss is the same double (the recomputation runs the
 *     forward's kernels on the forward's inputs), and so is model.bin;
 *   - the startup line's GPU memory is lower, by the figure it names
 *     ("--recompute X spares Y"), and that figure is what the layout
 *     predicts: gelu keeps one (N,4C) pre-GELU and one GELU buffer instead of
 *     L of each, 2 (L-1) N 4C bf16; ln one (N,C) buffer (plus its (N) mean
 *     and rstd) instead of 2L, (2L-1) N C bf16 less 2N floats.
 *
 * SKIP (77) where the GPU part is not built or no GPU is visible.
 */
#include "train_e2e.h"

#define L 3
#define C 128
#define NROWS (8 * 64)
#define STEPS 20
#define ARGS "--generated --model gpt:L=3,C=128,H=2,V=256,T=64 --batch 8 --steps 20 " \
             "--lr 0.001 --warmup-steps 3 --device gpu"

/* The startup line's "X of GPU memory per PE" and, where named, what
 * --recompute spares (else 0). */
static void memory_of(const char *log, double *mem, double *spared) {
    char *s = e2e_read(log, NULL);
    CHECK(s != NULL, "cannot read %s", log);
    char *at = strstr(s, " of GPU memory per PE");
    CHECK(at != NULL, "%s: no \"of GPU memory per PE\" in the startup line", log);
    char *p = at;
    while (p > s && p[-1] != ';') p--; /* "...; 12.3 MiB of GPU memory per PE" */
    *mem = e2e_size_at(p + (*p == ' '));
    char *sp = strstr(at, " spares "), *nl = strchr(at, '\n');
    *spared = sp && (!nl || sp < nl) ? e2e_size_at(sp + 8) : 0;
    free(s);
}

int main(int argc, char **argv) {
    e2e_init(argc, argv, "train_gpt_gpu_recompute");
    char args[2048];
    const char *log0 = e2e_path("keep.log");
    snprintf(args, sizeof args, ARGS " --metrics %s --ckpt-dir %s", e2e_path("keep.jsonl"),
             e2e_path("ck_keep"));
    e2e_proc_t p = e2e_start(1, NULL, NULL, log0, args);
    int rc = e2e_wait(&p);
    if (rc != 0 && e2e_no_gpu(log0)) {
        printf("SKIP: train_gpt_gpu_recompute: no GPU or no GPU part\n");
        e2e_cleanup();
        return 77;
    }
    if (rc != 0) e2e_show(log0);
    CHECK(rc == 0, "symtrain train %s: exit status %d", args, rc);
    double mem0, none;
    memory_of(log0, &mem0, &none);
    CHECK(none == 0, "keeping every activation, the startup line names a saving");

    const double bf = 2, gelu = 2.0 * (L - 1) * NROWS * 4 * C * bf,
                 ln = (2.0 * L - 1) * NROWS * C * bf - 2.0 * NROWS * 4;
    static const char *const modes[] = {"gelu", "ln", "gelu,ln"};
    const double expect[] = {gelu, ln, gelu + ln};
    for (int k = 0; k < 3; k++) {
        const char *log = e2e_path("%d.log", k), *met = e2e_path("%d.jsonl", k),
                   *ck = e2e_path("ck%d", k);
        snprintf(args, sizeof args, ARGS " --recompute %s --metrics %s --ckpt-dir %s", modes[k],
                 met, ck);
        e2e_run(1, NULL, NULL, log, 0, args);
        e2e_same_losses(e2e_path("keep.jsonl"), met, STEPS, 0);
        e2e_same_ckpt_file(e2e_path("ck_keep"), ck, "model.bin");
        double mem, spared;
        memory_of(log, &mem, &spared);
        /* sizes print to 0.1 of their unit: 0.1 MiB of slack each */
        double slack = 0.11 * 1048576;
        CHECK(fabs(spared - expect[k]) < slack, "--recompute %s spares %.0f bytes, the layout "
              "predicts %.0f", modes[k], spared, expect[k]);
        CHECK(mem < mem0 && fabs((mem0 - mem) - spared) < 2 * slack, "--recompute %s: %.0f bytes "
              "of GPU memory, %.0f keeping everything, %.0f said spared", modes[k], mem, mem0,
              spared);
        printf("train_gpt_gpu_recompute: --recompute %s: the same %d losses and model.bin; GPU "
               "memory %.2f MiB instead of %.2f (spares %.2f MiB, predicted %.2f)\n",
               modes[k], STEPS, mem / 1048576, mem0 / 1048576, spared / 1048576,
               expect[k] / 1048576);
    }
    e2e_cleanup();
    printf("train_gpt_gpu_recompute: ok\n");
    return 0;
}
