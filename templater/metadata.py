"""Parsed page (+ its site's meta rules, + its extracted text) -> Metadata.

The steps, in order of trust, each filling only the fields still empty:
1. what the page declares: JSON-LD (``Article``, ``NewsArticle``, ``BlogPosting``, ``WebPage``..., inside
   ``@graph`` or lists; ``author`` as an object, a list or a string), Open Graph and ``article:`` properties,
   Twitter cards, ``<meta name=author|date|description|keywords...>``, microdata ``itemprop``, ``<time
   datetime>`` marked as the publication date, ``<html lang>``, ``<link rel=canonical>``;
2. where the site's template says its byline and date sit (``meta-author`` / ``meta-date`` rules, learned by
   ``template.metadata_rules``);
3. visible evidence: a byline ("By Jane Doe") or an element named like one, a ``<time>`` or a date-looking line
   near the headline, a date in the URL's path;
4. the language the page declares, else the language of the extracted text (py3langid).

Dates come out as ISO 8601 (``2017-05-03`` or ``2017-05-03T10:20:00+02:00``). Nothing here raises on bad
markup: a malformed JSON-LD block or an unparsable date is a missing value.
"""

from __future__ import annotations

import functools
import json
import re
import time
import warnings
from collections.abc import Iterable, Sequence
from datetime import date, datetime
from urllib.parse import urljoin

from lxml import etree

from . import native
from .config import (  # the thresholds are config.py's (its metadata section)
    BLOCK_TAGS, MAX_AUTHOR_CHARS, MAX_NAME_WORDS, MAX_DATE_TEXT_CHARS, MAX_BYLINE_CHARS, NEAR_HEADLINE_BLOCKS,
    HEAD_BLOCKS, MIN_YEAR, MAX_FUTURE_YEARS, LANG_MIN_CHARS, LANG_SAMPLE_CHARS, MAX_TAGS, MAX_TAG_CHARS, BYLINE_DATE_LEVELS,
    NAMED_SCAN_BLOCKS, RULE_ELEMENTS, MAX_INLINE_CHILDREN, MAX_JSONLD_BYTES, MAX_SCRIPT_DATES, MIN_SCRIPT_NAME_WORDS,
    SCRIPT_KEY_CHARS, LANGID_STALE_SECONDS, LANGID_UNUSED_SECONDS, TEXT_MEMO, MAX_ACRONYM_LETTERS)
from .datatypes import METADATA_FIELDS, Metadata, Rule, RuleAction, Segmented
from .parse import compile_xpath

META_AUTHOR = RuleAction.META_AUTHOR  # rule action: the element holding the page's byline
META_DATE = RuleAction.META_DATE  # rule action: the element holding the page's publication date
META_ACTIONS = (META_AUTHOR, META_DATE)

ARTICLE_TYPES = frozenset({"article", "newsarticle", "blogposting", "reportagenewsarticle", "analysisnewsarticle",
                           "opinionnewsarticle", "reviewnewsarticle", "backgroundnewsarticle", "techarticle",
                           "scholarlyarticle", "report", "socialmediaposting", "liveblogposting", "posting",
                           "webpage", "itempage", "aboutpage", "qapage", "medicalwebpage", "review", "creativework",
                           "videoobject", "recipe", "howto"})

# <meta name|property|itemprop> -> field, by how much it is trusted (first wins)
_META_FIELDS = {
    "author": ("author", "article:author", "dc.creator", "dcterms.creator", "sailthru.author", "parsely-author",
               "byl", "og:article:author", "citation_author", "twitter:creator"),
    "date": ("article:published_time", "og:article:published_time", "og:published_time", "datepublished",
             "article.published", "published_time", "publish-date", "publish_date", "publishdate", "pubdate",
             "date", "dc.date", "dc.date.issued", "dc.date.created", "dcterms.created", "dcterms.date",
             "dcterms.issued", "sailthru.date", "parsely-pub-date", "citation_publication_date",
             "citation_date", "og:pubdate", "datecreated", "originalpublicationdate", "date.release",
             "cxenseparse:recs:publishtime", "release_date", "displaydate", "dc.date.published"),
    "date_modified": ("article:modified_time", "og:updated_time", "datemodified", "last-modified",
                      "dcterms.modified", "dc.date.modified", "lastmod", "article.updated", "modified_time"),
    "sitename": ("og:site_name", "application-name", "publisher", "dc.publisher", "twitter:site"),
    "description": ("description", "og:description", "twitter:description", "dc.description",
                    "dcterms.description"),
    "image": ("og:image", "og:image:url", "og:image:secure_url", "twitter:image", "twitter:image:src", "image",
              "thumbnailurl"),
    "tags": ("article:tag", "keywords", "news_keywords", "parsely-tags", "sailthru.tags", "og:article:tag"),
    "language": ("content-language", "dc.language", "og:locale", "language", "inlanguage"),
    "canonical_url": ("og:url", "twitter:url"),
    "source": ("dc.source", "dcterms.source"),  # not a field: the agency or site a story came from (read_metadata)
}
_META_RANK = {name: (field, rank) for field, names in _META_FIELDS.items() for rank, name in enumerate(names)}

_NAMES = etree.XPath(".//*[@itemprop='name']")
_ITEMPROPS = etree.XPath("//body//*[@itemprop][not(self::meta)]")
_JSONLD = re.compile(rb"<script\b[^>]*?application/ld\+json[^>]*>(.*?)</script\s*>", re.IGNORECASE | re.DOTALL)
_JSONLD_STR = re.compile(r"<script\b[^>]*?application/ld\+json[^>]*>(.*?)</script\s*>", re.IGNORECASE | re.DOTALL)

_MONTHS = {name: number for number, names in enumerate((
    "jan january janvier januar enero gennaio januari janeiro",
    "feb february fevrier février februar febrero febbraio februari fevereiro",
    "mar march mars märz maerz marzo maart março",
    "apr april avril abril aprile",
    "may mai mayo maggio mei maio",
    "jun june juin juni junio giugno junho",
    "jul july juillet juli julio luglio julho",
    "aug august aout août agosto augustus",
    "sep sept september septembre septiembre settembre setembro",
    "oct october octobre oktober octubre ottobre outubro",
    "nov november novembre noviembre novembro",
    "dec december decembre décembre dezember diciembre dicembre dezembro"), 1) for name in names.split()}
# (led by a lookahead for a month's first letter: the regex engine tries every name at every place otherwise, the
# IGNORECASE names' alternation being a branch it cannot skip by its first character)
_MONTH = (r"(?=[" + "".join(sorted({name[0] for name in _MONTHS})) + r"])(?P<month>" +
          "|".join(sorted(map(re.escape, _MONTHS), key=len, reverse=True)) + r")\.?")
_ISO = re.compile(r"(?P<y>(?:19|20)\d\d)-(?P<m>[01]?\d)-(?P<d>[0-3]?\d)"
                  r"(?:[T ](?P<H>[0-2]\d):(?P<M>[0-5]\d)(?::(?P<S>[0-5]\d)(?:\.\d+)?)?"
                  r"\s*(?P<tz>Z|[+-][0-2]\d:?[0-5]\d)?)?")
_YEAR = re.compile(r"(?:19|20)\d\d")
_YMD = re.compile(r"\b(?P<y>(?:19|20)\d\d)[/.](?P<m>[01]?\d)[/.](?P<d>[0-3]?\d)\b")
_DMY_NUM = re.compile(r"\b(?P<a>[0-3]?\d)[/.](?P<b>[0-3]?\d)[/.](?P<y>(?:19|20)\d\d)\b")
_MDY = re.compile(_MONTH + r",?\s+(?P<d>[0-3]?\d)(?:st|nd|rd|th)?(?:\s*,\s*|\s+)(?P<y>(?:19|20)\d\d)\b",
                  re.IGNORECASE)  # "Mar 21, 2017", "Mar 21,2017", "Mar, 21 2017"
# what follows a month's last letter in an _MDY date: where it is nowhere, _MDY matches nowhere (searched first, at a
# fraction of the names' cost); where it is, no _MDY match starts more than a month name's length before it
_MDY_TAIL = re.compile(r"[^\W\d_]\.?,?\s+(?P<d>[0-3]?\d)(?:st|nd|rd|th)?(?:\s*,\s*|\s+)(?P<y>(?:19|20)\d\d)\b",
                       re.IGNORECASE)
