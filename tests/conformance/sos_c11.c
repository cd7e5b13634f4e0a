/*
 * sos_c11 — C11 generic selection written the way the Sandia OpenSHMEM unit
 * tests write it (c11_test_shmem_*): one macro per operation, instantiated for
 * every type of the standard's tables, each with and without a context, on a
 * `static` variable declared inside the block (symmetric), results checked
 * against the left-hand neighbour, rc = EXIT_FAILURE on a mismatch.
 *
 * @npes 2 4
 */
#include <shmem.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static int rc = EXIT_SUCCESS;

#define FAIL(what, ctx, type)                                                        \
    do {                                                                             \
        printf("PE %i received incorrect value with %s(%d, %s)\n", shmem_my_pe(), what, \
               (int)(ctx), type);                                                    \
        rc = EXIT_FAILURE;                                                           \
    } while (false)

#define TEST_SHMEM_ADD(USE_CTX, TYPE)                                                \
    do {                                                                             \
        static TYPE remote = (TYPE)0;                                                \
        const int mype = shmem_my_pe();                                              \
        const int npes = shmem_n_pes();                                              \
        if (USE_CTX)                                                                 \
            shmem_atomic_add(SHMEM_CTX_DEFAULT, &remote, (TYPE)(mype + 1), (mype + 1) % npes); \
        else                                                                         \
            shmem_atomic_add(&remote, (TYPE)(mype + 1), (mype + 1) % npes);          \
        shmem_barrier_all();                                                         \
        if (remote != (TYPE)(((mype + npes - 1) % npes) + 1)) FAIL("TEST_SHMEM_ADD", USE_CTX, #TYPE); \
    } while (false)

#define TEST_SHMEM_FETCH_ADD(USE_CTX, TYPE)                                          \
    do {                                                                             \
        static TYPE remote = (TYPE)0;                                                \
        const int mype = shmem_my_pe();                                              \
        const int npes = shmem_n_pes();                                              \
        TYPE old;                                                                    \
        if (USE_CTX)                                                                 \
            old = shmem_atomic_fetch_add(SHMEM_CTX_DEFAULT, &remote, (TYPE)(mype + 1), \
                                         (mype + 1) % npes);                         \
        else                                                                         \
            old = shmem_atomic_fetch_add(&remote, (TYPE)(mype + 1), (mype + 1) % npes); \
        if (old != (TYPE)0) FAIL("TEST_SHMEM_FETCH_ADD (old)", USE_CTX, #TYPE);      \
        shmem_barrier_all();                                                         \
        if (remote != (TYPE)(((mype + npes - 1) % npes) + 1))                        \
            FAIL("TEST_SHMEM_FETCH_ADD", USE_CTX, #TYPE);                            \
    } while (false)

#define TEST_SHMEM_INC(USE_CTX, TYPE)                                                \
    do {                                                                             \
        static TYPE remote = (TYPE)0;                                                \
        const int npes = shmem_n_pes();                                              \
        TYPE f;                                                                      \
        if (USE_CTX) {                                                               \
            shmem_atomic_inc(SHMEM_CTX_DEFAULT, &remote, 0);                         \
            f = shmem_atomic_fetch_inc(SHMEM_CTX_DEFAULT, &remote, 0);               \
        } else {                                                                     \
            shmem_atomic_inc(&remote, 0);                                            \
            f = shmem_atomic_fetch_inc(&remote, 0);                                  \
        }                                                                            \
        if (f < (TYPE)1 || f >= (TYPE)(2 * npes)) FAIL("TEST_SHMEM_FETCH_INC", USE_CTX, #TYPE); \
        shmem_barrier_all();                                                         \
        if (shmem_my_pe() == 0 && remote != (TYPE)(2 * npes))                        \
            FAIL("TEST_SHMEM_INC", USE_CTX, #TYPE);                                  \
    } while (false)

#define TEST_SHMEM_CSWAP(USE_CTX, TYPE)                                              \
    do {                                                                             \
        static TYPE remote = (TYPE)0;                                                \
        const int mype = shmem_my_pe();                                              \
        const int npes = shmem_n_pes();                                              \
        TYPE old;                                                                    \
        if (USE_CTX)                                                                 \
            old = shmem_atomic_compare_swap(SHMEM_CTX_DEFAULT, &remote, (TYPE)0,     \
                                            (TYPE)mype, (mype + 1) % npes);          \
        else                                                                         \
            old = shmem_atomic_compare_swap(&remote, (TYPE)0, (TYPE)mype, (mype + 1) % npes); \
        shmem_barrier_all();                                                         \
        if (old != (TYPE)0 || remote != (TYPE)((mype + npes - 1) % npes))            \
            FAIL("TEST_SHMEM_CSWAP", USE_CTX, #TYPE);                                \
    } while (false)

#define TEST_SHMEM_SWAP_FETCH_SET(USE_CTX, TYPE)                                     \
    do {                                                                             \
        static TYPE remote = (TYPE)0;                                                \
        const int mype = shmem_my_pe();                                              \
        const int npes = shmem_n_pes();                                              \
        const int right = (mype + 1) % npes, left = (mype + npes - 1) % npes;        \
        TYPE old;                                                                    \
        if (USE_CTX) {                                                               \
            shmem_atomic_set(SHMEM_CTX_DEFAULT, &remote, (TYPE)(mype + 1), right);   \
        } else {                                                                     \
            shmem_atomic_set(&remote, (TYPE)(mype + 1), right);                      \
        }                                                                            \
        shmem_barrier_all();                                                         \
        old = USE_CTX ? shmem_atomic_swap(SHMEM_CTX_DEFAULT, &remote, (TYPE)(mype + 2), right) \
                      : shmem_atomic_swap(&remote, (TYPE)(mype + 2), right);         \
        if (old != (TYPE)(mype + 1)) FAIL("TEST_SHMEM_SWAP", USE_CTX, #TYPE);        \
        shmem_barrier_all();                                                         \
        old = USE_CTX ? shmem_atomic_fetch(SHMEM_CTX_DEFAULT, &remote, mype)         \
                      : shmem_atomic_fetch(&remote, mype);                           \
        if (old != (TYPE)(left + 2)) FAIL("TEST_SHMEM_FETCH", USE_CTX, #TYPE);       \
        shmem_barrier_all();                                                         \
    } while (false)

#define TEST_SHMEM_BITWISE(USE_CTX, TYPE)                                            \
    do {                                                                             \
        static TYPE remote = (TYPE)0;                                                \
        const int mype = shmem_my_pe();                                              \
        const int npes = shmem_n_pes();                                              \
        TYPE mine = (TYPE)((TYPE)1 << mype), old;                                    \
        if (USE_CTX) {                                                               \
            shmem_atomic_or(SHMEM_CTX_DEFAULT, &remote, mine, 0);                    \
            old = shmem_atomic_fetch_xor(SHMEM_CTX_DEFAULT, &remote, mine, 0);       \
            old = shmem_atomic_fetch_or(SHMEM_CTX_DEFAULT, &remote, mine, 0);        \
        } else {                                                                     \
            shmem_atomic_or(&remote, mine, 0);                                       \
            old = shmem_atomic_fetch_xor(&remote, mine, 0);                          \
            old = shmem_atomic_fetch_or(&remote, mine, 0);                           \
        }                                                                            \
        if (old & mine) FAIL("TEST_SHMEM_FETCH_XOR/OR", USE_CTX, #TYPE);             \
        shmem_barrier_all();                                                         \
        if (mype == 0 && remote != (TYPE)(((TYPE)1 << npes) - 1))                    \
            FAIL("TEST_SHMEM_OR", USE_CTX, #TYPE);                                   \
        shmem_barrier_all();                                                         \
        if (USE_CTX) {                                                               \
            shmem_atomic_xor(SHMEM_CTX_DEFAULT, &remote, mine, 0);                   \
            (void)shmem_atomic_fetch_and(SHMEM_CTX_DEFAULT, &remote, (TYPE)~(TYPE)0, 0); \
        } else {                                                                     \
            shmem_atomic_and(&remote, (TYPE)~mine, 0);                               \
            (void)shmem_atomic_fetch_and(&remote, (TYPE)~(TYPE)0, 0);                \
        }                                                                            \
        shmem_barrier_all();                                                         \
        if (mype == 0 && remote != (TYPE)0) FAIL("TEST_SHMEM_AND/XOR", USE_CTX, #TYPE); \
        shmem_barrier_all();                                                         \
    } while (false)

#define TEST_SHMEM_RMA(USE_CTX, TYPE)                                                \
    do {                                                                             \
        static TYPE src[4], dst[4], one;                                             \
        const int mype = shmem_my_pe();                                              \
        const int npes = shmem_n_pes();                                              \
        const int right = (mype + 1) % npes, left = (mype + npes - 1) % npes;        \
        TYPE got[4];                                                                 \
        int i;                                                                       \
        for (i = 0; i < 4; i++) src[i] = (TYPE)(mype * 4 + i);                       \
        shmem_barrier_all();                                                         \
        if (USE_CTX) {                                                               \
            shmem_put(SHMEM_CTX_DEFAULT, dst, src, 2, right);                        \
            shmem_put_nbi(SHMEM_CTX_DEFAULT, dst + 2, src + 2, 2, right);            \
            shmem_p(SHMEM_CTX_DEFAULT, &one, src[3], right);                         \
        } else {                                                                     \
            shmem_put(dst, src, 2, right);                                           \
            shmem_put_nbi(dst + 2, src + 2, 2, right);                               \
            shmem_p(&one, src[3], right);                                            \
        }                                                                            \
        shmem_barrier_all();                                                         \
        for (i = 0; i < 4; i++)                                                      \
            if (dst[i] != (TYPE)(left * 4 + i)) FAIL("TEST_SHMEM_PUT", USE_CTX, #TYPE); \
        if (one != (TYPE)(left * 4 + 3)) FAIL("TEST_SHMEM_P", USE_CTX, #TYPE);        \
        if (USE_CTX) {                                                               \
            shmem_get(SHMEM_CTX_DEFAULT, got, src, 2, right);                        \
            shmem_get_nbi(SHMEM_CTX_DEFAULT, got + 2, src + 2, 1, right);            \
            shmem_quiet();                                                           \
            got[3] = shmem_g(SHMEM_CTX_DEFAULT, &src[3], right);                     \
        } else {                                                                     \
            shmem_get(got, src, 2, right);                                           \
            shmem_get_nbi(got + 2, src + 2, 1, right);                               \
            shmem_quiet();                                                           \
            got[3] = shmem_g(&src[3], right);                                        \
        }                                                                            \
        for (i = 0; i < 4; i++)                                                      \
            if (got[i] != (TYPE)(right * 4 + i)) FAIL("TEST_SHMEM_GET", USE_CTX, #TYPE); \
        shmem_iget(got, src, 1, 2, 2, right);                                        \
        if (got[0] != (TYPE)(right * 4) || got[1] != (TYPE)(right * 4 + 2))          \
            FAIL("TEST_SHMEM_IGET", USE_CTX, #TYPE);                                 \
        shmem_barrier_all();                                                         \
    } while (false)

#define TEST_SHMEM_WAIT(TYPE)                                                        \
    do {                                                                             \
        static TYPE ivar[2];                                                         \
        const int mype = shmem_my_pe();                                              \
        const int npes = shmem_n_pes();                                              \
        shmem_p(&ivar[1], (TYPE)1, (mype + 1) % npes);                               \
        shmem_wait_until(&ivar[1], SHMEM_CMP_EQ, (TYPE)1);                           \
        if (shmem_test(&ivar[1], SHMEM_CMP_NE, (TYPE)1)) FAIL("TEST_SHMEM_TEST", 0, #TYPE); \
        if (shmem_test_any(ivar, 2, NULL, SHMEM_CMP_EQ, (TYPE)1) != 1)               \
            FAIL("TEST_SHMEM_TEST_ANY", 0, #TYPE);                                   \
        shmem_barrier_all();                                                         \
    } while (false)

#define AMO_STD(X, C)                                                                \
    X(C, int); X(C, long); X(C, long long); X(C, unsigned int); X(C, unsigned long); \
    X(C, unsigned long long); X(C, int32_t); X(C, int64_t); X(C, uint32_t);         \
    X(C, uint64_t); X(C, size_t); X(C, ptrdiff_t)
#define AMO_EXT(X, C) AMO_STD(X, C); X(C, float); X(C, double)
#define AMO_BIT(X, C)                                                                \
    X(C, unsigned int); X(C, unsigned long); X(C, unsigned long long); X(C, int32_t); \
    X(C, int64_t); X(C, uint32_t); X(C, uint64_t)
#define RMA(X, C)                                                                    \
    X(C, float); X(C, double); X(C, long double); X(C, char); X(C, signed char);     \
    X(C, short); X(C, int); X(C, long); X(C, long long); X(C, unsigned char);        \
    X(C, unsigned short); X(C, unsigned int); X(C, unsigned long);                   \
    X(C, unsigned long long); X(C, int8_t); X(C, int16_t); X(C, int32_t);            \
    X(C, int64_t); X(C, uint8_t); X(C, uint16_t); X(C, uint32_t); X(C, uint64_t);    \
    X(C, size_t); X(C, ptrdiff_t)

int main(void) {
    shmem_init();
    /* each expansion has its own static variables, as in separate test programs */
    AMO_STD(TEST_SHMEM_ADD, 0);
    AMO_STD(TEST_SHMEM_ADD, 1);
    AMO_STD(TEST_SHMEM_FETCH_ADD, 0);
    AMO_STD(TEST_SHMEM_FETCH_ADD, 1);
    AMO_STD(TEST_SHMEM_INC, 0);
    AMO_STD(TEST_SHMEM_INC, 1);
    AMO_STD(TEST_SHMEM_CSWAP, 0);
    AMO_STD(TEST_SHMEM_CSWAP, 1);
    AMO_EXT(TEST_SHMEM_SWAP_FETCH_SET, 0);
    AMO_EXT(TEST_SHMEM_SWAP_FETCH_SET, 1);
    AMO_BIT(TEST_SHMEM_BITWISE, 0);
    AMO_BIT(TEST_SHMEM_BITWISE, 1);
    RMA(TEST_SHMEM_RMA, 0);
    RMA(TEST_SHMEM_RMA, 1);
    TEST_SHMEM_WAIT(short); TEST_SHMEM_WAIT(int); TEST_SHMEM_WAIT(long);
    TEST_SHMEM_WAIT(long long); TEST_SHMEM_WAIT(unsigned short);
    TEST_SHMEM_WAIT(unsigned int); TEST_SHMEM_WAIT(unsigned long);
    TEST_SHMEM_WAIT(unsigned long long); TEST_SHMEM_WAIT(int32_t);
    TEST_SHMEM_WAIT(int64_t); TEST_SHMEM_WAIT(uint32_t); TEST_SHMEM_WAIT(uint64_t);
    TEST_SHMEM_WAIT(size_t); TEST_SHMEM_WAIT(ptrdiff_t);
    if (shmem_my_pe() == 0) printf("sos_c11: %s\n", rc == EXIT_SUCCESS ? "PASS" : "FAILED");
    shmem_finalize();
    return rc;
}
