/* grammar._ir: measures of the internal grammar form (grammar/ir.py) in C.
 *
 * `copy_size(node, memo, ref_size)` is ir.copy_size (its Python reference, used without a C
 * compiler and tested against this): the NFA states a copy of a node may take, which the JSON
 * front end's property-order budget asks of every object's members (grammar/frontends/json_order.py
 * CopyBudget).  Walked in Python, with each node's size kept per compile, it was still about a
 * tenth of a typical schema's front end.  The node classes are looked up in grammar.ir at the
 * first call (grammar.ir imports this module).  Sizes saturate at SIZE_CAP, far above any budget.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "ir_nodes.h"

#define SIZE_CAP ((long long)1 << 60)

static PyObject *T_BYTES, *T_SEQ, *T_ALT, *T_REPEAT, *T_REF, *T_GRAPH;
static PyObject *S_ITEMS, *S_ITEM, *S_MIN, *S_MAX, *S_NUM_STATES, *S_EDGES;

static long long cap_add(long long a, long long b) { return a + b > SIZE_CAP ? SIZE_CAP : a + b; }

static long long cap_mul(long long a, long long b) {
    long long r;
    return (__builtin_mul_overflow(a, b, &r) || r > SIZE_CAP) ? SIZE_CAP : r;
}

/* The node classes of grammar.ir, on first use. */
static int load_types(void) {
    if (T_BYTES != NULL) return 0;
    PyObject *ir = PyImport_ImportModule("grammar.ir");
    if (ir == NULL) return -1;
    PyObject **slots[6] = {&T_BYTES, &T_SEQ, &T_ALT, &T_REPEAT, &T_REF, &T_GRAPH};
    const char *names[6] = {"Bytes", "Seq", "Alt", "Repeat", "Ref", "Graph"};
    int rc = 0;
    for (int i = 0; i < 6 && rc == 0; i++) {
        PyObject *t = PyObject_GetAttrString(ir, names[i]);  /* kept for the module's life */
        if (t == NULL || !PyType_Check(t)) {
            Py_XDECREF(t);
            if (!PyErr_Occurred()) PyErr_Format(PyExc_TypeError, "grammar.ir.%s is not a class", names[i]);
            rc = -1;
        } else {
            *slots[i] = t;
        }
    }
    Py_DECREF(ir);
    if (rc < 0) T_BYTES = NULL;  /* (asked again next time) */
    return rc;
}

/* The class among grammar.ir's nodes that `node` is (a subclass by isinstance), or NULL. */
static PyObject *node_kind(PyObject *node) {
    PyObject *kinds[6] = {T_BYTES, T_SEQ, T_ALT, T_REPEAT, T_REF, T_GRAPH};
    for (int i = 0; i < 6; i++)
        if ((PyObject *)Py_TYPE(node) == kinds[i]) return kinds[i];
    for (int i = 0; i < 6; i++)
        if (PyObject_TypeCheck(node, (PyTypeObject *)kinds[i])) return kinds[i];
    PyErr_Format(PyExc_TypeError, "not a grammar node: %R", node);
    return NULL;
}

/* copy_size of `node`, memoized in `memo` as id -> (node, size); -1 with an exception set. */
static long long copy_size_of(PyObject *node, PyObject *memo, long long ref_size) {
    PyObject *key = PyLong_FromVoidPtr(node);
    if (key == NULL) return -1;
    PyObject *hit = PyDict_GetItemWithError(memo, key);  /* borrowed */
    if (hit != NULL && PyTuple_Check(hit) && PyTuple_GET_SIZE(hit) == 2 && PyTuple_GET_ITEM(hit, 0) == node) {
        long long known = PyLong_AsLongLong(PyTuple_GET_ITEM(hit, 1));
        Py_DECREF(key);
        return known;
    }
    if (PyErr_Occurred() || Py_EnterRecursiveCall(" measuring a grammar node")) {
        Py_DECREF(key);
        return -1;
    }
    long long size = -1;
    PyObject *kind = node_kind(node);
    if (kind == T_BYTES) {
        size = 1;
    } else if (kind == T_REF) {
        size = ref_size;
    } else if (kind == T_REPEAT) {
        long lo, hi;
        int no_lo, unbounded;
        PyObject *item = NULL;
        if (long_attr(node, S_MIN, &lo, &no_lo) == 0 && long_attr(node, S_MAX, &hi, &unbounded) == 0
            && (item = PyObject_GetAttr(node, S_ITEM)) != NULL) {
            long copies = unbounded ? lo : hi;
            long long inner = copy_size_of(item, memo, ref_size);
            if (inner >= 0) size = cap_add(1, cap_mul(copies > 1 ? copies : 1, inner));
        }
        Py_XDECREF(item);
    } else if (kind != NULL) {  /* Seq, Alt: 1 and the items; Graph: its states and its edges' labels */
        int graph = kind == T_GRAPH;
        long num = 0;
        int none;
        PyObject *items = attr_tuple(node, graph ? S_EDGES : S_ITEMS);
        if (items != NULL && (!graph || long_attr(node, S_NUM_STATES, &num, &none) == 0)) {
            size = graph ? num : 1;
            for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(items) && size >= 0; i++) {
                PyObject *item = PyTuple_GET_ITEM(items, i);
                if (graph) {
                    if ((item = edge_label(item)) == NULL) {
                        size = -1;
                        break;
                    }
                    if (item == Py_None) continue;
                }
                long long inner = copy_size_of(item, memo, ref_size);
                size = inner < 0 ? -1 : cap_add(size, inner);
            }
        }
        Py_XDECREF(items);
    }
    Py_LeaveRecursiveCall();
    if (size >= 0) {
        PyObject *value = PyLong_FromLongLong(size), *entry = value ? PyTuple_Pack(2, node, value) : NULL;
        if (entry == NULL || PyDict_SetItem(memo, key, entry) < 0) size = -1;
        Py_XDECREF(value);
        Py_XDECREF(entry);
    }
    Py_DECREF(key);
    return size;
}

static PyObject *copy_size(PyObject *self, PyObject *args) {
    PyObject *node, *memo;
    long long ref_size;
    if (!PyArg_ParseTuple(args, "OO!L", &node, &PyDict_Type, &memo, &ref_size)) return NULL;
    if (load_types() < 0) return NULL;
    long long size = copy_size_of(node, memo, ref_size);
    return size < 0 ? NULL : PyLong_FromLongLong(size);
}

static PyMethodDef module_methods[] = {
    {"copy_size", (PyCFunction)copy_size, METH_VARARGS,
     "copy_size(node, memo, ref_size) -> the NFA states a copy of node may take: see grammar.ir.copy_size"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef ir_module = {PyModuleDef_HEAD_INIT, "grammar._ir", NULL, -1, module_methods};

PyMODINIT_FUNC PyInit__ir(void) {
    struct { PyObject **slot; const char *text; } names[] = {
        {&S_ITEMS, "items"}, {&S_ITEM, "item"}, {&S_MIN, "min"}, {&S_MAX, "max"}, {&S_NUM_STATES, "num_states"},
        {&S_EDGES, "edges"},
    };
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if ((*names[i].slot = PyUnicode_InternFromString(names[i].text)) == NULL) return NULL;
    return PyModule_Create(&ir_module);
}
