/*
 * gpt_cuda.cu — the GPT of models/gpt.c on one GPU: the backend table of
 * core/device.h (libsymtrain_cuda.so, loaded by libsymtrain with dlopen).
 *
 * The chain is gpt.c's, layer for layer, on the kernels of ops/cuda:
 *
 *   x_0 = wte[tok] + wpe[t]                          encoder          (B,T,C)
 *   block l:  ln1 = LN(x_l)                          (fused with the previous residual add)
 *             qkv = ln1 @ c_attn^T + b               cuBLASLt         (B,T,3C)
 *             atty = attention(qkv)                  flash, keeps lse (B,NH,T)
 *             res2 = x_l + atty @ c_proj^T + b;  ln2 = LN(res2)
 *             fch_gelu = gelu(ln2 @ c_fc^T + b)      GELU epilogue, keeps fch (B,T,4C)
 *             res3 = res2 + fch_gelu @ c_proj^T + b  (added inside the next LayerNorm)
 *   logits = LN_f(x_L) @ wte^T                       (B,T,Vp), then the loss in place
 *
 * Precision (--precision): the weights' compute copy and every activation
 * are of the compute type, bf16 (the default) or fp16, or fp32, where the
 * products read the master weights themselves (no copy) and cuBLASLt
 * multiplies in plain fp32 (TF32 off), so a run tracks the CPU's closely. The
 * master weights, their gradients and AdamW's moments are fp32, laid out as
 * the host's flat array (the sym_param_t table), so one gradient norm, one
 * all-reduce and one AdamW launch cover every parameter.
 *
 * fp16 scales the loss dynamically, wholly on the GPU (symcu_loss_scale_t in
 * the region): the loss gradient is multiplied by S (from 2^16), the norm
 * kernel sees the scaled gradients' sum of squares, and where it is not
 * finite (an inf or NaN in any gradient) it sets the skip flag AdamW reads
 * and halves S; after opts.loss_scale_growth finite steps in a row S doubles.
 * The host learns of it with the loss, at the step's one synchronisation. A
 * skipped step changes no weight and no moment, and does not count as an
 * optimizer step (AdamW's t, get_state's steps): the trainer's step and the
 * data still move on, as with PyTorch's GradScaler. The scale is not part of
 * a checkpoint: a resumed fp16 run starts again from 2^16.
 *
 * Memory: everything the model holds comes from one cudaMalloc, carved at
 * create (carve() runs twice: once to size, once to hand out); a step
 * allocates nothing. A step is: tokens in (pinned staging), forward, loss,
 * backward with the gradient average over the data-parallel team in buckets
 * (below), the norm and clipping factor, AdamW, the loss and norm out: one
 * host synchronisation at its end. The part up to the averaged gradients is
 * captured as a CUDA graph from the second step on and replayed; the norm and
 * AdamW (whose lr and step count change every step) are launched plainly
 * after it, so the graph needs no device-side hyperparameters. A graph is for
 * one (rows, seq, scale); a balanced PE's rows change when the balancer moves
 * work, so the last GRAPHS shapes are kept (replaced least recently used), and
 * a share that comes back replays. Two GPU clock stamps time the PE's compute
 * for the balancer: from the tokens to the last gradient, the waits for the
 * average excluded.
 *
 * Data parallelism: the gradients of a block are final once backward has
 * passed it (blocks are contiguous in the flat layout, ln_f after the last,
 * wte and wpe before the first), so as soon as the blocks not yet sent reach
 * the bucket size (--bucket-mb) their range is averaged on a side stream
 * (shmemx_gpu_allreduce_team, fork and join by events) while backward goes on
 * with the blocks below; the rest (wte, wpe and what is left) goes after the
 * embedding's backward, and the step's stream joins the side stream before
 * the norm. Every PE cuts the same buckets, so the collectives match.
 *
 * Dropout (cfg.dropout > 0, training steps only): gpt.c's sites and masks,
 * drawn in the kernels from the same counters (symcu_dropout_t), so a GPU run
 * drops exactly what the CPU run of the same seed drops, in any split of the
 * batch or the heads: the embedding's output, each block's two row-parallel
 * outputs before their residual add (after the tp sum, alike on every tp PE)
 * and its attention probabilities (inside the flash kernels). Nothing is
 * stored: the backward draws the masks again. The sites' step keys and the
 * PE's first global sequence go into the region with the tokens (pinned
 * staging, inside the graph), so a replayed graph drops with each step's.
 *
 * Tensor parallelism (opts.tp_team of t PEs; the table is sym_model_create_tp's,
 * split as models/gpt.c splits it): each PE holds NH/t heads, Cl = C/t of the
 * width. c_attn (3Cl rows: its heads' q, k, v) and c_fc (4Cl) are
 * column-parallel, attn.c_proj and mlp.c_proj (Cl and 4Cl columns)
 * row-parallel with their whole bias added on team PE 0; wte holds rows
 * [v0, v0 + nv) of the vocabulary. The collectives, all over the tp team
 * (shmemx_gpu_allreduce_team of the compute type, summed in fp32 and rounded
 * once) on the step's stream, inside its graph:
 *   forward   the embedding (each token's row from the PE holding it, zeros
 *             from the others; wpe on PE 0) and each row-parallel output (N,C);
 *   loss      per row, the max of the logits (N), then the sum of e^(z - max)
 *             with the target's logit (2N): the logits (N, ld, this PE's nv
 *             columns padded to ld = nv rounded up to 8) are never gathered;
 *             evaluation adds the first arg-max column (min of N);
 *   backward  the input gradient (N,C) of each column-parallel product and of
 *             the LM head;
 *   norm      the split tensors' sum of squares (one float; the whole ones'
 *             are the same on every PE and counted once).
 * The GPU collectives run one at a time per PE whatever their team
 * (shmemx_gpu.h), so with tp the data-parallel average does not overlap
 * backward's tp sums: it is one average after backward (bucket 0), ordered
 * after them by the fork event, as every PE orders them alike.
 *
 * Sequence parallelism (cfg.seq_parallel with tp > 1, Megatron-SP as in
 * gpt.c, with a layout of our own): in the LayerNorm / dropout / residual
 * regions team PE k holds rows [k R, k R + n) of the step's N = B*T rows,
 * R = ceil(N / tp) (contiguous blocks, so that every collective is one
 * contiguous call; the last PE's n may be short, even 0, and its rows past n
 * are padding that nothing reads; gpt.c shards the positions of each sequence
 * instead: the same maths, other bits of rounding). The per-block ln1, ln2,
 * res2, res3, their row statistics, encoded and dres hold R rows; the
 * buffers a shard is gathered into (proj, dln, full, the head's lnf) tp R.
 *   forward   each row-parallel output (N,C) reduce-scattered (in place) to
 *             this PE's rows, where dropout (the masks of their global rows,
 *             symcu_dropout_rows), the residual and the next LayerNorm run;
 *             that LayerNorm's shard all-gathered into `full` before the
 *             column-parallel product (QKV, MLP up; LN_f's into lnf for the
 *             LM head); the embedding reduce-scattered into encoded;
 *   backward  the residual gradient's shard (through its dropout) all-gathered
 *             before each row-parallel layer's backward and the embedding's;
 *             the column-parallel input gradients reduce-scattered; the
 *             LayerNorm outputs all-gathered again (only the shards are kept);
 *             every LayerNorm's weight and bias gradients, from this PE's
 *             rows, summed over the team once a step (packed, one all-reduce,
 *             before the dp average), after which they are whole as plain tp's.
 * In a pipeline stage (below) the residual stream at the stage's edges is
 * this PE's shard too: a later stage's encoded is the previous stage's
 * output shard (no embedding to scatter), a stage before the last ends with
 * its last residual's shard (no ln_f), and the gradients at the edges are
 * shards: the n rows pass to and from the PE of the same tp rank on the
 * neighbouring stage, which holds the same rows (edge_elems).
 *
 * --tp-overlap K (cfg.tp_chunks, plain tp): each row-parallel product's
 * output and each column-parallel backward's input gradient computed in K row
 * chunks, each chunk's all-reduce started on the side stream s_tp (event fork
 * and join, inside the graph) as soon as it is computed, while the step's
 * stream computes the next chunk (and in backward the weight gradient, after
 * the last chunk); the step's stream joins s_tp before the sum is read. The
 * chunks' all-reduces run in order on s_tp, and the step's stream issues no
 * collective until it has joined: one GPU collective at a time per PE.
 *
 * ZeRO-1 (opts.zero, a dp team of n > 1 PEs): team PE r updates the block
 * [zlo, zlo + zlen) of the P parameters alone and holds AdamW's m and v for
 * it only (zblock floats each: the memory saved). The blocks are equal,
 * zblock = ceil(P / n) rounded up to 64 floats (aligned, vectorised kernels),
 * so that the all-gather (equal blocks) can rebuild the weights in place: w
 * and g hold Pp = n * zblock floats, the padding past P zero in w and never
 * read in g, and block r is shmemx_block_range(Pp, n, r), clipped to P. A
 * step, all on the step's stream:
 *   backward     as above, then the gradients reduce-scattered (averaged)
 *                over the dp team in place: block r of the average lands at
 *                g + zlo (one collective of all Pp floats after backward,
 *                inside the graph: no buckets, so the layout is the one AdamW
 *                uses); the rest of g is left as it was and never read;
 *   norm         the block's sum of squares (two parts with tp: split and
 *                whole tensors, the ranges clipped to the block), summed over
 *                the dp team, then over the tp team with the whole tensors'
 *                part of tp rank 0 alone (every tp rank's blocks cover them
 *                once): the same global norm, bit for bit, on every PE, so an
 *                inf or NaN anywhere skips fp16's step on every PE alike;
 *   AdamW        on the block (w + zlo, m, v, g + zlo; the no-decay ranges
 *                clipped to the block), then the weights all-gathered over
 *                the dp team in place and the compute copy refreshed from
 *                them (to_compute_kernel rounds as AdamW does).
 * get_state gathers m and v over the dp team (into g, free between steps).
 *
 * ZeRO-2 (opts.zero 2) shards the averaged gradients too, and the whole
 * gradient array is never held: the stage's parameters are cut into units,
 * each block's (the backward finishes them one by one) and the edges
 * between and around them (the embeddings, the last stage's wte copy cut at
 * norm_lo, ln_f). Unit u of len floats splits into n blocks of c =
 * ceil(len / n) rounded up to 64; team PE r holds block r of every unit,
 * packed in unit order: gs (S = the sum of the c's) for the averaged
 * gradients, m and v alike (z2unit_t). A block's backward writes its
 * gradients (grad_at) into one of two rotating slots of n c floats, zeroed
 * first; as it ends (z2_end) the slot is reduce-scattered (averaged) in
 * place and the PE's block added into gs, on the side stream while the
 * next block's backward fills the other slot (the slot is reused once that
 * average has read it: ev_zfree), or on the step's stream where the tp team
 * has collectives in the backward. The edges' gradients are whole arrays
 * that add up over the step's micro-batches and are averaged into gs at the
 * step's end, after wte's sum over the tied stages; the blocks' are averaged
 * every micro-batch (sums, so the same). gs is zeroed by a step's first
 * backward. The norm reads gs (the ranges translated into its packing),
 * AdamW runs unit by unit on w + lo + r c, and the weights are all-gathered
 * unit by unit through the unit's array (a block's: slot 0) and copied into
 * place. Memory: the shard (S), the moments (2 S), two block slots and the
 * edges' arrays, against ZeRO-1's whole g and moments of P / n each.
 *
 * Pipeline stages (opts.stage_chunks > 0; the schedule is parallel/pipeline.c's
 * through sym_pipe_device_t): the model holds its chunks' blocks (one chunk,
 * or V with interleaved virtual stages: chunk k blocks [ch_l0[k], + ch_L[k])
 * of Lt, all in the one parameter table at their global names, chunk by
 * chunk), the embeddings on the first stage (its chunk 0 runs them), ln_f and
 * the LM head with wte's copy on the last (its last chunk), and one
 * activation set (gslot_t, room for the largest chunk's blocks) per chunk
 * forward in flight. Each stage_forward / stage_backward names its chunk
 * (use_chunk: l0, L, off, embed, head become that chunk's), a set remembers
 * the chunk its forward ran. A stage's
 * input arrives and its output leaves GPU to GPU where the neighbours' GPUs
 * reach each other (CUDA IPC): its inboxes (V a direction, one a chunk) are
 * in the region, the neighbours open it, and stage_put copies the output (or
 * the input gradient) into their slot on the step's stream; else as host fp32
 * (from_host, to_host). The stage_* calls run plain launches (no graph); the gradients add up over the
 * step's micro-batches and stage_update sums wte's over the tied pair (and
 * with SP the LayerNorms' over the tp team, sp_ln_sum),
 * averages over dp, sums the norm's squares over the pipeline (the last
 * stage's wte copy left out: norm_lo) and runs AdamW; with ZeRO-1 the
 * average is the reduce-scatter over the stage's dp team, the norm counts the
 * block's part of [norm_lo, P), and AdamW and the all-gather are ZeRO-1's.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>

#include <shmem.h>
#include <shmemx_gpu.h>
#include <symtrain/rng.h>

#include "common.cuh"
#include "core/device.h"
#include "models/backend_cuda.h"
#include "ops_cuda.h"

/* ZeRO-2: a unit, the stretch [lo, lo + len) of the parameters reduced at
 * once: team PE r holds its block [lo + r c, + mine) of the average at gs +
 * soff (c floats; mine fewer at the end), its no-decay ranges nodecay[rfirst,
 * + nr) relative to that block; store: the unit's gradient array (n c
 * floats) for an edge, NULL for a block (a rotating slot) */
typedef struct {
    size_t lo, len, c, soff, mine, eoff;
    float *store;
    int block, rfirst, nr;
} z2unit_t;

/* ---- errors ---- */

static __thread char err_buf[2048];

int sym__cuda_fail(int code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err_buf, sizeof err_buf, fmt, ap);
    va_end(ap);
    return code;
}

const char *sym__cuda_error(void) { return err_buf; }

#define fail sym__cuda_fail /* this file's short name for it */

#define GRAPHS 4 /* captured step shapes kept (a balanced PE's shares come and go) */

/* A launcher of ops/cuda: its own sentence (symcu_last_error). */
#define OP(call)                                                                          \
    do {                                                                                  \
        int rc_ = (call);                                                                 \
        if (rc_) return fail(rc_, "%s", symcu_last_error());                              \
    } while (0)


static int be_device_count(void) {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    return n;
}

/* ---- the model ---- */

enum { LN1W, LN1B, QKVW, QKVB, PROJW, PROJB, LN2W, LN2B, FCW, FCB, FCPW, FCPB, NBLOCK };

/* Activations are of the compute type (m->dt, m->esz bytes each): void *. */
typedef struct {
    void *ln1, *qkv, *atty, *res2, *ln2, *fch, *fch_gelu, *res3; /* (N,C) (N,3C) (N,4C) */
    float *ln1_mean, *ln1_rstd, *ln2_mean, *ln2_rstd;             /* (N) */
    float *lse;                  /* (B,NH,T) */
} gblock_t;

/* One activation set (a micro-batch between its forward and its backward):
 * what a stage's backward reads of its forward. */
typedef struct {
    gblock_t *blk;                        /* (L) */
    void *encoded, *lnf, *logits;         /* (N,C); the head's (N,C) (N,ld) */
    float *lnf_mean, *lnf_rstd;           /* the head's (N) */
    int32_t *tok;                         /* the embeddings' (N) */
    int rows, seq, chunk;                 /* of its forward */
} gslot_t;

