"""Per-block features for the single-page classifiers, computed in one pass over a Segmented page.

Two sets:
- ``line_features``: the founding notes' nine inputs (density, markup bytes and text length of the line,
  of the previous line and of the next line), for the small neural line classifier.
- ``block_features``: the richer DOM-aware set of the default ("auto") classifier: text shape, link
  density, the owner tag, what the ancestors' tags and class/id tokens say (comment, sidebar, nav, article,
  ...), depth, position in the page, the page's own content hints (<article>, <main>, schema.org
  articleBody), the readability-style content region, the title overlap, and the same for the neighbours.

The blocks' owners and their ancestors are numbered once (each element visited once, parents first); what
the ancestors say (nearest flagged ancestor, inside a hint or the region, text held below) is then computed
level by level with numpy, so a page costs one short walk per distinct element plus a few array passes. Where
templater is compiled, the numbering is done by the Cython walk (templater._walk) and the text counts and the
whole block_features and context_features matrices by templater._numeric, in one call each; the Python and numpy
code stays the definition they are tested against.
"""

from __future__ import annotations

import functools
import itertools
import operator
import re
from dataclasses import dataclass

import numpy as np

from . import native
from .config import (CLASS_CACHE_SIZE, CONTEXT_LEVELS, CONTEXT_WIDTHS, FAR, LENGTH_SCALE, MIN_SCORE, NEIGHBOUR_WINDOW,
                     REGION_GRANDPARENT_SHARE, REGION_MIN_CHARS)
from .datatypes import Segmented

# --- class/id vocabulary: an element's class and id are cut into lower-case words (at non-letters and at
# camelCase humps); a group fires when a word starts with one of the group's stems ----------------------------
CLASS_GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("comment", ("comment", "disqus", "respond", "reply", "replies", "discussion", "reaction")),
    ("nav", ("nav", "menu", "breadcrumb", "pagination", "pager", "toolbar", "subnav", "tabs", "skip")),
    ("footer", ("foot", "copyright", "legal", "colophon")),
    ("header", ("header", "masthead", "banner", "topbar", "logo", "branding", "brand")),
    ("sidebar", ("sidebar", "side", "aside", "widget", "rail", "secondary", "blogroll", "right", "left")),
    ("related", ("related", "recommend", "popular", "trending", "recent", "latest", "most", "more", "outbrain",
                 "taboola", "teaser", "promo", "featured", "archive", "next", "prev")),
    ("share", ("share", "sharing", "social", "tweet", "twitter", "facebook", "fb$", "linkedin", "pinterest",
               "reddit", "digg", "print", "follow", "rss", "plusone", "googleplus", "instagram", "youtube",
               "email", "mail")),
    ("account", ("subscribe", "newsletter", "signup", "login", "logged", "register", "sign(?:in|up|on)?$", "account",
                 "search", "form", "button", "btn", "input")),
    ("ad", ("ads?$", "advert", "sponsor", "dfp$", "gpt$", "leaderboard", "adsense", "commercial", "300x250")),
    ("meta", ("meta", "byline", "author", "date", "time", "dateline", "tag", "categor", "taxonomy", "posted",
              "publish", "credit", "caption", "vcard", "avatar", "profile", "rating", "count", "info")),
    ("hidden", ("hidden", "hide", "modal", "popup", "overlay", "cookie", "consent", "tooltip", "dropdown",
                "collapse", "offscreen", "visually", "sr$")),
    ("content", ("article", "content", "entry", "post", "story", "body", "text", "main", "blog", "prose",
                 "detail", "single", "hentry", "richtext", "page")),
    ("headline", ("headline", "title", "heading", "subhead", "dek", "summary", "lede", "intro", "standfirst",
                  "description")),
)
_CLASS_WORDS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+x[0-9]+")
_STEM_GROUPS = re.compile("|".join(
    f"(?P<g{number}>{'|'.join(sorted(stems, key=len, reverse=True))})" for number, (_, stems) in enumerate(CLASS_GROUPS)))

