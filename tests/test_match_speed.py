"""Template matching's fast paths give what their plain definitions give: the static rules in C against the
binary search and the bit-parallel LCS in Python, a template compiled from a lean read against one compiled
whole, the per-template tag path tests against the tests they stand for, the size test reading part of the body,
the container rules over the blocks' ancestors and the comment anchors without XPath against lxml's XPath, the
content region's path walked in C, the name line's test against its pattern, repeats against their definition."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from store import pins as pin_store
from store import templates as template_store
from templater import extract, native, pipeline
from templater.align import lcs_length
from templater.datatypes import Rule, RuleAction, Template

from test_rule_inspect import SITE, write_site

needs_numeric = pytest.mark.skipif(native.numeric is None, reason="the compiled numeric code is not built here")


def compiled_of(sequence):
    rules = tuple(Rule(xpath=f"/html/body/p[{i + 1}]", action=RuleAction.DROP, support=1.0, tag_path="/html/body/p",
                       hash=h) for i, h in enumerate(sequence))
    return extract.CompiledTemplate(Template(site="s/", version=1, rules=rules, page_count=3, learned_at="now"))


@needs_numeric
@settings(max_examples=400, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=6), max_size=200),
       st.lists(st.integers(min_value=0, max_value=8), max_size=200), st.booleans())
def test_static_match_in_c_is_the_binary_search_and_the_lcs(sequence, page, wide):
    """Small alphabets (many matches, long carries) over sequences that cross 64-bit words; ``wide`` moves the
    symbols to the top of uint32's range."""
    if wide:
        sequence, page = [2**32 - 1 - s for s in sequence], [2**32 - 1 - s for s in page]
    compiled = compiled_of(sequence)
    vector = np.array(page, dtype=np.uint32)
    fast, coverage = extract.match_static(vector, compiled)
    assert fast.tolist() == np.isin(vector, np.array(sequence, dtype=np.uint32)).tolist()
    assert coverage == (lcs_length(sequence, page) / len(sequence) if sequence else 1.0)
    plain = extract._members(vector, compiled.static_set)
    assert plain.tolist() == fast.tolist()


@needs_numeric
def test_static_match_pure_path_gives_the_same(monkeypatch):
    rng = np.random.default_rng(3)
    sequence = rng.integers(0, 40, size=300).tolist()
    page = rng.integers(0, 50, size=500).astype(np.uint32)
    fast = extract.match_static(page, compiled_of(sequence))
    monkeypatch.setattr(native, "numeric", None)
    plain = extract.match_static(page, compiled_of(sequence))
    assert fast[0].tolist() == plain[0].tolist() and fast[1] == plain[1]
    assert fast[1] == lcs_length(sequence, page.tolist()) / len(sequence)


@needs_numeric
def test_static_match_refuses_buffers_of_the_wrong_sizes():
    with pytest.raises(ValueError):
        native.numeric.static_match(np.zeros(3, dtype=np.uint32), np.zeros(2, dtype=np.uint32).tobytes(),
                                    b"\0" * 8, 64, np.zeros(2, dtype=bool))


@pytest.fixture
def site_db(tmp_path):
    write_site(tmp_path / "site.jsonl.gz", range(6), comments=True)
    db = pipeline.open_store(tmp_path / "t.db")
    pipeline.ingest(db, [tmp_path / "site.jsonl.gz"])
    pipeline.build(db)
    pin_store.ensure_schema(db)
    return db


def compiled_fields(compiled):
    return (compiled.site, compiled.name, compiled.settings, compiled.static_seq, compiled.static_set.tolist(),
            compiled.static_keys, compiled.static_table, compiled.shapes, compiled.nested,
            None if compiled.region is None else compiled.region.path, compiled.region_trusted,
            [(rule, xpath.path) for rule, xpath in compiled.pinned], compiled.meta,
            [xpath.path for xpath in compiled.containers], compiled.fast_rules.fast, compiled.fast_rules.sized,
            [xpath.path for xpath in compiled.fast_rules.slow])


