# cython: language_level=3
"""templater._walk: the tree walks of templater over lxml's libxml2 tree, in Cython against lxml's public C API.

Each function does what its pure-Python definition does (named in its docstring), reading the libxml2 nodes
(children/next/prev/parent/name/content/properties) instead of going through one Python proxy per node.
Element proxies come from lxml's ``elementFactory``, blocks from calling the block class. Where a page holds
what a definition treats in a way this code does not mirror (namespaces, entity references, XInclude nodes,
duplicate attributes), a function returns None and the caller runs the definition.
"""

from cpython.bytearray cimport PyByteArray_FromStringAndSize
from cpython.buffer cimport PyBUF_C_CONTIGUOUS, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytes cimport PyBytes_FromStringAndSize
from cpython.ref cimport PyObject, Py_DECREF, Py_INCREF
from cpython.unicode cimport Py_UNICODE_ISSPACE
from libc.stdint cimport int64_t, uint32_t, uint64_t
from libc.stdlib cimport calloc, free, malloc, realloc
from libc.string cimport memcmp, memcpy, memset, strcmp, strlen, strncmp, strstr
from lxml.includes cimport tree
from lxml.includes.tree cimport xmlAttr, xmlNode
from lxml.includes.etreepublic cimport _Document, _Element, adoptExternalDocument, elementFactory, import_lxml__etree
from lxml.includes cimport xmlerror, xmlparser

import_lxml__etree()


cdef extern from "<dlfcn.h>" nogil:  # (RTLD_NOLOAD: glibc's and the BSDs', not in Cython's posix.dlfcn)
    void *dlopen(const char *, int)
    void *dlsym(void *, const char *)
    int dlclose(void *)
    enum:
        RTLD_NOW
        RTLD_NOLOAD


cdef extern from "Python.h":
    uint32_t Py_UNICODE_TOLOWER(uint32_t ch)  # the simple lower-case mapping (str.lower's where it is one code point)
    ctypedef int (*_descrsetfunc)(PyObject *, PyObject *, PyObject *) except -1
    ctypedef PyObject *(*_descrgetfunc)(PyObject *, PyObject *, PyObject *) except NULL
    ctypedef struct _TypeSlots "PyTypeObject":  # the slots the block maker and reader call (CPython's type slots)
        PyObject *(*tp_alloc)(_TypeSlots *, Py_ssize_t) except NULL
        _descrsetfunc tp_descr_set
        _descrgetfunc tp_descr_get
    _TypeSlots *Py_TYPE(PyObject *)


cdef extern from "structmember.h":  # a __slots__ member: where its value sits in the instance (CPython's)
    ctypedef struct PyMemberDef:
        int type
        Py_ssize_t offset
        int flags
    enum: T_OBJECT_EX
    enum: READONLY


cdef extern from "Python.h":
    ctypedef struct PyMemberDescrObject:  # a member_descriptor
        PyMemberDef *d_member


class _Decline(Exception):
    """The page holds what this walk does not mirror: the caller takes the pure-Python definition."""


cdef object _block_class = None
cdef object _words_function = None

# Blocks are made the way object.__new__ and the class's __init__ make them, without the Python frame of __init__:
# the block class's allocator, then each field set through its own slot descriptor (``member_descriptor.__set__``,
# what ``self.field = value`` does). Taken only when the class is a plain __slots__ class with exactly these fields
# and no __new__ of its own; else blocks are made by calling the class. Where every field's descriptor is a plain
# object member (T_OBJECT_EX, writable), its value is stored straight into the new block's slot (the allocator
# zero-fills the slots: what member_descriptor.__set__ stores there, without its checks of the descriptor and the
# instance, which configure made once).
BLOCK_FIELDS = ("index", "_xpath", "tag_path", "tag", "text", "link_chars", "markup_bytes", "hash", "shape",
                "element")
DEF FIELDS = 10
cdef PyObject *_field_descriptors[FIELDS]
cdef list _held_descriptors = []
cdef bint _fast_blocks = False
cdef Py_ssize_t _field_offsets[FIELDS]  # each field's slot in a block (its member's offset) ...
cdef bint _direct_fields = False  # ... where every field is a plain object member


cdef bint _plain_slots_class(cls) except -1:
    """Whether instances of cls are made right by its allocator plus the BLOCK_FIELDS' descriptors: a __slots__
    class of exactly those fields, right below object, whose __init__ stores its arguments in that order."""
    if (not isinstance(cls, type) or cls.__base__ is not object or cls.__new__ is not object.__new__
            or set(getattr(cls, "__slots__", ())) != set(BLOCK_FIELDS) or "__dict__" in cls.__dict__):
        return False
    if not all(type(cls.__dict__.get(name)).__name__ == "member_descriptor" for name in BLOCK_FIELDS):
        return False
    values = [object() for _ in BLOCK_FIELDS]
    probe = cls(*values)
    return all(getattr(probe, name) is value for name, value in zip(BLOCK_FIELDS, values))


cdef object _make_block(index, xpath, tag_path, tag, text, link_chars, markup, digest, shape, element):
    """_block_class(index, xpath, tag_path, tag, text, link_chars, markup, digest, shape, element)"""
    if not _fast_blocks:
        return _block_class(index, xpath, tag_path, tag, text, link_chars, markup, digest, shape, element)
    cdef _TypeSlots *cls = <_TypeSlots *>(<PyObject *>_block_class)
    cdef PyObject *made = cls.tp_alloc(cls, 0)
    block = <object>made
    Py_DECREF(block)  # <object> took a second reference
    cdef PyObject *values[FIELDS]
    values[0] = <PyObject *>index
    values[1] = <PyObject *>xpath
    values[2] = <PyObject *>tag_path
    values[3] = <PyObject *>tag
    values[4] = <PyObject *>text
    values[5] = <PyObject *>link_chars
    values[6] = <PyObject *>markup
    values[7] = <PyObject *>digest
    values[8] = <PyObject *>shape
    values[9] = <PyObject *>element
    cdef int i
    if _direct_fields:
        for i in range(FIELDS):
            Py_INCREF(<object>values[i])
            (<PyObject **>(<char *>made + _field_offsets[i]))[0] = values[i]
        return block
    for i in range(FIELDS):
        Py_TYPE(_field_descriptors[i]).tp_descr_set(_field_descriptors[i], <PyObject *>block, values[i])
    return block


cdef inline bint _same(const char *a, const char *b) noexcept:
    """strcmp(a, b) == 0 with the first bytes compared inline: most names differ there, and then no call is made."""
    return a[0] == b[0] and strcmp(a, b) == 0


# --- tag name sets: names compared as C strings (the bytes objects holding them are kept in ``names``) ----------
DEF MAX_TAGS = 256
DEF MAX_DEPTH = 4096  # the deepest element chain the walks follow (deeper: the definition runs)

cdef struct Tags:
    int count
    const char *names[MAX_TAGS]
    uint32_t values[MAX_TAGS]


cdef Tags _block_tags, _split_tags, _tag_bits
cdef list _held = []  # the bytes the Tags point into


cdef int _set_tags(Tags *tags, pairs) except -1:
    pairs = [(name.encode("utf-8"), value) for name, value in pairs]
    if len(pairs) > MAX_TAGS:
        raise ValueError("too many tags")
    tags.count = 0
    for name, value in pairs:
        _held.append(name)
        tags.names[tags.count] = name
        tags.values[tags.count] = value
        tags.count += 1
    return 0


cdef inline uint32_t _tag_value(const Tags *tags, xmlNode *n) noexcept:
    """The value of the element's tag in ``tags``, 0 when absent (a comment's or PI's tag is in no set)."""
    cdef const char *name = <const char *>n.name
    cdef int i
    if n.type != tree.XML_ELEMENT_NODE:
        return 0
    for i in range(tags.count):
        if tags.names[i][0] == name[0] and strcmp(tags.names[i], name) == 0:
            return tags.values[i]
    return 0


def configure(block_tags, split_tags, block_class):
    """The tags that own blocks, those that split them (blocks.segment's), and the class blocks are made of."""
    global _block_class, _fast_blocks, _direct_fields
    cdef PyMemberDef *member
    _set_tags(&_block_tags, [(tag, 1) for tag in block_tags])
    _set_tags(&_split_tags, [(tag, 1) for tag in split_tags])
    _block_class = block_class
    _fast_blocks = _plain_slots_class(block_class)
    _direct_fields = False
    if _fast_blocks:
        _held_descriptors[:] = [block_class.__dict__[name] for name in BLOCK_FIELDS]
        _direct_fields = True
        for i in range(FIELDS):
            _field_descriptors[i] = <PyObject *>_held_descriptors[i]
            member = (<PyMemberDescrObject *>_field_descriptors[i]).d_member
            _field_offsets[i] = member.offset
            if member.type != T_OBJECT_EX or member.flags & READONLY or member.offset <= 0:
                _direct_fields = False


def fast_blocks():
    """Whether blocks are made without calling the block class (see BLOCK_FIELDS)."""
    return _fast_blocks


def direct_fields():
    """Whether the made blocks' fields are stored straight into their slots (see BLOCK_FIELDS)."""
    return _direct_fields


def configure_tree(pairs, word_bits, Py_ssize_t cache_size):
    """features' tag flags per tag name, features._word_bits (one class/id word's group bit), and how many
    (class, id) pairs and words to remember (each: the largest power of two not above it, at most 65,536)."""
    global _words_function
    if not callable(word_bits) or cache_size < 1:
        raise ValueError("word_bits must be callable and the cache size positive")
    _set_tags(&_tag_bits, pairs)
    _words_function = word_bits
    cdef Py_ssize_t size = 1
    while size * 2 <= max(2, min(cache_size, 1 << 16)):
        size *= 2
    _words_reset(&_words, &_words_mask, size)
    _words_reset(&_single_words, &_single_mask, size)


# --- a growable byte buffer ------------------------------------------------------------------------------------
cdef struct Buffer:
    char *data
    Py_ssize_t size, capacity


cdef int _add(Buffer *b, const void *data, Py_ssize_t n) except -1:
    cdef Py_ssize_t capacity
    cdef char *grown
    if b.size + n > b.capacity:
        capacity = b.capacity if b.capacity else 256
        while capacity < b.size + n:
            capacity *= 2
        grown = <char *>realloc(b.data, capacity)
        if grown is NULL:
            raise MemoryError
        b.data = grown
        b.capacity = capacity
    memcpy(b.data + b.size, data, n)
    b.size += n
    return 0


cdef inline uint32_t _utf8_next(const unsigned char **p) noexcept:
    """The next code point of UTF-8 text (libxml2 hands out valid UTF-8)."""
    cdef const unsigned char *s = p[0]
    cdef uint32_t c = s[0]
    if c < 0x80:
        p[0] = s + 1
        return c
    if c < 0xE0:
        p[0] = s + 2
        return ((c & 0x1F) << 6) | (s[1] & 0x3F)
    if c < 0xF0:
        p[0] = s + 3
        return ((c & 0x0F) << 12) | ((s[1] & 0x3F) << 6) | (s[2] & 0x3F)
    p[0] = s + 4
    return ((c & 0x07) << 18) | ((s[1] & 0x3F) << 12) | ((s[2] & 0x3F) << 6) | (s[3] & 0x3F)


cdef inline Py_ssize_t _utf8_chars(const unsigned char *s) noexcept:
    """len() of the decoded text: its bytes (strlen) less its continuation bytes, counted by a loop of known length
    (which the compiler vectorises)."""
    cdef size_t size = strlen(<const char *>s), i, continuation = 0
    for i in range(size):
        continuation += (s[i] & 0xC0) == 0x80
    return <Py_ssize_t>(size - continuation)


cdef Py_ssize_t _stripped_chars(const unsigned char *s) noexcept:
    """len(text.strip())"""
    cdef Py_ssize_t count = 0, first = -1, last = -1
    cdef uint32_t c
    while s[0]:
        c = _utf8_next(&s)
        if not Py_UNICODE_ISSPACE(c):
            if first < 0:
                first = count
            last = count
        count += 1
    return 0 if first < 0 else last - first + 1


cdef bint _normalize_space(Buffer *b) noexcept:
    """" ".join(text.split()) of the UTF-8 in the buffer, in place (runs of whitespace become one space, none at
    the ends); whether the result is all ASCII."""
    cdef bint ascii = True, pending = False
    cdef unsigned char *o = <unsigned char *>b.data
    cdef unsigned char *start = o
    cdef const unsigned char *p = <const unsigned char *>b.data
    cdef const unsigned char *end = p + b.size
    cdef const unsigned char *first
    cdef unsigned char c
    cdef uint32_t code
    while p < end:
        c = p[0]
        if c < 0x80:
            if c == 32 or 9 <= c <= 13 or 28 <= c <= 31:  # Python's ASCII whitespace
                pending = o > start
                p += 1
                continue
            if pending:
                o[0] = 32
                o += 1
                pending = False
            o[0] = c
            o += 1
            p += 1
            continue
        first = p
        code = _utf8_next(&p)
        if Py_UNICODE_ISSPACE(code):
            pending = o > start
            continue
        if pending:
            o[0] = 32
            o += 1
            pending = False
        ascii = False
        while first < p:  # never ahead of p: the output is never longer than what was read
            o[0] = first[0]
            o += 1
            first += 1
    b.size = o - start
    return ascii


cdef bint _ends_with_space(const Buffer *b) noexcept:
    """The buffer's last character is whitespace."""
    if not b.size:
        return False
    cdef Py_ssize_t i = b.size - 1
    while i > 0 and ((<unsigned char>b.data[i]) & 0xC0) == 0x80:
        i -= 1
    cdef const unsigned char *p = <const unsigned char *>b.data + i
    cdef uint32_t c = _utf8_next(&p)
    return Py_UNICODE_ISSPACE(c)


cdef inline void _put_utf8(unsigned char *o, Py_ssize_t *at, uint32_t c) noexcept:
    """Write the code point as UTF-8 at o[at], moving at past it."""
    cdef Py_ssize_t i = at[0]
    if c < 0x80:
        o[i] = c
        at[0] = i + 1
    elif c < 0x800:
        o[i] = 0xC0 | (c >> 6)
        o[i + 1] = 0x80 | (c & 0x3F)
        at[0] = i + 2
    elif c < 0x10000:
        o[i] = 0xE0 | (c >> 12)
        o[i + 1] = 0x80 | ((c >> 6) & 0x3F)
        o[i + 2] = 0x80 | (c & 0x3F)
        at[0] = i + 3
    else:
        o[i] = 0xF0 | (c >> 18)
        o[i + 1] = 0x80 | ((c >> 12) & 0x3F)
        o[i + 2] = 0x80 | ((c >> 6) & 0x3F)
        o[i + 3] = 0x80 | (c & 0x3F)
        at[0] = i + 4


