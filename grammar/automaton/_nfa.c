/* grammar.automaton._nfa: the NFA builder's node walk (NfaBuilder.emit of grammar/automaton/nfa.py), in C.
 *
 * The Python walk over the grammar's nodes was most of a compile (~1.2 ms of ~2.3 for a typical
 * dev schema: a few hundred states, each a handful of dispatches, list appends and tuples).  An
 * Emitter walks the same nodes in the same order and logs the same edges in C arrays; `finish`
 * packs them per state (int32 tables, each state's edges in the order the reference walk appends
 * them to the Nfa's lists), which the DFA builder reads as they are: no Python object per state
 * (issue 39: the per-state lists, tuples and ints of a median flexible schema's ~1,800 states were
 * ~1 ms to make and as much to free, on a loaded machine).  The Nfa makes the lists from the packed
 * tables when asked (tests, the reference builder), equal to the reference walk's
 * (grammar/automaton/nfa_ref.py, the same signatures: used without a C compiler, and tested
 * against this one).  Decisions
 * that need the builder's rule facts stay in Python: a Ref's plan (a rule id to call, or the
 * node to inline; memoized in the builder's `ref_plans` dict, read here first), a repeat that
 * may be hoisted or split (`repeat_plan`), a node of a subclass (`emit_other`), and every
 * 1024th state the Nfa's size and time-limit check (`check_size`).
 *
 * `rule_facts` is nfa_ref.py's (the one pass over every rule's nodes that finds its references and
 * inline size), with the same results; sizes saturate at SIZE_CAP, far above any limit they are
 * compared with.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "ir_nodes.h"

static PyTypeObject *T_BYTES, *T_SEQ, *T_ALT, *T_REPEAT, *T_REF, *T_GRAPH;
static PyObject *GRAMMAR_ERROR;
static PyObject *S_RANGES, *S_ITEMS, *S_ITEM, *S_MIN, *S_MAX, *S_NAME, *S_NUM_STATES, *S_EDGES, *S_FINALS,
    *S_REPEAT_PLAN, *S_REF_PLAN, *S_CHECK_SIZE;

/* Edge logs in emission order (a state's edges are appended whenever its node is reached); `finish`
 * sorts each by source state, stably, into the packed tables. */
typedef struct {
    int32_t *data;
    Py_ssize_t len, cap;  /* in int32s */
} Log;

typedef struct {
    PyObject_HEAD
    PyObject *builder, *nfa, *ref_plans;
    PyObject *repeat_memo;  /* id(repeat) -> (repeat, its plan): the builder's answers, asked once per node */
    Log eps, edges, calls;  /* (s, t); (s, lo, hi, t); (s, rule, t) */
    Py_ssize_t num_states;
    long hoist_min_copies;
    int compact;
} Emitter;

static int log_push(Log *g, const int32_t *x, int n) {
    if (g->len + n > g->cap) {
        Py_ssize_t cap = g->cap ? g->cap * 2 : 256;
        while (cap < g->len + n) cap *= 2;
        int32_t *p = PyMem_Realloc(g->data, cap * sizeof(int32_t));
        if (p == NULL) { PyErr_NoMemory(); return -1; }
        g->data = p;
        g->cap = cap;
    }
    memcpy(g->data + g->len, x, n * sizeof(int32_t));
    g->len += n;
    return 0;
}

static int state_id(Py_ssize_t v, int32_t *out) {
    if (v < 0 || v > INT32_MAX) { PyErr_SetString(PyExc_OverflowError, "NFA state or rule id out of range"); return -1; }
    *out = (int32_t)v;
    return 0;
}

static int emit(Emitter *e, PyObject *node, Py_ssize_t s, Py_ssize_t t);

/* A new state (no edges yet); every 1024th, the Nfa's check (size, time limit). */
static Py_ssize_t new_state(Emitter *e) {
    Py_ssize_t n = e->num_states;
    if (n >= INT32_MAX) { PyErr_SetString(PyExc_OverflowError, "too many NFA states"); return -1; }
    e->num_states = n + 1;
    if (!((n + 1) & 1023)) {
        PyObject *size = PyLong_FromSsize_t(n + 1);
        if (size == NULL) return -1;
        PyObject *r = PyObject_CallMethodOneArg(e->nfa, S_CHECK_SIZE, size);
        Py_DECREF(size);
        if (r == NULL) return -1;
        Py_DECREF(r);
    }
    return n;
}

