/*
 * env.c — bootstrap from torchrun / Kubernetes style variables:
 *   RANK, WORLD_SIZE (required), MASTER_ADDR, MASTER_PORT (where rank 0 runs
 *   the job's store), SYMTRAIN_JOB_TOKEN (the job's secret, the same on every
 *   rank), SYMTRAIN_BOOT_TIMEOUT (seconds to wait for peers; default 120).
 *   Or Kubeflow's trainer's (PyTorchJob, TrainJob): PET_NNODES pods of
 *   PET_NPROC_PER_NODE processes each (default 1), this pod PET_NODE_RANK,
 *   this process LOCAL_RANK in its pod (default 0), the store at
 *   PET_MASTER_ADDR:PET_MASTER_PORT (else MASTER_ADDR:MASTER_PORT); the rank
 *   is PET_NODE_RANK x PET_NPROC_PER_NODE + LOCAL_RANK. Where both kinds are
 *   set the PET_ ones win: the operator's RANK there names the pod.
 *
 * Rank 0 runs a small TCP store on a thread; every rank, rank 0 included,
 * connects to it. A connection is admitted only after it proves it knows the
 * secret: the store sends a random nonce and expects HMAC-SHA256(secret,
 * nonce); anything else is closed without a word, so a stranger on the port
 * learns nothing and changes nothing. Strangers cannot crowd the ranks out
 * either: at most PENDING_MAX connections wait to prove themselves at once
 * (the oldest goes when another comes), each for PENDING_S seconds at most;
 * when rank 0 runs out of file descriptors the oldest waiting one is closed to
 * make room; and what was turned away is said in one line a minute at most.
 *
 * Members then all-gather through the store, each record sealed with
 * AES-256-GCM under a key derived (HKDF) from the secret and a salt the store
 * draws for this job: the store and anyone on the wire see only ciphertext
 * (fabric addresses and memory keys ride in these records), and a record
 * altered on the way, replayed from another all-gather or another job, or
 * sealed with another token fails to open, which ends the job with a message
 * saying so. The nonce is the sender's rank and the all-gather's number, so it
 * never repeats under one key.
 *
 * The connections stay open for the life of the job: when a rank disconnects
 * before it finishes, or asks to end the job, the store tells every other rank,
 * and they exit — nothing hangs. Ranks that never arrive within the timeout are
 * named in the error every rank prints.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "../util/crypto.h"
#include "../util/util.h"
#include "bootstrap.h"
#include "wire.h"

enum {
    WIRE_HELLO = 10, /* member -> store: {rank, world} */
    WIRE_FAIL = 11,  /* store -> member: the job cannot go on; payload: the reason */
    WIRE_WELCOME = 12, /* store -> member: admitted; payload: the job's salt */
};

#define NONCE_LEN 32
#define SALT_LEN 32
#define PENDING_MAX 32 /* connections waiting to prove they know the token, at most */
#define PENDING_S 5.0  /* and for how long each */
#define REPORT_S 60.0  /* what was turned away is said at most this often */
static const char mac_label[] = "symtrain-store-v1";
static const char seal_label[] = "symtrain all-gather v1";

static int compute_mac(const char *token, const unsigned char *nonce, unsigned char *mac) {
    unsigned char msg[sizeof mac_label + NONCE_LEN];
    memcpy(msg, mac_label, sizeof mac_label);
    memcpy(msg + sizeof mac_label, nonce, NONCE_LEN);
    return sym__hmac_sha256(token, strlen(token), msg, sizeof msg, mac);
}

/* ---- the store (rank 0) ---- */

typedef enum { C_AUTH, C_HELLO, C_MEMBER, C_GONE } cstate_t;

typedef struct {
    int fd;
    cstate_t state;
    unsigned char nonce[NONCE_LEN];
    unsigned char in[64];
    size_t have;
    int rank;
    double since;
} conn_t;

