"""Kept blocks -> the extracted document: its headline apart, and the body's structure (headings, paragraphs, list
items, tables, code, quotes) read from the DOM elements that own the kept blocks; and the document as text,
Markdown or clean HTML.

The segmentation walk, the blocks' texts and their hashes stay as they are (templates are learned from them):
the structure is read afterwards, only for the blocks an extraction keeps, by looking at each owner element's
ancestors (memoised, so a page costs one step per distinct element on the kept blocks' ancestor chains).

The steps of ``build_document``:
1. the headline (``find_title``): the block that says what the page's declared titles (og:title, twitter:title,
   <title>) say, else the heading they echo best (``headline.find_headline``), else a declared title less its
   site name; it leaves the body, and so does every kept block that only repeats it;
2. each kept block's context: inside a <pre> (code: the <pre>'s text with its line breaks and indentation),
   a cell of a data table (rows of cells), a list item (depth, numbered or not), a heading (level), a
   <blockquote> (depth);
3. consecutive blocks of one <pre>, one table, one list item are joined into one node.
"""

from __future__ import annotations

import functools
import json
import re
from typing import NamedTuple
from urllib.parse import urljoin, urlsplit

import numpy as np
from lxml import etree

from . import native
from .blocks import page_memo
from .config import (BLOCK_TAGS, FILE_STEM_CHARS, HEADLINE_MAX_CHARS, HEADLINE_MIN_WORDS, MIN_TABLE_CELLS,
                     SITE_LABEL_CHARS, SITE_LABEL_SHARE, SITE_NAME_CUTS, SITE_NAME_WORDS)
from .headline import find_headline
from .datatypes import DocNode, Document, Segmented

HEADING_LEVELS = {f"h{n}": n for n in range(1, 7)}
LIST_TAGS = frozenset({"ul", "ol", "menu", "dir"})
CELL_TAGS = frozenset({"td", "th"})
LAYOUT_TABLE_MARKS = ".//table|.//h1|.//h2|.//h3"  # a table holding these lays the page out: not a data table
LAYOUT_TABLE_TAGS = ("table", "h1", "h2", "h3")  # the same marks, as iterdescendants' tags (layout_table)
TITLE_SEPARATORS = re.compile(r"\s+(?:\||-|–|—|::|•|·|»|/)\s+")  # "Headline | Site name" in a <title>
PERMALINK_MARKS = " ¶§🔗"  # a heading's permalink sign ("json — JSON encoder and decoder¶") is not its headline
_HOST_WORDS = frozenset({"www", "blog", "blogs", "news", "home", "web", "online"})
_DOMAIN = re.compile(r"[a-z]\.(?:com|net|org|info|gov|edu|co\.[a-z]{2})\b", re.IGNORECASE)
SOCIAL_TITLES = ("og:title", "twitter:title")  # the <meta> property or name values that declare a page's title


class _Context(NamedTuple):
    """Where an element sits: the structures around it that shape the document (a tuple: the compiled walk's
    ``block_contexts`` gives the same fields as plain tuples)."""

    pre: object = None  # the enclosing <pre>
    cell: object = None  # the enclosing <td>/<th> of the nearest table
    table: object = None  # the nearest enclosing <table>
    item: object = None  # the nearest enclosing <li>
    depth: int = 0  # lists around it
    ordered: bool = False  # the nearest list is an <ol>
    quote: int = 0  # <blockquote>s around it
    heading: int = 0  # level of the enclosing <h1>-<h6>


_SHAPING_TAGS = frozenset({"pre", "table", "li", "blockquote", *CELL_TAGS, *LIST_TAGS, *HEADING_LEVELS})


def _child_context(parent: _Context, element) -> _Context:
    tag = element.tag
    if tag not in _SHAPING_TAGS:
        return parent  # contexts are never changed once made: an element that shapes nothing shares its parent's
    pre, cell, table, item, depth, ordered, quote, heading = parent
    if tag == "pre":
        pre = element
    elif tag == "table":
        table, cell = element, None
    elif tag in CELL_TAGS and parent.table is not None:  # a stray <td> outside any table is not a cell
        cell = element
    elif tag == "li":
        item = element
    elif tag in LIST_TAGS:
        depth, ordered = parent.depth + 1, tag == "ol"
    elif tag == "blockquote":
        quote = parent.quote + 1
    elif tag in HEADING_LEVELS:
        heading = HEADING_LEVELS[tag]
    return _Context(pre, cell, table, item, depth, ordered, quote, heading)