static int add_eps(Emitter *e, Py_ssize_t s, Py_ssize_t t) {
    int32_t x[2] = {(int32_t)s, (int32_t)t};
    return log_push(&e->eps, x, 2);
}

/* The (lo, hi) pair i of `ranges` (a tuple of pairs), checked. */
static int range_at(PyObject *ranges, Py_ssize_t i, int32_t *lo_out, int32_t *hi_out) {
    PyObject *pair = PyTuple_GET_ITEM(ranges, i);
    if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
        PyErr_SetString(PyExc_TypeError, "Bytes.ranges must hold (lo, hi) pairs");
        return -1;
    }
    long lo = PyLong_AsLong(PyTuple_GET_ITEM(pair, 0)), hi = PyLong_AsLong(PyTuple_GET_ITEM(pair, 1));
    if (PyErr_Occurred()) return -1;
    if (lo < INT32_MIN || lo > INT32_MAX || hi < INT32_MIN || hi > INT32_MAX) {  /* (ranges: the DFA builder checks) */
        PyErr_SetString(PyExc_ValueError, "byte edge range");
        return -1;
    }
    *lo_out = (int32_t)lo;
    *hi_out = (int32_t)hi;
    return 0;
}

static PyObject *ranges_of(PyObject *node) {
    PyObject *ranges = PyObject_GetAttr(node, S_RANGES);
    if (ranges != NULL && !PyTuple_Check(ranges)) {
        Py_DECREF(ranges);
        PyErr_SetString(PyExc_TypeError, "Bytes.ranges must be a tuple");
        return NULL;
    }
    return ranges;
}

/* byte edges (lo, hi, t) from s for each (lo, hi) of `ranges` (a tuple of pairs). */
static int emit_bytes(Emitter *e, PyObject *ranges, Py_ssize_t s, Py_ssize_t t) {
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(ranges); i++) {
        int32_t x[4] = {(int32_t)s, 0, 0, (int32_t)t};
        if (range_at(ranges, i, &x[1], &x[2]) < 0 || log_push(&e->edges, x, 4) < 0) return -1;
    }
    return 0;
}

/* A repeat's Bytes item (a flexible gap's `[ \t\n]`, a string's character class) is read once for
 * all its copies: its ranges as (lo, hi) pairs in `out`; their count, or -1 (an error set). */
#define ITEM_RANGES 16
static Py_ssize_t item_ranges(PyObject *item, int32_t *out) {
    PyObject *ranges = ranges_of(item);
    if (ranges == NULL) return -1;
    Py_ssize_t n = PyTuple_GET_SIZE(ranges);
    for (Py_ssize_t i = 0; i < n && i < ITEM_RANGES; i++)
        if (range_at(ranges, i, &out[2 * i], &out[2 * i + 1]) < 0) { n = -1; break; }
    Py_DECREF(ranges);
    return n;
}

/* A copy of a repeat's item from s to t: its byte edges from `r` when item_ranges read them
 * (n ranges, at most ITEM_RANGES), else the item's own emit. */
static int emit_copy(Emitter *e, PyObject *item, const int32_t *r, Py_ssize_t n, Py_ssize_t s, Py_ssize_t t) {
    if (n < 0 || n > ITEM_RANGES) return emit(e, item, s, t);
    for (Py_ssize_t i = 0; i < n; i++) {
        int32_t x[4] = {(int32_t)s, r[2 * i], r[2 * i + 1], (int32_t)t};
        if (log_push(&e->edges, x, 4) < 0) return -1;
    }
    return 0;
}

static int emit_seq(Emitter *e, PyObject *node, Py_ssize_t s, Py_ssize_t t) {
    PyObject *items = attr_tuple(node, S_ITEMS);
    if (items == NULL) return -1;
    Py_ssize_t n = PyTuple_GET_SIZE(items), cur = s;
    int rc = n ? 0 : add_eps(e, s, t);
    for (Py_ssize_t i = 0; i < n && rc == 0; i++) {
        Py_ssize_t nxt = t;
        if (i < n - 1 && (nxt = new_state(e)) < 0) {
            rc = -1;
            break;
        }
        rc = emit(e, PyTuple_GET_ITEM(items, i), cur, nxt);
        cur = nxt;
    }
    Py_DECREF(items);
    return rc;
}

