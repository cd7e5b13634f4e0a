/*
 * matmul.cu — the linear layers' matrix products through cuBLASLt: operands
 * of the compute type (bf16 or fp16 with fp32 accumulation; fp32 with plain
 * fp32 multiply-adds, or TF32 where symcu_blas_use_tf32 asks), the compute
 * type out for activations and fp32 out for weight gradients, the bias and
 * GELU (tanh) fused into the epilogue.
 *
 * cuBLASLt is column-major; our tensors are row-major, and a row-major (R,C)
 * matrix is a column-major (C,R) one with the same leading dimension. So
 *
 *   forward   out (N,OC) = inp (N,C) @ W^T           col-major: out' (OC,N) = W'^T (OC,C) inp' (C,N)
 *   dinp      dinp (N,C) += dout (N,OC) @ W (OC,C)   col-major: dinp' (C,N) = W' (C,OC) dout' (OC,N)
 *             (or =: beta 0)
 *   dweight   dW (OC,C) += dout^T @ inp               col-major: dW' (C,OC) = inp' (C,N) dout'^T (N,OC)
 *
 * (X' is X read column-major.) The bias is a vector over the rows of out'
 * (the epilogue's BIAS); the bias gradient is the sum of dout' over the k = N
 * dimension of the dweight product (BGRADB). BGRADB writes rather than adds,
 * so it goes to a scratch vector that a small kernel then adds into dbias;
 * where cuBLASLt offers no algorithm with it, our own column-sum kernel (per
 * row-chunk partials, then a fixed-order sum) does the same.
 *
 * cuBLAS documents its results as the same bits run to run on one
 * architecture and SM count with one workspace per stream; we use one
 * workspace per handle, so one handle belongs to one stream at a time.
 */
#include <cublasLt.h>
#include <stdio.h>
#include <stdlib.h>

#include "common.cuh"

#define WORKSPACE_BYTES ((size_t)32 << 20) /* cuBLAS's recommendation for Hopper */
#define BIAS_CHUNKS 32                     /* row chunks of the column-sum kernel */

struct symcu_blas {
    cublasLtHandle_t lt;
    void *workspace;
    float *bias_scratch; /* BIAS_CHUNKS * max_bias floats */
    int max_bias;
    int use_bgradb, used_bgradb;
    int tf32; /* fp32 operands through TF32 tensor cores */
};

static const char *lt_status(cublasStatus_t s) {
    switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "success";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "not initialized";
    case CUBLAS_STATUS_ALLOC_FAILED: return "allocation failed";
    case CUBLAS_STATUS_INVALID_VALUE: return "invalid value";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "architecture mismatch";
    case CUBLAS_STATUS_MAPPING_ERROR: return "mapping error";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "execution failed";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "internal error";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "not supported";
    default: return "unknown status";
    }
}

/* A failed cuBLASLt call: record it and jump to the cleanup label `out`. */
#define LT(call)                                                                         \
    do {                                                                                 \
        cublasStatus_t s_ = (call);                                                      \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                               \
            rc = symcu__fail(SYM_EIO, __FILE__, __LINE__, "%s failed: %s", #call,        \
                             lt_status(s_));                                             \
            goto out;                                                                    \
        }                                                                                \
    } while (0)

/* ---- the handle ---- */

int symcu_blas_create(symcu_blas_t **out, int max_bias_grad) {
    *out = NULL;
    int rc = SYM_OK;
    symcu_blas_t *h = (symcu_blas_t *)calloc(1, sizeof *h);
    if (!h) return symcu__fail(SYM_ENOMEM, __FILE__, __LINE__, "out of host memory for a cuBLASLt handle");
    h->max_bias = max_bias_grad > 0 ? max_bias_grad : 0;
    h->use_bgradb = 1;
    LT(cublasLtCreate(&h->lt));
    {
        cudaError_t e = cudaMalloc(&h->workspace, WORKSPACE_BYTES);
        if (e == cudaSuccess && h->max_bias)
            e = cudaMalloc((void **)&h->bias_scratch,
                           (size_t)BIAS_CHUNKS * (size_t)h->max_bias * sizeof(float));
        if (e != cudaSuccess) {
            rc = symcu__fail(SYM_ENOMEM, __FILE__, __LINE__,
                             "cudaMalloc of the cuBLASLt workspace (%zu MiB) and bias scratch "
                             "(%d floats) failed: %s",
                             WORKSPACE_BYTES >> 20, BIAS_CHUNKS * h->max_bias,
                             cudaGetErrorString(e));
            goto out;
        }
    }
    *out = h;
    return SYM_OK;
out:
    symcu_blas_destroy(h);
    return rc;
}

