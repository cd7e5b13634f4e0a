/*
 * loss.c — softmax cross-entropy, computed stably (log-sum-exp with the row
 * maximum subtracted, sums in double), with its gradient in the same pass
 * over the row, so a vocabulary-wide row is read twice and written once and
 * no probabilities are kept beside the logits.
 */
#include <math.h>
#include <stdlib.h>

#include <symtrain/nn.h>

#include "core/parallel.h"
#include "internal.h"

typedef struct {
    const sym_tensor_t *logits;
    sym_tensor_t *dlogits;
    const int32_t *labels;
    int classes;
    float grad_scale;
    double *row_loss; /* (B) */
    unsigned char *row_right;
} xent_args_t;

static void xent_rows(size_t lo, size_t hi, void *arg) {
    const xent_args_t *a = arg;
    int64_t C = a->classes, Cp = a->logits->shape[1];
    for (size_t r = lo; r < hi; r++) {
        const float *z = (const float *)a->logits->data + (int64_t)r * a->logits->stride[0];
        int64_t best = 0;
        float mx = z[0];
        for (int64_t c = 1; c < C; c++)
            if (z[c] > mx) {
                mx = z[c];
                best = c;
            }
        double sum = 0.0;
        for (int64_t c = 0; c < C; c++) sum += exp((double)z[c] - (double)mx);
        double lse = (double)mx + log(sum);
        int32_t y = a->labels[r];
        a->row_loss[r] = lse - (double)z[y];
        a->row_right[r] = best == y;
        if (a->dlogits) {
            float *d = (float *)a->dlogits->data + (int64_t)r * a->dlogits->stride[0];
            for (int64_t c = 0; c < C; c++) {
                double p = exp((double)z[c] - lse);
                d[c] = (float)((p - (c == y ? 1.0 : 0.0)) * a->grad_scale);
            }
            for (int64_t c = C; c < Cp; c++) d[c] = 0.0f;
        }
    }
}

/* logits (B,Cp), labels (B); dlogits (B,Cp) may be NULL or the logits */
double sym_softmax_xent(const sym_tensor_t *logits, const int32_t *labels, int classes,
                        float grad_scale, sym_tensor_t *dlogits, int64_t *correct) {
    int64_t B = logits->shape[0], Cp = logits->shape[1];
    if (classes < 1 || classes > Cp) {
        sym__error(SYM_EINVAL, "cross-entropy over %d classes of %lld logits", classes,
                   (long long)Cp);
        return NAN;
    }
    for (int64_t r = 0; r < B; r++)
        if (labels[r] < 0 || labels[r] >= classes) {
            sym__error(SYM_EINVAL, "label %d of row %lld is not in [0, %d)", (int)labels[r],
                       (long long)r, classes);
            return NAN;
        }
    double *row_loss = malloc((size_t)(B ? B : 1) * sizeof *row_loss);
    unsigned char *row_right = malloc((size_t)(B ? B : 1));
    if (!row_loss || !row_right) {
        free(row_loss);
        free(row_right);
        sym__error(SYM_ENOMEM, "out of memory for the loss of %lld rows", (long long)B);
        return NAN;
    }
    xent_args_t a = {logits, dlogits, labels, classes, grad_scale, row_loss, row_right};
    sym__parallel_for((size_t)B, (size_t)B * (size_t)Cp, xent_rows, &a);
    /* Summed in row order, so the total does not depend on the threads. */
    double total = 0.0;
    int64_t right = 0;
    for (int64_t r = 0; r < B; r++) {
        total += row_loss[r];
        right += row_right[r];
    }
    free(row_loss);
    free(row_right);
    if (correct) *correct = right;
    return total;
}
