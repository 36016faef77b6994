"""templater.document: the headline apart, the body's structure read from the kept blocks' elements, and its
renderings (text, Markdown that a Markdown parser reads back as such, clean HTML)."""

import json
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lxml import etree
from markdown_it import MarkdownIt

from templater import document, pipeline
from templater.blocks import segment
from templater.config import BLOCK_TAGS
from templater.extract import extract_page
from templater.parse import parse_html
from templater.datatypes import Page

from conftest import SAMPLES

PAGE = """<html><head><title>A tale of two tables - Example News</title>
<meta property="og:title" content="A tale of two tables"></head><body>
<nav><a href="/">Home</a></nav>
<article>
<h1>A tale of two tables</h1>
<p>First paragraph with a <a href="/x">link</a> in it.</p>
<h2>Code</h2>
<pre>def f(x):
    if x:
        return 1
    return 2</pre>
<ul><li>one</li><li>two<ul><li>two and a half</li></ul></li></ul>
<ol><li>first</li><li>second</li></ol>
<table><tr><th>Name</th><th>Size</th></tr><tr><td>boolean</td><td>1 byte</td></tr>
<tr><td>int | long</td><td>4 bytes</td></tr></table>
<blockquote><p>Quoted words.</p></blockquote>
<p>Last * paragraph_ with [brackets] and #hash.</p>
</article></body></html>"""


def doc_of(markup: str, *, links: bool = False, url: str = "https://example.org/news/a.html"):
    root = parse_html(markup)
    seg = segment(root, Page(id="a", url=url, html=markup))
    return seg, extract_page(seg, None, method="none", links=links)


def test_the_headline_is_the_title_and_leaves_the_text():
    _, result = doc_of(PAGE)
    assert result.title == "A tale of two tables"
    assert "A tale of two tables" not in result.text.split("\n")
    assert result.to_json()["title"] == "A tale of two tables"


def test_text_keeps_code_lines_table_rows_and_one_paragraph_a_line():
    _, result = doc_of(PAGE)
    lines = result.text.split("\n")
    assert "def f(x):\n    if x:\n        return 1\n    return 2" in result.text
    assert "Name\tSize" in lines and "boolean\t1 byte" in lines and "int | long\t4 bytes" in lines
    assert "First paragraph with a link in it." in lines
    assert ["one", "two", "two and a half", "first", "second"] == lines[lines.index("one"):lines.index("second") + 1]


def test_the_document_names_each_structure():
    _, result = doc_of(PAGE)
    kinds = [(n.kind, n.level, n.ordered, n.quote) for n in result.document.nodes]
    assert ("heading", 2, False, 0) in kinds
    assert ("item", 2, False, 0) in kinds  # "two and a half", one list deeper
    assert ("item", 1, True, 0) in kinds
    assert ("paragraph", 0, False, 1) in kinds  # the quote
    table = next(n for n in result.document.nodes if n.kind == "table")
    assert table.header and table.rows == (("Name", "Size"), ("boolean", "1 byte"), ("int | long", "4 bytes"))


def test_markdown_parses_back_as_headings_lists_tables_fences_and_quotes():
    _, result = doc_of(PAGE, links=True)
    markdown = document.to_markdown(result.document, links=True)
    tokens = MarkdownIt("commonmark").enable("table").parse(markdown)
    types = [t.type for t in tokens]
    headings = [(t.tag, tokens[i + 1].content) for i, t in enumerate(tokens) if t.type == "heading_open"]
    assert headings == [("h1", "A tale of two tables"), ("h2", "Code")]
    fence = next(t for t in tokens if t.type == "fence")
    assert fence.content == "def f(x):\n    if x:\n        return 1\n    return 2\n"
    assert types.count("bullet_list_open") == 2 and types.count("ordered_list_open") == 1
    assert types.count("table_open") == 1 and types.count("th_open") == 2 and types.count("td_open") == 4
    cells = [tokens[i + 1].content for i, t in enumerate(tokens) if t.type == "td_open"]
    assert cells == ["boolean", "1 byte", "int | long", "4 bytes"]  # the | inside a cell stays in its cell
    assert "blockquote_open" in types
    links = [t.attrs["href"] for t in tokens if t.type == "inline" for t in t.children if t.type == "link_open"]
    assert links == ["https://example.org/", "https://example.org/x"]  # method none keeps the menu too
    last = [t for t in tokens if t.type == "inline"][-1]
    assert "".join(c.content for c in last.children) == "Last * paragraph_ with [brackets] and #hash."
    assert not any(t.type in ("em_open", "strong_open") for t in tokens if t.type == "inline" for t in t.children)


