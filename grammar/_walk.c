/* grammar._walk: the token-trie walk behind one DFA state's mask, and byte runs through the DFA.
 *
 * The trie is the vocabulary's flat DFS layout (grammar/trie.py FlatTrie): node i has its last
 * byte, its depth, the index one past its subtree (`end`) and the first sorted-token row of its
 * subtree (`lo`; lo[end[i]] is one past the last).  The DFA is grammar/dfa.py's LazyDfa: rows of
 * `trans` may still be UNKNOWN, in which case the C row builder of grammar/_dfa.c (reached through
 * its capsule, when the LazyDfa has one as `_core`) or else `dfa.prepare(d)` (Python) fills row d
 * and the state's slice id, after which the buffers are fetched again if they were reallocated.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define UNKNOWN (-2)
#define SLICE_UNKNOWN (-2)
#define FLAG_CALLS 1
#define FLAG_FINAL 2
#define MAX_DEPTH 4096

/* The C API of grammar._dfa (the same struct as there): 1 when the tables were reallocated. */
typedef struct {
    int (*row)(PyObject *builder, PyObject *dfa, long d);
    int (*prepare)(PyObject *builder, PyObject *dfa, long d);
    PyTypeObject *type;
} DfaApi;

static const DfaApi *dfa_api(void) {
    static const DfaApi *api = NULL;
    static int tried = 0;
    if (!tried) {
        tried = 1;
        api = PyCapsule_Import("grammar._dfa._C_API", 0);
        if (!api) PyErr_Clear();  /* not built: rows come from Python */
    }
    return api;
}

typedef struct {
    PyObject *dfa;
    Py_buffer trans, flags, slice_of, absorb;
    int held;
    PyObject *core;  /* the LazyDfa's grammar._dfa.Builder, or NULL */
    const DfaApi *api;
} Dfa;

/* Look up the C row builder of the LazyDfa (none: the Python methods are called). */
static int dfa_find_core(Dfa *d) {
    d->api = dfa_api();
    d->core = NULL;
    if (!d->api) return 0;
    PyObject *core = PyObject_GetAttrString(d->dfa, "_core");
    if (!core) { PyErr_Clear(); return 0; }
    if (Py_TYPE(core) == d->api->type) d->core = core;
    else Py_DECREF(core);
    return 0;
}

static void dfa_release(Dfa *d) {
    if (d->held) {
        PyBuffer_Release(&d->trans);
        PyBuffer_Release(&d->flags);
        if (d->held == 1) {
            PyBuffer_Release(&d->slice_of);
            PyBuffer_Release(&d->absorb);
        }
        d->held = 0;
    }
}

static int get_buf(PyObject *obj, const char *name, Py_buffer *view, int writable) {
    PyObject *a = PyObject_GetAttrString(obj, name);
    if (!a) return -1;
    int rc = PyObject_GetBuffer(a, view, writable ? PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS : PyBUF_C_CONTIGUOUS);
    Py_DECREF(a);
    return rc;
}

/* Only trans and flags (the byte runs of `run` need no slices). */
static int dfa_fetch_trans(Dfa *d) {
    dfa_release(d);
    if (get_buf(d->dfa, "trans", &d->trans, 0) < 0) return -1;
    if (get_buf(d->dfa, "flags", &d->flags, 0) < 0) { PyBuffer_Release(&d->trans); return -1; }
    d->held = 2;
    return 0;
}

static int dfa_fetch(Dfa *d) {
    dfa_release(d);
    if (get_buf(d->dfa, "trans", &d->trans, 0) < 0) return -1;
    if (get_buf(d->dfa, "flags", &d->flags, 0) < 0) { PyBuffer_Release(&d->trans); return -1; }
    if (get_buf(d->dfa, "slice_of", &d->slice_of, 0) < 0) {
        PyBuffer_Release(&d->trans); PyBuffer_Release(&d->flags); return -1;
    }
    if (get_buf(d->dfa, "absorb", &d->absorb, 0) < 0) {
        PyBuffer_Release(&d->trans); PyBuffer_Release(&d->flags); PyBuffer_Release(&d->slice_of); return -1;
    }
    d->held = 1;  /* all four buffers */
    return 0;
}

/* Call dfa.<method>(s) in Python (fills row s, and for "prepare" its slice), then refetch the
 * buffers, which the call may have reallocated. */
