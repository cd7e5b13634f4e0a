/*
 * alltoall — every PE sends a different block to every PE.
 *
 * Block j of PE p's source (NELEMS elements) goes to PE j, where it lands as
 * block p of the destination. Here element k of the block PE p sends to PE j
 * is p * 10000 + j * 100 + k, so each PE can check what arrived. The call is
 * the C11 generic shmem_alltoall, which picks shmem_long_alltoall from the
 * element type; both arrays must be symmetric.
 *
 *   symrun -n 4 ./alltoall
 */
#include <shmem.h>
#include <stdio.h>

#define NELEMS 4

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();

    long *source = shmem_malloc(npes * NELEMS * sizeof(long));
    long *dest = shmem_malloc(npes * NELEMS * sizeof(long));
    for (int j = 0; j < npes; j++)
        for (int k = 0; k < NELEMS; k++) {
            source[j * NELEMS + k] = me * 10000L + j * 100L + k;
            dest[j * NELEMS + k] = -1;
        }

    /* a collective: every PE of the team calls it */
    shmem_alltoall(SHMEM_TEAM_WORLD, dest, source, NELEMS);

    int wrong = 0;
    for (int p = 0; p < npes; p++)
        for (int k = 0; k < NELEMS; k++)
            if (dest[p * NELEMS + k] != p * 10000L + me * 100L + k) wrong++;
    printf("alltoall: PE %d received %d blocks of %d elements, %d wrong%s\n", me, npes, NELEMS,
           wrong, wrong ? "  <-- WRONG" : "");

    shmem_free(dest);
    shmem_free(source);
    shmem_finalize();
    return 0;
}
