/*
 * coll_allreduce — shmemx_allreduce for every algorithm x dtype x op, odd and
 * zero counts, counts larger than the staging memory and than the streaming
 * threshold, in place and not, on
 * private and on symmetric buffers, back to back on the same buffers; each
 * element against an fp64 reference, and every PE must end with the same bits.
 */
#include <stdlib.h>

#include "coll_common.h"

static void run_case(uint64_t seed, shmemx_algo_t algo, shmemx_dtype_t dt, shmemx_op_t op,
                     size_t count, int symmetric, int in_place, void *sbuf, void *dbuf) {
    int me = shmem_my_pe(), n = shmem_n_pes();
    size_t es = shmemx_dtype_size(dt);
    char *src = symmetric ? sbuf : malloc(count * es + 1);
    char *dst = in_place ? src : symmetric ? dbuf : malloc(count * es + 1);
    CHECK(src && dst, "out of memory");
    double v;
    for (size_t i = 0; i < count; i++) gen_elem(seed, me, i, dt, op, src + i * es, &v);
    if (!in_place) memset(dst, 0xA5, count * es); /* poison: every element must be written */

    shmemx_set_allreduce_algo(algo);
    CHECK_EQ_INT(shmemx_allreduce(SHMEM_TEAM_WORLD, dst, src, count, dt, op), 0);

    char what[128];
    snprintf(what, sizeof what, "%s %s %s count %zu %s %s", shmemx_algo_name(algo),
             dtype_name[dt], op_name[op], count, symmetric ? "symmetric" : "private",
             in_place ? "in place" : "out of place");
    double terms[64];
    char tmp[16];
    for (size_t i = 0; i < count; i++) {
        for (int p = 0; p < n; p++) gen_elem(seed, p, i, dt, op, tmp, &terms[p]);
        check_reduced(get_elem(dst, i, dt), terms, n, dt, op, what, i);
    }
    check_same_everywhere(dst, count * es, what);
    shmemx_set_allreduce_algo(SHMEMX_ALGO_AUTO);
    if (!symmetric) {
        if (!in_place) free(dst);
        free(src);
    }
}

int main(void) {
    uint64_t seed = shmem_test_start("coll_allreduce");
    CHECK(shmem_n_pes() <= 64, "the test keeps 64 terms per element at most");
    int n = shmem_n_pes();
    /* Counts: nothing, one, fewer than the PEs, odd, one past the oneshot limit,
     * and more than one staging round (1.5 MiB) for 4-byte types. */
    size_t counts[] = {0, 1, 3, (size_t)n + 1, 1001, 9000, 40000, 600000, 2200000};
    size_t maxc = 2200000;
    char *sbuf = shmem_malloc(maxc * 8), *dbuf = shmem_malloc(maxc * 8);
    CHECK(sbuf && dbuf, "symmetric heap too small");
    int cases = 0;
    for (int algo = SHMEMX_ALGO_AUTO; algo < SHMEMX_ALGO_COUNT; algo++)
        for (int dt = 0; dt < SHMEMX_DTYPE_COUNT; dt++)
            for (int op = 0; op < SHMEMX_OP_COUNT; op++)
                for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
                    /* The large counts are there for the staging rounds (sum and avg)
                     * and for the streaming stores of messages over 8 MiB (fp32 sum). */
                    if (counts[c] >= 600000 && op != SHMEMX_SUM && op != SHMEMX_AVG) continue;
                    if (counts[c] == maxc && (dt != SHMEMX_FLOAT32 || op != SHMEMX_SUM))
                        continue;
                    for (int place = 0; place < 4; place++) {
                        run_case(seed + (uint64_t)cases, (shmemx_algo_t)algo,
                                 (shmemx_dtype_t)dt, (shmemx_op_t)op, counts[c], place & 1,
                                 place >> 1, sbuf, dbuf);
                        cases++;
                    }
                }
    shmem_free(sbuf);
    shmem_free(dbuf);
    if (shmem_my_pe() == 0) printf("coll_allreduce: %d cases passed on %d PEs\n", cases, n);
    shmem_finalize();
    return 0;
}