class _Contexts:
    """_Context of elements, memoised along their ancestor chains."""

    def __init__(self) -> None:
        self.known: dict = {}
        self.data_tables: dict = {}

    def of(self, element) -> _Context:
        known = self.known
        ctx = known.get(element)
        if ctx is not None:
            return ctx
        chain = []
        node = element
        while node is not None and node not in known:
            chain.append(node)
            node = node.getparent()
        ctx = known[node] if node is not None else _Context()
        for item in reversed(chain):
            ctx = known[item] = _child_context(ctx, item)
        return ctx

    def data_table(self, table) -> bool:
        found = self.data_tables.get(table)
        if found is None:
            found = self.data_tables[table] = not layout_table(table) and table.get("role") != "presentation"
        return found


def layout_table(table) -> bool:
    """Whether a table holds one of LAYOUT_TABLE_MARKS: what the XPath ``boolean(LAYOUT_TABLE_MARKS)`` says of it, by
    lxml's walk of its descendants in C (no XPath context made, and no element but the first found made a proxy)."""
    return next(table.iterdescendants(*LAYOUT_TABLE_TAGS), None) is not None


def find_title(seg: Segmented) -> tuple[str | None, int | None]:
    """(the page's headline, index of its block or None); the page's document and its metadata (where its byline
    and date sit) both ask, one after the other: the last page's answer is kept."""
    memo = page_memo(seg)
    found = memo.get("title")
    if found is None:
        found = memo["title"] = _find_title(seg)
    return found


def _find_title(seg: Segmented) -> tuple[str | None, int | None]:
    """(the page's headline, index of its block or None).

    The evidence is what the page declares: og:title, twitter:title and <title>. In order: a block that says
    exactly what one of them says, as it is or less the site name at either end (``_exact_headline``); else the
    heading block the declared titles echo best (``headline.find_headline``, the finder learning uses) of those
    that hold at least HEADLINE_MIN_WORDS of the declared headline's words (not a section name, "Politics", that
    the <title> also carries); else the first declared social title, else the <title> less its site name; with no
    declared title at all, the first <h1>."""
    declared = [" ".join(t.split()) for t in declared_titles(
        seg.root, seg.declared[0] if seg.declared is not None else None)] if seg.root is not None else []
    declared = [t for t in declared if t]
    titles = [*declared, seg.title] if seg.title else declared
    if not titles:
        index = next((b.index for b in seg.blocks if b.tag == "h1" and len(b.text) <= HEADLINE_MAX_CHARS), None)
        return (seg.blocks[index].text.rstrip(PERMALINK_MARKS) or None, index) if index is not None else (None, None)
    index = _exact_headline(seg, titles)
    if index is None:
        least = HEADLINE_MIN_WORDS * len(strip_site_name(titles[0]).split())
        index = find_headline(seg, " ".join(titles), min_words=least)
    if index is None:
        index = _sole_h1(seg)
    if index is not None:
        return seg.blocks[index].text.rstrip(PERMALINK_MARKS) or None, index
    title = declared[0] if declared else seg.title
    return strip_site_name(strip_site_name(title), from_start=True) or None, None


def declared_titles(root, elements: list | None = None) -> list[str]:
    """The content of every <meta> under the document's <html>/<head> whose property or name is one of SOCIAL_TITLES,
    in document order: what the XPath "/html/head/meta[@property='og:title' or @name='og:title' or
    @name='twitter:title' or @property='twitter:title']/@content" selects, read by walking the few children of
    <html> and <head> (an XPath evaluation costs more than the whole walk). ``elements``: ``root``'s <meta>s in
    document order (with any other elements), where the caller has them (``Segmented.declared[0]``, gathered by the
    segmentation walk): those are read instead, and only a title's <meta> has its parents looked at."""
    top = root.getroottree().getroot()
    if top is None or top.tag != "html":
        return []
    if elements is not None and root is top:
        return _head_titles(top, elements)
    found = []
    for head in top.iterchildren("head"):
        for meta in head.iterchildren("meta"):
            if meta.get("property") in SOCIAL_TITLES or meta.get("name") in SOCIAL_TITLES:
                content = meta.get("content")
                if content is not None:
                    found.append(content)
    return found