typedef struct {
    int listen_fd;
    int world;
    const char *token;
    double timeout;
    char where[128];
    conn_t *conns;
    int nconns, cap;
    int *member_fd;   /* rank -> fd, -1 until joined */
    int joined;
    char **gather;    /* rank -> its part of the pending all-gather */
    uint32_t *glen;
    int gathered;
    int finished;     /* ranks that sent FINI */
    int *fini;
    int ended;        /* the job is over (failure or everyone finished) */
    unsigned char salt[SALT_LEN]; /* this job's, for the all-gather's key */
    int spare_fd;     /* held open to be given up when accept runs out of fds */
    /* Connections turned away since the last report: with a wrong proof of
     * the token; silent, too slow, or pushed out by newer ones. */
    long bad_proof, dropped;
    double reported;  /* when the last report was printed */
    pthread_t thread;
} store_t;

/* Rank 0 last: it may exit on what it reads, taking this thread with it. */
static void store_send_all(store_t *s, uint32_t type, const void *p, uint32_t len, int except) {
    for (int r = s->world - 1; r >= 0; r--)
        if (s->member_fd[r] >= 0 && r != except) sym__wire_send(s->member_fd[r], type, p, len);
}

/* One line for every connection turned away since the last one: a stranger
 * knocking thousands of times must not write thousands of lines. */
static void store_report(store_t *s) {
    if (!s->bad_proof && !s->dropped) return;
    double now = sym__now_s();
    sym__warn("bootstrap",
              "the job's store at %s turned away %ld connection(s) without the job token in "
              "%.1f s (%ld with a wrong proof, %ld silent, too slow or beyond %d waiting at "
              "once); only this job's ranks should reach MASTER_PORT: keep it on a private "
              "network",
              s->where, s->bad_proof + s->dropped, now - s->reported, s->bad_proof, s->dropped,
              PENDING_MAX);
    s->bad_proof = s->dropped = 0;
    s->reported = now;
}

static void store_fail(store_t *s, const char *why) {
    store_report(s);
    store_send_all(s, WIRE_FAIL, why, (uint32_t)strlen(why) + 1, -1);
    s->ended = 1;
}

static void store_close(store_t *s, conn_t *c) {
    if (c->state == C_GONE) return;
    close(c->fd);
    if (c->state == C_MEMBER) s->member_fd[c->rank] = -1;
    c->state = C_GONE;
}

static int pending(const conn_t *c) { return c->state == C_AUTH || c->state == C_HELLO; }

/* Close the connection that has waited longest to prove itself; 0 if none. */
static int store_drop_oldest(store_t *s) {
    conn_t *old = NULL;
    for (int i = 0; i < s->nconns; i++)
        if (pending(&s->conns[i]) && (!old || s->conns[i].since < old->since)) old = &s->conns[i];
    if (!old) return 0;
    store_close(s, old);
    s->dropped++;
    return 1;
}

/* Forget closed connections, so the table is as long as what is open. */
static void store_compact(store_t *s) {
    int n = 0;
    for (int i = 0; i < s->nconns; i++)
        if (s->conns[i].state != C_GONE) s->conns[n++] = s->conns[i];
    s->nconns = n;
}

static void store_accept(store_t *s) {
    int fd = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0 && (errno == EMFILE || errno == ENFILE)) {
        /* Out of descriptors: the waiting connection stays in the queue and
         * poll says so again at once. Make room, or take it and close it. */
        if (!store_drop_oldest(s) && s->spare_fd >= 0) {
            close(s->spare_fd);
            int victim = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC);
            if (victim >= 0) {
                close(victim);
                s->dropped++;
            }
            s->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        }
        return;
    }
    if (fd < 0) return;
    int waiting = 0;
    for (int i = 0; i < s->nconns; i++) waiting += pending(&s->conns[i]);
    if (waiting >= PENDING_MAX) store_drop_oldest(s);
    if (s->nconns == s->cap) {
        int cap = s->cap ? s->cap * 2 : 16;
        conn_t *nc = realloc(s->conns, (size_t)cap * sizeof *nc);
        if (!nc) {
            close(fd);
            return;
        }
        s->conns = nc;
        s->cap = cap;
    }
    conn_t *c = &s->conns[s->nconns++];
    memset(c, 0, sizeof *c);
    c->fd = fd;
    c->rank = -1;
    c->since = sym__now_s();
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (sym__random_bytes(c->nonce, NONCE_LEN) || sym__wire_write(fd, c->nonce, NONCE_LEN)) {
        close(fd);
        c->state = C_GONE;
        return;
    }
    c->state = C_AUTH;
}

