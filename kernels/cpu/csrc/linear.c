/* Packed linear layers: out[M, N] = x[M, K] @ W^T (+ bias) for float, int8 and int4 weights.
 *
 * Weights are packed in panels of PANEL output columns (common.h). Up to SMALL_ROWS rows
 * (decode steps: reading the weights is the cost) are computed straight from the packed
 * bytes: a quantized group is accumulated unscaled and scaled once (an int4 group's minimum
 * is added as min * sum(x over the group)), so the inner loop is convert + FMA. More rows
 * (prefill: arithmetic is the cost) dequantize a panel once per row block into a float
 * buffer and run a register-blocked TILE_ROWS x PANEL FMA kernel over it.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "ops.h"
#include "vec.h"

#define SMALL_ROWS 4  /* up to this many rows, kernels read the packed bytes directly */
#define TILE_ROWS 6   /* rows per register-blocked tile on a dequantized panel */
#define ROW_BLOCK (10 * TILE_ROWS) /* rows per tile (whole row tiles): their activations stay in L2 */

/* Sums of x over each group: [rows][K / GROUP], for the int4 minimum term. */
static void group_sums(const float *x, int64_t ldx, int rows, int64_t k, float *sums) {
    int64_t ng = k / GROUP;
    for (int r = 0; r < rows; r++)
        for (int64_t g = 0; g < ng; g++) {
            float s = 0.f;
            for (int i = 0; i < GROUP; i++) s += x[r * ldx + g * GROUP + i];
            sums[r * ng + g] = s;
        }
}

#ifdef HAVE_AVX2

/* Few rows of a quantized panel, straight from the packed bytes: R (1 or 2) rows. A group is
 * accumulated unscaled in two chains (even and odd k) and scaled once. */
static inline __attribute__((always_inline)) void
direct_rows(const packed_linear *w, int64_t p, const float *x, int64_t ldx, const int R, const float *gsum,
            float out[SMALL_ROWS][PANEL]) {
    const __m128i low = _mm_set1_epi8(0x0F);
    const int64_t k = w->k, ng = k / GROUP;
    __m256 tot[SMALL_ROWS][2];
    for (int r = 0; r < R; r++) tot[r][0] = tot[r][1] = _mm256_setzero_ps();
    {
        const uint16_t *sc = w->scales + p * ng * PANEL;
        const uint16_t *mn = w->kind == W_INT4 ? w->mins + p * ng * PANEL : NULL;
        for (int64_t g = 0; g < ng; g++) {
            __m256 ga[SMALL_ROWS][2], gb[SMALL_ROWS][2];
            for (int r = 0; r < R; r++) ga[r][0] = ga[r][1] = gb[r][0] = gb[r][1] = _mm256_setzero_ps();
            const float *xg = x + g * GROUP;
#pragma GCC unroll 2
            for (int j = 0; j < GROUP; j += 2) {
                __m256 w0, w1, w2, w3;
                if (w->kind == W_INT4) {
                    __m128i v = _mm_loadu_si128((const __m128i *)((const uint8_t *)w->data + p * (k / 2) * PANEL +
                                                                  (g * GROUP / 2 + j / 2) * PANEL));
                    __m128i lo = _mm_and_si128(v, low), hi = _mm_and_si128(_mm_srli_epi16(v, 4), low);
                    w0 = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(lo));
                    w1 = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_unpackhi_epi64(lo, lo)));
                    w2 = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(hi));
                    w3 = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_unpackhi_epi64(hi, hi)));
                } else {
                    const int8_t *q = (const int8_t *)w->data + p * k * PANEL + (g * GROUP + j) * PANEL;
                    __m128i va = _mm_loadu_si128((const __m128i *)q), vb = _mm_loadu_si128((const __m128i *)(q + PANEL));
                    w0 = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(va));
                    w1 = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_unpackhi_epi64(va, va)));
                    w2 = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(vb));
                    w3 = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_unpackhi_epi64(vb, vb)));
                }
                for (int r = 0; r < R; r++) {
                    __m256 xa = _mm256_broadcast_ss(xg + r * ldx + j), xb = _mm256_broadcast_ss(xg + r * ldx + j + 1);
                    ga[r][0] = _mm256_fmadd_ps(xa, w0, ga[r][0]);
                    ga[r][1] = _mm256_fmadd_ps(xa, w1, ga[r][1]);
                    gb[r][0] = _mm256_fmadd_ps(xb, w2, gb[r][0]);
                    gb[r][1] = _mm256_fmadd_ps(xb, w3, gb[r][1]);
                }
            }
            const __m256 d0 = load_half8(sc + g * PANEL), d1 = load_half8(sc + g * PANEL + 8);
            for (int r = 0; r < R; r++) {
                tot[r][0] = _mm256_fmadd_ps(_mm256_add_ps(ga[r][0], gb[r][0]), d0, tot[r][0]);
                tot[r][1] = _mm256_fmadd_ps(_mm256_add_ps(ga[r][1], gb[r][1]), d1, tot[r][1]);
            }
            if (mn) {
                const __m256 m0 = load_half8(mn + g * PANEL), m1 = load_half8(mn + g * PANEL + 8);
                for (int r = 0; r < R; r++) {
                    __m256 s = _mm256_set1_ps(gsum[r * ng + g]);
                    tot[r][0] = _mm256_fmadd_ps(s, m0, tot[r][0]);
                    tot[r][1] = _mm256_fmadd_ps(s, m1, tot[r][1]);
                }
            }
        }
    }
    for (int r = 0; r < R; r++) {
        _mm256_storeu_ps(out[r], tot[r][0]);
        _mm256_storeu_ps(out[r] + 8, tot[r][1]);
    }
}

