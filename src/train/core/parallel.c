/*
 * parallel.c — the pool behind sym__parallel_for (parallel.h): threads - 1
 * workers plus the caller. A job is published under a mutex with a generation
 * number; workers take their range, the caller does range 0, and waits for
 * the others. Idle workers sleep on a condition variable: spinning would take
 * the cores from the BLAS threads, which spin themselves between products.
 * A job is split into at most one range per SYM_PAR_CHUNK elements, so a
 * small loop wakes few threads.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "parallel.h"

int sym__threads = 1;

static struct {
    pthread_mutex_t mu;
    pthread_cond_t go, done;
    int nworkers;       /* started */
    unsigned long gen;  /* job number */
    int parts;          /* ranges in the current job */
    int left;           /* ranges not yet finished */
    size_t n;
    void (*body)(size_t, size_t, void *);
    void *arg;
} pool = {.mu = PTHREAD_MUTEX_INITIALIZER, .go = PTHREAD_COND_INITIALIZER, .done = PTHREAD_COND_INITIALIZER};

static void range_of(size_t n, int parts, int i, size_t *lo, size_t *hi) {
    *lo = n * (size_t)i / (size_t)parts;
    *hi = n * (size_t)(i + 1) / (size_t)parts;
}

static void *worker(void *arg) {
    int id = (int)(size_t)arg; /* 1 .. nworkers */
    unsigned long seen = 0;
    for (;;) {
        pthread_mutex_lock(&pool.mu);
        while (pool.gen == seen) pthread_cond_wait(&pool.go, &pool.mu);
        seen = pool.gen;
        int parts = pool.parts;
        size_t n = pool.n;
        void (*body)(size_t, size_t, void *) = pool.body;
        void *a = pool.arg;
        pthread_mutex_unlock(&pool.mu);
        if (id < parts) {
            size_t lo, hi;
            range_of(n, parts, id, &lo, &hi);
            body(lo, hi, a);
            pthread_mutex_lock(&pool.mu);
            if (--pool.left == 0) pthread_cond_signal(&pool.done);
            pthread_mutex_unlock(&pool.mu);
        }
    }
    return NULL;
}

static void zero_pages(size_t lo, size_t hi, void *arg) {
    memset((char *)arg + lo * 4096, 0, (hi - lo) * 4096);
}

static void touch_pages(size_t lo, size_t hi, void *arg) {
    for (size_t k = lo; k < hi; k++) ((volatile char *)arg)[k * 4096] = 0;
}

void sym__parallel_touch(void *p, size_t bytes) {
    size_t pages = (bytes + 4095) / 4096;
    if (bytes) sym__parallel_for(pages, bytes / sizeof(float), touch_pages, p);
}

void sym__parallel_zero(void *p, size_t bytes) {
    size_t pages = bytes / 4096;
    sym__parallel_for(pages, bytes / sizeof(float), zero_pages, p);
    memset((char *)p + pages * 4096, 0, bytes - pages * 4096);
}

void sym__parallel_for(size_t n, size_t work, void (*body)(size_t, size_t, void *), void *arg) {
    int parts = sym__threads;
    if ((size_t)parts > work / SYM_PAR_CHUNK) parts = (int)(work / SYM_PAR_CHUNK);
    if ((size_t)parts > n) parts = (int)n;
    if (work < SYM_PAR_MIN || parts <= 1) {
        body(0, n, arg);
        return;
    }
    pthread_mutex_lock(&pool.mu);
    while (pool.nworkers < parts - 1) { /* grow the pool on first need */
        pthread_t t;
        if (pthread_create(&t, NULL, worker, (void *)(size_t)(pool.nworkers + 1))) break;
        pthread_detach(t);
        pool.nworkers++;
    }
    if (parts > pool.nworkers + 1) parts = pool.nworkers + 1;
    pool.parts = parts;
    pool.left = parts - 1;
    pool.n = n;
    pool.body = body;
    pool.arg = arg;
    __atomic_store_n(&pool.gen, pool.gen + 1, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&pool.go);
    pthread_mutex_unlock(&pool.mu);
    size_t lo, hi;
    range_of(n, parts, 0, &lo, &hi);
    body(lo, hi, arg);
    pthread_mutex_lock(&pool.mu);
    while (pool.left > 0) pthread_cond_wait(&pool.done, &pool.mu);
    pthread_mutex_unlock(&pool.mu);
}