void symcu_blas_destroy(symcu_blas_t *h) {
    if (!h) return;
    cudaFree(h->bias_scratch);
    cudaFree(h->workspace);
    if (h->lt) cublasLtDestroy(h->lt);
    free(h);
}

void symcu_blas_use_bgradb(symcu_blas_t *h, int on) { h->use_bgradb = on != 0; }
void symcu_blas_use_tf32(symcu_blas_t *h, int on) { h->tf32 = on != 0; }
int symcu_blas_used_bgradb(const symcu_blas_t *h) { return h->used_bgradb; }

/* ---- one product ---- */

typedef struct {
    void *D;               /* (m,n) col-major, ld m; also C when beta != 0 */
    cudaDataType_t dt;     /* D's type */
    const void *A, *B;
    cudaDataType_t abt;    /* A's and B's type */
    int ta, tb;            /* op(A) = A^T, op(B) = B^T */
    int m, n, k;
    float beta;
    cublasLtEpilogue_t epi;
    const void *bias;      /* BIAS: (m) of the bias type; BGRADB: (n) written */
    cudaDataType_t biast;
    void *aux;             /* GELU_AUX: (m,n) ld m, D's type */
    int ldb, ldd;          /* B's and D's leading dimensions where not the packed ones (0) */
} lt_mm_t;

#define LT_NO_ALGO 1 /* lt_matmul's "no algorithm for this", distinct from the errors */

/* D = alpha op(A) op(B) + beta D with the epilogue, column-major. Returns 0,
 * LT_NO_ALGO when the heuristic offers nothing (nothing recorded), or an
 * error. */
static int lt_matmul(symcu_blas_t *h, const lt_mm_t *p, cudaStream_t stream) {
    int rc = SYM_OK;
    cublasLtMatmulDesc_t desc = NULL;
    cublasLtMatrixLayout_t la = NULL, lb = NULL, ld = NULL;
    cublasLtMatmulPreference_t pref = NULL;
    cublasLtMatmulHeuristicResult_t res;
    int nres = 0;
    cublasOperation_t ta = p->ta ? CUBLAS_OP_T : CUBLAS_OP_N, tb = p->tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    size_t ws = WORKSPACE_BYTES;
    float alpha = 1.0f, beta = p->beta;
    /* fp32 operands: plain fp32 (CUBLAS_COMPUTE_32F never uses TF32; _FAST_TF32 does) */
    cublasComputeType_t ct =
        p->abt == CUDA_R_32F && h->tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    LT(cublasLtMatmulDescCreate(&desc, ct, CUDA_R_32F));
    LT(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    LT(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    LT(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &p->epi, sizeof p->epi));
    if (p->bias) {
        int32_t bt = (int32_t)p->biast;
        LT(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof bt));
        LT(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &p->bias,
                                          sizeof p->bias));
    }
    if (p->aux) {
        int64_t aux_ld = p->m;
        LT(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &p->aux,
                                          sizeof p->aux));
        LT(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &aux_ld,
                                          sizeof aux_ld));
    }
    /* stored shapes: A is (m,k) or, transposed, (k,m); B (k,n) or (n,k) */
    LT(cublasLtMatrixLayoutCreate(&la, p->abt, p->ta ? p->k : p->m, p->ta ? p->m : p->k,
                                  p->ta ? p->k : p->m));
    LT(cublasLtMatrixLayoutCreate(&lb, p->abt, p->tb ? p->n : p->k, p->tb ? p->k : p->n,
                                  p->ldb ? p->ldb : p->tb ? p->n : p->k));
    LT(cublasLtMatrixLayoutCreate(&ld, p->dt, p->m, p->n, p->ldd ? p->ldd : p->m));
    LT(cublasLtMatmulPreferenceCreate(&pref));
    LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws,
                                            sizeof ws));
    {
        cublasStatus_t s = cublasLtMatmulAlgoGetHeuristic(h->lt, desc, la, lb, ld, ld, pref, 1,
                                                          &res, &nres);
        if (s == CUBLAS_STATUS_NOT_SUPPORTED || (s == CUBLAS_STATUS_SUCCESS && nres == 0)) {
            rc = LT_NO_ALGO;
            goto out;
        }
        LT(s);
    }
    LT(cublasLtMatmul(h->lt, desc, &alpha, p->A, la, p->B, lb, &beta, p->D, ld, p->D, ld,
                      &res.algo, h->workspace, WORKSPACE_BYTES, stream));
