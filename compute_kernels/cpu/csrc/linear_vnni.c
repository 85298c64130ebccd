/* Packed linear on AVX512-VNNI: integer weights times fixed-point activations, summed exactly.
 *
 * The fp32 paths (linear.c) spend most of their time turning 4-bit weights into floats. Here
 * the weights stay integers: each row's inputs are written, per group of GROUP, as a scale and
 * integers X (|X| <= 8355711 with three signed 8-bit digits, d2 * 65536 + d1 * 256 + d0; 32639
 * with two; 127 with one), and vpdpbusd sums weight (u8) x digit (s8) products four at a time,
 * exactly, in int32, one sum per digit plane. Once per group the integer sums become floats:
 *     out += (d * s) * sum((q - 8) * X) + (m + 8 d) * (s * sum(X))   (int4: w = d * q + m)
 *     out += (d * s) * sum((q' - 128) * X)                            (int8: q' = q + 128 unsigned)
 * The weights' offset is where the planes' sums start (-8 sum(X) in the low plane, -128 x each
 * plane's digit sum), and the planes combine in int32 (shifts and adds, mod 2^32: the centred
 * int4 sum is below 32 x 8 x 8355711 < 2^31) into one value converted once; only int8 with
 * three digits adds its top plane in float. On Zen4 an FMA or multiply takes a vpdpbusd's
 * slot while integer adds, shifts and conversions mostly do not, so a (row, 16 columns, group)
 * costs 24 vpdpbusd and 3 float multiply-adds with three digits. Three digits keep 24 bits of
 * every group's inputs (error <= 2^-24 of the group's largest input, float32's own rounding);
 * two 16 bits; one digit is llama.cpp's 8-bit scheme.
 * A row's integers depend on that row alone and integer sums have no order, so a request's
 * result does not depend on its batch.
 *
 * Weights are repacked once (vnni_pack) so that 4 consecutive inputs of a column are one int32
 * lane: int4 as 64-byte blocks holding two 4-input steps (low nibbles the first, high the
 * second), int8 as one step per 64 bytes. Per (panel, group) the bytes are as many as before.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "common.h"
#include "ops.h"
#include "vec.h"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VNNI__)
#define HAVE_VNNI 1
#endif

#define VROWS 4          /* most rows per register tile: 4 with one digit, 3 with two, 2 with three (8, 12, 12 integer accumulators) */
#define VROW_BLOCK 64    /* rows per work item: their digits (2 x 64 x K bytes) stay in L2 */
#define STEP_BYTES 64    /* one vpdpbusd operand: PANEL columns x 4 inputs */
#define MAX_DIGITS 3     /* 8-bit digits per activation: 1 (8-bit), 2 (16-bit), 3 (24-bit fixed point) */

int vnni_supported(void) {
#ifdef HAVE_VNNI
    return 1;
#else
    return 0;
#endif
}

int64_t vnni_packed_bytes(const packed_linear *w) {
    const int64_t np = (w->n + PANEL - 1) / PANEL;
    return w->kind == W_INT4 ? np * w->k * PANEL / 2 : w->kind == W_INT8 ? np * w->k * PANEL : 0;
}

/* The weight of input kk (0 <= kk < GROUP) of column c in group g of panel p, as stored. */
static inline int stored_q(const packed_linear *w, int64_t p, int64_t g, int kk, int c) {
    if (w->kind == W_INT4) {
        const uint8_t *b = (const uint8_t *)w->data + p * (w->k / 2) * PANEL + g * (GROUP / 2) * PANEL;
        const uint8_t v = b[(kk / 2) * PANEL + c];
        return (kk & 1) ? v >> 4 : v & 15;
    }
    const int8_t *b = (const int8_t *)w->data + p * w->k * PANEL + g * GROUP * PANEL;
    return b[kk * PANEL + c] + 128;
}

void vnni_pack(const packed_linear *w, uint8_t *dst) {
    const int64_t np = (w->n + PANEL - 1) / PANEL, ng = w->k / GROUP;
    const int64_t per_group = w->kind == W_INT4 ? GROUP * PANEL / 2 : GROUP * PANEL;
#pragma omp parallel for schedule(static)
    for (int64_t p = 0; p < np; p++)
        for (int64_t g = 0; g < ng; g++) {
            uint8_t *o = dst + (p * ng + g) * per_group;
            for (int s = 0; s < GROUP / 4; s++)
                for (int c = 0; c < PANEL; c++)
                    for (int kk = 0; kk < 4; kk++) {
                        const int q = stored_q(w, p, g, 4 * s + kk, c);
                        if (w->kind == W_INT8) o[s * STEP_BYTES + c * 4 + kk] = (uint8_t)q;
                        else if (s % 2 == 0) o[(s / 2) * STEP_BYTES + c * 4 + kk] = (uint8_t)q;
                        else o[(s / 2) * STEP_BYTES + c * 4 + kk] |= (uint8_t)(q << 4);
                    }
        }
}