struct sym_gpu_model {
    sym_model_config_t cfg;
    sym_gpu_opts_t opts;
    int L, C, NH, V, Vp, T, Bmax, dev, npes, own_gpu_init;
    /* the stage: nchunks model chunks (virtual stages; 1 without), chunk k
     * the blocks [ch_l0[k], + ch_L[k]) of the model's Lt, at ch_at[k] among
     * the nb held (nbmax: the largest chunk's); hold_embed, hold_head: holds
     * the embeddings (on chunk 0), the LM head (on the last chunk); the whole
     * model: one chunk of Lt, both. The chunk in use (use_chunk): its blocks
     * [l0, l0 + L), its parameters' offsets off (L), embed and head: it runs
     * the embeddings, the LM head */
    int l0, Lt, embed, head, pp;
    int nchunks, chunk, nb, nbmax, hold_embed, hold_head;
    int ch_l0[SYM_GPT_MAX_CHUNKS], ch_L[SYM_GPT_MAX_CHUNKS], ch_at[SYM_GPT_MAX_CHUNKS];
    size_t (*boff)[NBLOCK];               /* (nb) each held block's parameters in the flat
                                           * arrays, chunk by chunk */
    size_t (*off)[NBLOCK];                /* the chunk in use's: boff + ch_at[chunk] */
    shmem_team_t tied;                    /* wte's pair (first and last stage), or INVALID */
    size_t norm_lo;                       /* the norm counts the gradients [norm_lo, P): the
                                           * last stage's wte copy is counted on the first */
    size_t nlo, nlen;                     /* this PE's part of them: [norm_lo, P) cut to its
                                           * ZeRO-1 block (whole ranges relative to nlo) */
    int nslots;
    gslot_t *sl;                          /* (nslots); the fields below point into the one in use */
    float *xfer;                          /* (R,C) fp32 (R = N without SP): a stage's input or
                                           * output to or from the host (16-bit compute types) */
    /* messages GPU to GPU (opts.inbox_elems > 0): this GPU's inboxes
     * (forward, then backward: inbox_slots x inbox_elems each, the compute
     * type; inbox_slots covers every chunk's, V S') in the region; the
     * neighbours' (0 previous, 1 next) opened by CUDA IPC, at peer_base[k]
     * (their region). With two stages and virtual stages the previous and
     * the next are one PE: its region is opened once (peer_base[1] NULL, the
     * handle peer_h[0]'s) */
    void *box;
    char *peer_base[2], *peer_box[2];
    cudaIpcMemHandle_t peer_h[2];
    /* tensor parallelism (tp 1: none; Cl = C, NHl = NH, v0 = 0, nv = ld = Vp) */
    int tp, tp_rank, Cl, NHl, v0, nv, ld; /* wte (nv,C); logits (N,ld) */
    shmemx_dtype_t coll_dt;               /* the compute type's, for the tp sums */
    /* sequence parallelism (cfg.seq_parallel with tp > 1; see the top): on,
     * and the buffers it adds: full a LayerNorm output gathered, dsh a shard
     * (the LN_f output before its gather, a gradient through dropout), lng the
     * LayerNorms' gradients packed for their sum over the team, lnoff the
     * offsets of the nln LayerNorms' (weight, bias) pairs in the flat arrays */
    int sp, nln;
    void *full, *dsh;                     /* (Np,C) (R,C) */
    float *lng;                           /* (nln, 2C) */
    uint64_t *lnoff;                      /* (nln) */
    /* --tp-overlap (cfg.tp_chunks > 1, plain tp): the chunks, the side stream
     * of their all-reduces, its fork and join events */
    int chunks;
    cudaStream_t s_tp;
    cudaEvent_t ev_tp_fork, ev_tp_join;
    size_t P, off_wte, off_wpe, off_lnfw, off_lnfb;
    cudaStream_t s;
    symcu_blas_t *blas;
    char *region;
    size_t region_bytes;
    symcu_dtype_t dt;
    size_t esz;                  /* bytes of one element of dt */
    /* parameters, fp32 (P; w and g Pp); wc the compute copy (P), w itself for
     * fp32; m and v (nmom: P, or zblock with ZeRO-1) */
    float *w, *m, *v, *g;
    void *wc;
    /* ZeRO-1 (see the top): on, the block [zlo, zlo + zlen) this PE updates
     * ([0, P) without), each PE's block size, the floats w and g hold */
    int zero; /* the stage: 0, 1 or 2 */
    size_t zlo, zlen, zblock, Pp, nmom;
    /* ZeRO-2 (see the top): the units (nu, by offset; bunit[i] block i's), the
     * averaged gradients' shard (S floats, gs), the two rotating block slots
     * (zslot floats each), the slot in use (zk) and the block unit it holds
     * (zcur, -1: none), which slots this backward has used (zused), the
     * events that free them (recorded on s_dp) */
    int nu, *bunit, zk, zcur, zused, zrank;
    z2unit_t *u;
    float *gs, *z2slot[2], *edge;
    size_t S, zslot, zedge;
    cudaEvent_t ev_zfree[2];
    symcu_loss_scale_t *ls;      /* fp16's loss scale (device), else NULL */
    uint64_t calls, inject_at;   /* train_step calls; SYMTRAIN_TEST_FP16_OVERFLOW */
    uint64_t *nodecay; /* (2 nr) */
    int nr;
    uint64_t *nodecay_h;
    /* activations: the slot in use's (gslot_t), then shared scratch */
    gblock_t *blk;
    void *encoded, *lnf, *logits, *proj;  /* (N,C) (N,C) (N,Vp) (N,C) */
    float *lnf_mean, *lnf_rstd;           /* (N) */
    int32_t *tok;                         /* (N) */
    void *dres, *dln, *datty, *dqkv, *dfch; /* (N,C) (N,C) (N,C) (N,3C) (N,4C) */
    float *losses, *hits;                 /* (N) */
    /* --recompute: the one buffer every block's ln1 and ln2 (recompute_ln)
     * or fch and fch_gelu (recompute_gelu) point into, and the statistics a
     * LayerNorm recomputed in backward writes (equal to the kept ones) */
    void *ln_tmp, *fch_tmp, *fchg_tmp;      /* (N,C) (N,4C) (N,4C) */
    float *ln_tmp_mean, *ln_tmp_rstd;       /* (N) */
    size_t recompute_saved;                 /* bytes the region is smaller by */
    float *ln_scratch, *att_scratch;
    void *enc_scratch;
    size_t enc_scratch_bytes;
    double *norm_scratch;
    float *norm, *clip_scale;             /* (1) */
    /* tp > 1: the loss's per-row numbers, the norm's two sums of squares and
     * the ranges of the whole (unsplit) tensors in the flat arrays */
    float *xmax, *xsums, *first, *sq;     /* (N) (2N) (N) (2) */
    uint64_t *whole, *whole_h;            /* (2 nw) */
    int nw;
    double *sums;                         /* (2): loss sum, correct */
    int32_t *tgt;                         /* (N) */
    /* dropout (cfg.dropout > 0): the sites' keys (1 + 3L: the embedding,
     * block l's two residual branches at 1 + 2l + k, its attention at
     * 1 + 2L + l), and on the device the step's keys of the sites followed by
     * the PE's first global sequence (int64), from drop_h */
    int nsites;                           /* 0: no dropout */
    uint64_t *drop_key;                   /* host (nsites) */
    uint64_t *drop_d, *drop_h;            /* (nslots, nsites + 1): each activation set's, its
                                           * backward draws its forward's masks; pinned (nsites + 1) */
    uint64_t *drop_cur;                   /* the slot in use's */
    /* pinned host staging */
    int32_t *tok_h, *tgt_h;
    struct {
        double sums[2];
        uint64_t stamp[2];
        float norm;
        symcu_loss_scale_t ls;
    } *out_h;
    uint64_t steps;
    int acc_pending; /* accumulate() added micro-batches' gradients since the last train_step */
    /* the captured steps, each valid for its (rows, seq, scale, kind) */
    struct {
        cudaGraphExec_t exec;
        int rows, seq, kind;
        float scale;
        uint64_t used; /* the step it last ran (LRU) */
    } graph[GRAPHS];
    int graph_failed, warm;
    uint64_t *stamp;                      /* (2) GPU clock at the compute's start and end */
    /* data parallelism (see the top): the side stream, its fork and join events */
    cudaStream_t s_dp;
    cudaEvent_t ev_fork, ev_join;
    size_t bucket;                        /* floats per bucket (0: one average at the end) */
    size_t dp_hi;                         /* during backward: the gradients [dp_hi, P) are sent */
    char desc[256];
    char pci[32];
    /* asynchronous snapshots (be_snapshot_start): the copy's stream, the
     * event it starts after, the event of its end; snap_pending until the
     * next AdamW has waited for it */
    cudaStream_t s_snap;
    cudaEvent_t ev_snap_from, ev_snap;
    int snap_pending;
};

/* ---- small kernels of this model: loss sums, arg-max, the weights' copy ---- */

/* sums[0] = sum of losses (n), sums[1] = sum of hits (n) (hits may be NULL):
 * one block of 1024 threads in a fixed order, in double. */
__global__ void sum_rows_kernel(double *sums, const float *losses, const float *hits, int n) {
    __shared__ double sh[32];
    double a = 0, b = 0;
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        a += (double)losses[i];
        if (hits) b += (double)hits[i];
    }
    a = block_sum(a, sh);
    b = block_sum(b, sh);
    if (threadIdx.x == 0) {
        sums[0] = a;
        sums[1] = b;
    }
}

/* hits (N) = 1 where the first arg-max of logits (N,Vp) over [0, V) is the
 * target (N), else 0: the CPU's rule (the first of equal maxima). One block
 * of 256 per row. */
template <typename E>
__global__ void argmax_hits_kernel(float *hits, const E *logits, const int32_t *tgt, int V,
                                   int Vp) {
    __shared__ float shv[32];
    __shared__ int shi[32];
    const E *z = logits + (size_t)blockIdx.x * Vp;
    float best = -INFINITY;
    int bi = 0x7fffffff;
    for (int c = threadIdx.x; c < V; c += blockDim.x) {
        float x = to_f(z[c]);
        if (x > best) { /* c grows: the first maximum of this thread's columns */
            best = x;
            bi = c;
        }
    }
    for (int o = 16; o > 0; o >>= 1) {
        float ov = __shfl_xor_sync(0xffffffffu, best, o);
        int oi = __shfl_xor_sync(0xffffffffu, bi, o);
        if (ov > best || (ov == best && oi < bi)) {
            best = ov;
            bi = oi;
        }
    }
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    if (lane == 0) {
        shv[warp] = best;
        shi[warp] = bi;
    }
    __syncthreads();
    if (warp == 0) {
        best = lane < nw ? shv[lane] : -INFINITY;
        bi = lane < nw ? shi[lane] : 0x7fffffff;
        for (int o = 16; o > 0; o >>= 1) {
            float ov = __shfl_xor_sync(0xffffffffu, best, o);
            int oi = __shfl_xor_sync(0xffffffffu, bi, o);
            if (ov > best || (ov == best && oi < bi)) {
                best = ov;
                bi = oi;
            }
        }
        if (lane == 0) hits[blockIdx.x] = bi == tgt[blockIdx.x] ? 1.0f : 0.0f;
    }
}

/* *at = the GPU's nanosecond clock: the step's compute time is measured by
 * two of these inside its graph (CUDA events recorded in a graph cannot be
 * timed). */
__global__ void stamp_kernel(uint64_t *at) {
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    *at = t;
}

/* out (n) = in (n) rounded to E, nearest even (as AdamW writes its copy). */
template <typename E>
__global__ void to_compute_kernel(E *out, const float *in, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        out[i] = from_f<E>(in[i]);
}

/* The compute copy from the master weights (fp32 has none to make). */
static int refresh_copy(sym_gpu_model_t *m) {
    if (m->dt == SYMCU_BF16)
        to_compute_kernel<bf16><<<1024, 256, 0, m->s>>>((bf16 *)m->wc, m->w, m->P);
    else if (m->dt == SYMCU_F16)
        to_compute_kernel<f16><<<1024, 256, 0, m->s>>>((f16 *)m->wc, m->w, m->P);
    CK(cudaGetLastError());
    return SYM_OK;
}

/* SYMTRAIN_TEST_FP16_OVERFLOW's injection: g[0] = +inf. */
__global__ void inject_inf_kernel(float *g) { g[0] = INFINITY; }

/* ---- the region: one cudaMalloc, carved twice ---- */

typedef struct {
    char *base; /* NULL: only count */
    size_t used;
} carver_t;

static void *take(carver_t *c, size_t bytes) {
    size_t at = (c->used + 255) & ~(size_t)255;
    c->used = at + bytes;
    return c->base ? c->base + at : (void *)(uintptr_t)0x100; /* non-NULL while sizing */
}

#define TAKE(c, ptr, count) ((ptr) = (decltype(ptr))take((c), (size_t)(count) * sizeof *(ptr)))
#define TAKEA(c, ptr, count) ((ptr) = take((c), (size_t)(count) * m->esz)) /* activations */

/* The region's layout. With recompute_ln every block's ln1 and ln2 are the
 * one buffer ln_tmp (each is written by the forward and read at once by the
 * next product; the backward recomputes it there before its products), with
 * recompute_gelu every block's fch and fch_gelu are fch_tmp and fchg_tmp
 * (the backward re-runs the c_fc product with its GELU epilogue). */
static void carve(sym_gpu_model_t *m, carver_t *c, int recompute_gelu, int recompute_ln) {
    size_t N = (size_t)m->Bmax * m->T, C = m->C, P = m->P, Cl = m->Cl, NHl = m->NHl;
    /* the rows of the LayerNorm / dropout / residual buffers (with SP one PE's
     * shard, ceil(N / tp)) and of a shard gathered (tp of them, >= N) */
    size_t R = m->sp ? (N + (size_t)m->tp - 1) / (size_t)m->tp : N, Ng = m->sp ? R * m->tp : N;
    if (recompute_ln) {
        TAKEA(c, m->ln_tmp, R * C);
        TAKE(c, m->ln_tmp_mean, R);
        TAKE(c, m->ln_tmp_rstd, R);
    }
    if (recompute_gelu) {
        TAKEA(c, m->fch_tmp, N * 4 * Cl);
        TAKEA(c, m->fchg_tmp, N * 4 * Cl);
    }
    TAKE(c, m->w, m->Pp);
    TAKE(c, m->m, m->nmom);
    TAKE(c, m->v, m->nmom);
    if (m->zero == 2) { /* the shard, the block slots, the edges' arrays (see the top) */
        TAKE(c, m->gs, m->S);
        for (int k = 0; k < 2; k++) {
            float *slot;
            TAKE(c, slot, m->zslot);
            m->z2slot[k] = slot;
        }
        TAKE(c, m->edge, m->zedge ? m->zedge : 1);
        for (int i = 0; i < m->nu; i++)
            m->u[i].store = m->u[i].block ? NULL : m->edge + m->u[i].eoff;
    } else {
        TAKE(c, m->g, m->Pp);
    }
    if (m->dt == SYMCU_F32)
        m->wc = m->w; /* the products read the master weights */
    else
        TAKEA(c, m->wc, P);
    if (m->dt == SYMCU_F16) TAKE(c, m->ls, 1);
    TAKE(c, m->nodecay, 2 * (size_t)(m->nr ? m->nr : 1));
    for (int k = 0; k < m->nslots; k++) { /* a set holds one chunk's forward, any chunk */
        gslot_t *a = &m->sl[k];
        TAKEA(c, a->encoded, R * C);
        if (m->hold_head) {
            TAKEA(c, a->lnf, Ng * C); /* gathered with SP: the LM head's input */
            TAKE(c, a->lnf_mean, R);
            TAKE(c, a->lnf_rstd, R);
            TAKEA(c, a->logits, N * m->ld);
        }
        if (m->hold_embed) TAKE(c, a->tok, N);
        for (int l = 0; l < m->nbmax; l++) {
            gblock_t *b = &a->blk[l];
            if (recompute_ln)
                b->ln1 = b->ln2 = m->ln_tmp;
            else {
                TAKEA(c, b->ln1, R * C);
                TAKEA(c, b->ln2, R * C);
            }
            if (recompute_gelu) {
                b->fch = m->fch_tmp;
                b->fch_gelu = m->fchg_tmp;
            } else {
                TAKEA(c, b->fch, N * 4 * Cl);
                TAKEA(c, b->fch_gelu, N * 4 * Cl);
            }
            TAKE(c, b->ln1_mean, R);
            TAKE(c, b->ln1_rstd, R);
            TAKEA(c, b->qkv, N * 3 * Cl);
            TAKEA(c, b->atty, N * Cl);
            TAKE(c, b->lse, N * NHl);
            TAKEA(c, b->res2, R * C);
            TAKE(c, b->ln2_mean, R);
            TAKE(c, b->ln2_rstd, R);
            TAKEA(c, b->res3, R * C);
        }
    }
    if (!m->hold_embed || !m->hold_head) TAKE(c, m->xfer, R * C); /* an edge: a shard with SP */
    if (m->opts.inbox_elems && (!m->hold_embed || !m->hold_head))
        TAKEA(c, m->box, 2 * (size_t)m->opts.inbox_slots * m->opts.inbox_elems);
    TAKEA(c, m->proj, Ng * C); /* with SP also the residual gradient gathered */
    TAKEA(c, m->dres, R * C);
    TAKEA(c, m->dln, Ng * C);
    if (m->sp) {
        TAKEA(c, m->full, Ng * C);
        TAKEA(c, m->dsh, R * C);
        TAKE(c, m->lng, (size_t)m->nln * 2 * C);
        TAKE(c, m->lnoff, (size_t)m->nln);
    }
    TAKEA(c, m->datty, N * Cl);
    TAKEA(c, m->dqkv, N * 3 * Cl);
    TAKEA(c, m->dfch, N * 4 * Cl);
    TAKE(c, m->losses, N);
    TAKE(c, m->hits, N);
    TAKE(c, m->ln_scratch, symcu_layernorm_backward_scratch((int)N, (int)C));
    TAKE(c, m->att_scratch, N * NHl);
    m->enc_scratch_bytes = symcu_encoder_backward_scratch((int)N);
    m->enc_scratch = take(c, m->enc_scratch_bytes);
    /* the norm's squares in two sums, summed over teams (tp, the pipeline, ZeRO's dp) */
    int split = m->tp > 1 || m->pp > 1 || m->zero;
    TAKE(c, m->norm_scratch, split ? symcu_grad_sumsq_scratch() : symcu_grad_norm_scratch());
    if (m->tp > 1) {
        TAKE(c, m->xmax, N);
        TAKE(c, m->xsums, 2 * N);
        TAKE(c, m->first, N);
    }
    if (split) {
        TAKE(c, m->sq, 2);
        TAKE(c, m->whole, 2 * (size_t)(m->nw ? m->nw : 1));
    }
    TAKE(c, m->norm, 1);
    TAKE(c, m->clip_scale, 1);
    TAKE(c, m->stamp, 2);
    TAKE(c, m->sums, 2);
    TAKE(c, m->tgt, N);
    if (m->nsites) TAKE(c, m->drop_d, (size_t)(m->nsites + 1) * m->nslots);
}

/* ---- the passes ---- */

/* The weights' compute copy of parameter offset o. */
#define W(o) ((const void *)((const char *)m->wc + (o) * m->esz))
#define G(o) grad_at(m, (o))

/* The gradient of parameter offset o: in g, or with ZeRO-2 in its unit's
 * array (a block's: the slot in use, during that block's backward). */
static float *grad_at(const sym_gpu_model_t *m, size_t o) {
    if (m->zero != 2) return m->g + o;
    const z2unit_t *u = m->zcur >= 0 ? &m->u[m->zcur] : NULL;
    if (u && o - u->lo < u->len) return m->z2slot[m->zk] + (o - u->lo);
    for (int i = 0; i < m->nu; i++)
        if (!m->u[i].block && o - m->u[i].lo < m->u[i].len) return m->u[i].store + (o - m->u[i].lo);
    return NULL; /* a block's gradient outside its backward: never */
}

/* A row-parallel product's whole bias: added on tp PE 0 alone (the sum over
 * the team adds it once). */
#define WB(o) (m->tp_rank == 0 ? W(o) : NULL)

/* x (n elements of dtype) reduced by op over the tp team in place, on the
 * step's stream (nothing without tensor parallelism). */
static int tp_reduce(sym_gpu_model_t *m, void *x, size_t n, shmemx_dtype_t dtype, shmemx_op_t op) {
    if (m->tp < 2) return SYM_OK;
    int e = shmemx_gpu_allreduce_team(m->opts.tp_team, x, x, n, dtype, op, m->s);
    if (e)
        return fail(SYM_EIO, "PE %d: a tensor-parallel reduction (shmemx_gpu_allreduce_team of "
                             "%zu elements over the tp team) failed: %s",
                    shmem_my_pe(), n, shmemx_gpu_strerror(e));
    return SYM_OK;
}

/* An activation (n elements of the compute type) summed over the tp team. */
static int tp_sum(sym_gpu_model_t *m, void *x, size_t n) {
    return tp_reduce(m, x, n, m->coll_dt, SHMEMX_SUM);
}

/* ---- sequence parallelism and --tp-overlap: the tp collectives of the passes ---- */

