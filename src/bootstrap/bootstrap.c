/*
 * bootstrap.c — choosing the bootstrap from the environment, and the trivial
 * one-PE bootstrap for a program started without a launcher.
 *
 * Order: symrun's socket (SYMTRAIN_BOOT_FD), then PMIx (PMIX_RANK, set by mpirun
 * and srun --mpi=pmix), then torchrun-style variables (RANK, WORLD_SIZE; the
 * env bootstrap then insists on MASTER_ADDR and MASTER_PORT), else a single PE.
 * SYMTRAIN_BOOTSTRAP forces one.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../util/util.h"
#include "bootstrap.h"

int sym__boot_barrier(sym_boot_t *b) {
    char dummy[1 << 6];
    if (b->size > (int)sizeof dummy) {
        char *buf = malloc((size_t)b->size);
        if (!buf) return -1;
        int rc = b->allgather(b, "", buf, 1);
        free(buf);
        return rc;
    }
    return b->allgather(b, "", dummy, 1);
}

/* ---- single: one PE, no launcher ---- */

static int single_allgather(sym_boot_t *b, const void *in, void *out, size_t len) {
    (void)b;
    memcpy(out, in, len);
    return 0;
}
static noreturn void single_abort(sym_boot_t *b, int status) {
    (void)b;
    _exit(status);
}
static void single_fini(sym_boot_t *b) { (void)b; }

sym_boot_t *sym__boot_single_init(void) {
    static sym_boot_t b = {"single", 0, 1, single_allgather, single_abort, single_fini, NULL};
    return &b;
}

#ifndef SYM_HAVE_PMIX
/* Built without libpmix: a PMIx launch falls back to the other bootstraps. */
sym_boot_t *sym__boot_pmix_init(void) { return NULL; }
#endif

/* ---- choice ---- */

static int env_set(const char *n) {
    const char *s = getenv(n);
    return s && *s;
}

sym_boot_t *sym__boot_init(void) {
    static const char *const names[] = {"symrun", "pmix", "env", "single", NULL};
    switch (sym__env_choice("SYMTRAIN_BOOTSTRAP", names, -1)) {
    case 0: return sym__boot_symrun_init();
    case 1: {
        sym_boot_t *b = sym__boot_pmix_init();
        if (!b)
            sym__fatal("shmem_init", "SYMTRAIN_BOOTSTRAP=pmix, but this build has no PMIx "
                                     "support; install libpmix-dev and rebuild");
        return b;
    }
    case 2: return sym__boot_env_init();
    case 3: return sym__boot_single_init();
    default: break; /* unset: from the launcher's variables */
    }
    if (env_set("SYMTRAIN_BOOT_FD")) return sym__boot_symrun_init();
    if (env_set("PMIX_RANK") && env_set("PMIX_NAMESPACE")) {
        sym_boot_t *b = sym__boot_pmix_init();
        if (b) return b;
        sym__warn("shmem_init", "started by a PMIx launcher, but this build has no PMIx "
                                "support (install libpmix-dev and rebuild)");
    }
    if ((env_set("RANK") && env_set("WORLD_SIZE")) || env_set("PET_NNODES"))
        return sym__boot_env_init();
    return sym__boot_single_init();
}
