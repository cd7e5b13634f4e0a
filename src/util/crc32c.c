/*
 * crc32c.c — CRC32C (Castagnoli polynomial, as used by iSCSI, ext4 and most
 * checkpoint formats). SSE4.2's crc32 instruction where the CPU has it, a
 * slice-by-8 table otherwise; both give identical results. Also a copy that
 * checksums what it copies (one pass over the data) and the CRC of two
 * pieces joined from the pieces' CRCs (zlib's crc32_combine, this
 * polynomial's).
 */
#include <string.h>

#include "util.h"

#define POLY 0x82F63B78u /* reflected Castagnoli */

static uint32_t table[8][256];
static int table_ready;

static void make_table(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = (c >> 1) ^ (POLY & (0u - (c & 1)));
        table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++)
            table[t][i] = (table[t - 1][i] >> 8) ^ table[0][table[t - 1][i] & 0xff];
    __atomic_store_n(&table_ready, 1, __ATOMIC_RELEASE);
}

static uint32_t crc_sw(uint32_t crc, const unsigned char *p, size_t len) {
    if (!__atomic_load_n(&table_ready, __ATOMIC_ACQUIRE)) make_table();
    while (len && ((uintptr_t)p & 7)) {
        crc = (crc >> 8) ^ table[0][(crc ^ *p++) & 0xff];
        len--;
    }
    while (len >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        w ^= crc;
        crc = table[7][w & 0xff] ^ table[6][(w >> 8) & 0xff] ^ table[5][(w >> 16) & 0xff] ^
              table[4][(w >> 24) & 0xff] ^ table[3][(w >> 32) & 0xff] ^
              table[2][(w >> 40) & 0xff] ^ table[1][(w >> 48) & 0xff] ^ table[0][w >> 56];
        p += 8;
        len -= 8;
    }
    while (len--) crc = (crc >> 8) ^ table[0][(crc ^ *p++) & 0xff];
    return crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) static uint32_t crc_hw(uint32_t crc, const unsigned char *p,
                                                         size_t len) {
    uint64_t c = crc;
    while (len && ((uintptr_t)p & 7)) {
        c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
        len--;
    }
    while (len >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        c = __builtin_ia32_crc32di(c, w);
        p += 8;
        len -= 8;
    }
    while (len--) c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
    return (uint32_t)c;
}
#endif

uint32_t sym__crc32c(uint32_t crc, const void *data, size_t len) {
    crc = ~crc;
#if defined(__x86_64__)
    if (__builtin_cpu_supports("sse4.2"))
        return ~crc_hw(crc, data, len);
#endif
    return ~crc_sw(crc, data, len);
}

uint32_t sym__crc32c_copy(uint32_t crc, void *dst, const void *src, size_t len) {
    unsigned char *d = dst;
    const unsigned char *p = src;
    enum { CHUNK = 16384 }; /* checksummed while still in the L1 cache */
    while (len) {
        size_t n = len < CHUNK ? len : CHUNK;
        memcpy(d, p, n);
        crc = sym__crc32c(crc, d, n);
        d += n;
        p += n;
        len -= n;
    }
    return crc;
}

/* mat (32 columns) times vec over GF(2). */
static uint32_t gf2_times(const uint32_t *mat, uint32_t vec) {
    uint32_t sum = 0;
    for (; vec; vec >>= 1, mat++)
        if (vec & 1) sum ^= *mat;
    return sum;
}

static void gf2_square(uint32_t *square, const uint32_t *mat) {
    for (int n = 0; n < 32; n++) square[n] = gf2_times(mat, mat[n]);
}

uint32_t sym__crc32c_combine(uint32_t crc1, uint32_t crc2, size_t len2) {
    if (len2 == 0) return crc1;
    uint32_t even[32], odd[32]; /* the operators that append 2^k zero bits */
    odd[0] = POLY;              /* one zero bit */
    for (int n = 1; n < 32; n++) odd[n] = 1u << (n - 1);
    gf2_square(even, odd); /* two */
    gf2_square(odd, even); /* four */
    for (;;) {             /* append len2 zero bytes to crc1, a bit of len2 at a time */
        gf2_square(even, odd);
        if (len2 & 1) crc1 = gf2_times(even, crc1);
        if (!(len2 >>= 1)) break;
        gf2_square(odd, even);
        if (len2 & 1) crc1 = gf2_times(odd, crc1);
        if (!(len2 >>= 1)) break;
    }
    return crc1 ^ crc2;
}