# --- ancestor tags worth a flag -------------------------------------------------------------------------------
TAG_GROUPS: tuple[tuple[str, frozenset[str]], ...] = (
    ("in_nav", frozenset({"nav", "menu"})),
    ("in_footer", frozenset({"footer"})),
    ("in_header", frozenset({"header"})),
    ("in_aside", frozenset({"aside"})),
    ("in_form", frozenset({"form", "select", "fieldset", "button", "label"})),
    ("in_list", frozenset({"ul", "ol", "dl"})),
    ("in_table", frozenset({"table"})),
    ("in_link", frozenset({"a"})),
    ("in_quote", frozenset({"blockquote", "q"})),
    ("in_figure", frozenset({"figure", "figcaption"})),
)

# --- the owner tag's family ------------------------------------------------------------------------------------
OWNER_TAGS: tuple[tuple[str, frozenset[str]], ...] = (
    ("tag_p", frozenset({"p"})),
    ("tag_div", frozenset({"div", "section", "article", "main", "body", "center", "span", "font"})),
    ("tag_li", frozenset({"li", "dd", "dt"})),
    ("tag_cell", frozenset({"td", "th", "caption", "tr", "tbody", "table"})),
    ("tag_h1", frozenset({"h1"})),
    ("tag_h", frozenset({"h2", "h3", "h4", "h5", "h6", "hgroup", "legend"})),
    ("tag_pre", frozenset({"pre", "blockquote", "address"})),
    ("tag_form", frozenset({"option", "select", "form", "fieldset", "button", "label", "input"})),
    ("tag_box", frozenset({"header", "footer", "nav", "aside", "menu", "figcaption", "figure", "ul", "ol", "dl"})),
)
_TAG_BITS = {tag: sum(1 << n for n, (_, tags) in enumerate(TAG_GROUPS) if tag in tags)
             for _, group in TAG_GROUPS for tag in group}
_OWNER_COLUMN = {tag: column for column, (_, tags) in enumerate(OWNER_TAGS) for tag in tags}

_HINT_TAGS = frozenset({"article", "main"})
_PUNCT = re.compile(r"[.,;:!?\u3002\uff0c\u3001\uff1f\uff01]")
_SENTENCE_END = re.compile(r"[.!?\"'\u201d\u3002\uff01\uff1f)]\s*$")
_DIGIT = re.compile(r"\d")
_WORD = re.compile(r"[^\W_]+")
_COPYRIGHT = re.compile(r"\u00a9|copyright|all rights reserved", re.IGNORECASE)



def line_features(seg: Segmented) -> np.ndarray:
    """The notes' nine inputs per line: (density, log markup bytes, log text length) of the line, of the
    previous line and of the next line; a missing neighbour reads as zeros."""
    text = np.fromiter((len(b.text) for b in seg.blocks), dtype=np.float64, count=len(seg.blocks))
    markup = np.fromiter((b.markup_bytes for b in seg.blocks), dtype=np.float64, count=len(seg.blocks))
    density = np.divide(text, text + markup, out=np.zeros_like(text), where=(text + markup) > 0)
    own = np.column_stack([density, np.log1p(markup), np.log1p(text)])
    return np.hstack([own, shift(own, 1), shift(own, -1)])


@dataclass(frozen=True, slots=True)
class Tree:
    """The elements that own or contain blocks, numbered so that a parent comes before its children."""

    parent: np.ndarray  # int64 per element, -1 at the top
    depth: np.ndarray  # int64 per element
    class_bits: np.ndarray  # uint32 per element: CLASS_GROUPS its own class/id words fall in
    tag_bits: np.ndarray  # uint32 per element: TAG_GROUPS its tag falls in
    hint: np.ndarray  # bool per element: a content hint (<article>, <main>, articleBody, role=main)
    owner: np.ndarray  # int64 per block: the number of its owner element

    def levels(self) -> list[np.ndarray]:
        """Element numbers by depth, from the top down (for passes that need the parent done first)."""
        order = np.argsort(self.depth, kind="stable")
        bounds = np.searchsorted(self.depth[order], np.arange(int(self.depth.max(initial=0)) + 2))
        return [order[bounds[d]:bounds[d + 1]] for d in range(len(bounds) - 1)]


