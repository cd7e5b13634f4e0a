/*
 * coll_shmemx — the other training collectives: reduce-scatter, all-gather and
 * broadcast for every dtype (and op), odd counts, private and symmetric
 * buffers, in place; the non-blocking forms overlapping with computation and
 * mixed with blocking calls; a split team; and the error returns (sizes whose
 * byte count overflows size_t among them).
 */
#include <stdlib.h>

#include "coll_common.h"

static uint64_t seed;

static void *buffer(int symmetric, size_t bytes) {
    char *p = symmetric ? shmem_malloc(bytes ? bytes : 1) : malloc(bytes ? bytes : 1);
    CHECK(p, "out of memory");
    return p;
}
static void release(int symmetric, void *p) {
    if (symmetric)
        shmem_free(p);
    else
        free(p);
}

static void test_reduce_scatter(void) {
    int me = shmem_my_pe(), n = shmem_n_pes();
    size_t counts[] = {0, 1, (size_t)n - 1, (size_t)n * 3 + 1, 5003, 700001};
    for (int dt = 0; dt < SHMEMX_DTYPE_COUNT; dt++)
        for (int op = 0; op < SHMEMX_OP_COUNT; op++)
            for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++)
                for (int sym = 0; sym < 2; sym++) {
                    size_t count = counts[c], es = shmemx_dtype_size(dt), lo, len;
                    if (count > 100000 && (op != SHMEMX_SUM || dt > SHMEMX_FLOAT64)) continue;
                    shmemx_block_range(count, n, me, &lo, &len);
                    /* shmem_malloc needs the same size everywhere: the largest block */
                    size_t maxblk = (count + (size_t)n - 1) / (size_t)n;
                    char *src = buffer(sym, count * es), *dst = buffer(sym, maxblk * es);
                    double v, terms[64];
                    char tmp[16];
                    uint64_t s = seed + c * 131 + (uint64_t)dt * 7 + (uint64_t)op;
                    for (size_t i = 0; i < count; i++)
                        gen_elem(s, me, i, dt, op, src + i * es, &v);
                    memset(dst, 0x5A, len * es);
                    CHECK_EQ_INT(shmemx_reduce_scatter(SHMEM_TEAM_WORLD, dst, src, count, dt, op), 0);
                    char what[96];
                    snprintf(what, sizeof what, "reduce_scatter %s %s count %zu %s", dtype_name[dt],
                             op_name[op], count, sym ? "symmetric" : "private");
                    for (size_t i = 0; i < len; i++) {
                        for (int p = 0; p < n; p++) gen_elem(s, p, lo + i, dt, op, tmp, &terms[p]);
                        check_reduced(get_elem(dst, i, dt), terms, n, dt, op, what, lo + i);
                    }
                    release(sym, dst);
                    release(sym, src);
                }
}

static void test_allgather(void) {
    int me = shmem_my_pe(), n = shmem_n_pes();
    size_t counts[] = {0, 1, 7, 4099, 500001};
    for (int dt = 0; dt < SHMEMX_DTYPE_COUNT; dt++)
        for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++)
            for (int mode = 0; mode < 3; mode++) { /* private, symmetric, in place (symmetric) */
                int sym = mode > 0;
                size_t count = counts[c], es = shmemx_dtype_size(dt);
                if (count > 100000 && dt != SHMEMX_FLOAT32) continue;
                char *dst = buffer(sym, count * es * (size_t)n);
                char *src = mode == 2 ? dst + (size_t)me * count * es : buffer(sym, count * es);
                test_rng_t r = test_rng(seed + c, (uint64_t)me);
                test_fill(src, count * es, &r);
                if (mode != 2) memset(dst, 0x33, count * es * (size_t)n);
                CHECK_EQ_INT(shmemx_allgather(SHMEM_TEAM_WORLD, dst, src, count, dt), 0);
                for (int p = 0; p < n; p++) {
                    test_rng_t rp = test_rng(seed + c, (uint64_t)p);
                    const unsigned char *got = (unsigned char *)dst + (size_t)p * count * es;
                    for (size_t b = 0; b < count * es; b++) {
                        unsigned char want = (unsigned char)test_next(&rp);
                        CHECK(got[b] == want, "allgather %s count %zu mode %d: byte %zu of PE %d's "
                              "block is %u, want %u", dtype_name[dt], count, mode, b, p, got[b], want);
                    }
                }
                if (mode != 2) release(sym, src);
                release(sym, dst);
            }
}

