/*
 * ckpt.c — checkpoints (see symtrain/ckpt.h): the crash-safe directory write,
 * the manifest, pruning to the newest K, the background writer thread, and
 * finding the newest checkpoint that verifies.
 *
 * Write order: DIR/.tmp-step-N.PID/ gets each data file (written, fsync'd),
 * then manifest.json with every file's size and CRC32C (fsync'd), then the
 * directory itself is fsync'd, renamed to DIR/step-N, and DIR fsync'd. A
 * reader only looks at step-* directories and checks every CRC (the
 * manifest's own among them) and the manifest's fields against each other,
 * so neither a crash mid-write, a damaged file nor an edited manifest can pass
 * for a good checkpoint.
 *
 * Losing nothing: a checkpoint is skipped only when proven damaged; one that
 * cannot be read is an error (it may be the good one). Removal never follows
 * a link and removes only what a manifest lists (remove_ckpt); pruning never
 * touches a later step than the one written.
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
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include <symtrain/ckpt.h>

#include "util/util.h"
#include "internal.h"
#include "ckpt/async.h"
#include "ckpt/ckpt_internal.h"

#define MANIFEST SYM_CKPT_MANIFEST
#define FORMAT "symtrain-checkpoint"
#define VERSION 2 /* 2: the manifest carries its own checksum */
#define CRC_KEY "\"manifest_crc32c\": "
#define MAX_MANIFEST ((size_t)256 << 20) /* a sharded one lists every slice */

/* ---- small file helpers ---- */

/* Checkpoints hold model weights: files are created 0600 and directories 0700,
 * so that only their owner reads them (the umask can only narrow these). */
#define FILE_MODE 0600
#define DIR_MODE 0700

/* A write of `path` (size bytes in all) failed with errno e: a full disk
 * (or quota) is named with what it takes, anything else as it is. */
static int write_failed(const char *what, const char *path, size_t size, int e) {
    if (e != ENOSPC && e != EDQUOT)
        return sym__error(SYM_EIO, "cannot %s %s: %s", what, path, strerror(e));
    char dir[PATH_MAX], need[32], have[32] = "an unknown amount";
    snprintf(dir, sizeof dir, "%s", path);
    for (int up = 0; up < 2; up++) { /* the file's directory; above a staging one, the --ckpt-dir */
        char *slash = strrchr(dir, '/');
        if (slash && slash != dir) *slash = '\0';
        slash = strrchr(dir, '/');
        if (!slash || strncmp(slash + 1, ".tmp-", 5)) break;
    }
    struct statvfs fs;
    if (statvfs(dir, &fs) == 0)
        sym__fmt_size((size_t)fs.f_bavail * (size_t)fs.f_frsize, have, sizeof have);
    sym__fmt_size(size, need, sizeof need);
    return sym__error(SYM_EIO, "no space left on the file system of %s (%s): %s needs %s and "
                      "%s is free; this checkpoint is not written, the one before it stays: free "
                      "%s there or choose another --ckpt-dir", dir, strerror(e), path, need, have,
                      need);
}

int sym__ckpt_write_file(const char *path, const void *data, size_t len) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, FILE_MODE);
    if (fd < 0) return write_failed("create", path, len, errno);
    const char *p = data;
    size_t size = len;
    while (len) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            int e = errno;
            close(fd);
            return write_failed("write", path, size, e);
        }
        p += n;
        len -= (size_t)n;
    }
    if (fsync(fd) < 0) {
        int e = errno;
        close(fd);
        return write_failed("fsync", path, size, e);
    }
    if (close(fd) < 0) return write_failed("close", path, size, errno);
    return SYM_OK;
}

int sym__ckpt_fsync_dir(const char *path) {
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return sym__error(SYM_EIO, "cannot open directory %s: %s", path, strerror(errno));
    int rc = fsync(fd);
    int e = errno;
    close(fd);
    if (rc < 0) return sym__error(SYM_EIO, "cannot fsync directory %s: %s", path, strerror(e));
    return SYM_OK;
}

/* Read the whole of `name` in directory dfd (AT_FDCWD: a path), which must be
 * a regular file of `expect` bytes (SIZE_MAX: any size up to `limit`); *data
 * is malloc'd and NUL-terminated; `path` names it in messages.
 *
 * What only damage explains is SYM_ECORRUPT: a size other than the expected
 * one, a symbolic link, a directory or a FIFO in the file's place (opened
 * without blocking, so a FIFO cannot hang the reader). SYM_ENOENT: it does not
 * exist. Every other failure is an I/O error, SYM_EIO naming the errno: the
 * file may be perfectly good, so the caller must not take it for damage. */
int sym__ckpt_read_file_at(int dfd, const char *name, const char *path, size_t expect, size_t limit,
                        void **data, size_t *len) {
    *data = NULL;
    *len = 0;
    int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) {
        if (errno == ENOENT) return sym__error(SYM_ENOENT, "%s does not exist", path);
        if (errno == ELOOP)
            return sym__error(SYM_ECORRUPT, "%s is a symbolic link, not a checkpoint file", path);
        return sym__error(SYM_EIO, "cannot open %s: %s", path, strerror(errno));
    }
    struct stat st;
    int rc = SYM_OK;
    char *buf = NULL;
    if (fstat(fd, &st) < 0) {
        rc = sym__error(SYM_EIO, "cannot stat %s: %s", path, strerror(errno));
        goto out;
    }
    if (!S_ISREG(st.st_mode)) {
        rc = sym__error(SYM_ECORRUPT, "%s is not a regular file", path);
        goto out;
    }
    size_t size = (size_t)st.st_size;
    if (expect != SIZE_MAX && (uintmax_t)st.st_size != expect) {
        rc = sym__error(SYM_ECORRUPT, "%s is %lld bytes, the manifest says %zu", path,
                        (long long)st.st_size, expect);
        goto out;
    }
    if ((uintmax_t)st.st_size > limit) {
        rc = sym__error(SYM_ECORRUPT, "%s is %lld bytes, more than a manifest holds (%zu)", path,
                        (long long)st.st_size, limit);
        goto out;
    }
    if (!(buf = malloc(size + 1))) {
        rc = sym__error(SYM_ENOMEM, "out of memory reading %s (%zu bytes)", path, size);
        goto out;
    }
    size_t got = 0;
    while (got < size) {
        ssize_t n = read(fd, buf + got, size - got);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            rc = sym__error(SYM_EIO, "cannot read %s: %s", path, strerror(errno));
            goto out;
        }
        if (n == 0) {
            rc = sym__error(SYM_EIO, "cannot read %s: it shrank from %zu to %zu bytes while being "
                            "read (is another program writing it?)", path, size, got);
            goto out;
        }
        got += (size_t)n;
    }
    buf[size] = '\0';
    *data = buf;
    *len = size;
    buf = NULL;
