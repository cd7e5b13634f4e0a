/*
 * coll_subteam — an all-reduce on private buffers large enough for the direct
 * algorithm (more than 64 KiB, so it reads peers' memory with
 * process_vm_readv, or stages when that is refused) first on a sub-team, then
 * on the world and on the other half. Whether peers' memory can be read is
 * found out once per team, in a synchronisation round of its own; members
 * that had found out on another team must not skip the world's round, or the
 * rounds stop matching and the world's all-reduces hang (symrun's timeout
 * makes that a failure). Sub-teams: PEs {0, 1}, then the even and the odd PEs.
 * Every element of every result is checked.
 */
#include <shmemx.h>

#include "shmem_test.h"

enum { COUNT = 128 * 1024 / 4 }; /* 128 KiB of int32 */

static uint64_t seed;

/* PE p's element i for round r: small, so sums are exact. */
static int32_t value(int p, size_t i, int r) {
    uint64_t x = shmem_test_mix(seed ^ ((uint64_t)r << 48) ^ ((uint64_t)p << 32) ^ i);
    return (int32_t)(x % 2001) - 1000;
}

/* All-reduce (sum) a private COUNT-element vector over `team` (world PEs
 * pes[0..n)), symmetric when `sym`, and check every element. */
static void allreduce_check(shmem_team_t team, const int *pes, int n, int r, int sym,
                            const char *what) {
    int me = shmem_my_pe();
    int32_t *buf = sym ? shmem_malloc(COUNT * sizeof *buf) : malloc(COUNT * sizeof *buf);
    CHECK(buf != NULL, "out of memory");
    for (size_t i = 0; i < COUNT; i++) buf[i] = value(me, i, r);
    CHECK_EQ_INT(shmemx_allreduce(team, buf, buf, COUNT, SHMEMX_INT32, SHMEMX_SUM), 0);
    for (size_t i = 0; i < COUNT; i++) {
        int32_t want = 0;
        for (int k = 0; k < n; k++) want += value(pes[k], i, r);
        CHECK(buf[i] == want, "%s, round %d (%s): element %zu is %d, want %d", what, r,
              sym ? "symmetric" : "private", i, buf[i], want);
    }
    if (sym)
        shmem_free(buf);
    else
        free(buf);
}

/* Split the world into the team of PEs start, start + stride, ... (size of
 * them); its members all-reduce on it, then everyone on the world. */
static void sub_then_world(int start, int stride, int size, int r, const char *what) {
    int n = shmem_n_pes();
    shmem_team_t t;
    CHECK_EQ_INT(shmem_team_split_strided(SHMEM_TEAM_WORLD, start, stride, size, NULL, 0, &t), 0);
    int pes[64], world[64];
    for (int k = 0; k < size; k++) pes[k] = start + k * stride;
    for (int k = 0; k < n; k++) world[k] = k;
    if (t != SHMEM_TEAM_INVALID) {
        allreduce_check(t, pes, size, r, 0, what);
        allreduce_check(t, pes, size, r + 1, 0, what);
    }
    for (int k = 0; k < 3; k++)
        allreduce_check(SHMEM_TEAM_WORLD, world, n, r + 2 + k, k == 2, "world");
    if (t != SHMEM_TEAM_INVALID) {
        allreduce_check(t, pes, size, r + 5, 0, what);
        shmem_team_destroy(t);
    }
}

int main(void) {
    seed = shmem_test_start("coll_subteam");
    int n = shmem_n_pes();
    CHECK(n >= 2 && n <= 64, "run with 2 to 64 PEs");
    sub_then_world(0, 1, 2, 0, "team {0, 1}");
    sub_then_world(0, 2, (n + 1) / 2, 10, "even PEs");
    sub_then_world(1, 2, n / 2, 20, "odd PEs");
    /* the teams' slots are reused by new teams: found out afresh */
    sub_then_world(n - 2, 1, 2, 30, "team {n-2, n-1}");
    shmem_test_pass("coll_subteam", "private all-reduces of 128 KiB on sub-teams, then the world");
    shmem_finalize();
    return 0;
}
