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
