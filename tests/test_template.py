import numpy as np

from templater.config import LearnSettings
from templater.extract import CompiledTemplate, apply_template
from templater.template import find_headline, learn_template

from sitegen import site_pages


def kept_text(seg, mask):
    return [b.text for b, k in zip(seg.blocks, mask) if k]


def test_learned_template_drops_the_frame_and_keeps_the_article():
    pages = site_pages(8)
    template = learn_template([s for s, _ in pages], site="news.example.com/story/")
    actions = {r.action for r in template.rules}
    assert {"drop", "drop-shape", "content"} <= actions
    samples = {r.sample for r in template.rules if r.action == "drop"}
    assert {"World", "Sport", "Copyright Example News. All rights reserved."} <= samples
    seg, text = site_pages(1, start=100)[0]  # a page the template never saw
    allowed, coverage = apply_template(seg, CompiledTemplate(template))
    kept = kept_text(seg, allowed)
    assert kept[0] == text.split("\n")[0]  # the headline survives
    assert all(line in kept for line in text.split("\n"))
    assert not any(t in kept for t in ("World", "Related stories", "About us | Contact"))
    assert not any(t.startswith("By ") for t in kept)  # the byline varies but is dynamic boilerplate
    assert coverage == 1.0


def test_coverage_falls_when_the_layout_changes():
    template = learn_template([s for s, _ in site_pages(6)], site="s")
    seg, _ = site_pages(1, start=50)[0]
    redesigned = seg.vector.copy()
    redesigned[: len(redesigned) // 2] = 12345
    seg2 = type(seg)(page=seg.page, blocks=seg.blocks, vector=redesigned, title=seg.title,
                     root=seg.root)
    _, full = apply_template(seg, CompiledTemplate(template))
    _, partial = apply_template(seg2, CompiledTemplate(template))
    assert partial < full


def test_support_threshold_is_a_setting():
    pages = [s for s, _ in site_pages(6)]
    strict = learn_template(pages, site="s", settings=LearnSettings(static_support=1.01))
    assert not [r for r in strict.rules if r.action == "drop"]


def test_rules_are_in_a_stable_order():
    pages = [s for s, _ in site_pages(6)]
    first = learn_template(pages, site="s").rules
    again = learn_template(list(reversed(pages)), site="s").rules
    assert [r.xpath for r in first if r.action != "drop"] == [r.xpath for r in again if r.action != "drop"]


def test_headline_is_the_heading_that_repeats_the_title():
    seg, text = site_pages(1)[0]
    index = find_headline(seg)
    assert index is not None and seg.blocks[index].text == text.split("\n")[0]
    assert np.asarray(seg.vector).dtype == np.uint32


def test_an_unclosed_title_does_not_swallow_the_page():
    from templater.blocks import segment
    from templater.parse import parse_html
    from templater.types import Page

    html = "<html><head><title>Headline here\n" + "<script>var x = 1;</script>" * 80 + \
        "</head><body><p>" + "The body text. " * 20 + "</p></body></html>"
    seg = segment(parse_html(html), Page("p", "https://a.example/p", html))
    assert seg.title == "Headline here"
    assert seg.blocks and seg.blocks[0].text.startswith("The body text.")


def test_copies_of_one_article_do_not_make_it_boilerplate():
    pages = [s for s, _ in site_pages(4)]
    copy, text = site_pages(1, start=1)[0]  # the same article as pages[1] under another URL
    template = learn_template(pages + [copy], site="s")
    allowed, _ = apply_template(copy, CompiledTemplate(template))
    assert all(line in kept_text(copy, allowed) for line in text.split("\n")[1:])
    assert template.page_count == 5


def test_blank_text_between_inline_elements_keeps_words_apart():
    from templater.blocks import segment
    from templater.parse import parse_html
    from templater.types import Page

    html = "<html><body><p><b>hello</b> <i>world</i> and <em>x</em>y</p><div> <p>a</p> <p>b</p> tail</div></body></html>"
    seg = segment(parse_html(html), Page("p", "https://a.example/p", html))
    assert [b.text for b in seg.blocks] == ["hello world and xy", "a", "b", "tail"]


def test_two_copies_among_three_pages_still_keep_the_article():
    pages = [s for s, _ in site_pages(2)]
    copy, text = site_pages(1, start=1)[0]
    template = learn_template(pages + [copy], site="s")
    allowed, _ = apply_template(copy, CompiledTemplate(template))
    assert all(line in kept_text(copy, allowed) for line in text.split("\n")[1:])
