/*
 * api_teams — the team API against a reference model of who belongs where.
 *
 *   - shmem_team_split_strided for every (start, stride, size) around the edges
 *     (negative strides, stride 0 of size 1, start and last member at the
 *     ends, and every invalid combination, which must return non-zero and
 *     SHMEM_TEAM_INVALID), from the world and from a reversed team;
 *   - splits of splits, translated back to the world;
 *   - shmem_team_split_2d for xrange 1 .. size + 2 (dividing the size or not,
 *     larger than it) and invalid xranges;
 *   - shmem_team_translate_pe between every pair of teams, for every PE number
 *     including out-of-range ones; my_pe / n_pes on SHMEM_TEAM_INVALID;
 *   - get_config and SHMEM_TEAM_NUM_CONTEXTS; shmem_team_ptr;
 *   - SHMEM_TEAM_SHARED (its members are the PEs shmem_ptr reaches);
 *   - destroy and re-create many more times than there are team slots, with a
 *     collective on every team; holding as many teams as fit at once;
 *   - shmemx_team_index and shmemx_team_destroy_callback_add / _remove.
 * Every team made is used (a sync and a collective that checks membership).
 */
#include <shmemx.h>

#include "api_test.h"

#define MAXP 64

static int probe;         /* a symmetric global, for shmem_ptr / shmem_team_ptr */
static int seen[MAXP];    /* written by team members through shmem_team_ptr */
static int gathered[MAXP]; /* fcollect destination */
static int mine;          /* fcollect source */
static long red_src[2], red_dst[2];

/* A team as the test believes it is: its members' world PE numbers. */
typedef struct {
    const char *name;
    shmem_team_t t; /* SHMEM_TEAM_INVALID where this PE is not a member */
    int size;
    int pes[MAXP];
} model_t;

static int index_in(const model_t *m, int world_pe) {
    for (int i = 0; i < m->size; i++)
        if (m->pes[i] == world_pe) return i;
    return -1;
}

/* Reference for split_strided on a parent whose members are `parent`: is it
 * valid, and who is in it. */
static int ref_split(const model_t *parent, int start, int stride, int size, model_t *out) {
    out->size = 0;
    if (size < 1 || size > MAXP) return 0;
    for (int i = 0; i < size; i++) {
        long idx = (long)start + (long)i * stride;
        if (idx < 0 || idx >= parent->size) return 0;
        for (int j = 0; j < i; j++)
            if (out->pes[j] == parent->pes[idx]) return 0; /* a PE named twice */
        out->pes[i] = parent->pes[idx];
    }
    out->size = size;
    return 1;
}

/* Check the handle against the model and use it: a sync, then an fcollect of
 * world PE numbers, which must list the members in team order. */
static void check_team(const model_t *m, const char *what) {
    int me = shmem_my_pe();
    int idx = index_in(m, me);
    if (idx < 0) {
        CHECK(m->t == SHMEM_TEAM_INVALID, "%s: PE %d is not a member but got a team", what, me);
        return;
    }
    CHECK(m->t != SHMEM_TEAM_INVALID, "%s: PE %d is member %d but got SHMEM_TEAM_INVALID",
          what, me, idx);
    CHECK_EQ_INT(shmem_team_my_pe(m->t), idx);
    CHECK_EQ_INT(shmem_team_n_pes(m->t), m->size);
    for (int i = -2; i < m->size + 2; i++) {
        int want = i >= 0 && i < m->size ? m->pes[i] : -1;
        int got = shmem_team_translate_pe(m->t, i, SHMEM_TEAM_WORLD);
        CHECK(got == want, "%s: translate(team %d -> world) = %d, want %d", what, i, got, want);
    }
    for (int p = 0; p < shmem_n_pes(); p++) {
        int got = shmem_team_translate_pe(SHMEM_TEAM_WORLD, p, m->t);
        CHECK(got == index_in(m, p), "%s: translate(world %d -> team) = %d, want %d", what, p,
              got, index_in(m, p));
    }
    CHECK_EQ_INT(shmem_team_sync(m->t), 0);
    mine = me;
    for (int i = 0; i < MAXP; i++) gathered[i] = -7;
    CHECK_EQ_INT(shmem_int_fcollect(m->t, gathered, &mine, 1), 0);
    for (int i = 0; i < m->size; i++)
        CHECK(gathered[i] == m->pes[i], "%s: fcollect slot %d holds %d, want PE %d", what, i,
              gathered[i], m->pes[i]);
    CHECK(gathered[m->size] == -7, "%s: fcollect wrote past the team's %d slots", what, m->size);
}

