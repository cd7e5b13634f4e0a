/*
 * tokenize.c — text to token shards at the byte level (vocabulary 256), and
 * tokens back to text: what `symtrain tokenize` and `make data` run, so a
 * small GPT can train on any text without a BPE vocabulary.
 *
 * The files are read whole, in the order given, joined with one '\n' between
 * them. The last val_fraction of the bytes, moved to the nearest line start,
 * becomes DIR/val_000000.bin; the rest DIR/train_000000.bin, train_000001.bin,
 * ... of at most shard_tokens tokens each (six digits, so that sorting by name
 * is sorting by number). Shards a previous run left in DIR and this one did
 * not rewrite (train_ past the last one written, val_ past 000000) are
 * removed, or a glob of DIR would mix two corpora.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <symtrain/data.h>

#include "internal.h"

#define MAX_SHARDS 1000000 /* six digits of shard number */

/* ---- reading the text ---- */

typedef struct {
    char *buf;
    size_t len, cap;
} text_t;

/* Make room for `more` bytes; 0, or -1 when that overflows or memory runs out. */
static int reserve(text_t *t, size_t more) {
    if (more > SIZE_MAX - t->len - 1) return -1;
    size_t need = t->len + more + 1;
    if (need <= t->cap) return 0;
    size_t cap = t->cap ? t->cap : 1 << 16;
    while (cap < need) cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    char *b = realloc(t->buf, cap);
    if (!b) return -1;
    t->buf = b;
    t->cap = cap;
    return 0;
}

/* Append the whole of `path` to t (its size need not be known: pipes work). */
static int read_text(const char *path, text_t *t) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return sym__error(errno == ENOENT ? SYM_ENOENT : SYM_EIO, "cannot read %s: %s", path,
                          strerror(errno));
    struct stat st;
    int rc = SYM_OK;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 &&
        (uintmax_t)st.st_size < SIZE_MAX && reserve(t, (size_t)st.st_size) < 0) {
        rc = sym__error(SYM_ENOMEM, "out of memory reading %s (%lld bytes after %zu)", path,
                        (long long)st.st_size, t->len);
        goto out;
    }
    for (;;) {
        if (t->cap - t->len < 2 && reserve(t, 1 << 16) < 0) {
            rc =
                sym__error(SYM_ENOMEM, "out of memory reading %s (%zu bytes so far)", path, t->len);
            goto out;
        }
        ssize_t n = read(fd, t->buf + t->len, t->cap - t->len - 1);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            rc = sym__error(SYM_EIO, "cannot read %s: %s", path, strerror(errno));
            goto out;
        }
        if (n == 0) break;
        t->len += (size_t)n;
    }
out:
    close(fd);
    return rc;
}

/* ---- the split ---- */

/* Where validation starts: the line start nearest to len - round(len * f),
 * strictly inside (0, len), the earlier one on a tie; 0 when there is none. */
static size_t split_point(const char *s, size_t len, double f) {
    if (len < 2) return 0;
    double v = round((double)len * f);
    size_t cut = v < 1 ? len - 1 : v >= (double)len ? 1 : len - (size_t)v;
    size_t back = cut, fwd = cut;
    while (back > 0 && s[back - 1] != '\n') back--;
    while (fwd < len && s[fwd - 1] != '\n') fwd++;
    if (back > 0 && (fwd == len || cut - back <= fwd - cut)) return back;
    return fwd < len ? fwd : 0;
}

/* ---- writing ---- */

/* mkdir -p dir. */
static int make_dir(const char *dir) {
    char tmp[PATH_MAX];
    if (snprintf(tmp, sizeof tmp, "%s", dir) >= (int)sizeof tmp)
        return sym__error(SYM_EINVAL, "output directory %.200s... is too long a name", dir);
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            if (mkdir(tmp, 0755) < 0 && errno != EEXIST)
                return sym__error(SYM_EIO, "cannot create %s: %s", tmp, strerror(errno));
            *p = '/';
        }
    if (mkdir(tmp, 0755) < 0 && errno != EEXIST)
        return sym__error(SYM_EIO, "cannot create %s: %s", tmp, strerror(errno));
    struct stat st;
    if (stat(tmp, &st) < 0 || !S_ISDIR(st.st_mode))
        return sym__error(SYM_EIO, "cannot write shards into %s: not a directory", tmp);
    return SYM_OK;
}

/* Write bytes s[0..n) as the shard dir/prefix_NNNNNN.bin, through buf (n). */
static int write_part(const char *dir, const char *prefix, int k, const char *s, size_t n,
                      uint16_t *buf) {
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/%s_%06d.bin", dir, prefix, k) >= (int)sizeof path)
        return sym__error(SYM_EINVAL, "output directory %.200s... is too long a name", dir);
    for (size_t i = 0; i < n; i++) buf[i] = (unsigned char)s[i];
    return sym_shard_write(path, buf, (int64_t)n);
}

/* Is `name` prefix_NNNNNN.bin with NNNNNN >= keep? */
static int is_stale(const char *name, const char *prefix, long keep) {
    size_t p = strlen(prefix);
    if (strncmp(name, prefix, p) || name[p] != '_' || strlen(name) != p + 1 + 6 + 4 ||
        strcmp(name + p + 7, ".bin"))
        return 0;
    long k = 0;
    for (int i = 0; i < 6; i++) {
        char c = name[p + 1 + i];
        if (c < '0' || c > '9') return 0;
        k = k * 10 + (c - '0');
    }
    return k >= keep;
}

