/*
 * spec_teams — the OpenSHMEM 1.5 specification's examples for teams, team
 * collectives, contexts, multi-variable waits and signals, gathered into one
 * program as an outside suite builds them: split_strided (the even PEs),
 * translate_pe (the odd PEs), split_2d with find_xy_dims and a 3-D split,
 * team_sync, broadcast, collect with varying counts, alltoall(s), reductions,
 * a context on a team made with SHMEM_TEAM_NUM_CONTEXTS, the pipelined
 * context example, wait_until_all/any/some, put_signal, shmem_ptr.
 *
 * @npes 2 4
 */
#include <shmem.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static int errors;
#define EXPECT(cond, ...)                                                            \
    do {                                                                             \
        if (!(cond)) {                                                               \
            printf("PE %d: line %d: ", shmem_my_pe(), __LINE__);                     \
            printf(__VA_ARGS__);                                                     \
            printf("\n");                                                            \
            errors++;                                                                \
        }                                                                            \
    } while (0)

/* from the split_2d example: the most square factorisation */
static void find_xy_dims(int npes, int *x, int *y) {
    int divider = 1;
    for (int i = 1; i * i <= npes; i++)
        if (npes % i == 0) divider = i;
    *x = npes / divider;
    *y = divider;
}

static void split_examples(int me, int npes) {
    shmem_team_t new_team;
    shmem_team_config_t *config = NULL;
    int ret = shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, (npes + 1) / 2, config, 0,
                                       &new_team);
    EXPECT(ret == 0, "split_strided returned %d", ret);
    if (new_team != SHMEM_TEAM_INVALID) {
        int t_size = shmem_team_n_pes(new_team), t_pe = shmem_team_my_pe(new_team);
        EXPECT(me % 2 == 0 && me / 2 == t_pe && (npes + 1) / 2 == t_size,
               "even team: my_pe %d n_pes %d", t_pe, t_size);
        shmem_team_destroy(new_team);
    } else {
        EXPECT(me % 2 == 1, "even PE %d without a team", me);
    }

    shmem_team_t odd_team;
    shmem_team_split_strided(SHMEM_TEAM_WORLD, 1, 2, npes / 2, NULL, 0, &odd_team);
    if (odd_team != SHMEM_TEAM_INVALID) {
        int odd_pe = shmem_team_my_pe(odd_team);
        int world_pe = shmem_team_translate_pe(odd_team, odd_pe, SHMEM_TEAM_WORLD);
        EXPECT(world_pe == me, "translate_pe(odd %d) = %d", odd_pe, world_pe);
        EXPECT(shmem_team_translate_pe(SHMEM_TEAM_WORLD, me, odd_team) == me / 2, "back");
        shmem_team_sync(odd_team);
        shmem_team_destroy(odd_team);
    }

    int xdim, ydim;
    shmem_team_t xteam, yteam;
    find_xy_dims(npes, &xdim, &ydim);
    shmem_team_split_2d(SHMEM_TEAM_WORLD, xdim, NULL, 0, &xteam, NULL, 0, &yteam);
    int my_x = shmem_team_my_pe(xteam), my_y = shmem_team_my_pe(yteam);
    EXPECT(my_x == me % xdim && my_y == me / xdim, "2-D: (%d, %d) in %d x %d", my_x, my_y, xdim,
           ydim);
    EXPECT(shmem_team_n_pes(xteam) == xdim && shmem_team_n_pes(yteam) == ydim, "2-D sizes");
    shmem_sync(xteam);
    shmem_sync(yteam);
    shmem_team_destroy(xteam);
    shmem_team_destroy(yteam);

    /* 3-D: z planes of xy teams by split_strided, then each plane split 2-D */
    int zdim = npes >= 4 ? 2 : 1, plane = npes / zdim;
    shmem_team_t xy = SHMEM_TEAM_INVALID, x2, y2;
    int my_z = me / plane;
    for (int z = 0; z < zdim; z++) {
        shmem_team_t t;
        shmem_team_split_strided(SHMEM_TEAM_WORLD, z * plane, 1, plane, NULL, 0, &t);
        if (z == my_z) xy = t;
    }
    shmem_team_split_2d(xy, plane > 1 ? plane / 2 : 1, NULL, 0, &x2, NULL, 0, &y2);
    EXPECT(shmem_team_translate_pe(xy, shmem_team_my_pe(xy), SHMEM_TEAM_WORLD) == me, "3-D");
    shmem_team_destroy(x2);
    shmem_team_destroy(y2);
    shmem_team_destroy(xy);
}