static void world_model(model_t *w) {
    w->name = "world";
    w->t = SHMEM_TEAM_WORLD;
    w->size = shmem_n_pes();
    for (int i = 0; i < w->size; i++) w->pes[i] = i;
}

/* Every (start, stride, size) near the edges, from `parent`. Returns the
 * number of valid splits made. */
static int split_strided_all(const model_t *parent) {
    int n = parent->size, made = 0;
    char what[160];
    for (int start = -1; start <= n; start++)
        for (int stride = -n; stride <= n; stride++)
            for (int size = -1; size <= n + 1; size++) {
                model_t m = {.name = "split"};
                int valid = ref_split(parent, start, stride, size, &m);
                snprintf(what, sizeof what, "split_strided(%s, start %d, stride %d, size %d)",
                         parent->name, start, stride, size);
                shmem_team_t t = (shmem_team_t)&m; /* must be overwritten */
                int rc = shmem_team_split_strided(parent->t, start, stride, size, NULL, 0, &t);
                if (!valid) {
                    CHECK(rc != 0, "%s: returned 0 for invalid arguments", what);
                    CHECK(t == SHMEM_TEAM_INVALID, "%s: invalid split left a team handle", what);
                    continue;
                }
                CHECK(rc == 0, "%s: returned %d", what, rc);
                m.t = t;
                check_team(&m, what);
                if (t != SHMEM_TEAM_INVALID) shmem_team_destroy(t);
                made++;
            }
    return made;
}

/* A reversed copy of `parent`, as a team and a model. */
static void reversed(const model_t *parent, model_t *out, const char *name) {
    ref_split(parent, parent->size - 1, -1, parent->size, out);
    out->name = name;
    CHECK_EQ_INT(shmem_team_split_strided(parent->t, parent->size - 1, -1, parent->size, NULL, 0,
                                          &out->t), 0);
    check_team(out, name);
}

/* world -> reversed -> every other member of it -> that reversed again. */
static void split_of_split(void) {
    model_t w, rev, alt, alt_rev;
    world_model(&w);
    reversed(&w, &rev, "reversed world");
    int asz = (rev.size + 1) / 2;
    ref_split(&rev, 0, 2, asz, &alt);
    alt.name = "every other of reversed";
    CHECK_EQ_INT(shmem_team_split_strided(rev.t, 0, 2, asz, NULL, 0, &alt.t), 0);
    check_team(&alt, alt.name);
    if (alt.t != SHMEM_TEAM_INVALID) {
        /* only alt's members call the split of alt */
        ref_split(&alt, alt.size - 1, -1, alt.size, &alt_rev);
        alt_rev.name = "reversed(every other of reversed)";
        CHECK_EQ_INT(shmem_team_split_strided(alt.t, alt.size - 1, -1, alt.size, NULL, 0,
                                              &alt_rev.t), 0);
        check_team(&alt_rev, alt_rev.name);
        /* team -> team translation through the chain */
        for (int i = 0; i < alt_rev.size; i++) {
            int in_alt = shmem_team_translate_pe(alt_rev.t, i, alt.t);
            CHECK_EQ_INT(in_alt, alt.size - 1 - i);
            int in_rev = shmem_team_translate_pe(alt.t, in_alt, rev.t);
            CHECK_EQ_INT(in_rev, 2 * in_alt);
            CHECK_EQ_INT(shmem_team_translate_pe(rev.t, in_rev, SHMEM_TEAM_WORLD),
                         alt_rev.pes[i]);
        }
        shmem_team_destroy(alt_rev.t);
        shmem_team_destroy(alt.t);
    }
    shmem_barrier_all();
    /* And the whole enumeration again from a parent that is not the world. */
    split_strided_all(&rev);
    shmem_team_destroy(rev.t);
}

