/*
 * crypto.c — thin wrappers over OpenSSL's libcrypto (see crypto.h). Each
 * returns -1 on any failure of the library, which callers report in their own
 * words; none prints.
 */
#include "crypto.h"

#include <limits.h>
#include <string.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/kdf.h>
#include <openssl/rand.h>

int sym__random_bytes(void *buf, size_t len) {
    return len <= INT_MAX && RAND_bytes(buf, (int)len) == 1 ? 0 : -1;
}

int sym__hmac_sha256(const void *key, size_t keylen, const void *msg, size_t msglen,
                     unsigned char out[SYM_MAC_LEN]) {
    unsigned int n = 0;
    if (keylen > INT_MAX) return -1;
    return HMAC(EVP_sha256(), key, (int)keylen, msg, msglen, out, &n) && n == SYM_MAC_LEN ? 0
                                                                                         : -1;
}

int sym__hkdf_sha256(const void *ikm, size_t ikmlen, const void *salt, size_t saltlen,
                     const char *info, unsigned char *out, size_t outlen) {
    EVP_PKEY_CTX *c = EVP_PKEY_CTX_new_id(EVP_PKEY_HKDF, NULL);
    size_t n = outlen;
    int ok = c && EVP_PKEY_derive_init(c) > 0 && EVP_PKEY_CTX_set_hkdf_md(c, EVP_sha256()) > 0 &&
             EVP_PKEY_CTX_set1_hkdf_salt(c, salt, (int)saltlen) > 0 &&
             EVP_PKEY_CTX_set1_hkdf_key(c, ikm, (int)ikmlen) > 0 &&
             EVP_PKEY_CTX_add1_hkdf_info(c, (const unsigned char *)info, (int)strlen(info)) > 0 &&
             EVP_PKEY_derive(c, out, &n) > 0 && n == outlen;
    EVP_PKEY_CTX_free(c);
    return ok ? 0 : -1;
}

/* One AES-256-GCM pass: seal (enc 1) or open (enc 0). */
static int gcm(int enc, const unsigned char *key, const unsigned char *nonce, const void *aad,
               size_t aadlen, const unsigned char *in, size_t len, unsigned char *out,
               unsigned char *tag) {
    if (len > INT_MAX || aadlen > INT_MAX) return -1;
    EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
    int n = 0, ok = c && EVP_CipherInit_ex(c, EVP_aes_256_gcm(), NULL, NULL, NULL, enc) == 1 &&
                    EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_IVLEN, SYM_AEAD_NONCE_LEN, NULL) == 1 &&
                    EVP_CipherInit_ex(c, NULL, NULL, key, nonce, enc) == 1 &&
                    (!aadlen || EVP_CipherUpdate(c, NULL, &n, aad, (int)aadlen) == 1) &&
                    (!len || EVP_CipherUpdate(c, out, &n, in, (int)len) == 1) &&
                    (enc || EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_TAG, SYM_AEAD_TAG_LEN, tag) == 1) &&
                    EVP_CipherFinal_ex(c, out + len, &n) == 1 &&
                    (!enc || EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG, SYM_AEAD_TAG_LEN, tag) == 1);
    EVP_CIPHER_CTX_free(c);
    return ok ? 0 : -1;
}

int sym__aead_seal(const unsigned char key[SYM_AEAD_KEY_LEN],
                   const unsigned char nonce[SYM_AEAD_NONCE_LEN], const void *aad, size_t aadlen,
                   const void *in, size_t len, void *out) {
    unsigned char *o = out;
    return gcm(1, key, nonce, aad, aadlen, in, len, o, o + len);
}

int sym__aead_open(const unsigned char key[SYM_AEAD_KEY_LEN],
                   const unsigned char nonce[SYM_AEAD_NONCE_LEN], const void *aad, size_t aadlen,
                   const void *in, size_t len_with_tag, void *out) {
    if (len_with_tag < SYM_AEAD_TAG_LEN) return -1;
    size_t len = len_with_tag - SYM_AEAD_TAG_LEN;
    unsigned char tag[SYM_AEAD_TAG_LEN];
    memcpy(tag, (const unsigned char *)in + len, sizeof tag);
    return gcm(0, key, nonce, aad, aadlen, in, len, out, tag);
}

int sym__consttime_eq(const void *a, const void *b, size_t len) {
    return CRYPTO_memcmp(a, b, len) == 0;
}