static void collective_examples(int me, int npes) {
    static long source[4], dest[4];
    for (int i = 0; i < 4; i++) source[i] = me == 0 ? i : -1;
    shmem_long_broadcast(SHMEM_TEAM_WORLD, dest, source, 4, 0);
    for (int i = 0; i < 4; i++) EXPECT(dest[i] == i, "broadcast dest[%d] = %ld", i, dest[i]);

    static int32_t csrc[64];
    int my_nelem = me + 1, total = npes * (npes + 1) / 2;
    int32_t *cdst = shmem_malloc(total * sizeof(int32_t));
    for (int i = 0; i < my_nelem; i++) csrc[i] = me;
    shmem_int32_collect(SHMEM_TEAM_WORLD, cdst, csrc, my_nelem);
    for (int p = 0, k = 0; p < npes; p++)
        for (int i = 0; i <= p; i++, k++) EXPECT(cdst[k] == p, "collect [%d] = %d", k, cdst[k]);
    shmem_barrier_all();
    shmem_collect(SHMEM_TEAM_WORLD, cdst, csrc, my_nelem); /* generic */
    for (int p = 0, k = 0; p < npes; p++)
        for (int i = 0; i <= p; i++, k++) EXPECT(cdst[k] == p, "generic collect");
    shmem_free(cdst);

    int64_t *a2a_src = shmem_malloc(npes * sizeof(int64_t));
    int64_t *a2a_dst = shmem_malloc(npes * sizeof(int64_t));
    for (int pe = 0; pe < npes; pe++) a2a_src[pe] = me + pe;
    shmem_int64_alltoall(SHMEM_TEAM_WORLD, a2a_dst, a2a_src, 1);
    for (int pe = 0; pe < npes; pe++) EXPECT(a2a_dst[pe] == pe + me, "alltoall from %d", pe);
    shmem_free(a2a_dst);
    shmem_free(a2a_src);

    /* alltoalls: dst stride 2, sst 3 */
    int *s = shmem_malloc(3 * npes * sizeof(int)), *d = shmem_malloc(2 * npes * sizeof(int));
    for (int i = 0; i < 3 * npes; i++) s[i] = me * 1000 + i;
    for (int i = 0; i < 2 * npes; i++) d[i] = -1;
    shmem_int_alltoalls(SHMEM_TEAM_WORLD, d, s, 2, 3, 1);
    for (int pe = 0; pe < npes; pe++)
        EXPECT(d[2 * pe] == pe * 1000 + 3 * me && d[2 * pe + 1] == -1, "alltoalls from %d", pe);
    shmem_free(d);
    shmem_free(s);

    static int src[8], mx[8], sm[8];
    for (int i = 0; i < 8; i++) src[i] = me + i;
    shmem_int_max_reduce(SHMEM_TEAM_WORLD, mx, src, 8);
    shmem_sum_reduce(SHMEM_TEAM_WORLD, sm, src, 8);
    for (int i = 0; i < 8; i++)
        EXPECT(mx[i] == npes - 1 + i && sm[i] == npes * (npes - 1) / 2 + npes * i, "reduce %d", i);
    shmem_int_prod_reduce(SHMEM_TEAM_WORLD, src, src, 1); /* in place */
    EXPECT(me == 0 || src[0] == 0, "prod in place: %d", src[0]);
    static double dsum, dval;
    dval = me + 0.5;
    shmem_double_sum_reduce(SHMEM_TEAM_WORLD, &dsum, &dval, 1);
    EXPECT(dsum == npes * (npes - 1) / 2.0 + npes * 0.5, "double sum %g", dsum);
}