out:
    free(buf);
    close(fd);
    return rc;
}

/* mkdir that leaves an existing directory alone; 0 or -1 with errno. */
static int make_dir(const char *path) {
    return mkdir(path, DIR_MODE) < 0 && errno != EEXIST ? -1 : 0;
}

int sym__ckpt_mkdir_p(const char *dir) {
    char tmp[PATH_MAX];
    if (snprintf(tmp, sizeof tmp, "%s", dir) >= (int)sizeof tmp)
        return sym__error(SYM_EINVAL, "checkpoint directory name is too long");
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            if (make_dir(tmp) < 0)
                return sym__error(SYM_EIO, "cannot create %s: %s", tmp, strerror(errno));
            *p = '/';
        }
    if (make_dir(tmp) < 0)
        return sym__error(SYM_EIO, "cannot create checkpoint directory %s: %s", tmp,
                          strerror(errno));
    struct stat st;
    if (stat(tmp, &st) < 0 || !S_ISDIR(st.st_mode))
        return sym__error(SYM_EIO, "%s is not a directory", tmp);
    return SYM_OK;
}

/* out = dir/name; SYM_EINVAL if it does not fit. */
int sym__ckpt_join(char *out, size_t len, const char *dir, const char *name) {
    int n = snprintf(out, len, "%s/%s", dir, name);
    if (n < 0 || (size_t)n >= len) return sym__error(SYM_EINVAL, "path %s/%s is too long", dir, name);
    return SYM_OK;
}

