/*
 * sha256.h — SHA-256 and HMAC-SHA256 (FIPS 180-4, RFC 2104), for proving
 * knowledge of a job's secret without sending it (the env bootstrap's store).
 */
#ifndef SYM_SHA256_H
#define SYM_SHA256_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint32_t h[8];
    uint64_t len;
    unsigned char buf[64];
    size_t fill;
} sym_sha256_t;

void sym__sha256_init(sym_sha256_t *s);
void sym__sha256_update(sym_sha256_t *s, const void *data, size_t len);
void sym__sha256_final(sym_sha256_t *s, unsigned char out[32]);
void sym__hmac_sha256(const void *key, size_t keylen, const void *msg, size_t msglen,
                      unsigned char out[32]);
/* Compare without leaking where the first difference is. 1 if equal. */
int sym__consttime_eq(const void *a, const void *b, size_t len);

#endif
