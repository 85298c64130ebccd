/* The interface between grammar's C extensions (grammar/automaton/_dfa.c, grammar/masks/_walk.c)
 * and their Python side: the values the DFA tables hold, the pushdown limits, and the C API the
 * row builder hands the walk through a capsule.  Python reads the same constants from
 * grammar/automaton/constants.py; each extension exports these as CONSTANTS and a test
 * (tests/grammar/test_reference_impls.py) checks that the three agree.
 */
#ifndef GRAMMAR_CORE_H
#define GRAMMAR_CORE_H

#include <Python.h>
#include <stdint.h>

/* ---- DFA tables (grammar/automaton/dfa.py LazyDfa) ---- */
#define UNKNOWN (-2)            /* trans: the row is not built yet */
#define DEAD (-1)               /* trans: the byte is rejected; dominant: no dominant target */
#define FLAG_CALLS 1            /* flags: the state calls a rule */
#define FLAG_FINAL 2            /* flags: the state ends its rule */
#define NO_SLICE (-1)           /* slice_of: no token slice */
#define SLICE_UNKNOWN (-2)      /* slice_of: not computed yet */
#define UNBOUNDED (1 << 30)     /* absorb: the state loops on its slice */
#define MIN_DOMINANT_BYTES 26   /* dominant: a target of at least this many bytes ([a-z] is the smallest slice) */

/* ---- text closure (the builders' text_closed) ---- */
#define MAX_SEQS 16             /* UTF-8 sequence families set_utf8 takes */
#define MAX_CLOSED_NODES 4096   /* a search gives up (answers no) past this many (state, character position) pairs, */
#define MAX_CLOSED_ROWS 64      /* or past this many rows it had to build (a row of a large NFA's DFA can cost 0.1 ms); */
#define MAX_CLOSURE_ROWS 1024   /* past this many rows built by all of a DFA's searches, states not known are not closed */

/* ---- pushdown configurations (grammar/automaton/pda.py) ---- */
#define WS_UNKNOWN (-2)         /* ws_run: not known yet */
#define NOT_WS_RUN (-1)         /* ws_run: the state is not in a bounded whitespace gap */
#define WS_MAX_RUN 100          /* ws_run: longer gaps are stepped state by state */

#define MAX_STACK 128           /* calls past this depth are not taken */
#define MAX_CONFIGS 4096        /* an expansion stops growing here */

/* ---- the row builder's C API, for the walk ---- */
#define DFA_CAPSULE "grammar.automaton._dfa._C_API"

/* Raw pointers into a LazyDfa's tables, valid until a call reports a reallocation. */
typedef struct {
    const int32_t *trans;
    const uint8_t *flags;
    const int16_t *slice_of;
    const int32_t *absorb, *dominant;
    Py_ssize_t num_states;  /* rows made so far (the rest of the tables is uninitialized) */
} DfaTables;

/* Each call returns -1 on error, 1 when the tables were reallocated (take them again), else 0. */
typedef struct {
    int (*row)(PyObject *builder, PyObject *dfa, long d);      /* fill trans[d] and dominant[d] */
    int (*prepare)(PyObject *builder, PyObject *dfa, long d);  /* the same, also slice_of[d] and absorb[d] */
    PyTypeObject *type;                                        /* the Builder type */
    int (*tables)(PyObject *builder, PyObject *dfa, DfaTables *out);  /* the current tables (0 or -1) */
    int (*upgrade)(PyObject *builder, PyObject *dfa, long d, long *sid);  /* LazyDfa.upgrade_to_utf8 */
    int (*utf8_to)(PyObject *builder, PyObject *dfa, long d, long target, long *ok);  /* LazyDfa.utf8_to */
    int (*text_closed)(PyObject *builder, PyObject *dfa, long d, long *ok);  /* LazyDfa.text_closed */
    /* the whitespace bytes state d still takes when it is a bounded whitespace gap's state whose row
     * is the gap's others' but for tab, newline and space (those: the next count's state); else
     * NOT_WS_RUN (grammar/automaton/_dfa.c ws_run_of; the walk counts them, grammar/masks/_walk.c) */
    int (*ws_run)(PyObject *builder, PyObject *dfa, long d, long *left);
} DfaApi;

/* module.CONSTANTS = {name: value} of the constants above (both extensions export it). */
static int add_core_constants(PyObject *module) {
    static const struct { const char *name; long value; } constants[] = {
        {"UNKNOWN", UNKNOWN}, {"DEAD", DEAD}, {"FLAG_CALLS", FLAG_CALLS}, {"FLAG_FINAL", FLAG_FINAL},
        {"NO_SLICE", NO_SLICE}, {"SLICE_UNKNOWN", SLICE_UNKNOWN}, {"UNBOUNDED", UNBOUNDED},
        {"MIN_DOMINANT_BYTES", MIN_DOMINANT_BYTES}, {"MAX_STACK", MAX_STACK}, {"MAX_CONFIGS", MAX_CONFIGS},
        {"MAX_SEQS", MAX_SEQS}, {"MAX_CLOSED_NODES", MAX_CLOSED_NODES}, {"MAX_CLOSED_ROWS", MAX_CLOSED_ROWS},
        {"MAX_CLOSURE_ROWS", MAX_CLOSURE_ROWS}, {"WS_UNKNOWN", WS_UNKNOWN}, {"NOT_WS_RUN", NOT_WS_RUN},
        {"WS_MAX_RUN", WS_MAX_RUN},
    };
    PyObject *d = PyDict_New();
    if (!d) return -1;
    for (size_t i = 0; i < sizeof(constants) / sizeof(constants[0]); i++) {
        PyObject *v = PyLong_FromLong(constants[i].value);
        if (!v || PyDict_SetItemString(d, constants[i].name, v) < 0) { Py_XDECREF(v); Py_DECREF(d); return -1; }
        Py_DECREF(v);
    }
    if (PyModule_AddObject(module, "CONSTANTS", d) < 0) { Py_DECREF(d); return -1; }
    return 0;
}

#endif
