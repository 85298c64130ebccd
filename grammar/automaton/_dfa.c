/* grammar.automaton._dfa: DFA row construction for grammar/automaton/dfa.py's LazyDfa, in C
 * (its Python reference, with the same methods: grammar/automaton/dfa_ref.py).
 *
 * A Builder takes the NFA as packed int32 tables (the C walk's `Nfa.packed`, copied; or the
 * reference walk's Python lists byte_edges, eps, calls, packed here), checked once, and keeps, per NFA state, its epsilon closure (the states with byte edges, calls or a rule
 * end), and a hash table from sorted NFA-state sets to DFA state ids.  It writes into the
 * LazyDfa's numpy tables (trans, flags, is_final, has_calls, slice_of, absorb, dominant), which it
 * holds as buffers; when a new DFA state does not fit, it calls `dfa._grow()` and takes the new
 * tables.  State ids are given in the same order as the reference builder, so both build the
 * same automaton.  The C walk (grammar/masks/_walk.c) reaches `prepare`, `row` and the tables'
 * raw pointers through the capsule DFA_CAPSULE (grammar/include/grammar_core.h) without going
 * through Python.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "grammar_core.h"
#include "sort.h"
#include "vec.h"

#define NUM_TABLES 7

enum { T_TRANS, T_FLAGS, T_FINAL, T_CALLS, T_SLICE, T_ABSORB, T_DOMINANT };
static const char *TABLE_NAMES[NUM_TABLES] = {"trans", "flags", "is_final", "has_calls", "slice_of", "absorb", "dominant"};

static inline int vec_push(Vec *v, int32_t x) {
    if (v->len == v->cap && vec_reserve(v, 1) < 0) return -1;
    v->data[v->len++] = x;
    return 0;
}

typedef struct {
    uint8_t lo[4], hi[4];
    int len;
} Seq;  /* byte ranges of one family of UTF-8 characters */

typedef struct {
    PyObject_HEAD
    int32_t *e_off, *e_dat;         /* [num_nfa + 1], [3 per edge]: byte edges (lo, hi, t) of each NFA state */
    int32_t *p_off, *p_dat;         /* epsilon targets */
    int32_t *c_off, *c_dat;         /* calls (rule, return state) */
    int initialized;
    Py_ssize_t num_nfa;
    uint8_t *nfa_final;             /* [num_nfa] */
    int8_t *nfa_ws;                 /* [num_nfa] ws_chain's memo (WS_UNKNOWN: not known) */
    int32_t *cl_off, *cl_len;       /* [num_nfa] closure in cl_pool; cl_len 0 = unknown, else len + 1 */
    int32_t *single;                /* [num_nfa] dstate + 1 of the state's closure (0 = unknown) */
    uint32_t *mark_a, *mark_b;      /* [num_nfa] generation stamps */
    uint32_t gen_a, gen_b;
    Vec cl_pool, set_pool, scratch, todo, edge_buf;
    Vec union_copy, row_active, row_prev, row_live, edge_tmp;  /* target_of's and build_row's (a malloc per call cost a cold fill ~3 %) */
    /* per DFA state */
    int32_t *set_off, *set_len, *sn_sid, *sn_target;  /* sn_sid SLICE_UNKNOWN: slice step not known */
    uint64_t *set_hash;
    int32_t *utf8_target;           /* the target utf8_ok was found for (DEAD: not known) */
    uint8_t *utf8_ok, *utf8_checked;  /* every UTF-8 character leads there; upgrade tried */
    int8_t *closed;                 /* text_closed: -1 not known, 0 no, 1 yes */
    int8_t *ws_run;                 /* ws_run: WS_UNKNOWN, NOT_WS_RUN or the whitespace bytes left */
    uint8_t *ws_inner;              /* a gap's state after its first: warm builds no row for it */
    uint32_t *closed_gen;           /* text_closed's search: the stamp of closed_seen */
    uint64_t *closed_seen;          /* ...and the character positions the search reached the state at */
    uint32_t gen_c;
    Py_ssize_t closure_rows;        /* rows text_closed's searches built (at most MAX_CLOSURE_ROWS) */
    struct TextAlphabet *text_alpha;  /* text_closed's steps (see text_alphabet) */
    Py_ssize_t num_states, states_cap;
    int32_t *table;                 /* open addressing: dstate + 1, 0 empty */
    Py_ssize_t table_cap;
    int has_slicer, max_absorb;
    uint64_t (*canon)[4];           /* set_slices: a state's slice is the first of these byte sets inside its set */
    int num_canon;
    int utf8_ascii, utf8_text, utf8_runs;  /* set_utf8: ascii -1 = no upgrade */
    Seq seqs[MAX_SEQS];
    int num_seqs;
    /* the LazyDfa's tables */
    Py_buffer views[NUM_TABLES];
    int bound;
    Py_ssize_t cap;                 /* rows in the tables */
    long generation;                /* bumped when the tables are fetched again */
    PyObject *dfa;                  /* borrowed, during one call */
} Builder;

#define TRANS(b) ((int32_t *)(b)->views[T_TRANS].buf)
#define FLAGS(b) ((uint8_t *)(b)->views[T_FLAGS].buf)
#define IS_FINAL(b) ((uint8_t *)(b)->views[T_FINAL].buf)
#define HAS_CALLS(b) ((uint8_t *)(b)->views[T_CALLS].buf)
#define SLICE(b) ((int16_t *)(b)->views[T_SLICE].buf)
#define ABSORB(b) ((int32_t *)(b)->views[T_ABSORB].buf)
#define DOMINANT(b) ((int32_t *)(b)->views[T_DOMINANT].buf)

static void release_tables(Builder *b) {
    if (b->bound) {
        for (int i = 0; i < NUM_TABLES; i++) PyBuffer_Release(&b->views[i]);
        b->bound = 0;
    }
}

/* (Re)fetch the LazyDfa's tables after it has created or grown them. */
static int bind_tables(Builder *b, PyObject *dfa) {
    release_tables(b);
    int got = 0;
    for (; got < NUM_TABLES; got++) {
        PyObject *a = PyObject_GetAttrString(dfa, TABLE_NAMES[got]);
        if (!a) goto fail;
        int rc = PyObject_GetBuffer(a, &b->views[got], PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS);
        Py_DECREF(a);
        if (rc < 0) goto fail;
    }
    b->cap = b->views[T_FLAGS].len;
    if (b->views[T_TRANS].len < b->cap * 256 * 4 || b->views[T_SLICE].len < b->cap * 2 || b->views[T_FINAL].len < b->cap
        || b->views[T_CALLS].len < b->cap || b->views[T_ABSORB].len < b->cap * 4 || b->views[T_DOMINANT].len < b->cap * 4) {
        PyErr_SetString(PyExc_ValueError, "LazyDfa tables have inconsistent sizes");
        b->bound = 1;
        release_tables(b);
        return -1;
    }
    b->bound = 1;
    b->generation++;
    return 0;
fail:
    for (int i = 0; i < got; i++) PyBuffer_Release(&b->views[i]);
    return -1;
}

static int ensure_bound(Builder *b, PyObject *dfa) {
    if (b->bound && b->dfa != dfa) { PyErr_SetString(PyExc_ValueError, "Builder used with another LazyDfa"); return -1; }
    b->dfa = dfa;
    return b->bound ? 0 : bind_tables(b, dfa);
}

/* A fresh generation stamp; the stamps are cleared when the counter wraps. */
static uint32_t next_gen(uint32_t *gen, uint32_t *marks, Py_ssize_t n) {
    if (++*gen == 0) {
        memset(marks, 0, (n ? n : 1) * sizeof(uint32_t));
        *gen = 1;
    }
    return *gen;
}

/* ---- NFA access ---- */

#define N_EDGES(b, s) ((b)->e_off[(s) + 1] - (b)->e_off[s])
#define N_EPS(b, s) ((b)->p_off[(s) + 1] - (b)->p_off[s])
#define N_CALLS(b, s) ((b)->c_off[(s) + 1] - (b)->c_off[s])
#define EDGE(b, s, i) ((b)->e_dat + 3 * ((Py_ssize_t)(b)->e_off[s] + (i)))  /* lo, hi, t */

/* 1 when s has byte edges, calls or ends a rule. */
static inline int keeps(Builder *b, int32_t s) {
    return N_EDGES(b, s) || N_CALLS(b, s) || b->nfa_final[s];
}

static int check_state(Builder *b, long s) {
    if (s < 0 || s >= b->num_nfa) { PyErr_SetString(PyExc_IndexError, "NFA state out of range"); return -1; }
    return 0;
}

static inline long as_long(PyObject *o) { return PyLong_AsLong(o); }

/* Closure of NFA state s (kept states only), sorted; returns its offset in cl_pool, len in *n. */
static int closure(Builder *b, int32_t s, int32_t *off, int32_t *n) {
    if (b->cl_len[s]) { *off = b->cl_off[s]; *n = b->cl_len[s] - 1; return 0; }
    uint32_t ga = next_gen(&b->gen_a, b->mark_a, b->num_nfa), gb = next_gen(&b->gen_b, b->mark_b, b->num_nfa);
    b->todo.len = 0;
    b->scratch.len = 0;
    b->mark_a[s] = ga;
    if (vec_push(&b->todo, s) < 0) return -1;
    while (b->todo.len) {
        int32_t x = b->todo.data[--b->todo.len];
        if (x != s && b->cl_len[x]) {  /* a known closure: take it whole */
            const int32_t *c = b->cl_pool.data + b->cl_off[x];
            for (int32_t i = 0; i < b->cl_len[x] - 1; i++)
                if (b->mark_b[c[i]] != gb) { b->mark_b[c[i]] = gb; if (vec_push(&b->scratch, c[i]) < 0) return -1; }
            continue;
        }
        if (keeps(b, x) && b->mark_b[x] != gb) { b->mark_b[x] = gb; if (vec_push(&b->scratch, x) < 0) return -1; }
        for (int32_t i = b->p_off[x]; i < b->p_off[x + 1]; i++) {
            int32_t t = b->p_dat[i];
            if (b->mark_a[t] != ga) { b->mark_a[t] = ga; if (vec_push(&b->todo, (int32_t)t) < 0) return -1; }
        }
    }
    return 0;  /* caller sorts and stores: see store_closure */
}

