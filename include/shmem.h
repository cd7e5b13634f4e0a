/*
 * shmem.h — the OpenSHMEM 1.5 C API, as implemented by symtrain's symshmem.
 *
 * Every name here is the standard's; the specification is the documentation.
 * The typed families (one function per element type) are declared from the
 * type tables below, so the tables are the single list of what exists:
 *
 *   SYMI_RMA_TYPES        put/get/p/g/iput/iget/_nbi, put_signal, broadcast,
 *                         collect, fcollect, alltoall(s)
 *   SYMI_AMO_STD_TYPES    compare_swap, fetch_inc, inc, fetch_add, add
 *   SYMI_AMO_EXT_TYPES    fetch, set, swap (the standard types plus float, double)
 *   SYMI_AMO_BIT_TYPES    fetch_and/and, fetch_or/or, fetch_xor/xor
 *   SYMI_P2P_TYPES        wait_until*, test*
 *   SYMI_REDUCE_*_TYPES   team reductions; SYMI_TOALL_*_TYPES the deprecated _to_all
 *
 * C11 generic selection (shmem_put(dest, src, n, pe), shmem_put(ctx, dest, ...),
 * shmem_atomic_fetch_add(...), shmem_sum_reduce(...)) lists each distinct C type
 * once; the fixed-width typedefs reach the same functions through their base types.
 *
 * Names beginning SYMI_ or symi_ are this header's machinery, not API.
 */
#ifndef SHMEM_H
#define SHMEM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- constants ---- */

#define SHMEM_MAJOR_VERSION 1
#define SHMEM_MINOR_VERSION 5
#define SHMEM_MAX_NAME_LEN 256
#define SHMEM_VENDOR_STRING "symtrain symshmem"
#define _SHMEM_MAJOR_VERSION SHMEM_MAJOR_VERSION
#define _SHMEM_MINOR_VERSION SHMEM_MINOR_VERSION
#define _SHMEM_MAX_NAME_LEN SHMEM_MAX_NAME_LEN

enum {
    SHMEM_THREAD_SINGLE = 0,
    SHMEM_THREAD_FUNNELED = 1,
    SHMEM_THREAD_SERIALIZED = 2,
    SHMEM_THREAD_MULTIPLE = 3
};

enum { SHMEM_CMP_EQ = 0, SHMEM_CMP_NE, SHMEM_CMP_GT, SHMEM_CMP_GE, SHMEM_CMP_LT, SHMEM_CMP_LE };
#define _SHMEM_CMP_EQ SHMEM_CMP_EQ
#define _SHMEM_CMP_NE SHMEM_CMP_NE
#define _SHMEM_CMP_GT SHMEM_CMP_GT
#define _SHMEM_CMP_GE SHMEM_CMP_GE
#define _SHMEM_CMP_LT SHMEM_CMP_LT
#define _SHMEM_CMP_LE SHMEM_CMP_LE

enum { SHMEM_SIGNAL_SET = 0, SHMEM_SIGNAL_ADD = 1 };

/* shmem_malloc_with_hints */
#define SHMEM_MALLOC_ATOMICS_REMOTE (1L << 0)
#define SHMEM_MALLOC_SIGNAL_REMOTE (1L << 1)

/* shmem_ctx_create options */
#define SHMEM_CTX_PRIVATE (1L << 0)
#define SHMEM_CTX_SERIALIZED (1L << 1)
#define SHMEM_CTX_NOSTORE (1L << 2)

/* shmem_team_config_t mask bits */
#define SHMEM_TEAM_NUM_CONTEXTS (1L << 0)

/* The deprecated active-set collectives' work arrays. pSync arrays must be
 * filled with SHMEM_SYNC_VALUE before first use and are left so on return.
 * The value is 0, as in the other implementations, so the many programs that
 * leave a static pSync array zero-initialised still work. */
#define SHMEM_SYNC_VALUE 0L
#define SHMEM_BARRIER_SYNC_SIZE 64
#define SHMEM_BCAST_SYNC_SIZE 64
#define SHMEM_COLLECT_SYNC_SIZE 64
#define SHMEM_REDUCE_SYNC_SIZE 64
#define SHMEM_ALLTOALL_SYNC_SIZE 64
#define SHMEM_ALLTOALLS_SYNC_SIZE 64
#define SHMEM_SYNC_SIZE 64
#define SHMEM_REDUCE_MIN_WRKDATA_SIZE 1
#define _SHMEM_SYNC_VALUE SHMEM_SYNC_VALUE
#define _SHMEM_BARRIER_SYNC_SIZE SHMEM_BARRIER_SYNC_SIZE
#define _SHMEM_BCAST_SYNC_SIZE SHMEM_BCAST_SYNC_SIZE
#define _SHMEM_COLLECT_SYNC_SIZE SHMEM_COLLECT_SYNC_SIZE
#define _SHMEM_REDUCE_SYNC_SIZE SHMEM_REDUCE_SYNC_SIZE
#define _SHMEM_ALLTOALL_SYNC_SIZE SHMEM_ALLTOALL_SYNC_SIZE
#define _SHMEM_ALLTOALLS_SYNC_SIZE SHMEM_ALLTOALLS_SYNC_SIZE
#define _SHMEM_SYNC_SIZE SHMEM_SYNC_SIZE
#define _SHMEM_REDUCE_MIN_WRKDATA_SIZE SHMEM_REDUCE_MIN_WRKDATA_SIZE

/* ---- handles ---- */

typedef struct symi_ctx *shmem_ctx_t;
typedef struct symi_team *shmem_team_t;
typedef struct {
    int num_contexts;
} shmem_team_config_t;

extern shmem_ctx_t const symi_ctx_default;
extern shmem_team_t const symi_team_world;
extern shmem_team_t const symi_team_shared;
#define SHMEM_CTX_DEFAULT symi_ctx_default
#define SHMEM_CTX_INVALID ((shmem_ctx_t)0)
#define SHMEM_TEAM_WORLD symi_team_world
#define SHMEM_TEAM_SHARED symi_team_shared
#define SHMEM_TEAM_INVALID ((shmem_team_t)0)

/* ---- type tables ---- */

#define SYMI_AMO_STD_TYPES(X)                                                        \
    X(int, int) X(long, long) X(long long, longlong) X(unsigned int, uint)           \
    X(unsigned long, ulong) X(unsigned long long, ulonglong) X(int32_t, int32)       \
    X(int64_t, int64) X(uint32_t, uint32) X(uint64_t, uint64) X(size_t, size)        \
    X(ptrdiff_t, ptrdiff)

#define SYMI_AMO_EXT_TYPES(X) X(float, float) X(double, double) SYMI_AMO_STD_TYPES(X)

#define SYMI_AMO_BIT_TYPES(X)                                                        \
    X(unsigned int, uint) X(unsigned long, ulong) X(unsigned long long, ulonglong)   \
    X(int32_t, int32) X(int64_t, int64) X(uint32_t, uint32) X(uint64_t, uint64)

#define SYMI_RMA_TYPES(X)                                                            \
    X(float, float) X(double, double) X(long double, longdouble) X(char, char)       \
    X(signed char, schar) X(short, short) X(int, int) X(long, long)                  \
    X(long long, longlong) X(unsigned char, uchar) X(unsigned short, ushort)         \
    X(unsigned int, uint) X(unsigned long, ulong) X(unsigned long long, ulonglong)   \
    X(int8_t, int8) X(int16_t, int16) X(int32_t, int32) X(int64_t, int64)            \
    X(uint8_t, uint8) X(uint16_t, uint16) X(uint32_t, uint32) X(uint64_t, uint64)    \
    X(size_t, size) X(ptrdiff_t, ptrdiff)

