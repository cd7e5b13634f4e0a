/*
 * sos_misc — the small Sandia-OpenSHMEM-style unit tests: shmem_info, query
 * calls, shmem_malloc_with_hints, shmem_calloc, shmem_realloc/shrealloc,
 * shmem_align, zero-length transfers and collectives, active sets of one PE
 * (self collectives), big puts and gets into a large static array (the
 * program's BSS must be symmetric), fence ordering, pcontrol, cache calls.
 *
 * @variants ; -DUSE_OLD_NAMES
 * @npes 2 4
 */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BIG (8 << 20)
static char big_src[BIG], big_dst[BIG]; /* 16 MiB of BSS */
static long pSync[SHMEM_SYNC_SIZE];
static long data[64], flag;
static int errors;

#define EXPECT(cond, what)                                                           \
    do {                                                                             \
        if (!(cond)) {                                                               \
            printf("PE %d: FAIL: %s (line %d)\n", shmem_my_pe(), what, __LINE__);    \
            errors++;                                                                \
        }                                                                            \
    } while (0)

#ifdef USE_OLD_NAMES
#define INIT() start_pes(0)
#define MY_PE() _my_pe()
#define N_PES() _num_pes()
#define MALLOC(n) shmalloc(n)
#define FREE(p) shfree(p)
#define REALLOC(p, n) shrealloc(p, n)
#define ALIGN(a, n) shmemalign(a, n)
#else
#define INIT() shmem_init()
#define MY_PE() shmem_my_pe()
#define N_PES() shmem_n_pes()
#define MALLOC(n) shmem_malloc(n)
#define FREE(p) shmem_free(p)
#define REALLOC(p, n) shmem_realloc(p, n)
#define ALIGN(a, n) shmem_align(a, n)
#endif

int main(void) {
    for (int i = 0; i < SHMEM_SYNC_SIZE; i++) pSync[i] = SHMEM_SYNC_VALUE;
    INIT();
    int me = MY_PE(), npes = N_PES(), right = (me + 1) % npes, left = (me + npes - 1) % npes;

    int major, minor;
    char name[SHMEM_MAX_NAME_LEN];
    shmem_info_get_version(&major, &minor);
    shmem_info_get_name(name);
    EXPECT(major == SHMEM_MAJOR_VERSION && minor == SHMEM_MINOR_VERSION, "info version");
    EXPECT(strncmp(name, SHMEM_VENDOR_STRING, SHMEM_MAX_NAME_LEN) == 0, "vendor string");
    EXPECT(shmem_pe_accessible(right) && shmem_addr_accessible(data, right), "accessible");
    shmem_pcontrol(1);

    long *h = shmem_malloc_with_hints(100 * sizeof(long), SHMEM_MALLOC_ATOMICS_REMOTE);
    long *h2 = shmem_malloc_with_hints(100 * sizeof(long), 0);
    long *c = shmem_calloc(100, sizeof(long));
    EXPECT(h && h2 && c, "allocations");
    for (int i = 0; i < 100; i++) EXPECT(c[i] == 0, "calloc zeroes");
    shmem_long_atomic_inc(&h[0], right);
    h = REALLOC(h, 10000 * sizeof(long));
    char *a = ALIGN(4096, 100);
    EXPECT(a && (size_t)a % 4096 == 0, "align");
    FREE(a);
    FREE(h2);
    FREE(c);
    FREE(h);

    /* zero-length everything */
    shmem_putmem(data, data, 0, right);
    shmem_getmem(data, data, 0, right);
    shmem_long_put(data, data, 0, right);
    shmem_long_iput(data, data, 1, 1, 0, right);
    shmem_long_put_nbi(data, data, 0, right);
    shmem_broadcast64(data, data, 0, 0, 0, 0, npes, pSync);
    shmem_barrier_all();
    shmem_fcollect64(data, data, 0, 0, 0, npes, pSync);
    shmem_barrier_all();
    shmem_long_broadcast(SHMEM_TEAM_WORLD, data, data, 0, 0);
    shmem_long_sum_reduce(SHMEM_TEAM_WORLD, data, data, 0);
    shmem_long_fcollect(SHMEM_TEAM_WORLD, data, data, 0);
    shmem_long_alltoall(SHMEM_TEAM_WORLD, data, data, 0);

    /* self collectives: each PE is an active set of one */
    static long s[8], d[8], wrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE + 8];
    for (int i = 0; i < 8; i++) s[i] = me * 10 + i;
    shmem_barrier(me, 0, 1, pSync);
    shmem_long_sum_to_all(d, s, 8, me, 0, 1, wrk, pSync);
    for (int i = 0; i < 8; i++) EXPECT(d[i] == me * 10 + i, "self sum_to_all");
    shmem_fcollect64(d, s, 8, me, 0, 1, pSync);
    for (int i = 0; i < 8; i++) EXPECT(d[i] == me * 10 + i, "self fcollect");
    shmem_barrier_all();

    /* big transfers through the BSS */
    for (size_t i = 0; i < BIG; i += 4096) big_src[i] = (char)(me + i / 4096);
    big_src[BIG - 1] = (char)(me + 77);
    shmem_barrier_all();
    shmem_putmem(big_dst, big_src, BIG, right);
    shmem_barrier_all();
    for (size_t i = 0; i < BIG; i += 4096)
        if (big_dst[i] != (char)(left + i / 4096)) {
            EXPECT(0, "big put");
            break;
        }
    EXPECT(big_dst[BIG - 1] == (char)(left + 77), "big put, last byte");
    shmem_getmem(big_dst, big_src, BIG, right);
    EXPECT(big_dst[BIG - 1] == (char)(right + 77) && big_dst[4096] == (char)(right + 1), "big get");

    /* fence: data, fence, flag; the receiver sees the data once it sees the flag */
    shmem_barrier_all();
    for (int i = 0; i < 64; i++) shmem_long_p(&data[i], me * 100 + i, right);
    shmem_fence();
    shmem_long_p(&flag, 1, right);
    shmem_long_wait_until(&flag, SHMEM_CMP_EQ, 1);
    for (int i = 0; i < 64; i++) EXPECT(data[i] == left * 100 + i, "fence ordering");

    shmem_clear_cache_inv();
    shmem_set_cache_inv();
    shmem_udcflush();
    static int errs;
    shmem_int_atomic_add(&errs, errors, 0);
    shmem_barrier_all();
    if (me == 0) printf("sos_misc: %s (%d PEs)\n", errs ? "FAILED" : "PASS", npes);
    shmem_finalize();
    return errors ? 1 : 0;
}
