/*
 * symtrain/tensor.h — tensors, the memory pools they live in, matrix products.
 *
 * A sym_tensor_t is a plain descriptor: a data pointer, a shape and strides (in
 * elements), a dtype (fp32, bf16, fp16, int32) with its element size, a device
 * (the CPU or a GPU), and a slot for the placement a distributed tensor adds
 * (sym_layout_t; NULL for a tensor that lives whole on one PE). It owns its
 * memory only when it came from sym_tensor_alloc; views (sym_tensor_view,
 * sym_tensor_rows, sym_tensor_t2) share their parent's memory.
 *
 * Memory comes from pools. A pool is one region carved up by the deterministic
 * buddy allocator (src/util/buddy.h): private pools take their region from
 * malloc, symmetric pools from shmem_malloc. Creating a symmetric pool is
 * collective, and since every PE makes the same allocations in the same order,
 * every tensor in it sits at the same offset on every PE — which is what lets
 * the gradient all-reduce run in place on symmetric memory.
 *
 * Matrix products use OpenBLAS's cblas_sgemm when the build found it, and a
 * cache-blocked kernel otherwise (sym_blas_name says which); bf16 and fp16
 * operands are widened to fp32 (exactly) and accumulated in fp32. Sizes are
 * 64-bit; products larger than BLAS's int are cut into pieces.
 */
#ifndef SYMTRAIN_TENSOR_H
#define SYMTRAIN_TENSOR_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SYM_MAX_DIMS 4

/* Element types. Named SYM_DT_* (the runtime's reduction types are another enum). */
typedef enum { SYM_DT_F32 = 0, SYM_DT_BF16 = 1, SYM_DT_F16 = 2, SYM_DT_I32 = 3 } sym_dtype_t;
typedef enum { SYM_CPU = 0, SYM_GPU = 1 } sym_device_t;

/* Bytes per element: 4, 2, 2, 4. */
size_t sym_dtype_size(sym_dtype_t dt);
/* "fp32", "bf16", "fp16", "int32"; sym_dtype_parse takes those names and
 * returns 0, or SYM_EINVAL. */
const char *sym_dtype_name(sym_dtype_t dt);
int sym_dtype_parse(const char *name, sym_dtype_t *out);

/* bf16 / fp16 <-> fp32. Narrowing rounds to nearest even; NaN stays NaN. */
float sym_bf16_to_f32(uint16_t h);
uint16_t sym_f32_to_bf16(float f);
float sym_f16_to_f32(uint16_t h);
uint16_t sym_f32_to_f16(float f);
/* dst (n) of type `to` from src (n) of type `from`, both float types. */
void sym_convert(void *dst, sym_dtype_t to, const void *src, sym_dtype_t from, size_t n);

/* ---- pools ---- */

typedef struct sym_pool sym_pool_t; /* opaque */

/* A pool of `bytes` (rounded up to 64) named `name` (used in messages).
 * symmetric != 0: the region comes from shmem_malloc, so this call is
 * collective (every PE, same arguments). Returns 0 or a SYM_E* code. */
int sym_pool_create(const char *name, size_t bytes, int symmetric, sym_pool_t **out);
/* Free the region (collective for a symmetric pool). NULL is ignored. */
void sym_pool_destroy(sym_pool_t *pool);
/* `bytes` of zeroed memory, 64-byte aligned; NULL (and sym_last_error says
 * how full the pool is) when no block is large enough. */
void *sym_pool_alloc(sym_pool_t *pool, size_t bytes);
/* Give back memory from sym_pool_alloc. Returns 0, or SYM_EINVAL if `ptr`
 * is not a live allocation of this pool. */
int sym_pool_free(sym_pool_t *pool, void *ptr);
size_t sym_pool_size(const sym_pool_t *pool);
size_t sym_pool_free_bytes(const sym_pool_t *pool);
/* The bytes the pool has handed out (its buddy blocks in use, each a power of
 * two), and the block behind one live allocation (0 if `ptr` is not one). */
size_t sym_pool_used_bytes(const sym_pool_t *pool);
size_t sym_pool_block_bytes(const sym_pool_t *pool, const void *ptr);
int sym_pool_is_symmetric(const sym_pool_t *pool);
/* The pool's region: [base, base + sym_pool_size). */
void *sym_pool_base(const sym_pool_t *pool);

