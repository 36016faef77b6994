"""Signature methods as persistent duplicate indexes: what `templater index-signatures` and `dups --method` call.

    index_signatures          (re)fit a method on the stored extractions and store every page's signatures
    add_signatures            sign new pages with the stored (fitted) model and add them: incremental
    add_to_signature_indexes  add pages to every method indexed in the database (the pipeline's hook)
    remove_signature_pages    take pages out of one method's index or of all
    iter_signature_duplicates every page of a cluster of two or more, with the cluster's canonical page
    describe_signature_indexes  each indexed method's params, fit and counts

Methods are ``templater.signatures.METHODS`` (md5, tf, tfidf, long-sent, heavy-sent, lex-rand, descr-words) and
"minhash" (also "minhash-lsh"): the near-duplicate index of ``templater.dedup`` (shingles, MinHash, LSH bands,
verified candidates), which keeps its own tables and settings.

The model (params and fitted statistics: IDF, Lex Rand's dictionaries, Descr Words' terms and thresholds) is
persisted beside the signatures (store/signature_index.py). An incremental add signs with that model as stored;
the statistics do not move until the next ``index_signatures``, which refits on every stored extraction and
re-signs every page (a page keeps its first_seen). Params are fixed by the first index of a method: other params
are refused with SettingsMismatchError unless ``replace`` drops the method's index first.

Clusters are the connected components of the pages that share a signature. For every method but lex-rand a page
has one signature, so a cluster is the pages of one signature; a Lex Rand page has up to ten, and two pages
sharing any of them are linked. The canonical page of a cluster is the first seen (the earliest add call), then
the one with less boilerplate (extractions.boilerplate_chars), then the shorter URL (then the URL, then the
earliest stored). ``similarity`` is not a measured similarity for these methods: 1.0 when the page shares a
signature with the canonical page (and for the canonical page itself), 0.0 when it is linked to it only through
other members (possible with lex-rand alone). For "minhash" the rows are ``dedup.iter_duplicates``'s, with the
similarity to the canonical page as that index measures it.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import TYPE_CHECKING

from store import signature_index as sig_store
from store.db import db_name, transaction
from store.signature_index import SignedAddResult, SignedPage

from . import config, dedup
from .dedup import TextItem
from .dedup import as_text_item
from .errors import InputError, SettingsMismatchError, StoreError
from .shingles import ShingleSettings
from .signatures import (
    METHODS,
    SIGNATURE_VERSION,
    SignatureMethod,
    make_method,
    method_params,
    signature_components,
)

if TYPE_CHECKING:  # annotations only: a store opens without sqlite-utils (store.db.Database)
    import sqlite_utils

log = logging.getLogger(__name__)

MINHASH = "minhash"
MINHASH_NAMES = (MINHASH, "minhash-lsh")
INDEX_METHODS = (MINHASH, *METHODS)
BATCH_PAGES = config.SIGNATURE_BATCH_PAGES
SHARED = 1.0  # the similarity reported for a page sharing a signature with the canonical page
LINKED = 0.0  # ... for a page linked to it only through other members

Progress = Callable[[int, int | None], None]  # (pages done, pages in all)


@dataclass(frozen=True, slots=True)
class IndexReport:
    """What ``index_signatures`` did: pages read from the extractions, how many the method could judge, how the
    stored pages changed (``removed``: pages no longer among the extractions), what the model was fitted on."""

    method: str
    pages: int
    judged: int
    added: int
    updated: int
    unchanged: int
    removed: int
    fitted_pages: int  # 0 for a method without collection statistics (md5, tf, long-sent)

    def to_json(self) -> dict:
        return {name: getattr(self, name) for name in self.__slots__}


# --- names and models ----------------------------------------------------------------------------------------

def check_method(method: str) -> str:
    """The method's canonical name ("minhash" for its aliases); InputError names the known methods."""
    if method in MINHASH_NAMES:
        return MINHASH
    if method not in METHODS:
        raise InputError(f"unknown duplicate method {method!r}: choose one of {', '.join(INDEX_METHODS)}")
    return method


