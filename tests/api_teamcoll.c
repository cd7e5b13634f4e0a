/*
 * api_teamcoll — the OpenSHMEM 1.5 team collectives for every type the
 * standard lists (the type tables of shmem.h), typed and C11 generic forms:
 *
 *   broadcast(mem) from every root, collect(mem) with a different count on
 *   every PE, fcollect(mem), alltoall(mem), alltoalls(mem) with strides, and
 *   the and/or/xor/max/min/sum/prod reductions in place and not;
 *
 * on the world, on a reversed copy of it and on a strided subset, with random
 * data checked element by element against a reference computed locally (every
 * PE can recompute every PE's input from the seed). Destinations are poisoned
 * first: every element must be written and nothing past the end. Then a few
 * large cases (more than the team's staging memory) and the failure returns.
 */
#include "api_reduce.h"

#define MAXP 64
#define BUF (1 << 16) /* bytes of each small symmetric buffer */
#define POISON 0xA5

enum { P_BCAST = 1, P_COLLECT, P_FCOLLECT, P_A2A, P_A2AS, P_RED, P_BIG };

static char *sbuf, *dbuf; /* symmetric, BUF bytes each */

typedef struct {
    const char *name;
    shmem_team_t t;
    int size, me;
    int pes[MAXP];
} team_model_t;

/* ---- the calls, one wrapper per type: typed (g = 0) or generic (g = 1) ---- */

typedef struct {
    const char *name;
    size_t es;
    int (*bcast)(shmem_team_t, void *, const void *, size_t, int, int);
    int (*collect)(shmem_team_t, void *, const void *, size_t, int);
    int (*fcollect)(shmem_team_t, void *, const void *, size_t, int);
    int (*alltoall)(shmem_team_t, void *, const void *, size_t, int);
    int (*alltoalls)(shmem_team_t, void *, const void *, ptrdiff_t, ptrdiff_t, size_t, int);
} move_t;

#define DEF_MOVE(T, N)                                                               \
    static int bcast_##N(shmem_team_t t, void *d, const void *s, size_t n, int root, int g) { \
        return g ? shmem_broadcast(t, (T *)d, (const T *)s, n, root)                 \
                 : shmem_##N##_broadcast(t, d, s, n, root);                          \
    }                                                                                \
    static int collect_##N(shmem_team_t t, void *d, const void *s, size_t n, int g) { \
        return g ? shmem_collect(t, (T *)d, (const T *)s, n) : shmem_##N##_collect(t, d, s, n); \
    }                                                                                \
    static int fcollect_##N(shmem_team_t t, void *d, const void *s, size_t n, int g) { \
        return g ? shmem_fcollect(t, (T *)d, (const T *)s, n)                        \
                 : shmem_##N##_fcollect(t, d, s, n);                                 \
    }                                                                                \
    static int alltoall_##N(shmem_team_t t, void *d, const void *s, size_t n, int g) { \
        return g ? shmem_alltoall(t, (T *)d, (const T *)s, n)                        \
                 : shmem_##N##_alltoall(t, d, s, n);                                 \
    }                                                                                \
    static int alltoalls_##N(shmem_team_t t, void *d, const void *s, ptrdiff_t dst,  \
                             ptrdiff_t sst, size_t n, int g) {                       \
        return g ? shmem_alltoalls(t, (T *)d, (const T *)s, dst, sst, n)             \
                 : shmem_##N##_alltoalls(t, d, s, dst, sst, n);                      \
    }
SYMI_RMA_TYPES(DEF_MOVE)

static int bcast_mem(shmem_team_t t, void *d, const void *s, size_t n, int root, int g) {
    (void)g;
    return shmem_broadcastmem(t, d, s, n, root);
}
static int collect_mem(shmem_team_t t, void *d, const void *s, size_t n, int g) {
    (void)g;
    return shmem_collectmem(t, d, s, n);
}
static int fcollect_mem(shmem_team_t t, void *d, const void *s, size_t n, int g) {
    (void)g;
    return shmem_fcollectmem(t, d, s, n);
}
static int alltoall_mem(shmem_team_t t, void *d, const void *s, size_t n, int g) {
    (void)g;
    return shmem_alltoallmem(t, d, s, n);
}
static int alltoalls_mem(shmem_team_t t, void *d, const void *s, ptrdiff_t dst, ptrdiff_t sst,
                         size_t n, int g) {
    (void)g;
    return shmem_alltoallsmem(t, d, s, dst, sst, n);
}

