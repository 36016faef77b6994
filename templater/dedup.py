"""Near-duplicate detection for the pipeline and the CLI: the functions that join shingles.py to store/lsh.py.

    index_texts        texts -> shingles -> signatures -> the SQLite index (candidates verified, clusters updated)
    sign_each, index_signed   the same in two steps: texts signed (in worker processes), then indexed by the writer
    remove_pages       take pages out and repair their clusters
    iter_duplicates    every page of a cluster of two or more, with the cluster's canonical page (or only the
                       canonical pages); duplicate_ids: the pages a deduplicated corpus leaves out
    find_similar       the indexed near-duplicates of a text; find_similar_page: of an indexed page
    iter_similar_pairs every verified candidate pair (what the quality benchmark and template-aware checks compare)
    describe_settings  the index's settings with the S-curve threshold

The canonical page of a cluster is the earliest on the web: the earliest ``fetched_at`` where pages carry one (a
page with a known fetch time before one without), else the first seen (the earliest ``index_texts`` call); then
the one with less boilerplate, then the shorter URL (then the URL, then the earliest indexed, so the choice is
deterministic).

Template-aware comparisons: index the same pages twice, once with the extracted main text and once with the whole
page text, into two databases; ``iter_similar_pairs`` of each is the set of pairs found.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, fields, replace
from datetime import datetime, timezone
from itertools import islice
from typing import TYPE_CHECKING

import numpy as np

from store import lsh
from store.lsh import AddResult, IndexedPage, Member
from templater import config
from templater.errors import InputError
from templater.shingles import ShingleSettings, Shingles, Signatures, anchor_keys, comparable_set, \
    concat_shingles, concat_signatures, estimate_similarity, iter_batches, set_similarity, shingle_hashes, \
    sign_shingles, verification_sets

if TYPE_CHECKING:  # annotations only: a store opens without sqlite-utils (store.db.Database)
    import sqlite_utils

BATCH_PAGES = config.DEDUP_BATCH_PAGES
SIMILAR_LIMIT = config.SIMILAR_LIMIT


@dataclass(frozen=True, slots=True)
class TextItem:
    """A page to index: its id (a record's id, else its URL), URL, text and how many boilerplate characters the
    extraction removed and when it was fetched, if known (both used to choose a cluster's canonical page)."""

    page_id: str
    url: str
    text: str
    boilerplate_chars: int = 0
    fetched_at: str | None = None


def as_text_item(item: TextItem | Sequence) -> TextItem:
    if isinstance(item, TextItem):
        return item
    if not 3 <= len(item) <= 5:
        raise InputError(f"an item to index is (page_id, url, text[, boilerplate_chars[, fetched_at]]), not "
                         f"{len(item)} values")
    return TextItem(*item)


def web_time(value: str | None) -> str | None:
    """A fetch time as UTC ISO-8601 (``2017-05-01T12:00:00+00:00``: such strings sort in time order), from
    ISO-8601 (WARC-Date, JSON Lines) or an HTTP date; None when absent or unreadable. A time without a zone is
    taken as UTC."""
    if not value:
        return None
    text = str(value).strip()
    try:
        moment = datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text)
    except ValueError:
        from email.utils import parsedate_to_datetime  # imported here: email and socket cost a start-up ~4 ms

        try:
            moment = parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError):
            return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc).isoformat(timespec="seconds")


def sign_texts(texts: list[str], settings: ShingleSettings) -> tuple[Signatures, Shingles | None]:
    """Signatures of ``texts`` and, unless the index verifies by estimate, their verification sets."""
    keep_shingles = settings.verify != "estimate"
    parts = [shingle_hashes(batch, settings) for batch in iter_batches(texts)]
    signed = [sign_shingles(p, settings, anchors=False) for p in parts]
    signatures = replace(concat_signatures(signed, settings), anchors=anchor_keys(concat_shingles(parts), settings))
    if not keep_shingles:
        return signatures, None
    parts = [verification_sets(p, settings) for p in parts]
    counts = np.concatenate([p.counts for p in parts]) if parts else np.empty(0, np.int64)
    hashes = np.concatenate([p.hashes for p in parts]) if parts else np.empty(0, np.uint64)
    return signatures, Shingles(hashes, np.concatenate(([0], np.cumsum(counts))).astype(np.int64))


