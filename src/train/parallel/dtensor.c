/*
 * dtensor.c — distributed tensors: placements, local shapes, and
 * sym_redistribute (the contract is symtrain/dtensor.h).
 *
 * A redistribution is planned first, on every PE alike and before anything is
 * communicated, as a list of steps that each change one mesh dimension's
 * placement. Phase 1 takes every dimension that leaves a Shard off it (an
 * all-to-all when the new tensor dimension is free, a local scatter into
 * zeros for Partial(sum), else an all-gather to Replicate); phase 2 then moves
 * every dimension from Replicate or Partial to its target. Every intermediate
 * state is valid (no tensor dimension sharded twice), since after phase 1 the
 * only shards left are ones the target keeps.
 *
 * A step packs what this PE sends into the mesh's symmetric scratch so that
 * each row member's piece is contiguous, runs one collective on the row, and
 * unpacks. A tensor is viewed, for a tensor dimension d, as (outer, L, inner):
 * a block of slices along d is `outer` runs of `count * inner` elements, which
 * is all copy_block does. Every PE knows every PE's shard sizes (the split
 * rule), so no sizes are exchanged. Reductions widen to fp32 in the scratch.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <symtrain/data.h> /* sym_shard_range, the split rule */
#include <symtrain/dtensor.h>

#include "core/device.h"
#include "internal.h"
#include "parallel/mesh.h"

/* ---- placements ---- */

const char *sym_placements_str(const sym_placement_t *pl, int n, char *buf, size_t len) {
    size_t at = 0;
    if (len) buf[0] = 0;
    for (int k = 0; k < n && at < len; k++) {
        const sym_placement_t *p = &pl[k];
        int w = p->kind == SYM_SHARD     ? snprintf(buf + at, len - at, "%sS(%d)", k ? "," : "",
                                                    p->dim)
                : p->kind == SYM_PARTIAL ? snprintf(buf + at, len - at, "%sP(%s)", k ? "," : "",
                                                    p->op == SYM_PARTIAL_AVG ? "avg" : "sum")
                                         : snprintf(buf + at, len - at, "%sR", k ? "," : "");
        at += w > 0 ? (size_t)w : 0;
    }
    return buf;
}

static int same(sym_placement_t a, sym_placement_t b) {
    return a.kind == b.kind && (a.kind != SYM_SHARD || a.dim == b.dim) &&
           (a.kind != SYM_PARTIAL || a.op == b.op);
}

/* Does a mesh dimension other than k shard tensor dimension d? */
static int sharded_elsewhere(const sym_placement_t *pl, int nd, int k, int d) {
    for (int j = 0; j < nd; j++)
        if (j != k && pl[j].kind == SYM_SHARD && pl[j].dim == d) return 1;
    return 0;
}

static int check(const sym_mesh_t *m, sym_dtype_t dt, int ndim, const int64_t *global,
                 const sym_placement_t *pl) {
    char s[96];
    if (ndim < 1 || ndim > SYM_MAX_DIMS)
        return sym__error(SYM_EINVAL, "dtensor: a tensor has 1 to %d dimensions, not %d",
                          SYM_MAX_DIMS, ndim);
    if ((unsigned)dt > SYM_DT_I32) return sym__error(SYM_EINVAL, "dtensor: unknown dtype %d", dt);
    for (int d = 0; d < ndim; d++)
        if (global[d] < 0)
            return sym__error(SYM_EINVAL, "dtensor: negative dimension %lld",
                              (long long)global[d]);
    for (int k = 0; k < m->ndims; k++) {
        const sym_placement_t *p = &pl[k];
        if (p->kind == SYM_SHARD && (p->dim < 0 || p->dim >= ndim))
            return sym__error(SYM_EINVAL, "dtensor: %s shards tensor dimension %d of a %d-D "
                              "tensor", m->name[k], p->dim, ndim);
        if (p->kind == SYM_SHARD && sharded_elsewhere(pl, m->ndims, k, p->dim))
            return sym__error(SYM_EINVAL, "dtensor: placements %s shard tensor dimension %d "
                              "over two mesh dimensions: shard it over one",
                              sym_placements_str(pl, m->ndims, s, sizeof s), p->dim);
        if (p->kind == SYM_PARTIAL && dt == SYM_DT_I32)
            return sym__error(SYM_EINVAL, "dtensor: an int32 tensor cannot be Partial (%s): "
                              "reductions need fp32, bf16 or fp16",
                              sym_placements_str(pl, m->ndims, s, sizeof s));
        if ((unsigned)p->kind > SYM_PARTIAL || (p->kind == SYM_PARTIAL &&
                                                (unsigned)p->op > SYM_PARTIAL_AVG))
            return sym__error(SYM_EINVAL, "dtensor: unknown placement on %s", m->name[k]);
    }
    return SYM_OK;
}

