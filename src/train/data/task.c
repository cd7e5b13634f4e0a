/*
 * task.c — loading the training and evaluation splits for the loop, and
 * gathering one batch of either kind (see task.h). The fallbacks live here:
 * without the Fashion-MNIST package the MLP trains on a generated image set,
 * and without the Shakespeare shards of `make data` the GPT trains on a
 * generated corpus; both only when the user did not name the data.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/task.h"
#include "internal.h"

#define GENERATED_CORPUS_BYTES (2u << 20)
#define GPT_EVAL_DEFAULT 256

/* ---- images ---- */

static int load_images(sym__task_t *t, const sym_train_config_t *c, const sym_model_config_t *m,
                       void (*note)(void *, const char *), void *user) {
    int64_t ntrain = c->train_samples ? c->train_samples : 60000;
    int64_t ntest = c->test_samples ? c->test_samples : 10000;
    int rc, generated = c->generated;
    char text[512];
    if (!generated) {
        const char *env = getenv("SYMTRAIN_DATA_DIR");
        const char *dir = c->data_dir ? c->data_dir : env && *env ? env : SYM_FASHION_MNIST_DIR;
        rc = sym_dataset_load_fashion(dir, 1, &t->train);
        if (rc == SYM_ENOENT && !c->data_dir) {
            note(user, sym_last_error());
            snprintf(text, sizeof text,
                     "falling back to a generated data set (%lld training and %lld test images "
                     "of 28x28, 10 classes)",
                     (long long)ntrain, (long long)ntest);
            note(user, text);
            generated = 1;
        } else if (rc) {
            return rc;
        } else if ((rc = sym_dataset_load_fashion(dir, 0, &t->test))) {
            return rc;
        }
    }
    if (generated) {
        if ((rc = sym_dataset_generate(ntrain, m->seed, 1, &t->train)) ||
            (rc = sym_dataset_generate(ntest, m->seed, 0, &t->test)))
            return rc;
    }
    if (c->train_samples) sym_dataset_truncate(&t->train, c->train_samples);
    if (c->test_samples) sym_dataset_truncate(&t->test, c->test_samples);
    t->test.mean = t->train.mean; /* normalise with the training statistics */
    t->test.std = t->train.std;
    if (m->dims[0] != t->train.dim || m->dims[m->nlayers] != t->train.classes)
        return sym__error(SYM_EINVAL,
                          "--model %s does not fit the data: it takes %d inputs and gives %d "
                          "outputs, the data has %d values per sample and %d classes; use "
                          "mlp:%d-...-%d",
                          m->spec, m->dims[0], m->dims[m->nlayers], t->train.dim,
                          t->train.classes, t->train.dim, t->train.classes);
    snprintf(t->name, sizeof t->name, "%s", t->train.name);
    t->n_train = t->train.n;
    t->n_eval = t->test.n;
    t->seq = 1;
    t->dim = t->train.dim;
    return SYM_OK;
}

/* ---- text ---- */

/* The validation glob for a training glob: "train" in the file-name part
 * becomes "val" (llm.c's fineweb_train_*.bin -> fineweb_val_*.bin). */
static int val_pattern(const char *train, char *out, size_t len) {
    const char *base = strrchr(train, '/');
    base = base ? base + 1 : train;
    const char *hit = strstr(base, "train");
    if (!hit) return -1;
    int n = snprintf(out, len, "%.*sval%s", (int)(hit - train), train, hit + 5);
    return n < 0 || (size_t)n >= len ? -1 : 0;
}

static int generated_corpus(sym__task_t *t, uint64_t seed, int seq) {
    char *text = sym_corpus_generate(seed, GENERATED_CORPUS_BYTES);
    if (!text) return sym__error(SYM_ENOMEM, "out of memory for the generated corpus");
    size_t n = strlen(text), cut = n - n / 10;
    while (cut > 0 && text[cut - 1] != '\n') cut--; /* validation starts at a line */
    uint16_t *tok = malloc((n ? n : 1) * sizeof *tok);
    if (!tok) {
        free(text);
        return sym__error(SYM_ENOMEM, "out of memory for the generated corpus");
    }
    for (size_t i = 0; i < n; i++) tok[i] = (unsigned char)text[i];
    free(text);
    int rc = sym_tokens_from_memory(tok, (int64_t)cut, seq, "generated", &t->ttrain);
    if (!rc) rc = sym_tokens_from_memory(tok + cut, (int64_t)(n - cut), seq, "generated", &t->tval);
    free(tok);
    return rc;
}

