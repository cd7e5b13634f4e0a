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
    uint64_t bytes_released; /* ZeRO-2: this step's gradient bytes handed back to the OS */
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

/* ---- sharded gradients (ZeRO, see symtrain/zero.h) ----
 * sym_ddp_shard: from the next step every bucket is reduce-scattered over the
 * team (SHMEMX_AVG) instead of all-reduced: member k receives block k of the
 * bucket (shmemx_block_range of the bucket's length), averaged; a member's
 * blocks lie one after another, in bucket order, in its shard (private memory
 * of sym_ddp_shard_len(d, k) floats). Also with one PE (the shard is then a
 * copy). release (ZeRO-2): once a bucket's reduce-scatter is complete (found
 * from the backward hook, or in finish), the memory pages wholly inside its
 * part of grads are handed back to the OS (madvise MADV_REMOVE: the pages of
 * the symmetric heap's shared memory file are freed, and read as zero when
 * touched again); stats.bytes_released counts them. Where the mapping cannot
 * do that, nothing is freed. Then the caller zeroes grads with
 * sym_ddp_zero_grads, which skips the pages already zero. */
int sym_ddp_shard(sym_ddp_t *d, float *shard, int release);
/* Member pe's block of bucket b: returns its length; *shard_off (may be NULL)
 * gets where it lies in that member's shard. The block's place in grads is
 * bucket lo + shmemx_block_range's offset. */
size_t sym_ddp_block(const sym_ddp_t *d, int b, int pe, size_t *shard_off);
size_t sym_ddp_shard_len(const sym_ddp_t *d, int pe);
/* grads[0, count) = 0, the pages handed back left alone (they are zero). */
void sym_ddp_zero_grads(sym_ddp_t *d);

/* Blocking sum across the team's PEs of x (n floats, symmetric), in place;
 * nothing with one PE. */
int sym_allreduce_sum_f32(shmem_team_t team, float *x, size_t n);

#ifdef __cplusplus
}
#endif

#endif