cdef int _lower_utf8(const unsigned char *s, Py_ssize_t n, Buffer *out) except -1:
    """text.lower().encode("utf-8") of the (valid) UTF-8 s[:n] into out, one code point at a time by its simple
    lower-case mapping; 0 (out left unfinished) where str.lower does more than that: U+0130 (İ, which lowers to
    two code points) and U+03A3 (Σ, final or medial sigma by its neighbours), the only two code points where the
    simple mapping is not str.lower's (test_speedups checks every code point)."""
    cdef const unsigned char *p = s
    cdef const unsigned char *end = s + n
    cdef uint32_t c
    cdef Py_ssize_t at = 0
    out.size = 0
    if out.capacity < 2 * n:  # a lower-case code point takes at most a byte more than its capital (Ⱥ: 2 -> 3)
        _reserve(out, 2 * n)
    while p < end:
        c = _utf8_next(&p)
        if c == 0x130 or c == 0x3A3:
            return 0
        _put_utf8(<unsigned char *>out.data, &at, Py_UNICODE_TOLOWER(c))
    out.size = at
    return 1


cdef int _reserve(Buffer *b, Py_ssize_t n) except -1:
    """Room for at least n bytes in the buffer (its bytes kept)."""
    cdef char *grown
    if n > b.capacity:
        grown = <char *>realloc(b.data, n)
        if grown is NULL:
            raise MemoryError
        b.data = grown
        b.capacity = n
    return 0


def lower_text(str text):
    """text.lower() as the segmentation walk computes it for a block's hash, or None where the walk leaves it to
    str.lower (the tests compare the two)."""
    data = text.encode("utf-8")
    cdef Buffer out
    memset(&out, 0, sizeof(Buffer))
    try:
        if not _lower_utf8(<const unsigned char *><char *>data, len(data), &out):
            return None
        return out.data[:out.size].decode("utf-8")
    finally:
        free(out.data)


# --- CRC-32 (zlib.crc32's: the reflected polynomial 0xEDB88320), eight bytes a step ("slicing by 8") ---------------
cdef uint32_t _crc_tables[8][256]


cdef void _crc_init() noexcept:
    cdef uint32_t c, k, n
    for n in range(256):
        c = n
        for k in range(8):
            c = (0xEDB88320 ^ (c >> 1)) if c & 1 else (c >> 1)
        _crc_tables[0][n] = c
    for n in range(256):
        for k in range(1, 8):
            _crc_tables[k][n] = (_crc_tables[k - 1][n] >> 8) ^ _crc_tables[0][_crc_tables[k - 1][n] & 0xFF]


_crc_init()


cdef inline uint32_t _crc32(const unsigned char *p, Py_ssize_t n, uint32_t crc) noexcept:
    """zlib.crc32(p[:n], crc)"""
    cdef uint32_t one, two
    crc = ~crc
    while n >= 8:
        one = crc ^ (p[0] | (<uint32_t>p[1] << 8) | (<uint32_t>p[2] << 16) | (<uint32_t>p[3] << 24))
        two = p[4] | (<uint32_t>p[5] << 8) | (<uint32_t>p[6] << 16) | (<uint32_t>p[7] << 24)
        crc = (_crc_tables[7][one & 0xFF] ^ _crc_tables[6][(one >> 8) & 0xFF] ^ _crc_tables[5][(one >> 16) & 0xFF]
               ^ _crc_tables[4][one >> 24] ^ _crc_tables[3][two & 0xFF] ^ _crc_tables[2][(two >> 8) & 0xFF]
               ^ _crc_tables[1][(two >> 16) & 0xFF] ^ _crc_tables[0][two >> 24])
        p += 8
        n -= 8
    while n > 0:
        crc = _crc_tables[0][(crc ^ p[0]) & 0xFF] ^ (crc >> 8)
        p += 1
        n -= 1
    return ~crc


def crc32(bytes data, uint32_t value=0):
    """zlib.crc32(data, value), as the walk computes it (the tests compare it with zlib's)."""
    return _crc32(<const unsigned char *>data, len(data), value)


# --- lxml's view of the tree --------------------------------------------------------------------------------
cdef inline bint _is_element(xmlNode *n) noexcept:  # lxml's _isElement
    return (n.type == tree.XML_ELEMENT_NODE or n.type == tree.XML_COMMENT_NODE
            or n.type == tree.XML_ENTITY_REF_NODE or n.type == tree.XML_PI_NODE)


cdef inline xmlNode *_parent_element(xmlNode *n) noexcept:  # lxml's _parentElement
    cdef xmlNode *p = n.parent
    return p if p is not NULL and _is_element(p) else NULL


cdef inline xmlNode *_previous_element(xmlNode *n) noexcept:  # lxml's _previousElement
    cdef xmlNode *p = n.prev
    while p is not NULL and not _is_element(p):
        p = p.prev
    return p


cdef inline bint _is_named(xmlNode *n, const char *name) noexcept:
    return n.type == tree.XML_ELEMENT_NODE and _same(<const char *>n.name, name)


cdef inline str _text(const char *s):
    return s[:strlen(s)].decode("utf-8")


cdef bint _xml_blank(const unsigned char *s) noexcept:
    """normalize-space() of the text is empty: XML whitespace only."""
    if s is NULL:
        return True
    while s[0]:
        if s[0] != 32 and s[0] != 9 and s[0] != 10 and s[0] != 13:
            return False
        s += 1
    return True


cdef bint _blank_text_run(xmlNode *n) except -1:
    """Is the run of text nodes from ``n`` on (lxml's .text / .tail) non-empty and all whitespace?"""
    cdef bint any = False
    cdef const unsigned char *p
    cdef uint32_t c
    while n is not NULL:
        if n.type == tree.XML_XINCLUDE_START or n.type == tree.XML_XINCLUDE_END:
            raise _Decline
        if n.type != tree.XML_TEXT_NODE and n.type != tree.XML_CDATA_SECTION_NODE:
            break
        p = n.content
        if p is not NULL:
            while p[0]:
                any = True
                c = _utf8_next(&p)  # not inside Py_UNICODE_ISSPACE, a macro that reads its argument twice
                if not Py_UNICODE_ISSPACE(c):
                    return False
        n = n.next
    return any


cdef bint _blank_before(xmlNode *element) except -1:
    """blocks._blank_before"""
    cdef xmlNode *previous = _previous_element(element)
    if previous is not NULL:
        return _blank_text_run(previous.next)
    cdef xmlNode *parent = _parent_element(element)
    return _blank_text_run(parent.children) if parent is not NULL else False


cdef int _attribute_into(xmlAttr *a, Buffer *out) except -1:
    """Append an attribute's value as UTF-8, as lxml's attrib.get reads it (``a`` has no namespace)."""
    cdef xmlNode *t = a.children
    while t is not NULL:
        if t.type != tree.XML_TEXT_NODE and t.type != tree.XML_CDATA_SECTION_NODE:
            raise _Decline
        if t.content is not NULL:
            _add(out, t.content, strlen(<const char *>t.content))
        t = t.next
    return 0


cdef bint _attribute_is(xmlAttr *a, const char *expected, bint anywhere, Buffer *scratch) except -1:
    """The attribute's value equals ``expected`` (holds it, when ``anywhere``)."""
    scratch.size = 0
    _attribute_into(a, scratch)
    _add(scratch, "", 1)
    return strstr(scratch.data, expected) is not NULL if anywhere else strcmp(scratch.data, expected) == 0


cdef Py_ssize_t _attribute_chars(xmlAttr *a) except -1:
    """len() of an attribute's value."""
    cdef xmlNode *t = a.children
    cdef Py_ssize_t chars = 0
    while t is not NULL:
        if t.type != tree.XML_TEXT_NODE and t.type != tree.XML_CDATA_SECTION_NODE:
            raise _Decline
        if t.content is not NULL:
            chars += _utf8_chars(t.content)
        t = t.next
    return chars


cdef Py_ssize_t _markup_bytes(xmlNode *element) except -1:
    """blocks._markup_bytes"""
    cdef xmlAttr *a
    cdef xmlAttr *b
    if element.type != tree.XML_ELEMENT_NODE or element.ns is not NULL:
        raise _Decline
    cdef Py_ssize_t size = 2 * _utf8_chars(element.name) + 5
    a = element.properties
    while a is not NULL:
        if a.type != tree.XML_ATTRIBUTE_NODE or a.ns is not NULL:
            raise _Decline
        b = element.properties
        while b is not a:
            if strcmp(<const char *>a.name, <const char *>b.name) == 0:
                raise _Decline
            b = b.next
        size += _utf8_chars(a.name) + 4 + _attribute_chars(a)
        a = a.next
    return size


# element names as str, remembered by their bytes (a page uses a few dozen names, every page the same ones)
DEF NAMES = 256
cdef char *_name_keys[NAMES]
cdef object _name_values = [None] * NAMES


cdef str _tag_name(const unsigned char *name):
    """name.decode("utf-8"), the str shared by every element of that name"""
    cdef const char *text = <const char *>name
    cdef size_t size = strlen(text)
    cdef size_t slot = _fnv1a(name, size) & (NAMES - 1)
    if _name_keys[slot] is not NULL and strcmp(_name_keys[slot], text) == 0:
        return _name_values[slot]
    value = text[:size].decode("utf-8")
    cdef char *key = <char *>malloc(size + 1)
    if key is NULL:
        raise MemoryError
    memcpy(key, text, size + 1)
    free(_name_keys[slot])
    _name_keys[slot] = key
    _name_values[slot] = value
    return value


cdef str _tag_path(xmlNode *element, Buffer *scratch):
    """'/html/body/div/p'"""
    cdef xmlNode *chain[MAX_DEPTH]
    cdef int length = 0
    cdef xmlNode *n = element
    while n is not NULL:
        if n.type != tree.XML_ELEMENT_NODE or n.ns is not NULL or length == MAX_DEPTH:
            raise _Decline
        chain[length] = n
        length += 1
        n = _parent_element(n)
    scratch.size = 0
    while length:
        length -= 1
        _add(scratch, "/", 1)
        _add(scratch, chain[length].name, strlen(<const char *>chain[length].name))
    return scratch.data[:scratch.size].decode("utf-8")


cdef struct Numbers:  # the numbers given so far, by node: open addressing over a power-of-two table (NULL: empty)
    xmlNode **keys
    int64_t *values
    Py_ssize_t count, mask


cdef inline Py_ssize_t _slot(const Numbers *m, xmlNode *key) noexcept:
    cdef size_t h = <size_t>key
    h = (h >> 4) * <size_t>0x9E3779B97F4A7C15
    cdef Py_ssize_t i = <Py_ssize_t>(h >> 20) & m.mask
    while m.keys[i] is not NULL and m.keys[i] is not key:
        i = (i + 1) & m.mask
    return i


cdef int _numbers_grow(Numbers *m) except -1:
    cdef Numbers bigger
    cdef Py_ssize_t i, j
    bigger.mask = (m.mask + 1) * 2 - 1 if m.keys is not NULL else 255
    bigger.count = m.count
    bigger.keys = <xmlNode **>calloc(bigger.mask + 1, sizeof(xmlNode *))
    bigger.values = <int64_t *>calloc(bigger.mask + 1, sizeof(int64_t))
    if bigger.keys is NULL or bigger.values is NULL:
        free(bigger.keys)
        free(bigger.values)
        raise MemoryError
    if m.keys is not NULL:
        for i in range(m.mask + 1):
            if m.keys[i] is not NULL:
                j = _slot(&bigger, m.keys[i])
                bigger.keys[j] = m.keys[i]
                bigger.values[j] = m.values[i]
        free(m.keys)
        free(m.values)
    m[0] = bigger
    return 0


# --- blocks.segment ---------------------------------------------------------------------------------------------
DEF KIND_MEMO = 64  # the element names whose kind (block tag, splitting tag) one walk remembers, by the name's pointer
DEF KIND_BLOCK = 1
DEF KIND_SPLIT = 2
DEF KIND_LINK = 4  # an <a>


