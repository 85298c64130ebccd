/* Paged attention on AVX-512: attention.c's work item with sixteen keys a score vector and the
 * values accumulated for a block of query rows at a time.
 *
 * Per chunk of CHUNK keys (converted once into kbuf, as on AVX2) each query row gets its
 * scores sixteen keys a vector; then the rows of a register block (up to 4 rows when
 * head_dim <= 64, else 2) take their online-softmax update and their P.V sums together, so
 * one load of a value vector serves every row of the block. When the whole tile is one block
 * (a decode step's GQA group), keys and values are read straight from the cache and converted
 * in registers: no chunk buffer to write and read back (decode attention 1.07-1.11x faster on
 * the 2-vCPU Zen 5, the same results bit for bit).
 * A key's score and a row's sums take the same vector path wherever the key sits in its chunk
 * and whichever block the row is in, so a token's result does not depend on its batch.
 */
#include <math.h>
#include <string.h>

#include "attention.h"
#include "vec.h"

#ifdef HAVE_AVX512

/* Sixteen elements of a key or value row as floats: element kind KV_* (the float buffer is KV_F32). */
static inline __attribute__((always_inline)) __m512 load16(const void *base, int64_t off, const int kind) {
    if (kind == KV_BF16) {
        const __m256i h = _mm256_loadu_si256((const __m256i *)((const uint16_t *)base + off));
        return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    }
    if (kind == KV_F16) return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)((const uint16_t *)base + off)));
    return _mm512_loadu_ps((const float *)base + off);
}

/* The sixteen scores q . k_t * scale of the keys in rows krows[0..15] of kbase (row j's
 * elements at krows[j] * D, of kind KV_*: the chunk's float buffer, or the cache itself in a
 * decode step), lane t holding key t: one FMA chain per key over D, then a fixed tree (pairs
 * within 128-bit lanes, then across them) that every lane goes through alike, so a score does
 * not depend on its key's lane nor on where the key was read from. */
static inline __attribute__((always_inline)) __m512
scores16(const float *q, const void *kbase, const int64_t *krows, const int D, __m512 scale, const int kind,
         const int buffer) {
    __m512 a[16];
    for (int t = 0; t < 16; t++) a[t] = _mm512_setzero_ps();
    for (int i = 0; i < D; i += 16) {
        const __m512 qv = _mm512_loadu_ps(q + i);
        for (int t = 0; t < 16; t++) /* the chunk buffer holds its keys one after another */
            a[t] = _mm512_fmadd_ps(qv, load16(kbase, (buffer ? t : krows[t]) * D + i, kind), a[t]);
    }
    __m512 b[8], c[4], e[2];
    for (int t = 0; t < 8; t++) /* per 128-bit lane: x0+x2, y0+y2, x1+x3, y1+y3 of (x, y) = a[2t], a[2t+1] */
        b[t] = _mm512_add_ps(_mm512_unpacklo_ps(a[2 * t], a[2 * t + 1]), _mm512_unpackhi_ps(a[2 * t], a[2 * t + 1]));
    for (int t = 0; t < 4; t++) { /* per 128-bit lane: the lane's sums of a[4t], a[4t+1], a[4t+2], a[4t+3] */
        const __m512d x = _mm512_castps_pd(b[2 * t]), y = _mm512_castps_pd(b[2 * t + 1]);
        c[t] = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(x, y)), _mm512_castpd_ps(_mm512_unpackhi_pd(x, y)));
    }
    for (int t = 0; t < 2; t++) /* 128-bit lanes (0+1, 2+3) of c[2t], then of c[2t+1] */
        e[t] = _mm512_add_ps(_mm512_shuffle_f32x4(c[2 * t], c[2 * t + 1], 0x88),
                             _mm512_shuffle_f32x4(c[2 * t], c[2 * t + 1], 0xdd));
    const __m512 sum = _mm512_add_ps(_mm512_shuffle_f32x4(e[0], e[1], 0x88), _mm512_shuffle_f32x4(e[0], e[1], 0xdd));
    return _mm512_mul_ps(sum, scale);
}

/* Scores of the chunk's keys [0, 16) and [16, 32) for one query row, keys read through krows
 * (see scores16), or from the chunk's float buffer when krows is NULL; a half no visible key is
 * in (mask 0) is not computed. */
