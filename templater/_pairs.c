/* templater._pairs: the near-duplicate index's verification measure of many candidate pairs in one call.

pair_measures(hashes, offsets, a, b, width, sample, min_hashes, jaccard) -> bytes (float64, one per pair; two with
    jaccard = 2)

``hashes``: every set's ``comparable_set`` array (sorted, distinct; ``width`` bytes a hash: 4 or 8) end to end;
``offsets`` (int64): set i is hashes[offsets[i]:offsets[i + 1]]; ``a``, ``b`` (int64): the pairs' set numbers.
The value of a pair is what ``templater.shingles.set_similarity`` (``set_jaccard`` when ``jaccard``) gives for the
two sets with verify "sample" (``sample`` > 0: bottom-``sample`` samples, cut at the smaller largest hash of a full
sample; ``min_hashes``: below it a containment estimate is no verdict, 0.0) or verify "exact" (``sample`` == 0):
containment |A & B| / min(|A|, |B|), or Jaccard |A & B| / |A | B|; two empty sets are identical (1.0), one empty set
shares nothing (0.0). The same integer counts and the same one division as the Python functions, which stay the
definition and the test oracle (tests/test_lsh.py); a merge of the two sorted arrays instead of a binary search of
every hash, without numpy's per-call cost (about 20 numpy calls a pair in Python). With ``jaccard`` = 2 both, from
one merge of the two sets (containment's value of every pair, then the Jaccard of every pair).

The band index's kernels (store/lsh.py keeps the numpy definitions, the fallback without this build, which a test holds
these to bit for bit):
bloom_has(bits, keys, hashes) -> bytes (one 0/1 byte a key): whether the blocked Bloom filter ``bits`` (uint8, whole
    512-bit blocks) may hold each int64 key (``store.lsh._bloom_positions``: the block is the key's top 32 of 47 bits
    scaled to the blocks, the bits 9-bit slices of the key times MIX0);
bloom_add(bits, keys, hashes): set the keys' bits in ``bits`` (in place);
word_has(words, keys, hashes) / word_add(words, keys, hashes): the same for the recent runs' filter of 64-bit words
    (``store.lsh._WordFilter``: the word chosen by the key's top bits, its bits 6-bit slices of the key times MIX0);
merge_rows(keys, docs, out_keys, out_docs): the (key, doc) runs ``keys[i]``/``docs[i]`` (each sorted by key then doc)
    merged into ``out_keys``/``out_docs`` in (key, doc) order, as ``np.lexsort((docs, keys))`` orders them;
segment_blocks(bits, fences, keys, hashes, cap, page_base) -> (keys, blocks): ``store.lsh._Segment.blocks_of`` of
    sorted distinct keys in one pass (the filter's probe, the fences' searches, the blocks' union);
gather_rows(queries, keys, docs) -> rows: the (key, doc) rows of sorted runs whose keys are among sorted query keys
    (``store.lsh._gather`` of each run, stacked), as an (n, 2) int64 array's bytes. */

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

/* How many hashes two sorted distinct arrays share: a merge without branches (the next of each array is taken as a
comparison's result, not as a jump the processor must guess: half the guesses fail on two sets that share half their
hashes). */
#define SHARED(name, type)                                                                                            \
    static Py_ssize_t name(const char *pa, Py_ssize_t na, const char *pb, Py_ssize_t nb) {                           \
        Py_ssize_t i = 0, j = 0, inter = 0;                                                                           \
        while (i < na && j < nb) {                                                                                    \
            type x, y;                                                                                                \
            memcpy(&x, pa + i * sizeof(type), sizeof(type));                                                          \
            memcpy(&y, pb + j * sizeof(type), sizeof(type));                                                          \
            inter += x == y;                                                                                          \
            i += x <= y;                                                                                              \
            j += y <= x;                                                                                              \
        }                                                                                                             \
        return inter;                                                                                                 \
    }
SHARED(shared4, uint32_t)
SHARED(shared8, uint64_t)