/* split_2d from `parent` for every xrange; the rows and columns against the
 * model, and a sum over each that cross-checks them. */
static void split_2d_all(const model_t *parent) {
    int n = parent->size;
    char what[160];
    for (int xr = -1; xr <= n + 2; xr++) {
        snprintf(what, sizeof what, "split_2d(%s, xrange %d)", parent->name, xr);
        shmem_team_t xt = (shmem_team_t)&what, yt = (shmem_team_t)&what;
        int rc = shmem_team_split_2d(parent->t, xr, NULL, 0, &xt, NULL, 0, &yt);
        if (xr < 1) {
            CHECK(rc != 0, "%s: returned 0", what);
            CHECK(xt == SHMEM_TEAM_INVALID && yt == SHMEM_TEAM_INVALID,
                  "%s: failed split left team handles", what);
            continue;
        }
        CHECK(rc == 0, "%s: returned %d", what, rc);
        int ex = xr > n ? n : xr; /* an xrange beyond the size acts as the size */
        int me = index_in(parent, shmem_my_pe());
        int x = me % ex, y = me / ex;
        model_t row = {.name = "x-axis team", .t = xt}, col = {.name = "y-axis team", .t = yt};
        for (int i = y * ex; i < n && i < (y + 1) * ex; i++) row.pes[row.size++] = parent->pes[i];
        for (int i = x; i < n; i += ex) col.pes[col.size++] = parent->pes[i];
        char w2[200];
        snprintf(w2, sizeof w2, "%s row", what);
        check_team(&row, w2);
        snprintf(w2, sizeof w2, "%s column", what);
        check_team(&col, w2);
        CHECK_EQ_INT(shmem_team_my_pe(xt), x);
        CHECK_EQ_INT(shmem_team_my_pe(yt), y);
        for (int i = 0; i < row.size; i++)
            CHECK_EQ_INT(shmem_team_translate_pe(xt, i, parent->t), y * ex + i);
        for (int i = 0; i < col.size; i++)
            CHECK_EQ_INT(shmem_team_translate_pe(yt, i, parent->t), x + i * ex);
        /* sum of parent indices over my row and over my column */
        red_src[0] = me;
        red_src[1] = 1;
        CHECK_EQ_INT(shmem_long_sum_reduce(xt, red_dst, red_src, 2), 0);
        long rs = 0;
        for (int i = y * ex; i < n && i < (y + 1) * ex; i++) rs += i;
        CHECK(red_dst[0] == rs && red_dst[1] == row.size, "%s: row sum %ld/%ld, want %ld/%d",
              what, red_dst[0], red_dst[1], rs, row.size);
        CHECK_EQ_INT(shmem_long_sum_reduce(yt, red_dst, red_src, 2), 0);
        long cs = 0;
        for (int i = x; i < n; i += ex) cs += i;
        CHECK(red_dst[0] == cs && red_dst[1] == col.size, "%s: column sum %ld/%ld, want %ld/%d",
              what, red_dst[0], red_dst[1], cs, col.size);
        shmem_team_destroy(xt);
        shmem_team_destroy(yt);
    }
}

