/*
 * env.c — bootstrap from torchrun / Kubernetes style variables:
 *   RANK, WORLD_SIZE (required), MASTER_ADDR, MASTER_PORT (where rank 0 runs
 *   the job's store), SYMTRAIN_JOB_TOKEN (the job's secret, the same on every
 *   rank), SYMTRAIN_BOOT_TIMEOUT (seconds to wait for peers; default 120).
 *
 * Rank 0 runs a small TCP store on a thread; every rank, rank 0 included,
 * connects to it. A connection is admitted only after it proves it knows the
 * secret: the store sends a random nonce and expects HMAC-SHA256(secret,
 * nonce); anything else is closed without a word, so a stranger on the port
 * learns nothing and changes nothing. Members then all-gather through the store.
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
#include <time.h>
#include <unistd.h>

#include "../util/sha256.h"
#include "../util/util.h"
#include "bootstrap.h"
#include "wire.h"

enum {
    WIRE_HELLO = 10, /* member -> store: {rank, world} */
    WIRE_FAIL = 11,  /* store -> member: the job cannot go on; payload: the reason */
    WIRE_WELCOME = 12, /* store -> member: admitted */
};

#define NONCE_LEN 32
#define MAC_LEN 32
static const char mac_label[] = "symtrain-store-v1";

static void compute_mac(const char *token, const unsigned char *nonce, unsigned char *mac) {
    unsigned char msg[sizeof mac_label + NONCE_LEN];
    memcpy(msg, mac_label, sizeof mac_label);
    memcpy(msg + sizeof mac_label, nonce, NONCE_LEN);
    sym__hmac_sha256(token, strlen(token), msg, sizeof msg, mac);
}

static int random_bytes(void *buf, size_t len) {
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    int rc = sym__wire_read(fd, buf, len);
    close(fd);
    return rc;
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
    pthread_t thread;
} store_t;

/* Rank 0 last: it may exit on what it reads, taking this thread with it. */
static void store_send_all(store_t *s, uint32_t type, const void *p, uint32_t len, int except) {
    for (int r = s->world - 1; r >= 0; r--)
        if (s->member_fd[r] >= 0 && r != except) sym__wire_send(s->member_fd[r], type, p, len);
}

static void store_fail(store_t *s, const char *why) {
    store_send_all(s, WIRE_FAIL, why, (uint32_t)strlen(why) + 1, -1);
    s->ended = 1;
}

static void store_close(store_t *s, conn_t *c) {
    if (c->state == C_GONE) return;
    close(c->fd);
    if (c->state == C_MEMBER) s->member_fd[c->rank] = -1;
    c->state = C_GONE;
}

static void store_accept(store_t *s) {
    int fd = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) return;
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
    if (random_bytes(c->nonce, NONCE_LEN) || sym__wire_write(fd, c->nonce, NONCE_LEN)) {
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
    size_t want = c->state == C_AUTH ? MAC_LEN : sizeof(sym_wire_hdr_t) + 8;
    ssize_t n = read(c->fd, c->in + c->have, want - c->have);
    if (n <= 0) {
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
        store_close(s, c);
        return;
    }
    c->have += (size_t)n;
    if (c->have < want) return;
    c->have = 0;
    if (c->state == C_AUTH) {
        unsigned char mac[MAC_LEN];
        compute_mac(s->token, c->nonce, mac);
        if (!sym__consttime_eq(mac, c->in, MAC_LEN)) {
            sym__warn("bootstrap", "the job's store rejected a connection that did not know "
                                   "the job token");
            store_close(s, c);
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
    sym__wire_send(c->fd, WIRE_WELCOME, NULL, 0);
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
        for (int i = 0; i < s->nconns; i++)
            if ((s->conns[i].state == C_AUTH || s->conns[i].state == C_HELLO) &&
                sym__now_s() - s->conns[i].since > 10)
                store_close(s, &s->conns[i]);
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
    for (int i = 0; i < s->nconns; i++)
        if (s->conns[i].state != C_GONE) shutdown(s->conns[i].fd, SHUT_WR);
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

static int env_allgather(sym_boot_t *b, const void *in, void *out, size_t len) {
    env_boot_t *e = b->impl;
    if (len > UINT32_MAX / (size_t)b->size) return -1;
    pthread_mutex_lock(&e->mu);
    e->have_reply = 0;
    pthread_mutex_unlock(&e->mu);
    if (sym__wire_send(e->fd, SYM_WIRE_ALLGATHER, in, (uint32_t)len)) return -1;
    pthread_mutex_lock(&e->mu);
    while (!e->have_reply) pthread_cond_wait(&e->cv, &e->mu);
    pthread_mutex_unlock(&e->mu);
    int rc = e->reply_len == len * (size_t)b->size ? 0 : -1;
    if (!rc) memcpy(out, e->reply, e->reply_len);
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

static const char *need(const char *name) {
    const char *v = getenv(name);
    if (!v || !*v)
        sym__fatal("shmem_init", "%s is not set: the env bootstrap needs RANK, WORLD_SIZE, "
                                 "MASTER_ADDR and MASTER_PORT",
                   name);
    return v;
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
    /* PE numbers are ints everywhere (the OpenSHMEM API's): a larger value
     * would wrap negative, and rank 0 would never arrive. */
    long rank = sym__env_int("RANK", -1, 0, INT_MAX - 1);
    long world = sym__env_int("WORLD_SIZE", -1, 1, INT_MAX);
    const char *addr = need("MASTER_ADDR"), *port = need("MASTER_PORT");
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
    e->fd = connect_to(addr, port, deadline, err, sizeof err);
    if (e->fd < 0)
        sym__fatal("shmem_init",
                   "cannot reach the job's store at %s (MASTER_ADDR:MASTER_PORT) within %g s: "
                   "%s; check the address and that rank 0 is running",
                   e->where, timeout, err);
    unsigned char nonce[NONCE_LEN], mac[MAC_LEN];
    uint32_t hello[2] = {(uint32_t)rank, (uint32_t)world};
    if (sym__wire_read(e->fd, nonce, NONCE_LEN))
        sym__fatal("shmem_init", "the service at %s is not a symtrain job store", e->where);
    compute_mac(token, nonce, mac);
    sym_wire_hdr_t h = {0, 0};
    if (sym__wire_write(e->fd, mac, MAC_LEN) || sym__wire_send(e->fd, WIRE_HELLO, hello, 8) ||
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
