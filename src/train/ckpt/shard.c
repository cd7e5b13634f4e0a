/*
 * shard.c — sharded checkpoints (format 3, see symtrain/ckpt.h): slices of
 * global tensors, one PE's shard files, PE 0's commit of the manifest that
 * names every slice, and reading any box of a tensor back from the slices
 * that overlap it (format 2 too: each tensor is one whole slice there).
 *
 * A PE's shard is shard-PPPPP.bin (its slices' bytes, one after another) and
 * shard-PPPPP.json, its index (each slice: tensor, dtype, global shape, start,
 * count, offset, CRC32C; the file's size and CRC32C). PE 0 reads every index
 * at the commit, checks that the slices tile every tensor exactly, writes the
 * manifest, removes the indexes and renames the directory into place
 * (ckpt.c's publish, the same as a single writer's).
 *
 * Reading a box: every stored slice that overlaps it is read whole (so its
 * CRC32C is checked) and the overlap copied, one run of the last dimension at
 * a time.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckpt/ckpt_internal.h"
#include "util/util.h"

#define MAX_INDEX ((size_t)64 << 20)

/* ---- slices ---- */

int64_t sym_ckpt_slice_elems(const sym_ckpt_slice_t *s) {
    int64_t n = 1;
    for (int d = 0; d < s->ndim; d++) n *= s->count[d];
    return n;
}

void sym_ckpt_slice_whole(sym_ckpt_slice_t *s) {
    for (int d = 0; d < s->ndim; d++) {
        s->start[d] = 0;
        s->count[d] = s->shape[d];
    }
}

void sym_ckpt_slice_split(sym_ckpt_slice_t *s, int part, int nparts) {
    sym_ckpt_slice_whole(s);
    int64_t rows = s->shape[0], base = rows / nparts, rem = rows % nparts;
    s->start[0] = (int64_t)part * base + (part < rem ? part : rem);
    s->count[0] = base + (part < rem);
}

static void dims_json(sym_jbuf_t *b, const char *key, int ndim, const int64_t *v) {
    sym__jbuf_printf(b, "\"%s\": [", key);
    for (int d = 0; d < ndim; d++) sym__jbuf_printf(b, "%s%lld", d ? ", " : "", (long long)v[d]);
    sym__jbuf_printf(b, "]");
}

/* Read a list of ndim whole numbers >= 0 into v; -1 when it is not one. */
static int dims_parse(const sym_json_t *arr, int ndim, int64_t *v) {
    int n = 0;
    if (!arr || arr->type != SYM_JARR) return -1;
    for (const sym_json_t *e = arr->child; e; e = e->next) {
        char *end;
        long long x = e->type == SYM_JNUM ? strtoll(e->str, &end, 10) : -1;
        if (n == ndim || x < 0 || x > ((int64_t)1 << 48)) return -1;
        v[n++] = x;
    }
    return n == ndim ? 0 : -1;
}

static int ndim_of(const sym_json_t *arr) {
    int n = 0;
    for (const sym_json_t *e = arr && arr->type == SYM_JARR ? arr->child : NULL; e; e = e->next)
        n++;
    return n;
}

/* ---- one PE's shard files ---- */

static void shard_name(char *out, size_t len, int pe, const char *ext) {
    snprintf(out, len, "shard-%05d.%s", pe, ext);
}

int sym__ckpt_shard_files(int pe, const sym_ckpt_slice_t *slices, int n, void **bin,
                          size_t *bin_len, sym_jbuf_t *index) {
    size_t total = 0;
    for (int i = 0; i < n; i++) {
        const sym_ckpt_slice_t *s = &slices[i];
        if (s->ndim < 1 || s->ndim > SYM_MAX_DIMS)
            return sym__error(SYM_EINVAL, "checkpoint slice of %s: %d dimensions", s->name, s->ndim);
        for (int d = 0; d < s->ndim; d++)
            if (s->start[d] < 0 || s->count[d] < 0 || s->start[d] + s->count[d] > s->shape[d])
                return sym__error(SYM_EINVAL, "checkpoint slice of %s lies outside its shape",
                                  s->name);
        total += (size_t)sym_ckpt_slice_elems(s) * sym_dtype_size(s->dtype);
    }
    char *buf = malloc(total ? total : 1);
    if (!buf) return sym__error(SYM_ENOMEM, "out of memory for a checkpoint shard (%zu bytes)", total);
    char file[32];
    shard_name(file, sizeof file, pe, "bin");
    sym__jbuf_printf(index, "{\"pe\": %d, \"name\": \"%s\", \"slices\": [", pe, file);
    size_t off = 0;
    int first = 1;
    uint32_t whole = 0; /* the file's CRC, from the slices' (one pass over the data) */
    for (int i = 0; i < n; i++) {
        const sym_ckpt_slice_t *s = &slices[i];
        size_t bytes = (size_t)sym_ckpt_slice_elems(s) * sym_dtype_size(s->dtype);
        if (!bytes) continue; /* an empty part (a tensor of fewer rows than PEs) */
        uint32_t crc = sym__crc32c_copy(0, buf + off, s->data, bytes);
        whole = sym__crc32c_combine(whole, crc, bytes);
        sym__jbuf_printf(index, "%s\n  {\"name\": ", first ? "" : ",");
        sym__jbuf_string(index, s->name);
        sym__jbuf_printf(index, ", \"dtype\": \"%s\", ", sym_dtype_name(s->dtype));
        dims_json(index, "shape", s->ndim, s->shape);
        sym__jbuf_printf(index, ", ");
        dims_json(index, "start", s->ndim, s->start);
        sym__jbuf_printf(index, ", ");
        dims_json(index, "count", s->ndim, s->count);
        sym__jbuf_printf(index, ", \"offset\": %zu, \"crc32c\": \"%08x\"}", off, crc);
        off += bytes;
        first = 0;
    }
    sym__jbuf_printf(index, "],\n \"size\": %zu, \"crc32c\": \"%08x\"}\n", total, whole);
    if (index->failed) {
        free(buf);
        return sym__error(SYM_ENOMEM, "out of memory for a checkpoint shard's index");
    }
    *bin = buf;
    *bin_len = total;
    return SYM_OK;
}