def number_tree(seg: Segmented) -> Tree:
    """Number the blocks' owners and all their ancestors, with each element's own class and tag flags."""
    walk = native.walk
    numbered = walk.number_tree(seg.blocks) if walk is not None else None
    if numbered is None:
        return _number_tree_plain(seg)
    parent, depth, owner, tag_bits, hint, class_bits = numbered  # bytearrays: writable arrays
    return Tree(parent=np.frombuffer(parent, dtype=np.int64), depth=np.frombuffer(depth, dtype=np.int64),
                class_bits=np.frombuffer(class_bits, dtype=np.uint32),
                tag_bits=np.frombuffer(tag_bits, dtype=np.uint32), hint=np.frombuffer(hint, dtype=bool),
                owner=np.frombuffer(owner, dtype=np.int64))


def _number_tree_plain(seg: Segmented) -> Tree:
    """number_tree in Python over lxml's API: the definition the compiled numbering (templater._walk) follows."""
    numbers: dict = {}
    elements: list = []
    parent: list[int] = []
    depth: list[int] = []

    def number(element) -> int:
        chain = []
        node = element
        while node is not None and node not in numbers:
            chain.append(node)
            node = node.getparent()
        above = numbers[node] if node is not None else -1
        for node in reversed(chain):
            numbers[node] = len(elements)
            elements.append(node)
            parent.append(above)
            depth.append(depth[above] + 1 if above >= 0 else 0)
            above = numbers[node]
        return numbers[element]

    owner = [number(b.element) for b in seg.blocks]
    return Tree(parent=np.array(parent, dtype=np.int64), depth=np.array(depth, dtype=np.int64),
                class_bits=np.fromiter((class_bits(e) for e in elements), dtype=np.uint32, count=len(elements)),
                tag_bits=np.fromiter((_tag_bits(e.tag) for e in elements), dtype=np.uint32, count=len(elements)),
                hint=np.fromiter((_is_hint(e) for e in elements), dtype=bool, count=len(elements)),
                owner=np.array(owner, dtype=np.int64))


@functools.lru_cache(maxsize=64)
def group_bits(groups: tuple[str, ...]) -> int:
    """The CLASS_GROUPS bits of the named groups (a template's region_chrome_groups)."""
    names = [name for name, _ in CLASS_GROUPS]
    return sum(1 << names.index(g) for g in groups if g in names)


def class_bits(element) -> int:
    """The CLASS_GROUPS bits of an element's own class and id words."""
    attrs = element.attrib
    return _words_bits(attrs.get("class", ""), attrs.get("id", "")) if attrs else 0


@functools.lru_cache(maxsize=CLASS_CACHE_SIZE)
def _words_bits(class_: str, id_: str) -> int:
    """CLASS_GROUPS bits of a class and id pair (pages repeat the same few pairs, hence the cache)."""
    words = _CLASS_WORDS.findall(class_ + " " + id_)
    bits = 0
    for word in words:
        bits |= _word_bits(word)
    return bits


@functools.lru_cache(maxsize=CLASS_CACHE_SIZE)
def _word_bits(word: str) -> int:
    """The CLASS_GROUPS bit of one class/id word (words repeat across pages far more than class/id pairs)."""
    found = _STEM_GROUPS.match(word.lower())
    return 1 << int(found.lastgroup[1:]) if found else 0


if native.walk is not None:  # the compiled numbering's tag flags, and each class/id word's bit (the numbering cuts
    # a pair into words as _CLASS_WORDS does, and remembers pairs and words)
    native.walk.configure_tree(sorted(_TAG_BITS.items()), _word_bits, CLASS_CACHE_SIZE)


def _tag_bits(tag) -> int:
    return _TAG_BITS.get(tag, 0) if isinstance(tag, str) else 0


def _is_hint(element) -> bool:
    attrs = element.attrib
    return (element.tag in _HINT_TAGS or attrs.get("itemprop") == "articleBody"
            or "Article" in attrs.get("itemtype", "") or attrs.get("role") == "main")