out:
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    if (ld) cublasLtMatrixLayoutDestroy(ld);
    if (lb) cublasLtMatrixLayoutDestroy(lb);
    if (la) cublasLtMatrixLayoutDestroy(la);
    if (desc) cublasLtMatmulDescDestroy(desc);
    return rc;
}

/* lt_matmul where "no algorithm" is an error too. */
static int lt_matmul_must(symcu_blas_t *h, const lt_mm_t *p, cudaStream_t stream,
                          const char *what) {
    int rc = lt_matmul(h, p, stream);
    if (rc == LT_NO_ALGO)
        return symcu__fail(SYM_EINVAL, __FILE__, __LINE__,
                           "%s: cuBLASLt has no algorithm for m=%d n=%d k=%d with epilogue %d",
                           what, p->m, p->n, p->k, (int)p->epi);
    return rc;
}

/* ---- bias gradient kernels ---- */

/* dbias (OC) += s (OC) */
__global__ void add_vec_kernel(float *dbias, const float *s, int OC) {
    int o = blockIdx.x * blockDim.x + threadIdx.x;
    if (o < OC) dbias[o] += s[o];
}

/* part (BIAS_CHUNKS,OC): part[c][o] = sum of dout[r][o] over the rows r of
 * chunk c = blockIdx.y, in row order. dout (N,OC) of type T. */
template <typename E>
__global__ void colsum_part_kernel(float *part, const E *dout, int N, int OC) {
    int o = blockIdx.x * blockDim.x + threadIdx.x;
    if (o >= OC) return;
    int per = (N + BIAS_CHUNKS - 1) / BIAS_CHUNKS;
    int r0 = blockIdx.y * per, r1 = min(N, r0 + per);
    float s = 0.0f;
    for (int r = r0; r < r1; r++) s += to_f(dout[(size_t)r * OC + o]);
    part[(size_t)blockIdx.y * OC + o] = s;
}

/* dbias (OC) += the chunks' partials, chunk 0 first. */
__global__ void colsum_final_kernel(float *dbias, const float *part, int OC) {
    int o = blockIdx.x * blockDim.x + threadIdx.x;
    if (o >= OC) return;
    float s = 0.0f;
    for (int c = 0; c < BIAS_CHUNKS; c++) s += part[(size_t)c * OC + o];
    dbias[o] += s;
}

static int bias_grad_kernels(symcu_blas_t *h, symcu_dtype_t dt, float *dbias, const void *dout,
                             int N, int OC, cudaStream_t stream) {
    dim3 grid((OC + 255) / 256, BIAS_CHUNKS);
    SYMCU_DISPATCH(dt, "matmul backward (bias)",
                   colsum_part_kernel<E><<<grid, 256, 0, stream>>>(h->bias_scratch,
                                                                   (const E *)dout, N, OC));
    SYMCU_LAUNCHED("colsum_part_kernel");
    colsum_final_kernel<<<(OC + 255) / 256, 256, 0, stream>>>(dbias, h->bias_scratch, OC);
    SYMCU_LAUNCHED("colsum_final_kernel");
    return SYM_OK;
}

