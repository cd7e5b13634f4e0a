/*
 * ckpt_internal.h — what ckpt.c (one writer, format 2) shares with shard.c and
 * dist.c (every PE writes its shards, format 3): the crash-safe file helpers,
 * the manifest's common fields and checksum, removal, publishing and pruning.
 */
#ifndef SYM_TRAIN_CKPT_INTERNAL_H
#define SYM_TRAIN_CKPT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <symtrain/ckpt.h>

#include "internal.h"

#define SYM_CKPT_MANIFEST "manifest.json"

/* Files 0600, written, fsync'd, closed; SYM_EIO naming the path and errno. */
int sym__ckpt_write_file(const char *path, const void *data, size_t len);
int sym__ckpt_fsync_dir(const char *path);
/* The whole of `name` in directory dfd (see ckpt.c: SYM_ECORRUPT only for
 * what damage explains, SYM_ENOENT, else SYM_EIO); `expect` SIZE_MAX: any
 * size up to `limit`. *data malloc'd, NUL-terminated. */
int sym__ckpt_read_file_at(int dfd, const char *name, const char *path, size_t expect,
                           size_t limit, void **data, size_t *len);
int sym__ckpt_mkdir_p(const char *dir);
int sym__ckpt_join(char *out, size_t len, const char *dir, const char *name);
int sym__ckpt_valid_name(const char *s);              /* [A-Za-z0-9._-]+, not . or .. */
int sym__ckpt_is_shard_name(const char *s);           /* shard-NNNNN.bin / .json */
int sym__ckpt_list_steps(const char *dir, int64_t **steps, int *n); /* newest first */

/* The manifest: the fields every format shares (ending ",\n"), then the
 * format's own, then the seal (its own CRC32C, the last line). */
void sym__ckpt_meta_json(sym_jbuf_t *b, const sym_ckpt_meta_t *m, int version);
void sym__ckpt_seal_json(sym_jbuf_t *b);
int sym__ckpt_parse_meta(const char *path, const char *text, size_t len, const sym_json_t *j,
                         sym_ckpt_meta_t *m, int *version);
int sym__ckpt_parse_file(const char *path, const sym_json_t *f, char *name, size_t name_len,
                         size_t *size, uint32_t *crc32c);

/* Remove checkpoint directory dir/name (what its manifest lists, or `known`
 * and shard files); rename dir/tmp_name to dir/step-N (swapping out one of the
 * same step), fsync dir, prune to `keep` (see ckpt.c). */
void sym__ckpt_remove(const char *dir, const char *name, const sym_ckpt_file_t *known, int nknown);
int sym__ckpt_prune(const char *dir, int keep, int64_t written, const sym_ckpt_file_t *files,
                    int nfiles);
int sym__ckpt_publish(const char *dir, const char *tmp_name, int64_t step, int keep,
                      const sym_ckpt_file_t *known, int nknown, char *out_path, size_t out_len);

/* The writer thread writing one PE's shard files into dir/stage (no manifest,
 * no rename: the commit is PE 0's, after every PE's are written). files[0]'s
 * data is malloc'd and the writer takes it (no second copy of the shard); the
 * others are copied. Returns a failed earlier save once, like sym_ckpt_save. */
int sym__ckpt_save_files(sym_ckpt_writer_t *w, const char *stage, const sym_ckpt_file_t *files,
                         int nfiles);
/* The same, the files made on the writer thread: build(user, files, &n)
 * fills at most SYM_CKPT_MAX_FILES files whose data are malloc'd (the writer
 * takes them), or fails the save. */
int sym__ckpt_save_shard_later(sym_ckpt_writer_t *w, const char *stage,
                               int (*build)(void *, sym_ckpt_file_t *, int *), void *user);
/* 1 while a save is being written (never waits for it). */
int sym__ckpt_busy(sym_ckpt_writer_t *w);
/* 1 while the latest sym_ckpt_dist_save is not committed (alike on every PE). */
int sym__ckpt_dist_pending(const sym_ckpt_dist_t *d);
/* 1 when this PE's own shard of the latest save could not be written. */
int sym__ckpt_dist_local_failed(const sym_ckpt_dist_t *d);
/* Test hook (async.c): SYMTRAIN_TEST_CKPT_WRITE_DELAY_MS=N makes every
 * checkpoint write pause N ms once its data files are written, before its
 * manifest (or, for a shard, before the directory's fsync), so a test can
 * signal or kill the job while a write is in flight; on the job's first
 * attempt only (SYMTRAIN_RESTART_COUNT unset or 0). */
void sym__ckpt_test_delay(void);

/* The sharded format (shard.c): PE `pe`'s files of a save, built from its
 * slices: shard-PPPPP.bin (the slices' bytes, one after another) and
 * shard-PPPPP.json (which slice lies where, with CRC32Cs). */
int sym__ckpt_shard_files(int pe, const sym_ckpt_slice_t *slices, int n, void **bin,
                          size_t *bin_len, sym_jbuf_t *index);
/* PE 0, after every PE's shard files are in dir/stage: one manifest of all
 * slices (checked to tile every tensor), committed by rename. */
int sym__ckpt_commit(const char *dir, const char *stage, int keep, const sym_ckpt_meta_t *meta,
                     int npes, const char *layout, char *out_path, size_t out_len);
/* Open checkpoint directory `path` (found by scanning: a link is damage),
 * check it holds `step`, and verify files part, part + nparts, ... */
int sym__dckpt_check(const char *path, int64_t step, int part, int nparts, sym_dckpt_t **out);

#endif