#ifdef HAVE_VNNI

/* One linear call's activations in fixed point: digit planes [m][k] (dig[0] the least
 * significant), and per (row, group) the scale, s * sum(X) and each plane's sum. */
typedef struct {
    int8_t *dig[MAX_DIGITS];
    float *scale, *scaled_sum; /* s, and s * sum(X) (the int4 minimum's factor) */
    int32_t *init;             /* [m][ng][MAX_DIGITS]: each plane's integer sum starts here (the weights' offset) */
    int64_t k, ng;
} fixed_rows;

/* The largest |X| of `digits` balanced signed 8-bit digits whose top digit stays in [-127, 127]. */
static float digit_limit(int digits) { return digits == 3 ? 8355711.f : digits == 2 ? 32639.f : 127.f; }

/* v[s] (16 vectors) -> one vector whose lane 4 j + t is the sum (max) of v[j + 4 t]'s lanes: a
 * tree of 128-, 64- and 32-bit shuffles, 3 ops a vector instead of a reduction each. */
#define TREE16(T, OP)                                                                                      \
    static inline __m512i tree16_##T(const __m512i *v) {                                                     \
        __m512i u[8], w[4], y[2];                                                                            \
        for (int i = 0; i < 8; i++)                                                                          \
            u[i] = OP(_mm512_shuffle_i32x4(v[2 * i], v[2 * i + 1], 0x44), _mm512_shuffle_i32x4(v[2 * i], v[2 * i + 1], 0xEE)); \
        for (int i = 0; i < 4; i++)                                                                          \
            w[i] = OP(_mm512_shuffle_i32x4(u[2 * i], u[2 * i + 1], 0x88), _mm512_shuffle_i32x4(u[2 * i], u[2 * i + 1], 0xDD)); \
        for (int i = 0; i < 2; i++)                                                                          \
            y[i] = OP(_mm512_unpacklo_epi64(w[2 * i], w[2 * i + 1]), _mm512_unpackhi_epi64(w[2 * i], w[2 * i + 1])); \
        const __m512 a = _mm512_castsi512_ps(y[0]), b = _mm512_castsi512_ps(y[1]);                           \
        return OP(_mm512_castps_si512(_mm512_shuffle_ps(a, b, 0x88)), _mm512_castps_si512(_mm512_shuffle_ps(a, b, 0xDD))); \
    }
#define MAX_AS_PS(a, b) _mm512_castps_si512(_mm512_max_ps(_mm512_castsi512_ps(a), _mm512_castsi512_ps(b)))
TREE16(add, _mm512_add_epi32)
TREE16(max, MAX_AS_PS)

/* Group g0 + j's vector goes to slot 4 (j % 4) + j / 4, so that tree16's lane j is group g0 + j. */
static inline int tree_slot(int j) { return 4 * (j & 3) + (j >> 2); }

/* One row to fixed point, 16 groups at a time: their largest |x| and the integer sums through
 * tree16; per group the integers X = nearest-even(x * limit / amax), clamped to the limit, and
 * their digits: d = X's low byte (balanced, in [-128, 127]), X = (X + 128) >> 8 for the next;
 * the top digit is what is left. */