cdef class _Segment:
    """One page's walk: the blocks closed so far (with their hashes and lengths), the owners' tag paths, and the
    text of the block being read."""
    cdef _Document doc
    cdef list blocks
    cdef Buffer hashes
    cdef Buffer chars
    cdef Buffer links
    cdef Buffer text
    cdef Buffer lowered  # the text lower-cased, where it is not ASCII
    cdef Buffer scratch
    cdef Numbers owners  # owner element -> its row in paths, tags, shapes, prefixes
    cdef Numbers siblings  # an owner's parent -> the row of the last owner under it (the same tag path if the same name)
    cdef Buffer owner_names  # per owner row, its name (libxml2's dictionary pointer)
    cdef dict path_ids  # the distinct tag paths, numbered in the order of their first block
    cdef Buffer owner_paths  # per owner row, its tag path's number (int64)
    cdef Buffer block_paths  # per block, its tag path's number (intp: blocks.tag_path_index's)
    cdef list paths  # the owners' tag paths ...
    cdef list tags  # ... tag names ...
    cdef Buffer shapes  # ... CRC32 of the tag path (uint32) ...
    cdef Buffer prefixes  # ... and CRC32 of the tag path and the separator (uint32)
    cdef const unsigned char *memo_names[KIND_MEMO]  # a name's pointer (NULL: empty; the object starts zeroed) ...
    cdef unsigned char memo_kinds[KIND_MEMO]  # ... and its KIND_BLOCK | KIND_SPLIT bits
    cdef bint collect  # metadata.declared_elements_plain's lists gathered on the way (False: not, or given up)
    cdef list declared
    cdef list props

    def __cinit__(self, _Document doc):
        self.doc = doc
        self.blocks = []
        self.paths = []
        self.path_ids = {}
        self.tags = []
        self.declared = []
        self.props = []

    def __dealloc__(self):
        free(self.hashes.data)
        free(self.chars.data)
        free(self.links.data)
        free(self.text.data)
        free(self.lowered.data)
        free(self.owner_paths.data)
        free(self.block_paths.data)
        free(self.scratch.data)
        free(self.shapes.data)
        free(self.prefixes.data)
        free(self.owners.keys)
        free(self.owners.values)
        free(self.siblings.keys)
        free(self.siblings.values)
        free(self.owner_names.data)

    cdef inline unsigned char kind(self, xmlNode *n) noexcept:
        """Whether the node is an element whose tag owns blocks (KIND_BLOCK), splits them (KIND_SPLIT) or is a link
        (KIND_LINK), remembered
        by the name's pointer for the walk (the nodes, and so their names, live until it returns)."""
        if n.type != tree.XML_ELEMENT_NODE:
            return 0
        cdef size_t slot = (<size_t>n.name >> 3) & (KIND_MEMO - 1)
        if self.memo_names[slot] is not n.name:
            self.memo_names[slot] = n.name
            self.memo_kinds[slot] = ((KIND_BLOCK if _tag_value(&_block_tags, n) else 0)
                                     | (KIND_SPLIT if _tag_value(&_split_tags, n) else 0)
                                     | (KIND_LINK if _is_named(n, "a") else 0))
        return self.memo_kinds[slot]

    cdef Py_ssize_t owner_row(self, xmlNode *owner) except -1:
        """The owner's row in the owner columns, added on its first block."""
        cdef Py_ssize_t i
        cdef uint32_t shape, prefix
        if self.owners.keys is not NULL:
            i = _slot(&self.owners, owner)
            if self.owners.keys[i] is not NULL:
                return self.owners.values[i]
        cdef int64_t number
        cdef xmlNode *parent = _parent_element(owner) if owner.ns is NULL else NULL
        cdef Py_ssize_t same = -1, k = 0
        if parent is not NULL and self.siblings.keys is not NULL:
            k = _slot(&self.siblings, parent)
            if (self.siblings.keys[k] is not NULL
                    and (<const unsigned char **>self.owner_names.data)[self.siblings.values[k]] is owner.name):
                same = self.siblings.values[k]
        if same >= 0:  # the last owner under the same parent has the same name: the same tag path
            self.paths.append(self.paths[same])
            self.tags.append(self.tags[same])
            number = (<int64_t *>self.owner_paths.data)[same]
            shape = (<uint32_t *>self.shapes.data)[same]
            prefix = (<uint32_t *>self.prefixes.data)[same]
        else:
            path = _tag_path(owner, &self.scratch)  # its UTF-8 left in scratch
            self.paths.append(path)
            number = self.path_ids.setdefault(path, len(self.path_ids))
            shape = _crc32(<const unsigned char *>self.scratch.data, self.scratch.size, 0)
            prefix = _crc32(<const unsigned char *>"\x1f", 1, shape)
            self.tags.append(_tag_name(owner.name))
        if parent is not NULL:
            if self.siblings.keys is NULL or 2 * (self.siblings.count + 1) > self.siblings.mask + 1:
                _numbers_grow(&self.siblings)
            k = _slot(&self.siblings, parent)
            if self.siblings.keys[k] is NULL:
                self.siblings.keys[k] = parent
                self.siblings.count += 1
            self.siblings.values[k] = self.owners.count
        _add(&self.owner_names, &owner.name, sizeof(owner.name))
        _add(&self.owner_paths, &number, 8)
        _add(&self.shapes, &shape, 4)
        _add(&self.prefixes, &prefix, 4)
        if 2 * (self.owners.count + 1) > self.owners.mask + 1:
            _numbers_grow(&self.owners)
        i = _slot(&self.owners, owner)
        self.owners.keys[i] = owner
        self.owners.values[i] = self.owners.count
        self.owners.count += 1
        return self.owners.count - 1

    cdef result(self):
        return (self.blocks, PyByteArray_FromStringAndSize(self.hashes.data, self.hashes.size),
                PyByteArray_FromStringAndSize(self.chars.data, self.chars.size),
                PyByteArray_FromStringAndSize(self.links.data, self.links.size),
                (self.declared, self.props) if self.collect else None,
                (list(self.path_ids), PyByteArray_FromStringAndSize(self.block_paths.data, self.block_paths.size)))

    cdef close(self, xmlNode *owner, Py_ssize_t link_chars, Py_ssize_t markup):
        """blocks._close, of the text read since the last block"""
        cdef uint32_t digest, shape, prefix
        cdef int64_t length, linked
        cdef bint ascii = _normalize_space(&self.text)
        cdef Py_ssize_t i
        cdef bytes lowered
        cdef unsigned char *q = <unsigned char *>self.text.data
        if not self.text.size:
            return
        text = self.text.data[:self.text.size].decode("utf-8")
        cdef Py_ssize_t row = self.owner_row(owner)
        shape = (<uint32_t *>self.shapes.data)[row]
        prefix = (<uint32_t *>self.prefixes.data)[row]
        if ascii:  # str.lower() of ASCII text is bytewise
            for i in range(self.text.size):
                if 65 <= q[i] <= 90:
                    q[i] += 32
            digest = _crc32(q, self.text.size, prefix)
        elif _lower_utf8(q, self.text.size, &self.lowered):
            digest = _crc32(<const unsigned char *>self.lowered.data, self.lowered.size, prefix)
        else:
            lowered = text.lower().encode("utf-8", "surrogatepass")
            digest = _crc32(<const unsigned char *>lowered, len(lowered), prefix)
        self.text.size = 0
        length = len(text)
        linked = min(link_chars, length)
        self.blocks.append(_make_block(len(self.blocks), None, self.paths[row], self.tags[row], text,
                                       linked, markup, digest, shape, elementFactory(self.doc, owner)))
        _add(&self.hashes, &digest, 4)
        _add(&self.chars, &length, 8)
        _add(&self.links, &linked, 8)
        cdef Py_ssize_t path_number = (<int64_t *>self.owner_paths.data)[row]
        _add(&self.block_paths, &path_number, sizeof(Py_ssize_t))


def segment(root):
    """blocks.segment's walk (the definition: blocks.segment_plain): (blocks, hashes, chars, link chars, what
    ``metadata.declared_elements_plain(root)`` gives, gathered on the way while the tree is in the cache), or None."""
    if _block_class is None or not isinstance(root, _Element):
        return None
    cdef xmlNode *c_root = (<_Element>root)._c_node
    if c_root is NULL or c_root.doc is NULL:
        return None
    cdef _Segment walk = _Segment((<_Element>root)._doc)
    walk.collect = _whole_document(c_root)
    try:
        return _segment(walk, <xmlNode *>c_root.doc.children)
    except _Decline:
        return None


cdef _segment(_Segment walk, xmlNode *cur):
    cdef xmlNode *current = NULL
    cdef xmlNode *last_context = NULL
    cdef xmlNode *previous
    cdef xmlNode *parent
    cdef xmlNode *owner
    cdef xmlNode *up
    cdef Py_ssize_t link_chars = 0, markup = 0, in_body = 0
    cdef bint is_tail, boundary, in_link
    cdef unsigned char kind
    cdef Py_ssize_t parts = 0
    while cur is not NULL:
        if cur.type == tree.XML_ELEMENT_NODE:
            if walk.collect and not _note_declared(walk.declared, walk.props, walk.doc, cur, in_body > 0):
                walk.collect = False
            if _is_named(cur, "body") and cur.ns is NULL:
                in_body += 1
            if cur.children is not NULL:
                cur = cur.children
                continue
            if _is_named(cur, "body") and cur.ns is NULL:
                in_body -= 1
        elif (cur.type == tree.XML_ENTITY_REF_NODE or cur.type == tree.XML_XINCLUDE_START
              or cur.type == tree.XML_XINCLUDE_END):
            walk.collect = False
            if in_body:
                raise _Decline
        elif ((cur.type == tree.XML_TEXT_NODE or cur.type == tree.XML_CDATA_SECTION_NODE) and in_body
              and not _xml_blank(cur.content)):
            # the text node's parent element (for a tail: the parent of the element it follows)
            previous = _previous_element(cur)
            is_tail = previous is not NULL
            boundary = False
            if is_tail:
                boundary = (walk.kind(previous) & KIND_SPLIT) != 0
                parent = _parent_element(previous)
            else:
                parent = cur.parent
                while parent is not NULL and not _is_element(parent):
                    parent = parent.parent
                if parent is NULL:
                    raise _Decline
            if parent is not NULL:
                # blocks._context
                in_link = False
                owner = parent
                while True:
                    kind = walk.kind(owner)
                    if kind & KIND_LINK:
                        in_link = True
                    if kind & KIND_BLOCK:
                        break
                    up = _parent_element(owner)
                    if up is NULL:
                        break
                    owner = up
                if owner is not current or boundary:
                    if parts:
                        walk.close(current, link_chars, markup)
                    current = owner
                    parts = 0
                    link_chars = 0
                    markup = _markup_bytes(owner)
                    last_context = owner
                if parent is not last_context:
                    markup += _markup_bytes(parent)
                    last_context = parent
                if parts and not is_tail and not _ends_with_space(&walk.text) and _blank_before(parent):
                    _add(&walk.text, " ", 1)  # the blank text between "<b>hello</b> <i>world</i>" (not visited)
                _add(&walk.text, cur.content, strlen(<const char *>cur.content))
                parts += 1
                if in_link:
                    link_chars += _stripped_chars(cur.content)
        while cur.next is NULL:
            cur = cur.parent
            if (cur is NULL or cur.type == tree.XML_DOCUMENT_NODE
                    or cur.type == tree.XML_HTML_DOCUMENT_NODE):
                if parts:
                    walk.close(current, link_chars, markup)
                return walk.result()
            if _is_named(cur, "body") and cur.ns is NULL:
                in_body -= 1
        cur = cur.next
    if parts:
        walk.close(current, link_chars, markup)
    return walk.result()


def head_title(root):
    """root.find("head/title"): the first <title> child of the first <head> child that has one."""
    if not isinstance(root, _Element):
        raise TypeError("root must be an lxml element")
    cdef xmlNode *c_root = (<_Element>root)._c_node
    cdef xmlNode *head = c_root.children if c_root is not NULL else NULL
    cdef xmlNode *title
    while head is not NULL:
        if head.type == tree.XML_ELEMENT_NODE and head.ns is NULL and _same(<const char *>head.name, "head"):
            title = head.children
            while title is not NULL:
                if (title.type == tree.XML_ELEMENT_NODE and title.ns is NULL
                        and _same(<const char *>title.name, "title")):
                    return elementFactory((<_Element>root)._doc, title)
                title = title.next
        head = head.next
    return None


# --- parse.register_ids: the ids libxml2's parser registers when it collects them, for XPath's id() ---------------
# libxml2's own xmlIsID and xmlAddID, found in lxml's module (which exports the libxml2 it is built with): the
# parser that collects ids calls them for each attribute it makes (xmlSAX2AttributeInternal); parse.py's parser
# does not (collect_ids=False: the registry costs a hash insert per id and, for each id a page repeats, a logged
# error), and an XPath that calls id() has them registered first.
ctypedef int (*_IsId)(tree.xmlDoc *, xmlNode *, xmlAttr *) noexcept
ctypedef void *(*_AddId)(void *, tree.xmlDoc *, const unsigned char *, xmlAttr *) noexcept
cdef _IsId _xml_is_id = NULL
cdef _AddId _xml_add_id = NULL
# parse's strip of the dropped elements (lxml's etree.strip_elements(root, *names, with_tail=False)): libxml2's own
# xmlDictExists, xmlUnlinkNode and xmlFreeNode.
ctypedef const unsigned char *(*_DictExists)(tree.xmlDict *, const unsigned char *, int) noexcept
ctypedef void (*_NodeFunction)(xmlNode *) noexcept
cdef _DictExists _xml_dict_exists = NULL
cdef _NodeFunction _xml_unlink_node = NULL
cdef _NodeFunction _xml_free_node = NULL
ctypedef int (*_DictOwns)(tree.xmlDict *, const unsigned char *) noexcept nogil
cdef _DictOwns _xml_dict_owns = NULL  # (names_outside_dict, for the tests)
cdef bint _libxml2_looked_up = False


cdef int _libxml2_functions() except -1:
    """Look libxml2's functions above up, once, in lxml's loaded module (NULL where one is missing)."""
    global _xml_is_id, _xml_add_id, _xml_dict_exists, _xml_unlink_node, _xml_free_node, _libxml2_looked_up
    global _xml_dict_owns, _html_memory_context, _html_read_memory, _html_free_context, _sax2_start_document
    global _dict_reference, _dict_free, _free_doc, _str_dup
    cdef void *handle
    cdef bytes path
    if not _libxml2_looked_up:
        _libxml2_looked_up = True
        from lxml import etree as etree_module
        path = etree_module.__file__.encode()
        handle = dlopen(path, RTLD_NOW | RTLD_NOLOAD)
        if handle is not NULL:
            _xml_is_id = <_IsId>dlsym(handle, "xmlIsID")
            _xml_add_id = <_AddId>dlsym(handle, "xmlAddID")
            _xml_dict_exists = <_DictExists>dlsym(handle, "xmlDictExists")
            _xml_unlink_node = <_NodeFunction>dlsym(handle, "xmlUnlinkNode")
            _xml_free_node = <_NodeFunction>dlsym(handle, "xmlFreeNode")
            _xml_dict_owns = <_DictOwns>dlsym(handle, "xmlDictOwns")
            _html_memory_context = <_NewMemoryContext>dlsym(handle, "htmlCreateMemoryParserCtxt")
            _html_read_memory = <_ReadMemory>dlsym(handle, "htmlCtxtReadMemory")
            _html_free_context = <_ContextFunction>dlsym(handle, "htmlFreeParserCtxt")
            _sax2_start_document = <_SaxFunction>dlsym(handle, "xmlSAX2StartDocument")
            _dict_reference = <_DictFunction>dlsym(handle, "xmlDictReference")
            _dict_free = <_DictFunction>dlsym(handle, "xmlDictFree")
            _free_doc = <_DocFunction>dlsym(handle, "xmlFreeDoc")
            _str_dup = <_StrDup>dlsym(handle, "xmlStrdup")
            dlclose(handle)  # (NOLOAD: lxml's own reference keeps the module loaded)
    return 0


cdef bint _id_functions() except -1:
    """Whether libxml2's xmlIsID and xmlAddID are at hand."""
    _libxml2_functions()
    return _xml_is_id is not NULL and _xml_add_id is not NULL


cdef bint _strip_functions() except -1:
    """Whether libxml2's xmlDictExists, xmlUnlinkNode and xmlFreeNode are at hand."""
    _libxml2_functions()
    return _xml_dict_exists is not NULL and _xml_unlink_node is not NULL and _xml_free_node is not NULL


def register_ids(root):
    """Register the ids of root's document as libxml2's parser does while it collects them (each element in
    document order, each attribute libxml2 takes for an id whose value is one text node; a repeated id stays its
    first element's); True when the document's ids are registered (already, or now), False where not known how."""
    if not isinstance(root, _Element) or not _id_functions():
        return False
    cdef xmlNode *c_root = (<_Element>root)._c_node
    if c_root is NULL or c_root.doc is NULL:
        return False
    cdef tree.xmlDoc *doc = c_root.doc
    if doc.ids is not NULL:
        return True
    cdef xmlNode *cur = doc.children
    cdef xmlAttr *attr
    while cur is not NULL:
        if cur.type == tree.XML_ELEMENT_NODE:
            attr = cur.properties
            while attr is not NULL:
                if (attr.children is not NULL and attr.children.type == tree.XML_TEXT_NODE
                        and attr.children.next is NULL and attr.children.content is not NULL
                        and _xml_is_id(doc, cur, attr)):
                    _xml_add_id(NULL, doc, attr.children.content, attr)
                attr = attr.next
            if cur.children is not NULL:
                cur = cur.children
                continue
        while cur.next is NULL:
            cur = cur.parent
            if cur is NULL or <void *>cur is <void *>doc:
                return True
        cur = cur.next
    return True


DEF STRIP_NAMES = 32


cdef bint _has_proxy_within(xmlNode *top) noexcept:
    """Whether top or a node below it has a Python proxy (lxml's hasProxy): such a subtree is not freed here."""
    cdef xmlNode *cur = top
    while True:
        if cur._private is not NULL:
            return True
        if cur.type == tree.XML_ELEMENT_NODE and cur.children is not NULL:
            cur = cur.children
            continue
        while cur is not top and cur.next is NULL:
            cur = cur.parent
        if cur is top:
            return False
        cur = cur.next


