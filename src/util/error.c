/*
 * error.c — the one way symtrain reports a problem: a single line that names the
 * program, the PE, the call, the cause and the fix, then (for fatal errors) the
 * whole job ends.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

int sym__log_pe = -1;

static void default_abort(int status) { _exit(status); }
void (*sym__abort_hook)(int status) = default_abort;

/* Whose message it is: the program's name (symtrain, symbench, a user's
 * OpenSHMEM program), "symshmem" where it has none. */
static const char *program(void) {
    extern char *program_invocation_short_name; /* glibc's, from argv[0] */
    const char *p = program_invocation_short_name;
    return p && *p ? p : "symshmem";
}

/* "PROG: PE n: WHERE: " — or "WHERE: PE n: " where WHERE already starts with
 * the program's name ("symtrain train"), which would otherwise come twice. */
static void vreport(const char *where, const char *fmt, va_list ap) {
    char msg[1024];
    const char *prog = program();
    size_t pl = strlen(prog);
    int named = !strncmp(where, prog, pl) && (where[pl] == ' ' || where[pl] == '\0');
    const char *head = named ? where : prog, *tail = named ? "" : where;
    int n = 0;
    if (sym__log_pe >= 0)
        n = snprintf(msg, sizeof msg, "%s: PE %d: %s%s", head, sym__log_pe, tail,
                     *tail ? ": " : "");
    else
        n = snprintf(msg, sizeof msg, "%s: %s%s", head, tail, *tail ? ": " : "");
    if (n < 0 || (size_t)n >= sizeof msg) n = 0;
    vsnprintf(msg + n, sizeof msg - (size_t)n, fmt, ap);
    /* One write, so lines from several PEs never interleave mid-line. */
    size_t len = strlen(msg);
    if (len + 1 < sizeof msg) msg[len++] = '\n';
    ssize_t w = write(STDERR_FILENO, msg, len);
    (void)w;
}

void sym__fatal(const char *where, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vreport(where, fmt, ap);
    va_end(ap);
    fflush(stdout);
    if (sym__abort_hook) sym__abort_hook(1); /* NULL once the runtime has finalized */
    _exit(1); /* the hook must not return; be sure */
}

void sym__warn(const char *where, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vreport(where, fmt, ap);
    va_end(ap);
}

int sym__verbose(void) {
    static int v = -1;
    if (v < 0) v = sym__env_flag("SYMTRAIN_VERBOSE", 0);
    return v;
}

void sym__info(const char *fmt, ...) {
    if (!sym__verbose()) return;
    va_list ap;
    va_start(ap, fmt);
    vreport("info", fmt, ap);
    va_end(ap);
}

void sym__sys_fail(const char *file, int line, const char *call) {
    int e = errno;
    sym__fatal("internal", "%s failed at %s:%d: %s", call, file, line, strerror(e));
}
