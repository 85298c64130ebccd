/* Vector helpers shared by the CPU kernels: the SIMD header where the build has AVX2, a
 * vector exp, and conversions of 16-bit floats (KV-cache elements, packed scales). */
#ifndef GATEWAY_CPU_VEC_H
#define GATEWAY_CPU_VEC_H

#include <stdint.h>
#include <string.h>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define HAVE_AVX2 1
#if defined(__AVX512F__)
#define HAVE_AVX512 1
#endif
#endif

static inline float bf16_to_f32(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static inline uint16_t f32_to_bf16(float f) { /* round to nearest even, as torch does */
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40); /* NaN stays NaN */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static inline float f16_to_f32(uint16_t h) {
#if defined(__F16C__)
    return _cvtsh_ss(h);
#else
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff, u;
    if (exp == 0) {
        if (man == 0) u = sign;
        else { /* subnormal: normalise */
            exp = 127 - 15 + 1;
            while (!(man & 0x400)) { man <<= 1; exp--; }
            u = sign | (exp << 23) | ((man & 0x3ff) << 13);
        }
    } else if (exp == 31) u = sign | 0x7f800000u | (man << 13);
    else u = sign | ((exp + 127 - 15) << 23) | (man << 13);
    float f;
    memcpy(&f, &u, 4);
    return f;
#endif
}

static inline uint16_t f32_to_f16(float f) {
#if defined(__F16C__)
    return _cvtss_sh(f, 0);
#else
    uint32_t u; /* round to nearest even; overflow to inf; subnormals flushed toward zero */
    memcpy(&u, &f, 4);
    uint32_t sign = (u >> 16) & 0x8000;
    int32_t exp = (int32_t)((u >> 23) & 0xff) - 127 + 15;
    uint32_t man = u & 0x7fffff;
    if (((u >> 23) & 0xff) == 0xff) return (uint16_t)(sign | 0x7c00 | (man ? 0x200 : 0));
    if (exp >= 31) return (uint16_t)(sign | 0x7c00);
    if (exp <= 0) return (uint16_t)sign;
    uint32_t half = (uint32_t)(exp << 10) | (man >> 13);
    uint32_t rest = man & 0x1fff;
    if (rest > 0x1000 || (rest == 0x1000 && (half & 1))) half++;
    return (uint16_t)(sign | half);
#endif
}

#ifdef HAVE_AVX2
/* exp(x) for 8 floats: x = n ln2 + r with |r| <= ln2 / 2, 2^n built in the exponent bits,
 * e^r from Cephes' degree-6 polynomial; about 1 ulp over the normal range; below -87.3 the
 * result is 0, above 88.3 it is clamped. */
static inline __m256 exp_ps(__m256 x) {
    const __m256 hi = _mm256_set1_ps(88.3762626647949f), lo = _mm256_set1_ps(-87.3365478515625f);
    __m256 under = _mm256_cmp_ps(x, lo, _CMP_LT_OQ);
    x = _mm256_max_ps(_mm256_min_ps(x, hi), lo);
    __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    __m256 p = _mm256_set1_ps(1.9875691500E-4f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507E-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073E-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894E-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459E-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201E-1f));
    p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.f)));
    __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_andnot_ps(under, _mm256_mul_ps(p, _mm256_castsi256_ps(e)));
}

#ifdef HAVE_AVX512
/* exp_ps for 16 floats: the same steps and constants, so a lane's result equals exp_ps's. */
static inline __m512 exp512_ps(__m512 x) {
    const __m512 hi = _mm512_set1_ps(88.3762626647949f), lo = _mm512_set1_ps(-87.3365478515625f);
    const __mmask16 under = _mm512_cmp_ps_mask(x, lo, _CMP_LT_OQ);
    x = _mm512_max_ps(_mm512_min_ps(x, hi), lo);
    __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
    __m512 p = _mm512_set1_ps(1.9875691500E-4f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507E-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073E-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894E-2f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459E-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201E-1f));
    p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.f)));
    __m512i e = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23);
    return _mm512_maskz_mul_ps((__mmask16)~under, p, _mm512_castsi512_ps(e));
}
#endif

/* 8 fp16 values as floats (scales and minimums of packed weights). */
static inline __m256 load_half8(const uint16_t *p) {
#if defined(__F16C__)
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
#else
    float f[8];
    for (int i = 0; i < 8; i++) f[i] = f16_to_f32(p[i]);
    return _mm256_loadu_ps(f);
#endif
}
#endif

#endif
