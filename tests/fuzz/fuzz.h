/*
 * fuzz.h — what the fuzz targets share: a scratch directory holding the two
 * files an input is cut into (made once, removed at exit), and writing them.
 */
#ifndef SYM_FUZZ_H
#define SYM_FUZZ_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static char fuzz_dir[256], fuzz_file[2][320];

static void fuzz_cleanup(void) {
    unlink(fuzz_file[0]);
    unlink(fuzz_file[1]);
    rmdir(fuzz_dir);
}

/* $TMPDIR/NAME.XXXXXX, with fuzz_file[i] = that/names[i]. */
static void fuzz_scratch(const char *name, const char *names[2]) {
    const char *tmp = getenv("TMPDIR");
    snprintf(fuzz_dir, sizeof fuzz_dir, "%s/%s.XXXXXX", tmp && *tmp ? tmp : "/tmp", name);
    if (!mkdtemp(fuzz_dir)) {
        perror(fuzz_dir);
        exit(1);
    }
    for (int i = 0; i < 2; i++)
        snprintf(fuzz_file[i], sizeof fuzz_file[i], "%s/%s", fuzz_dir, names[i]);
    atexit(fuzz_cleanup);
}

/* fuzz_file[i] = p[0..n). */
static void fuzz_put(int i, const uint8_t *p, size_t n) {
    FILE *f = fopen(fuzz_file[i], "wb");
    if (!f || fwrite(p, 1, n, f) != n || fclose(f) != 0) {
        perror(fuzz_file[i]);
        abort();
    }
}

#endif
