/*
 * clip.c — gradient clipping by global norm: one norm over every parameter's
 * gradient (accumulated in double), and one scale factor for all of them.
 * Called after the all-reduce, so every PE computes the same norm.
 */
#include <math.h>

#include <symtrain/optim.h>

double sym_grad_norm(const float *g, size_t n) {
    double s = 0.0;
    for (size_t i = 0; i < n; i++) s += (double)g[i] * (double)g[i];
    return sqrt(s);
}

void sym_grad_scale_to(float *g, size_t n, double norm, double max_norm) {
    if (max_norm > 0.0 && norm > max_norm) {
        float scale = (float)(max_norm / (norm + 1e-6));
        for (size_t i = 0; i < n; i++) g[i] *= scale;
    }
}

double sym_grad_clip(float *g, size_t n, double max_norm) {
    double norm = sym_grad_norm(g, n);
    sym_grad_scale_to(g, n, norm, max_norm);
    return norm;
}