def _distances(tree: Tree, bits: np.ndarray, count: int) -> np.ndarray:
    """Per element and flag: levels up to the nearest element (itself = 0) carrying the flag, else FAR (numpy
    only: _block_features_numpy is its one caller; _numeric.block_features computes the same in its own pass)."""
    own = ((bits[:, None] >> np.arange(count, dtype=np.uint32)) & 1).astype(bool)
    distance = np.where(own, 0, FAR)
    for level in tree.levels()[1:]:
        above = distance[tree.parent[level]] + 1
        distance[level] = np.where(own[level], 0, np.minimum(above, FAR))
    return distance


def inside(tree: Tree, marked: np.ndarray) -> np.ndarray:
    """Per element: True when it or one of its ancestors is marked."""
    numeric = native.numeric
    if numeric is not None and _parents_first(tree) and marked.dtype == bool:
        found = numeric.tree_inside(tree.parent, np.ascontiguousarray(marked), len(marked))
        return np.frombuffer(found, dtype=bool).copy()
    result = marked.copy()
    for level in tree.levels()[1:]:
        result[level] |= result[tree.parent[level]]
    return result


def sum_up(tree: Tree, values: np.ndarray) -> np.ndarray:
    """Per element, the sum of ``values`` (per element) over itself and its descendants."""
    numeric = native.numeric
    if numeric is not None and _parents_first(tree) and tree.depth.dtype == np.int64:
        found = numeric.tree_sum_up(tree.parent, np.ascontiguousarray(tree.depth),
                                 np.ascontiguousarray(values, dtype=np.float64), len(tree.parent))
        if found is not None:
            return np.frombuffer(found, dtype=np.float64).copy()
    total = values.astype(np.float64).copy()
    for level in reversed(tree.levels()[1:]):
        np.add.at(total, tree.parent[level], total[level])
    return total


def _parents_first(tree: Tree) -> bool:
    """Whether the C passes apply: int64 parents numbered before their children (as number_tree numbers)."""
    parent = tree.parent
    return (parent.dtype == np.int64 and parent.flags.c_contiguous
            and bool((parent < np.arange(len(parent))).all()))


