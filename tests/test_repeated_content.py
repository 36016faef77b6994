"""Repeated content is not boilerplate: what a reference site repeats inside its pages' content (an options table,
a caution box, an inherited-members list) survives learning and extraction, chrome around it does not, and the
single-page classifier keeps code, tables and definition lists inside a trusted content region."""

from templater.extract import CompiledTemplate, extract_page, match_template
from templater.rule_inspect import explain_blocks
from templater.blocks import segment
from templater.parse import parse_html
from templater.template import WRAPPER_DEPTH, learn_template
from templater.datatypes import Page

from sitegen import REPEATED_CONTENT, reference_html, reference_pages


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
