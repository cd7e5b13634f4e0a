/*
 * bootstrap.h — how the PEs of a job find each other before any symmetric
 * memory exists: each bootstrap knows this PE's rank and the job size and can
 * all-gather a small record from every PE. Everything else (shared-memory
 * mapping, fabric addresses) is built on that one collective.
 *
 *   symrun  — the launcher on this machine; PEs talk to it over an inherited socket
 *   env     — torchrun/Kubernetes variables; a TCP store run by rank 0
 *   pmix    — mpirun / srun --mpi=pmix
 *   single  — a program started by hand: one PE
 */
#ifndef SYM_BOOTSTRAP_H
#define SYM_BOOTSTRAP_H

#include <stddef.h>
#include <stdnoreturn.h>

typedef struct sym_boot sym_boot_t;
struct sym_boot {
    const char *name;
    int rank, size;
    /* out receives size * len bytes: PE i's `len` bytes at out + i * len.
     * Every PE must pass the same len. Returns 0, or -1 after printing why. */
    int (*allgather)(sym_boot_t *b, const void *in, void *out, size_t len);
    /* Ask whatever launched the job to end every PE with `status`. Does not return. */
    void (*abort_job)(sym_boot_t *b, int status);
    void (*fini)(sym_boot_t *b);
    void *impl;
};

/* Pick the bootstrap from the environment and start it. Fatal on failure. */
sym_boot_t *sym__boot_init(void);

sym_boot_t *sym__boot_symrun_init(void);
sym_boot_t *sym__boot_single_init(void);
sym_boot_t *sym__boot_env_init(void);
sym_boot_t *sym__boot_pmix_init(void); /* NULL when built without PMIx */

/* An all-gather with no payload. */
int sym__boot_barrier(sym_boot_t *b);

#endif
