"""The typed near-duplicate truth set: edited copies and hard negatives, built as HTML pages from the dev corpus.

Built at bench time from ``../shared/corpus`` (never copied into the repository: the pages are research-only).
Every page of the corpus is an original. The article of a page is located in its HTML through its gold text: a
text slot (an element's text or tail) is *content* when at least CONTENT_SHARE of its word bigrams are bigrams
of the gold text (slots of one or two words count when a neighbouring slot is content and their words are gold
words). Bases are originals with at least MIN_BASE_WORDS gold words whose content slots hold at least
MIN_COVERAGE of the gold words; each base is used once, by one edit or one negative. A page's *article* is its
content slots grouped by block element into paragraphs, less the paragraphs that repeat an earlier one word for
word (the page's headline again in its own lists of latest or most read stories, which the gold text matches too);
its *headline* is the first short paragraph set as a heading (h1-h6) before the first long one, else its first
paragraph when short.

Positive edit types (the copy goes under another URL of the same site, the page's own template around it):

    replace-1/2/3       that share of the article's words replaced by random words of the gold corpus, scattered
    cut-end-10/20/30    that share of the article's words cut from its end (whole text slots, then part of one);
                        a post's readers' comments, which some gold texts count, are not its article and stay
                        whole (``cut_slots``)
    cut-start-10/20/30  the same from its start (the headline goes first)
    reorder             the article's body paragraphs (sibling elements after the headline, byline and date; at
                        least REORDER_MIN_PARAGRAPHS) shuffled in place, each with its markup
    boilerplate         the headline (and <title>) rewritten, and half of the
                        page's boilerplate text slots (menus, related links, footers) rewritten
    syndicated          the story on another site: a page of another site (3+ pages) keeps its template and
                        boilerplate, its headline becomes a new one, its article's body (from its first long
                        paragraph on) is replaced by this one's paragraphs (as many p elements as the story has, where
                        the host's body began), and the story's last paragraph is replaced by another (at most
                        LAST_SHARE of the story); the base is a page of a site with 3+ pages too (two sites, two
                        templates)

A page built in another page's template (syndicated, follow-up, series) keeps the host's byline, date, menus,
sidebars and footer; the host's own text outside its article that no other page of its site has (comments, a
quoted press release, captions the gold left out) gets new words of the same length: the built page has text of
its own there, not the host's (``rewrite_own_text``).

Hard negatives (pairs that must NOT be reported):

    same-site           every pair of two originals of one site (same template, same menu), except pairs that
                        are duplicates in the corpus itself (byte-identical HTML, one URL, or gold texts with
                        word-5-gram containment of at least NATURAL_CONTAINMENT): those are true pairs, as are
                        pages of two sites whose gold texts have word-3-gram Jaccard of at least NATURAL_RESEMBLANCE
                        (one agency story, edited by each site)
    follow-up           a new page on the base's site (another page's template) telling a later story: new
                        sentences with FOLLOW_UP_SHARE of its words the base's background paragraphs
    series              SERIES_PAGES pages on one site, each a different body of new sentences between the same
                        series intro and outro (SERIES_SHARE of each page)

New text (headlines, replaced paragraphs, follow-up and series bodies) is made of sentences drawn at random from
gold texts of other sites, so no page shares more than a sentence with any original but its own.
"""

from __future__ import annotations

import functools
import gzip
import json
import re
import zlib
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import lxml.html
import numpy as np

from templater.shingles import normalize

MIN_BASE_WORDS = 100
MIN_COVERAGE = 0.8  # share of gold words the content slots must hold for a page to be a base
CONTENT_SHARE = 0.7
HEADLINE_WORDS = 20  # a first content paragraph this short is the headline
BOILERPLATE_SHARE = 0.5  # share of boilerplate slots rewritten by the "boilerplate" edit
LAST_SHARE = 0.15  # a syndicated story's replaced last paragraph is at most this share of its words
FOLLOW_UP_SHARE = 0.3
REORDER_MIN_PARAGRAPHS = 3  # a base for "paragraphs reordered" has at least this many body paragraphs to move
SERIES_PAGES = 3
SERIES_SHARE = 0.25
NATURAL_CONTAINMENT = 0.8
NATURAL_RESEMBLANCE = 0.5  # ... or, on two sites, gold texts whose word-3-gram Jaccard is at least this: one agency
# story that each site edited (chaos-2017's AP story on abcnews.go.com, chicagotribune.com and news.com.au: "Mr
# Trump", "politicians", "traveller" on the last cost it a third of its 5-grams)
NATURAL_POSTINGS = 50  # gold 5-grams of more texts than this (boilerplate in gold) do not propose pairs
BLOCKS = {"p", "div", "li", "td", "th", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote", "pre", "dd", "dt",
          "section", "article", "header", "footer", "table", "tr", "ul", "ol", "body", "figcaption", "caption"}
