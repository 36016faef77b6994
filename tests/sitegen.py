"""Hand-built pages of a small site for tests: a fixed header, menu and footer around varying articles."""

from __future__ import annotations

import html as _html
import random

from templater.blocks import segment
from templater.parse import parse_html
from templater.datatypes import Page

WORDS = ("river stone garden window market letter winter engine harbour signal paper orchard lantern valley "
         "copper meadow ladder candle bridge thunder").split()

ARTICLE = """<html><head><title>{title} - Example News</title></head><body>
<div id="header"><a href="/">Example News</a><div class="tagline">All the news that fits</div></div>
<ul id="menu"><li><a href="/world/">World</a></li><li><a href="/sport/">Sport</a></li>
<li><a href="/science/">Science</a></li><li><a href="/arts/">Arts</a></li></ul>
<div id="main"><div class="article"><h1>{title}</h1><div class="byline">By {author} on {date}</div>
{paragraphs}
</div>
<div class="related"><h3>Related stories</h3><ul>{related}</ul></div></div>
<div id="footer"><p>Copyright Example News. All rights reserved.</p><p><a href="/about">About us</a> |
<a href="/contact">Contact</a></p></div></body></html>"""


def sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."


def article_html(seed: int, *, paragraphs: int = 4) -> tuple[str, str]:
    """(html, the article's text one paragraph a line) of one page of the site."""
    rng = random.Random(seed)
    title = sentence(rng, 6)[:-1]
    paras = [" ".join(sentence(rng, rng.randint(8, 16)) for _ in range(3)) for _ in range(paragraphs)]
    related = "".join(f'<li><a href="/story/{rng.randint(1, 999)}">{sentence(rng, 5)}</a></li>' for _ in range(4))
    html = ARTICLE.format(title=title, author=rng.choice(["Ann Lee", "Bo Chan", "Cy Diaz"]),
                          date=f"March {rng.randint(1, 28)}, 2024",
                          paragraphs="\n".join(f"<p>{p}</p>" for p in paras), related=related)
    return html, "\n".join([title] + paras)


def site_pages(count: int, *, base: str = "https://news.example.com/story/", start: int = 0):
    """Segmented pages of the site with their article texts."""
    out = []
    for seed in range(start, start + count):
        html, text = article_html(seed)
        page = Page(id=f"p{seed}", url=f"{base}{seed}.html", html=html)
        out.append((segment(parse_html(html), page), text))
    return out


def list_page(seed: int, *, base: str = "https://news.example.com/story/"):
    """(segmented page, its list's entries) of an index page of the news site, in the articles' layout: the
    headline, then a numbered list of links to topics where an article has its paragraphs, and no paragraph at all."""
    import re

    html, _ = article_html(seed)
    entries = [f"{word.capitalize()} {seed}-{i}" for i, word in enumerate(WORDS)]
    items = "".join(f'<li><a href="/topic/{seed}/{i}">{e}</a></li>' for i, e in enumerate(entries))
    html = re.sub(r'(<div class="byline">.*?</div>)(.*?)(</div>\s*<div class="related">)',
                  lambda m: m.group(1) + f'<ol class="topics">{items}</ol>' + m.group(3), html, flags=re.S)
    page = Page(id=f"l{seed}", url=f"{base}topics-{seed}.html", html=html)
    return segment(parse_html(html), page), entries


def store_extracted(db, texts: dict[str, str], *, boilerplate: dict[str, int] | None = None) -> None:
    """Store pages with their extracted texts directly, as `templater extract` leaves them (no extraction run)."""
    import numpy as np

    from store import pages as page_store

    page_store.ensure_schema(db)
    for page_id, text in texts.items():
        page_store.upsert_page(db, id=page_id, url=f"https://example.com/{page_id}", host="example.com",
                               html="<p>x</p>", digest=page_id, fetched_at=None, encoding="utf-8",
                               hashes=np.zeros(1, np.uint32), shapes=np.zeros(1, np.uint32), text_chars=1,
                               now="2024-01-01")
        page_store.save_extraction(db, page_id=page_id, site="example.com/", method="template", template=None,
                                   coverage=None, text=text, boilerplate_chars=(boilerplate or {}).get(page_id, 0),
                                   digest=page_id, now="2024-01-01")


REFERENCE = """<html><head><title>{title} - Example Manual</title></head><body>
<div class="header"><a href="/">Example Manual</a> <a href="/search">Search</a></div>
<ul class="nav"><li><a href="/guide/">Guide</a></li><li><a href="/reference/">Reference</a></li>
<li><a href="/faq/">FAQ</a></li><li><a href="/download/">Download</a></li></ul>
<div class="document"><div class="body" role="main">
<h1>{title}</h1>
{paragraphs}
<dl class="function"><dt><code>{name}(path, *, mode='r')</code></dt><dd><p>{signature}</p></dd></dl>
<pre>$ example {name} --verbose input.txt
{name}: done</pre>
<h2>Options</h2>
<table class="options"><tr><th>Option</th><th>Meaning</th></tr>
<tr><td>--verbose</td><td>Print every file as it is processed, with its size and the time it took.</td></tr>
<tr><td>--quiet</td><td>Print nothing but errors; the exit status tells whether the run succeeded.</td></tr>
<tr><td>--dry-run</td><td>Show what would change without writing anything to the disk.</td></tr></table>
<div class="admonition caution"><p class="admonition-title">Caution</p>
<p>Never run the command on a repository that another process is writing to: the index may be left in a state
that only a full rebuild repairs, and work in progress can be lost.</p></div>
{more}
<h3>Methods inherited from class Object</h3>
<div class="inherited"><code><a href="/o#clone">clone</a>, <a href="/o#equals">equals</a>,
<a href="/o#finalize">finalize</a>, <a href="/o#getClass">getClass</a>, <a href="/o#hashCode">hashCode</a>,
<a href="/o#notify">notify</a>, <a href="/o#notifyAll">notifyAll</a>, <a href="/o#toString">toString</a>,
<a href="/o#wait()">wait</a>, <a href="/o#wait(long)">wait</a>, <a href="/o#wait(long,int)">wait</a></code></div>
</div></div>
<div class="footer"><p>Copyright Example Manual authors. Licensed under the MIT licence.</p>
<p><a href="/about">About</a> | <a href="/contact">Contact</a></p></div></body></html>"""