#define MOVE_ENTRY(T, N) {#N, sizeof(T), bcast_##N, collect_##N, fcollect_##N, alltoall_##N, alltoalls_##N},
static const move_t moves[] = {
    SYMI_RMA_TYPES(MOVE_ENTRY)
    {"mem", 1, bcast_mem, collect_mem, fcollect_mem, alltoall_mem, alltoalls_mem},
};

/* ---- reductions: a table entry per (type, op) ---- */

#define DEF_RED(T, N, OP)                                                            \
    static int red_##N##_##OP(shmem_team_t t, void *d, const void *s, size_t n, int g) { \
        return g ? shmem_##OP##_reduce(t, (T *)d, (const T *)s, n)                   \
                 : shmem_##N##_##OP##_reduce(t, d, s, n);                            \
    }
#define DEF_RED_BIT(T, N) DEF_RED(T, N, and) DEF_RED(T, N, or) DEF_RED(T, N, xor)
#define DEF_RED_MINMAX(T, N) DEF_RED(T, N, max) DEF_RED(T, N, min)
#define DEF_RED_ARITH(T, N) DEF_RED(T, N, sum) DEF_RED(T, N, prod)
SYMI_REDUCE_BIT_TYPES(DEF_RED_BIT)
SYMI_REDUCE_MINMAX_TYPES(DEF_RED_MINMAX)
SYMI_REDUCE_ARITH_TYPES(DEF_RED_ARITH)

#define RED_ENTRY(T, N, OP) {#N, sizeof(T), KIND(T), SIGNED(T), O_##OP, red_##N##_##OP, NULL},
#define RED_BIT(T, N) RED_ENTRY(T, N, and) RED_ENTRY(T, N, or) RED_ENTRY(T, N, xor)
#define RED_MINMAX(T, N) RED_ENTRY(T, N, max) RED_ENTRY(T, N, min)
#define RED_ARITH(T, N) RED_ENTRY(T, N, sum) RED_ENTRY(T, N, prod)
static const red_t reds[] = {
    SYMI_REDUCE_BIT_TYPES(RED_BIT) SYMI_REDUCE_MINMAX_TYPES(RED_MINMAX)
    SYMI_REDUCE_ARITH_TYPES(RED_ARITH)
};

/* ---- helpers ---- */

static void poison(void *p, size_t n) { memset(p, POISON, n); }

static void expect_poison(const void *p, size_t from, size_t to, const char *what) {
    const unsigned char *b = p;
    for (size_t i = from; i < to; i++)
        CHECK(b[i] == POISON, "%s: byte %zu was written (0x%02x), outside the result", what, i,
              b[i]);
}

/* Member m's input bytes for (purpose, case): what it filled its source with. */
static void member_bytes(const team_model_t *tm, int m, uint64_t seed, int purpose, int ncase,
                         void *out, size_t n) {
    api_fill(out, n, seed, tm->pes[m], purpose, ncase);
}

/* A value every member agrees on, for (purpose, case, k). */
static uint64_t shared_draw(uint64_t seed, int purpose, int ncase, int k) {
    test_rng_t r = api_rng(seed, -1 - k, purpose, ncase);
    return test_next(&r);
}

/* ---- data movement ---- */

static int ncase; /* advances identically on every PE */

