/*
 * tokens.c — token shards in llm.c's format: opening a set of them (glob,
 * memory-map, validate), cutting them into windows of seq + 1 tokens, and
 * writing one shard so that no reader ever sees half of it.
 *
 * A shard is a header of 256 little-endian int32 (magic 20240520, version 1,
 * the token count, then zeros) and that many little-endian uint16 tokens, so
 * its length is exactly 1024 + 2 * count bytes. Any other length means the
 * file was cut short or has something after it, and it is refused with its
 * name, what is wrong, and how to make it again. Every size is checked in
 * 64-bit arithmetic against the file's real length before a token is touched:
 * a crafted header can neither make us read past the mapping nor allocate
 * anything (tokens are read in place, through the mapping).
 *
 * A file that shrinks after it was opened and validated would raise SIGBUS
 * when its lost pages are read; shards are written by rename (below), so a
 * reader never sees that from our own writer.
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <symtrain/data.h>

#include "internal.h"

/* Tokens are read in place from the mapping (and written from memory as they
 * are), which is the file's byte order only on a little-endian host. */
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
               "token shards are little-endian uint16, read in place: a big-endian host needs a "
               "byte-swapping copy in tokens.c");

#define HEADER_BYTES ((int64_t)SYM_SHARD_HEADER_INTS * 4)
#define REMAKE "re-create it with `symtrain tokenize FILES -o DIR`"
#define HOW_TO_MAKE                                                                                \
    "make shards with `make data` (the Shakespeare corpus) or `symtrain tokenize FILES -o DIR`"

/* ---- little-endian integers ---- */

static int32_t get_le32(const unsigned char *b) {
    return (int32_t)((uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
                     (uint32_t)b[3] << 24);
}

static void put_le32(unsigned char *b, uint32_t v) {
    b[0] = (unsigned char)v, b[1] = (unsigned char)(v >> 8);
    b[2] = (unsigned char)(v >> 16), b[3] = (unsigned char)(v >> 24);
}

/* ---- opening one shard ---- */

/* Read exactly len bytes at offset 0; 0, or -1 with errno set (EIO at EOF). */
static int pread_all(int fd, void *buf, size_t len) {
    size_t got = 0;
    while (got < len) {
        ssize_t n = pread(fd, (char *)buf + got, len - got, (off_t)got);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return -1;
        if (n == 0) {
            errno = EIO;
            return -1;
        }
        got += (size_t)n;
    }
    return 0;
}

/* Open, validate and map the shard at `path` into *sh (tokens not yet scanned). */
static int open_shard(const char *path, sym_shard_t *sh) {
    memset(sh, 0, sizeof *sh);
    if (snprintf(sh->path, sizeof sh->path, "%s", path) >= (int)sizeof sh->path)
        return sym__error(SYM_EINVAL, "token shard path %.200s... is longer than %zu bytes", path,
                          sizeof sh->path - 1);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return sym__error(SYM_EIO, "cannot open token shard %s: %s", path, strerror(errno));
    int rc = SYM_OK;
    struct stat st;
    unsigned char hdr[HEADER_BYTES];
    if (fstat(fd, &st) < 0) {
        rc = sym__error(SYM_EIO, "cannot stat token shard %s: %s", path, strerror(errno));
        goto out;
    }
    if (!S_ISREG(st.st_mode)) {
        rc = sym__error(SYM_EIO, "cannot read token shard %s: not a regular file", path);
        goto out;
    }
    if (st.st_size < HEADER_BYTES) {
        rc = sym__error(SYM_ECORRUPT,
                        "%s is %lld bytes, too short for the %lld-byte header of a token shard; "
                        "%s",
                        path, (long long)st.st_size, (long long)HEADER_BYTES, REMAKE);
        goto out;
    }
    if ((uintmax_t)st.st_size > SIZE_MAX) {
        rc = sym__error(SYM_EINVAL, "token shard %s (%lld bytes) is too large to map here", path,
                        (long long)st.st_size);
        goto out;
    }
    if (pread_all(fd, hdr, sizeof hdr) < 0) {
        rc = sym__error(SYM_EIO, "cannot read the header of token shard %s: %s", path,
                        strerror(errno));
        goto out;
    }
    int32_t magic = get_le32(hdr), version = get_le32(hdr + 4), count = get_le32(hdr + 8);
    if (magic != SYM_SHARD_MAGIC) {
        rc = sym__error(SYM_ECORRUPT,
                        "%s is not a token shard (magic %ld in its header, expected %d); %s", path,
                        (long)magic, SYM_SHARD_MAGIC, REMAKE);
        goto out;
    }
    if (version != SYM_SHARD_VERSION) {
        rc = sym__error(SYM_ECORRUPT,
                        "%s is a version %ld token shard; this build reads version %d; %s", path,
                        (long)version, SYM_SHARD_VERSION, REMAKE);
        goto out;
    }
    if (count < 0) {
        rc = sym__error(SYM_ECORRUPT, "%s: its header gives a negative token count (%ld); %s", path,
                        (long)count, REMAKE);
        goto out;
    }
    /* 0 <= count <= INT32_MAX, so the sum is below 2^33: no overflow in int64. */
    int64_t want = HEADER_BYTES + 2 * (int64_t)count;
    int64_t have = (int64_t)st.st_size;
    if (have < want) {
        rc = sym__error(SYM_ECORRUPT,
                        "%s is truncated or corrupt: its header says %ld tokens (%lld bytes after "
                        "the header) but only %lld bytes follow it; %s",
                        path, (long)count, (long long)(want - HEADER_BYTES),
                        (long long)(have - HEADER_BYTES), REMAKE);
        goto out;
    }
    if (have > want) {
        rc = sym__error(SYM_ECORRUPT,
                        "%s has %lld extra byte%s after the %ld tokens its header counts; %s", path,
                        (long long)(have - want), have - want == 1 ? "" : "s", (long)count, REMAKE);
        goto out;
    }
    size_t len = (size_t)have;
    void *map = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED) {
        rc = sym__error(SYM_EIO, "cannot map token shard %s (%zu bytes): %s", path, len,
                        strerror(errno));
        goto out;
    }
    sh->map = map;
    sh->map_len = len;
    sh->tok = (const uint16_t *)((const unsigned char *)map + HEADER_BYTES);
    sh->ntok = count;
out:
    close(fd);
    return rc;
}

