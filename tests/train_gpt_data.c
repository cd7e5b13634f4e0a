/*
 * train_gpt_data — a GPT on real token shards, from text to samples, through
 * the CLI as a user runs it; and the data errors a user can make, each
 * refused with a message that names what is wrong (never a silent fallback to
 * the generated corpus when the user named the data).
 *
 *   tokenize   `symtrain tokenize text -o DIR` writes DIR/train_000000.bin and
 *              DIR/val_000000.bin (their headers give the token counts);
 *   train      2 PEs, 5 steps, --data 'DIR/train_*.bin': the validation split
 *              is found by itself (DIR/val_*.bin: the count of validation
 *              sequences printed is the val shard's, not the training one's);
 *   sample     `symtrain sample --ckpt CK --seed 3 --max-new-tokens 40` twice
 *              gives the same text, --seed 4 another;
 *   refused    (2 PEs, exit status not 0, the message said once) a training
 *              shard with a wrong magic, named; a validation shard cut short,
 *              named; --data or --val-data matching no file, the pattern
 *              named; byte tokens (up to 'z' = 122) for a model of V=64.
 */
#include "train_e2e.h"

#define MODEL "--model gpt:L=2,C=32,H=2,V=256,T=32 --seq 32"
#define TRAIN "--batch 8 --max-steps 5 --threads 1 --lr 0.01 --warmup-steps 1"

/* About 24 KB of text: sentences of a few hundred words, lines of 60-odd
 * columns. Pure ASCII, so every byte token is below 128. */
static void write_text(const char *path) {
    static const char *const words[] = {
        "the", "king", "queen", "walks", "to", "castle", "and", "sees", "a", "river", "under",
        "moon", "while", "fox", "runs", "over", "hill", "with", "old", "shepherd", "who", "sings",
        "of", "stars", "in", "night", "bright", "cold", "wind", "tells", "story", "long", "ago",
        "brave", "knight", "rides", "through", "forest", "green", "quiet", "village", "sleeps"};
    const int nw = (int)(sizeof words / sizeof *words);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL, "cannot create %s: %s", path, strerror(errno));
    uint64_t x = 12345;
    size_t total = 0;
    int col = 0, in_sentence = 0;
    while (total < 24000) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        const char *w = words[(x >> 33) % (uint64_t)nw];
        char word[32];
        snprintf(word, sizeof word, "%s", w);
        if (!in_sentence) word[0] = (char)(word[0] - 'a' + 'A');
        in_sentence = 1;
        int end = (x >> 20) % 9 == 0;
        int n = fprintf(f, "%s%s%s", col ? " " : "", word, end ? "." : "");
        CHECK(n > 0, "cannot write %s", path);
        total += (size_t)n;
        col += n;
        if (end) in_sentence = 0;
        if (col > 60) {
            fputc('\n', f);
            total++;
            col = 0;
        }
    }
    fputc('\n', f);
    CHECK(fclose(f) == 0, "cannot write %s", path);
}

/* The token count in a shard's header (int32 little-endian at byte 8). */
static long shard_tokens(const char *path) {
    size_t len;
    unsigned char *b = (unsigned char *)e2e_read(path, &len);
    CHECK(b != NULL && len >= 1024, "%s is missing or shorter than a shard header", path);
    long n = (long)((uint32_t)b[8] | (uint32_t)b[9] << 8 | (uint32_t)b[10] << 16 |
                    (uint32_t)b[11] << 24);
    CHECK(len == 1024 + 2 * (size_t)n, "%s: %zu bytes for %ld tokens", path, len, n);
    free(b);
    return n;
}

static void copy_file(const char *from, const char *to, size_t cut) {
    size_t len;
    char *b = e2e_read(from, &len);
    CHECK(b != NULL, "cannot read %s", from);
    FILE *f = fopen(to, "wb");
    CHECK(f != NULL, "cannot create %s", to);
    CHECK(fwrite(b, 1, len - cut, f) == len - cut && fclose(f) == 0, "cannot write %s", to);
    free(b);
}

/* A training run that must fail: exit status not 0, `needle` said exactly
 * once, and no fallback to the generated corpus. */
static void refused(const char *what, const char *needle, const char *needle2, const char *args) {
    const char *log = e2e_path("refused.log");
    e2e_proc_t p = e2e_start(2, NULL, NULL, log, args);
    int rc = e2e_wait(&p);
    int ok = rc != 0 && rc < 128 && e2e_count(log, needle) == 1 &&
             (!needle2 || e2e_log_has(log, needle2)) && !e2e_log_has(log, "generated");
    if (!ok) e2e_show(log);
    CHECK(rc != 0 && rc < 128, "%s: symtrain train %s exited %d, expected a failure", what, args, rc);
    CHECK(e2e_count(log, needle) == 1, "%s: the output says \"%s\" %d times, expected once", what,
          needle, e2e_count(log, needle));
    CHECK(!needle2 || e2e_log_has(log, needle2), "%s: the output does not say \"%s\"", what,
          needle2);
    CHECK(!e2e_log_has(log, "generated"), "%s: fell back to the generated corpus", what);
    printf("  %-34s exit %d: %s\n", what, rc, needle);
}

