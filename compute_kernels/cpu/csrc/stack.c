/* The Llama-family decoder stack in one call: every layer of one flattened batch of tokens.
 *
 * Layer: x += o_proj(attn(rope(qkv_proj(norm(x))))); x += down(silu(gate) * up(norm(x))),
 * with Qwen2's QKV bias (a linear's bias) and Qwen3's per-head q/k norm (q_norm, k_norm set).
 * The residual stream x is updated in place; the final norm writes `out`. Each linear adds
 * into x directly, so a layer is seven kernel calls and no Python.
 */
#include "common.h"
#include "ops.h"

static packed_linear linear_at(const int64_t *rec) {
    packed_linear w = {(int)rec[LIN_KIND], rec[LIN_N], rec[LIN_K], (const void *)(intptr_t)rec[LIN_DATA],
                       (const uint16_t *)(intptr_t)rec[LIN_SCALES], (const uint16_t *)(intptr_t)rec[LIN_MINS],
                       (const float *)(intptr_t)rec[LIN_BIAS], (const uint8_t *)(intptr_t)rec[LIN_VNNI],
                       (int)rec[LIN_DIGITS]};
    return w;
}

#define PTR(rec, field) ((const float *)(intptr_t)(rec)[field])

/* Floats of workspace stack_forward needs for `tokens` tokens (h, qkv, attn, gate_up, act). */
int64_t stack_workspace(const int64_t *model, int64_t tokens) {
    const int64_t q = model[M_HEADS] * model[M_HEAD_DIM], kv = model[M_KV_HEADS] * model[M_HEAD_DIM];
    const int64_t hidden = model[M_HIDDEN], inter = model[M_INTER];
    return tokens * (hidden + (q + 2 * kv) + q + 2 * inter + inter);
}

void stack_forward(const int64_t *model, const int64_t *layers, float *x, float *out, int64_t tokens,
                   const int64_t *positions, const attn_meta *meta, float *work, float eps, float scale) {
    const int64_t hidden = model[M_HIDDEN], heads = model[M_HEADS], kv_heads = model[M_KV_HEADS];
    const int64_t hd = model[M_HEAD_DIM], inter = model[M_INTER];
    const int64_t q = heads * hd, kv = kv_heads * hd, wqkv = q + 2 * kv;
    float *h = work, *qkv = h + tokens * hidden, *attn = qkv + tokens * wqkv, *gu = attn + tokens * q;
    float *act = gu + tokens * 2 * inter;
    for (int64_t l = 0; l < model[M_LAYERS]; l++) {
        const int64_t *rec = layers + l * L_NUM;
        packed_linear w_qkv = linear_at(rec + L_QKV), w_o = linear_at(rec + L_O);
        packed_linear w_gu = linear_at(rec + L_GATE_UP), w_down = linear_at(rec + L_DOWN);
        kv_layer cache = {(int)model[M_KV_KIND], (void *)(intptr_t)rec[L_K_CACHE], (void *)(intptr_t)rec[L_V_CACHE]};

        rms_norm(x, hidden, PTR(rec, L_INPUT_NORM), eps, tokens, hidden, h, hidden);
        linear_packed(&w_qkv, h, tokens, hidden, qkv, wqkv, 0);
        if (rec[L_Q_NORM]) {
            head_norm(qkv, wqkv, tokens, heads, hd, PTR(rec, L_Q_NORM), eps);
            head_norm(qkv + q, wqkv, tokens, kv_heads, hd, PTR(rec, L_K_NORM), eps);
        }
        rotary(qkv, wqkv, tokens, heads + kv_heads, hd, positions, PTR(model, M_COS), PTR(model, M_SIN));
        kv_write(&cache, qkv + q, qkv + q + kv, wqkv, meta->slot_mapping, tokens, kv_heads, hd);
        paged_attention(qkv, wqkv, attn, heads, kv_heads, hd, scale, &cache, meta);
        linear_packed(&w_o, attn, tokens, q, x, hidden, 1);

        rms_norm(x, hidden, PTR(rec, L_POST_NORM), eps, tokens, hidden, h, hidden);
        linear_packed(&w_gu, h, tokens, hidden, gu, 2 * inter, 0);
        silu_mul(gu, tokens, inter, act);
        linear_packed(&w_down, act, tokens, inter, x, hidden, 1);
    }
    rms_norm(x, hidden, PTR(model, M_FINAL_NORM), eps, tokens, hidden, out, hidden);
}
