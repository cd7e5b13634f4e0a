/*
 * prom.c — the Prometheus endpoint (see prom.h): the state the training thread
 * updates, its text exposition, and the HTTP server (libmicrohttpd, when the
 * build found it: SYM_HAVE_MHD). Every update function takes NULL (no
 * endpoint) and does nothing, so the loop calls them unconditionally.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <shmemx.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "prom.h"

#ifdef SYM_HAVE_MHD
#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <sys/socket.h>
#endif

/* Histogram bounds (seconds): a fast CPU step to a slow GPU one. */
static const double bounds[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                0.1,    0.25,  0.5,    1,     2.5,  5,    10};
#define NB (sizeof bounds / sizeof bounds[0])
enum { PH_COMPUTE, PH_COMM, PH_COUNT };
static const char *const phase_name[PH_COUNT] = {"compute", "comm_wait"};

#define MAX_FAMILIES 8

typedef struct {
    uint64_t bucket[NB]; /* observations <= bounds[i] (not cumulative here) */
    uint64_t count;
    double sum;
} histo_t;

/* Everything a scrape shows, copied whole under the lock. */
typedef struct {
    int stepped, evaluated, ckpt, gpu;
    sym_step_record_t last; /* the last step's */
    double val_loss, val_acc;
    histo_t phase[PH_COUNT];
    uint64_t allreduce_bytes;
    uint64_t restarts, gpu_memory;
    double mfu;
    sym_ckpt_stats_t ck;
    int nfam;
    struct {
        char name[96], help[160];
        int set;
        double value;
    } fam[MAX_FAMILIES];
} state_t;

struct sym_prom {
    pthread_mutex_t mu;
    state_t s;
    int pe, port;
#ifdef SYM_HAVE_MHD
    struct MHD_Daemon *d;
#endif
};

/* ---- updates (the training thread) ---- */

static void observe(histo_t *h, double v) {
    size_t i = 0;
    while (i < NB && v > bounds[i]) i++;
    if (i < NB) h->bucket[i]++;
    h->count++;
    h->sum += v;
}

void sym__prom_step(sym_prom_t *p, const sym_step_record_t *r, double mfu) {
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    state_t *s = &p->s;
    s->stepped = 1;
    s->last = *r;
    observe(&s->phase[PH_COMPUTE], r->compute_s);
    observe(&s->phase[PH_COMM], r->comm_s);
    s->allreduce_bytes += r->bytes_allreduced;
    s->mfu = mfu;
    pthread_mutex_unlock(&p->mu);
}

void sym__prom_eval(sym_prom_t *p, double loss, double accuracy) {
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    p->s.evaluated = 1;
    p->s.val_loss = loss;
    p->s.val_acc = accuracy;
    pthread_mutex_unlock(&p->mu);
}

void sym__prom_start_facts(sym_prom_t *p, uint64_t restarts, uint64_t gpu_memory) {
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    p->s.restarts = restarts;
    p->s.gpu = gpu_memory > 0;
    p->s.gpu_memory = gpu_memory;
    pthread_mutex_unlock(&p->mu);
}

void sym__prom_ckpt(sym_prom_t *p, const sym_ckpt_stats_t *st) {
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    p->s.ckpt = 1;
    p->s.ck = *st;
    pthread_mutex_unlock(&p->mu);
}

/* [a-zA-Z_:][a-zA-Z0-9_:]* */
static int metric_name_ok(const char *n) {
    if (!n || !*n || (n[0] >= '0' && n[0] <= '9')) return 0;
    for (const char *c = n; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
              *c == '_' || *c == ':'))
            return 0;
    return 1;
}

int sym__prom_family(sym_prom_t *p, const char *name, const char *help) {
    if (!p || !metric_name_ok(name) || strlen(name) >= sizeof p->s.fam[0].name) return -1;
    pthread_mutex_lock(&p->mu);
    int i = p->s.nfam < MAX_FAMILIES ? p->s.nfam++ : -1;
    if (i >= 0) {
        snprintf(p->s.fam[i].name, sizeof p->s.fam[i].name, "%s", name);
        /* HELP text: one line, no backslashes (the format's escapes) */
        snprintf(p->s.fam[i].help, sizeof p->s.fam[i].help, "%s", help ? help : "");
        for (char *c = p->s.fam[i].help; *c; c++)
            if (*c == '\n' || *c == '\\') *c = ' ';
    }
    pthread_mutex_unlock(&p->mu);
    return i;
}

