/* Packed linear layers: out[M, N] = x[M, K] @ W^T (+ bias) for float, int8 and int4 weights.
 *
 * Weights are packed in panels of PANEL output columns (common.h). With AVX2, quantized
 * weights are read straight from the packed bytes: up to DIRECT_ROWS rows (decode steps) in
 * registers, one pass, each weight dequantized once for all rows; more rows (verify steps,
 * batches, prefill) one group at a time: the group's GROUP x PANEL weights dequantized once
 * into an L1 buffer, then register-blocked tiles of TILE_ROWS rows run over it with their
 * accumulators kept between groups. Float weights (and builds without AVX2) go through a
 * float panel and the tile kernel over rows packed in tiles. Every path does the same
 * arithmetic per row (each weight dequantized exactly, one FMA chain per output in k order),
 * so a request's result does not depend on its batch.
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

#define DIRECT_ROWS 4 /* up to this many rows, all in registers (2 * DIRECT_ROWS accumulators + 7); above, groups */
#define TILE_ROWS 6   /* rows per register-blocked tile (2 * TILE_ROWS accumulators + 3 registers) */
#define ROW_BLOCK (10 * TILE_ROWS) /* rows per work item (whole row tiles): their activations stay in L2 */
_Static_assert(DIRECT_ROWS <= ROW_BLOCK, "a direct call takes all of its rows in one row block");

#ifdef HAVE_AVX2

/* The scales (and int4 minimums) of one group of panel p, and where its bytes start. */
typedef struct {
    __m256 d0, d1, m0, m1;
    const uint8_t *q;
} group_view;

static inline __attribute__((always_inline)) group_view view_group(const packed_linear *w, int64_t p, int64_t g) {
    const int64_t k = w->k, at = (p * (k / GROUP) + g) * PANEL;
    group_view v;
    v.d0 = load_half8(w->scales + at), v.d1 = load_half8(w->scales + at + 8);
    if (w->kind == W_INT4) {
        v.m0 = load_half8(w->mins + at), v.m1 = load_half8(w->mins + at + 8);
        v.q = (const uint8_t *)w->data + p * (k / 2) * PANEL + g * (GROUP / 2) * PANEL;
    } else {
        v.m0 = v.m1 = _mm256_setzero_ps();
        v.q = (const uint8_t *)w->data + p * k * PANEL + g * GROUP * PANEL;
    }
    return v;
}

/* Step j of a group for R rows (xj: the rows' inputs at the step's first k): int4 steps cover
 * two k (the low nibbles', then the high nibbles': only two weight vectors live at a time),
 * int8 steps one. Every weight is dequantized exactly as dequant_panel does and added to its
 * output's chain in k order, as tile_rows does. */
static inline __attribute__((always_inline)) void
direct_step(int kind, const group_view *v, int j, const float *xj, int64_t ldx, const int R, __m256 acc[][2]) {
    if (kind == W_INT4) {
        const __m128i low = _mm_set1_epi8(0x0F);
        const __m128i b = _mm_loadu_si128((const __m128i *)(v->q + j * PANEL));
        for (int half = 0; half < 2; half++) {
            const __m128i q = half ? _mm_and_si128(_mm_srli_epi16(b, 4), low) : _mm_and_si128(b, low);
            const __m256 w0 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(q)), v->d0, v->m0);
            const __m256 w1 = _mm256_fmadd_ps(
                _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_unpackhi_epi64(q, q))), v->d1, v->m1);
            for (int r = 0; r < R; r++) {
                const __m256 xa = _mm256_broadcast_ss(xj + r * ldx + half);
                acc[r][0] = _mm256_fmadd_ps(xa, w0, acc[r][0]);
                acc[r][1] = _mm256_fmadd_ps(xa, w1, acc[r][1]);
            }
        }
    } else {
        const __m128i b = _mm_loadu_si128((const __m128i *)(v->q + j * PANEL));
        const __m256 w0 = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(b)), v->d0);
        const __m256 w1 = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_unpackhi_epi64(b, b))), v->d1);
        for (int r = 0; r < R; r++) {
            const __m256 xa = _mm256_broadcast_ss(xj + r * ldx);
            acc[r][0] = _mm256_fmadd_ps(xa, w0, acc[r][0]);
            acc[r][1] = _mm256_fmadd_ps(xa, w1, acc[r][1]);
        }
    }
}

/* Few rows of a quantized panel, straight from the packed bytes: R (1 to DIRECT_ROWS) rows,
 * each weight dequantized once for all of them, one chain per output in k order. */
