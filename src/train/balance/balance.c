/*
 * balance.c — the balancer: the per-step exchange of load records, their
 * smoothing, the policies, hysteresis and stragglers (see balance.h).
 *
 * Every PE holds the same state: the records come from one all-gather, the
 * arithmetic is the same code on the same numbers, so the shares, the
 * straggler verdicts and the rebalance points agree everywhere without a
 * message more. The first step of a run (or of a resumed run) is not folded
 * in: it pays for page faults and warm-up, not for the work.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <symtrain/data.h>

#include "balance/balance.h"
#include "balance/measure.h"
#include "internal.h"
#include "util/util.h"

/* One PE's record in the exchange: doubles, in this order. */
enum { F_COMPUTE, F_ROWS, F_CPU, F_UTIL, F_MEM_BYTES, F_MEM_FRAC, F_GPU, F_LATENCY, F_CLOCK, NF };

#define ALPHA 0.3   /* weight of the newest measurement in the smoothing */
#define WARM 3      /* measured steps before the first rebalance */
#define LIST_MAX 16 /* PEs listed in a log line */

struct sym__balance {
    sym_balance_config_t cfg;
    int me, npes, B, cap;
    sym__probe_t probe;
    sym__balance_say_t say;
    void *user;
    double *send, *recv; /* symmetric: NF, and npes x NF */
    double mine[NF];     /* this step's record so far */
    int *shares;         /* (npes) for the next step */
    int *next;           /* (npes) a proposal */
    double *tps;         /* (npes) smoothed seconds per sample; 0: none yet */
    double *speed;       /* (npes) 1 / tps, for the records and checkpoints */
    double *util, *memf, *lat; /* (npes) smoothed, for the score */
    int *straggler;      /* (npes) */
    int exchanges;       /* in this run */
    int measured;        /* measurements folded in (restored ones count) */
    int checked;         /* a rebalance point has passed */
    double last_clock;   /* PE 0's clock then */
    double t_create;
    double exchange_s;   /* the last exchange's duration (the link latency) */
    int rebalanced;      /* the last exchange moved work */
};

const char *sym__balance_policy_name(sym_balance_policy_t p) {
    return p == SYM_BALANCE_THROUGHPUT ? "throughput" : p == SYM_BALANCE_SCORE ? "score" : "off";
}

int sym__balance_create(const sym_balance_config_t *c, int global_batch, int cap, int threads,
                        sym__balance_say_t say, void *user, sym__balance_t **out) {
    *out = NULL;
    int npes = shmem_n_pes();
    sym__balance_t *b = calloc(1, sizeof *b);
    double *send = shmem_malloc(sizeof(double) * NF);                  /* collective */
    double *recv = shmem_malloc(sizeof(double) * NF * (size_t)npes); /* collective */
    size_t n = (size_t)npes;
    if (b) {
        b->shares = calloc(n, sizeof *b->shares);
        b->next = calloc(n, sizeof *b->next);
        b->straggler = calloc(n, sizeof *b->straggler);
        b->tps = calloc(5 * n, sizeof *b->tps);
    }
    if (!b || !send || !recv || !b->shares || !b->next || !b->straggler || !b->tps) {
        if (b) {
            b->send = send;
            b->recv = recv;
        } else {
            shmem_free(send);
            shmem_free(recv);
        }
        sym__balance_destroy(b);
        return sym__error(SYM_ENOMEM, "out of memory for the load balancer");
    }
    b->speed = b->tps + n;
    b->util = b->tps + 2 * n;
    b->memf = b->tps + 3 * n;
    b->lat = b->tps + 4 * n;
    b->cfg = *c;
    b->me = shmem_my_pe();
    b->npes = npes;
    b->B = global_batch;
    b->cap = cap;
    b->send = send;
    b->recv = recv;
    b->say = say;
    b->user = user;
    b->t_create = sym__now_s();
    sym__probe_init(&b->probe, b->me, threads);
    for (int p = 0; p < npes; p++) {
        int64_t off, len;
        sym_shard_range(global_batch, npes, p, &off, &len);
        b->shares[p] = (int)len;
    }
    *out = b;
    return SYM_OK;
}

void sym__balance_destroy(sym__balance_t *b) {
    if (!b) return;
    sym__probe_free(&b->probe);
    shmem_free(b->recv); /* collective, like the allocation */
    shmem_free(b->send);
    free(b->shares);
    free(b->next);
    free(b->straggler);
    free(b->tps);
    free(b);
}

void sym__balance_use_gpu(sym__balance_t *b, const char *pci_bus_id) {
    sym__probe_gpu(&b->probe, pci_bus_id);
}

const int *sym__balance_shares(const sym__balance_t *b) {
    return b->cfg.policy == SYM_BALANCE_OFF ? NULL : b->shares;
}

void sym__balance_computed(sym__balance_t *b, double t0, int rows, double device_s) {
    double host0 = sym__now_s();
    sym__probe_slowdown(&b->probe, t0, rows);
    double slept = sym__now_s() - host0;
    b->mine[F_COMPUTE] = device_s >= 0 ? device_s + slept : sym__now_s() - t0;
    b->mine[F_ROWS] = rows;
}