static void quantize_row(const float *x, int64_t k, int kind, int digits, int8_t *const *dig, float *scale,
                         float *scaled_sum, int32_t *init) {
    const float limit = digit_limit(digits);
    const __m512 vl = _mm512_set1_ps(limit), vnl = _mm512_set1_ps(-limit);
    const __m512i c128 = _mm512_set1_epi32(128);
    const __m512i abs_mask = _mm512_set1_epi32(0x7fffffff);
    const int64_t ng = k / GROUP;
    for (int64_t g0 = 0; g0 < ng; g0 += 16) {
        const int cnt = ng - g0 < 16 ? (int)(ng - g0) : 16;
        __m512i part[MAX_DIGITS][16]; /* per group: lanes of X, then of each X >> 8 step (int8 weights' plane sums) */
        for (int j = 0; j < 16; j++) part[0][j] = _mm512_setzero_si512();
        for (int j = 0; j < cnt; j++) {
            const float *xg = x + (g0 + j) * GROUP;
            part[0][tree_slot(j)] = MAX_AS_PS(_mm512_and_si512(_mm512_loadu_si512(xg), abs_mask),
                                              _mm512_and_si512(_mm512_loadu_si512(xg + 16), abs_mask));
        }
        const __m512 amax = _mm512_castsi512_ps(tree16_max(part[0]));
        const __mmask16 nz = _mm512_cmp_ps_mask(amax, _mm512_setzero_ps(), _CMP_GT_OQ), live = (__mmask16)((1u << cnt) - 1u);
        const __m512 sc = _mm512_maskz_div_ps(nz, amax, vl);
        float inv[16];
        _mm512_storeu_ps(inv, _mm512_maskz_div_ps(nz, vl, amax));
        for (int i = 0; i < MAX_DIGITS; i++)
            for (int j = cnt; j < 16; j++) part[i][tree_slot(j)] = _mm512_setzero_si512();
        for (int j = 0; j < cnt; j++) {
            const int64_t g = g0 + j;
            const __m512 vi = _mm512_set1_ps(inv[j]);
            __m512i rest[2], sum[MAX_DIGITS];
            for (int h = 0; h < 2; h++) /* round to nearest even; clamp what rounding pushed past */
                rest[h] = _mm512_cvtps_epi32(_mm512_min_ps(_mm512_max_ps(_mm512_mul_ps(_mm512_loadu_ps(x + g * GROUP + 16 * h), vi), vnl), vl));
            for (int i = 0; i < digits; i++) {
                sum[i] = _mm512_add_epi32(rest[0], rest[1]);
                for (int h = 0; h < 2; h++) {
                    _mm_storeu_si128((__m128i *)(dig[i] + g * GROUP + 16 * h), _mm512_cvtepi32_epi8(rest[h]));
                    if (i + 1 < digits) rest[h] = _mm512_srai_epi32(_mm512_add_epi32(rest[h], c128), 8);
                }
            }
            for (int i = 0; i < (kind == W_INT8 ? digits : 1); i++) part[i][tree_slot(j)] = sum[i];
        }
        /* sums of X, and (int8) of each step's rest: plane i's digits sum to R_i - 256 R_{i+1} */
        __m512i tot[MAX_DIGITS + 1];
        for (int i = 0; i < (kind == W_INT8 ? digits : 1); i++) tot[i] = tree16_add(part[i]);
        _mm512_mask_storeu_ps(scale + g0, live, sc);
        _mm512_mask_storeu_ps(scaled_sum + g0, live, _mm512_mul_ps(sc, _mm512_cvtepi32_ps(tot[0])));
        /* int8: q' = q + 128, so each plane's sum starts at -128 x its digits' sum; int4: the sum of
         * (q - 8) X, |.| <= 32 x 8 x 8355711 < 2^31, starts at -8 sum(X) (planes combined mod 2^32) */
        int32_t start[MAX_DIGITS][16];
        if (kind == W_INT8) {
            tot[digits] = _mm512_setzero_si512();
            for (int i = 0; i < digits; i++)
                _mm512_storeu_si512(start[i], _mm512_mullo_epi32(_mm512_set1_epi32(-128),
                                                                 _mm512_sub_epi32(tot[i], _mm512_slli_epi32(tot[i + 1], 8))));
        } else
            _mm512_storeu_si512(start[0], _mm512_mullo_epi32(_mm512_set1_epi32(-8), tot[0]));
        for (int j = 0; j < cnt; j++)
            for (int i = 0; i < MAX_DIGITS; i++)
                init[(g0 + j) * MAX_DIGITS + i] = kind == W_INT8 ? (i < digits ? start[i][j] : 0) : i == 0 ? start[0][j] : 0;
    }
}