#define SYMI_P2P_TYPES(X)                                                            \
    X(short, short) X(int, int) X(long, long) X(long long, longlong)                 \
    X(unsigned short, ushort) X(unsigned int, uint) X(unsigned long, ulong)          \
    X(unsigned long long, ulonglong) X(int32_t, int32) X(int64_t, int64)             \
    X(uint32_t, uint32) X(uint64_t, uint64) X(size_t, size) X(ptrdiff_t, ptrdiff)

#define SYMI_SIZES(X) X(8) X(16) X(32) X(64) X(128)

#define SYMI_REDUCE_BIT_TYPES(X)                                                     \
    X(unsigned char, uchar) X(unsigned short, ushort) X(unsigned int, uint)          \
    X(unsigned long, ulong) X(unsigned long long, ulonglong) X(int8_t, int8)         \
    X(int16_t, int16) X(int32_t, int32) X(int64_t, int64) X(uint8_t, uint8)          \
    X(uint16_t, uint16) X(uint32_t, uint32) X(uint64_t, uint64) X(size_t, size)

#define SYMI_REDUCE_MINMAX_TYPES(X)                                                  \
    X(char, char) X(signed char, schar) X(short, short) X(int, int) X(long, long)    \
    X(long long, longlong) X(ptrdiff_t, ptrdiff) X(unsigned char, uchar)             \
    X(unsigned short, ushort) X(unsigned int, uint) X(unsigned long, ulong)          \
    X(unsigned long long, ulonglong) X(int8_t, int8) X(int16_t, int16)               \
    X(int32_t, int32) X(int64_t, int64) X(uint8_t, uint8) X(uint16_t, uint16)        \
    X(uint32_t, uint32) X(uint64_t, uint64) X(size_t, size) X(float, float)          \
    X(double, double) X(long double, longdouble)

#define SYMI_REDUCE_ARITH_TYPES(X)                                                   \
    SYMI_REDUCE_MINMAX_TYPES(X) X(float _Complex, complexf) X(double _Complex, complexd)

#define SYMI_TOALL_BIT_TYPES(X) X(short, short) X(int, int) X(long, long) X(long long, longlong)
#define SYMI_TOALL_MINMAX_TYPES(X)                                                   \
    SYMI_TOALL_BIT_TYPES(X) X(float, float) X(double, double) X(long double, longdouble)
#define SYMI_TOALL_ARITH_TYPES(X)                                                    \
    SYMI_TOALL_MINMAX_TYPES(X) X(float _Complex, complexf) X(double _Complex, complexd)

/* ---- library setup, exit and query ---- */

void shmem_init(void);
int shmem_init_thread(int requested, int *provided);
void shmem_query_thread(int *provided);
void shmem_finalize(void);
void shmem_global_exit(int status);
int shmem_my_pe(void);
int shmem_n_pes(void);
int shmem_pe_accessible(int pe);
int shmem_addr_accessible(const void *addr, int pe);
void *shmem_ptr(const void *dest, int pe);
void *shmem_team_ptr(shmem_team_t team, const void *dest, int pe); /* OpenSHMEM 1.6 */
void shmem_info_get_version(int *major, int *minor);
void shmem_info_get_name(char *name);
void shmem_pcontrol(const int level, ...);

/* deprecated */
void start_pes(int npes);
int _my_pe(void);
int _num_pes(void);

/* ---- symmetric heap ---- */

void *shmem_malloc(size_t size);
void *shmem_calloc(size_t count, size_t size);
void *shmem_align(size_t alignment, size_t size);
void *shmem_realloc(void *ptr, size_t size);
void shmem_free(void *ptr);
void *shmem_malloc_with_hints(size_t size, long hints);

/* deprecated */
void *shmalloc(size_t size);
void shfree(void *ptr);
void *shrealloc(void *ptr, size_t size);
void *shmemalign(size_t alignment, size_t size);

/* ---- teams ---- */

int shmem_team_my_pe(shmem_team_t team);
int shmem_team_n_pes(shmem_team_t team);
int shmem_team_get_config(shmem_team_t team, long config_mask, shmem_team_config_t *config);
int shmem_team_translate_pe(shmem_team_t src_team, int src_pe, shmem_team_t dest_team);
int shmem_team_split_strided(shmem_team_t parent_team, int start, int stride, int size,
                             const shmem_team_config_t *config, long config_mask,
                             shmem_team_t *new_team);
int shmem_team_split_2d(shmem_team_t parent_team, int xrange,
                        const shmem_team_config_t *xaxis_config, long xaxis_mask,
                        shmem_team_t *xaxis_team, const shmem_team_config_t *yaxis_config,
                        long yaxis_mask, shmem_team_t *yaxis_team);
void shmem_team_destroy(shmem_team_t team);

/* ---- contexts ---- */

int shmem_ctx_create(long options, shmem_ctx_t *ctx);
int shmem_team_create_ctx(shmem_team_t team, long options, shmem_ctx_t *ctx);
void shmem_ctx_destroy(shmem_ctx_t ctx);
int shmem_ctx_get_team(shmem_ctx_t ctx, shmem_team_t *team);

/* ---- remote memory access ---- */

#define SYMI_DECL_RMA(T, N)                                                          \
    void shmem_##N##_put(T *dest, const T *source, size_t nelems, int pe);           \
    void shmem_ctx_##N##_put(shmem_ctx_t ctx, T *dest, const T *source, size_t nelems, \
                             int pe);                                                \
    void shmem_##N##_put_nbi(T *dest, const T *source, size_t nelems, int pe);       \
    void shmem_ctx_##N##_put_nbi(shmem_ctx_t ctx, T *dest, const T *source,          \
                                 size_t nelems, int pe);                             \
    void shmem_##N##_p(T *dest, T value, int pe);                                    \
    void shmem_ctx_##N##_p(shmem_ctx_t ctx, T *dest, T value, int pe);               \
    void shmem_##N##_iput(T *dest, const T *source, ptrdiff_t dst, ptrdiff_t sst,    \
                          size_t nelems, int pe);                                    \
    void shmem_ctx_##N##_iput(shmem_ctx_t ctx, T *dest, const T *source, ptrdiff_t dst, \
                              ptrdiff_t sst, size_t nelems, int pe);                 \
    void shmem_##N##_get(T *dest, const T *source, size_t nelems, int pe);           \
    void shmem_ctx_##N##_get(shmem_ctx_t ctx, T *dest, const T *source, size_t nelems, \
                             int pe);                                                \
    void shmem_##N##_get_nbi(T *dest, const T *source, size_t nelems, int pe);       \
    void shmem_ctx_##N##_get_nbi(shmem_ctx_t ctx, T *dest, const T *source,          \
                                 size_t nelems, int pe);                             \
    T shmem_##N##_g(const T *source, int pe);                                        \
    T shmem_ctx_##N##_g(shmem_ctx_t ctx, const T *source, int pe);                   \
    void shmem_##N##_iget(T *dest, const T *source, ptrdiff_t dst, ptrdiff_t sst,    \
                          size_t nelems, int pe);                                    \
    void shmem_ctx_##N##_iget(shmem_ctx_t ctx, T *dest, const T *source, ptrdiff_t dst, \
                              ptrdiff_t sst, size_t nelems, int pe);                 \
    void shmem_##N##_put_signal(T *dest, const T *source, size_t nelems,             \
                                uint64_t *sig_addr, uint64_t signal, int sig_op, int pe); \
    void shmem_ctx_##N##_put_signal(shmem_ctx_t ctx, T *dest, const T *source,       \
                                    size_t nelems, uint64_t *sig_addr, uint64_t signal, \
                                    int sig_op, int pe);                             \
    void shmem_##N##_put_signal_nbi(T *dest, const T *source, size_t nelems,         \
                                    uint64_t *sig_addr, uint64_t signal, int sig_op,  \
                                    int pe);                                         \
    void shmem_ctx_##N##_put_signal_nbi(shmem_ctx_t ctx, T *dest, const T *source,   \
                                        size_t nelems, uint64_t *sig_addr,           \
                                        uint64_t signal, int sig_op, int pe);
