/*
 * api.c — libsymgpu: the public GPU API (include/shmemx_gpu.h) as a thin C
 * front end over the CUDA/NVSHMEM backend (libsymgpu_nvshmem.so).
 *
 * The backend is loaded with dlopen at shmemx_gpu_init, from the folder this
 * library lives in (or SYMTRAIN_GPU_BACKEND), so a program linked with
 * libsymgpu starts even where NVSHMEM or the CUDA runtime is missing, and
 * shmemx_gpu_init then says which library could not be loaded and how to get
 * it. The front end also owns the one collective agreement step (symshmem
 * only) that keeps the PEs together when a start-up check fails on some of them.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <shmem.h>

#include "../util/util.h"
#include "backend.h"

static const struct sym_gpu_backend *be;
static void *be_handle;

/* ---- errors ---- */

const char *shmemx_gpu_strerror(int err) {
#define SYM_GPU_STRERROR_CASE(name, code, msg)                                       \
    case code: return msg;
    switch (err) {
        SHMEMX_GPU_ERRNO_MAP(SYM_GPU_STRERROR_CASE)
    default: return shmemx_strerror(err);
    }
#undef SYM_GPU_STRERROR_CASE
}

/* ---- agreement: every PE learns the first failure of any PE ---- */

/* Collective over all PEs, symshmem only (the collectives library may not be
 * built): each PE writes {status} into PE 0's table, PE 0 picks the lowest
 * failing PE and writes {status, pe} back to everyone. */
static int agree(int status, const char *reason) {
    int npes = shmem_n_pes(), me = shmem_my_pe();
    int *tab = shmem_malloc(sizeof(int) * (size_t)(npes + 2));
    if (!tab) {
        /* Same size on every PE, so every PE fails here together. */
        sym__warn("shmemx_gpu_init", "symmetric heap exhausted (asked %zu bytes for start-up); "
                  "raise SYMTRAIN_SYMMETRIC_SIZE as PE 0's line before says",
                  sizeof(int) * (size_t)(npes + 2));
        return SHMEMX_ENOMEM;
    }
    shmem_putmem(&tab[me], &status, sizeof(int), 0);
    shmem_barrier_all();
    if (me == 0) {
        int res[2] = {0, -1};
        for (int i = 0; i < npes; i++)
            if (tab[i] != 0) {
                res[0] = tab[i];
                res[1] = i;
                break;
            }
        for (int p = 0; p < npes; p++) shmem_putmem(&tab[npes], res, sizeof res, p);
    }
    shmem_barrier_all();
    int agreed = tab[npes], first = tab[npes + 1];
    shmem_free(tab);
    if (agreed != 0 && first == me && reason) sym__warn("shmemx_gpu_init", "%s", reason);
    return agreed;
}

/* ---- loading the backend ---- */

static int backend_path(char *buf, size_t len) {
    const char *env = getenv("SYMTRAIN_GPU_BACKEND");
    if (env && *env) return snprintf(buf, len, "%s", env) < (int)len ? 0 : -1;
    Dl_info info;
    if (!dladdr((void *)shmemx_gpu_init, &info) || !info.dli_fname) return -1;
    const char *slash = strrchr(info.dli_fname, '/');
    int dirlen = slash ? (int)(slash - info.dli_fname) : 1;
    const char *dir = slash ? info.dli_fname : ".";
    return snprintf(buf, len, "%.*s/%s", dirlen, dir, SYM_GPU_BACKEND_FILE) < (int)len ? 0 : -1;
}

