/*
 * train_dtensor — the device mesh and sym_redistribute, on every PE of the job.
 *
 * For meshes of 1, 2 and 3 dimensions over the PEs (tp=n, dp=2,tp=n/2,
 * dp=n/2,tp=1,pp=2, ...), tensors of uneven shapes (7x5x3, 3x10 — fewer rows
 * than PEs, so some shards are empty — and 13), every dtype, and pairs of
 * placement lists (every pair on a 1-D mesh; on larger meshes every change of
 * one mesh dimension plus random changes of several, drawn from the shared
 * seed), a tensor is filled with this PE's part of known data, redistributed,
 * and every element of the result compared with the value every PE computes
 * for itself from the seed. With Partial placements each PE of a row holds a
 * different part, so on a 2x2 mesh a redistribution along one dimension runs
 * while the other dimension's rows hold different data.
 *
 * The data are k * 2^e with |k| < 128 and |e| <= 6: exact in every dtype, and
 * sums of a few of them are exact in fp32, so the reference is exact: reduce
 * one mesh dimension at a time in increasing order, in fp32, divide for an
 * average, round to the dtype. A bf16 or fp16 sum accumulated in its own type
 * rounds on the way (its exponents differ), which the comparison catches.
 * Results are poisoned before and compared exactly.
 *
 * Then the errors: bad mesh specs, a tensor dimension sharded twice, a Partial
 * int32 tensor, Partial(sum) -> Partial(avg), a wrapped tensor of the wrong
 * shape; and a mesh over part of the job, which needs scratch attached.
 *
 * Built with SYM_TEST_GPU (train_dtensor_gpu, tests/gpu.cmake) the same cases
 * run on GPU tensors: the source copied to the GPU, the destination a GPU
 * buffer poisoned the same way, both wrapped (sym_dtensor_wrap), the result
 * copied back and compared exactly; a mesh over part of the job then needs
 * no scratch (the GPU collectives use their own working memory), and a
 * source on the GPU with a destination on the CPU is refused. Larger meshes
 * draw 40 + 20 pairs a shape and dtype there, not 120 + 60.
 */
#include <math.h>
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <symtrain/symtrain.h>

#include "test.h"
#ifdef SYM_TEST_GPU
#include "gpu_test.h"
#define GPU_ONLY(x) x
#else
#define GPU_ONLY(x)
#endif

typedef struct {
    int ndim;
    int64_t g[SYM_MAX_DIMS];
} shape_t;

static const shape_t shapes[] = {{3, {7, 5, 3}}, {2, {3, 10}}, {1, {13}}};
static const sym_dtype_t dtypes[] = {SYM_DT_F32, SYM_DT_BF16, SYM_DT_F16, SYM_DT_I32};

static uint64_t seed;
static long checked, cases;

/* ---- the reference ---- */

/* The test's own split rule: the first len % p members hold one more. */
static void split(int64_t len, int p, int i, int64_t *off, int64_t *cnt) {
    *cnt = len / p + (i < len % p);
    *off = i * (len / p) + (i < len % p ? i : len % p);
}

static uint64_t mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* The part held at partial coordinates `pc` (coordinate per mesh dim, -1 where
 * not partial) of element `lin` of case `id`, as a float k/8 or an int32. */
static double part(uint64_t id, int64_t lin, const int *pc, int nd, sym_dtype_t dt) {
    uint64_t h = mix(seed ^ mix(id * 1000003u + (uint64_t)lin));
    for (int k = 0; k < nd; k++) h = mix(h ^ (uint64_t)(pc[k] + 2) << (8 * k));
    if (dt == SYM_DT_I32) return (double)(int32_t)h;
    return ldexp((double)((int)(h % 255) - 127), (int)((h >> 20) % 13) - 6);
}

/* A float rounded to the dtype, as a float. */
static float round_dt(float v, sym_dtype_t dt) {
    if (dt == SYM_DT_BF16) return sym_bf16_to_f32(sym_f32_to_bf16(v));
    if (dt == SYM_DT_F16) return sym_f16_to_f32(sym_f32_to_f16(v));
    return v;
}

typedef struct {
    sym_mesh_t *m;
    int nd, size[SYM_MESH_MAX_DIMS], coord[SYM_MESH_MAX_DIMS];
} mesh_info_t;

