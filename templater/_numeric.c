/* templater._numeric: the numeric passes of the single-page classifier, two byte scans of the parse, the
 * markup's first places of the words metadata looks for, and the near-duplicate signing path (shingles.py), in C.
 *
 * Kept compiled because it pays (measured: numpy's per-call overhead on pages of a few hundred blocks makes
 * block_features, context_features, the text counts and the ensemble several times slower; signing: see its
 * section); each function computes what its numpy or Python definition computes, and tests/test_speedups.py
 * (tests/test_shingles.py for signing) holds them equal with numpy as the oracle. No lxml here: the tree walks are
 * templater/_walk.pyx (Cython over lxml's C API); libxml2 is met once, to hand it an allocator (xml_heap).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <string.h>
#include <stdint.h>

static PyObject *lower_name = NULL;
/* the block attributes read here, as interned names (PyObject_GetAttrString would make each name anew per read) */
static PyObject *text_name = NULL, *link_chars_name = NULL, *markup_bytes_name = NULL, *tag_name = NULL;

/* A block attribute read, a new reference as PyObject_GetAttr gives: where the object's type reads attributes the
 * generic way and the name is a plain object slot of it (a __slots__ member, as Block's fields are), the slot is
 * read straight from the object; else (or where the slot is unset, for the AttributeError) PyObject_GetAttr. The
 * type (held), its version tag and the slot's offset are kept for the next read: a type changed since (a field's
 * descriptor replaced) has another version tag and is looked at again, as CPython's own slot reads do. */
#include <structmember.h>

typedef struct {
    PyTypeObject *type;
    unsigned int version;
    Py_ssize_t offset;
} SlotCache;

static SlotCache text_slot, link_chars_slot, markup_bytes_slot, tag_slot;

static PyObject *slot_attr(PyObject *obj, PyObject *name, SlotCache *cache) {
    PyTypeObject *type = Py_TYPE(obj);
    if (type != cache->type || type->tp_version_tag != cache->version
            || !PyType_HasFeature(type, Py_TPFLAGS_VALID_VERSION_TAG)) {
        Py_CLEAR(cache->type);
        if (type->tp_getattro != PyObject_GenericGetAttr) return PyObject_GetAttr(obj, name);
        PyObject *descr = _PyType_Lookup(type, name);  /* borrowed; gives the type a valid version tag */
        if (!descr || !Py_IS_TYPE(descr, &PyMemberDescr_Type) || !PyType_HasFeature(type, Py_TPFLAGS_VALID_VERSION_TAG))
            return PyObject_GetAttr(obj, name);
        PyMemberDef *member = ((PyMemberDescrObject *)descr)->d_member;
        if (member->type != T_OBJECT_EX || member->offset <= 0) return PyObject_GetAttr(obj, name);
        Py_INCREF(type);
        cache->type = type;
        cache->version = type->tp_version_tag;
        cache->offset = member->offset;
    }
    PyObject *value = *(PyObject **)((char *)obj + cache->offset);
    if (!value) return PyObject_GetAttr(obj, name);
    Py_INCREF(value);
    return value;
}

/* --- passes over features.Tree (elements numbered parents first: parent[e] < e) --------------------------- */
static int get_buffer(PyObject *obj, Py_buffer *view, Py_ssize_t itemsize, Py_ssize_t count) {
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS) < 0) return -1;
    if (view->len != itemsize * count || (count >= 0 && view->len % itemsize)) {
        PyBuffer_Release(view);
        PyErr_SetString(PyExc_ValueError, "array of the wrong size");
        return -1;
    }
    return 0;
}

/* features.inside: bool per element, itself or an ancestor marked. */
static PyObject *tree_inside(PyObject *self, PyObject *args) {
    PyObject *parent_obj, *marked_obj;
    Py_ssize_t n;
    if (!PyArg_ParseTuple(args, "OOn", &parent_obj, &marked_obj, &n)) return NULL;
    Py_buffer pv, mv;
    if (get_buffer(parent_obj, &pv, 8, n) < 0) return NULL;
    if (get_buffer(marked_obj, &mv, 1, n) < 0) { PyBuffer_Release(&pv); return NULL; }
    PyObject *result = PyBytes_FromStringAndSize(NULL, n);
    if (result) {
        const int64_t *parent = pv.buf;
        const char *marked = mv.buf;
        char *out = PyBytes_AS_STRING(result);
        for (Py_ssize_t e = 0; e < n; e++)
            out[e] = marked[e] ? 1 : (parent[e] >= 0 ? out[parent[e]] : 0);
    }
    PyBuffer_Release(&pv);
    PyBuffer_Release(&mv);
    return result;
}

/* features.sum_up: float64 per element, its value plus its descendants'; the additions in the order of the
 * plain version (deepest level first, each level in element order), so the sums are the same floats. */
static PyObject *tree_sum_up(PyObject *self, PyObject *args) {
    PyObject *parent_obj, *depth_obj, *values_obj;
    Py_ssize_t n;
    if (!PyArg_ParseTuple(args, "OOOn", &parent_obj, &depth_obj, &values_obj, &n)) return NULL;
    Py_buffer pv, dv, vv;
    if (get_buffer(parent_obj, &pv, 8, n) < 0) return NULL;
    if (get_buffer(depth_obj, &dv, 8, n) < 0) { PyBuffer_Release(&pv); return NULL; }
    if (get_buffer(values_obj, &vv, 8, n) < 0) { PyBuffer_Release(&pv); PyBuffer_Release(&dv); return NULL; }
    PyObject *result = PyBytes_FromStringAndSize(vv.buf, n * 8);
    Py_ssize_t *order = NULL, *start = NULL;
    const int64_t *parent = pv.buf, *depth = dv.buf;
    int64_t deepest = 0;
    for (Py_ssize_t e = 0; e < n; e++) {
        if (depth[e] < 0 || (depth[e] > 0 && parent[e] < 0)) { Py_CLEAR(result); Py_INCREF(Py_None); result = Py_None; goto done; }
        if (depth[e] > deepest) deepest = depth[e];
    }
    if (!result) goto done;
    order = PyMem_Malloc((n + 1) * sizeof(Py_ssize_t));
    start = PyMem_Calloc(deepest + 2, sizeof(Py_ssize_t));
    if (!order || !start) { Py_CLEAR(result); PyErr_NoMemory(); goto done; }
    for (Py_ssize_t e = 0; e < n; e++) start[depth[e] + 1]++;
    for (int64_t d = 0; d <= deepest; d++) start[d + 1] += start[d];
    {
        Py_ssize_t *fill = PyMem_Malloc((deepest + 1) * sizeof(Py_ssize_t));
        if (!fill) { Py_CLEAR(result); PyErr_NoMemory(); goto done; }
        memcpy(fill, start, (deepest + 1) * sizeof(Py_ssize_t));
        for (Py_ssize_t e = 0; e < n; e++) order[fill[depth[e]]++] = e;
        PyMem_Free(fill);
    }
    double *total = (double *)PyBytes_AS_STRING(result);
    for (int64_t d = deepest; d >= 1; d--)
        for (Py_ssize_t i = start[d]; i < start[d + 1]; i++) {
            Py_ssize_t e = order[i];
            total[parent[e]] += total[e];
        }
done:
    PyMem_Free(order);
    PyMem_Free(start);
    PyBuffer_Release(&pv);
    PyBuffer_Release(&dv);
    PyBuffer_Release(&vv);
    return result;
}


/* --- ann.predict_mean's ensemble forward pass ------------------------------------------------------------- */
#include <math.h>  /* fabs, copysign */

/* The loops below are written so that the compiler vectorises them: no calls (exp and tanh are computed inline,
 * ann_exp), no branches but selects. They are compiled twice on x86-64 with GCC or clang, once for any CPU and once
 * for AVX2 with FMA (chosen at run time), and each time once more for the shipped ensembles' shape (3 networks of
 * 8 hidden units), whose constant loop bounds let the hidden sums stay in registers. */
#if defined(__GNUC__) || defined(__clang__)
#define FORWARD_INLINE static inline __attribute__((always_inline))
#define RESTRICT __restrict__
#else
#define FORWARD_INLINE static inline
#define RESTRICT
#endif
#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
#define FORWARD_AVX2 1
static int has_avx2_fma = 0;  /* set by PyInit__numeric */
#endif

/* exp(y) for |y| <= 700 (or NaN, which it returns), to about an ulp: y = n ln2 + r with |r| <= ln2 / 2 (ln2 in
 * two parts, fdlibm's, so n ln2_hi is exact), exp(r) by its Taylor series to r^13 (the next term is below 2^-56
 * of the result), times 2^n built in the exponent bits. */
FORWARD_INLINE double ann_exp(double y) {
    const double shifter = 0x1.8p52, log2e = 1.44269504088896338700e+00;
    const double ln2_hi = 6.93147180369123816490e-01, ln2_lo = 1.90821492927058770002e-10;
    double k = y * log2e + shifter;  /* n = round(y / ln2) in the low bits of k */
    double n = k - shifter;
    double r = y - n * ln2_hi;
    r = r - n * ln2_lo;
    double p = 1.0 / 6227020800.0;
    p = p * r + 1.0 / 479001600.0;
    p = p * r + 1.0 / 39916800.0;
    p = p * r + 1.0 / 3628800.0;
    p = p * r + 1.0 / 362880.0;
    p = p * r + 1.0 / 40320.0;
    p = p * r + 1.0 / 5040.0;
    p = p * r + 1.0 / 720.0;
    p = p * r + 1.0 / 120.0;
    p = p * r + 1.0 / 24.0;
    p = p * r + 1.0 / 6.0;
    p = p * r + 0.5;
    p = p * r + 1.0;
    p = p * r + 1.0;
    int64_t bits;
    memcpy(&bits, &k, 8);
    bits = (bits - 0x4338000000000000LL + 1023) << 52;  /* (n + bias) in the exponent field: 2^n */
    double scale;
    memcpy(&scale, &bits, 8);
    return p * scale;
}

/* One row's standardisation, as numpy does it: (x - mean) / std, the same floats. */
FORWARD_INLINE void forward_scale(const double *RESTRICT x, const double *RESTRICT mean, const double *RESTRICT std,
                                  double *RESTRICT scaled, Py_ssize_t width) {
    for (Py_ssize_t i = 0; i < width; i++) scaled[i] = (x[i] - mean[i]) / std[i];
}

/* sums[u] = scaled @ W[:, u] over all networks' units at once (row i of W holds every unit's weight of input i). */
FORWARD_INLINE void forward_sums(const double *RESTRICT scaled, const double *RESTRICT weights,
                                 double *RESTRICT sums, Py_ssize_t width, Py_ssize_t units) {
    for (Py_ssize_t u = 0; u < units; u++) sums[u] = 0.0;
    for (Py_ssize_t i = 0; i < width; i++) {
        const double s = scaled[i], *RESTRICT row = weights + i * units;
        for (Py_ssize_t u = 0; u < units; u++) sums[u] += s * row[u];
    }
}

/* forward_sums of two rows at once for the shipped shape's 24 units: the same additions in the same order for
 * each row (so the same floats: each lane of the vectors below is one unit's running sum, added to as forward_sums
 * adds to it, fused where it is fused), the two rows' 24 running sums held in registers (where forward_sums keeps
 * them in memory), and twice as many independent multiply-adds in flight. GCC's and clang's vector types; other
 * compilers take the loop of forward_sums twice. */
#define PAIR_UNITS 24
#if defined(__GNUC__) || defined(__clang__)
typedef double pair_vec __attribute__((vector_size(32)));
#define PAIR_STEP(k)                                          \
    memcpy(&w, row + 4 * (k), sizeof w);                      \
    p##k += x0 * w;                                           \
    q##k += x1 * w;
