"""A layout cluster's segmented pages -> Template (static and dynamic boilerplate, content region).

The steps, in order:
1. static blocks: (tag path, text) hashes on at least ``static_support`` of the pages;
2. their consensus order: each page's static blocks aligned by LCS against a reference page, positions that
   enough pages match become drop rules (the alignment is what tells a menu item from the same words in text);
3. dynamic boilerplate: tag paths present on most pages whose text varies but stays short or link-heavy
   (dates, bylines, related-link lists, share bars, counters) become shape drop rules;
4. the content region: the element that holds most of what is left on most pages;
5. repeated content: a static or shape rule whose blocks sit inside the page's content (the trusted content region,
   <main>, <article>, [role=main]) and do not look like chrome (keep_repeated_content) is not kept: reference
   sites repeat option tables, caution boxes, section headings and inherited-member lists on every page.
"""

from __future__ import annotations

import functools
from collections import Counter, defaultdict
from collections.abc import Iterator, Sequence
from datetime import datetime, timezone

import re

import numpy as np
from lxml import etree

from . import features, metadata, native
from .align import lcs_length, lcs_pairs
from .blocks import declares_main, fill_xpaths, path_mask
from .parse import compile_xpath
from .config import BLOCK_TAGS as _BLOCK_TAGS
from .config import RELATED_MAX_SHARE, LearnSettings
from .datatypes import Block, Rule, RuleAction, Segmented, Template
from .headline import find_headline
from .shingles import ShingleSettings, containment_of_sets, shingle_hashes, sorted_set

COMMENT_NAME = re.compile(
    r"(?i)comments?|comment-?list|comments?-(?:area|section|wrap|wrapper|container|block|box|thread|holder)"
    r"|comment-(?:body|content|text|item)|respond|disqus_thread|dsq-content|replies|reader-?comments"
    r"|commentary-list|user-?comments")
RELATED_NAME = re.compile(
    r"(?i)(?:most-?)?popular(?:[-_][a-z]+)*|related(?:[-_][a-z]+)*|recommended(?:[-_][a-z]+)*|trending(?:[-_][a-z]+)*"
    r"|outbrain\w*|taboola\w*|more-?stories|also-?like")


def related_size_test(share: float) -> str:
    """The XPath test a related-box rule ends with: the box holds less than ``share`` of the page's text (the
    template's related_max_share, written into the rule)."""
    return f"string-length(normalize-space(.)) < {share} * string-length(normalize-space(/html/body))"


RELATED_SIZE_TEST = related_size_test(RELATED_MAX_SHARE)  # config's: the form extraction evaluates without XPath
_SIZE_LIMIT = etree.XPath(f"{RELATED_MAX_SHARE} * string-length(normalize-space(/html/body))")
_SHARE_LIMIT = etree.XPath("$share * string-length(normalize-space(/html/body))")  # another template's share
_SIZE = etree.XPath("string-length(normalize-space(.))")
_NAMED = etree.XPath("//body//*[@id or @class][not(self::body)]")
# A positional path whose every step is an element name XPath can spell: markup cut inside a script makes libxml2
# name elements "j.length;i++)..." or "i<j", which spell no step (an XPath that does not compile, or a comparison)
_ELEMENT_PATH = re.compile(r"(?:/[^\W\d][\w.-]*(?:\[\d+\])?)+")
NEAR_COPY_SHINGLES = ShingleSettings(kind="word", n=3, hash_bits=64)  # what distinct_pages compares (no collisions)
SHORT_LABEL = "short label"  # chrome_shape's word for a short block that titles nothing ...
LINKS = "links"  # ... and for a list of links
_LIST_ENTRY = frozenset({"li", "ul", "ol", "menu"})  # a block that is one of these or in one: a list's entry



def learn_template(pages: Sequence[Segmented], *, site: str, version: int = 1, layout: int = 0,
                   settings: LearnSettings = LearnSettings(), reason: str = "learned") -> Template:
    """Learn a site layout's template from its pages (at least settings.min_template_pages of them)."""
    page_count = len(pages)
    for seg in pages:
        fill_xpaths(seg.blocks)  # linear in the blocks: the XPaths are read for every block below
    every = pages
    pages = distinct_pages(pages, settings)  # near-copies count once toward what looks like boilerplate
    hashes = static_hashes(pages, settings)
    reference, support = align_static(pages, hashes, settings)
    static = [(_static_rule(block, share), block) for block, share in zip(reference, support)
              if share >= settings.static_support]  # each static rule with the reference block it was learned from
    rules = [rule for rule, _ in static]
    dropped = [_dropped_mask(seg, hashes) for seg in pages]
    headlines = [find_headline(seg) for seg in pages]
    rules += dynamic_rules(pages, dropped, headlines, settings)
    region = content_region(pages, dropped, headlines, rules, settings)
    rules = keep_repeated_content(pages, rules, static, region, dropped, settings)
    if region is not None:
        rules.append(region)
    rules += container_rules(pages, headlines, settings, dropped)
    rules += metadata_rules(every, settings)  # every page: a copy repeats its original's values, which must vary
    return Template(site=site, version=version, rules=tuple(rules), page_count=page_count,
                    learned_at=datetime.now(timezone.utc).isoformat(timespec="seconds"), layout=layout,
                    reason=reason, settings=settings)


def pages_once(pages: Sequence[Segmented]) -> list[Segmented]:
    """The pages less those whose URL an earlier page has: one page fetched twice (a recrawl kept with the first
    crawl) is one page of evidence, whatever changed between the fetches (a comment, a counter). Copies under other
    URLs are left to distinct_pages, whose tests read a page's own text; but a page fetched twice and a copy of it
    are most of a small cluster, so their article is on most pages and is no page's own text: counted once here
    first, the article stays theirs."""
    seen: set[str] = set()
    out = []
    for seg in pages:
        url = seg.page.url
        if url not in seen:
            seen.add(url)
            out.append(seg)
    return out


