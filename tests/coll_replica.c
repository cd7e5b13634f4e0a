/*
 * coll_replica — versioned replication: the primary publishes many versions as
 * fast as it can while every replica reads continuously; each read must be one
 * whole version (every word of it carries the same version and position
 * pattern), versions never go backwards, and every replica ends by waiting for
 * and reading the last one. Then with a split team whose primary is not PE 0.
 */
#include <shmemx.h>

#include "test.h"

enum { WORDS = 20000, VERSIONS = 300 };

static void fill(uint64_t *buf, uint64_t v) {
    for (int i = 0; i < WORDS; i++) buf[i] = v * 0x9E3779B97F4A7C15ull ^ (uint64_t)i;
}

static void check_whole(const uint64_t *buf, uint64_t v, const char *what) {
    for (int i = 0; i < WORDS; i++)
        CHECK(buf[i] == (v * 0x9E3779B97F4A7C15ull ^ (uint64_t)i),
              "%s: version %llu is torn at word %d", what, (unsigned long long)v, i);
}

static void run(shmem_team_t team, int primary, const char *what) {
    shmemx_replica_t r;
    CHECK_EQ_INT(shmemx_replica_create(team, WORDS * sizeof(uint64_t), primary, &r), 0);
    uint64_t *buf = malloc(WORDS * sizeof *buf);
    CHECK(buf, "out of memory");
    if (team != SHMEM_TEAM_INVALID) {
        if (shmem_team_my_pe(team) == primary) {
            for (uint64_t v = 1; v <= VERSIONS; v++) {
                fill(buf, v);
                CHECK_EQ_INT(shmemx_replica_publish(r, buf), v);
            }
        } else {
            uint64_t last = 0, reads = 0;
            while (last < VERSIONS) {
                uint64_t v = shmemx_replica_read(r, buf);
                CHECK(v >= last, "%s: version went back from %llu to %llu", what,
                      (unsigned long long)last, (unsigned long long)v);
                if (v) check_whole(buf, v, what);
                last = v;
                reads++;
            }
            CHECK_EQ_INT(shmemx_replica_wait(r, VERSIONS, buf), VERSIONS);
            check_whole(buf, VERSIONS, what);
            CHECK_EQ_INT(shmemx_replica_version(r), VERSIONS);
            if (shmem_team_my_pe(team) == (primary + 1) % shmem_team_n_pes(team))
                printf("%s: replica read %llu times while %d versions were published\n", what,
                       (unsigned long long)reads, VERSIONS);
        }
    }
    shmemx_replica_destroy(r);
    free(buf);
}

int main(void) {
    shmem_init();
    test_pe = shmem_my_pe();
    int n = shmem_n_pes();
    run(SHMEM_TEAM_WORLD, 0, "world");
    shmem_team_t odd = SHMEM_TEAM_INVALID;
    if (n >= 2) {
        CHECK_EQ_INT(shmem_team_split_strided(SHMEM_TEAM_WORLD, 1, 2, n / 2, NULL, 0, &odd), 0);
        run(odd, n / 2 - 1, "odd PEs, last one primary");
        if (odd != SHMEM_TEAM_INVALID) shmem_team_destroy(odd);
    }
    if (shmem_my_pe() == 0) printf("coll_replica: passed on %d PEs\n", n);
    shmem_finalize();
    return 0;
}
