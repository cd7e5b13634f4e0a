/*
 * symtrain/pipeline.h — pipeline parallelism for the GPT: its blocks split
 * into stages over the PEs of a pipeline, micro-batches, the 1F1B schedule.
 *
 * A stage (sym_gpt_stage_t) holds contiguous blocks, or with V virtual
 * stages V chunks of them (chunk c of the S V on stage c % S, Megatron's
 * interleaved schedule); the first stage also the embeddings (wte, wpe), the
 * last ln_f and the LM head. The head is tied to wte: the last stage holds its own copy of wte
 * (drawn from the same stream, so equal to stage 0's), and after the
 * backward the first and last stage sum their wte gradients (an all-reduce
 * over those two PEs), so both apply the same update and the copies stay
 * equal bit for bit.
 *
 * Activations go forward and their gradients backward one-sided: the sender
 * puts a micro-batch's (rows x seq, C) tensor with shmem_putmem_signal into
 * the receiver's symmetric inbox (a ring of slots; the signal is the
 * message's sequence number), with no handshake. Credits bound the ring:
 * the receiver adds one to the sender's credit counter (an atomic add) once
 * it has copied a slot out, and the sender waits for a credit before it
 * reuses a slot. Counters only grow, across steps, so nothing is ever reset.
 *
 * Symmetric memory differs by stage (the stages hold different layers), so
 * the layout is kept the same on every PE: the inboxes (sized for the one
 * activation shape of a GPT, the same on every stage) are allocated first, on
 * every PE, then each stage's parameter pool is sized for the largest
 * stage's parameters. Every later symmetric allocation of the job then lands
 * at the same offset on every PE (docs/architecture.md).
 *
 * Data parallelism: with a dp dimension in the mesh, each stage's gradients
 * are averaged over its dp team (the PEs holding the same stage), with the
 * bucketed DDP overlapped with the last micro-batch's backward. With ZeRO
 * (sym_pipe_config_t.shard) the same buckets are reduce-scattered into the
 * shards of symtrain/zero.h instead, and the caller clips (sym_zero_clip)
 * and steps. The tied wte's gradients are summed over the first and last
 * stage before the dp reduction of their bucket (the one at offset 0,
 * held back until the step's backwards are done), so either reduction
 * sees the whole gradient. Tensor
 * parallelism: with a tp dimension each stage is split over its tp team
 * (sym_model_create_tp's split); the residual stream is whole on every PE of
 * a tp team, so tp rank r of stage s sends to tp rank r of stage s + 1. With
 * sequence parallelism (cfg.seq_parallel) the stream is split over the team
 * and tp rank r passes its shard alone: a CPU stage's positions
 * sym_shard_range(seq, tp, r) of each sequence, a device's rows
 * [r R, r R + n) of the rows x seq, R = ceil(rows x seq / tp) (the last
 * rank's n shorter); an inbox slot holds rows x ceil(seq / tp) positions,
 * room for either kind's shard.
 */
#ifndef SYMTRAIN_PIPELINE_H
#define SYMTRAIN_PIPELINE_H

#include <shmem.h>
#include <stddef.h>
#include <stdint.h>

#include "dist.h"
#include "dtensor.h"
#include "nn.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- a stage of the GPT ---- */

#define SYM_GPT_MAX_CHUNKS 32 /* model chunks a stage holds (virtual stages) */

typedef struct {
    int chunks;              /* model chunks held: 1, or V with interleaved virtual stages */
    int first_layer[SYM_GPT_MAX_CHUNKS], layers[SYM_GPT_MAX_CHUNKS];
                             /* chunk k: blocks [first_layer[k], first_layer[k] + layers[k]),
                                the chunks in ascending order */
    int embed;               /* chunk 0 holds wte and wpe (the model's first chunk) */
    int head;                /* the last chunk holds ln_f and the LM head, with a copy of
                                wte (the model's last chunk) */
    int slots;               /* activation sets: chunk forwards between forward and backward */
    size_t reserve;          /* floats of parameters the state pool makes room for (the
                                largest stage's), so every PE's pool is the same size */
} sym_gpt_stage_t;