def _head_titles(top, elements) -> list[str]:
    """``declared_titles(top)`` read from ``elements``, ``top``'s <meta>s (and other elements) in document order (by
    the compiled walk where it is built: ``_walk.head_titles``)."""
    scan = getattr(native.walk, "head_titles", None) if isinstance(elements, list) else None
    found = scan(top, elements, SOCIAL_TITLES) if scan is not None else None
    if found is not None:
        return found
    found = []
    for meta in elements:
        if meta.tag == "meta" and (meta.get("property") in SOCIAL_TITLES or meta.get("name") in SOCIAL_TITLES):
            content = meta.get("content")
            if content is not None:
                head = meta.getparent()
                if head is not None and head.tag == "head" and head.getparent() is top:
                    found.append(content)
    return found


def _sole_h1(seg: Segmented) -> int | None:
    """The page's one <h1> (said once or repeated) when it is not a link (a logo's): the headline the page shows,
    which an editor may word otherwise than the declared titles (og:title, an SEO <title>, a site's name)."""
    found = [b for b in seg.blocks if b.tag == "h1" and b.text and len(b.text) <= HEADLINE_MAX_CHARS]
    if not found or len({b.text.lower() for b in found}) > 1 or found[0].link_chars * 2 >= len(found[0].text):
        return None
    return found[0].index


def _host_labels(url: str) -> list[str]:
    """``_host_labels_plain(url)``, worked out once a site: an http(s) URL's host is read by urlsplit from the URL's
    start up to its path, query or fragment (``_SITE_PREFIX``), the part urlsplit reads it from, which a site's pages
    share (urlsplit itself costs more than the rest of the headline's search on most pages)."""
    found = _SITE_PREFIX.match(url) if url else None
    return list(_prefix_labels(found.group())) if found is not None else _host_labels_plain(url)


_SITE_PREFIX = re.compile(r"https?://[^/?#\s]*(?=[/?#]|$)")  # a URL's scheme and netloc, where it has no white space


@functools.lru_cache(maxsize=1024)
def _prefix_labels(prefix: str) -> tuple[str, ...]:
    return tuple(_host_labels_plain(prefix))


def _host_labels_plain(url: str) -> list[str]:
    """The names in a URL's host that may be its site's name ("joythebaker" of joythebaker.com)."""
    host = (urlsplit(url).hostname or "") if url else ""
    labels = host.split(".")[:-1]  # less the top-level domain
    return [label for label in labels if len(label) >= SITE_LABEL_CHARS and label not in _HOST_WORDS]


_NOT_LETTERS = re.compile(r"[\W_]")


def _names_site(text: str, labels: list[str]) -> bool:
    """Whether a short text is the site's name as its host spells it ("Joy the Baker" on joythebaker.com, "The
    Facebook Blog" on blog.facebook.com): a host label makes up at least SITE_LABEL_SHARE of its letters."""
    if not labels or len(text.split()) > SITE_NAME_WORDS:
        return False
    squashed = _NOT_LETTERS.sub("", text.lower())
    return any(label in squashed and len(label) >= SITE_LABEL_SHARE * len(squashed) for label in labels)


def _title_forms(title: str, host: list[str]) -> list[str]:
    """A declared title as it is, less its site name (strip_site_name's cuts), and every run of its parts from its
    start or to its end longer than a site name ("Do US businesses want Vista at last? - IT Pro - Breaking
    Business and Technology News at ITPro") or that the other parts name the site as its host (``host``: its
    labels) spells it, lower-cased."""
    cuts = [c.span() for c in TITLE_SEPARATORS.finditer(title)]
    if not cuts:  # (a title without a separator has none once stripped either: it is its one form, twice)
        title = title.strip().lower()
        return [title, title] if title else []
    same = cuts if title == title.strip() else None  # (the cuts site_name_cuts finds first: it strips the title)
    heads, tails = [title[:start] for start, _ in cuts], [title[end:] for _, end in cuts]
    forms = [*site_name_cuts(title, cuts=same), site_name_cuts(title, from_start=True, cuts=same)[-1]]
    forms += [run for run in heads + tails if len(run.split()) > SITE_NAME_WORDS]
    if host:  # (_names_site names nothing without host labels)
        forms += [tail for head, tail in zip(heads, tails) if _names_site(head, host)]  # "Joy the Baker - Papa Says"
        forms += [head for head, tail in zip(heads, tails) if _names_site(tail, host)]
    return [f.strip().lower() for f in forms if f.strip()]


