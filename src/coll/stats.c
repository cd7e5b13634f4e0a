/*
 * stats.c — shmemx_stats: this PE's runtime counters for a metrics reader on
 * any thread (symtrain's Prometheus endpoint). The all-reduce counts are kept
 * here; the heap and put counts come from the OpenSHMEM layer below.
 */
#include "coll.h"

static uint64_t allreduce_runs[SHMEMX_STATS_ALGOS]; /* atomic: the progress thread adds too */

void sym__coll_count(int algo) {
    __atomic_fetch_add(&allreduce_runs[algo], 1, __ATOMIC_RELAXED);
}

#define SHMEMX_STATS_ALGO_NAME(name, text) text,
static const char *const algo_names[SHMEMX_STATS_ALGOS] = {
    SHMEMX_STATS_ALGO_MAP(SHMEMX_STATS_ALGO_NAME)};

const char *shmemx_stats_algo_name(int algo) {
    return algo >= 0 && algo < SHMEMX_STATS_ALGOS ? algo_names[algo] : "unknown";
}

void shmemx_stats(shmemx_stats_t *out) {
    SYM_REQUIRE_INIT("shmemx_stats");
    out->heap_size = sym__rt.heap_user_size;
    out->heap_in_use = sym__heap_in_use();
    sym__put_count_sum(&out->puts, &out->put_bytes);
    for (int a = 0; a < SHMEMX_STATS_ALGOS; a++)
        out->allreduce[a] = __atomic_load_n(&allreduce_runs[a], __ATOMIC_RELAXED);
}
