/*
 * zero.c — sharded data parallelism, ZeRO stages 1 and 2 (see
 * symtrain/zero.h for the contract).
 *
 * This PE's shard is its block of every gradient bucket, packed one after
 * another in bucket order (sym_ddp_block); the same packing holds its
 * gradient shard (private: the reduce-scatters' destination) and the
 * optimizer state (symmetric, sized for the largest shard, so that PE 0 can
 * read it for a checkpoint). The update writes straight into the model's
 * (symmetric) parameters, one optimizer per block over its stretch of them
 * and of the state, all stepping together; the all-gather is every PE
 * pulling the other blocks from their owners' parameters. Weight decay
 * follows the parameter table: each no-decay tensor's overlap with each
 * block, in the block's coordinates.
 *
 * Inside a mesh (tp, pp) the team is the dp team of this PE's part of the
 * model: its tp slice of its stage's parameters, whose size differs between
 * PEs; the symmetric state is then sized for the largest shard of the job,
 * so that it lands at one offset everywhere. The clipping norm counts each
 * element of the whole model once: this PE's shard adds the squares of the
 * tensors it counts (sym_zero_norm_over), the dp team sums them, and the
 * tp and pp teams sum those.
 */
#include <math.h>
#include <shmem.h>
#include <shmemx.h>
#include <stdlib.h>
#include <string.h>

#include <symtrain/zero.h>

#include "internal.h"

#define CTRL_MAX SYM_GRAD_CTRL
#define CTRL_SLOTS (CTRL_MAX + 1) /* the control floats, then the sum of squares */

struct sym_zero {
    int npes, me, nb;
    shmem_team_t team;
    sym_optim_config_t cfg;
    size_t P, S;       /* parameters; this PE's shard */
    size_t *blk;       /* (nb, npes, 3): bucket b, member k: full offset, length, shard offset */
    float *gs;         /* (S) private: the averaged gradient shard */
    float *st[2];      /* (Smax) symmetric: momentum, or m and v */
    sym_optim_t **opt; /* (nb) bucket b's block: its parameters, gs and st stretches */
    double *ctrl;      /* symmetric: CTRL_SLOTS, then the team's (npes * CTRL_SLOTS) */
    size_t *lo, *len;  /* (nb * npes) the all-gather's ranges, and their owners */
    int *owner;
    int nt;
    size_t *toff, *tlen; /* (nt) the parameter table's tensors: offset, elements */
    size_t *cnt;         /* (ncnt, 2) the shard's stretches [at, at + len) the norm counts */
    int ncnt;
    shmem_team_t over[2]; /* the dp team's sum of squares is summed over these (tp, pp) */
    int nover;
};

static size_t *blk(const sym_zero_t *z, int b, int k) {
    return z->blk + ((size_t)b * (size_t)z->npes + (size_t)k) * 3;
}

static int nstate(const sym_zero_t *z) { return z->cfg.kind == SYM_OPT_ADAMW ? 2 : 1; }

/* ---- life cycle ---- */

