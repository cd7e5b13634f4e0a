/*
 * dist.c — the collective side of sharded checkpoints (see symtrain/ckpt.h):
 * every PE's writer thread writes its shard into one staging directory, the
 * PEs agree that all are written (an all-reduce, which is the barrier), and
 * PE 0 commits; on resume the PEs verify the newest checkpoint's files
 * together (1/N each) and agree before any of them uses it.
 *
 * The staging directory is DIR/.tmp-step-N.<PE 0's pid>: the same name on
 * every PE, and one PE 0's pruning recognises as its own.
 *
 * Every call here is collective over SHMEM_TEAM_WORLD and every PE makes the
 * same calls in the same order (a save is pending on all PEs or on none), so
 * no PE waits for a collective another never enters.
 */
#define _GNU_SOURCE
#include <limits.h>
#include <shmem.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt/ckpt_internal.h"
#include "util/util.h"

struct sym_ckpt_dist {
    char dir[PATH_MAX];
    char layout[64];
    int keep, me, npes;
    long token;                  /* PE 0's pid */
    sym_ckpt_writer_t *w;
    long long *sym;              /* symmetric: [0..3] source, [4..7] result */
    int pending, local_done, local_rc;
    char local_err[1024];
    char stage[64];
    long long pending_step;
    sym_ckpt_meta_t meta;        /* the pending save's (PE 0), shares and speeds owned */
    char last[PATH_MAX];
    int exit_pe;                 /* test hook: SYMTRAIN_TEST_CKPT_EXIT_AT=PE:STEP */
    long long exit_step;
    /* sym_ckpt_dist_save_later's: the slices (the caller's) and their ready call */
    const sym_ckpt_slice_t *later;
    int nlater;
    int (*ready)(void *);
    void *ready_user;
};

/* out[i] = the sum over PEs of v[i] (n <= 4). */
static void sum_all(long long *sym, const long long *v, long long *out, int n) {
    memcpy(sym, v, sizeof *v * (size_t)n);
    shmem_longlong_sum_reduce(SHMEM_TEAM_WORLD, sym + 4, sym, (size_t)n);
    memcpy(out, sym + 4, sizeof *out * (size_t)n);
}

int sym_ckpt_dist_create(const char *dir, int keep, const char *layout, sym_ckpt_dist_t **out) {
    *out = NULL;
    sym_ckpt_dist_t *d = calloc(1, sizeof *d);
    long long *sym = shmem_calloc(8, sizeof(long long)); /* collective: before any return */
    if (!d || !sym) {
        free(d);
        if (sym) shmem_free(sym);
        return sym__error(SYM_ENOMEM, "out of memory for the sharded checkpoint writer");
    }
    d->sym = sym;
    snprintf(d->dir, sizeof d->dir, "%s", dir);
    snprintf(d->layout, sizeof d->layout, "%s", layout);
    d->keep = keep < 1 ? 1 : keep;
    d->me = shmem_my_pe();
    d->npes = shmem_n_pes();
    d->exit_pe = -1;
    const char *hook = getenv("SYMTRAIN_TEST_CKPT_EXIT_AT");
    const char *restart = getenv("SYMTRAIN_RESTART_COUNT");
    if (hook && (!restart || !strcmp(restart, "0")) &&
        sscanf(hook, "%d:%lld", &d->exit_pe, &d->exit_step) != 2)
        d->exit_pe = -1;
    long long v[2] = {d->me == 0 ? (long long)getpid() : 0, 0}, r[2];
    int rc = sym_ckpt_writer_create(dir, keep, &d->w);
    v[1] = rc != 0;
    sum_all(d->sym, v, r, 2);
    d->token = (long)r[0];
    if (rc || r[1]) {
        sym_ckpt_writer_destroy(d->w);
        shmem_free(d->sym);
        free(d);
        return rc ? rc : sym__error(SYM_EIO, "another PE could not create %s", dir);
    }
    *out = d;
    return SYM_OK;
}

/* Keep a copy of PE 0's meta for the commit (its arrays owned here). */
static int keep_meta(sym_ckpt_dist_t *d, const sym_ckpt_meta_t *m) {
    free(d->meta.shares);
    free(d->meta.speeds);
    d->meta = *m;
    d->meta.tensors = NULL;
    d->meta.ntensors = 0;
    d->meta.shares = NULL;
    d->meta.speeds = NULL;
    if (m->nshares > 0) {
        d->meta.shares = malloc(sizeof *m->shares * (size_t)m->nshares);
        d->meta.speeds = malloc(sizeof *m->speeds * (size_t)m->nshares);
        if (!d->meta.shares || !d->meta.speeds) {
            d->meta.nshares = 0;
            return sym__error(SYM_ENOMEM, "out of memory for a checkpoint's shares");
        }
        memcpy(d->meta.shares, m->shares, sizeof *m->shares * (size_t)m->nshares);
        memcpy(d->meta.speeds, m->speeds, sizeof *m->speeds * (size_t)m->nshares);
    }
    return SYM_OK;
}

