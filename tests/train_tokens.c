/*
 * train_tokens — token shards (llm.c's format), byte-level tokenization, the
 * generated corpus and `symtrain tokenize`, and every way a shard can be wrong.
 *
 * Random text files (every byte but NUL and '\n', random line lengths, an
 * empty file among them) are tokenized into several small training shards and
 * a validation shard, opened again and compared token for token with the text
 * joined by hand; every window's inputs and targets are checked against the
 * shard they come from (shifted by one, never straddling two), and the whole
 * text is detokenized back exactly. Shards written out of name order, with
 * empty and too-short ones among them, must open in name order; damaged ones
 * (wrong magic or version, truncated, extra bytes, too short for a header, a
 * count that would overflow, a directory, an unreadable file) must be refused
 * with the file named. The generated corpus must be deterministic, seed-
 * dependent, about the size asked, printable and made of a small vocabulary.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <symtrain/symtrain.h>

#include "../tools/symtrain_cli.h"
#include "test.h"

static char root[256]; /* the scratch directory, removed at the end */
static test_rng_t rng;

/* ---- files ---- */

static const char *in_root(char *buf, size_t len, const char *name) {
    snprintf(buf, len, "%s/%s", root, name);
    return buf;
}

static void write_file(const char *path, const void *data, size_t len) {
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL, "fopen %s: %s", path, strerror(errno));
    CHECK(fwrite(data, 1, len, f) == len, "fwrite %s", path);
    CHECK(fclose(f) == 0, "fclose %s", path);
}

/* The whole file; *len its size. */
static unsigned char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL, "fopen %s: %s", path, strerror(errno));
    CHECK(fseek(f, 0, SEEK_END) == 0, "fseek");
    long n = ftell(f);
    CHECK(n >= 0, "ftell");
    rewind(f);
    unsigned char *b = malloc((size_t)n + 1);
    CHECK(b && fread(b, 1, (size_t)n, f) == (size_t)n, "read %s", path);
    fclose(f);
    *len = (size_t)n;
    return b;
}

static void make_dir(const char *path) {
    CHECK(mkdir(path, 0755) == 0, "mkdir %s: %s", path, strerror(errno));
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st, (void)ftw;
    chmod(path, 0755);
    return flag == FTW_DP ? rmdir(path) : unlink(path);
}

static void remove_tree(const char *path) {
    CHECK(nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS) == 0, "removing %s: %s", path,
          strerror(errno));
}

static void put_le32(unsigned char *b, uint32_t v) {
    b[0] = (unsigned char)v, b[1] = (unsigned char)(v >> 8);
    b[2] = (unsigned char)(v >> 16), b[3] = (unsigned char)(v >> 24);
}

/* A shard made by hand: header (magic, version, count) then ntok tokens, then
 * `extra` bytes of 0x5a; `len` cuts the file at that many bytes when >= 0. */
static void craft_shard(const char *path, int32_t magic, int32_t version, int32_t count,
                        int64_t ntok, size_t extra, long len) {
    size_t total = 1024 + 2 * (size_t)ntok + extra;
    unsigned char *b = calloc(1, total);
    CHECK(b != NULL, "calloc");
    put_le32(b, (uint32_t)magic);
    put_le32(b + 4, (uint32_t)version);
    put_le32(b + 8, (uint32_t)count);
    for (int64_t i = 0; i < ntok; i++) {
        uint16_t t = (uint16_t)test_next(&rng);
        b[1024 + 2 * i] = (unsigned char)t, b[1024 + 2 * i + 1] = (unsigned char)(t >> 8);
    }
    memset(b + 1024 + 2 * ntok, 0x5a, extra);
    write_file(path, b, len >= 0 ? (size_t)len : total);
    free(b);
}

/* ---- checks on an opened set ---- */

/* Every sample of ts, gathered one by one and in one random batch, against a
 * reference found by walking the shards in order (not by the binary search). */
