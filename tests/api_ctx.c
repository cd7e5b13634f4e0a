/*
 * api_ctx — communication contexts, and many threads of each PE using them at
 * once (SHMEM_THREAD_MULTIPLE).
 *
 * One thread:
 *   - shmem_ctx_create / shmem_team_create_ctx with every option, get_team,
 *     destroy, SHMEM_CTX_INVALID and SHMEM_CTX_DEFAULT;
 *   - RMA (put/get/p/g/iput/iget/_nbi/put_signal) and AMO on a context of a
 *     reversed team, where PE numbers are team-relative: each lands on the
 *     world PE the team names;
 *   - per-context ordering: data put _nbi on a context, shmem_ctx_quiet on it,
 *     then a flag; the receiver sees the data when it sees the flag;
 *   - creating and destroying contexts many times.
 * Many threads (NTHREADS per PE, each with its own private context):
 *   - puts of random blocks into every PE, quiet, then an atomic arrival count
 *     that the receiving thread waits for (every thread waits on its own word);
 *   - fetch_inc from every thread on every PE, each fetched ticket marked with
 *     fetch_or in a bitmap: no ticket may be handed out twice, none skipped;
 *   - a token passed round the PEs per thread index (wait_until from every
 *     thread at once);
 *   - shmem_set_lock / shmem_test_lock from every thread of every PE around a
 *     non-atomic read-modify-write of a counter on PE 0;
 *   - contexts created by every thread at once on a team that promised a
 *     number of them (SHMEM_TEAM_NUM_CONTEXTS): exactly that many are granted.
 */
#include <pthread.h>
#include <sched.h>

#include "api_test.h"

#define MAXP 16
#define NTHREADS 4
#define BLOCK 512 /* bytes each thread puts into each PE */
#define TICKETS 100 /* fetch_inc per thread per PE */
#define LAPS 100 /* token laps */
#define LOCKED 100 /* lock rounds per thread */

static int n, me;
static uint64_t seed;

/* ---- one thread: contexts on teams ---- */

static long box[MAXP];       /* box[j]: what team member j put here */
static long gbox[MAXP];
static long strided[4 * MAXP];
static long counter;
static uint64_t bits;
static uint64_t flag;
static char payload[4096];

static void ctx_basics(void) {
    shmem_ctx_t c = SHMEM_CTX_INVALID;
    shmem_team_t t = SHMEM_TEAM_INVALID;
    long opts[] = {0, SHMEM_CTX_PRIVATE, SHMEM_CTX_SERIALIZED, SHMEM_CTX_NOSTORE,
                   SHMEM_CTX_PRIVATE | SHMEM_CTX_SERIALIZED | SHMEM_CTX_NOSTORE};
    for (size_t k = 0; k < API_LEN(opts); k++) {
        CHECK_EQ_INT(shmem_ctx_create(opts[k], &c), 0);
        CHECK(c != SHMEM_CTX_INVALID && c != SHMEM_CTX_DEFAULT, "ctx_create(%ld) gave %p", opts[k],
              (void *)c);
        CHECK_EQ_INT(shmem_ctx_get_team(c, &t), 0);
        CHECK(t == SHMEM_TEAM_WORLD, "a context from shmem_ctx_create is not on the world");
        shmem_ctx_long_p(c, &box[0], 1, me); /* usable */
        shmem_ctx_quiet(c);
        shmem_ctx_fence(c);
        shmem_ctx_destroy(c);
    }
    CHECK_EQ_INT(shmem_ctx_get_team(SHMEM_CTX_DEFAULT, &t), 0);
    CHECK(t == SHMEM_TEAM_WORLD, "SHMEM_CTX_DEFAULT is not on the world");
    t = SHMEM_TEAM_WORLD;
    CHECK(shmem_ctx_get_team(SHMEM_CTX_INVALID, &t) != 0, "get_team(INVALID) returned 0");
    CHECK(t == SHMEM_TEAM_INVALID, "get_team(INVALID) did not give SHMEM_TEAM_INVALID");
    c = SHMEM_CTX_DEFAULT;
    CHECK(shmem_team_create_ctx(SHMEM_TEAM_INVALID, 0, &c) != 0,
          "team_create_ctx(INVALID) returned 0");
    CHECK(c == SHMEM_CTX_INVALID, "team_create_ctx(INVALID) left a context");
    shmem_ctx_destroy(SHMEM_CTX_INVALID); /* allowed: does nothing */
    shmem_ctx_quiet(SHMEM_CTX_DEFAULT);
    /* many create/destroy cycles, on the world and on a team */
    shmem_team_t half;
    CHECK_EQ_INT(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, (n + 1) / 2, NULL, 0, &half), 0);
    for (int k = 0; k < 200; k++) {
        shmem_team_t on = (k & 1) && half != SHMEM_TEAM_INVALID ? half : SHMEM_TEAM_WORLD;
        CHECK_EQ_INT(shmem_team_create_ctx(on, k % 3 ? SHMEM_CTX_PRIVATE : 0, &c), 0);
        CHECK_EQ_INT(shmem_ctx_get_team(c, &t), 0);
        CHECK(t == on, "cycle %d: the context's team changed", k);
        shmem_ctx_destroy(c);
    }
    if (half != SHMEM_TEAM_INVALID) shmem_team_destroy(half);
    shmem_barrier_all();
}

