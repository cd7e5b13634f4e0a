/*
 * comm.c — the one file of the training stack that calls the training
 * collectives (shmemx_allreduce and friends, src/coll): the models, the
 * trainer, the balancer and the distributed tensors see these calls and never
 * a transport. The uneven collectives of the distributed tensors
 * (all-gather-v, all-to-all-v, reduce-scatter-v) are here too, written on
 * one-sided reads of symmetric buffers, since shmemx's split their counts by
 * their own rule.
 */
#include <shmem.h>
#include <shmemx.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* x (n floats) = op over the team, in place, started. */
static int allreduce_start(shmem_team_t team, float *x, size_t n, shmemx_op_t op,
                           sym__req_t *req) {
    int rc = shmemx_allreduce_nb(team, x, x, n, SHMEMX_FLOAT32, op, req);
    if (rc)
        return sym__error(SYM_ECOMM, "shmemx_allreduce_nb (%s) of %zu floats failed: %s",
                          op == SHMEMX_AVG ? "average" : "sum", n, shmemx_strerror(rc));
    return SYM_OK;
}

int sym__comm_avg_start(shmem_team_t team, float *x, size_t n, sym__req_t *req) {
    return allreduce_start(team, x, n, SHMEMX_AVG, req);
}

int sym__comm_sum_start(shmem_team_t team, float *x, size_t n, sym__req_t *req) {
    return allreduce_start(team, x, n, SHMEMX_SUM, req);
}

int sym__comm_avg_scatter_start(shmem_team_t team, const float *x, size_t n, float *block,
                                sym__req_t *req) {
    int rc = shmemx_reduce_scatter_nb(team, block, x, n, SHMEMX_FLOAT32, SHMEMX_AVG, req);
    if (rc)
        return sym__error(SYM_ECOMM, "shmemx_reduce_scatter_nb of %zu floats failed: %s", n,
                          shmemx_strerror(rc));
    return SYM_OK;
}

int sym__comm_test(sym__req_t req, int *done) {
    int rc = shmemx_req_test(req, done);
    return rc == SHMEMX_EBUSY ? SYM_OK : rc ? SYM_ECOMM : SYM_OK;
}

int sym__comm_wait(sym__req_t req) {
    int rc = shmemx_req_wait(req);
    shmemx_req_free(req); /* wait completes a request; free releases it */
    if (rc)
        return sym__error(SYM_ECOMM, "a non-blocking reduction failed: %s",
                          shmemx_strerror(rc));
    return SYM_OK;
}

/* Blocking all-reduces in place over a team, of symmetric or private vectors
 * (the tensor-parallel GPT's activations and the vocabulary-parallel
 * cross-entropy's row statistics, gradient norms). */
static int allreduce(shmem_team_t team, void *x, size_t n, shmemx_dtype_t dt, shmemx_op_t op,
                     const char *what) {
    int rc = shmemx_allreduce(team, x, x, n, dt, op);
    if (rc)
        return sym__error(SYM_ECOMM, "shmemx_allreduce (%s) of %zu values failed: %s", what, n,
                          shmemx_strerror(rc));
    return SYM_OK;
}

int sym__comm_sum(shmem_team_t team, float *x, size_t n) {
    return allreduce(team, x, n, SHMEMX_FLOAT32, SHMEMX_SUM, "sum");
}

int sym__comm_sum_f64(shmem_team_t team, double *x, size_t n) {
    return allreduce(team, x, n, SHMEMX_FLOAT64, SHMEMX_SUM, "sum");
}

int sym__comm_max_f32(shmem_team_t team, float *x, size_t n) {
    return allreduce(team, x, n, SHMEMX_FLOAT32, SHMEMX_MAX, "max");
}

int sym__comm_min_i32(shmem_team_t team, int32_t *x, size_t n) {
    return allreduce(team, x, n, SHMEMX_INT32, SHMEMX_MIN, "min");
}

int sym__comm_max_i64(shmem_team_t team, int64_t *x, size_t n) {
    return allreduce(team, x, n, SHMEMX_INT64, SHMEMX_MAX, "max");
}