/* ---- the table of tensors and slices (commit and reading alike) ---- */

typedef struct {
    int tensor, file;
    uint64_t offset;
    uint32_t crc32c;
    int has_crc; /* format 2 has none per slice (its files' cover them) */
    int64_t start[SYM_MAX_DIMS], count[SYM_MAX_DIMS];
} slice_t;

typedef struct {
    char name[80];
    sym_dtype_t dtype;
    int ndim;
    int64_t shape[SYM_MAX_DIMS];
    int first, n; /* its slices: slices[first .. first + n) */
} tensor_t;

typedef struct {
    char name[64];
    int pe;
    size_t size;
    uint32_t crc32c;
    int fd; /* opened on first use; -1 */
} file_t;

struct sym_dckpt {
    char path[PATH_MAX];
    int version;
    char layout[64];
    sym_ckpt_meta_t meta;
    tensor_t *tensors;
    int ntensors;
    slice_t *slices;
    int nslices;
    file_t *files;
    int nfiles;
    int dfd;
};

static size_t slice_bytes(const tensor_t *t, const slice_t *s) {
    size_t n = sym_dtype_size(t->dtype);
    for (int d = 0; d < t->ndim; d++) n *= (size_t)s->count[d];
    return n;
}

static int boxes_overlap(int ndim, const int64_t *a0, const int64_t *an, const int64_t *b0,
                         const int64_t *bn) {
    for (int d = 0; d < ndim; d++)
        if (a0[d] >= b0[d] + bn[d] || b0[d] >= a0[d] + an[d]) return 0;
    return 1;
}

/* The slices of every tensor tile it: inside its shape, disjoint, and
 * together as many elements as it has. `where` names the checkpoint. */
static int check_tiling(const char *where, const tensor_t *tensors, int nt, const slice_t *slices) {
    for (int i = 0; i < nt; i++) {
        const tensor_t *t = &tensors[i];
        int64_t want = 1, got = 0;
        for (int d = 0; d < t->ndim; d++) want *= t->shape[d];
        for (int k = 0; k < t->n; k++) {
            const slice_t *s = &slices[t->first + k];
            int64_t n = 1;
            for (int d = 0; d < t->ndim; d++) {
                if (s->start[d] < 0 || s->count[d] < 0 || s->start[d] + s->count[d] > t->shape[d])
                    return sym__error(SYM_ECORRUPT, "%s: a slice of %s lies outside its shape",
                                      where, t->name);
                n *= s->count[d];
            }
            got += n;
            for (int q = 0; q < k; q++) {
                const slice_t *o = &slices[t->first + q];
                if (n && boxes_overlap(t->ndim, s->start, s->count, o->start, o->count))
                    return sym__error(SYM_ECORRUPT, "%s: two slices of %s overlap", where,
                                      t->name);
            }
        }
        if (got != want)
            return sym__error(SYM_ECORRUPT, "%s: the slices of %s hold %lld of its %lld "
                              "elements", where, t->name, (long long)got, (long long)want);
    }
    return SYM_OK;
}

/* ---- the commit (PE 0) ---- */

/* One slice of a PE's index, as the commit gathers them. */
typedef struct {
    sym_ckpt_slice_t s; /* data unused */
    int pe, order;      /* its file, and its place in the index */
    uint64_t offset;
    uint32_t crc32c;
} staged_t;

/* By tensor name, then PE, then place: each tensor's slices together. */
static int cmp_staged(const void *a, const void *b) {
    const staged_t *x = *(staged_t *const *)a, *y = *(staged_t *const *)b;
    int c = strcmp(x->s.name, y->s.name);
    if (c) return c;
    if (x->pe != y->pe) return x->pe < y->pe ? -1 : 1;
    return (x->order > y->order) - (x->order < y->order);
}

/* Parse PE pe's index in the stage directory: its slices appended to *out,
 * its file's size and CRC. */