/* This PE's shard files of n slices: the data file (malloc'd) and its index. */
static int shard_files(const sym_ckpt_dist_t *d, const sym_ckpt_slice_t *slices, int n,
                       sym_ckpt_file_t *files) {
    void *bin = NULL;
    size_t len = 0;
    sym_jbuf_t index = {0};
    int rc = sym__ckpt_shard_files(d->me, slices, n, &bin, &len, &index);
    if (rc) {
        free(bin);
        sym__jbuf_free(&index);
        return rc;
    }
    memset(files, 0, 2 * sizeof *files);
    snprintf(files[0].name, sizeof files[0].name, "shard-%05d.bin", d->me);
    snprintf(files[1].name, sizeof files[1].name, "shard-%05d.json", d->me);
    files[0].data = bin;
    files[0].size = len;
    files[1].data = index.buf;
    files[1].size = index.len;
    return SYM_OK;
}

/* On the writer thread: the slices' data ready, then the shard files. */
static int build_later(void *user, sym_ckpt_file_t *files, int *n) {
    sym_ckpt_dist_t *d = user;
    int rc = d->ready ? d->ready(d->ready_user) : SYM_OK;
    if (!rc) rc = shard_files(d, d->later, d->nlater, files);
    *n = rc ? 0 : 2;
    return rc;
}

/* A save's start (now: its shard files made here; else on the writer thread). */
static int start_save(sym_ckpt_dist_t *d, const sym_ckpt_meta_t *meta,
                      const sym_ckpt_slice_t *slices, int n, int now) {
    int prev = d->pending ? sym_ckpt_dist_poll(d, 1) : SYM_OK;
    char prev_err[1024];
    snprintf(prev_err, sizeof prev_err, "%s", prev ? sym_last_error() : "");
    snprintf(d->stage, sizeof d->stage, ".tmp-step-%08lld.%ld", (long long)meta->step, d->token);
    int rc = d->me == 0 ? keep_meta(d, meta) : SYM_OK;
    if (!rc && now) {
        sym_ckpt_file_t files[2];
        rc = shard_files(d, slices, n, files);
        if (!rc) {
            rc = sym__ckpt_save_files(d->w, d->stage, files, 2); /* nothing pending: 0 */
            free((void *)files[1].data);                           /* copied; [0] is the writer's */
        }
    } else if (!rc) {
        d->later = slices;
        d->nlater = n;
        rc = sym__ckpt_save_shard_later(d->w, d->stage, build_later, d);
    }
    /* Pending on every PE alike: a PE that could not even start its shard
     * says so at the poll, and the save is dropped everywhere. */
    d->pending = 1;
    d->pending_step = meta->step;
    d->local_done = rc != 0;
    d->local_rc = rc;
    if (rc) snprintf(d->local_err, sizeof d->local_err, "%s", sym_last_error());
    if (prev) return sym__error(prev, "%s", prev_err);
    return SYM_OK;
}

int sym_ckpt_dist_save(sym_ckpt_dist_t *d, const sym_ckpt_meta_t *meta,
                       const sym_ckpt_slice_t *slices, int n) {
    return start_save(d, meta, slices, n, 1);
}

int sym_ckpt_dist_save_later(sym_ckpt_dist_t *d, const sym_ckpt_meta_t *meta,
                             const sym_ckpt_slice_t *slices, int n, int (*ready)(void *),
                             void *user) {
    d->ready = ready;
    d->ready_user = user;
    return start_save(d, meta, slices, n, 0);
}

int sym_ckpt_dist_poll(sym_ckpt_dist_t *d, int wait) {
    if (!d->pending) return SYM_OK;
    if (!d->local_done && (wait || !sym__ckpt_busy(d->w))) {
        d->local_rc = sym_ckpt_wait(d->w);
        if (d->local_rc) snprintf(d->local_err, sizeof d->local_err, "%s", sym_last_error());
        d->local_done = 1;
    }
    /* Test hook: this PE's shard is written and fsync'd; the job dies before
     * the commit, the way a machine fails mid-checkpoint. */
    if (d->local_done && d->me == d->exit_pe && d->pending_step == d->exit_step) raise(SIGKILL);
    long long v[2] = {d->local_done, d->local_done && d->local_rc != 0}, r[2];
    sum_all(d->sym, v, r, 2);
    if (r[0] < d->npes) return SYM_OK; /* someone is still writing */
    d->pending = 0;
    int rc = SYM_OK;
    if (r[1]) {
        if (d->me == 0) sym__ckpt_remove(d->dir, d->stage, NULL, 0);
        if (d->local_rc)
            rc = sym__error(d->local_rc, "PE %d: %s", d->me, d->local_err);
        else if (d->me == 0)
            rc = sym__error(SYM_EIO, "the checkpoint of step %lld was not committed: %lld PE(s) "
                            "could not write their shards (they said why)",
                            d->pending_step, r[1]);
        return rc;
    }
    if (d->me == 0)
        rc = sym__ckpt_commit(d->dir, d->stage, d->keep, &d->meta, d->npes, d->layout, d->last,
                              sizeof d->last);
    /* No PE writes the next save's shards during PE 0's commit: on a disk
     * near full they could take the room its manifest needs. */
    shmem_barrier_all();
    return rc;
}