static inline __attribute__((always_inline)) void
row_scores_d(const float *q, const void *kbase, const int64_t *krows, __m512 scale, __mmask16 k0, __mmask16 k1,
             __m512 *s0, __m512 *s1, const int D, const int kind, const int buffer) {
    *s0 = k0 ? scores16(q, kbase, krows, D, scale, kind, buffer) : _mm512_setzero_ps();
    const void *kbase1 = buffer ? (const void *)((const float *)kbase + 16 * D) : kbase;
    *s1 = k1 ? scores16(q, kbase1, buffer ? NULL : krows + 16, D, scale, kind, buffer) : _mm512_setzero_ps();
}

#define ROW_SCORES(D, KIND, BUF) row_scores_d(q, kbase, krows, scale, k0, k1, s0, s1, D, KIND, BUF)
static void row_scores(const float *q, const void *kbase, const int64_t *krows, int64_t d, int kind, __m512 scale,
                       __mmask16 k0, __mmask16 k1, __m512 *s0, __m512 *s1) {
    if (!krows && d == 64) ROW_SCORES(64, KV_F32, 1); /* the chunk buffer; constants: loops unrolled */
    else if (!krows && d == 128) ROW_SCORES(128, KV_F32, 1);
    else if (!krows) ROW_SCORES((int)d, KV_F32, 1);
    else if (kind == KV_BF16 && d == 64) ROW_SCORES(64, KV_BF16, 0); /* the cache itself */
    else if (kind == KV_F32 && d == 64) ROW_SCORES(64, KV_F32, 0);
    else if (kind == KV_F16 && d == 64) ROW_SCORES(64, KV_F16, 0);
    else if (kind == KV_BF16 && d == 128) ROW_SCORES(128, KV_BF16, 0);
    else if (kind == KV_F32 && d == 128) ROW_SCORES(128, KV_F32, 0);
    else if (kind == KV_F16 && d == 128) ROW_SCORES(128, KV_F16, 0);
    else if (kind == KV_BF16) ROW_SCORES((int)d, KV_BF16, 0);
    else if (kind == KV_F16) ROW_SCORES((int)d, KV_F16, 0);
    else ROW_SCORES((int)d, KV_F32, 0);
}
#undef ROW_SCORES

/* The online-softmax update of rows [0, nb) of a register block over the chunk: s[i] a row's
 * scores of keys [0, 16) and [16, 32), k[i] its visible keys. p[i] = exp(s - m_new) on those
 * and 0 elsewhere; corr[i] = exp(m_old - m_new), one vector exp for the block (1 for a row that
 * sees no key, whose m and l stay); l = l * corr + sum(p). */
static inline void softmax_block(__m512 s[][2], __mmask16 k[][2], int nb, float *m, float *l, float *p, float *corr) {
    const __m512 ninf = _mm512_set1_ps(-INFINITY);
    float top[16], mx[16];
    __mmask16 seen = 0;
    for (int i = 0; i < nb; i++) {
        top[i] = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_mask_blend_ps(k[i][0], ninf, s[i][0]),
                                                    _mm512_mask_blend_ps(k[i][1], ninf, s[i][1])));
        seen |= (__mmask16)((k[i][0] | k[i][1]) ? 1u << i : 0u);
    }
    const __mmask16 rows = (__mmask16)((1u << nb) - 1);
    const __m512 m_old = _mm512_mask_loadu_ps(ninf, rows, m);
    const __m512 m_new = _mm512_max_ps(m_old, _mm512_mask_loadu_ps(ninf, seen, top));
    const __m512 c = exp512_ps(_mm512_sub_ps(m_old, m_new)); /* 0 on the first chunk (m_old = -inf) */
    _mm512_mask_storeu_ps(corr, rows, _mm512_mask_blend_ps(seen, _mm512_set1_ps(1.f), c));
    _mm512_mask_storeu_ps(m, seen, m_new);
    _mm512_storeu_ps(mx, m_new);
    for (int i = 0; i < nb; i++) {
        const __m512 vmx = _mm512_set1_ps(mx[i]);
        const __m512 p0 = _mm512_maskz_mov_ps(k[i][0], exp512_ps(_mm512_sub_ps(s[i][0], vmx)));
        const __m512 p1 = _mm512_maskz_mov_ps(k[i][1], exp512_ps(_mm512_sub_ps(s[i][1], vmx)));
        _mm512_storeu_ps(p + i * CHUNK, p0);
        _mm512_storeu_ps(p + i * CHUNK + 16, p1);
        if (seen >> i & 1) l[i] = l[i] * corr[i] + _mm512_reduce_add_ps(_mm512_add_ps(p0, p1));
    }
}

