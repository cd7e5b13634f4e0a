/*
 * autoplan.c — `symtrain train --parallel auto` (autoplan.h): the planner's
 * fastest layout for this job, on every PE the same.
 *
 * The request is the job's (sym_plan_train_request: model, PEs, global
 * batch, sequence, optimizer, bucket) with this machine's figures: on the
 * CPU PE 0 measures a training pass of the model's width and a copy while
 * the other PEs wait in the broadcast (they sleep there, so the measurement
 * has the cores to itself, and sym_plan_measure_cpu shares them out over the
 * PEs of this host, on --threads each where that is fewer than their share);
 * on the GPU the recorded H200 figures. PE 0 walks the
 * candidates fastest first and takes the first that fits and that the
 * training loop trains beside the job's other options, then broadcasts the
 * layout and the rates: one decision, so no PE can reach another.
 *
 * Pipelines are planned at every count of virtual stages their layers and
 * micro-batches allow, or with --virtual-stages V at that V alone (and then
 * only pipelines, as a given layout with --virtual-stages must be one).
 *
 * With --ckpt-dir the choice is kept in DIR/parallel-auto (one line, the
 * planner's spelling: dp=2,tp=2,pp=1,micro=1,zero=0, and ",v=V" after it
 * with V virtual stages), and a --resume takes
 * the layout from there while it still fits the job: a restarted job trains
 * the layout it started with (measured rates move from run to run, and a
 * different layout would sum in another order). PE 0 reads and writes it
 * holding the directory's lock (sym_ckpt_lock), released before the loop
 * takes it for the run.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <symtrain/ckpt.h>
#include <symtrain/plan.h>
#include <symtrain/train.h>

#include "autoplan.h"
#include "core/device.h"
#include "internal.h"
#include "util/util.h"

/* Model chunks a stage of l: its virtual stages, 1 without. */
static int chunks(const sym_plan_layout_t *l) {
    return l->virtual_stages > 1 ? l->virtual_stages : 1;
}

/* c with layout l: the sizes, the micro-batches, the ZeRO stage, the virtual stages. */
static void apply(const sym_train_config_t *c, const sym_plan_layout_t *l, sym_train_config_t *o) {
    *o = *c;
    o->parallel.dp = l->dp;
    o->parallel.tp = l->tp;
    o->parallel.pp = l->pp;
    o->parallel.plan = 0;
    o->micro_batches = l->pp > 1 || l->micro > 1 ? l->micro : 0;
    o->zero = l->zero;
    o->virtual_stages = l->pp > 1 ? chunks(l) : 0;
}

/* Whether the training loop trains layout l with the job's other options:
 * its validation, what a pipeline refuses at set-up, and --virtual-stages V
 * where given (a pipeline of V chunks a stage). */
static int trains_here(const sym_train_config_t *c, const sym_plan_layout_t *l, int npes) {
    if (c->virtual_stages >= 1 && chunks(l) != c->virtual_stages) return 0; /* pp=1: 1 chunk */
    sym_train_config_t t;
    apply(c, l, &t);
    if (l->pp > 1 && sym__pipe_refusal(&t)) return 0;
    return sym_train_validate(&t, npes) == SYM_OK;
}

/* Host cores this PE may use (affinity, a container's limit) and PEs on this host. */
static void host_share(int *cores, int *local) {
    cpu_set_t set;
    int cpus = 1;
    if (sched_getaffinity(0, sizeof set, &set) == 0) cpus = CPU_COUNT(&set);
    long quota = sym__cpu_limit();
    if (quota > 0 && quota < cpus) cpus = (int)quota;
    *cores = cpus;
    *local = shmem_team_n_pes(SHMEM_TEAM_SHARED);
    if (*local < 1) *local = 1;
}

static int say_layout(char *buf, size_t len, const sym_plan_layout_t *l) {
    int n = snprintf(buf, len, "dp=%d,tp=%d,pp=%d, %d micro-batch%s, ZeRO-%d", l->dp, l->tp, l->pp,
                     l->micro, l->micro == 1 ? "" : "es", l->zero);
    if (chunks(l) > 1 && n > 0 && (size_t)n < len)
        n += snprintf(buf + n, len - (size_t)n, ", %d virtual stages", chunks(l));
    return n;
}

/* ---- DIR/parallel-auto: the layout a job started with ---- */

static const char keep_name[] = "parallel-auto";

/* The layout kept in dir: 1, 0 when there is none, -1 when it cannot be read. */
static int keep_read(const char *dir, sym_plan_layout_t *l) {
    char path[4096], text[128];
    snprintf(path, sizeof path, "%s/%s", dir, keep_name);
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return errno == ENOENT ? 0 : -1;
    ssize_t n = read(fd, text, sizeof text - 1);
    close(fd);
    if (n <= 0) return -1;
    text[n] = '\0';
    *l = (sym_plan_layout_t){0};
    int used = 0;
    if (sscanf(text, "dp=%d,tp=%d,pp=%d,micro=%d,zero=%d%n", &l->dp, &l->tp, &l->pp, &l->micro,
               &l->zero, &used) != 5)
        return -1;
    const char *rest = text + used;
    if (!strncmp(rest, ",v=", 3) && (sscanf(rest, ",v=%d%n", &l->virtual_stages, &used) != 1 ||
                                     l->virtual_stages < 2))
        return -1;
    if (!strncmp(rest, ",v=", 3)) rest += used;
    return *rest == '\n' || *rest == '\0' ? 1 : -1;
}