def test_links_only_when_asked_for():
    _, result = doc_of(PAGE)
    assert "](" not in document.to_markdown(result.document)
    assert "<a href" not in document.to_html(result.document)


def test_html_rendering_is_clean_and_nested():
    _, result = doc_of(PAGE, links=True)
    page = document.to_html(result.document, links=True)
    xml = page.split("\n", 1)[1].replace('<meta charset="utf-8">', "<meta/>").replace("<br>", "<br/>")
    root = etree.fromstring(xml, etree.XMLParser())  # well-formed but for the void tags: every tag closed
    assert root.findtext("head/title") == "A tale of two tables"
    article = root.find("body/article")
    assert [e.tag for e in article][:4] == ["h1", "p", "p", "h2"]  # the menu's Home, the first paragraph
    assert article.find("pre/code").text.startswith("def f(x):\n    if x:")
    assert article.find("ul/li/ul/li").text.strip() == "two and a half"
    assert [c.text for c in article.find("table/thead/tr")] == ["Name", "Size"]
    assert article.find("blockquote/p").text == "Quoted words."
    assert [a.get("href") for a in article.iterfind("p/a")] == ["https://example.org/", "https://example.org/x"]


def test_a_pre_with_br_and_markup_keeps_its_lines_and_indentation():
    markup = ("<html><body><pre><span>  a = 1</span><br>  b = <b>2</b>\n\n\tc</pre>"
              "<p>A paragraph long enough to keep around here.</p></body></html>")
    _, result = doc_of(markup)
    assert result.text.split("\n")[:4] == ["  a = 1", "  b = 2", "", "\tc"]


def test_layout_tables_and_one_cell_rows_stay_paragraphs():
    markup = ("<html><body><table><tr><td><h1>Site</h1></td></tr><tr><td><p>Para one.</p><p>Para two.</p>"
              "</td><td>side</td></tr></table><table><tr><td>only</td></tr><tr><td>cells</td></tr></table>"
              "</body></html>")
    _, result = doc_of(markup)
    assert result.title == "Site"  # no declared title: the first <h1>
    assert [n.kind for n in result.document.nodes] == ["paragraph"] * 5
    assert result.text.split("\n") == ["Para one.", "Para two.", "side", "only", "cells"]


def test_stray_cells_and_empty_pages_do_not_crash():
    _, result = doc_of("<html><body><td>a cell</td><th>no table</th><li>loose item</li></body></html>")
    assert result.text.split("\n") == ["a cell", "no table", "loose item"]
    seg = segment(parse_html("<html><body><p>x</p></body></html>"), Page(id="b", url="u", html=""))
    empty = document.build_document(seg, np.zeros(len(seg.blocks), dtype=bool))
    assert empty.nodes == () and document.to_text(empty.nodes) == ""
    assert document.to_markdown(empty) == "\n" and "<article>" in document.to_html(empty)


def test_site_names_leave_declared_titles():
    assert document.strip_site_name("Smear tactics - Los Angeles Times") == "Smear tactics"
    assert document.strip_site_name("Senate passes the budget | Politics | Site") == "Senate passes the budget"
    assert document.strip_site_name("json — JSON encoder and decoder — Python 3.11 docs") == \
        "json — JSON encoder and decoder"
    assert document.strip_site_name("Star Wars Jedi: Fallen Order review - shoots for the moon, lands among the "
                                    "stars") == "Star Wars Jedi: Fallen Order review - shoots for the moon, lands " \
                                                "among the stars"
    assert document.strip_site_name("FOXNews.com - Paula Abdul Breaks Nose", from_start=True) == \
        "Paula Abdul Breaks Nose"
    assert document.strip_site_name("No separator here") == "No separator here"