def test_a_template_read_lean_compiles_as_the_whole_template(site_db):
    index = pipeline.TemplateIndex(site_db)
    lean = index.compiled(SITE)
    template_id = index.sources[SITE]
    whole = extract.CompiledTemplate(template_store.load_template(site_db, template_id))
    # static, shape, container (fast and sized forms) and region rules and metadata rules, read whole when asked for
    assert lean.static_seq and lean.shapes and lean.containers and lean.region is not None and lean.meta
    assert (any(lean.fast_rules.sized) or native.walk is None) and lean.template.rules
    assert compiled_fields(lean) == compiled_fields(whole)
    assert lean.template == whole.template
    assert lean.static_masks == whole.static_masks


def test_a_pinned_site_is_compiled_from_its_pins(site_db):
    index = pipeline.TemplateIndex(site_db)
    learned = index.compiled(SITE).template.rules
    pinned = (Rule(xpath="//div[@id='comments']", action=RuleAction.DROP, support=0.0, pinned=True),
              learned[0])
    pin_store.save_pins(site_db, SITE, [(rule, "") for rule in pinned], now="now")
    compiled = pipeline.TemplateIndex(site_db).compiled(SITE)
    assert compiled.template.rules == pinned and compiled.template.reason == pin_store.PINNED_REASON
    assert compiled.static_seq == ([learned[0].hash] if learned[0].action == RuleAction.DROP
                                   and learned[0].hash is not None else [])


def test_extraction_is_the_same_from_a_lean_and_a_whole_template(site_db):
    index = pipeline.TemplateIndex(site_db)
    whole = extract.CompiledTemplate(template_store.load_template(site_db, index.sources[SITE]))
    pages = list(pipeline.page_store.load_pages(site_db, [f"p{i}" for i in range(6)]))
    assert len(pages) == 6
    for stored in pages:
        seg = pipeline.stored_segment(stored)
        lean = index.find(seg, stored.site)
        assert extract.match_regions(seg, lean)[1] == extract.match_regions(seg, whole)[1]
        assert extract.extract_page(seg, lean) == extract.extract_page(seg, whole)


# --- a template's tag path tests (PathTests) against the path_mask definitions -----------------------------------

from hypothesis import strategies as hst  # noqa: E402

from templater.config import LearnSettings  # noqa: E402
from test_path_tests import segment_markup  # noqa: E402
from test_speedups import nested_markup  # noqa: E402


def assert_codes_match(seg, draw_bits, settings_used):
    paths = sorted({b.tag_path for b in seg.blocks})
    shapes = frozenset(p for k, p in enumerate(paths) if draw_bits(k))
    shapes |= frozenset(p.rsplit("/", 1)[0] + "/ul/li" for p in shapes)
    nested = extract.nested_lists(shapes, settings_used)
    tests = extract.PathTests(shapes, nested, settings_used)
    for _ in range(2):  # computed, then kept
        codes = tests.codes(seg)
        assert ((codes & extract.SHAPE_PATH) > 0).tolist() == [b.tag_path in shapes for b in seg.blocks]
        if nested:
            assert extract.nested_entries(seg, nested, settings_used, codes).tolist() == \
                extract.nested_entries(seg, nested, settings_used).tolist()
        n = len(seg.blocks)
        shaped = np.array([draw_bits(n + i) for i in range(n)], dtype=bool)
        assert extract.terms_of_text(seg, shaped, settings_used, codes).tolist() == \
            extract.terms_of_text(seg, shaped, settings_used).tolist()
        trusted = np.array([draw_bits(2 * n + i) for i in range(n)], dtype=bool)
        chrome = np.array([draw_bits(3 * n + i) for i in range(n)], dtype=bool)
        assert extract.own_content(seg, trusted, chrome, settings_used, codes).tolist() == \
            extract.own_content(seg, trusted, chrome, settings_used).tolist()


