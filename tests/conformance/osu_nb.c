/*
 * osu_nb — non-blocking transfers and message rate in the style of
 * osu_oshm_put_nb, osu_oshm_get_nb, osu_oshm_put_mr_nb and
 * osu_oshm_put_overlap, plus the ping-pong the way SOS's pingpong tests write
 * it: a `static volatile` flag handed to shmem_wait_until (generic) and to
 * shmem_wait. Windows of shmem_putmem_nbi / shmem_getmem_nbi completed by
 * shmem_quiet, some dummy computation between issue and quiet; every window's
 * data is verified.
 *
 * @variants ; -DUSE_CTX
 * @npes 2 4
 */
#include <shmem.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#define WINDOW 64
#define MAX_SIZE (1 << 16)
#define LOOP 20
#define PINGS 200

static volatile long flag;
static volatile long pong;
static int errors;

static int64_t TIME(void) {
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (int64_t)tv.tv_sec * 1000000 + tv.tv_usec;
}

static double dummy_compute(int us) { /* the overlap benchmarks' busy work */
    volatile double x = 0;
    int64_t end = TIME() + us;
    while (TIME() < end) x += 1.0;
    return x;
}

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();
    if (npes % 2) {
        if (me == 0) fprintf(stderr, "This test requires an even number of PEs\n");
        shmem_global_exit(1);
    }
    int pairs = npes / 2, peer = me < pairs ? me + pairs : me - pairs;
    char *src = shmem_malloc((size_t)WINDOW * MAX_SIZE);
    char *dst = shmem_malloc((size_t)WINDOW * MAX_SIZE);
    shmem_ctx_t ctx = SHMEM_CTX_DEFAULT;
#ifdef USE_CTX
    if (shmem_ctx_create(SHMEM_CTX_PRIVATE, &ctx) != 0) ctx = SHMEM_CTX_DEFAULT;
#endif
    if (me == 0) printf("# OSU OpenSHMEM Put/Get Message Rate Test (non-blocking)\n");
    for (int get = 0; get <= 1; get++)
        for (int size = 1; size <= MAX_SIZE; size *= 16) {
            for (int w = 0; w < WINDOW; w++) memset(src + (size_t)w * size, me + w, size);
            memset(dst, 0, (size_t)WINDOW * size);
            shmem_barrier_all();
            int64_t t0 = TIME();
            if (me < pairs) {
                for (int l = 0; l < LOOP; l++) {
                    for (int w = 0; w < WINDOW; w++) {
                        if (get)
                            shmem_ctx_getmem_nbi(ctx, dst + (size_t)w * size,
                                                 src + (size_t)w * size, size, peer);
                        else
                            shmem_ctx_putmem_nbi(ctx, dst + (size_t)w * size,
                                                 src + (size_t)w * size, size, peer);
                    }
                    if (l == 0) dummy_compute(5); /* overlap */
                    shmem_ctx_quiet(ctx);
                }
            }
            int64_t t1 = TIME();
            shmem_barrier_all();
            if (get ? me < pairs : me >= pairs)
                for (int w = 0; w < WINDOW; w++)
                    for (int i = 0; i < size; i++)
                        if (dst[(size_t)w * size + i] != (char)(peer + w)) {
                            printf("PE %d: %s_nbi of %d bytes, window %d: byte %d wrong\n", me,
                                   get ? "getmem" : "putmem", size, w, i);
                            errors++;
                            w = WINDOW;
                            break;
                        }
            if (me == 0)
                printf("%s %-10d%14.2f\n", get ? "get" : "put", size,
                       (double)LOOP * WINDOW * 1e6 / (double)(t1 - t0 + 1));
        }

    /* ping-pong on volatile flags */
    shmem_barrier_all();
    int64_t t0 = TIME();
    for (long i = 1; i <= PINGS; i++) {
        if (me < pairs) {
            shmem_long_p((long *)&flag, i, peer);
            shmem_wait_until(&pong, SHMEM_CMP_EQ, i);
        } else {
            shmem_wait_until(&flag, SHMEM_CMP_GE, i);
            shmem_long_p((long *)&pong, i, peer);
        }
    }
    int64_t t1 = TIME();
    if (me == 0) printf("# ping-pong latency %.2f us\n", (double)(t1 - t0) / PINGS / 2);
    shmem_barrier_all();
    /* shmem_wait: wait while the flag still holds its old value */
    if (me < pairs) shmem_long_p((long *)&flag, -1, peer);
    else shmem_wait(&flag, PINGS);
    if (me >= pairs && flag != -1) {
        printf("PE %d: shmem_wait returned with flag %ld\n", me, flag);
        errors++;
    }
    if (ctx != SHMEM_CTX_DEFAULT) shmem_ctx_destroy(ctx);
    static int all;
    shmem_int_atomic_add(&all, errors, 0);
    shmem_barrier_all();
    if (me == 0) printf("osu_nb: %s\n", all ? "FAILED" : "PASS");
    shmem_free(dst);
    shmem_free(src);
    shmem_finalize();
    return errors ? EXIT_FAILURE : EXIT_SUCCESS;
}