# What the reference pages repeat on every page as part of their content (the gold keeps it)
REPEATED_CONTENT = ("Print every file as it is processed", "Never run the command on a repository",
                    "clone, equals, finalize", "--dry-run")  # not the box's one-word title: a short label


def reference_html(seed: int, *, share_bar: bool = False) -> tuple[str, str]:
    """(html, the content's text one paragraph a line) of one page of a reference manual that repeats an options
    table, a caution box and an inherited-members list inside its content on every page; with ``share_bar``, a
    share bar of links inside the content."""
    rng = random.Random(seed)
    name = rng.choice(WORDS) + str(seed)
    title = f"The {name} command"
    paras = [" ".join(sentence(rng, rng.randint(8, 16)) for _ in range(2)) for _ in range(3)]
    signature = sentence(rng, 12)
    more = [" ".join(sentence(rng, rng.randint(8, 16)) for _ in range(2))]
    bar = ('<div class="share-bar"><a href="/s/t">Twitter</a> <a href="/s/f">Facebook</a> '
           '<a href="/s/m">Email</a></div>' if share_bar else "")
    html = REFERENCE.format(title=title, name=name, signature=signature,
                            paragraphs="\n".join(f"<p>{p}</p>" for p in paras),
                            more=bar + "\n".join(f"<p>{p}</p>" for p in more))
    return html, "\n".join([title] + paras + [signature] + more)


def reference_pages(count: int, *, start: int = 0, share_bar: bool = False):
    """Segmented pages of the reference manual with their texts."""
    out = []
    for seed in range(start, start + count):
        html, text = reference_html(seed, share_bar=share_bar)
        page = Page(id=f"r{seed}", url=f"https://manual.example.com/reference/{seed}.html", html=html)
        out.append((segment(parse_html(html), page), text))
    return out


INTERFACE = """<html><head><title>{name} - Example API</title></head><body>
<header><nav><ul><li><a href="/overview">Overview</a></li><li><a href="/package">Package</a></li>
<li><a href="/tree">Tree</a></li><li><a href="/index-all">Index</a></li><li><a href="/help">Help</a></li></ul></nav>
</header>
<div class="flex-content"><main role="main">
<div class="header"><h1>Interface {name}&lt;E extends Throwable&gt;</h1></div>
<section class="description"><dl class="notes"><dt>Type Parameters:</dt><dd>E - Thrown exception.</dd>
<dt>Functional Interface:</dt><dd>This is a functional interface and can therefore be used as the assignment target
for a lambda expression or method reference.</dd></dl>
<div class="type-signature">@FunctionalInterface public interface {name}&lt;E extends Throwable&gt;</div>
<div class="block">{description}</div>
<dl class="notes"><dt>Since:</dt><dd>3.11</dd></dl></section>
<section class="summary"><h2>Field Summary</h2><div class="caption"><span>Fields</span></div>
<div class="summary-table"><div class="table-header">Modifier and Type</div><div class="table-header">Field</div>
<div class="table-header">Description</div><div class="col-first"><a href="/api/{name}">static final {name}</a></div>
<div class="col-second"><a href="#NOP">NOP</a></div><div class="col-last"><div class="block">NOP singleton</div></div>
</div>
<h2>Method Summary</h2><div class="summary-table"><div class="table-header">Modifier and Type</div>
<div class="table-header">Method</div><div class="table-header">Description</div>
<div class="col-first">{returns}</div><div class="col-second"><a href="#{method}">{method}(int value)</a></div>
<div class="col-last"><div class="block">{summary}</div></div></div></section>
<section class="details"><h2>Method Details</h2><h3>{method}</h3>
<div class="member-signature">{returns} {method}(int value) throws E</div>
<div class="block">{summary}</div>
<dl class="notes"><dt>Parameters:</dt><dd>value - the function argument</dd><dt>Throws:</dt><dd>{throws}</dd>
<dt>Returns:</dt><dd>the function result</dd></dl></section>
</main></div>
<footer><p class="legal-copy">Copyright 2001-2025 The Example Foundation. All rights reserved.</p></footer>
</body></html>"""

# What every interface page repeats inside its content (the gold keeps it): short labels among them
INTERFACE_REPEATED = ("Type Parameters:", "This is a functional interface", "Since:", "Method Summary",
                      "Parameters:", "the function result")


def interface_html(seed: int) -> tuple[str, str]:
    """(html, the page's own varying text one line each) of an API reference's page for one of many near-identical
    functional interfaces: the same notes, summary tables with the same header cells and the same details
    labels on every page, around a name, a description and one method whose summary sentence (long) is said
    again in the method's details, before its parameters."""
    rng = random.Random(seed)
    name = "Failable" + "".join(w.capitalize() for w in rng.sample(WORDS, 2)) + "Function"
    method = "apply" + rng.choice(WORDS).capitalize()
    description = f"A functional interface like {name[8:]} that declares a Throwable. " + sentence(rng, 10)
    summary = "Applies this function to the given argument and " + sentence(rng, 14)
    returns = rng.choice(["long", "int", "double", "boolean"])
    throws = "E - Thrown when the function fails: " + sentence(rng, 16)
    html = INTERFACE.format(name=name, method=method, description=description, summary=summary, returns=returns,
                            throws=throws)
    return html, "\n".join([description, summary, throws])


def interface_pages(count: int, *, start: int = 0):
    """Segmented interface pages of the API reference with their own texts."""
    return _segmented(interface_html, range(start, start + count), "i",
                      "https://api.example.com/function/{}.html")