/* A member's framed message; blocking reads are fine once admitted (members
 * send whole frames). */
static void store_member_msg(store_t *s, conn_t *c) {
    sym_wire_hdr_t h;
    int flags = fcntl(c->fd, F_GETFL);
    fcntl(c->fd, F_SETFL, flags & ~O_NONBLOCK);
    char *payload;
    if (sym__wire_recv(c->fd, &h, &payload)) goto gone;
    fcntl(c->fd, F_SETFL, flags);
    switch (h.type) {
    case SYM_WIRE_ALLGATHER:
        if (s->gather[c->rank]) { /* a protocol error: treat as a failure of that rank */
            free(payload);
            goto gone;
        }
        s->gather[c->rank] = payload;
        s->glen[c->rank] = h.len;
        if (++s->gathered == s->world) {
            uint32_t len = s->glen[0];
            for (int r = 0; r < s->world; r++)
                if (s->glen[r] != len) {
                    store_fail(s, "ranks sent all-gathers of different sizes: they run "
                                  "different programs");
                    return;
                }
            size_t total = (size_t)len * (size_t)s->world;
            char *all = malloc(total ? total : 1);
            if (!all) {
                store_fail(s, "the store ran out of memory");
                return;
            }
            for (int r = 0; r < s->world; r++) {
                memcpy(all + (size_t)r * len, s->gather[r], len);
                free(s->gather[r]);
                s->gather[r] = NULL;
            }
            s->gathered = 0;
            store_send_all(s, SYM_WIRE_ALLGATHER, all, (uint32_t)total, -1);
            free(all);
        }
        return;
    case SYM_WIRE_ABORT:
        store_send_all(s, SYM_WIRE_ABORT, payload, h.len, c->rank);
        free(payload);
        s->ended = 1;
        return;
    case SYM_WIRE_FINI:
        free(payload);
        if (!s->fini[c->rank]) {
            s->fini[c->rank] = 1;
            s->finished++;
        }
        if (s->finished == s->world) s->ended = 1;
        return;
    default: free(payload); goto gone;
    }
gone:
    fcntl(c->fd, F_SETFL, flags);
    {
        int r = c->rank;
        store_close(s, c);
        if (!s->fini[r] && !s->ended) {
            char why[200];
            snprintf(why, sizeof why, "rank %d disconnected from the job's store before it "
                                      "finished; ending the job", r);
            store_fail(s, why);
        }
    }
}

/* Bytes from a connection that is not yet a member: the MAC, then HELLO. */
static void store_newcomer(store_t *s, conn_t *c) {
    size_t want = c->state == C_AUTH ? SYM_MAC_LEN : sizeof(sym_wire_hdr_t) + 8;
    ssize_t n = read(c->fd, c->in + c->have, want - c->have);
    if (n <= 0) {
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
        store_close(s, c);
        s->dropped++;
        return;
    }
    c->have += (size_t)n;
    if (c->have < want) return;
    c->have = 0;
    if (c->state == C_AUTH) {
        unsigned char mac[SYM_MAC_LEN];
        if (compute_mac(s->token, c->nonce, mac) || !sym__consttime_eq(mac, c->in, SYM_MAC_LEN)) {
            store_close(s, c);
            s->bad_proof++;
            return;
        }
        c->state = C_HELLO;
        return;
    }
    sym_wire_hdr_t h;
    uint32_t rw[2];
    memcpy(&h, c->in, sizeof h);
    memcpy(rw, c->in + sizeof h, sizeof rw);
    char why[200] = "";
    if (h.type != WIRE_HELLO || h.len != 8)
        snprintf(why, sizeof why, "a member sent a malformed greeting");
    else if ((int)rw[1] != s->world)
        snprintf(why, sizeof why, "rank %u says WORLD_SIZE=%u but rank 0 says %d", rw[0], rw[1],
                 s->world);
    else if ((int)rw[0] >= s->world)
        snprintf(why, sizeof why, "RANK=%u is not below WORLD_SIZE=%d", rw[0], s->world);
    else if (s->member_fd[rw[0]] >= 0)
        snprintf(why, sizeof why, "two processes both say RANK=%u", rw[0]);
    if (*why) {
        sym__wire_send(c->fd, WIRE_FAIL, why, (uint32_t)strlen(why) + 1);
        store_close(s, c);
        if (h.type == WIRE_HELLO && (int)rw[1] != s->world) store_fail(s, why);
        return;
    }
    c->state = C_MEMBER;
    c->rank = (int)rw[0];
    s->member_fd[c->rank] = c->fd;
    s->joined++;
    sym__wire_send(c->fd, WIRE_WELCOME, s->salt, SALT_LEN);
}