static inline __attribute__((always_inline)) void
direct_rows(const packed_linear *w, int64_t p, const float *x, int64_t ldx, const int R,
            float out[DIRECT_ROWS][PANEL]) {
    const int kind = w->kind, steps = kind == W_INT4 ? GROUP / 2 : GROUP, kstep = kind == W_INT4 ? 2 : 1;
    __m256 acc[DIRECT_ROWS][2];
    for (int r = 0; r < R; r++) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
    for (int64_t g = 0; g < w->k / GROUP; g++) {
        const group_view v = view_group(w, p, g);
        for (int j = 0; j < steps; j++) direct_step(kind, &v, j, x + g * GROUP + kstep * j, ldx, R, acc);
    }
    for (int r = 0; r < R; r++) {
        _mm256_storeu_ps(out[r], acc[r][0]);
        _mm256_storeu_ps(out[r] + 8, acc[r][1]);
    }
}

/* buf[j][PANEL] = the float weights of group g of panel p (GROUP x PANEL floats, 2 KB: L1),
 * each dequantized as direct_step does. */
static void dequant_group(const packed_linear *w, int64_t p, int64_t g, float *buf) {
    const group_view v = view_group(w, p, g);
    if (w->kind == W_INT4) {
        const __m128i low = _mm_set1_epi8(0x0F);
        for (int j = 0; j < GROUP / 2; j++) {
            const __m128i b = _mm_loadu_si128((const __m128i *)(v.q + j * PANEL));
            for (int half = 0; half < 2; half++) {
                const __m128i q = half ? _mm_and_si128(_mm_srli_epi16(b, 4), low) : _mm_and_si128(b, low);
                float *o = buf + (2 * j + half) * PANEL;
                _mm256_storeu_ps(o, _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(q)), v.d0, v.m0));
                _mm256_storeu_ps(o + 8, _mm256_fmadd_ps(
                    _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_unpackhi_epi64(q, q))), v.d1, v.m1));
            }
        }
    } else {
        for (int j = 0; j < GROUP; j++) {
            const __m128i b = _mm_loadu_si128((const __m128i *)(v.q + j * PANEL));
            _mm256_storeu_ps(buf + j * PANEL, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(b)), v.d0));
            _mm256_storeu_ps(buf + j * PANEL + 8,
                             _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_unpackhi_epi64(b, b))), v.d1));
        }
    }
}

/* R (<= TILE_ROWS) rows over one dequantized group: acc[r] (kept between groups) += x_r . w. */
static inline __attribute__((always_inline)) void
group_tile(const float *buf, const float *x, int64_t ldx, const int R, float (*acc)[PANEL]) {
    __m256 a[TILE_ROWS][2];
    for (int r = 0; r < R; r++) a[r][0] = _mm256_loadu_ps(acc[r]), a[r][1] = _mm256_loadu_ps(acc[r] + 8);
    for (int j = 0; j < GROUP; j++) {
        const __m256 w0 = _mm256_loadu_ps(buf + j * PANEL), w1 = _mm256_loadu_ps(buf + j * PANEL + 8);
        for (int r = 0; r < R; r++) {
            const __m256 xa = _mm256_broadcast_ss(x + r * ldx + j);
            a[r][0] = _mm256_fmadd_ps(xa, w0, a[r][0]);
            a[r][1] = _mm256_fmadd_ps(xa, w1, a[r][1]);
        }
    }
    for (int r = 0; r < R; r++) _mm256_storeu_ps(acc[r], a[r][0]), _mm256_storeu_ps(acc[r] + 8, a[r][1]);
}

static void group_block(const float *buf, const float *x, int64_t ldx, int R, float (*acc)[PANEL]) {
    switch (R) {
    case 6: group_tile(buf, x, ldx, 6, acc); break;
    case 5: group_tile(buf, x, ldx, 5, acc); break;
    case 4: group_tile(buf, x, ldx, 4, acc); break;
    case 3: group_tile(buf, x, ldx, 3, acc); break;
    case 2: group_tile(buf, x, ldx, 2, acc); break;
    default: group_tile(buf, x, ldx, 1, acc); break;
    }
}

/* rows (<= ROW_BLOCK) rows of panel p, one group at a time: the group dequantized once into
 * L1, then every tile of rows over it. */
