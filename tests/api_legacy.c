/*
 * api_legacy — the calls deprecated by OpenSHMEM 1.5 but still defined, used
 * the way older programs use them:
 *
 *   - start_pes, _my_pe, _num_pes; shmalloc, shfree, shrealloc, shmemalign;
 *   - the _SHMEM_* constant spellings (checked at compile time) and pSync
 *     arrays filled with SHMEM_SYNC_VALUE;
 *   - on every active set (PE_start, logPE_stride, PE_size) that fits: barrier,
 *     broadcast32/64 from every root, collect32/64 with a different count on
 *     every PE, fcollect32/64, alltoall32/64, alltoalls32/64 with strides; the
 *     same pSync reused across consecutive calls with a barrier between, and
 *     two pSync arrays alternating with none; pSync back at SHMEM_SYNC_VALUE;
 *   - every shmem_TYPE_OP_to_all, in place and not, on a few active sets;
 *   - shmem_sync(PE_start, logPE_stride, PE_size, pSync) and shmem_sync(team);
 *   - the 1.3 atomic names, shmem_wait / shmem_TYPE_wait on volatile flags,
 *     the cache calls (no-ops), pe/addr_accessible, info, pcontrol.
 * Random data from the shared seed; every element is checked.
 */
#include "api_reduce.h"

#define MAXP 64

_Static_assert(_SHMEM_SYNC_VALUE == SHMEM_SYNC_VALUE, "_SHMEM_SYNC_VALUE");
_Static_assert(_SHMEM_BARRIER_SYNC_SIZE == SHMEM_BARRIER_SYNC_SIZE, "_SHMEM_BARRIER_SYNC_SIZE");
_Static_assert(_SHMEM_BCAST_SYNC_SIZE == SHMEM_BCAST_SYNC_SIZE, "_SHMEM_BCAST_SYNC_SIZE");
_Static_assert(_SHMEM_COLLECT_SYNC_SIZE == SHMEM_COLLECT_SYNC_SIZE, "_SHMEM_COLLECT_SYNC_SIZE");
_Static_assert(_SHMEM_REDUCE_SYNC_SIZE == SHMEM_REDUCE_SYNC_SIZE, "_SHMEM_REDUCE_SYNC_SIZE");
_Static_assert(_SHMEM_ALLTOALL_SYNC_SIZE == SHMEM_ALLTOALL_SYNC_SIZE, "_SHMEM_ALLTOALL_SYNC_SIZE");
_Static_assert(_SHMEM_ALLTOALLS_SYNC_SIZE == SHMEM_ALLTOALLS_SYNC_SIZE,
               "_SHMEM_ALLTOALLS_SYNC_SIZE");
_Static_assert(_SHMEM_SYNC_SIZE == SHMEM_SYNC_SIZE, "_SHMEM_SYNC_SIZE");
_Static_assert(_SHMEM_REDUCE_MIN_WRKDATA_SIZE == SHMEM_REDUCE_MIN_WRKDATA_SIZE,
               "_SHMEM_REDUCE_MIN_WRKDATA_SIZE");
_Static_assert(_SHMEM_MAJOR_VERSION == 1 && _SHMEM_MINOR_VERSION == 5, "version");
_Static_assert(_SHMEM_CMP_EQ == SHMEM_CMP_EQ && _SHMEM_CMP_NE == SHMEM_CMP_NE &&
               _SHMEM_CMP_GT == SHMEM_CMP_GT && _SHMEM_CMP_GE == SHMEM_CMP_GE &&
               _SHMEM_CMP_LT == SHMEM_CMP_LT && _SHMEM_CMP_LE == SHMEM_CMP_LE, "_SHMEM_CMP_*");
