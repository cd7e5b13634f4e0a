/*
 * half.h — IEEE binary16 (fp16) and bfloat16 conversions to and from fp32,
 * rounding to nearest-even, with infinities, NaNs and subnormals kept.
 * Scalar and branch-light so loops over them vectorise; the fp16 kernels also
 * have an F16C path in reduce.c.
 */
#ifndef SYM_HALF_H
#define SYM_HALF_H

#include <stdint.h>
#include <string.h>

static inline float sym__f32_from_bits(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static inline uint32_t sym__bits_from_f32(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static inline float sym__bf16_to_f32(uint16_t h) { return sym__f32_from_bits((uint32_t)h << 16); }

static inline uint16_t sym__f32_to_bf16(float f) {
    uint32_t u = sym__bits_from_f32(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40); /* quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1); /* round to nearest, ties to even */
    return (uint16_t)(u >> 16);
}

static inline float sym__f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ff;
    if (exp == 0x1f) return sym__f32_from_bits(sign | 0x7f800000u | (man << 13)); /* inf/NaN */
    if (exp == 0) { /* zero or subnormal: man * 2^-24 */
        float v = (float)man * 0x1p-24f;
        return sign ? -v : v;
    }
    return sym__f32_from_bits(sign | ((exp + 112) << 23) | (man << 13));
}

static inline uint16_t sym__f32_to_f16(float f) {
    uint32_t u = sym__bits_from_f32(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000);
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00 | ((a >> 13) & 0x3ff)); /* NaN */
    if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00); /* rounds to >= 65520: inf */
    if (a < 0x38800000u) { /* below the smallest normal half, 2^-14: subnormal or zero */
        /* Scale so the half's subnormal step (2^-24) becomes 1 and round there;
         * float addition of 0.5 * 2^-? is avoided: use the magic-number trick. */
        float v = sym__f32_from_bits(a) + 0.5f; /* 0.5 = 2^-1: ulp there is 2^-24 */
        return (uint16_t)(sign | (uint16_t)(sym__bits_from_f32(v) - 0x3f000000u));
    }
    /* Normal: rebias the exponent and round the mantissa to 10 bits, ties to even. */
    uint32_t r = a + 0xc8000fffu + ((a >> 13) & 1); /* -(112 << 23) + 0xfff + lsb */
    return (uint16_t)(sign | (r >> 13));
}

#endif
