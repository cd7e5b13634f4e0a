/*
 * measure.h — what one PE measures of its own load for the balancer
 * (balance.c): CPU use (the process's CPU clock), memory in use from
 * /proc/self/statm and /proc/meminfo, and, on a GPU PE with libnvidia-ml,
 * the GPU's use and memory through NVML (loaded with dlopen: optional).
 * Also the test-only slowdown that the balancing tests and benchmark use.
 */
#ifndef SYM_TRAIN_BALANCE_MEASURE_H
#define SYM_TRAIN_BALANCE_MEASURE_H

typedef struct {
    int threads;          /* CPU use is a fraction of these cores */
    double last_wall;     /* the previous reading: wall clock and CPU seconds */
    double last_cpu;
    void *nvml;           /* dlopen handle, NULL: no GPU readings */
    void *dev;            /* nvmlDevice_t */
    int (*util)(void *dev, void *out);
    int (*mem)(void *dev, void *out);
    double sample_s;      /* SYMTRAIN_TEST_SAMPLE_MS, in seconds (0: none) */
    double slow_factor;   /* SYMTRAIN_TEST_SLOW_PE's factor for this PE (1: none) */
} sym__probe_t;

typedef struct {
    double cpu_util;  /* cores busy since the previous reading */
    double util;      /* 0..1: the GPU's use, else cpu_util / threads */
    double mem_bytes; /* this process's resident set */
    double mem_frac;  /* the GPU's memory in use, else the host's (MemAvailable) */
    double gpu_util;  /* 0..1, -1 unknown */
} sym__probe_reading_t;

void sym__probe_init(sym__probe_t *p, int me, int threads);
/* Read the GPU with this PCI bus id through NVML, when it loads. */
void sym__probe_gpu(sym__probe_t *p, const char *pci_bus_id);
void sym__probe_read(sym__probe_t *p, sym__probe_reading_t *out);
void sym__probe_free(sym__probe_t *p);
/* The test slowdown of a step whose compute began at t0 and did `rows` rows:
 * sleep sample_s x rows (work that takes time and no CPU, as a GPU's does),
 * then, on the slowed PE, (factor - 1) x the time since t0. */
void sym__probe_slowdown(const sym__probe_t *p, double t0, int rows);

#endif