int sym__ckpt_valid_name(const char *s) {
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
int sym__ckpt_list_steps(const char *dir, int64_t **steps, int *n) {
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

/* The fields every format shares: from the opening brace to the balancer's
 * shares (each line ending ",\n"). */
void sym__ckpt_meta_json(sym_jbuf_t *b, const sym_ckpt_meta_t *m, int version) {
    char when[64] = "";
    time_t now = time(NULL);
    struct tm tm;
    if (gmtime_r(&now, &tm)) strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
    sym__jbuf_printf(b, "{\n  \"format\": \"%s\",\n  \"version\": %d,\n", FORMAT, version);
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
    if (m->nshares > 0) {
        sym__jbuf_printf(b, "  \"balance\": {\"policy\": ");
        sym__jbuf_string(b, m->balance);
        sym__jbuf_printf(b, ", \"shares\": [");
        for (int i = 0; i < m->nshares; i++) sym__jbuf_printf(b, "%s%d", i ? ", " : "", m->shares[i]);
        sym__jbuf_printf(b, "], \"samples_per_s\": [");
        for (int i = 0; i < m->nshares; i++)
            sym__jbuf_printf(b, "%s%.17g", i ? ", " : "", m->speeds[i]);
        sym__jbuf_printf(b, "]},\n");
    }
}

/* Last, the manifest's own checksum: CRC32C of every byte before this line. */
void sym__ckpt_seal_json(sym_jbuf_t *b) {
    uint32_t crc = b->failed ? 0 : sym__crc32c(0, b->buf, b->len);
    sym__jbuf_printf(b, "  " CRC_KEY "\"%08x\"\n}\n", crc);
}

static void manifest_json(sym_jbuf_t *b, const sym_ckpt_meta_t *m, const sym_ckpt_file_t *files,
                          int nfiles) {
    sym__ckpt_meta_json(b, m, VERSION);
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
    sym__jbuf_printf(b, "\n  ],\n");
    sym__ckpt_seal_json(b);
}

/* The manifest's checksum line: the last `"manifest_crc32c": "XXXXXXXX"` at
 * the start of a line, followed only by the closing brace; it must equal the
 * CRC32C of every byte before that line. A manifest whose fields were edited,
 * or damaged where its JSON still parses, fails here. */
static int check_manifest_crc(const char *path, const char *text, size_t len) {
    static const char key[] = "\n  " CRC_KEY "\"", tail[] = "\"\n}\n";
    const size_t klen = sizeof key - 1, tlen = sizeof tail - 1;
    const char *at = NULL;
    for (size_t i = len >= klen ? len - klen + 1 : 0; i-- > 0;)
        if (!memcmp(text + i, key, klen)) {
            at = text + i;
            break;
        }
    if (!at)
        return sym__error(SYM_ECORRUPT, "%s carries no checksum of its own (its last line must be "
                          "%s\"<CRC32C of the lines before>\")", path, CRC_KEY);
    const char *hex = at + klen;
    size_t rest = len - (size_t)(hex - text);
    char want[9];
    memcpy(want, hex, rest >= 8 ? 8 : rest);
    want[rest >= 8 ? 8 : rest] = '\0';
    char *end;
    unsigned long v = strtoul(want, &end, 16);
    if (rest != 8 + tlen || *end || strspn(want, "0123456789abcdef") != 8 ||
        memcmp(hex + 8, tail, tlen))
        return sym__error(SYM_ECORRUPT, "%s: its checksum line is malformed or not its last line",
                          path);
    uint32_t crc = sym__crc32c(0, text, (size_t)(at + 1 - text));
    if (crc != (uint32_t)v)
        return sym__error(SYM_ECORRUPT, "%s does not match its own checksum (CRC32C %08x of its "
                          "text, %08lx recorded): it was edited or damaged", path, crc, v);
    return SYM_OK;
}

/* The fields against each other. The position (step, epoch, sample) is where
 * `step` global batches lead: an epoch is ceil(train_samples / global_batch)
 * steps, so sample = (step mod that) * global_batch; the dropout stream's
 * counter is the step; the optimizer took no more steps than the loop and the
 * schedule is at least as long as the steps taken. */
static int check_fields(const char *path, const sym_ckpt_meta_t *m, int64_t ws, int64_t bt,
                        int64_t gb, int64_t dropout_counter) {
    if (ws < 1 || ws > INT_MAX || bt < 1 || bt > INT_MAX || gb < 1 || gb > INT_MAX ||
        m->train_samples < 1 || m->params == 0)
        return sym__error(SYM_ECORRUPT, "%s holds an impossible run (world_size %lld, "
                          "blas_threads %lld, global_batch %lld, train_samples %lld, params %llu)",
                          path, (long long)ws, (long long)bt, (long long)gb,
                          (long long)m->train_samples, (unsigned long long)m->params);
    int64_t per_epoch = m->train_samples / gb + (m->train_samples % gb != 0);
    if (m->step < 0 || m->epoch < 0 || m->sample < 0 || m->sample >= m->train_samples ||
        m->sample % gb || m->epoch > (INT64_MAX - per_epoch) / per_epoch ||
        m->step != m->epoch * per_epoch + m->sample / gb)
        return sym__error(SYM_ECORRUPT, "%s holds an impossible position: step %lld, epoch "
                          "%lld, sample %lld (epochs of %lld steps of %lld of %lld samples put "
                          "step %lld at epoch %lld, sample %lld)",
                          path, (long long)m->step, (long long)m->epoch, (long long)m->sample,
                          (long long)per_epoch, (long long)gb, (long long)m->train_samples,
                          (long long)m->step, (long long)(m->step / per_epoch),
                          (long long)(m->step % per_epoch * gb));
    if (dropout_counter != m->step || m->optim_steps > (uint64_t)m->step || m->total_steps < 0 ||
        (m->total_steps > 0 && m->step > m->total_steps))
        return sym__error(SYM_ECORRUPT, "%s: step %lld disagrees with the dropout counter "
                          "(%lld), the optimizer's steps (%llu) or the schedule's length (%lld)",
                          path, (long long)m->step, (long long)dropout_counter,
                          (unsigned long long)m->optim_steps, (long long)m->total_steps);
    return SYM_OK;
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

/* The balancer's shares and speeds (optional: an even split has none). */
static int parse_balance(const char *path, const sym_json_t *bal, sym_ckpt_meta_t *m) {
    if (!bal) return SYM_OK;
    const sym_json_t *sh = sym__json_get(bal, "shares"), *sp = sym__json_get(bal, "samples_per_s");
    int n = 0, k = 0;
    if (sym__json_str(bal, "policy", m->balance, sizeof m->balance) || !sh ||
        sh->type != SYM_JARR || !sp || sp->type != SYM_JARR)
        return sym__error(SYM_ECORRUPT, "%s has a malformed \"balance\" entry", path);
    for (const sym_json_t *e = sh->child; e; e = e->next) n++;
    for (const sym_json_t *e = sp->child; e; e = e->next) k++;
    if (n != k || n != m->world_size)
        return sym__error(SYM_ECORRUPT, "%s: \"balance\" lists %d shares and %d speeds for %d PEs",
                          path, n, k, m->world_size);
    m->shares = calloc((size_t)n, sizeof *m->shares);
    m->speeds = calloc((size_t)n, sizeof *m->speeds);
    if (!m->shares || !m->speeds) return sym__error(SYM_ENOMEM, "out of memory for %s", path);
    int64_t sum = 0;
    k = 0;
    for (const sym_json_t *e = sh->child, *v = sp->child; e && v; e = e->next, v = v->next, k++) {
        if (e->type != SYM_JNUM || v->type != SYM_JNUM || e->num < 0 || e->num != (int)e->num)
            return sym__error(SYM_ECORRUPT, "%s: a share is not a whole number", path);
        m->shares[k] = (int)e->num;
        m->speeds[k] = v->num;
        sum += m->shares[k];
    }
    if (sum != m->global_batch)
        return sym__error(SYM_ECORRUPT, "%s: the shares sum to %lld, the global batch is %d", path,
                          (long long)sum, m->global_batch);
    m->nshares = n;
    return SYM_OK;
}

/* The fields every format shares, from parsed manifest j (its text checked
 * against its own checksum first); *version: 2 or 3. m->shares and m->speeds
 * are malloc'd (the caller frees them, failure or not). */
int sym__ckpt_parse_meta(const char *path, const char *text, size_t len, const sym_json_t *j,
                         sym_ckpt_meta_t *m, int *version) {
    char format[64] = "";
    int64_t v = 0, ws = 0, gb = 0, bt = 0, dropout_counter = -1;
    const sym_json_t *model = sym__json_get(j, "model"), *opt = sym__json_get(j, "optimizer");
    const sym_json_t *rng = sym__json_get(j, "rng"), *data = sym__json_get(j, "data");
    const sym_json_t *rdata = sym__json_get(rng, "data"), *rdrop = sym__json_get(rng, "dropout");
    double dropout = 0;
    if (sym__json_str(j, "format", format, sizeof format) || strcmp(format, FORMAT))
        return sym__error(SYM_ECORRUPT, "%s is not a symtrain checkpoint manifest", path);
    if (sym__json_i64(j, "version", &v) || (v != VERSION && v != SYM_CKPT_SHARDED_VERSION))
        return sym__error(SYM_ECORRUPT, "%s has format version %lld; this symtrain reads "
                          "versions %d and %d", path, (long long)v, VERSION,
                          SYM_CKPT_SHARDED_VERSION);
    *version = (int)v;
    int rc = check_manifest_crc(path, text, len);
    if (rc) return rc;
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
        sym__json_i64(rdrop, "counter", &dropout_counter) ||
        sym__json_str(data, "name", m->dataset, sizeof m->dataset) ||
        sym__json_i64(data, "train_samples", &m->train_samples))
        return sym__error(SYM_ECORRUPT, "%s lacks a field or has one of the wrong type", path);
    const sym_json_t *sched = sym__json_get(j, "schedule"); /* optional: older ones lack it */
    if (sched && (sym__json_num(sched, "lr", &m->lr) ||
                  sym__json_i64(sched, "total_steps", &m->total_steps)))
        return sym__error(SYM_ECORRUPT, "%s has a malformed schedule", path);
    if ((rc = check_fields(path, m, ws, bt, gb, dropout_counter))) return rc;
    m->world_size = (int)ws;
    m->blas_threads = (int)bt;
    m->global_batch = (int)gb;
    m->dropout = (float)dropout;
    return parse_balance(path, sym__json_get(j, "balance"), m);
}

/* One entry of a "files" list: a plain name, a size, a hexadecimal CRC32C. */
int sym__ckpt_parse_file(const char *path, const sym_json_t *f, char *name, size_t name_len,
                         size_t *size, uint32_t *crc32c) {
    char crc[16];
    int64_t sz;
    if (sym__json_str(f, "name", name, name_len) || !sym__ckpt_valid_name(name) ||
        sym__json_i64(f, "size", &sz) || sz < 0 || sym__json_str(f, "crc32c", crc, sizeof crc))
        return sym__error(SYM_ECORRUPT, "%s has a malformed file entry", path);
    char *end;
    *crc32c = (uint32_t)strtoul(crc, &end, 16);
    if (*end || !crc[0])
        return sym__error(SYM_ECORRUPT, "%s: CRC '%s' of %s is not hexadecimal", path, crc, name);
    *size = (size_t)sz;
    return SYM_OK;
}

static int parse_manifest(const char *path, const char *text, size_t len, sym_ckpt_t *ck) {
    char err[128];
    sym_json_t *j = sym__json_parse(text, len, err, sizeof err);
    if (!j) return sym__error(SYM_ECORRUPT, "%s is not valid JSON (%s)", path, err);
    int version = 0;
    int rc = sym__ckpt_parse_meta(path, text, len, j, &ck->meta, &version);
    if (!rc && version != VERSION)
        rc = sym__error(SYM_EINVAL, "%s is a sharded checkpoint (format %d): it is read piece "
                        "by piece (sym_dckpt_open), not whole", path, version);
    if (rc) goto out;
    const sym_json_t *files = sym__json_get(j, "files");
    if (!files || files->type != SYM_JARR) {
        rc = sym__error(SYM_ECORRUPT, "%s has no file list", path);
        goto out;
    }
    ck->nfiles = 0;
    for (const sym_json_t *f = files->child; f; f = f->next) {
        if (ck->nfiles == SYM_CKPT_MAX_FILES) {
            rc = sym__error(SYM_ECORRUPT, "%s lists more than %d files", path, SYM_CKPT_MAX_FILES);
            goto out;
        }
        sym_ckpt_file_t *cf = &ck->files[ck->nfiles];
        if ((rc = sym__ckpt_parse_file(path, f, cf->name, sizeof cf->name, &cf->size,
                                       &cf->crc32c)))
            goto out;
        cf->data = NULL;
        ck->nfiles++;
    }
    rc = parse_tensors(path, sym__json_get(j, "tensors"), ck);
out:
    sym__json_free(j);
    return rc;
}

/* ---- removing ---- */

/* Unlink, in directory dfd, every file the manifest there lists (plain names
 * only); 0, or -1 when it has no manifest that parses. Its checksum is not
 * needed: a plain name names a file of this directory and nothing else. */
static int unlink_listed(int dfd, const char *dir) {
    char mpath[PATH_MAX], name[64];
    void *text;
    size_t len;
    if (sym__ckpt_join(mpath, sizeof mpath, dir, MANIFEST) ||
        sym__ckpt_read_file_at(dfd, MANIFEST, mpath, SIZE_MAX, MAX_MANIFEST, &text, &len))
        return -1;
    sym_json_t *j = sym__json_parse(text, len, NULL, 0);
    free(text);
    const sym_json_t *files = sym__json_get(j, "files");
    int rc = files && files->type == SYM_JARR ? 0 : -1;
    for (const sym_json_t *f = files ? files->child : NULL; f; f = f->next)
        if (!sym__json_str(f, "name", name, sizeof name) && sym__ckpt_valid_name(name))
            unlinkat(dfd, name, 0);
    sym__json_free(j);
    return rc;
}

int sym__ckpt_is_shard_name(const char *s) {
    if (strncmp(s, "shard-", 6) != 0) return 0;
    s += 6;
    size_t digits = strspn(s, "0123456789");
    return digits >= 5 && (!strcmp(s + digits, ".bin") || !strcmp(s + digits, ".json"));
}

/* Unlink the shard files (shard-NNNNN.bin / .json) in directory dfd. */
static void unlink_shards(int dfd) {
    int fd = dup(dfd);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0) close(fd);
        return;
    }
    struct dirent *e;
    while ((e = readdir(d)))
        if (sym__ckpt_is_shard_name(e->d_name)) unlinkat(dfd, e->d_name, 0);
    closedir(d);
}

