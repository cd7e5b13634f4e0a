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
 * PE would take.
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
                        uint8_t *y);

/* The block of `count` items that member `pe` of `npes` owns: count / npes
 * items, one more for pe < count % npes; blocks in PE order. */
void sym_shard_range(int64_t count, int npes, int pe, int64_t *offset, int64_t *len);

typedef struct {
    int64_t n;        /* samples in the data set */
    int global_batch; /* B */
    int npes, pe;
    uint64_t seed;
    int64_t epoch;    /* whose permutation perm holds; -1 before the first */
    uint64_t key;     /* that permutation's stream, and the draws it took */
    uint64_t draws;
    int64_t *perm;    /* (n) */
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
/* Global batches per epoch: ceil(n / B). */
int64_t sym_loader_steps_per_epoch(const sym_loader_t *l);

#ifdef __cplusplus
}
#endif

#endif