# --- parse._parse: libxml2's HTML parser run as lxml's fromstring runs it, less its renaming walk -----------------
# lxml's HTMLParser parses a page with htmlCtxtReadMemory on a context it set up once (its SAX handler's error hook,
# no comments, no processing instructions, no CDATA nodes, the document's names in the thread's dictionary, no
# registry of ids where collect_ids is off) and then walks every element of the new tree (_fixHtmlDictNames) to
# look each element and attribute name up in that dictionary again, freeing the copies the tree builder made
# (libxml2's SAX2 handlers copy an HTML element's and attribute's name). parse_html runs the same parse on a
# context set up the same way, and gives the names to the dictionary as the tree builder makes them
# (_start_element, _attribute: each name looked up once, never copied), so the tree is the one lxml builds, its
# names the dictionary's, without the walk. lxml's own wrapper (adoptExternalDocument) makes the document.
ctypedef xmlparser.xmlParserCtxt *(*_NewMemoryContext)(const char *, int) noexcept nogil
ctypedef tree.xmlDoc *(*_ReadMemory)(xmlparser.xmlParserCtxt *, const char *, int, const char *, const char *,
                                     int) noexcept nogil
ctypedef void (*_ContextFunction)(xmlparser.xmlParserCtxt *) noexcept nogil
ctypedef void (*_SaxFunction)(void *) noexcept nogil
ctypedef int (*_DictFunction)(tree.xmlDict *) noexcept nogil
ctypedef void (*_DocFunction)(tree.xmlDoc *) noexcept nogil
ctypedef unsigned char *(*_StrDup)(const unsigned char *) noexcept nogil
cdef _NewMemoryContext _html_memory_context = NULL
cdef _ReadMemory _html_read_memory = NULL
cdef _ContextFunction _html_free_context = NULL
cdef _SaxFunction _sax2_start_document = NULL
cdef _DictFunction _dict_reference = NULL
cdef _DictFunction _dict_free = NULL
cdef _DocFunction _free_doc = NULL
cdef _StrDup _str_dup = NULL


cdef bint _parse_functions() except -1:
    """Whether libxml2's functions parse_html calls are at hand."""
    _libxml2_functions()
    return (_html_memory_context is not NULL and _html_read_memory is not NULL and _html_free_context is not NULL
            and _sax2_start_document is not NULL and _dict_reference is not NULL and _dict_free is not NULL
            and _free_doc is not NULL and _str_dup is not NULL)


cdef void _quiet(void *context, const xmlerror.xmlError *error) noexcept nogil:
    """The parse's errors, which lxml keeps in the parser's error log: nobody reads them here."""
    pass


cdef void _start_document(void *context) noexcept nogil:
    """lxml's _initSaxDocument where ids are not collected: the document takes the context's dictionary."""
    cdef xmlparser.xmlParserCtxt *c_ctxt = <xmlparser.xmlParserCtxt *>context
    _sax2_start_document(context)
    cdef tree.xmlDoc *c_doc = c_ctxt.myDoc
    if c_doc is not NULL and c_ctxt.dict is not NULL and c_doc.dict is NULL:
        c_ctxt.dictNames = 1
        c_doc.dict = c_ctxt.dict
        _dict_reference(c_ctxt.dict)
    c_ctxt.loadsubset |= xmlparser.XML_SKIP_IDS


def parse_html(bytes data, _Element probe, parser, int options, bytes encoding):
    """The root of ``data`` parsed as lxml's ``etree.fromstring(data, parser)`` parses it (``parser``: an
    HTMLParser with remove_comments, remove_pis, strip_cdata and collect_ids off, whose libxml2 options are
    ``options`` and encoding ``encoding``), None where lxml raises or finds no root; False where libxml2's
    functions are not at hand. ``probe``: an element of a document lxml parsed in this thread (its dictionary is
    the thread's, which the new document shares)."""
    if not _parse_functions():
        return False
    cdef tree.xmlDict *thread_dict = probe._c_node.doc.dict if probe._c_node is not NULL else NULL
    if thread_dict is NULL:
        return False
    cdef xmlparser.xmlParserCtxt *ctxt = _html_memory_context("dummy", 5)
    if ctxt is NULL:
        raise MemoryError()
    cdef xmlparser.xmlSAXHandler *sax = ctxt.sax
    cdef tree.xmlDoc *result = NULL
    cdef const char *text = data
    if len(data) > 0x7fffffff:  # (lxml refuses such a page too)
        return False
    cdef int length = len(data)
    cdef const char *c_encoding = encoding
    try:
        if sax is NULL or sax.initialized == 0:
            return False
        sax.initialized = xmlparser.XML_SAX2_MAGIC  # lxml's _registerHtmlErrorHandler
        sax.serror = <xmlerror.xmlStructuredErrorFunc>_quiet
        sax.startElementNs = NULL
        sax.endElementNs = NULL
        sax._private = NULL
        sax.comment = NULL  # lxml's _configureSaxContext
        sax.processingInstruction = NULL
        sax.cdataBlock = NULL
        sax.startDocument = _start_document
        if ctxt.dict is not thread_dict:  # lxml's initParserDict
            if ctxt.dict is not NULL:
                _dict_free(ctxt.dict)
            ctxt.dict = thread_dict
            _dict_reference(thread_dict)
        ctxt.dictNames = 1
        with nogil:
            result = _html_read_memory(ctxt, text, length, NULL, c_encoding, options)
        if ctxt.myDoc is not NULL:
            if ctxt.myDoc is not result:
                _free_doc(ctxt.myDoc)
            ctxt.myDoc = NULL
    finally:
        _html_free_context(ctxt)
    if result is NULL:
        return None
    if result.encoding is NULL:
        result.encoding = _str_dup(<const unsigned char *>"UTF-8")
    return adoptExternalDocument(result, parser, True).getroot()


def strip_elements(root, names):
    """``etree.strip_elements(root, *names, with_tail=False)`` on a tree lxml parsed: every element below root named
    one of names and in no namespace (the names libxml2's dictionary holds for the document, compared by pointer
    as lxml's matcher does) removed with its subtree and freed, its tail kept. True when done; False where it stopped
    (a node other than elements, texts, comments and processing instructions below root, a proxy inside an element
    to remove, a document without a dictionary, more than STRIP_NAMES names): lxml's strip_elements then finishes
    the job, and the tree is the one it alone gives (the elements removed here are those it removes)."""
    if not isinstance(root, _Element) or not _strip_functions():
        return False
    cdef xmlNode *c_root = (<_Element>root)._c_node
    if c_root is NULL or c_root.doc is NULL or c_root.doc.dict is NULL or len(names) > STRIP_NAMES:
        return False
    cdef const unsigned char *wanted[STRIP_NAMES]
    cdef Py_ssize_t count = 0, k
    cdef bytes encoded
    for name in names:
        encoded = name.encode("utf-8")
        wanted[count] = _xml_dict_exists(c_root.doc.dict, encoded, len(encoded))
        if wanted[count] is not NULL:
            count += 1
    if count == 0:
        return True
    cdef xmlNode *cur = c_root.children
    cdef xmlNode *after
    cdef bint drop
    if cur is NULL:
        return True
    while True:
        if cur.type == tree.XML_ELEMENT_NODE:
            drop = False
            if cur.ns is NULL or cur.ns.href is NULL or cur.ns.href[0] == 0:  # (a name without {ns}: no namespace)
                for k in range(count):
                    if cur.name is wanted[k]:
                        drop = True
                        break
            if drop:
                if _has_proxy_within(cur):
                    return False
                after = cur.next
                if after is not NULL:
                    _xml_unlink_node(cur)
                    _xml_free_node(cur)
                    cur = after
                    continue
                after = cur.parent
                _xml_unlink_node(cur)
                _xml_free_node(cur)
                cur = after  # (its last child gone: go on after it)
            elif cur.children is not NULL:
                cur = cur.children
                continue
        elif (cur.type != tree.XML_TEXT_NODE and cur.type != tree.XML_COMMENT_NODE and cur.type != tree.XML_PI_NODE
              and cur.type != tree.XML_CDATA_SECTION_NODE):
            return False
        while cur is not c_root and cur.next is NULL:
            cur = cur.parent
        if cur is c_root:
            return True
        cur = cur.next


DEF FEW = 16  # up to this many elements, inside compares node pointers; more go into a set


cdef object _element_of(block, PyObject *descriptor):
    """A block's element, read through the element slot's descriptor (``descriptor``: NULL where blocks are not of
    the plain slots class), or the item itself where it is an element (metadata's <time> elements)."""
    cdef PyObject *read
    if descriptor is not NULL and type(block) is _block_class:
        read = Py_TYPE(descriptor).tp_descr_get(descriptor, <PyObject *>block, <PyObject *>_block_class)
        element = <object>read
        Py_DECREF(element)
        return element
    if isinstance(block, _Element):
        return block
    return block.element


cdef xmlNode *_element_node(element):
    """The node of ``element`` (a block's, read by ``_element_of``), or NULL where it is no element node of a tree."""
    cdef xmlNode *node
    if not isinstance(element, _Element):
        return NULL
    node = (<_Element>element)._c_node
    if node is NULL or node.type != tree.XML_ELEMENT_NODE:
        return NULL
    return node


def inside(blocks, elements):
    """extract.inside_plain: per block (bytes of bool), is its element one of ``elements`` or below one; or None.
    Each block's element is read through the element slot's descriptor (as number_tree reads it); an item that is
    an element itself (metadata._times_inside's <time> elements) stands for its own element."""
    cdef xmlNode *node
    cdef xmlNode *few[FEW]
    cdef Py_ssize_t i, k, count = 0
    cdef bint hit
    cdef PyObject *descriptor = _field_descriptors[FIELDS - 1] if _fast_blocks else NULL
    marked = set()
    for element in elements:
        if not isinstance(element, _Element) or (<_Element>element)._c_node is NULL:
            return None
        node = (<_Element>element)._c_node
        if count < FEW:
            few[count] = node
        count += 1
        marked.add(<size_t>node)
    out = bytearray(len(blocks))
    cdef unsigned char[::1] view = out
    for i, block in enumerate(blocks):
        element = _element_of(block, descriptor)
        node = _element_node(element)
        if node is NULL:
            return None
        hit = False
        while count and node is not NULL and not hit:
            if count <= FEW:
                for k in range(count):
                    if few[k] is node:
                        hit = True
                        break
            else:
                hit = <size_t>node in marked
            node = _parent_element(node)
        view[i] = hit
    return bytes(out)


# --- features.number_tree ---------------------------------------------------------------------------------------
cdef inline xmlAttr *_first(xmlNode *n, const char *name) noexcept:
    """The first attribute of that name without a namespace."""
    cdef xmlAttr *a = n.properties
    while a is not NULL:
        if a.type == tree.XML_ATTRIBUTE_NODE and a.ns is NULL and strcmp(<const char *>a.name, name) == 0:
            return a
        a = a.next
    return NULL


cdef struct Attributes:  # the first attribute (no namespace) of each name features reads, NULL where absent
    xmlAttr *class_
    xmlAttr *id_
    xmlAttr *itemprop
    xmlAttr *itemtype
    xmlAttr *role


cdef void _attributes(xmlNode *n, Attributes *found) noexcept:
    """What _first finds for each name, in one pass over the element's attributes."""
    cdef xmlAttr *a = n.properties
    cdef const char *name
    found.class_ = found.id_ = found.itemprop = found.itemtype = found.role = NULL
    while a is not NULL:
        if a.type == tree.XML_ATTRIBUTE_NODE and a.ns is NULL:
            name = <const char *>a.name
            if name[0] == c'c':
                if found.class_ is NULL and _same(name, "class"):
                    found.class_ = a
            elif name[0] == c'i':
                if found.id_ is NULL and _same(name, "id"):
                    found.id_ = a
                elif found.itemprop is NULL and _same(name, "itemprop"):
                    found.itemprop = a
                elif found.itemtype is NULL and _same(name, "itemtype"):
                    found.itemtype = a
            elif name[0] == c'r':
                if found.role is NULL and _same(name, "role"):
                    found.role = a
        a = a.next


cdef bint _attributes_hint(const Attributes *found, Buffer *scratch) except -1:
    """features._is_hint's attribute tests (its tag test is remembered with the tag's flags: _tag_flags)."""
    if found.itemprop is not NULL and _attribute_is(found.itemprop, "articleBody", False, scratch):
        return True
    if found.itemtype is not NULL and _attribute_is(found.itemtype, "Article", True, scratch):
        return True
    return found.role is not NULL and _attribute_is(found.role, "main", False, scratch)


cdef uint32_t _class_bits(const Attributes *found, Buffer *scratch) except? 0xFFFFFFFF:
    """features._class_bits: the class and id words' groups ("" for a missing one; none without both),
    remembered per (class, id) pair of UTF-8 bytes."""
    if found.class_ is NULL and found.id_ is NULL:
        return 0
    scratch.size = 0
    if found.class_ is not NULL:
        _attribute_into(found.class_, scratch)
    _add(scratch, "", 1)
    if found.id_ is not NULL:
        _attribute_into(found.id_, scratch)
    cdef uint64_t hash = _crc32(<const unsigned char *>scratch.data, scratch.size, 0)
    cdef WordsEntry *entry = &_words[hash & _words_mask]
    cdef WordsEntry *other = &_words[(hash & _words_mask) ^ 1]  # two ways: a pair may sit in either slot
    if entry.key is not NULL and entry.hash == hash and entry.size == scratch.size and memcmp(
            entry.key, scratch.data, scratch.size) == 0:
        return entry.bits
    if other.key is not NULL and other.hash == hash and other.size == scratch.size and memcmp(
            other.key, scratch.data, scratch.size) == 0:
        return other.bits
    if entry.key is not NULL and other.key is NULL:
        entry = other
    cdef uint32_t bits = _class_words_bits(<const unsigned char *>scratch.data, scratch.size)
    _remember(entry, hash, scratch.data, scratch.size, bits)
    return bits


cdef int _remember(WordsEntry *entry, uint64_t hash, const char *data, Py_ssize_t size, uint32_t bits) except -1:
    """Put a key's bits into its table slot (the key it held forgotten)."""
    cdef char *key = <char *>malloc(size or 1)
    if key is NULL:
        raise MemoryError
    memcpy(key, data, size)
    free(entry.key)
    entry.key = key
    entry.hash = hash
    entry.size = size
    entry.bits = bits
    return 0


cdef inline bint _ascii_upper(unsigned char c) noexcept:
    return 65 <= c <= 90


cdef inline bint _ascii_lower(unsigned char c) noexcept:
    return 97 <= c <= 122


cdef inline bint _ascii_digit(unsigned char c) noexcept:
    return 48 <= c <= 57


cdef uint32_t _class_words_bits(const unsigned char *s, Py_ssize_t n) except? 0xFFFFFFFF:
    """features._words_bits of a (class, id) pair's UTF-8 bytes (class, NUL, id): the words
    features._CLASS_WORDS finds (``[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+x[0-9]+``, tried in that order at each
    position as re.findall tries them; ASCII only, so the bytes are scanned as they are and the NUL parts the two
    values as the space does), each word's bit by _word_bits."""
    cdef Py_ssize_t i = 0, j, k
    cdef unsigned char c
    cdef uint32_t bits = 0
    while i < n:
        c = s[i]
        if _ascii_lower(c) or (_ascii_upper(c) and i + 1 < n and _ascii_lower(s[i + 1])):  # [A-Z]?[a-z]+
            j = i + 1
            while j < n and _ascii_lower(s[j]):
                j += 1
        elif _ascii_upper(c):  # [A-Z]+(?![a-z]): the run, less its last letter where a lower-case one follows
            j = i + 1
            while j < n and _ascii_upper(s[j]):
                j += 1
            if j < n and _ascii_lower(s[j]):
                j -= 1  # at least one letter stays: the run's first is not followed by a lower-case one
        elif _ascii_digit(c):  # [0-9]+x[0-9]+, else no word starts here
            j = i + 1
            while j < n and _ascii_digit(s[j]):
                j += 1
            if j + 1 < n and s[j] == c'x' and _ascii_digit(s[j + 1]):
                j += 2
                while j < n and _ascii_digit(s[j]):
                    j += 1
            else:
                i += 1
                continue
        else:
            i += 1
            continue
        bits |= _word_bits(s + i, j - i)
        i = j
    return bits