/* What both measures of a pair count: the two sets' sizes as compared (*na, *nb: cut at the smaller largest hash of a
full sample) and their shared hashes (*inter). Returns 1 when a containment estimate would rest on fewer than
``min_hashes`` hashes of a sample (no verdict: containment 0.0; Jaccard is counted all the same), else 0. */
static int pair_counts(const char *pa, Py_ssize_t *na_, const char *pb, Py_ssize_t *nb_, int width, Py_ssize_t sample,
                       Py_ssize_t min_hashes, Py_ssize_t *inter_) {
    Py_ssize_t na = *na_, nb = *nb_;
    int short_sample = 0;
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
            /* min((below_a, len_a), (below_b, len_b)) as Python compares tuples */
            int first = below_a < below_b || (below_a == below_b && na <= nb);
            Py_ssize_t small = first ? below_a : below_b, whole = first ? na : nb;
            short_sample = small < min_hashes && small < whole;
            na = below_a;
            nb = below_b;
        }
    }
    Py_ssize_t inter = width == 4 ? shared4(pa, na, pb, nb) : shared8(pa, na, pb, nb);
    *na_ = na;
    *nb_ = nb;
    *inter_ = inter;
    return short_sample;
}

/* containment (jaccard = 0) or Jaccard (jaccard = 1) from ``pair_counts`` */
static double ratio(Py_ssize_t na, Py_ssize_t nb, Py_ssize_t inter, int short_sample, int jaccard) {
    if (!jaccard && short_sample)
        return 0.0;
    if (na == 0 || nb == 0)
        return na == nb ? 1.0 : 0.0;
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
    if ((width != 4 && width != 8) || jaccard < 0 || jaccard > 2 || hashes.len % width || offsets.len % 8 ||
        offsets.len < 8 || a.len % 8 || a.len != b.len) {
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
    out = PyBytes_FromStringAndSize(NULL, (jaccard == 2 ? 2 : 1) * count * 8);
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
        Py_ssize_t na = off[x + 1] - off[x], nb = off[y + 1] - off[y], inter;
        int short_sample = pair_counts(base + off[x] * width, &na, base + off[y] * width, &nb, width, sample,
                                       min_hashes, &inter);
        if (jaccard == 2) {  /* both, from one count: containment values, then Jaccard values */
            values[k] = ratio(na, nb, inter, short_sample, 0);
            values[count + k] = ratio(na, nb, inter, short_sample, 1);
        } else {
            values[k] = ratio(na, nb, inter, short_sample, jaccard);
        }
    }
done:
    PyBuffer_Release(&hashes);
    PyBuffer_Release(&offsets);
    PyBuffer_Release(&a);
    PyBuffer_Release(&b);
    return out;
}

/* --- the band index's kernels ------------------------------------------------------------------------------------ */

#define MIX0 0x9E3779B97F4A7C15ULL
#define BLOCK_BITS 512
#define PREFETCH_AHEAD 8

/* Whether the blocked Bloom filter ``b`` of ``blocks`` blocks may hold key ``i`` of the ``n`` keys ``k``, the block of
the key a few ahead prefetched (its cache miss overlaps this key's probe). */
static inline int bloom_probe(const uint8_t *b, uint64_t blocks, const uint64_t *k, Py_ssize_t i, Py_ssize_t n,
                              int hashes) {
    if (i + PREFETCH_AHEAD < n)
        __builtin_prefetch(b + (((((k[i + PREFETCH_AHEAD] >> 15) & 0xFFFFFFFFULL) * blocks) >> 32) * BLOCK_BITS >> 3));
    uint64_t u = k[i], base = ((((u >> 15) & 0xFFFFFFFFULL) * blocks) >> 32) * BLOCK_BITS, mixed = u * MIX0;
    for (int h = 0; h < hashes; h++) {
        uint64_t at = base + ((mixed >> (55 - 9 * h)) & 511);
        if (!((b[at >> 3] >> (at & 7)) & 1))
            return 0;
    }
    return 1;
}

