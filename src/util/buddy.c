/*
 * buddy.c — binary buddy allocator over offsets; see buddy.h for the contract.
 *
 * Blocks (free and allocated) live in one open-addressing hash keyed by offset,
 * linear probing with backward-shift deletion. A free block's list links are
 * offsets, looked up through the hash, so table growth never invalidates them.
 */
#include <stdlib.h>
#include <string.h>

#include "buddy.h"

/* ---- the block hash ---- */

static size_t slot_of(const sym_buddy_t *b, uint64_t off) {
    uint64_t h = (off >> SYM_BUDDY_MIN_ORDER) * 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 17) & (b->cap - 1);
}

static sym_buddy_block_t *find(const sym_buddy_t *b, uint64_t off) {
    for (size_t i = slot_of(b, off);; i = (i + 1) & (b->cap - 1)) {
        sym_buddy_block_t *e = &b->tab[i];
        if (e->off == off) return e;
        if (e->off == SYM_BUDDY_EMPTY) return NULL;
    }
}

static int grow(sym_buddy_t *b);

static sym_buddy_block_t *insert(sym_buddy_t *b, uint64_t off, int order, int is_free) {
    if ((b->used + 1) * 4 > b->cap * 3 && grow(b)) return NULL;
    size_t i = slot_of(b, off);
    while (b->tab[i].off != SYM_BUDDY_EMPTY) i = (i + 1) & (b->cap - 1);
    sym_buddy_block_t *e = &b->tab[i];
    e->off = off;
    e->order = (uint8_t)order;
    e->free = (uint8_t)is_free;
    e->prev = e->next = SYM_BUDDY_EMPTY;
    b->used++;
    return e;
}

static void erase(sym_buddy_t *b, sym_buddy_block_t *e) {
    size_t mask = b->cap - 1, i = (size_t)(e - b->tab), j = i;
    for (;;) {
        j = (j + 1) & mask;
        if (b->tab[j].off == SYM_BUDDY_EMPTY) break;
        size_t home = slot_of(b, b->tab[j].off);
        /* Move j back into the hole at i unless its home lies in (i, j]. */
        if (((j - home) & mask) >= ((j - i) & mask)) {
            b->tab[i] = b->tab[j];
            i = j;
        }
    }
    b->tab[i].off = SYM_BUDDY_EMPTY;
    b->used--;
}

static int grow(sym_buddy_t *b) {
    size_t ncap = b->cap ? b->cap * 2 : 64;
    sym_buddy_block_t *old = b->tab, *nt = malloc(ncap * sizeof *nt);
    if (!nt) return -1;
    for (size_t i = 0; i < ncap; i++) nt[i].off = SYM_BUDDY_EMPTY;
    size_t ocap = b->cap;
    b->tab = nt;
    b->cap = ncap;
    b->used = 0;
    for (size_t i = 0; i < ocap; i++)
        if (old[i].off != SYM_BUDDY_EMPTY) {
            sym_buddy_block_t *e = insert(b, old[i].off, old[i].order, old[i].free);
            e->prev = old[i].prev;
            e->next = old[i].next;
        }
    free(old);
    return 0;
}

/* ---- free lists ---- */

static void push_free(sym_buddy_t *b, sym_buddy_block_t *e) {
    e->free = 1;
    e->prev = SYM_BUDDY_EMPTY;
    e->next = b->head[e->order];
    if (e->next != SYM_BUDDY_EMPTY) find(b, e->next)->prev = e->off;
    b->head[e->order] = e->off;
    b->free_bytes += (size_t)1 << e->order;
}

static void unlink_free(sym_buddy_t *b, sym_buddy_block_t *e) {
    if (e->prev != SYM_BUDDY_EMPTY)
        find(b, e->prev)->next = e->next;
    else
        b->head[e->order] = e->next;
    if (e->next != SYM_BUDDY_EMPTY) find(b, e->next)->prev = e->prev;
    e->free = 0;
    b->free_bytes -= (size_t)1 << e->order;
}

/* ---- API ---- */