_Static_assert(SHMEM_SYNC_SIZE >= SHMEM_BARRIER_SYNC_SIZE && SHMEM_SYNC_SIZE >= SHMEM_BCAST_SYNC_SIZE &&
               SHMEM_SYNC_SIZE >= SHMEM_COLLECT_SYNC_SIZE && SHMEM_SYNC_SIZE >= SHMEM_REDUCE_SYNC_SIZE &&
               SHMEM_SYNC_SIZE >= SHMEM_ALLTOALL_SYNC_SIZE &&
               SHMEM_SYNC_SIZE >= SHMEM_ALLTOALLS_SYNC_SIZE, "SHMEM_SYNC_SIZE is the largest");

/* pSync arrays as old programs declare them: globals, one per kind */
static long psync_bar[_SHMEM_BARRIER_SYNC_SIZE];
static long psync_bcast[2][_SHMEM_BCAST_SYNC_SIZE];
static long psync_collect[_SHMEM_COLLECT_SYNC_SIZE];
static long psync_a2a[_SHMEM_ALLTOALL_SYNC_SIZE];
static long psync_a2as[_SHMEM_ALLTOALLS_SYNC_SIZE];
static long psync_red[2][_SHMEM_REDUCE_SYNC_SIZE];
static long psync_sync[_SHMEM_SYNC_SIZE];

#define BUF (1 << 20)
#define REGION 4096 /* one case's part of src / dst, so calls can go back to back */
static char *src, *dst, *wrk; /* symmetric */
static int me, npes;
static uint64_t seed;
static int ncase;

enum { P_BCAST = 1, P_COLLECT, P_FCOLLECT, P_A2A, P_A2AS, P_TOALL, P_HEAP };

typedef struct {
    int start, logstride, size, stride;
    int me; /* my index, -1 if not a member */
} aset_t;

static int aset_pe(const aset_t *a, int i) { return a->start + i * a->stride; }

static uint64_t shared_draw(int purpose, int c, int k) {
    test_rng_t r = api_rng(seed, -1 - k, purpose, c);
    return test_next(&r);
}

static void poison(void *p, size_t n) { memset(p, 0xA5, n); }

static void expect_poison(const void *p, size_t from, size_t to, const char *what) {
    const unsigned char *b = p;
    for (size_t i = from; i < to; i++)
        CHECK(b[i] == 0xA5, "%s: byte %zu written outside the result", what, i);
}

static const char *after = "start"; /* what ran last, for messages */

static void check_psync(const long *p, size_t n, const char *name) {
    for (size_t i = 0; i < n; i++)
        CHECK(p[i] == SHMEM_SYNC_VALUE, "%s[%zu] = %ld after %s completed, want "
              "SHMEM_SYNC_VALUE (%ld)", name, i, p[i], after, (long)SHMEM_SYNC_VALUE);
}

static void check_all_psync(void) {
    check_psync(psync_bar, API_LEN(psync_bar), "pSync (barrier)");
    check_psync(psync_bcast[0], API_LEN(psync_bcast[0]), "pSync (broadcast A)");
    check_psync(psync_bcast[1], API_LEN(psync_bcast[1]), "pSync (broadcast B)");
    check_psync(psync_collect, API_LEN(psync_collect), "pSync (collect)");
    check_psync(psync_a2a, API_LEN(psync_a2a), "pSync (alltoall)");
    check_psync(psync_a2as, API_LEN(psync_a2as), "pSync (alltoalls)");
    check_psync(psync_red[0], API_LEN(psync_red[0]), "pSync (reduce A)");
    check_psync(psync_red[1], API_LEN(psync_red[1]), "pSync (reduce B)");
    check_psync(psync_sync, API_LEN(psync_sync), "pSync (sync)");
}

/* ---- data movement on one active set ---- */