/* Many rows: a float panel buf[k][PANEL] times a packed tile of R (<= TILE_ROWS) rows,
 * xp[k][TILE_ROWS] (one contiguous stream of broadcasts), 2 * R accumulators. */
static inline __attribute__((always_inline)) void
tile_rows(const float *buf, int64_t k, const float *xp, const int R, float out[TILE_ROWS][PANEL]) {
    __m256 acc[TILE_ROWS][2];
    for (int r = 0; r < R; r++) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
    for (int64_t i = 0; i < k; i++) {
        __m256 w0 = _mm256_loadu_ps(buf + i * PANEL), w1 = _mm256_loadu_ps(buf + i * PANEL + 8);
        for (int r = 0; r < R; r++) {
            __m256 xa = _mm256_broadcast_ss(xp + i * TILE_ROWS + r);
            acc[r][0] = _mm256_fmadd_ps(xa, w0, acc[r][0]);
            acc[r][1] = _mm256_fmadd_ps(xa, w1, acc[r][1]);
        }
    }
    for (int r = 0; r < R; r++) {
        _mm256_storeu_ps(out[r], acc[r][0]);
        _mm256_storeu_ps(out[r] + 8, acc[r][1]);
    }
}

static void direct_block(const packed_linear *w, int64_t p, const float *x, int64_t ldx, int R, const float *gsum,
                         float out[SMALL_ROWS][PANEL]) {
    if (R == 2) direct_rows(w, p, x, ldx, 2, gsum, out);
    else direct_rows(w, p, x, ldx, 1, gsum, out);
}

static void tile_block(const float *buf, int64_t k, const float *xp, int R, float out[TILE_ROWS][PANEL]) {
    switch (R) {
    case 6: tile_rows(buf, k, xp, 6, out); break;
    case 5: tile_rows(buf, k, xp, 5, out); break;
    case 4: tile_rows(buf, k, xp, 4, out); break;
    case 3: tile_rows(buf, k, xp, 3, out); break;
    case 2: tile_rows(buf, k, xp, 2, out); break;
    default: tile_rows(buf, k, xp, 1, out); break;
    }
}

#else /* portable C: the same blocking, left to the compiler to vectorize */

static void direct_block(const packed_linear *w, int64_t p, const float *x, int64_t ldx, int R, const float *gsum,
                         float out[SMALL_ROWS][PANEL]) {
    const int64_t k = w->k, ng = k / GROUP;
    for (int r = 0; r < R; r++)
        for (int c = 0; c < PANEL; c++) out[r][c] = 0.f;
    const uint16_t *sc = w->scales + p * ng * PANEL, *mn = w->kind == W_INT4 ? w->mins + p * ng * PANEL : NULL;
    for (int64_t g = 0; g < ng; g++) {
        float acc[SMALL_ROWS][PANEL] = {{0}};
        for (int j = 0; j < GROUP; j++) {
            float wq[PANEL];
            if (w->kind == W_INT8) {
                const int8_t *q = (const int8_t *)w->data + p * k * PANEL + (g * GROUP + j) * PANEL;
                for (int c = 0; c < PANEL; c++) wq[c] = q[c];
            } else {
                const uint8_t *q = (const uint8_t *)w->data + p * (k / 2) * PANEL + (g * GROUP / 2 + j / 2) * PANEL;
                for (int c = 0; c < PANEL; c++) wq[c] = (j & 1) ? (q[c] >> 4) : (q[c] & 15);
            }
            for (int r = 0; r < R; r++)
                for (int c = 0; c < PANEL; c++) acc[r][c] += x[r * ldx + g * GROUP + j] * wq[c];
        }
        for (int r = 0; r < R; r++)
            for (int c = 0; c < PANEL; c++) {
                out[r][c] += acc[r][c] * f16_to_f32(sc[g * PANEL + c]);
                if (mn) out[r][c] += gsum[r * ng + g] * f16_to_f32(mn[g * PANEL + c]);
            }
    }
}