static void test_moves(const team_model_t *tm, uint64_t seed) {
    int n = tm->size, me = tm->me;
    char what[160];
    unsigned char *ref = malloc(BUF);
    CHECK(ref != NULL, "out of memory");
    for (size_t k = 0; k < API_LEN(moves); k++) {
        const move_t *mv = &moves[k];
        size_t es = mv->es;
        int g = (int)(k + (size_t)tm->size) % 2; /* typed or generic, alternating */

        /* broadcast from every root */
        for (int root = 0; root < n; root++) {
            int c = ++ncase;
            size_t ne = shared_draw(seed, P_BCAST, c, 0) % 40;
            api_fill(sbuf, ne * es, seed, shmem_my_pe(), P_BCAST, c);
            poison(dbuf, (ne + 4) * es);
            snprintf(what, sizeof what, "%s %s_broadcast(%s, root %d, %zu elements)",
                     g ? "generic" : "typed", mv->name, tm->name, root, ne);
            CHECK(mv->bcast(tm->t, dbuf, sbuf, ne, root, g) == 0, "%s returned non-zero", what);
            member_bytes(tm, root, seed, P_BCAST, c, ref, ne * es);
            CHECK(memcmp(dbuf, ref, ne * es) == 0, "%s: the result differs from root's data",
                  what);
            expect_poison(dbuf, ne * es, (ne + 4) * es, what);
            shmem_team_sync(tm->t); /* dest may be reused */
        }

        /* collect: member m contributes its own count */
        {
            int c = ++ncase;
            size_t cnt[MAXP], total = 0;
            for (int m = 0; m < n; m++) {
                cnt[m] = shared_draw(seed, P_COLLECT, c, tm->pes[m]) % 10;
                total += cnt[m];
            }
            api_fill(sbuf, cnt[me] * es, seed, shmem_my_pe(), P_COLLECT, c);
            poison(dbuf, (total + 4) * es);
            snprintf(what, sizeof what, "%s %s_collect(%s, %zu elements in all)",
                     g ? "generic" : "typed", mv->name, tm->name, total);
            CHECK(mv->collect(tm->t, dbuf, sbuf, cnt[me], g) == 0, "%s returned non-zero", what);
            size_t off = 0;
            for (int m = 0; m < n; m++) {
                member_bytes(tm, m, seed, P_COLLECT, c, ref, cnt[m] * es);
                CHECK(memcmp(dbuf + off, ref, cnt[m] * es) == 0,
                      "%s: member %d's %zu elements at element %zu differ", what, m, cnt[m],
                      off / es);
                off += cnt[m] * es;
            }
            expect_poison(dbuf, total * es, (total + 4) * es, what);
            shmem_team_sync(tm->t);
        }

        /* fcollect */
        {
            int c = ++ncase;
            size_t ne = shared_draw(seed, P_FCOLLECT, c, 0) % 12;
            api_fill(sbuf, ne * es, seed, shmem_my_pe(), P_FCOLLECT, c);
            poison(dbuf, ((size_t)n * ne + 4) * es);
            snprintf(what, sizeof what, "%s %s_fcollect(%s, %zu elements each)",
                     g ? "generic" : "typed", mv->name, tm->name, ne);
            CHECK(mv->fcollect(tm->t, dbuf, sbuf, ne, g) == 0, "%s returned non-zero", what);
            for (int m = 0; m < n; m++) {
                member_bytes(tm, m, seed, P_FCOLLECT, c, ref, ne * es);
                CHECK(memcmp(dbuf + (size_t)m * ne * es, ref, ne * es) == 0,
                      "%s: member %d's block differs", what, m);
            }
            expect_poison(dbuf, (size_t)n * ne * es, ((size_t)n * ne + 4) * es, what);
            shmem_team_sync(tm->t);
        }

        /* alltoall: block j of my source goes to member j, block i of my dest
         * comes from member i */
        {
            int c = ++ncase;
            size_t ne = shared_draw(seed, P_A2A, c, 0) % 10;
            size_t blk = ne * es;
            api_fill(sbuf, (size_t)n * blk, seed, shmem_my_pe(), P_A2A, c);
            poison(dbuf, (size_t)n * blk + 4 * es);
            snprintf(what, sizeof what, "%s %s_alltoall(%s, %zu elements per member)",
                     g ? "generic" : "typed", mv->name, tm->name, ne);
            CHECK(mv->alltoall(tm->t, dbuf, sbuf, ne, g) == 0, "%s returned non-zero", what);
            for (int m = 0; m < n; m++) {
                member_bytes(tm, m, seed, P_A2A, c, ref, (size_t)n * blk);
                CHECK(memcmp(dbuf + (size_t)m * blk, ref + (size_t)me * blk, blk) == 0,
                      "%s: the block from member %d differs", what, m);
            }
            expect_poison(dbuf, (size_t)n * blk, (size_t)n * blk + 4 * es, what);
            shmem_team_sync(tm->t);
        }

        /* alltoalls: element e for member j is source[sst * (j * ne + e)]; it
         * lands at dest[dst * (i * ne + e)] on member j, for source member i */
        {
            int c = ++ncase;
            size_t ne = shared_draw(seed, P_A2AS, c, 0) % 6;
            ptrdiff_t dst = 1 + (ptrdiff_t)(shared_draw(seed, P_A2AS, c, 1) % 3);
            ptrdiff_t sst = 1 + (ptrdiff_t)(shared_draw(seed, P_A2AS, c, 2) % 3);
            size_t span_s = ((size_t)n * ne * (size_t)sst + 1) * es;
            size_t span_d = ((size_t)n * ne * (size_t)dst + 1) * es;
            CHECK(span_s <= BUF && span_d <= BUF, "alltoalls case too big");
            api_fill(sbuf, span_s, seed, shmem_my_pe(), P_A2AS, c);
            poison(dbuf, span_d);
            snprintf(what, sizeof what, "%s %s_alltoalls(%s, dst %td, sst %td, %zu elements)",
                     g ? "generic" : "typed", mv->name, tm->name, dst, sst, ne);
            CHECK(mv->alltoalls(tm->t, dbuf, sbuf, dst, sst, ne, g) == 0,
                  "%s returned non-zero", what);
            unsigned char *want = malloc(span_d);
            CHECK(want != NULL, "out of memory");
            poison(want, span_d);
            for (int m = 0; m < n; m++) {
                member_bytes(tm, m, seed, P_A2AS, c, ref, span_s);
                for (size_t e = 0; e < ne; e++)
                    memcpy(want + (size_t)dst * ((size_t)m * ne + e) * es,
                           ref + (size_t)sst * ((size_t)me * ne + e) * es, es);
            }
            for (size_t i = 0; i < span_d; i++)
                CHECK(((unsigned char *)dbuf)[i] == want[i],
                      "%s: byte %zu (element %zu) is 0x%02x, want 0x%02x%s", what, i, i / es,
                      ((unsigned char *)dbuf)[i], want[i],
                      want[i] == POISON ? " (a gap the strides skip)" : "");
            free(want);
            shmem_team_sync(tm->t);
        }
    }
    free(ref);
}