/* The local shape (and offset) at placements pl, without checks. */
static void local_shape(const sym_mesh_t *m, int ndim, const int64_t *global,
                        const sym_placement_t *pl, int64_t *local, int64_t *offset) {
    for (int d = 0; d < ndim; d++) {
        local[d] = global[d];
        if (offset) offset[d] = 0;
    }
    for (int k = 0; k < m->ndims; k++)
        if (pl[k].kind == SYM_SHARD) {
            int64_t off, cnt;
            sym_shard_range(global[pl[k].dim], m->size[k], m->coord[k], &off, &cnt);
            local[pl[k].dim] = cnt;
            if (offset) offset[pl[k].dim] = off;
        }
}

/* The largest local part any PE of the mesh holds at pl (row member 0 of
 * every sharding dimension holds the most), in elements. */
static size_t max_local(const sym_mesh_t *m, int ndim, const int64_t *global,
                        const sym_placement_t *pl) {
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) {
        int64_t len = global[d];
        for (int k = 0; k < m->ndims; k++)
            if (pl[k].kind == SYM_SHARD && pl[k].dim == d) len = (len + m->size[k] - 1) / m->size[k];
        n *= len;
    }
    return (size_t)n;
}

static int64_t prod(const int64_t *s, int lo, int hi) {
    int64_t p = 1;
    for (int d = lo; d < hi; d++) p *= s[d];
    return p;
}

int sym_dtensor_local_shape(const sym_mesh_t *m, sym_dtype_t dt, int ndim, const int64_t *global,
                            const sym_placement_t *pl, int64_t *local, int64_t *offset) {
    int rc = check(m, dt, ndim, global, pl);
    if (rc) return rc;
    local_shape(m, ndim, global, pl, local, offset);
    return SYM_OK;
}

/* ---- distributed tensors ---- */

static void set_layout(sym_dtensor_t *x, sym_mesh_t *m, int ndim, const int64_t *global,
                       const sym_placement_t *pl) {
    sym_layout_t *l = &x->layout;
    memset(l, 0, sizeof *l);
    l->mesh = m;
    l->ndim = ndim;
    for (int d = 0; d < ndim; d++) l->global[d] = global[d];
    for (int k = 0; k < m->ndims; k++) l->place[k] = pl[k];
    int64_t local[SYM_MAX_DIMS];
    local_shape(m, ndim, global, pl, local, l->offset);
    x->local.layout = l;
}

int sym_dtensor_alloc(sym_dtensor_t *x, sym_mesh_t *m, sym_dtype_t dt, int ndim,
                      const int64_t *global, const sym_placement_t *pl, sym_pool_t *pool) {
    memset(x, 0, sizeof *x);
    int64_t local[SYM_MAX_DIMS];
    int rc = sym_dtensor_local_shape(m, dt, ndim, global, pl, local, NULL);
    if (rc) return rc;
    if ((rc = sym_tensor_alloc_dt(&x->local, pool, dt, ndim, local))) return rc;
    set_layout(x, m, ndim, global, pl);
    return SYM_OK;
}

