/*
 * net_quiet — shmem_quiet returns only once the target has what was sent.
 *
 * PE 0 sends the last PE (on another host under net_hosts.sh) one kind of
 * operation while that PE is stopped (SIGSTOP), then calls shmem_quiet. A
 * thread of PE 0 lets the target run again (SIGCONT) after a while and marks
 * that it did; quiet returning before the mark means it trusted a completion
 * that came before the target had the data (libfabric 1.17's net provider
 * completes a write once the kernel has taken it). Each kind in turn:
 * batched small puts, a blocking small put, large puts non-blocking and
 * blocking, puts with signal (set and add), a non-fetching atomic. The target
 * checks the data once running again.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <shmem.h>

#include "shmem_test.h"

#define LARGE (1 << 20)

static int target_pid;
static long word;
static uint64_t sig;
static char big[LARGE];
static char src[LARGE];
static int continued;

/* The target process's state letter from /proc (T: stopped). */
static char state_of(int pid) {
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    FILE *f = fopen(path, "r");
    CHECK(f, "cannot read %s: the target must run on this machine", path);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char *p = strrchr(buf, ')'); /* "pid (comm) S ..." */
    return p && p[1] == ' ' ? p[2] : '?';
}

static void *resume_later(void *arg) {
    (void)arg;
    struct timespec ts = {0, 150 * 1000 * 1000};
    nanosleep(&ts, NULL);
    __atomic_store_n(&continued, 1, __ATOMIC_SEQ_CST);
    kill(target_pid, SIGCONT);
    return NULL;
}

typedef enum { NBI_SMALL, P_SMALL, NBI_LARGE, PUT_LARGE, SIGNAL_SET, SIGNAL_ADD, ATOMIC_ADD } kind_t;
static const char *names[] = {"batched small puts", "a blocking small put",
                              "a large non-blocking put", "a large blocking put",
                              "a large put with signal set", "a put with signal add",
                              "a non-fetching atomic add"};

static void send_kind(kind_t k, int t, long round) {
    switch (k) {
    case NBI_SMALL:
        for (int i = 0; i < 64; i++) shmem_putmem_nbi(big + 8 * i, src + 8 * i, 8, t);
        break;
    case P_SMALL: shmem_long_p(&word, round, t); break;
    case NBI_LARGE: shmem_putmem_nbi(big, src, LARGE / 4, t); break;
    case PUT_LARGE: shmem_putmem(big, src, LARGE, t); break;
    case SIGNAL_SET: shmem_putmem_signal(big, src, LARGE / 8, &sig, (uint64_t)round, SHMEM_SIGNAL_SET, t); break;
    case SIGNAL_ADD: shmem_putmem_signal(big, src, 64, &sig, 1, SHMEM_SIGNAL_ADD, t); break;
    case ATOMIC_ADD: shmem_long_atomic_add(&word, 1, t); break;
    }
}

static size_t bytes_of(kind_t k) {
    switch (k) {
    case NBI_SMALL: return 512;
    case NBI_LARGE: return LARGE / 4;
    case PUT_LARGE: return LARGE;
    case SIGNAL_SET: return LARGE / 8;
    case SIGNAL_ADD: return 64;
    default: return 0;
    }
}

int main(void) {
    shmem_test_start("net_quiet");
    int me = shmem_my_pe(), n = shmem_n_pes(), t = n - 1;
    CHECK(n >= 2, "needs 2 PEs or more");
    if (me == t) shmem_int_p(&target_pid, getpid(), 0);
    shmem_barrier_all();
    for (kind_t k = NBI_SMALL; k <= ATOMIC_ADD; k++) {
        long round = (long)k + 1;
        memset(src, (int)round, sizeof src);
        long word_before = word;
        uint64_t sig_before = sig;
        shmem_barrier_all();
        if (me == t) raise(SIGSTOP); /* until PE 0's thread continues us */
        if (me == 0) {
            while (state_of(target_pid) != 'T') usleep(1000);
            __atomic_store_n(&continued, 0, __ATOMIC_SEQ_CST);
            pthread_t th;
            CHECK(pthread_create(&th, NULL, resume_later, NULL) == 0, "pthread_create");
            send_kind(k, t, round);
            shmem_quiet();
            int waited = __atomic_load_n(&continued, __ATOMIC_SEQ_CST);
            pthread_join(th, NULL); /* the target runs again, also when this fails */
            CHECK(waited, "%s: shmem_quiet returned while PE %d was stopped, before it had the data",
                  names[k], t);
        }
        shmem_barrier_all();
        if (me == t) {
            for (size_t i = 0; i < bytes_of(k); i++)
                CHECK(big[i] == (char)round, "%s: byte %zu is %d, want %ld", names[k], i, big[i],
                      round);
            if (k == P_SMALL) CHECK(word == round, "%s: %ld, want %ld", names[k], word, round);
            if (k == ATOMIC_ADD)
                CHECK(word == word_before + 1, "%s: %ld, want %ld", names[k], word, word_before + 1);
            if (k == SIGNAL_SET) CHECK(sig == (uint64_t)round, "%s: signal %llu", names[k],
                                       (unsigned long long)sig);
            if (k == SIGNAL_ADD) CHECK(sig == sig_before + 1, "%s: signal %llu", names[k],
                                       (unsigned long long)sig);
        }
    }
    shmem_test_pass("net_quiet", "quiet waited for a stopped target, 7 kinds of operation");
    shmem_finalize();
    return 0;
}
