/* Row-wise kernels of a decoder layer: RMSNorm, rotary embedding, SiLU gate. Rows are
 * independent, so each runs its rows in parallel when there are enough of them. */
#include <math.h>

#include "common.h"
#include "ops.h"
#include "vec.h"

#define PAR_MIN 16384 /* elements below which a row loop stays on one thread */

static void norm_row(const float *x, const float *weight, float eps, int64_t h, float *out) {
    double ss = 0.0; /* summed in double: the reference sums float32 pairwise, closer than a float loop */
    for (int64_t i = 0; i < h; i++) ss += (double)x[i] * x[i];
    const float inv = 1.0f / sqrtf((float)(ss / h) + eps);
    for (int64_t i = 0; i < h; i++) out[i] = x[i] * inv * weight[i];
}

void rms_norm(const float *x, int64_t ldx, const float *weight, float eps, int64_t rows, int64_t h, float *out,
              int64_t ldo) {
#pragma omp parallel for schedule(static) if (rows * h >= PAR_MIN)
    for (int64_t r = 0; r < rows; r++) norm_row(x + r * ldx, weight, eps, h, out + r * ldo);
}

/* In place on x [rows, heads, head_dim] (row stride ldx): rotate-half rotary embedding with
 * cos/sin tables [max_positions, head_dim]. */
void rotary(float *x, int64_t ldx, int64_t rows, int64_t heads, int64_t head_dim, const int64_t *positions,
            const float *cos_t, const float *sin_t) {
    const int64_t half = head_dim / 2;
#pragma omp parallel for schedule(static) if (rows * heads * head_dim >= PAR_MIN)
    for (int64_t r = 0; r < rows; r++) {
        const float *c = cos_t + positions[r] * head_dim, *s = sin_t + positions[r] * head_dim;
        for (int64_t h = 0; h < heads; h++) {
            float *v = x + r * ldx + h * head_dim;
            for (int64_t i = 0; i < half; i++) {
                const float a = v[i], b = v[i + half];
                v[i] = a * c[i] - b * s[i];
                v[i + half] = b * c[i + half] + a * s[i + half];
            }
        }
    }
}

/* Per-head RMSNorm in place on x [rows, heads, head_dim] (Qwen3's q/k norm). */
void head_norm(float *x, int64_t ldx, int64_t rows, int64_t heads, int64_t head_dim, const float *weight, float eps) {
#pragma omp parallel for schedule(static) if (rows * heads * head_dim >= PAR_MIN)
    for (int64_t r = 0; r < rows; r++)
        for (int64_t h = 0; h < heads; h++) {
            float *v = x + r * ldx + h * head_dim;
            norm_row(v, weight, eps, head_dim, v);
        }
}

/* out[r, i] = silu(gu[r, i]) * gu[r, inter + i] */
void silu_mul(const float *gu, int64_t rows, int64_t inter, float *out) {
#pragma omp parallel for schedule(static) if (rows * inter >= PAR_MIN)
    for (int64_t r = 0; r < rows; r++) {
        const float *g = gu + r * 2 * inter, *u = g + inter;
        float *o = out + r * inter;
        int64_t i = 0;
#ifdef HAVE_AVX2
        const __m256 one = _mm256_set1_ps(1.f), zero = _mm256_setzero_ps();
        for (; i + 8 <= inter; i += 8) {
            __m256 vg = _mm256_loadu_ps(g + i);
            __m256 sig = _mm256_div_ps(vg, _mm256_add_ps(one, exp_ps(_mm256_sub_ps(zero, vg))));
            _mm256_storeu_ps(o + i, _mm256_mul_ps(sig, _mm256_loadu_ps(u + i)));
        }
#endif
        for (; i < inter; i++) o[i] = g[i] / (1.f + expf(-g[i])) * u[i];
    }
}

/* out[r] = the first index of the largest of x[r, :n] (rows ld floats apart), as torch.argmax. */
void argmax_rows(const float *x, int64_t rows, int64_t n, int64_t ld, int64_t *out) {
#pragma omp parallel for schedule(static) if (rows * n >= 4 * PAR_MIN)
    for (int64_t r = 0; r < rows; r++) {
        const float *v = x + r * ld;
        int64_t i = 0, best = 0;
        float top = v[0];
#ifdef HAVE_AVX2
        if (n >= 8) { /* the largest value first, then its first position; NaNs go the scalar way */
            __m256 m = _mm256_loadu_ps(v), nan = _mm256_cmp_ps(m, m, _CMP_UNORD_Q);
            for (i = 8; i + 8 <= n; i += 8) {
                __m256 x = _mm256_loadu_ps(v + i);
                nan = _mm256_or_ps(nan, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
                m = _mm256_max_ps(m, x);
            }
            int has_nan = _mm256_movemask_ps(nan) != 0;
            for (int64_t t = i; t < n; t++) has_nan |= v[t] != v[t];
            if (!has_nan) {
                float lanes[8];
                _mm256_storeu_ps(lanes, m);
                top = lanes[0];
                for (int l = 1; l < 8; l++) top = lanes[l] > top ? lanes[l] : top;
                for (; i < n; i++) top = v[i] > top ? v[i] : top;
                for (best = 0; v[best] != top; best++) {}
                out[r] = best;
                continue;
            }
            top = v[0];
        }
#endif
        for (i = 1; i < n; i++)
            if (v[i] > top || (v[i] != v[i] && top == top)) { top = v[i]; best = i; } /* NaN wins, as in torch */
        out[r] = best;
    }
}

/* x[r, t] = -inf where bit t % 32 of word t / 32 of row r of the packed mask is clear, for t < n
   (rows of x ld floats apart, of the mask `words` int32 apart; a token past the last word is
   disallowed): the grammar's bitmask applied in place, without unpacking it. */
void apply_bitmask_rows(float *x, int64_t rows, int64_t n, int64_t ld, const int32_t *mask, int64_t words) {
    const float neg_inf = -INFINITY;
    for (int64_t r = 0; r < rows; r++) {
        float *v = x + r * ld;
        const uint32_t *m = (const uint32_t *)(mask + r * words);
        for (int64_t w = 0; w * 32 < n; w++) {
            uint32_t bits = w < words ? m[w] : 0u;
            if (bits == 0xFFFFFFFFu) continue; /* the common case: every token of the word allowed */
            int64_t end = (w + 1) * 32 < n ? (w + 1) * 32 : n;
            for (int64_t t = w * 32; t < end; t++)
                if (!((bits >> (t - w * 32)) & 1u)) v[t] = neg_inf;
        }
    }
}