static inline int32_t word_at(const int8_t *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* The 64 weight bytes of step s (4 inputs x PANEL columns) of group g of panel pp: int4 from an
 * unpacked buffer (one byte a weight) or straight from the packed nibbles, int8 as packed. */
#define UNPACKED_WEIGHTS (GROUP / 4 * 2 * STEP_BYTES)                  /* one group's bytes of 2 panels */
#define UNPACKED_GROUP (UNPACKED_WEIGHTS + 2 * 2 * PANEL * (int)sizeof(float)) /* and their d, m + 8 d */

typedef struct {
    const uint8_t *packed[2]; /* the panels' first group, in vnni layout */
    const uint8_t *unpacked;  /* int4 unpacked: per group [step][2 panels][64] bytes, then d and m + 8 d
                               * as float [2 panels][PANEL] each (UNPACKED_GROUP bytes), or NULL */
    int64_t per_group;        /* packed bytes per (panel, group) */
    const uint8_t *prefetch;  /* the next panel pair's packed bytes (npf panels), fetched into L1 meanwhile, or NULL */
    int npf;
} weight_view;

static inline __attribute__((always_inline)) void
step_pair(const int kind, const int unpacked, const weight_view *wv, int pp, int64_t g, int s, __m512i *w0, __m512i *w1) {
    if (kind == W_INT4 && unpacked) {
        const uint8_t *u = wv->unpacked + g * UNPACKED_GROUP + (s * 2 + pp) * STEP_BYTES;
        *w0 = _mm512_loadu_si512(u), *w1 = _mm512_loadu_si512(u + 2 * STEP_BYTES);
    } else if (kind == W_INT4) {
        const __m512i raw = _mm512_loadu_si512(wv->packed[pp] + g * wv->per_group + (s / 2) * STEP_BYTES);
        const __m512i low = _mm512_set1_epi8(0x0F);
        *w0 = _mm512_and_si512(raw, low), *w1 = _mm512_and_si512(_mm512_srli_epi16(raw, 4), low);
    } else {
        const uint8_t *b = wv->packed[pp] + g * wv->per_group + s * STEP_BYTES;
        *w0 = _mm512_loadu_si512(b), *w1 = _mm512_loadu_si512(b + STEP_BYTES);
    }
}

/* The float value of one group's integer sums for one row and panel: sum_i 256^i * plane i's
 * sum (the planes started at the weights' offset: sum((q - 8) X) for int4, sum(q X) for int8).
 * In int32 (mod 2^32: the true sum fits) and rounded once, except int8 with three digits
 * (up to 2^35): the two low planes in int32, the top one added in float (rounded twice). */
static inline __attribute__((always_inline)) __m512
group_value(const int kind, const int digits, const __m512i *sums) {
    if (digits == 1) return _mm512_cvtepi32_ps(sums[0]);
    const __m512i low = _mm512_add_epi32(_mm512_slli_epi32(sums[1], 8), sums[0]);
    if (digits == 2) return _mm512_cvtepi32_ps(low);
    if (kind == W_INT4) return _mm512_cvtepi32_ps(_mm512_add_epi32(_mm512_slli_epi32(sums[2], 16), low));
    return _mm512_fmadd_ps(_mm512_cvtepi32_ps(sums[2]), _mm512_set1_ps(65536.f), _mm512_cvtepi32_ps(low));
}

/* R rows x P panels over every group: integer sums per group in registers, turned into floats
 * and added to float accumulators that stay in registers; then stored (bias, accumulate). */
static inline __attribute__((always_inline)) void
vnni_tile(const int kind, const int digits, const int unpacked, const int R, const int P, const packed_linear *w,
          const weight_view *wv, int64_t p0, const fixed_rows *a, int64_t row0, float *out, int64_t ldo,
          int accumulate) {
    const int64_t ng = a->ng;
    __m512 acc[VROWS][2];
    for (int r = 0; r < R; r++)
        for (int pp = 0; pp < P; pp++) acc[r][pp] = _mm512_setzero_ps();
    for (int64_t g = 0; g < ng; g++) {
        if (wv->prefetch) /* the next pair's group g, while this one computes (the first tile of a block) */
            for (int pp = 0; pp < wv->npf; pp++)
                for (int64_t off = 0; off < wv->per_group; off += 64)
                    _mm_prefetch((const char *)wv->prefetch + (pp * ng + g) * wv->per_group + off, _MM_HINT_T0);
        __m512i sums[VROWS][2][MAX_DIGITS];
        for (int r = 0; r < R; r++)
            for (int i = 0; i < digits; i++) {
                const __m512i init = kind == W_INT4 && i > 0 ? _mm512_setzero_si512()
                                                             : _mm512_set1_epi32(a->init[((row0 + r) * ng + g) * MAX_DIGITS + i]);
                for (int pp = 0; pp < P; pp++) sums[r][pp][i] = init;
            }
        for (int s = 0; s < GROUP / 4; s += 2) { /* two steps of 4 inputs */
            __m512i w0[2], w1[2];
            for (int pp = 0; pp < P; pp++) step_pair(kind, unpacked, wv, pp, g, s, &w0[pp], &w1[pp]);
            for (int r = 0; r < R; r++) {
                const int64_t at = (row0 + r) * a->k + g * GROUP + 4 * s;
                for (int i = 0; i < digits; i++) {
                    const __m512i x0 = _mm512_set1_epi32(word_at(a->dig[i] + at)), x1 = _mm512_set1_epi32(word_at(a->dig[i] + at + 4));
                    for (int pp = 0; pp < P; pp++)
                        sums[r][pp][i] = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(sums[r][pp][i], w0[pp], x0), w1[pp], x1);
                }
            }
        }
        for (int pp = 0; pp < P; pp++) { /* per column d and, int4, m + 8 d (the sums are of q - 8) */
            __m512 d, m;
            if (kind == W_INT4 && unpacked) {
                const float *f = (const float *)(wv->unpacked + g * UNPACKED_GROUP + UNPACKED_WEIGHTS);
                d = _mm512_loadu_ps(f + pp * PANEL), m = _mm512_loadu_ps(f + (2 + pp) * PANEL);
            } else {
                const int64_t at = (p0 + pp) * ng + g;
                d = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(w->scales + at * PANEL)));
                m = kind == W_INT4 ? _mm512_fmadd_ps(d, _mm512_set1_ps(8.f),
                                                     _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(w->mins + at * PANEL))))
                                   : _mm512_setzero_ps();
            }
            for (int r = 0; r < R; r++) {
                const int64_t rg = (row0 + r) * ng + g;
                const __m512 v = group_value(kind, digits, sums[r][pp]);
                acc[r][pp] = _mm512_fmadd_ps(v, _mm512_mul_ps(d, _mm512_set1_ps(a->scale[rg])), acc[r][pp]);
                if (kind == W_INT4) acc[r][pp] = _mm512_fmadd_ps(m, _mm512_set1_ps(a->scaled_sum[rg]), acc[r][pp]);
            }
        }
    }
    for (int pp = 0; pp < P; pp++) { /* 16 columns a vector, a ragged last panel masked */
        const int64_t col0 = (p0 + pp) * PANEL, ncols = w->n - col0 < PANEL ? w->n - col0 : PANEL;
        const __mmask16 mask = (__mmask16)((1u << ncols) - 1u);
        const __m512 bias = w->bias ? _mm512_maskz_loadu_ps(mask, w->bias + col0) : _mm512_setzero_ps();
        for (int r = 0; r < R; r++) {
            float *o = out + (row0 + r) * ldo + col0;
            __m512 v = _mm512_add_ps(acc[r][pp], bias);
            if (accumulate) v = _mm512_add_ps(_mm512_maskz_loadu_ps(mask, o), v);
            _mm512_mask_storeu_ps(o, mask, v);
        }
    }
}

