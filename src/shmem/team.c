/*
 * team.c — teams: the world, the PEs of this host, and strided / 2-D splits.
 *
 * A team is the list of its members' world PE numbers plus a slot: a fixed
 * piece of the runtime's symmetric memory holding the team's barrier counters
 * and collective working memory. Slots are chosen collectively: the members of
 * the parent team AND together their masks of free slots and every new team
 * takes the lowest free one, so all members agree with no leader. Disjoint
 * teams made by one split (the rows of a 2-D split, the hosts' shared teams)
 * share a slot index: they never touch each other's memory.
 *
 * Slot 0 is the world, slot 1 SHMEM_TEAM_SHARED; slots 2 and 3 hold two teams
 * the runtime keeps for itself (the PEs of this host, and the first PE of each
 * host), which hierarchical collectives on the world use. The slot is also
 * what shmemx_team_index tells libraries that keep per-team state (the GPU
 * collectives), and shmem_team_destroy runs their callbacks first.
 */
#include <stdlib.h>
#include <string.h>

#include <shmemx.h>

#include "runtime.h"

struct symi_team sym__team_world, sym__team_shared, sym__team_host, sym__team_leaders;
shmem_team_t const symi_team_world = &sym__team_world;
shmem_team_t const symi_team_shared = &sym__team_shared;

static uint64_t slots_used; /* bit s: this PE is in a live team using slot s */
static shmem_team_t joined[SYM_MAX_TEAMS]; /* the team made by join() in slot s */

/* shmemx_team_destroy_callback_add's callbacks, run by shmem_team_destroy */
#define DESTROY_CALLBACKS 4
static struct {
    void (*fn)(shmem_team_t team, void *arg);
    void *arg;
} destroy_cb[DESTROY_CALLBACKS];

/* ---- barrier ---- */

void sym__atomic_add_u64(uint64_t *dest, uint64_t value, int pe) {
    uint64_t *p = sym__peer_addr(dest, pe);
    if (SYM_LIKELY(p != NULL && !sym__amo_through_fabric)) {
        __atomic_fetch_add(p, value, __ATOMIC_SEQ_CST);
        return;
    }
    sym__remote->amo(sym__ctx_default.remote, SYM_AMO_ADD, dest, &value, NULL, NULL, 8, pe, 1);
}

/* Dissemination barrier: in round r each member signals the member 2^r ahead
 * and waits for the one 2^r behind; ceil(log2 n) rounds. The round counters
 * only grow, and a member has completed `epoch` barriers, so "my counter has
 * reached epoch" means "my predecessor has reached this round of this barrier". */
void sym__team_barrier(shmem_team_t t) {
    int n = t->size;
    sym__beat();
    if (n == 1) return;
    uint64_t e = ++t->epoch;
    sym_slot_hdr_t *h = sym__slot(t);
    for (int r = 0, d = 1; d < n; r++, d <<= 1) {
        sym__atomic_add_u64(&h->barrier[r], 1, t->pes[(t->me + d) % n]);
        sym__wait_ge(&h->barrier[r], e);
    }
}

/* ---- building teams ---- */

static shmem_team_t team_new(int size, const int *world_pes, int slot) {
    shmem_team_t t = calloc(1, sizeof *t);
    int *pes = malloc((size_t)size * sizeof *pes);
    int *idx = malloc((size_t)sym__world.npes * sizeof *idx);
    if (!t || !pes || !idx) sym__fatal("shmem_team_split", "out of memory");
    for (int p = 0; p < sym__world.npes; p++) idx[p] = -1;
    t->me = -1;
    for (int i = 0; i < size; i++) {
        pes[i] = world_pes[i];
        idx[world_pes[i]] = i;
        if (world_pes[i] == sym__world.me) t->me = i;
    }
    t->size = size;
    t->pes = pes;
    t->index_of = idx;
    t->slot = slot;
    return t;
}

static void team_free(shmem_team_t t) {
    joined[t->slot] = NULL;
    free(t->pes);
    free(t->index_of);
    free(t);
}

