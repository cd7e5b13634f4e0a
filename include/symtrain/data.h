/*
 * symtrain/data.h — data sets and the sharded loader.
 *
 * Data sets hold images as bytes (n, dim) and labels (n); a batch is turned
 * into normalised fp32 when it is gathered. Two sources:
 *   - Fashion-MNIST IDX files, gzip or plain (the Debian package
 *     dataset-fashion-mnist puts them in SYM_FASHION_MNIST_DIR);
 *   - a generated data set of the same shape, for machines without it.
 *
 * The loader: every epoch has a permutation of the training set that depends
 * only on (seed, epoch). An epoch is cut into global batches of B samples (the
 * last one may be short); each PE takes its contiguous block of every global
 * batch (sym_shard_range), so every sample is used exactly once per epoch
 * across the PEs, and the PEs' blocks put side by side are the batch a single
 * PE would take. With load balancing the blocks are uneven (shares, below):
 * still contiguous, in PE order, covering the same global batch.
 */
#ifndef SYMTRAIN_DATA_H
#define SYMTRAIN_DATA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SYM_FASHION_MNIST_DIR "/usr/share/datasets/fashion-mnist"
#define SYM_FASHION_MNIST_PACKAGE "dataset-fashion-mnist"

typedef struct {
    char name[64];     /* "fashion-mnist" or "generated" */
    int64_t n;         /* samples */
    int dim;           /* bytes per sample (28 * 28) */
    int classes;
    uint8_t *pixels;   /* (n, dim) */
    uint8_t *labels;   /* (n) */
    float mean, std;   /* normalisation: x = (pixel / 255 - mean) / std */
} sym_dataset_t;

/* Load the training (train != 0) or test split from `dir`. SYM_ENOENT when the
 * files are not there (the message says how to install them); SYM_ECORRUPT,
 * naming the file, when one is damaged, truncated or of the wrong kind. The
 * normalisation is set from the split's own pixels: a test split should then
 * take the training split's mean and std. */
int sym_dataset_load_fashion(const char *dir, int train, sym_dataset_t *out);
/* Set ds->mean and ds->std from its pixels (as fractions of 255). */
void sym_dataset_set_stats(sym_dataset_t *ds);
/* A generated 10-class set of 28x28 images, n samples, a pure function of
 * (seed, split): class templates are shared between the splits, samples are not. */
int sym_dataset_generate(int64_t n, uint64_t seed, int train, sym_dataset_t *out);
/* Keep only the first n samples (n <= ds->n). */
void sym_dataset_truncate(sym_dataset_t *ds, int64_t n);
void sym_dataset_free(sym_dataset_t *ds);
/* x (count, dim) normalised, y (count) for samples idx[0..count). */
void sym_dataset_gather(const sym_dataset_t *ds, const int64_t *idx, int count, float *x,
                        int32_t *y);

/* The block of `count` items that member `pe` of `npes` owns: count / npes
 * items, one more for pe < count % npes; blocks in PE order. */
void sym_shard_range(int64_t count, int npes, int pe, int64_t *offset, int64_t *len);

/* Shares: how many samples of a global batch each PE computes.
 *
 * sym_shares_apportion: integer counts out[0..npes) summing to `total`, each
 * in [lo, cap], near proportional to weight[]: the proportional counts rounded
 * down, then one sample at a time added where max(out[p] / weight[p]) (the
 * step time, when weight is a speed) grows least, ties to the lower PE. A
 * pure function of its arguments, so every
 * PE computes the same counts. Needs lo * npes <= total <= cap * npes.
 *
 * sym_shares_scale: the counts of a full batch (shares, summing to B) for a
 * batch of gsize samples (the epoch's short last one): apportioned in
 * proportion to shares with at least one each; the even split (as
 * sym_shard_range) when gsize < npes. gsize == B gives shares back. */
void sym_shares_apportion(const double *weight, int npes, int total, int lo, int cap, int *out);
void sym_shares_scale(const int *shares, int npes, int gsize, int *out);

typedef struct {
    int64_t n;        /* samples in the data set */
    int global_batch; /* B */
    int npes, pe;
    uint64_t seed;
    int64_t epoch;    /* whose permutation perm holds; -1 before the first */
    uint64_t key;     /* that permutation's stream, and the draws it took */
    uint64_t draws;
    int64_t *perm;    /* (n) */
    int *scaled;      /* (npes) scratch: shares of a short batch */
} sym_loader_t;

typedef struct {
    int64_t start;  /* first sample of the global batch in the epoch's order */
    int gsize;      /* the global batch's size: min(B, n - start) */
    int row0;       /* this PE's first row within the global batch */
    int count;      /* this PE's rows */
    int64_t *idx;   /* (count) sample indices, inside the loader's perm */
} sym_batch_t;

int sym_loader_init(sym_loader_t *l, int64_t n, int global_batch, int npes, int pe,
                    uint64_t seed);
void sym_loader_free(sym_loader_t *l);
/* Make `epoch`'s permutation current (Fisher-Yates from the (seed, epoch) stream). */
void sym_loader_set_epoch(sym_loader_t *l, int64_t epoch);
/* This PE's share of the global batch that starts at sample `start` of the
 * current epoch (0 <= start < n). */
sym_batch_t sym_loader_batch(const sym_loader_t *l, int64_t start);
/* The same with uneven shares (npes counts summing to B; NULL: the even
 * split): PE p takes the block after PEs 0..p-1's, of its share of the batch
 * (scaled by sym_shares_scale when the batch is short). Which samples a step
 * holds is unchanged; which PE computes each is a pure function of (seed,
 * epoch, start, shares). */
