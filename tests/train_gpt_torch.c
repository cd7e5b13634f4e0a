/*
 * train_gpt_torch — the whole GPT's loss and every gradient against PyTorch.
 *
 * gpt:L=2,C=32,H=4,V=64,T=16 (vocabulary padded to 128) on 3 sequences of 13
 * tokens (shorter than the context). Every parameter is drawn at random, far
 * from GPT-2's init (LayerNorm weights and every bias non-trivial, the padding
 * rows of wte large), so a bias left out, a LayerNorm parameter swapped or a
 * padding logit taking part would show. The C side computes the mean
 * cross-entropy over the 39 predictions and its gradient as the training loop
 * does (sym_softmax_xent in place over the logits, scale 1/39, then
 * sym_model_backward); tests/gpt_reference.py gets the same parameters (the
 * flat array and the table's names, shapes and offsets), tokens and targets
 * through files in a temporary directory, builds the same model in PyTorch
 * (plain fp32 on the CPU) and writes back its loss and gradients.
 *
 * Tolerances, for two fp32 implementations that sum in different orders
 * (measured with torch 2.11 on x86-64: the loss within 7e-8 relative, each
 * tensor within 8e-7 norm-wise, every element within 0.08 of its tolerance):
 *   the loss                 |c - t| <= 1e-5 |t|
 *   each tensor, norm-wise   ||c - t|| <= 1e-5 ||t||
 *   each element             |c - t| <= 1e-5 |t| + 1e-5 max|t over the tensor|
 *                            (the floor: elements that cancel to near 0 carry
 *                            the rounding of the tensor's large terms)
 * and the padding rows of wte (>= V) and the unused rows of wpe (>= 13) must
 * be exactly 0 on both sides. Every tensor must have a non-zero gradient.
 *
 * Without torch (python3 -c "import torch" fails) the test says SKIP on one
 * line and exits 77. SYMTRAIN_TEST_SEED replays a draw.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <symtrain/symtrain.h>

#include "test.h"

#ifndef SYM_TESTS_DIR
#error "SYM_TESTS_DIR (the directory of gpt_reference.py) must be defined"
#endif

#define SPEC "gpt:L=2,C=32,H=4,V=64,T=16"
#define RB 3  /* sequences */
#define RS 13 /* tokens per sequence, < T */
#define RTOL 1e-5

static test_rng_t rng;
static char dir[512];

static float frand(double lo, double hi) { return (float)(lo + (hi - lo) * test_uniform(&rng)); }

static const char *path(const char *file) {
    static char p[4][640];
    static int k;
    k = (k + 1) % 4;
    snprintf(p[k], sizeof p[k], "%s/%s", dir, file);
    return p[k];
}

static void write_file(const char *file, const void *data, size_t bytes) {
    FILE *f = fopen(path(file), "wb");
    CHECK(f != NULL, "cannot create %s: %s", path(file), strerror(errno));
    CHECK(fwrite(data, 1, bytes, f) == bytes && fclose(f) == 0, "cannot write %s", path(file));
}

/* The whole file into buf (exactly `bytes` of it), or fail. */
static void read_file(const char *file, void *buf, size_t bytes) {
    FILE *f = fopen(path(file), "rb");
    CHECK(f != NULL, "gpt_reference.py wrote no %s: %s", path(file), strerror(errno));
    size_t got = fread(buf, 1, bytes, f);
    int extra = fgetc(f) != EOF;
    fclose(f);
    CHECK(got == bytes && !extra, "%s is not %zu bytes", path(file), bytes);
}

