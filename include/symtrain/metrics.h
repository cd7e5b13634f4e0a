/*
 * symtrain/metrics.h — the per-step metrics file and the plot drawn from it.
 *
 * The file holds one JSON object per line. A training step:
 *   {"step":12,"epoch":0,"loss":0.51234567,"lr":0.001,"grad_norm":1.25,
 *    "samples_per_s":12345.6,"tokens_per_s":12345.6,"compute_s":0.0123,"comm_s":0.0011,
 *    "bytes_allreduced":2143272}
 * (step is the number of steps done after this one; loss is the global batch's
 * mean loss, printed with 9 significant digits so the fp32 value round-trips).
 * The end of an epoch:
 *   {"eval":1,"step":235,"epoch":0,"test_loss":0.41,"test_acc":0.8512}
 * A resumed run appends; steps replayed after its checkpoint appear again, and
 * readers take the last record of a step.
 */
#ifndef SYMTRAIN_METRICS_H
#define SYMTRAIN_METRICS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sym_metrics sym_metrics_t; /* opaque */

typedef struct {
    int64_t step, epoch;
    float loss, lr;
    double grad_norm;
    double samples_per_s;
    double tokens_per_s;   /* samples x tokens per sample (1 for images) */
    double compute_s, comm_s;
    uint64_t bytes_allreduced;
} sym_step_record_t;

/* Open `path` for appending (created if missing). */
int sym_metrics_open(const char *path, sym_metrics_t **out);
int sym_metrics_step(sym_metrics_t *m, const sym_step_record_t *r);
int sym_metrics_eval(sym_metrics_t *m, int64_t step, int64_t epoch, double test_loss,
                     double test_acc);
/* Flush and close; returns SYM_EIO if anything could not be written. */
int sym_metrics_close(sym_metrics_t *m);

/* Draw the loss (per step, raw and smoothed) and test accuracy (per epoch)
 * curves of the metrics file `in` as an SVG image `out`. SYM_ENOENT / SYM_EIO
 * for files, SYM_EINVAL when `in` holds no step records. */
int sym_plot_svg(const char *in, const char *out, const char *title);

#ifdef __cplusplus
}
#endif

#endif