static PyObject *bloom_has(PyObject *self, PyObject *args) {
    Py_buffer bits, keys;
    int hashes;
    if (!PyArg_ParseTuple(args, "y*y*i", &bits, &keys, &hashes))
        return NULL;
    PyObject *out = NULL;
    if (keys.len % 8 || bits.len % (BLOCK_BITS / 8) || bits.len == 0 || hashes < 1 || hashes > 6) {
        PyErr_SetString(PyExc_ValueError, "bloom_has: bad buffer sizes");
        goto done;
    }
    Py_ssize_t n = keys.len / 8;
    out = PyBytes_FromStringAndSize(NULL, n);
    if (!out)
        goto done;
    char *found = PyBytes_AS_STRING(out);
    const uint8_t *b = (const uint8_t *)bits.buf;
    const uint64_t *k = (const uint64_t *)keys.buf;
    uint64_t blocks = (uint64_t)bits.len * 8 / BLOCK_BITS;
    for (Py_ssize_t i = 0; i < n; i++)
        found[i] = (char)bloom_probe(b, blocks, k, i, n, hashes);
done:
    PyBuffer_Release(&bits);
    PyBuffer_Release(&keys);
    return out;
}

static PyObject *bloom_add(PyObject *self, PyObject *args) {
    Py_buffer bits, keys;
    int hashes;
    if (!PyArg_ParseTuple(args, "w*y*i", &bits, &keys, &hashes))
        return NULL;
    int ok = !(keys.len % 8 || bits.len % (BLOCK_BITS / 8) || bits.len == 0 || hashes < 1 || hashes > 6);
    if (ok) {
        uint8_t *b = (uint8_t *)bits.buf;
        const uint64_t *k = (const uint64_t *)keys.buf;
        uint64_t blocks = (uint64_t)bits.len * 8 / BLOCK_BITS;
        for (Py_ssize_t i = 0, n = keys.len / 8; i < n; i++) {
            uint64_t u = k[i], base = ((((u >> 15) & 0xFFFFFFFFULL) * blocks) >> 32) * BLOCK_BITS, mixed = u * MIX0;
            for (int h = 0; h < hashes; h++) {
                uint64_t at = base + ((mixed >> (55 - 9 * h)) & 511);
                b[at >> 3] |= (uint8_t)(1u << (at & 7));
            }
        }
    }
    PyBuffer_Release(&bits);
    PyBuffer_Release(&keys);
    if (!ok) {
        PyErr_SetString(PyExc_ValueError, "bloom_add: bad buffer sizes");
        return NULL;
    }
    Py_RETURN_NONE;
}

static inline void word_at(uint64_t u, uint64_t words, int hashes, uint64_t *word, uint64_t *mask) {
    uint64_t mixed = u * MIX0, m = 0;
    *word = (((u >> 15) & 0xFFFFFFFFULL) * words) >> 32;
    for (int h = 0; h < hashes; h++)
        m |= 1ULL << ((mixed >> (58 - 6 * h)) & 63);
    *mask = m;
}

static PyObject *word_filter(PyObject *args, int add) {
    Py_buffer words, keys;
    int hashes;
    if (!PyArg_ParseTuple(args, add ? "w*y*i" : "y*y*i", &words, &keys, &hashes))
        return NULL;
    PyObject *out = NULL;
    if (keys.len % 8 || words.len % 8 || words.len == 0 || hashes < 1 || hashes > 9) {
        PyErr_SetString(PyExc_ValueError, "word filter: bad buffer sizes");
        goto done;
    }
    Py_ssize_t n = keys.len / 8;
    uint64_t *w = (uint64_t *)words.buf, count = (uint64_t)words.len / 8, word, mask;
    const uint64_t *k = (const uint64_t *)keys.buf;
    if (add) {
        for (Py_ssize_t i = 0; i < n; i++) {
            if (i + PREFETCH_AHEAD < n) /* the word of a key a few ahead (a random word of a 4 MiB filter) */
                __builtin_prefetch(w + ((((k[i + PREFETCH_AHEAD] >> 15) & 0xFFFFFFFFULL) * count) >> 32), 1);
            word_at(k[i], count, hashes, &word, &mask);
            w[word] |= mask;
        }
        out = Py_None;
        Py_INCREF(out);
        goto done;
    }
    out = PyBytes_FromStringAndSize(NULL, n);
    if (!out)
        goto done;
    char *found = PyBytes_AS_STRING(out);
    for (Py_ssize_t i = 0; i < n; i++) {
        if (i + PREFETCH_AHEAD < n)
            __builtin_prefetch(w + ((((k[i + PREFETCH_AHEAD] >> 15) & 0xFFFFFFFFULL) * count) >> 32));
        word_at(k[i], count, hashes, &word, &mask);
        found[i] = (w[word] & mask) == mask;
    }
done:
    PyBuffer_Release(&words);
    PyBuffer_Release(&keys);
    return out;
}