/* Remove the checkpoint directory `name` in dir (a step-* one pruned, or a
 * writer's leftover): the files its own manifest lists and the manifest; with
 * no manifest that parses, the files named in `known` (those the writer
 * writes) and shard files (those the PEs of a sharded save write). Then the
 * directory itself, which fails, leaving it, when anything else is in it.
 * Nothing is followed: a symbolic link, or anything but a directory, in its
 * place is left alone, and files are removed relative to the directory
 * opened, so an entry swapped for a link meanwhile leads nowhere. */
void sym__ckpt_remove(const char *dir, const char *name, const sym_ckpt_file_t *known,
                      int nknown) {
    int pfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (pfd < 0) return;
    char said[1024]; /* removing says nothing: the caller's last error stays */
    snprintf(said, sizeof said, "%s", sym_last_error());
    int dfd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd >= 0) {
        char path[PATH_MAX];
        if (sym__ckpt_join(path, sizeof path, dir, name) || unlink_listed(dfd, path) < 0) {
            for (int i = 0; i < nknown; i++) unlinkat(dfd, known[i].name, 0);
            unlink_shards(dfd);
        } else if (!strncmp(name, ".tmp-step-", 10)) {
            /* a sharded commit that died between its manifest (which lists the
             * .bin files) and removing the shards' .json indexes */
            unlink_shards(dfd);
        }
        unlinkat(dfd, MANIFEST, 0);
        close(dfd);
        unlinkat(pfd, name, AT_REMOVEDIR);
    }
    close(pfd);
    sym__error(SYM_OK, "%s", said);
}

