/*
 * backend.h — the seam between libsymgpu (the public C API, src/gpu/api.c,
 * which needs neither CUDA nor NVSHMEM to load) and libsymgpu_nvshmem (the
 * CUDA kernels and NVSHMEM, loaded with dlopen by shmemx_gpu_init).
 *
 * Loading the NVSHMEM part at run time is what lets a missing libnvshmem_host
 * be reported as one clear line instead of the dynamic loader refusing to
 * start the program. The table below is the whole interface; its functions
 * follow the public contracts in include/shmemx_gpu.h.
 */
#ifndef SYM_GPU_BACKEND_H
#define SYM_GPU_BACKEND_H

#include <shmemx_gpu.h>

#define SYM_GPU_BACKEND_ABI 3
#define SYM_GPU_BACKEND_SYMBOL "sym__gpu_backend"
#define SYM_GPU_BACKEND_FILE "libsymgpu_nvshmem.so"

/* Collective agreement the front end lends the backend: every PE passes its
 * own status (0 or a negative code) and, when it failed, the one-line reason.
 * Returns the status of the lowest-numbered failing PE (0 if none failed) on
 * every PE; only that PE prints its reason. */
typedef int (*sym_gpu_agree_fn)(int status, const char *reason);

struct sym_gpu_backend {
    int abi; /* SYM_GPU_BACKEND_ABI */
    int (*init)(sym_gpu_agree_fn agree);
    int (*finalize)(void);
    int (*device)(void);
    void *(*malloc_)(size_t bytes);
    void (*free_)(void *ptr);
    void *(*ptr)(const void *ptr, int pe);
    /* the collectives over a team (SHMEM_TEAM_WORLD for the world versions) */
    int (*allreduce)(shmem_team_t team, void *dest, const void *source, size_t count,
                     shmemx_dtype_t dtype, shmemx_op_t op, shmemx_gpu_stream_t stream);
    int (*reduce_scatter)(shmem_team_t team, void *dest, const void *source, size_t count,
                          shmemx_dtype_t dtype, shmemx_op_t op, shmemx_gpu_stream_t stream);
    int (*allgather)(shmem_team_t team, void *dest, const void *source, size_t count,
                     shmemx_dtype_t dtype, shmemx_gpu_stream_t stream);
    int (*broadcast)(shmem_team_t team, void *dest, const void *source, size_t count,
                     shmemx_dtype_t dtype, int root, shmemx_gpu_stream_t stream);
    int (*alltoall)(shmem_team_t team, void *dest, const void *source, size_t count,
                    shmemx_dtype_t dtype, shmemx_gpu_stream_t stream);
    void (*set_algo)(shmemx_gpu_algo_t algo, int blocks);
    shmemx_gpu_algo_t (*last_algo)(void);
};

typedef const struct sym_gpu_backend *(*sym_gpu_backend_fn)(void);

#endif