/* translate_pe between every pair of a set of teams, INVALID included. */
static void translate_all_pairs(void) {
    int n = shmem_n_pes(), me = shmem_my_pe();
    model_t m[6];
    world_model(&m[0]);
    m[1].name = "shared";
    m[1].t = SHMEM_TEAM_SHARED;
    m[1].size = 0;
    for (int p = 0; p < n; p++)
        if (shmem_ptr(&probe, p)) m[1].pes[m[1].size++] = p;
    reversed(&m[0], &m[2], "reversed");
    ref_split(&m[0], 0, 2, (n + 1) / 2, &m[3]);
    m[3].name = "evens";
    CHECK_EQ_INT(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, (n + 1) / 2, NULL, 0, &m[3].t),
                 0);
    int nodd = n / 2; /* the odd PEs, highest first; empty on one PE */
    m[4].name = "odds, descending";
    m[4].size = 0;
    m[4].t = SHMEM_TEAM_INVALID;
    if (nodd > 0) {
        int start = n - 1 - (n % 2 == 1); /* the highest odd world PE, in reversed order */
        ref_split(&m[2], n - 1 - start, 2, nodd, &m[4]);
        CHECK_EQ_INT(shmem_team_split_strided(m[2].t, n - 1 - start, 2, nodd, NULL, 0, &m[4].t),
                     0);
        for (int i = 0; i < nodd; i++)
            CHECK(m[4].pes[i] % 2 == 1, "odds model holds %d", m[4].pes[i]);
    }
    m[5].name = "invalid";
    m[5].t = SHMEM_TEAM_INVALID;
    m[5].size = 0;
    for (int i = 0; i < 6; i++) check_team(&m[i], m[i].name);
    for (int a = 0; a < 6; a++)
        for (int b = 0; b < 6; b++) {
            int a_ok = m[a].t != SHMEM_TEAM_INVALID, b_ok = m[b].t != SHMEM_TEAM_INVALID;
            for (int i = -1; i <= n; i++) {
                int want = -1;
                if (a_ok && b_ok && i >= 0 && i < m[a].size) want = index_in(&m[b], m[a].pes[i]);
                int got = shmem_team_translate_pe(m[a].t, i, m[b].t);
                CHECK(got == want, "translate_pe(%s, %d, %s) = %d, want %d", m[a].name, i,
                      m[b].name, got, want);
            }
        }
    CHECK_EQ_INT(shmem_team_my_pe(SHMEM_TEAM_INVALID), -1);
    CHECK_EQ_INT(shmem_team_n_pes(SHMEM_TEAM_INVALID), -1);
    /* shmem_team_ptr: team member i of the reversed team is world PE n-1-i */
    for (int i = -1; i <= n; i++) {
        void *p = shmem_team_ptr(m[2].t, &probe, i);
        if (i < 0 || i >= n)
            CHECK(p == NULL, "team_ptr(reversed, %d) out of range gave %p", i, p);
        else
            CHECK(p == shmem_ptr(&probe, n - 1 - i), "team_ptr(reversed, %d) = %p, "
                  "shmem_ptr(world %d) = %p", i, p, n - 1 - i, shmem_ptr(&probe, n - 1 - i));
    }
    CHECK(shmem_team_ptr(SHMEM_TEAM_INVALID, &probe, 0) == NULL, "team_ptr(INVALID) not NULL");
    CHECK(shmem_team_ptr(SHMEM_TEAM_WORLD, &probe, me) == &probe, "team_ptr to myself");
    /* every member of the shared team writes its PE number into every member's
     * seen[] through team_ptr */
    for (int i = 0; i < MAXP; i++) seen[i] = -1;
    shmem_barrier_all();
    int ms = shmem_team_n_pes(SHMEM_TEAM_SHARED);
    CHECK_EQ_INT(ms, m[1].size);
    CHECK_EQ_INT(shmem_team_my_pe(SHMEM_TEAM_SHARED), index_in(&m[1], me));
    for (int i = 0; i < ms; i++) {
        int *p = shmem_team_ptr(SHMEM_TEAM_SHARED, seen, i);
        CHECK(p != NULL, "team_ptr(SHARED, member %d) is NULL", i);
        p[shmem_team_my_pe(SHMEM_TEAM_SHARED)] = me;
    }
    shmem_barrier_all();
    for (int i = 0; i < ms; i++) CHECK_EQ_INT(seen[i], m[1].pes[i]);
    shmem_team_destroy(m[2].t);
    if (m[3].t != SHMEM_TEAM_INVALID) shmem_team_destroy(m[3].t);
    if (m[4].t != SHMEM_TEAM_INVALID) shmem_team_destroy(m[4].t);
    shmem_team_destroy(SHMEM_TEAM_INVALID); /* allowed: does nothing */
}