@settings(max_examples=300, deadline=None)
@given(nested_markup(), hst.randoms(use_true_random=False), hst.booleans())
def test_path_tests_codes_match_the_path_masks(body, random, other):
    body = body.replace("<span>", "<dl><dt>").replace("</span>", "</dt></dl>")  # definition lists too
    body = body.replace("<p>", "<nav><p>", 1).replace("</p>", "</p></nav>", 1) if other else body
    seg = segment_markup(body)
    used = LearnSettings(paragraph_chars=10, own_content_gap=1, chrome_tags=frozenset({"nav"})) if other \
        else LearnSettings()
    if seg is not None:
        assert_codes_match(seg, lambda k: random.random() < 0.5, used)


def test_compiled_own_stretch_reads_the_same_bits_and_declines_what_it_cannot_read():
    """_walk.own_stretch's path bits are extract's; an array it cannot read whole (not contiguous, another length)
    makes it decline, and own_content then gives its definition's answer."""
    from templater import native

    if native.walk is None or not hasattr(native.walk, "own_stretch"):
        return
    seg = segment_markup("<main><h2>Section</h2><p>" + "words " * 40 + "</p><p>more</p></main><p>tail</p>")
    tests = extract.PathTests(frozenset(), {}, LearnSettings())
    codes = tests.codes(seg)
    n = len(seg.blocks)
    trusted, chrome = np.ones(n, dtype=bool), np.zeros(n, dtype=bool)
    used = LearnSettings()
    args = (used.heading_tags, used.own_content_links, used.paragraph_chars, used.own_content_gap)
    assert native.walk.own_stretch(seg.blocks, trusted, chrome, seg.block_chars(), seg.block_links(), codes,
                                   *args) is not None
    wide = np.ones(2 * n, dtype=bool)
    assert native.walk.own_stretch(seg.blocks, wide[::2], chrome, seg.block_chars(), seg.block_links(), codes,
                                   *args) is None
    assert native.walk.own_stretch(seg.blocks, trusted[:-1], chrome, seg.block_chars(), seg.block_links(), codes,
                                   *args) is None
    assert native.walk.own_stretch(seg.blocks, trusted, chrome, seg.block_chars().astype(np.int32),
                                   seg.block_links(), codes, *args) is None
    assert extract.own_content(seg, trusted, chrome, used, codes).tolist() == \
        extract.own_content(seg, trusted, chrome, used).tolist()
    # the bits the compiled pass tests (DEF constants in _walk.pyx) are extract's: a heading whose path bits say
    # placed, unlinked and a heading is judged by its tag and <main>, so moving any bit would change this page's answer
    assert (extract.PLACED_PATH, extract.NO_LINK_PATH, extract.HEADING_PATH) == (8, 16, 32)


@settings(max_examples=200, deadline=None)
@given(nested_markup(), hst.randoms(use_true_random=False))
def test_compiled_own_content_is_its_definition_without_the_walk(body, random):
    """own_content with the page's codes over the compiled pass and with the pass taken away (the numpy steps)."""
    from templater import native

    seg = segment_markup(body.replace("<section>", "<section role=main>", 1))
    if seg is None or native.walk is None:
        return
    used = LearnSettings(paragraph_chars=10, own_content_gap=1) if random.random() < 0.5 else LearnSettings()
    codes = extract.PathTests(frozenset(), {}, used).codes(seg)
    n = len(seg.blocks)
    trusted = np.array([random.random() < 0.7 for _ in range(n)], dtype=bool)
    chrome = np.array([random.random() < 0.2 for _ in range(n)], dtype=bool)
    fast = extract.own_content(seg, trusted, chrome, used, codes)
    stretch = native.walk.own_stretch
    try:
        del native.walk.own_stretch
    except (AttributeError, TypeError):
        return
    try:
        assert extract.own_content(seg, trusted, chrome, used, codes).tolist() == fast.tolist()
    finally:
        native.walk.own_stretch = stretch


def test_path_tests_keep_at_most_their_share_of_paths(monkeypatch):
    from templater import config
    monkeypatch.setattr(config, "PATH_TESTS_KEPT", 2)
    seg = segment_markup("<p>one</p><div>two</div><ul><li>three</li></ul><pre>four</pre>")
    tests = extract.PathTests(frozenset({"/html/body/p"}), {}, LearnSettings())
    first = tests.codes(seg)
    assert len(tests.bits) == 2 and tests.codes(seg).tolist() == first.tolist()
    assert first[0] & extract.SHAPE_PATH and not first[1] & extract.SHAPE_PATH


