"""templater.metadata: declared metadata, dates, authors, learned meta rules, visible evidence, language."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sitegen
from templater import metadata
from templater.blocks import segment
from templater.extract import CompiledTemplate, extract_page
from templater.parse import parse_html
from templater.template import learn_template
from templater.datatypes import Metadata, Page, Rule

ENGLISH = ("The river rose through the night and by morning the market square was under water. Shopkeepers "
           "carried what they could to the upper floors while the council opened the school hall for families "
           "who had nowhere else to go. ") * 2


def seg_of(html: str, url: str = "https://news.example.com/2024/03/05/story.html"):
    return segment(parse_html(html), Page(id="p", url=url, html=html))


def page(head: str = "", body: str = "<p>Hello world.</p>", *, lang: str = "") -> str:
    attr = f' lang="{lang}"' if lang else ""
    return f"<html{attr}><head><title>A headline here</title>{head}</head><body>{body}</body></html>"


def read(html: str, url: str = "https://example.com/a", **kwargs) -> Metadata:
    return metadata.read_metadata(seg_of(html, url), **kwargs)


def ld(obj) -> str:
    return f'<script type="application/ld+json">{json.dumps(obj)}</script>'


# --- JSON-LD -----------------------------------------------------------------------------------------------------

def test_jsonld_news_article_with_author_object():
    found = read(page(ld({"@context": "https://schema.org", "@type": "NewsArticle", "headline": "x",
                          "datePublished": "2019-11-20T08:05:26+00:00", "dateModified": "2019-11-21",
                          "author": {"@type": "Person", "name": "Sherif Saed"},
                          "publisher": {"@type": "Organization", "name": "VG247"},
                          "image": {"@type": "ImageObject", "url": "/img/a.jpg"},
                          "keywords": "games, reviews", "description": "  A   review. "})))
    assert found.date == "2019-11-20T08:05:26+00:00" and found.date_modified == "2019-11-21"
    assert found.author == "Sherif Saed" and found.sitename == "VG247" and found.description == "A review."
    assert found.image == "https://example.com/img/a.jpg" and found.tags == ("games", "reviews")


def test_jsonld_graph_with_author_reference_and_author_list():
    graph = {"@context": "https://schema.org", "@graph": [
        {"@type": "WebSite", "@id": "#site", "name": "Example Site"},
        {"@type": "Person", "@id": "#ann", "name": "Ann Lee"},
        {"@type": ["BlogPosting"], "datePublished": "2018-04-09", "author": [{"@id": "#ann"}, "Bo Chan"]}]}
    found = read(page(ld(graph)))
    assert found.author == "Ann Lee; Bo Chan" and found.date == "2018-04-09" and found.sitename == "Example Site"


def test_jsonld_list_and_string_author_and_webpage_only():
    found = read(page(ld([{"@type": "Organization", "name": "Org"},
                          {"@type": "WebPage", "datePublished": "2020-01-02", "author": "By JANE DOE"}])))
    assert found.author == "Jane Doe" and found.date == "2020-01-02"


@pytest.mark.parametrize("broken", ['{"@type": "Article", "datePublished": ', "[[[[[[", "<!-- -->", "null", "42",
                                    '{"@type": 7, "author": {"name": ["x"]}, "datePublished": ["2020-01-01"]}',
                                    '{"@graph": "nope", "@type": null}', "\x00\x01", '{"author": [[[[]]]]}'])
def test_malformed_jsonld_never_crashes(broken):
    html = page(f'<script type="application/ld+json">{broken}</script>'
                '<meta property="article:published_time" content="2021-06-07T10:00:00Z">')
    found = read(html)
    assert found.date in ("2021-06-07T10:00:00+00:00", "2020-01-01")


# --- <meta>, og:, twitter:, microdata, <time>, <link>, lang ------------------------------------------------------

def test_open_graph_and_meta_names():
    head = ('<meta property="og:site_name" content="Example News">'
            '<meta property="article:published_time" content="2017-05-03T10:20:00+0200">'
            '<meta property="article:modified_time" content="2017-05-04">'
            '<meta name="author" content="John Roe">'
            '<meta name="description" content="What happened.">'
            '<meta property="og:image" content="https://cdn.example.com/x.png">'
            '<meta property="article:tag" content="floods"><meta property="article:tag" content="weather">'
            '<link rel="canonical" href="/a?x=1"><meta property="og:locale" content="de_DE">')
    found = read(page(head))
    assert found.sitename == "Example News" and found.author == "John Roe"
    assert found.date == "2017-05-03T10:20:00+02:00" and found.date_modified == "2017-05-04"
    assert found.description == "What happened." and found.image == "https://cdn.example.com/x.png"
    assert found.tags == ("floods", "weather") and found.canonical_url == "https://example.com/a?x=1"
    assert found.language == "de"  # declared; the text is too short to detect


def test_twitter_and_keywords_and_html_lang():
    head = ('<meta name="twitter:description" content="Short.">'
            '<meta name="twitter:image" content="/t.jpg"><meta name="keywords" content="a, b; c">')
    found = read(page(head, lang="fr-FR"))
    assert found.description == "Short." and found.image == "https://example.com/t.jpg"
    assert found.tags == ("a", "b", "c") and found.language == "fr"


def test_microdata_and_time_pubdate():
    body = ('<article><h1>A headline here</h1><span itemprop="author" itemscope><span itemprop="name">Cy Diaz'
            '</span></span><time itemprop="datePublished" datetime="2016-02-29">Feb 29</time><p>Text.</p></article>')
    found = read(page(body=body))
    assert found.author == "Cy Diaz" and found.date == "2016-02-29"
    found = read(page(body='<time pubdate datetime="2015-07-01T09:00">July 1</time><p>x</p>'))
    assert found.date == "2015-07-01T09:00:00"


def test_jsonld_wins_over_meta():
    html = page(ld({"@type": "Article", "datePublished": "2019-01-01"}) +
                '<meta property="article:published_time" content="2018-01-01">')
    assert read(html).date == "2019-01-01"


# --- dates and authors --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("text, day", [
    ("2017-05-03", "2017-05-03"), ("Posted on May 3, 2017 at 10:00", "2017-05-03"),
    ("3 May 2017", "2017-05-03"), ("Wed, 3rd May 2017", "2017-05-03"), ("2017/05/03", "2017-05-03"),
    ("03.05.2017", "2017-05-03"), ("05/03/2017", "2017-05-03"), ("25/12/2019", "2019-12-25"),
    ("3. März 2017", "2017-03-03"), ("Sept. 9, 2011", "2011-09-09"), ("no date here", None),
    ("February 30, 2017", None), ("1850-01-01", None)])
def test_find_date(text, day):
    assert metadata.find_date(text) == day


def test_normalize_date_formats():
    assert metadata.normalize_date("2017-05-03T10:20:00Z") == "2017-05-03T10:20:00+00:00"
    assert metadata.normalize_date("Wed, 03 May 2017 10:20:00 GMT") == "2017-05-03"
    assert metadata.normalize_date("1493806800") == "2017-05-03"
    assert metadata.normalize_date("garbage") is None and metadata.normalize_date(None) is None


@pytest.mark.parametrize("value, author", [
    ("By Jane Doe", "Jane Doe"), ("by JANE DOE and JOHN ROE", "Jane Doe; John Roe"),
    ("Ann Lee | Staff Writer", "Ann Lee"), ("By Ann Lee on March 3, 2024", "Ann Lee"),
    ("Ludwig van Beethoven", "Ludwig van Beethoven"), ("https://facebook.com/someone", None),
    ("by the Russian and Syrian defense ministries", None), ("staff", None), ("x" * 100, None),
    ("by Rani Molla @ranimolla Jul 17, 2017", "Rani Molla"), ("jane@example.com", None), ("by Date", None),
    ("by Thread", None)])
def test_normalize_author(value, author):
    assert metadata.normalize_author(value) == author


def test_same_author_ignores_case_punctuation_and_order():
    assert metadata.same_author("Doe, Jane", "jane doe") and not metadata.same_author("Jane Doe", "John Doe")


def test_url_date():
    assert metadata.url_date("https://x.com/2019/11/20/story/") == "2019-11-20"
    assert metadata.url_date("https://x.com/story-2019") is None


def test_dates_with_a_comma_against_the_year_and_bylines_with_their_date():
    assert metadata.find_date("By Jo Lee - Mar 21,2017 - Last updated") == "2017-03-21"
    assert metadata.find_date("Article Updated: 7 Apr , 2017") == "2017-04-07"
    assert metadata.normalize_author("Mihir Fadnavis Mar 03, 2017") == "Mihir Fadnavis"
    assert metadata.normalize_author("Monday November 18, 2019 12:29 pm") is None


def test_a_byline_far_into_the_page_is_found_from_the_headline_the_document_takes():
    menu = "".join(f'<p><a href="/s{i}">Section number {i}</a></p>' for i in range(60))
    body = (f'{menu}<h1>Reefs hold new medicines</h1><p class="article-header__byline">By Char Adams</p>'
            f'<p>{ENGLISH}</p>')
    markup = f"<html><head><title>Discovering medicines in reefs | Site</title></head><body>{body}</body></html>"
    found = read(markup, url="https://example.com/story", text=ENGLISH)
    assert found.author == "Char Adams"
    assert metadata.normalize_author("By") is None


def test_a_plain_words_byline_below_the_share_buttons_wins_over_a_profile_link_in_the_text():
    tools = "".join(f'<li class="tool-item">{name}</li>' for name in ("Email", "Share", "Tweet", "Save", "Print") * 3)
    body = (f'<h1>Machines want new rules</h1><ul>{tools}</ul>'
            '<div class="item__title">By Jeremy Straub – Assistant Professor of Computer Science</div>'
            '<p>But <a href="https://companies.example.com/profile/microsoft/1/">Microsoft</a> disagrees.</p>'
            f'<p>{ENGLISH}</p>')
    markup = f"<html><head><title>Machines want new rules</title></head><body>{body}</body></html>"
    assert read(markup, url="https://example.com/story", text=ENGLISH).author == "Jeremy Straub"


def test_a_share_bar_names_no_author():
    """A share bar's networks ("Facebook", "Twitter") read like a one-word byline: they are no names."""
    for name in ("Facebook", "Twitter", "Rss", "Google Plus", "By Twitter"):
        assert metadata.normalize_author(name) is None
    assert metadata.normalize_author("Laura Beck") == "Laura Beck"