/* What to's local element at global index g (linear lin) should be, on this PE. */
static double expect(const mesh_info_t *mi, uint64_t id, sym_dtype_t dt, const shape_t *s,
                     const int64_t *g,
                     int64_t lin, const sym_placement_t *from, const sym_placement_t *to) {
    int nd = mi->nd;
    if (dt == SYM_DT_I32) { /* no partials: the data only move */
        int pc[SYM_MESH_MAX_DIMS] = {-1, -1, -1};
        return part(id, lin, pc, nd, dt);
    }
    /* vals over every combination of the coordinates of from's partial dims
     * that are reduced (dims kept partial take this PE's coordinate) */
    int red[SYM_MESH_MAX_DIMS], nred = 0;
    for (int k = 0; k < nd; k++)
        if (from[k].kind == SYM_PARTIAL && to[k].kind != SYM_PARTIAL) red[nred++] = k;
    int combos = 1;
    for (int r = 0; r < nred; r++) combos *= mi->size[red[r]];
    float vals[64];
    for (int t = 0; t < combos; t++) {
        int pc[SYM_MESH_MAX_DIMS], rem = t;
        for (int k = 0; k < nd; k++) pc[k] = from[k].kind == SYM_PARTIAL ? mi->coord[k] : -1;
        for (int r = nred - 1; r >= 0; r--) { /* the last reduced dim varies fastest */
            pc[red[r]] = rem % mi->size[red[r]];
            rem /= mi->size[red[r]];
        }
        vals[t] = (float)part(id, lin, pc, nd, dt);
    }
    int have = combos; /* reduce red[0], then red[1], ...: each collapses a factor */
    for (int r = 0; r < nred; r++) {
        int p = mi->size[red[r]], inner = have / p;
        float out[64];
        for (int rest = 0; rest < inner; rest++) {
            float sum = 0;
            for (int c = 0; c < p; c++) sum += vals[c * inner + rest];
            if (from[red[r]].op == SYM_PARTIAL_AVG) sum = sum / (float)p;
            out[rest] = round_dt(sum, dt);
        }
        have = inner;
        memcpy(vals, out, sizeof(float) * (size_t)have);
    }
    float v = vals[0];
    for (int k = 0; k < nd; k++) /* partial dims the target adds: a SUM keeps one copy */
        if (to[k].kind == SYM_PARTIAL && from[k].kind != SYM_PARTIAL &&
            to[k].op == SYM_PARTIAL_SUM) {
            int holds = mi->coord[k] == 0;
            if (from[k].kind == SYM_SHARD) {
                int64_t o, c;
                split(s->g[from[k].dim], mi->size[k], mi->coord[k], &o, &c);
                holds = g[from[k].dim] >= o && g[from[k].dim] < o + c;
            }
            if (!holds) v = 0;
        }
    return v;
}

/* This PE's local shape and offset at pl, by the test's own rule. */
static void my_part(const mesh_info_t *mi, const shape_t *s, const sym_placement_t *pl,
                    int64_t *shape, int64_t *off) {
    for (int d = 0; d < s->ndim; d++) {
        shape[d] = s->g[d];
        off[d] = 0;
    }
    for (int k = 0; k < mi->nd; k++)
        if (pl[k].kind == SYM_SHARD)
            split(s->g[pl[k].dim], mi->size[k], mi->coord[k], &off[pl[k].dim],
                  &shape[pl[k].dim]);
}

/* Walk the local elements: index l -> global index g, linear global index. */
static int64_t next_global(const shape_t *s, const int64_t *shape, const int64_t *off, int64_t l,
                           int64_t *g) {
    int64_t lin = 0;
    for (int d = s->ndim - 1; d >= 0; d--) {
        g[d] = off[d] + l % shape[d];
        l /= shape[d];
    }
    for (int d = 0; d < s->ndim; d++) lin = lin * s->g[d] + g[d];
    return lin;
}

static double load(const void *p, sym_dtype_t dt, int64_t i) {
    if (dt == SYM_DT_F32) return ((const float *)p)[i];
    if (dt == SYM_DT_BF16) return sym_bf16_to_f32(((const uint16_t *)p)[i]);
    if (dt == SYM_DT_F16) return sym_f16_to_f32(((const uint16_t *)p)[i]);
    return ((const int32_t *)p)[i];
}