static int read_index(int sfd, const char *sdir, int pe, staged_t **out, int *n, int *cap,
                      size_t *size, uint32_t *crc) {
    char name[32], path[PATH_MAX + 64], want[32];
    shard_name(name, sizeof name, pe, "json");
    shard_name(want, sizeof want, pe, "bin");
    snprintf(path, sizeof path, "%s/%s", sdir, name);
    void *text;
    size_t len;
    int rc = sym__ckpt_read_file_at(sfd, name, path, SIZE_MAX, MAX_INDEX, &text, &len);
    if (rc) return rc;
    sym_json_t *j = sym__json_parse(text, len, NULL, 0);
    free(text);
    int64_t p = -1;
    char fname[32];
    const sym_json_t *arr = sym__json_get(j, "slices");
    if (!j || sym__json_i64(j, "pe", &p) || p != pe || !arr || arr->type != SYM_JARR ||
        sym__ckpt_parse_file(path, j, fname, sizeof fname, size, crc) || strcmp(fname, want)) {
        sym__json_free(j);
        return sym__error(SYM_EIO, "%s is not a shard index of PE %d", path, pe);
    }
    for (const sym_json_t *e = arr->child; e; e = e->next) {
        if (*n == *cap) {
            int nc = *cap ? *cap * 2 : 256;
            staged_t *ns = realloc(*out, sizeof *ns * (size_t)nc);
            if (!ns) {
                sym__json_free(j);
                return sym__error(SYM_ENOMEM, "out of memory reading %s", path);
            }
            *out = ns;
            *cap = nc;
        }
        staged_t *st = &(*out)[*n];
        memset(st, 0, sizeof *st);
        char dt[16], crc_s[16];
        uint64_t off;
        st->s.ndim = ndim_of(sym__json_get(e, "shape"));
        if (sym__json_str(e, "name", st->s.name, sizeof st->s.name) ||
            sym__json_str(e, "dtype", dt, sizeof dt) || sym_dtype_parse(dt, &st->s.dtype) ||
            st->s.ndim < 1 || st->s.ndim > SYM_MAX_DIMS ||
            dims_parse(sym__json_get(e, "shape"), st->s.ndim, st->s.shape) ||
            dims_parse(sym__json_get(e, "start"), st->s.ndim, st->s.start) ||
            dims_parse(sym__json_get(e, "count"), st->s.ndim, st->s.count) ||
            sym__json_u64(e, "offset", &off) || sym__json_str(e, "crc32c", crc_s, sizeof crc_s)) {
            sym__json_free(j);
            return sym__error(SYM_EIO, "%s has a malformed slice entry", path);
        }
        st->offset = off;
        st->crc32c = (uint32_t)strtoul(crc_s, NULL, 16);
        st->pe = pe;
        st->order = *n;
        (*n)++;
    }
    sym__json_free(j);
    return SYM_OK;
}