/* ---- the set ---- */

/* The largest token of tok[0..n) (0 when n == 0). */
static int scan_max(const uint16_t *tok, int64_t n) {
    uint16_t m = 0;
    for (int64_t i = 0; i < n; i++) m = tok[i] > m ? tok[i] : m;
    return m;
}

/* Windows, prefix sums, totals and the largest token of an opened set; SYM_EINVAL
 * when no shard holds one window (what names the set in the message). */
static int finish_set(sym_tokens_t *ts, const char *what) {
    int64_t largest = 0;
    int at = 0;
    ts->ntokens = ts->n = 0;
    ts->max_token = 0;
    for (int s = 0; s < ts->nshards; s++) {
        sym_shard_t *sh = &ts->shards[s];
        sh->first = ts->n;
        sh->nsamples = sh->ntok > 0 ? (sh->ntok - 1) / ts->seq : 0;
        ts->n += sh->nsamples;
        ts->ntokens += sh->ntok;
        int m = scan_max(sh->tok, sh->ntok);
        if (m > ts->max_token) ts->max_token = m;
        if (sh->ntok > largest) largest = sh->ntok, at = s;
    }
    if (ts->n == 0)
        return sym__error(SYM_EINVAL,
                          "%s: no shard holds the %lld tokens one window of sequence length %d "
                          "needs (the largest, %s, holds %lld); lower the sequence length or "
                          "tokenize more text",
                          what, (long long)ts->seq + 1, ts->seq,
                          ts->shards[at].path[0] ? ts->shards[at].path : "in memory",
                          (long long)largest);
    return SYM_OK;
}

/* name = the last component of the pattern's directory ("shakespeare" for
 * data/shakespeare/train_*.bin); the current directory's name when the
 * pattern has none. */
