/*
 * measure.c — one PE's load readings for the balancer (see measure.h).
 *
 * CPU: the process's CPU time (every thread, so the BLAS threads count; the
 * counters of /proc/self/stat, read through CLOCK_PROCESS_CPUTIME_ID) over
 * the wall time since the previous reading. Memory:
 * the resident set from /proc/self/statm; "in use" is the GPU's (NVML) on a
 * GPU PE, else the host's MemTotal - MemAvailable. NVML is optional: without
 * libnvidia-ml.so.1 (or when a call fails) the GPU fields read -1 / the host's.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "balance/measure.h"
#include "util/util.h"

/* ---- NVML's few types (nvml.h is not needed to build) ---- */

typedef struct {
    unsigned int gpu, memory; /* percent */
} nvml_util_t;

typedef struct {
    unsigned long long total, free, used; /* bytes */
} nvml_mem_t;

typedef int (*nvml_init_fn)(void);
typedef int (*nvml_by_pci_fn)(const char *bus_id, void **dev);

void sym__probe_gpu(sym__probe_t *p, const char *pci_bus_id) {
    if (p->nvml || !pci_bus_id || !*pci_bus_id) return;
    void *h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) return;
    nvml_init_fn init = (nvml_init_fn)dlsym(h, "nvmlInit_v2");
    nvml_by_pci_fn by_pci = (nvml_by_pci_fn)dlsym(h, "nvmlDeviceGetHandleByPciBusId_v2");
    p->util = (int (*)(void *, void *))dlsym(h, "nvmlDeviceGetUtilizationRates");
    p->mem = (int (*)(void *, void *))dlsym(h, "nvmlDeviceGetMemoryInfo");
    if (!init || !by_pci || !p->util || !p->mem || init() != 0 || by_pci(pci_bus_id, &p->dev) != 0) {
        dlclose(h);
        p->dev = NULL;
        return;
    }
    p->nvml = h;
}

/* ---- /proc ---- */

/* CPU seconds of this process, all threads (the utime + stime that
 * /proc/self/stat shows, at nanosecond rather than clock-tick resolution:
 * a step can be shorter than a tick), or -1. */
static double cpu_seconds(void) {
    struct timespec ts;
    if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) != 0) return -1;
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double resident_bytes(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long long size, rss;
    int ok = f && fscanf(f, "%llu %llu", &size, &rss) == 2;
    if (f) fclose(f);
    return ok ? (double)rss * (double)sysconf(_SC_PAGESIZE) : 0;
}

/* The host's memory in use, 0..1 (0 when /proc/meminfo cannot say). */
static double host_mem_frac(void) {
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f) return 0;
    char line[256];
    double total = 0, avail = -1;
    while (fgets(line, sizeof line, f)) {
        unsigned long long kb;
        if (sscanf(line, "MemTotal: %llu kB", &kb) == 1) total = (double)kb;
        else if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) avail = (double)kb;
    }
    fclose(f);
    return total > 0 && avail >= 0 ? 1.0 - avail / total : 0;
}

void sym__probe_read(sym__probe_t *p, sym__probe_reading_t *out) {
    double wall = sym__now_s(), cpu = cpu_seconds();
    out->cpu_util = 0;
    if (p->last_wall > 0 && cpu >= 0 && p->last_cpu >= 0 && wall > p->last_wall)
        out->cpu_util = (cpu - p->last_cpu) / (wall - p->last_wall);
    p->last_wall = wall;
    p->last_cpu = cpu;
    out->util = out->cpu_util / (p->threads > 0 ? p->threads : 1);
    if (out->util > 1) out->util = 1;
    out->mem_bytes = resident_bytes();
    out->gpu_util = -1;
    nvml_util_t u;
    nvml_mem_t m;
    if (p->nvml && p->util(p->dev, &u) == 0) out->util = out->gpu_util = u.gpu / 100.0;
    if (p->nvml && p->mem(p->dev, &m) == 0 && m.total)
        out->mem_frac = (double)m.used / (double)m.total;
    else
        out->mem_frac = host_mem_frac();
}

/* ---- the test slowdown ----
 * SYMTRAIN_TEST_SAMPLE_MS=MS: every PE takes MS more per row it computes (a
 * sleep: time without CPU, as a device's work is). SYMTRAIN_TEST_SLOW_PE=PE:F:
 * PE PE's compute takes F times as long (it sleeps F - 1 times what its
 * compute, the sleep above included, took). */

void sym__probe_init(sym__probe_t *p, int me, int threads) {
    memset(p, 0, sizeof *p);
    p->threads = threads;
    p->last_cpu = -1;
    p->slow_factor = 1;
    const char *ms = getenv("SYMTRAIN_TEST_SAMPLE_MS");
    if (ms && *ms) p->sample_s = atof(ms) * 1e-3;
    const char *slow = getenv("SYMTRAIN_TEST_SLOW_PE");
    int pe;
    double f;
    if (slow && sscanf(slow, "%d:%lf", &pe, &f) == 2 && pe == me && f > 1) p->slow_factor = f;
}

static void sleep_s(double s) {
    if (s <= 0) return;
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

void sym__probe_slowdown(const sym__probe_t *p, double t0, int rows) {
    sleep_s(p->sample_s * rows);
    if (p->slow_factor > 1) sleep_s((p->slow_factor - 1) * (sym__now_s() - t0));
}

void sym__probe_free(sym__probe_t *p) {
    if (p->nvml) dlclose(p->nvml); /* nvmlShutdown is left to the process's exit */
    p->nvml = NULL;
}
