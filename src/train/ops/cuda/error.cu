/*
 * error.cu — the library's one error channel: the sentence of the latest
 * failure on this thread (symcu_last_error), recorded by the CHECK macros of
 * common.cuh at the place that first saw the problem. Nothing is printed: the
 * caller decides who speaks (as in the rest of the training stack).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common.cuh"

static thread_local char last_error[512];

const char *symcu_last_error(void) { return last_error; }

int symcu__fail(int code, const char *file, int line, const char *fmt, ...) {
    const char *base = strrchr(file, '/');
    char what[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    snprintf(last_error, sizeof last_error, "%s (%s:%d)", what, base ? base + 1 : file, line);
    return code;
}
