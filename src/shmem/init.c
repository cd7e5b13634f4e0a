/*
 * init.c — starting and ending the runtime, and the query calls.
 *
 * shmem_init: the bootstrap gives this PE its rank; the PE creates its
 * symmetric segments, all-gathers one record per PE (host identity, how to map
 * its memory, segment sizes), maps the PEs of its own host, starts the fabric
 * for the others, and sets up the world team and the heap.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <sys/prctl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <shmemx.h> /* shmemx_version */

#include "runtime.h"

sym_runtime_t sym__rt;
sym_world_t sym__world;
const sym_remote_ops_t *sym__remote;
sym_fabric_settings_t sym__fabric_settings;
int sym__amo_through_fabric;
void (*sym__coll_drain_hook)(int stop);

#define DEFAULT_HEAP_SIZE ((size_t)512 << 20)

/* ---- messages for misuse ---- */

void sym__not_running(const char *fn) {
    if (sym__log_pe < 0) { /* before shmem_init: name the PE the launcher started */
        const char *rank = getenv("SYMTRAIN_RANK");
        if (rank && *rank) sym__log_pe = atoi(rank);
    }
    if (sym__rt.state == SYM_RT_FINALIZED)
        sym__fatal(fn, "called after shmem_finalize; OpenSHMEM calls end at shmem_finalize");
    sym__fatal(fn, "called before shmem_init; call shmem_init (or shmem_init_thread) first");
}

void sym__bad_pe(const char *fn, int pe, int npes) {
    sym__fatal(fn, "PE %d is out of range: the team has %d PE%s (0 .. %d)", pe, npes,
               npes == 1 ? "" : "s", npes - 1);
}

void sym__bad_addr(const char *fn, const void *addr, int pe) {
    size_t off;
    int s = sym__seg_of(addr, &off);
    if (s >= 0) /* a symmetric start, but the range runs off its segment */
        sym__fatal(fn,
                   "the range at %p (for PE %d) runs past the end of the %s: it starts %zu "
                   "bytes from the end",
                   addr, pe,
                   s == SYM_SEG_HEAP ? "symmetric heap" : "program's global and static data",
                   sym__world.seg[s].size - off);
    sym__fatal(fn,
               "address %p (for PE %d) is not symmetric: it is neither in the symmetric heap "
               "(shmem_malloc) nor a global or static variable of the program",
               addr, pe);
}

static void abort_job(int status) {
    fflush(stdout);
    if (sym__rt.boot) sym__rt.boot->abort_job(sym__rt.boot, status);
    _exit(status);
}

/* ---- host identity ---- */

static uint64_t fnv1a(uint64_t h, const void *p, size_t n) {
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++) h = (h ^ c[i]) * 0x100000001b3ull;
    return h;
}

/* PEs with the same key share memory. Two processes can map each other's
 * memory files when they run on one kernel (boot id) and see each other's
 * /proc (PID namespace); separate network namespaces are treated as separate
 * hosts, which is how tests stand up several hosts on one machine. */
static uint64_t host_key(int rank) {
    uint64_t h = 0xcbf29ce484222325ull;
    const char *id = getenv("SYMTRAIN_HOST_ID");
    if (id && *id) return fnv1a(h, id, strlen(id));
    /* Tests: pretend the PEs sit on hosts of SYMTRAIN_HOST_SIZE consecutive ranks,
     * so the fabric transport runs between processes of one machine. */
    long per_host = sym__env_int("SYMTRAIN_HOST_SIZE", 0, 0, INT_MAX);
    if (per_host > 0) {
        long host = rank / per_host;
        h = fnv1a(h, &host, sizeof host);
    }
    h = fnv1a(h, sym__rt.hostname, strlen(sym__rt.hostname));
    char boot[64] = {0};
    int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY);
    if (fd >= 0) {
        ssize_t n = read(fd, boot, sizeof boot - 1);
        (void)n;
        close(fd);
    }
    h = fnv1a(h, boot, strlen(boot));
    static const char *ns[] = {"/proc/self/ns/net", "/proc/self/ns/pid", "/proc/self/ns/ipc"};
    for (size_t i = 0; i < SYM_ARRAY_LEN(ns); i++) {
        struct stat st;
        if (stat(ns[i], &st) == 0) h = fnv1a(h, &st.st_ino, sizeof st.st_ino);
    }
    return h;
}

