/*
 * ctx.c — communication contexts. A context is a team plus an independent
 * stream of operations: shmem_ctx_quiet completes only its own. Same-host
 * operations complete as they are issued, so a context only needs state of its
 * own when a remote transport is running (its own fabric counters).
 */
#include <stdlib.h>

#include "runtime.h"

int shmem_team_create_ctx(shmem_team_t team, long options, shmem_ctx_t *ctx) {
    SYM_REQUIRE_INIT("shmem_team_create_ctx");
    *ctx = SHMEM_CTX_INVALID;
    if (team == SHMEM_TEAM_INVALID || team->me < 0) return -1;
    if ((team->config_mask & SHMEM_TEAM_NUM_CONTEXTS) && team->n_ctx >= team->config.num_contexts)
        return -1; /* the team was created promising fewer contexts */
    struct symi_ctx *c = calloc(1, sizeof *c);
    if (!c) return -1;
    c->team = team;
    c->options = options;
    if (sym__remote && sym__remote->ctx_create && !(c->remote = sym__remote->ctx_create(options))) {
        free(c);
        return -1;
    }
    team->n_ctx++;
    *ctx = c;
    return 0;
}

int shmem_ctx_create(long options, shmem_ctx_t *ctx) {
    return shmem_team_create_ctx(SHMEM_TEAM_WORLD, options, ctx);
}

void shmem_ctx_destroy(shmem_ctx_t ctx) {
    SYM_REQUIRE_INIT("shmem_ctx_destroy");
    if (ctx == SHMEM_CTX_INVALID) return;
    if (ctx == SHMEM_CTX_DEFAULT)
        sym__fatal("shmem_ctx_destroy", "SHMEM_CTX_DEFAULT cannot be destroyed");
    sym__ctx_quiet(ctx); /* destroying a context completes its operations */
    if (ctx->remote) sym__remote->ctx_destroy(ctx->remote);
    ctx->team->n_ctx--;
    free(ctx);
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
