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
/* The same, but a holder among the last attempt's PEs still ending
 * (SYMTRAIN_DYING_PIDS: killed, none of its threads runs) is not waited for:
 * *pending is 1 and the lock is taken by sym_ckpt_lock_finish(dir, *fd),
 * which waits for that end, before anything is written into dir. */
int sym_ckpt_lock_begin(const char *dir, int *fd, int *pending);
int sym_ckpt_lock_finish(const char *dir, int fd);
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

/* ---- sharded checkpoints (format 3): every PE writes its own slices ----
 *
 * A sharded checkpoint DIR/step-NNNNNNNN/ holds shard-PPPPP.bin, one per PE
 * of the run that wrote it (that PE's slices of every tensor, one after
 * another), and manifest.json: the same run fields as above, the layout
 * ("dp=4"), every global tensor (name, dtype, global shape) with the slices
 * that tile it (file, byte offset, start and count per dimension, CRC32C of
 * the slice), and every file with its size and CRC32C. Every PE's files are
 * written and fsync'd, the PEs agree that all are (a collective), and only
 * then PE 0 writes the manifest and renames the directory into place: a crash
 * anywhere leaves the previous checkpoint whole and the new one invisible.
 *
 * A tensor is described by its global shape and the box of it a PE holds
 * (sym_ckpt_slice_t, the same description sym_dtensor_t's placements give):
 * saving, each PE names the slices it writes; loading, each PE names the
 * slices it wants, in any layout, and reads only the stored slices that
 * overlap them (resharding on load). Replicated tensors (plain DP) are
 * written 1/N by each PE (sym_ckpt_slice_split) and read whole. */

#define SYM_CKPT_SHARDED_VERSION 3

typedef struct {
    char name[80];                /* the global tensor's name */
    sym_dtype_t dtype;
    int ndim;                     /* 1..SYM_MAX_DIMS */
    int64_t shape[SYM_MAX_DIMS];  /* the global shape */
    int64_t start[SYM_MAX_DIMS];  /* this slice's first index per dimension */
    int64_t count[SYM_MAX_DIMS];  /* its length per dimension (a 0 anywhere: empty) */
    void *data;                   /* the slice, row-major over count: read when saving,
                                     written when loading */
} sym_ckpt_slice_t;

/* Elements of the slice (the product of count). */
int64_t sym_ckpt_slice_elems(const sym_ckpt_slice_t *s);
/* The whole tensor: start 0, count = shape. */
void sym_ckpt_slice_whole(sym_ckpt_slice_t *s);
/* Part `part` of `nparts` of the tensor along dimension 0, in even blocks (the
 * first shape[0] % nparts one row longer): contiguous in memory, so a PE's
 * part of a replicated tensor is a pointer into it. May be empty. */
void sym_ckpt_slice_split(sym_ckpt_slice_t *s, int part, int nparts);

/* ---- sharded: saving (collective over SHMEM_TEAM_WORLD) ---- */

typedef struct sym_ckpt_dist sym_ckpt_dist_t; /* opaque */

/* Every PE: checkpoints into `dir`, keeping the newest `keep`; `layout` names
 * the run's layout in the manifest ("dp=4", "dp=2,tp=2"). */
int sym_ckpt_dist_create(const char *dir, int keep, const char *layout, sym_ckpt_dist_t **out);
/* Every PE, at the same step: hand this PE's slices (copied) to its writer
 * thread; meta is PE 0's (the run's fields; its tensor table is not used). A
 * save not yet committed is committed first (waiting for it). Returns a
 * failure of an earlier save once (sym_last_error says it), else 0. */
int sym_ckpt_dist_save(sym_ckpt_dist_t *d, const sym_ckpt_meta_t *meta,
                       const sym_ckpt_slice_t *slices, int n);
/* The same, the slices read on the writer thread after ready(user) (NULL:
 * they are ready), which runs there first: the slices and their data stay
 * the caller's, unchanged, until the save is no longer pending (the next
 * save, or a poll that finds it committed or failed). A snapshot copied
 * while training goes on (a GPU's, to pinned memory) is written so. */