static int emit_alt(Emitter *e, PyObject *node, Py_ssize_t s, Py_ssize_t t) {
    PyObject *items = attr_tuple(node, S_ITEMS);
    if (items == NULL) return -1;
    int rc = 0;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(items) && rc == 0; i++)
        rc = emit(e, PyTuple_GET_ITEM(items, i), s, t);
    Py_DECREF(items);
    return rc;
}

/* item^min then item^0..(max - min) or item*, as NfaBuilder.emit_repeat; the builder's
 * `repeat_plan` first where the item may be hoisted into a called rule or the repeat split. */
static int emit_repeat(Emitter *e, PyObject *node, Py_ssize_t s, Py_ssize_t t) {
    long lo, hi;
    int no_lo, unbounded;
    if (long_attr(node, S_MIN, &lo, &no_lo) < 0 || long_attr(node, S_MAX, &hi, &unbounded) < 0) return -1;
    long copies = unbounded ? lo : hi;
    PyObject *item;
    if (e->compact || copies >= e->hoist_min_copies) {
        /* A flexible grammar's whitespace gap is one repeat met at every separator: its plan is
         * asked of the builder once, then read here (a Python call each time was ~5% of the walk). */
        PyObject *key = PyLong_FromVoidPtr(node), *plan = NULL;
        if (key == NULL) return -1;
        PyObject *hit = PyDict_GetItemWithError(e->repeat_memo, key);  /* borrowed */
        if (hit != NULL && PyTuple_GET_ITEM(hit, 0) == node) {
            plan = PyTuple_GET_ITEM(hit, 1);
            Py_INCREF(plan);
        } else if (!PyErr_Occurred()) {
            plan = PyObject_CallMethodOneArg(e->builder, S_REPEAT_PLAN, node);
            if (plan != NULL && PyTuple_Check(plan) && PyTuple_GET_SIZE(plan) == 2) {
                PyObject *entry = PyTuple_Pack(2, node, plan);  /* (the node kept: its id stays its own) */
                if (entry == NULL || PyDict_SetItem(e->repeat_memo, key, entry) < 0) Py_CLEAR(plan);
                Py_XDECREF(entry);
            }
        }
        Py_DECREF(key);
        if (plan == NULL) return -1;
        if (!PyTuple_Check(plan) || PyTuple_GET_SIZE(plan) != 2) {
            Py_DECREF(plan);
            PyErr_SetString(PyExc_TypeError, "repeat_plan must return (split node or None, item)");
            return -1;
        }
        PyObject *split = PyTuple_GET_ITEM(plan, 0);
        if (split != Py_None) {
            int rc = emit(e, split, s, t);
            Py_DECREF(plan);
            return rc;
        }
        item = PyTuple_GET_ITEM(plan, 1);
        Py_INCREF(item);
        Py_DECREF(plan);
    } else if ((item = PyObject_GetAttr(node, S_ITEM)) == NULL) {
        return -1;
    }
    int rc = 0;
    Py_ssize_t cur = s, nxt = s;
    int32_t r[2 * ITEM_RANGES];
    Py_ssize_t nr = -1;  /* a Bytes item's ranges, read once (its copies were a flexible NFA's most nodes) */
    if (Py_TYPE(item) == T_BYTES && (unbounded ? lo : hi) > 1 && (nr = item_ranges(item, r)) < 0) rc = -1;
    for (long i = 0; i < lo && rc == 0; i++) {
        if ((nxt = new_state(e)) < 0) rc = -1;
        else rc = emit_copy(e, item, r, nr, cur, nxt);
        cur = nxt;
    }
    if (rc == 0 && unbounded) {
        Py_ssize_t loop = new_state(e);
        rc = loop < 0 || add_eps(e, cur, loop) < 0 || emit_copy(e, item, r, nr, loop, loop) < 0
             || add_eps(e, loop, t) < 0 ? -1 : 0;
    } else if (rc == 0) {
        for (long i = 0; i < hi - lo && rc == 0; i++) {
            if (add_eps(e, cur, t) < 0 || (nxt = new_state(e)) < 0) rc = -1;
            else rc = emit_copy(e, item, r, nr, cur, nxt);
            cur = nxt;
        }
        if (rc == 0) rc = add_eps(e, cur, t);
    }
    Py_DECREF(item);
    return rc;
}

