"""Repeated content is not boilerplate: what a reference site repeats inside its pages' content (an options table,
a caution box, an inherited-members list) survives learning and extraction, chrome around it does not, and the
single-page classifier keeps code, tables and definition lists inside a trusted content region."""

import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from templater.config import REPEAT_MIN_CHARS
from templater.extract import CompiledTemplate, drop_repeats, extract_page, match_regions, match_template, name_line
from templater.fallback import among_own_text, document_contents, in_document_tree, region_chrome, section_anchors
from templater.features import number_tree
from templater.rule_inspect import explain_blocks
from templater.blocks import segment
from templater.parse import parse_html
from templater.config import REGION_CHROME_SHARE, WRAPPER_DEPTH
from templater.template import learn_template
from templater.datatypes import Page, Segmented

from sitegen import (CLASS_REPEATED, COLOPHON, INTERFACE_REPEATED, REPEATED_CONTENT, book_pages, class_pages,
                     feed_html, feed_pages, guide_pages, interface_pages, list_page, reference_html, reference_pages,
                     site_pages, wrapped_pages)


def _template(pages):
    return CompiledTemplate(learn_template([seg for seg, _ in pages], site="manual.example.com/reference/"))


def test_repeated_option_table_caution_box_and_inherited_list_are_kept():
    compiled = _template(reference_pages(6))
    for seg, text in reference_pages(2, start=40):
        result = extract_page(seg, compiled)
        assert result.method == "template"
        for repeated in REPEATED_CONTENT:
            assert repeated in result.text, repeated
        for line in text.split("\n"):  # the headline is the record's title, the rest its text
            assert line == result.title or line in result.text, line
        assert "mode='r'" in result.text and "--verbose input.txt" in result.text  # signature, <pre> example
        for chrome in ("Download", "Copyright Example Manual", "Search"):
            assert chrome not in result.text


def test_the_template_drops_the_chrome_and_says_why():
    compiled = _template(reference_pages(6))
    seg, _ = reference_pages(1, start=50)[0]
    explained = explain_blocks(seg, compiled)
    dropped = {b.text: b for b in explained.blocks if not b.kept}
    assert dropped["Download"].reason in ("drop", "drop-shape")
    assert "learned pages" in dropped["Download"].why and "outside the page's content" in dropped["Download"].why
    assert all(b.why for b in explained.blocks if not b.kept)
    assert not any(b.why for b in explained.blocks if b.kept)


def test_repeated_content_rules_are_not_learned():
    pages = reference_pages(6)
    template = learn_template([seg for seg, _ in pages], site="m")
    samples = " ".join(r.sample for r in template.rules if r.action in ("drop", "drop-shape"))
    for repeated in REPEATED_CONTENT:
        assert repeated not in samples, repeated
    assert "Download" in samples and "Copyright Example Manual" in samples


def test_inside_the_trusted_region_the_classifier_drops_a_share_bar_but_never_code_tables_or_terms():
    compiled = _template(reference_pages(6, share_bar=True))
    seg, _ = reference_pages(1, start=60, share_bar=True)[0]
    allowed, _, trusted = match_template(seg, compiled)
    assert trusted.any()
    explained = explain_blocks(seg, compiled)
    by_text = {b.text: b for b in explained.blocks}
    protected = [b for b in explained.blocks if b.tag in ("pre", "td", "th", "dt", "dd") or "/table/" in b.xpath
                 or "/dl/" in b.xpath]
    assert protected and all(b.kept for b in protected)
    bar = next(b for text, b in by_text.items() if "Twitter" in text)
    assert not bar.kept and bar.reason == "drop" and "links" in bar.why  # the same links on every page


def test_a_region_right_under_body_that_holds_no_chrome_is_trusted():
    def flat(seed):  # the content division right under <body>, as DocBook and asciidoc pages have it
        html, _ = reference_html(seed)
        html = html.replace('<div class="document"><div class="body" role="main">', '<div class="body">')
        html = html.replace("</div></div>\n<div class=\"footer\">", "</div>\n<div class=\"footer\">")
        return segment(parse_html(html), Page(id=f"f{seed}", url=f"https://manual.example.com/r/{seed}.html",
                                              html=html))

    compiled = CompiledTemplate(learn_template([flat(seed) for seed in range(6)], site="m"))
    region = next(r for r in compiled.template.rules if r.action == "content")
    assert region.xpath.count("/") <= WRAPPER_DEPTH and not compiled.region_trusted
    seg = flat(70)
    _, _, trusted = match_template(seg, compiled)
    chars = seg.block_chars()
    assert chars[trusted].sum() > 0.5 * chars.sum()
    texts = [b.text for b, t in zip(seg.blocks, trusted) if t]
    assert not any(t in ("Download", "About | Contact") or t.startswith("Copyright") for t in texts)


