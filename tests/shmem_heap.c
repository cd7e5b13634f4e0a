/*
 * shmem_heap — the symmetric heap API: shmem_malloc, calloc, align, realloc,
 * free, malloc_with_hints and the deprecated names.
 *
 *   shmem_heap api HEAP_BYTES   random collective alloc/free sequences; every
 *                               block at the same offset on every PE (checked
 *                               by exchanging offsets and by writing each
 *                               other's blocks); contents kept; calloc zeroes;
 *                               exhaustion returns NULL on every PE with
 *                               exactly one message naming the sizes and
 *                               SYMTRAIN_SYMMETRIC_SIZE; sizes no block
 *                               can hold (SIZE_MAX, negative ints) fail the
 *                               same way, at once.
 *   shmem_heap sizes HEAP_BYTES the heap that SHMEM_SYMMETRIC_SIZE /
 *                               SYMTRAIN_SYMMETRIC_SIZE (set by ctest, K/M/G
 *                               suffixes) asked for holds exactly HEAP_BYTES.
 */
#include <errno.h>
#include <stdalign.h>
#include <stddef.h>

#include "shmem_test.h"
#include "util/util.h" /* sym__fmt_size: the runtime's own size format */

static const char *NAME = "shmem_heap";
static uint64_t seed;
static int me, npes, right;
static long g_off; /* a PE's answer, read by its neighbour */

/* At most 48 live blocks of at most 64 KiB: in a 4 MiB heap (64 such aligned
 * ranges) one range is always untouched, so the random phase never runs out. */
#define MAX_LIVE 48
#define MAX_BLOCK 65536

typedef struct {
    unsigned char *p;
    size_t size;
    size_t block; /* the buddy block under it: a power of two >= 64 */
    uint64_t id;  /* names the pattern in it */
} block_t;

static block_t live[MAX_LIVE];
static int n_live;
static unsigned char *ref; /* the first block: offsets are measured from it */
static size_t heap_bytes;

/* ---- patterns: block `id` on PE `pe` holds bytes drawn from (seed, id, pe) ---- */

static void pattern(unsigned char *buf, size_t n, uint64_t id, int pe) {
    test_rng_t r = test_rng(seed ^ (id * 0x100000001b3ull), (uint64_t)pe + 1);
    test_fill(buf, n, &r);
}

static void check_pattern(const unsigned char *got, size_t n, uint64_t id, int pe,
                          const char *what) {
    unsigned char *want = malloc(n ? n : 1);
    CHECK(want != NULL, "malloc");
    pattern(want, n, id, pe);
    for (size_t i = 0; i < n; i++)
        CHECK(got[i] == want[i], "%s: block %" PRIu64 " of PE %d, byte %zu of %zu is 0x%02x, "
              "want 0x%02x", what, id, pe, i, n, got[i], want[i]);
    free(want);
}

/* ---- symmetry: the same offset on every PE, and usable remotely ---- */

static void check_symmetric(const void *p, const char *call) {
    CHECK(p != NULL, "%s returned NULL", call);
    CHECK((uintptr_t)p % alignof(max_align_t) == 0, "%s returned %p, not aligned for any type",
          call, p);
    CHECK(shmem_addr_accessible(p, right), "%s: %p is not accessible on PE %d", call, p, right);
    g_off = (long)((const unsigned char *)p - ref);
    shmem_barrier_all();
    long theirs = shmem_long_g(&g_off, right);
    CHECK(theirs == g_off, "%s: the block is at offset %ld here and %ld on PE %d", call, g_off,
          theirs, right);
    shmem_barrier_all(); /* g_off may change after this */
}

/* Every live block holds its pattern here, and the neighbour's copy holds the
 * neighbour's pattern (read remotely: the offsets really agree). */
static void check_all_live(void) {
    shmem_barrier_all();
    for (int i = 0; i < n_live; i++) {
        check_pattern(live[i].p, live[i].size, live[i].id, me, "local contents");
        unsigned char *buf = malloc(live[i].size);
        CHECK(buf != NULL, "malloc");
        shmem_getmem(buf, live[i].p, live[i].size, right);
        check_pattern(buf, live[i].size, live[i].id, right, "contents read from the neighbour");
        free(buf);
    }
    shmem_barrier_all();
}

/* ---- capturing the runtime's messages (it writes to fd 2) ---- */

static int saved_fd = -1;
static char cap_path[64];

