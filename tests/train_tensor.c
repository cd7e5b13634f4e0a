/*
 * train_tensor — memory pools and tensors, on every PE of the job.
 *
 * Private pools: aligned, zeroed, non-overlapping blocks; the same sequence of
 * calls gives the same offsets (the buddy allocator is deterministic); a full
 * pool says so; freeing a foreign pointer is refused. Views: rows, transpose,
 * contiguity. Symmetric pools: a tensor allocated by every PE in the same order
 * is at the same place on every PE, so a peer can write into it with
 * shmem_putmem; and the model's parameters and gradients are one symmetric
 * region, as the in-place gradient all-reduce needs.
 */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <symtrain/symtrain.h>

#include "test.h"

static void check_private(test_rng_t *rng) {
    sym_pool_t *p, *q;
    CHECK(sym_pool_create("test", 1 << 20, 0, &p) == 0, "%s", sym_last_error());
    CHECK(sym_pool_create("twin", 1 << 20, 0, &q) == 0, "%s", sym_last_error());
    CHECK(!sym_pool_is_symmetric(p) && sym_pool_size(p) == 1 << 20, "pool properties");
    enum { T = 40 };
    sym_tensor_t t[T], u[T];
    char *base = sym_pool_base(p);
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < T; i++) {
            int64_t shape[2] = {1 + (int64_t)(test_next(rng) % 30), 1 + (int64_t)(test_next(rng) % 50)};
            CHECK(sym_tensor_alloc(&t[i], p, 2, shape) == 0, "%s", sym_last_error());
            CHECK(sym_tensor_alloc(&u[i], q, 2, shape) == 0, "%s", sym_last_error());
            CHECK(((uintptr_t)t[i].data & 63) == 0, "tensor %d is not 64-byte aligned", i);
            CHECK((char *)t[i].data - base == (char *)u[i].data - (char *)sym_pool_base(q),
                  "the same calls gave different offsets (tensor %d)", i);
            CHECK(sym_tensor_numel(&t[i]) == shape[0] * shape[1] && sym_tensor_is_contiguous(&t[i]),
                  "tensor %d shape", i);
            for (int64_t k = 0; k < shape[0] * shape[1]; k++)
                CHECK(sym_tensor_f32(&t[i])[k] == 0.0f, "tensor %d is not zeroed at %lld", i, (long long)k);
            for (int64_t k = 0; k < shape[0] * shape[1]; k++) sym_tensor_f32(&t[i])[k] = (float)(i + 1);
        }
        /* nothing overlapped: every tensor still holds its own value */
        for (int i = 0; i < T; i++)
            for (int64_t k = 0; k < sym_tensor_numel(&t[i]); k++)
                CHECK(sym_tensor_f32(&t[i])[k] == (float)(i + 1), "tensor %d was overwritten at %lld", i, (long long)k);
        /* free in a shuffled order, same on both pools */
        for (int i = T - 1; i > 0; i--) {
            int j = (int)(test_next(rng) % (uint64_t)(i + 1));
            sym_tensor_t a = t[i], b = u[i];
            t[i] = t[j], u[i] = u[j];
            t[j] = a, u[j] = b;
        }
        for (int i = 0; i < T; i++) {
            sym_tensor_free(&t[i]);
            sym_tensor_free(&u[i]);
            CHECK(t[i].data == NULL, "free left the descriptor pointing at memory");
        }
        CHECK(sym_pool_free_bytes(p) == sym_pool_size(p), "round %d: %zu of %zu bytes free after "
              "freeing everything", round, sym_pool_free_bytes(p), sym_pool_size(p));
    }
    /* a full pool says so */
    CHECK(sym_pool_alloc(p, 2 << 20) == NULL, "a 2 MiB block came from a 1 MiB pool");
    CHECK(strstr(sym_last_error(), "pool 'test' is full") != NULL, "message: %s", sym_last_error());
    int x;
    CHECK(sym_pool_free(p, &x) == SYM_EINVAL, "freeing a foreign pointer was accepted");
    int64_t bad[5] = {1, 1, 1, 1, 1};
    CHECK(sym_tensor_alloc(&t[0], p, 5, bad) == SYM_EINVAL, "a 5-D tensor was accepted");
    /* views share memory */
    int64_t shape[2] = {4, 6};
    CHECK(sym_tensor_alloc(&t[0], p, 2, shape) == 0, "%s", sym_last_error());
    sym_tensor_t rows = sym_tensor_rows(&t[0], 1, 2), tr = sym_tensor_t2(&t[0]);
    CHECK(rows.data == sym_tensor_f32(&t[0]) + 6 && rows.shape[0] == 2 && rows.pool == NULL, "rows view");
    CHECK(tr.shape[0] == 6 && tr.shape[1] == 4 && tr.stride[0] == 1 && tr.stride[1] == 6 &&
          !sym_tensor_is_contiguous(&tr), "transposed view");
    sym_tensor_free(&rows); /* a view: must not free the parent's memory */
    CHECK(sym_pool_free_bytes(p) < sym_pool_size(p), "freeing a view freed its parent");
    sym_tensor_free(&t[0]);
    sym_pool_destroy(p);
    sym_pool_destroy(q);
}