static void aset_moves(const aset_t *a) {
    int n = a->size, ls = a->logstride, st = a->start;
    char what[160];
    unsigned char *ref = malloc(BUF);
    CHECK(ref != NULL, "out of memory");
    for (int bits = 32; bits <= 64; bits += 32) {
        size_t es = (size_t)bits / 8;

        shmem_barrier(st, ls, n, psync_bar);
        /* broadcast from every root back to back, alternating two pSync arrays
         * with no barrier between (the standard's way to go back to back);
         * each broadcast has its own part of src and dst */
        int c0 = ncase + 1;
        ncase += n;
        for (int root = 0; root < n; root++) {
            size_t ne = shared_draw(P_BCAST, c0 + root, 0) % 30;
            api_fill(src + root * REGION, ne * es, seed, me, P_BCAST, c0 + root);
            poison(dst + root * REGION, (ne + 2) * es);
        }
        for (int root = 0; root < n; root++) {
            size_t ne = shared_draw(P_BCAST, c0 + root, 0) % 30;
            char *d = dst + root * REGION, *s = src + root * REGION;
            if (bits == 32)
                shmem_broadcast32(d, s, ne, root, st, ls, n, psync_bcast[root % 2]);
            else
                shmem_broadcast64(d, s, ne, root, st, ls, n, psync_bcast[root % 2]);
        }
        for (int root = 0; root < n; root++) {
            size_t ne = shared_draw(P_BCAST, c0 + root, 0) % 30;
            char *d = dst + root * REGION;
            snprintf(what, sizeof what, "shmem_broadcast%d(%zu, root %d, set %d/%d/%d)", bits, ne,
                     root, st, ls, n);
            if (a->me == root) { /* the root's dest is not written */
                expect_poison(d, 0, (ne + 2) * es, what);
            } else {
                api_fill(ref, ne * es, seed, aset_pe(a, root), P_BCAST, c0 + root);
                CHECK(memcmp(d, ref, ne * es) == 0, "%s: data differs from the root's", what);
                expect_poison(d, ne * es, (ne + 2) * es, what);
            }
        }
        /* the others read src until they are done: a barrier before reuse */
        shmem_barrier(st, ls, n, psync_bar);

        /* collect: member i gives its own count */
        {
            int c = ++ncase;
            size_t cnt[MAXP], total = 0;
            for (int i = 0; i < n; i++) total += cnt[i] = shared_draw(P_COLLECT, c, i) % 9;
            api_fill(src, cnt[a->me] * es, seed, me, P_COLLECT, c);
            poison(dst, (total + 2) * es);
            snprintf(what, sizeof what, "shmem_collect%d(set %d/%d/%d, %zu in all)", bits, st, ls,
                     n, total);
            if (bits == 32) shmem_collect32(dst, src, cnt[a->me], st, ls, n, psync_collect);
            else shmem_collect64(dst, src, cnt[a->me], st, ls, n, psync_collect);
            size_t off = 0;
            for (int i = 0; i < n; i++) {
                api_fill(ref, cnt[i] * es, seed, aset_pe(a, i), P_COLLECT, c);
                CHECK(memcmp(dst + off, ref, cnt[i] * es) == 0, "%s: member %d's part differs",
                      what, i);
                off += cnt[i] * es;
            }
            expect_poison(dst, total * es, (total + 2) * es, what);
        }
        shmem_barrier(st, ls, n, psync_bar); /* pSync reuse after a barrier */
        {
            int c = ++ncase;
            size_t cnt = shared_draw(P_COLLECT, c, 0) % 5;
            api_fill(src, cnt * es, seed, me, P_COLLECT, c);
            if (bits == 32) shmem_collect32(dst, src, cnt, st, ls, n, psync_collect);
            else shmem_collect64(dst, src, cnt, st, ls, n, psync_collect);
            for (int i = 0; i < n; i++) {
                api_fill(ref, cnt * es, seed, aset_pe(a, i), P_COLLECT, c);
                CHECK(memcmp(dst + (size_t)i * cnt * es, ref, cnt * es) == 0,
                      "second shmem_collect%d on the same pSync: member %d differs", bits, i);
            }
        }
        shmem_barrier(st, ls, n, psync_bar);

        /* fcollect */
        {
            int c = ++ncase;
            size_t ne = shared_draw(P_FCOLLECT, c, 0) % 11;
            api_fill(src, ne * es, seed, me, P_FCOLLECT, c);
            poison(dst, ((size_t)n * ne + 2) * es);
            snprintf(what, sizeof what, "shmem_fcollect%d(set %d/%d/%d, %zu each)", bits, st, ls,
                     n, ne);
            if (bits == 32) shmem_fcollect32(dst, src, ne, st, ls, n, psync_collect);
            else shmem_fcollect64(dst, src, ne, st, ls, n, psync_collect);
            for (int i = 0; i < n; i++) {
                api_fill(ref, ne * es, seed, aset_pe(a, i), P_FCOLLECT, c);
                CHECK(memcmp(dst + (size_t)i * ne * es, ref, ne * es) == 0,
                      "%s: member %d's block differs", what, i);
            }
            expect_poison(dst, (size_t)n * ne * es, ((size_t)n * ne + 2) * es, what);
        }
        shmem_barrier(st, ls, n, psync_bar);

        /* alltoall */
        {
            int c = ++ncase;
            size_t ne = shared_draw(P_A2A, c, 0) % 7, blk = ne * es;
            api_fill(src, (size_t)n * blk, seed, me, P_A2A, c);
            poison(dst, (size_t)n * blk + 2 * es);
            snprintf(what, sizeof what, "shmem_alltoall%d(set %d/%d/%d, %zu per member)", bits, st,
                     ls, n, ne);
            if (bits == 32) shmem_alltoall32(dst, src, ne, st, ls, n, psync_a2a);
            else shmem_alltoall64(dst, src, ne, st, ls, n, psync_a2a);
            for (int i = 0; i < n; i++) {
                api_fill(ref, (size_t)n * blk, seed, aset_pe(a, i), P_A2A, c);
                CHECK(memcmp(dst + (size_t)i * blk, ref + (size_t)a->me * blk, blk) == 0,
                      "%s: the block from member %d differs", what, i);
            }
            expect_poison(dst, (size_t)n * blk, (size_t)n * blk + 2 * es, what);
        }
        shmem_barrier(st, ls, n, psync_bar);

        /* alltoalls with strides */
        {
            int c = ++ncase;
            size_t ne = shared_draw(P_A2AS, c, 0) % 5;
            ptrdiff_t ds = 1 + (ptrdiff_t)(shared_draw(P_A2AS, c, 1) % 3);
            ptrdiff_t ss = 1 + (ptrdiff_t)(shared_draw(P_A2AS, c, 2) % 3);
            size_t span_s = ((size_t)n * ne * (size_t)ss + 1) * es;
            size_t span_d = ((size_t)n * ne * (size_t)ds + 1) * es;
            api_fill(src, span_s, seed, me, P_A2AS, c);
            poison(dst, span_d);
            snprintf(what, sizeof what, "shmem_alltoalls%d(set %d/%d/%d, dst %td, sst %td, %zu)",
                     bits, st, ls, n, ds, ss, ne);
            if (bits == 32) shmem_alltoalls32(dst, src, ds, ss, ne, st, ls, n, psync_a2as);
            else shmem_alltoalls64(dst, src, ds, ss, ne, st, ls, n, psync_a2as);
            unsigned char *want = malloc(span_d);
            CHECK(want != NULL, "out of memory");
            poison(want, span_d);
            for (int i = 0; i < n; i++) {
                api_fill(ref, span_s, seed, aset_pe(a, i), P_A2AS, c);
                for (size_t e = 0; e < ne; e++)
                    memcpy(want + (size_t)ds * ((size_t)i * ne + e) * es,
                           ref + (size_t)ss * ((size_t)a->me * ne + e) * es, es);
            }
            CHECK(memcmp(dst, want, span_d) == 0, "%s: the result differs", what);
            free(want);
        }
        shmem_barrier(st, ls, n, psync_bar);
    }
    free(ref);
}

