/*
 * mem.c — large allocations whose first touch is cheaper (util.h).
 *
 * A fresh process's gigabytes of optimizer state fault in 4 KiB at a time on
 * first touch (a restore writes them, or the first step): 1.2-1.3 s a GiB on
 * the 2-core development machine, 0.5-0.8 s with transparent huge pages. glibc
 * serves such a calloc from a fresh mmap whose pages are zero and untouched,
 * so asking for huge pages there changes nothing but the faults.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "util.h"

#define HUGE_PAGE (2u << 20)

void *sym__calloc_large(size_t n, size_t size) {
    void *p = calloc(n, size);
    size_t bytes = n * size; /* calloc has checked the product */
    if (!p || bytes < 4 * (size_t)HUGE_PAGE) return p;
    uintptr_t lo = ((uintptr_t)p + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1);
    uintptr_t hi = ((uintptr_t)p + bytes) & ~(uintptr_t)(HUGE_PAGE - 1);
    if (hi > lo) (void)madvise((void *)lo, hi - lo, MADV_HUGEPAGE); /* advice: may be refused */
    return p;
}
