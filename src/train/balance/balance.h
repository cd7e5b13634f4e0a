/*
 * balance.h — dynamic load balancing of the data-parallel step: each PE's
 * share of every global batch follows its measured speed, without changing
 * the math (the samples of a step and the gradient average stay those of
 * the even split; data/loader.c turns the shares into blocks).
 *
 * Every step each PE measures its load (measure.c): compute time per sample,
 * CPU use (its CPU clock), memory in use, GPU use and memory through
 * NVML when there is a GPU and libnvidia-ml, and its link latency (the
 * duration of its last measurement exchange). One small all-gather gives
 * every PE every PE's record; every PE then runs the same policy on the same
 * numbers, so they all reach the same shares without a central service:
 *   - throughput: shares proportional to smoothed samples/s, moved only when
 *     the predicted step time (max over PEs of share / speed) drops by more
 *     than the hysteresis;
 *   - score: the softmax of w0 (1 - GPU or CPU use) + w1 (1 - memory use) +
 *     w2 / (latency in ms + 1), moved only when more than the hysteresis'
 *     fraction of the batch changes hands;
 *   - off: the even split (measurements still name stragglers).
 * A rebalance happens at the first step with enough measurements, then every
 * N steps or T seconds (PE 0's clock, which travels in the exchange). Every
 * PE keeps at least one sample a step and at most `cap` (its buffers' rows).
 * A PE slower per sample than the median by more than the straggler factor
 * is named when it becomes one and when it stops.
 */
#ifndef SYM_TRAIN_BALANCE_H
#define SYM_TRAIN_BALANCE_H

#include <shmem.h>
#include <stdint.h>

#include <symtrain/metrics.h>
#include <symtrain/train.h>

typedef struct sym__balance sym__balance_t;

/* say(user, warning, text): a line for the log (PE 0 prints; warning:
 * a straggler, said even when quiet). */
typedef void (*sym__balance_say_t)(void *user, int warning, const char *text);

/* Collective over SHMEM_TEAM_WORLD (the exchange buffer is symmetric).
 * B: the global batch; cap: the most rows a PE's buffers hold (>= B / npes);
 * threads: BLAS threads per PE (CPU use is a fraction of them). */
int sym__balance_create(const sym_balance_config_t *c, int global_batch, int cap, int threads,
                        sym__balance_say_t say, void *user, sym__balance_t **out);
void sym__balance_destroy(sym__balance_t *b);

/* A GPU PE: NVML (when libnvidia-ml loads) reads the GPU with this PCI bus
 * id for its use and memory. */
void sym__balance_use_gpu(sym__balance_t *b, const char *pci_bus_id);

/* The shares (npes counts summing to B) for the next step; NULL when off. */
const int *sym__balance_shares(const sym__balance_t *b);

/* This PE computed `rows` rows of the step that started at t0 (sym__now_s).
 * device_s >= 0: the device's own compute time (a GPU's kernels), else the
 * host's wall time since t0. The test slowdown (SYMTRAIN_TEST_SAMPLE_MS,
 * SYMTRAIN_TEST_SLOW_PE) sleeps here, inside the measured time. */
void sym__balance_computed(sym__balance_t *b, double t0, int rows, double device_s);

/* After the step: exchange the records (collective), smooth, name
 * stragglers, and at a rebalance point choose the next step's shares. step:
 * steps done. SYM_ECOMM when the exchange fails. */
int sym__balance_exchange(sym__balance_t *b, int64_t step);

/* The last exchange as metrics: pes (npes entries) and the record's
 * balance fields. */
void sym__balance_record(const sym__balance_t *b, sym_pe_record_t *pes, sym_step_record_t *rec);

/* Checkpoints: the shares and smoothed speeds (npes each) to save, and to
 * restore (a resumed run continues with the saved split). */
void sym__balance_state(const sym__balance_t *b, const int **shares, const double **speeds);
void sym__balance_restore(sym__balance_t *b, const int *shares, const double *speeds);
const char *sym__balance_policy_name(sym_balance_policy_t p);

#endif
