/*
 * api_misuse_child — one misuse of the team, context, lock and active-set API
 * per mode, made by the last PE (the "victim") while the others wait in a
 * barrier. tests/api_misuse.sh runs it under symrun and checks that the job
 * ends at once with one message naming the PE, the call and the cause.
 *
 *   api_misuse_child MODE TOKEN
 */
#include <shmem.h>
#include <stdio.h>
#include <string.h>

static long x, pSync[SHMEM_SYNC_SIZE];
static long src[8], dst[64], pWrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE + 8];

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: api_misuse_child MODE [TOKEN]\n");
        return 2;
    }
    const char *mode = argv[1];
    for (int i = 0; i < SHMEM_SYNC_SIZE; i++) pSync[i] = SHMEM_SYNC_VALUE;
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    /* made by every PE, before the victim acts */
    shmem_team_t rev;
    shmem_ctx_t rctx;
    if (shmem_team_split_strided(SHMEM_TEAM_WORLD, n - 1, -1, n, NULL, 0, &rev) != 0 ||
        shmem_team_create_ctx(rev, 0, &rctx) != 0) {
        fprintf(stderr, "api_misuse_child: setup failed\n");
        return 2;
    }
    shmem_barrier_all();
    if (me != n - 1) {
        shmem_barrier_all(); /* the victim never comes: symrun must end us */
        shmem_finalize();
        return 0;
    }

    long local = 0;
    if (!strcmp(mode, "aset_not_member")) {
        shmem_barrier(0, 0, n - 1, pSync); /* the set is PEs 0 .. n-2 */
    } else if (!strcmp(mode, "aset_too_big")) {
        shmem_fcollect32(dst, src, 1, 0, 0, n + 1, pSync);
    } else if (!strcmp(mode, "aset_bad_stride")) {
        shmem_collect64(dst, src, 1, 0, -1, n, pSync);
    } else if (!strcmp(mode, "aset_bad_root")) {
        shmem_broadcast64(dst, src, 1, n, 0, 0, n, pSync);
    } else if (!strcmp(mode, "toall_negative")) {
        shmem_long_sum_to_all(dst, src, -1, 0, 0, n, pWrk, pSync);
    } else if (!strcmp(mode, "toall_private")) {
        shmem_long_max_to_all(&local, &local, 1, 0, 0, n, pWrk, pSync);
    } else if (!strcmp(mode, "ctx_invalid")) {
        shmem_ctx_long_p(SHMEM_CTX_INVALID, &x, 1, 0);
    } else if (!strcmp(mode, "ctx_team_pe")) {
        shmem_ctx_long_atomic_inc(rctx, &x, n); /* team PE numbers are 0 .. n-1 */
    } else if (!strcmp(mode, "ctx_destroy_default")) {
        shmem_ctx_destroy(SHMEM_CTX_DEFAULT);
    } else if (!strcmp(mode, "team_destroy_world")) {
        shmem_team_destroy(SHMEM_TEAM_WORLD);
    } else if (!strcmp(mode, "team_bcast_root")) {
        shmem_long_broadcast(rev, dst, src, 1, n);
    } else if (!strcmp(mode, "team_reduce_private")) {
        shmem_long_sum_reduce(SHMEM_TEAM_WORLD, dst, &local, 1);
    } else if (!strcmp(mode, "null_team")) {
        /* the standard's answer is a non-zero return; the runtime also says so, once */
        int a = shmem_long_sum_reduce(SHMEM_TEAM_INVALID, dst, src, 1);
        int b = shmem_team_sync(SHMEM_TEAM_INVALID);
        int c = shmem_long_broadcast(SHMEM_TEAM_INVALID, dst, src, 1, 0);
        if (a != 0 && b != 0 && c != 0) shmem_global_exit(3); /* the expected way out */
    } else if (!strcmp(mode, "lock_private")) {
        shmem_set_lock(&local);
    } else if (!strcmp(mode, "clear_lock_private")) {
        shmem_clear_lock(&local);
    } else if (!strcmp(mode, "test_lock_private")) {
        shmem_test_lock(&local);
    } else {
        fprintf(stderr, "api_misuse_child: unknown mode '%s'\n", mode);
        return 2;
    }
    printf("PE %d: %s returned instead of ending the job\n", me, mode);
    return 0;
}