/* Element `row` of rows `width` wide in the activation p (the compute type). */
#define AT(p, row, width) ((void *)((char *)(p) + (size_t)(row) * (size_t)(width) * m->esz))

/* This PE's rows of the LayerNorm / dropout / residual regions of a step of
 * N rows: with SP rows [r0, r0 + n) in a shard of R = ceil(N / tp) rows
 * (team PE k's start at k R; the last PE's n may be short, even 0, and its
 * buffers' rows past n are padding, never read); without, all N. */
typedef struct {
    int R, r0, n;
} shard_t;

static shard_t shard_of(const sym_gpu_model_t *m, int N) {
    shard_t sh = {N, 0, N};
    if (!m->sp) return sh;
    sh.R = (N + m->tp - 1) / m->tp;
    sh.r0 = m->tp_rank * sh.R;
    sh.n = sh.r0 >= N ? 0 : N - sh.r0 < sh.R ? N - sh.r0 : sh.R;
    return sh;
}

/* SP: shard (R,C) = this PE's rows of part (tp R,C) summed over the team
 * (Partial -> Shard: reduce-scatter; shard may be part + r0 C, in place). */
static int sp_scatter(sym_gpu_model_t *m, void *shard, const void *part, const shard_t *sh) {
    size_t n = (size_t)m->tp * sh->R * m->C;
    int e = shmemx_gpu_reduce_scatter_team(m->opts.tp_team, shard, part, n, m->coll_dt,
                                           SHMEMX_SUM, m->s);
    if (e)
        return fail(SYM_EIO, "PE %d: sequence parallelism's reduce-scatter "
                             "(shmemx_gpu_reduce_scatter_team of %zu elements over the tp team) "
                             "failed: %s", shmem_my_pe(), n, shmemx_gpu_strerror(e));
    return SYM_OK;
}

/* SP: whole (tp R,C) = every team PE's shard (R,C) (Shard -> Replicate: all-gather). */
static int sp_gather(sym_gpu_model_t *m, void *whole, const void *shard, const shard_t *sh) {
    size_t n = (size_t)sh->R * m->C;
    int e = shmemx_gpu_allgather_team(m->opts.tp_team, whole, shard, n, m->coll_dt, m->s);
    if (e)
        return fail(SYM_EIO, "PE %d: sequence parallelism's all-gather "
                             "(shmemx_gpu_allgather_team of %zu elements from each PE of the tp "
                             "team) failed: %s", shmem_my_pe(), n, shmemx_gpu_strerror(e));
    return SYM_OK;
}

/* After a row-parallel product (its partial output part (N,C)) or a
 * column-parallel one's backward (its partial input gradient): the sum over
 * the team, all of it in place (all-reduce), or with SP this PE's rows of it
 * (reduce-scatter in place, at part + r0 C). *y: the result's first row. */
static int row_out(sym_gpu_model_t *m, void *part, int N, const shard_t *sh, void **y) {
    *y = part;
    if (!m->sp) return tp_sum(m, part, (size_t)N * m->C);
    *y = AT(part, sh->r0, m->C);
    return sp_scatter(m, *y, part, sh);
}

/* Before a column-parallel product: its whole input (N,C), a LayerNorm's
 * output ln; with SP ln is this PE's shard, gathered into m->full. */
static int col_in(sym_gpu_model_t *m, const void *ln, const shard_t *sh, const void **in) {
    *in = ln;
    if (!m->sp) return SYM_OK;
    *in = m->full;
    return sp_gather(m, m->full, ln, sh);
}

/* Before a row-parallel layer's backward: the whole gradient of its output;
 * with SP *d is this PE's shard of it, gathered into m->proj (free in backward). */
static int grad_in(sym_gpu_model_t *m, const void **d, const shard_t *sh) {
    if (!m->sp) return SYM_OK;
    int rc = sp_gather(m, m->proj, *d, sh);
    *d = m->proj;
    return rc;
}

/* Stream `waiter` waits (through event ev) for what stream `from` has done so far. */
static int stream_after(cudaStream_t waiter, cudaEvent_t ev, cudaStream_t from) {
    CK(cudaEventRecord(ev, from));
    CK(cudaStreamWaitEvent(waiter, ev, 0));
    return SYM_OK;
}

/* --tp-overlap: x (n elements of the compute type, a chunk the step's stream
 * has just computed) summed over the tp team on the side stream s_tp, which
 * waits for the step's stream first (the all-reduces run in order there, one
 * collective at a time, while the step's stream computes the next chunk). */
static int tp_side_sum(sym_gpu_model_t *m, void *x, size_t n) {
    int e = stream_after(m->s_tp, m->ev_tp_fork, m->s);
    if (e) return e;
    e = shmemx_gpu_allreduce_team(m->opts.tp_team, x, x, n, m->coll_dt, SHMEMX_SUM, m->s_tp);
    if (e)
        return fail(SYM_EIO, "PE %d: an overlapped tensor-parallel sum (shmemx_gpu_allreduce_team "
                             "of %zu elements over the tp team, --tp-overlap) failed: %s",
                    shmem_my_pe(), n, shmemx_gpu_strerror(e));
    return SYM_OK;
}

/* The step's stream waits for the side stream's sums. */
static int tp_side_join(sym_gpu_model_t *m) {
    return stream_after(m->s, m->ev_tp_join, m->s_tp);
}

/* Rows [*r0, *r1) of chunk k of N rows in K chunks (gpt.c's chunk_rows). */
static void chunk_rows(int N, int K, int k, int *r0, int *r1) {
    *r0 = (int)((int64_t)N * k / K);
    *r1 = (int)((int64_t)N * (k + 1) / K);
}

/* A row-parallel layer: m->proj (N,C) = in (N,I) @ w^T + b (b: the whole
 * bias, on team PE 0 only, else NULL), then row_out (*y). --tp-overlap: in
 * m->chunks row chunks, each chunk's all-reduce started on the side stream as
 * soon as it is computed, while the next one computes; joined at the end. */
static int row_parallel(sym_gpu_model_t *m, const void *in, const void *w, const void *b, int N,
                        int I, const shard_t *sh, void **y) {
    int C = m->C, rc;
    if (!m->chunks) {
        OP(symcu_matmul_forward(m->blas, m->dt, m->proj, in, w, b, N, I, C, NULL, m->s));
        return row_out(m, m->proj, N, sh, y);
    }
    int K = m->chunks < N ? m->chunks : N;
    for (int k = 0; k < K; k++) {
        int r0, r1;
        chunk_rows(N, K, k, &r0, &r1);
        if (r1 == r0) continue;
        OP(symcu_matmul_forward(m->blas, m->dt, AT(m->proj, r0, C), AT(in, r0, I), w, b, r1 - r0,
                                I, C, NULL, m->s));
        if ((rc = tp_side_sum(m, AT(m->proj, r0, C), (size_t)(r1 - r0) * C))) return rc;
    }
    *y = m->proj;
    return tp_side_join(m);
}

/* A column-parallel layer's backward: m->dln (N,I) = dout (N rows of ld, O
 * used) @ w (O,I), dw (O,I) +=, db (O) += (NULL: none; ld != O: the LM
 * head's, no bias), given its forward's input in (N,I); then the input
 * gradient summed over the team (row_out: *dl). --tp-overlap: the input
 * gradient first, in row chunks whose all-reduces start at once on the side
 * stream, then the weight gradient while they run; joined at the end. */
static int col_back(sym_gpu_model_t *m, float *dw, float *db, const void *dout, int ld,
                    const void *in, const void *w, int N, int I, int O, const shard_t *sh,
                    void **dl) {
    int rc;
    cudaStream_t s = m->s;
    if (!m->chunks) {
        if (ld != O)
            OP(symcu_matmul_backward_ld(m->blas, m->dt, m->dln, SYMCU_GRAD_SET, dw, dout, ld, in, w,
                                        N, I, O, s));
        else
            OP(symcu_matmul_backward(m->blas, m->dt, m->dln, SYMCU_GRAD_SET, dw, db, dout, in, w, N,
                                     I, O, s));
        return row_out(m, m->dln, N, sh, dl);
    }
    int K = m->chunks < N ? m->chunks : N;
    for (int k = 0; k < K; k++) {
        int r0, r1;
        chunk_rows(N, K, k, &r0, &r1);
        if (r1 == r0) continue;
        if (ld != O)
            OP(symcu_matmul_backward_ld(m->blas, m->dt, AT(m->dln, r0, I), SYMCU_GRAD_SET, NULL,
                                        AT(dout, r0, ld), ld, AT(in, r0, I), w, r1 - r0, I, O, s));
        else
            OP(symcu_matmul_backward(m->blas, m->dt, AT(m->dln, r0, I), SYMCU_GRAD_SET, NULL, NULL,
                                     AT(dout, r0, O), AT(in, r0, I), w, r1 - r0, I, O, s));
        if ((rc = tp_side_sum(m, AT(m->dln, r0, I), (size_t)(r1 - r0) * I))) return rc;
    }
    if (ld != O)
        OP(symcu_matmul_backward_ld(m->blas, m->dt, NULL, SYMCU_GRAD_SET, dw, dout, ld, in, w, N, I,
                                    O, s));
    else
        OP(symcu_matmul_backward(m->blas, m->dt, NULL, SYMCU_GRAD_SET, dw, db, dout, in, w, N, I, O,
                                 s));
    *dl = m->dln;
    return tp_side_join(m);
}

/* A LayerNorm forward (symcu_residual_layernorm_forward) of n rows; none when
 * n is 0 (an SP shard past the batch's rows). */
static int ln_forward(sym_gpu_model_t *m, void *res, void *out, float *mean, float *rstd,
                      const void *a, const void *b, const void *w, const void *bias, int n) {
    if (n > 0)
        OP(symcu_residual_layernorm_forward(m->dt, res, out, mean, rstd, a, b, w, bias, n, m->C,
                                            m->s));
    return SYM_OK;
}

/* A LayerNorm backward (symcu_layernorm_backward) of n rows, adding into dx,
 * dw and db; nothing when n is 0. With SP dw and db get this PE's rows'
 * part: sp_ln_sum sums them over the team after the step's backward. */
static int ln_backward(sym_gpu_model_t *m, void *dx, float *dw, float *db, const void *dout,
                       const void *x, const void *w, const float *mean, const float *rstd, int n) {
    if (n > 0)
        OP(symcu_layernorm_backward(m->dt, dx, dw, db, m->ln_scratch, dout, x, w, mean, rstd, n,
                                    m->C, m->s));
    return SYM_OK;
}

/* lng (n, C2) from the n ranges g + off[i] - base (C2 floats each), or back. */
__global__ void ln_pack_kernel(float *lng, float *g, const uint64_t *off, uint64_t base, int C2,
                               int back) {
    float *dst = lng + (size_t)blockIdx.x * C2, *src = g + (off[blockIdx.x] - base);
    for (int j = threadIdx.x; j < C2; j += blockDim.x) {
        if (back)
            src[j] = dst[j];
        else
            dst[j] = src[j];
    }
}

/* SP: every LayerNorm's weight and bias gradients (this PE's rows' part,
 * summed over the step's micro-batches) summed over the tp team, packed into
 * lng for one all-reduce; the gradients are then whole, alike on every PE.
 * Once a step, before the data-parallel average and the norm. */
static int ln_sum(sym_gpu_model_t *m, float *g, size_t base, int first, int n) {
    int C2 = 2 * m->C;
    ln_pack_kernel<<<(unsigned)n, 256, 0, m->s>>>(m->lng, g, m->lnoff + first, base, C2, 0);
    CK(cudaGetLastError());
    int rc = tp_reduce(m, m->lng, (size_t)n * C2, SHMEMX_FLOAT32, SHMEMX_SUM);
    if (rc) return rc;
    ln_pack_kernel<<<(unsigned)n, 256, 0, m->s>>>(m->lng, g, m->lnoff + first, base, C2, 1);
    CK(cudaGetLastError());
    return SYM_OK;
}

/* With ZeRO-2 the blocks' LayerNorms are summed with their units (z2_end):
 * only ln_f's is left here. */
static int sp_ln_sum(sym_gpu_model_t *m) {
    if (!m->sp || !m->nln) return SYM_OK;
    if (m->zero != 2) return ln_sum(m, m->g, 0, 0, m->nln);
    if (!m->hold_head) return SYM_OK;
    float *g = grad_at(m, m->off_lnfw);
    return ln_sum(m, g, m->off_lnfw, m->nln - 1, 1);
}

/* ---- activation sets, a stage's edges ---- */

/* Chunk k of the stage in use: its blocks, their parameters, its ends. */
static void use_chunk(sym_gpu_model_t *m, int k) {
    m->chunk = k;
    m->l0 = m->ch_l0[k];
    m->L = m->ch_L[k];
    m->off = m->boff ? m->boff + m->ch_at[k] : NULL;
    m->embed = m->hold_embed && k == 0;
    m->head = m->hold_head && k == m->nchunks - 1;
}

/* The fields of slot k in use (its blocks: the chunk in use's first L). */
static void use_slot(sym_gpu_model_t *m, int k) {
    gslot_t *a = &m->sl[k];
    m->blk = a->blk;
    m->encoded = a->encoded;
    m->lnf = a->lnf;
    m->lnf_mean = a->lnf_mean;
    m->lnf_rstd = a->lnf_rstd;
    m->logits = a->logits;
    m->tok = a->tok;
    m->drop_cur = m->drop_d ? m->drop_d + (size_t)k * (m->nsites + 1) : NULL;
}

/* out (n) = a (n) + b (n), rounded (a stage's last residual, with no ln_f after it). */
template <typename E>
__global__ void add_kernel(E *out, const E *a, const E *b, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        out[i] = from_f<E>(to_f(a[i]) + to_f(b[i]));
}

/* out (n, fp32) = in (n, E) exactly. */
template <typename E>
__global__ void to_f32_kernel(float *out, const E *in, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        out[i] = to_f(in[i]);
}

/* An activation (n, the compute type) from the host's fp32 x: through
 * m->xfer, rounded (fp32: straight in). */
static int from_host(sym_gpu_model_t *m, void *dst, const float *x, size_t n) {
    if (m->dt == SYMCU_F32) {
        CK(cudaMemcpyAsync(dst, x, n * sizeof(float), cudaMemcpyHostToDevice, m->s));
        return SYM_OK;
    }
    CK(cudaMemcpyAsync(m->xfer, x, n * sizeof(float), cudaMemcpyHostToDevice, m->s));
    if (m->dt == SYMCU_BF16)
        to_compute_kernel<bf16><<<1024, 256, 0, m->s>>>((bf16 *)dst, m->xfer, n);
    else
        to_compute_kernel<f16><<<1024, 256, 0, m->s>>>((f16 *)dst, m->xfer, n);
    CK(cudaGetLastError());
    return SYM_OK;
}

/* The host's fp32 y (n) from an activation; the stream then synchronises. */
static int to_host(sym_gpu_model_t *m, float *y, const void *src, size_t n) {
    const void *from = src;
    if (m->dt != SYMCU_F32) {
        if (m->dt == SYMCU_BF16)
            to_f32_kernel<bf16><<<1024, 256, 0, m->s>>>(m->xfer, (const bf16 *)src, n);
        else
            to_f32_kernel<f16><<<1024, 256, 0, m->s>>>(m->xfer, (const f16 *)src, n);
        CK(cudaGetLastError());
        from = m->xfer;
    }
    CK(cudaMemcpyAsync(y, from, n * sizeof(float), cudaMemcpyDeviceToHost, m->s));
    CK(cudaStreamSynchronize(m->s));
    return SYM_OK;
}

/* Dropout site i (see the struct) as the kernels take it. */
static symcu_dropout_t site(const sym_gpu_model_t *m, int i) {
    symcu_dropout_t d;
    float p = m->cfg.dropout;
    d.step_key = m->drop_cur + i;
    d.row0 = (const int64_t *)(m->drop_cur + m->nsites);
    d.threshold = (uint32_t)((double)p * 16777216.0);
    if (i > 2 * m->Lt && d.threshold == 0) d.threshold = 1; /* the attention's, as the CPU's */
    d.scale = 1.0f / (1.0f - p);
    d.h0 = m->tp_rank * m->NHl;
    d.heads = m->NH;
    return d;
}

/* x (sh->n,C) = x * the mask of residual site i, in place (a training
 * forward): this PE's rows of the step's N (all of them without SP), the
 * masks of their global rows. */
static int drop_rows(sym_gpu_model_t *m, void *x, const shard_t *sh, int T, int i) {
    symcu_dropout_t d = site(m, i);
    OP(symcu_dropout_rows(m->dt, x, x, sh->n, m->C, T, sh->r0, &d, m->s));
    return SYM_OK;
}

/* *d, the gradient (sh->n,C) of residual site i's output, becomes its
 * input's: *d times the mask in m->proj (free in backward), with SP in m->dsh
 * (proj then takes the gathered gradient); without dropout *d stays. */
static int drop_grad(sym_gpu_model_t *m, const void **d, const shard_t *sh, int T, int i) {
    if (!m->nsites) return SYM_OK;
    symcu_dropout_t dd = site(m, i);
    void *out = m->sp ? m->dsh : m->proj;
    OP(symcu_dropout_rows(m->dt, out, *d, sh->n, m->C, T, sh->r0, &dd, m->s));
    *d = out;
    return SYM_OK;
}

/* The attention's dropout of the stage's block l: NULL without (or outside training). */
static const symcu_dropout_t *attn_drop(const sym_gpu_model_t *m, int l, int train,
                                        symcu_dropout_t *d) {
    if (!m->nsites || !train) return NULL;
    *d = site(m, 1 + 2 * m->Lt + m->l0 + l);
    return d;
}

/* The k-th residual dropout site (0: attention, 1: MLP) of the stage's block l. */
static int res_site(const sym_gpu_model_t *m, int l, int k) { return 1 + 2 * (m->l0 + l) + k; }

/* Tokens (B,T) on the device to logits (B,T,Vp) (tp: this PE's columns, (B,T,ld)),
 * keeping the activations; train: with dropout (when the model has it). With
 * SP every LayerNorm, dropout and residual below runs on this PE's shard of
 * the N rows (shard_of), the column-parallel products on the gathered
 * LayerNorm outputs (col_in), the row-parallel outputs reduce-scattered. */
