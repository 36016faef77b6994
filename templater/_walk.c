/* templater._walk: the segmentation walk of templater.blocks.segment, in C, over lxml's libxml2 tree.
 *
 * It does exactly what blocks._segment_plain does (the definition), reading the xmlNode structs that lxml
 * builds (children/next/prev/parent/name/content/properties) instead of going through one Python proxy per
 * text node. Where a page holds anything the plain walk would treat in a way this code does not mirror
 * (namespaces, entity references, XInclude nodes, duplicate attributes), it returns None and the caller takes
 * the plain walk. No libxml2 function is called, so nothing links against libxml2; lxml's public C-API gives
 * the element proxies (elementFactory, from lxml.etree.__pyx_capi__).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>
#include <libxml/tree.h>

typedef struct {
    PyObject_HEAD
    PyObject *_doc;
    xmlNode *_c_node;
    PyObject *_tag;
} LxmlElement;

typedef PyObject *(*element_factory_t)(PyObject *doc, xmlNode *c_node);

static element_factory_t element_factory = NULL;
static PyObject *lower_name = NULL;
static PyTypeObject *element_type = NULL;

#define MAX_TAGS 256
static char *block_tags[MAX_TAGS];
static int n_block_tags = 0;
static char *split_tags[MAX_TAGS];
static int n_split_tags = 0;

/* --- CRC32 (zlib's polynomial), so no zlib headers are needed ------------------------------------------ */
static uint32_t crc_table[256];

static void crc_init(void) {
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++) c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        crc_table[n] = c;
    }
}

static uint32_t crc_update(uint32_t crc, const unsigned char *data, Py_ssize_t size) {
    crc = ~crc;
    for (Py_ssize_t i = 0; i < size; i++) crc = crc_table[(crc ^ data[i]) & 0xFF] ^ (crc >> 8);
    return ~crc;
}

/* --- growable byte buffer ---------------------------------------------------------------------------- */
typedef struct {
    char *data;
    Py_ssize_t size, capacity;
} Buffer;

static int buf_add(Buffer *b, const char *s, Py_ssize_t n) {
    if (b->size + n > b->capacity) {
        Py_ssize_t cap = b->capacity ? b->capacity : 256;
        while (cap < b->size + n) cap *= 2;
        char *d = PyMem_Realloc(b->data, cap);
        if (!d) { PyErr_NoMemory(); return -1; }
        b->data = d;
        b->capacity = cap;
    }
    memcpy(b->data + b->size, s, n);
    b->size += n;
    return 0;
}

/* --- lxml's view of the tree ------------------------------------------------------------------------- */
static inline int is_element(const xmlNode *n) {  /* lxml's _isElement */
    return n->type == XML_ELEMENT_NODE || n->type == XML_COMMENT_NODE || n->type == XML_ENTITY_REF_NODE
           || n->type == XML_PI_NODE;
}

static inline xmlNode *parent_element(const xmlNode *n) {  /* lxml's _parentElement */
    xmlNode *p = n->parent;
    return p && is_element(p) ? p : NULL;
}

static inline xmlNode *previous_element(const xmlNode *n) {  /* lxml's _previousElement */
    xmlNode *p = n->prev;
    while (p && !is_element(p)) p = p->prev;
    return p;
}

static int in_tags(const xmlNode *n, char **tags, int count) {
    if (n->type != XML_ELEMENT_NODE) return 0;  /* a comment's or PI's tag is a function, in no tag set */
    const char *name = (const char *)n->name;
    for (int i = 0; i < count; i++)
        if (tags[i][0] == name[0] && strcmp(tags[i], name) == 0) return 1;
    return 0;
}

static inline int is_named(const xmlNode *n, const char *name) {
    return n->type == XML_ELEMENT_NODE && strcmp((const char *)n->name, name) == 0;
}

