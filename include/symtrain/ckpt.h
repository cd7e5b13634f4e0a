/*
 * symtrain/ckpt.h — checkpoints: crash-safe directories written in the
 * background, and finding the newest good one.
 *
 * A checkpoint is a directory DIR/step-NNNNNNNN/ holding data files (model.bin,
 * optim.bin, ...) and manifest.json: the training position (step, epoch,
 * sample), RNG states, world size, model config, each file's size and
 * CRC32C, and a table of the tensors the files hold (name, dtype, shape, and
 * where in which file), so a reader finds "h.3.attn.c_attn.weight" without
 * knowing the model's layout; its last line is the CRC32C of the manifest
 * itself. It is written under a temporary name (files 0600, directories
 * 0700), every file and the directory fsync'd, then renamed into place and
 * the parent fsync'd: a crash leaves either a whole checkpoint or a temporary
 * directory that readers ignore. After each write the newest `keep`
 * checkpoints up to its step are kept and older ones removed; one of a later
 * step is never removed (it was not verified), nothing is removed through a
 * symbolic link, and only the files a checkpoint's manifest lists.
 *
 * sym_ckpt_save copies what it is given (an in-memory snapshot) and returns;
 * a background thread writes it, so training does not wait for the disk.
 */
#ifndef SYMTRAIN_CKPT_H
#define SYMTRAIN_CKPT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "tensor.h"

#define SYM_CKPT_MAX_FILES 4

/* One tensor stored in a checkpoint file: contiguous, little-endian. */
typedef struct {
    char name[80];       /* "wte", "exp_avg.h.0.ln_1.weight", ... */
    char file[32];       /* which data file */
    sym_dtype_t dtype;
    int ndim;
    int64_t shape[SYM_MAX_DIMS];
    uint64_t offset;     /* bytes into the file */
} sym_ckpt_tensor_t;

typedef struct {
    int64_t step;          /* optimizer steps taken */
    int64_t epoch;         /* the epoch the next step belongs to */
    int64_t sample;        /* samples of that epoch already consumed */
    int world_size;        /* PEs of the run that wrote it */
    int blas_threads;      /* per PE (the summation order of a product depends on it) */
    int global_batch;
    uint64_t seed;
    uint64_t data_key;     /* the permutation stream of `epoch` */
    uint64_t data_counter; /* its draws taken (the shuffle is whole) */
    uint64_t dropout_key;  /* the first dropout layer's stream; counter = step */
    char model[128];       /* "mlp:784-512-256-10" */
    char activation[16];
    float dropout;
    uint64_t params;
    char optimizer[16];
    uint64_t optim_steps;
    char dataset[64];
    int64_t train_samples;
    /* the schedule it ran under (0 when a checkpoint predates them) */
    double lr;                    /* peak learning rate */
    int64_t total_steps;          /* the schedule's length */
    /* load balancing (nshares 0: an even split): each PE's share of the
     * global batch for the next step, and the speeds it was drawn from */
    char balance[16];             /* the policy: "throughput", "score" */
    int nshares;                  /* = world_size, or 0 */
    int *shares;                  /* (nshares), summing to global_batch */
    double *speeds;               /* (nshares) smoothed samples/s */
    int ntensors;                 /* the tensor table (may be 0) */
    sym_ckpt_tensor_t *tensors;   /* writing: the caller's (copied by the writer, as
                                     shares and speeds are); reading: owned by the
                                     sym_ckpt_t */
} sym_ckpt_meta_t;

typedef struct {
    char name[32];     /* a plain file name: [A-Za-z0-9._-]+ */
    const void *data;
    size_t size;
    uint32_t crc32c;   /* filled in on load (and by the writer) */
} sym_ckpt_file_t;

/* ---- writing ---- */

/* Hold `dir` (created if missing) for this process alone: an exclusive flock
 * on dir/.lock, which says who holds it (host and pid). Another job holding it
 * is SYM_EBUSY, named; the lock goes with the process, or with
 * sym_ckpt_unlock. Returns the lock's descriptor in *fd. */