/* ---- start ---- */

/* Settings that only some jobs use (the fabric's, on one host) are read on
 * every start all the same: a bad value is named now, wherever the job runs,
 * not on the first job that happens to need it. */
static void read_settings(void) {
    static const char *const waits[] = {"auto", "poll", "sleep", NULL};
    static const char *const atomics[] = {"auto", "fabric", "am", NULL};
    sym__fabric_settings.wait = (sym_wait_mode_t)sym__env_choice("SYMTRAIN_WAIT", waits, 0);
    sym__fabric_settings.atomics =
        (sym_atomics_mode_t)sym__env_choice("SYMTRAIN_OFI_ATOMICS", atomics, 0);
    sym__copy_init();
}

typedef struct {
    uint64_t host_key;
    uint64_t seg_size[SYM_SEG_COUNT];
    uint64_t heap_user_size;
    sym_shm_handle_t shm;
    char hostname[64];
} pe_record_t;

static size_t next_pow2(size_t x) {
    size_t p = 1;
    while (p < x) p <<= 1;
    return p;
}

static void check_records(const pe_record_t *rec, int npes) {
    const pe_record_t *me = &rec[sym__world.me];
    for (int pe = 0; pe < npes; pe++) {
        if (rec[pe].heap_user_size != me->heap_user_size) {
            char a[32], b[32];
            sym__fatal("shmem_init",
                       "symmetric heap sizes differ: PE %d has %s, PE %d has %s; set "
                       "SYMTRAIN_SYMMETRIC_SIZE to one value for every PE",
                       pe, sym__fmt_size(rec[pe].heap_user_size, a, sizeof a), sym__world.me,
                       sym__fmt_size(me->heap_user_size, b, sizeof b));
        }
        if (rec[pe].seg_size[SYM_SEG_DATA] != me->seg_size[SYM_SEG_DATA])
            sym__fatal("shmem_init",
                       "PE %d's global data is %llu bytes and ours %llu: every PE must run "
                       "the same program",
                       pe, (unsigned long long)rec[pe].seg_size[SYM_SEG_DATA],
                       (unsigned long long)me->seg_size[SYM_SEG_DATA]);
    }
}

static void assign_hosts(const pe_record_t *rec, int npes) {
    uint64_t *keys = calloc((size_t)npes, sizeof *keys);
    int *count = calloc((size_t)npes, sizeof *count);
    sym__world.local_pes = calloc((size_t)npes, sizeof(int));
    if (!keys || !count || !sym__world.local_pes) sym__fatal("shmem_init", "out of memory");
    int nh = 0;
    for (int pe = 0; pe < npes; pe++) {
        int h = 0;
        while (h < nh && keys[h] != rec[pe].host_key) h++;
        if (h == nh) keys[nh++] = rec[pe].host_key;
        sym__world.peer[pe].host = h;
        sym__world.peer[pe].local_rank = count[h]++;
    }
    int my_host = sym__world.peer[sym__world.me].host;
    sym__world.n_hosts = nh;
    sym__world.n_local = 0;
    for (int pe = 0; pe < npes; pe++)
        if (sym__world.peer[pe].host == my_host) sym__world.local_pes[sym__world.n_local++] = pe;
    free(keys);
    free(count);
}

/* A program that returns from main (or calls exit(0)) without shmem_finalize,
 * as programs written for start_pes do, is finalized here. A failing exit is
 * not: its PE may be the one the others wait for, and the launcher ends them. */
static void finalize_at_exit(int status, void *arg) {
    (void)arg;
    if (status == 0 && sym__rt.state == SYM_RT_RUNNING) shmem_finalize();
}