_MONTH_CHARS = max(map(len, _MONTHS))
_DMY = re.compile(r"\b(?P<d>[0-3]?\d)(?:st|nd|rd|th|\.|er)?\s+(?:de\s+)?" + _MONTH +
                  r"(?:\s+de)?(?:\s*,\s*|\s+)(?P<y>(?:19|20)\d\d)\b", re.IGNORECASE)  # "7 Apr , 2017"
# parts of the keys scripts give publication dates under (datePublished, publish_date, published_at, pubDate,
# article_date, firstPublishDate, date_published...), then the rest of the key, the separator and the date
_SCRIPT_KEY_PARTS = ("ublish", "Publish", "pubDate", "article_date", "dateCreated", "releaseDate")
_SCRIPT_KEY_PARTS_BYTES = tuple(k.encode("ascii") for k in _SCRIPT_KEY_PARTS)
_SCRIPT_VALUE_PATTERN = (r"""[A-Za-z_]{0,12}["']?\s*[:=]\s*["']?"""
                         r"([12][09]\d\d-[01]\d-[0-3]\d(?:[T ][0-2]\d:[0-5]\d(?::[0-5]\d)?)?)")
_SCRIPT_VALUE = re.compile(_SCRIPT_VALUE_PATTERN)
_SCRIPT_VALUE_BYTES = re.compile(_SCRIPT_VALUE_PATTERN.encode("ascii"))
# the keys scripts (analytics data layers, CMS state) give bylines under: authorName, article_author, firstAuthor,
# net_article_byline, writer...; then the rest of the key, the separator and the quoted name
_SCRIPT_AUTHOR_PARTS = ("uthor", "yline", "writer")
_SCRIPT_AUTHOR_PARTS_BYTES = tuple(k.encode("ascii") for k in _SCRIPT_AUTHOR_PARTS)
_SCRIPT_AUTHOR_PATTERN = r"""[A-Za-z_]{0,12}["']?\s*[:=]\s*(["'])([^"'<>{}\[\]\\]{3,%d})\1""" % MAX_BYLINE_CHARS
_SCRIPT_AUTHOR = re.compile(_SCRIPT_AUTHOR_PATTERN)
_SCRIPT_AUTHOR_BYTES = re.compile(_SCRIPT_AUTHOR_PATTERN.encode("ascii"))
_URL_DATE = re.compile(r"/(?P<y>(?:19|20)\d\d)[/-](?P<m>[01]?\d)[/-](?P<d>[0-3]?\d)(?:/|[-_.]|$)")
_BYLINE = re.compile(r"^\W*(?:by:?|von|par|por|di|door|av|af|written by|posted by|words by|author:|autor:|"
                     r"auteur\s*:|story by|reporting by)\s+(?P<name>.+)$", re.IGNORECASE)
_NAME_SPLIT = re.compile(r"\s*(?:,|;|&|\|)\s*|\s+(?:and|AND|And|und|et|y|e)\s+")
_NAME_CUT = re.compile(r"\s*(?:\||·|•|—|–| - |\s(?:on|at|in|for)\s|\bupdated\b|\bpublished\b|\bposted\b|\d{1,2}:\d\d|"
                       r"\b(?:19|20)\d\d\b|\s" + _MONTH + r",?\s+[0-3]?\d\b).*$", re.IGNORECASE)  # "Jane Doe Mar 03, 2017"
_NAME_WORD = re.compile(r"^[^\W\d_][\w.'’-]*$")
_ACRONYM = re.compile(r"^[^\W\d_]+(?:/[^\W\d_]+)+$")  # letters joined by slashes: a name's word in capitals ("RFE/RL")
_HANDLE = re.compile(r"(?<!\S)@\w+")  # a social handle beside the name ("Jane Doe @janedoe")

_AUTHOR_CLASS = re.compile(r"(?i)author|byline|writer|reporter")
_NAMED_CLASS = re.compile(r"(?i)(author|byline|writer|reporter)|date|publish|posted|time")
_AUTHOR_HREF = re.compile(r"/(?:authors?|bylines?|editors|people|writers|profile|staff|journalists?)(?:/|\.|-|$)")
_UPDATED = re.compile(r"(?i)updated|modified|\bedited\b")  # a date named as the page's last change ...
_UPDATED_LEAD = re.compile(r"(?i)^\W*(?:last\s+)?(?:updated|modified|edited)\b")  # ... or said so before it
_DATE_CLASS = re.compile(r"(?i)date|publish|posted|time")
_NAMING_ATTRS = ("class", "id", "rel", "itemprop")
_COMMENTS = re.compile(r"(?i)comment|reply|replies|respond|disqus")
_NAME_PARTICLES = frozenset("de da di del der den van von la le du dos das bin al el ten ter y e".split())
_ROLES = frozenset("editor editors contributor contributing writer writers staff correspondent reporter senior "
                   "columnist author chief managing associate deputy executive news desk share premium follow "
                   "subscribe photographer tv".split())
_NOT_NAMES = frozenset("the a an this our more all staff admin administrator editor editors anonymous unknown guest "
                       "home menu login sign read view share monday tuesday wednesday thursday friday saturday "
                       "sunday today yesterday by von par por di door av af date thread tweet email print "
                       "facebook twitter linkedin pinterest whatsapp reddit rss instagram youtube tumblr google".split())
# (a byline's prefix alone; what a list sorted "by Date", "by Thread" or a share bar's "Tweet" or "Facebook" says)
_AUTHOR_NAMES = re.compile(r"(?i)(?:^|[\s_-])(?:author|byline|by-line|writer|contributor|reporter|"
                           r"article-?author|post-?author|entry-?author|creator)(?:$|[\s_-])")
_DATE_NAMES = re.compile(r"(?i)(?:^|[\s_-])(?:date|time|timestamp|published|pubdate|posted|post-?date|"
                         r"entry-?date|dateline|publish)(?:$|[\s_-])")


# --- the entry point --------------------------------------------------------------------------------------------

def read_metadata(seg: Segmented, *, rules: Sequence[Rule] = (), text: str = "") -> Metadata:
    """The page's metadata: declared, then learned (``rules``), then visible evidence; the language declared, else
    detected from ``text``."""
    times: list = []  # the page's <time> elements, met on the way (visible evidence need not walk the tree again)
    found = declared_metadata(seg.root, seg.page.html, seg.page.url, times=times, elements=seg.declared)
    found["date"] = found["date"] or url_date(seg.page.url)  # a dated URL (/2017/05/03/) outranks what a page shows
    # the site's rules that point into the page, then what it shows, then its rules that read a plain <meta> (a site
    # name, a source: what the site's other pages declare, the page's own byline aside)
    shown = [rule for rule in rules if not rule.xpath.startswith(HEAD_RULE_PREFIX)]
    for step in (shown, None, [rule for rule in rules if rule.xpath.startswith(HEAD_RULE_PREFIX)]):
        missing = [k for k in ("author", "date") if found[k] is None]  # (only these are looked for: most pages
        if not missing:  # declare their date)
            break
        if step is None:
            learned = visible_metadata(seg, times=times, keys=missing)
        elif step:
            learned = rule_metadata(seg.root, step, keys=missing, times=times)
        else:
            continue
        for key in ("author", "date"):
            found[key] = found[key] or learned.get(key)
    if found["date"] is None:
        found["date"] = script_date(seg.page.html)
    if found["author"] is None:
        found["author"] = script_author(seg.page.html)
    source = found.pop("source")  # (a Dublin Core source: the agency, the site; a story's byline outranks it)
    if found["author"] is None:
        found["author"] = normalize_author(source)
    found["language"] = found["language"] or detect_language(text)  # the model's load (~1 s a process) only
    return Metadata(**found)  # where a page declares no language


# --- declared metadata ------------------------------------------------------------------------------------------

def declared_metadata(root, html: str | bytes, url: str, *, times: list | None = None, elements: tuple | None = None,
                      ) -> dict[str, str | tuple[str, ...] | None]:
    """Fields as the page declares them (JSON-LD first, then <meta>, microdata, <link>, <html lang>), and under
    "source" (not a field of Metadata) the source a ``<meta name=dc.source>`` names; ``times``, a list, gets the
    page's <time> elements (in document order) on the way; ``elements``: ``declared_elements_plain(root)`` where the
    caller has it (the segmentation walk gathers it: ``Segmented.declared``)."""
    found: dict = dict.fromkeys(METADATA_FIELDS)
    for key, value in jsonld_metadata(html).items():
        found[key] = value
    ranked: dict[str, tuple[int, object]] = {}
    if root is not None:
        for key, rank, value in _declared_fields(root, html, times=times, elements=elements):
            if key == "tags":
                ranked.setdefault("tags", (rank, []))[1].extend(value)
            elif value and (key not in ranked or rank < ranked[key][0]):
                ranked[key] = (rank, value)
    found["source"] = None
    for key, (_, value) in ranked.items():
        if found.get(key) is None:
            found[key] = value
    return _normalized(found, url)


