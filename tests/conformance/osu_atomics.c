/*
 * osu_atomics — atomic operation rate in the style of osu_oshm_atomics: a
 * union of the atomic types in a global array, PE p of the first half
 * hammering PE p + npes/2, the 1.3 names (shmem_int_fadd, _finc, _add, _inc,
 * _cswap, _swap, the longlong kin, shmem_double_swap) and, with -DOSHM_1_4,
 * the 1.4 names (shmem_int_atomic_fetch_add, ... fetch_and/or/xor on uint64);
 * per-benchmark `static double` rates summed over the PEs with
 * shmem_double_sum_to_all(..., pWrk, pSync) as OSU does. The final values of
 * the targets are verified.
 *
 * @variants ; -DOSHM_1_4
 * @npes 2 4
 */
#include <shmem.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>

#define ITERATIONS 500

struct pe_vars {
    int me, npes, pairs, nxtpe;
};

union data_types {
    int int_type;
    long long longlong_type;
    double double_type;
    uint64_t uint64_type;
} global_msg_buffer[ITERATIONS];

double pwrk1[_SHMEM_REDUCE_MIN_WRKDATA_SIZE];
double pwrk2[_SHMEM_REDUCE_MIN_WRKDATA_SIZE];
long psync1[_SHMEM_REDUCE_SYNC_SIZE];
long psync2[_SHMEM_REDUCE_SYNC_SIZE];

static int errors;

static int64_t TIME(void) {
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (int64_t)tv.tv_sec * 1000000 + tv.tv_usec;
}

static void print_operation_rate(int myid, const char *operation, double rate, double lat) {
    static double sum_rate, sum_lat; /* symmetric: the reduction's targets */
    static double my_rate, my_lat;
    my_rate = rate;
    my_lat = lat;
    shmem_double_sum_to_all(&sum_rate, &my_rate, 1, 0, 0, _num_pes(), pwrk1, psync1);
    shmem_double_sum_to_all(&sum_lat, &my_lat, 1, 0, 0, _num_pes(), pwrk2, psync2);
    if (myid == 0) {
        printf("%-*s%*.2f%*.2f\n", 20, operation, 20, sum_rate / 1e6, 20,
               sum_lat / (_num_pes() / 2));
        fflush(stdout);
    }
}

static void reset(void) {
    for (int i = 0; i < ITERATIONS; i++) global_msg_buffer[i].uint64_type = 0;
    shmem_barrier_all();
}

/* one benchmark: `body` runs ITERATIONS times on the first half's PEs */
#define BENCH(v, NAME, body)                                                         \
    do {                                                                             \
        double rate = 0, lat = 0;                                                    \
        reset();                                                                     \
        if ((v).me < (v).pairs) {                                                    \
            int64_t begin = TIME();                                                  \
            for (int i = 0; i < ITERATIONS; i++) {                                   \
                body;                                                                \
            }                                                                        \
            int64_t end = TIME();                                                    \
            rate = (double)ITERATIONS * 1e6 / (double)(end - begin + 1);             \
            lat = (double)(end - begin) / ITERATIONS;                                \
        }                                                                            \
        shmem_barrier_all();                                                         \
        print_operation_rate((v).me, NAME, rate, lat);                               \
    } while (0)

/* the target side checks what arrived */
#define VERIFY(v, cond, NAME)                                                        \
    do {                                                                             \
        if ((v).me >= (v).pairs)                                                     \
            for (int i = 0; i < ITERATIONS; i++)                                     \
                if (!(cond)) {                                                       \
                    printf("PE %d: %s: element %d wrong\n", (v).me, NAME, i);        \
                    errors++;                                                        \
                    break;                                                           \
                }                                                                    \
    } while (0)

