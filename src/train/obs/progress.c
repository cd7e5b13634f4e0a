/*
 * progress.c — the progress bar and plain progress lines (see progress.h).
 */
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "progress.h"
#include "util/util.h"

#define BAR 24

void sym__progress_init(sym_progress_t *p, int enabled, double interval_s) {
    memset(p, 0, sizeof *p);
    p->enabled = enabled;
    p->tty = isatty(STDOUT_FILENO);
    p->interval_s = interval_s > 0 ? interval_s : 10;
    p->seq = 1;
}

/* "samples/s" or "tok/s", and the rate in those units. */
static const char *unit(const sym_progress_t *p, double *rate) {
    if (p->seq <= 1) return "samples/s";
    *rate *= p->seq;
    return "tok/s";
}

void sym__progress_epoch(sym_progress_t *p, int64_t epoch, int64_t epochs, int64_t total,
                         int64_t done) {
    p->epoch = epoch;
    p->epochs = epochs;
    p->total = total;
    p->done0 = done;
    p->t0 = p->last = sym__now_s();
}

static void rate_text(double r, char *buf, size_t len) {
    if (r >= 1e6)
        snprintf(buf, len, "%.2fM", r / 1e6);
    else if (r >= 1e4)
        snprintf(buf, len, "%.1fk", r / 1e3);
    else
        snprintf(buf, len, "%.0f", r);
}

static void time_text(double s, char *buf, size_t len) {
    if (s < 0) s = 0;
    long t = (long)(s + 0.5);
    if (t >= 3600)
        snprintf(buf, len, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
    else
        snprintf(buf, len, "%ld:%02ld", t / 60, t % 60);
}

double sym__progress_mfu(const sym_progress_t *p, double samples_per_s) {
    return p->peak_flops > 0 ? samples_per_s * p->flops_per_sample / p->peak_flops : -1;
}

void sym__progress_update(sym_progress_t *p, int64_t done, double loss) {
    if (!p->enabled) return;
    double now = sym__now_s();
    if (now - p->last < (p->tty ? 0.1 : p->interval_s)) return;
    p->last = now;
    double rate = (double)(done - p->done0) / (now - p->t0 > 1e-9 ? now - p->t0 : 1e-9);
    char r[32], eta[32];
    time_text(rate > 0 ? (double)(p->total - done) / rate : 0, eta, sizeof eta);
    char mfu[24] = "";
    if (p->peak_flops > 0) snprintf(mfu, sizeof mfu, "  MFU %.1f%%", 100.0 * sym__progress_mfu(p, rate));
    const char *u = unit(p, &rate);
    rate_text(rate, r, sizeof r);
    int pct = p->total ? (int)(100 * done / p->total) : 100;
    if (p->tty) {
        char bar[BAR + 1];
        int fill = (int)(BAR * done / (p->total ? p->total : 1));
        for (int i = 0; i < BAR; i++) bar[i] = i < fill ? '#' : '.';
        bar[BAR] = '\0';
        printf("\r\033[Kepoch %lld/%lld [%s] %3d%%  %s %s%s  loss %.4f  ETA %s",
               (long long)p->epoch + 1, (long long)p->epochs, bar, pct, r, u, mfu, loss, eta);
        p->drawn = 1;
    } else {
        printf("epoch %lld/%lld  %3d%%  %lld/%lld  %s %s%s  loss %.4f  ETA %s\n",
               (long long)p->epoch + 1, (long long)p->epochs, pct, (long long)done,
               (long long)p->total, r, u, mfu, loss, eta);
    }
    fflush(stdout);
}

void sym__progress_clear(sym_progress_t *p) {
    if (p->drawn) {
        printf("\r\033[K");
        fflush(stdout);
        p->drawn = 0;
    }
}

void sym__progress_end_epoch(sym_progress_t *p, int64_t done, double loss, double test_acc) {
    if (!p->enabled) return;
    sym__progress_clear(p);
    double dt = sym__now_s() - p->t0;
    char r[32], acc[48] = "", mem[32];
    double rate = (double)(done - p->done0) / (dt > 1e-9 ? dt : 1e-9);
    const char *u = unit(p, &rate);
    rate_text(rate, r, sizeof r);
    if (test_acc >= 0 && p->seq <= 1)
        snprintf(acc, sizeof acc, "  test accuracy %.2f%%", 100.0 * test_acc);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    sym__fmt_size((size_t)ru.ru_maxrss * 1024, mem, sizeof mem);
    printf("epoch %lld/%lld  %s %s  loss %.4f%s  (%.1f s, %s peak memory)\n",
           (long long)p->epoch + 1, (long long)p->epochs, r, u, loss, acc, dt, mem);
    fflush(stdout);
    p->last = sym__now_s();
}
