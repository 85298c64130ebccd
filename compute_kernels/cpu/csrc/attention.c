/* Paged attention on the CPU: KV-cache writes and causal attention that walks block tables.
 *
 * One work item is (request, KV head, tile of up to QTILE query tokens): the item reads each
 * cached key and value of its head once and scores them against every query head of the
 * GQA group and every token of the tile, with an online softmax over chunks of keys. Decode
 * (one query token), prefill and prefill over a cached prefix are the same code. K/V may be
 * float32, bfloat16 or float16 in the cache; the arithmetic is float32.
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "attention.h"
#include "common.h"
#include "ops.h"
#include "vec.h"

#ifdef HAVE_AVX2
static inline __m256 half8_to_float(__m128i h, int kind) {
    return kind == KV_BF16 ? _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16)) : _mm256_cvtph_ps(h);
}
#endif

/* out = elements [start, start + n) of a cache layer as floats. */
static inline void load_span(const void *base, int kind, int64_t start, int64_t n, float *out) {
    if (kind == KV_F32) {
        memcpy(out, (const float *)base + start, (size_t)n * sizeof(float));
    } else {
        const uint16_t *src = (const uint16_t *)base + start;
        int64_t i = 0;
#ifdef HAVE_AVX2
        for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, half8_to_float(_mm_loadu_si128((const __m128i *)(src + i)), kind));
#endif
        for (; i < n; i++) out[i] = kind == KV_BF16 ? bf16_to_f32(src[i]) : f16_to_f32(src[i]);
    }
}

/* kout, vout = the key and value rows `index` (d elements each) as floats. 16-bit rows go 64
 * elements at a time, the key's and the value's loads all issued before the first conversion:
 * a load, convert, store chain per vector kept few loads in flight (a fifth of a decode step's
 * attention went to it). */
static inline __attribute__((always_inline)) void
load_kv_row(const kv_layer *kv, const int kind, int64_t index, int64_t d, float *kout, float *vout) {
    int64_t i = 0;
#ifdef HAVE_AVX2
    if (kind != KV_F32) {
        const uint16_t *k = (const uint16_t *)kv->k + index * d, *v = (const uint16_t *)kv->v + index * d;
        for (; i + 64 <= d; i += 64) {
            __m128i hk[8], hv[8];
            for (int b = 0; b < 8; b++) hk[b] = _mm_loadu_si128((const __m128i *)(k + i + 8 * b));
            for (int b = 0; b < 8; b++) hv[b] = _mm_loadu_si128((const __m128i *)(v + i + 8 * b));
            for (int b = 0; b < 8; b++) _mm256_storeu_ps(kout + i + 8 * b, half8_to_float(hk[b], kind));
            for (int b = 0; b < 8; b++) _mm256_storeu_ps(vout + i + 8 * b, half8_to_float(hv[b], kind));
        }
    }
#endif
    if (i < d) {
        load_span(kv->k, kind, index * d + i, d - i, kout + i);
        load_span(kv->v, kind, index * d + i, d - i, vout + i);
    }
}

static inline void store_row(void *base, int kind, int64_t index, int64_t d, const float *in) {
    if (kind == KV_F32) {
        memcpy((float *)base + index * d, in, (size_t)d * sizeof(float));
    } else {
        uint16_t *dst = (uint16_t *)base + index * d;
        int64_t i = 0;
#if defined(HAVE_AVX2) && defined(__F16C__)
        if (kind == KV_F16)
            for (; i + 8 <= d; i += 8)
                _mm_storeu_si128((__m128i *)(dst + i), _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT));
#endif
        for (; i < d; i++) dst[i] = kind == KV_BF16 ? f32_to_bf16(in[i]) : f32_to_f16(in[i]);
    }
}

void kv_write(const kv_layer *kv, const float *k, const float *v, int64_t ldkv, const int64_t *slots, int64_t num_tokens,
              int64_t num_kv_heads, int64_t head_dim) {
    const int64_t width = num_kv_heads * head_dim;
    for (int64_t t = 0; t < num_tokens; t++) {
        if (slots[t] < 0) continue; /* padding */
        store_row(kv->k, kv->kind, slots[t], width, k + t * ldkv);
        store_row(kv->v, kv->kind, slots[t], width, v + t * ldkv);
    }
}

