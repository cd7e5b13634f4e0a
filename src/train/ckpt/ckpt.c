/*
 * ckpt.c — checkpoints (see symtrain/ckpt.h): the crash-safe directory write,
 * the manifest, pruning to the newest K, the background writer thread, and
 * finding the newest checkpoint that verifies.
 *
 * Write order: DIR/.tmp-step-N.PID/ gets each data file (written, fsync'd),
 * then manifest.json with every file's size and CRC32C (fsync'd), then the
 * directory itself is fsync'd, renamed to DIR/step-N, and DIR fsync'd. A
 * reader only looks at step-* directories and checks every CRC, so neither a
 * crash mid-write nor a damaged file can pass for a good checkpoint.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <symtrain/ckpt.h>

#include "util/util.h"
#include "internal.h"

#define MANIFEST "manifest.json"
#define FORMAT "symtrain-checkpoint"
#define VERSION 1
#define MAX_MANIFEST (1 << 20)

/* ---- small file helpers ---- */

static int write_file(const char *path, const void *data, size_t len) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return sym__error(SYM_EIO, "cannot create %s: %s", path, strerror(errno));
    const char *p = data;
    while (len) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            int e = errno;
            close(fd);
            return sym__error(SYM_EIO, "cannot write %s: %s", path, strerror(e));
        }
        p += n;
        len -= (size_t)n;
    }
    if (fsync(fd) < 0) {
        int e = errno;
        close(fd);
        return sym__error(SYM_EIO, "cannot fsync %s: %s", path, strerror(e));
    }
    if (close(fd) < 0) return sym__error(SYM_EIO, "cannot close %s: %s", path, strerror(errno));
    return SYM_OK;
}

static int fsync_dir(const char *path) {
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return sym__error(SYM_EIO, "cannot open directory %s: %s", path, strerror(errno));
    int rc = fsync(fd);
    int e = errno;
    close(fd);
    if (rc < 0) return sym__error(SYM_EIO, "cannot fsync directory %s: %s", path, strerror(e));
    return SYM_OK;
}

/* Read a whole file; *data is malloc'd. SYM_ENOENT if it does not exist. */
static int read_file(const char *path, size_t limit, void **data, size_t *len) {
    *data = NULL;
    *len = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return sym__error(errno == ENOENT ? SYM_ENOENT : SYM_EIO, "cannot open %s: %s", path,
                          strerror(errno));
    struct stat st;
    if (fstat(fd, &st) < 0 || (size_t)st.st_size > limit) {
        close(fd);
        return sym__error(SYM_ECORRUPT, "%s is larger than expected", path);
    }
    size_t size = (size_t)st.st_size;
    char *buf = malloc(size + 1);
    if (!buf) {
        close(fd);
        return sym__error(SYM_ENOMEM, "out of memory reading %s", path);
    }
    size_t got = 0;
    while (got < size) {
        ssize_t n = read(fd, buf + got, size - got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        got += (size_t)n;
    }
    close(fd);
    if (got != size) {
        free(buf);
        return sym__error(SYM_EIO, "cannot read %s", path);
    }
    buf[size] = '\0';
    *data = buf;
    *len = size;
    return SYM_OK;
}

static int mkdir_p(const char *dir) {
    char tmp[PATH_MAX];
    if (snprintf(tmp, sizeof tmp, "%s", dir) >= (int)sizeof tmp)
        return sym__error(SYM_EINVAL, "checkpoint directory name is too long");
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            if (mkdir(tmp, 0755) < 0 && errno != EEXIST)
                return sym__error(SYM_EIO, "cannot create %s: %s", tmp, strerror(errno));
            *p = '/';
        }
    if (mkdir(tmp, 0755) < 0 && errno != EEXIST)
        return sym__error(SYM_EIO, "cannot create checkpoint directory %s: %s", tmp,
                          strerror(errno));
    struct stat st;
    if (stat(tmp, &st) < 0 || !S_ISDIR(st.st_mode))
        return sym__error(SYM_EIO, "%s is not a directory", tmp);
    return SYM_OK;
}