static void tile_block(const float *buf, int64_t k, const float *xp, int R, float out[TILE_ROWS][PANEL]) {
    for (int r = 0; r < R; r++)
        for (int c = 0; c < PANEL; c++) out[r][c] = 0.f;
    for (int64_t i = 0; i < k; i++)
        for (int r = 0; r < R; r++)
            for (int c = 0; c < PANEL; c++) out[r][c] += xp[i * TILE_ROWS + r] * buf[i * PANEL + c];
}
#endif

/* buf[k][PANEL] = the float values of panel p (scaled, minimum added). */
static void dequant_panel(const packed_linear *w, int64_t p, float *buf) {
    const int64_t k = w->k, ng = k / GROUP;
    const uint16_t *sc = w->scales + p * ng * PANEL, *mn = w->kind == W_INT4 ? w->mins + p * ng * PANEL : NULL;
    for (int64_t g = 0; g < ng; g++) {
        float *o = buf + g * GROUP * PANEL;
#ifdef HAVE_AVX2
        const __m256 d0 = load_half8(sc + g * PANEL), d1 = load_half8(sc + g * PANEL + 8);
        if (w->kind == W_INT4) {
            const __m128i low = _mm_set1_epi8(0x0F);
            const __m256 m0 = load_half8(mn + g * PANEL), m1 = load_half8(mn + g * PANEL + 8);
            const uint8_t *q = (const uint8_t *)w->data + p * (k / 2) * PANEL + g * (GROUP / 2) * PANEL;
            for (int j = 0; j < GROUP / 2; j++, o += 2 * PANEL) {
                __m128i v = _mm_loadu_si128((const __m128i *)(q + j * PANEL));
                __m128i lo = _mm_and_si128(v, low), hi = _mm_and_si128(_mm_srli_epi16(v, 4), low);
                _mm256_storeu_ps(o, _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(lo)), d0, m0));
                _mm256_storeu_ps(o + 8, _mm256_fmadd_ps(
                    _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_unpackhi_epi64(lo, lo))), d1, m1));
                _mm256_storeu_ps(o + PANEL, _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(hi)), d0, m0));
                _mm256_storeu_ps(o + PANEL + 8, _mm256_fmadd_ps(
                    _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_unpackhi_epi64(hi, hi))), d1, m1));
            }
        } else {
            const int8_t *q = (const int8_t *)w->data + p * k * PANEL + g * GROUP * PANEL;
            for (int j = 0; j < GROUP; j++, o += PANEL) {
                __m128i v = _mm_loadu_si128((const __m128i *)(q + j * PANEL));
                _mm256_storeu_ps(o, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(v)), d0));
                _mm256_storeu_ps(o + 8, _mm256_mul_ps(
                    _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_unpackhi_epi64(v, v))), d1));
            }
        }
#else
        for (int j = 0; j < GROUP; j++, o += PANEL) {
            if (w->kind == W_INT8) {
                const int8_t *q = (const int8_t *)w->data + p * k * PANEL + (g * GROUP + j) * PANEL;
                for (int c = 0; c < PANEL; c++) o[c] = q[c] * f16_to_f32(sc[g * PANEL + c]);
            } else {
                const uint8_t *q = (const uint8_t *)w->data + p * (k / 2) * PANEL + (g * GROUP / 2 + j / 2) * PANEL;
                for (int c = 0; c < PANEL; c++)
                    o[c] = ((j & 1) ? (q[c] >> 4) : (q[c] & 15)) * f16_to_f32(sc[g * PANEL + c]) +
                           f16_to_f32(mn[g * PANEL + c]);
            }
        }
#endif
    }
}

