/*
 * shmem_signal — put-with-signal and the signal calls.
 *
 *   1. A stream of rounds around the ring: in round k each PE sends its right
 *      neighbour a payload of random size (up to 1 MiB) with one put_signal
 *      form — typed for every RMA type, sized 8..128, mem; plain, ctx_, _nbi,
 *      ctx_ _nbi, and the C11 generic ones — alternately SHMEM_SIGNAL_SET to k
 *      and SHMEM_SIGNAL_ADD of 1. The receiver waits with
 *      shmem_signal_wait_until under a comparison that holds only once the
 *      signal arrived (EQ, NE, GT, GE in turn), checks the value returned,
 *      shmem_signal_fetch, every payload byte (a waiter that sees the signal
 *      must see the data) and the bytes after the payload, then acknowledges.
 *   2. LT and LE waits on a signal that goes down.
 *   3. Every PE adds into one signal on PE 0 (a heap word) beside its own
 *      payload slot: PE 0 waits for the exact sum and checks every slot.
 */
#include "shmem_test.h"

static const char *NAME = "shmem_signal";
static uint64_t seed;
static int me, npes, right, left;
static long bytes_checked, rounds;

#define MAX_PAYLOAD ((size_t)1 << 20)
#define TAIL 64
#define POISON 0x5A

typedef void send_fn(int form, void *d, const void *s, size_t bytes, uint64_t *sig,
                     uint64_t v, int op, int pe);

#define DEF_SEND(T, N)                                                               \
    static void send_##N(int form, void *dv, const void *sv, size_t bytes, uint64_t *sig, \
                         uint64_t v, int op, int pe) {                               \
        T *d = dv;                                                                   \
        const T *s = sv;                                                             \
        size_t n = bytes / sizeof(T);                                                \
        shmem_ctx_t c = SHMEM_CTX_DEFAULT;                                           \
        switch (form) {                                                              \
        case 0: shmem_##N##_put_signal(d, s, n, sig, v, op, pe); break;              \
        case 1: shmem_ctx_##N##_put_signal(c, d, s, n, sig, v, op, pe); break;       \
        case 2: shmem_##N##_put_signal_nbi(d, s, n, sig, v, op, pe); break;          \
        case 3: shmem_ctx_##N##_put_signal_nbi(c, d, s, n, sig, v, op, pe); break;   \
        case 4: shmem_put_signal(d, s, n, sig, v, op, pe); break;                    \
        default: shmem_put_signal_nbi(c, d, s, n, sig, v, op, pe); break;            \
        }                                                                            \
    }
SYMI_RMA_TYPES(DEF_SEND)

#define DEF_SEND_SIZED(S)                                                            \
    static void send_s##S(int form, void *d, const void *s, size_t bytes, uint64_t *sig, \
                          uint64_t v, int op, int pe) {                              \
        size_t n = bytes / (S / 8);                                                  \
        shmem_ctx_t c = SHMEM_CTX_DEFAULT;                                           \
        switch (form) {                                                              \
        case 0: shmem_put##S##_signal(d, s, n, sig, v, op, pe); break;               \
        case 1: shmem_ctx_put##S##_signal(c, d, s, n, sig, v, op, pe); break;        \
        case 2: shmem_put##S##_signal_nbi(d, s, n, sig, v, op, pe); break;           \
        default: shmem_ctx_put##S##_signal_nbi(c, d, s, n, sig, v, op, pe); break;   \
        }                                                                            \
    }
SYMI_SIZES(DEF_SEND_SIZED)

static void send_mem(int form, void *d, const void *s, size_t bytes, uint64_t *sig, uint64_t v,
                     int op, int pe) {
    shmem_ctx_t c = SHMEM_CTX_DEFAULT;
    switch (form) {
    case 0: shmem_putmem_signal(d, s, bytes, sig, v, op, pe); break;
    case 1: shmem_ctx_putmem_signal(c, d, s, bytes, sig, v, op, pe); break;
    case 2: shmem_putmem_signal_nbi(d, s, bytes, sig, v, op, pe); break;
    default: shmem_ctx_putmem_signal_nbi(c, d, s, bytes, sig, v, op, pe); break;
    }
}

