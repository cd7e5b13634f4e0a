/*
 * zero.c — sharded data parallelism, ZeRO stages 1 and 2 (see
 * symtrain/zero.h for the contract).
 *
 * This PE's shard is its block of every gradient bucket, packed one after
 * another in bucket order (sym_ddp_block); the same packing holds its
 * gradient shard (private: the reduce-scatters' destination), its fp32
 * master copy of those parameters and the optimizer state (symmetric, sized
 * for the largest shard, so peers read them: the all-gather pulls master
 * copies, a checkpoint pulls state). Weight decay follows the parameter
 * table: each no-decay tensor's overlap with each block, in packed
 * coordinates.
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
    int stage, npes, me, nb;
    shmem_team_t team;
    sym_ddp_t *ddp;
    sym_optim_config_t cfg;
    size_t P, S;       /* parameters; this PE's shard */
    size_t *blk;       /* (nb, npes, 3): bucket b, member k: full offset, length, shard offset */
    float *gs;         /* (S) private: the averaged gradient shard */
    float *ws;         /* (Smax) symmetric: the master copy of the shard's parameters */
    float *st[2];      /* (Smax) symmetric: momentum, or m and v */
    int ws_ready;      /* ws holds the parameters (set at the first step) */
    sym_optim_t *opt;  /* over gs / ws / st, S parameters */
    double *ctrl;      /* symmetric: CTRL_SLOTS, then the team's (npes * CTRL_SLOTS) */
    size_t *off, *len; /* (npes) pullv's byte ranges */
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
    z->stage = stage;
    z->team = team;
    z->ddp = ddp;
    z->cfg = *cfg;
    z->P = P;
    z->npes = shmem_team_n_pes(team);
    z->me = shmem_team_my_pe(team);
    z->nb = sym_ddp_num_buckets(ddp);
    int rc = SYM_OK;
    size_t smax = 0;
    z->blk = malloc((size_t)z->nb * (size_t)z->npes * 3 * sizeof *z->blk);
    z->off = malloc((size_t)z->npes * sizeof *z->off);
    z->len = malloc((size_t)z->npes * sizeof *z->len);
    if (!z->blk || !z->off || !z->len) {
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
        }
    }
    for (int k = 0; k < z->npes; k++) {
        size_t s = sym_ddp_shard_len(ddp, k);
        if (s > smax) smax = s;
    }
    z->S = sym_ddp_shard_len(ddp, z->me);
    /* collective, the same sizes on every PE */
    size_t bytes = (smax ? smax : 1) * sizeof(float);
    z->ws = shmem_malloc(bytes);
    z->st[0] = shmem_calloc(smax ? smax : 1, sizeof(float));
    z->st[1] = nstate(z) == 2 ? shmem_calloc(smax ? smax : 1, sizeof(float)) : NULL;
    z->ctrl = shmem_malloc((size_t)(1 + z->npes) * CTRL_SLOTS * sizeof(double));
    z->gs = malloc(bytes);
    if (!z->ws || !z->st[0] || (nstate(z) == 2 && !z->st[1]) || !z->ctrl || !z->gs) {
        rc = sym__error(SYM_ENOMEM, "ZeRO: no room for a shard of %zu parameters (the optimizer "
                        "state and the master copy are symmetric); raise "
                        "SYMTRAIN_SYMMETRIC_SIZE", smax);
        goto fail;
    }
    if ((rc = sym_optim_create_on(cfg, z->S, z->st[0], z->st[1], &z->opt))) goto fail;
    for (int i = 0; i < nt && !rc; i++) { /* no-decay tensors, in packed coordinates */
        if (table[i].decay) continue;
        size_t tlo = table[i].offset, thi = tlo + table[i].numel;
        for (int b = 0; b < z->nb && !rc; b++) {
            const size_t *e = blk(z, b, z->me);
            size_t a = e[0] > tlo ? e[0] : tlo, h = e[0] + e[1] < thi ? e[0] + e[1] : thi;
            if (a < h) rc = sym_optim_no_decay(z->opt, e[2] + (a - e[0]), h - a);
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
    sym_optim_destroy(z->opt);
    /* shmem_free is collective: every PE destroys, as every PE created */
    if (z->ctrl) shmem_free(z->ctrl);
    if (z->st[1]) shmem_free(z->st[1]);
    if (z->st[0]) shmem_free(z->st[0]);
    if (z->ws) shmem_free(z->ws);
    free(z->gs);
    free(z->blk);
    free(z->off);
    free(z->len);
    free(z);
}

/* ---- the step ---- */

int sym_zero_clip(sym_zero_t *z, float *ctrl, int nctrl, double max_norm, double *norm) {
    if (nctrl > CTRL_MAX) return sym__error(SYM_EINVAL, "ZeRO: at most %d control floats", CTRL_MAX);
    double *mine = z->ctrl, *all = z->ctrl + CTRL_SLOTS, sq = 0.0;
    for (size_t i = 0; i < z->S; i++) sq += (double)z->gs[i] * (double)z->gs[i];
    memset(mine, 0, CTRL_SLOTS * sizeof *mine);
    for (int i = 0; i < nctrl; i++) mine[i] = ctrl[i];
    mine[CTRL_MAX] = sq;
    int rc = sym__comm_allgather_f64(z->team, all, mine, CTRL_SLOTS);
    if (rc) return rc;
    double sum[CTRL_SLOTS] = {0};
    for (int k = 0; k < z->npes; k++) /* team order: the same sums on every PE */
        for (int i = 0; i < CTRL_SLOTS; i++) sum[i] += all[(size_t)k * CTRL_SLOTS + i];
    for (int i = 0; i < nctrl; i++) ctrl[i] = (float)(sum[i] / z->npes);
    *norm = sqrt(sum[CTRL_MAX]);
    if (max_norm > 0.0 && *norm > max_norm) { /* as sym_grad_clip */
        float scale = (float)(max_norm / (*norm + 1e-6));
        for (size_t i = 0; i < z->S; i++) z->gs[i] *= scale;
    }
    return SYM_OK;
}

int sym_zero_step(sym_zero_t *z, float *params, float lr) {
    if (!z->ws_ready) { /* the parameters are the same on every PE: take our blocks */
        for (int b = 0; b < z->nb; b++) {
            const size_t *e = blk(z, b, z->me);
            memcpy(z->ws + e[2], params + e[0], e[1] * sizeof(float));
        }
        z->ws_ready = 1;
    }
    sym_optim_step(z->opt, z->ws, z->gs, lr);
    for (int b = 0; b < z->nb; b++) { /* all-gather: bucket b's blocks, in team order */
        for (int k = 0; k < z->npes; k++) {
            z->off[k] = blk(z, b, k)[2] * sizeof(float);
            z->len[k] = blk(z, b, k)[1] * sizeof(float);
        }
        int rc = sym__comm_pullv(z->team, z->ws, z->off, z->len, params + blk(z, b, 0)[0]);
        if (rc) return rc;
    }
    return SYM_OK;
}

/* ---- what it holds ---- */

uint64_t sym_zero_steps(const sym_zero_t *z) { return sym_optim_steps(z->opt); }
size_t sym_zero_state_bytes(const sym_zero_t *z) {
    return z->S * sizeof(float) * (size_t)nstate(z);
}
size_t sym_zero_shard_len(const sym_zero_t *z) { return z->S; }
float *sym_zero_state_shard(sym_zero_t *z, int i) { return i >= 0 && i < nstate(z) ? z->st[i] : NULL; }

/* ---- the gathered state (checkpoints) ---- */

/* A whole-model optimizer of the same kind: the format's owner. */
static int full_optim(const sym_zero_t *z, sym_optim_t **full) {
    return sym_optim_create(&z->cfg, z->P, full);
}

size_t sym_zero_state_size(const sym_zero_t *z) {
    /* the header, then one array of P per state kind (sym_optim_state_size's rule) */
    return sym_optim_state_size(z->opt) + (z->P - z->S) * sizeof(float) * (size_t)nstate(z);
}

int sym_zero_state_save(const sym_zero_t *z, void *buf) {
    sym_optim_t *full;
    int rc = full_optim(z, &full);
    if (rc) return rc;
    for (int s = 0; s < nstate(z); s++) {
        float *dst = sym_optim_buffer(full, s);
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
    sym_optim_set_steps(full, sym_optim_steps(z->opt));
    sym_optim_state_save(full, buf);
    sym_optim_destroy(full);
    return SYM_OK;
}

int sym_zero_state_load(sym_zero_t *z, const void *buf, size_t len) {
    sym_optim_t *full;
    int rc = full_optim(z, &full);
    if (rc) return rc;
    if ((rc = sym_optim_state_load(full, buf, len))) { /* says what does not fit */
        sym_optim_destroy(full);
        return rc;
    }
    for (int s = 0; s < nstate(z); s++) {
        const float *src = sym_optim_buffer(full, s);
        for (int b = 0; b < z->nb; b++) {
            const size_t *e = blk(z, b, z->me);
            memcpy(z->st[s] + e[2], src + e[0], e[1] * sizeof(float));
        }
    }
    sym_optim_set_steps(z->opt, sym_optim_steps(full));
    sym_optim_destroy(full);
    z->ws_ready = 0; /* the parameters come from the checkpoint too */
    return SYM_OK;
}