/* Every RMA and AMO form on a context of the reversed world: team PE i is
 * world PE n-1-i. */
static void ctx_team_relative(void) {
    shmem_team_t rev;
    CHECK_EQ_INT(shmem_team_split_strided(SHMEM_TEAM_WORLD, n - 1, -1, n, NULL, 0, &rev), 0);
    shmem_ctx_t c;
    CHECK_EQ_INT(shmem_team_create_ctx(rev, 0, &c), 0);
    shmem_team_t back;
    CHECK_EQ_INT(shmem_ctx_get_team(c, &back), 0);
    CHECK(back == rev, "ctx_get_team gave another team");
    int tme = shmem_team_my_pe(rev);
    CHECK_EQ_INT(tme, n - 1 - me);
    for (int i = 0; i < MAXP; i++) box[i] = gbox[i] = -1;
    for (int i = 0; i < 4 * MAXP; i++) strided[i] = -1;
    counter = 0;
    bits = 0;
    shmem_barrier_all();

    for (int i = 0; i < n; i++) { /* i: team PE number */
        long v = me * 1000 + i;
        if (i % 2) shmem_ctx_long_put(c, &box[tme], &v, 1, i);
        else shmem_ctx_long_p(c, &box[tme], v, i);
        long iv[2] = {v, -v};
        shmem_ctx_long_iput(c, &strided[2 * tme], iv, 2 * MAXP, 1, 2, i); /* strided target */
        shmem_ctx_long_put_nbi(c, &gbox[tme], &v, 1, i);
        shmem_ctx_long_atomic_fetch_add(c, &counter, i + 1, 0); /* team PE 0 = world n-1 */
        shmem_ctx_uint64_atomic_or(c, &bits, 1ull << me, i);
    }
    shmem_ctx_quiet(c);
    shmem_barrier_all();
    for (int j = 0; j < n; j++) { /* box[j] came from team member j = world n-1-j */
        long want = (n - 1 - j) * 1000 + tme;
        CHECK(box[j] == want, "ctx put to a team PE: box[%d] = %ld, want %ld", j, box[j], want);
        CHECK(gbox[j] == want, "ctx put_nbi to a team PE: gbox[%d] = %ld, want %ld", j, gbox[j],
              want);
        CHECK(strided[2 * j] == want && strided[2 * j + 2 * MAXP] == -want,
              "ctx iput to a team PE: %ld %ld, want %ld %ld", strided[2 * j],
              strided[2 * j + 2 * MAXP], want, -want);
    }
    CHECK(bits == (n == 64 ? ~0ull : (1ull << n) - 1), "ctx atomic_or: bits 0x%" PRIx64, bits);
    long added = (long)n * n * (n + 1) / 2; /* every PE added i+1 for each i into team PE 0 */
    if (me == n - 1) {
        long want = added;
        CHECK(counter == want, "ctx fetch_add into team PE 0 (world %d): %ld, want %ld", n - 1,
              counter, want);
    }
    /* gets, g, iget, get_nbi and fetching atomics read from the team PE */
    for (int i = 0; i < n; i++) {
        int w = n - 1 - i; /* world PE of team PE i */
        long got = -2, want = me * 1000 + i; /* what I put into box[tme] on i */
        shmem_ctx_long_get(c, &got, &box[tme], 1, i);
        CHECK(got == want, "ctx get from team PE %d: %ld, want %ld", i, got, want);
        got = shmem_ctx_long_g(c, &gbox[tme], i);
        CHECK(got == want, "ctx g from team PE %d: %ld, want %ld", i, got, want);
        long two[2] = {0, 0};
        shmem_ctx_long_iget(c, two, &strided[2 * tme], 1, 2 * MAXP, 2, i);
        CHECK(two[0] == want && two[1] == -want, "ctx iget from team PE %d", i);
        got = -2;
        shmem_ctx_long_get_nbi(c, &got, &box[tme], 1, i);
        shmem_ctx_quiet(c);
        CHECK(got == want, "ctx get_nbi from team PE %d: %ld", i, got);
        long f = shmem_ctx_long_atomic_fetch(c, &counter, i);
        CHECK(f == (w == n - 1 ? added : 0), "ctx atomic_fetch from team PE %d: %ld", i, f);
    }
    shmem_barrier_all();
    /* compare_swap / swap / set / inc on the team's last member (world PE 0) */
    if (me == 0) counter = 100;
    shmem_barrier_all();
    long seen = shmem_ctx_long_atomic_compare_swap(c, &counter, 100, 200 + me, n - 1);
    shmem_barrier_all();
    long final = shmem_ctx_long_atomic_fetch(c, &counter, n - 1);
    CHECK(final >= 200 && final < 200 + n, "cswap winner wrote %ld", final);
    CHECK((seen == 100) == (final == 200 + me), "cswap: saw %ld, final %ld", seen, final);
    shmem_barrier_all();
    shmem_ctx_long_atomic_inc(c, &counter, n - 1);
    shmem_barrier_all();
    CHECK_EQ_INT(shmem_ctx_long_atomic_fetch(c, &counter, n - 1), final + n);
    shmem_barrier_all();
    if (me == 0) shmem_ctx_long_atomic_set(c, &counter, 7, n - 1);
    shmem_barrier_all();
    CHECK_EQ_INT(shmem_ctx_long_atomic_swap(c, &counter, 7, n - 1), 7);
    shmem_barrier_all();

    /* per-context ordering: payload with put_nbi on c, quiet c, then the flag
     * (on the default context); the right neighbour (team-relative) checks */
    int right_t = (tme + 1) % n, left_w = (me + 1) % n; /* team right = world left */
    char mine[sizeof payload];
    api_fill(mine, sizeof mine, seed, me, 77, 0);
    flag = 0;
    shmem_barrier_all();
    shmem_ctx_putmem_nbi(c, payload, mine, sizeof mine, right_t);
    shmem_ctx_quiet(c);
    shmem_uint64_atomic_set(&flag, 1, (me + n - 1) % n);
    shmem_uint64_wait_until(&flag, SHMEM_CMP_EQ, 1);
    api_fill(mine, sizeof mine, seed, left_w, 77, 0);
    CHECK(memcmp(payload, mine, sizeof mine) == 0, "payload from world PE %d incomplete after "
          "its shmem_ctx_quiet and flag", left_w);
    /* put_signal on the context */
    uint64_t *sig = &flag;
    shmem_barrier_all();
    api_fill(mine, sizeof mine, seed, me, 78, 0);
    shmem_ctx_putmem_signal(c, payload, mine, sizeof mine, sig, 5, SHMEM_SIGNAL_ADD, right_t);
    CHECK_EQ_INT(shmem_signal_wait_until(sig, SHMEM_CMP_EQ, 6), 6);
    api_fill(mine, sizeof mine, seed, left_w, 78, 0);
    CHECK(memcmp(payload, mine, sizeof mine) == 0, "ctx put_signal payload from world PE %d",
          left_w);
    shmem_barrier_all();
    shmem_ctx_destroy(c);
    shmem_team_destroy(rev);
}

