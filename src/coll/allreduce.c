/*
 * allreduce.c — all-reduce algorithms and the table that chooses among them.
 *
 *   oneshot  every member pushes its whole input into every other member's
 *            inbox and each reduces all inputs itself: one synchronisation,
 *            N x the data read; best for small messages, and between two
 *            hosts up to REMOTE_PAIR_MAX in pieces.
 *   direct   (same host) each member reduces its slice of the vector, reading
 *            every member's input in place, and writes the result into every
 *            member's output: a fused reduce-scatter + all-gather with two
 *            synchronisations per round. Private buffers go through the team's
 *            staging memory in rounds of SYM_COLL_STAGE_BYTES.
 *   ring     reduce-scatter then all-gather around the ring, n-1 steps each,
 *            pipelined in segments through double-buffered inboxes with
 *            put-with-signal and credits; works between hosts.
 *   rd       recursive doubling (with the usual fold for non-powers of two),
 *            whole vectors exchanged with a partner per step; log2 n steps.
 *
 * Every member ends with the same bits: each element is reduced by one member
 * (direct, ring) or by every member in member order (oneshot, rd folds in a
 * fixed order), then copied.
 *
 * Scratch use and synchronisation: oneshot uses only the inbox area, in two
 * halves by round parity; direct and ring start with all members "ready"
 * before touching staging memory and end with all members "done", so
 * consecutive collectives never overwrite memory a member still reads; rd
 * needs neither (see rd()).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "coll.h"

/* ---- choice ---- */

/* The forced algorithm: SYMTRAIN_ALLREDUCE_ALGO, read once, then whatever
 * shmemx_set_allreduce_algo stored last. Atomic: the progress thread never
 * reads it (a request captures it when it is made, shmemx.c), but a program's
 * threads may set and read it at once. */
static shmemx_algo_t forced = SHMEMX_ALGO_AUTO;
static pthread_once_t forced_once = PTHREAD_ONCE_INIT;

static const char *const algo_names[SHMEMX_ALGO_COUNT + 1] = {"auto", "direct", "ring", "rd",
                                                               NULL};

const char *shmemx_algo_name(shmemx_algo_t algo) {
    return (unsigned)algo < SHMEMX_ALGO_COUNT ? algo_names[algo] : "unknown";
}

static void read_forced_env(void) {
    int a = sym__env_choice("SYMTRAIN_ALLREDUCE_ALGO", algo_names, -1);
    if (a >= 0) __atomic_store_n(&forced, (shmemx_algo_t)a, __ATOMIC_RELEASE);
}

void shmemx_set_allreduce_algo(shmemx_algo_t algo) {
    if ((unsigned)algo >= SHMEMX_ALGO_COUNT)
        sym__fatal("shmemx_set_allreduce_algo", "algorithm %d does not exist", (int)algo);
    pthread_once(&forced_once, read_forced_env); /* so the environment cannot undo this later */
    __atomic_store_n(&forced, algo, __ATOMIC_RELEASE);
}

shmemx_algo_t sym__allreduce_algo_forced(void) {
    pthread_once(&forced_once, read_forced_env);
    return __atomic_load_n(&forced, __ATOMIC_ACQUIRE);
}

/* Bytes each member may push into an inbox half. */
static size_t oneshot_capacity(shmem_team_t t) {
    return (SYM_COLL_INBOX_BYTES / (2 * (size_t)t->size)) & ~(size_t)63;
}

/* The tuning table: the largest message (bytes) oneshot takes, by team size,
 * on one host. Measured with symbench allreduce (docs/performance.md). */
static size_t oneshot_limit(shmem_team_t t, int symmetric) {
    static size_t env_limit; /* SYMTRAIN_ONESHOT_MAX overrides the table (benchmarks) */
    static int env_read;
    if (!env_read) {
        env_limit = sym__env_size("SYMTRAIN_ONESHOT_MAX", SIZE_MAX);
        env_read = 1;
    }
    size_t cap = oneshot_capacity(t);
    /* Symmetric buffers: direct reads them in place, so oneshot's pushes only
     * pay below a few hundred bytes. Private ones: direct must make system
     * calls (process_vm_readv) or stage, so oneshot wins up to 64 KiB. */
    size_t lim = !symmetric ? (size_t)64 << 10 : t->size <= 2 ? 512 : t->size <= 4 ? 1024 : 256;
    if (env_limit != SIZE_MAX) lim = env_limit;
    return lim < cap ? lim : cap;
}

