/*
 * spec_examples — more of the OpenSHMEM 1.5 specification's examples, in the
 * specification's own patterns: the active-set barrier of the even PEs with a
 * pSync filled before shmem_init (no barrier before first use); the sync
 * example's "twos" and "threes" teams (a split of size 0 fails and leaves
 * SHMEM_TEAM_INVALID); the 3-D split (split_2d of the world into xy planes and
 * z columns, then split_2d of each plane); the collect and fcollect examples;
 * the lock example; the atomic examples; put_signal with SHMEM_SIGNAL_ADD from
 * every PE; wait_until_any_vector and test_some; the quiet example (3+ PEs).
 * Each checks what the specification says it prints.
 *
 * @npes 2 3 4
 */
#include <shmem.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static int errors;
#define EXPECT(cond, ...)                                                            \
    do {                                                                             \
        if (!(cond)) {                                                               \
            printf("PE %d: FAIL at line %d: ", shmem_my_pe(), __LINE__);             \
            printf(__VA_ARGS__);                                                     \
            printf("\n");                                                            \
            errors++;                                                                \
        }                                                                            \
    } while (0)

static long pSync[SHMEM_BARRIER_SYNC_SIZE];

static void barrier_example(int me, int npes) {
    static int x = 10101;
    int hit = 0; /* does an even PE put into me? */
    for (int e = 0; e < npes; e += 2) hit |= (e + 2) % npes == me;
    if (me % 2 == 0) {
        /* put to next even PE in a circular fashion */
        shmem_p(&x, 4, (me + 2) % npes);
        /* synchronize all even pes */
        shmem_barrier(0, 1, (npes / 2 + npes % 2), pSync);
        if (hit) EXPECT(x == 4, "barrier example: x = %d after the even PEs' barrier", x);
    }
    shmem_barrier_all();
    EXPECT(x == (hit ? 4 : 10101), "barrier example: x = %d", x);
    shmem_barrier_all();
}

static void sync_example(int me, int npes) {
    static int x = 10101;
    shmem_team_t twos_team = SHMEM_TEAM_INVALID, threes_team = SHMEM_TEAM_INVALID;
    shmem_team_config_t *config = NULL;
    int r2 = shmem_team_split_strided(SHMEM_TEAM_WORLD, 2, 2, (npes - 1) / 2, config, 0,
                                      &twos_team);
    int r3 = shmem_team_split_strided(SHMEM_TEAM_WORLD, 3, 3, (npes - 1) / 3, config, 0,
                                      &threes_team);
    EXPECT((r2 == 0) == ((npes - 1) / 2 > 0), "twos split returned %d", r2);
    EXPECT((r3 == 0) == ((npes - 1) / 3 > 0), "threes split returned %d", r3);
    int mype = me;
    if (mype && mype % 2 == 0) {
        /* Server PE for twos_team */
        EXPECT(twos_team != SHMEM_TEAM_INVALID, "PE %d has no twos team", mype);
        shmem_p(&x, 2, 0); /* PE 0 collects */
        shmem_quiet();
        shmem_sync(twos_team);
    }
    if (mype && mype % 3 == 0) {
        EXPECT(threes_team != SHMEM_TEAM_INVALID, "PE %d has no threes team", mype);
        shmem_sync(threes_team);
    }
    if (twos_team != SHMEM_TEAM_INVALID) shmem_team_destroy(twos_team);
    if (threes_team != SHMEM_TEAM_INVALID) shmem_team_destroy(threes_team);
    shmem_barrier_all();
}

/* from the 3-D example: a (near) cube factorisation */
static void find_xyz_dims(int npes, int *x, int *y, int *z) {
    *x = npes, *y = 1, *z = 1;
    for (int zz = 1; zz * zz * zz <= npes; zz++)
        for (int yy = zz; zz * yy * yy <= npes; yy++)
            if (npes % (zz * yy) == 0 && npes / (zz * yy) >= yy) {
                *z = zz;
                *y = yy;
                *x = npes / (zz * yy);
            }
}

