/*
 * backend_cuda.h — what the files of libsymtrain_cuda share: the calling
 * thread's error sentence (the table's error(), core/device.h), the check of
 * a CUDA runtime call, and the entries parallel/dtensor_cuda.cu adds to the
 * table.
 */
#ifndef SYM_TRAIN_BACKEND_CUDA_H
#define SYM_TRAIN_BACKEND_CUDA_H

#include <stddef.h>

#include <cuda_runtime.h>

#include <shmem.h>
#include <symtrain/error.h>
#include <symtrain/tensor.h>

/* Record the sentence and return code. */
int sym__cuda_fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *sym__cuda_error(void);

/* A CUDA runtime call: on failure, the call, file:line and the cause. */
#define CK(call)                                                                          \
    do {                                                                                  \
        cudaError_t e_ = (call);                                                          \
        if (e_ != cudaSuccess)                                                            \
            return sym__cuda_fail(SYM_EIO, "%s failed at %s:%d: %s", #call, __FILE__,     \
                                  __LINE__, cudaGetErrorString(e_));                      \
    } while (0)

/* ---- GPU local tensors of sym_redistribute (core/device.h says what each does) ---- */
int sym__cuda_dev_use(int device);
void *sym__cuda_dev_alloc(size_t bytes);
void sym__cuda_dev_free(void *p);
int sym__cuda_dev_copy2d(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                         size_t rows);
int sym__cuda_dev_zero(void *dst, size_t bytes);
int sym__cuda_dev_convert(void *dst, sym_dtype_t to, const void *src, sym_dtype_t from, size_t n,
                          float div);
int sym__cuda_dev_sum(shmem_team_t team, float *x, size_t n);
int sym__cuda_dev_sum_scatter(shmem_team_t team, float *x, size_t n);
int sym__cuda_dev_gather(shmem_team_t team, void *x, size_t bytes);
int sym__cuda_dev_alltoall(shmem_team_t team, void *dst, const void *src, size_t bytes);

#endif