def test_a_section_name_the_title_carries_is_not_the_headline():
    markup = ("<html><head><title>Senate passes the budget after a long night - News - Example</title></head>"
              "<body><h2>News</h2><p>The senate passed the budget after a long night of votes.</p></body></html>")
    _, result = doc_of(markup)
    assert result.title == "Senate passes the budget after a long night"
    assert result.text.split("\n")[0] == "News"


def test_without_a_heading_the_declared_title_is_the_title():
    _, result = doc_of("<html><head><title>Plain page | Site</title></head><body><p>Body text here.</p></body>"
                       "</html>")
    assert result.title == "Plain page" and result.text == "Body text here."
    _, result = doc_of("<html><body><p>Body text here.</p></body></html>")
    assert result.title is None and result.to_json()["title"] is None


def test_the_one_h1_is_the_headline_where_the_declared_titles_say_otherwise():
    markup = ("<html><head><title>Robots cost jobs | Example</title><meta property='og:title' content='Robots cost "
              "jobs'></head><body><nav><a href='/'>Example</a></nav><h1>Each robot in the workforce costs six "
              "jobs, a study says</h1><p>The study counted jobs in many towns over ten years.</p></body></html>")
    _, result = doc_of(markup)
    assert result.title == "Each robot in the workforce costs six jobs, a study says"
    assert "costs six jobs" not in result.text and result.text.endswith("The study counted jobs in many towns over ten years.")
    logo = markup.replace("<h1>Each", "<h2>Each").replace("says</h1>", "says</h2>").replace(
        "<nav><a href='/'>Example</a></nav>", "<h1><a href='/'>Example</a></h1>")
    assert doc_of(logo)[1].title == "Robots cost jobs"  # a linked <h1> is the site's logo


def test_the_headline_is_the_h1_not_the_same_title_in_a_related_stories_list_before_it():
    """A page's related stories list its own story (a linked card, an <h3>) before its headline: the <h1> saying
    the whole title is the headline, the card stays where it is."""
    card = ("<ul class='related'><li><a href='/other'><h3>Other news of the week</h3></a></li><li><h3><a href='/a'>"
            "Phones shipped with malware</a></h3></li><li><h4>Phones shipped with malware</h4></li></ul>")
    markup = (f"<html><head><title>Phones shipped with malware</title></head><body>{card}<article><h1>Phones "
              "shipped with malware</h1><p class='byline'>By Lee Bell</p><p>The phones carried the malware from "
              "the factory, a security firm found.</p></article></body></html>")
    seg, result = doc_of(markup)
    assert result.title == "Phones shipped with malware" and seg.blocks[document.find_title(seg)[1]].tag == "h1"
    assert result.author == "Lee Bell"
    plain = markup.replace("<a href='/a'>Phones shipped with malware</a>", "Phones shipped with malware")
    seg, _ = doc_of(plain)
    assert seg.blocks[document.find_title(seg)[1]].tag == "h1"  # the highest level among headings not made of links


def test_a_title_part_spelling_the_host_is_the_site_name():
    markup = ("<html><head><title>Joy the Baker - Papa Says</title></head><body><h1><a href='/'>Joy the Baker</a>"
              "</h1><h3><a href='/papa-says/'>Papa Says</a></h3><p>My father says many things.</p></body></html>")
    assert doc_of(markup, url="http://joythebaker.com/2012/10/papa-says/")[1].title == "Papa Says"
    assert doc_of(markup, url="http://example.com/2012/10/papa-says/")[1].title == "Joy the Baker"
    assert document._names_site("The Facebook Blog", document._host_labels("http://blog.facebook.com/a"))
    assert not document._names_site("Facebook opens its new office", document._host_labels("http://facebook.com/"))