int sym_zero_create(int stage, sym_ddp_t *ddp, shmem_team_t team, const sym_optim_config_t *cfg,
                    size_t P, const sym_param_t *table, int nt, sym_zero_t **out) {
    *out = NULL;
    if (stage != 1 && stage != 2)
        return sym__error(SYM_EINVAL, "--zero %d: use 0 (plain data parallelism), 1 or 2", stage);
    sym_zero_t *z = calloc(1, sizeof *z);
    if (!z) return sym__error(SYM_ENOMEM, "out of memory for ZeRO");
    z->team = team;
    z->cfg = *cfg;
    z->P = P;
    z->npes = shmem_team_n_pes(team);
    z->me = shmem_team_my_pe(team);
    z->nb = sym_ddp_num_buckets(ddp);
    int rc = SYM_OK;
    size_t smax = 0;
    size_t nr = (size_t)z->nb * (size_t)z->npes;
    z->blk = malloc(nr * 3 * sizeof *z->blk);
    z->lo = malloc(nr * sizeof *z->lo);
    z->len = malloc(nr * sizeof *z->len);
    z->owner = malloc(nr * sizeof *z->owner);
    z->opt = calloc((size_t)z->nb, sizeof *z->opt);
    z->nt = nt;
    z->toff = malloc((size_t)(nt > 0 ? nt : 1) * sizeof *z->toff);
    z->tlen = malloc((size_t)(nt > 0 ? nt : 1) * sizeof *z->tlen);
    z->cnt = malloc(2 * sizeof *z->cnt);
    if (!z->blk || !z->lo || !z->len || !z->owner || !z->opt || !z->toff || !z->tlen || !z->cnt) {
        rc = sym__error(SYM_ENOMEM, "out of memory for ZeRO");
        goto fail;
    }
    for (int b = 0; b < z->nb; b++) {
        size_t lo, hi;
        sym_ddp_bucket(ddp, b, &lo, &hi);
        for (int k = 0; k < z->npes; k++) {
            size_t *e = blk(z, b, k), boff, blen;
            shmemx_block_range(hi - lo, z->npes, k, &boff, &blen);
            e[0] = lo + boff;
            e[1] = sym_ddp_block(ddp, b, k, &e[2]);
            size_t i = (size_t)b * (size_t)z->npes + (size_t)k;
            z->lo[i] = e[0];
            z->len[i] = e[1];
            z->owner[i] = k;
        }
    }
    for (int k = 0; k < z->npes; k++) {
        size_t s = sym_ddp_shard_len(ddp, k);
        if (s > smax) smax = s;
    }
    z->S = sym_ddp_shard_len(ddp, z->me);
    for (int i = 0; i < nt; i++) {
        z->toff[i] = table[i].offset;
        z->tlen[i] = table[i].numel;
    }
    z->cnt[0] = 0; /* the norm counts the whole shard (sym_zero_norm_over says otherwise) */
    z->cnt[1] = z->S;
    z->ncnt = 1;
    /* Collective, the same sizes on every PE: inside a mesh the dp teams' parts
     * of the model differ (tp slices, pp stages), so the largest of the job. */
    int64_t big = (int64_t)smax;
    if ((rc = sym__comm_max_i64(SHMEM_TEAM_WORLD, &big, 1))) goto fail;
    smax = (size_t)big;
    z->st[0] = shmem_calloc(smax ? smax : 1, sizeof(float));
    z->st[1] = nstate(z) == 2 ? shmem_calloc(smax ? smax : 1, sizeof(float)) : NULL;
    z->ctrl = shmem_malloc((size_t)(1 + z->npes) * CTRL_SLOTS * sizeof(double));
    z->gs = malloc((z->S ? z->S : 1) * sizeof(float));
    if (!z->st[0] || (nstate(z) == 2 && !z->st[1]) || !z->ctrl || !z->gs) {
        rc = sym__error(SYM_ENOMEM, "ZeRO: no room for the optimizer state of a shard of %zu "
                        "parameters (it is symmetric); raise SYMTRAIN_SYMMETRIC_SIZE", smax);
        goto fail;
    }
    for (int b = 0; b < z->nb && !rc; b++) {
        const size_t *e = blk(z, b, z->me);
        rc = sym_optim_create_on(cfg, e[1], z->st[0] + e[2], z->st[1] ? z->st[1] + e[2] : NULL,
                                 &z->opt[b]);
        for (int i = 0; i < nt && !rc; i++) { /* no-decay tensors, in block coordinates */
            if (table[i].decay) continue;
            size_t tlo = table[i].offset, thi = tlo + table[i].numel;
            size_t a = e[0] > tlo ? e[0] : tlo, h = e[0] + e[1] < thi ? e[0] + e[1] : thi;
            if (a < h) rc = sym_optim_no_decay(z->opt[b], a - e[0], h - a);
        }
    }
    if (rc) goto fail;
    if ((rc = sym_ddp_shard(ddp, z->gs, stage == 2))) goto fail;
    *out = z;
    return SYM_OK;
fail:
    sym_zero_destroy(z);
    return rc;
}