#define PAIR_STORE(k)                                         \
    memcpy(sums0 + 4 * (k), &p##k, sizeof p##k);              \
    memcpy(sums1 + 4 * (k), &q##k, sizeof q##k);
FORWARD_INLINE void forward_sums_pair(const double *RESTRICT scaled0, const double *RESTRICT scaled1,
                                      const double *RESTRICT weights, double *RESTRICT sums0,
                                      double *RESTRICT sums1, Py_ssize_t width) {
    pair_vec p0 = {0.0, 0.0, 0.0, 0.0}, p1 = p0, p2 = p0, p3 = p0, p4 = p0, p5 = p0;
    pair_vec q0 = p0, q1 = p0, q2 = p0, q3 = p0, q4 = p0, q5 = p0, w;
    for (Py_ssize_t i = 0; i < width; i++) {
        const double *RESTRICT row = weights + i * PAIR_UNITS;
        const pair_vec x0 = {scaled0[i], scaled0[i], scaled0[i], scaled0[i]};
        const pair_vec x1 = {scaled1[i], scaled1[i], scaled1[i], scaled1[i]};
        PAIR_STEP(0) PAIR_STEP(1) PAIR_STEP(2) PAIR_STEP(3) PAIR_STEP(4) PAIR_STEP(5)
    }
    PAIR_STORE(0) PAIR_STORE(1) PAIR_STORE(2) PAIR_STORE(3) PAIR_STORE(4) PAIR_STORE(5)
}
#undef PAIR_STEP
#undef PAIR_STORE
#else
FORWARD_INLINE void forward_sums_pair(const double *RESTRICT scaled0, const double *RESTRICT scaled1,
                                      const double *RESTRICT weights, double *RESTRICT sums0,
                                      double *RESTRICT sums1, Py_ssize_t width) {
    forward_sums(scaled0, weights, sums0, width, PAIR_UNITS);
    forward_sums(scaled1, weights, sums1, width, PAIR_UNITS);
}
#endif

/* sums[u] = tanh(sums[u] + b[u]) * w[u], tanh(h) = sign(h) (1 - 2 / (exp(2 |h|) + 1)) with |h| capped at 20
 * (where tanh is 1.0 in doubles); a NaN stays NaN. Two loops, so that each vectorises. */
FORWARD_INLINE void forward_tanh(double *RESTRICT sums, const double *RESTRICT bias,
                                 const double *RESTRICT output_weights, double *RESTRICT magnitude, Py_ssize_t units) {
    for (Py_ssize_t u = 0; u < units; u++) {
        sums[u] += bias[u];
        double a = fabs(sums[u]);
        magnitude[u] = a > 20.0 ? 20.0 : a;
    }
    for (Py_ssize_t u = 0; u < units; u++)
        sums[u] = copysign(1.0 - 2.0 / (ann_exp(2.0 * magnitude[u]) + 1.0), sums[u]) * output_weights[u];
}

typedef struct {
    const double *packed, *inputs;
    double *out, *scratch;  /* scratch: 2 * (width + 2 * hidden * networks) doubles */
    Py_ssize_t rows, width, hidden, networks;
    const Py_ssize_t *which;  /* NULL: rows 0 .. rows - 1; else the rows' numbers, rising (each row's floats are
                               * its own: a row run alone, or paired with another, gives the same) */
} Forward;

/* One row's output from its hidden sums: tanh, per network the output unit (sigmoid with ann._sigmoid's clip at
 * +-50), their mean (added in network order, then divided, as np.mean does). */
FORWARD_INLINE double forward_output(double *RESTRICT sums, const double *RESTRICT bias,
                                     const double *RESTRICT output_weights, const double *RESTRICT output_bias,
                                     double *RESTRICT magnitude, Py_ssize_t hidden, Py_ssize_t networks) {
    forward_tanh(sums, bias, output_weights, magnitude, hidden * networks);
    double total = 0.0;
    for (Py_ssize_t k = 0; k < networks; k++) {
        double logit = 0.0;
        for (Py_ssize_t j = k * hidden; j < (k + 1) * hidden; j++) logit += sums[j];
        logit += output_bias[k];
        logit = logit < -50.0 ? -50.0 : logit > 50.0 ? 50.0 : logit;  /* NaN stays NaN */
        total += 1.0 / (1.0 + ann_exp(-logit));
    }
    return total / (double)networks;
}

/* Every row of f->inputs through the ensemble: standardise, the hidden units of all networks, per network the
 * output unit (sigmoid with ann._sigmoid's clip at +-50), their mean (added in network order, then divided, as
 * np.mean does). hidden and networks are f's or the constants of a specialised copy. */
FORWARD_INLINE void forward_rows(const Forward *f, Py_ssize_t hidden, Py_ssize_t networks) {
    const Py_ssize_t width = f->width, units = hidden * networks;
    const double *mean = f->packed, *std = mean + width, *weights = std + width, *bias = weights + width * units,
                 *output_weights = bias + units, *output_bias = output_weights + units;
    double *scaled = f->scratch, *sums = scaled + width, *magnitude = sums + units;
    double *scaled1 = magnitude + units, *sums1 = scaled1 + width;
    const Py_ssize_t *which = f->which;
    Py_ssize_t r = 0;
    if (units == PAIR_UNITS)  /* a constant in the shipped shape's copies */
        for (; r + 1 < f->rows; r += 2) {
            const Py_ssize_t r0 = which ? which[r] : r, r1 = which ? which[r + 1] : r + 1;
            forward_scale(f->inputs + r0 * width, mean, std, scaled, width);
            forward_scale(f->inputs + r1 * width, mean, std, scaled1, width);
            forward_sums_pair(scaled, scaled1, weights, sums, sums1, width);
            f->out[r0] = forward_output(sums, bias, output_weights, output_bias, magnitude, hidden, networks);
            f->out[r1] = forward_output(sums1, bias, output_weights, output_bias, magnitude, hidden, networks);
        }
    for (; r < f->rows; r++) {
        const Py_ssize_t r0 = which ? which[r] : r;
        forward_scale(f->inputs + r0 * width, mean, std, scaled, width);
        forward_sums(scaled, weights, sums, width, units);
        f->out[r0] = forward_output(sums, bias, output_weights, output_bias, magnitude, hidden, networks);
    }
}

static void forward_any(const Forward *f) { forward_rows(f, f->hidden, f->networks); }
static void forward_8x3(const Forward *f) { forward_rows(f, 8, 3); }
#ifdef FORWARD_AVX2
__attribute__((target("avx2,fma"))) static void forward_any_avx2(const Forward *f) {
    forward_rows(f, f->hidden, f->networks);
}
__attribute__((target("avx2,fma"))) static void forward_8x3_avx2(const Forward *f) { forward_rows(f, 8, 3); }
#endif

/* The copy of forward_rows for f's shape and this CPU (portable: the one for any CPU). */
static void forward_run(const Forward *f, int portable) {
    int shipped = f->hidden == 8 && f->networks == 3;
#ifndef FORWARD_AVX2
    (void)portable;
#endif
#ifdef FORWARD_AVX2
    if (has_avx2_fma && !portable) (shipped ? forward_8x3_avx2 : forward_any_avx2)(f);
    else
#endif
        (shipped ? forward_8x3 : forward_any)(f);
}

/* ensemble(packed, inputs, out, rows, width, hidden, networks, portable=False): per row of inputs (float64, rows x width), the
 * mean over the networks of sigmoid(tanh(((x - mean) / std) @ W + b) @ w + c), written to out (float64, rows).
 * packed (float64) is what ann._pack lays out: mean[width], std[width], then W[width][networks * hidden]
 * (network k's unit j in column k * hidden + j, so one pass over a row of inputs feeds every network),
 * b[networks * hidden], w[networks * hidden], c[networks]. The standardisation gives numpy's floats; the sums
 * are added in another order than numpy's matmul adds them (and fused where the CPU has FMA) and exp/tanh are
 * ann_exp's, so the scores agree with ann.predict_mean's numpy definition to rounding (the tests hold them to
 * 1e-12), not bit for bit. portable: the copy for any CPU even where AVX2 is at hand (so the tests run both). */
static PyObject *ensemble(PyObject *self, PyObject *args) {
    PyObject *packed_obj, *inputs_obj, *out_obj;
    Forward f;
    int portable = 0;
    if (!PyArg_ParseTuple(args, "OOOnnnn|p", &packed_obj, &inputs_obj, &out_obj, &f.rows, &f.width, &f.hidden,
                          &f.networks, &portable))
        return NULL;
    if (f.rows < 0 || f.width < 1 || f.hidden < 1 || f.networks < 1) {
        PyErr_SetString(PyExc_ValueError, "ensemble: bad sizes");
        return NULL;
    }
    Py_ssize_t units = f.networks * f.hidden;
    Py_buffer pv, iv, ov;
    if (get_buffer(packed_obj, &pv, 8, 2 * f.width + f.width * units + 2 * units + f.networks) < 0) return NULL;
    if (get_buffer(inputs_obj, &iv, 8, f.rows * f.width) < 0) { PyBuffer_Release(&pv); return NULL; }
    if (PyObject_GetBuffer(out_obj, &ov, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) {
        PyBuffer_Release(&pv);
        PyBuffer_Release(&iv);
        return NULL;
    }
    PyObject *result = NULL;
    f.scratch = NULL;
    if (ov.len != f.rows * 8) { PyErr_SetString(PyExc_ValueError, "array of the wrong size"); goto done; }
    f.scratch = PyMem_Malloc(2 * (f.width + 2 * units) * sizeof(double));
    if (!f.scratch) { PyErr_NoMemory(); goto done; }
    f.packed = pv.buf;
    f.inputs = iv.buf;
    f.out = ov.buf;
    f.which = NULL;
    forward_run(&f, portable);
    Py_INCREF(Py_None);
    result = Py_None;
done:
    PyMem_Free(f.scratch);
    PyBuffer_Release(&pv);
    PyBuffer_Release(&iv);
    PyBuffer_Release(&ov);
    return result;
}

/* --- features._text_columns' per-block counts -------------------------------------------------------------- */
/* The class bits of features._CLASS_TABLE (kept equal to the Python constants by features.py's check). */
enum { C_KNOWN = 1, C_PUNCT = 2, C_DIGIT = 4, C_SPACE = 8, C_UPPER = 16, C_ALNUM = 32, C_SENTENCE_END = 64,
       C_COPY = 128, C_Y = 256, C_R = 512, C_L = 1024, C_BLANK = 2048 };

typedef struct {
    uint16_t *table;
    PyObject *fill;  /* features._code_point_class */
} Classes;

static inline int class_of(Classes *c, Py_UCS4 code, uint16_t *out) {
    uint16_t bits = c->table[code];
    if (!bits) {
        PyObject *value = PyObject_CallFunction(c->fill, "I", (unsigned int)code);
        if (!value) return -1;
        long v = PyLong_AsLong(value);
        Py_DECREF(value);
        if (v == -1 && PyErr_Occurred()) return -1;
        bits = c->table[code] = (uint16_t)v;
    }
    *out = bits;
    return 0;
}

typedef struct {
    Py_ssize_t length;
    Py_UCS4 sum;
    Py_UCS4 *codes;
} TitleWord;

/* --- parse.clean_text's encoding step -------------------------------------------------------------------------- */
/* utf8_controls_to_space(text) -> text.encode("utf-8", "replace").translate(control characters -> b" ") in one
 * pass: ASCII control characters but \t \n \r become spaces, lone surrogates become "?". */
static const unsigned char control_to_space[128] = {
    ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', '\t', '\n', ' ', ' ', '\r', ' ', ' ',
    ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ',
    32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59,
    60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87,
    88, 89, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99, 100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111, 112,
    113, 114, 115, 116, 117, 118, 119, 120, 121, 122, 123, 124, 125, 126, ' '};

#define ENCODE_SIZE(TYPE)                                                                                    \
    do {                                                                                                     \
        const TYPE *d = (const TYPE *)data;                                                                  \
        for (Py_ssize_t i = 0; i < length; i++) {                                                            \
            Py_UCS4 c = d[i];                                                                                \
            size += c < 0x80 ? 1 : c < 0x800 ? 2 : (c >= 0xD800 && c <= 0xDFFF) ? 1 : c < 0x10000 ? 3 : 4;   \
        }                                                                                                    \
    } while (0)

#define ENCODE(TYPE)                                                                                         \
    do {                                                                                                     \
        const TYPE *d = (const TYPE *)data;                                                                  \
        for (Py_ssize_t i = 0; i < length; i++) {                                                            \
            Py_UCS4 c = d[i];                                                                                \
            if (c < 0x80) *o++ = control_to_space[c];                                                        \
            else if (c < 0x800) { *o++ = 0xC0 | (c >> 6); *o++ = 0x80 | (c & 0x3F); }                        \
            else if (c >= 0xD800 && c <= 0xDFFF) *o++ = '?';                                                 \
            else if (c < 0x10000) {                                                                          \
                *o++ = 0xE0 | (c >> 12); *o++ = 0x80 | ((c >> 6) & 0x3F); *o++ = 0x80 | (c & 0x3F);          \
            } else {                                                                                         \
                *o++ = 0xF0 | (c >> 18); *o++ = 0x80 | ((c >> 12) & 0x3F);                                   \
                *o++ = 0x80 | ((c >> 6) & 0x3F); *o++ = 0x80 | (c & 0x3F);                                   \
            }                                                                                                \
        }                                                                                                    \
    } while (0)

/* utf8_controls_to_space(text) -> text.encode("utf-8", "replace").translate(control characters -> b" ") in one
 * pass: ASCII control characters but \t \n \r become spaces, lone surrogates become "?". */
static PyObject *utf8_controls_to_space(PyObject *self, PyObject *text) {
    if (!PyUnicode_Check(text)) { PyErr_SetString(PyExc_TypeError, "text must be str"); return NULL; }
    Py_ssize_t length = PyUnicode_GET_LENGTH(text), size = 0;
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    if (PyUnicode_IS_ASCII(text)) size = length;
    else if (kind == PyUnicode_1BYTE_KIND) ENCODE_SIZE(Py_UCS1);
    else if (kind == PyUnicode_2BYTE_KIND) ENCODE_SIZE(Py_UCS2);
    else ENCODE_SIZE(Py_UCS4);
    PyObject *result = PyBytes_FromStringAndSize(NULL, size);
    if (!result) return NULL;
    unsigned char *o = (unsigned char *)PyBytes_AS_STRING(result);
    if (PyUnicode_IS_ASCII(text)) {
        const Py_UCS1 *d = data;
        for (Py_ssize_t i = 0; i < length; i++) o[i] = control_to_space[d[i]];
    } else if (kind == PyUnicode_1BYTE_KIND) ENCODE(Py_UCS1);
    else if (kind == PyUnicode_2BYTE_KIND) ENCODE(Py_UCS2);
    else ENCODE(Py_UCS4);
    return result;
}


/* --- parse.has_controls ------------------------------------------------------------------------------------------ */
/* has_controls(data) -> whether the bytes hold an ASCII control character but \t \n \r (what parse.clean_utf8 turns
 * into spaces): one pass, in blocks of CONTROL_STRIDE bytes whose test has no branch (the compiler vectorises it),
 * where parse.has_controls' plain form makes one memchr pass a control character. With AVX2 (chosen at run time),
 * 32 bytes at a time classified by their two nibbles (two table lookups, vpshufb): a byte is a control character
 * when CONTROL_LOW[its low nibble] and CONTROL_HIGH[its high nibble] share a bit - bit 1 for 0x00-0x0F but \t \n
 * \r, bit 2 for 0x10-0x1F, bit 4 for 0x7F (0x80 and above have no bit: their high nibble's entry is 0). */
#define CONTROL_STRIDE 4096

static int controls_plain(const unsigned char *d, Py_ssize_t n) {
    unsigned char found = 0;
    for (Py_ssize_t start = 0; start < n && !found; start += CONTROL_STRIDE) {
        Py_ssize_t end = n - start > CONTROL_STRIDE ? start + CONTROL_STRIDE : n;
        for (Py_ssize_t i = start; i < end; i++) {
            unsigned char c = d[i];
            found |= (unsigned char)((c < 32) & (c != 9) & (c != 10) & (c != 13)) | (unsigned char)(c == 127);
        }
    }
    return found;
}

#ifdef FORWARD_AVX2
#include <immintrin.h>
static int has_avx2 = 0;  /* set by PyInit__numeric */
#define CONTROL_LOW 3, 3, 3, 3, 3, 3, 3, 3, 3, 2, 2, 3, 3, 2, 3, 7
#define CONTROL_HIGH 1, 2, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0

__attribute__((target("avx2"))) static int controls_avx2(const unsigned char *d, Py_ssize_t n) {
    const __m256i low = _mm256_setr_epi8(CONTROL_LOW, CONTROL_LOW), high = _mm256_setr_epi8(CONTROL_HIGH, CONTROL_HIGH);
    const __m256i nibble = _mm256_set1_epi8(0x0F);
    Py_ssize_t i = 0;
    for (; i + 128 <= n; i += 128) {
        __m256i hits = _mm256_setzero_si256();
        for (int k = 0; k < 128; k += 32) {
            __m256i v = _mm256_loadu_si256((const __m256i *)(d + i + k));
            __m256i by_low = _mm256_shuffle_epi8(low, _mm256_and_si256(v, nibble));
            __m256i by_high = _mm256_shuffle_epi8(high, _mm256_and_si256(_mm256_srli_epi16(v, 4), nibble));
            hits = _mm256_or_si256(hits, _mm256_and_si256(by_low, by_high));
        }
        if (!_mm256_testz_si256(hits, hits)) return 1;
    }
    return controls_plain(d + i, n - i);
}
#endif

static PyObject *has_controls(PyObject *self, PyObject *arg) {
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) return NULL;
    const unsigned char *d = view.buf;
    Py_ssize_t n = view.len;
#ifdef FORWARD_AVX2
    int found = has_avx2 ? controls_avx2(d, n) : controls_plain(d, n);
#else
    int found = controls_plain(d, n);
#endif
    PyBuffer_Release(&view);
    return PyBool_FromLong(found);
}


/* --- native.tune_heap ------------------------------------------------------------------------------------------- */
/* tune_heap() -> bool: glibc's fast bins turned off (mallopt M_MXFAST 0), True where that was done. A page's tree is
 * thousands of small blocks (libxml2's nodes, attributes, strings) freed together; with fast bins they wait there
 * unmerged, and the next large request (the next page's bytes, a few times a page) merges them all
 * (malloc_consolidate): without, each is merged as it is freed, and the two passes over the same blocks become
 * one. Nothing but the allocator's bookkeeping changes. */
#if defined(__GLIBC__)
#include <malloc.h>
#endif

static PyObject *tune_heap(PyObject *self, PyObject *unused) {
#if defined(__GLIBC__) && defined(M_MXFAST)
    return PyBool_FromLong(mallopt(M_MXFAST, 0) == 1);
#else
    Py_RETURN_FALSE;
#endif
}


/* --- native.tune_heap: libxml2's allocator ---------------------------------------------------------------------- */
/* xml_heap(path) -> bool: lxml's libxml2 (in the extension module at ``path``, found loaded) allocates from chunks
 * of 64 KiB, one after the other, instead of glibc's malloc; True where it was set up (once a process).
 *
 * A page's tree is thousands of small blocks (nodes, attributes, their strings) made one after the other and freed
 * together. glibc hands them out from wherever its bins hold space (the previous page's freed blocks, merged and
 * split again), so a tree lies scattered over the heap, and the parse, every walk over the tree and the free pay
 * for it (and the free merges every block with its neighbours). Here a thread takes each block from the end of its
 * current chunk (a bump of a pointer), so a tree lies in a few chunks in the order it was built; a chunk counts
 * its live blocks, and goes back to a list of free chunks when the last one is freed (by any thread), to be reused
 * whole. Blocks above XA_BIG bytes, and every block once the reserved address range is used up, come from malloc.
 * Memory libxml2 allocated before the switch (lxml's dictionary, its parser contexts) is told by its address,
 * outside the reserved range, and freed or grown by glibc as before. Nothing but where the blocks lie changes: the
 * trees, and so every output, are the same (tests/test_speedups.py's test_xml_heap_*).
 *
 * The cost: a chunk stays while any block in it lives (a long-lived block, a compiled XPath's, holds its chunk),
 * and a thread's current chunk is given back when the thread ends. Free chunks beyond XA_KEEP are given back to the
 * system (MADV_DONTNEED) and kept on a list of their own, taken only when no resident free chunk is left: a chunk
 * given back costs a page fault for each of its pages when it is used again, and one list for both (a chunk given
 * back on top once a tree of more than XA_KEEP chunks was freed) had every later page fault on all its chunks.
 * Only the libxml2 of lxml.etree's module is switched: lxml.objectify's module links a copy of its own, which keeps
 * glibc's malloc and must not free what etree's allocates (templater never uses it). */
#if defined(__linux__) && defined(__GNUC__)
#include <dlfcn.h>
#include <pthread.h>
#include <sys/mman.h>

#define XA_CHUNK ((size_t)1 << 16)
#define XA_BIG ((size_t)8192)
#define XA_HEAD ((size_t)16)          /* before each block: its size (for realloc), keeping 16-byte alignment */
#define XA_CHUNK_HEAD ((size_t)64)    /* at each chunk's start: its live count and the free list's link */
#define XA_KEEP 64                    /* free chunks kept resident (4 MiB) */
#define XA_PROTECT_STEP (16 * XA_CHUNK)
#define XA_BIAS ((long)1 << 40)       /* a chunk's count while a thread allocates from it (see xa_retire) */

typedef struct xa_chunk {
    long live;              /* XA_BIAS - frees while current; blocks alive once retired; 0: free */
    struct xa_chunk *next;
} xa_chunk;

static char *xa_base = NULL, *xa_limit = NULL, *xa_fresh = NULL, *xa_writable = NULL;
static xa_chunk *xa_resident = NULL;   /* free chunks still backed by memory, reused first */
static long xa_resident_count = 0;
static xa_chunk *xa_given_back = NULL; /* free chunks given back to the system (a page fault a page of them) */
static long xa_given_back_count = 0;
static char xa_lock_flag = 0;
static pthread_key_t xa_thread_key;
typedef struct {
    char *bump, *end;       /* the free end of the thread's current chunk */
    xa_chunk *current;
    long made;              /* blocks taken from the current chunk */
} xa_state;
/* A thread's state: the thread that set the heap up (the one that parses pages) keeps its own in a plain static,
 * found by comparing thread ids; any other thread's is thread-local. (A thread-local variable of a module loaded
 * at run time is reached through a call, __tls_get_addr, on every access: about a third of a block's
 * allocation.) */
static xa_state xa_first_state;
static pthread_t xa_first_thread;
static __thread xa_state xa_thread_state;

static inline xa_state *xa_here(void) {
    return pthread_equal(pthread_self(), xa_first_thread) ? &xa_first_state : &xa_thread_state;
}

static inline void xa_lock(void) { while (__atomic_test_and_set(&xa_lock_flag, __ATOMIC_ACQUIRE)) { } }
static inline void xa_unlock(void) { __atomic_clear(&xa_lock_flag, __ATOMIC_RELEASE); }
static void xa_fork_prepare(void) { xa_lock(); }
static void xa_fork_parent(void) { xa_unlock(); }
static void xa_fork_child(void) { xa_unlock(); }

static inline size_t xa_round(size_t n) { return (n + 15) & ~(size_t)15; }
static inline int xa_ours(const void *p) { return (const char *)p >= xa_base && (const char *)p < xa_limit; }
static inline xa_chunk *xa_chunk_of(const void *p) {
    return (xa_chunk *)(xa_base + (((const char *)p - xa_base) & ~(XA_CHUNK - 1)));
}

static void xa_release(xa_chunk *chunk) {     /* a chunk whose blocks are all freed: to a free list */
    int keep;
    xa_lock();
    keep = xa_resident_count < XA_KEEP;
    if (keep) {
        chunk->next = xa_resident;
        xa_resident = chunk;
        xa_resident_count++;
    }
    xa_unlock();
    if (keep) return;
    madvise(chunk, XA_CHUNK, MADV_DONTNEED);   /* (reads as zeros when reused) */
    xa_lock();
    chunk->next = xa_given_back;
    xa_given_back = chunk;
    xa_given_back_count++;
    xa_unlock();
}

static void xa_retire(xa_state *state) {   /* the thread's current chunk: its count from "bias less frees" to "alive" */
    xa_chunk *chunk = state->current;
    if (chunk == NULL) return;
    state->current = NULL;
    state->bump = state->end = NULL;
    if (__atomic_add_fetch(&chunk->live, state->made - XA_BIAS, __ATOMIC_ACQ_REL) == 0) xa_release(chunk);
    state->made = 0;
}

static void xa_thread_end(void *unused) { (void)unused; xa_retire(xa_here()); }

/* a new current chunk for the thread; 0 where the range is used up (out of line: the allocation's common path
 * stays short) */
static __attribute__((noinline)) int xa_next_chunk(xa_state *state) {
    xa_chunk *chunk = NULL;
    xa_retire(state);
    xa_lock();
    if (xa_resident != NULL) {   /* (a resident chunk first: one given back faults again on every page it is
                                    touched, and a tree larger than XA_KEEP chunks would leave them on top) */
        chunk = xa_resident;
        xa_resident = chunk->next;
        xa_resident_count--;
    } else if (xa_given_back != NULL) {
        chunk = xa_given_back;
        xa_given_back = chunk->next;
        xa_given_back_count--;
    } else if (xa_fresh + XA_CHUNK <= xa_limit) {
        if (xa_fresh + XA_CHUNK > xa_writable) {
            size_t step = (size_t)(xa_limit - xa_writable) < XA_PROTECT_STEP ? (size_t)(xa_limit - xa_writable)
                                                                               : XA_PROTECT_STEP;
            if (mprotect(xa_writable, step, PROT_READ | PROT_WRITE) == 0) xa_writable += step;
        }
        if (xa_fresh + XA_CHUNK <= xa_writable) {
            chunk = (xa_chunk *)xa_fresh;
            xa_fresh += XA_CHUNK;
        }
    }
    xa_unlock();
    if (chunk == NULL) return 0;
    chunk->live = XA_BIAS;
    state->current = chunk;
    state->made = 0;
    state->bump = (char *)chunk + XA_CHUNK_HEAD;
    state->end = (char *)chunk + XA_CHUNK;
    pthread_setspecific(xa_thread_key, chunk);   /* (any non-NULL value: the thread's end retires its chunk) */
    return 1;
}

static void *xa_malloc(size_t n) {
    size_t need = XA_HEAD + xa_round(n);
    char *block;
    xa_state *state;
    if (n > XA_BIG) return malloc(n);
    state = xa_here();
    if ((size_t)(state->end - state->bump) < need || state->bump == NULL) {
        if (!xa_next_chunk(state)) return malloc(n);
    }
    block = state->bump;
    state->bump += need;
    state->made++;
    *(size_t *)block = n;
    return block + XA_HEAD;
}

static void xa_free(void *p) {
    xa_chunk *chunk;
    if (p == NULL) return;
    if (!xa_ours(p)) {
        free(p);
        return;
    }
    chunk = xa_chunk_of(p);
    if (__atomic_sub_fetch(&chunk->live, 1, __ATOMIC_ACQ_REL) == 0) xa_release(chunk);
}

static void *xa_realloc(void *p, size_t n) {
    size_t old, have;
    void *grown;
    xa_state *state;
    if (p == NULL) return xa_malloc(n);
    if (!xa_ours(p)) return realloc(p, n);
    old = *(size_t *)((char *)p - XA_HEAD);
    if (n <= old) return p;
    have = xa_round(old);
    state = xa_here();
    if ((char *)p + have == state->bump && n <= XA_BIG && xa_round(n) - have <= (size_t)(state->end - state->bump)) {
        state->bump += xa_round(n) - have;   /* the thread's last block, grown where it lies */
        *(size_t *)((char *)p - XA_HEAD) = n;
        return p;
    }
    grown = xa_malloc(n);
    if (grown == NULL) return NULL;
    memcpy(grown, p, old);
    xa_free(p);
    return grown;
}

static char *xa_strdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *copy = xa_malloc(n);
    if (copy != NULL) memcpy(copy, s, n);
    return copy;
}

typedef int (*xa_setup_fn)(void (*)(void *), void *(*)(size_t), void *(*)(void *, size_t), char *(*)(const char *));

static int xa_set_up(const char *path) {
    void *module, *reserved = MAP_FAILED;
    xa_setup_fn setup;
    size_t size;
    if (xa_base != NULL) return 1;
    module = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
    if (module == NULL) return 0;
    setup = (xa_setup_fn)dlsym(module, "xmlMemSetup");
    if (setup == NULL) return 0;
    for (size = (size_t)1 << 36; size >= ((size_t)1 << 28) && reserved == MAP_FAILED; size >>= 1)
        reserved = mmap(NULL, size + XA_CHUNK, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (reserved == MAP_FAILED) return 0;
    size <<= 1;   /* (the loop halved it once more after the mapping succeeded) */
    if (pthread_key_create(&xa_thread_key, xa_thread_end) != 0
            || pthread_atfork(xa_fork_prepare, xa_fork_parent, xa_fork_child) != 0) {
        munmap(reserved, size + XA_CHUNK);
        return 0;
    }
    xa_base = (char *)(((uintptr_t)reserved + XA_CHUNK - 1) & ~(uintptr_t)(XA_CHUNK - 1));
    xa_limit = xa_base + size;
    xa_fresh = xa_writable = xa_base;
    xa_first_thread = pthread_self();
    if (setup(xa_free, xa_malloc, xa_realloc, xa_strdup) != 0) {   /* (nothing allocated from the range yet) */
        xa_base = xa_limit = NULL;
        return 0;
    }
    return 1;
}

static PyObject *xml_heap_chunks(PyObject *self, PyObject *unused) {
    long resident, given_back, made;
    xa_lock();
    resident = xa_resident_count;
    given_back = xa_given_back_count;
    made = xa_base == NULL ? 0 : (long)((xa_fresh - xa_base) / (long)XA_CHUNK);
    xa_unlock();
    return Py_BuildValue("(lll)", resident, given_back, made);
}
#else
static int xa_set_up(const char *path) { (void)path; return 0; }
static PyObject *xml_heap_chunks(PyObject *self, PyObject *unused) { return Py_BuildValue("(iii)", 0, 0, 0); }
#endif

static PyObject *xml_heap(PyObject *self, PyObject *arg) {
    const char *path = PyUnicode_AsUTF8(arg);
    if (path == NULL) return NULL;
    return PyBool_FromLong(xa_set_up(path));
}


/* --- features._text_columns: the blocks' text counts as the (blocks x 10) float64 matrix ------------------------ */
/* Per text, the counts of features._text_columns_plain's regexes, from the code points' classes (C_* bits of
 * features._CLASS_TABLE): one pass over the text for punctuation, digits, whitespace-split words and their
 * capitals, the sentence end and copyright candidates, one over its lower-cased form for words and title words. */
typedef struct {
    int64_t punct, digits, spaced, capitals, copyright, sentence_end, words, hits;
} TextCounts;

#if defined(__GNUC__) || defined(__clang__)
#define NOINLINE __attribute__((noinline))
#define ALWAYS_INLINE inline __attribute__((always_inline))
#define UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define NOINLINE
#define ALWAYS_INLINE inline
#define UNLIKELY(x) (x)
#endif

/* The code point at ``j`` of string data of one kind. The passes below are each expanded for the three kinds
 * (``kind`` a constant there: one width read, no test per character), in functions of their own (few running
 * values, all in registers), and count without branching on the characters (a word's start or end is not
 * predictable). */
static ALWAYS_INLINE Py_UCS4 code_at(int kind, const void *data, Py_ssize_t j) {
    return kind == PyUnicode_1BYTE_KIND ? ((const Py_UCS1 *)data)[j]
           : kind == PyUnicode_2BYTE_KIND ? ((const Py_UCS2 *)data)[j] : ((const Py_UCS4 *)data)[j];
}

/* The first pass: punctuation, digits, the words of text.split() (one starts at a non-whitespace character
 * after whitespace) and their capitals, the sentence end (the last non-whitespace character), copyright
 * candidates (©, or "yr", or "ll r", case-blind). ``recent`` holds four flags (y, blank, l, whitespace) of each
 * of the last three characters, the latest lowest; it starts as one whitespace character before the text. */
typedef struct {
    int64_t punct, digits, spaced, capitals, copyright;
    unsigned recent;
    uint16_t last_solid;
} ShapeRun;

static const ShapeRun SHAPE_START = {0, 0, 0, 0, 0, 8, 0};

static ALWAYS_INLINE void shape_step(ShapeRun *s, uint16_t bits) {
    unsigned recent = s->recent, solid = !(bits & C_SPACE), starts = solid & (recent >> 3);
    s->punct += (bits & C_PUNCT) != 0;
    s->digits += (bits & C_DIGIT) != 0;
    s->spaced += starts;
    s->capitals += starts & ((bits & C_UPPER) != 0);
    s->last_solid = solid ? bits : s->last_solid;
    s->copyright |= ((bits & C_COPY) != 0) | (((bits & C_R) != 0) & ((recent & 1) | ((recent & 0x442) == 0x442)));
    s->recent = ((recent << 4) | ((bits & C_Y) != 0) | ((bits & C_BLANK) != 0) << 1 | ((bits & C_L) != 0) << 2
                 | ((bits & C_SPACE) != 0) << 3) & 0xFFF;
}

static ALWAYS_INLINE void shape_done(const ShapeRun *s, TextCounts *c) {
    c->punct = s->punct; c->digits = s->digits; c->spaced = s->spaced; c->capitals = s->capitals;
    c->copyright = s->copyright;
    c->sentence_end = (s->last_solid & C_SENTENCE_END) != 0;
}

static ALWAYS_INLINE int shape_loop(Classes *classes, int kind, const void *data, Py_ssize_t length, TextCounts *c) {
    const uint16_t *table = classes->table;
    ShapeRun s = SHAPE_START;
    for (Py_ssize_t j = 0; j < length; j++) {
        Py_UCS4 code = code_at(kind, data, j);
        uint16_t bits = table[code];
        if (UNLIKELY(!bits) && class_of(classes, code, &bits) < 0) return -1;
        shape_step(&s, bits);
    }
    shape_done(&s, c);
    return 0;
}

static NOINLINE int shape_counts(Classes *classes, int kind, const void *data, Py_ssize_t length, TextCounts *c) {
    if (kind == PyUnicode_1BYTE_KIND) return shape_loop(classes, PyUnicode_1BYTE_KIND, data, length, c);
    if (kind == PyUnicode_2BYTE_KIND) return shape_loop(classes, PyUnicode_2BYTE_KIND, data, length, c);
    return shape_loop(classes, PyUnicode_4BYTE_KIND, data, length, c);
}

/* The punctuation alone (a row whose own columns are not read: its punctuation share enters its neighbours' and
 * the region's columns). */
static ALWAYS_INLINE int punct_loop(Classes *classes, int kind, const void *data, Py_ssize_t length, int64_t *out) {
    const uint16_t *table = classes->table;
    int64_t punct = 0;
    for (Py_ssize_t j = 0; j < length; j++) {
        Py_UCS4 code = code_at(kind, data, j);
        uint16_t bits = table[code];
        if (UNLIKELY(!bits) && class_of(classes, code, &bits) < 0) return -1;
        punct += (bits & C_PUNCT) != 0;
    }
    *out = punct;
    return 0;
}

static NOINLINE int punct_count(Classes *classes, int kind, const void *data, Py_ssize_t length, int64_t *out) {
    if (kind == PyUnicode_1BYTE_KIND) return punct_loop(classes, PyUnicode_1BYTE_KIND, data, length, out);
    if (kind == PyUnicode_2BYTE_KIND) return punct_loop(classes, PyUnicode_2BYTE_KIND, data, length, out);
    return punct_loop(classes, PyUnicode_4BYTE_KIND, data, length, out);
}

/* The second pass, over text.lower() (``ascii``: over an ASCII text, lower-cased here): runs of word characters,
 * and those equal to a title word. A word's length and code point sum are compared with the title words' only
 * where ``keys`` (a bit per title word's length and sum) has its bit: most words end with no compare. */
static inline uint64_t title_key(Py_ssize_t size, Py_UCS4 sum) {
    return (uint64_t)1 << ((size * 7u + sum) & 63);
}

static int title_match(const TitleWord *title, Py_ssize_t n_title, int kind, const void *data, Py_ssize_t start,
                       Py_ssize_t size, Py_UCS4 sum, int ascii) {
    for (Py_ssize_t k = 0; k < n_title; k++) {
        if (title[k].length != size || title[k].sum != sum) continue;
        Py_ssize_t m = 0;
        for (; m < size; m++) {
            Py_UCS4 x = code_at(kind, data, start + m);
            if (ascii && x >= 'A' && x <= 'Z') x += 'a' - 'A';
            if (x != title[k].codes[m]) break;
        }
        if (m == size) return 1;
    }
    return 0;
}

typedef struct {
    const TitleWord *title;
    Py_ssize_t n_title;
    uint64_t keys;
} TitleWords;

typedef struct {
    int64_t words, hits;
    unsigned in_word;
    Py_ssize_t start;
    Py_UCS4 sum;
} WordRun;

/* One step of the second pass: the character at j (``code``, lower-cased; j == length: the step past the end,
 * where the last word ends, with word_char 0). */
static ALWAYS_INLINE void word_step(WordRun *w, const TitleWords *t, int kind, const void *data, unsigned ascii,
                                    Py_ssize_t j, Py_UCS4 code, unsigned word_char) {
    unsigned begins = word_char & !w->in_word;
    w->words += begins;
    w->start = begins ? j : w->start;
    w->sum = (begins ? 0 : w->sum) + (word_char ? code : 0);
    if (UNLIKELY(w->in_word & !word_char & ((t->keys & title_key(j - w->start, w->sum)) != 0)))
        w->hits += title_match(t->title, t->n_title, kind, data, w->start, j - w->start, w->sum, ascii);
    w->in_word = word_char;
}

static ALWAYS_INLINE int word_loop(Classes *classes, const TitleWords *t, int kind, const void *data,
                                   Py_ssize_t length, unsigned ascii, TextCounts *c) {
    const uint16_t *table = classes->table;
    WordRun w = {0, 0, 0, 0, 0};
    for (Py_ssize_t j = 0; j <= length; j++) {  /* one step past the end, where the last word ends */
        unsigned word_char = 0;
        Py_UCS4 code = 0;
        if (j < length) {
            code = code_at(kind, data, j);
            code += (ascii & (code - 'A' < 26u)) << 5;
            uint16_t bits = table[code];
            if (UNLIKELY(!bits) && class_of(classes, code, &bits) < 0) return -1;
            word_char = (bits & C_ALNUM) != 0;
        }
        word_step(&w, t, kind, data, ascii, j, code, word_char);
    }
    c->words = w.words;
    c->hits = w.hits;
    return 0;
}

static NOINLINE int word_counts(Classes *classes, const TitleWords *t, int kind, const void *data,
                                Py_ssize_t length, unsigned ascii, TextCounts *c) {
    if (kind == PyUnicode_1BYTE_KIND) return word_loop(classes, t, PyUnicode_1BYTE_KIND, data, length, ascii, c);
    if (kind == PyUnicode_2BYTE_KIND) return word_loop(classes, t, PyUnicode_2BYTE_KIND, data, length, ascii, c);
    return word_loop(classes, t, PyUnicode_4BYTE_KIND, data, length, ascii, c);
}

/* Both passes in one loop over an ASCII text (a page's text is mostly ASCII): each character read once, its class
 * bits looked up once. The second pass reads the class of the character lower-cased; taking the word bit from the
 * character's own class gives the same where the table's C_ALNUM bit of each capital A-Z is its lower-case
 * letter's, which the caller checks (``ascii_words``) before taking this loop. */
static NOINLINE int ascii_counts(Classes *classes, const TitleWords *t, const Py_UCS1 *data, Py_ssize_t length,
                                 TextCounts *c) {
    const uint16_t *table = classes->table;
    ShapeRun s = SHAPE_START;
    WordRun w = {0, 0, 0, 0, 0};
    for (Py_ssize_t j = 0; j < length; j++) {
        Py_UCS4 code = data[j];
        uint16_t bits = table[code];
        if (UNLIKELY(!bits) && class_of(classes, code, &bits) < 0) return -1;
        shape_step(&s, bits);
        word_step(&w, t, PyUnicode_1BYTE_KIND, data, 1, j, code + ((code - 'A' < 26u) << 5), (bits & C_ALNUM) != 0);
    }
    word_step(&w, t, PyUnicode_1BYTE_KIND, data, 1, length, 0, 0);
    shape_done(&s, c);
    c->words = w.words;
    c->hits = w.hits;
    return 0;
}

/* Whether the table's C_ALNUM bit of each capital A-Z is known and equal to its lower-case letter's (what
 * ascii_counts takes as given). */
static int ascii_words(const uint16_t *table) {
    for (int k = 0; k < 26; k++) {
        uint16_t upper = table['A' + k], lower = table['a' + k];
        if (!upper || !lower || ((upper ^ lower) & C_ALNUM)) return 0;
    }
    return 1;
}

static int count_text(Classes *classes, const TitleWords *t, int fused, PyObject *text, TextCounts *c) {
    if (fused && PyUnicode_IS_ASCII(text))
        return ascii_counts(classes, t, PyUnicode_1BYTE_DATA(text), PyUnicode_GET_LENGTH(text), c);
    if (shape_counts(classes, PyUnicode_KIND(text), PyUnicode_DATA(text), PyUnicode_GET_LENGTH(text), c) < 0)
        return -1;
    if (PyUnicode_IS_ASCII(text))
        return word_counts(classes, t, PyUnicode_1BYTE_KIND, PyUnicode_DATA(text), PyUnicode_GET_LENGTH(text), 1, c);
    PyObject *lower = PyObject_CallMethodNoArgs(text, lower_name);  /* may change the length (İ), and cases */
    if (!lower) return -1;
    int status = word_counts(classes, t, PyUnicode_KIND(lower), PyUnicode_DATA(lower), PyUnicode_GET_LENGTH(lower),
                             0, c);
    Py_DECREF(lower);
    return status;
}

/* text_matrix(blocks, title_words, table, fill, rows=None) -> bytearray of float64 (blocks x 10) | None: the matrix
 * of features._text_columns (chars, link chars, markup bytes, words, punctuation share, sentence end, digit share,
 * title overlap, copyright, capitalised share), except that the copyright column is 1.0 where the text may
 * match _COPYRIGHT (the caller runs the regex on those); None where a text is empty (the plain definition's
 * turn). ``table`` is features._CLASS_TABLE (uint16 per code point, 0 until known), filled by calling ``fill``.
 * ``rows`` (bool per block): the blocks whose own columns are wanted; the others get their lengths and punctuation
 * share only (what their neighbours' and the page's columns are made of), 0.0 in the other columns. */
static PyObject *text_matrix(PyObject *self, PyObject *args) {
    PyObject *blocks_obj, *title_list, *table_obj, *fill, *rows_obj = Py_None;
    if (!PyArg_ParseTuple(args, "OOOO|O", &blocks_obj, &title_list, &table_obj, &fill, &rows_obj)) return NULL;
    PyObject *fb = PySequence_Fast(blocks_obj, "blocks must be a sequence");
    if (!fb) return NULL;
    Py_buffer rv;
    const unsigned char *wanted = NULL;
    if (rows_obj != Py_None) {
        if (PyObject_GetBuffer(rows_obj, &rv, PyBUF_C_CONTIGUOUS) < 0) { Py_DECREF(fb); return NULL; }
        if (rv.len != PySequence_Fast_GET_SIZE(fb)) {
            PyBuffer_Release(&rv);
            Py_DECREF(fb);
            PyErr_SetString(PyExc_ValueError, "rows: one bool per block");
            return NULL;
        }
        wanted = rv.buf;
    }
    PyObject *fw = PySequence_Fast(title_list, "title words must be a sequence");
    if (!fw) { if (wanted) PyBuffer_Release(&rv); Py_DECREF(fb); return NULL; }
    Py_buffer tv;
    if (PyObject_GetBuffer(table_obj, &tv, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0) {
        if (wanted) PyBuffer_Release(&rv);
        Py_DECREF(fb); Py_DECREF(fw); return NULL;
    }
    PyObject *result = NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fb), n_title = PySequence_Fast_GET_SIZE(fw);
    TitleWord *title = PyMem_Calloc(n_title ? n_title : 1, sizeof(TitleWord));
    Classes classes = {tv.buf, fill};
    uint64_t keys = 0;
    if (tv.len != 0x110000 * 2) { PyErr_SetString(PyExc_ValueError, "class table of the wrong size"); goto done; }
    if (!title) { PyErr_NoMemory(); goto done; }
    for (Py_ssize_t k = 0; k < n_title; k++) {
        PyObject *word = PySequence_Fast_GET_ITEM(fw, k);
        if (!PyUnicode_Check(word)) { PyErr_SetString(PyExc_TypeError, "title words must be str"); goto done; }
        if (!(title[k].codes = PyUnicode_AsUCS4Copy(word))) goto done;
        title[k].length = PyUnicode_GET_LENGTH(word);
        for (Py_ssize_t j = 0; j < title[k].length; j++) title[k].sum += title[k].codes[j];
        keys |= title_key(title[k].length, title[k].sum);
    }
    TitleWords words = {title, n_title, keys};
    int fused = ascii_words(classes.table);
    result = PyByteArray_FromStringAndSize(NULL, n * 10 * 8);
    if (!result) goto done;
    double *out = (double *)PyByteArray_AS_STRING(result);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *block = PySequence_Fast_GET_ITEM(fb, i);
        PyObject *text = slot_attr(block, text_name, &text_slot);
        if (!text) goto fail;
        if (!PyUnicode_Check(text)) {
            Py_DECREF(text);
            PyErr_SetString(PyExc_TypeError, "texts must be str");
            goto fail;
        }
        Py_ssize_t length = PyUnicode_GET_LENGTH(text);
        TextCounts c = {0};
        int status = !length ? 0 : !wanted || wanted[i] ? count_text(&classes, &words, fused, text, &c)
                     : punct_count(&classes, PyUnicode_KIND(text), PyUnicode_DATA(text), length, &c.punct);
        Py_DECREF(text);
        if (status < 0) goto fail;
        if (!length) { Py_CLEAR(result); result = Py_None; Py_INCREF(result); goto done; }
        long long numbers[2];
        for (int k = 0; k < 2; k++) {
            PyObject *value = k ? slot_attr(block, markup_bytes_name, &markup_bytes_slot)
                                : slot_attr(block, link_chars_name, &link_chars_slot);
            if (!value) goto fail;
            numbers[k] = PyLong_AsLongLong(value);
            Py_DECREF(value);
            if (numbers[k] == -1 && PyErr_Occurred()) goto fail;
        }
        double *row = out + i * 10;
        row[0] = (double)length;
        row[1] = (double)numbers[0];
        row[2] = (double)numbers[1];
        row[3] = (double)c.words;
        row[4] = (double)c.punct / (double)length;
        row[5] = (double)c.sentence_end;
        row[6] = (double)c.digits / (double)length;
        row[7] = (double)c.hits / (double)(c.words > 1 ? c.words : 1);
        row[8] = (double)c.copyright;
        row[9] = (double)c.capitals / (double)(c.spaced > 1 ? c.spaced : 1);
    }
    goto done;
fail:
    Py_CLEAR(result);
done:
    if (title) for (Py_ssize_t k = 0; k < n_title; k++) PyMem_Free(title[k].codes);
    PyMem_Free(title);
    PyBuffer_Release(&tv);
    if (wanted) PyBuffer_Release(&rv);
    Py_DECREF(fb);
    Py_DECREF(fw);
    return result;
}

/* --- features.block_features and features.context_features: a page's feature matrix in one call ------------ */
/* The numpy definitions (features._block_features_numpy, features._context_features_numpy) spend their time in
 * some sixty small numpy calls on arrays of a page's ~200 rows; here each column is one loop. The arithmetic is
 * the definition's, operation for operation (the same divisions, the same order of additions where numpy's is
 * sequential: cumsum, bincount, the small window sums); what can differ is the last bit of log1p (libm's against
 * numpy's SIMD loop), of the wide window sums (numpy hands kernels longer than 11 to BLAS's dot) and so of what is
 * computed from them; and, where the compiler fuses multiply-adds (arm64, an -march with FMA), the region score's
 * 1 + punct * chars, rounded once instead of twice. */

/* A C-contiguous buffer of ``count`` items (any number when count < 0) of one kind: 'd' float64, 'q' int64,
 * 'I' uint32, '?' bool. 1 when it is, 0 when it is not (nothing held, no error: the caller takes numpy), -1 on
 * an error. */
static int typed_buffer(PyObject *obj, Py_buffer *view, char kind, Py_ssize_t count) {
    if (PyObject_GetBuffer(obj, view, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0) {
        if (!PyErr_ExceptionMatches(PyExc_BufferError) && !PyErr_ExceptionMatches(PyExc_ValueError)
            && !PyErr_ExceptionMatches(PyExc_TypeError)) return -1;
        PyErr_Clear();
        return 0;
    }
    const char *format = view->format ? view->format : "B";
    if (*format == '@' || *format == '=' || *format == '<') format++;
    int fits = format[0] && !format[1];
    switch (kind) {
        case 'd': fits = fits && format[0] == 'd' && view->itemsize == 8; break;
        case 'q': fits = fits && (format[0] == 'q' || format[0] == 'l') && view->itemsize == 8; break;
        case 'I': fits = fits && (format[0] == 'I' || format[0] == 'L') && view->itemsize == 4; break;
        default: fits = fits && format[0] == '?' && view->itemsize == 1; break;
    }
    if (fits && (count < 0 ? view->len % view->itemsize == 0 : view->len == count * view->itemsize)) return 1;
    PyBuffer_Release(view);
    return 0;
}

/* numpy's sum of float64 (add.reduce): pairwise, blocks of up to 128 added in eight running sums. */
static double pairwise_sum(const double *a, Py_ssize_t n, Py_ssize_t stride) {
    if (n < 8) {
        double sum = 0.;
        for (Py_ssize_t i = 0; i < n; i++) sum += a[i * stride];
        return sum;
    }
    if (n <= 128) {
        double r[8];
        for (int k = 0; k < 8; k++) r[k] = a[k * stride];
        Py_ssize_t i = 8;
        for (; i < n - (n % 8); i += 8)
            for (int k = 0; k < 8; k++) r[k] += a[(i + k) * stride];
        double sum = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for (; i < n; i++) sum += a[i * stride];
        return sum;
    }
    Py_ssize_t half = n / 2;
    half -= half % 8;
    return pairwise_sum(a, half, stride) + pairwise_sum(a + half * stride, n - half, stride);
}

/* numpy's max (NaN wins, the first one); ``initial`` is where it starts. */
static double max_of(const double *a, Py_ssize_t n, Py_ssize_t stride, double initial) {
    double best = initial;
    for (Py_ssize_t i = 0; i < n; i++) {
        double v = a[i * stride];
        if (v != v) return v;
        if (v > best) best = v;
    }
    return best;
}

/* numpy's argmax over ``n`` values (the first of the largest; the first NaN). */
static Py_ssize_t argmax_of(const double *a, Py_ssize_t n) {
    Py_ssize_t best = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (a[i] != a[i]) return i;
        if (a[i] > a[best]) best = i;
    }
    return best;
}

/* features.window_mean of a column (``stride`` doubles apart) into another: the sum over the ``width`` rows
 * either side and the row itself, added in row order from 0. (numpy's convolution with the zero padding: the
 * padding adds nothing, and kernels up to 11 long are added in this order), less the row, over 2 * width. */
static void window_mean_column(const double *values, Py_ssize_t n, Py_ssize_t width, double *out,
                               Py_ssize_t stride) {
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t from = i - width < 0 ? 0 : i - width, to = i + width >= n ? n - 1 : i + width;
        double sum = 0.;
        for (Py_ssize_t k = from; k <= to; k++) sum += values[k * stride];
        out[i * stride] = (sum - values[i * stride]) / (double)(2 * width);
    }
}

