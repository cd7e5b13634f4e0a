/*
 * circular_shift — every PE puts an array into its right-hand neighbour.
 *
 * PE p fills `src` with p * 100 + i and puts it into `dest` on PE p + 1 (the
 * last PE into PE 0). shmem_barrier_all completes the puts and synchronises,
 * so afterwards every PE holds its left-hand neighbour's array.
 *
 *   symrun -n 4 ./circular_shift
 */
#include <shmem.h>
#include <stdio.h>

#define N 8

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();

    int src[N];                               /* private: only read locally */
    int *dest = shmem_malloc(N * sizeof(int)); /* symmetric: written by the left PE */
    for (int i = 0; i < N; i++) {
        src[i] = me * 100 + i;
        dest[i] = -1;
    }
    shmem_barrier_all(); /* nobody puts before every dest is initialised */

    shmem_int_put(dest, src, N, (me + 1) % npes);
    shmem_barrier_all(); /* the puts are complete and visible */

    int left = (me + npes - 1) % npes, ok = 1;
    for (int i = 0; i < N; i++) ok &= dest[i] == left * 100 + i;
    printf("circular_shift: PE %d got %d..%d from PE %d%s\n", me, dest[0], dest[N - 1], left,
           ok ? "" : "  <-- WRONG");

    shmem_free(dest);
    shmem_finalize();
    return 0;
}