# --- where the page's own content is: position in the aligned sequence, region, shape -------------------------

def test_a_feed_of_other_stories_past_the_sites_chrome_is_not_trusted():
    """Inside <article>, after the story and a run of the site's repeated blocks (pager, a "Don't miss" box), a
    feed of other stories that differs on every page is not among the page's own content: the region's trust
    stops at the chrome, and `rules explain` says so for what the classifier then drops."""
    compiled = CompiledTemplate(learn_template([seg for seg, _ in feed_pages(8)], site="daily.example.com/"))
    seg, text = feed_pages(1, start=40)[0]
    allowed, _, own, region = match_regions(seg, compiled)
    paragraphs = [b.index for b in seg.blocks if b.tag == "p" and b.text in text]
    feed = [b.index for b in seg.blocks if "March 2024" in b.text]
    assert paragraphs and feed
    assert own[paragraphs].all() and not own[feed].any()
    assert region[feed].all() and allowed[feed].all()  # in the trusted region, allowed: the classifier decides
    explained = explain_blocks(seg, compiled)
    dropped = [b for b in explained.blocks if b.index in feed and not b.kept]
    assert all("not among the page's own content" in b.why for b in dropped)
    assert all(b.why for b in explained.blocks if not b.kept)  # every drop says which rule or decision, and why
    result = extract_page(seg, compiled)
    assert all(line in result.text or line == result.title for line in text.split("\n"))


def test_a_content_division_under_body_whose_table_of_contents_varies_is_trusted():
    """A DocBook-style chapter (content division right under <body>) opens with a table of contents of links
    that differs on every chapter: the shape rule drops it, and it says nothing of whether the division is the
    page's content (only the site's static blocks inside it do)."""
    compiled = CompiledTemplate(learn_template([seg for seg, _ in guide_pages(8)], site="guide.example.com/"))
    region = next(r for r in compiled.template.rules if r.action == "content")
    assert region.xpath.count("/") <= WRAPPER_DEPTH
    seg, text = guide_pages(1, start=41)[0]
    allowed, _, trusted = match_template(seg, compiled)
    toc = [b.index for b in seg.blocks if b.tag == "dt"]
    chars = seg.block_chars()
    assert toc and not allowed[toc].any() and chars[toc].sum() > REGION_CHROME_SHARE * chars[trusted].sum()
    assert trusted[[b.index for b in seg.blocks if b.tag == "p" and b.text in text]].all()


def test_a_list_of_links_among_the_pages_own_text_is_not_chrome():
    """Sections whose heading a list of links to their pages follows (a toctree): inside the trusted region the
    classifier may not take such a list, between the page's own text, for chrome; the same list with none of the
    page's text after it may be."""
    compiled = CompiledTemplate(learn_template([seg for seg, _ in guide_pages(8)], site="guide.example.com/"))
    seg, text = guide_pages(1, start=42)[0]
    _, _, trusted = match_template(seg, compiled)
    links = np.array([b.tag == "li" for b in seg.blocks])
    assert links.any() and trusted[links].all()
    assert not region_chrome(seg, number_tree(seg), trusted)[links].any()
    result = extract_page(seg, compiled)
    assert all(b.text in result.text for b in seg.blocks if b.tag == "li")
    first_list = int(np.argmax(links))
    ending = trusted.copy()
    ending[first_list + 1:] = False  # the page's text stops at its first list: that list is at the edge
    assert among_own_text(seg, trusted)[first_list] and not among_own_text(seg, ending)[first_list]


def test_repeated_header_cells_of_a_grid_are_content_a_lone_label_is_not():
    """The same "Name | Description" header over each chapter's own short cells is content (varying_rows); the
    same "Advertisement" label alone in its element stays a drop rule."""
    template = learn_template([seg for seg, _ in guide_pages(8)], site="guide.example.com/")
    samples = [r.sample for r in template.rules if r.action in ("drop", "drop-shape")]
    assert "Advertisement" in samples and "Name" not in samples and "Description" not in samples
    seg, _ = guide_pages(1, start=43)[0]
    result = extract_page(seg, CompiledTemplate(template))
    assert "Name\nDescription" in result.text or ("Name" in result.text and "Description" in result.text)
    assert "Advertisement" not in result.text


