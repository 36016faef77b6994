"""Decoded HTML text -> lxml tree, with scripts, styles, comments and the like dropped.

The parsing boundary: whatever the input holds (NUL and control characters, an XML encoding declaration
inside a decoded string, a bogus <meta charset>), lxml is only ever handed clean UTF-8 bytes with the
encoding stated, so the page's own declarations cannot mislead it.

A page read back from the store comes as its stored UTF-8 bytes (always valid UTF-8): those are cleaned as they
are, into the same bytes their decoded text would give, without decoding and encoding again.
"""

from __future__ import annotations

import re
import threading

from lxml import etree

from . import config
from . import native
from .blocks import head_title
from .config import MAX_TITLE_CHARS

# Control characters (never part of a multi-byte UTF-8 sequence) become spaces: in C while a decoded page is
# encoded, by bytes.translate on a stored page's bytes.
_CONTROLS = bytes([*range(0, 9), 11, 12, *range(14, 32), 127])  # all but \t \n \r
_CONTROL_TO_SPACE = bytes.maketrans(_CONTROLS, b" " * len(_CONTROLS))
_CONTROL_BYTES = tuple(bytes([c]) for c in _CONTROLS)  # looked for one by one (memchr) before bytes are translated
_XML_DECL = re.compile(r"^\s*<\?xml[^>]*>", re.IGNORECASE)
# What \s matches in a str pattern (str.isspace): _XML_DECL's leading whitespace, spelled in UTF-8 for the bytes
# twin (a bytes pattern's \s is ASCII only). IGNORECASE changes nothing else: "xml" has no non-ASCII case forms.
UNICODE_SPACES = ("\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
                  "\u2009\u200a\u2028\u2029\u202f\u205f\u3000")
_XML_DECL_UTF8 = re.compile(b"(?:" + b"|".join(re.escape(c.encode("utf-8")) for c in UNICODE_SPACES) +
                            rb")*<\?xml[^>]*>", re.IGNORECASE)
_UNCLOSED_TITLE = re.compile(rb"(<title[^>]*>[^<\n]*)", re.IGNORECASE)

# lxml.etree's parser, not lxml.html's: html's element classes cost a Python call per element proxy.
# huge_tree=False (lxml's default, said here on purpose): libxml2 keeps its limits on depth (config.MAX_DEPTH) and
# on the size of one text node.
# collect_ids: where the compiled walk is built (and can register ids: _ids_on_demand), the parser does not register the page's ids (a hash insert per
# id, and for each id a page repeats a validity error lxml logs: 7% of the parse), and only an XPath that calls
# id() has them registered, on its page, before it runs (compile_xpath); without the walk the parser collects them.
def _ids_on_demand() -> bool:
    """Whether the compiled walk can register a page's ids after parsing (libxml2's xmlIsID/xmlAddID found in the
    lxml it runs with): tried once on a small page parsed without ids; where not, the parser collects them."""
    if native.walk is None:
        return False
    probe = etree.fromstring(b"<p id='x'></p>", parser=etree.HTMLParser(collect_ids=False))
    return bool(native.walk.register_ids(probe)) and len(probe.xpath("id('x')")) == 1


_IDS_ON_DEMAND = _ids_on_demand()
_PARSER = etree.HTMLParser(encoding="utf-8", remove_comments=True, remove_pis=True, no_network=True,
                           default_doctype=False, huge_tree=False, collect_ids=not _IDS_ON_DEMAND)
_ID_CALL = re.compile(r"id\s*\(")  # an XPath that may call id() (a few other expressions match too: harmless)

# markup_counts' tokens (ASCII whitespace as C's isspace has it)
_TAG_NAME = re.compile(rb"[^ \t\n\r\x0b\x0c>/]*")
_GAP = re.compile(rb"[ \t\n\r\x0b\x0c/]*")
_ATTRIBUTE_NAME = re.compile(rb"[^ \t\n\r\x0b\x0c>/=]*")
_SPACES = re.compile(rb"[ \t\n\r\x0b\x0c]*")
_UNQUOTED = re.compile(rb"[^ \t\n\r\x0b\x0c>]*")
_RAW_TEXT_END = {b"script": re.compile(rb"</script", re.IGNORECASE), b"style": re.compile(rb"</style", re.IGNORECASE)}