int sym_dtensor_wrap(sym_dtensor_t *x, sym_mesh_t *m, const sym_tensor_t *t, int ndim,
                     const int64_t *global, const sym_placement_t *pl) {
    memset(x, 0, sizeof *x);
    int64_t local[SYM_MAX_DIMS];
    int rc = sym_dtensor_local_shape(m, t->dtype, ndim, global, pl, local, NULL);
    if (rc) return rc;
    if (!sym_tensor_is_contiguous(t))
        return sym__error(SYM_EINVAL, "dtensor: the local tensor must be contiguous");
    if (t->ndim != ndim)
        return sym__error(SYM_EINVAL, "dtensor: the local tensor has %d dimensions, the global "
                          "one %d", t->ndim, ndim);
    for (int d = 0; d < ndim; d++)
        if (t->shape[d] != local[d]) {
            char s[96];
            return sym__error(SYM_EINVAL, "dtensor: at %s this PE's part holds %lld along "
                              "dimension %d, the local tensor %lld",
                              sym_placements_str(pl, m->ndims, s, sizeof s),
                              (long long)local[d], d, (long long)t->shape[d]);
        }
    x->local = *t;
    x->local.pool = NULL; /* the caller's memory */
    set_layout(x, m, ndim, global, pl);
    return SYM_OK;
}

void sym_dtensor_free(sym_dtensor_t *x) {
    sym_tensor_free(&x->local);
    memset(x, 0, sizeof *x);
}

/* ---- one step: one mesh dimension's placement changes ---- */

typedef struct {
    sym_mesh_t *m;
    sym_dtype_t dt;
    size_t es;
    int ndim;
    const int64_t *global;
    const struct sym_cuda_backend *gpu; /* GPU tensors: their memory and collectives */
} ctx_t;

/* ---- memory of the tensors' device: the CPU's, or the GPU's (c->gpu) ---- */

static int gpu_rc(const ctx_t *c, int rc) {
    return rc ? sym__error(rc, "%s", c->gpu->error()) : SYM_OK;
}

static void *mem_alloc(const ctx_t *c, size_t bytes) {
    void *p = c->gpu ? c->gpu->dev_alloc(bytes) : malloc(bytes + 1);
    if (!p)
        sym__error(SYM_ENOMEM, "%s", c->gpu ? c->gpu->error() : "redistribute: out of memory");
    return p;
}

static void mem_free(const ctx_t *c, void *p) {
    if (c->gpu) c->gpu->dev_free(p);
    else free(p);
}

static int mem_zero(const ctx_t *c, void *dst, size_t bytes) {
    if (c->gpu) return gpu_rc(c, c->gpu->dev_zero(dst, bytes));
    memset(dst, 0, bytes);
    return SYM_OK;
}

/* Slices [a, a + n) along the middle dimension of src (outer, lsrc, row bytes)
 * to [b, b + n) of dst (outer, ldst, row bytes). */
static int copy_block(const ctx_t *c, void *dst, int64_t ldst, int64_t b, const void *src,
                      int64_t lsrc, int64_t a, int64_t n, int64_t outer, size_t row) {
    if (n <= 0 || row == 0 || outer <= 0) return SYM_OK;
    char *d = (char *)dst + (size_t)b * row;
    const char *s = (const char *)src + (size_t)a * row;
    if (c->gpu)
        return gpu_rc(c, c->gpu->dev_copy2d(d, (size_t)ldst * row, s, (size_t)lsrc * row,
                                            (size_t)n * row, (size_t)outer));
    for (int64_t o = 0; o < outer; o++)
        memcpy(d + (size_t)(o * ldst) * row, s + (size_t)(o * lsrc) * row, (size_t)n * row);
    return SYM_OK;
}

static int mem_copy(const ctx_t *c, void *dst, const void *src, size_t bytes) {
    return copy_block(c, dst, 1, 0, src, 1, 0, 1, 1, bytes);
}

