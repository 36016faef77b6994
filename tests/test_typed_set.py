"""bench/typed_set.py builds a page in another page's template where a reader would see it: the story in the host's
article body, not in the host's sidebar links to itself; the host's own text outside its article is not kept."""

import sys

import lxml.html
import numpy as np

from conftest import ROOT

sys.path.insert(0, str(ROOT / "bench"))
import typed_set  # noqa: E402

HEADLINE = "Harbour bridge reopens after a year of repairs"
BODY = ["The harbour bridge reopened on Monday morning after twelve months of repair work on its deck and cables, "
        "the city council said in a statement read to reporters at the northern end.",
        "Engineers replaced more than four hundred steel cables and resurfaced the whole deck, and traffic was "
        "flowing in both directions within an hour of the ribbon being cut by the mayor.",
        "The works ran two months late and cost a third more than planned, mostly because of a cold winter that "
        "stopped the resurfacing crews for several weeks in January and February."]
COMMENT = "Great news at last, my commute will be twenty minutes shorter from now on"


def page(headline: str, body: list[str], comment: str, menu: str = "Home News Sport Weather Contact") -> str:
    paragraphs = "".join(f"<p>{p}</p>" for p in body)
    return (f"<html><head><title>{headline}</title></head><body><nav>{menu}</nav>"
            f"<div id='main'><h1>{headline}</h1><div class='byline'>By Ann Smith</div>{paragraphs}</div>"
            f"<div class='comments'><p>{comment}</p></div>"
            f"<aside><h3>Most read</h3><ul><li><a href='/x'>{headline}</a></li>"
            "<li><a href='/y'>Council votes on new parking rules</a></li></ul></aside></body></html>")


def host_doc() -> typed_set.Doc:
    return typed_set.parse_doc(page(HEADLINE, BODY, COMMENT), HEADLINE + " By Ann Smith " + " ".join(BODY))


def text_of(html: str, xpath: str) -> str:
    tree = lxml.html.document_fromstring(html)
    return " ".join(" ".join(tree.xpath(xpath + "//text()")).split())


def test_the_article_leaves_out_the_headline_linked_again_from_a_sidebar():
    doc = host_doc()
    texts = typed_set.paragraph_texts(doc)
    assert any(" ".join(t) == HEADLINE for t in texts[1:])  # the gold text's words match the sidebar link too
    article = [" ".join(t) for t in typed_set.paragraph_texts(doc, typed_set.article_paragraphs(doc))]
    assert article.count(HEADLINE) == 1
    assert " ".join(texts[typed_set.headline_of(doc)]) == HEADLINE
    body = [" ".join(t) for t in typed_set.paragraph_texts(doc, typed_set.body_paragraphs(doc))]
    assert body == BODY  # the byline stays the host's


def test_a_story_goes_into_the_host_body_as_paragraphs_and_the_sidebar_stays():
    doc = host_doc()
    story = [f"Story paragraph number {n} tells what happened next in the valley that week".split()
             for n in range(5)]
    typed_set.host_page(doc, story, "A new headline".split())
    html = doc.html()
    assert text_of(html, "//div[@id='main']/p") == " ".join(" ".join(p) for p in story)
    paragraphs = lxml.html.document_fromstring(html).xpath("//div[@id='main']/p")
    assert len([p for p in paragraphs if p.text_content().strip()]) == len(story)
    assert text_of(html, "//h1") == "A new headline"
    assert text_of(html, "//div[@class='byline']") == "By Ann Smith"
    assert text_of(html, "//aside") == f"Most read {HEADLINE} Council votes on new parking rules"


def test_the_hosts_own_text_outside_its_article_is_rewritten_and_the_template_kept():
    other = typed_set.Original("s/2", "http://example.org/2", "s", page("Another story", BODY[:1], "Nice"), "")
    host = typed_set.Original("s/1", "http://example.org/1", "s", page(HEADLINE, BODY, COMMENT),
                              HEADLINE + " By Ann Smith " + " ".join(BODY))
    shared = typed_set.site_texts([host, other])
    doc = typed_set.parse_doc(host.html, host.gold)
    sentences = typed_set.Sentences([typed_set.Original("t/1", "u", "t", "", "Alpha beta gamma delta epsilon. " * 5)])
    typed_set.rewrite_own_text(doc, shared, np.random.default_rng(1), sentences, {"s"})
    html = doc.html()
    comment = text_of(html, "//div[@class='comments']")
    assert comment != COMMENT and len(comment.split()) == len(COMMENT.split())
    assert text_of(html, "//nav") == "Home News Sport Weather Contact"  # on both pages: the template's
    assert text_of(html, "//div[@id='main']/p") == " ".join(BODY)  # the article is not touched here