def _declared_fields(root, html: str | bytes, *, times: list | None = None, elements: tuple | None = None,
                     ) -> Iterable[tuple[str, int, object]]:
    """(field, rank, value) of what <html>, then every <meta>, <link> and <time> (the <time>s also appended to
    ``times`` when given), then (where the markup spells "itemprop") the body's microdata elements declare. The
    <meta>s, a page's most, are read here, in one loop (their attributes read by the compiled walk where it is built:
    ``_walk.meta_fields`` gives a <meta>'s (field, rank, content) and every other element as it is);
    ``_element_fields`` reads the others."""
    yield from _element_fields(root)
    found = elements  # (gathered by the segmentation walk; None: read here)
    declared, props = found if found is not None else (root.iter("meta", "link", "time"), None)
    scan = getattr(native.walk, "meta_fields", None) if isinstance(declared, list) else None
    read = scan(declared, _META_RANK) if scan is not None else None
    for element in declared if read is None else read:
        if type(element) is tuple:  # a <meta>'s hit, read in C: as _meta_field gives it
            yield (element[0], element[1], _split_tags(element[2])) if element[0] == "tags" else element
            continue
        if element.tag == "meta":
            hit = _meta_field(element)
            if hit is not None:
                yield hit
            continue
        if element.tag == "time":
            if times is not None:
                times.append(element)
        elif not _may_declare_link(element):
            continue  # (most <link>s: stylesheets, icons, feeds)
        yield from _element_fields(element)
    if props is None or props:  # (the markup is searched only where the tree has any, or is not walked yet)
        if find_in(html, b"itemprop" if isinstance(html, bytes) else "itemprop") < 0:
            return  # microdata is read only where the markup spells it so (not an ITEMPROP the parser lowered)
        if props is None:
            props = _ITEMPROPS(root)
    for element in props:
        yield from _element_fields(element)


def _may_declare_link(element) -> bool:
    """False where ``_element_fields`` of a <link> yields nothing for sure: its rel holds neither word (a token of
    ``rel.lower().split()`` is a part of ``rel.lower()``)."""
    rel = element.get("rel")
    if not rel:
        return False
    rel = rel.lower()
    return "canonical" in rel or "image_src" in rel


def declared_elements_plain(root) -> tuple[list, list]:
    """(root's <meta>, <link> and <time> elements; the elements with an itemprop attribute below a <body>, <meta>s
    aside), each in document order: the definition the compiled segmentation walk's ``Segmented.declared`` is
    tested against."""
    return list(root.iter("meta", "link", "time")), _ITEMPROPS(root)


def _meta_field(element) -> tuple[str, int, object] | None:
    """(field, rank, value) a <meta> declares, None when it declares none of ours."""
    get = element.get
    hit = _META_RANK.get((get("property") or get("name") or get("itemprop") or get("http-equiv") or "").strip().lower())
    if hit is None:
        return None
    content = (get("content") or "").strip()
    if not content:
        return None
    return hit[0], hit[1], (_split_tags(content) if hit[0] == "tags" else content)


def _element_fields(element) -> Iterable[tuple[str, int, object]]:
    """(field, rank, value) a <link>, <html>, <time> or microdata element declares (a <meta>: ``_meta_field``)."""
    tag = element.tag
    if tag == "link":
        rel = (element.get("rel") or "").lower().split()
        href = (element.get("href") or "").strip()
        if href and "canonical" in rel:
            yield "canonical_url", -1, href
        elif href and "image_src" in rel:
            yield "image", len(_META_FIELDS["image"]), href
    elif tag == "html":
        lang = element.get("lang") or element.get("{http://www.w3.org/XML/1998/namespace}lang")
        if lang and lang.strip():
            yield "language", -1, lang.strip()
    else:
        yield from _microdata(element)


def _microdata(element) -> Iterable[tuple[str, int, object]]:
    prop = (element.get("itemprop") or "").strip().lower()
    if element.tag == "time" and not prop:
        if element.get("pubdate") is not None and element.get("datetime"):
            yield "date", len(_META_FIELDS["date"]), element.get("datetime")
        return
    if prop in ("datepublished", "datecreated", "datemodified"):
        value = element.get("datetime") or element.get("content") or _text(element)
        yield ("date_modified" if prop == "datemodified" else "date"), (2 if prop == "datepublished" else 3), value
    elif prop in ("author", "creator"):
        names = _NAMES(element)
        value = element.get("content") or _text(names[0] if names else element)
        yield "author", 1, value


def jsonld_metadata(html: str | bytes) -> dict[str, object]:
    """Fields of the page's JSON-LD article object(s); empty when there is none or it does not parse."""
    objects = list(_jsonld_objects(html))
    if not objects:
        return {}
    by_id = {o["@id"]: o for o in objects if isinstance(o.get("@id"), str)}
    article = next((o for o in objects if _types(o) & ARTICLE_TYPES - {"webpage"}), None) or next(
        (o for o in objects if _types(o) & ARTICLE_TYPES), None)
    found: dict[str, object] = {}
    site = next((o for o in objects if _types(o) & {"website"}), None)
    if site is not None:
        found["sitename"] = _string(site.get("name"))
    if article is None:
        return {k: v for k, v in found.items() if v}
    found["date"] = _string(article.get("datePublished")) or _string(article.get("dateCreated")) or _string(
        article.get("uploadDate"))
    found["date_modified"] = _string(article.get("dateModified"))
    found["author"] = "; ".join(_person_names(article.get("author") or article.get("creator"), by_id)) or None
    publisher = _resolve(article.get("publisher"), by_id)
    if not found.get("sitename") and isinstance(publisher, dict):
        found["sitename"] = _string(publisher.get("name"))
    found["description"] = _string(article.get("description"))
    found["image"] = _image(article.get("image") or article.get("thumbnailUrl"), by_id)
    keywords = article.get("keywords")
    found["tags"] = _split_tags(keywords) if isinstance(keywords, str) else [
        k for k in keywords if isinstance(k, str)] if isinstance(keywords, list) else None
    found["language"] = _string(article.get("inLanguage"))
    return {k: v for k, v in found.items() if v}


def _jsonld_objects(html: str | bytes) -> Iterable[dict]:
    """Every JSON object of the page's ld+json scripts, @graph and lists flattened; broken blocks skipped."""
    if isinstance(html, bytes):  # (one scan, in either case, tells a page that has neither spelling: most pages)
        if find_folded(html, b"ld+json") < 0 or (find_in(html, b"ld+json") < 0 and find_in(html, b"LD+JSON") < 0):
            return
        blocks = (m.group(1).decode("utf-8", "replace") for m in _jsonld_scripts(html))
    else:
        if "ld+json" not in html and "LD+JSON" not in html:
            return
        blocks = (m.group(1) for m in _JSONLD_STR.finditer(html))
    for block in blocks:
        if len(block) > MAX_JSONLD_BYTES:
            continue
        block = block.strip().removeprefix("<!--").removesuffix("-->").strip()
        block = block.removeprefix("//<![CDATA[").removesuffix("//]]>").strip()
        try:
            data = json.loads(block, strict=False)
        except (ValueError, RecursionError):
            continue
        yield from _flatten(data)


def _jsonld_scripts(html: bytes) -> Iterable[re.Match]:
    """``_JSONLD.finditer(html)``, the regex searched only from near each place the markup says application/ld+json
    (in any case): a match holds one, with no ">" between its start and it, so none starts before the last ">" ahead
    of the first such place after the last match (the regex, tried at every "<" of a page, costs more than the
    rest of the metadata)."""
    cursor = 0
    while True:
        place = find_folded(html, _JSONLD_TYPE, cursor)
        if place < 0:
            return
        found = _JSONLD.search(html, max(cursor, html.rfind(b">", cursor, place) + 1))
        if found is None:
            return
        yield found
        cursor = found.end()