/* Remove a checkpoint-like directory: its plain files, then itself. */
static void remove_dir(const char *path) {
    DIR *d = opendir(path);
    if (d) {
        struct dirent *e;
        char f[PATH_MAX];
        while ((e = readdir(d)))
            if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
                snprintf(f, sizeof f, "%s/%s", path, e->d_name);
                unlink(f);
            }
        closedir(d);
    }
    rmdir(path);
}

/* out = dir/name; SYM_EINVAL if it does not fit. */
static int join(char *out, size_t len, const char *dir, const char *name) {
    int n = snprintf(out, len, "%s/%s", dir, name);
    if (n < 0 || (size_t)n >= len) return sym__error(SYM_EINVAL, "path %s/%s is too long", dir, name);
    return SYM_OK;
}

static int valid_name(const char *s) {
    if (!*s || !strcmp(s, ".") || !strcmp(s, "..")) return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              *s == '.' || *s == '_' || *s == '-'))
            return 0;
    return 1;
}

/* "step-NNNNNNNN" (8 or more digits) -> step; -1 for anything else. */
static int64_t step_of(const char *name) {
    if (strncmp(name, "step-", 5) != 0) return -1;
    const char *p = name + 5;
    if (strlen(p) < 8) return -1;
    int64_t v = 0;
    for (; *p; p++) {
        if (*p < '0' || *p > '9') return -1;
        v = v * 10 + (*p - '0');
    }
    return v;
}