static int forward(sym_gpu_model_t *m, int B, int T, int train) {
    int N = B * T, C = m->C, L = m->L, Cl = m->Cl, rc;
    int drop = train && m->nsites;
    shard_t sh = shard_of(m, N);
    int R = sh.n; /* this PE's rows of the LayerNorm / residual regions */
    cudaStream_t s = m->s;
    const void *lin;
    void *y;
    if (!m->embed) { /* a later stage: encoded holds the previous stage's output (its shard) */
    } else if (m->tp > 1) { /* this PE's vocabulary rows, wpe on PE 0, summed over the team */
        void *part = m->sp ? m->proj : m->encoded;
        OP(symcu_encoder_shard_forward(m->dt, part, m->tok, W(m->off_wte), m->v0, m->nv,
                                       WB(m->off_wpe), B, T, C, s));
        rc = m->sp ? sp_scatter(m, m->encoded, part, &sh) : tp_sum(m, m->encoded, (size_t)N * C);
        if (rc) return rc;
    } else {
        OP(symcu_encoder_forward(m->dt, m->encoded, m->tok, W(m->off_wte), W(m->off_wpe), B, T, C,
                                 s));
    }
    if (m->embed && drop && (rc = drop_rows(m, m->encoded, &sh, T, 0))) return rc;
    void *lnf_out = m->sp ? m->dsh : m->lnf; /* with SP ln_f's shard, gathered below */
    if (L > 0) {
        const size_t *o = m->off[0];
        if ((rc = ln_forward(m, NULL, m->blk[0].ln1, m->blk[0].ln1_mean, m->blk[0].ln1_rstd,
                             m->encoded, NULL, W(o[LN1W]), W(o[LN1B]), R)))
            return rc;
    } else if ((rc = ln_forward(m, NULL, lnf_out, m->lnf_mean, m->lnf_rstd, m->encoded, NULL,
                                W(m->off_lnfw), W(m->off_lnfb), R))) {
        return rc;
    }
    for (int l = 0; l < L; l++) {
        gblock_t *b = &m->blk[l];
        const size_t *o = m->off[l];
        const void *x = l == 0 ? m->encoded : m->blk[l - 1].res3;
        if ((rc = col_in(m, b->ln1, &sh, &lin))) return rc;
        OP(symcu_matmul_forward(m->blas, m->dt, b->qkv, lin, W(o[QKVW]), W(o[QKVB]), N, C, 3 * Cl,
                                NULL, s));
        symcu_dropout_t ad;
        OP(symcu_attention_forward(m->dt, b->atty, b->lse, b->qkv, B, T, Cl, m->NHl,
                                   attn_drop(m, l, train, &ad), s));
        if ((rc = row_parallel(m, b->atty, W(o[PROJW]), WB(o[PROJB]), N, Cl, &sh, &y))) return rc;
        if (drop && (rc = drop_rows(m, y, &sh, T, res_site(m, l, 0)))) return rc;
        if ((rc = ln_forward(m, b->res2, b->ln2, b->ln2_mean, b->ln2_rstd, x, y, W(o[LN2W]),
                             W(o[LN2B]), R)) ||
            (rc = col_in(m, b->ln2, &sh, &lin)))
            return rc;
        OP(symcu_matmul_forward(m->blas, m->dt, b->fch_gelu, lin, W(o[FCW]), W(o[FCB]), N, C,
                                4 * Cl, b->fch, s));
        if ((rc = row_parallel(m, b->fch_gelu, W(o[FCPW]), WB(o[FCPB]), N, 4 * Cl, &sh, &y)))
            return rc;
        if (drop && (rc = drop_rows(m, y, &sh, T, res_site(m, l, 1)))) return rc;
        if (l + 1 == L && !m->head) { /* the stage's output: res3 = res2 + proj */
            size_t n = (size_t)R * C;
            if (m->dt == SYMCU_F32)
                add_kernel<float><<<1024, 256, 0, s>>>((float *)b->res3, (const float *)b->res2,
                                                       (const float *)y, n);
            else if (m->dt == SYMCU_BF16)
                add_kernel<bf16><<<1024, 256, 0, s>>>((bf16 *)b->res3, (const bf16 *)b->res2,
                                                      (const bf16 *)y, n);
            else
                add_kernel<f16><<<1024, 256, 0, s>>>((f16 *)b->res3, (const f16 *)b->res2,
                                                     (const f16 *)y, n);
            CK(cudaGetLastError());
            break;
        }
        /* res3 = res2 + proj, normalised by the next block's ln_1 or by ln_f */
        void *out = l + 1 < L ? m->blk[l + 1].ln1 : lnf_out;
        float *mean = l + 1 < L ? m->blk[l + 1].ln1_mean : m->lnf_mean;
        float *rstd = l + 1 < L ? m->blk[l + 1].ln1_rstd : m->lnf_rstd;
        size_t lw = l + 1 < L ? m->off[l + 1][LN1W] : m->off_lnfw;
        size_t lb = l + 1 < L ? m->off[l + 1][LN1B] : m->off_lnfb;
        if ((rc = ln_forward(m, b->res3, out, mean, rstd, b->res2, y, W(lw), W(lb), R))) return rc;
    }
    if (!m->head) return SYM_OK;
    if (m->sp && (rc = sp_gather(m, m->lnf, m->dsh, &sh))) return rc; /* the LM head's input */
    if (m->tp > 1)
        OP(symcu_matmul_forward_ld(m->blas, m->dt, m->logits, m->ld, m->lnf, W(m->off_wte), N, C,
                                   m->nv, s));
    else
        OP(symcu_matmul_forward(m->blas, m->dt, m->logits, m->lnf, W(m->off_wte), NULL, N, C, m->Vp,
                                NULL, s));
    return SYM_OK;
}

/* hits (N) = 1 where first (N), the row's first arg-max column, is the target (N) */
__global__ void hits_kernel(float *hits, const float *first, const int32_t *tgt, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) hits[i] = first[i] == (float)tgt[i] ? 1.0f : 0.0f;
}

/* Tensor parallelism: the loss (N) from this PE's columns of the logits (N,ld),
 * which become dlogits * scale (* *dscale); with hits, the accuracy first
 * (hits (N), before the logits are overwritten). */
static int xent_tp(sym_gpu_model_t *m, int N, float scale, const float *dscale, float *hits) {
    int rc;
    cudaStream_t s = m->s;
    OP(symcu_xent_shard_max(m->dt, m->xmax, m->logits, N, m->nv, m->ld, s));
    if ((rc = tp_reduce(m, m->xmax, (size_t)N, SHMEMX_FLOAT32, SHMEMX_MAX))) return rc;
    if (hits) {
        OP(symcu_argmax_shard(m->dt, m->first, m->logits, m->xmax, N, m->v0, m->nv, m->ld, s));
        if ((rc = tp_reduce(m, m->first, (size_t)N, SHMEMX_FLOAT32, SHMEMX_MIN))) return rc;
        hits_kernel<<<(N + 255) / 256, 256, 0, s>>>(hits, m->first, m->tgt, N);
        CK(cudaGetLastError());
    }
    OP(symcu_xent_shard_sums(m->dt, m->xsums, m->logits, m->tgt, m->xmax, N, m->v0, m->nv, m->ld,
                             s));
    if ((rc = tp_reduce(m, m->xsums, 2 * (size_t)N, SHMEMX_FLOAT32, SHMEMX_SUM))) return rc;
    OP(symcu_xent_shard_grad(m->dt, m->losses, m->logits, m->tgt, m->xmax, m->xsums, N, m->v0,
                             m->nv, m->ld, scale, dscale, s));
    return SYM_OK;
}

/* Average the gradients [lo, dp_hi) over the data-parallel team on the side
 * stream, after what the step's stream has done so far; dp_hi = lo. */
static int dp_send(sym_gpu_model_t *m, size_t lo) {
    if (m->npes < 2 || lo >= m->dp_hi) return SYM_OK;
    int rc = stream_after(m->s_dp, m->ev_fork, m->s);
    if (rc) return rc;
    int e = shmemx_gpu_allreduce_team(m->opts.dp_team, m->g + lo, m->g + lo, m->dp_hi - lo,
                                      SHMEMX_FLOAT32, SHMEMX_AVG, m->s_dp);
    if (e)
        return fail(SYM_EIO, "PE %d: the gradient average (shmemx_gpu_allreduce_team of %zu "
                             "floats) failed: %s",
                    shmem_my_pe(), m->dp_hi - lo, shmemx_gpu_strerror(e));
    m->dp_hi = lo;
    return SYM_OK;
}

/* What a step body does with the gradients (its graph's key too): KEEP adds
 * to the ones accumulate() left (else they start from zero), AVERAGE
 * averages them over the data-parallel team (the step's last micro-batch). */
enum { BODY_KEEP = 1, BODY_AVERAGE = 2 };

/* ZeRO-1: the gradients (Pp) averaged over the data-parallel team, this PE's
 * block of the average into g + zlo, in place (shmemx_gpu.h: dest == source
 * + the block's offset), on the step's stream. */
static int zero_scatter(sym_gpu_model_t *m) {
    int e = shmemx_gpu_reduce_scatter_team(m->opts.dp_team, m->g + m->zlo, m->g, m->Pp,
                                           SHMEMX_FLOAT32, SHMEMX_AVG, m->s);
    if (e)
        return fail(SYM_EIO, "PE %d: ZeRO-1's gradient average (shmemx_gpu_reduce_scatter_team "
                             "of %zu floats over the dp team) failed: %s",
                    shmem_my_pe(), m->Pp, shmemx_gpu_strerror(e));
    return SYM_OK;
}

/* ZeRO-2: unit u's gradients (src, n c floats, its padding zero) averaged
 * over the dp team in place, this PE's block of the average added to its
 * stretch of gs, on stream q. */
static int z2_reduce(sym_gpu_model_t *m, const z2unit_t *u, float *src, cudaStream_t q) {
    size_t n = (size_t)m->npes, at = (size_t)m->zrank * u->c;
    int e = shmemx_gpu_reduce_scatter_team(m->opts.dp_team, src + at, src, n * u->c,
                                           SHMEMX_FLOAT32, SHMEMX_AVG, q);
    if (e)
        return fail(SYM_EIO, "PE %d: ZeRO-2's gradient average of parameters [%zu, %zu) "
                             "(shmemx_gpu_reduce_scatter_team over the dp team) failed: %s",
                    shmem_my_pe(), u->lo, u->lo + u->len, shmemx_gpu_strerror(e));
    unsigned grid = (unsigned)((u->c + 255) / 256 < 1024 ? (u->c + 255) / 256 : 1024);
    add_kernel<float><<<grid, 256, 0, q>>>(m->gs + u->soff, m->gs + u->soff, src + at, u->c);
    CK(cudaGetLastError());
    return SYM_OK;
}

/* ZeRO-2, before block bi's backward: the other slot (once its last unit's
 * average has read it) zeroed for the block's gradients. */
static int z2_begin(sym_gpu_model_t *m, int bi) {
    if (m->zero != 2) return SYM_OK;
    int k = m->zk ^ 1;
    if (m->zused & (1 << k)) CK(cudaStreamWaitEvent(m->s, m->ev_zfree[k], 0));
    m->zk = k;
    m->zcur = m->bunit[bi];
    CK(cudaMemsetAsync(m->z2slot[k], 0, (size_t)m->npes * m->u[m->zcur].c * sizeof(float), m->s));
    return SYM_OK;
}

/* ZeRO-2, after block bi's backward: its LayerNorms' gradients summed over
 * the tp team (SP), then its unit averaged into gs; on the side stream
 * while the backward goes on, unless the tp team has collectives of its
 * own in the backward (one GPU collective at a time). */
static int z2_end(sym_gpu_model_t *m, int bi) {
    if (m->zero != 2) return SYM_OK;
    const z2unit_t *u = &m->u[m->zcur];
    float *slot = m->z2slot[m->zk];
    int rc, side = m->tp < 2;
    if (m->sp && (rc = ln_sum(m, slot, u->lo, 2 * bi, 2))) return rc;
    if (side && (rc = stream_after(m->s_dp, m->ev_fork, m->s))) return rc;
    if ((rc = z2_reduce(m, u, slot, side ? m->s_dp : m->s))) return rc;
    if (side) {
        CK(cudaEventRecord(m->ev_zfree[m->zk], m->s_dp));
        m->zused |= 1 << m->zk;
    }
    m->zcur = -1;
    return SYM_OK;
}

/* ZeRO-2, the backward's end: the step's stream waits for the side stream's averages. */
static int z2_join(sym_gpu_model_t *m) {
    if (m->zero != 2 || !m->zused) return SYM_OK;
    m->zused = 0;
    return stream_after(m->s, m->ev_join, m->s_dp);
}

/* ZeRO-2, a backward's start (kind: BODY_*): without BODY_KEEP the shard and
 * the edges' arrays zeroed (the units add into them). */
static int z2_start(sym_gpu_model_t *m, int kind) {
    m->zused = 0;
    m->zcur = -1;
    if (m->zero != 2 || (kind & BODY_KEEP)) return SYM_OK;
    CK(cudaMemsetAsync(m->gs, 0, m->S * sizeof(float), m->s));
    CK(cudaMemsetAsync(m->edge, 0, m->zedge * sizeof(float), m->s));
    return SYM_OK;
}

/* x (n floats) summed over the data-parallel team in place, on the step's stream. */
static int dp_sum(sym_gpu_model_t *m, float *x, size_t n) {
    int e = shmemx_gpu_allreduce_team(m->opts.dp_team, x, x, n, SHMEMX_FLOAT32, SHMEMX_SUM, m->s);
    if (e)
        return fail(SYM_EIO, "PE %d: a sum over the dp team (shmemx_gpu_allreduce_team of %zu "
                             "floats) failed: %s",
                    shmem_my_pe(), n, shmemx_gpu_strerror(e));
    return SYM_OK;
}

/* The rest of the average, [0, dp_hi), and the step's stream waits for the
 * side stream's reductions (npes > 1); with ZeRO-1 the reduce-scatter. */
static int dp_finish(sym_gpu_model_t *m) {
    if (m->zero == 2) { /* the edges (their gradients summed over the step until now) */
        int rc;
        for (int i = 0; i < m->nu; i++)
            if (!m->u[i].block && (rc = z2_reduce(m, &m->u[i], m->u[i].store, m->s))) return rc;
        return SYM_OK;
    }
    if (m->zero) return zero_scatter(m);
    int rc = dp_send(m, 0);
    return rc ? rc : stream_after(m->s, m->ev_join, m->s_dp);
}

/* All the gradients averaged after a step's backwards (none sent during them). */
static int dp_average_all(sym_gpu_model_t *m) {
    m->dp_hi = m->P;
    return m->npes > 1 ? dp_finish(m) : SYM_OK;
}

/* From dlogits (in m->logits) to the parameter gradients m->g (the kernels
 * add into them), averaged over the data-parallel team with BODY_AVERAGE
 * (ZeRO-1: this PE's block of the average). With SP m->dres is this PE's
 * shard of the residual gradient, gathered (grad_in) before each row-parallel
 * layer's backward; the column-parallel input gradients are reduce-scattered
 * (col_back), the LayerNorm outputs gathered again (col_in). */
static int backward(sym_gpu_model_t *m, int B, int T, int kind) {
    int N = B * T, C = m->C, L = m->L, Cl = m->Cl, rc;
    shard_t sh = shard_of(m, N);
    int R = sh.n; /* this PE's rows of the LayerNorm / residual regions */
    cudaStream_t s = m->s;
    const void *lin, *dy;
    void *dl;
    m->dp_hi = kind & BODY_AVERAGE ? m->P : 0; /* dp_send sends nothing below dp_hi */
    if (m->zero == 2) {
        if ((rc = z2_start(m, kind))) return rc;
    } else if (!(kind & BODY_KEEP)) {
        CK(cudaMemsetAsync(m->g, 0, m->Pp * sizeof(float), s));
    }
    const void *xL = L ? m->blk[L - 1].res3 : m->encoded;
    if (m->head) { /* the LM head (with tp this PE's columns; the input gradient summed
                    * over the team), then ln_f; a stage before the last: dres holds
                    * its output's gradient (with SP its shard) */
        int tp = m->tp > 1;
        if ((rc = col_back(m, G(m->off_wte), NULL, m->logits, tp ? m->ld : m->Vp, m->lnf,
                           W(m->off_wte), N, C, tp ? m->nv : m->Vp, &sh, &dl)))
            return rc;
        CK(cudaMemsetAsync(m->dres, 0, (size_t)sh.R * C * m->esz, s));
        if ((rc = ln_backward(m, m->dres, G(m->off_lnfw), G(m->off_lnfb), dl, xL, W(m->off_lnfw),
                              m->lnf_mean, m->lnf_rstd, R)))
            return rc;
    }
    for (int l = L - 1; l >= 0; l--) {
        gblock_t *b = &m->blk[l];
        const size_t *o = m->off[l];
        const void *x = l == 0 ? m->encoded : m->blk[l - 1].res3;
        int bi = m->ch_at[m->chunk] + l; /* the stage's block index */
        if ((rc = z2_begin(m, bi))) return rc;
        /* recomputed as the forward made them (the same kernels on the same
         * inputs: the same bits) */
        if (m->opts.recompute_ln &&
            (rc = ln_forward(m, NULL, b->ln2, m->ln_tmp_mean, m->ln_tmp_rstd, b->res2, NULL,
                             W(o[LN2W]), W(o[LN2B]), R)))
            return rc;
        if ((rc = col_in(m, b->ln2, &sh, &lin))) return rc; /* c_fc's input */
        if (m->opts.recompute_gelu)
            OP(symcu_matmul_forward(m->blas, m->dt, b->fch_gelu, lin, W(o[FCW]), W(o[FCB]), N, C,
                                    4 * Cl, b->fch, s));
        /* dres holds d res3: through the MLP half (its dropout's mask first)
         * into d res2 (with tp the column-parallel c_fc's input gradient
         * summed over the team) */
        dy = m->dres;
        if ((rc = drop_grad(m, &dy, &sh, T, res_site(m, l, 1))) || (rc = grad_in(m, &dy, &sh)))
            return rc;
        OP(symcu_matmul_backward(m->blas, m->dt, m->dfch, SYMCU_GRAD_SET, G(o[FCPW]), G(o[FCPB]),
                                 dy, b->fch_gelu, W(o[FCPW]), N, 4 * Cl, C, s));
        OP(symcu_gelu_backward(m->dt, m->dfch, b->fch, m->dfch, (size_t)N * 4 * Cl, s));
        if ((rc = col_back(m, G(o[FCW]), G(o[FCB]), m->dfch, 4 * Cl, lin, W(o[FCW]), N, C, 4 * Cl,
                           &sh, &dl)) ||
            (rc = ln_backward(m, m->dres, G(o[LN2W]), G(o[LN2B]), dl, b->res2, W(o[LN2W]),
                              b->ln2_mean, b->ln2_rstd, R)))
            return rc;
        /* dres holds d res2: through the attention half into d x */
        dy = m->dres;
        if ((rc = drop_grad(m, &dy, &sh, T, res_site(m, l, 0))) || (rc = grad_in(m, &dy, &sh)))
            return rc;
        OP(symcu_matmul_backward(m->blas, m->dt, m->datty, SYMCU_GRAD_SET, G(o[PROJW]),
                                 G(o[PROJB]), dy, b->atty, W(o[PROJW]), N, Cl, C, s));
        symcu_dropout_t ad;
        OP(symcu_attention_backward(m->dt, m->dqkv, SYMCU_GRAD_SET, m->att_scratch, m->datty,
                                    b->atty, b->qkv, b->lse, B, T, Cl, m->NHl,
                                    attn_drop(m, l, 1, &ad), s));
        if (m->opts.recompute_ln &&
            (rc = ln_forward(m, NULL, b->ln1, m->ln_tmp_mean, m->ln_tmp_rstd, x, NULL, W(o[LN1W]),
                             W(o[LN1B]), R)))
            return rc;
        if ((rc = col_in(m, b->ln1, &sh, &lin)) ||
            (rc = col_back(m, G(o[QKVW]), G(o[QKVB]), m->dqkv, 3 * Cl, lin, W(o[QKVW]), N, C,
                           3 * Cl, &sh, &dl)) ||
            (rc = ln_backward(m, m->dres, G(o[LN1W]), G(o[LN1B]), dl, x, W(o[LN1W]), b->ln1_mean,
                              b->ln1_rstd, R)) ||
            (rc = z2_end(m, bi)))
            return rc;
        if ((kind & BODY_AVERAGE) && m->bucket && m->dp_hi - o[LN1W] >= m->bucket &&
            (rc = dp_send(m, o[LN1W])))
            return rc;
    }
    if (m->embed) { /* else dres holds the gradient of the stage's input */
        const void *denc = m->dres;
        if ((rc = drop_grad(m, &denc, &sh, T, 0)) || (rc = grad_in(m, &denc, &sh))) return rc;
        OP(symcu_encoder_shard_backward(m->dt, G(m->off_wte), G(m->off_wpe), m->enc_scratch,
                                        m->enc_scratch_bytes, denc, m->tok, m->v0,
                                        m->tp > 1 ? m->nv : m->V, B, T, C, m->V, s));
    }
    if ((rc = z2_join(m))) return rc;
    /* SP: the LayerNorms' gradients whole, once the step's last micro-batch is in */
    if ((kind & BODY_AVERAGE) && (rc = sp_ln_sum(m))) return rc;
    stamp_kernel<<<1, 1, 0, s>>>(m->stamp + 1); /* the compute's end, before the join */
    CK(cudaGetLastError());
    return m->npes > 1 && (kind & BODY_AVERAGE) ? dp_finish(m) : SYM_OK;
}