static int run_quiet(const char *cmd) {
    int st = system(cmd);
    CHECK(st != -1, "system: %s", strerror(errno));
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int main(void) {
    /* SYMTRAIN_TORCH_PYTHON names an interpreter with torch (a venv), else python3. */
    const char *py = getenv("SYMTRAIN_TORCH_PYTHON");
    if (!py || !*py) py = "python3";
    char probe[1200];
    snprintf(probe, sizeof probe, "'%s' -c 'import torch' >/dev/null 2>&1", py);
    if (run_quiet(probe) != 0) {
        printf("train_gpt_torch: SKIP: python3 cannot import torch (pip install torch to compare "
               "the GPT with PyTorch)\n");
        return 77;
    }
    uint64_t seed = test_seed();
    printf("train_gpt_torch: seed %llu (SYMTRAIN_TEST_SEED=%llu replays it)\n",
           (unsigned long long)seed, (unsigned long long)seed);
    rng = test_rng(seed, 0);
    test_mkdtemp(dir, sizeof dir, "train_gpt_torch");

    sym_model_config_t cfg;
    memset(&cfg, 0, sizeof cfg);
    CHECK(sym_model_parse(SPEC, &cfg) == 0, "%s", sym_last_error());
    cfg.seed = seed;
    sym_model_t *m;
    CHECK(sym_model_create(&cfg, RB, 0, &m) == 0, "%s", sym_last_error());
    const int C = cfg.n_embd, V = cfg.vocab, Vp = cfg.padded_vocab, T = cfg.max_seq;
    CHECK(Vp == 128 && RS < T, SPEC " has Vp %d, T %d", Vp, T);
    const size_t P = sym_model_num_params(m);
    const int nt = sym_model_num_tensors(m);
    float *params = sym_model_params(m);

    /* parameters, tokens, targets */
    for (int i = 0; i < nt; i++) {
        const sym_param_t *p = sym_model_param(m, i);
        float *w = params + p->offset;
        for (size_t k = 0; k < p->numel; k++) {
            if (!strcmp(p->name, "wte"))
                w[k] = k < (size_t)V * C ? frand(-0.5, 0.5) : frand(-4, 4); /* padding rows */
            else if (!strcmp(p->name, "wpe"))
                w[k] = frand(-0.5, 0.5);
            else if (strstr(p->name, "ln_") && strstr(p->name, ".weight"))
                w[k] = frand(0.5, 1.5);
            else if (p->ndim == 1) /* biases, LayerNorm biases */
                w[k] = frand(-0.2, 0.2);
            else
                w[k] = frand(-0.25, 0.25);
        }
    }
    int32_t tok[RB * RS], tgt[RB * RS];
    for (int i = 0; i < RB * RS; i++) {
        tok[i] = (int32_t)(test_next(&rng) % (uint64_t)V);
        tgt[i] = (int32_t)(test_next(&rng) % (uint64_t)V);
    }
    FILE *f = fopen(path("model.txt"), "w");
    CHECK(f != NULL, "cannot create %s", path("model.txt"));
    fprintf(f, "spec %s\nconfig %d %d %d %d %d %d\nbatch %d %d\nparams %zu\n", SPEC, cfg.n_layer,
            C, cfg.n_head, V, Vp, T, RB, RS, P);
    for (int i = 0; i < nt; i++) {
        const sym_param_t *p = sym_model_param(m, i);
        fprintf(f, "tensor %s %zu %zu %d", p->name, p->offset, p->numel, p->ndim);
        for (int d = 0; d < p->ndim; d++) fprintf(f, " %lld", (long long)p->shape[d]);
        fputc('\n', f);
    }
    CHECK(fclose(f) == 0, "cannot write %s", path("model.txt"));
    write_file("params.bin", params, P * sizeof(float));
    write_file("tokens.bin", tok, sizeof tok);
    write_file("targets.bin", tgt, sizeof tgt);

    /* ours: as the training loop computes it */
    const int N = RB * RS;
    sym_forward_t fw = {1, 0, 0};
    sym_input_t in = {RB, RS, NULL, tok};
    sym_tensor_t logits;
    CHECK(sym_model_forward(m, &in, &fw, &logits) == 0, "%s", sym_last_error());
    double loss = sym_softmax_xent(&logits, tgt, V, 1.0f / N, &logits, NULL) / N;
    CHECK(isfinite(loss), "the loss is %g", loss);
    sym_model_zero_grads(m);
    CHECK(sym_model_backward(m, &logits, NULL, NULL) == 0, "%s", sym_last_error());
    const float *g = sym_model_grads(m);

    /* theirs */
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "'%s' '%s/gpt_reference.py' '%s' > '%s' 2>&1", py, SYM_TESTS_DIR, dir,
             path("reference.log"));
    int rc = run_quiet(cmd);
    if (rc != 0) {
        snprintf(cmd, sizeof cmd, "cat '%s' >&2", path("reference.log"));
        (void)run_quiet(cmd);
    }
    CHECK(rc == 0, "gpt_reference.py exited %d (its output is above; files in %s)", rc, dir);
    snprintf(cmd, sizeof cmd, "cat '%s'", path("reference.log"));
    fflush(stdout);
    (void)run_quiet(cmd);
    float *ref = malloc(P * sizeof *ref);
    CHECK(ref != NULL, "out of memory");
    read_file("grads.bin", ref, P * sizeof *ref);
    char text[128] = "";
    f = fopen(path("loss.txt"), "r");
    CHECK(f && fgets(text, sizeof text, f), "gpt_reference.py wrote no loss.txt");
    fclose(f);
    char *end;
    double tloss = strtod(text, &end);
    CHECK(end != text && isfinite(tloss), "loss.txt holds '%s'", text);
    CHECK(fabs(loss - tloss) <= RTOL * fabs(tloss), "loss %.9g, PyTorch %.9g (relative %.3g)", loss,
          tloss, fabs(loss - tloss) / fabs(tloss));
    printf("train_gpt_torch: " SPEC ", %d x %d tokens: loss %.9g, PyTorch %.9g (relative %.2g)\n", RB,
           RS, loss, tloss, fabs(loss - tloss) / fabs(tloss));
    fflush(stdout);

    /* every tensor, every element */
    double worst_norm = 0, worst_elem = 0;
    for (int i = 0; i < nt; i++) {
        const sym_param_t *p = sym_model_param(m, i);
        const float *a = g + p->offset, *b = ref + p->offset;
        double dd = 0, tt = 0, big = 0;
        for (size_t k = 0; k < p->numel; k++) {
            dd += ((double)a[k] - b[k]) * ((double)a[k] - b[k]);
            tt += (double)b[k] * b[k];
            big = fmax(big, fabs(b[k]));
        }
        CHECK(tt > 0, "%s: PyTorch's gradient is 0 everywhere: the comparison would be vacuous",
              p->name);
        double rel = sqrt(dd / tt), we = 0;
        for (size_t k = 0; k < p->numel; k++) {
            double e = fabs((double)a[k] - b[k]) / (RTOL * fabs(b[k]) + RTOL * big);
            CHECK(e <= 1.0, "%s element %zu: %.9g, PyTorch %.9g (tolerance %.3g)", p->name, k,
                  (double)a[k], (double)b[k], RTOL * fabs(b[k]) + RTOL * big);
            we = fmax(we, e);
        }
        CHECK(rel <= RTOL, "%s: relative error %.3g (norm-wise), tolerance %g", p->name, rel, RTOL);
        printf("  %-22s %5zu elements: norm-wise relative error %.2g, worst element %.3f of "
               "tolerance (|grad| up to %.3g)\n",
               p->name, p->numel, rel, we, big);
        worst_norm = fmax(worst_norm, rel);
        worst_elem = fmax(worst_elem, we);
    }
    /* the rows no prediction may touch */
    const sym_param_t *wte = sym_model_find_param(m, "wte"), *wpe = sym_model_find_param(m, "wpe");
    CHECK(wte && wpe, "no wte or wpe in the table");
    for (size_t k = (size_t)V * C; k < (size_t)Vp * C; k++)
        CHECK(g[wte->offset + k] == 0.0f && ref[wte->offset + k] == 0.0f,
              "wte padding row %zu: gradient %g, PyTorch %g (both must be 0)", k / C,
              (double)g[wte->offset + k], (double)ref[wte->offset + k]);
    for (size_t k = (size_t)RS * C; k < (size_t)T * C; k++)
        CHECK(g[wpe->offset + k] == 0.0f && ref[wpe->offset + k] == 0.0f,
              "wpe row %zu (past the sequence): gradient %g, PyTorch %g (both must be 0)", k / C,
              (double)g[wpe->offset + k], (double)ref[wpe->offset + k]);
    printf("train_gpt_torch: %zu gradients in %d tensors match PyTorch (worst norm-wise %.2g, "
           "worst element %.3f of tolerance); padding rows 0 on both sides\n",
           P, nt, worst_norm, worst_elem);
    free(ref);
    sym_model_destroy(m);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (run_quiet(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    printf("train_gpt_torch: ok\n");
    return 0;
}