/* features.shift of a column: the previous (step 1) or next (step -1) row's value, 0 past the edge. */
static void shift_column(const double *values, Py_ssize_t n, int step, double *out, Py_ssize_t stride) {
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t from = i - step;
        out[i * stride] = from >= 0 && from < n ? values[from * stride] : 0.;
    }
}

/* The tree's element arrays, checked: parents numbered first (-1 <= parent[e] < e), owners among the elements. */
typedef struct {
    Py_buffer parent, owner;
    const int64_t *up, *own;
    Py_ssize_t n, count;
    int held;  /* buffers to release: bit 0 parent, bit 1 owner */
} TreeView;

static void tree_release(TreeView *t) {
    if (t->held & 1) PyBuffer_Release(&t->parent);
    if (t->held & 2) PyBuffer_Release(&t->owner);
    t->held = 0;
}

/* 1 when both are int64 arrays of a parents-first tree and its owners, 0 when not (numpy's turn), -1 on error. */
static int tree_view(TreeView *t, PyObject *parent, PyObject *owner, Py_ssize_t count) {
    t->held = 0;
    t->count = count;
    int status = typed_buffer(parent, &t->parent, 'q', -1);
    if (status <= 0) return status;
    t->held |= 1;
    t->n = t->parent.len / 8;
    status = typed_buffer(owner, &t->owner, 'q', count);
    if (status <= 0) { tree_release(t); return status; }
    t->held |= 2;
    t->up = t->parent.buf;
    t->own = t->owner.buf;
    for (Py_ssize_t e = 0; e < t->n; e++)
        if (t->up[e] < -1 || t->up[e] >= e) { tree_release(t); return 0; }
    for (Py_ssize_t b = 0; b < count; b++)
        if (t->own[b] < 0 || t->own[b] >= t->n) { tree_release(t); return 0; }
    return 1;
}