CLASS = """<html><head><title>{name} - Example Library API</title></head><body>
<header><nav><ul><li><a href="/overview">Overview</a></li><li><a href="/package">Package</a></li>
<li><a href="/tree">Tree</a></li><li><a href="/index-all">Index</a></li><li><a href="/help">Help</a></li></ul></nav>
</header>
<div class="flex-box"><div class="flex-content"><main role="main">
<div class="header"><div class="sub-title">Package <a href="package-summary.html">org.example.util</a></div>
<h1>Class {name}</h1></div>
<div class="inheritance"><a href="https://docs.example.org/Object.html">java.lang.Object</a>
<div class="inheritance">org.example.util.{name}</div></div>
<section class="class-description"><div class="type-signature">public class {name} extends Object</div>
<div class="block"><p>{description}</p></div></section>
{related}
<section class="summary"><ul class="summary-list"><li><section class="constructor-summary"><h2>Constructor Summary</h2>
<div class="caption"><span>Constructors</span></div>
<div class="summary-table"><div class="table-header">Constructor</div><div class="table-header">Description</div>
<div class="col-constructor-name"><a href="#init">{name}()</a></div>
<div class="col-last"><div class="block">{constructor}</div></div></div></section></li>
<li><section class="method-summary"><h2>Method Summary</h2>
<div class="summary-table"><div class="table-header">Modifier and Type</div><div class="table-header">Method</div>
<div class="table-header">Description</div>{rows}</div>
<div class="inherited-list"><h3>Methods inherited from class java.lang.<a href="/o">Object</a></h3>
<code><a href="/o#clone">clone</a>, <a href="/o#equals">equals</a>, <a href="/o#finalize">finalize</a>,
<a href="/o#getClass">getClass</a>, <a href="/o#hashCode">hashCode</a>, <a href="/o#notify">notify</a>,
<a href="/o#toString">toString</a>, <a href="/o#wait">wait</a></code></div></section></li></ul></section>
<section class="details"><ul class="details-list"><li><section class="method-details"><h2>Method Details</h2>
<ul class="member-list">{details}</ul></section></li></ul></section>
</main>
<footer><p class="legal-copy">Copyright 2001-2025 The Example Foundation. All rights reserved.</p></footer>
</div></div></body></html>"""

# What every class page repeats inside its <main> (the gold keeps it): header cells, a caption, the root of the
# inheritance tree, the inherited members' line, a deprecation label and the overloads' shared description
CLASS_REPEATED = ("Constructors", "Constructor", "Modifier and Type", "Description", "java.lang.Object",
                  "clone, equals, finalize", "Deprecated.", "Provides highly reusable")


def class_html(seed: int) -> tuple[str, str]:
    """(html, the content's text one block a line) of an API reference's page for one class, as Javadoc writes it:
    in <main>, a grid of cells under header cells that every page repeats (its descriptions longer than a short
    cell, so the grid is no row of short cells), a table's caption, the inheritance tree's root and the inherited
    members' line of links, a "Deprecated." label before one method's note, a method's overloads whose details
    say the same two paragraphs again, and on a quarter of the pages a box named like related links that holds a
    related package with its description."""
    rng = random.Random(seed)
    name = "".join(w.capitalize() for w in rng.sample(WORDS, 2)) + "Utils"
    description = f"Operations on {name[:-5]} values that are null safe. " + " ".join(sentence(rng, 14)
                                                                                       for _ in range(4))
    constructor = f"{name} instances should not be constructed in standard programming. " + sentence(rng, 6)
    methods = [rng.choice(WORDS) + rng.choice(WORDS).capitalize() for _ in range(3)]
    shared = [sentence(rng, 16) for _ in range(2)]
    note = "as of 3.6, use " + sentence(rng, 6)
    rows, details, own = [], [], []
    for i, method in enumerate(methods):
        summary = f"Returns the {method} of the given value, " + sentence(rng, 16 + 2 * i)
        deprecated = i == 1
        block = (f'<div class="block"><span class="deprecated-label">Deprecated.</span><div class="deprecation-comment">'
                 f'{note}</div></div>' if deprecated else f'<div class="block">{summary}</div>')
        rows.append(f'<div class="col-first"><code>static int</code></div><div class="col-second"><code><a href="#{method}">'
                    f'{method}</a>(int value)</code></div><div class="col-last">{block}</div>')
        own += ["static int", f"{method}(int value)"] + (["Deprecated.", note] if deprecated else [summary])
    for method in methods[:2]:
        for overload in ("int value", "long value"):
            details.append(f'<li><section class="detail"><h3>{method}</h3><div class="member-signature">public static '
                           f'int {method}({overload})</div><div class="block">'
                           + "".join(f"<p>{p}</p>" for p in shared) + f"<p>{method} {overload}: {sentence(rng, 16)}</p>"
                           + f'</div><dl class="notes"><dt>Parameters:</dt><dd>value - {sentence(rng, 4)}</dd></dl>'
                           '</section></li>')
    package = rng.choice(WORDS)
    related = "" if seed % 4 else (
        '<div id="related-package-summary"><div class="caption"><span>Related Packages</span></div><div '
        f'class="summary-table"><div class="col-first"><a href="../package-summary.html">org.example.{package}</a>'
        f'</div><div class="col-last"><div class="block">Provides highly reusable {package} methods, chiefly concerned'
        " with adding value to the language's own classes.</div></div></div></div>")
    html = CLASS.format(name=name, description=description, constructor=constructor, rows="".join(rows),
                        details="".join(details), related=related)
    return html, "\n".join([f"Class {name}", "java.lang.Object", f"org.example.util.{name}",
                            f"public class {name} extends Object", description]
                           + ([] if seed % 4 else ["Related Packages", f"org.example.{package}"])
                           + [constructor] + own + shared)


def class_pages(count: int, *, start: int = 0):
    """Segmented class pages of the API reference with their texts."""
    return _segmented(class_html, range(start, start + count), "c", "https://api.example.com/util/{}.html")


WRAPPED = """<html><head><title>{title} - Example Times</title></head><body>
<div id="page"{wrapper}><nav class="top"><a href="/">Example Times</a> <a href="/world">World</a>
<a href="/sport">Sport</a></nav>
<div class="story"{story}><h1>{title}</h1>
<ul class="reactions"><li>Like</li><li>Dislike</li></ul><div class="prefs">Edit content preferences</div>
{paragraphs}
<div class="legal">Copyright The Example Press. All rights reserved.</div></div>
<div class="bottom">{teasers}</div></div></body></html>"""


