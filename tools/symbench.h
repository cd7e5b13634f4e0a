/*
 * symbench.h — what symbench's files share: size parsing ("4K", "64M") and the
 * training-collective benchmarks' entry point (symbench_coll.c).
 */
#ifndef SYMBENCH_H
#define SYMBENCH_H

#include <stddef.h>

/* 0 and *out set, or -1 when s is not a size. */
int symbench_parse_size(const char *s, size_t *out);
/* `symbench allreduce|reduce_scatter|allgather|broadcast ARGS`; after shmem_init. */
int symbench_coll(const char *test, int argc, char **argv);

#endif
