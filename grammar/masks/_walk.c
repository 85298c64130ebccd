/* grammar.masks._walk: one DFA state's token mask from a walk of the vocabulary trie, and byte runs
 * through the DFA (its Python reference, with the same functions: grammar/masks/walk_ref.py).
 *
 * A Tables object (one per vocabulary, made by grammar/masks/index.py) holds raw pointers into
 * the vocabulary's arrays, so a mask call looks nothing up by attribute: the flat trie
 * (grammar/masks/trie.py FlatTrie: node i has its last byte, its depth, the index one past its
 * subtree `end` and the first sorted-token row of its subtree `lo`; lo[end[i]] is one past the
 * last), the token slices (grammar/masks/slices.py) and the string-text tokens by first byte.  The
 * DFA is grammar/automaton/dfa.py's LazyDfa: rows of `trans` may still be UNKNOWN; the C row
 * builder of grammar/automaton/_dfa.c (reached through its capsule when the LazyDfa's `builder` is
 * one) fills them and hands back the tables' pointers, else `dfa.prepare(d)` (Python) does and
 * the buffers are fetched again.  The few steps that stay in Python (the UTF-8 upgrade of a text
 * state, a bounded slice's words) are method calls on the LazyDfa and on the token index
 * (grammar/masks/index.py) passed to each call as `vocab`.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "grammar_core.h"
#include "sort.h"
#include "vec.h"

#define STACK_DEPTH 1024  /* tries at most this deep keep the walk's per-depth arrays on the C stack */
#define MAX_UPTO 65       /* bounded absorb lengths whose slice words are kept */

/* ---- the DFA: grammar.automaton._dfa's C API (grammar/include/grammar_core.h) ---- */

static const DfaApi *dfa_api(void) {
    static const DfaApi *api = NULL;
    static int tried = 0;
    if (!tried) {
        tried = 1;
        api = PyCapsule_Import(DFA_CAPSULE, 0);
        if (!api) PyErr_Clear();  /* not built: rows come from Python */
    }
    return api;
}

#define NUM_VIEWS 5
static const char *VIEW_NAMES[NUM_VIEWS] = {"trans", "flags", "slice_of", "absorb", "dominant"};

/* One LazyDfa during one call: its C builder (or NULL) and the current table pointers. */
typedef struct {
    PyObject *dfa;   /* borrowed */
    PyObject *core;  /* new reference to the LazyDfa's grammar._dfa.Builder, or NULL */
    const DfaApi *api;
    DfaTables t;
    Py_buffer views[NUM_VIEWS];  /* without a builder: the tables as buffers */
    int held;
} Dfa;

static void dfa_release(Dfa *d) {
    if (d->held) {
        for (int i = 0; i < NUM_VIEWS; i++) PyBuffer_Release(&d->views[i]);
        d->held = 0;
    }
}

/* Take the current table pointers (after a row or a Python call may have reallocated them). */
static int dfa_refresh(Dfa *d) {
    if (d->core) return d->api->tables(d->core, d->dfa, &d->t);
    dfa_release(d);
    for (int i = 0; i < NUM_VIEWS; i++) {
        PyObject *a = PyObject_GetAttrString(d->dfa, VIEW_NAMES[i]);
        int rc = a ? PyObject_GetBuffer(a, &d->views[i], PyBUF_C_CONTIGUOUS) : -1;
        Py_XDECREF(a);
        if (rc < 0) {
            for (int j = 0; j < i; j++) PyBuffer_Release(&d->views[j]);
            return -1;
        }
    }
    d->held = 1;
    d->t.trans = d->views[0].buf;
    d->t.flags = d->views[1].buf;
    d->t.slice_of = d->views[2].buf;
    d->t.absorb = d->views[3].buf;
    d->t.dominant = d->views[4].buf;
    PyObject *n = PyObject_GetAttrString(d->dfa, "num_states");
    d->t.num_states = n ? PyLong_AsSsize_t(n) : -1;
    Py_XDECREF(n);
    if (d->t.num_states < 0) { dfa_release(d); return -1; }
    return 0;
}

/* 1 when s is a state of the DFA (rows built since the last refresh may have added states), 0
 * (IndexError set) when not, -1 on another error. */
static int dfa_has(Dfa *d, long s) {
    if (s >= d->t.num_states && s >= 0 && dfa_refresh(d) < 0) return -1;
    if (s >= 0 && s < d->t.num_states) return 1;
    PyErr_SetString(PyExc_IndexError, "DFA state out of range");
    return 0;
}

static int dfa_open(Dfa *d, PyObject *dfa) {
    memset(d, 0, sizeof(*d));
    d->dfa = dfa;
    d->api = dfa_api();
    if (d->api) {
        static PyObject *name = NULL;
        if (!name && !(name = PyUnicode_InternFromString("builder"))) return -1;
        PyObject *core = PyObject_GetAttr(dfa, name);
        if (!core) PyErr_Clear();
        else if (Py_TYPE(core) == d->api->type) d->core = core;
        else Py_DECREF(core);
    }
    return dfa_refresh(d);
}

static void dfa_close(Dfa *d) {
    dfa_release(d);
    Py_CLEAR(d->core);
}

/* Fill row s and, with `prepare`, its slice id and absorb length: in C when the builder is
 * there, else through the LazyDfa's Python methods. */
static int dfa_build(Dfa *d, long s, int prepare) {
    if (d->core) {
        int r = prepare ? d->api->prepare(d->core, d->dfa, s) : d->api->row(d->core, d->dfa, s);
        if (r < 0) return -1;
        return r ? dfa_refresh(d) : 0;
    }
    dfa_release(d);
    PyObject *r = PyObject_CallMethod(d->dfa, prepare ? "prepare" : "compute_row", "l", s);
    if (!r) return -1;
    Py_DECREF(r);
    return dfa_refresh(d);
}

enum { UPGRADE_TO_UTF8, UTF8_TO, TEXT_CLOSED };
static const char *CALL_NAMES[] = {"upgrade_to_utf8", "utf8_to", "text_closed"};

/* *out = dfa.<op>(a[, b]) as an integer (a bool counts), for upgrade_to_utf8, utf8_to (a, b) and
 * text_closed: in C when the builder is there, else in Python; the tables are taken again after. */
static int dfa_call(Dfa *d, int op, long a, long b, long *out) {
    if (d->core) {
        int r = op == UPGRADE_TO_UTF8 ? d->api->upgrade(d->core, d->dfa, a, out)
              : op == UTF8_TO         ? d->api->utf8_to(d->core, d->dfa, a, b, out)
                                      : d->api->text_closed(d->core, d->dfa, a, out);
        if (r < 0) return -1;
        return r ? dfa_refresh(d) : 0;
    }
    dfa_release(d);
    PyObject *r = op == UTF8_TO ? PyObject_CallMethod(d->dfa, CALL_NAMES[op], "ll", a, b)
                                : PyObject_CallMethod(d->dfa, CALL_NAMES[op], "l", a);
    if (!r) return -1;
    *out = PyLong_AsLong(r);
    Py_DECREF(r);
    if (*out == -1 && PyErr_Occurred()) return -1;
    return dfa_refresh(d);
}

/* ---- the vocabulary's tables ---- */

/* A token trie in flat DFS order (grammar/masks/trie.py FlatTrie) and each node's children side by side. */
typedef struct {
    const uint8_t *tbyte;
    const int32_t *tdepth, *tend, *tlo, *ids, *theight;
    Py_ssize_t num_nodes;
    Py_ssize_t base;   /* node i is named base + i in escapes: the tries of a Tables number their nodes in turn */
    int max_depth;
    uint32_t *kids;    /* [num_nodes] (child node << 8) | its byte, grouped by parent (root first) */
    int32_t *kid_off;  /* [num_nodes + 2] the root's children are kids[kid_off[0]:kid_off[1]], node i's from kid_off[i + 1] */
} Trie;

#define NUM_RESTS 6
#define OUTSIDE 4  /* rest[OUTSIDE]: the tokens not in the slice, whole */
#define LONG 5     /* rest[LONG]: the tokens with more than long_min characters of slice prefix, whole */

typedef struct {
    uint8_t set[256];               /* bytes a token of the slice may hold */
    const uint8_t *pure, *root_pure;  /* uint8 [num_nodes]: every byte below the node is in the slice */
    const uint32_t *words;          /* the slice's tokens */
    const int32_t *char_max, *char_depth;  /* UTF-8 slices (NULL: characters are bytes): per node the most
                                     * characters of a token below, and of its prefix (a bounded run
                                     * of the slice counts characters) */
    const uint32_t *upto[MAX_UPTO]; /* its tokens of at most k characters (from Python, on first use) */
    Trie rest[NUM_RESTS];           /* tokens not in the slice by what follows their longest prefix of
                                     * slice characters: [0] with none (the whole token), [1] with
                                     * some, [2] those of [1] with an ASCII first byte, keyed by it
                                     * and then the rest, [3] those of [1] keyed by the number of
                                     * characters of that prefix (a byte) and then the rest; [4] all
                                     * of them, whole; [5] the tokens, in the slice or not, with more
                                     * than long_min characters of it first, whole (num_nodes -1:
                                     * none; grammar/masks/rest_trie.py) */
    long long_min;
    int32_t keyed_child[128];       /* the node of rest[2] for first byte b, or -1 */
    int32_t run_child[256];         /* the node of rest[3] for a prefix of j characters, or -1 */
    const uint8_t *run_max;         /* per trie node: the most characters of such a prefix below it
                                     * (a token of the slice: all of them; at most 255), with rest[3] */
} Slice;

typedef struct {
    PyObject_HEAD
    Py_buffer *views;  /* every buffer pointed into, held until dealloc */
    Py_ssize_t num_views;
    Trie trie;
    Py_ssize_t num_words, all_nodes;  /* all_nodes: of the trie and the rest tries */
    int num_slices, ascii_id, text_id;
    Slice *slices;
    uint8_t text_first[128];          /* ASCII bytes a string's first character may be */
    const int32_t *first_ids, *first_off;  /* tokens b + text by first byte b: [first_off[b], first_off[b + 1]) */
    const uint32_t *rest_words, *multi_first_words;
} Tables;

