/*
 * uh_collectives — the deprecated active-set collectives the way older
 * validation programs use them: pSync arrays declared with the _SHMEM_*
 * sizes and filled with _SHMEM_SYNC_VALUE, a shmem_barrier_all before first
 * use, pWrk arrays of _SHMEM_REDUCE_MIN_WRKDATA_SIZE or nreduce/2 + 1
 * elements, whole-world and strided active sets (PE_start, logPE_stride,
 * PE_size), the same pSync reused after a barrier.
 *
 * @variants ; -std=c99 -Wpedantic
 * @npes 2 4
 */
#include <complex.h>
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>

#define N 16

static long pSync[_SHMEM_BCAST_SYNC_SIZE];
static long pSyncA[_SHMEM_REDUCE_SYNC_SIZE], pSyncB[_SHMEM_REDUCE_SYNC_SIZE];
static long pSyncC[_SHMEM_COLLECT_SYNC_SIZE], pSyncBar[_SHMEM_BARRIER_SYNC_SIZE];
static long pSyncA2A[_SHMEM_ALLTOALL_SYNC_SIZE];

static int me, npes, failures;

static void check(const char *name, int ok) {
    static int flags[64];
    int i, all = 1;
    flags[me] = ok; /* everyone reports into PE 0's copy */
    shmem_int_p(&flags[me], ok, 0);
    shmem_barrier_all();
    if (me == 0) {
        for (i = 0; i < npes; i++) all &= flags[i];
        printf("Test %s: %s\n", name, all ? "Passed" : "Failed");
        if (!all) failures++;
    }
    shmem_barrier_all();
}

static void broadcasts(void) {
    static long src64[N], dst64[N];
    static int src32[N], dst32[N];
    int i, root, ok = 1;
    for (root = 0; root < npes; root++) {
        for (i = 0; i < N; i++) {
            src64[i] = root * 100 + i;
            src32[i] = root * 10 + i;
            dst64[i] = dst32[i] = -1;
        }
        shmem_barrier_all();
        shmem_broadcast64(dst64, src64, N, root, 0, 0, npes, pSync);
        shmem_barrier_all(); /* pSync reused by the next call */
        shmem_broadcast32(dst32, src32, N, root, 0, 0, npes, pSync);
        shmem_barrier_all();
        for (i = 0; i < N; i++) {
            if (me == root) ok &= dst64[i] == -1 && dst32[i] == -1; /* root's dest untouched */
            else ok &= dst64[i] == root * 100 + i && dst32[i] == root * 10 + i;
        }
    }
    check("shmem_broadcast32/64", ok);
    /* the even PEs only: PE_start 0, logPE_stride 1 */
    ok = 1;
    for (i = 0; i < N; i++) dst64[i] = -1;
    shmem_barrier_all();
    if (me % 2 == 0) {
        shmem_broadcast64(dst64, src64, N, 0, 0, 1, (npes + 1) / 2, pSync);
        if (me != 0)
            for (i = 0; i < N; i++) ok &= dst64[i] == (npes - 1) * 100 + i;
    }
    shmem_barrier_all();
    check("shmem_broadcast64 on the even PEs", ok);
}

static void collects(void) {
    static int src[N], dst[N * 64];
    static long lsrc[N], ldst[N * 64];
    int i, p, k, ok = 1;
    /* PE p contributes p + 1 elements */
    for (i = 0; i < N; i++) {
        src[i] = me * 100 + i;
        lsrc[i] = -(me * 100 + i);
    }
    shmem_barrier_all();
    shmem_collect32(dst, src, me + 1, 0, 0, npes, pSyncC);
    shmem_barrier_all();
    shmem_collect64(ldst, lsrc, me + 1, 0, 0, npes, pSyncC);
    k = 0;
    for (p = 0; p < npes; p++)
        for (i = 0; i <= p; i++, k++) ok &= dst[k] == p * 100 + i && ldst[k] == -(p * 100 + i);
    check("shmem_collect32/64", ok);
    ok = 1;
    shmem_barrier_all();
    shmem_fcollect32(dst, src, N, 0, 0, npes, pSyncC);
    shmem_barrier_all();
    shmem_fcollect64(ldst, lsrc, N, 0, 0, npes, pSyncC);
    for (p = 0; p < npes; p++)
        for (i = 0; i < N; i++)
            ok &= dst[p * N + i] == p * 100 + i && ldst[p * N + i] == -(p * 100 + i);
    check("shmem_fcollect32/64", ok);
    ok = 1;
    shmem_barrier_all();
    for (i = 0; i < npes; i++) src[i] = me * 10 + i;
    shmem_barrier_all();
    shmem_alltoall32(dst, src, 1, 0, 0, npes, pSyncA2A);
    for (p = 0; p < npes; p++) ok &= dst[p] == p * 10 + me;
    shmem_barrier_all();
    for (i = 0; i < 2 * npes; i++) lsrc[i] = me * 10 + i;
    shmem_alltoalls64(ldst, lsrc, 1, 2, 1, 0, 0, npes, pSyncA2A);
    for (p = 0; p < npes; p++) ok &= ldst[p] == p * 10 + 2 * me;
    check("shmem_alltoall32, shmem_alltoalls64", ok);
}

