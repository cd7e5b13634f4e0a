/*
 * symrun.c — the PE side of the symrun bootstrap. symrun hands every PE one end
 * of a socket pair (its number in SYMTRAIN_BOOT_FD) and its rank and the job
 * size (SYMTRAIN_RANK, SYMTRAIN_SIZE). An all-gather is one message to symrun
 * and one reply once every PE has sent its part.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../util/util.h"
#include "bootstrap.h"
#include "wire.h"

typedef struct {
    int fd;
} symrun_boot_t;

static int symrun_allgather(sym_boot_t *b, const void *in, void *out, size_t len) {
    symrun_boot_t *s = b->impl;
    if (len > UINT32_MAX / (size_t)b->size) return -1;
    if (sym__wire_send(s->fd, SYM_WIRE_ALLGATHER, in, (uint32_t)len)) goto lost;
    sym_wire_hdr_t h;
    if (sym__wire_read(s->fd, &h, sizeof h)) goto lost;
    if (h.type != SYM_WIRE_ALLGATHER || h.len != len * (size_t)b->size) {
        sym__warn("bootstrap", "symrun answered an all-gather of %zu bytes with %u bytes",
                  len * (size_t)b->size, h.len);
        return -1;
    }
    if (sym__wire_read(s->fd, out, h.len)) goto lost;
    return 0;
lost:
    /* symrun is gone or is ending the job: nothing useful can follow. */
    sym__warn("bootstrap", "lost the connection to symrun; the job is ending");
    _exit(1);
}

static noreturn void symrun_abort(sym_boot_t *b, int status) {
    symrun_boot_t *s = b->impl;
    int32_t st = status;
    sym__wire_send(s->fd, SYM_WIRE_ABORT, &st, sizeof st);
    /* symrun ends every PE; exit in case it is slow to. */
    _exit(status ? status : 1);
}

static void symrun_fini(sym_boot_t *b) {
    symrun_boot_t *s = b->impl;
    sym__wire_send(s->fd, SYM_WIRE_FINI, NULL, 0);
    close(s->fd);
    free(s);
    free(b);
}

sym_boot_t *sym__boot_symrun_init(void) {
    long fd = sym__env_long("SYMTRAIN_BOOT_FD", -1);
    long rank = sym__env_long("SYMTRAIN_RANK", -1);
    long size = sym__env_long("SYMTRAIN_SIZE", -1);
    if (fd < 0 || rank < 0 || size < 1 || rank >= size)
        sym__fatal("shmem_init",
                   "SYMTRAIN_BOOT_FD, SYMTRAIN_RANK and SYMTRAIN_SIZE are incomplete; start "
                   "the program with symrun -n N");
    sym_boot_t *b = calloc(1, sizeof *b);
    symrun_boot_t *s = calloc(1, sizeof *s);
    if (!b || !s) sym__fatal("shmem_init", "out of memory");
    s->fd = (int)fd;
    b->name = "symrun";
    b->rank = (int)rank;
    b->size = (int)size;
    b->allgather = symrun_allgather;
    b->abort_job = symrun_abort;
    b->fini = symrun_fini;
    b->impl = s;
    return b;
}