def distinct_pages(pages: Sequence[Segmented], settings: LearnSettings = LearnSettings()) -> list[Segmented]:
    """The pages less near-copies: a page whose own text (the word 3-grams of its long blocks, or runs of one element's
    lines: settings.near_copy_lines; less the blocks and the 3-grams most pages share) is mostly (settings.near_copy of
    the smaller set) a kept page's own text, or the other way round, is left out, when the smaller text has at least
    settings.near_copy_size of the larger's 3-grams.
    So is a page whose own prose (the same, less blocks mostly links: settings.near_copy_links) shares at least
    settings.near_copy_shared of the smaller with a kept page's, when what the two alone share (no third page of the
    cluster has it) is settings.near_copy_lone of itself and what one of them has alone (near_copy unless the two
    alone have a long paragraph word for word: entries of a series share phrases, a copy paragraphs).

    Two copies of one article (a syndicated story, a page under two URLs, a print version, a recrawl with a few
    words changed) would otherwise make the article's text look like boilerplate the site repeats. Shingles, not
    block hashes: one replaced word changes its paragraph's hash, and a copy with a new sidebar or a few words
    changed shares few whole blocks with the original. The second test is for small clusters, where what most pages
    share leaves out little: a page's lists of other stories (which a copy crawled another day shows otherwise), its
    footer or its sign-up box, which one or two other pages show, stay in its own text, and a copy whose boilerplate
    is rewritten has new text there; text other pages show is the site's, not the article's, and does not count
    against the pair.
    """
    longs = [{key: (text, links <= settings.near_copy_links * len(text))
              for key, text, links in _text_units(seg, lines=settings.near_copy_lines)
              if len(text) >= settings.near_copy_chars} for seg in pages]
    need = max(settings.near_copy_common_pages, len(pages) / 2)
    held = Counter(h for blocks in longs for h in blocks)
    common = {h for h, n in held.items() if n >= need}
    # long blocks most pages share are the site's, not the article's; so are the 3-grams most pages' own texts
    # share (the prose of generated pages that differ by a name)
    owns = _own_sets([[text for h, (text, _) in blocks.items() if h not in common] for blocks in longs], need)
    if settings.near_copy_shared < 1.0:  # (at 1.0 the second test passes only what the first does)
        prose = _own_sets([[text for h, (text, few_links) in blocks.items() if h not in common and few_links]
                           for blocks in longs], need)
        values, counts = np.unique(np.concatenate(prose), return_counts=True) if prose else (None, None)
        pages_with = _PagesWith(values, counts)
        lone = [int(np.count_nonzero(pages_with(own) == 1)) for own in prose]
    else:
        prose, lone, pages_with = [np.empty(0, np.uint64)] * len(pages), [0] * len(pages), None
    # the long prose blocks (word for word) that a page and one other page alone have
    pair_blocks = [{h for h, (_, few_links) in blocks.items() if few_links and held[h] == 2} for blocks in longs]
    kept: list[tuple[np.ndarray, np.ndarray, int, set]] = []
    out: list[Segmented] = []
    for seg, own, own_prose, own_lone, own_pair in zip(pages, owns, prose, lone, pair_blocks):
        if len(own) and any(_near_copy(own, other, settings) or _near_copy_prose(
                own_prose, own_lone, other_prose, other_lone, pages_with, settings,
                verbatim=not own_pair.isdisjoint(other_pair))
                            for other, other_prose, other_lone, other_pair in kept):
            continue
        out.append(seg)
        kept.append((own, own_prose, own_lone, own_pair))
    return out


def _text_units(seg: Segmented, *, lines: bool = True) -> Iterator[tuple[int, str, int]]:
    """A page's texts as distinct_pages reads them: (key, text, link characters) per run of consecutive blocks of
    one element (the lines of a poem, an address or a list written with <br> are one text, as a paragraph is),
    keyed by the block's hash, or by the run's hashes together; its lines joined by newlines. Without ``lines``
    (settings.near_copy_lines off), block by block."""
    blocks = seg.blocks
    start = 0
    while start < len(blocks):
        end = start + 1
        element = blocks[start].element if lines else None
        while end < len(blocks) and element is not None and blocks[end].element is element:
            end += 1
        if end == start + 1:
            block = blocks[start]
            yield block.hash, block.text, block.link_chars
        else:
            run = blocks[start:end]
            yield (hash(tuple(b.hash for b in run)), "\n".join(b.text for b in run),
                   sum(b.link_chars for b in run))
        start = end


class _PagesWith:
    """How many pages' sets hold each of some shingles (the cluster's sorted distinct shingles and their counts)."""

    def __init__(self, values: np.ndarray | None, counts: np.ndarray | None):
        self.values = values if values is not None else np.empty(0, np.uint64)
        self.counts = counts if counts is not None else np.empty(0, np.int64)

    def __call__(self, shingles: np.ndarray) -> np.ndarray:
        return self.counts[np.searchsorted(self.values, shingles)]  # (every shingle asked for is among the values)


def _own_sets(texts: list[list[str]], need: float) -> list[np.ndarray]:
    """Each page's word 3-gram set of these texts, less the 3-grams ``need`` of the pages have."""
    shingles = shingle_hashes(["\n".join(t) for t in texts], NEAR_COPY_SHINGLES)
    owns = [sorted_set(shingles.of(i)) for i in range(len(texts))]
    values, counts = np.unique(np.concatenate(owns), return_counts=True) if owns else (None, None)
    if values is not None and (counts >= need).any():
        shared = values[counts >= need]
        owns = [own[~np.isin(own, shared, assume_unique=True)] for own in owns]
    return owns


