/*
 * parallel.h — element-wise loops spread over the PE's threads.
 *
 * A PE gets `sym__threads` threads (the BLAS thread count, --threads). Large
 * element-wise loops (activations, dropout, the optimizer update) are split
 * into up to that many contiguous ranges run by a small pool; idle pool
 * threads sleep rather than spin, so they never slow the BLAS threads that
 * share the cores. Every element is computed the same way whatever the split, so
 * results do not depend on the thread count.
 */
#ifndef SYM_TRAIN_PARALLEL_H
#define SYM_TRAIN_PARALLEL_H

#include <stddef.h>
#include <stdint.h>

extern int sym__threads;

/* Below this many elements a loop is not worth waking the pool for, and each
 * thread woken gets at least SYM_PAR_CHUNK of them. */
#define SYM_PAR_MIN 65536
#define SYM_PAR_CHUNK 65536

/* body(lo, hi, arg) for a split of [0, n) into contiguous ranges, in parallel
 * when the loop touches `work` >= SYM_PAR_MIN elements and there is more than
 * one thread (n counts items: elements, or rows of `work / n` elements). */
void sym__parallel_for(size_t n, size_t work, void (*body)(size_t lo, size_t hi, void *arg),
                       void *arg);
/* memset(p, 0, bytes), a large one on the threads: in a fresh process the
 * first touch of its pages is page faults (a gpt:d12 PE's parameters,
 * gradients and moments: 2 GiB), which the threads take side by side. */
void sym__parallel_zero(void *p, size_t bytes);
/* Memory known to be zero (fresh from the kernel) faulted in on the threads:
 * one store a page, so the kernel's zeroing is the only pass over it. */
void sym__parallel_touch(void *p, size_t bytes);
/* CRC32C of [p, p + len) (dst, when not NULL, gets a copy of it, made in the
 * same pass), on the threads: blocks checksummed side by side, their CRCs
 * joined in order (sym__crc32c_combine), so the result is sym__crc32c(0, ...)'s.
 * crc is the CRC of what comes before, as sym__crc32c's first argument. */
uint32_t sym__parallel_crc32c(uint32_t crc, void *dst, const void *p, size_t len);
/* memcpy(dst, src, len) on the threads. */
void sym__parallel_copy(void *dst, const void *src, size_t len);

#endif