static int dfa_call(Dfa *d, const char *method, long s) {
    dfa_release(d);
    PyObject *r = PyObject_CallMethod(d->dfa, method, "l", s);
    if (!r) return -1;
    Py_DECREF(r);
    return dfa_fetch(d);
}

/* Fill row s (and for `prepare` its slice): in C when the builder is there, else in Python. */
static int dfa_build(Dfa *d, const char *method, long s, int prepare) {
    if (!d->core) return dfa_call(d, method, s);
    int r = prepare ? d->api->prepare(d->core, d->dfa, s) : d->api->row(d->core, d->dfa, s);
    if (r < 0) return -1;
    return r ? dfa_fetch(d) : 0;
}

static int dfa_prepare(Dfa *d, long s) { return dfa_build(d, "prepare", s, 1); }

#define TRANS(d) ((const int32_t *)(d)->trans.buf)
#define FLAGS(d) ((const uint8_t *)(d)->flags.buf)
#define SLICE(d) ((const int16_t *)(d)->slice_of.buf)
#define ABSORB(d) ((const int32_t *)(d)->absorb.buf)

typedef struct {
    int32_t *data;
    Py_ssize_t len, cap;
} Vec;

static int vec_push3(Vec *v, int32_t a, int32_t b, int32_t c) {
    if (v->len + 3 > v->cap) {
        Py_ssize_t cap = v->cap ? v->cap * 2 : 768;
        int32_t *p = realloc(v->data, cap * sizeof(int32_t));
        if (!p) { PyErr_NoMemory(); return -1; }
        v->data = p;
        v->cap = cap;
    }
    v->data[v->len++] = a;
    v->data[v->len++] = b;
    v->data[v->len++] = c;
    return 0;
}

static inline void set_rows(uint32_t *words, const int32_t *ids, int32_t lo, int32_t hi) {
    for (int32_t r = lo; r < hi; r++) {
        uint32_t t = (uint32_t)ids[r];
        words[t >> 5] |= 1u << (t & 31);
    }
}


/* Pure-slice buffer of one slice id, fetched on first use. */
typedef struct {
    Py_buffer buf;
    int id;
} Pure;

static const uint8_t *pure_get(Pure *p, PyObject *pures, int sl) {
    if (p->id == sl) return p->buf.buf;
    if (p->id >= 0) { PyBuffer_Release(&p->buf); p->id = -1; }
    if (sl >= PyList_GET_SIZE(pures)) { PyErr_SetString(PyExc_IndexError, "slice id"); return NULL; }
    if (PyObject_GetBuffer(PyList_GET_ITEM(pures, sl), &p->buf, PyBUF_C_CONTIGUOUS) < 0) return NULL;
    p->id = sl;
    return p->buf.buf;
}

/* walk(dfa, trie, pures, start, nonempty, words, root_absorb, root_set, root_pure, first_set,
 *      text_set, text_pure) -> int32 triples
 * (token id, byte position, DFA state) of the tokens to check against the stack.
 * trie = (byte uint8[N], depth int32[N], end int32[N], lo int32[N + 1], sorted ids int32[R],
 * height int32[N]); pures = list of uint8[N] per vocabulary slice (1: every byte below the node
 * is in the slice); words = int32[num_words], OR-ed with the tokens consumed entirely inside the
 * DFA. When the start state has a slice (root_absorb > 0; root_set = its bytes, uint8[256];
 * root_pure = its uint8[N] subtree flags from a character boundary), the caller has OR-ed that
 * slice's tokens of at most root_absorb bytes into words, and subtrees made only of them are
 * skipped.  Likewise for tokens whose first byte is in first_set and whose rest is string text
 * (bytes of text_set, subtree flags text_pure). */