/* Keep l in dir (written beside, then renamed over); 0 or errno. */
static int keep_write(const char *dir, const sym_plan_layout_t *l) {
    char path[4096], tmp[4096], text[128];
    snprintf(path, sizeof path, "%s/%s", dir, keep_name);
    snprintf(tmp, sizeof tmp, "%s/.%s.tmp", dir, keep_name);
    int n = snprintf(text, sizeof text, "dp=%d,tp=%d,pp=%d,micro=%d,zero=%d", l->dp, l->tp, l->pp,
                     l->micro, l->zero);
    if (chunks(l) > 1) n += snprintf(text + n, sizeof text - (size_t)n, ",v=%d", chunks(l));
    text[n++] = '\n';
    unlink(tmp);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) return errno;
    int e = write(fd, text, (size_t)n) == n && fsync(fd) == 0 ? 0 : (errno ? errno : EIO);
    if (close(fd) && !e) e = errno;
    if (!e && rename(tmp, path)) e = errno;
    if (e) unlink(tmp);
    return e;
}

/* PE 0: the choice into *l and the rates into r; the line into why. keep:
 * the directory whose parallel-auto is read (on --resume) and written, or NULL. */
static int choose(const sym_train_config_t *c, const char *keep, int npes, sym_plan_request_t *r,
                  sym_plan_layout_t *l, char *why, size_t len) {
    int gpu = c->device == SYM_TRAIN_GPU;
    if (c->device == SYM_TRAIN_AUTO) {
        const struct sym_cuda_backend *be = sym__cuda_backend();
        gpu = be && be->device_count() > 0;
    }
    int cores, local;
    host_share(&cores, &local);
    /* the PEs sharing this host's cores, on --threads each where given */
    int use = c->threads && c->threads * local < cores ? c->threads * local : cores;
    int threads = local <= use ? use / local : 1; /* as sym_plan_measure_cpu divides them */
    size_t mem = 0; /* the GPU's free memory is known once a model is built: no limit */
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (!gpu && pages > 0 && page > 0) mem = (size_t)pages * (size_t)page / (size_t)local;
    sym_plan_train_request(c, npes, gpu, mem, r);
    char note[4600] = "";
    int kept = keep && c->resume ? keep_read(keep, l) : 0;
    if (kept < 0)
        snprintf(note, sizeof note, "; %s/%s is not a layout (dp=N,tp=M,pp=K,micro=M,zero=Z"
                 "[,v=V]): planned again", keep, keep_name);
    if (kept > 0) {
        sym_plan_result_t e;
        char a[96];
        say_layout(a, sizeof a, l);
        if ((long long)l->dp * l->tp * l->pp == npes && !sym_plan_evaluate(r, l, &e) &&
            !e.needs[0] && trains_here(c, l, npes)) {
            snprintf(why, len, "--parallel auto: %s, kept from %s/%s (the layout this job "
                     "started with; remove the file to plan again)", a, keep, keep_name);
            return SYM_OK;
        }
        snprintf(note, sizeof note, "; %s/%s held %s, which does not train this job: planned "
                 "again", keep, keep_name, a);
    }
    if (!gpu) {
        r->pes = local;
        sym_plan_measure_cpu(r, use);
        r->pes = npes;
    }
    sym_plan_result_t *res;
    int n, rc = sym_plan_candidates(r, &res, &n);
    if (rc) return rc;
    int pick = -1, next = -1, ok = 0;
    for (int i = 0; i < n; i++) {
        if (!res[i].fits || res[i].needs[0] || !trains_here(c, &res[i].layout, npes)) continue;
        ok++;
        const sym_plan_layout_t *x = &res[i].layout, *y = pick < 0 ? x : &res[pick].layout;
        if (pick < 0) pick = i;
        else if (next < 0 && (x->dp != y->dp || x->tp != y->tp || x->pp != y->pp)) next = i;
    }
    if (pick < 0) {
        free(res);
        char have[32];
        return sym__error(SYM_ENOMEM, "--parallel auto: none of the %d layouts of %s on %d PEs "
                          "fits in %s a PE and trains with these options; use more PEs, a "
                          "smaller --batch or model, or give the layout (--parallel dp=N,tp=M,"
                          "pp=K)", n, c->model.spec, npes, sym__fmt_size(mem, have, sizeof have));
    }
    *l = res[pick].layout;
    char a[96], b[128] = "", m[32];
    say_layout(a, sizeof a, l);
    if (next >= 0) {
        int at = snprintf(b, sizeof b, "; the next other mesh ");
        at += say_layout(b + at, sizeof b - (size_t)at, &res[next].layout);
        snprintf(b + at, sizeof b - (size_t)at, ", %.2f ms", res[next].t_step * 1e3);
    }
    char rates[160];
    if (gpu)
        snprintf(rates, sizeof rates, "GPU figures recorded on an H200 (symtrain plan --device "
                 "gpu lists them)");
    else
        snprintf(rates, sizeof rates, "CPU measured on PE 0: %.6g GFLOP/s, %.6g GB/s a PE "
                 "(%d BLAS thread%s, %d PE%s on %d cores)", r->flops / 1e9, r->mem_bw / 1e9,
                 threads, threads == 1 ? "" : "s", local, local == 1 ? "" : "s", cores);
    snprintf(why, len, "--parallel auto: %s, the planner's fastest of the %d layouts that fit and "
             "train here: %.2f ms a step predicted, %s a PE%s; %s%s", a, ok, res[pick].t_step * 1e3,
             sym__fmt_size(res[pick].mem.total, m, sizeof m), b, rates, note);
    free(res);
    /* a fresh run into a directory of checkpoints is refused by the loop: what
     * their job kept stays */
    int e = keep && (c->resume || !sym_ckpt_format(keep)) ? keep_write(keep, l) : 0;
    if (e) {
        size_t at = strlen(why);
        snprintf(why + at, len - at, "; not kept in %s/%s (%s): a restart plans again", keep,
                 keep_name, strerror(e));
    }
    return SYM_OK;
}

