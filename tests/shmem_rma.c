/*
 * shmem_rma — every RMA type and form with fresh random data, checked element
 * by element, guard elements included.
 *
 * Forms: put, put_nbi, p, iput and get, get_nbi, g, iget, each plain, ctx_ on
 * SHMEM_CTX_DEFAULT, and through the C11 _Generic interface (plain and ctx);
 * for every type of SYMI_RMA_TYPES, the sized forms 8/16/32/64/128 and the mem
 * forms. Sizes include 0, 1 and odd counts; strides are positive and negative.
 * Targets: the symmetric heap, a global array (.bss) and a function-static array
 * (.data), plus named globals and statics written one at a time.
 *
 * Puts go to the right-hand neighbour, which checks them against data it
 * regenerates from the sender's seed stream; gets read the right-hand
 * neighbour's source array, regenerated the same way. Each form has its own
 * slot of the target region, surrounded by guard elements that must keep the
 * poison the receiver wrote before the round.
 */
#include <float.h>
#include <math.h>
#include <stdalign.h>

#include "shmem_test.h"

static const char *NAME = "shmem_rma";
static uint64_t seed;
static int me, npes, right, left;

#define MAXN 257  /* elements in a slot's payload area */
#define GUARD 8   /* guard elements on each side */
#define SLOT (MAXN + 2 * GUARD)
#define POISON 0xCD

enum {
    F_PUT, F_PUT_NBI, F_CTX_PUT, F_CTX_PUT_NBI, F_GEN_PUT, F_GEN_CTX_PUT, F_GEN_PUT_NBI,
    F_GEN_CTX_PUT_NBI, F_P, F_CTX_P, F_GEN_P, F_GEN_CTX_P, F_IPUT, F_CTX_IPUT, F_GEN_IPUT,
    F_GEN_CTX_IPUT, N_FORMS
};
static const char *put_name[N_FORMS] = {
    "put", "put_nbi", "ctx_put", "ctx_put_nbi", "generic put", "generic ctx put",
    "generic put_nbi", "generic ctx put_nbi", "p", "ctx_p", "generic p", "generic ctx p",
    "iput", "ctx_iput", "generic iput", "generic ctx iput"};
static const char *get_name[N_FORMS] = {
    "get", "get_nbi", "ctx_get", "ctx_get_nbi", "generic get", "generic ctx get",
    "generic get_nbi", "generic ctx get_nbi", "g", "ctx_g", "generic g", "generic ctx g",
    "iget", "ctx_iget", "generic iget", "generic ctx iget"};

static int form_single(int f) { return f >= F_P && f <= F_GEN_CTX_P; }
static int form_strided(int f) { return f >= F_IPUT; }

/* What one form moves this round: n elements, element i from src[sbase + i*ss]
 * to dst[dbase + i*ds] (indices into the payload area). */
typedef struct {
    size_t n;
    ptrdiff_t ds, ss;
    size_t dbase, sbase;
} plan_t;

/* ---- per-type operations ---- */

typedef void fill_fn(void *buf, size_t n, test_rng_t *r);
/* Run put form f: dst is the slot payload on `pe`, src a private array. */
typedef void put_fn(int f, void *dst, const void *src, const plan_t *p, int pe);
/* Run get form f: dst a private array, src the symmetric source payload. */
typedef void get_fn(int f, void *dst, const void *src, const plan_t *p, int pe);

typedef struct {
    const char *name;
    size_t size;      /* bytes per element */
    size_t cmp_bytes; /* bytes that hold the value (long double has padding) */
    unsigned forms;   /* bit f: form f exists for this type */
    fill_fn *fill;
    put_fn *put;
    get_fn *get;
} type_t;

/* Finite random values for floating types, all bit patterns for integers. */
static double rand_real(test_rng_t *r) {
    return ldexp(test_uniform(r) - 0.5, (int)(test_next(r) % 40) - 20);
}
#define RANDVAL(T, r)                                                                \
    _Generic((T)0, float: (T)rand_real(r), double: (T)rand_real(r),                  \
             long double: (T)rand_real(r) + (T)rand_real(r) * 1e-10L,                \
             default: (T)test_next(r))