static PyObject *word_has(PyObject *self, PyObject *args) { return word_filter(args, 0); }
static PyObject *word_add(PyObject *self, PyObject *args) { return word_filter(args, 1); }

/* Merge of sorted (key, doc) runs: pairs of runs merged in rounds (two runs, then their results, ...), each merge of
two runs without branches on the rows (the next row of each run is taken as a comparison's result, not a jump the
processor must guess: keys are random, so a heap's or a branching merge's guesses fail half the time); a row of the
second run goes first only when it is below the first run's, so equal rows keep their runs' order. */
typedef struct {
    const int64_t *keys, *docs;
    Py_ssize_t n;
} Span;

static Py_ssize_t merge_two(Span a, Span b, int64_t *out_keys, int64_t *out_docs) {
    Py_ssize_t i = 0, j = 0, w = 0;
    while (i < a.n && j < b.n) {
        int64_t ka = a.keys[i], kb = b.keys[j], da = a.docs[i], db = b.docs[j];
        int take_b = (kb < ka) | ((kb == ka) & (db < da));
        out_keys[w] = take_b ? kb : ka;
        out_docs[w] = take_b ? db : da;
        w++;
        j += take_b;
        i += 1 - take_b;
    }
    memcpy(out_keys + w, a.keys + i, (size_t)(a.n - i) * 8);
    memcpy(out_docs + w, a.docs + i, (size_t)(a.n - i) * 8);
    w += a.n - i;
    memcpy(out_keys + w, b.keys + j, (size_t)(b.n - j) * 8);
    memcpy(out_docs + w, b.docs + j, (size_t)(b.n - j) * 8);
    return w + b.n - j;
}

/* Merge ``count`` spans into out_keys/out_docs (``total`` rows), in rounds through ``spare`` (2 * total int64, or
NULL when count <= 2): each round writes into the buffer the last round's results are not in, the first one chosen
so that the last round writes into the output. */
static void merge_spans(Span *spans, Py_ssize_t count, Py_ssize_t total, int64_t *out_keys, int64_t *out_docs,
                        int64_t *spare) {
    int rounds = 0;
    for (Py_ssize_t left = count; left > 1; left = (left + 1) / 2)
        rounds++;
    if (rounds == 0) {
        if (count == 1) {
            memcpy(out_keys, spans[0].keys, (size_t)spans[0].n * 8);
            memcpy(out_docs, spans[0].docs, (size_t)spans[0].n * 8);
        }
        return;
    }
    int64_t *bufs[2][2] = {{out_keys, out_docs}, {spare, spare ? spare + total : NULL}};
    int target = rounds % 2 ? 0 : 1;  /* (the last round, rounds - 1 after this one, writes into bufs[0]) */
    while (count > 1) {
        int64_t *keys = bufs[target][0], *docs = bufs[target][1];
        Py_ssize_t w = 0, made = 0;
        for (Py_ssize_t i = 0; i < count; i += 2) {
            Span next = {keys + w, docs + w, 0};
            if (i + 1 < count) {
                next.n = merge_two(spans[i], spans[i + 1], keys + w, docs + w);
            } else {
                memcpy(keys + w, spans[i].keys, (size_t)spans[i].n * 8);
                memcpy(docs + w, spans[i].docs, (size_t)spans[i].n * 8);
                next.n = spans[i].n;
            }
            w += next.n;
            spans[made++] = next;
        }
        count = made;
        target ^= 1;
    }
}

