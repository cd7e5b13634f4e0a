/*
 * net_boot_child — the program the bootstrap tests launch: starts, does a
 * barrier and an all-reduce, and says so. NET_CHILD_DIE=R makes rank R kill
 * itself with SIGKILL after start-up (the others must not hang).
 */
#include <shmem.h>
#include <shmemx.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    const char *die = getenv("NET_CHILD_DIE");
    if (die && atoi(die) == me) raise(SIGKILL);
    shmem_barrier_all();
    long x = me + 1;
    shmemx_allreduce(SHMEM_TEAM_WORLD, &x, &x, 1, SHMEMX_INT64, SHMEMX_SUM);
    if (x != (long)n * (n + 1) / 2) {
        fprintf(stderr, "PE %d: all-reduce gave %ld\n", me, x);
        return 1;
    }
    printf("PE %d of %d: ok\n", me, n);
    shmem_finalize();
    return 0;
}