static void check_symmetric(void) {
    int me = shmem_my_pe(), n = shmem_n_pes();
    sym_pool_t *p;
    CHECK(sym_pool_create("sym", 1 << 20, 1, &p) == 0, "%s", sym_last_error());
    CHECK(sym_pool_is_symmetric(p), "pool is not symmetric");
    sym_tensor_t a, b;
    int64_t sa = 1000, sb = 77;
    CHECK(sym_tensor_alloc(&a, p, 1, &sa) == 0 && sym_tensor_alloc(&b, p, 1, &sb) == 0, "%s",
          sym_last_error());
    for (int pe = 0; pe < n; pe++)
        CHECK(shmem_addr_accessible(a.data, pe) && shmem_addr_accessible(sym_tensor_f32(&b) + 76, pe),
              "a tensor of a symmetric pool is not symmetric for PE %d", pe);
    /* every PE writes its number into its right neighbour's tensor, once every
     * PE has allocated (and zeroed) it */
    shmem_barrier_all();
    float mine[77];
    for (int i = 0; i < 77; i++) mine[i] = (float)(me * 1000 + i);
    shmem_putmem(b.data, mine, sizeof mine, (me + 1) % n);
    shmem_barrier_all();
    int left = (me + n - 1) % n;
    for (int i = 0; i < 77; i++)
        CHECK(sym_tensor_f32(&b)[i] == (float)(left * 1000 + i), "element %d from PE %d: %g", i, left, (double)sym_tensor_f32(&b)[i]);
    shmem_barrier_all();
    sym_pool_destroy(p);

    /* the model: parameters and gradients in one symmetric region */
    sym_model_config_t cfg;
    memset(&cfg, 0, sizeof cfg);
    CHECK(sym_model_parse("mlp:784-64-10", &cfg) == 0, "%s", sym_last_error());
    cfg.seed = 3;
    sym_model_t *m;
    CHECK(sym_model_create(&cfg, 8, 1, &m) == 0, "%s", sym_last_error());
    size_t P = sym_model_num_params(m);
    CHECK(P == 784 * 64 + 64 + 64 * 10 + 10, "parameter count %zu", P);
    float *w = sym_model_params(m), *g = sym_model_grads(m);
    for (int pe = 0; pe < n; pe++)
        CHECK(shmem_addr_accessible(w, pe) && shmem_addr_accessible(g + P + SYM_GRAD_CTRL - 1, pe),
              "parameters or gradients are not symmetric");
    CHECK(g >= w + P && (size_t)(g - w) <= 4 * P + 64, "parameters and gradients are not one region "
          "(%td floats apart for %zu parameters)", g - w, P);
    /* same seed, same weights on every PE: compare with PE 0's, once PE 0 has
     * initialised them */
    shmem_barrier_all();
    float *w0 = malloc(P * sizeof *w0);
    shmem_getmem(w0, w, P * sizeof *w0, 0);
    CHECK(memcmp(w0, w, P * sizeof *w0) == 0, "PE %d's initial weights differ from PE 0's", me);
    free(w0);
    shmem_barrier_all();
    sym_model_destroy(m);
}

int main(void) {
    shmem_init();
    uint64_t seed = test_pe_start("train_tensor");
    test_rng_t rng = test_rng(seed, (uint64_t)test_pe);
    check_private(&rng);
    check_symmetric();
    if (test_pe == 0) printf("train_tensor: ok\n");
    shmem_finalize();
    return 0;
}