/* Remove the shards of an earlier run: train_ numbered >= ntrain_shards, val_ >= 1. */
static int remove_stale(const char *dir, int ntrain_shards) {
    DIR *d = opendir(dir);
    if (!d) return sym__error(SYM_EIO, "cannot list %s: %s", dir, strerror(errno));
    int rc = SYM_OK;
    struct dirent *e;
    while (!rc && (e = readdir(d))) {
        if (!is_stale(e->d_name, "train", ntrain_shards) && !is_stale(e->d_name, "val", 1))
            continue;
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (unlink(path) < 0 && errno != ENOENT)
            rc = sym__error(SYM_EIO,
                            "cannot remove %s, a shard of an earlier tokenize run that "
                            "would mix into this one: %s",
                            path, strerror(errno));
    }
    closedir(d);
    return rc;
}

/* ---- text to tokens ---- */

int sym_tokenize_bytes(const char *const *files, int nfiles, const char *dir, double val_fraction,
                       int64_t shard_tokens, int64_t *ntrain, int64_t *nval) {
    if (ntrain) *ntrain = 0;
    if (nval) *nval = 0;
    if (!files || nfiles < 1)
        return sym__error(SYM_EINVAL, "tokenize: name at least one text file");
    if (!dir || !*dir) return sym__error(SYM_EINVAL, "tokenize: name the output directory");
    if (!(val_fraction > 0 && val_fraction < 1))
        return sym__error(SYM_EINVAL,
                          "tokenize: the validation fraction must be above 0 and below 1 (got %g)",
                          val_fraction);
    if (shard_tokens < 1 || shard_tokens > INT32_MAX)
        return sym__error(SYM_EINVAL, "tokenize: tokens per shard must be from 1 to %ld (got %lld)",
                          (long)INT32_MAX, (long long)shard_tokens);
    text_t t = {0};
    uint16_t *buf = NULL;
    int rc = SYM_OK;
    for (int i = 0; i < nfiles; i++) {
        if (i > 0) {
            if (reserve(&t, 1) < 0) {
                rc = sym__error(SYM_ENOMEM, "out of memory reading %s", files[i]);
                goto out;
            }
            t.buf[t.len++] = '\n';
        }
        if ((rc = read_text(files[i], &t))) goto out;
    }
    size_t cut = split_point(t.buf, t.len, val_fraction);
    if (cut == 0) {
        rc = sym__error(SYM_EINVAL,
                        "tokenize: the text (%zu bytes from %d file%s, starting with %s) is too "
                        "short to split into training and validation parts at a line start; give "
                        "more text, with line breaks",
                        t.len, nfiles, nfiles == 1 ? "" : "s", files[0]);
        goto out;
    }
    size_t nv = t.len - cut;
    size_t per = (size_t)shard_tokens;
    size_t nshards = cut / per + (cut % per != 0);
    if (nshards > MAX_SHARDS) {
        rc = sym__error(SYM_EINVAL,
                        "tokenize: %zu training tokens in shards of %lld make more "
                        "than %d shards; raise the tokens per shard",
                        cut, (long long)shard_tokens, MAX_SHARDS);
        goto out;
    }
    size_t most = per < cut ? per : cut;
    most = most > nv ? most : nv;
    if (nv > INT32_MAX) {
        rc = sym__error(SYM_EINVAL,
                        "tokenize: the validation part (%zu tokens) does not fit one "
                        "shard; lower the validation fraction",
                        nv);
        goto out;
    }
    buf = malloc(most * sizeof *buf);
    if (!buf) {
        rc = sym__error(SYM_ENOMEM, "out of memory converting %zu tokens", most);
        goto out;
    }
    if ((rc = make_dir(dir))) goto out;
    for (size_t k = 0, off = 0; off < cut; k++, off += per) {
        size_t n = cut - off < per ? cut - off : per;
        if ((rc = write_part(dir, "train", (int)k, t.buf + off, n, buf))) goto out;
    }
    if ((rc = write_part(dir, "val", 0, t.buf + cut, nv, buf))) goto out;
    if ((rc = remove_stale(dir, (int)nshards))) goto out;
    if (ntrain) *ntrain = (int64_t)cut;
    if (nval) *nval = (int64_t)nv;
out:
    free(buf);
    free(t.buf);
    return rc;
}

/* ---- tokens to text ---- */

int sym_detokenize_one(int32_t tok, char *out) {
    if (tok >= 0 && tok < 256) {
        out[0] = (char)(unsigned char)tok;
        return 1;
    }
    char tmp[SYM_TOKEN_TEXT_MAX + 1];
    int w = snprintf(tmp, sizeof tmp, "<|%ld|>", (long)tok);
    memcpy(out, tmp, (size_t)w);
    return w;
}

char *sym_detokenize_bytes(const int32_t *tok, int64_t n) {
    if (n < 0 || (n > 0 && !tok)) return NULL;
    char tmp[SYM_TOKEN_TEXT_MAX];
    size_t len = 0;
    for (int64_t i = 0; i < n; i++) {
        size_t w = (size_t)sym_detokenize_one(tok[i], tmp);
        if (len > SIZE_MAX - 1 - w) return NULL;
        len += w;
    }
    char *s = malloc(len + 1), *p = s;
    if (!s) return NULL;
    for (int64_t i = 0; i < n; i++) p += sym_detokenize_one(tok[i], p);
    *p = '\0';
    return s;
}