_JSONLD_TYPE = b"application/ld+json"


def find_folded(html: bytes, needle: bytes, start: int = 0) -> int:
    """Where ``html`` holds ``needle`` first at or after ``start`` (not negative), ASCII letters in either case; -1
    where nowhere: in C where built (_numeric.first_place_folded), else a regex."""
    numeric = native.numeric
    if numeric is not None:
        return numeric.first_place_folded(html, needle, start)
    found = _folded(needle).search(html, start)
    return -1 if found is None else found.start()


@functools.lru_cache(maxsize=16)
def _folded(needle: bytes) -> re.Pattern:
    return re.compile(re.escape(needle), re.IGNORECASE)


def _flatten(data, depth: int = 0) -> Iterable[dict]:
    if depth > 4:
        return
    if isinstance(data, list):
        for item in data:
            yield from _flatten(item, depth + 1)
    elif isinstance(data, dict):
        yield data
        if "@graph" in data:
            yield from _flatten(data["@graph"], depth + 1)
        main = data.get("mainEntity")
        if isinstance(main, dict):
            yield from _flatten(main, depth + 1)


def _types(obj: dict) -> set[str]:
    kind = obj.get("@type")
    kinds = kind if isinstance(kind, list) else [kind]
    return {k.rsplit("/", 1)[-1].lower() for k in kinds if isinstance(k, str)}


def _resolve(value, by_id: dict):
    if isinstance(value, dict) and set(value) <= {"@id", "@type"} and value.get("@id") in by_id:
        return by_id[value["@id"]]
    return value


def _person_names(value, by_id: dict) -> list[str]:
    items = value if isinstance(value, list) else [value]
    names = []
    for item in items[:10]:
        item = _resolve(item, by_id)
        if isinstance(item, dict):
            item = item.get("name")
            if isinstance(item, list):
                item = next((x for x in item if isinstance(x, str)), None)
        if isinstance(item, str) and item.strip():
            names.append(item.strip())
    return names


def _image(value, by_id: dict) -> str | None:
    value = _resolve(value[0] if isinstance(value, list) and value else value, by_id)
    if isinstance(value, dict):
        value = value.get("url") or value.get("contentUrl")
    return value.strip() if isinstance(value, str) and value.strip() else None


def _string(value) -> str | None:
    if isinstance(value, list):
        value = next((v for v in value if isinstance(v, str)), None)
    return value.strip() if isinstance(value, str) and value.strip() else None


def _split_tags(value: str) -> list[str]:
    return [t.strip() for t in _TAG_SPLIT.split(value) if t.strip()]


_TAG_SPLIT = re.compile(r"[,;]")


def _normalized(found: dict, url: str) -> dict:
    """Dates to ISO 8601, authors to names, URLs made absolute, tags deduplicated, language to its code."""
    found["date"] = normalize_date(found["date"])
    found["date_modified"] = normalize_date(found["date_modified"])
    found["author"] = normalize_author(found["author"])
    for key in ("sitename", "description"):
        value = found[key]
        found[key] = " ".join(value.split()) if isinstance(value, str) and value.strip() else None
    if found["sitename"] and found["sitename"].startswith("@"):
        found["sitename"] = found["sitename"][1:] or None
    for key in ("canonical_url", "image"):
        found[key] = _absolute(found[key], url)
    tags = list(dict.fromkeys(" ".join(t.split()) for t in (found["tags"] or [])
                              if isinstance(t, str) and t.strip() and len(t) <= MAX_TAG_CHARS))
    found["tags"] = tuple(tags[:MAX_TAGS]) or None
    found["language"] = normalize_language(found["language"])
    return found


def _absolute(value, url: str) -> str | None:
    if not isinstance(value, str) or not value.strip() or value.strip().startswith(("data:", "javascript:")):
        return None
    value = value.strip()
    if _URL_PLAIN.match(value) and not _URL_ODD.search(value):
        return value  # absolute, with nothing urljoin would drop or refuse: what it gives back, at a tenth of its cost
    try:
        return urljoin(url, value)
    except ValueError:
        return None


_URL_PLAIN = re.compile(r"https?://[^/?#]")  # an absolute http(s) URL with a host ...
_URL_ODD = re.compile(r"[\s\x00-\x1f\\\[\]]|[;?](?=[?#]|$)|#$")  # ... and none of what urljoin strips, drops
# (an empty parameter, query or fragment) or refuses: such URLs go through urljoin

def normalize_language(value) -> str | None:
    """``en-US``, ``en_GB``, ``EN`` -> ``en``; None for what does not look like a language tag."""
    if not isinstance(value, str):
        return None
    code = _LANGUAGE_SPLIT.split(value.strip().lower(), maxsplit=1)[0]
    return code if _LANGUAGE_CODE.fullmatch(code) else None


_LANGUAGE_SPLIT = re.compile(r"[-_]")
_LANGUAGE_CODE = re.compile(r"[a-z]{2,3}")


# --- dates ------------------------------------------------------------------------------------------------------

def normalize_date(value) -> str | None:
    """A declared date as ISO 8601: ``YYYY-MM-DD``, or with its time (and offset) when it has one."""
    if not isinstance(value, str) or not value.strip():
        return None
    value = value.strip()
    found = _ISO.search(value)
    if found:
        return _iso(found)
    if value.isdigit() and len(value) in (10, 13):  # a Unix timestamp, in seconds or milliseconds
        try:
            return _checked(datetime.utcfromtimestamp(int(value) / (1000 if len(value) == 13 else 1)).date())
        except (ValueError, OverflowError, OSError):
            return None
    return find_date(value) or _dateutil(value)


def _iso(found: re.Match) -> str | None:
    day = _day(found["y"], found["m"], found["d"])
    if day is None or found["H"] is None:
        return day
    zone = found["tz"] or ""
    if zone and zone != "Z" and ":" not in zone:
        zone = zone[:3] + ":" + zone[3:]
    return f"{day}T{found['H']}:{found['M']}:{found['S'] or '00'}{'+00:00' if zone == 'Z' else zone}"


def _day(year, month, day) -> str | None:
    try:
        return _checked(date(int(year), int(month), int(day)))
    except (TypeError, ValueError):
        return None


def _checked(day: date) -> str | None:
    return day.isoformat() if MIN_YEAR <= day.year <= _this_year() + MAX_FUTURE_YEARS else None


_year: tuple[int, float] = (0, 0.0)  # (this year, the time its next year starts): date.today() at most once a year


def _this_year() -> int:
    """``date.today().year``, read again only once the (local) new year it was read before has come: a call of
    date.today() (the clock and the local time zone) costs several times a whole date check."""
    global _year
    year, ends = _year
    if time.time() >= ends:
        year = date.today().year
        _year = (year, datetime(year + 1, 1, 1).timestamp())
    return year


def find_date(text: str) -> str | None:
    """The first date written in ``text`` (ISO, 2017/05/03, May 3, 2017, 3 May 2017, 03.05.2017), as YYYY-MM-DD.
    Worked out once a distinct text and year (``_find_date_once``): a site's pages show the same lines near their
    headlines (its date lines, labels, bylines), about half of the texts asked about on the sites suite."""
    if not _YEAR.search(text):
        return None  # every pattern below needs a year: one search instead of five on most text
    return _find_date_once(text, _this_year())


@functools.lru_cache(maxsize=TEXT_MEMO)
def _find_date_once(text: str, year: int) -> str | None:
    """``_find_date(text)`` in ``year`` (its result depends on the year: ``_checked``)."""
    return _find_date(text)


def _find_date(text: str) -> str | None:
    """find_date's definition, worked out anew (on a text with a year: find_date tests that first)."""
    for pattern in (_ISO, _YMD):
        found = pattern.search(text)
        if found:
            return _day(found["y"], found["m"], found["d"])
    tail = _MDY_TAIL.search(text)
    found = _MDY.search(text, max(0, tail.start() + 1 - _MONTH_CHARS)) if tail else None
    if found is None:
        found = _DMY.search(text)
    if found:
        return _day(found["y"], _MONTHS.get(found["month"].lower().rstrip(".")), found["d"])
    found = _DMY_NUM.search(text)
    if found:  # day first where it must be or dots say so, else month first (the US order of most English pages)
        a, b = int(found["a"]), int(found["b"])
        day_first = a > 12 or ("." in found.group(0) and b <= 12)
        return _day(found["y"], b, a) if day_first else _day(found["y"], a, b)
    return None