static inline float dot(const float *a, const float *b, int64_t d) {
    int64_t i = 0;
    float s = 0.f;
#ifdef HAVE_AVX2
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    for (; i + 16 <= d; i += 16) {
        acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
        acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), acc1);
    }
    for (; i + 8 <= d; i += 8) acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
    acc0 = _mm256_add_ps(acc0, acc1);
    __m128 h = _mm_add_ps(_mm256_castps256_ps128(acc0), _mm256_extractf128_ps(acc0, 1));
    h = _mm_add_ps(h, _mm_movehl_ps(h, h));
    h = _mm_add_ss(h, _mm_movehdup_ps(h));
    s = _mm_cvtss_f32(h);
#endif
    for (; i < d; i++) s += a[i] * b[i];
    return s;
}

static inline void axpy(float *y, float a, const float *x, int64_t d) { /* y += a * x */
    int64_t i = 0;
#ifdef HAVE_AVX2
    __m256 va = _mm256_set1_ps(a);
    for (; i + 8 <= d; i += 8) _mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
#endif
    for (; i < d; i++) y[i] += a * x[i];
}

/* s[j] = exp(s[j] - shift) in place; -inf entries become exactly 0. Every entry takes the
 * vector path (s has room for n rounded up to 8), so a key's weight does not depend on n. */
static inline void exp_shifted(float *s, int64_t n, float shift) {
    int64_t j = 0;
#ifdef HAVE_AVX2
    const __m256 vs = _mm256_set1_ps(shift), ninf = _mm256_set1_ps(-INFINITY);
    for (int64_t i = n; i % 8; i++) s[i] = -INFINITY;
    for (; j < n; j += 8) {
        __m256 x = _mm256_loadu_ps(s + j);
        __m256 keep = _mm256_cmp_ps(x, ninf, _CMP_NEQ_OQ);
        _mm256_storeu_ps(s + j, _mm256_and_ps(exp_ps(_mm256_sub_ps(x, vs)), keep));
    }
#endif
    for (; j < n; j++) s[j] = s[j] == -INFINITY ? 0.f : expf(s[j] - shift);
}

static inline void scale_row(float *y, float a, int64_t d) {
    for (int64_t i = 0; i < d; i++) y[i] *= a;
}

#ifdef HAVE_AVX2
/* s[j] = q . k_j * scale for the chunk's keys, eight keys at a time: eight FMA chains over d,
 * then one fixed reduction tree, so each key's score is computed the same way wherever it
 * sits (kbuf holds whole groups of eight keys, zeros past nj). D is a multiple of 8. */
static inline __attribute__((always_inline)) void
scores_d(const float *q, const float *kbuf, int64_t nj, float scale, float *s, const int D) {
    const __m256 vs = _mm256_set1_ps(scale);
    for (int64_t j = 0; j < nj; j += 8) {
        const float *k = kbuf + j * D;
        __m256 a[8];
        for (int t = 0; t < 8; t++) a[t] = _mm256_setzero_ps();
        for (int i = 0; i < D; i += 8) {
            const __m256 qv = _mm256_loadu_ps(q + i);
            for (int t = 0; t < 8; t++) a[t] = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k + t * D + i), a[t]);
        }
        __m256 u0 = _mm256_hadd_ps(_mm256_hadd_ps(a[0], a[1]), _mm256_hadd_ps(a[2], a[3]));
        __m256 u1 = _mm256_hadd_ps(_mm256_hadd_ps(a[4], a[5]), _mm256_hadd_ps(a[6], a[7]));
        __m256 r = _mm256_add_ps(_mm256_permute2f128_ps(u0, u1, 0x20), _mm256_permute2f128_ps(u0, u1, 0x31));
        _mm256_storeu_ps(s + j, _mm256_mul_ps(r, vs));
    }
}

