"""Tests of a block's tag path made once a distinct path (blocks.tag_path_index / path_mask), and the other
extraction steps that skip work by the walk's counts: each gives what its per-block definition gives."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import SAMPLES  # noqa: F401  (the samples' folder: the fixtures below read them)
from templater import blocks, document, extract, headline
from templater.config import LearnSettings
from templater.datatypes import Block, Page, Segmented
from templater.parse import parse_html
from test_speedups import TRICKY, nested_markup, sample_pages


def segment_markup(body):
    markup = f"<html><head><title>Title words here</title></head><body>{body}</body></html>"
    root = parse_html(markup)
    return blocks.segment(root, Page("p", "https://a.example/p", markup)) if root is not None else None


# --- the per-block definitions (what the steps did block by block) -------------------------------------------------

def nested_entries_plain(seg, nested, settings=LearnSettings()):
    prefixes = tuple(nested)
    out = np.zeros(len(seg.blocks), dtype=bool)
    for i, block in enumerate(seg.blocks):
        if block.tag_path.startswith(prefixes) and extract.nested_rule(block, nested, settings) is not None:
            out[i] = True
    return out


def terms_of_text_plain(seg, shaped, settings=LearnSettings()):
    out = np.zeros(len(seg.blocks), dtype=bool)
    for i in np.flatnonzero(shaped):
        block = seg.blocks[i]
        if (any(p in block.tag_path + "/" for p in settings.text_structure_paths) and "/a/" not in block.tag_path
                and block.link_chars <= settings.shape_max_link_density * len(block.text)):
            out[i] = True
    return out


def own_content_plain(seg, trusted, chrome, settings=LearnSettings()):
    where = np.flatnonzero(trusted)
    if not len(where):
        return trusted
    chars = seg.block_chars()
    text = (seg.block_links() <= settings.own_content_links * chars) & (chars > 0)
    trusted_blocks = [seg.blocks[i] for i in where.tolist()]
    placed = np.fromiter((extract._outside_chrome_tags(b.tag_path, settings.chrome_tags) for b in trusted_blocks),
                         dtype=bool, count=len(where))
    heading = np.fromiter((b.tag in settings.heading_tags and "/a/" not in b.tag_path and extract.in_declared_main(b)
                           for b in trusted_blocks), dtype=bool, count=len(where)) & placed
    return extract._own_stretch(seg, trusted, chrome, where, text, placed, heading, settings)


def keep_headline_plain(seg, features, keep):
    if not keep.any():
        return keep
    first = int(np.argmax(keep))
    overlap = features[:first, headline.TITLE_OVERLAP_COLUMN]
    found = [i for i in range(first)
             if seg.blocks[i].tag in headline.HEADLINE_TAGS and overlap[i] >= headline.HEADLINE_MIN_OVERLAP]
    if found:
        keep = keep.copy()
        keep[found[-1]] = True
    return keep


# --- checks -------------------------------------------------------------------------------------------------------

def assert_path_steps_match(seg, draw_bits):
    """Every step that tests tag paths once a path gives its per-block definition's mask on ``seg``."""
    paths = [b.tag_path for b in seg.blocks]
    assert blocks.path_mask(seg, lambda p: p.endswith("/li")).tolist() == [p.endswith("/li") for p in paths]
    distinct, of = blocks.tag_path_index(seg)
    assert [distinct[k] for k in of.tolist()] == paths and len(set(distinct)) == len(distinct)
    shapes = frozenset(p for k, p in enumerate(sorted(set(paths))) if draw_bits(k))
    nested = extract.nested_lists(shapes | frozenset(p.rsplit("/", 1)[0] + "/ul/li" for p in shapes))
    if nested:
        assert extract.nested_entries(seg, nested).tolist() == nested_entries_plain(seg, nested).tolist()
    n = len(seg.blocks)
    shaped = np.array([draw_bits(n + i) for i in range(n)], dtype=bool)
    assert extract.terms_of_text(seg, shaped).tolist() == terms_of_text_plain(seg, shaped).tolist()
    trusted = np.array([draw_bits(2 * n + i) for i in range(n)], dtype=bool)
    chrome = np.array([draw_bits(3 * n + i) for i in range(n)], dtype=bool)
    for own in (LearnSettings(), LearnSettings(paragraph_chars=10_000, own_content_gap=1)):
        assert extract.own_content(seg, trusted, chrome, own).tolist() == own_content_plain(seg, trusted, chrome,
                                                                                           own).tolist()


@settings(max_examples=300, deadline=None)
@given(nested_markup(), st.randoms(use_true_random=False))
def test_path_steps_match_their_per_block_definitions(body, random):
    body = body.replace("<span>", "<dl><dt>").replace("</span>", "</dt></dl>")  # definition lists too
    seg = segment_markup(body)
    if seg is not None:
        assert_path_steps_match(seg, lambda k: random.random() < 0.5)


def test_path_steps_match_their_per_block_definitions_on_the_samples():
    for n, seg in enumerate(sample_pages()):
        assert_path_steps_match(seg, lambda k, n=n: (k * 7 + n) % 3 == 0)