def test_a_link_to_a_byline_page_names_the_author():
    body = ('<h1>A headline here</h1>' + '<p>Menu item</p>' * 14 +
            '<div class="place">Delhi, <a href="/byline/ann-lee">Ann Lee</a> | Updated</div>' + f'<p>{ENGLISH}</p>')
    assert read(page(body=body), url="https://example.com/story", text=ENGLISH).author == "Ann Lee"


@pytest.mark.parametrize("markup, author", [
    ('<script>var omni_authorName = "By JANIE HAR";</script>', "Janie Har"),
    ('<script>var m = {"byline": [{"smartByline": true, "firstAuthor": "David Bruce"}]};</script>', "David Bruce"),
    ("<script>utag_data.net_article_byline = 'Victoria Craw and wires';</script>", "Victoria Craw"),
    ('<div class="author-name">x</div><meta name="author" content="Jo Do"><a rel="author" href="/a">A</a>', None),
    ('<script>x = {"author": "admin", "authorId": "12345", "authorUrl": "https://x.com/a"}</script>', None),
])
def test_script_author(markup, author):
    assert metadata.script_author(markup) == author
    assert metadata.script_author(markup.encode()) == author


# --- visible evidence and learned rules ---------------------------------------------------------------------------

def test_visible_byline_and_date_near_the_headline():
    body = ('<h1>A headline here</h1><p class="meta">By Ann Lee</p><p>Published March 4, 2024</p>'
            f'<p>{ENGLISH}</p>')
    found = read(page(body=body), url="https://example.com/story", text=ENGLISH)
    assert found.author == "Ann Lee" and found.date == "2024-03-04" and found.language == "en"