SKIP = {"script", "style", "noscript", "template"}

EDITS = ("replace-1", "replace-2", "replace-3", "cut-end-10", "cut-end-20", "cut-end-30", "cut-start-10",
         "cut-start-20", "cut-start-30", "reorder", "boilerplate", "syndicated")
NEGATIVES = ("follow-up", "series")
ORIGINAL_TIME = "2020-01-01T00:00:00Z"  # fetched_at of originals; copies come a month later
COPY_TIME = "2020-02-01T00:00:00Z"


@dataclass(slots=True)
class Original:
    id: str  # "<dataset>/<id>"
    url: str
    site: str
    html: str
    gold: str


@dataclass(slots=True)
class Page:
    """A page of the set: what `templater run` reads, and what it is."""

    id: str
    url: str
    html: str
    kind: str = "original"
    base: str | None = None  # the original it was made from (positives and follow-ups)
    site: str = ""
    half: int = 0  # held-out half of the base's site (0 or 1)
    group: str | None = None  # series name
    host: str | None = None  # the original whose page (template) it was built in (syndicated, follow-up, series)

    def record(self, fetched_at: str) -> dict:
        return {"id": self.id, "url": self.url, "html": self.html, "fetched_at": fetched_at}


@dataclass(slots=True)
class Slot:
    element: object
    attr: str  # "text" or "tail"
    words: list[str]
    block: object  # nearest block-level element holding the text


@dataclass(slots=True)
class Doc:
    """A parsed page with its text slots split into content and boilerplate."""

    tree: object
    slots: list[Slot]
    content: list[int]  # indexes into slots, document order
    boilerplate: list[int]
    coverage: float = 0.0
    paragraphs: list[list[int]] = field(default_factory=list)  # content slots grouped by block element

    def set(self, i: int, words: list[str]) -> None:
        slot = self.slots[i]
        slot.words = words
        text = " ".join(words)
        if slot.attr == "text":
            slot.element.text = (" " + text + " ") if text else ""
        else:
            slot.element.tail = (" " + text + " ") if text else ""

    def html(self) -> str:
        return lxml.html.tostring(self.tree, encoding="unicode")

    def content_words(self) -> int:
        return sum(len(self.slots[i].words) for i in self.content)


def site_half(site: str) -> int:
    return zlib.crc32(site.encode()) & 1


# --- reading and locating the article ------------------------------------------------------------------------