/* dst (n of the dtype) = x (n fp32) / div, for an average's division (div p) or none (1). */
static int from_f32(const ctx_t *c, void *dst, float *x, size_t n, float div) {
    if (c->gpu) return gpu_rc(c, c->gpu->dev_convert(dst, c->dt, x, SYM_DT_F32, n, div));
    if (div != 1.0f)
        for (size_t i = 0; i < n; i++) x[i] = x[i] / div;
    if (dst != x) sym_convert(dst, c->dt, x, SYM_DT_F32, n);
    return SYM_OK;
}

static int to_f32(const ctx_t *c, float *dst, const void *src, size_t n) {
    if (c->gpu) return gpu_rc(c, c->gpu->dev_convert(dst, SYM_DT_F32, src, c->dt, n, 1.0f));
    sym_convert(dst, SYM_DT_F32, src, c->dt, n);
    return SYM_OK;
}

/* A GPU collective's block: `bytes` rounded up to 16 (its lines). */
static size_t line_up(size_t bytes) { return (bytes + 15) & ~(size_t)15; }

/* All-gather of tensor dimension i over row `k` (ls: the local shape, sharded
 * along i; dst holds the full extent along i). The CPU pulls each member's
 * block from the mesh's scratch (sizes as they are); the GPU gathers blocks
 * padded to member 0's (the largest) in its working memory. */
static int gather(const ctx_t *c, const sym_placement_t *cur, int k, int i, const int64_t *ls,
                  const void *src, void *dst) {
    sym_mesh_t *m = c->m;
    int p = m->size[k], me = m->coord[k];
    size_t n = (size_t)prod(ls, 0, c->ndim) * c->es, rest = (size_t)(prod(ls, 0, i) *
                                                                      prod(ls, i + 1, c->ndim));
    int64_t outer = prod(ls, 0, i), row = prod(ls, i + 1, c->ndim) * (int64_t)c->es;
    size_t *at = calloc((size_t)p, sizeof *at), *len = malloc((size_t)p * sizeof *len);
    char *tmp = NULL;
    int rc = SYM_OK;
    if (!at || !len) {
        rc = sym__error(SYM_ENOMEM, "redistribute: out of memory");
        goto out;
    }
    for (int r = 0; r < p; r++) {
        int64_t o, cnt;
        sym_shard_range(c->global[i], p, r, &o, &cnt);
        len[r] = rest * (size_t)cnt * c->es;
    }
    if (c->gpu) { /* member r's block at r * unit */
        size_t unit = line_up(len[0]);
        if (!(tmp = mem_alloc(c, unit * (size_t)p + 16))) {
            rc = SYM_ENOMEM;
            goto out;
        }
        for (int r = 0; r < p; r++) at[r] = (size_t)r * unit;
        if ((rc = mem_copy(c, tmp + at[me], src, n)) ||
            (rc = gpu_rc(c, c->gpu->dev_gather(m->team[k], tmp, unit))))
            goto out;
    } else { /* the blocks one after another */
        void *buf;
        if ((rc = sym__mesh_scratch(m, max_local(m, c->ndim, c->global, cur) * c->es, &buf)))
            goto out;
        memcpy(buf, src, n);
        if (!(tmp = outer == 1 ? dst : mem_alloc(c, rest * (size_t)c->global[i] * c->es))) {
            rc = SYM_ENOMEM;
            goto out;
        }
        size_t *off = at; /* zeros: each member's block starts its scratch */
        if ((rc = sym__comm_pullv(m->team[k], buf, off, len, tmp)) || tmp == dst) goto out;
        for (int r = 1; r < p; r++) at[r] = at[r - 1] + len[r - 1];
    }
    for (int r = 0; r < p && !rc; r++) { /* member r's block: (outer, cnt, inner) */
        int64_t o, cnt;
        sym_shard_range(c->global[i], p, r, &o, &cnt);
        rc = copy_block(c, dst, c->global[i], o, tmp + at[r], cnt, 0, cnt, outer, (size_t)row);
    }
out:
    if (tmp != dst) mem_free(c, tmp);
    free(at);
    free(len);
    return rc;
}