static void runtime_start(int requested) {
    if (sym__rt.state == SYM_RT_RUNNING) return;
    if (sym__rt.state == SYM_RT_FINALIZED)
        sym__fatal("shmem_init", "called after shmem_finalize; a program initializes once");
    gethostname(sym__rt.hostname, sizeof sym__rt.hostname - 1);
    /* Waits sleep in microsecond steps (util/backoff.c); the default 50 us
     * timer slack would stretch each of them to 50 us or more. */
    prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);

    sym_boot_t *boot = sym__boot_init();
    sym__rt.boot = boot;
    sym__log_pe = boot->rank;
    sym__abort_hook = abort_job;
    sym__world.me = boot->rank;
    sym__world.npes = boot->size;
    read_settings();

    static const char *const size_vars[] = {"SYMTRAIN_SYMMETRIC_SIZE", "SHMEM_SYMMETRIC_SIZE",
                                            NULL};
    const char *var = sym__env_first(size_vars);
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t user = SYM_ALIGN_UP(var ? sym__env_size(var, DEFAULT_HEAP_SIZE) : DEFAULT_HEAP_SIZE,
                               page);
    if (user < page) user = page;
    size_t internal = (size_t)SYM_MAX_TEAMS * SYM_SLOT_SIZE;
    size_t align = next_pow2(user);
    if (align > ((size_t)1 << 30)) align = (size_t)1 << 30;
    if (align < internal) align = internal; /* the user heap starts at `internal` */
    sym__rt.heap_user_size = user;
    sym__rt.internal_size = internal;
    sym__shm_create_segments(internal + user, align, internal);

    int npes = boot->size;
    sym__world.peer = calloc((size_t)npes, sizeof(sym_peer_t));
    pe_record_t *rec = calloc((size_t)npes, sizeof *rec);
    if (!sym__world.peer || !rec) sym__fatal("shmem_init", "out of memory");
    pe_record_t mine = {0};
    mine.host_key = host_key(boot->rank);
    for (int s = 0; s < SYM_SEG_COUNT; s++) mine.seg_size[s] = sym__world.seg[s].size;
    mine.heap_user_size = user;
    sym__shm_handle(&mine.shm);
    memcpy(mine.hostname, sym__rt.hostname, sizeof mine.hostname);
    if (boot->allgather(boot, &mine, rec, sizeof mine))
        sym__fatal("shmem_init", "the %s bootstrap could not exchange PE records", boot->name);
    check_records(rec, npes);
    assign_hosts(rec, npes);

    int my_host = sym__world.peer[sym__world.me].host;
    for (int pe = 0; pe < npes; pe++) {
        sym_peer_t *p = &sym__world.peer[pe];
        if (pe == sym__world.me) {
            for (int s = 0; s < SYM_SEG_COUNT; s++) p->seg[s] = sym__world.seg[s].base;
            p->pid = rec[pe].shm.pid;
        } else if (p->host == my_host) {
            sym__shm_map_peer(pe, &rec[pe].shm);
            p->pid = rec[pe].shm.pid;
        }
    }
    /* Once everyone has mapped, the file handles can go. */
    if (sym__boot_barrier(boot))
        sym__fatal("shmem_init", "the %s bootstrap failed in a barrier", boot->name);
    sym__shm_close_handles();
    free(rec);

#ifdef SYM_HAVE_OFI
    const char *prov = getenv("SYMTRAIN_OFI_PROVIDER");
    if (sym__world.n_hosts == 1 && prov && *prov) sym__ofi_check_provider(prov);
#endif
    if (sym__world.n_hosts > 1) {
#ifdef SYM_HAVE_OFI
        sym__remote = sym__ofi_init(boot, &sym__ctx_default.remote);
#else
        sym__fatal("shmem_init",
                   "the job spans %d hosts but this build has no fabric transport; build with "
                   "libfabric (libfabric-dev) or run every PE on one host",
                   sym__world.n_hosts);
#endif
    }

    sym__rt.thread_level = requested < SHMEM_THREAD_SINGLE     ? SHMEM_THREAD_SINGLE
                           : requested > SHMEM_THREAD_MULTIPLE ? SHMEM_THREAD_MULTIPLE
                                                               : requested;
    sym__team_init_world();
    sym__heap_init();
    sym__rt.state = SYM_RT_RUNNING;
    on_exit(finalize_at_exit, NULL);
    sym__info("%d PEs on %d host(s), bootstrap %s, heap %zu MiB", npes, sym__world.n_hosts,
              boot->name, user >> 20);
    sym__team_barrier(SHMEM_TEAM_WORLD);
}

