/*
 * symtrain_tokenize.c — `symtrain tokenize`: text files to byte-level token
 * shards (llm.c's format) that `symtrain train` reads; `make data` runs it on
 * the Shakespeare corpus.
 *
 *   symtrain tokenize FILES... -o DIR [--val-fraction F] [--shard-tokens N]
 *
 * The work is sym_tokenize_bytes (src/train/data/tokenize.c); this file parses
 * the command line, reports a usage error once (exit 2) or a failure once
 * (exit 1), and prints one summary line.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <symtrain/symtrain.h>

#include "symtrain_cli.h"

#define EXIT_USAGE 2
#define DEFAULT_VAL_FRACTION 0.1
#define DEFAULT_SHARD_TOKENS 100000000LL

static const char tokenize_usage[] =
    "usage: symtrain tokenize FILES... -o DIR [--val-fraction F] [--shard-tokens N]\n"
    "\n"
    "Byte-level tokens (vocabulary 256) of the text FILES, read in the order given and\n"
    "joined with one newline between files, as llm.c token shards:\n"
    "  DIR/val_000000.bin                the last F of the bytes, cut at a line start\n"
    "  DIR/train_000000.bin, ...         the rest, at most N tokens per shard\n"
    "DIR is created; shards an earlier run left there are replaced.\n"
    "\n"
    "  -o, --output DIR       where the shards go\n"
    "  --val-fraction F       validation share of the bytes, above 0 and below 1\n"
    "                         (default 0.1)\n"
    "  --shard-tokens N       tokens per training shard, 1 to 2147483647\n"
    "                         (default 100000000)\n"
    "  --                     the arguments after it are files, even if they start with -\n"
    "  -h, --help             this text\n";

/* Print "symtrain: tokenize: MSG" and the short usage to stderr; EXIT_USAGE. */
static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("symtrain: tokenize: ", stderr);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputs("\nusage: symtrain tokenize FILES... -o DIR [--val-fraction F] [--shard-tokens N] "
          "(symtrain tokenize --help says more)\n",
          stderr);
    return EXIT_USAGE;
}

/* ---- option values: 0, or -1 when s is not one ---- */

static int fraction_value(const char *s, double *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v) || !(v > 0 && v < 1)) return -1;
    *out = v;
    return 0;
}

static int count_value(const char *s, long long *out) {
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < 1 || v > INT32_MAX) return -1;
    *out = v;
    return 0;
}

/* ---- the command ---- */

int sym_cli_tokenize(int argc, char **argv) {
    const char *dir = NULL;
    double val_fraction = DEFAULT_VAL_FRACTION;
    long long shard_tokens = DEFAULT_SHARD_TOKENS;
    const char **files = calloc((size_t)(argc > 0 ? argc : 1), sizeof *files);
    if (!files) {
        fputs("symtrain: tokenize: out of memory\n", stderr);
        return 1;
    }
    int nfiles = 0, rc = 0, options = 1;
    for (int i = 0; i < argc && !rc; i++) {
        const char *a = argv[i];
        if (!options || a[0] != '-' || !a[1]) {
            if (options && !strcmp(a, "-"))
                rc = usage_error("reading standard input is not supported; name the files");
            else
                files[nfiles++] = a;
            continue;
        }
        if (!strcmp(a, "--")) {
            options = 0;
            continue;
        }
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(tokenize_usage, stdout);
            free(files);
            return 0;
        }
        /* --opt VALUE or --opt=VALUE */
        char opt[32];
        const char *eq = strchr(a, '='), *v = NULL;
        size_t n = eq ? (size_t)(eq - a) : strlen(a);
        if (n >= sizeof opt) {
            rc = usage_error("unknown option '%s'", a);
            break;
        }
        memcpy(opt, a, n);
        opt[n] = '\0';
        int known = !strcmp(opt, "-o") || !strcmp(opt, "--output") ||
                    !strcmp(opt, "--val-fraction") || !strcmp(opt, "--shard-tokens");
        if (!known) {
            rc = usage_error("unknown option '%s'", a);
            break;
        }
        if (eq)
            v = eq + 1;
        else if (i + 1 < argc)
            v = argv[++i];
        else {
            rc = usage_error("%s needs a value", opt);
            break;
        }
        if (!strcmp(opt, "-o") || !strcmp(opt, "--output")) {
            if (!*v)
                rc = usage_error("%s needs a directory", opt);
            else if (dir)
                rc = usage_error("one output directory at a time ('%s' and '%s')", dir, v);
            else
                dir = v;
        } else if (!strcmp(opt, "--val-fraction")) {
            if (fraction_value(v, &val_fraction))
                rc = usage_error("--val-fraction '%s': expected a number above 0 and below 1", v);
        } else if (count_value(v, &shard_tokens)) {
            rc = usage_error("--shard-tokens '%s': expected a whole number from 1 to %ld", v,
                             (long)INT32_MAX);
        }
    }
    if (!rc && nfiles == 0) rc = usage_error("name the text files to tokenize");
    if (!rc && !dir) rc = usage_error("name the output directory with -o DIR");
    if (rc) {
        free(files);
        return rc;
    }
    int64_t ntrain = 0, nval = 0;
    if (sym_tokenize_bytes(files, nfiles, dir, val_fraction, shard_tokens, &ntrain, &nval)) {
        fprintf(stderr, "symtrain: tokenize: %s\n", sym_last_error());
        free(files);
        return 1;
    }
    long long shards = (ntrain + shard_tokens - 1) / shard_tokens;
    printf("symtrain: tokenize: %d file%s, %lld bytes -> %s: %lld train tokens in %lld shard%s, "
           "%lld validation tokens\n",
           nfiles, nfiles == 1 ? "" : "s", (long long)(ntrain + nval), dir, (long long)ntrain,
           shards, shards == 1 ? "" : "s", (long long)nval);
    fflush(stdout);
    free(files);
    return 0;
}
