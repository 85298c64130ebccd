/* Python bindings of the CPU kernels: every function takes plain integers (sizes and the data
 * pointers of contiguous tensors, checked by the Python wrappers in compute_kernels/cpu/ops.py) and
 * releases the GIL while it computes. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "common.h"
#include "ops.h"

/* Reads `n` positional arguments as int64 ('i', pointers too) or double ('f') per `fmt`. */
static int parse(PyObject *const *args, Py_ssize_t nargs, const char *fmt, int64_t *ints, double *floats) {
    Py_ssize_t n = (Py_ssize_t)strlen(fmt);
    if (nargs != n) {
        PyErr_Format(PyExc_TypeError, "expected %zd arguments, got %zd", n, nargs);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (fmt[i] == 'f') {
            floats[i] = PyFloat_AsDouble(args[i]);
        } else {
            ints[i] = PyLong_AsLongLong(args[i]);
        }
        if (PyErr_Occurred()) return -1;
    }
    return 0;
}

#define P(i, type) ((type)(intptr_t)iv[i])

static PyObject *py_linear(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    /* kind, n, k, data, scales, mins, bias, vnni, digits, x, m, ldx, out, ldo, accumulate */
    int64_t iv[15];
    double fv[15];
    if (parse(args, nargs, "iiiiiiiiiiiiiii", iv, fv)) return NULL;
    packed_linear w = {(int)iv[0], iv[1], iv[2], P(3, const void *), P(4, const uint16_t *), P(5, const uint16_t *),
                       P(6, const float *), P(7, const uint8_t *), (int)iv[8]};
    Py_BEGIN_ALLOW_THREADS
    linear_packed(&w, P(9, const float *), iv[10], iv[11], P(12, float *), iv[13], (int)iv[14]);
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

static PyObject *py_bounded_argmax(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    /* the nine linear fields, x, m, ldx, cheap, ldc, col_bound, group_bound, window, out */
    int64_t iv[18];
    double fv[18];
    if (parse(args, nargs, "iiiiiiiiiiiiiiiifi", iv, fv)) return NULL;
    packed_linear w = {(int)iv[0], iv[1], iv[2], P(3, const void *), P(4, const uint16_t *), P(5, const uint16_t *),
                       P(6, const float *), P(7, const uint8_t *), (int)iv[8]};
    Py_BEGIN_ALLOW_THREADS
    vnni_bounded_argmax(&w, P(9, const float *), iv[10], iv[11], P(12, const float *), iv[13], P(14, const float *),
                        P(15, const float *), (float)fv[16], P(17, int64_t *));
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

static PyObject *py_vnni_pack(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    /* kind, n, k, data, dst: the int8/int4 weights repacked for linear_vnni into dst */
    int64_t iv[5];
    double fv[5];
    if (parse(args, nargs, "iiiii", iv, fv)) return NULL;
    packed_linear w = {(int)iv[0], iv[1], iv[2], P(3, const void *)};
    Py_BEGIN_ALLOW_THREADS
    vnni_pack(&w, P(4, uint8_t *));
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

static PyObject *py_rms_norm(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    /* x, ldx, weight, eps, rows, h, out, ldo */
    int64_t iv[8];
    double fv[8];
    if (parse(args, nargs, "iiifiiii", iv, fv)) return NULL;
    Py_BEGIN_ALLOW_THREADS
    rms_norm(P(0, const float *), iv[1], P(2, const float *), (float)fv[3], iv[4], iv[5], P(6, float *), iv[7]);
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

static PyObject *py_rotary(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    /* x, ldx, rows, heads, head_dim, positions, cos, sin */
    int64_t iv[8];
    double fv[8];
    if (parse(args, nargs, "iiiiiiii", iv, fv)) return NULL;
    Py_BEGIN_ALLOW_THREADS
    rotary(P(0, float *), iv[1], iv[2], iv[3], iv[4], P(5, const int64_t *), P(6, const float *), P(7, const float *));
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

static PyObject *py_silu_mul(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    /* gate_up, rows, inter, out */
    int64_t iv[4];
    double fv[4];
    if (parse(args, nargs, "iiii", iv, fv)) return NULL;
    Py_BEGIN_ALLOW_THREADS
    silu_mul(P(0, const float *), iv[1], iv[2], P(3, float *));
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

static PyObject *py_argmax(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    /* x, rows, n, ld, out */
    int64_t iv[5];
    double fv[5];
    if (parse(args, nargs, "iiiii", iv, fv)) return NULL;
    Py_BEGIN_ALLOW_THREADS
    argmax_rows(P(0, const float *), iv[1], iv[2], iv[3], P(4, int64_t *));
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

static PyObject *py_apply_bitmask(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    /* x, rows, n, ld, mask, words */
    int64_t iv[6];
    double fv[6];
    if (parse(args, nargs, "iiiiii", iv, fv)) return NULL;
    Py_BEGIN_ALLOW_THREADS
    apply_bitmask_rows(P(0, float *), iv[1], iv[2], iv[3], P(4, const int32_t *), iv[5]);
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

static PyObject *py_kv_write(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    /* kv_kind, k_cache, v_cache, k, v, ldkv, slots, num_tokens, num_kv_heads, head_dim */
    int64_t iv[10];
    double fv[10];
    if (parse(args, nargs, "iiiiiiiiii", iv, fv)) return NULL;
    kv_layer kv = {(int)iv[0], P(1, void *), P(2, void *)};
    Py_BEGIN_ALLOW_THREADS
    kv_write(&kv, P(3, const float *), P(4, const float *), iv[5], P(6, const int64_t *), iv[7], iv[8], iv[9]);
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

/* The attention metadata's eight arguments starting at `i`. */
static attn_meta meta_at(const int64_t *iv, int i) {
    attn_meta m = {iv[i], P(i + 1, const int64_t *), P(i + 2, const int64_t *), P(i + 3, const int64_t *), iv[i + 4],
                   iv[i + 5], P(i + 6, const int64_t *), iv[i + 7]};
    return m;
}
#define META_FMT "iiiiiiii" /* num_reqs, query_start, seq_lens, block_tables, max_blocks, block_size, slot_mapping, window */

static PyObject *py_attention(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    /* q, ldq, out, heads, kv_heads, head_dim, scale, kv_kind, k_cache, v_cache, meta... */
    int64_t iv[18];
    double fv[18];
    if (parse(args, nargs, "iiiiiifiii" META_FMT, iv, fv)) return NULL;
    kv_layer kv = {(int)iv[7], P(8, void *), P(9, void *)};
    attn_meta meta = meta_at(iv, 10);
    Py_BEGIN_ALLOW_THREADS
    paged_attention(P(0, const float *), iv[1], P(2, float *), iv[3], iv[4], iv[5], (float)fv[6], &kv, &meta);
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

static PyObject *py_stack_workspace(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    int64_t iv[2];
    double fv[2];
    if (parse(args, nargs, "ii", iv, fv)) return NULL;
    return PyLong_FromLongLong(stack_workspace(P(0, const int64_t *), iv[1]));
}

static PyObject *py_stack_forward(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    /* model, layers, x, out, tokens, positions, work, eps, scale, meta... */
    int64_t iv[17];
    double fv[17];
    if (parse(args, nargs, "iiiiiiiff" META_FMT, iv, fv)) return NULL;
    attn_meta meta = meta_at(iv, 9);
    Py_BEGIN_ALLOW_THREADS
    stack_forward(P(0, const int64_t *), P(1, const int64_t *), P(2, float *), P(3, float *), iv[4],
                  P(5, const int64_t *), &meta, P(6, float *), (float)fv[7], (float)fv[8]);
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

#define FASTCALL(name, fn, doc) {name, (PyCFunction)(void (*)(void))fn, METH_FASTCALL, doc}
static PyMethodDef methods[] = {
    FASTCALL("linear", py_linear, "packed linear layer"),
    FASTCALL("bounded_argmax", py_bounded_argmax, "greedy tokens from cheap logits and exact candidates (VNNI)"),
    FASTCALL("vnni_pack", py_vnni_pack, "repack int8/int4 weights for the VNNI linear"),
    FASTCALL("rms_norm", py_rms_norm, "RMSNorm of rows"),
    FASTCALL("rotary", py_rotary, "rotate-half rotary embedding in place"),
    FASTCALL("silu_mul", py_silu_mul, "SiLU(gate) * up"),
    FASTCALL("argmax", py_argmax, "first index of each row's largest value"),
    FASTCALL("apply_bitmask", py_apply_bitmask, "logits of tokens a packed grammar bitmask disallows -> -inf, in place"),
    FASTCALL("kv_write", py_kv_write, "write K/V rows into cache slots"),
    FASTCALL("attention", py_attention, "paged causal attention"),
    FASTCALL("stack_workspace", py_stack_workspace, "workspace floats for stack_forward"),
    FASTCALL("stack_forward", py_stack_forward, "every decoder layer of a batch"),
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_cpu_ops", "CPU compute kernels", -1, methods};

PyMODINIT_FUNC PyInit__cpu_ops(void) {
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    PyModule_AddIntConstant(m, "PANEL", PANEL);
    PyModule_AddIntConstant(m, "GROUP", GROUP);
    PyModule_AddIntConstant(m, "VNNI", vnni_supported());
    PyModule_AddStringConstant(m, "LINEAR_FIELDS", LINEAR_FIELDS);
    PyModule_AddStringConstant(m, "MODEL_FIELDS", MODEL_FIELDS);
    PyModule_AddStringConstant(m, "LAYER_FIELDS", LAYER_FIELDS);
    PyModule_AddIntConstant(m, "LAYER_RECORD", L_NUM);
    PyModule_AddIntConstant(m, "MODEL_RECORD", M_NUM);
    return m;
}