static int closure_of(Builder *b, int32_t s, int32_t *off, int32_t *n) {
    if (b->cl_len[s]) { *off = b->cl_off[s]; *n = b->cl_len[s] - 1; return 0; }
    if (closure(b, s, off, n) < 0) return -1;
    sort_i32(b->scratch.data, b->scratch.len);
    if (vec_reserve(&b->cl_pool, b->scratch.len) < 0) return -1;
    b->cl_off[s] = (int32_t)b->cl_pool.len;
    b->cl_len[s] = (int32_t)b->scratch.len + 1;
    memcpy(b->cl_pool.data + b->cl_pool.len, b->scratch.data, b->scratch.len * sizeof(int32_t));
    b->cl_pool.len += b->scratch.len;
    *off = b->cl_off[s];
    *n = b->cl_len[s] - 1;
    return 0;
}

/* ---- whitespace runs (the walk's count of a bounded gap, grammar/masks/_walk.c) ---- */

/* A bounded whitespace gap `[\t\n ]{0,n}` (flexible JSON's MAX_FLEXIBLE_WS) is an NFA chain
 * c_0 -ws-> c_1 -ws-> ... -ws-> c_n, each c_j with one epsilon edge to the same exit x
 * (grammar/automaton/nfa_ref.py emit_repeat), so the DFA has a state per count, closure(c_j) =
 * {c_j} + closure(x): rows equal but for the three whitespace bytes.  The walk counts a token's
 * whitespace against the bound instead of stepping (and building) those states. */

static inline int is_ws_byte(long c) { return c == 9 || c == 10 || c == 32; }

/* 1 when NFA state s has a byte edge on tab, newline or space; -1 on error. */
static int touches_ws(Builder *b, int32_t s) {
    for (int32_t i = 0; i < N_EDGES(b, s); i++) {
        const int32_t lo = EDGE(b, s, i)[0], hi = EDGE(b, s, i)[1];
        if ((lo <= 9 && hi >= 9) || (lo <= 10 && hi >= 10) || (lo <= 32 && hi >= 32)) return 1;
    }
    return 0;
}

/* The single epsilon target of s (-1: none or several), with no calls and no rule end at s. */
static int32_t single_exit(Builder *b, int32_t s) {
    if (N_EPS(b, s) != 1 || N_CALLS(b, s) || b->nfa_final[s]) return -1;
    return b->p_dat[b->p_off[s]];
}

/* 1 when NFA state s's byte edges are on exactly tab, newline and space, all to one state
 * (*next); 0 when not; -1 on error. */
static int ws_edges(Builder *b, int32_t s, int32_t *next) {
    uint8_t seen[3] = {0, 0, 0};
    *next = -1;
    for (int32_t i = 0; i < N_EDGES(b, s); i++) {
        const int32_t lo = EDGE(b, s, i)[0], hi = EDGE(b, s, i)[1], t = EDGE(b, s, i)[2];
        if (lo > hi || (*next >= 0 && t != *next)) return 0;
        for (long c = lo; c <= hi; c++) {
            if (!is_ws_byte(c)) return 0;
            seen[c == 32 ? 2 : c - 9] = 1;
        }
        *next = t;
    }
    return seen[0] && seen[1] && seen[2];
}

/* How many whitespace bytes NFA state s takes along its chain (1..WS_MAX_RUN; 0: s is not a chain
 * member; -1 on error), its exit in *exit.  A member: byte edges on exactly tab, newline and
 * space, all to one next state; no call, no rule end, one epsilon edge (the exit); the next state
 * a member with the same exit, or the chain's end (no byte edge, no call, no rule end, one epsilon
 * edge to the exit).  Memoized along the chain in nfa_ws. */
static int ws_chain(Builder *b, int32_t s, int32_t *exit) {
    int32_t path[WS_MAX_RUN + 1];
    int n = 0, left = -1;
    int32_t x = single_exit(b, s), cur = s;
    if (x < -1) return -1;
    while (x >= 0) {
        int32_t xc = cur == s ? x : single_exit(b, cur);
        if (xc < -1) return -1;
        if (xc != x) break;
        if (cur != s && b->nfa_ws[cur] != WS_UNKNOWN) {  /* known further on */
            if (b->nfa_ws[cur] > 0 && b->nfa_ws[cur] + n <= WS_MAX_RUN) left = b->nfa_ws[cur] + n;
            break;
        }
        if (N_EDGES(b, cur) == 0) {  /* the chain's end */
            if (n > 0) left = n;
            break;
        }
        int32_t next;
        int r = ws_edges(b, cur, &next);
        if (r < 0) return -1;
        if (!r || n == WS_MAX_RUN || next == cur) break;
        path[n++] = cur;
        cur = next;
    }
    if (left <= 0) {
        for (int i = 0; i < n; i++) b->nfa_ws[path[i]] = 0;
        b->nfa_ws[s] = 0;
        return 0;
    }
    for (int i = 0; i < n; i++) b->nfa_ws[path[i]] = (int8_t)(left - i);
    *exit = x;
    return left;
}

static int closure_union(Builder *b, const int32_t *ts, Py_ssize_t n);

/* The targets of NFA state s's byte edges into *ts when they are on exactly tab, newline and space
 * for each target, and s has no call and ends no rule: 1; else 0; -1 on error. */
static int ws_targets(Builder *b, int32_t s, Vec *ts) {
    if (N_CALLS(b, s) || b->nfa_final[s]) return 0;
    const Py_ssize_t first = ts->len;
    uint8_t bytes[64];  /* per target: bit 0 tab, 1 newline, 2 space */
    for (int32_t i = 0; i < N_EDGES(b, s); i++) {
        const int32_t lo = EDGE(b, s, i)[0], hi = EDGE(b, s, i)[1], t = EDGE(b, s, i)[2];
        Py_ssize_t j = first;
        while (j < ts->len && ts->data[j] != t) j++;
        if (j == ts->len) {
            if (j - first == 64) return 0;
            if (vec_push(ts, t) < 0) return -1;
            bytes[j - first] = 0;
        }
        for (long c = lo; c <= hi; c++) {
            if (!is_ws_byte(c)) return 0;
            bytes[j - first] |= (uint8_t)(c == 9 ? 1 : c == 10 ? 2 : 4);
        }
    }
    for (Py_ssize_t j = first; j < ts->len; j++)
        if (bytes[j - first] != 7) return 0;
    return ts->len > first;
}

/* ws_run of DFA state d: the whitespace bytes d still takes when it is a bounded gap's state (or
 * several gaps side by side, the branches of an alternative each opening with one: `ws ,` before
 * each optional member that may come next, beside `ws }`), whose row is the next count's state on
 * tab, newline and space and otherwise the same for every count; NOT_WS_RUN otherwise.  That is:
 * each NFA state of d with an edge on a whitespace byte (a member) has byte edges on exactly the
 * three, no call and no rule end; each of their targets is a chain member (ws_chain) or a chain's
 * end with one exit, all with the same count left; and the other NFA states of d are exactly the
 * closures of those exits (then the next count's state is the targets plus the same others).  -1
 * on error. */
static int ws_run_of(Builder *b, int32_t d) {
    if (b->ws_run[d] != WS_UNKNOWN) return 0;
    const int32_t off = b->set_off[d], n = b->set_len[d];
    Vec ms = {NULL, 0, 0}, ts = {NULL, 0, 0}, xs = {NULL, 0, 0};
    int left = -1, rc = -1;
    b->ws_run[d] = NOT_WS_RUN;
    for (int32_t k = 0; k < n; k++) {
        const int32_t s = b->set_pool.data[off + k];
        int t = touches_ws(b, s);
        if (t < 0) goto done;
        if (!t) continue;
        if (vec_push(&ms, s) < 0) goto done;
        if ((t = ws_targets(b, s, &ts)) <= 0) { rc = t; goto done; }
    }
    rc = 0;
    if (ms.len == 0) goto done;
    for (Py_ssize_t i = 0; i < ts.len; i++) {
        const int32_t m = ts.data[i];
        int32_t x = single_exit(b, m);
        if (x < -1) { rc = -1; goto done; }
        if (x < 0) goto done;
        int l = 0;
        if (N_EDGES(b, m) && (l = ws_chain(b, m, &x)) <= 0) { rc = l; goto done; }
        if (left >= 0 && l != left) goto done;
        left = l;
        if (vec_push(&xs, x) < 0) { rc = -1; goto done; }
    }
    if (left + 1 > WS_MAX_RUN) goto done;
    if (closure_union(b, xs.data, xs.len) < 0) { rc = -1; goto done; }
    const uint32_t g = b->gen_b;  /* (closure_union's stamp: the union's states) */
    if (b->scratch.len < 1 || b->scratch.len + ms.len != n) goto done;
    for (Py_ssize_t i = 0; i < ms.len; i++)
        if (b->mark_b[ms.data[i]] == g) goto done;
    Py_ssize_t inside = 0;  /* the union's states in d (each not a member, as checked) */
    for (int32_t k = 0; k < n; k++) inside += b->mark_b[b->set_pool.data[off + k]] == g;
    if (inside != b->scratch.len) goto done;
    b->ws_run[d] = (int8_t)(left + 1);
done:
    free(ms.data);
    free(ts.data);
    free(xs.data);
    return rc;
}

/* ---- DFA states ---- */

static uint64_t hash_set(const int32_t *x, Py_ssize_t n) {
    uint64_t h = 0x9E3779B97F4A7C15ull ^ (uint64_t)n;
    for (Py_ssize_t i = 0; i < n; i++) {
        h ^= (uint64_t)(uint32_t)x[i];
        h *= 0xff51afd7ed558ccdull;
        h ^= h >> 32;
    }
    return h;
}

static int grow_states(Builder *b) {
    Py_ssize_t cap = b->states_cap ? b->states_cap * 2 : 64;
    int32_t *p;
#define GROW(field, type)                                            \
    p = (int32_t *)realloc(b->field, cap * sizeof(type));            \
    if (!p) { PyErr_NoMemory(); return -1; }                         \
    b->field = (void *)p;
    GROW(set_off, int32_t)
    GROW(set_len, int32_t)
    GROW(sn_sid, int32_t)
    GROW(sn_target, int32_t)
    GROW(set_hash, uint64_t)
    GROW(utf8_target, int32_t)
    GROW(utf8_ok, uint8_t)
    GROW(utf8_checked, uint8_t)
    GROW(closed, int8_t)
    GROW(ws_run, int8_t)
    GROW(ws_inner, uint8_t)
    GROW(closed_gen, uint32_t)
    GROW(closed_seen, uint64_t)
#undef GROW
    b->states_cap = cap;
    return 0;
}

static int rehash(Builder *b) {
    Py_ssize_t cap = b->table_cap ? b->table_cap * 2 : 256;
    int32_t *t = calloc(cap, sizeof(int32_t));
    if (!t) { PyErr_NoMemory(); return -1; }
    for (Py_ssize_t d = 0; d < b->num_states; d++) {
        Py_ssize_t i = b->set_hash[d] & (cap - 1);
        while (t[i]) i = (i + 1) & (cap - 1);
        t[i] = (int32_t)d + 1;
    }
    free(b->table);
    b->table = t;
    b->table_cap = cap;
    return 0;
}

