/*
 * async.h — checkpoints written while training goes on (--ckpt-async on, the
 * default): what the step loop (loop.c) needs around the writer threads of
 * ckpt.c and dist.c. See async.c for the policy.
 */
#ifndef SYM_TRAIN_CKPT_ASYNC_H
#define SYM_TRAIN_CKPT_ASYNC_H

#include <stdint.h>

#include <symtrain/ckpt.h>

typedef struct sym__ckpt_async sym__ckpt_async_t; /* opaque */

/* Collective over SHMEM_TEAM_WORLD (a small symmetric buffer). */
int sym__ckpt_async_create(sym__ckpt_async_t **out);
void sym__ckpt_async_destroy(sym__ckpt_async_t *a); /* collective; NULL: nothing */

/* A write this PE saw fail with rc (sym_last_error's sentence is kept); `own`:
 * this PE's own write, not news of another PE's. Reported at the next agree. */
void sym__ckpt_async_failed(sym__ckpt_async_t *a, int rc, int own);

/* After a step, with the writers of the run: w (PE 0's single writer, NULL
 * elsewhere) and d (every PE's sharded one; its poll is collective, so with
 * d every PE calls this alike). A finished write's failure is noted (as by
 * _failed); d's save is committed once every PE's shard is in. `wait`: wait
 * for the write in flight first (the run's end, --ckpt-async off). */
void sym__ckpt_async_poll(sym__ckpt_async_t *a, sym_ckpt_writer_t *w, sym_ckpt_dist_t *d,
                          int wait);

/* 1 while a write of w or d (either may be NULL) is not done / committed. */
int sym__ckpt_in_flight(sym_ckpt_writer_t *w, sym_ckpt_dist_t *d);

/* Every PE, after every step (collective: one all-reduce of two ints):
 * *due = PE 0's `due_here` (its --ckpt-every verdict), and any PE's noted
 * failure ends the run: every PE returns it (SYM_EIO or the writer's code),
 * with *teller set on the one PE whose sentence (sym_last_error) is to be
 * printed (the lowest that saw its own write fail). 0 otherwise. */
int sym__ckpt_async_agree(sym__ckpt_async_t *a, int due_here, int *due, int *teller);

/* sym_ckpt_save without the copy (in ckpt.c; loop.c's GPU pinned snapshot):
 * the files stay the caller's and must not change until the write is done
 * (the next save or sym_ckpt_wait has returned); ready(user) runs on the
 * writer thread before it reads them (the GPU's copy into them completes
 * there), and its failure is the save's. */
int sym__ckpt_save_borrowed(sym_ckpt_writer_t *w, const sym_ckpt_meta_t *meta,
                            const sym_ckpt_file_t *files, int nfiles, int (*ready)(void *),
                            void *user);

/* ---- the stall: the step loop's time spent on checkpoints ---- */
void sym__ckpt_async_stall(sym__ckpt_async_t *a, double seconds);
/* Checkpoints taken, their stalls' sum and the largest one. */
void sym__ckpt_async_figures(const sym__ckpt_async_t *a, int64_t *n, double *total,
                             double *largest);

#endif
