/*
 * symtrain/symtrain.h — the training stack in one include.
 *
 *   error.h    status codes, sym_strerror, sym_last_error
 *   tensor.h   tensors, memory pools (private and symmetric), matrix products
 *   rng.h      counter-based random streams
 *   nn.h       layers (linear, ReLU, GELU, dropout), softmax cross-entropy, MLP
 *   optim.h    SGD + momentum, AdamW, warmup + cosine schedule, clipping
 *   data.h     Fashion-MNIST / generated data sets, the sharded loader
 *   dist.h     data parallelism: bucketed, overlapped gradient all-reduce
 *   dtensor.h  the device mesh, distributed tensors and their redistribution
 *   pipeline.h pipeline parallelism of the GPT: stages, micro-batches, 1F1B
 *   ckpt.h     crash-safe checkpoints, written in the background
 *   metrics.h  the per-step metrics file and its SVG plot
 *   train.h    the training loop behind `symtrain train`
 *   version.h  SYMTRAIN_VERSION_MAJOR / _MINOR / _PATCH / _STRING / _HEX
 */
#ifndef SYMTRAIN_SYMTRAIN_H
#define SYMTRAIN_SYMTRAIN_H

#include <symtrain/version.h> /* SYMTRAIN_VERSION_*, generated from the project version */

#include "ckpt.h"
#include "data.h"
#include "dist.h"
#include "dtensor.h"
#include "error.h"
#include "metrics.h"
#include "nn.h"
#include "optim.h"
#include "plan.h"
#include "pipeline.h"
#include "rng.h"
#include "tensor.h"
#include "train.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The library's version, (major << 16) | (minor << 8) | patch, and as text:
 * compare with SYMTRAIN_VERSION_HEX, the version the program was compiled
 * against. */
unsigned sym_version(void);
const char *sym_version_string(void);

#ifdef __cplusplus
}
#endif

#endif
