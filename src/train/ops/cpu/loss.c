/*
 * loss.c — softmax cross-entropy, computed stably (log-sum-exp with the row
 * maximum subtracted), with its gradient in the same pass.
 */
#include <math.h>

#include <symtrain/nn.h>

/* logits (B,C), labels (B); dlogits (B,C) may be NULL */
double sym_softmax_xent(const sym_tensor_t *logits, const uint8_t *labels, float grad_scale,
                        sym_tensor_t *dlogits, int64_t *correct) {
    int64_t B = logits->shape[0], C = logits->shape[1];
    double total = 0.0;
    int64_t right = 0;
    for (int64_t r = 0; r < B; r++) {
        const float *z = logits->data + r * logits->stride[0];
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
        int y = labels[r];
        total += lse - (double)z[y];
        right += best == y;
        if (dlogits) {
            float *d = dlogits->data + r * dlogits->stride[0];
            for (int64_t c = 0; c < C; c++) {
                double p = exp((double)z[c] - lse);
                d[c] = (float)((p - (c == y ? 1.0 : 0.0)) * grad_scale);
            }
        }
    }
    if (correct) *correct = right;
    return total;
}