static void check_windows(const sym_tokens_t *ts) {
    const int T = ts->seq;
    int64_t n = 0, ntok = 0;
    for (int s = 0; s < ts->nshards; s++) {
        const sym_shard_t *sh = &ts->shards[s];
        CHECK_EQ_INT(sh->first, n);
        CHECK_EQ_INT(sh->nsamples, sh->ntok > 0 ? (sh->ntok - 1) / T : 0);
        n += sh->nsamples, ntok += sh->ntok;
    }
    CHECK_EQ_INT(ts->n, n);
    CHECK_EQ_INT(ts->ntokens, ntok);
    int32_t *inp = malloc(sizeof(int32_t) * (size_t)T), *tgt = malloc(sizeof(int32_t) * (size_t)T);
    CHECK(inp && tgt, "malloc");
    int64_t i = 0;
    for (int s = 0; s < ts->nshards; s++) {
        const sym_shard_t *sh = &ts->shards[s];
        for (int64_t w = 0; w < sh->nsamples; w++, i++) {
            /* the window's last target is inside this shard */
            CHECK(w * T + T <= sh->ntok - 1, "sample %lld straddles shard %d", (long long)i, s);
            for (int j = 0; j < T; j++) inp[j] = tgt[j] = -7; /* poison */
            sym_tokens_gather(ts, &i, 1, inp, tgt);
            for (int j = 0; j < T; j++) {
                CHECK(inp[j] == sh->tok[w * T + j],
                      "sample %lld (shard %d, window %lld) input "
                      "%d: %d != %d",
                      (long long)i, s, (long long)w, j, inp[j], sh->tok[w * T + j]);
                CHECK(tgt[j] == sh->tok[w * T + j + 1], "sample %lld target %d: %d != %d",
                      (long long)i, j, tgt[j], sh->tok[w * T + j + 1]);
                if (j + 1 < T)
                    CHECK(tgt[j] == inp[j + 1], "sample %lld: not shifted by one", (long long)i);
            }
        }
    }
    CHECK_EQ_INT(i, ts->n);
    /* a random batch, compared with the one-by-one answers */
    enum { B = 37 };
    int64_t idx[B];
    int32_t *binp = malloc(sizeof(int32_t) * B * (size_t)T),
            *btgt = malloc(sizeof(int32_t) * B * (size_t)T);
    CHECK(binp && btgt, "malloc");
    for (int r = 0; r < B; r++) idx[r] = (int64_t)(test_next(&rng) % (uint64_t)ts->n);
    idx[0] = 0, idx[B - 1] = ts->n - 1;
    sym_tokens_gather(ts, idx, B, binp, btgt);
    for (int r = 0; r < B; r++) {
        sym_tokens_gather(ts, &idx[r], 1, inp, tgt);
        CHECK(!memcmp(binp + (size_t)r * T, inp, sizeof(int32_t) * (size_t)T),
              "batch row %d inputs", r);
        CHECK(!memcmp(btgt + (size_t)r * T, tgt, sizeof(int32_t) * (size_t)T),
              "batch row %d targets", r);
    }
    free(binp), free(btgt), free(inp), free(tgt);
}

/* All tokens of ts in order, as int32. */
static int32_t *all_tokens(const sym_tokens_t *ts) {
    int32_t *t = malloc(sizeof(int32_t) * (size_t)(ts->ntokens + 1));
    CHECK(t != NULL, "malloc");
    int64_t k = 0;
    for (int s = 0; s < ts->nshards; s++)
        for (int64_t i = 0; i < ts->shards[s].ntok; i++) t[k++] = ts->shards[s].tok[i];
    CHECK_EQ_INT(k, ts->ntokens);
    return t;
}

static void expect_error(int rc, int code, const char *must1, const char *must2) {
    const char *msg = sym_last_error();
    CHECK(rc == code, "got %d (%s), expected %d; message: %s", rc, sym_strerror(rc), code, msg);
    if (must1) CHECK(strstr(msg, must1) != NULL, "message lacks '%s': %s", must1, msg);
    if (must2) CHECK(strstr(msg, must2) != NULL, "message lacks '%s': %s", must2, msg);
}

static void expect_open_fails(const char *pattern, int seq, int code, const char *must1,
                              const char *must2) {
    sym_tokens_t ts;
    memset(&ts, 0x55, sizeof ts);
    int rc = sym_tokens_open(pattern, seq, &ts);
    expect_error(rc, code, must1, must2);
    CHECK(ts.shards == NULL && ts.nshards == 0 && ts.n == 0, "a failed open left state behind");
}

/* ---- text -> shards -> tokens -> text ---- */

/* A random text file of about `bytes` bytes: lines of 0..120 random bytes
 * (anything but NUL and '\n'); ends with '\n' when `eol`. */
static char *random_text(size_t bytes, int eol, size_t *len) {
    char *s = malloc(bytes + 256);
    CHECK(s != NULL, "malloc");
    size_t n = 0;
    while (n < bytes) {
        size_t line = (size_t)(test_next(&rng) % 121);
        for (size_t i = 0; i < line; i++) {
            unsigned char c = (unsigned char)(1 + test_next(&rng) % 255);
            s[n++] = (char)(c == '\n' ? 'x' : c);
        }
        s[n++] = '\n';
    }
    if (!eol) s[n - 1] = 'z';
    *len = n;
    return s;
}

