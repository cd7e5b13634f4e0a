/*
 * env.c — reading settings from the environment. A malformed value is an error
 * that names the variable; it is never silently replaced by a default.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

int sym__parse_size(const char *s, size_t *out) {
    if (!s) return -1;
    while (isspace((unsigned char)*s)) s++;
    if (!isdigit((unsigned char)*s)) return -1;
    errno = 0;
    char *end;
    double v = strtod(s, &end);
    if (errno || end == s || v < 0) return -1;
    double mul = 1;
    switch (toupper((unsigned char)*end)) {
    case 'K': mul = 1024.0; end++; break;
    case 'M': mul = 1024.0 * 1024; end++; break;
    case 'G': mul = 1024.0 * 1024 * 1024; end++; break;
    case 'T': mul = 1024.0 * 1024 * 1024 * 1024; end++; break;
    default: break;
    }
    if (mul > 1 && (*end == 'i' || *end == 'I')) end++;
    if (mul > 1 && (*end == 'b' || *end == 'B')) end++;
    while (isspace((unsigned char)*end)) end++;
    if (*end) return -1;
    double bytes = v * mul;
    if (bytes > (double)(SIZE_MAX / 2)) return -1;
    *out = (size_t)bytes;
    return 0;
}

size_t sym__env_size(const char *name, size_t dflt) {
    const char *s = getenv(name);
    if (!s || !*s) return dflt;
    size_t v;
    if (sym__parse_size(s, &v) != 0)
        sym__fatal("environment",
                   "%s='%s' is not a size; write a number with an optional K, M or G "
                   "suffix, e.g. %s=512M",
                   name, s, name);
    return v;
}

long sym__env_long(const char *name, long dflt) {
    const char *s = getenv(name);
    if (!s || !*s) return dflt;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end)
        sym__fatal("environment", "%s='%s' is not an integer", name, s);
    return v;
}

const char *sym__env_first(const char *const *names) {
    for (; *names; names++) {
        const char *s = getenv(*names);
        if (s && *s) return *names;
    }
    return NULL;
}

char *sym__fmt_size(size_t bytes, char *buf, size_t len) {
    static const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024 && u < 4) {
        v /= 1024;
        u++;
    }
    if (u == 0)
        snprintf(buf, len, "%zu B", bytes);
    else
        snprintf(buf, len, "%.1f %s", v, unit[u]);
    return buf;
}
