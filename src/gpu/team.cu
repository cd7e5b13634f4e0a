/*
 * team.cu — the GPU collectives' per-team state: who reaches whom (a table
 * gathered once at init), each team's kernel arguments and clocks (made on
 * the team's first GPU collective), and their release when the team is
 * destroyed.
 *
 * Made on first use, with no communication: the members, their world PE
 * numbers and the reach table are the same on every member, so every member
 * computes the same state (whether the NVLink algorithms may run, above all)
 * and no member takes a synchronisation round the others do not. The state
 * lives at the team's index (shmemx_team_index): the same on every member,
 * never shared by two live teams of one PE; its flag area and clocks were
 * laid out at init (gpu.h), so nothing is allocated here.
 *
 * Released in shmem_team_destroy (a callback added at init), which every
 * member calls: wait for this GPU's work, so every store this PE's kernels
 * made into the members' flags has landed; synchronise the team, so every
 * member's has; then zero this PE's flag area of the index and restart its
 * clocks, before the index can be given to another team. A team that never
 * ran a GPU collective has no state, on any member, and is released with no
 * synchronisation.
 */
#include <stdlib.h>
#include <string.h>

#include <nvshmem.h>
#include <shmem.h>

#include "gpu.h"

/* ---- who reaches whom ---- */

static int reaches(int p, int q) {
    const struct sym_gpu_state *g = &sym__gpu;
    return (int)((g->reach[(size_t)p * g->reach_words + (size_t)q / 64] >> (q % 64)) & 1);
}

int sym__gpu_reach_init(sym_gpu_agree_fn agree) {
    struct sym_gpu_state *g = &sym__gpu;
    int n = g->npes, w = (n + 63) / 64;
    size_t row_b = (size_t)w * sizeof(uint64_t);
    g->reach_words = w;
    g->peer_base = (uint8_t **)calloc((size_t)n, sizeof *g->peer_base);
    g->reach = (uint64_t *)calloc((size_t)n, row_b);
    uint64_t *tab = (uint64_t *)shmem_malloc((size_t)n * row_b); /* same size everywhere */
    char reason[160];
    snprintf(reason, sizeof reason, "out of memory for the GPU reach table (%zu bytes; raise "
             "SYMTRAIN_SYMMETRIC_SIZE if the symmetric heap is small)", (size_t)n * row_b);
    int st = agree(g->peer_base && g->reach && tab ? 0 : SHMEMX_ENOMEM, reason);
    if (st) {
        if (tab) shmem_free(tab);
        return st;
    }
    uint64_t *mine = g->reach + (size_t)g->me * w;
    for (int q = 0; q < n; q++) {
        g->peer_base[q] = (uint8_t *)nvshmem_ptr(g->base, q);
        if (g->peer_base[q]) mine[q / 64] |= 1ull << (q % 64);
    }
    for (int p = 0; p < n; p++) shmem_putmem(tab + (size_t)g->me * w, mine, row_b, p);
    shmem_barrier_all();
    memcpy(g->reach, tab, (size_t)n * row_b); /* our own copy: nobody writes it again */
    shmem_free(tab);
    return 0;
}

/* ---- a team's state ---- */

struct sym_gpu_team *sym__gpu_team(shmem_team_t team) {
    struct sym_gpu_state *g = &sym__gpu;
    int idx = shmemx_team_index(team);
    struct sym_gpu_team *t = &g->teams[idx];
    if (t->team == team) return t;
    memset(t, 0, sizeof *t);
    struct sym_gpu_args *a = &t->fixed;
    int n = shmem_team_n_pes(team), me = shmem_team_my_pe(team);
    for (int i = 0; i < n; i++) a->pes[i] = shmem_team_translate_pe(team, i, SHMEM_TEAM_WORLD);
    a->me = me;
    a->npes = n;
    a->next = (me + 1) % n;
    a->prev = (me - 1 + n) % n;
    a->next_pe = a->pes[a->next];
    a->prev_pe = a->pes[a->prev];
    a->ll_lag = idx == 0; /* only the world owns its line area (gpu.h) */
    a->timeout_ns = g->timeout_ns;
    a->clock = g->clocks + (size_t)idx * SYM_GPU_MAXB;
    size_t off_ll = g->off_ll + (idx == 0 ? 0 : LL_BYTES);
    size_t off_flags = g->off_flags + (size_t)idx * FLAG_AREA_BYTES;
    a->scr = g->base;
    a->ll = g->base + off_ll;
    a->flags = (uint64_t *)(g->base + off_flags);
    a->region = g->region;
    /* the NVLink algorithms need every member to reach every other */
    int p2p = n <= SYM_GPU_MAXP2P && !g->no_p2p;
    for (int i = 0; i < n && p2p; i++)
        for (int j = 0; j < n && p2p; j++) p2p = reaches(a->pes[i], a->pes[j]);
    t->p2p = a->p2p = p2p;
    if (p2p) /* the peer addresses are for the NVLink algorithms only */
        for (int q = 0; q < n; q++) {
            uint8_t *b = g->peer_base[a->pes[q]];
            a->peer_scr[q] = b;
            a->peer_ll[q] = b + off_ll;
            a->peer_flags[q] = (uint64_t *)(b + off_flags);
        }
    t->team = team;
    return t;
}

/* ---- release ---- */

/* This PE's flag area of index idx zeroed and its clocks restarted. */
static cudaError_t team_clear(int idx) {
    struct sym_gpu_state *g = &sym__gpu;
    struct sym_gpu_clock start[SYM_GPU_MAXB];
    for (int b = 0; b < SYM_GPU_MAXB; b++) start[b].epoch = start[b].step = g->epoch0;
    cudaError_t ce =
        cudaMemset(g->base + g->off_flags + (size_t)idx * FLAG_AREA_BYTES, 0, FLAG_AREA_BYTES);
    if (ce == cudaSuccess)
        ce = cudaMemcpy(g->clocks + (size_t)idx * SYM_GPU_MAXB, start, sizeof start,
                        cudaMemcpyHostToDevice);
    if (ce == cudaSuccess) ce = cudaDeviceSynchronize();
    return ce;
}

/* shmem_team_destroy's callback (added by init.cu). */
extern "C" void sym__gpu_team_destroyed(shmem_team_t team, void *arg) {
    (void)arg;
    struct sym_gpu_state *g = &sym__gpu;
    int idx = shmemx_team_index(team);
    if (!g->ready || idx <= 0 || idx >= SYM_GPU_MAXTEAMS || g->teams[idx].team != team) return;
    cudaError_t ce = cudaDeviceSynchronize(); /* my stores into the members' flags landed */
    shmem_team_sync(team);                    /* and every member's into mine */
    if (ce == cudaSuccess) ce = team_clear(idx);
    if (ce != cudaSuccess)
        sym__warn("shmem_team_destroy", "clearing the team's GPU state failed: %s (a GPU "
                  "collective on it failed earlier?)", cudaGetErrorString(ce));
    g->teams[idx].team = NULL;
    sym__gpu_cache_clear();
}

void sym__gpu_teams_fini(void) {
    struct sym_gpu_state *g = &sym__gpu;
    for (int i = 0; i < SYM_GPU_MAXTEAMS; i++) g->teams[i].team = NULL;
    free(g->peer_base);
    free(g->reach);
    g->peer_base = NULL;
    g->reach = NULL;
    sym__gpu_cache_clear();
}