def _exact_headline(seg: Segmented, titles: list[str]) -> int | None:
    """The block whose text is one of the titles' forms (case aside): a heading saying a whole title first (one not
    made of a link before one that is, then the highest level: a page's related stories list its own headline as a
    linked card or a lower heading before its <h1>), then the longest heading saying a form that is not made of a
    link, then the longest such heading, then the longest block saying one that is not made of links (a site's
    name is shorter than its headlines)."""
    whole = {t.lower() for t in titles}
    host = _host_labels(seg.page.url)
    wanted = {form for t in dict.fromkeys(titles) for form in _title_forms(t, host)}  # og:title is often <title>
    longest = min(max(map(len, wanted)) + len(PERMALINK_MARKS), HEADLINE_MAX_CHARS)
    lengths = {len(form) for form in wanted}  # a text lower-cased is as long as it was but for each U+0130 in it:
    # one whose length is no form's (and has none) is lower-cased for nothing
    found = [seg.blocks[i] for i in _title_blocks(seg, longest, min(lengths), lengths, wanted)]
    found = [b for b in found if not _names_site(b.text, host)] or found
    headings = [b for b in found if b.tag in HEADING_LEVELS]
    whole_headings = [b for b in headings if b.text.rstrip(PERMALINK_MARKS).lower() in whole]
    if whole_headings:
        return min(whole_headings, key=lambda b: (b.link_chars * 2 >= len(b.text), HEADING_LEVELS[b.tag],
                                                  b.index)).index
    ranked = ([b for b in headings if b.link_chars * 2 < len(b.text)], headings,
              [b for b in found if b.link_chars * 2 < len(b.text)])
    return next((max(group, key=lambda b: (len(b.text), -b.index)).index for group in ranked if group), None)


def _title_blocks(seg: Segmented, longest: int, shortest: int, lengths: set[int], wanted: set[str]) -> list[int]:
    """Indexes of the blocks, in order, of at most ``longest`` characters whose text right-stripped of
    PERMALINK_MARKS is one of ``wanted`` lower-cased (``lengths``: the lengths of its entries; ``shortest``: the
    least of them): by the compiled walk where it is built (``_walk.title_blocks``), else
    ``_title_blocks_plain``."""
    scan = getattr(native.walk, "title_blocks", None)
    found = scan(seg.blocks, seg.block_chars(), longest, shortest, lengths, wanted,
                 PERMALINK_MARKS) if scan is not None else None
    return found if found is not None else _title_blocks_plain(seg, longest, shortest, lengths, wanted)


def _title_blocks_plain(seg: Segmented, longest: int, shortest: int, lengths: set[int], wanted: set[str]) -> list[int]:
    """``_title_blocks``' definition: the blocks ``_title_sized`` gives whose right-stripped text is as long as a
    form or holds U+0130 (the one letter str.lower() makes two of), and lower-cased is a form."""
    found = []
    blocks = seg.blocks
    for i in _title_sized(seg, longest, shortest):
        text = blocks[i].text.rstrip(PERMALINK_MARKS)
        if (len(text) in lengths or "\u0130" in text) and text.lower() in wanted:
            found.append(i)
    return found


def _title_sized(seg: Segmented, longest: int, shortest: int) -> list[int]:
    """Indexes of the blocks, in order, of at most ``longest`` characters whose text, right-stripped and
    lower-cased, may be ``shortest`` characters or more: str.lower() gives one character for each but U+0130
    (two), so a block of fewer than half that many never is (one of fewer than ``shortest`` is one only where it
    holds that letter: the caller's test of its text decides). The length tests are made on the walk's counts at
    once, not block by block."""
    chars = seg.block_chars()
    return ((chars <= longest) & (2 * chars >= shortest)).nonzero()[0].tolist()


def strip_site_name(title: str, *, from_start: bool = False) -> str:
    """A title less the site name it carries at its end ("Headline - Site", "Headline | Section | Site"): end
    parts of at most SITE_NAME_WORDS words are cut, at most SITE_NAME_CUTS of them, while two words or more are
    left; with ``from_start``, one part at its start, where it names a domain ("FOXNews.com - Headline") or is
    short and shorter than the rest."""
    return site_name_cuts(title, from_start=from_start)[-1]