def test_tag_path_index_is_the_asking_pages():
    first = segment_markup("<div><p>one two</p><ul><li>three</li></ul></div>")
    second = segment_markup("<section><h2>four</h2><p>five</p><p>six</p></section>")
    assert blocks.tag_path_index(first)[0] == ["/html/body/div/p", "/html/body/div/ul/li"]
    assert blocks.tag_path_index(second)[0] == ["/html/body/section/h2", "/html/body/section/p"]
    assert blocks.tag_path_index(second)[1].tolist() == [0, 1, 1]
    assert blocks.tag_path_index(first)[1].tolist() == [0, 1]
    empty = segment_markup("")
    assert blocks.path_mask(empty, bool).tolist() == []


# --- document._title_sized and headline.keep_headline ----------------------------------------------------------

TEXTS = st.text(alphabet=st.sampled_from(TRICKY + document.PERMALINK_MARKS + "\u0130"), max_size=30)


def page_of(texts, tags=None):
    tags = tags or ["p"] * len(texts)
    found = tuple(Block(i, None, f"/html/body/{tag}", tag, text, 0, 0, 0, 0)
                  for i, (text, tag) in enumerate(zip(texts, tags)))
    return Segmented(page=Page("p", "https://a.example/p", ""), blocks=found,
                     vector=np.zeros(len(found), dtype=np.uint32))


@settings(max_examples=500, deadline=None)
@given(st.lists(TEXTS, max_size=12), st.lists(TEXTS, min_size=1, max_size=4))
def test_title_sized_blocks_keep_every_match(texts, titles):
    """Every block whose right-stripped, lower-cased text is one of the wanted forms is among the sized ones (the
    length filter drops none that matches), in order."""
    seg = page_of(texts)
    wanted = {t.rstrip(document.PERMALINK_MARKS).lower() for t in titles} | {t.lower() for t in titles}
    longest = max(map(len, wanted)) + len(document.PERMALINK_MARKS)
    sized = document._title_sized(seg, longest, min(map(len, wanted)))
    assert sized == sorted(sized) and all(len(texts[i]) <= longest for i in sized)
    matching = [i for i, t in enumerate(texts) if len(t) <= longest and t.rstrip(document.PERMALINK_MARKS).lower()
                in wanted]
    assert [i for i in sized if texts[i].rstrip(document.PERMALINK_MARKS).lower() in wanted] == matching


def test_title_sized_keeps_a_short_block_with_a_dotted_capital_i():
    seg = page_of(["\u0130stanbul", "Istanbul", "x"])
    wanted = {"i\u0307stanbul"}  # "İstanbul".lower(): nine code points from eight
    assert 0 in document._title_sized(seg, 20, 9)
    assert document._title_sized(seg, 20, 9) == [0, 1]  # (a block of fewer than half as many characters: never)
    assert [b.text for b in seg.blocks if b.text.lower() in wanted] == ["\u0130stanbul"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["h1", "h2", "p", "div", "h3"]), st.floats(0, 1), st.booleans()),
                min_size=1, max_size=12))
def test_keep_headline_matches_its_per_block_definition(rows):
    seg = page_of(["x"] * len(rows), [tag for tag, _, _ in rows])
    features = np.zeros((len(rows), headline.TITLE_OVERLAP_COLUMN + 1))
    features[:, headline.TITLE_OVERLAP_COLUMN] = [overlap for _, overlap, _ in rows]
    keep = np.array([kept for _, _, kept in rows], dtype=bool)
    assert headline.keep_headline(seg, features, keep).tolist() == keep_headline_plain(seg, features, keep).tolist()


# --- document._title_forms ------------------------------------------------------------------------------------

TITLE_WORDS = st.sampled_from(["Headline", "words", "here", "|", "-", "–", "::", "/", "»", "joythebaker", "Joy",
                               "the", "Baker", "FOXNews.com", "\u0130stanbul", "x¶", " ", "  "])
TITLES = st.lists(TITLE_WORDS, max_size=9).map(" ".join)


def title_forms_plain(title, host):
    """_title_forms as it was written first: every cut found again where it is needed."""
    cuts = list(document.TITLE_SEPARATORS.finditer(title))
    runs = [title[:c.start()] for c in cuts] + [title[c.end():] for c in cuts]
    forms = [*document.site_name_cuts(title), document.strip_site_name(title, from_start=True)]
    forms += [run for run in runs if len(run.split()) > document.SITE_NAME_WORDS]
    forms += [title[c.end():] for c in cuts if document._names_site(title[:c.start()], host)]
    forms += [title[:c.start()] for c in cuts if document._names_site(title[c.end():], host)]
    return [f.strip().lower() for f in forms if f.strip()]


@settings(max_examples=500, deadline=None)
@given(TITLES, st.sampled_from([[], ["joythebaker"], ["foxnews", "example"]]))
def test_title_forms_match_their_first_definition(title, host):
    assert document._title_forms(title, host) == title_forms_plain(title, host)