# --- the related boxes' size test, reading the body only as far as needed (template.fitting) ------------------------

from templater import template  # noqa: E402
from templater.parse import parse_html  # noqa: E402

needs_walk = pytest.mark.skipif(native.walk is None, reason="the compiled walk is not built here")


@needs_walk
@settings(max_examples=300, deadline=None)
@given(hst.lists(hst.tuples(hst.integers(min_value=0, max_value=40), hst.sampled_from(["a b ", "xyz", "  \n", "é "])),
                 min_size=1, max_size=12),
       hst.sampled_from([0.3, 0.05, 0.5, 0.9]), hst.booleans())
def test_fitting_is_the_size_test_of_each_element(parts, share, script):
    body = "".join(f'<div class="box" id="b{i}">{text * count}</div>' for i, (count, text) in enumerate(parts))
    if script:
        body += "<script>var a = 'a long script of the page, counted as text';</script>"
    root = parse_html(f"<html><body>{body}<p>tail text of the page</p></body></html>")
    elements = [e for e in root.iter("div")]
    expected = [e for e in elements if template.fits(e, template.size_limit(root, share))]
    assert template.fitting(root, elements, share) == expected
    assert template.fitting(root, elements[:1], share) == [e for e in elements[:1] if e in expected]


@needs_walk
def test_normalized_length_stops_above_stop_with_a_lower_bound():
    root = parse_html("<html><body><p>hello   world</p><div> again and again </div></body></html>")
    whole = native.walk.normalized_length(root, True)
    assert whole == len("hello world again and again")
    for stop in range(0, whole + 3):
        counted = native.walk.normalized_length(root, True, stop)
        assert counted == whole if whole <= stop else stop < counted <= whole


def test_fitting_without_the_walk_is_the_size_test(monkeypatch):
    root = parse_html("<html><body><div>short</div><div>" + "long text " * 30 + "</div><p>more</p></body></html>")
    elements = list(root.iter("div"))
    fast = template.fitting(root, elements)
    monkeypatch.setattr(native, "walk", None)
    assert template.fitting(root, elements) == fast == [elements[0]]


# --- container rules tested over the blocks' elements and their ancestors only (match_rules_over) --------------------

from templater import blocks as blocks_mod  # noqa: E402
from templater.datatypes import Page  # noqa: E402
from templater.headline import find_headline  # noqa: E402
from templater.template import contains  # noqa: E402
from test_speedups import rules_of, sample_pages  # noqa: E402


def container_mask_by_lxml(seg, rules):
    """container_mask's definition: every element the XPaths select (lxml), less those holding the headline."""
    from lxml import etree
    elements = [e for xpath in rules for e in xpath(seg.root) if isinstance(e, etree._Element)]
    headline = find_headline(seg) if elements else None
    if headline is not None:
        elements = [e for e in elements if not contains(e, seg.blocks[headline].element)]
    return extract._inside_plain(seg, elements)


@needs_walk
def test_container_mask_over_the_blocks_is_lxmls_on_the_samples():
    checked = 0
    for seg in sample_pages():
        rules = tuple(rules_of(seg.root))
        for start in range(0, len(rules), 3):
            chosen = rules[start:start + 3]
            fast = extract.container_mask(seg, chosen, extract.rule_forms(chosen))
            assert fast.tolist() == container_mask_by_lxml(seg, chosen).tolist()
            assert extract.container_mask(seg, chosen, extract.rule_forms(chosen),
                                          headings=headings_of(seg)).tolist() == fast.tolist()
            checked += bool(fast.any())
    assert checked


def headings_of(seg, settings=None):
    """match_regions' mask of the blocks that may be a headline: the HEADING_PATH bits of a template's path tests."""
    from templater.config import LearnSettings
    settings = settings or LearnSettings()
    paths = extract.PathTests(frozenset(), {}, settings)
    assert paths.headline_paths
    return (paths.codes(seg) & extract.HEADING_PATH).astype(bool)