/* Load the backend on this PE. 0, or SHMEMX_GPU_ENOLIB with `reason` filled. */
static int load_backend(char *reason, size_t len) {
    char path[4096];
    if (backend_path(path, sizeof path) != 0) {
        snprintf(reason, len, "cannot locate %s next to libsymgpu; set SYMTRAIN_GPU_BACKEND "
                 "to its path", SYM_GPU_BACKEND_FILE);
        return SHMEMX_GPU_ENOLIB;
    }
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *why = dlerror();
        snprintf(reason, len,
                 "cannot load the GPU backend %s: %s; it needs NVSHMEM's libnvshmem_host.so.3 "
                 "(pip install nvidia-nvshmem-cu13, or put $NVSHMEM_HOME/lib on "
                 "LD_LIBRARY_PATH) and the CUDA runtime libcudart.so.13",
                 path, why ? why : "unknown error");
        return SHMEMX_GPU_ENOLIB;
    }
    sym_gpu_backend_fn get = (sym_gpu_backend_fn)dlsym(h, SYM_GPU_BACKEND_SYMBOL);
    const struct sym_gpu_backend *table = get ? get() : NULL;
    if (!table || table->abi != SYM_GPU_BACKEND_ABI) {
        snprintf(reason, len, "%s is not a symtrain GPU backend of ABI %d (stale build?); "
                 "rebuild symtrain", path, SYM_GPU_BACKEND_ABI);
        dlclose(h);
        return SHMEMX_GPU_ENOLIB;
    }
    be_handle = h;
    be = table;
    return 0;
}

/* ---- start-up ---- */

int shmemx_gpu_init(void) {
    char reason[8192] = "";
    int st = be ? 0 : load_backend(reason, sizeof reason);
    st = agree(st, reason);
    if (st != 0) return st;
    return be->init(agree);
}

int shmemx_gpu_finalize(void) {
    if (!be) return 0;
    return be->finalize();
}

int shmemx_gpu_device(void) { return be ? be->device() : -1; }

#define SYM_GPU_REQUIRE_INIT(fn, ret)                                                \
    do {                                                                             \
        if (!be) {                                                                   \
            sym__warn(fn, "called before shmemx_gpu_init; call shmemx_gpu_init() "   \
                      "after shmem_init()");                                         \
            return ret;                                                              \
        }                                                                            \
    } while (0)

/* ---- memory ---- */

void *shmemx_gpu_malloc(size_t bytes) {
    SYM_GPU_REQUIRE_INIT("shmemx_gpu_malloc", NULL);
    return be->malloc_(bytes);
}

void shmemx_gpu_free(void *ptr) {
    if (!ptr) return;
    SYM_GPU_REQUIRE_INIT("shmemx_gpu_free", );
    be->free_(ptr);
}

void *shmemx_gpu_ptr(const void *ptr, int pe) {
    SYM_GPU_REQUIRE_INIT("shmemx_gpu_ptr", NULL);
    return be->ptr(ptr, pe);
}

/* ---- collectives: the world versions are the team versions on SHMEM_TEAM_WORLD ---- */

int shmemx_gpu_allreduce_team(shmem_team_t team, void *dest, const void *source, size_t count,
                              shmemx_dtype_t dtype, shmemx_op_t op, shmemx_gpu_stream_t stream) {
    SYM_GPU_REQUIRE_INIT("shmemx_gpu_allreduce_team", SHMEMX_GPU_ENOINIT);
    return be->allreduce(team, dest, source, count, dtype, op, stream);
}

int shmemx_gpu_reduce_scatter_team(shmem_team_t team, void *dest, const void *source,
                                   size_t count, shmemx_dtype_t dtype, shmemx_op_t op,
                                   shmemx_gpu_stream_t stream) {
    SYM_GPU_REQUIRE_INIT("shmemx_gpu_reduce_scatter_team", SHMEMX_GPU_ENOINIT);
    return be->reduce_scatter(team, dest, source, count, dtype, op, stream);
}

int shmemx_gpu_allgather_team(shmem_team_t team, void *dest, const void *source, size_t count,
                              shmemx_dtype_t dtype, shmemx_gpu_stream_t stream) {
    SYM_GPU_REQUIRE_INIT("shmemx_gpu_allgather_team", SHMEMX_GPU_ENOINIT);
    return be->allgather(team, dest, source, count, dtype, stream);
}