/* Hold a buffer of `obj` with items of `itemsize` bytes, at least `min_len` of them (-1: none). */
static const void *take(Tables *tb, PyObject *obj, Py_ssize_t itemsize, Py_ssize_t min_len, Py_ssize_t *len) {
    Py_buffer *v = PyMem_Realloc(tb->views, (tb->num_views + 1) * sizeof(Py_buffer));
    if (!v) { PyErr_NoMemory(); return NULL; }
    tb->views = v;
    v = &tb->views[tb->num_views];
    if (PyObject_GetBuffer(obj, v, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) return NULL;
    tb->num_views++;
    Py_ssize_t n = v->len / (v->itemsize ? v->itemsize : 1);
    if (v->itemsize != itemsize || n < min_len) {
        PyErr_Format(PyExc_ValueError, "walk table: want %zd-byte items (at least %zd), got %zd-byte items (%zd)",
                     itemsize, min_len, v->itemsize, n);
        return NULL;
    }
    if (len) *len = n;
    return v->buf;
}

/* Each node's children listed side by side: the walk tries every child byte of a node without
 * touching the children themselves, which lie a subtree apart in the DFS arrays. */
static int trie_kids(Trie *tb) {
    const Py_ssize_t n = tb->num_nodes;
    if (n >= (1 << 24)) { PyErr_SetString(PyExc_ValueError, "trie too large"); return -1; }
    int32_t *parent = PyMem_Malloc((n ? n : 1) * sizeof(int32_t)), *last = PyMem_Malloc((tb->max_depth + 1) * sizeof(int32_t));
    tb->kids = PyMem_Malloc((n ? n : 1) * sizeof(uint32_t));
    tb->kid_off = PyMem_Calloc(n + 2, sizeof(int32_t));
    if (!parent || !last || !tb->kids || !tb->kid_off) {
        PyMem_Free(parent);
        PyMem_Free(last);
        PyErr_NoMemory();
        return -1;
    }
    last[0] = 0;  /* slot 0: the root; node i is slot i + 1 */
    for (Py_ssize_t i = 0; i < n; i++) {
        parent[i] = last[tb->tdepth[i] - 1];
        last[tb->tdepth[i]] = (int32_t)i + 1;
        tb->kid_off[parent[i] + 1]++;
    }
    for (Py_ssize_t j = 0; j <= n; j++) tb->kid_off[j + 1] += tb->kid_off[j];
    PyMem_Free(last);
    int32_t *cursor = PyMem_Malloc((n + 1) * sizeof(int32_t));
    if (!cursor) { PyMem_Free(parent); PyErr_NoMemory(); return -1; }
    memcpy(cursor, tb->kid_off, (n + 1) * sizeof(int32_t));
    for (Py_ssize_t i = 0; i < n; i++) tb->kids[cursor[parent[i]]++] = ((uint32_t)i << 8) | tb->tbyte[i];
    PyMem_Free(cursor);
    PyMem_Free(parent);
    return 0;
}

/* Hold the six FlatTrie arrays of `arrays` as tr and list each node's children. */
static int take_trie(Tables *tb, Trie *tr, PyObject *arrays) {
    if (!PyTuple_Check(arrays) || PyTuple_GET_SIZE(arrays) != 6) { PyErr_SetString(PyExc_ValueError, "trie must be a 6-tuple"); return -1; }
    Py_ssize_t n, rows;
    if (!(tr->tbyte = take(tb, PyTuple_GET_ITEM(arrays, 0), 1, 0, &n))) return -1;
    tr->num_nodes = n;
    if (!(tr->tdepth = take(tb, PyTuple_GET_ITEM(arrays, 1), 4, n, NULL))) return -1;
    if (!(tr->tend = take(tb, PyTuple_GET_ITEM(arrays, 2), 4, n, NULL))) return -1;
    if (!(tr->tlo = take(tb, PyTuple_GET_ITEM(arrays, 3), 4, n + 1, NULL))) return -1;
    if (!(tr->ids = take(tb, PyTuple_GET_ITEM(arrays, 4), 4, 0, &rows))) return -1;
    if (!(tr->theight = take(tb, PyTuple_GET_ITEM(arrays, 5), 4, n, NULL))) return -1;
    tr->max_depth = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (tr->tdepth[i] < 1 || tr->tend[i] <= i || tr->tend[i] > n || (i == 0 && tr->tdepth[i] != 1)
            || (i > 0 && tr->tdepth[i] > tr->tdepth[i - 1] + 1) || tr->tlo[i] < 0 || tr->tlo[i] > rows
            || tr->tlo[i] > tr->tlo[i + 1] || tr->theight[i] < 0) {
            PyErr_SetString(PyExc_ValueError, "malformed flat trie");
            return -1;
        }
        if (tr->tdepth[i] > tr->max_depth) tr->max_depth = tr->tdepth[i];
    }
    if (tr->tlo[n] > rows) { PyErr_SetString(PyExc_ValueError, "malformed flat trie"); return -1; }
    for (Py_ssize_t r = 0; r < rows; r++)
        if (tr->ids[r] < 0 || tr->ids[r] >= tb->num_words * 32) { PyErr_SetString(PyExc_ValueError, "token id out of range"); return -1; }
    return trie_kids(tr);
}

static int tables_slices(Tables *tb, PyObject *slices) {
    if (!PyTuple_Check(slices)) { PyErr_SetString(PyExc_TypeError, "slices must be a tuple"); return -1; }
    tb->num_slices = (int)PyTuple_GET_SIZE(slices);
    tb->slices = PyMem_Calloc(tb->num_slices ? tb->num_slices : 1, sizeof(Slice));
    if (!tb->slices) { PyErr_NoMemory(); return -1; }
    for (int s = 0; s < tb->num_slices; s++) {
        PyObject *item = PyTuple_GET_ITEM(slices, s);
        Slice *sl = &tb->slices[s];
        if (!PyTuple_Check(item) || (PyTuple_GET_SIZE(item) != 4 && PyTuple_GET_SIZE(item) != 6)) {
            PyErr_SetString(PyExc_ValueError, "slice must be a 4-tuple or a 6-tuple");
            return -1;
        }
        const uint8_t *set = take(tb, PyTuple_GET_ITEM(item, 0), 1, 256, NULL);
        if (!set) return -1;
        memcpy(sl->set, set, 256);
        for (int r = 0; r < NUM_RESTS; r++) sl->rest[r].num_nodes = -1;
        for (int b = 0; b < 128; b++) sl->keyed_child[b] = -1;
        for (int j = 0; j < 256; j++) sl->run_child[j] = -1;
        if (!(sl->pure = take(tb, PyTuple_GET_ITEM(item, 1), 1, tb->trie.num_nodes, NULL))) return -1;
        if (!(sl->root_pure = take(tb, PyTuple_GET_ITEM(item, 2), 1, tb->trie.num_nodes, NULL))) return -1;
        if (!(sl->words = take(tb, PyTuple_GET_ITEM(item, 3), 4, tb->num_words, NULL))) return -1;
        if (PyTuple_GET_SIZE(item) == 6) {
            if (!(sl->char_max = take(tb, PyTuple_GET_ITEM(item, 4), 4, tb->trie.num_nodes, NULL))) return -1;
            if (!(sl->char_depth = take(tb, PyTuple_GET_ITEM(item, 5), 4, tb->trie.num_nodes, NULL))) return -1;
        }
    }
    return 0;
}

static int tables_text(Tables *tb, PyObject *text) {
    if (!PyTuple_Check(text) || PyTuple_GET_SIZE(text) != 7) { PyErr_SetString(PyExc_ValueError, "text must be a 7-tuple"); return -1; }
    tb->ascii_id = (int)PyLong_AsLong(PyTuple_GET_ITEM(text, 0));
    tb->text_id = (int)PyLong_AsLong(PyTuple_GET_ITEM(text, 1));
    if (PyErr_Occurred()) return -1;
    if (tb->text_id < 0 || tb->text_id >= tb->num_slices) { PyErr_SetString(PyExc_ValueError, "text slice id"); return -1; }
    const uint8_t *first = take(tb, PyTuple_GET_ITEM(text, 2), 1, 128, NULL);
    if (!first) return -1;
    memcpy(tb->text_first, first, 128);
    Py_ssize_t num_first;
    if (!(tb->first_ids = take(tb, PyTuple_GET_ITEM(text, 3), 4, 0, &num_first))) return -1;
    if (!(tb->first_off = take(tb, PyTuple_GET_ITEM(text, 4), 4, 129, NULL))) return -1;
    for (int b = 0; b < 128; b++)
        if (tb->first_off[b] < 0 || tb->first_off[b] > tb->first_off[b + 1] || tb->first_off[b + 1] > num_first) {
            PyErr_SetString(PyExc_ValueError, "first-byte offsets");
            return -1;
        }
    for (Py_ssize_t i = 0; i < num_first; i++)
        if (tb->first_ids[i] < 0 || tb->first_ids[i] >= tb->num_words * 32) { PyErr_SetString(PyExc_ValueError, "token id out of range"); return -1; }
    if (!(tb->rest_words = take(tb, PyTuple_GET_ITEM(text, 5), 4, tb->num_words, NULL))) return -1;
    if (!(tb->multi_first_words = take(tb, PyTuple_GET_ITEM(text, 6), 4, tb->num_words, NULL))) return -1;
    return 0;
}

/* Each (slice id, four FlatTrie arrays or None) of `rests`: that slice's rest tries. */
static int tables_rests(Tables *tb, PyObject *rests) {
    if (!PyTuple_Check(rests)) { PyErr_SetString(PyExc_TypeError, "rests must be a tuple"); return -1; }
    uint8_t *done = PyMem_Calloc(tb->num_slices ? tb->num_slices : 1, 1);
    if (!done) { PyErr_NoMemory(); return -1; }
    int rc = 0;
    for (Py_ssize_t j = 0; rc == 0 && j < PyTuple_GET_SIZE(rests); j++) {
        PyObject *item = PyTuple_GET_ITEM(rests, j);
        const Py_ssize_t size = PyTuple_Check(item) ? PyTuple_GET_SIZE(item) : 0;
        if (size != 6 && size != 7 && size != 9) {
            PyErr_SetString(PyExc_ValueError, "rest must be (slice id, trie, trie, trie, trie, run_max[, trie[, trie, long_min]]), "
                                              "each but the id and long_min may be None");
            rc = -1;
            break;
        }
        const long sid = PyLong_AsLong(PyTuple_GET_ITEM(item, 0));
        if (sid == -1 && PyErr_Occurred()) { rc = -1; break; }
        if (sid < 0 || sid >= tb->num_slices || done[sid]) {
            PyErr_SetString(PyExc_ValueError, "rest trie: bad or repeated slice id");
            rc = -1;
            break;
        }
        done[sid] = 1;
        Slice *sl = &tb->slices[sid];
        sl->long_min = size == 9 ? PyLong_AsLong(PyTuple_GET_ITEM(item, 8)) : 0;
        if (sl->long_min == -1 && PyErr_Occurred()) { rc = -1; break; }
        for (int r = 0; r < NUM_RESTS; r++) {
            Trie *tr = &sl->rest[r];
            const Py_ssize_t at = r < OUTSIDE ? 1 + r : r == OUTSIDE ? 6 : 7;  /* (run_max sits before the whole ones) */
            if (at >= PyTuple_GET_SIZE(item)) continue;
            PyObject *arrays = PyTuple_GET_ITEM(item, at);
            if (arrays == Py_None) continue;
            tr->base = tb->all_nodes;
            if (take_trie(tb, tr, arrays) < 0 || tr->max_depth > tb->trie.max_depth) {
                if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "rest trie deeper than the trie");
                for (int q = 0; q < NUM_RESTS; q++) sl->rest[q].num_nodes = -1;  /* kids already listed are freed at dealloc */
                rc = -1;
                break;
            }
            tb->all_nodes += tr->num_nodes;
        }
        if (rc < 0) break;
        if ((PyTuple_GET_ITEM(item, 5) == Py_None) != (sl->rest[3].num_nodes < 0)) {
            PyErr_SetString(PyExc_ValueError, "run_max comes with the run trie");
            rc = -1;
            break;
        }
        if (PyTuple_GET_ITEM(item, 5) != Py_None && !(sl->run_max = take(tb, PyTuple_GET_ITEM(item, 5), 1, tb->trie.num_nodes, NULL))) {
            rc = -1;
            break;
        }
        const Trie *keyed = &sl->rest[2], *run = &sl->rest[3];
        if (keyed->num_nodes > 0)
            for (int32_t k = keyed->kid_off[0]; k < keyed->kid_off[1]; k++)
                if ((keyed->kids[k] & 255) < 128) sl->keyed_child[keyed->kids[k] & 255] = (int32_t)(keyed->kids[k] >> 8);
        if (run->num_nodes > 0)
            for (int32_t k = run->kid_off[0]; k < run->kid_off[1]; k++) sl->run_child[run->kids[k] & 255] = (int32_t)(run->kids[k] >> 8);
    }
    PyMem_Free(done);
    return rc;
}