int sym__ckpt_commit(const char *dir, const char *stage, int keep, const sym_ckpt_meta_t *meta,
                     int npes, const char *layout, char *out_path, size_t out_len) {
    char sdir[PATH_MAX], path[PATH_MAX + 64];
    int rc = sym__ckpt_join(sdir, sizeof sdir, dir, stage);
    if (rc) return rc;
    int sfd = open(sdir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (sfd < 0) return sym__error(SYM_EIO, "cannot open %s: %s", sdir, strerror(errno));
    staged_t *st = NULL, **order = NULL;
    tensor_t *tensors = NULL;
    slice_t *slices = NULL;
    size_t *sizes = calloc((size_t)npes, sizeof *sizes);
    uint32_t *crcs = calloc((size_t)npes, sizeof *crcs);
    sym_jbuf_t man = {0};
    int n = 0, cap = 0, nt = 0;
    if (!sizes || !crcs) {
        rc = sym__error(SYM_ENOMEM, "out of memory for the checkpoint's commit");
        goto out;
    }
    for (int p = 0; p < npes && !rc; p++) {
        rc = read_index(sfd, sdir, p, &st, &n, &cap, &sizes[p], &crcs[p]);
        char bin[32];
        struct stat sb;
        shard_name(bin, sizeof bin, p, "bin");
        if (!rc && (fstatat(sfd, bin, &sb, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(sb.st_mode) ||
                    (size_t)sb.st_size != sizes[p]))
            rc = sym__error(SYM_EIO, "%s/%s is missing or not the %zu bytes its index says", sdir,
                            bin, sizes[p]);
    }
    if (rc) goto out;
    /* Group by tensor (sorted by name, then PE and order). */
    order = malloc(sizeof *order * (size_t)(n ? n : 1));
    tensors = calloc((size_t)(n ? n : 1), sizeof *tensors);
    slices = calloc((size_t)(n ? n : 1), sizeof *slices);
    if (!order || !tensors || !slices) {
        rc = sym__error(SYM_ENOMEM, "out of memory for the checkpoint's commit");
        goto out;
    }
    for (int i = 0; i < n; i++) order[i] = &st[i];
    qsort(order, (size_t)n, sizeof *order, cmp_staged);
    for (int i = 0; i < n; i++) {
        const staged_t *e = order[i];
        tensor_t *t = nt ? &tensors[nt - 1] : NULL;
        if (!t || strcmp(t->name, e->s.name)) {
            t = &tensors[nt++];
            snprintf(t->name, sizeof t->name, "%s", e->s.name);
            t->dtype = e->s.dtype;
            t->ndim = e->s.ndim;
            memcpy(t->shape, e->s.shape, sizeof t->shape);
            t->first = i;
        } else if (t->dtype != e->s.dtype || t->ndim != e->s.ndim ||
                   memcmp(t->shape, e->s.shape, sizeof t->shape)) {
            rc = sym__error(SYM_EINVAL, "the PEs describe tensor %s with different dtypes or "
                            "global shapes: its slices cannot form one tensor", t->name);
            goto out;
        }
        t->n++;
        slice_t *s = &slices[i];
        s->tensor = nt - 1;
        s->file = e->pe;
        s->offset = e->offset;
        s->crc32c = e->crc32c;
        s->has_crc = 1;
        memcpy(s->start, e->s.start, sizeof s->start);
        memcpy(s->count, e->s.count, sizeof s->count);
    }
    /* A layout that leaves a gap or writes a byte twice is refused here, not
     * found at the next resume. */
    snprintf(path, sizeof path, "the save of step %lld (a layout whose slices do not tile "
             "its tensors)", (long long)meta->step);
    if (check_tiling(path, tensors, nt, slices)) {
        rc = SYM_EINVAL; /* a bug of the layout's description, not damage */
        goto out;
    }

    sym__ckpt_meta_json(&man, meta, SYM_CKPT_SHARDED_VERSION);
    sym__jbuf_printf(&man, "  \"layout\": {\"pes\": %d, \"desc\": ", npes);
    sym__jbuf_string(&man, layout);
    sym__jbuf_printf(&man, "},\n  \"tensors\": [");
    for (int i = 0; i < nt; i++) {
        const tensor_t *t = &tensors[i];
        sym__jbuf_printf(&man, "%s\n    {\"name\": ", i ? "," : "");
        sym__jbuf_string(&man, t->name);
        sym__jbuf_printf(&man, ", \"dtype\": \"%s\", ", sym_dtype_name(t->dtype));
        dims_json(&man, "shape", t->ndim, t->shape);
        sym__jbuf_printf(&man, ", \"slices\": [");
        for (int k = 0; k < t->n; k++) {
            const slice_t *s = &slices[t->first + k];
            char file[32];
            shard_name(file, sizeof file, s->file, "bin");
            sym__jbuf_printf(&man, "%s\n      {\"file\": \"%s\", \"offset\": %llu, ", k ? "," : "",
                             file, (unsigned long long)s->offset);
            dims_json(&man, "start", t->ndim, s->start);
            sym__jbuf_printf(&man, ", ");
            dims_json(&man, "count", t->ndim, s->count);
            sym__jbuf_printf(&man, ", \"crc32c\": \"%08x\"}", s->crc32c);
        }
        sym__jbuf_printf(&man, "]}");
    }
    sym__jbuf_printf(&man, "%s],\n  \"files\": [", nt ? "\n  " : "");
    for (int p = 0; p < npes; p++) {
        char file[32];
        shard_name(file, sizeof file, p, "bin");
        sym__jbuf_printf(&man, "%s\n    {\"name\": \"%s\", \"pe\": %d, \"size\": %zu, \"crc32c\": "
                         "\"%08x\"}", p ? "," : "", file, p, sizes[p], crcs[p]);
    }
    sym__jbuf_printf(&man, "\n  ],\n");
    sym__ckpt_seal_json(&man);
    if (man.failed) {
        rc = sym__error(SYM_ENOMEM, "out of memory writing the manifest");
        goto out;
    }
    if ((rc = sym__ckpt_join(path, sizeof path, sdir, SYM_CKPT_MANIFEST)) ||
        (rc = sym__ckpt_write_file(path, man.buf, man.len)))
        goto out;
    for (int p = 0; p < npes; p++) { /* the indexes are in the manifest now */
        char name[32];
        shard_name(name, sizeof name, p, "json");
        unlinkat(sfd, name, 0);
    }
    if ((rc = sym__ckpt_fsync_dir(sdir))) goto out;
    close(sfd);
    sfd = -1;
    rc = sym__ckpt_publish(dir, stage, meta->step, keep, NULL, 0, out_path, out_len);
    stage = NULL; /* published, or removed by publish */
out:
    if (sfd >= 0) close(sfd);
    if (rc && stage) sym__ckpt_remove(dir, stage, NULL, 0);
    sym__jbuf_free(&man);
    free(st);
    free(order);
    free(tensors);
    free(slices);
    free(sizes);
    free(crcs);
    return rc;
}

/* ---- reading ---- */

void sym_dckpt_close(sym_dckpt_t *ck) {
    if (!ck) return;
    for (int i = 0; i < ck->nfiles; i++)
        if (ck->files[i].fd >= 0) close(ck->files[i].fd);
    if (ck->dfd >= 0) close(ck->dfd);
    free(ck->tensors);
    free(ck->slices);
    free(ck->files);
    free(ck->meta.shares);
    free(ck->meta.speeds);
    free(ck);
}

static int find_file(const sym_dckpt_t *ck, const char *name) {
    for (int i = 0; i < ck->nfiles; i++)
        if (!strcmp(ck->files[i].name, name)) return i;
    return -1;
}

static int parse_files(sym_dckpt_t *ck, const char *mpath, const sym_json_t *arr) {
    if (!arr || arr->type != SYM_JARR)
        return sym__error(SYM_ECORRUPT, "%s has no file list", mpath);
    int n = ndim_of(arr);
    if (!(ck->files = calloc((size_t)(n ? n : 1), sizeof *ck->files)))
        return sym__error(SYM_ENOMEM, "out of memory for %s", mpath);
    for (const sym_json_t *f = arr->child; f; f = f->next) {
        file_t *e = &ck->files[ck->nfiles++];
        e->fd = -1;
        int64_t pe = -1;
        int rc = sym__ckpt_parse_file(mpath, f, e->name, sizeof e->name, &e->size, &e->crc32c);
        if (rc) return rc;
        if (ck->version == SYM_CKPT_SHARDED_VERSION && sym__json_i64(f, "pe", &pe))
            return sym__error(SYM_ECORRUPT, "%s: file %s names no PE", mpath, e->name);
        e->pe = (int)pe;
    }
    return SYM_OK;
}

/* Format 2's table: each tensor one whole slice of the file it names. */
static int parse_tensors_v2(sym_dckpt_t *ck, const char *mpath, const sym_json_t *arr) {
    int n = ndim_of(arr);
    ck->tensors = calloc((size_t)(n ? n : 1), sizeof *ck->tensors);
    ck->slices = calloc((size_t)(n ? n : 1), sizeof *ck->slices);
    if (!ck->tensors || !ck->slices) return sym__error(SYM_ENOMEM, "out of memory for %s", mpath);
    for (const sym_json_t *e = arr ? arr->child : NULL; e; e = e->next) {
        tensor_t *t = &ck->tensors[ck->ntensors];
        slice_t *s = &ck->slices[ck->nslices];
        char dt[16], file[64];
        t->ndim = ndim_of(sym__json_get(e, "shape"));
        if (sym__json_str(e, "name", t->name, sizeof t->name) ||
            sym__json_str(e, "file", file, sizeof file) ||
            sym__json_str(e, "dtype", dt, sizeof dt) || sym_dtype_parse(dt, &t->dtype) ||
            t->ndim < 1 || t->ndim > SYM_MAX_DIMS ||
            dims_parse(sym__json_get(e, "shape"), t->ndim, t->shape) ||
            sym__json_u64(e, "offset", &s->offset) || (s->file = find_file(ck, file)) < 0)
            return sym__error(SYM_ECORRUPT, "%s has a malformed tensor entry", mpath);
        memcpy(s->count, t->shape, sizeof s->count);
        s->tensor = ck->ntensors++;
        t->first = ck->nslices++;
        t->n = 1;
    }
    return SYM_OK;
}

static int parse_tensors_v3(sym_dckpt_t *ck, const char *mpath, const sym_json_t *arr) {
    int n = ndim_of(arr), ns = 0;
    for (const sym_json_t *e = arr ? arr->child : NULL; e; e = e->next)
        ns += ndim_of(sym__json_get(e, "slices"));
    ck->tensors = calloc((size_t)(n ? n : 1), sizeof *ck->tensors);
    ck->slices = calloc((size_t)(ns ? ns : 1), sizeof *ck->slices);
    if (!ck->tensors || !ck->slices) return sym__error(SYM_ENOMEM, "out of memory for %s", mpath);
    for (const sym_json_t *e = arr ? arr->child : NULL; e; e = e->next) {
        tensor_t *t = &ck->tensors[ck->ntensors];
        char dt[16];
        t->ndim = ndim_of(sym__json_get(e, "shape"));
        const sym_json_t *sl = sym__json_get(e, "slices");
        if (sym__json_str(e, "name", t->name, sizeof t->name) ||
            sym__json_str(e, "dtype", dt, sizeof dt) || sym_dtype_parse(dt, &t->dtype) ||
            t->ndim < 1 || t->ndim > SYM_MAX_DIMS ||
            dims_parse(sym__json_get(e, "shape"), t->ndim, t->shape) || !sl ||
            sl->type != SYM_JARR)
            return sym__error(SYM_ECORRUPT, "%s has a malformed tensor entry", mpath);
        t->first = ck->nslices;
        for (const sym_json_t *q = sl->child; q; q = q->next) {
            slice_t *s = &ck->slices[ck->nslices];
            char file[64], crc[16];
            if (sym__json_str(q, "file", file, sizeof file) || (s->file = find_file(ck, file)) < 0 ||
                sym__json_u64(q, "offset", &s->offset) ||
                dims_parse(sym__json_get(q, "start"), t->ndim, s->start) ||
                dims_parse(sym__json_get(q, "count"), t->ndim, s->count) ||
                sym__json_str(q, "crc32c", crc, sizeof crc))
                return sym__error(SYM_ECORRUPT, "%s: tensor %s has a malformed slice", mpath,
                                  t->name);
            s->crc32c = (uint32_t)strtoul(crc, NULL, 16);
            s->has_crc = 1;
            s->tensor = ck->ntensors;
            ck->nslices++;
            t->n++;
        }
        ck->ntensors++;
    }
    return SYM_OK;
}

static int open_ckpt(const char *path, int follow, sym_dckpt_t **out) {
    *out = NULL;
    sym_dckpt_t *ck = calloc(1, sizeof *ck);
    if (!ck) return sym__error(SYM_ENOMEM, "out of memory opening %s", path);
    snprintf(ck->path, sizeof ck->path, "%s", path);
    ck->dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | (follow ? 0 : O_NOFOLLOW));
    int rc = SYM_OK;
    if (ck->dfd < 0) {
        struct stat st;
        if (errno == ENOENT)
            rc = sym__error(SYM_ENOENT, "%s does not exist", path);
        else if ((errno == ELOOP || errno == ENOTDIR) && lstat(path, &st) == 0)
            rc = sym__error(SYM_ECORRUPT, "%s is %s, not a checkpoint directory", path,
                            S_ISLNK(st.st_mode) ? "a symbolic link" : "not a directory");
        else
            rc = sym__error(SYM_EIO, "cannot open %s: %s", path, strerror(errno));
        sym_dckpt_close(ck);
        return rc;
    }
    char mpath[PATH_MAX];
    snprintf(mpath, sizeof mpath, "%s/%s", path, SYM_CKPT_MANIFEST);
    void *text;
    size_t len;
    rc = sym__ckpt_read_file_at(ck->dfd, SYM_CKPT_MANIFEST, mpath, SIZE_MAX, (size_t)256 << 20,
                                &text, &len);
    if (rc == SYM_ENOENT) rc = sym__error(SYM_ECORRUPT, "%s has no %s", path, SYM_CKPT_MANIFEST);
    if (rc) {
        sym_dckpt_close(ck);
        return rc;
    }
    char err[128];
    sym_json_t *j = sym__json_parse(text, len, err, sizeof err);
    if (!j) rc = sym__error(SYM_ECORRUPT, "%s is not valid JSON (%s)", mpath, err);
    if (!rc) rc = sym__ckpt_parse_meta(mpath, text, len, j, &ck->meta, &ck->version);
    free(text);
    if (!rc) rc = parse_files(ck, mpath, sym__json_get(j, "files"));
    if (!rc && ck->version == SYM_CKPT_SHARDED_VERSION) {
        const sym_json_t *lay = sym__json_get(j, "layout");
        int64_t pes = 0;
        if (sym__json_i64(lay, "pes", &pes) || pes != ck->meta.world_size ||
            pes != ck->nfiles || sym__json_str(lay, "desc", ck->layout, sizeof ck->layout))
            rc = sym__error(SYM_ECORRUPT, "%s: its layout does not name one file per PE of the "
                            "%d that wrote it", mpath, ck->meta.world_size);
        if (!rc) rc = parse_tensors_v3(ck, mpath, sym__json_get(j, "tensors"));
    } else if (!rc) {
        snprintf(ck->layout, sizeof ck->layout, "single writer (PE 0 of %d)", ck->meta.world_size);
        rc = parse_tensors_v2(ck, mpath, sym__json_get(j, "tensors"));
    }
    sym__json_free(j);
    /* every slice inside its file */
    for (int i = 0; !rc && i < ck->nslices; i++) {
        const slice_t *s = &ck->slices[i];
        const tensor_t *t = &ck->tensors[s->tensor];
        size_t b = slice_bytes(t, s), fsz = ck->files[s->file].size;
        if (s->offset > fsz || b > fsz - s->offset)
            rc = sym__error(SYM_ECORRUPT, "%s: a slice of %s does not lie inside %s", mpath,
                            t->name, ck->files[s->file].name);
    }
    if (!rc) rc = check_tiling(mpath, ck->tensors, ck->ntensors, ck->slices);
    if (rc) {
        sym_dckpt_close(ck);
        return rc;
    }
    *out = ck;
    return SYM_OK;
}

int sym_dckpt_open(const char *path, sym_dckpt_t **out) { return open_ckpt(path, 1, out); }

/* File i opened (once): a regular file of the manifest's size. */
static int file_fd(sym_dckpt_t *ck, int i) {
    file_t *f = &ck->files[i];
    if (f->fd >= 0) return SYM_OK;
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s", ck->path, f->name);
    int fd = openat(ck->dfd, f->name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) {
        if (errno == ENOENT)
            return sym__error(SYM_ECORRUPT, "%s is missing", path);
        if (errno == ELOOP)
            return sym__error(SYM_ECORRUPT, "%s is a symbolic link, not a checkpoint file", path);
        return sym__error(SYM_EIO, "cannot open %s: %s", path, strerror(errno));
    }
    struct stat st;
    int rc = SYM_OK;
    if (fstat(fd, &st) < 0)
        rc = sym__error(SYM_EIO, "cannot stat %s: %s", path, strerror(errno));
    else if (!S_ISREG(st.st_mode))
        rc = sym__error(SYM_ECORRUPT, "%s is not a regular file", path);
    else if ((uintmax_t)st.st_size != f->size)
        rc = sym__error(SYM_ECORRUPT, "%s is %lld bytes, the manifest says %zu", path,
                        (long long)st.st_size, f->size);
    if (rc) {
        close(fd);
        return rc;
    }
    f->fd = fd;
    return SYM_OK;
}

static int pread_all(sym_dckpt_t *ck, int i, void *buf, size_t len, uint64_t off) {
    char *p = buf;
    while (len) {
        ssize_t n = pread(ck->files[i].fd, p, len, (off_t)off);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0)
            return sym__error(SYM_EIO, "cannot read %s/%s: %s", ck->path, ck->files[i].name,
                              n < 0 ? strerror(errno) : "it shrank while being read");
        p += n;
        len -= (size_t)n;
        off += (uint64_t)n;
    }
    return SYM_OK;
}

