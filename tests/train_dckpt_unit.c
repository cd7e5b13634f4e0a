/*
 * train_dckpt_unit — sharded checkpoints without PEs: the shard files, the
 * commit's manifest and the reader, for layouts the training loop does not
 * make yet (tensor- and ZeRO-style splits along any dimension).
 *
 * Each trial draws a tensor of 1 to 4 dimensions, fills it with random
 * floats, and splits it as a grid: every dimension cut at random points into
 * 1 to 3 parts, one box per writer (a TP or ZeRO layout of any shape), beside
 * a second tensor split by rows (sym_ckpt_slice_split, the DP layout). Every
 * writer's shard files are written as a PE's are, PE 0's commit merges them,
 * and the checkpoint must verify and give back, for random boxes, exactly the
 * elements drawn. Layouts that overlap or leave a gap are refused at the
 * commit; a flipped byte is found by the slice read and by verify, naming the
 * file.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <symtrain/symtrain.h>

#include "ckpt/ckpt_internal.h"
#include "test.h"

#define MAXP 81 /* 3^4 boxes */

static char dir[256];
static test_rng_t rng;

static void meta_for(int64_t step, int npes, sym_ckpt_meta_t *m) {
    memset(m, 0, sizeof *m);
    m->step = step;
    m->sample = step; /* epochs of 1000 steps of 1 sample */
    m->global_batch = 1;
    m->train_samples = 1000;
    m->world_size = npes;
    m->blas_threads = 1;
    m->seed = 7;
    m->params = 1;
    m->optim_steps = (uint64_t)step;
    snprintf(m->model, sizeof m->model, "unit");
    snprintf(m->activation, sizeof m->activation, "none");
    snprintf(m->optimizer, sizeof m->optimizer, "sgd");
    snprintf(m->dataset, sizeof m->dataset, "none");
}

static int64_t volume(int ndim, const int64_t *c) {
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) n *= c[d];
    return n;
}

/* Copy box (start, count) of the row-major global g (shape) into out. */
static void cut(const float *g, int ndim, const int64_t *shape, const int64_t *start,
                const int64_t *count, float *out) {
    int64_t n = volume(ndim, count), idx[SYM_MAX_DIMS];
    for (int64_t k = 0; k < n; k++) {
        int64_t r = k, off = 0;
        for (int d = ndim - 1; d >= 0; d--) {
            idx[d] = start[d] + r % count[d];
            r /= count[d];
        }
        for (int d = 0; d < ndim; d++) off = off * shape[d] + idx[d];
        out[k] = g[off];
    }
}

/* Write PE pe's shard files of `slices` into dir/stage, as its writer does. */
static void write_shard(const char *stage, int pe, sym_ckpt_slice_t *slices, int n) {
    char sdir[512], path[600];
    snprintf(sdir, sizeof sdir, "%s/%s", dir, stage);
    CHECK(mkdir(sdir, 0700) == 0 || errno == EEXIST, "mkdir %s", sdir);
    void *bin;
    size_t len;
    sym_jbuf_t idx = {0};
    CHECK(sym__ckpt_shard_files(pe, slices, n, &bin, &len, &idx) == 0, "%s", sym_last_error());
    snprintf(path, sizeof path, "%s/shard-%05d.bin", sdir, pe);
    CHECK(sym__ckpt_write_file(path, bin, len) == 0, "%s", sym_last_error());
    snprintf(path, sizeof path, "%s/shard-%05d.json", sdir, pe);
    CHECK(sym__ckpt_write_file(path, idx.buf, idx.len) == 0, "%s", sym_last_error());
    free(bin);
    sym__jbuf_free(&idx);
}

/* The grid: per dimension, cuts[d][0..k] with cuts[d][0] = 0, cuts[d][k] = shape. */
typedef struct {
    int k[SYM_MAX_DIMS];
    int64_t cuts[SYM_MAX_DIMS][4];
} grid_t;

static int grid_draw(int ndim, const int64_t *shape, grid_t *g) {
    int boxes = 1;
    for (int d = 0; d < ndim; d++) {
        int k = 1 + (int)(test_next(&rng) % 3);
        if (k > shape[d]) k = (int)shape[d];
        g->k[d] = k;
        g->cuts[d][0] = 0;
        g->cuts[d][k] = shape[d];
        /* k - 1 distinct interior cut points, increasing */
        for (int c = 1; c < k; c++) {
            int64_t lo = g->cuts[d][c - 1] + 1, hi = shape[d] - (k - c);
            g->cuts[d][c] = lo + (int64_t)(test_next(&rng) % (uint64_t)(hi - lo + 1));
        }
        boxes *= k;
    }
    return boxes;
}

