"""Data that crosses module lines: frozen, slotted dataclasses."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any

import numpy as np

from .config import LearnSettings


class StrEnum(str, Enum):
    """A vocabulary whose members are their strings: stored, printed, compared and hashed as the string."""

    __str__ = str.__str__
    __format__ = str.__format__


class SkipReason(StrEnum):
    """Why a record is skipped; the run summary counts skips under these names."""

    EMPTY = "empty"  # no bytes, or only whitespace
    HUGE = "huge"  # over config.MAX_PAGE_BYTES
    BINARY = "binary"  # not text
    NOT_HTML = "not-html"  # a text type other than HTML (JSON, plain text, images by Content-Type)
    UNDECODABLE = "undecodable"  # no encoding gives text
    BAD_URL = "bad-url"  # missing or unusable URL
    BAD_RECORD = "bad-record"  # malformed JSON line, truncated WARC record or gzip member
    HTTP_STATUS = "http-status"  # a WARC response that is not 200
    UNPARSABLE = "unparsable"  # lxml could not build a tree
    NO_TEXT = "no-text"  # parsed, but no text blocks at all
    REVISIT = "revisit"  # a WARC revisit record: the page's payload is in an earlier record
    DUPLICATE_ID = "duplicate-id"  # an .html file whose id (site/relative path) an earlier file of the run had
    BAD_TEXT = "bad-text"  # an id, URL or fetch time that is not valid Unicode (a lone surrogate from a JSON escape)
    OVER_LIMIT = "over-limit"  # over a page limit (config: start tags, attributes of one tag, blocks)
    OVER_TIME = "over-time"  # its parse + segment (+ extract) took longer than config.PAGE_TIME_BUDGET
    ERROR = "error"  # an unexpected exception while processing the record; the detail names it (a bug to report)
    UNREADABLE = "unreadable"  # a file of an input folder that cannot be read (broken link, I/O error, permission)


class RuleAction(StrEnum):
    """What a template's rule does with the blocks it matches."""

    DROP = "drop"  # static boilerplate: this tag path with this text (matched by hash)
    DROP_SHAPE = "drop-shape"  # dynamic boilerplate: this tag path whatever its text
    DROP_XPATH = "drop-xpath"  # a container named like comments or related articles, matched by its XPath
    CONTENT = "content"  # the content region: what lies outside it is dropped
    META_AUTHOR = "meta-author"  # the element holding the page's byline (metadata, drops nothing)
    META_DATE = "meta-date"  # the element holding the page's publication date (metadata, drops nothing)


class RuleMatch(StrEnum):
    """How a rule finds its blocks: ``matched_by`` in rules files, `rules show` and the ``pinned_rules`` table."""

    HASH = "hash"  # a learned static rule (DROP): this tag path with this text
    SHAPE = "shape"  # a learned dynamic rule (DROP_SHAPE): this tag path, whatever its text
    CONTAINER = "container"  # a learned container rule (DROP_XPATH): blocks under what its XPath selects
    REGION = "region"  # a learned content region (CONTENT): blocks under its XPath, where it holds most of the text
    META = "meta"  # a learned byline or date rule (META_AUTHOR, META_DATE)
    XPATH = "xpath"  # a rule pinned by hand: its XPath evaluated on every page


LEARNED_MATCH = {RuleAction.DROP: RuleMatch.HASH, RuleAction.DROP_SHAPE: RuleMatch.SHAPE,
                 RuleAction.DROP_XPATH: RuleMatch.CONTAINER, RuleAction.CONTENT: RuleMatch.REGION,
                 RuleAction.META_AUTHOR: RuleMatch.META, RuleAction.META_DATE: RuleMatch.META}  # a learned rule's
MATCH_ACTIONS = {  # the actions a rule of each match may have (a rules file is checked against it)
    **{match: tuple(a for a, m in LEARNED_MATCH.items() if m == match) for match in LEARNED_MATCH.values()},
    RuleMatch.XPATH: (RuleAction.DROP, RuleAction.CONTENT, RuleAction.META_AUTHOR, RuleAction.META_DATE)}


@dataclass(frozen=True, slots=True)
class RawPage:
    """One fetched page as read from an input, before decoding.

    ``body`` is bytes when the input carried bytes (WARC, files) and str when it carried text (JSON Lines).
    """

    id: str
    url: str
    body: bytes | str
    fetched_at: str | None = None
    content_type: str | None = None  # the HTTP Content-Type header, when known
    source: str = ""  # where it came from, for messages: "file.warc.gz#12"