/* Tables(num_words, trie, slices, text[, rests]): see grammar/masks/index.py `_walk_tables` for the fields. */
static int tables_init(Tables *tb, PyObject *args, PyObject *kw) {
    PyObject *trie, *slices, *text, *rests = NULL;
    Py_ssize_t num_words;
    if (!PyArg_ParseTuple(args, "nOOO|O", &num_words, &trie, &slices, &text, &rests)) return -1;
    if (tb->views) { PyErr_SetString(PyExc_RuntimeError, "Tables already initialized"); return -1; }
    tb->num_words = num_words;
    if (take_trie(tb, &tb->trie, trie) < 0 || tables_slices(tb, slices) < 0 || tables_text(tb, text) < 0) return -1;
    tb->all_nodes = tb->trie.num_nodes;
    return rests ? tables_rests(tb, rests) : 0;
}

static void tables_dealloc(Tables *tb) {
    for (Py_ssize_t i = 0; i < tb->num_views; i++) PyBuffer_Release(&tb->views[i]);
    PyMem_Free(tb->views);
    for (int s = 0; s < tb->num_slices; s++) {
        for (int r = 0; r < NUM_RESTS; r++) {
            PyMem_Free(tb->slices[s].rest[r].kids);
            PyMem_Free(tb->slices[s].rest[r].kid_off);
        }
    }
    PyMem_Free(tb->slices);
    PyMem_Free(tb->trie.kids);
    PyMem_Free(tb->trie.kid_off);
    Py_TYPE(tb)->tp_free((PyObject *)tb);
}

static PyMemberDef tables_members[] = {
    {"all_nodes", T_PYSSIZET, offsetof(Tables, all_nodes), READONLY, "nodes of the trie and of the rest tries"},
    {NULL},
};

static PyTypeObject TablesType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "grammar._walk.Tables",
    .tp_basicsize = sizeof(Tables),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Tables(num_words, trie, slices, text): a vocabulary's arrays for the mask walk.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)tables_init,
    .tp_dealloc = (destructor)tables_dealloc,
    .tp_members = tables_members,
};

/* Copy into words slice s's tokens of at most `absorb` bytes: the whole slice, or
 * vocab.slice_list[s].words_upto(absorb) (kept after the first call). */
static int slice_words(Tables *tb, Dfa *d, PyObject *vocab, int s, long absorb, uint32_t *words) {
    Slice *sl = &tb->slices[s];
    const Py_ssize_t size = tb->num_words * sizeof(uint32_t);
    const uint32_t *src = absorb >= tb->trie.max_depth ? sl->words : absorb < MAX_UPTO ? sl->upto[absorb] : NULL;
    if (src) {
        memcpy(words, src, size);
        return 0;
    }
    dfa_release(d);
    PyObject *lst = PyObject_GetAttrString(vocab, "slice_list"), *arr = NULL;
    PyObject *item = lst ? PySequence_GetItem(lst, s) : NULL;
    if (item) arr = PyObject_CallMethod(item, "words_upto", "l", absorb);
    Py_XDECREF(lst);
    Py_XDECREF(item);
    if (!arr) return -1;
    if (absorb < MAX_UPTO) {  /* the held buffer keeps the array */
        src = sl->upto[absorb] = take(tb, arr, 4, tb->num_words, NULL);
        if (src) memcpy(words, src, size);
    } else {
        Py_buffer view;
        if (PyObject_GetBuffer(arr, &view, PyBUF_C_CONTIGUOUS) == 0) {
            if (view.len == size) { memcpy(words, view.buf, size); src = words; }
            else PyErr_SetString(PyExc_ValueError, "words_upto: wrong length");
            PyBuffer_Release(&view);
        }
    }
    Py_DECREF(arr);
    return src && dfa_refresh(d) == 0 ? 0 : -1;
}

/* ---- the walk ---- */


/* Push the escape (position, state, node) unless it is the last one pushed: the sibling
 * subtrees that die below one escape come one after another. */
static int vec_push_escape(Vec *v, int32_t pos, int32_t st, int32_t node) {
    if (v->len && v->data[v->len - 3] == pos && v->data[v->len - 2] == st && v->data[v->len - 1] == node) return 0;
    if (vec_reserve(v, 3) < 0) return -1;
    v->data[v->len++] = pos;
    v->data[v->len++] = st;
    v->data[v->len++] = node;
    return 0;
}

/* Push (state t, length of a token ending there), or raise the length when t was the last pushed
 * (ends are deduplicated by distinct_states). */
static int vec_push_end(Vec *v, int32_t t, int32_t len) {
    if (!v) return 0;
    if (v->len && v->data[v->len - 2] == t) {
        if (len > v->data[v->len - 1]) v->data[v->len - 1] = len;
        return 0;
    }
    if (vec_reserve(v, 2) < 0) return -1;
    v->data[v->len++] = t;
    v->data[v->len++] = len;
    return 0;
}

static inline void set_rows(uint32_t *words, const int32_t *ids, int32_t lo, int32_t hi) {
    for (int32_t r = lo; r < hi; r++) {
        uint32_t t = (uint32_t)ids[r];
        words[t >> 5] |= 1u << (t & 31);
    }
}

/* Where the walk starts: a slice the start state absorbs (its tokens of at most `absorb` bytes
 * already in words) and the first bytes b whose tokens b + text are already in words. */
typedef struct {
    const uint8_t *root_set, *root_pure;  /* NULL: no slice */
    const int32_t *root_chars;  /* the slice's char_max (NULL: count bytes) */
    long absorb;
    int exact;  /* the slice run ends after `absorb` characters: no slice character goes on from there */
    uint8_t fc[256];
    uint8_t pre[128];    /* ASCII first bytes whose `b + text` tokens text_first put in words though b does not go
                          * to its target: the walk below b clears those that die (a declared key's first letter) */
    const Slice *keyed;  /* text_first's slice when it has rest tries: its ASCII first bytes' subtrees are */
    long fc_target;      /* skipped, their tokens taken by text_first or by rest[2] below fc from this state */
    long run;            /* a bounded run's length (run_walk took its rests): subtrees on the slice whose tokens'
                          * prefixes of slice characters all have at most this many are skipped (0: none) */
    const uint8_t *run_max;  /* the slice's run_max */
    int run_utf8;        /* ...and the tokens of first bytes outside the slice (rest[0] took them) */
} Start;

/* The slice of state x, upgraded to UTF-8 string text by the LazyDfa when it is the ASCII one. */
static int state_slice(Tables *tb, Dfa *d, long x, long *sl) {
    if (d->t.slice_of[x] == SLICE_UNKNOWN && dfa_build(d, x, 1) < 0) return -1;
    *sl = d->t.slice_of[x];
    if (*sl == tb->ascii_id) return dfa_call(d, UPGRADE_TO_UTF8, x, 0, sl);
    return 0;
}

/* A state sending most string-text bytes to a state that loops on string text (the first
 * character of a string, or of an extra property name): OR in the tokens `b + text` for those
 * first bytes b and mark them in start->fc (and the bytes 0x80.. when every multi-byte first
 * character goes there too).  Row s is built. */
static int text_first(Tables *tb, Dfa *d, long s, uint32_t *words, Start *start, Vec *ends) {
    const int32_t target = d->t.dominant[s];
    long sl;
    if (target < 0) return 0;
    if (state_slice(tb, d, target, &sl) < 0) return -1;
    if (sl != tb->text_id) return 0;
    const int32_t *row = d->t.trans + (Py_ssize_t)s * 256;
    Py_ssize_t taken = 0, missing = 0;  /* tokens under the bytes that go / do not go to target */
    for (int b = 0; b < 128; b++) {
        if (!tb->text_first[b]) continue;
        const Py_ssize_t n = tb->first_off[b + 1] - tb->first_off[b];
        if (row[b] == target) { start->fc[b] = 1; taken += n + 1; }
        else missing += n + 1;
    }
    if (!taken) return 0;
    if (vec_push_end(ends, target, tb->trie.max_depth) < 0) return -1;  /* long tokens: b + text */
    if (tb->slices[tb->text_id].rest[2].num_nodes >= 0 && !(d->t.flags[target] & (FLAG_CALLS | FLAG_FINAL))) {
        start->keyed = &tb->slices[tb->text_id];  /* (string text neither calls nor returns) */
        start->fc_target = target;
    }
    const Py_ssize_t num_words = tb->num_words;
    if (!missing) {
        for (Py_ssize_t w = 0; w < num_words; w++) words[w] |= tb->rest_words[w];
    } else if (taken > 2 * num_words + missing && !start->root_set) {
        /* all of them, and the walk below each missing byte clears those that die there (words
         * held nothing else: no start slice) */
        memcpy(words, tb->rest_words, num_words * sizeof(uint32_t));
        for (int b = 0; b < 128; b++) start->pre[b] = tb->text_first[b] && !start->fc[b];
    } else if (taken > 2 * num_words + missing) {  /* all of them minus the missing bytes' tokens */
        uint32_t *tmp = malloc(num_words * sizeof(uint32_t));
        if (!tmp) { PyErr_NoMemory(); return -1; }
        memcpy(tmp, tb->rest_words, num_words * sizeof(uint32_t));
        for (int b = 0; b < 128; b++)
            if (tb->text_first[b] && !start->fc[b])
                for (int32_t i = tb->first_off[b]; i < tb->first_off[b + 1]; i++)
                    tmp[tb->first_ids[i] >> 5] &= ~(1u << (tb->first_ids[i] & 31));
        for (Py_ssize_t w = 0; w < num_words; w++) words[w] |= tmp[w];
        free(tmp);
    } else {
        for (int b = 0; b < 128; b++)
            if (start->fc[b]) set_rows(words, tb->first_ids, tb->first_off[b], tb->first_off[b + 1]);
    }
    long multi;
    if (dfa_call(d, UTF8_TO, s, target, &multi) < 0) return -1;
    if (multi) {  /* a first character of several bytes goes there too */
        for (Py_ssize_t w = 0; w < num_words; w++) words[w] |= tb->multi_first_words[w];
        memset(start->fc + 128, 1, 128);
    }
    return 0;
}

/* Per trie depth k (max_depth + 1 of each), during one walk: the state after k bytes, where a
 * call/return was first possible (position, state), the node at depth k, the cursor and end in
 * the child list being tried, and whether the prefix is still in the start slice / in the text
 * after a first byte. */
/* (ws: the whitespace bytes counted at st's gap state, see ws_step) */
typedef struct {
    int32_t *st, *esc_pos, *esc_done, *nd, *cur, *lim, *ws;
    uint8_t *inroot, *infc, *inpre;
} Scratch;

#define SCRATCH_INTS 7

/* A Scratch's memory: on the C stack for tries up to STACK_DEPTH deep, else malloc-ed. */
typedef struct {
    Scratch sc;
    int32_t *ints;
    uint8_t *flags;
    int32_t ints_buf[SCRATCH_INTS * STACK_DEPTH];
    uint8_t flags_buf[3 * STACK_DEPTH];
} ScratchMem;

static int scratch_open(ScratchMem *m, int depth) {
    m->ints = m->ints_buf;
    m->flags = m->flags_buf;
    if (depth > STACK_DEPTH) {
        m->ints = malloc(SCRATCH_INTS * depth * sizeof(int32_t));
        m->flags = malloc(3 * depth);
        if (!m->ints || !m->flags) {
            if (m->ints) free(m->ints);
            if (m->flags) free(m->flags);
            m->ints = m->ints_buf;
            m->flags = m->flags_buf;
            PyErr_NoMemory();
            return -1;
        }
    }
    int32_t *i = m->ints;
    m->sc = (Scratch){i, i + depth, i + 2 * depth, i + 3 * depth, i + 4 * depth, i + 5 * depth, i + 6 * depth, m->flags,
                      m->flags + depth, m->flags + 2 * depth};
    return 0;
}

static void scratch_close(ScratchMem *m) {
    if (m->ints != m->ints_buf) free(m->ints);
    if (m->flags != m->flags_buf) free(m->flags);
}

