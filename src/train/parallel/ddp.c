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
 *
 * Sharded (ZeRO, sym_ddp_shard): the same buckets, each reduce-scattered
 * instead: this PE receives its block of every bucket, averaged, into one
 * packed shard; with release (ZeRO-2) a reduced bucket's pages of the full
 * gradient array go back to the OS as soon as its reduce-scatter completes.
 */
#include <shmem.h>
#include <shmemx.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <symtrain/dist.h>

#include "util/util.h"
#include "internal.h"

typedef struct {
    size_t lo, hi;
    sym__req_t req;
    size_t shard_off;       /* sharded: where this PE's block lands in the shard */
    char *freed, *freed_end; /* ZeRO-2: the pages of grads handed back (none: equal) */
} bucket_t;

struct sym_ddp {
    shmem_team_t team;
    float *grads;
    int npes; /* in the team */
    int nb, next; /* buckets, and the next one to start */
    bucket_t *b;
    int failed;   /* a start failed: finish reports it */
    float *shard; /* non-NULL: reduce-scatter into it (ZeRO) instead of all-reducing */
    int release;  /* ZeRO-2: hand a bucket's pages back once it is reduced */
    int reaped;   /* buckets [0, reaped) are complete and released */
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
            d->b[d->nb++] = (bucket_t){.lo = lo, .hi = hi};
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
    d->reaped = 0;
    d->failed = 0;
    d->stats.bytes_reduced = 0;
    d->stats.bytes_released = 0;
    d->stats.wait_s = 0;
    d->stats.issue_s = 0;
}

static void start(sym_ddp_t *d, bucket_t *b) {
    if (d->failed || (d->npes == 1 && !d->shard)) return; /* the average over one PE is itself */
    double t0 = sym__now_s();
    int rc = d->shard ? sym__comm_avg_scatter_start(d->team, d->grads + b->lo, b->hi - b->lo,
                                                    d->shard + b->shard_off, &b->req)
                      : sym__comm_avg_start(d->team, d->grads + b->lo, b->hi - b->lo, &b->req);
    if (rc) {
        d->failed = 1;
        b->req = NULL;
    }
    d->stats.issue_s += sym__now_s() - t0;
    d->stats.bytes_reduced += (b->hi - b->lo) * sizeof(float);
}

/* ZeRO-2: bucket b is reduced (every member has read it), so the pages
 * lying wholly inside its part of grads go back to the OS. MADV_REMOVE frees
 * the shared memory file's pages under them (the symmetric heap is a shared
 * mapping every local PE maps); they read as zero when touched again. Where
 * the mapping cannot (another transport), nothing is freed, and
 * sym_ddp_zero_grads zeroes the whole array as before. */
static void release(sym_ddp_t *d, bucket_t *b) {
    if (!d->release) return;
    uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t a = ((uintptr_t)(d->grads + b->lo) + pg - 1) & ~(pg - 1);
    uintptr_t e = (uintptr_t)(d->grads + b->hi) & ~(pg - 1);
    if (e <= a) return;
    if (madvise((void *)a, e - a, MADV_REMOVE)) {
        d->release = 0;
        return;
    }
    b->freed = (char *)a;
    b->freed_end = (char *)e;
    d->stats.bytes_released += e - a;
}

/* Buckets complete in launch order (one progress thread runs them): reap the
 * finished ones from the front; block: wait for each. */
static int reap(sym_ddp_t *d, int block) {
    int rc = SYM_OK;
    while (d->reaped < d->next) {
        bucket_t *b = &d->b[d->reaped];
        if (b->req) {
            int done = 1;
            if (!block && sym__comm_test(b->req, &done)) done = 1; /* failed: wait reports it */
            if (!done) break;
            int r = sym__comm_wait(b->req);
            b->req = NULL;
            if (r && !rc) rc = r;
            if (!r) release(d, b);
        }
        d->reaped++;
    }
    return rc;
}

void sym_ddp_ready(void *ddp, size_t lo) {
    sym_ddp_t *d = ddp;
    while (d->next < d->nb && d->b[d->next].lo >= lo) start(d, &d->b[d->next++]);
    if (d->release && reap(d, 0)) d->failed = 1;
}

int sym_ddp_finish(sym_ddp_t *d) {
    while (d->next < d->nb) start(d, &d->b[d->next++]);
    if (d->npes == 1 && !d->shard) return SYM_OK;
    double t0 = sym__now_s();
    int rc = reap(d, 1);
    if (d->failed && !rc) rc = SYM_ECOMM;
    d->stats.wait_s = sym__now_s() - t0;
    return rc;
}

/* ---- sharded (ZeRO) ---- */

int sym_ddp_shard(sym_ddp_t *d, float *shard, int release_pages) {
    d->shard = shard;
    d->release = release_pages;
    size_t at = 0;
    for (int i = 0; i < d->nb; i++) {
        d->b[i].shard_off = at;
        at += sym_ddp_block(d, i, shmem_team_my_pe(d->team), NULL);
    }
    return SYM_OK;
}

size_t sym_ddp_block(const sym_ddp_t *d, int b, int pe, size_t *shard_off) {
    size_t off, len, at = 0;
    for (int i = 0; i <= b; i++) {
        shmemx_block_range(d->b[i].hi - d->b[i].lo, d->npes, pe, &off, &len);
        if (i < b) at += len;
    }
    if (shard_off) *shard_off = at;
    return len;
}

size_t sym_ddp_shard_len(const sym_ddp_t *d, int pe) {
    size_t at;
    size_t len = sym_ddp_block(d, d->nb - 1, pe, &at);
    return at + len;
}

void sym_ddp_zero_grads(sym_ddp_t *d) {
    /* every bucket's part of grads but the pages handed back (already zero) */
    for (int i = 0; i < d->nb; i++) {
        bucket_t *b = &d->b[i];
        char *lo = (char *)(d->grads + b->lo), *hi = (char *)(d->grads + b->hi);
        if (b->freed_end > b->freed) {
            memset(lo, 0, (size_t)(b->freed - lo));
            memset(b->freed_end, 0, (size_t)(hi - b->freed_end));
        } else {
            memset(lo, 0, (size_t)(hi - lo));
        }
        b->freed = b->freed_end = NULL;
    }
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
