/*
 * copy.c — the copy behind large same-host puts and gets.
 *
 * A copy whose buffers do not stay in a core's caches costs, with ordinary
 * stores, a read of every destination line before it is written.
 * Non-temporal (streaming) stores write whole lines straight to memory: they
 * copy up to twice as fast there (docs/performance.md), but 3-4x slower when
 * the buffers are cached, since every line then goes to memory and back. glibc
 * (2.36; rep movsb from 2112 bytes) switches to them itself, only above a
 * threshold derived from the cache sizes it computes, which a virtual machine
 * can make absurd: 41 MiB on the 2-CPU Xeon (ld.so --list-diagnostics) where a
 * 2 MiB copy already runs at memory speed, its L3 not delivering its 105 MiB;
 * 240 MiB on our 32 MiB-L3 AMD machine, where cached copies run at 47 GB/s up
 * to 4 MiB.
 *
 * So the threshold is measured: at the first copy of COPY_MEASURE_LO bytes
 * or more, this process times memcpy on cached buffers against streaming
 * stores, at each power of two from COPY_MEASURE_LO to COPY_MEASURE_HI (or
 * half the last-level cache, if smaller); streaming starts at the first size
 * where it is faster even on cached buffers, since past it caching buys
 * nothing. Where no size wins, the rule is half the last-level cache the
 * kernel reports.
 *
 * SYMTRAIN_COPY_NT_MIN replaces it with a fixed threshold (a size; 0 turns
 * streaming off), and nothing is measured then.
 *
 * Below the threshold streaming stores win 1.2-1.4x on buffers in memory and
 * lose 2-4x on cached ones, and a copy cannot tell which it has: a timed
 * probe of the source's first 4 KiB was tried and dropped, since the memory
 * traffic of the copy before it (a destination that a streamed copy left
 * uncached) makes a cached source look like memory, so one streamed copy led
 * to the next (docs/performance.md).
 *
 * The streaming loop ends with a store fence, so the copy is ordered before
 * whatever the caller stores next (a signal, a flag), as memcpy's is.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "util.h"

#if defined(__x86_64__)
#include <emmintrin.h>
#endif

size_t sym__copy_nt_min = SIZE_MAX;

/* The sizes measured, doubling from LO: 512 KiB already fills half of a
 * small (1 MiB) L2; measuring up to 4 MiB took 60-270 ms on the 2-CPU Xeon
 * at load 15-28. */
#define COPY_MEASURE_LO ((size_t)512 << 10)
#define COPY_MEASURE_HI ((size_t)4 << 20)
static size_t measure_hi;   /* the largest size measured */
static size_t cache_rule;   /* the threshold if no measured size wins */
static int measure_pending; /* 1 until the measurement has set sym__copy_nt_min */
static size_t measured_min; /* its result; a second shmem_init keeps it */
static pthread_once_t measure_once = PTHREAD_ONCE_INIT;

/* The largest data cache of cpu0 in bytes (sysfs), 0 when unknown. */
static size_t last_level_cache(void) {
    size_t best = 0;
    for (int i = 0; i < 8; i++) {
        char path[96], buf[32];
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
        FILE *f = fopen(path, "r");
        if (!f) break;
        size_t v = 0;
        if (fgets(buf, sizeof buf, f) && sym__parse_size(buf, &v) == 0 && v > best) best = v;
        fclose(f);
    }
    return best;
}

void sym__copy_init(void) {
#if defined(__x86_64__)
    const char *env = getenv("SYMTRAIN_COPY_NT_MIN");
    size_t v;
    __atomic_store_n(&measure_pending, 0, __ATOMIC_RELAXED);
    if (env && *env) { /* the user's threshold: nothing measured */
        v = sym__env_size("SYMTRAIN_COPY_NT_MIN", 0);
        v = v ? v : SIZE_MAX;
    } else if (measured_min) {
        v = measured_min;
    } else {
        size_t llc = last_level_cache();
        cache_rule = llc >= ((size_t)1 << 20) ? llc / 2 : SIZE_MAX;
        measure_hi = cache_rule < COPY_MEASURE_HI ? cache_rule : COPY_MEASURE_HI;
        v = cache_rule;
        if (cache_rule != SIZE_MAX && measure_hi >= COPY_MEASURE_LO) {
            /* Copies from LO up come to sym__copy_large, which measures first. */
            __atomic_store_n(&measure_pending, 1, __ATOMIC_RELAXED);
            v = COPY_MEASURE_LO;
        }
    }
    __atomic_store_n(&sym__copy_nt_min, v, __ATOMIC_RELAXED);
#endif
}