def test_a_shape_rule_does_not_drop_the_terms_of_the_pages_text():
    """The chapters' tables of contents (links in a <dl>) make a shape rule for their tag path; a chapter whose
    <dl> at that tag path holds its own terms (no links) keeps them (extract.terms_of_text)."""
    compiled = CompiledTemplate(learn_template([seg for seg, _ in guide_pages(8)], site="guide.example.com/"))
    assert any(r.action == "drop-shape" and r.tag_path.endswith("/dl/dt") for r in compiled.template.rules)
    seg, _ = guide_pages(1, start=44, terms=True)[0]
    result = extract_page(seg, compiled)
    terms = [b.text for b in seg.blocks if b.tag == "dt"]
    assert terms and all(t in result.text for t in terms)
    plain, _ = guide_pages(1, start=44)[0]
    explained = explain_blocks(plain, compiled)
    assert all(b.reason == "drop-shape" and "learned pages" in b.why for b in explained.blocks if b.tag == "dt")
    assert all(b.why for b in explained.blocks if not b.kept)


def test_a_sections_one_repeated_line_is_content_a_lone_label_is_not():
    """A chapter's last section, "Colophon", holds the same short line on every chapter: the whole text of a
    section under its heading is what the heading titles (template.section_bodies), not a label of the site's; the
    lone "Advertisement" label stays a drop rule."""
    template = learn_template([seg for seg, _ in guide_pages(8, colophon=True)], site="guide.example.com/")
    samples = [r.sample for r in template.rules if r.action in ("drop", "drop-shape")]
    assert "Advertisement" in samples and COLOPHON not in samples
    seg, _ = guide_pages(1, start=45, colophon=True)[0]
    result = extract_page(seg, CompiledTemplate(template))
    assert "Colophon" in result.text and COLOPHON in result.text and "Advertisement" not in result.text


# --- near-identical reference pages, nested tables of contents, a summary said again -------------------------

def test_near_identical_interface_pages_keep_the_content_they_repeat():
    """An API reference's interface pages are nearly the same page: the same notes, the same summary tables' header
    cells and details labels around a name, a description and a method. Their <main> is the content division
    although most of it repeats (short labels do not make it a wrapper: content_containers), so what it repeats
    stays; and the page's own content goes on past the summary tables the template cuts, to its next section
    heading (extract.own_content)."""
    compiled = CompiledTemplate(learn_template([seg for seg, _ in interface_pages(8)], site="api.example.com/"))
    seg, text = interface_pages(1, start=40)[0]
    result = extract_page(seg, compiled)
    for repeated in INTERFACE_REPEATED:
        assert repeated in result.text, repeated
    for line in text.split("\n"):
        assert line in result.text, line
    for chrome in ("Overview", "Help", "Copyright"):
        assert chrome not in result.text
    explained = explain_blocks(seg, compiled)
    assert all(b.why for b in explained.blocks if not b.kept)


def test_a_summary_sentence_said_again_in_the_details_is_kept_an_article_printed_twice_is_not():
    """A method's summary sentence stands in the summary table and again in the method's details: both are the
    page's text inside the page's declared <main> (extract.lone_repeats). A page that prints its article twice
    repeats a run of paragraphs: the second copy goes."""
    compiled = CompiledTemplate(learn_template([seg for seg, _ in interface_pages(8)], site="api.example.com/"))
    seg, text = interface_pages(1, start=41)[0]
    summary = text.split("\n")[1]
    assert len(summary) >= REPEAT_MIN_CHARS
    assert extract_page(seg, compiled).text.count(summary) == 2
    paragraphs = [" ".join(["Stone river garden window market letter winter engine harbour signal."] * 2) + f" {i}"
                  for i in range(3)]
    html = "<html><body><main>" + "".join(f"<p>{p}</p>" for p in paragraphs * 2) + "</main></body></html>"
    twice = segment(parse_html(html), Page(id="t", url="https://x.example.com/t", html=html))
    keep = np.ones(len(twice.blocks), dtype=bool)
    kept = drop_repeats(twice, keep, keep.copy())
    assert [b.text for b, k in zip(twice.blocks, kept) if k and b.text] == paragraphs
    # a news page without <main> printing its lede again over the story: the lone repeat goes too
    html = ("<html><body><article>" + "".join(f"<p>{p}</p>" for p in paragraphs + paragraphs[:1] + ["Short."])
            + "</article></body></html>")
    lede = segment(parse_html(html), Page(id="l", url="https://x.example.com/l", html=html))
    keep = np.ones(len(lede.blocks), dtype=bool)
    kept = drop_repeats(lede, keep, keep.copy())
    assert [b.text for b, k in zip(lede.blocks, kept) if k and b.text] == paragraphs + ["Short."]