static PyObject *merge_rows(PyObject *self, PyObject *args) {
    PyObject *key_list, *doc_list;
    Py_buffer out_keys, out_docs;
    if (!PyArg_ParseTuple(args, "O!O!w*w*", &PyList_Type, &key_list, &PyList_Type, &doc_list, &out_keys, &out_docs))
        return NULL;
    Py_ssize_t count = PyList_GET_SIZE(key_list), total = 0, filled = 0, live = 0;
    Py_buffer *views = NULL;
    Span *spans = NULL;
    int64_t *spare = NULL;
    int ok = 0;
    if (count != PyList_GET_SIZE(doc_list) || count > 1 << 20) {
        PyErr_SetString(PyExc_ValueError, "merge_rows: as many key runs as doc runs");
        goto done;
    }
    views = PyMem_Calloc(2 * count + 1, sizeof(Py_buffer));
    spans = PyMem_Calloc(count + 1, sizeof(Span));
    if (!views || !spans) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        if (PyObject_GetBuffer(PyList_GET_ITEM(key_list, i), &views[2 * i], PyBUF_SIMPLE) < 0)
            goto done;
        filled = 2 * i + 1;
        if (PyObject_GetBuffer(PyList_GET_ITEM(doc_list, i), &views[2 * i + 1], PyBUF_SIMPLE) < 0)
            goto done;
        filled = 2 * i + 2;
        if (views[2 * i].len != views[2 * i + 1].len || views[2 * i].len % 8) {
            PyErr_SetString(PyExc_ValueError, "merge_rows: a run's keys and docs differ in length");
            goto done;
        }
        Py_ssize_t n = views[2 * i].len / 8;
        if (n)  /* (empty runs take no part) */
            spans[live++] = (Span){views[2 * i].buf, views[2 * i + 1].buf, n};
        total += n;
    }
    if (out_keys.len != total * 8 || out_docs.len != total * 8) {
        PyErr_SetString(PyExc_ValueError, "merge_rows: the output holds as many rows as the runs");
        goto done;
    }
    if (live > 2 && !(spare = PyMem_Malloc((size_t)total * 16 + 8))) {
        PyErr_NoMemory();
        goto done;
    }
    merge_spans(spans, live, total, out_keys.buf, out_docs.buf, spare);
    ok = 1;
done:
    for (Py_ssize_t i = 0; i < filled; i++)
        PyBuffer_Release(&views[i]);
    PyMem_Free(views);
    PyMem_Free(spans);
    PyMem_Free(spare);
    PyBuffer_Release(&out_keys);
    PyBuffer_Release(&out_docs);
    if (!ok)
        return NULL;
    Py_RETURN_NONE;
}

/* The blocks of a segment that a lookup of sorted distinct keys reads (``store.lsh._Segment.blocks_of``): the keys
its filter may hold (``bloom_has``), and for each the blocks from the one before its first key's fence (the key's
rows may begin there) to the last whose fence is at most the key, with ``cap`` (>= 0) at most ``cap`` blocks past
the first for keys below ``page_base``; the keys with a block and the distinct blocks in order. Keys rise, so do
both ends of their block spans: the union is made as they come. Returns None when the keys do not rise. */
static Py_ssize_t lower_bound(const int64_t *a, Py_ssize_t low, Py_ssize_t high, int64_t key, int right) {
    while (low < high) {
        Py_ssize_t mid = low + (high - low) / 2;
        if (right ? a[mid] <= key : a[mid] < key)
            low = mid + 1;
        else
            high = mid;
    }
    return low;
}