/* ---- many threads ---- */

static char region[MAXP][NTHREADS][BLOCK]; /* region[p][t]: from thread t of PE p */
static uint64_t arrived[NTHREADS];
static uint64_t tickets; /* fetch_inc target */
static uint64_t ticket_seen[(MAXP * NTHREADS * TICKETS + 63) / 64];
static uint64_t ring[NTHREADS];
static long lock;
static long locked_count;
static long inside; /* PEs/threads inside the lock right now (must stay <= 1) */

typedef struct {
    int t;
    pthread_t id;
} worker_t;

static void *worker(void *arg) {
    worker_t *w = arg;
    int t = w->t;
    shmem_ctx_t ctx;
    CHECK_EQ_INT(shmem_ctx_create(SHMEM_CTX_PRIVATE, &ctx), 0);

    /* 1. RMA into every PE, quiet, then count my arrival there */
    char mine[BLOCK];
    for (int p = 0; p < n; p++) {
        api_fill(mine, BLOCK, seed, me * NTHREADS + t, 100 + p, 0);
        if (p % 2) shmem_ctx_putmem_nbi(ctx, region[me][t], mine, BLOCK, p);
        else shmem_ctx_putmem(ctx, region[me][t], mine, BLOCK, p);
    }
    shmem_ctx_quiet(ctx);
    for (int p = 0; p < n; p++) shmem_ctx_uint64_atomic_add(ctx, &arrived[t], 1, p);
    shmem_uint64_wait_until(&arrived[t], SHMEM_CMP_EQ, (uint64_t)n);
    for (int q = 0; q < n; q++) {
        api_fill(mine, BLOCK, seed, q * NTHREADS + t, 100 + me, 0);
        CHECK(memcmp(region[q][t], mine, BLOCK) == 0,
              "thread %d: the block from thread %d of PE %d is wrong", t, t, q);
    }

    /* 2. tickets: every fetch_inc result on a PE is handed out once */
    for (int k = 0; k < TICKETS; k++)
        for (int p = 0; p < n; p++) {
            uint64_t v = (k + t) % 2 ? shmem_ctx_uint64_atomic_fetch_inc(ctx, &tickets, p)
                                     : shmem_uint64_atomic_fetch_inc(&tickets, p);
            CHECK(v < (uint64_t)(n * NTHREADS * TICKETS), "ticket %" PRIu64 " out of range", v);
            uint64_t bit = 1ull << (v % 64);
            uint64_t old = shmem_ctx_uint64_atomic_fetch_or(ctx, &ticket_seen[v / 64], bit, p);
            CHECK(!(old & bit), "ticket %" PRIu64 " of PE %d handed out twice", v, p);
        }

    /* 3. a token per thread index round the PEs: PE p waits for lap*n + p */
    int right = (me + 1) % n;
    for (int lap = 0; lap < LAPS; lap++) {
        uint64_t want = (uint64_t)lap * n + (uint64_t)me;
        if (!(lap == 0 && me == 0)) shmem_uint64_wait_until(&ring[t], SHMEM_CMP_GE, want);
        CHECK(ring[t] == want, "thread %d lap %d: token %" PRIu64 ", want %" PRIu64, t, lap,
              ring[t], want);
        shmem_ctx_uint64_atomic_set(ctx, &ring[t], want + 1, right);
    }

    /* 4. the lock from every thread of every PE */
    for (int k = 0; k < LOCKED; k++) {
        if ((k + t) % 3 == 0) {
            while (shmem_test_lock(&lock) != 0) sched_yield();
        } else {
            shmem_set_lock(&lock);
        }
        long in = shmem_long_atomic_fetch_inc(&inside, 0);
        CHECK(in == 0, "thread %d: %ld others inside the lock", t, in);
        long v = shmem_long_g(&locked_count, 0);
        if (k % 4 == 0) sched_yield(); /* widen the window */
        shmem_long_p(&locked_count, v + 1, 0);
        shmem_long_atomic_add(&inside, -1, 0);
        shmem_clear_lock(&lock);
    }
    shmem_ctx_destroy(ctx);
    return NULL;
}

