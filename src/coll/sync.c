/*
 * sync.c — how collectives signal and move data inside a team.
 *
 * Each member owns one word per step kind ("ready", "done") in every member's
 * slot; it writes the round it has reached there with a release store (or a
 * fabric put ordered after its data). A waiter polls its own slot with acquire
 * loads. Rounds only grow, so no word is ever reset and no reset can race.
 */
#include <string.h>

#include "coll.h"

static inline uint64_t *word_at(shmem_team_t t, int word, int member) {
    return &sym__slot(t)->peer[word + member];
}

void sym__coll_signal(shmem_team_t t, int m, int word, uint64_t round) {
    uint64_t *w = word_at(t, word, t->me);
    uint64_t *p = sym__peer_addr(w, t->pes[m]);
    if (SYM_LIKELY(p != NULL)) {
        __atomic_store_n(p, round, __ATOMIC_RELEASE);
        return;
    }
    /* Remote: the signal must not overtake data this PE sent before it. */
    sym__remote->fence(sym__ctx_default.remote);
    sym__remote->put(sym__ctx_default.remote, w, &round, sizeof round, t->pes[m], 1);
}

void sym__coll_signal_all(shmem_team_t t, int word, uint64_t round) {
    for (int m = 0; m < t->size; m++) sym__coll_signal(t, m, word, round);
}

uint64_t sym__coll_sync_all(shmem_team_t t, int word) {
    sym__beat();
    uint64_t round = ++t->coll_round;
    sym__coll_signal_all(t, word, round);
    sym__coll_wait_all(t, word, round);
    return round;
}

void sym__coll_wait(shmem_team_t t, int m, int word, uint64_t round) {
    sym__beat();
    sym__wait_ge(word_at(t, word, m), round);
}

void sym__coll_wait_all(shmem_team_t t, int word, uint64_t round) {
    sym__beat();
    for (int m = 0; m < t->size; m++) sym__wait_ge(word_at(t, word, m), round);
}

void sym__coll_get(shmem_team_t t, int m, void *dst, const void *src, size_t len) {
    const void *p = sym__peer_addr(src, t->pes[m]);
    if (SYM_LIKELY(p != NULL))
        memcpy(dst, p, len);
    else
        sym__remote->get(sym__ctx_default.remote, dst, src, len, t->pes[m], 1);
}

void sym__coll_put_signal(shmem_team_t t, int m, void *dst, const void *src, size_t len, int word,
                          uint64_t value, int blocking) {
    void *d = sym__peer_addr(dst, t->pes[m]);
    if (SYM_LIKELY(d != NULL)) {
        memcpy(d, src, len);
        sym__coll_signal(t, m, word, value); /* a release store after the copy */
        return;
    }
    /* Remote: one put-with-signal (small ones travel as one message). */
    sym__remote->put_signal(sym__ctx_default.remote, dst, src, len, word_at(t, word, t->me), value,
                            SHMEM_SIGNAL_SET, t->pes[m], blocking);
}

int sym__coll_all_local(shmem_team_t t) {
    for (int m = 0; m < t->size; m++)
        if (!sym__pe_is_local(t->pes[m])) return 0;
    return 1;
}