static Py_ssize_t utf8_chars(const unsigned char *s) {  /* len() of the decoded string */
    Py_ssize_t count = 0;
    for (; *s; s++) count += (*s & 0xC0) != 0x80;
    return count;
}

/* Next code point of a UTF-8 string (libxml2 hands out valid UTF-8). */
static inline Py_UCS4 utf8_next(const unsigned char **p) {
    const unsigned char *s = *p;
    Py_UCS4 c = s[0];
    if (c < 0x80) { *p = s + 1; return c; }
    if (c < 0xE0) { *p = s + 2; return ((c & 0x1F) << 6) | (s[1] & 0x3F); }
    if (c < 0xF0) { *p = s + 3; return ((c & 0x0F) << 12) | ((s[1] & 0x3F) << 6) | (s[2] & 0x3F); }
    *p = s + 4;
    return ((c & 0x07) << 18) | ((s[1] & 0x3F) << 12) | ((s[2] & 0x3F) << 6) | (s[3] & 0x3F);
}

/* Characters of len(text.strip()) (Python whitespace). */
static Py_ssize_t stripped_chars(const unsigned char *s) {
    Py_ssize_t count = 0, first = -1, last = -1;
    const unsigned char *p = s;
    while (*p) {
        Py_UCS4 c = utf8_next(&p);
        if (!Py_UNICODE_ISSPACE(c)) {
            if (first < 0) first = count;
            last = count;
        }
        count++;
    }
    return first < 0 ? 0 : last - first + 1;
}

/* Is the concatenation of text nodes from ``n`` on (lxml's _collectText: .text / .tail) non-empty and all
 * whitespace? -1 where lxml would skip nodes this code does not mirror (XInclude markers). */
static int blank_text_run(const xmlNode *n) {
    int any = 0;
    for (; n; n = n->next) {
        if (n->type == XML_XINCLUDE_START || n->type == XML_XINCLUDE_END) return -1;
        if (n->type != XML_TEXT_NODE && n->type != XML_CDATA_SECTION_NODE) break;
        const unsigned char *p = n->content;
        if (!p) continue;
        while (*p) {
            Py_UCS4 c = utf8_next(&p);  /* not inside Py_UNICODE_ISSPACE: a macro that reads its argument twice */
            any = 1;
            if (!Py_UNICODE_ISSPACE(c)) return 0;
        }
    }
    return any;
}

/* blocks._blank_before */
static int blank_before(const xmlNode *element) {
    xmlNode *previous = previous_element(element);
    if (previous) return blank_text_run(previous->next);
    xmlNode *parent = parent_element(element);
    return parent ? blank_text_run(parent->children) : 0;
}

/* blocks._markup_bytes; -1 where lxml's items() would differ from a plain read (namespaces, non-text values,
 * duplicate names). */
static Py_ssize_t markup_bytes(const xmlNode *element) {
    if (element->type != XML_ELEMENT_NODE || element->ns) return -1;
    Py_ssize_t size = 2 * utf8_chars(element->name) + 5;
    for (xmlAttr *a = element->properties; a; a = a->next) {
        if (a->type != XML_ATTRIBUTE_NODE || a->ns) return -1;
        for (xmlAttr *b = element->properties; b != a; b = b->next)
            if (strcmp((const char *)a->name, (const char *)b->name) == 0) return -1;
        size += utf8_chars(a->name) + 4;
        for (xmlNode *t = a->children; t; t = t->next) {
            if (t->type != XML_TEXT_NODE && t->type != XML_CDATA_SECTION_NODE) return -1;
            if (t->content) size += utf8_chars(t->content);
        }
    }
    return size;
}

/* '/html/body/div/p' */
static int tag_path(const xmlNode *element, Buffer *out) {
    const xmlNode *chain[4096];
    int depth = 0;
    for (const xmlNode *n = element; n; n = parent_element(n)) {
        if (n->type != XML_ELEMENT_NODE || n->ns || depth == 4096) return -1;
        chain[depth++] = n;
    }
    out->size = 0;
    while (depth--) {
        if (buf_add(out, "/", 1) < 0) return -2;
        if (buf_add(out, (const char *)chain[depth]->name, strlen((const char *)chain[depth]->name)) < 0) return -2;
    }
    return 0;
}