static void split3d_example(int me, int npes) {
    int xdim, ydim, zdim;
    find_xyz_dims(npes, &xdim, &ydim, &zdim);
    shmem_team_t xteam, yteam, zteam, xyteam;
    int r1 = shmem_team_split_2d(SHMEM_TEAM_WORLD, xdim * ydim, NULL, 0, &xyteam, NULL, 0,
                                 &zteam);
    int r2 = shmem_team_split_2d(xyteam, xdim, NULL, 0, &xteam, NULL, 0, &yteam);
    EXPECT(r1 == 0 && r2 == 0, "3-D splits returned %d %d", r1, r2);
    int my_x = shmem_team_my_pe(xteam), my_y = shmem_team_my_pe(yteam),
        my_z = shmem_team_my_pe(zteam);
    EXPECT(my_x == me % xdim && my_y == (me / xdim) % ydim && my_z == me / (xdim * ydim),
           "3-D coordinates (%d, %d, %d) of PE %d in %dx%dx%d", my_x, my_y, my_z, me, xdim, ydim,
           zdim);
    for (int zdx = 0; zdx < zdim; zdx++) {
        for (int ydx = 0; ydx < ydim; ydx++) {
            shmem_team_sync(xyteam);
            (void)ydx;
        }
        shmem_team_sync(SHMEM_TEAM_WORLD);
    }
    shmem_team_destroy(xteam);
    shmem_team_destroy(yteam);
    shmem_team_destroy(zteam);
    shmem_team_destroy(xyteam);
}

static void collect_examples(int me, int npes) {
    int my_nelem = me + 1; /* linearly increasing number of elements with PE */
    int total_nelem = (npes * (npes + 1)) / 2;
    int *source = (int *)shmem_malloc(npes * sizeof(int)); /* symmetric alloc */
    int *dest = (int *)shmem_malloc(total_nelem * sizeof(int));
    for (int i = 0; i < my_nelem; i++) source[i] = (me * (me + 1)) / 2 + i;
    for (int i = 0; i < total_nelem; i++) dest[i] = -9999;
    /* Wait for all PEs to initialize source/dest: */
    shmem_team_sync(SHMEM_TEAM_WORLD);
    shmem_int_collect(SHMEM_TEAM_WORLD, dest, source, my_nelem);
    for (int i = 0; i < total_nelem; i++) EXPECT(dest[i] == i, "collect dest[%d] = %d", i, dest[i]);
    shmem_free(dest);
    shmem_free(source);

    static int64_t src[2];
    int64_t *dst = shmem_malloc(2 * npes * sizeof(int64_t));
    src[0] = me * 2;
    src[1] = me * 2 + 1;
    shmem_int64_fcollect(SHMEM_TEAM_WORLD, dst, src, 2);
    for (int i = 0; i < 2 * npes; i++) EXPECT(dst[i] == i, "fcollect dest[%d]", i);
    shmem_free(dst);
}

static void lock_example(int me, int npes) {
    static long lock = 0;
    static int count = 0;
    shmem_set_lock(&lock);
    int val = shmem_int_g(&count, 0); /* get count value on PE 0 */
    val++;                            /* incrementing and updating count on PE 0 */
    shmem_int_p(&count, val, 0);
    shmem_quiet();
    shmem_clear_lock(&lock);
    shmem_barrier_all();
    if (me == 0) EXPECT(count == npes, "lock example: count %d", count);
}

