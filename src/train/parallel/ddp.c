/*
 * ddp.c — data parallelism: gradient buckets all-reduced while the backward
 * pass still runs (see symtrain/dist.h for the contract).
 *
 * Buckets are cut from the end of the gradient array towards its start, at
 * tensor boundaries, closing a bucket once it holds bucket_bytes; bucket 0
 * (the last layers, and the control floats after them) is started first. The
 * backward hook starts, in order, every bucket whose start lies at or above
 * the lowest finished offset; all PEs run the same backward, so they start the
 * same buckets in the same order, as the collectives require.
 */
#include <shmem.h>
#include <stdlib.h>
#include <string.h>

#include <symtrain/dist.h>

#include "util/util.h"
#include "internal.h"

typedef struct {
    size_t lo, hi;
    sym__req_t req;
} bucket_t;

struct sym_ddp {
    shmem_team_t team;
    float *grads;
    int npes; /* in the team */
    int nb, next; /* buckets, and the next one to start */
    bucket_t *b;
    int failed;   /* a start failed: finish reports it */
    sym_ddp_stats_t stats;
};

int sym_ddp_create(shmem_team_t team, float *grads, size_t count, const size_t *cuts,
                   int ncuts, size_t bucket_bytes, sym_ddp_t **out) {
    *out = NULL;
    if (ncuts < 1 || cuts[0] != 0)
        return sym__error(SYM_EINVAL, "ddp: tensor offsets must start at 0");
    sym_ddp_t *d = calloc(1, sizeof *d);
    if (!d || !(d->b = calloc((size_t)ncuts, sizeof *d->b))) {
        free(d);
        return sym__error(SYM_ENOMEM, "out of memory for the gradient buckets");
    }
    d->team = team;
    d->grads = grads;
    d->npes = shmem_team_n_pes(team);
    if (d->npes < 1) {
        sym_ddp_destroy(d);
        return sym__error(SYM_EINVAL, "ddp: this PE is not a member of the team");
    }
    if (bucket_bytes < sizeof(float)) bucket_bytes = sizeof(float);
    size_t hi = count;
    for (int c = ncuts - 1; c >= 0; c--) {
        size_t lo = cuts[c];
        if (c == 0 || (hi - lo) * sizeof(float) >= bucket_bytes) {
            d->b[d->nb++] = (bucket_t){lo, hi, NULL};
            hi = lo;
        }
    }
    d->stats.buckets = d->nb;
    if (d->npes > 1 && !shmem_addr_accessible(grads, shmem_team_translate_pe(team, 0, SHMEM_TEAM_WORLD))) {
        sym_ddp_destroy(d);
        return sym__error(SYM_EINVAL, "ddp: the gradients must be in symmetric memory");
    }
    *out = d;
    return SYM_OK;
}

void sym_ddp_destroy(sym_ddp_t *d) {
    if (!d) return;
    free(d->b);
    free(d);
}

void sym_ddp_begin(sym_ddp_t *d) {
    d->next = 0;
    d->failed = 0;
    d->stats.bytes_reduced = 0;
    d->stats.wait_s = 0;
    d->stats.issue_s = 0;
}

static void start(sym_ddp_t *d, bucket_t *b) {
    if (d->npes == 1 || d->failed) return; /* the average over one PE is itself */
    double t0 = sym__now_s();
    if (sym__comm_avg_start(d->team, d->grads + b->lo, b->hi - b->lo, &b->req)) {
        d->failed = 1;
        b->req = NULL;
    }
    d->stats.issue_s += sym__now_s() - t0;
    d->stats.bytes_reduced += (b->hi - b->lo) * sizeof(float);
}

void sym_ddp_ready(void *ddp, size_t lo) {
    sym_ddp_t *d = ddp;
    while (d->next < d->nb && d->b[d->next].lo >= lo) start(d, &d->b[d->next++]);
}

int sym_ddp_finish(sym_ddp_t *d) {
    while (d->next < d->nb) start(d, &d->b[d->next++]);
    if (d->npes == 1) return SYM_OK;
    double t0 = sym__now_s();
    int rc = d->failed ? SYM_ECOMM : SYM_OK;
    for (int i = 0; i < d->nb; i++)
        if (d->b[i].req) {
            int r = sym__comm_wait(d->b[i].req);
            d->b[i].req = NULL;
            if (r && !rc) rc = r;
        }
    d->stats.wait_s = sym__now_s() - t0;
    return rc;
}

int sym_ddp_num_buckets(const sym_ddp_t *d) { return d->nb; }

void sym_ddp_bucket(const sym_ddp_t *d, int b, size_t *lo, size_t *hi) {
    *lo = d->b[b].lo;
    *hi = d->b[b].hi;
}

sym_ddp_stats_t sym_ddp_stats(const sym_ddp_t *d) { return d->stats; }

int sym_allreduce_sum_f32(shmem_team_t team, float *x, size_t n) {
    if (shmem_team_n_pes(team) == 1) return SYM_OK;
    return sym__comm_sum(team, x, n);
}
