/*
 * symtrain/dist.h — data parallelism: averaging gradients across the PEs of
 * a team in buckets that overlap the backward pass.
 *
 * The gradients are one flat symmetric array (the model's). Buckets are
 * contiguous ranges of it, cut at tensor boundaries from the end (the last
 * layer's gradients are ready first), each about bucket_bytes large. During
 * backward the model reports "everything from offset lo on is final"
 * (sym_grad_ready_fn); every bucket that lies wholly inside starts its
 * non-blocking all-reduce (shmemx_allreduce_nb on the team, fp32, SHMEMX_AVG)
 * at once, in place, while the earlier layers' backward still runs.
 * sym_ddp_finish starts whatever is left and waits for all of them: after it,
 * every PE of the team holds the same averaged gradients. The team is the
 * data-parallel group: SHMEM_TEAM_WORLD for plain data parallelism, a row of
 * the device mesh when tensor or pipeline parallelism splits the model.
 *
 * With one PE in the team nothing is communicated (the average of one is itself).
 */
#ifndef SYMTRAIN_DIST_H
#define SYMTRAIN_DIST_H

#include <shmem.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sym_ddp sym_ddp_t; /* opaque */

typedef struct {
    int buckets;             /* how the array was cut */
    uint64_t bytes_reduced;  /* this step's all-reduce payload */
    double wait_s;           /* this step's time blocked in sym_ddp_finish */
    double issue_s;          /* this step's time spent starting all-reduces */
} sym_ddp_stats_t;

/* grads (count floats) must be symmetric memory (same on every PE) when the
 * team has more than one PE. cuts[0..ncuts) are the offsets where tensors start
 * (ascending, cuts[0] == 0); a bucket boundary is always one of them. Every
 * member of the team calls it with the same arguments. */
int sym_ddp_create(shmem_team_t team, float *grads, size_t count, const size_t *cuts,
                   int ncuts, size_t bucket_bytes, sym_ddp_t **out);
void sym_ddp_destroy(sym_ddp_t *d);
/* A new step: no bucket started yet. */
void sym_ddp_begin(sym_ddp_t *d);
/* The backward hook (a sym_grad_ready_fn): grads [lo, count) are final. */
void sym_ddp_ready(void *ddp, size_t lo);
/* Start what is left, wait for everything. Returns 0 or SYM_ECOMM. */
int sym_ddp_finish(sym_ddp_t *d);
/* Bucket b covers grads [*lo, *hi); buckets are numbered in launch order. */
int sym_ddp_num_buckets(const sym_ddp_t *d);
void sym_ddp_bucket(const sym_ddp_t *d, int b, size_t *lo, size_t *hi);
sym_ddp_stats_t sym_ddp_stats(const sym_ddp_t *d);

/* Blocking sum across the team's PEs of x (n floats, symmetric), in place;
 * nothing with one PE. */
int sym_allreduce_sum_f32(shmem_team_t team, float *x, size_t n);

#ifdef __cplusplus
}
#endif

#endif