int sym_buddy_init(sym_buddy_t *b, size_t size) {
    memset(b, 0, sizeof *b);
    for (int k = 0; k < SYM_BUDDY_ORDERS; k++) b->head[k] = SYM_BUDDY_EMPTY;
    size &= ~(SYM_BUDDY_MIN - 1);
    b->size = size;
    if (grow(b)) return -1;
    /* Cover [0, size) with the binary decomposition of size, largest first: each
     * block's offset is a sum of larger powers of two, so it is aligned. */
    uint64_t off = 0;
    for (int k = SYM_BUDDY_ORDERS - 1; k >= SYM_BUDDY_MIN_ORDER; k--)
        if (size & ((size_t)1 << k)) {
            sym_buddy_block_t *e = insert(b, off, k, 0);
            if (!e) return -1;
            push_free(b, e);
            off += (uint64_t)1 << k;
        }
    return 0;
}

void sym_buddy_fini(sym_buddy_t *b) {
    free(b->tab);
    memset(b, 0, sizeof *b);
}

/* The order of the smallest block covering size and align; SYM_BUDDY_ORDERS
 * when none does (the loop never shifts past the largest order). */
static int order_for(size_t size, size_t align) {
    size_t need = size > align ? size : align;
    if (need < SYM_BUDDY_MIN) need = SYM_BUDDY_MIN;
    int k = SYM_BUDDY_MIN_ORDER;
    while (k < SYM_BUDDY_ORDERS && ((size_t)1 << k) < need) k++;
    return k;
}

uint64_t sym_buddy_alloc(sym_buddy_t *b, size_t size, size_t align) {
    if (size == 0) size = 1;
    if (align == 0) align = 1;
    /* Checked before any rounding: SIZE_MAX and its neighbours round to nothing. */
    if (size > b->size || align > b->size) return SYM_BUDDY_EMPTY;
    int k = order_for(size, align), j = k;
    if (k >= SYM_BUDDY_ORDERS) return SYM_BUDDY_EMPTY;
    while (j < SYM_BUDDY_ORDERS && b->head[j] == SYM_BUDDY_EMPTY) j++;
    if (j >= SYM_BUDDY_ORDERS) return SYM_BUDDY_EMPTY;
    uint64_t off = b->head[j];
    sym_buddy_block_t *e = find(b, off);
    unlink_free(b, e);
    while (j > k) { /* split: keep the lower half, free the upper */
        j--;
        e->order = (uint8_t)j;
        sym_buddy_block_t *hi = insert(b, off + ((uint64_t)1 << j), j, 0);
        if (!hi) return SYM_BUDDY_EMPTY; /* out of private memory: leave it be */
        push_free(b, hi);
        e = find(b, off); /* insert may have moved the table */
    }
    return off;
}

int sym_buddy_free(sym_buddy_t *b, uint64_t off) {
    sym_buddy_block_t *e = find(b, off);
    if (!e || e->free) return -1;
    int k = e->order;
    for (;;) {
        uint64_t buddy = off ^ ((uint64_t)1 << k);
        uint64_t lo = off < buddy ? off : buddy;
        if (lo + ((uint64_t)2 << k) > b->size) break;
        sym_buddy_block_t *be = find(b, buddy);
        if (!be || !be->free || be->order != k) break;
        /* The merged block keeps the lower entry; the upper one goes. Erasing
         * may move entries, so look the survivor up afterwards. */
        unlink_free(b, be);
        if (buddy < off) {
            erase(b, find(b, off));
            off = buddy;
        } else {
            erase(b, be);
        }
        e = find(b, off);
        k++;
        e->order = (uint8_t)k;
    }
    push_free(b, e);
    return 0;
}

size_t sym_buddy_block_size(const sym_buddy_t *b, uint64_t off) {
    sym_buddy_block_t *e = find(b, off);
    return (e && !e->free) ? (size_t)1 << e->order : 0;
}

size_t sym_buddy_largest_free(const sym_buddy_t *b) {
    for (int k = SYM_BUDDY_ORDERS - 1; k >= SYM_BUDDY_MIN_ORDER; k--)
        if (b->head[k] != SYM_BUDDY_EMPTY) return (size_t)1 << k;
    return 0;
}
