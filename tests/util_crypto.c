/*
 * util_crypto — src/util/crypto.c against published test vectors: HMAC-SHA256
 * (RFC 4231, case 2), HKDF-SHA256 (RFC 5869, case 1), AES-256-GCM (McGrew and
 * Viega's GCM spec, test case 16: a key, a 96-bit IV, AAD and 60 bytes). Then
 * what the env bootstrap relies on: a flipped bit anywhere (ciphertext, tag,
 * AAD, nonce) or another key fails to open; an empty record (a barrier's)
 * seals to a tag alone and opens; random draws differ.
 */
#include "test.h"
#include "util/crypto.h"

static void unhex(const char *h, unsigned char *out, size_t n) {
    for (size_t i = 0; i < n; i++) {
        unsigned v;
        CHECK(sscanf(h + 2 * i, "%2x", &v) == 1, "bad hex in a test vector");
        out[i] = (unsigned char)v;
    }
}

#define CHECK_HEX(got, hex, n)                                                        \
    do {                                                                              \
        unsigned char want_[128];                                                     \
        unhex(hex, want_, n);                                                         \
        CHECK(memcmp(got, want_, n) == 0, "differs from the published vector");       \
    } while (0)

int main(void) {
    /* HMAC-SHA256, RFC 4231 test case 2 */
    unsigned char mac[SYM_MAC_LEN];
    const char *data = "what do ya want for nothing?";
    CHECK(sym__hmac_sha256("Jefe", 4, data, strlen(data), mac) == 0, "HMAC failed");
    CHECK_HEX(mac, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843", 32);

    /* HKDF-SHA256, RFC 5869 test case 1 */
    unsigned char ikm[22], salt[13], okm[42];
    char info[11];
    memset(ikm, 0x0b, sizeof ikm);
    for (int i = 0; i < 13; i++) salt[i] = (unsigned char)i;
    for (int i = 0; i < 10; i++) info[i] = (char)(0xf0 + i);
    info[10] = 0;
    CHECK(sym__hkdf_sha256(ikm, sizeof ikm, salt, sizeof salt, info, okm, sizeof okm) == 0,
          "HKDF failed");
    CHECK_HEX(okm, "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf"
                   "34007208d5b887185865", 42);

    /* AES-256-GCM, test case 16 */
    unsigned char key[32], iv[12], aad[20], pt[60], sealed[60 + SYM_AEAD_TAG_LEN], back[60];
    unhex("feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308", key, 32);
    unhex("cafebabefacedbaddecaf888", iv, 12);
    unhex("feedfacedeadbeeffeedfacedeadbeefabaddad2", aad, 20);
    unhex("d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72"
          "1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39", pt, 60);
    CHECK(sym__aead_seal(key, iv, aad, sizeof aad, pt, sizeof pt, sealed) == 0, "seal failed");
    CHECK_HEX(sealed, "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa"
                      "8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662"
                      "76fc6ece0f4e1768cddf8853bb2d551b", 76);
    CHECK(sym__aead_open(key, iv, aad, sizeof aad, sealed, sizeof sealed, back) == 0 &&
              memcmp(back, pt, sizeof pt) == 0,
          "the sealed vector does not open to its plaintext");

    /* one flipped bit anywhere, or another key: it does not open */
    for (size_t bit = 0; bit < 8 * sizeof sealed; bit += 7) {
        sealed[bit / 8] ^= (unsigned char)(1u << bit % 8);
        CHECK(sym__aead_open(key, iv, aad, sizeof aad, sealed, sizeof sealed, back) != 0,
              "opened with bit %zu of ciphertext+tag flipped", bit);
        sealed[bit / 8] ^= (unsigned char)(1u << bit % 8);
    }
    for (size_t bit = 0; bit < 8 * sizeof aad; bit += 5) {
        aad[bit / 8] ^= (unsigned char)(1u << bit % 8);
        CHECK(sym__aead_open(key, iv, aad, sizeof aad, sealed, sizeof sealed, back) != 0,
              "opened with bit %zu of the AAD flipped", bit);
        aad[bit / 8] ^= (unsigned char)(1u << bit % 8);
    }
    iv[11] ^= 1;
    CHECK(sym__aead_open(key, iv, aad, sizeof aad, sealed, sizeof sealed, back) != 0,
          "opened under another nonce");
    iv[11] ^= 1;
    key[0] ^= 0x80;
    CHECK(sym__aead_open(key, iv, aad, sizeof aad, sealed, sizeof sealed, back) != 0,
          "opened under another key");
    key[0] ^= 0x80;
    CHECK(sym__aead_open(key, iv, aad, sizeof aad, sealed, SYM_AEAD_TAG_LEN - 1, back) != 0,
          "opened a record shorter than a tag");

    /* an empty record: a tag alone, which opens, and fails when altered */
    unsigned char tag[SYM_AEAD_TAG_LEN];
    CHECK(sym__aead_seal(key, iv, aad, sizeof aad, "", 0, tag) == 0, "empty seal failed");
    CHECK(sym__aead_open(key, iv, aad, sizeof aad, tag, sizeof tag, back) == 0,
          "an empty record does not open");
    tag[3] ^= 4;
    CHECK(sym__aead_open(key, iv, aad, sizeof aad, tag, sizeof tag, back) != 0,
          "an altered empty record opened");

    /* random draws: not the same twice, not all zero */
    uint64_t a[4] = {0}, b[4] = {0}, zero[4] = {0};
    CHECK(sym__random_bytes(a, sizeof a) == 0 && sym__random_bytes(b, sizeof b) == 0,
          "random_bytes failed");
    CHECK(memcmp(a, b, sizeof a) != 0 && memcmp(a, zero, sizeof a) != 0,
          "two random draws are equal or zero");
    CHECK(sym__consttime_eq(a, a, sizeof a) && !sym__consttime_eq(a, b, sizeof a),
          "consttime_eq is wrong");
    printf("util_crypto: HMAC, HKDF and AES-256-GCM match their vectors; tampering fails\n");
    return 0;
}