def _dateutil(value: str) -> str | None:
    """The date python-dateutil reads in a declared value our patterns missed (RFC 2822, "Tue May 3 2017")."""
    if len(value) > MAX_DATE_TEXT_CHARS or not re.search(r"(?:19|20)\d\d", value):
        return None
    day = _dateutil_day(value)
    return None if day is None else _checked(day)


def warm_date_parser() -> None:
    """Import python-dateutil's parser (``_dateutil_day`` imports it at its first call): done by a process that is
    about to fork workers, so they inherit it instead of each importing its 30 modules."""
    from dateutil import parser  # noqa: F401


@functools.lru_cache(maxsize=1024)
def _dateutil_day(value: str) -> date | None:
    """The day python-dateutil reads in ``value`` (None where it reads none), kept for the values read last: a page
    often declares one such value as its date and as its last change, and a site's pages share its form (the
    parse costs more than all the rest of a page's metadata)."""
    from dateutil import parser

    try:
        with warnings.catch_warnings():  # an unknown time zone name ("PST"): the day is all we keep
            warnings.simplefilter("ignore")
            parsed = parser.parse(value, default=datetime(2000, 1, 1))
    except (ValueError, OverflowError, TypeError, parser.ParserError):
        return None
    return parsed.date()


def script_date(html: str | bytes) -> str | None:
    """A publication date that the page's scripts carry ("datePublished": "2017-03-28...", article_date = ...).

    The keys are found by plain substring search (in C), and only what follows each is matched: a regex led by
    an alternation of the keys, or by the date, costs ten times more over a whole page."""
    is_bytes = isinstance(html, bytes)
    for found in _script_values(html, _SCRIPT_KEY_PARTS_BYTES if is_bytes else _SCRIPT_KEY_PARTS,
                                _SCRIPT_VALUE_BYTES if is_bytes else _SCRIPT_VALUE, SCRIPT_KEY_CHARS):
        stamp = found.group(1)
        return _iso(_ISO.match(stamp.decode("ascii") if is_bytes else stamp))
    return None


def script_author(html: str | bytes) -> str | None:
    """An author that the page's scripts carry (``authorName = "By JANE DOE"``, ``"firstAuthor":"Jane Doe"``,
    ``net_article_byline = "Jane Doe and wires"``): the names of at least MIN_SCRIPT_NAME_WORDS words of the first
    such value that has any (a one-word value is a user name, a section, a site, an agency)."""
    is_bytes = isinstance(html, bytes)
    for found in _script_values(html, _SCRIPT_AUTHOR_PARTS_BYTES if is_bytes else _SCRIPT_AUTHOR_PARTS,
                                _SCRIPT_AUTHOR_BYTES if is_bytes else _SCRIPT_AUTHOR,
                                SCRIPT_KEY_CHARS + MAX_BYLINE_CHARS):
        text = found.group(2)
        names = normalize_author(text.decode("utf-8", "replace") if is_bytes else text) or ""
        names = "; ".join(n for n in names.split("; ") if len(n.split()) >= MIN_SCRIPT_NAME_WORDS)
        if names:
            return names
    return None


def _script_values(html, keys, value, span: int):
    """Matches of ``value`` right after each place a key occurs (at most MAX_SCRIPT_DATES a key), key by key.

    A key that ends with an earlier key whose places were all looked at ("Publish" after "ublish") is not searched:
    its places are that key's, and what follows them was matched already."""
    seen = []  # keys whose every place was looked at
    for key in keys:
        if any(key.endswith(done) for done in seen):
            continue
        start = find_in(html, key)
        for _ in range(MAX_SCRIPT_DATES):
            if start < 0:
                break
            found = value.match(html, start + len(key), start + len(key) + span)
            if found:
                yield found
            start = find_in(html, key, start + 1)
        if start < 0:
            seen.append(key)


def find_in(html: str | bytes, needle: str | bytes, start: int = 0) -> int:
    """``html.find(needle, start)`` (``start`` not negative); for bytes in C where built (_numeric.first_places:
    memchr on the needle's rarest byte, several times faster than bytes.find over a page's markup)."""
    numeric = native.numeric
    if numeric is not None and isinstance(html, bytes):
        return numeric.first_places(html, (needle,), start)[0]
    return html.find(needle, start)


def url_date(url: str) -> str | None:
    """A date in the URL's path (/2017/05/03/...), as YYYY-MM-DD."""
    found = _URL_DATE.search(url)
    return _day(found["y"], found["m"], found["d"]) if found else None


# --- authors ----------------------------------------------------------------------------------------------------

def normalize_author(value) -> str | None:
    """Names from a declared or visible author: "By JANE DOE and John Roe | Staff" -> "Jane Doe; John Roe".
    Worked out once a distinct text (``_author_once``): a site's pages declare and show the same few authors,
    about two thirds of the texts asked about on the sites suite."""
    return _author_once(value) if isinstance(value, str) else None


@functools.lru_cache(maxsize=TEXT_MEMO)
def _author_once(value: str) -> str | None:
    return _normalize_author(value)


def _normalize_author(value) -> str | None:
    """normalize_author's definition, worked out anew (on a str: normalize_author tests that first)."""
    value = " ".join(value.split())
    found = _BYLINE.match(value)
    if found:
        value = found["name"]
    value = _NAME_CUT.sub("", _HANDLE.sub("", value))
    names = []
    for part in _NAME_SPLIT.split(value):
        name = _clean_name(part)
        if name and name not in names:
            names.append(name)
    joined = "; ".join(names)
    return joined if joined and len(joined) <= MAX_AUTHOR_CHARS else None


def _clean_name(part: str) -> str | None:
    part = part.strip(" .:-–—'\"()[]")
    if not part or "@" in part or "://" in part or part.lower().startswith(("www.", "http")):
        return None
    words = part.split()
    half = len(words) // 2
    if half and len(words) % 2 == 0 and words[:half] == words[half:]:
        words = words[:half]  # "Sean Martin Sean Martin": a name shown twice (a photo's alt text, then the link)
    if len(words) > MAX_NAME_WORDS or not all(_NAME_WORD.match(w) or _ACRONYM.match(w) and w.isupper()
                                              for w in words):
        return None
    if part.islower() or part.isupper() and not _acronym(words):
        words = [w.capitalize() for w in words]
    elif not all(w[0].isupper() or w.lower() in _NAME_PARTICLES for w in words):
        return None  # "the Syrian defense ministries": words of a sentence, not a name
    while words and words[-1].lower().strip(".,") in _ROLES:
        words = words[:-1]  # "Bruce Y. Lee Senior Contributor", "Jane Doe, Staff Writer"
    if not words or words[0].lower() in _NOT_NAMES or words[0].lower() in _ROLES:
        return None
    return " ".join(words)


def _acronym(words: list[str]) -> bool:
    """Whether a name in capitals is an acronym, kept as it is written: one word of at most MAX_ACRONYM_LETTERS
    letters ("AFP", "CNN", "TV3") or of initials joined by dots or slashes ("RFE/RL", "C.M.S.A")."""
    if len(words) != 1:
        return False
    letters = sum(c.isalpha() for c in words[0])
    return letters <= MAX_ACRONYM_LETTERS or "/" in words[0] or "." in words[0]


def same_author(a: str | None, b: str | None) -> bool:
    """Whether two author strings name the same person(s): case, accents of punctuation and order aside."""
    return bool(a and b) and author_key(a) == author_key(b)


def author_key(value: str) -> str:
    return " ".join(sorted(re.sub(r"[^\w\s]", " ", value.lower()).split()))


# --- learned rules ----------------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=4096)
def compiled_xpath(xpath: str) -> etree.XPath | None:
    try:
        return compile_xpath(xpath)
    except etree.XPathSyntaxError:
        return None