int sym_ckpt_dist_save_later(sym_ckpt_dist_t *d, const sym_ckpt_meta_t *meta,
                             const sym_ckpt_slice_t *slices, int n, int (*ready)(void *),
                             void *user);
/* Every PE, e.g. after each step: when every PE's shard of the pending save
 * is written, PE 0 commits it (one small all-reduce while a save is pending,
 * nothing otherwise); `wait`: wait for the writers first. 0, or the failure
 * of the save (on the PE that saw it; the others return 0). */
int sym_ckpt_dist_poll(sym_ckpt_dist_t *d, int wait);
/* The last checkpoint committed ("" if none; PE 0 only). */
const char *sym_ckpt_dist_last_path(const sym_ckpt_dist_t *d);
sym_ckpt_stats_t sym_ckpt_dist_stats(sym_ckpt_dist_t *d);
/* Stop and free (collective). A save not committed stays invisible; the next
 * commit's pruning removes its staging directory. */
void sym_ckpt_dist_destroy(sym_ckpt_dist_t *d);

/* ---- sharded: reading (also reads format 2: each tensor one whole slice) ---- */

typedef struct sym_dckpt sym_dckpt_t; /* opaque */

/* Parse and check the manifest of checkpoint directory `path` (no data is
 * read): SYM_ECORRUPT when proven damaged, SYM_ENOENT, SYM_EIO as
 * sym_ckpt_load. */
int sym_dckpt_open(const char *path, sym_dckpt_t **out);
/* Every PE (collective): the newest checkpoint in `dir` whose files all
 * verify; each PE reads and checks the CRC32C of 1/N of the files, and a
 * damaged one is named (report, on the PE that found it) and the one before
 * it tried. Errors as sym_ckpt_load_latest, the same on every PE. */
int sym_dckpt_open_latest(const char *dir, sym_dckpt_t **out,
                          void (*report)(void *user, const char *msg), void *user);
/* The format (2 or 3) of the newest checkpoint in `dir` whose manifest
 * parses; 0 when there is none. Reads manifests only. */
int sym_ckpt_format(const char *dir);
/* One process alone: the newest checkpoint in `dir` whose files all verify
 * (each read whole); damaged ones are passed over. Errors as above. */
int sym_dckpt_open_newest(const char *dir, sym_dckpt_t **out);
/* Fill want->data (row-major over want->count) from the stored slices that
 * overlap want's box, each checked against its CRC32C as it is read.
 * SYM_EMISMATCH when the checkpoint has no such tensor or another dtype or
 * global shape; SYM_ECORRUPT when a slice is damaged or missing. */
int sym_dckpt_read(sym_dckpt_t *ck, sym_ckpt_slice_t *want);
/* Re-read file i whole and check its size and CRC32C (SYM_ECORRUPT naming it). */
int sym_dckpt_verify_file(sym_dckpt_t *ck, int i);
/* Check that the slices tile every tensor exactly (no gap, no overlap) and
 * each slice's CRC32C (format 3). */
int sym_dckpt_verify_slices(sym_dckpt_t *ck);
const char *sym_dckpt_path(const sym_dckpt_t *ck);
const sym_ckpt_meta_t *sym_dckpt_meta(const sym_dckpt_t *ck);
int sym_dckpt_version(const sym_dckpt_t *ck);       /* 2 or 3 */
const char *sym_dckpt_layout(const sym_dckpt_t *ck); /* "dp=4"; "single writer" (format 2) */
int sym_dckpt_num_tensors(const sym_dckpt_t *ck);
/* Tensor i: its name, dtype, global shape (start 0, count = shape, data NULL),
 * and how many stored slices tile it. */
int sym_dckpt_tensor(const sym_dckpt_t *ck, int i, sym_ckpt_slice_t *t, int *nslices);
int sym_dckpt_num_files(const sym_dckpt_t *ck);
/* File i: name, size, CRC32C, and the PE that wrote it (-1: format 2). */
void sym_dckpt_file(const sym_dckpt_t *ck, int i, const char **name, size_t *size,
                    uint32_t *crc32c, int *pe);
void sym_dckpt_close(sym_dckpt_t *ck);

#ifdef __cplusplus
}
#endif

#endif