/* The DFA state of a sorted, duplicate-free set of NFA states if there is one, else -1 (makes none). */
static int32_t find_state(Builder *b, const int32_t *x, Py_ssize_t n) {
    if (!b->table_cap) return -1;
    const uint64_t h = hash_set(x, n);
    for (Py_ssize_t i = h & (b->table_cap - 1); b->table[i]; i = (i + 1) & (b->table_cap - 1)) {
        const int32_t d = b->table[i] - 1;
        if (b->set_hash[d] == h && b->set_len[d] == n && !memcmp(b->set_pool.data + b->set_off[d], x, n * sizeof(int32_t)))
            return d;
    }
    return -1;
}

/* The DFA state of a sorted, duplicate-free set of NFA states (new: flags written). */
static int32_t intern(Builder *b, const int32_t *x, Py_ssize_t n) {
    uint64_t h = hash_set(x, n);
    if (b->table_cap) {
        Py_ssize_t i = h & (b->table_cap - 1);
        while (b->table[i]) {
            int32_t d = b->table[i] - 1;
            if (b->set_hash[d] == h && b->set_len[d] == n && !memcmp(b->set_pool.data + b->set_off[d], x, n * sizeof(int32_t)))
                return d;
            i = (i + 1) & (b->table_cap - 1);
        }
    }
    if (b->num_states >= b->states_cap && grow_states(b) < 0) return -1;
    if ((b->num_states + 1) * 2 > b->table_cap && rehash(b) < 0) return -1;
    if (b->num_states >= b->cap) {  /* the Python tables are full: let LazyDfa grow them */
        PyObject *r = PyObject_CallMethod(b->dfa, "_grow", NULL);
        if (!r) return -1;
        Py_DECREF(r);
        if (bind_tables(b, b->dfa) < 0) return -1;
        if (b->num_states >= b->cap) { PyErr_SetString(PyExc_RuntimeError, "LazyDfa._grow did not grow"); return -1; }
    }
    /* x may point into set_pool: copy through the reserve */
    Py_ssize_t src = (x >= b->set_pool.data && x < b->set_pool.data + b->set_pool.len) ? x - b->set_pool.data : -1;
    if (vec_reserve(&b->set_pool, n) < 0) return -1;
    if (src >= 0) x = b->set_pool.data + src;
    int32_t d = (int32_t)b->num_states++;
    b->set_off[d] = (int32_t)b->set_pool.len;
    b->set_len[d] = (int32_t)n;
    b->set_hash[d] = h;
    b->sn_sid[d] = SLICE_UNKNOWN;
    b->sn_target[d] = DEAD;
    b->utf8_target[d] = DEAD;
    b->utf8_checked[d] = 0;
    b->closed[d] = -1;
    b->closed_gen[d] = 0;
    b->ws_run[d] = WS_UNKNOWN;
    b->ws_inner[d] = 0;
    memmove(b->set_pool.data + b->set_pool.len, x, n * sizeof(int32_t));
    b->set_pool.len += n;
    Py_ssize_t i = h & (b->table_cap - 1);
    while (b->table[i]) i = (i + 1) & (b->table_cap - 1);
    b->table[i] = d + 1;
    uint8_t final = 0, calls = 0;
    for (Py_ssize_t k = 0; k < n; k++) {
        final |= b->nfa_final[x[k]];
        calls |= N_CALLS(b, x[k]) != 0;
    }
    int32_t *row = TRANS(b) + (Py_ssize_t)d * 256;  /* the tables leave new rows uninitialized */
    for (int c = 0; c < 256; c++) row[c] = UNKNOWN;
    IS_FINAL(b)[d] = final;
    HAS_CALLS(b)[d] = calls;
    FLAGS(b)[d] = (final ? FLAG_FINAL : 0) | (calls ? FLAG_CALLS : 0);
    return d;
}

/* b->scratch = the sorted union of the closures of NFA states ts[0..n) (ts not in b->scratch); 0 or -1. */
static int closure_union(Builder *b, const int32_t *ts, Py_ssize_t n) {
    int32_t off, len;
    for (Py_ssize_t i = 0; i < n; i++)  /* (first all closures: making one uses scratch) */
        if (closure_of(b, ts[i], &off, &len) < 0) return -1;
    uint32_t g = next_gen(&b->gen_b, b->mark_b, b->num_nfa);
    b->scratch.len = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        closure_of(b, ts[i], &off, &len);
        for (int32_t k = 0; k < len; k++) {
            int32_t x = b->cl_pool.data[off + k];
            if (b->mark_b[x] != g) { b->mark_b[x] = g; if (vec_push(&b->scratch, x) < 0) return -1; }
        }
    }
    sort_i32(b->scratch.data, b->scratch.len);
    return 0;
}

/* The DFA state of the union of the closures of NFA states ts[0..n). */
static int32_t target_of(Builder *b, const int32_t *ts, Py_ssize_t n) {
    if (n == 1 && b->single[ts[0]]) return b->single[ts[0]] - 1;
    int32_t off, len, d;
    if (n == 1) {
        if (closure_of(b, ts[0], &off, &len) < 0) return -1;
        d = intern(b, b->cl_pool.data + off, len);
        if (d >= 0) b->single[ts[0]] = d + 1;
        return d;
    }
    if (closure_union(b, ts, n) < 0) return -1;
    /* intern may call Python (_grow), which cannot touch scratch; copy anyway for safety */
    Vec *tmp = &b->union_copy;
    tmp->len = 0;
    if (vec_reserve(tmp, b->scratch.len) < 0) return -1;
    memcpy(tmp->data, b->scratch.data, b->scratch.len * sizeof(int32_t));
    return intern(b, tmp->data, b->scratch.len);
}

/* ---- rows ---- */

typedef struct { int32_t lo, hi, t; } Edge;

/* Edges by first byte, by a counting sort through b->edge_tmp (an order that is whole on ties did
 * not change a row: build_row's result depends on the first bytes' order alone): O(n + 256),
 * where the full (lo, hi, target) order by comparisons was a twentieth of a cold fill's time in
 * the p99 band, on states of thousands of edges (a key trie's union). */
#define EDGE_LO_LESS(x, y) ((x).lo < (y).lo)
DEFINE_SORT(sort_edges_small, Edge, EDGE_LO_LESS)

static int sort_edges_by_lo(Builder *b) {
    const Py_ssize_t n = b->edge_buf.len / 3;
    Edge *in = (Edge *)b->edge_buf.data;
    if (n <= SORT_SMALL) { sort_edges_small(in, n); return 0; }
    Py_ssize_t start[257] = {0};
    for (Py_ssize_t i = 0; i < n; i++) start[in[i].lo + 1]++;
    for (int c = 0; c < 256; c++) start[c + 1] += start[c];
    b->edge_tmp.len = 0;
    if (vec_reserve(&b->edge_tmp, 3 * n) < 0) return -1;
    Edge *out = (Edge *)b->edge_tmp.data;
    for (Py_ssize_t i = 0; i < n; i++) out[start[in[i].lo]++] = in[i];
    b->edge_tmp.len = 3 * n;
    const Vec t = b->edge_buf; b->edge_buf = b->edge_tmp; b->edge_tmp = t;
    return 0;
}

/* The byte edges of the NFA states x[0..n) in b->edge_buf, by first byte when `sorted`. */
static int gather_set_edges(Builder *b, const int32_t *x, Py_ssize_t n, int sorted, Edge **out, Py_ssize_t *num) {
    b->edge_buf.len = 0;
    for (Py_ssize_t k = 0; k < n; k++) {
        const Py_ssize_t m = N_EDGES(b, x[k]);
        if (vec_reserve(&b->edge_buf, 3 * m) < 0) return -1;
        memcpy(b->edge_buf.data + b->edge_buf.len, EDGE(b, x[k], 0), 3 * m * sizeof(int32_t));
        b->edge_buf.len += 3 * m;
    }
    if (sorted && sort_edges_by_lo(b) < 0) return -1;
    *out = (Edge *)b->edge_buf.data;
    *num = b->edge_buf.len / 3;
    return 0;
}

/* The byte edges of DFA state d's NFA states. */
static int gather_edges(Builder *b, int32_t d, Edge **out, Py_ssize_t *num) {
    return gather_set_edges(b, b->set_pool.data + b->set_off[d], b->set_len[d], 1, out, num);
}