/* block_features(text_columns, parent, depth, owner, tag_bits, class_bits, hint, blocks, owner_columns, sizes,
 * constants) -> bytearray of float64 (blocks x width) | None: features._block_features_numpy's matrix from its
 * inputs (the (blocks x 10) text columns, the Tree's arrays, the blocks for their tags, OWNER_TAGS' column per
 * tag); sizes = (OWNER_TAGS, TAG_GROUPS, CLASS_GROUPS, width), constants = (LENGTH_SCALE, REGION_MIN_CHARS,
 * REGION_GRANDPARENT_SHARE, NEIGHBOUR_WINDOW, FAR). None where an array is not of the kind numpy's path takes. */
static PyObject *block_features(PyObject *self, PyObject *args) {
    PyObject *text_obj, *parent_obj, *depth_obj, *owner_obj, *tag_obj, *class_obj, *hint_obj, *blocks_obj, *columns_map;
    Py_ssize_t n_owner_tags, n_tag_groups, n_class_groups, width, window, far;
    double scale, min_chars, grandparent_share;
    if (!PyArg_ParseTuple(args, "OOOOOOOOO!(nnnn)(dddnn)", &text_obj, &parent_obj, &depth_obj, &owner_obj, &tag_obj,
                          &class_obj, &hint_obj, &blocks_obj, &PyDict_Type, &columns_map, &n_owner_tags,
                          &n_tag_groups, &n_class_groups, &width, &scale, &min_chars, &grandparent_share, &window,
                          &far))
        return NULL;
    if (n_owner_tags < 0 || n_tag_groups < 0 || n_tag_groups > 32 || n_class_groups < 0 || n_class_groups > 32
        || window < 1 || width != 14 + n_owner_tags + n_tag_groups + n_class_groups + 16) {
        PyErr_SetString(PyExc_ValueError, "feature sizes do not add up to the width");
        return NULL;
    }
    PyObject *fast = PySequence_Fast(blocks_obj, "blocks must be a sequence");
    if (!fast) return NULL;
    Py_ssize_t count = PySequence_Fast_GET_SIZE(fast);
    PyObject *result = NULL;
    TreeView t;
    Py_buffer text_v, depth_v, tag_v, class_v, hint_v;
    int held = 0, status;  /* held: bits of the buffers to release (text, depth, tag, class, hint) */
    double *scratch = NULL;
    int32_t *distance = NULL;
    unsigned char *flags = NULL;
    Py_ssize_t *order = NULL;
    status = tree_view(&t, parent_obj, owner_obj, count);
    if (status <= 0) goto give_up;
    Py_ssize_t n = t.n;
    const int64_t *up = t.up, *own = t.own;
    if ((status = typed_buffer(text_obj, &text_v, 'd', count * 10)) <= 0) goto give_up;
    held |= 1;
    if ((status = typed_buffer(depth_obj, &depth_v, 'q', n)) <= 0) goto give_up;
    held |= 2;
    if ((status = typed_buffer(tag_obj, &tag_v, 'I', n)) <= 0) goto give_up;
    held |= 4;
    if ((status = typed_buffer(class_obj, &class_v, 'I', n)) <= 0) goto give_up;
    held |= 8;
    if ((status = typed_buffer(hint_obj, &hint_v, '?', n)) <= 0) goto give_up;
    held |= 16;
    const double *text = text_v.buf;
    const int64_t *depth = depth_v.buf;
    const uint32_t *tag_bits = tag_v.buf, *class_bits = class_v.buf;
    const char *hint = hint_v.buf;
    for (Py_ssize_t e = 0; e < n; e++)  /* sum_up's levels (what the C tree_sum_up takes) */
        if (depth[e] < 0 || (depth[e] > 0 && up[e] < 0)) { status = 0; goto give_up; }
    if (count == 0) { status = 0; goto give_up; }

    result = PyByteArray_FromStringAndSize(NULL, count * width * 8);
    scratch = PyMem_Malloc(3 * (n + count) * sizeof(double) + 1);  /* plain sums, region scores; 3 block columns */
    distance = PyMem_Malloc((n * (n_tag_groups + n_class_groups) + 1) * sizeof(int32_t));
    flags = PyMem_Calloc(n + 1, 1);
    order = PyMem_Malloc((2 * n + 2) * sizeof(Py_ssize_t));
    if (!result || !scratch || !distance || !flags || !order) {
        if (!PyErr_Occurred()) PyErr_NoMemory();
        goto fail;
    }
    double *out = (double *)PyByteArray_AS_STRING(result);
    double *mass = scratch, *score = scratch + n, *log_chars = scratch + 2 * n, *link_density = log_chars + count,
           *region_score = link_density + count;
#define TEXT(b, k) text[(b) * 10 + (k)]
#define OUT(b, k) out[(b) * width + (k)]
    /* the text shape: chars, link chars, markup, words, punct, sentence end, digits, title overlap, copyright,
     * capitalised */
    double cumulative = 0., total = pairwise_sum(text, count, 10), longest = max_of(text, count, 10, -INFINITY),
           deepest = 0.;
    for (Py_ssize_t b = 0; b < count; b++) {
        double level = (double)depth[own[b]];
        if (b == 0 || level > deepest) deepest = level;
    }
    deepest = 1.0 > deepest ? 1.0 : deepest;  /* max(depth.max(), 1.0) */
    for (Py_ssize_t b = 0; b < count; b++) {
        double chars = TEXT(b, 0), links = TEXT(b, 1), punct = TEXT(b, 4);
        double ratio = links / chars;
        double density = ratio > 1.0 ? 1.0 : ratio;  /* np.minimum: NaN stays */
        double share = chars / scale;
        log_chars[b] = log1p(share);
        link_density[b] = density;
        region_score[b] = chars >= min_chars ? (1 + punct * chars + (share > 3 ? 3 : share)) * (1 - density) : 0.0;
        OUT(b, 0) = log_chars[b];
        OUT(b, 1) = log1p(TEXT(b, 3));
        OUT(b, 2) = chars / (chars + TEXT(b, 2));
        OUT(b, 3) = density;
        for (int k = 4; k < 10; k++) OUT(b, k) = TEXT(b, k);
        OUT(b, 10) = (double)depth[own[b]] / deepest;
        OUT(b, 11) = (double)b / (double)count;
        cumulative += chars;
        OUT(b, 12) = (cumulative - chars) / total;
        OUT(b, 13) = chars / longest;
        for (Py_ssize_t k = 0; k < n_owner_tags; k++) OUT(b, 14 + k) = 0.;
    }
    /* the owner tag's family (features._tag_columns) */
    for (Py_ssize_t b = 0; b < count; b++) {
        PyObject *tag = slot_attr(PySequence_Fast_GET_ITEM(fast, b), tag_name, &tag_slot);
        if (!tag) goto fail;
        PyObject *column = PyDict_GetItemWithError(columns_map, tag);
        Py_DECREF(tag);
        if (!column) {
            if (PyErr_Occurred()) goto fail;
            continue;
        }
        Py_ssize_t k = PyLong_AsSsize_t(column);
        if (k == -1 && PyErr_Occurred()) goto fail;
        if (k >= 0 && k < n_owner_tags) OUT(b, 14 + k) = 1.;
    }
    /* nearest flagged ancestor (features._distances), top down, for TAG_GROUPS then CLASS_GROUPS */
    Py_ssize_t groups = n_tag_groups + n_class_groups;
    for (Py_ssize_t e = 0; e < n; e++) {
        int32_t *mine = distance + e * groups;
        const int32_t *above = up[e] >= 0 ? distance + up[e] * groups : NULL;
        for (Py_ssize_t k = 0; k < groups; k++) {
            uint32_t bits = k < n_tag_groups ? tag_bits[e] >> k : class_bits[e] >> (k - n_tag_groups);
            if (bits & 1) mine[k] = 0;
            else if (!above) mine[k] = (int32_t)far;
            else mine[k] = above[k] + 1 < far ? above[k] + 1 : (int32_t)far;
        }
    }
    for (Py_ssize_t b = 0; b < count; b++) {
        const int32_t *mine = distance + own[b] * groups;
        for (Py_ssize_t k = 0; k < groups; k++) OUT(b, 14 + n_owner_tags + k) = 1.0 / (1.0 + (double)mine[k]);
    }
    /* text below each element (features.sum_up of the blocks' plain chars; levels deepest first, each in element
     * order, as the C tree_sum_up adds) */
    for (Py_ssize_t e = 0; e < n; e++) mass[e] = 0.;
    for (Py_ssize_t b = 0; b < count; b++) mass[own[b]] += TEXT(b, 0) - TEXT(b, 1);
    {
        int64_t lowest = 0;
        for (Py_ssize_t e = 0; e < n; e++) if (depth[e] > lowest) lowest = depth[e];
        if (lowest > n) { status = 0; goto give_up; }  /* levels with no element: numpy's turn */
        Py_ssize_t *start = order + n;  /* lowest + 2 <= n + 2 bounds */
        for (int64_t d = 0; d <= lowest + 1; d++) start[d] = 0;
        for (Py_ssize_t e = 0; e < n; e++) start[depth[e] + 1]++;
        for (int64_t d = 0; d <= lowest; d++) start[d + 1] += start[d];
        for (Py_ssize_t e = 0; e < n; e++) order[start[depth[e]]++] = e;  /* start[d] becomes level d's end */
        for (int64_t d = lowest; d >= 1; d--)
            for (Py_ssize_t i = start[d - 1]; i < start[d]; i++) mass[up[order[i]]] += mass[order[i]];
    }
    /* content hints (features._hint_columns): flags bit 1 a hint, bit 2 the hint holding the most text */
    Py_ssize_t top = -1, any_hint = 0;
    for (Py_ssize_t e = 0; e < n; e++) {
        if (!hint[e]) continue;
        flags[e] |= 1;
        any_hint = 1;
        if (top < 0 || mass[e] > mass[top] || (mass[e] != mass[e] && mass[top] == mass[top])) top = e;
    }
    if (top >= 0) flags[top] |= 2;
    /* readability's region (features._region): a block's score to its owner's parent, half to the grandparent;
     * all parents' shares first, then the grandparents' (bincount's order); flags bit 4 the region, 8 around it */
    for (Py_ssize_t e = 0; e < n; e++) score[e] = 0.;
    for (Py_ssize_t b = 0; b < count; b++)
        if (up[own[b]] >= 0) score[up[own[b]]] += region_score[b];
    for (Py_ssize_t b = 0; b < count; b++) {
        int64_t first = up[own[b]];
        if (first >= 0 && up[first] >= 0) score[up[first]] += grandparent_share * region_score[b];
    }
    Py_ssize_t best = argmax_of(score, n);
    if (score[best] != 0.) {
        flags[best] |= 4;
        flags[up[best] < 0 ? best : up[best]] |= 8;
    }
    for (Py_ssize_t e = 0; e < n; e++)  /* features.inside of all four marks at once */
        if (up[e] >= 0) flags[e] |= flags[up[e]];
    Py_ssize_t at = 14 + n_owner_tags + groups;
    for (Py_ssize_t b = 0; b < count; b++) {
        unsigned char mark = flags[own[b]];
        OUT(b, at) = mark & 1 ? 1. : 0.;
        OUT(b, at + 1) = top >= 0 && (mark & 2) ? 1. : 0.;
        OUT(b, at + 2) = mark & 4 ? 1. : 0.;
        OUT(b, at + 3) = mark & 8 ? 1. : 0.;
        OUT(b, at + 4) = any_hint ? 1. : 0.;
    }
    at += 5;
    /* the neighbours */
    window_mean_column(&OUT(0, 0), count, window, &OUT(0, at), width);
    window_mean_column(&OUT(0, 3), count, window, &OUT(0, at + 1), width);
    window_mean_column(&OUT(0, 2), count, window, &OUT(0, at + 2), width);
    window_mean_column(&OUT(0, 4), count, window, &OUT(0, at + 3), width);
    shift_column(&OUT(0, 0), count, 1, &OUT(0, at + 4), width);
    shift_column(&OUT(0, 3), count, 1, &OUT(0, at + 5), width);
    shift_column(&OUT(0, 0), count, -1, &OUT(0, at + 6), width);
    shift_column(&OUT(0, 3), count, -1, &OUT(0, at + 7), width);
    window_mean_column(&OUT(0, 0), count, 3 * window, &OUT(0, at + 8), width);
    window_mean_column(&OUT(0, 3), count, 3 * window, &OUT(0, at + 9), width);
    double log_blocks = log1p((double)count);
    for (Py_ssize_t b = 0; b < count; b++) OUT(b, at + 10) = log_blocks;
#undef TEXT
#undef OUT
    goto done;
give_up:
    if (status < 0) goto fail;
    Py_CLEAR(result);
    result = Py_None;
    Py_INCREF(result);
    goto done;
fail:
    Py_CLEAR(result);
done:
    tree_release(&t);
    if (held & 1) PyBuffer_Release(&text_v);
    if (held & 2) PyBuffer_Release(&depth_v);
    if (held & 4) PyBuffer_Release(&tag_v);
    if (held & 8) PyBuffer_Release(&class_v);
    if (held & 16) PyBuffer_Release(&hint_v);
    PyMem_Free(scratch);
    PyMem_Free(distance);
    PyMem_Free(flags);
    PyMem_Free(order);
    Py_DECREF(fast);
    return result;
}

/* context_features' columns (6 + levels + 3 of them) into ``out``, rows ``stride`` doubles apart: the work of
 * context_features below, shared with two_stage. scratch: 2 * count + 2 * t->n + 1 doubles; element: count. */
static void context_into(const double *scores, const int64_t *lengths, const TreeView *t, Py_ssize_t count,
                         Py_ssize_t levels, const Py_ssize_t widths[3], double min_score, double *scratch,
                         Py_ssize_t *element, double *out, Py_ssize_t stride) {
    const int64_t *up = t->up;
    double *chars = scratch, *product = scratch + count, *weighted = scratch + 2 * count, *weight = weighted + t->n;
#define OUT(b, k) out[(b) * stride + (k)]
    for (Py_ssize_t b = 0; b < count; b++) {
        chars[b] = (double)lengths[b];
        product[b] = chars[b] * scores[b];
        element[b] = t->own[b];
        OUT(b, 0) = scores[b];
    }
    for (int k = 0; k < 3; k++) window_mean_column(&OUT(0, 0), count, widths[k], &OUT(0, 1 + k), stride);
    shift_column(&OUT(0, 0), count, 1, &OUT(0, 4), stride);
    shift_column(&OUT(0, 0), count, -1, &OUT(0, 5), stride);
    /* the enclosing containers, one level up at a time (the top stays the top): text-weighted mean score, the
     * bincounts' additions in block order */
    for (Py_ssize_t level = 0; level < levels; level++) {
        for (Py_ssize_t b = 0; b < count; b++) {
            if (up[element[b]] >= 0) element[b] = up[element[b]];
            weighted[element[b]] = weight[element[b]] = 0.;
        }
        for (Py_ssize_t b = 0; b < count; b++) {
            weighted[element[b]] += product[b];
            weight[element[b]] += chars[b];
        }
        for (Py_ssize_t b = 0; b < count; b++) OUT(b, 6 + level) = weighted[element[b]] / weight[element[b]];
    }
    /* the page: max(scores.max(initial=0.0), MIN_SCORE), the text-weighted mean (numpy's pairwise sums) */
    double top = max_of(scores, count, 1, 0.0);
    if (min_score > top) top = min_score;
    double mean = pairwise_sum(product, count, 1) / pairwise_sum(chars, count, 1);
    for (Py_ssize_t b = 0; b < count; b++) {
        OUT(b, 6 + levels) = top;
        OUT(b, 7 + levels) = mean;
        OUT(b, 8 + levels) = scores[b] / top;
    }
#undef OUT
}

/* context_features(scores, chars, parent, owner, levels, widths, min_score) -> bytearray of float64 (blocks x
 * (6 + levels + 3)) | None: features._context_features_numpy's matrix from the first stage's scores (float64),
 * the blocks' text lengths (int64), the Tree's parent and owner arrays, CONTEXT_LEVELS, the three window widths
 * and MIN_SCORE. None where an array is not of the kind numpy's path takes. */
static PyObject *context_features(PyObject *self, PyObject *args) {
    PyObject *scores_obj, *chars_obj, *parent_obj, *owner_obj;
    Py_ssize_t levels, widths[3];
    double min_score;
    if (!PyArg_ParseTuple(args, "OOOOn(nnn)d", &scores_obj, &chars_obj, &parent_obj, &owner_obj, &levels,
                          &widths[0], &widths[1], &widths[2], &min_score))
        return NULL;
    if (levels < 0 || widths[0] < 1 || widths[1] < 1 || widths[2] < 1) {
        PyErr_SetString(PyExc_ValueError, "levels and window widths must be positive");
        return NULL;
    }
    Py_buffer scores_v, chars_v;
    int held = 0, status;  /* held: bits of the buffers to release (scores, chars) */
    TreeView t = {.held = 0};
    PyObject *result = NULL;
    double *scratch = NULL;
    Py_ssize_t *element = NULL;
    if ((status = typed_buffer(scores_obj, &scores_v, 'd', -1)) <= 0) goto give_up;
    held |= 1;
    Py_ssize_t count = scores_v.len / 8, width = 6 + levels + 3;
    if ((status = typed_buffer(chars_obj, &chars_v, 'q', count)) <= 0) goto give_up;
    held |= 2;
    if ((status = tree_view(&t, parent_obj, owner_obj, count)) <= 0) goto give_up;
    const double *scores = scores_v.buf;
    const int64_t *lengths = chars_v.buf;
    result = PyByteArray_FromStringAndSize(NULL, count * width * 8);
    scratch = PyMem_Malloc((2 * count + 2 * t.n + 1) * sizeof(double));
    element = PyMem_Malloc((count + 1) * sizeof(Py_ssize_t));
    if (!result || !scratch || !element) {
        if (!PyErr_Occurred()) PyErr_NoMemory();
        goto fail;
    }
    context_into(scores, lengths, &t, count, levels, widths, min_score, scratch, element,
                 (double *)PyByteArray_AS_STRING(result), width);
    goto done;
give_up:
    if (status < 0) goto fail;
    Py_CLEAR(result);
    result = Py_None;
    Py_INCREF(result);
    goto done;
fail:
    Py_CLEAR(result);
done:
    tree_release(&t);
    if (held & 1) PyBuffer_Release(&scores_v);
    if (held & 2) PyBuffer_Release(&chars_v);
    PyMem_Free(scratch);
    PyMem_Free(element);
    return result;
}

