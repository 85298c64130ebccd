/* A growable int32 array for the grammar's C extensions (grammar/automaton/_dfa.c, grammar/masks/_walk.c). */
#ifndef GRAMMAR_VEC_H
#define GRAMMAR_VEC_H

typedef struct {
    int32_t *data;
    Py_ssize_t len, cap;
} Vec;

/* Room for `extra` more ints (the capacity doubles from 64). */
static int vec_reserve(Vec *v, Py_ssize_t extra) {
    if (v->len + extra <= v->cap) return 0;
    Py_ssize_t cap = v->cap ? v->cap : 64;
    while (cap < v->len + extra) cap *= 2;
    int32_t *p = realloc(v->data, cap * sizeof(int32_t));
    if (!p) { PyErr_NoMemory(); return -1; }
    v->data = p;
    v->cap = cap;
    return 0;
}

#endif