/* every _to_all: PE p contributes p + 1 (and 1 << p for the bitwise ones) */
#define TOALL(T, NAME, OP, VAL, WANT)                                                \
    {                                                                                \
        static T s[N], d[N];                                                         \
        static T w[N / 2 + 1 > _SHMEM_REDUCE_MIN_WRKDATA_SIZE ? N / 2 + 1            \
                                                              : _SHMEM_REDUCE_MIN_WRKDATA_SIZE]; \
        T want = (T)0;                                                               \
        int i, p, ok = 1;                                                            \
        for (i = 0; i < N; i++) s[i] = (T)(VAL(me));                                 \
        for (p = 0; p < npes; p++) want = p == 0 ? (T)(VAL(p)) : (T)(WANT(want, (T)(VAL(p)))); \
        shmem_##NAME##_##OP##_to_all(d, s, N, 0, 0, npes, w, flip ? pSyncA : pSyncB); \
        flip = !flip;                                                                \
        for (i = 0; i < N; i++) ok &= d[i] == want;                                  \
        shmem_##NAME##_##OP##_to_all(s, s, N, 0, 0, npes, w, flip ? pSyncA : pSyncB); \
        flip = !flip;                                                                \
        for (i = 0; i < N; i++) ok &= s[i] == want;                                  \
        check("shmem_" #NAME "_" #OP "_to_all", ok);                                 \
    }
#define PLUS1(p) ((p) + 1)
#define BIT(p) (1 << (p))
#define SUM(a, b) ((a) + (b))
#define PROD(a, b) ((a) * (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define AND(a, b) ((a) & (b))
#define OR(a, b) ((a) | (b))
#define XOR(a, b) ((a) ^ (b))

static void reductions(void) {
    int flip = 0;
    TOALL(short, short, sum, PLUS1, SUM) TOALL(int, int, sum, PLUS1, SUM)
    TOALL(long, long, sum, PLUS1, SUM) TOALL(long long, longlong, sum, PLUS1, SUM)
    TOALL(float, float, sum, PLUS1, SUM) TOALL(double, double, sum, PLUS1, SUM)
    TOALL(long double, longdouble, sum, PLUS1, SUM)
    TOALL(float _Complex, complexf, sum, PLUS1, SUM)
    TOALL(double _Complex, complexd, sum, PLUS1, SUM)
    TOALL(short, short, prod, PLUS1, PROD) TOALL(int, int, prod, PLUS1, PROD)
    TOALL(long, long, prod, PLUS1, PROD) TOALL(long long, longlong, prod, PLUS1, PROD)
    TOALL(float, float, prod, PLUS1, PROD) TOALL(double, double, prod, PLUS1, PROD)
    TOALL(long double, longdouble, prod, PLUS1, PROD)
    TOALL(float _Complex, complexf, prod, PLUS1, PROD)
    TOALL(double _Complex, complexd, prod, PLUS1, PROD)
    TOALL(short, short, max, PLUS1, MAX) TOALL(int, int, max, PLUS1, MAX)
    TOALL(long, long, max, PLUS1, MAX) TOALL(long long, longlong, max, PLUS1, MAX)
    TOALL(float, float, max, PLUS1, MAX) TOALL(double, double, max, PLUS1, MAX)
    TOALL(long double, longdouble, max, PLUS1, MAX)
    TOALL(short, short, min, PLUS1, MIN) TOALL(int, int, min, PLUS1, MIN)
    TOALL(long, long, min, PLUS1, MIN) TOALL(long long, longlong, min, PLUS1, MIN)
    TOALL(float, float, min, PLUS1, MIN) TOALL(double, double, min, PLUS1, MIN)
    TOALL(long double, longdouble, min, PLUS1, MIN)
    TOALL(short, short, and, BIT, AND) TOALL(int, int, and, BIT, AND)
    TOALL(long, long, and, BIT, AND) TOALL(long long, longlong, and, BIT, AND)
    TOALL(short, short, or, BIT, OR) TOALL(int, int, or, BIT, OR)
    TOALL(long, long, or, BIT, OR) TOALL(long long, longlong, or, BIT, OR)
    TOALL(short, short, xor, BIT, XOR) TOALL(int, int, xor, BIT, XOR)
    TOALL(long, long, xor, BIT, XOR) TOALL(long long, longlong, xor, BIT, XOR)
}

static void barriers(void) {
    static long counter;
    int r, ok = 1;
    for (r = 1; r <= 5; r++) {
        shmem_long_inc(&counter, 0);
        shmem_barrier(0, 0, npes, pSyncBar); /* the same pSync every time */
        if (shmem_long_g(&counter, 0) < (long)r * npes) ok = 0;
        shmem_barrier(0, 0, npes, pSyncBar);
    }
    if (me % 2 == 1) /* the odd PEs: PE_start 1, logPE_stride 1 */
        shmem_barrier(1, 1, npes / 2, pSyncBar);
    shmem_barrier_all();
    check("shmem_barrier", ok);
}

int main(void) {
    int i;
    for (i = 0; i < _SHMEM_BCAST_SYNC_SIZE; i++) pSync[i] = _SHMEM_SYNC_VALUE;
    for (i = 0; i < _SHMEM_REDUCE_SYNC_SIZE; i++) pSyncA[i] = pSyncB[i] = _SHMEM_SYNC_VALUE;
    for (i = 0; i < _SHMEM_COLLECT_SYNC_SIZE; i++) pSyncC[i] = _SHMEM_SYNC_VALUE;
    for (i = 0; i < _SHMEM_BARRIER_SYNC_SIZE; i++) pSyncBar[i] = _SHMEM_SYNC_VALUE;
    for (i = 0; i < _SHMEM_ALLTOALL_SYNC_SIZE; i++) pSyncA2A[i] = _SHMEM_SYNC_VALUE;
    start_pes(0);
    me = _my_pe();
    npes = _num_pes();
    shmem_barrier_all(); /* pSync ready everywhere before first use */
    broadcasts();
    collects();
    reductions();
    barriers();
    if (me == 0) printf("uh_collectives: %s (%d PEs)\n", failures ? "FAILED" : "PASS", npes);
    shmem_barrier_all();
    return failures ? 1 : 0;
}
