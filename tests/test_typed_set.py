"""bench/typed_set.py builds a page in another page's template where a reader would see it: the story in the host's
article body, not in the host's sidebar links to itself; the host's own text outside its article is not kept."""

import sys

import lxml.html
import numpy as np
from hypothesis import given, settings as hsettings, strategies as st

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


def test_reordering_moves_the_body_paragraphs_whole_among_themselves():
    """"Paragraphs reordered" moves the article's body paragraph elements (with their links) among their own
    positions: the headline, byline, comments and sidebar stay, and no words go into another element."""
    body = [BODY[0], BODY[1].replace("steel cables", "<a href='/cables'>steel cables</a>"), BODY[2],
            "Residents of both banks said the reopening would cut their journeys to work by half an hour or more."]
    html = page(HEADLINE, body, COMMENT)
    plain = [" ".join(lxml.html.fragment_fromstring(f"<p>{p}</p>").text_content().split()) for p in body]
    doc = typed_set.parse_doc(html, HEADLINE + " By Ann Smith " + " ".join(plain))
    assert [" ".join(b.text_content().split()) for b in typed_set.movable_paragraphs(doc)] == plain
    typed_set.reorder(doc, np.random.default_rng(3))
    out = lxml.html.document_fromstring(doc.html())
    moved = [" ".join(p.text_content().split()) for p in out.xpath("//div[@id='main']/p")]
    assert sorted(moved) == sorted(plain) and moved != plain
    assert out.xpath("//div[@id='main']/p/a/text()") == ["steel cables"]  # the link moved with its paragraph
    assert text_of(doc.html(), "//div[@id='main']/h1") == HEADLINE
    assert text_of(doc.html(), "//div[@class='byline']") == "By Ann Smith"
    assert text_of(doc.html(), "//div[@class='comments']") == COMMENT
    assert out.xpath("//div[@id='main']/*[1]")[0].tag == "h1"


def test_a_page_with_fewer_than_two_body_paragraphs_is_left_as_it_is():
    html = page(HEADLINE, [" ".join(BODY)], COMMENT)
    doc = typed_set.parse_doc(html, HEADLINE + " By Ann Smith " + " ".join(BODY))
    before = doc.html()
    typed_set.reorder(doc, np.random.default_rng(1))
    assert doc.html() == before


@hsettings(max_examples=40, deadline=None)
@given(count=st.integers(2, 8), seed=st.integers(0, 2**32 - 1), between=st.booleans())
def test_reordering_is_a_permutation_of_the_body_paragraphs_in_their_places(count, seed, between):
    """Any number of body paragraphs, with or without text between them (tails): the paragraphs come out in
    another order, each whole, in the same positions; everything else of the page is unchanged."""
    words = "river bank council bridge cable deck crew winter traffic mayor works harbour".split()
    rng = np.random.default_rng(seed)
    body = [" ".join(rng.choice(words, 25).tolist()) + f" paragraph {n}" for n in range(count)]
    html = page(HEADLINE, body, COMMENT)
    if between:
        html = html.replace("</p><p>", "</p>and then<p>")
    doc = typed_set.parse_doc(html, HEADLINE + " By Ann Smith " + " ".join(body))
    typed_set.reorder(doc, rng)
    out = lxml.html.document_fromstring(doc.html())
    moved = [" ".join(p.text_content().split()) for p in out.xpath("//div[@id='main']/p")]
    assert sorted(moved) == sorted(body) and moved != body
    main = out.xpath("//div[@id='main']")[0]
    assert [child.tag for child in main] == ["h1", "div"] + ["p"] * count
    tails = [" ".join((p.tail or "").split()) for p in main.xpath("p")]
    assert tails == (["and then"] * (count - 1) + [""] if between else [""] * count)
    for xpath in ("//nav", "//div[@class='comments']", "//aside", "//div[@class='byline']", "//h1"):
        assert text_of(doc.html(), xpath) == text_of(html, xpath)


def test_an_agency_story_that_two_sites_edited_is_one_story_of_the_corpus():
    rng = np.random.default_rng(5)
    words = [f"w{i}" for i in rng.integers(0, 10_000, size=400)]
    edited = list(words)
    for at in range(7, len(edited), 10):  # one word in ten changed ("Mr Trump", "politicians"): half the 5-grams go
        edited[at] = "changed"
    other = [f"x{i}" for i in rng.integers(0, 10_000, size=400)]
    half = words[:200] + other[:200]  # shares half of its text with the story: not a copy
    originals = [typed_set.Original(f"{site}/{n}", f"http://{site}.example/{n}", f"{site}.example", f"<p>{n}</p>",
                                    " ".join(text))
                 for site, n, text in (("a", 1, words), ("b", 1, edited), ("c", 1, half), ("a", 2, edited))]
    pairs = typed_set.natural_pairs(originals)
    assert ("a/1", "b/1") in pairs  # two sites: word-3-gram Jaccard >= NATURAL_RESEMBLANCE
    assert not {p for p in pairs if "c/1" in p}
    assert ("a/1", "a/2") not in pairs  # one site: 5-gram containment alone (under 0.8 here)