/* acc = acc * corr + sum_j p[j] v_j, acc held in registers (D a multiple of 16, <= 128). */
static inline __attribute__((always_inline)) void
accumulate_d(float *acc, float corr, const float *p, const float *vbuf, int64_t nj, const int D) {
    __m256 o[128 / 8]; /* a fixed size: a variable-length array would live in memory */
    const __m256 c = _mm256_set1_ps(corr);
    for (int i = 0; i < D / 8; i++) o[i] = _mm256_mul_ps(_mm256_loadu_ps(acc + 8 * i), c);
    for (int64_t j = 0; j < nj; j++) {
        if (p[j] == 0.f) continue;
        const __m256 pj = _mm256_set1_ps(p[j]);
        for (int i = 0; i < D / 8; i++) o[i] = _mm256_fmadd_ps(pj, _mm256_loadu_ps(vbuf + j * D + 8 * i), o[i]);
    }
    for (int i = 0; i < D / 8; i++) _mm256_storeu_ps(acc + 8 * i, o[i]);
}
#endif

static void chunk_scores(const float *q, const float *kbuf, int64_t nj, int64_t d, float scale, float *s) {
#ifdef HAVE_AVX2
    switch (d) {
    case 64: scores_d(q, kbuf, nj, scale, s, 64); return;
    case 128: scores_d(q, kbuf, nj, scale, s, 128); return;
    case 96: scores_d(q, kbuf, nj, scale, s, 96); return;
    case 80: scores_d(q, kbuf, nj, scale, s, 80); return;
    case 32: scores_d(q, kbuf, nj, scale, s, 32); return;
    default: break;
    }
#endif
    for (int64_t j = 0; j < nj; j++) s[j] = dot(q, kbuf + j * d, d) * scale;
}

static void chunk_accumulate(float *acc, float corr, const float *p, const float *vbuf, int64_t nj, int64_t d) {
#ifdef HAVE_AVX2
    if (d == 64) { accumulate_d(acc, corr, p, vbuf, nj, 64); return; }
    if (d == 128) { accumulate_d(acc, corr, p, vbuf, nj, 128); return; }
#endif
    scale_row(acc, corr, d);
    for (int64_t j = 0; j < nj; j++)
        if (p[j] != 0.f) axpy(acc, p[j], vbuf + j * d, d);
}

#ifdef HAVE_AVX2
static inline float hmax8(__m256 v) {
    __m128 h = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    h = _mm_max_ps(h, _mm_movehl_ps(h, h));
    return _mm_cvtss_f32(_mm_max_ss(h, _mm_movehdup_ps(h)));
}

static inline float hsum8(__m256 v) {
    __m128 h = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    h = _mm_add_ps(h, _mm_movehl_ps(h, h));
    return _mm_cvtss_f32(_mm_add_ss(h, _mm_movehdup_ps(h)));
}
#endif

/* The largest of s[0, CHUNK) and m (exact in any order). */
static inline float chunk_max(const float *s, float m) {
#ifdef HAVE_AVX2
    __m256 v = _mm256_loadu_ps(s);
    for (int j = 8; j < CHUNK; j += 8) v = _mm256_max_ps(v, _mm256_loadu_ps(s + j));
    const float top = hmax8(v);
    return top > m ? top : m;
#else
    for (int j = 0; j < CHUNK; j++) m = s[j] > m ? s[j] : m;
    return m;
#endif
}

/* The sum of s[0, CHUNK) in one fixed order (eight lanes, then a fixed tree), so a row's sum
 * does not depend on how many of the chunk's keys its step holds (the rest are exactly 0). */
static inline float chunk_sum(const float *s) {
#ifdef HAVE_AVX2
    __m256 v = _mm256_loadu_ps(s);
    for (int j = 8; j < CHUNK; j += 8) v = _mm256_add_ps(v, _mm256_loadu_ps(s + j));
    return hsum8(v);
#else
    float sum = 0.f;
    for (int j = 0; j < CHUNK; j++) sum += s[j];
    return sum;
#endif
}