def test_visible_metadata_of_some_fields_is_theirs_of_all():
    """Only the fields asked for are looked for (read_metadata asks for those still missing), and each is what the
    search of both finds: on pages with bylines and dates in several places, named or shown, around the headline."""
    bodies = [
        '<h1>A headline here</h1><p class="meta">By Ann Lee</p><p>Published March 4, 2024</p>',
        '<h1>A headline here</h1><p>Updated March 9, 2024</p><div class="byline"><a href="/authors/ann">Ann Lee</a>'
        '<span>March 5, 2024</span></div>',
        '<p>March 2, 2024</p><h1>A headline here</h1><div class="author-box"><span class="date">2024-03-07</span>'
        '</div><p>By Bo Ray</p>',
        '<h1>A headline here</h1><time datetime="2024-03-08T10:00:00Z">8 March</time><p>words</p>',
        '<h1>A headline here</h1><div class="post-meta"><span class="writer">Cy Dee</span> 6 March 2024</div>',
        '<h1>A headline here</h1><p>No byline and no date here.</p>',
    ]
    for body in bodies:
        seg = seg_of(page(body=body + f"<p>{ENGLISH}</p>"), url="https://example.com/story")
        both = metadata.visible_metadata(seg)
        for key in ("author", "date"):
            assert metadata.visible_metadata(seg, keys=(key,)).get(key) == both.get(key), (body, key)
        assert metadata.visible_metadata(seg, keys=()) == {}
        assert metadata.named_metadata(seg, dates=False).get("author") == metadata.named_metadata(seg).get("author")
        assert "date" not in metadata.named_metadata(seg, dates=False)


def test_learned_rules_on_a_generated_site_read_bylines_and_dates():
    pages = [seg for seg, _ in sitegen.site_pages(6)]
    template = learn_template(pages, site="news.example.com/story/")
    meta = {r.action: r for r in template.rules if r.action in metadata.META_ACTIONS}
    assert set(meta) == {"meta-author", "meta-date"}
    assert "byline" in meta["meta-author"].xpath and meta["meta-author"].support == 1.0
    compiled = CompiledTemplate(template)
    new, _ = sitegen.site_pages(1, start=40)[0]
    html = new.page.html
    byline = html[html.index('<div class="byline">'):].split("</div>")[0]
    result = extract_page(new, compiled)
    assert result.author and result.author in byline and result.date.startswith("2024-03-")
    assert result.to_json()["author"] == result.author