def site_name_cuts(title: str, *, from_start: bool = False, cuts: list[tuple[int, int]] | None = None) -> list[str]:
    """The title, then what is left after each cut strip_site_name makes (``cuts``: the spans of TITLE_SEPARATORS'
    matches in the stripped title, where the caller has them)."""
    out = [title.strip()]
    for _ in range(1 if from_start else SITE_NAME_CUTS):
        title = out[-1]
        if cuts is None:
            cuts = [c.span() for c in TITLE_SEPARATORS.finditer(title)]
        if not cuts:
            break
        start, end = cuts[0] if from_start else cuts[-1]
        cuts = None  # (what is left is searched again)
        part, rest = (title[:start], title[end:]) if from_start else (title[end:], title[:start])
        short = len(part.split()) <= SITE_NAME_WORDS
        if len(rest.split()) < 2 or not (short and (not from_start or len(part) < len(rest) or _DOMAIN.search(part))):
            break
        out.append(rest.strip())
    return out


def build_document(seg: Segmented, keep, *, links: bool = False) -> Document:
    """The extraction's document from the page's kept blocks (``keep``: a mask or the kept indexes' mask)."""
    title, headline = find_title(seg)
    same = " ".join(title.lower().split()) if title else None
    contexts = _Contexts()
    builder = _Builder(seg.page.url if links else None)
    blocks = seg.blocks
    kept = []
    for index in np.flatnonzero(keep).tolist():
        if index == headline:
            continue
        block = blocks[index]
        if same is not None and len(block.text) == len(same) and block.text.lower() == same:
            continue  # the headline again (a second heading, a breadcrumb's last step)
        kept.append(block)
    each = getattr(native.walk, "block_contexts", None)  # (None: not built, or built before it was written)
    found = each([block.element for block in kept]) if each is not None else None
    if found is None:
        found = [contexts.of(block.element) for block in kept]
    adds = getattr(native.walk, "add_blocks", None)  # the loop below, in C where it is built (links aside)
    if adds is None or not adds(builder, kept, found, contexts, DocNode):
        for block, ctx in zip(kept, found):
            builder.add(block, ctx, contexts)
    return Document(title=title, nodes=tuple(builder.finish()))


class _Builder:
    """Kept blocks in, document nodes out: joins the blocks of one <pre>, one table, one list item."""

    def __init__(self, base_url: str | None) -> None:
        self.nodes: list[DocNode] = []
        self.base_url = base_url  # links are collected when set
        self.pre = None
        self.table = None  # the open table: (element, quote, rows {tr: {cell: [texts]}}, texts in order)
        self.item = None  # the open list item's element

    def add(self, block, ctx: tuple, contexts: _Contexts) -> None:
        """Add a kept block, ``ctx`` its element's context (a _Context or the compiled walk's plain tuple)."""
        pre, cell, table, item, depth, ordered, quote, heading = ctx
        if pre is not None:
            if self.table is not None:
                self._close_table()
            self.item = None
            if pre is not self.pre:
                self.pre = pre
                self.nodes.append(DocNode("code", pre_text(pre), quote=quote))
            return
        self.pre = None
        if cell is not None and contexts.data_table(table):
            self.item = None
            self._add_cell(block, table, cell, quote)
            return
        if self.table is not None:
            self._close_table()
        found = self._links(block) if self.base_url is not None else ()
        if item is not None and depth:
            if item is self.item and self.nodes and self.nodes[-1].kind == "item":
                last = self.nodes[-1]
                self.nodes[-1] = DocNode("item", last.text + "\n" + block.text, level=last.level,
                                         ordered=last.ordered, quote=last.quote, links=last.links + found)
            else:
                self.item = item
                self.nodes.append(DocNode("item", block.text, level=depth, ordered=ordered, quote=quote, links=found))
            return
        self.item = None
        if heading:
            self.nodes.append(DocNode("heading", block.text, level=heading, quote=quote, links=found))
        else:
            self.nodes.append(DocNode("paragraph", block.text, quote=quote, links=found))

    def _add_cell(self, block, table, cell, quote: int) -> None:
        if self.table is None or self.table[0] is not table:
            self._close_table()
            self.table = (table, quote, {}, [])
        _, _, rows, texts = self.table
        row = cell.getparent()
        rows.setdefault(row, {}).setdefault(cell, []).append(block.text)
        texts.append(block.text)

    def _close_table(self) -> None:
        if self.table is None:
            return
        _, quote, rows, texts = self.table
        self.table = None
        table_rows = []
        header = False
        for row, cells in rows.items():
            texts_of = [" ".join(cells.get(cell, ())) for cell in row if cell.tag in CELL_TAGS]
            if any(texts_of):
                if not table_rows:
                    header = all(cell.tag == "th" for cell in row if cell.tag in CELL_TAGS)
                table_rows.append(tuple(texts_of))
        if max((sum(1 for t in r if t) for r in table_rows), default=0) < MIN_TABLE_CELLS:
            self.nodes.extend(DocNode("paragraph", text, quote=quote) for text in texts)
            return
        width = max(len(r) for r in table_rows)
        table_rows = [r + ("",) * (width - len(r)) for r in table_rows]
        self.nodes.append(DocNode("table", rows=tuple(table_rows), header=header, quote=quote))

    def _links(self, block) -> tuple[tuple[str, str], ...]:
        """(anchor text, absolute URL) of the links whose text belongs to this block, in document order."""
        if self.base_url is None:
            return ()
        found = []
        owner = block.element
        for anchor in owner.iter("a"):
            href = (anchor.get("href") or "").strip()
            if not href or href.startswith(("#", "javascript:")) or _owner(anchor) is not owner:
                continue
            text = " ".join("".join(anchor.itertext()).split())
            if text and text in block.text:
                found.append((text, urljoin(self.base_url, href)))
        return tuple(found)

    def finish(self) -> list[DocNode]:
        self._close_table()
        return self.nodes


