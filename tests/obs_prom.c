/*
 * obs_prom — the Prometheus endpoint's own contract, over real HTTP on one
 * PE: a step lands in the right histogram bucket with its exact sum; a gauge
 * family registered by name (the load balancer's hook) is declared before
 * its first value and carries it after; bad family names and a full table are
 * refused; a path other than /metrics is a 404. SKIP (77) in a build without
 * libmicrohttpd, FAIL for that under CI=true.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <shmem.h>
#include <sys/socket.h>
#include <unistd.h>

#include "test.h"
#include "train/obs/prom.h"

/* GET path from 127.0.0.1:port; the whole response into buf. */
static void http_get(int port, const char *path, char *buf, size_t len) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(fd >= 0, "socket");
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK(connect(fd, (struct sockaddr *)&a, sizeof a) == 0, "connect to port %d", port);
    char req[256];
    int n = snprintf(req, sizeof req, "GET %s HTTP/1.0\r\nHost: x\r\n\r\n", path);
    CHECK(write(fd, req, (size_t)n) == n, "write");
    size_t have = 0;
    ssize_t got;
    while (have + 1 < len && (got = read(fd, buf + have, len - 1 - have)) > 0) have += (size_t)got;
    buf[have] = '\0';
    close(fd);
}

static int has(const char *text, const char *line) { return strstr(text, line) != NULL; }

int main(void) {
    shmem_init();
    char why[512] = "";
    sym_prom_t *p = sym__prom_start(0, 0, why, sizeof why);
    if (!p) {
        const char *ci = getenv("CI");
        printf("%s: %s\n", ci && !strcmp(ci, "true") ? "FAIL: CI=true, but" : "SKIP", why);
        shmem_finalize();
        return ci && !strcmp(ci, "true") ? 1 : 77;
    }
    int port = sym__prom_port(p);
    CHECK(port > 0, "port %d", port);
    static char buf[1 << 16];

    int share =
        sym__prom_family(p, "symtrain_balance_share_ratio", "This PE's share\nof the batch.");
    CHECK(share >= 0, "registering a family");
    CHECK(sym__prom_family(p, "9starts_with_a_digit", "") == -1, "a name starting with a digit");
    CHECK(sym__prom_family(p, "has-dash", "") == -1, "a name with a dash");
    http_get(port, "/metrics", buf, sizeof buf);
    CHECK(has(buf, "HTTP/1.0 200") || has(buf, "HTTP/1.1 200"), "status: %.60s", buf);
    CHECK(has(buf, "Content-Type: text/plain; version=0.0.4"), "content type");
    CHECK(has(buf, "# HELP symtrain_balance_share_ratio This PE's share of the batch.\n"
                   "# TYPE symtrain_balance_share_ratio gauge\n"),
          "the family is declared (help on one line):\n%s", buf);
    CHECK(!has(buf, "symtrain_balance_share_ratio{"), "a sample before the first set");
    CHECK(!has(buf, "symtrain_step{"), "a step before the first step");
    sym__prom_family_set(p, share, 0.25);

    sym_step_record_t r = {0};
    r.step = 7;
    r.loss = 1.5f;
    r.lr = 0.001f;
    r.compute_s = 0.003;
    r.comm_s = 0.0001;
    r.bytes_allreduced = 1000;
    sym__prom_step(p, &r, -1);
    r.step = 8;
    r.compute_s = 12; /* past the last bound: +Inf only */
    sym__prom_step(p, &r, -1);
    http_get(port, "/metrics", buf, sizeof buf);
    static const char *const want[] = {
        "symtrain_balance_share_ratio{pe=\"0\"} 0.25\n",
        "symtrain_step{pe=\"0\"} 8\n",
        "symtrain_loss{pe=\"0\"} 1.5\n",
        "symtrain_step_seconds_bucket{pe=\"0\",phase=\"compute\",le=\"0.0025\"} 0\n",
        "symtrain_step_seconds_bucket{pe=\"0\",phase=\"compute\",le=\"0.005\"} 1\n",
        "symtrain_step_seconds_bucket{pe=\"0\",phase=\"compute\",le=\"10\"} 1\n",
        "symtrain_step_seconds_bucket{pe=\"0\",phase=\"compute\",le=\"+Inf\"} 2\n",
        "symtrain_step_seconds_sum{pe=\"0\",phase=\"compute\"} 12.003\n",
        "symtrain_step_seconds_count{pe=\"0\",phase=\"comm_wait\"} 2\n",
        "symtrain_step_seconds_bucket{pe=\"0\",phase=\"comm_wait\",le=\"0.0005\"} 2\n",
        "symtrain_allreduce_bytes_total{pe=\"0\"} 2000\n",
        "symtrain_runtime_allreduce_total{pe=\"0\",algo=\"hierarchical\"} 0\n",
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        CHECK(has(buf, want[i]), "missing: %s in\n%s", want[i], buf);
    CHECK(!has(buf, "symtrain_mfu_ratio") && !has(buf, "symtrain_gpu_memory_bytes") &&
              !has(buf, "symtrain_checkpoints_total"),
          "GPU or checkpoint metrics on a PE with neither");

    /* the table holds 8 families: 7 more fit, the 9th does not */
    for (int i = 0; i < 7; i++) {
        char name[32];
        snprintf(name, sizeof name, "symtrain_extra_%d", i);
        CHECK(sym__prom_family(p, name, "x") >= 0, "family %d", i);
    }
    CHECK(sym__prom_family(p, "symtrain_one_too_many", "x") == -1, "a full table");

    http_get(port, "/other", buf, sizeof buf);
    CHECK(has(buf, " 404 "), "another path: %.60s", buf);
    sym__prom_stop(p);
    printf("obs_prom: PASS (buckets, sums, a registered family, refusals, 404)\n");
    shmem_finalize();
    return 0;
}