@dataclass(frozen=True, slots=True)
class Skip:
    """A record that was not processed, with a SkipReason (held as its plain string)."""

    reason: str
    source: str
    detail: str = ""
    id: str | None = None
    url: str | None = None

    def __post_init__(self) -> None:
        if type(self.reason) is not str:
            object.__setattr__(self, "reason", str(self.reason))


@dataclass(frozen=True, slots=True)
class Page:
    """A decoded page ready to parse.

    ``html`` is the decoded text, or, for a page read back from the store, its stored UTF-8 bytes (valid UTF-8,
    parsed as they are: ``parse.parse_html``).
    """

    id: str
    url: str
    html: str | bytes
    fetched_at: str | None = None
    encoding: str = "utf-8"


class Block:
    """A run of adjacent inline content owned by one block-level element.

    ``xpath`` is the owner element's positional XPath (computed on first use from ``element``, since most blocks
    of most pages never need it), ``tag_path`` the same path without positions. ``hash`` is CRC32 of
    (tag_path, normalized text); ``shape`` is CRC32 of tag_path alone. Treat instances as immutable.
    """

    __slots__ = ("index", "_xpath", "tag_path", "tag", "text", "link_chars", "markup_bytes", "hash", "shape",
                 "element")

    def __init__(self, index: int, xpath: str | None, tag_path: str, tag: str, text: str, link_chars: int,
                 markup_bytes: int, hash: int, shape: int, element: Any = None) -> None:
        self.index = index
        self._xpath = xpath
        self.tag_path = tag_path
        self.tag = tag
        self.text = text
        self.link_chars = link_chars
        self.markup_bytes = markup_bytes
        self.hash = hash
        self.shape = shape
        self.element = element  # the owning lxml element (valid while its tree lives)

    @property
    def xpath(self) -> str:
        if self._xpath is None:
            self._xpath = self.element.getroottree().getpath(self.element) if self.element is not None else ""
        return self._xpath

    def __repr__(self) -> str:
        return f"Block({self.index}, {self.tag_path!r}, {self.text[:40]!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Block) and (self.index, self.xpath, self.hash, self.text) == (
            other.index, other.xpath, other.hash, other.text)

    __hash__ = None  # mutable cache inside: not hashable

    @property
    def text_chars(self) -> int:
        return len(self.text)

    @property
    def link_density(self) -> float:
        return self.link_chars / len(self.text) if self.text else 0.0

    @property
    def text_density(self) -> float:
        """Text bytes over text plus markup bytes (the founding notes' line density)."""
        total = len(self.text) + self.markup_bytes
        return len(self.text) / total if total else 0.0


@dataclass(frozen=True, slots=True, weakref_slot=True)  # weakly held by blocks.page_memo (the last page's memo)
class Segmented:
    """A parsed page cut into blocks, with its block vector."""

    page: Page
    blocks: tuple[Block, ...]
    vector: np.ndarray  # uint32 block hashes, in document order
    title: str = ""
    root: Any = field(default=None, compare=False, repr=False)  # the parsed lxml tree the blocks point into
    chars: np.ndarray | None = field(default=None, compare=False, repr=False)  # int64 len(text) per block
    links: np.ndarray | None = field(default=None, compare=False, repr=False)  # int64 link_chars per block
    # metadata.declared_elements_plain(root) (the <meta>, <link>, <time> and microdata elements), gathered by the
    # segmentation walk while the tree is in the cache; None: metadata finds them itself
    declared: tuple | None = field(default=None, compare=False, repr=False)
    # blocks.tag_path_index(self) (the distinct tag paths in order, per block its path's number as intp), counted by
    # the segmentation walk; None: blocks.tag_path_index counts it
    path_index: tuple | None = field(default=None, compare=False, repr=False)

    def block_chars(self) -> np.ndarray:
        """len(text) of each block as int64: counted by the segmentation walk, else here."""
        if self.chars is not None:
            return self.chars
        return np.fromiter((len(b.text) for b in self.blocks), dtype=np.int64, count=len(self.blocks))

    def block_links(self) -> np.ndarray:
        """link_chars of each block as int64: counted by the segmentation walk, else here."""
        if self.links is not None:
            return self.links
        return np.fromiter((b.link_chars for b in self.blocks), dtype=np.int64, count=len(self.blocks))