/* ---- every shmem_TYPE_OP_to_all ---- */

#define DEF_TOALL(T, N, OP)                                                          \
    static void toall_##N##_##OP(void *d, const void *s, int nr, int st, int ls, int sz, \
                                 void *w, long *ps) {                                \
        shmem_##N##_##OP##_to_all(d, s, nr, st, ls, sz, w, ps);                       \
    }
#define DEF_TOALL_BIT(T, N) DEF_TOALL(T, N, and) DEF_TOALL(T, N, or) DEF_TOALL(T, N, xor)
#define DEF_TOALL_MINMAX(T, N) DEF_TOALL(T, N, max) DEF_TOALL(T, N, min)
#define DEF_TOALL_ARITH(T, N) DEF_TOALL(T, N, sum) DEF_TOALL(T, N, prod)
SYMI_TOALL_BIT_TYPES(DEF_TOALL_BIT)
SYMI_TOALL_MINMAX_TYPES(DEF_TOALL_MINMAX)
SYMI_TOALL_ARITH_TYPES(DEF_TOALL_ARITH)

#define TOALL_ENTRY(T, N, OP) {#N, sizeof(T), KIND(T), SIGNED(T), O_##OP, NULL, toall_##N##_##OP},
#define TOALL_BIT(T, N) TOALL_ENTRY(T, N, and) TOALL_ENTRY(T, N, or) TOALL_ENTRY(T, N, xor)
#define TOALL_MINMAX(T, N) TOALL_ENTRY(T, N, max) TOALL_ENTRY(T, N, min)
#define TOALL_ARITH(T, N) TOALL_ENTRY(T, N, sum) TOALL_ENTRY(T, N, prod)
static const red_t toalls[] = {
    SYMI_TOALL_BIT_TYPES(TOALL_BIT) SYMI_TOALL_MINMAX_TYPES(TOALL_MINMAX)
    SYMI_TOALL_ARITH_TYPES(TOALL_ARITH)
};

