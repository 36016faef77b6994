"""lxml tree -> blocks of adjacent inline content, and the page's block vector (uint32 CRC32 hashes).

A block is a run of text that no block-level tag interrupts. It keeps the positional XPath of the
block-level element that owns it, its text, and what a classifier needs (link characters, markup bytes).
Its hash is CRC32 of (tag path without positions, normalized text): attributes never enter it.

The walk visits only non-blank text nodes (found by one XPath), not every element, which is what
makes segmentation cost about as much as the parse and not three times more.
"""

from __future__ import annotations

import re
import weakref
import zlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace

import numpy as np
from lxml import etree

from . import config, native
from .datatypes import Block, Page, Segmented

if native.walk is not None:
    native.walk.configure(tuple(sorted(config.BLOCK_TAGS)), tuple(sorted(config.BLOCK_TAGS | config.BREAK_TAGS)), Block)

_TEXT_NODES = etree.XPath("//body//text()[normalize-space()]")
_POSITIONS = re.compile(r"\[\d+\]")
_BLOCK = config.BLOCK_TAGS
_SPLIT = config.BLOCK_TAGS | config.BREAK_TAGS


def crc32(text: str) -> int:
    """CRC32 of the UTF-8 bytes, masked to 32 bits."""
    return zlib.crc32(text.encode("utf-8", "surrogatepass")) & 0xFFFFFFFF


def normalize_block_text(text: str) -> str:
    """The text that enters a block's hash: lower-cased, whitespace folded."""
    return " ".join(text.lower().split())


def _markup_bytes(element: etree._Element) -> int:
    """Bytes of an element's start and end tags with its attributes (an estimate of its markup)."""
    size = 2 * len(element.tag) + 5
    for key, value in element.items():
        size += len(key) + len(value) + 4
    return size


def _context(element: etree._Element) -> tuple[etree._Element, bool, int]:
    """(owning block element, inside a link?, markup bytes) of a text node's parent element."""
    in_link = False
    node = element
    while True:
        tag = node.tag
        if tag == "a":
            in_link = True
        if tag in _BLOCK:
            break
        parent = node.getparent()
        if parent is None:
            break
        node = parent
    return node, in_link, _markup_bytes(element)


def segment(root: etree._Element, page: Page) -> Segmented:
    """Cut a parsed page into blocks in document order.

    Consecutive text nodes with the same owner form one block, unless a block-level tag or <br> closes in between.
    The compiled walk (templater._walk, Cython) gives the same blocks as the plain walk below, faster; the plain
    walk is taken where it is not built or declines a page.
    """
    walk = native.walk
    walked = walk.segment(root) if walk is not None else None
    if walked is None:
        return _segment_plain(root, page)
    blocks, hashes, chars, links, declared, (paths, path_of) = walked  # bytearrays: writable arrays
    return Segmented(page=page, blocks=tuple(blocks), vector=np.frombuffer(hashes, dtype=np.uint32),
                     title=_title(root), root=root, chars=np.frombuffer(chars, dtype=np.int64),
                     links=np.frombuffer(links, dtype=np.int64), declared=declared,
                     path_index=(paths, np.frombuffer(path_of, dtype=np.intp)))


def _segment_plain(root: etree._Element, page: Page) -> Segmented:
    """segment() in Python over lxml's API: the definition the compiled walk follows."""
    contexts: dict = {}
    owners: dict = {}
    tag_paths: dict = {}
    blocks: list[Block] = []
    parts: list[str] = []
    current = last_context = None
    link_chars = markup = 0
    for node in _TEXT_NODES(root):
        parent = node.getparent()
        if node.is_tail:
            boundary = parent.tag in _SPLIT
            parent = parent.getparent()
            if parent is None:
                continue
        else:
            boundary = False
        info = contexts.get(parent)
        if info is None:
            info = contexts[parent] = _context(parent)
        owner, in_link, size = info
        if owner is not current or boundary:
            if parts:
                _close(blocks, owners[current], parts, link_chars, markup)
            if owner not in owners:
                tag_path = _tag_path(owner, tag_paths)
                owners[owner] = (None, tag_path, owner.tag, crc32(tag_path), _markup_bytes(owner), owner)
            current = owner
            parts = []
            link_chars = 0
            markup = owners[owner][4]
            last_context = owner
        if parent is not last_context:
            markup += size
            last_context = parent
        if parts and not node.is_tail and not parts[-1][-1:].isspace() and _blank_before(parent):
            parts.append(" ")  # the blank text node between "<b>hello</b> <i>world</i>" (not visited)
        parts.append(node)
        if in_link:
            link_chars += len(node.strip())
    if parts:
        _close(blocks, owners[current], parts, link_chars, markup)
    vector = np.fromiter((b.hash for b in blocks), dtype=np.uint32, count=len(blocks))
    seg = Segmented(page=page, blocks=tuple(blocks), vector=vector, title=_title(root), root=root)
    return replace(seg, chars=seg.block_chars(), links=seg.block_links())


def _blank_before(element: etree._Element) -> bool:
    """Whether blank text (not visited by the walk) stands right before the element's start tag."""
    previous = element.getprevious()
    if previous is not None:
        tail = previous.tail
        return bool(tail) and tail.isspace()
    parent = element.getparent()
    text = parent.text if parent is not None else None
    return bool(text) and text.isspace()