def clean_text(markup: str) -> bytes:
    """UTF-8 bytes without what lxml refuses in a decoded string: control characters and an XML declaration."""
    markup = _XML_DECL.sub("", markup, count=1)
    if native.numeric is not None:
        return native.numeric.utf8_controls_to_space(markup)  # the same bytes, in one pass
    return markup.encode("utf-8", "replace").translate(_CONTROL_TO_SPACE)


def clean_utf8(data: bytes) -> bytes:
    """``clean_text(data.decode("utf-8"))`` for valid UTF-8 ``data``, byte for byte, without decoding: a leading
    XML declaration cut the way _XML_DECL cuts it from the text, control characters (never part of a multi-byte
    sequence) turned into spaces."""
    declaration = _XML_DECL_UTF8.match(data)
    if declaration is not None:
        data = data[declaration.end():]
    return data.translate(_CONTROL_TO_SPACE) if has_controls(data) else data


def has_controls(data: bytes) -> bool:
    """Whether bytes hold a control character that ``clean_utf8`` turns into a space. Pages rarely do: one pass in C
    where compiled, else one memchr pass a control character (a third of ``bytes.translate``, which reads and copies
    every byte through its table)."""
    if native.numeric is not None:
        return native.numeric.has_controls(data)
    return any(control in data for control in _CONTROL_BYTES)


def parse_checked(markup: str | bytes, *, limits: bool = True) -> tuple[etree._Element | None, str | None]:
    """``parse_html`` with the page limits checked on the bytes before lxml sees them (unless not ``limits``):
    (tree, None), (None, why the page is over a limit), or (None, None) when nothing parses."""
    data = clean_utf8(markup) if isinstance(markup, bytes) else clean_text(markup)
    problem = over_limits(data) if limits else None
    if problem is not None:
        return None, problem
    return _parse_clean(data), None


def over_limits(data: bytes) -> str | None:
    """Why markup is over config's page limits (start tags, attributes of one tag, attributes), or None."""
    tags, attributes, total = markup_counts(data)
    if tags > config.MAX_START_TAGS:
        return f"{tags} start tags (limit {config.MAX_START_TAGS})"
    if attributes > config.MAX_ATTRIBUTES:
        return f"{attributes} attributes in one tag (limit {config.MAX_ATTRIBUTES})"
    if total > config.MAX_PAGE_ATTRIBUTES:
        return f"{total} attributes (limit {config.MAX_PAGE_ATTRIBUTES})"
    return None


def markup_counts(data: bytes) -> tuple[int, int, int]:
    """(start tags, most attributes in one start tag, attributes) of markup, read as an HTML tokenizer reads tags: "<" and an
    ASCII letter opens one, a quoted attribute value runs to its closing quote; comments and the raw text of script
    and style elements hold no tags. One pass, in C where compiled."""
    if native.numeric is not None:
        return native.numeric.markup_counts(data)
    return _markup_counts_plain(data)


def _markup_counts_plain(data: bytes) -> tuple[int, int, int]:
    size, at, tags, most, total = len(data), 0, 0, 0, 0
    while (at := data.find(b"<", at) + 1) > 0:
        if data.startswith(b"!--", at):
            end = data.find(b"-->", at + 3)
            at = size if end < 0 else end + 3
            continue
        if at >= size or not (65 <= data[at] <= 90 or 97 <= data[at] <= 122):
            continue
        tags += 1
        name = at
        at = _TAG_NAME.match(data, at).end()
        raw = _RAW_TEXT_END.get(data[name:at].lower())
        attributes = 0
        while True:
            at = _GAP.match(data, at).end()
            if at >= size:
                break
            if data[at] == 62:  # ">"
                at += 1
                break
            attributes += 1
            at = _SPACES.match(data, _ATTRIBUTE_NAME.match(data, at + 1).end()).end()
            if at < size and data[at] == 61:  # "="
                at = _SPACES.match(data, at + 1).end()
                if at < size and data[at] in (34, 39):  # a quoted value
                    end = data.find(data[at:at + 1], at + 1)
                    at = size if end < 0 else end + 1
                else:
                    at = _UNQUOTED.match(data, at).end()
        most = max(most, attributes)
        total += attributes
        if raw is not None and at < size:
            end = raw.search(data, at)
            at = size if end is None else end.end()
        if at >= size:
            break
    return tags, most, total


