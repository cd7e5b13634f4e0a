/*
 * progress.c — the progress bar and plain progress lines (see progress.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include "progress.h"
#include "symtrain/train.h"
#include "util/util.h"

#define BAR_MAX 24
#define BAR_MIN 8
#define WIDTH_DEFAULT 80 /* a terminal that does not say its width */

/* stdout is the user's terminal: a terminal, and not the pseudo-terminal a
 * PMIx launcher (mpirun) gives each rank and copies into its output, where
 * redrawn lines pile up as \r and escape codes. */
static int users_terminal(void) { return isatty(STDOUT_FILENO) && !getenv("PMIX_RANK"); }

void sym__progress_init(sym_progress_t *p, int enabled, int mode, double interval_s) {
    memset(p, 0, sizeof *p);
    p->summaries = enabled;
    p->enabled = enabled && mode != SYM_PROGRESS_OFF;
    p->tty = mode == SYM_PROGRESS_BAR || (mode == SYM_PROGRESS_AUTO && users_terminal());
    p->interval_s = interval_s > 0 ? interval_s : 10;
    p->seq = 1;
}

/* The terminal's width in columns (TIOCGWINSZ, asked at each redraw: the
 * window may have been resized), WIDTH_DEFAULT where it does not say. */
static int width_of_stdout(void) {
    struct winsize ws;
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
    return WIDTH_DEFAULT;
}

/* The bar's line for a terminal `width` columns wide: at most width - 1
 * characters (writing the last column makes some terminals wrap), the bar
 * shrunk first, then the MFU, the rate and the bar dropped, then the line cut. */
static void bar_text(char *out, size_t len, int width, const char *head, int pct,
                     const char *rate, const char *mfu, const char *tail, double frac) {
    int room = width - 1 < (int)len - 1 ? width - 1 : (int)len - 1;
    if (room < 1) room = 1;
    for (int drop = 0; drop < 4; drop++) {
        const char *r = drop >= 2 ? "" : rate, *m = drop >= 1 ? "" : mfu;
        char rest[160];
        int n = snprintf(rest, sizeof rest, " %3d%%%s%s%s", pct, r, m, tail);
        int bar = room - (int)strlen(head) - n - 3; /* " [" and "]" */
        if (drop < 3 && bar < BAR_MIN) continue;
        if (bar > BAR_MAX) bar = BAR_MAX;
        if (drop == 3) { /* no room for a bar: what fits of the rest */
            snprintf(out, len, "%s%s", head, rest);
            out[room] = '\0';
            return;
        }
        char b[BAR_MAX + 1];
        int fill = (int)(bar * frac);
        for (int i = 0; i < bar; i++) b[i] = i < fill ? '#' : '.';
        b[bar] = '\0';
        snprintf(out, len, "%s [%s]%s", head, b, rest);
        return;
    }
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
        char head[48], rate_s[48], tail[64], line[256];
        snprintf(head, sizeof head, "epoch %lld/%lld", (long long)p->epoch + 1,
                 (long long)p->epochs);
        snprintf(rate_s, sizeof rate_s, "  %s %s", r, u);
        snprintf(tail, sizeof tail, "  loss %.4f  ETA %s", loss, eta);
        double frac = p->total ? (double)done / (double)p->total : 1;
        bar_text(line, sizeof line, width_of_stdout(), head, pct, rate_s, mfu, tail, frac);
        printf("\r\033[K%s", line);
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
    if (!p->summaries) return;
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