/* Only the rows of ``mask`` (bool per row, f->rows of them) through f's pass: their numbers into ``which`` (f's row
 * list from then on), 0.0 in ``out`` for the others. */
static void select_rows(Forward *f, const unsigned char *mask, Py_ssize_t *which, double *out) {
    Py_ssize_t count = 0;
    for (Py_ssize_t r = 0; r < f->rows; r++) {
        out[r] = 0.0;
        if (mask[r]) which[count++] = r;
    }
    f->rows = count;
    f->which = which;
}

/* two_stage(first, second, features, chars, parent, owner, allowed, rows, out, hidden, networks, levels, widths,
 * min_score) -> out | None: fallback._stage_scores' passes in one call, each the C code its step takes one at a
 * time: the first ensemble over the features (ensemble), its scores times ``allowed`` (bool per block, or None),
 * the context columns of those scores (context_into, as context_features), the second ensemble over the features
 * and the context side by side (np.hstack's rows). ``first`` and ``second`` are packed as ensemble takes them,
 * for features of width F and F + 6 + levels + 3; out: float64 per block. None (nothing written) where a step
 * would take numpy: an array not of its kind, a tree not numbered parents first, no rows.
 * Only the rows whose score is read are run through a network (each row's floats are its own): the first stage
 * over the ``allowed`` blocks (the others' first scores are 0.0, what the product gives a finite score), the
 * second over ``rows`` (bool per block, or None for all; the others' scores are 0.0). */
static PyObject *two_stage(PyObject *self, PyObject *args) {
    PyObject *first_obj, *second_obj, *features_obj, *chars_obj, *parent_obj, *owner_obj, *allowed_obj, *rows_obj,
             *out_obj;
    Py_ssize_t hidden, networks, levels, widths[3];
    double min_score;
    if (!PyArg_ParseTuple(args, "OOOOOOOOOnnn(nnn)d", &first_obj, &second_obj, &features_obj, &chars_obj,
                          &parent_obj, &owner_obj, &allowed_obj, &rows_obj, &out_obj, &hidden, &networks, &levels,
                          &widths[0], &widths[1], &widths[2], &min_score))
        return NULL;
    if (hidden < 1 || networks < 1 || levels < 0 || widths[0] < 1 || widths[1] < 1 || widths[2] < 1) {
        PyErr_SetString(PyExc_ValueError, "two_stage: bad sizes");
        return NULL;
    }
    Py_buffer first_v, second_v, features_v, chars_v, allowed_v, out_v, rows_v;
    int held = 0, status = 0;  /* held: bits of the buffers to release, in the order above */
    TreeView t = {.held = 0};
    PyObject *result = NULL;
    double *scores = NULL, *inputs = NULL, *scratch = NULL, *forward_scratch = NULL;
    Py_ssize_t *element = NULL, *which = NULL;
    const Py_ssize_t units = hidden * networks, context = 6 + levels + 3;
    if ((status = typed_buffer(out_obj, &out_v, 'd', -1)) <= 0) goto give_up;
    held |= 32;
    const Py_ssize_t rows = out_v.len / 8;
    if (!rows || (status = typed_buffer(features_obj, &features_v, 'd', -1)) <= 0) goto give_up;
    held |= 4;
    const Py_ssize_t width = features_v.len / 8 / rows, wide = width + context;
    if (width < 1 || features_v.len != rows * width * 8) goto give_up;
    if ((status = typed_buffer(first_obj, &first_v, 'd', 2 * width + width * units + 2 * units + networks)) <= 0)
        goto give_up;
    held |= 1;
    if ((status = typed_buffer(second_obj, &second_v, 'd', 2 * wide + wide * units + 2 * units + networks)) <= 0)
        goto give_up;
    held |= 2;
    if ((status = typed_buffer(chars_obj, &chars_v, 'q', rows)) <= 0) goto give_up;
    held |= 8;
    if (allowed_obj != Py_None) {
        if ((status = typed_buffer(allowed_obj, &allowed_v, '?', rows)) <= 0) goto give_up;
        held |= 16;
    }
    if (rows_obj != Py_None) {
        if ((status = typed_buffer(rows_obj, &rows_v, '?', rows)) <= 0) goto give_up;
        held |= 64;
    }
    if ((status = tree_view(&t, parent_obj, owner_obj, rows)) <= 0) goto give_up;
    scores = PyMem_Malloc(rows * sizeof(double));
    inputs = PyMem_Malloc(rows * wide * sizeof(double));
    scratch = PyMem_Malloc((2 * rows + 2 * t.n + 1) * sizeof(double));
    element = PyMem_Malloc((rows + 1) * sizeof(Py_ssize_t));
    which = PyMem_Malloc((rows + 1) * sizeof(Py_ssize_t));
    forward_scratch = PyMem_Malloc(2 * (wide + 2 * units) * sizeof(double));
    if (!scores || !inputs || !scratch || !element || !which || !forward_scratch) { PyErr_NoMemory(); goto fail; }
    Forward f = {.packed = first_v.buf, .inputs = features_v.buf, .out = scores, .scratch = forward_scratch,
                 .rows = rows, .width = width, .hidden = hidden, .networks = networks, .which = NULL};
    if (held & 16) select_rows(&f, allowed_v.buf, which, scores);  /* the others' first scores: a score times 0 */
    forward_run(&f, 0);
    const double *features = features_v.buf;
    double *out = out_v.buf;
    f.rows = rows;
    f.which = NULL;
    if (held & 64) select_rows(&f, rows_v.buf, which, out);  /* the second stage over the rows asked for */
    for (Py_ssize_t i = 0; i < f.rows; i++) {
        const Py_ssize_t r = f.which ? f.which[i] : i;
        memcpy(inputs + r * wide, features + r * width, width * sizeof(double));
    }
    context_into(scores, chars_v.buf, &t, rows, levels, widths, min_score, scratch, element, inputs + width, wide);
    f.packed = second_v.buf;
    f.inputs = inputs;
    f.out = out;
    f.width = wide;
    forward_run(&f, 0);
    result = out_obj;
    Py_INCREF(result);
    goto done;
give_up:
    if (status < 0) goto fail;
    result = Py_None;
    Py_INCREF(result);
    goto done;
fail:
    Py_CLEAR(result);
done:
    tree_release(&t);
    if (held & 1) PyBuffer_Release(&first_v);
    if (held & 2) PyBuffer_Release(&second_v);
    if (held & 4) PyBuffer_Release(&features_v);
    if (held & 8) PyBuffer_Release(&chars_v);
    if (held & 16) PyBuffer_Release(&allowed_v);
    if (held & 32) PyBuffer_Release(&out_v);
    if (held & 64) PyBuffer_Release(&rows_v);
    PyMem_Free(scores);
    PyMem_Free(inputs);
    PyMem_Free(scratch);
    PyMem_Free(element);
    PyMem_Free(which);
    PyMem_Free(forward_scratch);
    return result;
}