def _near_copy(a: np.ndarray, b: np.ndarray, settings: LearnSettings) -> bool:
    """Whether two pages' own-text shingle sets (sorted) are one article's: the smaller mostly (near_copy) inside
    the larger, and not a small part of it (at least near_copy_size of it)."""
    small, large = sorted((len(a), len(b)))
    return bool(small) and small >= settings.near_copy_size * large and containment_of_sets(
        a, b) >= settings.near_copy


def _near_copy_prose(a: np.ndarray, a_lone: int, b: np.ndarray, b_lone: int, pages_with: _PagesWith | None,
                     settings: LearnSettings, *, verbatim: bool = False) -> bool:
    """Whether two pages' own prose (sorted shingle sets; ``a_lone``, ``b_lone``: how many of each no other page of
    the cluster has) is one article's: the smaller at least near_copy_size of the larger, and the text the two alone
    have (no other page of the cluster) near_copy_shared of the smaller, and near_copy_lone (``verbatim``: the two
    alone have a long paragraph word for word; else near_copy) of itself and what one of the two has alone. Text
    that other pages show too (the site's, on too few pages to leave the own texts) counts neither for nor against
    the pair."""
    small, large = sorted((a, b), key=len)
    if pages_with is None or not len(small) or len(small) < settings.near_copy_size * len(large):
        return False
    if containment_of_sets(small, large) < settings.near_copy_shared:  # (what they share, with the site's: a bound)
        return False
    both = np.intersect1d(small, large, assume_unique=True)
    alone = int(np.count_nonzero(pages_with(both) == 2))
    share = settings.near_copy_lone if verbatim else settings.near_copy
    return alone >= settings.near_copy_shared * len(small) and alone >= share * (alone + min(a_lone, b_lone))


def static_hashes(pages: Sequence[Segmented], settings: LearnSettings) -> set[int]:
    """Hashes present on enough pages to be boilerplate."""
    df = Counter()
    for seg in pages:
        df.update(set(seg.vector.tolist()))
    need = max(settings.min_static_pages, settings.static_support * len(pages))
    return {h for h, n in df.items() if n >= need}


def align_static(pages: Sequence[Segmented], static: set[int],
                 settings: LearnSettings = LearnSettings()) -> tuple[list[Block], list[float]]:
    """The reference page's static blocks and, for each, the share of pages whose LCS matches it."""
    sequences = [[b for b in seg.blocks if b.hash in static] for seg in pages]
    hashes = [[b.hash for b in seq] for seq in sequences]
    candidates = sorted(range(len(pages)), key=lambda i: -len(hashes[i]))[:settings.reference_candidates]
    ref = max(candidates, key=lambda i: (sum(lcs_length(hashes[i], h) for h in hashes), -i)) if candidates else 0
    matched = np.zeros(len(hashes[ref]) if hashes else 0)
    for h in hashes:
        for i, _ in lcs_pairs(hashes[ref], h):
            matched[i] += 1
    return (sequences[ref] if sequences else []), (matched / max(len(pages), 1)).tolist()


def _static_rule(block: Block, support: float) -> Rule:
    return Rule(xpath=block.xpath, action=RuleAction.DROP, support=round(support, 4), tag_path=block.tag_path,
                hash=block.hash, sample=block.text[:120])


def _dropped_mask(seg: Segmented, static: set[int]) -> np.ndarray:
    return np.isin(seg.vector, np.fromiter(static, dtype=np.uint32, count=len(static)))


def dynamic_rules(pages: Sequence[Segmented], dropped: Sequence[np.ndarray], headlines: Sequence[int | None],
                  settings: LearnSettings) -> list[Rule]:
    """Tag paths on most pages whose varying text is short or mostly links: dynamic boilerplate."""
    by_shape: dict[str, list[Block]] = defaultdict(list)
    pages_with: Counter = Counter()
    headline_paths: Counter = Counter()  # tag paths of the pages' headlines
    for seg, mask, headline in zip(pages, dropped, headlines):
        if headline is not None:
            headline_paths[seg.blocks[headline].tag_path] += 1
        seen = set()
        for block, gone in zip(seg.blocks, mask):
            if not gone:
                by_shape[block.tag_path].append(block)
                seen.add(block.tag_path)
        pages_with.update(seen)
    rules = []
    need = max(settings.min_static_pages, settings.shape_support * len(pages))
    for tag_path, blocks in sorted(by_shape.items()):
        if pages_with[tag_path] < need or headline_paths[tag_path] >= need:
            continue  # too rare, or where the site puts its headlines (a permalink <h3><a> is one)
        chars = sum(len(b.text) for b in blocks)
        # a block inside a link (<a><article><h2>...) is link text all through
        link_share = 1.0 if _in_link(tag_path) else sum(b.link_chars for b in blocks) / max(chars, 1)
        short = float(np.median([len(b.text) for b in blocks])) <= settings.shape_max_chars
        per_page = len(blocks) / pages_with[tag_path]
        if blocks[0].tag in settings.heading_tags and not (link_share > settings.shape_max_link_density
                                                  and per_page >= settings.linked_headings_per_page):
            continue  # a page's headline, unless several linked headings a page: a list of other articles
        aside = any(p in tag_path + "/" for p in settings.nav_paths)
        brief = short and per_page <= 2 and max(len(b.text) for b in blocks) < 2 * settings.shape_max_chars
        if link_share > settings.shape_max_link_density or aside or brief:
            rules.append(Rule(xpath="/" + tag_path.lstrip("/"), action=RuleAction.DROP_SHAPE,
                              support=round(pages_with[tag_path] / len(pages), 4), tag_path=tag_path,
                              sample=blocks[0].text[:120]))
    return rules