def words_bits(str class_, str id_):
    """features._words_bits(class_, id_) as number_tree computes it where a pair is not in its table (the C
    tokenizer and the word table; tests compare it with the regex definition)."""
    if _words_function is None:
        raise RuntimeError("configure_tree was not called")
    data = class_.encode("utf-8", "surrogatepass") + b"\0" + id_.encode("utf-8", "surrogatepass")
    return _class_words_bits(<const unsigned char *><char *>data, len(data))


DEF LONGEST_WORD = 64  # longer words are looked up without the table


cdef uint32_t _word_bits(const unsigned char *word, Py_ssize_t n) except? 0xFFFFFFFF:
    """features._word_bits of an ASCII word, remembered by its lower-case bytes (the function lowers it first)."""
    cdef unsigned char lowered[LONGEST_WORD]
    cdef Py_ssize_t i
    if n > LONGEST_WORD:
        return _words_function(word[:n].decode("ascii"))
    for i in range(n):
        lowered[i] = word[i] + 32 if _ascii_upper(word[i]) else word[i]
    cdef uint64_t hash = _fnv1a(lowered, n)
    cdef WordsEntry *entry = &_single_words[hash & _single_mask]
    cdef WordsEntry *other = &_single_words[(hash & _single_mask) ^ 1]
    if entry.key is not NULL and entry.hash == hash and entry.size == n and memcmp(entry.key, lowered, n) == 0:
        return entry.bits
    if other.key is not NULL and other.hash == hash and other.size == n and memcmp(other.key, lowered, n) == 0:
        return other.bits
    if entry.key is not NULL and other.key is NULL:
        entry = other
    cdef uint32_t bits = _words_function((<char *>lowered)[:n].decode("ascii"))
    _remember(entry, hash, <const char *>lowered, n, bits)
    return bits


# features._words_bits of the (class, id) pairs met lately: a two-way table by the pair's hash (a pair whose slots
# other pairs took is asked again; pages repeat the same few pairs)
cdef struct WordsEntry:
    uint64_t hash
    Py_ssize_t size
    char *key  # the pair's bytes (class, NUL, id), NULL: empty
    uint32_t bits


cdef WordsEntry *_words = NULL
cdef Py_ssize_t _words_mask = 0
cdef WordsEntry *_single_words = NULL  # the same for single words (lower-cased): _word_bits
cdef Py_ssize_t _single_mask = 0


cdef int _words_reset(WordsEntry **table, Py_ssize_t *mask, Py_ssize_t size) except -1:
    cdef Py_ssize_t i
    if table[0] is not NULL:
        for i in range(mask[0] + 1):
            free(table[0][i].key)
        free(table[0])
    table[0] = <WordsEntry *>calloc(size, sizeof(WordsEntry))
    if table[0] is NULL:
        raise MemoryError
    mask[0] = size - 1
    return 0


cdef inline uint64_t _fnv1a(const unsigned char *p, Py_ssize_t n) noexcept:
    cdef uint64_t h = (<uint64_t>0xcbf29ce4 << 32) | <uint64_t>0x84222325  # FNV-1a's 64-bit offset basis
    cdef uint64_t prime = (<uint64_t>1 << 40) | <uint64_t>0x1b3
    cdef Py_ssize_t i
    for i in range(n):
        h = (h ^ p[i]) * prime
    return h


def number_tree(blocks):
    """features.number_tree_plain's numbering of the blocks' owners and their ancestors: bytearrays (parent, depth,
    owner as int64, tag_bits, class_bits as uint32, hint as bool), or None."""
    if _words_function is None:
        raise RuntimeError("configure_tree was not called")
    try:
        return _number_tree(blocks)
    except _Decline:
        return None


DEF TAG_MEMO = 64  # the tag names whose flags one call remembers, by the name's pointer (libxml2 interns names)

cdef struct Columns:  # number_tree's columns as they grow, the numbers given so far, the flags of the names met
    int64_t *parent  # per element ...
    int64_t *depth
    uint32_t *tag_bits
    uint32_t *class_bits
    char *hint
    Py_ssize_t count, capacity
    int64_t *owner  # per block
    Py_ssize_t owners, owner_capacity
    Numbers numbers  # element -> its number
    Buffer scratch
    const unsigned char *memo_names[TAG_MEMO]  # a name's pointer (NULL: empty) ...
    uint32_t memo_bits[TAG_MEMO]  # ... its tag flags ...
    char memo_hint[TAG_MEMO]  # ... and whether it is a hint tag (article, main)


cdef void _columns_free(Columns *c) noexcept:
    free(c.parent)
    free(c.depth)
    free(c.tag_bits)
    free(c.class_bits)
    free(c.hint)
    free(c.owner)
    free(c.numbers.keys)
    free(c.numbers.values)
    free(c.scratch.data)


cdef int _resize(void **data, Py_ssize_t size) except -1:
    cdef void *grown = realloc(data[0], size if size else 1)
    if grown is NULL:
        raise MemoryError
    data[0] = grown
    return 0


cdef int _columns_reserve(Columns *c, Py_ssize_t elements) except -1:
    """Room for that many elements in the element columns (their rows kept)."""
    _resize(<void **>&c.parent, elements * 8)
    _resize(<void **>&c.depth, elements * 8)
    _resize(<void **>&c.tag_bits, elements * 4)
    _resize(<void **>&c.class_bits, elements * 4)
    _resize(<void **>&c.hint, elements)
    c.capacity = elements
    return 0


cdef inline uint32_t _tag_flags(Columns *c, xmlNode *n, char *hint) noexcept:
    """features._tag_bits of the element's tag, and (in hint) whether the tag is one of _is_hint's; remembered by
    the name's pointer for the call (the elements, and so their names, live until it returns)."""
    cdef size_t slot = (<size_t>n.name >> 3) & (TAG_MEMO - 1)
    if c.memo_names[slot] is not n.name:
        c.memo_names[slot] = n.name
        c.memo_bits[slot] = _tag_value(&_tag_bits, n)
        c.memo_hint[slot] = _is_named(n, "article") or _is_named(n, "main")
    hint[0] = c.memo_hint[slot]
    return c.memo_bits[slot]


cdef inline int64_t _number_of(const Numbers *numbers, xmlNode *n) noexcept:
    """n's number, -1 if it has none yet."""
    cdef Py_ssize_t i = _slot(numbers, n)
    return numbers.values[i] if numbers.keys[i] is not NULL else -1


cdef int _number(Columns *c, int64_t above, xmlNode *n) except -1:
    """Number n (an element without a namespace; its parent's number is ``above``, -1 for a root) as the next."""
    cdef Py_ssize_t row = c.count
    cdef Attributes found
    cdef char hint
    if row == c.capacity:
        _columns_reserve(c, 2 * c.capacity)
    if 2 * (c.numbers.count + 1) > c.numbers.mask + 1:
        _numbers_grow(&c.numbers)
    c.tag_bits[row] = _tag_flags(c, n, &hint)
    _attributes(n, &found)
    c.class_bits[row] = _class_bits(&found, &c.scratch)
    c.hint[row] = hint or _attributes_hint(&found, &c.scratch)
    c.parent[row] = above
    c.depth[row] = c.depth[above] + 1 if above >= 0 else 0
    cdef Py_ssize_t i = _slot(&c.numbers, n)
    c.numbers.keys[i] = n
    c.numbers.values[i] = row
    c.numbers.count += 1
    c.count += 1
    return 0


cdef _number_tree(blocks):
    cdef Columns c
    memset(&c, 0, sizeof(Columns))
    try:
        _number_blocks(&c, blocks)
        return (PyByteArray_FromStringAndSize(<char *>c.parent, c.count * 8),
                PyByteArray_FromStringAndSize(<char *>c.depth, c.count * 8),
                PyByteArray_FromStringAndSize(<char *>c.owner, c.owners * 8),
                PyByteArray_FromStringAndSize(<char *>c.tag_bits, c.count * 4),
                PyByteArray_FromStringAndSize(c.hint, c.count),
                PyByteArray_FromStringAndSize(<char *>c.class_bits, c.count * 4))
    finally:
        _columns_free(&c)


cdef int _number_blocks(Columns *c, blocks) except -1:
    cdef xmlNode *node
    cdef xmlNode *last = NULL
    cdef xmlNode *chain[MAX_DEPTH]
    cdef int length
    cdef int64_t above = -1, known
    cdef Py_ssize_t count = len(blocks), size = 256
    cdef PyObject *descriptor = _field_descriptors[FIELDS - 1] if _fast_blocks else NULL
    cdef PyObject *read
    while size < 4 * count:  # room for the owners and their ancestors, mostly
        size *= 2
    c.numbers.keys = <xmlNode **>calloc(size, sizeof(xmlNode *))
    c.numbers.values = <int64_t *>malloc(size * sizeof(int64_t))  # read only where a key is set
    if c.numbers.keys is NULL or c.numbers.values is NULL:
        raise MemoryError
    c.numbers.mask = size - 1
    _columns_reserve(c, 2 * count + 64)
    c.owner_capacity = count
    _resize(<void **>&c.owner, count * 8)
    for block in blocks:
        if descriptor is not NULL and type(block) is _block_class:  # the element slot, read by its descriptor
            read = Py_TYPE(descriptor).tp_descr_get(descriptor, <PyObject *>block, <PyObject *>_block_class)
            element = <object>read
            Py_DECREF(element)
        else:
            element = block.element
        if not isinstance(element, _Element) or (<_Element>element)._c_node is NULL:
            raise _Decline
        node = (<_Element>element)._c_node
        if node is not last:  # else the previous block's owner: ``above`` is its number
            last = node
            above = -1
            length = 0
            while node is not NULL:
                known = _number_of(&c.numbers, node)
                if known >= 0:
                    above = known
                    break
                if node.type != tree.XML_ELEMENT_NODE or node.ns is not NULL or length == MAX_DEPTH:
                    raise _Decline
                chain[length] = node
                length += 1
                node = _parent_element(node)
            while length:  # number the new elements, parents first
                length -= 1
                _number(c, above, chain[length])
                above = c.count - 1
        if c.owners == c.owner_capacity:  # more blocks than len() said
            c.owner_capacity = 2 * c.owner_capacity + 16
            _resize(<void **>&c.owner, c.owner_capacity * 8)
        c.owner[c.owners] = above
        c.owners += 1
    return 0


# --- extract's container rules -----------------------------------------------------------------------------------
cdef struct Rule:
    const char *tag  # NULL: any element
    const char *id_  # NULL: no id test
    const char *token  # " TOKEN ", NULL: no class test
    size_t word  # len(TOKEN) where TOKEN is a word (not empty, no XPath white space): tested in place; else 0


cdef inline bint _xpath_space(unsigned char c) noexcept:
    """White space as normalize-space reads it (XPath 1.0: space, tab, line feed, carriage return)."""
    return c == 32 or c == 9 or c == 10 or c == 13


cdef void _set_rule(Rule *rule, tag, id_, token) noexcept:
    """A rule of match_rules' (tag, id, " TOKEN ") bytes (each may be None), pointing into them (kept by the
    caller)."""
    cdef const char *t
    cdef size_t size, k
    rule.tag = <const char *>tag if tag is not None else NULL
    rule.id_ = <const char *>id_ if id_ is not None else NULL
    rule.token = <const char *>token if token is not None else NULL
    rule.word = 0
    if token is not None:
        t = <const char *>token
        size = strlen(t)
        if size > 2:
            for k in range(1, size - 1):
                if _xpath_space(<unsigned char>t[k]):
                    return
            rule.word = size - 2


cdef bint _has_class_word(const unsigned char *p, const char *word, size_t size) noexcept:
    """Whether one of the words of ``p`` (its runs between XPath white space) is ``word`` (``size`` bytes): what
    ' ' + normalize-space(p) + ' ' holding ' ' + word + ' ' says, for a word of no white space, read in place."""
    cdef const unsigned char *start
    while True:
        while _xpath_space(p[0]):
            p += 1
        if p[0] == 0:
            return False
        start = p
        while p[0] != 0 and not _xpath_space(p[0]):
            p += 1
        if <size_t>(p - start) == size and memcmp(start, word, size) == 0:
            return True


cdef bint _value_is(xmlAttr *a, const char *expected) noexcept:
    """The attribute's text and CDATA children, joined, are ``expected``."""
    cdef xmlNode *t = a.children
    cdef size_t size
    while t is not NULL:
        if (t.type == tree.XML_TEXT_NODE or t.type == tree.XML_CDATA_SECTION_NODE) and t.content is not NULL:
            size = strlen(<const char *>t.content)
            if strncmp(<const char *>t.content, expected, size) != 0:
                return False
            expected += size
        t = t.next
    return expected[0] == 0


cdef bint _class_holds(xmlAttr *a, const char *token, Buffer *scratch, size_t word=0) except -1:
    """' ' + normalize-space(the attribute's text and CDATA) + ' ' holds ``token`` (a NULL attribute reads as "").
    ``word``: len(TOKEN) of a token " TOKEN " whose TOKEN is a word (``_set_rule``): an attribute of one text node is
    then read in place (``_has_class_word``), not copied normalized."""
    cdef xmlNode *t = a.children if a is not NULL else NULL
    if word and t is not NULL and t.next is NULL and (t.type == tree.XML_TEXT_NODE or
                                                       t.type == tree.XML_CDATA_SECTION_NODE):
        return t.content is not NULL and _has_class_word(t.content, token + 1, word)
    cdef const unsigned char *p
    cdef bint pending = False, any = False
    scratch.size = 0
    _add(scratch, " ", 1)
    while t is not NULL:
        if (t.type == tree.XML_TEXT_NODE or t.type == tree.XML_CDATA_SECTION_NODE) and t.content is not NULL:
            p = t.content
            while p[0]:
                if p[0] == 32 or p[0] == 9 or p[0] == 10 or p[0] == 13:
                    pending = any
                else:
                    if pending:
                        _add(scratch, " ", 1)
                        pending = False
                    any = True
                    _add(scratch, p, 1)
                p += 1
        t = t.next
    _add(scratch, " ", 2)  # the space and the NUL
    return strstr(scratch.data, token) is not NULL