/* A whitespace byte from p (a bounded gap's state, grammar/automaton/_dfa.c ws_run_of: its row is
 * the gap's other states' but for tab, newline and space, which lead to the next count's state):
 * counted instead of stepped, so that a token's whitespace run passes no new state and builds no
 * row (flexible JSON's gaps are 25 states, once built by the first walks through them).  Every
 * count's state has p's calls, returns and flags (the chain's NFA states have none), so an escape
 * made at p stands for one made at the state it counts for.  1 with *t = p (p stands for the
 * state after `count` whitespace bytes) or DEAD past the bound; 0 when p is no such state (then
 * stepped); -1 on error. */
static inline int ws_step(Dfa *d, int32_t p, int32_t count, int32_t *t) {
    if (!d->core) return 0;
    const int32_t *row = d->t.trans + (Py_ssize_t)p * 256, next = row[' '];
    if (row[0] != UNKNOWN && (next < 0 || next == p || row['\t'] != next || row['\n'] != next))
        return 0;  /* (a built row says no without asking: a string's space, say) */
    long left;
    if (d->api->ws_run(d->core, d->dfa, p, &left) < 0) return -1;
    if (left <= 0) return 0;
    *t = count <= left ? p : DEAD;
    return 1;
}

/* Walk the subtree of `node` (-1: the whole trie; a node at depth `depth0`) from state `from`:
 * OR into words the tokens consumed entirely inside the DFA, push the escapes (byte position,
 * state, node there) of tokens that die after passing states where a call or (with a non-empty
 * stack) a return could happen, one at each such state on the way (so that resolve need not walk
 * those tokens in the DFA again to find the next ones), and (ends given) the states allowed tokens
 * end in.  Subtrees the
 * start slice or the text first bytes already put in words, and subtrees a state's slice absorbs
 * whole, are skipped (not in a `plain` walk: of a rest trie, which the slices do not index).
 * Depth-first through each node's child list (the children lie a subtree apart in the DFS arrays). */
static int walk_trie(Tables *tb, const Trie *tr, int plain, Dfa *d, long from, Py_ssize_t node, int depth0, int nonempty,
                     uint32_t *words, const Start *start, Vec *escapes, Vec *ends, const Scratch *sc) {
    const uint8_t *root_set = start->root_set, *rpure = start->root_pure, *fc = start->fc;
    const int32_t *tend = tr->tend, *tlo = tr->tlo, *ids = tr->ids, *theight = tr->theight, *kid_off = tr->kid_off;
    const uint32_t *kids = tr->kids;
    const Slice *text = &tb->slices[tb->text_id];
    const uint8_t *fm = text->set, *fpure = text->root_pure;
    int32_t *st = sc->st, *esc_pos = sc->esc_pos, *esc_done = sc->esc_done, *nd = sc->nd, *cur = sc->cur, *lim = sc->lim;
    int32_t *ws = sc->ws;
    uint8_t *inroot = sc->inroot, *infc = sc->infc, *inpre = sc->inpre;
    const uint8_t *pre = start->pre;
    st[depth0] = (int32_t)from;
    ws[depth0] = 0;
    esc_pos[depth0] = -1;
    nd[depth0] = (int32_t)node;
    inroot[depth0] = root_set != NULL;
    infc[depth0] = 0;
    inpre[depth0] = 0;
    int k = depth0 + 1;
    cur[k] = kid_off[node + 1];
    lim[k] = kid_off[node + 2];
    while (k > depth0) {
        if (cur[k] == lim[k]) { k--; continue; }
        const uint32_t kid = kids[cur[k]++];
        const Py_ssize_t i = kid >> 8;
        const int b = kid & 255;
        if (k == 1 && b < 128 && fc[b] && start->keyed) continue;  /* text_first and keyed_walk take them */
        if (k == 1 && start->run_utf8 && !root_set[b]) continue;      /* run_walk took them */
        const int32_t p = st[k - 1];
        int32_t t, wsc = 0;
        int counted = 0;
        if (b == ' ' || b == '\n' || b == '\t') {
            wsc = ws[k - 1] + 1;
            if ((counted = ws_step(d, p, wsc, &t)) < 0) return -1;
        }
        if (!counted) {
            wsc = 0;
            t = d->t.trans[(Py_ssize_t)p * 256 + b];
            if (t == UNKNOWN) {
                if (dfa_build(d, p, 1) < 0) return -1;
                t = d->t.trans[(Py_ssize_t)p * 256 + b];
            }
        }
        const int in_pre = k == 1 ? b < 128 && pre[b] : inpre[k - 1] && fm[b];
        if (t < 0) {
            if (in_pre)  /* text_first put its text tokens in words: they die here */
                for (int32_t r = tlo[i]; r < tlo[tend[i]]; r++) words[(uint32_t)ids[r] >> 5] &= ~(1u << ((uint32_t)ids[r] & 31));
            for (int32_t ep = esc_pos[k - 1]; ep >= 0 && !esc_done[ep]; ep = esc_pos[ep - 1]) {
                esc_done[ep] = 1;  /* (and so every one above it) */
                if (vec_push_escape(escapes, ep, st[ep], (int32_t)(tr->base + nd[ep])) < 0) return -1;
            }
            continue;
        }
        const Py_ssize_t e = tend[i];
        if (e == i + 1) {
            set_rows(words, ids, tlo[i], tlo[e]);
            if (vec_push_end(ends, t, k) < 0) return -1;
            continue;
        }
        if (tlo[i] < tlo[i + 1]) {
            set_rows(words, ids, tlo[i], tlo[i + 1]);
            if (vec_push_end(ends, t, k) < 0) return -1;
        }
        const int in_r = inroot[k - 1] && root_set[b];
        if (in_r && start->run && (start->exact || start->run_max[i] <= start->run))
            continue;  /* in words, taken by run_walk, or (past an exact run's end) dead */
        if (in_r && rpure[i] && (start->exact || (start->root_chars ? start->root_chars[i] : k + theight[i]) <= start->absorb))
            continue;  /* all in words (or, past an exact run's end, dead) */
        /* first byte from fc, the rest string text: text_first OR-ed these too */
        const int in_fc = k == 1 ? fc[b] : infc[k - 1] && fm[b];
        if (in_fc && fpure[i]) continue;
        if (!plain) {
            if (d->t.slice_of[t] == SLICE_UNKNOWN && dfa_build(d, t, 1) < 0) return -1;
            const int sl = d->t.slice_of[t];
            const Slice *ts = sl >= 0 && sl < tb->num_slices ? &tb->slices[sl] : NULL;
            if (ts && (ts->char_max ? ts->char_max[i] - ts->char_depth[i] : theight[i]) <= d->t.absorb[t] && ts->pure[i]) {
                if (!(in_pre && fpure[i])) set_rows(words, ids, tlo[i + 1], tlo[e]);  /* (else text_first's) */
                if (vec_push_end(ends, t, k + theight[i]) < 0) return -1;  /* and the states of t's slice run after it */
                continue;
            }
        }
        const uint8_t f = d->t.flags[t];
        st[k] = t;
        ws[k] = wsc;
        esc_pos[k] = (f & FLAG_CALLS) || (nonempty && (f & FLAG_FINAL)) ? k : esc_pos[k - 1];
        esc_done[k] = 0;
        nd[k] = (int32_t)i;
        inroot[k] = (uint8_t)in_r;
        infc[k] = (uint8_t)in_fc;
        inpre[k] = (uint8_t)in_pre;
        k++;
        cur[k] = kid_off[i + 1];
        lim[k] = kid_off[i + 2];
    }
    return 0;
}

#define MAX_RUN_CHAIN 255  /* the longest bounded run followed state by state (grammar/masks/index.py MAX_RUN is 16) */

/* The states of the bounded run of s's slice, k characters, each to the dominant target:
 * chain[0] = s .. chain[k], their rows built.  1: followed; 0: the run has no dominant target
 * somewhere (or is longer than MAX_RUN_CHAIN); -1: error. */
static int run_chain(Dfa *d, long s, long k, int32_t *chain) {
    if (k > MAX_RUN_CHAIN) return 0;
    chain[0] = (int32_t)s;
    for (long j = 0; j <= k; j++) {
        if (d->t.trans[(Py_ssize_t)chain[j] * 256] == UNKNOWN && dfa_build(d, chain[j], 0) < 0) return -1;
        if (j == k) break;
        chain[j + 1] = d->t.dominant[chain[j]];
        if (chain[j + 1] < 0) return 0;
    }
    return 1;
}

/* Whether the bounded run of s's slice (absorb characters, each to the dominant target) ends
 * where no character of the slice goes on: then a token made only of slice characters is allowed
 * exactly when it has at most `absorb` of them (the slice's words up to that many).  Not when a
 * state of the run has a flag of `stop` (a call, or a return under a non-empty stack): a longer
 * token may go on through it (an item of a repeat split into called blocks, one character a call:
 * its tokens of two characters and more were dropped from the mask). */
static int run_is_exact(Dfa *d, long s, long absorb, const uint8_t *set, uint8_t stop, int *exact) {
    *exact = 0;
    int32_t chain[MAX_RUN_CHAIN + 1];
    const int r = run_chain(d, s, absorb, chain);
    if (r <= 0) return r;
    for (long j = 0; j <= absorb; j++)
        if (d->t.flags[chain[j]] & stop) return 0;
    const int32_t *row = d->t.trans + (Py_ssize_t)chain[absorb] * 256;
    for (int b = 0; b < 256; b++)
        if (set[b] && row[b] >= 0) return 0;
    *exact = 1;
    return 0;
}

/* The start of the walk from s (under a non-empty stack or not): row and slice of s, the words its
 * slice already gives, the text first bytes (unless s itself is in string text). */
static int walk_start(Tables *tb, Dfa *d, PyObject *vocab, long s, int nonempty, uint32_t *words, Start *start, Vec *ends) {
    memset(start, 0, sizeof(*start));
    if ((d->t.trans[(Py_ssize_t)s * 256] == UNKNOWN || d->t.slice_of[s] == SLICE_UNKNOWN) && dfa_build(d, s, 1) < 0)
        return -1;
    long sl;
    if (state_slice(tb, d, s, &sl) < 0) return -1;
    if (sl >= 0 && sl < tb->num_slices) {
        start->absorb = d->t.absorb[s];
        if (slice_words(tb, d, vocab, (int)sl, start->absorb, words) < 0) return -1;
        start->root_set = tb->slices[sl].set;
        start->root_pure = tb->slices[sl].root_pure;
        start->root_chars = tb->slices[sl].char_max;
        const uint8_t stop = FLAG_CALLS | (nonempty ? FLAG_FINAL : 0);
        if (start->absorb < UNBOUNDED && run_is_exact(d, s, start->absorb, start->root_set, stop, &start->exact) < 0) return -1;
    } else {
        memset(words, 0, tb->num_words * sizeof(uint32_t));
    }
    return sl == tb->text_id ? 0 : text_first(tb, d, s, words, start, ends);
}

/* The tokens the main walk skipped below the ASCII first bytes text_first took: those that leave
 * the slice after their first byte and some slice characters, by their rests (rest[2] below the
 * first byte) from the state the first byte leads to, which loops on the slice. */
static int keyed_walk(Tables *tb, Dfa *d, const Start *start, int nonempty, uint32_t *words, Vec *escapes, Vec *ends,
                      const Scratch *sc) {
    Start none;
    memset(&none, 0, sizeof(none));
    const Slice *sl = start->keyed;
    const long t = start->fc_target;
    for (int b = 0; b < 128; b++) {
        const int32_t node = sl->keyed_child[b];
        if (!start->fc[b] || node < 0) continue;
        if (walk_trie(tb, &sl->rest[2], 1, d, t, node, 1, nonempty, words, &none, escapes, ends, sc) < 0) return -1;
    }
    return 0;
}

