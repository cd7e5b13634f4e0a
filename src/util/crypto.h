/*
 * crypto.h — the few cryptographic primitives symtrain needs, all from
 * OpenSSL's libcrypto (never our own): random bytes, HMAC-SHA256 (the env
 * bootstrap's store proves a rank knows the job token without sending it),
 * HKDF-SHA256 (keys derived from that token) and AES-256-GCM (the records the
 * ranks all-gather through the store: fabric addresses and memory keys).
 */
#ifndef SYM_CRYPTO_H
#define SYM_CRYPTO_H

#include <stddef.h>

#define SYM_MAC_LEN 32      /* HMAC-SHA256 */
#define SYM_AEAD_KEY_LEN 32 /* AES-256-GCM */
#define SYM_AEAD_NONCE_LEN 12
#define SYM_AEAD_TAG_LEN 16

/* len bytes from the operating system's CSPRNG (through libcrypto's DRBG).
 * 0 on success, -1 on failure. */
int sym__random_bytes(void *buf, size_t len);

/* out = HMAC-SHA256(key, msg). 0 on success, -1 on failure. */
int sym__hmac_sha256(const void *key, size_t keylen, const void *msg, size_t msglen,
                     unsigned char out[SYM_MAC_LEN]);

/* out (outlen bytes) = HKDF-SHA256(ikm, salt, info) (RFC 5869). 0 or -1. */
int sym__hkdf_sha256(const void *ikm, size_t ikmlen, const void *salt, size_t saltlen,
                     const char *info, unsigned char *out, size_t outlen);

/* AES-256-GCM. seal: out (len + SYM_AEAD_TAG_LEN bytes) = ciphertext of in,
 * then the tag over it and aad. open: the reverse; -1 (out unspecified) when
 * the tag does not match: in, aad, key or nonce differ from the sealer's.
 * A nonce must never be used twice with one key. */
int sym__aead_seal(const unsigned char key[SYM_AEAD_KEY_LEN],
                   const unsigned char nonce[SYM_AEAD_NONCE_LEN], const void *aad, size_t aadlen,
                   const void *in, size_t len, void *out);
int sym__aead_open(const unsigned char key[SYM_AEAD_KEY_LEN],
                   const unsigned char nonce[SYM_AEAD_NONCE_LEN], const void *aad, size_t aadlen,
                   const void *in, size_t len_with_tag, void *out);

/* Compare without leaking where the first difference is. 1 if equal. */
int sym__consttime_eq(const void *a, const void *b, size_t len);

#endif
