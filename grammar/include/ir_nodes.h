/* Reading grammar/ir.py's node dataclasses from C: the attribute helpers that the NFA builder's walk
 * (grammar/automaton/_nfa.c) and the node measures (grammar/_ir.c) share. */
#ifndef GRAMMAR_IR_NODES_H
#define GRAMMAR_IR_NODES_H

#include <Python.h>

/* node.<name> as a tuple (a new reference), or NULL with TypeError. */
static inline PyObject *attr_tuple(PyObject *node, PyObject *name) {
    PyObject *v = PyObject_GetAttr(node, name);
    if (v != NULL && !PyTuple_Check(v)) {
        Py_DECREF(v);
        PyErr_Format(PyExc_TypeError, "%U of a grammar node must be a tuple", name);
        return NULL;
    }
    return v;
}

/* node.<name> as a long into *out (0 and *is_none set when it is None); -1 with an exception set. */
static inline int long_attr(PyObject *node, PyObject *name, long *out, int *is_none) {
    PyObject *v = PyObject_GetAttr(node, name);
    if (v == NULL) return -1;
    *is_none = v == Py_None;
    *out = *is_none ? 0 : PyLong_AsLong(v);
    Py_DECREF(v);
    return (*out == -1 && PyErr_Occurred()) ? -1 : 0;
}

/* A Graph edge's label (borrowed; Py_None: epsilon), or NULL with ValueError when the edge is not (a, b, label). */
static inline PyObject *edge_label(PyObject *edge) {
    if (!PyTuple_Check(edge) || PyTuple_GET_SIZE(edge) != 3) {
        PyErr_SetString(PyExc_ValueError, "a Graph edge must be (a, b, label)");
        return NULL;
    }
    return PyTuple_GET_ITEM(edge, 2);
}

#endif