static PyObject *walk(PyObject *self, PyObject *args) {
    PyObject *dfa_obj, *trie_obj, *pures;
    long start, root_absorb;
    int nonempty;
    Py_buffer wbuf, rset, rpbuf, fcbuf, fmbuf, fpbuf;
    if (!PyArg_ParseTuple(args, "OO!O!lpw*ly*y*y*y*y*", &dfa_obj, &PyTuple_Type, &trie_obj, &PyList_Type, &pures,
                          &start, &nonempty, &wbuf, &root_absorb, &rset, &rpbuf, &fcbuf, &fmbuf, &fpbuf))
        return NULL;
    if (rset.len != 256 || fcbuf.len != 256 || fmbuf.len != 256) {
        PyBuffer_Release(&wbuf); PyBuffer_Release(&rset); PyBuffer_Release(&rpbuf);
        PyBuffer_Release(&fcbuf); PyBuffer_Release(&fmbuf); PyBuffer_Release(&fpbuf);
        PyErr_SetString(PyExc_ValueError, "byte sets must have 256 bytes");
        return NULL;
    }
    const uint8_t *fc = fcbuf.buf, *fm = fmbuf.buf, *fpure = fpbuf.buf;
    uint32_t *words = (uint32_t *)wbuf.buf;
    Py_buffer tb[6];
    int got = 0;
    PyObject *result = NULL;
    Dfa d = {dfa_obj, {0}, {0}, {0}, {0}, 0, NULL, NULL};
    Vec cands = {NULL, 0, 0};
    Pure pure = {{0}, -1};
    int32_t *st = NULL, *esc_pos = NULL, *esc_st = NULL;
    uint8_t *inroot = NULL, *infc = NULL;
    if (PyTuple_GET_SIZE(trie_obj) != 6) { PyErr_SetString(PyExc_ValueError, "trie must be a 6-tuple"); goto done; }
    for (; got < 6; got++)
        if (PyObject_GetBuffer(PyTuple_GET_ITEM(trie_obj, got), &tb[got], PyBUF_C_CONTIGUOUS) < 0) goto done;
    const uint8_t *tbyte = tb[0].buf;
    const int32_t *tdepth = tb[1].buf, *tend = tb[2].buf, *tlo = tb[3].buf, *ids = tb[4].buf, *theight = tb[5].buf;
    const Py_ssize_t n = tb[0].len;
    st = malloc(MAX_DEPTH * sizeof(int32_t));
    esc_pos = malloc(MAX_DEPTH * sizeof(int32_t));
    esc_st = malloc(MAX_DEPTH * sizeof(int32_t));
    inroot = malloc(MAX_DEPTH);
    infc = malloc(MAX_DEPTH);
    if (!st || !esc_pos || !esc_st || !inroot || !infc) { PyErr_NoMemory(); goto done; }
    if (fpbuf.len < n) { PyErr_SetString(PyExc_ValueError, "first-byte pure flags too short"); goto done; }
    if (dfa_find_core(&d) < 0 || dfa_fetch(&d) < 0) goto done;
    if (SLICE(&d)[start] == SLICE_UNKNOWN && dfa_prepare(&d, start) < 0) goto done;
    const int root_slice = root_absorb > 0 ? SLICE(&d)[start] : -1;
    uint8_t root_set[256] = {0};
    const uint8_t *rpure = NULL;
    if (root_slice >= 0) {
        if (rpbuf.len < n) { PyErr_SetString(PyExc_ValueError, "root_pure too short"); goto done; }
        rpure = rpbuf.buf;
        memcpy(root_set, rset.buf, 256);
    }
    st[0] = (int32_t)start;
    esc_pos[0] = -1;
    esc_st[0] = 0;
    inroot[0] = root_slice >= 0;
    infc[0] = 0;
    Py_ssize_t i = 0;
    while (i < n) {
        const int k = tdepth[i];
        const int32_t p = st[k - 1];
        int32_t t = TRANS(&d)[(Py_ssize_t)p * 256 + tbyte[i]];
        if (t == UNKNOWN) {
            if (dfa_prepare(&d, p) < 0) goto done;
            t = TRANS(&d)[(Py_ssize_t)p * 256 + tbyte[i]];
        }
        const Py_ssize_t e = tend[i];
        if (t < 0) {
            if (esc_pos[k - 1] >= 0)
                for (int32_t r = tlo[i]; r < tlo[e]; r++)
                    if (vec_push3(&cands, ids[r], esc_pos[k - 1], esc_st[k - 1]) < 0) goto done;
            i = e;
            continue;
        }
        const int in_r = inroot[k - 1] && root_set[tbyte[i]];
        if (e == i + 1) {
            set_rows(words, ids, tlo[i], tlo[e]);
            i = e;
            continue;
        }
        set_rows(words, ids, tlo[i], tlo[i + 1]);
        if (in_r && rpure[i] && k + theight[i] <= root_absorb) { i = e; continue; }  /* all in words */
        /* first byte from fc, the rest string text: the caller OR-ed these too */
        const int in_fc = k == 1 ? fc[tbyte[i]] : infc[k - 1] && fm[tbyte[i]];
        if (in_fc && fpure[i]) { i = e; continue; }
        if (SLICE(&d)[t] == SLICE_UNKNOWN && dfa_prepare(&d, t) < 0) goto done;
        const int sl = SLICE(&d)[t];
        if (sl >= 0 && theight[i] <= ABSORB(&d)[t]) {
            const uint8_t *pu = pure_get(&pure, pures, sl);
            if (!pu) goto done;
            if (pu[i]) {
                set_rows(words, ids, tlo[i + 1], tlo[e]);
                i = e;
                continue;
            }
        }
        if (k >= MAX_DEPTH) { i = e; continue; }
        int32_t ep = esc_pos[k - 1], es = esc_st[k - 1];
        const uint8_t f = FLAGS(&d)[t];
        if (ep < 0 && ((f & FLAG_CALLS) || (nonempty && (f & FLAG_FINAL)))) { ep = k; es = t; }
        st[k] = t;
        esc_pos[k] = ep;
        esc_st[k] = es;
        inroot[k] = (uint8_t)in_r;
        infc[k] = (uint8_t)in_fc;
        i++;
    }
    result = PyBytes_FromStringAndSize((const char *)cands.data, cands.len * (Py_ssize_t)sizeof(int32_t));
done:
    if (pure.id >= 0) PyBuffer_Release(&pure.buf);
    dfa_release(&d);
    Py_XDECREF(d.core);
    for (int j = 0; j < got; j++) PyBuffer_Release(&tb[j]);
    PyBuffer_Release(&wbuf);
    PyBuffer_Release(&rset);
    PyBuffer_Release(&rpbuf);
    PyBuffer_Release(&fcbuf);
    PyBuffer_Release(&fmbuf);
    PyBuffer_Release(&fpbuf);
    free(infc);
    free(cands.data);
    free(st);
    free(esc_pos);
    free(esc_st);
    free(inroot);
    return result;
}