const char *sym_ckpt_dist_last_path(const sym_ckpt_dist_t *d) { return d->last; }

int sym__ckpt_dist_pending(const sym_ckpt_dist_t *d) { return d->pending; }

int sym__ckpt_dist_local_failed(const sym_ckpt_dist_t *d) { return d->local_rc != 0; }

sym_ckpt_stats_t sym_ckpt_dist_stats(sym_ckpt_dist_t *d) { return sym_ckpt_writer_stats(d->w); }

void sym_ckpt_dist_destroy(sym_ckpt_dist_t *d) {
    if (!d) return;
    sym_ckpt_writer_destroy(d->w);
    shmem_free(d->sym);
    free(d->meta.shares);
    free(d->meta.speeds);
    free(d);
}

/* ---- the newest good checkpoint, every PE together ---- */

int sym_dckpt_open_latest(const char *dir, sym_dckpt_t **out,
                          void (*report)(void *user, const char *msg), void *user) {
    *out = NULL;
    int me = shmem_my_pe(), npes = shmem_n_pes();
    long long *sym = shmem_calloc(8, sizeof(long long));
    if (!sym) return sym__error(SYM_ENOMEM, "symmetric heap exhausted opening %s", dir);
    /* PE 0's listing decides which checkpoints there are, for everyone. */
    int64_t *steps = NULL;
    int n = 0;
    int lrc = me == 0 ? sym__ckpt_list_steps(dir, &steps, &n) : SYM_OK;
    long long v[4] = {me == 0 ? n : 0, me == 0 && lrc ? lrc : 0, 0, 0}, r[4];
    sum_all(sym, v, r, 2);
    n = (int)r[0];
    int rc = (int)r[1], bad = 0;
    if (rc == SYM_ENOENT) {
        rc = sym__error(SYM_ENOENT, "%s does not exist", dir);
        n = 0;
    } else if (rc) {
        char why[1024];
        snprintf(why, sizeof why, "%s", me == 0 ? sym_last_error() : "PE 0 cannot list them");
        free(steps);
        shmem_free(sym);
        return sym__error(rc, "%s", why);
    } else {
        rc = SYM_ENOENT;
    }
    for (int i = 0; i < n; i++) {
        v[0] = me == 0 ? steps[i] : 0;
        sum_all(sym, v, r, 1);
        char path[PATH_MAX], msg[PATH_MAX + 1536];
        snprintf(path, sizeof path, "%s/step-%08lld", dir, r[0]);
        /* This PE's share of the files: each is read whole, its CRC32C checked. */
        sym_dckpt_t *ck = NULL;
        int c = sym__dckpt_check(path, r[0], me, npes, &ck);
        char err[1024];
        snprintf(err, sizeof err, "%s", c ? sym_last_error() : "");
        long long w[4] = {c == SYM_ECORRUPT, c && c != SYM_ECORRUPT && c != SYM_ENOENT,
                          c == SYM_ENOENT, 0};
        sum_all(sym, w, r, 3);
        /* one message: from the lowest PE that found damage */
        sym[0] = c == SYM_ECORRUPT ? me : npes;
        shmem_longlong_min_reduce(SHMEM_TEAM_WORLD, sym + 4, sym, 1);
        int teller = (int)sym[4];
        if (!r[0] && !r[1] && !r[2]) {
            *out = ck;
            rc = SYM_OK;
            break;
        }
        sym_dckpt_close(ck);
        if (r[1]) { /* unreadable is not damaged: it may be the good one */
            rc = sym__error(SYM_EIO, "checkpoint %s cannot be read (%s), so it cannot be checked: "
                            "nothing older is taken in its place; make it readable and run again",
                            path, c && c != SYM_ECORRUPT ? err : "on another PE, which said why");
            if (c && c != SYM_ECORRUPT && report) report(user, sym_last_error());
            break;
        }
        if (!r[0]) continue; /* removed since it was listed */
        bad++;
        if (c == SYM_ECORRUPT && me == teller && report) {
            int len = snprintf(msg, sizeof msg, "checkpoint %s is damaged: %s; %s (symtrain ckpt "
                               "verify %s names every damaged file)", path, err,
                               i + 1 < n ? "using the one before it"
                                         : "no older checkpoint is left: restore the file from a "
                                           "copy",
                               path);
            if (len > 0) report(user, msg);
        }
    }
    free(steps);
    shmem_free(sym);
    if (rc == SYM_OK || (rc != SYM_ECORRUPT && rc != SYM_ENOENT)) return rc;
    if (bad)
        return sym__error(SYM_ECORRUPT, "%s holds no usable checkpoint (%d damaged)", dir, bad);
    return sym__error(SYM_ENOENT, "%s holds no checkpoint", dir);
}