static void *store_main(void *arg) {
    store_t *s = arg;
    double deadline = sym__now_s() + s->timeout;
    while (!s->ended) {
        struct pollfd *p = malloc((size_t)(s->nconns + 1) * sizeof *p);
        if (!p) break;
        int np = 0;
        p[np].fd = s->listen_fd;
        p[np++].events = POLLIN;
        for (int i = 0; i < s->nconns; i++) {
            p[np].fd = s->conns[i].state == C_GONE ? -1 : s->conns[i].fd;
            p[np++].events = POLLIN;
        }
        int rc = poll(p, (nfds_t)np, 200);
        int nconns = s->nconns; /* accept may grow the array */
        if (rc > 0) {
            for (int i = 0; i < nconns && !s->ended; i++) {
                conn_t *c = &s->conns[i];
                if (c->state == C_GONE || !(p[i + 1].revents & (POLLIN | POLLHUP | POLLERR)))
                    continue;
                if (c->state == C_MEMBER)
                    store_member_msg(s, c);
                else
                    store_newcomer(s, c);
            }
            if (p[0].revents & POLLIN) store_accept(s);
        }
        free(p);
        /* Newcomers get a few seconds to prove themselves. */
        double now = sym__now_s();
        for (int i = 0; i < s->nconns; i++)
            if (pending(&s->conns[i]) && now - s->conns[i].since > PENDING_S) {
                store_close(s, &s->conns[i]);
                s->dropped++;
            }
        store_compact(s);
        if (now - s->reported > REPORT_S) store_report(s);
        if (s->joined < s->world && sym__now_s() > deadline) {
            char why[512];
            int n = snprintf(why, sizeof why, "ranks never reached the job's store at %s within "
                                              "%g s (SYMTRAIN_BOOT_TIMEOUT):", s->where, s->timeout);
            for (int r = 0, shown = 0; r < s->world && n < (int)sizeof why - 16; r++)
                if (s->member_fd[r] < 0 && shown++ < 20) n += snprintf(why + n, sizeof why - (size_t)n, " %d", r);
            store_fail(s, why);
        }
    }
    /* Let members read what was sent before the sockets go. */
    for (int i = 0; i < s->nconns; i++) {
        if (pending(&s->conns[i])) s->dropped++;
        if (s->conns[i].state != C_GONE) shutdown(s->conns[i].fd, SHUT_WR);
    }
    store_report(s);
    return NULL;
}

/* ---- a member ---- */

typedef struct {
    int fd;
    int rank, world;
    char where[128];
    store_t *store; /* rank 0 only */
    pthread_t reader;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    char *reply;
    uint32_t reply_len;
    int have_reply;
    int finishing;
    unsigned char key[SYM_AEAD_KEY_LEN]; /* seals this job's all-gather records */
    uint64_t seq;                        /* all-gathers so far: part of each nonce */
} env_boot_t;

/* Every frame from the store arrives here: replies go to the waiting
 * all-gather; a failure or an abort ends this process. */