def wrapped_html(seed: int, *, wrapper: bool = True) -> tuple[str, str]:
    """(html, the story's text one paragraph a line) of a news page whose role=main element wraps the whole page
    (right under <body>, with the site's <nav>): the same "Like | Dislike" list and preferences label between the
    headline and the story on every page are the site's, not the story's. Without ``wrapper``, the story's division
    is the role=main element, the preferences label is left out, the same agency's credit stands beside a
    picture between two paragraphs and a box of links to related stories between two others."""
    rng = random.Random(seed)
    title = sentence(rng, 6)[:-1]
    paras = [" ".join(sentence(rng, rng.randint(8, 16)) for _ in range(3)) for _ in range(4)]
    teasers = "".join(f'<p>{sentence(rng, 5)}</p>' for _ in range(3))
    body = [f"<p>{p}</p>" for p in paras]
    if not wrapper:
        body.insert(2, f'<p><img src="/pictures/{seed}.jpg" alt=""><span>EXAMPLE PRESS AGENCY</span></p>')
        body.insert(4, '<div class="related-stories"><h4>Related</h4>' + "".join(
            f'<p><a href="/story/{seed}/{i}">{sentence(rng, 6)}</a></p>' for i in range(3)) + "</div>")
    html = WRAPPED.format(title=title, paragraphs="\n".join(body), teasers=teasers,
                          wrapper=' role="main"' if wrapper else "", story="" if wrapper else ' role="main"')
    if not wrapper:
        html = html.replace('<div class="prefs">Edit content preferences</div>', "")
    return html, "\n".join([title] + paras)


def wrapped_pages(count: int, *, start: int = 0, wrapper: bool = True):
    """Segmented pages of the news site with their texts (``wrapper``: wrapped_html's)."""
    return _segmented(lambda seed: wrapped_html(seed, wrapper=wrapper), range(start, start + count), "w",
                      "https://times.example.com/story/{}.html")


GUIDE = """<html><head><title>{title} - Example Guide</title></head><body>
<div class="navheader"><a href="/">Home</a> <a href="/prev">Prev</a> <a href="/next">Next</a></div>
<div class="chapter">
<h2>{title}</h2>
<div class="toc"><p>Table of Contents</p>{toc}</div>
{paragraphs}
<div class="summary"><div>Name</div><div>Description</div>{cells}</div>
<div class="notice"><span>Advertisement</span></div>
{sections}{colophon}
</div>
<div class="navfooter"><a href="/prev">Prev</a> <a href="/up">Up</a> <a href="/next">Next</a>
<p>Example Guide, all rights reserved.</p></div>
</body></html>"""


COLOPHON = "Part of the Example suite"  # a guide chapter's last section: the same short line on every chapter


def guide_html(seed: int, *, terms: bool = False, colophon: bool = False, nested: bool = False) -> tuple[str, str]:
    """(html, the chapter's own text one paragraph a line) of one chapter of a DocBook-style guide: its content
    division right under <body>, a table of contents of links that varies from chapter to chapter (its title the
    only static line inside), a grid of short cells under the same "Name | Description" header on every chapter,
    a lone "Advertisement" label, and sections whose heading a list of links to their pages follows on a third of
    the chapters. With
    ``terms``, the table of contents is a definition list of the chapter's own terms instead (no links, at the
    same tag path). With ``colophon``, the chapter ends with a "Colophon" section whose one line is COLOPHON. With
    ``nested``, on a quarter of the chapters every other entry of the table of contents lists its subsections in a
    nested list of links."""
    rng = random.Random(seed)
    title = f"Chapter {seed}. " + sentence(rng, 3)[:-1]
    paras = [" ".join(sentence(rng, rng.randint(8, 16)) for _ in range(2)) for _ in range(3)]
    toc_entries = [f"{seed}.{i}. " + sentence(rng, 3)[:-1] for i in range(1, 9)]
    if terms:
        toc = "<dl>" + "".join(f"<dt>{t}</dt><dd><p>{sentence(rng, 10)}</p></dd>" for t in toc_entries) + "</dl>"
    else:
        toc = "<dl>" + "".join(f'<dt><a href="/s/{seed}/{i}">{t}</a></dt>' + (
            "<dd><dl>" + "".join(f'<dt><a href="/s/{seed}/{i}/{j}">{seed}.{i}.{j}. {sentence(rng, 3)[:-1]}</a></dt>'
                                 for j in range(1, 3)) + "</dl></dd>" if nested and i % 2 and seed % 4 == 0 else "")
            for i, t in enumerate(toc_entries)) + "</dl>"
    cells = [(rng.choice(WORDS) + str(seed), sentence(rng, 4)) for _ in range(2)]
    sections = []
    own = [title] + paras + [c for pair in cells for c in pair]
    for n in range(2):
        heading, body = sentence(rng, 4)[:-1], " ".join(sentence(rng, 12) for _ in range(2))
        links = [sentence(rng, 3)[:-1] for _ in range(3)] if seed % 3 == 0 else []  # on a third of the chapters
        sections.append(f"<h3>{heading}</h3>"
                        + "".join(f'<ul><li><a href="/p/{seed}/{n}/{i}">{t}</a></li></ul>' for i, t in enumerate(links))
                        + f"<p>{body}</p>")
        own += [heading, body] + links
    end = f'<div class="sect"><h3>Colophon</h3><div><p>{COLOPHON}</p></div></div>' if colophon else ""
    html = GUIDE.format(title=title, toc=toc, paragraphs="\n".join(f"<p>{p}</p>" for p in paras),
                        cells="".join(f"<div>{a}</div><div>{b}</div>" for a, b in cells), sections="\n".join(sections),
                        colophon=end)
    return html, "\n".join(own + (["Colophon", COLOPHON] if colophon else []))


def guide_pages(count: int, *, start: int = 0, terms: bool = False, colophon: bool = False, nested: bool = False):
    """Segmented chapters of the guide with their texts."""
    return _segmented(lambda seed: guide_html(seed, terms=terms, colophon=colophon, nested=nested),
                      range(start, start + count), "g", "https://guide.example.com/book/ch{}.html")


