/*
 * net_victim — the job tests/net_attack.sh attacks from outside: two PEs on
 * "hosts" of their own, talking over the fabric, each holding a secret in a
 * global and a canary in its symmetric heap, both behind a marker a stranger
 * could search for. While NET_ATTACK_DONE (a file) does not exist yet, the PEs
 * keep exchanging data over the fabric; then each checks that its heap and
 * globals are as it left them and that the peer's values arrive intact, and
 * prints "intact". Any difference fails the PE (and the job).
 */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <shmem.h>

#include "shmem_test.h"

#define MARK "symtrain-victim-global-canary!!!" /* 32 bytes, what the attacker searches */
#define HEAP_MARK "symtrain-victim-heap-canary!!!!!"
#define HEAP_BYTES 4096

static struct {
    char mark[32];
    uint64_t secret[4];
} global;
static uint64_t inbox[4];
static int stop; /* PE 0 sets it on both when the attack is over */

static uint64_t secret_of(uint64_t seed, int pe, int i) {
    return seed ^ (0x9e3779b97f4a7c15ull * (uint64_t)(pe * 4 + i + 1));
}

static void fill_heap(char *heap) {
    for (size_t i = 0; i < HEAP_BYTES; i += 32) memcpy(heap + i, HEAP_MARK, 32);
}

int main(void) {
    uint64_t seed = shmem_test_start_level("net_victim", SHMEM_THREAD_SINGLE);
    int me = shmem_my_pe(), n = shmem_n_pes(), peer = (me + 1) % n;
    CHECK(n == 2, "run on 2 PEs, not %d", n);
    memcpy(global.mark, MARK, 32);
    for (int i = 0; i < 4; i++) global.secret[i] = secret_of(seed, me, i);
    char *heap = shmem_malloc(HEAP_BYTES);
    CHECK(heap, "shmem_malloc failed");
    fill_heap(heap);
    shmem_barrier_all();
    printf("victim PE %d: ready, pid %d\n", me, (int)getpid());
    fflush(stdout);

    const char *done = getenv("NET_ATTACK_DONE");
    CHECK(done && *done, "set NET_ATTACK_DONE to the file that says the attack is over");
    double start = (double)time(NULL);
    int rounds = 0, over = 0;
    while (!over) {
        if (me == 0) {
            stop = access(done, F_OK) == 0 || time(NULL) - start > 25;
            shmem_int_p(&stop, stop, peer);
        }
        shmem_barrier_all();
        over = stop;
        shmem_uint64_put(inbox, global.secret, 4, peer);
        shmem_barrier_all();
        for (int i = 0; i < 4; i++)
            CHECK(inbox[i] == secret_of(seed, peer, i), "round %d: PE %d's value %d arrived as "
                  "0x%" PRIx64, rounds, peer, i, inbox[i]);
        rounds++;
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    char want[HEAP_BYTES];
    fill_heap(want);
    CHECK(memcmp(heap, want, HEAP_BYTES) == 0, "a stranger wrote into the symmetric heap: "
          "'%.32s'", heap);
    CHECK(memcmp(global.mark, MARK, 32) == 0, "a stranger wrote the global's marker");
    for (int i = 0; i < 4; i++)
        CHECK(global.secret[i] == secret_of(seed, me, i), "a stranger wrote the global secret");
    printf("victim PE %d: heap and globals intact after %d rounds over the fabric\n", me, rounds);
    shmem_free(heap);
    shmem_finalize();
    return 0;
}