static void store(void *p, sym_dtype_t dt, int64_t i, double v) {
    if (dt == SYM_DT_F32) ((float *)p)[i] = (float)v;
    else if (dt == SYM_DT_BF16) ((uint16_t *)p)[i] = sym_f32_to_bf16((float)v);
    else if (dt == SYM_DT_F16) ((uint16_t *)p)[i] = sym_f32_to_f16((float)v);
    else ((int32_t *)p)[i] = (int32_t)v;
}

/* ---- one case ---- */

static void run_case(const mesh_info_t *mi, sym_pool_t *pool, const shape_t *s, sym_dtype_t dt,
                     const sym_placement_t *from, const sym_placement_t *to) {
    uint64_t id = (uint64_t)++cases;
    char a[64], b[64];
    sym_placements_str(from, mi->nd, a, sizeof a);
    sym_placements_str(to, mi->nd, b, sizeof b);
    sym_dtensor_t x, y;
    CHECK(sym_dtensor_alloc(&x, mi->m, dt, s->ndim, s->g, from, pool) == 0, "alloc %s: %s", a,
          sym_last_error());
    if (id % 2) { /* the target over memory of the caller's */
        sym_tensor_t t;
        int64_t ls[SYM_MAX_DIMS];
        CHECK(sym_dtensor_local_shape(mi->m, dt, s->ndim, s->g, to, ls, NULL) == 0, "%s",
              sym_last_error());
        CHECK(sym_tensor_alloc_dt(&t, pool, dt, s->ndim, ls) == 0, "%s", sym_last_error());
        CHECK(sym_dtensor_wrap(&y, mi->m, &t, s->ndim, s->g, to) == 0, "wrap %s: %s", b,
              sym_last_error());
        y.local.pool = pool; /* freed with y below */
    } else {
        CHECK(sym_dtensor_alloc(&y, mi->m, dt, s->ndim, s->g, to, pool) == 0, "alloc %s: %s", b,
              sym_last_error());
    }
    int64_t shape[SYM_MAX_DIMS], off[SYM_MAX_DIMS], g[SYM_MAX_DIMS];
    my_part(mi, s, from, shape, off);
    int64_t n = sym_tensor_numel(&x.local);
    for (int d = 0; d < s->ndim; d++)
        CHECK(x.local.shape[d] == shape[d] && x.layout.offset[d] == off[d],
              "%s: dim %d holds %lld at %lld, expected %lld at %lld", a, d,
              (long long)x.local.shape[d], (long long)x.layout.offset[d], (long long)shape[d],
              (long long)off[d]);
    for (int64_t l = 0; l < n; l++) { /* this PE's part: its own partial coordinates */
        int64_t lin = next_global(s, shape, off, l, g);
        int pc[SYM_MESH_MAX_DIMS];
        for (int k = 0; k < mi->nd; k++) pc[k] = from[k].kind == SYM_PARTIAL ? mi->coord[k] : -1;
        store(x.local.data, dt, l, part(id, lin, pc, mi->nd, dt));
    }
    int64_t m = sym_tensor_numel(&y.local);
    memset(y.local.data, 0xff, (size_t)m * y.local.elem_size); /* NaN / -1: poison */
#ifdef SYM_TEST_GPU
    size_t xb = (size_t)n * x.local.elem_size, yb = (size_t)m * y.local.elem_size;
    void *xd, *yd;
    CUDA(cudaMalloc(&xd, xb + 16));
    CUDA(cudaMalloc(&yd, yb + 16));
    CUDA(cudaMemcpy(xd, x.local.data, xb, cudaMemcpyHostToDevice));
    CUDA(cudaMemset(yd, 0xff, yb));
    sym_dtensor_t xg, yg;
    sym_tensor_t tx = sym_tensor_view_dt(xd, dt, s->ndim, x.local.shape),
                 ty = sym_tensor_view_dt(yd, dt, s->ndim, y.local.shape);
    tx.device = ty.device = SYM_GPU;
    tx.device_index = ty.device_index = shmemx_gpu_device();
    CHECK(sym_dtensor_wrap(&xg, mi->m, &tx, s->ndim, s->g, from) == 0 &&
          sym_dtensor_wrap(&yg, mi->m, &ty, s->ndim, s->g, to) == 0, "wrap: %s",
          sym_last_error());
    int rc = sym_redistribute(&xg, &yg);
    CUDA(cudaMemcpy(y.local.data, yd, yb, cudaMemcpyDeviceToHost));
    CUDA(cudaMemcpy(x.local.data, xd, xb, cudaMemcpyDeviceToHost));
    CUDA(cudaFree(xd));
    CUDA(cudaFree(yd));
#else
    int rc = sym_redistribute(&x, &y);
#endif
    CHECK(rc == 0, "%s -> %s (%s, %dD): %s", a, b, sym_dtype_name(dt), s->ndim, sym_last_error());
    my_part(mi, s, to, shape, off);
    for (int d = 0; d < s->ndim; d++)
        CHECK(y.local.shape[d] == shape[d], "%s: dim %d holds %lld, expected %lld", b, d,
              (long long)y.local.shape[d], (long long)shape[d]);
    for (int64_t l = 0; l < m; l++) {
        int64_t lin = next_global(s, shape, off, l, g);
        double want = expect(mi, id, dt, s, g, lin, from, to), got = load(y.local.data, dt, l);
        CHECK(got == want, "%s -> %s (%s, shape %lldx%lldx%lld), local %lld (global %lld): got "
              "%.9g, expected %.9g", a, b, sym_dtype_name(dt), (long long)s->g[0],
              (long long)(s->ndim > 1 ? s->g[1] : 1), (long long)(s->ndim > 2 ? s->g[2] : 1),
              (long long)l, (long long)lin, got, want);
        checked++;
    }
    /* from is untouched */
    my_part(mi, s, from, shape, off);
    for (int64_t l = 0; l < n; l++) {
        int64_t lin = next_global(s, shape, off, l, g);
        int pc[SYM_MESH_MAX_DIMS];
        for (int k = 0; k < mi->nd; k++) pc[k] = from[k].kind == SYM_PARTIAL ? mi->coord[k] : -1;
        double want = part(id, lin, pc, mi->nd, dt);
        CHECK(load(x.local.data, dt, l) == want, "%s -> %s changed the source", a, b);
    }
    sym_dtensor_free(&x);
    sym_dtensor_free(&y);
}