static void test_roundtrip(void) {
    char path[4][512], out[512];
    const char *names[4] = {"a.txt", "empty.txt", "b.txt", "c.txt"};
    size_t sizes[4] = {15000, 0, 12000, 17000}, len[4];
    char *text[4];
    for (int f = 0; f < 4; f++) {
        text[f] = sizes[f] ? random_text(sizes[f], f != 3, &len[f]) : calloc(1, 1);
        if (!sizes[f]) len[f] = 0;
        write_file(in_root(path[f], sizeof path[f], names[f]), text[f], len[f]);
    }
    /* the reference: joined with one '\n' between files */
    size_t L = len[0] + len[1] + len[2] + len[3] + 3, at = 0;
    char *joined = malloc(L + 1);
    for (int f = 0; f < 4; f++) {
        if (f) joined[at++] = '\n';
        memcpy(joined + at, text[f], len[f]);
        at += len[f];
    }
    CHECK_EQ_INT(at, L);
    joined[L] = '\0';

    in_root(out, sizeof out, "out/shakespeare"); /* created, parent included */
    const char *files[4] = {path[0], path[1], path[2], path[3]};
    const int64_t per = 7001;
    int64_t ntrain = -1, nval = -1;
    int rc = sym_tokenize_bytes(files, 4, out, 0.1, per, &ntrain, &nval);
    CHECK(rc == 0, "tokenize: %s", sym_last_error());
    CHECK_EQ_INT(ntrain + nval, L);
    CHECK(ntrain > 0 && nval > 0, "split %lld + %lld", (long long)ntrain, (long long)nval);
    CHECK(joined[ntrain - 1] == '\n', "validation does not start at a line start");
    /* the nearest line start to 90% of the text (within a byte of rounding) */
    double target = (double)L * 0.9;
    for (size_t p = 1; p < L; p++)
        if (joined[p - 1] == '\n')
            CHECK(fabs((double)ntrain - target) <= fabs((double)p - target) + 1.0,
                  "line start %zu is nearer to %.1f than the cut %lld", p, target,
                  (long long)ntrain);
    CHECK(fabs((double)nval - 0.1 * (double)L) <= 122, "validation %lld of %zu", (long long)nval,
          L);

    /* the training shards: ceil(ntrain / per) files of exactly header + 2 * tokens */
    int64_t k_expect = (ntrain + per - 1) / per;
    CHECK(k_expect >= 4, "want several shards, got %lld", (long long)k_expect);
    for (int64_t k = 0; k <= k_expect; k++) {
        char name[64], p[600];
        snprintf(name, sizeof name, "/train_%06lld.bin", (long long)k);
        snprintf(p, sizeof p, "%s%s", out, name);
        struct stat st;
        if (k == k_expect) {
            CHECK(stat(p, &st) < 0, "%s should not exist", p);
            break;
        }
        CHECK(stat(p, &st) == 0, "%s missing", p);
        int64_t nk = k + 1 < k_expect ? per : ntrain - per * (k_expect - 1);
        CHECK_EQ_INT(st.st_size, 1024 + 2 * nk);
    }

    char pattern[600];
    int T = 64;
    sym_tokens_t tr, va;
    snprintf(pattern, sizeof pattern, "%s/train_*.bin", out);
    rc = sym_tokens_open(pattern, T, &tr);
    CHECK(rc == 0, "open %s: %s", pattern, sym_last_error());
    CHECK_EQ_INT(tr.nshards, k_expect);
    CHECK_EQ_INT(tr.ntokens, ntrain);
    CHECK_EQ_INT(tr.seq, T);
    CHECK(!strcmp(tr.name, "shakespeare"), "name '%s'", tr.name);
    for (int s = 0; s + 1 < tr.nshards; s++)
        CHECK(strcmp(tr.shards[s].path, tr.shards[s + 1].path) < 0, "shards out of name order");
    int mx = 0;
    for (int64_t i = 0; i < ntrain; i++)
        mx = (unsigned char)joined[i] > mx ? (unsigned char)joined[i] : mx;
    CHECK_EQ_INT(tr.max_token, mx);
    check_windows(&tr);

    snprintf(pattern, sizeof pattern, "%s/val_*.bin", out);
    rc = sym_tokens_open(pattern, T, &va);
    CHECK(rc == 0, "open %s: %s", pattern, sym_last_error());
    CHECK_EQ_INT(va.nshards, 1);
    CHECK_EQ_INT(va.ntokens, nval);
    check_windows(&va);

    /* tokens == bytes, and back to the very same text */
    int32_t *t1 = all_tokens(&tr), *t2 = all_tokens(&va);
    for (int64_t i = 0; i < ntrain; i++)
        CHECK(t1[i] == (unsigned char)joined[i], "train token %lld: %d != byte %d", (long long)i,
              t1[i], (unsigned char)joined[i]);
    for (int64_t i = 0; i < nval; i++)
        CHECK(t2[i] == (unsigned char)joined[ntrain + i], "validation token %lld", (long long)i);
    int32_t *both = malloc(sizeof(int32_t) * L);
    memcpy(both, t1, sizeof(int32_t) * (size_t)ntrain);
    memcpy(both + ntrain, t2, sizeof(int32_t) * (size_t)nval);
    char *back = sym_detokenize_bytes(both, (int64_t)L);
    CHECK(back != NULL, "detokenize");
    CHECK(strlen(back) == L && !memcmp(back, joined, L), "the text did not survive the round trip");
    free(back);

    /* tokenizing again with bigger shards leaves no shard of the first run behind */
    rc = sym_tokenize_bytes(files, 4, out, 0.1, 1 << 20, NULL, NULL);
    CHECK(rc == 0, "tokenize again: %s", sym_last_error());
    sym_tokens_t again;
    snprintf(pattern, sizeof pattern, "%s/train_*.bin", out);
    CHECK(sym_tokens_open(pattern, T, &again) == 0, "%s", sym_last_error());
    CHECK_EQ_INT(again.nshards, 1);
    CHECK_EQ_INT(again.ntokens, ntrain);
    int32_t *t3 = all_tokens(&again);
    CHECK(!memcmp(t3, t1, sizeof(int32_t) * (size_t)ntrain), "re-tokenized text differs");
    sym_tokens_close(&again);
    CHECK(again.shards == NULL && again.nshards == 0, "close left state");

    printf("  round trip: %zu bytes in 4 files -> %d train shards of <= %lld tokens + %lld "
           "validation tokens; %lld + %lld windows of %d: exact\n",
           L, tr.nshards, (long long)per, (long long)nval, (long long)tr.n, (long long)va.n, T);
    sym_tokens_close(&tr);
    sym_tokens_close(&va);
    free(t1), free(t2), free(t3), free(both), free(joined);
    for (int f = 0; f < 4; f++) free(text[f]);
}

