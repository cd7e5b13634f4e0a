/*
 * device.h — the seam between libsymtrain (plain C, what every machine runs)
 * and libsymtrain_cuda (the GPT's CUDA kernels, cuBLASLt and the GPU
 * collectives), a module loaded with dlopen when a run asks for the GPU.
 *
 * As with libsymgpu's backend (src/gpu/backend.h), loading at run time lets
 * a machine without CUDA run everything else, and a missing library be said
 * in one line. The table below is the whole interface. A GPU model holds
 * its weights (fp32 master and the compute copy), gradients, AdamW state and
 * activations in GPU memory from one pool; a training step is forward,
 * backward, the gradient average over the data-parallel team (on the GPU
 * collectives), clipping and AdamW, launched on the GPU with no host
 * synchronisation inside it (one CUDA graph after the first step). With
 * ZeRO-1 (sym_gpu_opts_t.zero) each PE of the data-parallel team keeps
 * AdamW's moments for its block of the parameters alone: the average becomes
 * a reduce-scatter, AdamW updates the block, and an all-gather of the
 * weights follows; ZeRO-2 shards the averaged gradients too (each block's
 * reduce-scattered as the backward leaves it, the whole array never held).
 *
 * The backend reports failures as a SYM_E* code with the sentence readable
 * through error(); it uses only the public API of libsymtrain and symshmem.
 */
#ifndef SYM_TRAIN_DEVICE_H
#define SYM_TRAIN_DEVICE_H

#include <shmem.h>
#include <stddef.h>
#include <stdint.h>

#include <symtrain/nn.h>
#include <symtrain/optim.h>
#include <symtrain/pipeline.h>

#define SYM_CUDA_BACKEND_ABI 13 /* 12: GPU dtensors; 13: their all-to-all */
#define SYM_CUDA_BACKEND_SYMBOL "sym_cuda_backend"
#define SYM_CUDA_BACKEND_FILE "libsymtrain_cuda.so"

/* A dp member's block of len floats split over n under the GPU's ZeRO-1 and
 * ZeRO-2: ceil(len / n) rounded up to 64 floats (aligned, vectorised
 * kernels). The model allocates by it and the planner counts by it. */
static inline size_t sym_gpu_zero_block(size_t len, size_t n) {
    return ((len + n - 1) / n + 63) / 64 * 64;
}

/* fp32: fp32 weights and activations, exact fp32 products; tf32 the same with
 * the products on TF32 tensor cores (10-bit mantissa inputs, fp32 sums). */
typedef enum {
    SYM_PREC_FP32 = 0,
    SYM_PREC_BF16 = 1,
    SYM_PREC_FP16 = 2,
    SYM_PREC_TF32 = 3
} sym_precision_t;