def test_nested_entries_of_a_table_of_contents_go_with_its_shape_rule():
    """A quarter of the chapters' tables of contents list some sections' subsections in lists nested in their own:
    the shape rule learned from the top entries (on most chapters) drops the nested entries too, too rare for a
    rule of their own (extract.nested_entries), and `rules explain` names that rule."""
    compiled = CompiledTemplate(learn_template([seg for seg, _ in guide_pages(8, nested=True)],
                                               site="guide.example.com/"))
    seg, text = guide_pages(1, start=48, nested=True)[0]
    nested = [b.index for b in seg.blocks if b.tag == "dt" and "/dd/" in b.tag_path]
    assert nested
    result = extract_page(seg, compiled)
    assert not any(seg.blocks[i].text in result.text for i in nested)
    assert all(line in result.text or line == result.title for line in text.split("\n"))
    explained = {b.index: b for b in explain_blocks(seg, compiled).blocks}
    assert all(explained[i].reason == "drop-shape" and "nested" in explained[i].why for i in nested)


def test_a_page_without_paragraphs_keeps_what_the_template_leaves():
    """An index page in the site's article layout holds no paragraph, only a list of links: the template takes
    away what the site repeats (menu, byline shape, related box, footer) and the rest is the page's list, which
    the classifier (taught on prose) would score as chrome (extract.without_paragraphs); `rules explain` says the
    template decided."""
    compiled = CompiledTemplate(learn_template([seg for seg, _ in site_pages(8)], site="news.example.com/story/"))
    seg, entries = list_page(50)
    result = extract_page(seg, compiled)
    assert result.method == "template"
    assert all(e in result.text for e in entries)
    assert not any(chrome in result.text for chrome in ("World", "Related stories", "Copyright", "By "))
    explained = explain_blocks(seg, compiled)
    assert all(b.reason == "template" for b in explained.blocks if b.kept)
    assert all(b.why for b in explained.blocks if not b.kept)
    article, text = site_pages(1, start=51)[0]  # an article of the same site is still the classifier's to trim
    assert {b.reason for b in explain_blocks(article, compiled).blocks if b.kept} == {"classifier"}


def test_a_heading_over_an_aside_of_other_stories_does_not_extend_the_pages_own_content():
    """In a page's declared <main>, a section heading over the page's own text extends the trust past the site's
    chrome (a reference page's next section); a "Latest in ..." heading over an <aside> of other stories does not
    (extract.own_content): the feed stays the classifier's to judge as in an undeclared page."""
    def declared(seed):  # the feed's teasers are headings in an <aside> under a "Latest in ..." heading
        html, text = feed_html(seed)
        head, stream = html.split('<div class="stream">')
        stream = re.sub(r"<div>([A-Z][^<]*\.)</div>", r"<h4>\1</h4>", stream)
        html = (head.replace('<div class="page"><article>', '<main class="page"><article>')
                + '<h3>Latest in Daily Example</h3><aside class="stream">'
                + stream.replace("</div>\n</article></div>", "</aside>\n</article></main>"))
        page = Page(id=f"m{seed}", url=f"https://daily.example.com/story/{seed}.html", html=html)
        return segment(parse_html(html), page), text

    compiled = CompiledTemplate(learn_template([declared(seed)[0] for seed in range(8)], site="daily.example.com/"))
    seg, text = declared(40)
    allowed, _, own, _ = match_regions(seg, compiled)
    paragraphs = [b.index for b in seg.blocks if b.tag == "p" and b.text in text]
    feed = [b.index for b in seg.blocks if b.tag == "h4"]
    assert paragraphs and feed and allowed[feed].all() and any(b.text == "Latest in Daily Example" for b in seg.blocks)
    assert own[paragraphs].all() and not own[feed].any()