BOOK = """<html><head><title>{title} &#8212; Example Book</title></head><body>
<div class="related" role="navigation"><h3>Navigation</h3><ul><li><a href="../genindex.html">index</a></li>
<li><a href="../modindex.html">modules</a> |</li><li><a href="{next}">next</a> |</li>
<li><a href="../index.html">Example Book</a> &#187;</li></ul></div>
<div class="document"><div class="documentwrapper"><div class="bodywrapper"><div class="body" role="main">
<section id="{anchor}"><h1>{title}</h1>
{body}
</section></div></div></div>
<div class="sphinxsidebar" role="navigation"><h3>Table of Contents</h3><ul>{local}</ul>
<h4>Next topic</h4><p class="topless"><a href="{next}">{next_title}</a></p>
<h3>This Page</h3><ul><li><a href="../bugs.html">Report a Bug</a></li>
<li><a href="../_sources/x.txt">Show Source</a></li></ul></div><div class="clearer"></div></div>
<div class="footer">&#169; Copyright 2001-2025, Example Foundation. Created using Sphinx.</div>
</body></html>"""


def book_html(seed: int, *, links: str = "relative", notes: bool = False) -> tuple[str, str]:
    """(html, the page's text one block a line) of a page of a Sphinx-style book in its chapter's folder: on every
    fourth page a chapter's index (an introduction, then its toctree: a nested list of links to the chapter's pages
    and their sections, the last of the page's content), else a page of sections of prose. ``links``: how the
    toctree links its pages, "relative" (a generator's "page3.html#usage") or "rooted" (a news site's
    "/book/page3.html"). With ``notes``, the page's last section ends with its footnotes in an <aside role="note">,
    as docutils writes them."""
    rng = random.Random(seed)
    title = f"{rng.choice(WORDS).capitalize()} {seed} " + sentence(rng, 2)[:-1].lower()
    own = [title]
    body = []
    local = []
    if seed % 4 == 0:
        intro = " ".join(sentence(rng, rng.randint(10, 16)) for _ in range(3))
        lead = "The following pages are documented in this chapter:"
        body += [f"<p>{intro}</p>", f"<p>{lead}</p>", '<div class="toctree-wrapper compound"><ul>']
        own += [intro, lead]
        for n in range(1, 6):
            page = f"{rng.choice(WORDS)}{seed}-{n}"
            href = f"{page}.html" if links == "relative" else f"/book/{page}.html"
            entry, sections = f"{page} \N{EM DASH} {sentence(rng, 4)[:-1]}", [sentence(rng, 2)[:-1] for _ in range(3)]
            body.append(f'<li class="toctree-l1"><a class="reference internal" href="{href}">{entry}</a><ul>'
                        + "".join(f'<li class="toctree-l2"><a class="reference internal" href="{href}#s{k}">{s}</a>'
                                  "</li>" for k, s in enumerate(sections)) + "</ul></li>")
            own += [entry] + sections
        body.append("</ul></div>")
    else:
        for n in range(3):
            heading = sentence(rng, 3)[:-1]
            paras = [" ".join(sentence(rng, rng.randint(8, 16)) for _ in range(3)) for _ in range(2)]
            body.append(f'<section id="s{n}"><h2>{heading}</h2>' + "".join(f"<p>{p}</p>" for p in paras) + "</section>")
            local.append(f'<li><a class="reference internal" href="#s{n}">{heading}</a></li>')
            own += [heading] + paras
    if notes:
        note = "Footnote: " + sentence(rng, 14)
        body.append('<p class="rubric">Footnotes</p><aside class="footnote-list brackets">'
                    '<aside class="footnote brackets" id="id1" role="note"><span class="label">'
                    '<span class="fn-bracket">[</span><a role="doc-backlink" href="#id2">1</a>'
                    f'<span class="fn-bracket">]</span></span><p>{note}</p></aside></aside>')
        own += ["Footnotes", "[1]", note]
    following = f"{rng.choice(WORDS)}{seed + 1}.html"
    html = BOOK.format(title=title, anchor=f"page-{seed}", body="\n".join(body), local="".join(local), next=following,
                       next_title=sentence(rng, 3)[:-1])
    return html, "\n".join(own)


def book_pages(count: int, *, start: int = 0, links: str = "relative", notes: bool = False):
    """Segmented pages of the book (one chapter's folder) with their texts."""
    return _segmented(lambda seed: book_html(seed, links=links, notes=notes), range(start, start + count), "b",
                      "https://book.example.com/3.1/library/page{}.html")


FEED = """<html><head><title>{title} - Daily Example</title></head><body>
<div class="top"><a href="/">Daily Example</a> <a href="/news">News</a> <a href="/sport">Sport</a></div>
<div class="page"><article><h1>{title}</h1>
{paragraphs}
<div class="pager"><a href="/prev">Previous article</a> <a href="/next">Next article</a></div>
<div class="box"><div>Don't miss</div><div>01</div><div>02</div><div>03</div></div>
<div class="stream">{items}</div>
</article></div>
<div class="foot"><p>Copyright Daily Example. All rights reserved.</p></div>
</body></html>"""


def feed_html(seed: int) -> tuple[str, str]:
    """(html, the article's text one paragraph a line) of a news page whose <article> holds, after the story and
    a run of the site's chrome, a feed of other stories: a date and a one-line teaser each, different on every
    page, no links, no class naming them."""
    rng = random.Random(seed)
    title = sentence(rng, 6)[:-1]
    paras = [" ".join(sentence(rng, rng.randint(8, 16)) for _ in range(3)) for _ in range(4)]
    items = "".join(f"<div><div>{rng.randint(1, 28)} March 2024 {rng.randint(1, 12)}:{rng.randint(10, 59)} PM</div>"
                    f"<div>{sentence(rng, 6)}</div></div>" for _ in range(5))
    html = FEED.format(title=title, paragraphs="\n".join(f"<p>{p}</p>" for p in paras), items=items)
    return html, "\n".join([title] + paras)


def feed_pages(count: int, *, start: int = 0):
    """Segmented pages of the feed site with their article texts."""
    return _segmented(feed_html, range(start, start + count), "f", "https://daily.example.com/story/{}.html")


def _segmented(make, seeds, prefix: str, url: str) -> list:
    """(segmented page, text) of each seed's page, made by ``make(seed) -> (html, text)``."""
    out = []
    for seed in seeds:
        html, text = make(seed)
        page = Page(id=f"{prefix}{seed}", url=url.format(seed), html=html)
        out.append((segment(parse_html(html), page), text))
    return out