sym_batch_t sym_loader_batch_shares(sym_loader_t *l, int64_t start, const int *shares);
/* The same for a batch of `size` samples in place of B (a micro-batch of a
 * step, --accum): min(size, n - start) samples from start, split by the
 * shares as scaled to them (NULL: evenly). */
sym_batch_t sym_loader_micro_batch(sym_loader_t *l, int64_t start, int size, const int *shares);
/* Global batches per epoch: ceil(n / B). */
int64_t sym_loader_steps_per_epoch(const sym_loader_t *l);

/* ---- token data: llm.c's shard format ----
 *
 * A shard file is a header of 256 little-endian int32 (magic 20240520,
 * version 1, token count, the rest 0) followed by that many uint16 tokens;
 * shards written by llm.c's scripts (GPT-2 BPE) load unchanged. A token set
 * is the shards a glob pattern names (sorted by name), memory-mapped, or
 * tokens held in memory. Its samples are windows of seq + 1 tokens starting
 * every seq tokens inside one shard (a window never straddles two): sample
 * i's inputs are tokens [s, s + seq) and its targets [s + 1, s + seq + 1).
 * The sharded loader above draws these samples as it draws images.
 */
#define SYM_SHARD_MAGIC 20240520
#define SYM_SHARD_VERSION 1
#define SYM_SHARD_HEADER_INTS 256

typedef struct {
    char path[4096];        /* "" for tokens in memory */
    const uint16_t *tok;    /* (ntok) */
    int64_t ntok;
    int64_t first;          /* the set's index of this shard's first sample */
    int64_t nsamples;       /* (ntok - 1) / seq */
    void *map;              /* the mapping (or the memory owned), and its length */
    size_t map_len;
} sym_shard_t;

typedef struct {
    char name[64];          /* what the progress lines call it: the pattern's
                               directory name, or the name given for memory */
    int seq;                /* T */
    int nshards;
    sym_shard_t *shards;
    int64_t ntokens;        /* in all shards */
    int64_t n;              /* samples in all shards */
    int max_token;          /* the largest token present (to check a vocabulary) */
} sym_tokens_t;

/* Open every shard `pattern` (a glob) names, windows of `seq` tokens.
 * SYM_ENOENT when nothing matches (the message names the pattern and says
 * how to make shards: symtrain tokenize, or make data); SYM_ECORRUPT, naming
 * the file and what is wrong, for a wrong magic or version, a header whose
 * count disagrees with the file's length (truncated, or extra bytes), or a
 * file too short for a header; SYM_EINVAL when no shard holds seq + 1 tokens
 * (the message says how many the largest holds); SYM_EIO (with errno's text)
 * when a file cannot be read. */
int sym_tokens_open(const char *pattern, int seq, sym_tokens_t *out);
/* Tokens in memory as one shard (copied), named `name`. */
int sym_tokens_from_memory(const uint16_t *tok, int64_t ntok, int seq, const char *name,
                           sym_tokens_t *out);
void sym_tokens_close(sym_tokens_t *ts);
/* inp (count, seq) and tgt (count, seq) of samples idx[0..count) (each idx < n). */
void sym_tokens_gather(const sym_tokens_t *ts, const int64_t *idx, int count, int32_t *inp,
                       int32_t *tgt);

/* Write one shard: header + tokens, to a temporary name then renamed, so a
 * reader never sees half a file. SYM_EIO naming the path and the cause. */
int sym_shard_write(const char *path, const uint16_t *tok, int64_t ntok);

/* ---- text to tokens ---- */

/* Byte-level tokens (vocabulary 256) of the files, read in the order given,
 * joined with one '\n' between files: the last `val_fraction` of the bytes
 * (cut at a line start) go to DIR/val_000000.bin and the rest to
 * DIR/train_000000.bin, train_000001.bin, ... of at most shard_tokens each
 * (DIR is created). *ntrain and *nval (may be NULL) get the token counts.
 * SYM_ENOENT / SYM_EIO name a file that cannot be read or written; SYM_EINVAL
 * when the text is too short to split. */
int sym_tokenize_bytes(const char *const *files, int nfiles, const char *dir,
                       double val_fraction, int64_t shard_tokens, int64_t *ntrain,
                       int64_t *nval);
/* Byte-level decoding: tokens < 256 are bytes; others are written as
 * "<|N|>". Returns a malloc'd NUL-terminated string, or NULL (out of memory). */
char *sym_detokenize_bytes(const int32_t *tok, int64_t n);
/* One token's text by the same rule, into out (room for SYM_TOKEN_TEXT_MAX
 * bytes, not NUL-terminated): returns its length (1 for a byte). For printing
 * tokens as a sampler draws them. */
#define SYM_TOKEN_TEXT_MAX 24
int sym_detokenize_one(int32_t tok, char *out);

/* A generated English-like corpus of about `bytes` bytes, a pure function of
 * seed (words of a fixed vocabulary strung into sentences by a small random
 * grammar, so a model has structure to learn): for machines where the
 * Shakespeare corpus cannot be fetched. Returns a malloc'd NUL-terminated
 * string, or NULL. */
char *sym_corpus_generate(uint64_t seed, size_t bytes);

#ifdef __cplusplus
}
#endif

#endif