/* The trie holding the node numbered `node` (0 <= node < all_nodes). */
static const Trie *node_trie(const Tables *tb, long node) {
    for (int s = 0; s < tb->num_slices; s++)
        for (int r = 0; r < NUM_RESTS; r++) {
            const Trie *tr = &tb->slices[s].rest[r];
            if (tr->num_nodes > 0 && node >= tr->base && node < tr->base + tr->num_nodes) return tr;
        }
    return &tb->trie;
}

/* Walk the subtree of `node` (a global node number: of the trie or of a rest trie) from state s. */
static int walk_node(Tables *tb, Dfa *d, long s, long node, int nonempty, uint32_t *words, Vec *escapes, const Scratch *sc) {
    Start none;
    memset(&none, 0, sizeof(none));
    if (d->t.trans[(Py_ssize_t)s * 256] == UNKNOWN && dfa_build(d, s, 1) < 0) return -1;
    const Trie *tr = node_trie(tb, node);
    return walk_trie(tb, tr, tr != &tb->trie, d, s, node - tr->base, tr->tdepth[node - tr->base], nonempty, words, &none,
                     escapes, NULL, sc);
}

/* Instead of the whole trie, when s is closed on string text (LazyDfa.text_closed: every token of
 * text only is consumed from s, whatever states it passes: an open object's key start, a string
 * with an unanchored pattern): the text slice's tokens whole, then a walk of the tokens outside it
 * (a few hundred to a few thousand: quotes, backslashes, control bytes, cut characters) by their
 * whole bytes from s.  Not for a state inside a string (rest_walk's case: the same tokens, by
 * their rests) or without the trie of those tokens.  The ends of the text tokens are given as s
 * itself (the states they end in are not visited).  1: walked; 0: not possible here; -1: error. */
static int closed_walk(Tables *tb, Dfa *d, long s, int nonempty, uint32_t *words, Vec *escapes, Vec *ends,
                       const Scratch *sc) {
    const Slice *text = &tb->slices[tb->text_id];
    if (text->rest[OUTSIDE].num_nodes < 0) return 0;
    if ((d->t.trans[(Py_ssize_t)s * 256] == UNKNOWN || d->t.slice_of[s] == SLICE_UNKNOWN) && dfa_build(d, s, 1) < 0)
        return -1;
    const int sl = d->t.slice_of[s];
    if ((sl == tb->text_id || sl == tb->ascii_id) && d->t.absorb[s] == UNBOUNDED) return 0;
    long closed;
    if (dfa_call(d, TEXT_CLOSED, s, 0, &closed) < 0) return -1;
    if (!closed) return 0;
    memcpy(words, text->words, tb->num_words * sizeof(uint32_t));
    if (vec_push_end(ends, (int32_t)s, tb->trie.max_depth) < 0) return -1;
    Start none;
    memset(&none, 0, sizeof(none));
    if (walk_trie(tb, &text->rest[OUTSIDE], 1, d, s, -1, 0, nonempty, words, &none, escapes, ends, sc) < 0) return -1;
    return 1;
}

/* Instead of the whole trie (after walk_start: row and slice of s known), walk the slice's rest
 * tries when every character of s's slice leads to one state t that loops on it (t may be s):
 * a token's longest prefix of slice characters then ends in t (or is empty, in s), and what
 * follows decides.  Not when t could call or return (the prefix would pass where an escape
 * starts).  1: walked; 0: not possible here; -1: error.  Escapes name rest-trie nodes (by their
 * global numbers), where the subtree walk goes on. */
static int rest_walk(Tables *tb, Dfa *d, long s, int nonempty, uint32_t *words, Vec *escapes, Vec *ends,
                     const Scratch *sc) {
    const int sl = d->t.slice_of[s];
    if (sl < 0 || sl >= tb->num_slices || tb->slices[sl].rest[0].num_nodes < 0 || d->t.absorb[s] < UNBOUNDED) return 0;
    const long t = d->t.dominant[s];
    if (t < 0) return 0;
    if (t != s) {
        long slt;
        if (state_slice(tb, d, t, &slt) < 0) return -1;
        if (slt != sl || d->t.absorb[t] < UNBOUNDED || d->t.dominant[t] != t) return 0;
    }
    if (d->t.flags[t] & (FLAG_CALLS | (nonempty ? FLAG_FINAL : 0))) return 0;
    Start none;
    memset(&none, 0, sizeof(none));
    const Trie *rest = tb->slices[sl].rest;
    if (walk_trie(tb, &rest[0], 1, d, s, -1, 0, nonempty, words, &none, escapes, ends, sc) < 0) return -1;
    if (walk_trie(tb, &rest[1], 1, d, t, -1, 0, nonempty, words, &none, escapes, ends, sc) < 0) return -1;
    return 1;
}

/* Instead of most of the trie, for a bounded run of s's slice (k = absorb[s] characters, each
 * taking e_j to e_{j+1} = dominant[e_j], e_0 = s): a token of j <= k slice characters and then a
 * rest is allowed when its rest is from e_j: walk the slice's rest[3] below key j from e_j (and
 * rest[0], the tokens with no whole first character of the slice, from s, for a UTF-8 slice).
 * The pure tokens of at most k characters are in words (walk_start); the main walk then only
 * goes below slice paths to tokens of more characters (start->run), where the run may end.  Not
 * when a state of the run could call or return.  For a UTF-8 slice, when the run is exact or its
 * slice's long trie has the tokens of more than k characters (rest[LONG]), it does what the
 * main walk would and returns 2.  1: done; 0: not possible here; -1: error. */
static int run_walk(Tables *tb, Dfa *d, long s, int nonempty, uint32_t *words, Start *start, Vec *escapes, Vec *ends,
                    const Scratch *sc) {
    const int sl = d->t.slice_of[s];
    const long k = d->t.absorb[s];
    if (sl < 0 || sl >= tb->num_slices || k < 1 || k > MAX_RUN_CHAIN) return 0;
    const Slice *S = &tb->slices[sl];
    const int utf8 = S->char_max != NULL;
    if (S->rest[3].num_nodes < 0 || (utf8 && S->rest[0].num_nodes < 0)) return 0;
    const uint8_t stop = FLAG_CALLS | (nonempty ? FLAG_FINAL : 0);
    int32_t chain[MAX_RUN_CHAIN + 1];
    const int r = run_chain(d, s, k, chain);
    if (r <= 0) return r;
    for (long j = 0; j <= k; j++)
        if (d->t.flags[chain[j]] & stop) return 0;
    Start none;
    memset(&none, 0, sizeof(none));
    if (utf8 && walk_trie(tb, &S->rest[0], 1, d, s, -1, 0, nonempty, words, &none, escapes, ends, sc) < 0) return -1;
    for (long j = 1; j <= k; j++) {
        if (vec_push_end(ends, chain[j], (int32_t)j) < 0) return -1;  /* the pure tokens of j characters */
        const int32_t node = S->run_child[j];
        if (node >= 0 && walk_trie(tb, &S->rest[3], 1, d, chain[j], node, 1, nonempty, words, &none, escapes, ends, sc) < 0)
            return -1;
    }
    start->run = k;
    start->run_max = S->run_max;
    start->run_utf8 = utf8;
    if (!utf8) return 1;
    /* Left to the main walk: tokens of more than k slice characters first (none when the run is
     * exact); when the run is as long as the slice's long trie is keyed, that trie has them all. */
    if (start->exact) return 2;  /* (found by walk_start) */
    if (S->rest[LONG].num_nodes < 0 || k < S->long_min) return 1;
    if (walk_trie(tb, &S->rest[LONG], 1, d, s, -1, 0, nonempty, words, &none, escapes, ends, sc) < 0) return -1;
    return 2;
}

typedef struct { int32_t state, len; } End;

/* Longer tokens first, then the lower state. */
#define LONGER_FIRST(x, y) ((x).len != (y).len ? (x).len > (y).len : (x).state < (y).state)
DEFINE_SORT(sort_ends, End, LONGER_FIRST)

/* The distinct states of the (state, token length) pairs[0:2n] (each state below num_states), as
 * a list ordered by the longest token ending in each, longest first (ties: lower state first). */
static PyObject *distinct_states(const int32_t *pairs, Py_ssize_t n, Py_ssize_t num_states) {
    int32_t *best = malloc((num_states ? num_states : 1) * sizeof(int32_t));
    End *ends = malloc((n ? n : 1) * sizeof(End));
    PyObject *out = NULL;
    if (!best || !ends) { PyErr_NoMemory(); goto done; }
    for (Py_ssize_t i = 0; i < num_states; i++) best[i] = -1;
    Py_ssize_t k = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        const int32_t t = pairs[2 * i], len = pairs[2 * i + 1];
        if (t < 0 || t >= num_states) continue;
        if (best[t] < 0) ends[k++].state = t;
        if (len > best[t]) best[t] = len;
    }
    for (Py_ssize_t j = 0; j < k; j++) ends[j].len = best[ends[j].state];
    sort_ends(ends, k);
    if (!(out = PyList_New(k))) goto done;
    for (Py_ssize_t j = 0; j < k; j++) {
        PyObject *v = PyLong_FromLong(ends[j].state);
        if (!v) { Py_CLEAR(out); goto done; }
        PyList_SET_ITEM(out, j, v);
    }
done:
    free(best);
    free(ends);
    return out;
}

/* One state's walk of the whole trie, after walk_start (which first writes all of out).  None, or
 * the escapes as int32 triples; with want_ends a pair of that and the distinct states the allowed
 * tokens end in (distinct_states). */