# --- the samples ------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def samples(tmp_path_factory):
    """Every sample page: (segmented page, its extraction with links) after a run."""
    db = pipeline.open_store(tmp_path_factory.mktemp("document") / "samples.db")
    pipeline.ingest(db, [SAMPLES / "pages.jsonl.gz"])
    pipeline.build(db)
    from store import pages as page_store

    index = pipeline.TemplateIndex(db)
    out = []
    for stored in page_store.load_pages(db, [pid for pid, _, _ in page_store.iter_page_keys(db)]):
        seg = pipeline.stored_segment(stored)
        out.append((seg, extract_page(seg, index.find(seg, stored.site), site=stored.site, links=True)))
    return out


def _kept_elements(seg, result):
    return {id(seg.blocks[i].element) for i in result.kept}


def _is_kept_under(element, seg, result) -> bool:
    kept = _kept_elements(seg, result)
    return any(id(e) in kept for e in element.iter())


def test_every_multi_line_pre_of_the_samples_keeps_its_lines(samples):
    checked = 0
    for seg, result in samples:
        text = "\n" + "\n".join(line for line in result.text.split("\n") if line.strip()) + "\n"
        for pre in seg.root.iter("pre"):
            own = [line.rstrip() for line in "".join(pre.itertext()).replace("\xa0", " ").split("\n")]
            own = [line for line in own if line.strip()]
            if len(own) < 2 or not _is_kept_under(pre, seg, result):
                continue
            assert "\n" + "\n".join(own) + "\n" in text, (seg.page.id, own[:2])  # its lines, as whole lines
            checked += 1
    assert checked >= 100  # the samples hold well over a hundred multi-line code blocks


def _cell_text(cell) -> str:
    """A cell's text as a reader sees it: a <br> or a block-level element is a space."""
    parts: list[str] = []

    def walk(element) -> None:
        spaced = element.tag == "br" or element.tag in BLOCK_TAGS
        parts.append(" " if spaced else "")
        parts.append(element.text or "")
        for child in element:
            walk(child)
            parts.append(child.tail or "")
        parts.append(" " if spaced else "")

    walk(cell)
    return " ".join("".join(parts).split())


def test_every_table_of_the_samples_keeps_its_rows(samples):
    checked = 0
    for seg, result in samples:
        lines = set(result.text.split("\n"))
        for table in seg.root.iter("table"):
            if table.find(".//table") is not None or table.find(".//pre") is not None:
                continue
            for row in table.iter("tr"):
                cells = [_cell_text(c) for c in row if c.tag in ("td", "th")]
                if sum(1 for c in cells if c) < 2 or not _is_kept_under(row, seg, result):
                    continue
                if not all(_is_kept_under(c, seg, result) for c, text in zip(
                        [c for c in row if c.tag in ("td", "th")], cells) if text):
                    continue  # a cell the extraction dropped
                assert "\t".join(cells).rstrip("\t") in {line.rstrip("\t") for line in lines}, (seg.page.id, cells)
                checked += 1
    assert checked >= 15  # the kept rows of two or more cells the samples hold (most of their tables are one cell wide)


def test_the_samples_markdown_parses_as_its_structure(samples):
    parser = MarkdownIt("commonmark").enable("table")
    for seg, result in samples:
        nodes = result.document.nodes
        tokens = parser.parse(document.to_markdown(result.document, links=True))
        types = [t.type for t in tokens]
        assert types.count("heading_open") == 1 + sum(n.kind == "heading" for n in nodes), seg.page.id
        assert types.count("fence") == sum(n.kind == "code" for n in nodes), seg.page.id
        assert types.count("table_open") == sum(n.kind == "table" for n in nodes), seg.page.id
        assert types.count("list_item_open") == sum(n.kind == "item" for n in nodes), seg.page.id
        fences = [t.content.rstrip("\n") for t in tokens if t.type == "fence"]
        assert fences == [n.text for n in nodes if n.kind == "code"], seg.page.id