/* What a GPU model is built with (besides the model config). */
typedef struct {
    sym_precision_t precision;  /* compute dtype; master weights and optimizer state fp32 */
    int recompute_gelu;         /* keep neither the MLP's pre-GELU nor its GELU output (N,4C)
                                 * per layer: backward re-runs the c_fc product (GELU fused) */
    int recompute_ln;           /* keep no ln_1 / ln_2 output (N,C) per layer: backward
                                 * recomputes each LayerNorm from its kept input */
    int loss_scale_growth;      /* fp16: the loss scale doubles after this many steps
                                 * without an overflow (2000 in the trainer) */
    sym_optim_config_t optim;   /* AdamW's betas, eps, weight decay */
    shmem_team_t dp_team;       /* gradients are averaged over it on the GPU
                                 * (shmemx_gpu_allreduce_team; one PE: nothing to do) */
    int use_graph;              /* capture the step as a CUDA graph */
    size_t bucket_bytes;        /* gradients averaged in buckets of about this size during
                                 * backward (0: one average after it) */
    shmem_team_t tp_team;       /* tensor parallelism: the team the model is split over
                                 * (sym_model_create_tp's; SHMEM_TEAM_INVALID or one PE:
                                 * none). The table is then the split model's, and */
    int vocab_lo, vocab_len;    /* wte holds rows [vocab_lo, vocab_lo + vocab_len) of the
                                 * vocabulary (sym_shard_range of V over the team) */
    int zero;                   /* 1: ZeRO-1 over dp_team (AdamW's m and v of this PE's
                                 * block of the parameters alone; get_state is then
                                 * collective over the team for them); 2: ZeRO-2 (the
                                 * averaged gradients sharded too); 0: none */
    /* pipeline parallelism: this PE's stage (stage_chunks 0: the whole model).
     * The table is then sym_pipe_model's (the stage's tensors, named as the
     * whole model's: its chunks' blocks in ascending order), and the stage_*
     * calls below train it. */
    int stage_chunks;              /* model chunks held: 1, or V with virtual stages */
    int stage_first[SYM_GPT_MAX_CHUNKS], stage_layers[SYM_GPT_MAX_CHUNKS];
                                   /* chunk k: blocks [first[k], first[k] + layers[k]),
                                    * each chunk after the one before */
    int stage_embed, stage_head;   /* holds wte and wpe (on chunk 0) / ln_f and the LM head
                                    * (and wte's copy, the tied head; on the last chunk) */
    int slots;                     /* activation sets: chunk forwards between their forward
                                    * and backward (0: 1) */
    shmem_team_t pp_team;          /* the pipeline: the clipping norm is summed over it */
    shmem_team_t tied_team;        /* its first and last stage: their wte gradients are summed
                                    * over it (SHMEM_TEAM_INVALID elsewhere) */
    int inbox_slots;               /* the pipeline's inboxes (sym_pipe_inbox; a direction's
                                    * slots of all chunks, V S'): the GPU's own */
    size_t inbox_elems;            /* are made to this size, for messages GPU to GPU */
} sym_gpu_opts_t;

/* What one training step reports. */
typedef struct {
    double loss_sum;    /* this PE's summed loss over its rows * seq predictions */
    double grad_norm;   /* the global norm before clipping (after the average) */
    int skipped;        /* fp16: an inf or NaN in the gradients skipped the update (no
                           weight, moment or optimizer step count changed) and halved the
                           scale */
    float loss_scale;   /* fp16's dynamic loss scale after this step (1 otherwise) */
    double compute_s;   /* the GPU's time from the tokens to the gradients (CUDA events;
                           the gradient average excluded): the balancer's measurement */
} sym_gpu_step_t;

typedef struct sym_gpu_model sym_gpu_model_t; /* the backend's */