def container_rules(pages: Sequence[Segmented], headlines: Sequence[int | None],
                    settings: LearnSettings, dropped: Sequence[np.ndarray] | None = None) -> list[Rule]:
    """Containers named like reader comments or like lists of other articles (by id or class) on enough pages:
    XPath drop rules.

    Comments and "most popular" / "related" boxes vary from page to page like the article itself, so neither
    repetition nor shape finds them; the site's own markup names them. A container that holds the page's
    headline is never taken for either; a related-articles container must also hold less than
    related_max_share of the page's text (the rule's XPath says so, so it holds at extraction too). A
    related-named container of mostly text, not links, between the page's own text in the element it declares its
    main content (``dropped``: the pages' static blocks; related_text) is the page's: a reference's related
    packages with their descriptions.
    """
    found: Counter = Counter()
    samples: dict[str, str] = {}
    for page, (seg, headline) in enumerate(zip(pages, headlines)):
        keep_out = seg.blocks[headline].element if headline is not None else None
        containers = _named_containers(seg.root, COMMENT_NAME, keep_out, anchors=True,
                                       headings=settings.heading_tags if settings.comment_headings else frozenset(),
                                       paragraph=lambda e, s=seg, h=headline: _paragraph_between(s, h, e, settings))
        related = _named_containers(seg.root, RELATED_NAME, keep_out, share=settings.related_max_share)
        if related and dropped is not None:
            related = [(xpath, e) for xpath, e in related if not related_text(seg, e, dropped[page], settings)]
        containers += related
        for xpath, element in containers:
            samples.setdefault(xpath, " ".join("".join(element.itertext()).split())[:120])
        found.update({xpath for xpath, _ in containers})
    need = max(settings.min_static_pages, settings.comment_support * len(pages))
    return [Rule(xpath=xpath, action=RuleAction.DROP_XPATH, support=round(n / len(pages), 4), sample=samples[xpath])
            for xpath, n in sorted(found.items()) if n >= need]


def related_text(seg: Segmented, element, dropped: np.ndarray, settings: LearnSettings = LearnSettings()) -> bool:
    """Whether a related-named element holds text of the page's rather than links to other pages: its blocks are
    mostly (more than own_content_links) not link text, it sits in the element the page declares its main content
    (not one that wraps the page: wraps_page) and the page's own text of that element (interleaved_blocks) stands
    both before and after it."""
    inside = _owned_by(seg, element)
    chars = seg.block_chars()[inside].sum()
    if not chars or seg.block_links()[inside].sum() > (1 - settings.own_content_links) * chars:
        return False
    main = element.getparent()
    while main is not None and not declares_main(main):
        main = main.getparent()
    if main is None:
        return False
    among = interleaved_blocks(seg, dropped | inside, [main], settings)
    return bool(among[inside].all())


def _named_containers(root, name: re.Pattern, keep_out=None, *, anchors: bool = False,
                      share: float = RELATED_MAX_SHARE, headings: frozenset = frozenset(),
                      paragraph=None) -> list[tuple[str, object]]:
    """(generalized XPath, element) of the outermost elements whose id or a class ``name`` matches, less those
    holding ``keep_out`` (the headline) and, unless ``anchors``, those holding ``share`` of the page's
    text: inside such an element, the inner containers are looked for.

    With ``anchors``, an empty element with such an id (<a id="comments"></a> of old blog engines) stands for
    what follows it, when it comes after the headline; so does a heading (a tag of ``headings``) with such an id
    after the headline and the page's text (``paragraph(heading)``: a paragraph stands between them; not a comment
    count under the headline), besides being dropped itself: <h2 id="comments">Comments</h2> or "7 Responses to
    ..." over comments that are its siblings, with no container of their own."""
    size_test = "" if anchors else f"[{related_size_test(share)}]"
    limit = None
    out = []
    for element in _NAMED(root):
        ident = element.get("id") or ""
        token = None
        if not (ident and name.fullmatch(ident) and not ident[-1:].isdigit()):
            ident = ""
            token = next((t for t in (element.get("class") or "").split() if name.fullmatch(t)), None)
            if token is None:
                continue
        if any(contains(outer, element) for _, outer in out) or not _ELEMENT_PATH.fullmatch("/" + element.tag):
            continue
        if keep_out is not None and contains(element, keep_out):
            continue
        if size_test:
            limit = size_limit(root, share) if limit is None else limit
            if not fits(element, limit):
                continue  # too large for a box of links: look inside
        if token is not None:
            out.append((f"//{element.tag}[contains(concat(' ', normalize-space(@class), ' '), ' {token} ')]"
                        f"{size_test}", element))
        elif len(element) or (element.text or "").strip() or not anchors:
            out.append((f"//*[@id='{ident}']{size_test}", element))
            if element.tag in headings and keep_out is not None and paragraph is not None and paragraph(element):
                out.append((_anchor_rule(ident), element))
        elif keep_out is None or _order(keep_out) < _order(element):
            out.append((_anchor_rule(ident), element))
    return out


def _paragraph_between(seg: Segmented, headline: int | None, element, settings: LearnSettings) -> bool:
    """Whether a block of settings.paragraph_chars or more (mostly not links) stands between the page's headline
    and ``element`` (after the headline, before the element in document order)."""
    if headline is None:
        return False
    order = {id(e): i for i, e in enumerate(seg.root.iter())}
    start, end = order.get(id(seg.blocks[headline].element), -1), order.get(id(element), -1)
    return any(start < order.get(id(b.element), -1) < end and len(b.text) >= settings.paragraph_chars
               and 2 * b.link_chars < len(b.text) for b in seg.blocks[headline + 1:])