/* ---- placement lists ---- */

/* Option o of a mesh dim for an ndim tensor: R, S(0..ndim-1), P(sum), P(avg). */
static sym_placement_t option(int o, int ndim) {
    if (o == 0) return sym_replicate();
    if (o <= ndim) return sym_shard(o - 1);
    return sym_partial(o == ndim + 1 ? SYM_PARTIAL_SUM : SYM_PARTIAL_AVG);
}

static int valid(const sym_placement_t *pl, int nd, sym_dtype_t dt) {
    for (int k = 0; k < nd; k++) {
        if (pl[k].kind == SYM_PARTIAL && dt == SYM_DT_I32) return 0;
        for (int j = 0; j < k; j++)
            if (pl[k].kind == SYM_SHARD && pl[j].kind == SYM_SHARD && pl[k].dim == pl[j].dim)
                return 0;
    }
    return 1;
}

static int convertible(const sym_placement_t *a, const sym_placement_t *b, int nd) {
    for (int k = 0; k < nd; k++)
        if (a[k].kind == SYM_PARTIAL && b[k].kind == SYM_PARTIAL && a[k].op != b[k].op) return 0;
    return 1;
}

static void decode(int idx, int nopt, int nd, int ndim, sym_placement_t *pl) {
    for (int k = nd - 1; k >= 0; k--) {
        pl[k] = option(idx % nopt, ndim);
        idx /= nopt;
    }
}