def parse_html(markup: str | bytes) -> etree._Element | None:
    """Parse HTML into an lxml tree with non-content elements removed; None if nothing parses.

    ``markup`` is decoded text, or UTF-8 bytes known to be valid (a stored page's, ``StoredPage.html_bytes``):
    both give lxml the same bytes for the same page.
    """
    return _parse_clean(clean_utf8(markup) if isinstance(markup, bytes) else clean_text(markup))


def lean_markup(data: bytes) -> bytes:
    """The bytes libxml2 is handed for ``data``: without the content of elements _parse_clean strips
    (config.DROP_TAGS), which the parser would build for nothing: the raw text of script, style, iframe and
    textarea elements, and the subtree of svg, select, noscript and the like where leaving it out leaves the rest of
    the tree as libxml2 builds it (templater._numeric.lean_markup says when). The page is read as libxml2's HTML
    tokenizer reads it, so the tree is the one ``data`` gives once those elements are stripped. Where the C
    extension is not built, or lxml runs another libxml2 than the one whose tokenizer and tree builder it follows
    (LEAN_LIBXML2), ``data`` as it is (the same tree)."""
    if not _LEAN:
        return data
    return native.numeric.lean_markup_bare(data) if _LEAN_BARE else native.numeric.lean_markup(data)


LEAN_LIBXML2 = (2, 14)  # the libxml2 (major, minor) whose HTML tokenizer lean_markup follows (HTML5's, since 2.14)
_LEAN = (native.numeric is not None and etree.LIBXML_VERSION[:2] == LEAN_LIBXML2
         and set(native.numeric.lean_left_out) <= set(config.DROP_TAGS))  # (elements kept keep their content)
# The start tags of the elements _parse_clean strips are handed over without their attributes too (lean_bare: about
# 70 attributes a page, 6% of those libxml2 would build, each parsed, made and freed for nothing): libxml2 builds
# and strips the same elements either way. Not where the parser registers ids (no compiled walk): an id an element
# to strip holds would then stay taken once the element is gone, as an id it holds stays taken now.
_LEAN_BARE = _LEAN and _IDS_ON_DEMAND and set(native.numeric.lean_bare) <= set(config.DROP_TAGS)


def _parse_clean(markup: bytes) -> etree._Element | None:
    root = _parse(lean_markup(markup))
    if root is not None and _swallowed_by_title(root):  # (a title runs as far on both: its text is not left out)
        repaired = _parse(_UNCLOSED_TITLE.sub(rb"\1</title>", markup, count=1))  # the page's own bytes, as before
        root = repaired if repaired is not None else root
    if root is None:
        return None
    strip_dropped(root)
    return root


def strip_dropped(root: etree._Element) -> None:
    """Remove config.DROP_TAGS' elements below root with their content, keeping their tails: lxml's
    ``strip_elements(..., with_tail=False)``, in the compiled walk where it is built (one pass over the tree, which
    hands back to lxml's where it stops)."""
    if native.walk is None or not native.walk.strip_elements(root, config.DROP_TAGS):
        etree.strip_elements(root, *config.DROP_TAGS, with_tail=False)


def _parse(data: bytes) -> etree._Element | None:
    if not data or data.isspace():  # not data.strip(), which copies the page when it ends with a newline
        return None
    if _DIRECT:
        root = native.walk.parse_html(data, _thread_probe(), _PARSER, PARSE_OPTIONS, _ENCODING)
        if root is not False:
            return root
    return _parse_lxml(data)


