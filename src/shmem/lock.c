/*
 * lock.c — distributed locks (shmem_set_lock / test / clear).
 *
 * An MCS-style queue lock would need a word per PE per lock; the standard's lock
 * is a single symmetric long, so we use a ticket lock held on PE 0's copy of it:
 * the low 32 bits are the next ticket, the high 32 bits the ticket now served.
 * Taking a ticket is a compare-swap that bumps the low half (so it wraps without
 * carrying into the served half); waiting polls the served half with back-off,
 * so waiters are served in arrival order and none starves. test_lock takes the
 * lock only if it is free (a compare-swap from "served == next").
 */
#include "runtime.h"

#define LOCK_PE 0
#define TICKET 1ull
#define SERVE (1ull << 32)

/* A lock is a symmetric, aligned long: say so in the caller's name, before
 * the atomics that would otherwise report the problem under their own names. */
static void check_lock(const char *fn, const long *lock) {
    if (SYM_UNLIKELY(!sym__is_symmetric(lock, sizeof *lock)))
        sym__fatal(fn, "the lock at %p is not symmetric: a lock is a global or static long, or "
                       "one allocated with shmem_malloc / shmem_calloc (zeroed before first use)",
                   (const void *)lock);
    if (SYM_UNLIKELY((uintptr_t)lock % sizeof *lock))
        sym__fatal(fn, "the lock at %p is not aligned to a long", (const void *)lock);
}

static uint64_t take_ticket(long *lock) {
    uint64_t v = (uint64_t)shmem_long_atomic_fetch(lock, LOCK_PE);
    for (;;) {
        uint64_t next = (v & ~0xffffffffull) | ((v + TICKET) & 0xffffffffull);
        uint64_t old = (uint64_t)shmem_long_atomic_compare_swap(lock, (long)v, (long)next, LOCK_PE);
        if (old == v) return v & 0xffffffffull;
        v = old;
    }
}

void shmem_set_lock(long *lock) {
    SYM_REQUIRE_INIT("shmem_set_lock");
    check_lock("shmem_set_lock", lock);
    uint64_t mine = take_ticket(lock);
    sym_backoff_t b = {0};
    while (((uint64_t)shmem_long_atomic_fetch(lock, LOCK_PE) >> 32) != mine) sym__backoff(&b);
    sym__ctx_quiet(SHMEM_CTX_DEFAULT); /* what the last holder did is visible */
}

void shmem_clear_lock(long *lock) {
    SYM_REQUIRE_INIT("shmem_clear_lock");
    check_lock("shmem_clear_lock", lock);
    sym__ctx_quiet(SHMEM_CTX_DEFAULT); /* our updates complete before the next holder */
    shmem_long_atomic_add(lock, (long)SERVE, LOCK_PE); /* the served half wraps off the top */
}

int shmem_test_lock(long *lock) {
    SYM_REQUIRE_INIT("shmem_test_lock");
    check_lock("shmem_test_lock", lock);
    uint64_t v = (uint64_t)shmem_long_atomic_fetch(lock, LOCK_PE);
    if ((v >> 32) != (v & 0xffffffffull)) return 1; /* held or queued: not taken */
    long want = (long)((v & ~0xffffffffull) | ((v + TICKET) & 0xffffffffull));
    if ((uint64_t)shmem_long_atomic_compare_swap(lock, (long)v, want, LOCK_PE) != v) return 1;
    sym__ctx_quiet(SHMEM_CTX_DEFAULT);
    return 0;
}