/* All-to-all over row k: tensor dimension i (sharded in ls) becomes whole, j
 * (whole in ls) becomes sharded. Each PE packs its blocks of j, member r's
 * contiguous. The CPU pulls its block from every member's scratch; the GPU
 * packs them padded to the largest block and runs the GPU all-to-all. */
static int alltoall(const ctx_t *c, const sym_placement_t *cur, int k, int i, int j,
                    const int64_t *ls, const int64_t *ld, const void *src, void *dst) {
    sym_mesh_t *m = c->m;
    int p = m->size[k], me = m->coord[k];
    size_t rest = c->es; /* bytes per element times the dimensions other than i and j */
    for (int d = 0; d < c->ndim; d++)
        if (d != i && d != j) rest *= (size_t)ls[d];
    int64_t jo = prod(ls, 0, j), jrow = prod(ls, j + 1, c->ndim) * (int64_t)c->es;
    int64_t myo, mycnt, o, cnt;
    sym_shard_range(c->global[j], p, me, &myo, &mycnt);
    size_t *at = malloc((size_t)p * sizeof *at), *len = malloc((size_t)p * sizeof *len);
    char *pack, *tmp = NULL;
    int rc = SYM_OK;
    if (!at || !len) {
        rc = sym__error(SYM_ENOMEM, "redistribute: out of memory");
        goto out;
    }
    for (int r = 0; r < p; r++) { /* what member r packed for us, and how much */
        sym_shard_range(c->global[i], p, r, &o, &cnt);
        at[r] = rest * (size_t)cnt * (size_t)myo;
        len[r] = rest * (size_t)cnt * (size_t)mycnt;
    }
    size_t unit = 0; /* the GPU's: the largest block any member sends any other */
    size_t bytes = (size_t)prod(ld, 0, c->ndim) * c->es; /* what tmp receives */
    void *buf = NULL;
    if (c->gpu) {
        int64_t ci, cj;
        sym_shard_range(c->global[i], p, 0, &o, &ci);
        sym_shard_range(c->global[j], p, 0, &o, &cj);
        unit = line_up(rest * (size_t)ci * (size_t)cj);
        bytes = 2 * unit * (size_t)p + 16; /* the packed blocks, the received ones (+16: never 0) */
    } else if ((rc = sym__mesh_scratch(m, max_local(m, c->ndim, c->global, cur) * c->es,
                                       &buf))) {
        goto out;
    }
    if (!(tmp = mem_alloc(c, bytes))) {
        rc = SYM_ENOMEM;
        goto out;
    }
    pack = c->gpu ? tmp : buf;
    size_t pos = 0;
    for (int r = 0; r < p && !rc; r++) { /* member r's block of j */
        sym_shard_range(c->global[j], p, r, &o, &cnt);
        rc = copy_block(c, pack + (unit ? unit * (size_t)r : pos), cnt, 0, src, ls[j], o, cnt,
                        jo, (size_t)jrow);
        pos += (size_t)(jo * cnt * jrow);
    }
    if (rc) goto out;
    if (c->gpu) {
        char *got = tmp + unit * (size_t)p;
        if ((rc = gpu_rc(c, c->gpu->dev_alltoall(m->team[k], got, pack, unit)))) goto out;
        for (int r = 0; r < p; r++) at[r] = unit * (size_t)(p + r);
    } else {
        if ((rc = sym__comm_pullv(m->team[k], pack, at, len, tmp))) goto out;
        for (int r = 0; r < p; r++) at[r] = r ? at[r - 1] + len[r - 1] : 0;
    }
    int64_t io = prod(ld, 0, i), irow = prod(ld, i + 1, c->ndim) * (int64_t)c->es;
    for (int r = 0; r < p && !rc; r++) {
        sym_shard_range(c->global[i], p, r, &o, &cnt);
        rc = copy_block(c, dst, ld[i], o, tmp + at[r], cnt, 0, cnt, io, (size_t)irow);
    }
out:
    mem_free(c, tmp);
    free(at);
    free(len);
    return rc;
}