/* Columns [c, c + 16 NV) of R accumulator rows (d floats apart): acc = acc * corr + sum over
 * keys [jlo, jhi) of p[row][j] v_j, value row j at vrows[j] * d in vbase. Each value vector is
 * loaded once for all R rows; a row's FMA chain is the same whatever R (weights outside a
 * row's visible keys are 0, adding exactly nothing). */
static inline __attribute__((always_inline)) void
values_rows(float *acc, int64_t d, const float *corr, const float *p, const void *vbase, const int64_t *vrows,
            int64_t jlo, int64_t jhi, int64_t c, const int R, const int NV, const int kind) {
    __m512 o[RBLOCK][8];
    for (int r = 0; r < R; r++) {
        const __m512 cr = _mm512_set1_ps(corr[r]);
        for (int v = 0; v < NV; v++) o[r][v] = _mm512_mul_ps(_mm512_loadu_ps(acc + r * d + c + 16 * v), cr);
    }
    for (int64_t j = jlo; j < jhi; j++) {
        const int64_t off = vrows[j] * d + c;
        __m512 x[8];
        for (int v = 0; v < NV; v++) x[v] = load16(vbase, off + 16 * v, kind);
        for (int r = 0; r < R; r++) {
            const __m512 pr = _mm512_set1_ps(p[r * CHUNK + j]);
            for (int v = 0; v < NV; v++) o[r][v] = _mm512_fmadd_ps(pr, x[v], o[r][v]);
        }
    }
    for (int r = 0; r < R; r++)
        for (int v = 0; v < NV; v++) _mm512_storeu_ps(acc + r * d + c + 16 * v, o[r][v]);
}

/* values_rows over all d columns, in slices of 128, 64 or 16 columns with R and the slice's
 * vector count as constants (R <= 2 when d > 64, so o[][] stays within 16 registers). */
static inline __attribute__((always_inline)) void
values_kind(float *acc, int64_t d, const float *corr, const float *p, int R, const void *vbase, const int64_t *vrows,
            int64_t jlo, int64_t jhi, const int kind) {
    for (int64_t c = 0; c < d;) {
        const int nv = d - c >= 128 && R <= 2 ? 8 : d - c >= 64 ? 4 : 1;
#define VALUES(r, n) values_rows(acc, d, corr, p, vbase, vrows, jlo, jhi, c, r, n, kind)
        switch (R * 16 + nv) {
        case 0x18: VALUES(1, 8); break;
        case 0x28: VALUES(2, 8); break;
        case 0x14: VALUES(1, 4); break;
        case 0x24: VALUES(2, 4); break;
        case 0x34: VALUES(3, 4); break;
        case 0x44: VALUES(4, 4); break;
        case 0x11: VALUES(1, 1); break;
        case 0x21: VALUES(2, 1); break;
        case 0x31: VALUES(3, 1); break;
        default: VALUES(4, 1); break;
        }
#undef VALUES
        c += 16 * nv;
    }
}

static void values_block(float *acc, int64_t d, const float *corr, const float *p, int R, const void *vbase,
                         const int64_t *vrows, int64_t jlo, int64_t jhi, int kind) {
    if (kind == KV_BF16) values_kind(acc, d, corr, p, R, vbase, vrows, jlo, jhi, KV_BF16);
    else if (kind == KV_F16) values_kind(acc, d, corr, p, R, vbase, vrows, jlo, jhi, KV_F16);
    else values_kind(acc, d, corr, p, R, vbase, vrows, jlo, jhi, KV_F32);
}

static const int64_t buffer_rows[CHUNK] = {0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15,
                                           16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31};

/* Rows [b0, b0 + nb) of the tile (row = token * group + head of the group) against the chunk
 * of nj keys at j0: scores row by row, then the block's softmax update and its P.V together. */
