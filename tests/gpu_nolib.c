/*
 * gpu_nolib.c — the GPU part's errors that need no GPU: a collective before
 * shmemx_gpu_init returns SHMEMX_GPU_ENOINIT, and a backend (NVSHMEM) that
 * cannot be loaded makes shmemx_gpu_init return SHMEMX_GPU_ENOLIB on every PE
 * (one line says which library and how to get it) instead of the program
 * failing to start. Runs everywhere, GPU or not.
 */
#include <shmem.h>
#include <shmemx_gpu.h>
#include <stdlib.h>

#include "test.h"

int main(void) {
    shmem_init();
    test_pe = shmem_my_pe();

    float x = 1.0f;
    CHECK_EQ_INT(shmemx_gpu_allreduce(&x, &x, 1, SHMEMX_FLOAT32, SHMEMX_SUM, NULL),
                 SHMEMX_GPU_ENOINIT);
    CHECK(shmemx_gpu_malloc(64) == NULL, "malloc before init must fail");
    CHECK_EQ_INT(shmemx_gpu_device(), -1);

    setenv("SYMTRAIN_GPU_BACKEND", "/nonexistent/libsymgpu_nvshmem.so", 1);
    int st = shmemx_gpu_init();
    CHECK_EQ_INT(st, SHMEMX_GPU_ENOLIB);
    CHECK(strstr(shmemx_gpu_strerror(st), "NVSHMEM") != NULL, "strerror: %s",
          shmemx_gpu_strerror(st));
    /* still uninitialised, still fine to ask again */
    CHECK_EQ_INT(shmemx_gpu_allgather(&x, &x, 1, SHMEMX_FLOAT32, NULL), SHMEMX_GPU_ENOINIT);
    CHECK_EQ_INT(shmemx_gpu_broadcast_team(SHMEM_TEAM_WORLD, &x, &x, 1, SHMEMX_FLOAT32, 0, NULL),
                 SHMEMX_GPU_ENOINIT);
    float y = 0.0f;
    CHECK_EQ_INT(shmemx_gpu_alltoall_team(SHMEM_TEAM_WORLD, &y, &x, 1, SHMEMX_FLOAT32, NULL),
                 SHMEMX_GPU_ENOINIT);
    CHECK_EQ_INT(shmemx_gpu_finalize(), 0);

    shmem_barrier_all();
    if (test_pe == 0) printf("gpu_nolib: ok (%d PEs)\n", shmem_n_pes());
    shmem_finalize();
    return 0;
}
