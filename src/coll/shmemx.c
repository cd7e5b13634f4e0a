/*
 * shmemx.c — the training collectives' API (shmemx.h): argument checks, the
 * mapping onto the reduction engine, and non-blocking requests.
 *
 * Non-blocking collectives run on one progress thread per PE, started on first
 * use, in the order they were started; so a request advances while the caller
 * computes, without the caller calling into the library. A blocking collective
 * (or any collective through sym__coll_enter) first waits for the queued ones,
 * so on every team collectives execute one at a time and in call order — the
 * same order on every member, which is what makes them match up. A request
 * belongs to the caller until shmemx_req_free; shmem_finalize completes every
 * outstanding one and joins the thread before the runtime goes away.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "coll.h"

/* ---- errors and small helpers ---- */

const char *shmemx_strerror(int err) {
#define SHMEMX_STRERROR_CASE(name, code, msg)                                        \
    case code: return msg;
    switch (err) {
    case SHMEMX_OK: return "success";
        SHMEMX_ERRNO_MAP(SHMEMX_STRERROR_CASE)
    default: return "unknown error";
    }
#undef SHMEMX_STRERROR_CASE
}

static const sym_dtype_t dtype_map[SHMEMX_DTYPE_COUNT] = {
    [SHMEMX_FLOAT32] = SYM_F32, [SHMEMX_FLOAT64] = SYM_F64, [SHMEMX_FLOAT16] = SYM_F16,
    [SHMEMX_BFLOAT16] = SYM_BF16, [SHMEMX_INT32] = SYM_I32, [SHMEMX_INT64] = SYM_I64,
};
static const sym_op_t op_map[SHMEMX_OP_COUNT] = {
    [SHMEMX_SUM] = SYM_SUM, [SHMEMX_AVG] = SYM_SUM, [SHMEMX_MIN] = SYM_MIN,
    [SHMEMX_MAX] = SYM_MAX, [SHMEMX_PROD] = SYM_PROD,
};

size_t shmemx_dtype_size(shmemx_dtype_t dtype) {
    return (unsigned)dtype < SHMEMX_DTYPE_COUNT ? sym__dtype_size[dtype_map[dtype]] : 0;
}

void shmemx_block_range(size_t count, int npes, int pe, size_t *offset, size_t *len) {
    size_t n = (size_t)npes, p = (size_t)pe, q = count / n, rem = count % n;
    *offset = p * q + (p < rem ? p : rem);
    *len = q + (p < rem ? 1 : 0);
}

/* The arguments every collective checks. `members`: how many count-element
 * blocks the largest buffer holds (an all-gather's dest: the team size; else
 * 1), so that its byte count is known to fit in a size_t. */
static int check(const char *fn, shmem_team_t team, shmemx_dtype_t dtype, int op, size_t count,
                 size_t members, const void *dest, const void *source) {
    SYM_REQUIRE_INIT(fn);
    if (team == SHMEM_TEAM_INVALID || team->me < 0) {
        sym__warn(fn, "the team is invalid or this PE is not a member");
        return SHMEMX_ETEAM;
    }
    if ((unsigned)dtype >= SHMEMX_DTYPE_COUNT) {
        sym__warn(fn, "dtype %d is not a shmemx_dtype_t", (int)dtype);
        return SHMEMX_EINVAL;
    }
    if (op >= 0 && (unsigned)op >= SHMEMX_OP_COUNT) {
        sym__warn(fn, "op %d is not a shmemx_op_t", op);
        return SHMEMX_EINVAL;
    }
    size_t es = sym__dtype_size[dtype_map[dtype]];
    if (count > SIZE_MAX / es / members) {
        sym__warn(fn, "count %zu of %zu-byte elements%s is more bytes than a size_t holds", count,
                  es, members > 1 ? " from each member" : "");
        return SHMEMX_EINVAL;
    }
    if (count && (!dest || !source)) {
        sym__warn(fn, "%s is NULL with count %zu", dest ? "source" : "dest", count);
        return SHMEMX_EINVAL;
    }
    return 0;
}

/* ---- one operation, as queued or run ---- */

typedef enum { OP_ALLREDUCE, OP_REDUCE_SCATTER, OP_ALLGATHER, OP_BROADCAST } kind_t;

/* A request is the caller's from creation to shmemx_req_free; the progress
 * thread touches it only until it stores `done`. */
struct shmemx_req {
    const char *fn; /* the API call, for messages */
    kind_t kind;
    shmem_team_t team;
    void *dest;
    const void *source;
    size_t count;
    shmemx_dtype_t dtype;
    shmemx_op_t op;
    int root;
    shmemx_algo_t algo; /* the all-reduce algorithm forced when the request was made */
    int status;
    int done; /* atomic: set by the progress thread, after status */
    struct shmemx_req *next;
};