#define ALL_FORMS ((1u << N_FORMS) - 1)

#define DEF_TYPE(T, N)                                                               \
    static void fill_##N(void *buf, size_t n, test_rng_t *r) {                       \
        T *b = buf;                                                                  \
        memset(buf, 0, n * sizeof(T));                                               \
        for (size_t i = 0; i < n; i++) b[i] = RANDVAL(T, r);                         \
    }                                                                                \
    static void put_##N(int f, void *dv, const void *sv, const plan_t *p, int pe) {  \
        T *d = (T *)dv + p->dbase;                                                   \
        const T *s = (const T *)sv + p->sbase;                                       \
        shmem_ctx_t c = SHMEM_CTX_DEFAULT;                                           \
        switch (f) {                                                                 \
        case F_PUT: shmem_##N##_put(d, s, p->n, pe); break;                          \
        case F_PUT_NBI: shmem_##N##_put_nbi(d, s, p->n, pe); break;                  \
        case F_CTX_PUT: shmem_ctx_##N##_put(c, d, s, p->n, pe); break;               \
        case F_CTX_PUT_NBI: shmem_ctx_##N##_put_nbi(c, d, s, p->n, pe); break;       \
        case F_GEN_PUT: shmem_put(d, s, p->n, pe); break;                            \
        case F_GEN_CTX_PUT: shmem_put(c, d, s, p->n, pe); break;                     \
        case F_GEN_PUT_NBI: shmem_put_nbi(d, s, p->n, pe); break;                    \
        case F_GEN_CTX_PUT_NBI: shmem_put_nbi(c, d, s, p->n, pe); break;             \
        case F_P:                                                                    \
            for (size_t i = 0; i < p->n; i++) shmem_##N##_p(d + i, s[i], pe);        \
            break;                                                                   \
        case F_CTX_P:                                                                \
            for (size_t i = 0; i < p->n; i++) shmem_ctx_##N##_p(c, d + i, s[i], pe); \
            break;                                                                   \
        case F_GEN_P:                                                                \
            for (size_t i = 0; i < p->n; i++) shmem_p(d + i, s[i], pe);              \
            break;                                                                   \
        case F_GEN_CTX_P:                                                            \
            for (size_t i = 0; i < p->n; i++) shmem_p(c, d + i, s[i], pe);           \
            break;                                                                   \
        case F_IPUT: shmem_##N##_iput(d, s, p->ds, p->ss, p->n, pe); break;          \
        case F_CTX_IPUT: shmem_ctx_##N##_iput(c, d, s, p->ds, p->ss, p->n, pe); break; \
        case F_GEN_IPUT: shmem_iput(d, s, p->ds, p->ss, p->n, pe); break;            \
        case F_GEN_CTX_IPUT: shmem_iput(c, d, s, p->ds, p->ss, p->n, pe); break;     \
        }                                                                            \
    }                                                                                \
    static void get_##N(int f, void *dv, const void *sv, const plan_t *p, int pe) {  \
        T *d = (T *)dv + p->dbase;                                                   \
        const T *s = (const T *)sv + p->sbase;                                       \
        shmem_ctx_t c = SHMEM_CTX_DEFAULT;                                           \
        switch (f) {                                                                 \
        case F_PUT: shmem_##N##_get(d, s, p->n, pe); break;                          \
        case F_PUT_NBI: shmem_##N##_get_nbi(d, s, p->n, pe); shmem_quiet(); break;   \
        case F_CTX_PUT: shmem_ctx_##N##_get(c, d, s, p->n, pe); break;               \
        case F_CTX_PUT_NBI:                                                          \
            shmem_ctx_##N##_get_nbi(c, d, s, p->n, pe);                              \
            shmem_ctx_quiet(c);                                                      \
            break;                                                                   \
        case F_GEN_PUT: shmem_get(d, s, p->n, pe); break;                            \
        case F_GEN_CTX_PUT: shmem_get(c, d, s, p->n, pe); break;                     \
        case F_GEN_PUT_NBI: shmem_get_nbi(d, s, p->n, pe); shmem_quiet(); break;     \
        case F_GEN_CTX_PUT_NBI: shmem_get_nbi(c, d, s, p->n, pe); shmem_ctx_quiet(c); break; \
        case F_P:                                                                    \
            for (size_t i = 0; i < p->n; i++) d[i] = shmem_##N##_g(s + i, pe);       \
            break;                                                                   \
        case F_CTX_P:                                                                \
            for (size_t i = 0; i < p->n; i++) d[i] = shmem_ctx_##N##_g(c, s + i, pe); \
            break;                                                                   \
        case F_GEN_P:                                                                \
            for (size_t i = 0; i < p->n; i++) d[i] = shmem_g(s + i, pe);             \
            break;                                                                   \
        case F_GEN_CTX_P:                                                            \
            for (size_t i = 0; i < p->n; i++) d[i] = shmem_g(c, s + i, pe);          \
            break;                                                                   \
        case F_IPUT: shmem_##N##_iget(d, s, p->ds, p->ss, p->n, pe); break;          \
        case F_CTX_IPUT: shmem_ctx_##N##_iget(c, d, s, p->ds, p->ss, p->n, pe); break; \
        case F_GEN_IPUT: shmem_iget(d, s, p->ds, p->ss, p->n, pe); break;            \
        case F_GEN_CTX_IPUT: shmem_iget(c, d, s, p->ds, p->ss, p->n, pe); break;     \
        }                                                                            \
    }