def match_rules(root, rules):
    """The container rules' two XPath forms evaluated in one walk. ``rules`` are (tag or None, id or None, class
    token or None) standing for extract's id rule (any element whose id is ID; tag None) and class rule (TAG
    elements whose first class attribute, normalize-space'd and between spaces, holds ' TOKEN '); one list per rule
    of the matching elements in document order (what lxml's XPath returns), or None."""
    if not isinstance(root, _Element):
        return None
    cdef xmlNode *c_root = (<_Element>root)._c_node
    if c_root is NULL or c_root.doc is NULL:
        return None
    held = [(None if tag is None else tag.encode("utf-8", "surrogatepass"),
             None if id_ is None else id_.encode("utf-8", "surrogatepass"),
             None if token is None else f" {token} ".encode("utf-8", "surrogatepass")) for tag, id_, token in rules]
    cdef Rule *c_rules = <Rule *>calloc(len(held) or 1, sizeof(Rule))
    cdef Buffer scratch
    scratch.data = NULL
    scratch.size = scratch.capacity = 0
    if c_rules is NULL:
        raise MemoryError
    try:
        for i, (tag, id_, token) in enumerate(held):
            _set_rule(&c_rules[i], tag, id_, token)
        return _match_rules((<_Element>root)._doc, <xmlNode *>c_root.doc.children, c_rules, len(held), &scratch)
    finally:
        free(c_rules)
        free(scratch.data)


cdef bint _rule_holds(xmlNode *cur, const Rule *rule, Buffer *scratch) except -1:
    """Whether the rule selects the element (``cur``: an element node)."""
    cdef xmlAttr *a
    cdef bint hit = False
    if rule.tag is not NULL and (cur.ns is not NULL or strcmp(<const char *>cur.name, rule.tag) != 0):
        return False
    if rule.id_ is not NULL:  # @id = 'ID': any id attribute (no namespace) with that value
        a = cur.properties
        while a is not NULL and not hit:
            if a.type == tree.XML_ATTRIBUTE_NODE and a.ns is NULL and _same(<const char *>a.name, "id"):
                hit = _value_is(a, rule.id_)
            a = a.next
    if rule.token is not NULL:  # the first class attribute, normalize-space'd, between spaces
        hit = _class_holds(_first(cur, "class"), rule.token, scratch, rule.word)
    return hit


def match_rules_over(blocks, rules):
    """match_rules' elements among the blocks' elements and their ancestors, the only elements under which a rule
    can name blocks (extract.container_mask): one list per rule, each element once, in no set order; or None."""
    cdef Py_ssize_t count = len(rules), i, r
    cdef xmlNode *node
    cdef PyObject *descriptor = _field_descriptors[FIELDS - 1] if _fast_blocks else NULL
    cdef Numbers seen
    cdef Buffer scratch
    held = [(None if tag is None else tag.encode("utf-8", "surrogatepass"),
             None if id_ is None else id_.encode("utf-8", "surrogatepass"),
             None if token is None else f" {token} ".encode("utf-8", "surrogatepass")) for tag, id_, token in rules]
    cdef Rule *c_rules = <Rule *>calloc(count or 1, sizeof(Rule))
    if c_rules is NULL:
        raise MemoryError
    seen.keys = NULL
    seen.values = NULL
    seen.count = seen.mask = 0
    scratch.data = NULL
    scratch.size = scratch.capacity = 0
    found = [[] for _ in range(count)]
    try:
        for i, (tag, id_, token) in enumerate(held):
            _set_rule(&c_rules[i], tag, id_, token)
        for block in blocks:
            element = _element_of(block, descriptor)
            node = _element_node(element)
            if node is NULL:
                return None
            while node is not NULL:  # up to an element met before (its ancestors were too)
                if seen.keys is not NULL and seen.keys[_slot(&seen, node)] is not NULL:
                    break
                if 2 * (seen.count + 1) > seen.mask + 1:
                    _numbers_grow(&seen)
                i = _slot(&seen, node)
                seen.keys[i] = node
                seen.values[i] = 0
                seen.count += 1
                for r in range(count):
                    if _rule_holds(node, &c_rules[r], &scratch):
                        (<list>found[r]).append(elementFactory((<_Element>element)._doc, node))
                node = _parent_element(node)
        return found
    finally:
        free(c_rules)
        free(scratch.data)
        free(seen.keys)
        free(seen.values)


cdef xmlNode *_first_on_path(xmlNode *cur, const char **names, const long *positions, Py_ssize_t count,
                             Py_ssize_t depth) noexcept:
    """The first element in document order under the siblings from ``cur`` on that the path's steps from ``depth``
    select (each step: the children of that name, all of them or the one at that position among them)."""
    cdef long seen = 0
    cdef xmlNode *found
    while cur is not NULL:
        if cur.type == tree.XML_ELEMENT_NODE and cur.ns is NULL and strcmp(<const char *>cur.name, names[depth]) == 0:
            seen += 1
            if positions[depth] == 0 or seen == positions[depth]:
                if depth == count - 1:
                    return cur
                found = _first_on_path(cur.children, names, positions, count, depth + 1)
                if found is not NULL or positions[depth] != 0:
                    return found
        cur = cur.next
    return NULL


def first_on_path(root, steps):
    """The first element in document order an absolute XPath of plain steps selects (``steps``: (name, position)
    pairs, position 0 for a step without one: /html/body/div[2] is (("html", 0), ("body", 0), ("div", 2))), as a list
    of it or empty (what lxml's XPath gives, cut to its first element); None where root is not in a document."""
    if not isinstance(root, _Element):
        return None
    cdef xmlNode *c_root = (<_Element>root)._c_node
    if c_root is NULL or c_root.doc is NULL or not steps:
        return None
    cdef Py_ssize_t count = len(steps), i
    held = [name.encode("utf-8", "surrogatepass") for name, _ in steps]
    cdef const char **names = <const char **>calloc(count, sizeof(char *))
    cdef long *positions = <long *>calloc(count, sizeof(long))
    if names is NULL or positions is NULL:
        free(names)
        free(positions)
        raise MemoryError
    try:
        for i in range(count):
            names[i] = <const char *>held[i]
            positions[i] = steps[i][1]
        found = _first_on_path(<xmlNode *>c_root.doc.children, names, positions, count, 0)
        return [] if found is NULL else [elementFactory((<_Element>root)._doc, found)]
    finally:
        free(names)
        free(positions)


cdef list _match_rules(_Document doc, xmlNode *cur, Rule *rules, Py_ssize_t count, Buffer *scratch):
    found = [[] for _ in range(count)]
    cdef Py_ssize_t i
    while cur is not NULL:
        if cur.type == tree.XML_ELEMENT_NODE:
            for i in range(count):
                if _rule_holds(cur, &rules[i], scratch):
                    (<list>found[i]).append(elementFactory(doc, cur))
            if cur.children is not NULL:
                cur = cur.children
                continue
        while cur.next is NULL:
            cur = cur.parent
            if cur is NULL or cur.type == tree.XML_DOCUMENT_NODE or cur.type == tree.XML_HTML_DOCUMENT_NODE:
                return found
        cur = cur.next
    return found


# --- string-length(normalize-space(.)) ---------------------------------------------------------------------------
cdef Py_ssize_t _normalized_chars(xmlNode *top, Py_ssize_t stop=-1) noexcept:
    """string-length(normalize-space()) of the element's string value (its descendant text and CDATA in document
    order); -1 where an entity reference is inside. With ``stop`` >= 0 the count ends as soon as it is above
    ``stop``: what it has counted then (above stop, at most the whole count; an entity reference later unseen)."""
    cdef Py_ssize_t chars = 0
    cdef bint pending = False
    cdef const unsigned char *s
    cdef unsigned char b
    cdef xmlNode *cur = top.children
    while cur is not NULL:
        if cur.type == tree.XML_TEXT_NODE or cur.type == tree.XML_CDATA_SECTION_NODE:
            s = cur.content
            if s is not NULL:
                while s[0]:
                    b = s[0]
                    s += 1
                    if b == 32 or b == 9 or b == 10 or b == 13:
                        pending = chars > 0
                    elif (b & 0xC0) != 0x80:  # not a UTF-8 continuation byte: a new character
                        if pending:
                            chars += 1
                            pending = False
                        chars += 1
                        if chars > stop >= 0:
                            return chars
        elif cur.type == tree.XML_ENTITY_REF_NODE or cur.type == tree.XML_ENTITY_NODE:
            return -1
        elif cur.type == tree.XML_ELEMENT_NODE and cur.children is not NULL:
            cur = cur.children
            continue
        while cur.next is NULL:
            cur = cur.parent
            if cur is NULL or cur is top:
                return chars
        cur = cur.next
    return chars


def normalized_length(element, bint body=False, Py_ssize_t stop=-1):
    """string-length(normalize-space(.)) of the element as libxml2's XPath computes it, or None; with body=True
    the same of the page's /html/body (0 where there is none). With ``stop`` >= 0, a count above ``stop`` may be
    what was counted when it passed stop (at most the whole count: template.fitting's early end)."""
    if not isinstance(element, _Element):
        return None
    cdef xmlNode *node = (<_Element>element)._c_node
    cdef xmlNode *html
    cdef xmlNode *child
    cdef xmlNode *found = NULL
    if node is NULL or node.type != tree.XML_ELEMENT_NODE:
        return None
    if body:
        if node.doc is NULL:
            return None
        html = <xmlNode *>node.doc.children  # the first of /html/body in document order
        while html is not NULL and found is NULL:
            if html.type == tree.XML_ELEMENT_NODE and html.ns is NULL and _same(<const char *>html.name, "html"):
                child = html.children
                while child is not NULL and found is NULL:
                    if child.type == tree.XML_ELEMENT_NODE and child.ns is NULL and strcmp(<const char *>child.name,
                                                                                         "body") == 0:
                        found = child
                    child = child.next
            html = html.next
        if found is NULL:
            return 0
        node = found
    cdef Py_ssize_t chars = _normalized_chars(node, stop)
    return None if chars < 0 else chars


# --- language detection's automaton walk (metadata._with_compiled_walk) -------------------------------------------

cimport cython

@cython.boundscheck(False)  # every index is checked against the tables below
@cython.wraparound(False)
def dfa_visits(const uint32_t[::1] nextmove, const unsigned short[::1] rows, const int[::1] out_feat,
               const unsigned char[::1] data):
    """py3langid's visit_counts: the language model's byte automaton walked over the text's UTF-8 bytes (state =
    nextmove[(rows[state] << 8) + byte]; a state whose out_feat is >= 0 counts that feature): {feature: count}
    with the features in the order first met (a Counter's), None when the walk meets none. A row per state; a state
    or row outside the tables raises ValueError (so do tables of other types: Cython's buffer check)."""
    cdef Py_ssize_t n = data.shape[0], moves = nextmove.shape[0], states = out_feat.shape[0], i
    cdef size_t move
    cdef uint32_t state = 0
    cdef int feature
    if rows.shape[0] != states:
        raise ValueError("dfa_visits: tables of the wrong types or sizes")
    if n and not states:
        raise ValueError("dfa_visits: a state outside the tables")
    cdef dict found = {}
    cdef object key, count
    for i in range(n):
        move = (<size_t>rows[state] << 8) + data[i]
        if <Py_ssize_t>move >= moves:
            raise ValueError("dfa_visits: a state outside the tables")
        state = nextmove[move]
        if <Py_ssize_t>state >= states:
            raise ValueError("dfa_visits: a state outside the tables")
        feature = out_feat[state]
        if feature >= 0:
            key = feature  # boxed once for the lookup and the store
            count = found.get(key)
            found[key] = 1 if count is None else count + 1
    return found or None


# --- metadata.declared_elements_plain, in the segmentation walk ----------------------------------------------------
cdef bint _whole_document(xmlNode *c_root) noexcept:
    """Whether the element is its document's one top-level element (beside a DTD): XPath's // starts at the document,
    root.iter at the element, and they see the same elements only then."""
    if c_root is NULL or c_root.doc is NULL or c_root.type != tree.XML_ELEMENT_NODE:
        return False
    if c_root.parent is not <xmlNode *>c_root.doc:
        return False
    cdef xmlNode *cur = <xmlNode *>c_root.doc.children
    while cur is not NULL:
        if cur is not c_root and cur.type != tree.XML_DTD_NODE and cur.type != tree.XML_COMMENT_NODE:
            return False
        cur = cur.next
    return True


cdef bint _note_declared(list declared, list props, _Document doc, xmlNode *cur, bint in_body) except -1:
    """the segmentation walk's look at one element (``in_body``: below a <body>): appended to ``declared`` when it is a
    <meta>, <link> or <time>, to ``props`` when it has an itemprop attribute and is no <meta>; False where the element
    or its itemprop attribute is namespaced (the walk does not mirror that)."""
    cdef xmlAttr *a
    cdef bint is_meta, prop = False
    cdef const char *name = <const char *>cur.name
    if cur.ns is not NULL:
        return False
    is_meta = _same(name, "meta")
    if is_meta or _same(name, "link") or _same(name, "time"):
        declared.append(elementFactory(doc, cur))
    if in_body and not is_meta:
        a = cur.properties
        while a is not NULL:
            if a.type == tree.XML_ATTRIBUTE_NODE and _same(<const char *>a.name, "itemprop"):
                if a.ns is not NULL:
                    return False
                prop = True
            a = a.next
        if prop:
            props.append(elementFactory(doc, cur))
    return True


# --- metadata._declared_fields' <meta> loop and document._head_titles, over the gathered elements -----------------
cdef object _attribute_value(xmlNode *n, const char *name):
    """lxml's ``element.get(name)`` (no namespace): the first such attribute's value as str, None where absent;
    _Decline where its value is not plain text nodes (an entity reference: left to lxml)."""
    cdef xmlAttr *a = _first(n, name)
    if a is NULL:
        return None
    cdef xmlNode *t = a.children
    if t is NULL:
        return ""
    if t.next is NULL and (t.type == tree.XML_TEXT_NODE or t.type == tree.XML_CDATA_SECTION_NODE):
        return _text(<const char *>t.content) if t.content is not NULL else ""
    cdef Buffer b
    b.data = NULL
    b.size = b.capacity = 0
    try:
        _attribute_into(a, &b)
        return b.data[:b.size].decode("utf-8") if b.size else ""
    finally:
        free(b.data)


cdef inline bint _plain_meta(xmlNode *n) noexcept:
    """An element whose lxml tag is "meta" (no namespace)."""
    return n.type == tree.XML_ELEMENT_NODE and n.ns is NULL and _same(<const char *>n.name, "meta")


cdef bint _may_declare_link(xmlNode *n) except -1:
    """metadata._may_declare_link: the element's rel, lower-cased, holds "canonical" or "image_src"."""
    cdef object rel = _attribute_value(n, "rel")
    if not rel:
        return False
    lowered = (<str>rel).lower()
    return "canonical" in lowered or "image_src" in lowered


