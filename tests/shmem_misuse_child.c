/*
 * shmem_misuse_child — one misuse of the API per mode, made by the last PE
 * (the "victim") while the others wait in a barrier. tests/shmem_misuse.sh
 * runs it under symrun and checks that the job ends at once with one message
 * naming the PE, the call and the cause.
 *
 *   shmem_misuse_child MODE TOKEN
 */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long x;   /* a symmetric global */
static long sig; /* ditto */

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: shmem_misuse_child MODE [TOKEN]\n");
        return 2;
    }
    const char *mode = argv[1];
    const char *r = getenv("SYMTRAIN_RANK"), *s = getenv("SYMTRAIN_SIZE");
    int victim_pre = r && s && atoi(r) == atoi(s) - 1;

    if (!strcmp(mode, "before_init") && victim_pre) {
        printf("%d\n", shmem_my_pe()); /* must end the job, not return */
        return 0;
    }
    if (!strcmp(mode, "before_init_put") && victim_pre) {
        shmem_long_p(&x, 1, 0);
        return 0;
    }
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    long *heap = shmem_malloc(4096);
    shmem_barrier_all();
    if (me != n - 1) {
        shmem_barrier_all(); /* the victim never comes: symrun must end us */
        shmem_finalize();
        return 0;
    }

    long local = 0, *priv = malloc(64);
    if (!strcmp(mode, "pe_too_big")) {
        shmem_long_p(&x, 1, n);
    } else if (!strcmp(mode, "pe_negative")) {
        shmem_long_get(&local, &x, 1, -1);
    } else if (!strcmp(mode, "ctx_pe")) {
        shmem_ctx_long_put(SHMEM_CTX_DEFAULT, &x, &local, 1, n + 5);
    } else if (!strcmp(mode, "amo_pe")) {
        shmem_long_atomic_fetch_add(&x, 1, n);
    } else if (!strcmp(mode, "put_stack")) {
        shmem_long_put(&local, &x, 1, 0); /* the destination is on the stack */
    } else if (!strcmp(mode, "get_malloc")) {
        shmem_long_get(&local, priv, 1, 0); /* the source is private heap memory */
    } else if (!strcmp(mode, "amo_stack")) {
        shmem_long_atomic_add(&local, 1, 0);
    } else if (!strcmp(mode, "signal_stack")) {
        shmem_long_put_signal(heap, &local, 1, (uint64_t *)&local, 1, SHMEM_SIGNAL_SET, 0);
    } else if (!strcmp(mode, "past_end")) {
        /* starts in the heap, runs past its end */
        shmem_putmem(heap, priv, (size_t)1 << 40, 0);
    } else if (!strcmp(mode, "misaligned_amo")) {
        shmem_long_atomic_inc((long *)((char *)heap + 4), 0);
    } else if (!strcmp(mode, "bad_cmp")) {
        shmem_long_wait_until(&x, 99, 0);
    } else if (!strcmp(mode, "bad_sig_op")) {
        shmem_putmem_signal(heap, &local, 8, (uint64_t *)&sig, 1, 7, 0);
    } else if (!strcmp(mode, "iput_wrap")) {
        /* 2 elements 2^61 longs apart: the extent, 2^64 bytes, wraps to 0 in
         * 64 bits and would pass a range check computed that way */
        long two[2] = {1, 2};
        shmem_long_iput(heap, two, (ptrdiff_t)1 << 61, 1, 2, 0);
    } else if (!strcmp(mode, "iget_wrap")) {
        long two[2];
        shmem_long_iget(two, heap, 1, -((ptrdiff_t)1 << 61), 2, 0);
    } else if (!strcmp(mode, "free_private")) {
        shmem_free(priv);
    } else if (!strcmp(mode, "after_finalize")) {
        shmem_finalize();
        shmem_long_p(&x, 1, 0);
    } else {
        fprintf(stderr, "shmem_misuse_child: unknown mode '%s'\n", mode);
        return 2;
    }
    printf("PE %d: %s returned instead of ending the job\n", me, mode);
    return 0;
}