/* ---- writing ---- */

/* After writing step `written` (whose files are `files`): keep the newest
 * `keep` checkpoints up to it, remove the older ones and writers' leftovers.
 * A checkpoint of a later step is never removed: this run has not verified it
 * (a damaged one --resume passed over is skipped by every reader, and is
 * replaced when this run saves that step). */
int sym__ckpt_prune(const char *dir, int keep, int64_t written, const sym_ckpt_file_t *files,
                 int nfiles) {
    int64_t *steps;
    int n;
    int rc = sym__ckpt_list_steps(dir, &steps, &n);
    if (rc) return rc;
    char name[64];
    int kept = 0;
    for (int i = 0; i < n; i++) {
        if (steps[i] > written) continue;
        if (kept < keep) {
            kept++;
            continue;
        }
        snprintf(name, sizeof name, "step-%08lld", (long long)steps[i]);
        sym__ckpt_remove(dir, name, files, nfiles);
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
            sym__ckpt_remove(dir, e->d_name, files, nfiles);
        }
        closedir(d);
    }
    return SYM_OK;
}

int sym_ckpt_write(const char *dir, int keep, const sym_ckpt_meta_t *meta,
                   const sym_ckpt_file_t *in, int nfiles, char *out_path, size_t out_len) {
    if (nfiles < 0 || nfiles > SYM_CKPT_MAX_FILES)
        return sym__error(SYM_EINVAL, "a checkpoint holds at most %d files", SYM_CKPT_MAX_FILES);
    for (int i = 0; i < nfiles; i++)
        if (!sym__ckpt_valid_name(in[i].name))
            return sym__error(SYM_EINVAL, "'%s' is not a plain file name", in[i].name);
    int rc = sym__ckpt_mkdir_p(dir);
    if (rc) return rc;
    char tmp_name[64], tmp[PATH_MAX], path[PATH_MAX];
    snprintf(tmp_name, sizeof tmp_name, ".tmp-step-%08lld.%ld", (long long)meta->step,
             (long)getpid());
    if ((rc = sym__ckpt_join(tmp, sizeof tmp, dir, tmp_name))) return rc;
    sym__ckpt_remove(dir, tmp_name, in, nfiles);
    if (mkdir(tmp, DIR_MODE) < 0)
        return sym__error(SYM_EIO, "cannot create %s: %s", tmp, strerror(errno));

    sym_ckpt_file_t files[SYM_CKPT_MAX_FILES];
    sym_jbuf_t man = {0};
    for (int i = 0; i < nfiles; i++) {
        files[i] = in[i];
        files[i].crc32c = sym__crc32c(0, files[i].data, files[i].size);
        if ((rc = sym__ckpt_join(path, sizeof path, tmp, files[i].name)) ||
            (rc = sym__ckpt_write_file(path, files[i].data, files[i].size)))
            goto fail;
    }
    sym__ckpt_test_delay();
    manifest_json(&man, meta, files, nfiles);
    if (man.failed) {
        rc = sym__error(SYM_ENOMEM, "out of memory writing the manifest");
        goto fail;
    }
    if ((rc = sym__ckpt_join(path, sizeof path, tmp, MANIFEST)) || (rc = sym__ckpt_write_file(path, man.buf, man.len)) ||
        (rc = sym__ckpt_fsync_dir(tmp)))
        goto fail;
    sym__jbuf_free(&man);

    return sym__ckpt_publish(dir, tmp_name, meta->step, keep, in, nfiles, out_path, out_len);
fail:
    sym__jbuf_free(&man);
    sym__ckpt_remove(dir, tmp_name, in, nfiles);
    return rc;
}

int sym__ckpt_publish(const char *dir, const char *tmp_name, int64_t step, int keep,
                      const sym_ckpt_file_t *known, int nknown, char *out_path, size_t out_len) {
    char old_name[64], tmp[PATH_MAX], final[PATH_MAX], old[PATH_MAX];
    snprintf(old_name, sizeof old_name, ".old-step-%08lld.%ld", (long long)step, (long)getpid());
    snprintf(final, sizeof final, "%s/step-%08lld", dir, (long long)step);
    int rc;
    if ((rc = sym__ckpt_join(tmp, sizeof tmp, dir, tmp_name)) ||
        (rc = sym__ckpt_join(old, sizeof old, dir, old_name)))
        return rc;
    /* The same step again (a resumed run saving where it started): swap it. */
    int had_old = rename(final, old) == 0;
    if (rename(tmp, final) < 0) {
        rc = sym__error(SYM_EIO, "cannot rename %s to %s: %s", tmp, final, strerror(errno));
        if (had_old) rename(old, final);
        sym__ckpt_remove(dir, tmp_name, known, nknown);
        return rc;
    }
    if (had_old) sym__ckpt_remove(dir, old_name, known, nknown);
    if ((rc = sym__ckpt_fsync_dir(dir))) return rc;
    if (out_path) snprintf(out_path, out_len, "%s", final);
    return sym__ckpt_prune(dir, keep < 1 ? 1 : keep, step, known, nknown);
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
    int *shares;                /* meta.shares and meta.speeds point here */
    double *speeds;
    int shares_cap;
    int nfiles;
    sym_ckpt_file_t files[SYM_CKPT_MAX_FILES];
    void *buf[SYM_CKPT_MAX_FILES];
    size_t cap[SYM_CKPT_MAX_FILES];
    char stage[64];             /* non-empty: one PE's shard files, into dir/stage */
    /* sym__ckpt_save_borrowed: the files are the caller's, and ready(ready_user)
     * runs on the thread before it reads them (NULL: they are ready) */
    int (*ready)(void *);
    void *ready_user;
    /* sym__ckpt_save_shard_later: the shard's files made on the thread (malloc'd, adopted) */
    int (*build)(void *, sym_ckpt_file_t *, int *);
    void *build_user;
};