def meta_fields(elements, dict ranks):
    """metadata._declared_fields' loop over ``elements`` (a list) up to the <meta>s' own reading: per element, in
    order, for a <meta> (lxml tag "meta") whose property, name, itemprop or http-equiv (the first not empty),
    stripped and lower-cased, is a key of ``ranks`` (metadata._META_RANK: name -> (field, rank)) and whose content,
    stripped, is not empty, (field, rank, content stripped); for any other <meta>, nothing; a <time> as it is; any
    other element as it is where metadata._may_declare_link may be True of it, else nothing (a stylesheet's, an
    icon's <link>). None where an attribute read holds what this does not mirror (an entity reference)."""
    cdef list out = []
    cdef xmlNode *n
    cdef object key, content, hit
    cdef const char *names[4]
    cdef Py_ssize_t i
    names[0] = "property"
    names[1] = "name"
    names[2] = "itemprop"
    names[3] = "http-equiv"
    try:
        for element in elements:
            if not isinstance(element, _Element):
                out.append(element)
                continue
            n = (<_Element>element)._c_node
            if n is NULL or n.type != tree.XML_ELEMENT_NODE:
                out.append(element)
                continue
            if not _plain_meta(n):
                if (n.ns is NULL and _same(<const char *>n.name, "time")) or _may_declare_link(n):
                    out.append(element)
                continue
            key = None
            for i in range(4):
                key = _attribute_value(n, names[i])
                if key:
                    break
            if not key:
                continue  # "".strip().lower() is no name of ranks (nor is any name whose value is empty)
            hit = ranks.get((<str>key).strip().lower())
            if hit is None:
                continue
            content = _attribute_value(n, "content")
            if not content:
                continue
            content = (<str>content).strip()
            if content:
                out.append((hit[0], hit[1], content))
    except _Decline:
        return None
    return out


def head_titles(top, elements, titles):
    """document._head_titles(top, elements): the content of each <meta> of ``elements`` (a list) whose property or
    name is one of ``titles`` (a tuple of str) and whose parent is a <head> that is a child of ``top``, in order; None
    where an attribute read holds what this does not mirror."""
    if not isinstance(top, _Element):
        return None
    cdef xmlNode *c_top = (<_Element>top)._c_node
    cdef xmlNode *n
    cdef xmlNode *head
    cdef list found = []
    cdef object content
    try:
        for element in elements:
            if not isinstance(element, _Element):
                continue
            n = (<_Element>element)._c_node
            if n is NULL or not _plain_meta(n):
                continue
            if _attribute_value(n, "property") not in titles and _attribute_value(n, "name") not in titles:
                continue
            content = _attribute_value(n, "content")
            if content is None:
                continue
            head = _parent_element(n)
            if (head is not NULL and head.type == tree.XML_ELEMENT_NODE and head.ns is NULL
                    and _same(<const char *>head.name, "head") and _parent_element(head) is c_top):
                found.append(content)
    except _Decline:
        return None
    return found


# --- document._exact_headline: the blocks whose text is one of the declared titles' forms ---------------------------
def title_blocks(blocks, block_chars, Py_ssize_t longest, Py_ssize_t shortest, lengths, wanted, str marks):
    """document._title_blocks_plain(blocks, chars, longest, shortest, lengths, wanted, marks): the indexes, in order,
    of the blocks of at most ``longest`` characters (``chars``: their lengths) and at least half ``shortest``, whose
    text right-stripped of ``marks`` is as long as an entry of ``lengths`` (a set of int) or holds U+0130, and
    lower-cased is in ``wanted`` (a set of str); None where ``blocks`` is not a tuple as long as ``chars`` (a C
    contiguous int64 array)."""
    cdef const int64_t[::1] chars
    try:
        chars = block_chars
    except (TypeError, ValueError):
        return None
    if not isinstance(blocks, tuple) or len(<tuple>blocks) != chars.shape[0]:
        return None
    cdef list found = []
    cdef Py_ssize_t i, c, n = chars.shape[0]
    cdef str text
    for i in range(n):
        c = chars[i]
        if c > longest or 2 * c < shortest:
            continue
        text = (<tuple>blocks)[i].text
        text = text.rstrip(marks)
        if (len(text) in lengths or "\u0130" in text) and text.lower() in wanted:
            found.append(i)
    return found


# --- document.build_document's loop over the kept blocks (document._Builder.add) -----------------------------------
def add_blocks(builder, list blocks, list contexts, memo, node_class):
    """``builder.add(block, ctx, memo)`` of each block of ``blocks`` with its context of ``contexts`` (the compiled
    ``block_contexts`` tuples), in order, on a document._Builder without links (``base_url`` None): a block outside
    any <pre> (a paragraph, a heading, a list item, a data table's cell, a layout table's cell as a paragraph) is
    added here, as the method adds it (``node_class``: DocNode; ``memo.data_table`` tells a table's kind); code goes
    to the method. False (nothing added) where a context is not such a tuple, or the builder collects links; True
    when done."""
    if builder.base_url is not None or len(blocks) != len(contexts):
        return False
    for ctx in contexts:
        if type(ctx) is not tuple or len(<tuple>ctx) != 8:
            return False
    cdef list nodes = builder.nodes
    cdef tuple c
    cdef str text
    cdef Py_ssize_t i
    for i in range(len(blocks)):
        block = blocks[i]
        c = <tuple>contexts[i]
        pre, cell, table, item, depth, ordered, quote, heading = c
        if pre is not None:
            builder.add(block, c, memo)  # (code)
            continue
        builder.pre = None
        text = block.text
        if cell is not None and memo.data_table(table):  # a data table's cell: _Builder._add_cell's steps
            builder.item = None
            open_table = builder.table
            if open_table is None or (<tuple>open_table)[0] is not table:
                builder._close_table()
                open_table = builder.table = (table, quote, {}, [])
            rows = (<tuple>open_table)[2]
            row = cell.getparent()
            cells = (<dict>rows).get(row)
            if cells is None:
                cells = (<dict>rows)[row] = {}
            texts = (<dict>cells).get(cell)
            if texts is None:
                texts = (<dict>cells)[cell] = []
            (<list>texts).append(text)
            (<list>(<tuple>open_table)[3]).append(text)
            continue  # (a cell of a table that lays the page out: a paragraph, as below)
        if builder.table is not None:
            builder._close_table()
        if item is not None and depth:
            if item is builder.item and nodes and (<object>nodes[len(nodes) - 1]).kind == "item":
                last = nodes[len(nodes) - 1]
                nodes[len(nodes) - 1] = node_class("item", last.text + "\n" + text, last.level, last.ordered,
                                                   last.quote, (), False, last.links + ())
            else:
                builder.item = item
                nodes.append(node_class("item", text, depth, ordered, quote, (), False, ()))
            continue
        builder.item = None
        if heading:
            nodes.append(node_class("heading", text, heading, False, quote, (), False, ()))
        else:
            nodes.append(node_class("paragraph", text, 0, False, quote, (), False, ()))
    return True


# --- document._Contexts.of: where each kept block's element sits ------------------------------------------------
cdef tuple _NO_CONTEXT = (None, None, None, None, 0, False, 0, 0)


def block_contexts(elements):
    """document._Contexts().of(element) of each element of ``elements`` (a list), in order: (the nearest enclosing
    <pre>, the <td>/<th> below the nearest <table> when a table encloses it, the nearest <table>, the nearest <li>,
    the lists around it, whether the nearest list is an <ol>, the <blockquote>s around it, the level of the nearest
    <h1>-<h6>), the element itself counted and only elements of lxml tag names (no namespace) looked at, found in one
    walk up its ancestors (lxml's getparent); None where an entry is not an element."""
    if not isinstance(elements, list):
        return None
    cdef list out = []
    cdef xmlNode *n
    cdef xmlNode *pre
    cdef xmlNode *cell
    cdef xmlNode *table
    cdef xmlNode *item
    cdef xmlNode *candidate
    cdef long depth, quote, heading
    cdef int ordered
    cdef const char *name
    cdef _Document doc
    for element in <list>elements:
        if not isinstance(element, _Element) or (<_Element>element)._c_node is NULL:
            return None
        doc = (<_Element>element)._doc
        n = (<_Element>element)._c_node
        pre = cell = table = item = candidate = NULL
        depth = quote = heading = 0
        ordered = -1  # (not known yet: the nearest list decides)
        while n is not NULL:
            if n.type == tree.XML_ELEMENT_NODE and n.ns is NULL:
                name = <const char *>n.name
                if name[0] == c'p':
                    if pre is NULL and _same(name, "pre"):
                        pre = n
                elif name[0] == c't':
                    if _same(name, "table"):
                        if table is NULL:
                            table = n
                            cell = candidate  # a cell below the nearest table (None: the table's own text)
                    elif (_same(name, "td") or _same(name, "th")) and table is NULL and candidate is NULL:
                        candidate = n
                elif name[0] == c'l':
                    if item is NULL and _same(name, "li"):
                        item = n
                elif name[0] == c'u' or name[0] == c'o' or name[0] == c'm' or name[0] == c'd':
                    if (_same(name, "ul") or _same(name, "ol") or _same(name, "menu")
                            or _same(name, "dir")):
                        depth += 1
                        if ordered < 0:
                            ordered = name[0] == c'o'
                elif name[0] == c'b':
                    if _same(name, "blockquote"):
                        quote += 1
                elif name[0] == c'h':
                    if heading == 0 and c'1' <= name[1] <= c'6' and name[2] == 0:
                        heading = name[1] - c'0'
            n = _parent_element(n)
        if pre is NULL and cell is NULL and table is NULL and item is NULL and not depth and not quote and not heading:
            out.append(_NO_CONTEXT)
            continue
        out.append((None if pre is NULL else elementFactory(doc, pre),
                    None if cell is NULL else elementFactory(doc, cell),
                    None if table is NULL else elementFactory(doc, table),
                    None if item is NULL else elementFactory(doc, item),
                    depth, ordered > 0, quote, heading))
    return out


# --- extract.own_content (with the template's path codes): the stretch of the page's own content, in one pass ------
DEF PLACED_PATH = 8  # extract.PLACED_PATH, NO_LINK_PATH, HEADING_PATH (a test checks they are the same)
DEF NO_LINK_PATH = 16
DEF HEADING_PATH = 32


cdef int _role_main(xmlNode *n) except -2:
    """extract.in_declared_main's walk: 1 where the element or an ancestor (lxml's getparent) has role="main"."""
    cdef object role
    while n is not NULL:
        if n.type == tree.XML_ELEMENT_NODE:
            role = _attribute_value(n, "role")
            if role is not None and role == "main":
                return 1
        elif n.type != tree.XML_COMMENT_NODE and n.type != tree.XML_PI_NODE:
            raise _Decline  # an entity reference: left to lxml
        n = _parent_element(n)
    return 0


cdef bint _in_declared_main(block) except -1:
    """extract.in_declared_main(block)"""
    if "/main/" in block.tag_path + "/":
        return True
    element = block.element
    if element is None:
        return False
    if not isinstance(element, _Element) or (<_Element>element)._c_node is NULL:
        raise _Decline
    return _role_main((<_Element>element)._c_node) == 1


def own_stretch(blocks, trusted, chrome, chars, links, codes, heading_tags, double link_share, double paragraph_chars,
                double gap):
    """extract.own_content(seg, trusted, chrome, settings, codes) where ``codes`` are the page's path codes, in one
    pass over the trusted blocks: True where it gives ``trusted`` itself, else (lo, hi): it gives ``trusted`` within
    blocks lo..hi-1 and nothing else; None where it cannot say (an array not of the kind it reads, an entity
    reference on a heading's ancestors). ``trusted``, ``chrome``: bool arrays; ``chars``, ``links``: int64;
    ``codes``: uint8; all C-contiguous, one entry a block."""
    cdef Py_buffer tb, cb, nb, lb, pb
    cdef Py_ssize_t count = len(blocks)
    cdef Py_ssize_t i, k, w, first = -1, last = -1, start, end
    cdef const unsigned char *t
    cdef const unsigned char *ch
    cdef const int64_t *n
    cdef const int64_t *l
    cdef const unsigned char *c
    cdef Py_ssize_t *where = NULL
    cdef int64_t *before = NULL  # the chrome blocks before each trusted block
    cdef unsigned char *text = NULL  # per trusted block: the page's own text (not mostly links, not empty)
    cdef unsigned char *placed = NULL
    cdef unsigned char *heading = NULL
    cdef int64_t seen
    cdef int got = 0
    try:
        PyObject_GetBuffer(trusted, &tb, PyBUF_C_CONTIGUOUS)
        got = 1
        PyObject_GetBuffer(chrome, &cb, PyBUF_C_CONTIGUOUS)
        got = 2
        PyObject_GetBuffer(chars, &nb, PyBUF_C_CONTIGUOUS)
        got = 3
        PyObject_GetBuffer(links, &lb, PyBUF_C_CONTIGUOUS)
        got = 4
        PyObject_GetBuffer(codes, &pb, PyBUF_C_CONTIGUOUS)
        got = 5
    except (TypeError, ValueError, BufferError):
        _release(&tb, &cb, &nb, &lb, &pb, got)
        return None
    try:
        if (tb.len != count or cb.len != count or pb.len != count or nb.len != count * 8 or lb.len != count * 8
                or tb.itemsize != 1 or cb.itemsize != 1 or pb.itemsize != 1 or nb.itemsize != 8 or lb.itemsize != 8):
            return None
        t = <const unsigned char *>tb.buf
        ch = <const unsigned char *>cb.buf
        n = <const int64_t *>nb.buf
        l = <const int64_t *>lb.buf
        c = <const unsigned char *>pb.buf
        w = 0
        for i in range(count):
            if t[i]:
                w += 1
        if not w:
            return True
        where = <Py_ssize_t *>malloc(w * sizeof(Py_ssize_t))
        before = <int64_t *>malloc(w * sizeof(int64_t))
        text = <unsigned char *>malloc(w)
        placed = <unsigned char *>malloc(w)
        heading = <unsigned char *>malloc(w)
        if where is NULL or before is NULL or text is NULL or placed is NULL or heading is NULL:
            raise MemoryError()
        k = 0
        seen = 0
        for i in range(count):
            if ch[i]:
                seen += 1
            if t[i]:
                where[k] = i
                before[k] = seen  # (numpy's cumsum(chrome)[where])
                text[k] = (<double>l[i] <= link_share * <double>n[i]) and n[i] > 0
                placed[k] = (c[i] & PLACED_PATH) != 0
                heading[k] = 0
                if (c[i] & (PLACED_PATH | NO_LINK_PATH | HEADING_PATH)) == (PLACED_PATH | NO_LINK_PATH | HEADING_PATH):
                    block = blocks[i]
                    heading[k] = block.tag in heading_tags and _in_declared_main(block)
                k += 1
        for k in range(w):  # a section heading over the page's own text, and not the last trusted block
            if heading[k] and not (k + 1 < w and text[k + 1] and placed[k + 1]):
                heading[k] = 0
            if ((<double>n[where[k]] >= paragraph_chars) or heading[k]) and text[k]:
                if first < 0:
                    first = k
                last = k
        if first < 0:
            return True
        start = 0
        for k in range(first):  # the last gap of the template's blocks before the first strong block
            if <double>(before[k + 1] - before[k]) >= gap:
                start = k + 1
        end = w
        for k in range(last, w - 1):  # the first such gap after the last one
            if <double>(before[k + 1] - before[k]) >= gap:
                end = k + 1
                break
        return where[start], where[end - 1] + 1
    except _Decline:
        return None
    finally:
        free(where)
        free(before)
        free(text)
        free(placed)
        free(heading)
        _release(&tb, &cb, &nb, &lb, &pb, got)


cdef void _release(Py_buffer *a, Py_buffer *b, Py_buffer *c, Py_buffer *d, Py_buffer *e, int got) noexcept:
    if got > 0:
        PyBuffer_Release(a)
    if got > 1:
        PyBuffer_Release(b)
    if got > 2:
        PyBuffer_Release(c)
    if got > 3:
        PyBuffer_Release(d)
    if got > 4:
        PyBuffer_Release(e)