def test_learned_rules_follow_declared_metadata_where_pages_declare():
    """A site whose pages declare their author in JSON-LD and show it in a <span class="who">: the rule points there
    (not at the first "By" line), and a page without the declaration is read from it."""
    def html(i: int, declared: bool) -> str:
        block = ld({"@type": "Article", "author": {"name": f"Rowan {'ABCDEFG'[i]}ee"}}) if declared else ""
        return page(block, f'<div id="top"><a href="/">Home</a></div><h1>Story number {i}</h1>'
                           f'<p>By Desk Editor</p><div><span class="who">Rowan {"ABCDEFG"[i]}ee</span></div>'
                           f'<p>{ENGLISH}</p><div id="foot">Footer text</div>')
    segs = [seg_of(html(i, True), f"https://ex.com/s/{i}") for i in range(5)]
    template = learn_template(segs, site="ex.com/s/")
    rule = next(r for r in template.rules if r.action == "meta-author")
    assert "who" in rule.xpath
    result = extract_page(seg_of(html(6, False), "https://ex.com/s/6"), CompiledTemplate(template))
    assert result.author == "Rowan Gee"


def test_a_sites_author_named_only_in_a_plain_meta_is_learned_and_a_shown_byline_wins():
    """A site whose pages declare the agency a story came from as its author, and say it in <meta name=dc.source>:
    a rule reads it there on a page that declares nothing; a page that shows its writer's byline keeps the writer."""
    def html(i: int, declared: bool, byline: str = "") -> str:
        agency = ("Associated Press", "Reuters")[i % 2]
        block = ld({"@type": "NewsArticle", "author": {"@type": "Organization", "name": agency}}) if declared else ""
        return page(f'<meta name="dc.source" content="{agency}">{block}',
                    f'<div id="top"><a href="/">Home</a></div><h1>Story number {i}</h1>{byline}'
                    f'<p>{ENGLISH}</p><div id="foot">Footer text</div>')
    segs = [seg_of(html(i, True), f"https://ex.com/s/{i}") for i in range(5)]
    template = learn_template(segs, site="ex.com/s/")
    rule = next(r for r in template.rules if r.action == "meta-author")
    assert rule.xpath == "//meta[@name='dc.source']" and rule.sample in ("Associated Press", "Reuters")
    compiled = CompiledTemplate(template)
    assert extract_page(seg_of(html(7, False), "https://ex.com/s/7"), compiled).author == "Reuters"
    shown = html(8, False, '<p class="byline">By Jane Roe</p>')
    assert extract_page(seg_of(shown, "https://ex.com/s/8"), compiled).author == "Jane Roe"


def test_a_declared_source_is_the_author_only_where_the_page_names_no_other():
    """<meta name=dc.source> names the agency or site a story came from: the author of a page that declares none
    and shows no byline, on a site with no rule learned; a declared author, a shown byline or a script's byline
    outranks it, and it is no field of its own."""
    head = '<meta name="dc.source" content="Associated Press">'
    body = f"<h1>Troops respond to the attack</h1><p>{ENGLISH}</p>"
    assert read(page(head, body), text=ENGLISH).author == "Associated Press"
    assert read(page(head + '<meta name="dc.creator" content="Jo Lee">', body), text=ENGLISH).author == "Jo Lee"
    shown = body.replace("<p>", '<p class="byline">By Newt Gingrich</p><p>', 1)
    assert read(page(head, shown), text=ENGLISH).author == "Newt Gingrich"
    script = '<script>var page = {"authorName": "Ann Lee"};</script>'
    assert read(page(head, body + script), text=ENGLISH).author == "Ann Lee"
    assert read(page('<meta name="dc.source" content="https://example.com/feed">', body), text=ENGLISH).author is None
    assert "source" not in metadata.METADATA_FIELDS
    declared = metadata.declared_metadata(parse_html(page(head)), page(head), "https://example.com/a")
    assert declared["source"] == "Associated Press" and declared["author"] is None
    assert metadata.declared_metadata(parse_html(page()), page(), "https://example.com/a")["source"] is None


@pytest.mark.parametrize("value, author", [
    ("RFE/RL", "RFE/RL"), ("AFP", "AFP"), ("By AP", "AP"), ("Jo Lee and CNN", "Jo Lee; CNN"), ("C.M.S.A", "C.M.S.A"),
    ("JANE DOE", "Jane Doe"), ("AGENCIAS", "Agencias"), ("reuters", "Reuters"), ("and/or", None),
    ("Jane Doe / staff", None)])
def test_a_name_in_capitals_of_one_word_is_an_acronym_kept_as_written(value, author):
    assert metadata.normalize_author(value) == author


def test_head_meta_xpaths_skip_metas_that_declare_an_author_or_a_date():
    root = parse_html(page('<meta name="author" content="Jane Roe"><meta property="og:site_name" content="Jane Roe">'
                           '<meta name="dc.source" content="Someone Else">'))
    assert metadata.head_meta_xpaths(root, "author", "Jane Roe") == ["//meta[@property='og:site_name']"]


@pytest.mark.parametrize("markup, day", [
    ('<p class="date"><time datetime="2017-03-22T03:11:20+00:00">March 21, 2017 at 8:11 pm</time></p>',
     "2017-03-21"),  # the local day shown beside a time given in UTC
    ('<p class="date"><time datetime="2017-03-22T03:11:20+00:00">March 22, 2017</time></p>',
     "2017-03-22T03:11:20+00:00"),
    ('<p class="date"><time datetime="2017-03-22T03:11:20+00:00">March 10, 2017</time></p>',
     "2017-03-22T03:11:20+00:00"),  # not a neighbouring day: the time given
])
def test_element_date_is_the_day_shown_beside_a_time(markup, day):
    assert metadata.element_date(parse_html(page(body=markup)).find(".//p")) == day
    # the same from the page's <time>s (element_date's ``times``), another <time> of the page beside
    root = parse_html(page(body=markup + '<p><time datetime="2016-01-02">Jan 2, 2016</time></p>'))
    assert metadata.element_date(root.find(".//p"), list(root.iter("time"))) == day