SYMI_RMA_TYPES(SYMI_DECL_RMA)

#define SYMI_DECL_SIZED(S)                                                           \
    void shmem_put##S(void *dest, const void *source, size_t nelems, int pe);        \
    void shmem_ctx_put##S(shmem_ctx_t ctx, void *dest, const void *source,           \
                          size_t nelems, int pe);                                    \
    void shmem_put##S##_nbi(void *dest, const void *source, size_t nelems, int pe);  \
    void shmem_ctx_put##S##_nbi(shmem_ctx_t ctx, void *dest, const void *source,     \
                                size_t nelems, int pe);                              \
    void shmem_iput##S(void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, \
                       size_t nelems, int pe);                                       \
    void shmem_ctx_iput##S(shmem_ctx_t ctx, void *dest, const void *source,          \
                           ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe);     \
    void shmem_get##S(void *dest, const void *source, size_t nelems, int pe);        \
    void shmem_ctx_get##S(shmem_ctx_t ctx, void *dest, const void *source,           \
                          size_t nelems, int pe);                                    \
    void shmem_get##S##_nbi(void *dest, const void *source, size_t nelems, int pe);  \
    void shmem_ctx_get##S##_nbi(shmem_ctx_t ctx, void *dest, const void *source,     \
                                size_t nelems, int pe);                              \
    void shmem_iget##S(void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, \
                       size_t nelems, int pe);                                       \
    void shmem_ctx_iget##S(shmem_ctx_t ctx, void *dest, const void *source,          \
                           ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe);     \
    void shmem_put##S##_signal(void *dest, const void *source, size_t nelems,        \
                               uint64_t *sig_addr, uint64_t signal, int sig_op, int pe); \
    void shmem_ctx_put##S##_signal(shmem_ctx_t ctx, void *dest, const void *source,  \
                                   size_t nelems, uint64_t *sig_addr, uint64_t signal, \
                                   int sig_op, int pe);                              \
    void shmem_put##S##_signal_nbi(void *dest, const void *source, size_t nelems,    \
                                   uint64_t *sig_addr, uint64_t signal, int sig_op,   \
                                   int pe);                                          \
    void shmem_ctx_put##S##_signal_nbi(shmem_ctx_t ctx, void *dest, const void *source, \
                                       size_t nelems, uint64_t *sig_addr,            \
                                       uint64_t signal, int sig_op, int pe);
SYMI_SIZES(SYMI_DECL_SIZED)

void shmem_putmem(void *dest, const void *source, size_t nelems, int pe);
void shmem_ctx_putmem(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe);
void shmem_putmem_nbi(void *dest, const void *source, size_t nelems, int pe);
void shmem_ctx_putmem_nbi(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems,
                          int pe);
void shmem_getmem(void *dest, const void *source, size_t nelems, int pe);
void shmem_ctx_getmem(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe);
void shmem_getmem_nbi(void *dest, const void *source, size_t nelems, int pe);
void shmem_ctx_getmem_nbi(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems,
                          int pe);
void shmem_putmem_signal(void *dest, const void *source, size_t nelems, uint64_t *sig_addr,
                         uint64_t signal, int sig_op, int pe);
void shmem_ctx_putmem_signal(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems,
                             uint64_t *sig_addr, uint64_t signal, int sig_op, int pe);
void shmem_putmem_signal_nbi(void *dest, const void *source, size_t nelems, uint64_t *sig_addr,
                             uint64_t signal, int sig_op, int pe);
void shmem_ctx_putmem_signal_nbi(shmem_ctx_t ctx, void *dest, const void *source,
                                 size_t nelems, uint64_t *sig_addr, uint64_t signal,
                                 int sig_op, int pe);

/* ---- signals ---- */

uint64_t shmem_signal_fetch(const uint64_t *sig_addr);
uint64_t shmem_signal_wait_until(uint64_t *sig_addr, int cmp, uint64_t cmp_value);

/* ---- atomic memory operations ---- */

#define SYMI_DECL_AMO_EXT(T, N)                                                      \
    T shmem_##N##_atomic_fetch(const T *source, int pe);                             \
    T shmem_ctx_##N##_atomic_fetch(shmem_ctx_t ctx, const T *source, int pe);        \
    void shmem_##N##_atomic_fetch_nbi(T *fetch, const T *source, int pe);            \
    void shmem_ctx_##N##_atomic_fetch_nbi(shmem_ctx_t ctx, T *fetch, const T *source, \
                                          int pe);                                   \
    void shmem_##N##_atomic_set(T *dest, T value, int pe);                           \
    void shmem_ctx_##N##_atomic_set(shmem_ctx_t ctx, T *dest, T value, int pe);      \
    T shmem_##N##_atomic_swap(T *dest, T value, int pe);                             \
    T shmem_ctx_##N##_atomic_swap(shmem_ctx_t ctx, T *dest, T value, int pe);        \
    void shmem_##N##_atomic_swap_nbi(T *fetch, T *dest, T value, int pe);            \
    void shmem_ctx_##N##_atomic_swap_nbi(shmem_ctx_t ctx, T *fetch, T *dest, T value, \
                                         int pe);
SYMI_AMO_EXT_TYPES(SYMI_DECL_AMO_EXT)

#define SYMI_DECL_AMO_STD(T, N)                                                      \
    T shmem_##N##_atomic_compare_swap(T *dest, T cond, T value, int pe);             \
    T shmem_ctx_##N##_atomic_compare_swap(shmem_ctx_t ctx, T *dest, T cond, T value, \
                                          int pe);                                   \
    void shmem_##N##_atomic_compare_swap_nbi(T *fetch, T *dest, T cond, T value, int pe); \
    void shmem_ctx_##N##_atomic_compare_swap_nbi(shmem_ctx_t ctx, T *fetch, T *dest, \
                                                 T cond, T value, int pe);           \
    T shmem_##N##_atomic_fetch_inc(T *dest, int pe);                                 \
    T shmem_ctx_##N##_atomic_fetch_inc(shmem_ctx_t ctx, T *dest, int pe);            \
    void shmem_##N##_atomic_fetch_inc_nbi(T *fetch, T *dest, int pe);                \
    void shmem_ctx_##N##_atomic_fetch_inc_nbi(shmem_ctx_t ctx, T *fetch, T *dest, int pe); \
    void shmem_##N##_atomic_inc(T *dest, int pe);                                    \
    void shmem_ctx_##N##_atomic_inc(shmem_ctx_t ctx, T *dest, int pe);               \
    T shmem_##N##_atomic_fetch_add(T *dest, T value, int pe);                        \
    T shmem_ctx_##N##_atomic_fetch_add(shmem_ctx_t ctx, T *dest, T value, int pe);   \
    void shmem_##N##_atomic_fetch_add_nbi(T *fetch, T *dest, T value, int pe);       \
    void shmem_ctx_##N##_atomic_fetch_add_nbi(shmem_ctx_t ctx, T *fetch, T *dest, T value, \
                                              int pe);                               \
    void shmem_##N##_atomic_add(T *dest, T value, int pe);                           \
    void shmem_ctx_##N##_atomic_add(shmem_ctx_t ctx, T *dest, T value, int pe);
SYMI_AMO_STD_TYPES(SYMI_DECL_AMO_STD)

