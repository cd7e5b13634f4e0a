/*
 * shmem_zero — operations of zero elements are no-ops whatever their pointers
 * are (NULL included), as the standard says: every put and get (typed, sized,
 * mem, _nbi, ctx, strided, C11 generic), every team and active-set collective
 * and reduction, and the training collectives (shmemx_*, blocking and
 * non-blocking) return normally with NULL buffers and nelems 0. A
 * put-with-signal of zero elements still updates the signal: the neighbour's
 * signal words are checked after every SET and ADD form.
 */
#include <shmemx.h>

#include "shmem_test.h"

static const char *NAME = "shmem_zero";
static int me, npes, right, left;

#define NULLP(T) ((T *)NULL)

/* ---- put and get ---- */

#define ZERO_RMA(T, N)                                                               \
    shmem_##N##_put(NULLP(T), NULLP(const T), 0, right);                             \
    shmem_##N##_get(NULLP(T), NULLP(const T), 0, right);                             \
    shmem_##N##_put_nbi(NULLP(T), NULLP(const T), 0, right);                         \
    shmem_##N##_get_nbi(NULLP(T), NULLP(const T), 0, right);                         \
    shmem_ctx_##N##_put(SHMEM_CTX_DEFAULT, NULLP(T), NULLP(const T), 0, right);      \
    shmem_ctx_##N##_get(SHMEM_CTX_DEFAULT, NULLP(T), NULLP(const T), 0, right);      \
    shmem_ctx_##N##_put_nbi(SHMEM_CTX_DEFAULT, NULLP(T), NULLP(const T), 0, right);  \
    shmem_ctx_##N##_get_nbi(SHMEM_CTX_DEFAULT, NULLP(T), NULLP(const T), 0, right);  \
    shmem_##N##_iput(NULLP(T), NULLP(const T), 1, 1, 0, right);                      \
    shmem_##N##_iget(NULLP(T), NULLP(const T), 1, 1, 0, right);                      \
    shmem_ctx_##N##_iput(SHMEM_CTX_DEFAULT, NULLP(T), NULLP(const T), 3, 2, 0, right); \
    shmem_ctx_##N##_iget(SHMEM_CTX_DEFAULT, NULLP(T), NULLP(const T), 3, 2, 0, right);

#define ZERO_SIZED(S)                                                                \
    shmem_put##S(NULL, NULL, 0, right);                                              \
    shmem_get##S(NULL, NULL, 0, right);                                              \
    shmem_put##S##_nbi(NULL, NULL, 0, right);                                        \
    shmem_get##S##_nbi(NULL, NULL, 0, right);                                        \
    shmem_ctx_put##S(SHMEM_CTX_DEFAULT, NULL, NULL, 0, right);                       \
    shmem_ctx_get##S(SHMEM_CTX_DEFAULT, NULL, NULL, 0, right);                       \
    shmem_ctx_put##S##_nbi(SHMEM_CTX_DEFAULT, NULL, NULL, 0, right);                 \
    shmem_ctx_get##S##_nbi(SHMEM_CTX_DEFAULT, NULL, NULL, 0, right);                 \
    shmem_iput##S(NULL, NULL, 1, 1, 0, right);                                       \
    shmem_iget##S(NULL, NULL, 1, 1, 0, right);

static void rma(void) {
    SYMI_RMA_TYPES(ZERO_RMA)
    SYMI_SIZES(ZERO_SIZED)
    shmem_putmem(NULL, NULL, 0, right);
    shmem_getmem(NULL, NULL, 0, right);
    shmem_putmem_nbi(NULL, NULL, 0, right);
    shmem_getmem_nbi(NULL, NULL, 0, right);
    shmem_ctx_putmem(SHMEM_CTX_DEFAULT, NULL, NULL, 0, right);
    shmem_ctx_getmem(SHMEM_CTX_DEFAULT, NULL, NULL, 0, right);
    shmem_ctx_putmem_nbi(SHMEM_CTX_DEFAULT, NULL, NULL, 0, right);
    shmem_ctx_getmem_nbi(SHMEM_CTX_DEFAULT, NULL, NULL, 0, right);
    /* C11 generic selection, with and without a context */
    shmem_put(NULLP(long), NULLP(const long), 0, right);
    shmem_get(NULLP(double), NULLP(const double), 0, right);
    shmem_put_nbi(SHMEM_CTX_DEFAULT, NULLP(int), NULLP(const int), 0, right);
    shmem_iget(NULLP(short), NULLP(const short), 1, 1, 0, right);
    /* a context of its own */
    shmem_ctx_t ctx;
    CHECK(shmem_ctx_create(0, &ctx) == 0, "shmem_ctx_create");
    shmem_ctx_long_put(ctx, NULL, NULL, 0, right);
    shmem_ctx_getmem_nbi(ctx, NULL, NULL, 0, right);
    shmem_ctx_quiet(ctx);
    shmem_ctx_destroy(ctx);
    shmem_quiet();
    shmem_barrier_all();
}

