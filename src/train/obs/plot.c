/*
 * plot.c — `symtrain plot`: the loss and test-accuracy curves of a metrics file
 * as an SVG image, written here with no plotting library.
 *
 * The loss is drawn per step (light, raw; dark, an exponential moving average
 * over about 2% of the run) against the left axis; the test accuracy at the
 * end of each epoch, with markers, against the right axis. When a resumed run
 * replayed steps, the last record of each step wins.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <symtrain/metrics.h>

#include "internal.h"

#define W 960
#define H 540
#define ML 80 /* margins */
#define MR 80
#define MT 56
#define MB 64
#define MAX_POINTS 2000

typedef struct {
    int64_t step;
    double v;
    size_t order; /* line number, so the last record of a step wins */
} point_t;

typedef struct {
    point_t *p;
    size_t n, cap;
} series_t;

static int push(series_t *s, int64_t step, double v, size_t order) {
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 1024;
        point_t *np = realloc(s->p, cap * sizeof *np);
        if (!np) return -1;
        s->p = np;
        s->cap = cap;
    }
    s->p[s->n++] = (point_t){step, v, order};
    return 0;
}

static int cmp_point(const void *a, const void *b) {
    const point_t *x = a, *y = b;
    if (x->step != y->step) return x->step < y->step ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

/* Sort by step and keep the last record of each step. */
static void settle(series_t *s) {
    if (!s->n) return;
    qsort(s->p, s->n, sizeof *s->p, cmp_point);
    size_t k = 0;
    for (size_t i = 0; i < s->n; i++) {
        if (k && s->p[k - 1].step == s->p[i].step)
            s->p[k - 1] = s->p[i];
        else
            s->p[k++] = s->p[i];
    }
    s->n = k;
}

/* A "nice" tick spacing (1, 2 or 5 times a power of ten) near range / target. */
static double nice_step(double range, int target) {
    if (range <= 0) return 1;
    double raw = range / target, mag = pow(10, floor(log10(raw))), f = raw / mag;
    return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * mag;
}

static void xml_text(FILE *f, const char *s) {
    for (; *s; s++) switch (*s) {
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '&': fputs("&amp;", f); break;
        case '"': fputs("&quot;", f); break;
        default: fputc(*s, f);
        }
}

int sym_plot_svg(const char *in, const char *out, const char *title) {
    FILE *f = fopen(in, "r");
    if (!f)
        return sym__error(errno == ENOENT ? SYM_ENOENT : SYM_EIO, "cannot open %s: %s", in,
                          strerror(errno));
    series_t loss = {0}, acc = {0};
    char *line = NULL;
    size_t cap = 0, lineno = 0, bad = 0;
    ssize_t len;
    int rc = SYM_OK;
    while ((len = getline(&line, &cap, f)) > 0) {
        lineno++;
        sym_json_t *j = sym__json_parse(line, (size_t)len, NULL, 0);
        int64_t step;
        double v;
        if (!j || sym__json_i64(j, "step", &step)) {
            bad++;
        } else if (sym__json_get(j, "eval")) {
            if (!sym__json_num(j, "test_acc", &v) && push(&acc, step, v * 100.0, lineno)) rc = SYM_ENOMEM;
        } else if (!sym__json_num(j, "loss", &v) && isfinite(v)) {
            if (push(&loss, step, v, lineno)) rc = SYM_ENOMEM;
        }
        sym__json_free(j);
    }
    free(line);
    fclose(f);
    if (rc) {
        free(loss.p);
        free(acc.p);
        return sym__error(rc, "out of memory reading %s", in);
    }
    settle(&loss);
    settle(&acc);
    if (!loss.n) {
        free(loss.p);
        free(acc.p);
        /* Never the path back as advice: it may be any file (/etc/passwd). */
        return sym__error(SYM_EINVAL,
                          bad ? "%s holds no step records: it is not a symtrain metrics file; "
                                "plot one that symtrain train --metrics FILE wrote"
                              : "%s holds no step records yet; plot it once symtrain train "
                                "--metrics FILE has written some",
                          in);
    }

    /* Scales. */
    double xmax = (double)loss.p[loss.n - 1].step, ymax = 0;
    for (size_t i = 0; i < acc.n; i++)
        if ((double)acc.p[i].step > xmax) xmax = (double)acc.p[i].step;
    if (xmax < 1) xmax = 1;
    for (size_t i = 0; i < loss.n; i++)
        if (loss.p[i].v > ymax) ymax = loss.p[i].v;
    double ystep = nice_step(ymax > 0 ? ymax : 1, 5);
    ymax = ceil((ymax > 0 ? ymax : 1) / ystep) * ystep;
    double alo = 100;
    for (size_t i = 0; i < acc.n; i++)
        if (acc.p[i].v < alo) alo = acc.p[i].v;
    alo = floor((alo - 5) / 10) * 10;
    if (alo < 0) alo = 0;
    if (alo > 90) alo = 90;
    double xstep = nice_step(xmax, 8);
    const double pw = W - ML - MR, ph = H - MT - MB;
#define PX(x) (ML + (x) / xmax * pw)
#define PY(y) (MT + ph - (y) / ymax * ph)
#define PA(a) (MT + ph - ((a) - alo) / (100 - alo) * ph)

    FILE *o = fopen(out, "w");
    if (!o) {
        free(loss.p);
        free(acc.p);
        return sym__error(SYM_EIO, "cannot create %s: %s", out, strerror(errno));
    }
    fprintf(o, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
               "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"13\">\n",
            W, H, W, H);
    fprintf(o, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
    fprintf(o, "<text x=\"%d\" y=\"30\" font-size=\"17\" text-anchor=\"middle\">", W / 2);
    xml_text(o, title && *title ? title : in);
    fprintf(o, "</text>\n");

    /* Grid and axes. */
    for (double y = 0; y <= ymax + 1e-9; y += ystep) {
        fprintf(o, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#e5e5e5\"/>\n", ML,
                W - MR, PY(y), PY(y));
        fprintf(o, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n", ML - 8, PY(y) + 4, y);
    }
    for (double x = 0; x <= xmax + 1e-9; x += xstep) {
        fprintf(o, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" stroke=\"#f0f0f0\"/>\n", PX(x),
                PX(x), MT, H - MB);
        fprintf(o, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%g</text>\n", PX(x), H - MB + 18, x);
    }
    fprintf(o, "<rect x=\"%d\" y=\"%d\" width=\"%.0f\" height=\"%.0f\" fill=\"none\" "
               "stroke=\"#444\"/>\n", ML, MT, pw, ph);
    fprintf(o, "<text x=\"%.0f\" y=\"%d\" text-anchor=\"middle\">step</text>\n", ML + pw / 2, H - 18);
    fprintf(o, "<text transform=\"translate(22 %.0f) rotate(-90)\" text-anchor=\"middle\" "
               "fill=\"#08519c\">training loss</text>\n", MT + ph / 2);
    if (acc.n) {
        for (double a = alo; a <= 100 + 1e-9; a += 10)
            fprintf(o, "<text x=\"%d\" y=\"%.1f\" fill=\"#d94801\">%g%%</text>\n", W - MR + 8,
                    PA(a) + 4, a);
        fprintf(o, "<text transform=\"translate(%d %.0f) rotate(90)\" text-anchor=\"middle\" "
                   "fill=\"#d94801\">test accuracy</text>\n", W - 22, MT + ph / 2);
    }

    /* Raw loss, thinned to at most MAX_POINTS points. */
    size_t stride = loss.n > MAX_POINTS ? (loss.n + MAX_POINTS - 1) / MAX_POINTS : 1;
    fprintf(o, "<polyline fill=\"none\" stroke=\"#9ecae1\" stroke-width=\"1\" points=\"");
    for (size_t i = 0; i < loss.n; i += stride)
        fprintf(o, "%.1f,%.1f ", PX((double)loss.p[i].step), PY(loss.p[i].v));
    fprintf(o, "\"/>\n");
    /* Smoothed loss. */
    double window = loss.n / 50.0 < 1 ? 1 : loss.n / 50.0, alpha = 2.0 / (window + 1), ema = loss.p[0].v;
    fprintf(o, "<polyline fill=\"none\" stroke=\"#08519c\" stroke-width=\"2\" points=\"");
    for (size_t i = 0; i < loss.n; i++) {
        ema += alpha * (loss.p[i].v - ema);
        if (i % stride == 0 || i + 1 == loss.n)
            fprintf(o, "%.1f,%.1f ", PX((double)loss.p[i].step), PY(ema));
    }
    fprintf(o, "\"/>\n");
    /* Accuracy. */
    if (acc.n) {
        fprintf(o, "<polyline fill=\"none\" stroke=\"#d94801\" stroke-width=\"2\" points=\"");
        for (size_t i = 0; i < acc.n; i++)
            fprintf(o, "%.1f,%.1f ", PX((double)acc.p[i].step), PA(acc.p[i].v));
        fprintf(o, "\"/>\n");
        for (size_t i = 0; i < acc.n; i++)
            fprintf(o, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"#d94801\"/>\n",
                    PX((double)acc.p[i].step), PA(acc.p[i].v));
        const point_t *last = &acc.p[acc.n - 1];
        fprintf(o, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" fill=\"#d94801\">%.2f%%</text>\n",
                PX((double)last->step) - 6, PA(last->v) - 8, last->v);
    }
    /* Legend. */
    int lx = W - MR - 200, ly = MT + 14;
    fprintf(o, "<rect x=\"%d\" y=\"%d\" width=\"192\" height=\"%d\" fill=\"white\" "
               "fill-opacity=\"0.85\" stroke=\"#ccc\"/>\n", lx - 8, ly - 12, acc.n ? 62 : 42);
    fprintf(o, "<line x1=\"%d\" x2=\"%d\" y1=\"%d\" y2=\"%d\" stroke=\"#9ecae1\"/>"
               "<text x=\"%d\" y=\"%d\">loss per step</text>\n", lx, lx + 24, ly, ly, lx + 32, ly + 4);
    fprintf(o, "<line x1=\"%d\" x2=\"%d\" y1=\"%d\" y2=\"%d\" stroke=\"#08519c\" stroke-width=\"2\"/>"
               "<text x=\"%d\" y=\"%d\">loss, smoothed</text>\n", lx, lx + 24, ly + 20, ly + 20,
            lx + 32, ly + 24);
    if (acc.n)
        fprintf(o, "<line x1=\"%d\" x2=\"%d\" y1=\"%d\" y2=\"%d\" stroke=\"#d94801\" "
                   "stroke-width=\"2\"/><text x=\"%d\" y=\"%d\">test accuracy</text>\n",
                lx, lx + 24, ly + 40, ly + 40, lx + 32, ly + 44);
    fprintf(o, "</svg>\n");
#undef PX
#undef PY
#undef PA
    free(loss.p);
    free(acc.p);
    if (ferror(o) | (fclose(o) != 0))
        return sym__error(SYM_EIO, "cannot write %s: %s", out, strerror(errno));
    return SYM_OK;
}
