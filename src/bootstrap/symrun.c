/*
 * symrun.c — the PE side of the symrun bootstrap. symrun hands every PE one end
 * of a socket pair (its number in SYMTRAIN_BOOT_FD) and its rank and the job
 * size (SYMTRAIN_RANK, SYMTRAIN_SIZE). An all-gather is one message to symrun
 * and one reply once every PE has sent its part. With --hang-timeout symrun
 * also hands over its heartbeat file (SYMTRAIN_HEARTBEAT_FD): the PE maps its
 * slot and bumps it while it makes progress (sym__heartbeat, util.h).
 */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../util/util.h"
#include "bootstrap.h"
#include "wire.h"

typedef struct {
    int fd;
    void *beats;       /* the heartbeat file's mapping; NULL without --hang-timeout */
    size_t beats_size;
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
    if (s->beats) {
        sym__heartbeat = NULL;
        munmap(s->beats, s->beats_size);
    }
    sym__wire_send(s->fd, SYM_WIRE_FINI, NULL, 0);
    close(s->fd);
    free(s);
    free(b);
}

/* Map this PE's heartbeat slot when symrun watches (--hang-timeout). */
static void map_heartbeat(symrun_boot_t *s, long rank) {
    long fd = sym__env_int("SYMTRAIN_HEARTBEAT_FD", -1, 0, INT_MAX);
    if (fd < 0) return;
    struct stat st;
    if (fstat((int)fd, &st) < 0 || st.st_size < (off_t)((rank + 1) * SYM_HEARTBEAT_SLOT))
        sym__fatal("shmem_init", "SYMTRAIN_HEARTBEAT_FD=%ld is not symrun's heartbeat file for "
                                 "PE %ld; start the program with symrun",
                   fd, rank);
    void *m = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, (int)fd, 0);
    if (m == MAP_FAILED) sym__sys_fail(__FILE__, __LINE__, "mmap(heartbeat)");
    close((int)fd);
    s->beats = m;
    s->beats_size = (size_t)st.st_size;
    sym__heartbeat = (uint64_t *)((char *)m + rank * SYM_HEARTBEAT_SLOT);
    sym__beat();
}

sym_boot_t *sym__boot_symrun_init(void) {
    long fd = sym__env_int("SYMTRAIN_BOOT_FD", -1, 0, INT_MAX);
    long rank = sym__env_int("SYMTRAIN_RANK", -1, 0, INT_MAX - 1);
    long size = sym__env_int("SYMTRAIN_SIZE", -1, 1, INT_MAX);
    if (fd < 0 || rank < 0 || size < 1 || rank >= size)
        sym__fatal("shmem_init",
                   "SYMTRAIN_BOOT_FD, SYMTRAIN_RANK and SYMTRAIN_SIZE are incomplete; start "
                   "the program with symrun -n N");
    sym_boot_t *b = calloc(1, sizeof *b);
    symrun_boot_t *s = calloc(1, sizeof *s);
    if (!b || !s) sym__fatal("shmem_init", "out of memory");
    s->fd = (int)fd;
    map_heartbeat(s, rank);
    b->name = "symrun";
    b->rank = (int)rank;
    b->size = (int)size;
    b->allgather = symrun_allgather;
    b->abort_job = symrun_abort;
    b->fini = symrun_fini;
    b->impl = s;
    return b;
}