/* ---- many shards, in name order, with empty and short ones ---- */

static void test_glob_order(void) {
    char d[512], p[600], pattern[600];
    make_dir(in_root(d, sizeof d, "glob"));
    /* written out of order; 001 is too short for a window and 003 is empty */
    const int order[] = {10, 2, 0, 3, 1, 11};
    const int64_t sizes[] = {[0] = 301, [1] = 5, [2] = 100, [3] = 0, [10] = 257, [11] = 33};
    uint16_t *tok[12] = {0};
    for (size_t o = 0; o < sizeof order / sizeof *order; o++) {
        int k = order[o];
        tok[k] = malloc(sizeof(uint16_t) * (size_t)(sizes[k] + 1));
        for (int64_t i = 0; i < sizes[k]; i++) tok[k][i] = (uint16_t)test_next(&rng);
        snprintf(p, sizeof p, "%s/part_%03d.bin", d, k);
        CHECK(sym_shard_write(p, tok[k], sizes[k]) == 0, "write %s: %s", p, sym_last_error());
    }
    tok[11][7] = 65535; /* the largest token a shard can hold */
    snprintf(p, sizeof p, "%s/part_%03d.bin", d, 11);
    CHECK(sym_shard_write(p, tok[11], sizes[11]) == 0, "rewrite %s: %s", p, sym_last_error());
    snprintf(p, sizeof p, "%s/other.bin", d); /* not matched */
    CHECK(sym_shard_write(p, tok[0], 10) == 0, "%s", sym_last_error());

    sym_tokens_t ts;
    snprintf(pattern, sizeof pattern, "%s/part_*.bin", d);
    const int T = 8;
    CHECK(sym_tokens_open(pattern, T, &ts) == 0, "open %s: %s", pattern, sym_last_error());
    const int sorted[] = {0, 1, 2, 3, 10, 11};
    CHECK_EQ_INT(ts.nshards, 6);
    for (int s = 0; s < 6; s++) {
        int k = sorted[s];
        snprintf(p, sizeof p, "%s/part_%03d.bin", d, k);
        CHECK(!strcmp(ts.shards[s].path, p), "shard %d is %s, expected %s", s, ts.shards[s].path,
              p);
        CHECK_EQ_INT(ts.shards[s].ntok, sizes[k]);
        for (int64_t i = 0; i < sizes[k]; i++)
            CHECK(ts.shards[s].tok[i] == tok[k][i], "%s token %lld", p, (long long)i);
    }
    CHECK_EQ_INT(ts.shards[1].nsamples, 0);
    CHECK_EQ_INT(ts.shards[3].nsamples, 0);
    CHECK_EQ_INT(ts.n, (301 - 1) / T + (100 - 1) / T + (257 - 1) / T + (33 - 1) / T);
    CHECK_EQ_INT(ts.max_token, 65535);
    CHECK(!strcmp(ts.name, "glob"), "name '%s'", ts.name);
    check_windows(&ts);
    sym_tokens_close(&ts);

    /* a pattern without a directory: named for the current directory */
    char cwd[PATH_MAX];
    CHECK(getcwd(cwd, sizeof cwd) != NULL, "getcwd");
    CHECK(chdir(d) == 0, "chdir %s", d);
    int rc = sym_tokens_open("part_*.bin", T, &ts);
    CHECK(chdir(cwd) == 0, "chdir back");
    CHECK(rc == 0, "open part_*.bin: %s", sym_last_error());
    CHECK(!strcmp(ts.name, "glob"), "name '%s' for a pattern without a directory", ts.name);
    CHECK_EQ_INT(ts.nshards, 6);
    sym_tokens_close(&ts);
    for (int k = 0; k < 12; k++) free(tok[k]);
}

/* ---- tokens in memory ---- */

static void test_from_memory(void) {
    enum { N = 1000, T = 10 };
    uint16_t *tok = malloc(sizeof(uint16_t) * N);
    int mx = 0;
    for (int i = 0; i < N; i++) {
        tok[i] = (uint16_t)(test_next(&rng) % 50000);
        mx = tok[i] > mx ? tok[i] : mx;
    }
    sym_tokens_t ts;
    CHECK(sym_tokens_from_memory(tok, N, T, "mem", &ts) == 0, "%s", sym_last_error());
    uint16_t keep0 = tok[0];
    tok[0] ^= 0xffff; /* the set holds a copy */
    CHECK(ts.shards[0].tok[0] == keep0, "from_memory did not copy");
    tok[0] = keep0;
    CHECK(!strcmp(ts.name, "mem") && ts.shards[0].path[0] == '\0', "name '%s'", ts.name);
    CHECK_EQ_INT(ts.nshards, 1);
    CHECK_EQ_INT(ts.n, (N - 1) / T);
    CHECK_EQ_INT(ts.max_token, mx);
    check_windows(&ts);
    /* 99 windows: the last one's inputs are tokens [980, 990), its targets [981, 991) */
    int64_t last = ts.n - 1;
    int32_t inp[T], tgt[T];
    sym_tokens_gather(&ts, &last, 1, inp, tgt);
    CHECK(inp[0] == tok[980] && tgt[T - 1] == tok[990], "last window");
    sym_tokens_close(&ts);

    CHECK(sym_tokens_from_memory(tok, T + 1, T, "mem", &ts) == 0, "%s", sym_last_error());
    CHECK_EQ_INT(ts.n, 1);
    sym_tokens_close(&ts);
    memset(&ts, 0x55, sizeof ts);
    expect_error(sym_tokens_from_memory(tok, T, T, "tiny", &ts), SYM_EINVAL, "tiny", "11");
    CHECK(ts.shards == NULL, "a failed from_memory left state");
    expect_error(sym_tokens_from_memory(tok, N, 0, "mem", &ts), SYM_EINVAL, "sequence", NULL);
    expect_error(sym_tokens_from_memory(NULL, N, T, "mem", &ts), SYM_EINVAL, NULL, NULL);
    free(tok);
}