# --- genre sites: forum/Q&A, product and encyclopaedia pages with realistic chrome --------------------------
# Each genre has three chrome variants (class/id naming: plain words, BEM-like, hashed utility classes) on their
# own hosts, so that whole variants can be held out. Pages repeat content across the site (spec-table labels,
# infobox labels, a shipping paragraph, an answer's code) and mix it with chrome that also repeats (menus,
# share bars, sidebars of links, tag lists, author cards, footers). ``genre_page`` returns the page's HTML and
# its gold text (the main content, one paragraph a line): what a reader of the page came for, comments,
# reviews and chrome excluded.


GENRES = ("forum", "product", "encyclopedia")
VARIANTS = 3

_VOCAB = ("the of and to in a is that for it as with was on be by this are from at an which or have not were "
          "has but their more can its been also one other when all they new only these some would first two "
          "after time may most over into such than many most then used where between both while however later "
          "system water city people work number part world state light power group example form process "
          "method value model design market energy network field table result order level point line house "
          "river valley engine signal garden harbour copper winter bridge meadow lantern orchard thunder season "
          "century region museum library program version server client kernel buffer module request response "
          "battery camera screen cable charger frame fabric handle surface storage memory speed weight "
          "colour size setting option support install update error file folder page address account").split()
_NAMES = ("maria_k", "dev_otter", "jlee", "quantumfox", "p.silva", "anna-b", "rk1984", "the_real_tom", "yusuf",
          "lin.chen", "bytewise", "gardener42")


def _prose(rng: random.Random, sentences: int) -> str:
    out = []
    for _ in range(sentences):
        words = [rng.choice(_VOCAB) for _ in range(rng.randint(7, 22))]
        if rng.random() < 0.5:
            words.insert(rng.randint(2, len(words) - 1), f"{rng.choice(_VOCAB)},")
        if rng.random() < 0.25:
            words.insert(rng.randint(1, len(words) - 1), str(rng.randint(2, 1990)))
        out.append(" ".join(words).capitalize() + rng.choice(".....?!"[: 5 + (rng.random() < 0.1)]))
    return " ".join(out)


def _title(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(_VOCAB) for _ in range(n)).title()


def _names(variant: int, *parts: str) -> dict[str, str]:
    """Class names of one chrome variant: plain words, BEM-like, or hashed utility classes."""
    if variant == 0:
        return {p: p for p in parts}
    if variant == 1:
        return {p: f"site-{p.split('-')[0]}__{p}" for p in parts}
    return {p: f"c{zlib_crc(p) % 46656:x} x{len(p)}" for p in parts}


def zlib_crc(text: str) -> int:
    import zlib
    return zlib.crc32(text.encode())


def _chrome(rng: random.Random, variant: int, brand: str, title: str, body: str, *, menu: list[str],
            sidebar: str) -> str:
    c = _names(variant, "header", "logo", "search", "menu", "crumbs", "layout", "content", "sidebar", "footer",
               "cookie", "newsletter", "legal")
    menu_html = "".join(f'<li><a href="/{m.lower()}/">{m}</a></li>' for m in menu)
    columns = "".join(
        f'<div><h4>{head}</h4><ul>' + "".join(f'<li><a href="/{w}">{w.title()}</a></li>' for w in links) + "</ul></div>"
        for head, links in (("Company", ("about", "careers", "press", "blog")), ("Help", ("contact", "faq", "status")),
                            ("Legal", ("privacy", "terms", "cookies"))))
    main_tag = ("main", "div", "div")[variant]
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{title} | {brand}</title>'
            f'<link rel="stylesheet" href="/static/site.css"></head><body>'
            f'<div class="{c["cookie"]}"><p>We use cookies to improve your experience. <a href="/cookies">Learn '
            f'more</a> <button>Accept</button></p></div>'
            f'<header class="{c["header"]}"><a class="{c["logo"]}" href="/">{brand}</a>'
            f'<form class="{c["search"]}" action="/search"><input name="q" placeholder="Search {brand}">'
            f'<button>Search</button></form><nav class="{c["menu"]}"><ul>{menu_html}</ul></nav></header>'
            f'<div class="{c["layout"]}"><{main_tag} class="{c["content"]}">{body}</{main_tag}>'
            f'<aside class="{c["sidebar"]}">{sidebar}</aside></div>'
            f'<footer class="{c["footer"]}"><div class="{c["newsletter"]}"><h3>Stay in the loop</h3><p>Get the '
            f'best of {brand} in your inbox every week.</p><form><input name="email"><button>Subscribe</button>'
            f'</form></div>{columns}<p class="{c["legal"]}">&copy; {rng.randint(2009, 2024)} {brand}. All rights '
            f'reserved.</p></footer></body></html>')


def _code(rng: random.Random) -> str:
    name = rng.choice(("load", "parse", "fetch", "render", "connect"))
    arg = rng.choice(("path", "url", "config", "items"))
    return (f"def {name}_{rng.choice(_VOCAB)}({arg}):\n    result = {name}({arg}, timeout={rng.randint(1, 60)})\n"
            f"    return result.{rng.choice(('data', 'value', 'text'))}")