SYMI_RMA_TYPES(DEF_TYPE)

/* long double keeps its value in the first 10 bytes on x86 (80-bit extended);
 * the rest is padding that a by-value p or g need not carry. */
#if LDBL_MANT_DIG == 64
#define LDBL_VALUE_BYTES 10
#else
#define LDBL_VALUE_BYTES sizeof(long double)
#endif
#define CMP_BYTES(T) _Generic((T)0, long double: LDBL_VALUE_BYTES, default: sizeof(T))

/* ---- the sized and mem forms: bytes, no typed p/g, no generic interface ---- */

static void fill_bytes(void *buf, size_t n, test_rng_t *r, size_t esize) {
    test_fill(buf, n * esize, r);
}

#define DEF_SIZED(S)                                                                 \
    static void fill_s##S(void *buf, size_t n, test_rng_t *r) { fill_bytes(buf, n, r, S / 8); } \
    static void put_s##S(int f, void *dv, const void *sv, const plan_t *p, int pe) { \
        char *d = (char *)dv + p->dbase * (S / 8);                                   \
        const char *s = (const char *)sv + p->sbase * (S / 8);                       \
        shmem_ctx_t c = SHMEM_CTX_DEFAULT;                                           \
        switch (f) {                                                                 \
        case F_PUT: shmem_put##S(d, s, p->n, pe); break;                             \
        case F_PUT_NBI: shmem_put##S##_nbi(d, s, p->n, pe); break;                   \
        case F_CTX_PUT: shmem_ctx_put##S(c, d, s, p->n, pe); break;                  \
        case F_CTX_PUT_NBI: shmem_ctx_put##S##_nbi(c, d, s, p->n, pe); break;        \
        case F_IPUT: shmem_iput##S(d, s, p->ds, p->ss, p->n, pe); break;             \
        case F_CTX_IPUT: shmem_ctx_iput##S(c, d, s, p->ds, p->ss, p->n, pe); break;  \
        }                                                                            \
    }                                                                                \
    static void get_s##S(int f, void *dv, const void *sv, const plan_t *p, int pe) { \
        char *d = (char *)dv + p->dbase * (S / 8);                                   \
        const char *s = (const char *)sv + p->sbase * (S / 8);                       \
        shmem_ctx_t c = SHMEM_CTX_DEFAULT;                                           \
        switch (f) {                                                                 \
        case F_PUT: shmem_get##S(d, s, p->n, pe); break;                             \
        case F_PUT_NBI: shmem_get##S##_nbi(d, s, p->n, pe); shmem_quiet(); break;    \
        case F_CTX_PUT: shmem_ctx_get##S(c, d, s, p->n, pe); break;                  \
        case F_CTX_PUT_NBI: shmem_ctx_get##S##_nbi(c, d, s, p->n, pe); shmem_ctx_quiet(c); break; \
        case F_IPUT: shmem_iget##S(d, s, p->ds, p->ss, p->n, pe); break;             \
        case F_CTX_IPUT: shmem_ctx_iget##S(c, d, s, p->ds, p->ss, p->n, pe); break;  \
        }                                                                            \
    }