void sym__prom_family_set(sym_prom_t *p, int family, double value) {
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    if (family >= 0 && family < p->s.nfam) {
        p->s.fam[family].set = 1;
        p->s.fam[family].value = value;
    }
    pthread_mutex_unlock(&p->mu);
}

int sym__prom_port(const sym_prom_t *p) { return p ? p->port : -1; }

/* ---- the exposition (the server thread, on its own copy) ---- */

typedef struct {
    char *buf;
    size_t len, cap;
    int oom;
    char pe[16]; /* the label's value */
} text_t;

static void put(text_t *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(text_t *t, const char *fmt, ...) {
    if (t->oom) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(t->buf + t->len, t->cap - t->len, fmt, ap);
        va_end(ap);
        if (n < 0) {
            t->oom = 1;
            return;
        }
        if ((size_t)n < t->cap - t->len) {
            t->len += (size_t)n;
            return;
        }
        size_t cap = t->cap * 2 + (size_t)n;
        char *nb = realloc(t->buf, cap);
        if (!nb) {
            t->oom = 1;
            return;
        }
        t->buf = nb;
        t->cap = cap;
    }
}

static void family(text_t *t, const char *name, const char *type, const char *help) {
    put(t, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* One sample; %.17g so a double comes back bit for bit. */
static void gauge(text_t *t, const char *name, const char *type, const char *help, double v) {
    family(t, name, type, help);
    put(t, "%s{pe=\"%s\"} %.17g\n", name, t->pe, v);
}

static void counter(text_t *t, const char *name, const char *help, uint64_t v) {
    family(t, name, "counter", help);
    put(t, "%s{pe=\"%s\"} %llu\n", name, t->pe, (unsigned long long)v);
}

static void render(text_t *t, const state_t *s) {
    const sym_step_record_t *r = &s->last;
    if (s->stepped) {
        gauge(t, "symtrain_step", "gauge", "Training steps done (the run's position).",
              (double)r->step);
        gauge(t, "symtrain_epoch", "gauge", "The epoch the last step belongs to (from 0).",
              (double)r->epoch);
        /* %.9g: the fp32 loss as the metrics file prints it */
        family(t, "symtrain_loss", "gauge", "The global batch's mean training loss, last step.");
        put(t, "symtrain_loss{pe=\"%s\"} %.9g\n", t->pe, (double)r->loss);
        gauge(t, "symtrain_learning_rate", "gauge", "The learning rate of the last step.",
              (double)r->lr);
        gauge(t, "symtrain_grad_norm", "gauge", "The global gradient norm before clipping.",
              r->grad_norm);
        gauge(t, "symtrain_samples_per_second", "gauge",
              "The job's samples per second over the last step.", r->samples_per_s);
        gauge(t, "symtrain_tokens_per_second", "gauge",
              "The job's tokens per second over the last step (samples for images).",
              r->tokens_per_s);
    }
    if (s->evaluated) {
        gauge(t, "symtrain_validation_loss", "gauge",
              "Loss on the evaluation split, last evaluation.", s->val_loss);
        gauge(t, "symtrain_validation_accuracy_ratio", "gauge",
              "Accuracy on the evaluation split (next-token for a GPT), last evaluation.",
              s->val_acc);
    }
    family(t, "symtrain_step_seconds", "histogram",
           "Step time on this PE: computing, and waiting for the gradients' communication.");
    for (int ph = 0; ph < PH_COUNT; ph++) {
        const histo_t *h = &s->phase[ph];
        uint64_t cum = 0;
        for (size_t i = 0; i < NB; i++) {
            cum += h->bucket[i];
            put(t, "symtrain_step_seconds_bucket{pe=\"%s\",phase=\"%s\",le=\"%g\"} %llu\n", t->pe,
                phase_name[ph], bounds[i], (unsigned long long)cum);
        }
        put(t, "symtrain_step_seconds_bucket{pe=\"%s\",phase=\"%s\",le=\"+Inf\"} %llu\n", t->pe,
            phase_name[ph], (unsigned long long)h->count);
        put(t, "symtrain_step_seconds_sum{pe=\"%s\",phase=\"%s\"} %.17g\n", t->pe, phase_name[ph],
            h->sum);
        put(t, "symtrain_step_seconds_count{pe=\"%s\",phase=\"%s\"} %llu\n", t->pe,
            phase_name[ph], (unsigned long long)h->count);
    }
    counter(t, "symtrain_allreduce_bytes_total", "Gradient bytes this PE all-reduced.",
            s->allreduce_bytes);
    counter(t, "symtrain_restarts_total", "Times the job was restarted before this start.",
            s->restarts);
    if (s->ckpt) {
        counter(t, "symtrain_checkpoints_total", "Checkpoints written completely.", s->ck.saves);
        counter(t, "symtrain_checkpoint_failures_total", "Checkpoint writes that failed.",
                s->ck.failures);
        gauge(t, "symtrain_checkpoint_save_seconds_total", "counter",
              "Seconds spent writing checkpoints (in the background writer, fsyncs included).",
              s->ck.seconds);
        counter(t, "symtrain_checkpoint_bytes_total", "Data bytes of the checkpoints written.",
                s->ck.bytes);
        gauge(t, "symtrain_checkpoint_last_save_seconds", "gauge",
              "Seconds the newest checkpoint took to write.", s->ck.last_seconds);
        gauge(t, "symtrain_checkpoint_last_bytes", "gauge", "Data bytes of the newest checkpoint.",
              (double)s->ck.last_bytes);
    }
    if (s->gpu) {
        gauge(t, "symtrain_gpu_memory_bytes", "gauge", "GPU memory the model holds on this PE.",
              (double)s->gpu_memory);
        if (s->stepped && s->mfu >= 0)
            gauge(t, "symtrain_mfu_ratio", "gauge",
                  "Model FLOPs utilisation of the last step: achieved over the GPUs' peak.",
                  s->mfu);
    }
    shmemx_stats_t rt;
    shmemx_stats(&rt);
    gauge(t, "symtrain_runtime_heap_bytes", "gauge", "This PE's symmetric heap.",
          (double)rt.heap_size);
    gauge(t, "symtrain_runtime_heap_in_use_bytes", "gauge",
          "Of the symmetric heap, bytes in blocks handed out.", (double)rt.heap_in_use);
    counter(t, "symtrain_runtime_puts_total", "Puts this PE issued through the OpenSHMEM API.",
            rt.puts);
    counter(t, "symtrain_runtime_put_bytes_total", "Bytes those puts moved.", rt.put_bytes);
    family(t, "symtrain_runtime_allreduce_total", "counter", "All-reduces run, by algorithm.");
    for (int a = 0; a < SHMEMX_STATS_ALGOS; a++)
        put(t, "symtrain_runtime_allreduce_total{pe=\"%s\",algo=\"%s\"} %llu\n", t->pe,
            shmemx_stats_algo_name(a), (unsigned long long)rt.allreduce[a]);
    for (int i = 0; i < s->nfam; i++) {
        family(t, s->fam[i].name, "gauge", s->fam[i].help);
        if (s->fam[i].set)
            put(t, "%s{pe=\"%s\"} %.17g\n", s->fam[i].name, t->pe, s->fam[i].value);
    }
}

/* ---- the server ---- */

#ifdef SYM_HAVE_MHD

static enum MHD_Result respond(struct MHD_Connection *c, unsigned code, char *body, size_t len,
                               enum MHD_ResponseMemoryMode mode, const char *type) {
    struct MHD_Response *r = MHD_create_response_from_buffer(len, body, mode);
    if (!r) {
        if (mode == MHD_RESPMEM_MUST_FREE) free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type", type);
    enum MHD_Result ok = MHD_queue_response(c, code, r);
    MHD_destroy_response(r);
    return ok;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_len, void **req) {
    (void)version, (void)upload, (void)upload_len, (void)req;
    sym_prom_t *p = cls;
    static char not_found[] = "symtrain serves /metrics only\n";
    static char bad_method[] = "GET /metrics\n";
    if (strcmp(method, "GET") && strcmp(method, "HEAD"))
        return respond(c, MHD_HTTP_METHOD_NOT_ALLOWED, bad_method, sizeof bad_method - 1,
                       MHD_RESPMEM_PERSISTENT, "text/plain");
    if (strcmp(url, "/metrics"))
        return respond(c, MHD_HTTP_NOT_FOUND, not_found, sizeof not_found - 1,
                       MHD_RESPMEM_PERSISTENT, "text/plain");
    state_t *s = malloc(sizeof *s);
    if (!s) return MHD_NO;
    pthread_mutex_lock(&p->mu);
    memcpy(s, &p->s, sizeof *s);
    pthread_mutex_unlock(&p->mu);
    text_t t = {malloc(16384), 0, 16384, 0, ""};
    if (!t.buf) t.oom = 1;
    snprintf(t.pe, sizeof t.pe, "%d", p->pe);
    render(&t, s);
    free(s);
    if (t.oom) {
        free(t.buf);
        return MHD_NO;
    }
    return respond(c, MHD_HTTP_OK, t.buf, t.len, MHD_RESPMEM_MUST_FREE,
                   "text/plain; version=0.0.4; charset=utf-8");
}

/* A listening socket on every address (IPv6 and IPv4 where the host has
 * IPv6), or -1 with errno set. */
static int listen_on(int port, int *v6) {
    int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0), rc;
    int one = 1, zero = 0;
    *v6 = fd >= 0;
    if (fd >= 0) {
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
        struct sockaddr_in6 a = {0};
        a.sin6_family = AF_INET6;
        a.sin6_addr = in6addr_any;
        a.sin6_port = htons((uint16_t)port);
        rc = bind(fd, (struct sockaddr *)&a, sizeof a);
    } else {
        fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) return -1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        struct sockaddr_in a = {0};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_ANY);
        a.sin_port = htons((uint16_t)port);
        rc = bind(fd, (struct sockaddr *)&a, sizeof a);
    }
    if (rc < 0 || listen(fd, 64) < 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

static int bound_port(int fd) {
    struct sockaddr_storage a;
    socklen_t len = sizeof a;
    if (getsockname(fd, (struct sockaddr *)&a, &len)) return -1;
    if (a.ss_family == AF_INET6) return ntohs(((struct sockaddr_in6 *)&a)->sin6_port);
    return ntohs(((struct sockaddr_in *)&a)->sin_port);
}

sym_prom_t *sym__prom_start(int port, int pe, char *why, size_t why_len) {
    int v6;
    int fd = listen_on(port, &v6);
    if (fd < 0) {
        int e = errno;
        snprintf(why, why_len, "cannot serve metrics on port %d: %s; %s", port, strerror(e),
                 e == EACCES ? "ports below 1024 need privileges: choose a port from 1024 up "
                               "(0 picks a free one)"
                             : "choose a free --metrics-port (0 picks one)");
        return NULL;
    }
    sym_prom_t *p = calloc(1, sizeof *p);
    if (!p) {
        close(fd);
        snprintf(why, why_len, "out of memory for the metrics endpoint");
        return NULL;
    }
    pthread_mutex_init(&p->mu, NULL);
    p->pe = pe;
    p->port = bound_port(fd);
    /* Its own thread polls; at most 16 scrapers at once, 10 s each. */
    p->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | (v6 ? MHD_USE_IPv6 : 0), 0, NULL,
                            NULL, handle, p, MHD_OPTION_LISTEN_SOCKET, fd,
                            MHD_OPTION_CONNECTION_LIMIT, 16u, MHD_OPTION_CONNECTION_TIMEOUT, 10u,
                            MHD_OPTION_END);
    if (!p->d) {
        close(fd);
        pthread_mutex_destroy(&p->mu);
        free(p);
        snprintf(why, why_len, "libmicrohttpd could not start the metrics server on port %d", port);
        return NULL;
    }
    return p;
}

void sym__prom_stop(sym_prom_t *p) {
    if (!p) return;
    MHD_stop_daemon(p->d); /* joins its thread and closes the socket */
    pthread_mutex_destroy(&p->mu);
    free(p);
}

#else /* no libmicrohttpd */

sym_prom_t *sym__prom_start(int port, int pe, char *why, size_t why_len) {
    (void)port, (void)pe;
    (void)render; /* kept compiled: the exposition is the same code either way */
    snprintf(why, why_len, "this build has no libmicrohttpd, so --metrics-port serves nothing "
                           "(apt-get install libmicrohttpd-dev, then rebuild)");
    return NULL;
}

void sym__prom_stop(sym_prom_t *p) { (void)p; }

#endif