typedef struct {
    const char *name;
    size_t esize;
    int forms;
    send_fn *send;
} sender_t;

static const char *form_name[] = {"put_signal", "ctx_put_signal", "put_signal_nbi",
                                  "ctx_put_signal_nbi", "generic put_signal",
                                  "generic ctx put_signal_nbi"};

#define SENDER(T, N) {#T, sizeof(T), 6, send_##N},
#define SENDER_SIZED(S) {"sized " #S, S / 8, 4, send_s##S},
static const sender_t senders[] = {
    SYMI_RMA_TYPES(SENDER) SYMI_SIZES(SENDER_SIZED){"mem", 1, 4, send_mem},
};

/* ---- 1. the stream ---- */

static uint64_t sig;  /* my signal, a global: set by my left neighbour */
static uint64_t ack;  /* rounds my right neighbour has checked */

static size_t payload_size(uint64_t k, size_t esize) {
    test_rng_t r = test_rng(seed, 3000 + k);
    size_t n = (test_next(&r) % 4 == 0) ? (size_t)(test_next(&r) % MAX_PAYLOAD)
                                        : (size_t)(test_next(&r) % 4096);
    n -= n % esize;
    return n ? n : esize;
}

static void payload(unsigned char *buf, size_t n, int pe, uint64_t k) {
    test_rng_t r = test_rng(seed ^ (uint64_t)(pe + 1) * 0x9E3779B97F4A7C15ull, k);
    test_fill(buf, n, &r);
}

static void stream(unsigned char *buf) {
    unsigned char *src = malloc(MAX_PAYLOAD), *want = malloc(MAX_PAYLOAD);
    CHECK(src && want, "malloc");
    memset(buf, POISON, MAX_PAYLOAD + TAIL);
    shmem_barrier_all();
    uint64_t k = 0;
    for (size_t si = 0; si < sizeof senders / sizeof senders[0]; si++) {
        const sender_t *s = &senders[si];
        for (int form = 0; form < s->forms; form++) {
            k++;
            size_t n = payload_size(k, s->esize);
            int op = k % 2 ? SHMEM_SIGNAL_SET : SHMEM_SIGNAL_ADD;
            /* send round k once my right neighbour has checked round k-1 */
            shmem_uint64_wait_until(&ack, SHMEM_CMP_GE, k - 1);
            payload(src, n, me, k);
            s->send(form, buf, src, n, &sig, op == SHMEM_SIGNAL_SET ? k : 1, op, right);
            /* receive round k: the signal goes from k-1 to k */
            static const int cmps[] = {SHMEM_CMP_EQ, SHMEM_CMP_NE, SHMEM_CMP_GT, SHMEM_CMP_GE};
            static const char *cn[] = {"EQ k", "NE k-1", "GT k-1", "GE k"};
            int ci = (int)(k % 4);
            uint64_t cv = ci == 0 || ci == 3 ? k : k - 1;
            uint64_t got = shmem_signal_wait_until(&sig, cmps[ci], cv);
            CHECK(got == k, "round %" PRIu64 " (%s %s, %s): signal_wait_until(%s) returned %" PRIu64,
                  k, s->name, form_name[form], op == SHMEM_SIGNAL_SET ? "SET" : "ADD", cn[ci], got);
            CHECK(shmem_signal_fetch(&sig) == k, "round %" PRIu64 ": signal_fetch gave %" PRIu64,
                  k, shmem_signal_fetch(&sig));
            payload(want, n, left, k);
            for (size_t i = 0; i < n; i++)
                CHECK(buf[i] == want[i], "round %" PRIu64 " (%s %s, %zu bytes from PE %d): byte "
                      "%zu is 0x%02x, want 0x%02x: the signal came before the data",
                      k, s->name, form_name[form], n, left, i, buf[i], want[i]);
            for (size_t i = n; i < n + TAIL; i++)
                CHECK(buf[i] == POISON, "round %" PRIu64 " (%s %s): %zu bytes sent but byte %zu "
                      "changed", k, s->name, form_name[form], n, i);
            memset(buf, POISON, n);
            bytes_checked += (long)n;
            shmem_uint64_p(&ack, k, left);
            rounds++;
        }
    }
    shmem_uint64_wait_until(&ack, SHMEM_CMP_GE, k); /* my last round was checked */
    shmem_barrier_all();
    free(src);
    free(want);
}