def index_texts(db: sqlite_utils.Database, items: Iterable[TextItem | Sequence],
                settings: ShingleSettings | None = None, *, batch_size: int = BATCH_PAGES) -> AddResult:
    """Index texts (``TextItem`` or (page_id, url, text[, boilerplate_chars]) tuples) in batches.

    The first call fixes the index's settings (``settings`` or the defaults); a later call with other settings
    raises SettingsMismatchError. A page id indexed before is updated when its text changed.
    """
    settings = lsh.ensure_settings(db, settings)
    totals = {f.name: 0 for f in fields(AddResult)}
    iterator = iter(items)
    while batch := [as_text_item(item) for item in islice(iterator, batch_size)]:
        signatures, shingles = sign_texts([it.text for it in batch], settings)
        pages = [indexed_page(it) for it in batch]
        result = lsh.add_signatures(db, pages, signatures, shingles=shingles)
        for name in totals:
            totals[name] += getattr(result, name)
    return AddResult(**totals)


@dataclass(frozen=True, slots=True)
class SignedText:
    """One text signed as ``index_texts`` signs it, to be indexed elsewhere (``index_signed``): worker processes
    sign, the process that writes the database only stores."""

    values: np.ndarray  # its signature (uint32 slots)
    empty: bool  # no shingle: not indexed
    anchors: np.ndarray  # its anchor keys (int64)
    shingles: np.ndarray | None  # its verification set (None when the index verifies by estimate)


def sign_each(texts: list[str], settings: ShingleSettings) -> list[SignedText]:
    """``sign_texts`` of ``texts``, one SignedText a text (each text is signed on its own: the same values in any
    batch)."""
    signatures, shingles = sign_texts(texts, settings)
    return [SignedText(signatures.values[i], bool(signatures.empty[i]), signatures.anchors_of(i),
                       None if shingles is None else shingles.of(i)) for i in range(len(texts))]


def index_signed(db: sqlite_utils.Database, items: Sequence[TextItem], signed: Sequence[SignedText],
                 settings: ShingleSettings) -> AddResult:
    """Index texts already signed with ``settings`` (``sign_each``) in one batch: what ``index_texts`` stores for
    the same texts, without signing them again."""
    settings = lsh.ensure_settings(db, settings)
    values = np.stack([s.values for s in signed]) if signed else np.empty((0, settings.permutations), np.uint32)
    signatures = Signatures(values, np.array([s.empty for s in signed], dtype=bool), settings,
                            _joined([s.anchors for s in signed], np.int64))
    shingles = _joined([s.shingles for s in signed], np.uint64) if settings.verify != "estimate" else None
    pages = [indexed_page(it) for it in items]
    return lsh.add_signatures(db, pages, signatures, shingles=shingles)


def indexed_page(item: TextItem) -> IndexedPage:
    """The index's row of a text item."""
    return IndexedPage(item.page_id, item.url, item.boilerplate_chars, len(item.text), web_time(item.fetched_at))


def _joined(parts: Sequence[np.ndarray], dtype: type) -> Shingles:
    """Per-text arrays as one Shingles (hashes and offsets)."""
    offsets = np.concatenate(([0], np.cumsum([len(p) for p in parts], dtype=np.int64))).astype(np.int64)
    return Shingles(np.concatenate(parts) if parts else np.empty(0, dtype), offsets)


def remove_pages(db: sqlite_utils.Database, ids: Iterable[str]) -> int:
    """Remove pages by id and repair their clusters; returns how many were indexed."""
    return lsh.remove_pages(db, list(ids))


def choose_canonical(members: Sequence[Member]) -> Member:
    """Earliest on the web (``fetched_at`` when known, known before unknown; else first seen), then less
    boilerplate, then the shorter URL (then URL and doc number, for determinism)."""
    return min(members, key=canonical_key)


def canonical_key(m: Member) -> tuple:
    """The order ``choose_canonical`` takes the least of."""
    seen = (0, m.fetched_at, 0) if m.fetched_at else (1, "", m.first_seen)
    return (seen, m.boilerplate_chars, len(m.url), m.url, m.doc)


def member_similarities(members: Sequence[Member], reference: Member, settings: ShingleSettings,
                        sets: dict[int, np.ndarray] | None) -> np.ndarray:
    """Similarity of each member to ``reference``: of their stored verification sets (doc -> set), or of their
    signatures when the index verifies by estimate."""
    if settings.verify != "estimate":
        sorted_sets = {doc: comparable_set(hashes, settings) for doc, hashes in sets.items()}
        return np.array([set_similarity(sorted_sets[m.doc], sorted_sets[reference.doc], settings) for m in members])
    return estimate_similarity(np.stack([m.signature for m in members]), reference.signature[None, :])


def cluster_rows(label: int, members: Sequence[Member], settings: ShingleSettings,
                 sets: dict[int, np.ndarray] | None) -> list[dict]:
    """The rows ``iter_duplicates`` gives for one cluster: the canonical page first, then by similarity to it."""
    canonical = choose_canonical(members)
    sims = member_similarities(members, canonical, settings, sets)
    ranked = sorted(zip(members, sims.tolist()), key=lambda ms: (ms[0] is not canonical, -ms[1], ms[0].doc))
    return [{"id": member.page_id, "url": member.url, "cluster": label, "canonical": canonical.page_id,
             "similarity": round(sim, 4)} for member, sim in ranked]