/* A Ref: its plan from the builder (memoized there): a rule id is a call edge, a node is inlined. */
static int emit_ref(Emitter *e, PyObject *node, Py_ssize_t s, Py_ssize_t t) {
    PyObject *name = PyObject_GetAttr(node, S_NAME);
    if (name == NULL) return -1;
    PyObject *plan = PyDict_GetItemWithError(e->ref_plans, name);  /* borrowed */
    if (plan != NULL) {
        Py_INCREF(plan);
    } else if (!PyErr_Occurred()) {
        plan = PyObject_CallMethodOneArg(e->builder, S_REF_PLAN, name);
    }
    Py_DECREF(name);
    if (plan == NULL) return -1;
    int rc;
    if (PyLong_CheckExact(plan)) {
        int32_t x[3] = {(int32_t)s, 0, (int32_t)t};
        rc = state_id(PyLong_AsSsize_t(plan), &x[1]) < 0 ? -1 : log_push(&e->calls, x, 3);
    } else {
        rc = emit(e, plan, s, t);
    }
    Py_DECREF(plan);
    return rc;
}

static int emit_graph(Emitter *e, PyObject *node, Py_ssize_t s, Py_ssize_t t) {
    long num;
    int none;
    if (long_attr(node, S_NUM_STATES, &num, &none) < 0) return -1;
    PyObject *edges = attr_tuple(node, S_EDGES), *finals = edges ? attr_tuple(node, S_FINALS) : NULL;
    Py_ssize_t *states = num > 0 ? PyMem_Malloc(sizeof(Py_ssize_t) * num) : NULL;
    int rc = finals == NULL || (num > 0 && states == NULL) ? -1 : 0;
    if (rc == 0 && num <= 0) {
        PyErr_SetString(PyExc_ValueError, "a Graph needs at least one state");
        rc = -1;
    }
    for (long i = 0; i < num && rc == 0; i++)
        if ((states[i] = new_state(e)) < 0) rc = -1;
    if (rc == 0) rc = add_eps(e, s, states[0]);
    for (Py_ssize_t i = 0; rc == 0 && i < PyTuple_GET_SIZE(edges); i++) {
        PyObject *edge = PyTuple_GET_ITEM(edges, i);
        long a, b;
        if (!PyTuple_Check(edge) || PyTuple_GET_SIZE(edge) != 3
            || (a = PyLong_AsLong(PyTuple_GET_ITEM(edge, 0))) == -1 || (b = PyLong_AsLong(PyTuple_GET_ITEM(edge, 1))) == -1
            || a < 0 || a >= num || b < 0 || b >= num) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "a Graph edge must be (a, b, label) between its states");
            rc = -1;
            break;
        }
        PyObject *label = PyTuple_GET_ITEM(edge, 2);
        rc = label == Py_None ? add_eps(e, states[a], states[b]) : emit(e, label, states[a], states[b]);
    }
    for (Py_ssize_t i = 0; rc == 0 && i < PyTuple_GET_SIZE(finals); i++) {
        long f = PyLong_AsLong(PyTuple_GET_ITEM(finals, i));
        if (f < 0 || f >= num) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "a Graph final must be one of its states");
            rc = -1;
        } else {
            rc = add_eps(e, states[f], t);
        }
    }
    PyMem_Free(states);
    Py_XDECREF(edges);
    Py_XDECREF(finals);
    return rc;
}

static int emit(Emitter *e, PyObject *node, Py_ssize_t s, Py_ssize_t t) {
    if (Py_EnterRecursiveCall(" while building the grammar's automaton")) return -1;
    PyTypeObject *kind = Py_TYPE(node);
    int rc;
    if (kind == T_BYTES) {
        PyObject *ranges = ranges_of(node);
        rc = ranges ? emit_bytes(e, ranges, s, t) : -1;
        Py_XDECREF(ranges);
    } else if (kind == T_SEQ) {
        rc = emit_seq(e, node, s, t);
    } else if (kind == T_ALT) {
        rc = emit_alt(e, node, s, t);
    } else if (kind == T_REPEAT) {
        rc = emit_repeat(e, node, s, t);
    } else if (kind == T_REF) {
        rc = emit_ref(e, node, s, t);
    } else if (kind == T_GRAPH) {
        rc = emit_graph(e, node, s, t);
    } else {  /* a subclass (Lark's group while parsing): the builder makes it its base class */
        PyObject *r = PyObject_CallMethod(e->builder, "emit_other", "Onn", node, s, t);
        rc = r ? 0 : -1;
        Py_XDECREF(r);
    }
    Py_LeaveRecursiveCall();
    return rc;
}