static void run_mesh(const char *spec, sym_pool_t *pool) {
    mesh_info_t mi;
    CHECK(sym_mesh_create(SHMEM_TEAM_WORLD, spec, &mi.m) == 0, "mesh %s: %s", spec,
          sym_last_error());
    mi.nd = sym_mesh_ndims(mi.m);
    for (int k = 0; k < mi.nd; k++) {
        mi.size[k] = sym_mesh_size(mi.m, k);
        mi.coord[k] = sym_mesh_coord(mi.m, k);
        shmem_team_t t = sym_mesh_team(mi.m, k);
        CHECK(shmem_team_n_pes(t) == mi.size[k] && shmem_team_my_pe(t) == mi.coord[k],
              "%s: the %s team has %d PEs, I am %d; expected %d and %d", spec,
              sym_mesh_name(mi.m, k), shmem_team_n_pes(t), shmem_team_my_pe(t), mi.size[k],
              mi.coord[k]);
    }
    /* the coordinates spell the team PE number, the last dimension fastest */
    int r = 0;
    for (int k = 0; k < mi.nd; k++) r = r * mi.size[k] + mi.coord[k];
    CHECK(r == shmem_my_pe(), "%s: coordinates give PE %d", spec, r);
    long before = cases;
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
        for (size_t di = 0; di < sizeof dtypes / sizeof dtypes[0]; di++) {
            const shape_t *s = &shapes[si];
            sym_dtype_t dt = dtypes[di];
            int nopt = s->ndim + 3, total = 1;
            for (int k = 0; k < mi.nd; k++) total *= nopt;
            test_rng_t rng = test_rng(seed, si * 16 + di);
            /* 1-D: every pair. Larger meshes: 120 pairs that change one mesh dimension
             * and 60 that change any (on the GPU 40 and 20), drawn afresh for every
             * shape and dtype. */
            int single = 0, multi = 0, want1 = 120;
            GPU_ONLY(want1 = 40;)
            for (long t = 0; t < (mi.nd == 1 ? (long)total * total : 100000); t++) {
                if (mi.nd > 1 && single >= want1 && multi >= want1 / 2) break;
                sym_placement_t a[SYM_MESH_MAX_DIMS], b[SYM_MESH_MAX_DIMS];
                if (mi.nd == 1) {
                    decode((int)(t / total), nopt, 1, s->ndim, a);
                    decode((int)(t % total), nopt, 1, s->ndim, b);
                } else {
                    decode((int)(test_next(&rng) % (uint64_t)total), nopt, mi.nd, s->ndim, a);
                    int one = single < want1;
                    if (one) {
                        memcpy(b, a, sizeof b);
                        b[test_next(&rng) % (uint64_t)mi.nd] =
                            option((int)(test_next(&rng) % (uint64_t)nopt), s->ndim);
                    } else {
                        decode((int)(test_next(&rng) % (uint64_t)total), nopt, mi.nd, s->ndim,
                               b);
                    }
                    if (!valid(a, mi.nd, dt) || !valid(b, mi.nd, dt) ||
                        !convertible(a, b, mi.nd))
                        continue;
                    if (one) single++;
                    else multi++;
                }
                if (!valid(a, mi.nd, dt) || !valid(b, mi.nd, dt) || !convertible(a, b, mi.nd))
                    continue;
                run_case(&mi, pool, s, dt, a, b);
            }
        }
    /* larger than the reductions' chunk and the first scratch: grows it */
    const shape_t big = {2, {37, 1031}};
    sym_placement_t a[SYM_MESH_MAX_DIMS], b[SYM_MESH_MAX_DIMS];
    for (int k = 0; k < mi.nd; k++) a[k] = b[k] = sym_replicate();
    a[mi.nd - 1] = sym_partial(SYM_PARTIAL_AVG);
    b[mi.nd - 1] = sym_shard(1);
    run_case(&mi, pool, &big, SYM_DT_BF16, a, b);
    a[mi.nd - 1] = sym_shard(0);
    run_case(&mi, pool, &big, SYM_DT_F32, b, a);
    b[mi.nd - 1] = sym_replicate();
    run_case(&mi, pool, &big, SYM_DT_F16, a, b);
    if (shmem_my_pe() == 0)
        printf("train_dtensor: mesh %-16s %5ld redistributions checked\n", spec, cases - before);
    sym_mesh_destroy(mi.m);
}

/* ---- errors and the sub-team mesh ---- */

