/*
 * symbench — OSU-style micro-benchmarks of symshmem, one table per measure.
 *
 *   symrun -n 2 symbench pingpong|put|get|atomic|barrier|memcpy|all [options]
 *
 * Every table starts with a title line "# symbench <test> <measure>: <what>"
 * and a column line "# size latency_us" or "# size bandwidth_GBs", then one row
 * per size: the best of --reps timed repetitions (the least time: noise from
 * other processes only ever adds time), each of which runs a number of
 * iterations that shrinks with the size (iters_for in bench/baseline.h). The
 * active side is PE 0, talking to PE 1 (to itself when it runs alone); the
 * other PEs wait in a barrier. Only the public OpenSHMEM API is used, so the
 * loops are the same as in the baselines (bench/osh_baseline.c,
 * bench/mpi_baseline.c), and the harness around them is one file they all
 * include (bench/baseline.h): iteration counts, warm-up, best of --reps,
 * sweeps, tables. Each PE is bound to one CPU (PE i to the i-th CPU it may run
 * on), as mpirun and oshrun bind ranks by default; --no-bind leaves placement
 * to the scheduler.
 *
 *   pingpong  shmem_long_p + shmem_long_wait_until, one way (= round trip / 2)
 *   put, get  latency: one blocking shmem_putmem / shmem_getmem + shmem_quiet;
 *             bandwidth: a window of _nbi transfers + shmem_quiet
 *   atomic    shmem_long_atomic_fetch_add latency
 *   barrier   shmem_barrier_all latency, all PEs
 *   memcpy    single-core memcpy bandwidth between private buffers, the same
 *             loop as put bandwidth: the ceiling a same-host put can reach
 *
 * The training collectives (allreduce, reduce_scatter, allgather, broadcast)
 * are tools/symbench_coll.c's, and gpu-* tests are symbench-gpu's (it takes
 * this process's place).
 */
#define _GNU_SOURCE
#include <sched.h>
#include <shmem.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdnoreturn.h>
#include <string.h>
#include <unistd.h>

#include "../src/util/util.h" /* sym__now_s, sym__parse_size */
#include "envhelp.h"
#include "symbench.h"

/* The harness the baselines use too (bench/baseline.h): the options iters,
 * iters_large, reps, window, min_size and max_size; me, npes and peer; the
 * iteration counts, measure (best of reps), the sweeps and the tables. */
#define BASELINE_NAME "symbench"
#define BASELINE_UNIT "PEs"
#define BASELINE_UNIT_ONE "PE"
#define BASELINE_OWN_OPTIONS /* main parses them, with messages */
static void baseline_barrier(void) { shmem_barrier_all(); }
static double baseline_now(void) { return sym__now_s(); }
#include "../bench/baseline.h"

static int bind = 1;

/* ---- helpers ---- */

/* Pin this PE to the (me mod n)-th CPU of those it may run on. */
static void bind_to_cpu(void) {
    cpu_set_t allowed, one;
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return;
    int n = CPU_COUNT(&allowed), want = me % (n ? n : 1), k = 0;
    for (int c = 0; c < CPU_SETSIZE; c++) {
        if (!CPU_ISSET(c, &allowed)) continue;
        if (k++ != want) continue;
        CPU_ZERO(&one);
        CPU_SET(c, &one);
        if (sched_setaffinity(0, sizeof one, &one) != 0 && me == 0)
            perror("symbench: sched_setaffinity");
        return;
    }
}

/* ---- symmetric buffers ---- */

static char *sym_buf;     /* max_size bytes on every PE: the remote end */
static char *local_buf;   /* max_size private bytes: the local end */
static char *local_buf2;  /* for memcpy */
static size_t local_offset; /* --local-offset: the private buffers this far into their pages */
static long pp_flag;      /* ping-pong word */
static long amo_word;

/* ---- the tests ---- */