def _forum_page(rng: random.Random, variant: int, number: int) -> tuple[str, list[str]]:
    c = _names(variant, "question", "post", "post-body", "votes", "author", "post-menu", "comments", "tags",
               "answers-count", "related", "hot", "badge")
    title = _title(rng, rng.randint(5, 10)) + "?"
    gold = [title]

    def post(paragraphs: int, with_code: bool) -> str:
        parts = []
        for _ in range(paragraphs):
            text = _prose(rng, rng.randint(1, 4))
            parts.append(f"<p>{text}</p>")
            gold.append(text)
        if with_code:
            code = _code(rng)
            parts.append(f"<pre><code>{_html.escape(code)}</code></pre>")
            gold.extend(code.split("\n"))
        if rng.random() < 0.3:
            items = [_prose(rng, 1) for _ in range(rng.randint(2, 4))]
            parts.append("<ul>" + "".join(f"<li>{i}</li>" for i in items) + "</ul>")
            gold.extend(items)
        user = rng.choice(_NAMES)
        comments = "".join(f'<li>{_prose(rng, 1)} &ndash; <a href="/users/{rng.choice(_NAMES)}">'
                           f'{rng.choice(_NAMES)}</a> <span>{rng.randint(1, 28)} Mar</span></li>'
                           for _ in range(rng.randint(0, 3)))
        return (f'<div class="{c["post"]}"><div class="{c["votes"]}"><button>&#9650;</button><span>'
                f'{rng.randint(-2, 250)}</span><button>&#9660;</button></div><div class="{c["post-body"]}">'
                + "".join(parts) +
                f'</div><div class="{c["post-menu"]}"><a href="#">Share</a> <a href="#">Edit</a> <a href="#">'
                f'Follow</a></div><div class="{c["author"]}">asked {rng.randint(1, 12)} years ago <a href="/users/'
                f'{user}">{user}</a> <span class="{c["badge"]}">{rng.randint(1, 90)}k</span></div>'
                f'<ul class="{c["comments"]}">{comments}</ul><a href="#">Add a comment</a></div>')

    question = post(rng.randint(1, 3), rng.random() < 0.6)
    tags = "".join(f'<a href="/tags/{t}">{t}</a> ' for t in rng.sample(_VOCAB[80:], 3))
    answers = rng.randint(1, 4)
    answer_html = "".join(post(rng.randint(1, 3), rng.random() < 0.5) for _ in range(answers))
    body = (f'<div class="{c["question"]}"><h1>{title}</h1><div>Asked today, viewed {rng.randint(20, 9000)} '
            f'times</div>{question}<div class="{c["tags"]}">{tags}</div></div>'
            f'<h2 class="{c["answers-count"]}">{answers} Answers</h2>{answer_html}'
            f'<p>Not the answer you are looking for? Browse other questions tagged {tags} or ask your own '
            f'question.</p>')
    sidebar = (f'<div class="{c["related"]}"><h4>Related</h4><ul>' + "".join(
        f'<li><span>{rng.randint(0, 40)}</span> <a href="/q/{rng.randint(1, 99999)}">{_title(rng, 7)}?</a></li>'
        for _ in range(6)) + f'</ul></div><div class="{c["hot"]}"><h4>Hot network questions</h4><ul>' + "".join(
        f'<li><a href="/q/{rng.randint(1, 99999)}">{_title(rng, 8)}?</a></li>' for _ in range(5)) + "</ul></div>")
    brand = ("AskDev", "StackHaven", "QnA Garden")[variant]
    return _chrome(rng, variant, brand, title, body, menu=["Questions", "Tags", "Users", "Unanswered"],
                   sidebar=sidebar), gold


_SPEC_LABELS = ("Dimensions", "Weight", "Material", "Colour", "Battery life", "Warranty", "Connectivity",
                "Power supply", "Model number", "In the box")
_SHIPPING = ("Free standard delivery on orders over 40 euros. Returns are accepted within 30 days of delivery "
             "in the original packaging; see our returns policy for details.")


def _product_page(rng: random.Random, variant: int, number: int) -> tuple[str, list[str]]:
    c = _names(variant, "crumbs", "product", "gallery", "price", "buy-box", "description", "features", "specs",
               "reviews", "review", "carousel", "card", "share", "rating")
    title = f"{_title(rng, 2)} {rng.choice(('Pro', 'Mini', 'X', 'Plus', 'Lite'))} {rng.randint(2, 900)}"
    gold = [title]
    description = [_prose(rng, rng.randint(2, 5)) for _ in range(rng.randint(1, 3))]
    features = [_prose(rng, 1) for _ in range(rng.randint(3, 6))]
    labels = rng.sample(_SPEC_LABELS, rng.randint(4, 8))
    specs = [(label, f"{rng.randint(1, 500)} {rng.choice(('mm', 'g', 'h', 'W', 'years', 'pcs'))}") for label in labels]
    gold.extend(description)
    gold.extend(features)
    gold.extend(f"{k} {v}" for k, v in specs)
    gold.append(_SHIPPING)
    reviews = "".join(f'<div class="{c["review"]}"><span class="{c["rating"]}">{rng.randint(1, 5)} out of 5 stars'
                      f'</span><b>{_title(rng, 4)}</b><p>{_prose(rng, rng.randint(1, 3))}</p><span>'
                      f'{rng.choice(_NAMES)}, {rng.randint(1, 28)} May</span><a href="#">Helpful</a></div>'
                      for _ in range(rng.randint(1, 4)))
    cards = "".join(f'<li class="{c["card"]}"><a href="/p/{rng.randint(1, 9999)}">{_title(rng, 3)}</a><span>'
                    f'&euro;{rng.randint(5, 900)}.99</span></li>' for _ in range(6))
    body = (f'<ol class="{c["crumbs"]}"><li><a href="/">Home</a></li><li><a href="/c/{rng.choice(_VOCAB)}">'
            f'{_title(rng, 1)}</a></li><li>{title}</li></ol>'
            f'<div class="{c["product"]}"><div class="{c["gallery"]}"><img src="/img/{number}.jpg" alt="{title}">'
            f'</div><h1>{title}</h1><div class="{c["rating"]}">{rng.randint(10, 50) / 10} stars, '
            f'{rng.randint(2, 900)} ratings</div><div class="{c["buy-box"]}"><span class="{c["price"]}">&euro;'
            f'{rng.randint(9, 1500)}.99</span><p>In stock. Ships in 24 hours.</p><form><select><option>1</option>'
            f'</select><button>Add to cart</button><button>Add to wish list</button></form></div>'
            f'<div class="{c["share"]}"><a href="#">Share on Facebook</a> <a href="#">Pin it</a> <a href="#">'
            f'Email</a></div>'
            f'<section class="{c["description"]}"><h2>Description</h2>' + "".join(f"<p>{d}</p>" for d in description)
            + f'</section><section class="{c["features"]}"><ul>' + "".join(f"<li>{f}</li>" for f in features)
            + f'</ul></section><section class="{c["specs"]}"><table>' + "".join(
                f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in specs)
            + f'</table><p>{_SHIPPING}</p></section></div>'
            f'<section class="{c["reviews"]}"><h2>Customer reviews</h2>{reviews}</section>'
            f'<section class="{c["carousel"]}"><h2>Customers also viewed</h2><ul>{cards}</ul></section>')
    gold[1:1] = ["Description"]
    brand = ("Shopwell", "Kettle &amp; Co", "Gearbox")[variant]
    sidebar = f'<div><h4>Need help?</h4><p>Call us on 0800 {rng.randint(100, 999)} {rng.randint(100, 999)}.</p></div>'
    return _chrome(rng, variant, brand, title, body, menu=["Deals", "Electronics", "Home", "Garden", "Sports"],
                   sidebar=sidebar), gold


