/*
 * wire.h — framing of messages on a stream socket, shared by the PEs' side of
 * the symrun bootstrap and by symrun itself: a header {type, length} then the
 * payload. Reads and writes loop over short transfers and EINTR.
 */
#ifndef SYM_WIRE_H
#define SYM_WIRE_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

enum sym_wire_type {
    SYM_WIRE_ALLGATHER = 1, /* PE -> symrun: my record; symrun -> PE: all records */
    SYM_WIRE_ABORT = 2,     /* PE -> symrun: end the job; payload: int32 status */
    SYM_WIRE_FINI = 3,      /* PE -> symrun: shmem_finalize done; the PE may now exit */
};

typedef struct {
    uint32_t type;
    uint32_t len;
} sym_wire_hdr_t;

/* symrun --hang-timeout: a memory file (its number in SYMTRAIN_HEARTBEAT_FD)
 * of one SYM_HEARTBEAT_SLOT-byte slot per PE; PE r bumps the uint64 at the
 * start of slot r (sym__heartbeat) while it makes progress, symrun reads them. */
#define SYM_HEARTBEAT_SLOT 64

/* 0 on success, -1 on error or end of stream. A closed peer is an error, not
 * a SIGPIPE. */
static inline int sym__wire_write(int fd, const void *buf, size_t len) {
    const char *p = (const char *)buf;
    while (len) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
        if (n < 0 && errno == ENOTSOCK) n = write(fd, p, len);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static inline int sym__wire_read(int fd, void *buf, size_t len) {
    char *p = (char *)buf;
    while (len) {
        ssize_t n = read(fd, p, len);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* One frame: its header into *h, its payload into a new buffer (h->len bytes
 * and a NUL after them; the caller frees it). 0 on success; -1 on an error,
 * the end of the stream or no memory, with *payload NULL. */
static inline int sym__wire_recv(int fd, sym_wire_hdr_t *h, char **payload) {
    *payload = NULL;
    if (sym__wire_read(fd, h, sizeof *h)) return -1;
    char *p = (char *)malloc((size_t)h->len + 1);
    if (!p || sym__wire_read(fd, p, h->len)) {
        free(p);
        return -1;
    }
    p[h->len] = '\0';
    *payload = p;
    return 0;
}

static inline int sym__wire_send(int fd, uint32_t type, const void *payload, uint32_t len) {
    sym_wire_hdr_t h = {type, len};
    if (sym__wire_write(fd, &h, sizeof h)) return -1;
    return len ? sym__wire_write(fd, payload, len) : 0;
}

#endif