static void team_fill(struct symi_team *dst, int size, const int *world_pes, int slot) {
    shmem_team_t t = team_new(size, world_pes, slot);
    *dst = *t;
    free(t);
    slots_used |= 1ull << slot;
}

void sym__team_init_world(void) {
    int n = sym__world.npes;
    int *all = malloc((size_t)n * sizeof *all);
    if (!all) sym__fatal("shmem_init", "out of memory");
    for (int i = 0; i < n; i++) all[i] = i;
    /* The heap segment is fresh (zero) memory: no slot needs clearing here. */
    team_fill(&sym__team_world, n, all, 0);
    team_fill(&sym__team_shared, sym__world.n_local, sym__world.local_pes, 1);
    team_fill(&sym__team_host, sym__world.n_local, sym__world.local_pes, 2);
    int nl = 0; /* the first PE of each host, in PE order */
    for (int pe = 0; pe < n; pe++)
        if (sym__world.peer[pe].local_rank == 0) all[nl++] = pe;
    team_fill(&sym__team_leaders, nl, all, 3); /* me = -1 on the other PEs */
    free(all);
    sym__ctx_default.team = &sym__team_world;
}

void sym__team_fini_all(void) {
    struct symi_team *t[] = {&sym__team_world, &sym__team_shared, &sym__team_host,
                             &sym__team_leaders};
    for (size_t i = 0; i < SYM_ARRAY_LEN(t); i++) {
        free(t[i]->pes);
        free(t[i]->index_of);
        t[i]->pes = t[i]->index_of = NULL;
    }
    /* Teams the program did not destroy go with the heap that holds their slots. */
    for (int s = 0; s < SYM_MAX_TEAMS; s++)
        if (joined[s]) team_free(joined[s]);
    slots_used = 0;
}

