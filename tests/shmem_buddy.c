/*
 * shmem_buddy — the symmetric heap's buddy allocator (src/util/buddy.c) against
 * a reference model, on long random alloc/free sequences.
 *
 * The model knows which 64-byte units are taken. From it follow the allocator's
 * whole contract, checked after every call:
 *   - a block has the smallest power-of-two size >= max(size, align, 64), is
 *     aligned to that size, lies inside [0, size) and overlaps no live block;
 *   - a request fails exactly when no aligned block of that size is wholly free
 *     (with complete coalescing, every free aligned range is one free block or
 *     inside one), so exhaustion is never early and never late;
 *   - free_bytes is the size minus the live blocks, and largest_free is the
 *     largest wholly free aligned range (the coalescing check);
 *   - free of anything but a live block's start fails and changes nothing.
 * A twin allocator fed the same calls must give the same offsets (every PE runs
 * its own allocator and must agree without talking).
 */
#include "test.h"
#include "util/buddy.h"

#define UNIT SYM_BUDDY_MIN
#define MAX_UNITS 16384 /* models up to 1 MiB heaps */

typedef struct {
    uint64_t off;
    size_t block; /* bytes */
} live_t;

typedef struct {
    size_t size;                /* managed bytes (a multiple of UNIT) */
    size_t units;
    unsigned char used[MAX_UNITS];
    live_t live[MAX_UNITS];
    size_t n_live;
    /* free_at[k][j]: the aligned range j of 2^(k + MIN_ORDER) bytes is wholly free */
    unsigned char free_at[SYM_BUDDY_ORDERS][MAX_UNITS];
} model_t;

static model_t M;
static uint64_t seed;
static long op_no;

#define MCHECK(cond, ...)                                                            \
    CHECK(cond, "[seed 0x%" PRIx64 ", heap %zu, op %ld] " __VA_ARGS__) /* context first */

static int log2_ceil(size_t x) {
    int k = 0;
    while (((size_t)1 << k) < x) k++;
    return k;
}

/* Rebuild free_at from used: level 0 is the units, level k+1 a pair of level k. */
static void model_levels(void) {
    for (size_t j = 0; j < M.units; j++) M.free_at[0][j] = !M.used[j];
    size_t n = M.units;
    for (int k = 1; k < SYM_BUDDY_ORDERS - SYM_BUDDY_MIN_ORDER && n; k++) {
        n /= 2; /* ranges of this level that fit wholly inside the heap */
        for (size_t j = 0; j < n; j++)
            M.free_at[k][j] = M.free_at[k - 1][2 * j] && M.free_at[k - 1][2 * j + 1];
    }
}

/* Is there a wholly free aligned range of 2^order bytes? */
static int model_fits(int order) {
    int k = order - SYM_BUDDY_MIN_ORDER;
    size_t n = M.units >> k;
    for (size_t j = 0; j < n; j++)
        if (M.free_at[k][j]) return 1;
    return 0;
}

static size_t model_largest(void) {
    for (int order = SYM_BUDDY_ORDERS - 1; order >= SYM_BUDDY_MIN_ORDER; order--) {
        int k = order - SYM_BUDDY_MIN_ORDER;
        if ((M.units >> k) == 0) continue;
        if (model_fits(order)) return (size_t)1 << order;
    }
    return 0;
}

static size_t model_free_bytes(void) {
    size_t f = 0;
    for (size_t j = 0; j < M.units; j++) f += M.used[j] ? 0 : UNIT;
    return f;
}

static void model_mark(uint64_t off, size_t block, int val) {
    for (size_t u = off / UNIT; u < (off + block) / UNIT; u++) M.used[u] = (unsigned char)val;
}

/* The invariants that hold between calls. */
static void check_state(const sym_buddy_t *b) {
    model_levels();
    size_t want_free = model_free_bytes();
    MCHECK(b->free_bytes == want_free, "free_bytes %zu, the model says %zu", seed, M.size, op_no,
           b->free_bytes, want_free);
    size_t want_big = model_largest(), big = sym_buddy_largest_free(b);
    MCHECK(big == want_big, "largest_free %zu, the model says %zu (missed coalescing?)", seed,
           M.size, op_no, big, want_big);
}