/* Partial over row k -> Replicate (to_dim < 0) or Shard(to_dim), summed in
 * fp32: the CPU in the mesh's scratch (the reduce-scatter pulls each block in
 * team order), the GPU in its working memory (blocks padded to the largest). */
static int reduce(const ctx_t *c, const sym_placement_t *cur, int k, int to_dim,
                  const int64_t *ls, const void *src, void *dst) {
    sym_mesh_t *m = c->m;
    int p = m->size[k];
    float div = cur[k].op == SYM_PARTIAL_AVG ? (float)p : 1.0f;
    size_t n = (size_t)prod(ls, 0, c->ndim);
    float *buf = NULL;
    int rc = SYM_OK;
    if (!c->gpu && (rc = sym__mesh_scratch(m, max_local(m, c->ndim, c->global, cur) *
                                                  sizeof(float), (void **)&buf)))
        return rc;
    if (to_dim < 0) { /* all-reduce, in place */
        if (c->gpu && !(buf = mem_alloc(c, n * sizeof *buf))) return SYM_ENOMEM;
        if (!(rc = to_f32(c, buf, src, n)) && n)
            rc = c->gpu ? gpu_rc(c, c->gpu->dev_sum(m->team[k], buf, n))
                        : sym__comm_sum(m->team[k], buf, n);
        if (!rc) rc = from_f32(c, dst, buf, n, div);
        if (c->gpu) mem_free(c, buf);
        return rc;
    }
    int j = to_dim;
    int64_t outer = prod(ls, 0, j), inner = prod(ls, j + 1, c->ndim), o, cnt;
    sym_shard_range(c->global[j], p, 0, &o, &cnt);
    size_t unit = c->gpu ? line_up((size_t)(outer * cnt * inner) * sizeof(float)) : 0;
    if (c->gpu && !(buf = mem_alloc(c, unit * (size_t)p))) return SYM_ENOMEM;
    const float *wide = src;
    float *tmp = NULL; /* bf16 / fp16: the widened input (the CPU's: then our block's sum) */
    if (c->dt != SYM_DT_F32) {
        if (!(tmp = mem_alloc(c, (n + 1) * sizeof *tmp))) {
            rc = SYM_ENOMEM;
            goto out;
        }
        if ((rc = to_f32(c, tmp, src, n))) goto out;
        wide = tmp;
    }
    size_t pos = 0;
    for (int r = 0; r < p && !rc; r++) { /* block r of j, contiguous, at one offset everywhere */
        sym_shard_range(c->global[j], p, r, &o, &cnt);
        rc = copy_block(c, (char *)buf + (unit ? unit * (size_t)r : pos), cnt, 0, wide, ls[j], o,
                        cnt, outer, (size_t)inner * sizeof(float));
        pos += (size_t)(outer * cnt * inner) * sizeof(float);
    }
    if (rc) goto out;
    sym_shard_range(c->global[j], p, m->coord[k], &o, &cnt);
    size_t mine = (size_t)(outer * cnt * inner);
    if (c->gpu) {
        float *sum = (float *)((char *)buf + unit * (size_t)m->coord[k]);
        if (!(rc = gpu_rc(c, c->gpu->dev_sum_scatter(m->team[k], buf, unit / sizeof(float)))))
            rc = from_f32(c, dst, sum, mine, div);
    } else {
        float *sum = c->dt == SYM_DT_F32 ? dst : tmp;
        rc = sym__comm_reduce_pull_f32(m->team[k], buf, (size_t)(outer * o * inner), mine, sum);
        if (!rc) rc = from_f32(c, dst, sum, mine, div);
    }
out:
    if (c->gpu) mem_free(c, buf);
    mem_free(c, tmp);
    return rc;
}

/* Change mesh dimension k from cur[k] to `to`; src has the local shape at
 * cur, dst the one after. */