static int load_text(sym__task_t *t, const sym_train_config_t *c, const sym_model_config_t *m,
                     void (*note)(void *, const char *), void *user) {
    int seq = c->seq ? c->seq : m->max_seq, rc;
    if (seq > m->max_seq)
        return sym__error(SYM_EINVAL, "--seq %d is longer than the model's context T=%d", seq,
                          m->max_seq);
    char text[4600], vpat[4200];
    const char *pattern = c->data_dir ? c->data_dir : SYM_TEXT_DATA_DEFAULT;
    int generated = c->generated;
    if (!generated) {
        rc = sym_tokens_open(pattern, seq, &t->ttrain);
        if (rc == SYM_ENOENT && !c->data_dir) {
            snprintf(text, sizeof text,
                     "no Shakespeare shards at %s (make data fetches and tokenizes them); "
                     "training on a generated corpus instead",
                     pattern);
            note(user, text);
            generated = 1;
        } else if (rc) {
            return rc;
        }
    }
    if (generated) {
        if ((rc = generated_corpus(t, m->seed, seq))) return rc;
    } else {
        const char *vp = c->val_data;
        if (!vp && val_pattern(pattern, vpat, sizeof vpat) == 0) vp = vpat;
        rc = vp ? sym_tokens_open(vp, seq, &t->tval) : SYM_ENOENT;
        if (rc == SYM_ENOENT && !c->val_data) {
            snprintf(text, sizeof text,
                     "no validation shards%s%s (--val-data PATTERN names them); the validation "
                     "loss is measured on training sequences",
                     vp ? " at " : "", vp ? vp : "");
            note(user, text);
            rc = sym_tokens_open(pattern, seq, &t->tval);
        }
        if (rc) return rc;
    }
    int top = t->ttrain.max_token > t->tval.max_token ? t->ttrain.max_token : t->tval.max_token;
    if (top >= m->vocab)
        return sym__error(SYM_EINVAL,
                          "the token data holds token %d and --model %s has a vocabulary of %d; "
                          "use a model with V=%d or more",
                          top, m->spec, m->vocab, top + 1);
    snprintf(t->name, sizeof t->name, "%s", t->ttrain.name);
    t->text = 1;
    t->seq = seq;
    t->n_train = t->ttrain.n;
    if (c->train_samples && c->train_samples < t->n_train) t->n_train = c->train_samples;
    int64_t ne = c->test_samples ? c->test_samples : GPT_EVAL_DEFAULT;
    t->n_eval = ne < t->tval.n ? ne : t->tval.n;
    return SYM_OK;
}

/* ---- the interface ---- */

int sym__task_load(sym__task_t *t, const sym_train_config_t *c, const sym_model_config_t *model,
                   void (*note)(void *, const char *), void *user) {
    memset(t, 0, sizeof *t);
    if (model->kind == SYM_MODEL_GPT) return load_text(t, c, model, note, user);
    return load_images(t, c, model, note, user);
}

void sym__task_free(sym__task_t *t) {
    sym_dataset_free(&t->train);
    sym_dataset_free(&t->test);
    sym_tokens_close(&t->ttrain);
    sym_tokens_close(&t->tval);
}

void sym__task_gather(const sym__task_t *t, int train, const int64_t *idx, int count, float *x,
                      int32_t *tok, int32_t *y, sym_input_t *in) {
    memset(in, 0, sizeof *in);
    in->rows = count;
    if (t->text) {
        sym_tokens_gather(train ? &t->ttrain : &t->tval, idx, count, tok, y);
        in->seq = t->seq;
        in->tokens = tok;
    } else {
        sym_dataset_gather(train ? &t->train : &t->test, idx, count, x, y);
        in->seq = 1;
        in->x = x;
    }
}