typedef struct {
    PyObject *doc;  /* the lxml _Document */
    PyObject *rows;  /* list of (tag_path, tag, text, link_chars, markup, hash, shape, element) */
    Buffer hashes;  /* uint32 per row */
    Buffer path;
    Buffer normal;
} Walk;

/* " ".join(text.split()) on UTF-8: runs of Python whitespace become one space, none at the ends. Returns
 * whether the result is all ASCII. */
static int normalize_space(const Buffer *in, Buffer *out, int *ascii) {
    out->size = 0;
    *ascii = 1;
    int pending = 0;
    const unsigned char *p = (const unsigned char *)in->data, *end = p + in->size;
    while (p < end) {
        const unsigned char *start = p;
        Py_UCS4 c = utf8_next(&p);
        if (Py_UNICODE_ISSPACE(c)) {
            pending = out->size > 0;
            continue;
        }
        if (pending) {
            if (buf_add(out, " ", 1) < 0) return -1;
            pending = 0;
        }
        if (c >= 0x80) *ascii = 0;
        if (buf_add(out, (const char *)start, p - start) < 0) return -1;
    }
    return 0;
}

/* blocks._close: 0 done, -1 error (exception set), 1 give up (caller returns None). */
static int close_block(Walk *w, xmlNode *owner, Buffer *text_buf, Py_ssize_t link_chars, Py_ssize_t markup) {
    int ascii;
    if (normalize_space(text_buf, &w->normal, &ascii) < 0) return -1;
    if (w->normal.size == 0) return 0;
    int status = tag_path(owner, &w->path);
    if (status < 0) return status == -1 ? 1 : -1;
    PyObject *text = PyUnicode_DecodeUTF8(w->normal.data, w->normal.size, NULL);
    if (!text) return -1;
    Py_ssize_t length = PyUnicode_GET_LENGTH(text);
    uint32_t shape = crc_update(0, (const unsigned char *)w->path.data, w->path.size);
    uint32_t digest = crc_update(shape, (const unsigned char *)"\x1f", 1);
    if (ascii) {  /* str.lower() of ASCII text is bytewise */
        unsigned char *q = (unsigned char *)w->normal.data;
        for (Py_ssize_t i = 0; i < w->normal.size; i++)
            if (q[i] >= 'A' && q[i] <= 'Z') q[i] += 'a' - 'A';
        digest = crc_update(digest, q, w->normal.size);
    } else {
        PyObject *lower = PyObject_CallMethodNoArgs(text, lower_name);
        if (!lower) { Py_DECREF(text); return -1; }
        Py_ssize_t lower_size;
        const char *lower_utf8 = PyUnicode_AsUTF8AndSize(lower, &lower_size);
        if (!lower_utf8) { Py_DECREF(text); Py_DECREF(lower); return -1; }
        digest = crc_update(digest, (const unsigned char *)lower_utf8, lower_size);
        Py_DECREF(lower);
    }
    PyObject *element = element_factory(w->doc, owner);
    if (!element) { Py_DECREF(text); return -1; }
    PyObject *row = Py_BuildValue("(s#sNnnkkN)", w->path.data, w->path.size, (const char *)owner->name, text,
                                  link_chars < length ? link_chars : length, markup, (unsigned long)digest,
                                  (unsigned long)shape, element);
    if (!row) return -1;
    int failed = PyList_Append(w->rows, row);
    Py_DECREF(row);
    if (failed) return -1;
    return buf_add(&w->hashes, (const char *)&digest, 4);
}

static int is_blank_xpath(const unsigned char *s) {  /* normalize-space() is empty: XML whitespace only */
    if (!s) return 1;
    for (; *s; s++)
        if (*s != ' ' && *s != '\t' && *s != '\n' && *s != '\r') return 0;
    return 1;
}