static void *reader_main(void *arg) {
    env_boot_t *e = arg;
    for (;;) {
        sym_wire_hdr_t h;
        char *payload;
        if (sym__wire_recv(e->fd, &h, &payload)) break;
        if (h.type == SYM_WIRE_ALLGATHER) {
            pthread_mutex_lock(&e->mu);
            e->reply = payload;
            e->reply_len = h.len;
            e->have_reply = 1;
            pthread_cond_signal(&e->cv);
            pthread_mutex_unlock(&e->mu);
            continue;
        }
        if (h.type == WIRE_FAIL) {
            sym__warn("bootstrap", "%s", payload);
            _exit(1);
        }
        if (h.type == SYM_WIRE_ABORT) {
            int32_t st = 1;
            if (h.len >= sizeof st) memcpy(&st, payload, sizeof st);
            sym__warn("bootstrap", "another rank ended the job (status %d)", (int)st);
            _exit(st ? st : 1);
        }
        free(payload);
    }
    if (__atomic_load_n(&e->finishing, __ATOMIC_ACQUIRE)) return NULL;
    sym__warn("bootstrap", "lost the job's store at %s (did rank 0 end?); ending", e->where);
    _exit(1);
}

/* What a sealed record is bound to besides its bytes: the nonce (its
 * sender's rank and the all-gather's number) and the data it covers (the
 * same, with the job size and the record's length). */
typedef struct {
    uint32_t rank, world;
    uint64_t seq, len;
} seal_aad_t;

static void seal_nonce(int rank, uint64_t seq, unsigned char nonce[SYM_AEAD_NONCE_LEN]) {
    uint32_t r = (uint32_t)rank;
    memcpy(nonce, &r, sizeof r);
    memcpy(nonce + sizeof r, &seq, sizeof seq);
}

/* Every rank seals its record; the store concatenates the ciphertexts; every
 * rank opens each one (see the top of the file). */
static int env_allgather(sym_boot_t *b, const void *in, void *out, size_t len) {
    env_boot_t *e = b->impl;
    size_t sealed = len + SYM_AEAD_TAG_LEN;
    if (sealed > UINT32_MAX / (size_t)b->size) return -1;
    uint64_t seq = e->seq++;
    unsigned char nonce[SYM_AEAD_NONCE_LEN];
    seal_aad_t aad = {(uint32_t)e->rank, (uint32_t)e->world, seq, len};
    char *rec = malloc(sealed);
    if (!rec) return -1;
    seal_nonce(e->rank, seq, nonce);
    if (sym__aead_seal(e->key, nonce, &aad, sizeof aad, in, len, rec)) {
        free(rec);
        return -1;
    }
    pthread_mutex_lock(&e->mu);
    e->have_reply = 0;
    pthread_mutex_unlock(&e->mu);
    int rc = sym__wire_send(e->fd, SYM_WIRE_ALLGATHER, rec, (uint32_t)sealed);
    free(rec);
    if (rc) return -1;
    pthread_mutex_lock(&e->mu);
    while (!e->have_reply) pthread_cond_wait(&e->cv, &e->mu);
    pthread_mutex_unlock(&e->mu);
    rc = e->reply_len == sealed * (size_t)b->size ? 0 : -1;
    for (int r = 0; !rc && r < b->size; r++) {
        aad.rank = (uint32_t)r;
        seal_nonce(r, seq, nonce);
        if (sym__aead_open(e->key, nonce, &aad, sizeof aad, e->reply + (size_t)r * sealed, sealed,
                           (char *)out + (size_t)r * len))
            sym__fatal("bootstrap",
                       "rank %d's record in all-gather %llu from the job's store at %s does not "
                       "authenticate: it was altered on the way, or rank %d has another "
                       "SYMTRAIN_JOB_TOKEN; ending the job (give every rank the same token, and "
                       "keep MASTER_ADDR on a network strangers cannot write to)",
                       r, (unsigned long long)seq, e->where, r);
    }
    free(e->reply);
    e->reply = NULL;
    return rc;
}

static noreturn void env_abort(sym_boot_t *b, int status) {
    env_boot_t *e = b->impl;
    int32_t st = status;
    __atomic_store_n(&e->finishing, 1, __ATOMIC_RELEASE);
    sym__wire_send(e->fd, SYM_WIRE_ABORT, &st, sizeof st);
    _exit(status ? status : 1);
}

