/*
 * comm.c — the one file of the training stack that calls the training
 * collectives (shmemx_allreduce and friends, src/coll): the models, the
 * trainer and the balancer see these calls and never a transport.
 */
#include <shmem.h>
#include <shmemx.h>

#include "internal.h"

int sym__comm_avg_start(shmem_team_t team, float *x, size_t n, sym__req_t *req) {
    int rc = shmemx_allreduce_nb(team, x, x, n, SHMEMX_FLOAT32, SHMEMX_AVG, req);
    if (rc)
        return sym__error(SYM_ECOMM, "shmemx_allreduce_nb of %zu floats failed: %s", n,
                          shmemx_strerror(rc));
    return SYM_OK;
}

int sym__comm_wait(sym__req_t req) {
    int rc = shmemx_req_wait(req);
    shmemx_req_free(req); /* wait completes a request; free releases it */
    if (rc)
        return sym__error(SYM_ECOMM, "an all-reduce of the gradients failed: %s",
                          shmemx_strerror(rc));
    return SYM_OK;
}

int sym__comm_sum(shmem_team_t team, float *x, size_t n) {
    int rc = shmemx_allreduce(team, x, x, n, SHMEMX_FLOAT32, SHMEMX_SUM);
    if (rc)
        return sym__error(SYM_ECOMM, "shmemx_allreduce of %zu floats failed: %s", n,
                          shmemx_strerror(rc));
    return SYM_OK;
}

int sym__comm_allgather_f64(shmem_team_t team, double *dest, const double *src, size_t n) {
    int rc = shmemx_allgather(team, dest, src, n, SHMEMX_FLOAT64);
    if (rc)
        return sym__error(SYM_ECOMM, "shmemx_allgather of %zu doubles per PE failed: %s", n,
                          shmemx_strerror(rc));
    return SYM_OK;
}