int sym__invalid_team(const char *fn) {
    static int said;
    if (!__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
        sym__warn(fn, "the team is SHMEM_TEAM_INVALID (this PE is not in the team, or the split "
                      "that made it failed): nothing done, non-zero returned (said once)");
    return -1;
}

void sym__check_team(const char *fn, shmem_team_t t) {
    if (t == SHMEM_TEAM_INVALID) sym__fatal(fn, "the team is SHMEM_TEAM_INVALID");
    if (t->me < 0) sym__fatal(fn, "this PE is not a member of the team");
}

/* All-gather one 64-bit word over `parent`: each member writes its word into
 * every member's slot, a barrier, read, a barrier (so the words may be reused). */
static void team_allgather_u64(shmem_team_t parent, uint64_t v, uint64_t *out) {
    sym_slot_hdr_t *h = sym__slot(parent);
    for (int i = 0; i < parent->size; i++) {
        int pe = parent->pes[i];
        uint64_t *dst = sym__peer_addr(&h->peer[parent->me], pe);
        if (dst)
            __atomic_store_n(dst, v, __ATOMIC_RELAXED);
        else
            sym__remote->put(sym__ctx_default.remote, &h->peer[parent->me], &v, 8, pe, 1);
    }
    if (sym__remote) sym__remote->quiet(sym__ctx_default.remote);
    sym__team_barrier(parent);
    for (int i = 0; i < parent->size; i++) out[i] = __atomic_load_n(&h->peer[i], __ATOMIC_RELAXED);
    sym__team_barrier(parent);
}

/* The `count` lowest slots free on every member of parent; 0 when there are
 * not enough (every member sees the same answer). */
static int agree_slots(shmem_team_t parent, int count, int *slot) {
    uint64_t *masks = malloc((size_t)parent->size * sizeof *masks);
    if (!masks) sym__fatal("shmem_team_split", "out of memory");
    team_allgather_u64(parent, slots_used, masks);
    uint64_t used = 0;
    for (int i = 0; i < parent->size; i++) used |= masks[i];
    free(masks);
    int found = 0;
    for (int s = SYM_RESERVED_SLOTS; s < SYM_MAX_TEAMS && found < count; s++)
        if (!(used & (1ull << s))) slot[found++] = s;
    return found == count;
}

/* Make this PE a member of the team of `size` world PEs in `pes`, using `slot`. */
static shmem_team_t join(int size, const int *pes, int slot, const shmem_team_config_t *config,
                         long mask) {
    shmem_team_t t = team_new(size, pes, slot);
    slots_used |= 1ull << slot;
    joined[slot] = t;
    memset(sym__slot(t), 0, SYM_SLOT_HEADER);
    if (config && (mask & SHMEM_TEAM_NUM_CONTEXTS)) t->config.num_contexts = config->num_contexts;
    t->config_mask = mask;
    return t;
}

int shmem_team_split_strided(shmem_team_t parent, int start, int stride, int size,
                             const shmem_team_config_t *config, long config_mask,
                             shmem_team_t *new_team) {
    static const char fn[] = "shmem_team_split_strided";
    SYM_REQUIRE_INIT(fn);
    *new_team = SHMEM_TEAM_INVALID;
    if (parent == SHMEM_TEAM_INVALID) return -1;
    sym__check_team(fn, parent);
    int n = parent->size;
    /* Every member checks the same arguments, so every member returns the same. */
    long last = (long)start + (long)stride * (size - 1);
    if (size < 1 || start < 0 || start >= n || last < 0 || last >= n || (stride == 0 && size > 1))
        return -1;
    int *pes = malloc((size_t)size * sizeof *pes);
    if (!pes) sym__fatal(fn, "out of memory");
    int member = 0;
    for (int i = 0; i < size; i++) {
        pes[i] = parent->pes[start + i * stride];
        if (pes[i] == sym__world.me) member = 1;
    }
    for (int i = 0; i < size; i++)
        for (int j = 0; j < i; j++)
            if (pes[i] == pes[j]) {
                free(pes);
                return -1; /* a zero or repeating stride names a PE twice */
            }
    int slot;
    if (!agree_slots(parent, 1, &slot)) {
        free(pes);
        if (sym__world.me == parent->pes[0])
            sym__warn(fn, "all %d team slots are in use; destroy teams that are no longer "
                          "needed", SYM_MAX_TEAMS - SYM_RESERVED_SLOTS);
        return -1;
    }
    if (member) *new_team = join(size, pes, slot, config, config_mask);
    free(pes);
    sym__team_barrier(parent); /* the new slot is clear everywhere before use */
    return 0;
}

int shmem_team_split_2d(shmem_team_t parent, int xrange, const shmem_team_config_t *xaxis_config,
                        long xaxis_mask, shmem_team_t *xaxis_team,
                        const shmem_team_config_t *yaxis_config, long yaxis_mask,
                        shmem_team_t *yaxis_team) {
    static const char fn[] = "shmem_team_split_2d";
    SYM_REQUIRE_INIT(fn);
    *xaxis_team = *yaxis_team = SHMEM_TEAM_INVALID;
    if (parent == SHMEM_TEAM_INVALID || xrange < 1) return -1;
    sym__check_team(fn, parent);
    int n = parent->size;
    if (xrange > n) xrange = n;
    int me = parent->me, x = me % xrange, y = me / xrange;
    int ny = (n + xrange - 1) / xrange;
    int slot[2];
    if (!agree_slots(parent, 2, slot)) {
        if (sym__world.me == parent->pes[0])
            sym__warn(fn, "not enough free team slots; destroy teams that are no longer needed");
        return -1;
    }
    int *pes = malloc((size_t)(xrange > ny ? xrange : ny) * sizeof *pes);
    if (!pes) sym__fatal(fn, "out of memory");
    /* x-axis team: my row, members y*xrange .. y*xrange + xrange-1 (the last row
     * may be short); y-axis team: my column, members x, x+xrange, ... */
    int nx = 0;
    for (int i = y * xrange; i < n && i < (y + 1) * xrange; i++) pes[nx++] = parent->pes[i];
    *xaxis_team = join(nx, pes, slot[0], xaxis_config, xaxis_mask);
    int nyc = 0;
    for (int i = x; i < n; i += xrange) pes[nyc++] = parent->pes[i];
    *yaxis_team = join(nyc, pes, slot[1], yaxis_config, yaxis_mask);
    free(pes);
    sym__team_barrier(parent);
    return 0;
}

void shmem_team_destroy(shmem_team_t team) {
    SYM_REQUIRE_INIT("shmem_team_destroy");
    if (team == SHMEM_TEAM_INVALID) return;
    if (team == SHMEM_TEAM_WORLD || team == SHMEM_TEAM_SHARED || team == &sym__team_host ||
        team == &sym__team_leaders)
        sym__fatal("shmem_team_destroy", "SHMEM_TEAM_WORLD and SHMEM_TEAM_SHARED cannot be "
                                         "destroyed");
    if (sym__coll_drain_hook) sym__coll_drain_hook(0); /* requests on it still queued */
    for (int i = 0; i < DESTROY_CALLBACKS; i++)
        if (destroy_cb[i].fn) destroy_cb[i].fn(team, destroy_cb[i].arg);
    slots_used &= ~(1ull << team->slot);
    team_free(team);
}

/* ---- per-team state kept by libraries (shmemx.h) ---- */

_Static_assert(SYM_MAX_TEAMS <= SHMEMX_TEAM_INDEX_MAX, "team slots must fit shmemx_team_index");

int shmemx_team_index(shmem_team_t team) {
    SYM_REQUIRE_INIT("shmemx_team_index");
    return team == SHMEM_TEAM_INVALID ? -1 : team->slot; /* the slot is all that says */
}

int shmemx_team_destroy_callback_add(void (*fn)(shmem_team_t, void *), void *arg) {
    for (int i = 0; i < DESTROY_CALLBACKS; i++)
        if (!destroy_cb[i].fn) {
            destroy_cb[i].fn = fn;
            destroy_cb[i].arg = arg;
            return 0;
        }
    sym__warn("shmemx_team_destroy_callback_add", "all %d team-destroy callbacks are taken",
              DESTROY_CALLBACKS);
    return SHMEMX_ENOMEM;
}

void shmemx_team_destroy_callback_remove(void (*fn)(shmem_team_t, void *), void *arg) {
    for (int i = 0; i < DESTROY_CALLBACKS; i++)
        if (destroy_cb[i].fn == fn && destroy_cb[i].arg == arg) destroy_cb[i].fn = NULL;
}

/* ---- queries ---- */

int shmem_team_my_pe(shmem_team_t team) {
    SYM_REQUIRE_INIT("shmem_team_my_pe");
    return team == SHMEM_TEAM_INVALID ? -1 : team->me;
}

int shmem_team_n_pes(shmem_team_t team) {
    SYM_REQUIRE_INIT("shmem_team_n_pes");
    return team == SHMEM_TEAM_INVALID ? -1 : team->size;
}

int shmem_team_get_config(shmem_team_t team, long config_mask, shmem_team_config_t *config) {
    SYM_REQUIRE_INIT("shmem_team_get_config");
    if (team == SHMEM_TEAM_INVALID || !config) return -1;
    if (config_mask & SHMEM_TEAM_NUM_CONTEXTS) config->num_contexts = team->config.num_contexts;
    return 0;
}

int shmem_team_translate_pe(shmem_team_t src_team, int src_pe, shmem_team_t dest_team) {
    SYM_REQUIRE_INIT("shmem_team_translate_pe");
    if (src_team == SHMEM_TEAM_INVALID || dest_team == SHMEM_TEAM_INVALID) return -1;
    if (src_pe < 0 || src_pe >= src_team->size) return -1;
    return dest_team->index_of[src_team->pes[src_pe]];
}

/* ---- synchronisation ---- */

void shmem_barrier_all(void) {
    SYM_REQUIRE_INIT("shmem_barrier_all");
    sym__ctx_quiet(SHMEM_CTX_DEFAULT);
    sym__team_barrier(SHMEM_TEAM_WORLD);
}

void shmem_sync_all(void) {
    SYM_REQUIRE_INIT("shmem_sync_all");
    sym__team_barrier(SHMEM_TEAM_WORLD);
}

int shmem_team_sync(shmem_team_t team) {
    SYM_REQUIRE_INIT("shmem_team_sync");
    if (team == SHMEM_TEAM_INVALID) return sym__invalid_team("shmem_team_sync");
    sym__check_team("shmem_team_sync", team);
    sym__team_barrier(team);
    return 0;
}
