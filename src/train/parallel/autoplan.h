/*
 * autoplan.h — `symtrain train --parallel auto`: the layout planner's choice
 * (symtrain/plan.h) for this job, made on PE 0 and shared with every PE
 * (autoplan.c; the training loop calls it before its set-up).
 */
#ifndef SYM_TRAIN_AUTOPLAN_H
#define SYM_TRAIN_AUTOPLAN_H

#include <stddef.h>

#include <symtrain/train.h>

/* Collective over the world. *out = *c with the planner's layout in it:
 * parallel dp, tp, pp (plan cleared), the micro-batches (a pipeline's with
 * pp > 1, else gradient accumulation) and the ZeRO stage. `why` gets one line for the
 * user: the layout, its predicted step and memory, the runner-up, the rates.
 * PE 0 measures this CPU (sym_plan_measure_cpu) or takes the GPU's recorded
 * figures, chooses the fastest layout that fits and that the training loop
 * trains with the job's other options (sym_train_validate and
 * sym__pipe_refusal), and broadcasts it, so every PE trains the same
 * layout. Returns 0, or the same error on every PE (nothing fits;
 * --zero or --micro-batches given beside auto). */
int sym__train_autoplan(const sym_train_config_t *c, sym_train_config_t *out, char *why,
                        size_t len);

/* What a pipeline (pp > 1) does not take beside c's other options, said as
 * the fix, or NULL (loop.c: its set-up refuses it; the planner skips it). */
const char *sym__pipe_refusal(const sym_train_config_t *c);

#endif