#define SYMI_DECL_AMO_BIT_OP(T, N, OP)                                               \
    T shmem_##N##_atomic_fetch_##OP(T *dest, T value, int pe);                       \
    T shmem_ctx_##N##_atomic_fetch_##OP(shmem_ctx_t ctx, T *dest, T value, int pe);  \
    void shmem_##N##_atomic_fetch_##OP##_nbi(T *fetch, T *dest, T value, int pe);    \
    void shmem_ctx_##N##_atomic_fetch_##OP##_nbi(shmem_ctx_t ctx, T *fetch, T *dest, \
                                                 T value, int pe);                   \
    void shmem_##N##_atomic_##OP(T *dest, T value, int pe);                          \
    void shmem_ctx_##N##_atomic_##OP(shmem_ctx_t ctx, T *dest, T value, int pe);
#define SYMI_DECL_AMO_BIT(T, N)                                                      \
    SYMI_DECL_AMO_BIT_OP(T, N, and) SYMI_DECL_AMO_BIT_OP(T, N, or)                   \
    SYMI_DECL_AMO_BIT_OP(T, N, xor)
SYMI_AMO_BIT_TYPES(SYMI_DECL_AMO_BIT)

/* deprecated atomic names */
#define SYMI_DECL_AMO_OLD_STD(T, N)                                                  \
    T shmem_##N##_cswap(T *dest, T cond, T value, int pe);                           \
    T shmem_##N##_finc(T *dest, int pe);                                             \
    void shmem_##N##_inc(T *dest, int pe);                                           \
    T shmem_##N##_fadd(T *dest, T value, int pe);                                    \
    void shmem_##N##_add(T *dest, T value, int pe);
#define SYMI_DECL_AMO_OLD_EXT(T, N)                                                  \
    T shmem_##N##_fetch(const T *source, int pe);                                    \
    void shmem_##N##_set(T *dest, T value, int pe);                                  \
    T shmem_##N##_swap(T *dest, T value, int pe);
#define SYMI_AMO_OLD_STD_TYPES(X) X(int, int) X(long, long) X(long long, longlong)
#define SYMI_AMO_OLD_EXT_TYPES(X) SYMI_AMO_OLD_STD_TYPES(X) X(float, float) X(double, double)
SYMI_AMO_OLD_STD_TYPES(SYMI_DECL_AMO_OLD_STD)
SYMI_AMO_OLD_EXT_TYPES(SYMI_DECL_AMO_OLD_EXT)
/* The 1.0 untyped swap on a long. In C11 shmem_swap is also the 1.3 generic
 * (int, long, long long, float, double): see the generic section. */
long shmem_swap(long *dest, long value, int pe);

/* ---- point-to-point synchronisation ---- */

#define SYMI_DECL_P2P(T, N)                                                          \
    void shmem_##N##_wait_until(T *ivar, int cmp, T cmp_value);                      \
    void shmem_##N##_wait_until_all(T *ivars, size_t nelems, const int *status, int cmp, \
                                    T cmp_value);                                    \
    size_t shmem_##N##_wait_until_any(T *ivars, size_t nelems, const int *status,    \
                                      int cmp, T cmp_value);                         \
    size_t shmem_##N##_wait_until_some(T *ivars, size_t nelems, size_t *indices,     \
                                       const int *status, int cmp, T cmp_value);     \
    void shmem_##N##_wait_until_all_vector(T *ivars, size_t nelems, const int *status, \
                                           int cmp, T *cmp_values);                  \
    size_t shmem_##N##_wait_until_any_vector(T *ivars, size_t nelems, const int *status, \
                                             int cmp, T *cmp_values);                \
    size_t shmem_##N##_wait_until_some_vector(T *ivars, size_t nelems, size_t *indices, \
                                              const int *status, int cmp, T *cmp_values); \
    int shmem_##N##_test(T *ivar, int cmp, T cmp_value);                             \
    int shmem_##N##_test_all(T *ivars, size_t nelems, const int *status, int cmp,    \
                             T cmp_value);                                           \
    size_t shmem_##N##_test_any(T *ivars, size_t nelems, const int *status, int cmp, \
                                T cmp_value);                                        \
    size_t shmem_##N##_test_some(T *ivars, size_t nelems, size_t *indices,           \
                                 const int *status, int cmp, T cmp_value);           \
    int shmem_##N##_test_all_vector(T *ivars, size_t nelems, const int *status, int cmp, \
                                    T *cmp_values);                                  \
    size_t shmem_##N##_test_any_vector(T *ivars, size_t nelems, const int *status,   \
                                       int cmp, T *cmp_values);                      \
    size_t shmem_##N##_test_some_vector(T *ivars, size_t nelems, size_t *indices,    \
                                        const int *status, int cmp, T *cmp_values);
SYMI_P2P_TYPES(SYMI_DECL_P2P)

/* deprecated: wait while *ivar == cmp_value. The flag is volatile, as in
 * OpenSHMEM 1.3 where these were defined: old programs pass volatile flags. */
#define SYMI_DECL_P2P_OLD(T, N) void shmem_##N##_wait(volatile T *ivar, T cmp_value);
SYMI_TOALL_BIT_TYPES(SYMI_DECL_P2P_OLD)
/* The untyped forms on a long (OpenSHMEM 1.0 - 1.2); in C11 shmem_wait and
 * shmem_wait_until are generics over the types (see the generic section). */
void shmem_wait(volatile long *ivar, long cmp_value);
void shmem_wait_until(long *ivar, int cmp, long cmp_value);

/* ---- memory ordering ---- */

void shmem_fence(void);
void shmem_ctx_fence(shmem_ctx_t ctx);
void shmem_quiet(void);
void shmem_ctx_quiet(shmem_ctx_t ctx);

/* ---- distributed locks ---- */

void shmem_set_lock(long *lock);
void shmem_clear_lock(long *lock);
int shmem_test_lock(long *lock);

/* ---- collectives on teams ---- */

void shmem_barrier_all(void);
void shmem_sync_all(void);
int shmem_team_sync(shmem_team_t team);

#define SYMI_DECL_COLL(T, N)                                                         \
    int shmem_##N##_broadcast(shmem_team_t team, T *dest, const T *source, size_t nelems, \
                              int PE_root);                                          \
    int shmem_##N##_collect(shmem_team_t team, T *dest, const T *source, size_t nelems); \
    int shmem_##N##_fcollect(shmem_team_t team, T *dest, const T *source, size_t nelems); \
    int shmem_##N##_alltoall(shmem_team_t team, T *dest, const T *source, size_t nelems); \
    int shmem_##N##_alltoalls(shmem_team_t team, T *dest, const T *source, ptrdiff_t dst, \
                              ptrdiff_t sst, size_t nelems);
SYMI_RMA_TYPES(SYMI_DECL_COLL)
int shmem_broadcastmem(shmem_team_t team, void *dest, const void *source, size_t nelems,
                       int PE_root);
int shmem_collectmem(shmem_team_t team, void *dest, const void *source, size_t nelems);
int shmem_fcollectmem(shmem_team_t team, void *dest, const void *source, size_t nelems);
int shmem_alltoallmem(shmem_team_t team, void *dest, const void *source, size_t nelems);
int shmem_alltoallsmem(shmem_team_t team, void *dest, const void *source, ptrdiff_t dst,
                       ptrdiff_t sst, size_t nelems);

#define SYMI_DECL_REDUCE(T, N, OP)                                                   \
    int shmem_##N##_##OP##_reduce(shmem_team_t team, T *dest, const T *source,       \
                                  size_t nreduce);
#define SYMI_DECL_REDUCE_BIT(T, N)                                                   \
    SYMI_DECL_REDUCE(T, N, and) SYMI_DECL_REDUCE(T, N, or) SYMI_DECL_REDUCE(T, N, xor)
#define SYMI_DECL_REDUCE_MINMAX(T, N) SYMI_DECL_REDUCE(T, N, max) SYMI_DECL_REDUCE(T, N, min)
#define SYMI_DECL_REDUCE_ARITH(T, N) SYMI_DECL_REDUCE(T, N, sum) SYMI_DECL_REDUCE(T, N, prod)
SYMI_REDUCE_BIT_TYPES(SYMI_DECL_REDUCE_BIT)
SYMI_REDUCE_MINMAX_TYPES(SYMI_DECL_REDUCE_MINMAX)
SYMI_REDUCE_ARITH_TYPES(SYMI_DECL_REDUCE_ARITH)