/* ---- reductions ---- */

static void test_reductions(const team_model_t *tm, uint64_t seed, int variant) {
    int n = tm->size;
    char what[200], why[200];
    wide_t terms[MAXP];
    for (size_t k = 0; k < API_LEN(reds); k++) {
        const red_t *c = &reds[k];
        for (int place = 0; place < 2; place++) {
            int nc = ++ncase;
            int in_place = place, g = (place + variant + (int)k) % 2;
            size_t nr = shared_draw(seed, P_RED, nc, 0) % 24;
            if (k % 5 == 0) nr += 300; /* some longer than a block of the engine */
            size_t es = c->es;
            for (size_t i = 0; i < nr; i++)
                red_gen(c, seed, P_RED, shmem_my_pe(), nc, i, sbuf + i * es);
            char *dst = in_place ? sbuf : dbuf;
            if (!in_place) poison(dbuf, (nr + 4) * es);
            snprintf(what, sizeof what, "%s shmem_%s_%s_reduce(%s, %zu elements, %s)",
                     g ? "generic" : "typed", c->name, op_names[c->op], tm->name, nr,
                     in_place ? "in place" : "out of place");
            CHECK(c->team_call(tm->t, dst, sbuf, nr, g) == 0, "%s returned non-zero", what);
            char tmp[32];
            for (size_t i = 0; i < nr; i++) {
                for (int m = 0; m < n; m++) {
                    red_gen(c, seed, P_RED, tm->pes[m], nc, i, tmp);
                    terms[m] = load(c, tmp);
                }
                CHECK(reduced_ok(c, dst + i * es, terms, n, why, sizeof why), "%s: element %zu: %s",
                      what, i, why);
            }
            if (!in_place) expect_poison(dbuf, nr * es, (nr + 4) * es, what);
            shmem_team_sync(tm->t); /* source and dest may be reused */
        }
    }
}

/* ---- large cases, through more than the team's staging memory ---- */