def _owner(element):
    """The block-level element that owns an inline element's text (as the segmentation walk decides)."""
    node = element
    while node is not None and node.tag not in BLOCK_TAGS:
        node = node.getparent()
    return node


def pre_text(pre) -> str:
    """A <pre>'s text as it shows: line breaks (and <br>s) and indentation kept, trailing spaces and the blank lines
    around it dropped."""
    if next(pre.iter("br"), None) is None:
        text = etree.tostring(pre, method="text", encoding=str, with_tail=False)  # its text nodes joined, in C
    else:
        parts: list[str] = []
        _pre_parts(pre, parts)
        text = "".join(parts)
    if "\r" in text or "\xa0" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\xa0", " ")
    lines = [line.rstrip() for line in text.split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    start = 0
    while start < len(lines) and not lines[start]:
        start += 1
    return "\n".join(lines[start:])


def _pre_parts(element, parts: list[str]) -> None:
    if element.tag == "br":
        parts.append("\n")
    elif element.text:
        parts.append(element.text)
    for child in element:
        if isinstance(child.tag, str):
            _pre_parts(child, parts)
        if child.tail:
            parts.append(child.tail)


# --- renderings -----------------------------------------------------------------------------------------------------

TABLE_CELL_SEPARATOR = "\t"  # between the cells of a table row in the text rendering


def to_text(nodes) -> str:
    """The body as plain text: one paragraph, heading or list item a line, code with its lines as they were, a
    table row a line with its cells separated by a tab."""
    lines = []
    for node in nodes:
        if node.kind == "table":
            lines.extend(TABLE_CELL_SEPARATOR.join(row) for row in node.rows)
        else:
            lines.append(node.text)
    return "\n".join(lines)


def render_text(document: Document) -> str:
    """A page as a text file: the headline, a blank line, the body."""
    body = to_text(document.nodes)
    return f"{document.title}\n\n{body}\n" if document.title else body + "\n"


_MD_SPECIAL = re.compile(r"([\\`*\[\]<>|])")
# an underscore that could open or close emphasis: one not between two letters or digits (the underscore first, so
# that the regex engine looks for it as a literal, not tries the lookbehind at every character)
_MD_UNDERSCORE = re.compile(r"_(?:(?<![^\W_]_)|(?![^\W_]))")
_MD_LINE_START = re.compile(r"(#{1,6}(?=\s|$)|[-+=](?=\s|$)|[-=_]{3,}|(\d+)([.)])(?=\s|$)|~~~)")  # (matched at 0)


def md_escape(text: str) -> str:
    """Inline text made literal for Markdown (CommonMark): punctuation that would start emphasis, code, links,
    HTML or a table cell is backslash-escaped, and so is a line start that would make a heading, list or rule.
    (Each substitution runs only where the text holds one of its characters: most text holds none.)"""
    if ("\\" in text or "`" in text or "*" in text or "[" in text or "]" in text or "<" in text or ">" in text
            or "|" in text):
        text = _MD_SPECIAL.sub(r"\\\1", text)
    if "_" in text:
        text = _MD_UNDERSCORE.sub(r"\\_", text)
    found = _MD_LINE_START.match(text)
    return text if found is None else _escape_line_start(found) + text[found.end():]


def _escape_line_start(found: re.Match) -> str:
    if found.group(2):
        return found.group(2) + "\\" + found.group(3)
    return "\\" + found.group(1)


def _md_inline(node: DocNode, text: str, links: bool) -> str:
    """A node's text escaped for Markdown, its links written as [text](url) when asked for."""
    if not links or not node.links:
        return md_escape(text)
    out, cursor = [], 0
    for anchor, url in node.links:
        at = text.find(anchor, cursor)
        if at < 0:
            continue
        out.append(md_escape(text[cursor:at]))
        out.append(f"[{md_escape(anchor)}]({_md_url(url)})")
        cursor = at + len(anchor)
    out.append(md_escape(text[cursor:]))
    return "".join(out)


def _md_url(url: str) -> str:
    """A link destination: as it is, or in <> when it holds spaces or brackets."""
    url = url.replace("<", "%3C").replace(">", "%3E")
    return f"<{url}>" if re.search(r"[\s()]", url) else url


def to_markdown(document: Document, *, links: bool = False) -> str:
    """The document as CommonMark with GitHub tables: the headline as `#`, headings `#`-`######`, lists, tables,
    fenced code, block quotes; links only with ``links``."""
    chunks: list[str] = []
    if document.title:
        chunks.append("# " + md_escape(document.title))
    items: list[DocNode] = []
    for node in document.nodes:
        if node.kind == "item":
            if items and items[-1].quote != node.quote:
                chunks.append(_md_list(items, links))
                items = []
            items.append(node)
            continue
        if items:
            chunks.append(_md_list(items, links))
            items = []
        chunks.append(_quoted(_md_node(node, links), node.quote))
    if items:
        chunks.append(_md_list(items, links))
    return "\n\n".join(chunks) + "\n"


def _md_node(node: DocNode, links: bool) -> str:
    if node.kind == "heading":
        return "#" * max(1, min(node.level, 6)) + " " + _md_inline(node, node.text, links)
    if node.kind == "code":
        fence = "`" * max(3, _longest_run(node.text, "`") + 1)
        return f"{fence}\n{node.text}\n{fence}"
    if node.kind == "table":
        return _md_table(node)
    return _md_inline(node, node.text, links)


def _md_list(items: list[DocNode], links: bool) -> str:
    """A run of list items: depths made consecutive (a list nested more than one step deeper than the item before
    it steps in one level), four spaces a level."""
    lines = []
    base = min(item.level for item in items)
    previous = 0
    for item in items:
        depth = min(item.level - base, previous + 1)
        previous = depth
        marker = "1. " if item.ordered else "- "
        indent = "    " * depth
        first, *rest = item.text.split("\n")
        lines.append(indent + marker + _md_inline(item, first, links))
        lines.extend(indent + " " * len(marker) + _md_inline(item, line, links) for line in rest)
    return _quoted("\n".join(lines), items[0].quote)


def _md_table(node: DocNode) -> str:
    def row(cells) -> str:
        return "| " + " | ".join(md_escape(c) for c in cells) + " |"

    rows = list(node.rows)
    lines = [row(rows[0]), "| " + " | ".join("---" for _ in rows[0]) + " |"]
    lines += [row(r) for r in rows[1:]]
    return "\n".join(lines)


def _quoted(text: str, depth: int) -> str:
    if not depth:
        return text
    prefix = "> " * depth
    return "\n".join((prefix + line).rstrip() for line in text.split("\n"))


def _longest_run(text: str, char: str) -> int:
    runs = re.findall(re.escape(char) + "+", text)
    return max(map(len, runs), default=0)


def to_html(document: Document, *, links: bool = False) -> str:
    """The kept blocks as a clean HTML page: the headline as <h1>, then headings, paragraphs, lists, tables, code
    and quotes, no attributes but links' href (with ``links``)."""
    body: list[str] = []
    lists: list[str] = []  # the open list tags
    quote = 0
    for node in document.nodes:
        depth = node.level if node.kind == "item" else 0
        while len(lists) > depth:
            body.append(f"</li></{lists.pop()}>")
        if node.quote != quote:
            while len(lists):
                body.append(f"</li></{lists.pop()}>")
            body.append("</blockquote>" * (quote - node.quote) if quote > node.quote else
                        "<blockquote>" * (node.quote - quote))
            quote = node.quote
        if node.kind == "item":
            if len(lists) == depth:
                body.append("</li>")
            while len(lists) < depth:
                lists.append("ol" if node.ordered else "ul")
                body.append(f"<{lists[-1]}>")
            body.append("<li>" + "<br>".join(_html_inline(node, line, links) for line in node.text.split("\n")))
            continue
        body.append(_html_node(node, links))
    while lists:
        body.append(f"</li></{lists.pop()}>")
    body.append("</blockquote>" * quote)
    title = _escape(document.title or "")
    head = f"<h1>{title}</h1>\n" if document.title else ""
    return (f'<!DOCTYPE html>\n<html>\n<head>\n<meta charset="utf-8">\n<title>{title}</title>\n</head>\n<body>\n'
            f"<article>\n{head}" + "\n".join(b for b in body if b) + "\n</article>\n</body>\n</html>\n")


def _escape(text: str) -> str:
    """html.escape; the html package (which loads its table of 2,231 entities: ~1% of a short extract's start) is
    imported where HTML is written."""
    from html import escape

    return escape(text)


def _html_node(node: DocNode, links: bool) -> str:
    if node.kind == "heading":
        level = max(1, min(node.level, 6))
        return f"<h{level}>{_html_inline(node, node.text, links)}</h{level}>"
    if node.kind == "code":
        return f"<pre><code>{_escape(node.text)}</code></pre>"
    if node.kind == "table":
        rows = list(node.rows)
        out = ["<table>"]
        if node.header:
            out.append("<thead><tr>" + "".join(f"<th>{_escape(c)}</th>" for c in rows[0]) + "</tr></thead>")
            rows = rows[1:]
        out.append("<tbody>" + "".join("<tr>" + "".join(f"<td>{_escape(c)}</td>" for c in r) + "</tr>"
                                       for r in rows) + "</tbody></table>")
        return "".join(out)
    return f"<p>{_html_inline(node, node.text, links)}</p>"


def _html_inline(node: DocNode, text: str, links: bool) -> str:
    if not links or not node.links:
        return _escape(text)
    out, cursor = [], 0
    for anchor, url in node.links:
        at = text.find(anchor, cursor)
        if at < 0:
            continue
        out.append(_escape(text[cursor:at]))
        out.append(f'<a href="{_escape(url)}">{_escape(anchor)}</a>')
        cursor = at + len(anchor)
    out.append(_escape(text[cursor:]))
    return "".join(out)


def file_name(page_id: str, extension: str) -> str:
    """A safe file name for a page: its id's letters, digits, dots and dashes (the rest as _), cut to
    FILE_STEM_CHARS, and 8 hex digits of the id's SHA-1, so that two ids never share a name."""
    import hashlib  # (here: only written files' names need it, and it loads OpenSSL)

    stem = re.sub(r"[^A-Za-z0-9.-]+", "_", page_id).strip("._-")[:FILE_STEM_CHARS].rstrip("._-") or "page"
    return f"{stem}-{hashlib.sha1(page_id.encode('utf-8', 'surrogatepass')).hexdigest()[:8]}.{extension}"


# --- the JSON line ----------------------------------------------------------------------------------------------------

_JSON_ENCODER = json.JSONEncoder(ensure_ascii=False)  # json.dumps(..., ensure_ascii=False)'s, made once
try:
    from _json import make_encoder as _c_make_encoder
except ImportError:  # (an interpreter without json's C accelerator)
    _c_make_encoder = None


def json_line(record: dict) -> str:
    """``json.dumps(record, ensure_ascii=False)``: a result's JSON line (less its line break), the same text. Its
    strings are escaped by the compiled ``json_string`` (templater._numeric) where it is built, in json's own C
    encoder (which escapes a string reading each character at any width, twice: most of a line's cost); by json's
    own escape otherwise."""
    numeric = native.numeric
    escape = getattr(numeric, "json_string", None) if numeric is not None else None
    if escape is None or _c_make_encoder is None or not isinstance(record, dict):
        return _JSON_ENCODER.encode(record)
    encoder = _JSON_ENCODER
    return "".join(_c_make_encoder({}, encoder.default, escape, None, encoder.key_separator, encoder.item_separator,
                                   False, False, True)(record, 0))