static int cmp_desc(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* Steps of the step-* directories in dir, newest first (malloc'd). */
static int list_steps(const char *dir, int64_t **steps, int *n) {
    *steps = NULL;
    *n = 0;
    DIR *d = opendir(dir);
    if (!d)
        return sym__error(errno == ENOENT ? SYM_ENOENT : SYM_EIO, "cannot open %s: %s", dir,
                          strerror(errno));
    int cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        int64_t s = step_of(e->d_name);
        if (s < 0) continue;
        if (*n == cap) {
            cap = cap ? cap * 2 : 16;
            int64_t *ns = realloc(*steps, sizeof(int64_t) * (size_t)cap);
            if (!ns) {
                closedir(d);
                free(*steps);
                *steps = NULL;
                return sym__error(SYM_ENOMEM, "out of memory listing %s", dir);
            }
            *steps = ns;
        }
        (*steps)[(*n)++] = s;
    }
    closedir(d);
    if (*n) qsort(*steps, (size_t)*n, sizeof(int64_t), cmp_desc);
    return SYM_OK;
}

/* ---- the manifest ---- */

static void manifest_json(sym_jbuf_t *b, const sym_ckpt_meta_t *m, const sym_ckpt_file_t *files,
                          int nfiles) {
    char when[64] = "";
    time_t now = time(NULL);
    struct tm tm;
    if (gmtime_r(&now, &tm)) strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
    sym__jbuf_printf(b, "{\n  \"format\": \"%s\",\n  \"version\": %d,\n", FORMAT, VERSION);
    sym__jbuf_printf(b, "  \"created\": \"%s\",\n", when);
    sym__jbuf_printf(b, "  \"step\": %lld,\n  \"epoch\": %lld,\n  \"sample\": %lld,\n",
                     (long long)m->step, (long long)m->epoch, (long long)m->sample);
    sym__jbuf_printf(b, "  \"world_size\": %d,\n  \"blas_threads\": %d,\n  \"global_batch\": %d,\n",
                     m->world_size, m->blas_threads, m->global_batch);
    sym__jbuf_printf(b, "  \"model\": {\"spec\": ");
    sym__jbuf_string(b, m->model);
    sym__jbuf_printf(b, ", \"activation\": ");
    sym__jbuf_string(b, m->activation);
    sym__jbuf_printf(b, ", \"dropout\": %g, \"params\": %llu},\n", (double)m->dropout,
                     (unsigned long long)m->params);
    sym__jbuf_printf(b, "  \"optimizer\": {\"name\": ");
    sym__jbuf_string(b, m->optimizer);
    sym__jbuf_printf(b, ", \"steps\": %llu},\n", (unsigned long long)m->optim_steps);
    sym__jbuf_printf(b,
                     "  \"rng\": {\"seed\": %llu, \"data\": {\"key\": %llu, \"counter\": %llu}, "
                     "\"dropout\": {\"key\": %llu, \"counter\": %lld}},\n",
                     (unsigned long long)m->seed, (unsigned long long)m->data_key,
                     (unsigned long long)m->data_counter, (unsigned long long)m->dropout_key,
                     (long long)m->step);
    sym__jbuf_printf(b, "  \"schedule\": {\"lr\": %.9g, \"total_steps\": %lld},\n", m->lr,
                     (long long)m->total_steps);
    sym__jbuf_printf(b, "  \"data\": {\"name\": ");
    sym__jbuf_string(b, m->dataset);
    sym__jbuf_printf(b, ", \"train_samples\": %lld},\n", (long long)m->train_samples);
    sym__jbuf_printf(b, "  \"tensors\": [");
    for (int i = 0; i < m->ntensors; i++) {
        const sym_ckpt_tensor_t *t = &m->tensors[i];
        sym__jbuf_printf(b, "%s\n    {\"name\": ", i ? "," : "");
        sym__jbuf_string(b, t->name);
        sym__jbuf_printf(b, ", \"file\": ");
        sym__jbuf_string(b, t->file);
        sym__jbuf_printf(b, ", \"dtype\": \"%s\", \"shape\": [", sym_dtype_name(t->dtype));
        for (int d = 0; d < t->ndim; d++)
            sym__jbuf_printf(b, "%s%lld", d ? ", " : "", (long long)t->shape[d]);
        sym__jbuf_printf(b, "], \"offset\": %llu}", (unsigned long long)t->offset);
    }
    sym__jbuf_printf(b, "%s],\n", m->ntensors ? "\n  " : "");
    sym__jbuf_printf(b, "  \"files\": [");
    for (int i = 0; i < nfiles; i++) {
        sym__jbuf_printf(b, "%s\n    {\"name\": ", i ? "," : "");
        sym__jbuf_string(b, files[i].name);
        sym__jbuf_printf(b, ", \"size\": %zu, \"crc32c\": \"%08x\"}", files[i].size,
                         files[i].crc32c);
    }
    sym__jbuf_printf(b, "\n  ]\n}\n");
}

/* The tensor table; each entry must lie inside a listed file. */
static int parse_tensors(const char *path, const sym_json_t *arr, sym_ckpt_t *ck) {
    sym_ckpt_meta_t *m = &ck->meta;
    if (!arr) return SYM_OK; /* a checkpoint without a table (the MLP's before it) */
    if (arr->type != SYM_JARR) return sym__error(SYM_ECORRUPT, "%s: \"tensors\" is not a list", path);
    int n = 0;
    for (const sym_json_t *t = arr->child; t; t = t->next) n++;
    if (!n) return SYM_OK;
    if (!(m->tensors = calloc((size_t)n, sizeof *m->tensors)))
        return sym__error(SYM_ENOMEM, "out of memory for %s's tensor table", path);
    for (const sym_json_t *t = arr->child; t; t = t->next) {
        sym_ckpt_tensor_t *e = &m->tensors[m->ntensors++];
        char dt[16];
        uint64_t off;
        const sym_json_t *shape = sym__json_get(t, "shape");
        if (sym__json_str(t, "name", e->name, sizeof e->name) ||
            sym__json_str(t, "file", e->file, sizeof e->file) ||
            sym__json_str(t, "dtype", dt, sizeof dt) || sym_dtype_parse(dt, &e->dtype) ||
            sym__json_u64(t, "offset", &off) || !shape || shape->type != SYM_JARR)
            return sym__error(SYM_ECORRUPT, "%s has a malformed tensor entry", path);
        e->offset = off;
        uint64_t bytes = sym_dtype_size(e->dtype);
        for (const sym_json_t *d = shape->child; d; d = d->next) {
            char *end;
            long long v = d->type == SYM_JNUM ? strtoll(d->str, &end, 10) : -1;
            if (e->ndim == SYM_MAX_DIMS || v < 0 || (v && bytes > UINT64_MAX / (uint64_t)v))
                return sym__error(SYM_ECORRUPT, "%s: tensor %s has an impossible shape", path,
                                  e->name);
            e->shape[e->ndim++] = v;
            bytes *= (uint64_t)v;
        }
        const sym_ckpt_file_t *f = NULL;
        for (int i = 0; i < ck->nfiles; i++)
            if (!strcmp(ck->files[i].name, e->file)) f = &ck->files[i];
        if (!f || off > f->size || bytes > f->size - off)
            return sym__error(SYM_ECORRUPT, "%s: tensor %s does not lie inside %s", path, e->name,
                              e->file);
    }
    return SYM_OK;
}

static int parse_manifest(const char *path, const char *text, size_t len, sym_ckpt_t *ck) {
    char err[128];
    sym_json_t *j = sym__json_parse(text, len, err, sizeof err);
    if (!j) return sym__error(SYM_ECORRUPT, "%s is not valid JSON (%s)", path, err);
    int rc = SYM_OK;
    sym_ckpt_meta_t *m = &ck->meta;
    char format[64] = "";
    int64_t version = 0, ws = 0, gb = 0, bt = 0;
    const sym_json_t *model = sym__json_get(j, "model"), *opt = sym__json_get(j, "optimizer");
    const sym_json_t *rng = sym__json_get(j, "rng"), *data = sym__json_get(j, "data");
    const sym_json_t *rdata = sym__json_get(rng, "data"), *rdrop = sym__json_get(rng, "dropout");
    double dropout = 0;
    if (sym__json_str(j, "format", format, sizeof format) || strcmp(format, FORMAT)) {
        rc = sym__error(SYM_ECORRUPT, "%s is not a symtrain checkpoint manifest", path);
        goto out;
    }
    if (sym__json_i64(j, "version", &version) || version != VERSION) {
        rc = sym__error(SYM_ECORRUPT, "%s has format version %lld; this symtrain reads version %d",
                        path, (long long)version, VERSION);
        goto out;
    }
    if (sym__json_i64(j, "step", &m->step) || sym__json_i64(j, "epoch", &m->epoch) ||
        sym__json_i64(j, "sample", &m->sample) || sym__json_i64(j, "world_size", &ws) ||
        sym__json_i64(j, "blas_threads", &bt) ||
        sym__json_i64(j, "global_batch", &gb) ||
        sym__json_str(model, "spec", m->model, sizeof m->model) ||
        sym__json_str(model, "activation", m->activation, sizeof m->activation) ||
        sym__json_num(model, "dropout", &dropout) || sym__json_u64(model, "params", &m->params) ||
        sym__json_str(opt, "name", m->optimizer, sizeof m->optimizer) ||
        sym__json_u64(opt, "steps", &m->optim_steps) || sym__json_u64(rng, "seed", &m->seed) ||
        sym__json_u64(rdata, "key", &m->data_key) ||
        sym__json_u64(rdata, "counter", &m->data_counter) ||
        sym__json_u64(rdrop, "key", &m->dropout_key) ||
        sym__json_str(data, "name", m->dataset, sizeof m->dataset) ||
        sym__json_i64(data, "train_samples", &m->train_samples)) {
        rc = sym__error(SYM_ECORRUPT, "%s lacks a field or has one of the wrong type", path);
        goto out;
    }
    const sym_json_t *sched = sym__json_get(j, "schedule"); /* optional: older ones lack it */
    if (sched && (sym__json_num(sched, "lr", &m->lr) ||
                  sym__json_i64(sched, "total_steps", &m->total_steps))) {
        rc = sym__error(SYM_ECORRUPT, "%s has a malformed schedule", path);
        goto out;
    }
    m->world_size = (int)ws;
    m->blas_threads = (int)bt;
    m->global_batch = (int)gb;
    m->dropout = (float)dropout;
    const sym_json_t *files = sym__json_get(j, "files");
    if (!files || files->type != SYM_JARR) {
        rc = sym__error(SYM_ECORRUPT, "%s has no file list", path);
        goto out;
    }
    ck->nfiles = 0;
    for (const sym_json_t *f = files->child; f; f = f->next) {
        char crc[16];
        int64_t size;
        if (ck->nfiles == SYM_CKPT_MAX_FILES) {
            rc = sym__error(SYM_ECORRUPT, "%s lists more than %d files", path, SYM_CKPT_MAX_FILES);
            goto out;
        }
        sym_ckpt_file_t *cf = &ck->files[ck->nfiles];
        if (sym__json_str(f, "name", cf->name, sizeof cf->name) || !valid_name(cf->name) ||
            sym__json_i64(f, "size", &size) || size < 0 ||
            sym__json_str(f, "crc32c", crc, sizeof crc)) {
            rc = sym__error(SYM_ECORRUPT, "%s has a malformed file entry", path);
            goto out;
        }
        char *end;
        cf->crc32c = (uint32_t)strtoul(crc, &end, 16);
        if (*end || !crc[0]) {
            rc = sym__error(SYM_ECORRUPT, "%s: CRC '%s' of %s is not hexadecimal", path, crc,
                            cf->name);
            goto out;
        }
        cf->size = (size_t)size;
        cf->data = NULL;
        ck->nfiles++;
    }
    if ((rc = parse_tensors(path, sym__json_get(j, "tensors"), ck))) goto out;
out:
    sym__json_free(j);
    return rc;
}

/* ---- writing ---- */

/* After writing step `written`: remove every checkpoint of a later step (a
 * damaged one that --resume passed over, or one of an earlier run this run
 * replaces: left in place it would shadow this run's on the next --resume),
 * keep the newest `keep` of the rest, and remove writers' leftovers. */
static int prune(const char *dir, int keep, int64_t written) {
    int64_t *steps;
    int n;
    int rc = list_steps(dir, &steps, &n);
    if (rc) return rc;
    char path[PATH_MAX];
    int kept = 0;
    for (int i = 0; i < n; i++) {
        if (steps[i] <= written && kept < keep) {
            kept++;
            continue;
        }
        snprintf(path, sizeof path, "%s/step-%08lld", dir, (long long)steps[i]);
        remove_dir(path);
    }
    free(steps);
    /* Temporary directories left by writers that crashed. */
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        char mine[64];
        snprintf(mine, sizeof mine, ".%ld", (long)getpid());
        while ((e = readdir(d))) {
            if (strncmp(e->d_name, ".tmp-step-", 10) != 0 && strncmp(e->d_name, ".old-step-", 10) != 0)
                continue;
            const char *dot = strrchr(e->d_name, '.');
            if (dot && !strcmp(dot, mine)) continue;
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            remove_dir(path);
        }
        closedir(d);
    }
    return SYM_OK;
}