TIME_PIECES = st.sampled_from(['<time datetime="2017-03-22T03:11:20+00:00">', '<time>', '</time>', '<time datetime="">',
                               '<p>', '</p>', '<div class="date">', '</div>', 'March 21, 2017', ' x ',
                               '<span datetime="2015-05-05">', '</span>', '<time datetime="2019-09-09">Sep 9</time>'])


@settings(max_examples=300, deadline=None)
@given(st.lists(TIME_PIECES, max_size=25))
def test_element_date_from_the_pages_times_is_element_date(pieces):
    root = parse_html(page(body="".join(pieces)))
    if root is None:
        return
    times = list(root.iter("time"))
    for element in root.iter():
        if isinstance(element.tag, str):
            assert metadata.element_date(element, times) == metadata.element_date(element)
    assert metadata._times_inside(root, times) == times
    native_walk = metadata.native.walk
    try:  # the plain path of _times_inside
        metadata.native.walk = None
        assert all(metadata._times_inside(e, times) == list(e.iter("time")) for e in root.iter())
    finally:
        metadata.native.walk = native_walk


def test_a_last_updated_date_only_when_the_page_shows_no_other():
    body = ('<h1>A headline here</h1><p>Last updated: March 30, 2017</p><p>Published March 28, 2017</p>'
            f'<p>{ENGLISH}</p>')
    assert read(page(body=body)).date == "2017-03-28"
    alone = f'<h1>A headline here</h1><p>Last updated: March 30, 2017</p><p>{ENGLISH}</p>'
    assert read(page(body=alone)).date == "2017-03-30"
    both = f'<h1>A headline here</h1><p>By Jane Roe - Mar 21,2017 - Last updated at Mar 22,2017</p><p>{ENGLISH}</p>'
    assert read(page(body=both)).date == "2017-03-21"


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="htps:/a.c?#;[] .x%\t", max_size=30))
def test_absolute_urls_are_what_urljoin_gives(value):
    from urllib.parse import urljoin

    for base in ("http://q.org/p", "https://q.org/a/b/"):
        if not value.strip() or value.strip().startswith(("data:", "javascript:")):
            continue
        try:
            want = urljoin(base, value.strip())
        except ValueError:
            want = None
        assert metadata._absolute(value, base) == want


@pytest.mark.parametrize("html", [
    'x = {"datePublished": "2017-03-28"}', 'x = {"PublishDate": "2017-03-29"}',
    " ".join(['"published": 1'] * 25) + ' "PublishedAt": "2017-04-01"',
    " ".join(['"ublish": 1'] * 25) + ' "Publish_date": "2017-04-02"',
])
def test_script_date_keys_found_whatever_their_order(html):
    def plain(text):  # every key searched, as before the shared scan
        for key in metadata._SCRIPT_KEY_PARTS:
            start = text.find(key)
            for _ in range(metadata.MAX_SCRIPT_DATES):
                if start < 0:
                    break
                found = metadata._SCRIPT_VALUE.match(text, start + len(key), start + len(key) +
                                                     metadata.SCRIPT_KEY_CHARS)
                if found:
                    return metadata._iso(metadata._ISO.match(found.group(1)))
                start = text.find(key, start + 1)
        return None
    assert metadata.script_date(html) == plain(html) and metadata.script_date(html.encode()) == plain(html)


def test_rule_metadata_with_a_broken_or_value_xpath_gives_nothing():
    root = parse_html(page(body="<p class='d'>May 3, 2017</p>"))
    assert metadata.rule_metadata(root, [Rule(xpath="//p[", action="meta-date", support=1.0)]) == {}
    assert metadata.rule_metadata(root, [Rule(xpath="count(//p)", action="meta-date", support=1.0)]) == {}
    assert metadata.rule_metadata(root, [Rule(xpath="//p[@class='d']", action="meta-date", support=1.0)]) == {
        "date": "2017-05-03"}


# --- language -------------------------------------------------------------------------------------------------------

def test_language_declared_else_detected_from_text():
    german = ("Der Fluss stieg in der Nacht, und am Morgen stand der Marktplatz unter Wasser. Die Händler trugen, "
              "was sie konnten, in die oberen Stockwerke, während der Rat die Schulhalle öffnete. ") * 2
    assert metadata.detect_language(german) == "de"
    assert metadata.detect_language("Too short.") is None
    assert read(page(body=f"<p>{german}</p>", lang="en"), text=german).language == "en"  # declared: taken as is
    assert read(page(body=f"<p>{german}</p>"), text=german).language == "de"  # none declared: detected
    assert read(page(lang="en"), text="Short.").language == "en"