static void capture_begin(void) {
    fflush(stderr);
    snprintf(cap_path, sizeof cap_path, "/tmp/shmem_heap_err.XXXXXX");
    int fd = mkstemp(cap_path);
    CHECK(fd >= 0, "mkstemp: %s", strerror(errno));
    saved_fd = dup(2);
    CHECK(saved_fd >= 0 && dup2(fd, 2) == 2, "dup2: %s", strerror(errno));
    close(fd);
}

/* Stop capturing; returns what was written (malloc'd, NUL-terminated). */
static char *capture_end(void) {
    fflush(stderr);
    CHECK(dup2(saved_fd, 2) == 2, "dup2: %s", strerror(errno));
    close(saved_fd);
    FILE *f = fopen(cap_path, "r");
    CHECK(f != NULL, "fopen %s", cap_path);
    char *text = calloc(1, 65536);
    CHECK(text != NULL, "calloc");
    size_t n = fread(text, 1, 65535, f);
    text[n] = '\0';
    fclose(f);
    unlink(cap_path);
    return text;
}

static int count_lines_with(const char *text, const char *needle) {
    int n = 0;
    for (const char *s = text; (s = strstr(s, needle)) != NULL; s += strlen(needle)) n++;
    return n;
}

static long exhaustion_count; /* on PE 0: messages seen by all PEs */

/* `call` must fail on every PE, and exactly one PE says so in one line that
 * names the size asked, the size free and SYMTRAIN_SYMMETRIC_SIZE. */
static void expect_exhausted(const char *call, size_t asked, size_t free_bytes, void *got,
                             char *text) {
    CHECK(got == NULL, "%s asked %zu bytes of a %zu-byte heap and returned %p, not NULL", call,
          asked, heap_bytes, got);
    int n = count_lines_with(text, "symmetric heap exhausted");
    int lines = count_lines_with(text, "\n");
    if (n) {
        char a[32], f[32], h[32], want[160];
        sym__fmt_size(asked, a, sizeof a);
        sym__fmt_size(free_bytes, f, sizeof f);
        sym__fmt_size(heap_bytes, h, sizeof h);
        snprintf(want, sizeof want, "asked %s, %s free", a, f);
        CHECK(strstr(text, want) != NULL, "%s: the message does not say '%s':\n%s", call, want,
              text);
        CHECK(strstr(text, "SYMTRAIN_SYMMETRIC_SIZE") != NULL,
              "%s: the message does not name SYMTRAIN_SYMMETRIC_SIZE:\n%s", call, text);
        CHECK(strstr(text, call) != NULL, "%s: the message does not name the call:\n%s", call,
              text);
        char pe_tag[32];
        snprintf(pe_tag, sizeof pe_tag, "PE %d", me);
        CHECK(strstr(text, pe_tag) != NULL, "%s: the message does not name the PE:\n%s", call,
              text);
        CHECK(strstr(text, h) != NULL, "%s: the message does not give the heap size %s:\n%s",
              call, h, text);
        /* It says the size to set: enough for what is in use and the request. */
        const char *set = strstr(text, "SYMTRAIN_SYMMETRIC_SIZE=");
        if (strstr(text, "needs a block of")) {
            CHECK(set != NULL, "%s: the message does not say what to set:\n%s", call, text);
            unsigned long long m = strtoull(set + strlen("SYMTRAIN_SYMMETRIC_SIZE="), NULL, 10);
            CHECK(m << 20 >= heap_bytes - free_bytes + asked, "%s: SYMTRAIN_SYMMETRIC_SIZE=%lluM "
                  "cannot hold the %zu bytes in use and the %zu asked:\n%s", call, m,
                  heap_bytes - free_bytes, asked, text);
        } else {
            CHECK(strstr(text, "no SYMTRAIN_SYMMETRIC_SIZE holds it"), "%s: a request no heap "
                  "holds does not say so:\n%s", call, text);
        }
    }
    CHECK(lines == n, "%s printed other lines besides the exhaustion message:\n%s", call, text);
    shmem_long_atomic_add(&exhaustion_count, n, 0);
    shmem_barrier_all();
    if (me == 0)
        CHECK(exhaustion_count == 1, "%s: %ld exhaustion messages over %d PEs, want exactly 1",
              call, exhaustion_count, npes);
    shmem_barrier_all();
    if (me == 0) exhaustion_count = 0;
    free(text);
}

static size_t block_of(size_t size, size_t align) {
    size_t b = 64;
    while (b < size || b < align) b <<= 1;
    return b;
}