def rule_metadata(root, rules: Sequence[Rule], *, keys: Iterable[str] = ("author", "date"),
                  times: Sequence | None = None) -> dict[str, str]:
    """Author and date (those of ``keys``) read where the site's meta rules point (the first element that yields a
    value). Rules of the two forms template.py learns by name (a class token, an id) are evaluated in one compiled walk
    where templater._walk is built; others by lxml. ``times``: the page's <time> elements, when known
    (``element_date``)."""
    wanted = [(rule, _RULE_KEYS[rule.action]) for rule in rules
              if rule.action in _RULE_KEYS and _RULE_KEYS[rule.action] in keys]
    specs = [_named_rule(rule.xpath) for rule, _ in wanted]
    fast = [spec for spec in specs if spec is not None]
    matched = iter(native.walk.match_rules(root, fast) or ()) if native.walk is not None and fast else None
    found: dict[str, str] = {}
    for (rule, key), spec in zip(wanted, specs):
        elements = next(matched, None) if spec is not None and matched is not None else None
        if key in found:
            continue
        value = (_first_value(elements, key, times) if elements is not None
                 else rule_value(root, rule.xpath, key, times=times))
        if value:
            found[key] = value
    return found


_RULE_KEYS = {META_AUTHOR: "author", META_DATE: "date"}
_CLASS_RULE = re.compile(r"//([a-z][a-z0-9]*)\[contains\(concat\(' ', normalize-space\(@class\), ' '\), "
                         r"' ([^'\x00]*) '\)\]")
_ID_RULE = re.compile(r"//\*\[@id='([^'\x00]*)'\]")


@functools.lru_cache(maxsize=4096)
def _named_rule(xpath: str) -> tuple[str | None, str | None, str | None] | None:
    """(tag, id, class token) of a rule XPath that names its element by class or id, as _walk.match_rules takes
    it; None for any other XPath."""
    found = _CLASS_RULE.fullmatch(xpath)
    if found:
        return found.group(1), None, found.group(2)
    found = _ID_RULE.fullmatch(xpath)
    return (None, found.group(1), None) if found else None


def rule_value(root, xpath: str, key: str, *, times: Sequence | None = None) -> str | None:
    """The author or date that a meta rule's XPath selects on a page (``times``: as ``element_date`` takes them)."""
    compiled = compiled_xpath(xpath)
    if compiled is None:
        return None
    try:
        elements = compiled(root)
    except etree.XPathError:
        return None
    return _first_value(elements, key, times) if isinstance(elements, list) else None


def _first_value(elements: list, key: str, times: Sequence | None = None) -> str | None:
    for element in elements[:RULE_ELEMENTS]:
        if not isinstance(element, etree._Element):
            continue
        value = element_date(element, times) if key == "date" else element_author(element)
        if value:
            return value
    return None


def element_date(element, times: Sequence | None = None) -> str | None:
    """The date an element shows: its (or a child <time>'s) datetime attribute, else the date in its text.
    ``times``: the page's <time> elements in document order (``root.iter("time")``) where the caller has them: the
    element's own are taken from them, not from a walk of its subtree (most pages have none)."""
    stamp = element.get("datetime") or element.get("content")
    if not stamp:
        inner = element.iter("time") if times is None else _times_inside(element, times) if times else ()
        stamp = next((t.get("datetime") for t in inner if t.get("datetime")), None)
    day = normalize_date(stamp) if stamp else None
    if day and (len(day) == 10 or element.tag == "meta"):
        return day
    text = _short_text(element, MAX_DATE_TEXT_CHARS * 2)
    shown = find_date(text) if text else None
    if day and not _next_day(shown, day):
        return day
    return shown  # the day the page shows: a time given in UTC can fall on the day after (or before) it


def _times_inside(element, times: Sequence) -> list:
    """The <time> elements of ``times`` (document order) that are ``element`` or inside it: ``element.iter("time")``
    where ``times`` is ``root.iter("time")``."""
    walk = native.walk
    flags = walk.inside(times, (element,)) if walk is not None else None
    if flags is None:
        return [t for t in times if t is element or any(a is element for a in t.iterancestors())]
    return [t for t, inside in zip(times, flags) if inside]


def _next_day(shown: str | None, stamp: str) -> bool:
    """Whether the day a page shows is the day before or after the day of a time it gives (a local day beside a time
    given in UTC)."""
    if shown is None:
        return False
    try:
        return abs((date.fromisoformat(shown) - date.fromisoformat(stamp[:10])).days) == 1
    except ValueError:
        return False


def says_updated(element, text: str = "") -> bool:
    """Whether a date is the page's last change, not its publication: the element (or its parent) is named so
    (class "updated", "modified"), or the text beside it says so ("Last updated: ...")."""
    if _UPDATED_LEAD.match(text):
        return True
    node = element
    for _ in range(2):
        if node is None:
            return False
        if _UPDATED.search((node.get("class") or "") + " " + (node.get("itemprop") or "")):
            return True
        node = node.getparent()
    return False


def element_author(element) -> str | None:
    """The author named by an element's text (a byline's "By" taken off), or by a <meta>'s content."""
    text = (element.get("content") or "").strip() if element.tag == "meta" else _short_text(element, MAX_BYLINE_CHARS)
    return normalize_author(text) if text else None


def _text(element) -> str:
    """The element's text, its inline pieces apart ("Mihir Fadnavis" + "Mar 03, 2017" are two words)."""
    return " ".join(" ".join(element.itertext()).split())


def _short_text(element, limit: int) -> str | None:
    """``_short_text_plain(element, limit)``, from the compiled walk where it is built."""
    walk = native.walk
    found = walk.short_text(element, limit) if walk is not None else False
    return _short_text_plain(element, limit) if found is False else found


def _short_text_plain(element, limit: int) -> str | None:
    """``_text(element)`` when it is at most ``limit`` characters long, else None, found without joining the text
    of a long element (a short block's element may hold a whole article): its words are counted piece by piece,
    and the words of the pieces read so far never make a longer text than all of them do."""
    words: list[str] = []
    length = -1
    for piece in element.itertext():
        found = piece.split()
        if found:
            length += sum(map(len, found)) + len(found)
            if length > limit:
                return None
            words += found
    return " ".join(words)


def head_meta_xpaths(root, key: str, value: str) -> list[str]:
    """XPaths of the page's <meta> elements that declare no author nor date of their own (``dc.source``,
    ``og:site_name``, ``application-name``...) and whose content reads as ``value``, the page's declared author or
    date: where a site that names its pages' author (often itself, an agency) only in its declarations also says it
    in a plain <meta>, a learned rule reads it there on its pages that declare nothing."""
    if root is None:
        return []
    out = []
    for element in root.iter("meta"):
        for attr in ("name", "property", "itemprop"):
            name = element.get(attr)
            if name and "'" not in name:
                break
        else:
            continue
        if _META_RANK.get(name.strip().lower(), ("",))[0] in _SELF_DECLARING or not element.get("content"):
            continue
        got = element_date(element) if key == "date" else element_author(element)
        if got and (got[:10] == value[:10] if key == "date" else same_author(got, value)):
            out.append(f"{HEAD_RULE_PREFIX}@{attr}='{name}']")
    return out


def learned_value(seg: Segmented, xpath: str, key: str, shown: dict) -> str | None:
    """What a candidate meta rule gives on a page where extraction would use it: a rule that reads a plain <meta>
    (``head_meta_xpaths``) is used only where the page shows no author (date) of its own, so it gives nothing on a
    page that shows one (a site's own name declared as the author of its staff's stories, the byline named on the
    others'). ``shown``: a dict the caller keeps over one learning, of what each page shows."""
    if xpath.startswith(HEAD_RULE_PREFIX):
        if id(seg) not in shown:
            shown[id(seg)] = visible_metadata(seg)
        if shown[id(seg)].get(key):
            return None
    return rule_value(seg.root, xpath, key)


HEAD_RULE_PREFIX = "//meta["  # head_meta_xpaths' rules: read after what the page shows
_SELF_DECLARING = frozenset({"author", "date", "date_modified"})  # fields whose <meta>s the page's declarations are


# --- visible evidence -------------------------------------------------------------------------------------------

