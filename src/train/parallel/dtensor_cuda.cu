/*
 * dtensor_cuda.cu — the GPU's part of sym_redistribute (parallel/dtensor.c
 * plans and packs; these move the bytes): device memory, strided copies, a
 * dtype conversion with the average's division, and fp32 sums and an
 * all-gather over a team on the GPU collectives (shmemx_gpu_*_team). Every
 * call runs on the legacy default stream of the calling thread's device and
 * is complete on return, so dtensor.c's host code may reuse what it passed.
 */
#include <shmemx_gpu.h>

#include "common.cuh"
#include "models/backend_cuda.h"

static int sync_dev(void) {
    CK(cudaStreamSynchronize(0));
    return SYM_OK;
}

int sym__cuda_dev_use(int device) {
    if (shmemx_gpu_device() < 0)
        return sym__cuda_fail(SYM_EINVAL, "redistribute: GPU tensors need the GPU runtime: "
                                          "call shmemx_gpu_init() on every PE first");
    CK(cudaSetDevice(device));
    return SYM_OK;
}

void *sym__cuda_dev_alloc(size_t bytes) {
    void *p = NULL;
    cudaError_t e = cudaMalloc(&p, bytes ? bytes : 16);
    if (e != cudaSuccess) {
        cudaGetLastError();
        sym__cuda_fail(SYM_ENOMEM, "redistribute: cudaMalloc of %zu bytes of working memory "
                       "failed: %s", bytes, cudaGetErrorString(e));
        return NULL;
    }
    return p;
}

void sym__cuda_dev_free(void *p) {
    if (p) cudaFree(p);
}

int sym__cuda_dev_copy2d(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                         size_t rows) {
    if (!width || !rows) return SYM_OK;
    CK(cudaMemcpy2DAsync(dst, dpitch, src, spitch, width, rows, cudaMemcpyDeviceToDevice, 0));
    return sync_dev();
}

int sym__cuda_dev_zero(void *dst, size_t bytes) {
    if (!bytes) return SYM_OK;
    CK(cudaMemsetAsync(dst, 0, bytes, 0));
    return sync_dev();
}

/* y[i] = x[i] / div in fp32, stored as Out (the CPU's x / (float)p, then one rounding) */
template <typename In, typename Out>
__global__ void convert_kernel(Out *y, const In *x, size_t n, float div) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float v = to_f(x[i]);
        if (div != 1.0f) v = v / div;
        y[i] = from_f<Out>(v);
    }
}

template <typename In>
static void convert_from(void *dst, sym_dtype_t to, const In *src, size_t n, float div) {
    unsigned blocks = (unsigned)((n + 255) / 256 < 4096 ? (n + 255) / 256 : 4096);
    if (to == SYM_DT_F32)
        convert_kernel<<<blocks, 256>>>((float *)dst, src, n, div);
    else if (to == SYM_DT_BF16)
        convert_kernel<<<blocks, 256>>>((bf16 *)dst, src, n, div);
    else
        convert_kernel<<<blocks, 256>>>((f16 *)dst, src, n, div);
}

int sym__cuda_dev_convert(void *dst, sym_dtype_t to, const void *src, sym_dtype_t from, size_t n,
                          float div) {
    if (to == SYM_DT_I32 || from == SYM_DT_I32)
        return sym__cuda_fail(SYM_EINVAL, "redistribute: int32 tensors are not converted");
    if (!n) return SYM_OK;
    if (from == SYM_DT_F32)
        convert_from(dst, to, (const float *)src, n, div);
    else if (from == SYM_DT_BF16)
        convert_from(dst, to, (const bf16 *)src, n, div);
    else
        convert_from(dst, to, (const f16 *)src, n, div);
    CK(cudaGetLastError());
    return sync_dev();
}

static int coll_done(int e, const char *what, size_t n) {
    if (e)
        return sym__cuda_fail(SYM_EIO, "redistribute: %s of %zu elements on the GPU failed: %s",
                              what, n, shmemx_gpu_strerror(e));
    return sync_dev();
}

int sym__cuda_dev_sum(shmem_team_t team, float *x, size_t n) {
    if (!n) return SYM_OK;
    return coll_done(shmemx_gpu_allreduce_team(team, x, x, n, SHMEMX_FLOAT32, SHMEMX_SUM, NULL),
                     "an all-reduce (shmemx_gpu_allreduce_team)", n);
}

int sym__cuda_dev_sum_scatter(shmem_team_t team, float *x, size_t n) {
    if (!n) return SYM_OK;
    size_t me = (size_t)shmem_team_my_pe(team), all = n * (size_t)shmem_team_n_pes(team);
    return coll_done(shmemx_gpu_reduce_scatter_team(team, x + me * n, x, all, SHMEMX_FLOAT32,
                                                    SHMEMX_SUM, NULL),
                     "a reduce-scatter (shmemx_gpu_reduce_scatter_team)", all);
}

int sym__cuda_dev_gather(shmem_team_t team, void *x, size_t bytes) {
    if (!bytes) return SYM_OK;
    if (bytes % 16)
        return sym__cuda_fail(SYM_EINVAL, "redistribute: a GPU all-gather's blocks are "
                                          "multiples of 16 bytes, not %zu", bytes);
    size_t me = (size_t)shmem_team_my_pe(team), n = bytes / 4;
    return coll_done(shmemx_gpu_allgather_team(team, x, (char *)x + me * bytes, n,
                                               SHMEMX_FLOAT32, NULL),
                     "an all-gather (shmemx_gpu_allgather_team)", n);
}

int sym__cuda_dev_alltoall(shmem_team_t team, void *dst, const void *src, size_t bytes) {
    if (!bytes) return SYM_OK;
    if (bytes % 16)
        return sym__cuda_fail(SYM_EINVAL, "redistribute: a GPU all-to-all's blocks are "
                                          "multiples of 16 bytes, not %zu", bytes);
    return coll_done(shmemx_gpu_alltoall_team(team, dst, src, bytes / 4, SHMEMX_FLOAT32, NULL),
                     "an all-to-all (shmemx_gpu_alltoall_team)", bytes / 4);
}