static void aset_toall(const aset_t *a) {
    int n = a->size;
    char what[160], why[200], tmp[32];
    wide_t terms[MAXP];
    int c0 = ncase + 1;
    ncase += (int)API_LEN(toalls);
    CHECK(API_LEN(toalls) * REGION <= BUF, "buffers too small for every _to_all");
    /* all of them back to back, each on its own part of src / dst, pSync and
     * pWrk alternating between two arrays (as the standard allows) */
    for (size_t k = 0; k < API_LEN(toalls); k++) {
        const red_t *c = &toalls[k];
        int nc = c0 + (int)k, in_place = (int)(k + (size_t)a->start) % 2;
        int nr = (int)(shared_draw(P_TOALL, nc, 0) % 20) + (k % 7 == 0 ? 200 : 0);
        size_t es = c->es;
        char *s = src + k * REGION, *d = in_place ? s : dst + k * REGION;
        for (int i = 0; i < nr; i++) red_gen(c, seed, P_TOALL, me, nc, (size_t)i, s + i * es);
        if (!in_place) poison(d, ((size_t)nr + 2) * es);
        /* pWrk: max(nreduce/2 + 1, SHMEM_REDUCE_MIN_WRKDATA_SIZE) elements */
        c->aset_call(d, s, nr, a->start, a->logstride, n, wrk + (k % 2) * (BUF / 2),
                     psync_red[k % 2]);
    }
    for (size_t k = 0; k < API_LEN(toalls); k++) {
        const red_t *c = &toalls[k];
        int nc = c0 + (int)k, in_place = (int)(k + (size_t)a->start) % 2;
        int nr = (int)(shared_draw(P_TOALL, nc, 0) % 20) + (k % 7 == 0 ? 200 : 0);
        size_t es = c->es;
        char *d = in_place ? src + k * REGION : dst + k * REGION;
        snprintf(what, sizeof what, "shmem_%s_%s_to_all(%d, set %d/%d/%d, %s)", c->name,
                 op_names[c->op], nr, a->start, a->logstride, n,
                 in_place ? "in place" : "out of place");
        for (int i = 0; i < nr; i++) {
            for (int m = 0; m < n; m++) {
                red_gen(c, seed, P_TOALL, aset_pe(a, m), nc, (size_t)i, tmp);
                terms[m] = load(c, tmp);
            }
            CHECK(reduced_ok(c, d + (size_t)i * es, terms, n, why, sizeof why),
                  "%s: element %d: %s", what, i, why);
        }
        if (!in_place) expect_poison(d, (size_t)nr * es, ((size_t)nr + 2) * es, what);
    }
    shmem_barrier(a->start, a->logstride, n, psync_bar);
}