def _parse_lxml(data: bytes) -> etree._Element | None:
    """``_parse`` by lxml's ``etree.fromstring`` (the definition ``_walk.parse_html`` follows)."""
    try:
        return etree.fromstring(data, parser=_PARSER)
    except (etree.ParserError, etree.XMLSyntaxError, ValueError):
        return None


# The compiled parse (``_walk.parse_html``): libxml2's parse as lxml's fromstring runs it with _PARSER, without the
# walk lxml makes over every element of the new tree afterwards to look each element and attribute name up in its
# dictionary again (_fixHtmlDictNames: with libxml2 2.14 they are the dictionary's already, so it changes nothing;
# about 7% of the parse's instructions). _PARSER's libxml2 options, as lxml's HTMLParser derives them from its
# arguments: HTML_PARSE_RECOVER (recover=True), HTML_PARSE_NONET (no_network=True), HTML_PARSE_COMPACT
# (compact=True), HTML_PARSE_NODEFDTD (default_doctype=False); no HTML_PARSE_NOBLANKS, no XML_PARSE_HUGE.
PARSE_OPTIONS = 0x1 | 0x800 | 0x10000 | 0x4
_ENCODING = b"utf-8"  # _PARSER's
_PROBES = threading.local()  # per thread, an element of a document lxml parsed in it: the thread's dictionary


def _thread_probe() -> etree._Element:
    probe = getattr(_PROBES, "root", None)
    if probe is None:
        probe = _PROBES.root = etree.fromstring(b"<p>probe</p>", parser=_PARSER)
    return probe


def _direct_parse_works() -> bool:
    """Whether the compiled parse is at hand and builds, on a probe page, the tree lxml's fromstring builds with
    the names in the dictionary (where _IDS_ON_DEMAND: _PARSER collects no ids, as parse_html's context)."""
    if not _IDS_ON_DEMAND or native.walk is None or not hasattr(native.walk, "parse_html"):
        return False
    page = (b"<!DOCTYPE html><html lang=en><head><title>t</title><meta charset=utf-8></head><body class='a b'>"
            b"<!-- c --><?pi x?><p id=x>one &amp; <b>two</b><br>three<table><td>cell</table><svg><g/></svg>"
            b"<![CDATA[d]]><div><p>four</div></body></html>")
    direct = native.walk.parse_html(page, _thread_probe(), _PARSER, PARSE_OPTIONS, _ENCODING)
    if direct is False or direct is None:
        return False
    plain = _parse_lxml(page)
    return (etree.tostring(direct.getroottree()) == etree.tostring(plain.getroottree())
            and direct.getroottree().docinfo.encoding == plain.getroottree().docinfo.encoding
            and native.walk.names_outside_dict(direct) == (0, 0))


def _swallowed_by_title(root: etree._Element) -> bool:
    """An unclosed <title> makes the parser read the whole page as its text (real pages do this)."""
    title = head_title(root)
    return title is not None and len(title.text or "") > MAX_TITLE_CHARS


def register_ids(root: etree._Element) -> None:
    """Register the ids of root's document for XPath's id(), as a parser that collects ids does (the compiled walk,
    with libxml2's own functions); nothing where the parser collected them (no compiled walk)."""
    if _IDS_ON_DEMAND:
        native.walk.register_ids(root)


class IdXPath:
    """An XPath that calls id(): the page's ids registered (``register_ids``) before it runs on the page."""

    __slots__ = ("xpath",)

    def __init__(self, xpath: etree.XPath) -> None:
        self.xpath = xpath

    @property
    def path(self) -> str:
        return self.xpath.path

    def __call__(self, root, **variables):
        register_ids(root)
        return self.xpath(root, **variables)


def compile_xpath(expression: str) -> etree.XPath | IdXPath:
    """``etree.XPath(expression)`` for a rule's XPath run on parsed pages (its XPathSyntaxError too); an XPath that
    may call id() comes wrapped (IdXPath) where the parser leaves the ids to be registered on demand."""
    xpath = etree.XPath(expression)
    return IdXPath(xpath) if _IDS_ON_DEMAND and _ID_CALL.search(expression) else xpath


_DIRECT = _direct_parse_works()