/* run(dfa, state, data, pos) -> (state, pos): steps bytes while the state has no calls and is
 * not final (where a pushdown configuration could branch), stopping before such a state's byte;
 * state -1 when a byte is rejected. */
static PyObject *run(PyObject *self, PyObject *args) {
    PyObject *dfa_obj;
    long s;
    Py_buffer data;
    Py_ssize_t pos;
    int stop_final;
    if (!PyArg_ParseTuple(args, "Oly*np", &dfa_obj, &s, &data, &pos, &stop_final)) return NULL;
    Dfa d = {dfa_obj, {0}, {0}, {0}, {0}, 0, NULL, NULL};
    const uint8_t *bytes = data.buf;
    PyObject *result = NULL;
    if (dfa_find_core(&d) < 0 || dfa_fetch_trans(&d) < 0) goto done;
    const uint8_t stop = FLAG_CALLS | (stop_final ? FLAG_FINAL : 0);
    while (pos < data.len) {
        if (FLAGS(&d)[s] & stop) break;
        int32_t t = TRANS(&d)[(Py_ssize_t)s * 256 + bytes[pos]];
        if (t == UNKNOWN) {
            if (d.core) {
                int r = d.api->row(d.core, d.dfa, s);
                if (r < 0 || (r && dfa_fetch_trans(&d) < 0)) goto done;
            } else if (dfa_call(&d, "compute_row", s) < 0 || dfa_fetch_trans(&d) < 0) goto done;
            t = TRANS(&d)[(Py_ssize_t)s * 256 + bytes[pos]];
        }
        if (t < 0) { s = -1; break; }
        s = t;
        pos++;
    }
    result = Py_BuildValue("ln", s, pos);
done:
    dfa_release(&d);
    Py_XDECREF(d.core);
    PyBuffer_Release(&data);
    return result;
}

static PyMethodDef methods[] = {
    {"walk", walk, METH_VARARGS, "Walk the token trie from one DFA state (see the module source)."},
    {"run", run, METH_VARARGS, "Step bytes through the DFA until a branching state."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_walk", "Token-trie walk and DFA byte runs.", -1, methods};

PyMODINIT_FUNC PyInit__walk(void) { return PyModule_Create(&module); }