/* --- markup_counts: what lxml would be handed, counted before it is ------------------------------------ */
static int scan_space(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
static int scan_alpha(unsigned char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

static int scan_names(const unsigned char *d, Py_ssize_t length, const char *name) {  /* ASCII, any case */
    for (Py_ssize_t k = 0; k < length; k++) {
        unsigned char c = d[k];
        if (c >= 'A' && c <= 'Z') c += 'a' - 'A';
        if (c != (unsigned char)name[k]) return 0;
    }
    return name[length] == 0;
}

/* The index just past "</name" (any case) from i on, else n: where a script's or style's raw text ends. */
static Py_ssize_t scan_past_end_tag(const unsigned char *d, Py_ssize_t n, Py_ssize_t i, const char *name,
                                    Py_ssize_t length) {
    while (i < n) {
        const unsigned char *lt = memchr(d + i, '<', (size_t)(n - i));
        if (!lt) return n;
        i = lt - d + 1;
        if (i + length < n && d[i] == '/' && scan_names(d + i + 1, length, name)) return i + 1 + length;
    }
    return n;
}

/* markup_counts(data) -> (start tags, most attributes in one start tag, attributes): parse.markup_counts' definition, in one
 * pass over the bytes. A start tag is "<" and an ASCII letter; its attributes are read the way an HTML tokenizer
 * reads them (a quoted value runs to its closing quote, whatever it holds); comments and the raw text of script
 * and style elements hold no tags. */
static PyObject *markup_counts(PyObject *self, PyObject *arg) {
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) return NULL;
    const unsigned char *d = view.buf;
    Py_ssize_t n = view.len, i = 0, tags = 0, most = 0, total = 0;
    Py_BEGIN_ALLOW_THREADS
    while (i < n) {
        const unsigned char *lt = memchr(d + i, '<', (size_t)(n - i));
        if (!lt) break;
        i = lt - d + 1;
        if (i + 2 < n && d[i] == '!' && d[i + 1] == '-' && d[i + 2] == '-') {  /* a comment: to its "-->" */
            Py_ssize_t k = i + 3;
            while (k + 2 < n && !(d[k] == '-' && d[k + 1] == '-' && d[k + 2] == '>')) k++;
            i = k + 2 < n ? k + 3 : n;
            continue;
        }
        if (i >= n || !scan_alpha(d[i])) continue;
        tags++;
        Py_ssize_t name = i;
        while (i < n && !scan_space(d[i]) && d[i] != '>' && d[i] != '/') i++;  /* the tag name */
        const char *raw = scan_names(d + name, i - name, "script") ? "script"
                          : scan_names(d + name, i - name, "style") ? "style" : NULL;
        Py_ssize_t attributes = 0;
        for (;;) {
            while (i < n && (scan_space(d[i]) || d[i] == '/')) i++;
            if (i >= n) break;
            if (d[i] == '>') { i++; break; }
            attributes++;
            i++;  /* a name's first character may be anything else, "=" too */
            while (i < n && !scan_space(d[i]) && d[i] != '>' && d[i] != '/' && d[i] != '=') i++;
            while (i < n && scan_space(d[i])) i++;
            if (i < n && d[i] == '=') {
                i++;
                while (i < n && scan_space(d[i])) i++;
                if (i < n && (d[i] == '"' || d[i] == '\'')) {
                    const unsigned char *end = memchr(d + i + 1, d[i], (size_t)(n - i - 1));
                    i = end ? end - d + 1 : n;
                } else {
                    while (i < n && !scan_space(d[i]) && d[i] != '>') i++;
                }
            }
        }
        if (attributes > most) most = attributes;
        total += attributes;
        if (raw) i = scan_past_end_tag(d, n, i, raw, (Py_ssize_t)strlen(raw));  /* raw text holds no tags */
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    return Py_BuildValue("(nnn)", tags, most, total);
}


/* --- parse.lean_markup: the raw text of script and style elements left out before libxml2 reads the page ---------
 * libxml2 (2.14's HTML5 tokenizer) copies a script's or style's raw text into a text node, which parse.py then drops
 * with the element (config.DROP_TAGS): on the dev pages that text is half of the bytes. Here the page is read as
 * that tokenizer reads it, in its order of tests: "<" and "/" an end tag (its name, then attributes whose quoted
 * values run to their quote, to ">" or "/>"; "</>" nothing; "</" and a non-letter a bogus comment to ">"), "<!DOCTYPE"
 * (any case) to the next ">", "<!--" a comment ("<!-->" and "<!--->" empty, else to "-->" or "--!>"), "<!" or "<?" a
 * bogus comment to ">", "<" and an ASCII letter a start tag (the name runs to whitespace, "/" or ">", lower-cased;
 * attributes as above; "/>" makes it empty). After a start tag's ">", an element with a data mode reads its content
 * as raw text: title and textarea (RCDATA), style, xmp, iframe, noembed and noframes (RAWTEXT) up to "</name" and
 * whitespace, "/" or ">"; script the same, through its escape states ("<!--" escaped, "<script" inside that doubly
 * escaped, "-->" back); plaintext to the end. The content of each script and style element (between its start
 * tag's ">" and the "<" of the end tag that closes it, or the end of the page) is left out; the tags stay, so the
 * tree libxml2 builds differs only by those elements' text (parse.py strips the elements). Whitespace here is the
 * HTML tokenizer's (space, tab, LF, FF, CR); the page has been through parse.clean_utf8 (no NUL, no other control
 * character) before it is read. */
#define RAW_NONE 0
#define RAW_RCDATA 1
#define RAW_RAWTEXT 2
#define RAW_PLAINTEXT 3
#define RAW_SCRIPT 4
#define RAW_SCRIPT_ESC1 5
#define RAW_SCRIPT_ESC2 6

/* Byte classes: LEAN_SPACE whitespace; a tag name runs to a LEAN_NAME_END byte, an attribute name to a LEAN_ATTR_END
 * one, an unquoted value to a LEAN_VALUE_END one. */
#define LEAN_SPACE 1
#define LEAN_NAME_END 2
#define LEAN_ATTR_END 4
#define LEAN_VALUE_END 8
static unsigned char lean_class[256];

static void lean_init(void) {
    const unsigned char spaces[] = {' ', '\t', '\n', '\f', '\r'};
    for (size_t k = 0; k < sizeof spaces; k++)
        lean_class[spaces[k]] = LEAN_SPACE | LEAN_NAME_END | LEAN_ATTR_END | LEAN_VALUE_END;
    lean_class['/'] |= LEAN_NAME_END | LEAN_ATTR_END;
    lean_class['>'] |= LEAN_NAME_END | LEAN_ATTR_END | LEAN_VALUE_END;
    lean_class['='] |= LEAN_ATTR_END;
}

static inline int lean_space(unsigned char c) { return lean_class[c] & LEAN_SPACE; }
static inline int lean_letter(unsigned char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

/* The first index from i on whose byte is of ``kind`` (or n). */
static inline Py_ssize_t lean_until(const unsigned char *d, Py_ssize_t n, Py_ssize_t i, unsigned char kind) {
    while (i < n && !(lean_class[d[i]] & kind)) i++;
    return i;
}

static Py_ssize_t lean_blanks(const unsigned char *d, Py_ssize_t n, Py_ssize_t i) {
    while (i < n && (lean_class[d[i]] & LEAN_SPACE)) i++;
    return i;
}

/* The index of the first ">" from i on, or n. */
static Py_ssize_t lean_to_gt(const unsigned char *d, Py_ssize_t n, Py_ssize_t i) {
    if (i >= n) return n;
    const unsigned char *gt = memchr(d + i, '>', (size_t)(n - i));
    return gt ? gt - d : n;
}

/* A tag's attributes from i (just after its name) to its ">" or "/>": the index of that ">" or "/", or n. */
static Py_ssize_t lean_attributes(const unsigned char *d, Py_ssize_t n, Py_ssize_t i) {
    i = lean_blanks(d, n, i);
    while (i < n && d[i] != '>' && !(d[i] == '/' && i + 1 < n && d[i + 1] == '>')) {
        if (d[i] == '/') {
            i = lean_blanks(d, n, i + 1);
            continue;
        }
        i = lean_until(d, n, i + 1, LEAN_ATTR_END);  /* a name's first character is taken whatever it is */
        i = lean_blanks(d, n, i);
        if (i < n && d[i] == '=') {
            i = lean_blanks(d, n, i + 1);
            if (i < n && (d[i] == '"' || d[i] == '\'')) {
                const unsigned char *end = memchr(d + i + 1, d[i], (size_t)(n - i - 1));
                i = end ? end - d + 1 : n;
            } else {
                i = lean_until(d, n, i, LEAN_VALUE_END);
            }
        }
        i = lean_blanks(d, n, i);
    }
    return i;
}

/* Whether "name" (lower-case ASCII) stands at j, any case, followed by whitespace, "/" or ">". */
static int lean_end_name(const unsigned char *d, Py_ssize_t n, Py_ssize_t j, const char *name, Py_ssize_t size) {
    if (j + size >= n) return 0;
    for (Py_ssize_t k = 0; k < size; k++)
        if ((unsigned char)name[k] != (d[j + k] | 0x20)) return 0;
    unsigned char c = d[j + size];
    return c == '>' || c == '/' || lean_space(c);
}

/* Where raw text of ``mode`` that starts at i ends: the "<" of the end tag that closes it, or n. */
static Py_ssize_t lean_raw_end(const unsigned char *d, Py_ssize_t n, Py_ssize_t i, int mode, const char *name,
                               Py_ssize_t size) {
    if (mode == RAW_PLAINTEXT) return n;
    Py_ssize_t next_lt = i - 1, next_dash = i - 1;  /* the next "<" and "-" found (memchr), not yet passed */
    for (Py_ssize_t k = i; k < n; k++) {
        if (next_lt < k) {
            const unsigned char *lt = memchr(d + k, '<', (size_t)(n - k));
            next_lt = lt ? lt - d : n;
        }
        Py_ssize_t at = next_lt;  /* only a "<" matters, and in a script's escape states a "-" too */
        if (mode == RAW_SCRIPT_ESC1 || mode == RAW_SCRIPT_ESC2) {
            if (next_dash < k) {
                const unsigned char *dash = memchr(d + k, '-', (size_t)(n - k));
                next_dash = dash ? dash - d : n;
            }
            if (next_dash < at) at = next_dash;
        }
        if (at >= n) return n;
        k = at;
        unsigned char c = d[k];
        if (c == '<') {
            Py_ssize_t j = k + 1;
            if (j >= n) continue;
            if (mode == RAW_SCRIPT && d[j] == '!') {
                if (j + 2 < n && d[j + 1] == '-' && d[j + 2] == '-') mode = RAW_SCRIPT_ESC1;
                continue;
            }
            int solidus = d[j] == '/';
            if (solidus) j++;
            if ((solidus || mode == RAW_SCRIPT_ESC1) && lean_end_name(d, n, j, name, size)) {
                if (mode == RAW_SCRIPT_ESC1 && !solidus) mode = RAW_SCRIPT_ESC2;
                else if (mode == RAW_SCRIPT_ESC2) mode = RAW_SCRIPT_ESC1;
                else return k;
            }
        } else if (c == '-' && (mode == RAW_SCRIPT_ESC1 || mode == RAW_SCRIPT_ESC2)) {
            if (k + 2 < n && d[k + 1] == '-' && d[k + 2] == '>') mode = RAW_SCRIPT;
        }
    }
    return n;
}

/* The data mode of a start tag's lower-cased name (libxml2's element table). */
static int lean_mode(const unsigned char *name, Py_ssize_t size) {
    static const struct { const char *name; int mode; } modes[] = {
        {"title", RAW_RCDATA}, {"textarea", RAW_RCDATA}, {"style", RAW_RAWTEXT}, {"xmp", RAW_RAWTEXT},
        {"iframe", RAW_RAWTEXT}, {"noembed", RAW_RAWTEXT}, {"noframes", RAW_RAWTEXT},
        {"plaintext", RAW_PLAINTEXT}, {"script", RAW_SCRIPT}};
    for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++)
        if ((Py_ssize_t)strlen(modes[m].name) == size && memcmp(modes[m].name, name, (size_t)size) == 0)
            return modes[m].mode;
    return RAW_NONE;
}

/* --- the content of the other elements parse.py strips (config.DROP_TAGS) ---------------------------------------
 * An element of LEAN_CONTENT (svg, select, noscript, ...: neither void nor raw text in libxml2's table) is a subtree
 * libxml2 builds and parse.py strips. Its content is left out where libxml2 provably builds the rest of the page as
 * it would with it, which its legacy tree builder (2.14's htmlAutoClose, htmlCheckImplied, htmlParseEndTag) does when
 * the content holds:
 * - start tags of names that no start tag inside closes (htmlStartClose's closed tags are refused but those whose
 *   closers are all refused: b, i, span, font... closed only by p, center, td, th, fieldset; and a, which closes an
 *   a, as libxml2 closes it; the element's own name is no closed tag either, so nothing inside can close it or
 *   anything outside), none of html, head, body (libxml2 discards those and counts them against later end tags),
 *   of the end priorities above the default only div's (table and its parts refused), a div closed before the end
 *   tags it would make libxml2 ignore; in a select only option and optgroup (an option closed by the next option or
 *   optgroup, as libxml2 closes it); raw-text elements but plaintext;
 * - end tags only of elements opened inside and still open with nothing of a higher end priority above them
 *   (LEAN_VOID names never: libxml2 never keeps one open);
 * - text, comments and bogus comments, no doctype (one in mid-page would give the document a DTD);
 * and the element's own end tag closes it (the first of its name not opened inside) with whatever is open inside. A start
 * tag's "/>" closes it at once (htmlParseElementInternal). Text inside changes nothing outside (htmlStartCharData
 * finds body or head open, or the body already seen: the element's own start tag saw to that). Otherwise the
 * content stays as it is. One difference is left: libxml2 stops reading a page whose nesting passes its depth limit
 * (config.MAX_DEPTH), and the content left out no longer counts towards it. */
#define LEAN_STACK 48
#define LEAN_NAME 24

static const char *const lean_raw_cut[] = {"script", "style", "iframe", "textarea", NULL};  /* raw text left out */
static const char *const lean_content[] = {"svg", "math", "select", "noscript", "template", "object", "applet",
                                           "button", NULL};
/* elements whose start tags lean_markup_bare hands libxml2 without their attributes: elements parse.py strips with
 * their attributes (config.DROP_TAGS), whose attributes libxml2's tokenizer and tree builder never read (an
 * element's raw text mode, what it closes and what closes it depend on its name alone) */
static const char *const lean_bare[] = {"script", "style", "noscript", "template", "svg", "math", "iframe", "object",
                                        "embed", "applet", "select", "button", "textarea", NULL};
static const char *const lean_refused[] = {  /* inner start tags that keep the content */
    "html", "head", "body", "frameset", "plaintext",
    "table", "caption", "colgroup", "col", "thead", "tbody", "tfoot", "tr", "td", "th", "center", "fieldset",
    "address", "dd", "dir", "dl", "dt", "form", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "li", "link", "listing",
    "menu", "ol", "option", "p", "pre", "ul", "xmp", NULL};
static const char *const lean_void[] = {  /* names libxml2 may close at once (taken as void: never on the stack) */
    "area", "base", "basefont", "bgsound", "br", "embed", "frame", "img", "image", "input", "isindex", "keygen",
    "meta", "param", "source", "track", "wbr", NULL};

static int lean_listed(const char *const *list, const unsigned char *name, Py_ssize_t size) {
    if (size < 1) return 0;
    for (; *list; list++)  /* (the first letters compared first: most tags' differ from every listed name's) */
        if ((unsigned char)(*list)[0] == name[0] && (Py_ssize_t)strlen(*list) == size
                && memcmp(*list, name, (size_t)size) == 0) return 1;
    return 0;
}

/* A tag's name at i (its first letter) lower-cased into out (at most LEAN_NAME bytes): its size, or -1 when longer;
 * *end: where the name ends. */
static Py_ssize_t lean_name(const unsigned char *d, Py_ssize_t n, Py_ssize_t i, unsigned char *out, Py_ssize_t *end) {
    Py_ssize_t q = lean_until(d, n, i + 1, LEAN_NAME_END), size = q - i;
    *end = q;
    if (size > LEAN_NAME) return -1;
    for (Py_ssize_t k = 0; k < size; k++)
        out[k] = d[i + k] >= 'A' && d[i + k] <= 'Z' ? d[i + k] + 32 : d[i + k];
    return size;
}

/* "<!" at p: where what it opens ends (a doctype to its ">", a comment to "-->" or "--!>", "<!-->" and "<!--->"
 * empty, anything else a bogus comment to ">"), n where the page ends first; *doctype: whether it is a doctype. */
static Py_ssize_t lean_declaration_end(const unsigned char *d, Py_ssize_t n, Py_ssize_t p, int *doctype) {
    static const char name[] = "DOCTYPE";
    int is_doctype = p + 8 < n;
    for (int k = 0; is_doctype && k < 7; k++)
        is_doctype = (d[p + 2 + k] & ~0x20) == (unsigned char)name[k] && lean_letter(d[p + 2 + k]);
    *doctype = is_doctype;
    if (is_doctype) return lean_to_gt(d, n, p + 9) + 1;
    if (!(p + 3 < n && d[p + 2] == '-' && d[p + 3] == '-')) return lean_to_gt(d, n, p + 2) + 1;
    Py_ssize_t q = p + 4;
    if (q < n && d[q] == '>') return q + 1;
    if (q + 1 < n && d[q] == '-' && d[q + 1] == '>') return q + 2;
    for (; q < n; q++) {
        if (d[q] != '-' || q + 1 >= n || d[q + 1] != '-' || q + 2 >= n) continue;
        if (d[q + 2] == '>') return q + 3;
        if (d[q + 2] == '!' && q + 3 < n && d[q + 3] == '>') return q + 4;
    }
    return n;
}

/* Where the content of the LEAN_CONTENT element ``outer`` (its start tag's ">" just before i) ends: the "<" of the
 * end tag that closes it, when the content may be left out (above); else -1. */
static Py_ssize_t lean_content_end(const unsigned char *d, Py_ssize_t n, Py_ssize_t i, const unsigned char *outer,
                                   Py_ssize_t outer_size) {
    unsigned char stack[LEAN_STACK][LEAN_NAME];
    Py_ssize_t sizes[LEAN_STACK], depth = 0;
    int select = outer_size == 6 && memcmp(outer, "select", 6) == 0;
    while (i < n) {
        const unsigned char *lt = memchr(d + i, '<', (size_t)(n - i));
        if (!lt) return -1;
        Py_ssize_t p = lt - d;
        if (p + 1 >= n) return -1;
        unsigned char c = d[p + 1], name[LEAN_NAME];
        Py_ssize_t q, size;
        if (c == '/') {
            q = p + 2;
            if (q >= n) return -1;
            if (d[q] == '>') { i = q + 1; continue; }
            if (!lean_letter(d[q])) { i = lean_to_gt(d, n, q) + 1; continue; }
            size = lean_name(d, n, q, name, &q);
            q = lean_attributes(d, n, q);
            if (q >= n || size < 0) return -1;
            Py_ssize_t at = depth - 1;
            while (at >= 0 && !(sizes[at] == size && memcmp(stack[at], name, (size_t)size) == 0)) at--;
            int priority = size == 3 && memcmp(name, "div", 3) == 0 ? 150 : 100;  /* (htmlEndPriority) */
            for (Py_ssize_t above = at < 0 ? 0 : at + 1; above < depth; above++)
                if (sizes[above] == 3 && memcmp(stack[above], "div", 3) == 0 && priority < 150)
                    return -1;  /* libxml2 would ignore the end tag */
            if (at < 0 && size == outer_size && memcmp(name, outer, (size_t)size) == 0)
                return p;  /* the element's own end tag: it closes it and whatever is open inside */
            if (at < 0 || lean_listed(lean_void, name, size)) return -1;
            depth = at;  /* (everything above it closed with it: all of the default priority) */
            i = q + (d[q] == '>' ? 1 : 2);
        } else if (c == '!') {
            int doctype;
            i = lean_declaration_end(d, n, p, &doctype);
            if (doctype) return -1;
        } else if (c == '?') {
            i = lean_to_gt(d, n, p + 1) + 1;
        } else if (lean_letter(c)) {
            size = lean_name(d, n, p + 1, name, &q);
            q = lean_attributes(d, n, q);
            if (q >= n || size < 0) return -1;
            if (select) {
                if (!(size == 6 && memcmp(name, "option", 6) == 0) && !(size == 8 && memcmp(name, "optgroup", 8) == 0))
                    return -1;
                if (depth > 0 && sizes[depth - 1] == 6 && memcmp(stack[depth - 1], "option", 6) == 0)
                    depth--;  /* (htmlStartClose: an option is closed by an option or an optgroup) */
            } else if (lean_listed(lean_refused, name, size)) {
                return -1;
            } else if (size == 1 && name[0] == 'a') {
                while (depth > 0 && sizes[depth - 1] == 1 && stack[depth - 1][0] == 'a')
                    depth--;  /* (htmlStartClose: an a is closed by an a) */
            }
            if (d[q] == '/') { i = q + 2; continue; }  /* "/>": closed at once */
            i = q + 1;
            if (lean_listed(lean_void, name, size)) continue;
            if (depth == LEAN_STACK) return -1;
            memcpy(stack[depth], name, (size_t)size);
            sizes[depth++] = size;
            char lower[LEAN_NAME + 1];
            memcpy(lower, name, (size_t)size);
            lower[size] = 0;
            int mode = lean_mode(name, size);
            if (mode == RAW_PLAINTEXT) return -1;
            if (mode != RAW_NONE) {
                i = lean_raw_end(d, n, i, mode, lower, size);  /* its end tag is read next, as an end tag */
                if (i >= n) return -1;
            }
        } else {
            i = p + 1;
        }
    }
    return -1;
}

/* The span [start, end) appended to *cut's pairs (grown as needed): 0 (and *cut freed) where memory runs out. */
static int lean_cut_add(Py_ssize_t **cut, Py_ssize_t *spans, Py_ssize_t *capacity, Py_ssize_t start, Py_ssize_t end) {
    if (*spans == *capacity) {
        *capacity = *capacity ? 2 * *capacity : 32;
        Py_ssize_t *grown = PyMem_Realloc(*cut, 2 * *capacity * sizeof(Py_ssize_t));
        if (!grown) { PyMem_Free(*cut); *cut = NULL; return 0; }
        *cut = grown;
    }
    (*cut)[2 * *spans] = start;
    (*cut)[2 * *spans + 1] = end;
    (*spans)++;
    return 1;
}

/* lean_markup(data) -> bytes: ``data`` without the content of its script and style elements (the same object when
 * they hold none); with ``bare``, the start tags of lean_bare's elements without their attributes too. */
static PyObject *lean_markup_impl(PyObject *arg, int bare) {
    if (!PyBytes_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "lean_markup takes bytes");
        return NULL;
    }
    const unsigned char *d = (const unsigned char *)PyBytes_AS_STRING(arg);
    const Py_ssize_t n = PyBytes_GET_SIZE(arg);
    Py_ssize_t i = 0, spans = 0, capacity = 0, left_out = 0;
    Py_ssize_t *cut = NULL;  /* [start, end) pairs of the content left out, in order */
    while (i < n) {
        const unsigned char *lt = memchr(d + i, '<', (size_t)(n - i));
        if (!lt) break;
        Py_ssize_t p = lt - d;
        if (p + 1 >= n) break;  /* a "<" at the end: text */
        unsigned char c = d[p + 1];
        if (c == '/') {
            Py_ssize_t q = p + 2;
            if (q >= n) break;
            if (d[q] == '>') { i = q + 1; continue; }
            if (!lean_letter(d[q])) { i = lean_to_gt(d, n, q) + 1; continue; }  /* a bogus comment */
            q = lean_attributes(d, n, lean_until(d, n, q + 1, LEAN_NAME_END));  /* (the name's first letter) */
            if (q >= n) break;
            i = q + (d[q] == '>' ? 1 : 2);
        } else if (c == '!') {
            int doctype;
            i = lean_declaration_end(d, n, p, &doctype);
        } else if (c == '?') {
            i = lean_to_gt(d, n, p + 1) + 1;
        } else if (lean_letter(c)) {
            unsigned char name[16];
            Py_ssize_t q = lean_until(d, n, p + 1, LEAN_NAME_END), size = q - p - 1;
            for (Py_ssize_t k = 0; k < size && k < (Py_ssize_t)sizeof name; k++)
                name[k] = d[p + 1 + k] >= 'A' && d[p + 1 + k] <= 'Z' ? d[p + 1 + k] + 32 : d[p + 1 + k];
            Py_ssize_t name_end = q;
            q = lean_attributes(d, n, q);
            if (q >= n) break;  /* a start tag the page ends in: no element */
            if (bare && q > name_end && size <= (Py_ssize_t)sizeof name && lean_listed(lean_bare, name, size)) {
                /* the attributes (and the blanks and "/"s between them), up to the ">" or the "/" of "/>" */
                if (!lean_cut_add(&cut, &spans, &capacity, name_end, q)) return PyErr_NoMemory();
                left_out += q - name_end;
            }
            if (d[q] == '/') { i = q + 2; continue; }  /* "/>": an empty element */
            i = q + 1;
            int mode = size <= (Py_ssize_t)sizeof name ? lean_mode(name, size) : RAW_NONE;
            Py_ssize_t end;
            int cut_out;
            if (mode == RAW_NONE) {
                if (size > (Py_ssize_t)sizeof name || !lean_listed(lean_content, name, size)) continue;
                end = lean_content_end(d, n, i, name, size);
                if (end < 0) continue;  /* the content stays: read on, as libxml2 does */
                cut_out = 1;
            } else {
                char lower[16];
                memcpy(lower, name, (size_t)size);
                lower[size] = 0;
                end = lean_raw_end(d, n, i, mode, lower, size);
                cut_out = lean_listed(lean_raw_cut, name, size);
            }
            if (end > i && cut_out) {
                if (!lean_cut_add(&cut, &spans, &capacity, i, end)) return PyErr_NoMemory();
                left_out += end - i;
            }
            i = end;
        } else {
            i = p + 1;  /* a "<" of the text */
        }
    }
    if (!spans) {
        Py_INCREF(arg);
        return arg;
    }
    PyObject *out = PyBytes_FromStringAndSize(NULL, n - left_out);
    if (out) {
        char *o = PyBytes_AS_STRING(out);
        Py_ssize_t from = 0;
        for (Py_ssize_t s = 0; s < spans; s++) {
            memcpy(o, d + from, (size_t)(cut[2 * s] - from));
            o += cut[2 * s] - from;
            from = cut[2 * s + 1];
        }
        memcpy(o, d + from, (size_t)(n - from));
    }
    PyMem_Free(cut);
    return out;
}

static PyObject *lean_markup(PyObject *self, PyObject *arg) { return lean_markup_impl(arg, 0); }
static PyObject *lean_markup_bare(PyObject *self, PyObject *arg) { return lean_markup_impl(arg, 1); }


/* first_places(data, needles, start=0) -> list[int]: [data.find(needle, start) for needle in needles] (bytes; start
 * not negative). Each needle is
 * looked for by its byte least likely in markup (a rough frequency: '+' or a capital far rarer than a lowercase
 * letter), with memchr: every place where that byte stands is compared with the whole needle, in order, so the
 * first match is the needle's first place (the choice of byte is speed only). With SSE2 (every x86-64), a needle of
 * two bytes or more whose rarest byte is a common one (a lowercase letter) is looked for by two of its bytes at 16
 * places at once, the places in order as well. */
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
static int byte_weight(unsigned char c) {  /* how common a byte is in markup, roughly: lower is rarer */
    static const char common[] = " etaoinsrhldcu<>=\"/-pmfgwy.:_bv";
    const char *at = c ? strchr(common, c) : NULL;
    return at ? 64 - (int)(at - common) : (c >= 'A' && c <= 'Z') || c == '+' ? 0 : 8;
}

static Py_ssize_t first_place(const unsigned char *d, Py_ssize_t n, const unsigned char *needle, Py_ssize_t size) {
    if (size == 0) return 0;
    if (size > n) return -1;
    Py_ssize_t shift = 0;
    for (Py_ssize_t o = 1; o < size; o++)
        if (byte_weight(needle[o]) < byte_weight(needle[shift])) shift = o;
#if defined(__SSE2__)
    if (size >= 2 && byte_weight(needle[shift]) > 8) {  /* a needle whose rarest byte is common in markup ("uthor"
        * stops memchr at every "u"): two anchors tested at 16 places at once, that byte and the rarest other one */
        Py_ssize_t other = shift == 0 ? 1 : 0;
        for (Py_ssize_t o = 0; o < size; o++)
            if (o != shift && byte_weight(needle[o]) < byte_weight(needle[other])) other = o;
        const __m128i first = _mm_set1_epi8((char)needle[shift]), second = _mm_set1_epi8((char)needle[other]);
        Py_ssize_t at = 0, last = n - size;  /* the places a needle can start at: 0..last */
        for (; at + 15 <= last; at += 16) {  /* (each load ends before d + n: shift and other are below size) */
            __m128i a = _mm_loadu_si128((const __m128i *)(d + at + shift));
            __m128i b = _mm_loadu_si128((const __m128i *)(d + at + other));
            unsigned mask = (unsigned)_mm_movemask_epi8(_mm_and_si128(_mm_cmpeq_epi8(a, first),
                                                                      _mm_cmpeq_epi8(b, second)));
            while (mask) {
                int k = __builtin_ctz(mask);
                if (memcmp(d + at + k, needle, (size_t)size) == 0) return at + k;
                mask &= mask - 1;
            }
        }
        for (; at <= last; at++)
            if (d[at + shift] == needle[shift] && d[at + other] == needle[other]
                    && memcmp(d + at, needle, (size_t)size) == 0) return at;
        return -1;
    }
#endif
    Py_ssize_t from = shift, last = n - size + shift;  /* where the anchor byte of a whole needle can stand */
    while (from <= last) {
        const unsigned char *hit = memchr(d + from, needle[shift], (size_t)(last - from + 1));
        if (!hit) return -1;
        Py_ssize_t at = hit - d - shift;
        if (memcmp(d + at, needle, (size_t)size) == 0) return at;
        from = hit - d + 1;
    }
    return -1;
}

static PyObject *first_places(PyObject *self, PyObject *args) {
    Py_buffer data;
    PyObject *needles;
    Py_ssize_t start = 0;
    if (!PyArg_ParseTuple(args, "y*O!|n", &data, &PyTuple_Type, &needles, &start)) return NULL;
    if (start < 0) {
        PyBuffer_Release(&data);
        PyErr_SetString(PyExc_ValueError, "first_places: start must not be negative");
        return NULL;
    }
    Py_ssize_t k = PyTuple_GET_SIZE(needles);
    for (Py_ssize_t j = 0; j < k; j++) {
        if (!PyBytes_Check(PyTuple_GET_ITEM(needles, j))) {
            PyBuffer_Release(&data);
            PyErr_SetString(PyExc_TypeError, "first_places: needles must be bytes");
            return NULL;
        }
    }
    PyObject *result = PyList_New(k);
    for (Py_ssize_t j = 0; result && j < k; j++) {
        PyObject *needle = PyTuple_GET_ITEM(needles, j);
        Py_ssize_t at = start > data.len ? -1 : first_place((const unsigned char *)data.buf + start, data.len - start,
                                                            (const unsigned char *)PyBytes_AS_STRING(needle),
                                                            PyBytes_GET_SIZE(needle));
        PyObject *value = PyLong_FromSsize_t(at < 0 ? -1 : at + start);
        if (!value) Py_CLEAR(result);
        else PyList_SET_ITEM(result, j, value);
    }
    PyBuffer_Release(&data);
    return result;
}

/* first_place_folded(data, needle, start=0) -> int: the first place at or after start where data holds needle, ASCII
 * letters in either case (what re.compile(re.escape(needle), re.IGNORECASE).search(data, start) finds in bytes), or
 * -1. Anchored, as first_place is, on the needle's rarest byte that is no letter (memchr), else tried at each place. */
static inline unsigned char ascii_fold(unsigned char c) { return c >= 'A' && c <= 'Z' ? (unsigned char)(c + 32) : c; }

static int folded_equal(const unsigned char *a, const unsigned char *b, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++)
        if (ascii_fold(a[i]) != ascii_fold(b[i])) return 0;
    return 1;
}

static PyObject *first_place_folded(PyObject *self, PyObject *args) {
    Py_buffer data, needle;
    Py_ssize_t start = 0;
    if (!PyArg_ParseTuple(args, "y*y*|n", &data, &needle, &start)) return NULL;
    Py_ssize_t found = -1;
    const unsigned char *d = data.buf, *w = needle.buf;
    Py_ssize_t n = data.len, size = needle.len;
    if (start < 0) {
        PyBuffer_Release(&data);
        PyBuffer_Release(&needle);
        PyErr_SetString(PyExc_ValueError, "first_place_folded: start must not be negative");
        return NULL;
    }
    if (size == 0) {
        found = start <= n ? start : n;  /* (as a regex search, whose start is at most the end) */
    } else if (start <= n - size) {
        Py_ssize_t shift = -1;  /* the anchor: a byte no case folding changes */
        for (Py_ssize_t o = 0; o < size; o++)
            if (ascii_fold(w[o]) == w[o] && !(w[o] >= 'a' && w[o] <= 'z')
                    && (shift < 0 || byte_weight(w[o]) < byte_weight(w[shift]))) shift = o;
        if (shift < 0) {
            for (Py_ssize_t at = start; at <= n - size && found < 0; at++)
                if (folded_equal(d + at, w, size)) found = at;
        } else {
            Py_ssize_t from = start + shift, last = n - size + shift;
            while (from <= last) {
                const unsigned char *hit = memchr(d + from, w[shift], (size_t)(last - from + 1));
                if (!hit) break;
                Py_ssize_t at = hit - d - shift;
                if (folded_equal(d + at, w, size)) {
                    found = at;
                    break;
                }
                from = hit - d + 1;
            }
        }
    }
    PyBuffer_Release(&data);
    PyBuffer_Release(&needle);
    return PyLong_FromSsize_t(found);
}

/* --- A template's static rules against a page (extract.match_static): which of the page's block hashes are in the
 * template's sorted set of static hashes (extract._members' binary search), and the length of the longest common
 * subsequence of the template's static sequence and the page's hashes (align.lcs_length_masks' bit-parallel rows,
 * Allison-Dix / Hyyro, here in 64-bit words). ``table`` holds, per distinct static hash (in ``set``'s order), the
 * match mask of its positions in the sequence, ``words`` uint64 words a hash (extract.static_table builds it). */