/* SHMEM_TEAM_NUM_CONTEXTS is kept and reported; contexts up to it are granted. */
static void config(void) {
    shmem_team_config_t c = {.num_contexts = 3}, got = {.num_contexts = -5};
    shmem_team_t t;
    int n = shmem_n_pes();
    CHECK_EQ_INT(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, n, &c, SHMEM_TEAM_NUM_CONTEXTS,
                                          &t), 0);
    CHECK_EQ_INT(shmem_team_get_config(t, SHMEM_TEAM_NUM_CONTEXTS, &got), 0);
    CHECK_EQ_INT(got.num_contexts, 3);
    got.num_contexts = 77;
    CHECK_EQ_INT(shmem_team_get_config(t, 0, &got), 0);
    CHECK(got.num_contexts == 77, "get_config with an empty mask wrote num_contexts");
    CHECK_EQ_INT(shmem_team_get_config(SHMEM_TEAM_WORLD, SHMEM_TEAM_NUM_CONTEXTS, &got), 0);
    CHECK(shmem_team_get_config(SHMEM_TEAM_INVALID, SHMEM_TEAM_NUM_CONTEXTS, &got) != 0,
          "get_config(INVALID) returned 0");
    shmem_ctx_t ctx[3];
    for (int k = 0; k < 3; k++) {
        CHECK_EQ_INT(shmem_team_create_ctx(t, 0, &ctx[k]), 0);
        shmem_team_t back = SHMEM_TEAM_INVALID;
        CHECK_EQ_INT(shmem_ctx_get_team(ctx[k], &back), 0);
        CHECK(back == t, "ctx_get_team gave another team");
    }
    for (int k = 0; k < 3; k++) shmem_ctx_destroy(ctx[k]);
    CHECK_EQ_INT(shmem_team_create_ctx(t, 0, &ctx[0]), 0); /* freed ones count again */
    shmem_ctx_destroy(ctx[0]);
    shmem_team_destroy(t);
    /* the 2-D split takes a config per axis */
    shmem_team_config_t cx = {.num_contexts = 1}, cy = {.num_contexts = 2};
    shmem_team_t xt, yt;
    CHECK_EQ_INT(shmem_team_split_2d(SHMEM_TEAM_WORLD, 2, &cx, SHMEM_TEAM_NUM_CONTEXTS, &xt, &cy,
                                     SHMEM_TEAM_NUM_CONTEXTS, &yt), 0);
    CHECK_EQ_INT(shmem_team_get_config(xt, SHMEM_TEAM_NUM_CONTEXTS, &got), 0);
    CHECK_EQ_INT(got.num_contexts, 1);
    CHECK_EQ_INT(shmem_team_get_config(yt, SHMEM_TEAM_NUM_CONTEXTS, &got), 0);
    CHECK_EQ_INT(got.num_contexts, 2);
    shmem_team_destroy(xt);
    shmem_team_destroy(yt);
}

/* Many more create/destroy cycles than slots, random shapes from the shared
 * seed; then as many teams at once as fit, all used, all destroyed, again. */
static void cycles(uint64_t seed) {
    model_t w;
    world_model(&w);
    int n = w.size;
    test_rng_t r = test_rng(seed, 999); /* the same draws on every PE */
    for (int k = 0; k < 100; k++) {
        int size = 1 + (int)(test_next(&r) % (uint64_t)n);
        int stride = size == 1 ? (int)(test_next(&r) % 3) - 1 : 1 + (int)(test_next(&r) % 2);
        if (size > 1 && (size - 1) * stride >= n) stride = 1;
        int neg = test_next(&r) & 1;
        int start = neg ? n - 1 : 0;
        if (neg) stride = -stride;
        if (size == 1) start = (int)(test_next(&r) % (uint64_t)n);
        model_t m = {.name = "cycle"};
        CHECK(ref_split(&w, start, stride, size, &m), "cycle %d: bad shape", k);
        CHECK_EQ_INT(shmem_team_split_strided(SHMEM_TEAM_WORLD, start, stride, size, NULL, 0,
                                              &m.t), 0);
        char what[96];
        snprintf(what, sizeof what, "cycle %d (start %d stride %d size %d)", k, start, stride,
                 size);
        check_team(&m, what);
        if (m.t != SHMEM_TEAM_INVALID) shmem_team_destroy(m.t);
    }
    for (int round = 0; round < 2; round++) {
        shmem_team_t held[64];
        int nheld = 0;
        for (;;) {
            CHECK(nheld < 64, "more than 64 teams at once: slots never run out?");
            int rc = shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, n, NULL, 0, &held[nheld]);
            if (rc != 0) {
                CHECK(held[nheld] == SHMEM_TEAM_INVALID, "failed split left a handle");
                break;
            }
            nheld++;
        }
        CHECK(nheld >= 16, "only %d teams fit at once", nheld);
        for (int i = 0; i < nheld; i++) {
            model_t m = {.name = "held", .t = held[i], .size = n};
            for (int p = 0; p < n; p++) m.pes[p] = p;
            check_team(&m, "one of the teams held at once");
        }
        for (int i = nheld - 1; i >= 0; i--) shmem_team_destroy(held[i]);
        if (shmem_my_pe() == 0 && round == 1)
            printf("%s: %d teams fit at once; after destroying them all they fit again\n",
                   api_name, nheld);
    }
}