/* ---- damaged shards ---- */

static void test_corrupt(void) {
    char d[512], p[600], pattern[600];
    make_dir(in_root(d, sizeof d, "bad"));
    snprintf(pattern, sizeof pattern, "%s/s_*.bin", d);
    snprintf(p, sizeof p, "%s/s_000.bin", d);
    const char *fix = "symtrain tokenize";
    struct {
        const char *what, *says;
        int32_t magic, version, count;
        int64_t ntok;
        size_t extra;
        long len;
    } cases[] = {
        {"wrong magic", "magic", SYM_SHARD_MAGIC + 1, 1, 100, 100, 0, -1},
        {"wrong version", "version 2", SYM_SHARD_MAGIC, 2, 100, 100, 0, -1},
        {"truncated", "truncated", SYM_SHARD_MAGIC, 1, 100, 99, 0, -1},
        {"one extra byte", "extra", SYM_SHARD_MAGIC, 1, 100, 100, 1, -1},
        {"one extra token", "extra", SYM_SHARD_MAGIC, 1, 100, 101, 0, -1},
        {"too short for a header", "too short", SYM_SHARD_MAGIC, 1, 0, 0, 0, 1023},
        {"empty file", "too short", SYM_SHARD_MAGIC, 1, 0, 0, 0, 0},
        {"count INT32_MAX, 10 tokens", "truncated", SYM_SHARD_MAGIC, 1, INT32_MAX, 10, 0, -1},
        {"count -1", "negative", SYM_SHARD_MAGIC, 1, -1, 10, 0, -1},
        {"count INT32_MIN", "negative", SYM_SHARD_MAGIC, 1, INT32_MIN, 10, 0, -1},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        craft_shard(p, cases[c].magic, cases[c].version, cases[c].count, cases[c].ntok,
                    cases[c].extra, cases[c].len);
        expect_open_fails(pattern, 4, SYM_ECORRUPT, p, cases[c].says);
        CHECK(strstr(sym_last_error(), fix), "%s: no fix in: %s", cases[c].what, sym_last_error());
        printf("  refused (%s): %s\n", cases[c].what, sym_last_error());
    }
    /* a good shard opened before a bad one: the bad one is named, nothing is kept */
    char good[600];
    snprintf(good, sizeof good, "%s/s_-good.bin", d); /* '-' sorts before '0' */
    craft_shard(good, SYM_SHARD_MAGIC, 1, 50, 50, 0, -1);
    craft_shard(p, SYM_SHARD_MAGIC, 1, 50, 49, 0, -1);
    expect_open_fails(pattern, 4, SYM_ECORRUPT, p, "truncated");
    craft_shard(p, SYM_SHARD_MAGIC, 1, 50, 50, 0, -1);
    sym_tokens_t ts;
    CHECK(sym_tokens_open(pattern, 4, &ts) == 0, "two good shards: %s", sym_last_error());
    CHECK_EQ_INT(ts.nshards, 2);
    CHECK_EQ_INT(ts.n, 2 * ((50 - 1) / 4));
    sym_tokens_close(&ts);

    /* too few tokens for one window: EINVAL, saying how many the largest holds */
    expect_open_fails(pattern, 50, SYM_EINVAL, "holds 50", "51");
    CHECK(sym_tokens_open(pattern, 49, &ts) == 0, "seq 49 on 50 tokens: %s", sym_last_error());
    CHECK_EQ_INT(ts.n, 2);
    sym_tokens_close(&ts);
    expect_open_fails(pattern, 0, SYM_EINVAL, "sequence", NULL);

    /* a directory that matches */
    char sub[600];
    snprintf(sub, sizeof sub, "%s/s_zzz.bin", d);
    make_dir(sub);
    expect_open_fails(pattern, 4, SYM_EIO, sub, "not a regular file");
    CHECK(rmdir(sub) == 0, "rmdir");

    /* nothing matches: ENOENT naming the pattern and how to make shards */
    char empty[512], none[600];
    make_dir(in_root(empty, sizeof empty, "nothing"));
    snprintf(none, sizeof none, "%s/train_*.bin", empty);
    expect_open_fails(none, 4, SYM_ENOENT, none, "make data");
    CHECK(strstr(sym_last_error(), "symtrain tokenize FILES -o DIR"), "%s", sym_last_error());
    snprintf(none, sizeof none, "%s/no/such/dir/*.bin", root);
    expect_open_fails(none, 4, SYM_ENOENT, none, "make data");
    expect_open_fails("", 4, SYM_EINVAL, NULL, NULL);

    /* unreadable */
    if (geteuid() == 0) {
        printf("  note: running as root, where chmod 000 does not deny reading: the unreadable-"
               "shard check is skipped\n");
    } else {
        CHECK(chmod(p, 0) == 0, "chmod");
        expect_open_fails(pattern, 4, SYM_EIO, p, strerror(EACCES));
        CHECK(chmod(p, 0644) == 0, "chmod");
    }
}