# --- properties ---------------------------------------------------------------------------------------------------

_WORDS = st.text(alphabet=st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp", "Zs")), min_size=1,
                 max_size=12)


@settings(max_examples=300, deadline=None)
@given(st.lists(_WORDS, min_size=1, max_size=8))
def test_md_escape_makes_any_line_literal(words):
    text = " ".join(words)
    tokens = MarkdownIt("commonmark").enable("table").parse(document.md_escape(text))
    assert [t.type for t in tokens] == ["paragraph_open", "inline", "paragraph_close"]
    children = tokens[1].children
    assert all(c.type == "text" for c in children), children
    assert "".join(c.content for c in children) == text


@given(st.text(max_size=300))
def test_file_names_are_safe_and_distinct(page_id):
    name = document.file_name(page_id, "md")
    assert re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*\.md", name) and len(name) <= 100
    assert name != document.file_name(page_id + "x", "md")


def test_an_extracted_page_is_not_kept_alive_by_the_title_cache():
    """find_title remembers the last page's answer weakly: once its extraction is done, the page and its parsed tree
    go at once (freed while still in the cache), and asking again for a live page still gives the same answer."""
    import gc
    import weakref

    page = Page("p", "https://example.org/news/a.html", PAGE.encode("utf-8"), None, "utf-8")
    seg = segment(parse_html(PAGE), page)
    first = document.find_title(seg)
    assert document.find_title(seg) == first == ("A tale of two tables", first[1])
    extract_page(seg)
    held = weakref.ref(seg)
    enabled = gc.isenabled()
    gc.disable()  # reference counting alone must free it (no cycle left for the collector)
    try:
        del seg
        assert held() is None
    finally:
        if enabled:
            gc.enable()


# --- declared_titles: the social titles' <meta> read by walking <html>/<head>, against the XPath it stands for ------
DECLARED_TITLES_XPATH = etree.XPath(
    "/html/head/meta[@property='og:title' or @name='og:title' or @name='twitter:title' "
    "or @property='twitter:title']/@content")

META_ATTRIBUTES = st.lists(st.tuples(st.sampled_from(["property", "name", "content", "itemprop"]),
                                     st.sampled_from(["og:title", "twitter:title", "og:site_name", "", "A  title",
                                                      "T\u00edtulo \u2014 site"])), max_size=4)


def test_declared_titles_are_what_the_xpath_selects_on_the_samples():
    import gzip
    import json

    with gzip.open(SAMPLES / "pages.jsonl.gz", "rt", encoding="utf-8") as lines:
        records = [json.loads(line) for line in lines if line.strip()]
    found = 0
    for record in records:
        root = parse_html(record["html"])
        if root is not None:
            assert document.declared_titles(root) == [str(t) for t in DECLARED_TITLES_XPATH(root)]
            found += bool(document.declared_titles(root))
            seg = segment(root, Page(record["id"], record["url"], record["html"]))  # the walk's <meta>s
            assert seg.declared is None or document.declared_titles(root, seg.declared[0]) == document.declared_titles(
                root)
    assert found > 5


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["head", "body", "div"]), st.lists(META_ATTRIBUTES, max_size=4)),
                min_size=1, max_size=3), st.sampled_from(["html", "div"]))
def test_declared_titles_are_what_the_xpath_selects(parts, top):
    """Generated documents: metas in <head> and elsewhere, several <head>s (as an XML tree may have), attributes in
    any order, a content missing or empty, a root element that is not <html>; from the root or any element."""
    root = etree.Element(top)
    for parent_tag, metas in parts:
        parent = etree.SubElement(root, parent_tag)
        for attributes in metas:
            meta = etree.SubElement(parent, "meta")
            for name, value in attributes:
                meta.set(name, value)
    for element in root.iter():
        assert document.declared_titles(element) == [str(t) for t in DECLARED_TITLES_XPATH(element)]
        assert document.declared_titles(element, list(element.iter("meta", "link", "time"))) == [
            str(t) for t in DECLARED_TITLES_XPATH(element)]