static void store_rows(const packed_linear *w, int64_t p, float (*tile)[PANEL], int R, float *out, int64_t ldo,
                       int accumulate) {
    const int64_t col0 = p * PANEL;
    const int ncols = (int)(w->n - col0 < PANEL ? w->n - col0 : PANEL);
    for (int r = 0; r < R; r++) {
        float *o = out + r * ldo + col0;
        for (int c = 0; c < ncols; c++) {
            const float v = tile[r][c] + (w->bias ? w->bias[col0 + c] : 0.f);
            o[c] = accumulate ? o[c] + v : v;
        }
    }
}

/* Rows [0, rows) of panel p: straight from the packed bytes for few rows, else through a
 * dequantized float panel in `buf` (k * PANEL floats) and the register-blocked tile kernel
 * over `xp`, the rows packed in tiles of TILE_ROWS ([rows / TILE_ROWS][k][TILE_ROWS]). */
static void panel_block(const packed_linear *w, int64_t p, const float *x, int64_t ldx, const float *xp,
                        int64_t rows, const float *gsum, float *out, int64_t ldo, float *buf, int accumulate) {
    const int64_t ng = w->k / GROUP;
    if (xp == NULL) { /* direct */
        float tile[SMALL_ROWS][PANEL];
        for (int64_t r0 = 0; r0 < rows; r0 += 2) { /* pairs of rows share each load */
            const int R = (int)(rows - r0 < 2 ? rows - r0 : 2);
            direct_block(w, p, x + r0 * ldx, ldx, R, gsum ? gsum + r0 * ng : NULL, tile);
            store_rows(w, p, tile, R, out + r0 * ldo, ldo, accumulate);
        }
        return;
    }
    const float *panel = (const float *)w->data + p * w->k * PANEL;
    if (w->kind != W_F32) {
        dequant_panel(w, p, buf);
        panel = buf;
    }
    float tile[TILE_ROWS][PANEL];
    for (int64_t r0 = 0; r0 < rows; r0 += TILE_ROWS) {
        const int R = (int)(rows - r0 < TILE_ROWS ? rows - r0 : TILE_ROWS);
        tile_block(panel, w->k, xp + r0 * w->k, R, tile);
        store_rows(w, p, tile, R, out + r0 * ldo, ldo, accumulate);
    }
}

/* xp[t][i][r] = x[t * TILE_ROWS + r][i], zero past the last row. */
static void pack_rows(const float *x, int64_t ldx, int64_t m, int64_t k, float *xp) {
    const int64_t tiles = (m + TILE_ROWS - 1) / TILE_ROWS;
#pragma omp for schedule(static)
    for (int64_t t = 0; t < tiles; t++)
        for (int64_t i = 0; i < k; i++)
            for (int r = 0; r < TILE_ROWS; r++) {
                const int64_t row = t * TILE_ROWS + r;
                xp[(t * k + i) * TILE_ROWS + r] = row < m ? x[row * ldx + i] : 0.f;
            }
}

void linear_packed(const packed_linear *w, const float *x, int64_t m, int64_t ldx, float *out, int64_t ldo,
                   float *scratch, int accumulate) {
    const int64_t np = (w->n + PANEL - 1) / PANEL, ng = w->k / GROUP;
    const int64_t nrb = (m + ROW_BLOCK - 1) / ROW_BLOCK, ntiles = nrb * np;
    const int direct = m <= SMALL_ROWS && w->kind != W_F32; /* else tiles: x packed, panels dequantized */
    float *gsum = NULL, *xp = NULL;
    if (direct && w->kind == W_INT4) { /* scratch holds m * (k / GROUP) floats */
        gsum = scratch;
        group_sums(x, ldx, (int)m, w->k, gsum);
    }
    if (!direct) xp = (float *)malloc(sizeof(float) * (size_t)((m + TILE_ROWS - 1) / TILE_ROWS * TILE_ROWS) * w->k);
#pragma omp parallel if (ntiles > 1 || m > ROW_BLOCK)
    {
        float *buf = !direct && w->kind != W_F32 ? (float *)malloc((size_t)w->k * PANEL * sizeof(float)) : NULL;
        if (!direct) pack_rows(x, ldx, m, w->k, xp); /* ends in a barrier */
#pragma omp for schedule(static)
        for (int64_t t = 0; t < ntiles; t++) {
            const int64_t rb = t / np, p = t % np;
            const int64_t r0 = rb * ROW_BLOCK, rows = m - r0 < ROW_BLOCK ? m - r0 : ROW_BLOCK;
            panel_block(w, p, x + r0 * ldx, ldx, xp ? xp + r0 * w->k : NULL, rows, gsum ? gsum + r0 * ng : NULL,
                        out + r0 * ldo, ldo, buf, accumulate);
        }
        free(buf);
    }
    free(xp);
}
