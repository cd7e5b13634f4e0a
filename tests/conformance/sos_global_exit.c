/*
 * sos_global_exit — shmem_global_exit from one PE ends every PE, including
 * ones blocked in a wait, and the job's exit status is the one passed (the
 * test is built with -DSTATUS=0 and -DSTATUS=3 and expects that status).
 *
 * @variants -DSTATUS=0 @rc 0 ; -DSTATUS=3 @rc 3
 * @npes 2 4
 */
#include <shmem.h>
#include <stdio.h>
#include <unistd.h>

#ifndef STATUS
#define STATUS 0
#endif

static long never;

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();
    shmem_barrier_all();
    if (me == npes - 1) {
        printf("sos_global_exit: PASS if the job ends with status %d\n", STATUS);
        fflush(stdout);
        shmem_global_exit(STATUS);
    }
    shmem_long_wait_until(&never, SHMEM_CMP_EQ, 1); /* never satisfied */
    printf("PE %d: FAIL: the wait returned\n", me);
    return 1;
}