@settings(max_examples=120, deadline=None)
@given(st.one_of(st.text(max_size=300), st.sampled_from([ENGLISH[:256], "Über die Brücke " * 12, "日本語の文章" * 30,
                                                         "ABC DEF " * 30, ""])))
def test_compiled_language_walk_gives_the_packages_counts_and_answers(text):
    """The identifier's automaton walk in Cython (templater._walk.dfa_visits) counts what py3langid's visit_counts
    counts, in the same order, and every classification is the package's own."""
    from py3langid import langid

    from templater import native

    identifier = metadata._identifier()
    tables = getattr(identifier, "tables", None)
    if tables is None or native.walk is None:
        pytest.skip("the package's own walk (another py3langid layout, or the compiled part not built)")
    data = identifier._encode(text)
    identifier.package_tables()
    expected = langid.visit_counts(identifier.tk_nextmove, identifier._rowbase, identifier.tk_output, data)
    found = native.walk.dfa_visits(*tables, data)
    assert (found is None) == (expected is None)
    if expected is not None:
        assert list(found.items()) == list(expected.items())
    fast = identifier.classify(text)
    identifier.tables = None
    try:
        assert identifier.classify(text) == fast
    finally:
        identifier.tables = tables


def test_the_packages_walk_lists_are_made_at_its_first_use_as_its_own_loader_makes_them():
    """The identifier starts without the package walk's lists (a start-up cost); the package's walk (no compiled
    walk, or a text it found no feature in) makes them first, the lists py3langid's own loader makes."""
    from py3langid import langid

    from templater import native

    fresh = metadata._identifier.__wrapped__()
    if getattr(fresh, "tables", None) is None:
        pytest.skip("the package's own identifier (another py3langid layout)")
    assert fresh._rowbase == [] and fresh.tk_output == []
    own = langid._get_identifier()
    text = "Die Händler trugen, was sie konnten, in die oberen Stockwerke. " * 3
    answer = fresh.classify(text)
    assert answer == own.classify(text)
    if native.walk is not None:
        assert fresh._rowbase == []  # the compiled walk did without them
    fresh.tables = None  # the package's walk
    assert fresh.classify(text) == answer
    assert fresh._rowbase == own._rowbase and fresh.tk_output == own.tk_output


def test_compiled_language_walk_refuses_tables_it_cannot_walk():
    import numpy as np

    from templater import native

    if native.walk is None:
        pytest.skip("the compiled part is not built")
    moves, rows, out = np.zeros(256, np.uint32), np.zeros(1, np.uint16), np.array([0], np.int32)
    assert native.walk.dfa_visits(moves, rows, out, b"ab") == {0: 2}
    assert native.walk.dfa_visits(moves, rows, np.array([-1], np.int32), b"ab") is None
    with pytest.raises(ValueError):
        native.walk.dfa_visits(moves, rows, np.zeros(2, np.int32), b"ab")  # a row per state
    with pytest.raises(ValueError):
        native.walk.dfa_visits(np.full(256, 7, np.uint32), rows, out, b"a")  # a state outside the tables
    with pytest.raises(ValueError):
        native.walk.dfa_visits(moves, np.array([3], np.uint16), out, b"a")  # a row outside the tables

# --- never raises -----------------------------------------------------------------------------------------------

_TAGS = st.sampled_from(["meta", "time", "script", "link", "span", "p", "div", "h1", "html", "head"])
_ATTRS = st.sampled_from(['property="article:published_time"', 'name="author"', 'itemprop="author"',
                          'itemprop="datePublished"', 'type="application/ld+json"', 'rel="canonical"',
                          'class="byline"', 'datetime="2019-13-45"', 'content="{]"', 'lang="?"', "pubdate",
                          'href="http://[::1"', 'content="By"'])
_TEXTS = st.one_of(st.text(max_size=40), st.sampled_from(['{"@type":"Article","author":', "By J", "31/31/2031",
                                                          "May 99, 2017", '{"@graph":[{"@id":1}]}']))


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(_TAGS, st.lists(_ATTRS, max_size=3), _TEXTS), max_size=12), st.text(max_size=30))
def test_metadata_never_raises_on_arbitrary_markup(parts, tail):
    html = "".join(f"<{tag} {' '.join(attrs)}>{text}</{tag}>" for tag, attrs, text in parts) + tail
    root = parse_html(html)
    if root is None:
        return
    seg = segment(root, Page(id="x", url="https://example.com/2020/02/30/x", html=html))
    found = metadata.read_metadata(seg, rules=[Rule(xpath="//p", action="meta-author", support=1.0),
                                               Rule(xpath="//time", action="meta-date", support=1.0)], text=tail)
    assert isinstance(found, Metadata)
    assert found.date is None or found.date[:4].isdigit()


