/*
 * osu_pt2pt — put and get latency in the style of the OSU OpenSHMEM
 * micro-benchmarks (osu_oshm_put, osu_oshm_get): buffers on the symmetric
 * heap (-DUSE_HEAP) or in page-aligned global arrays (the default, OSU's
 * "global" mode), start_pes/shmalloc or, with -DOSHM_1_3, shmem_init and
 * shmem_malloc; PE p of the first half talks to PE p + npes/2; a skip and a
 * timed loop per size with shmem_quiet, one latency column per size. Every
 * size's last transfer is verified (a benchmark that moves wrong data fails).
 *
 * @variants -DUSE_GLOBAL ; -DUSE_HEAP ; -DUSE_HEAP -DOSHM_1_3 ; -DOSHM_1_3
 * @npes 2 4
 */
#include <shmem.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#define MAX_MSG_SIZE (1 << 20)
#define MYBUFSIZE (MAX_MSG_SIZE + 4096)
#define SKIP 10
#define LOOP 100
#define SKIP_LARGE 2
#define LOOP_LARGE 10
#define LARGE_MESSAGE_SIZE 8192

#ifndef USE_HEAP
static char s_buf_original[MYBUFSIZE];
static char r_buf_original[MYBUFSIZE];
#endif

static int64_t TIME(void) {
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (int64_t)tv.tv_sec * 1000000 + tv.tv_usec;
}

static char *align_buffer(char *p) { return (char *)(((uintptr_t)p + 4095) & ~(uintptr_t)4095); }

int main(void) {
    int myid, numprocs, errors = 0;
    char *s_buf_heap = NULL, *r_buf_heap = NULL, *s_buf, *r_buf;
#ifdef OSHM_1_3
    shmem_init();
    myid = shmem_my_pe();
    numprocs = shmem_n_pes();
#else
    start_pes(0);
    myid = _my_pe();
    numprocs = _num_pes();
#endif
    if (numprocs % 2) {
        if (myid == 0) fprintf(stderr, "This test requires an even number of PEs\n");
        return EXIT_FAILURE;
    }
#ifdef USE_HEAP
#ifdef OSHM_1_3
    s_buf_heap = (char *)shmem_malloc(MYBUFSIZE);
    r_buf_heap = (char *)shmem_malloc(MYBUFSIZE);
#else
    s_buf_heap = (char *)shmalloc(MYBUFSIZE);
    r_buf_heap = (char *)shmalloc(MYBUFSIZE);
#endif
    s_buf = align_buffer(s_buf_heap);
    r_buf = align_buffer(r_buf_heap);
#else
    s_buf = align_buffer(s_buf_original);
    r_buf = align_buffer(r_buf_original);
#endif
    int pairs = numprocs / 2, peer = myid < pairs ? myid + pairs : myid - pairs;

    for (int get = 0; get <= 1; get++) {
        if (myid == 0) {
            printf("# OSU OpenSHMEM %s Test (%s)\n", get ? "Get" : "Put",
#ifdef USE_HEAP
                   "heap"
#else
                   "global"
#endif
            );
            printf("%-10s%20s\n", "# Size", "Latency (us)");
        }
        for (int size = 1; size <= MAX_MSG_SIZE; size *= 4) {
            int skip = size > LARGE_MESSAGE_SIZE ? SKIP_LARGE : SKIP;
            int loop = size > LARGE_MESSAGE_SIZE ? LOOP_LARGE : LOOP;
            memset(s_buf, myid + size % 7, size);
            memset(r_buf, 0xff, size);
            shmem_barrier_all();
            int64_t t_start = 0, t_end = 0;
            if (myid < pairs) {
                for (int i = 0; i < loop + skip; i++) {
                    if (i == skip) t_start = TIME();
                    if (get)
                        shmem_getmem(r_buf, s_buf, size, peer);
                    else
                        shmem_putmem(r_buf, s_buf, size, peer);
                    shmem_quiet();
                }
                t_end = TIME();
            }
            shmem_barrier_all();
            /* verify: a put lands in the peer's r_buf, a get in mine */
            int from = (get ? myid < pairs : myid >= pairs) ? peer : -1;
            if (from >= 0)
                for (int i = 0; i < size; i++)
                    if (r_buf[i] != (char)(from + size % 7)) {
                        printf("PE %d: %s of %d bytes: byte %d is wrong\n", myid,
                               get ? "get" : "put", size, i);
                        errors++;
                        break;
                    }
            if (myid == 0) {
                double latency = (double)(t_end - t_start) / loop;
                printf("%-10d%20.2f\n", size, latency);
                fflush(stdout);
            }
        }
    }
    shmem_barrier_all();
    if (myid == 0) printf("osu_pt2pt: %s\n", errors ? "FAILED" : "PASS");
#ifdef USE_HEAP
#ifdef OSHM_1_3
    shmem_free(r_buf_heap);
    shmem_free(s_buf_heap);
#else
    shfree(r_buf_heap);
    shfree(s_buf_heap);
#endif
#endif
#ifdef OSHM_1_3
    shmem_finalize();
#endif
    (void)s_buf_heap;
    (void)r_buf_heap;
    return errors ? EXIT_FAILURE : EXIT_SUCCESS;
}
