/*
 * baseline.h — the benchmark harness symbench (tools/symbench.c) and its
 * baselines (bench/mpi_baseline.c, bench/osh_baseline.c) share: options,
 * iteration counts, the "best of --reps" timing rule, the sweeps and the table
 * shape, one copy, so the three tables can be put side by side. It needs no
 * symtrain library: the baselines are built with Open MPI's oshcc and mpicc.
 * Each program defines, before including it:
 *   BASELINE_NAME      its name, the first word of its table titles
 *   BASELINE_UNIT      what it calls its processes ("ranks", "PEs")
 *   BASELINE_UNIT_ONE  optional: the same for exactly one ("PE"; default
 *                      BASELINE_UNIT)
 *   BASELINE_OWN_OPTIONS  optional: it parses its own options (symbench), so
 *                      parse_options and its helpers are left out
 *   baseline_barrier(), baseline_now() (seconds), and baseline_abort(code)
 *   unless BASELINE_OWN_OPTIONS
 */
#ifndef BASELINE_H
#define BASELINE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long iters = 20000, iters_large = 100;
static int reps = 5, window = 64;
static size_t min_size = 1, max_size = (size_t)64 << 20;
/* --stream SPAN: transfer i of a size uses the slice i mod (SPAN / size) of
 * buffers SPAN bytes long, so with SPAN past the last-level cache every
 * transfer reads and writes memory (streaming); 0 (default): one slice, the
 * same bytes again and again (cache-resident up to the cache's size). */
static size_t stream_span = 0;
static int me, npes, peer;

/* Bytes the buffers need: the largest transfer, or the stream's span. */
static inline size_t buffer_bytes(void) {
    size_t b = stream_span > max_size ? stream_span : max_size;
    return (b + 4095) & ~(size_t)4095;
}

/* Where transfer i of `size` starts in the buffers. */
static inline size_t slice(long i, size_t size) {
    size_t k = stream_span > size ? stream_span / size : 1;
    return (size_t)i % k * size;
}

/* Iterations at `size`: iters up to 8 KiB, then iters_large's worth of bytes
 * at 1 MiB scaled by size, at least 4. */
static long iters_for(size_t size) {
    if (size <= 8192) return iters;
    long n = (long)((double)iters_large * (1 << 20) / (double)size);
    if (n > iters) n = iters;
    return n < 4 ? 4 : n;
}

/* Non-blocking transfers per completion: one from 1 MiB. */
static long win_for(size_t size) { return size >= ((size_t)1 << 20) ? 1 : window; }

#ifndef BASELINE_UNIT_ONE
#define BASELINE_UNIT_ONE BASELINE_UNIT
#endif

/* "# <name> <test> <measure>: <what>, <npes> <unit>" then "# size <col>". */
static void table(const char *test, const char *measure, const char *what, const char *col) {
    if (me) return;
    printf("# " BASELINE_NAME " %s %s: %s, %d %s\n# size %s\n", test, measure, what, npes,
           npes == 1 ? BASELINE_UNIT_ONE : BASELINE_UNIT, col);
    fflush(stdout);
}

static void row(size_t size, double v) {
    if (me) return;
    printf("%-10zu %12.4f\n", size, v);
    fflush(stdout);
}

typedef void body_fn(size_t size, long n, void *arg);

/* Seconds per operation: a warm-up, then the best of `reps` timed runs of n. */
static double measure(body_fn *body, size_t size, long n, void *arg) {
    body(size, n / 10 + 1, arg);
    double best = 0;
    for (int r = 0; r < reps; r++) {
        baseline_barrier();
        double t0 = baseline_now();
        body(size, n, arg);
        double t = (baseline_now() - t0) / (double)n;
        if (r == 0 || t < best) best = t;
    }
    baseline_barrier();
    return best;
}

/* A latency table over min_size .. max_size, doubling. */
static void sweep_latency(const char *test, const char *what, body_fn *lat) {
    table(test, "latency", what, "latency_us");
    for (size_t s = min_size; s <= max_size; s *= 2) row(s, measure(lat, s, iters_for(s), NULL) * 1e6);
}

/* A bandwidth table over min_size .. max_size; the iterations are rounded up
 * to whole windows, so seconds per transfer stay honest. */
static void sweep_bandwidth(const char *test, const char *what, body_fn *bw) {
    table(test, "bandwidth", what, "bandwidth_GBs");
    for (size_t s = min_size; s <= max_size; s *= 2) {
        long n = (iters_for(s) + win_for(s) - 1) / win_for(s) * win_for(s);
        row(s, (double)s / measure(bw, s, n, NULL) * 1e-9);
    }
}

/* A latency table and a bandwidth table. */
static void sweep(const char *test, const char *what_lat, body_fn *lat, const char *what_bw,
                  body_fn *bw) {
    sweep_latency(test, what_lat, lat);
    sweep_bandwidth(test, what_bw, bw);
}

#ifndef BASELINE_OWN_OPTIONS
#include "size.h"

static int want(const char *test, const char *name) {
    return !strcmp(test, "all") || !strcmp(test, name);
}


/* The test to run (argv[1], default all) after reading symbench's options. */
static const char *parse_options(int argc, char **argv) {
    for (int i = 2; i + 1 < argc; i += 2) {
        const char *a = argv[i], *v = argv[i + 1];
        if (!strcmp(a, "-i") || !strcmp(a, "--iters")) iters = atol(v);
        else if (!strcmp(a, "--iters-large")) iters_large = atol(v);
        else if (!strcmp(a, "-r") || !strcmp(a, "--reps")) reps = atoi(v);
        else if (!strcmp(a, "-w") || !strcmp(a, "--window")) window = atoi(v);
        else if (!strcmp(a, "--min-size")) min_size = parse_size(v);
        else if (!strcmp(a, "--max-size")) max_size = parse_size(v);
        else if (!strcmp(a, "--stream")) stream_span = parse_size(v);
        else {
            if (!me) fprintf(stderr, BASELINE_NAME ": unknown option %s\n", a);
            baseline_abort(2);
        }
    }
    return argc > 1 ? argv[1] : "all";
}
#endif /* BASELINE_OWN_OPTIONS */

#endif