/* ---- sync: the deprecated active-set form and the team form ---- */

static long arrivals;

static void syncs(const aset_t *a, int rounds) {
    for (int r = 1; r <= rounds; r++) {
        /* every member counts its arrival on the set's first PE, then syncs:
         * after the sync the count holds everyone's arrival of this round and
         * nobody's of the next (they come after the second sync) */
        shmem_long_atomic_inc(&arrivals, a->start);
        shmem_sync(a->start, a->logstride, a->size, psync_sync);
        long got = shmem_long_atomic_fetch(&arrivals, a->start);
        CHECK(got == (long)r * a->size, "shmem_sync(%d, %d, %d, pSync) round %d: %ld arrivals "
              "counted, want %d", a->start, a->logstride, a->size, r, got, r * a->size);
        shmem_sync(a->start, a->logstride, a->size, psync_sync);
    }
    if (me == a->start) arrivals = 0; /* every member has read it */
}

/* ---- the rest ---- */

static volatile long vflag;
static volatile int viflag;
static int gint;
static long glong;
static long long gll;
static float gflt;
static double gdbl;

static void old_names(void) {
    int right = (me + 1) % npes, left = (me + npes - 1) % npes;
    /* start_pes programs wait on volatile flags */
    vflag = 0;
    viflag = 0;
    shmem_barrier_all();
    shmem_long_p((long *)&vflag, me + 1, right); /* the right neighbour waits for it */
    shmem_int_p((int *)&viflag, me + 2, right);
    shmem_wait(&vflag, 0);
    shmem_int_wait(&viflag, 0);
    shmem_wait_until(&vflag, SHMEM_CMP_EQ, left + 1); /* generic, on a volatile flag */
    shmem_wait_until(&viflag, SHMEM_CMP_GE, left + 2);
    CHECK(vflag == left + 1 && viflag == left + 2, "shmem_wait: flags %ld %d", vflag, viflag);
    shmem_barrier_all();

    /* the 1.3 atomic names on PE 0 */
    gint = 0;
    glong = 0;
    gll = 0;
    shmem_barrier_all();
    int fi = shmem_int_finc(&gint, 0);
    long fl = shmem_long_fadd(&glong, 2, 0);
    long long fll = shmem_longlong_fadd(&gll, 3, 0);
    shmem_int_inc(&gint, 0);
    shmem_long_add(&glong, 5, 0);
    shmem_longlong_inc(&gll, 0);
    CHECK(fi >= 0 && fi < 2 * npes && fl >= 0 && fl < 7 * npes && fll >= 0 && fll < 4 * npes,
          "old fetching atomics returned %d %ld %lld", fi, fl, fll);
    shmem_barrier_all();
    CHECK_EQ_INT(shmem_int_fetch(&gint, 0), 2 * npes);
    CHECK_EQ_INT(shmem_long_fetch(&glong, 0), 7 * npes);
    CHECK_EQ_INT(shmem_longlong_fetch(&gll, 0), 4 * npes);
    shmem_barrier_all();
    if (me == 0) {
        shmem_int_set(&gint, 5, right);
        shmem_float_set(&gflt, 1.5f, right);
        shmem_double_set(&gdbl, 2.5, right);
    }
    shmem_barrier_all();
    if (me == 1 % npes) { /* PE 0's right-hand neighbour */
        CHECK(gint == 5 && gflt == 1.5f && gdbl == 2.5, "old set: %d %g %g", gint, gflt, gdbl);
        CHECK_EQ_INT(shmem_int_swap(&gint, 6, me), 5);
        CHECK(shmem_float_swap(&gflt, 3.5f, me) == 1.5f, "float_swap");
        CHECK(shmem_double_swap(&gdbl, 4.5, me) == 2.5, "double_swap");
        CHECK(shmem_float_fetch(&gflt, me) == 3.5f && shmem_double_fetch(&gdbl, me) == 4.5,
              "old float/double fetch");
        CHECK_EQ_INT(shmem_int_cswap(&gint, 6, 7, me), 6);
        CHECK_EQ_INT(shmem_int_cswap(&gint, 6, 8, me), 7); /* fails: stays 7 */
        CHECK_EQ_INT(shmem_swap(&glong, 11, me), 7 * npes * (me == 0));
        CHECK_EQ_INT(shmem_long_cswap(&glong, 11, 12, me), 11);
        CHECK_EQ_INT(shmem_longlong_swap(&gll, 1, me), me == 0 ? 4 * npes : 0);
    }
    shmem_barrier_all();

    /* cache calls are no-ops: data and behaviour unchanged */
    gint = -1;
    shmem_barrier_all();
    shmem_int_p(&gint, me, right);
    shmem_barrier_all();
    shmem_clear_cache_inv();
    shmem_set_cache_inv();
    shmem_clear_cache_line_inv(&gint);
    shmem_set_cache_line_inv(&gint);
    shmem_udcflush();
    shmem_udcflush_line(&gint);
    CHECK(gint == left, "after the cache calls gint = %d, want %d", gint, left);

    CHECK(shmem_pe_accessible(right) && !shmem_pe_accessible(npes) && !shmem_pe_accessible(-1),
          "shmem_pe_accessible");
    CHECK(shmem_addr_accessible(&gint, right) && shmem_addr_accessible(src, right),
          "shmem_addr_accessible of symmetric data");
    int stack_var = 0;
    CHECK(!shmem_addr_accessible(&stack_var, right), "a stack address is accessible?");
    int major = 0, minor = 0;
    shmem_info_get_version(&major, &minor);
    CHECK(major == SHMEM_MAJOR_VERSION && minor == SHMEM_MINOR_VERSION, "version %d.%d", major,
          minor);
    char name[SHMEM_MAX_NAME_LEN];
    shmem_info_get_name(name);
    CHECK(strlen(name) > 0 && strlen(name) < SHMEM_MAX_NAME_LEN, "vendor name '%s'", name);
    shmem_pcontrol(0);
    shmem_pcontrol(1);
    shmem_pcontrol(2, "extra", 3);
    shmem_barrier_all();
}

