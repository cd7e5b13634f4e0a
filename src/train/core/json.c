/*
 * json.c — a small JSON reader and writer for checkpoint manifests, metrics
 * lines and the plot (see internal.h).
 *
 * The reader is a recursive-descent parser over a complete buffer into a tree
 * of malloc'd nodes, depth-limited; numbers keep their text so 64-bit integers
 * (seeds, RNG keys) survive. \u escapes outside ASCII are written out as UTF-8.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define MAX_DEPTH 64

/* ---- reading ---- */

typedef struct {
    const char *s, *end, *p;
    char *err;
    size_t err_len;
    int failed;
} parser_t;

static void fail(parser_t *ps, const char *what) {
    if (ps->failed) return;
    ps->failed = 1;
    if (ps->err)
        snprintf(ps->err, ps->err_len, "%s at byte %zu", what, (size_t)(ps->p - ps->s));
}

static void skip_ws(parser_t *ps) {
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
        ps->p++;
}

static sym_json_t *node(sym_jtype_t t) {
    sym_json_t *j = calloc(1, sizeof *j);
    if (j) j->type = t;
    return j;
}

static void put_utf8(char *out, size_t *n, unsigned cp) {
    if (cp < 0x80) {
        out[(*n)++] = (char)cp;
    } else if (cp < 0x800) {
        out[(*n)++] = (char)(0xC0 | (cp >> 6));
        out[(*n)++] = (char)(0x80 | (cp & 0x3F));
    } else {
        out[(*n)++] = (char)(0xE0 | (cp >> 12));
        out[(*n)++] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[(*n)++] = (char)(0x80 | (cp & 0x3F));
    }
}

/* A string starting at the opening quote; returns a malloc'd, unescaped copy. */
static char *parse_string(parser_t *ps) {
    ps->p++; /* the quote */
    const char *start = ps->p;
    while (ps->p < ps->end && *ps->p != '"') {
        if (*ps->p == '\\') ps->p++;
        ps->p++;
    }
    if (ps->p >= ps->end) {
        fail(ps, "unterminated string");
        return NULL;
    }
    size_t raw = (size_t)(ps->p - start);
    char *out = malloc(raw + 1);
    if (!out) {
        fail(ps, "out of memory");
        return NULL;
    }
    size_t k = 0;
    for (const char *q = start; q < ps->p; q++) {
        if (*q != '\\') {
            out[k++] = *q;
            continue;
        }
        q++;
        switch (*q) {
        case 'n': out[k++] = '\n'; break;
        case 't': out[k++] = '\t'; break;
        case 'r': out[k++] = '\r'; break;
        case 'b': out[k++] = '\b'; break;
        case 'f': out[k++] = '\f'; break;
        case 'u': {
            unsigned cp = 0;
            int ok = q + 4 < ps->p;
            for (int i = 1; ok && i <= 4; i++) {
                int c = q[i], lc = c | 32;
                if (isdigit(c))
                    cp = cp * 16 + (unsigned)(c - '0');
                else if (lc >= 'a' && lc <= 'f')
                    cp = cp * 16 + (unsigned)(lc - 'a' + 10);
                else
                    ok = 0;
            }
            if (!ok) {
                free(out);
                fail(ps, "bad \\u escape");
                return NULL;
            }
            put_utf8(out, &k, cp); /* at most 3 bytes for the 6 it replaces */
            q += 4;
            break;
        }
        default: out[k++] = *q; break; /* \" \\ \/ */
        }
    }
    out[k] = '\0';
    ps->p++; /* the closing quote */
    return out;
}

static sym_json_t *parse_value(parser_t *ps, int depth);

static sym_json_t *parse_container(parser_t *ps, int depth, int is_obj) {
    sym_json_t *j = node(is_obj ? SYM_JOBJ : SYM_JARR), **tail;
    if (!j) {
        fail(ps, "out of memory");
        return NULL;
    }
    tail = &j->child;
    ps->p++; /* [ or { */
    skip_ws(ps);
    char close = is_obj ? '}' : ']';
    if (ps->p < ps->end && *ps->p == close) {
        ps->p++;
        return j;
    }
    for (;;) {
        char *key = NULL;
        skip_ws(ps);
        if (is_obj) {
            if (ps->p >= ps->end || *ps->p != '"') {
                fail(ps, "expected a member name");
                break;
            }
            if (!(key = parse_string(ps))) break;
            skip_ws(ps);
            if (ps->p >= ps->end || *ps->p != ':') {
                free(key);
                fail(ps, "expected ':'");
                break;
            }
            ps->p++;
        }
        sym_json_t *v = parse_value(ps, depth + 1);
        if (!v) {
            free(key);
            break;
        }
        v->key = key;
        *tail = v;
        tail = &v->next;
        skip_ws(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            continue;
        }
        if (ps->p < ps->end && *ps->p == close) {
            ps->p++;
            return j;
        }
        fail(ps, is_obj ? "expected ',' or '}'" : "expected ',' or ']'");
        break;
    }
    sym__json_free(j);
    return NULL;
}