def iter_duplicates(db: sqlite_utils.Database, *, canonical_only: bool = False) -> Iterator[dict]:
    """{"id", "url", "cluster", "canonical", "similarity"} for every page in a cluster of two or more.

    Clusters come by label; in each, the canonical page first, then by similarity to it (highest first).
    ``similarity`` is to the canonical page (1.0 for itself): a page joins a cluster by passing with one member and
    with the cluster's longest pages (``store.lsh``), so it can be below the threshold to the canonical page. With
    ``canonical_only``, one row a cluster: its canonical page.
    """
    settings = lsh.load_settings(db)
    if settings is None:
        return
    for label, members in lsh.iter_clusters(db):
        if canonical_only:
            canonical = choose_canonical(members)
            yield {"id": canonical.page_id, "url": canonical.url, "cluster": label, "canonical": canonical.page_id,
                   "similarity": 1.0}
            continue
        sets = lsh.stored_sets(db, [m.doc for m in members], settings) if settings.verify != "estimate" else None
        yield from cluster_rows(label, members, settings, sets)


def duplicate_ids(db: sqlite_utils.Database) -> set[str]:
    """Page ids of every clustered page that is not its cluster's canonical page: what a deduplicated corpus
    leaves out (one page a cluster stays)."""
    if lsh.load_settings(db) is None:
        return set()
    out: set[str] = set()
    for _, members in lsh.iter_clusters(db):
        canonical = choose_canonical(members)
        out.update(m.page_id for m in members if m is not canonical)
    return out


def _as_found(matches: list[tuple[Member, float]], limit: int) -> list[dict]:
    return [{"id": m.page_id, "url": m.url, "similarity": round(s, 4)} for m, s in matches[:limit]]


def find_similar(db: sqlite_utils.Database, text: str, *, limit: int = SIMILAR_LIMIT) -> list[dict]:
    """{"id", "url", "similarity"} of the indexed pages whose similarity to ``text`` reaches the threshold."""
    settings = lsh.load_settings(db)
    if settings is None:
        return []
    signatures, shingles = sign_texts([text], settings)
    if signatures.empty[0]:
        return []
    shingle_set = comparable_set(shingles.of(0), settings) if shingles is not None else None
    return _as_found(lsh.query(db, signatures.values[0], settings, shingle_set=shingle_set,
                               anchors=signatures.anchors_of(0)), limit)


def find_similar_page(db: sqlite_utils.Database, id_or_url: str, *, limit: int = SIMILAR_LIMIT) -> list[dict]:
    """Like ``find_similar`` for a page already indexed (by page id, else URL), leaving the page itself out."""
    settings = lsh.load_settings(db)
    page = lsh.page_row(db, id_or_url) if settings is not None else None
    if page is None:
        raise InputError(f"{id_or_url} is not in the near-duplicate index: index it first (`templater run`), "
                         "or give the page's id or URL exactly as indexed, or a file with its text")
    shingle_set = lsh.stored_sets(db, [page.doc], settings)[page.doc] if settings.verify != "estimate" else None
    return _as_found(lsh.query(db, page.signature, settings, shingle_set=shingle_set, exclude=page.doc,
                               anchors=lsh.stored_anchors(db, page.doc), url=page.url), limit)


def iter_similar_pairs(db: sqlite_utils.Database) -> Iterator[dict]:
    """{"a", "b", "similarity"} (page ids) of every candidate pair whose similarity reaches the threshold."""
    for a, b, sims in lsh.iter_verified_pairs(db):
        names = lsh.page_ids(db, np.unique(np.concatenate((a, b))).tolist())
        for x, y, s in zip(a.tolist(), b.tolist(), sims.tolist()):
            yield {"a": names[x][0], "b": names[y][0], "similarity": round(s, 4)}


S_CURVE_POINTS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)  # Jaccard values the S-curve is printed at


def describe_settings(db: sqlite_utils.Database) -> dict:
    """The index's settings (the defaults if nothing is indexed yet), its S-curve (the probability that a pair of
    each Jaccard becomes a candidate) and counts."""
    stored = lsh.load_settings(db)
    settings = stored or ShingleSettings()
    return {**settings.to_dict(), "stored": stored is not None,
            "s_curve_threshold": round(settings.s_curve_threshold, 4),
            "candidate_probability_at_threshold": round(settings.candidate_probability(settings.threshold), 4),
            "s_curve": {f"{j:.1f}": round(settings.candidate_probability(j), 4) for j in S_CURVE_POINTS},
            **lsh.stats(db)}
