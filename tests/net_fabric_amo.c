/*
 * net_fabric_amo — every atomic operation between PEs on different "hosts"
 * (SYMTRAIN_HOST_SIZE=1), run once with the provider's fabric atomics and once
 * with active messages (SYMTRAIN_OFI_ATOMICS). The PEs agree on PE 0's seed
 * (printed; SYMTRAIN_TEST_SEED replays it).
 *  1. Each PE drives a private word on its right-hand neighbour through a
 *     random sequence of operations and checks every returned old value
 *     against a local model.
 *  2. Each PE replays its left neighbour's sequence (same seed, the left's
 *     stream) and checks the word the left drove here holds the model's final
 *     value, read plainly and fetched through the fabric.
 *  3. All PEs fetch-add and fetch-inc one counter on PE 0 at once: the old
 *     values they got must be distinct and cover 0 .. total-1 exactly (a lost
 *     or doubled update shows as a gap or a repeat), and the total must be
 *     exact; each PE also adds into its own word (through the fabric too when
 *     fabric atomics are on).
 */
#include <shmem.h>
#include <stdlib.h>

#include "shmem_test.h"

static uint64_t w64[64];
static uint32_t w32[64];
static long counter;

#define STEPS 40
#define ADDS 25 /* fetch-adds per PE, and as many fetch-incs */
#define MAX_PES 64

static long fetched[MAX_PES * 2 * ADDS]; /* on PE 0: every old value every PE got */

/* The final values of the words PE `pe` drives on its neighbour, replaying its
 * random sequence (the same draws as the loop in main). */
static void model_final(uint64_t seed, int pe, uint64_t *f64, uint32_t *f32) {
    test_rng_t r = test_rng(seed, (uint64_t)pe);
    uint64_t m64 = 0;
    uint32_t m32 = 0;
    for (int i = 0; i < STEPS; i++) {
        uint64_t v = test_next(&r);
        uint32_t v32 = (uint32_t)v;
        switch ((int)(test_next(&r) % 10)) {
        case 0: break;
        case 1: case 2: case 3: m64 = v; m32 = v32; break;
        case 4: m64 += v; m32 += v32; break;
        case 5: m64 += v; m32 += 1; break;
        case 6: m64 &= v; m32 &= v32; break;
        case 7: m64 |= v; m32 |= v32; break;
        case 8: m64 ^= v; m32 ^= v32; break;
        default: m64 += v; m32 += 1; break;
        }
    }
    *f64 = m64;
    *f32 = m32;
}