COMMENTS = ["I drove across it this morning and the new surface is smooth as glass, well worth the long wait for it.",
            "Two months late and a third over budget, yet the council calls it a success in its own press statement.",
            "My daughter cycles over it to school every day, and the new cycle lane on the east side is a great help.",
            "Does anyone know whether the night buses go back to their old route over the bridge from next week on?"]


def commented(body: list[str], comments: list[str], wrapper: str = "") -> tuple[str, str]:
    """A post whose gold text counts its readers' comments (as dragnet's and cleaneval's do): (html, gold)."""
    thread = "".join(f"<li class='comment'><p>{c}</p></li>" for c in comments)
    html = page(HEADLINE, body, "").replace("<div class='comments'><p></p></div>",
                                            f"<div id='comments'><ol class='commentlist'>{thread}</ol></div>")
    html = html[:html.index("<aside>")] + "</body></html>"  # no sidebar link to the post (gold words, not its article)
    if wrapper:
        html = html.replace("<html>", f"<html class='{wrapper}'>")
    return html, " ".join([HEADLINE, "By Ann Smith", *body, *comments])


def words_of(html: str, xpath: str) -> list[str]:
    return text_of(html, xpath).split()


def test_a_cut_takes_the_posts_words_and_leaves_its_readers_comments():
    """A post's readers' comments (an element whose class or id names comments) are no part of the article a cut
    takes from, though the gold text counts them: cut from the start, the copy is the post's end with its comments,
    not a page of comments alone; cut from the end, the post loses its end."""
    html, gold = commented(BODY, COMMENTS * 3)
    post_words = len((HEADLINE + " By Ann Smith " + " ".join(BODY)).split())
    doc = typed_set.parse_doc(html, gold)
    assert {" ".join(doc.slots[i].words) for i in typed_set.comment_slots(doc)} == set(COMMENTS)
    assert sum(len(doc.slots[i].words) for i in typed_set.cut_slots(doc)) == post_words
    typed_set.cut(doc, 0.3, from_start=True)
    out = doc.html()
    assert text_of(out, "//div[@id='comments']") == " ".join(COMMENTS * 3)  # every comment stays
    kept = words_of(out, "//div[@id='main']")
    assert len(kept) == post_words - round(0.3 * post_words)
    assert kept == (HEADLINE + " By Ann Smith " + " ".join(BODY)).split()[-len(kept):]  # the post's end
    doc = typed_set.parse_doc(html, gold)
    typed_set.cut(doc, 0.3, from_start=False)
    assert words_of(doc.html(), "//div[@id='main']") == (HEADLINE + " By Ann Smith " + " ".join(BODY)).split()[
        :post_words - round(0.3 * post_words)]
    assert text_of(doc.html(), "//div[@id='comments']") == " ".join(COMMENTS * 3)


def test_a_class_naming_comments_on_an_element_that_holds_the_post_is_no_thread():
    """An element that holds the article's first words wraps the page (a blog platform's <html class="...
    feature_newcomments">): its class does not make the post a comment, and the cut reads every content slot."""
    html, gold = commented(BODY, COMMENTS, wrapper="feature_newcomments page")
    doc = typed_set.parse_doc(html, gold)
    assert {" ".join(doc.slots[i].words) for i in typed_set.comment_slots(doc)} == set(COMMENTS)
    html, gold = commented(BODY, [], wrapper="feature_newcomments")
    doc = typed_set.parse_doc(html, gold)
    assert not typed_set.comment_slots(doc)
    assert typed_set.cut_slots(doc) == doc.content


def test_a_post_too_short_to_cut_leaves_the_cut_to_the_whole_gold_text():
    """Under MIN_POST_WORDS words outside the comments (a thread page whose post is its title), the cut reads the
    gold text whole, as before."""
    html, gold = commented([], COMMENTS)
    html = html.replace(f"<h1>{HEADLINE}</h1><div class='byline'>By Ann Smith</div>", "<h1>Bridge</h1>")
    doc = typed_set.parse_doc(html, "Bridge " + " ".join(COMMENTS))
    assert typed_set.comment_slots(doc)
    assert typed_set.cut_slots(doc) == doc.content


@hsettings(max_examples=40, deadline=None)
@given(comments=st.integers(0, 12), rate=st.sampled_from([0.1, 0.2, 0.3]), from_start=st.booleans())
def test_a_cut_removes_its_share_of_the_post_from_one_end_and_no_comment(comments, rate, from_start):
    """Any number of comments, any cut: the copy's post is the original post less round(rate x its words) from the
    chosen end, and its comments are the original's, whole."""
    html, gold = commented(BODY, (COMMENTS * 3)[:comments])
    post = (HEADLINE + " By Ann Smith " + " ".join(BODY)).split()
    doc = typed_set.parse_doc(html, gold)
    typed_set.cut(doc, rate, from_start=from_start)
    out = doc.html()
    left = len(post) - round(rate * len(post))
    assert words_of(out, "//div[@id='main']") == (post[-left:] if from_start else post[:left])
    assert text_of(out, "//div[@id='comments']") == " ".join((COMMENTS * 3)[:comments])