SYMI_SIZES(DEF_SIZED)

static void fill_mem(void *buf, size_t n, test_rng_t *r) { fill_bytes(buf, n, r, 1); }
static void put_mem(int f, void *dv, const void *sv, const plan_t *p, int pe) {
    char *d = (char *)dv + p->dbase;
    const char *s = (const char *)sv + p->sbase;
    switch (f) {
    case F_PUT: shmem_putmem(d, s, p->n, pe); break;
    case F_PUT_NBI: shmem_putmem_nbi(d, s, p->n, pe); break;
    case F_CTX_PUT: shmem_ctx_putmem(SHMEM_CTX_DEFAULT, d, s, p->n, pe); break;
    case F_CTX_PUT_NBI: shmem_ctx_putmem_nbi(SHMEM_CTX_DEFAULT, d, s, p->n, pe); break;
    }
}
static void get_mem(int f, void *dv, const void *sv, const plan_t *p, int pe) {
    char *d = (char *)dv + p->dbase;
    const char *s = (const char *)sv + p->sbase;
    switch (f) {
    case F_PUT: shmem_getmem(d, s, p->n, pe); break;
    case F_PUT_NBI: shmem_getmem_nbi(d, s, p->n, pe); shmem_quiet(); break;
    case F_CTX_PUT: shmem_ctx_getmem(SHMEM_CTX_DEFAULT, d, s, p->n, pe); break;
    case F_CTX_PUT_NBI:
        shmem_ctx_getmem_nbi(SHMEM_CTX_DEFAULT, d, s, p->n, pe);
        shmem_ctx_quiet(SHMEM_CTX_DEFAULT);
        break;
    }
}

#define SIZED_FORMS                                                                  \
    ((1u << F_PUT) | (1u << F_PUT_NBI) | (1u << F_CTX_PUT) | (1u << F_CTX_PUT_NBI) |  \
     (1u << F_IPUT) | (1u << F_CTX_IPUT))
#define MEM_FORMS ((1u << F_PUT) | (1u << F_PUT_NBI) | (1u << F_CTX_PUT) | (1u << F_CTX_PUT_NBI))

#define TYPE_ENTRY(T, N) {#T, sizeof(T), CMP_BYTES(T), ALL_FORMS, fill_##N, put_##N, get_##N},
#define SIZED_ENTRY(S) {"sized " #S, S / 8, S / 8, SIZED_FORMS, fill_s##S, put_s##S, get_s##S},
static const type_t types[] = {
    SYMI_RMA_TYPES(TYPE_ENTRY) SIZED_ENTRY(8) SIZED_ENTRY(16) SIZED_ENTRY(32) SIZED_ENTRY(64)
    SIZED_ENTRY(128) {"mem", 1, 1, MEM_FORMS, fill_mem, put_mem, get_mem},
};
#define N_TYPES (sizeof types / sizeof types[0])

/* ---- plans and data, the same on every PE ---- */

static uint64_t stream_of(size_t type, int round, int form, int region) {
    return ((uint64_t)type << 32) ^ ((uint64_t)round << 16) ^ ((uint64_t)form << 8) ^
           (uint64_t)region;
}

static ptrdiff_t rand_stride(test_rng_t *r) {
    ptrdiff_t s = 1 + (ptrdiff_t)(test_next(r) % 3);
    return (test_next(r) & 1) ? -s : s;
}

/* Base index so that base + i*stride stays in [0, MAXN) for i < n. */
static size_t base_for(ptrdiff_t stride, size_t n) {
    return stride < 0 && n ? (size_t)(-stride) * (n - 1) : 0;
}