/* The store's memory and sockets, once its thread has ended. */
static void free_store(store_t *s) {
    for (int i = 0; i < s->nconns; i++)
        if (s->conns[i].state != C_GONE) close(s->conns[i].fd);
    for (int r = 0; r < s->world; r++) free(s->gather[r]);
    close(s->listen_fd);
    free(s->conns);
    free(s->member_fd);
    free(s->gather);
    free(s->glen);
    free(s->fini);
    free(s);
}

static void env_fini(sym_boot_t *b) {
    env_boot_t *e = b->impl;
    __atomic_store_n(&e->finishing, 1, __ATOMIC_RELEASE);
    sym__wire_send(e->fd, SYM_WIRE_FINI, NULL, 0);
    if (e->store) {
        /* The store must outlive every member's goodbye. */
        pthread_join(e->store->thread, NULL);
    }
    shutdown(e->fd, SHUT_RDWR);
    pthread_join(e->reader, NULL);
    close(e->fd);
    if (e->store) free_store(e->store);
    free(e->reply);
    pthread_mutex_destroy(&e->mu);
    pthread_cond_destroy(&e->cv);
    free(e);
    free(b);
}

/* ---- setup ---- */

/* The first of `pet` (a Kubeflow name, may be NULL) and `name` that is set. */
static const char *need(const char *pet, const char *name) {
    const char *v = pet ? getenv(pet) : NULL;
    if (!v || !*v) v = getenv(name);
    if (!v || !*v)
        sym__fatal("shmem_init", "%s is not set: the env bootstrap needs RANK, WORLD_SIZE, "
                                 "MASTER_ADDR and MASTER_PORT (or Kubeflow's PET_NNODES, "
                                 "PET_NODE_RANK, PET_MASTER_ADDR and PET_MASTER_PORT)",
                   pet ? pet : name);
    return v;
}

/* PET_NNODES: "N", or torchrun's elastic "MIN:MAX" with MIN = MAX (symtrain's
 * jobs have a fixed size). */
static long pet_nnodes(void) {
    const char *s = getenv("PET_NNODES");
    char *end;
    errno = 0;
    long lo = strtol(s, &end, 10), hi = lo;
    if (!errno && *end == ':') hi = strtol(end + 1, &end, 10);
    if (errno || *end || end == s || lo < 1)
        sym__fatal("shmem_init", "PET_NNODES='%s' is not a number of pods", s);
    if (lo != hi)
        sym__fatal("shmem_init",
                   "PET_NNODES='%s' asks for an elastic job of %ld to %ld pods; a symtrain job "
                   "has a fixed size: set minNodes = maxNodes (PET_NNODES=%ld)",
                   s, lo, hi, hi);
    return lo;
}

/* RANK and WORLD_SIZE, from Kubeflow's variables when PET_NNODES is set. */
static void rank_and_world(long *rank, long *world) {
    const char *nn = getenv("PET_NNODES");
    if (!nn || !*nn) {
        /* PE numbers are ints everywhere (the OpenSHMEM API's): a larger value
         * would wrap negative, and rank 0 would never arrive. */
        *rank = sym__env_int("RANK", -1, 0, INT_MAX - 1);
        *world = sym__env_int("WORLD_SIZE", -1, 1, INT_MAX);
        return;
    }
    long nodes = pet_nnodes(), node = sym__env_int("PET_NODE_RANK", -1, 0, INT_MAX - 1);
    long per = sym__env_int("PET_NPROC_PER_NODE", 1, 1, INT_MAX);
    long local = sym__env_int("LOCAL_RANK", 0, 0, INT_MAX - 1);
    if (node < 0 || node >= nodes)
        sym__fatal("shmem_init", "PET_NODE_RANK=%ld and PET_NNODES=%ld do not fit: need 0 <= "
                                 "PET_NODE_RANK < PET_NNODES",
                   node, nodes);
    if (per < 1 || per > INT_MAX / nodes)
        sym__fatal("shmem_init", "PET_NPROC_PER_NODE=%ld is not a usable number of processes "
                                 "per pod", per);
    if (local < 0 || local >= per)
        sym__fatal("shmem_init", "LOCAL_RANK=%ld and PET_NPROC_PER_NODE=%ld do not fit: each "
                                 "process of a pod needs its own LOCAL_RANK from 0 to %ld",
                   local, per, per - 1);
    *rank = node * per + local;
    *world = nodes * per;
}

