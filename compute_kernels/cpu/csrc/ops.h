/* The CPU kernels' C entry points, called by module.c and by stack.c. */
#ifndef GATEWAY_CPU_OPS_H
#define GATEWAY_CPU_OPS_H

#include "common.h"

/* out[m, n] = x[m, k] @ W^T (+ bias), or out += that when `accumulate`. */
void linear_packed(const packed_linear *w, const float *x, int64_t m, int64_t ldx, float *out, int64_t ldo,
                   int accumulate);
/* The same on AVX512-VNNI from w->vnni (linear_packed calls it when w->vnni is set). */
void linear_vnni(const packed_linear *w, const float *x, int64_t m, int64_t ldx, float *out, int64_t ldo,
                 int accumulate);
/* Greedy rows' tokens from 1-digit logits `cheap` and exact values of the candidates its bounds
 * leave (linear_vnni.c says how); out[r] = -1 where row r needs its full logits. */
void vnni_bounded_argmax(const packed_linear *w, const float *x, int64_t m, int64_t ldx, const float *cheap,
                         int64_t ldc, const float *col_bound, const float *group_bound, float window, int64_t *out);
int vnni_supported(void);
int64_t vnni_packed_bytes(const packed_linear *w);
void vnni_pack(const packed_linear *w, uint8_t *dst);

void rms_norm(const float *x, int64_t ldx, const float *weight, float eps, int64_t rows, int64_t h, float *out,
              int64_t ldo);
void rotary(float *x, int64_t ldx, int64_t rows, int64_t heads, int64_t head_dim, const int64_t *positions,
            const float *cos_t, const float *sin_t);
void head_norm(float *x, int64_t ldx, int64_t rows, int64_t heads, int64_t head_dim, const float *weight, float eps);
void silu_mul(const float *gu, int64_t rows, int64_t inter, float *out);
void argmax_rows(const float *x, int64_t rows, int64_t n, int64_t ld, int64_t *out);
void apply_bitmask_rows(float *x, int64_t rows, int64_t n, int64_t ld, const int32_t *mask, int64_t words);

/* k, v: [num_tokens, num_kv_heads * head_dim] rows ldkv floats apart; slots[t] < 0 is skipped. */
void kv_write(const kv_layer *kv, const float *k, const float *v, int64_t ldkv, const int64_t *slots,
              int64_t num_tokens, int64_t num_kv_heads, int64_t head_dim);
/* out [num_tokens, num_heads, head_dim] = causal attention of q (rows ldq floats apart). */
void paged_attention(const float *q, int64_t ldq, float *out, int64_t num_heads, int64_t num_kv_heads,
                     int64_t head_dim, float scale, const kv_layer *kv, const attn_meta *meta);

int64_t stack_workspace(const int64_t *model, int64_t tokens);
void stack_forward(const int64_t *model, const int64_t *layers, float *x, float *out, int64_t tokens,
                   const int64_t *positions, const attn_meta *meta, float *work, float eps, float scale);

#endif
