/*
 * metrics.c — the metrics file: one JSON object per line, appended and flushed
 * line by line, so a plot or a test can read it while training runs.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <symtrain/metrics.h>

#include "internal.h"

struct sym_metrics {
    FILE *f;
    char path[4096];
    int failed;
};

int sym_metrics_open(const char *path, sym_metrics_t **out) {
    *out = NULL;
    sym_metrics_t *m = calloc(1, sizeof *m);
    if (!m) return sym__error(SYM_ENOMEM, "out of memory");
    m->f = fopen(path, "a");
    if (!m->f) {
        int e = errno;
        free(m);
        return sym__error(SYM_EIO, "cannot open metrics file %s: %s", path, strerror(e));
    }
    /* Two jobs appending to one file would interleave their records: a write
     * lock on the whole file (POSIX, so whoever is refused learns its pid),
     * held until the file is closed. */
    struct flock lk = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
    if (fcntl(fileno(m->f), F_SETLK, &lk) < 0) {
        int e = errno;
        struct flock who = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
        int known = fcntl(fileno(m->f), F_GETLK, &who) == 0 && who.l_type != F_UNLCK;
        fclose(m->f);
        free(m);
        if (e != EACCES && e != EAGAIN)
            return sym__error(SYM_EIO, "cannot lock metrics file %s: %s", path, strerror(e));
        char pid[48] = "";
        if (known) snprintf(pid, sizeof pid, " (pid %d on this host)", (int)who.l_pid);
        return sym__error(SYM_EBUSY, "metrics file %s is being written by another running job%s; "
                          "give this run another --metrics file, or end that job first",
                          path, pid);
    }
    setvbuf(m->f, NULL, _IOLBF, 0);
    snprintf(m->path, sizeof m->path, "%s", path);
    *out = m;
    return SYM_OK;
}

static int done(sym_metrics_t *m, int n) {
    if (n < 0 || ferror(m->f)) {
        if (!m->failed)
            sym__error(SYM_EIO, "cannot write metrics file %s: %s", m->path, strerror(errno));
        m->failed = 1;
        return SYM_EIO;
    }
    return SYM_OK;
}

/* The per-PE part of a step record: ,"balance":...,"pes":[...] */
static int write_pes(FILE *f, const sym_step_record_t *r) {
    int n = fprintf(f, ",\"balance\":\"%s\",\"rebalanced\":%d,\"stragglers\":[",
                    r->balance ? r->balance : "off", r->rebalanced);
    for (int p = 0, first = 1; p < r->npes && n >= 0; p++)
        if (r->pes[p].straggler) {
            n = fprintf(f, "%s%d", first ? "" : ",", p);
            first = 0;
        }
    if (n >= 0) n = fputs("],\"pes\":[", f);
    for (int p = 0; p < r->npes && n >= 0; p++) {
        const sym_pe_record_t *e = &r->pes[p];
        n = fprintf(f,
                    "%s{\"pe\":%d,\"share\":%d,\"samples_per_s\":%.6g,\"compute_s\":%.6g,"
                    "\"cpu_util\":%.3f,\"mem_bytes\":%.0f,\"mem_frac\":%.4f,\"gpu_util\":%.3f,"
                    "\"latency_s\":%.3g,\"straggler\":%d}",
                    p ? "," : "", p, e->share, e->samples_per_s, e->compute_s, e->cpu_util,
                    e->mem_bytes, e->mem_frac, e->gpu_util, e->latency_s, e->straggler);
    }
    if (n >= 0) n = fputc(']', f);
    return n < 0 ? -1 : 0;
}

int sym_metrics_step(sym_metrics_t *m, const sym_step_record_t *r) {
    /* JSON has no inf: an fp16 step that overflowed has no gradient norm (null) */
    char norm[32];
    if (isfinite(r->grad_norm))
        snprintf(norm, sizeof norm, "%.6g", r->grad_norm);
    else
        snprintf(norm, sizeof norm, "null");
    int n = fprintf(m->f,
                    "{\"step\":%lld,\"epoch\":%lld,\"loss\":%.9g,\"lr\":%.6g,\"grad_norm\":%s,"
                    "\"samples_per_s\":%.1f,\"tokens_per_s\":%.1f,\"compute_s\":%.6f,"
                    "\"comm_s\":%.6f,\"bytes_allreduced\":%llu",
                    (long long)r->step, (long long)r->epoch, (double)r->loss, (double)r->lr,
                    norm, r->samples_per_s, r->tokens_per_s, r->compute_s, r->comm_s,
                    (unsigned long long)r->bytes_allreduced);
    if (n >= 0 && r->loss_scale > 0)
        n = fprintf(m->f, ",\"loss_scale\":%.9g,\"skipped\":%d", (double)r->loss_scale,
                    r->skipped);
    if (n >= 0 && r->npes > 0 && r->pes) n = write_pes(m->f, r);
    if (n >= 0) n = fputs("}\n", m->f);
    return done(m, n);
}

int sym_metrics_eval(sym_metrics_t *m, int64_t step, int64_t epoch, double test_loss,
                     double test_acc) {
    int n = fprintf(m->f, "{\"eval\":1,\"step\":%lld,\"epoch\":%lld,\"test_loss\":%.6f,"
                          "\"test_acc\":%.6f}\n",
                    (long long)step, (long long)epoch, test_loss, test_acc);
    return done(m, n);
}

int sym_metrics_close(sym_metrics_t *m) {
    if (!m) return SYM_OK;
    int rc = m->failed ? SYM_EIO : SYM_OK;
    if (fclose(m->f) != 0 && !rc) rc = sym__error(SYM_EIO, "cannot write metrics file %s: %s",
                                                  m->path, strerror(errno));
    free(m);
    return rc;
}