/* ---- oneshot ---- */

static char *inbox_slot(shmem_team_t t, uint64_t round, int from) {
    return sym__coll_inbox(t) + ((round & 1) * (size_t)t->size + (size_t)from) * oneshot_capacity(t);
}

static void oneshot(shmem_team_t t, void *dest, const void *source, size_t count,
                    const sym_redop_t *r, const void **in) {
    int n = t->size, me = t->me;
    size_t bytes = count * r->esize;
    uint64_t round = ++t->coll_round;
    char *mine = inbox_slot(t, round, me);
    for (int k = 1; k < n; k++)
        sym__coll_put_signal(t, (me + k) % n, mine, source, bytes, SYM_COLL_READY, round, 1);
    for (int k = 0; k < n; k++) {
        if (k == me) {
            in[k] = source;
            continue;
        }
        sym__coll_wait(t, k, SYM_COLL_READY, round);
        in[k] = inbox_slot(t, round, k);
    }
    sym__reduce1(r, dest, in, n, count, r->avg ? n : 0);
}

/* ---- direct on private buffers: single copy from the peers' memory ---- */

/* Private buffers cannot be mapped, but a process may read another's memory
 * with process_vm_readv (same user; it is what MPI calls CMA). Then each PE
 * reads its slice of every peer's input straight out of the peer, reduces it
 * into its own output, and reads the others' results out of their outputs:
 * no staging copies. Whether that works is a property of the team (of which
 * processes read which), kept in t->coll_cma: a per-process answer found on
 * one team would make a PE skip the finding-out round another team's members
 * still take, and the rounds would stop matching. */
static int cma_read(int pid, void *dst, const void *src, size_t len) {
    while (len) {
        struct iovec l = {dst, len}, r = {(void *)(uintptr_t)src, len};
        ssize_t n = process_vm_readv(pid, &l, 1, &r, 1, 0);
        if (n <= 0) return -1;
        dst = (char *)dst + n;
        src = (const char *)src + n;
        len -= (size_t)n;
    }
    return 0;
}

/* Returns 0 when done, -1 when some member cannot read its peers' memory (the
 * caller then stages); all members take the same way. The team's first call
 * finds out: after the ready round each member tries a byte of every peer's
 * source, publishes whether it could, and after a second round all read each
 * other's answers and record the same verdict in t->coll_cma. */
