/*
 * async.c — checkpoints written while training goes on (--ckpt-async on, the
 * default; see async.h): the policy around the writer threads of ckpt.c (PE
 * 0 writes the whole tensors, format 2) and dist.c (every PE its shard,
 * format 3), and the figures of what checkpoints cost the step loop.
 *
 * The snapshot is taken after a step, at the same step on every PE (every
 * PE has finished that step's collectives and its optimizer update, so the
 * state is one consistent point of the run): the parameters, moments and
 * position are copied into host buffers (the CPU's: the writer's own; the
 * GPU's: pinned memory filled on a side stream, loop.c's gpu_snapshot), and
 * the writer thread writes, fsyncs and commits them (ckpt.h's order) while
 * the next steps run.
 *
 * At most one write is in flight. A --ckpt-steps save waits for the one
 * before it (so checkpoints fall on exactly every Nth step, whatever the
 * disk); a --ckpt-every save that falls due while one is still in flight is
 * put off to the first step after it has committed (PE 0's verdict, agreed
 * below), so a time-based checkpoint never makes training wait for the disk.
 * The run's end and a SIGTERM wait for the write to commit (loop.c).
 *
 * A failed write ends the job cleanly: the PE that saw it notes it
 * (sym__ckpt_async_failed), and after the next step every PE learns it in the
 * one small all-reduce that also carries PE 0's --ckpt-every verdict
 * (sym__ckpt_async_agree: two ints, max over the job), returns the error, and
 * the lowest PE whose own write failed says why, once. Nothing is loaded
 * from a failed write: it never reached its rename.
 *
 * --ckpt-async off writes the same bytes, but the step loop waits for each
 * write to commit before the next step: the baseline of the stall figures.
 */
#include <limits.h>
#include <pthread.h>
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ckpt/async.h"
#include "ckpt/ckpt_internal.h"
#include "util/util.h"

struct sym__ckpt_async {
    int *sym;          /* symmetric: [0..1] source, [2..3] the max over the job */
    int me, npes;
    int failed, own;   /* a failure noted here, not yet agreed; this PE's own write */
    int failed_rc;
    char failed_msg[1024];
    int64_t saves;     /* the stall figures */
    double stall, stall_max;
};

int sym__ckpt_async_create(sym__ckpt_async_t **out) {
    *out = NULL;
    sym__ckpt_async_t *a = calloc(1, sizeof *a);
    int *sym = shmem_calloc(4, sizeof(int)); /* collective: before any return */
    if (!a || !sym) {
        free(a);
        if (sym) shmem_free(sym);
        return sym__error(SYM_ENOMEM, "out of memory for the checkpoint agreement");
    }
    a->sym = sym;
    a->me = shmem_my_pe();
    a->npes = shmem_n_pes();
    *out = a;
    return SYM_OK;
}

void sym__ckpt_async_destroy(sym__ckpt_async_t *a) {
    if (!a) return;
    shmem_free(a->sym);
    free(a);
}

void sym__ckpt_async_failed(sym__ckpt_async_t *a, int rc, int own) {
    if (!rc || (a->failed && a->own >= own)) return; /* the first, or the first own one */
    a->failed = 1;
    a->own = own;
    a->failed_rc = rc;
    snprintf(a->failed_msg, sizeof a->failed_msg, "%s", sym_last_error());
}

void sym__ckpt_async_poll(sym__ckpt_async_t *a, sym_ckpt_writer_t *w, sym_ckpt_dist_t *d,
                          int wait) {
    if (w && (wait || !sym__ckpt_busy(w))) sym__ckpt_async_failed(a, sym_ckpt_wait(w), 1);
    if (d) {
        int rc = sym_ckpt_dist_poll(d, wait);
        sym__ckpt_async_failed(a, rc, sym__ckpt_dist_local_failed(d));
    }
}

int sym__ckpt_in_flight(sym_ckpt_writer_t *w, sym_ckpt_dist_t *d) {
    return (w && sym__ckpt_busy(w)) || (d && sym__ckpt_dist_pending(d));
}

int sym__ckpt_async_agree(sym__ckpt_async_t *a, int due_here, int *due, int *teller) {
    *due = 0;
    *teller = 0;
    /* [0]: 2 npes - pe for an own failure, npes - pe for news of one (so the
     * max names the lowest PE that saw its own write fail); [1]: PE 0's verdict */
    a->sym[0] = !a->failed ? 0 : a->own ? 2 * a->npes - a->me : a->npes - a->me;
    a->sym[1] = a->me == 0 && due_here;
    int e = shmem_int_max_reduce(SHMEM_TEAM_WORLD, a->sym + 2, a->sym, 2);
    if (e) return sym__error(SYM_ECOMM, "the checkpoint agreement's all-reduce failed (%d)", e);
    *due = a->sym[3] > 0;
    int top = a->sym[2];
    if (!top) return SYM_OK;
    int pe = top > a->npes ? 2 * a->npes - top : a->npes - top;
    *teller = pe == a->me;
    if (*teller)
        return sym__error(a->failed_rc, "a checkpoint could not be written: %s; training stops "
                          "here. Fix the cause (space, permissions of --ckpt-dir) and --resume "
                          "continues from the newest checkpoint that was committed",
                          a->failed_msg);
    return sym__error(SYM_EIO, "PE %d could not write a checkpoint (it said why)", pe);
}

/* ---- the stall ---- */

void sym__ckpt_async_stall(sym__ckpt_async_t *a, double seconds) {
    a->saves++;
    a->stall += seconds;
    if (seconds > a->stall_max) a->stall_max = seconds;
}

void sym__ckpt_async_figures(const sym__ckpt_async_t *a, int64_t *n, double *total,
                             double *largest) {
    *n = a->saves;
    *total = a->stall;
    *largest = a->stall_max;
}

/* ---- the test hook (ckpt_internal.h) ---- */

static long delay_ms;
static pthread_once_t delay_once = PTHREAD_ONCE_INIT;
static void read_delay(void) { /* the job's first attempt only, as SYMTRAIN_TEST_KILL_AT */
    if (sym__env_int("SYMTRAIN_RESTART_COUNT", 0, 0, LONG_MAX) == 0)
        delay_ms = sym__env_int("SYMTRAIN_TEST_CKPT_WRITE_DELAY_MS", 0, 0, 600000);
}

void sym__ckpt_test_delay(void) {
    pthread_once(&delay_once, read_delay);
    if (delay_ms <= 0) return;
    struct timespec ts = {delay_ms / 1000, (delay_ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
}
