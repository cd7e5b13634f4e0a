/*
 * heap.c — shmem_malloc and friends over the buddy allocator.
 *
 * The heap segment is [runtime slots | user heap]; the buddy allocator manages
 * the user heap. Allocation is collective: every PE makes the same calls with
 * the same arguments, so every PE's allocator returns the same offset without
 * talking. Each call ends in a barrier, as the standard requires, so the new
 * block is allocated everywhere before any PE can write to it remotely.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../util/buddy.h"
#include "runtime.h"

static sym_buddy_t heap;
static char *user_base;
static size_t in_use; /* heap.size - heap.free_bytes, for readers on other threads */

static void note_use(void) {
    __atomic_store_n(&in_use, heap.size - heap.free_bytes, __ATOMIC_RELAXED);
}

size_t sym__heap_in_use(void) { return __atomic_load_n(&in_use, __ATOMIC_RELAXED); }

void sym__heap_init(void) {
    user_base = sym__world.seg[SYM_SEG_HEAP].base + sym__rt.internal_size;
    if (sym_buddy_init(&heap, sym__rt.heap_user_size))
        sym__fatal("shmem_init", "out of memory for the heap's bookkeeping");
    note_use();
}

void sym__heap_fini(void) { sym_buddy_fini(&heap); }

/* The buddy block a request takes: the power of two covering size and align;
 * 0 when no size_t power of two covers it (SIZE_MAX, a negative int converted). */
static size_t block_for(size_t size, size_t align) {
    size_t need = size > align ? size : align, b = SYM_BUDDY_MIN;
    if (need > ((size_t)1 << (sizeof(size_t) * 8 - 1))) return 0;
    while (b < need) b <<= 1;
    return b;
}

static void exhausted(const char *fn, size_t size, size_t align) {
    char want[32], have[32], big[32], now[32], b32[32], blk[48], fix[96];
    /* Every PE fails the same way; one message is enough. */
    if (sym__world.me != 0) return;
    size_t b = block_for(size, align);
    const size_t mib = (size_t)1 << 20;
    /* What is in use now and the block, rounded up to a power of two: a buddy
     * heap that size has a free aligned block for the request beside what the
     * program holds (the same run, started again, asks the same), in MiB to
     * type back. */
    size_t used = heap.size - heap.free_bytes;
    size_t need = b && b <= SIZE_MAX / 4 - used ? block_for(used + b, mib) : 0;
    if (need) {
        snprintf(blk, sizeof blk, "needs a block of %s", sym__fmt_size(b, b32, sizeof b32));
        snprintf(fix, sizeof fix, "set SYMTRAIN_SYMMETRIC_SIZE=%zuM (now %s)", need / mib,
                 sym__fmt_size(sym__rt.heap_user_size, now, sizeof now));
    } else {
        snprintf(blk, sizeof blk, "is larger than any block can be");
        snprintf(fix, sizeof fix, "no SYMTRAIN_SYMMETRIC_SIZE holds it (now %s); check the size "
                 "passed", sym__fmt_size(sym__rt.heap_user_size, now, sizeof now));
    }
    sym__warn(fn, "symmetric heap exhausted: asked %s, %s free (largest block %s; the request %s); %s",
              sym__fmt_size(size, want, sizeof want),
              sym__fmt_size(heap.free_bytes, have, sizeof have),
              sym__fmt_size(sym_buddy_largest_free(&heap), big, sizeof big), blk, fix);
}

/* Allocate without the closing barrier; NULL on exhaustion (reported). */
static void *alloc_nobarrier(const char *fn, size_t size, size_t align) {
    uint64_t off = sym_buddy_alloc(&heap, size, align);
    if (off == SYM_BUDDY_EMPTY) {
        exhausted(fn, size, align);
        return NULL;
    }
    note_use();
    return user_base + off;
}

static uint64_t offset_of(const char *fn, void *ptr) {
    uintptr_t off = (uintptr_t)ptr - (uintptr_t)user_base;
    if (off >= sym__rt.heap_user_size || sym_buddy_block_size(&heap, off) == 0)
        sym__fatal(fn, "%p was not returned by shmem_malloc (or was already freed)", ptr);
    return off;
}

void *shmem_malloc(size_t size) {
    SYM_REQUIRE_INIT("shmem_malloc");
    void *p = size ? alloc_nobarrier("shmem_malloc", size, 1) : NULL;
    shmem_barrier_all();
    return p;
}

void *shmem_malloc_with_hints(size_t size, long hints) {
    (void)hints; /* every block already suits remote atomics and signals */
    SYM_REQUIRE_INIT("shmem_malloc_with_hints");
    void *p = size ? alloc_nobarrier("shmem_malloc_with_hints", size, 1) : NULL;
    shmem_barrier_all();
    return p;
}

void *shmem_calloc(size_t count, size_t size) {
    SYM_REQUIRE_INIT("shmem_calloc");
    void *p = NULL;
    if (count && size) {
        if (size > SIZE_MAX / count) {
            if (sym__world.me == 0)
                sym__warn("shmem_calloc", "%zu x %zu bytes overflows size_t", count, size);
        } else {
            p = alloc_nobarrier("shmem_calloc", count * size, 1);
            if (p) memset(p, 0, count * size);
        }
    }
    shmem_barrier_all();
    return p;
}

void *shmem_align(size_t alignment, size_t size) {
    SYM_REQUIRE_INIT("shmem_align");
    void *p = NULL;
    if (alignment == 0 || (alignment & (alignment - 1))) {
        if (sym__world.me == 0)
            sym__warn("shmem_align", "alignment %zu is not a power of two", alignment);
    } else if (size) {
        p = alloc_nobarrier("shmem_align", size, alignment);
    }
    shmem_barrier_all();
    return p;
}

void shmem_free(void *ptr) {
    SYM_REQUIRE_INIT("shmem_free");
    /* The barrier comes first: no PE may still be writing into the block. */
    shmem_barrier_all();
    if (ptr) {
        sym_buddy_free(&heap, offset_of("shmem_free", ptr));
        note_use();
    }
}

void *shmem_realloc(void *ptr, size_t size) {
    SYM_REQUIRE_INIT("shmem_realloc");
    if (!ptr) return shmem_malloc(size);
    if (!size) {
        shmem_free(ptr);
        return NULL;
    }
    uint64_t off = offset_of("shmem_realloc", ptr);
    size_t have = sym_buddy_block_size(&heap, off);
    shmem_barrier_all(); /* no PE may be writing the old block while it moves */
    if (size <= have) return ptr; /* the block already holds it */
    void *p = alloc_nobarrier("shmem_realloc", size, 1);
    if (p) {
        memcpy(p, ptr, have);
        sym_buddy_free(&heap, off);
        note_use();
    }
    shmem_barrier_all();
    return p;
}

/* ---- deprecated names ---- */

void *shmalloc(size_t size) { return shmem_malloc(size); }
void shfree(void *ptr) { shmem_free(ptr); }
void *shrealloc(void *ptr, size_t size) { return shmem_realloc(ptr, size); }
void *shmemalign(size_t alignment, size_t size) { return shmem_align(alignment, size); }
