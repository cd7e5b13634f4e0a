/*
 * copy.c — the copy behind large same-host puts and gets.
 *
 * A copy whose buffers do not stay in a core's caches costs, with ordinary
 * stores, a read of every destination line before it is written.
 * Non-temporal (streaming) stores write whole lines straight to memory: they
 * copy up to twice as fast there (docs/performance.md), but 3-4x slower when
 * the buffers are cached, since every line then goes to memory and back. glibc
 * switches to them itself, only above a threshold derived from the cache size
 * it computes (3/4 of the L3 over the threads sharing it), which a virtual
 * machine can make absurd: 41 MiB on the 2-CPU Xeon where a 2 MiB copy
 * already runs at memory speed, its L3 not delivering its 105 MiB; 240 MiB on
 * our 32 MiB-L3 AMD machine, where cached copies run at 47 GB/s up to 4 MiB.
 *
 * So the threshold is measured: at the first copy of at least COPY_MEASURE_LO
 * bytes, this process times memcpy on cached buffers against streaming
 * stores, at each power of two from COPY_MEASURE_LO to COPY_MEASURE_HI (or
 * half the last-level cache, if smaller); streaming starts at the first size
 * where it is faster even on cached buffers, since past it caching buys
 * nothing. Where no size wins, the rule is half the last-level cache the
 * kernel reports. SYMTRAIN_COPY_NT_MIN overrides it all (a size; 0 turns
 * streaming off), and nothing is measured then.
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
#include <cpuid.h>
#include <emmintrin.h>
#include <x86intrin.h>
#endif

size_t sym__copy_nt_min = SIZE_MAX;

/* The sizes measured, doubling from LO: 512 KiB already fills half of a
 * small (1 MiB) L2; measuring up to 4 MiB takes 20-50 ms at memory speed. */
#define COPY_MEASURE_LO ((size_t)512 << 10)
#define COPY_MEASURE_HI ((size_t)4 << 20)
/* The probe: copies from PROBE_MIN up, below the streaming threshold, copy
 * their first PROBE_CHUNK bytes with memcpy and time it; longer than
 * PROBE_NS, the data came from memory (4 KiB copies in 50-270 ns from L1-L3,
 * 1-2 us from memory here), and the rest streams. Below 32 KiB the two clock
 * reads would cost more than streaming saves (a cached 16 KiB copy: 130 ns). */
#define COPY_PROBE_MIN ((size_t)32 << 10)
#define COPY_PROBE_CHUNK ((size_t)4096)
#define COPY_PROBE_NS 400

static size_t stream_min = SIZE_MAX; /* copies of at least this stream, always */
static uint64_t probe_ticks;         /* the probe's limit in TSC ticks; 0: no probe */
static size_t measure_hi;            /* the largest size measured */
static size_t cache_rule;            /* stream_min if no measured size wins */
static int measure_pending;          /* 1 until the measurement has set the above */
static size_t measured_min;          /* the measurement's stream_min, probe_ticks: a */
static uint64_t measured_ticks;      /* second shmem_init keeps them; 0: not yet run */
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

/* The smallest copy sym__copy_large has something to do with. */
static size_t dispatch_min(void) {
    return probe_ticks && COPY_PROBE_MIN < stream_min ? COPY_PROBE_MIN : stream_min;
}