static void grid_box(int ndim, const grid_t *g, int b, int64_t *start, int64_t *count) {
    for (int d = ndim - 1; d >= 0; d--) {
        int c = b % g->k[d];
        b /= g->k[d];
        start[d] = g->cuts[d][c];
        count[d] = g->cuts[d][c + 1] - g->cuts[d][c];
    }
}

static void check_trial(int trial) {
    sym_ckpt_slice_t a = {0}, r = {0};
    snprintf(a.name, sizeof a.name, "h.%d.attn.c_attn.weight", trial);
    snprintf(r.name, sizeof r.name, "exp_avg.h.%d.mlp.c_fc.weight", trial);
    a.dtype = r.dtype = SYM_DT_F32;
    a.ndim = 1 + (int)(test_next(&rng) % SYM_MAX_DIMS);
    r.ndim = 1 + (int)(test_next(&rng) % 2);
    for (int d = 0; d < a.ndim; d++) a.shape[d] = 1 + (int64_t)(test_next(&rng) % 7);
    for (int d = 0; d < r.ndim; d++) r.shape[d] = 1 + (int64_t)(test_next(&rng) % 9);
    int64_t na = volume(a.ndim, a.shape), nr = volume(r.ndim, r.shape);
    float *ga = malloc(sizeof(float) * (size_t)na), *gr = malloc(sizeof(float) * (size_t)nr);
    float *buf = malloc(sizeof(float) * (size_t)(na > nr ? na : nr));
    float *part[MAXP][2];
    CHECK(ga && gr && buf, "out of memory");
    test_fill(ga, sizeof(float) * (size_t)na, &rng);
    test_fill(gr, sizeof(float) * (size_t)nr, &rng);
    grid_t g;
    int npes = grid_draw(a.ndim, a.shape, &g);
    char stage[64];
    int64_t step = trial + 1;
    snprintf(stage, sizeof stage, ".tmp-step-%08lld.%ld", (long long)step, (long)getpid());
    for (int pe = 0; pe < npes; pe++) {
        sym_ckpt_slice_t s[2] = {a, r};
        grid_box(a.ndim, &g, pe, s[0].start, s[0].count);
        sym_ckpt_slice_split(&s[1], pe, npes);
        for (int k = 0; k < 2; k++) {
            part[pe][k] = malloc(sizeof(float) * (size_t)(sym_ckpt_slice_elems(&s[k]) + 1));
            cut(k ? gr : ga, s[k].ndim, s[k].shape, s[k].start, s[k].count, part[pe][k]);
            s[k].data = part[pe][k];
        }
        write_shard(stage, pe, s, 2);
    }
    sym_ckpt_meta_t m;
    meta_for(step, npes, &m);
    char path[600];
    CHECK(sym__ckpt_commit(dir, stage, 1000, &m, npes, "grid", path, sizeof path) == 0, "%s",
          sym_last_error());
    sym_dckpt_t *ck;
    CHECK(sym_dckpt_open(path, &ck) == 0, "%s", sym_last_error());
    CHECK_EQ_INT(sym_dckpt_num_files(ck), npes);
    CHECK_EQ_INT(sym_dckpt_version(ck), SYM_CKPT_SHARDED_VERSION);
    for (int i = 0; i < npes; i++) CHECK(sym_dckpt_verify_file(ck, i) == 0, "%s", sym_last_error());
    CHECK(sym_dckpt_verify_slices(ck) == 0, "%s", sym_last_error());
    /* random boxes of both, against the drawn tensors */
    for (int q = 0; q < 20; q++) {
        sym_ckpt_slice_t w = q & 1 ? r : a;
        const float *gl = q & 1 ? gr : ga;
        for (int d = 0; d < w.ndim; d++) {
            w.start[d] = (int64_t)(test_next(&rng) % (uint64_t)w.shape[d]);
            w.count[d] = 1 + (int64_t)(test_next(&rng) % (uint64_t)(w.shape[d] - w.start[d]));
        }
        int64_t n = sym_ckpt_slice_elems(&w);
        float *want = malloc(sizeof(float) * (size_t)n);
        cut(gl, w.ndim, w.shape, w.start, w.count, want);
        memset(buf, 0xff, sizeof(float) * (size_t)n); /* poisoned */
        w.data = buf;
        CHECK(sym_dckpt_read(ck, &w) == 0, "%s", sym_last_error());
        CHECK(memcmp(buf, want, sizeof(float) * (size_t)n) == 0,
              "trial %d: a box of %s read back wrong (%d boxes)", trial, w.name, npes);
        free(want);
    }
    /* the wrong shape is named */
    sym_ckpt_slice_t bad = a;
    bad.shape[0]++;
    sym_ckpt_slice_whole(&bad);
    bad.data = buf;
    CHECK(sym_dckpt_read(ck, &bad) == SYM_EMISMATCH, "a tensor of another shape was read");
    sym_dckpt_close(ck);

    /* the same boxes twice (overlap) or one left out (a gap): refused */
    if (npes > 1) {
        for (int mode = 0; mode < 2; mode++) {
            snprintf(stage, sizeof stage, ".tmp-step-%08lld.%ld", (long long)step + 5000 + mode,
                     (long)getpid());
            for (int pe = 0; pe < npes; pe++) {
                sym_ckpt_slice_t s = a;
                grid_box(a.ndim, &g, mode == 0 && pe == 1 ? 0 : pe, s.start, s.count);
                s.data = part[mode == 0 && pe == 1 ? 0 : pe][0];
                write_shard(stage, pe, &s, mode == 1 && pe == npes - 1 ? 0 : 1);
            }
            meta_for(step + 5000 + mode, npes, &m);
            CHECK(sym__ckpt_commit(dir, stage, 1000, &m, npes, "grid", path, sizeof path) == SYM_EINVAL,
                  "a layout with %s was committed", mode ? "a gap" : "an overlap");
            CHECK(strstr(sym_last_error(), mode ? "elements" : "overlap"), "%s", sym_last_error());
            char p2[600];
            snprintf(p2, sizeof p2, "%s/step-%08lld", dir, (long long)step + 5000 + mode);
            struct stat st;
            CHECK(stat(p2, &st) != 0, "a refused checkpoint appeared");
        }
    }
    for (int pe = 0; pe < npes; pe++) free(part[pe][0]), free(part[pe][1]);
    free(ga);
    free(gr);
    free(buf);
}