static void test_large(const team_model_t *tm, uint64_t seed) {
    int n = tm->size, me = tm->me;
    size_t big = (size_t)5 << 20; /* 5 MiB: more than a team slot holds */
    size_t per = (size_t)3 << 19; /* 1.5 MiB per member for the gathers */
    char *s = shmem_malloc(big), *d = shmem_malloc(per * (size_t)n + ((size_t)12 << 20));
    char *ref = malloc(big);
    CHECK(s && d && ref, "out of memory for the large cases");
    char what[128];

    int c = ++ncase;
    int root = (int)(shared_draw(seed, P_BIG, c, 0) % (uint64_t)n);
    api_fill(s, big, seed, shmem_my_pe(), P_BIG, c);
    CHECK_EQ_INT(shmem_broadcastmem(tm->t, d, s, big, root), 0);
    api_fill(ref, big, seed, tm->pes[root], P_BIG, c);
    snprintf(what, sizeof what, "broadcastmem of %zu bytes on %s, root %d", big, tm->name, root);
    for (size_t i = 0; i < big; i++)
        CHECK(d[i] == ref[i], "%s: byte %zu differs", what, i);
    shmem_team_sync(tm->t);

    c = ++ncase;
    api_fill(s, per, seed, shmem_my_pe(), P_BIG, c);
    CHECK_EQ_INT(shmem_fcollectmem(tm->t, d, s, per), 0);
    for (int m = 0; m < n; m++) {
        api_fill(ref, per, seed, tm->pes[m], P_BIG, c);
        CHECK(memcmp(d + (size_t)m * per, ref, per) == 0,
              "fcollectmem of %zu bytes each on %s: member %d's block differs", per, tm->name, m);
    }
    shmem_team_sync(tm->t);

    c = ++ncase; /* collect: member m gives per - 1000 * m bytes */
    size_t off = 0;
    api_fill(s, per - 1000 * (size_t)me, seed, shmem_my_pe(), P_BIG, c);
    CHECK_EQ_INT(shmem_collectmem(tm->t, d, s, per - 1000 * (size_t)me), 0);
    for (int m = 0; m < n; m++) {
        size_t len = per - 1000 * (size_t)m;
        api_fill(ref, len, seed, tm->pes[m], P_BIG, c);
        CHECK(memcmp(d + off, ref, len) == 0, "collectmem on %s: member %d's %zu bytes differ",
              tm->name, m, len);
        off += len;
    }
    shmem_team_sync(tm->t);

    c = ++ncase; /* alltoall: 1 MiB blocks */
    size_t blk = ((size_t)1 << 20) / (size_t)n;
    api_fill(s, blk * (size_t)n, seed, shmem_my_pe(), P_BIG, c);
    CHECK_EQ_INT(shmem_alltoallmem(tm->t, d, s, blk), 0);
    for (int m = 0; m < n; m++) {
        api_fill(ref, blk * (size_t)n, seed, tm->pes[m], P_BIG, c);
        CHECK(memcmp(d + (size_t)m * blk, ref + (size_t)me * blk, blk) == 0,
              "alltoallmem of %zu-byte blocks on %s: block from member %d differs", blk,
              tm->name, m);
    }
    shmem_team_sync(tm->t);

    /* sums of 600k doubles and longs: exact (small integers) */
    c = ++ncase;
    size_t cnt = 600000;
    double *dd = (double *)s;
    int64_t *ll = (int64_t *)d;
    for (size_t i = 0; i < cnt; i++) dd[i] = (double)((i * 7 + (size_t)tm->pes[me]) % 1000);
    CHECK_EQ_INT(shmem_double_sum_reduce(tm->t, dd, dd, cnt), 0);
    for (size_t i = 0; i < cnt; i++) {
        double want = 0;
        for (int m = 0; m < n; m++) want += (double)((i * 7 + (size_t)tm->pes[m]) % 1000);
        CHECK(dd[i] == want, "double_sum_reduce of %zu in place on %s: element %zu = %g, want %g",
              cnt, tm->name, i, dd[i], want);
    }
    shmem_team_sync(tm->t);
    for (size_t i = 0; i < cnt; i++) ll[i] = (int64_t)(i ^ ((size_t)tm->pes[me] << 20));
    CHECK_EQ_INT(shmem_int64_xor_reduce(tm->t, ll + cnt, ll, cnt), 0);
    for (size_t i = 0; i < cnt; i++) {
        int64_t want = 0;
        for (int m = 0; m < n; m++) want ^= (int64_t)(i ^ ((size_t)tm->pes[m] << 20));
        CHECK(ll[cnt + i] == want, "int64_xor_reduce of %zu on %s: element %zu", cnt, tm->name, i);
    }
    shmem_team_sync(tm->t);
    free(ref);
    shmem_free(d);
    shmem_free(s);
}

