/*
 * gpu_init.c — bringing up NVSHMEM through symshmem: a heap larger than the
 * GPU is refused on every PE with SHMEMX_GPU_EHEAP before NVSHMEM starts; then
 * a real start; each PE on its own GPU (unless shared on purpose); symmetric
 * memory at the same offset everywhere, reachable from every PE, holding what
 * its owner wrote (read through the peer address shmemx_gpu_ptr gives).
 * SKIP without a GPU, or with fewer GPUs than PEs.
 */
#include <stdlib.h>

#include "gpu_test.h"

int main(void) {
    shmem_init();
    test_pe = shmem_my_pe();
    int npes = shmem_n_pes();

    /* ---- a heap that cannot fit ---- */
    setenv("SYMTRAIN_GPU_HEAP_SIZE", "100000G", 1);
    int st = shmemx_gpu_init();
    gpu_test_skip_if_no_gpu(st);
    CHECK_EQ_INT(st, SHMEMX_GPU_EHEAP);
    unsetenv("SYMTRAIN_GPU_HEAP_SIZE");

    /* ---- the real start ---- */
    st = shmemx_gpu_init();
    gpu_test_skip_if_no_gpu(st);
    CHECK_EQ_INT(st, 0);
    CHECK_EQ_INT(shmemx_gpu_init(), 0); /* again: a no-op */
    int dev = shmemx_gpu_device(), ndev = 0;
    CUDA(cudaGetDeviceCount(&ndev));
    CHECK(dev >= 0 && dev < ndev, "device %d of %d", dev, ndev);
    int cur = -1;
    CUDA(cudaGetDevice(&cur));
    CHECK_EQ_INT(cur, dev);

    /* every PE's device, to check one GPU per PE unless sharing was asked for */
    int *devs = shmem_malloc(sizeof(int) * (size_t)npes);
    CHECK(devs, "shmem_malloc");
    for (int p = 0; p < npes; p++) shmem_putmem(&devs[test_pe], &dev, sizeof dev, p);
    shmem_barrier_all();
    const char *share = getenv("SYMTRAIN_GPU_SHARE");
    if (!(share && *share && strcmp(share, "0")) && npes == shmem_team_n_pes(SHMEM_TEAM_SHARED))
        for (int p = 0; p < npes; p++)
            for (int q = p + 1; q < npes; q++)
                CHECK(devs[p] != devs[q], "PEs %d and %d share GPU %d", p, q, devs[p]);

    /* ---- symmetric memory ---- */
    const size_t n = 1 << 20;
    uint32_t *buf = shmemx_gpu_malloc(n * sizeof(uint32_t));
    CHECK(buf, "shmemx_gpu_malloc");
    CHECK(shmemx_gpu_ptr(buf, test_pe) == buf, "ptr to self must be the address itself");
    uint32_t *host = malloc(n * sizeof(uint32_t));
    for (size_t i = 0; i < n; i++) host[i] = (uint32_t)test_pe * 0x01000000u + (uint32_t)i;
    CUDA(cudaMemcpy(buf, host, n * sizeof(uint32_t), cudaMemcpyHostToDevice));
    CUDA(cudaDeviceSynchronize());
    shmem_barrier_all();
    for (int p = 0; p < npes; p++) {
        uint32_t *peer = shmemx_gpu_ptr(buf, p);
        if (!peer) {
            printf("PE %d: PE %d is not reachable by loads and stores (no NVLink/P2P)\n",
                   test_pe, p);
            continue;
        }
        CUDA(cudaMemcpy(host, peer, n * sizeof(uint32_t), cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < n; i++)
            CHECK(host[i] == (uint32_t)p * 0x01000000u + (uint32_t)i,
                  "PE %d's word %zu reads %#x through the peer address", p, i, host[i]);
    }
    shmem_barrier_all();
    shmemx_gpu_free(buf);
    free(host);
    shmem_free(devs);

    CHECK_EQ_INT(shmemx_gpu_finalize(), 0);
    CHECK_EQ_INT(shmemx_gpu_device(), -1);
    shmem_barrier_all();
    if (test_pe == 0) printf("gpu_init: ok (%d PEs, GPU %d on PE 0)\n", npes, dev);
    shmem_finalize();
    return 0;
}