/* ``buffer`` of ``*room`` items of ``width`` bytes made twice as large (``*room`` doubled); NULL, the buffer freed and
MemoryError set, when there is no memory. */
static int64_t *grown(int64_t *buffer, Py_ssize_t *room, size_t width) {
    int64_t *made = PyMem_Realloc(buffer, (size_t)*room * 2 * width);
    if (!made) {
        PyMem_Free(buffer);
        PyErr_NoMemory();
        return NULL;
    }
    *room *= 2;
    return made;
}

static PyObject *segment_blocks(PyObject *self, PyObject *args) {
    Py_buffer bits, fences, keys;
    int hashes;
    long long cap, page_base;
    if (!PyArg_ParseTuple(args, "y*y*y*iLL", &bits, &fences, &keys, &hashes, &cap, &page_base))
        return NULL;
    PyObject *out = NULL, *sought = NULL, *blocks = NULL;
    int64_t *sought_at = NULL, *block_at = NULL;
    if (keys.len % 8 || fences.len % 8 || bits.len % (BLOCK_BITS / 8) || bits.len == 0 || hashes < 1 || hashes > 6) {
        PyErr_SetString(PyExc_ValueError, "segment_blocks: bad buffer sizes");
        goto done;
    }
    Py_ssize_t n = keys.len / 8, nf = fences.len / 8, found = 0, made = 0, room = 64;
    const int64_t *k = (const int64_t *)keys.buf, *f = (const int64_t *)fences.buf;
    for (Py_ssize_t i = 1; i < n; i++)
        if (k[i] <= k[i - 1]) {
            out = Py_None;
            Py_INCREF(out);
            goto done;
        }
    sought_at = PyMem_Malloc((size_t)(n + 1) * 8);
    block_at = PyMem_Malloc((size_t)room * 8);
    if (!sought_at || !block_at) {
        PyErr_NoMemory();
        goto done;
    }
    const uint8_t *b = (const uint8_t *)bits.buf;
    uint64_t blocks_in = (uint64_t)bits.len * 8 / BLOCK_BITS;
    Py_ssize_t low = 0, next = 0;  /* (fences below ``low`` are below every key to come; blocks below ``next`` made) */
    for (Py_ssize_t i = 0; i < n && nf; i++) {
        if (!bloom_probe(b, blocks_in, (const uint64_t *)k, i, n, hashes))
            continue;
        low = lower_bound(f, low, nf, k[i], 0);
        Py_ssize_t first = low > 0 ? low - 1 : 0, last = lower_bound(f, low, nf, k[i], 1) - 1;
        if (cap >= 0 && k[i] < page_base && last > first + cap)
            last = first + cap;
        if (last < first)
            continue;
        sought_at[found++] = k[i];
        for (Py_ssize_t block = first > next ? first : next; block <= last; block++) {
            if (made == room && !(block_at = grown(block_at, &room, 8)))
                goto done;
            block_at[made++] = block;
        }
        if (last + 1 > next)
            next = last + 1;
    }
    sought = PyBytes_FromStringAndSize((const char *)sought_at, found * 8);
    blocks = PyBytes_FromStringAndSize((const char *)block_at, made * 8);
    if (sought && blocks)
        out = PyTuple_Pack(2, sought, blocks);
done:
    Py_XDECREF(sought);
    Py_XDECREF(blocks);
    PyMem_Free(sought_at);
    PyMem_Free(block_at);
    PyBuffer_Release(&bits);
    PyBuffer_Release(&fences);
    PyBuffer_Release(&keys);
    return out;
}