@dataclass(slots=True)  # not frozen: a page makes dozens, and a frozen init costs four times as much
class DocNode:
    """One element of an extracted document, in reading order (treat instances as immutable).

    kind: "heading" (``level`` 1-6), "paragraph", "item" (a list item: ``level`` its nesting depth from 1,
    ``ordered`` for a numbered list; ``text`` may hold several lines), "code" (``text`` the lines of a <pre> as
    they were), "table" (``rows`` of cell texts, ``header`` when its first row is a header row). ``quote`` is the
    number of <blockquote> around it; ``links`` the (anchor text, URL) pairs of its text, when asked for.
    """

    kind: str
    text: str = ""
    level: int = 0
    ordered: bool = False
    quote: int = 0
    rows: tuple[tuple[str, ...], ...] = ()
    header: bool = False
    links: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class Document:
    """An extraction as a structured document: its headline apart and the body's nodes (templater.document)."""

    title: str | None
    nodes: tuple[DocNode, ...]


@dataclass(frozen=True, slots=True)
class Rule:
    """One learned (or pinned) rule of a template.

    action: a RuleAction (six: three drops, the content region, the byline and the date), held as its plain string
    (as stored); how it finds its blocks is its RuleMatch (LEARNED_MATCH[action], RuleMatch.XPATH when pinned).
    """

    xpath: str
    action: str
    support: float
    tag_path: str = ""
    hash: int | None = None
    sample: str = ""
    pinned: bool = False

    def __post_init__(self) -> None:
        if type(self.action) is not str:
            object.__setattr__(self, "action", str(self.action))


@dataclass(frozen=True, slots=True)
class Template:
    """A site's learned template: its rules, the pages it was learned from and when, and its settings."""

    site: str  # the group key it was learned for (URL prefix, with the layout cluster number)
    version: int
    rules: tuple[Rule, ...]
    page_count: int
    learned_at: str
    layout: int = 0
    reason: str = "learned"
    stale: bool = False
    settings: LearnSettings = LearnSettings()  # what it was learned with, and what extraction applies it with


@dataclass(frozen=True, slots=True)
class Metadata:
    """What a page says about itself (templater.metadata): None where it says nothing.

    ``date`` (published) and ``date_modified`` are ISO 8601; ``author`` joins several names with "; ";
    ``language`` is an ISO 639 code; ``tags`` a tuple of strings.
    """

    author: str | None = None
    date: str | None = None
    date_modified: str | None = None
    sitename: str | None = None
    description: str | None = None
    language: str | None = None
    canonical_url: str | None = None
    image: str | None = None
    tags: tuple[str, ...] | None = None

    def to_json(self) -> dict:
        return {"author": self.author, "date": self.date, "date_modified": self.date_modified,
                "sitename": self.sitename, "description": self.description, "language": self.language,
                "canonical_url": self.canonical_url, "image": self.image,
                "tags": list(self.tags) if self.tags is not None else None}


KEPT = object()  # Extraction.with_parts: a part not given keeps its value

METADATA_FIELDS = ("author", "date", "date_modified", "sitename", "description", "language", "canonical_url", "image",
                   "tags")


@dataclass(frozen=True, slots=True)
class Extraction:
    """One page's extracted content: its text, how it was found (method, template, coverage) and its metadata."""

    id: str
    url: str
    site: str
    text: str
    method: str  # "template" or "fallback"
    template: str | None  # "<site>@v<version>" or None
    coverage: float | None
    kept: tuple[int, ...] = field(default=(), repr=False)  # indexes of the blocks kept
    boilerplate_chars: int = 0
    title: str | None = None  # the headline, kept apart from text
    document: Document | None = field(default=None, repr=False, compare=False)  # text's structure
    metadata: Metadata = field(default=Metadata(), repr=False)  # author, date, ... (templater.metadata)

    def __getattr__(self, name: str):
        if name in METADATA_FIELDS:  # result.author, result.date, ...: the metadata's fields
            return getattr(self.metadata, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def to_json(self) -> dict:
        return {"id": self.id, "url": self.url, "site": self.site, "text": self.text, "method": self.method,
                "template": self.template, "coverage": self.coverage, "title": self.title,
                **self.metadata.to_json()}

    def with_parts(self, *, document: Document | None | object = KEPT, metadata: Metadata | object = KEPT,
                   ) -> Extraction:
        """``dataclasses.replace(self, document=..., metadata=...)`` of the parts given (each page's result gets its
        metadata, then loses its document once rendered): the same value, made by one constructor call (replace
        reads every field through the dataclass's field table: ~4x the time)."""
        return Extraction(self.id, self.url, self.site, self.text, self.method, self.template, self.coverage,
                          self.kept, self.boilerplate_chars, self.title,
                          self.document if document is KEPT else document,
                          self.metadata if metadata is KEPT else metadata)