static int execute(const struct shmemx_req *q) {
    int rc = sym__coll_enter(q->fn, q->team);
    if (rc) return rc;
    sym_redop_t r;
    size_t es = sym__dtype_size[dtype_map[q->dtype]];
    switch (q->kind) {
    case OP_ALLREDUCE:
        sym__redop(&r, dtype_map[q->dtype], op_map[q->op], q->op == SHMEMX_AVG);
        return sym__allreduce(q->team, q->dest, q->source, q->count, &r, q->algo);
    case OP_REDUCE_SCATTER:
        sym__redop(&r, dtype_map[q->dtype], op_map[q->op], q->op == SHMEMX_AVG);
        return sym__reduce_scatter(q->team, q->dest, q->source, q->count, &r);
    case OP_ALLGATHER: return sym__allgather(q->team, q->dest, q->source, q->count * es);
    case OP_BROADCAST:
        return sym__broadcast(q->team, q->dest, q->source, q->count * es, q->root, 1);
    }
    return SHMEMX_EINVAL;
}

/* ---- the progress thread ---- */

/* Started on the first non-blocking call, joined by shmem_finalize (through
 * sym__coll_drain_hook) once its queue is empty. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t work = PTHREAD_COND_INITIALIZER;
static struct shmemx_req *head, *tail;
static int outstanding; /* queued or running; atomic reads outside the lock */
static int thread_started, stopping;
static pthread_t progress_thread;
static __thread int on_progress_thread;

static void *progress_main(void *arg) {
    (void)arg;
    on_progress_thread = 1;
    for (;;) {
        pthread_mutex_lock(&lock);
        while (!head && !stopping) pthread_cond_wait(&work, &lock);
        struct shmemx_req *q = head;
        if (!q) { /* stopping, and nothing left */
            pthread_mutex_unlock(&lock);
            return NULL;
        }
        head = q->next;
        if (!head) tail = NULL;
        pthread_mutex_unlock(&lock);
        q->status = execute(q);
        __atomic_store_n(&q->done, 1, __ATOMIC_RELEASE); /* q is the caller's again */
        __atomic_fetch_sub(&outstanding, 1, __ATOMIC_RELEASE);
    }
}

/* Wait until this PE's queued requests have all completed; with `stop`, then
 * end the progress thread and join it. Installed as sym__coll_drain_hook:
 * shmem_team_destroy drains, shmem_finalize drains and stops, before either
 * frees anything a request uses. Every member of a request's team calls it
 * (finalize and team destroy are collective), so the requests complete. */
static void drain(int stop) {
    SYM_WAIT_UNTIL(__atomic_load_n(&outstanding, __ATOMIC_ACQUIRE) == 0);
    if (!stop) return;
    pthread_mutex_lock(&lock);
    int started = thread_started;
    stopping = 1;
    pthread_cond_signal(&work);
    pthread_mutex_unlock(&lock);
    if (started) pthread_join(progress_thread, NULL);
    pthread_mutex_lock(&lock);
    thread_started = 0;
    stopping = 0;
    pthread_mutex_unlock(&lock);
}

static int enqueue(struct shmemx_req *q, shmemx_req_t *out) {
    pthread_mutex_lock(&lock);
    if (!thread_started) {
        if (pthread_create(&progress_thread, NULL, progress_main, NULL)) {
            pthread_mutex_unlock(&lock);
            sym__warn("shmemx_*_nb", "cannot start the progress thread");
            return SHMEMX_ENOMEM;
        }
        thread_started = 1;
        sym__coll_drain_hook = drain;
    }
    q->next = NULL;
    if (tail)
        tail->next = q;
    else
        head = q;
    tail = q;
    __atomic_fetch_add(&outstanding, 1, __ATOMIC_RELAXED);
    pthread_cond_signal(&work);
    pthread_mutex_unlock(&lock);
    *out = q;
    return 0;
}

int sym__coll_enter(const char *fn, shmem_team_t t) {
    /* Every collective signals through per-member words (sync.c). */
    if (t->size > SYM_COLL_MAX_MEMBERS) {
        sym__warn(fn, "teams of more than %d members are not supported", SYM_COLL_MAX_MEMBERS);
        return SHMEMX_EINVAL;
    }
    /* Every queued request is waited for: simple, and order-preserving. */
    if (!on_progress_thread) SYM_WAIT_UNTIL(__atomic_load_n(&outstanding, __ATOMIC_ACQUIRE) == 0);
    return 0;
}

/* ---- requests: completed by test and wait, released by free ---- */

static int is_done(shmemx_req_t req) { return __atomic_load_n(&req->done, __ATOMIC_ACQUIRE); }

int shmemx_req_wait(shmemx_req_t req) {
    if (!req) return SHMEMX_EINVAL;
    SYM_WAIT_UNTIL(is_done(req));
    return req->status;
}

int shmemx_req_test(shmemx_req_t req, int *done) {
    if (!req || !done) return SHMEMX_EINVAL;
    *done = is_done(req);
    return *done ? req->status : SHMEMX_EBUSY;
}

