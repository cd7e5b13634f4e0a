/*
 * symtrain_memstore.c — `symtrain memstore SOCKET`: holds the in-memory
 * snapshot store (ckpt/peer.h) for jobs that symrun does not start (torchrun,
 * mpirun/srun, Kubernetes): one memory file, handed to every PE that connects
 * to the Unix socket SOCKET (SYMTRAIN_MEMCKPT_SOCKET=SOCKET in the PEs'
 * environment), kept across the job's restarts because this process, not the
 * PEs, holds it. One per host, started before the job (a launcher's pre-step,
 * a pod's sidecar); with the job's PEs on several hosts, one on each, each
 * holding its own host's PEs' snapshots and their buddies' copies (ckpt/peer.c).
 *
 * Only processes of the same user are served (the socket is 0600 and each
 * peer's credentials are checked). SIGTERM or SIGINT ends it: the socket is
 * removed and the memory freed. A job's first attempt empties the store, so
 * one holder serves job after job.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "symtrain_cli.h"

static volatile sig_atomic_t stop;

static void on_signal(int sig) {
    (void)sig;
    stop = 1;
}

/* The store's descriptor to the connected peer, if it is this user's. */
static void serve(int conn, int fd) {
    struct ucred who;
    socklen_t len = sizeof who;
    if (getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &who, &len) < 0 || who.uid != getuid()) {
        fprintf(stderr, "symtrain memstore: refused a connection from uid %ld: only this user's "
                        "PEs are served\n", (long)(len == sizeof who ? (long)who.uid : -1L));
        return;
    }
    char byte = 'S';
    struct iovec iov = {&byte, 1};
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(sizeof(int))];
    } ctl;
    memset(&ctl, 0, sizeof ctl);
    struct msghdr msg = {0};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = ctl.buf;
    msg.msg_controllen = sizeof ctl.buf;
    struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &fd, sizeof fd);
    if (sendmsg(conn, &msg, MSG_NOSIGNAL) != 1)
        fprintf(stderr, "symtrain memstore: could not hand the store to PID %ld: %s\n",
                (long)who.pid, strerror(errno));
}

int sym_cli_memstore(int argc, char **argv) {
    if (argc == 1 && (!strcmp(argv[0], "-h") || !strcmp(argv[0], "--help"))) {
        printf("usage: symtrain memstore SOCKET\n"
               "  holds the in-memory snapshots (--mem-ckpt-every) of jobs that symrun does not\n"
               "  start, across their restarts: start it on each host before the job, and give\n"
               "  the PEs SYMTRAIN_MEMCKPT_SOCKET=SOCKET. SIGTERM or SIGINT ends it.\n");
        return 0;
    }
    if (argc != 1 || !argv[0][0]) {
        fprintf(stderr, "symtrain memstore: name the socket to listen on, e.g. "
                        "symtrain memstore /run/symtrain/store.sock\n");
        return 2;
    }
    const char *path = argv[0];
    struct sockaddr_un addr = {0};
    addr.sun_family = AF_UNIX;
    if (strlen(path) >= sizeof addr.sun_path) {
        fprintf(stderr, "symtrain memstore: the socket path %s is longer than %zu bytes: choose a "
                        "shorter one\n", path, sizeof addr.sun_path - 1);
        return 2;
    }
    strcpy(addr.sun_path, path);
    int fd = memfd_create("symtrain-memstore", MFD_CLOEXEC);
    if (fd < 0) {
        fprintf(stderr, "symtrain memstore: memfd_create failed: %s\n", strerror(errno));
        return 1;
    }
    int srv = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    mode_t old = umask(077); /* the socket 0600: this user's PEs alone */
    int bound = srv >= 0 && bind(srv, (struct sockaddr *)&addr, sizeof addr) == 0;
    umask(old);
    if (!bound || listen(srv, 64) < 0) {
        fprintf(stderr, "symtrain memstore: cannot listen on %s: %s%s\n", path, strerror(errno),
                errno == EADDRINUSE ? " (another holder runs there, or remove the stale socket)"
                                    : "");
        return 1;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal; /* no SA_RESTART: accept returns EINTR */
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    printf("symtrain memstore: holding the in-memory snapshots of the jobs whose PEs have "
           "SYMTRAIN_MEMCKPT_SOCKET=%s\n", path);
    fflush(stdout);
    int rc = 0;
    while (!stop) {
        int conn = accept4(srv, NULL, NULL, SOCK_CLOEXEC);
        if (conn < 0) {
            if (errno == EINTR || errno == ECONNABORTED) continue;
            fprintf(stderr, "symtrain memstore: accept on %s failed: %s\n", path, strerror(errno));
            rc = 1;
            break;
        }
        serve(conn, fd);
        close(conn);
    }
    close(srv);
    unlink(path);
    close(fd);
    return rc;
}