/* One query row against one chunk of keys (kbuf/vbuf hold nj of them): scores, the online
 * softmax update of (m, l) and the row's accumulator. Keys outside [jlo, jhi) are masked. */
static void row_chunk(const float *qv, const attn_scratch *w, int64_t nj, int64_t jlo, int64_t jhi, int64_t d,
                      float scale, float *acc, float *m, float *l) {
    float *s = w->s;
    chunk_scores(qv, w->kbuf, nj, d, scale, s);
    for (int64_t j = 0; j < jlo; j++) s[j] = -INFINITY;
    for (int64_t j = jhi; j < CHUNK; j++) s[j] = -INFINITY;
    const float mx = chunk_max(s, *m);
    const float corr = expf(*m - mx); /* 0 on the first chunk (m = -inf) */
    exp_shifted(s, CHUNK, mx);        /* s[j] = exp(s[j] - mx), 0 where masked */
    const float sum = chunk_sum(s);
    chunk_accumulate(acc, corr, s, w->vbuf, nj, d);
    *l = *l * corr + sum;
    *m = mx;
}

/* Asks for the keys and values of the chunk after this one while this one is computed:
 * a decode step reads each cached row once, and the weights streamed between layers have
 * pushed it out of the caches. On the AVX-512 path into L2 (T1), not L1: decode attention
 * took a quarter to a third less time so on Zen4 (a chunk's 128 lines asked into L1 at once
 * likely queue on its few miss buffers); the AVX2 path keeps T0 (T1 there: -9 % at 64 x 300,
 * +3 % at 16 x 1500, no clear gain). */
#ifdef HAVE_AVX512
#define PREFETCH_HINT _MM_HINT_T1
#else
#define PREFETCH_HINT _MM_HINT_T0
#endif

void prefetch_chunk(const attn_args *a, const int64_t *table, int64_t j0, int64_t n, int64_t h_kv) {
#ifdef HAVE_AVX2
    int64_t rows[CHUNK];
    const int64_t d = a->head_dim, esize = a->kv->kind == KV_F32 ? 4 : 2;
    chunk_rows(table, a->meta->block_size, a->num_kv_heads, h_kv, j0, n, rows);
    for (int64_t j = 0; j < n; j++) {
        const char *k = (const char *)a->kv->k + rows[j] * d * esize, *v = (const char *)a->kv->v + rows[j] * d * esize;
        for (int64_t b = 0; b < d * esize; b += 64) {
            _mm_prefetch(k + b, PREFETCH_HINT);
            _mm_prefetch(v + b, PREFETCH_HINT);
        }
    }
#else
    (void)a, (void)table, (void)j0, (void)n, (void)h_kv;
#endif
}

static inline __attribute__((always_inline)) void
gather_rows(const kv_layer *kv, const int kind, const int64_t *rows, int64_t nj, const int64_t d, attn_scratch *w) {
    for (int64_t j = 0; j < nj; j++) load_kv_row(kv, kind, rows[j], d, w->kbuf + j * d, w->vbuf + j * d);
}

/* kbuf and vbuf rows [0, nj) = the keys and values of head h_kv at positions j0 + [0, nj), as
 * floats; key rows up to the next multiple of KPAD are zeros (scores run eight or sixteen keys at
 * a time); w->rows = their cache rows. */
void gather_chunk(const attn_args *a, const int64_t *table, int64_t j0, int64_t nj, int64_t h_kv, attn_scratch *w) {
    const int64_t d = a->head_dim, *rows = w->rows;
    chunk_rows(table, a->meta->block_size, a->num_kv_heads, h_kv, j0, nj, w->rows);
    const int kind = a->kv->kind;
    if (kind == KV_F16 && d == 64) gather_rows(a->kv, KV_F16, rows, nj, 64, w); /* constants: loops unrolled */
    else if (kind == KV_F16 && d == 128) gather_rows(a->kv, KV_F16, rows, nj, 128, w);
    else if (kind == KV_BF16 && d == 64) gather_rows(a->kv, KV_BF16, rows, nj, 64, w);
    else if (kind == KV_BF16 && d == 128) gather_rows(a->kv, KV_BF16, rows, nj, 128, w);
    else if (kind == KV_F16) gather_rows(a->kv, KV_F16, rows, nj, d, w);
    else if (kind == KV_BF16) gather_rows(a->kv, KV_BF16, rows, nj, d, w);
    else gather_rows(a->kv, KV_F32, rows, nj, d, w);
    for (int64_t j = nj; j % KPAD; j++) memset(w->kbuf + j * d, 0, (size_t)d * sizeof(float));
}

