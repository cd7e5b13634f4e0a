/*
 * teamcoll.c — the OpenSHMEM 1.5 collectives on teams: broadcast, collect,
 * fcollect, alltoall(s) and the and/or/xor/max/min/sum/prod reductions, each in
 * its typed and untyped forms (generated from shmem.h's type tables). They are
 * thin: the algorithms live in allreduce.c and gather.c.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "coll.h"

/* The engine's element type for each OpenSHMEM type name. */
#define DT_char (CHAR_MIN < 0 ? SYM_I8 : SYM_U8)
#define DT_schar SYM_I8
#define DT_short SYM_I16
#define DT_int SYM_I32
#define DT_long (sizeof(long) == 8 ? SYM_I64 : SYM_I32)
#define DT_longlong SYM_I64
#define DT_ptrdiff (sizeof(ptrdiff_t) == 8 ? SYM_I64 : SYM_I32)
#define DT_uchar SYM_U8
#define DT_ushort SYM_U16
#define DT_uint SYM_U32
#define DT_ulong (sizeof(unsigned long) == 8 ? SYM_U64 : SYM_U32)
#define DT_ulonglong SYM_U64
#define DT_int8 SYM_I8
#define DT_int16 SYM_I16
#define DT_int32 SYM_I32
#define DT_int64 SYM_I64
#define DT_uint8 SYM_U8
#define DT_uint16 SYM_U16
#define DT_uint32 SYM_U32
#define DT_uint64 SYM_U64
#define DT_size (sizeof(size_t) == 8 ? SYM_U64 : SYM_U32)
#define DT_float SYM_F32
#define DT_double SYM_F64
#define DT_longdouble SYM_LDBL
#define DT_complexf SYM_C32
#define DT_complexd SYM_C64

#define OP_and SYM_AND
#define OP_or SYM_OR
#define OP_xor SYM_XOR
#define OP_max SYM_MAX
#define OP_min SYM_MIN
#define OP_sum SYM_SUM
#define OP_prod SYM_PROD

/* Common entry: a valid team this PE belongs to, of a size the collectives
 * support; queued collectives first. Non-zero: the collective returns -1 (the
 * standard's "non-zero on failure"; not a SHMEMX_E* code). */
static int enter(const char *fn, shmem_team_t team) {
    SYM_REQUIRE_INIT(fn);
    if (team == SHMEM_TEAM_INVALID) return sym__invalid_team(fn);
    if (team->me < 0) return -1; /* the runtime's own teams only: users get INVALID */
    return sym__coll_enter(fn, team);
}

static void need_symmetric(const char *fn, const void *addr, size_t len) {
    if (len && !sym__is_symmetric(addr, len)) sym__bad_addr(fn, addr, sym__world.me);
}

/* ---- broadcast, collect, fcollect, alltoall(s) ---- */

static int bcast(const char *fn, shmem_team_t team, void *dest, const void *source, size_t bytes,
                 int root) {
    if (enter(fn, team)) return -1;
    if (root < 0 || root >= team->size) sym__bad_pe(fn, root, team->size);
    need_symmetric(fn, dest, bytes);
    need_symmetric(fn, source, bytes);
    return sym__broadcast(team, dest, source, bytes, root, 1);
}

static int fcollect(const char *fn, shmem_team_t team, void *dest, const void *source,
                    size_t bytes) {
    if (enter(fn, team)) return -1;
    need_symmetric(fn, source, bytes);
    need_symmetric(fn, dest, bytes * (size_t)team->size);
    return sym__allgather(team, dest, source, bytes);
}

static int collect(const char *fn, shmem_team_t team, void *dest, const void *source,
                   size_t bytes) {
    if (enter(fn, team)) return -1;
    need_symmetric(fn, source, bytes);
    int n = team->size;
    size_t *sizes = malloc(2 * (size_t)n * sizeof *sizes);
    if (!sizes) sym__fatal(fn, "out of memory");
    size_t *displs = sizes + n;
    uint64_t mine = bytes;
    sym__allgather(team, sizes, &mine, sizeof mine);
    size_t off = 0;
    for (int m = 0; m < n; m++) {
        displs[m] = off;
        off += sizes[m];
    }
    need_symmetric(fn, dest, off);
    int rc = sym__allgatherv(team, dest, source, sizes, displs);
    free(sizes);
    return rc;
}

