/*
 * replica.c — versioned replication (shmemx.h): a primary pushes versions of a
 * buffer to replicas, who never see a torn one.
 *
 * Symmetric layout: {version, writing} then two slots of `bytes`. To publish
 * version v the primary tells each replica "writing = v", fences, then writes
 * the data into slot v % 2 with put-with-signal setting version = v (the
 * signal lands after the data). A reader takes version v, copies slot v % 2,
 * and checks "writing" afterwards: slot v % 2 is only rewritten for version
 * v + 2, which is announced first, so writing < v + 2 proves the copy whole;
 * otherwise it reads again. It is a seqlock spread over two slots.
 */
#include <shmemx.h>
#include <stdlib.h>
#include <string.h>

#include "runtime.h"

typedef struct {
    uint64_t version; /* newest complete version (signal word) */
    uint64_t writing; /* newest version being written */
    uint64_t pad[6];
} replica_hdr_t;

struct shmemx_replica {
    shmem_team_t team;
    int primary; /* team PE */
    size_t bytes, slot_bytes;
    replica_hdr_t *hdr; /* symmetric */
    uint64_t published; /* primary: versions published */
};

static char *slot(struct shmemx_replica *r, uint64_t v) {
    return (char *)(r->hdr + 1) + (v & 1) * r->slot_bytes;
}

int shmemx_replica_create(shmem_team_t team, size_t bytes, int primary, shmemx_replica_t *out) {
    SYM_REQUIRE_INIT("shmemx_replica_create");
    *out = NULL;
    size_t slot_bytes = SYM_ALIGN_UP(bytes ? bytes : 1, 64);
    struct shmemx_replica *r = calloc(1, sizeof *r);
    replica_hdr_t *hdr = shmem_calloc(1, sizeof *hdr + 2 * slot_bytes); /* world-collective */
    if (!hdr || !r) {
        if (hdr) shmem_free(hdr);
        free(r);
        return SHMEMX_ENOMEM;
    }
    r->team = team != SHMEM_TEAM_INVALID && team->me >= 0 ? team : SHMEM_TEAM_INVALID;
    r->primary = primary;
    r->bytes = bytes;
    r->slot_bytes = slot_bytes;
    r->hdr = hdr;
    *out = r; /* every PE holds one, so every PE can free the memory with the rest */
    if (r->team && (primary < 0 || primary >= team->size)) {
        sym__warn("shmemx_replica_create", "primary %d is not a PE of the team (0 .. %d)",
                  primary, team->size - 1);
        return SHMEMX_EINVAL;
    }
    return 0;
}

void shmemx_replica_destroy(shmemx_replica_t r) {
    SYM_REQUIRE_INIT("shmemx_replica_destroy");
    if (!r) return;
    shmem_free(r->hdr); /* collective: its barrier lets in-flight versions land first */
    free(r);
}

static struct shmemx_replica *member(const char *fn, shmemx_replica_t r) {
    if (!r || r->team == SHMEM_TEAM_INVALID)
        sym__fatal(fn, "this PE is not a member of the replica's team");
    return r;
}

uint64_t shmemx_replica_publish(shmemx_replica_t r, const void *src) {
    SYM_REQUIRE_INIT("shmemx_replica_publish");
    member("shmemx_replica_publish", r);
    if (r->team->me != r->primary)
        sym__fatal("shmemx_replica_publish", "only the primary (team PE %d) publishes",
                   r->primary);
    uint64_t v = ++r->published;
    for (int m = 0; m < r->team->size; m++) {
        int pe = r->team->pes[m];
        shmem_uint64_p(&r->hdr->writing, v, pe);
        shmem_fence(); /* "writing" lands before the slot is touched */
        shmem_putmem_signal(slot(r, v), src, r->bytes, &r->hdr->version, v, SHMEM_SIGNAL_SET, pe);
    }
    return v;
}

uint64_t shmemx_replica_version(shmemx_replica_t r) {
    SYM_REQUIRE_INIT("shmemx_replica_version");
    return __atomic_load_n(&member("shmemx_replica_version", r)->hdr->version, __ATOMIC_ACQUIRE);
}

uint64_t shmemx_replica_read(shmemx_replica_t r, void *dst) {
    SYM_REQUIRE_INIT("shmemx_replica_read");
    member("shmemx_replica_read", r);
    for (;;) {
        uint64_t v = __atomic_load_n(&r->hdr->version, __ATOMIC_ACQUIRE);
        if (!v) return 0;
        memcpy(dst, slot(r, v), r->bytes);
        atomic_thread_fence(memory_order_acquire);
        if (__atomic_load_n(&r->hdr->writing, __ATOMIC_ACQUIRE) < v + 2) return v;
    }
}

uint64_t shmemx_replica_wait(shmemx_replica_t r, uint64_t min_version, void *dst) {
    SYM_REQUIRE_INIT("shmemx_replica_wait");
    member("shmemx_replica_wait", r);
    SYM_WAIT_UNTIL(__atomic_load_n(&r->hdr->version, __ATOMIC_ACQUIRE) >= min_version);
    return shmemx_replica_read(r, dst);
}
