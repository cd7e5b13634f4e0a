/*
 * train_dckpt.h — for the sharded-checkpoint tests: compare two checkpoints'
 * global tensors element by element, whatever layouts wrote them, through the
 * reader every PE uses on resume (sym_dckpt_read of each whole tensor).
 */
#ifndef SYM_TRAIN_DCKPT_H
#define SYM_TRAIN_DCKPT_H

#include <symtrain/ckpt.h>
#include <symtrain/error.h>

#include "train_e2e.h"

/* Checkpoint directories a and b hold the same tensors, bit for bit, and the
 * same position; returns how many tensors. max_diff (may be NULL): instead of
 * requiring equality, the largest |a - b| over every fp32 element. */
static inline int dckpt_compare(const char *a, const char *b, double *max_diff) {
    sym_dckpt_t *x, *y;
    CHECK(sym_dckpt_open(a, &x) == 0, "open %s: %s", a, sym_last_error());
    CHECK(sym_dckpt_open(b, &y) == 0, "open %s: %s", b, sym_last_error());
    int n = sym_dckpt_num_tensors(x);
    CHECK(n > 0 && n == sym_dckpt_num_tensors(y), "%s has %d tensors, %s %d", a, n, b,
          sym_dckpt_num_tensors(y));
    CHECK(sym_dckpt_meta(x)->step == sym_dckpt_meta(y)->step &&
              sym_dckpt_meta(x)->optim_steps == sym_dckpt_meta(y)->optim_steps,
          "%s and %s are of different steps", a, b);
    if (max_diff) *max_diff = 0;
    for (int i = 0; i < n; i++) {
        sym_ckpt_slice_t s, t;
        CHECK(sym_dckpt_tensor(x, i, &s, NULL) == 0, "tensor %d", i);
        t = s;
        size_t bytes = (size_t)sym_ckpt_slice_elems(&s) * sym_dtype_size(s.dtype);
        s.data = malloc(bytes);
        t.data = malloc(bytes);
        CHECK(s.data && t.data, "out of memory");
        CHECK(sym_dckpt_read(x, &s) == 0, "%s: %s", a, sym_last_error());
        CHECK(sym_dckpt_read(y, &t) == 0, "%s: %s", b, sym_last_error());
        if (max_diff) {
            const float *p = s.data, *q = t.data;
            for (size_t k = 0; k < bytes / 4; k++) {
                double d = fabs((double)p[k] - q[k]);
                if (d > *max_diff) *max_diff = d;
            }
        } else {
            CHECK(memcmp(s.data, t.data, bytes) == 0, "tensor %s differs between %s and %s",
                  s.name, a, b);
        }
        free(s.data);
        free(t.data);
    }
    sym_dckpt_close(x);
    sym_dckpt_close(y);
    return n;
}

/* Staging directories (.tmp-step-*) of uncommitted saves in checkpoint directory dir. */
static inline int dckpt_staging(const char *dir) {
    DIR *d = opendir(dir);
    CHECK(d != NULL, "opendir %s", dir);
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d))) n += !strncmp(e->d_name, ".tmp-step-", 10);
    closedir(d);
    return n;
}

#endif