static void pingpong_body(size_t size, long iters, void *arg) {
    (void)size;
    long *base = arg; /* ping numbers continue across calls */
    if (me == 0) {
        for (long i = 1; i <= iters; i++) {
            long v = *base + i;
            shmem_long_p(&pp_flag, v, peer);
            shmem_long_wait_until(&pp_flag, SHMEM_CMP_EQ, v);
        }
    } else if (me == peer) {
        for (long i = 1; i <= iters; i++) {
            long v = *base + i;
            shmem_long_wait_until(&pp_flag, SHMEM_CMP_EQ, v);
            shmem_long_p(&pp_flag, v, 0);
        }
    }
    *base += iters;
}

static void bench_pingpong(void) {
    if (npes < 2) {
        if (me == 0) printf("# symbench pingpong: needs 2 PEs (symrun -n 2), skipped\n");
        return;
    }
    table("pingpong", "latency", "shmem_long_p + shmem_long_wait_until, one way", "latency_us");
    long base = 0;
    double t = measure(pingpong_body, 8, iters * 20, &base);
    row(sizeof(long), t * 1e6 / 2);
}

static void put_lat_body(size_t size, long iters, void *arg) {
    (void)arg;
    if (me != 0) return;
    for (long i = 0; i < iters; i++) {
        shmem_putmem(sym_buf + slice(i, size), local_buf + slice(i, size), size, peer);
        shmem_quiet();
    }
}

static void put_bw_body(size_t size, long iters, void *arg) {
    (void)arg;
    if (me != 0) return;
    long w = win_for(size);
    for (long i = 0; i < iters; i += w) {
        for (long k = 0; k < w; k++)
            shmem_putmem_nbi(sym_buf + slice(i + k, size), local_buf + slice(i + k, size), size,
                             peer);
        shmem_quiet();
    }
}

static void get_lat_body(size_t size, long iters, void *arg) {
    (void)arg;
    if (me != 0) return;
    for (long i = 0; i < iters; i++) {
        shmem_getmem(local_buf + slice(i, size), sym_buf + slice(i, size), size, peer);
        shmem_quiet();
    }
}

static void get_bw_body(size_t size, long iters, void *arg) {
    (void)arg;
    if (me != 0) return;
    long w = win_for(size);
    for (long i = 0; i < iters; i += w) {
        for (long k = 0; k < w; k++)
            shmem_getmem_nbi(local_buf + slice(i + k, size), sym_buf + slice(i + k, size), size,
                             peer);
        shmem_quiet();
    }
}

static void memcpy_body(size_t size, long iters, void *arg) {
    (void)arg;
    if (me != 0) return;
    for (long i = 0; i < iters; i++) {
        memcpy(local_buf2 + slice(i, size), local_buf + slice(i, size), size);
        __asm__ __volatile__("" ::: "memory"); /* every copy happens */
    }
}

static void bench_put(void) {
    sweep("put", "shmem_putmem + shmem_quiet, PE 0 to PE 1", put_lat_body,
          "shmem_putmem_nbi x window + shmem_quiet, PE 0 to PE 1", put_bw_body);
}

static void bench_get(void) {
    sweep("get", "shmem_getmem + shmem_quiet, PE 0 from PE 1", get_lat_body,
          "shmem_getmem_nbi x window + shmem_quiet, PE 0 from PE 1", get_bw_body);
}

static void bench_memcpy(void) {
    sweep_bandwidth("memcpy", "single-core memcpy between private buffers on PE 0",
                    memcpy_body);
}

static void atomic_body(size_t size, long iters, void *arg) {
    (void)size;
    (void)arg;
    if (me != 0) return;
    long sink = 0;
    for (long i = 0; i < iters; i++) sink += shmem_long_atomic_fetch_add(&amo_word, 1, peer);
    __asm__ __volatile__("" ::"r"(sink));
}

static void bench_atomic(void) {
    table("atomic", "latency", "shmem_long_atomic_fetch_add, PE 0 on PE 1", "latency_us");
    row(sizeof(long), measure(atomic_body, 8, iters * 20, NULL) * 1e6);
}

static void barrier_body(size_t size, long iters, void *arg) {
    (void)size;
    (void)arg;
    for (long i = 0; i < iters; i++) shmem_barrier_all();
}

static void bench_barrier(void) {
    table("barrier", "latency", "shmem_barrier_all, all PEs", "latency_us");
    row(0, measure(barrier_body, 0, iters * 5, NULL) * 1e6);
}