/* ---- failure returns ---- */

static void test_failures(void) {
    CHECK(shmem_int_broadcast(SHMEM_TEAM_INVALID, (int *)dbuf, (int *)sbuf, 1, 0) != 0,
          "broadcast on SHMEM_TEAM_INVALID returned 0");
    CHECK(shmem_int_sum_reduce(SHMEM_TEAM_INVALID, (int *)dbuf, (int *)sbuf, 1) != 0,
          "sum_reduce on SHMEM_TEAM_INVALID returned 0");
    CHECK(shmem_fcollectmem(SHMEM_TEAM_INVALID, dbuf, sbuf, 1) != 0,
          "fcollectmem on SHMEM_TEAM_INVALID returned 0");
    CHECK(shmem_team_sync(SHMEM_TEAM_INVALID) != 0, "team_sync on SHMEM_TEAM_INVALID returned 0");
    CHECK(shmem_sync(SHMEM_TEAM_INVALID) != 0, "shmem_sync(SHMEM_TEAM_INVALID) returned 0");
    /* zero elements: a valid, empty collective */
    poison(dbuf, 16);
    CHECK_EQ_INT(shmem_long_sum_reduce(SHMEM_TEAM_WORLD, (long *)dbuf, (long *)sbuf, 0), 0);
    CHECK_EQ_INT(shmem_long_broadcast(SHMEM_TEAM_WORLD, (long *)dbuf, (long *)sbuf, 0, 0), 0);
    expect_poison(dbuf, 0, 16, "empty collectives");
}

int main(void) {
    uint64_t seed = api_start("api_teamcoll", SHMEM_THREAD_SINGLE);
    int n = shmem_n_pes(), me = shmem_my_pe();
    CHECK(n < MAXP, "at most %d PEs", MAXP - 1);
    sbuf = shmem_malloc(BUF);
    dbuf = shmem_malloc(BUF);
    CHECK(sbuf && dbuf, "shmem_malloc failed");

    /* world, reversed world, and the PEs 2k+1 from the top (or PE 0 alone) */
    team_model_t tm[3];
    tm[0] = (team_model_t){.name = "world", .t = SHMEM_TEAM_WORLD, .size = n, .me = me};
    for (int i = 0; i < n; i++) tm[0].pes[i] = i;
    tm[1] = (team_model_t){.name = "reversed world", .size = n, .me = n - 1 - me};
    for (int i = 0; i < n; i++) tm[1].pes[i] = n - 1 - i;
    CHECK_EQ_INT(shmem_team_split_strided(SHMEM_TEAM_WORLD, n - 1, -1, n, NULL, 0, &tm[1].t), 0);
    int sz = n > 2 ? (n + 1) / 2 : 1;
    tm[2] = (team_model_t){.name = "strided subset", .size = sz, .me = -1};
    for (int i = 0; i < sz; i++) {
        tm[2].pes[i] = n - 1 - 2 * i;
        if (tm[2].pes[i] == me) tm[2].me = i;
    }
    CHECK_EQ_INT(shmem_team_split_strided(SHMEM_TEAM_WORLD, n - 1, -2, sz, NULL, 0, &tm[2].t), 0);
    CHECK((tm[2].t != SHMEM_TEAM_INVALID) == (tm[2].me >= 0), "subset membership");

    for (int t = 0; t < 3; t++) {
        int before = ncase;
        if (tm[t].t != SHMEM_TEAM_INVALID) { /* members only */
            test_moves(&tm[t], seed);
            test_reductions(&tm[t], seed, t);
        }
        shmem_barrier_all();
        ncase = before + 100000; /* the same case numbers on every PE for the next team */
    }
    test_large(&tm[0], seed);
    test_large(&tm[1], seed);
    test_failures();
    if (tm[1].t != SHMEM_TEAM_INVALID) shmem_team_destroy(tm[1].t);
    if (tm[2].t != SHMEM_TEAM_INVALID) shmem_team_destroy(tm[2].t);
    shmem_free(dbuf);
    shmem_free(sbuf);
    char what[200];
    snprintf(what, sizeof what, "%zu types x broadcast/collect/fcollect/alltoall(s), %zu "
             "(type, op) reductions, typed and generic, on 3 teams; large cases",
             API_LEN(moves), API_LEN(reds));
    api_pass(what);
    shmem_finalize();
    return 0;
}