static PyObject *walk_call(Tables *tb, PyObject *dfa, PyObject *vocab, long s, int nonempty, PyObject *out_obj,
                           PyObject *copy_obj, Py_ssize_t copy_row, int want_ends) {
    Py_buffer out, copy = {0};
    if (PyObject_GetBuffer(out_obj, &out, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0) return NULL;
    if (copy_obj && PyObject_GetBuffer(copy_obj, &copy, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0) {
        PyBuffer_Release(&out);
        return NULL;
    }
    PyObject *result = NULL;
    Dfa d;
    Vec cands = {NULL, 0, 0}, ends = {NULL, 0, 0};
    Vec *ends_p = want_ends ? &ends : NULL;
    Start start;
    ScratchMem mem;
    if (scratch_open(&mem, tb->trie.max_depth + 1) < 0) goto fail;
    const Scratch sc = mem.sc;
    if (out.len != tb->num_words * 4) { PyErr_SetString(PyExc_ValueError, "out must hold num_words int32"); goto fail; }
    if (copy_obj && (copy.ndim != 2 || copy.shape[1] * copy.itemsize != out.len)) {
        PyErr_SetString(PyExc_ValueError, "rows must be a 2-d array of rows like out");
        goto fail;
    }
    if (copy_obj && (copy_row < 0 || copy_row >= copy.shape[0])) {
        PyErr_SetString(PyExc_IndexError, "row out of range");
        goto fail;
    }
    if (dfa_open(&d, dfa) < 0) goto fail;
    if (s < 0 || s >= d.t.num_states) { PyErr_SetString(PyExc_IndexError, "DFA state out of range"); dfa_close(&d); goto fail; }
    const int closed = closed_walk(tb, &d, s, nonempty, out.buf, &cands, ends_p, &sc);
    int rc = closed < 0 ? -1 : 0;
    if (closed > 0) goto walked;  /* the text tokens whole, the others by their bytes */
    if (rc == 0) rc = walk_start(tb, &d, vocab, s, nonempty, out.buf, &start, ends_p);
    const int r = rc == 0 ? rest_walk(tb, &d, s, nonempty, out.buf, &cands, ends_p, &sc) : 0;
    if (r < 0) rc = -1;
    else if (r) goto walked;  /* the slice's tokens from walk_start, the others by their rests */
    const int run = rc == 0 ? run_walk(tb, &d, s, nonempty, out.buf, &start, &cands, ends_p, &sc) : 0;
    if (run < 0) rc = -1;
    else if (run == 2) goto walked;  /* the run's tokens by their rests, the longer ones by the long trie */
    if (rc == 0) rc = walk_trie(tb, &tb->trie, 0, &d, s, -1, 0, nonempty, out.buf, &start, &cands, ends_p, &sc);
    if (rc == 0 && start.keyed) rc = keyed_walk(tb, &d, &start, nonempty, out.buf, &cands, ends_p, &sc);
walked:
    if (rc == 0) {
        if (cands.len) result = PyBytes_FromStringAndSize((const char *)cands.data, cands.len * (Py_ssize_t)sizeof(int32_t));
        else result = Py_NewRef(Py_None);
        if (result && want_ends && dfa_refresh(&d) < 0) Py_CLEAR(result);  /* (the walk may have added states) */
        if (result && want_ends) {
            PyObject *e = distinct_states(ends.data, ends.len / 2, d.t.num_states);
            PyObject *pair = e ? PyTuple_Pack(2, result, e) : NULL;
            Py_XDECREF(e);
            Py_SETREF(result, pair);
        }
        if (copy_obj && !cands.len) memcpy((char *)copy.buf + copy_row * out.len, out.buf, out.len);
    }
    dfa_close(&d);
fail:
    scratch_close(&mem);
    free(cands.data);
    free(ends.data);
    PyBuffer_Release(&out);
    if (copy_obj) PyBuffer_Release(&copy);
    return result;
}

/* ---- escapes against the stack: the general mask path (grammar/masks/state_masks.py compute_mask) ---- */


/* A map of int32 triples to an int32, open addressing; an entry counts only in the map's current
 * generation, so a new generation empties it in O(1) (an expansion's visited set, reused). */
typedef struct { int32_t a, b, c, value; uint32_t gen; } Entry3;
typedef struct { Entry3 *e; Py_ssize_t cap, used; uint32_t gen; } Map3;

static inline Py_ssize_t hash3(const Map3 *m, int32_t a, int32_t b, int32_t c) {
    uint64_t h = (uint32_t)a * 0x9E3779B97F4A7C15ull ^ (uint32_t)b * 0xC2B2AE3D27D4EB4Full ^ (uint32_t)c * 0x165667B19E3779F9ull;
    h ^= h >> 29;
    return (Py_ssize_t)(h & (uint64_t)(m->cap - 1));
}

static int map3_init(Map3 *m, Py_ssize_t cap) {
    m->e = calloc(cap, sizeof(Entry3));
    m->cap = cap;
    m->used = 0;
    m->gen = 1;
    if (!m->e) { PyErr_NoMemory(); return -1; }
    return 0;
}

/* Empty the map in O(1): a new generation (the entries are zeroed again only when it wraps). */
static void map3_clear(Map3 *m) {
    if (++m->gen == 0) {
        memset(m->e, 0, m->cap * sizeof(Entry3));
        m->gen = 1;
    }
    m->used = 0;
}

/* The entry of (a, b, c), found or (*added = 1) added with `value`; NULL when out of memory. */
static Entry3 *map3_get(Map3 *m, int32_t a, int32_t b, int32_t c, int32_t value, int *added) {
    if (2 * (m->used + 1) > m->cap) {  /* grow: move this generation's entries */
        Map3 big;
        if (map3_init(&big, m->cap * 2) < 0) return NULL;
        big.gen = m->gen;
        for (Py_ssize_t i = 0; i < m->cap; i++) {
            const Entry3 *x = &m->e[i];
            if (x->gen != m->gen) continue;
            Py_ssize_t j = hash3(&big, x->a, x->b, x->c);
            while (big.e[j].gen == big.gen) j = (j + 1) & (big.cap - 1);
            big.e[j] = *x;
            big.used++;
        }
        free(m->e);
        *m = big;
    }
    Py_ssize_t j = hash3(m, a, b, c);
    for (;; j = (j + 1) & (m->cap - 1)) {
        Entry3 *x = &m->e[j];
        if (x->gen != m->gen) {
            *x = (Entry3){a, b, c, value, m->gen};
            m->used++;
            *added = 1;
            return x;
        }
        if (x->a == a && x->b == b && x->c == c) { *added = 0; return x; }
    }
}

/* One resolution: the DFA, the stacks met (interned: id 0 is the empty stack, a stack is its
 * parent's id and its top return state), the (rule start, return state) pairs of each calling
 * state, the configurations of the current expansion and the escapes still to resolve. */
typedef struct {
    Tables *tb;
    Dfa d;
    PyObject *rule_start;  /* the LazyDfa's list */
    Vec parent, top, depth;
    Map3 stacks, calls, visit, seen;
    Vec pairs;    /* per calling state: count, then (start, return) pairs; calls maps state -> offset */
    Vec configs;  /* (stack, state) of the current expansion */
    Vec todo;     /* (stack, state, node) escapes */
} Resolver;

static int vec_push2(Vec *v, int32_t a, int32_t b) {
    if (vec_reserve(v, 2) < 0) return -1;
    v->data[v->len++] = a;
    v->data[v->len++] = b;
    return 0;
}

/* The id of stack `k` with return state `ret` pushed; -1 on error. */
static int32_t push_stack(Resolver *r, int32_t k, int32_t ret) {
    int added;
    Entry3 *x = map3_get(&r->stacks, k, ret, 0, (int32_t)r->parent.len, &added);
    if (!x) return -1;
    if (added) {
        if (vec_reserve(&r->parent, 1) < 0 || vec_reserve(&r->top, 1) < 0 || vec_reserve(&r->depth, 1) < 0) return -1;
        r->parent.data[r->parent.len++] = k;
        r->top.data[r->top.len++] = ret;
        r->depth.data[r->depth.len] = r->depth.data[k] + 1;
        r->depth.len++;
    }
    return x->value;
}

/* Offset in r->pairs of state s's calls (dfa.calls(s): return states are made on first use). */
static int32_t calls_of(Resolver *r, int32_t s) {
    int added;
    Entry3 *x = map3_get(&r->calls, s, 0, 0, (int32_t)r->pairs.len, &added);
    if (!x) return -1;
    if (!added) return x->value;
    const int32_t at = x->value;  /* (x may move when the map grows) */
    PyObject *got = PyObject_CallMethod(r->d.dfa, "calls", "l", (long)s);
    if (!got) return -1;
    PyObject *seq = PySequence_Fast(got, "calls() must give a sequence");
    Py_DECREF(got);
    if (!seq) return -1;
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    int rc = vec_reserve(&r->pairs, 1 + 2 * n);
    if (rc == 0) r->pairs.data[r->pairs.len++] = (int32_t)n;
    for (Py_ssize_t i = 0; rc == 0 && i < n; i++) {
        long rule, ret;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, i), "ll", &rule, &ret)) { rc = -1; break; }
        if (rule < 0 || rule >= PyList_GET_SIZE(r->rule_start)) { PyErr_SetString(PyExc_IndexError, "rule out of range"); rc = -1; break; }
        const long start = PyLong_AsLong(PyList_GET_ITEM(r->rule_start, rule));
        if (start == -1 && PyErr_Occurred()) { rc = -1; break; }
        r->pairs.data[r->pairs.len++] = (int32_t)start;
        r->pairs.data[r->pairs.len++] = (int32_t)ret;
    }
    Py_DECREF(seq);
    if (rc == 0) rc = dfa_refresh(&r->d);  /* return states may be new: the tables may have moved */
    return rc < 0 ? -1 : at;
}

/* r->configs = the configurations reachable from (k, s) without a byte: returns from final
 * states, calls (grammar/automaton/pda.py expand, with its limits). */
static int expand_c(Resolver *r, int32_t k, int32_t s) {
    int added;
    map3_clear(&r->visit);
    r->configs.len = 0;
    if (!map3_get(&r->visit, k, s, 0, 0, &added) || vec_push2(&r->configs, k, s) < 0) return -1;
    for (Py_ssize_t next = 0; next < r->configs.len && r->configs.len / 2 <= MAX_CONFIGS; next += 2) {
        const int32_t ck = r->configs.data[next], cs = r->configs.data[next + 1];
        if (dfa_has(&r->d, cs) <= 0) return -1;
        const uint8_t f = r->d.t.flags[cs];
        if (ck && (f & FLAG_FINAL)) {
            const int32_t pk = r->parent.data[ck], ps = r->top.data[ck];
            if (!map3_get(&r->visit, pk, ps, 0, 0, &added)) return -1;
            if (added && vec_push2(&r->configs, pk, ps) < 0) return -1;
        }
        if ((f & FLAG_CALLS) && r->depth.data[ck] < MAX_STACK) {
            const int32_t at = calls_of(r, cs);
            if (at < 0) return -1;
            for (int32_t i = 0; i < r->pairs.data[at]; i++) {
                const int32_t nk = push_stack(r, ck, r->pairs.data[at + 2 + 2 * i]);
                const int32_t ns = r->pairs.data[at + 1 + 2 * i];
                if (nk < 0 || !map3_get(&r->visit, nk, ns, 0, 0, &added)) return -1;
                if (added && vec_push2(&r->configs, nk, ns) < 0) return -1;
            }
        }
    }
    return 0;
}

/* Resolve every escape of r->todo into words: from each configuration its state reaches without
 * a byte, the subtree below its node is walked once (per stack, state and node); the walk's own
 * escapes, deeper in the trie, go round again.  Not from the escape's own configuration: the walk
 * that made the escape went on from there in the DFA, and made an escape at every state on the way
 * where a call or return could happen (walking it again there found each next one, at a cost
 * that grew with the square of a string's length in a called rule that may return anywhere). */
static int resolve_todo(Resolver *r, uint32_t *words, const Scratch *sc) {
    Vec cands = {NULL, 0, 0};
    int rc = 0;
    while (rc == 0 && r->todo.len) {
        r->todo.len -= 3;
        const int32_t k = r->todo.data[r->todo.len], s = r->todo.data[r->todo.len + 1], node = r->todo.data[r->todo.len + 2];
        if (node < 0 || node >= r->tb->all_nodes) { PyErr_SetString(PyExc_IndexError, "trie node out of range"); rc = -1; break; }
        if ((rc = expand_c(r, k, s)) < 0) break;
        for (Py_ssize_t i = 2; rc == 0 && i < r->configs.len; i += 2) {  /* (0: the escape's own) */
            const int32_t ck = r->configs.data[i], cs = r->configs.data[i + 1];
            int added;
            if (!map3_get(&r->seen, ck, cs, node, 0, &added)) { rc = -1; break; }
            if (!added) continue;
            cands.len = 0;
            if ((rc = walk_node(r->tb, &r->d, cs, node, ck != 0, words, &cands, sc)) < 0) break;
            for (Py_ssize_t j = 0; rc == 0 && j < cands.len; j += 3)
                if (vec_reserve(&r->todo, 3) < 0) rc = -1;
                else {
                    r->todo.data[r->todo.len++] = ck;
                    r->todo.data[r->todo.len++] = cands.data[j + 1];
                    r->todo.data[r->todo.len++] = cands.data[j + 2];
                }
        }
    }
    free(cands.data);
    return rc;
}

/* Queue one configuration's escapes: its stack (a tuple of return states, bottom first) and the
 * int32 (position, state, node) triples its state's walk returned. */