def _anchor_rule(ident: str) -> str:
    """The rule for what follows an anchor with that id: the elements after the nearest of it and its ancestors
    that has an element after it (extract.py evaluates this form in the compiled walk)."""
    return f"//*[@id='{ident}']/ancestor-or-self::*[following-sibling::*][1]/following-sibling::*"


def size_limit(root, share: float = RELATED_MAX_SHARE) -> float:
    """The right side of related_size_test(share) on this page, computed once (as the rule's XPath does: in C
    where templater._walk is built, by libxml2 otherwise)."""
    if native.walk is not None:
        chars = native.walk.normalized_length(root, True)
        if chars is not None:
            return share * float(chars)
    return float(_SIZE_LIMIT(root) if share == RELATED_MAX_SHARE else _SHARE_LIMIT(root, share=share))


def fits(element, limit: float) -> bool:
    """RELATED_SIZE_TEST for the element, given the page's size_limit: the same numbers, compared the same way."""
    chars = native.walk.normalized_length(element) if native.walk is not None else None
    return float(_SIZE(element) if chars is None else chars) < limit


def fitting(root, elements: list, share: float = RELATED_MAX_SHARE) -> list:
    """``[e for e in elements if fits(e, size_limit(root, share))]``, reading no more of the page's body than the
    test needs where templater._walk is built: once ``share`` times the body's length counted so far is above the
    largest element's, every element fits (the whole length is no smaller)."""
    if native.walk is not None and elements:
        sizes = [native.walk.normalized_length(e) for e in elements]
        if None not in sizes:
            largest = float(max(sizes))
            stop = int(largest / share) + 1
            chars = native.walk.normalized_length(root, True, stop)
            if chars is not None and chars <= stop:  # the whole body counted
                limit = share * float(chars)
                return [e for e, size in zip(elements, sizes) if float(size) < limit]
            if chars is not None and share * float(chars) > largest:  # counted past stop: a lower bound
                return list(elements)
    limit = size_limit(root, share)
    return [e for e in elements if fits(e, limit)]


def _order(element) -> int:
    """The element's position in document order."""
    return int(element.xpath("count(preceding::*) + count(ancestor::*)"))


def contains(outer, inner) -> bool:
    """Whether element outer is inner or one of its ancestors."""
    node = inner
    while node is not None:
        if node is outer:
            return True
        node = node.getparent()
    return False


def content_region(pages: Sequence[Segmented], dropped: Sequence[np.ndarray], headlines: Sequence[int | None],
                   rules: Sequence[Rule], settings: LearnSettings = LearnSettings()) -> Rule | None:
    """The element (by positional XPath) that holds most of the remaining text on most pages, if any."""
    shapes = {r.tag_path for r in rules if r.action == RuleAction.DROP_SHAPE}
    votes: Counter = Counter()
    samples: dict[str, str] = {}
    for seg, mask, headline in zip(pages, dropped, headlines):
        kept = [b for b, gone in zip(seg.blocks, mask) if not gone and b.tag_path not in shapes]
        region = _deepest_holder(kept, seg.blocks[headline].xpath if headline is not None else None,
                                 settings.region_text_share)
        if region and _ELEMENT_PATH.fullmatch(region):
            votes[region] += 1
            samples.setdefault(region, next((b.text for b in kept if b.xpath.startswith(region)), ""))
    if not votes:
        return None
    xpath, count = votes.most_common(1)[0]
    if count < settings.region_page_share * len(pages):
        return None
    return Rule(xpath=xpath, action=RuleAction.CONTENT, support=round(count / len(pages), 4),
                sample=samples[xpath][:120])


def _deepest_holder(blocks: Sequence[Block], headline: str | None, share: float) -> str | None:
    """Deepest ancestor path holding ``share`` of the blocks' non-link text (and the headline)."""
    weights: Counter = Counter()
    total = 0
    for b in blocks:
        w = len(b.text) - b.link_chars
        if w <= 0:
            continue
        total += w
        parts = b.xpath.split("/")
        for depth in range(2, len(parts)):  # ancestors only: a region holds blocks
            weights["/".join(parts[:depth])] += w
    if not total:
        return None
    holders = [p for p, w in weights.items() if w >= share * total
               and (headline is None or headline.startswith(p + "/"))]
    return max(holders, key=lambda p: p.count("/")) if holders else None


def metadata_rules(pages: Sequence[Segmented], settings: LearnSettings) -> list[Rule]:
    """Where the site's pages show their byline and their publication date: "meta-author" and "meta-date" rules
    (an XPath to the element, read at extraction when a page declares no author or date of its own).

    Learned from the pages whose declared metadata (JSON-LD, og:, <meta>) agrees with a block's text; on a site
    whose pages declare nothing, from visible evidence alone: a byline ("By ...") or a date line near the
    headline at the same place on most pages, with values that vary from page to page."""
    declared = [metadata.declared_metadata(seg.root, seg.page.html, seg.page.url, elements=seg.declared)
                for seg in pages]
    rules = []
    for action, key in ((metadata.META_AUTHOR, "author"), (metadata.META_DATE, "date")):
        rule = _declared_meta_rule(pages, [d[key] for d in declared], action, key, settings)
        rule = rule or _visible_meta_rule(pages, action, key, settings)
        if rule is not None:
            rules.append(rule)
    return rules


def _declared_meta_rule(pages: Sequence[Segmented], values: Sequence[str | None], action: str, key: str,
                        settings: LearnSettings) -> Rule | None:
    """The candidate XPath that reads the declared value back on most declaring pages, if one does."""
    taught = [(seg, value) for seg, value in zip(pages, values) if value]
    if len(taught) < settings.min_static_pages:
        return None
    candidates: Counter = Counter()
    for seg, value in taught:
        found = set()
        for block in seg.blocks:
            if block.element is not None and _agrees(_block_value(block, key), value, key):
                found.update(meta_xpaths(block))
        found.update(metadata.head_meta_xpaths(seg.root, key, value))
        candidates.update(found)
    need = max(settings.min_static_pages, settings.meta_support * len(taught))
    best, shown = None, {}
    for xpath, _ in sorted(candidates.items(), key=_candidate_order):
        if candidates[xpath] < need or (best is not None and candidates[xpath] < best[0]):
            break
        read = [(metadata.learned_value(seg, xpath, key, shown), value) for seg, value in taught]
        hits = sum(_agrees(got, value, key) for got, value in read)
        found = sum(got is not None for got, _ in read)
        if hits >= need and hits >= settings.meta_precision * found and (best is None or hits > best[0]):
            best = (hits, xpath, next(got for got, value in read if _agrees(got, value, key)))
    if best is None:
        return None
    return Rule(xpath=best[1], action=action, support=round(best[0] / len(taught), 4), sample=best[2][:120])


def _visible_meta_rule(pages: Sequence[Segmented], action: str, key: str, settings: LearnSettings) -> Rule | None:
    """The candidate XPath that finds a byline or a date line near the headline on most pages, if one does."""
    candidates: Counter = Counter()
    for seg in pages:
        found = set()
        for block in metadata.nearby_blocks(seg):
            if block.element is not None and _visible_value(block, key):
                found.update(meta_xpaths(block))
        candidates.update(found)
    need = max(settings.min_static_pages, settings.meta_visible_support * len(pages))
    for xpath, count in sorted(candidates.items(), key=_candidate_order):
        if count < need:
            break
        read = [metadata.rule_value(seg.root, xpath, key) for seg in pages]
        values = [v for v in read if v]
        if len(values) >= need and len(set(values)) >= min(settings.meta_min_values, len(values)):
            return Rule(xpath=xpath, action=action, support=round(len(values) / len(pages), 4),
                        sample=values[0][:120])
    return None


def _candidate_order(item: tuple[str, int]) -> tuple:
    """Most pages first; then by class, by id, by tag path (names outlive a layout's nesting); then shortest."""
    xpath, count = item
    return -count, 2 if xpath.startswith("/html") else 1 if xpath.startswith("//*[@id") else 0, len(xpath), xpath


def meta_xpaths(block: Block) -> list[str]:
    """Generalized XPaths of a block's element: by each class token of it and of the inline elements inside it
    (a <span class="author"> in a <p>), by its id, and by its tag path."""
    element = block.element
    out = [f"//{e.tag}[contains(concat(' ', normalize-space(@class), ' '), ' {token} ')]"
           for e in element.iter() if isinstance(e.tag, str) and (e is element or e.tag not in _BLOCK_TAGS)
           for token in (e.get("class") or "").split() if "'" not in token and token.isprintable()]
    ident = element.get("id") or ""
    if ident and "'" not in ident and not any(c.isdigit() for c in ident):
        out.append(f"//*[@id='{ident}']")
    out.append("/" + block.tag_path.lstrip("/"))
    return out


def _block_value(block: Block, key: str) -> str | None:
    return metadata.element_date(block.element) if key == "date" else metadata.element_author(block.element)


def _visible_value(block: Block, key: str) -> str | None:
    """A block's date (a short date line) or author (a byline, or an element named like one)."""
    if key == "date":
        return _block_value(block, key) if len(block.text) <= metadata.MAX_DATE_TEXT_CHARS else None
    if len(block.text) > metadata.MAX_BYLINE_CHARS or not metadata.looks_like_byline(block):
        return None
    return _block_value(block, key)


def _agrees(got: str | None, value: str | None, key: str) -> bool:
    if not got or not value:
        return False
    return got[:10] == value[:10] if key == "date" else metadata.same_author(got, value)


def keep_repeated_content(pages: Sequence[Segmented], rules: list[Rule], static: Sequence[tuple[Rule, Block]],
                          region: Rule | None, dropped: Sequence[np.ndarray], settings: LearnSettings) -> list[Rule]:
    """The static and shape rules less those that would drop repeated content: blocks inside the page's content
    (content_containers, content_ancestry) whose shape is not chrome's (looks_like_content) and that are not in a
    row of links (link_runs). A static rule is judged on the block it was learned from; a shape rule on its
    blocks of every page (most of them must be content)."""
    learned_from = {id(rule): block for rule, block in static}
    roots = {id(seg.root): i for i, seg in enumerate(pages)}
    runs = [link_runs(seg, settings) for seg in pages]
    rows = [varying_rows(seg, mask, settings) for seg, mask in zip(pages, dropped)]
    containers = [content_containers(seg, mask, region, run, settings, row)
                  for seg, mask, run, row in zip(pages, dropped, runs, rows)]
    among = [interleaved_blocks(seg, mask, container, settings)
             for seg, mask, container in zip(pages, dropped, containers)]

    def content(block: Block, page: int) -> bool:
        return not repeated_chrome(block, content_ancestry(block.element, containers[page]), bool(runs[page][
            block.index]), rows[page], settings, interleaved=bool(among[page][block.index]))

    votes: dict[str, list[bool]] = defaultdict(list)
    shape_paths = {r.tag_path for r in rules if r.action == RuleAction.DROP_SHAPE}
    for page, (seg, mask) in enumerate(zip(pages, dropped)):
        if shape_paths and containers[page]:
            for block, gone in zip(seg.blocks, mask):
                if not gone and block.tag_path in shape_paths:
                    votes[block.tag_path].append(content(block, page))
    kept = []
    for rule in rules:
        block = learned_from.get(id(rule))
        if block is not None and content(block, roots[id(block.element.getroottree().getroot())]):
            continue
        if rule.action == RuleAction.DROP_SHAPE and sum(votes[rule.tag_path]) > len(votes[rule.tag_path]) / 2:
            continue
        kept.append(rule)
    return kept


def repeated_chrome(block: Block, ancestry: list[str] | None, run: bool, rows: set,
                    settings: LearnSettings = LearnSettings(), *, interleaved: bool = False) -> str:
    """Why a repeated block is chrome, in words ('' when it is content): in a row of links (link_runs), or
    chrome_shape's reason, but for a short label among the page's own varying blocks or the one line of a section
    (varying_rows), and for a short label or a lone line of links between the page's own text in the element it
    declares its main content (``interleaved``: interleaved_blocks), where it is no list's entry, holds no image (a
    picture's credit) and has no class or id of chrome's (named_chrome: a share bar)."""
    shape = chrome_shape(block, ancestry, settings)
    if interleaved and not run and shape in (SHORT_LABEL, LINKS) and _LIST_ENTRY.isdisjoint((ancestry or ())[:2]) \
            and not _holds_image(block) and not named_chrome(block.element, settings):
        return ""  # a grid's header cell, the root of a class's inheritance tree, its inherited members' line
    if shape and shape != SHORT_LABEL:
        return shape
    if run:
        return LINKS
    if shape and block.element is not None and (block.element.getparent(), block.element.tag) in rows:
        return ""  # a table's header cell or a section's one line, not a lone label
    return shape


def interleaved_blocks(seg: Segmented, dropped: np.ndarray, containers: Sequence,
                       settings: LearnSettings = LearnSettings()) -> np.ndarray:
    """Blocks of the element the page declares its main content (<main>, [role=main]; among its content
    ``containers``) with the page's own text (a block not ``dropped``, with text, at most own_content_links link
    text) of that element both before and after them: what the site repeats between a reference page's own
    blocks (a grid's header row over its own rows, a summary table's caption, the line of inherited members
    between a summary and the details) sits inside the page's text, not at its edges, where a news page's
    boxes of other stories, share bars and sign-up boxes stand."""
    out = np.zeros(len(seg.blocks), dtype=bool)
    declared = [e for e in containers if declares_main(e) and not wraps_page(e, settings)]
    if not declared:
        return out
    chars = seg.block_chars()
    own = ~dropped & (chars > 0) & (seg.block_links() <= settings.own_content_links * chars)
    for element in declared:
        inside = _owned_by(seg, element)
        mine = (own & inside).astype(np.int64)
        before = np.cumsum(mine) - mine
        out |= inside & (before > 0) & (before + mine < mine.sum())
    return out


def wraps_page(element, settings: LearnSettings = LearnSettings()) -> bool:
    """Whether a declared main element wraps the page rather than its text: right under <body> (at most
    wrapper_depth steps from the root) or holding the site's navigation or sidebars (<nav>, <aside>)."""
    depth = sum(1 for _ in element.iterancestors())
    return depth < settings.wrapper_depth or next(element.iter("nav", "aside"), None) is not None


def named_chrome(element, settings: LearnSettings = LearnSettings()) -> bool:
    """Whether the element or an ancestor below the declared main content (<main>, [role=main]) has a class or id
    word of region_chrome_groups (a share bar, a sign-up box, an advertisement, a related box: features.CLASS_GROUPS)."""
    bits = features.group_bits(settings.region_chrome_groups)
    node = element
    while node is not None and not declares_main(node):
        if features.class_bits(node) & bits:
            return True
        node = node.getparent()
    return False


def _holds_image(block: Block) -> bool:
    """Whether the block's element holds an image (the credit or caption beside a picture)."""
    return block.element is not None and next(block.element.iter("img", "picture", "svg"), None) is not None


def content_containers(seg: Segmented, dropped: np.ndarray, region: Rule | None, runs: np.ndarray,
                       settings: LearnSettings, rows: set | None = None) -> list:
    """The page's content containers: the learned region's element, <main>, <article> and [role=main], each
    where the static blocks inside it that look like chrome add up to at most region_chrome_share of the rest of its
    text (a container that holds the site's menus, sidebars or comment forms is a wrapper). In the element the page
    declares its main content (<main>, [role=main]: HTML keeps the site's navigation and sidebars out of it) short
    labels do not count: only lists of links and what sits under <nav>, <aside>, <header>, <footer> or <form>
    (near-identical interface pages repeat most of their text, "Modifier and Type" header cells among it; the
    blurbs of a news wrapper's sidebars are short labels)."""
    candidates = declared_content(seg.root, settings)
    if region is not None:
        candidates += [e for e in compile_xpath(region.xpath)(seg.root) if isinstance(e, etree._Element)][:1]
    chars = seg.block_chars()
    out = []
    for element in candidates:
        inside = _owned_by(seg, element)
        declared = declares_main(element)
        chrome = sum(chars[i] for i in np.flatnonzero(inside & dropped) if repeated_chrome(
            seg.blocks[i], content_ancestry(seg.blocks[i].element, [element]), bool(runs[i]), rows or set(),
            settings) not in (("", SHORT_LABEL) if declared else ("",)))
        kept = chars[inside & ~dropped].sum()
        if kept and chrome <= settings.region_chrome_share * kept:
            out.append(element)
    return out


def declared_content(root, settings: LearnSettings = LearnSettings()) -> list:
    """The elements the page declares its own content: those of content_tags (<main>, <article>) and
    [role=main], in document order."""
    return root.xpath(" | ".join([*(f"//{tag}" for tag in sorted(settings.content_tags)), "//*[@role='main']"]))