static void do_alloc(sym_buddy_t *b, sym_buddy_t *twin, size_t size, size_t align) {
    uint64_t off = sym_buddy_alloc(b, size, align);
    uint64_t off2 = sym_buddy_alloc(twin, size, align);
    MCHECK(off == off2, "twin allocators disagree: %" PRIu64 " vs %" PRIu64, seed, M.size, op_no,
           off, off2);
    size_t need = size ? size : 1;
    if (align > need) need = align;
    int order = log2_ceil(need);
    if (order < SYM_BUDDY_MIN_ORDER) order = SYM_BUDDY_MIN_ORDER;
    int possible = size <= M.size && align <= M.size && order < SYM_BUDDY_ORDERS &&
                   ((size_t)1 << order) <= M.size && model_fits(order);
    if (off == SYM_BUDDY_EMPTY) {
        MCHECK(!possible, "alloc(%zu, align %zu) failed but a free aligned %zu-byte block exists",
               seed, M.size, op_no, size, align, (size_t)1 << order);
        return;
    }
    MCHECK(possible, "alloc(%zu, align %zu) returned %" PRIu64 " but no free block of %zu bytes "
           "exists", seed, M.size, op_no, size, align, off, (size_t)1 << order);
    size_t block = (size_t)1 << order;
    MCHECK(off % block == 0, "offset %" PRIu64 " not aligned to its block size %zu", seed, M.size,
           op_no, off, block);
    MCHECK(align == 0 || off % align == 0, "offset %" PRIu64 " not aligned to %zu", seed, M.size,
           op_no, off, align);
    MCHECK(off + block <= M.size, "block [%" PRIu64 ", +%zu) runs past the heap", seed, M.size,
           op_no, off, block);
    MCHECK(sym_buddy_block_size(b, off) == block, "block_size(%" PRIu64 ") = %zu, want %zu", seed,
           M.size, op_no, off, sym_buddy_block_size(b, off), block);
    for (size_t u = off / UNIT; u < (off + block) / UNIT; u++)
        MCHECK(!M.used[u], "block [%" PRIu64 ", +%zu) overlaps a live block at %zu", seed, M.size,
               op_no, off, block, u * UNIT);
    model_mark(off, block, 1);
    M.live[M.n_live++] = (live_t){off, block};
}

static void do_free(sym_buddy_t *b, sym_buddy_t *twin, size_t i) {
    live_t l = M.live[i];
    MCHECK(sym_buddy_free(b, l.off) == 0, "free(%" PRIu64 ") of a live block failed", seed,
           M.size, op_no, l.off);
    MCHECK(sym_buddy_free(twin, l.off) == 0, "twin: free(%" PRIu64 ") failed", seed, M.size,
           op_no, l.off);
    model_mark(l.off, l.block, 0);
    M.live[i] = M.live[--M.n_live];
    /* The same offset again is a double free, unless it is live again (never here). */
    MCHECK(sym_buddy_block_size(b, l.off) == 0, "block_size of freed %" PRIu64 " is %zu", seed,
           M.size, op_no, l.off, sym_buddy_block_size(b, l.off));
    MCHECK(sym_buddy_free(b, l.off) == -1, "double free of %" PRIu64 " accepted", seed, M.size,
           op_no, l.off);
}

/* Offsets that are not the start of a live block must be refused. */
static void do_bad_free(sym_buddy_t *b, test_rng_t *r) {
    uint64_t off;
    if (M.n_live && (test_next(r) & 1)) {
        live_t l = M.live[test_next(r) % M.n_live];
        if (l.block == UNIT) return;
        off = l.off + UNIT * (1 + test_next(r) % (l.block / UNIT - 1)); /* inside it */
    } else {
        off = (test_next(r) % (M.units + 4)) * UNIT + (test_next(r) & 1 ? 8 : 0);
        for (size_t i = 0; i < M.n_live; i++)
            if (M.live[i].off == off) return; /* happens to be live */
    }
    size_t before = b->free_bytes;
    MCHECK(sym_buddy_free(b, off) == -1, "free(%" PRIu64 ") of a non-block accepted", seed,
           M.size, op_no, off);
    MCHECK(b->free_bytes == before, "a refused free changed free_bytes", seed, M.size, op_no);
}

