/*
 * symtrain/metrics.h — the per-step metrics file and the plot drawn from it.
 *
 * The file holds one JSON object per line. A training step:
 *   {"step":12,"epoch":0,"loss":0.51234567,"lr":0.001,"grad_norm":1.25,
 *    "samples_per_s":12345.6,"tokens_per_s":12345.6,"compute_s":0.0123,"comm_s":0.0011,
 *    "bytes_allreduced":2143272}
 * (step is the number of steps done after this one; loss is the global batch's
 * mean loss, printed with 9 significant digits so the fp32 value round-trips).
 * On several PEs the record goes on with each PE's load and share:
 *   "balance":"throughput","rebalanced":0,"stragglers":[3],
 *   "pes":[{"pe":0,"share":20,"samples_per_s":480.2,"compute_s":0.0416,
 *           "cpu_util":0.98,"mem_bytes":61440000,"mem_frac":0.41,"gpu_util":-1,
 *           "latency_s":0.000012,"straggler":0},...]
 * (share: samples of this step's global batch the PE computed; samples_per_s:
 * its smoothed compute speed; gpu_util -1 where NVML is not there).
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

/* One PE's load during a step (see symtrain/train.h, balancing). */
typedef struct {
    int share;             /* samples of the global batch it computed */
    int straggler;         /* slower per sample than the median by the straggler factor */
    double samples_per_s;  /* smoothed compute speed */
    double compute_s;      /* this step's compute time */
    double cpu_util;       /* cores busy over the step (1 = one core) */
    double mem_bytes;      /* resident memory */
    double mem_frac;       /* memory in use on its device (GPU, else the host), 0..1 */
    double gpu_util;       /* 0..1; -1 when unknown (a CPU PE, or no NVML) */
    double latency_s;      /* its last measurement exchange's duration */
} sym_pe_record_t;

typedef struct {
    int64_t step, epoch;
    float loss, lr;
    double grad_norm;
    double samples_per_s;
    double tokens_per_s;   /* samples x tokens per sample (1 for images) */
    double compute_s, comm_s;
    uint64_t bytes_allreduced;
    float loss_scale;      /* fp16 on the GPU: the loss scale after this step (0: none) */
    int skipped;           /* fp16: an overflow skipped this step's update */
    /* per PE (npes 0: none; pes valid during the call only) */
    int npes;
    const sym_pe_record_t *pes;
    const char *balance;   /* the policy: "off", "throughput", "score" */
    int rebalanced;        /* the shares change after this step */
} sym_step_record_t;

/* Open `path` for appending (created if missing), holding a write lock on it
 * until closed: a file another running job holds is SYM_EBUSY. */
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