def visible_metadata(seg: Segmented, headline: int | None | bool = False, *, times: list | None = None,
                     keys: Iterable[str] = ("author", "date")) -> dict[str, str]:
    """Author and date (those of ``keys``) from what the page shows near its headline: bylines, <time> (``times``:
    the page's, when already known), date lines. Each field is looked for on its own (the first block that gives it
    wins, whatever the other field does): one not asked for is not looked for, and what is found of the other is
    the same."""
    headline = _headline(seg) if headline is False else headline
    blocks = nearby_blocks(seg, headline)
    want_author, want_date = "author" in keys, "date" in keys
    wanted = want_author + want_date
    found: dict[str, str] = {}
    changed = None  # a date said to be the last change: the publication date only when the page shows no other
    for block in blocks:
        text = block.text
        if want_author and "author" not in found and len(text) <= MAX_BYLINE_CHARS and looks_like_byline(block):
            # the element's inline pieces apart ("Jane Doe" + "Mar 03, 2017": the block's text may glue them)
            author = (element_author(block.element) if block.element is not None else None) or normalize_author(text)
            if author:
                found["author"] = author
        if want_date and "date" not in found and len(text) <= MAX_DATE_TEXT_CHARS:
            day = element_date(block.element, times) if block.element is not None else find_date(text)
            if day and says_updated(block.element, text):
                changed = changed or day
            elif day:
                found["date"] = day
        if len(found) == wanted:
            break
    if seg.root is None or len(found) == wanted:
        return found
    if want_date and "date" not in found:
        for element in (seg.root.iter("time") if times is None else times):
            day = element_date(element, times)
            if day and says_updated(element, element.getparent().text or "" if element.getparent() is not None
                                    else ""):
                changed = changed or day
            elif day:
                found["date"] = day
                break
    if len(found) < wanted:
        found = {**named_metadata(seg, headline, times=times, dates=want_date), **found}
    if want_date and "date" not in found and changed:
        found["date"] = changed
    return found


def named_metadata(seg: Segmented, headline: int | None | bool = False, *, times: Sequence | None = None,
                   dates: bool = True) -> dict[str, str]:
    """Author and date from the page's short blocks (document order, outside reader comments) whose element, an
    ancestor or an inline element inside names a byline (class author, byline, writer...; rel=author; a link to
    an author page) or a date (class date, publish, posted, time); then a date written beside the byline. Without
    ``dates``, the author alone (the same: the first byline found, whatever the dates around it).

    Only the blocks the segmentation found are looked at: a scan of the whole tree costs several times more.
    ``times``: the page's <time> elements, when known (``element_date``)."""
    found: dict[str, str] = {}
    byline = None
    top = _article_top(seg, _headline(seg) if headline is False else headline)
    for block, candidates in zip(top, _named_candidates_each(top)):
        if candidates is None:
            continue
        element = block.element
        if "author" not in found and len(block.text) <= MAX_BYLINE_CHARS and _BYLINE.match(block.text) and not (
                _in_comments(element)):  # a byline in plain words ("By Jane Doe – Professor of ..."), named or not
            author = element_author(element) or normalize_author(block.text)
            if author:
                found["author"], byline = author, element
        for candidate in candidates:
            kind = _kind(candidate)
            if kind is None:
                continue
            if kind == "author" and "author" not in found and not _in_comments(candidate):
                author = element_author(candidate)
                if author:
                    found["author"], byline = author, candidate
            elif dates and kind == "date" and "date" not in found and not _in_comments(candidate):
                day = element_date(candidate, times)
                if day and not says_updated(candidate):
                    found["date"] = day
        if len(found) == 2:
            return found
        if not dates and found:
            return found  # (the author found: nothing more is looked for)
    if dates and "date" not in found and byline is not None:
        found.update(_date_beside(byline))
    return found


def _named_candidates_each(blocks: Sequence) -> list:
    """Per block, None where named_metadata passes it by (no element, longer than twice MAX_BYLINE_CHARS, a <body> or
    <html>), else ``named_candidates`` of its element, the parent of the last block not passed by as the parent the
    blocks before offered (a second look at an element finds nothing new): in one compiled call where it is built."""
    each = getattr(native.walk, "named_candidates_each", None)  # (None: not built, or built before it was written)
    elements = [b.element if len(b.text) <= MAX_BYLINE_CHARS * 2 else None for b in blocks]
    found = each(elements, MAX_INLINE_CHILDREN) if each is not None else None
    if found is not None:
        return found
    out = []
    last_parent = None
    for element in elements:
        if element is None or element.tag in ("body", "html"):
            out.append(None)
            continue
        out.append(named_candidates(element, last_parent))
        last_parent = element.getparent()
    return out


def named_candidates(element, last_parent) -> list:
    """The elements whose names ``named_metadata`` reads for a block's element (``named_candidates_plain``); from
    the compiled walk where it is built, less those whose names cannot say a byline or a date (``_kind`` None)."""
    walk = native.walk
    found = walk.named_candidates(element, last_parent, MAX_INLINE_CHILDREN) if walk is not None else None
    return found if found is not None else named_candidates_plain(element, last_parent)


def named_candidates_plain(element, last_parent, max_inline: int = MAX_INLINE_CHILDREN) -> list:
    """The block's element, its parent (unless ``last_parent``, which the block before offered, or <body>/<html>),
    and, where the element has at most ``max_inline`` children, the inline elements inside it, in document order:
    the definition the compiled walk (``_walk.named_candidates``) is tested against."""
    candidates = [element]
    parent = element.getparent()
    if parent is not None and parent is not last_parent and parent.tag not in ("body", "html"):
        candidates.append(parent)
    if len(element) and len(element) <= max_inline:
        candidates += [inner for inner in element.iterdescendants(etree.Element) if inner.tag not in BLOCK_TAGS]
    return candidates


def _headline(seg: Segmented) -> int | None:
    """Index of the page's headline block: the one its document takes out of the body."""
    from .document import find_title

    return find_title(seg)[1]