int sym__train_autoplan(const sym_train_config_t *c, sym_train_config_t *out, char *why,
                        size_t len) {
    int npes = shmem_n_pes(), me = shmem_my_pe();
    *out = *c;
    out->parallel.plan = 0;
    why[0] = '\0';
    if (c->zero || c->micro_batches)
        return sym__error(SYM_EINVAL, "--parallel auto chooses the ZeRO stage and the "
                          "micro-batches itself: drop --zero and --micro-batches, or "
                          "give the layout (--parallel dp=N,tp=M,pp=K)");
    if (c->model.kind != SYM_MODEL_GPT) {
        sym_plan_layout_t l = {npes, 1, 1, 1, 0, 0, 0};
        apply(c, &l, out);
        snprintf(why, len, "--parallel auto: dp=%d (the planner plans a GPT; %s trains data "
                 "parallel)", npes, c->model.spec);
        return SYM_OK;
    }
    /* [0] status, [1..7] the layout, [8] planned for the GPU, [9] bytes/s: PE 0's to all */
    double *buf = shmem_calloc(20, sizeof(double)); /* collective */
    if (!buf) return sym__error(SYM_ENOMEM, "--parallel auto: symmetric heap exhausted");
    sym_plan_request_t r;
    memset(&r, 0, sizeof r);
    sym_plan_layout_t l = {0};
    char err[512] = "";
    if (me == 0) {
        /* the directory held while its parallel-auto is read and written (not
         * made for a --resume that will find nothing there and stop) */
        struct stat st;
        int lock = -1;
        if (c->ckpt_dir && !(stat(c->ckpt_dir, &st) && c->resume == SYM_RESUME_MUST) &&
            sym_ckpt_lock(c->ckpt_dir, &lock))
            lock = -2; /* another job holds it: the loop says so; nothing kept here */
        int rc = choose(c, lock >= 0 ? c->ckpt_dir : NULL, npes, &r, &l, why, len);
        if (lock >= 0) sym_ckpt_unlock(lock);
        if (rc) snprintf(err, sizeof err, "%s", sym_last_error());
        double v[10] = {rc, l.dp, l.tp, l.pp, l.micro, l.zero, l.recompute, l.virtual_stages,
                        r.device == SYM_PLAN_GPU, r.mem_bw};
        memcpy(buf + 10, v, sizeof v);
        memcpy(buf, v, sizeof v); /* the root's own copy */
    }
    int rc = shmem_broadcastmem(SHMEM_TEAM_WORLD, buf, buf + 10, 10 * sizeof(double), 0);
    if (!rc) {
        l = (sym_plan_layout_t){(int)buf[1], (int)buf[2], (int)buf[3], (int)buf[4],
                                (int)buf[5], (int)buf[6], (int)buf[7]};
        rc = (int)buf[0];
    } else {
        rc = sym__error(SYM_ECOMM, "--parallel auto: the broadcast of PE 0's layout failed");
    }
    int gpu = buf[8] > 0;
    shmem_free(buf);
    if (rc) return me == 0 && err[0] ? sym__error(rc, "%s", err) : rc;
    apply(c, &l, out);
    /* planned for the GPU: where --device auto would train a tp layout on the
     * CPU (the loop's choose_device), say the GPU the plan is for */
    if (gpu && l.tp > 1) out->device = SYM_TRAIN_GPU;
    return SYM_OK;
}
