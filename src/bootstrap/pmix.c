/*
 * pmix.c — bootstrap under a PMIx launcher (Open MPI's mpirun, srun
 * --mpi=pmix). The rank and job size come from PMIx; an all-gather is a
 * PMIx_Put of our record under a key for that round, a fence that collects the
 * data, and a PMIx_Get of every rank's record. Ending the job is PMIx_Abort, so
 * the launcher brings every rank down.
 */
#include <pmix.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../util/util.h"
#include "bootstrap.h"

typedef struct {
    pmix_proc_t me;
    unsigned round;
} pmix_boot_t;

static int pmix_allgather(sym_boot_t *b, const void *in, void *out, size_t len) {
    pmix_boot_t *p = b->impl;
    char key[PMIX_MAX_KEYLEN];
    snprintf(key, sizeof key, "symtrain.ag.%u", p->round++);
    pmix_value_t v;
    PMIX_VALUE_CONSTRUCT(&v);
    v.type = PMIX_BYTE_OBJECT;
    v.data.bo.bytes = (char *)in;
    v.data.bo.size = len;
    pmix_status_t rc = PMIx_Put(PMIX_GLOBAL, key, &v);
    v.data.bo.bytes = NULL; /* not ours to free */
    if (rc == PMIX_SUCCESS) rc = PMIx_Commit();
    pmix_proc_t all;
    PMIX_LOAD_PROCID(&all, p->me.nspace, PMIX_RANK_WILDCARD);
    pmix_info_t info;
    bool collect = true;
    PMIX_INFO_LOAD(&info, PMIX_COLLECT_DATA, &collect, PMIX_BOOL);
    if (rc == PMIX_SUCCESS) rc = PMIx_Fence(&all, 1, &info, 1);
    PMIX_INFO_DESTRUCT(&info);
    if (rc != PMIX_SUCCESS) {
        sym__warn("bootstrap", "PMIx exchange failed: %s", PMIx_Error_string(rc));
        return -1;
    }
    for (int r = 0; r < b->size; r++) {
        pmix_proc_t peer;
        PMIX_LOAD_PROCID(&peer, p->me.nspace, (pmix_rank_t)r);
        pmix_value_t *got = NULL;
        rc = PMIx_Get(&peer, key, NULL, 0, &got);
        if (rc != PMIX_SUCCESS || !got || got->type != PMIX_BYTE_OBJECT || got->data.bo.size != len) {
            sym__warn("bootstrap", "PMIx_Get of rank %d's record failed: %s", r,
                      PMIx_Error_string(rc));
            if (got) PMIX_VALUE_RELEASE(got);
            return -1;
        }
        memcpy((char *)out + (size_t)r * len, got->data.bo.bytes, len);
        PMIX_VALUE_RELEASE(got);
    }
    return 0;
}

static noreturn void pmix_abort(sym_boot_t *b, int status) {
    (void)b;
    PMIx_Abort(status ? status : 1, "symtrain: ending the job", NULL, 0);
    _exit(status ? status : 1);
}

static void pmix_fini(sym_boot_t *b) {
    PMIx_Finalize(NULL, 0);
    free(b->impl);
    free(b);
}

sym_boot_t *sym__boot_pmix_init(void) {
    pmix_boot_t *p = calloc(1, sizeof *p);
    sym_boot_t *b = calloc(1, sizeof *b);
    if (!p || !b) sym__fatal("shmem_init", "out of memory");
    pmix_status_t rc = PMIx_Init(&p->me, NULL, 0);
    if (rc != PMIX_SUCCESS)
        sym__fatal("shmem_init", "PMIx_Init failed (%s): was the program started by mpirun or "
                                 "srun --mpi=pmix?",
                   PMIx_Error_string(rc));
    pmix_proc_t all;
    PMIX_LOAD_PROCID(&all, p->me.nspace, PMIX_RANK_WILDCARD);
    pmix_value_t *val = NULL;
    rc = PMIx_Get(&all, PMIX_JOB_SIZE, NULL, 0, &val);
    if (rc != PMIX_SUCCESS || !val)
        sym__fatal("shmem_init", "PMIx does not know the job size: %s", PMIx_Error_string(rc));
    b->size = (int)val->data.uint32;
    PMIX_VALUE_RELEASE(val);
    b->rank = (int)p->me.rank;
    b->name = "pmix";
    b->allgather = pmix_allgather;
    b->abort_job = pmix_abort;
    b->fini = pmix_fini;
    b->impl = p;
    return b;
}
