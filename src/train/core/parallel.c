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
#include "util/util.h"

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

/* Blocks of a checksum or copy: enough for every thread, few enough that
 * joining their CRCs costs nothing beside them. */
#define CRC_BLOCK ((size_t)4 << 20)

typedef struct {
    char *dst;
    const char *src;
    size_t len;
    uint32_t *crc; /* (blocks) each block's; NULL: a plain copy */
} blocks_t;

static void crc_blocks(size_t lo, size_t hi, void *arg) {
    const blocks_t *b = arg;
    for (size_t k = lo; k < hi; k++) {
        size_t off = k * CRC_BLOCK, n = b->len - off < CRC_BLOCK ? b->len - off : CRC_BLOCK;
        if (!b->crc) memcpy(b->dst + off, b->src + off, n);
        else if (b->dst) b->crc[k] = sym__crc32c_copy(0, b->dst + off, b->src + off, n);
        else b->crc[k] = sym__crc32c(0, b->src + off, n);
    }
}

uint32_t sym__parallel_crc32c(uint32_t crc, void *dst, const void *p, size_t len) {
    size_t nb = (len + CRC_BLOCK - 1) / CRC_BLOCK;
    uint32_t *part = nb > 1 && sym__threads > 1 ? malloc(nb * sizeof *part) : NULL;
    if (!part) /* one block, one thread, or no memory for the parts: in one pass here */
        return dst ? sym__crc32c_copy(crc, dst, p, len) : sym__crc32c(crc, p, len);
    blocks_t b = {dst, p, len, part};
    sym__parallel_for(nb, len / sizeof(float), crc_blocks, &b);
    for (size_t k = 0; k < nb; k++)
        crc = sym__crc32c_combine(crc, part[k], k + 1 < nb ? CRC_BLOCK : len - k * CRC_BLOCK);
    free(part);
    return crc;
}

void sym__parallel_copy(void *dst, const void *src, size_t len) {
    blocks_t b = {dst, src, len, NULL};
    sym__parallel_for((len + CRC_BLOCK - 1) / CRC_BLOCK, len / sizeof(float), crc_blocks, &b);
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
