/*
 * util.h — services every layer of symtrain uses: error reporting, environment
 * parsing, clocks, the wait back-off, CRC32C.
 *
 * Nothing here knows about PEs beyond an integer the runtime sets once (so that
 * every message can name the PE that printed it).
 */
#ifndef SYM_UTIL_H
#define SYM_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdnoreturn.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>

#define SYM_LIKELY(x) __builtin_expect(!!(x), 1)
#define SYM_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define SYM_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define SYM_ALIGN_UP(x, a) (((x) + (a) - 1) & ~((uintptr_t)(a) - 1))

/* ---- errors ---- */

/* Who is speaking, for message prefixes: "symtrain: PE 3: ...". -1 before the
 * runtime knows its PE number. */
extern int sym__log_pe;

/* How the job is ended on a fatal error; the runtime installs one that tells the
 * launcher to end every PE. The default exits the process. */
extern void (*sym__abort_hook)(int status);

/* Print "symtrain: PE n: <where>: <message>" and end the whole job (status 1).
 * <where> names the call the user made (shmem_putmem, symrun, ...). */
noreturn void sym__fatal(const char *where, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* The same message without ending anything. */
void sym__warn(const char *where, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Informational line, printed only when SYMTRAIN_VERBOSE is set. */
void sym__info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int sym__verbose(void);

/* A failed libc call: report file, line, call and errno, then end the job. */
#define SYM_CHECK_SYS(call)                                                          \
    do {                                                                             \
        if ((call) < 0) sym__sys_fail(__FILE__, __LINE__, #call);                    \
    } while (0)
noreturn void sym__sys_fail(const char *file, int line, const char *call);

/* ---- environment ---- */

/* A size such as "512M", "2G", "1.5T", "1048576", "64k"; `dflt` when unset. A
 * malformed value is fatal with a message naming the variable and the
 * suffixes allowed. */
size_t sym__env_size(const char *name, size_t dflt);
/* Parse a size string: decimal digits, an optional fraction, an optional K, M,
 * G or T suffix (powers of 1024; "KiB", "kb" and the like too), a whole number
 * of bytes in all. Returns 0 on success, -1 if malformed (hexadecimal,
 * exponents, "1.5" bytes) or beyond SIZE_MAX / 2. */
int sym__parse_size(const char *s, size_t *out);
/* Every setting is read by one of these, so each kind is checked the same way
 * on every path: a malformed or out-of-range value is fatal, with a message
 * naming the variable, what it takes and its default; unset or empty gives
 * `dflt`. */
/* A whole decimal number in [min, max] (an optional '-', digits, nothing else). */
long sym__env_int(const char *name, long dflt, long min, long max);
/* A duration in seconds: digits with an optional fraction, above 0 and at most
 * SYM_MAX_SECONDS (no sign, exponent, inf or nan). */
double sym__env_seconds(const char *name, double dflt);
#define SYM_MAX_SECONDS 1e9
/* One of `choices` (NULL-terminated): its index; choices[dflt] is the default
 * (dflt -1: none, the caller decides). */
int sym__env_choice(const char *name, const char *const *choices, int dflt);
/* 0 or 1. */
int sym__env_flag(const char *name, int dflt);
/* The parsers behind them (symrun's options use them too): 0, or -1 when `s`
 * is malformed or out of range. */
int sym__parse_int(const char *s, long min, long max, long *out);
int sym__parse_seconds(const char *s, double *out);
/* The first of `names` (NULL-terminated) that is set, or NULL. */
const char *sym__env_first(const char *const *names);
/* Human readable size: "1.5 GiB". Returns buf. */
char *sym__fmt_size(size_t bytes, char *buf, size_t len);
/* The CPUs this process's cgroup quota allows (a Kubernetes CPU limit),
 * rounded up; 0 when there is no quota (cpus.c). */
long sym__cpu_limit(void);

/* ---- clocks ---- */

static inline uint64_t sym__now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
static inline double sym__now_s(void) { return (double)sym__now_ns() * 1e-9; }

/* ---- waiting ---- */

static inline void sym__cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield" ::: "memory");
#endif
}

/* Back-off for a polling loop: spin briefly, then yield the core, then sleep in
 * growing steps, so that more PEs than cores still make progress. */
typedef struct {
    uint32_t iter;
} sym_backoff_t;

void sym__backoff_slow(sym_backoff_t *b);

/* Set by a transport whose data moves only when someone polls it (the
 * fabric): a waiting thread polls too, instead of waiting for the transport's
 * own thread to wake up; `busy` while it spins or yields (polling often), 0
 * once it sleeps between polls. NULL on one host. */
extern void (*sym__progress_hook)(int busy);

/* Set by the fabric while this host has a core for each of its PEs: a waiting
 * thread then polls (and yields) however long it waits, as MPI's do, instead
 * of sleeping between polls: a PE waiting in a barrier answers requests at
 * once rather than after a wake-up. */
extern int sym__wait_polls;

static inline void sym__backoff(sym_backoff_t *b) {
    if (SYM_LIKELY(++b->iter < 256)) {
        sym__cpu_relax();
        if (sym__progress_hook && (b->iter & 15) == 0) sym__progress_hook(1);
        return;
    }
    sym__backoff_slow(b);
}

/* A counter this PE bumps while it makes progress (each wait that lasts, each
 * barrier and collective step), in memory that symrun --hang-timeout reads to
 * tell a stopped or wedged PE (src/bootstrap/symrun.c maps it); NULL when
 * nothing watches. Only this PE writes it; a lost increment between threads
 * does not matter, any change counts. */
extern uint64_t *sym__heartbeat;
static inline void sym__beat(void) {
    uint64_t *h = sym__heartbeat;
    if (h) __atomic_store_n(h, __atomic_load_n(h, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
}

/* Poll `cond` with back-off until it holds. */
#define SYM_WAIT_UNTIL(cond)                                                         \
    do {                                                                             \
        sym_backoff_t sym_bo_ = {0};                                                 \
        while (!(cond)) sym__backoff(&sym_bo_);                                      \
    } while (0)

/* calloc for large arrays (the optimizer's moments): the pages it has not
 * touched yet are asked for as transparent huge pages (madvise), where the
 * kernel allows them, so their first touch (a restore, the first step)
 * faults 512 times less often. Freed with free(). */
void *sym__calloc_large(size_t n, size_t size);

/* ---- copying the data of a put or get (copy.c) ---- */

/* Copies of at least this many bytes go to sym__copy_large: streaming stores
 * from the size measured at the first large copy (copy.c), or
 * SYMTRAIN_COPY_NT_MIN; SIZE_MAX = never. */
extern size_t sym__copy_nt_min;
/* Set sym__copy_nt_min (shmem_init; until then nothing streams). */
void sym__copy_init(void);
/* memcpy with non-temporal stores, fenced: for copies too large to cache. */
void sym__copy_nt(void *dst, const void *src, size_t n);
/* A copy of at least sym__copy_nt_min bytes: the first one measures the
 * threshold (once per process), then streams if n is still above it. */
void sym__copy_large(void *dst, const void *src, size_t n);
/* The measurement: the first n of lo, 2lo, 4lo ... up to hi at which
 * streaming stores copy cached buffers 10% faster than memcpy, there and at
 * 2n (where 2n > hi: at n again), else fallback (also when its 2*hi bytes
 * cannot be mapped); *t_cached and *t_stream: the best times of each at the
 * first of those sizes last measured, in us. */
size_t sym__copy_measure(size_t lo, size_t hi, size_t fallback, double *t_cached,
                         double *t_stream);
/* The copy of a same-host put or get. A small constant size (p, g) compiles
 * to plain moves with no test. */
static inline __attribute__((always_inline)) void sym__copy(void *dst, const void *src,
                                                            size_t n) {
    if (!(__builtin_constant_p(n) && n < 4096) &&
        SYM_UNLIKELY(n >= __atomic_load_n(&sym__copy_nt_min, __ATOMIC_RELAXED)))
        sym__copy_large(dst, src, n);
    else
        memcpy(dst, src, n);
}

/* ---- CRC32C (Castagnoli), hardware accelerated where the CPU has it ---- */
uint32_t sym__crc32c(uint32_t crc, const void *data, size_t len);
/* memcpy(dst, src, len) and the CRC of those bytes continued from crc. */
uint32_t sym__crc32c_copy(uint32_t crc, void *dst, const void *src, size_t len);
/* The CRC of A then B from crc1 (A's), crc2 (B's) and B's length. */
uint32_t sym__crc32c_combine(uint32_t crc1, uint32_t crc2, size_t len2);

/* ---- processes that are ending (proc.c) ---- */
/* 1 when process pid has begun to exit (its memory may still be being freed),
 * *code its status as waitpid(2) will give it. */
int sym__proc_exiting(pid_t pid, int *code);
/* 1 when none of pid's threads runs any more (each exiting, or gone). */
int sym__proc_all_exiting(pid_t pid);
/* 1 when pid is one of an earlier attempt's PEs still ending (SYMTRAIN_DYING_PIDS). */
int sym__proc_dying(pid_t pid);
/* Until every earlier attempt's PE has ended (a zombie, or gone): 0, or -1
 * after max_s seconds. */
int sym__wait_dying(double max_s);

#endif