/* Fill trans[d, :] and dominant[d]; 0 or -1. */
static int build_row(Builder *b, int32_t d) {
    Edge *edges;
    Py_ssize_t n;
    if (gather_edges(b, d, &edges, &n) < 0) return -1;
    /* edges live in edge_buf, which target_of does not touch */
    int32_t row[256];
    for (int i = 0; i < 256; i++) row[i] = DEAD;
    int32_t ctarget[256], ccount[256];
    int nc = 0;
    int disjoint = 1;
    for (Py_ssize_t i = 1; i < n; i++)
        if (edges[i].lo <= edges[i - 1].hi) { disjoint = 0; break; }
    int32_t pieces[257][3];
    int np_ = 0;
    if (disjoint) {
        for (Py_ssize_t i = 0; i < n; i++) {
            int32_t t = target_of(b, &edges[i].t, 1);
            if (t < 0) return -1;
            edges = (Edge *)b->edge_buf.data;
            pieces[np_][0] = edges[i].lo; pieces[np_][1] = edges[i].hi; pieces[np_][2] = t; np_++;
        }
    } else {
        uint8_t bound[257] = {0};
        for (Py_ssize_t i = 0; i < n; i++) { bound[edges[i].lo] = 1; bound[edges[i].hi + 1] = 1; }
        Vec *active = &b->row_active, *prev = &b->row_prev, *live = &b->row_live;
        int32_t prev_t = -1;
        Py_ssize_t next = 0;  /* edges[next..) start after this piece */
        live->len = 0;        /* the edges started and not ended, as indices (a piece lies inside each) */
        int a = 0;
        while (a < 256) {
            int e = a + 1;
            while (e < 256 && !bound[e]) e++;
            Py_ssize_t kept = 0;
            for (Py_ssize_t i = 0; i < live->len; i++)
                if (edges[live->data[i]].hi >= a) live->data[kept++] = live->data[i];
            live->len = kept;
            for (; next < n && edges[next].lo <= a; next++)
                if (edges[next].hi >= a && vec_push(live, (int32_t)next) < 0) return -1;
            active->len = 0;
            if (vec_reserve(active, live->len) < 0) return -1;
            for (Py_ssize_t i = 0; i < live->len; i++) active->data[active->len++] = edges[live->data[i]].t;
            if (active->len) {
                sort_i32(active->data, active->len);
                Py_ssize_t u = 1;
                for (Py_ssize_t i = 1; i < active->len; i++)
                    if (active->data[i] != active->data[u - 1]) active->data[u++] = active->data[i];
                active->len = u;
                int32_t t;
                if (prev_t >= 0 && prev->len == active->len && !memcmp(prev->data, active->data, u * sizeof(int32_t))) {
                    t = prev_t;
                } else {
                    t = target_of(b, active->data, active->len);
                    if (t < 0) return -1;
                    edges = (Edge *)b->edge_buf.data;
                    prev->len = 0;
                    if (vec_reserve(prev, active->len) < 0) return -1;
                    memcpy(prev->data, active->data, active->len * sizeof(int32_t));
                    prev->len = active->len;
                    prev_t = t;
                }
                pieces[np_][0] = a; pieces[np_][1] = e - 1; pieces[np_][2] = t; np_++;
            }
            a = e;
        }
    }
    for (int p = 0; p < np_; p++) {
        int32_t lo = pieces[p][0], hi = pieces[p][1], t = pieces[p][2];
        for (int32_t c = lo; c <= hi; c++) row[c] = t;
        int k = 0;
        while (k < nc && ctarget[k] != t) k++;
        if (k == nc) { ctarget[nc] = t; ccount[nc] = 0; nc++; }
        ccount[k] += hi - lo + 1;
    }
    int best = -1;
    for (int k = 0; k < nc; k++)
        if (best < 0 || ccount[k] > ccount[best]) best = k;
    memcpy(TRANS(b) + (Py_ssize_t)d * 256, row, sizeof(row));
    DOMINANT(b)[d] = (best >= 0 && ccount[best] >= MIN_DOMINANT_BYTES) ? ctarget[best] : DEAD;
    /* a bounded whitespace gap's state (the walk counts its whitespace): the next count's state is
     * one the walk never steps into, so warm leaves its row (and the rest of the chain) unbuilt */
    const int32_t wt = row[' '];
    if (wt >= 0 && wt != d && row['\t'] == wt && row['\n'] == wt) {
        if (ws_run_of(b, d) < 0 || ws_run_of(b, wt) < 0) return -1;
        if (b->ws_run[d] > 0 && b->ws_run[wt] > 0) b->ws_inner[wt] = 1;
    }
    return 0;
}

static int check_dstate(Builder *b, long d) {
    if (d < 0 || d >= b->num_states) { PyErr_SetString(PyExc_IndexError, "DFA state out of range"); return -1; }
    return 0;
}

static inline int ensure_row(Builder *b, int32_t d) {
    return TRANS(b)[(Py_ssize_t)d * 256] == UNKNOWN ? build_row(b, d) : 0;
}

/* ---- slices ---- */

/* The first of the set_slices sets that lies inside `bits`, else NO_SLICE (none set: no slices). */
static int slice_of_set(Builder *b, const uint64_t bits[4]) {
    for (int k = 0; k < b->num_canon; k++)
        if (!(b->canon[k][0] & ~bits[0]) && !(b->canon[k][1] & ~bits[1]) && !(b->canon[k][2] & ~bits[2])
            && !(b->canon[k][3] & ~bits[3]))
            return k;
    return NO_SLICE;
}

/* (slice id, target) of d: a vocabulary slice whose bytes all lead from d to one target. */
static int slice_step(Builder *b, int32_t d, int32_t *sid, int32_t *target) {
    if (b->sn_sid[d] == SLICE_UNKNOWN) {
        if (ensure_row(b, d) < 0) return -1;
        int32_t t = DOMINANT(b)[d], s = NO_SLICE, nt = DEAD;
        if (b->has_slicer && t >= 0) {
            uint64_t bits[4] = {0, 0, 0, 0};
            const int32_t *row = TRANS(b) + (Py_ssize_t)d * 256;
            for (int c = 0; c < 256; c++)
                if (row[c] == t) bits[c >> 6] |= 1ull << (c & 63);
            s = slice_of_set(b, bits);
            nt = t;
        }
        b->sn_sid[d] = s;
        b->sn_target[d] = nt;
    }
    *sid = b->sn_sid[d];
    *target = b->sn_target[d];
    return 0;
}

static int compute_absorb(Builder *b, int32_t d) {
    int32_t sid, nxt;
    if (slice_step(b, d, &sid, &nxt) < 0) return -1;
    int64_t steps = 0;
    if (sid >= 0) {
        int32_t seen[256];
        int num_seen = 0;
        seen[num_seen++] = d;
        int32_t cur = nxt;
        steps = 1;
        while (steps < b->max_absorb) {
            int in = 0;
            for (int i = 0; i < num_seen; i++) if (seen[i] == cur) { in = 1; break; }
            if (in) { steps = UNBOUNDED; break; }
            if (SLICE(b)[cur] == sid) {
                steps += ABSORB(b)[cur];
                if (steps > UNBOUNDED) steps = UNBOUNDED;
                break;
            }
            int32_t csid, cnxt;
            if (slice_step(b, cur, &csid, &cnxt) < 0) return -1;
            if (csid != sid) break;
            if (num_seen < 256) seen[num_seen++] = cur;
            cur = cnxt;
            steps++;
        }
    }
    ABSORB(b)[d] = (int32_t)steps;
    SLICE(b)[d] = (int16_t)(steps ? sid : NO_SLICE);
    return 0;
}

/* ---- UTF-8 characters through the DFA ---- */

/* sequences: a tuple of tuples of (lo, hi) byte ranges (grammar/automaton/constants.py UTF8_SEQUENCES). */
static int parse_seqs(PyObject *seqs, Seq *out, int *num) {
    if (!PyTuple_Check(seqs) || PyTuple_GET_SIZE(seqs) > MAX_SEQS) { PyErr_SetString(PyExc_ValueError, "sequences"); return -1; }
    for (Py_ssize_t q = 0; q < PyTuple_GET_SIZE(seqs); q++) {
        PyObject *seq = PyTuple_GET_ITEM(seqs, q);
        if (!PyTuple_Check(seq) || PyTuple_GET_SIZE(seq) < 1 || PyTuple_GET_SIZE(seq) > 4) {
            PyErr_SetString(PyExc_ValueError, "a sequence holds 1 to 4 byte ranges");
            return -1;
        }
        out[q].len = (int)PyTuple_GET_SIZE(seq);
        for (int j = 0; j < out[q].len; j++) {
            int lo, hi;
            if (!PyArg_ParseTuple(PyTuple_GET_ITEM(seq, j), "ii", &lo, &hi)) return -1;
            if (lo < 0 || hi > 255 || lo > hi) { PyErr_SetString(PyExc_ValueError, "byte range"); return -1; }
            out[q].lo[j] = (uint8_t)lo;
            out[q].hi[j] = (uint8_t)hi;
        }
    }
    *num = (int)PyTuple_GET_SIZE(seqs);
    return 0;
}

/* Sets of NFA states kept as records (n, then n sorted ids) in a Vec: add x[0..n) unless there. */
static int set_add(Vec *v, const int32_t *x, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < v->len; i += 1 + v->data[i])
        if (v->data[i] == n && !memcmp(v->data + i + 1, x, n * sizeof(int32_t))) return 0;
    if (vec_reserve(v, 1 + n) < 0) return -1;
    v->data[v->len++] = (int32_t)n;
    memcpy(v->data + v->len, x, n * sizeof(int32_t));
    v->len += n;
    return 0;
}

/* Add to `out` the closed sets of NFA states that the bytes lo..hi lead to from the set x[0..n),
 * the sets a row would make DFA states of, without making them (read from the row when the set's
 * DFA state has one built): 1, or 0 when a byte there leads nowhere, -1 on error.  x must not lie
 * in b->scratch, b->edge_buf or b->set_pool. */
static int range_sets(Builder *b, const int32_t *x, Py_ssize_t n, int lo, int hi, Vec *out) {
    const int32_t d = find_state(b, x, n);
    if (d >= 0 && TRANS(b)[(Py_ssize_t)d * 256] != UNKNOWN) {  /* its row is built: read it */
        const int32_t *row = TRANS(b) + (Py_ssize_t)d * 256;
        for (int c = lo; c <= hi; c++) {
            if (row[c] < 0) return 0;
            if ((c == lo || row[c] != row[c - 1]) &&
                set_add(out, b->set_pool.data + b->set_off[row[c]], b->set_len[row[c]]) < 0)
                return -1;
        }
        return 1;
    }
    Edge *edges;
    Py_ssize_t m;
    if (gather_set_edges(b, x, n, 0, &edges, &m) < 0) return -1;  /* (closure_of leaves edge_buf alone) */
    Vec active = {NULL, 0, 0};
    int rc = 1;
    for (int a = lo; a <= hi && rc == 1;) {
        int e = hi + 1;  /* the piece a..e-1: no edge starts or ends inside it */
        active.len = 0;
        for (Py_ssize_t i = 0; i < m; i++) {
            if (edges[i].lo > a) { if (edges[i].lo < e) e = edges[i].lo; continue; }
            if (edges[i].hi < a) continue;
            if (edges[i].hi + 1 < e) e = edges[i].hi + 1;
            if (vec_push(&active, edges[i].t) < 0) { rc = -1; break; }
        }
        if (rc < 0) break;
        if (!active.len) { rc = 0; break; }
        if (closure_union(b, active.data, active.len) < 0 || set_add(out, b->scratch.data, b->scratch.len) < 0) rc = -1;
        a = e;
    }
    free(active.data);
    return rc;
}

/* 1 when every sequence leads from d to target alone, 0 when not, -1 on error.  Followed on the
 * NFA states' sets, as rows would take them, but making no DFA state and no row: a bounded
 * string's positions each have some 15 states inside their characters, whose rows the check
 * made (~300 rows and 600 states at a string's first character in a large grammar), and the
 * walks rarely visit them (a token's characters are taken by the text slice). */
static int seqs_lead_to(Builder *b, int32_t d, int32_t target, const Seq *seqs, int num_seqs) {
    Vec cur = {NULL, 0, 0}, nxt = {NULL, 0, 0};
    int ok = 1;
    for (int q = 0; q < num_seqs && ok == 1; q++) {
        cur.len = 0;
        if (set_add(&cur, b->set_pool.data + b->set_off[d], b->set_len[d]) < 0) goto fail;
        for (int j = 0; j < seqs[q].len && ok == 1; j++) {
            nxt.len = 0;
            for (Py_ssize_t i = 0; i < cur.len && ok == 1; i += 1 + cur.data[i])
                ok = range_sets(b, cur.data + i + 1, cur.data[i], seqs[q].lo[j], seqs[q].hi[j], &nxt);
            if (ok < 0) goto fail;
            Vec t = cur; cur = nxt; nxt = t;
        }
        const int32_t n = b->set_len[target];
        if (ok == 1 && !(cur.len == 1 + n && cur.data[0] == n &&
                         !memcmp(cur.data + 1, b->set_pool.data + b->set_off[target], n * sizeof(int32_t))))
            ok = 0;
    }
    free(cur.data);
    free(nxt.data);
    return ok;
fail:
    free(cur.data);
    free(nxt.data);
    return -1;
}

