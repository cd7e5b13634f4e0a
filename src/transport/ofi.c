/*
 * ofi.c — the fabric transport: PEs on other hosts through libfabric
 * (verbs/RoCE, EFA, TCP ... whatever provider the fabric offers).
 *
 * Memory: both symmetric segments are registered once; every PE's endpoint
 * name, keys and segment addresses are all-gathered at init, through the
 * bootstrap (the env bootstrap seals them: src/bootstrap/env.c). A key is
 * what lets a remote endpoint read or write a segment, and addresses are
 * offsets anyone can guess: so each key is 64 random bits from the CSPRNG
 * (as many as the provider's keys hold), or the provider's own where it
 * assigns them (FI_MR_PROV_KEY: verbs, EFA). The provider authenticates
 * nothing else, and messages need no key at all: so every message (batches
 * of puts, active messages, their replies) carries the target's message key,
 * 64 random bits of its own exchanged with the memory keys, and a message
 * without it, or shorter than its header says, is dropped unread (counted,
 * said once). See docs/architecture.md, "Threat model".
 * Ordering: the endpoint is asked for write-after-write, send-after-write,
 * read-after-write and send-after-send ordering (FI_ORDER_WAW | SAW | RAW |
 * SAS), so what one PE sends one target arrives in the order it was posted.
 * Puts: up to 4 KiB (blocking ones too: the data is copied) they are gathered
 * per context into a batch for one target, sent as one message that the
 * target's CPU applies (as MPI's one-sided layer does over TCP). A batch
 * leaves when it is full, when a put to another target comes, when a thread of
 * the PE waits, at a fence or quiet, and from the progress thread once 100 us
 * old. Batches carry a per-target number and are applied in that order, also
 * when two threads take them from the queue at once. Larger puts are fi_write,
 * gets fi_read.
 * Acknowledgements: none one by one. A context notes the targets it sent
 * batches, writes or non-fetching fabric atomics to since it last asked; to
 * settle, it sends each such target one batch (empty if need be) that asks to
 * be acknowledged once applied. Its reply covers everything before it:
 * batches are applied in order, and the ordered endpoint places earlier writes
 * before the request (send-after-write). A direct operation (a larger put, a
 * get, an atomic) first settles the batches, or the target's CPU could apply
 * an older put over what it writes, or after what it reads; a fence settles
 * the batches and waits for outstanding active messages (on an unordered
 * endpoint it is a quiet); a quiet settles batches and writes, then waits for
 * every operation it issued to complete. A provider's write completion alone
 * is not trusted to mean the data is at the target: libfabric 1.17's net
 * provider completes a write once the local kernel has taken it, even with
 * FI_DELIVERY_COMPLETE (tests/net_quiet.c). Sends ask only for what freeing
 * their buffer needs (fi_inject, else FI_COMPLETION): a delivery- or
 * transmit-complete send makes tcp-class providers acknowledge every message.
 * Atomics: where the provider offers them and every host runs one PE, fabric
 * atomics (fi_atomic, fi_fetch_atomic, fi_compare_atomic), with the PE's own
 * atomics sent through the fabric too. Otherwise — the common case, PEs of one
 * host sharing memory — an atomic is an active message executed by the
 * target's CPU, which replies: a fabric atomic is not atomic with respect to
 * the CPU atomics the target's same-host peers use on the same word, a CPU
 * atomic is.
 * put-with-signal: with SHMEM_SIGNAL_SET and data that fits a batch, data and
 * signal in one batch sent at once, the signal stored (release) after the
 * data; otherwise the batches are settled, the data written, then the signal
 * word written, ordered after the data (set), or an active message the
 * target applies with a CPU atomic (SHMEM_SIGNAL_ADD).
 * Write-with-immediate (fi_writedata) was the first design and is not used:
 * a signal applied by the target's progress thread when the completion
 * arrives can land after a later plain write to the same word (losing it),
 * and a quiet cannot wait for it. Ordered writes keep program order.
 * Progress: a thread waiting in the runtime polls the completion queue itself
 * (and keeps polling while its host has a core per PE: SYMTRAIN_WAIT). One
 * progress thread per PE serves the rest, blocked in the provider's wait: it
 * applies incoming batches and active messages, and sleeps while a waiting
 * thread polls busily.
 * A post the provider refuses for a full queue (-FI_EAGAIN) drives the
 * completion queue from the retrying thread, also inside the progress thread
 * or a flush (POST).
 *
 * libfabric is loaded (dlopen) only when a job spans hosts: single-host jobs
 * never load it or the provider libraries it pulls in (some of which install
 * signal handlers of their own at load time).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../bootstrap/bootstrap.h"
#include "../util/crypto.h"
#include "transport.h"

#define FI_VERSION_NEEDED FI_VERSION(1, 9)
#define NAME_MAX_LEN 128
#define AM_RECVS 64

#define OFI_CHECK(call)                                                              \
    do {                                                                             \
        int rc_ = (int)(call);                                                       \
        if (rc_) ofi_fail(#call, rc_, __FILE__, __LINE__);                           \
    } while (0)

/* The few libfabric entry points that are not inline wrappers. */
static struct {
    int (*getinfo)(uint32_t, const char *, const char *, uint64_t, const struct fi_info *,
                   struct fi_info **);
    void (*freeinfo)(struct fi_info *);
    struct fi_info *(*dupinfo)(const struct fi_info *);
    int (*fabric)(struct fi_fabric_attr *, struct fid_fabric **, void *);
    const char *(*strerror)(int);
} lib;