COMMANDS = [("frob", "Frobnicate the working tree"), ("twiddle", "Twiddle the index bits"),
            ("scan-refs", "List references in a local repository"), ("mend", "Rewrite the history of a branch"),
            ("pack-blobs", "Pack loose objects into one archive"), ("show-log", "Show commit logs"),
            ("tag-it", "Create, list or delete a tag object"), ("prune-all", "Remove unreachable objects")]


def manual_page(n: int, name: str, summary: str, *, dash: str = " - ") -> Segmented:
    """An asciidoc-like manual page: the title and the NAME section in div#header, the sections in div#content."""
    body = " ".join(f"The {name} command reads option {k} and writes what it found to the standard output, "
                    f"one record a line, in the order the objects were written." for k in range(3))
    markup = (f"<html><head><title>tool-{name}(1)</title></head><body class='manpage'>"
              f"<div id='header'><h1>tool-{name}(1) Manual Page</h1><h2>NAME</h2>"
              f"<div class='sectionbody'><p>tool-{name}{dash}{summary}</p></div></div>"
              f"<div id='content'><div class='sect1'><h2>SYNOPSIS</h2><div class='sectionbody'>"
              f"<pre>tool {name} [--verbose] [--dry-run] &lt;path&gt;{n}</pre></div></div>"
              f"<div class='sect1'><h2>DESCRIPTION</h2><div class='sectionbody'><p>{body}</p></div></div>"
              f"<div class='sect1'><h2>OPTIONS</h2><div class='sectionbody'><dl><dt>--verbose</dt>"
              f"<dd>Say more about what {name} does with page {n}.</dd></dl></div></div></div>"
              f"<div id='footer'><div id='footer-text'>Last updated 2024-05-31</div></div></body></html>")
    url = f"https://tools.example.com/docs/tool-{name}.html"
    return segment(parse_html(markup), Page(f"tool-{name}", url, markup))


def manual_template() -> CompiledTemplate:
    """The template of six manual pages of COMMANDS."""
    pages = [manual_page(n, name, summary) for n, (name, summary) in enumerate(COMMANDS[:6])]
    return CompiledTemplate(learn_template(pages, site="tools.example.com/docs/"))


def test_a_manual_pages_name_line_in_the_header_is_kept():
    """The NAME line ("tool-frob - Frobnicate ...") sits in the page header beside the title, outside the content
    division, one short varying line a page: a shape rule learns its tag path as a byline's; the page's name line
    (extract.name_line) still goes through the shape rule and the region, with the classifier or without."""
    compiled = manual_template()
    assert any(r.action == "drop-shape" and r.tag_path.endswith("/div/p") for r in compiled.template.rules)
    for n, (name, summary) in enumerate(COMMANDS[6:], start=6):
        seg = manual_page(n, name, summary)
        for method in ("auto", "none"):
            result = extract_page(seg, compiled, method=method)
            assert f"tool-{name} - {summary}" in result.text
            assert f"The {name} command reads option 2" in result.text and "Last updated" not in result.text


def test_a_line_that_does_not_name_the_page_stays_a_byline():
    """Under the title, a short varying line that does not begin with the page's name and a dash (a byline, a
    date) is still dropped by its shape rule and the region."""
    compiled = manual_template()
    seg = manual_page(7, "prune-all", "by Jo Writer", dash=" ")
    assert name_line(seg, np.ones(len(seg.blocks), dtype=bool)).sum() == 0
    assert "Jo Writer" not in extract_page(seg, compiled).text
    seg = manual_page(7, "prune-all", "Remove unreachable objects")
    assert name_line(seg, np.ones(len(seg.blocks), dtype=bool)).tolist().index(True) == 2
    assert not name_line(seg, np.zeros(len(seg.blocks), dtype=bool)).any()


def test_the_name_line_is_looked_for_as_far_as_the_templates_setting_says():
    """name_line_blocks is saved with the template (LearnSettings): 0 looks for no name line, and extraction with
    the template's rules and that setting drops the line as its shape rule says."""
    import dataclasses

    from templater.config import LearnSettings
    seg = manual_page(7, "prune-all", "Remove unreachable objects")
    everything = np.ones(len(seg.blocks), dtype=bool)
    assert name_line(seg, everything, LearnSettings()).any()
    assert not name_line(seg, everything, dataclasses.replace(LearnSettings(), name_line_blocks=0)).any()
    compiled = manual_template()
    none = dataclasses.replace(compiled.template.settings, name_line_blocks=0)
    without = CompiledTemplate(dataclasses.replace(compiled.template, settings=none))
    assert "tool-prune-all - Remove" in extract_page(seg, compiled).text
    assert "tool-prune-all - Remove" not in extract_page(seg, without).text