int sym_ckpt_lock(const char *dir, int *fd);
void sym_ckpt_unlock(int fd);

typedef struct sym_ckpt_writer sym_ckpt_writer_t; /* opaque */

/* Write into `dir` (created if missing), keeping the newest `keep` (>= 1). */
int sym_ckpt_writer_create(const char *dir, int keep, sym_ckpt_writer_t **out);
/* Snapshot meta and files and hand them to the writer thread. A save still in
 * progress is waited for first. A failed earlier save is returned by the next
 * sym_ckpt_save or sym_ckpt_wait (a SYM_E* code, sym_last_error saying what
 * went wrong), once, so failures are neither lost nor repeated; 0 otherwise. */
int sym_ckpt_save(sym_ckpt_writer_t *w, const sym_ckpt_meta_t *meta,
                  const sym_ckpt_file_t *files, int nfiles);
/* Wait until nothing is being written; 0, or a failure not yet returned. */
int sym_ckpt_wait(sym_ckpt_writer_t *w);
/* The path of the last checkpoint written completely ("" if none). */
const char *sym_ckpt_last_path(const sym_ckpt_writer_t *w);
/* What the writer thread has written: whole checkpoints and their data bytes
 * (the files, not the manifest), the seconds they took on disk (fsyncs
 * included), and failed saves. Any thread, any time; never waits for the disk. */
typedef struct {
    uint64_t saves, failures;
    double seconds, last_seconds;
    uint64_t bytes, last_bytes;
} sym_ckpt_stats_t;
sym_ckpt_stats_t sym_ckpt_writer_stats(sym_ckpt_writer_t *w);
/* Wait, stop the thread, free. */
void sym_ckpt_writer_destroy(sym_ckpt_writer_t *w);

/* The same, synchronously, in the calling thread: write one checkpoint
 * directory under `dir` and prune to `keep`. */
int sym_ckpt_write(const char *dir, int keep, const sym_ckpt_meta_t *meta,
                   const sym_ckpt_file_t *files, int nfiles, char *path, size_t path_len);

/* ---- reading ---- */

typedef struct {
    char path[4096];
    sym_ckpt_meta_t meta;
    int nfiles;
    sym_ckpt_file_t files[SYM_CKPT_MAX_FILES]; /* data owned by the checkpoint */
} sym_ckpt_t;

/* Read and verify one checkpoint directory: SYM_ECORRUPT when it is proven
 * damaged (the manifest's checksum, JSON or fields; a file's size or CRC32C; a
 * link, FIFO or directory where a file should be), SYM_ENOENT when it does not
 * exist, SYM_EIO when it cannot be read (the errno named: it may be good). */
int sym_ckpt_load(const char *path, sym_ckpt_t *out);
/* Load the newest checkpoint in `dir` that verifies. For each newer one that
 * is proven damaged (a step-* link or one named for another step too), report
 * (may be NULL) is called with a sentence naming it and the cause. One that
 * cannot be read stops the search: SYM_EIO (or SYM_ENOMEM), nothing older
 * taken. SYM_ECORRUPT when every checkpoint is damaged, SYM_ENOENT when there
 * is none. */
int sym_ckpt_load_latest(const char *dir, sym_ckpt_t *out,
                         void (*report)(void *user, const char *msg), void *user);
/* The step of the newest step-* directory in `dir` (not verified), or -1. */
int64_t sym_ckpt_newest_step(const char *dir);
/* The file named `name`, or NULL. */
const sym_ckpt_file_t *sym_ckpt_file(const sym_ckpt_t *ck, const char *name);
/* The tensor named `name` in the table, or NULL. */
const sym_ckpt_tensor_t *sym_ckpt_tensor(const sym_ckpt_t *ck, const char *name);
void sym_ckpt_release(sym_ckpt_t *ck);

#ifdef __cplusplus
}
#endif

#endif
