/*
 * symtrain/error.h — how the training stack reports failure.
 *
 * Every function that can fail returns an int: 0 (SYM_OK) or one of the
 * negative SYM_E* codes below. The function that first saw the problem also
 * records one sentence for the user (what failed, which file or value, and what
 * to do about it); sym_last_error() returns the calling thread's latest one.
 * The library never prints an error itself: the caller decides who speaks
 * (in a multi-PE job, usually PE 0 alone, since every PE sees the same thing).
 */
#ifndef SYMTRAIN_ERROR_H
#define SYMTRAIN_ERROR_H

#ifdef __cplusplus
extern "C" {
#endif

/* The error codes: an X-macro list, so names and messages stay together. */
#define SYM_ERRNO_MAP(X)                                                             \
    X(EINVAL, -1, "invalid argument")                                                \
    X(ENOMEM, -2, "out of memory")                                                   \
    X(ENOENT, -3, "not found")                                                       \
    X(EIO, -4, "input/output error")                                                 \
    X(ECORRUPT, -5, "corrupt or truncated data")                                     \
    X(EMISMATCH, -6, "does not match this run")                                      \
    X(ECOMM, -7, "communication failed")                                             \
    X(EBUSY, -8, "in use by another job")

#define SYM_ERRNO_DEF(name, code, msg) SYM_##name = code,
enum { SYM_OK = 0, SYM_ERRNO_MAP(SYM_ERRNO_DEF) };
#undef SYM_ERRNO_DEF

/* "invalid argument" etc. for a code; "unknown error" for anything else. */
const char *sym_strerror(int err);

/* The calling thread's latest error sentence ("" if none yet). */
const char *sym_last_error(void);

#ifdef __cplusplus
}
#endif

#endif
