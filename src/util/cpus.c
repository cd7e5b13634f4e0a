/*
 * cpus.c — how many CPUs a container lets this process use: the CPU quota of
 * its cgroup (a Kubernetes CPU limit, docker --cpus), cgroup v2's cpu.max or
 * v1's cpu.cfs_quota_us / cpu.cfs_period_us, the smallest over the process's
 * cgroup and the ones above it, rounded up. The BLAS threads per PE and the
 * decision whether waits may poll both count it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* quota / period rounded up, or 0 for "max" / unlimited / unreadable. */
static long quota_of(const char *dir, int v2) {
    char path[4200];
    long q = 0, period = 0;
    if (v2) {
        char quota[32];
        snprintf(path, sizeof path, "%s/cpu.max", dir);
        FILE *f = fopen(path, "r");
        if (!f) return 0;
        if (fscanf(f, "%31s %ld", quota, &period) == 2 && strcmp(quota, "max")) q = atol(quota);
        fclose(f);
    } else {
        snprintf(path, sizeof path, "%s/cpu.cfs_quota_us", dir);
        FILE *f = fopen(path, "r");
        if (!f) return 0;
        if (fscanf(f, "%ld", &q) != 1) q = 0;
        fclose(f);
        snprintf(path, sizeof path, "%s/cpu.cfs_period_us", dir);
        if (!(f = fopen(path, "r"))) return 0;
        if (fscanf(f, "%ld", &period) != 1) period = 0;
        fclose(f);
    }
    return q > 0 && period > 0 ? (q + period - 1) / period : 0;
}

/* The smallest quota from mount/rel up to mount. */
static long walk_up(const char *mount, const char *rel, int v2, long best) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s%s", mount, strcmp(rel, "/") ? rel : "");
    size_t root = strlen(mount);
    for (;;) {
        long q = quota_of(dir, v2);
        if (q > 0 && (best == 0 || q < best)) best = q;
        char *slash = strrchr(dir, '/');
        if (!slash || (size_t)(slash - dir) < root) break;
        *slash = '\0';
    }
    return best;
}

long sym__cpu_limit(void) {
    FILE *f = fopen("/proc/self/cgroup", "r");
    if (!f) return 0;
    long best = 0;
    char line[4096];
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2) continue;
        *c1 = *c2 = '\0';
        const char *ctrl = c1 + 1, *rel = c2 + 1;
        if (!*ctrl) { /* v2: "0::/path" */
            best = walk_up("/sys/fs/cgroup", rel, 1, best);
            continue;
        }
        /* v1: "N:cpu,cpuacct:/path", mounted as cpu,cpuacct (and often cpu) */
        char list[256];
        snprintf(list, sizeof list, ",%s,", ctrl);
        if (!strstr(list, ",cpu,")) continue;
        char mount[300];
        snprintf(mount, sizeof mount, "/sys/fs/cgroup/%s", ctrl);
        best = walk_up(mount, rel, 0, best);
        best = walk_up("/sys/fs/cgroup/cpu", rel, 0, best);
    }
    fclose(f);
    return best;
}
