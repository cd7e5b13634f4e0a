/*
 * symtrain/dtensor.h — the device mesh and distributed tensors.
 *
 * A device mesh arranges the PEs of a team (usually SHMEM_TEAM_WORLD) in 1 to
 * 3 named dimensions, "dp", "tp" and "pp", written as a spec: "tp=4",
 * "dp=2,tp=2", "dp=2,tp=2,pp=1". The last dimension varies fastest: in
 * "dp=2,tp=2" team PEs 0,1 form one tp row and 0,2 one dp column. Every row of
 * a dimension (the PEs whose coordinates differ in that dimension only) is an
 * OpenSHMEM team (sym_mesh_team), made with shmem_team_split_2d.
 *
 * A distributed tensor (sym_dtensor_t) is a global tensor of which every PE
 * holds a local part (a plain sym_tensor_t), described by one placement per
 * mesh dimension:
 *   Shard(d)      the global tensor is split along its dimension d over that
 *                 mesh dimension's row: of L slices over p PEs, row member i
 *                 holds L / p slices, one more for i < L % p, in order
 *                 (sym_shard_range of symtrain/data.h, the rule that splits a
 *                 global batch; a member may hold none);
 *   Replicate     every member of the row holds the same data;
 *   Partial(op)   every member holds a part, and the tensor is their sum
 *                 (SYM_PARTIAL_SUM) or their average (SYM_PARTIAL_AVG): a
 *                 reduction still to be done.
 * A tensor dimension is sharded over at most one mesh dimension. Partial
 * placements need a float dtype (fp32, bf16, fp16); int32 tensors move between
 * Shard and Replicate only.
 *
 * sym_redistribute changes the placements, one mesh dimension at a time, each
 * with one collective on that dimension's rows (all rows at once, each on its
 * own data):
 *   Shard -> Replicate        all-gather (uneven sizes)
 *   Partial -> Replicate      all-reduce (shmemx_allreduce)
 *   Partial -> Shard          reduce-scatter (uneven sizes)
 *   Shard(i) -> Shard(j)      all-to-all (uneven sizes)
 *   Replicate -> Shard        a local slice, no communication
 *   Replicate -> Partial      local: SUM keeps the data on row member 0 and
 *                             zeros elsewhere, AVG keeps it everywhere
 *   Shard -> Partial          SUM: local (the shard in place, zeros around);
 *                             AVG: an all-gather
 * Partial(sum) <-> Partial(avg) is refused. Reductions of bf16 and fp16 add in
 * fp32 and round once per mesh dimension reduced; AVG divides the fp32 sum by
 * the row size. Local tensors are contiguous, both on the CPU or both on one
 * GPU (device SYM_GPU, device_index: memory the caller allocated, wrapped
 * with sym_dtensor_wrap). GPU tensors need the GPU runtime up
 * (shmemx_gpu_init on every PE, shmemx_gpu.h) and move over the GPU
 * collectives, with the same results bit for bit; they need no scratch.
 *
 * CPU collectives read the peers' symmetric memory, so the mesh keeps a
 * symmetric scratch buffer. On a mesh over all PEs of the job it grows as needed inside
 * sym_redistribute (shmem_malloc, which every PE calls anyway, since
 * sym_redistribute is collective over the mesh). A mesh over fewer PEs cannot
 * allocate symmetric memory on its own: give it a buffer with
 * sym_mesh_attach_scratch; a redistribution that needs more says how much.
 *
 * Every function returns 0 or a negative SYM_E* code, with sym_last_error
 * saying what was wrong; a bad argument is found before anything is
 * communicated, and every PE of the mesh finds the same one.
 */
#ifndef SYMTRAIN_DTENSOR_H
#define SYMTRAIN_DTENSOR_H

#include <shmem.h>
#include <stddef.h>
#include <stdint.h>

#include <symtrain/tensor.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SYM_MESH_MAX_DIMS 3

/* ---- the device mesh ---- */

typedef struct sym_mesh sym_mesh_t; /* opaque */

/* A mesh over the PEs of `parent` as `spec` says ("dp=2,tp=2": names dp, tp, pp,
 * each at most once, sizes >= 1 multiplying to the team's size). Collective over
 * parent. Returns 0, SYM_EINVAL (the spec) or SYM_ECOMM (no team slots left). */
