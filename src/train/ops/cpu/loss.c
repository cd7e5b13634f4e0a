/*
 * loss.c — softmax cross-entropy, computed stably (log-sum-exp with the row
 * maximum subtracted, sums in double), with its gradient in the same pass
 * over the row, so a vocabulary-wide row is read twice and written once and
 * no probabilities are kept beside the logits.
 *
 * The vocabulary-parallel form (sym_softmax_xent_shard) never gathers the
 * logits: each PE of the team holds a block of the columns, and three small
 * all-reduces of per-row numbers over the team stand for the row-wide passes:
 * the row maximum (max), the sum of exp(z - max) and the target's logit from
 * the PE that holds it (one sum, in double), and, for the accuracy, the first
 * column holding the maximum (min).
 */
#include <math.h>
#include <stdint.h>
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

/* Whether a label of labels (B) is outside [0, classes) (the error recorded). */
static int bad_label(const int32_t *labels, int64_t B, int classes) {
    for (int64_t r = 0; r < B; r++)
        if (labels[r] < 0 || labels[r] >= classes) {
            sym__error(SYM_EINVAL, "label %d of row %lld is not in [0, %d)", (int)labels[r],
                       (long long)r, classes);
            return 1;
        }
    return 0;
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
    if (bad_label(labels, B, classes)) return NAN;
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

/* ---- vocabulary-parallel ---- */

/* logits (B,nv): columns [v0, v0 + nv) of the vocabulary of `classes`;
 * labels (B); dlogits (B,nv) may be NULL or the logits. */
double sym_softmax_xent_shard(const sym_tensor_t *logits, const int32_t *labels, int64_t v0,
                              int classes, shmem_team_t team, float grad_scale,
                              sym_tensor_t *dlogits, int64_t *correct) {
    int64_t B = logits->shape[0], nv = logits->shape[1], ld = logits->stride[0];
    if (v0 < 0 || v0 + nv > classes) {
        sym__error(SYM_EINVAL, "cross-entropy: columns [%lld, %lld) of a vocabulary of %d",
                   (long long)v0, (long long)(v0 + nv), classes);
        return NAN;
    }
    if (bad_label(labels, B, classes)) return NAN;
    size_t nb = (size_t)(B ? B : 1);
    float *mx = malloc(nb * sizeof *mx);
    double *st = malloc(2 * nb * sizeof *st); /* per row: sum of exp, the target's logit */
    int32_t *first = correct ? malloc(nb * sizeof *first) : NULL;
    double total = NAN;
    if (!mx || !st || (correct && !first)) {
        sym__error(SYM_ENOMEM, "out of memory for the loss of %lld rows", (long long)B);
        goto out;
    }
    const float *Z = (const float *)logits->data;
    for (int64_t r = 0; r < B; r++) {
        const float *z = Z + r * ld;
        float m = -INFINITY;
        for (int64_t c = 0; c < nv; c++) m = z[c] > m ? z[c] : m;
        mx[r] = m;
    }
    if (sym__comm_max_f32(team, mx, (size_t)B)) goto out;
    for (int64_t r = 0; r < B; r++) {
        const float *z = Z + r * ld;
        double sum = 0.0;
        for (int64_t c = 0; c < nv; c++) sum += exp((double)z[c] - (double)mx[r]);
        int64_t y = (int64_t)labels[r] - v0;
        st[2 * r] = sum;
        st[2 * r + 1] = y >= 0 && y < nv ? (double)z[y] : 0.0;
        if (first) {
            first[r] = INT32_MAX;
            for (int64_t c = 0; c < nv && first[r] == INT32_MAX; c++)
                if (z[c] == mx[r]) first[r] = (int32_t)(v0 + c);
        }
    }
    if (sym__comm_sum_f64(team, st, 2 * (size_t)B)) goto out;
    if (first && sym__comm_min_i32(team, first, (size_t)B)) goto out;
    total = 0.0; /* in row order: the same on every PE of the team */
    int64_t right = 0;
    for (int64_t r = 0; r < B; r++) {
        double lse = (double)mx[r] + log(st[2 * r]);
        total += lse - st[2 * r + 1];
        if (first) right += first[r] == labels[r];
        if (!dlogits) continue;
        const float *z = Z + r * ld;
        float *d = (float *)dlogits->data + r * dlogits->stride[0];
        for (int64_t c = 0; c < nv; c++) {
            double p = exp((double)z[c] - lse);
            d[c] = (float)((p - (v0 + c == labels[r] ? 1.0 : 0.0)) * grad_scale);
        }
    }
    if (correct) *correct = right;
out:
    free(mx);
    free(st);
    free(first);
    return total;
}