int shmemx_gpu_broadcast_team(shmem_team_t team, void *dest, const void *source, size_t count,
                              shmemx_dtype_t dtype, int root, shmemx_gpu_stream_t stream) {
    SYM_GPU_REQUIRE_INIT("shmemx_gpu_broadcast_team", SHMEMX_GPU_ENOINIT);
    return be->broadcast(team, dest, source, count, dtype, root, stream);
}

int shmemx_gpu_alltoall_team(shmem_team_t team, void *dest, const void *source, size_t count,
                             shmemx_dtype_t dtype, shmemx_gpu_stream_t stream) {
    SYM_GPU_REQUIRE_INIT("shmemx_gpu_alltoall_team", SHMEMX_GPU_ENOINIT);
    return be->alltoall(team, dest, source, count, dtype, stream);
}

int shmemx_gpu_allreduce(void *dest, const void *source, size_t count, shmemx_dtype_t dtype,
                         shmemx_op_t op, shmemx_gpu_stream_t stream) {
    SYM_GPU_REQUIRE_INIT("shmemx_gpu_allreduce", SHMEMX_GPU_ENOINIT);
    return be->allreduce(SHMEM_TEAM_WORLD, dest, source, count, dtype, op, stream);
}

int shmemx_gpu_reduce_scatter(void *dest, const void *source, size_t count,
                              shmemx_dtype_t dtype, shmemx_op_t op,
                              shmemx_gpu_stream_t stream) {
    SYM_GPU_REQUIRE_INIT("shmemx_gpu_reduce_scatter", SHMEMX_GPU_ENOINIT);
    return be->reduce_scatter(SHMEM_TEAM_WORLD, dest, source, count, dtype, op, stream);
}

int shmemx_gpu_allgather(void *dest, const void *source, size_t count, shmemx_dtype_t dtype,
                         shmemx_gpu_stream_t stream) {
    SYM_GPU_REQUIRE_INIT("shmemx_gpu_allgather", SHMEMX_GPU_ENOINIT);
    return be->allgather(SHMEM_TEAM_WORLD, dest, source, count, dtype, stream);
}

int shmemx_gpu_broadcast(void *dest, const void *source, size_t count, shmemx_dtype_t dtype,
                         int root, shmemx_gpu_stream_t stream) {
    SYM_GPU_REQUIRE_INIT("shmemx_gpu_broadcast", SHMEMX_GPU_ENOINIT);
    return be->broadcast(SHMEM_TEAM_WORLD, dest, source, count, dtype, root, stream);
}

int shmemx_gpu_alltoall(void *dest, const void *source, size_t count, shmemx_dtype_t dtype,
                        shmemx_gpu_stream_t stream) {
    SYM_GPU_REQUIRE_INIT("shmemx_gpu_alltoall", SHMEMX_GPU_ENOINIT);
    return be->alltoall(SHMEM_TEAM_WORLD, dest, source, count, dtype, stream);
}

/* ---- algorithm choice ---- */

static const char *const algo_names[SHMEMX_GPU_ALGO_COUNT] = {
    [SHMEMX_GPU_ALGO_AUTO] = "auto",
    [SHMEMX_GPU_ALGO_ONESHOT] = "oneshot",
    [SHMEMX_GPU_ALGO_TWOSHOT] = "twoshot",
    [SHMEMX_GPU_ALGO_RING] = "ring",
};

const char *shmemx_gpu_algo_name(shmemx_gpu_algo_t algo) {
    return (unsigned)algo < SHMEMX_GPU_ALGO_COUNT ? algo_names[algo] : "invalid";
}

void shmemx_gpu_set_algo(shmemx_gpu_algo_t algo, int blocks) {
    SYM_GPU_REQUIRE_INIT("shmemx_gpu_set_algo", );
    be->set_algo(algo, blocks);
}

shmemx_gpu_algo_t shmemx_gpu_last_algo(void) {
    return be ? be->last_algo() : SHMEMX_GPU_ALGO_AUTO;
}
