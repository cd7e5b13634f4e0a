/*
 * gpu_user_kernel.cu — a program's own kernel calling NVSHMEM's device API on
 * memory from shmemx_gpu_malloc, the way include/shmemx_gpu.h documents:
 * compiled with -rdc for sm_90, linked with libnvshmem_device.a, and
 * nvshmem_init() called once after shmemx_gpu_init() to ready this module.
 *
 * Each PE puts one word into every PE's slot for it (nvshmem_int_p), checks on
 * the device that nvshmem_ptr reaches every peer where NVLink does, and then
 * every PE must find every peer's word. SKIP without enough GPUs.
 */
#include <nvshmem.h>
#include <nvshmemx.h>

#include "gpu_test.h"

/* slots[p] on every PE receives PE p's word; reach[p] = 1 if nvshmem_ptr works */
__global__ void put_words(int *slots, int *reach, int me, int npes) {
    int p = threadIdx.x;
    if (p < npes) {
        nvshmem_int_p(&slots[me], me * 100 + 7, p);
        reach[p] = nvshmem_ptr(slots, p) != NULL;
    }
    nvshmem_quiet();
}

int main(void) {
    shmem_init();
    int me = test_pe = shmem_my_pe(), npes = shmem_n_pes();
    int st = shmemx_gpu_init();
    gpu_test_skip_if_no_gpu(st);
    CHECK_EQ_INT(st, 0);
    nvshmem_init(); /* this program's module: NVSHMEM is already up, this only counts */
    CHECK_EQ_INT(nvshmem_my_pe(), me);
    CHECK_EQ_INT(nvshmem_n_pes(), npes);

    int *slots = (int *)shmemx_gpu_malloc(sizeof(int) * (size_t)npes);
    CHECK(slots, "shmemx_gpu_malloc");
    int *reach;
    CUDA(cudaMalloc((void **)&reach, sizeof(int) * (size_t)npes));
    CUDA(cudaMemset(slots, 0xff, sizeof(int) * (size_t)npes));
    CUDA(cudaDeviceSynchronize());
    shmem_barrier_all();
    put_words<<<1, 32>>>(slots, reach, me, npes);
    CUDA(cudaGetLastError());
    CUDA(cudaDeviceSynchronize());
    shmem_barrier_all();

    int *h = (int *)malloc(sizeof(int) * (size_t)npes), *r = (int *)malloc(sizeof(int) * (size_t)npes);
    CUDA(cudaMemcpy(h, slots, sizeof(int) * (size_t)npes, cudaMemcpyDeviceToHost));
    CUDA(cudaMemcpy(r, reach, sizeof(int) * (size_t)npes, cudaMemcpyDeviceToHost));
    for (int p = 0; p < npes; p++) {
        CHECK(h[p] == p * 100 + 7, "slot %d holds %d, want %d", p, h[p], p * 100 + 7);
        CHECK(r[p] == (shmemx_gpu_ptr(slots, p) != NULL), "device and host nvshmem_ptr "
              "disagree about PE %d", p);
    }
    shmem_barrier_all();
    free(h);
    free(r);
    cudaFree(reach);
    shmemx_gpu_free(slots);
    nvshmem_finalize();
    CHECK_EQ_INT(shmemx_gpu_finalize(), 0);
    if (me == 0) printf("gpu_user_kernel: ok (%d PEs)\n", npes);
    shmem_finalize();
    return 0;
}
