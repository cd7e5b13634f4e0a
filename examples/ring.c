/*
 * ring — pass a token around the PEs with a put and a wait.
 *
 * Every PE owns a symmetric `token`. PE 0 starts: it puts the value 1 into
 * the token of its right-hand neighbour. Each PE waits until the token it
 * expects arrives (shmem_long_wait_until), adds one and puts it into its
 * right-hand neighbour's token. After LAPS trips round the ring the token has
 * made LAPS * npes hops, and PE 0 holds that number.
 *
 *   symrun -n 4 ./ring
 */
#include <shmem.h>
#include <stdio.h>

#define LAPS 10

static long token; /* a global: symmetric, so other PEs can put into it */

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();
    int right = (me + 1) % npes;

    for (int lap = 0; lap < LAPS; lap++) {
        /* The token reaches PE p after lap * npes + p hops (PE 0 starts the
         * first lap without waiting). */
        long expect = (long)lap * npes + me;
        if (!(lap == 0 && me == 0)) shmem_long_wait_until(&token, SHMEM_CMP_EQ, expect);
        long next = expect + 1;
        shmem_long_put(&token, &next, 1, right); /* hand it on */
    }
    if (me == 0) { /* the last hop of the last lap comes home */
        long want = (long)LAPS * npes;
        shmem_long_wait_until(&token, SHMEM_CMP_EQ, want);
        printf("ring: the token went %d times round %d PE%s: %ld hops (expected %ld)%s\n", LAPS,
               npes, npes == 1 ? "" : "s", token, want, token == want ? "" : "  <-- WRONG");
    }
    shmem_finalize();
    return 0;
}
