"""Decoded HTML text -> lxml tree, with scripts, styles, comments and the like dropped.

The parsing boundary: whatever the input holds (NUL and control characters, an XML encoding declaration
inside a decoded string, a bogus <meta charset>), lxml is only ever handed clean UTF-8 bytes with the
encoding stated, so the page's own declarations cannot mislead it.
"""

from __future__ import annotations

import re

from lxml import etree

from . import config

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ufffe\uffff]")
_XML_DECL = re.compile(r"^\s*<\?xml[^>]*>", re.IGNORECASE)

# lxml.etree's parser, not lxml.html's: html's element classes cost a Python call per element proxy.
_PARSER = etree.HTMLParser(encoding="utf-8", remove_comments=True, remove_pis=True, no_network=True,
                           default_doctype=False)


def clean_text(markup: str) -> str:
    """Remove what lxml refuses in a decoded string: control characters and an XML declaration."""
    markup = _CONTROL.sub("", markup)
    return _XML_DECL.sub("", markup, count=1)


def parse_html(markup: str) -> etree._Element | None:
    """Parse decoded HTML into an lxml tree with non-content elements removed; None if nothing parses."""
    data = clean_text(markup).encode("utf-8", "replace")
    if not data.strip():
        return None
    try:
        root = etree.fromstring(data, parser=_PARSER)
    except (etree.ParserError, etree.XMLSyntaxError, ValueError):
        return None
    if root is None:
        return None
    etree.strip_elements(root, *config.DROP_TAGS, with_tail=False)
    return root