/* A later shard's files from its build(), into the writer's buffers. */
static int adopt_built(sym_ckpt_writer_t *w) {
    sym_ckpt_file_t f[SYM_CKPT_MAX_FILES];
    int n = 0, rc = w->build(w->build_user, f, &n);
    for (int i = 0; !rc && i < n; i++) {
        free(w->buf[i]);
        w->buf[i] = (void *)f[i].data;
        w->cap[i] = f[i].size;
        w->files[i] = f[i];
    }
    w->nfiles = rc ? 0 : n;
    return rc;
}

/* One PE's part of a sharded save: its files into dir/stage (created by the
 * first PE to get there), each fsync'd, then the directory. */
static int write_shard(const char *dir, const char *stage, const sym_ckpt_file_t *files,
                       int nfiles) {
    char sdir[PATH_MAX], path[PATH_MAX];
    int rc = sym__ckpt_join(sdir, sizeof sdir, dir, stage);
    if (rc) return rc;
    if (mkdir(sdir, DIR_MODE) < 0 && errno != EEXIST)
        return sym__error(SYM_EIO, "cannot create %s: %s", sdir, strerror(errno));
    for (int i = 0; i < nfiles; i++)
        if ((rc = sym__ckpt_join(path, sizeof path, sdir, files[i].name)) ||
            (rc = sym__ckpt_write_file(path, files[i].data, files[i].size)))
            return rc;
    sym__ckpt_test_delay();
    return sym__ckpt_fsync_dir(sdir);
}