static sym_json_t *parse_value(parser_t *ps, int depth) {
    if (depth > MAX_DEPTH) {
        fail(ps, "nested too deeply");
        return NULL;
    }
    skip_ws(ps);
    if (ps->p >= ps->end) {
        fail(ps, "unexpected end");
        return NULL;
    }
    char c = *ps->p;
    if (c == '{' || c == '[') return parse_container(ps, depth, c == '{');
    if (c == '"') {
        char *s = parse_string(ps);
        if (!s) return NULL;
        sym_json_t *j = node(SYM_JSTR);
        if (!j) {
            free(s);
            fail(ps, "out of memory");
            return NULL;
        }
        j->str = s;
        return j;
    }
    static const struct {
        const char *word;
        sym_jtype_t t;
        double v;
    } words[] = {{"true", SYM_JBOOL, 1}, {"false", SYM_JBOOL, 0}, {"null", SYM_JNULL, 0}};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
        size_t n = strlen(words[i].word);
        if ((size_t)(ps->end - ps->p) >= n && !memcmp(ps->p, words[i].word, n)) {
            ps->p += n;
            sym_json_t *j = node(words[i].t);
            if (!j) fail(ps, "out of memory");
            if (j) j->num = words[i].v;
            return j;
        }
    }
    if (c == '-' || isdigit((unsigned char)c)) {
        const char *start = ps->p;
        ps->p++;
        while (ps->p < ps->end && (isdigit((unsigned char)*ps->p) || *ps->p == '.' || *ps->p == 'e' ||
                                   *ps->p == 'E' || *ps->p == '+' || *ps->p == '-'))
            ps->p++;
        size_t n = (size_t)(ps->p - start);
        sym_json_t *j = node(SYM_JNUM);
        char *text = malloc(n + 1);
        if (!j || !text) {
            free(j);
            free(text);
            fail(ps, "out of memory");
            return NULL;
        }
        memcpy(text, start, n);
        text[n] = '\0';
        char *end;
        errno = 0;
        j->num = strtod(text, &end);
        j->str = text;
        if (*end) {
            sym__json_free(j);
            fail(ps, "bad number");
            return NULL;
        }
        return j;
    }
    fail(ps, "unexpected character");
    return NULL;
}

sym_json_t *sym__json_parse(const char *text, size_t len, char *err, size_t err_len) {
    parser_t ps = {text, text + len, text, err, err_len, 0};
    sym_json_t *j = parse_value(&ps, 0);
    if (j) {
        skip_ws(&ps);
        if (ps.p != ps.end) {
            fail(&ps, "text after the value");
            sym__json_free(j);
            j = NULL;
        }
    }
    return j;
}

void sym__json_free(sym_json_t *j) {
    while (j) {
        sym_json_t *next = j->next;
        sym__json_free(j->child);
        free(j->key);
        free(j->str);
        free(j);
        j = next;
    }
}

const sym_json_t *sym__json_get(const sym_json_t *obj, const char *key) {
    if (!obj || obj->type != SYM_JOBJ) return NULL;
    for (const sym_json_t *c = obj->child; c; c = c->next)
        if (c->key && !strcmp(c->key, key)) return c;
    return NULL;
}

int sym__json_i64(const sym_json_t *obj, const char *key, int64_t *out) {
    const sym_json_t *v = sym__json_get(obj, key);
    if (!v || v->type != SYM_JNUM) return -1;
    char *end;
    errno = 0;
    long long x = strtoll(v->str, &end, 10);
    if (errno || *end) return -1;
    *out = x;
    return 0;
}

int sym__json_u64(const sym_json_t *obj, const char *key, uint64_t *out) {
    const sym_json_t *v = sym__json_get(obj, key);
    if (!v || v->type != SYM_JNUM || v->str[0] == '-') return -1;
    char *end;
    errno = 0;
    unsigned long long x = strtoull(v->str, &end, 10);
    if (errno || *end) return -1;
    *out = x;
    return 0;
}

int sym__json_num(const sym_json_t *obj, const char *key, double *out) {
    const sym_json_t *v = sym__json_get(obj, key);
    if (!v || v->type != SYM_JNUM) return -1;
    *out = v->num;
    return 0;
}

int sym__json_str(const sym_json_t *obj, const char *key, char *out, size_t len) {
    const sym_json_t *v = sym__json_get(obj, key);
    if (!v || v->type != SYM_JSTR || strlen(v->str) >= len) return -1;
    memcpy(out, v->str, strlen(v->str) + 1);
    return 0;
}

/* ---- writing ---- */

static int reserve(sym_jbuf_t *b, size_t more) {
    if (b->failed) return -1;
    if (b->len + more + 1 <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + more + 1) cap *= 2;
    char *nb = realloc(b->buf, cap);
    if (!nb) {
        b->failed = 1;
        return -1;
    }
    b->buf = nb;
    b->cap = cap;
    return 0;
}

void sym__jbuf_printf(sym_jbuf_t *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || reserve(b, (size_t)n)) return;
    va_start(ap, fmt);
    vsnprintf(b->buf + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void sym__jbuf_string(sym_jbuf_t *b, const char *s) {
    sym__jbuf_printf(b, "\"");
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            sym__jbuf_printf(b, "\\%c", c);
        else if (c < 0x20)
            sym__jbuf_printf(b, "\\u%04x", c);
        else
            sym__jbuf_printf(b, "%c", c);
    }
    sym__jbuf_printf(b, "\"");
}

void sym__jbuf_free(sym_jbuf_t *b) {
    free(b->buf);
    b->buf = NULL;
    b->len = b->cap = 0;
    b->failed = 0;
}