#define TILE_CASE(K, D, U, RR, PP) vnni_tile(K, D, U, RR, PP, w, wv, p0, a, row0, out, ldo, accumulate)
#define TILE_P(K, D, U, RR) do { if (P == 2) TILE_CASE(K, D, U, RR, 2); else TILE_CASE(K, D, U, RR, 1); } while (0)
#define TILE_R(K, D, U)                                                                                         \
    do {                                                                                                        \
        switch (R) {                                                                                            \
        case 4: TILE_P(K, D, U, 4); break;                                                                      \
        case 3: TILE_P(K, D, U, 3); break;                                                                      \
        case 2: TILE_P(K, D, U, 2); break;                                                                      \
        default: TILE_P(K, D, U, 1); break;                                                                     \
        }                                                                                                       \
    } while (0)

#define TILE_D(K, U)                                                                                            \
    do {                                                                                                        \
        if (w->digits == 3) TILE_R(K, 3, U);                                                                    \
        else if (w->digits == 2) TILE_R(K, 2, U);                                                               \
        else TILE_R(K, 1, U);                                                                                   \
    } while (0)

static void tile_dispatch(int R, int P, const packed_linear *w, const weight_view *wv, int64_t p0, const fixed_rows *a,
                          int64_t row0, float *out, int64_t ldo, int accumulate) {
    if (w->kind == W_INT4 && wv->unpacked != NULL) TILE_D(W_INT4, 1);
    else if (w->kind == W_INT4) TILE_D(W_INT4, 0);
    else TILE_D(W_INT8, 0);
}

/* Rows a register tile takes: the integer sums (digits x rows x 2 panels) and the float ones
 * must fit the 32 registers. */
static int tile_rows_for(int digits) { return digits == 3 ? 2 : digits == 2 ? 3 : VROWS; }