def parse_params(pairs: Iterable[str]) -> dict:
    """``KEY=VALUE`` strings (the CLI's --param) to a dict; a VALUE that reads as JSON is taken as JSON
    (``terms=8``, ``stem=true``, ``coverage=[0.3,0.7]``), anything else as a string."""
    params = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise InputError(f"--param {pair!r}: write KEY=VALUE, e.g. terms=8 or stem=true")
        try:
            params[key.strip()] = json.loads(value)
        except json.JSONDecodeError:
            params[key.strip()] = value
    return params


def _restored(db: sqlite_utils.Database, stored: sig_store.StoredModel, params: dict | None) -> SignatureMethod:
    """The stored model, ready to sign; other ``params`` or another signature version are refused."""
    if stored.version != SIGNATURE_VERSION:
        raise SettingsMismatchError(
            f"the {stored.method} signature index in {db_name(db)} was made by signature version "
            f"{stored.version}, this templater makes version {SIGNATURE_VERSION}: rebuild it with "
            f"`templater index-signatures --method {stored.method}`")
    _check_params(db, stored, params)
    return make_method(stored.method, **stored.params).load_state(stored.state)


def _check_params(db: sqlite_utils.Database, stored: sig_store.StoredModel, params: dict | None) -> None:
    if params is None:
        return
    given = method_params(make_method(stored.method, **params))
    if given != stored.params:
        raise SettingsMismatchError(sig_store.mismatch_message(db, stored.method, stored.params, given))


def _sign(signer: SignatureMethod, item: TextItem) -> SignedPage:
    return SignedPage(item.page_id, item.url, tuple(dict.fromkeys(signer.signatures(item.text))),
                      item.boilerplate_chars, len(item.text))


# --- the stored extractions ----------------------------------------------------------------------------------

_EXTRACTIONS = ("SELECT e.page_id, coalesce(p.url, e.page_id), e.text, e.boilerplate_chars, p.fetched_at"
                " FROM extractions e"
                " LEFT JOIN pages p ON p.id = e.page_id WHERE coalesce(p.retired, 0) = 0")


def count_extractions(db: sqlite_utils.Database) -> int:
    """How many extractions of live pages the database holds; StoreError when it has none to index."""
    if not db["extractions"].exists():
        raise StoreError("the database has no extractions table: run `templater extract` (or `run`) first")
    (count,) = db.execute(f"SELECT count(*) FROM ({_EXTRACTIONS})").fetchone()
    if not count:
        raise StoreError("the database holds no extracted text: run `templater extract` (or `run`) first")
    return count


def iter_extractions(db: sqlite_utils.Database, *, batch_size: int = BATCH_PAGES) -> Iterator[list[TextItem]]:
    """The extractions of live pages (not retired) as TextItems, in page id order, ``batch_size`` at a time."""
    last = None
    while True:
        where = "" if last is None else " AND e.page_id > ?"
        rows = db.execute(f"{_EXTRACTIONS}{where} ORDER BY e.page_id LIMIT {int(batch_size)}",
                          [] if last is None else [last]).fetchall()
        if not rows:
            return
        yield [TextItem(page_id, url, text or "", boilerplate or 0, fetched_at)
               for page_id, url, text, boilerplate, fetched_at in rows]
        last = rows[-1][0]


# --- building and adding ---------------------------------------------------------------------------------------

def index_signatures(db: sqlite_utils.Database, *, method: str, params: dict | None = None, replace: bool = False,
                     batch_size: int = BATCH_PAGES, progress: Progress | None = None) -> IndexReport:
    """Fit ``method`` on every stored extraction of a live page and store every page's signatures.

    Without ``params`` a method indexed before keeps its stored params (the defaults for a new one); other params
    than the stored ones raise SettingsMismatchError unless ``replace`` drops the method's index first. The refit
    and the re-signing happen in one transaction: a failure leaves the previous index as it was. "minhash" adds
    the extractions to the near-duplicate index (params: ShingleSettings fields; ``replace`` is refused there).
    """
    method = check_method(method)
    total = count_extractions(db)
    if method == MINHASH:
        return _index_minhash(db, params, replace=replace, batch_size=batch_size, progress=progress, total=total)
    stored = sig_store.load_model(db, method)
    if stored is not None and replace:
        log.info("dropping the %s signature index (%d pages) to rebuild it", method, sig_store.drop_method(db, method))
        stored = None
    if stored is not None:
        _check_params(db, stored, params)
    signer = make_method(method, **(stored.params if stored is not None else params or {}))
    if signer.needs_fit:
        signer.fit(item.text for batch in iter_extractions(db, batch_size=batch_size) for item in batch)
    fitted = total if signer.needs_fit else 0
    with transaction(db):
        sig_store.save_model(db, method, version=SIGNATURE_VERSION, params=method_params(signer),
                             state=signer.fitted_state(), fitted_pages=fitted)
        counts, seen = _store_all(db, signer, batch_size=batch_size, progress=progress, total=total)
        removed = sig_store.remove_pages(db, method, sorted(sig_store.page_ids(db, method) - seen))
    return IndexReport(method, pages=len(seen), judged=len(seen) - counts.unjudged, added=counts.added,
                       updated=counts.updated, unchanged=counts.unchanged, removed=removed, fitted_pages=fitted)