/* ---- the wrappers ---- */

static int check_sizes(const char *fn, int N, int C, int OC) {
    if (N < 1 || C < 1 || OC < 1)
        return SYMCU_INVAL("%s: sizes N=%d C=%d OC=%d must be at least 1", fn, N, C, OC);
    return SYM_OK;
}

static const char *const dt_name[] = {"bf16", "fp16", "fp32"};

/* cuBLASLt's name of a compute type; -1 for one we do not know. */
static int lt_type(symcu_dtype_t dt, cudaDataType_t *t) {
    switch (dt) {
    case SYMCU_BF16: *t = CUDA_R_16BF; return 0;
    case SYMCU_F16: *t = CUDA_R_16F; return 0;
    case SYMCU_F32: *t = CUDA_R_32F; return 0;
    default: return -1;
    }
}

/* out (N,ld) = inp @ W^T + bias [GELU]; ld == OC but for the padded forms. */
static int matmul_forward(symcu_blas_t *h, symcu_dtype_t dt, void *out, int ld, const void *inp,
                          const void *weight, const void *bias, int N, int C, int OC,
                          void *pre_gelu, cudaStream_t stream) {
    cudaDataType_t t;
    if (lt_type(dt, &t)) return SYMCU_INVAL("matmul forward: unknown compute type %d", (int)dt);
    char fn[40];
    snprintf(fn, sizeof fn, "matmul forward%s (%s)", ld != OC ? ", ld" : "", dt_name[dt]);
    int rc = check_sizes(fn, N, C, OC);
    if (rc) return rc;
    if (ld < OC || (ld != OC && ld % 8))
        return SYMCU_INVAL("%s: leading dimension %d for OC=%d; it must be OC, or more and a "
                           "multiple of 8 (16-byte rows)", fn, ld, OC);
    if (pre_gelu && OC % 8)
        return SYMCU_INVAL("%s: with GELU, OC=%d must be a multiple of 8 (cuBLASLt's aux "
                           "leading dimension)",
                           fn, OC);
    lt_mm_t p = {};
    p.D = out;
    p.dt = t;
    p.A = weight;
    p.B = inp;
    p.abt = t;
    p.ta = 1;
    p.tb = 0;
    p.m = OC;
    p.n = N;
    p.k = C;
    p.ldd = ld;
    p.beta = 0.0f;
    p.bias = bias;
    p.biast = t;
    p.aux = pre_gelu;
    p.epi = bias ? (pre_gelu ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS : CUBLASLT_EPILOGUE_BIAS)
                 : (pre_gelu ? CUBLASLT_EPILOGUE_GELU_AUX : CUBLASLT_EPILOGUE_DEFAULT);
    return lt_matmul_must(h, &p, stream, fn);
}

int symcu_matmul_forward(symcu_blas_t *h, symcu_dtype_t dt, void *out, const void *inp,
                         const void *weight, const void *bias, int N, int C, int OC,
                         void *pre_gelu, cudaStream_t stream) {
    return matmul_forward(h, dt, out, OC, inp, weight, bias, N, C, OC, pre_gelu, stream);
}

int symcu_matmul_forward_ld(symcu_blas_t *h, symcu_dtype_t dt, void *out, int ld, const void *inp,
                            const void *weight, int N, int C, int OC, cudaStream_t stream) {
    return matmul_forward(h, dt, out, ld, inp, weight, NULL, N, C, OC, NULL, stream);
}