/* A GPT stage (every PE of the job calls it, collectively when symmetric;
 * the stages differ, `reserve` is the same on all), split over the PEs of
 * `tp` as sym_model_create_tp splits the whole model (SHMEM_TEAM_INVALID:
 * whole). Its tensors keep the whole model's names and their index
 * (sym_param_t.index); its weights are the 1-PE model's (or their slices). forward: a stage without the embeddings takes in->x, the
 * previous stage's output (rows x seq, C), and one without the head returns
 * its last block's output (rows x seq, C) in place of logits; backward then
 * takes that output's gradient in place of dlogits. */
int sym_model_create_stage(const sym_model_config_t *cfg, int max_rows, int symmetric,
                           shmem_team_t tp, const sym_gpt_stage_t *st, sym_model_t **out);
/* The activation set the next forward writes and the next backward reads,
 * 0 <= slot < st->slots. */
void sym_model_use_slot(sym_model_t *m, int slot);
/* The chunk the next forward and backward run, 0 <= chunk < st->chunks: its
 * blocks; the embeddings on chunk 0 of an embed stage, ln_f and the head on
 * the last chunk of a head stage. An activation set holds one chunk's
 * forward, whichever chunk. */
void sym_model_use_chunk(sym_model_t *m, int chunk);
/* After a backward of a chunk without the embeddings: the gradient of its
 * input (rows x seq, C), valid until the next backward. */
const float *sym_model_input_grad(const sym_model_t *m);

/* ---- the pipeline ---- */

typedef struct sym_pipe sym_pipe_t; /* opaque */

typedef struct {
    int micro_batches; /* M >= 1 a step */
    int micro_rows;    /* the most sequences in a micro-batch (an inbox slot's size) */
    int seq;           /* tokens per sequence */
    int inbox_slots;   /* slots of each inbox (0: the number of stages) */
    double bucket_mb;  /* the dp average's buckets */
    int shard;         /* ZeRO: the dp buckets exist even with dp=1, for sym_zero_create
                          (sym_pipe_ddp) to shard; the caller clips and steps */
    int params_only;   /* a device computes the stage (sym_pipe_use_device): the stage
                          model holds the parameters' host copy alone, no activations */
    int virtual_stages; /* V model chunks a stage (0, 1: one contiguous stage); V > 1
                          interleaves them: chunk c of the S V on rank c % S */
} sym_pipe_config_t;

typedef struct {
    uint64_t sent;         /* messages this PE has put (both directions) */
    uint64_t credit_waits; /* of them, how many waited for a credit (the inbox was full) */
    uint64_t max_ahead;    /* the most messages it had in a receiver's inbox at once */
} sym_pipe_stats_t;

/* Whether V virtual stages fit n_layer blocks, S stages and M micro-batches:
 * 0, or 1 with the reason and the fix in why (len bytes). */
int sym_pipe_virtual_check(int n_layer, int S, int V, int M, char *why, size_t len);

/* The plan sym_pipe_create follows: cfg's n_layer blocks cut into n
 * contiguous chunks (n = S V), chunk c blocks [first[c], + layers[c]),
 * balanced by predicted FLOPs (every block alike, the LM head on the last
 * chunk). The planner counts the same stages. */
void sym_pipe_plan(const sym_model_config_t *cfg, int n, int *first, int *layers);

/* Split cfg's blocks into stages (balanced by predicted FLOPs: a block's
 * matrices and attention; the LM head on the last), one per PE of the mesh's
 * "pp" dimension, build this PE's stage and its inboxes. With V =
 * pc->virtual_stages > 1 the blocks are cut so into S V chunks, chunk c on
 * stage c % S (V chunks a stage), trained in Megatron's interleaved 1F1B
 * order; it needs micro_batches a multiple of S (a device's stage holds its
 * V chunks alike). Collective over SHMEM_TEAM_WORLD: the mesh spans the job. A
 * "dp" dimension, if any, is the stage's data-parallel team, a "tp"
 * dimension its tensor-parallel team. Needs pp x V <= n_layer. */
