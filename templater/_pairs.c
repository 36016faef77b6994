/* templater._pairs: the near-duplicate index's verification measure of many candidate pairs in one call.

pair_measures(hashes, offsets, a, b, width, sample, min_hashes, jaccard) -> bytes (float64, one per pair)

``hashes``: every set's ``comparable_set`` array (sorted, distinct; ``width`` bytes a hash: 4 or 8) end to end;
``offsets`` (int64): set i is hashes[offsets[i]:offsets[i + 1]]; ``a``, ``b`` (int64): the pairs' set numbers.
The value of a pair is what ``templater.shingles.set_similarity`` (``set_jaccard`` when ``jaccard``) gives for the
two sets with verify "sample" (``sample`` > 0: bottom-``sample`` samples, cut at the smaller largest hash of a full
sample; ``min_hashes``: below it a containment estimate is no verdict, 0.0) or verify "exact" (``sample`` == 0):
containment |A & B| / min(|A|, |B|), or Jaccard |A & B| / |A | B|; two empty sets are identical (1.0), one empty set
shares nothing (0.0). The same integer counts and the same one division as the Python functions, which stay the
definition and the test oracle (tests/test_lsh.py); a merge of the two sorted arrays instead of a binary search of
every hash, without numpy's per-call cost (about 20 numpy calls a pair in Python). */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

static inline uint64_t at(const char *base, Py_ssize_t i, int width) {
    if (width == 4) {
        uint32_t v;
        memcpy(&v, base + i * 4, 4);
        return v;
    }
    uint64_t v;
    memcpy(&v, base + i * 8, 8);
    return v;
}

/* how many of the n sorted hashes are <= cut */
static Py_ssize_t count_upto(const char *base, Py_ssize_t n, uint64_t cut, int width) {
    Py_ssize_t low = 0, high = n;
    while (low < high) {
        Py_ssize_t mid = low + (high - low) / 2;
        if (at(base, mid, width) <= cut)
            low = mid + 1;
        else
            high = mid;
    }
    return low;
}

static double measure(const char *pa, Py_ssize_t na, const char *pb, Py_ssize_t nb, int width, Py_ssize_t sample,
                      Py_ssize_t min_hashes, int jaccard) {
    if (sample > 0) {
        int full_a = na >= sample, full_b = nb >= sample;
        if (full_a || full_b) {
            uint64_t cut;
            if (full_a && full_b) {
                uint64_t la = at(pa, na - 1, width), lb = at(pb, nb - 1, width);
                cut = la < lb ? la : lb;
            } else {
                cut = full_a ? at(pa, na - 1, width) : at(pb, nb - 1, width);
            }
            Py_ssize_t below_a = count_upto(pa, na, cut, width), below_b = count_upto(pb, nb, cut, width);
            if (!jaccard) {
                /* min((below_a, len_a), (below_b, len_b)) as Python compares tuples */
                int first = below_a < below_b || (below_a == below_b && na <= nb);
                Py_ssize_t small = first ? below_a : below_b, whole = first ? na : nb;
                if (small < min_hashes && small < whole)
                    return 0.0;
            }
            na = below_a;
            nb = below_b;
        }
    }
    if (na == 0 || nb == 0)
        return na == nb ? 1.0 : 0.0;
    Py_ssize_t i = 0, j = 0, inter = 0;
    while (i < na && j < nb) {
        uint64_t x = at(pa, i, width), y = at(pb, j, width);
        if (x < y)
            i++;
        else if (y < x)
            j++;
        else {
            inter++;
            i++;
            j++;
        }
    }
    if (jaccard)
        return (double)inter / (double)(na + nb - inter);
    return (double)inter / (double)(na < nb ? na : nb);
}

static PyObject *pair_measures(PyObject *self, PyObject *args) {
    Py_buffer hashes, offsets, a, b;
    int width, jaccard;
    Py_ssize_t sample, min_hashes;
    if (!PyArg_ParseTuple(args, "y*y*y*y*inni", &hashes, &offsets, &a, &b, &width, &sample, &min_hashes, &jaccard))
        return NULL;
    PyObject *out = NULL;
    if ((width != 4 && width != 8) || hashes.len % width || offsets.len % 8 || offsets.len < 8 || a.len % 8 ||
        a.len != b.len) {
        PyErr_SetString(PyExc_ValueError, "pair_measures: bad buffer sizes");
        goto done;
    }
    Py_ssize_t sets = offsets.len / 8 - 1, count = a.len / 8, total = hashes.len / width;
    const int64_t *off = (const int64_t *)offsets.buf, *pa = (const int64_t *)a.buf, *pb = (const int64_t *)b.buf;
    for (Py_ssize_t s = 0; s < sets; s++) {
        if (off[s] < 0 || off[s] > off[s + 1] || off[s + 1] > total) {
            PyErr_SetString(PyExc_ValueError, "pair_measures: offsets out of range");
            goto done;
        }
    }
    out = PyBytes_FromStringAndSize(NULL, count * 8);
    if (!out)
        goto done;
    double *values = (double *)PyBytes_AS_STRING(out);
    const char *base = (const char *)hashes.buf;
    for (Py_ssize_t k = 0; k < count; k++) {
        int64_t x = pa[k], y = pb[k];
        if (x < 0 || x >= sets || y < 0 || y >= sets) {
            Py_CLEAR(out);
            PyErr_SetString(PyExc_ValueError, "pair_measures: set number out of range");
            goto done;
        }
        values[k] = measure(base + off[x] * width, off[x + 1] - off[x], base + off[y] * width, off[y + 1] - off[y],
                            width, sample, min_hashes, jaccard);
    }
done:
    PyBuffer_Release(&hashes);
    PyBuffer_Release(&offsets);
    PyBuffer_Release(&a);
    PyBuffer_Release(&b);
    return out;
}

static PyMethodDef methods[] = {
    {"pair_measures", pair_measures, METH_VARARGS,
     "pair_measures(hashes, offsets, a, b, width, sample, min_hashes, jaccard) -> bytes of float64"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_pairs", NULL, -1, methods};

PyMODINIT_FUNC PyInit__pairs(void) { return PyModule_Create(&module); }