static int queue_escapes(Resolver *r, PyObject *item) {
    PyObject *stack;
    Py_buffer raw;
    if (!PyArg_ParseTuple(item, "O!y*", &PyTuple_Type, &stack, &raw)) return -1;
    int rc = 0;
    int32_t k = 0;
    if (raw.len % 12) { PyErr_SetString(PyExc_ValueError, "escapes must be int32 triples"); rc = -1; }
    for (Py_ssize_t i = 0; rc == 0 && i < PyTuple_GET_SIZE(stack); i++) {
        const long ret = PyLong_AsLong(PyTuple_GET_ITEM(stack, i));
        if (ret == -1 && PyErr_Occurred()) rc = -1;
        else if (dfa_has(&r->d, ret) <= 0) rc = -1;
        else if ((k = push_stack(r, k, (int32_t)ret)) < 0) rc = -1;
    }
    const int32_t *t = raw.buf;
    for (Py_ssize_t i = 0; rc == 0 && i < raw.len / 12; i++)
        if (vec_reserve(&r->todo, 3) < 0) rc = -1;
        else {
            r->todo.data[r->todo.len++] = k;
            r->todo.data[r->todo.len++] = t[3 * i + 1];
            r->todo.data[r->todo.len++] = t[3 * i + 2];
        }
    PyBuffer_Release(&raw);
    return rc;
}

/* The memory of resolve() kept from one call to the next: its maps and vectors are emptied, not
 * freed, and the calling states' (rule start, return state) pairs of the last LazyDfa resolved
 * against (held by a weak reference) are kept, since they never change once made. A cold resolve
 * otherwise spent ~4 us allocating and zeroing its four maps and ~2.7 us asking the LazyDfa for
 * a calling state's calls, against ~0.5 us of walking (an ad-hoc timing on the dev schemas).
 * A resolve that finds it in use (another thread's, while a Python call of that one let go of
 * the GIL) makes its own, as every call did before. */
static struct {
    int busy;
    PyObject *dfa_ref;  /* weak reference to the LazyDfa of `calls` and `pairs`, or NULL */
    Resolver r;
} kept_resolver;

static int resolver_init(Resolver *r) {
    if (map3_init(&r->stacks, 64) < 0 || map3_init(&r->calls, 64) < 0 || map3_init(&r->visit, 64) < 0 ||
        map3_init(&r->seen, 256) < 0)
        return -1;
    return 0;
}

static void resolver_free(Resolver *r) {
    free(r->stacks.e), free(r->calls.e), free(r->visit.e), free(r->seen.e);
    free(r->parent.data), free(r->top.data), free(r->depth.data), free(r->pairs.data), free(r->configs.data), free(r->todo.data);
    memset(r, 0, sizeof(*r));
}

/* The kept resolver, emptied for a resolution against `dfa` (its calls kept when `dfa` is the
 * LazyDfa of the last one); NULL when in use or on error (then the caller makes its own). */
static Resolver *kept_resolver_take(PyObject *dfa) {
    if (kept_resolver.busy) return NULL;
    kept_resolver.busy = 1;  /* at once: making the weak reference below may run Python (a collection) */
    Resolver *r = &kept_resolver.r;
    if (!r->stacks.e && resolver_init(r) < 0) {
        PyErr_Clear();
        resolver_free(r);
        kept_resolver.busy = 0;
        return NULL;
    }
    PyObject *last = kept_resolver.dfa_ref ? PyWeakref_GetObject(kept_resolver.dfa_ref) : NULL;
    if (last != dfa) {  /* another LazyDfa (or the last one is gone): forget its calls */
        map3_clear(&r->calls);
        r->pairs.len = 0;
        Py_CLEAR(kept_resolver.dfa_ref);
        kept_resolver.dfa_ref = PyWeakref_NewRef(dfa, NULL);
        if (!kept_resolver.dfa_ref) PyErr_Clear();  /* not weakly referable: its calls are asked again next time */
    }
    map3_clear(&r->stacks);
    map3_clear(&r->seen);
    r->parent.len = r->top.len = r->depth.len = r->configs.len = r->todo.len = 0;
    return r;
}

/* Hand the kept resolver back; after an error its calls are forgotten (an entry may have been
 * added to `calls` whose pairs were never written). */
static void kept_resolver_give(Resolver *r, int failed) {
    if (failed) {
        map3_clear(&r->calls);
        r->pairs.len = 0;
        Py_CLEAR(kept_resolver.dfa_ref);
    }
    r->tb = NULL;
    r->rule_start = NULL;
    memset(&r->d, 0, sizeof(r->d));
    kept_resolver.busy = 0;
}

/* resolve(tables, dfa, items, out) -> None: OR into out (int32 [num_words]) the tokens the
 * pushdown automaton accepts among the escapes of `items`, a list of (stack, escapes) — a
 * configuration's stack (a tuple of return states) and the int32 triples mask() returned for its
 * state.  The stack is followed in C: calls push, final states pop (grammar/automaton/pda.py expand). */
static PyObject *resolve(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 4 || Py_TYPE(args[0]) != &TablesType || !PyList_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, "resolve(tables, dfa, items: list, out)");
        return NULL;
    }
    static PyObject *rule_start_name = NULL;
    if (!rule_start_name && !(rule_start_name = PyUnicode_InternFromString("rule_start"))) return NULL;
    Py_buffer out;
    if (PyObject_GetBuffer(args[3], &out, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0) return NULL;
    Resolver own, *r = kept_resolver_take(args[1]);
    if (!r) {
        r = &own;
        memset(r, 0, sizeof(*r));
    }
    r->tb = (Tables *)args[0];
    PyObject *result = NULL;
    ScratchMem mem;
    int opened = 0, scratched = 0;
    if (scratch_open(&mem, r->tb->trie.max_depth + 1) < 0) goto done;
    scratched = 1;
    if (out.len != r->tb->num_words * 4) { PyErr_SetString(PyExc_ValueError, "out must hold num_words int32"); goto done; }
    if (!(r->rule_start = PyObject_GetAttr(args[1], rule_start_name))) goto done;
    if (!PyList_Check(r->rule_start)) { PyErr_SetString(PyExc_TypeError, "dfa.rule_start must be a list"); goto done; }
    if (dfa_open(&r->d, args[1]) < 0) goto done;
    opened = 1;
    if (r == &own && resolver_init(r) < 0) goto done;
    if (vec_reserve(&r->parent, 1) < 0 || vec_reserve(&r->top, 1) < 0 || vec_reserve(&r->depth, 1) < 0) goto done;
    r->parent.data[r->parent.len++] = 0;  /* the empty stack */
    r->top.data[r->top.len++] = -1;
    r->depth.data[r->depth.len++] = 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(args[2]); i++)
        if (queue_escapes(r, PyList_GET_ITEM(args[2], i)) < 0) goto done;
    if (resolve_todo(r, out.buf, &mem.sc) == 0) result = Py_NewRef(Py_None);
done:
    if (opened) dfa_close(&r->d);
    Py_XDECREF(r->rule_start);
    if (r == &own) resolver_free(r);
    else kept_resolver_give(r, result == NULL);
    if (scratched) scratch_close(&mem);
    PyBuffer_Release(&out);
    return result;
}

/* mask(tables, dfa, vocab, state, nonempty, out[, rows, row]) -> None, or int32 triples as bytes.
 * Writes into out (int32 [num_words]) the tokens allowed from DFA state `state` without looking
 * at the stack, and copies out into rows[row] (a bitmask, int32 [*, num_words]) when given and
 * out is the whole mask (no escapes), which saves the matcher a copy; returns the escapes, if
 * any: (byte position, DFA state, trie node)
 * where tokens that then die in the DFA passed a call, or with a non-empty stack a return (every
 * token below that node is to be checked against the stack; repeats possible). */
static PyObject *mask(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if ((nargs != 6 && nargs != 8) || Py_TYPE(args[0]) != &TablesType) {
        PyErr_SetString(PyExc_TypeError, "mask(tables, dfa, vocab, state, nonempty, out[, rows, row])");
        return NULL;
    }
    const long s = PyLong_AsLong(args[3]);
    const int nonempty = PyObject_IsTrue(args[4]);
    const Py_ssize_t row = nargs == 8 ? PyLong_AsSsize_t(args[7]) : 0;
    if ((s == -1 && PyErr_Occurred()) || nonempty < 0 || (row == -1 && PyErr_Occurred())) return NULL;
    return walk_call((Tables *)args[0], args[1], args[2], s, nonempty, args[5], nargs == 8 ? args[6] : NULL, row, 0);
}

/* The words of w[0..n) that differ from base (NULL: all zero) as bytes of int32 pairs (position,
 * value), in order, when at most `limit` do and every bit of base is set in w; else None. */
static PyObject *sparse_of(const int32_t *w, const int32_t *base, Py_ssize_t n, Py_ssize_t limit) {
    int32_t pairs_buf[2 * 256], *pairs = limit <= 256 ? pairs_buf : malloc(2 * limit * sizeof(int32_t));
    if (!pairs) return PyErr_NoMemory();
    PyObject *result = NULL;
    static const int32_t zero[16] = {0};
    Py_ssize_t k = 0;
    for (Py_ssize_t i0 = 0; i0 < n; i0 += 16) {
        /* a block of 16 words: which differ from base (a bit each) and whether any bit of base is
         * missing, without a branch per word (a mask apart from its slice differs in thousands of
         * words on a 262k vocabulary, at no pattern a branch predicts); then only those words */
        const int32_t *bb = base ? base + i0 : zero;
        const int m = i0 + 16 <= n ? 16 : (int)(n - i0);
        uint32_t ne = 0;
        int lost = 0;
#ifdef __SSE2__
        if (m == 16) {
            __m128i miss = _mm_setzero_si128();
            for (int q = 0; q < 4; q++) {
                const __m128i x = _mm_loadu_si128((const __m128i *)(w + i0) + q);
                const __m128i y = _mm_loadu_si128((const __m128i *)bb + q);
                ne |= (uint32_t)(~_mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(x, y))) & 15) << (4 * q);
                miss = _mm_or_si128(miss, _mm_andnot_si128(x, y));
            }
            lost = _mm_movemask_epi8(_mm_cmpeq_epi8(miss, _mm_setzero_si128())) != 0xFFFF;
        } else
#endif
        {
            int32_t miss = 0;
            for (int j = 0; j < m; j++) {
                ne |= (uint32_t)(w[i0 + j] != bb[j]) << j;
                miss |= bb[j] & ~w[i0 + j];
            }
            lost = miss != 0;
        }
        if (!ne) continue;
        if (lost || k + __builtin_popcount(ne) > limit) { result = Py_NewRef(Py_None); goto done; }
        while (ne) {
            const int j = __builtin_ctz(ne);
            ne &= ne - 1;
            pairs[2 * k] = (int32_t)(i0 + j);
            pairs[2 * k + 1] = w[i0 + j];
            k++;
        }
    }
    result = PyBytes_FromStringAndSize((const char *)pairs, 2 * k * (Py_ssize_t)sizeof(int32_t));
done:
    if (pairs != pairs_buf) free(pairs);
    return result;
}

/* sparse(words, limit[, base]) -> None, or bytes of int32 pairs (position, value), in order, of
 * the words of the int32 array that differ from base (default all zero), when at most `limit`
 * do and every bit of base is set in words (grammar/masks/words.py kept). */
