/*
 * uh_atomics_locks — the OpenSHMEM 1.0-1.3 atomics, locks and waits as older
 * programs write them: shmem_int_fadd / _finc / _add / _inc / _cswap / _swap,
 * the long, long long, float and double kin, shmem_swap, shmem_TYPE_fetch
 * and _set; shmem_set_lock / shmem_test_lock / shmem_clear_lock around a
 * counter; flags declared volatile handed to shmem_wait, shmem_TYPE_wait and
 * shmem_TYPE_wait_until (the 1.3 prototypes took volatile pointers).
 *
 * @variants ; -std=c99 -Wpedantic
 * @npes 2 4
 */
#include <mpp/shmem.h> /* the SGI / Cray include path, as the UH tests have it */
#include <stdio.h>

static int ival;
static long lval;
static long long llval;
static float fval;
static double dval;
static long lock;
static long counter;
static volatile long flag;
static volatile int iflag;
static volatile short sflag;

static int me, npes, failures;

static void result(const char *name, int ok) {
    static int oks[64];
    int i, all = 1;
    shmem_int_p(&oks[me], ok, 0);
    shmem_barrier_all();
    if (me == 0) {
        for (i = 0; i < npes; i++) all &= oks[i];
        printf("Test %s: %s\n", name, all ? "Passed" : "Failed");
        failures += !all;
    }
    shmem_barrier_all();
}

int main(void) {
    int i, ok;
    start_pes(0);
    me = _my_pe();
    npes = _num_pes();

    /* fetch-and-add and friends on PE 0 */
    ok = 1;
    for (i = 0; i < 10; i++) {
        int o = shmem_int_fadd(&ival, 2, 0);
        long lo = shmem_long_finc(&lval, 0);
        long long llo = shmem_longlong_fadd(&llval, 3, 0);
        ok &= o >= 0 && o < 30 * npes && lo >= 0 && lo < 50 * npes && llo >= 0 && llo < 40 * npes;
        shmem_int_inc(&ival, 0);
        shmem_long_add(&lval, 4, 0);
        shmem_longlong_inc(&llval, 0);
    }
    shmem_barrier_all();
    if (me == 0) ok &= ival == 30 * npes && lval == 50 * npes && llval == 40 * npes;
    ok &= shmem_int_fetch(&ival, 0) == 30 * npes && shmem_long_fetch(&lval, 0) == 50 * npes &&
          shmem_longlong_fetch(&llval, 0) == 40 * npes;
    result("shmem_int_fadd/_inc, shmem_long_finc/_add, shmem_longlong_fadd/_inc, _fetch", ok);

    /* swap: every PE swaps its number in; all old values are distinct */
    ok = 1;
    if (me == 0) lval = -1;
    shmem_barrier_all();
    {
        static long olds[64];
        long old = shmem_long_swap(&lval, me, 0);
        shmem_long_p(&olds[me], old, 0);
        shmem_barrier_all();
        if (me == 0) {
            long seen = 0; /* bit p+1: value p seen; bit 0: -1 seen */
            for (i = 0; i < npes; i++) seen |= 1L << (olds[i] + 1);
            seen |= 1L << (lval + 1);
            ok &= seen == (1L << (npes + 1)) - 1;
        }
    }
    ok &= shmem_swap(&counter, 0, me) == 0; /* the untyped 1.0 name, long */
    result("shmem_long_swap, shmem_swap", ok);

    /* compare-and-swap: exactly one PE wins */
    ok = 1;
    if (me == 0) ival = 0;
    shmem_barrier_all();
    {
        static int winners;
        if (shmem_int_cswap(&ival, 0, me + 1, 0) == 0) shmem_int_inc(&winners, 0);
        shmem_barrier_all();
        if (me == 0) ok &= winners == 1 && ival >= 1 && ival <= npes;
        ok &= shmem_longlong_cswap(&llval, -5, 7, 0) == 40 * npes; /* no match: unchanged */
    }
    result("shmem_int_cswap, shmem_longlong_cswap", ok);

    /* float / double swap, fetch, set on the right-hand PE */
    ok = 1;
    shmem_float_set(&fval, (float)me + 0.5f, (me + 1) % npes);
    shmem_double_set(&dval, me * 2.0, (me + 1) % npes);
    shmem_barrier_all();
    {
        int left = (me + npes - 1) % npes;
        ok &= fval == (float)left + 0.5f && dval == left * 2.0;
        ok &= shmem_float_swap(&fval, 9.0f, me) == (float)left + 0.5f;
        ok &= shmem_double_swap(&dval, 8.0, me) == left * 2.0;
        ok &= shmem_float_fetch(&fval, me) == 9.0f && shmem_double_fetch(&dval, me) == 8.0;
        shmem_int_set(&ival, 3, me);
        ok &= shmem_int_swap(&ival, 4, me) == 3 && shmem_long_fetch(&counter, me) == 0;
    }
    result("shmem_float/double_swap/_fetch/_set", ok);

    /* a lock around a read-modify-write of a counter on PE 0 */
    ok = 1;
    counter = 0;
    shmem_barrier_all();
    for (i = 0; i < 20; i++) {
        long v;
        if (i % 2) {
            while (shmem_test_lock(&lock)) {}
        } else {
            shmem_set_lock(&lock);
        }
        v = shmem_long_g(&counter, 0);
        shmem_long_p(&counter, v + 1, 0);
        shmem_quiet();
        shmem_clear_lock(&lock);
    }
    shmem_barrier_all();
    if (me == 0) ok &= counter == 20L * npes;
    result("shmem_set_lock/test_lock/clear_lock", ok);

    /* waits on volatile flags, set by the left-hand PE */
    ok = 1;
    shmem_barrier_all();
    shmem_long_p((long *)&flag, me + 1, (me + 1) % npes);
    shmem_wait(&flag, 0);
    shmem_int_p((int *)&iflag, me + 1, (me + 1) % npes);
    shmem_int_wait(&iflag, 0);
    shmem_short_p((short *)&sflag, (short)(me + 1), (me + 1) % npes);
    shmem_short_wait(&sflag, 0);
    shmem_long_wait_until((long *)&flag, SHMEM_CMP_GE, 1);
    shmem_wait_until((long *)&flag, SHMEM_CMP_GE, 1); /* 1.0's untyped form (C99 build) */
    shmem_int_wait_until((int *)&iflag, _SHMEM_CMP_GT, 0);
    {
        int left = (me + npes - 1) % npes;
        ok &= flag == left + 1 && iflag == left + 1 && sflag == left + 1;
    }
    result("shmem_wait, shmem_int_wait, shmem_short_wait, _wait_until", ok);

    if (me == 0) printf("uh_atomics_locks: %s (%d PEs)\n", failures ? "FAILED" : "PASS", npes);
    shmem_barrier_all();
    return failures ? 1 : 0;
}