/* Slice s read whole into a malloc'd buffer and checked against its CRC32C. */
static int read_slice(sym_dckpt_t *ck, const slice_t *s, char **out) {
    const tensor_t *t = &ck->tensors[s->tensor];
    size_t bytes = slice_bytes(t, s);
    int rc = file_fd(ck, s->file);
    if (rc) return rc;
    char *buf = malloc(bytes ? bytes : 1);
    if (!buf) return sym__error(SYM_ENOMEM, "out of memory reading %s", t->name);
    if ((rc = pread_all(ck, s->file, buf, bytes, s->offset))) {
        free(buf);
        return rc;
    }
    uint32_t crc = sym__crc32c(0, buf, bytes);
    if (s->has_crc && crc != s->crc32c) {
        free(buf);
        return sym__error(SYM_ECORRUPT, "%s/%s is damaged: its slice of %s (at byte %llu) has "
                          "CRC32C %08x, the manifest says %08x",
                          ck->path, ck->files[s->file].name, t->name,
                          (unsigned long long)s->offset, crc, s->crc32c);
    }
    *out = buf;
    return SYM_OK;
}

/* Copy the overlap of box (s0, sn) [held in src, row-major over sn] and box
 * (w0, wn) [dst, row-major over wn]: one run of the last dimension at a time. */