@needs_walk
@settings(max_examples=200, deadline=None)
@given(hst.lists(hst.tuples(hst.sampled_from(["div", "p", "section", "span", "ul"]),
                            hst.text(alphabet=hst.sampled_from(" \t\nabc-"), max_size=8),
                            hst.sampled_from(["", "text", "<p>inner</p>", "<span>x</span>", "<div><p>deep</p></div>"])),
                 max_size=10),
       hst.sampled_from(["a", "b", "abc", "c-a"]))
def test_container_mask_over_the_blocks_is_lxmls_on_generated_markup(elements, token):
    from lxml import etree
    body = "".join(f'<{tag} class="{cls}" id="{cls.strip()}">{inner}</{tag}>' for tag, cls, inner in elements)
    markup = f"<html><body><h1>Title of it</h1>{body}<div class='{token} z' id='{token}'><p>y</p></div></body></html>"
    seg = blocks_mod.segment(parse_html(markup), Page("p", "https://a.example/p", markup))
    rules = tuple(etree.XPath(p) for p in (
        f"//*[@id='{token}']", f"//div[contains(concat(' ', normalize-space(@class), ' '), ' {token} ')]",
        f"//span[contains(concat(' ', normalize-space(@class), ' '), ' {token} ')]",
        f"//p[contains(concat(' ', normalize-space(@class), ' '), ' {token} ')][{template.RELATED_SIZE_TEST}]",
        "//*[@id='a']/ancestor-or-self::*[following-sibling::*][1]/following-sibling::*"))
    fast = extract.container_mask(seg, rules, extract.rule_forms(rules))
    assert fast.tolist() == container_mask_by_lxml(seg, rules).tolist()
    assert extract.container_mask(seg, rules, extract.rule_forms(rules), headings=headings_of(seg)).tolist() == \
        fast.tolist()  # (the headline looked for only where a rule's element holds a heading)
    found = native.walk.match_rules_over(seg.blocks, extract.rule_forms(rules).fast)
    whole = native.walk.match_rules(seg.root, extract.rule_forms(rules).fast)
    for over, every in zip(found, whole):  # a subset of the whole walk's elements, each once
        assert len({id(e) for e in over}) == len(over) and {id(e) for e in over} <= {id(e) for e in every}


# --- the name line's test by str.split against its pattern (extract._names) -----------------------------------------

def names_by_pattern(text, name):
    found = extract._NAME_LINE.match(text)
    return found is not None and found.group(1).lower() == name


NAME_CHARS = "ab-\u2010\u2013\u2015\u2016 \t\n\u00a0\u2028\u3000\x1c\x1f\u0130K\u212a\u03a3("


@settings(max_examples=2000, deadline=None)
@given(hst.text(alphabet=hst.sampled_from(NAME_CHARS) | hst.characters(), max_size=14),
       hst.sampled_from(["ab", "a", "b-a", "i\u0307", "k", "\u03c3", "-"]))
def test_names_by_split_is_the_pattern(text, name):
    assert extract._names(text, name) == names_by_pattern(text, name)
    seg_text = f"{name} - {text}"
    assert extract._names(seg_text, name) == names_by_pattern(seg_text, name)


@settings(max_examples=2000, deadline=None)
@given(hst.text(alphabet=hst.sampled_from(NAME_CHARS) | hst.characters(), max_size=14) | hst.none())
def test_name_of_by_split_is_the_pattern(text):
    found = extract._LEADING_TERM.match(text or "")
    assert extract._name_of(text) == (found.group(1).lower() if found else None)