int sym_pipe_create(const sym_model_config_t *cfg, sym_mesh_t *mesh, const sym_pipe_config_t *pc,
                    sym_pipe_t **out);
void sym_pipe_destroy(sym_pipe_t *p);
sym_model_t *sym_pipe_model(sym_pipe_t *p); /* this PE's stage */
int sym_pipe_stage(const sym_pipe_t *p);    /* 0 .. stages - 1 */
int sym_pipe_stages(const sym_pipe_t *p);
/* The plan: chunk c of the S V (with V = 1: stage c) holds blocks
 * [first, first + layers); chunk c is on stage c % S. */
void sym_pipe_layers(const sym_pipe_t *p, int c, int *first, int *layers);
int sym_pipe_virtual(const sym_pipe_t *p); /* V: chunks a stage */

/* One step's forward and backward of this PE's `rows` sequences in M
 * micro-batches (min(M, rows) when fewer, interleaved the largest multiple of
 * S; the first rows % M one sequence larger), in the 1F1B order (stage s:
 * min(stages - s - 1, M) forwards, then one forward and one backward in
 * turn, then the backwards left). Interleaved, the M V chunk passes go in
 * groups of S micro-batches chunk by chunk (backwards from the last chunk),
 * with (S - s - 1) 2 + (V - 1) S warm-up forwards. tokens
 * (rows, seq) are read on the first stage, labels (rows x seq) on the last,
 * whose loss gradient is grad_scale x the summed loss. After it the
 * gradients are zeroed-then-summed over the micro-batches, the tied wte's over
 * the first and last stage, and averaged over the dp team (with shard:
 * reduce-scattered into the shards of the zero object over sym_pipe_ddp).
 * *loss_sum: the summed loss of this PE's predictions on the last stage's tp
 * rank 0, 0 elsewhere (so a sum over the job counts each prediction once). Every
 * stage of a pipeline passes the same rows (<= M x micro_rows). step and row0
 * (the global row of this PE's row 0) place the dropout masks, as
 * sym_forward_t's: the same masks as a 1-PE run's. */
int sym_pipe_step(sym_pipe_t *p, const int32_t *tokens, const int32_t *labels, int rows,
                  uint64_t step, int64_t row0,
                  float grad_scale, double *loss_sum);
/* Forward only, in micro-batches of at most micro_rows, each through every
 * chunk in turn: rows sequences.
 * On the last stage's tp rank 0 *loss_sum and *correct get the summed loss
 * and the right arg-maxes of its predictions; 0 elsewhere. */
int sym_pipe_eval(sym_pipe_t *p, const int32_t *tokens, const int32_t *labels, int rows,
                  double *loss_sum, int64_t *correct);
/* The global gradient norm over the whole pipeline (the tied wte counted
 * once, a tensor split over tp summed over it), and the gradients scaled to
 * max_norm when larger (0: no clipping); collective over the pipeline and
 * its tp teams. */
int sym_pipe_clip(sym_pipe_t *p, double max_norm, double *norm);
sym_pipe_stats_t sym_pipe_stats(const sym_pipe_t *p);
/* An inbox's slots and a slot's floats (micro_rows x seq x C; with sequence
 * parallelism micro_rows x ceil(seq / tp) x C): a device's inboxes are made
 * to this size, V of them a direction (one a chunk, sym_pipe_virtual). */
void sym_pipe_inbox(const sym_pipe_t *p, int *slots, size_t *elems);
/* 1 when the messages go device to device (sym_pipe_use_device's choice). */
int sym_pipe_direct(const sym_pipe_t *p);
/* The stage's dp buckets over its gradients (no control floats); NULL
 * without dp > 1 and without shard, or with params_only. */
