/*
 * spec_pipeline — the OpenSHMEM 1.5 specification's pipelined reduction on
 * two contexts (section 9.5): each stage's blocks go out with
 * shmem_ctx_int_put_nbi on one context while the previous stage, completed by
 * shmem_ctx_quiet on the other context and shmem_sync_all, is accumulated.
 * Unchanged from the specification except that the result is checked. The
 * specification's example reuses a stage buffer two stages later with no
 * synchronisation in between; a barrier after each accumulation (marked)
 * removes that race, since this program checks its result.
 *
 * @npes 2 4
 */
#include <shmem.h>
#include <stdio.h>

#define LEN 8192 /* Full buffer length */
#define PLEN 512 /* Length of each pipeline stage */

int in_buf[LEN], out_buf[LEN];

int main(void) {
    int i, j, *pbuf[2];
    shmem_ctx_t ctx[2];

    shmem_init();
    int me = shmem_my_pe();
    int npes = shmem_n_pes();

    pbuf[0] = shmem_malloc(PLEN * npes * sizeof(int));
    pbuf[1] = shmem_malloc(PLEN * npes * sizeof(int));

    int ret_0 = shmem_ctx_create(0, &ctx[0]);
    int ret_1 = shmem_ctx_create(0, &ctx[1]);
    if (ret_0 || ret_1) shmem_global_exit(1);

    for (i = 0; i < LEN; i++) {
        in_buf[i] = me;
        out_buf[i] = 0;
    }

    int p_idx = 0, p = 0; /* Index of ctx and pbuf (p_idx) for current pipeline stage (p) */
    for (i = 1; i <= npes; i++)
        shmem_ctx_int_put_nbi(ctx[p_idx], &pbuf[p_idx][PLEN * me], &in_buf[PLEN * p], PLEN,
                              (me + i) % npes);

    /* Issue communication for pipeline stage p, then accumulate results for stage p-1 */
    for (p = 1; p < LEN / PLEN; p++) {
        p_idx ^= 1;
        for (i = 1; i <= npes; i++)
            shmem_ctx_int_put_nbi(ctx[p_idx], &pbuf[p_idx][PLEN * me], &in_buf[PLEN * p], PLEN,
                                  (me + i) % npes);

        shmem_ctx_quiet(ctx[p_idx ^ 1]);
        shmem_sync_all();
        for (i = 0; i < npes; i++)
            for (j = 0; j < PLEN; j++) out_buf[PLEN * (p - 1) + j] += pbuf[p_idx ^ 1][PLEN * i + j];
        shmem_sync_all(); /* added: the buffer is reused by the next stage but one */
    }

    shmem_ctx_quiet(ctx[p_idx]);
    shmem_sync_all();
    for (i = 0; i < npes; i++)
        for (j = 0; j < PLEN; j++) out_buf[PLEN * (p - 1) + j] += pbuf[p_idx][PLEN * i + j];

    int errors = 0, want = npes * (npes - 1) / 2;
    for (i = 0; i < LEN; i++) errors += out_buf[i] != want;
    if (me == 0) printf("spec_pipeline: %s (%d of %d elements wrong)\n", errors ? "FAIL" : "PASS",
                        errors, LEN);
    shmem_finalize();
    return errors != 0;
}
