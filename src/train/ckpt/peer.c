/*
 * peer.c — in-memory snapshots on buddy PEs (see peer.h), the way Gemini
 * (SOSP'23) brings a job back without the disk.
 *
 * On one host the store is one memory file (memfd) that symrun makes before
 * the job's first start and keeps open until it exits, handing its number to
 * every PE of every attempt (SYMTRAIN_MEMCKPT_FD); PE 0 sizes it at the first
 * sym_peer_open. Every PE maps all of it, so a region is at the same offset
 * for all, and writing into a peer's region is a same-host put (a copy into
 * the peer's memory, no part taken by the peer). Its layout:
 *
 *   page 0                 header: magic (written last), npes, cap, regions
 *   region q (q < npes)    one page of 4 entries, then 4 buffers of cap bytes:
 *                          entries/buffers 0, 1  PE q's own shard (two generations)
 *                          entries/buffers 2, 3  the copy of PE q-1's shard
 *
 * A buffer holds the shard's slices (one after another), then the balancer's
 * shares (int32) and speeds (double); its entry the snapshot's generation,
 * step, length, CRC32C and meta. Writing one: the entry's generation is set
 * to 0, the buffer and fields are written, the generation last (a release
 * store): an entry whose generation is not 0 is complete. Each PE writes its
 * own copy, then its buddy's; a barrier ends the snapshot. The two
 * generations alternate, and the one written is never the last committed
 * one, so a PE killed mid-write leaves the previous snapshot whole.
 *
 * Restoring, the newest generation every shard has a complete copy of is
 * taken: each PE checks its own shard's copies at it (own first, else the
 * buddy's) against their CRC32C, the PEs exchange the verdicts, and a shard
 * with neither sends them to the generation before, then to the disk.
 *
 * Jobs symrun does not start (torchrun, PMIx launchers, Kubernetes) get the
 * same file from the host's `symtrain memstore SOCKET` (tools/
 * symtrain_memstore.c), which holds it across their restarts: each PE
 * connects to SYMTRAIN_MEMCKPT_SOCKET and receives it (SCM_RIGHTS). A job's
 * first attempt empties the store, so a holder serving job after job never
 * offers one job another's snapshots.
 *
 * Across hosts (the PEs span several, each host with its holder; "xhost"
 * below) a store is one host's and holds the regions of that host's PEs
 * alone, region l for the PE of index l in SHMEM_TEAM_SHARED, whose entries
 * say whose shard they hold. A PE's buddy is the next PE of a ring ordered by
 * index on the host, then host (map_hosts), so on even hosts always a PE of
 * another host: one host's loss leaves a copy of every shard. The store is not
 * symmetric memory, so the copy goes in pieces through a symmetric staging
 * buffer on the buddy, with put-with-signal and a count of pieces taken
 * (xhost_copy), the buddy writing them into its COPY entry under the same
 * generation / CRC32C / commit rules. Restoring, the PEs gather what every
 * region holds, take the newest generation every shard has a verified copy
 * of (a shard's own region first), and the PE holding each chosen copy puts
 * it into its owner's restore window (symmetric, until the next save), from
 * which any PE reads it (sym_peer_read: a get across hosts), and writes
 * it back into its own store and to its buddy where they lack it, so both
 * copies exist again before training resumes. symrun's one
 * store stays on the same-host path, whatever SYMTRAIN_HOST_SIZE pretends.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <shmem.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "ckpt/peer.h"
#include "core/parallel.h"
#include "internal.h"
#include "util/util.h"

#define PEER_PAGE 4096
#define PEER_MAGIC 0x3252454550594d53ull /* "SYMPEER2" */
#define PEER_CHUNK (4u << 20) /* a cross-host copy's piece (SYMTRAIN_MEMCKPT_CHUNK) */
#define OWN 0  /* entries 0, 1 */
#define COPY 2 /* entries 2, 3 */

typedef struct {
    _Atomic uint64_t gen; /* 0: empty, or being written; set last */
    int64_t step;
    uint64_t len;         /* bytes in the buffer */
    uint32_t crc;         /* CRC32C of them */
    int32_t owner;        /* the PE whose shard it is */
    int32_t npes;
    int32_t nshares;
    sym_ckpt_meta_t meta; /* its pointers NULL */
} entry_t;

typedef struct {
    uint64_t npes, cap, regions; /* the job's PEs; regions: those of the store's host */
    _Atomic uint64_t magic;      /* set last */
} store_hdr_t;

_Static_assert(4 * sizeof(entry_t) <= PEER_PAGE, "a region's entries fit its first page");

struct sym_peer {
    int me, npes, buddy, fd;
    int mine;                /* my region: me, or (xhost) my index on my host */
    char *map;
    size_t map_len, cap;
    uint64_t next_gen, committed;
    long long *sym;          /* symmetric scratch: [0..15] source, [16..] results */
    int *src, *src_ent;      /* (npes) the chosen copy of each shard: region, entry */
    int *shares;             /* the chosen snapshot's, (npes) */
    double *speeds;
    long long exit_step;     /* test hook SYMTRAIN_TEST_MEM_EXIT_AT=PE:STEP:own|copy */
    int exit_copy;
    /* Several hosts (xhost): the store is my host's, regions for its PEs only. */
    int xhost, nhosts, ward; /* ward: the PE whose copy my region holds */
    int *host, *buddy_of;    /* (npes) each PE's host index and buddy */
    char (*host_name)[64];   /* (npes) */
    char *stage;             /* symmetric: the piece a ward's copy arrives in */
    uint64_t *sig;           /* symmetric: [0] pieces arrived, [1] pieces my buddy took */
    size_t chunk;
    uint64_t sent, got;      /* pieces sent to the buddy, taken from the ward: only grow */
    char *win;               /* symmetric, after a restore: my shard (entry page, buffer) */
};

static char *region(const sym_peer_t *p, int q) {
    return p->map + PEER_PAGE + (size_t)q * (PEER_PAGE + 4 * p->cap);
}
static entry_t *entry(const sym_peer_t *p, int q, int k) { return (entry_t *)region(p, q) + k; }
static char *buffer(const sym_peer_t *p, int q, int k) {
    return region(p, q) + PEER_PAGE + (size_t)k * p->cap;
}
static size_t tail_bytes(int nshares) { return (size_t)nshares * (sizeof(int32_t) + sizeof(double)); }

