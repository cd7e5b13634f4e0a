/*
 * coll_nb — the non-blocking training collectives' requests (shmemx.h):
 *
 *   lifetime   test and wait complete a request and never free it: testing
 *              until done, then testing and waiting again, give the same
 *              status; only shmemx_req_free releases it (the progress thread
 *              used to free on test, so a later wait read freed memory);
 *   free       freeing a request still in flight waits for it first;
 *   waitall    over requests with NULL entries among them;
 *   testany    completes requests one by one, in any order, until none is left;
 *   algorithm  the all-reduce algorithm is the one forced when the request was
 *              made, not when the progress thread gets to it: PE 0 changes the
 *              choice at once while its thread is busy, the others only after
 *              their request completed (they used to pick different
 *              algorithms and hang);
 *   team       destroying a team with requests outstanding on it completes them
 *              first.
 *
 * Every result is checked element by element; symrun's timeout turns a hang
 * into a failure.
 */
#include <shmemx.h>

#include "shmem_test.h"

static int me, npes;
static uint64_t seed;

/* PE p's element i of vector v: small integers, so float sums are exact. */
static float value(int p, size_t i, int v) {
    uint64_t x = shmem_test_mix(seed ^ ((uint64_t)v << 40) ^ ((uint64_t)p << 32) ^ i);
    return (float)((int)(x % 201) - 100);
}

static float *vector(size_t n, int v) {
    float *b = malloc(n * sizeof *b);
    CHECK(b != NULL, "out of memory");
    for (size_t i = 0; i < n; i++) b[i] = value(me, i, v);
    return b;
}

/* b holds the sum over the members pes[0..k) of vector v. */
static void check_sum(const float *b, size_t n, int v, const int *pes, int k, const char *what) {
    for (size_t i = 0; i < n; i++) {
        float want = 0;
        for (int m = 0; m < k; m++) want += value(pes[m], i, v);
        CHECK(b[i] == want, "%s: vector %d element %zu is %g, want %g", what, v, i, b[i], want);
    }
}

static int world_pes[256];

static shmemx_req_t start_sum(float *b, size_t n) {
    shmemx_req_t r = NULL;
    CHECK_EQ_INT(shmemx_allreduce_nb(SHMEM_TEAM_WORLD, b, b, n, SHMEMX_FLOAT32, SHMEMX_SUM, &r), 0);
    CHECK(r != NULL, "no request");
    return r;
}

static void lifetime(void) {
    enum { N = 40000 };
    float *b = vector(N, 1);
    shmemx_req_t r = start_sum(b, N);
    int done = 0, rc;
    volatile double busy = 0;
    while ((rc = shmemx_req_test(r, &done)) == SHMEMX_EBUSY) {
        CHECK(!done, "test said busy and done");
        for (int i = 0; i < 1000; i++) busy += i;
    }
    CHECK_EQ_INT(rc, 0);
    CHECK(done == 1, "test returned %d without done", rc);
    done = 0;
    CHECK_EQ_INT(shmemx_req_test(r, &done), 0); /* again: still there, still complete */
    CHECK(done == 1, "a completed request tested as not done");
    CHECK_EQ_INT(shmemx_req_wait(r), 0);
    CHECK_EQ_INT(shmemx_req_wait(r), 0);
    shmemx_req_free(r);
    shmemx_req_free(NULL); /* a no-op */
    check_sum(b, N, 1, world_pes, npes, "test, test, wait, wait, free");
    free(b);

    /* freed while (probably) still queued or running: free waits for it */
    float *c = vector(N, 2), *d = vector(3 * N, 3);
    shmemx_req_t r1 = start_sum(c, N), r2 = start_sum(d, 3 * N);
    shmemx_req_free(r2);
    shmemx_req_free(r1);
    check_sum(c, N, 2, world_pes, npes, "freed in flight");
    check_sum(d, 3 * N, 3, world_pes, npes, "freed in flight");
    free(c);
    free(d);
}

