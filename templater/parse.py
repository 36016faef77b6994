"""Decoded HTML text -> lxml tree, with scripts, styles, comments and the like dropped.

The parsing boundary: whatever the input holds (NUL and control characters, an XML encoding declaration
inside a decoded string, a bogus <meta charset>), lxml is only ever handed clean UTF-8 bytes with the
encoding stated, so the page's own declarations cannot mislead it.
"""

from __future__ import annotations

import re

from lxml import etree

from . import config
from .blocks import _walk, head_title

# Control characters (never part of a multi-byte UTF-8 sequence) become spaces, in C, on the encoded bytes.
_CONTROLS = bytes([*range(0, 9), 11, 12, *range(14, 32), 127])  # all but \t \n \r
_CONTROL_TO_SPACE = bytes.maketrans(_CONTROLS, b" " * len(_CONTROLS))
_XML_DECL = re.compile(r"^\s*<\?xml[^>]*>", re.IGNORECASE)
_UNCLOSED_TITLE = re.compile(rb"(<title[^>]*>[^<\n]*)", re.IGNORECASE)
MAX_TITLE_CHARS = 1000  # a longer <title> text means the tag was never closed

# lxml.etree's parser, not lxml.html's: html's element classes cost a Python call per element proxy.
_PARSER = etree.HTMLParser(encoding="utf-8", remove_comments=True, remove_pis=True, no_network=True,
                           default_doctype=False)


def clean_text(markup: str) -> bytes:
    """UTF-8 bytes without what lxml refuses in a decoded string: control characters and an XML declaration."""
    markup = _XML_DECL.sub("", markup, count=1)
    if _walk is not None:
        return _walk.utf8_controls_to_space(markup)  # the same bytes, in one pass
    return markup.encode("utf-8", "replace").translate(_CONTROL_TO_SPACE)


def parse_html(markup: str) -> etree._Element | None:
    """Parse decoded HTML into an lxml tree with non-content elements removed; None if nothing parses."""
    markup = clean_text(markup)
    root = _parse(markup)
    if root is not None and _swallowed_by_title(root):
        repaired = _parse(_UNCLOSED_TITLE.sub(rb"\1</title>", markup, count=1))
        root = repaired if repaired is not None else root
    if root is None:
        return None
    etree.strip_elements(root, *config.DROP_TAGS, with_tail=False)
    return root


def _parse(data: bytes) -> etree._Element | None:
    if not data.strip():
        return None
    try:
        return etree.fromstring(data, parser=_PARSER)
    except (etree.ParserError, etree.XMLSyntaxError, ValueError):
        return None


def _swallowed_by_title(root: etree._Element) -> bool:
    """An unclosed <title> makes the parser read the whole page as its text (real pages do this)."""
    title = head_title(root)
    return title is not None and len(title.text or "") > MAX_TITLE_CHARS