static size_t live_bytes_in_blocks(void) {
    size_t total = 64; /* ref */
    for (int i = 0; i < n_live; i++) total += live[i].block;
    return total;
}

/* ---- the API, one call at a time ---- */

static void free_block(int i) {
    memset(live[i].p, 0xA5, live[i].size); /* dirty it, so calloc must really clear */
    if (live[i].id % 5 == 0)
        shfree(live[i].p); /* the deprecated name, now and then */
    else
        shmem_free(live[i].p);
    live[i] = live[--n_live];
}

static void add_block(void *p, size_t size, size_t block, uint64_t id, const char *call) {
    check_symmetric(p, call);
    CHECK(n_live < MAX_LIVE, "the test keeps at most %d blocks", MAX_LIVE);
    live[n_live++] = (block_t){p, size, block, id};
    pattern(p, size, id, me);
}

static void random_ops(int ops) {
    test_rng_t r = test_rng(seed, 1000); /* the same stream on every PE: collective calls */
    uint64_t next_id = 1;
    for (int op = 0; op < ops; op++) {
        unsigned kind = (unsigned)(test_next(&r) % 8);
        size_t size = 1 + (size_t)(test_next(&r) % ((test_next(&r) & 3) ? 4096 : MAX_BLOCK / 3));
        if (n_live == MAX_LIVE || (n_live && kind == 0)) {
            free_block((int)(test_next(&r) % (uint64_t)n_live));
            continue;
        }
        uint64_t id = next_id++;
        switch (kind) {
        case 1: {
            unsigned char *p = shmem_calloc(size, 1 + id % 3);
            size *= 1 + id % 3;
            CHECK(p != NULL, "shmem_calloc(%zu) returned NULL", size);
            for (size_t i = 0; i < size; i++)
                CHECK(p[i] == 0, "shmem_calloc: byte %zu of %zu is 0x%02x, not zero", i, size,
                      p[i]);
            add_block(p, size, block_of(size, 1), id, "shmem_calloc");
            break;
        }
        case 2: {
            size_t align = (size_t)1 << (test_next(&r) % 17); /* 1 .. 64 KiB */
            void *p = (id & 1) ? shmem_align(align, size) : shmemalign(align, size);
            CHECK(p != NULL, "shmem_align(%zu, %zu) returned NULL", align, size);
            CHECK((uintptr_t)p % align == 0, "shmem_align(%zu, %zu) returned %p", align, size, p);
            add_block(p, size, block_of(size, align), id, "shmem_align");
            break;
        }
        case 3: {
            static const long hints[] = {0, SHMEM_MALLOC_ATOMICS_REMOTE, SHMEM_MALLOC_SIGNAL_REMOTE,
                                         SHMEM_MALLOC_ATOMICS_REMOTE | SHMEM_MALLOC_SIGNAL_REMOTE};
            add_block(shmem_malloc_with_hints(size, hints[id % 4]), size, block_of(size, 1), id,
                      "shmem_malloc_with_hints");
            break;
        }
        case 4:
            if (n_live) { /* grow or shrink a block: what fits in both stays */
                int i = (int)(test_next(&r) % (uint64_t)n_live);
                block_t old = live[i];
                unsigned char *keep = malloc(old.size);
                CHECK(keep != NULL, "malloc");
                memcpy(keep, old.p, old.size);
                void *p = (id & 1) ? shmem_realloc(old.p, size) : shrealloc(old.p, size);
                CHECK(p != NULL, "shmem_realloc(%zu -> %zu) returned NULL", old.size, size);
                size_t both = old.size < size ? old.size : size;
                CHECK(memcmp(p, keep, both) == 0, "shmem_realloc(%zu -> %zu) lost the contents",
                      old.size, size);
                free(keep);
                live[i] = live[--n_live];
                /* a block that already holds the new size stays where it is */
                size_t block = size <= old.block ? old.block : block_of(size, 1);
                if (size <= old.block)
                    CHECK(p == old.p, "shmem_realloc(%zu -> %zu) moved a block that held it",
                          old.size, size);
                add_block(p, size, block, id, "shmem_realloc");
                break;
            }
            /* fall through */
        default:
            add_block((id & 1) ? shmem_malloc(size) : shmalloc(size), size, block_of(size, 1), id,
                      "shmem_malloc");
            break;
        }
        if (op % 16 == 0) check_all_live();
    }
    check_all_live();
}