def test_name_line_finds_the_manual_pages_name_line():
    markup = ("<html><head><title>git-stage(1) Manual Page</title></head><body><h1>git-stage(1) Manual Page</h1>"
              "<p>git-stage \u2013 Add file contents to the staging area</p><p>git-stage - said again later</p>"
              "<div><p>The text of the page goes on here.</p></div></body></html>")
    seg = blocks_mod.segment(parse_html(markup), Page("p", "https://a.example/p", markup))
    every = np.ones(len(seg.blocks), dtype=bool)
    assert extract.name_line(seg, every).tolist() == [False, True, False, False]
    assert not extract.name_line(seg, ~every).any()
    later = every.copy()
    later[1] = False
    assert not extract.name_line(seg, later).any()  # the first line naming the page is the name line, or none


def name_line_by_candidates(seg, candidates, settings):
    """extract.name_line as it was written first: the candidates looked at for a name line, then the heading."""
    out = np.zeros(len(seg.blocks), dtype=bool)
    name = extract._name_of(seg.title)
    if name is None:
        return out
    if not any(extract._names(seg.blocks[i].text, name) for i in np.flatnonzero(candidates).tolist()):
        return out
    heading = next((b.index for b in seg.blocks if b.tag in settings.heading_tags
                    and extract._name_of(b.text) == name), None)
    if heading is None:
        return out
    for i in range(heading + 1, min(heading + 1 + settings.name_line_blocks, len(seg.blocks))):
        if extract._names(seg.blocks[i].text, name):
            out[i] = bool(candidates[i])
            break
    return out


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["h1", "h2", "p", "div", "li"]),
                          st.sampled_from(["git-stage(1) Manual", "git-stage - Add files", "Git-Stage \u2013 more",
                                           "other - words here", "git-stage", "text of the page"])),
                min_size=1, max_size=12),
       st.sampled_from(["git-stage(1) Manual Page", "Other", ""]), st.randoms(use_true_random=False),
       st.sampled_from([1, 3]))
def test_name_line_found_once_a_page_is_the_candidates_definition(parts, title, random, window):
    from templater.config import LearnSettings
    body = "".join(f"<{tag}>{text}</{tag}>" for tag, text in parts)
    markup = f"<html><head><title>{title}</title></head><body>{body}</body></html>"
    seg = blocks_mod.segment(parse_html(markup), Page("p", "https://a.example/p", markup))
    used = LearnSettings(name_line_blocks=window)
    for _ in range(3):  # several candidate sets on one page: the line is found once
        candidates = np.array([random.random() < 0.6 for _ in seg.blocks], dtype=bool)
        assert extract.name_line(seg, candidates, used).tolist() == \
            name_line_by_candidates(seg, candidates, used).tolist()
    codes = extract.PathTests(frozenset(), {}, used).codes(seg)  # the headings read from the path tests' bits
    assert extract._name_line_of(seg, used, codes) == extract._name_line_of(seg, used)


# --- the content region's positional XPath walked in C (_walk.first_on_path) ------------------------------------------

def region_by_lxml(root, path):
    from lxml import etree
    return [e for e in etree.XPath(path)(root) if isinstance(e, etree._Element)][:1]


@needs_walk
def test_first_on_path_is_lxmls_on_the_samples():
    checked = 0
    for seg in sample_pages():
        paths = {blocks_mod._element_path(e, {}) for e in seg.root.iter() if isinstance(e.tag, str)}
        paths |= {"/".join(p.split("/")[:k]).replace("[1]", "") for p in paths for k in (3, 4, 5)}
        for path in sorted(paths)[:300]:
            steps = extract.plain_steps(path)
            if steps is None:
                continue
            found = native.walk.first_on_path(seg.root, steps)
            expected = region_by_lxml(seg.root, path)
            assert len(found) == len(expected) and all(a is b for a, b in zip(found, expected)), path
            checked += 1
    assert checked > 100


@needs_walk
@settings(max_examples=300, deadline=None)
@given(nested_markup(), hst.lists(hst.tuples(hst.sampled_from(["div", "p", "span", "section", "ul", "li", "a"]),
                                           hst.integers(min_value=0, max_value=3)), min_size=1, max_size=5))