sym_ddp_t *sym_pipe_ddp(sym_pipe_t *p);
/* The pipeline's team (its stages in order), the first and last stage's
 * pair (SHMEM_TEAM_INVALID on the others, and with one stage), and this
 * stage's activation sets (micro-batches between forward and backward). */
shmem_team_t sym_pipe_team(const sym_pipe_t *p);
shmem_team_t sym_pipe_tied_team(const sym_pipe_t *p);
int sym_pipe_slots(const sym_pipe_t *p);

/* ---- a device that computes the stage ----
 * The same schedule and credits, with the stage's forward and backward on a
 * device (the GPU backend through the trainer). Messages go one of two ways:
 *   device to device (put, inbox_handle and peer_open given, and every pair
 *   of neighbouring stages of the pipeline reaches the other's memory): each
 *   device holds its own inboxes, V a direction (one per local chunk, S'
 *   slots x rows x seq x C each of its compute type, chunk k's slots at
 *   k S' .. k S' + S' - 1: a `box` below is an index into those V S'); the
 *   sender's put copies its output into the receiver's slot, and the host
 *   signal follows the completed copy;
 *   through the host (otherwise, or SYMTRAIN_PIPE_VIA_HOST=1): activations
 *   and gradients reach the device and leave it as host fp32 (rows x seq, C)
 *   arrays (with sequence parallelism the device's shard, above) in the
 *   pipeline's symmetric inboxes.
 * forward: micro-batch in activation set `slot` through local chunk `chunk`
 * (0 .. V-1: the model's chunk chunk S + s), tok on the model's first chunk,
 * else its input: x (host) or, device to device, inbox slot `box` (x NULL);
 * y receives the output of a chunk before the model's last (host; NULL device
 * to device: it stays for put); on the last, lab gives *loss (summed;
 * training: the loss gradient times scale kept for the backward; else
 * *correct, when not NULL). backward: of the micro-batch in `slot` through
 * `chunk` (the one its forward ran): the next chunk's gradient dy (host) or
 * inbox slot `box` (dy NULL), none on the model's last chunk (box -1); dx
 * receives the input's (host; NULL on the model's first chunk, and device to
 * device); first: the step's first backward (the device's gradients, every
 * chunk's, start from zero). Both return with the inbox slot read. put:
 * slot's forward output (fwd) or the last backward's input gradient into
 * inbox slot `box` of the next (fwd) or previous stage (the receiving
 * chunk's part of its inboxes), complete on return. inbox_handle writes what a peer needs
 * to reach this device's inboxes (SYM_PIPE_HANDLE_BYTES at most);
 * peer_open takes the next (next 1) or previous stage's, nonzero where this
 * device cannot reach it. The device keeps the gradients: sym_pipe_step then
 * neither zeroes, sums nor averages the host's, and the caller ends the step
 * on the device (the tied sum, dp, clipping, the update). */
#define SYM_PIPE_HANDLE_BYTES 128
typedef struct {
    void *ctx;
    int (*forward)(void *ctx, int slot, int chunk, int rows, const sym_forward_t *f,
                   const int32_t *tok, const int32_t *lab, const float *x, int box, float scale,
                   float *y, double *loss, int64_t *correct);
    int (*backward)(void *ctx, int slot, int chunk, const float *dy, int box, float *dx,
                    int first);
    int (*put)(void *ctx, int slot, int fwd, int box);
    int (*inbox_handle)(void *ctx, void *handle);
    int (*peer_open)(void *ctx, int next, const void *handle);
} sym_pipe_device_t;
/* From now on (a pipeline created with params_only). Collective over the
 * world: the stages exchange their inboxes' handles and agree on the way. */
int sym_pipe_use_device(sym_pipe_t *p, const sym_pipe_device_t *d);

#ifdef __cplusplus
}
#endif

#endif