static void load_libfabric(void) {
    /* libinfinipath (under the psm providers) would otherwise replace the
     * program's fatal-signal handling with its own backtrace-and-exit(1). */
    setenv("IPATH_NO_BACKTRACE", "1", 0);
    void *h = dlopen("libfabric.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!h)
        sym__fatal("shmem_init", "the job spans hosts but libfabric cannot be loaded (%s); "
                                 "install it (apt-get install libfabric1)",
                   dlerror());
    *(void **)&lib.getinfo = dlsym(h, "fi_getinfo");
    *(void **)&lib.freeinfo = dlsym(h, "fi_freeinfo");
    *(void **)&lib.dupinfo = dlsym(h, "fi_dupinfo");
    *(void **)&lib.fabric = dlsym(h, "fi_fabric");
    *(void **)&lib.strerror = dlsym(h, "fi_strerror");
    if (!lib.getinfo || !lib.freeinfo || !lib.dupinfo || !lib.fabric || !lib.strerror)
        sym__fatal("shmem_init", "the libfabric found lacks fi_getinfo/fi_fabric; install "
                                 "libfabric 1.9 or later");
}

static noreturn void ofi_fail(const char *call, int rc, const char *file, int line) {
    sym__fatal("ofi", "%s failed: %s (%s:%d)", call, lib.strerror(-rc), file, line);
}

/* ---- state ---- */

#define AM_BYTES 65536  /* largest active message, a receive slot's size */
#define BATCH_ITEM 4096 /* puts up to this size are batched */
#define BATCH_SWAP 4096 /* a batch this big is sent from its buffer, not a copy */

typedef struct ofi_ctx {
    uint64_t issued;          /* operations posted on this context */
    uint64_t completed;       /* and completed (atomic: the progress thread counts) */
    uint64_t pending_am;      /* active messages not yet applied (a fence waits for them) */
    uint64_t pending_batches; /* batches of puts sent and not yet applied */
    pthread_mutex_t lock;     /* the batch below */
    char *batch;              /* AM_BYTES: header, then entries */
    size_t used;              /* bytes in batch; 0 = empty */
    int batch_pe;
    uint64_t begun_ns;        /* when the batch got its first put */
    /* PEs this context sent batches or wrote to that have not been asked to
     * acknowledge them yet (see settle); unacked[pe] (UNACKED_*) marks those in
     * the list. */
    uint8_t *unacked;
    int *unacked_list, n_unacked;
    struct ofi_ctx *next;     /* all contexts, for flushing by a waiting thread */
} ofi_ctx_t;

/* One outstanding operation; its fi_context2 comes first so a completion's
 * op_context is the op. */
typedef struct op {
    struct fi_context2 fctx;
    ofi_ctx_t *ctx;
    int done;         /* set by the progress thread */
    int owned;        /* the progress thread frees it */
    void *result;     /* where a fetched old value goes */
    size_t size;
    uint64_t scratch; /* the old value of a non-fetching fabric atomic */
    uint64_t operand, compare; /* a fabric atomic's operands, alive until it completes */
    int am;                    /* an active message: counted in its context's pending_am */
    int batch;                 /* a batch's acknowledgement: counted in pending_batches */
    char *buf;        /* a batch buffer the send owns (freed with the op) */
    char bounce[];    /* a small put's data, so the caller's buffer is free at once */
} op_t;

#define BOUNCE_MAX 4096

/* What a context sent a PE since it last asked the PE to acknowledge: batches
 * of puts, which the target's CPU applies some time after they arrive; writes
 * and fabric atomics, which its provider places in order but whose completion
 * here may come before that (libfabric 1.17's net provider completes a write
 * once the kernel has taken it, even with FI_DELIVERY_COMPLETE). */
enum { UNACKED_BATCH = 1, UNACKED_WRITE = 2 };

enum { AM_AMO = 1, AM_REPLY = 2, AM_SIGNAL = 3, AM_PUTS = 4 };

/* A batch of puts: this header, then per put {offset | seg << 63, len} and
 * the data, each padded to 8 bytes. BATCH_SIGNAL in `where` marks a signal
 * word, set with a release store after the entries before it. */
#define BATCH_SEG_BIT 63
#define BATCH_SIGNAL (1ull << 62)
typedef struct {
    uint8_t kind, pad[3];
    uint32_t from;
    uint64_t key;   /* the target's message key (at MSG_KEY_AT, as in am_t) */
    uint64_t req;   /* the requester's op_t, echoed in the reply */
    uint32_t bytes; /* header included */
    uint32_t seq;   /* the sender's count of batches to this PE: applied in this order */
} batch_hdr_t;
typedef struct {
    uint64_t where;
    uint64_t len;
} batch_ent_t;

typedef struct {
    uint8_t kind, op, size, seg;
    uint32_t from;    /* the requester's PE */
    uint64_t key;     /* the target's message key */
    uint64_t offset;  /* into the target's segment */
    uint64_t operand; /* value bits */
    uint64_t compare;
    uint64_t req;     /* the requester's op_t, echoed in the reply */
} am_t;
/* Where both kinds of message carry the sender and the key. */
#define MSG_FROM_AT offsetof(am_t, from)
#define MSG_KEY_AT offsetof(am_t, key)
_Static_assert(offsetof(batch_hdr_t, from) == MSG_FROM_AT &&
                   offsetof(batch_hdr_t, key) == MSG_KEY_AT,
               "a message's sender and key sit at one place");

typedef struct {
    char name[NAME_MAX_LEN];
    uint64_t name_len;
    uint64_t key[SYM_SEG_COUNT];
    uint64_t base[SYM_SEG_COUNT];
    uint64_t msg_key; /* what every message to this PE must carry */
    char prov[32];
    int32_t one_per_host; /* no other PE on this PE's host */
    int32_t atomics;      /* the endpoint offers the fabric atomics symshmem needs */
} ofi_rec_t;

static struct {
    struct fi_info *info, *info_list; /* the provider chosen, in the list fi_getinfo gave */
    struct fid_fabric *fabric;
    struct fid_domain *domain;
    struct fid_av *av;
    struct fid_ep *ep;
    struct fid_cq *cq;
    struct fid_mr *mr[SYM_SEG_COUNT];
    void *desc[SYM_SEG_COUNT];
    fi_addr_t *addr;
    uint64_t *key[SYM_SEG_COUNT], *base[SYM_SEG_COUNT];
    uint64_t msg_key, *msg_key_of; /* this PE's message key; every PE's */
    uint64_t dropped;              /* messages dropped for want of the key */
    int virt_addr, native_atomics, wait_cq, ordered;
    int n_recvs; /* receive slots posted: AM_RECVS, or fewer where the queue is shorter */
    size_t inject_size;
    struct {
        op_t op;
        _Alignas(8) char msg[AM_BYTES];
    } recv[AM_RECVS];
    ofi_ctx_t *ctxs; /* every context (default first), under ctxs_lock */
    pthread_mutex_t ctxs_lock;
    int batched; /* contexts with a non-empty batch (a hint for waiting threads) */
    /* Batches to one PE are applied in the order sent, though two threads may
     * read them from the queue at once: each carries its number (seq_to, under
     * send_lock with its posting); a receiver applies number expect[from] and
     * leaves later ones in their slots (deferred) for whoever applies the one
     * before. */
    pthread_mutex_t send_lock, apply_lock;
    uint32_t *seq_to, *expect;
    uint8_t deferred[AM_RECVS];
    pthread_t progress;
    int stop;
    ofi_ctx_t default_ctx;
} g;


/* ---- completions ---- */

static void post_recv(int i) {
    for (;;) {
        ssize_t rc = fi_recv(g.ep, g.recv[i].msg, sizeof g.recv[i].msg, NULL, FI_ADDR_UNSPEC,
                             &g.recv[i].op.fctx);
        if (rc == 0) return;
        if (rc != -FI_EAGAIN) ofi_fail("fi_recv", (int)rc, __FILE__, __LINE__);
        fi_cq_read(g.cq, NULL, 0);
    }
}

static void complete(op_t *op) {
    if (op->ctx && op->am) __atomic_fetch_sub(&op->ctx->pending_am, 1, __ATOMIC_RELEASE);
    if (op->ctx && op->batch) __atomic_fetch_sub(&op->ctx->pending_batches, 1, __ATOMIC_RELEASE);
    if (op->ctx) __atomic_fetch_add(&op->ctx->completed, 1, __ATOMIC_RELEASE);
    if (op->owned) {
        free(op->buf);
        free(op);
    }
    else
        __atomic_store_n(&op->done, 1, __ATOMIC_RELEASE);
}

static void send_msg(const am_t *m, int pe);

static void apply_signal(int seg, uint64_t offset, uint64_t value, int add) {
    uint64_t *sig = (uint64_t *)(sym__world.seg[seg].base + offset);
    if (add)
        __atomic_fetch_add(sig, value, __ATOMIC_RELEASE);
    else
        __atomic_store_n(sig, value, __ATOMIC_RELEASE);
}

/* Apply a batch's puts and signals to our memory, in order. */
static void apply_entries(const char *msg) {
    batch_hdr_t h;
    memcpy(&h, msg, sizeof h);
    for (size_t off = sizeof h; off < h.bytes;) {
        batch_ent_t e;
        memcpy(&e, msg + off, sizeof e);
        off += sizeof e;
        int seg = (int)(e.where >> BATCH_SEG_BIT);
        uint64_t at = e.where & (BATCH_SIGNAL - 1);
        if (e.where & BATCH_SIGNAL) {
            uint64_t v;
            memcpy(&v, msg + off, sizeof v);
            apply_signal(seg, at, v, 0);
        } else {
            memcpy(sym__world.seg[seg].base + at, msg + off, e.len);
        }
        off += (e.len + 7) & ~(size_t)7;
    }
}

static batch_hdr_t batch_of_msg(const char *msg) {
    batch_hdr_t h;
    memcpy(&h, msg, sizeof h);
    return h;
}

static batch_hdr_t batch_of(int slot) { return batch_of_msg(g.recv[slot].msg); }

/* The batch in receive slot `slot`: applied now, with any deferred ones that
 * follow it from the same PE, each then acknowledged if it asks and its slot
 * posted again; or, when an earlier one from that PE is still being applied by
 * another thread, deferred (the slot stays taken). */
static void take_batch(int slot) {
    int done[AM_RECVS], ndone = 0;
    batch_hdr_t h = batch_of(slot);
    pthread_mutex_lock(&g.apply_lock);
    if (h.seq != g.expect[h.from]) {
        g.deferred[slot] = 1;
        pthread_mutex_unlock(&g.apply_lock);
        return;
    }
    for (int next = slot; next >= 0;) {
        apply_entries(g.recv[next].msg);
        done[ndone++] = next;
        uint32_t want = ++g.expect[h.from];
        next = -1;
        for (int i = 0; i < g.n_recvs; i++)
            if (g.deferred[i] && batch_of(i).from == h.from && batch_of(i).seq == want) {
                g.deferred[i] = 0;
                next = i;
                break;
            }
    }
    pthread_mutex_unlock(&g.apply_lock);
    for (int i = 0; i < ndone; i++) { /* outside the lock: sending may wait for progress */
        am_t r = {0};
        r.kind = AM_REPLY;
        r.req = batch_of(done[i]).req;
        if (r.req) send_msg(&r, (int)h.from); /* asked to acknowledge */
        post_recv(done[i]);
    }
}

/* A received message of `len` bytes that this job's PEs sent: it carries our
 * key, its header fits and names a PE. Anything else is a stranger's (or
 * garbage), dropped unread; the first is said, the count at the end. */
static int genuine(const char *msg, size_t len) {
    uint64_t key;
    uint32_t from;
    size_t need = msg[0] == AM_PUTS ? sizeof(batch_hdr_t) : sizeof(am_t);
    int ok = len >= need;
    if (ok) {
        memcpy(&key, msg + MSG_KEY_AT, sizeof key);
        memcpy(&from, msg + MSG_FROM_AT, sizeof from);
        ok = sym__consttime_eq(&key, &g.msg_key, sizeof key) &&
             from < (uint32_t)sym__world.npes;
    }
    if (ok && msg[0] == AM_PUTS) ok = batch_of_msg(msg).bytes <= len;
    if (!ok && __atomic_fetch_add(&g.dropped, 1, __ATOMIC_RELAXED) == 0)
        sym__warn("ofi", "dropped a fabric message that did not carry this job's key: something "
                         "other than the job's PEs reaches this PE's fabric endpoint; keep the "
                         "fabric on a private network (docs/architecture.md, \"Threat model\")");
    return ok;
}

static void handle_am(am_t *m) {
    if (m->kind == AM_REPLY) {
        op_t *op = (op_t *)(uintptr_t)m->req;
        if (op->result) memcpy(op->result, &m->operand, op->size);
        complete(op);
        return;
    }
    if (m->kind == AM_SIGNAL) {
        apply_signal(m->seg, m->offset, m->operand, m->op == 1);
    } else {
        void *p = sym__world.seg[m->seg].base + m->offset;
        m->operand = sym__cpu_amo((sym_amo_op_t)m->op, p, m->operand, m->compare, m->size);
    }
    /* Reply so the requester can complete (and, for fetches, learn the value). */
    am_t r = *m;
    r.kind = AM_REPLY;
    send_msg(&r, (int)m->from);
}

static int is_recv(const op_t *op) {
    return (const char *)op >= (const char *)g.recv &&
           (const char *)op < (const char *)(g.recv + AM_RECVS);
}

/* Handle a batch of completions: replies and requests of active messages,
 * and our own operations finishing. */
static void handle(struct fi_cq_data_entry *e, ssize_t n) {
    for (ssize_t i = 0; i < n; i++) {
        op_t *op = e[i].op_context;
        if (!op) continue;
        if (is_recv(op)) {
            int slot = (int)(((char *)op - (char *)g.recv) / (long)sizeof g.recv[0]);
            if (!genuine(g.recv[slot].msg, e[i].len)) {
                post_recv(slot);
                continue;
            }
            if (g.recv[slot].msg[0] == AM_PUTS) {
                take_batch(slot); /* posts the slot again once applied */
                continue;
            }
            handle_am((am_t *)g.recv[slot].msg);
            post_recv(slot);
            continue;
        }
        complete(op);
    }
}

static noreturn void cq_failed(void) {
    struct fi_cq_err_entry err = {0};
    fi_cq_readerr(g.cq, &err, 0);
    sym__fatal("ofi", "a fabric operation failed: %s (provider: %s)", lib.strerror(err.err),
               fi_cq_strerror(g.cq, err.prov_errno, err.err_data, NULL, 0));
}

/* A waiting thread drives the fabric itself (sym__progress_hook); never nested. */
static __thread int in_progress;
static uint64_t last_poll_ns; /* when a waiting thread last polled busily */
#define POLLED_NS 1000000     /* ... counts as polling now if this recent */
#define STALE_NS 100000       /* the progress thread sends batches this old */
static void flush_all(uint64_t age_ns);
static void progress_once(int busy) {
    if (in_progress) return;
    in_progress = 1;
    if (busy) __atomic_store_n(&last_poll_ns, sym__now_ns(), __ATOMIC_RELAXED);
    flush_all(0);
    struct fi_cq_data_entry e[16];
    ssize_t n = fi_cq_read(g.cq, e, 16);
    if (n > 0)
        handle(e, n);
    else if (n == -FI_EAVAIL)
        cq_failed();
    in_progress = 0;
}

static void *progress_main(void *arg) {
    (void)arg;
    in_progress = 1; /* its refused posts drive the queue themselves (POST), never flushing */
    struct fi_cq_data_entry e[16];
    sym_backoff_t b = {0};
    while (!__atomic_load_n(&g.stop, __ATOMIC_ACQUIRE)) {
        /* While a waiting thread polls busily, keep out of its way: sleep
         * until it may have stopped (one that sleeps between polls does not
         * count: messages would wait for its next poll). Otherwise block in
         * the provider's wait (or poll, where the queue has no wait object).
         * Waking for every message, or polling beside the waiting thread,
         * fought it for the core and the provider's locks: 2-6x the one-way
         * latency over tcp on 2 cores. Polling here for a while after each
         * message instead took the core from a PE that computes meanwhile
         * (and answered no faster than a waiting thread that polls: see
         * sym__wait_polls). Batches left unsent by a PE that computes go out
         * once STALE_NS old. */
        uint64_t since = sym__now_ns() - __atomic_load_n(&last_poll_ns, __ATOMIC_RELAXED);
        if (since < POLLED_NS) {
            struct timespec ts = {0, (long)(POLLED_NS - since)};
            nanosleep(&ts, NULL);
            continue;
        }
        flush_all(STALE_NS);
        ssize_t n = g.wait_cq ? fi_cq_sread(g.cq, e, 16, NULL, 1) : fi_cq_read(g.cq, e, 16);
        if (n == -FI_EAGAIN) {
            if (!g.wait_cq) sym__backoff(&b);
            continue;
        }
        b.iter = 0;
        if (n == -FI_EAVAIL) cq_failed();
        if (n > 0) handle(e, n);
    }
    return NULL;
}

/* ---- posting ---- */

/* While a post is refused (-FI_EAGAIN: the provider's queue is full), the
 * retrying thread drives the completion queue itself: on a manual-progress
 * provider (tcp;ofi_rxm, net without its own thread) nothing moves otherwise.
 * A thread outside the fabric's progress does so through its wait's hook; one
 * inside it (the progress thread, a waiting thread handling completions, a
 * flush holding send_lock) has no hook to call, and every thread of a PE could
 * be one of those at once. So it reads and handles completions here, nested:
 * handling takes no lock a post holds (c->lock, send_lock) and never flushes;
 * a nested level is the handling of a received message, which keeps its slot
 * until its own post is done, so nesting goes no deeper than the receive
 * slots (tests/net_flood.c). */
static void drive_while_refused(void) {
    if (!in_progress) return; /* the back-off's hook polls */
    struct fi_cq_data_entry e[4];
    ssize_t n = fi_cq_read(g.cq, e, 4);
    if (n > 0)
        handle(e, n);
    else if (n == -FI_EAVAIL)
        cq_failed();
}

#define POST(call)                                                                   \
    do {                                                                             \
        sym_backoff_t b_ = {0};                                                      \
        ssize_t rc_;                                                                 \
        while ((rc_ = (call)) == -FI_EAGAIN) {                                       \
            drive_while_refused();                                                   \
            sym__backoff(&b_);                                                       \
        }                                                                            \
        if (rc_) ofi_fail(#call, (int)rc_, __FILE__, __LINE__);                      \
    } while (0)

static op_t *new_op(ofi_ctx_t *c, op_t *stack_op, int blocking) {
    op_t *op = blocking ? stack_op : calloc(1, sizeof *op);
    if (!op) sym__fatal("ofi", "out of memory");
    memset(op, 0, sizeof *op);
    op->ctx = c;
    op->owned = !blocking;
    __atomic_fetch_add(&c->issued, 1, __ATOMIC_RELAXED);
    return op;
}

static void wait_op(op_t *op) { SYM_WAIT_UNTIL(__atomic_load_n(&op->done, __ATOMIC_ACQUIRE)); }

/* Active messages are injected: the message is copied at once, needs no
 * completion, and keeps its place in the endpoint's order. */
static void send_msg(const am_t *m, int pe) {
    am_t keyed = *m;
    keyed.key = g.msg_key_of[pe];
    POST(fi_inject(g.ep, &keyed, sizeof keyed, g.addr[pe]));
}

/* Where a local symmetric address lives on `pe`: segment key and address. */
static void remote_of(const void *addr, int pe, uint64_t *raddr, uint64_t *key, int *seg_out,
                      uint64_t *off_out) {
    size_t off;
    int seg = sym__seg_of(addr, &off);
    if (seg < 0) sym__fatal("ofi", "address %p is not symmetric", addr);
    *raddr = g.base[seg][pe] + off;
    *key = g.key[seg][pe];
    if (seg_out) *seg_out = seg;
    if (off_out) *off_out = off;
}

static void *desc_for(const void *buf, size_t len) {
    size_t off;
    int seg = sym__seg_of(buf, &off);
    return seg >= 0 && len <= sym__world.seg[seg].size - off ? g.desc[seg] : NULL;
}

/* ---- batches of small non-blocking puts ---- */

/* Bytes a put of `len` takes in a batch. */
static size_t batch_room(size_t len) { return sizeof(batch_ent_t) + ((len + 7) & ~(size_t)7); }

/* Remember that c sent `pe` something to acknowledge (UNACKED_*; the caller
 * holds c->lock). */
static void note_unacked_locked(ofi_ctx_t *c, int pe, int what) {
    if (!c->unacked[pe]) {
        c->unacked_list[c->n_unacked] = pe;
        __atomic_store_n(&c->n_unacked, c->n_unacked + 1, __ATOMIC_RELAXED); /* settle peeks */
    }
    __atomic_fetch_or(&c->unacked[pe], (uint8_t)what, __ATOMIC_SEQ_CST); /* note_write peeks */
}

/* Send c's batch (the caller holds c->lock) as one message. With `ack`, the
 * target acknowledges it once applied, and with it every batch and write this
 * PE sent it before (batches are applied in order, and the endpoint places
 * writes before a later send: FI_ORDER_SAW); the caller then drops the target
 * from c's unacknowledged list. Without, the target is noted in it. The send
 * needs only to free its buffer, so it goes injected when it fits, else with
 * the provider's weakest completion (FI_COMPLETION alone): a delivery- or
 * transmit-complete send makes tcp-class providers send an acknowledgement of
 * their own, which doubled the latency of small collectives. */
static void flush_locked(ofi_ctx_t *c, int ack) {
    size_t used = __atomic_load_n(&c->used, __ATOMIC_RELAXED);
    if (!used) return;
    int pe = c->batch_pe;
    op_t *ack_op = NULL;
    if (ack) {
        ack_op = calloc(1, sizeof *ack_op);
        if (!ack_op) sym__fatal("ofi", "out of memory");
        ack_op->ctx = c;
        ack_op->owned = 1;
        ack_op->batch = 1;
        __atomic_fetch_add(&c->issued, 1, __ATOMIC_RELAXED);
        __atomic_fetch_add(&c->pending_batches, 1, __ATOMIC_RELAXED);
    } else {
        note_unacked_locked(c, pe, UNACKED_BATCH);
    }
    /* Numbered and posted in one step, so numbers follow the endpoint's order.
     * Not progressing through the hook (in_progress): that could flush, and
     * lock send_lock again; a refused post drives the queue itself (POST). */
    int was = in_progress;
    in_progress = 1;
    pthread_mutex_lock(&g.send_lock);
    batch_hdr_t h = {AM_PUTS,         {0}, (uint32_t)sym__world.me, g.msg_key_of[pe],
                     (uintptr_t)ack_op, (uint32_t)used, g.seq_to[pe]++};
    memcpy(c->batch, &h, sizeof h);
    if (used <= g.inject_size) { /* copied by the provider at once */
        POST(fi_inject(g.ep, c->batch, used, g.addr[pe]));
    } else { /* the send owns the bytes until it completes: a copy of a small
              * batch, or the batch buffer itself (c gets a new one) */
        int swap = used >= BATCH_SWAP;
        op_t *send = malloc(sizeof *send + (swap ? 0 : used));
        char *fresh = swap ? malloc(AM_BYTES) : NULL;
        if (!send || (swap && !fresh)) sym__fatal("ofi", "out of memory");
        memset(send, 0, sizeof *send);
        send->ctx = c;
        send->owned = 1;
        __atomic_fetch_add(&c->issued, 1, __ATOMIC_RELAXED);
        char *bytes = send->bounce;
        if (swap) {
            bytes = send->buf = c->batch;
            c->batch = fresh;
        } else {
            memcpy(send->bounce, c->batch, used);
        }
        struct iovec iov = {bytes, used};
        struct fi_msg msg = {.msg_iov = &iov, .iov_count = 1, .addr = g.addr[pe],
                             .context = &send->fctx};
        POST(fi_sendmsg(g.ep, &msg, FI_COMPLETION));
    }
    pthread_mutex_unlock(&g.send_lock);
    in_progress = was;
    __atomic_store_n(&c->used, 0, __ATOMIC_RELAXED);
    __atomic_fetch_sub(&g.batched, 1, __ATOMIC_RELAXED);
}

/* Start an empty batch to pe in c (the caller holds c->lock; c's batch is
 * empty). */
static void batch_begin_locked(ofi_ctx_t *c, int pe) {
    c->used = sizeof(batch_hdr_t);
    c->batch_pe = pe;
    c->begun_ns = sym__now_ns();
    __atomic_fetch_add(&g.batched, 1, __ATOMIC_RELAXED);
}

/* Until what c sent is in place at its targets: every batch applied (needed
 * before a direct operation on c, or the target's CPU could apply an older put
 * over what the operation writes, or after what it reads; and by fence), and
 * with `writes`, every write and fabric atomic (by quiet; the endpoint orders
 * those among themselves and before later sends). Nothing is acknowledged one
 * by one: the last batch to each PE (or an empty one) asks. */
static void settle(ofi_ctx_t *c, int writes) {
    int what = UNACKED_BATCH | (writes ? UNACKED_WRITE : 0);
    if (__atomic_load_n(&c->used, __ATOMIC_RELAXED) ||
        __atomic_load_n(&c->n_unacked, __ATOMIC_RELAXED)) {
        pthread_mutex_lock(&c->lock);
        if (c->used) {
            /* its acknowledgement covers all before it */
            __atomic_store_n(&c->unacked[c->batch_pe], 0, __ATOMIC_SEQ_CST);
            flush_locked(c, 1);
        }
        int kept = 0;
        for (int i = 0; i < c->n_unacked; i++) {
            int pe = c->unacked_list[i];
            if (!c->unacked[pe]) continue;
            if (!(c->unacked[pe] & what)) {
                c->unacked_list[kept++] = pe;
                continue;
            }
            __atomic_store_n(&c->unacked[pe], 0, __ATOMIC_SEQ_CST);
            batch_begin_locked(c, pe);
            flush_locked(c, 1);
        }
        __atomic_store_n(&c->n_unacked, kept, __ATOMIC_RELAXED);
        pthread_mutex_unlock(&c->lock);
    }
    SYM_WAIT_UNTIL(__atomic_load_n(&c->pending_batches, __ATOMIC_ACQUIRE) == 0);
}

/* Add a put (flags 0) or a signal set (BATCH_SIGNAL, 8 bytes) to c's batch for
 * `pe`, sending the batch first if it is for another PE or has no room for
 * `room` more bytes. The caller holds c->lock. */
static void batch_add_locked(ofi_ctx_t *c, const void *dest, const void *src, size_t len, int pe,
                             uint64_t flags, size_t room) {
    size_t off;
    int seg = sym__seg_of(dest, &off);
    if (seg < 0) sym__fatal("ofi", "address %p is not symmetric", dest);
    if (c->used && (c->batch_pe != pe || c->used + room > AM_BYTES)) flush_locked(c, 0);
    if (!c->used) batch_begin_locked(c, pe);
    batch_ent_t e = {off | flags | ((uint64_t)seg << BATCH_SEG_BIT), len};
    memcpy(c->batch + c->used, &e, sizeof e);
    memcpy(c->batch + c->used + sizeof e, src, len);
    __atomic_store_n(&c->used, c->used + batch_room(len), __ATOMIC_RELAXED);
}

/* Send the batches begun at least age_ns ago: all of them when a thread
 * waits, and stale ones from the progress thread, so puts arrive while their
 * PE computes. Never blocking on a lock: the holder may be posting, and wait
 * for the caller to drain the queue. */
static void flush_all(uint64_t age_ns) {
    if (!__atomic_load_n(&g.batched, __ATOMIC_RELAXED)) return;
    uint64_t before = sym__now_ns() - age_ns;
    if (pthread_mutex_trylock(&g.ctxs_lock)) return;
    for (ofi_ctx_t *c = g.ctxs; c; c = c->next)
        if (__atomic_load_n(&c->used, __ATOMIC_RELAXED) && pthread_mutex_trylock(&c->lock) == 0) {
            if (c->used && c->begun_ns <= before) flush_locked(c, 0);
            pthread_mutex_unlock(&c->lock);
        }
    pthread_mutex_unlock(&g.ctxs_lock);
}

static int ctx_init(ofi_ctx_t *c) {
    c->batch = malloc(AM_BYTES);
    c->unacked = calloc((size_t)sym__world.npes, 1);
    c->unacked_list = malloc((size_t)sym__world.npes * sizeof(int));
    if (!c->batch || !c->unacked || !c->unacked_list) {
        free(c->batch);
        free(c->unacked);
        free(c->unacked_list);
        return -1;
    }
    pthread_mutex_init(&c->lock, NULL);
    pthread_mutex_lock(&g.ctxs_lock);
    c->next = g.ctxs;
    g.ctxs = c;
    pthread_mutex_unlock(&g.ctxs_lock);
    return 0;
}

/* ---- the operations ---- */

/* Note a write or fabric atomic to pe on c, for quiet to have acknowledged;
 * called once it is posted, so a settle that clears the note on another thread
 * posts its request for acknowledgement after the write. */
static void note_write(ofi_ctx_t *c, int pe) {
    if (__atomic_load_n(&c->unacked[pe], __ATOMIC_SEQ_CST) & UNACKED_WRITE) return;
    pthread_mutex_lock(&c->lock);
    note_unacked_locked(c, pe, UNACKED_WRITE);
    pthread_mutex_unlock(&c->lock);
}

/* A put straight through the fabric (no batch). */
static void put_direct(ofi_ctx_t *c, void *dest, const void *src, size_t len, int pe,
                       int blocking) {
    uint64_t raddr, key;
    remote_of(dest, pe, &raddr, &key, NULL, NULL);
    if (len <= BOUNCE_MAX) {
        /* Small: copy it aside and return; the write completes by the next quiet. */
        op_t *op = malloc(sizeof *op + len);
        if (!op) sym__fatal("ofi", "out of memory");
        memset(op, 0, sizeof *op);
        op->ctx = c;
        op->owned = 1;
        memcpy(op->bounce, src, len);
        __atomic_fetch_add(&c->issued, 1, __ATOMIC_RELAXED);
        POST(fi_write(g.ep, op->bounce, len, NULL, g.addr[pe], raddr, key, &op->fctx));
        note_write(c, pe);
        return;
    }
    op_t stack;
    op_t *op = new_op(c, &stack, blocking);
    POST(fi_write(g.ep, src, len, desc_for(src, len), g.addr[pe], raddr, key, &op->fctx));
    note_write(c, pe);
    if (blocking) wait_op(op);
}

static void ofi_put(void *ctx, void *dest, const void *src, size_t len, int pe, int blocking) {
    ofi_ctx_t *c = ctx ? ctx : &g.default_ctx;
    if (len <= BATCH_ITEM) { /* blocking too: its data is copied, it completes at quiet */
        pthread_mutex_lock(&c->lock);
        batch_add_locked(c, dest, src, len, pe, 0, batch_room(len));
        pthread_mutex_unlock(&c->lock);
        return;
    }
    settle(c, 0);
    put_direct(c, dest, src, len, pe, blocking);
}

static void ofi_get(void *ctx, void *dest, const void *src, size_t len, int pe, int blocking) {
    ofi_ctx_t *c = ctx ? ctx : &g.default_ctx;
    settle(c, 0);
    uint64_t raddr, key;
    remote_of(src, pe, &raddr, &key, NULL, NULL);
    op_t stack;
    op_t *op = new_op(c, &stack, blocking);
    POST(fi_read(g.ep, dest, len, desc_for(dest, len), g.addr[pe], raddr, key, &op->fctx));
    if (blocking) wait_op(op);
}

static enum fi_op fi_op_of(sym_amo_op_t op) {
    switch (op) {
    case SYM_AMO_FETCH: return FI_ATOMIC_READ;
    case SYM_AMO_SET: return FI_ATOMIC_WRITE;
    case SYM_AMO_SWAP: return FI_ATOMIC_WRITE;
    case SYM_AMO_CSWAP: return FI_CSWAP;
    case SYM_AMO_ADD: return FI_SUM;
    case SYM_AMO_AND: return FI_BAND;
    case SYM_AMO_OR: return FI_BOR;
    case SYM_AMO_XOR: return FI_BXOR;
    }
    return FI_SUM;
}

static void ofi_amo(void *ctx, sym_amo_op_t op, void *dest, const void *operand,
                    const void *compare, void *result, size_t size, int pe, int blocking) {
    ofi_ctx_t *c = ctx ? ctx : &g.default_ctx;
    settle(c, 0);
    uint64_t raddr, key, off;
    int seg;
    remote_of(dest, pe, &raddr, &key, &seg, &off);
    op_t stack;
    op_t *op_ = new_op(c, &stack, blocking);
    if (g.native_atomics) {
        /* The operands live in the op: the fabric may read them after we return. */
        enum fi_datatype dt = size == 4 ? FI_UINT32 : FI_UINT64;
        if (operand) memcpy(&op_->operand, operand, size);
        if (compare) memcpy(&op_->compare, compare, size);
        void *res = result ? result : &op_->scratch; /* a non-fetching op still needs space */
        if (op == SYM_AMO_CSWAP)
            POST(fi_compare_atomic(g.ep, &op_->operand, 1, NULL, &op_->compare, NULL, res, NULL,
                                   g.addr[pe], raddr, key, dt, FI_CSWAP, &op_->fctx));
        else if (op == SYM_AMO_FETCH || op == SYM_AMO_SWAP || result)
            POST(fi_fetch_atomic(g.ep, &op_->operand, 1, NULL, res, NULL, g.addr[pe], raddr, key,
                                 dt, fi_op_of(op), &op_->fctx));
        else {
            POST(fi_atomic(g.ep, &op_->operand, 1, NULL, g.addr[pe], raddr, key, dt,
                           fi_op_of(op), &op_->fctx));
            note_write(c, pe); /* its completion may come before it is applied */
        }
    } else {
        am_t m = {0};
        m.kind = AM_AMO;
        m.op = (uint8_t)op;
        m.size = (uint8_t)size;
        m.seg = (uint8_t)seg;
        m.offset = off;
        m.from = (uint32_t)sym__world.me;
        memcpy(&m.operand, operand ? operand : &m.operand, size);
        if (compare) memcpy(&m.compare, compare, size);
        m.req = (uintptr_t)op_;
        op_->result = result;
        op_->size = size;
        op_->am = 1;
        __atomic_fetch_add(&c->pending_am, 1, __ATOMIC_RELAXED);
        send_msg(&m, pe); /* the reply completes op_ */
    }
    if (blocking) wait_op(op_);
}

static void ofi_put_signal(void *ctx, void *dest, const void *src, size_t len, uint64_t *sig,
                           uint64_t value, int sig_op, int pe, int blocking) {
    ofi_ctx_t *c = ctx ? ctx : &g.default_ctx;
    if (sig_op != 1 &&
        sizeof(batch_hdr_t) + batch_room(len) + batch_room(sizeof value) <= AM_BYTES) {
        /* Up to a batch, with a set: data and signal in one message, sent now,
         * which the target applies in order (one message instead of two writes
         * and their acknowledgements: 8-32 KiB all-reduces 1.5x faster over
         * tcp). It follows this PE's earlier writes and messages to pe on the
         * ordered endpoint. */
        pthread_mutex_lock(&c->lock);
        size_t room = batch_room(len) + batch_room(sizeof value);
        if (len) batch_add_locked(c, dest, src, len, pe, 0, room);
        batch_add_locked(c, sig, &value, sizeof value, pe, BATCH_SIGNAL, batch_room(sizeof value));
        flush_locked(c, 0);
        pthread_mutex_unlock(&c->lock);
        return;
    }
    settle(c, 0);
    if (len) put_direct(c, dest, src, len, pe, blocking);
    if (sig_op != 1) { /* SHMEM_SIGNAL_SET: an ordered write of the word */
        put_direct(c, sig, &value, sizeof value, pe, 0);
        return;
    }
    /* SHMEM_SIGNAL_ADD: an active message the target applies with a CPU
     * atomic, ordered after the write (send-after-write); its reply completes it. */
    uint64_t soff;
    int sseg;
    uint64_t sraddr, skey;
    remote_of(sig, pe, &sraddr, &skey, &sseg, &soff);
    am_t m = {0};
    m.kind = AM_SIGNAL;
    m.op = 1;
    m.seg = (uint8_t)sseg;
    m.from = (uint32_t)sym__world.me;
    m.offset = soff;
    m.operand = value;
    op_t *op = new_op(c, NULL, 0);
    m.req = (uintptr_t)op;
    __atomic_fetch_add(&c->pending_am, 1, __ATOMIC_RELAXED);
    op->am = 1;
    send_msg(&m, pe);
}

static void ofi_quiet(void *ctx);

static void ofi_fence(void *ctx) {
    /* An ordered endpoint keeps writes, reads and sends to a target in order,
     * but an active message is applied by the target's CPU later than writes
     * placed by its provider: wait for those. Unordered endpoints: a quiet. */
    ofi_ctx_t *c = ctx ? ctx : &g.default_ctx;
    if (!g.ordered) {
        ofi_quiet(ctx);
        return;
    }
    settle(c, 0);
    SYM_WAIT_UNTIL(__atomic_load_n(&c->pending_am, __ATOMIC_ACQUIRE) == 0);
}

static void ofi_quiet(void *ctx) {
    ofi_ctx_t *c = ctx ? ctx : &g.default_ctx;
    settle(c, 1);
    uint64_t want = __atomic_load_n(&c->issued, __ATOMIC_ACQUIRE);
    SYM_WAIT_UNTIL(__atomic_load_n(&c->completed, __ATOMIC_ACQUIRE) >= want);
}

static void *ofi_ctx_create(long options) {
    (void)options;
    ofi_ctx_t *c = calloc(1, sizeof *c);
    if (c && ctx_init(c)) {
        free(c);
        c = NULL;
    }
    return c;
}

static void ofi_ctx_destroy(void *ctx) { /* the caller has quieted it */
    ofi_ctx_t *c = ctx;
    pthread_mutex_lock(&g.ctxs_lock);
    for (ofi_ctx_t **p = &g.ctxs; *p; p = &(*p)->next)
        if (*p == c) {
            *p = c->next;
            break;
        }
    pthread_mutex_unlock(&g.ctxs_lock);
    pthread_mutex_destroy(&c->lock);
    free(c->batch);
    free(c->unacked);
    free(c->unacked_list);
    free(c);
}

static const sym_remote_ops_t ofi_ops = {
    "ofi", ofi_ctx_create, ofi_ctx_destroy, ofi_put, ofi_get, ofi_amo, ofi_put_signal,
    ofi_fence, ofi_quiet,
};

/* ---- setup ---- */

/* Providers that offer RDM endpoints with RMA and ordered writes and sends;
 * with fabric atomics when `atomics`. NULL if none. (Writes complete here when
 * the provider says; quiet asks the target, see settle.) */
static struct fi_info *query(const char *prov, int atomics, int *rc) {
    struct fi_info *hints = lib.dupinfo(NULL);
    if (!hints) sym__fatal("ofi", "out of memory");
    hints->ep_attr->type = FI_EP_RDM;
    hints->caps = FI_MSG | FI_RMA | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE |
                  (atomics ? FI_ATOMIC : 0);
    hints->mode = FI_CONTEXT | FI_CONTEXT2;
    hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY |
                                  FI_MR_ENDPOINT;
    hints->domain_attr->threading = FI_THREAD_SAFE;
    hints->tx_attr->msg_order = FI_ORDER_WAW | FI_ORDER_SAW | FI_ORDER_RAW | FI_ORDER_SAS;
    hints->rx_attr->msg_order = hints->tx_attr->msg_order;
    if (prov && *prov && !(hints->fabric_attr->prov_name = strdup(prov)))
        sym__fatal("ofi", "out of memory"); /* NULL would mean any provider */
    struct fi_info *info = NULL;
    *rc = lib.getinfo(FI_VERSION_NEEDED, NULL, NULL, 0, hints, &info);
    lib.freeinfo(hints);
    return *rc ? NULL : info;
}

/* The providers that fit (`prov` alone when set), NULL with *rc when none. */
static struct fi_info *find_info(const char *prov, int *rc) {
    struct fi_info *info = query(prov, 1, rc);
    return info ? info : query(prov, 0, rc);
}

static struct fi_info *get_info(const char *prov) {
    int rc;
    struct fi_info *info = find_info(prov, &rc);
    if (!info)
        sym__fatal("shmem_init",
                   "no libfabric provider%s%s offers RDM endpoints with RMA and ordered "
                   "writes (%s); set SYMTRAIN_OFI_PROVIDER to one that does (fi_info lists them)",
                   prov && *prov ? " named " : "", prov && *prov ? prov : "", lib.strerror(-rc));
    return info;
}

static int try_open(struct fi_info *fi) {
    if (lib.fabric(fi->fabric_attr, &g.fabric, NULL)) return -1;
    if (fi_domain(g.fabric, fi, &g.domain, NULL)) goto err_fabric;
    struct fi_cq_attr cqa = {.format = FI_CQ_FORMAT_DATA, .size = 1024, .wait_obj = FI_WAIT_UNSPEC};
    g.wait_cq = 1;
    if (fi_cq_open(g.domain, &cqa, &g.cq, NULL)) {
        cqa.wait_obj = FI_WAIT_NONE;
        g.wait_cq = 0;
        if (fi_cq_open(g.domain, &cqa, &g.cq, NULL)) goto err_domain;
    }
    struct fi_av_attr ava = {.type = FI_AV_TABLE};
    if (fi_av_open(g.domain, &ava, &g.av, NULL)) goto err_cq;
    if (fi_endpoint(g.domain, fi, &g.ep, NULL)) goto err_av;
    if (fi_ep_bind(g.ep, &g.cq->fid, FI_TRANSMIT | FI_RECV) || fi_ep_bind(g.ep, &g.av->fid, 0) ||
        fi_enable(g.ep)) {
        fi_close(&g.ep->fid);
        goto err_av;
    }
    g.info = fi;
    return 0;
err_av:
    fi_close(&g.av->fid);
err_cq:
    fi_close(&g.cq->fid);
err_domain:
    fi_close(&g.domain->fid);
err_fabric:
    fi_close(&g.fabric->fid);
    return -1;
}

/* A memory key nobody can guess: 64 random bits, or as many as the
 * provider's keys hold. (Where the provider assigns keys it ignores this.) */
static uint64_t random_key(void) {
    uint64_t key;
    if (sym__random_bytes(&key, sizeof key))
        sym__fatal("shmem_init", "libcrypto could not draw random memory keys");
    size_t bytes = g.info->domain_attr->mr_key_size;
    if (bytes && bytes < sizeof key) key &= (1ull << (8 * bytes)) - 1;
    return key;
}

static void register_segments(void) {
    for (int s = 0; s < SYM_SEG_COUNT; s++) {
        if (!sym__world.seg[s].size) continue;
        int rc, tries = 0;
        do /* a key another registration of this domain holds: draw again */
            rc = fi_mr_reg(g.domain, sym__world.seg[s].base, sym__world.seg[s].size,
                           FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE | FI_SEND |
                               FI_RECV,
                           0, random_key(), 0, &g.mr[s], NULL);
        while (rc == -FI_ENOKEY && ++tries < 8);
        OFI_CHECK(rc);
        if (g.info->domain_attr->mr_mode & FI_MR_ENDPOINT) {
            OFI_CHECK(fi_mr_bind(g.mr[s], &g.ep->fid, 0));
            OFI_CHECK(fi_mr_enable(g.mr[s]));
        }
        g.desc[s] = fi_mr_desc(g.mr[s]);
    }
}

static int atomics_usable(void) {
    if (!(g.info->caps & FI_ATOMIC)) return 0;
    static const enum fi_op ops[] = {FI_SUM, FI_BAND, FI_BOR, FI_BXOR, FI_ATOMIC_WRITE,
                                     FI_ATOMIC_READ};
    for (int t = 0; t < 2; t++) {
        enum fi_datatype dt = t ? FI_UINT64 : FI_UINT32;
        size_t count;
        for (size_t i = 0; i < SYM_ARRAY_LEN(ops); i++)
            if (fi_fetch_atomicvalid(g.ep, dt, ops[i], &count) || count < 1) return 0;
        if (fi_compare_atomicvalid(g.ep, dt, FI_CSWAP, &count) || count < 1) return 0;
    }
    return 1;
}

/* Emulated reliable endpoints over IP: rxm over tcp's connections, rxd over
 * udp, the sockets provider. libfabric 1.17 lists them before its native RDM
 * endpoint over TCP, "net" (1.18 renamed it tcp), which has a third of their
 * latency here: 7 us one way against 20-45 us for tcp;ofi_rxm. */
static int emulated_over_ip(const char *name) {
    return !strcmp(name, "tcp;ofi_rxm") || !strcmp(name, "udp;ofi_rxd") ||
           !strcmp(name, "sockets");
}

/* Shared memory reaches this host only: not a choice for the fabric unless
 * named. */
static int one_host_only(const struct fi_info *fi) {
    return strstr(fi->fabric_attr->prov_name, "shm") || strstr(fi->fabric_attr->prov_name, "sm2");
}

/* Open the first provider of `list` that works (named `prov`, or any that
 * reaches other hosts: not shm; net before an IP emulation); NULL if none. */
static struct fi_info *open_provider(struct fi_info *list, const char *prov) {
    int named = prov && *prov;
    struct fi_info *first = list;
    while (first && !named && one_host_only(first)) first = first->next;
    int prefer_net = !named && first && emulated_over_ip(first->fabric_attr->prov_name);
    for (int pass = prefer_net ? 0 : 1; pass < 2; pass++)
        for (struct fi_info *fi = list; fi; fi = fi->next) {
            if (!named && one_host_only(fi)) continue;
            if (pass == 0 && strcmp(fi->fabric_attr->prov_name, "net")) continue;
            if (try_open(fi) == 0) return fi;
        }
    return NULL;
}

/* The CPUs this host's PEs share: its online CPUs (not this process's mask:
 * a launcher that binds each PE to a core leaves each fewer), or fewer where
 * a cgroup quota (as a Kubernetes CPU limit sets: util/cpus.c) allows less. */
static long host_cpus(void) {
    long cpus = sysconf(_SC_NPROCESSORS_ONLN), q = sym__cpu_limit();
    return q > 0 && q < cpus ? q : cpus;
}

const sym_remote_ops_t *sym__ofi_init(sym_boot_t *boot, void **default_ctx) {
    load_libfabric();
    const char *prov = getenv("SYMTRAIN_OFI_PROVIDER");
    struct fi_info *list = get_info(prov);
    struct fi_info *fi = open_provider(list, prov);
    if (!fi)
        sym__fatal("shmem_init", "no libfabric provider%s%s could be opened; set "
                                 "SYMTRAIN_OFI_PROVIDER (fi_info lists them)",
                   prov && *prov ? " named " : "", prov && *prov ? prov : "");
    g.info_list = list;
    g.virt_addr = (fi->domain_attr->mr_mode & FI_MR_VIRT_ADDR) != 0;
    g.inject_size = fi->tx_attr->inject_size;
    g.ordered = (fi->tx_attr->msg_order & (FI_ORDER_WAW | FI_ORDER_SAW | FI_ORDER_SAS)) ==
                (FI_ORDER_WAW | FI_ORDER_SAW | FI_ORDER_SAS);
    if (g.inject_size < sizeof(am_t))
        sym__fatal("shmem_init", "the %s provider injects only %zu bytes; symshmem needs %zu",
                   fi->fabric_attr->prov_name, g.inject_size, sizeof(am_t));
    register_segments();

    int npes = boot->size;
    ofi_rec_t mine = {0}, *all = calloc((size_t)npes, sizeof *all);
    g.addr = calloc((size_t)npes, sizeof *g.addr);
    g.seq_to = calloc((size_t)npes, sizeof *g.seq_to);
    g.expect = calloc((size_t)npes, sizeof *g.expect);
    for (int s = 0; s < SYM_SEG_COUNT; s++) {
        g.key[s] = calloc((size_t)npes, sizeof(uint64_t));
        g.base[s] = calloc((size_t)npes, sizeof(uint64_t));
    }
    g.msg_key_of = calloc((size_t)npes, sizeof *g.msg_key_of);
    int oom = !all || !g.addr || !g.seq_to || !g.expect || !g.msg_key_of;
    for (int s = 0; s < SYM_SEG_COUNT; s++) oom |= !g.key[s] || !g.base[s];
    if (oom) sym__fatal("shmem_init", "out of memory for the fabric's tables of %d PEs", npes);
    size_t nl = sizeof mine.name;
    OFI_CHECK(fi_getname(&g.ep->fid, mine.name, &nl));
    mine.name_len = nl;
    for (int s = 0; s < SYM_SEG_COUNT; s++) {
        mine.key[s] = g.mr[s] ? fi_mr_key(g.mr[s]) : 0;
        mine.base[s] = g.virt_addr ? (uint64_t)(uintptr_t)sym__world.seg[s].base : 0;
    }
    if (sym__random_bytes(&g.msg_key, sizeof g.msg_key))
        sym__fatal("shmem_init", "libcrypto could not draw a random message key");
    mine.msg_key = g.msg_key;
    snprintf(mine.prov, sizeof mine.prov, "%s", fi->fabric_attr->prov_name);
    long local = 0; /* PEs on this host, this one included */
    for (int pe = 0; pe < npes; pe++) local += pe == sym__world.me || sym__pe_is_local(pe);
    mine.one_per_host = local == 1;
    mine.atomics = atomics_usable();
    if (boot->allgather(boot, &mine, all, sizeof mine))
        sym__fatal("shmem_init", "could not exchange fabric addresses");
    /* Every PE decides the same about fabric atomics: possible on every
     * endpoint, and a PE per host everywhere? */
    int possible = 1, one_everywhere = 1;
    for (int pe = 0; pe < npes; pe++) {
        if (strcmp(all[pe].prov, mine.prov))
            sym__fatal("shmem_init",
                       "PEs chose different fabric providers (PE %d: %s, this PE: %s); set "
                       "SYMTRAIN_OFI_PROVIDER to the same provider everywhere",
                       pe, all[pe].prov, mine.prov);
        if (fi_av_insert(g.av, all[pe].name, 1, &g.addr[pe], 0, NULL) != 1)
            sym__fatal("shmem_init", "cannot add PE %d's fabric address", pe);
        for (int s = 0; s < SYM_SEG_COUNT; s++) {
            g.key[s][pe] = all[pe].key[s];
            g.base[s][pe] = all[pe].base[s];
        }
        g.msg_key_of[pe] = all[pe].msg_key;
        possible &= all[pe].atomics;
        one_everywhere &= all[pe].one_per_host;
    }
    free(all);
    /* SYMTRAIN_OFI_ATOMICS: auto (fabric atomics when possible and safe), fabric
     * (insist), am (always active messages). */
    sym_atomics_mode_t want = sym__fabric_settings.atomics;
    if (want == SYM_ATOMICS_FABRIC && !(possible && one_everywhere))
        sym__fatal("shmem_init",
                   "SYMTRAIN_OFI_ATOMICS=fabric, but %s; use auto or am",
                   !possible ? "the provider offers no fabric atomics for 32- and 64-bit words"
                             : "some host runs several PEs, whose shared-memory atomics are not "
                               "atomic with the fabric's");
    g.native_atomics = possible && one_everywhere && want != SYM_ATOMICS_AM;
    sym__amo_through_fabric = g.native_atomics;

    pthread_mutex_init(&g.ctxs_lock, NULL);
    pthread_mutex_init(&g.send_lock, NULL);
    pthread_mutex_init(&g.apply_lock, NULL);
    if (ctx_init(&g.default_ctx)) sym__fatal("shmem_init", "out of memory");
    /* No more receives than the provider's queue holds: a receive past it
     * returns -FI_EAGAIN until one completes, and none would at init. */
    size_t rx = fi->rx_attr->size;
    g.n_recvs = rx && rx < AM_RECVS ? (int)rx : AM_RECVS;
    for (int i = 0; i < g.n_recvs; i++) post_recv(i);
    if (pthread_create(&g.progress, NULL, progress_main, NULL))
        sym__fatal("shmem_init", "cannot start the fabric progress thread");
    sym__progress_hook = progress_once;
    /* SYMTRAIN_WAIT: auto (waits poll without sleeping while this host has a
     * core for each of its PEs: see host_cpus), poll, sleep. */
    sym_wait_mode_t wait = sym__fabric_settings.wait;
    sym__wait_polls = wait == SYM_WAIT_AUTO ? local <= host_cpus() : wait == SYM_WAIT_POLL;
    *default_ctx = &g.default_ctx;
    size_t key_bytes = fi->domain_attr->mr_key_size;
    int key_bits = 8 * (int)(key_bytes && key_bytes < 8 ? key_bytes : 8);
    sym__info("fabric: provider %s, %s atomics, waits %s, memory keys %s (%d bits)", mine.prov,
              g.native_atomics ? "fabric" : "active-message",
              sym__wait_polls ? "poll" : "sleep between polls",
              fi->domain_attr->mr_mode & FI_MR_PROV_KEY ? "the provider's" : "random", key_bits);
    return &ofi_ops;
}

void sym__ofi_check_provider(const char *prov) {
    load_libfabric();
    int rc;
    struct fi_info *info = find_info(prov, &rc);
    if (!info)
        sym__fatal("environment",
                   "SYMTRAIN_OFI_PROVIDER='%s' is not a libfabric provider with RDM endpoints, "
                   "RMA and ordered writes on this machine (%s); name one that fi_info lists, "
                   "or unset it for libfabric's choice",
                   prov, lib.strerror(-rc));
    lib.freeinfo(info);
}

void sym__ofi_fini(sym_boot_t *boot) {
    /* Every PE's last operations have completed (the caller's barrier); meet
     * once more out of band so no PE closes while replies are in flight. */
    sym__boot_barrier(boot);
    sym__progress_hook = NULL;
    sym__wait_polls = 0;
    __atomic_store_n(&g.stop, 1, __ATOMIC_RELEASE);
    pthread_join(g.progress, NULL);
    if (g.dropped > 1)
        sym__warn("ofi", "dropped %llu fabric messages in all that did not carry this job's key",
                  (unsigned long long)g.dropped);
    fi_close(&g.ep->fid);
    for (int s = 0; s < SYM_SEG_COUNT; s++)
        if (g.mr[s]) fi_close(&g.mr[s]->fid);
    fi_close(&g.av->fid);
    fi_close(&g.cq->fid);
    fi_close(&g.domain->fid);
    fi_close(&g.fabric->fid);
    lib.freeinfo(g.info_list);
}