int sym_mesh_create(shmem_team_t parent, const char *spec, sym_mesh_t **out);
/* Collective over the mesh (it destroys the teams). NULL is ignored. */
void sym_mesh_destroy(sym_mesh_t *mesh);
int sym_mesh_ndims(const sym_mesh_t *mesh);
/* The index of the dimension named `name`, or -1. */
int sym_mesh_dim(const sym_mesh_t *mesh, const char *name);
const char *sym_mesh_name(const sym_mesh_t *mesh, int dim);
/* The number of PEs along `dim`, and this PE's coordinate along it. */
int sym_mesh_size(const sym_mesh_t *mesh, int dim);
int sym_mesh_coord(const sym_mesh_t *mesh, int dim);
/* This PE's row along `dim`: the team of the PEs that differ from it in `dim`
 * only, numbered by their coordinate. */
shmem_team_t sym_mesh_team(const sym_mesh_t *mesh, int dim);
/* Use `bytes` of symmetric memory at `buf` (the same on every PE of the mesh,
 * unused by anything else while the mesh lives) as the scratch buffer; for a
 * mesh over a sub-team. Collective over the mesh. */
int sym_mesh_attach_scratch(sym_mesh_t *mesh, void *buf, size_t bytes);

/* ---- placements ---- */

typedef enum { SYM_REPLICATE = 0, SYM_SHARD = 1, SYM_PARTIAL = 2 } sym_placement_kind_t;
typedef enum { SYM_PARTIAL_SUM = 0, SYM_PARTIAL_AVG = 1 } sym_partial_op_t;

typedef struct {
    sym_placement_kind_t kind;
    int dim;             /* SYM_SHARD: the tensor dimension split */
    sym_partial_op_t op; /* SYM_PARTIAL: the pending reduction */
} sym_placement_t;

static inline sym_placement_t sym_replicate(void) {
    sym_placement_t p = {SYM_REPLICATE, 0, SYM_PARTIAL_SUM};
    return p;
}
static inline sym_placement_t sym_shard(int dim) {
    sym_placement_t p = {SYM_SHARD, dim, SYM_PARTIAL_SUM};
    return p;
}
static inline sym_placement_t sym_partial(sym_partial_op_t op) {
    sym_placement_t p = {SYM_PARTIAL, 0, op};
    return p;
}

/* "S(0),R,P(avg)": one entry per mesh dimension, for messages and logs. */
const char *sym_placements_str(const sym_placement_t *pl, int n, char *buf, size_t len);

/* ---- distributed tensors ---- */

/* How a tensor is spread over the mesh (the layout slot of sym_tensor_t). */
struct sym_layout {
    sym_mesh_t *mesh;
    int ndim;                                 /* the tensor's dimensions */
    int64_t global[SYM_MAX_DIMS];             /* its global shape */
    int64_t offset[SYM_MAX_DIMS];             /* where this PE's part starts in it */
    sym_placement_t place[SYM_MESH_MAX_DIMS]; /* one per mesh dimension */
};

/* The local part with its layout. local.layout points at this struct's own
 * layout, so a sym_dtensor_t is not copied by value. */
typedef struct {
    sym_tensor_t local;
    sym_layout_t layout;
} sym_dtensor_t;

/* The shape of this PE's part of a `global` tensor placed as `pl` (one entry
 * per mesh dimension), and where it starts (offset may be NULL). Returns 0 or
 * SYM_EINVAL (placements that do not fit the tensor or the dtype). */
int sym_dtensor_local_shape(const sym_mesh_t *mesh, sym_dtype_t dt, int ndim,
                            const int64_t *global, const sym_placement_t *pl, int64_t *local,
                            int64_t *offset);
/* A distributed tensor whose (zeroed) local part comes from `pool`. */
int sym_dtensor_alloc(sym_dtensor_t *x, sym_mesh_t *mesh, sym_dtype_t dt, int ndim,
                      const int64_t *global, const sym_placement_t *pl, sym_pool_t *pool);
/* A distributed tensor over existing memory: `local` (contiguous, CPU) must
 * have the local shape; it stays the caller's (freeing x frees nothing). */
int sym_dtensor_wrap(sym_dtensor_t *x, sym_mesh_t *mesh, const sym_tensor_t *local, int ndim,
                     const int64_t *global, const sym_placement_t *pl);
void sym_dtensor_free(sym_dtensor_t *x);

/* Fill `to` (same mesh, dtype and global shape; its placements are the target)
 * from `from`. Collective over the whole mesh: every PE calls it with the same
 * placements. `from` is not changed. Returns 0, SYM_EINVAL (a mismatch, or a
 * transition not supported), SYM_ENOMEM or SYM_ECOMM. */
int sym_redistribute(const sym_dtensor_t *from, sym_dtensor_t *to);

#ifdef __cplusplus
}
#endif

#endif
