/*
 * backoff.c — the slow half of every polling wait. Spinning is fastest when each
 * PE has a core; with more PEs than cores a spinning waiter steals the core from
 * the PE it waits for, so after a short spin we yield, and after a longer wait
 * we sleep in growing steps (capped at 50 us so a wake-up is never late by much).
 * Over the fabric, while the host has a core for each PE (sym__wait_polls), a
 * waiter keeps polling and yielding instead: the PEs on other hosts need it to
 * answer their requests.
 */
#include <sched.h>
#include <time.h>

#include "util.h"

void (*sym__progress_hook)(int busy);
int sym__wait_polls;
uint64_t *sym__heartbeat;

void sym__backoff_slow(sym_backoff_t *b) {
    sym__beat(); /* waiting is progress: the PE is alive, its peer is not yet there */
    int polls = b->iter < 256 + 64 || sym__wait_polls;
    if (sym__progress_hook) sym__progress_hook(polls);
    if (polls) {
        sched_yield();
        return;
    }
    uint32_t extra = b->iter - (256 + 64);
    long ns = 1000L << (extra < 6 ? extra : 6); /* 1 us .. 64 us */
    if (ns > 50000) ns = 50000;
    struct timespec ts = {0, ns};
    nanosleep(&ts, NULL);
    /* Every so often go back to yielding: a peer may have just become runnable. */
    if ((b->iter & 63) == 0) sched_yield();
}