static PyObject *Emitter_emit(Emitter *e, PyObject *args) {
    PyObject *node;
    Py_ssize_t s, t;
    if (!PyArg_ParseTuple(args, "Onn", &node, &s, &t)) return NULL;
    Py_ssize_t n = e->num_states;
    if (s < 0 || t < 0 || s >= n || t >= n) {
        PyErr_SetString(PyExc_ValueError, "emit: states out of the Nfa's tables");
        return NULL;
    }
    if (emit(e, node, s, t) < 0) return NULL;
    Py_RETURN_NONE;
}

static int Emitter_init(Emitter *e, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"builder", "nfa", "ref_plans", "compact", "hoist_min_copies", NULL};
    PyObject *builder, *nfa, *plans;
    int compact;
    long hoist;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOO!pl", kwlist, &builder, &nfa, &PyDict_Type, &plans, &compact, &hoist))
        return -1;
    Py_INCREF(builder);
    Py_INCREF(nfa);
    Py_INCREF(plans);
    Py_XSETREF(e->builder, builder);
    Py_XSETREF(e->nfa, nfa);
    Py_XSETREF(e->ref_plans, plans);
    Py_XSETREF(e->repeat_memo, PyDict_New());
    if (e->repeat_memo == NULL) return -1;
    e->eps.len = e->edges.len = e->calls.len = 0;
    e->num_states = 0;
    e->compact = compact;
    e->hoist_min_copies = hoist;
    return 0;
}

static int Emitter_traverse(Emitter *e, visitproc visit, void *arg) {
    Py_VISIT(e->builder);
    Py_VISIT(e->nfa);
    Py_VISIT(e->ref_plans);
    Py_VISIT(e->repeat_memo);
    return 0;
}

static int Emitter_clear(Emitter *e) {
    Py_CLEAR(e->builder);
    Py_CLEAR(e->nfa);
    Py_CLEAR(e->ref_plans);
    Py_CLEAR(e->repeat_memo);
    return 0;
}

static void Emitter_dealloc(Emitter *e) {
    PyObject_GC_UnTrack(e);
    Emitter_clear(e);
    PyMem_Free(e->eps.data);
    PyMem_Free(e->edges.data);
    PyMem_Free(e->calls.data);
    Py_TYPE(e)->tp_free((PyObject *)e);
}

static PyObject *Emitter_new_state(Emitter *e, PyObject *unused) {
    Py_ssize_t n = new_state(e);
    return n < 0 ? NULL : PyLong_FromSsize_t(n);
}

/* One packed table: off[num_states + 1] (as bytes) and the rows' fields (width ints per edge, the
 * source state dropped) in state order, each state's edges in the order they were emitted. */
static int pack(const Log *g, int width, Py_ssize_t n, PyObject **off_out, PyObject **dat_out) {
    Py_ssize_t m = g->len / width;
    *off_out = PyBytes_FromStringAndSize(NULL, (n + 1) * sizeof(int32_t));
    *dat_out = PyBytes_FromStringAndSize(NULL, m * (width - 1) * sizeof(int32_t));
    if (*off_out == NULL || *dat_out == NULL) return -1;
    int32_t *off = (int32_t *)PyBytes_AS_STRING(*off_out), *dat = (int32_t *)PyBytes_AS_STRING(*dat_out);
    memset(off, 0, (n + 1) * sizeof(int32_t));
    for (Py_ssize_t i = 0; i < m; i++) {
        int32_t s = g->data[i * width];
        if (s < 0 || s >= n) { PyErr_SetString(PyExc_ValueError, "emit: an edge from a state out of the tables"); return -1; }
        off[s + 1]++;
    }
    for (Py_ssize_t s = 0; s < n; s++) off[s + 1] += off[s];
    int32_t *fill = PyMem_Malloc((n ? n : 1) * sizeof(int32_t));
    if (fill == NULL) { PyErr_NoMemory(); return -1; }
    memcpy(fill, off, n * sizeof(int32_t));
    for (Py_ssize_t i = 0; i < m; i++) {
        const int32_t *x = g->data + i * width;
        memcpy(dat + (Py_ssize_t)fill[x[0]]++ * (width - 1), x + 1, (width - 1) * sizeof(int32_t));
    }
    PyMem_Free(fill);
    return 0;
}