def _region(tree: Tree, block_score: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Readability's content region: a block's score goes to its owner's parent, half to its grandparent;
    the element with the highest total is the region. Per block: (inside the region, inside its parent)."""
    first = tree.parent[tree.owner]
    has_first = first >= 0
    second = np.where(has_first, tree.parent[np.maximum(first, 0)], -1)
    has_second = second >= 0
    # bincount adds in input order, as two np.add.at calls (parents, then grandparents) would: the same floats
    score = np.bincount(np.concatenate([first[has_first], second[has_second]]),
                        weights=np.concatenate([block_score[has_first],
                                                REGION_GRANDPARENT_SHARE * block_score[has_second]]),
                        minlength=len(tree.parent))
    best = int(np.argmax(score))
    if not score[best]:
        zeros = np.zeros(len(tree.owner))
        return zeros, zeros
    region = np.zeros(len(tree.parent), dtype=bool)
    region[best] = True
    wider = np.zeros(len(tree.parent), dtype=bool)
    wider[best if tree.parent[best] < 0 else tree.parent[best]] = True
    return (inside(tree, region)[tree.owner].astype(np.float64),
            inside(tree, wider)[tree.owner].astype(np.float64))


def _hint_columns(tree: Tree, mass: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per block: inside any content hint; inside the hint element holding the most text."""
    hints = tree.hint.nonzero()[0]
    if not len(hints):
        zeros = np.zeros(len(tree.owner))
        return zeros, zeros
    top = np.zeros(len(tree.parent), dtype=bool)
    top[hints[np.argmax(mass[hints])]] = True
    return (inside(tree, tree.hint)[tree.owner].astype(np.float64),
            inside(tree, top)[tree.owner].astype(np.float64))


def window_mean(values: np.ndarray, width: int) -> np.ndarray:
    """Mean over the ``width`` blocks either side (the block itself excluded), edges padded by zeros."""
    if not len(values):
        return values
    padding, kernel = _window_arrays(width)
    padded = np.concatenate([padding, values, padding])
    sums = np.convolve(padded, kernel, mode="valid")
    return (sums - values) / (2 * width)


def window_means(columns: list[np.ndarray], width: int) -> np.ndarray:
    """window_mean of each of several equally long columns, as a (rows, columns) array: the same floats, from one
    convolution. The columns are laid end to end, ``width`` zeros before each and after the last, so each row's
    window holds the numbers window_mean's own padding gives it, in the same order (its column's neighbours, zeros
    past the edges), and np.convolve sums each window on its own (one dot product per output)."""
    count = len(columns[0])
    if not count:
        return np.zeros((0, len(columns)))
    _, kernel = _window_arrays(width)
    stride = count + width
    padded = np.zeros(width + len(columns) * stride + width)  # the last ``width`` zeros make len(columns) * stride sums
    laid = padded[width:width + len(columns) * stride].reshape(len(columns), stride)[:, :count]
    laid[...] = columns
    means = np.convolve(padded, kernel, mode="valid").reshape(len(columns), stride)[:, :count]
    means -= laid  # column j's sums start at j * stride; the rest are sums across the junctions, unused
    means /= 2 * width
    return means.T


@functools.lru_cache(maxsize=16)
def _window_arrays(width: int) -> tuple[np.ndarray, np.ndarray]:
    """window_mean's zero padding and ones kernel for a width (read-only, shared)."""
    padding, kernel = np.zeros(width), np.ones(2 * width + 1)
    padding.flags.writeable = kernel.flags.writeable = False
    return padding, kernel


def shift(values: np.ndarray, step: int) -> np.ndarray:
    """The previous (step 1) or next (step -1) row's values; zeros past the edge."""
    shifted = np.zeros_like(values)  # what np.roll then zeroing the wrapped rows gives, without the roll
    if step > 0:
        shifted[step:] = values[:-step]
    elif step < 0:
        shifted[:step] = values[-step:]
    return shifted  # step 0: all rows zeroed, as the roll version did


OWN_TEXT_COLUMNS = [3, 5, 6, 7, 8, 9]  # _text_columns' columns only the block's own features read (words, sentence
# end, digits, title overlap, copyright, capitals): 0.0 for the blocks not in ``rows``


def _text_columns(seg: Segmented, rows: np.ndarray | None = None) -> np.ndarray:
    """Per block: chars, link chars, markup bytes, words, punctuation and digit shares, sentence end, title
    overlap, copyright, capitalised share: the per-block regex counts of _text_columns_plain, computed in C
    (templater._numeric) from a per-code-point class table where compiled. With ``rows`` (bool per block), the
    blocks outside it get 0.0 in OWN_TEXT_COLUMNS (C counts only their punctuation)."""
    numeric = native.numeric
    if numeric is None or not seg.blocks:
        return _text_columns_plain(seg, rows)
    found = numeric.text_matrix(seg.blocks, list(set(_WORD.findall(seg.title.lower()))), _CLASS_TABLE,
                                _code_point_class, None if rows is None else np.ascontiguousarray(rows, dtype=bool))
    if found is None:  # an empty text
        return _text_columns_plain(seg, rows)
    columns = np.frombuffer(found, dtype=np.float64).reshape(len(seg.blocks), 10)
    for i in columns[:, 8].nonzero()[0].tolist():  # copyright candidates: the regex decides
        columns[i, 8] = 1.0 if _COPYRIGHT.search(seg.blocks[i].text) else 0.0
    return columns


_TEXT = operator.attrgetter("text")
_TAG = operator.attrgetter("tag")


def _text_columns_plain(seg: Segmented, rows: np.ndarray | None = None) -> np.ndarray:
    """_text_columns one block at a time with the regexes (the definition; also taken for empty texts)."""
    columns = _text_columns_all(seg)
    if rows is not None:
        columns[np.flatnonzero(~np.asarray(rows, dtype=bool))[:, None], OWN_TEXT_COLUMNS] = 0.0
    return columns


def _text_columns_all(seg: Segmented) -> np.ndarray:
    """Every block's columns, by the regexes."""
    title_words = set(_WORD.findall(seg.title.lower()))
    rows = []
    for block in seg.blocks:
        text = block.text
        words = _WORD.findall(text.lower())
        spaced = text.split()
        rows.append((
            len(text), block.link_chars, block.markup_bytes, len(words),
            len(_PUNCT.findall(text)) / len(text),
            1.0 if _SENTENCE_END.search(text) else 0.0,
            len(_DIGIT.findall(text)) / len(text),
            sum(map(title_words.__contains__, words)) / (len(words) or 1),
            1.0 if _COPYRIGHT.search(text) else 0.0,
            sum(map(str.isupper, [w[0] for w in spaced])) / (len(spaced) or 1),
        ))
    return np.array(rows, dtype=np.float64).reshape(len(rows), 10)


# --- code point classes for _text_columns: bit flags per code point, filled on first sight --------------------
_C_KNOWN, _C_PUNCT, _C_DIGIT, _C_SPACE, _C_UPPER, _C_ALNUM, _C_SENTENCE_END = 1, 2, 4, 8, 16, 32, 64
# what the characters may match in _COPYRIGHT (case-blind): ©, y, r, l, the space
_C_COPY, _C_Y, _C_R, _C_L, _C_BLANK = 128, 256, 512, 1024, 2048
_CLASS_TABLE = np.zeros(0x110000, dtype=np.uint16)
_LIKE = {pattern: re.compile(pattern, re.IGNORECASE) for pattern in ("\u00a9", "y", "r", "l", " ")}  # compiled once


def _code_point_class(code: int) -> int:
    char = chr(code)

    def like(pattern: str) -> bool:
        return _LIKE[pattern].fullmatch(char) is not None

    return (_C_KNOWN | (_C_PUNCT if _PUNCT.match(char) else 0) | (_C_DIGIT if _DIGIT.match(char) else 0)
            | (_C_SPACE if char.isspace() else 0) | (_C_UPPER if char.isupper() else 0)
            | (_C_ALNUM if _WORD.match(char) else 0)
            | (_C_SENTENCE_END if _SENTENCE_END.match(char) else 0)
            | (_C_COPY if like("\u00a9") else 0) | (_C_Y if like("y") else 0) | (_C_R if like("r") else 0)
            | (_C_L if like("l") else 0) | (_C_BLANK if like(" ") else 0))


def _first_classes(count: int = 256) -> list[int]:
    """``_code_point_class`` of the code points below ``count``, each pattern run once over all of them rather than
    once a character (256 x 11 calls were ~1% of a short command's start): a pattern that is one character class,
    or one class repeated, matches a character alone exactly where it matches it within the run of them all
    (``findall``); ``_SENTENCE_END``, anchored at the text's end, is asked a character at a time. A test compares
    every value with ``_code_point_class``'s."""
    chars = "".join(map(chr, range(count)))

    def members(pattern) -> set[str]:
        return set("".join(pattern.findall(chars)))

    flags = [(_PUNCT, _C_PUNCT), (_DIGIT, _C_DIGIT), (_WORD, _C_ALNUM), (_LIKE["\u00a9"], _C_COPY),
             (_LIKE["y"], _C_Y), (_LIKE["r"], _C_R), (_LIKE["l"], _C_L), (_LIKE[" "], _C_BLANK)]
    found = [(members(pattern), flag) for pattern, flag in flags]
    return [_C_KNOWN | (_C_SPACE if char.isspace() else 0) | (_C_UPPER if char.isupper() else 0)
            | (_C_SENTENCE_END if _SENTENCE_END.match(char) else 0)
            | sum(flag for chars_of, flag in found if char in chars_of) for char in chars]


_CLASS_TABLE[:256] = _first_classes()


def _tag_columns(seg: Segmented) -> np.ndarray:
    columns = np.zeros((len(seg.blocks), len(OWNER_TAGS) + 1))
    found = np.fromiter(map(_OWNER_COLUMN.get, map(_TAG, seg.blocks), itertools.repeat(len(OWNER_TAGS))),
                        dtype=np.int64, count=len(seg.blocks))
    columns[np.arange(len(seg.blocks)), found] = 1.0
    return columns[:, :-1]


FEATURE_NAMES: tuple[str, ...] = (
    "log_chars", "log_words", "density", "link_density", "punct", "sentence_end", "digits", "title_overlap",
    "copyright", "capitalised", "depth", "position", "text_position", "chars_share",
    *[name for name, _ in OWNER_TAGS],
    *[name for name, _ in TAG_GROUPS],
    *["class_" + name for name, _ in CLASS_GROUPS],
    "in_hint", "in_top_hint", "in_region", "in_region_parent", "page_has_hint",
    "ctx_log_chars", "ctx_link_density", "ctx_density", "ctx_punct",
    "prev_log_chars", "prev_link_density", "next_log_chars", "next_link_density",
    "wide_log_chars", "wide_link_density", "log_blocks",
)


def block_features(seg: Segmented, tree: Tree | None = None, *, rows: np.ndarray | None = None) -> np.ndarray:
    """The default classifier's features, one row per block, columns named by FEATURE_NAMES: computed in C
    (templater._numeric) from the text columns and the tree, else by _block_features_numpy (the definition).
    ``rows`` (bool per block): only those blocks' own rows are read; the other rows are made without their
    OWN_TEXT_COLUMNS (0.0 there and in what is computed from them alone: log_words, sentence_end, digits,
    title_overlap, copyright, capitalised), which no other row's features depend on."""
    count = len(seg.blocks)
    if not count:
        return np.zeros((0, len(FEATURE_NAMES)))
    tree = number_tree(seg) if tree is None else tree
    text = _text_columns(seg, rows)
    numeric = native.numeric
    if numeric is not None:
        found = numeric.block_features(text, tree.parent, tree.depth, tree.owner, tree.tag_bits, tree.class_bits,
                                    tree.hint, seg.blocks, _OWNER_COLUMN, _BLOCK_SIZES, _BLOCK_CONSTANTS)
        if found is not None:
            return np.frombuffer(found, dtype=np.float64).reshape(count, len(FEATURE_NAMES))
    return _block_features_numpy(seg, tree, text)


def _block_features_numpy(seg: Segmented, tree: Tree, text: np.ndarray) -> np.ndarray:
    """block_features with numpy, from the page's _text_columns (the definition the C version follows)."""
    count = len(seg.blocks)
    (chars, link_chars, markup, words, punct, sentence_end, digits, title_overlap, copyright,
     capitalised) = text.T
    log_chars = np.log1p(chars / LENGTH_SCALE)
    link_density = np.minimum(link_chars / chars, 1.0)
    density = chars / (chars + markup)
    region_score = np.where(chars >= REGION_MIN_CHARS,
                            (1 + punct * chars + np.minimum(chars / LENGTH_SCALE, 3)) * (1 - link_density), 0.0)
    plain = np.bincount(tree.owner, weights=chars - link_chars, minlength=len(tree.parent))
    mass = sum_up(tree, plain)
    depth = tree.depth[tree.owner].astype(np.float64)
    tag_near = 1.0 / (1.0 + _distances(tree, tree.tag_bits, len(TAG_GROUPS))[tree.owner])
    class_near = 1.0 / (1.0 + _distances(tree, tree.class_bits, len(CLASS_GROUPS))[tree.owner])
    columns = [
        log_chars, np.log1p(words), density, link_density, punct, sentence_end, digits, title_overlap,
        copyright, capitalised,
        depth / max(depth.max(), 1.0), np.arange(count) / count, (np.cumsum(chars) - chars) / chars.sum(),
        chars / chars.max(),
        _tag_columns(seg), tag_near, class_near,
        *_hint_columns(tree, mass), *_region(tree, region_score), float(tree.hint.any()),
        window_means([log_chars, link_density, density, punct], NEIGHBOUR_WINDOW),
        shift(log_chars, 1), shift(link_density, 1), shift(log_chars, -1), shift(link_density, -1),
        window_means([log_chars, link_density], 3 * NEIGHBOUR_WINDOW),
        float(np.log1p(count)),
    ]
    return _assemble(count, len(FEATURE_NAMES), columns)


# what the C block_features is told of the definition above: the sizes of the column groups and the constants
_BLOCK_SIZES = (len(OWNER_TAGS), len(TAG_GROUPS), len(CLASS_GROUPS), len(FEATURE_NAMES))
_BLOCK_CONSTANTS = (LENGTH_SCALE, float(REGION_MIN_CHARS), REGION_GRANDPARENT_SHARE, NEIGHBOUR_WINDOW, FAR)


def _assemble(count: int, width: int, columns: list) -> np.ndarray:
    """np.column_stack of the columns (1-D arrays, 2-D blocks of columns, or scalars for a constant column)
    into a float64 (count, width) array, filled in place."""
    out = np.empty((count, width))
    at = 0
    for column in columns:
        if isinstance(column, float):
            out[:, at] = column
            at += 1
        elif column.ndim == 2:
            out[:, at:at + column.shape[1]] = column
            at += column.shape[1]
        else:
            out[:, at] = column
            at += 1
    if at != width:
        raise ValueError(f"assembled {at} feature columns, expected {width}")
    return out


def _container_scores(tree: Tree, chars: np.ndarray, weighted_scores: np.ndarray) -> list[np.ndarray]:
    """Per level up (1 .. CONTEXT_LEVELS), per block: the text-weighted mean score (``weighted_scores`` is chars x
    score) of the blocks under its owner's ancestor at that level (the topmost where the tree ends first).
    The numpy definition; _numeric.context_features computes the same columns in C."""
    columns = []
    element = tree.owner
    for _ in range(CONTEXT_LEVELS):
        up = tree.parent[element]
        element = np.where(up >= 0, up, element)
        weighted = np.bincount(element, weights=weighted_scores, minlength=len(tree.parent))
        weight = np.bincount(element, weights=chars, minlength=len(tree.parent))
        columns.append(weighted[element] / weight[element])
    return columns


CONTEXT_NAMES: tuple[str, ...] = (
    "score", "score_near1", "score_near3", "score_near10", "score_prev", "score_next",
    "score_up1", "score_up2", "score_up3", "page_max_score", "page_mean_score", "score_to_max",
)


def context_features(seg: Segmented, tree: Tree, scores: np.ndarray) -> np.ndarray:
    """The second stage's inputs beside block_features: a first-stage score per block, and what the
    neighbours, the enclosing containers (text-weighted) and the whole page scored. Computed in C
    (templater._numeric), else by _context_features_numpy (the definition)."""
    numeric = native.numeric
    if numeric is not None:
        found = numeric.context_features(scores, seg.block_chars(), tree.parent, tree.owner, CONTEXT_LEVELS,
                                      CONTEXT_WIDTHS, MIN_SCORE)
        if found is not None:
            return np.frombuffer(found, dtype=np.float64).reshape(len(scores), len(CONTEXT_NAMES))
    return _context_features_numpy(seg, tree, scores)


def _context_features_numpy(seg: Segmented, tree: Tree, scores: np.ndarray) -> np.ndarray:
    """context_features with numpy (the definition the C version follows)."""
    chars = np.fromiter(map(len, map(_TEXT, seg.blocks)), dtype=np.float64, count=len(seg.blocks))
    columns = [scores, *(window_mean(scores, width) for width in CONTEXT_WIDTHS), shift(scores, 1),
               shift(scores, -1)]
    weighted_scores = chars * scores
    columns += _container_scores(tree, chars, weighted_scores)
    top = max(float(scores.max(initial=0.0)), MIN_SCORE)
    columns += [top, float(weighted_scores.sum() / chars.sum()), scores / top]
    return _assemble(len(scores), len(CONTEXT_NAMES), columns)