/* Map the pages of a buffer about to be read in one call, not a fault per
 * page (a restarted PE has none of the store mapped); best effort. */
static void prefault(const void *buf, size_t len) {
#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22 /* Linux 5.14 */
#endif
    uintptr_t a = (uintptr_t)buf & ~(uintptr_t)(PEER_PAGE - 1);
    if (len) madvise((void *)a, len + ((uintptr_t)buf - a), MADV_POPULATE_READ);
}

/* ---- small collectives over the world ---- */

static void max_all(sym_peer_t *p, long long *v, int n) {
    memcpy(p->sym, v, sizeof *v * (size_t)n);
    shmem_longlong_max_reduce(SHMEM_TEAM_WORLD, p->sym + 16, p->sym, (size_t)n);
    memcpy(v, p->sym + 16, sizeof *v * (size_t)n);
}

/* all[q * n + i] = PE q's v[i] (n <= 16). */
static void gather_all(sym_peer_t *p, const long long *v, long long *all, int n) {
    memcpy(p->sym, v, sizeof *v * (size_t)n);
    shmem_barrier_all(); /* no PE still reads the results of the last one */
    shmem_longlong_fcollect(SHMEM_TEAM_WORLD, p->sym + 16, p->sym, (size_t)n);
    memcpy(all, p->sym + 16, sizeof *all * (size_t)n * (size_t)p->npes);
}

/* ---- opening the store ---- */

/* The store from the holder at `path` (symtrain memstore): its descriptor,
 * or -1 with why. */
static int store_from_socket(const char *path, char *why, size_t len) {
    struct sockaddr_un addr = {0};
    addr.sun_family = AF_UNIX;
    if (strlen(path) >= sizeof addr.sun_path) {
        snprintf(why, len, "SYMTRAIN_MEMCKPT_SOCKET=%s is longer than a socket path can be", path);
        return -1;
    }
    strcpy(addr.sun_path, path);
    int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0 || connect(s, (struct sockaddr *)&addr, sizeof addr) < 0) {
        snprintf(why, len, "cannot reach the store holder at SYMTRAIN_MEMCKPT_SOCKET=%s (%s): "
                           "start `symtrain memstore %s` on this host before the job", path,
                 strerror(errno), path);
        if (s >= 0) close(s);
        return -1;
    }
    char byte;
    struct iovec iov = {&byte, 1};
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(sizeof(int))];
    } ctl;
    struct msghdr msg = {0};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = ctl.buf;
    msg.msg_controllen = sizeof ctl.buf;
    int fd = -1;
    ssize_t n = recvmsg(s, &msg, MSG_CMSG_CLOEXEC);
    struct cmsghdr *c = n == 1 ? CMSG_FIRSTHDR(&msg) : NULL;
    if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
        c->cmsg_len == CMSG_LEN(sizeof(int)))
        memcpy(&fd, CMSG_DATA(c), sizeof fd);
    close(s);
    if (fd < 0)
        snprintf(why, len, "the store holder at SYMTRAIN_MEMCKPT_SOCKET=%s handed over no store "
                           "(is it `symtrain memstore`, and run by this user?)", path);
    return fd;
}

/* PE 0 (xhost: each host's first PE): the store is laid out for npes PEs,
 * `regions` regions and cap bytes, or made so (emptied); a job's first
 * attempt always empties it. */
static int shape_store(int fd, int npes, int regions, size_t cap, size_t need) {
    struct stat st;
    store_hdr_t h;
    if (sym__env_int("SYMTRAIN_RESTART_COUNT", 0, 0, LONG_MAX) > 0 && fstat(fd, &st) == 0 &&
        (size_t)st.st_size == need &&
        pread(fd, &h, sizeof h, 0) == (ssize_t)sizeof h && h.magic == PEER_MAGIC &&
        h.npes == (uint64_t)npes && h.cap == cap && h.regions == (uint64_t)regions)
        return SYM_OK; /* a restart: the snapshots are there */
    if (ftruncate(fd, 0) < 0 || ftruncate(fd, (off_t)need) < 0)
        return sym__error(SYM_ENOMEM, "cannot size the in-memory snapshot store to %zu bytes: %s",
                          need, strerror(errno));
    h.npes = (uint64_t)npes;
    h.cap = cap;
    h.regions = (uint64_t)regions;
    h.magic = PEER_MAGIC;
    if (pwrite(fd, &h, sizeof h, 0) != (ssize_t)sizeof h)
        return sym__error(SYM_EIO, "cannot write the in-memory snapshot store's header: %s",
                          strerror(errno));
    return SYM_OK;
}

/* ---- several hosts: who is where, and whose buddy ---- */

typedef struct {
    long long key; /* index on its host, then host: the buddy ring's order */
    int pe;
} ring_t;

static int ring_cmp(const void *a, const void *b) {
    long long x = ((const ring_t *)a)->key, y = ((const ring_t *)b)->key;
    return x < y ? -1 : x > y;
}

/* Collective: every PE's host (hosts numbered by their first PE) and host
 * name, and the buddy ring. The ring takes the PEs by their index on their
 * host, then by host (index 0 of hosts 0, 1, .., then index 1 of each ..),
 * and a PE's buddy is the next in it, its ward the one before: with as many
 * PEs on every host, the buddy of PE (host h, index l) is (h + 1, l), and the
 * last host's is (0, l + 1), on another host always. With uneven hosts the
 * ring runs on one host where only it has PEs left (host 0 of 1 PE and host 1
 * of 3: 1 -> 2 -> 3 on host 1); such a PE's copy survives its own death but
 * not its host's, and sym_peer_open says so. */