/* int4 panels p0 .. p0 + P - 1 with one byte a weight, per group [step][2 panels][64], then
 * their scales d and m + 8 d as floats (UNPACKED_GROUP bytes a group). */
static void unpack_panels(const packed_linear *w, const weight_view *wv, int64_t p0, int P, int64_t ng, uint8_t *dst) {
    const __m512i low = _mm512_set1_epi8(0x0F);
    for (int64_t g = 0; g < ng; g++) {
        for (int t = 0; t < GROUP / 8; t++)
            for (int pp = 0; pp < P; pp++) {
                const __m512i raw = _mm512_loadu_si512(wv->packed[pp] + g * wv->per_group + t * STEP_BYTES);
                uint8_t *o = dst + g * UNPACKED_GROUP + (2 * t * 2 + pp) * STEP_BYTES;
                _mm512_storeu_si512(o, _mm512_and_si512(raw, low));
                _mm512_storeu_si512(o + 2 * STEP_BYTES, _mm512_and_si512(_mm512_srli_epi16(raw, 4), low));
            }
        float *f = (float *)(dst + g * UNPACKED_GROUP + UNPACKED_WEIGHTS);
        for (int pp = 0; pp < P; pp++) {
            const int64_t at = (p0 + pp) * ng + g;
            const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(w->scales + at * PANEL)));
            const __m512 m = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(w->mins + at * PANEL)));
            _mm512_storeu_ps(f + pp * PANEL, d);
            _mm512_storeu_ps(f + (2 + pp) * PANEL, _mm512_fmadd_ps(d, _mm512_set1_ps(8.f), m));
        }
    }
}

/* rows (<= VROW_BLOCK) rows from row0 of panels p0 .. p0 + P - 1, written to out (its row 0 is
 * the block's first row). Above UNPACK_ROWS rows, int4 weights are unpacked once for all the
 * tiles; below, the tiles split the nibbles themselves (and + shift, cheaper than the unpacked
 * buffer's stores at 16 rows: +5 % single-thread with three digits, +18 % with one). */
#define UNPACK_ROWS 32
static void vnni_rows(const packed_linear *w, int64_t p0, int P, const fixed_rows *a, int64_t row0, int rows,
                      float *out, int64_t ldo, int accumulate, uint8_t *unpack_buf) {
    const int64_t ng = w->k / GROUP;
    const int64_t np = (w->n + PANEL - 1) / PANEL;
    weight_view wv = {{NULL, NULL}, NULL, w->kind == W_INT4 ? GROUP * PANEL / 2 : GROUP * PANEL, NULL, 0};
    for (int pp = 0; pp < P; pp++) wv.packed[pp] = w->vnni + (p0 + pp) * ng * wv.per_group;
    if (p0 + 2 < np) wv.prefetch = w->vnni + (p0 + 2) * ng * wv.per_group, wv.npf = p0 + 3 < np ? 2 : 1;
    const int tile_rows = tile_rows_for(w->digits);
    if (w->kind == W_INT4 && rows > UNPACK_ROWS) {
        unpack_panels(w, &wv, p0, P, ng, unpack_buf);
        wv.unpacked = unpack_buf;
    }
    for (int r0 = 0; r0 < rows; r0 += tile_rows) {
        const int R = rows - r0 < tile_rows ? rows - r0 : tile_rows;
        tile_dispatch(R, P, w, &wv, p0, a, row0 + r0, out - row0 * ldo, ldo, accumulate);
        wv.prefetch = NULL;
    }
}

/* Scratch memory each thread keeps between calls (up to SCRATCH_KEEP bytes): malloc'd afresh,
 * a prefill's digit planes came back from the kernel as new zeroed pages on every call. */
#define SCRATCH_KEEP ((size_t)64 << 20)
typedef struct {
    void *p;
    size_t size;
} scratch;

static void *scratch_get(scratch *s, size_t size) {
    if (size > s->size) {
        free(s->p);
        s->p = malloc(size);
        s->size = s->p ? size : 0;
    }
    return s->p;
}

static void scratch_done(scratch *s) {
    if (s->size > SCRATCH_KEEP) free(s->p), s->p = NULL, s->size = 0;
}