/* Calls that return NULL or do nothing, on every PE alike. */
static void edge_cases(void) {
    CHECK(shmem_malloc(0) == NULL, "shmem_malloc(0) is not NULL");
    CHECK(shmem_calloc(0, 8) == NULL && shmem_calloc(8, 0) == NULL, "shmem_calloc with a zero");
    shmem_free(NULL);
    void *p = shmem_realloc(NULL, 100); /* = shmem_malloc(100) */
    add_block(p, 100, 128, 999999, "shmem_realloc(NULL, 100)");
    CHECK(shmem_realloc(p, 0) == NULL, "shmem_realloc(p, 0) must free p and return NULL");
    n_live--;
    /* A non-power-of-two alignment is refused (one warning, from PE 0). */
    capture_begin();
    void *q = shmem_align(48, 100);
    char *text = capture_end();
    CHECK(q == NULL, "shmem_align(48, 100) returned %p", q);
    CHECK(count_lines_with(text, "\n") == (me == 0) && (me != 0 || strstr(text, "48")),
          "shmem_align(48, ...) should warn once, on PE 0; this PE printed:\n%s", text);
    free(text);
    /* A shrinking realloc keeps the block where it is. */
    unsigned char *s = shmem_malloc(1000);
    add_block(s, 1000, 1024, 1000000, "shmem_malloc");
    unsigned char *t = shmem_realloc(s, 10);
    CHECK(t == s, "shmem_realloc(1000 -> 10) moved the block from %p to %p", (void *)s,
          (void *)t);
    live[n_live - 1].size = 10;
    check_all_live();
}

static void exhaustion(void) {
    size_t free_now = heap_bytes - live_bytes_in_blocks();
    size_t big = heap_bytes + 4096;

    capture_begin();
    void *p = shmem_malloc(big);
    expect_exhausted("shmem_malloc", big, free_now, p, capture_end());

    capture_begin();
    p = shmem_calloc(big / 8, 8);
    expect_exhausted("shmem_calloc", big, free_now, p, capture_end());

    capture_begin();
    p = shmem_align(1 << 12, big);
    expect_exhausted("shmem_align", big, free_now, p, capture_end());

    capture_begin();
    p = shmem_malloc_with_hints(big, SHMEM_MALLOC_ATOMICS_REMOTE);
    expect_exhausted("shmem_malloc_with_hints", big, free_now, p, capture_end());

    /* A failed realloc leaves the old block as it was. */
    if (n_live) {
        block_t b = live[0];
        capture_begin();
        p = shmem_realloc(b.p, big);
        expect_exhausted("shmem_realloc", big, free_now, p, capture_end());
        check_all_live();
    }
    while (n_live) free_block(0);

    /* Fill the heap with 4 KiB blocks: the first failure comes when it is full. */
    enum { CHUNK = 4096 };
    size_t max = heap_bytes / CHUNK + 1, got = 0;
    void **blocks = malloc(max * sizeof *blocks);
    CHECK(blocks != NULL, "malloc");
    for (;;) {
        capture_begin();
        void *b = shmem_malloc(CHUNK);
        char *text = capture_end();
        if (!b) {
            expect_exhausted("shmem_malloc", CHUNK, heap_bytes - live_bytes_in_blocks() -
                             got * CHUNK, b, text);
            break;
        }
        free(text);
        CHECK(got < max, "more 4 KiB blocks than the heap holds");
        blocks[got++] = b;
    }
    size_t used = live_bytes_in_blocks() + got * CHUNK;
    CHECK(heap_bytes - used < CHUNK, "the heap refused a 4 KiB block with %zu bytes unused",
          heap_bytes - used);
    for (size_t i = 0; i < got; i++) shmem_free(blocks[i]);
    free(blocks);
    /* The heap works again. */
    void *again = shmem_malloc(CHUNK);
    add_block(again, CHUNK, CHUNK, 2000000, "shmem_malloc after exhaustion");
    check_all_live();
}

/* Sizes no block can hold (SIZE_MAX, a negative int converted to size_t,
 * more than half of SIZE_MAX) fail at once like any other exhaustion: NULL on
 * every PE, one message. A calloc whose count x size overflows says so. */
