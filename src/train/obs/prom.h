/*
 * prom.h — each PE's Prometheus endpoint: GET /metrics in the text exposition
 * format (version 0.0.4), served by libmicrohttpd's own thread.
 *
 * The training thread never waits for a scrape: it writes its numbers into
 * the endpoint's state under a mutex held only for that store (no I/O, no
 * allocation), and the server thread copies the whole state under the same
 * mutex, then formats the copy outside it. A scrape therefore sees one step's
 * numbers together (step, loss and the histogram sums agree).
 *
 * What it serves (every series carries pe="N"; names follow Prometheus's
 * conventions: base units, _seconds, _bytes, _ratio, counters end in _total):
 *   symtrain_step, symtrain_epoch, symtrain_loss, symtrain_learning_rate,
 *   symtrain_grad_norm, symtrain_samples_per_second, symtrain_tokens_per_second,
 *   symtrain_validation_loss, symtrain_validation_accuracy_ratio   (gauges)
 *   symtrain_step_seconds{phase="compute"|"comm_wait"}             (histogram)
 *   symtrain_allreduce_bytes_total                                  (counter)
 *   symtrain_restarts_total            (the job's restarts before this start)
 *   symtrain_checkpoints_total, symtrain_checkpoint_failures_total,
 *   symtrain_checkpoint_save_seconds_total, symtrain_checkpoint_bytes_total,
 *   symtrain_checkpoint_last_save_seconds, symtrain_checkpoint_last_bytes
 *                                      (the PE that writes checkpoints)
 *   symtrain_gpu_memory_bytes, symtrain_mfu_ratio   (a PE that trains on a GPU)
 *   symtrain_runtime_heap_bytes, symtrain_runtime_heap_in_use_bytes,
 *   symtrain_runtime_puts_total, symtrain_runtime_put_bytes_total,
 *   symtrain_runtime_allreduce_total{algo=...}      (shmemx_stats)
 *   and the gauge families registered with sym__prom_family (the load
 *   balancer's symtrain_balance_share_ratio and symtrain_balance_straggler).
 */
#ifndef SYM_TRAIN_PROM_H
#define SYM_TRAIN_PROM_H

#include <stddef.h>
#include <stdint.h>

#include <symtrain/ckpt.h>
#include <symtrain/metrics.h>

typedef struct sym_prom sym_prom_t;

/* Serve this PE's metrics on TCP `port` (0: a free one the kernel picks), on
 * every address. NULL when it cannot (no libmicrohttpd in this build, the
 * port is taken or needs privileges): `why` then says so and what to do. */
sym_prom_t *sym__prom_start(int port, int pe, char *why, size_t why_len);
/* The port it listens on (the kernel's choice for 0). */
int sym__prom_port(const sym_prom_t *p);
/* Stop the server thread and free. NULL is fine. */
void sym__prom_stop(sym_prom_t *p);

/* After each step: the step's record; mfu < 0 where there is no GPU. */
void sym__prom_step(sym_prom_t *p, const sym_step_record_t *rec, double mfu);
void sym__prom_eval(sym_prom_t *p, double loss, double accuracy);
/* Facts fixed at start: the job's restarts so far; GPU memory in use (bytes;
 * 0: no GPU). */
void sym__prom_start_facts(sym_prom_t *p, uint64_t restarts, uint64_t gpu_memory);
/* The checkpoint writer's totals (the PE that writes checkpoints). */
void sym__prom_ckpt(sym_prom_t *p, const sym_ckpt_stats_t *st);

/* A gauge family of one value per PE that another part of the stack owns
 * (the load balancer: "symtrain_balance_share_ratio", its share of the global
 * batch). Registered by name and help text; served without a sample until its
 * first set. Returns a handle (>= 0), or -1 when the table is full or the name
 * is not a Prometheus metric name. */
int sym__prom_family(sym_prom_t *p, const char *name, const char *help);
void sym__prom_family_set(sym_prom_t *p, int family, double value);

#endif