static int64_t copy_overlap(int ndim, size_t esz, const int64_t *s0, const int64_t *sn,
                            const char *src, const int64_t *w0, const int64_t *wn, char *dst) {
    int64_t lo[SYM_MAX_DIMS], hi[SYM_MAX_DIMS], idx[SYM_MAX_DIMS];
    for (int d = 0; d < ndim; d++) {
        lo[d] = s0[d] > w0[d] ? s0[d] : w0[d];
        hi[d] = s0[d] + sn[d] < w0[d] + wn[d] ? s0[d] + sn[d] : w0[d] + wn[d];
        if (hi[d] <= lo[d]) return 0;
        idx[d] = lo[d];
    }
    int last = ndim - 1;
    size_t run = (size_t)(hi[last] - lo[last]) * esz;
    int64_t copied = 0;
    for (;;) {
        size_t so = 0, wo = 0;
        for (int d = 0; d < ndim; d++) {
            so = so * (size_t)sn[d] + (size_t)(idx[d] - s0[d]);
            wo = wo * (size_t)wn[d] + (size_t)(idx[d] - w0[d]);
        }
        memcpy(dst + wo * esz, src + so * esz, run);
        copied += hi[last] - lo[last];
        int d = last - 1;
        while (d >= 0 && ++idx[d] == hi[d]) {
            idx[d] = lo[d];
            d--;
        }
        if (d < 0) break;
    }
    return copied;
}