static int map_hosts(sym_peer_t *p) {
    int n = p->npes;
    long long v[11] = {shmem_team_translate_pe(SHMEM_TEAM_SHARED, 0, SHMEM_TEAM_WORLD),
                       shmem_team_my_pe(SHMEM_TEAM_SHARED)};
    char name[64] = "";
    gethostname(name, sizeof name - 1);
    memcpy(v + 2, name, sizeof name);
    long long *all = malloc(sizeof *all * 11 * (size_t)n);
    ring_t *ring = malloc(sizeof *ring * (size_t)n);
    p->host = calloc((size_t)n, sizeof *p->host);
    p->buddy_of = calloc((size_t)n, sizeof *p->buddy_of);
    p->host_name = calloc((size_t)n, sizeof *p->host_name);
    long long oom = !all || !ring || !p->host || !p->buddy_of || !p->host_name;
    max_all(p, &oom, 1); /* every PE fails together, or none */
    if (oom) {
        free(all);
        free(ring);
        return sym__error(SYM_ENOMEM, "out of memory for the in-memory snapshots' host map");
    }
    gather_all(p, v, all, 11);
    p->nhosts = 0;
    for (int q = 0; q < n; q++) {
        long long lead = all[11 * q], h = 0;
        for (int r = 0; r < n; r++) /* hosts whose first PE comes before q's host's */
            h += all[11 * r + 1] == 0 && r < lead;
        p->host[q] = (int)h;
        if (h + 1 > p->nhosts) p->nhosts = (int)h + 1;
        memcpy(p->host_name[q], all + 11 * q + 2, 64);
        p->host_name[q][63] = 0;
    }
    for (int q = 0; q < n; q++) {
        ring[q].key = all[11 * q + 1] * (long long)n + p->host[q];
        ring[q].pe = q;
    }
    qsort(ring, (size_t)n, sizeof *ring, ring_cmp);
    for (int i = 0; i < n; i++) {
        p->buddy_of[ring[i].pe] = ring[(i + 1) % n].pe;
        if (ring[(i + 1) % n].pe == p->me) p->ward = ring[i].pe;
    }
    p->buddy = p->buddy_of[p->me];
    p->mine = (int)all[11 * p->me + 1];
    free(all);
    free(ring);
    return SYM_OK;
}

/* "host 1 (name)" of PE q, for messages. */
static const char *host_of(const sym_peer_t *p, int q, char *out, size_t len) {
    snprintf(out, len, "host %d (%s)", p->host[q], p->host_name[q]);
    return out;
}

static void read_exit_hook(sym_peer_t *p) {
    p->exit_step = -1;
    const char *hook = getenv("SYMTRAIN_TEST_MEM_EXIT_AT");
    const char *restart = getenv("SYMTRAIN_RESTART_COUNT");
    int pe;
    long long step;
    char where[8];
    if (hook && (!restart || !strcmp(restart, "0")) &&
        sscanf(hook, "%d:%lld:%7s", &pe, &step, where) == 3 && pe == p->me) {
        p->exit_step = step;
        p->exit_copy = !strcmp(where, "copy");
    }
}

