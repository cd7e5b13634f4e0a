/*
 * coll_nb_finalize — shmem_finalize with non-blocking collectives outstanding:
 * it completes them (every PE finalizes, so they match up), joins the progress
 * thread, and only then frees the teams and unmaps the heap, which the thread
 * used to go on using (a crash or a hang). The requests outlive finalize:
 * afterwards each tests complete with status 0, its private buffer holds the
 * sum, and shmemx_req_free releases it.
 */
#include <shmemx.h>

#include "shmem_test.h"

enum { K = 6, N = 1 << 20 }; /* six 4 MiB all-reduces */

static uint64_t seed;

static float value(int p, size_t i, int v) {
    uint64_t x = shmem_test_mix(seed ^ ((uint64_t)v << 40) ^ ((uint64_t)p << 32) ^ i);
    return (float)((int)(x % 201) - 100);
}

int main(void) {
    seed = shmem_test_start("coll_nb_finalize");
    int me = shmem_my_pe(), npes = shmem_n_pes();
    float *b[K + 1];
    shmemx_req_t r[K + 1];
    for (int k = 0; k < K; k++) {
        b[k] = malloc(N * sizeof(float));
        CHECK(b[k] != NULL, "out of memory");
        for (size_t i = 0; i < N; i++) b[k][i] = value(me, i, k);
        CHECK_EQ_INT(shmemx_allreduce_nb(SHMEM_TEAM_WORLD, b[k], b[k], N, SHMEMX_FLOAT32,
                                         SHMEMX_SUM, &r[k]), 0);
    }
    /* and one on a team of its own (its slot goes with the heap at finalize) */
    shmem_team_t t;
    CHECK_EQ_INT(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, npes, NULL, 0, &t), 0);
    b[K] = malloc(N * sizeof(float));
    CHECK(b[K] != NULL, "out of memory");
    for (size_t i = 0; i < N; i++) b[K][i] = value(me, i, K);
    CHECK_EQ_INT(shmemx_allreduce_nb(t, b[K], b[K], N, SHMEMX_FLOAT32, SHMEMX_SUM, &r[K]), 0);

    shmem_finalize(); /* at once, every request still outstanding */

    for (int k = 0; k <= K; k++) {
        int done = 0;
        int rc = shmemx_req_test(r[k], &done);
        CHECK(done && rc == 0, "after shmem_finalize request %d: done %d, status %d", k, done, rc);
        CHECK_EQ_INT(shmemx_req_wait(r[k]), 0);
        shmemx_req_free(r[k]);
        for (size_t i = 0; i < N; i++) {
            float want = 0;
            for (int p = 0; p < npes; p++) want += value(p, i, k);
            CHECK(b[k][i] == want, "request %d element %zu is %g, want %g", k, i, b[k][i], want);
        }
        free(b[k]);
    }
    if (me == 0)
        printf("coll_nb_finalize: PASS (%d requests completed by shmem_finalize)\n", K + 1);
    return 0;
}