def test_declared_titles_skip_namespaced_elements_and_attributes():
    root = etree.fromstring('<html xmlns:x="urn:x"><head><x:meta property="og:title" content="no"/>'
                            '<meta x:property="og:title" content="no"/><meta name="twitter:title" x:content="no"/>'
                            '<meta property="og:title" content="yes"/></head></html>')
    assert document.declared_titles(root) == [str(t) for t in DECLARED_TITLES_XPATH(root)] == ["yes"]
    assert document.declared_titles(root, list(root.iter("meta", "{*}meta", "link"))) == ["yes"]
    for markup in ('<h:html xmlns:h="urn:h"><h:head><meta property="og:title" content="no"/></h:head></h:html>',
                   '<html xmlns="urn:d"><head><meta property="og:title" content="no"/></head></html>'):
        root = etree.fromstring(markup)
        assert document.declared_titles(root) == [str(t) for t in DECLARED_TITLES_XPATH(root)] == []
        assert document.declared_titles(root, list(root.iter("{*}meta"))) == []


def _md_escape_by_regexes(text: str) -> str:
    """md_escape's definition as three regex substitutions over the whole text (what md_escape, which skips those
    that cannot match, must equal)."""
    text = re.sub(r"(?<![^\W_])_|_(?![^\W_])", r"\\_", re.sub(r"([\\`*\[\]<>|])", r"\\\1", text))
    return re.sub(r"^(#{1,6}(?=\s|$)|[-+=](?=\s|$)|[-=_]{3,}|(\d+)([.)])(?=\s|$)|~~~)", document._escape_line_start,
                  text)


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet="ab1_ -+=#~.)\n\\`*[]<>|éİ_\u00a0", max_size=16) | st.text(max_size=16))
def test_md_escape_is_its_regex_definition(text):
    assert document.md_escape(text) == _md_escape_by_regexes(text)


# --- the JSON line: json_line (its strings escaped by the compiled json_string) against json.dumps -------------------

_JSON_TEXTS = st.text(alphabet=st.characters(max_codepoint=0x7f), max_size=40) | st.text(max_size=40) | st.text(
    alphabet="\\\"\b\f\n\r\t\x00\x1f\x7f a\u00e9\u2028\u20ac\U0001f600", max_size=40)


@settings(max_examples=500, deadline=None)
@given(_JSON_TEXTS)
def test_compiled_json_string_is_json_s_escape(text):
    from json.encoder import py_encode_basestring

    from templater import native

    if native.numeric is None:
        pytest.skip("the compiled part is not built")
    assert native.numeric.json_string(text) == py_encode_basestring(text) == json.dumps(text, ensure_ascii=False)


def test_compiled_json_string_takes_every_character_and_only_strings():
    from templater import native

    if native.numeric is None:
        pytest.skip("the compiled part is not built")
    every = "".join(map(chr, range(0x110000)))  # lone surrogates too: json passes them as they are
    assert native.numeric.json_string(every) == json.dumps(every, ensure_ascii=False)
    for text in ("", "\x00", "\ud800", "\U0010ffff\n"):
        assert native.numeric.json_string(text) == json.dumps(text, ensure_ascii=False)
    with pytest.raises(TypeError):
        native.numeric.json_string(b"bytes")


_JSON_VALUES = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | _JSON_TEXTS,
                            lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_JSON_TEXTS, inner, max_size=4),
                            max_leaves=12)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(_JSON_TEXTS, _JSON_VALUES, max_size=8))
def test_json_line_is_json_dumps(record):
    from templater import native

    expected = json.dumps(record, ensure_ascii=False)
    assert document.json_line(record) == expected
    saved = native.numeric
    native.numeric = None  # the pure path
    try:
        assert document.json_line(record) == expected
    finally:
        native.numeric = saved


# --- a layout table found by lxml's walk of the descendants, as the XPath says -------------------------------------

from test_speedups import nested_markup  # noqa: E402


