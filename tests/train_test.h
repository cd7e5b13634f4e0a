/*
 * train_test.h — what the tests of split models (train_tp, train_pp) share:
 * the AdamW they train with, weight decay on the matrices only, as the loop
 * sets it, their model config and token batches, and the slicing rule of
 * tensor parallelism (the test's own). After test.h and symtrain/symtrain.h.
 */
#ifndef SYM_TRAIN_TEST_H
#define SYM_TRAIN_TEST_H

static inline sym_optim_t *test_adamw(sym_model_t *m) {
    sym_optim_config_t oc = {SYM_OPT_ADAMW, 0, 0.9f, 0.95f, 1e-8f, 0.1f};
    sym_optim_t *o;
    CHECK(sym_optim_create(&oc, sym_model_num_params(m), &o) == 0, "%s", sym_last_error());
    for (int i = 0; i < sym_model_num_tensors(m); i++) {
        const sym_param_t *p = sym_model_param(m, i);
        if (!p->decay) CHECK(sym_optim_no_decay(o, p->offset, p->numel) == 0, "no_decay");
    }
    return o;
}

/* Element i of this PE's part of parameter p, read from the whole tensor w
 * (the reference's), by the test's own rule; wte's rows are split over the
 * model's vocabulary of `vocab` tokens. */
static inline float slice_of(const sym_param_t *p, const float *w, int tp, int r, size_t i,
                             int vocab) {
    int64_t cols = p->ndim > 1 ? p->shape[1] : 1, row = (int64_t)i / cols, col = (int64_t)i % cols;
    if (p->tp_dim == 1) return w[row * cols * tp + r * cols + col];
    if (p->tp_dim < 0) return w[i];
    if (!strcmp(p->name, "wte")) {
        int64_t lo, len;
        sym_shard_range(vocab, tp, r, &lo, &len);
        return w[(lo + row) * cols + col];
    }
    int64_t sec = strstr(p->name, "c_attn") ? 3 : 1, per = p->shape[0] / sec;
    int64_t full_row = (row / per) * per * tp + r * per + row % per;
    return w[full_row * cols + col];
}

/* The config of `spec` with weights from `seed`. */
static inline sym_model_config_t test_gpt_config(const char *spec, uint64_t seed) {
    sym_model_config_t cfg;
    memset(&cfg, 0, sizeof cfg);
    CHECK(sym_model_parse(spec, &cfg) == 0, "%s", sym_last_error());
    cfg.seed = seed;
    return cfg;
}

/* tok (steps, gb, seq + 1): one batch the model can learn, repeated, with a
 * fresh last row each step; tokens in [0, vocab). */
static inline void test_gpt_tokens(int32_t *tok, int steps, int gb, int seq, int vocab,
                                   uint64_t seed) {
    test_rng_t rng = test_rng(seed, 1);
    size_t row = (size_t)seq + 1, step = (size_t)gb * row;
    for (int s = 0; s < steps; s++)
        for (int r = 0; r < gb; r++)
            for (size_t t = 0; t < row; t++)
                tok[s * step + r * row + t] = s && r < gb - 1 ? tok[r * row + t]
                                                              : (int32_t)(test_next(&rng) % vocab);
}

#endif