/* The head's loss of N rows into m->sums: training, the logits become the
 * loss gradient times scale (and fp16's loss scale); else sums[1] counts the
 * right arg-maxes too. */
static int head_loss(sym_gpu_model_t *m, int N, int train, float scale) {
    int rc;
    const float *dscale = train && m->ls ? &m->ls->scale : NULL;
    if (!train) scale = 1.0f;
    if (m->tp > 1) {
        if ((rc = xent_tp(m, N, scale, dscale, train ? NULL : m->hits))) return rc;
    } else {
        if (!train && m->dt == SYMCU_F32)
            argmax_hits_kernel<float><<<(unsigned)N, 256, 0, m->s>>>(
                m->hits, (const float *)m->logits, m->tgt, m->V, m->Vp);
        else if (!train && m->dt == SYMCU_F16)
            argmax_hits_kernel<f16><<<(unsigned)N, 256, 0, m->s>>>(
                m->hits, (const f16 *)m->logits, m->tgt, m->V, m->Vp);
        else if (!train)
            argmax_hits_kernel<bf16><<<(unsigned)N, 256, 0, m->s>>>(
                m->hits, (const bf16 *)m->logits, m->tgt, m->V, m->Vp);
        CK(cudaGetLastError());
        OP(symcu_softmax_xent(m->dt, m->losses, m->logits, m->tgt, N, m->V, m->Vp, scale, dscale,
                              m->s));
    }
    sum_rows_kernel<<<1, 1024, 0, m->s>>>(m->sums, m->losses, train ? NULL : m->hits, N);
    CK(cudaGetLastError());
    return SYM_OK;
}

/* The staged batch (N tokens) onto the device: the tokens where the model
 * embeds them, the targets where it has the head, and in training with
 * dropout the masks' keys into the slot in use's. */
static int batch_in(sym_gpu_model_t *m, size_t N, int train) {
    if (m->embed)
        CK(cudaMemcpyAsync(m->tok, m->tok_h, N * sizeof(int32_t), cudaMemcpyHostToDevice, m->s));
    if (m->head)
        CK(cudaMemcpyAsync(m->tgt, m->tgt_h, N * sizeof(int32_t), cudaMemcpyHostToDevice, m->s));
    if (train && m->nsites)
        CK(cudaMemcpyAsync(m->drop_cur, m->drop_h, (m->nsites + 1) * sizeof(uint64_t),
                           cudaMemcpyHostToDevice, m->s));
    return SYM_OK;
}

/* The part of a step a graph holds: tokens in, forward, loss, backward, the
 * loss sum; kind: BODY_* */
static int step_body(sym_gpu_model_t *m, int B, int T, float scale, int kind) {
    size_t N = (size_t)B * T;
    stamp_kernel<<<1, 1, 0, m->s>>>(m->stamp); /* the compute's start */
    CK(cudaGetLastError());
    int rc = batch_in(m, N, 1);
    if (rc || (rc = forward(m, B, T, 1)) || (rc = head_loss(m, (int)N, 1, scale))) return rc;
    return backward(m, B, T, kind);
}

/* Said once per model (PE 0), then the steps run as plain launches. */
static int capture_failed(sym_gpu_model_t *m, const char *why) {
    cudaGetLastError();
    if (shmem_my_pe() == 0)
        fprintf(stderr, "symtrain: GPU: capturing the step as a CUDA graph failed (%s); the "
                        "steps continue as plain kernel launches\n", why);
    (void)m;
    return -1;
}

static int capture(sym_gpu_model_t *m, int slot, int B, int T, float scale, int kind);

/* The graph for (B, T, scale, kind): the kept one, or a new capture of
 * step_body in the least recently used slot. Returns it, or NULL (the capture
 * is abandoned and the error cleared). */
static cudaGraphExec_t graph_for(sym_gpu_model_t *m, int B, int T, float scale, int kind) {
    int slot = 0;
    for (int i = 0; i < GRAPHS; i++) {
        if (m->graph[i].exec && m->graph[i].rows == B && m->graph[i].seq == T &&
            m->graph[i].scale == scale && m->graph[i].kind == kind) {
            m->graph[i].used = m->steps + 1;
            return m->graph[i].exec;
        }
        if (!m->graph[i].exec || (m->graph[slot].exec && m->graph[i].used < m->graph[slot].used))
            slot = i;
    }
    return capture(m, slot, B, T, scale, kind) ? NULL : m->graph[slot].exec;
}

/* Capture step_body as a graph for (B, T, scale, kind) into graph[slot].
 * Returns 0 with its exec set, or nonzero (the capture is abandoned, the
 * error cleared). */
static int capture(sym_gpu_model_t *m, int slot, int B, int T, float scale, int kind) {
    cudaGraphExec_t *exec = &m->graph[slot].exec;
    if (*exec) {
        cudaGraphExecDestroy(*exec);
        *exec = NULL;
    }
    cudaError_t e = cudaStreamBeginCapture(m->s, cudaStreamCaptureModeThreadLocal);
    if (e != cudaSuccess) return capture_failed(m, cudaGetErrorString(e));
    int rc = step_body(m, B, T, scale, kind);
    cudaGraph_t graph = NULL;
    e = cudaStreamEndCapture(m->s, &graph);
    if (rc || e != cudaSuccess || !graph) {
        if (graph) cudaGraphDestroy(graph);
        return capture_failed(m, rc ? err_buf : cudaGetErrorString(e));
    }
    e = cudaGraphInstantiate(exec, graph, 0);
    cudaGraphDestroy(graph);
    if (e != cudaSuccess) {
        *exec = NULL;
        return capture_failed(m, cudaGetErrorString(e));
    }
    m->graph[slot].rows = B;
    m->graph[slot].seq = T;
    m->graph[slot].scale = scale;
    m->graph[slot].kind = kind;
    m->graph[slot].used = m->steps + 1;
    return 0;
}

/* ---- the table's functions ---- */

static void be_destroy(sym_gpu_model_t *m) {
    if (!m) return;
    if (m->dev >= 0) cudaSetDevice(m->dev);
    if (m->s) cudaStreamSynchronize(m->s);
    for (int i = 0; i < GRAPHS; i++)
        if (m->graph[i].exec) cudaGraphExecDestroy(m->graph[i].exec);
    if (m->ev_fork) cudaEventDestroy(m->ev_fork);
    if (m->ev_join) cudaEventDestroy(m->ev_join);
    for (int k = 0; k < 2; k++)
        if (m->ev_zfree[k]) cudaEventDestroy(m->ev_zfree[k]);
    if (m->s_dp) cudaStreamDestroy(m->s_dp);
    if (m->ev_tp_fork) cudaEventDestroy(m->ev_tp_fork);
    if (m->ev_tp_join) cudaEventDestroy(m->ev_tp_join);
    if (m->s_tp) cudaStreamDestroy(m->s_tp);
    if (m->s_snap) cudaStreamSynchronize(m->s_snap);
    if (m->ev_snap_from) cudaEventDestroy(m->ev_snap_from);
    if (m->ev_snap) cudaEventDestroy(m->ev_snap);
    if (m->s_snap) cudaStreamDestroy(m->s_snap);
    if (m->blas) symcu_blas_destroy(m->blas);
    for (int k = 0; k < 2; k++)
        if (m->peer_base[k]) cudaIpcCloseMemHandle(m->peer_base[k]);
    if (m->region) cudaFree(m->region);
    if (m->tok_h) cudaFreeHost(m->tok_h);
    if (m->tgt_h) cudaFreeHost(m->tgt_h);
    if (m->out_h) cudaFreeHost(m->out_h);
    if (m->drop_h) cudaFreeHost(m->drop_h);
    free(m->drop_key);
    if (m->s) cudaStreamDestroy(m->s);
    for (int k = 0; m->sl && k < m->nslots; k++) free(m->sl[k].blk);
    free(m->sl);
    free(m->boff);
    free(m->nodecay_h);
    free(m->whole_h);
    free(m->u);
    free(m->bunit);
    if (m->own_gpu_init) shmemx_gpu_finalize();
    free(m);
}

/* The parameter called name: its offset, checked to hold numel floats. */
static int find(const sym_param_t *t, int nt, const char *name, size_t numel, size_t *off) {
    for (int i = 0; i < nt; i++)
        if (!strcmp(t[i].name, name)) {
            if (t[i].numel != numel)
                return fail(SYM_EINVAL, "GPU GPT: parameter %s has %zu elements, expected %zu",
                            name, t[i].numel, numel);
            *off = t[i].offset;
            return SYM_OK;
        }
    return fail(SYM_EINVAL, "GPU GPT: the parameter table has no %s (not a GPT's table?)", name);
}

static int check_config(const sym_model_config_t *c, const sym_gpu_opts_t *o, int max_rows) {
    if (c->kind != SYM_MODEL_GPT) return fail(SYM_EINVAL, "the GPU backend trains GPTs only");
    if (o->precision < SYM_PREC_FP32 || o->precision > SYM_PREC_TF32)
        return fail(SYM_EINVAL, "GPU GPT: precision %d; use bf16, fp16, fp32 or tf32",
                    (int)o->precision);
    if (o->zero < 0 || o->zero > 2)
        return fail(SYM_EINVAL, "GPU GPT: ZeRO stage %d; use 0 (nothing sharded), 1 (the "
                                "optimizer state) or 2 (the gradients too)", o->zero);
    if (o->precision == SYM_PREC_FP16 && o->loss_scale_growth < 1)
        return fail(SYM_EINVAL, "GPU GPT: fp16's loss scale grows after %d good steps; give 1 "
                                "or more (--loss-scale-growth)", o->loss_scale_growth);
    int C = c->n_embd, H = c->n_head;
    if (C % 8 || C > 3072)
        return fail(SYM_EINVAL, "GPU GPT: width C=%d; the kernels need C a multiple of 8 and at "
                                "most 3072", C);
    int hs = C / H;
    if (C % H || (hs != 32 && hs != 64 && hs != 128))
        return fail(SYM_EINVAL, "GPU GPT: head size C/H = %d/%d; the attention kernel takes 32, "
                                "64 or 128", C, H);
    if (c->padded_vocab % 8 || c->vocab > c->padded_vocab)
        return fail(SYM_EINVAL, "GPU GPT: vocabulary %d padded to %d; the padding must be a "
                                "multiple of 8", c->vocab, c->padded_vocab);
    if (max_rows < 1 || (int64_t)max_rows * H > 65535)
        return fail(SYM_EINVAL, "GPU GPT: %d rows x %d heads; the attention grid takes at most "
                                "65535", max_rows, H);
    return SYM_OK;
}

/* The n ranges r (pairs, in offset order) cut to [lo, lo + len) and made
 * relative to lo, in place; returns how many are left. */
static int clip_ranges(uint64_t *r, int n, size_t lo, size_t len) {
    int k = 0;
    for (int i = 0; i < n; i++) {
        size_t a = r[2 * i], b = a + r[2 * i + 1];
        if (a < lo) a = lo;
        if (b > lo + len) b = lo + len;
        if (a >= b) continue;
        r[2 * k] = a - lo;
        r[2 * k + 1] = b - a;
        k++;
    }
    return k;
}

/* (off, len) appended to the n ranges r (pairs, in offset order), merged with
 * the last where they touch. */
static void add_range(uint64_t *r, int *n, size_t off, size_t len) {
    if (*n && r[2 * *n - 2] + r[2 * *n - 1] == off) {
        r[2 * *n - 1] += len;
        return;
    }
    r[2 * *n] = off;
    r[2 * *n + 1] = len;
    (*n)++;
}

/* ZeRO-2: unit [lo, lo + len) appended (block: its stage block index, or -1). */
static void z2_add(sym_gpu_model_t *m, size_t lo, size_t len, int block) {
    size_t n = (size_t)m->npes, r = (size_t)m->zrank;
    z2unit_t *u = &m->u[m->nu];
    u->lo = lo;
    u->len = len;
    u->c = sym_gpu_zero_block(len, n);
    u->mine = r * u->c >= len ? 0 : len - r * u->c < u->c ? len - r * u->c : u->c;
    u->soff = m->S;
    m->S += u->c;
    u->block = block >= 0;
    if (block >= 0) {
        m->bunit[block] = m->nu;
        if (n * u->c > m->zslot) m->zslot = n * u->c;
    } else {
        u->eoff = m->zedge;
        m->zedge += n * u->c;
    }
    if (lo + n * u->c > m->Pp) m->Pp = lo + n * u->c; /* the last member's block reads past */
    m->nu++;
}

/* ZeRO-2: the gaps [a, b) between blocks as edge units, cut at norm_lo. */
static void z2_edges(sym_gpu_model_t *m, size_t a, size_t b) {
    if (a < m->norm_lo && m->norm_lo < b) {
        z2_add(m, a, m->norm_lo - a, -1);
        a = m->norm_lo;
    }
    if (a < b) z2_add(m, a, b - a, -1);
}

/* ZeRO-2 (see the top), from the block offsets and the no-decay and whole
 * ranges over the stage's parameters (nodecay_h, whole_h): the units, gs's
 * packing, and those ranges made the units' (no-decay: per unit, relative to
 * its block) and gs's (whole: relative to nlo). numel: a block's tensors'. */
static int z2_config(sym_gpu_model_t *m, const size_t *numel) {
    int nb = m->nb, cap = 2 * nb + 3;
    m->zrank = shmem_team_my_pe(m->opts.dp_team);
    m->u = (z2unit_t *)calloc((size_t)cap, sizeof *m->u);
    m->bunit = (int *)calloc((size_t)(nb ? nb : 1), sizeof *m->bunit);
    int *order = (int *)malloc(sizeof(int) * (size_t)(nb ? nb : 1));
    if (!m->u || !m->bunit || !order) {
        free(order);
        return fail(SYM_ENOMEM, "out of host memory for the GPU model");
    }
    for (int i = 0; i < nb; i++) { /* the blocks by offset (a stage's chunks may interleave) */
        int j = i;
        for (; j > 0 && m->boff[order[j - 1]][0] > m->boff[i][0]; j--) order[j] = order[j - 1];
        order[j] = i;
    }
    size_t at = 0;
    int bad = 0;
    for (int j = 0; j < nb && !bad; j++) { /* each block's parameters in order, together */
        const size_t *o = m->boff[order[j]];
        size_t end = o[0];
        for (int k = 0; k < NBLOCK; k++) {
            bad |= o[k] != end;
            end += numel[k];
        }
        bad |= o[0] < at;
        z2_edges(m, at, o[0]);
        z2_add(m, o[0], end - o[0], order[j]);
        at = end;
    }
    free(order);
    if (bad || at > m->P)
        return fail(SYM_EINVAL, "GPU GPT: ZeRO-2 needs each block's parameters together, in "
                                "the block's order, in the parameter table");
    z2_edges(m, at, m->P);
    m->nmom = m->S;
    /* the no-decay ranges of each unit's block, one list after another, and the
     * whole ranges in gs's packing; a range splits at most once per unit
     * boundary: n + nu ranges at most */
    int nr = m->nr, nw = m->nw, most = (nr > nw ? nr : nw) + 1;
    uint64_t *dec = (uint64_t *)malloc(sizeof(uint64_t) * 2 * (size_t)(nr + m->nu + 1));
    uint64_t *whole = (uint64_t *)malloc(sizeof(uint64_t) * 2 * (size_t)(nw + m->nu + 1));
    uint64_t *tmp = (uint64_t *)malloc(sizeof(uint64_t) * 2 * (size_t)most);
    if (!dec || !whole || !tmp) {
        free(dec);
        free(whole);
        free(tmp);
        return fail(SYM_ENOMEM, "out of host memory for the GPU model");
    }
    int nd = 0, nwh = 0;
    m->nlo = m->S;
    for (int i = 0; i < m->nu; i++) {
        z2unit_t *u = &m->u[i];
        size_t blo = u->lo + (size_t)m->zrank * u->c;
        memcpy(tmp, m->nodecay_h, sizeof(uint64_t) * 2 * (size_t)nr);
        u->rfirst = nd;
        u->nr = clip_ranges(tmp, nr, blo, u->mine);
        memcpy(dec + 2 * nd, tmp, sizeof(uint64_t) * 2 * (size_t)u->nr);
        nd += u->nr;
        if (u->lo < m->norm_lo) continue; /* the norm counts [norm_lo, P), a unit boundary */
        if (m->nlo == m->S) m->nlo = u->soff;
        memcpy(tmp, m->whole_h, sizeof(uint64_t) * 2 * (size_t)nw);
        int k = clip_ranges(tmp, nw, blo, u->mine);
        for (int j = 0; j < k; j++) {
            whole[2 * (nwh + j)] = tmp[2 * j] + u->soff - m->nlo;
            whole[2 * (nwh + j) + 1] = tmp[2 * j + 1];
        }
        nwh += k;
    }
    free(tmp);
    m->nlen = m->S - m->nlo;
    free(m->nodecay_h);
    free(m->whole_h);
    m->nodecay_h = dec;
    m->whole_h = whole;
    m->nr = nd;
    m->nw = nwh;
    return SYM_OK;
}