/* ---- deprecated active-set collectives (PE_start, logPE_stride, PE_size, pSync) ---- */

void shmem_barrier(int PE_start, int logPE_stride, int PE_size, long *pSync);
void shmem_sync_deprecated(int PE_start, int logPE_stride, int PE_size, long *pSync);
#define SYMI_DECL_ACTIVE_SET(S)                                                      \
    void shmem_broadcast##S(void *dest, const void *source, size_t nelems, int PE_root, \
                            int PE_start, int logPE_stride, int PE_size, long *pSync); \
    void shmem_collect##S(void *dest, const void *source, size_t nelems, int PE_start, \
                          int logPE_stride, int PE_size, long *pSync);               \
    void shmem_fcollect##S(void *dest, const void *source, size_t nelems, int PE_start, \
                           int logPE_stride, int PE_size, long *pSync);              \
    void shmem_alltoall##S(void *dest, const void *source, size_t nelems, int PE_start, \
                           int logPE_stride, int PE_size, long *pSync);              \
    void shmem_alltoalls##S(void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, \
                            size_t nelems, int PE_start, int logPE_stride, int PE_size, \
                            long *pSync);
SYMI_DECL_ACTIVE_SET(32)
SYMI_DECL_ACTIVE_SET(64)

#define SYMI_DECL_TOALL(T, N, OP)                                                    \
    void shmem_##N##_##OP##_to_all(T *dest, const T *source, int nreduce, int PE_start, \
                                   int logPE_stride, int PE_size, T *pWrk, long *pSync);
#define SYMI_DECL_TOALL_BIT(T, N)                                                    \
    SYMI_DECL_TOALL(T, N, and) SYMI_DECL_TOALL(T, N, or) SYMI_DECL_TOALL(T, N, xor)
#define SYMI_DECL_TOALL_MINMAX(T, N) SYMI_DECL_TOALL(T, N, max) SYMI_DECL_TOALL(T, N, min)
#define SYMI_DECL_TOALL_ARITH(T, N) SYMI_DECL_TOALL(T, N, sum) SYMI_DECL_TOALL(T, N, prod)
SYMI_TOALL_BIT_TYPES(SYMI_DECL_TOALL_BIT)
SYMI_TOALL_MINMAX_TYPES(SYMI_DECL_TOALL_MINMAX)
SYMI_TOALL_ARITH_TYPES(SYMI_DECL_TOALL_ARITH)

/* ---- cache management: no-ops on coherent machines, kept for old programs ---- */

void shmem_clear_cache_inv(void);
void shmem_set_cache_inv(void);
void shmem_clear_cache_line_inv(void *dest);
void shmem_set_cache_line_inv(void *dest);
void shmem_udcflush(void);
void shmem_udcflush_line(void *dest);

/* ---- C11 generic selection ---- */

/* shmem_sync(team) is the 1.5 team sync; shmem_sync(start, stride, size, pSync)
 * the deprecated active-set one. */
#define SYMI_PICK2(_1, _2, NAME, ...) NAME
#define SYMI_PICK3(_1, _2, _3, NAME, ...) NAME
#define SYMI_PICK4(_1, _2, _3, _4, NAME, ...) NAME
#define SYMI_PICK5(_1, _2, _3, _4, _5, NAME, ...) NAME
#define SYMI_PICK6(_1, _2, _3, _4, _5, _6, NAME, ...) NAME
#define SYMI_PICK7(_1, _2, _3, _4, _5, _6, _7, NAME, ...) NAME
#define SYMI_PICK8(_1, _2, _3, _4, _5, _6, _7, _8, NAME, ...) NAME
#define shmem_sync(...)                                                              \
    SYMI_PICK4(__VA_ARGS__, shmem_sync_deprecated, symi_sync_x, symi_sync_x,         \
               shmem_team_sync, )(__VA_ARGS__)

#if !defined(__cplusplus) && defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L

/* Associations for each family; pre##N##post is the function for type N. */
#define SYMI_G_RMA(pre, post)                                                        \
    float: pre##float##post, double: pre##double##post,                              \
    long double: pre##longdouble##post, char: pre##char##post,                       \
    signed char: pre##schar##post, short: pre##short##post, int: pre##int##post,     \
    long: pre##long##post, long long: pre##longlong##post,                           \
    unsigned char: pre##uchar##post, unsigned short: pre##ushort##post,              \
    unsigned int: pre##uint##post, unsigned long: pre##ulong##post,                  \
    unsigned long long: pre##ulonglong##post
#define SYMI_G_AMO_STD(pre, post)                                                    \
    int: pre##int##post, long: pre##long##post, long long: pre##longlong##post,      \
    unsigned int: pre##uint##post, unsigned long: pre##ulong##post,                  \
    unsigned long long: pre##ulonglong##post
#define SYMI_G_AMO_EXT(pre, post)                                                    \
    float: pre##float##post, double: pre##double##post, SYMI_G_AMO_STD(pre, post)
#define SYMI_G_AMO_BIT(pre, post)                                                    \
    unsigned int: pre##uint##post, unsigned long: pre##ulong##post,                  \
    unsigned long long: pre##ulonglong##post, int32_t: pre##int32##post,             \
    int64_t: pre##int64##post
#define SYMI_G_P2P(pre, post)                                                        \
    short: pre##short##post, int: pre##int##post, long: pre##long##post,             \
    long long: pre##longlong##post, unsigned short: pre##ushort##post,               \
    unsigned int: pre##uint##post, unsigned long: pre##ulong##post,                  \
    unsigned long long: pre##ulonglong##post
#define SYMI_G_REDUCE_BIT(pre, post)                                                 \
    unsigned char: pre##uchar##post, unsigned short: pre##ushort##post,              \
    unsigned int: pre##uint##post, unsigned long: pre##ulong##post,                  \
    unsigned long long: pre##ulonglong##post, signed char: pre##int8##post,          \
    short: pre##int16##post, int: pre##int32##post, long: pre##int64##post
#define SYMI_G_REDUCE_MINMAX(pre, post)                                              \
    char: pre##char##post, signed char: pre##schar##post, short: pre##short##post,   \
    int: pre##int##post, long: pre##long##post, long long: pre##longlong##post,      \
    unsigned char: pre##uchar##post, unsigned short: pre##ushort##post,              \
    unsigned int: pre##uint##post, unsigned long: pre##ulong##post,                  \
    unsigned long long: pre##ulonglong##post, float: pre##float##post,               \
    double: pre##double##post, long double: pre##longdouble##post
#define SYMI_G_REDUCE_ARITH(pre, post)                                               \
    SYMI_G_REDUCE_MINMAX(pre, post), float _Complex: pre##complexf##post,            \
    double _Complex: pre##complexd##post