/* finish() -> (num_states, edge_off, edges, eps_off, eps, call_off, calls): the NFA's packed tables
 * (int32 bytes: edges (lo, hi, t), eps t, calls (rule, t), each state's in emission order from its
 * off[s] to off[s + 1]), read by the DFA builder (grammar/automaton/_dfa.c) without a Python object
 * per state; grammar/automaton/nfa.py's Nfa makes the lists from them only when asked. */
static PyObject *Emitter_finish(Emitter *e, PyObject *unused) {
    PyObject *t[6] = {NULL, NULL, NULL, NULL, NULL, NULL};
    PyObject *out = NULL;
    if (pack(&e->edges, 4, e->num_states, &t[0], &t[1]) == 0 && pack(&e->eps, 2, e->num_states, &t[2], &t[3]) == 0
        && pack(&e->calls, 3, e->num_states, &t[4], &t[5]) == 0)
        out = Py_BuildValue("(nOOOOOO)", e->num_states, t[0], t[1], t[2], t[3], t[4], t[5]);
    for (int i = 0; i < 6; i++) Py_XDECREF(t[i]);
    return out;
}

static PyMethodDef Emitter_methods[] = {
    {"emit", (PyCFunction)Emitter_emit, METH_VARARGS, "emit(node, s, t): node's automaton from state s to state t"},
    {"new_state", (PyCFunction)Emitter_new_state, METH_NOARGS, "new_state() -> a new state's id"},
    {"finish", (PyCFunction)Emitter_finish, METH_NOARGS, "finish() -> the packed tables (see Nfa.packed)"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject EmitterType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "grammar.automaton._nfa.Emitter",
    .tp_basicsize = sizeof(Emitter),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "Emitter(builder, nfa, ref_plans, compact, hoist_min_copies): NfaBuilder's node walk in C",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Emitter_init,
    .tp_dealloc = (destructor)Emitter_dealloc,
    .tp_traverse = (traverseproc)Emitter_traverse,
    .tp_clear = (inquiry)Emitter_clear,
    .tp_methods = Emitter_methods,
};

/* ---- rule_facts: nfa_ref.rule_facts ---- */

#define SIZE_CAP ((long long)1 << 60)

static long long cap_mul(long long a, long long b) {
    long long r;
    return (__builtin_mul_overflow(a, b, &r) || r > SIZE_CAP) ? SIZE_CAP : r;
}

static long long cap_add(long long a, long long b) { return a + b > SIZE_CAP ? SIZE_CAP : a + b; }

typedef struct {
    PyObject **node;  /* borrowed: every node is held by its rule's tree */
    long long *times;
    Py_ssize_t len, cap;
} Stack;

static int stack_push(Stack *st, PyObject *node, long long times) {
    if (st->len == st->cap) {
        Py_ssize_t cap = st->cap ? st->cap * 2 : 64;
        PyObject **n = PyMem_Realloc(st->node, sizeof(PyObject *) * cap);
        if (n == NULL) return -1;
        st->node = n;
        long long *t = PyMem_Realloc(st->times, sizeof(long long) * cap);
        if (t == NULL) return -1;
        st->times = t;
        st->cap = cap;
    }
    st->node[st->len] = node;
    st->times[st->len++] = times;
    return 0;
}

/* The node kind `node` is one of (a subclass counts as its base class); NULL with an error if none. */
static PyTypeObject *node_kind(PyObject *node) {
    PyTypeObject *kinds[6] = {T_BYTES, T_SEQ, T_ALT, T_REPEAT, T_REF, T_GRAPH};
    PyTypeObject *kind = Py_TYPE(node);
    for (int i = 0; i < 6; i++)
        if (kind == kinds[i]) return kind;
    for (int i = 0; i < 6; i++)
        if (PyObject_TypeCheck(node, kinds[i])) return kinds[i];
    PyErr_Format(PyExc_TypeError, "not a grammar node: %R", node);
    return NULL;
}

/* Pushes a tuple attribute's items (a Graph's edges: their non-None labels) with weight `times`. */
static int push_items(Stack *st, PyObject *node, PyObject *attr, int labels, long long times) {
    PyObject *items = attr_tuple(node, attr);
    if (items == NULL) return -1;
    int rc = 0;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(items) && rc == 0; i++) {
        PyObject *item = PyTuple_GET_ITEM(items, i);
        if (labels) {
            if ((item = edge_label(item)) == NULL) {
                rc = -1;
                break;
            }
            if (item == Py_None) continue;
        }
        rc = stack_push(st, item, times);
    }
    Py_DECREF(items);  /* the tuple stays alive: the node holds it */
    return rc;
}