static void attend_item(const attn_args *a, int64_t r, int64_t h_kv, int64_t t0, int64_t nt, attn_scratch *w) {
    const attn_meta *mt = a->meta;
    const int64_t d = a->head_dim, group = a->num_heads / a->num_kv_heads, nrow = nt * group;
    const int64_t q_start = mt->query_start[r], q_len = mt->query_start[r + 1] - q_start;
    const int64_t ctx = mt->seq_lens[r] - q_len, pos0 = ctx + t0; /* position of the tile's first token */
    const int64_t last = pos0 + nt - 1, win = mt->sliding_window;
    /* chunks start at multiples of CHUNK whatever the tile, so a token's arithmetic does not
     * depend on which tile or step it is computed in (batch invariance) */
    const int64_t first = (win > 0 && pos0 - win + 1 > 0 ? pos0 - win + 1 : 0) / CHUNK * CHUNK;
    const int64_t *table = mt->block_tables + r * mt->max_blocks;
    for (int64_t i = 0; i < nrow; i++) {
        w->m[i] = -INFINITY;
        w->l[i] = 0.f;
        memset(w->acc + i * d, 0, (size_t)d * sizeof(float));
    }
    for (int64_t j0 = first; j0 <= last; j0 += CHUNK) {
        const int64_t nj = last - j0 + 1 < CHUNK ? last - j0 + 1 : CHUNK;
        gather_chunk(a, table, j0, nj, h_kv, w);
        if (j0 + CHUNK <= last)
            prefetch_chunk(a, table, j0 + CHUNK, last - j0 - CHUNK + 1 < CHUNK ? last - j0 - CHUNK + 1 : CHUNK, h_kv);
        for (int64_t t = 0; t < nt; t++) {
            const int64_t pos_t = pos0 + t, lo = win > 0 ? pos_t - win + 1 : 0;
            /* keys j0 + [jlo, jhi) are visible to this token */
            const int64_t jlo = lo > j0 ? lo - j0 : 0, jhi = pos_t - j0 + 1 < nj ? pos_t - j0 + 1 : nj;
            if (jhi <= jlo) continue;
            for (int64_t g = 0; g < group; g++) {
                const int64_t row = t * group + g;
                const float *qv = a->q + (q_start + t0 + t) * a->ldq + (h_kv * group + g) * d;
                row_chunk(qv, w, nj, jlo, jhi, d, a->scale, w->acc + row * d, &w->m[row], &w->l[row]);
            }
        }
    }
    for (int64_t t = 0; t < nt; t++)
        for (int64_t g = 0; g < group; g++) {
            const int64_t row = t * group + g;
            float *o = a->out + ((q_start + t0 + t) * a->num_heads + h_kv * group + g) * d;
            const float inv = w->l[row] > 0.f ? 1.f / w->l[row] : 0.f;
            for (int64_t i = 0; i < d; i++) o[i] = w->acc[row * d + i] * inv;
        }
}

/* A tile of query tokens t0 + [0, nt) of request r; cost: keys read times tokens. */
typedef struct {
    int64_t r, t0, nt, cost;
} attn_tile;

static int by_cost(const void *x, const void *y) { /* descending cost, then request and tile order */
    const attn_tile *a = (const attn_tile *)x, *b = (const attn_tile *)y;
    if (a->cost != b->cost) return a->cost < b->cost ? 1 : -1;
    return a->r != b->r ? (a->r < b->r ? -1 : 1) : (a->t0 < b->t0 ? -1 : a->t0 > b->t0);
}