int sym_peer_open(size_t bytes, int nshares, sym_peer_t **out) {
    *out = NULL;
    sym_peer_t *p = calloc(1, sizeof *p);
    int npes = shmem_n_pes();
    long long *sym = shmem_calloc(16 + 16 * (size_t)npes, sizeof(long long)); /* collective */
    if (p) {
        p->src = calloc((size_t)npes, sizeof *p->src);
        p->src_ent = calloc((size_t)npes, sizeof *p->src_ent);
        p->shares = calloc((size_t)npes, sizeof *p->shares);
        p->speeds = calloc((size_t)npes, sizeof *p->speeds);
    }
    if (!p || !sym || !p->src || !p->src_ent || !p->shares || !p->speeds) {
        if (sym) shmem_free(sym);
        if (p) p->sym = NULL;
        sym_peer_close(p);
        return sym__error(SYM_ENOMEM, "out of memory for the in-memory snapshots");
    }
    p->sym = sym;
    p->me = shmem_my_pe();
    p->npes = npes;
    p->buddy = (p->me + 1) % npes;
    p->mine = p->me;
    p->map = MAP_FAILED;
    long fd = sym__env_int("SYMTRAIN_MEMCKPT_FD", -1, 0, INT_MAX);
    struct stat st;
    if (fd >= 0 && fstat((int)fd, &st) < 0) fd = -1;
    const char *sock = getenv("SYMTRAIN_MEMCKPT_SOCKET");
    char reason[600] = "";
    int from_sock = 0;
    if (fd < 0 && sock && *sock) { /* not symrun's: the host's holder's */
        fd = store_from_socket(sock, reason, sizeof reason);
        from_sock = 1;
    }
    p->fd = (int)fd;
    if (fd >= 0) fcntl((int)fd, F_SETFD, FD_CLOEXEC); /* not for what the PE runs */
    if (nshares > npes) nshares = npes;
    /* Several hosts, each with its holder: each host's store holds its own PEs'
     * regions, and the copies cross hosts through the symmetric heap. (symrun's
     * one store is one machine's, whatever SYMTRAIN_HOST_SIZE pretends.) */
    long long v[4] = {fd < 0 ? npes - p->me : 0, (long long)(bytes + tail_bytes(nshares)),
                      from_sock && shmem_team_n_pes(SHMEM_TEAM_SHARED) != npes,
                      (long long)sym__env_size("SYMTRAIN_MEMCKPT_CHUNK", PEER_CHUNK)};
    max_all(p, v, 4); /* v[0]: npes - the first PE without a store; v[3]: one piece size */
    if (v[0]) {
        int first = npes - (int)v[0], me = p->me;
        if (fd < 0 && reason[0] && me != 0 && shmem_team_my_pe(SHMEM_TEAM_SHARED) == 0)
            sym__warn("symtrain train", "no in-memory snapshot store on this host: %s", reason);
        sym_peer_close(p); /* PE 0 says it for the job */
        if (first != me)
            return sym__error(SYM_ENOENT, "no in-memory snapshot store on PE %d's host (its log "
                              "says why: each host needs its `symtrain memstore SOCKET`)", first);
        if (reason[0]) return sym__error(SYM_ENOENT, "no in-memory snapshot store: %s", reason);
        return sym__error(SYM_ENOENT, "no in-memory snapshot store: symrun holds it, or each "
                                      "host's `symtrain memstore SOCKET` for jobs symrun does not "
                                      "start (SYMTRAIN_MEMCKPT_SOCKET=SOCKET on every PE)");
    }
    p->xhost = (int)v[2];
    p->cap = ((size_t)v[1] + PEER_PAGE - 1) / PEER_PAGE * PEER_PAGE;
    if (!p->cap) p->cap = PEER_PAGE;
    int regions = npes, rc = SYM_OK, shaper = p->me == 0;
    if (p->xhost) {
        if ((rc = map_hosts(p))) { /* collective; out of memory (on any PE) fails it */
            sym_peer_close(p);
            return rc;
        }
        regions = shmem_team_n_pes(SHMEM_TEAM_SHARED);
        shaper = p->mine == 0;
        p->chunk = (size_t)v[3];
        p->chunk = (p->chunk + PEER_PAGE - 1) / PEER_PAGE * PEER_PAGE;
        if (p->chunk < PEER_PAGE) p->chunk = PEER_PAGE;
        if (p->chunk > p->cap) p->chunk = p->cap;
        p->stage = shmem_malloc(p->chunk); /* collective, the same size on every PE */
        p->sig = shmem_calloc(2, sizeof *p->sig);
    }
    p->map_len = PEER_PAGE + (size_t)regions * (PEER_PAGE + 4 * p->cap);
    if (p->xhost && (!p->stage || !p->sig))
        rc = sym__error(SYM_ENOMEM, "PE %d: no room in the symmetric heap for the in-memory "
                        "snapshots' staging buffer (%zu bytes); raise SYMTRAIN_SYMMETRIC_SIZE or "
                        "lower SYMTRAIN_MEMCKPT_CHUNK", p->me, p->chunk);
    else if (shaper)
        rc = shape_store(p->fd, npes, regions, p->cap, p->map_len);
    char why[512];
    snprintf(why, sizeof why, "%s", rc ? sym_last_error() : "");
    v[0] = rc != 0;
    max_all(p, v, 1); /* every PE maps it once its host's first PE has sized it */
    if (!v[0]) {
        p->map = mmap(NULL, p->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, p->fd, 0);
        if (p->map == MAP_FAILED) {
            rc = sym__error(SYM_ENOMEM, "cannot map the in-memory snapshot store (%zu bytes): %s",
                            p->map_len, strerror(errno));
            snprintf(why, sizeof why, "%s", sym_last_error());
        }
    }
    v[0] = rc != 0 || v[0];
    max_all(p, v, 1);
    if (v[0]) {
        sym_peer_close(p);
        return sym__error(rc ? rc : SYM_ENOMEM, "%s", rc ? why : "another PE could not map the "
                                                                "in-memory snapshot store");
    }
    /* Generations only grow over the job's life: the next is above any here. */
    long long g = 0;
    for (int k = 0; k < 4; k++) {
        long long e = (long long)atomic_load(&entry(p, p->mine, k)->gen);
        if (e > g) g = e;
    }
    max_all(p, &g, 1);
    p->next_gen = (uint64_t)g + 1;
    if (p->xhost && p->me == 0) {
        int same = 0;
        for (int q = 0; q < npes; q++) same += p->host[q] == p->host[p->buddy_of[q]];
        if (same)
            sym__warn("symtrain train", "the hosts hold uneven numbers of PEs: %d of the %d PEs "
                      "%s on %s own host, whose loss takes both copies (the disk is then the way "
                      "back)", same, npes, same > 1 ? "keep their in-memory copies" :
                      "keeps its in-memory copy", same > 1 ? "their" : "its");
        else
            sym__info("in-memory snapshots across %d hosts: each PE's copy on a PE of the next "
                      "host", p->nhosts);
    }
    read_exit_hook(p);
    *out = p;
    return SYM_OK;
}

/* ---- saving ---- */

/* Which of the two entries at `base` of region q to write: never the one
 * holding the last committed snapshot; else the older. */
static int pick(const sym_peer_t *p, int q, int base) {
    uint64_t g0 = atomic_load(&entry(p, q, base)->gen), g1 = atomic_load(&entry(p, q, base + 1)->gen);
    if (p->committed && g0 == p->committed) return base + 1;
    if (p->committed && g1 == p->committed) return base;
    return g0 <= g1 ? base : base + 1;
}

/* Copy `len` bytes to dst; the test hook kills this PE halfway through. */
static void copy_out(char *dst, const void *src, size_t len, size_t *done, size_t total, int die) {
    if (die && *done + len >= total / 2) {
        size_t half = total / 2 > *done ? total / 2 - *done : 0;
        memcpy(dst, src, half);
        raise(SIGKILL); /* a machine failing mid-copy: half of it written, gen 0 */
    }
    memcpy(dst, src, len);
    *done += len;
}

static void begin_entry(entry_t *e) {
    atomic_store_explicit(&e->gen, 0, memory_order_release);
    atomic_thread_fence(memory_order_seq_cst); /* gen 0 is seen before any byte changes */
}

static void end_entry(entry_t *e, uint64_t gen, const sym_ckpt_meta_t *meta, size_t len,
                      uint32_t crc, int owner, int npes) {
    e->step = meta->step;
    e->len = len;
    e->crc = crc;
    e->owner = owner;
    e->npes = npes;
    e->nshares = meta->nshares;
    e->meta = *meta;
    e->meta.shares = NULL;
    e->meta.speeds = NULL;
    e->meta.tensors = NULL;
    e->meta.ntensors = 0;
    atomic_store_explicit(&e->gen, gen, memory_order_release); /* complete */
}

/* Which of my region's entries at generation g are complete and verify: bit k. */
static long long verified_at(const sym_peer_t *p, uint64_t g) {
    long long mask = 0;
    for (int k = 0; k < 4; k++) {
        const entry_t *e = entry(p, p->mine, k);
        if (atomic_load_explicit(&e->gen, memory_order_acquire) == g && e->npes == p->npes &&
            e->owner >= 0 && e->owner < p->npes && e->len <= p->cap &&
            (prefault(buffer(p, p->mine, k), e->len),
             sym__parallel_crc32c(0, NULL, buffer(p, p->mine, k), e->len) == e->crc))
            mask |= 1ll << k;
    }
    return mask;
}

