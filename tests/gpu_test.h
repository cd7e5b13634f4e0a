/*
 * gpu_test.h — what the GPU tests share beyond shmem_test.h: the CUDA call
 * check and the SKIP (exit 77, one line why) where there is no GPU or fewer
 * GPUs than PEs. C and CUDA C++ alike.
 */
#ifndef SYM_GPU_TEST_H
#define SYM_GPU_TEST_H

#include <cuda_runtime.h>
#include <shmemx_gpu.h>

#include "shmem_test.h"

#define CUDA(call)                                                                   \
    do {                                                                             \
        cudaError_t e_ = (call);                                                     \
        CHECK(e_ == cudaSuccess, "%s: %s", #call, cudaGetErrorString(e_));           \
    } while (0)

/* `st` from shmemx_gpu_init: end the test as skipped where the GPUs are missing. */
static inline void gpu_test_skip_if_no_gpu(int st) {
    if (st == SHMEMX_GPU_ENODEV || st == SHMEMX_GPU_ETOOFEW) {
        if (shmem_my_pe() == 0) printf("SKIP: %s\n", shmemx_gpu_strerror(st));
        shmem_finalize();
        exit(77);
    }
}

#endif