void sym_zero_destroy(sym_zero_t *z) {
    if (!z) return;
    for (int b = 0; z->opt && b < z->nb; b++) sym_optim_destroy(z->opt[b]);
    /* shmem_free is collective: every PE destroys, as every PE created */
    if (z->ctrl) shmem_free(z->ctrl);
    if (z->st[1]) shmem_free(z->st[1]);
    if (z->st[0]) shmem_free(z->st[0]);
    free(z->opt);
    free(z->gs);
    free(z->blk);
    free(z->lo);
    free(z->len);
    free(z->owner);
    free(z->toff);
    free(z->tlen);
    free(z->cnt);
    free(z);
}

int sym_zero_norm_over(sym_zero_t *z, const unsigned char *counted, const shmem_team_t *teams,
                       int nteams) {
    if (nteams < 0 || nteams > 2)
        return sym__error(SYM_EINVAL, "ZeRO: the norm is summed over at most 2 more teams");
    size_t *cnt = malloc(2 * ((size_t)z->nb * (size_t)(z->nt > 0 ? z->nt : 1)) * sizeof *cnt);
    if (!cnt) return sym__error(SYM_ENOMEM, "out of memory for ZeRO");
    int n = 0;
    for (int b = 0; b < z->nb; b++) { /* this PE's blocks, in shard order */
        const size_t *e = blk(z, b, z->me);
        for (int i = 0; i < z->nt; i++) {
            size_t tlo = z->toff[i], thi = tlo + z->tlen[i];
            size_t a = e[0] > tlo ? e[0] : tlo, h = e[0] + e[1] < thi ? e[0] + e[1] : thi;
            if (!counted[i] || a >= h) continue;
            size_t at = e[2] + (a - e[0]);
            if (n && cnt[2 * n - 2] + cnt[2 * n - 1] == at) { /* adjacent: one stretch */
                cnt[2 * n - 1] += h - a;
                continue;
            }
            cnt[2 * n] = at;
            cnt[2 * n + 1] = h - a;
            n++;
        }
    }
    free(z->cnt);
    z->cnt = cnt;
    z->ncnt = n;
    for (int k = 0; k < nteams; k++) z->over[k] = teams[k];
    z->nover = nteams;
    return SYM_OK;
}

/* ---- the step ---- */

int sym_zero_clip(sym_zero_t *z, float *ctrl, int nctrl, double max_norm, double *norm) {
    if (nctrl > CTRL_MAX) return sym__error(SYM_EINVAL, "ZeRO: at most %d control floats", CTRL_MAX);
    double *mine = z->ctrl, *all = z->ctrl + CTRL_SLOTS, sq = 0.0;
    for (int c = 0; c < z->ncnt; c++) /* the stretches this PE counts */
        for (size_t i = z->cnt[2 * c]; i < z->cnt[2 * c] + z->cnt[2 * c + 1]; i++)
            sq += (double)z->gs[i] * (double)z->gs[i];
    memset(mine, 0, CTRL_SLOTS * sizeof *mine);
    for (int i = 0; i < nctrl; i++) mine[i] = ctrl[i];
    mine[CTRL_MAX] = sq;
    int rc = sym__comm_allgather_f64(z->team, all, mine, CTRL_SLOTS);
    if (rc) return rc;
    double sum[CTRL_SLOTS] = {0};
    for (int k = 0; k < z->npes; k++) /* team order: the same sums on every PE */
        for (int i = 0; i < CTRL_SLOTS; i++) sum[i] += all[(size_t)k * CTRL_SLOTS + i];
    for (int i = 0; i < nctrl; i++) ctrl[i] = (float)(sum[i] / z->npes);
    /* the dp team's sum over the rest of the mesh; every member of a team
     * gives the same, so every PE ends with the same sum */
    for (int k = 0; k < z->nover && !rc; k++) rc = sym__comm_sum_f64(z->over[k], &sum[CTRL_MAX], 1);
    if (rc) return rc;
    *norm = sqrt(sum[CTRL_MAX]);
    if (max_norm > 0.0 && *norm > max_norm) { /* as sym_grad_clip */
        float scale = (float)(max_norm / (*norm + 1e-6));
        for (size_t i = 0; i < z->S; i++) z->gs[i] *= scale;
    }
    return SYM_OK;
}

