/*
 * uh_rma — put and get written the way the UH OpenSHMEM validation suite
 * writes them: start_pes(0), _my_pe(), _num_pes(), shmalloc, every typed
 * put/get/p/g/iput/iget of the 1.0 API plus put32/64/128 and putmem, into
 * global arrays and into shmalloc'd memory, shmem_barrier_all between steps,
 * one "Test ...: Passed/Failed" line per routine from PE 0.
 *
 * @variants ; -std=c99 -Wpedantic
 * @npes 2 4
 */
#include <mpp/shmem.h> /* the SGI / Cray include path, as the UH tests have it */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 10

static int me, npes, failures;

static void report(const char *name, int ok) {
    static int mine;
    int i, good = 1;
    mine = ok;
    shmem_barrier_all();
    if (me == 0) {
        for (i = 0; i < npes; i++) good &= shmem_int_g(&mine, i);
        printf("Test %s: %s\n", name, good ? "Passed" : "Failed");
        if (!good) failures++;
    }
    shmem_barrier_all();
}

/* one type: put into a global array of the right-hand PE, get it back, p, g,
 * iput and iget with strides */
#define TEST_TYPE(T, NAME)                                                           \
    static T g_src_##NAME[2 * N], g_dst_##NAME[2 * N];                               \
    static void test_##NAME(void) {                                                  \
        int i, ok = 1, right = (me + 1) % npes, left = (me + npes - 1) % npes;       \
        T *h_dst = (T *)shmalloc(2 * N * sizeof(T));                                 \
        T got[2 * N];                                                                \
        for (i = 0; i < 2 * N; i++) {                                                \
            g_src_##NAME[i] = (T)(me * 3 + i);                                       \
            g_dst_##NAME[i] = (T)0;                                                  \
            h_dst[i] = (T)0;                                                         \
        }                                                                            \
        shmem_barrier_all();                                                         \
        shmem_##NAME##_put(g_dst_##NAME, g_src_##NAME, N, right);                    \
        shmem_##NAME##_put(h_dst, g_src_##NAME, N, right);                           \
        shmem_barrier_all();                                                         \
        for (i = 0; i < N; i++)                                                      \
            ok &= g_dst_##NAME[i] == (T)(left * 3 + i) && h_dst[i] == (T)(left * 3 + i); \
        report("shmem_" #NAME "_put", ok);                                           \
        ok = 1;                                                                      \
        shmem_##NAME##_get(got, g_src_##NAME, N, right);                             \
        for (i = 0; i < N; i++) ok &= got[i] == (T)(right * 3 + i);                  \
        report("shmem_" #NAME "_get", ok);                                           \
        ok = 1;                                                                      \
        shmem_##NAME##_p(&h_dst[N], (T)(me + 100), right);                           \
        shmem_barrier_all();                                                         \
        ok &= h_dst[N] == (T)(left + 100);                                           \
        ok &= shmem_##NAME##_g(&h_dst[N], right) == (T)(me + 100);                   \
        report("shmem_" #NAME "_p/_g", ok);                                          \
        ok = 1;                                                                      \
        for (i = 0; i < 2 * N; i++) g_dst_##NAME[i] = (T)0;                          \
        shmem_barrier_all();                                                         \
        shmem_##NAME##_iput(g_dst_##NAME, g_src_##NAME, 2, 1, N, right);             \
        shmem_barrier_all();                                                         \
        for (i = 0; i < 2 * N; i++)                                                  \
            ok &= g_dst_##NAME[i] == (i % 2 ? (T)0 : (T)(left * 3 + i / 2));         \
        shmem_##NAME##_iget(got, g_src_##NAME, 1, 2, N, right);                      \
        for (i = 0; i < N; i++) ok &= got[i] == (T)(right * 3 + 2 * i);              \
        report("shmem_" #NAME "_iput/_iget", ok);                                    \
        shfree(h_dst);                                                               \
    }

TEST_TYPE(char, char)
TEST_TYPE(short, short)
TEST_TYPE(int, int)
TEST_TYPE(long, long)
TEST_TYPE(long long, longlong)
TEST_TYPE(float, float)
TEST_TYPE(double, double)
TEST_TYPE(long double, longdouble)

static void test_sized(void) {
    int i, ok = 1, right = (me + 1) % npes, left = (me + npes - 1) % npes;
    static int src32[N], dst32[N];
    static long src64[N], dst64[N];
    static long src128[2 * N], dst128[2 * N];
    char *bsrc = (char *)shmalloc(1000), *bdst = (char *)shmalloc(1000);
    for (i = 0; i < N; i++) {
        src32[i] = me + i;
        src64[i] = me * 1000L + i;
        src128[2 * i] = me;
        src128[2 * i + 1] = -i;
    }
    for (i = 0; i < 1000; i++) {
        bsrc[i] = (char)(me + i);
        bdst[i] = 0;
    }
    shmem_barrier_all();
    shmem_put32(dst32, src32, N, right);
    shmem_put64(dst64, src64, N, right);
    shmem_put128(dst128, src128, N, right);
    shmem_putmem(bdst, bsrc, 1000, right);
    shmem_barrier_all();
    for (i = 0; i < N; i++)
        ok &= dst32[i] == left + i && dst64[i] == left * 1000L + i && dst128[2 * i] == left &&
              dst128[2 * i + 1] == -i;
    for (i = 0; i < 1000; i++) ok &= bdst[i] == (char)(left + i);
    report("shmem_put32/64/128, shmem_putmem", ok);
    ok = 1;
    shmem_get32(dst32, src32, N, right);
    shmem_get64(dst64, src64, N, right);
    shmem_get128(dst128, src128, N, right);
    shmem_getmem(bdst, bsrc, 1000, right);
    for (i = 0; i < N; i++)
        ok &= dst32[i] == right + i && dst64[i] == right * 1000L + i && dst128[2 * i] == right;
    for (i = 0; i < 1000; i++) ok &= bdst[i] == (char)(right + i);
    report("shmem_get32/64/128, shmem_getmem", ok);
    ok = 1;
    shmem_iput32(dst32, src32, 1, 1, N, right);
    shmem_iput64(dst64, src64, 1, 1, N, right);
    shmem_quiet();
    shmem_barrier_all();
    for (i = 0; i < N; i++) ok &= dst32[i] == left + i && dst64[i] == left * 1000L + i;
    report("shmem_iput32/64", ok);
    shfree(bdst);
    shfree(bsrc);
}

int main(void) {
    start_pes(0);
    me = _my_pe();
    npes = _num_pes();
    test_char();
    test_short();
    test_int();
    test_long();
    test_longlong();
    test_float();
    test_double();
    test_longdouble();
    test_sized();
    if (me == 0) printf("uh_rma: %s (%d PEs)\n", failures ? "FAILED" : "PASS", npes);
    shmem_barrier_all();
    return failures ? 1 : 0;
}