void linear_vnni(const packed_linear *w, const float *x, int64_t m, int64_t ldx, float *out, int64_t ldo,
                 int accumulate) {
    static __thread scratch rows_mem;
    const int64_t k = w->k, ng = k / GROUP, np = (w->n + PANEL - 1) / PANEL, npairs = (np + 1) / 2;
    const int64_t nrb = (m + VROW_BLOCK - 1) / VROW_BLOCK, items = nrb * npairs;
    const int digits = w->digits;
    /* per row: scale, s * sum(X) and init per group, then the digit planes [digits][m][k] */
    const size_t per_group = 2 * sizeof(float) + MAX_DIGITS * sizeof(int32_t);
    uint8_t *mem = scratch_get(&rows_mem, (size_t)(m * ng) * per_group + (size_t)(digits * m * k));
    fixed_rows a = {{NULL, NULL, NULL}, (float *)mem, (float *)mem + m * ng, (int32_t *)((float *)mem + 2 * m * ng), k, ng};
    for (int i = 0; i < digits; i++) a.dig[i] = (int8_t *)(mem + (size_t)(m * ng) * per_group) + i * m * k;
#pragma omp parallel if (items > 1)
    {
#pragma omp for schedule(static)
        for (int64_t r = 0; r < m; r++)
        {
            int8_t *dig[MAX_DIGITS] = {NULL, NULL, NULL};
            for (int i = 0; i < digits; i++) dig[i] = a.dig[i] + r * k;
            quantize_row(x + r * ldx, k, w->kind, digits, dig, a.scale + r * ng, a.scaled_sum + r * ng,
                         a.init + r * ng * MAX_DIGITS);
        }
#ifdef _OPENMP
        const int64_t chunk = (npairs + omp_get_num_threads() - 1) / omp_get_num_threads();
#else
        const int64_t chunk = npairs;
#endif
        static __thread scratch unpack_mem;
        uint8_t *unpack_buf = m > UNPACK_ROWS ? scratch_get(&unpack_mem, (size_t)(ng * UNPACKED_GROUP)) : NULL;
#pragma omp for schedule(static, chunk)
        for (int64_t t = 0; t < items; t++) {
            const int64_t rb = t / npairs, p0 = 2 * (t % npairs);
            const int64_t r0 = rb * VROW_BLOCK, rows = m - r0 < VROW_BLOCK ? m - r0 : VROW_BLOCK;
            vnni_rows(w, p0, p0 + 1 < np ? 2 : 1, &a, r0, (int)rows, out + r0 * ldo, ldo, accumulate, unpack_buf);
        }
        if (m > UNPACK_ROWS) scratch_done(&unpack_mem);
    }
    scratch_done(&rows_mem);
}

/* Greedy rows' tokens from cheap logits and a few exact ones (engine/runner/greedy_head.py):
 * cheap [m, n] (ldc apart) are the logits of x by 1-digit activations, each off by at most
 * B_c = sum_g (amax_g / 254) * col_bound[c, g] (half a step of the group's 8-bit grid times the
 * column's sum of |w| over the group); masked tokens are -inf there. A row's exact argmax is among
 * the columns whose cheap value + B_c reaches max_c (cheap - B_c); those are computed exactly,
 * by w's own digits and the same tile as linear_vnni (bit for bit its values), a panel at a time,
 * and out[r] is the first index of the largest. group_bound[g] = max_c col_bound[c, g] prefilters
 * (cheap >= top - window * sum_g amax_g / 254 * group_bound[g]). out[r] = -1 where a row has a NaN
 * or nothing finite: the caller computes it in full. */
#define BOUND_SLACK 1.025f /* float rounding of the sums and the exact values' own 2^-24 error */