static plan_t make_plan(size_t type, int round, int form, int region, int is_get) {
    test_rng_t r = test_rng(seed, stream_of(type, round, form + is_get * N_FORMS, region) ^ 0x51a9);
    plan_t p = {0, 1, 1, 0, 0};
    if (form_single(form)) {
        p.n = 1 + (size_t)(test_next(&r) % 9);
        p.dbase = p.sbase = (size_t)(test_next(&r) % (MAXN - p.n));
    } else if (form_strided(form)) {
        p.ds = rand_stride(&r);
        p.ss = rand_stride(&r);
        ptrdiff_t wide = labs(p.ds) > labs(p.ss) ? labs(p.ds) : labs(p.ss);
        p.n = 1 + (size_t)(test_next(&r) % ((MAXN - 1) / (size_t)wide));
        if (test_next(&r) % 16 == 0) p.n = 0;
        p.dbase = base_for(p.ds, p.n);
        p.sbase = base_for(p.ss, p.n);
    } else {
        /* Over the 2 rounds x 4 regions x 4 forms x put/get of a type, every edge
         * size comes up; the other plans draw a size at random. */
        static const size_t edge[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 15, 16, 17, 31, 32, 33,
                                      63, 64, 65, 127, 128, 129, 255, 256, MAXN};
        size_t k = (size_t)(((round * 4 + region) * 4 + form % 4) * 2 + is_get);
        p.n = k < sizeof edge / sizeof edge[0] ? edge[k] : 1 + (size_t)(test_next(&r) % MAXN);
        p.dbase = p.sbase = (size_t)(test_next(&r) % (MAXN - p.n + 1));
    }
    return p;
}

/* The data `pe` sends (or serves) for this type, round, form: MAXN elements. */
static void make_data(const type_t *t, void *buf, int pe, size_t type, int round, int form,
                      int region) {
    test_rng_t r = test_rng(seed ^ (0x9E3779B97F4A7C15ull * (uint64_t)(pe + 1)),
                            stream_of(type, round, form, region));
    t->fill(buf, MAXN, &r);
}

/* Apply plan p to the image of a slot (payload starts at GUARD). */
static void apply(const type_t *t, unsigned char *slot, const unsigned char *src, const plan_t *p) {
    for (size_t i = 0; i < p->n; i++) {
        size_t di = GUARD + (size_t)((ptrdiff_t)p->dbase + (ptrdiff_t)i * p->ds);
        size_t si = (size_t)((ptrdiff_t)p->sbase + (ptrdiff_t)i * p->ss);
        memcpy(slot + di * t->size, src + si * t->size, t->size);
    }
}

static void dump_elem(char *out, size_t len, const unsigned char *e, size_t n) {
    size_t k = 0;
    for (size_t i = 0; i < n && k + 3 < len; i++) k += (size_t)snprintf(out + k, len - k, "%02x", e[i]);
}

/* Compare a slot with its expected image, element by element. The value bytes
 * of each element are compared (all bytes of guard elements). */
static void compare_slot(const type_t *t, const unsigned char *got, const unsigned char *want,
                         const plan_t *p, const char *form, const char *region, int from) {
    for (size_t e = 0; e < SLOT; e++) {
        int guard = e < GUARD || e >= GUARD + MAXN;
        size_t nb = guard ? t->size : t->cmp_bytes;
        if (memcmp(got + e * t->size, want + e * t->size, nb) == 0) continue;
        char g[80] = "", w[80] = "";
        dump_elem(g, sizeof g, got + e * t->size, nb);
        dump_elem(w, sizeof w, want + e * t->size, nb);
        CHECK(0, "%s %s into %s from PE %d: %s element %zd is %s, want %s (n=%zu, dst stride "
              "%td, src stride %td)", t->name, form, region, from,
              guard ? "guard" : "payload", (ptrdiff_t)e - GUARD, g, w, p->n, p->ds, p->ss);
    }
}

/* ---- one battery over a target region ---- */

typedef struct {
    const char *name;
    unsigned char *mem; /* N_FORMS slots of the largest type, symmetric */
} region_t;