static void check_errors(sym_pool_t *pool) {
    int n = shmem_n_pes();
    sym_mesh_t *m;
    char spec[64];
    snprintf(spec, sizeof spec, "tp=%d,dp=2", n);
    CHECK(sym_mesh_create(SHMEM_TEAM_WORLD, spec, &m) == SYM_EINVAL && m == NULL, "%s", spec);
    CHECK(strstr(sym_last_error(), "multiply to") != NULL, "%s", sym_last_error());
    CHECK(sym_mesh_create(SHMEM_TEAM_WORLD, "xp=1", &m) == SYM_EINVAL, "xp=1 accepted");
    CHECK(strstr(sym_last_error(), "dp, tp, pp") != NULL, "%s", sym_last_error());
    CHECK(sym_mesh_create(SHMEM_TEAM_WORLD, "tp=1,tp=1", &m) == SYM_EINVAL, "tp twice");
    CHECK(sym_mesh_create(SHMEM_TEAM_WORLD, "tp=0", &m) == SYM_EINVAL, "tp=0 accepted");
    CHECK(sym_mesh_create(SHMEM_TEAM_WORLD, "", &m) == SYM_EINVAL, "an empty spec accepted");

    snprintf(spec, sizeof spec, "dp=1,tp=%d", n);
    CHECK(sym_mesh_create(SHMEM_TEAM_WORLD, spec, &m) == 0, "%s: %s", spec, sym_last_error());
    int64_t g[2] = {6, 4};
    sym_dtensor_t x, y;
    sym_placement_t twice[2] = {sym_shard(0), sym_shard(0)};
    CHECK(sym_dtensor_alloc(&x, m, SYM_DT_F32, 2, g, twice, pool) == SYM_EINVAL, "S(0),S(0)");
    CHECK(strstr(sym_last_error(), "over two mesh dimensions") != NULL, "%s", sym_last_error());
    sym_placement_t pint[2] = {sym_replicate(), sym_partial(SYM_PARTIAL_SUM)};
    CHECK(sym_dtensor_alloc(&x, m, SYM_DT_I32, 2, g, pint, pool) == SYM_EINVAL, "int32 Partial");
    sym_placement_t s2[2] = {sym_replicate(), sym_shard(2)};
    CHECK(sym_dtensor_alloc(&x, m, SYM_DT_F32, 2, g, s2, pool) == SYM_EINVAL, "S(2) of 2-D");
    sym_placement_t ps[2] = {sym_partial(SYM_PARTIAL_SUM), sym_replicate()};
    sym_placement_t pa[2] = {sym_partial(SYM_PARTIAL_AVG), sym_replicate()};
    CHECK(sym_dtensor_alloc(&x, m, SYM_DT_F32, 2, g, ps, pool) == 0, "%s", sym_last_error());
    CHECK(sym_dtensor_alloc(&y, m, SYM_DT_F32, 2, g, pa, pool) == 0, "%s", sym_last_error());
    CHECK(sym_redistribute(&x, &y) == SYM_EINVAL, "P(sum) -> P(avg) accepted");
    CHECK(strstr(sym_last_error(), "Partial(sum) and Partial(avg)") != NULL, "%s",
          sym_last_error());
    sym_dtensor_free(&y);
    /* a wrapped local tensor of the wrong shape */
    float buf[24];
    sym_placement_t sh[2] = {sym_replicate(), sym_shard(1)};
    int64_t wrong[2] = {6, 4};
    sym_tensor_t t = sym_tensor_view(buf, 2, wrong);
    if (n > 1) {
        CHECK(sym_dtensor_wrap(&y, m, &t, 2, g, sh) == SYM_EINVAL, "a wrong local shape");
        CHECK(strstr(sym_last_error(), "along dimension 1") != NULL, "%s", sym_last_error());
    }
    sym_dtensor_free(&x);
    sym_mesh_destroy(m);
}

/* A mesh over PEs 0 .. n-2 (PE n-1 not in it): without scratch attached a
 * redistribution says what to attach; with it, it works. */