static void set_name(char *name, size_t len, const char *pattern) {
    char dir[PATH_MAX], real[PATH_MAX];
    const char *slash = strrchr(pattern, '/');
    size_t n = slash ? (size_t)(slash - pattern) : 0;
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (n == 0)
        snprintf(dir, sizeof dir, "/");
    else
        snprintf(dir, sizeof dir, "%.*s", (int)(n < sizeof dir ? n : sizeof dir - 1), pattern);
    for (size_t k = strlen(dir); k > 1 && dir[k - 1] == '/'; k--) dir[k - 1] = '\0';
    const char *base = strrchr(dir, '/');
    base = base && base[1] ? base + 1 : dir;
    if (!strcmp(base, ".") || !strcmp(base, "..")) {
        if (realpath(dir, real)) {
            const char *b = strrchr(real, '/');
            base = b && b[1] ? b + 1 : real;
        }
    }
    size_t k = strlen(base);
    k = k < len ? k : len - 1; /* a longer name is cut: it only labels progress lines */
    memcpy(name, base, k);
    name[k] = '\0';
}

static int by_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int sym_tokens_open(const char *pattern, int seq, sym_tokens_t *out) {
    memset(out, 0, sizeof *out);
    if (!pattern || !*pattern)
        return sym__error(SYM_EINVAL,
                          "no token shards named (a glob such as "
                          "data/shakespeare/train_*.bin); %s",
                          HOW_TO_MAKE);
    if (seq < 1)
        return sym__error(SYM_EINVAL, "the sequence length must be at least 1 (got %d)", seq);
    glob_t g;
    int grc = glob(pattern, 0, NULL, &g);
    if (grc == GLOB_NOMATCH)
        return sym__error(SYM_ENOENT, "no token shards match %s; %s", pattern, HOW_TO_MAKE);
    if (grc == GLOB_NOSPACE) {
        globfree(&g);
        return sym__error(SYM_ENOMEM, "out of memory listing the token shards %s", pattern);
    }
    if (grc != 0) {
        globfree(&g);
        return sym__error(SYM_EIO,
                          "cannot list the token shards %s: a directory could not be "
                          "read",
                          pattern);
    }
    int rc = SYM_OK;
    if (g.gl_pathc > INT_MAX) {
        rc = sym__error(SYM_EINVAL, "%s names %zu files, more than %d shards", pattern,
                        (size_t)g.gl_pathc, INT_MAX);
        goto out;
    }
    qsort(g.gl_pathv, g.gl_pathc, sizeof *g.gl_pathv, by_name); /* strcmp, not the locale's */
    out->shards = calloc(g.gl_pathc, sizeof *out->shards);
    if (!out->shards) {
        rc = sym__error(SYM_ENOMEM, "out of memory opening %zu token shards", (size_t)g.gl_pathc);
        goto out;
    }
    out->seq = seq;
    for (size_t i = 0; i < g.gl_pathc; i++) {
        if ((rc = open_shard(g.gl_pathv[i], &out->shards[i]))) goto out;
        out->nshards++;
    }
    set_name(out->name, sizeof out->name, pattern);
    rc = finish_set(out, pattern);
out:
    globfree(&g);
    if (rc) sym_tokens_close(out);
    return rc;
}

int sym_tokens_from_memory(const uint16_t *tok, int64_t ntok, int seq, const char *name,
                           sym_tokens_t *out) {
    memset(out, 0, sizeof *out);
    if (seq < 1)
        return sym__error(SYM_EINVAL, "the sequence length must be at least 1 (got %d)", seq);
    if (ntok < 0 || (ntok > 0 && !tok))
        return sym__error(SYM_EINVAL, "no tokens given (%lld at %p)", (long long)ntok,
                          (const void *)tok);
    if ((uint64_t)ntok > SIZE_MAX / sizeof *tok)
        return sym__error(SYM_ENOMEM, "%lld tokens do not fit in memory", (long long)ntok);
    size_t bytes = (size_t)ntok * sizeof *tok;
    out->shards = calloc(1, sizeof *out->shards);
    void *copy = malloc(bytes ? bytes : 1);
    if (!out->shards || !copy) {
        free(copy);
        sym_tokens_close(out);
        return sym__error(SYM_ENOMEM, "out of memory copying %lld tokens", (long long)ntok);
    }
    if (bytes) memcpy(copy, tok, bytes);
    sym_shard_t *sh = &out->shards[0];
    sh->path[0] = '\0';
    sh->map = copy;
    sh->map_len = bytes;
    sh->tok = copy;
    sh->ntok = ntok;
    out->nshards = 1;
    out->seq = seq;
    snprintf(out->name, sizeof out->name, "%s", name && *name ? name : "memory");
    int rc = finish_set(out, out->name);
    if (rc) sym_tokens_close(out);
    return rc;
}

