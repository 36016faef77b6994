"""lxml tree -> blocks of adjacent inline content, and the page's block vector (uint32 CRC32 hashes).

A block is a run of text that no block-level tag interrupts. It keeps the positional XPath of the
block-level element that owns it, its text, and what a classifier needs (link characters, markup bytes).
Its hash is CRC32 of (tag path without positions, normalized text): attributes never enter it.

The walk visits only non-blank text nodes (found by one XPath in C), not every element, which is what
makes segmentation cost about as much as the parse and not three times more.
"""

from __future__ import annotations

import re
import zlib

import numpy as np
from lxml import etree

from . import config
from .types import Block, Page, Segmented

_TEXT_NODES = etree.XPath("//body//text()[normalize-space()]")
_HINTS = etree.XPath(
    "//article | //main | //*[@itemprop='articleBody'] | //*[contains(@itemtype, 'Article')]"
    " | //*[@role='main']"
)
_POSITIONS = re.compile(r"\[\d+\]")
_BLOCK = config.BLOCK_TAGS
_BREAK = config.BREAK_TAGS


def crc32(text: str) -> int:
    """CRC32 of the UTF-8 bytes, masked to 32 bits."""
    return zlib.crc32(text.encode("utf-8", "surrogatepass")) & 0xFFFFFFFF


def normalize_block_text(text: str) -> str:
    """The text that enters a block's hash: lower-cased, whitespace folded."""
    return " ".join(text.lower().split())


def _markup_bytes(element: etree._Element) -> int:
    tag = element.tag
    attrs = element.attrib
    size = 2 * len(tag) + 5
    if attrs:
        for key, value in attrs.items():
            size += len(key) + len(value) + 4
    return size


class _Owners:
    """Cache: text-parent element -> (owning block element, inside a link?)."""

    __slots__ = ("cache",)

    def __init__(self) -> None:
        self.cache: dict = {}

    def lookup(self, element: etree._Element) -> tuple[etree._Element, bool]:
        found = self.cache.get(element)
        if found is not None:
            return found
        in_link = False
        node = element
        while node is not None:
            tag = node.tag
            if tag == "a":
                in_link = True
            if tag in _BLOCK:
                break
            parent = node.getparent()
            if parent is None:
                break
            node = parent
        found = (node, in_link)
        self.cache[element] = found
        return found


def segment(root: etree._Element, page: Page) -> Segmented:
    """Cut a parsed page into blocks in document order."""
    tree = root.getroottree()
    owners = _Owners()
    paths: dict = {}
    blocks: list[Block] = []
    parts: list[str] = []
    link_chars = 0
    markup = 0
    seen_parents: set = set()
    current = None

    def flush() -> None:
        nonlocal link_chars, markup
        text = " ".join("".join(parts).split())
        if text:
            xpath, tag_path = paths[current]
            digest = crc32(tag_path + "\x1f" + text.lower())
            blocks.append(Block(len(blocks), xpath, tag_path, current.tag, text, min(link_chars, len(text)),
                                markup, digest, crc32(tag_path), current))
        parts.clear()
        seen_parents.clear()
        link_chars = 0
        markup = 0

    for node in _TEXT_NODES(root):
        parent = node.getparent()
        if node.is_tail:
            context = parent.getparent()
            boundary = parent.tag in _BLOCK or parent.tag in _BREAK
            if context is None:
                continue
        else:
            context = parent
            boundary = False
        owner, in_link = owners.lookup(context)
        if owner is not current or boundary:
            if current is not None:
                flush()
            current = owner
            if owner not in paths:
                xpath = tree.getpath(owner)
                paths[owner] = (xpath, _POSITIONS.sub("", xpath))
            markup += _markup_bytes(owner)
            seen_parents.add(owner)
        if context not in seen_parents:
            seen_parents.add(context)
            markup += _markup_bytes(context)
        parts.append(node)
        if in_link:
            link_chars += len(node.strip())
    if current is not None:
        flush()
    vector = np.fromiter((b.hash for b in blocks), dtype=np.uint32, count=len(blocks))
    hints = tuple(tree.getpath(e) for e in _HINTS(root))
    return Segmented(page=page, blocks=tuple(blocks), vector=vector, hints=hints, title=_title(root), root=root)


def _title(root: etree._Element) -> str:
    title = root.find("head/title")
    if title is None:
        return ""
    return " ".join(title.text_content().split())