_INFOBOX = ("Country", "Region", "Founded", "Area", "Population", "Elevation", "Time zone", "Website")


def _encyclopedia_page(rng: random.Random, variant: int, number: int) -> tuple[str, list[str]]:
    c = _names(variant, "article", "tagline", "hatnote", "infobox", "toc", "edit", "navbox", "references",
               "catlinks", "tools", "lang")
    title = _title(rng, rng.randint(1, 3))
    gold = [title]
    box = [(label, _title(rng, rng.randint(1, 2)) if label in ("Country", "Region") else str(rng.randint(3, 99999)))
           for label in rng.sample(_INFOBOX, rng.randint(4, 8))]
    gold.extend(f"{k} {v}" for k, v in box)
    lead = [_prose(rng, rng.randint(2, 5)) for _ in range(rng.randint(1, 3))]
    gold.extend(lead)
    sections = [_title(rng, rng.randint(1, 3)) for _ in range(rng.randint(2, 5))]
    parts = []
    for section in sections:
        paras = [_prose(rng, rng.randint(2, 6)) for _ in range(rng.randint(1, 4))]
        gold.append(section)
        gold.extend(paras)
        html = (f'<h2 id="{section.replace(" ", "_")}">{section}<span class="{c["edit"]}">[<a href="?action=edit">'
                f'edit</a>]</span></h2>' + "".join(f"<p>{p}<sup>[{rng.randint(1, 30)}]</sup></p>" for p in paras))
        if rng.random() < 0.35:
            rows = [(str(rng.randint(1800, 2020)), str(rng.randint(100, 99999))) for _ in range(rng.randint(3, 7))]
            html += "<table><tr><th>Year</th><th>Population</th></tr>" + "".join(
                f"<tr><td>{y}</td><td>{p}</td></tr>" for y, p in rows) + "</table>"
            gold.append("Year Population")
            gold.extend(f"{y} {p}" for y, p in rows)
        if rng.random() < 0.35:
            items = [_prose(rng, 1) for _ in range(rng.randint(2, 5))]
            html += "<ul>" + "".join(f"<li>{i}</li>" for i in items) + "</ul>"
            gold.extend(items)
        parts.append(html)
    toc = "".join(f'<li><a href="#{s.replace(" ", "_")}">{k + 1} {s}</a></li>' for k, s in enumerate(sections))
    refs = "".join(f'<li>{_title(rng, 5)}. {rng.choice(_NAMES)} ({rng.randint(1950, 2023)}). Retrieved '
                   f'{rng.randint(1, 28)} June 2023.</li>' for _ in range(rng.randint(3, 8)))
    navbox = " &middot; ".join(f'<a href="/wiki/{rng.choice(_VOCAB)}">{_title(rng, 1)}</a>' for _ in range(14))
    body = (f'<div class="{c["article"]}"><h1>{title}</h1><div class="{c["tagline"]}">From '
            f'{("Openpedia", "WikiAtlas", "The Free Compendium")[variant]}, the free encyclopedia</div>'
            f'<div class="{c["hatnote"]}">For other uses, see <a href="/wiki/{title}_(disambiguation)">{title} '
            f'(disambiguation)</a>.</div><table class="{c["infobox"]}"><caption>{title}</caption>' + "".join(
                f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in box) + "</table>"
            + "".join(f"<p>{p}</p>" for p in lead)
            + f'<div class="{c["toc"]}"><h2>Contents</h2><ul>{toc}</ul></div>' + "".join(parts)
            + f'<h2>References</h2><ol class="{c["references"]}">{refs}</ol>'
            f'<div class="{c["navbox"]}"><b>{_title(rng, 2)}</b> {navbox}</div>'
            f'<div class="{c["catlinks"]}">Categories: <a href="#">{_title(rng, 2)}</a> | <a href="#">'
            f'{_title(rng, 3)}</a></div></div>')
    gold.insert(1 + len(box), title)  # the infobox caption
    sidebar = (f'<div class="{c["tools"]}"><h4>Tools</h4><ul><li><a href="#">What links here</a></li><li>'
               f'<a href="#">Related changes</a></li><li><a href="#">Cite this page</a></li></ul></div>'
               f'<div class="{c["lang"]}"><h4>Languages</h4><ul>' + "".join(
                   f'<li><a href="#">{lang}</a></li>' for lang in ("Deutsch", "Español", "Français", "Italiano"))
               + "</ul></div>")
    brand = ("Openpedia", "WikiAtlas", "The Free Compendium")[variant]
    return _chrome(rng, variant, brand, title, body, menu=["Main page", "Random article", "Contents", "About"],
                   sidebar=sidebar), gold


_GENRE_PAGES = {"forum": _forum_page, "product": _product_page, "encyclopedia": _encyclopedia_page}
_GENRE_HOSTS = {"forum": ("askdev.example", "stackhaven.example", "qna-garden.example"),
                "product": ("shopwell.example", "kettle-co.example", "gearbox.example"),
                "encyclopedia": ("openpedia.example", "wikiatlas.example", "compendium.example")}


def genre_page(genre: str, variant: int, number: int) -> dict:
    """One generated page of ``genre`` in chrome ``variant`` (0-2): ``{id, url, site, html, gold}``; the same
    arguments give the same page."""
    rng = random.Random(f"{genre}/{variant}/{number}")
    html, gold = _GENRE_PAGES[genre](rng, variant, number)
    host = _GENRE_HOSTS[genre][variant]
    return {"id": f"{genre}/{host}/{number}", "url": f"https://{host}/{genre}/{number}", "site": host,
            "html": html, "gold": "\n".join(line for line in gold if line.strip())}