def _tag_path(element: etree._Element, cache: dict) -> str:
    """'/html/body/div/p': the element's path of tag names, built from its cached ancestors."""
    chain = []
    node = element
    while node is not None and node not in cache:
        chain.append(node)
        node = node.getparent()
    path = cache[node] if node is not None else ""
    for item in reversed(chain):
        path = cache[item] = path + "/" + item.tag
    return path


def _close(blocks: list[Block], owner: tuple, parts: list[str], link_chars: int, markup: int) -> None:
    text = " ".join("".join(parts).split())
    if text:
        xpath, tag_path, tag, shape, _, element = owner
        digest = zlib.crc32((tag_path + "\x1f" + text.lower()).encode("utf-8", "surrogatepass")) & 0xFFFFFFFF
        blocks.append(Block(len(blocks), xpath, tag_path, tag, text, min(link_chars, len(text)), markup, digest,
                            shape, element))


def _title(root: etree._Element) -> str:
    title = head_title(root)
    if title is None:
        return ""
    return " ".join("".join(title.itertext()).split())


def head_title(root: etree._Element) -> etree._Element | None:
    """root.find("head/title"), by the compiled walk where templater._walk is built."""
    if native.walk is not None and isinstance(root, etree._Element):
        return native.walk.head_title(root)
    return root.find("head/title")


_memo: tuple = (None, {})  # (weak reference to the last page asked about, its memo)


def declares_main(element) -> bool:
    """Whether the element declares the page's main content: a <main> element or one with role="main"."""
    return element.tag == "main" or element.get("role") == "main"


def in_declared_main(block) -> bool:
    """Whether the block sits in a <main> element or one with role="main"."""
    if "/main/" in block.tag_path + "/":
        return True
    node = block.element
    while node is not None:
        if node.get("role") == "main":
            return True
        node = node.getparent()
    return False


def page_memo(seg: Segmented) -> dict:
    """A dict of what extraction's steps work out once a page and ask again in turn (the last page's only; held
    weakly, so a page's tree is freed as soon as its extraction is done, while its memory is still in the cache and
    before the next page is parsed). Keys name what is kept, with the settings it depends on; values never refer to
    the page itself."""
    global _memo
    ref, memo = _memo
    if ref is not None and ref() is seg:
        return memo
    memo = {}
    _memo = (weakref.ref(seg), memo)
    return memo


def tag_path_index(seg: Segmented) -> tuple[list[str], np.ndarray]:
    """(the page's distinct tag paths in order of first appearance, per block the index of its tag path in that
    list as intp). A page's blocks share a few tag paths: a test of the tag path alone is made once a path
    (``path_mask``), not once a block. The compiled walk counts it while it segments (``Segmented.path_index``);
    else the last page's index is kept (``page_memo``)."""
    if seg.path_index is not None:
        return seg.path_index
    memo = page_memo(seg)
    found = memo.get("tag_path_index")
    if found is not None:
        return found
    ids: dict[str, int] = {}
    of = np.fromiter((ids.setdefault(b.tag_path, len(ids)) for b in seg.blocks), dtype=np.intp,
                     count=len(seg.blocks))
    found = memo["tag_path_index"] = (list(ids), of)
    return found


def path_mask(seg: Segmented, test) -> np.ndarray:
    """``[bool(test(b.tag_path)) for b in seg.blocks]`` as a bool array, ``test`` called once a distinct path."""
    paths, of = tag_path_index(seg)
    return np.fromiter(map(test, paths), dtype=bool, count=len(paths))[of]


def fill_xpaths(blocks: Sequence[Block]) -> None:
    """Give every block its positional XPath (``Block.xpath``) in time linear in the page's elements.

    lxml's getpath counts an element's same-named siblings afresh for every element, which makes a page of n
    sibling blocks cost n^2 (50,000 <p> in one <div>: minutes). Here each parent's children are numbered once, the
    way libxml2's xmlGetNodePath numbers them: "name[k]" with k the 1-based position among the siblings of the
    same name, plain "name" when it has none."""
    paths: dict = {}
    for block in blocks:
        if block._xpath is None and block.element is not None:
            block._xpath = _element_path(block.element, paths)


def _element_path(element: etree._Element, paths: dict) -> str:
    chain = []
    node = element
    while node is not None and node not in paths:
        chain.append(node)
        node = node.getparent()
    path = paths[node] if node is not None else ""
    for item in reversed(chain):
        parent = item.getparent()
        if parent is None:  # the root, which can have top-level siblings of its own name
            before = sum(1 for other in item.itersiblings(preceding=True) if other.tag == item.tag)
            after = any(other.tag == item.tag for other in item.itersiblings())
            path = paths[item] = f"/{item.tag}[{before + 1}]" if before or after else "/" + item.tag
            continue
        _number_children(parent, path, paths)
        path = paths[item]
    return path


def _number_children(parent: etree._Element, parent_path: str, paths: dict) -> None:
    """Every element child of ``parent`` into ``paths`` (one pass over the children, one over their names)."""
    children = [child for child in parent if isinstance(child.tag, str)]
    totals = Counter(child.tag for child in children)
    seen: Counter = Counter()
    for child in children:
        tag = child.tag
        seen[tag] += 1
        paths[child] = f"{parent_path}/{tag}[{seen[tag]}]" if totals[tag] > 1 else f"{parent_path}/{tag}"
