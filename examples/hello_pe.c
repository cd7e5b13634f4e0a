/*
 * hello_pe — the first program to read: every PE puts its number into a
 * symmetric array on its right-hand neighbour, all PEs add into a counter on
 * PE 0 with an atomic, a barrier, and each PE reports what arrived.
 *
 *   symrun -n 4 ./hello_pe
 */
#include <shmem.h>
#include <stdio.h>

static long counter;     /* a global: symmetric, so other PEs can update it */
static int from_left[2]; /* [PE number of my left neighbour, its square] */

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    int right = (me + 1) % n;

    int *ring = shmem_malloc(n * sizeof(int)); /* symmetric heap */
    for (int i = 0; i < n; i++) ring[i] = -1;
    shmem_barrier_all();

    int mine[2] = {me, me * me};
    shmem_int_put(from_left, mine, 2, right);      /* put into a global on the right */
    shmem_int_p(&ring[me], me * 10, right);        /* one element into the heap */
    shmem_long_atomic_fetch_add(&counter, me + 1, 0); /* everyone adds into PE 0 */
    shmem_barrier_all();

    int left = (me + n - 1) % n;
    printf("PE %d of %d: got %d and %d from PE %d, ring[%d] = %d%s\n", me, n, from_left[0],
           from_left[1], left, left, ring[left],
           from_left[0] == left && ring[left] == left * 10 ? "" : "  <-- WRONG");
    if (me == 0) {
        long want = (long)n * (n + 1) / 2;
        printf("PE 0: counter = %ld (expected %ld)%s\n", counter, want,
               counter == want ? "" : "  <-- WRONG");
    }
    shmem_free(ring);
    shmem_finalize();
    return 0;
}