/* Contexts created by all threads at once on a team that promised
 * 2 * NTHREADS of them: exactly that many are granted. */
static shmem_team_t limited;
static int granted, asked;

static void *ctx_creator(void *arg) {
    shmem_ctx_t c[3];
    int mine = 0;
    (void)arg;
    for (int k = 0; k < 3; k++)
        if (shmem_team_create_ctx(limited, SHMEM_CTX_PRIVATE, &c[mine]) == 0) mine++;
        else CHECK(c[mine] == SHMEM_CTX_INVALID, "a refused context is not SHMEM_CTX_INVALID");
    __atomic_fetch_add(&granted, mine, __ATOMIC_RELAXED);
    /* every thread asks before any gives a context back */
    __atomic_fetch_add(&asked, 1, __ATOMIC_RELEASE);
    while (__atomic_load_n(&asked, __ATOMIC_ACQUIRE) < NTHREADS) sched_yield();
    for (int k = 0; k < mine; k++) {
        shmem_ctx_long_p(c[k], &box[0], 1, shmem_team_my_pe(limited));
        shmem_ctx_destroy(c[k]);
    }
    return NULL;
}

static void threads_ctx_limit(void) {
    shmem_team_config_t conf = {.num_contexts = 2 * NTHREADS};
    CHECK_EQ_INT(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, n, &conf,
                                          SHMEM_TEAM_NUM_CONTEXTS, &limited), 0);
    pthread_t id[NTHREADS];
    for (int t = 0; t < NTHREADS; t++)
        CHECK(pthread_create(&id[t], NULL, ctx_creator, NULL) == 0, "pthread_create failed");
    for (int t = 0; t < NTHREADS; t++) pthread_join(id[t], NULL);
    CHECK(granted == 2 * NTHREADS, "%d threads asking for 3 contexts each on a team of %d "
          "contexts were granted %d", NTHREADS, 2 * NTHREADS, granted);
    shmem_ctx_t c;
    CHECK_EQ_INT(shmem_team_create_ctx(limited, 0, &c), 0); /* all were given back */
    shmem_ctx_destroy(c);
    shmem_team_destroy(limited);
}