/* A random request: mostly small, sometimes large, sometimes impossible. */
static void random_request(test_rng_t *r, size_t *size, size_t *align) {
    uint64_t x = test_next(r);
    int lg = (int)(test_next(r) % (unsigned)(log2_ceil(M.size) + 2));
    *size = (size_t)(test_next(r) % (((uint64_t)1 << lg) + 1)); /* 0 .. 2^lg, odd sizes too */
    switch (x % 8) {
    case 0: *align = 0; break;
    case 1: *align = (size_t)1 << (test_next(r) % 4); break; /* 1..8: below the unit */
    case 2: *align = (size_t)1 << (test_next(r) % (unsigned)(log2_ceil(M.size) + 2)); break;
    default: *align = 1; break;
    }
}

static void run_sequence(size_t heap, long ops, test_rng_t *r) {
    sym_buddy_t b, twin;
    memset(&M, 0, sizeof M);
    M.size = heap & ~(UNIT - 1);
    M.units = M.size / UNIT;
    CHECK(sym_buddy_init(&b, heap) == 0, "sym_buddy_init(%zu)", heap);
    CHECK(sym_buddy_init(&twin, heap) == 0, "sym_buddy_init(%zu)", heap);
    CHECK(b.size == M.size, "init(%zu) manages %zu bytes, want %zu", heap, b.size, M.size);
    op_no = 0;
    check_state(&b);
    /* Phases that fill and drain, so the heap runs full and empty repeatedly. */
    double p_alloc = 0.6;
    for (op_no = 1; op_no <= ops; op_no++) {
        if (op_no % 500 == 0) p_alloc = 0.25 + 0.6 * test_uniform(r);
        double u = test_uniform(r);
        if (u < 0.03) {
            do_bad_free(&b, r);
        } else if (u < p_alloc || M.n_live == 0) {
            size_t size, align;
            random_request(r, &size, &align);
            do_alloc(&b, &twin, size, align);
        } else {
            do_free(&b, &twin, (size_t)(test_next(r) % M.n_live));
        }
        check_state(&b);
    }
    /* Drain in random order: everything must coalesce back. */
    while (M.n_live) {
        do_free(&b, &twin, (size_t)(test_next(r) % M.n_live));
        op_no++;
    }
    check_state(&b);
    CHECK(b.free_bytes == M.size, "after freeing all, %zu of %zu bytes free", b.free_bytes,
          M.size);
    size_t top = M.size ? (size_t)1 << (63 - __builtin_clzll(M.size)) : 0;
    CHECK(sym_buddy_largest_free(&b) == top, "after freeing all the largest block is %zu, want "
          "%zu", sym_buddy_largest_free(&b), top);
    sym_buddy_fini(&b);
    sym_buddy_fini(&twin);
}

/* Fill with minimum blocks: exactly size/64 of them fit, then none. */
static void fill_and_drain(size_t heap, test_rng_t *r) {
    sym_buddy_t b;
    CHECK(sym_buddy_init(&b, heap) == 0, "init");
    size_t n = heap / UNIT, got = 0;
    uint64_t *offs = malloc(n * sizeof *offs);
    CHECK(offs != NULL, "malloc");
    for (;;) {
        uint64_t off = sym_buddy_alloc(&b, 1 + test_next(r) % UNIT, 1);
        if (off == SYM_BUDDY_EMPTY) break;
        CHECK(got < n, "more than %zu blocks of %zu bytes in a %zu-byte heap", n, UNIT, heap);
        offs[got++] = off;
    }
    CHECK(got == n, "only %zu of %zu minimum blocks fit in a %zu-byte heap", got, n, heap);
    CHECK(b.free_bytes == 0 && sym_buddy_largest_free(&b) == 0, "a full heap reports %zu free",
          b.free_bytes);
    for (size_t i = n; i > 1; i--) { /* shuffle */
        size_t j = (size_t)(test_next(r) % i);
        uint64_t t = offs[i - 1];
        offs[i - 1] = offs[j];
        offs[j] = t;
    }
    for (size_t i = 0; i < n; i++) CHECK(sym_buddy_free(&b, offs[i]) == 0, "free %zu", i);
    size_t top = (size_t)1 << (63 - __builtin_clzll(heap));
    CHECK(b.free_bytes == heap && sym_buddy_largest_free(&b) == top,
          "after draining: %zu free, largest %zu (want %zu, %zu)", b.free_bytes,
          sym_buddy_largest_free(&b), heap, top);
    free(offs);
    sym_buddy_fini(&b);
}

