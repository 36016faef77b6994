"""The headline: which heading block of a page is its article's headline (one module, both finders).

``find_headline`` takes the heading that echoes the page's declared titles best (learning, the document's title,
the metadata's search around the headline); ``keep_headline`` adds to the single-page classifier's kept blocks the
last heading above them that echoes the page <title>, scored by the classifier's own ``title_overlap`` feature. Both
accept a heading of ``config.HEADLINE_TAGS`` whose words share more than ``config.HEADLINE_MIN_OVERLAP`` with the
title."""

from __future__ import annotations

import numpy as np

from .blocks import page_memo
from .config import HEADLINE_MIN_OVERLAP, HEADLINE_TAGS
from .datatypes import Segmented
from .features import FEATURE_NAMES

TITLE_OVERLAP_COLUMN = FEATURE_NAMES.index("title_overlap")  # the classifier feature keep_headline reads


def find_headline(seg: Segmented, evidence: str | None = None, *, min_words: float = 0) -> int | None:
    """Index of the heading block that repeats the page's <title> (or the ``evidence`` text: its declared titles)
    best, the article's headline, if any; with ``min_words``, of the headings that have at least that many words."""
    title = set((seg.title if evidence is None else evidence).lower().split())
    if not title:
        return None
    best, best_score = None, HEADLINE_MIN_OVERLAP
    for index, words in heading_words(seg):
        if len(words) < min_words:
            continue
        score = len(words & title) / len(words) if words else 0.0
        if score > best_score:
            best, best_score = index, score
    return best


def heading_words(seg: Segmented) -> list[tuple[int, set[str]]]:
    """(index, its lower-cased words as a set) of each HEADLINE_TAGS block, in order: made once a page (a page asks
    find_headline twice: its containers' rules and its document's title), kept in ``page_memo``."""
    memo = page_memo(seg)
    found = memo.get("heading_words")
    if found is None:
        found = memo["heading_words"] = [(block.index, set(block.text.lower().split())) for block in seg.blocks
                                         if block.tag in HEADLINE_TAGS]
    return found


def keep_headline(seg: Segmented, features: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """Add the headline: the last heading before the first kept block that shares at least
    HEADLINE_MIN_OVERLAP of its words with the page <title> (one of HEADLINE_TAGS)."""
    if not keep.any():
        return keep
    first = int(np.argmax(keep))
    overlap = features[:first, TITLE_OVERLAP_COLUMN]
    blocks = seg.blocks
    for i in (overlap >= HEADLINE_MIN_OVERLAP).nonzero()[0][::-1].tolist():  # the last such heading
        if blocks[i].tag in HEADLINE_TAGS:
            keep = keep.copy()
            keep[i] = True
            break
    return keep