/* ---- writing shards ---- */

static void test_write(void) {
    char d[512], p[600], blocker[600];
    make_dir(in_root(d, sizeof d, "write"));
    enum { N = 333 };
    uint16_t tok[N];
    for (int i = 0; i < N; i++) tok[i] = (uint16_t)test_next(&rng);
    snprintf(p, sizeof p, "%s/x.bin", d);
    CHECK(sym_shard_write(p, tok, N) == 0, "%s", sym_last_error());
    size_t len;
    unsigned char *b = read_file(p, &len);
    CHECK_EQ_INT(len, 1024 + 2 * N);
    const uint32_t want[3] = {SYM_SHARD_MAGIC, SYM_SHARD_VERSION, N};
    for (int i = 0; i < 256; i++) {
        uint32_t v = (uint32_t)b[4 * i] | (uint32_t)b[4 * i + 1] << 8 |
                     (uint32_t)b[4 * i + 2] << 16 | (uint32_t)b[4 * i + 3] << 24;
        CHECK(v == (i < 3 ? want[i] : 0), "header int %d is %u", i, v);
    }
    for (int i = 0; i < N; i++)
        CHECK(((uint16_t)(b[1024 + 2 * i] | b[1024 + 2 * i + 1] << 8)) == tok[i],
              "token %d not little-endian as written", i);
    free(b);
    /* an overwrite replaces the whole file */
    CHECK(sym_shard_write(p, tok, 7) == 0, "%s", sym_last_error());
    struct stat st;
    CHECK(stat(p, &st) == 0 && st.st_size == 1024 + 14, "overwrite");

    /* a path under a regular file */
    snprintf(blocker, sizeof blocker, "%s/x.bin/y.bin", d);
    expect_error(sym_shard_write(blocker, tok, N), SYM_EIO, blocker, strerror(ENOTDIR));
    /* a path that is a directory: the rename fails, and the temporary is removed */
    snprintf(blocker, sizeof blocker, "%s/adir", d);
    make_dir(blocker);
    char inside[700];
    snprintf(inside, sizeof inside, "%s/keep", blocker);
    write_file(inside, "k", 1);
    expect_error(sym_shard_write(blocker, tok, N), SYM_EIO, blocker, "renaming");
    expect_error(sym_shard_write(p, tok, -1), SYM_EINVAL, p, NULL);
    expect_error(sym_shard_write(p, tok, (int64_t)INT32_MAX + 1), SYM_EINVAL, p, NULL);
    /* no temporaries left behind */
    DIR *dd = opendir(d);
    CHECK(dd != NULL, "opendir %s", d);
    for (struct dirent *e; (e = readdir(dd));)
        CHECK(!strstr(e->d_name, ".tmp."), "a temporary %s was left in %s", e->d_name, d);
    closedir(dd);
}

/* ---- tokenize's errors ---- */

static void test_tokenize_errors(void) {
    char good[512], out[512], p[600];
    in_root(good, sizeof good, "t.txt");
    write_file(good, "line one\nline two\nline three\n", 29);
    in_root(out, sizeof out, "tok-out");
    const char *f1[] = {good};
    char missing[512];
    in_root(missing, sizeof missing, "missing.txt");
    const char *f2[] = {good, missing};
    expect_error(sym_tokenize_bytes(f2, 2, out, 0.1, 100, NULL, NULL), SYM_ENOENT, missing, NULL);
    const char *f3[] = {root}; /* a directory */
    expect_error(sym_tokenize_bytes(f3, 1, out, 0.1, 100, NULL, NULL), SYM_EIO, root, NULL);
    snprintf(p, sizeof p, "%s/sub", good); /* an output directory under a regular file */
    expect_error(sym_tokenize_bytes(f1, 1, p, 0.1, 100, NULL, NULL), SYM_EIO, p, NULL);
    char one[512];
    in_root(one, sizeof one, "one-line.txt");
    write_file(one, "no line break here", 18);
    const char *f4[] = {one};
    expect_error(sym_tokenize_bytes(f4, 1, out, 0.1, 100, NULL, NULL), SYM_EINVAL, one, "short");
    expect_error(sym_tokenize_bytes(f1, 1, out, 0, 100, NULL, NULL), SYM_EINVAL, "fraction", NULL);
    expect_error(sym_tokenize_bytes(f1, 1, out, 1, 100, NULL, NULL), SYM_EINVAL, "fraction", NULL);
    expect_error(sym_tokenize_bytes(f1, 1, out, 0.1, 0, NULL, NULL), SYM_EINVAL, "per shard", NULL);
    expect_error(sym_tokenize_bytes(f1, 0, out, 0.1, 100, NULL, NULL), SYM_EINVAL, NULL, NULL);
    /* the smallest text that splits: two lines */
    int64_t nt, nv;
    CHECK(sym_tokenize_bytes(f1, 1, out, 0.1, 100, &nt, &nv) == 0, "%s", sym_last_error());
    CHECK(nt == 18 && nv == 11, "split %lld + %lld, expected 18 + 11", (long long)nt,
          (long long)nv);
    /* one file joined with another: exactly one '\n' between them */
    const char *f5[] = {one, good};
    CHECK(sym_tokenize_bytes(f5, 2, out, 0.5, 100, &nt, &nv) == 0, "%s", sym_last_error());
    CHECK_EQ_INT(nt + nv, 18 + 1 + 29);
    if (geteuid() != 0) {
        CHECK(chmod(good, 0) == 0, "chmod");
        expect_error(sym_tokenize_bytes(f1, 1, out, 0.1, 100, NULL, NULL), SYM_EIO, good,
                     strerror(EACCES));
        CHECK(chmod(good, 0644) == 0, "chmod");
    }
}

