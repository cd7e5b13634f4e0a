/*
 * internal.h — what the files of src/train share and nothing else sees: the
 * error recorder behind sym_last_error, the built-in matrix kernel (tests
 * compare it with OpenBLAS), the small JSON reader/writer used by checkpoint
 * manifests, metrics and plots, and the comm seam (the one file that calls the
 * training collectives).
 */
#ifndef SYM_TRAIN_INTERNAL_H
#define SYM_TRAIN_INTERNAL_H

#include <shmem.h>
#include <stddef.h>
#include <stdint.h>

#include <symtrain/error.h>

/* ---- errors ---- */

/* Record `code`'s sentence for sym_last_error and return code. */
int sym__error(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- the built-in matrix kernel (same contract as sym_gemm) ---- */

void sym__gemm_blocked(int ta, int tb, int m, int n, int k, float alpha, const float *A,
                       int lda, const float *B, int ldb, float beta, float *C, int ldc);

/* ---- comm: the training collectives (src/coll) as the trainer uses them ---- */

typedef struct shmemx_req *sym__req_t;
/* Start x (n floats, symmetric) = average over the team's PEs, in place. */
int sym__comm_avg_start(shmem_team_t team, float *x, size_t n, sym__req_t *req);
/* Start block = this member's block (shmemx_block_range) of the average over
 * the team of x (n floats, symmetric); block private or symmetric. */
int sym__comm_avg_scatter_start(shmem_team_t team, const float *x, size_t n, float *block,
                                sym__req_t *req);
/* Start x (n floats, symmetric or private) = sum over the team's PEs, in
 * place (the tensor-parallel GPT's chunks, overlapped with its GEMMs). */
int sym__comm_sum_start(shmem_team_t team, float *x, size_t n, sym__req_t *req);
/* *done = 1 once req is complete (then sym__comm_wait returns its status at once). */
int sym__comm_test(sym__req_t req, int *done);
int sym__comm_wait(sym__req_t req);
/* Blocking sum over the team's PEs, in place (x symmetric, or private on
 * every member: the tensor-parallel GPT sums its activations). */
int sym__comm_sum(shmem_team_t team, float *x, size_t n);
/* The same for doubles, and max / min (x symmetric or private). */
int sym__comm_sum_f64(shmem_team_t team, double *x, size_t n);
int sym__comm_max_f32(shmem_team_t team, float *x, size_t n);
int sym__comm_min_i32(shmem_team_t team, int32_t *x, size_t n);
int sym__comm_max_i64(shmem_team_t team, int64_t *x, size_t n);
/* The uneven collectives of the distributed tensors, over symmetric buffers.
 * Every member of the team calls with its own arguments, which it computes
 * locally (every member knows every member's sizes); a team sync before (every
 * buf is filled) and one after (buf may be written again).
 * pullv: dst = the concatenation, in team order, of the len[k] bytes at byte
 * offset off[k] of member k's buf (all-gather-v, all-to-all-v). */
int sym__comm_pullv(shmem_team_t team, const void *buf, const size_t *off, const size_t *len,
                    void *dst);
/* reduce_pull: dst (n floats) = the sum, in team order and in fp32, of the n
 * floats at element offset off of every member's buf (reduce-scatter-v: each
 * member pulls its own block). */
int sym__comm_reduce_pull_f32(shmem_team_t team, const float *buf, size_t off, size_t n,
                              float *dst);
/* An all-gather in place: x (symmetric) is made up of ranges, range i
 * (floats [lo[i], lo[i] + len[i])) final on member owner[i]; every member
 * reads the ranges it does not own from their owners. */
int sym__comm_pull_ranges_f32(shmem_team_t team, float *x, int n, const size_t *lo,
                              const size_t *len, const int *owner);
/* dest[m * n + i] = member m's src[i] (both symmetric). */
int sym__comm_allgather_f64(shmem_team_t team, double *dest, const double *src, size_t n);

/* ---- JSON ---- */

typedef enum { SYM_JNULL, SYM_JBOOL, SYM_JNUM, SYM_JSTR, SYM_JARR, SYM_JOBJ } sym_jtype_t;

typedef struct sym_json {
    sym_jtype_t type;
    char *key;              /* member name inside an object */
    char *str;              /* string value, or a number's text */
    double num;             /* number value (also bool: 0 / 1) */
    struct sym_json *child; /* first element / member */
    struct sym_json *next;  /* next sibling */
} sym_json_t;

/* Parse text[0..len) as one JSON value. NULL on malformed input, with *err
 * (may be NULL) set to a short description and where. */
sym_json_t *sym__json_parse(const char *text, size_t len, char *err, size_t err_len);
void sym__json_free(sym_json_t *j);
/* Member `key` of an object, or NULL. */
const sym_json_t *sym__json_get(const sym_json_t *obj, const char *key);
/* Typed getters: 0 on success, -1 when missing or of another type. Integers
 * are read from the number's text, so 64-bit values survive. */
int sym__json_i64(const sym_json_t *obj, const char *key, int64_t *out);
int sym__json_u64(const sym_json_t *obj, const char *key, uint64_t *out);
int sym__json_num(const sym_json_t *obj, const char *key, double *out);
int sym__json_str(const sym_json_t *obj, const char *key, char *out, size_t len);

/* A growing text buffer for writing JSON. */
typedef struct {
    char *buf;
    size_t len, cap;
    int failed; /* an allocation failed: the text is incomplete */
} sym_jbuf_t;

void sym__jbuf_printf(sym_jbuf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Append s as a quoted, escaped JSON string. */
void sym__jbuf_string(sym_jbuf_t *b, const char *s);
void sym__jbuf_free(sym_jbuf_t *b);

#endif