static int cmp_long(const void *a, const void *b) {
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

int main(void) {
    uint64_t seed = shmem_test_start("net_fabric_amo");
    int me = shmem_my_pe(), n = shmem_n_pes(), right = (me + 1) % n;
    CHECK(n <= MAX_PES, "this test runs on at most %d PEs, not %d", MAX_PES, n);
    test_rng_t r = test_rng(seed, (uint64_t)me);

    /* Sequential semantics on the neighbour's word, against a model. */
    uint64_t m64 = 0;
    uint32_t m32 = 0;
    for (int i = 0; i < STEPS; i++) {
        uint64_t v = test_next(&r), got = 0, want = m64;
        uint32_t v32 = (uint32_t)v, got32 = 0, want32 = m32;
        int op = (int)(test_next(&r) % 10);
        switch (op) {
        case 0: got = shmem_uint64_atomic_fetch(&w64[me], right); got32 = shmem_uint32_atomic_fetch(&w32[me], right); break;
        case 1: shmem_uint64_atomic_set(&w64[me], v, right); shmem_uint32_atomic_set(&w32[me], v32, right); m64 = v; m32 = v32; got = want; got32 = want32; break;
        case 2: got = shmem_uint64_atomic_swap(&w64[me], v, right); got32 = shmem_uint32_atomic_swap(&w32[me], v32, right); m64 = v; m32 = v32; break;
        case 3: /* compare-swap that succeeds, then one that fails */
            got = shmem_uint64_atomic_compare_swap(&w64[me], m64, v, right);
            got32 = shmem_uint32_atomic_compare_swap(&w32[me], m32, v32, right);
            m64 = v; m32 = v32;
            CHECK(shmem_uint64_atomic_compare_swap(&w64[me], ~v, 1, right) == v, "failed cswap");
            CHECK(shmem_uint32_atomic_compare_swap(&w32[me], ~v32, 1, right) == v32, "failed cswap 32");
            break;
        case 4: got = shmem_uint64_atomic_fetch_add(&w64[me], v, right); got32 = shmem_uint32_atomic_fetch_add(&w32[me], v32, right); m64 += v; m32 += v32; break;
        case 5: shmem_uint64_atomic_add(&w64[me], v, right); shmem_uint32_atomic_inc(&w32[me], right); m64 += v; m32 += 1; got = want; got32 = want32; break;
        case 6: got = shmem_uint64_atomic_fetch_and(&w64[me], v, right); got32 = shmem_uint32_atomic_fetch_and(&w32[me], v32, right); m64 &= v; m32 &= v32; break;
        case 7: got = shmem_uint64_atomic_fetch_or(&w64[me], v, right); got32 = shmem_uint32_atomic_fetch_or(&w32[me], v32, right); m64 |= v; m32 |= v32; break;
        case 8: got = shmem_uint64_atomic_fetch_xor(&w64[me], v, right); got32 = shmem_uint32_atomic_fetch_xor(&w32[me], v32, right); m64 ^= v; m32 ^= v32; break;
        default: /* non-blocking fetches complete by the quiet */
            shmem_uint64_atomic_fetch_add_nbi(&got, &w64[me], v, right);
            shmem_uint32_atomic_fetch_inc_nbi(&got32, &w32[me], right);
            shmem_quiet();
            m64 += v; m32 += 1;
            break;
        }
        CHECK(got == want, "op %d step %d: old value %#llx, model %#llx", op, i,
              (unsigned long long)got, (unsigned long long)want);
        CHECK(got32 == want32, "op %d step %d (32-bit): old value %#x, model %#x", op, i, got32, want32);
    }
    shmem_barrier_all();

    /* The words the left neighbour drove here end where its model says. */
    int left = (me + n - 1) % n;
    uint64_t f64;
    uint32_t f32;
    model_final(seed, left, &f64, &f32);
    CHECK(w64[left] == f64, "word driven by PE %d holds %#llx, its model %#llx", left,
          (unsigned long long)w64[left], (unsigned long long)f64);
    CHECK(w32[left] == f32, "32-bit word driven by PE %d holds %#x, its model %#x", left,
          w32[left], f32);
    CHECK(shmem_uint64_atomic_fetch(&w64[left], me) == f64, "own word fetched through the fabric");
    CHECK(shmem_uint32_atomic_fetch(&w32[left], me) == f32, "own 32-bit word fetched");

    /* Everyone at once: fetch-add and fetch-inc on PE 0's counter, and adds
     * into its own word. */
    long mine[2 * ADDS];
    for (int i = 0; i < ADDS; i++) {
        mine[2 * i] = shmem_long_atomic_fetch_add(&counter, 1, 0);
        mine[2 * i + 1] = shmem_long_atomic_fetch_inc(&counter, 0);
        shmem_uint64_atomic_add(&w64[63], 2, me);
    }
    shmem_long_put(&fetched[(size_t)me * 2 * ADDS], mine, 2 * ADDS, 0);
    shmem_barrier_all();
    CHECK_EQ_INT(w64[63], 2 * ADDS);
    if (me == 0) {
        long total = 2L * ADDS * n;
        CHECK_EQ_INT(counter, total);
        qsort(fetched, (size_t)total, sizeof fetched[0], cmp_long);
        for (long k = 0; k < total; k++)
            CHECK(fetched[k] == k, "the concurrent fetch-adds returned %s %ld (sorted position %ld of "
                  "%ld): an update was lost or applied twice",
                  k && fetched[k] == fetched[k - 1] ? "a repeated" : "the unexpected", fetched[k], k,
                  total);
    }
    shmem_test_pass("net_fabric_amo", "fabric atomics between hosts");
    shmem_finalize();
    return 0;
}
