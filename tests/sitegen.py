"""Hand-built pages of a small site for tests: a fixed header, menu and footer around varying articles."""

from __future__ import annotations

import random

from templater.blocks import segment
from templater.parse import parse_html
from templater.types import Page

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
