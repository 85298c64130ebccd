/* Constants and interface structs shared by the CPU kernels (compute_kernels/cpu/csrc/): one header. */
#ifndef GATEWAY_CPU_COMMON_H
#define GATEWAY_CPU_COMMON_H

#include <stddef.h>
#include <stdint.h>

/* Packed weights: columns in panels of PANEL, the input dimension in groups of GROUP that
 * share one scale (and, for int4, one minimum). compute_kernels/quant.py holds the same numbers. */
#define PANEL 16
#define GROUP 32

enum weight_kind { W_F32 = 0, W_INT8 = 1, W_INT4 = 2 };
enum kv_kind { KV_F32 = 0, KV_BF16 = 1, KV_F16 = 2 };

/* A packed linear layer: out[M, N] = x[M, K] @ W^T (+ bias). Layout per kind:
 *   W_F32:  data float [N/PANEL][K][PANEL]
 *   W_INT8: data int8  [N/PANEL][K/GROUP][GROUP][PANEL], w = scale * q
 *   W_INT4: data uint8 [N/PANEL][K/GROUP][GROUP/2][PANEL], low nibble k = 2j, high k = 2j + 1,
 *           w = scale * q + min
 *   scales, mins: fp16 (uint16) [N/PANEL][K/GROUP][PANEL] (N padded to a whole panel), as a
 *   GGUF stores them: exact for its grids, and a quarter of an int4 weight's bytes less. */
typedef struct {
    int kind;
    int64_t n, k;
    const void *data;
    const uint16_t *scales;
    const uint16_t *mins;
    const float *bias; /* [n] or NULL */
    const uint8_t *vnni; /* NULL, or the int8/int4 weights repacked for vpdpbusd (linear_vnni.c) */
    int digits;          /* with vnni: 8-bit digits per activation, 3 (24-bit fixed point), 2 or 1 */
} packed_linear;

/* Where one step's tokens read and write the paged KV cache (shared by every layer). */
typedef struct {
    int64_t num_reqs;
    const int64_t *query_start;  /* [num_reqs + 1] first token row of each request */
    const int64_t *seq_lens;     /* [num_reqs] context length after this step */
    const int64_t *block_tables; /* [num_reqs, max_blocks] */
    int64_t max_blocks;
    int64_t block_size;
    const int64_t *slot_mapping; /* [num_tokens] cache slot each new token writes */
    int64_t sliding_window;      /* 0: none */
} attn_meta;

/* One KV cache layer: [num_slots, num_kv_heads, head_dim] in kv_kind. */
typedef struct {
    int kind;
    void *k, *v;
} kv_layer;

/* A model for stack_forward, described by int64 records that Python fills by field name
 * (module.c exports these name lists; compute_kernels/cpu/stack.py reads them). Pointers are data
 * addresses of contiguous float32 tensors unless said otherwise. */
#define LINEAR_FIELDS "kind n k data scales mins bias vnni digits"
enum { LIN_KIND, LIN_N, LIN_K, LIN_DATA, LIN_SCALES, LIN_MINS, LIN_BIAS, LIN_VNNI, LIN_DIGITS, LIN_NUM };

#define MODEL_FIELDS "num_layers hidden num_heads num_kv_heads head_dim intermediate kv_kind rope_cos rope_sin final_norm"
enum { M_LAYERS, M_HIDDEN, M_HEADS, M_KV_HEADS, M_HEAD_DIM, M_INTER, M_KV_KIND, M_COS, M_SIN, M_FINAL_NORM, M_NUM };

/* q_norm and k_norm are 0 where the model has none; the four linears follow, LIN_NUM each. */
#define LAYER_FIELDS "input_norm post_norm q_norm k_norm k_cache v_cache"
enum { L_INPUT_NORM, L_POST_NORM, L_Q_NORM, L_K_NORM, L_K_CACHE, L_V_CACHE, L_QKV, L_O = L_QKV + LIN_NUM,
       L_GATE_UP = L_O + LIN_NUM, L_DOWN = L_GATE_UP + LIN_NUM, L_NUM = L_DOWN + LIN_NUM };

#endif
