/*
 * train_e2e.h — helpers for the end-to-end training tests: each test is a
 * plain program that runs `symrun -n N symtrain train ...` as a user would
 * (paths to both come as argv[1] and argv[2]) and checks what it leaves
 * behind: exit status, output, checkpoints, metrics files.
 *
 * Every run gets a fresh directory under $TMPDIR, removed at the end unless
 * the test fails (then its path is printed, to look inside).
 */
#ifndef SYM_TRAIN_E2E_H
#define SYM_TRAIN_E2E_H

#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test.h"
#include "test_nobody.h"

static const char *e2e_symrun, *e2e_symtrain;
static char e2e_dir[512];
static int e2e_nobody; /* set: runs started as root drop to nobody (test_nobody.h) */

static inline void e2e_cleanup(void) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", e2e_dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", e2e_dir);
}

/* Check argv, make the work directory. */
static inline void e2e_init(int argc, char **argv, const char *name) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s SYMRUN SYMTRAIN\n", argv[0]);
        exit(2);
    }
    e2e_symrun = argv[1];
    e2e_symtrain = argv[2];
    const char *tmp = getenv("TMPDIR");
    snprintf(e2e_dir, sizeof e2e_dir, "%s/%s.XXXXXX", tmp && *tmp ? tmp : "/tmp", name);
    CHECK(mkdtemp(e2e_dir) != NULL, "mkdtemp %s: %s", e2e_dir, strerror(errno));
    printf("%s: working in %s\n", name, e2e_dir);
    fflush(stdout);
}

/* A path inside the work directory, valid until the test ends (held in a
 * list, so the leak checker of make test-sanitize sees it kept, not lost). */
static inline const char *e2e_path(const char *fmt, ...) {
    static struct e2e_kept {
        struct e2e_kept *next;
        char s[];
    } *kept;
    char rel[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(rel, sizeof rel, fmt, ap);
    va_end(ap);
    size_t len = strlen(e2e_dir) + strlen(rel) + 2;
    struct e2e_kept *k = malloc(sizeof *k + len);
    CHECK(k != NULL, "out of memory");
    k->next = kept;
    kept = k;
    snprintf(k->s, len, "%s/%s", e2e_dir, rel);
    return k->s;
}

typedef struct {
    pid_t pid;
    char log[768];
} e2e_proc_t;

/* fork(): in the child stdout and stderr go to `log` (created or emptied). */
static inline pid_t e2e_fork_logged(const char *log) {
    fflush(stdout);
    pid_t pid = fork();
    CHECK(pid >= 0, "fork: %s", strerror(errno));
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0) _exit(126);
        dup2(fd, 1);
        dup2(fd, 2);
    }
    return pid;
}

/* Start `symrun -n npes [symrun_opts] symtrain train <args>` with stdout and
 * stderr going to log, and `env` (NAME=VALUE, several separated by spaces, or
 * NULL) added. args is one string split on spaces. */
static inline e2e_proc_t e2e_start(int npes, const char *symrun_opts, const char *env, const char *log,
                            const char *args) {
    e2e_proc_t p;
    snprintf(p.log, sizeof p.log, "%s", log);
    char line[4096];
    snprintf(line, sizeof line, "%s", args);
    char *argv[128];
    int n = 0;
    char np[16];
    snprintf(np, sizeof np, "%d", npes);
    argv[n++] = (char *)e2e_symrun;
    argv[n++] = "-n";
    argv[n++] = np;
    argv[n++] = "--timeout";
    argv[n++] = "100";
    char opts[256] = "";
    if (symrun_opts) snprintf(opts, sizeof opts, "%s", symrun_opts);
    for (char *t = strtok(opts, " "); t; t = strtok(NULL, " ")) argv[n++] = t;
    argv[n++] = (char *)e2e_symtrain;
    argv[n++] = "train";
    for (char *t = strtok(line, " "); t && n < 126; t = strtok(NULL, " ")) argv[n++] = t;
    argv[n] = NULL;
    if ((p.pid = e2e_fork_logged(log)) == 0) {
        for (char *t = env ? strtok(strdup(env), " ") : NULL; t; t = strtok(NULL, " "))
            putenv(t); /* NAME=VALUE, one or several separated by spaces */
        if (e2e_nobody && test_become_nobody() < 0) _exit(77);
        execv(argv[0], argv);
        _exit(127);
    }
    return p;
}