static void group_rows(const packed_linear *w, int64_t p, const float *x, int64_t ldx, int rows,
                       float out[ROW_BLOCK][PANEL]) {
    float buf[GROUP * PANEL] __attribute__((aligned(32)));
    memset(out, 0, sizeof(float) * PANEL * (size_t)rows);
    for (int64_t g = 0; g < w->k / GROUP; g++) {
        dequant_group(w, p, g, buf);
        for (int r0 = 0; r0 < rows; r0 += TILE_ROWS)
            group_block(buf, x + r0 * ldx + g * GROUP, ldx, rows - r0 < TILE_ROWS ? rows - r0 : TILE_ROWS, out + r0);
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

static void direct_block(const packed_linear *w, int64_t p, const float *x, int64_t ldx, int R,
                         float out[DIRECT_ROWS][PANEL]) {
    switch (R) {
    case 4: direct_rows(w, p, x, ldx, 4, out); break;
    case 3: direct_rows(w, p, x, ldx, 3, out); break;
    case 2: direct_rows(w, p, x, ldx, 2, out); break;
    default: direct_rows(w, p, x, ldx, 1, out); break;
    }
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

#else /* portable C: the tile path only, left to the compiler to vectorize */

static void tile_block(const float *buf, int64_t k, const float *xp, int R, float out[TILE_ROWS][PANEL]) {
    for (int r = 0; r < R; r++)
        for (int c = 0; c < PANEL; c++) out[r][c] = 0.f;
    for (int64_t i = 0; i < k; i++)
        for (int r = 0; r < R; r++)
            for (int c = 0; c < PANEL; c++) out[r][c] += xp[i * TILE_ROWS + r] * buf[i * PANEL + c];
}
#endif

/* buf[k][PANEL] = the float values of panel p (scaled, minimum added): the tile path of
 * builds without AVX2 (with it, quantized weights take the direct and group paths). */
static void dequant_panel(const packed_linear *w, int64_t p, float *buf) {
    const int64_t k = w->k, ng = k / GROUP;
    const uint16_t *sc = w->scales + p * ng * PANEL, *mn = w->kind == W_INT4 ? w->mins + p * ng * PANEL : NULL;
    for (int64_t g = 0; g < ng; g++) {
        float *o = buf + g * GROUP * PANEL;
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

/* Rows [0, rows) of panel p: quantized weights with AVX2 straight from the packed bytes (few
 * rows in registers, more a group at a time); else through a float panel (the weights, or
 * dequantized into `buf`, k * PANEL floats) and the register-blocked tile kernel over `xp`,
 * the rows packed in tiles of TILE_ROWS ([rows / TILE_ROWS][k][TILE_ROWS]). */
static void panel_block(const packed_linear *w, int64_t p, const float *x, int64_t ldx, const float *xp,
                        int64_t rows, float *out, int64_t ldo, float *buf, int accumulate) {
#ifdef HAVE_AVX2
    if (xp == NULL) {
        float tile[ROW_BLOCK][PANEL];
        if (rows <= DIRECT_ROWS) direct_block(w, p, x, ldx, (int)rows, tile);
        else group_rows(w, p, x, ldx, (int)rows, tile);
        store_rows(w, p, tile, (int)rows, out, ldo, accumulate);
        return;
    }
#endif
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
                   int accumulate) {
    if (w->vnni) {
        linear_vnni(w, x, m, ldx, out, ldo, accumulate);
        return;
    }
    const int64_t np = (w->n + PANEL - 1) / PANEL;
    const int64_t nrb = (m + ROW_BLOCK - 1) / ROW_BLOCK, ntiles = nrb * np;
#ifdef HAVE_AVX2
    const int direct = w->kind != W_F32; /* else tiles: x packed, panels dequantized */
#else
    const int direct = 0;
#endif
    float *xp = NULL;
    if (!direct) xp = (float *)malloc(sizeof(float) * (size_t)((m + TILE_ROWS - 1) / TILE_ROWS * TILE_ROWS) * w->k);
#pragma omp parallel if (ntiles > 1 || m > ROW_BLOCK)
    {
        float *buf = !direct && w->kind != W_F32 ? (float *)malloc((size_t)w->k * PANEL * sizeof(float)) : NULL;
        if (!direct) pack_rows(x, ldx, m, w->k, xp); /* ends in a barrier */
        /* row-block-major, each row block's panels split evenly between the threads: they
         * share one block's activations (L2) at a time, each streams contiguous panels, and a
         * short last block does not fall to one thread alone */
#ifdef _OPENMP
        const int64_t chunk = (np + omp_get_num_threads() - 1) / omp_get_num_threads();
#else
        const int64_t chunk = np;
#endif
#pragma omp for schedule(static, chunk)
        for (int64_t t = 0; t < ntiles; t++) {
            const int64_t rb = t / np, p = t % np;
            const int64_t r0 = rb * ROW_BLOCK, rows = m - r0 < ROW_BLOCK ? m - r0 : ROW_BLOCK;
            panel_block(w, p, x + r0 * ldx, ldx, xp ? xp + r0 * w->k : NULL, rows, out + r0 * ldo, ldo, buf,
                        accumulate);
        }
        free(buf);
    }
    free(xp);
}