/* ---- the log ---- */

static void say(const sym__balance_t *b, int warning, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void say(const sym__balance_t *b, int warning, const char *fmt, ...) {
    if (!b->say) return;
    char text[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    b->say(b->user, warning, text);
}

/* "20 20 19 5" (the first LIST_MAX, then "... (N PEs)") */
static const char *list(const int *v, int n, char *buf, size_t len) {
    size_t at = 0;
    buf[0] = '\0';
    for (int p = 0; p < n && p < LIST_MAX && at < len; p++)
        at += (size_t)snprintf(buf + at, len - at, "%s%d", p ? " " : "", v[p]);
    if (n > LIST_MAX && at < len) snprintf(buf + at, len - at, " ... (%d PEs)", n);
    return buf;
}

/* ---- smoothing and stragglers ---- */

static double ema(double old, double x) { return old > 0 ? ALPHA * x + (1 - ALPHA) * old : x; }

/* Fold the exchange in; `first`: the first one of this run (the score's
 * inputs, never checkpointed, start from it). */
static void fold(sym__balance_t *b, int first) {
    for (int p = 0; p < b->npes; p++) {
        const double *r = b->recv + (size_t)p * NF;
        if (r[F_ROWS] >= 1 && r[F_COMPUTE] > 0) b->tps[p] = ema(b->tps[p], r[F_COMPUTE] / r[F_ROWS]);
        b->speed[p] = b->tps[p] > 0 ? 1.0 / b->tps[p] : 0;
        double k = first ? 1 : ALPHA;
        b->util[p] = k * r[F_UTIL] + (1 - k) * b->util[p];
        b->memf[p] = k * r[F_MEM_FRAC] + (1 - k) * b->memf[p];
        b->lat[p] = k * r[F_LATENCY] + (1 - k) * b->lat[p];
    }
    b->measured++;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The median seconds per sample over the PEs measured (0: none). */
static double median_tps(const sym__balance_t *b) {
    int n = 0;
    double *tmp = malloc(sizeof(double) * (size_t)b->npes);
    if (!tmp) return 0;
    for (int p = 0; p < b->npes; p++)
        if (b->tps[p] > 0) tmp[n++] = b->tps[p];
    double m = 0;
    if (n) {
        qsort(tmp, (size_t)n, sizeof *tmp, cmp_double);
        m = n % 2 ? tmp[n / 2] : 0.5 * (tmp[n / 2 - 1] + tmp[n / 2]);
    }
    free(tmp);
    return m;
}

/* Name each PE that becomes a straggler (slower per sample than the median
 * by more than the factor) and each that stops being one (back under 90% of
 * the threshold, so noise at the line does not flap). */
static void stragglers(sym__balance_t *b) {
    double med = median_tps(b), f = b->cfg.straggler;
    if (!(med > 0) || !(f > 1)) return;
    for (int p = 0; p < b->npes; p++) {
        double ratio = b->tps[p] / med;
        if (!b->straggler[p] && ratio > f) {
            b->straggler[p] = 1;
            if (b->cfg.policy == SYM_BALANCE_OFF)
                say(b, 1, "PE %d is a straggler: %.3g ms per sample, %.1fx the median (%.3g ms); "
                          "--balance throughput would move work off it",
                    p, 1e3 * b->tps[p], ratio, 1e3 * med);
            else
                say(b, 1, "PE %d is a straggler: %.3g ms per sample, %.1fx the median (%.3g ms); "
                          "it computes %d of the %d samples of a step",
                    p, 1e3 * b->tps[p], ratio, 1e3 * med, b->shares[p], b->B);
        } else if (b->straggler[p] && ratio <= 0.9 * f) {
            b->straggler[p] = 0;
            say(b, 1, "PE %d is no longer a straggler: %.3g ms per sample, %.1fx the median", p,
                1e3 * b->tps[p], ratio);
        }
    }
}

/* ---- policies ---- */

/* The step time the shares n predict: the slowest PE's share / speed. */
static double predicted(const sym__balance_t *b, const int *n) {
    double t = 0;
    for (int p = 0; p < b->npes; p++) t = fmax(t, n[p] * b->tps[p]);
    return t;
}

/* Propose b->next; 1 when it should replace the shares (past the hysteresis). */
static int propose(sym__balance_t *b, double *before, double *after) {
    int npes = b->npes;
    double *w = malloc(sizeof(double) * (size_t)npes);
    if (!w) return 0;
    int accept = 0;
    if (b->cfg.policy == SYM_BALANCE_THROUGHPUT) {
        for (int p = 0; p < npes; p++) w[p] = b->speed[p];
        sym_shares_apportion(w, npes, b->B, 1, b->cap, b->next);
        *before = predicted(b, b->shares);
        *after = predicted(b, b->next);
        accept = *after < (1 - b->cfg.hysteresis) * *before;
    } else {
        const double *k = b->cfg.weights;
        double top = -INFINITY;
        for (int p = 0; p < npes; p++) {
            w[p] = k[0] * (1 - b->util[p]) + k[1] * (1 - b->memf[p]) + k[2] / (1e3 * b->lat[p] + 1);
            top = fmax(top, w[p]);
        }
        for (int p = 0; p < npes; p++) w[p] = exp(w[p] - top); /* the softmax, unnormalised */
        sym_shares_apportion(w, npes, b->B, 1, b->cap, b->next);
        int moved = 0;
        for (int p = 0; p < npes; p++) moved += abs(b->next[p] - b->shares[p]);
        *before = *after = moved / 2.0 / b->B; /* the fraction of the batch that moves */
        accept = *after > b->cfg.hysteresis;
    }
    free(w);
    return accept && memcmp(b->next, b->shares, sizeof(int) * (size_t)npes) != 0;
}

/* A rebalance point: the first step with WARM measurements, then every
 * every_steps steps (step % N == 0, so a resumed run meets the same points)
 * or every_s seconds of PE 0's clock. */
static int due(const sym__balance_t *b, int64_t step) {
    if (b->cfg.policy == SYM_BALANCE_OFF || b->measured < WARM) return 0;
    if (!b->checked) return 1;
    if (b->cfg.every_s > 0) return b->recv[F_CLOCK] - b->last_clock >= b->cfg.every_s;
    return b->cfg.every_steps > 0 && step % b->cfg.every_steps == 0;
}

int sym__balance_exchange(sym__balance_t *b, int64_t step) {
    sym__probe_reading_t rd;
    sym__probe_read(&b->probe, &rd);
    b->mine[F_CPU] = rd.cpu_util;
    b->mine[F_UTIL] = rd.util;
    b->mine[F_MEM_BYTES] = rd.mem_bytes;
    b->mine[F_MEM_FRAC] = rd.mem_frac;
    b->mine[F_GPU] = rd.gpu_util;
    b->mine[F_LATENCY] = b->exchange_s;
    b->mine[F_CLOCK] = sym__now_s() - b->t_create;
    memcpy(b->send, b->mine, sizeof b->mine);
    double t0 = sym__now_s();
    int rc = b->npes > 1 ? sym__comm_allgather_f64(SHMEM_TEAM_WORLD, b->recv, b->send, NF) : SYM_OK;
    if (b->npes == 1) memcpy(b->recv, b->send, sizeof b->mine);
    b->exchange_s = sym__now_s() - t0;
    if (rc) return rc;
    b->rebalanced = 0;
    if (++b->exchanges == 1) return SYM_OK; /* the warm-up step */
    fold(b, b->exchanges == 2);
    stragglers(b);
    if (!due(b, step)) return SYM_OK;
    b->checked = 1;
    b->last_clock = b->recv[F_CLOCK];
    double before, after;
    if (!propose(b, &before, &after)) return SYM_OK;
    char was[256], now[256];
    list(b->shares, b->npes, was, sizeof was);
    memcpy(b->shares, b->next, sizeof(int) * (size_t)b->npes);
    b->rebalanced = 1;
    if (b->cfg.policy == SYM_BALANCE_THROUGHPUT)
        say(b, 0, "balance after step %lld: shares %s (were %s); predicted step %.3g ms (was %.3g)",
            (long long)step, list(b->shares, b->npes, now, sizeof now), was, 1e3 * after,
            1e3 * before);
    else
        say(b, 0, "balance (score) after step %lld: shares %s (were %s); %.0f%% of the batch moved",
            (long long)step, list(b->shares, b->npes, now, sizeof now), was, 100 * after);
    return SYM_OK;
}

void sym__balance_record(const sym__balance_t *b, sym_pe_record_t *pes, sym_step_record_t *rec) {
    for (int p = 0; p < b->npes; p++) {
        const double *r = b->recv + (size_t)p * NF;
        sym_pe_record_t *e = &pes[p];
        e->share = (int)r[F_ROWS];
        e->straggler = b->straggler[p];
        e->samples_per_s = b->speed[p];
        e->compute_s = r[F_COMPUTE];
        e->cpu_util = r[F_CPU];
        e->mem_bytes = r[F_MEM_BYTES];
        e->mem_frac = r[F_MEM_FRAC];
        e->gpu_util = r[F_GPU];
        e->latency_s = r[F_LATENCY];
    }
    rec->npes = b->npes;
    rec->pes = pes;
    rec->balance = sym__balance_policy_name(b->cfg.policy);
    rec->rebalanced = b->rebalanced;
}

void sym__balance_state(const sym__balance_t *b, const int **shares, const double **speeds) {
    *shares = b->shares;
    *speeds = b->speed;
}

void sym__balance_restore(sym__balance_t *b, const int *shares, const double *speeds) {
    int measured = 1;
    for (int p = 0; p < b->npes; p++) {
        b->shares[p] = shares[p];
        b->speed[p] = speeds[p];
        b->tps[p] = speeds[p] > 0 ? 1.0 / speeds[p] : 0;
        measured &= speeds[p] > 0;
    }
    if (measured) { /* the saved run had measured and had passed a rebalance point */
        b->measured = WARM;
        b->checked = 1;
    }
}