static void *writer_main(void *arg) {
    sym_ckpt_writer_t *w = arg;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (!w->pending && !w->stop) pthread_cond_wait(&w->cv, &w->mu);
        if (!w->pending) break; /* stop, nothing left */
        pthread_mutex_unlock(&w->mu);
        char path[PATH_MAX] = "";
        double t0 = sym__now_s();
        int rc = w->ready ? w->ready(w->ready_user) : SYM_OK;
        if (!rc && w->build) rc = adopt_built(w);
        if (!rc)
            rc = w->stage[0] ? write_shard(w->dir, w->stage, w->files, w->nfiles)
                             : sym_ckpt_write(w->dir, w->keep, &w->meta, w->files, w->nfiles,
                                              path, sizeof path);
        double dt = sym__now_s() - t0;
        uint64_t bytes = 0;
        for (int i = 0; i < w->nfiles; i++) bytes += w->files[i].size;
        pthread_mutex_lock(&w->mu);
        w->status = rc;
        if (rc) {
            snprintf(w->error, sizeof w->error, "%s", sym_last_error());
            w->stats.failures++;
        } else {
            if (!w->stage[0]) snprintf(w->last_path, sizeof w->last_path, "%s", path);
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

#define LOCK_NAME ".lock"

#define DYING_WAIT_S 60.0 /* for an earlier attempt's PE to end (the lock, then an error) */

/* The lock file's "host H, pid P" names this host and one of the last
 * attempt's PEs still ending (SYMTRAIN_DYING_PIDS, from symrun). */
static int held_by_dying(const char *who) {
    char host[128] = "", mine[128] = "?";
    int pid = 0;
    gethostname(mine, sizeof mine - 1);
    return sscanf(who, "host %127[^,], pid %d", host, &pid) == 2 && !strcmp(host, mine) &&
           sym__proc_dying((pid_t)pid);
}

/* Take the flock on fd (dir's lock file, at path) and say who holds it.
 * A holder among the last attempt's PEs still ending holds it to its very
 * end: waited for (up to DYING_WAIT_S), or with `pending` left for
 * sym_ckpt_lock_finish (*pending 1). The descriptor is closed on failure. */
static int take_lock(const char *dir, const char *path, int fd, int *pending) {
    double until = sym__now_s() + DYING_WAIT_S;
    int e = 0;
    char held[256] = "";
    while (flock(fd, LOCK_EX | LOCK_NB) < 0) {
        e = errno;
        ssize_t got = e == EWOULDBLOCK ? pread(fd, held, sizeof held - 1, 0) : -1;
        held[got > 0 ? got : 0] = '\0';
        held[strcspn(held, "\n")] = '\0';
        if (e != EWOULDBLOCK || !held_by_dying(held) || sym__now_s() > until) break;
        if (pending) {
            *pending = 1;
            return SYM_OK;
        }
        nanosleep(&(struct timespec){0, 2000000}, NULL);
        e = 0;
    }
    if (e) {
        close(fd);
        if (e != EWOULDBLOCK)
            return sym__error(SYM_EIO, "cannot lock %s: %s", path, strerror(e));
        return sym__error(SYM_EBUSY, "checkpoint directory %s is in use by another running job "
                          "(%s); give this run another --ckpt-dir, or end that job first",
                          dir, held[0] ? held : "its host and pid not yet written");
    }
    char host[128] = "?", who[256];
    gethostname(host, sizeof host - 1);
    int n = snprintf(who, sizeof who, "host %s, pid %d\n", host, (int)getpid());
    if (ftruncate(fd, 0) < 0 || pwrite(fd, who, (size_t)n, 0) != n) {
        e = errno;
        close(fd);
        return sym__error(SYM_EIO, "cannot write the lock file %s: %s", path, strerror(e));
    }
    return SYM_OK;
}

/* sym_ckpt_lock (pending NULL: a dying holder waited for) and _begin. */
static int lock_dir(const char *dir, int *fd_out, int *pending) {
    *fd_out = -1;
    if (pending) *pending = 0;
    char path[PATH_MAX];
    int rc = sym__ckpt_mkdir_p(dir);
    if (!rc) rc = sym__ckpt_join(path, sizeof path, dir, LOCK_NAME);
    if (rc) return rc;
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return sym__error(SYM_EIO, "cannot open the lock file %s: %s", path, strerror(errno));
    if (!(rc = take_lock(dir, path, fd, pending))) *fd_out = fd;
    return rc;
}

int sym_ckpt_lock(const char *dir, int *fd_out) { return lock_dir(dir, fd_out, NULL); }

int sym_ckpt_lock_begin(const char *dir, int *fd_out, int *pending) {
    return lock_dir(dir, fd_out, pending);
}

int sym_ckpt_lock_finish(const char *dir, int fd) {
    char path[PATH_MAX];
    int rc = sym__ckpt_join(path, sizeof path, dir, LOCK_NAME);
    if (rc) {
        close(fd);
        return rc;
    }
    return take_lock(dir, path, fd, NULL);
}

void sym_ckpt_unlock(int fd) {
    if (fd >= 0) close(fd); /* the flock goes with the last descriptor */
}

int sym_ckpt_writer_create(const char *dir, int keep, sym_ckpt_writer_t **out) {
    *out = NULL;
    int rc = sym__ckpt_mkdir_p(dir);
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

/* How the writer takes a save's files: copied into its buffers, files[0]
 * (malloc'd) adopted and the rest copied, or all borrowed (the caller's until
 * the write is done). */
enum { TAKE_COPY, TAKE_ADOPT_FIRST, TAKE_BORROW };

/* Take files into the writer (w->mu held, nothing pending) as `take` says. */
static int snapshot_files(sym_ckpt_writer_t *w, const sym_ckpt_file_t *files, int nfiles,
                          int take) {
    int adopt = take == TAKE_ADOPT_FIRST;
    w->ready = NULL;
    w->ready_user = NULL;
    w->build = NULL;
    w->build_user = NULL;
    for (int i = 0; i < nfiles; i++) {
        if (take == TAKE_BORROW) {
            w->files[i] = files[i];
            continue;
        }
        if (adopt && i == 0) {
            free(w->buf[0]);
            w->buf[0] = (void *)files[0].data;
            w->cap[0] = files[0].size;
        } else if (w->cap[i] < files[i].size) {
            void *nb = realloc(w->buf[i], files[i].size);
            if (!nb) return sym__error(SYM_ENOMEM, "out of memory for a checkpoint snapshot");
            w->buf[i] = nb;
            w->cap[i] = files[i].size;
        }
        if (files[i].size && !(adopt && i == 0)) memcpy(w->buf[i], files[i].data, files[i].size);
        w->files[i] = files[i];
        w->files[i].data = w->buf[i];
    }
    w->nfiles = nfiles;
    return SYM_OK;
}

/* Lock, wait for the save in progress (*prev: its failure, once), take the
 * files (snapshot_files); on failure unlocked again. */
static int begin_locked(sym_ckpt_writer_t *w, const sym_ckpt_file_t *files, int nfiles,
                        int take, int *prev) {
    pthread_mutex_lock(&w->mu);
    *prev = wait_locked(w);
    int rc = snapshot_files(w, files, nfiles, take);
    if (rc) pthread_mutex_unlock(&w->mu);
    return rc;
}

static void start_locked(sym_ckpt_writer_t *w) {
    w->status = 0;
    w->pending = 1;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

/* sym_ckpt_save's work, the files taken as `take` says (copied or borrowed);
 * a borrowed save's ready(user) runs on the writer thread first. */
static int save_whole(sym_ckpt_writer_t *w, const sym_ckpt_meta_t *meta,
                      const sym_ckpt_file_t *files, int nfiles, int take, int (*ready)(void *),
                      void *user) {
    if (nfiles < 0 || nfiles > SYM_CKPT_MAX_FILES)
        return sym__error(SYM_EINVAL, "a checkpoint holds at most %d files", SYM_CKPT_MAX_FILES);
    int prev, rc = begin_locked(w, files, nfiles, take, &prev);
    if (rc) return rc;
    w->ready = ready;
    w->ready_user = user;
    w->stage[0] = '\0';
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
    if (meta->nshares > w->shares_cap) {
        int *sh = realloc(w->shares, (size_t)meta->nshares * sizeof *sh);
        if (sh) w->shares = sh;
        double *sp = sh ? realloc(w->speeds, (size_t)meta->nshares * sizeof *sp) : NULL;
        if (sp) w->speeds = sp;
        if (!sh || !sp) {
            pthread_mutex_unlock(&w->mu);
            return sym__error(SYM_ENOMEM, "out of memory for a checkpoint's shares");
        }
        w->shares_cap = meta->nshares;
    }
    if (meta->nshares) {
        memcpy(w->shares, meta->shares, (size_t)meta->nshares * sizeof *w->shares);
        memcpy(w->speeds, meta->speeds, (size_t)meta->nshares * sizeof *w->speeds);
    }
    w->meta.shares = w->shares;
    w->meta.speeds = w->speeds;
    start_locked(w);
    return prev;
}

int sym_ckpt_save(sym_ckpt_writer_t *w, const sym_ckpt_meta_t *meta,
                  const sym_ckpt_file_t *files, int nfiles) {
    return save_whole(w, meta, files, nfiles, TAKE_COPY, NULL, NULL);
}

int sym__ckpt_save_borrowed(sym_ckpt_writer_t *w, const sym_ckpt_meta_t *meta,
                            const sym_ckpt_file_t *files, int nfiles, int (*ready)(void *),
                            void *user) {
    return save_whole(w, meta, files, nfiles, TAKE_BORROW, ready, user);
}

int sym__ckpt_save_files(sym_ckpt_writer_t *w, const char *stage, const sym_ckpt_file_t *files,
                         int nfiles) {
    if (nfiles < 1 || nfiles > SYM_CKPT_MAX_FILES || strlen(stage) >= sizeof w->stage ||
        !sym__ckpt_valid_name(stage)) {
        free((void *)files[0].data);
        return sym__error(SYM_EINVAL, "a shard is 1 to %d files in a plain directory name",
                          SYM_CKPT_MAX_FILES);
    }
    int prev, rc = begin_locked(w, files, nfiles, TAKE_ADOPT_FIRST, &prev);
    if (rc) return rc;
    snprintf(w->stage, sizeof w->stage, "%s", stage);
    start_locked(w);
    return prev;
}

int sym__ckpt_save_shard_later(sym_ckpt_writer_t *w, const char *stage,
                               int (*build)(void *, sym_ckpt_file_t *, int *), void *user) {
    if (strlen(stage) >= sizeof w->stage || !sym__ckpt_valid_name(stage))
        return sym__error(SYM_EINVAL, "a shard goes into a plain directory name");
    int prev, rc = begin_locked(w, NULL, 0, TAKE_BORROW, &prev);
    if (rc) return rc;
    snprintf(w->stage, sizeof w->stage, "%s", stage);
    w->build = build;
    w->build_user = user;
    start_locked(w);
    return prev;
}

int sym__ckpt_busy(sym_ckpt_writer_t *w) {
    pthread_mutex_lock(&w->mu);
    int busy = w->pending;
    pthread_mutex_unlock(&w->mu);
    return busy;
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
    free(w->shares);
    free(w->speeds);
    free(w);
}

/* ---- reading ---- */

void sym_ckpt_release(sym_ckpt_t *ck) {
    for (int i = 0; i < ck->nfiles; i++) free((void *)ck->files[i].data);
    ck->nfiles = 0;
    free(ck->meta.tensors);
    ck->meta.tensors = NULL;
    ck->meta.ntensors = 0;
    free(ck->meta.shares);
    free(ck->meta.speeds);
    ck->meta.shares = NULL;
    ck->meta.speeds = NULL;
    ck->meta.nshares = 0;
}

const sym_ckpt_tensor_t *sym_ckpt_tensor(const sym_ckpt_t *ck, const char *name) {
    for (int i = 0; i < ck->meta.ntensors; i++)
        if (!strcmp(ck->meta.tensors[i].name, name)) return &ck->meta.tensors[i];
    return NULL;
}

/* Read and verify the checkpoint directory at path; `follow`: a symbolic link
 * there is followed (a path a user named) rather than taken for damage (an
 * entry found by scanning a --ckpt-dir). */
static int load(const char *path, int follow, sym_ckpt_t *ck) {
    memset(ck, 0, sizeof *ck);
    snprintf(ck->path, sizeof ck->path, "%s", path);
    int dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | (follow ? 0 : O_NOFOLLOW));
    if (dfd < 0) {
        if (errno == ENOENT) return sym__error(SYM_ENOENT, "%s does not exist", path);
        struct stat st;
        if ((errno == ELOOP || errno == ENOTDIR) && lstat(path, &st) == 0)
            return sym__error(SYM_ECORRUPT, "%s is %s, not a checkpoint directory", path,
                              S_ISLNK(st.st_mode) ? "a symbolic link" : "not a directory");
        return sym__error(SYM_EIO, "cannot open %s: %s", path, strerror(errno));
    }
    char mpath[PATH_MAX];
    snprintf(mpath, sizeof mpath, "%s/%s", path, MANIFEST);
    void *text;
    size_t len;
    int rc = sym__ckpt_read_file_at(dfd, MANIFEST, mpath, SIZE_MAX, MAX_MANIFEST, &text, &len);
    if (rc == SYM_ENOENT) rc = sym__error(SYM_ECORRUPT, "%s has no %s", path, MANIFEST);
    if (!rc) {
        rc = parse_manifest(mpath, text, len, ck);
        free(text);
    }
    if (rc) ck->nfiles = 0;
    for (int i = 0; !rc && i < ck->nfiles; i++) {
        sym_ckpt_file_t *f = &ck->files[i];
        char fpath[PATH_MAX];
        snprintf(fpath, sizeof fpath, "%s/%s", path, f->name);
        void *data = NULL;
        size_t size = 0;
        rc = sym__ckpt_read_file_at(dfd, f->name, fpath, f->size, SIZE_MAX, &data, &size);
        if (rc == SYM_ENOENT) rc = sym__error(SYM_ECORRUPT, "%s is missing", fpath);
        uint32_t crc = rc ? 0 : sym__crc32c(0, data, size);
        if (!rc && crc != f->crc32c)
            rc = sym__error(SYM_ECORRUPT, "%s has CRC32C %08x, the manifest says %08x", fpath, crc,
                            f->crc32c);
        if (rc) {
            free(data); /* NULL when the read itself failed */
            ck->nfiles = i;
        } else {
            f->data = data;
        }
    }
    close(dfd);
    if (rc) sym_ckpt_release(ck);
    return rc;
}

int sym_ckpt_load(const char *path, sym_ckpt_t *ck) { return load(path, 1, ck); }

int sym_ckpt_load_latest(const char *dir, sym_ckpt_t *out,
                         void (*report)(void *user, const char *msg), void *user) {
    memset(out, 0, sizeof *out);
    int64_t *steps;
    int n;
    int rc = sym__ckpt_list_steps(dir, &steps, &n);
    if (rc == SYM_ENOENT) return sym__error(SYM_ENOENT, "%s does not exist", dir);
    if (rc) return rc;
    int bad = 0;
    rc = SYM_ENOENT;
    for (int i = 0; i < n; i++) {
        char path[PATH_MAX], msg[PATH_MAX + 1536];
        snprintf(path, sizeof path, "%s/step-%08lld", dir, (long long)steps[i]);
        rc = load(path, 0, out);
        if (rc == SYM_OK && out->meta.step != steps[i]) {
            rc = sym__error(SYM_ECORRUPT, "%s holds step %lld", path, (long long)out->meta.step);
            sym_ckpt_release(out);
        }
        if (rc == SYM_OK) break;
        if (rc == SYM_ENOENT) continue; /* removed since it was listed */
        if (rc != SYM_ECORRUPT) {
            /* Unreadable is not damaged: it may be the good one. */
            snprintf(msg, sizeof msg, "%s", sym_last_error());
            rc = sym__error(rc, "checkpoint %s cannot be read (%s), so it cannot be checked: "
                            "nothing older is taken in its place; make it readable and run again",
                            path, msg);
            break;
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
    if (rc == SYM_OK || (rc != SYM_ECORRUPT && rc != SYM_ENOENT)) return rc;
    if (bad)
        return sym__error(SYM_ECORRUPT, "%s holds no usable checkpoint (%d damaged)", dir, bad);
    return sym__error(SYM_ENOENT, "%s holds no checkpoint", dir);
}

int64_t sym_ckpt_newest_step(const char *dir) {
    int64_t *steps, newest = -1;
    int n;
    if (sym__ckpt_list_steps(dir, &steps, &n)) return -1;
    if (n) newest = steps[0];
    free(steps);
    return newest;
}

const sym_ckpt_file_t *sym_ckpt_file(const sym_ckpt_t *ck, const char *name) {
    for (int i = 0; i < ck->nfiles; i++)
        if (!strcmp(ck->files[i].name, name)) return &ck->files[i];
    return NULL;
}