void shmem_init(void) { runtime_start(SHMEM_THREAD_SINGLE); }

int shmem_init_thread(int requested, int *provided) {
    runtime_start(requested);
    if (provided) *provided = sym__rt.thread_level;
    return 0;
}

void shmem_query_thread(int *provided) {
    SYM_REQUIRE_INIT("shmem_query_thread");
    *provided = sym__rt.thread_level;
}

void shmem_finalize(void) {
    if (sym__rt.state != SYM_RT_RUNNING) return; /* a second finalize does nothing */
    /* Non-blocking collectives still queued use the teams and the heap: every
     * PE completes its own (they match up, since every PE finalizes) and joins
     * the progress thread before anything is freed. */
    if (sym__coll_drain_hook) sym__coll_drain_hook(1);
    shmem_barrier_all();
    sym__ctx_fini_all();
    sym__heap_fini();
    sym__team_fini_all();
    sym__rt.state = SYM_RT_FINALIZED;
#ifdef SYM_HAVE_OFI
    if (sym__remote) sym__ofi_fini(sym__rt.boot);
    sym__remote = NULL;
#endif
    sym__shm_unmap_all();
    sym__rt.boot->fini(sym__rt.boot);
    sym__rt.boot = NULL;
    sym__abort_hook = NULL;
    free(sym__world.local_pes);
    sym__world.local_pes = NULL;
}

void shmem_global_exit(int status) {
    SYM_REQUIRE_INIT("shmem_global_exit");
    fflush(stdout);
    fflush(stderr);
    sym__rt.boot->abort_job(sym__rt.boot, status);
}

/* ---- queries ---- */

int shmem_my_pe(void) {
    SYM_REQUIRE_INIT("shmem_my_pe");
    return sym__world.me;
}

int shmem_n_pes(void) {
    SYM_REQUIRE_INIT("shmem_n_pes");
    return sym__world.npes;
}

int shmem_pe_accessible(int pe) {
    SYM_REQUIRE_INIT("shmem_pe_accessible");
    return pe >= 0 && pe < sym__world.npes;
}

int shmem_addr_accessible(const void *addr, int pe) {
    SYM_REQUIRE_INIT("shmem_addr_accessible");
    return pe >= 0 && pe < sym__world.npes && sym__is_symmetric(addr, 1);
}

void *shmem_ptr(const void *dest, int pe) {
    SYM_REQUIRE_INIT("shmem_ptr");
    if (pe < 0 || pe >= sym__world.npes) return NULL;
    return sym__peer_addr(dest, pe);
}

void *shmem_team_ptr(shmem_team_t team, const void *dest, int pe) {
    SYM_REQUIRE_INIT("shmem_team_ptr");
    if (team == SHMEM_TEAM_INVALID || pe < 0 || pe >= team->size) return NULL;
    return sym__peer_addr(dest, team->pes[pe]);
}

void shmem_info_get_version(int *major, int *minor) {
    *major = SHMEM_MAJOR_VERSION;
    *minor = SHMEM_MINOR_VERSION;
}

unsigned shmemx_version(void) { return SHMEMX_VERSION_HEX; }
const char *shmemx_version_string(void) { return SHMEMX_VERSION_STRING; }

void shmem_info_get_name(char *name) {
    strncpy(name, SHMEM_VENDOR_STRING, SHMEM_MAX_NAME_LEN - 1);
    name[SHMEM_MAX_NAME_LEN - 1] = '\0';
}

void shmem_pcontrol(const int level, ...) { (void)level; }

/* ---- deprecated names ---- */

void start_pes(int npes) {
    (void)npes; /* the launcher decides the number of PEs */
    shmem_init();
}
int _my_pe(void) { return shmem_my_pe(); }
int _num_pes(void) { return shmem_n_pes(); }