static int create_in(sym_gpu_model_t *m, const sym_param_t *table, int ntable,
                     const float *params) {
    int C = m->C;
    size_t uC = (size_t)C, uCl = (size_t)m->Cl;
    int rc;
    if (((m->hold_embed || m->hold_head) &&
         (rc = find(table, ntable, "wte", (size_t)m->nv * uC, &m->off_wte))) ||
        (m->hold_embed && (rc = find(table, ntable, "wpe", (size_t)m->T * uC, &m->off_wpe))) ||
        (m->hold_head && ((rc = find(table, ntable, "ln_f.weight", uC, &m->off_lnfw)) ||
                     (rc = find(table, ntable, "ln_f.bias", uC, &m->off_lnfb)))))
        return rc;
    static const char *const names[NBLOCK] = {
        "ln_1.weight", "ln_1.bias", "attn.c_attn.weight", "attn.c_attn.bias",
        "attn.c_proj.weight", "attn.c_proj.bias", "ln_2.weight", "ln_2.bias",
        "mlp.c_fc.weight", "mlp.c_fc.bias", "mlp.c_proj.weight", "mlp.c_proj.bias"};
    const size_t numel[NBLOCK] = {uC, uC, 3 * uCl * uC, 3 * uCl, uC * uCl, uC,
                                  uC, uC, 4 * uCl * uC, 4 * uCl, 4 * uCl * uC, uC};
    if (!(m->sl = (gslot_t *)calloc((size_t)m->nslots, sizeof *m->sl)))
        return fail(SYM_ENOMEM, "out of host memory for the GPU model");
    for (int k = 0; k < m->nslots; k++)
        if (!(m->sl[k].blk = (gblock_t *)calloc((size_t)(m->nbmax ? m->nbmax : 1),
                                                sizeof(gblock_t))))
            return fail(SYM_ENOMEM, "out of host memory for the GPU model");
    if (!(m->boff = (size_t(*)[NBLOCK])calloc((size_t)(m->nb ? m->nb : 1), sizeof *m->boff)))
        return fail(SYM_ENOMEM, "out of host memory for the GPU model");
    for (int c = 0; c < m->nchunks; c++)
        for (int l = 0; l < m->ch_L[c]; l++)
            for (int k = 0; k < NBLOCK; k++) {
                char name[64]; /* the whole model's names: each chunk's blocks from its l0 */
                snprintf(name, sizeof name, "h.%d.%s", m->ch_l0[c] + l, names[k]);
                if ((rc = find(table, ntable, name, numel[k], &m->boff[m->ch_at[c] + l][k])))
                    return rc;
            }
    use_chunk(m, 0);
    use_slot(m, 0);
    /* the last of several stages: its wte copy (first in its table) is the
     * first stage's in the norm */
    m->norm_lo = m->pp > 1 && m->hold_head ? m->off_wte + (size_t)m->nv * uC : 0;
    if (m->norm_lo && m->off_wte != 0)
        return fail(SYM_EINVAL, "GPU GPT: the last stage's table does not begin with wte");
    /* AdamW's no-decay ranges; with tp the whole (unsplit) tensors', which the
     * norm counts once */
    size_t slots = 2 * (size_t)(ntable ? ntable : 1);
    m->nodecay_h = (uint64_t *)malloc(sizeof(uint64_t) * slots);
    m->whole_h = (uint64_t *)malloc(sizeof(uint64_t) * slots);
    if (!m->nodecay_h || !m->whole_h) return fail(SYM_ENOMEM, "out of host memory for the GPU model");
    size_t prev_end = 0;
    for (int i = 0; i < ntable; i++) {
        if (i && table[i].offset < prev_end)
            return fail(SYM_EINVAL, "GPU GPT: the parameter table is not in layout order");
        prev_end = table[i].offset + table[i].numel;
        if (!table[i].decay) add_range(m->nodecay_h, &m->nr, table[i].offset, table[i].numel);
        if (m->tp > 1 && table[i].tp_dim < 0)
            add_range(m->whole_h, &m->nw, table[i].offset, table[i].numel);
    }
    if (prev_end != m->P)
        return fail(SYM_EINVAL, "GPU GPT: the table covers %zu floats, the parameters are %zu",
                    prev_end, m->P);
    /* AdamW sees the block this PE updates (all of it without ZeRO), the norm
     * that block's part of [norm_lo, P) */
    if (m->zero == 2) {
        if ((rc = z2_config(m, numel))) return rc;
    } else {
        m->nr = clip_ranges(m->nodecay_h, m->nr, m->zlo, m->zlen);
        size_t nhi = m->zlo + m->zlen < m->P ? m->zlo + m->zlen : m->P;
        m->nlo = m->zlo > m->norm_lo ? m->zlo : m->norm_lo;
        m->nlen = nhi > m->nlo ? nhi - m->nlo : 0;
        m->nw = clip_ranges(m->whole_h, m->nw, m->nlo, m->nlen);
    }

    CK(cudaSetDevice(m->dev));
    CK(cudaStreamCreateWithFlags(&m->s, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&m->s_dp, cudaStreamNonBlocking));
    CK(cudaEventCreateWithFlags(&m->ev_fork, cudaEventDisableTiming));
    CK(cudaEventCreateWithFlags(&m->ev_join, cudaEventDisableTiming));
    for (int k = 0; m->zero == 2 && k < 2; k++)
        CK(cudaEventCreateWithFlags(&m->ev_zfree[k], cudaEventDisableTiming));
    /* buckets need the blocks contiguous, in order, between wpe and ln_f (gpt.c's
     * layout); a stage's gradients are averaged once, after its backwards */
    m->bucket = m->hold_embed && m->hold_head ? m->opts.bucket_bytes / sizeof(float) : 0;
    size_t at = m->off_wpe + (size_t)m->T * uC;
    for (int l = 0; m->bucket && l < m->nb; l++)
        for (int k = 0; k < NBLOCK; k++) {
            if (m->boff[l][k] != at) m->bucket = 0; /* then one average after backward */
            at += numel[k];
        }
    if (m->bucket && (at != m->off_lnfw || m->off_wte >= m->off_wpe)) m->bucket = 0;
    if (m->tp > 1) m->bucket = 0; /* one GPU collective at a time: after backward's tp sums */
    if (m->zero) m->bucket = 0;   /* one reduce-scatter after backward, in AdamW's blocks */
    if (m->chunks) {              /* --tp-overlap: the side stream of the chunks' sums */
        CK(cudaStreamCreateWithFlags(&m->s_tp, cudaStreamNonBlocking));
        CK(cudaEventCreateWithFlags(&m->ev_tp_fork, cudaEventDisableTiming));
        CK(cudaEventCreateWithFlags(&m->ev_tp_join, cudaEventDisableTiming));
    }
    if (m->sp) { /* each LayerNorm's (weight, bias): 2C floats at its weight's offset */
        m->nln = 2 * m->nb + (m->hold_head ? 1 : 0); /* every chunk's */
        int apart = m->hold_head && m->off_lnfb != m->off_lnfw + uC;
        for (int l = 0; l < m->nb; l++)
            apart |= m->boff[l][LN1B] != m->boff[l][LN1W] + uC ||
                     m->boff[l][LN2B] != m->boff[l][LN2W] + uC;
        if (apart)
            return fail(SYM_EINVAL, "GPU GPT: sequence parallelism needs each LayerNorm's bias "
                                    "right after its weight in the parameter table");
    }
    OP(symcu_blas_create(&m->blas, 4 * C));
    symcu_blas_use_tf32(m->blas, m->opts.precision == SYM_PREC_TF32);
    carver_t cv = {NULL, 0};
    carve(m, &cv, 0, 0);
    size_t keep_all = cv.used;
    cv.used = 0;
    carve(m, &cv, m->opts.recompute_gelu, m->opts.recompute_ln);
    m->region_bytes = cv.used;
    m->recompute_saved = keep_all - cv.used;
    cudaError_t e = cudaMalloc((void **)&m->region, m->region_bytes);
    if (e != cudaSuccess) {
        cudaGetLastError();
        size_t fr = 0, tot = 0;
        cudaMemGetInfo(&fr, &tot);
        m->region = NULL;
        return fail(SYM_ENOMEM, "GPU %d: the model needs %.2f GiB of GPU memory and %.2f GiB "
                                "are free (%s); lower --batch (or --seq)",
                    m->dev, m->region_bytes / 1073741824.0, fr / 1073741824.0,
                    cudaGetErrorString(e));
    }
    cv.base = m->region;
    cv.used = 0;
    carve(m, &cv, m->opts.recompute_gelu, m->opts.recompute_ln);
    use_chunk(m, 0);
    use_slot(m, 0);
    if (m->sp) { /* the shards' padding rows (never read) start as zeros, not stale bytes */
        CK(cudaMemsetAsync(m->region, 0, m->region_bytes, m->s));
        uint64_t off[2 * SYM_GPT_MAX_LAYERS + 1];
        int k = 0;
        for (int l = 0; l < m->nb; l++) {
            off[k++] = m->boff[l][LN1W];
            off[k++] = m->boff[l][LN2W];
        }
        if (m->hold_head) off[k++] = m->off_lnfw;
        CK(cudaMemcpyAsync(m->lnoff, off, sizeof(uint64_t) * (size_t)k, cudaMemcpyHostToDevice,
                           m->s));
        CK(cudaStreamSynchronize(m->s)); /* off is on this stack */
    }
    size_t N = (size_t)m->Bmax * m->T;
    CK(cudaMallocHost((void **)&m->tok_h, N * sizeof(int32_t)));
    CK(cudaMallocHost((void **)&m->tgt_h, N * sizeof(int32_t)));
    CK(cudaMallocHost((void **)&m->out_h, sizeof *m->out_h));
    if (m->nsites)
        CK(cudaMallocHost((void **)&m->drop_h, (m->nsites + 1) * sizeof(uint64_t)));
    CK(cudaMemcpyAsync(m->w, params, m->P * sizeof(float), cudaMemcpyHostToDevice, m->s));
    if (m->Pp > m->P) /* ZeRO-1's padding: zero, the last block's all-gather copies it */
        CK(cudaMemsetAsync(m->w + m->P, 0, (m->Pp - m->P) * sizeof(float), m->s));
    if (m->zero == 2) {
        CK(cudaMemsetAsync(m->gs, 0, m->S * sizeof(float), m->s));
        for (int k = 0; k < 2; k++)
            CK(cudaMemsetAsync(m->z2slot[k], 0, m->zslot * sizeof(float), m->s));
        CK(cudaMemsetAsync(m->edge, 0, m->zedge * sizeof(float), m->s));
    } else {
        CK(cudaMemsetAsync(m->g, 0, m->Pp * sizeof(float), m->s));
    }
    CK(cudaMemsetAsync(m->m, 0, m->nmom * sizeof(float), m->s));
    CK(cudaMemsetAsync(m->v, 0, m->nmom * sizeof(float), m->s));
    if (m->nr)
        CK(cudaMemcpyAsync(m->nodecay, m->nodecay_h, 2 * (size_t)m->nr * sizeof(uint64_t),
                           cudaMemcpyHostToDevice, m->s));
    if (m->nw)
        CK(cudaMemcpyAsync(m->whole, m->whole_h, 2 * (size_t)m->nw * sizeof(uint64_t),
                           cudaMemcpyHostToDevice, m->s));
    if (m->ls) {
        symcu_loss_scale_t ls0 = {};
        ls0.scale = SYMCU_LOSS_SCALE_INIT;
        ls0.growth = (uint32_t)m->opts.loss_scale_growth;
        CK(cudaMemcpyAsync(m->ls, &ls0, sizeof ls0, cudaMemcpyHostToDevice, m->s));
    }
    if ((rc = refresh_copy(m))) return rc;
    CK(cudaStreamSynchronize(m->s));

    cudaDeviceProp p;
    CK(cudaGetDeviceProperties(&p, m->dev));
    snprintf(m->desc, sizeof m->desc, "%.200s (%d SMs, %.0f GiB)", p.name, p.multiProcessorCount,
             p.totalGlobalMem / 1073741824.0);
    return SYM_OK;
}

/* Tensor parallelism from opts: the team, this PE's share of the width, the
 * heads and the vocabulary (m->C, NH, V, Vp set). */
static int tp_config(sym_gpu_model_t *m, const sym_gpu_opts_t *o) {
    int t = o->tp_team == SHMEM_TEAM_INVALID ? 1 : shmem_team_n_pes(o->tp_team);
    m->tp = t > 1 ? t : 1;
    m->tp_rank = m->tp > 1 ? shmem_team_my_pe(o->tp_team) : 0;
    m->Cl = m->C / m->tp;
    m->NHl = m->NH / m->tp;
    m->v0 = m->tp > 1 ? o->vocab_lo : 0;
    m->nv = m->tp > 1 ? o->vocab_len : m->Vp;
    m->ld = m->tp > 1 ? (m->nv + 7) / 8 * 8 : m->Vp;
    if (t < 1 || m->tp_rank < 0)
        return fail(SYM_EINVAL, "PE %d is not a member of the tensor-parallel team it was given",
                    shmem_my_pe());
    /* gpt.c's choices: SP splits a tp team's LayerNorm regions; the chunked
     * overlap is plain tp's (with SP there are no all-reduces to overlap) */
    m->sp = m->tp > 1 && m->cfg.seq_parallel;
    m->chunks = m->tp > 1 && !m->sp && m->cfg.tp_chunks > 1
                    ? (m->cfg.tp_chunks < 64 ? m->cfg.tp_chunks : 64)
                    : 0;
    if (m->tp == 1) return SYM_OK;
    if (m->NH % m->tp || m->C % m->tp || (m->Cl / m->NHl) * m->NHl != m->Cl)
        return fail(SYM_EINVAL, "GPU GPT: tp=%d must divide the heads (%d) and the width (%d)",
                    m->tp, m->NH, m->C);
    if (m->Cl % 8)
        return fail(SYM_EINVAL, "GPU GPT: tp=%d leaves each PE %d of the width C=%d; the kernels "
                                "need a multiple of 8: choose a smaller tp", m->tp, m->Cl, m->C);
    if (m->nv < 1 || m->v0 < 0 || m->v0 + m->nv > m->V)
        return fail(SYM_EINVAL, "GPU GPT: vocabulary rows [%d, +%d) of %d are not this PE's "
                                "part (sym_shard_range of the vocabulary over tp)",
                    m->v0, m->nv, m->V);
    return SYM_OK;
}

/* Pipeline parallelism from opts: the stage's chunks and their blocks, its
 * ends and teams (m->L the model's blocks, set); chunk 0 in use. */
static int stage_config(sym_gpu_model_t *m, const sym_gpu_opts_t *o) {
    m->Lt = m->L;
    m->hold_embed = m->hold_head = 1;
    m->nchunks = 1;
    m->ch_l0[0] = 0;
    m->ch_L[0] = m->nb = m->nbmax = m->Lt;
    m->ch_at[0] = 0;
    m->nslots = o->slots > 1 ? o->slots : 1;
    m->tied = SHMEM_TEAM_INVALID;
    m->pp = 1;
    if (o->stage_chunks > 0) {
        if (o->stage_chunks > SYM_GPT_MAX_CHUNKS)
            return fail(SYM_EINVAL, "GPU GPT: a stage of %d chunks; at most %d",
                        o->stage_chunks, SYM_GPT_MAX_CHUNKS);
        m->nchunks = o->stage_chunks;
        m->nb = m->nbmax = 0;
        for (int k = 0, end = 0; k < m->nchunks; k++) {
            int f = o->stage_first[k], n = o->stage_layers[k];
            if (n < 1 || f < end || f + n > m->Lt)
                return fail(SYM_EINVAL, "GPU GPT: a stage's chunk %d of blocks [%d, %d) of a "
                                        "model of %d (each chunk after the one before)",
                            k, f, f + n, m->Lt);
            end = f + n;
            m->ch_l0[k] = f;
            m->ch_L[k] = n;
            m->ch_at[k] = m->nb;
            m->nb += n;
            if (n > m->nbmax) m->nbmax = n;
        }
        m->hold_embed = o->stage_embed;
        m->hold_head = o->stage_head;
        m->pp = o->pp_team == SHMEM_TEAM_INVALID ? 1 : shmem_team_n_pes(o->pp_team);
        if (m->pp < 1) m->pp = 1;
        m->tied = o->tied_team;
    }
    use_chunk(m, 0);
    return SYM_OK;
}

/* ZeRO-1 from opts (m->P, npes set): this PE's block of the parameters, the
 * sizes of w, g and the moments (see the top). Without it (or a dp team of
 * one PE) the block is all of them. */