/* seqs_lead_to with the builder's sequences, remembered per state for its last target. */
static int utf8_to(Builder *b, int32_t d, int32_t target) {
    if (b->utf8_target[d] == target) return b->utf8_ok[d];
    int ok = seqs_lead_to(b, d, target, b->seqs, b->num_seqs);
    if (ok < 0) return -1;
    b->utf8_target[d] = target;
    b->utf8_ok[d] = (uint8_t)ok;
    return ok;
}

/* ---- states closed on string text ---- */

/* A character position: 0 between characters, 1 + 3 q + (j - 1) after j bytes of a character of
 * sequence family q (j < its length). */
#define TEXT_POSITIONS (1 + 3 * MAX_SEQS)

#define MAX_TEXT_RUNS 32

/* At each position p: to[p][c], the position after byte c, or -1 when c is no step of a text
 * character there (between characters: the ASCII text slice's bytes and the first bytes of the
 * UTF-8 sequences; inside one: the next byte range of its family); the steps as runs of bytes
 * [lo, hi] (num_runs[p] of them), so a search skips the other bytes. */
struct TextAlphabet {
    int8_t to[TEXT_POSITIONS][256];
    uint8_t lo[TEXT_POSITIONS][MAX_TEXT_RUNS], hi[TEXT_POSITIONS][MAX_TEXT_RUNS];
    int num_runs[TEXT_POSITIONS];
};

/* Make b->text_alpha (once per set_utf8): 1, or 0 when it cannot be made (no ASCII text slice set), -1 on error. */
static int text_alphabet(Builder *b) {
    if (b->text_alpha) return 1;
    if (b->utf8_ascii < 0 || b->utf8_ascii >= b->num_canon) return 0;
    struct TextAlphabet *a = malloc(sizeof(*a));
    if (!a) { PyErr_NoMemory(); return -1; }
    memset(a->to, -1, sizeof(a->to));
    const uint64_t *ascii = b->canon[b->utf8_ascii];
    for (int c = 0; c < 128; c++)
        if ((ascii[c >> 6] >> (c & 63)) & 1) a->to[0][c] = 0;
    for (int q = 0; q < b->num_seqs; q++) {
        const Seq *sq = &b->seqs[q];
        for (int j = 0; j < sq->len; j++) {
            const int from = j == 0 ? 0 : 1 + 3 * q + (j - 1), to = j + 1 == sq->len ? 0 : 1 + 3 * q + j;
            for (int c = sq->lo[j]; c <= sq->hi[j]; c++) a->to[from][c] = (int8_t)to;
        }
    }
    for (int p = 0; p < TEXT_POSITIONS; p++) {
        int n = 0;
        for (int c = 0; c < 256; c++) {
            if (a->to[p][c] < 0) continue;
            if (n && a->hi[p][n - 1] == c - 1) { a->hi[p][n - 1] = (uint8_t)c; continue; }
            if (n == MAX_TEXT_RUNS) { free(a); return 0; }  /* (not with UTF-8's sequences) */
            a->lo[p][n] = a->hi[p][n] = (uint8_t)c;
            n++;
        }
        a->num_runs[p] = n;
    }
    b->text_alpha = a;
    return 1;
}

/* The one state every ASCII text byte leads to from d (row built here), or DEAD when they part or die. */
static int text_step(Builder *b, int32_t d, int32_t *to) {
    if (ensure_row(b, d) < 0) return -1;
    const struct TextAlphabet *a = b->text_alpha;
    const int32_t *row = TRANS(b) + (Py_ssize_t)d * 256;
    int32_t t = UNKNOWN;
    for (int c = 0; c < 128; c++) {
        if (a->to[0][c] != 0) continue;
        if (t == UNKNOWN) {
            t = row[c];
            if (t < 0) break;  /* a text byte dies: DEAD whatever the others do (most of the states
                                  close_text asks, whose other text bytes died too, were read to the end) */
        } else if (row[c] != t) { t = DEAD; break; }
    }
    *to = t < 0 ? DEAD : t;
    return 0;
}

/* 1 when d is a step of a run on text: every ASCII text byte leads to one other state, and every
 * one from there to one state again, not itself (a maxLength or minLength string, a counted
 * repeat of characters).  Such a run ends or loops only as far ahead as its bound, so its search
 * would build a row per character up to MAX_CLOSED_ROWS and give up (each row with ~10 new UTF-8
 * states: ~650 states at a bounded string's first character in a large grammar); the mask walk
 * takes a run's tokens by its own shortcut (run_walk).  Rows of d and the next state built. */
static int text_run(Builder *b, int32_t d) {
    int32_t t, t2;
    if (text_step(b, d, &t) < 0) return -1;
    if (t < 0 || t == d) return 0;
    if (text_step(b, t, &t2) < 0) return -1;
    return t2 >= 0 && t2 != t;
}

typedef struct { int32_t state, pos, next, last_t, last_p; } TextFrame;  /* last_*: the step taken before */

/* 1 when d is closed on string text: every string-text character (an ASCII text byte or a whole
 * UTF-8 character) leads from d to a live state that is closed on it too, so every token made only
 * of text is consumed from d without dying, whatever path it takes (an open object's key start
 * and its key trie, a string with an unanchored pattern).  0 when not (or when not known within
 * MAX_CLOSED_NODES pairs of state and character position), -1 on error.  A depth-first search of
 * the (state, position) pairs text reaches from d, rows built on the way: all of them closed when
 * none dies; when one does, the states between characters on the path to it are not; past
 * MAX_CLOSED_NODES pairs or MAX_CLOSED_ROWS rows built, none of those reached is said closed
 * (each would search as far again); once all searches built MAX_CLOSURE_ROWS rows, no state not
 * known is closed.  A step of a run on text (text_run) is not searched: not closed.
 * Remembered per state. */
static int text_closed(Builder *b, int32_t d) {
    if (b->closed[d] >= 0) return b->closed[d];
    if (b->closure_rows > MAX_CLOSURE_ROWS) return b->closed[d] = 0;  /* (searches spent their rows) */
    const int have = text_alphabet(b);
    if (have <= 0) return have;
    const int run = text_run(b, d);
    if (run) return run < 0 ? -1 : (b->closed[d] = 0);
    if (++b->gen_c == 0) {  /* stamps wrapped: forget them all */
        memset(b->closed_gen, 0, b->num_states * sizeof(uint32_t));
        b->gen_c = 1;
    }
    Vec between = {NULL, 0, 0};  /* the states reached between characters */
    TextFrame *path = malloc(64 * sizeof(TextFrame));
    Py_ssize_t depth = 0, cap = 64, nodes = 1, rows = 0;
    int closed = 1, gave_up = 0;
    if (!path || vec_push(&between, d) < 0) goto fail;
    b->closed_gen[d] = b->gen_c;
    b->closed_seen[d] = 1;
    path[depth++] = (TextFrame){d, 0, 0, UNKNOWN, -1};
    while (depth) {
        TextFrame *f = &path[depth - 1];
        if (TRANS(b)[(Py_ssize_t)f->state * 256] == UNKNOWN) {
            rows++;
            b->closure_rows++;
            if (rows > MAX_CLOSED_ROWS || b->closure_rows > MAX_CLOSURE_ROWS) { closed = 0; gave_up = 1; break; }
            if (build_row(b, f->state) < 0) goto fail;
        }
        const struct TextAlphabet *a = b->text_alpha;
        const int8_t *step = a->to[f->pos];
        const int32_t *row = TRANS(b) + (Py_ssize_t)f->state * 256;
        const int8_t *known = b->closed;
        int32_t last_t = f->last_t, last_p = f->last_p, t = DEAD, p = 0;
        int c = 256;
        if (f->next == 0 && row[' '] >= 0 && row[' '] != f->state && row['\t'] == row[' '] && row['\n'] == row[' ']) {
            /* at what may be a whitespace gap, first a dead step from here, before any deeper search (a gap is 25 states deep) */
            int dead = 0;
            for (int k = 0; k < a->num_runs[f->pos] && !dead; k++)
                for (int x = a->lo[f->pos][k]; x <= a->hi[f->pos][k]; x++)
                    if (row[x] < 0 || (step[x] == 0 && known[row[x]] == 0)) { dead = 1; break; }
            if (dead) { closed = 0; break; }
        }
        for (int k = 0; k < a->num_runs[f->pos]; k++) {  /* the next step to a pair not known or seen */
            const int hi = a->hi[f->pos][k];
            c = a->lo[f->pos][k] > f->next ? a->lo[f->pos][k] : f->next;
            for (; c <= hi; c++) {
                t = row[c];
                p = step[c];
                if (t == last_t && p == last_p) continue;  /* (most bytes go where the one before did) */
                last_t = t;
                last_p = p;
                if (t < 0 || (p == 0 && known[t] == 0)) goto found;
                if (p == 0 && known[t] == 1) continue;
                if (b->closed_gen[t] == b->gen_c && ((b->closed_seen[t] >> p) & 1)) continue;
                goto found;
            }
            c = 256;
        }
    found:
        f->next = c + 1;
        f->last_t = last_t;
        f->last_p = last_p;
        if (c >= 256) { depth--; continue; }
        if (t < 0 || (p == 0 && known[t] == 0)) { closed = 0; break; }
        if (b->closed_gen[t] != b->gen_c) { b->closed_gen[t] = b->gen_c; b->closed_seen[t] = 0; }
        b->closed_seen[t] |= 1ull << p;
        if (++nodes > MAX_CLOSED_NODES) { closed = 0; gave_up = 1; break; }
        if (p == 0 && vec_push(&between, t) < 0) goto fail;
        if (depth == cap) {
            TextFrame *grown = realloc(path, 2 * cap * sizeof(TextFrame));
            if (!grown) { PyErr_NoMemory(); goto fail; }
            path = grown;
            cap *= 2;
        }
        path[depth++] = (TextFrame){t, p, 0, UNKNOWN, -1};
    }
    if (closed || gave_up) {  /* (given up: every state reached is said not closed, so none searches again) */
        for (Py_ssize_t i = 0; i < between.len; i++) b->closed[between.data[i]] = (int8_t)closed;
    } else {
        for (Py_ssize_t i = 0; i < depth; i++)
            if (path[i].pos == 0) b->closed[path[i].state] = 0;
    }
    free(path);
    free(between.data);
    return closed;
fail:
    free(path);
    free(between.data);
    return -1;
}