/* The (key, doc) rows of sorted runs whose keys are among sorted distinct query keys (``store.lsh._gather`` of each
run, stacked): for run i, every row of ``runs_keys[i]``/``runs_docs[i]`` whose key is one of ``queries[i]``, key by key
in the queries' order, a key's rows in the run's order; the runs' rows one after the other. Returns the rows as int64
(key, doc) pairs end to end (an (n, 2) array's bytes), or None when a query list does not rise. */
static PyObject *gather_rows(PyObject *self, PyObject *args) {
    PyObject *query_list, *key_list, *doc_list;
    if (!PyArg_ParseTuple(args, "O!O!O!", &PyList_Type, &query_list, &PyList_Type, &key_list, &PyList_Type, &doc_list))
        return NULL;
    Py_ssize_t count = PyList_GET_SIZE(key_list), made = 0, room = 256, filled = 0;
    if (count != PyList_GET_SIZE(doc_list) || count != PyList_GET_SIZE(query_list)) {
        PyErr_SetString(PyExc_ValueError, "gather_rows: as many query lists, key runs and doc runs");
        return NULL;
    }
    Py_buffer *views = PyMem_Calloc(3 * count + 1, sizeof(Py_buffer));
    int64_t *rows = PyMem_Malloc((size_t)room * 16);
    PyObject *out = NULL;
    if (!views || !rows) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *items[3] = {PyList_GET_ITEM(query_list, i), PyList_GET_ITEM(key_list, i), PyList_GET_ITEM(doc_list, i)};
        for (int j = 0; j < 3; j++) {
            if (PyObject_GetBuffer(items[j], &views[3 * i + j], PyBUF_SIMPLE) < 0)
                goto done;
            filled = 3 * i + j + 1;
        }
        if (views[3 * i].len % 8 || views[3 * i + 1].len % 8 || views[3 * i + 1].len != views[3 * i + 2].len) {
            PyErr_SetString(PyExc_ValueError, "gather_rows: a run's keys and docs differ in length");
            goto done;
        }
        const int64_t *q = views[3 * i].buf;
        for (Py_ssize_t j = 1, nq = views[3 * i].len / 8; j < nq; j++)
            if (q[j] <= q[j - 1]) {
                out = Py_None;
                Py_INCREF(out);
                goto done;
            }
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        const int64_t *q = views[3 * i].buf, *k = views[3 * i + 1].buf, *d = views[3 * i + 2].buf;
        Py_ssize_t nq = views[3 * i].len / 8, n = views[3 * i + 1].len / 8, low = 0;
        for (Py_ssize_t j = 0; j < nq && low < n; j++) {
            low = lower_bound(k, low, n, q[j], 0);  /* (the queries rise: so do their first rows) */
            for (Py_ssize_t at = low; at < n && k[at] == q[j]; at++) {
                if (made == room && !(rows = grown(rows, &room, 16)))
                    goto done;
                rows[2 * made] = k[at];
                rows[2 * made + 1] = d[at];
                made++;
            }
        }
    }
    out = PyBytes_FromStringAndSize((const char *)rows, made * 16);
done:
    for (Py_ssize_t i = 0; i < filled; i++)
        PyBuffer_Release(&views[i]);
    PyMem_Free(views);
    PyMem_Free(rows);
    return out;
}

static PyMethodDef methods[] = {
    {"pair_measures", pair_measures, METH_VARARGS,
     "pair_measures(hashes, offsets, a, b, width, sample, min_hashes, jaccard) -> bytes of float64"},
    {"bloom_has", bloom_has, METH_VARARGS, "bloom_has(bits, keys, hashes) -> bytes (0/1 a key)"},
    {"bloom_add", bloom_add, METH_VARARGS, "bloom_add(bits, keys, hashes): set the keys' bits in place"},
    {"word_has", word_has, METH_VARARGS, "word_has(words, keys, hashes) -> bytes (0/1 a key)"},
    {"word_add", word_add, METH_VARARGS, "word_add(words, keys, hashes): set the keys' bits in place"},
    {"merge_rows", merge_rows, METH_VARARGS, "merge_rows(keys, docs, out_keys, out_docs): merge sorted runs"},
    {"gather_rows", gather_rows, METH_VARARGS,
     "gather_rows(queries, keys, docs) -> bytes of (key, doc) int64 rows, or None"},
    {"segment_blocks", segment_blocks, METH_VARARGS,
     "segment_blocks(bits, fences, keys, hashes, cap, page_base) -> (keys, blocks) as int64 bytes, or None"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_pairs", NULL, -1, methods};

PyMODINIT_FUNC PyInit__pairs(void) { return PyModule_Create(&module); }