static void heap_calls(void) {
    /* shmalloc / shrealloc / shmemalign / shfree, used symmetrically */
    int c = ++ncase;
    long *a = shmalloc(100 * sizeof(long));
    CHECK(a != NULL, "shmalloc failed");
    for (int i = 0; i < 100; i++) a[i] = (long)me * 1000 + i;
    shmem_barrier_all();
    long *b = shrealloc(a, 5000 * sizeof(long));
    CHECK(b != NULL, "shrealloc failed");
    for (int i = 0; i < 100; i++)
        CHECK(b[i] == (long)me * 1000 + i, "shrealloc lost element %d (%ld)", i, b[i]);
    /* still symmetric: read the neighbour's copy */
    int right = (me + 1) % npes;
    CHECK_EQ_INT(shmem_long_g(&b[99], right), (long)right * 1000 + 99);
    shmem_barrier_all();
    for (size_t al = 8; al <= 65536; al *= 8) {
        char *p = shmemalign(al, 3000);
        CHECK(p != NULL && (uintptr_t)p % al == 0, "shmemalign(%zu) gave %p", al, (void *)p);
        api_fill(p, 3000, seed, me, P_HEAP, c);
        shmem_barrier_all();
        char got[3000], want[3000];
        shmem_getmem(got, p, 3000, right);
        api_fill(want, 3000, seed, right, P_HEAP, c);
        CHECK(memcmp(got, want, 3000) == 0, "shmemalign(%zu) block not symmetric", al);
        shfree(p);
    }
    shfree(b);
    shmem_barrier_all();
}

