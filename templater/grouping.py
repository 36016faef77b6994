"""URL -> group key: host and path up to the last segment, backing off to shorter prefixes.

    https://www.example.com/news/world/story.html  ->  example.com/news/world/  ->  example.com/news/  ->  example.com/

A numeric segment (/2017/04/05/, /12345/) is a date or an id, not a section: the prefix stops before it, so a
site's dated pages are not cut into one small group a day.

A page joins the longest of its prefixes that holds at least ``min_pages`` pages of the batch; where none does,
its host. Pages of one prefix may still hold several layouts: see ``cluster_layouts``.

A local file (a file: URL, no host) is grouped by its id instead, whose first segment is its site name
(``sources``: ``docs/guide/intro.html`` -> ``docs/guide/``, ``docs/``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from urllib.parse import urlsplit

import numpy as np

from . import config
from .shingles import sorted_set


def host_of(url: str) -> str:
    """Lower-cased host without ``www.`` and port; '' when the URL has none."""
    try:
        host = (urlsplit(url.strip()).hostname or "").lower()
    except ValueError:
        return ""
    return host[4:] if host.startswith("www.") else host


def url_prefixes(url: str, page_id: str | None = None) -> list[str]:
    """The URL's group keys, longest first, down to the host: ``['h/a/b/', 'h/a/', 'h/']``; for a local file's
    URL, those of its id (``site/path``) when it has one."""
    host = host_of(url)
    if not host:
        return _file_prefixes(url, page_id)
    try:
        path = urlsplit(url.strip()).path or "/"
    except ValueError:
        path = "/"
    return _path_prefixes(host, path)


def url_root(url: str, page_id: str | None = None) -> str:
    """The URL's shortest group key (its host's, or a local file's site's), which begins every key of its
    ``url_prefixes``; '' for a URL that has none."""
    prefixes = url_prefixes(url, page_id)
    return prefixes[-1] if prefixes else ""


def _file_prefixes(url: str, page_id: str | None) -> list[str]:
    """The group keys of a local file from its id ``site/path`` (folders' pages: ``sources``); none without."""
    if not page_id or not url.startswith("file:") or "://" in page_id or "/" not in page_id.strip("/"):
        return []
    site, _, path = page_id.strip("/").partition("/")
    return _path_prefixes(site, "/" + path)


def _path_prefixes(host: str, path: str) -> list[str]:
    segments = []
    for segment in (s for s in path.split("/")[:-1] if s):
        if segment.isdigit():  # a date or an id (/2012/11/05/), not a section: deeper prefixes split a site
            break
        segments.append(segment)
    prefixes = [host + "/" + "".join(s + "/" for s in segments[:depth]) for depth in range(len(segments), 0, -1)]
    prefixes.append(host + "/")
    return prefixes


def assign_groups(urls: Sequence[str], *, min_pages: int = config.MIN_GROUP_PAGES,
                  ids: Sequence[str] | None = None) -> list[str]:
    """Group key of each URL: its longest prefix shared by at least ``min_pages`` of the given URLs (with the pages'
    ``ids``, local files are grouped by them)."""
    chains = [url_prefixes(u, i) for u, i in zip(urls, ids or [None] * len(urls))]
    counts = Counter(p for chain in chains for p in chain)
    return [choose_group(chain, counts, min_pages=min_pages) for chain in chains]


def choose_group(chain: Sequence[str], counts: Mapping[str, int], *, min_pages: int = config.MIN_GROUP_PAGES) -> str:
    """The group of a URL from its prefixes (``url_prefixes``, longest first) and how many pages of the batch
    have each prefix: the longest with at least ``min_pages``, else the host; '' for a URL without host.
    ``counts`` needs only the chain's own prefixes (a distributed run joins just those)."""
    if not chain:
        return ""
    return next((p for p in chain if counts.get(p, 0) >= min_pages), chain[-1])


def match_prefix(url: str, known: Iterable[str], page_id: str | None = None) -> str | None:
    """The longest of the URL's prefixes (``url_prefixes``) that is among ``known`` group keys, or None."""
    known = known if isinstance(known, (set, frozenset, dict)) else set(known)
    return next((p for p in url_prefixes(url, page_id) if p in known), None)


def shape_set(shapes: np.ndarray) -> np.ndarray:
    """The distinct tag-path hashes of a page, sorted: what its layout is compared on (np.unique's values, without
    the numpy.ma import its first call makes)."""
    return sorted_set(np.asarray(shapes, dtype=np.uint32))


def layout_similarity(a: np.ndarray, b: np.ndarray) -> float:
    """Jaccard similarity of two sorted shape sets."""
    if len(a) == 0 and len(b) == 0:
        return 1.0
    shared = len(np.intersect1d(a, b, assume_unique=True))
    return shared / (len(a) + len(b) - shared)


def layout_containment(signature: np.ndarray, shapes: np.ndarray) -> float:
    """Share of a layout signature's tag paths that a page's sorted shape set contains."""
    if len(signature) == 0:
        return 0.0
    return len(np.intersect1d(signature, shapes, assume_unique=True)) / len(signature)


def cluster_layouts(shape_sets: Sequence[np.ndarray], *, threshold: float = config.LAYOUT_SIMILARITY,
                    sample: int = config.LAYOUT_SAMPLE) -> list[int]:
    """Cluster pages of one group by layout: a page joins the cluster whose leader it resembles most.

    Leader clustering on the Jaccard similarity of shape sets, most typical pages first, so that the result does
    not depend on input order. Leaders are chosen among at most ``sample`` pages (evenly spaced); the rest join
    their most similar leader, or open a cluster of their own. Returns a cluster number per page, 0 the largest.
    """
    n = len(shape_sets)
    if n == 0:
        return []
    picked = np.linspace(0, n - 1, min(n, sample)).round().astype(int).tolist() if n > sample else list(range(n))
    m = len(picked)
    sim = np.eye(m)
    for x in range(m):
        for y in range(x + 1, m):
            sim[x, y] = sim[y, x] = layout_similarity(shape_sets[picked[x]], shape_sets[picked[y]])
    labels = np.full(n, -1)
    leaders: list[int] = []
    order = [picked[x] for x in np.argsort(-sim.sum(axis=1), kind="stable")]
    rest = [i for i in range(n) if i not in set(picked)]
    for i in order + rest:
        scores = [layout_similarity(shape_sets[i], shape_sets[leader]) for leader in leaders]
        best = int(np.argmax(scores)) if scores else -1
        if best >= 0 and scores[best] >= threshold:
            labels[i] = labels[leaders[best]]
        else:
            labels[i] = len(leaders)
            leaders.append(i)
    sizes = Counter(labels.tolist())
    renumber = {old: new for new, (old, _) in enumerate(sorted(sizes.items(), key=lambda kv: (-kv[1], kv[0])))}
    return [renumber[x] for x in labels.tolist()]