static void check_subteam(sym_pool_t *pool) {
    int n = shmem_n_pes(), me = shmem_my_pe();
    size_t bytes = 4096;
    void *scratch = shmem_malloc(bytes); /* every PE of the job */
    shmem_team_t team;
    CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, n - 1, NULL, 0, &team) == 0,
          "split");
    if (me < n - 1) {
        sym_mesh_t *m;
        char spec[16];
        snprintf(spec, sizeof spec, "tp=%d", n - 1);
        CHECK(sym_mesh_create(team, spec, &m) == 0, "%s: %s", spec, sym_last_error());
        mesh_info_t mi = {m, 1, {n - 1}, {me}};
        const shape_t s = {2, {5, 9}};
        sym_placement_t a[1] = {sym_shard(1)}, b[1] = {sym_shard(0)}, r[1] = {sym_replicate()};
        sym_dtensor_t x, y;
        CHECK(sym_dtensor_alloc(&x, m, SYM_DT_F32, 2, s.g, a, pool) == 0, "%s", sym_last_error());
        CHECK(sym_dtensor_alloc(&y, m, SYM_DT_F32, 2, s.g, r, pool) == 0, "%s", sym_last_error());
#ifndef SYM_TEST_GPU
        CHECK(sym_redistribute(&x, &y) == SYM_ENOMEM, "a sub-team mesh grew its scratch");
        CHECK(strstr(sym_last_error(), "sym_mesh_attach_scratch") != NULL, "%s",
              sym_last_error());
        CHECK(sym_mesh_attach_scratch(m, scratch, bytes) == 0, "%s", sym_last_error());
#else /* no scratch needed; a GPU source and a CPU destination refused */
        void *xd;
        CUDA(cudaMalloc(&xd, sizeof(float) * 64));
        sym_tensor_t tx = sym_tensor_view(xd, 2, x.local.shape);
        tx.device = SYM_GPU;
        tx.device_index = shmemx_gpu_device();
        sym_dtensor_t xg;
        CHECK(sym_dtensor_wrap(&xg, m, &tx, 2, s.g, a) == 0, "%s", sym_last_error());
        CHECK(sym_redistribute(&xg, &y) == SYM_EINVAL, "GPU -> CPU accepted");
        CHECK(strstr(sym_last_error(), "put both on one device") != NULL, "%s",
              sym_last_error());
        CUDA(cudaFree(xd));
#endif
        sym_dtensor_free(&x);
        sym_dtensor_free(&y);
        run_case(&mi, pool, &s, SYM_DT_F32, a, b);
        run_case(&mi, pool, &s, SYM_DT_BF16, a, r);
        sym_placement_t p[1] = {sym_partial(SYM_PARTIAL_AVG)};
        run_case(&mi, pool, &s, SYM_DT_F16, p, b);
        run_case(&mi, pool, &s, SYM_DT_F32, p, r);
        sym_mesh_destroy(m);
        shmem_team_destroy(team);
    }
    shmem_free(scratch);
}

int main(void) {
    shmem_init();
    GPU_ONLY(gpu_test_skip_if_no_gpu(shmemx_gpu_init());)
    int me = shmem_my_pe(), n = shmem_n_pes();
    seed = test_pe_start("train_dtensor");
    sym_pool_t *pool;
    CHECK(sym_pool_create("dtensor", 4 << 20, 0, &pool) == 0, "%s", sym_last_error());

    char spec[64];
    snprintf(spec, sizeof spec, "tp=%d", n);
    run_mesh(spec, pool);
    if (n % 2 == 0) {
        snprintf(spec, sizeof spec, "dp=2,tp=%d", n / 2);
        run_mesh(spec, pool);
        snprintf(spec, sizeof spec, "dp=%d,tp=1,pp=2", n / 2);
        run_mesh(spec, pool);
    } else {
        snprintf(spec, sizeof spec, "pp=%d,dp=1", n);
        run_mesh(spec, pool);
        snprintf(spec, sizeof spec, "dp=1,tp=%d,pp=1", n);
        run_mesh(spec, pool);
    }
    check_errors(pool);
    if (n >= 2) check_subteam(pool);
    sym_pool_destroy(pool);
    if (me == 0) printf("train_dtensor: %ld redistributions, %ld elements checked%s: ok\n",
                        cases, checked, GPU_ONLY(" on the GPU") "");
    GPU_ONLY(shmemx_gpu_finalize();)
    shmem_finalize();
    return 0;
}
