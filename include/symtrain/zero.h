/*
 * symtrain/zero.h — sharded data parallelism (ZeRO stages 1 and 2) on the
 * gradient buckets of symtrain/dist.h.
 *
 * Every PE of the data-parallel team holds the whole model (parameters) but
 * only its shard of the optimizer: the shard is this PE's block of every
 * gradient bucket (shmemx_block_range), about 1/N of the parameters. A step:
 *   backward, each bucket reduce-scattered (averaged) into this PE's shard of
 *   the gradient as soon as it is final (sym_ddp_shard) -> sym_zero_clip: the
 *   global norm from the shards' sums of squares, summed over the team (in
 *   fp64, in team order), the control floats averaged, the shard clipped ->
 *   sym_zero_step: the optimizer (SGD or AdamW, decay on the matrices only,
 *   as the parameter table says) on the shard's parameters, in place in the
 *   model's full array, then the parameters all-gathered (every PE pulls the
 *   other blocks from their owners' arrays).
 * Stage 1 keeps the full gradient array between buckets (the model's
 * backward writes into it); stage 2 hands each bucket's pages of it back to
 * the OS as soon as its reduce-scatter is complete (see sym_ddp_shard), so
 * between steps a PE holds only its gradient shard.
 * Elementwise the update is the unsharded one, so the results equal plain
 * data parallelism's up to the fp32 rounding of the reduction order.
 *
 * The optimizer state lives in symmetric memory (the same size on every PE:
 * the largest shard of the job), so one PE can gather the whole state with
 * one-sided reads between steps, for a checkpoint, without the others.
 *
 * Inside a device mesh (--parallel dp=,tp=,pp=) the team is the dp team of
 * the mesh and "the model" this PE's part of it (its tp slice of its
 * pipeline stage's parameters): each PE shards its own parameters over the
 * PEs that hold the same part. sym_zero_norm_over then makes the clipping
 * norm the whole model's.
 */
#ifndef SYMTRAIN_ZERO_H
#define SYMTRAIN_ZERO_H

#include <shmem.h>
#include <stddef.h>
#include <stdint.h>

#include <symtrain/dist.h>
#include <symtrain/nn.h>
#include <symtrain/optim.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sym_zero sym_zero_t; /* opaque */

/* stage 1 or 2. ddp: the run's buckets over the P gradients (no control
 * floats), on `team`; the zero object shards it (sym_ddp_shard) and keeps
 * using it. table (nt entries): the model's parameters, for weight decay
 * and sym_zero_norm_over. Collective over the job (symmetric allocations,
 * sized for the largest shard of any team): every PE creates one, each
 * with its own team. */
int sym_zero_create(int stage, sym_ddp_t *ddp, shmem_team_t team, const sym_optim_config_t *cfg,
                    size_t P, const sym_param_t *table, int nt, sym_zero_t **out);
void sym_zero_destroy(sym_zero_t *z);

/* A model split beyond the team (tp, pp): the clipping norm of
 * sym_zero_clip counts on this PE only the tensors i of the table with
 * counted[i] != 0 (a tensor whole on every PE of a tp team: on one of them;
 * the last pipeline stage's copy of a tied embedding: on none), and the
 * team's sum of squares is then summed over each of teams[0, nteams) in
 * turn (at most 2). Without it every element of the shard counts and the
 * team's sum is the norm. Local; before the first sym_zero_clip. */
int sym_zero_norm_over(sym_zero_t *z, const unsigned char *counted, const shmem_team_t *teams,
                       int nteams);

/* After sym_ddp_finish: ctrl[0, nctrl) (at most 4 floats, one per PE) become
 * their average over the team; *norm gets the global L2 norm of the averaged
 * gradient, and the shard is scaled so that it is at most max_norm (<= 0:
 * left alone), as sym_grad_clip does for a whole array. Collective over the
 * team and the teams of sym_zero_norm_over. */
int sym_zero_clip(sym_zero_t *z, float *ctrl, int nctrl, double max_norm, double *norm);
/* The optimizer on the shard at rate lr, then params all-gathered. params:
 * the P parameters, in symmetric memory (the model's, built for data
 * parallelism), the same on every PE before the first step. Collective. */
int sym_zero_step(sym_zero_t *z, float *params, float lr);

uint64_t sym_zero_steps(const sym_zero_t *z);
/* This PE's optimizer state in bytes (momentum, or m and v, of its shard). */
size_t sym_zero_state_bytes(const sym_zero_t *z);
/* This PE's shard, in parameters. */
size_t sym_zero_shard_len(const sym_zero_t *z);
/* For a sharded checkpoint writer: this PE's state array i (0: momentum or
 * m, 1: v; NULL past them), sym_zero_shard_len floats, packed as the shard is
 * (bucket b's block at the shard offset sym_ddp_block gives, covering
 * parameters [bucket lo + block offset, + length) of the flat array). */
float *sym_zero_state_shard(sym_zero_t *z, int i);

/* The gathered optimizer state: byte for byte what sym_optim_state_save
 * writes for an unsharded optimizer of all P parameters, so a checkpoint does
 * not depend on the layout (zero 0, 1, 2, any PE count read it). save: any
 * one PE, between steps (after sym_zero_step, before the next step's
 * reduce-scatter: then no PE can change its state), reading the others'
 * shards one-sidedly; it needs 4 bytes per parameter per state array of
 * temporary memory. load: every PE keeps its shard of it. */
size_t sym_zero_state_size(const sym_zero_t *z);
/* The same into `full`, an unsharded optimizer of the same kind over all P
 * parameters (its state arrays and step count), for a caller that gathers
 * further (tp: the whole tensors); put: this PE's shard of full's state. */
int sym_zero_state_get(const sym_zero_t *z, sym_optim_t *full);
void sym_zero_state_put(sym_zero_t *z, sym_optim_t *full);
int sym_zero_state_save(const sym_zero_t *z, void *buf);
int sym_zero_state_load(sym_zero_t *z, const void *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif
