"""Page + Template | None -> Extraction.

With a template: drop what the rules name (static blocks aligned by LCS, dynamic shapes, pinned XPaths), keep
only the content region where the page has it, then let the single-page classifier trim what the template cannot
know. Without one: the single-page fallback alone.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections import Counter
from collections.abc import Callable, Sequence

import numpy as np
from lxml import etree

from . import config, document, fallback, native
from .align import lcs_length_masks, match_masks
from .blocks import in_declared_main, page_memo, path_mask, tag_path_index
from .config import HEADLINE_TAGS, LearnSettings
from .errors import RuleError
from .grouping import host_of
from .headline import find_headline
from .metadata import META_ACTIONS, read_metadata
from .parse import compile_xpath
from .shingles import sorted_set
from .template import RELATED_SIZE_TEST, contains, fitting
from .datatypes import Extraction, Rule, RuleAction, Segmented, Template

NO_CLASSIFIER = "none"  # --fallback none: the template's rules alone (the whole text where there is no template)


class CompiledTemplate:
    """A template prepared for fast application: hash sets and sequences built once; ``settings`` are the
    thresholds saved with it (what it was learned with: it is applied with them, whatever config says now).

    Built from a whole template, or from one read without its static rules (``static``: their hashes in order,
    ``template.rules`` the other rules; what a crawl's extraction needs, TemplateIndex), where ``load`` gives the
    whole template when ``template`` is asked for (rules explain, the report)."""

    __slots__ = ("_template", "_load", "site", "name", "static_seq", "static_set", "static_keys", "static_table",
                 "_static_masks", "shapes", "nested", "region", "region_trusted", "pinned", "containers", "fast_rules",
                 "meta", "settings", "paths", "region_steps")

    def __init__(self, template: Template, *, static: Sequence[int] | None = None,
                 load: Callable[[], Template] | None = None) -> None:
        self._template, self._load = template, load if static is not None else None
        self.settings = settings = template.settings
        self.site = template.site
        self.name = f"{template.site}@v{template.version}"
        if static is None:
            static = [r.hash for r in template.rules if r.action == RuleAction.DROP and r.hash is not None]
        self.static_seq = list(static)
        sequence = np.array(self.static_seq, dtype=np.uint32)
        self.static_set = sorted_set(sequence)  # (np.unique would import numpy.ma on its first call: 15 ms)
        self.static_keys, self.static_table = static_table(sequence, self.static_set)
        self._static_masks = None
        self.shapes = frozenset(r.tag_path for r in template.rules if r.action == RuleAction.DROP_SHAPE)
        self.nested = nested_lists(self.shapes, settings)
        regions = [r for r in template.rules if r.action == RuleAction.CONTENT and not r.pinned]
        self.region = _compile(regions[0])[1] if regions else None
        self.region_steps = plain_steps(regions[0].xpath) if regions else None
        # a region right under <body> may be the page's wrapper: it bounds what is kept, and earns trust only on
        # pages where it leaves the site's chrome outside (holds_little_chrome)
        self.region_trusted = bool(regions) and regions[0].xpath.count("/") > settings.wrapper_depth
        self.pinned = tuple(_compile(r) for r in template.rules if r.pinned and r.action not in META_ACTIONS)
        self.meta = tuple(r for r in template.rules if r.action in META_ACTIONS)  # where bylines and dates sit
        self.containers = tuple(_compile(r)[1] for r in template.rules
                                if r.action == RuleAction.DROP_XPATH and not r.pinned)
        self.fast_rules = rule_forms(self.containers)
        self.paths = PathTests(self.shapes, self.nested, settings)

    @property
    def template(self) -> Template:
        """The whole template (read now where it was built without its static rules)."""
        if self._load is not None:
            self._template, self._load = self._load(), None
        return self._template

    @property
    def static_masks(self) -> dict[int, int]:
        """align.match_masks of the static sequence (the pure path's LCS), made when first asked for."""
        if self._static_masks is None:
            self._static_masks = match_masks(self.static_seq)
        return self._static_masks


def static_table(sequence: np.ndarray, keys: np.ndarray) -> tuple[bytes, bytes | None]:
    """(the sorted distinct static hashes as uint32 bytes, per hash the match mask of its positions in ``sequence``
    (uint32) as (len(sequence) + 63) // 64 uint64 words) for native.numeric.static_match; (keys, None) without
    it."""
    if native.numeric is None or not len(sequence):
        return keys.tobytes(), None
    words = (len(sequence) + 63) // 64
    table = np.zeros((len(keys), words), dtype=np.uint64)
    positions = np.arange(len(sequence))
    rows = np.searchsorted(keys, sequence)
    np.bitwise_or.at(table, (rows, positions // 64), np.left_shift(np.uint64(1), (positions % 64).astype(np.uint64)))
    return keys.tobytes(), table.tobytes()


def match_static(vector: np.ndarray, compiled: CompiledTemplate) -> tuple[np.ndarray, float]:
    """(the blocks the template's static rules name, the template's coverage of the page: the share of its static
    sequence the page's block vector holds in order, by LCS; 1.0 without static rules)."""
    size = len(compiled.static_seq)
    if compiled.static_table is not None and native.numeric is not None:
        static = np.zeros(len(vector), dtype=bool)
        length = native.numeric.static_match(np.ascontiguousarray(vector, dtype=np.uint32), compiled.static_keys,
                                             compiled.static_table, size, static)
        return static, length / size
    static = _members(vector, compiled.static_set)
    if not size:
        return static, 1.0
    return static, lcs_length_masks(compiled.static_masks, size, vector.tolist()) / size


def _compile(rule: Rule) -> tuple[Rule, etree.XPath]:
    try:
        return rule, compile_xpath(rule.xpath)
    except etree.XPathSyntaxError as e:
        raise RuleError(f"rule XPath {rule.xpath!r} does not compile: {e}; fix it in the rules file") from None


# A tag path's tests in match_regions, as bits (PathTests): a shape rule's path, an entry of a list nested in one
# (nested_entries), in a definition list or <pre> outside a link (terms_of_text), outside settings.chrome_tags and
# with no link step, ending in a heading tag (own_content)
SHAPE_PATH, NESTED_PATH, STRUCTURE_PATH, PLACED_PATH, NO_LINK_PATH, HEADING_PATH = 1, 2, 4, 8, 16, 32


class PathTests:
    """A template's tests of tag paths, made once a distinct path its pages have and kept (up to
    config.PATH_TESTS_KEPT paths): a site's pages share most of their tag paths."""

    __slots__ = ("bits", "shapes", "nested", "prefixes", "structure", "chrome", "headings", "headline_paths")

    def __init__(self, shapes: frozenset[str], nested: dict[str, str], settings: LearnSettings) -> None:
        self.bits: dict[str, int] = {}
        self.shapes, self.nested, self.prefixes = shapes, nested, tuple(nested)
        self.structure, self.chrome = settings.text_structure_paths, settings.chrome_tags
        self.headings = settings.heading_tags
        self.headline_paths = HEADLINE_TAGS <= self.headings  # HEADING_PATH then marks every headline's block

    def test(self, path: str) -> int:
        """The path's bits (computed, and kept while there is room)."""
        bits = ((SHAPE_PATH if path in self.shapes else 0)
                | (NESTED_PATH if self.nested and path.startswith(self.prefixes)
                   and _nested_path(path, self.nested) is not None else 0)
                | (STRUCTURE_PATH if _text_structure(path, self.structure) else 0)
                | (PLACED_PATH if _outside_chrome_tags(path, self.chrome) else 0)
                | (NO_LINK_PATH if _no_link_step(path) else 0)
                | (HEADING_PATH if path.rpartition("/")[2] in self.headings else 0))
        if len(self.bits) < config.PATH_TESTS_KEPT:
            self.bits[path] = bits
        return bits

    def codes(self, seg: Segmented) -> np.ndarray:
        """Each block's tag path bits (uint8)."""
        paths, of = tag_path_index(seg)
        known, test = self.bits, self.test
        return np.fromiter([known[p] if p in known else test(p) for p in paths], dtype=np.uint8,
                           count=len(paths))[of]


def apply_template(seg: Segmented, compiled: CompiledTemplate) -> tuple[np.ndarray, float]:
    """Mask of blocks the template allows (True = not boilerplate), and the template's coverage of the page."""
    allowed, coverage, _ = match_template(seg, compiled)
    return allowed, coverage


def match_template(seg: Segmented, compiled: CompiledTemplate) -> tuple[np.ndarray, float, np.ndarray]:
    """(allowed, coverage, in_region): as apply_template, plus the allowed blocks inside the learned content
    region where the page trusts it and among the page's own content (own_content; all False when the template
    has none, the page's region holds too little of its text, or a region right under <body> holds the site's
    chrome on this page)."""
    allowed, coverage, in_region, _ = match_regions(seg, compiled)
    return allowed, coverage, in_region


def match_regions(seg: Segmented, compiled: CompiledTemplate) -> tuple[np.ndarray, float, np.ndarray, np.ndarray]:
    """(allowed, coverage, in_region, trusted_region): as match_template, plus every allowed block of the
    trusted region, among the page's own content or not (for `rules explain`)."""
    settings = compiled.settings
    static, coverage = match_static(seg.vector, compiled)
    allowed = ~static
    codes = compiled.paths.codes(seg)
    if compiled.shapes:
        shaped = (codes & SHAPE_PATH).astype(bool)
        if compiled.nested:
            shaped |= nested_entries(seg, compiled.nested, settings, codes)
        if shaped.any():
            shaped &= ~(terms_of_text(seg, shaped, settings, codes) | name_line(seg, shaped, settings, codes))
        allowed &= ~shaped
        aligned = static | shaped  # what the rules learned from the pages' aligned sequence drop
    else:
        aligned = static
    if compiled.containers:
        allowed &= ~container_mask(seg, compiled.containers, compiled.fast_rules,
                                   headings=(codes & HEADING_PATH).astype(bool) if compiled.paths.headline_paths else None)
    for rule, xpath in compiled.pinned:
        allowed &= pinned_mask(seg, rule, xpath)
    in_region = trusted_region = np.zeros(len(seg.blocks), dtype=bool)
    if compiled.region is not None:
        region = _region_mask(seg, compiled.region, allowed, settings, compiled.region_steps)
        if not region.all() and (compiled.region_trusted or holds_little_chrome(seg, region, allowed, static,
                                                                                settings)):
            trusted_region = allowed & region
            in_region = own_content(seg, trusted_region, aligned, settings, codes)
        named = name_line(seg, allowed & ~region, settings, codes) if not region.all() else region[:0]
        allowed &= region
        if named.any():
            allowed |= named
    return allowed, coverage, in_region, trusted_region


def own_content(seg: Segmented, trusted: np.ndarray, chrome: np.ndarray,
                settings: LearnSettings = LearnSettings(), codes: np.ndarray | None = None) -> np.ndarray:
    """The trusted blocks among the page's own content: the region's allowed blocks fall into stretches split
    by at least own_content_gap blocks of the template's static and shape rules (``chrome``: in the aligned
    sequence, the site's chrome between them); the stretch from the first to the last paragraph or section
    heading (a block of paragraph_chars or more, or a heading not in a link inside the element the page declares
    its main content, <main> or [role=main], whose next trusted block is not mostly links, neither under <nav>,
    <aside>, <header>, <footer> or <form> (chrome_tags); not mostly links itself:
    a reference page's sections go on past a summary table the template cut, while a news page's sidebar boxes and
    lists of other stories have headings too), with what follows or precedes it up to such a gap, keeps the
    trust. What lies before the page's first paragraph or beyond its last, past the site's chrome (a chapter's
    table of contents cut by its shape rules, a feed of other stories after the article), is judged as any
    allowed block. ``codes``: the page's PathTests.codes of a template with these settings (with them, the compiled
    walk's ``own_stretch`` does it all in one pass where it is built; the code below is its definition)."""
    stretch = getattr(native.walk, "own_stretch", None) if codes is not None else None
    found = stretch(seg.blocks, trusted, chrome, seg.block_chars(), seg.block_links(), codes, settings.heading_tags,
                    settings.own_content_links, settings.paragraph_chars,
                    settings.own_content_gap) if stretch is not None else None  # (None: what follows decides)
    if found is not None:
        if found is True:
            return trusted
        out = np.zeros_like(trusted)
        out[found[0]:found[1]] = trusted[found[0]:found[1]]
        return out
    where = trusted.nonzero()[0]
    if not len(where):
        return trusted
    chars = seg.block_chars()
    text = (seg.block_links() <= settings.own_content_links * chars) & (chars > 0)
    if codes is None:
        chrome_tags = settings.chrome_tags  # only the trusted blocks are judged below
        placed = path_mask(seg, lambda path: _outside_chrome_tags(path, chrome_tags))[where]
        unlinked = placed & path_mask(seg, _no_link_step)[where]
    else:
        placed_codes = codes[where]
        placed = (placed_codes & PLACED_PATH).astype(bool)
        unlinked = (placed_codes & (PLACED_PATH | NO_LINK_PATH)) == (PLACED_PATH | NO_LINK_PATH)
    heading = np.zeros(len(where), dtype=bool)
    blocks = seg.blocks
    if codes is None:
        for k in np.flatnonzero(unlinked).tolist():  # (a test of the tag path alone: made once a distinct path)
            block = blocks[where[k]]
            heading[k] = block.tag in settings.heading_tags and in_declared_main(block)
    else:  # the blocks whose tag path ends in a heading tag alone (a block's tag ends its path)
        for k in np.flatnonzero(unlinked & (placed_codes & HEADING_PATH).astype(bool)).tolist():
            block = blocks[where[k]]
            heading[k] = block.tag in settings.heading_tags and in_declared_main(block)
    return _own_stretch(seg, trusted, chrome, where, text, placed, heading, settings)


def _own_stretch(seg: Segmented, trusted: np.ndarray, chrome: np.ndarray, where: np.ndarray, text: np.ndarray,
                 placed: np.ndarray, heading: np.ndarray, settings: LearnSettings) -> np.ndarray:
    """own_content from the trusted blocks' placement (``placed``: outside settings.chrome_tags) and their section
    headings in the declared main content (``heading``), both over ``where``, the trusted blocks' indexes."""
    chars = seg.block_chars()
    heading[:-1] &= text[where[1:]] & placed[1:]  # ... over the page's own text (not over a list of links, nor
    heading[-1:] = False  # an <aside> of other stories: "Latest in Gear")
    strong = (((chars[where] >= settings.paragraph_chars) | heading) & text[where]).nonzero()[0]
    if not len(strong):
        return trusted
    gaps = np.diff(np.cumsum(chrome)[where])  # the template's blocks between consecutive trusted blocks
    first, last = strong[0], strong[-1]
    cut = (gaps[:first] >= settings.own_content_gap).nonzero()[0]
    start = cut[-1] + 1 if len(cut) else 0
    cut = (gaps[last:] >= settings.own_content_gap).nonzero()[0]
    end = last + cut[0] + 1 if len(cut) else len(where)
    out = np.zeros_like(trusted)
    out[where[start:end]] = True
    return out


def _no_link_step(tag_path: str) -> bool:
    return "/a/" not in tag_path


@functools.lru_cache(maxsize=8192)
def _outside_chrome_tags(tag_path: str, chrome_tags: frozenset[str]) -> bool:
    """Whether no step of a tag path is one of chrome_tags (a page's blocks repeat a few tag paths many times)."""
    path = tag_path + "/"
    return not any(f"/{tag}/" in path for tag in chrome_tags)


_NAME_LINE = re.compile(r"\s*(\S+)\s+[-\u2010-\u2015]\s+\S")  # "git-stage - Add file contents ...": name, dash, summary
_DASHES = frozenset("-\u2010\u2011\u2012\u2013\u2014\u2015")  # the dashes of _NAME_LINE
_LEADING_TERM = re.compile(r"\s*([^\s(]+)")  # a headline's first word, without a manual section: "git-stage(1)"


def name_line(seg: Segmented, candidates: np.ndarray, settings: LearnSettings = LearnSettings(),
              codes: np.ndarray | None = None) -> np.ndarray:
    """The page's name line among ``candidates``: within the template's name_line_blocks blocks after the first
    heading that begins with the page's name (the first word of its <title>, without a manual section: "git-stage" of
    "git-stage(1)"), the first block that begins with that name, a dash and what it is ("git-stage - Add file
    contents to the staging area" under "git-stage(1) Manual Page"), where it is a candidate: a manual page's NAME
    section, which generated documentation (asciidoc, man2html, mandoc) prints in the page's header beside its
    title, outside the content division, one short varying line a page (the shape of a byline). It is the page's
    own first line. The line is found once a page (``blocks.page_memo``): a page asks with several candidate
    sets. ``codes``: the page's PathTests.codes of a template with these settings (its headings are read there)."""
    out = np.zeros(len(seg.blocks), dtype=bool)
    key = ("name_line", settings.heading_tags, settings.name_line_blocks)
    memo = page_memo(seg)
    line = memo.get(key, False)
    if line is False:
        line = memo[key] = _name_line_of(seg, settings, codes)
    if line is not None:
        out[line] = bool(candidates[line])
    return out


def _name_line_of(seg: Segmented, settings: LearnSettings, codes: np.ndarray | None = None) -> int | None:
    """Index of the block name_line would name were every block a candidate, or None (``codes``: as name_line's,
    whose HEADING_PATH bits mark the heading blocks: a block's tag ends its tag path)."""
    name = _name_of(seg.title)
    if name is None:
        return None
    blocks = seg.blocks
    headings = (b.index for b in blocks if b.tag in settings.heading_tags) if codes is None else \
        np.flatnonzero(codes & HEADING_PATH).tolist()
    heading = next((i for i in headings if _name_of(blocks[i].text) == name), None)
    if heading is None:
        return None
    for i in range(heading + 1, min(heading + 1 + settings.name_line_blocks, len(blocks))):
        if _names(blocks[i].text, name):
            return i
    return None


def _names(text: str, name: str) -> bool:
    """Whether a block's text begins with ``name``, a dash and more words ("git-stage - Add file ..."): _NAME_LINE
    matches and its first word lowers to ``name``. The same test by str.split, which splits where the pattern's
    \\s matches: the first word, then a word that is one dash alone, then more."""
    words = text.split(None, 2)
    return len(words) == 3 and words[1] in _DASHES and words[0].lower() == name


def _name_of(text: str) -> str | None:
    """A title's or heading's first word, lower-cased, without a manual section ("git-stage(1)" -> "git-stage"):
    what _LEADING_TERM matches, found by str.split (which splits where its \\s matches) and a cut at the first "("
    (a heading a page has dozens of: the pattern's match costs several times more)."""
    words = text.split(None, 1) if text else None
    first = words[0].partition("(")[0] if words else None
    return first.lower() if first else None


def nested_lists(shapes: frozenset[str], settings: LearnSettings = LearnSettings()) -> dict[str, str]:
    """{the list's tag path with a trailing '/': its item tag} of the shape rules whose tag path ends in a list's
    item (settings.list_items: ul/li, ol/li, dl/dt, dl/dd)."""
    out = {}
    for path in shapes:
        steps = path.rsplit("/", 2)
        if len(steps) == 3 and (steps[1], steps[2]) in settings.list_items:
            out[f"{steps[0]}/{steps[1]}/"] = steps[2]
    return out


def nested_entries(seg: Segmented, nested: dict[str, str], settings: LearnSettings = LearnSettings(),
                   codes: np.ndarray | None = None) -> np.ndarray:
    """Blocks that are entries of a list nested inside a list a shape rule drops: the same item tag deeper under
    the list's tag path, and link-heavy like the rule's entries (a chapter's table of contents lists its
    sections' subsections under each section; the rule is learned from the top entries, on most pages, while a
    nested level is on few). ``codes``: the page's PathTests.codes of a template with these nested lists."""
    if codes is None:
        prefixes = tuple(nested)
        listed = path_mask(seg, lambda path: path.startswith(prefixes) and _nested_path(path, nested) is not None)
    else:
        listed = (codes & NESTED_PATH).astype(bool)
    return listed & (seg.block_links() > settings.shape_max_link_density * seg.block_chars())


def nested_rule(block, nested: dict[str, str], settings: LearnSettings = LearnSettings()) -> str | None:
    """The tag path of the shape rule whose list the block is a nested, link-heavy entry of, or None."""
    if block.link_chars <= settings.shape_max_link_density * len(block.text):
        return None
    return _nested_path(block.tag_path, nested)


def _nested_path(path: str, nested: dict[str, str]) -> str | None:
    """nested_rule's test of the tag path alone: the shape rule's tag path whose list ``path`` is nested in."""
    for prefix, item in nested.items():
        if path.startswith(prefix) and path.endswith("/" + item) and path.count("/") > prefix.count("/"):
            return prefix + item
    return None


def terms_of_text(seg: Segmented, shaped: np.ndarray, settings: LearnSettings = LearnSettings(),
                  codes: np.ndarray | None = None) -> np.ndarray:
    """Blocks a shape rule names that are terms or code of the page's text: in a definition list or <pre>
    (settings.text_structure_paths) and mostly not link text. A shape rule is learned from a tag path's blocks on
    most pages, link-heavy there (a chapter's table of contents as a <dl>); a definition list of the page's own at the
    same tag path is not a list of links. ``codes``: the page's PathTests.codes of a template with these settings."""
    if not shaped.any():
        return np.zeros(len(seg.blocks), dtype=bool)
    structure = path_mask(seg, lambda path: _text_structure(path, settings.text_structure_paths)) if codes is None \
        else (codes & STRUCTURE_PATH).astype(bool)
    return (shaped & structure
            & (seg.block_links() <= settings.shape_max_link_density * seg.block_chars()))


def _text_structure(tag_path: str, structure_paths) -> bool:
    """terms_of_text's test of the tag path: in a definition list or <pre> (structure_paths), not in a link."""
    return any(p in tag_path + "/" for p in structure_paths) and "/a/" not in tag_path


def holds_little_chrome(seg: Segmented, region: np.ndarray, allowed: np.ndarray, static: np.ndarray,
                        settings: LearnSettings = LearnSettings()) -> bool:
    """Whether the text of the site's static blocks (the same on most pages: menus, sidebars, footers) inside the
    region is at most region_chrome_share of the text the rules left there: the region is the page's content
    division, not a wrapper around the site's chrome. What varies from page to page (a chapter's table of
    contents, a related-links list) says nothing of the region: the classifier judges it."""
    chars = seg.block_chars()
    return bool(chars[region & static].sum() <= max(settings.region_chrome_share * chars[region & allowed].sum(),
                                                    settings.paragraph_chars))  # one short line is not the menus


def _members(values: np.ndarray, sorted_set: np.ndarray) -> np.ndarray:
    """np.isin(values, sorted_set) for a sorted array of distinct values, by binary search."""
    if not len(sorted_set):
        return np.zeros(len(values), dtype=bool)
    place = np.minimum(np.searchsorted(sorted_set, values), len(sorted_set) - 1)
    return sorted_set[place] == values


def pinned_mask(seg: Segmented, rule: Rule, xpath: etree.XPath) -> np.ndarray:
    """A pinned drop rule removes every block at or under its elements; a pinned content rule keeps only those."""
    inside = _inside(seg, [e for e in xpath(seg.root) if isinstance(e, etree._Element)])
    return inside if rule.action == RuleAction.CONTENT else ~inside


def container_mask(seg: Segmented, rules: tuple[etree.XPath, ...], forms: RuleForms | None = None, *,
                   headings: np.ndarray | None = None) -> np.ndarray:
    """Blocks under elements that learned container rules match (never a container holding the headline);
    ``forms``: rule_forms(rules), made once a template. Only the blocks' elements and their ancestors can hold
    blocks: the compiled walk tests those alone (match_rules_over), not every element of the page. The headline
    (find_headline: one of HEADLINE_TAGS) is looked for only where the rules' elements hold a block of those tags
    (``headings``: a mask of the blocks that may be one, where the caller has it): elsewhere no element holds it."""
    elements = _rule_elements(seg, rules, forms, over_blocks=True)
    inside = _inside(seg, elements)
    if not elements or not _holds_headline_tag(seg, inside, headings):
        return inside
    headline = find_headline(seg)
    if headline is None or not inside[headline]:  # (no element holds it: none is left out)
        return inside
    return _inside(seg, [e for e in elements if not contains(e, seg.blocks[headline].element)])


def _holds_headline_tag(seg: Segmented, mask: np.ndarray, headings: np.ndarray | None) -> bool:
    """Whether a block of the mask may be a headline: one of HEADLINE_TAGS (``headings``: a mask of blocks that holds
    every such block, where the caller has one)."""
    if headings is not None:
        return bool((mask & headings).any())
    blocks = seg.blocks
    return any(blocks[i].tag in HEADLINE_TAGS for i in np.flatnonzero(mask).tolist())


@dataclasses.dataclass(frozen=True)
class RuleForms:
    """Container rules sorted by how they are evaluated: ``fast`` the (tag, id, class token) of the forms
    _walk.match_rules evaluates, ``sized`` whether each of those carries the related boxes' size test, ``slow``
    the XPaths lxml evaluates."""

    fast: tuple[tuple[str | None, str | None, str | None], ...]
    sized: tuple[bool, ...]
    slow: tuple[etree.XPath, ...]
    anchors: tuple[tuple[etree.XPath, str], ...] = ()  # the slow rules of the comment anchors' form, with their id


def rule_forms(rules: tuple[etree.XPath, ...]) -> RuleForms:
    """The rules' RuleForms (all slow where the compiled walk is not built)."""
    if native.walk is None:
        return RuleForms((), (), tuple(rules))
    specs = [(xpath, _fast_rule(xpath.path)) for xpath in rules]
    fast = [spec for _, spec in specs if spec is not None]
    slow = tuple(xpath for xpath, spec in specs if spec is None)
    anchors = tuple((xpath, found.group(1)) for xpath in slow if (found := _ANCHOR_RULE.fullmatch(xpath.path)))
    return RuleForms(tuple(spec[:3] for spec in fast), tuple(spec[3] for spec in fast), slow, anchors)


def _rule_elements(seg: Segmented, rules: tuple[etree.XPath, ...], forms: RuleForms | None = None, *,
                   over_blocks: bool = False) -> list:
    """The elements the rules' XPaths select (``forms``: rule_forms(rules), made once a template). The two plain
    forms template.py writes for named containers (by id, by class token; the related boxes' size test then applied
    with the page's side computed once) are evaluated in one compiled walk (templater._walk, Cython) where it is
    built; any other form (the comment anchors, a hand-written rule) goes to lxml. With ``over_blocks``, the
    compiled walk gives only those among the blocks' elements and their ancestors (in no set order)."""
    forms = rule_forms(rules) if forms is None else forms
    slow = forms.slow
    elements: list = []
    if forms.fast:
        found = None if native.walk is None else native.walk.match_rules_over(seg.blocks, forms.fast) \
            if over_blocks else native.walk.match_rules(seg.root, forms.fast)
        if found is None:
            slow = rules
        else:  # the related boxes' size test, over every sized rule's elements at once (the page's side once)
            tested = [e for sized, matches in zip(forms.sized, found) if sized for e in matches]
            fit = {id(e) for e in fitting(seg.root, tested)} if tested else set()
            for sized, matches in zip(forms.sized, found):
                elements += [e for e in matches if id(e) in fit] if sized else matches
    if over_blocks and forms.anchors and slow is forms.slow:  # the comment anchors' form, where the walk finds
        done = set()  # the anchor: no XPath over every element
        for xpath, ident in forms.anchors:
            found = _anchor_elements(seg.root, ident)
            if found is not None:
                elements += found
                done.add(id(xpath))
        slow = tuple(xpath for xpath in slow if id(xpath) not in done)
    return elements + [e for xpath in slow for e in xpath(seg.root) if isinstance(e, etree._Element)]


_ANCHOR_RULE = re.compile(r"//\*\[@id='([^'\x00]*)'\]/ancestor-or-self::\*\[following-sibling::\*\]\[1\]"
                          r"/following-sibling::\*")  # template.py's rule for what follows a comments anchor


def _anchor_elements(root, ident: str) -> list | None:
    """The elements _ANCHOR_RULE selects for that id (each anchor with that id: the elements after the nearest of
    it and its ancestors that has an element after it), as a list in no set order (an element may come twice), or
    None where the compiled walk declines."""
    found = native.walk.match_rules(root, [(None, ident, None)])
    if found is None:
        return None
    out = []
    for node in found[0]:
        while node is not None and _next_element(node) is None:
            node = node.getparent()
        after = _next_element(node) if node is not None else None
        while after is not None:
            out.append(after)
            after = _next_element(after)
    return out


def _next_element(element):
    """The next sibling that is an element (not a comment, processing instruction or entity), or None."""
    return next((e for e in element.itersiblings() if isinstance(e.tag, str)), None)


_SIZE_SUFFIX = f"[{RELATED_SIZE_TEST}]"
_ID_RULE = re.compile(r"//\*\[@id='([^'\x00]*)'\]")
_CLASS_RULE = re.compile(r"//([a-z][a-z0-9]*)\[contains\(concat\(' ', normalize-space\(@class\), ' '\), "
                         r"' ([^'\x00]*) '\)\]")


@functools.lru_cache(maxsize=4096)
def _fast_rule(path: str) -> tuple[str | None, str | None, str | None, bool] | None:
    """(tag, id, class token, with the size test) of a rule XPath of a form _walk.match_rules evaluates (the
    size test, RELATED_SIZE_TEST, applied after), else None."""
    sized = path.endswith(_SIZE_SUFFIX)
    if sized:
        path = path[: -len(_SIZE_SUFFIX)]
    found = _ID_RULE.fullmatch(path)
    if found:
        return None, found.group(1), None, sized
    found = _CLASS_RULE.fullmatch(path)
    if found:
        return found.group(1), None, found.group(2), sized
    return None


def _inside(seg: Segmented, elements: list) -> np.ndarray:
    """Mask of the blocks owned by the given elements or their descendants."""
    if native.walk is not None:
        found = native.walk.inside(seg.blocks, elements)
        if found is not None:
            return np.frombuffer(found, dtype=bool).copy()
    return _inside_plain(seg, elements)


def _inside_plain(seg: Segmented, elements: list) -> np.ndarray:
    """_inside over lxml's API: the definition the compiled test (templater._walk) follows."""
    members = set()
    for element in elements:
        members.update(element.iter())
    return np.fromiter((b.element in members for b in seg.blocks), dtype=bool, count=len(seg.blocks))


_PLAIN_STEP = re.compile(r"/([^\W\d][\w.-]*)(?:\[([1-9][0-9]{0,8})\])?")  # a positional XPath's step: div[2]


def plain_steps(path: str) -> tuple[tuple[str, int], ...] | None:
    """A positional XPath of plain steps (a learned content region: /html/body/div[2]/div) as _walk.first_on_path's
    (name, position or 0) pairs, else None."""
    steps = []
    at = 0
    while at < len(path):
        found = _PLAIN_STEP.match(path, at)
        if found is None:
            return None
        steps.append((found.group(1), int(found.group(2) or 0)))
        at = found.end()
    return tuple(steps) or None


def _region_elements(seg: Segmented, region: etree.XPath, steps: tuple[tuple[str, int], ...] | None) -> list:
    """The first element the region's XPath selects, as a list of it or empty (by _walk.first_on_path where the
    path is plain steps and the walk is built)."""
    if steps is not None and native.walk is not None:
        found = native.walk.first_on_path(seg.root, steps)
        if found is not None:
            return found
    return [e for e in region(seg.root) if isinstance(e, etree._Element)][:1]


def _region_mask(seg: Segmented, region: etree.XPath, allowed: np.ndarray, settings: LearnSettings,
                 steps: tuple[tuple[str, int], ...] | None = None) -> np.ndarray:
    inside = _inside(seg, _region_elements(seg, region, steps))
    chars = seg.block_chars()
    total = chars[allowed].sum()
    if total and chars[allowed & inside].sum() >= settings.region_min_share * total:
        return inside
    return np.ones(len(seg.blocks), dtype=bool)


def extract_page(seg: Segmented, compiled: CompiledTemplate | None = None, *, site: str | None = None,
                 method: str = "auto", weights: fallback.ann.Weights | None = None,
                 q: float = fallback.FDR_Q, links: bool = False) -> Extraction:
    """Extract one page's main content, with its site template when there is one: the headline apart (``title``),
    the body as text and as a structured document (with its links' URLs when ``links``), and the page's metadata
    (``weights``: the classifier's, default the shipped ones; ``q``: the fdr method's false-discovery rate)."""
    result = extract_content(seg, compiled, site=site, method=method, weights=weights, q=q, links=links)
    metadata = read_metadata(seg, rules=compiled.meta if compiled is not None else (), text=result.text)
    return result.with_parts(metadata=metadata)


def extract_content(seg: Segmented, compiled: CompiledTemplate | None = None, *, site: str | None = None,
                    method: str = "auto", weights: fallback.ann.Weights | None = None,
                    q: float = fallback.FDR_Q, links: bool = False) -> Extraction:
    """Extract one page's main content, with its site template when there is one (no metadata)."""
    page = seg.page
    if compiled is None:
        keep = np.ones(len(seg.blocks), dtype=bool) if method == NO_CLASSIFIER else fallback.select_blocks(
            seg, method=method, weights=weights, q=q)
        return _extraction(seg, keep, site=site or host_of(page.url), method="fallback", template=None,
                           coverage=None, links=links)
    allowed, coverage, in_region = match_template(seg, compiled)
    settings = compiled.settings
    if leaves_nothing(seg, allowed, settings):
        # the template knows this page's paragraphs as boilerplate (it was learned from copies of the article):
        # the page is extracted as if the site had no template
        return extract_content(seg, None, site=site or compiled.site, method=method, weights=weights,
                               q=q, links=links)
    keep = allowed if method == NO_CLASSIFIER or without_paragraphs(seg, settings) else fallback.select_blocks(
        seg, method=method, allowed=allowed, trusted=in_region, weights=weights, q=q, settings=settings)
    if compiled.shapes and method != NO_CLASSIFIER:  # the name line the template let through: the classifier,
        keep = keep | name_line(seg, allowed & ~keep, settings)  # taught on prose, scores one short line as a byline
    return _extraction(seg, keep, site=site or compiled.site, method="template", template=compiled.name,
                       coverage=round(coverage, 4), links=links, trusted=in_region, settings=settings)


def without_paragraphs(seg: Segmented, settings: LearnSettings = LearnSettings()) -> bool:
    """Whether the page has no paragraph at all (no block of paragraph_chars or more that is mostly not link
    text): a list or index page (a reference's list of its syntax diagrams), whose every block the classifier,
    taught on pages of prose, would score as chrome. Behind a template the template's choice stands there: it
    took away what the site repeats, what is left is the list."""
    chars = seg.block_chars()
    links = seg.block_links()
    return not ((chars >= settings.paragraph_chars) & (links <= settings.own_content_links * chars)).any()


def leaves_nothing(seg: Segmented, allowed: np.ndarray, settings: LearnSettings = LearnSettings()) -> bool:
    """Whether the page has paragraphs (a block of paragraph_chars or more) and the template allows no block."""
    return not allowed.any() and bool((seg.block_chars() >= settings.paragraph_chars).any())


def drop_repeats(seg: Segmented, keep: np.ndarray, trusted: np.ndarray | None = None,
                 settings: LearnSettings = LearnSettings()) -> np.ndarray:
    """Keep only the first of kept blocks with the same long text (pages that print their article twice), but
    every one in code, a table or a definition list of the ``trusted`` content region (fallback.protected_blocks:
    reference pages describe the parameters of overloads and options in the same words), and every repeat there in
    the page's declared main content with the page's own long text on both sides (lone_repeats: a reference page's
    summary line said again in its details, the paragraphs a method's overloads share)."""
    seen: set[str] = set()
    chars = seg.block_chars()
    long = keep & (chars >= settings.repeat_min_chars)
    repeat = np.zeros(len(keep), dtype=bool)
    where = long.nonzero()[0].tolist()
    lengths = chars[where].tolist()
    if len(set(lengths)) == len(lengths):  # only texts of a length another shares can be repeats (a page's few long
        return keep.copy()  # blocks: a set, then a Counter where two share one, not np.unique's sort and np.isin)
    counts = Counter(lengths)
    blocks = seg.blocks
    for i in [i for i, length in zip(where, lengths) if counts[length] > 1]:
        text = blocks[i].text
        repeat[i] = text in seen
        seen.add(text)
    if not repeat.any():
        return keep.copy()
    if trusted is not None and trusted.any():
        repeat &= ~(fallback.protected_blocks(seg, trusted, settings=settings) | lone_repeats(seg, long, repeat,
                                                                                             trusted))
    return keep & ~repeat


def lone_repeats(seg: Segmented, long: np.ndarray, repeat: np.ndarray, trusted: np.ndarray) -> np.ndarray:
    """Repeats in the trusted region, inside the element the page declares its main content (<main>,
    [role=main]), in a run of repeats between two kept long blocks (repeat_min_chars) that are not repeats: lines
    said again among the page's own text (a method's summary sentence in its details, before its parameters; the
    paragraphs a method's overloads share, between each overload's signature and its own text), not an article
    printed twice (its second copy's run ends the page's long blocks), a news page's lede printed over its story
    (pages without <main>) nor its first paragraph quoted again in a share-by-email box after the story."""
    where = np.flatnonzero(long)
    flags = repeat[where]
    out = np.zeros(len(long), dtype=bool)
    for run in re.finditer(b"\x01+", flags.view(np.uint8).tobytes()):  # each run of repeats among the long blocks
        if run.start() > 0 and run.end() < len(flags):  # with the page's own long text before and after it
            for i in where[run.start():run.end()].tolist():
                out[i] = bool(trusted[i]) and in_declared_main(seg.blocks[i])
    return out


def _extraction(seg: Segmented, keep: np.ndarray, *, site: str, method: str, template: str | None,
                coverage: float | None, links: bool = False, trusted: np.ndarray | None = None,
                settings: LearnSettings = LearnSettings()) -> Extraction:
    keep = drop_repeats(seg, keep, trusted, settings)
    doc = document.build_document(seg, keep, links=links)
    boilerplate = int(seg.block_chars()[~np.asarray(keep, dtype=bool)].sum())
    return Extraction(id=seg.page.id, url=seg.page.url, site=site, text=document.to_text(doc.nodes), method=method,
                      template=template, coverage=coverage, kept=tuple(np.flatnonzero(keep).tolist()),
                      boilerplate_chars=boilerplate, title=doc.title, document=doc)