static void threads(void) {
    worker_t w[NTHREADS];
    for (int t = 0; t < NTHREADS; t++) {
        w[t].t = t;
        CHECK(pthread_create(&w[t].id, NULL, worker, &w[t]) == 0, "pthread_create failed");
    }
    for (int t = 0; t < NTHREADS; t++) pthread_join(w[t].id, NULL);
    shmem_barrier_all();
    uint64_t want_tickets = (uint64_t)n * NTHREADS * TICKETS;
    CHECK(tickets == want_tickets, "tickets %" PRIu64 ", want %" PRIu64, tickets, want_tickets);
    for (uint64_t v = 0; v < want_tickets; v++)
        CHECK(ticket_seen[v / 64] >> (v % 64) & 1, "ticket %" PRIu64 " never handed out", v);
    if (me == 0) {
        for (int t = 0; t < NTHREADS; t++)
            CHECK(ring[t] == (uint64_t)LAPS * n, "token of thread %d ended at %" PRIu64, t,
                  ring[t]);
        CHECK(locked_count == (long)n * NTHREADS * LOCKED,
              "lock-protected counter %ld, want %ld: mutual exclusion failed", locked_count,
              (long)n * NTHREADS * LOCKED);
    }
}

int main(void) {
    seed = api_start("api_ctx", SHMEM_THREAD_MULTIPLE);
    n = shmem_n_pes();
    me = shmem_my_pe();
    CHECK(n <= MAXP, "at most %d PEs", MAXP);
    int level = -1;
    shmem_query_thread(&level);
    CHECK_EQ_INT(level, SHMEM_THREAD_MULTIPLE);
    ctx_basics();
    ctx_team_relative();
    threads();
    threads_ctx_limit();
    char what[160];
    snprintf(what, sizeof what, "contexts on teams, team-relative RMA and AMO, ctx quiet; %d "
             "threads per PE with RMA, atomics, waits and locks", NTHREADS);
    api_pass(what);
    shmem_finalize();
    return 0;
}
