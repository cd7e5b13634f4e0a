/*
 * net_fabric_amo — every atomic operation between PEs on different "hosts"
 * (SYMTRAIN_HOST_SIZE=1), run once with the provider's fabric atomics and once
 * with active messages (SYMTRAIN_OFI_ATOMICS). Each PE drives a private word on
 * its right-hand neighbour through a random sequence of operations and checks
 * every returned old value against a local model; then all PEs add into one
 * counter (the exact total), and each PE updates its own word (which must go
 * through the fabric too when fabric atomics are on).
 */
#include <shmem.h>

#include "test.h"

static uint64_t w64[64];
static uint32_t w32[64];
static long counter;

#define STEPS 40

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes(), right = (me + 1) % n;
    test_pe = me;
    uint64_t seed = test_seed();
    test_rng_t r = test_rng(seed, (uint64_t)me);
    shmem_barrier_all();

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
    int left = (me + n - 1) % n;
    test_rng_t rl = test_rng(seed, (uint64_t)left);
    (void)rl;
    CHECK(shmem_uint64_atomic_fetch(&w64[left], me) == w64[left], "own word through the fabric");

    /* Everyone adds into PE 0, and into its own word. */
    for (int i = 0; i < 25; i++) {
        shmem_long_atomic_add(&counter, 1, 0);
        shmem_long_atomic_fetch_inc(&counter, 0);
        shmem_uint64_atomic_add(&w64[63], 2, me);
    }
    shmem_barrier_all();
    if (me == 0) CHECK_EQ_INT(counter, 50L * n);
    CHECK_EQ_INT(w64[63], 50);
    if (me == 0) printf("net_fabric_amo: passed on %d PEs\n", n);
    shmem_finalize();
    return 0;
}