static void test_detokenize(void) {
    const int32_t t[] = {'a', 256, 'b', 65535, -1, '\n', 255};
    char *s = sym_detokenize_bytes(t, 7);
    CHECK(s && !strcmp(s, "a<|256|>b<|65535|><|-1|>\n\xff"), "detokenize: '%s'", s ? s : "(null)");
    free(s);
    s = sym_detokenize_bytes(t, 0);
    CHECK(s && !strcmp(s, ""), "empty");
    free(s);
}

/* ---- the generated corpus ---- */

static void test_corpus(void) {
    const size_t want = 200000;
    uint64_t seed = test_next(&rng);
    char *a = sym_corpus_generate(seed, want), *b = sym_corpus_generate(seed, want);
    char *c = sym_corpus_generate(seed + 1, want), *small = sym_corpus_generate(seed, 5000);
    CHECK(a && b && c && small, "generate");
    size_t n = strlen(a);
    CHECK(n >= want && n <= want + 1000, "asked %zu bytes, got %zu", want, n);
    CHECK(!strcmp(a, b), "seed %llu gave two texts", (unsigned long long)seed);
    CHECK(strcmp(a, c) != 0, "seeds %llu and %llu gave the same text", (unsigned long long)seed,
          (unsigned long long)seed + 1);
    size_t ns = strlen(small);
    CHECK(ns >= 5000 && ns < 6000 && !strncmp(a, small, ns - 1),
          "a smaller corpus is not a prefix");
    size_t lines = 0, col = 0, upper = 0, stops = 0, words = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)a[i];
        CHECK(ch == '\n' || (ch >= 32 && ch < 127), "byte %zu is %d: not printable", i, ch);
        if (ch == '\n') {
            lines++, col = 0;
            continue;
        }
        CHECK(++col <= 72, "line %zu is longer than 72 columns", lines + 1);
        upper += ch >= 'A' && ch <= 'Z';
        stops += ch == '.' || ch == '?' || ch == '!';
        words += ch == ' ';
    }
    CHECK(a[n - 1] == '\n', "does not end with a line break");
    CHECK(lines > n / 80 && upper > n / 200 && stops > n / 200,
          "no structure: %zu lines, %zu "
          "capitals, %zu sentence ends",
          lines, upper, stops);
    CHECK(strstr(a, "\n\n") != NULL && strstr(a, ", ") != NULL, "no paragraphs or commas");
    /* a small vocabulary: distinct lower-cased words */
    enum { CAP = 4096 };
    static char seen[CAP][24];
    int distinct = 0;
    for (size_t i = 0; i < n;) {
        while (i < n && !(a[i] >= 'a' && a[i] <= 'z') && !(a[i] >= 'A' && a[i] <= 'Z')) i++;
        char w[24];
        size_t k = 0;
        while (i < n && ((a[i] >= 'a' && a[i] <= 'z') || (a[i] >= 'A' && a[i] <= 'Z'))) {
            if (k < sizeof w - 1) w[k++] = (char)(a[i] | 0x20);
            i++;
        }
        w[k] = '\0';
        if (!k) continue;
        int found = 0;
        for (int j = 0; j < distinct && !found; j++) found = !strcmp(seen[j], w);
        if (!found) {
            CHECK(distinct < CAP, "too many distinct words");
            strcpy(seen[distinct++], w);
        }
    }
    CHECK(distinct >= 300 && distinct <= 800, "%d distinct words", distinct);
    char *none = sym_corpus_generate(seed, 0);
    CHECK(none && !strcmp(none, ""), "0 bytes");

    /* it tokenizes and splits like a real text */
    char path[512], out[512];
    in_root(path, sizeof path, "corpus.txt");
    write_file(path, a, n);
    in_root(out, sizeof out, "corpus");
    const char *files[] = {path};
    int64_t nt, nv;
    CHECK(sym_tokenize_bytes(files, 1, out, 0.1, 1 << 20, &nt, &nv) == 0, "%s", sym_last_error());
    CHECK_EQ_INT(nt + nv, n);
    printf("  corpus: %zu bytes, %zu lines, %zu words, %d distinct; begins: %.60s...\n", n, lines,
           words + lines, distinct, a);
    free(a), free(b), free(c), free(small), free(none);
}

/* ---- symtrain tokenize ---- */

/* Run sym_cli_tokenize on args (NULL-terminated) with stdout and stderr
 * captured into out and err. */