/* Last character of the buffer is Python whitespace (parts[-1][-1:].isspace()). */
static int ends_with_space(const Buffer *b) {
    if (!b->size) return 0;
    Py_ssize_t i = b->size - 1;
    while (i > 0 && (((unsigned char)b->data[i]) & 0xC0) == 0x80) i--;
    const unsigned char *p = (const unsigned char *)b->data + i;
    Py_UCS4 c = utf8_next(&p);
    return Py_UNICODE_ISSPACE(c);
}

static PyObject *segment(PyObject *self, PyObject *root) {
    if (!element_factory || !PyObject_TypeCheck(root, element_type)) Py_RETURN_NONE;
    xmlNode *c_root = ((LxmlElement *)root)->_c_node;
    if (!c_root || !c_root->doc) Py_RETURN_NONE;
    Walk w = {((LxmlElement *)root)->_doc, PyList_New(0), {0}, {0}, {0}};
    Buffer text = {0};
    PyObject *result = NULL;
    int give_up = 0;
    if (!w.rows) goto done;

    xmlNode *current = NULL, *last_context = NULL;
    Py_ssize_t parts = 0, link_chars = 0, markup = 0;
    int in_body = 0;
    xmlNode *cur = ((xmlNode *)c_root->doc)->children;
    while (cur) {
        if (cur->type == XML_ELEMENT_NODE) {
            if (is_named(cur, "body") && !cur->ns) in_body++;
            if (cur->children) {
                cur = cur->children;
                continue;
            }
            if (is_named(cur, "body") && !cur->ns) in_body--;
        } else if (cur->type == XML_ENTITY_REF_NODE || cur->type == XML_XINCLUDE_START
                   || cur->type == XML_XINCLUDE_END) {
            if (in_body) { give_up = 1; goto done; }
        } else if ((cur->type == XML_TEXT_NODE || cur->type == XML_CDATA_SECTION_NODE) && in_body
                   && !is_blank_xpath(cur->content)) {
            /* the text node's parent element (for a tail: the parent of the element it follows) */
            xmlNode *previous = previous_element(cur);
            int is_tail = previous != NULL, boundary = 0;
            xmlNode *parent;
            if (is_tail) {
                boundary = in_tags(previous, split_tags, n_split_tags);
                parent = parent_element(previous);
                if (!parent) goto next;
            } else {
                parent = cur->parent;
                while (parent && !is_element(parent)) parent = parent->parent;
                if (!parent) { give_up = 1; goto done; }
            }
            /* blocks._context */
            int in_link = 0;
            xmlNode *owner = parent;
            for (;;) {
                if (is_named(owner, "a")) in_link = 1;
                if (in_tags(owner, block_tags, n_block_tags)) break;
                xmlNode *up = parent_element(owner);
                if (!up) break;
                owner = up;
            }
            if (owner != current || boundary) {
                if (parts) {
                    int status = close_block(&w, current, &text, link_chars, markup);
                    if (status < 0) goto done;
                    if (status > 0) { give_up = 1; goto done; }
                }
                current = owner;
                parts = 0;
                text.size = 0;
                link_chars = 0;
                markup = markup_bytes(owner);
                if (markup < 0) { give_up = 1; goto done; }
                last_context = owner;
            }
            if (parent != last_context) {
                Py_ssize_t size = markup_bytes(parent);
                if (size < 0) { give_up = 1; goto done; }
                markup += size;
                last_context = parent;
            }
            if (parts && !is_tail && !ends_with_space(&text)) {
                int blank = blank_before(parent);
                if (blank < 0) { give_up = 1; goto done; }
                if (blank) {
                    if (buf_add(&text, " ", 1) < 0) goto done;
                    parts++;
                }
            }
            if (buf_add(&text, (const char *)cur->content, strlen((const char *)cur->content)) < 0) goto done;
            parts++;
            if (in_link) link_chars += stripped_chars(cur->content);
        }
    next:
        while (!cur->next) {
            cur = cur->parent;
            if (!cur || cur->type == XML_DOCUMENT_NODE || cur->type == XML_HTML_DOCUMENT_NODE) goto walked;
            if (is_named(cur, "body") && !cur->ns) in_body--;
        }
        cur = cur->next;
    }
walked:
    if (parts) {
        int status = close_block(&w, current, &text, link_chars, markup);
        if (status < 0) goto done;
        if (status > 0) { give_up = 1; goto done; }
    }
    {
        PyObject *hashes = PyBytes_FromStringAndSize(w.hashes.data ? w.hashes.data : "", w.hashes.size);
        if (hashes) result = Py_BuildValue("(ON)", w.rows, hashes);
    }
done:
    Py_XDECREF(w.rows);
    PyMem_Free(w.normal.data);
    PyMem_Free(w.hashes.data);
    PyMem_Free(w.path.data);
    PyMem_Free(text.data);
    if (give_up && !PyErr_Occurred()) Py_RETURN_NONE;
    return result;
}