/* ---- the table of tests ---- */

typedef struct {
    const char *name;
    void (*run)(void);
    const char *help;
} bench_t;

static const bench_t benches[] = {
    {"pingpong", bench_pingpong, "p + wait_until ping-pong latency (needs 2 PEs)"},
    {"put", bench_put, "put latency and bandwidth"},
    {"get", bench_get, "get latency and bandwidth"},
    {"atomic", bench_atomic, "fetch_add latency"},
    {"barrier", bench_barrier, "barrier_all latency"},
    {"memcpy", bench_memcpy, "single-core memcpy bandwidth (the put ceiling)"},
};
#define N_BENCHES (sizeof benches / sizeof benches[0])

/* why == NULL: --help, the whole text on stdout and exit status 0; else a
 * usage error: why and the options on stderr, exit status 2. PE 0 speaks. */
static noreturn void usage(const char *why) {
    FILE *f = why ? stderr : stdout;
    if (me == 0) {
        if (why) fprintf(f, "symbench: %s\n", why);
        fprintf(f,
                "usage: symrun -n 2 symbench TEST [options]\n"
                "tests:\n");
        for (size_t i = 0; i < N_BENCHES; i++)
            fprintf(f, "  %-10s %s\n", benches[i].name, benches[i].help);
        fprintf(f,
                "  %-10s every test above, in that order\n"
                "  allreduce, reduce_scatter, allgather, broadcast: the training collectives\n"
                "             (symbench allreduce -h for their options)\n"
                "  gpu-allreduce, gpu-put, ...: GPU tests (symbench-gpu)\n"
                "options:\n"
                "  -i, --iters N        iterations per repetition up to 8 KiB (default %ld)\n"
                "  --iters-large N      iterations at 1 MiB, scaled by size (default %ld)\n"
                "  -r, --reps N         timed repetitions; the best is printed (default %d)\n"
                "  -w, --window N       _nbi transfers per quiet below 1 MiB (default %d)\n"
                "  --min-size SIZE      smallest transfer, e.g. 1, 4K (default %zu)\n"
                "  --max-size SIZE      largest transfer, e.g. 64M (default %zu)\n"
                "  --stream SPAN        put/get/memcpy: each transfer on the next slice of\n"
                "                       SPAN-byte buffers (past the cache: streaming)\n"
                "  --local-offset N     the private buffers N bytes into their pages (default 0;\n"
                "                       their page offset against the symmetric buffer's)\n"
                "  --no-bind            do not bind each PE to a CPU\n"
                "  -h, --help           this text, with the environment variables\n",
                "all", iters, iters_large, reps, window, min_size, max_size);
        if (!why) fputs("\n" SYM_ENV_HELP_RUNTIME, f);
        fflush(f);
    }
    shmem_finalize();
    exit(why ? 2 : 0);
}

static long parse_long(const char *name, const char *v, long lo) {
    char *end;
    long x = strtol(v, &end, 10);
    if (*end || end == v || x < lo) {
        char msg[128];
        snprintf(msg, sizeof msg, "%s takes a whole number >= %ld, not '%s'", name, lo, v);
        usage(msg);
    }
    return x;
}

static int is_collective(const char *t) {
    return !strcmp(t, "allreduce") || !strcmp(t, "reduce_scatter") || !strcmp(t, "allgather") ||
           !strcmp(t, "broadcast");
}

/* gpu-* tests live in symbench-gpu (built with CUDA): become it, in place, so
 * `symrun -n 2 symbench gpu-allreduce` works like `symrun -n 2 symbench-gpu ...`. */
static void exec_gpu(char **argv) {
    char path[4096];
    ssize_t n = readlink("/proc/self/exe", path, sizeof path - 16);
    if (n > 0) {
        path[n] = '\0';
        char *slash = strrchr(path, '/');
        strcpy(slash ? slash + 1 : path, "symbench-gpu");
        execv(path, argv);
    }
    execvp("symbench-gpu", argv);
    fprintf(stderr, "symbench: %s needs symbench-gpu, which this build does not have (it is "
                    "built where nvcc and NVSHMEM are found)\n", argv[1]);
    exit(2);
}