#define REGION_BYTES (N_FORMS * SLOT * 16)

static long checked;

static void battery(const region_t *reg, int region_no, int round) {
    unsigned char *src = malloc(MAXN * 16), *img = malloc(SLOT * 16), *buf = malloc(SLOT * 16);
    CHECK(src && img && buf, "malloc");
    for (size_t ti = 0; ti < N_TYPES; ti++) {
        const type_t *t = &types[ti];
        size_t slot_bytes = SLOT * t->size;
        /* puts: poison my region, then my left neighbour writes into it */
        memset(reg->mem, POISON, N_FORMS * slot_bytes);
        shmem_barrier_all();
        for (int f = 0; f < N_FORMS; f++) {
            if (!(t->forms & (1u << f))) continue;
            plan_t p = make_plan(ti, round, f, region_no, 0);
            make_data(t, src, me, ti, round, f, region_no);
            t->put(f, reg->mem + f * slot_bytes + GUARD * t->size, src, &p, right);
        }
        shmem_barrier_all();
        for (int f = 0; f < N_FORMS; f++) {
            plan_t p = make_plan(ti, round, f, region_no, 0);
            memset(img, POISON, slot_bytes);
            if (t->forms & (1u << f)) {
                make_data(t, src, left, ti, round, f, region_no);
                apply(t, img, src, &p);
            }
            compare_slot(t, reg->mem + f * slot_bytes, img, &p, put_name[f], reg->name, left);
            checked += (long)p.n;
        }
        shmem_barrier_all(); /* everyone checked before the region is reused */

        /* gets: my region's first slot serves my data; I read my right neighbour's */
        make_data(t, reg->mem + GUARD * t->size, me, ti, round, N_FORMS, region_no);
        shmem_barrier_all();
        for (int f = 0; f < N_FORMS; f++) {
            if (!(t->forms & (1u << f))) continue;
            plan_t p = make_plan(ti, round, f, region_no, 1);
            memset(buf, POISON, slot_bytes);
            t->get(f, buf + GUARD * t->size, reg->mem + GUARD * t->size, &p, right);
            memset(img, POISON, slot_bytes);
            make_data(t, src, right, ti, round, N_FORMS, region_no);
            /* a get's plan reads the source at sbase and writes the private buffer at dbase */
            apply(t, img, src, &p);
            compare_slot(t, buf, img, &p, get_name[f], reg->name, right);
            checked += (long)p.n;
        }
        shmem_barrier_all();
    }
    free(src);
    free(img);
    free(buf);
}

/* ---- large transfers: many pages, odd lengths, odd offsets ---- */

static void large(unsigned char *sym, size_t cap, const char *where) {
    size_t lens[] = {cap / 2 + 3, 65537, 4099};
    unsigned char *src = malloc(cap), *want = malloc(cap);
    CHECK(src && want, "malloc");
    for (size_t k = 0; k < sizeof lens / sizeof lens[0]; k++) {
        size_t len = lens[k], off = 1 + k * 7;
        test_rng_t r = test_rng(seed ^ (uint64_t)(me + 1) * 77, 900 + k);
        test_fill(src, len, &r);
        memset(sym, POISON, cap);
        shmem_barrier_all();
        shmem_putmem(sym + off, src, len, right);
        shmem_barrier_all();
        test_rng_t rl = test_rng(seed ^ (uint64_t)(left + 1) * 77, 900 + k);
        test_fill(want, len, &rl);
        for (size_t i = 0; i < cap; i++) {
            unsigned char w = (i >= off && i < off + len) ? want[i - off] : POISON;
            CHECK(sym[i] == w, "putmem of %zu bytes into %s from PE %d: byte %zd is 0x%02x, "
                  "want 0x%02x", len, where, left, (ptrdiff_t)i - (ptrdiff_t)off, sym[i], w);
        }
        /* and read it back from the neighbour: it holds what its left (me) sent */
        memset(want, 0, cap);
        shmem_getmem(want, sym + off, len, right);
        CHECK(memcmp(want, src, len) == 0, "getmem of %zu bytes from %s on PE %d differs", len,
              where, right);
        shmem_barrier_all();
        checked += (long)len;
    }
    free(src);
    free(want);
}

