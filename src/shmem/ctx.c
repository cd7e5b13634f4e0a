/*
 * ctx.c — communication contexts. A context is a team plus an independent
 * stream of operations: shmem_ctx_quiet completes only its own. Same-host
 * operations complete as they are issued, so a context only needs state of its
 * own when a remote transport is running (its own fabric counters).
 */
#include <pthread.h>
#include <stdlib.h>

#include "runtime.h"

static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static struct symi_ctx *live; /* created and not destroyed */

static void ctx_free(shmem_ctx_t ctx) {
    pthread_mutex_lock(&live_lock);
    if (ctx->prev) ctx->prev->next = ctx->next;
    else live = ctx->next;
    if (ctx->next) ctx->next->prev = ctx->prev;
    pthread_mutex_unlock(&live_lock);
    sym__ctx_quiet(ctx); /* destroying a context completes its operations */
    if (ctx->remote) sym__remote->ctx_destroy(ctx->remote);
    __atomic_fetch_sub(&ctx->team->n_ctx, 1, __ATOMIC_RELAXED);
    free(ctx);
}

int shmem_team_create_ctx(shmem_team_t team, long options, shmem_ctx_t *ctx) {
    SYM_REQUIRE_INIT("shmem_team_create_ctx");
    *ctx = SHMEM_CTX_INVALID;
    if (team == SHMEM_TEAM_INVALID || team->me < 0) return -1;
    /* Threads may create contexts at once (SHMEM_THREAD_MULTIPLE): the count is
     * taken atomically, and given back when the context cannot be made. */
    int had = __atomic_fetch_add(&team->n_ctx, 1, __ATOMIC_RELAXED);
    struct symi_ctx *c = NULL;
    if ((team->config_mask & SHMEM_TEAM_NUM_CONTEXTS) && had >= team->config.num_contexts)
        goto fail; /* the team was created promising fewer contexts */
    if (!(c = calloc(1, sizeof *c))) goto fail;
    c->team = team;
    c->options = options;
    if (sym__remote && sym__remote->ctx_create && !(c->remote = sym__remote->ctx_create(options)))
        goto fail;
    pthread_mutex_lock(&live_lock);
    c->next = live;
    if (live) live->prev = c;
    live = c;
    pthread_mutex_unlock(&live_lock);
    *ctx = c;
    return 0;
fail:
    free(c);
    __atomic_fetch_sub(&team->n_ctx, 1, __ATOMIC_RELAXED);
    return -1;
}

int shmem_ctx_create(long options, shmem_ctx_t *ctx) {
    return shmem_team_create_ctx(SHMEM_TEAM_WORLD, options, ctx);
}

void shmem_ctx_destroy(shmem_ctx_t ctx) {
    SYM_REQUIRE_INIT("shmem_ctx_destroy");
    if (ctx == SHMEM_CTX_INVALID) return;
    if (ctx == SHMEM_CTX_DEFAULT)
        sym__fatal("shmem_ctx_destroy", "SHMEM_CTX_DEFAULT cannot be destroyed");
    ctx_free(ctx);
}

void sym__ctx_fini_all(void) {
    while (live) ctx_free(live);
}

int shmem_ctx_get_team(shmem_ctx_t ctx, shmem_team_t *team) {
    SYM_REQUIRE_INIT("shmem_ctx_get_team");
    if (ctx == SHMEM_CTX_INVALID || !team) {
        if (team) *team = SHMEM_TEAM_INVALID;
        return -1;
    }
    *team = ctx->team;
    return 0;
}