int main(int argc, char **argv) {
    if (argc > 1 && !strncmp(argv[1], "gpu-", 4)) exec_gpu(argv);
    shmem_init();
    if (argc > 1 && is_collective(argv[1])) return symbench_coll(argv[1], argc - 2, argv + 2);
    me = shmem_my_pe();
    npes = shmem_n_pes();
    peer = npes > 1 ? 1 : 0;
    if (argc < 2) usage("name a test");
    const char *test = argv[1];
    if (!strcmp(test, "-h") || !strcmp(test, "--help")) usage(NULL);
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int takes = strcmp(a, "-h") && strcmp(a, "--help") && strcmp(a, "--no-bind");
        if (!strcmp(a, "--no-bind")) {
            bind = 0;
            continue;
        }
        if (takes && !v) {
            char msg[96];
            snprintf(msg, sizeof msg, "%s needs a value", a);
            usage(msg);
        }
        if (!strcmp(a, "-i") || !strcmp(a, "--iters")) iters = parse_long(a, v, 1);
        else if (!strcmp(a, "--iters-large")) iters_large = parse_long(a, v, 1);
        else if (!strcmp(a, "-r") || !strcmp(a, "--reps")) reps = (int)parse_long(a, v, 1);
        else if (!strcmp(a, "-w") || !strcmp(a, "--window")) window = (int)parse_long(a, v, 1);
        else if (!strcmp(a, "--min-size") || !strcmp(a, "--max-size")) {
            size_t s;
            if (sym__parse_size(v, &s) || s == 0) usage("sizes are positive, e.g. 1, 4K, 64M");
            if (!strcmp(a, "--min-size")) min_size = s;
            else max_size = s;
        } else if (!strcmp(a, "--stream")) {
            if (sym__parse_size(v, &stream_span)) usage("--stream takes a size, e.g. 256M");
        } else if (!strcmp(a, "--local-offset")) {
            local_offset = (size_t)parse_long(a, v, 0);
            if (local_offset >= 4096) usage("--local-offset is below a page (4096)");
        } else if (!takes) usage(NULL);
        else {
            char msg[96];
            snprintf(msg, sizeof msg, "unknown option '%s'", a);
            usage(msg);
        }
        i++;
    }
    if (min_size > max_size) usage("--min-size is above --max-size");
    if (bind) bind_to_cpu();

    const bench_t *run = NULL;
    for (size_t i = 0; i < N_BENCHES; i++)
        if (!strcmp(test, benches[i].name)) run = &benches[i];
    if (!run && strcmp(test, "all")) {
        char msg[96];
        snprintf(msg, sizeof msg, "unknown test '%s'", test);
        usage(msg);
    }

    /* Private buffers page-aligned like the symmetric one (OSU does the same):
     * a copy into a destination 16 bytes off a cache line runs at half speed
     * here at 4 KiB, which would be measuring malloc, not the transfer. */
    size_t span = buffer_bytes();
    sym_buf = shmem_malloc(span);
    local_buf = aligned_alloc(4096, span + 4096);
    local_buf2 = aligned_alloc(4096, span + 4096);
    if (!sym_buf || !local_buf || !local_buf2) {
        if (me == 0)
            fprintf(stderr, "symbench: cannot allocate %zu bytes (symmetric heap: raise "
                    "SYMTRAIN_SYMMETRIC_SIZE)\n", span);
        shmem_global_exit(1);
    }
    if (local_buf) local_buf += local_offset;
    if (local_buf2) local_buf2 += local_offset;
    memset(local_buf, 1, span);
    memset(local_buf2, 2, span);
    memset(sym_buf, 3, span);
    shmem_barrier_all();

    if (run) {
        run->run();
    } else {
        for (size_t i = 0; i < N_BENCHES; i++) benches[i].run();
    }
    shmem_barrier_all();
    shmem_free(sym_buf);
    free(local_buf - local_offset);
    free(local_buf2 - local_offset);
    shmem_finalize();
    return 0;
}