static void zero_config(sym_gpu_model_t *m) {
    size_t n = (size_t)m->npes;
    m->zero = n > 1 ? m->opts.zero : 0;
    m->zlo = 0;
    m->zlen = m->zblock = m->Pp = m->nmom = m->P;
    m->zcur = -1;
    if (m->zero != 1) return; /* ZeRO-2's units: z2_config, once the offsets are known */
    size_t r = (size_t)shmem_team_my_pe(m->opts.dp_team);
    m->zblock = sym_gpu_zero_block(m->P, n);
    m->Pp = n * m->zblock;
    m->nmom = m->zblock;
    m->zlo = r * m->zblock;
    /* the last block ends at P; past it (a tiny model on many PEs) a block is empty */
    m->zlen = m->zlo >= m->P ? 0 : m->P - m->zlo < m->zblock ? m->P - m->zlo : m->zblock;
}

static int be_create(const sym_model_config_t *cfg, int max_rows, const sym_param_t *table,
                     int ntable, const float *params, size_t P, const sym_gpu_opts_t *opts,
                     sym_gpu_model_t **out) {
    *out = NULL;
    /* the GPU runtime first, collectively over the world (shmemx_gpu_init is,
     * whatever the data-parallel team), so that a PE refusing the config
     * below still leaves the others in step (they all refuse it alike) */
    int own = 0;
    if (shmem_n_pes() > 1 && shmemx_gpu_device() < 0) {
        int rc = shmemx_gpu_init();
        if (rc)
            return fail(SYM_EIO, "PE %d: shmemx_gpu_init failed: %s (several PEs on one GPU "
                                 "need SYMTRAIN_GPU_SHARE=1)",
                        shmem_my_pe(), shmemx_gpu_strerror(rc));
        own = 1;
    }
    int npes = shmem_team_n_pes(opts->dp_team);
    if (npes < 1) /* the caller's mistake, on this PE: the job ends with this message */
        return fail(SYM_EINVAL, "PE %d is not a member of the data-parallel team it was given",
                    shmem_my_pe());
    sym_gpu_model_t *m = (sym_gpu_model_t *)calloc(1, sizeof *m);
    if (!m) return fail(SYM_ENOMEM, "out of host memory for the GPU model");
    m->own_gpu_init = own;
    m->dev = -1;
    int rc = check_config(cfg, opts, max_rows);
    if (rc) {
        be_destroy(m);
        return rc;
    }
    m->cfg = *cfg;
    m->opts = *opts;
    m->L = cfg->n_layer;
    m->C = cfg->n_embd;
    m->NH = cfg->n_head;
    m->V = cfg->vocab;
    m->Vp = cfg->padded_vocab;
    m->T = cfg->max_seq;
    m->Bmax = max_rows;
    m->P = P;
    m->npes = npes;
    m->dt = opts->precision == SYM_PREC_FP32 || opts->precision == SYM_PREC_TF32 ? SYMCU_F32
            : opts->precision == SYM_PREC_FP16                                 ? SYMCU_F16
                                                                               : SYMCU_BF16;
    m->esz = m->dt == SYMCU_F32 ? 4 : 2;
    m->coll_dt = m->dt == SYMCU_F32 ? SHMEMX_FLOAT32
                 : m->dt == SYMCU_F16 ? SHMEMX_FLOAT16
                                      : SHMEMX_BFLOAT16;
    if ((rc = tp_config(m, opts)) || (rc = stage_config(m, opts))) {
        be_destroy(m);
        return rc;
    }
    if (cfg->dropout > 0.0f) { /* gpt.c's keys of the whole model's sites */
        m->nsites = 1 + 3 * m->Lt;
        if (!(m->drop_key = (uint64_t *)malloc(m->nsites * sizeof(uint64_t)))) {
            be_destroy(m);
            return fail(SYM_ENOMEM, "out of host memory for the GPU model");
        }
        for (int i = 0; i < m->nsites; i++)
            m->drop_key[i] = sym_rng_key(cfg->seed, SYM_RNG_DROPOUT, (uint64_t)i);
    }
    zero_config(m);
    /* the test hook: +inf into a gradient at this process's Nth step (fp16) */
    const char *inj = getenv("SYMTRAIN_TEST_FP16_OVERFLOW");
    if (inj && *inj) {
        char *end;
        unsigned long long k = strtoull(inj, &end, 10);
        if (*end || !k || m->dt != SYMCU_F16) {
            be_destroy(m);
            return fail(SYM_EINVAL, "SYMTRAIN_TEST_FP16_OVERFLOW='%s': give a step number from 1, "
                                    "with --precision fp16", inj);
        }
        m->inject_at = k;
    }
    int d = shmemx_gpu_device();
    m->dev = d >= 0 ? d : 0;
    if ((rc = create_in(m, table, ntable, params))) {
        be_destroy(m);
        return rc;
    }
    if (cudaDeviceGetPCIBusId(m->pci, (int)sizeof m->pci, m->dev) != cudaSuccess) {
        cudaGetLastError();
        m->pci[0] = '\0'; /* the balancer then reads no NVML figures */
    }
    *out = m;
    return SYM_OK;
}

/* Validate a batch and stage it in pinned memory (a stage's tokens or
 * targets may be NULL: the first stage reads no targets, the last no tokens). */
static int stage(sym_gpu_model_t *m, const int32_t *tok, const int32_t *tgt, int rows, int seq) {
    if (rows < 1 || rows > m->Bmax || seq < 1 || seq > m->T)
        return fail(SYM_EINVAL, "GPU GPT: a batch of %d x %d tokens; the model takes at most "
                                "%d x %d", rows, seq, m->Bmax, m->T);
    size_t N = (size_t)rows * seq;
    for (size_t i = 0; i < N; i++)
        if ((tok && (tok[i] < 0 || tok[i] >= m->V)) || (tgt && (tgt[i] < 0 || tgt[i] >= m->V)))
            return fail(SYM_EINVAL, "token %d / target %d at position %zu is not in the "
                                    "model's vocabulary [0, %d)", tok ? (int)tok[i] : 0,
                        tgt ? (int)tgt[i] : 0, i, m->V);
    if (tok) memcpy(m->tok_h, tok, N * sizeof(int32_t));
    if (tgt) memcpy(m->tgt_h, tgt, N * sizeof(int32_t));
    return SYM_OK;
}

/* The dropout sites' keys of `step` and the first global row into their
 * pinned staging (the step's kernels copy it in). */
static void stage_dropout(sym_gpu_model_t *m, uint64_t step, int64_t row0) {
    for (int i = 0; i < m->nsites; i++) /* the previous step's copy is done: it synchronised */
        m->drop_h[i] = sym_rng_mix(m->drop_key[i] ^ sym_rng_mix(step + SYMCU_DROPOUT_STEP_MIX));
    if (m->nsites) memcpy(&m->drop_h[m->nsites], &row0, sizeof row0);
}

/* Tokens to gradients (kind: BODY_*), as a replayed graph where it can;
 * step and row0 place the dropout masks. */
static int run_body(sym_gpu_model_t *m, const int32_t *tok, const int32_t *tgt, int rows, int seq,
                    uint64_t step, int64_t row0, float grad_scale, int kind) {
    int rc = stage(m, tok, tgt, rows, seq);
    if (rc) return rc;
    stage_dropout(m, step, row0);
    /* the first step warms up (cuBLASLt's choices, lazy module loading); later ones replay */
    cudaGraphExec_t exec = NULL;
    if (m->opts.use_graph && m->warm && !m->graph_failed &&
        !(exec = graph_for(m, rows, seq, grad_scale, kind)))
        m->graph_failed = 1;
    if (exec)
        CK(cudaGraphLaunch(exec, m->s));
    else if ((rc = step_body(m, rows, seq, grad_scale, kind)))
        return rc;
    m->warm = 1;
    return SYM_OK;
}

/* A PE with none of the last micro-batch's rows: its gradients (zero, or what
 * accumulate() left) still go into the team's average. */
static int no_rows(sym_gpu_model_t *m) {
    int rc;
    if (m->zero == 2) { /* every block's average, as the team's backwards run them */
        if ((rc = z2_start(m, m->acc_pending ? BODY_KEEP : 0))) return rc;
        for (int bi = m->nb - 1; bi >= 0; bi--)
            if ((rc = z2_begin(m, bi)) || (rc = z2_end(m, bi))) return rc;
        if ((rc = z2_join(m))) return rc;
    } else if (!m->acc_pending) {
        CK(cudaMemsetAsync(m->g, 0, m->Pp * sizeof(float), m->s));
    }
    rc = m->acc_pending ? sp_ln_sum(m) : SYM_OK; /* the micro-batches' LayerNorm parts */
    if (rc) return rc;
    CK(cudaMemsetAsync(m->sums, 0, 2 * sizeof(double), m->s));
    stamp_kernel<<<1, 1, 0, m->s>>>(m->stamp);
    stamp_kernel<<<1, 1, 0, m->s>>>(m->stamp + 1);
    CK(cudaGetLastError());
    return dp_average_all(m);
}

static int be_accumulate(sym_gpu_model_t *m, const int32_t *tok, const int32_t *tgt, int rows,
                         int seq, uint64_t step, int64_t row0, float grad_scale,
                         double *loss_sum) {
    *loss_sum = 0;
    CK(cudaSetDevice(m->dev));
    int rc = run_body(m, tok, tgt, rows, seq, step, row0, grad_scale,
                      m->acc_pending ? BODY_KEEP : 0);
    if (rc) return rc;
    m->acc_pending = 1;
    CK(cudaMemcpyAsync(m->out_h->sums, m->sums, sizeof(double), cudaMemcpyDeviceToHost, m->s));
    CK(cudaStreamSynchronize(m->s));
    *loss_sum = m->out_h->sums[0];
    return SYM_OK;
}

static int update(sym_gpu_model_t *m, float lr, float clip, sym_gpu_step_t *out);

static int be_train_step(sym_gpu_model_t *m, const int32_t *tok, const int32_t *tgt, int rows,
                         int seq, uint64_t step, int64_t row0, float lr, float grad_scale,
                         float clip, sym_gpu_step_t *out) {
    memset(out, 0, sizeof *out);
    CK(cudaSetDevice(m->dev));
    int kind = BODY_AVERAGE | (m->acc_pending ? BODY_KEEP : 0);
    int rc = rows == 0 ? no_rows(m)
                       : run_body(m, tok, tgt, rows, seq, step, row0, grad_scale, kind);
    m->acc_pending = 0;
    if (rc) return rc;
    rc = update(m, lr, clip, out);
    if (!rc) out->compute_s = (double)(m->out_h->stamp[1] - m->out_h->stamp[0]) * 1e-9;
    return rc;
}

/* ZeRO-2: every unit whole from its members' blocks of x (packed: x is laid
 * out as gs, else as the parameters), into dst (dst + lo for each unit) by a
 * copy of kind; each unit gathered through its own array (a block's: slot
 * 0). Collective over the dp team, on the step's stream. */
static int z2_gather(sym_gpu_model_t *m, const float *x, int packed, float *dst,
                     cudaMemcpyKind kind) {
    for (int i = 0; i < m->nu; i++) {
        const z2unit_t *u = &m->u[i];
        float *via = u->store ? u->store : m->z2slot[0];
        const float *src = packed ? x + u->soff : x + u->lo + (size_t)m->zrank * u->c;
        int e = shmemx_gpu_allgather_team(m->opts.dp_team, via, src, u->c, SHMEMX_FLOAT32, m->s);
        if (e)
            return fail(SYM_EIO, "PE %d: ZeRO-2's all-gather of parameters [%zu, %zu) over the "
                                 "dp team failed: %s",
                        shmem_my_pe(), u->lo, u->lo + u->len, shmemx_gpu_strerror(e));
        CK(cudaMemcpyAsync(dst + u->lo, via, u->len * sizeof(float), kind, m->s));
    }
    return SYM_OK;
}

/* After the averaged gradients: the norm, clipping, AdamW, and the step's
 * one synchronisation; *out but compute_s. */
static int update(sym_gpu_model_t *m, float lr, float clip, sym_gpu_step_t *out) {
    int rc;
    if (++m->calls == m->inject_at) { /* after the average: every PE injects alike */
        inject_inf_kernel<<<1, 1, 0, m->s>>>(m->zero == 2 ? m->gs : m->g);
        CK(cudaGetLastError());
    }
    /* an inf or NaN on any PE is one in the average on every PE: all skip alike */
    if (m->zero || m->tp > 1 || m->pp > 1) {
        /* the squares of this PE's part in two sums (split, whole tensors);
         * ZeRO-1: the blocks' summed over the dp team, then over tp with the
         * whole tensors' of tp rank 0 alone (see the top); else the split
         * ones' over tp, the whole ones' once; then the stages' */
        OP(symcu_grad_sumsq(m->sq, m->norm_scratch, (m->zero == 2 ? m->gs : m->g) + m->nlo,
                            m->nlen, m->whole, m->nw, m->s));
        if (m->zero && (rc = dp_sum(m, m->sq, 2))) return rc;
        if (m->zero && m->tp > 1 && m->tp_rank)
            CK(cudaMemsetAsync(m->sq + 1, 0, sizeof(float), m->s));
        if (m->tp > 1 && (rc = tp_reduce(m, m->sq, m->zero ? 2 : 1, SHMEMX_FLOAT32, SHMEMX_SUM)))
            return rc;
        if (m->pp > 1) {
            int e = shmemx_gpu_allreduce_team(m->opts.pp_team, m->sq, m->sq, 2, SHMEMX_FLOAT32,
                                              SHMEMX_SUM, m->s);
            if (e)
                return fail(SYM_EIO, "PE %d: the pipeline's sum of the norm's squares failed: %s",
                            shmem_my_pe(), shmemx_gpu_strerror(e));
        }
        OP(symcu_grad_norm_from_sumsq(m->norm, m->clip_scale, m->sq, clip, m->ls, m->s));
    } else {
        OP(symcu_grad_norm(m->norm, m->clip_scale, m->norm_scratch, m->g, m->P, clip, m->ls, m->s));
    }
    symcu_adamw_t hp;
    hp.lr = lr;
    hp.beta1 = m->opts.optim.beta1;
    hp.beta2 = m->opts.optim.beta2;
    hp.eps = m->opts.optim.eps;
    hp.weight_decay = m->opts.optim.weight_decay;
    hp.t = m->steps + 1;
    if (m->snap_pending) { /* a snapshot is still copying the weights and moments */
        CK(cudaStreamWaitEvent(m->s, m->ev_snap, 0));
        m->snap_pending = 0;
    }
    if (m->zero == 2) { /* each unit's block, then each unit all-gathered */
        for (int i = 0; i < m->nu; i++) {
            const z2unit_t *u = &m->u[i];
            if (u->mine)
                OP(symcu_adamw(m->w + u->lo + (size_t)m->zrank * u->c, m->dt, NULL, m->m + u->soff,
                               m->v + u->soff, m->gs + u->soff, u->mine, m->clip_scale,
                               m->ls ? &m->ls->skipped : NULL, m->nodecay + 2 * u->rfirst, u->nr,
                               &hp, m->s));
        }
        if ((rc = z2_gather(m, m->w, 0, m->w, cudaMemcpyDeviceToDevice)) ||
            (rc = refresh_copy(m)))
            return rc;
    } else {
        /* this PE's block (all of it without ZeRO-1) */
        OP(symcu_adamw(m->w + m->zlo, m->dt, m->dt == SYMCU_F32 || m->zero ? NULL : m->wc, m->m,
                       m->v, m->g + m->zlo, m->zlen, m->clip_scale,
                       m->ls ? &m->ls->skipped : NULL, m->nodecay, m->nr, &hp, m->s));
    }
    if (m->zero == 1) { /* every block from its owner, in place; then the compute copy */
        int e = shmemx_gpu_allgather_team(m->opts.dp_team, m->w, m->w + m->zlo, m->zblock,
                                          SHMEMX_FLOAT32, m->s);
        if (e)
            return fail(SYM_EIO, "PE %d: ZeRO-1's weight all-gather (shmemx_gpu_allgather_team "
                                 "of %zu floats from each PE of the dp team) failed: %s",
                        shmem_my_pe(), m->zblock, shmemx_gpu_strerror(e));
        if ((rc = refresh_copy(m))) return rc;
    }
    CK(cudaMemcpyAsync(m->out_h->sums, m->sums, sizeof(double), cudaMemcpyDeviceToHost, m->s));
    CK(cudaMemcpyAsync(&m->out_h->norm, m->norm, sizeof(float), cudaMemcpyDeviceToHost, m->s));
    CK(cudaMemcpyAsync(m->out_h->stamp, m->stamp, 2 * sizeof(uint64_t), cudaMemcpyDeviceToHost,
                       m->s));
    if (m->ls)
        CK(cudaMemcpyAsync(&m->out_h->ls, m->ls, sizeof *m->ls, cudaMemcpyDeviceToHost, m->s));
    CK(cudaStreamSynchronize(m->s));
    /* the one synchronisation: a skipped update is no optimizer step (AdamW's t) */
    out->skipped = m->ls && m->out_h->ls.skipped;
    if (!out->skipped) m->steps++;
    out->loss_scale = m->ls ? m->out_h->ls.scale : 1.0f;
    out->loss_sum = m->out_h->sums[0];
    out->grad_norm = m->out_h->norm;
    return SYM_OK;
}

static int be_eval(sym_gpu_model_t *m, const int32_t *tok, const int32_t *tgt, int rows, int seq,
                   double *loss_sum, int64_t *correct) {
    CK(cudaSetDevice(m->dev));
    int rc = stage(m, tok, tgt, rows, seq);
    if (rc) return rc;
    size_t N = (size_t)rows * seq;
    if ((rc = batch_in(m, N, 0)) || (rc = forward(m, rows, seq, 0)) ||
        (rc = head_loss(m, (int)N, 0, 1.0f)))
        return rc;
    CK(cudaMemcpyAsync(m->out_h->sums, m->sums, 2 * sizeof(double), cudaMemcpyDeviceToHost,
                       m->s));
    CK(cudaStreamSynchronize(m->s));
    *loss_sum = m->out_h->sums[0];
    *correct = (int64_t)m->out_h->sums[1];
    return SYM_OK;
}

/* ---- a pipeline stage (core/device.h's stage_* calls) ---- */

/* The output of the activation set in use (a stage without the head). */
static const void *stage_out(const sym_gpu_model_t *m) {
    return m->L ? m->blk[m->L - 1].res3 : m->encoded;
}

/* The elements a stage's edge passes for a micro-batch of rows x seq (its
 * input or output, or their gradients): all N rows of C, or with SP this
 * PE's shard's n rows, which the neighbouring stage's PE of the same tp rank
 * holds too (parallel/pipeline.c counts them alike for the host way). */
static size_t edge_elems(const sym_gpu_model_t *m, int rows, int seq) {
    return (size_t)shard_of(m, rows * seq).n * (size_t)m->C;
}