int main(void) {
    struct pe_vars v;
    for (int i = 0; i < _SHMEM_REDUCE_SYNC_SIZE; i++) psync1[i] = psync2[i] = _SHMEM_SYNC_VALUE;
    start_pes(0);
    v.me = _my_pe();
    v.npes = _num_pes();
    if (v.npes % 2) {
        if (v.me == 0) fprintf(stderr, "This test requires an even number of PEs\n");
        return EXIT_FAILURE;
    }
    v.pairs = v.npes / 2;
    v.nxtpe = v.me < v.pairs ? v.me + v.pairs : v.me - v.pairs;
    union data_types *b = global_msg_buffer;
    shmem_barrier_all();
    if (v.me == 0) {
        printf("# OSU OpenSHMEM Atomic Operation Rate Test\n");
        printf("%-*s%*s%*s\n", 20, "# Operation", 20, "Million ops/s", 20, "Latency (us)");
    }
#ifndef OSHM_1_4
    BENCH(v, "shmem_int_fadd", (void)shmem_int_fadd(&b[i].int_type, 1, v.nxtpe));
    VERIFY(v, b[i].int_type == 1, "shmem_int_fadd");
    BENCH(v, "shmem_int_finc", (void)shmem_int_finc(&b[i].int_type, v.nxtpe));
    VERIFY(v, b[i].int_type == 1, "shmem_int_finc");
    BENCH(v, "shmem_int_add", shmem_int_add(&b[i].int_type, 2, v.nxtpe));
    VERIFY(v, b[i].int_type == 2, "shmem_int_add");
    BENCH(v, "shmem_int_inc", shmem_int_inc(&b[i].int_type, v.nxtpe));
    VERIFY(v, b[i].int_type == 1, "shmem_int_inc");
    BENCH(v, "shmem_int_cswap", (void)shmem_int_cswap(&b[i].int_type, 0, i + 1, v.nxtpe));
    VERIFY(v, b[i].int_type == i + 1, "shmem_int_cswap");
    BENCH(v, "shmem_int_swap", (void)shmem_int_swap(&b[i].int_type, i + 2, v.nxtpe));
    VERIFY(v, b[i].int_type == i + 2, "shmem_int_swap");
    BENCH(v, "shmem_longlong_fadd", (void)shmem_longlong_fadd(&b[i].longlong_type, 3, v.nxtpe));
    VERIFY(v, b[i].longlong_type == 3, "shmem_longlong_fadd");
    BENCH(v, "shmem_longlong_finc", (void)shmem_longlong_finc(&b[i].longlong_type, v.nxtpe));
    VERIFY(v, b[i].longlong_type == 1, "shmem_longlong_finc");
    BENCH(v, "shmem_longlong_add", shmem_longlong_add(&b[i].longlong_type, 4, v.nxtpe));
    VERIFY(v, b[i].longlong_type == 4, "shmem_longlong_add");
    BENCH(v, "shmem_longlong_inc", shmem_longlong_inc(&b[i].longlong_type, v.nxtpe));
    VERIFY(v, b[i].longlong_type == 1, "shmem_longlong_inc");
    BENCH(v, "shmem_longlong_cswap",
          (void)shmem_longlong_cswap(&b[i].longlong_type, 0, i + 5, v.nxtpe));
    VERIFY(v, b[i].longlong_type == i + 5, "shmem_longlong_cswap");
    BENCH(v, "shmem_longlong_swap",
          (void)shmem_longlong_swap(&b[i].longlong_type, i + 6, v.nxtpe));
    VERIFY(v, b[i].longlong_type == i + 6, "shmem_longlong_swap");
    BENCH(v, "shmem_double_swap", (void)shmem_double_swap(&b[i].double_type, i + 0.5, v.nxtpe));
    VERIFY(v, b[i].double_type == i + 0.5, "shmem_double_swap");
#else
    BENCH(v, "shmem_int_atomic_fetch_add",
          (void)shmem_int_atomic_fetch_add(&b[i].int_type, 1, v.nxtpe));
    VERIFY(v, b[i].int_type == 1, "shmem_int_atomic_fetch_add");
    BENCH(v, "shmem_int_atomic_fetch_inc",
          (void)shmem_int_atomic_fetch_inc(&b[i].int_type, v.nxtpe));
    VERIFY(v, b[i].int_type == 1, "shmem_int_atomic_fetch_inc");
    BENCH(v, "shmem_int_atomic_add", shmem_int_atomic_add(&b[i].int_type, 2, v.nxtpe));
    VERIFY(v, b[i].int_type == 2, "shmem_int_atomic_add");
    BENCH(v, "shmem_int_atomic_inc", shmem_int_atomic_inc(&b[i].int_type, v.nxtpe));
    VERIFY(v, b[i].int_type == 1, "shmem_int_atomic_inc");
    BENCH(v, "shmem_int_atomic_compare_swap",
          (void)shmem_int_atomic_compare_swap(&b[i].int_type, 0, i + 1, v.nxtpe));
    VERIFY(v, b[i].int_type == i + 1, "shmem_int_atomic_compare_swap");
    BENCH(v, "shmem_int_atomic_swap", (void)shmem_int_atomic_swap(&b[i].int_type, i + 2, v.nxtpe));
    VERIFY(v, b[i].int_type == i + 2, "shmem_int_atomic_swap");
    BENCH(v, "shmem_int_atomic_set", shmem_int_atomic_set(&b[i].int_type, i + 3, v.nxtpe));
    VERIFY(v, b[i].int_type == i + 3, "shmem_int_atomic_set");
    BENCH(v, "shmem_int_atomic_fetch", (void)shmem_int_atomic_fetch(&b[i].int_type, v.nxtpe));
    BENCH(v, "shmem_uint64_atomic_fetch_or",
          (void)shmem_uint64_atomic_fetch_or(&b[i].uint64_type, 1ull << (i % 64), v.nxtpe));
    VERIFY(v, b[i].uint64_type == 1ull << (i % 64), "shmem_uint64_atomic_fetch_or");
    BENCH(v, "shmem_uint64_atomic_fetch_xor",
          (void)shmem_uint64_atomic_fetch_xor(&b[i].uint64_type, 6, v.nxtpe));
    VERIFY(v, b[i].uint64_type == 6, "shmem_uint64_atomic_fetch_xor");
    BENCH(v, "shmem_uint64_atomic_and", shmem_uint64_atomic_and(&b[i].uint64_type, 0, v.nxtpe));
    VERIFY(v, b[i].uint64_type == 0, "shmem_uint64_atomic_and");
    BENCH(v, "shmem_longlong_atomic_fetch_add",
          (void)shmem_longlong_atomic_fetch_add(&b[i].longlong_type, 3, v.nxtpe));
    VERIFY(v, b[i].longlong_type == 3, "shmem_longlong_atomic_fetch_add");
    BENCH(v, "shmem_double_atomic_swap",
          (void)shmem_double_atomic_swap(&b[i].double_type, i + 0.5, v.nxtpe));
    VERIFY(v, b[i].double_type == i + 0.5, "shmem_double_atomic_swap");
#endif
    static int all;
    shmem_int_atomic_add(&all, errors, 0);
    shmem_barrier_all();
    if (v.me == 0) printf("osu_atomics: %s\n", all ? "FAILED" : "PASS");
    return errors ? EXIT_FAILURE : EXIT_SUCCESS;
}