def test_language_model_cache_is_the_packaged_model(tmp_path, monkeypatch):
    """The uncompressed copy written at first use holds the packaged model's arrays; a corrupt copy is not used."""
    import numpy as np

    monkeypatch.setenv("TEMPLATER_CACHE", str(tmp_path))
    written = metadata._cached_model()
    packaged = metadata._packaged_model()
    assert written is not None and metadata.language_model_cache().is_dir()
    for name, array in packaged.items():
        assert written[name].dtype == array.dtype and np.array_equal(written[name], array), name
    again = metadata._cached_model()  # read back, memory-mapped
    assert np.array_equal(again["ptc"], packaged["ptc"])
    leftovers = [p.name for p in tmp_path.iterdir() if ".tmp" in p.name]
    assert leftovers == []
    (metadata.language_model_cache() / "ptc.npy").write_bytes(b"\x93NUMPY truncated")
    assert metadata._cached_model() is None  # the caller decompresses the packaged model instead


def test_language_model_cache_unwritable_falls_back(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("TEMPLATER_CACHE", str(blocker / "sub"))
    assert metadata._cached_model() is None


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(alphabet=" \t\nab\u00a0é", max_size=12), min_size=1, max_size=8), st.integers(0, 40))
def test_short_text_is_text_or_none(pieces, limit):
    """_short_text is _text when that is at most ``limit`` long, else None (it never joins a long text)."""
    from lxml import html as lxml_html

    markup = "<div>" + "".join(f"<span>{p}</span>" for p in pieces) + "</div>"
    element = lxml_html.fromstring(markup)
    full = metadata._text(element)
    assert metadata._short_text(element, limit) == (full if len(full) <= limit else None)


def test_language_model_cache_removes_a_killed_writers_half_copy(tmp_path, monkeypatch):
    import os

    monkeypatch.setenv("TEMPLATER_CACHE", str(tmp_path))
    folder = metadata.language_model_cache()
    stale, fresh = tmp_path / (folder.name + ".tmpold"), tmp_path / (folder.name + ".tmpnew")
    stale.mkdir()
    fresh.mkdir()  # another writer's, still at work
    old = os.stat(stale).st_mtime - metadata.LANGID_STALE_SECONDS - 60
    os.utime(stale, (old, old))
    assert metadata._cached_model() is not None
    assert not stale.exists() and fresh.exists()


def test_language_model_cache_removes_other_installs_unused_copies(tmp_path, monkeypatch):
    """A new copy of the model removes other installs' copies unused for LANGID_UNUSED_SECONDS (by their manifest's
    time, else their folder's), keeps recent ones and other files; a copy read again is marked in use daily."""
    import os
    import time

    monkeypatch.setenv("TEMPLATER_CACHE", str(tmp_path))
    long_ago = time.time() - metadata.LANGID_UNUSED_SECONDS - 60
    unused, recent, bare = tmp_path / "langid-1-1", tmp_path / "langid-2-2", tmp_path / "langid-3-3"
    for folder in (unused, recent, bare):
        folder.mkdir()
    for folder in (unused, recent):
        (folder / "manifest.json").write_text("{}")
    os.utime(unused / "manifest.json", (long_ago, long_ago))
    os.utime(bare, (long_ago, long_ago))
    other = tmp_path / "code-cache.bin"
    other.write_bytes(b"x")
    os.utime(other, (long_ago, long_ago))
    assert metadata._cached_model() is not None
    assert not unused.exists() and not bare.exists()
    assert recent.exists() and other.exists() and metadata.language_model_cache().is_dir()
    manifest = metadata.language_model_cache() / "manifest.json"
    two_days_ago = time.time() - 2 * 86400
    os.utime(manifest, (two_days_ago, two_days_ago))
    assert metadata._cached_model() is not None  # read again: marked in use
    assert time.time() - manifest.stat().st_mtime < 3600


# --- the date patterns' shortcuts against their plain definitions --------------------------------------------------

_PLAIN_MONTH = r"(?P<month>" + "|".join(sorted(map(re.escape, metadata._MONTHS), key=len, reverse=True)) + r")\.?"
_DATE_WORDS = st.sampled_from([*metadata._MONTHS, "MAY", "Mar.", "SePt", "\u017fept", "\u0130", "\u0131", "\u212a",
                               "x", "3", "21st", "2ND", "31", "2017", "1999", "2017,", ",", "de", "on", "|", "12:30",
                               "Jane", "05.03.2017", "3/4/2017", "2017-05-03"])
_DATE_TEXTS = st.lists(st.tuples(_DATE_WORDS, st.sampled_from([" ", "", ", ", ". ", ",", "  "])), max_size=8).map(
    lambda parts: "".join(word + gap for word, gap in parts))


def _find_date_plain(text: str) -> str | None:
    """find_date's definition: each pattern searched over the whole text, the month names without their lookahead."""
    if not metadata._YEAR.search(text):
        return None
    for pattern in (metadata._ISO, metadata._YMD):
        found = pattern.search(text)
        if found:
            return metadata._day(found["y"], found["m"], found["d"])
    for pattern in (metadata._MDY, metadata._DMY):
        found = re.compile(pattern.pattern.replace(metadata._MONTH, _PLAIN_MONTH), re.IGNORECASE).search(text)
        if found:
            return metadata._day(found["y"], metadata._MONTHS.get(found["month"].lower().rstrip(".")), found["d"])
    found = metadata._DMY_NUM.search(text)
    if found:
        a, b = int(found["a"]), int(found["b"])
        day_first = a > 12 or ("." in found.group(0) and b <= 12)
        return metadata._day(found["y"], b, a) if day_first else metadata._day(found["y"], a, b)
    return None


