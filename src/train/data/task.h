/*
 * task.h — what the training loop learns from, behind one interface: images
 * with labels for an MLP (Fashion-MNIST, or the generated set), or windows of
 * a token stream for a GPT (llm.c shards, or a generated corpus). Either way
 * a split is `n` samples the sharded loader (data.h) permutes and deals out;
 * gathering a batch fills the model's input and the labels the loss needs
 * (a class per image, or the next token at every position).
 */
#ifndef SYM_TRAIN_TASK_H
#define SYM_TRAIN_TASK_H

#include <symtrain/data.h>
#include <symtrain/nn.h>
#include <symtrain/train.h>

typedef struct {
    int text;                  /* token windows (GPT), else images (MLP) */
    char name[64];             /* the training split's name (manifests, progress) */
    int64_t n_train, n_eval;   /* samples in each split (n_eval after truncation) */
    int seq;                   /* tokens per sample; 1 for images */
    int dim;                   /* images: values per sample */
    sym_dataset_t train, test; /* images */
    sym_tokens_t ttrain, tval; /* tokens */
} sym__task_t;

/* Load the data `c` names for `model` (its input width and classes, or its
 * vocabulary and context). note(user, text) is called for what PE 0 should
 * say (a fallback to generated data). Returns 0, or a SYM_E* code with the
 * error recorded. */
int sym__task_load(sym__task_t *t, const sym_train_config_t *c, const sym_model_config_t *model,
                   void (*note)(void *user, const char *text), void *user);
void sym__task_free(sym__task_t *t);

/* Samples idx[0..count) of the training (train != 0) or evaluation split:
 * images into x (count, dim) and labels y (count); token windows into tok
 * (count, seq) and their targets y (count * seq). Fills in the model's input. */
void sym__task_gather(const sym__task_t *t, int train, const int64_t *idx, int count, float *x,
                      int32_t *tok, int32_t *y, sym_input_t *in);

#endif