/* ---- put-with-signal: no data, but the signal is updated ---- */

enum { NSIG = 8 };
static uint64_t sig[NSIG]; /* sig[k]: set by the left neighbour through form k */

/* Every form with dest and source NULL: k names the signal word; SET stores
 * v, ADD adds v. */
static void signal_forms(int op, uint64_t v) {
    int k = 0;
    shmem_long_put_signal(NULL, NULL, 0, &sig[k++], v, op, right);
    shmem_double_put_signal_nbi(NULL, NULL, 0, &sig[k++], v, op, right);
    shmem_ctx_int_put_signal(SHMEM_CTX_DEFAULT, NULL, NULL, 0, &sig[k++], v, op, right);
    shmem_ctx_char_put_signal_nbi(SHMEM_CTX_DEFAULT, NULL, NULL, 0, &sig[k++], v, op, right);
    shmem_put64_signal(NULL, NULL, 0, &sig[k++], v, op, right);
    shmem_ctx_put32_signal_nbi(SHMEM_CTX_DEFAULT, NULL, NULL, 0, &sig[k++], v, op, right);
    shmem_putmem_signal(NULL, NULL, 0, &sig[k++], v, op, right);
    shmem_ctx_putmem_signal_nbi(SHMEM_CTX_DEFAULT, NULL, NULL, 0, &sig[k++], v, op, right);
    CHECK(k == NSIG, "internal: %d forms", k);
    shmem_quiet();
}

static void put_signal(void) {
    for (int k = 0; k < NSIG; k++) sig[k] = 0;
    shmem_barrier_all();
    uint64_t v = 1000 + (uint64_t)me; /* what this PE's right neighbour will hold */
    signal_forms(SHMEM_SIGNAL_SET, v);
    for (int k = 0; k < NSIG; k++)
        shmem_signal_wait_until(&sig[k], SHMEM_CMP_EQ, 1000 + (uint64_t)left);
    shmem_barrier_all();
    signal_forms(SHMEM_SIGNAL_ADD, 7);
    shmem_barrier_all();
    for (int k = 0; k < NSIG; k++)
        CHECK(shmem_signal_fetch(&sig[k]) == 1007 + (uint64_t)left,
              "zero-length put-with-signal form %d: the signal is %" PRIu64 ", want %" PRIu64
              " (SET %d then ADD 7 from PE %d)",
              k, sig[k], 1007 + (uint64_t)left, 1000 + left, left);
    shmem_barrier_all();
}

/* ---- team collectives ---- */