static int step(const ctx_t *c, const sym_placement_t *cur, int k, sym_placement_t to,
                const void *src, void *dst) {
    sym_mesh_t *m = c->m;
    sym_placement_t after[SYM_MESH_MAX_DIMS];
    memcpy(after, cur, sizeof after);
    after[k] = to;
    int64_t ls[SYM_MAX_DIMS], ld[SYM_MAX_DIMS];
    local_shape(m, c->ndim, c->global, cur, ls, NULL);
    local_shape(m, c->ndim, c->global, after, ld, NULL);
    size_t nd = (size_t)prod(ld, 0, c->ndim) * c->es;
    sym_placement_t from = cur[k];
    if (from.kind == SYM_PARTIAL)
        return reduce(c, cur, k, to.kind == SYM_SHARD ? to.dim : -1, ls, src, dst);
    if (from.kind == SYM_SHARD && to.kind == SYM_SHARD)
        return alltoall(c, cur, k, from.dim, to.dim, ls, ld, src, dst);
    if (from.kind == SYM_SHARD && to.kind == SYM_REPLICATE)
        return gather(c, cur, k, from.dim, ls, src, dst);
    int64_t o, cnt;
    int rc;
    if (from.kind == SYM_SHARD) { /* -> Partial(sum): our shard in place, zeros around */
        int i = from.dim;
        sym_shard_range(c->global[i], m->size[k], m->coord[k], &o, &cnt);
        if ((rc = mem_zero(c, dst, nd))) return rc;
        return copy_block(c, dst, ld[i], o, src, cnt, 0, cnt, prod(ls, 0, i),
                          (size_t)prod(ls, i + 1, c->ndim) * c->es);
    }
    if (to.kind == SYM_SHARD) { /* Replicate -> Shard: our slice */
        int j = to.dim;
        sym_shard_range(c->global[j], m->size[k], m->coord[k], &o, &cnt);
        return copy_block(c, dst, cnt, 0, src, ls[j], o, cnt, prod(ls, 0, j),
                          (size_t)prod(ls, j + 1, c->ndim) * c->es);
    }
    if (to.op == SYM_PARTIAL_SUM && m->coord[k] != 0) /* Replicate -> Partial */
        return mem_zero(c, dst, nd);
    return mem_copy(c, dst, src, nd);
}

/* ---- planning and running ---- */

typedef struct {
    int k;
    sym_placement_t to;
} plan_step_t;

static int plan(const sym_mesh_t *m, const sym_placement_t *from, const sym_placement_t *to,
                plan_step_t *steps, int *nsteps) {
    sym_placement_t cur[SYM_MESH_MAX_DIMS];
    memcpy(cur, from, sizeof cur);
    int n = 0;
    for (int k = 0; k < m->ndims; k++) { /* phase 1: off every Shard that changes */
        if (cur[k].kind != SYM_SHARD || same(cur[k], to[k])) continue;
        sym_placement_t via = sym_replicate();
        if ((to[k].kind == SYM_SHARD && !sharded_elsewhere(cur, m->ndims, k, to[k].dim)) ||
            (to[k].kind == SYM_PARTIAL && to[k].op == SYM_PARTIAL_SUM))
            via = to[k];
        steps[n++] = (plan_step_t){k, via};
        cur[k] = via;
    }
    for (int k = 0; k < m->ndims; k++) { /* phase 2: from Replicate or Partial to the target */
        if (same(cur[k], to[k])) continue;
        if (cur[k].kind == SYM_PARTIAL && to[k].kind == SYM_PARTIAL) {
            char a[96], b[96];
            return sym__error(SYM_EINVAL, "redistribute %s -> %s: Partial(sum) and Partial(avg) "
                              "do not convert into each other on %s; reduce first",
                              sym_placements_str(from, m->ndims, a, sizeof a),
                              sym_placements_str(to, m->ndims, b, sizeof b), m->name[k]);
        }
        steps[n++] = (plan_step_t){k, to[k]};
        cur[k] = to[k];
    }
    *nsteps = n;
    return SYM_OK;
}

