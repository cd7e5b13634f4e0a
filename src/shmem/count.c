/*
 * count.c — the put counters behind shmemx_stats (see runtime.h): one block
 * per thread, linked into a list on the thread's first put, folded into the
 * retired total when the thread ends, so a reader on any thread sums exact
 * counts without ever making a putting thread wait.
 */
#include <pthread.h>

#include "runtime.h"

__thread sym_put_count_t sym__put_count __attribute__((tls_model("initial-exec")));

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static sym_put_count_t *head;
static uint64_t retired_puts, retired_bytes;
static pthread_key_t key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;

/* A thread ends: its counts move to the retired total, its block leaves the list. */
static void retire(void *p) {
    sym_put_count_t *c = p;
    pthread_mutex_lock(&mu);
    retired_puts += c->puts;
    retired_bytes += c->bytes;
    if (c->prev) c->prev->next = c->next;
    else head = c->next;
    if (c->next) c->next->prev = c->prev;
    c->linked = 0;
    c->prev = c->next = NULL;
    pthread_mutex_unlock(&mu);
}

static void make_key(void) {
    if (pthread_key_create(&key, retire))
        sym__fatal("shmem_init", "cannot create the thread key for the put counters");
}

void sym__put_count_link(sym_put_count_t *c) {
    pthread_once(&key_once, make_key);
    pthread_mutex_lock(&mu);
    c->prev = NULL;
    c->next = head;
    if (head) head->prev = c;
    head = c;
    c->linked = 1;
    pthread_mutex_unlock(&mu);
    pthread_setspecific(key, c); /* so retire runs when the thread ends */
}

void sym__put_count_sum(uint64_t *puts, uint64_t *bytes) {
    pthread_mutex_lock(&mu);
    uint64_t p = retired_puts, b = retired_bytes;
    for (sym_put_count_t *c = head; c; c = c->next) {
        p += __atomic_load_n(&c->puts, __ATOMIC_RELAXED);
        b += __atomic_load_n(&c->bytes, __ATOMIC_RELAXED);
    }
    pthread_mutex_unlock(&mu);
    *puts = p;
    *bytes = b;
}
