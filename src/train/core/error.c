/*
 * error.c — the training stack's status codes and the per-thread record of the
 * latest error sentence (see symtrain/error.h).
 */
#include <stdarg.h>
#include <stdio.h>

#include "internal.h"

static _Thread_local char last[1024];

const char *sym_strerror(int err) {
    switch (err) {
    case SYM_OK: return "success";
#define SYM_ERRNO_CASE(name, code, msg)                                              \
    case code: return msg;
        SYM_ERRNO_MAP(SYM_ERRNO_CASE)
#undef SYM_ERRNO_CASE
    default: return "unknown error";
    }
}

const char *sym_last_error(void) { return last; }

int sym__error(int code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last, sizeof last, fmt, ap);
    va_end(ap);
    return code;
}