/* Bits k of my region's entries at `base` (OWN, COPY) that are PE q's shard. */
static long long owned_by(const sym_peer_t *p, int base, int q) {
    long long mask = 0;
    for (int k = base; k < base + 2; k++)
        if (entry(p, p->mine, k)->owner == q) mask |= 1ll << k;
    return mask;
}

/* ---- the copy to a buddy on another host ----
 * The store is not symmetric memory, so a copy crosses hosts in pieces through
 * the buddy's symmetric staging buffer: message 0 is the entry (generation 0
 * when the sender has no snapshot this time), messages 1..ceil(cap / chunk)
 * the buffer's pieces (empty past its length). Each is a put-with-signal
 * setting the buddy's count of pieces arrived; the buddy copies it into its
 * COPY entry and sets the sender's count of pieces taken, which the sender
 * waits for before the next put. Every PE sends to its buddy and takes from
 * its ward in the same rounds, so the ring never waits on itself. The entry
 * is opened (generation 0) at message 0 and committed after the last, its
 * CRC32C checked: a sender killed mid-copy leaves it open, the other COPY
 * entry (the last committed snapshot) whole. */
static int xhost_copy(sym_peer_t *p, const entry_t *hdr, const char *b, int die) {
    size_t nch = (p->cap + p->chunk - 1) / p->chunk, len = hdr->gen ? hdr->len : 0;
    entry_t in;
    entry_t *c = NULL;
    char *dst = NULL;
    for (size_t m = 0; m <= nch; m++) {
        const char *src = (const char *)hdr;
        size_t n = sizeof *hdr, off = m ? (m - 1) * p->chunk : 0;
        if (m) {
            src = b + off;
            n = off < len ? (len - off < p->chunk ? len - off : p->chunk) : 0;
        }
        shmem_uint64_wait_until(&p->sig[1], SHMEM_CMP_GE, p->sent); /* the buddy took the last */
        if (die && m && off + n >= len / 2) {
            shmem_putmem(p->stage, src, len / 2 - off, p->buddy);
            shmem_quiet();
            raise(SIGKILL); /* a host failing mid-copy: half of it sent, the entry open */
        }
        shmem_putmem_signal(p->stage, src, n, &p->sig[0], ++p->sent, SHMEM_SIGNAL_SET, p->buddy);
        shmem_signal_wait_until(&p->sig[0], SHMEM_CMP_GE, ++p->got); /* the ward's piece m */
        if (m == 0) {
            memcpy(&in, p->stage, sizeof in);
            if (in.gen && in.len <= p->cap && in.owner == p->ward &&
                !(verified_at(p, in.gen) & owned_by(p, COPY, in.owner))) { /* not held yet */
                int k = pick(p, p->mine, COPY);
                c = entry(p, p->mine, k);
                dst = buffer(p, p->mine, k);
                begin_entry(c);
            }
        } else if (c && off < in.len) {
            memcpy(dst + off, p->stage, in.len - off < p->chunk ? in.len - off : p->chunk);
        }
        shmem_uint64_atomic_set(&p->sig[1], p->got, p->ward);
    }
    if (!c) return SYM_OK;
    if (sym__crc32c(0, dst, in.len) != in.crc)
        return sym__error(SYM_EIO, "PE %d: the copy of PE %d's snapshot arrived damaged (CRC32C "
                          "differs); the previous one is kept", p->me, p->ward);
    end_entry(c, in.gen, &in.meta, in.len, in.crc, in.owner, in.npes);
    return SYM_OK;
}

int sym_peer_save(sym_peer_t *p, const sym_ckpt_meta_t *meta, const sym_ckpt_slice_t *slices,
                  int n) {
    size_t total = tail_bytes(meta->nshares);
    for (int i = 0; i < n; i++)
        total += (size_t)sym_ckpt_slice_elems(&slices[i]) * sym_dtype_size(slices[i].dtype);
    int rc = SYM_OK;
    uint64_t gen = p->next_gen++;
    entry_t hdr = {0};
    char *b = NULL;
    int die = meta->step == p->exit_step;
    if (p->win) { /* a restore's window, no longer read */
        shmem_free(p->win); /* collective */
        p->win = NULL;
    }
    if (n < 0) {
        rc = sym__error(SYM_ENOMEM, "PE %d: out of memory for a snapshot's table", p->me);
    } else if (total > p->cap || meta->nshares > p->npes) {
        rc = sym__error(SYM_EINVAL, "PE %d: a snapshot of %zu bytes does not fit the in-memory "
                        "store's %zu", p->me, total, p->cap);
    } else {
        /* its own copy */
        int k = pick(p, p->mine, OWN);
        entry_t *e = entry(p, p->mine, k);
        b = buffer(p, p->mine, k);
        begin_entry(e);
        size_t off = 0;
        uint32_t crc = 0; /* copied and checksummed in one pass, on the threads */
        for (int i = 0; i < n; i++) {
            size_t len = (size_t)sym_ckpt_slice_elems(&slices[i]) * sym_dtype_size(slices[i].dtype);
            if (die && !p->exit_copy) { /* the hook: dies halfway, its CRC never wanted */
                copy_out(b + off, slices[i].data, len, &off, total, 1);
                continue;
            }
            crc = sym__parallel_crc32c(crc, b + off, slices[i].data, len);
            off += len;
        }
        size_t ns = (size_t)(meta->nshares > 0 ? meta->nshares : 0);
        if (ns) {
            memcpy(b + off, meta->shares, ns * sizeof(int32_t));
            memcpy(b + off + ns * sizeof(int32_t), meta->speeds, ns * sizeof(double));
        }
        crc = sym__crc32c(crc, b + off, total - off);
        end_entry(e, gen, meta, total, crc, p->me, p->npes);
        memcpy(&hdr, e, sizeof hdr);
        if (!p->xhost) { /* the buddy's copy: one put of the whole buffer into its region */
            int kc = pick(p, p->buddy, COPY);
            entry_t *c = entry(p, p->buddy, kc);
            begin_entry(c);
            off = 0;
            if (die && p->exit_copy) /* the hook: dies halfway */
                copy_out(buffer(p, p->buddy, kc), b, total, &off, total, 1);
            sym__parallel_copy(buffer(p, p->buddy, kc), b, total);
            end_entry(c, gen, meta, total, crc, p->me, p->npes);
        }
    }
    if (p->xhost) { /* every PE takes part, with generation 0 if it has nothing */
        int crc_rc = xhost_copy(p, &hdr, b, die && p->exit_copy && !rc);
        if (!rc) rc = crc_rc;
    }
    shmem_barrier_all(); /* every PE's copies of `gen` are complete */
    long long bad = rc != 0;
    max_all(p, &bad, 1);
    if (!bad) p->committed = gen;
    if (rc) return rc;
    return bad ? sym__error(SYM_EINVAL, "another PE's snapshot did not fit the in-memory store") : SYM_OK;
}