/* the specification's context example: a pipelined reduction */
#define LEN 64
static long pwrk_src[LEN], pwrk_dst[LEN];
static void ctx_examples(int me, int npes) {
    shmem_team_config_t conf = {.num_contexts = 2};
    shmem_team_t team;
    shmem_ctx_t ctx;
    shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, npes, &conf, SHMEM_TEAM_NUM_CONTEXTS, &team);
    int ret = shmem_team_create_ctx(team, 0, &ctx);
    if (ret != 0) ctx = SHMEM_CTX_DEFAULT; /* the spec's fallback */
    shmem_team_t back;
    shmem_ctx_get_team(ctx, &back);
    EXPECT(ret != 0 || back == team, "ctx_get_team");
    for (int i = 0; i < LEN; i++) pwrk_src[i] = me * LEN + i;
    shmem_barrier_all();
    /* every PE sends its block to every PE on the private context; quiet, then
     * a barrier on the team */
    static long all[16 * LEN];
    for (int pe = 0; pe < npes; pe++)
        shmem_ctx_long_put_nbi(ctx, &all[me * LEN], pwrk_src, LEN, pe);
    shmem_ctx_quiet(ctx);
    shmem_team_sync(team);
    for (int pe = 0; pe < npes; pe++)
        for (int i = 0; i < LEN; i++) EXPECT(all[pe * LEN + i] == pe * LEN + i, "ctx put %d", i);
    if (ctx != SHMEM_CTX_DEFAULT) shmem_ctx_destroy(ctx);
    shmem_team_destroy(team);

    shmem_ctx_t pctx;
    if (shmem_ctx_create(SHMEM_CTX_PRIVATE, &pctx) == 0) {
        long v = shmem_ctx_long_atomic_fetch_add(pctx, &pwrk_dst[0], 1, 0);
        EXPECT(v >= 0 && v < npes, "ctx fetch_add %ld", v);
        shmem_ctx_quiet(pctx);
        shmem_ctx_destroy(pctx);
    }
    shmem_barrier_all();
}

static void wait_signal_examples(int me, int npes) {
    int *ivars = shmem_calloc(npes, sizeof(int));
    int *status = calloc(npes, sizeof(int));
    size_t *indices = malloc(npes * sizeof(size_t));
    for (int i = 0; i < npes; i++) shmem_int_atomic_set(&ivars[me], 1, i);
    shmem_int_wait_until_all(ivars, npes, status, SHMEM_CMP_EQ, 1);
    size_t ncompleted = shmem_int_wait_until_some(ivars, npes, indices, status, SHMEM_CMP_EQ, 1);
    EXPECT(ncompleted == (size_t)npes, "wait_until_some: %zu", ncompleted);
    status[0] = 1; /* exclude PE 0's slot */
    size_t any = shmem_int_wait_until_any(ivars, npes, status, SHMEM_CMP_EQ, 1);
    EXPECT(npes == 1 || any >= 1, "wait_until_any: %zu", any);
    shmem_barrier_all();
    shmem_free(ivars);
    free(status);
    free(indices);

    static uint64_t sig;
    static char buf[1 << 16];
    char mine[1 << 16];
    for (size_t i = 0; i < sizeof mine; i++) mine[i] = (char)(me + i);
    shmem_putmem_signal(buf, mine, sizeof mine, &sig, 1, SHMEM_SIGNAL_SET, (me + 1) % npes);
    shmem_signal_wait_until(&sig, SHMEM_CMP_EQ, 1);
    int left = (me + npes - 1) % npes;
    for (size_t i = 0; i < sizeof buf; i++)
        if (buf[i] != (char)(left + i)) {
            EXPECT(0, "signal payload byte %zu", i);
            break;
        }
    EXPECT(shmem_signal_fetch(&sig) == 1, "signal_fetch");
    shmem_barrier_all();

    static int bigd[100];
    for (int i = 0; i < npes; i++) {
        int *ptr = shmem_ptr(bigd, i);
        if (ptr == NULL) continue; /* not reachable by loads and stores */
        if (i == (me + 1) % npes) ptr[me] = me + 7;
    }
    shmem_barrier_all();
    EXPECT(bigd[left] == left + 7, "shmem_ptr store: %d", bigd[left]);
    EXPECT(shmem_team_ptr(SHMEM_TEAM_WORLD, bigd, me) == bigd, "team_ptr to self");
}

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), npes = shmem_n_pes();
    split_examples(me, npes);
    collective_examples(me, npes);
    ctx_examples(me, npes);
    wait_signal_examples(me, npes);
    static int all_errors;
    shmem_int_atomic_add(&all_errors, errors, 0);
    shmem_barrier_all();
    if (me == 0) printf("spec_teams: %s (%d errors)\n", all_errors ? "FAILED" : "PASS", all_errors);
    shmem_finalize();
    return errors ? 1 : 0;
}