def load_originals(corpus: Path) -> list[Original]:
    out = []
    for path in sorted(corpus.glob("*/pages.jsonl.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as f:
            for line in f:
                r = json.loads(line)
                out.append(Original(f"{r['dataset']}/{r['id']}", r["url"], f"{r['dataset']}/{r.get('site', '')}",
                                    r["html"], r.get("gold") or ""))
    return out


def _block_of(element) -> object:
    node = element
    while node is not None and (not isinstance(node.tag, str) or node.tag.lower() not in BLOCKS):
        node = node.getparent()
    return node if node is not None else element


def parse_doc(html: str, gold: str) -> Doc | None:
    try:
        tree = lxml.html.document_fromstring(html.encode("utf-8"), parser=lxml.html.HTMLParser(encoding="utf-8"))
    except (ValueError, lxml.etree.ParserError):
        return None
    body = tree.find("body")
    if body is None:
        return None
    slots: list[Slot] = []
    for element in body.iter():
        tag = element.tag.lower() if isinstance(element.tag, str) else ""
        if tag and tag not in SKIP and element.text and element.text.strip():
            slots.append(Slot(element, "text", element.text.split(), _block_of(element)))
        if element is not body and element.tail and element.tail.strip():
            parent = element.getparent()
            slots.append(Slot(element, "tail", element.tail.split(), _block_of(parent)))
    gold_tokens = normalize(gold).split()
    bigrams = set(zip(gold_tokens, gold_tokens[1:]))
    vocabulary = set(gold_tokens)
    tokens = [normalize(" ".join(s.words)).split() for s in slots]
    long_content = [len(t) >= 3 and np.mean([b in bigrams for b in zip(t, t[1:])]) >= CONTENT_SHARE
                    for t in tokens]
    content = []
    for i, t in enumerate(tokens):
        if long_content[i]:
            content.append(i)
        elif 0 < len(t) < 3 and all(w in vocabulary for w in t) and \
                ((i > 0 and long_content[i - 1]) or (i + 1 < len(tokens) and long_content[i + 1])):
            content.append(i)
    chosen = set(content)
    boilerplate = [i for i in range(len(slots)) if i not in chosen and tokens[i]]
    covered = sum(len(tokens[i]) for i in content)
    doc = Doc(tree, slots, content, boilerplate, covered / max(1, len(gold_tokens)))
    groups: dict[int, list[int]] = {}
    order: list[int] = []
    for i in content:
        key = id(slots[i].block)
        if key not in groups:
            groups[key] = []
            order.append(key)
        groups[key].append(i)
    doc.paragraphs = [groups[k] for k in order]
    return doc


# --- new text ------------------------------------------------------------------------------------------------

class Sentences:
    """Sentences of the gold corpus, to draw new text from."""

    def __init__(self, originals: list[Original]):
        self.pool: list[tuple[str, list[str]]] = []
        for o in originals:
            for sentence in re.split(r"(?<=[.!?])\s+", o.gold):
                words = sentence.split()
                if 5 <= len(words) <= 40:
                    self.pool.append((o.site, words))
        self.vocabulary = [w for o in originals for w in o.gold.split()]

    def text(self, rng: np.random.Generator, words: int, avoid: set[str]) -> list[str]:
        """About ``words`` words of sentences, each drawn uniformly from the whole corpus's sentences of sites not in
        ``avoid``. (Drawing a site first, then one of its sentences, rebuilt the few sentences of a one-page site
        almost whole inside new text: a copy of that page, counted as a false pair.)"""
        out: list[str] = []
        while len(out) < words:
            site, sentence = self.pool[rng.integers(len(self.pool))]
            if site not in avoid:
                out.extend(sentence)
        return out[:max(words, 1)]

    def word(self, rng: np.random.Generator) -> str:
        return self.vocabulary[rng.integers(len(self.vocabulary))]


# --- edits -----------------------------------------------------------------------------------------------------

def replace_words(doc: Doc, rng, rate: float, sentences: Sentences) -> None:
    places = [(i, k) for i in doc.content for k in range(len(doc.slots[i].words))]
    chosen = rng.choice(len(places), size=max(1, round(rate * len(places))), replace=False)
    for p in chosen.tolist():
        i, k = places[p]
        words = list(doc.slots[i].words)
        words[k] = sentences.word(rng)
        doc.set(i, words)


COMMENT_NAMES = re.compile(r"comment|disqus|respond|reply|replies|discussion|reaction", re.I)  # class/id words of an
# element holding readers' comments (comment_slots)
MIN_POST_WORDS = 20  # a page's article less its readers' comments is the article a cut takes from when this long


def comment_slots(doc: Doc) -> set[int]:
    """The content slots inside readers' comments: inside an element whose class or id names comments
    (COMMENT_NAMES) and that does not hold the article's first content slot (an element that holds it wraps the
    page: a class on <html> or a post's container that lists comment features). Some datasets' gold texts count a
    post's comments (dragnet, cleaneval): the gold of johndcook.com's post is 700 characters of post and 11,700 of
    comments."""
    if not doc.content:
        return set()
    first = doc.slots[doc.content[0]].element
    wrappers = {first, *first.iterancestors()}  # held by reference: an lxml proxy's id() is not stable
    named: dict[object, bool] = {}

    def in_comments(element) -> bool:
        for node in [element, *element.iterancestors()]:
            if node not in named:
                names = f"{node.get('class') or ''} {node.get('id') or ''}" if isinstance(node.tag, str) else ""
                named[node] = node not in wrappers and bool(COMMENT_NAMES.search(names))
            if named[node]:
                return True
        return False

    return {i for i in doc.content if in_comments(doc.slots[i].element)}


def cut_slots(doc: Doc) -> list[int]:
    """The content slots a cut takes words from, in document order: the article less its readers' comments
    (comment_slots) when that leaves at least MIN_POST_WORDS words, else every content slot. A copy cut from the start
    of a commented post is the post's end with its comments; cutting the gold text would take the whole post away
    where the comments are most of it (a page of comments only, which shares no sentence with the post)."""
    comments = comment_slots(doc)
    post = [i for i in doc.content if i not in comments]
    return post if comments and sum(len(doc.slots[i].words) for i in post) >= MIN_POST_WORDS else doc.content


def cut(doc: Doc, rate: float, *, from_start: bool) -> None:
    """Cut ``rate`` of the article's words (cut_slots) from its start or its end: whole text slots, then part of
    one."""
    slots = cut_slots(doc)
    remaining = round(rate * sum(len(doc.slots[i].words) for i in slots))
    order = slots if from_start else list(reversed(slots))
    for i in order:
        if remaining <= 0:
            break
        words = doc.slots[i].words
        if len(words) <= remaining:
            remaining -= len(words)
            doc.set(i, [])
        else:
            doc.set(i, words[remaining:] if from_start else words[:len(words) - remaining])
            remaining = 0


def paragraph_texts(doc: Doc, groups: list[int] | None = None) -> list[list[str]]:
    """The words of each paragraph (of ``groups``, indexes into ``doc.paragraphs``; default all)."""
    chosen = range(len(doc.paragraphs)) if groups is None else groups
    return [[w for i in doc.paragraphs[k] for w in doc.slots[i].words] for k in chosen]


def article_paragraphs(doc: Doc) -> list[int]:
    """The page's article, as indexes into ``doc.paragraphs``: its content paragraphs less every one that repeats
    an earlier one word for word. The gold text's words also match the page's own headline where the page links to
    itself (lists of latest or most read stories in a sidebar or footer); those links are not the article, and an
    edit that writes the article's paragraphs there puts the story into the sidebar."""
    seen: set[tuple[str, ...]] = set()
    out = []
    for k, words in enumerate(paragraph_texts(doc)):
        key = tuple(normalize(" ".join(words)).split())
        if key and key in seen:
            continue
        seen.add(key)
        out.append(k)
    return out


def write_paragraphs(doc: Doc, groups: list[int], texts: list[list[str]]) -> None:
    """Write ``texts`` into the paragraphs ``groups`` in order (each into its first slot, the others emptied);
    paragraphs left over are emptied."""
    for n, k in enumerate(groups):
        group = doc.paragraphs[k]
        doc.set(group[0], texts[n] if n < len(texts) else [])
        for i in group[1:]:
            doc.set(i, [])


PARAGRAPH_TAGS = {"p", "li", "pre", "dd", "dt", "h1", "h2", "h3", "h4", "h5", "h6"}  # new paragraphs go after one of
# these; into any other block (div, td, article...) they go where its text was


def insert_paragraphs(doc: Doc, at: int, texts: list[list[str]]) -> None:
    """New paragraphs (p elements; li in a list) holding ``texts``, in order, where the text slot ``at`` is: after
    its block when that is a paragraph, else in the block at the slot's place."""
    slot = doc.slots[at]
    block = slot.block
    tag = block.tag.lower() if isinstance(block.tag, str) else ""
    new = []
    for words in texts:
        element = lxml.html.Element("li" if tag == "li" else "p")
        element.text = " " + " ".join(words) + " "
        new.append(element)
    if tag not in PARAGRAPH_TAGS and slot.attr == "text" and slot.element is block:
        for n, element in enumerate(new):
            block.insert(n, element)
        return
    previous = block if tag in PARAGRAPH_TAGS else slot.element
    for element in new:
        previous.addnext(element)
        previous = element


def movable_paragraphs(doc: Doc) -> list:
    """The article's paragraph elements that "paragraphs reordered" shuffles: of its body paragraphs
    (``body_paragraphs``: after the headline, byline and date), those that are children of the one element holding
    most of them, in document order. Elements move whole,
    with their markup (links, emphasis); only such siblings can swap places as a reader sees paragraphs move. (The
    article's text slots themselves are not: writing one paragraph's words into another's first slot put them
    into a link, a table cell or a sidebar slot whose words matched the gold text.)"""
    blocks = [doc.slots[doc.paragraphs[k][0]].block for k in body_paragraphs(doc)]
    parents = [b.getparent() for b in blocks]  # held: lxml keeps one proxy per element only while it is referenced
    held = [p for n, p in enumerate(parents) if p is not None and all(p is not q for q in parents[:n])]
    if not held:
        return []
    body = max(held, key=lambda p: sum(q is p for q in parents))  # the first of the most common
    return [b for b, p in zip(blocks, parents) if p is body]


def reorder(doc: Doc, rng) -> None:
    """Shuffle the article's body paragraphs (``movable_paragraphs``) in place: each paragraph element takes
    another's position among its siblings; text between them (tails) stays where it was."""
    members = movable_paragraphs(doc)
    if len(members) < 2:
        return
    parent = members[0].getparent()
    positions = [parent.index(b) for b in members]
    tails = [b.tail for b in members]
    order = rng.permutation(len(members))
    while (order == np.arange(len(members))).all():
        order = rng.permutation(len(members))
    for b in members:
        b.tail = None
        parent.remove(b)
    for position, j, tail in zip(positions, order.tolist(), tails):
        members[j].tail = tail
        parent.insert(position, members[j])


HEADINGS = {"h1", "h2", "h3", "h4", "h5", "h6"}


def headline_of(doc: Doc) -> int | None:
    """The paragraph index of the headline: among the article's short paragraphs before its first long one, the
    first set as a heading (h1-h6), else the first paragraph of the article when it is short."""
    article = article_paragraphs(doc)
    texts = paragraph_texts(doc, article)
    lead = []
    for k, words in zip(article, texts):
        if len(words) > HEADLINE_WORDS:
            break
        lead.append(k)
    for k in lead:
        block = doc.slots[doc.paragraphs[k][0]].block
        if isinstance(block.tag, str) and block.tag.lower() in HEADINGS:
            return k
    return lead[0] if lead and lead[0] == article[0] else None


def body_paragraphs(doc: Doc) -> list[int]:
    """The article's paragraphs after its headline, from its first long one (> HEADLINE_WORDS words) on: what a
    story written into this page replaces. The short ones between (byline, date, deck) stay the page's own."""
    article = article_paragraphs(doc)
    headline = headline_of(doc)
    after = article[article.index(headline) + 1:] if headline is not None else article
    texts = paragraph_texts(doc, after)
    start = next((n for n, words in enumerate(texts) if len(words) > HEADLINE_WORDS), 0)
    return after[start:] or article


def set_title(doc: Doc, words: list[str]) -> None:
    title = doc.tree.find(".//title")
    if title is not None:
        title.text = " ".join(words)


def change_boilerplate(doc: Doc, rng, sentences: Sentences, site: str) -> None:
    headline = headline_of(doc)
    new_headline = sentences.text(rng, 8, {site})[:12]
    if headline is not None:
        group = doc.paragraphs[headline]
        doc.set(group[0], new_headline)
        for i in group[1:]:
            doc.set(i, [])
    set_title(doc, new_headline)
    for i in doc.boilerplate:
        if rng.random() < BOILERPLATE_SHARE:
            doc.set(i, sentences.text(rng, len(doc.slots[i].words), {site})[:len(doc.slots[i].words)])


def story_texts(doc: Doc) -> list[list[str]]:
    """The words of the article's paragraphs but its headline (empty ones left out)."""
    headline = headline_of(doc)
    article = [k for k in article_paragraphs(doc) if k != headline]
    return [t for t in paragraph_texts(doc, article) if t]


def story_paragraphs(doc: Doc, rng, sentences: Sentences, site: str) -> list[list[str]]:
    """The base's article as paragraphs without its headline, its last paragraph replaced by new sentences (or
    its last LAST_SHARE of words when the last paragraph is longer)."""
    texts = story_texts(doc)
    total = sum(len(t) for t in texts)
    if not texts:
        return texts
    if len(texts[-1]) <= LAST_SHARE * total and len(texts) > 1:
        texts[-1] = sentences.text(rng, len(texts[-1]), {site})[:len(texts[-1])]
    else:
        keep = len(texts[-1]) - round(LAST_SHARE * total)
        texts[-1] = texts[-1][:max(0, keep)] + sentences.text(rng, round(LAST_SHARE * total), {site})
    return texts


def site_texts(pages: list[Original]) -> Counter:
    """How many of a site's pages hold each text slot's (normalized) text."""
    counts: Counter = Counter()
    for page in pages:
        doc = parse_doc(page.html, page.gold)
        if doc is not None:
            counts.update({normalize(" ".join(slot.words)) for slot in doc.slots})
    return counts


def rewrite_own_text(doc: Doc, shared: Counter, rng, sentences: Sentences, avoid: set[str]) -> None:
    """Give a host page's own text outside its article (text no other page of its site has: comments, a quoted
    press release, captions the gold text left out) new words of the same length: a page built in this template is
    another page, with text of its own there, not a copy of the host's. Text the site's pages share (the template:
    menus, footers) stays."""
    for i in doc.boilerplate:
        words = doc.slots[i].words
        if shared[normalize(" ".join(words))] < 2:
            doc.set(i, sentences.text(rng, len(words), avoid)[:len(words)])


def host_page(doc: Doc, paragraphs: list[list[str]], headline: list[str]) -> None:
    """Put a story into another page's template: its headline in the host's headline (and <title>), its paragraphs
    as new paragraphs where the host article's body was (``body_paragraphs``, emptied); the host's byline and date,
    its menus, sidebars and footer as they were."""
    head, body = headline_of(doc), body_paragraphs(doc)  # both before any write: echoes are found by text
    if head is not None:
        write_paragraphs(doc, [head], [headline])
    write_paragraphs(doc, body, [])
    insert_paragraphs(doc, doc.paragraphs[body[0]][0], paragraphs)
    set_title(doc, headline)


def copy_url(url: str, tag: str) -> str:
    """Another URL of the same site and folder: the last path segment gets ``-tag`` before its extension."""
    head, sep, query = url.partition("?")
    base, slash, last = head.rpartition("/")
    if not slash or not last:
        return f"{head.rstrip('/')}/{tag}.html" + (sep + query if sep else "")
    stem, dot, ext = last.rpartition(".")
    name = f"{stem}-{tag}.{ext}" if dot and stem else f"{last}-{tag}"
    return f"{base}/{name}" + (sep + query if sep else "")


# --- the set ---------------------------------------------------------------------------------------------------

@dataclass(slots=True)
class TypedSet:
    pages: list[Page]
    natural: set[tuple[str, str]]  # corpus pairs that are duplicates already (true pairs)

    def positives(self) -> Iterator[tuple[str, str, str]]:
        """(edit type, base id, copy id)."""
        for p in self.pages:
            if p.kind in EDITS:
                yield p.kind, p.base, p.id

    def negatives(self) -> Iterator[tuple[str, str, str]]:
        """(negative type, page id, page id)."""
        by_site: dict[str, list[Page]] = defaultdict(list)
        series: dict[str, list[Page]] = defaultdict(list)
        for p in self.pages:
            if p.kind == "original":
                by_site[p.site].append(p)
            elif p.kind == "follow-up":
                yield "follow-up", p.base, p.id
            elif p.kind == "series":
                series[p.group].append(p)
        for pages in by_site.values():
            for k, a in enumerate(pages):
                for b in pages[k + 1:]:
                    if (a.id, b.id) not in self.natural and (b.id, a.id) not in self.natural:
                        yield "same-site", a.id, b.id
        for pages in series.values():
            for k, a in enumerate(pages):
                for b in pages[k + 1:]:
                    yield "series", a.id, b.id


def _gold_sets(originals: list[Original], n: int = 5) -> list[set]:
    out = []
    for o in originals:
        t = normalize(o.gold).split()
        out.append({tuple(t[i:i + n]) for i in range(len(t) - n + 1)})
    return out


def natural_pairs(originals: list[Original]) -> set[tuple[str, str]]:
    """Pairs of originals that the corpus already holds as duplicates, on one site or two (one agency story on
    two news sites): byte-identical HTML or one URL on one site, gold texts whose word-5-gram containment is at
    least NATURAL_CONTAINMENT, or gold texts of two sites whose word-3-gram Jaccard is at least NATURAL_RESEMBLANCE
    (candidates: pairs sharing a gold 5-gram that few texts have)."""
    sets = _gold_sets(originals)
    postings: dict[tuple, list[int]] = defaultdict(list)
    for i, s in enumerate(sets):
        for gram in s:
            postings[gram].append(i)
    shared: dict[tuple[int, int], int] = defaultdict(int)
    for docs in postings.values():
        if 1 < len(docs) <= NATURAL_POSTINGS:
            for k, a in enumerate(docs):
                for b in docs[k + 1:]:
                    shared[(a, b)] += 1
    out = set()
    trigrams: list[set] | None = None
    for (a, b), count in shared.items():
        small = min(len(sets[a]), len(sets[b]))
        if count >= NATURAL_CONTAINMENT * small and len(sets[a] & sets[b]) >= NATURAL_CONTAINMENT * small:
            out.add((originals[a].id, originals[b].id))
        elif originals[a].site != originals[b].site:
            trigrams = trigrams or _gold_sets(originals, 3)
            x, y = trigrams[a], trigrams[b]
            if x and y and len(x & y) >= NATURAL_RESEMBLANCE * len(x | y):
                out.add((originals[a].id, originals[b].id))
    by_site: dict[str, list[int]] = defaultdict(list)
    for i, o in enumerate(originals):
        by_site[o.site].append(i)
    for members in by_site.values():
        for k, a in enumerate(members):
            for b in members[k + 1:]:
                x, y = originals[a], originals[b]
                if x.html == y.html or x.url == y.url:
                    out.add((x.id, y.id))
    return out


def build(corpus: Path, *, per_type: int, seed: int) -> TypedSet:
    """Every original, ``per_type`` copies of each edit type and negatives (see the module docstring)."""
    originals = load_originals(corpus)
    rng = np.random.default_rng(seed)
    sentences = Sentences(originals)
    site_pages: dict[str, list[int]] = defaultdict(list)
    for i, o in enumerate(originals):
        site_pages[o.site].append(i)
    pages = [Page(o.id, o.url, o.html, site=o.site, half=site_half(o.site)) for o in originals]
    bases = [i for i in rng.permutation(len(originals)).tolist()
             if len(originals[i].gold.split()) >= MIN_BASE_WORDS]
    parsed: dict[int, Doc] = {}

    def doc_of(i: int) -> Doc | None:
        o = originals[i]
        doc = parse_doc(o.html, o.gold)
        return doc if doc is not None and doc.coverage >= MIN_COVERAGE and doc.paragraphs else None

    def usable() -> Iterator[int]:
        for i in bases:
            if i in parsed:
                continue
            doc = doc_of(i)
            if doc is not None:
                parsed[i] = doc
                yield i

    stream = usable()
    hosts_sites = [s for s, members in site_pages.items() if len(members) >= 3]
    templated = set(hosts_sites)
    shared = functools.cache(lambda site: site_texts([originals[i] for i in site_pages[site]]))

    def own_text(doc: Doc, site: str, avoid: set[str]) -> None:
        rewrite_own_text(doc, shared(site), rng, sentences, avoid)

    for kind in EDITS:
        for _ in range(per_type):
            i = next(stream)
            while (kind == "syndicated" and originals[i].site not in templated) or \
                    (kind == "reorder" and len(movable_paragraphs(parsed[i])) < REORDER_MIN_PARAGRAPHS):
                i = next(stream)
            base, doc = originals[i], parsed[i]
            if kind == "syndicated":
                page = _syndicate(rng, base, doc, originals, site_pages, hosts_sites, sentences, doc_of, own_text)
                if page is None:
                    continue
            else:
                _edit(kind, rng, doc, sentences, base.site)
                page = Page(f"{base.id}~{kind}", copy_url(base.url, kind), doc.html(), kind, base.id, base.site)
            page.half = site_half(base.site)
            pages.append(page)
    made = 0
    while made < per_type:
        i = next(stream, None)
        if i is None:
            break
        page = _follow_up(rng, originals[i], parsed[i], originals, site_pages, sentences, doc_of, own_text)
        if page is not None:
            pages.append(page)
            made += 1
    for k in range(max(1, per_type // SERIES_PAGES)):
        pages.extend(_series(rng, k, hosts_sites, originals, site_pages, sentences, doc_of, own_text))
    return TypedSet(pages, natural_pairs(originals))


def _edit(kind: str, rng, doc: Doc, sentences: Sentences, site: str) -> None:
    if kind.startswith("replace-"):
        replace_words(doc, rng, int(kind.rsplit("-", 1)[1]) / 100, sentences)
    elif kind.startswith("cut-"):
        cut(doc, int(kind.rsplit("-", 1)[1]) / 100, from_start=kind.startswith("cut-start"))
    elif kind == "reorder":
        reorder(doc, rng)
    elif kind == "boilerplate":
        change_boilerplate(doc, rng, sentences, site)


def _pick_host(rng, site_pages, originals, sites: list[str], avoid: str, doc_of) -> tuple[Original, Doc] | None:
    for _ in range(50):
        site = sites[rng.integers(len(sites))]
        if site == avoid:
            continue
        members = site_pages[site]
        i = members[rng.integers(len(members))]
        doc = doc_of(i)
        if doc is not None and len(doc.paragraphs) >= 3:
            return originals[i], doc
    return None


def _syndicate(rng, base: Original, doc: Doc, originals, site_pages, sites, sentences, doc_of,
               own_text) -> Page | None:
    picked = _pick_host(rng, site_pages, originals, sites, base.site, doc_of)
    if picked is None:
        return None
    host, host_doc = picked
    own_text(host_doc, host.site, {base.site, host.site})
    story = story_paragraphs(doc, rng, sentences, base.site)
    host_page(host_doc, story, sentences.text(rng, 8, {base.site, host.site})[:12])
    tag = "syndicated-" + base.id.replace("/", "-")
    return Page(f"{base.id}~syndicated", copy_url(host.url, tag), host_doc.html(), "syndicated", base.id, host.site,
                host=host.id)


def _follow_up(rng, base: Original, doc: Doc, originals, site_pages, sentences, doc_of, own_text) -> Page | None:
    """A later story on the base's site: new sentences, FOLLOW_UP_SHARE of them the base's background."""
    others = [i for i in site_pages[base.site] if originals[i].id != base.id]
    rng.shuffle(others)
    for i in others[:10]:
        host_doc = doc_of(i)
        if host_doc is None:
            continue
        own_text(host_doc, base.site, {base.site})
        story = [w for t in story_texts(doc) for w in t] or [w for t in paragraph_texts(doc) for w in t]
        total = len(story)
        borrowed = round(FOLLOW_UP_SHARE * total)
        start = rng.integers(0, max(1, len(story) - borrowed))
        lede = sentences.text(rng, round(total * 0.3), {base.site})
        rest = sentences.text(rng, total - borrowed - len(lede), {base.site})
        paragraphs = _split(lede, 3) + _split(story[start:start + borrowed], 2) + _split(rest, 3)
        host_page(host_doc, paragraphs, sentences.text(rng, 8, {base.site})[:12])
        return Page(f"{base.id}~follow-up", copy_url(originals[i].url, "follow-up"), host_doc.html(), "follow-up",
                    base.id, base.site, site_half(base.site), host=originals[i].id)
    return None


def _series(rng, k: int, sites, originals, site_pages, sentences, doc_of, own_text) -> list[Page]:
    """SERIES_PAGES pages of one site: the same intro and outro around different bodies."""
    site = sites[rng.integers(len(sites))]
    members = list(site_pages[site])
    rng.shuffle(members)
    docs = [(originals[i], d) for i in members if (d := doc_of(i)) is not None][:SERIES_PAGES]
    if len(docs) < 2:
        return []
    body = int(np.median([len(originals[i].gold.split()) for i in members]))
    shared = round(SERIES_SHARE * body)
    intro = sentences.text(rng, shared * 2 // 3, {site})
    outro = sentences.text(rng, shared - len(intro), {site})
    out = []
    for n, (host, host_doc) in enumerate(docs):
        own_text(host_doc, site, {site})
        paragraphs = [intro] + _split(sentences.text(rng, body - shared, {site}), 4) + [outro]
        host_page(host_doc, paragraphs, sentences.text(rng, 8, {site})[:12])
        out.append(Page(f"series-{k}/{n}", copy_url(host.url, f"series-{k}-part-{n + 1}"), host_doc.html(),
                        "series", None, site, site_half(site), f"series-{k}", host=host.id))
    return out


def _split(words: list[str], parts: int) -> list[list[str]]:
    if not words:
        return []
    size = -(-len(words) // parts)
    return [words[i:i + size] for i in range(0, len(words), size)]


def write(typed: TypedSet, path: Path) -> None:
    """The pages as `templater run` input (JSON Lines, gzipped): originals fetched before every copy."""
    with gzip.open(path, "wt", encoding="utf-8") as f:
        for p in typed.pages:
            f.write(json.dumps(p.record(ORIGINAL_TIME if p.kind == "original" else COPY_TIME)) + "\n")