/* ---- restoring ---- */

/* Test hook SYMTRAIN_TEST_MEM_LOST=1,2 (on the first restart): the regions of
 * those PEs read as lost, as a failed host's would. */
static void lose_regions(sym_peer_t *p) {
    const char *s = getenv("SYMTRAIN_TEST_MEM_LOST");
    const char *restart = getenv("SYMTRAIN_RESTART_COUNT");
    if (!s || !restart || strcmp(restart, "1")) return;
    for (const char *t = s; *t;) {
        char *end;
        long q = strtol(t, &end, 10);
        if (end == t) break;
        if (q == p->me)
            for (int k = 0; k < 4; k++) memset(entry(p, p->mine, k), 0, sizeof(entry_t));
        t = *end == ',' ? end + 1 : end;
    }
}

/* The complete entry at `base` of region q that is PE `owner`'s shard at
 * generation g and verifies; -1 if none. */
static int good_entry(const sym_peer_t *p, int q, int base, int owner, uint64_t g) {
    for (int k = base; k < base + 2; k++) {
        const entry_t *e = entry(p, q, k);
        if (atomic_load_explicit(&e->gen, memory_order_acquire) == g && e->owner == owner &&
            e->npes == p->npes && e->len <= p->cap &&
            (prefault(buffer(p, q, k), e->len),
             sym__parallel_crc32c(0, NULL, buffer(p, q, k), e->len) == e->crc))
            return k;
    }
    return -1;
}

/* ---- restoring across hosts ----
 * Each host's store holds its PEs' regions alone, so the PEs exchange what
 * every region holds (each entry's generation, step and owner); the newest
 * generation of which every shard has a copy that verifies is taken, a
 * shard's own region preferred. The PE holding the chosen copy puts it
 * (entry, then the buffer in pieces) into its owner's restore window, a
 * symmetric buffer of the store's cap, kept until the next save; sym_peer_read
 * reads a shard from its owner's window (a get when the owner is on another
 * host). */

/* Collective, after src[]/src_ent[] are chosen at generation g: every shard
 * into its owner's window; 0, or an error on every PE. */
static int xhost_deliver(sym_peer_t *p, uint64_t g) {
    size_t win_len = PEER_PAGE + p->cap;
    p->win = shmem_malloc(win_len); /* collective */
    long long bad = !p->win;
    max_all(p, &bad, 1);
    if (bad) {
        if (p->win) shmem_free(p->win);
        p->win = NULL;
        return sym__error(SYM_ENOMEM, "no room in the symmetric heap for the restore window "
                          "(%zu bytes on every PE) the copies on other hosts travel through; raise "
                          "SYMTRAIN_SYMMETRIC_SIZE", win_len);
    }
    for (int q = 0; q < p->npes; q++) {
        if (p->src[q] != p->me) continue;
        const entry_t *e = entry(p, p->mine, p->src_ent[q]);
        const char *b = buffer(p, p->mine, p->src_ent[q]);
        if (q == p->me) {
            memcpy(p->win, e, sizeof *e);
            memcpy(p->win + PEER_PAGE, b, e->len);
            continue;
        }
        shmem_putmem(p->win, e, sizeof *e, q);
        for (size_t off = 0; off < e->len; off += p->chunk)
            shmem_putmem(p->win + PEER_PAGE + off, b + off,
                         e->len - off < p->chunk ? e->len - off : p->chunk, q);
    }
    shmem_barrier_all(); /* completes the puts */
    const entry_t *w = (const entry_t *)p->win;
    bad = !(atomic_load(&w->gen) == g && w->owner == p->me && w->len <= p->cap &&
            sym__parallel_crc32c(0, NULL, p->win + PEER_PAGE, w->len) == w->crc);
    long long any = bad;
    max_all(p, &any, 1);
    if (bad) return sym__error(SYM_EIO, "PE %d: its shard arrived damaged from PE %d", p->me,
                               p->src[p->me]);
    if (any)
        return sym__error(SYM_EIO, "another PE's shard arrived damaged from the PE holding it");
    return SYM_OK;
}

/* What the PEs' entries hold, gathered: for each PE four (generation, step,
 * owner) triples (generation 0: none). The newest generation anywhere; for
 * generation g, its step (-1: no copy of it anywhere) and in *lost the first
 * shard with no copy of it (-1: every shard has one). */
static long long newest_gen(const long long *all, int n) {
    long long newest = 0;
    for (int i = 0; i < 4 * n; i++)
        if (all[3 * i] > newest) newest = all[3 * i];
    return newest;
}

static long long gen_step(const long long *all, int n, long long g, int *lost) {
    long long step = -1;
    *lost = -1;
    for (int i = 0; i < 4 * n; i++)
        if (all[3 * i] == g) step = all[3 * i + 1];
    for (int q = 0; step >= 0 && q < n && *lost < 0; q++) {
        int has = 0;
        for (int i = 0; i < 4 * n; i++) has |= all[3 * i] == g && all[3 * i + 2] == q;
        if (!has) *lost = q;
    }
    return step;
}

/* No snapshot can be restored: none was ever whole (newest 0), or none has a
 * whole copy of every shard (why names them). PE 0 reports it; SYM_ENOENT.
 * `store`: "store holds" (one host) or "stores hold" (several). */