static int check_slot(const sym_gpu_model_t *m, int slot) {
    if (slot < 0 || slot >= m->nslots)
        return fail(SYM_EINVAL, "GPU GPT: activation set %d of %d", slot, m->nslots);
    return SYM_OK;
}

static int check_chunk(const sym_gpu_model_t *m, int chunk) {
    if (chunk < 0 || chunk >= m->nchunks)
        return fail(SYM_EINVAL, "GPU GPT: chunk %d of a stage of %d", chunk, m->nchunks);
    return SYM_OK;
}

/* Where slot `box` of the forward (fwd) or backward inbox is in a stage's
 * inboxes (bytes; every stage lays them out alike), or -1 when n elements
 * do not fit a slot or there is no such slot. */
static ptrdiff_t inbox_at(const sym_gpu_model_t *m, int fwd, int box, size_t n) {
    if (box < 0 || box >= m->opts.inbox_slots || n > m->opts.inbox_elems) return -1;
    size_t slot = (size_t)(fwd ? 0 : m->opts.inbox_slots) + (size_t)box;
    return (ptrdiff_t)(slot * m->opts.inbox_elems * m->esz);
}

/* A stage's input: n elements from the host's fp32 x, or (x NULL) from inbox
 * slot `box`, into dst. */
static int stage_in(sym_gpu_model_t *m, void *dst, const float *x, int fwd, int box, size_t n) {
    if (x) return from_host(m, dst, x, n);
    ptrdiff_t at = m->box ? inbox_at(m, fwd, box, n) : -1;
    if (at < 0)
        return fail(SYM_EINVAL, "GPU GPT: a stage's input from inbox slot %d (%zu elements), "
                                "which this GPU does not have", box, n);
    CK(cudaMemcpyAsync(dst, (char *)m->box + at, n * m->esz, cudaMemcpyDeviceToDevice, m->s));
    return SYM_OK;
}

static int be_stage_forward(sym_gpu_model_t *m, int slot, int chunk, const int32_t *tok,
                            const int32_t *tgt, const float *x, int box, int rows, int seq,
                            uint64_t step, int64_t row0, int train, float grad_scale, float *y,
                            double *loss_sum, int64_t *correct) {
    *loss_sum = 0;
    if (correct) *correct = 0;
    CK(cudaSetDevice(m->dev));
    int rc = check_slot(m, slot);
    if (!rc) rc = check_chunk(m, chunk);
    if (rc) return rc;
    use_chunk(m, chunk); /* its blocks; embed and head: the model's first and last chunk */
    if ((rc = stage(m, m->embed ? tok : NULL, m->head ? tgt : NULL, rows, seq))) return rc;
    if ((!m->embed && !x && box < 0) || (!m->head && !y && !m->peer_box[1]))
        return fail(SYM_EINVAL, "GPU GPT: a stage's forward without its %s",
                    !m->embed && !x && box < 0 ? "input" : "output's way out");
    use_slot(m, slot);
    m->sl[slot].rows = rows;
    m->sl[slot].seq = seq;
    m->sl[slot].chunk = chunk;
    size_t N = (size_t)rows * seq, edge = edge_elems(m, rows, seq);
    if (train) stage_dropout(m, step, row0);
    if ((rc = batch_in(m, N, train)) ||
        (!m->embed && (rc = stage_in(m, m->encoded, x, 1, box, edge))) ||
        (rc = forward(m, rows, seq, train)))
        return rc;
    if (!m->head && y) return to_host(m, y, stage_out(m), edge);
    if (!m->head) { /* the output stays for stage_put; the inbox slot is read */
        CK(cudaStreamSynchronize(m->s));
        return SYM_OK;
    }
    if ((rc = head_loss(m, (int)N, train, grad_scale))) return rc;
    CK(cudaMemcpyAsync(m->out_h->sums, m->sums, 2 * sizeof(double), cudaMemcpyDeviceToHost,
                       m->s));
    CK(cudaStreamSynchronize(m->s));
    *loss_sum = m->out_h->sums[0];
    if (correct && !train) *correct = (int64_t)m->out_h->sums[1];
    return SYM_OK;
}

static int be_stage_backward(sym_gpu_model_t *m, int slot, int chunk, const float *dy, int box,
                             float *dx, int first) {
    CK(cudaSetDevice(m->dev));
    int rc = check_slot(m, slot);
    if (!rc) rc = check_chunk(m, chunk);
    if (rc) return rc;
    if (m->sl[slot].chunk != chunk)
        return fail(SYM_EINVAL, "GPU GPT: a backward through chunk %d of activation set %d, "
                                "whose forward ran chunk %d", chunk, slot, m->sl[slot].chunk);
    use_chunk(m, chunk);
    if ((!m->head && !dy && box < 0) || (!m->embed && !dx && !m->peer_box[0]))
        return fail(SYM_EINVAL, "GPU GPT: a stage's backward without its %s",
                    !m->head && !dy && box < 0 ? "output's gradient" : "input gradient's way out");
    use_slot(m, slot);
    int rows = m->sl[slot].rows, seq = m->sl[slot].seq;
    size_t edge = edge_elems(m, rows, seq);
    if (!m->head && (rc = stage_in(m, m->dres, dy, 0, box, edge))) return rc;
    if ((rc = backward(m, rows, seq, first ? 0 : BODY_KEEP))) return rc;
    if (!m->embed && dx) return to_host(m, dx, m->dres, edge);
    CK(cudaStreamSynchronize(m->s)); /* the input gradient stays in dres for stage_put */
    return SYM_OK;
}

/* ---- a stage's messages GPU to GPU ---- */

/* What a neighbour opens: the region's IPC handle and the inboxes' offset in it. */
typedef struct {
    cudaIpcMemHandle_t region;
    uint64_t box_offset;
} inbox_handle_t;
static_assert(sizeof(inbox_handle_t) <= 128, "the pipeline's handle room (SYM_PIPE_HANDLE_BYTES)");

static int be_stage_inbox_handle(sym_gpu_model_t *m, void *handle) {
    if (!m->box) return fail(SYM_EINVAL, "GPU GPT: this stage has no inboxes (opts.inbox_elems)");
    CK(cudaSetDevice(m->dev));
    inbox_handle_t h;
    memset(&h, 0, sizeof h);
    CK(cudaIpcGetMemHandle(&h.region, m->region));
    h.box_offset = (uint64_t)((char *)m->box - m->region);
    memcpy(handle, &h, sizeof h);
    return SYM_OK;
}

static int be_stage_peer_open(sym_gpu_model_t *m, int next, const void *handle) {
    int k = next ? 1 : 0;
    inbox_handle_t h;
    memcpy(&h, handle, sizeof h);
    CK(cudaSetDevice(m->dev));
    if (m->peer_base[1 - k] && !memcmp(&m->peer_h[1 - k], &h.region, sizeof h.region)) {
        /* the other neighbour's region (pp=2 closes the ring with virtual stages) */
        m->peer_box[k] = m->peer_base[1 - k] + h.box_offset;
        return SYM_OK;
    }
    void *base = NULL;
    cudaError_t e = cudaIpcOpenMemHandle(&base, h.region, cudaIpcMemLazyEnablePeerAccess);
    if (e != cudaSuccess) {
        cudaGetLastError();
        return fail(SYM_ECOMM, "GPU GPT: the %s stage's GPU memory is out of this GPU's reach "
                               "(cudaIpcOpenMemHandle: %s)", next ? "next" : "previous",
                    cudaGetErrorString(e));
    }
    m->peer_base[k] = (char *)base;
    m->peer_box[k] = (char *)base + h.box_offset;
    m->peer_h[k] = h.region;
    return SYM_OK;
}

static int be_stage_put(sym_gpu_model_t *m, int slot, int fwd, int box) {
    CK(cudaSetDevice(m->dev));
    int rc = check_slot(m, slot);
    if (rc) return rc;
    char *peer = m->peer_box[fwd ? 1 : 0];
    size_t n = edge_elems(m, m->sl[slot].rows, m->sl[slot].seq);
    /* forward: into the next stage's forward inbox; backward: the previous's backward inbox */
    ptrdiff_t at = peer ? inbox_at(m, fwd, box, n) : -1;
    if (at < 0)
        return fail(SYM_EINVAL, "GPU GPT: a put into the %s stage's inbox slot %d (%zu elements), "
                                "which this GPU cannot reach", fwd ? "next" : "previous", box, n);
    use_chunk(m, m->sl[slot].chunk); /* stage_out: the last block of the slot's chunk */
    use_slot(m, slot);
    const void *src = fwd ? stage_out(m) : m->dres;
    CK(cudaMemcpyAsync(peer + at, src, n * m->esz, cudaMemcpyDeviceToDevice, m->s));
    CK(cudaStreamSynchronize(m->s));
    return SYM_OK;
}

/* ZeRO-1: every PE's block of a moment (x, zblock floats) into g (Pp), then
 * its first P floats to host (P). Collective over the dp team. */
static int zero_gather(sym_gpu_model_t *m, float *host, const float *x) {
    if (m->zero == 2) {
        int rc = z2_gather(m, x, 1, host, cudaMemcpyDeviceToHost);
        if (rc) return rc;
        CK(cudaStreamSynchronize(m->s));
        return SYM_OK;
    }
    int e = shmemx_gpu_allgather_team(m->opts.dp_team, m->g, x, m->zblock, SHMEMX_FLOAT32, m->s);
    if (e)
        return fail(SYM_EIO, "PE %d: gathering AdamW's moments for a checkpoint "
                             "(shmemx_gpu_allgather_team over the dp team) failed: %s",
                    shmem_my_pe(), shmemx_gpu_strerror(e));
    CK(cudaMemcpyAsync(host, m->g, m->P * sizeof(float), cudaMemcpyDeviceToHost, m->s));
    CK(cudaStreamSynchronize(m->s));
    return SYM_OK;
}

static int be_stage_update(sym_gpu_model_t *m, float lr, float clip, sym_gpu_step_t *out) {
    memset(out, 0, sizeof *out);
    CK(cudaSetDevice(m->dev));
    if (m->tied != SHMEM_TEAM_INVALID) { /* the embedding's gradient + the LM head's */
        float *gw = grad_at(m, m->off_wte);
        int e = shmemx_gpu_allreduce_team(m->tied, gw, gw,
                                          (size_t)m->nv * m->C, SHMEMX_FLOAT32, SHMEMX_SUM, m->s);
        if (e)
            return fail(SYM_EIO, "PE %d: the tied embedding's gradient sum over the first and "
                                 "last stage failed: %s", shmem_my_pe(), shmemx_gpu_strerror(e));
    }
    /* SP: the LayerNorms' gradients whole, once the step's micro-batches are all in */
    int rc = sp_ln_sum(m);
    if (!rc) rc = dp_average_all(m);
    if (rc) return rc;
    CK(cudaMemsetAsync(m->sums, 0, 2 * sizeof(double), m->s));
    return update(m, lr, clip, out);
}

static int be_get_state(sym_gpu_model_t *m, float *params, float *exp_avg, float *exp_avg_sq,
                        uint64_t *steps) {
    CK(cudaSetDevice(m->dev));
    CK(cudaStreamSynchronize(m->s));
    size_t b = m->P * sizeof(float);
    if (params) CK(cudaMemcpy(params, m->w, b, cudaMemcpyDeviceToHost));
    if (m->zero && (exp_avg || exp_avg_sq)) {
        /* g (ZeRO-2: the units' arrays) is the scratch: free between steps, not
         * between accumulate and train_step */
        if (m->acc_pending)
            return fail(SYM_EINVAL, "GPU GPT: get_state of AdamW's moments with ZeRO between "
                                    "a step's micro-batches (the gradients are in the gather's "
                                    "scratch); call it after train_step");
        int rc;
        if (exp_avg && (rc = zero_gather(m, exp_avg, m->m))) return rc;
        if (exp_avg_sq && (rc = zero_gather(m, exp_avg_sq, m->v))) return rc;
    } else {
        if (exp_avg) CK(cudaMemcpy(exp_avg, m->m, b, cudaMemcpyDeviceToHost));
        if (exp_avg_sq) CK(cudaMemcpy(exp_avg_sq, m->v, b, cudaMemcpyDeviceToHost));
    }
    if (steps) *steps = m->steps;
    return SYM_OK;
}

static int be_set_state(sym_gpu_model_t *m, const float *params, const float *exp_avg,
                        const float *exp_avg_sq, uint64_t steps) {
    CK(cudaSetDevice(m->dev));
    CK(cudaStreamSynchronize(m->s));
    if (m->s_snap) CK(cudaStreamSynchronize(m->s_snap));
    size_t b = m->P * sizeof(float);
    if (params) CK(cudaMemcpy(m->w, params, b, cudaMemcpyHostToDevice));
    /* the moments of this PE's block (all of them without ZeRO-1); a block's
     * padding past P stays zero */
    for (int i = 0; i < (m->zero == 2 ? m->nu : 1); i++) { /* ZeRO-2: each unit's block */
        size_t at = m->zlo, to = 0, len = m->zlen;
        if (m->zero == 2) {
            at = m->u[i].lo + (size_t)m->zrank * m->u[i].c;
            to = m->u[i].soff;
            len = m->u[i].mine;
        }
        if (exp_avg) CK(cudaMemcpy(m->m + to, exp_avg + at, len * 4, cudaMemcpyHostToDevice));
        if (exp_avg_sq)
            CK(cudaMemcpy(m->v + to, exp_avg_sq + at, len * 4, cudaMemcpyHostToDevice));
    }
    m->steps = steps;
    int rc = refresh_copy(m);
    if (rc) return rc;
    CK(cudaStreamSynchronize(m->s));
    return SYM_OK;
}

/* ---- asynchronous snapshots ---- */

static void *be_host_alloc(sym_gpu_model_t *m, size_t bytes) {
    void *p = NULL;
    cudaError_t e = cudaSetDevice(m->dev);
    if (e == cudaSuccess) e = cudaHostAlloc(&p, bytes ? bytes : 1, cudaHostAllocDefault);
    if (e != cudaSuccess) {
        cudaGetLastError();
        fail(SYM_ENOMEM, "cudaHostAlloc of %zu bytes of pinned memory failed: %s", bytes,
             cudaGetErrorString(e));
        return NULL;
    }
    return p;
}

static void be_host_free(sym_gpu_model_t *m, void *p) {
    (void)m;
    if (p) cudaFreeHost(p);
}

/* The copy runs on s_snap after ev_snap_from (recorded on the step's stream:
 * the last step's AdamW is in it), ending with ev_snap. */
static int be_snapshot_start(sym_gpu_model_t *m, float *params, float *exp_avg,
                             float *exp_avg_sq, uint64_t *steps) {
    if (m->zero)
        return fail(SYM_EINVAL, "GPU snapshot: with ZeRO AdamW's moments are sharded over the "
                                "dp team; take them with get_state (collective over the team), "
                                "as the trainer does with --zero 1 or 2");
    CK(cudaSetDevice(m->dev));
    if (!m->s_snap) {
        CK(cudaStreamCreateWithFlags(&m->s_snap, cudaStreamNonBlocking));
        CK(cudaEventCreateWithFlags(&m->ev_snap_from, cudaEventDisableTiming));
        CK(cudaEventCreateWithFlags(&m->ev_snap, cudaEventDisableTiming));
    }
    size_t b = m->P * sizeof(float);
    int rc = stream_after(m->s_snap, m->ev_snap_from, m->s);
    if (rc) return rc;
    CK(cudaMemcpyAsync(params, m->w, b, cudaMemcpyDeviceToHost, m->s_snap));
    CK(cudaMemcpyAsync(exp_avg, m->m, b, cudaMemcpyDeviceToHost, m->s_snap));
    CK(cudaMemcpyAsync(exp_avg_sq, m->v, b, cudaMemcpyDeviceToHost, m->s_snap));
    CK(cudaEventRecord(m->ev_snap, m->s_snap));
    m->snap_pending = 1;
    *steps = m->steps;
    return SYM_OK;
}

static int be_snapshot_wait(sym_gpu_model_t *m) {
    if (!m->ev_snap) return fail(SYM_EINVAL, "GPU snapshot: none was started");
    CK(cudaSetDevice(m->dev)); /* this thread's device (the writer's thread) */
    CK(cudaEventSynchronize(m->ev_snap));
    return SYM_OK;
}

static size_t be_memory(sym_gpu_model_t *m) { return m->region_bytes; }
static size_t be_memory_saved(sym_gpu_model_t *m) { return m->recompute_saved; }

/* Dense peak of the compute dtype: the H100 / H200 SXM's 989 TFLOP/s bf16
 * (494 TF32, 67 fp32); another Hopper in proportion to its SMs; else an A100's 312. */
static double be_peak_flops(sym_gpu_model_t *m) {
    cudaDeviceProp p;
    if (cudaGetDeviceProperties(&p, m->dev) != cudaSuccess) {
        cudaGetLastError();
        return 989e12;
    }
    double bf = 312e12;
    if (p.major == 9) bf = 989e12 * p.multiProcessorCount / 132.0;
    if (m->opts.precision == SYM_PREC_FP32) return bf * 67.0 / 989.0;
    if (m->opts.precision == SYM_PREC_TF32) return bf * 494.0 / 989.0;
    return bf;
}

static const char *be_describe(sym_gpu_model_t *m) { return m->desc; }
static const char *be_pci_bus_id(sym_gpu_model_t *m) { return m->pci; }

static const struct sym_cuda_backend table = {
    SYM_CUDA_BACKEND_ABI, sym__cuda_error, be_device_count, be_create,   be_destroy,
    be_train_step,        be_eval,      be_get_state,    be_set_state, be_memory,
    be_peak_flops,        be_describe,  be_pci_bus_id,   be_memory_saved,
    be_host_alloc,        be_host_free, be_snapshot_start, be_snapshot_wait,
    be_accumulate,        be_stage_forward, be_stage_backward, be_stage_inbox_handle,
    be_stage_peer_open,   be_stage_put, be_stage_update,
    sym__cuda_dev_use,    sym__cuda_dev_alloc, sym__cuda_dev_free, sym__cuda_dev_copy2d,
    sym__cuda_dev_zero,   sym__cuda_dev_convert, sym__cuda_dev_sum, sym__cuda_dev_sum_scatter,
    sym__cuda_dev_gather, sym__cuda_dev_alltoall};

extern "C" __attribute__((visibility("default"))) const struct sym_cuda_backend *
sym_cuda_backend(void) {
    return &table;
}