static void test_broadcast(void) {
    int me = shmem_my_pe(), n = shmem_n_pes();
    size_t counts[] = {0, 1, 33, 100003, 800000};
    for (int root = 0; root < n; root++)
        for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++)
            for (int sym = 0; sym < 2; sym++) {
                size_t count = counts[c], bytes = count * 4;
                char *src = buffer(sym, bytes), *dst = buffer(sym, bytes);
                test_rng_t r = test_rng(seed + (uint64_t)root * 17 + c, 99);
                if (me == root) test_fill(src, bytes, &r);
                memset(dst, 0x11, bytes);
                CHECK_EQ_INT(shmemx_broadcast(SHMEM_TEAM_WORLD, dst, me == root ? src : NULL,
                                              count, SHMEMX_FLOAT32, root),
                             0);
                test_rng_t r2 = test_rng(seed + (uint64_t)root * 17 + c, 99);
                for (size_t b = 0; b < bytes; b++) {
                    unsigned char want = (unsigned char)test_next(&r2);
                    CHECK(((unsigned char *)dst)[b] == want,
                          "broadcast root %d count %zu %s: byte %zu differs", root, count,
                          sym ? "symmetric" : "private", b);
                }
                release(sym, dst);
                release(sym, src);
            }
}

/* Several all-reduces in flight while the caller computes; then a blocking
 * call, which must wait for them and run after them. */
static void test_nonblocking(void) {
    int me = shmem_my_pe(), n = shmem_n_pes();
    enum { K = 6, C = 50000 };
    float *buf[K];
    shmemx_req_t req[K];
    for (int k = 0; k < K; k++) {
        buf[k] = buffer(k % 2, C * sizeof(float)); /* alternate symmetric and private */
        for (int i = 0; i < C; i++) buf[k][i] = (float)(me + 1) * (float)(k + 1) + (float)(i % 3);
    }
    for (int k = 0; k < K; k++)
        CHECK_EQ_INT(shmemx_allreduce_nb(SHMEM_TEAM_WORLD, buf[k], buf[k], C, SHMEMX_FLOAT32,
                                         SHMEMX_SUM, &req[k]),
                     0);
    volatile double busy = 0; /* the caller computes meanwhile */
    for (int i = 0; i < 2000000; i++) busy += i * 1e-9;
    int done = 0;
    int rc = shmemx_req_test(req[0], &done);
    if (done) {
        CHECK_EQ_INT(rc, 0);
    } else {
        CHECK_EQ_INT(rc, SHMEMX_EBUSY);
        CHECK_EQ_INT(shmemx_req_wait(req[0]), 0);
    }
    for (int k = 1; k < K; k++) CHECK_EQ_INT(shmemx_req_wait(req[k]), 0);
    for (int k = 0; k < K; k++) shmemx_req_free(req[k]);
    float tri = (float)(n * (n + 1) / 2);
    for (int k = 0; k < K; k++)
        for (int i = 0; i < C; i++)
            CHECK(buf[k][i] == tri * (float)(k + 1) + (float)(n * (i % 3)),
                  "nb allreduce %d element %d = %g", k, i, buf[k][i]);
    /* nb then blocking on the same team: the blocking one runs second. */
    long *x = buffer(1, sizeof(long) * 4);
    for (int i = 0; i < 4; i++) x[i] = me + 1;
    shmemx_req_t rq;
    CHECK_EQ_INT(shmemx_allreduce_nb(SHMEM_TEAM_WORLD, x, x, 4, SHMEMX_INT64, SHMEMX_SUM, &rq), 0);
    CHECK_EQ_INT(shmemx_allreduce(SHMEM_TEAM_WORLD, x, x, 4, SHMEMX_INT64, SHMEMX_MAX), 0);
    CHECK_EQ_INT(shmemx_req_wait(rq), 0);
    shmemx_req_free(rq);
    for (int i = 0; i < 4; i++) CHECK_EQ_INT(x[i], (long)n * (n + 1) / 2);
    release(1, x);
    for (int k = 0; k < K; k++) release(k % 2, buf[k]);
}

