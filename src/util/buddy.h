/*
 * buddy.h — the symmetric heap's allocator: a binary buddy system over offsets.
 *
 * Blocks are powers of two from SYM_BUDDY_MIN bytes up, each aligned to its own
 * size (relative to offset 0). A request takes the smallest block that fits,
 * splitting larger ones; a free merges a block with its buddy while the buddy is
 * free and whole. Free blocks of each order sit on a LIFO list, so the result of
 * any sequence of calls depends only on that sequence: every PE that makes the
 * same calls gets the same offsets, with no communication.
 *
 * The bookkeeping lives in private memory (a hash of block offsets), never in
 * the heap, so a stray remote write cannot corrupt the allocator.
 */
#ifndef SYM_BUDDY_H
#define SYM_BUDDY_H

#include <stddef.h>
#include <stdint.h>

#define SYM_BUDDY_MIN_ORDER 6 /* 64-byte blocks: one cache line */
#define SYM_BUDDY_MIN ((size_t)1 << SYM_BUDDY_MIN_ORDER)
#define SYM_BUDDY_ORDERS 48

typedef struct {
    uint64_t off;  /* block start; SYM_BUDDY_EMPTY marks an empty slot */
    uint64_t prev; /* free-list neighbours (offsets), when the block is free */
    uint64_t next;
    uint8_t order; /* log2(size) */
    uint8_t free;
} sym_buddy_block_t;

typedef struct {
    size_t size;                          /* bytes managed, a multiple of SYM_BUDDY_MIN */
    size_t free_bytes;                    /* sum of free block sizes */
    uint64_t head[SYM_BUDDY_ORDERS];      /* free list heads; SYM_BUDDY_EMPTY if none */
    sym_buddy_block_t *tab;               /* open-addressing hash of blocks by offset */
    size_t cap, used;                     /* slots, and blocks in them */
} sym_buddy_t;

#define SYM_BUDDY_EMPTY UINT64_MAX

/* Manage [0, size). Returns 0, or -1 if out of memory. */
int sym_buddy_init(sym_buddy_t *b, size_t size);
void sym_buddy_fini(sym_buddy_t *b);
/* Offset of a block of at least `size` bytes aligned to `align` (a power of two),
 * or SYM_BUDDY_EMPTY when no block is large enough. size 0 is treated as 1. */
uint64_t sym_buddy_alloc(sym_buddy_t *b, size_t size, size_t align);
/* Release the block at `off`. Returns 0, or -1 if `off` is not an allocated block. */
int sym_buddy_free(sym_buddy_t *b, uint64_t off);
/* Size of the allocated block at `off`, or 0 if `off` is not allocated. */
size_t sym_buddy_block_size(const sym_buddy_t *b, uint64_t off);
/* The largest block a request could get now. */
size_t sym_buddy_largest_free(const sym_buddy_t *b);

#endif