void sym__copy_init(void) {
#if defined(__x86_64__)
    const char *env = getenv("SYMTRAIN_COPY_NT_MIN");
    if (env && *env) { /* the user's rule exactly: no probe, nothing measured */
        size_t v = sym__env_size("SYMTRAIN_COPY_NT_MIN", 0);
        stream_min = v ? v : SIZE_MAX, probe_ticks = 0;
        __atomic_store_n(&measure_pending, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&sym__copy_nt_min, stream_min, __ATOMIC_RELAXED);
        return;
    }
    if (measured_min) {
        stream_min = measured_min, probe_ticks = measured_ticks;
    } else {
        size_t llc = last_level_cache();
        cache_rule = llc >= ((size_t)1 << 20) ? llc / 2 : SIZE_MAX;
        measure_hi = cache_rule < COPY_MEASURE_HI ? cache_rule : COPY_MEASURE_HI;
        unsigned a, b, c, d; /* the probe's clock: an invariant TSC */
        int tsc = __get_cpuid(0x80000007, &a, &b, &c, &d) && (d & (1u << 8));
        if (cache_rule != SIZE_MAX && measure_hi >= COPY_MEASURE_LO && tsc) {
            /* Copies from PROBE_MIN up come to sym__copy_large, which measures first. */
            __atomic_store_n(&measure_pending, 1, __ATOMIC_RELAXED);
            __atomic_store_n(&sym__copy_nt_min, COPY_PROBE_MIN, __ATOMIC_RELAXED);
            return;
        }
        stream_min = cache_rule, probe_ticks = 0;
    }
    __atomic_store_n(&sym__copy_nt_min, dispatch_min(), __ATOMIC_RELAXED);
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
     * at the same size again, at hi): one burst of load on a loaded machine,
     * which slows a cached memcpy by 3x at times, is not enough to choose. */
    for (size_t n = lo; n <= hi; n *= 2)
        if (stream_wins(d, s, n, t_cached, t_stream) &&
            stream_wins(d, s, n < hi ? 2 * n : n, &tc2, &ts2)) {
            found = n;
            break;
        }
    munmap(buf, 2 * hi);
    return found;
}

static void measure(void) {
#if defined(__x86_64__)
    double tc, ts;
    uint64_t t0 = sym__now_ns(), k0 = __rdtsc();
    size_t v = sym__copy_measure(COPY_MEASURE_LO, measure_hi, cache_rule, &tc, &ts);
    uint64_t ns = sym__now_ns() - t0, ticks = __rdtsc() - k0;
    stream_min = v;
    probe_ticks = ns ? (uint64_t)((double)COPY_PROBE_NS * (double)ticks / (double)ns) : 0;
    if (v <= measure_hi)
        sym__info("copy: streaming stores from %zu KiB (measured in %.0f ms: cached memcpy "
                  "%.1f us, streaming %.1f us), from %zu KiB where a %zu-byte probe takes "
                  "over %d ns", v >> 10, (double)ns * 1e-6, tc, ts, COPY_PROBE_MIN >> 10,
                  COPY_PROBE_CHUNK, COPY_PROBE_NS);
    else
        sym__info("copy: streaming stores from %zu KiB, half the last-level cache (measured "
                  "up to %zu KiB in %.0f ms; streaming not 10%% faster: cached memcpy %.1f us, "
                  "streaming %.1f us), from %zu KiB where a %zu-byte probe takes over %d ns",
                  v >> 10, measure_hi >> 10, (double)ns * 1e-6, tc, ts, COPY_PROBE_MIN >> 10,
                  COPY_PROBE_CHUNK, COPY_PROBE_NS);
    measured_min = v, measured_ticks = probe_ticks;
    __atomic_store_n(&sym__copy_nt_min, dispatch_min(), __ATOMIC_RELAXED);
    __atomic_store_n(&measure_pending, 0, __ATOMIC_RELEASE);
#endif
}

int sym__copy_probed(void *dst, const void *src, size_t n, uint64_t limit) {
#if defined(__x86_64__)
    uint64_t t0 = __rdtsc();
    memcpy(dst, src, COPY_PROBE_CHUNK);
    _mm_lfence(); /* the chunk's loads done before the clock is read */
    int cold = __rdtsc() - t0 > limit;
    char *d = (char *)dst + COPY_PROBE_CHUNK;
    const char *s = (const char *)src + COPY_PROBE_CHUNK;
    if (cold)
        sym__copy_nt(d, s, n - COPY_PROBE_CHUNK);
    else
        memcpy(d, s, n - COPY_PROBE_CHUNK);
    return cold;
#else
    (void)limit;
    memcpy(dst, src, n);
    return 0;
#endif
}

void sym__copy_large(void *dst, const void *src, size_t n) {
    if (SYM_UNLIKELY(__atomic_load_n(&measure_pending, __ATOMIC_ACQUIRE)))
        pthread_once(&measure_once, measure);
    if (n >= stream_min)
        sym__copy_nt(dst, src, n);
    else if (probe_ticks && n >= COPY_PROBE_MIN)
        sym__copy_probed(dst, src, n, probe_ticks);
    else
        memcpy(dst, src, n);
}
