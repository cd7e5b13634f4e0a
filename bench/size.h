/*
 * size.h — the size argument the baselines take (bench/baseline.h,
 * bench/gpu/mpi_staged.c): a number with an optional K, M or G (powers of
 * 1024), e.g. 4K, 64M. Built without symtrain's libraries, so not
 * sym__parse_size.
 */
#ifndef BENCH_SIZE_H
#define BENCH_SIZE_H

#include <stdlib.h>

static size_t parse_size(const char *v) {
    char *end;
    double x = strtod(v, &end);
    if (*end == 'K' || *end == 'k') x *= 1024;
    if (*end == 'M' || *end == 'm') x *= 1024 * 1024;
    if (*end == 'G' || *end == 'g') x *= 1024.0 * 1024 * 1024;
    return (size_t)x;
}

#endif