/* ---- uneven collectives over symmetric buffers (the distributed tensors) ---- */

static int team_sync(shmem_team_t team) {
    if (shmem_team_sync(team))
        return sym__error(SYM_ECOMM, "shmem_team_sync failed (this PE is not in the team)");
    return SYM_OK;
}

/* Member k's world PE number. */
static int world_pe(shmem_team_t team, int k) {
    return shmem_team_translate_pe(team, k, SHMEM_TEAM_WORLD);
}

int sym__comm_pullv(shmem_team_t team, const void *buf, const size_t *off, const size_t *len,
                    void *dst) {
    int n = shmem_team_n_pes(team), me = shmem_team_my_pe(team), rc = team_sync(team);
    if (rc) return rc;
    size_t *at = malloc((size_t)n * sizeof *at); /* where member k's bytes land in dst */
    if (!at) return sym__error(SYM_ENOMEM, "pullv: out of memory");
    for (int k = 0; k < n; k++) at[k] = k ? at[k - 1] + len[k - 1] : 0;
    for (int i = 0; i < n; i++) {
        int k = (me + i) % n; /* ourselves first, then spread over the peers */
        if (!len[k]) continue;
        const char *src = (const char *)buf + off[k];
        if (k == me)
            memcpy((char *)dst + at[k], src, len[k]);
        else
            shmem_getmem((char *)dst + at[k], src, len[k], world_pe(team, k));
    }
    free(at);
    return team_sync(team);
}

int sym__comm_pull_ranges_f32(shmem_team_t team, float *x, int n, const size_t *lo,
                              const size_t *len, const int *owner) {
    int me = shmem_team_my_pe(team), rc = team_sync(team);
    if (rc) return rc;
    for (int i = 0; i < n; i++)
        if (owner[i] != me && len[i])
            shmem_getmem(x + lo[i], x + lo[i], len[i] * sizeof *x, world_pe(team, owner[i]));
    return team_sync(team);
}

int sym__comm_reduce_pull_f32(shmem_team_t team, const float *buf, size_t off, size_t n,
                              float *dst) {
    enum { CHUNK = 4096 }; /* floats per pass: every peer's piece of it stays in cache */
    int np = shmem_team_n_pes(team), rc = team_sync(team);
    if (rc) return rc;
    const float **peer = malloc((size_t)np * sizeof *peer);
    float *tmp = NULL; /* a fetched piece, for peers not mapped here (other hosts) */
    if (!peer) return sym__error(SYM_ENOMEM, "reduce-scatter: out of memory");
    for (int k = 0; k < np && n; k++) {
        peer[k] = shmem_ptr(buf + off, world_pe(team, k));
        if (!peer[k] && !tmp && !(tmp = malloc(CHUNK * sizeof *tmp))) {
            free(peer);
            return sym__error(SYM_ENOMEM, "reduce-scatter: out of memory");
        }
    }
    for (size_t lo = 0; lo < n; lo += CHUNK) {
        size_t m = n - lo < CHUNK ? n - lo : CHUNK;
        float *d = dst + lo;
        for (int k = 0; k < np; k++) { /* in team order: the same sum on every PE */
            const float *src = peer[k] ? peer[k] + lo : tmp;
            if (!peer[k]) shmem_getmem(tmp, buf + off + lo, m * sizeof *tmp, world_pe(team, k));
            if (k == 0)
                memcpy(d, src, m * sizeof *d);
            else
                for (size_t i = 0; i < m; i++) d[i] += src[i];
        }
    }
    free(peer);
    free(tmp);
    return team_sync(team);
}
int sym__comm_allgather_f64(shmem_team_t team, double *dest, const double *src, size_t n) {
    int rc = shmemx_allgather(team, dest, src, n, SHMEMX_FLOAT64);
    if (rc)
        return sym__error(SYM_ECOMM, "shmemx_allgather of %zu doubles per PE failed: %s", n,
                          shmemx_strerror(rc));
    return SYM_OK;
}