def test_rules_explain_names_the_name_line():
    compiled = manual_template()
    seg = manual_page(6, *COMMANDS[6])
    line = next(b for b in explain_blocks(seg, compiled).blocks if b.text.startswith("tool-tag-it - "))
    assert line.kept and line.reason == "name line" and "name line" in line.why


# --- a book's table of contents and footnotes ---------------------------------------------------------------

def book_template() -> CompiledTemplate:
    return CompiledTemplate(learn_template([seg for seg, _ in book_pages(12)], site="book.example.com/3.1/library/"))


def test_a_books_table_of_contents_after_its_text_is_content_a_rooted_list_of_links_is_not():
    """A chapter's index page ends its declared main content with a toctree: a nested list of links, after the
    page's last paragraph, that look like a "see also" list. Its links are relative and stay in the page's folder
    (fallback.document_contents): the book's own pages, kept. The same list linking by site-rooted URLs (as a news
    page's related stories do) is what the classifier drops, and `rules explain` says why."""
    compiled = book_template()
    seg, text = book_pages(1, start=40)[0]
    entries = [b.index for b in seg.blocks if "/div/ul/li" in b.tag_path and "/section/" in b.tag_path]
    assert len(entries) == 20
    explained = explain_blocks(seg, compiled)
    assert all(explained.blocks[i].kept for i in entries)
    result = extract_page(seg, compiled)
    assert all(line in result.text or line == result.title for line in text.split("\n"))
    rooted, _ = book_pages(1, start=40, links="rooted")[0]
    explained = explain_blocks(rooted, compiled)
    dropped = [explained.blocks[i] for i in entries if not explained.blocks[i].kept]
    assert len(dropped) >= 15 and all("mostly links" in b.why for b in dropped)  # (one scores above the threshold)


def test_footnotes_in_an_aside_the_page_marks_as_notes_are_content():
    """docutils writes a page's footnotes as <aside role="note"> at the end of its section: inside the trusted
    region an <aside> is a chrome position, but an element whose ARIA role makes it a note holds the page's own
    text (fallback.page_notes). The same aside without the role is dropped as before, and says why."""
    compiled = book_template()
    seg, text = book_pages(1, start=41, notes=True)[0]
    note = next(line for line in text.split("\n") if line.startswith("Footnote: "))
    result = extract_page(seg, compiled)
    assert note in result.text and "[1]" in result.text
    html = seg.page.html.replace(' role="note"', "")
    plain = segment(parse_html(html), Page(id="b41", url=seg.page.url, html=html))
    explained = explain_blocks(plain, compiled)
    dropped = [b for b in explained.blocks if b.text == note]
    assert dropped and not dropped[0].kept and "chrome position" in dropped[0].why


@pytest.mark.parametrize("href, inside", [
    ("bdb.html", True), ("bdb.html#bdb.Bdb", True), ("#section", True), ("sub/page.html", True),
    ("../library/pdb.html", True), ("../c-api/list.html", False), ("/3.1/library/pdb.html", False),
    ("https://book.example.com/3.1/library/pdb.html", False), ("//book.example.com/x.html", False),
    ("mailto:someone@example.com", False), ("javascript:void(0)", False), ("http://[bad", False), ("#", False),
    ("", False), ("blog.php?post=12", False), ("?page=2", False)])
def test_a_link_into_the_document_tree_is_relative_and_stays_in_the_pages_folder(href, inside):
    assert in_document_tree(href, "/3.1/library/") is inside


@given(st.lists(st.from_regex(r"[a-z0-9_-]{1,8}", fullmatch=True), min_size=1, max_size=4),
       st.integers(min_value=0, max_value=3))
def test_a_relative_path_stays_in_the_tree_unless_it_climbs_out(names, climbs):
    folder = "/a/b/c/"
    href = "../" * climbs + "/".join(names) + ".html"
    target = "/".join(["", "a", "b", "c"][: 4 - climbs] + names) + ".html"
    assert in_document_tree(href, folder) is target.startswith(folder)
    assert not in_document_tree("https://example.com" + target, folder) and not in_document_tree(target, folder)