static int unusable(const sym_peer_t *p, long long newest, const char *why, const char *store,
                    void (*report)(void *user, const char *msg), void *user) {
    char msg[600];
    if (!newest)
        snprintf(msg, sizeof msg, "the in-memory %s no complete snapshot (none was taken before "
                 "the failure)", store);
    else
        snprintf(msg, sizeof msg, "the in-memory snapshots cannot be used: no whole copy%s: both "
                 "are gone or half-written", why);
    if (p->me == 0 && report) report(user, msg);
    return sym__error(SYM_ENOENT, "%s", msg);
}

static int xhost_find(sym_peer_t *p, sym_ckpt_meta_t *meta,
                      void (*report)(void *user, const char *msg), void *user) {
    lose_regions(p);
    shmem_barrier_all();
    int n = p->npes;
    long long rep[12], *all = malloc(sizeof *all * 12 * (size_t)n);
    long long *res = malloc(sizeof *res * (size_t)n);
    if (!all || !res) {
        free(all);
        free(res);
        return sym__error(SYM_ENOMEM, "out of memory");
    }
    for (int k = 0; k < 4; k++) { /* my region's entries: (gen, step, owner) */
        const entry_t *e = entry(p, p->mine, k);
        uint64_t g = atomic_load_explicit(&e->gen, memory_order_acquire);
        int ok = g && e->npes == n && e->owner >= 0 && e->owner < n;
        rep[3 * k] = ok ? (long long)g : 0;
        rep[3 * k + 1] = ok ? e->step : -1;
        rep[3 * k + 2] = ok ? e->owner : -1;
    }
    gather_all(p, rep, all, 12);
    char why[400] = "", msg[600], h1[96], h2[96];
    int wlen = 0, found = 0, rc = SYM_OK;
    long long newest = newest_gen(all, n);
    for (long long g = newest; g > 0 && !found; g--) {
        int lost;
        long long step = gen_step(all, n, g, &lost);
        if (step < 0) continue; /* no copy of it anywhere */
        if (lost < 0) { /* every region's holder checks its copies at g */
            long long mask = verified_at(p, (uint64_t)g);
            gather_all(p, &mask, res, 1);
            for (int q = 0; q < n; q++) {
                p->src[q] = p->src_ent[q] = -1;
                for (int pass = 0; pass < 2 && p->src[q] < 0; pass++) /* its own region first */
                    for (int r = 0; r < n && p->src[q] < 0; r++)
                        for (int k = 0; k < 4 && p->src[q] < 0; k++)
                            if ((res[r] >> k & 1) && all[12 * r + 3 * k + 2] == q &&
                                (pass || r == q))
                                p->src[q] = r, p->src_ent[q] = k;
                if (p->src[q] < 0 && lost < 0) lost = q;
            }
        }
        if (lost >= 0) {
            if (wlen < (int)sizeof why - 200)
                wlen += snprintf(why + wlen, sizeof why - (size_t)wlen,
                                 "%s of PE %d's shard of step %lld (its own on %s and PE %d's on "
                                 "%s)", wlen ? ", nor" : "", lost, step,
                                 host_of(p, lost, h1, sizeof h1), p->buddy_of[lost],
                                 host_of(p, p->buddy_of[lost], h2, sizeof h2));
            continue;
        }
        found = 1;
        if ((rc = xhost_deliver(p, (uint64_t)g))) break;
        p->committed = (uint64_t)g; /* kept whole from here on */
        /* Both copies of every shard again at once, so a second failure before
         * the next snapshot finds them: my shard into my region where it was
         * not (a fresh store), and to my buddy (xhost_copy keeps what it has). */
        const entry_t *w = (const entry_t *)p->win;
        if (!(verified_at(p, (uint64_t)g) & owned_by(p, OWN, p->me))) {
            int k = pick(p, p->mine, OWN);
            begin_entry(entry(p, p->mine, k));
            memcpy(buffer(p, p->mine, k), p->win + PEER_PAGE, w->len);
            end_entry(entry(p, p->mine, k), (uint64_t)g, &w->meta, w->len, w->crc, p->me, n);
        }
        long long bad = xhost_copy(p, w, p->win + PEER_PAGE, 0) != SYM_OK;
        shmem_barrier_all();
        max_all(p, &bad, 1);
        if (bad && p->me == 0)
            sym__warn("symtrain train", "a restored shard's copy to its buddy arrived damaged; "
                      "the next snapshot copies it again");
        entry_t e0; /* the meta, from PE 0's window */
        shmem_getmem(&e0, p->win, sizeof e0, 0);
        *meta = e0.meta;
        meta->nshares = e0.nshares;
        if (e0.nshares > 0) {
            size_t ns = (size_t)e0.nshares, at = PEER_PAGE + e0.len - tail_bytes(e0.nshares);
            shmem_getmem(p->shares, p->win + at, sizeof(int32_t) * ns, 0);
            shmem_getmem(p->speeds, p->win + at + sizeof(int32_t) * ns, sizeof(double) * ns, 0);
        }
        meta->shares = e0.nshares > 0 ? p->shares : NULL;
        meta->speeds = e0.nshares > 0 ? p->speeds : NULL;
        p->committed = (uint64_t)g; /* kept whole by the next save */
    }
    free(all);
    free(res);
    if (found && !rc) {
        if (wlen && p->me == 0) /* a newer snapshot was passed over: why */
            sym__warn("symtrain train", "the newest in-memory snapshots lack a whole copy%s: an "
                      "older one is taken", why);
        return SYM_OK;
    }
    if (rc) {
        snprintf(msg, sizeof msg, "the in-memory snapshots cannot be used: %s", sym_last_error());
        if (p->me == 0 && report) report(user, msg);
        return sym__error(SYM_ENOENT, "%s", msg);
    }
    return unusable(p, newest, why, "stores hold", report, user);
}