def _store_all(db: sqlite_utils.Database, signer: SignatureMethod, *, batch_size: int, progress: Progress | None,
               total: int) -> tuple[SignedAddResult, set[str]]:
    generation = sig_store.next_generation(db, signer.name)
    counts, seen = SignedAddResult(), set()
    for batch in iter_extractions(db, batch_size=batch_size):
        result = sig_store.add_pages(db, signer.name, [_sign(signer, item) for item in batch], generation=generation)
        counts = _sum(counts, result)
        seen.update(item.page_id for item in batch)
        if progress:
            progress(len(seen), total)
    return counts, seen


def _sum(a: SignedAddResult, b: SignedAddResult) -> SignedAddResult:
    return SignedAddResult(*(x + y for x, y in zip((a.added, a.updated, a.unchanged, a.unjudged),
                                                   (b.added, b.updated, b.unchanged, b.unjudged))))


def _index_minhash(db: sqlite_utils.Database, params: dict | None, *, replace: bool, batch_size: int,
                   progress: Progress | None, total: int) -> IndexReport:
    if replace:
        raise InputError("the minhash index cannot be replaced in place: its settings are fixed by its first "
                         "pages; index into a new --db")
    defaults = {k: v for k, v in ShingleSettings().to_dict().items() if k != "measure"}  # its own default by verify
    settings = ShingleSettings.from_dict({**defaults, **params}) if params else None
    counts, done = dedup.AddResult(), 0
    for batch in iter_extractions(db, batch_size=batch_size):
        result = dedup.index_texts(db, batch, settings, batch_size=batch_size)
        counts = dedup.AddResult(*(getattr(counts, f) + getattr(result, f) for f in dedup.AddResult.__slots__))
        done += len(batch)
        if progress:
            progress(done, total)
    return IndexReport(MINHASH, pages=done, judged=done - counts.empty, added=counts.added, updated=counts.updated,
                       unchanged=counts.unchanged, removed=0, fitted_pages=0)


def add_signatures(db: sqlite_utils.Database, items: Iterable[TextItem | Sequence], *, method: str,
                   params: dict | None = None, batch_size: int = BATCH_PAGES) -> SignedAddResult:
    """Sign pages (``TextItem`` or (page_id, url, text[, boilerplate_chars]) tuples) with the method's stored
    model and add them to its index, one transaction per batch. The model is not refitted.

    A method that needs collection statistics must be indexed first (``index_signatures``); md5, tf and
    long-sent start an index on their first add (with ``params`` or the defaults). ``params`` other than the
    stored ones raise SettingsMismatchError. A page id stored before is re-signed, keeping its first_seen.
    """
    method = check_method(method)
    if method == MINHASH:
        raise InputError("add pages to the minhash index with templater.dedup.index_texts")
    signer = _model_for_adding(db, method, params)
    generation = sig_store.next_generation(db, method)
    counts, iterator = SignedAddResult(), iter(items)
    while batch := [as_text_item(item) for item in islice(iterator, batch_size)]:
        result = sig_store.add_pages(db, method, [_sign(signer, item) for item in batch], generation=generation)
        counts = _sum(counts, result)
    return counts