def _article_top(seg: Segmented, headline: int | None) -> Sequence:
    """The blocks where bylines and dates sit: from a little before the headline to well after it (the page's
    first blocks when it has no headline)."""
    if headline is None:
        return seg.blocks[:NAMED_SCAN_BLOCKS]
    start = max(0, headline - NAMED_SCAN_BLOCKS // 4)
    return seg.blocks[start: headline + NAMED_SCAN_BLOCKS]


def _kind(element) -> str | None:
    """"author" or "date" when the element's class, rel or link target names one, else None."""
    attrs = element.get("class")
    rel = element.get("rel")
    if rel:
        attrs = f"{attrs} {rel}"
    if attrs:
        found = _named_kind(attrs)
        if found:
            return found
    if element.tag == "a" and _AUTHOR_HREF.search(element.get("href") or ""):
        return "author"
    return None


@functools.lru_cache(maxsize=8192)
def _named_kind(attrs: str) -> str | None:
    """``_kind`` of a class (and rel) value: a page's blocks repeat a few class values many times."""
    found = _NAMED_CLASS.search(attrs)
    return None if found is None else "author" if found.group(1) else "date"


def _date_beside(byline) -> dict[str, str]:
    """A date written in or beside the byline: in the byline's element or the smallest ancestor (of a few) whose
    short text holds one."""
    node = byline
    for _ in range(BYLINE_DATE_LEVELS):
        if node is None or node.tag == "body":
            break
        text = _short_text(node, MAX_BYLINE_CHARS * 2)
        if text is None:
            break
        day = find_date(text)
        if day:
            return {"date": day}
        node = node.getparent()
    return {}


def _in_comments(element) -> bool:
    """Whether the element or an ancestor has a class or id named like reader comments (_COMMENTS); read in C where
    the compiled walk is built and the names are ASCII (``_walk.in_comments``)."""
    test = getattr(native.walk, "in_comments", None)
    found = test(element) if test is not None else None
    if found is not None:
        return found
    node = element
    while node is not None:
        if _COMMENTS.search((node.get("class") or "") + " " + (node.get("id") or "")):
            return True
        node = node.getparent()
    return False


def looks_like_byline(block) -> bool:
    """A block that reads "By ..." or sits in an element named like a byline (author, byline, writer...)."""
    if _BYLINE.match(block.text):
        return True
    element = block.element
    if element is None:
        return False
    walk = native.walk  # a compiled look first: most blocks' names hold none of the words
    return (walk is None or walk.may_be_named_author(element, 3) is not False) and _named(element, _AUTHOR_NAMES, 3)


def nearby_blocks(seg: Segmented, headline: int | None | bool = False) -> list:
    """The blocks around the page's headline (its first blocks when it has none); ``headline``: its index, when
    already known."""
    headline = _headline(seg) if headline is False else headline
    if headline is None:
        return list(seg.blocks[:HEAD_BLOCKS])
    start = max(0, headline - NEAR_HEADLINE_BLOCKS // 3)
    return list(seg.blocks[headline + 1: headline + NEAR_HEADLINE_BLOCKS]) + list(seg.blocks[start:headline])


def _named(element, names: re.Pattern, levels: int = 3) -> bool:
    """Whether the element or one of its next ``levels`` ancestors has an id, class or rel named like ``names``."""
    node = element
    for _ in range(levels):
        if node is None:
            return False
        get = node.get
        for attr in _NAMING_ATTRS:  # the names' patterns need a space, "_", "-" or an end around each: a search of
            value = get(attr)  # each value finds what one of them all joined by spaces would
            if value and names.search(value):
                return True
        node = node.getparent()
    return False


# --- language ---------------------------------------------------------------------------------------------------

def detect_language(text: str) -> str | None:
    """ISO 639-1 code of the text's language (py3langid on its first LANG_SAMPLE_CHARS characters); None when the
    text is shorter than LANG_MIN_CHARS."""
    if len(text) < LANG_MIN_CHARS:
        return None
    language, _ = _identifier().classify(text[:LANG_SAMPLE_CHARS])
    return language


@functools.cache
def _identifier():
    """py3langid's identifier, read once a process: from an uncompressed, memory-mapped copy of its model in the
    user's cache folder (``language_model_cache``), written at first use; else from the packaged model,
    decompressed in memory (about 0.6 s and 70 MB more at every start)."""
    from py3langid import langid

    try:
        arrays = _cached_model() or _packaged_model()
    except (ImportError, OSError, KeyError, ValueError, EOFError):
        return langid._get_identifier()  # another model layout: the package's own loader
    kind = _with_compiled_walk(langid.LanguageIdentifier)
    if kind is langid.LanguageIdentifier:
        return kind(arrays["ptc"], arrays["pc"], arrays["classes"].tolist(), memoryview(arrays["nextmove"]),
                    arrays["out_feat"].tolist(), tk_row=memoryview(arrays["nextmove_row"]))
    # the lists the package's own walk reads (its row offsets pre-shifted, its outputs: 100k entries each, ~15 ms of
    # every start) are made at its first use (``Identifier.package_tables``): the compiled walk reads the tables
    identifier = kind(arrays["ptc"], arrays["pc"], arrays["classes"].tolist(), memoryview(arrays["nextmove"]), [],
                      tk_row=[])
    identifier.tk_row, identifier.outputs = memoryview(arrays["nextmove_row"]), arrays["out_feat"]
    identifier.tables = (arrays["nextmove"], arrays["nextmove_row"], arrays["out_feat"])
    return identifier


def _with_compiled_walk(package_class):
    """py3langid's identifier whose walk of its byte automaton over the text (the package's visit_counts, a Python
    loop over the bytes: nine tenths of a classification) is done in Cython (templater._walk.dfa_visits) over the
    same tables (``tables``: nextmove, nextmove_row, out_feat); the counts, in the same order, are scored by the
    package's own code, so every answer is the package's. The package's class itself where it is laid out
    otherwise; the package's walk where the compiled part is not built (native.walk read at each call, as
    everywhere)."""
    if not all(hasattr(package_class, name) for name in ("_raw_score", "_sparse_score", "__slots__")):
        return package_class

    class Identifier(package_class):
        __slots__ = ("tables", "outputs")

        def _raw_score(self, data):
            walk = getattr(native.walk, "dfa_visits", None)
            if walk is None or not isinstance(data, bytes) or getattr(self, "tables", None) is None:
                return self.package_walk(data)
            visits = walk(*self.tables, data)
            return self._sparse_score(visits, self.nb_ptc) if visits else self.package_walk(data)

        def package_walk(self, data):
            """The package's own _raw_score."""
            self.package_tables()
            return super()._raw_score(data)

        def package_tables(self) -> None:
            """The lists the package's walk reads, as its __init__ makes them, made at their first use."""
            if not self._rowbase and getattr(self, "outputs", None) is not None:
                self._rowbase = [row << 8 for row in self.tk_row]
                self.tk_output = self.outputs.tolist()

    return Identifier


_MODEL_ARRAYS = {"ptc": "float32", "pc": "float32", "classes": "<U3", "nextmove": "uint32",
                 "nextmove_row": "uint16", "out_feat": "int32"}  # py3langid's model: name -> dtype as used


def _model_file():
    from pathlib import Path

    from py3langid import langid

    return Path(langid.__file__).parent / langid.MODEL_FILE


def _packaged_model() -> dict:
    """The packaged model's arrays, decompressed in memory, in the dtypes the identifier uses."""
    import io
    import lzma

    import numpy as np

    try:
        with np.load(io.BytesIO(lzma.decompress(_model_file().read_bytes())), allow_pickle=False) as data:
            return {name: np.ascontiguousarray(data[name], dtype=dtype) for name, dtype in _MODEL_ARRAYS.items()}
    except lzma.LZMAError as error:
        raise ValueError(str(error)) from error




def language_model_cache():
    """The folder of the uncompressed model: $TEMPLATER_CACHE, else $XDG_CACHE_HOME/templater, else
    ~/.cache/templater; named after the packaged model's size and time, so an upgrade of py3langid gets its own."""
    import os
    from pathlib import Path

    root = os.environ.get("TEMPLATER_CACHE") or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache",
                                                     "templater")
    stat = _model_file().stat()
    return Path(root) / f"langid-{stat.st_size}-{stat.st_mtime_ns}"


def _mark_used(manifest_file) -> None:
    """Mark a copy of the model as in use (its manifest's time), at most once a day: other installs remove only
    copies left unused for LANGID_UNUSED_SECONDS."""
    import os
    import time

    try:
        if time.time() - manifest_file.stat().st_mtime > 86400:
            os.utime(manifest_file)
    except OSError:
        pass


def _remove_unused_copies(folder) -> None:
    """Remove the other installs' copies of the model (93 MB each: every install of py3langid writes its own) whose
    manifest was not marked in use for LANGID_UNUSED_SECONDS; a process that still maps one keeps its pages."""
    import shutil
    import time

    for other in folder.parent.glob("langid-*"):
        if other == folder or ".tmp" in other.name or not other.is_dir():
            continue
        try:
            unused = time.time() - (other / "manifest.json").stat().st_mtime > LANGID_UNUSED_SECONDS
        except OSError:  # no manifest: a foreign or broken folder, judged by its own time
            try:
                unused = time.time() - other.stat().st_mtime > LANGID_UNUSED_SECONDS
            except OSError:
                continue
        if unused:
            shutil.rmtree(other, ignore_errors=True)


def _cached_model() -> dict | None:
    """The model's arrays memory-mapped from the cache folder (written first when missing); None when the folder
    cannot be written or read (the caller decompresses the packaged model then). Writers race safely: each writes
    a private folder and renames it into place (a rename is atomic; the loser's copy is dropped); a folder whose
    files do not match its manifest (a corrupt or foreign copy) is not used."""
    import json as json_module
    import os
    import shutil
    import tempfile
    import time

    import numpy as np

    try:
        folder = language_model_cache()
        if not folder.is_dir():
            arrays = _packaged_model()
            folder.parent.mkdir(parents=True, exist_ok=True)
            for stale in folder.parent.glob(folder.name + ".tmp*"):  # left by a writer that was killed
                if time.time() - stale.stat().st_mtime > LANGID_STALE_SECONDS:
                    shutil.rmtree(stale, ignore_errors=True)
            temporary = tempfile.mkdtemp(prefix=folder.name + ".tmp", dir=folder.parent)
            try:
                for name, array in arrays.items():
                    np.save(os.path.join(temporary, name + ".npy"), array, allow_pickle=False)
                manifest = {name: [array.dtype.str, list(array.shape)] for name, array in arrays.items()}
                with open(os.path.join(temporary, "manifest.json"), "w", encoding="utf-8") as f:
                    json_module.dump(manifest, f)
                os.rename(temporary, folder)
            except OSError:
                shutil.rmtree(temporary, ignore_errors=True)
                if not folder.is_dir():
                    return None
            _remove_unused_copies(folder)
        manifest_file = folder / "manifest.json"
        manifest = json_module.loads(manifest_file.read_text(encoding="utf-8"))
        _mark_used(manifest_file)
        found = {}
        for name, dtype in _MODEL_ARRAYS.items():
            array = np.load(folder / (name + ".npy"), mmap_mode="r", allow_pickle=False)
            if array.dtype != np.dtype(dtype) or [array.dtype.str, list(array.shape)] != manifest[name]:
                return None
            found[name] = np.asarray(array)
        return found
    except (OSError, ValueError, KeyError, TypeError, EOFError):
        return None