/* RMA: dispatch on the destination's (or, for g, the source's) element type. */
#define SYMI_GEN_RMA4(name, a, b, c, d) _Generic(*(a), SYMI_G_RMA(shmem_, _##name))(a, b, c, d)
#define SYMI_GEN_CTX_RMA4(name, x, a, b, c, d)                                       \
    _Generic(*(a), SYMI_G_RMA(shmem_ctx_, _##name))(x, a, b, c, d)
#define symi_put(a, b, c, d) SYMI_GEN_RMA4(put, a, b, c, d)
#define symi_ctx_put(x, a, b, c, d) SYMI_GEN_CTX_RMA4(put, x, a, b, c, d)
#define symi_get(a, b, c, d) SYMI_GEN_RMA4(get, a, b, c, d)
#define symi_ctx_get(x, a, b, c, d) SYMI_GEN_CTX_RMA4(get, x, a, b, c, d)
#define symi_put_nbi(a, b, c, d) SYMI_GEN_RMA4(put_nbi, a, b, c, d)
#define symi_ctx_put_nbi(x, a, b, c, d) SYMI_GEN_CTX_RMA4(put_nbi, x, a, b, c, d)
#define symi_get_nbi(a, b, c, d) SYMI_GEN_RMA4(get_nbi, a, b, c, d)
#define symi_ctx_get_nbi(x, a, b, c, d) SYMI_GEN_CTX_RMA4(get_nbi, x, a, b, c, d)
#define shmem_put(...) SYMI_PICK5(__VA_ARGS__, symi_ctx_put, symi_put, )(__VA_ARGS__)
#define shmem_get(...) SYMI_PICK5(__VA_ARGS__, symi_ctx_get, symi_get, )(__VA_ARGS__)
#define shmem_put_nbi(...) SYMI_PICK5(__VA_ARGS__, symi_ctx_put_nbi, symi_put_nbi, )(__VA_ARGS__)
#define shmem_get_nbi(...) SYMI_PICK5(__VA_ARGS__, symi_ctx_get_nbi, symi_get_nbi, )(__VA_ARGS__)

#define symi_p(a, v, pe) _Generic(*(a), SYMI_G_RMA(shmem_, _p))(a, v, pe)
#define symi_ctx_p(x, a, v, pe) _Generic(*(a), SYMI_G_RMA(shmem_ctx_, _p))(x, a, v, pe)
#define shmem_p(...) SYMI_PICK4(__VA_ARGS__, symi_ctx_p, symi_p, )(__VA_ARGS__)
#define symi_g(a, pe) _Generic(*(a), SYMI_G_RMA(shmem_, _g))(a, pe)
#define symi_ctx_g(x, a, pe) _Generic(*(a), SYMI_G_RMA(shmem_ctx_, _g))(x, a, pe)
#define shmem_g(...) SYMI_PICK3(__VA_ARGS__, symi_ctx_g, symi_g, )(__VA_ARGS__)

#define symi_iput(a, b, c, d, e, f) _Generic(*(a), SYMI_G_RMA(shmem_, _iput))(a, b, c, d, e, f)
#define symi_ctx_iput(x, a, b, c, d, e, f)                                           \
    _Generic(*(a), SYMI_G_RMA(shmem_ctx_, _iput))(x, a, b, c, d, e, f)
#define shmem_iput(...) SYMI_PICK7(__VA_ARGS__, symi_ctx_iput, symi_iput, )(__VA_ARGS__)
#define symi_iget(a, b, c, d, e, f) _Generic(*(a), SYMI_G_RMA(shmem_, _iget))(a, b, c, d, e, f)
#define symi_ctx_iget(x, a, b, c, d, e, f)                                           \
    _Generic(*(a), SYMI_G_RMA(shmem_ctx_, _iget))(x, a, b, c, d, e, f)
#define shmem_iget(...) SYMI_PICK7(__VA_ARGS__, symi_ctx_iget, symi_iget, )(__VA_ARGS__)

#define symi_put_signal(a, b, c, d, e, f, g)                                         \
    _Generic(*(a), SYMI_G_RMA(shmem_, _put_signal))(a, b, c, d, e, f, g)
#define symi_ctx_put_signal(x, a, b, c, d, e, f, g)                                  \
    _Generic(*(a), SYMI_G_RMA(shmem_ctx_, _put_signal))(x, a, b, c, d, e, f, g)
#define shmem_put_signal(...)                                                        \
    SYMI_PICK8(__VA_ARGS__, symi_ctx_put_signal, symi_put_signal, )(__VA_ARGS__)
#define symi_put_signal_nbi(a, b, c, d, e, f, g)                                     \
    _Generic(*(a), SYMI_G_RMA(shmem_, _put_signal_nbi))(a, b, c, d, e, f, g)
#define symi_ctx_put_signal_nbi(x, a, b, c, d, e, f, g)                              \
    _Generic(*(a), SYMI_G_RMA(shmem_ctx_, _put_signal_nbi))(x, a, b, c, d, e, f, g)
#define shmem_put_signal_nbi(...)                                                    \
    SYMI_PICK8(__VA_ARGS__, symi_ctx_put_signal_nbi, symi_put_signal_nbi, )(__VA_ARGS__)

/* Atomics: dispatch on the destination's element type. */
#define SYMI_GEN_AMO(fam, name, a, ...) _Generic(*(a), SYMI_G_AMO_##fam(shmem_, _##name))(a, __VA_ARGS__)
#define SYMI_GEN_CTX_AMO(fam, name, x, a, ...)                                       \
    _Generic(*(a), SYMI_G_AMO_##fam(shmem_ctx_, _##name))(x, a, __VA_ARGS__)

#define symi_fetch(a, pe) _Generic(*(a), SYMI_G_AMO_EXT(shmem_, _atomic_fetch))(a, pe)
#define symi_ctx_fetch(x, a, pe) _Generic(*(a), SYMI_G_AMO_EXT(shmem_ctx_, _atomic_fetch))(x, a, pe)
#define shmem_atomic_fetch(...) SYMI_PICK3(__VA_ARGS__, symi_ctx_fetch, symi_fetch, )(__VA_ARGS__)
#define symi_set(a, v, pe) SYMI_GEN_AMO(EXT, atomic_set, a, v, pe)
#define symi_ctx_set(x, a, v, pe) SYMI_GEN_CTX_AMO(EXT, atomic_set, x, a, v, pe)
#define shmem_atomic_set(...) SYMI_PICK4(__VA_ARGS__, symi_ctx_set, symi_set, )(__VA_ARGS__)
#define symi_swap(a, v, pe) SYMI_GEN_AMO(EXT, atomic_swap, a, v, pe)
#define symi_ctx_swap(x, a, v, pe) SYMI_GEN_CTX_AMO(EXT, atomic_swap, x, a, v, pe)
#define shmem_atomic_swap(...) SYMI_PICK4(__VA_ARGS__, symi_ctx_swap, symi_swap, )(__VA_ARGS__)
#define symi_cswap(a, c, v, pe) SYMI_GEN_AMO(STD, atomic_compare_swap, a, c, v, pe)
#define symi_ctx_cswap(x, a, c, v, pe) SYMI_GEN_CTX_AMO(STD, atomic_compare_swap, x, a, c, v, pe)
#define shmem_atomic_compare_swap(...)                                               \
    SYMI_PICK5(__VA_ARGS__, symi_ctx_cswap, symi_cswap, )(__VA_ARGS__)
#define symi_finc(a, pe) _Generic(*(a), SYMI_G_AMO_STD(shmem_, _atomic_fetch_inc))(a, pe)
#define symi_ctx_finc(x, a, pe)                                                      \
    _Generic(*(a), SYMI_G_AMO_STD(shmem_ctx_, _atomic_fetch_inc))(x, a, pe)
#define shmem_atomic_fetch_inc(...) SYMI_PICK3(__VA_ARGS__, symi_ctx_finc, symi_finc, )(__VA_ARGS__)
#define symi_inc(a, pe) _Generic(*(a), SYMI_G_AMO_STD(shmem_, _atomic_inc))(a, pe)
#define symi_ctx_inc(x, a, pe) _Generic(*(a), SYMI_G_AMO_STD(shmem_ctx_, _atomic_inc))(x, a, pe)
#define shmem_atomic_inc(...) SYMI_PICK3(__VA_ARGS__, symi_ctx_inc, symi_inc, )(__VA_ARGS__)
#define symi_fadd(a, v, pe) SYMI_GEN_AMO(STD, atomic_fetch_add, a, v, pe)
#define symi_ctx_fadd(x, a, v, pe) SYMI_GEN_CTX_AMO(STD, atomic_fetch_add, x, a, v, pe)
#define shmem_atomic_fetch_add(...) SYMI_PICK4(__VA_ARGS__, symi_ctx_fadd, symi_fadd, )(__VA_ARGS__)
#define symi_add(a, v, pe) SYMI_GEN_AMO(STD, atomic_add, a, v, pe)
#define symi_ctx_add(x, a, v, pe) SYMI_GEN_CTX_AMO(STD, atomic_add, x, a, v, pe)
#define shmem_atomic_add(...) SYMI_PICK4(__VA_ARGS__, symi_ctx_add, symi_add, )(__VA_ARGS__)
#define symi_fand(a, v, pe) SYMI_GEN_AMO(BIT, atomic_fetch_and, a, v, pe)
#define symi_ctx_fand(x, a, v, pe) SYMI_GEN_CTX_AMO(BIT, atomic_fetch_and, x, a, v, pe)
#define shmem_atomic_fetch_and(...) SYMI_PICK4(__VA_ARGS__, symi_ctx_fand, symi_fand, )(__VA_ARGS__)
#define symi_and(a, v, pe) SYMI_GEN_AMO(BIT, atomic_and, a, v, pe)
#define symi_ctx_and(x, a, v, pe) SYMI_GEN_CTX_AMO(BIT, atomic_and, x, a, v, pe)
#define shmem_atomic_and(...) SYMI_PICK4(__VA_ARGS__, symi_ctx_and, symi_and, )(__VA_ARGS__)
#define symi_for(a, v, pe) SYMI_GEN_AMO(BIT, atomic_fetch_or, a, v, pe)
#define symi_ctx_for(x, a, v, pe) SYMI_GEN_CTX_AMO(BIT, atomic_fetch_or, x, a, v, pe)
#define shmem_atomic_fetch_or(...) SYMI_PICK4(__VA_ARGS__, symi_ctx_for, symi_for, )(__VA_ARGS__)
#define symi_or(a, v, pe) SYMI_GEN_AMO(BIT, atomic_or, a, v, pe)
#define symi_ctx_or(x, a, v, pe) SYMI_GEN_CTX_AMO(BIT, atomic_or, x, a, v, pe)
#define shmem_atomic_or(...) SYMI_PICK4(__VA_ARGS__, symi_ctx_or, symi_or, )(__VA_ARGS__)
#define symi_fxor(a, v, pe) SYMI_GEN_AMO(BIT, atomic_fetch_xor, a, v, pe)
#define symi_ctx_fxor(x, a, v, pe) SYMI_GEN_CTX_AMO(BIT, atomic_fetch_xor, x, a, v, pe)
#define shmem_atomic_fetch_xor(...) SYMI_PICK4(__VA_ARGS__, symi_ctx_fxor, symi_fxor, )(__VA_ARGS__)
#define symi_xor(a, v, pe) SYMI_GEN_AMO(BIT, atomic_xor, a, v, pe)
#define symi_ctx_xor(x, a, v, pe) SYMI_GEN_CTX_AMO(BIT, atomic_xor, x, a, v, pe)
#define shmem_atomic_xor(...) SYMI_PICK4(__VA_ARGS__, symi_ctx_xor, symi_xor, )(__VA_ARGS__)

/* Non-blocking fetching atomics: dispatch on the destination (second argument). */
#define SYMI_GEN_AMO_NBI(fam, name, f, a, ...)                                       \
    _Generic(*(a), SYMI_G_AMO_##fam(shmem_, _##name))(f, a, __VA_ARGS__)
#define SYMI_GEN_CTX_AMO_NBI(fam, name, x, f, a, ...)                                \
    _Generic(*(a), SYMI_G_AMO_##fam(shmem_ctx_, _##name))(x, f, a, __VA_ARGS__)
#define symi_fetch_nbi(f, a, pe) SYMI_GEN_AMO_NBI(EXT, atomic_fetch_nbi, f, a, pe)
#define symi_ctx_fetch_nbi(x, f, a, pe) SYMI_GEN_CTX_AMO_NBI(EXT, atomic_fetch_nbi, x, f, a, pe)
#define shmem_atomic_fetch_nbi(...)                                                  \
    SYMI_PICK4(__VA_ARGS__, symi_ctx_fetch_nbi, symi_fetch_nbi, )(__VA_ARGS__)
#define symi_swap_nbi(f, a, v, pe) SYMI_GEN_AMO_NBI(EXT, atomic_swap_nbi, f, a, v, pe)
#define symi_ctx_swap_nbi(x, f, a, v, pe) SYMI_GEN_CTX_AMO_NBI(EXT, atomic_swap_nbi, x, f, a, v, pe)
#define shmem_atomic_swap_nbi(...)                                                   \
    SYMI_PICK5(__VA_ARGS__, symi_ctx_swap_nbi, symi_swap_nbi, )(__VA_ARGS__)
#define symi_cswap_nbi(f, a, c, v, pe)                                               \
    SYMI_GEN_AMO_NBI(STD, atomic_compare_swap_nbi, f, a, c, v, pe)
#define symi_ctx_cswap_nbi(x, f, a, c, v, pe)                                        \
    SYMI_GEN_CTX_AMO_NBI(STD, atomic_compare_swap_nbi, x, f, a, c, v, pe)
#define shmem_atomic_compare_swap_nbi(...)                                           \
    SYMI_PICK6(__VA_ARGS__, symi_ctx_cswap_nbi, symi_cswap_nbi, )(__VA_ARGS__)
#define symi_finc_nbi(f, a, pe) SYMI_GEN_AMO_NBI(STD, atomic_fetch_inc_nbi, f, a, pe)
#define symi_ctx_finc_nbi(x, f, a, pe) SYMI_GEN_CTX_AMO_NBI(STD, atomic_fetch_inc_nbi, x, f, a, pe)
#define shmem_atomic_fetch_inc_nbi(...)                                              \
    SYMI_PICK4(__VA_ARGS__, symi_ctx_finc_nbi, symi_finc_nbi, )(__VA_ARGS__)
#define symi_fadd_nbi(f, a, v, pe) SYMI_GEN_AMO_NBI(STD, atomic_fetch_add_nbi, f, a, v, pe)
#define symi_ctx_fadd_nbi(x, f, a, v, pe)                                            \
    SYMI_GEN_CTX_AMO_NBI(STD, atomic_fetch_add_nbi, x, f, a, v, pe)
#define shmem_atomic_fetch_add_nbi(...)                                              \
    SYMI_PICK5(__VA_ARGS__, symi_ctx_fadd_nbi, symi_fadd_nbi, )(__VA_ARGS__)
#define symi_fand_nbi(f, a, v, pe) SYMI_GEN_AMO_NBI(BIT, atomic_fetch_and_nbi, f, a, v, pe)
#define symi_ctx_fand_nbi(x, f, a, v, pe)                                            \
    SYMI_GEN_CTX_AMO_NBI(BIT, atomic_fetch_and_nbi, x, f, a, v, pe)
#define shmem_atomic_fetch_and_nbi(...)                                              \
    SYMI_PICK5(__VA_ARGS__, symi_ctx_fand_nbi, symi_fand_nbi, )(__VA_ARGS__)
#define symi_for_nbi(f, a, v, pe) SYMI_GEN_AMO_NBI(BIT, atomic_fetch_or_nbi, f, a, v, pe)
#define symi_ctx_for_nbi(x, f, a, v, pe)                                             \
    SYMI_GEN_CTX_AMO_NBI(BIT, atomic_fetch_or_nbi, x, f, a, v, pe)
#define shmem_atomic_fetch_or_nbi(...)                                               \
    SYMI_PICK5(__VA_ARGS__, symi_ctx_for_nbi, symi_for_nbi, )(__VA_ARGS__)
#define symi_fxor_nbi(f, a, v, pe) SYMI_GEN_AMO_NBI(BIT, atomic_fetch_xor_nbi, f, a, v, pe)
#define symi_ctx_fxor_nbi(x, f, a, v, pe)                                            \
    SYMI_GEN_CTX_AMO_NBI(BIT, atomic_fetch_xor_nbi, x, f, a, v, pe)
#define shmem_atomic_fetch_xor_nbi(...)                                              \
    SYMI_PICK5(__VA_ARGS__, symi_ctx_fxor_nbi, symi_fxor_nbi, )(__VA_ARGS__)

/* Deprecated generic atomic names (1.3). */
#define shmem_cswap(a, c, v, pe) _Generic(*(a), SYMI_G_AMO_OLD_STD(_cswap))(a, c, v, pe)
#define shmem_finc(a, pe) _Generic(*(a), SYMI_G_AMO_OLD_STD(_finc))(a, pe)
#define shmem_inc(a, pe) _Generic(*(a), SYMI_G_AMO_OLD_STD(_inc))(a, pe)
#define shmem_fadd(a, v, pe) _Generic(*(a), SYMI_G_AMO_OLD_STD(_fadd))(a, v, pe)
#define shmem_add(a, v, pe) _Generic(*(a), SYMI_G_AMO_OLD_STD(_add))(a, v, pe)
#define shmem_fetch(a, pe) _Generic(*(a), SYMI_G_AMO_OLD_EXT(_fetch))(a, pe)
#define shmem_set(a, v, pe) _Generic(*(a), SYMI_G_AMO_OLD_EXT(_set))(a, v, pe)
/* shmem_swap and shmem_wait were untyped functions on long before 1.3: any
 * other pointer (void * in old code) still reaches them. */
#define shmem_swap(a, v, pe)                                                         \
    _Generic(*(a), SYMI_G_AMO_OLD_EXT(_swap), default: shmem_swap)(a, v, pe)
/* 1.3: shmem_wait(ivar, value) for short, int, long, long long (volatile too) */
#define shmem_wait(a, v)                                                             \
    _Generic(*(a), short: shmem_short_wait, int: shmem_int_wait, long: shmem_long_wait, \
             long long: shmem_longlong_wait, default: shmem_wait)(a, v)
#define SYMI_G_AMO_OLD_STD(post)                                                     \
    int: shmem_int##post, long: shmem_long##post, long long: shmem_longlong##post
#define SYMI_G_AMO_OLD_EXT(post)                                                     \
    SYMI_G_AMO_OLD_STD(post), float: shmem_float##post, double: shmem_double##post

/* Point-to-point synchronisation: dispatch on the ivar's element type. The
 * ivar goes through (void *) so that flags declared volatile, as programs
 * written for OpenSHMEM 1.3 declare them, are accepted without a warning; the
 * selection has already checked the type. */
#define shmem_wait_until(a, ...)                                                     \
    _Generic(*(a), SYMI_G_P2P(shmem_, _wait_until))((void *)(a), __VA_ARGS__)
#define shmem_wait_until_all(a, ...)                                                 \
    _Generic(*(a), SYMI_G_P2P(shmem_, _wait_until_all))((void *)(a), __VA_ARGS__)
#define shmem_wait_until_any(a, ...)                                                 \
    _Generic(*(a), SYMI_G_P2P(shmem_, _wait_until_any))((void *)(a), __VA_ARGS__)
#define shmem_wait_until_some(a, ...)                                                \
    _Generic(*(a), SYMI_G_P2P(shmem_, _wait_until_some))((void *)(a), __VA_ARGS__)
#define shmem_wait_until_all_vector(a, ...)                                          \
    _Generic(*(a), SYMI_G_P2P(shmem_, _wait_until_all_vector))((void *)(a), __VA_ARGS__)
#define shmem_wait_until_any_vector(a, ...)                                          \
    _Generic(*(a), SYMI_G_P2P(shmem_, _wait_until_any_vector))((void *)(a), __VA_ARGS__)
#define shmem_wait_until_some_vector(a, ...)                                         \
    _Generic(*(a), SYMI_G_P2P(shmem_, _wait_until_some_vector))((void *)(a), __VA_ARGS__)
#define shmem_test(a, ...)                                                           \
    _Generic(*(a), SYMI_G_P2P(shmem_, _test))((void *)(a), __VA_ARGS__)
#define shmem_test_all(a, ...)                                                       \
    _Generic(*(a), SYMI_G_P2P(shmem_, _test_all))((void *)(a), __VA_ARGS__)
#define shmem_test_any(a, ...)                                                       \
    _Generic(*(a), SYMI_G_P2P(shmem_, _test_any))((void *)(a), __VA_ARGS__)
#define shmem_test_some(a, ...)                                                      \
    _Generic(*(a), SYMI_G_P2P(shmem_, _test_some))((void *)(a), __VA_ARGS__)
#define shmem_test_all_vector(a, ...)                                                \
    _Generic(*(a), SYMI_G_P2P(shmem_, _test_all_vector))((void *)(a), __VA_ARGS__)
#define shmem_test_any_vector(a, ...)                                                \
    _Generic(*(a), SYMI_G_P2P(shmem_, _test_any_vector))((void *)(a), __VA_ARGS__)
#define shmem_test_some_vector(a, ...)                                               \
    _Generic(*(a), SYMI_G_P2P(shmem_, _test_some_vector))((void *)(a), __VA_ARGS__)

/* Team collectives: dispatch on the destination's element type. */
#define shmem_broadcast(t, d, ...) _Generic(*(d), SYMI_G_RMA(shmem_, _broadcast))(t, d, __VA_ARGS__)
#define shmem_collect(t, d, ...) _Generic(*(d), SYMI_G_RMA(shmem_, _collect))(t, d, __VA_ARGS__)
#define shmem_fcollect(t, d, ...) _Generic(*(d), SYMI_G_RMA(shmem_, _fcollect))(t, d, __VA_ARGS__)
#define shmem_alltoall(t, d, ...) _Generic(*(d), SYMI_G_RMA(shmem_, _alltoall))(t, d, __VA_ARGS__)
#define shmem_alltoalls(t, d, ...) _Generic(*(d), SYMI_G_RMA(shmem_, _alltoalls))(t, d, __VA_ARGS__)
#define shmem_and_reduce(t, d, ...) _Generic(*(d), SYMI_G_REDUCE_BIT(shmem_, _and_reduce))(t, d, __VA_ARGS__)
#define shmem_or_reduce(t, d, ...) _Generic(*(d), SYMI_G_REDUCE_BIT(shmem_, _or_reduce))(t, d, __VA_ARGS__)
#define shmem_xor_reduce(t, d, ...) _Generic(*(d), SYMI_G_REDUCE_BIT(shmem_, _xor_reduce))(t, d, __VA_ARGS__)
#define shmem_max_reduce(t, d, ...)                                                  \
    _Generic(*(d), SYMI_G_REDUCE_MINMAX(shmem_, _max_reduce))(t, d, __VA_ARGS__)
#define shmem_min_reduce(t, d, ...)                                                  \
    _Generic(*(d), SYMI_G_REDUCE_MINMAX(shmem_, _min_reduce))(t, d, __VA_ARGS__)
#define shmem_sum_reduce(t, d, ...)                                                  \
    _Generic(*(d), SYMI_G_REDUCE_ARITH(shmem_, _sum_reduce))(t, d, __VA_ARGS__)
#define shmem_prod_reduce(t, d, ...)                                                 \
    _Generic(*(d), SYMI_G_REDUCE_ARITH(shmem_, _prod_reduce))(t, d, __VA_ARGS__)

#endif /* C11 */

#ifdef __cplusplus
}
#endif

#endif /* SHMEM_H */