static void block_chunk(const attn_args *a, const float *q0, int64_t pos0, int64_t j0, int64_t nj, int64_t b0,
                        int nb, int direct, attn_scratch *w) {
    const int64_t d = a->head_dim, group = a->num_heads / a->num_kv_heads, win = a->meta->sliding_window;
    const __m512 scale = _mm512_set1_ps(a->scale);
    __m512 sc[RBLOCK][2];
    __mmask16 k[RBLOCK][2];
    int64_t blo = CHUNK, bhi = 0;
    /* keys and values: in place in the cache (a decode tile), or the chunk's float buffers */
    const void *kbase = direct ? a->kv->k : (const void *)w->kbuf, *vbase = direct ? a->kv->v : (const void *)w->vbuf;
    const int64_t *krows = direct ? w->rows : NULL, *vrows = direct ? w->rows : buffer_rows;
    const int kind = direct ? a->kv->kind : KV_F32;
    for (int i = 0; i < nb; i++) {
        const int64_t row = b0 + i, t = row / group, g = row % group;
        const int64_t pos_t = pos0 + t, lo = win > 0 ? pos_t - win + 1 : 0;
        /* keys j0 + [jlo, jhi) are visible to this token */
        const int64_t jlo = lo > j0 ? lo - j0 : 0, jhi = pos_t - j0 + 1 < nj ? pos_t - j0 + 1 : nj;
        const uint32_t vis = jhi > jlo ? (uint32_t)(((1ull << jhi) - 1) & ~((1ull << jlo) - 1)) : 0;
        k[i][0] = (__mmask16)vis, k[i][1] = (__mmask16)(vis >> 16);
        row_scores(q0 + t * a->ldq + g * d, kbase, krows, d, kind, scale, k[i][0], k[i][1], &sc[i][0], &sc[i][1]);
        if (vis) {
            blo = jlo < blo ? jlo : blo;
            bhi = jhi > bhi ? jhi : bhi;
        }
    }
    softmax_block(sc, k, nb, w->m + b0, w->l + b0, w->p, w->corr);
    if (bhi <= blo) return;
    values_block(w->acc + b0 * d, d, w->corr, w->p, nb, vbase, vrows, blo, bhi, kind);
}

static void attend_head(const attn_args *a, int64_t r, int64_t h_kv, int64_t t0, int64_t nt, attn_scratch *w) {
    const attn_meta *mt = a->meta;
    const int64_t d = a->head_dim, group = a->num_heads / a->num_kv_heads, nrow = nt * group;
    const int64_t q_start = mt->query_start[r], q_len = mt->query_start[r + 1] - q_start;
    const int64_t ctx = mt->seq_lens[r] - q_len, pos0 = ctx + t0; /* position of the tile's first token */
    const int64_t last = pos0 + nt - 1, win = mt->sliding_window;
    const int rb = d <= 64 ? RBLOCK : 2, direct = nrow <= rb; /* one block: keys and values read in place */
    /* chunks start at multiples of CHUNK whatever the tile (batch invariance) */
    const int64_t first = (win > 0 && pos0 - win + 1 > 0 ? pos0 - win + 1 : 0) / CHUNK * CHUNK;
    const int64_t *table = mt->block_tables + r * mt->max_blocks;
    const float *q0 = a->q + (q_start + t0) * a->ldq + h_kv * group * d;
    for (int64_t i = 0; i < nrow; i++) {
        w->m[i] = -INFINITY;
        w->l[i] = 0.f;
        memset(w->acc + i * d, 0, (size_t)d * sizeof(float));
    }
    for (int64_t j0 = first; j0 <= last; j0 += CHUNK) {
        const int64_t nj = last - j0 + 1 < CHUNK ? last - j0 + 1 : CHUNK;
        if (direct) { /* the tile is one block: keys and values are read in place through the rows */
            chunk_rows(table, mt->block_size, a->num_kv_heads, h_kv, j0, nj, w->rows);
            for (int64_t j = nj; j < CHUNK; j++) w->rows[j] = w->rows[0]; /* scored, never visible */
        } else
            gather_chunk(a, table, j0, nj, h_kv, w);
        if (j0 + CHUNK <= last)
            prefetch_chunk(a, table, j0 + CHUNK, last - j0 - CHUNK + 1 < CHUNK ? last - j0 - CHUNK + 1 : CHUNK, h_kv);
        for (int64_t b0 = 0; b0 < nrow; b0 += rb)
            block_chunk(a, q0, pos0, j0, nj, b0, nrow - b0 < rb ? (int)(nrow - b0) : rb, direct, w);
    }
    for (int64_t row = 0; row < nrow; row++) {
        const int64_t t = row / group, g = row % group;
        float *o = a->out + ((q_start + t0 + t) * a->num_heads + h_kv * group + g) * d;
        const __m512 inv = _mm512_set1_ps(w->l[row] > 0.f ? 1.f / w->l[row] : 0.f);
        for (int64_t i = 0; i < d; i += 16)
            _mm512_storeu_ps(o + i, _mm512_mul_ps(_mm512_loadu_ps(w->acc + row * d + i), inv));
    }
}

void attend_item_avx512(const attn_args *a, int64_t r, int64_t h0, int64_t h1, int64_t t0, int64_t nt,
                        attn_scratch *w) {
    for (int64_t h = h0; h < h1; h++) attend_head(a, r, h, t0, nt, w);
}

#endif
