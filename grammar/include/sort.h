/* In-place sorts for the grammar's C extensions (grammar/automaton/_dfa.c, grammar/masks/_walk.c),
 * with the comparison inlined.
 *
 * Why not qsort: glibc's qsort is a merge sort that calls its comparison through a pointer. Its
 * sorts of NFA state sets and byte edges were an eighth of a cold mask fill's time in the p99
 * band of benchmarks/grammar.py (flexible whitespace, perf samples of the fills of 100-500 us):
 * more than the row builder itself. These cut a compile's row warm-up and text closure by 13-14 %
 * (dev seed 11, 400 schemas, the two builds alternating per schema in one process).
 *
 * DEFINE_SORT(name, T, LESS) defines `static inline void name(T *a, Py_ssize_t n)`, an introsort:
 * quicksort on a median of three, insertion sort below SORT_SMALL elements, heapsort past a
 * depth of 2 log2 n (no quadratic input). LESS(x, y) must be a strict weak order on T values.
 * sort_i32 sorts int32 arrays, by radix (11-bit digits) when they are long and non-negative.
 */
#ifndef GRAMMAR_SORT_H
#define GRAMMAR_SORT_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define SORT_SMALL 16

#define DEFINE_SORT(name, T, LESS)                                                                  \
    static inline void name##_insertion(T *a, Py_ssize_t n) {                                       \
        for (Py_ssize_t i = 1; i < n; i++) {                                                        \
            T x = a[i];                                                                             \
            Py_ssize_t j = i;                                                                       \
            while (j > 0 && LESS(x, a[j - 1])) { a[j] = a[j - 1]; j--; }                            \
            a[j] = x;                                                                               \
        }                                                                                           \
    }                                                                                               \
    static inline void name##_sift(T *a, Py_ssize_t root, Py_ssize_t n) {                           \
        T x = a[root];                                                                              \
        for (Py_ssize_t child; (child = 2 * root + 1) < n; root = child) {                          \
            if (child + 1 < n && LESS(a[child], a[child + 1])) child++;                             \
            if (!LESS(x, a[child])) break;                                                          \
            a[root] = a[child];                                                                     \
        }                                                                                           \
        a[root] = x;                                                                                \
    }                                                                                               \
    static inline void name##_heap(T *a, Py_ssize_t n) {                                            \
        for (Py_ssize_t i = n / 2; i-- > 0;) name##_sift(a, i, n);                                  \
        for (Py_ssize_t e = n - 1; e > 0; e--) {                                                    \
            T t = a[0]; a[0] = a[e]; a[e] = t;                                                      \
            name##_sift(a, 0, e);                                                                   \
        }                                                                                           \
    }                                                                                               \
    static inline void name##_intro(T *a, Py_ssize_t n, int depth) {                                \
        while (n > SORT_SMALL) {                                                                    \
            if (depth-- == 0) { name##_heap(a, n); return; }                                        \
            const Py_ssize_t m = n / 2;                                                             \
            T t;                                                                                    \
            if (LESS(a[m], a[0])) { t = a[m]; a[m] = a[0]; a[0] = t; }                              \
            if (LESS(a[n - 1], a[0])) { t = a[n - 1]; a[n - 1] = a[0]; a[0] = t; }                  \
            if (LESS(a[n - 1], a[m])) { t = a[n - 1]; a[n - 1] = a[m]; a[m] = t; }                  \
            const T p = a[m]; /* a[0] <= p <= a[n - 1]: both scans stop inside the array */         \
            Py_ssize_t i = -1, j = n;                                                               \
            for (;;) {                                                                              \
                do i++; while (LESS(a[i], p));                                                      \
                do j--; while (LESS(p, a[j]));                                                      \
                if (i >= j) break;                                                                  \
                t = a[i]; a[i] = a[j]; a[j] = t;                                                    \
            }                                                                                       \
            /* a[0..j] <= p <= a[j+1..n): the smaller side by recursion, the larger by the loop */ \
            if (j + 1 < n - j - 1) { name##_intro(a, j + 1, depth); a += j + 1; n -= j + 1; }       \
            else { name##_intro(a + j + 1, n - j - 1, depth); n = j + 1; }                          \
        }                                                                                           \
        name##_insertion(a, n);                                                                     \
    }                                                                                               \
    static inline void name(T *a, Py_ssize_t n) {                                                   \
        int depth = 0;                                                                              \
        for (Py_ssize_t k = n; k > 1; k >>= 1) depth += 2;                                          \
        name##_intro(a, n, depth);                                                                  \
    }

#define SORT_I32_LESS(x, y) ((x) < (y))
DEFINE_SORT(sort_i32_intro, int32_t, SORT_I32_LESS)

/* From this many elements a non-negative int32 array is sorted by radix: two or three passes of
 * 11-bit digits, against n log n inlined comparisons. */
#define SORT_RADIX_MIN 512

/* a[0..n) in increasing order. */
static inline void sort_i32(int32_t *a, Py_ssize_t n) {
    if (n < SORT_RADIX_MIN) { sort_i32_intro(a, n); return; }
    int32_t lo = a[0], hi = a[0];
    for (Py_ssize_t i = 1; i < n; i++) { lo = a[i] < lo ? a[i] : lo; hi = a[i] > hi ? a[i] : hi; }
    int32_t *tmp = lo >= 0 ? malloc((size_t)n * sizeof(int32_t)) : NULL;
    if (!tmp) { sort_i32_intro(a, n); return; }  /* (negative values, or no memory: comparisons) */
    int32_t *src = a, *dst = tmp;
    for (int shift = 0; shift < 31 && (hi >> shift) > 0; shift += 11) {
        Py_ssize_t count[2049] = {0};
        for (Py_ssize_t i = 0; i < n; i++) count[((src[i] >> shift) & 2047) + 1]++;
        for (int d = 0; d < 2048; d++) count[d + 1] += count[d];
        for (Py_ssize_t i = 0; i < n; i++) dst[count[(src[i] >> shift) & 2047]++] = src[i];
        int32_t *t = src; src = dst; dst = t;
    }
    if (src != a) memcpy(a, src, (size_t)n * sizeof(int32_t));
    free(tmp);
}

#endif