void sym__copy_nt(void *dst, const void *src, size_t n) {
#if defined(__x86_64__)
    char *d = dst;
    const char *s = src;
    size_t head = (64 - ((uintptr_t)d & 63)) & 63; /* align the destination to a line */
    if (head > n) head = n;
    memcpy(d, s, head);
    d += head, s += head, n -= head;
    for (; n >= 64; n -= 64, d += 64, s += 64) {
        __m128i a = _mm_loadu_si128((const __m128i *)s);
        __m128i b = _mm_loadu_si128((const __m128i *)(s + 16));
        __m128i c = _mm_loadu_si128((const __m128i *)(s + 32));
        __m128i e = _mm_loadu_si128((const __m128i *)(s + 48));
        _mm_stream_si128((__m128i *)d, a);
        _mm_stream_si128((__m128i *)(d + 16), b);
        _mm_stream_si128((__m128i *)(d + 32), c);
        _mm_stream_si128((__m128i *)(d + 48), e);
    }
    _mm_sfence(); /* streaming stores are weakly ordered: fence them here */
    memcpy(d, s, n);
#else
    memcpy(dst, src, n);
#endif
}

/* ---- the threshold, measured ---- */

/* Whether streaming stores copy n cached bytes from s to d 10% faster than
 * memcpy, best of 3 each (a preempted pass does not count); the best times in
 * us into *tc and *ts. */
static int stream_wins(char *d, const char *s, size_t n, double *tc, double *ts) {
    uint64_t best_c = UINT64_MAX, best_s = UINT64_MAX;
    for (int r = 0; r < 3; r++) {
        memcpy(d, s, n); /* both buffers cached, as a buffer reused each step is */
        uint64_t t0 = sym__now_ns();
        memcpy(d, s, n);
        uint64_t t1 = sym__now_ns();
        sym__copy_nt(d, s, n);
        uint64_t t2 = sym__now_ns();
        if (t1 - t0 < best_c) best_c = t1 - t0;
        if (t2 - t1 < best_s) best_s = t2 - t1;
    }
    *tc = (double)best_c * 1e-3, *ts = (double)best_s * 1e-3;
    return best_s * 10 < best_c * 9;
}

size_t sym__copy_measure(size_t lo, size_t hi, size_t fallback, double *t_cached,
                         double *t_stream) {
    *t_cached = *t_stream = 0;
    char *buf = mmap(NULL, 2 * hi, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (buf == MAP_FAILED) return fallback; /* no memory to measure with: the cache rule */
    char *s = buf, *d = buf + hi;
    memset(buf, 1, 2 * hi);
    size_t found = fallback;
    double tc2, ts2;
    /* A size counts when streaming wins there and again at twice the size (or
     * at the same size again where twice would pass hi): one burst of load on
     * a loaded machine, which slows a cached memcpy by 3x at times, is not
     * enough to choose. */
    for (size_t n = lo; n <= hi; n *= 2)
        if (stream_wins(d, s, n, t_cached, t_stream) &&
            stream_wins(d, s, 2 * n <= hi ? 2 * n : n, &tc2, &ts2)) {
            found = n;
            break;
        }
    munmap(buf, 2 * hi);
    return found;
}

static void measure(void) {
    double tc, ts, t0 = sym__now_s();
    size_t v = sym__copy_measure(COPY_MEASURE_LO, measure_hi, cache_rule, &tc, &ts);
    double ms = (sym__now_s() - t0) * 1e3;
    if (v <= measure_hi)
        sym__info("copy: streaming stores from %zu KiB (measured in %.0f ms: cached memcpy "
                  "%.1f us, streaming %.1f us)", v >> 10, ms, tc, ts);
    else
        sym__info("copy: streaming stores from %zu KiB, half the last-level cache (measured "
                  "up to %zu KiB in %.0f ms; streaming not 10%% faster: cached memcpy %.1f us, "
                  "streaming %.1f us)", v >> 10, measure_hi >> 10, ms, tc, ts);
    measured_min = v;
    __atomic_store_n(&sym__copy_nt_min, v, __ATOMIC_RELAXED);
    __atomic_store_n(&measure_pending, 0, __ATOMIC_RELEASE);
}

void sym__copy_large(void *dst, const void *src, size_t n) {
    if (SYM_UNLIKELY(__atomic_load_n(&measure_pending, __ATOMIC_ACQUIRE))) {
        pthread_once(&measure_once, measure);
        if (n < __atomic_load_n(&sym__copy_nt_min, __ATOMIC_RELAXED)) {
            memcpy(dst, src, n);
            return;
        }
    }
    sym__copy_nt(dst, src, n);
}