static PyObject *static_match(PyObject *self, PyObject *args) {
    Py_buffer vector, set, table, out;
    Py_ssize_t size;
    if (!PyArg_ParseTuple(args, "y*y*y*nw*", &vector, &set, &table, &size, &out)) return NULL;
    PyObject *result = NULL;
    uint64_t *row = NULL;
    Py_ssize_t n = vector.len / 4, k = set.len / 4, words = (size + 63) / 64;
    if (size < 0 || vector.len % 4 || set.len % 4 || out.len != n || table.len != k * words * 8) {
        PyErr_SetString(PyExc_ValueError, "static_match: buffers of the wrong sizes");
        goto done;
    }
    const uint32_t *b = (const uint32_t *)vector.buf, *keys = (const uint32_t *)set.buf;
    const uint64_t *masks = (const uint64_t *)table.buf;
    unsigned char *found = (unsigned char *)out.buf;
    row = (uint64_t *)malloc((words ? words : 1) * sizeof(uint64_t));
    if (!row) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t w = 0; w < words; w++) row[w] = ~(uint64_t)0;
    uint64_t last = size % 64 ? (((uint64_t)1 << (size % 64)) - 1) : ~(uint64_t)0;  /* the top word's bits in use */
    if (words) row[words - 1] = last;
    for (Py_ssize_t j = 0; j < n; j++) {
        uint32_t symbol = b[j];
        Py_ssize_t lo = 0, hi = k;  /* the first key >= symbol */
        while (lo < hi) {
            Py_ssize_t mid = lo + (hi - lo) / 2;
            if (keys[mid] < symbol) lo = mid + 1;
            else hi = mid;
        }
        if (lo == k || keys[lo] != symbol) {
            found[j] = 0;
            continue;
        }
        found[j] = 1;
        const uint64_t *mask = masks + lo * words;
        uint64_t carry = 0;
        for (Py_ssize_t w = 0; w < words; w++) {  /* row = ((row + u) | (row - u)) & full, u = row & mask: u is
                                                    * within row, so row - u is row & ~u (no borrow) */
            uint64_t r = row[w], u = r & mask[w];
            uint64_t sum = r + u;
            uint64_t next = sum < r ? 1 : 0;
            uint64_t total = sum + carry;
            if (total < sum) next = 1;
            row[w] = total | (r & ~u);
            carry = next;
        }
        if (words) row[words - 1] &= last;
    }
    Py_ssize_t ones = 0;
    for (Py_ssize_t w = 0; w < words; w++) ones += __builtin_popcountll(row[w]);
    result = PyLong_FromSsize_t(size - ones);
done:
    free(row);
    PyBuffer_Release(&vector);
    PyBuffer_Release(&set);
    PyBuffer_Release(&table);
    PyBuffer_Release(&out);
    return result;
}

/* --- MinHash signing (templater.shingles): texts -> shingle hashes -> OPH / k-permutation signatures, anchor
 * keys and bottom-k samples. Each function computes what its numpy definition in shingles.py computes (named in
 * its comment), bit for bit: every hash is uint64 arithmetic with wrap-around, as numpy's; the constants are
 * shingles.py's. tests/test_shingles.py holds each equal to its numpy definition (hypothesis). A text is handled
 * from its characters to its shingle hashes in one pass (the numpy path joins a batch into one code-point array
 * and makes a dozen passes over it). */

#define SH_MIX1 0xFF51AFD7ED558CCDULL
#define SH_MIX2 0xC4CEB9FE1A85EC53ULL
#define SH_CHAR_PRIME 0x100000001B3ULL
#define SH_NGRAM_BASE 0xD6E8FEB86659FD93ULL
#define SH_BAND_BASE 0xA0761D6478BD642FULL
#define SH_ANCHOR_TAG 0x2545F4914F6CDD1DULL
#define SH_VALUE_BITS 28
#define SH_VALUE_MASK ((1ULL << SH_VALUE_BITS) - 1)
#define SH_KEY_SHIFT 17
#define SH_EMPTY 0xFFFFFFFFu
#define SH_SPACE 32
#define SH_TABLE_BYTES (0x110000 / 8)

static inline uint64_t sh_fmix64(uint64_t h) {
    h ^= h >> 33;
    h *= SH_MIX1;
    h ^= h >> 33;
    h *= SH_MIX2;
    return h ^ (h >> 33);
}

typedef struct { uint64_t *data; Py_ssize_t size, capacity; } U64Vec;

static int u64_reserve(U64Vec *v, Py_ssize_t more) {
    if (v->size + more <= v->capacity) return 0;
    Py_ssize_t capacity = v->capacity ? v->capacity : 4096;
    while (capacity < v->size + more) capacity *= 2;
    uint64_t *data = PyMem_Realloc(v->data, (size_t)capacity * sizeof(uint64_t));
    if (!data) { PyErr_NoMemory(); return -1; }
    v->data = data;
    v->capacity = capacity;
    return 0;
}

static inline int u64_push(U64Vec *v, uint64_t x) {
    if (v->size == v->capacity && u64_reserve(v, 1) < 0) return -1;
    v->data[v->size++] = x;
    return 0;
}

/* A bytearray holding ``count`` items of ``itemsize`` bytes copied from ``data``. */
static PyObject *bytearray_of(const void *data, Py_ssize_t count, Py_ssize_t itemsize) {
    PyObject *out = PyByteArray_FromStringAndSize(NULL, count * itemsize);
    if (out && count) memcpy(PyByteArray_AS_STRING(out), data, (size_t)(count * itemsize));
    return out;
}

/* (values, offsets) as two bytearrays of 8-byte items: what the functions below that give per-text arrays return. */
static PyObject *values_and_offsets(const U64Vec *values, const int64_t *offsets, Py_ssize_t docs) {
    PyObject *v = bytearray_of(values->data, values->size, 8), *o = v ? bytearray_of(offsets, docs + 1, 8) : NULL;
    PyObject *result = o ? PyTuple_Pack(2, v, o) : NULL;
    Py_XDECREF(v);
    Py_XDECREF(o);
    return result;
}

/* hashes (uint64) and offsets (int64, docs + 1, rising within the hashes): 0 or -1 with an error set. */
static int shingle_buffers(Py_buffer *hashes, Py_buffer *offsets, Py_ssize_t *docs) {
    if (hashes->len % 8 || offsets->len % 8 || offsets->len < 8) {
        PyErr_SetString(PyExc_ValueError, "hashes must be uint64 and offsets int64 (texts + 1)");
        return -1;
    }
    const int64_t *off = offsets->buf;
    Py_ssize_t n = offsets->len / 8 - 1, size = hashes->len / 8;
    for (Py_ssize_t d = 0; d <= n; d++) {
        if (off[d] < 0 || off[d] > size || (d < n && off[d + 1] < off[d])) {
            PyErr_SetString(PyExc_ValueError, "offsets must rise within the hashes");
            return -1;
        }
    }
    *docs = n;
    return 0;
}

/* The n-grams of one text's units (token hashes, or code points of its normalized form), Horner-combined with
 * NGRAM_BASE (rolling: g' = (g - u[i] * B**(n-1)) * B + u[i+n], exact mod 2**64), fmix64'd, cut to 32 bits when
 * asked; a text of 1..n-1 units gives one gram of them all (shingles._ngrams + the end of shingle_hashes). */
static int push_grams(U64Vec *out, const uint64_t *u, Py_ssize_t m, Py_ssize_t n, uint64_t top, uint64_t mask) {
    if (m == 0) return 0;
    Py_ssize_t width = m < n ? m : n, count = m < n ? 1 : m - n + 1;
    if (u64_reserve(out, count) < 0) return -1;
    uint64_t g = 0, *o = out->data + out->size;
    for (Py_ssize_t i = 0; i < width; i++) g = g * SH_NGRAM_BASE + u[i];
    o[0] = sh_fmix64(g) & mask;
    for (Py_ssize_t i = n; i < m; i++) {
        g = (g - u[i - n] * top) * SH_NGRAM_BASE + u[i];
        o[i - n + 1] = sh_fmix64(g) & mask;
    }
    out->size += count;
    return 0;
}

static inline int sh_is(const unsigned char *table, Py_UCS4 c) { return (table[c >> 3] >> (c & 7)) & 1; }

/* One text's units: each token's fmix64(polynomial hash of its code points (CHAR_PRIME**i) ^ its length)
 * (word), or the code points of its tokens joined by single spaces (char); tokens of numeric characters only
 * left out unless keep (shingles._tokenize, _token_hashes, _normalized_codes). READ(i) is the lower-cased
 * code point at i. */
#define SH_TOKENIZE(READ)                                                                                      \
    do {                                                                                                      \
        Py_ssize_t i = 0;                                                                                     \
        Py_UCS4 c = 0;                                                                                        \
        for (;;) {                                                                                            \
            while (i < length && !sh_is(token, c = (Py_UCS4)(READ(i)))) i++;                                  \
            if (i >= length) break;                                                                           \
            Py_ssize_t start = i, letters = keep;                                                             \
            uint64_t acc = 0, power = 1;                                                                      \
            do {                                                                                              \
                acc += (uint64_t)c * power;                                                                   \
                power *= SH_CHAR_PRIME;                                                                       \
                if (!keep) letters += !sh_is(numeric, c);                                                     \
                i++;                                                                                          \
            } while (i < length && sh_is(token, c = (Py_UCS4)(READ(i))));                                     \
            if (!letters) continue;                                                                           \
            if (!chars) {                                                                                     \
                if (u64_push(units, sh_fmix64(acc ^ (uint64_t)(i - start))) < 0) goto failed;                 \
            } else {                                                                                          \
                if (u64_reserve(units, i - start + 1) < 0) goto failed;                                       \
                if (units->size) units->data[units->size++] = SH_SPACE;                                       \
                for (Py_ssize_t j = start; j < i; j++) units->data[units->size++] = (uint64_t)(READ(j));      \
            }                                                                                                 \
        }                                                                                                     \
    } while (0)

/* Characters whose str.lower is not their simple lower-case mapping (Py_UNICODE_TOLOWER): U+0130 (İ), whose
 * lower case is two characters, and U+03A3 (Σ), whose lower case depends on its place in the word (final sigma).
 * tests/test_shingles.py checks every code point of the running Python's Unicode database against this. */
#define SH_SPECIAL_LOWER(c) ((c) == 0x130 || (c) == 0x3A3)
#if PY_VERSION_HEX < 0x030C0000
#define SH_READY(text) PyUnicode_READY(text)
#else
#define SH_READY(text) 0  /* every str is ready from Python 3.12 on (PyUnicode_READY is deprecated) */
#endif

static int text_units(PyObject *text, const unsigned char *token, const unsigned char *numeric, int chars, int keep,
                      U64Vec *units) {
    PyObject *lowered = NULL;
    units->size = 0;
    if (SH_READY(text) < 0) return -1;
    Py_ssize_t length = PyUnicode_GET_LENGTH(text);
    int kind = PyUnicode_KIND(text), special = 0;
    const void *data = PyUnicode_DATA(text);
    if (kind == PyUnicode_2BYTE_KIND) {
        const Py_UCS2 *d = data;
        for (Py_ssize_t i = 0; i < length; i++) special |= SH_SPECIAL_LOWER(d[i]);
    } else if (kind == PyUnicode_4BYTE_KIND) {
        const Py_UCS4 *d = data;
        for (Py_ssize_t i = 0; i < length; i++) special |= SH_SPECIAL_LOWER(d[i]);
    }
    if (!special) {  /* str.lower is each character's simple mapping: done while reading */
#define SH_LOWER(i) (d[i] < 0x80 ? (Py_UCS4)(d[i] + ((unsigned)(d[i] - 'A') < 26u ? 32 : 0)) : Py_UNICODE_TOLOWER(d[i]))
        if (kind == PyUnicode_1BYTE_KIND) {
            const Py_UCS1 *d = data;
            SH_TOKENIZE(SH_LOWER);
        } else if (kind == PyUnicode_2BYTE_KIND) {
            const Py_UCS2 *d = data;
            SH_TOKENIZE(SH_LOWER);
        } else {
            const Py_UCS4 *d = data;
            SH_TOKENIZE(SH_LOWER);
        }
#undef SH_LOWER
        return 0;
    }
    lowered = PyObject_CallMethodNoArgs(text, lower_name);
    if (!lowered) return -1;
    if (!PyUnicode_Check(lowered) || SH_READY(lowered) < 0) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "str.lower did not give a str");
        goto failed;
    }
    length = PyUnicode_GET_LENGTH(lowered);
    data = PyUnicode_DATA(lowered);
#define SH_PLAIN(i) (d[i])
    switch (PyUnicode_KIND(lowered)) {
        case PyUnicode_1BYTE_KIND: {
            const Py_UCS1 *d = data;
            SH_TOKENIZE(SH_PLAIN);
            break;
        }
        case PyUnicode_2BYTE_KIND: {
            const Py_UCS2 *d = data;
            SH_TOKENIZE(SH_PLAIN);
            break;
        }
        default: {
            const Py_UCS4 *d = data;
            SH_TOKENIZE(SH_PLAIN);
            break;
        }
    }
#undef SH_PLAIN
    Py_DECREF(lowered);
    return 0;
failed:
    Py_XDECREF(lowered);
    return -1;
}

/* shingles.shingle_hashes: (hashes uint64, offsets int64) of every text's shingles, as bytearrays. */
static PyObject *sh_shingle_hashes(PyObject *self, PyObject *args) {
    PyObject *texts_obj, *result = NULL;
    Py_buffer token_view, numeric_view;
    int chars, keep, hash_bits;
    Py_ssize_t n;
    if (!PyArg_ParseTuple(args, "Oy*y*pnpi", &texts_obj, &token_view, &numeric_view, &chars, &n, &keep, &hash_bits))
        return NULL;
    PyObject *fast = NULL;
    U64Vec units = {0}, out = {0};
    int64_t *offsets = NULL;
    if (token_view.len != SH_TABLE_BYTES || numeric_view.len != SH_TABLE_BYTES || n < 1
        || (hash_bits != 32 && hash_bits != 64)) {
        PyErr_SetString(PyExc_ValueError, "shingle_hashes: tables of 0x110000 bits, n >= 1, hash_bits 32 or 64");
        goto done;
    }
    fast = PySequence_Fast(texts_obj, "texts must be a sequence");
    if (!fast) goto done;
    Py_ssize_t docs = PySequence_Fast_GET_SIZE(fast);
    offsets = PyMem_Malloc((size_t)(docs + 1) * sizeof(int64_t));
    if (!offsets) { PyErr_NoMemory(); goto done; }
    uint64_t top = 1, mask = hash_bits == 32 ? 0xFFFFFFFFULL : ~0ULL;
    for (Py_ssize_t i = 1; i < n; i++) top *= SH_NGRAM_BASE;
    offsets[0] = 0;
    for (Py_ssize_t i = 0; i < docs; i++) {
        PyObject *text = PySequence_Fast_GET_ITEM(fast, i);
        if (!PyUnicode_Check(text)) { PyErr_SetString(PyExc_TypeError, "texts must be str"); goto done; }
        if (text_units(text, token_view.buf, numeric_view.buf, chars, keep, &units) < 0) goto done;
        if (push_grams(&out, units.data, units.size, n, top, mask) < 0) goto done;
        offsets[i + 1] = out.size;
    }
    result = values_and_offsets(&out, offsets, docs);
done:
    Py_XDECREF(fast);
    PyMem_Free(units.data);
    PyMem_Free(out.data);
    PyMem_Free(offsets);
    PyBuffer_Release(&token_view);
    PyBuffer_Release(&numeric_view);
    return result;
}

/* shingles._sign_oph: (texts x k) uint32 signatures as a bytearray. Round r sends each shingle x to slot
 * ((h >> 32) * k) >> 32 of h = fmix64(x ^ round salt r) with value (r << 28) | (h & 2**28 - 1), slots keep their
 * minimum, rounds stop once every slot is filled; a slot still empty takes (rounds << 28) | min over x of
 * fmix64(x ^ its slot salt) & 2**28 - 1. A text without shingles keeps EMPTY_SLOT everywhere. */
static PyObject *sh_sign_oph(PyObject *self, PyObject *args) {
    Py_buffer hv, ov, rv, sv;
    Py_ssize_t k, docs;
    if (!PyArg_ParseTuple(args, "y*y*ny*y*", &hv, &ov, &k, &rv, &sv)) return NULL;
    PyObject *result = NULL;
    Py_ssize_t rounds = rv.len / 8;
    if (k < 1 || rv.len % 8 || sv.len != k * 8) {
        PyErr_SetString(PyExc_ValueError, "sign_oph: k >= 1 and a uint64 salt per slot");
        goto done;
    }
    if (shingle_buffers(&hv, &ov, &docs) < 0) goto done;
    result = PyByteArray_FromStringAndSize(NULL, docs * k * 4);
    if (!result) goto done;
    const uint64_t *hashes = hv.buf, *round_salts = rv.buf, *slot_salts = sv.buf;
    const int64_t *off = ov.buf;
    uint32_t *values = (uint32_t *)PyByteArray_AS_STRING(result);
    uint64_t slots = (uint64_t)k;
    for (Py_ssize_t d = 0; d < docs; d++) {
        uint32_t *v = values + d * k;
        const uint64_t *x = hashes + off[d];
        Py_ssize_t count = off[d + 1] - off[d], filled = 0;
        for (Py_ssize_t j = 0; j < k; j++) v[j] = SH_EMPTY;
        if (!count) continue;
        for (Py_ssize_t r = 0; r < rounds && filled < k; r++) {
            uint64_t salt = round_salts[r], prefix = (uint64_t)r << SH_VALUE_BITS;
            for (Py_ssize_t e = 0; e < count; e++) {
                uint64_t h = sh_fmix64(x[e] ^ salt);
                uint64_t slot = ((h >> 32) * slots) >> 32;
                uint32_t value = (uint32_t)((h & SH_VALUE_MASK) | prefix);
                if (value < v[slot]) {
                    filled += v[slot] == SH_EMPTY;
                    v[slot] = value;
                }
            }
        }
        if (filled == k) continue;
        for (Py_ssize_t j = 0; j < k; j++) {
            if (v[j] != SH_EMPTY) continue;
            uint64_t best = ~0ULL, salt = slot_salts[j];
            for (Py_ssize_t e = 0; e < count; e++) {
                uint64_t h = sh_fmix64(x[e] ^ salt) & SH_VALUE_MASK;
                if (h < best) best = h;
            }
            v[j] = (uint32_t)(best | ((uint64_t)rounds << SH_VALUE_BITS));
        }
    }
done:
    PyBuffer_Release(&hv);
    PyBuffer_Release(&ov);
    PyBuffer_Release(&rv);
    PyBuffer_Release(&sv);
    return result;
}

/* shingles._sign_kperm: slot j of a text is min over its shingles x of ((a1[j] * lo32(x) + a2[j] * hi32(x) + b[j])
 * mod 2**64) >> 32 (uint32; EMPTY_SLOT for a text without shingles). params: (3, k) uint64 rows a1, a2, b. */
static PyObject *sh_sign_kperm(PyObject *self, PyObject *args) {
    Py_buffer hv, ov, pv;
    Py_ssize_t k, docs;
    if (!PyArg_ParseTuple(args, "y*y*ny*", &hv, &ov, &k, &pv)) return NULL;
    PyObject *result = NULL;
    if (k < 1 || pv.len != 3 * k * 8) {
        PyErr_SetString(PyExc_ValueError, "sign_kperm: k >= 1 and (3, k) uint64 parameters");
        goto done;
    }
    if (shingle_buffers(&hv, &ov, &docs) < 0) goto done;
    result = PyByteArray_FromStringAndSize(NULL, docs * k * 4);
    if (!result) goto done;
    const uint64_t *hashes = hv.buf, *a1 = pv.buf, *a2 = a1 + k, *b = a2 + k;
    const int64_t *off = ov.buf;
    uint32_t *values = (uint32_t *)PyByteArray_AS_STRING(result);
    for (Py_ssize_t d = 0; d < docs; d++) {
        uint32_t *v = values + d * k;
        for (Py_ssize_t j = 0; j < k; j++) v[j] = SH_EMPTY;
        for (Py_ssize_t e = off[d]; e < off[d + 1]; e++) {
            uint64_t lo = hashes[e] & 0xFFFFFFFFULL, hi = hashes[e] >> 32;
            for (Py_ssize_t j = 0; j < k; j++) {
                uint32_t value = (uint32_t)((a1[j] * lo + a2[j] * hi + b[j]) >> 32);
                if (value < v[j]) v[j] = value;
            }
        }
    }
done:
    PyBuffer_Release(&hv);
    PyBuffer_Release(&ov);
    PyBuffer_Release(&pv);
    return result;
}

typedef struct { uint64_t key; Py_ssize_t at; } KeyAt;

static int key_at_order(const void *a, const void *b) {
    const KeyAt *x = a, *y = b;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    return x->at < y->at ? -1 : x->at > y->at;
}

/* shingles.anchor_keys: (keys int64, offsets int64) as bytearrays. A shingle below ``below`` is an anchor; each
 * two consecutive anchors of a text make the key fmix64(((first * BAND_BASE + ANCHOR_TAG) + second) * BAND_BASE)
 * >> 17; a text keeps its first ``limit`` keys and its last ``tail`` keys (those not among the first), then each
 * key's first occurrence, in text order. Without a tail the scan stops at the limit; with one, the last tail + 1
 * anchors are kept in a ring as the scan goes on to the text's end. */