static int direct_cma(shmem_team_t t, void *dest, const void *source, size_t count,
                      const sym_redop_t *r, const void **in, int dst_sym) {
    int n = t->size, me = t->me;
    size_t es = r->esize, lo, len;
    if (t->coll_cma < 0) return -1; /* the same verdict on every member: nothing synchronised */
    uint64_t *pub = &sym__slot(t)->psync[2]; /* [0] source, [1] dest, [2] can read */
    pub[0] = (uint64_t)(uintptr_t)source;
    pub[1] = (uint64_t)(uintptr_t)dest;
    sym__coll_sync_all(t, SYM_COLL_READY);
    if (t->coll_cma == 0) {
        int ok = sym__env_flag("SYMTRAIN_CMA", 1);
        for (int k = 0; k < n && ok; k++) {
            char byte;
            const uint64_t *peer = sym__coll_peer(t, k, pub);
            if (k != me && cma_read(sym__world.peer[t->pes[k]].pid, &byte,
                                    (const void *)(uintptr_t)peer[0], 1))
                ok = 0;
        }
        pub[2] = ok;
        sym__coll_sync_all(t, SYM_COLL_DONE);
        int all = 1;
        for (int k = 0; k < n; k++) all &= ((uint64_t *)sym__coll_peer(t, k, pub))[2] != 0;
        t->coll_cma = all ? 1 : -1;
        if (!all) {
            static int said;
            if (!__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
                sym__info("cross-process reads refused: private buffers are staged");
            return -1; /* nothing touched yet */
        }
    }
    shmemx_block_range(count, n, me, &lo, &len);
    char *tmp = sym__coll_stage_in(t); /* our own: nobody else reads it here */
    size_t chunk = (SYM_COLL_STAGE_BYTES / (size_t)n) / es;
    if (chunk > (size_t)(64 << 10) / es) chunk = (size_t)(64 << 10) / es; /* stay in cache */
    int failed = 0;
    void *outs[1];
    for (size_t c = 0; c < len && !failed; c += chunk) {
        size_t m = len - c < chunk ? len - c : chunk;
        for (int k = 0; k < n && !failed; k++) {
            if (k == me) {
                in[k] = (const char *)source + (lo + c) * es;
                continue;
            }
            const uint64_t *peer = sym__coll_peer(t, k, pub);
            char *buf = tmp + (size_t)k * chunk * es;
            failed = cma_read(sym__world.peer[t->pes[k]].pid, buf,
                              (const char *)(uintptr_t)peer[0] + (lo + c) * es, m * es);
            in[k] = buf;
        }
        if (failed) break;
        outs[0] = (char *)dest + (lo + c) * es;
        r->fn(outs, 1, in, n, m, r->avg ? n : 0, 0);
    }
    if (!failed && dst_sym) /* push our slice's result into every peer's dest */
        for (int k = 1; k < n; k++) {
            int q = (me + k) % n;
            memcpy(sym__coll_peer(t, q, (char *)dest + lo * es), (char *)dest + lo * es, len * es);
        }
    sym__coll_sync_all(t, SYM_COLL_DONE);
    if (failed)
        sym__fatal("shmemx_allreduce", "reading a peer's memory failed after it had worked");
    if (!dst_sym) { /* fetch the others' slices of the result */
        for (int k = 1; k < n && !failed; k++) {
            int q = (me + k) % n;
            size_t qlo, qlen;
            shmemx_block_range(count, n, q, &qlo, &qlen);
            const uint64_t *peer = sym__coll_peer(t, q, pub);
            failed = cma_read(sym__world.peer[t->pes[q]].pid, (char *)dest + qlo * es,
                              (const char *)(uintptr_t)peer[1] + qlo * es, qlen * es);
        }
        if (failed)
            sym__fatal("shmemx_allreduce", "reading a peer's memory failed after it had worked");
        sym__coll_sync_all(t, SYM_COLL_DONE); /* nobody may change its dest while we read it */
    }
    return 0;
}

/* ---- direct ---- */

/* Messages at least this large (all buffers together far beyond the last-level
 * cache) are stored with non-temporal writes. */
#define STREAM_MIN_BYTES ((size_t)8 << 20)

static void direct(shmem_team_t t, void *dest, const void *source, size_t count,
                   const sym_redop_t *r, const void **in, void **out) {
    int n = t->size, me = t->me;
    size_t es = r->esize;
    int src_sym = sym__is_symmetric(source, count * es);
    int dst_sym = sym__is_symmetric(dest, count * es);
    /* Private sources: read them out of the peers if the kernel lets us. */
    if (!src_sym && direct_cma(t, dest, source, count, r, in, dst_sym) == 0) return;
    size_t chunk = count;
    if (!src_sym || !dst_sym) chunk = SYM_COLL_STAGE_BYTES / es;
    char *stage_in = sym__coll_stage_in(t), *stage_out = sym__coll_stage_out(t);

    for (size_t off = 0; off < count; off += chunk) {
        size_t cnt = count - off < chunk ? count - off : chunk, lo, len;
        if (!src_sym) memcpy(stage_in, (const char *)source + off * es, cnt * es);
        uint64_t round = sym__coll_sync_all(t, SYM_COLL_READY);

        shmemx_block_range(cnt, n, me, &lo, &len);
        for (int k = 0; k < n; k++)
            in[k] = (const char *)sym__coll_peer(t, k, src_sym ? (const char *)source + off * es
                                                              : stage_in) +
                    lo * es;
        if (len && dst_sym) { /* one pass: the result goes to every member's dest */
            char *res = (char *)dest + (off + lo) * es;
            for (int k = 0; k < n; k++) out[k] = sym__coll_peer(t, (me + k) % n, res);
            r->fn(out, n, in, n, len, r->avg ? n : 0, count * es >= STREAM_MIN_BYTES);
        } else if (len) {
            sym__reduce1(r, stage_out + lo * es, in, n, len, r->avg ? n : 0);
        }
        sym__coll_signal_all(t, SYM_COLL_DONE, round);
        sym__coll_wait_all(t, SYM_COLL_DONE, round);

        if (!dst_sym)
            for (int k = 0; k < n; k++) {
                size_t klo, klen;
                shmemx_block_range(cnt, n, k, &klo, &klen);
                memcpy((char *)dest + (off + klo) * es,
                       (const char *)sym__coll_peer(t, k, stage_out) + klo * es, klen * es);
            }
    }
}

/* ---- ring ---- */

/* Segment g of block b: [*lo, *lo + *len) elements. */
static void segment(size_t count, int n, int b, size_t seg, size_t g, size_t *lo, size_t *len) {
    size_t blo, blen;
    shmemx_block_range(count, n, b, &blo, &blen);
    size_t s = g * seg;
    *lo = blo + (s < blen ? s : blen);
    *len = s < blen ? (blen - s < seg ? blen - s : seg) : 0;
}

static void ring(shmem_team_t t, void *dest, size_t count, const sym_redop_t *r) {
    int n = t->size, me = t->me, left = (me + n - 1) % n, right = (me + 1) % n;
    size_t es = r->esize;
    size_t seg = (SYM_COLL_STAGE_BYTES / 2) / es;
    size_t maxblk = (count + (size_t)n - 1) / (size_t)n;
    size_t nseg = (maxblk + seg - 1) / seg;
    char *inbox = sym__coll_stage_in(t);
    char *d = dest;

    sym__coll_sync_all(t, SYM_COLL_READY); /* everyone's inboxes are free */
    uint64_t base = t->coll_round, msg = 0;
    for (int phase = 0; phase < 2; phase++) { /* 0: reduce-scatter, 1: all-gather */
        for (int s = 0; s < n - 1; s++) {
            int send_blk = phase == 0 ? (me - s + n) % n : (me + 1 - s + n) % n;
            int recv_blk = phase == 0 ? (me - s - 1 + 2 * n) % n : (me - s + n) % n;
            for (size_t g = 0; g < nseg; g++) {
                uint64_t seq = base + ++msg;
                size_t slo, slen, rlo, rlen;
                segment(count, n, send_blk, seg, g, &slo, &slen);
                segment(count, n, recv_blk, seg, g, &rlo, &rlen);
                char *slot = inbox + (seq & 1) * seg * es;
                if (msg > 2) sym__coll_wait(t, right, SYM_COLL_DONE, seq - 2); /* credit */
                /* Non-blocking: a sent block is not written again until the
                 * all-gather, and a quiet comes first (below). */
                sym__coll_put_signal(t, right, slot, d + slo * es, slen * es, SYM_COLL_READY, seq, 0);
                sym__coll_wait(t, left, SYM_COLL_READY, seq);
                if (phase == 0) {
                    const void *in2[2] = {d + rlo * es, slot};
                    sym__reduce1(r, d + rlo * es, in2, 2, rlen, 0);
                } else {
                    memcpy(d + rlo * es, slot, rlen * es);
                }
                sym__coll_signal(t, left, SYM_COLL_DONE, seq);
            }
            if (phase == 0 && s == n - 2 && sym__remote) /* sends done before blocks change */
                sym__remote->quiet(sym__ctx_default.remote);
            if (phase == 0 && s == n - 2 && r->avg) { /* my block is complete: average it */
                size_t lo, len;
                shmemx_block_range(count, n, (me + 1) % n, &lo, &len);
                const void *in1[1] = {d + lo * es};
                sym__reduce1(r, d + lo * es, in1, 1, len, n);
            }
        }
    }
    t->coll_round = base + msg;
    if (sym__remote) sym__remote->quiet(sym__ctx_default.remote);
    sym__coll_sync_all(t, SYM_COLL_DONE);
}

/* ---- recursive doubling ---- */

/* One segment from `from` into our inbox, rendezvous style: we announce the
 * inbox is free (done = seq), the sender waits for that, puts and signals. */
static void rd_send(shmem_team_t t, int to, uint64_t seq, const void *src, size_t len) {
    sym__coll_wait(t, to, SYM_COLL_DONE, seq);
    sym__coll_put_signal(t, to, sym__coll_stage_in(t), src, len, SYM_COLL_READY, seq, 1);
}
static const char *rd_recv_open(shmem_team_t t, int from, uint64_t seq) {
    sym__coll_signal(t, from, SYM_COLL_DONE, seq);
    return sym__coll_stage_in(t);
}
static void rd_recv_wait(shmem_team_t t, int from, uint64_t seq) {
    sym__coll_wait(t, from, SYM_COLL_READY, seq);
}

static void rd(shmem_team_t t, void *dest, size_t count, const sym_redop_t *r) {
    int n = t->size, me = t->me;
    size_t es = r->esize, seg = SYM_COLL_STAGE_BYTES / es;
    size_t nseg = (count + seg - 1) / seg;
    char *d = dest;
    int p2 = 1;
    while (p2 * 2 <= n) p2 *= 2;
    int rem = n - p2, steps = 0;
    while ((1 << steps) < p2) steps++;

    /* No all-member synchronisation before or after: every segment is a
     * rendezvous (the receiver announces its inbox free first), and finishing
     * recursive doubling needs every member's input, so every member has
     * finished its previous collective. Across hosts that saves two latencies. */
    uint64_t base = t->coll_round;
    /* Message g of phase p has sequence number base + p * nseg + g + 1 on both sides. */
#define SEQ(p, g) (base + (uint64_t)(p) * nseg + (g) + 1)

    /* Fold in: of each pair (2i, 2i+1) below 2*rem, the even member hands its
     * vector to the odd one and sits out. */
    int vrank = me < 2 * rem ? (me % 2 ? me / 2 : -1) : me - rem;
    if (me < 2 * rem) {
        for (size_t g = 0; g < nseg; g++) {
            size_t lo = g * seg, len = count - lo < seg ? count - lo : seg;
            if (me % 2 == 0) {
                rd_send(t, me + 1, SEQ(0, g), d + lo * es, len * es);
            } else {
                const char *box = rd_recv_open(t, me - 1, SEQ(0, g));
                rd_recv_wait(t, me - 1, SEQ(0, g));
                const void *in2[2] = {box, d + lo * es}; /* lower member first */
                sym__reduce1(r, d + lo * es, in2, 2, len, 0);
            }
        }
    }
    if (vrank >= 0) {
        for (int k = 0; k < steps; k++) {
            int vp = vrank ^ (1 << k);
            int partner = vp < rem ? vp * 2 + 1 : vp + rem;
            for (size_t g = 0; g < nseg; g++) {
                size_t lo = g * seg, len = count - lo < seg ? count - lo : seg;
                uint64_t seq = SEQ(1 + k, g);
                const char *box = rd_recv_open(t, partner, seq);
                rd_send(t, partner, seq, d + lo * es, len * es);
                rd_recv_wait(t, partner, seq);
                const void *in2[2] = {vrank < vp ? (const void *)(d + lo * es) : box,
                                      vrank < vp ? (const void *)box : d + lo * es};
                sym__reduce1(r, d + lo * es, in2, 2, len, 0);
            }
        }
    }
    /* Fold out: the odd member of each pair returns the result. */
    if (me < 2 * rem) {
        for (size_t g = 0; g < nseg; g++) {
            size_t lo = g * seg, len = count - lo < seg ? count - lo : seg;
            uint64_t seq = SEQ(1 + steps, g);
            if (me % 2) {
                rd_send(t, me - 1, seq, d + lo * es, len * es);
            } else {
                const char *box = rd_recv_open(t, me + 1, seq);
                rd_recv_wait(t, me + 1, seq);
                memcpy(d + lo * es, box, len * es);
            }
        }
    }
#undef SEQ
    t->coll_round = base + (uint64_t)(2 + steps) * nseg;
    if (r->avg) {
        const void *in1[1] = {d};
        sym__reduce1(r, d, in1, 1, count, n);
    }
}

/* ---- hierarchical (world spanning hosts) ---- */

/* Within each host through shared memory, across hosts through the fabric:
 * every host all-reduces locally, the first PE of each host all-reduces the
 * hosts' results (ring or recursive doubling), and broadcasts to its host.
 * The average is taken once at the end, so every PE ends with the same bits. */
static int hierarchical(void *dest, const void *source, size_t count, const sym_redop_t *r) {
    sym_redop_t sum = *r;
    sum.avg = 0;
    int rc = sym__allreduce(&sym__team_host, dest, source, count, &sum, SHMEMX_ALGO_AUTO);
    if (!rc && sym__team_leaders.me >= 0)
        rc = sym__allreduce(&sym__team_leaders, dest, dest, count, &sum, SHMEMX_ALGO_AUTO);
    if (!rc) rc = sym__broadcast(&sym__team_host, dest, dest, count * r->esize, 0, 1);
    if (!rc && r->avg) {
        const void *in1[1] = {dest};
        sym__reduce1(r, dest, in1, 1, count, sym__team_world.size);
    }
    return rc;
}

/* ---- entry ---- */

/* Across hosts, oneshot up to this size (and the inbox's capacity); two
 * members on two hosts, up to REMOTE_PAIR_MAX in inbox-sized pieces, one
 * oneshot round each. Each member sends the whole vector either way, as
 * much as the ring moves at two, but in one exchange per piece instead of
 * two plus the ring's synchronisations: 512 KiB - 8 MiB 1.3-1.6x faster
 * over TCP; from 16 MiB the ring is as fast or faster. */
#define REMOTE_ONESHOT_MAX ((size_t)256 << 10)
#define REMOTE_PAIR_MAX ((size_t)8 << 20)

int sym__allreduce(shmem_team_t t, void *dest, const void *source, size_t count,
                   const sym_redop_t *r, shmemx_algo_t algo) {
    int n = t->size;
    if (count == 0) return 0;
    if (n == 1) {
        sym__coll_count(SHMEMX_STATS_SELF);
        const void *in1[1] = {source};
        sym__reduce1(r, dest, in1, 1, count, 0);
        return 0;
    }
    size_t bytes = count * r->esize;
    int local = sym__coll_all_local(t);
    /* The world over several hosts, some with several PEs: hierarchical. */
    if (algo == SHMEMX_ALGO_AUTO && t == &sym__team_world && sym__world.n_hosts > 1 &&
        sym__world.n_hosts < sym__world.npes) {
        sym__coll_count(SHMEMX_STATS_HIERARCHICAL);
        return hierarchical(dest, source, count, r);
    }
    if (algo == SHMEMX_ALGO_DIRECT && !local) algo = SHMEMX_ALGO_AUTO; /* needs shared memory */
    /* Between hosts every message costs a network latency: small messages go
     * oneshot (one latency), then recursive doubling, then the ring. */
    int remote_oneshot = 0;
    if (algo == SHMEMX_ALGO_AUTO) {
        if (local)
            algo = SHMEMX_ALGO_DIRECT;
        else if ((bytes <= oneshot_capacity(t) && bytes <= REMOTE_ONESHOT_MAX) ||
                 (n == 2 && bytes <= REMOTE_PAIR_MAX))
            remote_oneshot = 1;
        else
            algo = bytes <= 65536 ? SHMEMX_ALGO_RD : SHMEMX_ALGO_RING;
    }

    const void *small_in[16];
    void *small_out[16];
    const void **in = n <= 16 ? small_in : malloc((size_t)n * sizeof *in);
    void **out = n <= 16 ? small_out : malloc((size_t)n * sizeof *out);
    if (!in || !out) {
        if (n > 16) {
            free(in);
            free(out);
        }
        return SHMEMX_ENOMEM;
    }
    if (remote_oneshot) {
        sym__coll_count(SHMEMX_STATS_ONESHOT);
        size_t piece = oneshot_capacity(t) / r->esize;
        for (size_t lo = 0; lo < count; lo += piece)
            oneshot(t, (char *)dest + lo * r->esize, (const char *)source + lo * r->esize,
                    count - lo < piece ? count - lo : piece, r, in);
    } else {
        switch (algo) {
        case SHMEMX_ALGO_DIRECT:
            if (bytes <= oneshot_limit(t, sym__is_symmetric(source, bytes))) {
                sym__coll_count(SHMEMX_STATS_ONESHOT);
                oneshot(t, dest, source, count, r, in);
            } else {
                sym__coll_count(SHMEMX_STATS_DIRECT);
                direct(t, dest, source, count, r, in, out);
            }
            break;
        case SHMEMX_ALGO_RING:
        case SHMEMX_ALGO_RD:
            if (dest != source) memmove(dest, source, bytes);
            sym__coll_count(algo == SHMEMX_ALGO_RING ? SHMEMX_STATS_RING : SHMEMX_STATS_RD);
            if (algo == SHMEMX_ALGO_RING)
                ring(t, dest, count, r);
            else
                rd(t, dest, count, r);
            break;
        default: break;
        }
    }
    if (n > 16) {
        free(in);
        free(out);
    }
    return 0;
}