int main(void) {
    for (size_t i = 0; i < API_LEN(psync_bar); i++) psync_bar[i] = _SHMEM_SYNC_VALUE;
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < _SHMEM_BCAST_SYNC_SIZE; i++) psync_bcast[k][i] = _SHMEM_SYNC_VALUE;
    for (int i = 0; i < _SHMEM_COLLECT_SYNC_SIZE; i++) psync_collect[i] = _SHMEM_SYNC_VALUE;
    for (int i = 0; i < _SHMEM_ALLTOALL_SYNC_SIZE; i++) psync_a2a[i] = SHMEM_SYNC_VALUE;
    for (int i = 0; i < _SHMEM_ALLTOALLS_SYNC_SIZE; i++) psync_a2as[i] = SHMEM_SYNC_VALUE;
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < _SHMEM_REDUCE_SYNC_SIZE; i++) psync_red[k][i] = SHMEM_SYNC_VALUE;
    for (int i = 0; i < _SHMEM_SYNC_SIZE; i++) psync_sync[i] = SHMEM_SYNC_VALUE;

    start_pes(0);
    me = _my_pe();
    npes = _num_pes();
    test_pe = me;
    CHECK(me == shmem_my_pe() && npes == shmem_n_pes(), "_my_pe/_num_pes %d/%d vs %d/%d", me,
          npes, shmem_my_pe(), shmem_n_pes());
    CHECK(npes < MAXP, "at most %d PEs", MAXP - 1);
    seed = shmem_test_agree_seed("api_legacy"); /* its barrier: pSync set everywhere first */
    api_name = "api_legacy";

    src = shmalloc(BUF);
    dst = shmalloc(BUF);
    wrk = shmalloc(BUF);
    CHECK(src && dst && wrk, "shmalloc failed");

    /* every active set that fits, in the same order on every PE */
    int sets = 0, toall_sets = 0;
    for (int ls = 0; ls <= 2; ls++)
        for (int st = 0; st < npes; st++)
            for (int sz = 1; st + (sz - 1) * (1 << ls) < npes; sz++) {
                if (ls > 0 && sz == 1) continue; /* the same PE set as stride 1 */
                aset_t a = {st, ls, sz, 1 << ls, -1};
                for (int i = 0; i < sz; i++)
                    if (aset_pe(&a, i) == me) a.me = i;
                int do_toall = (st == 0 && ls == 0 && sz == npes) || (ls == 1 && st == 1) ||
                               (ls == 0 && st == npes - 1);
                if (a.me >= 0) {
                    shmem_barrier(st, ls, sz, psync_bar);
                    aset_moves(&a);
                    if (do_toall) aset_toall(&a);
                    syncs(&a, 3);
                }
                /* members and non-members meet before the next set reuses pSync */
                shmem_barrier_all();
                static char set_name[64];
                snprintf(set_name, sizeof set_name, "the calls on active set %d/%d/%d%s", st, ls,
                         sz, a.me >= 0 ? "" : " (not a member)");
                after = set_name;
                ncase = (sets + 1) * 100000;
                check_all_psync();
                shmem_barrier_all(); /* nobody signals into pSync while others check it */
                sets++;
                toall_sets += do_toall;
            }
    /* shmem_sync(team) beside the deprecated form */
    for (int r = 1; r <= 3; r++) {
        shmem_long_atomic_inc(&arrivals, 0);
        CHECK_EQ_INT(shmem_sync(SHMEM_TEAM_WORLD), 0);
        CHECK(shmem_long_atomic_fetch(&arrivals, 0) == r * npes, "shmem_sync(team) round %d", r);
        CHECK_EQ_INT(shmem_sync(SHMEM_TEAM_WORLD), 0);
    }
    old_names();
    heap_calls();
    shfree(wrk);
    shfree(dst);
    shfree(src);
    char what[200];
    snprintf(what, sizeof what, "%d active sets: barrier/broadcast/collect/fcollect/alltoall(s) "
             "32 and 64, sync; %zu _to_all on %d sets; old atomics, waits, heap, cache calls",
             sets, API_LEN(toalls), toall_sets);
    api_pass(what);
    return 0; /* no shmem_finalize, as many start_pes programs: the runtime finalizes at exit */
}