# --- metadata.named_candidates ------------------------------------------------------------------------------------
cdef const char *_NAMING_WORDS[8]  # what metadata._NAMED_CLASS looks for in a class or rel (any case)
cdef const char *_AUTHOR_PATHS[8]  # what metadata._AUTHOR_HREF looks for in a link's href, and more
_NAMING_WORDS[0] = "author"
_NAMING_WORDS[1] = "byline"
_NAMING_WORDS[2] = "writer"
_NAMING_WORDS[3] = "reporter"
_NAMING_WORDS[4] = "date"
_NAMING_WORDS[5] = "publish"
_NAMING_WORDS[6] = "posted"
_NAMING_WORDS[7] = "time"
_AUTHOR_PATHS[0] = "/author"
_AUTHOR_PATHS[1] = "/byline"
_AUTHOR_PATHS[2] = "/editors"
_AUTHOR_PATHS[3] = "/people"
_AUTHOR_PATHS[4] = "/writers"
_AUTHOR_PATHS[5] = "/profile"
_AUTHOR_PATHS[6] = "/staff"
_AUTHOR_PATHS[7] = "/journalist"


cdef unsigned char _NAMING_STARTS[256]  # 1 for a byte that starts one of _NAMING_WORDS (in either ASCII case)
cdef unsigned char _PATH_STARTS[256]  # ... of _AUTHOR_PATHS (as it is)
cdef unsigned char _AUTHOR_STARTS[256]  # ... of _AUTHOR_WORDS (in either ASCII case)


cdef void _word_starts(unsigned char *starts, const char **words, Py_ssize_t count, bint any_case) noexcept:
    cdef Py_ssize_t i
    cdef unsigned char c
    memset(starts, 0, 256)
    for i in range(count):
        c = <unsigned char>words[i][0]
        starts[c] = 1
        if any_case and 97 <= c <= 122:
            starts[c - 32] = 1


cdef bint _holds_word(const unsigned char *s, const char **words, Py_ssize_t count, bint any_case,
                      const unsigned char *starts) noexcept:
    """Whether s holds one of the words (ASCII letters; with any_case, in any ASCII case), or, with any_case, any
    byte outside ASCII (where Unicode case folding may make one: left to the caller's regex). ``starts``: the
    words' first bytes (``_word_starts``): a byte that starts none is passed by one look."""
    cdef const unsigned char *p
    cdef const unsigned char *w
    cdef const unsigned char *q
    cdef Py_ssize_t i
    cdef unsigned char c
    p = s
    while p[0]:
        c = p[0]
        if any_case and c >= 0x80:
            return True
        if not starts[c]:
            p += 1
            continue
        if any_case and 65 <= c <= 90:
            c += 32
        for i in range(count):
            w = <const unsigned char *>words[i]
            if c != w[0]:
                continue
            q = p + 1
            w += 1
            while w[0] and q[0] and (q[0] + 32 if any_case and 65 <= q[0] <= 90 else q[0]) == w[0]:
                q += 1
                w += 1
            if not w[0]:
                return True
        p += 1
    return False


cdef bint _may_be_named(xmlNode *n) noexcept:
    """Whether metadata._kind may find a name in the element: a class or rel attribute holding one of its words (or
    what Unicode case folding or entities may turn into one), or a link whose href holds an author path."""
    cdef xmlAttr *a = n.properties
    cdef xmlNode *t
    cdef const char *name
    cdef bint link = n.ns is NULL and _same(<const char *>n.name, "a")
    while a is not NULL:
        name = <const char *>a.name
        if _same(name, "class") or _same(name, "rel") or (link and _same(name, "href")):
            t = a.children
            if t is not NULL and (t.next is not NULL or t.type != tree.XML_TEXT_NODE):
                return True  # a value of several pieces: the caller reads it
            if t is not NULL and t.content is not NULL:
                if name[0] == b'h':
                    if _holds_word(t.content, _AUTHOR_PATHS, 8, False, _PATH_STARTS):
                        return True
                elif _holds_word(t.content, _NAMING_WORDS, 8, True, _NAMING_STARTS):
                    return True
        a = a.next
    return False


cdef const char *_AUTHOR_WORDS[7]  # what metadata._AUTHOR_NAMES looks for in a class, id, rel or itemprop (any case)
_AUTHOR_WORDS[0] = "author"
_AUTHOR_WORDS[1] = "byline"
_AUTHOR_WORDS[2] = "by-line"
_AUTHOR_WORDS[3] = "writer"
_AUTHOR_WORDS[4] = "contributor"
_AUTHOR_WORDS[5] = "reporter"
_AUTHOR_WORDS[6] = "creator"
_word_starts(_NAMING_STARTS, _NAMING_WORDS, 8, True)
_word_starts(_PATH_STARTS, _AUTHOR_PATHS, 8, False)
_word_starts(_AUTHOR_STARTS, _AUTHOR_WORDS, 7, True)


def may_be_named_author(element, Py_ssize_t levels):
    """False where metadata._named(element, metadata._AUTHOR_NAMES, levels) is False for sure: neither the element
    nor its next ancestors (``levels`` in all) has a class, id, rel or itemprop attribute holding one of the pattern's
    words in any ASCII case (nor a byte outside ASCII, nor a value of several pieces); True otherwise (the caller's
    regex decides); None for what is not an element."""
    if not isinstance(element, _Element):
        return None
    cdef xmlNode *node = (<_Element>element)._c_node
    cdef xmlAttr *a
    cdef xmlNode *t
    cdef const char *name
    cdef Py_ssize_t level
    if node is NULL:
        return None
    for level in range(levels):
        if node is NULL:
            return False
        if node.type == tree.XML_ELEMENT_NODE:
            a = node.properties
            while a is not NULL:
                name = <const char *>a.name
                if (_same(name, "class") or _same(name, "id") or _same(name, "rel")
                        or _same(name, "itemprop")):
                    t = a.children
                    if t is not NULL and (t.next is not NULL or t.type != tree.XML_TEXT_NODE):
                        return True
                    if t is not NULL and t.content is not NULL and _holds_word(t.content, _AUTHOR_WORDS, 7, True,
                                                                               _AUTHOR_STARTS):
                        return True
                a = a.next
        elif node.type != tree.XML_COMMENT_NODE and node.type != tree.XML_PI_NODE:
            return True  # an entity reference: left to the caller
        node = _parent_element(node)
    return False


def named_candidates(element, last_parent, Py_ssize_t max_inline):
    """metadata.named_candidates_plain(element, last_parent, max_inline) less elements whose class, rel and link
    target cannot name a byline or a date (what metadata._kind finds in them is None), in the same order; None where
    the element's subtree holds an entity reference or an XInclude node, or the block tags are not configured."""
    if _block_class is None or not isinstance(element, _Element):
        return None
    cdef xmlNode *c_node = (<_Element>element)._c_node
    if c_node is NULL or c_node.type != tree.XML_ELEMENT_NODE:
        return None
    cdef xmlNode *last = NULL
    if last_parent is not None:
        if not isinstance(last_parent, _Element):
            return None
        last = (<_Element>last_parent)._c_node
    return _named_candidates(<_Element>element, c_node, last, max_inline)


def named_candidates_each(elements, Py_ssize_t max_inline):
    """For each of ``elements`` (a list; None entries allowed), in order: None where it is None or a <body> or <html>
    (no namespace), else ``named_candidates(element, last_parent, max_inline)`` with ``last_parent`` the parent of the
    last element before it that was not None (metadata.named_metadata's loop over a page's blocks, in one call: no
    parent made a Python object); None (for the whole list) where named_candidates declines for any of them."""
    if _block_class is None or not isinstance(elements, list):
        return None
    cdef list out = []
    cdef xmlNode *last = NULL
    cdef xmlNode *c_node
    cdef object found
    for element in <list>elements:
        if element is None:
            out.append(None)
            continue
        if not isinstance(element, _Element):
            return None
        c_node = (<_Element>element)._c_node
        if c_node is NULL or c_node.type != tree.XML_ELEMENT_NODE:
            return None
        if c_node.ns is NULL and (_same(<const char *>c_node.name, "body")
                                  or _same(<const char *>c_node.name, "html")):
            out.append(None)
            continue
        found = _named_candidates(<_Element>element, c_node, last, max_inline)
        if found is None:
            return None
        out.append(found)
        last = _parent_element(c_node)
    return out


cdef object _named_candidates(_Element element, xmlNode *c_node, xmlNode *last, Py_ssize_t max_inline):
    """named_candidates of an element (``c_node`` its node, ``last`` the node of ``last_parent`` or NULL)."""
    cdef _Document doc = element._doc
    cdef list found = []
    if _may_be_named(c_node):
        found.append(element)
    cdef xmlNode *parent = _parent_element(c_node)
    if (parent is not NULL and parent is not last and not (parent.type == tree.XML_ELEMENT_NODE and parent.ns is NULL
            and (_same(<const char *>parent.name, "body") or _same(<const char *>parent.name, "html")))):
        if parent.type == tree.XML_ELEMENT_NODE and _may_be_named(parent):
            found.append(elementFactory(doc, parent))
    cdef Py_ssize_t children = 0
    cdef xmlNode *cur = c_node.children
    while cur is not NULL:
        if _is_element(cur):
            children += 1
        cur = cur.next
    if not children or children > max_inline:
        return found
    cur = c_node.children
    while True:  # the element's descendant elements, in document order
        if cur.type == tree.XML_ELEMENT_NODE:
            if (cur.ns is not NULL or not _tag_value(&_block_tags, cur)) and _may_be_named(cur):
                found.append(elementFactory(doc, cur))
            if cur.children is not NULL:
                cur = cur.children
                continue
        elif (cur.type == tree.XML_ENTITY_REF_NODE or cur.type == tree.XML_XINCLUDE_START
              or cur.type == tree.XML_XINCLUDE_END):
            return None
        while cur.next is NULL:
            cur = cur.parent
            if cur is c_node:
                return found
        cur = cur.next


# --- metadata._in_comments ---------------------------------------------------------------------------------------
cdef const char *_COMMENT_WORDS[5]  # what metadata._COMMENTS looks for in a class or id (any case)
_COMMENT_WORDS[0] = "comment"
_COMMENT_WORDS[1] = "reply"
_COMMENT_WORDS[2] = "replies"
_COMMENT_WORDS[3] = "respond"
_COMMENT_WORDS[4] = "disqus"
cdef unsigned char _COMMENT_STARTS[256]
_word_starts(_COMMENT_STARTS, _COMMENT_WORDS, 5, True)


def in_comments(element):
    """metadata._in_comments(element): whether the element or an ancestor (lxml's getparent) has a class or id
    holding one of metadata._COMMENTS' words in any ASCII case; None where a value holds a byte outside ASCII (Unicode
    case folding: the caller's regex decides), a value is not plain text, an entity reference is on the way, or it is
    no element."""
    if not isinstance(element, _Element) or (<_Element>element)._c_node is NULL:
        return None
    cdef xmlNode *n = (<_Element>element)._c_node
    cdef xmlAttr *a
    cdef xmlNode *t
    while n is not NULL:
        if n.type == tree.XML_ELEMENT_NODE:
            for name in (b"class", b"id"):
                a = _first(n, <const char *>name)
                if a is NULL:
                    continue
                t = a.children
                if t is NULL:
                    continue
                if t.next is not NULL or (t.type != tree.XML_TEXT_NODE and t.type != tree.XML_CDATA_SECTION_NODE):
                    return None
                if t.content is not NULL and _holds_word(t.content, _COMMENT_WORDS, 5, True, _COMMENT_STARTS):
                    return None if _non_ascii(t.content) else True
        elif n.type != tree.XML_COMMENT_NODE and n.type != tree.XML_PI_NODE:
            return None
        n = _parent_element(n)
    return False


cdef bint _non_ascii(const unsigned char *s) noexcept:
    while s[0]:
        if s[0] >= 0x80:
            return True
        s += 1
    return False


# --- metadata._short_text ---------------------------------------------------------------------------------------------
def short_text(element, Py_ssize_t limit):
    """metadata._short_text_plain(element, limit): " ".join of the words of the element's text pieces (itertext:
    its text and its descendants' text and tails), or None once that is longer than ``limit`` characters (read no
    further); False where the element's subtree holds what this does not mirror (an entity reference, an XInclude
    node) or it is no element."""
    if not isinstance(element, _Element):
        return False
    cdef xmlNode *top = (<_Element>element)._c_node
    if top is NULL or top.type != tree.XML_ELEMENT_NODE:
        return False
    cdef Buffer out
    out.data = NULL
    out.size = out.capacity = 0
    cdef Py_ssize_t count = 0
    cdef bint pending = False
    cdef const unsigned char *p
    cdef const unsigned char *first
    cdef uint32_t code
    cdef xmlNode *cur = top.children
    try:
        while cur is not NULL:
            if cur.type == tree.XML_TEXT_NODE or cur.type == tree.XML_CDATA_SECTION_NODE:
                p = cur.content
                while p is not NULL and p[0]:
                    first = p
                    code = _utf8_next(&p)
                    if Py_UNICODE_ISSPACE(code):
                        pending = count > 0
                        continue
                    if pending:
                        _add(&out, " ", 1)
                        count += 1
                        pending = False
                    _add(&out, first, p - first)
                    count += 1
                    if count > limit:
                        return None
            elif cur.type == tree.XML_ELEMENT_NODE:
                pending = count > 0  # a piece ends where an element starts
                if cur.children is not NULL:
                    cur = cur.children
                    continue
            elif cur.type == tree.XML_COMMENT_NODE or cur.type == tree.XML_PI_NODE:
                pending = count > 0  # its text is no piece; its tail is one
            else:
                return False
            while cur.next is NULL:
                cur = cur.parent
                if cur is top:
                    return out.data[:out.size].decode("utf-8") if out.size else ""
                pending = count > 0  # ... and where one ends
            cur = cur.next
        return out.data[:out.size].decode("utf-8") if out.size else ""
    finally:
        free(out.data)


def names_outside_dict(_Element root):
    """(elements, attributes) of root's document whose names its dictionary does not own: none in a tree lxml's
    parser built (it moves them there), and none in one parse_html built (libxml2 2.14 makes them there)."""
    _libxml2_functions()
    if _xml_dict_owns is NULL:
        raise RuntimeError("xmlDictOwns is not at hand")
    cdef _DictOwns owns = _xml_dict_owns
    cdef tree.xmlDoc *doc = root._c_node.doc
    cdef xmlNode *cur = doc.children
    cdef xmlAttr *attr
    cdef int elements = 0, attributes = 0
    while cur is not NULL:
        if cur.type == tree.XML_ELEMENT_NODE:
            if owns(doc.dict, cur.name) != 1:
                elements += 1
            attr = cur.properties
            while attr is not NULL:
                if owns(doc.dict, attr.name) != 1:
                    attributes += 1
                attr = attr.next
        if cur.children is not NULL and cur.type == tree.XML_ELEMENT_NODE:
            cur = cur.children
            continue
        while cur is not NULL and cur.next is NULL:
            cur = cur.parent
            if cur is not NULL and <void *>cur == <void *>doc:
                cur = NULL
        if cur is not NULL:
            cur = cur.next
    return elements, attributes