def test_a_list_of_the_pages_own_sections_is_its_contents_a_list_of_tabs_is_not():
    """In-page anchors count as the document tree where they name one of the page's sections (a heading, an
    element that opens with one, an empty anchor right before one: section_anchors); a tab bar's anchors name
    panels, and a bare "#" is a script's button."""
    html = ('<html><body><main><h1 id="top">Guide</h1><ul><li><a href="#usage">Usage</a></li>'
            '<li><a href="#options">Options</a></li><li><a href="#notes">Notes</a></li></ul>'
            '<ul><li><a href="#most-read">Most read</a></li><li><a href="#">Share</a></li></ul>'
            '<section id="usage"><h2>Usage</h2><p>Text.</p></section><span id="options"></span><h2>Options</h2>'
            '<h2 id="notes">Notes</h2><div id="most-read"><p>Other story</p></div></main></body></html>')
    seg = segment(parse_html(html), Page(id="t", url="https://book.example.com/guide/usage.html", html=html))
    assert section_anchors(seg.root) == {"top", "usage", "options", "notes"}
    entries = np.array([b.tag == "li" for b in seg.blocks])
    found = document_contents(seg, entries)
    assert [b.text for b in seg.blocks if found[b.index]] == ["Usage", "Options", "Notes"]
# --- what a reference page repeats between its own text in its declared <main> ------------------------------------

def test_repeated_labels_and_link_lines_between_the_pages_own_text_in_its_main_are_content():
    """A class page of an API reference repeats, inside its <main> and between its own blocks, a grid's header cells
    over descriptions too long for a row of short cells, a table's caption, the root of the inheritance tree, the
    inherited members' line of links and a "Deprecated." label: content (template.interleaved_blocks), where a
    news page's labels are chrome; so is its related packages' table with their descriptions, although named like
    a box of related links (template.related_text). The overloads' shared paragraphs, a run of repeats with the page's own long text
    on both sides, are kept each time (extract.lone_repeats); the site's navigation and footer go."""
    compiled = CompiledTemplate(learn_template([seg for seg, _ in class_pages(8)], site="api.example.com/util/"))
    samples = " ".join(r.sample for r in compiled.template.rules if r.action in ("drop", "drop-shape"))
    assert "Overview" in samples and "Copyright" in samples
    seg, text = class_pages(1, start=40)[0]
    result = extract_page(seg, compiled)
    for repeated in CLASS_REPEATED:
        assert repeated in result.text, repeated
    lines = text.split("\n")
    assert lines[0] == result.title
    # but the deprecation's note and the related box's caption, whose classes name a comment and related links:
    # inside the trusted region, the classifier drops a short block there (fallback.region_chrome)
    assert all(line in result.text for line in lines[1:] if not line.startswith(("as of", "Related Packages")))
    assert result.text.count(lines[-1]) == 4 and result.text.count(lines[-2]) == 4  # two methods, two overloads each
    assert "Overview" not in result.text and "Copyright" not in result.text
    explained = explain_blocks(seg, compiled)
    assert all(b.why for b in explained.blocks if not b.kept)


def test_labels_between_a_storys_text_stay_chrome_where_main_wraps_the_page_or_beside_a_picture():
    """A news site's role=main element that wraps the page (right under <body>, with the site's <nav>: wraps_page)
    vouches for nothing: the same "Like | Dislike" list and preferences label between headline and story on every page
    stay drop rules. Where the story's division is the role=main element, the list (a list's entries), the same
    agency's credit beside a picture between two paragraphs and a related box of links stay the site's too."""
    for wrapper in (True, False):
        pages = wrapped_pages(8, wrapper=wrapper)
        compiled = CompiledTemplate(learn_template([seg for seg, _ in pages], site="times.example.com/story/"))
        seg, text = wrapped_pages(1, start=40, wrapper=wrapper)[0]
        result = extract_page(seg, compiled)
        assert result.title + "\n" + result.text == text
        for chrome in ("Like", "Dislike", "Edit content preferences", "EXAMPLE PRESS AGENCY", "Related"):
            assert chrome not in result.text.split("\n")
    assert any(r.action == "drop-xpath" and "related-stories" in r.xpath for r in compiled.template.rules)