static const tensor_t *find_tensor(const sym_dckpt_t *ck, const char *name) {
    for (int i = 0; i < ck->ntensors; i++)
        if (!strcmp(ck->tensors[i].name, name)) return &ck->tensors[i];
    return NULL;
}

int sym_dckpt_read(sym_dckpt_t *ck, sym_ckpt_slice_t *want) {
    const tensor_t *t = find_tensor(ck, want->name);
    if (!t) return sym__error(SYM_EMISMATCH, "%s holds no tensor %s", ck->path, want->name);
    int same = t->dtype == want->dtype && t->ndim == want->ndim;
    for (int d = 0; same && d < t->ndim; d++) same = t->shape[d] == want->shape[d];
    if (!same) {
        char a[96] = "", b[96] = "";
        for (int d = 0; d < t->ndim; d++)
            snprintf(a + strlen(a), sizeof a - strlen(a), "%s%lld", d ? "x" : "", (long long)t->shape[d]);
        for (int d = 0; d < want->ndim && d < SYM_MAX_DIMS; d++)
            snprintf(b + strlen(b), sizeof b - strlen(b), "%s%lld", d ? "x" : "",
                     (long long)want->shape[d]);
        return sym__error(SYM_EMISMATCH, "%s holds %s as %s %s, this run's is %s %s", ck->path,
                          t->name, a, sym_dtype_name(t->dtype), b, sym_dtype_name(want->dtype));
    }
    for (int d = 0; d < t->ndim; d++)
        if (want->start[d] < 0 || want->count[d] < 0 || want->start[d] + want->count[d] > t->shape[d])
            return sym__error(SYM_EINVAL, "the slice of %s asked for lies outside its shape",
                              t->name);
    int64_t need = sym_ckpt_slice_elems(want), got = 0;
    size_t esz = sym_dtype_size(t->dtype);
    for (int k = 0; k < t->n && got < need; k++) {
        const slice_t *s = &ck->slices[t->first + k];
        if (!boxes_overlap(t->ndim, s->start, s->count, want->start, want->count)) continue;
        char *buf;
        int rc = read_slice(ck, s, &buf);
        if (rc) return rc;
        got += copy_overlap(t->ndim, esz, s->start, s->count, buf, want->start, want->count,
                            want->data);
        free(buf);
    }
    if (got != need)
        return sym__error(SYM_ECORRUPT, "%s: the slices of %s cover %lld of the %lld elements "
                          "asked for", ck->path, t->name, (long long)got, (long long)need);
    return SYM_OK;
}