struct sym_cuda_backend {
    int abi; /* SYM_CUDA_BACKEND_ABI */
    /* The latest error sentence of the calling thread. */
    const char *(*error)(void);
    /* GPUs this process can use (0 when none or no driver). */
    int (*device_count)(void);
    /* Build the model from cfg on the PE's GPU (shmemx_gpu_device when the GPU
     * runtime is up, else device 0), with the weights `params` (P floats, the
     * CPU model's initial or checkpointed weights, laid out by `table`). max_rows
     * bounds the sequences of a step. Collective over the world where the job
     * has several PEs (it starts the GPU runtime, shmemx_gpu_init, there).
     * With opts->tp_team, this PE's part of the split model (the table of
     * sym_model_create_tp on that team): train_step and eval are then
     * collective over the tp team too. */
    int (*create)(const sym_model_config_t *cfg, int max_rows, const sym_param_t *table,
                  int ntable, const float *params, size_t P, const sym_gpu_opts_t *opts,
                  sym_gpu_model_t **out);
    void (*destroy)(sym_gpu_model_t *m);
    /* One step on tok, tgt (rows, seq) int32 host arrays (rows may change from
     * step to step, up to max_rows: a balanced PE's share; 0: this PE holds none
     * of them; step and row0, the global row of its row 0, place the dropout
     * masks as sym_forward_t's do): loss gradient scaled by
     * grad_scale (npes / global predictions), backward, gradients averaged over
     * the team, clipped to `clip` (0: off), AdamW at lr with weight decay on
     * the table's `decay` tensors. Collective over the team. After accumulate
     * calls, its micro-batch is the step's last: the gradients add to theirs. */
    int (*train_step)(sym_gpu_model_t *m, const int32_t *tok, const int32_t *tgt, int rows,
                      int seq, uint64_t step, int64_t row0, float lr, float grad_scale,
                      float clip, sym_gpu_step_t *out);
    /* The summed loss and correct next-token predictions of a forward pass. */
    int (*eval)(sym_gpu_model_t *m, const int32_t *tok, const int32_t *tgt, int rows, int seq,
                double *loss_sum, int64_t *correct);
    /* Copy out / in the fp32 master weights (P), AdamW's m and v (P each, may be
     * NULL) and its step count: checkpoints and resume. With ZeRO-1 the
     * weights are whole on every PE, the moments sharded: get_state asking
     * for m or v gathers them over the dp team and is collective over it
     * (every member asks alike; params alone stays local), and set_state
     * takes whole arrays and keeps this PE's block. */
    int (*get_state)(sym_gpu_model_t *m, float *params, float *exp_avg, float *exp_avg_sq,
                     uint64_t *steps);
    int (*set_state)(sym_gpu_model_t *m, const float *params, const float *exp_avg,
                     const float *exp_avg_sq, uint64_t steps);
    /* Bytes of GPU memory the model holds, and the device's peak dense rate
     * of the compute dtype (FLOP/s), for MFU. */
    size_t (*memory)(sym_gpu_model_t *m);
    double (*peak_flops)(sym_gpu_model_t *m);
    /* One line naming the GPU, e.g. "NVIDIA H200 (132 SMs, 141 GiB)". */
    const char *(*describe)(sym_gpu_model_t *m);
    /* The GPU's PCI bus id ("0000:18:00.0"; "" if unknown): NVML finds it by that. */
    const char *(*pci_bus_id)(sym_gpu_model_t *m);
    /* Bytes of GPU memory --recompute spares the model (memory() is that much
     * smaller than with every activation kept; 0 when nothing is recomputed). */
    size_t (*memory_saved)(sym_gpu_model_t *m);
    /* ---- asynchronous snapshots (--ckpt-async on) ----
     * Pinned host memory for them (cudaHostAlloc: the copies run at the link's
     * speed and overlap the kernels); NULL with error() saying why. */
    void *(*host_alloc)(sym_gpu_model_t *m, size_t bytes);
    void (*host_free)(sym_gpu_model_t *m, void *p);
    /* Start copying the fp32 master weights and AdamW's m and v (P floats
     * each) into host_alloc'd buffers on a side stream, after everything the
     * step's stream holds now; return at once with the optimizer's step count.
     * The next train_step's forward and backward run while it copies; its
     * AdamW (the first kernel to change them) waits for the copy. Refused
     * with ZeRO-1 (the moments are sharded: get_state gathers them). */
    int (*snapshot_start)(sym_gpu_model_t *m, float *params, float *exp_avg, float *exp_avg_sq,
                          uint64_t *steps);
    /* Wait until that copy is in the buffers; any thread (the checkpoint writer's). */
    int (*snapshot_wait)(sym_gpu_model_t *m);
    /* --micro-batches: forward and backward of one micro-batch of a step
     * (rows >= 1), its gradients added to those of the step's micro-batches
     * before it; nothing averaged, nothing updated (train_step does both with
     * the last one). *loss_sum: the micro-batch's summed loss. Collective over
     * the tp team only. */
    int (*accumulate)(sym_gpu_model_t *m, const int32_t *tok, const int32_t *tgt, int rows,
                      int seq, uint64_t step, int64_t row0, float grad_scale, double *loss_sum);
    /* ---- a pipeline stage (opts.stage_chunks > 0; parallel/pipeline.c's
     * schedule calls these through sym_pipe_use_device) ----
     * Forward of one micro-batch (rows, seq) through the stage's chunk
     * `chunk` (0 .. stage_chunks - 1; "the first stage" below is the model's
     * first chunk, chunk 0 of the stage with the embeddings, "the head" the
     * last chunk of the one with it) in activation set `slot`: tok on
     * the first stage, else its input, the previous stage's output: x (host,
     * rows * seq * C fp32, or with SP this tp rank's block of those rows:
     * symtrain/pipeline.h) or, x NULL, this GPU's forward inbox slot `box`;
     * on a stage without the head y (host, the same size) receives its
     * output, or, y NULL, it stays for stage_put; on the head, tgt gives
     * *loss_sum (summed) and, training, the loss gradient times grad_scale,
     * kept for the backward (else *correct, if not NULL, the right
     * arg-maxes). train 0: evaluation (no dropout); step and row0 place the
     * dropout masks. Returns with the input read. Collective over the tp team. */
    int (*stage_forward)(sym_gpu_model_t *m, int slot, int chunk, const int32_t *tok,
                         const int32_t *tgt, const float *x, int box, int rows, int seq,
                         uint64_t step, int64_t row0, int train, float grad_scale, float *y,
                         double *loss_sum, int64_t *correct);
    /* Backward of slot's micro-batch through `chunk` (its forward's): the
     * next stage's gradient of this
     * stage's output, dy (host fp32) or, dy NULL, backward inbox slot `box`
     * (neither on the head); dx (host) receives the gradient of its input, or
     * (dx NULL) it stays for stage_put (nothing on the first stage); first:
     * the step's first backward (the gradients start from zero, else they
     * add up). */
    int (*stage_backward)(sym_gpu_model_t *m, int slot, int chunk, const float *dy, int box,
                          float *dx, int first);
    /* Messages GPU to GPU (opts.inbox_elems > 0): a handle of this GPU's
     * inboxes for the neighbours (at most 128 bytes), the next (next 1) or
     * previous stage's opened from theirs (nonzero: not reachable, error()
     * says why), and slot's forward output (fwd) or the last backward's input
     * gradient copied into inbox slot `box` of the next or previous stage,
     * complete on return. */
    int (*stage_inbox_handle)(sym_gpu_model_t *m, void *handle);
    int (*stage_peer_open)(sym_gpu_model_t *m, int next, const void *handle);
    int (*stage_put)(sym_gpu_model_t *m, int slot, int fwd, int box);
    /* The step's end: wte's gradients summed over the tied team (with SP the
     * LayerNorms' over the tp team), all of them averaged over the dp team,
     * the global norm (over the tp team and the pipeline, wte counted once),
     * clipping, AdamW at lr; *out as train_step's (its loss_sum 0).
     * Collective over those teams. */
    int (*stage_update)(sym_gpu_model_t *m, float lr, float clip, sym_gpu_step_t *out);
    /* ---- GPU local tensors of sym_redistribute (parallel/dtensor.c) ----
     * No model needed; the GPU runtime (shmemx_gpu_init) must be up. Each
     * call works on the calling thread's device (dev_use sets it: the
     * tensor's device_index) and is complete on return. */
    int (*dev_use)(int device);
    void *(*dev_alloc)(size_t bytes); /* NULL with error() saying why */
    void (*dev_free)(void *p);
    /* `rows` runs of `width` bytes, dpitch / spitch bytes apart */
    int (*dev_copy2d)(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                      size_t rows);
    int (*dev_zero)(void *dst, size_t bytes);
    /* dst = src / div (n float elements, in fp32, one rounding to `to`; in place allowed) */
    int (*dev_convert)(void *dst, sym_dtype_t to, const void *src, sym_dtype_t from, size_t n,
                       float div);
    /* fp32 sums over the team, in place: of x (n); of x (n times the team's size), this
     * PE's block of n (its team PE number's) summed where it lies */
    int (*dev_sum)(shmem_team_t team, float *x, size_t n);
    int (*dev_sum_scatter)(shmem_team_t team, float *x, size_t n);
    /* all-gather: x holds the team's blocks of `bytes` (a multiple of 16), this PE's in place */
    int (*dev_gather)(shmem_team_t team, void *x, size_t bytes);
    /* all-to-all: src and dst (not overlapping) hold the team's blocks of `bytes` (a
     * multiple of 16); dst's block r is member r's block of src for this PE */
    int (*dev_alltoall)(shmem_team_t team, void *dst, const void *src, size_t bytes);
};

typedef const struct sym_cuda_backend *(*sym_cuda_backend_fn)(void);

/* Load the backend (once; later calls return the same table). NULL with the
 * reason recorded (sym_last_error) when the module or a GPU is missing. */
const struct sym_cuda_backend *sym__cuda_backend(void);

#endif