@settings(max_examples=300, deadline=None)
@given(nested_markup())
def test_layout_table_is_the_xpath(body):
    root = parse_html(f"<html><body><table>{body}</table><table><h3>x</h3></table>{body}</body></html>")
    if root is None:
        return
    xpath = etree.XPath(f"boolean({document.LAYOUT_TABLE_MARKS})")
    tables = list(root.iter("table"))
    assert tables
    for table in tables:
        assert document.layout_table(table) == xpath(table)


# --- the headline's search in C (document._title_blocks) and the host's labels once a site, against their definitions --
TITLE_TEXTS = st.text(alphabet=st.sampled_from("aAbB \u0130i\u0307\u00b6\u00a7\U0001f517-|"), max_size=9)


@settings(max_examples=300, deadline=None)
@given(st.lists(TITLE_TEXTS, min_size=1, max_size=12), st.lists(TITLE_TEXTS, min_size=1, max_size=4),
       st.integers(min_value=0, max_value=12))
def test_title_blocks_are_their_definition(texts, titles, slack):
    """Generated blocks (the permalink marks, U+0130 which lower-cases to two letters, case, spaces) against the forms
    of generated titles: the compiled search, the plain one and the pure path give the same indexes."""
    from templater import native

    markup = "<html><body>" + "".join(f"<p>{t}</p>" for t in texts) + "</body></html>"
    seg = segment(parse_html(markup), Page("p", "https://a.example/p", markup))
    wanted = {t.strip().lower() for t in titles if t.strip()}
    if not wanted or not seg.blocks:
        return
    lengths = {len(w) for w in wanted}
    longest = max(lengths) + len(document.PERMALINK_MARKS) + slack - 6
    plain = document._title_blocks_plain(seg, longest, min(lengths), lengths, wanted)
    assert document._title_blocks(seg, longest, min(lengths), lengths, wanted) == plain
    if native.walk is not None:
        assert native.walk.title_blocks(list(seg.blocks), seg.block_chars(), 9, 1, lengths, wanted, "") is None
        assert native.walk.title_blocks(seg.blocks, seg.block_chars() * 1.0, 9, 1, lengths, wanted, "") is None


def test_headlines_are_the_same_on_the_pure_path(monkeypatch):
    """Every sample page's headline (title and block) found by the compiled search and without it."""
    import gzip

    from templater import native

    with gzip.open(SAMPLES / "pages.jsonl.gz", "rt", encoding="utf-8") as lines:
        records = [json.loads(line) for line in lines if line.strip()]
    segs = [segment(root, Page(r["id"], r["url"], r["html"])) for r in records
            if (root := parse_html(r["html"])) is not None]
    found = [document._find_title(seg) for seg in segs]
    assert sum(index is not None for _, index in found) > 5
    monkeypatch.setattr(native, "walk", None)
    assert [document._find_title(seg) for seg in segs] == found


URL_PARTS = st.sampled_from(["http://", "https://", "HTTP://", "ftp://", "//", "http:/", " http://", "http://\t", ""])
HOST_PARTS = st.lists(st.sampled_from(["www.", "Blog.", "joythebaker", ".com", ".co.uk", ":8080", "user:pw@", "@",
                                       "[::1]", "[", "]", "news", " ", "\t", "\n", "\u00e9", "\uff0e", "-", "."]),
                      max_size=6).map("".join)


@settings(max_examples=500, deadline=None)
@given(URL_PARTS, HOST_PARTS, st.sampled_from(["", "/", "/a/b.html", "?q=1", "#top", "/x?y#z", "\\\\x", " /p"]))
def test_host_labels_once_a_site_are_urlsplits(scheme, host, rest):
    """The labels read from a URL's scheme and netloc (cached by them) are those urlsplit reads from the whole URL,
    and a URL urlsplit refuses is refused alike."""
    url = scheme + host + rest
    try:
        expected = document._host_labels_plain(url)
    except ValueError:
        with pytest.raises(ValueError):
            document._host_labels(url)
        return
    assert document._host_labels(url) == expected