def content_ancestry(element, containers: Sequence) -> list[str] | None:
    """The tags from the element up to (not including) the nearest content container holding it, or None when
    none holds it."""
    ids = {id(c) for c in containers}
    tags = []
    node = element
    while node is not None:
        if id(node) in ids:
            return tags
        tags.append(node.tag if isinstance(node.tag, str) else "")
        node = node.getparent()
    return None


def looks_like_content(block: Block, ancestry: list[str] | None, settings: LearnSettings) -> bool:
    """Whether a repeated block is the page's content: inside a content container and not chrome-shaped
    (chrome_shape)."""
    return not chrome_shape(block, ancestry, settings)


def chrome_shape(block: Block, ancestry: list[str] | None, settings: LearnSettings = LearnSettings()) -> str:
    """Why a repeated block is chrome, in words ('' when it is content): outside every content container
    (ancestry None), under <nav>, <aside>, <header>, <footer> or <form> there, a list of links (a link-heavy
    block in a list, or a short one) or a short label (a short block other than a heading, term or table header,
    outside code, tables and definition lists)."""
    if ancestry is None:
        return "outside the page's content"
    position = sorted(settings.chrome_tags.intersection(ancestry))
    if position:
        return f"under <{position[0]}>"
    short = len(block.text) <= settings.shape_max_chars
    structure = not settings.structure_tags.isdisjoint(ancestry)
    if _link_share(block) > settings.shape_max_link_density:
        return "" if structure or not (short or not settings.list_tags.isdisjoint(ancestry)) else LINKS
    return "" if not short or structure or block.tag in settings.label_tags else SHORT_LABEL


def varying_rows(seg: Segmented, dropped: np.ndarray, settings: LearnSettings = LearnSettings()) -> set:
    """(parent, tag) of the elements whose children include at least row_cells blocks of the page's own (not
    static, with text) with that tag and none longer than twice shape_max_chars (a paragraph): a row or grid of
    short cells, where a repeated short label of the same tag is a header cell (a reference page's "Modifier and
    Type | Method | Description" over its method summary), not a label of the site's (an "Advertisement" line
    among an article's paragraphs, a "Posted at" line beside a headline); and those of a section's one block
    under its heading (section_bodies). The elements themselves, not their ids: lxml keeps one proxy per element
    while it is referenced, so they are what getparent() returns later."""
    cells: Counter = Counter()
    long_cells = set()
    for b, gone in zip(seg.blocks, dropped):
        if not gone and b.text.strip() and b.element is not None:
            parent = b.element.getparent()
            cells[parent, b.element.tag] += 1
            if len(b.text) > 2 * settings.shape_max_chars:
                long_cells.add(parent)
    return {(parent, tag) for (parent, tag), n in cells.items()
            if n >= settings.row_cells and parent not in long_cells} | section_bodies(seg, settings)


def section_bodies(seg: Segmented, settings: LearnSettings = LearnSettings()) -> set:
    """(parent, tag) of the blocks that are the whole text of a section under its heading: right after a heading
    (heading_tags) and the only other block of the deepest element holding both (a manual's "GIT" section whose one
    line is "Part of the git(1) suite"). Such a short line is what the heading titles, not a lone label."""
    out = set()
    elements = {id(b.element) for b in seg.blocks if b.element is not None}
    for before, block in zip(seg.blocks, seg.blocks[1:]):
        if before.tag not in settings.heading_tags or block.element is None or before.element is None:
            continue
        section = block.element.getparent()
        while section is not None and not contains(section, before.element):
            section = section.getparent()
        if section is not None and _holds_two(section, elements):
            out.add((block.element.getparent(), block.element.tag))
    return out


def _holds_two(element, blocks: set) -> bool:
    """Whether exactly two of the blocks' elements (by id) are the element or under it (stops at a third)."""
    count = 0
    for node in element.iter():
        count += id(node) in blocks
        if count > 2:
            return False
    return count == 2


def link_runs(seg: Segmented, settings: LearnSettings = LearnSettings()) -> np.ndarray:
    """Blocks in a row of at least link_run blocks whose text is more than shape_max_link_density link text:
    lists of links, whatever their markup."""
    share = seg.block_links() / np.maximum(seg.block_chars(), 1)  # _link_share of every block, as arrays (the same
    share[path_mask(seg, _in_link)] = 1.0  # divisions, done by numpy; the tag path tested once a distinct path)
    heavy = (share > settings.shape_max_link_density).view(np.uint8).tobytes()
    out = np.zeros(len(share), dtype=bool)
    for run in _runs(settings.link_run).finditer(heavy):  # each run of heavy blocks at least link_run long, whole
        out[run.start():run.end()] = True
    return out


def _in_link(tag_path: str) -> bool:
    return "/a/" in tag_path


@functools.lru_cache(maxsize=16)
def _runs(least: int) -> re.Pattern:
    """A pattern of a run of at least ``least`` 1 bytes, greedy: over a mask's bytes, its matches are the mask's
    maximal runs of True that long (a shorter run fails from each of its places; a longer one matches whole from
    its first)."""
    return re.compile(b"\x01{%d,}" % max(least, 0))


def _link_share(block: Block) -> float:
    """The share of the block's text that is link text (all of it for a block inside a link: <a><article><h2>)."""
    if _in_link(block.tag_path):
        return 1.0
    return block.link_chars / max(len(block.text), 1)


def _owned_by(seg: Segmented, element) -> np.ndarray:
    """Mask of the page's blocks at or under the element (in one C pass where templater._walk is built)."""
    if native.walk is not None:
        found = native.walk.inside(seg.blocks, [element])
        if found is not None:
            return np.frombuffer(found, dtype=bool).copy()
    members = set(element.iter())
    return np.fromiter((b.element in members for b in seg.blocks), dtype=bool, count=len(seg.blocks))