static PyObject *sparse(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2 && nargs != 3) { PyErr_SetString(PyExc_TypeError, "sparse(words, limit[, base])"); return NULL; }
    const Py_ssize_t limit = PyLong_AsSsize_t(args[1]);
    if (limit == -1 && PyErr_Occurred()) return NULL;
    if (limit < 0) { PyErr_SetString(PyExc_ValueError, "limit must be >= 0"); return NULL; }
    Py_buffer v, b = {0};
    if (PyObject_GetBuffer(args[0], &v, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) return NULL;
    if (nargs == 3 && PyObject_GetBuffer(args[2], &b, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
        PyBuffer_Release(&v);
        return NULL;
    }
    PyObject *result = NULL;
    if (v.itemsize != 4 || (nargs == 3 && (b.itemsize != 4 || b.len != v.len)))
        PyErr_SetString(PyExc_ValueError, "words and base must be int32 arrays of one length");
    else
        result = sparse_of(v.buf, nargs == 3 ? b.buf : NULL, v.len / 4, limit);
    PyBuffer_Release(&v);
    if (nargs == 3) PyBuffer_Release(&b);
    return result;
}

/* *pairs = sparse(out, limit, base) and *based = 1 when that is not None (base not None), else
 * *pairs = sparse(out, limit) and *based = 0 (a new reference either way, None included): the
 * mask walked into out as grammar/masks/words.py `kept` keeps it. 0, or -1 with an exception. */
static int kept_pairs(PyObject *out_obj, PyObject *base_obj, Py_ssize_t limit, PyObject **pairs, int *based) {
    Py_buffer v, b = {0};
    const int has_base = base_obj != Py_None;
    *pairs = NULL;
    *based = 0;
    if (limit < 0) { PyErr_SetString(PyExc_ValueError, "limit must be >= 0"); return -1; }
    if (PyObject_GetBuffer(out_obj, &v, PyBUF_C_CONTIGUOUS) < 0) return -1;
    if (has_base && PyObject_GetBuffer(base_obj, &b, PyBUF_C_CONTIGUOUS) < 0) { PyBuffer_Release(&v); return -1; }
    if (has_base && b.len != v.len) {
        PyErr_SetString(PyExc_ValueError, "base must be an int32 array like out");
    } else {
        if (has_base && (*pairs = sparse_of(v.buf, b.buf, v.len / 4, limit)) != NULL) {
            *based = *pairs != Py_None;
            if (!*based) Py_CLEAR(*pairs);
        }
        if (!*based && !PyErr_Occurred()) *pairs = sparse_of(v.buf, NULL, v.len / 4, limit);
    }
    PyBuffer_Release(&v);
    if (has_base) PyBuffer_Release(&b);
    return *pairs ? 0 : -1;
}

/* mask_kept(tables, dfa, vocab, state, nonempty, out, rows, row, base, limit) -> (escapes, pairs,
 * based): mask() with rows, and, when the walk has no escapes, the mask as grammar/masks/words.py
 * `kept` keeps it, in the same call (a cold fill's Python around the walk was as long as a short
 * walk): pairs = sparse(out, limit, base) and based True, else sparse(out, limit) and based False,
 * else None (the caller keeps a dense copy of out). base is None or an int32 array like out. With
 * escapes: (escapes, None, False), rows not written. */
static PyObject *mask_kept(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 10) {
        PyErr_SetString(PyExc_TypeError, "mask_kept(tables, dfa, vocab, state, nonempty, out, rows, row, base, limit)");
        return NULL;
    }
    const Py_ssize_t limit = PyLong_AsSsize_t(args[9]);
    if (limit == -1 && PyErr_Occurred()) return NULL;
    PyObject *escapes = mask(self, args, 8);
    if (!escapes) return NULL;
    if (escapes != Py_None) {
        PyObject *out = PyTuple_Pack(3, escapes, Py_None, Py_False);
        Py_DECREF(escapes);
        return out;
    }
    Py_DECREF(escapes);
    PyObject *pairs;
    int based;
    if (kept_pairs(args[5], args[8], limit, &pairs, &based) < 0) return NULL;
    PyObject *result = PyTuple_Pack(3, Py_None, pairs, based ? Py_True : Py_False);
    Py_DECREF(pairs);
    return result;
}

/* mask_ends(tables, dfa, vocab, state, nonempty, out[, base, limit]) -> (mask()'s result, ends):
 * mask() that also returns the list of distinct states the allowed tokens end in (each token's own end state; for
 * a run a slice absorbs, the state where it starts), those of the longest tokens first: the next
 * token boundaries, likeliest first, for grammar/masks/precompute.py. With base and limit:
 * (escapes, ends, pairs, based), the last two as mask_kept gives them, escapes or not. */
static PyObject *mask_ends(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if ((nargs != 6 && nargs != 8) || Py_TYPE(args[0]) != &TablesType) {
        PyErr_SetString(PyExc_TypeError, "mask_ends(tables, dfa, vocab, state, nonempty, out[, base, limit])");
        return NULL;
    }
    const long s = PyLong_AsLong(args[3]);
    const int nonempty = PyObject_IsTrue(args[4]);
    const Py_ssize_t limit = nargs == 8 ? PyLong_AsSsize_t(args[7]) : 0;
    if ((s == -1 && PyErr_Occurred()) || nonempty < 0 || (limit == -1 && PyErr_Occurred())) return NULL;
    PyObject *result = walk_call((Tables *)args[0], args[1], args[2], s, nonempty, args[5], NULL, 0, 1);
    if (!result || nargs == 6) return result;
    PyObject *pairs;  /* with base and limit: also the mask as it is kept (see kept_pairs) */
    int based;
    if (kept_pairs(args[5], args[6], limit, &pairs, &based) < 0) { Py_DECREF(result); return NULL; }
    PyObject *out = PyTuple_Pack(4, PyTuple_GET_ITEM(result, 0), PyTuple_GET_ITEM(result, 1), pairs, based ? Py_True : Py_False);
    Py_DECREF(result);
    Py_DECREF(pairs);
    return out;
}

/* put(rows, row, pairs, base) -> None: rows[row] = base (None: zero) with the words of the int32
 * pairs (position, value) of `pairs` written over it: a SparseWords mask (grammar/masks/words.py).
 * With `or_`: rows[row] |= base (None: nothing) and each pair's value at its position instead (or_put). */
static PyObject *put_row(PyObject *const *args, Py_ssize_t nargs, int or_, const char *usage) {
    if (nargs != 4) { PyErr_SetString(PyExc_TypeError, usage); return NULL; }
    const Py_ssize_t row = PyLong_AsSsize_t(args[1]);
    if (row == -1 && PyErr_Occurred()) return NULL;
    Py_buffer r, p, b = {0};
    if (PyObject_GetBuffer(args[0], &r, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) return NULL;
    if (PyObject_GetBuffer(args[2], &p, PyBUF_C_CONTIGUOUS) < 0) { PyBuffer_Release(&r); return NULL; }
    const int has_base = args[3] != Py_None;
    if (has_base && PyObject_GetBuffer(args[3], &b, PyBUF_C_CONTIGUOUS) < 0) {
        PyBuffer_Release(&r);
        PyBuffer_Release(&p);
        return NULL;
    }
    PyObject *result = NULL;
    if (r.ndim != 2 || r.itemsize != 4 || row < 0 || row >= r.shape[0] || p.len % 8 || (has_base && b.len != r.shape[1] * 4)) {
        PyErr_Format(PyExc_ValueError, "%s: rows must be int32 [n, num_words], row in range, base int32 [num_words]", usage);
        goto done;
    }
    const Py_ssize_t n = r.shape[1];
    int32_t *out = (int32_t *)r.buf + row * n;
    const int32_t *pairs = p.buf;
    for (Py_ssize_t k = 0; k < p.len / 8; k++)
        if (pairs[2 * k] < 0 || pairs[2 * k] >= n) { PyErr_Format(PyExc_IndexError, "%s: word out of range", usage); goto done; }
    if (or_) {
        if (has_base) {
            const int32_t *in = b.buf;
            for (Py_ssize_t i = 0; i < n; i++) out[i] |= in[i];
        }
        for (Py_ssize_t k = 0; k < p.len / 8; k++) out[pairs[2 * k]] |= pairs[2 * k + 1];
    } else {
        if (has_base) memcpy(out, b.buf, n * 4);
        else memset(out, 0, n * 4);
        for (Py_ssize_t k = 0; k < p.len / 8; k++) out[pairs[2 * k]] = pairs[2 * k + 1];
    }
    result = Py_NewRef(Py_None);
done:
    PyBuffer_Release(&r);
    PyBuffer_Release(&p);
    if (has_base) PyBuffer_Release(&b);
    return result;
}

static PyObject *put(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    return put_row(args, nargs, 0, "put(rows, row, pairs, base)");
}

/* or_put(rows, row, pairs, base) -> None: rows[row] |= base (None: nothing) and the pairs' words:
 * put's OR, for the mask paths that add tokens to a row (a numpy |= there cost ~7 us cold, its
 * ufunc machinery out of cache between two such masks; an ad-hoc timing of the last fills). */
static PyObject *or_put(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    return put_row(args, nargs, 1, "or_put(rows, row, pairs, base)");
}

/* run(dfa, state, data, pos, stop_final) -> (state, pos): steps bytes while the state has no
 * calls and (with stop_final) is not final, where a pushdown configuration could branch,
 * stopping before such a state's byte; state -1 when a byte is rejected. */
static PyObject *run(PyObject *self, PyObject *args) {
    PyObject *dfa_obj;
    long s;
    Py_buffer data;
    Py_ssize_t pos;
    int stop_final;
    if (!PyArg_ParseTuple(args, "Oly*np", &dfa_obj, &s, &data, &pos, &stop_final)) return NULL;
    Dfa d;
    const uint8_t *bytes = data.buf;
    PyObject *result = NULL;
    if (dfa_open(&d, dfa_obj) < 0) goto done;
    if (s < 0 || s >= d.t.num_states || pos < 0) { PyErr_SetString(PyExc_IndexError, "DFA state or position out of range"); goto done; }
    const uint8_t stop = FLAG_CALLS | (stop_final ? FLAG_FINAL : 0);
    while (pos < data.len) {
        if (d.t.flags[s] & stop) break;
        int32_t t = d.t.trans[(Py_ssize_t)s * 256 + bytes[pos]];
        if (t == UNKNOWN) {
            if (dfa_build(&d, s, 0) < 0) goto done;
            t = d.t.trans[(Py_ssize_t)s * 256 + bytes[pos]];
        }
        if (t < 0) { s = -1; break; }
        s = t;
        pos++;
    }
    result = Py_BuildValue("ln", s, pos);
done:
    dfa_close(&d);
    PyBuffer_Release(&data);
    return result;
}

static PyMethodDef methods[] = {
    {"mask", (PyCFunction)(void (*)(void))mask, METH_FASTCALL, "One DFA state's mask by a walk of the token trie (see the module source)."},
    {"mask_kept", (PyCFunction)(void (*)(void))mask_kept, METH_FASTCALL, "mask() with rows, plus the mask as it is kept (see the module source)."},
    {"mask_ends", (PyCFunction)(void (*)(void))mask_ends, METH_FASTCALL, "mask() plus the states its tokens end in (see the module source)."},
    {"resolve", (PyCFunction)(void (*)(void))resolve, METH_FASTCALL, "Escapes checked against their stacks (see the module source)."},
    {"run", run, METH_VARARGS, "Step bytes through the DFA until a branching state."},
    {"put", (PyCFunction)(void (*)(void))put, METH_FASTCALL, "Write a sparse mask into a bitmask row (see the module source)."},
    {"or_put", (PyCFunction)(void (*)(void))or_put, METH_FASTCALL, "OR a sparse mask into a bitmask row (see the module source)."},
    {"sparse", (PyCFunction)(void (*)(void))sparse, METH_FASTCALL, "The few non-zero words of a mask, or None (see the module source)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_walk", "Token-trie walk and DFA byte runs (grammar/masks/_walk.c).", -1, methods};

PyMODINIT_FUNC PyInit__walk(void) {
    if (PyType_Ready(&TablesType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    Py_INCREF(&TablesType);
    if (PyModule_AddObject(m, "Tables", (PyObject *)&TablesType) < 0) { Py_DECREF(&TablesType); Py_DECREF(m); return NULL; }
    if (add_core_constants(m) < 0) { Py_DECREF(m); return NULL; }
    return m;
}