/* A flipped byte in one shard: the read of a box that overlaps it and verify fail, naming it. */
static void check_damage(void) {
    char path[600], file[700];
    snprintf(path, sizeof path, "%s/step-%08d", dir, 1);
    sym_dckpt_t *ck;
    CHECK(sym_dckpt_open(path, &ck) == 0, "%s", sym_last_error());
    int nf = sym_dckpt_num_files(ck);
    const char *n;
    char name[64];
    sym_dckpt_file(ck, nf - 1, &n, NULL, NULL, NULL);
    snprintf(name, sizeof name, "%s", n); /* n is the checkpoint's */
    snprintf(file, sizeof file, "%s/%s", path, name);
    sym_dckpt_close(ck);
    FILE *f = fopen(file, "r+b");
    CHECK(f != NULL, "open %s", file);
    int c = fgetc(f);
    fseek(f, 0, SEEK_SET);
    fputc(c ^ 0x20, f);
    fclose(f);
    CHECK(sym_dckpt_open(path, &ck) == 0, "%s", sym_last_error());
    CHECK(sym_dckpt_verify_file(ck, nf - 1) == SYM_ECORRUPT, "verify missed a flipped byte");
    CHECK(strstr(sym_last_error(), name), "%s", sym_last_error());
    CHECK(sym_dckpt_verify_slices(ck) == SYM_ECORRUPT, "the slice CRCs missed a flipped byte");
    CHECK(strstr(sym_last_error(), name), "%s", sym_last_error());
    sym_dckpt_close(ck);
}

int main(void) {
    uint64_t seed = test_seed();
    printf("train_dckpt_unit: seed %llu\n", (unsigned long long)seed);
    rng = test_rng(seed, 18);
    test_mkdtemp(dir, sizeof dir, "train_dckpt_unit");
    for (int t = 0; t < 60; t++) check_trial(t);
    check_damage();
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0, "cleanup");
    printf("train_dckpt_unit: ok (60 random layouts)\n");
    return 0;
}