/* ---- named globals and statics ---- */

int g_int_data = 42;                   /* .data */
double g_double_bss;                   /* .bss */
long double g_ldouble;                 /* .bss, 16 bytes */
static short s_short_arr[5] = {1, 2, 3, 4, 5};
_Alignas(64) unsigned char g_bss[REGION_BYTES];       /* a battery target */
_Alignas(64) unsigned char g_data[REGION_BYTES] = {1}; /* ditto, initialized */
_Alignas(64) unsigned char g_large[1 << 18];

static int int_of(int pe) { return (int)((seed >> 3) & 0xffffff) + 1000 * pe; }

static void named_globals(void) {
    static long s_counter[3] = {7, 8, 9}; /* a function-local static */
    int iv = int_of(me);
    shmem_barrier_all();
    shmem_int_p(&g_int_data, iv, right);
    shmem_double_p(&g_double_bss, 0.5 + me, right);
    shmem_longdouble_p(&g_ldouble, 1.25L + me, right);
    short sv[5] = {(short)(10 * me), (short)(10 * me + 1), (short)(10 * me + 2),
                   (short)(10 * me + 3), (short)(10 * me + 4)};
    shmem_short_iput(s_short_arr + 4, sv, -1, 1, 5, right); /* reversed */
    long lv[3] = {100L * me, 100L * me + 1, 100L * me + 2};
    shmem_long_put(s_counter, lv, 3, right);
    shmem_barrier_all();
    CHECK(g_int_data == int_of(left), "global int: %d, want %d", g_int_data, int_of(left));
    CHECK(g_double_bss == 0.5 + left, "global double: %g, want %g", g_double_bss, 0.5 + left);
    CHECK(g_ldouble == 1.25L + left, "global long double: %Lg", g_ldouble);
    for (int i = 0; i < 5; i++)
        CHECK(s_short_arr[i] == 10 * left + (4 - i), "static short[%d]: %d, want %d", i,
              s_short_arr[i], 10 * left + (4 - i));
    for (int i = 0; i < 3; i++)
        CHECK(s_counter[i] == 100L * left + i, "function static long[%d]: %ld", i, s_counter[i]);
    /* and read them remotely */
    CHECK(shmem_int_g(&g_int_data, right) == iv, "g of the neighbour's global int");
    short back[5];
    shmem_short_iget(back, s_short_arr, 1, 1, 5, right);
    for (int i = 0; i < 5; i++) CHECK(back[i] == 10 * me + (4 - i), "iget of a static short[%d]", i);
    shmem_barrier_all();
}

int main(void) {
    seed = shmem_test_start(NAME);
    me = shmem_my_pe();
    npes = shmem_n_pes();
    right = shmem_test_right();
    left = shmem_test_left();

    static _Alignas(64) unsigned char s_region[REGION_BYTES] = {2}; /* function static, .data */
    region_t regions[] = {
        {"the heap", shmem_malloc(REGION_BYTES)},
        {"a global array", g_bss},
        {"a global initialized array", g_data},
        {"a function-static array", s_region},
    };
    CHECK(regions[0].mem != NULL, "shmem_malloc(%d)", REGION_BYTES);
    for (int round = 0; round < 2; round++)
        for (int g = 0; g < 4; g++) battery(&regions[g], g, round);

    size_t big = (4u << 20) + 64;
    unsigned char *heap_big = shmem_malloc(big);
    CHECK(heap_big != NULL, "shmem_malloc(%zu)", big);
    large(heap_big, big, "the heap");
    large(g_large, sizeof g_large, "a global array");
    named_globals();
    shmem_free(heap_big);
    shmem_free(regions[0].mem);

    char what[160];
    snprintf(what, sizeof what, "%zu types x 16 forms, 4 target regions, %ld elements checked "
             "on PE 0", N_TYPES, checked);
    shmem_test_pass(NAME, what);
    shmem_finalize();
    return 0;
}
