/*
 * copy.c — the copy behind large same-host puts and gets.
 *
 * A copy larger than about half the last-level cache cannot stay in it, and
 * ordinary stores then cost a read of every destination line before it is
 * written. Non-temporal (streaming) stores write whole lines straight to
 * memory: on the machines we measured they copy up to twice as fast there (see
 * docs/performance.md). glibc switches to them itself, but only above a
 * threshold derived from the cache size it computes, which a virtual machine
 * can make absurd (240 MiB on our 32 MiB-L3 test machine). So the threshold
 * here comes from the last-level cache the kernel reports, halved:
 * SYMTRAIN_COPY_NT_MIN overrides it (a size; 0 turns streaming off).
 *
 * The streaming loop ends with a store fence, so the copy is ordered before
 * whatever the caller stores next (a signal, a flag), as memcpy's is.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

#if defined(__x86_64__)
#include <emmintrin.h>
#endif

size_t sym__copy_nt_min = SIZE_MAX;

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
    size_t llc = last_level_cache();
    size_t v = sym__env_size("SYMTRAIN_COPY_NT_MIN", llc >= ((size_t)1 << 20) ? llc / 2 : 0);
    sym__copy_nt_min = v ? v : SIZE_MAX;
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