int sym_zero_step(sym_zero_t *z, float *params, float lr) {
    for (int b = 0; b < z->nb; b++) { /* this PE's blocks, in place */
        const size_t *e = blk(z, b, z->me);
        sym_optim_step(z->opt[b], params + e[0], z->gs + e[2], lr);
    }
    return sym__comm_pull_ranges_f32(z->team, params, z->nb * z->npes, z->lo, z->len, z->owner);
}

/* ---- what it holds ---- */

uint64_t sym_zero_steps(const sym_zero_t *z) { return sym_optim_steps(z->opt[0]); }
size_t sym_zero_state_bytes(const sym_zero_t *z) {
    return z->S * sizeof(float) * (size_t)nstate(z);
}
size_t sym_zero_shard_len(const sym_zero_t *z) { return z->S; }
float *sym_zero_state_shard(sym_zero_t *z, int i) { return i >= 0 && i < nstate(z) ? z->st[i] : NULL; }

/* ---- the gathered state (checkpoints) ---- */

int sym_zero_state_get(const sym_zero_t *z, sym_optim_t *full) {
    for (int s = 0; s < nstate(z); s++) {
        float *dst = sym_optim_buffer(full, s);
        if (!dst) return sym__error(SYM_EINVAL, "ZeRO: the optimizer to gather into is not %s",
                                    sym_optim_name(z->cfg.kind));
        for (int k = 0; k < z->npes; k++) {
            int pe = shmem_team_translate_pe(z->team, k, SHMEM_TEAM_WORLD);
            for (int b = 0; b < z->nb; b++) {
                const size_t *e = blk(z, b, k);
                if (k == z->me)
                    memcpy(dst + e[0], z->st[s] + e[2], e[1] * sizeof(float));
                else if (e[1])
                    shmem_getmem(dst + e[0], z->st[s] + e[2], e[1] * sizeof(float), pe);
            }
        }
    }
    sym_optim_set_steps(full, sym_zero_steps(z));
    return SYM_OK;
}

void sym_zero_state_put(sym_zero_t *z, sym_optim_t *full) {
    for (int s = 0; s < nstate(z); s++) {
        const float *src = sym_optim_buffer(full, s);
        for (int b = 0; b < z->nb; b++) {
            const size_t *e = blk(z, b, z->me);
            memcpy(z->st[s] + e[2], src + e[0], e[1] * sizeof(float));
        }
    }
    for (int b = 0; b < z->nb; b++) sym_optim_set_steps(z->opt[b], sym_optim_steps(full));
}

/* A whole-model optimizer of the same kind: the format's owner. */
static int full_optim(const sym_zero_t *z, sym_optim_t **full) {
    return sym_optim_create(&z->cfg, z->P, full);
}

size_t sym_zero_state_size(const sym_zero_t *z) {
    /* the header, then one array of P per state kind (sym_optim_state_size's rule) */
    return sym_optim_state_size(z->opt[0]) +
           (z->P - blk(z, 0, z->me)[1]) * sizeof(float) * (size_t)nstate(z);
}

int sym_zero_state_save(const sym_zero_t *z, void *buf) {
    sym_optim_t *full = NULL;
    int rc = full_optim(z, &full);
    if (!rc && !(rc = sym_zero_state_get(z, full))) sym_optim_state_save(full, buf);
    sym_optim_destroy(full);
    return rc;
}

int sym_zero_state_load(sym_zero_t *z, const void *buf, size_t len) {
    sym_optim_t *full;
    int rc = full_optim(z, &full);
    if (rc) return rc;
    if (!(rc = sym_optim_state_load(full, buf, len))) /* says what does not fit */
        sym_zero_state_put(z, full);
    sym_optim_destroy(full);
    return rc;
}