static int run_cli(char *out, size_t outlen, char *err, size_t errlen, const char *const *args) {
    char *argv[16];
    int argc = 0;
    while (args[argc]) {
        CHECK(argc < 16, "too many arguments");
        argv[argc] = (char *)args[argc];
        argc++;
    }
    char po[600], pe[600];
    in_root(po, sizeof po, "cli.out");
    in_root(pe, sizeof pe, "cli.err");
    fflush(stdout), fflush(stderr);
    int so = dup(1), se = dup(2);
    int fo = open(po, O_WRONLY | O_CREAT | O_TRUNC, 0644),
        fe = open(pe, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CHECK(so >= 0 && se >= 0 && fo >= 0 && fe >= 0, "capture");
    dup2(fo, 1), dup2(fe, 2);
    int rc = sym_cli_tokenize(argc, argv);
    fflush(stdout), fflush(stderr);
    dup2(so, 1), dup2(se, 2);
    close(so), close(se), close(fo), close(fe);
    size_t n;
    unsigned char *b = read_file(po, &n);
    snprintf(out, outlen, "%.*s", (int)n, (char *)b);
    free(b);
    b = read_file(pe, &n);
    snprintf(err, errlen, "%.*s", (int)n, (char *)b);
    free(b);
    return rc;
}

static void test_cli(void) {
    char out[4096], err[4096], text[512], dir[512], missing[512];
    in_root(text, sizeof text, "cli.txt");
    in_root(dir, sizeof dir, "cli-shards");
    in_root(missing, sizeof missing, "cli-missing.txt");
    size_t len;
    char *t = random_text(5000, 1, &len);
    write_file(text, t, len);
    free(t);

    CHECK_EQ_INT(run_cli(out, sizeof out, err, sizeof err, (const char *[]){"--help", NULL}), 0);
    CHECK(strstr(out, "usage: symtrain tokenize FILES... -o DIR") && !*err, "--help: %s", out);
    struct {
        const char *a[6], *says;
    } bad[] = {
        {{NULL}, "name the text files"},
        {{text, NULL}, "-o DIR"},
        {{"-o", NULL}, "needs a value"},
        {{text, "-o", dir, "--frobnicate", NULL}, "unknown option '--frobnicate'"},
        {{text, "-o", dir, "--val-fraction", "1.5", NULL}, "--val-fraction '1.5'"},
        {{text, "-o", dir, "--val-fraction=0", NULL}, "--val-fraction '0'"},
        {{text, "-o", dir, "--shard-tokens", "0", NULL}, "--shard-tokens '0'"},
        {{text, "-o", dir, "--shard-tokens", "12x", NULL}, "--shard-tokens '12x'"},
        {{text, "-o", dir, "-o", dir, NULL}, "one output directory"},
        {{"-", "-o", dir, NULL}, "standard input"},
    };
    for (size_t c = 0; c < sizeof bad / sizeof *bad; c++) {
        int rc = run_cli(out, sizeof out, err, sizeof err, bad[c].a);
        CHECK(rc == 2, "usage case %zu: exit %d, expected 2; stderr: %s", c, rc, err);
        CHECK(strstr(err, bad[c].says) && strstr(err, "usage: symtrain tokenize") && !*out,
              "usage case %zu: stderr lacks '%s': %s", c, bad[c].says, err);
    }
    int rc =
        run_cli(out, sizeof out, err, sizeof err, (const char *[]){text, missing, "-o", dir, NULL});
    CHECK(rc == 1 && strstr(err, missing) && !*out, "missing file: exit %d, stderr %s", rc, err);

    rc = run_cli(out, sizeof out, err, sizeof err,
                 (const char *[]){"--shard-tokens=1000", text, "--val-fraction", "0.2", "--output",
                                  dir, NULL});
    CHECK(rc == 0 && !*err, "tokenize: exit %d, stderr %s", rc, err);
    sym_tokens_t tr, va;
    char pattern[600];
    snprintf(pattern, sizeof pattern, "%s/train_*.bin", dir);
    CHECK(sym_tokens_open(pattern, 16, &tr) == 0, "%s", sym_last_error());
    snprintf(pattern, sizeof pattern, "%s/val_*.bin", dir);
    CHECK(sym_tokens_open(pattern, 16, &va) == 0, "%s", sym_last_error());
    CHECK_EQ_INT(tr.ntokens + va.ntokens, len);
    CHECK(fabs((double)va.ntokens - 0.2 * (double)len) <= 122, "validation %lld of %zu",
          (long long)va.ntokens, len);
    char want[1024];
    snprintf(want, sizeof want,
             "symtrain: tokenize: 1 file, %zu bytes -> %s: %lld train tokens in "
             "%d shards, %lld validation tokens\n",
             len, dir, (long long)tr.ntokens, tr.nshards, (long long)va.ntokens);
    CHECK(!strcmp(out, want), "summary:\n%s\nexpected:\n%s", out, want);
    CHECK_EQ_INT(tr.nshards, (tr.ntokens + 999) / 1000);
    sym_tokens_close(&tr);
    sym_tokens_close(&va);
    printf("  cli: %s", out);
}

int main(void) {
    uint64_t seed = test_seed();
    printf("train_tokens: seed %llu (SYMTRAIN_TEST_SEED=%llu replays it)\n",
           (unsigned long long)seed, (unsigned long long)seed);
    rng = test_rng(seed, 0);
    test_mkdtemp(root, sizeof root, "train_tokens");
    test_roundtrip();
    test_glob_order();
    test_from_memory();
    test_corrupt();
    test_write();
    test_tokenize_errors();
    test_detokenize();
    test_corpus();
    test_cli();
    remove_tree(root);
    printf("train_tokens: all checks passed\n");
    return 0;
}