#define ZERO_TEAM_MOVE(T, N)                                                         \
    CHECK_EQ_INT(shmem_##N##_broadcast(SHMEM_TEAM_WORLD, NULL, NULL, 0, 0), 0);      \
    CHECK_EQ_INT(shmem_##N##_collect(SHMEM_TEAM_WORLD, NULL, NULL, 0), 0);           \
    CHECK_EQ_INT(shmem_##N##_fcollect(SHMEM_TEAM_WORLD, NULL, NULL, 0), 0);          \
    CHECK_EQ_INT(shmem_##N##_alltoall(SHMEM_TEAM_WORLD, NULL, NULL, 0), 0);          \
    CHECK_EQ_INT(shmem_##N##_alltoalls(SHMEM_TEAM_WORLD, NULL, NULL, 2, 3, 0), 0);
#define ZERO_RED(T, N, OP)                                                           \
    CHECK_EQ_INT(shmem_##N##_##OP##_reduce(SHMEM_TEAM_WORLD, NULL, NULL, 0), 0);
#define ZERO_RED_BIT(T, N) ZERO_RED(T, N, and) ZERO_RED(T, N, or) ZERO_RED(T, N, xor)
#define ZERO_RED_MINMAX(T, N) ZERO_RED(T, N, max) ZERO_RED(T, N, min)
#define ZERO_RED_ARITH(T, N) ZERO_RED(T, N, sum) ZERO_RED(T, N, prod)

static void team_collectives(void) {
    SYMI_RMA_TYPES(ZERO_TEAM_MOVE)
    CHECK_EQ_INT(shmem_broadcastmem(SHMEM_TEAM_WORLD, NULL, NULL, 0, npes - 1), 0);
    CHECK_EQ_INT(shmem_collectmem(SHMEM_TEAM_WORLD, NULL, NULL, 0), 0);
    CHECK_EQ_INT(shmem_fcollectmem(SHMEM_TEAM_WORLD, NULL, NULL, 0), 0);
    CHECK_EQ_INT(shmem_alltoallmem(SHMEM_TEAM_WORLD, NULL, NULL, 0), 0);
    CHECK_EQ_INT(shmem_alltoallsmem(SHMEM_TEAM_WORLD, NULL, NULL, 1, 1, 0), 0);
    SYMI_REDUCE_BIT_TYPES(ZERO_RED_BIT)
    SYMI_REDUCE_MINMAX_TYPES(ZERO_RED_MINMAX)
    SYMI_REDUCE_ARITH_TYPES(ZERO_RED_ARITH)
    CHECK_EQ_INT(shmem_sum_reduce(SHMEM_TEAM_WORLD, NULLP(float), NULLP(const float), 0), 0);
    shmem_barrier_all();
}

/* ---- active-set collectives (deprecated, still defined) ---- */

static long psync[SHMEM_COLLECT_SYNC_SIZE > SHMEM_REDUCE_SYNC_SIZE ? SHMEM_COLLECT_SYNC_SIZE
                                                                   : SHMEM_REDUCE_SYNC_SIZE];

#define ZERO_TOALL(T, N, OP)                                                         \
    shmem_##N##_##OP##_to_all(NULL, NULL, 0, 0, 0, npes, NULL, psync);
#define ZERO_TOALL_BIT(T, N) ZERO_TOALL(T, N, and) ZERO_TOALL(T, N, or) ZERO_TOALL(T, N, xor)
#define ZERO_TOALL_MINMAX(T, N) ZERO_TOALL(T, N, max) ZERO_TOALL(T, N, min)
#define ZERO_TOALL_ARITH(T, N) ZERO_TOALL(T, N, sum) ZERO_TOALL(T, N, prod)

static void active_set(void) {
    for (size_t i = 0; i < sizeof psync / sizeof psync[0]; i++) psync[i] = SHMEM_SYNC_VALUE;
    shmem_barrier_all();
    shmem_broadcast32(NULL, NULL, 0, 0, 0, 0, npes, psync);
    shmem_broadcast64(NULL, NULL, 0, npes - 1, 0, 0, npes, psync);
    shmem_collect32(NULL, NULL, 0, 0, 0, npes, psync);
    shmem_collect64(NULL, NULL, 0, 0, 0, npes, psync);
    shmem_fcollect32(NULL, NULL, 0, 0, 0, npes, psync);
    shmem_fcollect64(NULL, NULL, 0, 0, 0, npes, psync);
    shmem_alltoall32(NULL, NULL, 0, 0, 0, npes, psync);
    shmem_alltoall64(NULL, NULL, 0, 0, 0, npes, psync);
    shmem_alltoalls32(NULL, NULL, 1, 1, 0, 0, 0, npes, psync);
    shmem_alltoalls64(NULL, NULL, 2, 3, 0, 0, 0, npes, psync);
    SYMI_TOALL_BIT_TYPES(ZERO_TOALL_BIT)
    SYMI_TOALL_MINMAX_TYPES(ZERO_TOALL_MINMAX)
    SYMI_TOALL_ARITH_TYPES(ZERO_TOALL_ARITH)
    shmem_barrier_all();
}

/* ---- the training collectives ---- */

static void training_collectives(void) {
    for (int dt = 0; dt < SHMEMX_DTYPE_COUNT; dt++) {
        for (int op = 0; op < SHMEMX_OP_COUNT; op++) {
            CHECK_EQ_INT(shmemx_allreduce(SHMEM_TEAM_WORLD, NULL, NULL, 0, dt, op), 0);
            CHECK_EQ_INT(shmemx_reduce_scatter(SHMEM_TEAM_WORLD, NULL, NULL, 0, dt, op), 0);
        }
        CHECK_EQ_INT(shmemx_allgather(SHMEM_TEAM_WORLD, NULL, NULL, 0, dt), 0);
        CHECK_EQ_INT(shmemx_broadcast(SHMEM_TEAM_WORLD, NULL, NULL, 0, dt, npes - 1), 0);
    }
    shmemx_req_t r[4];
    CHECK_EQ_INT(shmemx_allreduce_nb(SHMEM_TEAM_WORLD, NULL, NULL, 0, SHMEMX_FLOAT32, SHMEMX_SUM,
                                     &r[0]), 0);
    CHECK_EQ_INT(shmemx_reduce_scatter_nb(SHMEM_TEAM_WORLD, NULL, NULL, 0, SHMEMX_BFLOAT16,
                                          SHMEMX_AVG, &r[1]), 0);
    CHECK_EQ_INT(shmemx_allgather_nb(SHMEM_TEAM_WORLD, NULL, NULL, 0, SHMEMX_INT64, &r[2]), 0);
    CHECK_EQ_INT(shmemx_broadcast_nb(SHMEM_TEAM_WORLD, NULL, NULL, 0, SHMEMX_FLOAT64, 0, &r[3]),
                 0);
    CHECK_EQ_INT(shmemx_req_waitall(r, 4), 0);
    for (int k = 0; k < 4; k++) shmemx_req_free(r[k]);
    shmem_barrier_all();
}

int main(void) {
    shmem_test_start(NAME);
    me = shmem_my_pe();
    npes = shmem_n_pes();
    right = shmem_test_right();
    left = shmem_test_left();
    rma();
    put_signal();
    team_collectives();
    active_set();
    training_collectives();
    shmem_test_pass(NAME, "put/get, put-with-signal (signal still updated), team, active-set "
                          "and training collectives of zero elements with NULL buffers");
    shmem_finalize();
    return 0;
}
