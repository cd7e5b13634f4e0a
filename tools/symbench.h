/*
 * symbench.h — what symbench's files share: the training-collective
 * benchmarks' entry point (symbench_coll.c). Sizes ("4K", "64M") are parsed by
 * sym__parse_size (src/util/util.h), as the runtime parses its environment.
 */
#ifndef SYMBENCH_H
#define SYMBENCH_H

/* `symbench allreduce|reduce_scatter|allgather|broadcast ARGS`; after shmem_init. */
int symbench_coll(const char *test, int argc, char **argv);

#endif
