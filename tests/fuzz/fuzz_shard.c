/*
 * fuzz_shard — libFuzzer target for the token shard reader
 * (src/train/data/tokens.c, the production code, built with ASan and UBSan).
 *
 * One input: a byte b, then shard bytes. The sequence length is 1 + (b & 63);
 * with b & 0x80 a little-endian u16 follows, and the shard bytes are cut in
 * two files there (a set of two shards). They are written to a scratch
 * directory and opened with sym_tokens_open, as `symtrain train --data GLOB`
 * does, memory-mapped. A set that opens must hold what it says: every window
 * of every shard is gathered (sym_tokens_gather) and each token is at most
 * the set's max_token, so a count that lied would read past the mapping and
 * the sanitizer would stop here. A set that is refused must say why.
 *
 * Seeds: tests/fuzz/seeds/shard (valid shards; a lying count; cut short).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <symtrain/data.h>
#include <symtrain/error.h>

#include "fuzz.h"

static char pattern[320];

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    const char *names[2] = {"train_000.bin", "train_001.bin"};
    fuzz_scratch("fuzz_shard", names);
    snprintf(pattern, sizeof pattern, "%s/train_*.bin", fuzz_dir);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 2) return 0;
    int seq = 1 + (data[0] & 63), two = data[0] & 0x80;
    const uint8_t *p = data + 1;
    size_t n = size - 1, cut = n;
    if (two) {
        if (n < 2) return 0;
        cut = (size_t)p[0] | (size_t)p[1] << 8;
        p += 2, n -= 2;
        if (cut > n) cut = n;
    }
    fuzz_put(0, p, cut);
    if (two)
        fuzz_put(1, p + cut, n - cut);
    else
        unlink(fuzz_file[1]);
    sym_tokens_t ts;
    int rc = sym_tokens_open(pattern, seq, &ts);
    if (rc) {
        if (!sym_last_error()[0]) abort(); /* a refusal says why */
        return 0;
    }
    if (ts.n < 1 || ts.nshards != (two ? 2 : 1)) abort();
    int32_t *in = malloc(sizeof(int32_t) * (size_t)seq), *tg = malloc(sizeof(int32_t) * (size_t)seq);
    if (!in || !tg) abort();
    for (int64_t i = 0; i < ts.n; i++) {
        sym_tokens_gather(&ts, &i, 1, in, tg);
        for (int j = 0; j < seq; j++)
            if (in[j] < 0 || in[j] > ts.max_token || tg[j] < 0 || tg[j] > ts.max_token) abort();
    }
    free(in);
    free(tg);
    sym_tokens_close(&ts);
    return 0;
}