static void atomic_examples(int me, int npes) {
    static int race_winner = -1;
    int oldval = shmem_atomic_compare_swap(&race_winner, -1, me, 0);
    shmem_barrier_all();
    int winner = shmem_atomic_fetch(&race_winner, 0);
    EXPECT(winner >= 0 && winner < npes && (oldval == -1) == (winner == me), "race winner");

    long *target = shmem_malloc(sizeof(long));
    *target = me;
    shmem_barrier_all();
    long new_val = me;
    if (me & 1) {
        long swapped_val = shmem_atomic_swap(target, new_val, (me + 1) % npes);
        EXPECT(swapped_val == (me + 1) % npes, "swap example: %ld", swapped_val);
    }
    shmem_barrier_all();
    shmem_free(target);

    static uint64_t flags;
    uint64_t old = shmem_atomic_fetch_or(&flags, (uint64_t)1 << me, 0);
    EXPECT(!(old & ((uint64_t)1 << me)), "fetch_or example");
    static int dst;
    shmem_atomic_inc(&dst, 0);
    shmem_atomic_add(&dst, 2, (me + 1) % npes);
    shmem_barrier_all();
    EXPECT(dst == 2 + (me == 0 ? npes : 0), "inc/add examples: %d", dst);
    if (me == 0) EXPECT(flags == ((uint64_t)1 << npes) - 1, "flags %llx", (unsigned long long)flags);
    shmem_barrier_all();
}

static void signal_and_wait_examples(int me, int npes) {
    static long buf[64];
    static uint64_t sig_addr = 0;
    long src[4] = {me, me, me, me};
    shmem_long_put_signal(&buf[me * 4], src, 4, &sig_addr, 1, SHMEM_SIGNAL_ADD, 0);
    if (me == 0) {
        shmem_signal_wait_until(&sig_addr, SHMEM_CMP_EQ, (uint64_t)npes);
        for (int p = 0; p < npes; p++) EXPECT(buf[p * 4 + 3] == p, "put_signal data from %d", p);
    }
    shmem_barrier_all();

    int *ivars = shmem_calloc(npes, sizeof(int));
    int *status = calloc(npes, sizeof(int));
    int *cmp_values = malloc(npes * sizeof(int));
    size_t *indices = malloc(npes * sizeof(size_t));
    for (int i = 0; i < npes; i++) {
        shmem_int_p(&ivars[me], me, i);
        cmp_values[i] = i;
    }
    size_t idx = shmem_int_wait_until_any_vector(ivars, npes, status, SHMEM_CMP_EQ, cmp_values);
    EXPECT(idx < (size_t)npes, "wait_until_any_vector gave %zu", idx);
    shmem_barrier_all();
    size_t n = shmem_int_test_some(ivars, npes, indices, NULL, SHMEM_CMP_GE, 0);
    EXPECT(n == (size_t)npes, "test_some gave %zu", n);
    shmem_barrier_all();
    free(indices);
    free(cmp_values);
    free(status);
    shmem_free(ivars);
}

static void quiet_example(int me, int npes) {
    static long dest[3];
    static long source[3] = {1, 2, 3};
    static int targ;
    static int src = 90;
    long x[3] = {0};
    int y = 0;
    if (npes < 3) return; /* the example talks to PEs 1 and 2 */
    if (me == 0) {
        shmem_put(dest, source, 3, 1); /* put1 */
        shmem_put(&targ, &src, 1, 2);  /* put2 */
        shmem_quiet();
        shmem_get(x, dest, 3, 1);
        shmem_get(&y, &targ, 1, 2);
        EXPECT(x[0] == 1 && x[1] == 2 && x[2] == 3 && y == 90, "quiet example");
    }
    shmem_barrier_all();
}

int main(void) {
    for (int i = 0; i < SHMEM_BARRIER_SYNC_SIZE; i++) pSync[i] = SHMEM_SYNC_VALUE;
    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();
    barrier_example(me, npes);
    sync_example(me, npes);
    split3d_example(me, npes);
    collect_examples(me, npes);
    lock_example(me, npes);
    atomic_examples(me, npes);
    signal_and_wait_examples(me, npes);
    quiet_example(me, npes);
    static int all;
    shmem_int_atomic_add(&all, errors, 0);
    shmem_barrier_all();
    if (me == 0) printf("spec_examples: %s (%d PEs)\n", all ? "FAILED" : "PASS", npes);
    shmem_finalize();
    return errors ? 1 : 0;
}