/* grammar/automaton/dfa_ref.py upgrade_to_utf8 in C (the same steps in the same order): the slice of
 * d, first widened to string text with UTF-8 characters when every character takes d where a
 * text byte does (a loop, or each step of a bounded run with utf8_runs). */
static int upgrade(Builder *b, int32_t d, int32_t *out) {
    if (SLICE(b)[d] == SLICE_UNKNOWN && (ensure_row(b, d) < 0 || compute_absorb(b, d) < 0)) return -1;
    const int32_t sid = SLICE(b)[d];
    *out = sid;
    if (b->utf8_ascii < 0 || sid != b->utf8_ascii || b->utf8_checked[d]) return 0;
    b->utf8_checked[d] = 1;
    int32_t s2, nxt;
    if (slice_step(b, d, &s2, &nxt) < 0) return -1;
    const int32_t absorb = ABSORB(b)[d];
    if (absorb == UNBOUNDED) {
        if (nxt != d) {
            int32_t up;
            if (upgrade(b, nxt, &up) < 0) return -1;
            if (up != b->utf8_text) return 0;
        }
        int ok = seqs_lead_to(b, d, nxt, b->seqs, b->num_seqs);
        if (ok < 0) return -1;
        if (ok) SLICE(b)[d] = (int16_t)b->utf8_text;
    } else if (b->utf8_runs) {  /* a bounded run: a character of k bytes uses one step, not k */
        int32_t cur = d;
        for (int32_t i = 0; i < absorb; i++) {
            if (slice_step(b, cur, &s2, &nxt) < 0) return -1;
            int ok = utf8_to(b, cur, nxt);
            if (ok <= 0) return ok;
            cur = nxt;
        }
        SLICE(b)[d] = (int16_t)b->utf8_text;
    }
    *out = SLICE(b)[d];
    return 0;
}

/* ---- the C API for the walk ---- */

static int c_row(PyObject *self, PyObject *dfa, long d) {
    Builder *b = (Builder *)self;
    if (ensure_bound(b, dfa) < 0 || check_dstate(b, d) < 0) return -1;
    long gen = b->generation;
    if (ensure_row(b, (int32_t)d) < 0) return -1;
    return b->generation != gen;
}

static int c_prepare(PyObject *self, PyObject *dfa, long d) {
    Builder *b = (Builder *)self;
    if (ensure_bound(b, dfa) < 0 || check_dstate(b, d) < 0) return -1;
    long gen = b->generation;
    if (ensure_row(b, (int32_t)d) < 0) return -1;
    if (SLICE(b)[d] == SLICE_UNKNOWN && compute_absorb(b, (int32_t)d) < 0) return -1;
    return b->generation != gen;
}

static int c_tables(PyObject *self, PyObject *dfa, DfaTables *out) {
    Builder *b = (Builder *)self;
    if (ensure_bound(b, dfa) < 0) return -1;
    out->trans = TRANS(b);
    out->flags = FLAGS(b);
    out->slice_of = SLICE(b);
    out->absorb = ABSORB(b);
    out->dominant = DOMINANT(b);
    out->num_states = b->num_states;
    return 0;
}

static int c_upgrade(PyObject *self, PyObject *dfa, long d, long *sid) {
    Builder *b = (Builder *)self;
    if (ensure_bound(b, dfa) < 0 || check_dstate(b, d) < 0) return -1;
    long gen = b->generation;
    int32_t out;
    if (upgrade(b, (int32_t)d, &out) < 0) return -1;
    *sid = out;
    return b->generation != gen;
}

static int c_utf8_to(PyObject *self, PyObject *dfa, long d, long target, long *ok) {
    Builder *b = (Builder *)self;
    if (ensure_bound(b, dfa) < 0 || check_dstate(b, d) < 0) return -1;
    long gen = b->generation;
    int r = utf8_to(b, (int32_t)d, (int32_t)target);
    if (r < 0) return -1;
    *ok = r;
    return b->generation != gen;
}

static int c_text_closed(PyObject *self, PyObject *dfa, long d, long *ok) {
    Builder *b = (Builder *)self;
    if (ensure_bound(b, dfa) < 0 || check_dstate(b, d) < 0) return -1;
    long gen = b->generation;
    int r = text_closed(b, (int32_t)d);
    if (r < 0) return -1;
    *ok = r;
    return b->generation != gen;
}

static int c_ws_run(PyObject *self, PyObject *dfa, long d, long *left) {
    Builder *b = (Builder *)self;
    if (d < 0 || d >= b->num_states) { PyErr_SetString(PyExc_IndexError, "DFA state out of range"); return -1; }
    if (ws_run_of(b, (int32_t)d) < 0) return -1;
    *left = b->ws_run[d];
    return 0;
}

/* ---- Python methods ---- */