@settings(max_examples=1000, deadline=None)
@given(_DATE_TEXTS | st.text(max_size=30))
def test_find_date_is_its_plain_definition(text):
    assert metadata.find_date(text) == _find_date_plain(text)


@settings(max_examples=500, deadline=None)
@given(_DATE_TEXTS)
def test_author_cut_with_the_month_lookahead_is_the_plain_cut(text):
    plain = re.compile(metadata._NAME_CUT.pattern.replace(metadata._MONTH, _PLAIN_MONTH), re.IGNORECASE)
    assert metadata._NAME_CUT.sub("", text) == plain.sub("", text)


def test_this_year_is_today_s():
    from datetime import date

    assert metadata._this_year() == date.today().year


# --- JSON-LD scripts found from where the markup names their type, against the regex over the whole page ------------

_LD_PIECES = st.sampled_from([b"<script", b"<SCRIPT", b"<script ", b'type="application/ld+json"', b"APPLICATION/LD+JSON",
                              b"application/Ld+Json", b"application/ld+json", b">", b"</script>", b"</script >",
                              b"</SCRIPT>", b'{"@type": "Article"}', b"<p>", b"a", b" ", b"\n", b"ld+json", b"<",
                              b'data-x="<script a>"', b"\xc3\xa9"])
_LD_MARKUP = st.lists(_LD_PIECES, max_size=14).map(b"".join)


@settings(max_examples=500, deadline=None)
@given(_LD_MARKUP)
def test_jsonld_scripts_are_the_regex_matches(html):
    from templater import native

    expected = [m.span() for m in metadata._JSONLD.finditer(html)]
    assert [m.span() for m in metadata._jsonld_scripts(html)] == expected
    saved = native.numeric
    native.numeric = None  # the pure path
    try:
        assert [m.span() for m in metadata._jsonld_scripts(html)] == expected
    finally:
        native.numeric = saved


@settings(max_examples=500, deadline=None)
@given(_LD_MARKUP)
def test_jsonld_objects_are_read_where_the_markup_spells_ld_json_so(html):
    """The JSON-LD of a page is read only where its markup says "ld+json" or "LD+JSON" (a case-blind scan first rules
    out the pages that say neither): the objects of the scripts found, from bytes as from their text."""
    def defined(markup: bytes) -> list:
        if b"ld+json" not in markup and b"LD+JSON" not in markup:
            return []
        return [o for m in metadata._JSONLD.finditer(markup) for o in metadata._flatten(_loaded(m.group(1)))]

    assert list(metadata._jsonld_objects(html)) == defined(html)
    assert list(metadata._jsonld_objects(html.decode("utf-8"))) == defined(html)


def _loaded(block: bytes):
    block = block.decode("utf-8", "replace").strip().removeprefix("<!--").removesuffix("-->").strip()
    try:
        return json.loads(block.removeprefix("//<![CDATA[").removesuffix("//]]>").strip(), strict=False)
    except ValueError:
        return None


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from([b"a", b"A", b"+", b"/", b"b", b"\xc3", b"Z", b"z", b"@", b"["]), max_size=12).map(
    b"".join), st.lists(st.sampled_from([b"a", b"A", b"+", b"/", b"b", b"z", b"@", b"["]), max_size=4).map(b"".join),
    st.integers(0, 14))
def test_find_folded_is_a_case_blind_regex_search(html, needle, start):
    import re as re_module

    from templater import native

    found = re_module.compile(re_module.escape(needle), re_module.IGNORECASE).search(html, start)
    expected = -1 if found is None else found.start()
    assert metadata.find_folded(html, needle, start) == expected
    saved = native.numeric
    native.numeric = None
    try:
        assert metadata.find_folded(html, needle, start) == expected
    finally:
        native.numeric = saved


@settings(max_examples=500, deadline=None)
@given(_DATE_TEXTS | st.text(max_size=30))
def test_a_date_or_author_kept_for_its_text_is_the_one_worked_out_anew(text):
    for _ in range(2):  # the first answer is kept, the second read from what was kept
        assert metadata.find_date(text) == metadata._find_date(text)
        assert metadata.normalize_author(text) == metadata._normalize_author(text)


def test_a_kept_date_belongs_to_the_year_it_was_worked_out_in(monkeypatch):
    text = "Posted on May 3, 2030"  # within MAX_FUTURE_YEARS (1) of 2029, not of 2025
    monkeypatch.setattr(metadata, "_year", (2025, float("inf")))
    assert metadata.find_date(text) is None
    monkeypatch.setattr(metadata, "_year", (2029, float("inf")))
    assert metadata.find_date(text) == "2030-05-03"
    monkeypatch.setattr(metadata, "_year", (2025, float("inf")))
    assert metadata.find_date(text) is None