int shmemx_req_waitall(shmemx_req_t *reqs, int n) {
    if (n < 0 || (n > 0 && !reqs)) return SHMEMX_EINVAL;
    int st = 0;
    for (int k = 0; k < n; k++) /* in creation order is completion order: one pass */
        if (reqs[k]) {
            int s = shmemx_req_wait(reqs[k]);
            if (s && !st) st = s;
        }
    return st;
}

int shmemx_req_testany(shmemx_req_t *reqs, int n, int *index) {
    if (!index) return SHMEMX_EINVAL;
    *index = -1;
    if (n < 0 || (n > 0 && !reqs)) return SHMEMX_EINVAL;
    int active = 0;
    for (int k = 0; k < n; k++)
        if (reqs[k]) {
            active = 1;
            if (is_done(reqs[k])) {
                *index = k;
                return reqs[k]->status;
            }
        }
    return active ? SHMEMX_EBUSY : 0;
}

void shmemx_req_free(shmemx_req_t req) {
    if (!req) return;
    SYM_WAIT_UNTIL(is_done(req)); /* the progress thread may still be using it */
    free(req);
}

/* ---- the API ---- */

static int start(const char *fn, kind_t kind, shmem_team_t team, void *dest, const void *source,
                 size_t count, shmemx_dtype_t dtype, int op, int root, shmemx_req_t *req) {
    /* A broadcast reads only the root's source; the others may pass NULL. */
    size_t members = kind == OP_ALLGATHER && team != SHMEM_TEAM_INVALID ? (size_t)team->size : 1;
    int rc = check(fn, team, dtype, op, count, members, dest,
                   kind == OP_BROADCAST && team && team->me != root ? dest : source);
    if (rc) return rc;
    if (kind == OP_BROADCAST && (root < 0 || root >= team->size)) {
        sym__warn(fn, "root %d is not a PE of the team (0 .. %d)", root, team->size - 1);
        return SHMEMX_EINVAL;
    }
    /* The algorithm is read once, here, in call order: a later
     * shmemx_set_allreduce_algo cannot change a request already made. */
    struct shmemx_req q = {fn,   kind, team, dest, source, count, dtype, (shmemx_op_t)op, root,
                           sym__allreduce_algo_forced(), 0, 0, NULL};
    if (!req) return execute(&q); /* enters, as the progress thread does for queued ones */
    struct shmemx_req *p = malloc(sizeof *p);
    if (!p) return SHMEMX_ENOMEM;
    *p = q;
    return enqueue(p, req);
}

int shmemx_allreduce(shmem_team_t team, void *dest, const void *source, size_t count,
                     shmemx_dtype_t dtype, shmemx_op_t op) {
    return start(__func__, OP_ALLREDUCE, team, dest, source, count, dtype, op, 0, NULL);
}
int shmemx_reduce_scatter(shmem_team_t team, void *dest, const void *source, size_t count,
                          shmemx_dtype_t dtype, shmemx_op_t op) {
    return start(__func__, OP_REDUCE_SCATTER, team, dest, source, count, dtype, op, 0, NULL);
}
int shmemx_allgather(shmem_team_t team, void *dest, const void *source, size_t count,
                     shmemx_dtype_t dtype) {
    return start(__func__, OP_ALLGATHER, team, dest, source, count, dtype, -1, 0, NULL);
}
int shmemx_broadcast(shmem_team_t team, void *dest, const void *source, size_t count,
                     shmemx_dtype_t dtype, int root) {
    return start(__func__, OP_BROADCAST, team, dest, source, count, dtype, -1, root, NULL);
}

static int need_req(const char *fn, shmemx_req_t *req) {
    if (req) return 0;
    sym__warn(fn, "req is NULL");
    return SHMEMX_EINVAL;
}

int shmemx_allreduce_nb(shmem_team_t team, void *dest, const void *source, size_t count,
                        shmemx_dtype_t dtype, shmemx_op_t op, shmemx_req_t *req) {
    int rc = need_req(__func__, req);
    return rc ? rc : start(__func__, OP_ALLREDUCE, team, dest, source, count, dtype, op, 0, req);
}
int shmemx_reduce_scatter_nb(shmem_team_t team, void *dest, const void *source, size_t count,
                             shmemx_dtype_t dtype, shmemx_op_t op, shmemx_req_t *req) {
    int rc = need_req(__func__, req);
    return rc ? rc
              : start(__func__, OP_REDUCE_SCATTER, team, dest, source, count, dtype, op, 0, req);
}
int shmemx_allgather_nb(shmem_team_t team, void *dest, const void *source, size_t count,
                        shmemx_dtype_t dtype, shmemx_req_t *req) {
    int rc = need_req(__func__, req);
    return rc ? rc : start(__func__, OP_ALLGATHER, team, dest, source, count, dtype, -1, 0, req);
}
int shmemx_broadcast_nb(shmem_team_t team, void *dest, const void *source, size_t count,
                        shmemx_dtype_t dtype, int root, shmemx_req_t *req) {
    int rc = need_req(__func__, req);
    return rc ? rc
              : start(__func__, OP_BROADCAST, team, dest, source, count, dtype, -1, root, req);
}