/* shmemx_team_index and the destroy callbacks (what per-team library state,
 * the GPU collectives', rests on): an index equal on every member, distinct
 * among the teams held at once, 0 for the world, -1 for SHMEM_TEAM_INVALID;
 * a callback sees each destroyed team once, before it is gone, until removed. */
static int idx_all[MAXP];
static shmem_team_t cb_team;
static int cb_calls, cb_size;
static void on_destroy(shmem_team_t t, void *arg) {
    CHECK(arg == &cb_calls, "callback argument %p, expected %p", arg, (void *)&cb_calls);
    cb_team = t;
    cb_calls++;
    cb_size = shmem_team_n_pes(t); /* still usable here */
}

static void library_state(void) {
    int n = shmem_n_pes(), me = shmem_my_pe();
    CHECK_EQ_INT(shmemx_team_index(SHMEM_TEAM_WORLD), 0);
    CHECK_EQ_INT(shmemx_team_index(SHMEM_TEAM_INVALID), -1);
    shmem_team_t held[SHMEMX_TEAM_INDEX_MAX];
    int nheld = 0;
    while (nheld < SHMEMX_TEAM_INDEX_MAX &&
           shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, n, NULL, 0, &held[nheld]) == 0)
        nheld++;
    for (int i = 0; i < nheld; i++) {
        int x = shmemx_team_index(held[i]);
        CHECK(x > 0 && x < SHMEMX_TEAM_INDEX_MAX, "team index %d out of range", x);
        for (int j = 0; j < i; j++)
            CHECK(shmemx_team_index(held[j]) != x, "teams %d and %d share index %d", j, i, x);
        shmem_int_p(&idx_all[me], x, 0);
        shmem_barrier_all();
        if (me == 0)
            for (int p = 1; p < n; p++)
                CHECK(idx_all[p] == idx_all[0], "team %d: PE %d has index %d, PE 0 %d", i, p,
                      idx_all[p], idx_all[0]);
        shmem_barrier_all();
    }
    CHECK_EQ_INT(shmemx_team_destroy_callback_add(on_destroy, &cb_calls), 0);
    shmem_team_t t = held[nheld - 1];
    shmem_team_destroy(t);
    CHECK(cb_calls == 1 && cb_team == t && cb_size == n,
          "destroy callback: %d calls, team %p (expected %p), size %d", cb_calls,
          (void *)cb_team, (void *)t, cb_size);
    shmemx_team_destroy_callback_remove(on_destroy, &cb_calls);
    for (int i = nheld - 2; i >= 0; i--) shmem_team_destroy(held[i]);
    CHECK_EQ_INT(cb_calls, 1);
}

int main(void) {
    uint64_t seed = api_start("api_teams", SHMEM_THREAD_SINGLE);
    CHECK(shmem_n_pes() < MAXP, "the test models at most %d PEs", MAXP - 1);
    model_t w;
    world_model(&w);
    check_team(&w, "SHMEM_TEAM_WORLD");
    int made = split_strided_all(&w);
    split_of_split();
    split_2d_all(&w);
    model_t rev;
    reversed(&w, &rev, "reversed world");
    split_2d_all(&rev);
    shmem_team_destroy(rev.t);
    translate_all_pairs();
    config();
    cycles(seed);
    library_state();
    char what[256];
    snprintf(what, sizeof what, "%d valid strided splits from the world, splits of splits, "
             "2-D splits, translations, team_ptr, config, 100+ create/destroy cycles, team "
             "indices and destroy callbacks", made);
    api_pass(what);
    shmem_finalize();
    return 0;
}
