/*
 * pool.c — memory pools for tensors: one region, carved up by the buddy
 * allocator of src/util/buddy.h.
 *
 * A private pool's region comes zeroed from the kernel (sym__calloc_large:
 * huge pages where it can), a symmetric pool's from shmem_align, so creating
 * and destroying one is collective. An allocation is handed out zeroed: past
 * the private region's high-water mark its pages are only faulted in (they
 * are zero, and untouched), below it and in symmetric pools written. Allocation inside
 * a pool is local, and deterministic: PEs that make the same calls in the same
 * order get the same offsets, so a tensor in a symmetric pool is itself
 * symmetric (same offset from the pool base on every PE).
 */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <symtrain/tensor.h>

#include "core/parallel.h"
#include "util/buddy.h"
#include "util/util.h"
#include "internal.h"

#define POOL_ALIGN 64

struct sym_pool {
    char name[32];
    char *base;
    void *alloc;   /* a private region's allocation (base: aligned up in it) */
    size_t fresh;  /* private: [fresh, size) never handed out (zero, untouched) */
    size_t size;
    int symmetric;
    sym_buddy_t buddy;
};

/* ---- creation ---- */

int sym_pool_create(const char *name, size_t bytes, int symmetric, sym_pool_t **out) {
    *out = NULL;
    sym_pool_t *p = calloc(1, sizeof *p);
    if (!p) return sym__error(SYM_ENOMEM, "out of memory creating pool '%s'", name);
    snprintf(p->name, sizeof p->name, "%s", name);
    size_t size = SYM_ALIGN_UP(bytes ? bytes : 1, SYM_BUDDY_MIN);
    p->size = size;
    p->symmetric = symmetric;
    if (symmetric) {
        p->base = shmem_align(POOL_ALIGN, size);
        if (!p->base) {
            char want[32];
            free(p);
            return sym__error(SYM_ENOMEM,
                              "the symmetric heap has no room for pool '%s' (%s); raise "
                              "SYMTRAIN_SYMMETRIC_SIZE as the line before says",
                              name, sym__fmt_size(size, want, sizeof want));
        }
    } else {
        p->alloc = sym__calloc_large(1, size + POOL_ALIGN);
        p->base = p->alloc ? (char *)(((uintptr_t)p->alloc + POOL_ALIGN - 1) &
                                      ~(uintptr_t)(POOL_ALIGN - 1))
                           : NULL;
        if (!p->base) {
            char want[32];
            free(p);
            return sym__error(SYM_ENOMEM, "out of memory for pool '%s' (%s)", name,
                              sym__fmt_size(size, want, sizeof want));
        }
    }
    if (sym_buddy_init(&p->buddy, size)) {
        if (symmetric)
            shmem_free(p->base);
        else
            free(p->alloc);
        free(p);
        return sym__error(SYM_ENOMEM, "out of memory for the bookkeeping of pool '%s'", name);
    }
    *out = p;
    return SYM_OK;
}

void sym_pool_destroy(sym_pool_t *p) {
    if (!p) return;
    sym_buddy_fini(&p->buddy);
    if (p->symmetric)
        shmem_free(p->base);
    else
        free(p->alloc);
    free(p);
}

/* ---- allocation ---- */

void *sym_pool_alloc(sym_pool_t *p, size_t bytes) {
    uint64_t off = sym_buddy_alloc(&p->buddy, bytes ? bytes : 1, POOL_ALIGN);
    if (off == SYM_BUDDY_EMPTY) {
        char want[32], have[32], big[32];
        sym__error(SYM_ENOMEM, "pool '%s' is full: asked %s, %s free (largest block %s)",
                   p->name, sym__fmt_size(bytes, want, sizeof want),
                   sym__fmt_size(p->buddy.free_bytes, have, sizeof have),
                   sym__fmt_size(sym_buddy_largest_free(&p->buddy), big, sizeof big));
        return NULL;
    }
    /* [lo, used) may hold earlier data: zeros written; [used, end) is fresh */
    size_t lo = (size_t)off, end = lo + bytes;
    size_t used = p->symmetric || p->fresh >= end ? end : p->fresh > lo ? p->fresh : lo;
    sym__parallel_zero(p->base + lo, used - lo);
    sym__parallel_touch(p->base + used, end - used);
    if (!p->symmetric && end > p->fresh) p->fresh = end;
    return p->base + off;
}

int sym_pool_free(sym_pool_t *p, void *ptr) {
    if (!ptr) return SYM_OK;
    uintptr_t off = (uintptr_t)ptr - (uintptr_t)p->base;
    if ((uintptr_t)ptr < (uintptr_t)p->base || off >= p->size ||
        sym_buddy_free(&p->buddy, off) != 0)
        return sym__error(SYM_EINVAL, "%p is not a live allocation of pool '%s'", ptr, p->name);
    return SYM_OK;
}

size_t sym_pool_size(const sym_pool_t *p) { return p->size; }
size_t sym_pool_free_bytes(const sym_pool_t *p) { return p->buddy.free_bytes; }
size_t sym_pool_used_bytes(const sym_pool_t *p) { return p->size - p->buddy.free_bytes; }

size_t sym_pool_block_bytes(const sym_pool_t *p, const void *ptr) {
    uintptr_t off = (uintptr_t)ptr - (uintptr_t)p->base;
    if ((uintptr_t)ptr < (uintptr_t)p->base || off >= p->size) return 0;
    return sym_buddy_block_size(&p->buddy, off);
}
int sym_pool_is_symmetric(const sym_pool_t *p) { return p->symmetric; }
void *sym_pool_base(const sym_pool_t *p) { return p->base; }