/* One rule's walk; fills refs (a set), ref_times (a list) and counts, returns its own size (-1: error). */
static long long rule_walk(PyObject *rules, PyObject *root, PyObject *refs, PyObject *ref_times, PyObject *counts,
                           Stack *ones, Stack *many) {
    long long size = 0;
    ones->len = many->len = 0;
    if (stack_push(ones, root, 1) < 0) return -1;
    while (ones->len || many->len) {
        PyObject *cur;
        long long times;
        if (ones->len) {
            cur = ones->node[--ones->len];
            times = 1;
        } else {
            --many->len;
            cur = many->node[many->len];
            times = many->times[many->len];
        }
        size = cap_add(size, times);
        PyTypeObject *kind = node_kind(cur);
        Stack *into = times == 1 ? ones : many;
        int rc = 0;
        if (kind == NULL) {
            rc = -1;
        } else if (kind == T_SEQ || kind == T_ALT) {
            rc = push_items(into, cur, S_ITEMS, 0, times);
        } else if (kind == T_REF) {
            PyObject *name = PyObject_GetAttr(cur, S_NAME);
            if (name == NULL) return -1;
            int known = PyDict_Contains(rules, name);
            PyObject *old = known == 1 ? PyDict_GetItemWithError(counts, name) : NULL;
            long long count = old ? PyLong_AsLongLong(old) : 0;
            PyObject *num = NULL, *times_obj = NULL, *pair = NULL;
            if (known == 0) {
                PyObject *repr = PyObject_Repr(name);
                if (repr) PyErr_Format(GRAMMAR_ERROR, "undefined rule %U", repr);
                Py_XDECREF(repr);
            }
            rc = known != 1 || PyErr_Occurred() || PySet_Add(refs, name) < 0
                 || (num = PyLong_FromLongLong(count + 1)) == NULL || PyDict_SetItem(counts, name, num) < 0
                 || (times_obj = PyLong_FromLongLong(times)) == NULL || (pair = PyTuple_Pack(2, name, times_obj)) == NULL
                 || PyList_Append(ref_times, pair) < 0 ? -1 : 0;
            Py_XDECREF(num);
            Py_XDECREF(times_obj);
            Py_XDECREF(pair);
            Py_DECREF(name);
        } else if (kind == T_REPEAT) {
            long lo, hi;
            int no_lo, unbounded;
            PyObject *item = NULL;
            rc = long_attr(cur, S_MIN, &lo, &no_lo) < 0 || long_attr(cur, S_MAX, &hi, &unbounded) < 0
                 || (item = PyObject_GetAttr(cur, S_ITEM)) == NULL ? -1 : 0;
            if (rc == 0) {
                long n = unbounded ? lo : hi;
                long long copies = cap_mul(times, n > 1 ? n : 1);
                rc = stack_push(copies == 1 ? ones : many, item, copies);
            }
            Py_XDECREF(item);  /* held by the repeat */
        } else if (kind == T_GRAPH) {
            long num;
            int none;
            rc = push_items(into, cur, S_EDGES, 1, times) < 0 || long_attr(cur, S_NUM_STATES, &num, &none) < 0 ? -1 : 0;
            if (rc == 0) size = cap_add(size, cap_mul(times, num - 1));  /* num_states in all, as node_size */
        }
        if (rc < 0) return -1;
    }
    return size;
}