int main(int argc, char **argv) {
    e2e_init(argc, argv, "train_gpt_data");
    char args[4096];

    /* text -> shards */
    const char *text = e2e_path("story.txt"), *sh = e2e_path("tinytext");
    write_text(text);
    const char *log = e2e_path("tokenize.log");
    int rc = e2e_sh(log, "'%s' tokenize '%s' -o '%s'", e2e_symtrain, text, sh);
    if (rc) e2e_show(log);
    CHECK(rc == 0, "symtrain tokenize exited %d", rc);
    long ntrain = shard_tokens(e2e_path("tinytext/train_000000.bin"));
    long nval = shard_tokens(e2e_path("tinytext/val_000000.bin"));
    long wtrain = (ntrain - 1) / 32, wval = (nval - 1) / 32;
    CHECK(wval > 0 && wval < 256 && wtrain > 256,
          "%ld training and %ld validation tokens: the check below needs fewer than 256 "
          "validation windows and more than 256 training ones", ntrain, nval);
    printf("train_gpt_data: tokenized %ld + %ld bytes into %s\n", ntrain, nval, sh);

    /* train on them; the validation shards found from the training pattern */
    const char *ck = e2e_path("ck");
    log = e2e_path("train.log");
    snprintf(args, sizeof args, MODEL " " TRAIN " --data %s/train_*.bin --ckpt-dir %s", sh, ck);
    e2e_run(2, NULL, NULL, log, 0, args);
    char want[256];
    snprintf(want, sizeof want, "tinytext: %ld training / %ld validation sequences of 32 tokens",
             wtrain, wval);
    e2e_expect_log(log, want);
    e2e_expect_log(log, "validation loss ");
    CHECK(!e2e_log_has(log, "generated") && !e2e_log_has(log, "no validation shards"),
          "the run on shards fell back to generated data or found no validation shards");
    CHECK(e2e_newest(ck, NULL, 0) == 5, "the run on shards ended at step %lld, expected 5",
          e2e_newest(ck, NULL, 0));
    printf("train_gpt_data: 5 steps on %ld training / %ld validation sequences from the shards\n",
           wtrain, wval);

    /* sampling: a pure function of the checkpoint, prompt and seed */
    const char *out[3] = {e2e_path("s3a.txt"), e2e_path("s3b.txt"), e2e_path("s4.txt")};
    const int seeds[3] = {3, 3, 4};
    size_t len[3];
    char *s[3];
    for (int i = 0; i < 3; i++) {
        rc = e2e_sh(out[i], "'%s' sample --ckpt '%s' --seed %d --max-new-tokens 40", e2e_symtrain,
                    ck, seeds[i]);
        if (rc) e2e_show(out[i]);
        CHECK(rc == 0, "symtrain sample --seed %d exited %d", seeds[i], rc);
        s[i] = e2e_read(out[i], &len[i]);
        CHECK(s[i] != NULL, "cannot read %s", out[i]);
        /* the prompt "\n", 40 byte tokens, "\n" */
        CHECK(len[i] == 42 && s[i][0] == '\n' && s[i][41] == '\n',
              "symtrain sample --seed %d printed %zu bytes, expected 42:\n%s", seeds[i], len[i],
              s[i]);
    }
    CHECK(len[0] == len[1] && !memcmp(s[0], s[1], len[0]),
          "two samples with --seed 3 differ:\n%s\n---\n%s", s[0], s[1]);
    CHECK(len[0] != len[2] || memcmp(s[0], s[2], len[0]), "--seed 3 and --seed 4 gave the same "
          "sample:\n%s", s[0]);
    printf("train_gpt_data: symtrain sample --seed 3 twice: the same 40 tokens; --seed 4: others\n");
    for (int i = 0; i < 3; i++) free(s[i]);

    /* what is refused */
    printf("train_gpt_data: refused:\n");
    mkdir(e2e_path("bad"), 0755);
    copy_file(e2e_path("tinytext/train_000000.bin"), e2e_path("bad/train_000000.bin"), 0);
    {
        FILE *f = fopen(e2e_path("bad/train_000000.bin"), "r+b");
        CHECK(f && fwrite("BAD!", 1, 4, f) == 4 && fclose(f) == 0, "cannot damage the shard");
    }
    char needle[1024];
    snprintf(args, sizeof args, MODEL " " TRAIN " --data %s", e2e_path("bad/train_*.bin"));
    snprintf(needle, sizeof needle, "%s is not a token shard", e2e_path("bad/train_000000.bin"));
    refused("a training shard's magic wrong", needle, NULL, args);

    mkdir(e2e_path("short"), 0755);
    copy_file(e2e_path("tinytext/train_000000.bin"), e2e_path("short/train_000000.bin"), 0);
    copy_file(e2e_path("tinytext/val_000000.bin"), e2e_path("short/val_000000.bin"), 7);
    snprintf(args, sizeof args, MODEL " " TRAIN " --data %s", e2e_path("short/train_*.bin"));
    snprintf(needle, sizeof needle, "%s is truncated", e2e_path("short/val_000000.bin"));
    refused("a validation shard cut short", needle, NULL, args);

    snprintf(args, sizeof args, MODEL " " TRAIN " --data %s", e2e_path("nothing/train_*.bin"));
    snprintf(needle, sizeof needle, "no token shards match %s", e2e_path("nothing/train_*.bin"));
    refused("--data matching nothing", needle, NULL, args);

    snprintf(args, sizeof args, MODEL " " TRAIN " --data %s/train_*.bin --val-data %s", sh,
             e2e_path("nothing/val_*.bin"));
    snprintf(needle, sizeof needle, "no token shards match %s", e2e_path("nothing/val_*.bin"));
    refused("--val-data matching nothing", needle, NULL, args);

    snprintf(args, sizeof args,
             "--model gpt:L=2,C=32,H=2,V=64,T=32 " TRAIN " --data %s/train_*.bin", sh);
    refused("byte tokens for a V=64 model", "has a vocabulary of 64", "the token data holds token ",
            args);

    e2e_cleanup();
    printf("train_gpt_data: ok\n");
    return 0;
}