/* Wait for it; returns the exit status (128 + signal if killed). */
static inline int e2e_wait(e2e_proc_t *p) {
    int st;
    while (waitpid(p->pid, &st, 0) < 0)
        CHECK(errno == EINTR, "waitpid: %s", strerror(errno));
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* The whole file (NUL-terminated, malloc'd), or NULL. *len may be NULL. */
static inline char *e2e_read(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    CHECK(buf != NULL, "out of memory");
    size_t got = fread(buf, 1, (size_t)n, f);
    fclose(f);
    buf[got] = '\0';
    if (len) *len = got;
    return buf;
}

static inline void e2e_show(const char *log) {
    char *s = e2e_read(log, NULL);
    fprintf(stderr, "---- %s ----\n%s---- end ----\n", log, s ? s : "(missing)\n");
    free(s);
}

/* Run to completion; the exit status must be `want` (the log is shown if not). */
static inline void e2e_run(int npes, const char *symrun_opts, const char *env, const char *log,
                    int want, const char *args) {
    e2e_proc_t p = e2e_start(npes, symrun_opts, env, log, args);
    int rc = e2e_wait(&p);
    if (rc != want) e2e_show(log);
    CHECK(rc == want, "symrun -n %d symtrain train %s: exit status %d, expected %d", npes, args,
          rc, want);
}

/* Run a shell command line with stdout and stderr into log; its exit status. */
static inline int e2e_sh(const char *log, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline int e2e_sh(const char *log, const char *fmt, ...) {
    char cmd[4096], full[5000];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    snprintf(full, sizeof full, "(%s) > '%s' 2>&1", cmd, log);
    fflush(stdout);
    int st = system(full);
    CHECK(st != -1, "system: %s", strerror(errno));
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Occurrences of needle in a file. */
static inline int e2e_count(const char *log, const char *needle) {
    char *s = e2e_read(log, NULL);
    int n = 0;
    for (char *p = s; p && (p = strstr(p, needle)); p += strlen(needle)) n++;
    free(s);
    return n;
}

static inline int e2e_log_has(const char *log, const char *needle) {
    char *s = e2e_read(log, NULL);
    int found = s && strstr(s, needle);
    free(s);
    return found;
}

static inline void e2e_expect_log(const char *log, const char *needle) {
    if (!e2e_log_has(log, needle)) e2e_show(log);
    CHECK(e2e_log_has(log, needle), "%s does not say \"%s\"", log, needle);
}

/* The newest step-NNNNNNNN directory in ckdir; its step, or -1. */
static inline long long e2e_newest(const char *ckdir, char *path, size_t len) {
    DIR *d = opendir(ckdir);
    if (!d) return -1;
    long long best = -1;
    struct dirent *e;
    while ((e = readdir(d)))
        if (!strncmp(e->d_name, "step-", 5)) {
            long long s = atoll(e->d_name + 5);
            if (s > best) best = s;
        }
    closedir(d);
    if (best >= 0 && path) snprintf(path, len, "%s/step-%08lld", ckdir, best);
    return best;
}

/* The floats of the newest checkpoint's `file` in ckdir (malloc'd). */
static inline float *e2e_weights(const char *ckdir, const char *file, size_t *n) {
    char dir[700], path[800];
    CHECK(e2e_newest(ckdir, dir, sizeof dir) >= 0, "no checkpoint in %s", ckdir);
    snprintf(path, sizeof path, "%s/%s", dir, file);
    size_t len;
    char *buf = e2e_read(path, &len);
    CHECK(buf != NULL, "cannot read %s", path);
    *n = len / sizeof(float);
    return (float *)buf;
}

/* `key` of every step record (eval 0) or evaluation record (eval 1) of a
 * metrics file, in order, into out (at most max); how many. */
static inline int e2e_values(const char *metrics, const char *key, int eval, double *out, int max) {
    char *s = e2e_read(metrics, NULL), pat[64];
    CHECK(s != NULL, "cannot read %s", metrics);
    snprintf(pat, sizeof pat, "\"%s\":", key);
    int n = 0;
    for (char *line = strtok(s, "\n"); line; line = strtok(NULL, "\n")) {
        if ((strstr(line, "\"eval\"") != NULL) != eval) continue;
        char *p = strstr(line, pat);
        CHECK(p && n < max, "%s: a record without %s (or too many): %s", metrics, key, line);
        out[n++] = strtod(p + strlen(pat), NULL);
    }
    free(s);
    return n;
}

/* The 1-PE run of `args` (a GPT evaluated `evals` times), its metrics in
 * np1.jsonl: every step's loss and gradient norm (`steps` of them) and the
 * validation losses, the reference a layout test compares with; its loss
 * must fall by more than 1, so a comparison with it is not blind. */
static inline void e2e_reference(const char *args, int steps, double *loss, double *norm,
                                 int evals, double *val) {
    char line[2048];
    snprintf(line, sizeof line, "%s --metrics %s", args, e2e_path("np1.jsonl"));
    e2e_run(1, NULL, NULL, e2e_path("np1.log"), 0, line);
    const char *m = e2e_path("np1.jsonl");
    CHECK(e2e_values(m, "loss", 0, loss, steps) == steps, "1 PE: not %d steps", steps);
    CHECK(e2e_values(m, "grad_norm", 0, norm, steps) == steps, "1 PE: not %d norms", steps);
    CHECK(e2e_values(m, "test_loss", 1, val, evals) == evals, "1 PE: not %d evaluations", evals);
    CHECK(loss[steps - 1] < loss[0] - 1.0, "the loss went from %.4f to %.4f: not learning",
          loss[0], loss[steps - 1]);
}

/* Loss per step from a metrics file: loss[step - 1], the last record of a step
 * winning; *n = the highest step. Every step 1..n must be present. */
static inline double *e2e_losses(const char *metrics, long long *n) {
    char *s = e2e_read(metrics, NULL);
    CHECK(s != NULL, "cannot read %s", metrics);
    long long cap = 1024, hi = 0;
    double *loss = calloc((size_t)cap, sizeof *loss);
    char *seen = calloc((size_t)cap, 1);
    for (char *line = strtok(s, "\n"); line; line = strtok(NULL, "\n")) {
        if (strstr(line, "\"eval\"")) continue;
        char *ps = strstr(line, "\"step\":"), *pl = strstr(line, "\"loss\":");
        CHECK(ps && pl, "%s: not a step record: %s", metrics, line);
        long long step = atoll(ps + 7);
        CHECK(step >= 1, "%s: bad step in %s", metrics, line);
        while (step > cap) {
            loss = realloc(loss, sizeof *loss * (size_t)cap * 2);
            seen = realloc(seen, (size_t)cap * 2);
            memset(seen + cap, 0, (size_t)cap);
            cap *= 2;
        }
        loss[step - 1] = strtod(pl + 7, NULL);
        seen[step - 1] = 1;
        if (step > hi) hi = step;
    }
    for (long long i = 0; i < hi; i++) CHECK(seen[i], "%s has no record of step %lld", metrics, i + 1);
    free(s);
    free(seen);
    *n = hi;
    return loss;
}

/* A GPU run's log says the job had no GPU, or no GPU part of symtrain: the
 * GPU tests then SKIP. */
static inline int e2e_no_gpu(const char *log) {
    return e2e_log_has(log, "cannot use a GPU") ||
           e2e_log_has(log, "GPU part of symtrain is not available");
}

/* The number after `key` in each record of a metrics file: the step records'
 * (evals 0) or the evaluations' (evals 1), in file order, into out (cap at
 * most); how many. */
static inline int e2e_fields(const char *metrics, const char *key, int evals, double *out,
                             int cap) {
    char *s = e2e_read(metrics, NULL);
    CHECK(s != NULL, "cannot read %s", metrics);
    int n = 0;
    for (char *line = strtok(s, "\n"); line; line = strtok(NULL, "\n")) {
        if (!strstr(line, "\"eval\"") != !evals) continue;
        char *p = strstr(line, key);
        CHECK(p != NULL, "%s: a record without %s: %s", metrics, key, line);
        CHECK(n < cap, "%s: more than %d records", metrics, cap);
        out[n++] = strtod(p + strlen(key), NULL);
    }
    free(s);
    return n;
}

/* A size as the log writes it ("12.3 MiB", sym__fmt_size), in bytes. */
static inline double e2e_size_at(const char *p) {
    char *end;
    double v = strtod(p, &end);
    CHECK(end != p, "not a size: %.20s", p);
    while (*end == ' ') end++;
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB"};
    for (int u = 3; u >= 0; u--)
        if (!strncmp(end, unit[u], strlen(unit[u]))) return v * pow(1024, u);
    CHECK(0, "not a size: %.20s", p);
    return 0;
}

/* `symtrain train` on npes PEs: `base` (the test's options), --device,
 * --max-steps, --metrics NAME.jsonl, then `extra`; the log NAME.log; it must
 * succeed. */
static inline void e2e_train(const char *name, int npes, const char *base, const char *device,
                             int steps, const char *extra) {
    char args[4096];
    snprintf(args, sizeof args, "%s --device %s --max-steps %d --metrics %s %s", base, device,
             steps, e2e_path("%s.jsonl", name), extra ? extra : "");
    e2e_run(npes, NULL, NULL, e2e_path("%s.log", name), 0, args);
}

/* A GPU test's first run (1 PE, `args`, log NAME.log): where there is no GPU
 * or no GPU part it says SKIP and the test exits 77; otherwise it must
 * succeed. */
static inline void e2e_gpu_first(const char *test, const char *name, const char *args) {
    const char *log = e2e_path("%s.log", name);
    e2e_proc_t p = e2e_start(1, NULL, NULL, log, args);
    int rc = e2e_wait(&p);
    if (rc != 0 && e2e_no_gpu(log)) {
        printf("SKIP: %s: no GPU or no GPU part\n", test);
        e2e_cleanup();
        exit(77);
    }
    if (rc != 0) e2e_show(log);
    CHECK(rc == 0, "symtrain train %s: exit status %d", args, rc);
}

/* A 16-bit GPU run `got` (metrics file) against the fp32 run `ref`: every one
 * of `steps` losses within train_gpt_gpu's bf16 tolerance (0.05 + 2%), and
 * learning (the loss down by more than 0.5). */
static inline void e2e_low_precision(const char *test, const char *what, const char *got,
                                     const char *ref, int steps) {
    enum { CAP = 256 };
    double lc[CAP], lb[CAP], worst = 0;
    CHECK(steps <= CAP && e2e_fields(ref, "\"loss\":", 0, lc, CAP) == steps &&
              e2e_fields(got, "\"loss\":", 0, lb, CAP) == steps,
          "%s: not %d steps", what, steps);
    for (int k = 0; k < steps; k++) {
        CHECK(fabs(lb[k] - lc[k]) < 0.05 + 0.02 * fabs(lc[k]), "%s, step %d: loss %.6f, the fp32 "
              "run's %.6f", what, k + 1, lb[k], lc[k]);
        worst = fmax(worst, fabs(lb[k] - lc[k]));
    }
    CHECK(lb[steps - 1] < lb[0] - 0.5, "%s: the loss went from %.4f to %.4f: not learning", what,
          lb[0], lb[steps - 1]);
    printf("%s: %s: within %.4f of the fp32 run, loss %.4f -> %.4f\n", test, what, worst, lb[0],
           lb[steps - 1]);
}

/* Records from..steps (1-based) of metrics file `got` match those of `ref` (a
 * full run of `steps`, with ref_evals evaluations) to tol: each loss, the
 * last got_evals evaluations, and the gradient norms, step 1's to tol and
 * later ones to drift (they see the weights' fp32 drift, which the gradient
 * amplifies). Prints the worst differences under `test`'s name. */
static inline void e2e_match(const char *test, const char *what, const char *got,
                             const char *ref, int steps, int from, double tol, double drift,
                             int ref_evals, int got_evals) {
    enum { CAP = 256 };
    double rl[CAP], gl[CAP], rn[CAP], gn[CAP], rv[CAP], gv[CAP];
    int k = steps - from + 1;
    CHECK(steps <= CAP && k >= 1 && got_evals <= ref_evals, "e2e_match: %d steps from %d", steps,
          from);
    CHECK(e2e_fields(ref, "\"loss\":", 0, rl, CAP) == steps, "%s: not %d steps", ref, steps);
    CHECK(e2e_fields(ref, "\"grad_norm\":", 0, rn, CAP) == steps, "%s: norms", ref);
    CHECK(e2e_fields(ref, "\"test_loss\":", 1, rv, CAP) == ref_evals, "%s: not %d evaluations",
          ref, ref_evals);
    CHECK(e2e_fields(got, "\"loss\":", 0, gl, CAP) == k, "%s: not %d step records", what, k);
    CHECK(e2e_fields(got, "\"grad_norm\":", 0, gn, CAP) == k, "%s: norms", what);
    double worst = 0, worst_n = 0, first_n = -1;
    for (int i = 0; i < k; i++) {
        int s = from - 1 + i;
        double dl = fabs(gl[i] - rl[s]) / fmax(fabs(rl[s]), 1e-30);
        double dn = fabs(gn[i] - rn[s]) / fmax(fabs(rn[s]), 1e-30), tn = s == 0 ? tol : drift;
        CHECK(dl <= tol, "%s, step %d: loss %.9g, the reference's %.9g (%.2g relative, "
              "tolerance %g)", what, s + 1, gl[i], rl[s], dl, tol);
        CHECK(dn <= tn, "%s, step %d: gradient norm %.7g, the reference's %.7g (%.2g relative, "
              "tolerance %g)", what, s + 1, gn[i], rn[s], dn, tn);
        worst = fmax(worst, dl);
        worst_n = fmax(worst_n, dn);
        if (s == 0) first_n = dn;
    }
    int ne = e2e_fields(got, "\"test_loss\":", 1, gv, CAP);
    CHECK(ne == got_evals, "%s: %d evaluations, not %d", what, ne, got_evals);
    for (int i = 0; i < ne; i++) {
        double r = rv[ref_evals - ne + i];
        CHECK(fabs(gv[i] - r) <= tol * fmax(fabs(r), 1e-30), "%s: validation loss %.9g, the "
              "reference's %.9g", what, gv[i], r);
    }
    printf("%s: %s: steps %d-%d within %.2e (losses) and %.2e (norms; step 1's %.2e) "
           "relative\n", test, what, from, steps, worst, worst_n, first_n);
}

/* Byte-identical files. */
static inline void e2e_same_file(const char *a, const char *b) {
    size_t la = 0, lb = 0;
    char *x = e2e_read(a, &la), *y = e2e_read(b, &lb);
    CHECK(x && y, "cannot read %s or %s", a, b);
    CHECK(la == lb, "%s is %zu bytes, %s %zu", a, la, b, lb);
    for (size_t i = 0; i < la; i++)
        CHECK(x[i] == y[i], "%s and %s differ first at byte %zu", a, b, i);
    free(x);
    free(y);
}

/* The newest checkpoint's file in two directories: byte-identical. */
static inline void e2e_same_ckpt_file(const char *ck1, const char *ck2, const char *file) {
    char d1[700], d2[700], a[800], b[800];
    CHECK(e2e_newest(ck1, d1, sizeof d1) >= 0, "no checkpoint in %s", ck1);
    CHECK(e2e_newest(ck2, d2, sizeof d2) >= 0, "no checkpoint in %s", ck2);
    snprintf(a, sizeof a, "%s/%s", d1, file);
    snprintf(b, sizeof b, "%s/%s", d2, file);
    e2e_same_file(a, b);
}

static inline void e2e_sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* In a PE forked the torchrun way (SYMTRAIN_BOOTSTRAP=env): its rank, its
 * place on its host, the job's size and the rendezvous. */
static inline void e2e_env_rank(int rank, int local, int world, int local_world,
                                const char *addr, const char *port) {
    char v[32];
    setenv("SYMTRAIN_BOOTSTRAP", "env", 1);
    snprintf(v, sizeof v, "%d", rank);
    setenv("RANK", v, 1);
    snprintf(v, sizeof v, "%d", local);
    setenv("LOCAL_RANK", v, 1);
    snprintf(v, sizeof v, "%d", world);
    setenv("WORLD_SIZE", v, 1);
    snprintf(v, sizeof v, "%d", local_world);
    setenv("LOCAL_WORLD_SIZE", v, 1);
    setenv("MASTER_ADDR", addr, 1);
    setenv("MASTER_PORT", port, 1);
    setenv("SYMTRAIN_JOB_TOKEN", "0123456789abcdef0123456789abcdef", 1);
    setenv("SYMTRAIN_BOOT_TIMEOUT", "60", 1);
}

/* One attempt of n PEs (pid[], this process's children) to its end, as a
 * launcher that restarts whole jobs runs it: the first PE that fails gets
 * the others killed, and an attempt past deadline_s seconds has hung (all
 * killed, all failed). Returns how many failed. */
static inline int e2e_wait_attempt(pid_t *pid, int n, int deadline_s, const char *what) {
    int failed = 0, left = n;
    time_t end = time(NULL) + deadline_s;
    while (left > 0) {
        int st;
        pid_t got = waitpid(-1, &st, WNOHANG);
        if (got == 0) {
            if (time(NULL) > end) {
                printf("%s: an attempt ran past %d s: killed\n", what, deadline_s);
                for (int q = 0; q < n; q++)
                    if (pid[q] > 0) kill(pid[q], SIGKILL);
                end = time(NULL) + 30;
                failed = n;
            }
            e2e_sleep_ms(20);
            continue;
        }
        if (got < 0 && errno == EINTR) continue;
        CHECK(got > 0, "waitpid: %s", strerror(errno));
        int r = 0;
        while (r < n && pid[r] != got) r++;
        if (r == n) continue;
        pid[r] = 0;
        left--;
        if (WIFEXITED(st) && WEXITSTATUS(st) == 0) continue;
        failed++;
        for (int q = 0; q < n; q++) /* the launcher ends the attempt */
            if (pid[q] > 0) kill(pid[q], SIGKILL);
    }
    return failed;
}

/* Lines in a file (0 if it does not exist). */
static inline int e2e_lines(const char *path) {
    char *s = e2e_read(path, NULL);
    int n = 0;
    for (char *p = s; p && *p; p++) n += *p == '\n';
    free(s);
    return n;
}

/* Every step record of metrics file `other` (replays included) has the loss
 * of reference `ref` (which has `steps` steps); with `replayed`, some steps
 * must have been run twice. */
static inline void e2e_same_losses(const char *ref, const char *other, long long steps,
                                   int replayed) {
    long long n;
    double *a = e2e_losses(ref, &n);
    CHECK(n == steps, "%s has %lld steps, expected %lld", ref, n, steps);
    char *s = e2e_read(other, NULL);
    CHECK(s != NULL, "cannot read %s", other);
    int records = 0;
    for (char *line = strtok(s, "\n"); line; line = strtok(NULL, "\n")) {
        if (strstr(line, "\"eval\"")) continue;
        char *ps = strstr(line, "\"step\":"), *pl = strstr(line, "\"loss\":");
        CHECK(ps && pl, "%s: not a step record: %s", other, line);
        long long step = atoll(ps + 7);
        double loss = strtod(pl + 7, NULL);
        CHECK(step >= 1 && step <= n, "%s: step %lld out of range", other, step);
        CHECK(loss == a[step - 1], "step %lld: loss %.9g after the restart, %.9g uninterrupted",
              step, loss, a[step - 1]);
        records++;
    }
    CHECK(records >= n, "%s has %d records for %lld steps", other, records, n);
    if (replayed)
        CHECK(records > n, "%s has %d records for %lld steps: no step was replayed", other, records,
              n);
    free(s);
    free(a);
}

/* The step the (restarted) run of `log` says it resumed from. */
static inline long long e2e_resumed_from(const char *log) {
    char *text = e2e_read(log, NULL), *at = text ? strstr(text, "resumed from ") : NULL;
    if (at) at = strstr(at, "/step-");
    if (!at) e2e_show(log);
    CHECK(at != NULL, "the restarted job did not say where it resumed");
    long long resumed = atoll(at + 6);
    free(text);
    return resumed;
}

/* A crash mid-run, restarted by `symrun --max-restarts 1`, ends with exactly
 * the weights of a run that was never interrupted: a reference run of `args`
 * on npes PEs, then the same with checkpoints every ckpt_steps steps,
 * --resume=auto (the first attempt finds none) and `kill_env`
 * (SYMTRAIN_TEST_KILL_AT=PE:STEP, kill_step its STEP) killing one PE on the
 * first attempt. The restart resumes from a whole
 * checkpoint up to the kill step (how far the background writer got decides
 * which); both runs end at `steps`; model.bin, optim.bin and every loss
 * (replayed ones included) are bit-identical. Returns the step resumed from. */
static inline long long e2e_crash_resume(const char *args, int n, const char *kill_env,
                                         long long kill_step, int ckpt_steps, long long steps) {
    char line[2048];
    snprintf(line, sizeof line, "%s --ckpt-dir %s --metrics %s", args, e2e_path("ref%d", n),
             e2e_path("ref%d.jsonl", n));
    e2e_run(n, NULL, NULL, e2e_path("ref%d.log", n), 0, line);
    snprintf(line, sizeof line, "%s --ckpt-dir %s --ckpt-steps %d --resume=auto --metrics %s", args,
             e2e_path("crash%d", n), ckpt_steps, e2e_path("crash%d.jsonl", n));
    const char *log = e2e_path("crash%d.log", n);
    e2e_run(n, "--max-restarts 1", kill_env, log, 0, line);
    e2e_expect_log(log, "was killed by signal 9");
    e2e_expect_log(log, "restarting the job (restart 1 of 1)");
    e2e_expect_log(log, "the job succeeded after 1 restart");
    long long resumed = e2e_resumed_from(log);
    CHECK(resumed > 0 && resumed % ckpt_steps == 0 && resumed <= kill_step,
          "resumed from step %lld after a kill at step %lld", resumed, kill_step);
    CHECK(e2e_newest(e2e_path("ref%d", n), NULL, 0) == steps, "the reference ended at step %lld",
          e2e_newest(e2e_path("ref%d", n), NULL, 0));
    CHECK(e2e_newest(e2e_path("crash%d", n), NULL, 0) == steps,
          "the restarted run ended at step %lld", e2e_newest(e2e_path("crash%d", n), NULL, 0));
    e2e_same_ckpt_file(e2e_path("ref%d", n), e2e_path("crash%d", n), "model.bin");
    e2e_same_ckpt_file(e2e_path("ref%d", n), e2e_path("crash%d", n), "optim.bin");
    /* the steps between the checkpoint and the kill ran twice */
    e2e_same_losses(e2e_path("ref%d.jsonl", n), e2e_path("crash%d.jsonl", n), steps,
                    resumed < kill_step);
    return resumed;
}

#endif