static PyObject *rule_facts(PyObject *self, PyObject *rules) {
    if (!PyDict_Check(rules)) {
        PyErr_SetString(PyExc_TypeError, "rule_facts(rules): a dict of rule nodes");
        return NULL;
    }
    PyObject *graph = PyDict_New(), *counts = PyDict_New(), *own = PyDict_New(), *ref_times = PyDict_New();
    Stack ones = {0}, many = {0};
    int ok = graph && counts && own && ref_times;
    PyObject *name, *node;
    Py_ssize_t pos = 0;
    while (ok && PyDict_Next(rules, &pos, &name, &node)) {
        PyObject *refs = PySet_New(NULL), *times = PyList_New(0), *size_obj = NULL;
        long long size = refs && times ? rule_walk(rules, node, refs, times, counts, &ones, &many) : -1;
        ok = size >= 0 && (size_obj = PyLong_FromLongLong(size)) != NULL && PyDict_SetItem(graph, name, refs) == 0
             && PyDict_SetItem(own, name, size_obj) == 0 && PyDict_SetItem(ref_times, name, times) == 0;
        Py_XDECREF(refs);
        Py_XDECREF(times);
        Py_XDECREF(size_obj);
    }
    PyMem_Free(ones.node);
    PyMem_Free(ones.times);
    PyMem_Free(many.node);
    PyMem_Free(many.times);
    PyObject *out = ok ? PyTuple_Pack(4, graph, counts, own, ref_times) : NULL;
    Py_XDECREF(graph);
    Py_XDECREF(counts);
    Py_XDECREF(own);
    Py_XDECREF(ref_times);
    return out;
}

static PyMethodDef module_methods[] = {
    {"rule_facts", (PyCFunction)rule_facts, METH_O,
     "rule_facts(rules) -> (graph, counts, own_size, ref_times): see nfa_ref.rule_facts"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef nfa_module = {PyModuleDef_HEAD_INIT, "grammar.automaton._nfa", NULL, -1, module_methods};

static int load_type(PyObject *ir, const char *name, PyTypeObject **out) {
    PyObject *t = PyObject_GetAttrString(ir, name);
    if (t == NULL) return -1;
    if (!PyType_Check(t)) {
        Py_DECREF(t);
        PyErr_Format(PyExc_TypeError, "grammar.ir.%s is not a class", name);
        return -1;
    }
    *out = (PyTypeObject *)t;  /* kept for the module's life */
    return 0;
}

PyMODINIT_FUNC PyInit__nfa(void) {
    PyObject *ir = PyImport_ImportModule("grammar.ir");
    if (ir == NULL) return NULL;
    int rc = load_type(ir, "Bytes", &T_BYTES) | load_type(ir, "Seq", &T_SEQ) | load_type(ir, "Alt", &T_ALT)
             | load_type(ir, "Repeat", &T_REPEAT) | load_type(ir, "Ref", &T_REF) | load_type(ir, "Graph", &T_GRAPH);
    Py_DECREF(ir);
    if (rc < 0) return NULL;
    PyObject *errors = PyImport_ImportModule("grammar.errors");
    if (errors == NULL) return NULL;
    GRAMMAR_ERROR = PyObject_GetAttrString(errors, "GrammarError");  /* kept for the module's life */
    Py_DECREF(errors);
    if (GRAMMAR_ERROR == NULL) return NULL;
    struct { PyObject **slot; const char *text; } names[] = {
        {&S_RANGES, "ranges"}, {&S_ITEMS, "items"}, {&S_ITEM, "item"}, {&S_MIN, "min"}, {&S_MAX, "max"},
        {&S_NAME, "name"}, {&S_NUM_STATES, "num_states"}, {&S_EDGES, "edges"}, {&S_FINALS, "finals"},
        {&S_REPEAT_PLAN, "repeat_plan"}, {&S_REF_PLAN, "ref_plan"},
        {&S_CHECK_SIZE, "check_size"},
    };
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if ((*names[i].slot = PyUnicode_InternFromString(names[i].text)) == NULL) return NULL;
    if (PyType_Ready(&EmitterType) < 0) return NULL;
    PyObject *m = PyModule_Create(&nfa_module);
    if (m == NULL) return NULL;
    Py_INCREF(&EmitterType);
    if (PyModule_AddObject(m, "Emitter", (PyObject *)&EmitterType) < 0) {
        Py_DECREF(&EmitterType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