int sym_dckpt_verify_file(sym_dckpt_t *ck, int i) {
    int rc = file_fd(ck, i);
    if (rc) return rc;
    const file_t *f = &ck->files[i];
    size_t chunk = (size_t)8 << 20, done = 0;
    char *buf = malloc(chunk);
    if (!buf) return sym__error(SYM_ENOMEM, "out of memory verifying %s", f->name);
    uint32_t crc = 0;
    while (!rc && done < f->size) {
        size_t n = f->size - done < chunk ? f->size - done : chunk;
        if (!(rc = pread_all(ck, i, buf, n, done))) crc = sym__crc32c(crc, buf, n);
        done += n;
    }
    free(buf);
    if (!rc && crc != f->crc32c)
        rc = sym__error(SYM_ECORRUPT, "%s/%s is damaged: it has CRC32C %08x, the manifest says "
                        "%08x", ck->path, f->name, crc, f->crc32c);
    return rc;
}

int sym_dckpt_verify_slices(sym_dckpt_t *ck) {
    int rc = check_tiling(ck->path, ck->tensors, ck->ntensors, ck->slices);
    for (int i = 0; !rc && i < ck->nslices; i++) {
        if (!ck->slices[i].has_crc) continue;
        char *buf;
        if (!(rc = read_slice(ck, &ck->slices[i], &buf))) free(buf);
    }
    return rc;
}

const char *sym_dckpt_path(const sym_dckpt_t *ck) { return ck->path; }
const sym_ckpt_meta_t *sym_dckpt_meta(const sym_dckpt_t *ck) { return &ck->meta; }
int sym_dckpt_version(const sym_dckpt_t *ck) { return ck->version; }
const char *sym_dckpt_layout(const sym_dckpt_t *ck) { return ck->layout; }
int sym_dckpt_num_tensors(const sym_dckpt_t *ck) { return ck->ntensors; }
int sym_dckpt_num_files(const sym_dckpt_t *ck) { return ck->nfiles; }

int sym_dckpt_tensor(const sym_dckpt_t *ck, int i, sym_ckpt_slice_t *out, int *nslices) {
    if (i < 0 || i >= ck->ntensors) return sym__error(SYM_EINVAL, "no tensor %d", i);
    const tensor_t *t = &ck->tensors[i];
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "%s", t->name);
    out->dtype = t->dtype;
    out->ndim = t->ndim;
    memcpy(out->shape, t->shape, sizeof out->shape);
    sym_ckpt_slice_whole(out);
    if (nslices) *nslices = t->n;
    return SYM_OK;
}

void sym_dckpt_file(const sym_dckpt_t *ck, int i, const char **name, size_t *size,
                    uint32_t *crc32c, int *pe) {
    const file_t *f = &ck->files[i];
    if (name) *name = f->name;
    if (size) *size = f->size;
    if (crc32c) *crc32c = f->crc32c;
    if (pe) *pe = ck->version == SYM_CKPT_SHARDED_VERSION ? f->pe : -1;
}

/* A step-* entry found by scanning: a symbolic link there is damage. */
int sym__dckpt_open_scanned(const char *path, sym_dckpt_t **out) { return open_ckpt(path, 0, out); }

int sym__dckpt_check(const char *path, int64_t step, int part, int nparts, sym_dckpt_t **out) {
    int rc = open_ckpt(path, 0, out);
    if (!rc && (*out)->meta.step != step)
        rc = sym__error(SYM_ECORRUPT, "%s holds step %lld", path, (long long)(*out)->meta.step);
    for (int f = part; !rc && f < (*out)->nfiles; f += nparts) rc = sym_dckpt_verify_file(*out, f);
    if (rc) {
        sym_dckpt_close(*out);
        *out = NULL;
    }
    return rc;
}

int sym_dckpt_open_newest(const char *dir, sym_dckpt_t **out) {
    *out = NULL;
    int64_t *steps;
    int n, bad = 0;
    int rc = sym__ckpt_list_steps(dir, &steps, &n);
    if (rc == SYM_ENOENT) return sym__error(SYM_ENOENT, "%s does not exist", dir);
    if (rc) return rc;
    char first[1536] = "";
    rc = SYM_ENOENT;
    for (int i = 0; i < n; i++) {
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/step-%08lld", dir, (long long)steps[i]);
        rc = sym__dckpt_check(path, steps[i], 0, 1, out);
        if (rc != SYM_ECORRUPT && rc != SYM_ENOENT) break; /* good, or unreadable: stop */
        if (rc == SYM_ECORRUPT && !bad++) snprintf(first, sizeof first, "%s", sym_last_error());
    }
    free(steps);
    if (rc == SYM_OK || (rc != SYM_ECORRUPT && rc != SYM_ENOENT)) return rc;
    if (bad)
        return sym__error(SYM_ECORRUPT, "%s holds no usable checkpoint (%d damaged; the newest: %s)",
                          dir, bad, first);
    return sym__error(SYM_ENOENT, "%s holds no checkpoint", dir);
}

int sym_ckpt_format(const char *dir) {
    int64_t *steps;
    int n, version = 0;
    if (sym__ckpt_list_steps(dir, &steps, &n)) return 0;
    char said[1024]; /* looking says nothing: the caller's last error stays */
    snprintf(said, sizeof said, "%s", sym_last_error());
    for (int i = 0; i < n && !version; i++) {
        char path[PATH_MAX];
        sym_dckpt_t *ck;
        snprintf(path, sizeof path, "%s/step-%08lld", dir, (long long)steps[i]);
        if (open_ckpt(path, 0, &ck) == SYM_OK) {
            version = ck->version;
            sym_dckpt_close(ck);
        }
    }
    free(steps);
    sym__error(SYM_OK, "%s", said);
    return version;
}
