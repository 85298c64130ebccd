/* What attention.c and attention_avx512.c share: the tile and chunk sizes, the call's
 * arguments, the per-thread scratch, and the chunk gather both paths read keys through. */
#ifndef GATEWAY_CPU_ATTENTION_H
#define GATEWAY_CPU_ATTENTION_H

#include "common.h"

#define QTILE 16 /* query tokens per work item */
#define CHUNK 32 /* keys scored before one softmax update */
#define KPAD 16  /* kbuf holds whole groups of KPAD keys (zeros past the chunk's last) */
#define RBLOCK 4 /* most query rows of one register block (attention_avx512.c) */

typedef struct {
    const float *q;  /* [num_tokens, num_heads, head_dim], rows ldq floats apart */
    float *out;      /* [num_tokens, num_heads, head_dim], contiguous */
    int64_t ldq;
    int64_t num_heads, num_kv_heads, head_dim;
    float scale;
    const kv_layer *kv;
    const attn_meta *meta;
} attn_args;

/* Scratch per thread: rows of (token, head) state, a chunk of converted keys and values, the
 * chunk's cache rows, and per query row of a register block its weights and correction. */
typedef struct {
    float *acc, *m, *l, *kbuf, *vbuf, *s;
    float *p;      /* [RBLOCK][CHUNK] softmax weights of the chunk */
    float *corr;   /* [RBLOCK] exp(m_old - m_new) of the chunk */
    int64_t *rows; /* [CHUNK] cache row (slot * num_kv_heads + h_kv) of each key of the chunk */
} attn_scratch;

/* The cache rows (slot * stride + h_kv) of head h_kv at positions j0 + [0, n). */
static inline void chunk_rows(const int64_t *table, int64_t bs, int64_t stride, int64_t h_kv, int64_t j0, int64_t n,
                              int64_t *rows) {
    int64_t block = j0 / bs, off = j0 % bs;
    for (int64_t j = 0; j < n; j++) {
        rows[j] = (table[block] * bs + off) * stride + h_kv;
        if (++off == bs) off = 0, block++;
    }
}

/* w->rows = the chunk's cache rows; w->kbuf and w->vbuf = its keys and values as floats, key
 * rows up to the next multiple of KPAD zeros. */
void gather_chunk(const attn_args *a, const int64_t *table, int64_t j0, int64_t nj, int64_t h_kv, attn_scratch *w);
/* Asks for the keys and values of positions j0 + [0, n) of head h_kv ahead of their use. */
void prefetch_chunk(const attn_args *a, const int64_t *table, int64_t j0, int64_t n, int64_t h_kv);

/* Query tokens t0 + [0, nt) of request r against KV heads [h0, h1), on AVX-512 (head_dim a
 * multiple of 16). The same results as attend_item within the tests' tolerance. */
void attend_item_avx512(const attn_args *a, int64_t r, int64_t h0, int64_t h1, int64_t t0, int64_t nt,
                        attn_scratch *w);

#endif
