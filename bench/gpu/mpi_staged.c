/*
 * mpi_staged.c — symbench-gpu-mpi: the baseline for `symbench-gpu gpu-put`,
 * GPU-to-GPU transfer the way a program without GPU-aware communication does
 * it: cudaMemcpy device-to-host, MPI_Send/MPI_Recv between the host buffers,
 * cudaMemcpy host-to-device (pinned host memory, one GPU per rank).
 *
 *   mpirun -np 2 symbench-gpu-mpi [-b MIN] [-e MAX] > mpi.tsv
 *
 * Prints, for each size, one line "size lat_us bw_GBps": latency is half a
 * ping-pong round trip (D2H, send, recv, H2D each way), bandwidth is rank 0
 * streaming to rank 1 (D2H + send on one side, recv + H2D on the other).
 */
#include <cuda_runtime.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../size.h"

#define CUDA(call)                                                                   \
    do {                                                                             \
        cudaError_t e_ = (call);                                                     \
        if (e_ != cudaSuccess) {                                                     \
            fprintf(stderr, "symbench-gpu-mpi: %s: %s\n", #call, cudaGetErrorString(e_)); \
            MPI_Abort(MPI_COMM_WORLD, 1);                                            \
        }                                                                            \
    } while (0)

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    size_t lo = 8, hi = (size_t)64 << 20;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "-b")) lo = parse_size(argv[i + 1]);
        if (!strcmp(argv[i], "-e")) hi = parse_size(argv[i + 1]);
    }
    if (size != 2) {
        if (rank == 0) fprintf(stderr, "symbench-gpu-mpi: run with mpirun -np 2\n");
        MPI_Finalize();
        return 2;
    }
    int ndev = 0;
    CUDA(cudaGetDeviceCount(&ndev));
    CUDA(cudaSetDevice(rank % ndev));
    char *dbuf, *hbuf;
    CUDA(cudaMalloc((void **)&dbuf, hi));
    CUDA(cudaMallocHost((void **)&hbuf, hi));
    CUDA(cudaMemset(dbuf, rank + 1, hi));
    if (rank == 0) printf("# size lat_us bw_GBps (MPI with host staging, %d GPU(s))\n", ndev);
    for (size_t n = lo; n <= hi; n *= 2) {
        int iters = n <= (64u << 10) ? 1000 : n <= (4u << 20) ? 100 : 20;
        double lat[3], bw[3];
        for (int r = 0; r < 3; r++) {
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            for (int i = 0; i < iters; i++) {
                if (rank == 0) {
                    CUDA(cudaMemcpy(hbuf, dbuf, n, cudaMemcpyDeviceToHost));
                    MPI_Send(hbuf, (int)n, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
                    MPI_Recv(hbuf, (int)n, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    CUDA(cudaMemcpy(dbuf, hbuf, n, cudaMemcpyHostToDevice));
                } else {
                    MPI_Recv(hbuf, (int)n, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    CUDA(cudaMemcpy(dbuf, hbuf, n, cudaMemcpyHostToDevice));
                    CUDA(cudaMemcpy(hbuf, dbuf, n, cudaMemcpyDeviceToHost));
                    MPI_Send(hbuf, (int)n, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
                }
            }
            lat[r] = (MPI_Wtime() - t0) * 1e6 / iters / 2;
            MPI_Barrier(MPI_COMM_WORLD);
            t0 = MPI_Wtime();
            for (int i = 0; i < iters; i++) {
                if (rank == 0) {
                    CUDA(cudaMemcpy(hbuf, dbuf, n, cudaMemcpyDeviceToHost));
                    MPI_Send(hbuf, (int)n, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
                } else {
                    MPI_Recv(hbuf, (int)n, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    CUDA(cudaMemcpy(dbuf, hbuf, n, cudaMemcpyHostToDevice));
                }
            }
            char ack = 0;
            if (rank == 1) MPI_Send(&ack, 1, MPI_BYTE, 0, 2, MPI_COMM_WORLD);
            else MPI_Recv(&ack, 1, MPI_BYTE, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            bw[r] = (double)n * iters / (MPI_Wtime() - t0) / 1e9;
        }
        qsort(lat, 3, sizeof lat[0], cmp);
        qsort(bw, 3, sizeof bw[0], cmp);
        if (rank == 0) {
            printf("%zu %.3f %.3f\n", n, lat[1], bw[1]);
            fflush(stdout);
        }
    }
    cudaFreeHost(hbuf);
    cudaFree(dbuf);
    MPI_Finalize();
    return 0;
}