void sym_tokens_close(sym_tokens_t *ts) {
    for (int s = 0; ts->shards && s < ts->nshards; s++) {
        sym_shard_t *sh = &ts->shards[s];
        if (sh->path[0])
            munmap(sh->map, sh->map_len);
        else
            free(sh->map);
    }
    free(ts->shards);
    memset(ts, 0, sizeof *ts);
}

/* ---- samples ---- */

/* The shard holding global sample i (0 <= i < n): the last one whose first
 * sample is <= i. A shard without samples shares its `first` with the next
 * one, so the search never lands on it. */
static const sym_shard_t *shard_of(const sym_tokens_t *ts, int64_t i) {
    int lo = 0, hi = ts->nshards - 1;
    while (lo < hi) {
        int mid = lo + (hi - lo + 1) / 2;
        if (ts->shards[mid].first <= i)
            lo = mid;
        else
            hi = mid - 1;
    }
    return &ts->shards[lo];
}

void sym_tokens_gather(const sym_tokens_t *ts, const int64_t *idx, int count, int32_t *inp,
                       int32_t *tgt) {
    const int64_t seq = ts->seq;
    for (int r = 0; r < count; r++) {
        assert(idx[r] >= 0 && idx[r] < ts->n);
        const sym_shard_t *sh = shard_of(ts, idx[r]);
        const uint16_t *w = sh->tok + (idx[r] - sh->first) * seq; /* (seq + 1) tokens */
        int32_t *in = inp + (int64_t)r * seq, *tg = tgt + (int64_t)r * seq;
        for (int64_t j = 0; j < seq; j++) {
            in[j] = w[j];
            tg[j] = w[j + 1];
        }
    }
}

/* ---- writing a shard ---- */

static int write_all(int fd, const void *buf, size_t len) {
    const char *p = buf;
    while (len) {
        ssize_t n = write(fd, p, len > (1u << 30) ? (1u << 30) : len);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return -1;
        if (n == 0) {
            errno = ENOSPC;
            return -1;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Make the rename durable: fsync the directory holding path. Best effort (a
 * file system may refuse fsync on a directory); the file itself is complete. */
static void fsync_parent(const char *path) {
    char dir[PATH_MAX];
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == path)
        snprintf(dir, sizeof dir, "/");
    else
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return;
    (void)fsync(fd);
    close(fd);
}

int sym_shard_write(const char *path, const uint16_t *tok, int64_t ntok) {
    if (ntok < 0 || ntok > INT32_MAX || (ntok > 0 && !tok))
        return sym__error(SYM_EINVAL,
                          "cannot write token shard %s: %lld tokens (a shard holds 0 to %ld)", path,
                          (long long)ntok, (long)INT32_MAX);
    char tmp[PATH_MAX + 32];
    if (snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid()) >= (int)sizeof tmp)
        return sym__error(SYM_EIO, "cannot write token shard %.200s...: the path is too long",
                          path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return sym__error(SYM_EIO, "cannot write token shard %s: cannot create %s: %s", path, tmp,
                          strerror(errno));
    unsigned char hdr[HEADER_BYTES];
    memset(hdr, 0, sizeof hdr);
    put_le32(hdr, SYM_SHARD_MAGIC);
    put_le32(hdr + 4, SYM_SHARD_VERSION);
    put_le32(hdr + 8, (uint32_t)ntok);
    const char *step = NULL;
    if (write_all(fd, hdr, sizeof hdr) < 0 || write_all(fd, tok, (size_t)ntok * sizeof *tok) < 0)
        step = "writing";
    else if (fsync(fd) < 0)
        step = "fsync of";
    int e = errno;
    if (close(fd) < 0 && !step) step = "closing", e = errno;
    if (step) {
        unlink(tmp);
        return sym__error(SYM_EIO, "cannot write token shard %s: %s %s failed: %s", path, step, tmp,
                          strerror(e));
    }
    if (rename(tmp, path) < 0) {
        e = errno;
        unlink(tmp);
        return sym__error(SYM_EIO, "cannot write token shard %s: renaming %s to it failed: %s",
                          path, tmp, strerror(e));
    }
    fsync_parent(path);
    return SYM_OK;
}