int sym_ckpt_write(const char *dir, int keep, const sym_ckpt_meta_t *meta,
                   const sym_ckpt_file_t *in, int nfiles, char *out_path, size_t out_len) {
    if (nfiles < 0 || nfiles > SYM_CKPT_MAX_FILES)
        return sym__error(SYM_EINVAL, "a checkpoint holds at most %d files", SYM_CKPT_MAX_FILES);
    int rc = mkdir_p(dir);
    if (rc) return rc;
    char tmp[PATH_MAX], final[PATH_MAX], old[PATH_MAX], path[PATH_MAX];
    long pid = (long)getpid();
    snprintf(tmp, sizeof tmp, "%s/.tmp-step-%08lld.%ld", dir, (long long)meta->step, pid);
    snprintf(final, sizeof final, "%s/step-%08lld", dir, (long long)meta->step);
    snprintf(old, sizeof old, "%s/.old-step-%08lld.%ld", dir, (long long)meta->step, pid);
    remove_dir(tmp);
    if (mkdir(tmp, 0755) < 0) return sym__error(SYM_EIO, "cannot create %s: %s", tmp, strerror(errno));

    sym_ckpt_file_t files[SYM_CKPT_MAX_FILES];
    sym_jbuf_t man = {0};
    for (int i = 0; i < nfiles; i++) {
        files[i] = in[i];
        if (!valid_name(files[i].name)) {
            rc = sym__error(SYM_EINVAL, "'%s' is not a plain file name", files[i].name);
            goto fail;
        }
        files[i].crc32c = sym__crc32c(0, files[i].data, files[i].size);
        if ((rc = join(path, sizeof path, tmp, files[i].name)) ||
            (rc = write_file(path, files[i].data, files[i].size)))
            goto fail;
    }
    manifest_json(&man, meta, files, nfiles);
    if (man.failed) {
        rc = sym__error(SYM_ENOMEM, "out of memory writing the manifest");
        goto fail;
    }
    if ((rc = join(path, sizeof path, tmp, MANIFEST)) || (rc = write_file(path, man.buf, man.len)) ||
        (rc = fsync_dir(tmp)))
        goto fail;
    sym__jbuf_free(&man);

    /* The same step again (a resumed run saving where it started): swap it. */
    int had_old = rename(final, old) == 0;
    if (rename(tmp, final) < 0) {
        rc = sym__error(SYM_EIO, "cannot rename %s to %s: %s", tmp, final, strerror(errno));
        if (had_old) rename(old, final);
        goto fail;
    }
    if (had_old) remove_dir(old);
    if ((rc = fsync_dir(dir))) return rc;
    if (out_path) snprintf(out_path, out_len, "%s", final);
    return prune(dir, keep < 1 ? 1 : keep, meta->step);
fail:
    sym__jbuf_free(&man);
    remove_dir(tmp);
    return rc;
}