def test_first_on_path_is_lxmls_on_generated_markup(body, tail):
    root = parse_html(f"<html><body>{body}</body></html>")
    if root is None:
        return
    path = "/html/body" + "".join(f"/{name}[{k}]" if k else f"/{name}" for name, k in tail)
    steps = extract.plain_steps(path)
    assert steps is not None
    found = native.walk.first_on_path(root, steps)
    expected = region_by_lxml(root, path)
    assert len(found) == len(expected) and all(a is b for a, b in zip(found, expected))


def test_plain_steps_take_only_plain_positional_paths():
    assert extract.plain_steps("/html/body/div[2]/div") == (("html", 0), ("body", 0), ("div", 2), ("div", 0))
    for path in ("//div", "/html/body/div[0]", "/html/body/div[last()]", "/html/body/*", "html/body", "",
                 "/html/body/div[@id='x']", "/html/body/div[1\u0663]"):
        assert extract.plain_steps(path) is None


# --- repeats looked for among texts of a shared length only (extract.drop_repeats) -----------------------------------

def drop_repeats_plain(seg, keep, trusted=None, settings_used=LearnSettings()):
    """drop_repeats' definition: every long kept block's text against those before it."""
    from templater import fallback
    seen = set()
    long = keep & (seg.block_chars() >= settings_used.repeat_min_chars)
    repeat = np.zeros(len(keep), dtype=bool)
    for i in np.flatnonzero(long):
        repeat[i] = seg.blocks[i].text in seen
        seen.add(seg.blocks[i].text)
    if not repeat.any():
        return keep.copy()
    if trusted is not None and trusted.any():
        repeat &= ~(fallback.protected_blocks(seg, trusted, settings=settings_used)
                    | extract.lone_repeats(seg, long, repeat, trusted))
    return keep & ~repeat


@settings(max_examples=300, deadline=None)
@given(hst.lists(hst.tuples(hst.sampled_from(["x" * 6, "y" * 6, "xy" * 3, "z" * 7, "ab", "é" * 6]),
                            hst.booleans(), hst.booleans()), max_size=14))
def test_drop_repeats_is_its_definition(parts):
    body = "".join(f"<p>{text}</p>" for text, _, _ in parts) or "<p>none</p>"
    seg = segment_markup(f"<main>{body}</main>")
    if seg is None:
        return
    n = len(seg.blocks)
    keep = np.array([k for _, k, _ in parts][:n] + [True] * (n - len(parts)), dtype=bool)
    trusted = np.array([t for _, _, t in parts][:n] + [False] * (n - len(parts)), dtype=bool)
    short = LearnSettings(repeat_min_chars=6)
    for used in (short, LearnSettings()):
        assert extract.drop_repeats(seg, keep, trusted, used).tolist() == \
            drop_repeats_plain(seg, keep, trusted, used).tolist()
        assert extract.drop_repeats(seg, keep, None, used).tolist() == drop_repeats_plain(seg, keep, None, used).tolist()


# --- the comment anchors' rule without XPath (extract._anchor_elements) ------------------------------------------------

ANCHOR = "//*[@id='{}']/ancestor-or-self::*[following-sibling::*][1]/following-sibling::*"


@needs_walk
@settings(max_examples=300, deadline=None)
@given(hst.lists(hst.sampled_from(["<a id='c'></a>", "<div>", "</div>", "<p>text</p>", "<!-- note -->",
                                   "<section><h2><a id='c'>x</a></h2></section>", "<span id='c'>y</span>", "<?pi x?>"]),
                 max_size=14))
def test_anchor_elements_are_xpaths(pieces):
    from lxml import etree
    root = parse_html(f"<html><body>{''.join(pieces)}</body></html>")
    if root is None:
        return
    selected = etree.XPath(ANCHOR.format("c"))(root)  # (held: the same node gives the same proxy while it lives)
    found = extract._anchor_elements(root, "c")
    assert found is not None and {id(e) for e in found} == {id(e) for e in selected}
    seg = blocks_mod.segment(root, Page("p", "https://a.example/p", ""))
    rules = (etree.XPath(ANCHOR.format("c")),)
    forms = extract.rule_forms(rules)
    assert forms.anchors and extract.container_mask(seg, rules, forms).tolist() == \
        container_mask_by_lxml(seg, rules).tolist()