static PyObject *py_bind(Builder *b, PyObject *dfa) {
    if (b->bound && b->dfa != dfa) { PyErr_SetString(PyExc_ValueError, "Builder used with another LazyDfa"); return NULL; }
    b->dfa = dfa;
    if (bind_tables(b, dfa) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *py_row(Builder *b, PyObject *args) {
    PyObject *dfa;
    long d;
    if (!PyArg_ParseTuple(args, "Ol", &dfa, &d)) return NULL;
    int r = c_row((PyObject *)b, dfa, d);
    if (r < 0) return NULL;
    return PyBool_FromLong(r);
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

/* warm(dfa, max_rows, budget_s) -> rows built: the unknown rows in the order their states were
 * made (outward from the start states), until max_rows or budget_s seconds, so that the first
 * masks find most of their rows built (see LazyDfa.warm). */
static PyObject *py_warm(Builder *b, PyObject *args) {
    PyObject *dfa;
    long max_rows;
    double budget;
    if (!PyArg_ParseTuple(args, "Old", &dfa, &max_rows, &budget)) return NULL;
    if (ensure_bound(b, dfa) < 0) return NULL;
    const double end = now_s() + budget;
    long built = 0;
    for (Py_ssize_t d = 0; d < b->num_states && built < max_rows; d++) {
        if (TRANS(b)[d * 256] != UNKNOWN || b->ws_inner[d]) continue;
        if (build_row(b, (int32_t)d) < 0) return NULL;
        if (++built % 8 == 0 && now_s() > end) break;
    }
    return PyLong_FromLong(built);
}

/* close_text(dfa, budget_s) -> states found closed: text_closed of every state in turn (rows built
 * on the way), until budget_s seconds passed (the clock read before every 16 states), so that first walks find it known (see
 * LazyDfa.close_text). */
static PyObject *py_close_text(Builder *b, PyObject *args) {
    PyObject *dfa;
    double budget;
    if (!PyArg_ParseTuple(args, "Od", &dfa, &budget)) return NULL;
    if (ensure_bound(b, dfa) < 0) return NULL;
    const double end = now_s() + budget;
    long closed = 0;
    for (Py_ssize_t d = 0; d < b->num_states; d++) {
        if (d % 16 == 0 && now_s() > end) break;
        if (b->ws_inner[d]) continue;  /* (a gap's later states: their rows would build the whole chain) */
        const int r = text_closed(b, (int32_t)d);
        if (r < 0) return NULL;
        closed += r;
    }
    return PyLong_FromLong(closed);
}

/* upgrade_text(dfa, budget_s) -> states widened: upgrade() of every state made before the call
 * whose row is built and takes the ASCII text bytes 'a', ' ', '~' and '0' to one live state (a
 * string's body, a step of a bounded run), until budget_s seconds passed (the clock read before
 * every 16 states), so that the UTF-8 rows of a string's states are made at compile, not by the
 * first walk that starts there (see LazyDfa.upgrade_text). */
static PyObject *py_upgrade_text(Builder *b, PyObject *args) {
    PyObject *dfa;
    double budget;
    if (!PyArg_ParseTuple(args, "Od", &dfa, &budget)) return NULL;
    if (ensure_bound(b, dfa) < 0) return NULL;
    const double end = now_s() + budget;
    const Py_ssize_t n = b->num_states;
    long widened = 0;
    for (Py_ssize_t d = 0; d < n; d++) {
        if (d % 16 == 0 && now_s() > end) break;
        const int32_t *row = TRANS(b) + d * 256;  /* (again each time: an upgrade may grow the tables) */
        if (row[0] == UNKNOWN) continue;
        const int32_t t = row['a'];
        if (t < 0 || row[' '] != t || row['~'] != t || row['0'] != t) continue;
        int32_t sid;
        if (upgrade(b, (int32_t)d, &sid) < 0) return NULL;
        widened += b->utf8_ascii >= 0 && sid == b->utf8_text;
    }
    return PyLong_FromLong(widened);
}

static PyObject *py_prepare(Builder *b, PyObject *args) {
    PyObject *dfa;
    long d;
    if (!PyArg_ParseTuple(args, "Ol", &dfa, &d)) return NULL;
    int r = c_prepare((PyObject *)b, dfa, d);
    if (r < 0) return NULL;
    return PyBool_FromLong(r);
}

static PyObject *py_slice_step(Builder *b, PyObject *args) {
    PyObject *dfa;
    long d;
    if (!PyArg_ParseTuple(args, "Ol", &dfa, &d)) return NULL;
    if (ensure_bound(b, dfa) < 0 || check_dstate(b, d) < 0) return NULL;
    int32_t sid, t;
    if (slice_step(b, (int32_t)d, &sid, &t) < 0) return NULL;
    return Py_BuildValue("ii", sid, t);
}

/* intern_closure(dfa, nfa_states) -> the DFA state of the union of their closures. */
static PyObject *py_intern_closure(Builder *b, PyObject *args) {
    PyObject *dfa, *seq;
    if (!PyArg_ParseTuple(args, "OO", &dfa, &seq)) return NULL;
    if (ensure_bound(b, dfa) < 0) return NULL;
    PyObject *fast = PySequence_Fast(seq, "nfa_states must be a sequence");
    if (!fast) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    Vec ts = {NULL, 0, 0};
    PyObject *out = NULL;
    if (vec_reserve(&ts, n ? n : 1) < 0) goto done;
    for (Py_ssize_t i = 0; i < n; i++) {
        long s = as_long(PySequence_Fast_GET_ITEM(fast, i));
        if ((s == -1 && PyErr_Occurred()) || check_state(b, s) < 0) goto done;
        ts.data[ts.len++] = (int32_t)s;
    }
    sort_i32(ts.data, ts.len);
    Py_ssize_t u = ts.len ? 1 : 0;
    for (Py_ssize_t i = 1; i < ts.len; i++)
        if (ts.data[i] != ts.data[u - 1]) ts.data[u++] = ts.data[i];
    int32_t d = u ? target_of(b, ts.data, u) : intern(b, NULL, 0);
    if (d >= 0) out = PyLong_FromLong(d);
done:
    free(ts.data);
    Py_DECREF(fast);
    return out;
}

/* call_groups(d) -> [(rule, [return NFA states])] in order of first appearance over the sorted set. */
static PyObject *py_call_groups(Builder *b, PyObject *args) {
    long d;
    if (!PyArg_ParseTuple(args, "l", &d)) return NULL;
    if (check_dstate(b, d) < 0) return NULL;
    PyObject *out = PyList_New(0), *index = PyDict_New();
    if (!out || !index) goto fail;
    for (int32_t k = 0; k < b->set_len[d]; k++) {
        const int32_t s = b->set_pool.data[b->set_off[d] + k];
        for (int32_t i = b->c_off[s]; i < b->c_off[s + 1]; i++) {
            PyObject *rule = PyLong_FromLong(b->c_dat[2 * i]), *ret = rule ? PyLong_FromLong(b->c_dat[2 * i + 1]) : NULL;
            PyObject *rets = ret ? PyDict_GetItemWithError(index, rule) : NULL;
            if (!rets) {
                if (!ret || PyErr_Occurred()) { Py_XDECREF(rule); Py_XDECREF(ret); goto fail; }
                rets = PyList_New(0);
                PyObject *pair = rets ? PyTuple_Pack(2, rule, rets) : NULL;
                int bad = !pair || PyDict_SetItem(index, rule, rets) < 0 || PyList_Append(out, pair) < 0;
                Py_XDECREF(pair);
                Py_XDECREF(rets);
                if (bad) { Py_DECREF(rule); Py_DECREF(ret); goto fail; }
            }
            int bad = PyList_Append(rets, ret) < 0;
            Py_DECREF(rule);
            Py_DECREF(ret);
            if (bad) goto fail;
        }
    }
    Py_DECREF(index);
    return out;
fail:
    Py_XDECREF(out);
    Py_XDECREF(index);
    return NULL;
}

static PyObject *py_nfa_states(Builder *b, PyObject *args) {
    long d;
    if (!PyArg_ParseTuple(args, "l", &d)) return NULL;
    if (check_dstate(b, d) < 0) return NULL;
    PyObject *out = PyTuple_New(b->set_len[d]);
    if (!out) return NULL;
    for (int32_t k = 0; k < b->set_len[d]; k++) {
        PyObject *v = PyLong_FromLong(b->set_pool.data[b->set_off[d] + k]);
        if (!v) { Py_DECREF(out); return NULL; }
        PyTuple_SET_ITEM(out, k, v);
    }
    return out;
}

/* utf8_to(dfa, d, target, sequences) -> True when every sequence of byte ranges leads from d to
 * target alone (uncached; the walk's own calls use set_utf8's sequences and remember). */
static PyObject *py_utf8_to(Builder *b, PyObject *args) {
    PyObject *dfa, *seqs;
    long d, target;
    Seq parsed[MAX_SEQS];
    int num;
    if (!PyArg_ParseTuple(args, "OllO", &dfa, &d, &target, &seqs)) return NULL;
    if (ensure_bound(b, dfa) < 0 || check_dstate(b, d) < 0 || parse_seqs(seqs, parsed, &num) < 0) return NULL;
    int ok = seqs_lead_to(b, (int32_t)d, (int32_t)target, parsed, num);
    return ok < 0 ? NULL : PyBool_FromLong(ok);
}

/* text_closed(dfa, d) -> bool (see `text_closed`). */
static PyObject *py_text_closed(Builder *b, PyObject *args) {
    PyObject *dfa;
    long d, ok;
    if (!PyArg_ParseTuple(args, "Ol", &dfa, &d)) return NULL;
    return c_text_closed((PyObject *)b, dfa, d, &ok) < 0 ? NULL : PyBool_FromLong(ok);
}

/* closed_known(d) -> bool: d is known closed on text (a search said so), without searching. */
static PyObject *py_closed_known(Builder *b, PyObject *arg) {
    const long d = PyLong_AsLong(arg);
    if (d == -1 && PyErr_Occurred()) return NULL;
    if (check_dstate(b, d) < 0) return NULL;
    return PyBool_FromLong(b->closed[d] == 1);
}

/* upgrade_to_utf8(dfa, d) -> slice id (see `upgrade`). */
static PyObject *py_upgrade(Builder *b, PyObject *args) {
    PyObject *dfa;
    long d, sid;
    if (!PyArg_ParseTuple(args, "Ol", &dfa, &d)) return NULL;
    return c_upgrade((PyObject *)b, dfa, d, &sid) < 0 ? NULL : PyLong_FromLong(sid);
}

/* set_utf8(ascii_slice, text_slice, runs, sequences): what upgrade_to_utf8 widens (ascii -1: none). */
static PyObject *py_set_utf8(Builder *b, PyObject *args) {
    int ascii, text, runs;
    PyObject *seqs;
    if (!PyArg_ParseTuple(args, "iipO", &ascii, &text, &runs, &seqs)) return NULL;
    if (parse_seqs(seqs, b->seqs, &b->num_seqs) < 0) return NULL;
    b->utf8_ascii = ascii;
    b->utf8_text = text;
    b->utf8_runs = runs;
    free(b->text_alpha);  /* (made again from these sequences on text_closed's next call) */
    b->text_alpha = NULL;
    if (b->num_states) memset(b->closed, -1, b->num_states);  /* (found for other text) */
    Py_RETURN_NONE;
}

/* set_slices(sets): a state's slice is the id of the first of these byte sets (32-byte bitsets, bit c
 * of byte c >> 3) that lies inside the set of bytes leading to its dominant target, else -1. */
static PyObject *py_set_slices(Builder *b, PyObject *arg) {
    Py_buffer v;
    if (PyObject_GetBuffer(arg, &v, PyBUF_C_CONTIGUOUS) < 0) return NULL;
    if (v.len % 32) { PyBuffer_Release(&v); PyErr_SetString(PyExc_ValueError, "sets are 32 bytes each"); return NULL; }
    const int num = (int)(v.len / 32);
    uint64_t (*canon)[4] = calloc(num ? num : 1, sizeof(*canon));
    if (!canon) { PyBuffer_Release(&v); return PyErr_NoMemory(); }
    const uint8_t *bytes = v.buf;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    memcpy(canon, bytes, (size_t)num * 32);  /* bit c of a set is bit c & 63 of its word c >> 6 as it is */
#else
    for (int k = 0; k < num; k++)
        for (int c = 0; c < 256; c++)
            if ((bytes[k * 32 + (c >> 3)] >> (c & 7)) & 1) canon[k][c >> 6] |= 1ull << (c & 63);
#endif
    PyBuffer_Release(&v);
    free(b->canon);
    b->canon = canon;
    b->num_canon = num;
    Py_RETURN_NONE;
}

static PyObject *py_num_states(Builder *b, PyObject *unused) { return PyLong_FromSsize_t(b->num_states); }

static PyObject *py_ws_run(Builder *b, PyObject *args) {
    PyObject *dfa;
    long d, left;
    if (!PyArg_ParseTuple(args, "Ol", &dfa, &d)) return NULL;
    if (ensure_bound(b, dfa) < 0 || c_ws_run((PyObject *)b, dfa, d, &left) < 0) return NULL;
    return PyLong_FromLong(left);
}

/* One table from the Nfa's lists: off[n + 1] and width ints per entry (an int, or a tuple of width). */
static int pack_lists(PyObject *lists, Py_ssize_t n, int width, int32_t **off_out, int32_t **dat_out) {
    int32_t *off = calloc(n + 1, sizeof(int32_t));
    if (!off) { PyErr_NoMemory(); return -1; }
    *off_out = off;
    for (Py_ssize_t s = 0; s < n; s++) {
        PyObject *x = PyList_GET_ITEM(lists, s);
        if (!PyList_Check(x)) { PyErr_SetString(PyExc_TypeError, "NFA per-state entries must be lists"); return -1; }
        if (off[s] + PyList_GET_SIZE(x) > INT32_MAX / 4) { PyErr_SetString(PyExc_OverflowError, "NFA too large"); return -1; }
        off[s + 1] = off[s] + (int32_t)PyList_GET_SIZE(x);
    }
    int32_t *dat = malloc(((size_t)off[n] * width + 1) * sizeof(int32_t));
    if (!dat) { PyErr_NoMemory(); return -1; }
    *dat_out = dat;
    for (Py_ssize_t s = 0; s < n; s++) {
        PyObject *x = PyList_GET_ITEM(lists, s);
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(x); i++) {
            PyObject *e = PyList_GET_ITEM(x, i);
            int32_t *p = dat + (Py_ssize_t)(off[s] + i) * width;
            if (width == 1) {
                long v = as_long(e);
                if (v == -1 && PyErr_Occurred()) return -1;
                p[0] = (int32_t)v;
                if (v != p[0]) { PyErr_SetString(PyExc_IndexError, "NFA state out of range"); return -1; }
                continue;
            }
            if (!PyTuple_Check(e) || PyTuple_GET_SIZE(e) != width) {
                PyErr_SetString(PyExc_TypeError, width == 3 ? "byte edge must be (lo, hi, target)" : "call must be (rule, ret)");
                return -1;
            }
            for (int k = 0; k < width; k++) {
                long v = as_long(PyTuple_GET_ITEM(e, k));
                if (v == -1 && PyErr_Occurred()) return -1;
                p[k] = (int32_t)v;
                if (v != p[k]) { PyErr_SetString(PyExc_ValueError, "NFA value out of range"); return -1; }
            }
        }
    }
    return 0;
}

/* One table of the packed form (grammar/automaton/_nfa.c Emitter.finish): copied. */
static int take_packed(PyObject *off_obj, PyObject *dat_obj, Py_ssize_t n, int width, int32_t **off_out, int32_t **dat_out) {
    Py_buffer vo, vd;
    if (PyObject_GetBuffer(off_obj, &vo, PyBUF_C_CONTIGUOUS) < 0) return -1;
    if (PyObject_GetBuffer(dat_obj, &vd, PyBUF_C_CONTIGUOUS) < 0) { PyBuffer_Release(&vo); return -1; }
    int rc = -1;
    const int32_t *o = vo.buf;
    if (vo.len != (n + 1) * (Py_ssize_t)sizeof(int32_t) || vd.len % (width * sizeof(int32_t)) || o[0] != 0
        || (Py_ssize_t)o[n] * width * (Py_ssize_t)sizeof(int32_t) != vd.len) {
        PyErr_SetString(PyExc_ValueError, "packed NFA tables have inconsistent sizes");
        goto done;
    }
    for (Py_ssize_t s = 0; s < n; s++)
        if (o[s + 1] < o[s]) { PyErr_SetString(PyExc_ValueError, "packed NFA offsets must not decrease"); goto done; }
    *off_out = malloc(vo.len);
    *dat_out = malloc(vd.len + sizeof(int32_t));
    if (!*off_out || !*dat_out) { PyErr_NoMemory(); goto done; }
    memcpy(*off_out, vo.buf, vo.len);
    memcpy(*dat_out, vd.buf, vd.len);
    rc = 0;
done:
    PyBuffer_Release(&vo);
    PyBuffer_Release(&vd);
    return rc;
}

/* Every target a state, every byte range within 0..255 (checked once: the row code trusts them). */
static int check_tables(Builder *b) {
    const Py_ssize_t n = b->num_nfa;
    for (Py_ssize_t i = 0; i < b->e_off[n]; i++) {
        const int32_t *e = b->e_dat + 3 * i;
        if (e[0] < 0 || e[1] > 255 || e[0] > e[1]) { PyErr_SetString(PyExc_ValueError, "byte edge range"); return -1; }
        if (check_state(b, e[2]) < 0) return -1;
    }
    for (Py_ssize_t i = 0; i < b->p_off[n]; i++)
        if (check_state(b, b->p_dat[i]) < 0) return -1;
    for (Py_ssize_t i = 0; i < b->c_off[n]; i++)
        if (check_state(b, b->c_dat[2 * i + 1]) < 0) return -1;
    return 0;
}

/* Builder(byte_edges, eps, calls, rule_final, has_slicer, max_absorb): the Nfa's lists (as the
 * reference builder takes them), or Builder(packed, None, None, ...) with an Nfa's `packed` tables. */
static int builder_init(Builder *b, PyObject *args, PyObject *kw) {
    PyObject *edges, *eps, *calls, *finals;
    int has_slicer, max_absorb;
    if (!PyArg_ParseTuple(args, "OOOOpi", &edges, &eps, &calls, &finals, &has_slicer, &max_absorb))
        return -1;
    if (b->initialized) { PyErr_SetString(PyExc_RuntimeError, "Builder already initialized"); return -1; }
    Py_ssize_t n;
    if (PyTuple_Check(edges) && eps == Py_None && calls == Py_None) {
        if (PyTuple_GET_SIZE(edges) != 7) { PyErr_SetString(PyExc_ValueError, "packed NFA: (num_states, 6 tables)"); return -1; }
        n = PyLong_AsSsize_t(PyTuple_GET_ITEM(edges, 0));
        if (n == -1 && PyErr_Occurred()) return -1;
        if (n < 0 || n >= INT32_MAX) { PyErr_SetString(PyExc_ValueError, "packed NFA state count"); return -1; }
        b->num_nfa = n;
        if (take_packed(PyTuple_GET_ITEM(edges, 1), PyTuple_GET_ITEM(edges, 2), n, 3, &b->e_off, &b->e_dat) < 0
            || take_packed(PyTuple_GET_ITEM(edges, 3), PyTuple_GET_ITEM(edges, 4), n, 1, &b->p_off, &b->p_dat) < 0
            || take_packed(PyTuple_GET_ITEM(edges, 5), PyTuple_GET_ITEM(edges, 6), n, 2, &b->c_off, &b->c_dat) < 0)
            return -1;
    } else {
        if (!PyList_Check(edges) || !PyList_Check(eps) || !PyList_Check(calls)) {
            PyErr_SetString(PyExc_TypeError, "Builder: the NFA's lists (or its packed tables, None, None)");
            return -1;
        }
        n = PyList_GET_SIZE(edges);
        if (PyList_GET_SIZE(eps) != n || PyList_GET_SIZE(calls) != n) { PyErr_SetString(PyExc_ValueError, "NFA lists differ in length"); return -1; }
        b->num_nfa = n;
        if (pack_lists(edges, n, 3, &b->e_off, &b->e_dat) < 0 || pack_lists(eps, n, 1, &b->p_off, &b->p_dat) < 0
            || pack_lists(calls, n, 2, &b->c_off, &b->c_dat) < 0)
            return -1;
    }
    if (check_tables(b) < 0) return -1;
    Py_ssize_t m = n ? n : 1;
    b->nfa_final = calloc(m, 1);
    b->nfa_ws = malloc(m);
    if (b->nfa_ws) memset(b->nfa_ws, WS_UNKNOWN, m);
    b->cl_off = calloc(m, sizeof(int32_t));
    b->cl_len = calloc(m, sizeof(int32_t));
    b->single = calloc(m, sizeof(int32_t));
    b->mark_a = calloc(m, sizeof(uint32_t));
    b->mark_b = calloc(m, sizeof(uint32_t));
    if (!b->nfa_final || !b->nfa_ws || !b->cl_off || !b->cl_len || !b->single || !b->mark_a || !b->mark_b) { PyErr_NoMemory(); return -1; }
    PyObject *it = PyObject_GetIter(finals);
    if (!it) return -1;
    PyObject *item;
    while ((item = PyIter_Next(it))) {
        long s = as_long(item);
        Py_DECREF(item);
        if ((s == -1 && PyErr_Occurred()) || check_state(b, s) < 0) { Py_DECREF(it); return -1; }
        b->nfa_final[s] = 1;
    }
    Py_DECREF(it);
    if (PyErr_Occurred()) return -1;
    b->has_slicer = has_slicer;
    b->max_absorb = max_absorb;
    b->utf8_ascii = -1;
    b->initialized = 1;
    return 0;
}

static void builder_dealloc(Builder *b) {
    release_tables(b);
    free(b->e_off); free(b->e_dat); free(b->p_off); free(b->p_dat); free(b->c_off); free(b->c_dat);
    free(b->nfa_final); free(b->nfa_ws); free(b->cl_off); free(b->cl_len); free(b->single); free(b->mark_a); free(b->mark_b);
    free(b->cl_pool.data); free(b->set_pool.data); free(b->scratch.data); free(b->todo.data); free(b->edge_buf.data);
    free(b->union_copy.data); free(b->row_active.data); free(b->row_prev.data); free(b->row_live.data); free(b->edge_tmp.data);
    free(b->set_off); free(b->set_len); free(b->sn_sid); free(b->sn_target); free(b->set_hash);
    free(b->table); free(b->canon);
    free(b->utf8_target); free(b->utf8_ok); free(b->utf8_checked);
    free(b->closed); free(b->closed_gen); free(b->closed_seen); free(b->text_alpha); free(b->ws_run); free(b->ws_inner);
    Py_TYPE(b)->tp_free((PyObject *)b);
}

static PyMethodDef builder_methods[] = {
    {"bind", (PyCFunction)py_bind, METH_O, "bind(dfa): take the LazyDfa's tables (after it made them)."},
    {"row", (PyCFunction)py_row, METH_VARARGS, "row(dfa, d) -> grew: fill trans[d] and dominant[d] if unknown."},
    {"ws_run", (PyCFunction)py_ws_run, METH_VARARGS, "ws_run(dfa, d) -> the whitespace bytes a bounded gap's state d takes, or -1."},
    {"warm", (PyCFunction)py_warm, METH_VARARGS, "warm(dfa, max_rows, budget_s) -> rows built in state order."},
    {"prepare", (PyCFunction)py_prepare, METH_VARARGS, "prepare(dfa, d) -> grew: the row, slice id and absorb length."},
    {"slice_step", (PyCFunction)py_slice_step, METH_VARARGS, "slice_step(dfa, d) -> (slice id, target)."},
    {"intern_closure", (PyCFunction)py_intern_closure, METH_VARARGS, "intern_closure(dfa, nfa_states) -> dstate."},
    {"call_groups", (PyCFunction)py_call_groups, METH_VARARGS, "call_groups(d) -> [(rule, [return NFA states])]."},
    {"nfa_states", (PyCFunction)py_nfa_states, METH_VARARGS, "nfa_states(d) -> sorted tuple of NFA states."},
    {"utf8_to", (PyCFunction)py_utf8_to, METH_VARARGS, "utf8_to(dfa, d, target, sequences) -> bool."},
    {"close_text", (PyCFunction)py_close_text, METH_VARARGS, "close_text(dfa, budget_s) -> states closed on text, in state order."},
    {"upgrade_text", (PyCFunction)py_upgrade_text, METH_VARARGS, "upgrade_text(dfa, budget_s) -> string states widened to UTF-8 text, in state order."},
    {"text_closed", (PyCFunction)py_text_closed, METH_VARARGS, "text_closed(dfa, d) -> bool: every string-text token lives from d."},
    {"closed_known", (PyCFunction)py_closed_known, METH_O, "closed_known(d) -> bool: d is known closed on text, without a search."},
    {"upgrade_to_utf8", (PyCFunction)py_upgrade, METH_VARARGS, "upgrade_to_utf8(dfa, d) -> slice id."},
    {"set_utf8", (PyCFunction)py_set_utf8, METH_VARARGS, "set_utf8(ascii_slice, text_slice, runs, sequences)."},
    {"set_slices", (PyCFunction)py_set_slices, METH_O, "set_slices(sets): the slicer as 32-byte bitsets."},
    {"num_states", (PyCFunction)py_num_states, METH_NOARGS, "Number of DFA states made so far."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject BuilderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "grammar.automaton._dfa.Builder",
    .tp_basicsize = sizeof(Builder),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Builder(byte_edges, eps, calls, rule_final, has_slicer, max_absorb): DFA rows of one NFA (slices from set_slices).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)builder_init,
    .tp_dealloc = (destructor)builder_dealloc,
    .tp_methods = builder_methods,
};

static DfaApi api = {c_row, c_prepare, &BuilderType, c_tables, c_upgrade, c_utf8_to, c_text_closed, c_ws_run};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_dfa", "DFA row construction in C (grammar/automaton/_dfa.c).", -1, NULL};

PyMODINIT_FUNC PyInit__dfa(void) {
    if (PyType_Ready(&BuilderType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    Py_INCREF(&BuilderType);
    if (PyModule_AddObject(m, "Builder", (PyObject *)&BuilderType) < 0) { Py_DECREF(&BuilderType); Py_DECREF(m); return NULL; }
    PyObject *cap = PyCapsule_New(&api, DFA_CAPSULE, NULL);
    if (!cap || PyModule_AddObject(m, "_C_API", cap) < 0) { Py_XDECREF(cap); Py_DECREF(m); return NULL; }
    if (add_core_constants(m) < 0) { Py_DECREF(m); return NULL; }
    return m;
}