/* ---- the background writer ---- */

struct sym_ckpt_writer {
    char dir[PATH_MAX];
    int keep;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int pending; /* a snapshot waits or is being written */
    int stop;
    int status;  /* of the last save */
    char error[1024];
    char last_path[PATH_MAX];
    sym_ckpt_stats_t stats;
    /* the snapshot */
    sym_ckpt_meta_t meta;
    sym_ckpt_tensor_t *tensors; /* meta.tensors points here */
    int tensors_cap;
    int nfiles;
    sym_ckpt_file_t files[SYM_CKPT_MAX_FILES];
    void *buf[SYM_CKPT_MAX_FILES];
    size_t cap[SYM_CKPT_MAX_FILES];
};

static void *writer_main(void *arg) {
    sym_ckpt_writer_t *w = arg;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (!w->pending && !w->stop) pthread_cond_wait(&w->cv, &w->mu);
        if (!w->pending) break; /* stop, nothing left */
        pthread_mutex_unlock(&w->mu);
        char path[PATH_MAX] = "";
        double t0 = sym__now_s();
        int rc = sym_ckpt_write(w->dir, w->keep, &w->meta, w->files, w->nfiles, path, sizeof path);
        double dt = sym__now_s() - t0;
        uint64_t bytes = 0;
        for (int i = 0; i < w->nfiles; i++) bytes += w->files[i].size;
        pthread_mutex_lock(&w->mu);
        w->status = rc;
        if (rc) {
            snprintf(w->error, sizeof w->error, "%s", sym_last_error());
            w->stats.failures++;
        } else {
            snprintf(w->last_path, sizeof w->last_path, "%s", path);
            w->stats.saves++;
            w->stats.seconds += dt;
            w->stats.bytes += bytes;
            w->stats.last_seconds = dt;
            w->stats.last_bytes = bytes;
        }
        w->pending = 0;
        pthread_cond_broadcast(&w->cv);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

int sym_ckpt_writer_create(const char *dir, int keep, sym_ckpt_writer_t **out) {
    *out = NULL;
    int rc = mkdir_p(dir);
    if (rc) return rc;
    sym_ckpt_writer_t *w = calloc(1, sizeof *w);
    if (!w) return sym__error(SYM_ENOMEM, "out of memory for the checkpoint writer");
    snprintf(w->dir, sizeof w->dir, "%s", dir);
    w->keep = keep < 1 ? 1 : keep;
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    /* The writer never handles SIGTERM / SIGINT: the training thread does. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    int e = pthread_create(&w->thread, NULL, writer_main, w);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (e) {
        free(w);
        return sym__error(SYM_ENOMEM, "cannot start the checkpoint writer thread: %s", strerror(e));
    }
    *out = w;
    return SYM_OK;
}

/* Wait for the writer; return a failed save's status once (then forget it). */
static int wait_locked(sym_ckpt_writer_t *w) {
    while (w->pending) pthread_cond_wait(&w->cv, &w->mu);
    int rc = w->status;
    if (rc) sym__error(rc, "%s", w->error);
    w->status = 0;
    return rc;
}

int sym_ckpt_save(sym_ckpt_writer_t *w, const sym_ckpt_meta_t *meta,
                  const sym_ckpt_file_t *files, int nfiles) {
    if (nfiles < 0 || nfiles > SYM_CKPT_MAX_FILES)
        return sym__error(SYM_EINVAL, "a checkpoint holds at most %d files", SYM_CKPT_MAX_FILES);
    pthread_mutex_lock(&w->mu);
    int prev = wait_locked(w);
    for (int i = 0; i < nfiles; i++) {
        if (w->cap[i] < files[i].size) {
            void *nb = realloc(w->buf[i], files[i].size);
            if (!nb) {
                pthread_mutex_unlock(&w->mu);
                return sym__error(SYM_ENOMEM, "out of memory for a checkpoint snapshot");
            }
            w->buf[i] = nb;
            w->cap[i] = files[i].size;
        }
        memcpy(w->buf[i], files[i].data, files[i].size);
        w->files[i] = files[i];
        w->files[i].data = w->buf[i];
    }
    w->meta = *meta;
    if (meta->ntensors > w->tensors_cap) {
        sym_ckpt_tensor_t *t = realloc(w->tensors, (size_t)meta->ntensors * sizeof *t);
        if (!t) {
            pthread_mutex_unlock(&w->mu);
            return sym__error(SYM_ENOMEM, "out of memory for a checkpoint's tensor table");
        }
        w->tensors = t;
        w->tensors_cap = meta->ntensors;
    }
    if (meta->ntensors) memcpy(w->tensors, meta->tensors, (size_t)meta->ntensors * sizeof *w->tensors);
    w->meta.tensors = w->tensors;
    w->nfiles = nfiles;
    w->status = 0;
    w->pending = 1;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    return prev;
}

int sym_ckpt_wait(sym_ckpt_writer_t *w) {
    pthread_mutex_lock(&w->mu);
    int rc = wait_locked(w);
    pthread_mutex_unlock(&w->mu);
    return rc;
}

const char *sym_ckpt_last_path(const sym_ckpt_writer_t *w) { return w->last_path; }

sym_ckpt_stats_t sym_ckpt_writer_stats(sym_ckpt_writer_t *w) {
    pthread_mutex_lock(&w->mu);
    sym_ckpt_stats_t st = w->stats;
    pthread_mutex_unlock(&w->mu);
    return st;
}

void sym_ckpt_writer_destroy(sym_ckpt_writer_t *w) {
    if (!w) return;
    pthread_mutex_lock(&w->mu);
    w->stop = 1;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->thread, NULL);
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
    for (int i = 0; i < SYM_CKPT_MAX_FILES; i++) free(w->buf[i]);
    free(w->tensors);
    free(w);
}

/* ---- reading ---- */

void sym_ckpt_release(sym_ckpt_t *ck) {
    for (int i = 0; i < ck->nfiles; i++) free((void *)ck->files[i].data);
    ck->nfiles = 0;
    free(ck->meta.tensors);
    ck->meta.tensors = NULL;
    ck->meta.ntensors = 0;
}

const sym_ckpt_tensor_t *sym_ckpt_tensor(const sym_ckpt_t *ck, const char *name) {
    for (int i = 0; i < ck->meta.ntensors; i++)
        if (!strcmp(ck->meta.tensors[i].name, name)) return &ck->meta.tensors[i];
    return NULL;
}

int sym_ckpt_load(const char *path, sym_ckpt_t *ck) {
    memset(ck, 0, sizeof *ck);
    snprintf(ck->path, sizeof ck->path, "%s", path);
    char mpath[PATH_MAX];
    snprintf(mpath, sizeof mpath, "%s/%s", path, MANIFEST);
    void *text;
    size_t len;
    int rc = read_file(mpath, MAX_MANIFEST, &text, &len);
    if (rc == SYM_ENOENT) return sym__error(SYM_ECORRUPT, "%s has no %s", path, MANIFEST);
    if (rc) return rc;
    rc = parse_manifest(mpath, text, len, ck);
    free(text);
    if (rc) {
        ck->nfiles = 0;
        sym_ckpt_release(ck);
        return rc;
    }
    for (int i = 0; i < ck->nfiles; i++) {
        sym_ckpt_file_t *f = &ck->files[i];
        char fpath[PATH_MAX];
        snprintf(fpath, sizeof fpath, "%s/%s", path, f->name);
        void *data = NULL;
        size_t size = 0;
        rc = read_file(fpath, (size_t)1 << 40, &data, &size);
        if (rc == SYM_ENOENT) rc = sym__error(SYM_ECORRUPT, "%s is missing", fpath);
        if (!rc && size != f->size)
            rc = sym__error(SYM_ECORRUPT, "%s is %zu bytes, the manifest says %zu", fpath, size,
                            f->size);
        uint32_t crc = rc ? 0 : sym__crc32c(0, data, size);
        if (!rc && crc != f->crc32c)
            rc = sym__error(SYM_ECORRUPT, "%s has CRC32C %08x, the manifest says %08x", fpath, crc,
                            f->crc32c);
        if (rc) {
            free(data); /* NULL when the read itself failed */
            ck->nfiles = i;
            sym_ckpt_release(ck);
            return rc;
        }
        f->data = data;
    }
    return SYM_OK;
}

int sym_ckpt_load_latest(const char *dir, sym_ckpt_t *out,
                         void (*report)(void *user, const char *msg), void *user) {
    memset(out, 0, sizeof *out);
    int64_t *steps;
    int n;
    int rc = list_steps(dir, &steps, &n);
    if (rc == SYM_ENOENT) return sym__error(SYM_ENOENT, "%s does not exist", dir);
    if (rc) return rc;
    int bad = 0;
    for (int i = 0; i < n; i++) {
        char path[PATH_MAX], msg[PATH_MAX + 1536];
        snprintf(path, sizeof path, "%s/step-%08lld", dir, (long long)steps[i]);
        rc = sym_ckpt_load(path, out);
        if (rc == SYM_OK) {
            free(steps);
            return SYM_OK;
        }
        if (rc == SYM_ENOMEM) {
            free(steps);
            return rc;
        }
        bad++;
        if (report) {
            int len = snprintf(msg, sizeof msg, "checkpoint %s is damaged: %s; %s", path,
                               sym_last_error(),
                               i + 1 < n ? "using the one before it" : "no older checkpoint is left");
            if (len > 0) report(user, msg);
        }
    }
    free(steps);
    if (bad)
        return sym__error(SYM_ENOENT, "%s holds no usable checkpoint (%d damaged)", dir, bad);
    return sym__error(SYM_ENOENT, "%s holds no checkpoint", dir);
}

int64_t sym_ckpt_newest_step(const char *dir) {
    int64_t *steps, newest = -1;
    int n;
    if (list_steps(dir, &steps, &n)) return -1;
    if (n) newest = steps[0];
    free(steps);
    return newest;
}

const sym_ckpt_file_t *sym_ckpt_file(const sym_ckpt_t *ck, const char *name) {
    for (int i = 0; i < ck->nfiles; i++)
        if (!strcmp(ck->files[i].name, name)) return &ck->files[i];
    return NULL;
}