int sym_peer_find(sym_peer_t *p, sym_ckpt_meta_t *meta,
                  void (*report)(void *user, const char *msg), void *user) {
    if (p->xhost) return xhost_find(p, meta, report, user);
    lose_regions(p);
    shmem_barrier_all();
    int n = p->npes;
    /* My shard's complete copies: (gen, step, me) of own entries, then the buddy's. */
    long long mine[12], *all = malloc(sizeof *all * 12 * (size_t)n);
    if (!all) return sym__error(SYM_ENOMEM, "out of memory");
    for (int k = 0; k < 4; k++) {
        const entry_t *e = entry(p, k < 2 ? p->me : p->buddy, k < 2 ? OWN + k : COPY + k - 2);
        uint64_t g = atomic_load_explicit(&e->gen, memory_order_acquire);
        int ok = g && e->owner == p->me && e->npes == n;
        mine[3 * k] = ok ? (long long)g : 0;
        mine[3 * k + 1] = ok ? e->step : -1;
        mine[3 * k + 2] = ok ? p->me : -1;
    }
    gather_all(p, mine, all, 12);
    /* Every generation present, newest first: taken when every shard has a
     * copy of it that verifies; else the first shard without one is named. */
    char why[400] = "";
    int wlen = 0, found = 0;
    long long newest = newest_gen(all, n);
    for (long long g = newest; g > 0 && !found; g--) {
        int lost;
        long long step = gen_step(all, n, g, &lost);
        if (step < 0) continue; /* no copy of it anywhere */
        if (lost < 0) {
            /* Each PE checks its own shard's copies at g: own first, else the buddy's. */
            long long v[2] = {-1, -1}, *res = malloc(sizeof *res * 2 * (size_t)n);
            if (!res) {
                free(all);
                return sym__error(SYM_ENOMEM, "out of memory");
            }
            int k = good_entry(p, p->me, OWN, p->me, (uint64_t)g);
            if (k >= 0) v[0] = p->me, v[1] = k;
            else if ((k = good_entry(p, p->buddy, COPY, p->me, (uint64_t)g)) >= 0)
                v[0] = p->buddy, v[1] = k;
            gather_all(p, v, res, 2);
            for (int q = 0; q < n; q++) {
                p->src[q] = (int)res[2 * q];
                p->src_ent[q] = (int)res[2 * q + 1];
                if (p->src[q] < 0 && lost < 0) lost = q;
            }
            free(res);
        }
        if (lost >= 0) {
            if (wlen < (int)sizeof why - 160)
                wlen += snprintf(why + wlen, sizeof why - (size_t)wlen,
                                 "%s of PE %d's shard of step %lld (its own and PE %d's)",
                                 wlen ? ", nor" : "", lost, step, (lost + 1) % n);
            continue;
        }
        found = 1;
        const entry_t *e = entry(p, p->src[0], p->src_ent[0]);
        *meta = e->meta;
        meta->nshares = e->nshares;
        if (e->nshares > 0) {
            const char *t = buffer(p, p->src[0], p->src_ent[0]) + e->len - tail_bytes(e->nshares);
            memcpy(p->shares, t, sizeof(int32_t) * (size_t)e->nshares);
            memcpy(p->speeds, t + sizeof(int32_t) * (size_t)e->nshares,
                   sizeof(double) * (size_t)e->nshares);
        }
        meta->shares = e->nshares > 0 ? p->shares : NULL;
        meta->speeds = e->nshares > 0 ? p->speeds : NULL;
        p->committed = (uint64_t)g; /* kept whole by the next save */
    }
    free(all);
    return found ? SYM_OK : unusable(p, newest, why, "store holds", report, user);
}

int sym_peer_read(sym_peer_t *p, int pe, const sym_ckpt_slice_t *slices, int n, int prefix) {
    entry_t h;
    const entry_t *e;
    const char *b;
    int get = p->xhost && pe != p->me; /* from its window, a get */
    if (p->xhost) {
        if (get) shmem_getmem(&h, p->win, sizeof h, pe);
        else memcpy(&h, p->win, sizeof h);
        e = &h;
        b = p->win + PEER_PAGE;
    } else {
        e = entry(p, p->src[pe], p->src_ent[pe]);
        b = buffer(p, p->src[pe], p->src_ent[pe]);
    }
    size_t total = tail_bytes(e->nshares), off = 0;
    for (int i = 0; i < n; i++)
        total += (size_t)sym_ckpt_slice_elems(&slices[i]) * sym_dtype_size(slices[i].dtype);
    if (prefix ? total > e->len : total != e->len)
        return sym__error(SYM_EMISMATCH, "PE %d's in-memory shard holds %llu bytes and this run's "
                          "tensors take %zu", pe, (unsigned long long)e->len, total);
    if (!get) prefault(b, total);
    for (int i = 0; i < n; i++) {
        size_t len = (size_t)sym_ckpt_slice_elems(&slices[i]) * sym_dtype_size(slices[i].dtype);
        if (get) shmem_getmem(slices[i].data, b + off, len, pe);
        else sym__parallel_copy(slices[i].data, b + off, len);
        off += len;
    }
    return SYM_OK;
}

void sym_peer_describe(const sym_peer_t *p, int pe, char *out, size_t len) {
    int src = p->src[pe];
    char h[96];
    if (src == pe && p->xhost)
        snprintf(out, len, "own memory (%s)", host_of(p, pe, h, sizeof h));
    else if (src == pe)
        snprintf(out, len, "own copy");
    else if (p->xhost && p->host[src] != p->host[pe])
        snprintf(out, len, "from the buddy on %s (PE %d's copy)", host_of(p, src, h, sizeof h),
                 src);
    else
        snprintf(out, len, "from its buddy PE %d's copy", src);
}

void sym_peer_close(sym_peer_t *p) {
    if (!p) return;
    if (p->map && p->map != MAP_FAILED) munmap(p->map, p->map_len);
    if (p->win) shmem_free(p->win);
    if (p->stage) shmem_free(p->stage);
    if (p->sig) shmem_free(p->sig);
    if (p->sym) shmem_free(p->sym);
    free(p->host);
    free(p->buddy_of);
    free(p->host_name);
    free(p->src);
    free(p->src_ent);
    free(p->shares);
    free(p->speeds);
    free(p);
}