static int connect_to(const char *host, const char *port, double deadline, char *err,
                      size_t errlen) {
    struct addrinfo hints = {0}, *res = NULL;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    int last = 0;
    for (;;) {
        int rc = getaddrinfo(host, port, &hints, &res);
        if (rc == 0) {
            for (struct addrinfo *a = res; a; a = a->ai_next) {
                int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
                if (fd < 0) continue;
                if (connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
                    freeaddrinfo(res);
                    int one = 1;
                    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                    return fd;
                }
                last = errno;
                close(fd);
            }
            freeaddrinfo(res);
            snprintf(err, errlen, "%s", strerror(last));
        } else {
            snprintf(err, errlen, "%s", gai_strerror(rc));
        }
        if (sym__now_s() > deadline) return -1;
        struct timespec ts = {0, 100 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

static store_t *start_store(int world, const char *port, const char *token, double timeout,
                            const char *where) {
    store_t *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->world = world;
    s->token = token;
    s->timeout = timeout;
    snprintf(s->where, sizeof s->where, "%s", where);
    s->member_fd = malloc((size_t)world * sizeof(int));
    s->gather = calloc((size_t)world, sizeof(char *));
    s->glen = calloc((size_t)world, sizeof(uint32_t));
    s->fini = calloc((size_t)world, sizeof(int));
    if (!s->member_fd || !s->gather || !s->glen || !s->fini) return NULL;
    for (int r = 0; r < world; r++) s->member_fd[r] = -1;
    if (sym__random_bytes(s->salt, SALT_LEN)) return NULL;
    s->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    s->reported = sym__now_s();
    int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    int v6 = fd >= 0;
    if (fd < 0) fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) return NULL;
    int one = 1, zero = 0;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    int rc;
    if (v6) {
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
        struct sockaddr_in6 a = {0};
        a.sin6_family = AF_INET6;
        a.sin6_addr = in6addr_any;
        a.sin6_port = htons((uint16_t)atoi(port));
        rc = bind(fd, (struct sockaddr *)&a, sizeof a);
    } else {
        struct sockaddr_in a = {0};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_ANY);
        a.sin_port = htons((uint16_t)atoi(port));
        rc = bind(fd, (struct sockaddr *)&a, sizeof a);
    }
    if (rc < 0 || listen(fd, 128) < 0)
        sym__fatal("shmem_init",
                   "rank 0 cannot listen on port %s for the job's store: %s; choose a free "
                   "MASTER_PORT",
                   port, strerror(errno));
    s->listen_fd = fd;
    if (pthread_create(&s->thread, NULL, store_main, s)) return NULL;
    return s;
}

sym_boot_t *sym__boot_env_init(void) {
    long rank, world;
    rank_and_world(&rank, &world);
    const char *addr = need("PET_MASTER_ADDR", "MASTER_ADDR");
    const char *port = need("PET_MASTER_PORT", "MASTER_PORT");
    if (world < 1 || rank < 0 || rank >= world)
        sym__fatal("shmem_init", "RANK=%ld and WORLD_SIZE=%ld do not fit: need 0 <= RANK < "
                                 "WORLD_SIZE",
                   rank, world);
    char *end;
    long p = strtol(port, &end, 10);
    if (*end || p < 1 || p > 65535)
        sym__fatal("shmem_init", "MASTER_PORT='%s' is not a TCP port (1-65535)", port);
    const char *token = getenv("SYMTRAIN_JOB_TOKEN");
    if (!token || !*token)
        sym__fatal("shmem_init",
                   "SYMTRAIN_JOB_TOKEN is not set: the job's store admits only ranks that know "
                   "the job's secret; give every rank the same value, e.g. export "
                   "SYMTRAIN_JOB_TOKEN=$(head -c16 /dev/urandom | od -An -tx1 | tr -d ' \\n')");
    double timeout = sym__env_seconds("SYMTRAIN_BOOT_TIMEOUT", 120);
    sym__log_pe = (int)rank;

    env_boot_t *e = calloc(1, sizeof *e);
    sym_boot_t *b = calloc(1, sizeof *b);
    if (!e || !b) sym__fatal("shmem_init", "out of memory");
    e->rank = (int)rank;
    e->world = (int)world;
    snprintf(e->where, sizeof e->where, "%s:%s", addr, port);
    pthread_mutex_init(&e->mu, NULL);
    pthread_cond_init(&e->cv, NULL);
    if (rank == 0 && !(e->store = start_store((int)world, port, token, timeout, e->where)))
        sym__fatal("shmem_init", "cannot start the job's store");

    char err[128] = "";
    double deadline = sym__now_s() + timeout;
    unsigned char nonce[NONCE_LEN], mac[SYM_MAC_LEN];
    /* The store greets with a nonce; one that closes or stays silent instead
     * may be full of strangers' connections (it drops the oldest): try again
     * until the deadline. */
    for (;;) {
        e->fd = connect_to(addr, port, deadline, err, sizeof err);
        if (e->fd < 0)
            sym__fatal("shmem_init",
                       "cannot reach the job's store at %s (MASTER_ADDR:MASTER_PORT) within %g "
                       "s: %s; check the address and that rank 0 is running",
                       e->where, timeout, err);
        struct timeval tv = {(time_t)PENDING_S, 0};
        setsockopt(e->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        if (!sym__wire_read(e->fd, nonce, NONCE_LEN)) break;
        close(e->fd);
        if (sym__now_s() > deadline)
            sym__fatal("shmem_init",
                       "the service at %s never greeted this rank within %g s "
                       "(SYMTRAIN_BOOT_TIMEOUT): it is not a symtrain job store, or rank 0's "
                       "store is swamped by other connections; check MASTER_ADDR and "
                       "MASTER_PORT",
                       e->where, timeout);
        struct timespec ts = {0, 100 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    uint32_t hello[2] = {(uint32_t)rank, (uint32_t)world};
    if (compute_mac(token, nonce, mac))
        sym__fatal("shmem_init", "libcrypto could not compute HMAC-SHA256");
    sym_wire_hdr_t h = {0, 0};
    if (sym__wire_write(e->fd, mac, SYM_MAC_LEN) || sym__wire_send(e->fd, WIRE_HELLO, hello, 8) ||
        sym__wire_read(e->fd, &h, sizeof h))
        sym__fatal("shmem_init",
                   "the job's store at %s refused this rank: SYMTRAIN_JOB_TOKEN differs from "
                   "rank 0's; give every rank the same token",
                   e->where);
    if (h.type == WIRE_FAIL) {
        char why[256] = "";
        if (h.len) sym__wire_read(e->fd, why, h.len < sizeof why ? h.len : sizeof why - 1);
        sym__fatal("shmem_init", "the job's store at %s refused this rank: %s", e->where, why);
    }
    unsigned char salt[SALT_LEN];
    if (h.type != WIRE_WELCOME || h.len != SALT_LEN || sym__wire_read(e->fd, salt, SALT_LEN))
        sym__fatal("shmem_init", "the job's store at %s sent a malformed welcome: it runs another "
                                 "version of symtrain; run the same one on every rank",
                   e->where);
    if (sym__hkdf_sha256(token, strlen(token), salt, SALT_LEN, seal_label, e->key, sizeof e->key))
        sym__fatal("shmem_init", "libcrypto could not derive the all-gather's key (HKDF-SHA256)");
    struct timeval forever = {0, 0};
    setsockopt(e->fd, SOL_SOCKET, SO_RCVTIMEO, &forever, sizeof forever);
    if (pthread_create(&e->reader, NULL, reader_main, e))
        sym__fatal("shmem_init", "cannot start the bootstrap reader thread");

    b->name = "env";
    b->rank = (int)rank;
    b->size = (int)world;
    b->allgather = env_allgather;
    b->abort_job = env_abort;
    b->fini = env_fini;
    b->impl = e;
    return b;
}