/* n floats rounded up to whole 64-byte lines. */
static inline size_t line_floats(size_t n) { return (n + 15) / 16 * 16; }

void paged_attention(const float *q, int64_t ldq, float *out, int64_t num_heads, int64_t num_kv_heads,
                     int64_t head_dim, float scale, const kv_layer *kv, const attn_meta *meta) {
    attn_args a = {q, out, ldq, num_heads, num_kv_heads, head_dim, scale, kv, meta};
    /* items: (request, tile) pairs, each times num_kv_heads */
    int64_t num_tiles = 0;
    for (int64_t r = 0; r < meta->num_reqs; r++)
        num_tiles += (meta->query_start[r + 1] - meta->query_start[r] + QTILE - 1) / QTILE;
    attn_tile *tiles = (attn_tile *)malloc((size_t)(num_tiles ? num_tiles : 1) * sizeof(attn_tile));
    int64_t n = 0;
    for (int64_t r = 0; r < meta->num_reqs; r++) {
        const int64_t q_len = meta->query_start[r + 1] - meta->query_start[r], ctx = meta->seq_lens[r] - q_len;
        for (int64_t t0 = 0; t0 < q_len; t0 += QTILE) {
            const int64_t nt = q_len - t0 < QTILE ? q_len - t0 : QTILE;
            tiles[n++] = (attn_tile){r, t0, nt, (ctx + t0 + nt) * nt};
        }
    }
    /* the costliest first: a prompt's last tiles read the most keys, and handed out last they
     * kept one thread busy while the others waited */
    qsort(tiles, (size_t)num_tiles, sizeof(attn_tile), by_cost);
    const int64_t group = num_heads / num_kv_heads;
#ifdef HAVE_AVX512
    const int wide = head_dim % 16 == 0;
#else
    const int wide = 0;
#endif
#ifdef _OPENMP
    const int64_t threads = omp_get_max_threads();
#else
    const int64_t threads = 1;
#endif
    /* with 4 items a thread or more, an item takes all KV heads of its tile: num_kv_heads times fewer
     * items to hand out and set up, each still small next to a thread's share */
    const int64_t heads_per_item = wide && num_tiles * num_kv_heads >= 4 * threads ? num_kv_heads : 1;
    const int64_t items_per_tile = num_kv_heads / heads_per_item, num_items = num_tiles * items_per_tile;
#pragma omp parallel if (num_items > 1)
    {
        const size_t rows = (size_t)QTILE * group, d = (size_t)head_dim;
        /* each buffer starts on a cache line: 64-byte vectors that straddle two lines load slower */
        const size_t n_acc = line_floats(rows * d), n_ml = line_floats(rows), n_kv = line_floats(CHUNK * d);
        const size_t n_s = CHUNK + 16, n_p = RBLOCK * CHUNK, n_corr = 16, n_rows = 2 * CHUNK; /* int64 as floats */
        const size_t n_all = n_acc + 2 * n_ml + 2 * n_kv + n_s + n_p + n_corr + n_rows;
        float *mem = (float *)aligned_alloc(64, sizeof(float) * n_all);
        attn_scratch w;
        w.acc = mem;
        w.m = w.acc + n_acc;
        w.l = w.m + n_ml;
        w.kbuf = w.l + n_ml;
        w.vbuf = w.kbuf + n_kv;
        w.s = w.vbuf + n_kv;
        w.p = w.s + n_s;
        w.corr = w.p + n_p;
        w.rows = (int64_t *)(w.corr + n_corr);
#pragma omp for schedule(dynamic, 1)
        for (int64_t it = 0; it < num_items; it++) {
            const attn_tile *t = &tiles[it / items_per_tile];
            const int64_t h0 = it % items_per_tile * heads_per_item;
#ifdef HAVE_AVX512
            if (wide) {
                attend_item_avx512(&a, t->r, h0, h0 + heads_per_item, t->t0, t->nt, &w);
                continue;
            }
#endif
            attend_item(&a, t->r, h0, t->t0, t->nt, &w);
        }
        free(mem);
    }
    free(tiles);
}