static void huge_requests(void) {
    size_t free_now = heap_bytes - live_bytes_in_blocks();
    int minus = -4096;
    const size_t huge[] = {SIZE_MAX, (size_t)minus, (SIZE_MAX >> 1) + 2};
    for (size_t i = 0; i < sizeof huge / sizeof huge[0]; i++) {
        size_t h = huge[i];
        capture_begin();
        void *p = shmem_malloc(h);
        expect_exhausted("shmem_malloc", h, free_now, p, capture_end());
        capture_begin();
        p = shmem_malloc_with_hints(h, SHMEM_MALLOC_SIGNAL_REMOTE);
        expect_exhausted("shmem_malloc_with_hints", h, free_now, p, capture_end());
        capture_begin();
        p = shmem_align(4096, h);
        expect_exhausted("shmem_align", h, free_now, p, capture_end());
        capture_begin();
        p = shmem_calloc(1, h);
        expect_exhausted("shmem_calloc", h, free_now, p, capture_end());
        if (n_live) { /* the old block stays as it was */
            capture_begin();
            p = shmem_realloc(live[0].p, h);
            expect_exhausted("shmem_realloc", h, free_now, p, capture_end());
        }
    }
    capture_begin(); /* an alignment larger than any block */
    void *p = shmem_align((size_t)1 << (sizeof(size_t) * 8 - 1), 1);
    expect_exhausted("shmem_align", 1, free_now, p, capture_end());

    capture_begin();
    p = shmem_calloc(SIZE_MAX / 2, 3);
    char *text = capture_end();
    CHECK(p == NULL, "shmem_calloc(SIZE_MAX / 2, 3) returned %p", p);
    CHECK(count_lines_with(text, "\n") == (me == 0) &&
              (me != 0 || (strstr(text, "shmem_calloc") && strstr(text, "overflows"))),
          "shmem_calloc(SIZE_MAX / 2, 3) should say once, on PE 0, that the size overflows; "
          "this PE printed:\n%s", text);
    free(text);
    check_all_live();
}

static void api(void) {
    CHECK(heap_bytes >= 64 * MAX_BLOCK, "the api test needs a heap of at least %d bytes",
          64 * MAX_BLOCK);
    ref = shmem_malloc(1);
    CHECK(ref != NULL, "shmem_malloc(1) returned NULL");
    random_ops(300);
    while (n_live > MAX_LIVE / 2) free_block(0);
    edge_cases();
    huge_requests();
    exhaustion();
    while (n_live) free_block(0);
    shmem_free(ref);
}

/* The heap holds exactly heap_bytes: its binary decomposition, then nothing. */
static void sizes(void) {
    for (int k = 62; k >= 0; k--) {
        size_t b = (size_t)1 << k;
        if (!(heap_bytes & b)) continue;
        unsigned char *p = shmem_malloc(b);
        CHECK(p != NULL, "a %zu-byte heap refused its %zu-byte block (SHMEM_SYMMETRIC_SIZE=%s, "
              "SYMTRAIN_SYMMETRIC_SIZE=%s)", heap_bytes, b, getenv("SHMEM_SYMMETRIC_SIZE"),
              getenv("SYMTRAIN_SYMMETRIC_SIZE"));
        p[0] = p[b - 1] = 1; /* both ends are real memory */
        shmem_uint8_p(&p[b - 1], (uint8_t)me, right);
    }
    capture_begin();
    void *p = shmem_malloc(1);
    char *text = capture_end();
    CHECK(p == NULL, "a full %zu-byte heap gave one more byte (SHMEM_SYMMETRIC_SIZE=%s, "
          "SYMTRAIN_SYMMETRIC_SIZE=%s): the heap is larger than asked",
          heap_bytes, getenv("SHMEM_SYMMETRIC_SIZE"), getenv("SYMTRAIN_SYMMETRIC_SIZE"));
    free(text);
}

int main(int argc, char **argv) {
    if (argc != 3 || (strcmp(argv[1], "api") && strcmp(argv[1], "sizes"))) {
        fprintf(stderr, "usage: shmem_heap api|sizes HEAP_BYTES\n");
        return 2;
    }
    heap_bytes = strtoull(argv[2], NULL, 0);
    seed = shmem_test_start(NAME);
    me = shmem_my_pe();
    npes = shmem_n_pes();
    right = shmem_test_right();
    if (!strcmp(argv[1], "api")) {
        api();
        shmem_test_pass(NAME, "malloc/calloc/align/realloc/free/with_hints, symmetric offsets, "
                              "exhaustion");
    } else {
        sizes();
        shmem_test_pass(NAME, "heap size from the environment");
    }
    shmem_finalize();
    return 0;
}