/* The collectives on a team that is not the world: the even PEs. */
static void test_split_team(void) {
    int me = shmem_my_pe(), n = shmem_n_pes();
    shmem_team_t even;
    CHECK_EQ_INT(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, (n + 1) / 2, NULL, 0, &even), 0);
    if (me % 2 == 0) {
        int tn = shmem_team_n_pes(even);
        CHECK_EQ_INT(tn, (n + 1) / 2);
        double v[3] = {me, 2.0 * me, 1};
        CHECK_EQ_INT(shmemx_allreduce(even, v, v, 3, SHMEMX_FLOAT64, SHMEMX_SUM), 0);
        double s = 0;
        for (int p = 0; p < n; p += 2) s += p;
        CHECK(v[0] == s && v[1] == 2 * s && v[2] == tn, "team allreduce gave %g %g %g", v[0], v[1],
              v[2]);
        shmem_team_destroy(even);
    } else {
        CHECK(even == SHMEM_TEAM_INVALID, "odd PE got a team");
    }
    shmem_barrier_all();
}

static void test_errors(void) {
    float x = 1;
    printf("(PE %d: the next lines are expected error messages)\n", shmem_my_pe());
    fflush(stdout);
    CHECK_EQ_INT(shmemx_allreduce(SHMEM_TEAM_WORLD, &x, &x, 1, (shmemx_dtype_t)99, SHMEMX_SUM),
                 SHMEMX_EINVAL);
    CHECK_EQ_INT(shmemx_allreduce(SHMEM_TEAM_WORLD, &x, &x, 1, SHMEMX_FLOAT32, (shmemx_op_t)42),
                 SHMEMX_EINVAL);
    CHECK_EQ_INT(shmemx_allreduce(SHMEM_TEAM_INVALID, &x, &x, 1, SHMEMX_FLOAT32, SHMEMX_SUM),
                 SHMEMX_ETEAM);
    CHECK_EQ_INT(shmemx_broadcast(SHMEM_TEAM_WORLD, &x, &x, 1, SHMEMX_FLOAT32, shmem_n_pes()),
                 SHMEMX_EINVAL);
    CHECK_EQ_INT(shmemx_allreduce(SHMEM_TEAM_WORLD, NULL, &x, 1, SHMEMX_FLOAT32, SHMEMX_SUM),
                 SHMEMX_EINVAL);
    CHECK_EQ_INT(shmemx_allreduce_nb(SHMEM_TEAM_WORLD, &x, &x, 1, SHMEMX_FLOAT32, SHMEMX_SUM, NULL),
                 SHMEMX_EINVAL);
    /* count x element size (x members, for an all-gather's dest) past SIZE_MAX:
     * the product would wrap to a few bytes and the collective run off the
     * end of the buffers */
    size_t wrap4 = SIZE_MAX / 4 + 2; /* x 4 = 4 (mod 2^64) */
    size_t gwrap = SIZE_MAX / 4 / (size_t)shmem_n_pes() + 1;
    CHECK_EQ_INT(shmemx_allreduce(SHMEM_TEAM_WORLD, &x, &x, wrap4, SHMEMX_FLOAT32, SHMEMX_SUM),
                 SHMEMX_EINVAL);
    CHECK_EQ_INT(shmemx_reduce_scatter(SHMEM_TEAM_WORLD, &x, &x, SIZE_MAX / 8 + 2, SHMEMX_INT64,
                                       SHMEMX_MAX), SHMEMX_EINVAL);
    CHECK_EQ_INT(shmemx_broadcast(SHMEM_TEAM_WORLD, &x, &x, SIZE_MAX / 2 + 3, SHMEMX_BFLOAT16, 0),
                 SHMEMX_EINVAL);
    CHECK_EQ_INT(shmemx_allgather(SHMEM_TEAM_WORLD, &x, &x, gwrap, SHMEMX_FLOAT32), SHMEMX_EINVAL);
    shmemx_req_t rq;
    CHECK_EQ_INT(shmemx_allreduce_nb(SHMEM_TEAM_WORLD, &x, &x, wrap4, SHMEMX_INT32, SHMEMX_SUM, &rq),
                 SHMEMX_EINVAL);
    CHECK_EQ_INT(shmemx_allgather_nb(SHMEM_TEAM_WORLD, &x, &x, gwrap, SHMEMX_INT32, &rq),
                 SHMEMX_EINVAL);
    CHECK(strcmp(shmemx_strerror(SHMEMX_ETEAM), "invalid team, or this PE is not a member") == 0,
          "strerror");
}

int main(void) {
    seed = shmem_test_start("coll_shmemx");
    test_reduce_scatter();
    test_allgather();
    test_broadcast();
    test_nonblocking();
    test_split_team();
    test_errors();
    if (shmem_my_pe() == 0) printf("coll_shmemx: passed on %d PEs\n", shmem_n_pes());
    shmem_finalize();
    return 0;
}