/* Offsets beyond 4 GiB, a non-power-of-two size, requests too big or too aligned. */
static void large_offsets(void) {
    sym_buddy_t b;
    size_t T = (size_t)1 << 40, S = 2 * T + 192; /* blocks 2^41 @0, 128 @2^41, 64 @2^41+128 */
    CHECK(sym_buddy_init(&b, S) == 0, "init(%zu)", S);
    CHECK(sym_buddy_largest_free(&b) == 2 * T, "largest %zu", sym_buddy_largest_free(&b));
    CHECK(sym_buddy_alloc(&b, S + 1, 1) == SYM_BUDDY_EMPTY, "a request above the heap");
    CHECK(sym_buddy_alloc(&b, 64, 4 * T) == SYM_BUDDY_EMPTY, "an alignment above the heap");
    CHECK(sym_buddy_alloc(&b, 2 * T + 1, 1) == SYM_BUDDY_EMPTY, "2^41+1 cannot fit any block");
    uint64_t a = sym_buddy_alloc(&b, T, 1), c = sym_buddy_alloc(&b, T - 5, 1);
    CHECK(a == 0 && c == T, "two 2^40 blocks at %" PRIu64 ", %" PRIu64, a, c);
    CHECK(sym_buddy_alloc(&b, T, 1) == SYM_BUDDY_EMPTY, "a third 2^40 block");
    uint64_t d = sym_buddy_alloc(&b, 100, 128), e = sym_buddy_alloc(&b, 1, 1);
    CHECK(d == 2 * T && e == 2 * T + 128, "small blocks at %" PRIu64 ", %" PRIu64, d, e);
    CHECK(sym_buddy_alloc(&b, 1, 1) == SYM_BUDDY_EMPTY && b.free_bytes == 0, "heap is full");
    CHECK(sym_buddy_free(&b, c) == 0 && sym_buddy_free(&b, a) == 0, "free the big ones");
    CHECK(sym_buddy_largest_free(&b) == 2 * T, "2^40 halves coalesce: largest %zu",
          sym_buddy_largest_free(&b));
    CHECK(sym_buddy_free(&b, e) == 0 && sym_buddy_free(&b, d) == 0, "free the small ones");
    CHECK(b.free_bytes == S, "free_bytes %zu, want %zu", b.free_bytes, S);
    sym_buddy_fini(&b);
}

int main(void) {
    seed = test_seed();
    printf("shmem_buddy: seed 0x%" PRIx64 " (replay with SYMTRAIN_TEST_SEED=0x%" PRIx64 ")\n",
           seed, seed);
    fflush(stdout);
    test_rng_t r = test_rng(seed, 0);

    large_offsets();

    /* Sizes that are powers of two, sums of a few, odd multiples of 64, and not
     * multiples of 64 at all (init rounds down). */
    size_t fixed[] = {64, 128, 192, 4096, 64 * 1000, 65536 + 4096 + 64, 1 << 20, (1 << 20) - 64,
                      100000};
    long total_ops = 0;
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) {
        long ops = fixed[i] >= 65536 ? 12000 : 4000;
        run_sequence(fixed[i], ops, &r);
        total_ops += ops;
    }
    for (int i = 0; i < 6; i++) {
        size_t heap = UNIT * (1 + (size_t)(test_next(&r) % MAX_UNITS)) + test_next(&r) % UNIT;
        run_sequence(heap, 8000, &r);
        total_ops += 8000;
    }
    fill_and_drain(1 << 20, &r);
    fill_and_drain(64 * 777, &r);
    printf("shmem_buddy: PASS (%ld random operations checked against the model)\n", total_ops);
    return 0;
}
