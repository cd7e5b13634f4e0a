/*
 * progress.h — what PE 0 shows while training: a progress bar per epoch on the
 * user's terminal (redrawn in place, at most ten times a second, fitted to the
 * terminal's width), or one plain line per interval when stdout is a file, a
 * pipe, or a launcher's pseudo-terminal (mpirun's, output to a log); both end
 * each epoch with a summary line (with this PE's peak resident memory).
 * SYM_PROGRESS_* (--progress) picks one, or neither (off: summaries only).
 */
#ifndef SYM_TRAIN_PROGRESS_H
#define SYM_TRAIN_PROGRESS_H

#include <stdint.h>

typedef struct {
    int enabled;        /* lines while an epoch runs */
    int summaries;      /* the line at each epoch's end */
    int tty;            /* lines are a bar redrawn in place */
    double interval_s;  /* plain lines: one per interval */
    int64_t epoch, epochs;
    int64_t total;      /* samples in the epoch */
    int64_t done0;      /* samples already done when this run entered the epoch */
    double t0, last;    /* epoch start, last output */
    int drawn;          /* a bar is on the screen */
    int seq;            /* tokens per sample: > 1 shows tokens/s instead of samples/s */
    double flops_per_sample; /* with peak_flops > 0 (a GPU), lines show the MFU */
    double peak_flops;
} sym_progress_t;

/* mode: SYM_PROGRESS_* (include/symtrain/train.h); enabled 0: nothing at all. */
void sym__progress_init(sym_progress_t *p, int enabled, int mode, double interval_s);
void sym__progress_epoch(sym_progress_t *p, int64_t epoch, int64_t epochs, int64_t total,
                         int64_t done);
/* done: samples of the epoch done; loss: the epoch's running mean loss. */
void sym__progress_update(sym_progress_t *p, int64_t done, double loss);
/* The summary line; test_acc < 0 when not evaluated. */
void sym__progress_end_epoch(sym_progress_t *p, int64_t done, double loss, double test_acc);
/* The model FLOPs utilisation at `samples_per_s` (0..1), or -1 without a GPU's peak. */
double sym__progress_mfu(const sym_progress_t *p, double samples_per_s);
/* Clear a half-drawn bar before other output. */
void sym__progress_clear(sym_progress_t *p);

#endif