/* ---- 2. a signal that goes down ---- */

static uint64_t down, sink; /* a signal and an 8-byte payload, both globals */

static void falling(void) {
    down = 1000;
    shmem_barrier_all();
    uint64_t one = 0x0123456789abcdefull ^ (uint64_t)me;
    shmem_putmem_signal(&sink, &one, 0, &down, 600, SHMEM_SIGNAL_SET, right); /* no data */
    uint64_t got = shmem_signal_wait_until(&down, SHMEM_CMP_LT, 601);
    CHECK(got == 600, "signal_wait_until(LT 601) returned %" PRIu64, got);
    shmem_barrier_all();
    shmem_uint64_put_signal_nbi(&sink, &one, 1, &down, 7, SHMEM_SIGNAL_SET, right);
    got = shmem_signal_wait_until(&down, SHMEM_CMP_LE, 7);
    CHECK(got == 7, "signal_wait_until(LE 7) returned %" PRIu64, got);
    CHECK(sink == (0x0123456789abcdefull ^ (uint64_t)left), "the 8-byte payload before the "
          "signal: 0x%" PRIx64, sink);
    shmem_barrier_all();
}

/* ---- 3. everyone into one signal on PE 0 ---- */

static void all_to_one(unsigned char *slots, uint64_t *sig0) {
    const size_t slot = 4096 + 3;
    unsigned char *src = malloc(slot);
    CHECK(src != NULL, "malloc");
    payload(src, slot, me, 777);
    shmem_barrier_all();
    if (me % 2)
        shmem_putmem_signal_nbi(slots + (size_t)me * slot, src, slot, sig0, (uint64_t)me + 1,
                                SHMEM_SIGNAL_ADD, 0);
    else
        shmem_putmem_signal(slots + (size_t)me * slot, src, slot, sig0, (uint64_t)me + 1,
                            SHMEM_SIGNAL_ADD, 0);
    shmem_quiet();
    if (me == 0) {
        uint64_t total = (uint64_t)npes * (uint64_t)(npes + 1) / 2;
        uint64_t got = shmem_signal_wait_until(sig0, SHMEM_CMP_EQ, total);
        CHECK(got == total, "%d PEs' SIGNAL_ADDs: %" PRIu64 ", want %" PRIu64, npes, got, total);
        for (int pe = 0; pe < npes; pe++) {
            payload(src, slot, pe, 777);
            CHECK(memcmp(slots + (size_t)pe * slot, src, slot) == 0,
                  "PE %d's payload is not complete when the sum arrived", pe);
            bytes_checked += (long)slot;
        }
    }
    free(src);
    shmem_barrier_all();
}

int main(void) {
    seed = shmem_test_start(NAME);
    me = shmem_my_pe();
    npes = shmem_n_pes();
    right = shmem_test_right();
    left = shmem_test_left();

    unsigned char *buf = shmem_malloc(MAX_PAYLOAD + TAIL);
    uint64_t *sig0 = shmem_calloc(1, sizeof(uint64_t));
    unsigned char *slots = shmem_malloc((size_t)npes * (4096 + 3));
    CHECK(buf && sig0 && slots, "shmem_malloc");
    stream(buf);
    falling();
    all_to_one(slots, sig0);
    shmem_free(slots);
    shmem_free(sig0);
    shmem_free(buf);
    char what[128];
    snprintf(what, sizeof what, "%ld rounds over %zu senders, %ld payload bytes checked on PE 0",
             rounds, sizeof senders / sizeof senders[0], bytes_checked);
    shmem_test_pass(NAME, what);
    shmem_finalize();
    return 0;
}