static void waitall_testany(void) {
    enum { K = 7 };
    size_t n[K];
    float *b[K];
    shmemx_req_t r[K + 1];
    for (int k = 0; k < K; k++) {
        n[k] = 1000 + (size_t)k * 7777;
        b[k] = vector(n[k], 10 + k);
        r[k] = start_sum(b[k], n[k]);
    }
    r[K] = NULL; /* NULL entries are skipped */
    CHECK_EQ_INT(shmemx_req_waitall(r, K + 1), 0);
    for (int k = 0; k < K; k++) {
        int done = 0;
        CHECK_EQ_INT(shmemx_req_test(r[k], &done), 0);
        CHECK(done, "waitall left request %d incomplete", k);
        check_sum(b[k], n[k], 10 + k, world_pes, npes, "waitall");
        shmemx_req_free(r[k]);
        r[k] = NULL;
    }
    CHECK_EQ_INT(shmemx_req_waitall(r, K + 1), 0); /* all NULL: nothing to wait for */
    CHECK_EQ_INT(shmemx_req_waitall(NULL, 0), 0);

    for (int k = 0; k < K; k++) {
        for (size_t i = 0; i < n[k]; i++) b[k][i] = value(me, i, 20 + k);
        r[k] = start_sum(b[k], n[k]);
    }
    int left = K;
    while (left) {
        int idx = -2;
        int rc = shmemx_req_testany(r, K + 1, &idx);
        if (rc == SHMEMX_EBUSY) {
            CHECK(idx == -1, "testany busy with index %d", idx);
            continue;
        }
        CHECK_EQ_INT(rc, 0);
        CHECK(idx >= 0 && idx < K && r[idx], "testany gave index %d", idx);
        check_sum(b[idx], n[idx], 20 + idx, world_pes, npes, "testany");
        shmemx_req_free(r[idx]);
        r[idx] = NULL;
        left--;
    }
    int idx = 5;
    CHECK_EQ_INT(shmemx_req_testany(r, K + 1, &idx), 0); /* nothing active */
    CHECK(idx == -1, "testany over NULLs gave index %d", idx);
    for (int k = 0; k < K; k++) free(b[k]);
}

static void algorithm_capture(void) {
    /* a long request keeps every progress thread busy ... */
    enum { BIG = 1 << 22, N = 300000 };
    float *big = vector(BIG, 40), *b = vector(N, 41);
    shmemx_req_t rb = start_sum(big, BIG);
    /* ... while the next is made with the ring forced */
    shmemx_set_allreduce_algo(SHMEMX_ALGO_RING);
    shmemx_req_t ra = start_sum(b, N);
    if (me == 0) { /* at once: PE 0's thread has not started ra yet */
        shmemx_set_allreduce_algo(SHMEMX_ALGO_RD);
        CHECK_EQ_INT(shmemx_req_wait(ra), 0);
    } else { /* only once ra ran with the ring here */
        CHECK_EQ_INT(shmemx_req_wait(ra), 0);
        shmemx_set_allreduce_algo(SHMEMX_ALGO_RD);
    }
    CHECK_EQ_INT(shmemx_req_wait(rb), 0);
    shmemx_req_free(ra);
    shmemx_req_free(rb);
    check_sum(big, BIG, 40, world_pes, npes, "the long request");
    check_sum(b, N, 41, world_pes, npes, "made with the ring forced, then rd forced");
    /* rd is forced everywhere now */
    for (size_t i = 0; i < N; i++) b[i] = value(me, i, 42);
    shmemx_req_t rq = start_sum(b, N);
    shmemx_set_allreduce_algo(SHMEMX_ALGO_AUTO);
    CHECK_EQ_INT(shmemx_req_wait(rq), 0);
    shmemx_req_free(rq);
    check_sum(b, N, 42, world_pes, npes, "made with rd forced");
    free(big);
    free(b);
}

static void team_destroy(void) {
    enum { N = 200000 };
    shmem_team_t t;
    int size = (npes + 1) / 2;
    CHECK_EQ_INT(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, size, NULL, 0, &t), 0);
    if (t == SHMEM_TEAM_INVALID) return;
    int pes[256];
    for (int k = 0; k < size; k++) pes[k] = 2 * k;
    float *b[3];
    shmemx_req_t r[3];
    for (int k = 0; k < 3; k++) {
        b[k] = vector(N, 50 + k);
        CHECK_EQ_INT(shmemx_allreduce_nb(t, b[k], b[k], N, SHMEMX_FLOAT32, SHMEMX_SUM, &r[k]), 0);
    }
    shmem_team_destroy(t); /* completes them first */
    for (int k = 0; k < 3; k++) {
        int done = 0;
        CHECK_EQ_INT(shmemx_req_test(r[k], &done), 0);
        CHECK(done, "request %d on a destroyed team is not complete", k);
        shmemx_req_free(r[k]);
        check_sum(b[k], N, 50 + k, pes, size, "completed by shmem_team_destroy");
        free(b[k]);
    }
}

int main(void) {
    seed = shmem_test_start("coll_nb");
    me = shmem_my_pe();
    npes = shmem_n_pes();
    CHECK(npes <= 256, "at most 256 PEs");
    for (int p = 0; p < npes; p++) world_pes[p] = p;
    lifetime();
    waitall_testany();
    algorithm_capture();
    team_destroy();
    shmem_test_pass("coll_nb", "request lifetime, free in flight, waitall, testany, algorithm "
                               "captured at creation, team destroy completes requests");
    shmem_finalize();
    return 0;
}