static int read_tags(PyObject *seq, char **tags, int *count) {
    PyObject *fast = PySequence_Fast(seq, "tags must be a sequence");
    if (!fast) return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    if (n > MAX_TAGS) { Py_DECREF(fast); PyErr_SetString(PyExc_ValueError, "too many tags"); return -1; }
    for (int i = 0; i < *count; i++) PyMem_Free(tags[i]);
    *count = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        const char *s = PyUnicode_AsUTF8(PySequence_Fast_GET_ITEM(fast, i));
        if (!s) { Py_DECREF(fast); return -1; }
        char *copy = PyMem_Malloc(strlen(s) + 1);
        if (!copy) { Py_DECREF(fast); PyErr_NoMemory(); return -1; }
        strcpy(copy, s);
        tags[(*count)++] = copy;
    }
    Py_DECREF(fast);
    return 0;
}

static PyObject *configure(PyObject *self, PyObject *args) {
    PyObject *block, *split;
    if (!PyArg_ParseTuple(args, "OO", &block, &split)) return NULL;
    if (read_tags(block, block_tags, &n_block_tags) < 0 || read_tags(split, split_tags, &n_split_tags) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"configure", configure, METH_VARARGS, "configure(block_tags, split_tags): the tag sets of the walk."},
    {"segment", segment, METH_O,
     "segment(root) -> (rows, hashes) | None: blocks._segment_plain's blocks as rows (tag_path, tag, text, "
     "link_chars, markup_bytes, hash, shape, element) and their hashes as uint32 bytes; None where the page "
     "needs the plain walk."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_walk", NULL, -1, methods};

PyMODINIT_FUNC PyInit__walk(void) {
    crc_init();
    lower_name = PyUnicode_InternFromString("lower");
    if (!lower_name) return NULL;
    PyObject *etree = PyImport_ImportModule("lxml.etree");
    if (!etree) return NULL;
    PyObject *capi = PyObject_GetAttrString(etree, "__pyx_capi__");
    PyObject *type = PyObject_GetAttrString(etree, "_Element");
    Py_DECREF(etree);
    if (!capi || !type) { Py_XDECREF(capi); Py_XDECREF(type); return NULL; }
    PyObject *capsule = PyDict_GetItemString(capi, "elementFactory");
    if (capsule)
        element_factory = (element_factory_t)PyCapsule_GetPointer(
            capsule, "struct LxmlElement *(struct LxmlDocument *, xmlNode *)");
    Py_DECREF(capi);
    if (!element_factory || !PyType_Check(type)) {
        Py_DECREF(type);
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ImportError, "lxml's elementFactory C-API is missing");
        return NULL;
    }
    element_type = (PyTypeObject *)type;
    return PyModule_Create(&module);
}