static int64_t bounded_argmax_row(const packed_linear *w, const float *xr, const float *lr, const float *col_bound,
                                  const float *group_bound, float window, float *half_step, int64_t *cand,
                                  float *cand_bound, int64_t max_cand) {
    const int64_t k = w->k, ng = k / GROUP, n = w->n;
    float b = 0.f;
    for (int64_t g = 0; g < ng; g++) {
        const __m512 a = _mm512_loadu_ps(xr + g * GROUP), c = _mm512_loadu_ps(xr + g * GROUP + 16);
        half_step[g] = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(a), _mm512_abs_ps(c))) / 254.f;
        b += half_step[g] * group_bound[g];
    }
    __m512 top = _mm512_set1_ps(-INFINITY);
    __mmask16 nan = 0;
    int64_t c = 0;
    for (; c + 16 <= n; c += 16) {
        const __m512 v = _mm512_loadu_ps(lr + c);
        nan |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
        top = _mm512_max_ps(top, v);
    }
    float best_cheap = _mm512_reduce_max_ps(top);
    for (; c < n; c++) {
        if (lr[c] != lr[c]) nan = 1;
        else if (lr[c] > best_cheap) best_cheap = lr[c];
    }
    if (nan || !(best_cheap > -INFINITY) || !isfinite(b)) return -1;
    /* the candidates by the row's bound, then each by its column's own */
    const __m512 thr = _mm512_set1_ps(best_cheap - window * b * BOUND_SLACK);
    int64_t count = 0;
    float lo = -INFINITY;
    for (c = 0; c < n; c += 16) {
        const __mmask16 valid = n - c >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - c)) - 1u);
        __mmask16 hit = _mm512_mask_cmp_ps_mask(valid, _mm512_maskz_loadu_ps(valid, lr + c), thr, _CMP_GE_OQ);
        while (hit) {
            const int64_t col = c + __builtin_ctz(hit);
            hit &= hit - 1;
            if (count == max_cand) return -1; /* a row this flat is computed in full */
            float bc = 0.f;
            const float *cb = col_bound + col * ng;
            for (int64_t g = 0; g < ng; g++) bc += half_step[g] * cb[g];
            bc *= BOUND_SLACK;
            cand[count] = col, cand_bound[count++] = bc;
            if (lr[col] - bc > lo) lo = lr[col] - bc;
        }
    }
    /* the survivors exactly, a panel at a time (candidates come in column order) */
    fixed_rows a = {{NULL, NULL, NULL}, NULL, NULL, NULL, k, ng};
    float scale[ng], scaled_sum[ng], vals[PANEL];
    int32_t init[ng * MAX_DIGITS];
    int8_t digit_buf[MAX_DIGITS * k];
    a.scale = scale, a.scaled_sum = scaled_sum, a.init = init;
    for (int i = 0; i < w->digits; i++) a.dig[i] = digit_buf + i * k;
    quantize_row(xr, k, w->kind, w->digits, a.dig, a.scale, a.scaled_sum, a.init);
    const int64_t per_group = w->kind == W_INT4 ? GROUP * PANEL / 2 : GROUP * PANEL;
    int64_t panel = -1, best = -1;
    float best_value = -INFINITY;
    for (int64_t i = 0; i < count; i++) {
        const int64_t col = cand[i];
        if (lr[col] + cand_bound[i] < lo) continue;
        if (col / PANEL != panel) {
            panel = col / PANEL;
            weight_view wv = {{w->vnni + panel * ng * per_group, NULL}, NULL, per_group, NULL, 0};
            tile_dispatch(1, 1, w, &wv, panel, &a, 0, vals - panel * PANEL, 0, 0); /* ldo 0: vals[0..16) */
        }
        const float v = vals[col % PANEL];
        if (v > best_value) best_value = v, best = col; /* strictly larger: the first index of a tie */
    }
    return best_value > -INFINITY ? best : -1;
}

void vnni_bounded_argmax(const packed_linear *w, const float *x, int64_t m, int64_t ldx, const float *cheap,
                         int64_t ldc, const float *col_bound, const float *group_bound, float window, int64_t *out) {
    const int64_t ng = w->k / GROUP, max_cand = 4096;
#pragma omp parallel if (m > 1)
    {
        float *half_step = malloc(sizeof(float) * (size_t)ng), *cand_bound = malloc(sizeof(float) * (size_t)max_cand);
        int64_t *cand = malloc(sizeof(int64_t) * (size_t)max_cand);
#pragma omp for schedule(dynamic, 1)
        for (int64_t r = 0; r < m; r++)
            out[r] = bounded_argmax_row(w, x + r * ldx, cheap + r * ldc, col_bound, group_bound, window, half_step,
                                        cand, cand_bound, max_cand);
        free(half_step), free(cand_bound), free(cand);
    }
}

#else

void linear_vnni(const packed_linear *w, const float *x, int64_t m, int64_t ldx, float *out, int64_t ldo,
                 int accumulate) {
    (void)w, (void)x, (void)m, (void)ldx, (void)out, (void)ldo, (void)accumulate; /* never called: vnni_supported() is 0 */
}

void vnni_bounded_argmax(const packed_linear *w, const float *x, int64_t m, int64_t ldx, const float *cheap,
                         int64_t ldc, const float *col_bound, const float *group_bound, float window, int64_t *out) {
    (void)w, (void)x, (void)ldx, (void)cheap, (void)ldc, (void)col_bound, (void)group_bound, (void)window;
    for (int64_t r = 0; r < m; r++) out[r] = -1; /* never called: vnni_supported() is 0 */
}

#endif