static PyObject *sh_anchor_keys(PyObject *self, PyObject *args) {
    Py_buffer hv, ov;
    unsigned long long below;
    Py_ssize_t limit, docs, tail = 0;
    if (!PyArg_ParseTuple(args, "y*y*Kn|n", &hv, &ov, &below, &limit, &tail)) return NULL;
    PyObject *result = NULL;
    U64Vec out = {0};
    int64_t *offsets = NULL;
    uint64_t *keys = NULL, *ring = NULL;
    KeyAt *order = NULL;
    if (limit < 0 || tail < 0 || limit + tail < 1) {
        PyErr_SetString(PyExc_ValueError, "anchor_keys: limit, tail >= 0 and limit + tail >= 1");
        goto done;
    }
    if (shingle_buffers(&hv, &ov, &docs) < 0) goto done;
    Py_ssize_t room = limit + tail < 4096 ? limit + tail : 4096;  /* grows with the texts that have that many keys */
    offsets = PyMem_Malloc((size_t)(docs + 1) * sizeof(int64_t));
    keys = PyMem_Malloc((size_t)room * sizeof(uint64_t));
    ring = PyMem_Malloc((size_t)(tail + 1) * sizeof(uint64_t));
    if (!offsets || !keys || !ring) { PyErr_NoMemory(); goto done; }
    const uint64_t *hashes = hv.buf;
    const int64_t *off = ov.buf;
    offsets[0] = 0;
    for (Py_ssize_t d = 0; d < docs; d++) {
        Py_ssize_t m = 0, anchors = 0;
        uint64_t previous = 0;
        Py_ssize_t e = off[d];
        for (; e < off[d + 1] && m < limit; e++) {
            uint64_t x = hashes[e];
            if (x >= below) continue;
            if (anchors) {
                if (m == room) {
                    Py_ssize_t bigger = room * 2 < limit + tail ? room * 2 : limit + tail;
                    uint64_t *grown = PyMem_Realloc(keys, (size_t)bigger * sizeof(uint64_t));
                    if (!grown) { PyErr_NoMemory(); goto done; }
                    keys = grown;
                    room = bigger;
                }
                keys[m++] = sh_fmix64((previous * SH_BAND_BASE + SH_ANCHOR_TAG + x) * SH_BAND_BASE) >> SH_KEY_SHIFT;
            }
            if (tail) ring[anchors % (tail + 1)] = x;
            previous = x;
            anchors++;
        }
        if (tail) {
            for (; e < off[d + 1]; e++) {  /* the rest of the text: its anchors into the ring */
                uint64_t x = hashes[e];
                if (x >= below) continue;
                ring[anchors % (tail + 1)] = x;
                anchors++;
            }
            Py_ssize_t total = anchors > 0 ? anchors - 1 : 0;  /* the text's keys: key i joins anchors i and i + 1 */
            Py_ssize_t first = total - tail > m ? total - tail : m;
            if (m + (total - first) > room) {
                Py_ssize_t bigger = m + (total - first);
                uint64_t *grown = PyMem_Realloc(keys, (size_t)bigger * sizeof(uint64_t));
                if (!grown) { PyErr_NoMemory(); goto done; }
                keys = grown;
                room = bigger;
            }
            for (Py_ssize_t i = first; i < total; i++) {
                uint64_t a = ring[i % (tail + 1)], b = ring[(i + 1) % (tail + 1)];
                keys[m++] = sh_fmix64((a * SH_BAND_BASE + SH_ANCHOR_TAG + b) * SH_BAND_BASE) >> SH_KEY_SHIFT;
            }
        }
        if (u64_reserve(&out, m) < 0) goto done;
        if (m <= 64) {  /* each key's first occurrence, by looking back */
            for (Py_ssize_t i = 0; i < m; i++) {
                Py_ssize_t j = 0;
                while (j < i && keys[j] != keys[i]) j++;
                if (j == i) out.data[out.size++] = keys[i];
            }
        } else {  /* by sorting (key, place): the first of each run of equal keys stays */
            KeyAt *grown = PyMem_Realloc(order, (size_t)m * sizeof(KeyAt));
            if (!grown) { PyErr_NoMemory(); goto done; }
            order = grown;
            for (Py_ssize_t i = 0; i < m; i++) order[i] = (KeyAt){keys[i], i};
            qsort(order, (size_t)m, sizeof(KeyAt), key_at_order);
            unsigned char *repeat = (unsigned char *)PyMem_Calloc((size_t)m, 1);
            if (!repeat) { PyErr_NoMemory(); goto done; }
            for (Py_ssize_t i = 1; i < m; i++) repeat[order[i].at] = order[i].key == order[i - 1].key;
            for (Py_ssize_t i = 0; i < m; i++) if (!repeat[i]) out.data[out.size++] = keys[i];
            PyMem_Free(repeat);
        }
        offsets[d + 1] = out.size;
    }
    result = values_and_offsets(&out, offsets, docs);
done:
    PyBuffer_Release(&hv);
    PyBuffer_Release(&ov);
    PyMem_Free(out.data);
    PyMem_Free(offsets);
    PyMem_Free(keys);
    PyMem_Free(ring);
    PyMem_Free(order);
    return result;
}

/* Ascending sort of uint64 values: quicksort (median of three, Hoare's partition: runs of equal values split
 * evenly), insertion sort below 24 values, heapsort past a depth of 2 log2(n) (no quadratic case). */
static void sift_down(uint64_t *a, Py_ssize_t at, Py_ssize_t n) {
    uint64_t x = a[at];
    for (Py_ssize_t child; (child = 2 * at + 1) < n; at = child) {
        if (child + 1 < n && a[child + 1] > a[child]) child++;
        if (a[child] <= x) break;
        a[at] = a[child];
    }
    a[at] = x;
}

static void sort_u64(uint64_t *a, Py_ssize_t n, int depth) {
    while (n > 24) {
        if (depth-- == 0) {
            for (Py_ssize_t i = n / 2 - 1; i >= 0; i--) sift_down(a, i, n);
            for (Py_ssize_t i = n - 1; i > 0; i--) {
                uint64_t t = a[0]; a[0] = a[i]; a[i] = t;
                sift_down(a, 0, i);
            }
            return;
        }
        uint64_t x = a[0], y = a[n / 2], z = a[n - 1];
        uint64_t pivot = x < y ? (y < z ? y : (x < z ? z : x)) : (x < z ? x : (y < z ? z : y));
        Py_ssize_t i = -1, j = n;
        for (;;) {
            do i++; while (a[i] < pivot);
            do j--; while (a[j] > pivot);
            if (i >= j) break;
            uint64_t t = a[i]; a[i] = a[j]; a[j] = t;
        }
        /* a[0..j] <= pivot <= a[j+1..n) */
        if (j + 1 < n - j - 1) { sort_u64(a, j + 1, depth); a += j + 1; n -= j + 1; }
        else { sort_u64(a + j + 1, n - j - 1, depth); n = j + 1; }
    }
    for (Py_ssize_t i = 1; i < n; i++) {
        uint64_t x = a[i];
        Py_ssize_t j = i;
        for (; j > 0 && a[j - 1] > x; j--) a[j] = a[j - 1];
        a[j] = x;
    }
}

static int sort_depth(Py_ssize_t n) {
    int depth = 0;
    while (n > 1) { n >>= 1; depth += 2; }
    return depth;
}

/* Sorted distinct values of a[0..n) moved to its front; their count. */
static Py_ssize_t sort_distinct(uint64_t *a, Py_ssize_t n) {
    if (n < 2) return n;
    sort_u64(a, n, sort_depth(n));
    Py_ssize_t kept = 1;
    for (Py_ssize_t i = 1; i < n; i++) if (a[i] != a[kept - 1]) a[kept++] = a[i];
    return kept;
}

/* shingles.sample_shingles: (hashes uint64, offsets int64) as bytearrays: each text's ``size`` smallest distinct
 * shingle hashes, ascending. A text of many shingles sorts only those at most a cut where about 1.25 ``size`` + 32
 * of them are expected to fall (its hashes are uniform: fewer than ``size`` there is 5 standard deviations
 * away), and all of them when fewer than ``size`` distinct values fall there. */
static PyObject *sh_sample_shingles(PyObject *self, PyObject *args) {
    Py_buffer hv, ov;
    Py_ssize_t size, docs;
    if (!PyArg_ParseTuple(args, "y*y*n", &hv, &ov, &size)) return NULL;
    PyObject *result = NULL;
    U64Vec out = {0}, scratch = {0};
    int64_t *offsets = NULL;
    if (size < 1) { PyErr_SetString(PyExc_ValueError, "sample_shingles: size >= 1"); goto done; }
    if (shingle_buffers(&hv, &ov, &docs) < 0) goto done;
    offsets = PyMem_Malloc((size_t)(docs + 1) * sizeof(int64_t));
    if (!offsets) { PyErr_NoMemory(); goto done; }
    const uint64_t *hashes = hv.buf;
    const int64_t *off = ov.buf;
    offsets[0] = 0;
    for (Py_ssize_t d = 0; d < docs; d++) {
        const uint64_t *x = hashes + off[d];
        Py_ssize_t count = off[d + 1] - off[d], kept = -1;
        scratch.size = 0;
        if (u64_reserve(&scratch, count) < 0) goto done;
        uint64_t *s = scratch.data;
        double share = (1.25 * (double)size + 32.0) / (double)(count ? count : 1);
        if (share < 0.75) {
            uint64_t largest = 0;
            for (Py_ssize_t e = 0; e < count; e++) if (x[e] > largest) largest = x[e];
            double at = (double)largest * share;
            uint64_t cut = at >= 18446744073709551615.0 ? ~0ULL : (uint64_t)at;
            Py_ssize_t m = 0;
            for (Py_ssize_t e = 0; e < count; e++) if (x[e] <= cut) s[m++] = x[e];
            kept = sort_distinct(s, m);
            if (kept < size) kept = -1;  /* too few below the cut: every value is needed */
        }
        if (kept < 0) {
            memcpy(s, x, (size_t)count * sizeof(uint64_t));
            kept = sort_distinct(s, count);
        }
        if (kept > size) kept = size;
        if (u64_reserve(&out, kept) < 0) goto done;
        memcpy(out.data + out.size, s, (size_t)kept * sizeof(uint64_t));
        out.size += kept;
        offsets[d + 1] = out.size;
    }
    result = values_and_offsets(&out, offsets, docs);
done:
    PyBuffer_Release(&hv);
    PyBuffer_Release(&ov);
    PyMem_Free(out.data);
    PyMem_Free(scratch.data);
    PyMem_Free(offsets);
    return result;
}

/* --- the JSON line (cli.JSON_LINE) ---------------------------------------------------------------------------------
 * json_string(text) -> str: json.encoder.encode_basestring(text) (what json.dumps(..., ensure_ascii=False) makes of a
 * string): the text in double quotes, '"' and '\\' backslash-escaped, \b \f \n \r \t as such, the other characters
 * below U+0020 as \u00xx (lower-case hex), every other character as it is. The same two passes as CPython's (size,
 * then copy), each a loop over one character width with a table look per character, not a read of any width. */
static const unsigned char json_extra[128] = {  /* characters more than the one each character takes */
    5, 5, 5, 5, 5, 5, 5, 5, 1, 1, 1, 5, 1, 1, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5,
    0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};

#define JSON_EXTRA(c) ((c) < 128 ? json_extra[(c)] : 0)

#define JSON_WRITE(TYPE)                                                                                              \
    do {                                                                                                              \
        const TYPE *in = (const TYPE *)data;                                                                          \
        TYPE *o = (TYPE *)PyUnicode_DATA(out);                                                                        \
        *o++ = '"';                                                                                                   \
        for (Py_ssize_t i = 0; i < n; i++) {                                                                          \
            Py_UCS4 c = in[i];                                                                                        \
            if (!JSON_EXTRA(c)) { *o++ = (TYPE)c; continue; }                                                         \
            *o++ = '\\';                                                                                              \
            switch (c) {                                                                                              \
                case '\\': case '"': *o++ = (TYPE)c; break;                                                           \
                case '\b': *o++ = 'b'; break;                                                                         \
                case '\f': *o++ = 'f'; break;                                                                         \
                case '\n': *o++ = 'n'; break;                                                                         \
                case '\r': *o++ = 'r'; break;                                                                         \
                case '\t': *o++ = 't'; break;                                                                         \
                default:                                                                                              \
                    *o++ = 'u'; *o++ = '0'; *o++ = '0';                                                               \
                    *o++ = (TYPE)"0123456789abcdef"[c >> 4]; *o++ = (TYPE)"0123456789abcdef"[c & 0xf];                \
            }                                                                                                         \
        }                                                                                                             \
        *o = '"';                                                                                                     \
    } while (0)

static PyObject *json_string(PyObject *self, PyObject *text) {
    if (!PyUnicode_Check(text)) {
        PyErr_Format(PyExc_TypeError, "first argument must be a string, not %.80s", Py_TYPE(text)->tp_name);
        return NULL;
    }
    if (PyUnicode_READY(text) < 0) return NULL;
    Py_ssize_t n = PyUnicode_GET_LENGTH(text), extra = 0;
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    if (kind == PyUnicode_1BYTE_KIND) {
        const Py_UCS1 *in = data;
        for (Py_ssize_t i = 0; i < n; i++) extra += JSON_EXTRA(in[i]);
    } else if (kind == PyUnicode_2BYTE_KIND) {
        const Py_UCS2 *in = data;
        for (Py_ssize_t i = 0; i < n; i++) extra += JSON_EXTRA(in[i]);
    } else {
        const Py_UCS4 *in = data;
        for (Py_ssize_t i = 0; i < n; i++) extra += JSON_EXTRA(in[i]);
    }
    if (n > PY_SSIZE_T_MAX - 2 - extra) {
        PyErr_SetString(PyExc_OverflowError, "string is too long to escape");
        return NULL;
    }
    PyObject *out = PyUnicode_New(n + extra + 2, PyUnicode_MAX_CHAR_VALUE(text));
    if (out == NULL) return NULL;
    if (kind == PyUnicode_1BYTE_KIND) {
        if (!extra) {  /* nothing to escape: the text as it is, quoted */
            Py_UCS1 *o = PyUnicode_1BYTE_DATA(out);
            o[0] = '"';
            memcpy(o + 1, data, (size_t)n);
            o[n + 1] = '"';
        } else {
            JSON_WRITE(Py_UCS1);
        }
    } else if (kind == PyUnicode_2BYTE_KIND) {
        JSON_WRITE(Py_UCS2);
    } else {
        JSON_WRITE(Py_UCS4);
    }
    return out;
}

static PyMethodDef methods[] = {
    {"markup_counts", markup_counts, METH_O,
     "markup_counts(data) -> (start tags, most attributes of one, attributes): parse.markup_counts."},
    {"lean_markup", lean_markup, METH_O,
     "lean_markup(data) -> bytes: data without the content of elements parse.py strips (lean_left_out) where the rest "
     "of the tree stays libxml2's: parse.lean_markup."},
    {"lean_markup_bare", lean_markup_bare, METH_O,
     "lean_markup_bare(data) -> bytes: lean_markup(data) with the start tags of lean_bare's elements without their "
     "attributes: parse.lean_markup where the parser registers no ids."},
    {"utf8_controls_to_space", utf8_controls_to_space, METH_O,
     "utf8_controls_to_space(text) -> bytes: parse.clean_text's encode-and-translate step."},
    {"tune_heap", tune_heap, METH_NOARGS,
     "tune_heap() -> bool: glibc's fast bins off (mallopt M_MXFAST 0), for page work; False where not glibc."},
    {"xml_heap", xml_heap, METH_O,
     "xml_heap(path) -> bool: the libxml2 of the loaded module at path allocates from chunks of its own (once)."},
    {"xml_heap_chunks", xml_heap_chunks, METH_NOARGS,
     "xml_heap_chunks() -> (resident, given_back, made): xml_heap's free chunks kept in memory and given back to the "
     "system, and the chunks it has made."},
    {"has_controls", has_controls, METH_O,
     "has_controls(data) -> bool: parse.has_controls (an ASCII control character but tab, newline, return)."},
    {"text_matrix", text_matrix, METH_VARARGS,
     "text_matrix(blocks, title_words, table, fill, rows=None) -> bytearray | None: features._text_columns' float64 "
     "matrix"},
    {"ensemble", ensemble, METH_VARARGS,
     "ensemble(packed, inputs, out, rows, width, hidden, networks, portable=False): ann.predict_mean of a packed "
     "ensemble."},
    {"tree_inside", tree_inside, METH_VARARGS, "tree_inside(parent, marked, n) -> bytes"},
    {"tree_sum_up", tree_sum_up, METH_VARARGS, "tree_sum_up(parent, depth, values, n) -> bytes | None"},
    {"block_features", block_features, METH_VARARGS,
     "block_features(text_columns, parent, depth, owner, tag_bits, class_bits, hint, blocks, owner_columns, sizes, "
     "constants) -> bytearray | None: features.block_features' float64 matrix"},
    {"context_features", context_features, METH_VARARGS,
     "context_features(scores, chars, parent, owner, levels, widths, min_score) -> bytearray | None: "
     "features.context_features' float64 matrix"},
    {"two_stage", two_stage, METH_VARARGS,
     "two_stage(first, second, features, chars, parent, owner, allowed, rows, out, hidden, networks, levels, "
     "widths, min_score) -> out | None: fallback.stage_scores' two ensembles and context columns in one call."},
    {"first_places", first_places, METH_VARARGS,
     "first_places(data, needles, start=0) -> list[int]: [data.find(needle, start) for needle in needles] (metadata)."},
    {"first_place_folded", first_place_folded, METH_VARARGS,
     "first_place_folded(data, needle, start=0) -> int: the first place of needle at or after start, ASCII letters "
     "in either case, or -1 (metadata)."},
    {"json_string", json_string, METH_O,
     "json_string(text) -> str: json.encoder.encode_basestring(text), the string as json.dumps(..., "
     "ensure_ascii=False) writes it (cli.JSON_LINE)."},
    {"shingle_hashes", sh_shingle_hashes, METH_VARARGS,
     "shingle_hashes(texts, token_bits, numeric_bits, chars, n, keep_numbers, hash_bits) -> (hashes, offsets): "
     "shingles.shingle_hashes as uint64 and int64 bytearrays."},
    {"sign_oph", sh_sign_oph, METH_VARARGS,
     "sign_oph(hashes, offsets, k, round_salts, slot_salts) -> bytearray: shingles._sign_oph's uint32 values."},
    {"sign_kperm", sh_sign_kperm, METH_VARARGS,
     "sign_kperm(hashes, offsets, k, params) -> bytearray: shingles._sign_kperm's uint32 values."},
    {"anchor_keys", sh_anchor_keys, METH_VARARGS,
     "anchor_keys(hashes, offsets, below, limit[, tail]) -> (keys, offsets): shingles.anchor_keys as int64 bytearrays."},
    {"static_match", static_match, METH_VARARGS,
     "static_match(vector, set, table, size, out) -> int: extract.match_static's members (into out) and LCS length."},
    {"sample_shingles", sh_sample_shingles, METH_VARARGS,
     "sample_shingles(hashes, offsets, size) -> (hashes, offsets): shingles.sample_shingles as bytearrays."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_numeric", NULL, -1, methods};

PyMODINIT_FUNC PyInit__numeric(void) {
#ifdef FORWARD_AVX2
    __builtin_cpu_init();
    has_avx2_fma = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    has_avx2 = __builtin_cpu_supports("avx2");
#endif
    lean_init();
    lower_name = PyUnicode_InternFromString("lower");
    text_name = PyUnicode_InternFromString("text");
    link_chars_name = PyUnicode_InternFromString("link_chars");
    markup_bytes_name = PyUnicode_InternFromString("markup_bytes");
    tag_name = PyUnicode_InternFromString("tag");
    if (!lower_name || !text_name || !link_chars_name || !markup_bytes_name || !tag_name) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    PyObject *left_out = PyList_New(0);  /* lean_left_out: the elements whose content lean_markup may leave out */
    if (!left_out) { Py_DECREF(m); return NULL; }
    for (int list = 0; list < 2; list++)
        for (const char *const *name = list ? lean_content : lean_raw_cut; *name; name++) {
            PyObject *item = PyUnicode_FromString(*name);
            if (!item || PyList_Append(left_out, item) < 0) { Py_XDECREF(item); Py_DECREF(left_out); Py_DECREF(m); return NULL; }
            Py_DECREF(item);
        }
    PyObject *names = PyList_AsTuple(left_out);
    Py_DECREF(left_out);
    if (!names || PyModule_AddObject(m, "lean_left_out", names) < 0) { Py_XDECREF(names); Py_DECREF(m); return NULL; }
    Py_ssize_t bare_count = 0;
    while (lean_bare[bare_count]) bare_count++;
    PyObject *bare = PyTuple_New(bare_count);  /* lean_bare: the elements lean_markup_bare leaves without attributes */
    if (!bare) { Py_DECREF(m); return NULL; }
    for (Py_ssize_t k = 0; k < bare_count; k++) {
        PyObject *item = PyUnicode_FromString(lean_bare[k]);
        if (!item) { Py_DECREF(bare); Py_DECREF(m); return NULL; }
        PyTuple_SET_ITEM(bare, k, item);
    }
    if (PyModule_AddObject(m, "lean_bare", bare) < 0) { Py_DECREF(bare); Py_DECREF(m); return NULL; }
    return m;
}