/* The backward of matmul_forward; dout (N,ld), ld == OC where dbias is given. */
static int matmul_backward(symcu_blas_t *h, symcu_dtype_t dt, void *dinp, symcu_grad_store_t store,
                           float *dweight, float *dbias, const void *dout, int ld,
                           const void *inp, const void *weight, int N, int C, int OC,
                           cudaStream_t stream) {
    cudaDataType_t t;
    if (lt_type(dt, &t)) return SYMCU_INVAL("matmul backward: unknown compute type %d", (int)dt);
    char fn[40];
    snprintf(fn, sizeof fn, "matmul backward%s (%s)", ld != OC ? ", ld" : "", dt_name[dt]);
    int rc = check_sizes(fn, N, C, OC);
    if (rc) return rc;
    if (ld < OC || (ld != OC && (ld % 8 || dbias)))
        return SYMCU_INVAL("%s: leading dimension %d for OC=%d; it must be OC, or more and a "
                           "multiple of 8 (16-byte rows) without a bias", fn, ld, OC);
    if (dbias && OC > h->max_bias)
        return SYMCU_INVAL("%s: a bias gradient of OC=%d elements; the handle was made for at "
                           "most %d (symcu_blas_create's max_bias_grad)",
                           fn, OC, h->max_bias);
    if (dinp) { /* dinp' (C,N) += or = W' (C,OC) dout' (OC,N) */
        lt_mm_t p = {};
        p.D = dinp;
        p.dt = t;
        p.A = weight;
        p.B = dout;
        p.abt = t;
        p.m = C;
        p.n = N;
        p.k = OC;
        p.ldb = ld;
        p.beta = store == SYMCU_GRAD_ADD ? 1.0f : 0.0f;
        p.epi = CUBLASLT_EPILOGUE_DEFAULT;
        if ((rc = lt_matmul_must(h, &p, stream, fn))) return rc;
    }
    if (dweight) { /* dW' (C,OC) += inp' (C,N) dout'^T (N,OC) [+ BGRADB: sum over N of dout] */
        lt_mm_t p = {};
        p.D = dweight;
        p.dt = CUDA_R_32F;
        p.A = inp;
        p.B = dout;
        p.abt = t;
        p.tb = 1;
        p.m = C;
        p.n = OC;
        p.k = N;
        p.ldb = ld;
        p.beta = 1.0f;
        p.epi = CUBLASLT_EPILOGUE_DEFAULT;
        int fused = 0;
        if (dbias && h->use_bgradb) {
            p.epi = CUBLASLT_EPILOGUE_BGRADB;
            p.bias = h->bias_scratch;
            p.biast = CUDA_R_32F;
            rc = lt_matmul(h, &p, stream);
            if (rc < 0) return rc;
            fused = rc == SYM_OK;
            if (!fused) { /* no algorithm with BGRADB: the plain product, our own sums */
                p.epi = CUBLASLT_EPILOGUE_DEFAULT;
                p.bias = NULL;
            }
        }
        if (!fused && (rc = lt_matmul_must(h, &p, stream, fn))) return rc;
        if (fused) {
            add_vec_kernel<<<(OC + 255) / 256, 256, 0, stream>>>(dbias, h->bias_scratch, OC);
            SYMCU_LAUNCHED("add_vec_kernel");
        } else if (dbias && (rc = bias_grad_kernels(h, dt, dbias, dout, N, OC, stream))) {
            return rc;
        }
        if (dbias) h->used_bgradb = fused;
    } else if (dbias) {
        if ((rc = bias_grad_kernels(h, dt, dbias, dout, N, OC, stream))) return rc;
        h->used_bgradb = 0;
    }
    return SYM_OK;
}

int symcu_matmul_backward(symcu_blas_t *h, symcu_dtype_t dt, void *dinp, symcu_grad_store_t store,
                          float *dweight, float *dbias, const void *dout, const void *inp,
                          const void *weight, int N, int C, int OC, cudaStream_t stream) {
    return matmul_backward(h, dt, dinp, store, dweight, dbias, dout, OC, inp, weight, N, C, OC,
                           stream);
}

int symcu_matmul_backward_ld(symcu_blas_t *h, symcu_dtype_t dt, void *dinp,
                             symcu_grad_store_t store, float *dweight, const void *dout, int ld,
                             const void *inp, const void *weight, int N, int C, int OC,
                             cudaStream_t stream) {
    return matmul_backward(h, dt, dinp, store, dweight, NULL, dout, ld, inp, weight, N, C, OC,
                           stream);
}
