/*
 * peer.h — in-memory snapshots on buddy PEs, restored after a restart without
 * the disk (see peer.c for the stores' layout and the consistency rule).
 *
 * At a snapshot every PE writes its shard of the training state (its 1/N
 * slice of every tensor, the position and RNG fields of a checkpoint's meta)
 * into its own region of its host's snapshot store and a copy to its buddy:
 * on one host the next PE ((me + 1) % N), written straight into its region;
 * with the PEs on several hosts (each with its `symtrain memstore` holder) a
 * PE of the next host, the copy put through the symmetric heap, so that one
 * host's loss leaves a copy of every shard. A store is a memory file symrun,
 * or the host's holder, creates once and holds for the job's whole life,
 * restarts included (SYMTRAIN_MEMCKPT_FD, SYMTRAIN_MEMCKPT_SOCKET): a PE's
 * death loses nothing of it; nothing has a name in /dev/shm or /tmp.
 *
 * After a restart the PEs take the newest snapshot of which every shard still
 * has a complete copy (its own, else the buddy's, on whichever host), each
 * copy checked by its generation number (written last) and CRC32C, so a
 * half-written one is never loaded; with none, the caller falls back to the
 * disk.
 *
 * Every call but sym_peer_read and sym_peer_describe is collective over
 * SHMEM_TEAM_WORLD.
 */
#ifndef SYM_TRAIN_CKPT_PEER_H
#define SYM_TRAIN_CKPT_PEER_H

#include <stddef.h>

#include <symtrain/ckpt.h>

typedef struct sym_peer sym_peer_t; /* opaque */

/* Map the job's snapshot store (its host's) for shards of up to `bytes` bytes
 * (the largest over the PEs is taken) and `nshares` balancer shares. SYM_ENOENT
 * on every PE when a PE has none (neither symrun's nor a holder's): checkpoints
 * then go to the disk alone. */
int sym_peer_open(size_t bytes, int nshares, sym_peer_t **out);

/* This PE's snapshot: `slices` (their bytes, one after another) and meta (its
 * shares and speeds too) into its own region, then into its buddy's copy
 * region; a barrier ends it, after which it is the newest complete snapshot.
 * The previous one stays whole until then. n < 0: this PE could not build its
 * slices (it takes part in the barrier, and every PE's save fails). */
int sym_peer_save(sym_peer_t *p, const sym_ckpt_meta_t *meta, const sym_ckpt_slice_t *slices,
                  int n);

/* The newest snapshot every PE's shard has a good copy of (the same on every
 * PE): its meta into *meta (shares and speeds owned by p). SYM_ENOENT when
 * there is none; `report` (may be NULL) is then called on PE 0 with why, e.g.
 * which shard lost both copies. */
int sym_peer_find(sym_peer_t *p, sym_ckpt_meta_t *meta,
                  void (*report)(void *user, const char *msg), void *user);

/* Local, after sym_peer_find (until the next save): PE `pe`'s shard into
 * `slices` (the slices PE `pe` saved, in the same order; with prefix, the
 * first n of them); across hosts a one-sided get from PE `pe`'s restore
 * window. SYM_EMISMATCH when their sizes differ. */
int sym_peer_read(sym_peer_t *p, int pe, const sym_ckpt_slice_t *slices, int n, int prefix);

/* Local, after sym_peer_find: where the chosen copy of PE `pe`'s shard lay,
 * for the log (pe's own region, or its buddy's): "own copy",
 * "from its buddy PE 3's copy"; across hosts "own memory (host 0 (name))" or
 * "from the buddy on host 1 (name) (PE 3's copy)". */
void sym_peer_describe(const sym_peer_t *p, int pe, char *out, size_t len);

void sym_peer_close(sym_peer_t *p);

#endif
