/*
 * shmem_barrier — shmem_barrier_all, shmem_sync_all and shmem_team_sync let no
 * PE through before every member arrived, and (barrier_all) make every put
 * issued before it visible after it.
 *
 * In round k every PE writes k into its own slot on every other PE, with a
 * random delay before some of the writes; after the barrier each PE must see k
 * in every slot. A PE released early reads an older round. The same for
 * sync_all after an explicit shmem_quiet, for team_sync on SHMEM_TEAM_WORLD,
 * and for team_sync on the team of even-numbered PEs (odd PEs keep writing
 * into their own slots meanwhile, which the even team must not wait for).
 */
#include "shmem_test.h"

static const char *NAME = "shmem_barrier";
static uint64_t seed;
static int me, npes;

#define ROUNDS 400
static long slots[4096];  /* slots[p]: the last round PE p wrote here */
static long slots2[4096]; /* for the even team */

static void delay(test_rng_t *r) {
    uint64_t x = test_next(r);
    if (x % 8 == 0) usleep((useconds_t)(x >> 40) % 200); /* now and then, up to 200 us */
}

static void rounds(const char *how, int mode, test_rng_t *r) {
    for (long k = 1; k <= ROUNDS; k++) {
        for (int d = 0; d < npes; d++) {
            int pe = (me + d) % npes;
            if (d == npes / 2) delay(r);
            shmem_long_p(&slots[me], k + (long)mode * ROUNDS, pe);
        }
        switch (mode) {
        case 0: shmem_barrier_all(); break;
        case 1: shmem_quiet(); shmem_sync_all(); break;
        default: shmem_quiet(); CHECK(shmem_team_sync(SHMEM_TEAM_WORLD) == 0, "team_sync"); break;
        }
        for (int p = 0; p < npes; p++)
            CHECK(slots[p] == k + (long)mode * ROUNDS, "after %s of round %ld, PE %d's slot holds "
                  "%ld: released before PE %d arrived", how, k, p, slots[p], p);
        /* nobody writes round k+1 until everyone checked round k */
        switch (mode) {
        case 0: shmem_barrier_all(); break;
        case 1: shmem_sync_all(); break;
        default: shmem_team_sync(SHMEM_TEAM_WORLD); break;
        }
    }
}

static void even_team(test_rng_t *r) {
    shmem_team_t even = SHMEM_TEAM_INVALID;
    int size = (npes + 1) / 2;
    CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, size, NULL, 0, &even) == 0,
          "shmem_team_split_strided(0, 2, %d)", size);
    if (me % 2 == 0) {
        CHECK(even != SHMEM_TEAM_INVALID && shmem_team_n_pes(even) == size, "the even team");
        for (long k = 1; k <= ROUNDS; k++) {
            for (int i = 0; i < size; i++) {
                if (i == size / 2) delay(r);
                shmem_long_p(&slots2[me], k, 2 * i);
            }
            shmem_quiet();
            CHECK(shmem_team_sync(even) == 0, "team_sync(even)");
            for (int i = 0; i < size; i++)
                CHECK(slots2[2 * i] == k, "after team_sync of the even team, round %ld, PE %d's "
                      "slot holds %ld", k, 2 * i, slots2[2 * i]);
            shmem_team_sync(even);
        }
        shmem_team_destroy(even);
    } else {
        CHECK(even == SHMEM_TEAM_INVALID, "an odd PE got a handle to the even team");
    }
    shmem_barrier_all();
}

int main(void) {
    seed = shmem_test_start(NAME);
    me = shmem_my_pe();
    npes = shmem_n_pes();
    CHECK(npes <= 4096, "at most 4096 PEs");
    test_rng_t r = test_rng(seed, 10 + (uint64_t)me);
    rounds("shmem_barrier_all", 0, &r);
    rounds("shmem_quiet + shmem_sync_all", 1, &r);
    rounds("shmem_quiet + shmem_team_sync(WORLD)", 2, &r);
    even_team(&r);
    shmem_test_pass(NAME, "barrier_all, sync_all, team_sync on the world and a split team");
    shmem_finalize();
    return 0;
}