static int alltoalls(const char *fn, shmem_team_t team, void *dest, const void *source,
                     ptrdiff_t dst, ptrdiff_t sst, size_t nelems, size_t esize) {
    if (enter(fn, team)) return -1;
    if (dst < 1 || sst < 1) {
        sym__warn(fn, "strides must be at least 1 (dst %td, sst %td)", dst, sst);
        return -1;
    }
    size_t span = (size_t)team->size * nelems;
    if (span) {
        need_symmetric(fn, source, ((span - 1) * (size_t)sst + 1) * esize);
        need_symmetric(fn, dest, ((span - 1) * (size_t)dst + 1) * esize);
    }
    return sym__alltoalls(team, dest, source, dst, sst, nelems, esize);
}

#define DEF_COLL(T, N)                                                               \
    int shmem_##N##_broadcast(shmem_team_t team, T *dest, const T *source, size_t nelems, \
                              int PE_root) {                                         \
        return bcast(__func__, team, dest, source, nelems * sizeof(T), PE_root);     \
    }                                                                                \
    int shmem_##N##_collect(shmem_team_t team, T *dest, const T *source, size_t nelems) { \
        return collect(__func__, team, dest, source, nelems * sizeof(T));            \
    }                                                                                \
    int shmem_##N##_fcollect(shmem_team_t team, T *dest, const T *source, size_t nelems) { \
        return fcollect(__func__, team, dest, source, nelems * sizeof(T));           \
    }                                                                                \
    int shmem_##N##_alltoall(shmem_team_t team, T *dest, const T *source, size_t nelems) { \
        return alltoalls(__func__, team, dest, source, 1, 1, nelems, sizeof(T));     \
    }                                                                                \
    int shmem_##N##_alltoalls(shmem_team_t team, T *dest, const T *source, ptrdiff_t dst, \
                              ptrdiff_t sst, size_t nelems) {                        \
        return alltoalls(__func__, team, dest, source, dst, sst, nelems, sizeof(T)); \
    }
SYMI_RMA_TYPES(DEF_COLL)

int shmem_broadcastmem(shmem_team_t team, void *dest, const void *source, size_t nelems,
                       int PE_root) {
    return bcast(__func__, team, dest, source, nelems, PE_root);
}
int shmem_collectmem(shmem_team_t team, void *dest, const void *source, size_t nelems) {
    return collect(__func__, team, dest, source, nelems);
}
int shmem_fcollectmem(shmem_team_t team, void *dest, const void *source, size_t nelems) {
    return fcollect(__func__, team, dest, source, nelems);
}
int shmem_alltoallmem(shmem_team_t team, void *dest, const void *source, size_t nelems) {
    return alltoalls(__func__, team, dest, source, 1, 1, nelems, 1);
}
int shmem_alltoallsmem(shmem_team_t team, void *dest, const void *source, ptrdiff_t dst,
                       ptrdiff_t sst, size_t nelems) {
    return alltoalls(__func__, team, dest, source, dst, sst, nelems, 1);
}

/* ---- reductions ---- */

static int reduce(const char *fn, shmem_team_t team, void *dest, const void *source,
                  size_t nreduce, sym_dtype_t dtype, sym_op_t op) {
    if (enter(fn, team)) return -1;
    sym_redop_t r;
    sym__redop(&r, dtype, op, 0);
    need_symmetric(fn, dest, nreduce * r.esize);
    need_symmetric(fn, source, nreduce * r.esize);
    return sym__allreduce(team, dest, source, nreduce, &r, sym__allreduce_algo_forced());
}

#define DEF_REDUCE(T, N, OP)                                                         \
    int shmem_##N##_##OP##_reduce(shmem_team_t team, T *dest, const T *source,       \
                                  size_t nreduce) {                                  \
        return reduce(__func__, team, dest, source, nreduce, DT_##N, OP_##OP);       \
    }
#define DEF_REDUCE_BIT(T, N) DEF_REDUCE(T, N, and) DEF_REDUCE(T, N, or) DEF_REDUCE(T, N, xor)
#define DEF_REDUCE_MINMAX(T, N) DEF_REDUCE(T, N, max) DEF_REDUCE(T, N, min)
#define DEF_REDUCE_ARITH(T, N) DEF_REDUCE(T, N, sum) DEF_REDUCE(T, N, prod)
SYMI_REDUCE_BIT_TYPES(DEF_REDUCE_BIT)
SYMI_REDUCE_MINMAX_TYPES(DEF_REDUCE_MINMAX)
SYMI_REDUCE_ARITH_TYPES(DEF_REDUCE_ARITH)