/* ---- tensors ---- */

typedef struct sym_layout sym_layout_t; /* a distributed tensor's placement (opaque here) */

typedef struct {
    void *data;
    int ndim;
    int64_t shape[SYM_MAX_DIMS];
    int64_t stride[SYM_MAX_DIMS]; /* elements between neighbours along each dim */
    sym_dtype_t dtype;
    size_t elem_size;             /* sym_dtype_size(dtype) */
    sym_device_t device;
    int device_index;             /* which GPU, for SYM_GPU */
    sym_layout_t *layout;         /* NULL: not distributed */
    sym_pool_t *pool; /* the owner when allocated; NULL for a view */
    void *data_slot;  /* for the user; the library never touches it */
} sym_tensor_t;

/* A contiguous zeroed fp32 tensor of `shape` (ndim 1..SYM_MAX_DIMS) from `pool`. */
int sym_tensor_alloc(sym_tensor_t *t, sym_pool_t *pool, int ndim, const int64_t *shape);
/* The same of any dtype. */
int sym_tensor_alloc_dt(sym_tensor_t *t, sym_pool_t *pool, sym_dtype_t dt, int ndim,
                        const int64_t *shape);
/* Return an allocated tensor's memory to its pool; a view is just cleared. */
void sym_tensor_free(sym_tensor_t *t);
/* A contiguous fp32 view of existing memory (CPU). */
sym_tensor_t sym_tensor_view(float *data, int ndim, const int64_t *shape);
/* The same of any dtype. */
sym_tensor_t sym_tensor_view_dt(void *data, sym_dtype_t dt, int ndim, const int64_t *shape);
/* The 2-D contiguous fp32 view data (rows, cols), the common case. */
sym_tensor_t sym_tensor_2d(float *data, int64_t rows, int64_t cols);
/* The data as floats (an fp32 tensor's). */
static inline float *sym_tensor_f32(const sym_tensor_t *t) { return (float *)t->data; }
/* Rows [first, first + count) of a 2-D tensor, as a view. */
sym_tensor_t sym_tensor_rows(const sym_tensor_t *t, int64_t first, int64_t count);
/* The transpose of a 2-D tensor, as a view (strides swapped, no copy). */
sym_tensor_t sym_tensor_t2(const sym_tensor_t *t);
int64_t sym_tensor_numel(const sym_tensor_t *t);
int sym_tensor_is_contiguous(const sym_tensor_t *t);

/* ---- matrix products ---- */

/* Row-major C (m,n) = alpha * op(A) (m,k) * op(B) (k,n) + beta * C, where op(X)
 * is X or its transpose (ta / tb != 0); lda, ldb, ldc are row strides of A, B, C
 * as stored. beta == 0 overwrites C (NaNs in it do not leak through). */
void sym_gemm(int ta, int tb, int64_t m, int64_t n, int64_t k, float alpha, const float *A,
              int64_t lda, const float *B, int64_t ldb, float beta, float *C, int64_t ldc);
/* The same with A and B of any float dtype (fp32, bf16, fp16), accumulated
 * in fp32; C is fp32. Returns 0, SYM_EINVAL (an int32 operand) or SYM_ENOMEM. */
int sym_gemm_ex(int ta, int tb, int64_t m, int64_t n, int64_t k, float alpha, const void *A,
                sym_dtype_t adt, int64_t lda, const void *B, sym_dtype_t bdt, int64_t ldb,
                float beta, float *C, int64_t ldc);
/* c = alpha * a @ b + beta * c for 2-D tensors. Each of a, b may be a
 * transposed view (unit stride along dim 0) or row-major (unit stride along
 * dim 1), of any float dtype; c must be row-major fp32. Returns 0 or
 * SYM_EINVAL (shapes, layouts or dtypes). */
int sym_matmul(sym_tensor_t *c, const sym_tensor_t *a, const sym_tensor_t *b, float alpha,
               float beta);
/* "OpenBLAS 0.3.21 (cblas_sgemm)" or "built-in blocked kernel". */
const char *sym_blas_name(void);
/* Threads a matrix product may use (OpenBLAS); the built-in kernel uses one. */
void sym_blas_set_threads(int threads);

#ifdef __cplusplus
}
#endif

#endif