def _model_for_adding(db: sqlite_utils.Database, method: str, params: dict | None) -> SignatureMethod:
    stored = sig_store.load_model(db, method)
    if stored is not None:
        return _restored(db, stored, params)
    signer = make_method(method, **(params or {}))
    if signer.needs_fit:
        raise StoreError(f"no fitted {method} model in {db_name(db)}: {method} needs collection "
                         f"statistics; run `templater index-signatures --method {method}` first (it fits them on "
                         "the stored extractions), then add pages")
    sig_store.save_model(db, method, version=SIGNATURE_VERSION, params=method_params(signer), state=None,
                         fitted_pages=0)
    return signer


def add_to_signature_indexes(db: sqlite_utils.Database, items: Iterable[TextItem | Sequence]) -> dict:
    """Add pages to every signature method indexed in the database; method -> SignedAddResult."""
    methods = sig_store.methods(db)
    if not methods:
        return {}
    items = [as_text_item(item) for item in items]
    return {method: add_signatures(db, items, method=method) for method in methods}


def remove_signature_pages(db: sqlite_utils.Database, ids: Iterable[str], *, method: str | None = None) -> int:
    """Remove pages from one method's signature index (or from every one); returns the rows removed."""
    ids = list(ids)
    methods = [check_method(method)] if method else sig_store.methods(db)
    if MINHASH in methods:
        raise InputError("remove pages from the minhash index with templater.dedup.remove_pages")
    return sum(sig_store.remove_pages(db, m, ids) for m in methods)


# --- reading ---------------------------------------------------------------------------------------------------

def iter_signature_duplicates(db: sqlite_utils.Database, *, method: str = MINHASH,
                              canonical_only: bool = False) -> Iterator[dict]:
    """{"id", "url", "cluster", "canonical", "similarity"} for every page in a cluster of two or more.

    Clusters in label order (the smallest internal page number of the cluster); in each, the canonical page
    first, then the pages sharing a signature with it, then the others (see the module docstring for
    ``similarity``), each group in storing order. With ``canonical_only``, one row a cluster: its canonical page.
    The method is checked before the first row is asked for: an unknown method raises InputError, a method never
    indexed in ``db`` StoreError.
    """
    method = check_method(method)
    if method == MINHASH:
        return dedup.iter_duplicates(db, canonical_only=canonical_only)
    if sig_store.load_model(db, method) is None:
        raise StoreError(f"no {method} signature index in {db_name(db)}: build it with "
                         f"`templater index-signatures --method {method}`")
    rows = _iter_clusters(db, method)
    return (row for row in rows if row["id"] == row["canonical"]) if canonical_only else rows


def _iter_clusters(db: sqlite_utils.Database, method: str) -> Iterator[dict]:
    components = signature_components(sig_store.iter_shared(db, method))
    ids = [page_id for component in components for page_id in component]
    stored = sig_store.members(db, method, ids)
    signatures = sig_store.stored_signatures(db, method, ids)
    clusters = sorted(([stored[i] for i in component] for component in components),
                      key=lambda ms: min(m.doc for m in ms))
    for members in clusters:
        yield from _cluster_rows(members, signatures)


def _cluster_rows(members: list[sig_store.IndexedMember], signatures: dict[str, set]) -> Iterator[dict]:
    canonical = min(members, key=lambda m: (m.first_seen, m.boilerplate_chars, len(m.url), m.url, m.doc))
    label = min(m.doc for m in members)
    mine = signatures.get(canonical.page_id, set())
    similarity = {m.page_id: SHARED if m is canonical or mine & signatures.get(m.page_id, set()) else LINKED
                  for m in members}
    ranked = sorted(members, key=lambda m: (m is not canonical, -similarity[m.page_id], m.doc))
    for m in ranked:
        yield {"id": m.page_id, "url": m.url, "cluster": label, "canonical": canonical.page_id,
               "similarity": similarity[m.page_id]}


def describe_signature_indexes(db: sqlite_utils.Database) -> list[dict]:
    """Each indexed signature method: version, params (stop words counted, not listed), fit and counts."""
    out = []
    for method in sig_store.methods(db):
        model = sig_store.load_model(db, method)
        params = dict(model.params)
        if isinstance(params.get("options"), dict):
            options = params.pop("options")
            params.update(stem=options.get("stem"), stop_words=len(options.get("stop_words", [])))
        out.append({"method": method, "version": model.version, "params": params,
                    "fitted_pages": model.fitted_pages, "fitted_at": model.fitted_at,
                    **sig_store.stats(db, method)})
    return out