static int local_ok(const sym_dtensor_t *x, const char *which) {
    const sym_layout_t *l = &x->layout;
    int64_t want[SYM_MAX_DIMS];
    local_shape(l->mesh, l->ndim, l->global, l->place, want, NULL);
    int ok = x->local.ndim == l->ndim && sym_tensor_is_contiguous(&x->local);
    for (int d = 0; ok && d < l->ndim; d++) ok = x->local.shape[d] == want[d];
    if (!ok)
        return sym__error(SYM_EINVAL, "redistribute: the %s tensor's local part is not a "
                          "contiguous tensor of its layout's local shape", which);
    return SYM_OK;
}

static const char *where(const sym_tensor_t *t, char *buf, size_t len) {
    if (t->device == SYM_GPU) snprintf(buf, len, "GPU %d", t->device_index);
    else snprintf(buf, len, "the CPU");
    return buf;
}

int sym_redistribute(const sym_dtensor_t *from, sym_dtensor_t *to) {
    const sym_layout_t *a = &from->layout, *b = &to->layout;
    sym_mesh_t *m = a->mesh;
    if (!m || m != b->mesh)
        return sym__error(SYM_EINVAL, "redistribute: the two tensors are not on one mesh");
    int same_shape = a->ndim == b->ndim && from->local.dtype == to->local.dtype;
    for (int d = 0; same_shape && d < a->ndim; d++) same_shape = a->global[d] == b->global[d];
    if (!same_shape)
        return sym__error(SYM_EINVAL, "redistribute: the tensors differ in global shape or "
                                      "dtype");
    int rc;
    if ((rc = check(m, from->local.dtype, a->ndim, a->global, a->place)) ||
        (rc = check(m, to->local.dtype, b->ndim, b->global, b->place)) ||
        (rc = local_ok(from, "source")) || (rc = local_ok(to, "destination")))
        return rc;
    const sym_tensor_t *f = &from->local, *t = &to->local;
    if (f->device != t->device || (f->device == SYM_GPU && f->device_index != t->device_index)) {
        char fs[32], ts[32];
        return sym__error(SYM_EINVAL, "redistribute: the source's local part is on %s, the "
                          "destination's on %s: put both on one device", where(f, fs, sizeof fs),
                          where(t, ts, sizeof ts));
    }
    ctx_t c = {m, f->dtype, f->elem_size, a->ndim, a->global, NULL};
    if (f->device == SYM_GPU) {
        if (!(c.gpu = sym__cuda_backend())) return SYM_ENOENT;
        if ((rc = gpu_rc(&c, c.gpu->dev_use(f->device_index)))) return rc;
    }
    plan_step_t steps[2 * SYM_MESH_MAX_DIMS];
    int n = 0;
    if ((rc = plan(m, a->place, b->place, steps, &n))) return rc;
    if (n == 0) return mem_copy(&c, t->data, f->data, (size_t)sym_tensor_numel(f) * c.es);
    sym_placement_t cur[SYM_MESH_MAX_DIMS];
    memcpy(cur, a->place, sizeof cur);
    const void *src = from->local.data;
    void *owned = NULL; /* the intermediate src, when it is ours */
    for (int s = 0; s < n && !rc; s++) {
        void *dst = to->local.data;
        if (s < n - 1) {
            sym_placement_t next[SYM_MESH_MAX_DIMS];
            int64_t shape[SYM_MAX_DIMS];
            memcpy(next, cur, sizeof next);
            next[steps[s].k] = steps[s].to;
            local_shape(m, c.ndim, c.global, next, shape, NULL);
            if (!(dst = mem_alloc(&c, (size_t)prod(shape, 0, c.ndim) * c.es))) {
                rc = SYM_ENOMEM;
                break;
            }
        }
        rc = step(&c, cur, steps[s].k, steps[s].to, src, dst);
        cur[steps[s].k] = steps[s].to;
        mem_free(&c, owned);
        owned = dst == to->local.data ? NULL : dst;
        src = dst;
    }
    mem_free(&c, owned);
    return rc;
}
