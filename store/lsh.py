"""The persistent near-duplicate index: MinHash signatures, LSH band keys and clusters in SQLite.

Tables (component "lsh"):

    lsh_settings    name -> JSON value of every ShingleSettings field; data made with other settings is refused
    lsh_state       counters: next_doc (internal page numbers are never reused), generation (one per add call
                    that adds pages)
    lsh_signatures  doc INTEGER PK, page_id (found through its page key row in the band index; until migration 8
                    by a UNIQUE index, whose random leaves every commit rewrote), url, signature BLOB (uint32 slots),
                    first_seen (generation),
                    boilerplate_chars, text_chars, cluster (a cluster's label is the doc number of one member;
                    a page alone has cluster = doc; a partial index holds only pages whose cluster != doc),
                    fetched_at (when the page was fetched, UTC ISO-8601, NULL when unknown; added by migration 2),
                    anchors (its anchor keys as int64 bytes, NULL without any; added by migration 3),
                    hashes (its verification set, as lsh_shingles held it; added by migration 7: pages stored
                    before keep theirs in lsh_shingles)
    lsh_segments    segment -> level, rows, fences (int64 BLOB: the first key of each block), filter (a Bloom filter
                    of its keys, SEGMENT_FILTER_BITS a row on average, fewer past FILTER_MEMORY_BYTES, shared by
                    segment size: ``_filter_targets``): the
                    band index, one 47-bit key per band and one per anchor key, and a page key (``page_keys``, from
                    2**47 up: never a candidate) per page (migration 8), as a few immutable segments of (key, doc)
                    rows sorted by key then doc (migration 6; until then the row table lsh_bands, with lsh_filter's
                    filters)
    lsh_blocks      id (segment << 32 | block) -> keys, docs (int64 BLOBs): a segment's rows, SEGMENT_BLOCK_ROWS a
                    block
    lsh_runs        run -> keys, docs (int64 BLOBs, sorted by key then doc): the (key, doc) rows of the pages added
                    since the last flush, one run per batch (one INSERT), held in memory as a few sorted arrays
                    (``_Recent``) that every lookup reads beside the segments; they become a new segment of level 0
                    when they hold RECENT_ROWS rows (about 18,000 pages: what they take in memory is bounded) or
                    RECENT_PAGES pages have come (migration 5; migration 3's row table lsh_recent cost one B-tree
                    insert per key row, its rows become one run)
    lsh_links       (doc, other) WITHOUT ROWID, both directions: a spanning forest of every cluster, the verified
                    pairs that joined it; removing a page whose links leave one piece needs no re-verification
    lsh_shingles    doc -> the page's verification set, 4 or 8 bytes a hash: its bottom-k sample (verify =
                    "sample") or every shingle hash in text order (verify = "exact"); nothing with "estimate";
                    only pages stored before migration 7 (since, the set is in the page's row)
    dup_clusters    cluster -> size, for clusters of two or more pages

Clusters are built page by page (in doc order) from candidate pairs (sharing a band key or an anchor key) whose
similarity reaches the threshold: ``threshold`` for two pages of one site (host), ``cross_site_threshold`` for pages
of two sites. They are not the connected components of those pairs: a page joins a cluster only when it also passes
with the cluster's reference pages (its longest page, and its longest page of each site), and two clusters become
one only when their reference pages pass with each other (``_join``), so one short page inside two stories does not
chain them. A band key shared by more than BUCKET_CAP pages offers only its first
BUCKET_CAP pages (by doc number) as candidates: such buckets hold near-identical pages, and the cap keeps one
popular page from costing a quadratic number of comparisons.

Adding a batch (``add_signatures``, one transaction): its distinct keys are looked up in the recent runs (numpy,
in memory) and in the segments (``_segment_rows``: only the keys a segment's filter may hold, whose blocks its
fences name, all blocks in one statement); the batch's own sorted keys give the candidates within it; the keys go
in as one run, candidates are verified (by sample, all shingles or signature), and the clusters are updated. Per
key row a batch costs numpy work and filter probes, not a B-tree insert and seek. The segments are written only
by flushes and merges, as BLOBs in key order: SEGMENT_FANOUT segments of one level merge into one of the next
(``_add_segment``, one key range at a time; past the filters' budget the top level holds one segment,
``_merged_with_top``), so a row is rewritten once a level, log(pages) times in all, where
the row table lsh_bands took every flush's random keys into nearly every leaf (a cost that grew with the index).
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from itertools import groupby
from typing import TYPE_CHECKING

import numpy as np

from store.db import MIGRATIONS_TABLE, db_name, migrate, transaction
from templater.config import (BUCKET_CAP, ID_CHUNK, IN_LIST_IDS, SITE_CACHE, CACHE_KIB, CHECKPOINT_BYTES,
                              WAL_KEEP_BYTES, RECENT_PAGES, RECENT_ROWS,
                              ROUND_LIMITS, REFERENCE_MEMBERS, FILTER_BITS_PER_KEY, FILTER_HASHES,
                              FILTER_FIRST_KEYS, RECENT_FILTER_KEYS, RECENT_FILTER_BITS, RECENT_FILTER_HASHES,
                              RECENT_TIER_FANOUT, PAIR_CHUNK, SEGMENT_BLOCK_ROWS, SEGMENT_FANOUT,
                              SEGMENT_SLICE_ROWS, SEGMENT_FILTER_BITS, SEGMENT_FILTER_MAX_BITS, FILTER_MEMORY_BYTES,
                              FILTER_MIN_BITS, FILTER_HEADROOM, FILTER_REBUILD_BLOCKS, FILTER_IO_BYTES,
                              BLOOM_CHUNK_KEYS, BLOOM_DENSE_SPAN, VERIFY_BYTES)  # noqa: F401
from templater import native
from templater.errors import InputError, SettingsMismatchError
from templater.unionfind import UnionFind
from templater.shingles import (ALGORITHM_VERSION, LEGACY_ANCHOR_TAIL_KEYS, LEGACY_LINES, LEGACY_MEASURE,
                                RESEMBLANCE_MIN_SHINGLES, ShingleSettings, Shingles, comparable_sets,
                                Signatures, band_keys, estimate_similarity, set_jaccard, set_similarity,
                                sorted_set, verification_sets)

try:  # hashlib's own BLAKE2b, without the OpenSSL library hashlib loads first (~4 ms of every start-up)
    from _blake2 import blake2b as _blake2b
except ImportError:  # (another Python: hashlib's, the same function)
    from hashlib import blake2b as _blake2b

if TYPE_CHECKING:  # annotations only: a store opens without sqlite-utils (store.db.Database)
    import sqlite_utils

PAGE_KEY_BASE = 1 << 47  # page keys (``page_keys``) lie in [2**47, 2**48), above every band and anchor key (below
# 2**47): they find pages by page id in the band index, and candidates never come from them
PAIR_SHIFT = 31  # a pair of doc numbers (each below 2**31) packed into one int64
DOC_SPAN_BITS = 16  # a batch's (key, doc) rows are sorted as one int64 (key << 16 | doc - the first doc) when its docs
# lie within 2**16 of each other and its keys below 2**47


@functools.lru_cache(maxsize=SITE_CACHE)
def site_of(url: str | None) -> str:
    """The site a page's URL names: its host, lower-cased, without "www." ("" when there is none)."""
    if not url or "://" not in url:
        return ""
    rest = url.split("://", 1)[1]
    end = len(rest)
    for mark in "/?#":  # the host ends at the first of these
        at = rest.find(mark, 0, end)
        if at >= 0:
            end = at
    host = rest[:end]
    host = host.rpartition("@")[2].lower()
    host = host.split("]")[0].lstrip("[") if host.startswith("[") else host.partition(":")[0]
    return host[4:] if host.startswith("www.") else host


def same_sites(sites_a: Sequence[str], sites_b: Sequence[str]) -> np.ndarray:
    """Whether each pair is of one site (a page whose site is unknown counts as of the other's site)."""
    return np.array([a == b or not a or not b for a, b in zip(sites_a, sites_b)], dtype=bool)


def accepted(settings: ShingleSettings, same: np.ndarray, similarity: np.ndarray,
             jaccard: Callable[[np.ndarray], np.ndarray],
             smaller: Callable[[np.ndarray], np.ndarray] | None = None) -> np.ndarray:
    """Which pairs are near-duplicates: the similarity reaches ``threshold`` on one site, ``cross_site_threshold``
    across sites; on one site a containment pair must also reach Jaccard ``same_site_jaccard`` (``jaccard(mask)``
    gives it for the pairs of ``mask``). A containment pair that fails passes by resemblance: Jaccard at least
    ``resemblance`` (on one site or two) when the smaller text has at least ``resemblance_min_shingles`` distinct
    shingles (``smaller(mask)``: the smaller verification set's size; without it the pair does not pass so)."""
    ok = similarity >= np.asarray(settings.threshold_for(same), dtype=float).reshape(len(same))
    if settings.measure != "containment" or settings.verify == "estimate":
        return ok
    if settings.same_site_jaccard > 0:
        check = ok & same
        if check.any():
            ok[check] = jaccard(check) >= settings.same_site_jaccard
    if settings.resemblance > 0 and smaller is not None:
        check = ~ok
        if check.any():
            big_enough = smaller(check) >= settings.resemblance_min_shingles
            if big_enough.any():
                check[check] = big_enough
                ok[check] = jaccard(check) >= settings.resemblance
    return ok


@dataclass(frozen=True, slots=True)
class IndexedPage:
    """What the index keeps about a page besides its signature."""

    page_id: str
    url: str
    boilerplate_chars: int = 0
    text_chars: int = 0
    fetched_at: str | None = None  # UTC ISO-8601 (``dedup.web_time``), None when unknown


@dataclass(frozen=True, slots=True)
class AddResult:
    """What one batch of pages did to the near-duplicate index, counted by outcome."""

    added: int = 0
    updated: int = 0  # already indexed with another text: re-indexed, first_seen kept
    unchanged: int = 0  # already indexed with the same signature: only url and counts refreshed
    empty: int = 0  # no shingle: not indexed
    joined: int = 0  # verified links that joined two clusters


@dataclass(frozen=True, slots=True)
class Member:
    """A page of a cluster, with what choosing the canonical page needs."""

    doc: int
    page_id: str
    url: str
    signature: np.ndarray
    first_seen: int
    boilerplate_chars: int
    text_chars: int
    fetched_at: str | None = None


# --- schema, settings, transactions ---------------------------------------------------------------------------

_KEPT_TABLES = (  # made by the first version and unchanged since
    "CREATE TABLE lsh_settings (name TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE lsh_state (name TEXT PRIMARY KEY, value INTEGER NOT NULL)",
    "CREATE TABLE lsh_links (doc INTEGER NOT NULL, other INTEGER NOT NULL, PRIMARY KEY (doc, other)) WITHOUT ROWID",
    "CREATE TABLE lsh_shingles (doc INTEGER PRIMARY KEY, hashes BLOB NOT NULL)",
    "CREATE TABLE dup_clusters (cluster INTEGER PRIMARY KEY, size INTEGER NOT NULL)",
)
_CLUSTER_INDEX = "CREATE INDEX lsh_signatures_cluster ON lsh_signatures (cluster) WHERE cluster != doc"
_SIGNATURE_COLUMNS = ("(doc INTEGER PRIMARY KEY, page_id TEXT NOT NULL, url TEXT NOT NULL, signature BLOB NOT NULL,"
                      " first_seen INTEGER NOT NULL, boilerplate_chars INTEGER NOT NULL, text_chars INTEGER NOT NULL,"
                      " cluster INTEGER NOT NULL, fetched_at TEXT, anchors BLOB, hashes BLOB)")  # (migration 8's)
_RUNS_TABLE = "CREATE TABLE lsh_runs (run INTEGER PRIMARY KEY, keys BLOB NOT NULL, docs BLOB NOT NULL)"
_SEGMENT_TABLES = (
    "CREATE TABLE lsh_segments (segment INTEGER PRIMARY KEY, level INTEGER NOT NULL, rows INTEGER NOT NULL,"
    " fences BLOB NOT NULL, filter BLOB NOT NULL)",
    "CREATE TABLE lsh_blocks (id INTEGER PRIMARY KEY, keys BLOB NOT NULL, docs BLOB NOT NULL)",
)


def _create_tables(db: sqlite_utils.Database) -> None:
    for sql in (
        *_KEPT_TABLES[:2],
        "CREATE TABLE lsh_signatures (doc INTEGER PRIMARY KEY, page_id TEXT NOT NULL UNIQUE, url TEXT NOT NULL,"
        " signature BLOB NOT NULL, first_seen INTEGER NOT NULL, boilerplate_chars INTEGER NOT NULL,"
        " text_chars INTEGER NOT NULL, cluster INTEGER NOT NULL)",
        _CLUSTER_INDEX,
        "CREATE TABLE lsh_bands (key INTEGER NOT NULL, doc INTEGER NOT NULL, PRIMARY KEY (key, doc)) WITHOUT ROWID",
        *_KEPT_TABLES[2:],
        "INSERT INTO lsh_state (name, value) VALUES ('next_doc', 1), ('generation', 1)",
    ):
        db.execute(sql)


def _create_latest(db: sqlite_utils.Database) -> None:
    """A new index's tables and state rows as the latest version has them, made at once: what STEPS make of a file
    without the index (``tests/test_lsh.py`` compares the two), without making, filling and dropping the tables of
    the versions before (nine transactions and ~90 statements of a new database's first extract)."""
    for sql in (*_KEPT_TABLES, f"CREATE TABLE lsh_signatures {_SIGNATURE_COLUMNS}", _CLUSTER_INDEX, _RUNS_TABLE,
                *_SEGMENT_TABLES):
        db.execute(sql)
    empty = _tokens_after(0, 0, 0, 0, 0)  # the token of no rows: what migrations 5 and 6 store for an empty index
    db.execute("INSERT INTO lsh_state (name, value) VALUES ('next_doc', 1), ('generation', 1), ('recent_docs', 0),"
               " ('recent_token', ?), ('segments_token', ?)", [empty, empty])


def _add_fetch_times(db: sqlite_utils.Database) -> None:
    """Migration 2: pages get the time they were fetched (the canonical page is the earliest on the web), and an
    index whose settings were stored before the measure was a setting keeps the measure it was built with."""
    db.execute("ALTER TABLE lsh_signatures ADD COLUMN fetched_at TEXT")
    db.execute("INSERT OR IGNORE INTO lsh_settings (name, value) SELECT 'measure', ? WHERE EXISTS"
               " (SELECT 1 FROM lsh_settings)", [json.dumps(LEGACY_MEASURE)])


def _add_anchors(db: sqlite_utils.Database) -> None:
    """Migration 3: pages keep their anchor keys (``shingles.anchor_keys``: index keys that a signature cannot give
    back, needed to take a page out); new keys go into the small ``lsh_recent`` first (see ``RECENT_PAGES``); an
    index whose settings were stored before anchors and the cross-site threshold were settings keeps verifying as it
    did: no anchor keys, one threshold for every pair, no Jaccard floor."""
    db.execute("ALTER TABLE lsh_signatures ADD COLUMN anchors BLOB")
    db.execute("CREATE TABLE lsh_recent (key INTEGER NOT NULL, doc INTEGER NOT NULL, PRIMARY KEY (key, doc))"
               " WITHOUT ROWID")
    db.execute("INSERT INTO lsh_state (name, value) VALUES ('recent_docs', 0)")
    for name, value in (("anchor_rate", "0"), ("anchor_keys", "0"), ("same_site_jaccard", "0.0")):
        db.execute("INSERT OR IGNORE INTO lsh_settings (name, value) SELECT ?, ? WHERE EXISTS"
                   " (SELECT 1 FROM lsh_settings)", [name, value])
    db.execute("INSERT OR IGNORE INTO lsh_settings (name, value) SELECT 'cross_site_threshold', value"
               " FROM lsh_settings WHERE name = 'threshold'")


def _add_sample_min(db: sqlite_utils.Database) -> None:
    """Migration 4: an index whose settings were stored before ``sample_min_hashes`` was a setting keeps verifying
    as it did (no minimum of sampled hashes)."""
    db.execute("INSERT OR IGNORE INTO lsh_settings (name, value) SELECT 'sample_min_hashes', '0' WHERE EXISTS"
               " (SELECT 1 FROM lsh_settings)")


def _runs_and_filters(db: sqlite_utils.Database) -> None:
    """Migration 5: the recent keys as sorted runs (``lsh_runs``: the rows of lsh_recent become one run, and the
    table goes) and Bloom filters over lsh_bands' keys (``lsh_filter``, built here from lsh_bands)."""
    db.execute(_RUNS_TABLE)
    db.execute("CREATE TABLE lsh_filter (part INTEGER PRIMARY KEY, capacity INTEGER NOT NULL, keys INTEGER NOT NULL,"
               " bits BLOB NOT NULL)")
    rows = np.array(db.execute("SELECT key, doc FROM lsh_recent ORDER BY key, doc").fetchall(),
                    dtype=np.int64).reshape(-1, 2)
    keys, docs = np.ascontiguousarray(rows[:, 0]), np.ascontiguousarray(rows[:, 1])
    if len(rows):
        db.execute("INSERT INTO lsh_runs (keys, docs) VALUES (?, ?)", [keys.tobytes(), docs.tobytes()])
    db.execute("DROP TABLE lsh_recent")
    db.execute("INSERT INTO lsh_state (name, value) VALUES ('recent_token', ?), ('filter_token', 0)",
               [_token_after(0, keys, docs)])
    filters = _Filters(0, [])
    cursor = db.execute("SELECT DISTINCT key FROM lsh_bands")
    while chunk := cursor.fetchmany(1 << 20):
        filters.add(np.array(chunk, dtype=np.int64).reshape(-1))
    _store_filters(db, filters, range(len(filters.parts)))


def _segments_from_bands(db: sqlite_utils.Database) -> None:
    """Migration 6: the band index as segments of sorted blocks (``lsh_segments``, ``lsh_blocks``): the rows of the
    row table lsh_bands become one segment (of the level its page count reaches), and lsh_bands and its filters
    (lsh_filter) go."""
    for sql in _SEGMENT_TABLES:
        db.execute(sql)
    rows = db.execute("SELECT count(*) FROM lsh_bands").fetchone()[0]
    pages = db.execute("SELECT count(*) FROM lsh_signatures").fetchone()[0]
    held = _Segments(0, [])
    if rows:
        level = 0
        while pages >= RECENT_PAGES * SEGMENT_FANOUT ** (level + 1):
            level += 1
        writer = _SegmentWriter(db, 1, level, rows, _fair_bits(rows))
        cursor = db.execute("SELECT key, doc FROM lsh_bands ORDER BY key, doc")
        while chunk := cursor.fetchmany(SEGMENT_SLICE_ROWS):
            block = np.array(chunk, dtype=np.int64)
            writer.write(np.ascontiguousarray(block[:, 0]), np.ascontiguousarray(block[:, 1]))
        held.items.append(writer.close())
    db.execute("DROP TABLE lsh_bands")
    db.execute("DROP TABLE lsh_filter")
    db.execute("DELETE FROM lsh_state WHERE name = 'filter_token'")
    db.execute("INSERT INTO lsh_state (name, value) VALUES ('segments_token', 0)")
    held.changed(db)


def _sets_in_page_rows(db: sqlite_utils.Database) -> None:
    """Migration 7: a page's verification set goes into its row of lsh_signatures (``hashes``): one row and one
    statement a page, not two. Pages stored before keep theirs in lsh_shingles (``stored_sets`` reads both), so
    the migration rewrites nothing, whatever the size of the index."""
    db.execute("ALTER TABLE lsh_signatures ADD COLUMN hashes BLOB")


def _page_keys(db: sqlite_utils.Database) -> None:
    """Migration 8: pages are found by page id through the band index (a page key row per page, ``page_keys``), not
    through lsh_signatures' UNIQUE index on page_id, whose random leaves every commit rewrote (a cost that grew with
    the index): the table is rebuilt without it (same columns, same rows) and the stored pages' page keys become one
    segment."""
    columns = [row[1] for row in db.execute("PRAGMA table_info(lsh_signatures)").fetchall()]
    db.execute(f"CREATE TABLE lsh_signatures_new {_SIGNATURE_COLUMNS}")
    db.execute(f"INSERT INTO lsh_signatures_new ({', '.join(columns)}) SELECT {', '.join(columns)} FROM lsh_signatures")
    db.execute("DROP TABLE lsh_signatures")
    db.execute("ALTER TABLE lsh_signatures_new RENAME TO lsh_signatures")
    db.execute(_CLUSTER_INDEX)
    keys, docs = [np.empty(0, np.int64)], [np.empty(0, np.int64)]
    cursor = db.execute("SELECT doc, page_id FROM lsh_signatures ORDER BY doc")
    while chunk := cursor.fetchmany(SEGMENT_SLICE_ROWS):  # (16 bytes a page held, not a Python row)
        keys.append(page_keys([r[1] for r in chunk]))
        docs.append(np.array([r[0] for r in chunk], dtype=np.int64))
    if sum(len(k) for k in keys):
        _add_segment(db, *_page_rows(np.concatenate(docs), [], np.concatenate(keys)))


def _add_resemblance(db: sqlite_utils.Database) -> None:
    """Migration 9: an index whose settings were stored before ``resemblance`` was a setting keeps verifying as it
    did (no pair passes by its Jaccard alone)."""
    for name, value in (("resemblance", "0.0"), ("resemblance_min_shingles", json.dumps(RESEMBLANCE_MIN_SHINGLES))):
        db.execute("INSERT OR IGNORE INTO lsh_settings (name, value) SELECT ?, ? WHERE EXISTS"
                   " (SELECT 1 FROM lsh_settings)", [name, value])


STEPS = [_create_tables, _add_fetch_times, _add_anchors, _add_sample_min, _runs_and_filters, _segments_from_bands,
         _sets_in_page_rows, _page_keys, _add_resemblance]


def held(db: sqlite_utils.Database) -> bool:
    """Whether the file holds the index's tables (at any schema version)."""
    return db.execute(f"SELECT 1 FROM {MIGRATIONS_TABLE} WHERE component = 'lsh' LIMIT 1").fetchone() is not None


def prepare(db: sqlite_utils.Database) -> None:
    """Create or migrate the index tables and tune this connection (cache, checkpoints) for the band index."""
    migrate(db, "lsh", STEPS, fresh=_create_latest)
    conn = db.conn
    if vars(db).get("_lsh_tuned") is conn:  # (the pragmas hold for the connection: set once, not every batch)
        return
    (page_size,) = conn.execute("PRAGMA page_size").fetchone()
    conn.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
    conn.execute(f"PRAGMA wal_autocheckpoint = {CHECKPOINT_BYTES // page_size}")
    conn.execute(f"PRAGMA journal_size_limit = {WAL_KEEP_BYTES}")
    vars(db)["_lsh_tuned"] = conn
    # (no temp_store = MEMORY: inside a caller's transaction a merge runs in a savepoint whose journal of the pages it
    # rewrites then sat in memory, +120 MB for a 12M-row merge; it now goes to a temporary file)


def load_settings(db: sqlite_utils.Database) -> ShingleSettings | None:
    """The settings the index was built with, or None for an empty index."""
    prepare(db)
    rows = tuple(db.conn.execute("SELECT name, value FROM lsh_settings ORDER BY name"))
    if not rows:
        return None
    algorithm, settings = _parsed_settings(rows)
    if settings is None:
        raise SettingsMismatchError(
            f"the near-duplicate index in {db_name(db)} was built by signature algorithm version "
            f"{algorithm}, this templater makes version {ALGORITHM_VERSION}: rebuild it in a new --db")
    return settings


@functools.lru_cache(maxsize=16)
def _parsed_settings(rows: tuple[tuple[str, str], ...]) -> tuple[object, ShingleSettings | None]:
    """(the stored algorithm version, the settings; None when made by another algorithm) of the stored rows: read
    on every ``load_settings``, parsed once per distinct rows."""
    values = {key: json.loads(value) for key, value in rows}
    if values.get("algorithm") != ALGORITHM_VERSION:
        return values.get("algorithm"), None
    values.setdefault("lines", LEGACY_LINES)  # stored before ``lines`` was a setting: its shingles crossed lines
    values.setdefault("anchor_tail_keys", LEGACY_ANCHOR_TAIL_KEYS)  # stored before it was a setting: no tail keys
    return ALGORITHM_VERSION, ShingleSettings.from_dict(values)


def ensure_settings(db: sqlite_utils.Database, settings: ShingleSettings | None = None) -> ShingleSettings:
    """The index's settings: stored on first use; later, other settings are refused with SettingsMismatchError."""
    stored = load_settings(db)
    if stored is None:
        settings = settings or ShingleSettings()
        with transaction(db, name="lsh"):
            db.conn.executemany("INSERT OR IGNORE INTO lsh_settings (name, value) VALUES (?, ?)",
                                [(k, json.dumps(v)) for k, v in settings.to_dict().items()])
        stored = load_settings(db)
    if settings is not None and settings != stored:
        raise SettingsMismatchError(
            f"the near-duplicate index in {db_name(db)} was built with other settings (stored != given: "
            f"{'; '.join(stored.differences(settings))}): leave out the options that change them, or index into a "
            "new --db")
    return stored


def _next(db: sqlite_utils.Database, name: str, count: int = 1) -> int:
    """Take ``count`` values of a counter; returns the first. (Two statements: ``UPDATE ... RETURNING`` would need
    SQLite 3.35, newer than some systems' Python links.)"""
    (first,) = db.conn.execute("SELECT value FROM lsh_state WHERE name = ?", [name]).fetchone()
    db.conn.execute("UPDATE lsh_state SET value = ? WHERE name = ?", [first + count, name])
    return first


def _chunks(values: Sequence, size: int = ID_CHUNK) -> Iterator[Sequence]:
    for i in range(0, len(values), size):
        yield values[i:i + size]


def _select_in(db: sqlite_utils.Database, sql: str, ids: Sequence) -> list[tuple]:
    """Rows of ``sql`` (with one ``{ids}`` placeholder) for every id, querying IN_LIST_IDS ids at a time.

    Each list is padded to a power of two with its first id again (the same rows): a few distinct statements
    rather than one per list length. The connection keeps its last 128 statements prepared, each as large as its
    list, so one per length grew an extract's memory with the crawl (~1.3 MB per 1,000 pages at 10,000 pages, as
    the lists of candidates lengthen), and so did lists of up to ID_CHUNK ids (about 5 MB of statements a query at
    the longest lengths): IN_LIST_IDS bounds them. A longer list is cut in order of its ids (SQLite reads an IN
    list's values in order), so the rows come in the order one statement over the whole list gave them."""
    rows: list[tuple] = []
    ids = list(ids) if len(ids) <= IN_LIST_IDS else sorted(set(ids))
    for chunk in _chunks(ids, IN_LIST_IDS):
        size = min(1 << (len(chunk) - 1).bit_length(), IN_LIST_IDS)
        padded = [*chunk, *[chunk[0]] * (size - len(chunk))]
        rows.extend(db.conn.execute(sql.format(ids=",".join("?" * size)), padded).fetchall())
    return rows


# --- signatures in memory and from the database -----------------------------------------------------------------

class _SignatureSource:
    """Signatures (and verification sets, unless verify = "estimate") of the batch in memory and of stored pages."""

    def __init__(self, db: sqlite_utils.Database, settings: ShingleSettings, docs: np.ndarray, values: np.ndarray,
                 shingle_sets: dict[int, np.ndarray] | None = None, urls: Sequence[str] | None = None):
        self.db, self.settings = db, settings
        self._batch = docs, values  # the batch's signatures, as ``rows`` when first needed (verify = "estimate")
        self.urls = dict(zip(docs.tolist(), urls)) if urls is not None else {}  # sites made when first needed
        self.sites: dict[int, str] = {}
        self.sets = dict(shingle_sets or {})  # as stored
        self._own = set(docs.tolist()) | self.sets.keys()  # the pages given, which ``release`` keeps
        self.sorted: dict[int, np.ndarray] = {}  # comparable sets, made when first verified
        # (a, b) -> the pair's similarity / Jaccard, computed once: clustering asks again for pairs verification
        # (and the reference checks) asked for, a new page against a cluster's longest page most often
        self.pair_similarity: dict[tuple[int, int], float] = {}
        self.pair_jaccard: dict[tuple[int, int], float] = {}
        self.verdicts: dict[tuple[int, int], bool] = {}  # (a, b) -> ``passing``'s verdict, given once
        self.held: _HeldSets | None = None  # the sets of a batch's candidates as one array (``hold``)

    @functools.cached_property
    def rows(self) -> dict[int, np.ndarray]:
        """doc -> signature: the batch's, and the stored pages' read so far."""
        docs, values = self._batch
        return {int(d): values[i] for i, d in enumerate(docs.tolist())}

    def signatures(self, docs: np.ndarray) -> np.ndarray:
        missing = [d for d in set(docs.tolist()) if d not in self.rows]
        for doc, blob in _select_in(self.db, "SELECT doc, signature FROM lsh_signatures WHERE doc IN ({ids})",
                                    missing):
            self.rows[doc] = np.frombuffer(blob, dtype=np.uint32)
        return np.stack([self.rows[d] for d in docs.tolist()]) if len(docs) else \
            np.empty((0, self.settings.permutations), np.uint32)

    def same(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Whether each pair is of one site (``same_sites``), the pages' sites read once."""
        missing = [d for d in set(a.tolist()) | set(b.tolist()) if d not in self.sites]
        self.sites.update({d: site_of(self.urls[d]) for d in missing if d in self.urls})
        missing = [d for d in missing if d not in self.sites]
        for doc, url in _select_in(self.db, "SELECT doc, url FROM lsh_signatures WHERE doc IN ({ids})", missing):
            self.sites[doc] = site_of(url)
        return same_sites([self.sites.get(d, "") for d in a.tolist()], [self.sites.get(d, "") for d in b.tolist()])

    def site_list(self, docs: np.ndarray) -> list[str]:
        """The pages' sites (read once)."""
        self.same(docs, docs)
        return [self.sites.get(d, "") for d in docs.tolist()]

    def site(self, doc: int) -> str:
        """One page's site (``site_list`` of one page, without its arrays when the site is known)."""
        site = self.sites.get(doc)
        if site is None and doc in self.urls:
            site = self.sites[doc] = site_of(self.urls[doc])
        return site if site is not None else self.site_list(np.array([doc], dtype=np.int64))[0]

    def passing(self, a: np.ndarray, b: np.ndarray, sims: np.ndarray | None = None) -> np.ndarray:
        """Whether each pair is a near-duplicate (``accepted``). Without ``sims`` a pair's verdict is made once and
        kept (``verdicts``: clustering asks again, one or two pairs at a time, for pairs asked for together before;
        a verdict is a function of its pair alone)."""
        if not len(a):
            return np.zeros(0, bool)
        if sims is not None:
            return accepted(self.settings, self._same_where_needed(a, b, sims), sims,
                            lambda mask: self._jaccard(a[mask], b[mask]), lambda mask: self._smaller(a[mask], b[mask]))
        pairs = list(zip(a.tolist(), b.tolist()))
        known = self.verdicts
        if all(p in known for p in pairs):
            return np.array([known[p] for p in pairs], dtype=bool)
        if native.pairs is not None and self.settings.verify != "estimate":
            sims, jaccards, smaller = self._measured(a, b, pairs)
            ok = accepted(self.settings, self._same_where_needed(a, b, sims), sims, lambda mask: jaccards[mask],
                          lambda mask: smaller[mask])
        else:
            sims = self.similarity(a, b)
            ok = accepted(self.settings, self._same_where_needed(a, b, sims), sims,
                          lambda mask: self._jaccard(a[mask], b[mask]), lambda mask: self._smaller(a[mask], b[mask]))
        known.update(zip(pairs, ok.tolist()))
        return ok

    def hold(self, docs: Sequence[int], blobs: Sequence[bytes]) -> None:
        """Hold the verification sets of stored pages (``blobs``: each as stored, read with ``docs``) and the batch's
        own (``sets``) as one array of comparable sets (``_HeldSets``), which ``passing`` measures pairs on: a batch's
        candidates are thousands of stored pages, each measured once, and this takes no array and no Python step a
        set (only sets not stored ascending, or longer than the sample, are made comparable one by one)."""
        given = set(docs)
        mine = [d for d in self.sets if d not in given]
        dtype = np.uint32 if self.settings.hash_bits == 32 else np.uint64
        self.held = _HeldSets([*mine, *docs], [*[self.sets[d].astype(dtype, copy=False).tobytes() for d in mine],
                                                *blobs], self.settings)

    def release(self) -> None:
        """Let go of what was read of stored pages (the held sets, and the sets and signatures read one by one),
        keeping the batch's own and every verdict and measure made: a batch's candidates are verified a slice at a
        time (``_verified_edges``), and a stored page's set asked for again is read again (the same values)."""
        self.held = None
        own = self._own
        for cache in (self.sets, self.sorted, self.__dict__.get("rows", {})):
            for doc in [d for d in cache if d not in own]:
                del cache[doc]

    def _measured(self, a: np.ndarray, b: np.ndarray,
                  pairs: list[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
        """(similarity, Jaccard (None when ``accepted`` never asks for it), the smaller comparable set's size) of
        each pair (a[i], b[i]) = pairs[i], measured by the compiled ``templater._pairs`` (on the held sets when they
        hold every pair's, else PAIR_CHUNK pairs a call on sets copied for it), in arrays where ``similarity``,
        ``_jaccard`` and ``_smaller`` go pair by pair through their caches (a batch's candidates are thousands of
        pairs, measured once: the same values, which are kept as they keep them)."""
        jaccard_too = self._jaccard_asked
        numbers = self.held.numbers(np.concatenate((a, b))) if self.held is not None else None
        if numbers is not None:
            held = self.held
            sims, *rest = _pair_values(held.hashes, held.offsets, numbers[:len(a)], numbers[len(a):], self.settings,
                                       jaccard=False, jaccard_too=jaccard_too)
            # kept for the pairs that reach a threshold (clustering asks again for some of them); another pair asked
            # for again is measured again on the held sets (its verdict is kept by ``passing``)
            near = np.flatnonzero(sims >= min(float(self.settings.threshold),
                                              float(self.settings.cross_site_threshold))).tolist()
            self.pair_similarity.update((pairs[i], float(sims[i])) for i in near)
            if jaccard_too:
                self.pair_jaccard.update((pairs[i], float(rest[0][i])) for i in near)
            sizes = held.sizes[numbers]
            return sims, rest[0] if jaccard_too else None, np.minimum(sizes[:len(a)], sizes[len(a):])
        self._load_sorted(set(a.tolist()) | set(b.tolist()))
        parts = [self._compiled_measures(part, jaccard=False, jaccard_too=jaccard_too)
                 for part in _chunks(pairs, PAIR_CHUNK)]
        sims = np.concatenate([part[0] for part in parts])
        self.pair_similarity.update(zip(pairs, sims.tolist()))
        jaccards = None
        if jaccard_too:
            jaccards = np.concatenate([part[1] for part in parts])
            self.pair_jaccard.update(zip(pairs, jaccards.tolist()))
        return sims, jaccards, self._smaller(a, b)

    def _load_sorted(self, docs: set[int]) -> None:
        """The comparable sets of ``docs`` in ``sorted`` (from the held sets, else their stored sets, read where not
        given)."""
        new = sorted(docs - self.sorted.keys())
        if self.held is not None and new:
            self.sorted.update(self.held.views(new))
            new = [d for d in new if d not in self.sorted]
        self.sets.update(stored_sets(self.db, [d for d in new if d not in self.sets], self.settings))
        self.sorted.update(zip(new, comparable_sets([self.sets[doc] for doc in new], self.settings)))

    def _same_where_needed(self, a: np.ndarray, b: np.ndarray, sims: np.ndarray) -> np.ndarray:
        """``same`` of the pairs whose similarity reaches the lower of the two thresholds, False for the others: a
        pair below both fails whatever its sites (``accepted`` asks its sites only to choose its threshold and to
        ask a passing pair of one site for its Jaccard), so most candidates' sites are never made."""
        settings = self.settings
        need = sims >= min(float(settings.threshold), float(settings.cross_site_threshold))
        same = np.zeros(len(a), dtype=bool)
        if need.any():
            same[need] = self.same(a[need], b[need])
        return same

    def verdicts_of(self, pairs: list[tuple[int, int]]) -> list[bool]:
        """``passing``'s verdict of each pair (a, b), as a list: the pairs not judged yet are judged together in one
        ``passing`` call, the others read from ``verdicts`` (clustering asks for one or two pairs at a time, most of
        them judged already: no arrays for those)."""
        known = self.verdicts
        missing = list(dict.fromkeys(p for p in pairs if p not in known))
        if missing:
            a, b = (np.array(side, dtype=np.int64) for side in zip(*missing))
            self.passing(a, b)
        return [known[p] for p in pairs]

    def similarities(self, pairs: list[tuple[int, int]]) -> list[float]:
        """``similarity`` of each pair (a, b), as a list (read from ``pair_similarity`` when all were measured)."""
        known = self.pair_similarity
        if not pairs or (self.settings.verify != "estimate" and all(p in known for p in pairs)):
            return [known[p] for p in pairs]
        a, b = (np.array(side, dtype=np.int64) for side in zip(*pairs))
        return self.similarity(a, b).tolist()

    def _smaller(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """The size of the smaller comparable set of each pair (the sets are loaded: the pairs were verified)."""
        if not len(a):
            return np.zeros(0, dtype=np.int64)
        docs, at = np.unique(np.concatenate((a, b)), return_inverse=True)  # (each set's size read once, not per pair)
        sizes = np.array([len(self.sorted[d]) for d in docs.tolist()], dtype=np.int64)[at]
        return np.minimum(sizes[:len(a)], sizes[len(a):])

    def _jaccard(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return self._pairs(a, b, self.pair_jaccard, set_jaccard)

    def _pairs(self, a: np.ndarray, b: np.ndarray, known: dict[tuple[int, int], float],
               measure: Callable[[np.ndarray, np.ndarray, ShingleSettings], float]) -> np.ndarray:
        """``measure`` of the comparable sets of each pair (a[i], b[i]), each pair computed once (``known``)."""
        pairs = list(zip(a.tolist(), b.tolist()))
        missing = list(dict.fromkeys(p for p in pairs if p not in known))
        if missing and native.pairs is not None:
            # containment's verdicts ask for the Jaccard of many of the same pairs (``accepted``): it is measured on
            # the sets copied for the similarity, not copied again (a value is its pair's alone, whoever asks)
            jaccard_too = measure is set_similarity and self._jaccard_asked
            for part in _chunks(missing, PAIR_CHUNK):  # (the part's sets are copied end to end for the call)
                values = self._compiled_measures(part, jaccard=measure is set_jaccard, jaccard_too=jaccard_too)
                known.update(zip(part, values[0].tolist()))
                if jaccard_too:
                    self.pair_jaccard.update(zip(part, values[1].tolist()))
        else:
            for x, y in missing:
                known[x, y] = measure(self.sorted[x], self.sorted[y], self.settings)
        return np.array([known[p] for p in pairs], dtype=float)

    @functools.cached_property
    def _jaccard_asked(self) -> bool:
        """Whether ``accepted`` may ask for the Jaccard of pairs whose similarity (containment) it was given."""
        settings = self.settings
        return settings.measure == "containment" and (settings.same_site_jaccard > 0 or settings.resemblance > 0)

    def _compiled_measures(self, pairs: list[tuple[int, int]], *, jaccard: bool,
                           jaccard_too: bool = False) -> list[np.ndarray]:
        """[``set_similarity`` (``set_jaccard``) of the comparable sets of ``pairs``], and their ``set_jaccard`` after
        it with ``jaccard_too``, each in one call of the compiled ``templater._pairs`` on the same copied sets (the
        same values: a test holds them to the Python functions)."""
        docs, numbers = np.unique(np.array(pairs, dtype=np.int64).reshape(-1), return_inverse=True)  # (in numpy: a
        # pair's sets by number, each set copied once)
        sets = [self.sorted[d] for d in docs.tolist()]
        dtype = np.uint32 if self.settings.hash_bits == 32 else np.uint64
        offsets = np.zeros(len(docs) + 1, dtype=np.int64)
        np.cumsum([len(h) for h in sets], out=offsets[1:])
        a, b = numbers[0::2].astype(np.int64), numbers[1::2].astype(np.int64)
        return _pair_values(np.concatenate(sets).astype(dtype, copy=False), offsets, a, b, self.settings,
                            jaccard=jaccard, jaccard_too=jaccard_too)

    def similarity(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        if self.settings.verify == "estimate":
            return estimate_similarity(self.signatures(a), self.signatures(b))
        return self._set_similarity(a, b)

    def _set_similarity(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        self._load_sorted(set(a.tolist()) | set(b.tolist()))
        return self._pairs(a, b, self.pair_similarity, set_similarity)


def _pair_values(hashes: np.ndarray, offsets: np.ndarray, a: np.ndarray, b: np.ndarray, settings: ShingleSettings, *,
                 jaccard: bool, jaccard_too: bool) -> list[np.ndarray]:
    """[``set_similarity`` (``set_jaccard`` when ``jaccard``) of the comparable sets numbered ``a[i]``, ``b[i]`` in
    ``hashes`` (set n is hashes[offsets[n]:offsets[n + 1]])], and their ``set_jaccard`` after it with ``jaccard_too``
    (containment's: both from one merge of each pair's sets), by one call of the compiled ``templater._pairs``."""
    sample = settings.sample if settings.verify == "sample" else 0
    flag = int(jaccard or settings.measure == "jaccard")
    both = jaccard_too and not flag
    values = np.frombuffer(native.pairs.pair_measures(hashes, offsets, a, b, hashes.itemsize, sample,
                                                      settings.sample_min_hashes, 2 if both else flag),
                           dtype=np.float64)
    if both:
        return [values[:len(a)], values[len(a):]]
    return [values, values] if jaccard_too else [values]


class _HeldSets:
    """Verification sets as ``comparable_set`` makes them, end to end in one array (``hashes``; set n is
    hashes[offsets[n]:offsets[n + 1]], ``sizes[n]`` long), found by doc (``numbers``)."""

    def __init__(self, docs: Sequence[int], blobs: Sequence[bytes], settings: ShingleSettings):
        dtype = np.uint32 if settings.hash_bits == 32 else np.uint64
        width = np.dtype(dtype).itemsize
        hashes = np.frombuffer(b"".join(blobs), dtype=dtype)
        sizes = np.fromiter(map(len, blobs), dtype=np.int64, count=len(blobs)) // width
        offsets = np.zeros(len(blobs) + 1, dtype=np.int64)
        np.cumsum(sizes, out=offsets[1:])
        # a set is comparable as stored when it rises strictly (sorted, distinct) and, verifying by sample, holds at
        # most ``sample`` hashes: every stored sample; the others are made so one by one (``comparable_sets``)
        falls = np.flatnonzero(hashes[1:] <= hashes[:-1]) + 1  # (positions whose hash does not rise from the one
        # before: a fall within a set, or a set's first hash)
        bad = np.searchsorted(offsets, falls, side="right") - 1
        bad = bad[offsets[bad] != falls]
        if settings.verify == "sample":
            bad = np.concatenate((bad, np.flatnonzero(sizes > settings.sample)))
        if len(bad):
            sets = [hashes[offsets[n]:offsets[n + 1]] for n in range(len(blobs))]
            fix = np.unique(bad).tolist()
            for n, made in zip(fix, comparable_sets([sets[n] for n in fix], settings)):
                sets[n] = made
            sizes = np.fromiter(map(len, sets), dtype=np.int64, count=len(sets))
            np.cumsum(sizes, out=offsets[1:])
            hashes = np.concatenate(sets).astype(dtype, copy=False) if sets else hashes
        docs = np.asarray(docs, dtype=np.int64)
        self.order = np.argsort(docs, kind="stable")
        self.docs = docs[self.order]
        self.hashes, self.offsets, self.sizes = hashes, offsets, sizes

    def numbers(self, docs: np.ndarray) -> np.ndarray | None:
        """The set number of each doc, or None when a doc's set is not held."""
        if not len(self.docs):
            return None if len(docs) else np.zeros(0, np.int64)
        at = np.minimum(np.searchsorted(self.docs, docs), len(self.docs) - 1)
        return self.order[at] if (self.docs[at] == docs).all() else None

    def views(self, docs: Sequence[int]) -> dict[int, np.ndarray]:
        """doc -> its held set (a view), for the ``docs`` held."""
        wanted = np.asarray(docs, dtype=np.int64)
        if not len(self.docs) or not len(wanted):
            return {}
        at = np.minimum(np.searchsorted(self.docs, wanted), len(self.docs) - 1)
        found = self.docs[at] == wanted
        offsets = self.offsets
        return {d: self.hashes[offsets[n]:offsets[n + 1]]
                for d, n in zip(wanted[found].tolist(), self.order[at[found]].tolist())}


# --- adding pages ----------------------------------------------------------------------------------------------

def add_signatures(db: sqlite_utils.Database, pages: Sequence[IndexedPage], signatures: Signatures, *,
                   shingles: Shingles | None = None) -> AddResult:
    """Index (or re-index) pages with their signatures and update the clusters, in one transaction.

    A page id seen before with the same signature only refreshes its url and counts; with another signature it is
    removed and added again, keeping its first_seen. Pages without shingles are not indexed.
    """
    settings = ensure_settings(db, signatures.settings)  # (which prepares the tables: ``load_settings``)
    _check_batch(pages, signatures, settings, shingles)
    positions = _last_nonempty(pages, signatures)
    with transaction(db, name="lsh"):
        own = page_keys([pages[i].page_id for i in positions])
        own_keys = dict(zip(positions, own.tolist()))
        # one lookup of the batch's page keys and band keys (filters, blocks, recent runs): the page keys say which
        # pages are known, the band keys' buckets give the stored candidates (read again only when a changed page
        # leaves the index first)
        band = band_keys(signatures.values[positions], settings)
        anchor_rows = _anchor_rows(signatures, positions)
        found = _lookup_rows(db, sorted_set(np.concatenate([band.ravel(), anchor_rows[0], own])))
        split = int(np.searchsorted(found[:, 0], PAGE_KEY_BASE, side="left"))
        known = _known_pages(db, [pages[i].page_id for i in positions], list(own_keys.values()), found[split:])
        same = [i for i in positions if pages[i].page_id in known
                and known[pages[i].page_id][1] == signatures.values[i].tobytes()]
        changed = sorted(set(i for i in positions if pages[i].page_id in known) - set(same))
        fresh = [i for i in positions if pages[i].page_id not in known]
        # a generation is counted only by a call that adds pages: a batch indexed again after a kill (all of it
        # known, same signatures) leaves the counters as an uninterrupted run leaves them
        generation = _next(db, "generation") if fresh else 0
        _refresh(db, [pages[i] for i in same], [known[pages[i].page_id][0] for i in same])
        _remove_docs(db, [known[pages[i].page_id][0] for i in changed], settings)
        order = changed + fresh
        first_new = _next(db, "next_doc", len(fresh))
        docs = np.array([known[pages[i].page_id][0] for i in changed] + list(range(first_new, first_new + len(fresh))),
                        dtype=np.int64)
        seen = [known[pages[i].page_id][2] for i in changed] + [generation] * len(fresh)
        sets = set_blobs = None
        if settings.verify != "estimate":
            hashes, offsets = _stored_hashes(shingles, settings)
            sets = [hashes[offsets[i]:offsets[i + 1]] for i in order]
            set_blobs = _cut_blobs(hashes, offsets, order)
        at = {i: n for n, i in enumerate(positions)}
        joined = _insert_docs(db, docs, [pages[i] for i in order], signatures.values[order], seen, settings, sets,
                              set_blobs, np.array([own_keys[i] for i in order], dtype=np.int64),
                              band[[at[i] for i in order]],
                              anchor_rows if order == positions else _anchor_rows(signatures, order),
                              None if changed else found[:split])
    return AddResult(added=len(fresh), updated=len(changed), unchanged=len(same),
                     empty=int(signatures.empty.sum()), joined=joined)


def _check_batch(pages: Sequence[IndexedPage], signatures: Signatures, settings: ShingleSettings,
                 shingles: Shingles | None) -> None:
    if len(pages) != len(signatures):
        raise InputError(f"{len(pages)} pages but {len(signatures)} signatures: give one signature per page")
    if signatures.values.shape[1:] != (settings.permutations,):
        raise SettingsMismatchError(f"signatures of {signatures.values.shape[1:]} slots do not fit an index of "
                                    f"{settings.permutations} permutations: sign with the index's settings")
    if settings.verify != "estimate" and (shingles is None or len(shingles.offsets) != len(pages) + 1):
        raise InputError(f"this index verifies candidates with shingle sets (verify={settings.verify!r}): pass the "
                         "shingles of every page")


def _last_nonempty(pages: Sequence[IndexedPage], signatures: Signatures) -> list[int]:
    """Positions of the last occurrence of each page id, leaving out pages without shingles."""
    last = {p.page_id: i for i, p in enumerate(pages)}
    empty = signatures.empty.tolist()
    return sorted(i for i in last.values() if not empty[i])


def stored_form(shingles: Shingles, order: list[int], settings: ShingleSettings) -> list[np.ndarray]:
    """Each page's verification set as stored: its sample, or all its hashes in text order (repeats kept)."""
    hashes, offsets = _stored_hashes(shingles, settings)
    return [hashes[offsets[i]:offsets[i + 1]] for i in order]


def _stored_hashes(shingles: Shingles, settings: ShingleSettings) -> tuple[np.ndarray, list[int]]:
    """The pages' verification sets as stored (``stored_form``) end to end, and their offsets."""
    shingles = verification_sets(shingles, settings)
    return (shingles.hashes.astype(np.uint32 if settings.hash_bits == 32 else np.uint64, copy=False),
            shingles.offsets.tolist())


def _cut_blobs(flat: np.ndarray, offsets: Sequence[int], order: Iterable[int]) -> list[bytes]:
    """The bytes of ``flat[offsets[i]:offsets[i + 1]]`` for each i of ``order``, cut from one bytes object of
    ``flat`` (a batch's 200 arrays' ``tobytes`` one by one cost three times more)."""
    data, width = flat.tobytes(), flat.itemsize
    return [data[offsets[i] * width:offsets[i + 1] * width] for i in order]


def _refresh(db: sqlite_utils.Database, pages: list[IndexedPage], docs: list[int]) -> None:
    if not pages:
        return
    db.conn.executemany(
        "UPDATE lsh_signatures SET url = ?, boilerplate_chars = ?, text_chars = ?,"
        " fetched_at = coalesce(?, fetched_at) WHERE doc = ?",
        [(p.url, p.boilerplate_chars, p.text_chars, p.fetched_at, d) for p, d in zip(pages, docs)])


def page_keys(page_ids: Sequence[str]) -> np.ndarray:
    """Each page id's page key (int64 in [PAGE_KEY_BASE, 2 * PAGE_KEY_BASE): 47 bits of its BLAKE2b hash): a key
    row (page key, doc) in the band index finds a page by its id; two ids may share a key, the row's page says."""
    digests = b"".join([_blake2b(p.encode("utf-8", "surrogatepass"), digest_size=8).digest() for p in page_ids])
    return (np.frombuffer(digests, dtype="<u8") & np.uint64(PAGE_KEY_BASE - 1)).astype(np.int64) | PAGE_KEY_BASE


def _page_rows(docs: np.ndarray, page_ids: Sequence[str], keys: np.ndarray | None = None) -> tuple[np.ndarray,
                                                                                                   np.ndarray]:
    """The pages' (page key, doc) rows sorted by key then doc (``keys``: their page keys, when known)."""
    keys = page_keys(page_ids) if keys is None else keys
    order = np.lexsort((docs, keys))
    return keys[order], np.asarray(docs, dtype=np.int64)[order]


def _page_docs(db: sqlite_utils.Database, page_ids: Sequence[str], columns: str = "doc, page_id",
               keys: Sequence[int] | None = None, rows: np.ndarray | None = None) -> list[tuple]:
    """The stored rows (``columns``, the second of which is page_id) of the pages with these ids: the docs their
    page keys (``keys``, when known) find in the band index (``rows``: those key rows, when looked up already),
    read by doc and kept where the page id is the one asked for."""
    wanted = set(page_ids)
    if not wanted:
        return []
    if rows is None:
        keys = sorted_set(page_keys(sorted(wanted)) if keys is None else np.array(keys, dtype=np.int64))
        rows = np.concatenate((_segment_rows(db, keys, None), _recent(db).find(keys)))
    docs = sorted(set(rows[:, 1].tolist()))
    return [r for r in _select_in(db, f"SELECT {columns} FROM lsh_signatures WHERE doc IN ({{ids}})", docs)
            if r[1] in wanted]


def _known_pages(db: sqlite_utils.Database, page_ids: Sequence[str], keys: Sequence[int],
                 rows: np.ndarray | None = None) -> dict[str, tuple]:
    """page id -> (doc, signature, first_seen) of the stored pages among ``page_ids`` (``keys``: their page keys;
    ``rows``: the key rows they find, when looked up already)."""
    return {row[1]: (row[0], *row[2:])
            for row in _page_docs(db, page_ids, "doc, page_id, signature, first_seen", keys, rows)}


def _band_rows(keys: np.ndarray, docs: np.ndarray, anchors: Sequence[np.ndarray] | None = None, *,
               joined: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The (key, doc) rows of a batch, band keys and anchor keys, sorted by key then doc (a pair repeated once).
    ``joined``, in place of ``anchors``: the pages' anchor keys end to end and each page's count (``_anchor_rows``)."""
    flat_keys, flat_docs = keys.ravel(), np.repeat(docs, keys.shape[1])
    if joined is None and anchors is not None and any(len(a) for a in anchors):
        joined = np.concatenate(anchors), np.array([len(a) for a in anchors], dtype=np.int64)
    if joined is not None and len(joined[0]):
        flat_keys = np.concatenate([flat_keys, joined[0]]).astype(np.int64)
        flat_docs = np.concatenate([flat_docs, np.repeat(docs, joined[1])]).astype(np.int64)
    low = int(docs.min()) if len(docs) else 0
    if len(docs) and int(docs.max()) - low < 1 << DOC_SPAN_BITS and len(flat_keys) and int(flat_keys.min()) >= 0 \
            and int(flat_keys.max()) < 1 << (63 - DOC_SPAN_BITS):
        # one sort of (key, doc) packed into an int64 (keys below 2**47, a batch's docs within 2**16 of each other):
        # lexsort's order and rows, for a third of its time
        packed = np.sort((flat_keys.astype(np.int64) << DOC_SPAN_BITS) | (flat_docs.astype(np.int64) - low))
        packed = packed[np.r_[True, packed[1:] != packed[:-1]]]
        return packed >> DOC_SPAN_BITS, (packed & ((1 << DOC_SPAN_BITS) - 1)) + low
    order = np.lexsort((flat_docs, flat_keys))
    flat_keys, flat_docs = flat_keys[order], flat_docs[order]
    fresh = np.r_[True, (flat_keys[1:] != flat_keys[:-1]) | (flat_docs[1:] != flat_docs[:-1])]
    return flat_keys[fresh], flat_docs[fresh]


def _anchor_rows(signatures: Signatures, order: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """The anchor keys (int64) of the pages at ``order`` end to end, and each page's count, gathered in one pass (a
    concatenation of a batch's 200 arrays costs ten times more)."""
    if signatures.anchors is None:
        return np.empty(0, np.int64), np.zeros(len(order), np.int64)
    offsets = np.asarray(signatures.anchors.offsets, dtype=np.int64)
    at = np.asarray(order, dtype=np.int64)
    starts, counts = offsets[at], offsets[at + 1] - offsets[at]
    spans = np.repeat(starts - np.cumsum(counts) + counts, counts) + np.arange(int(counts.sum()))
    return signatures.anchors.hashes[spans].astype(np.int64), counts


def _anchors_of(blob: bytes | None) -> np.ndarray:
    return np.frombuffer(blob, dtype=np.int64) if blob else np.empty(0, np.int64)


# --- the recent runs and the filters of lsh_bands, in memory -------------------------------------------------

def _token_after(token: int, keys: np.ndarray, docs: np.ndarray) -> int:
    """The state token after a change of ``keys``/``docs`` rows: made from the rows (not drawn), so two processes
    that write the same rows write the same token, and a token read back tells whether memory still matches."""
    return _tokens_after(token, len(keys), int(keys.sum()) if len(keys) else 0, int(docs.sum()) if len(docs) else 0,
                         int(np.bitwise_xor.reduce(keys)) if len(keys) else 0)


def _wrapped(value: int) -> int:
    """An integer as an int64 holds it (numpy's sums wrap around)."""
    return (value + (1 << 63)) % (1 << 64) - (1 << 63)


def _tokens_after(token: int, rows: int, key_sum: int, doc_sum: int, key_xor: int) -> int:
    """``_token_after`` of rows given by their count, sums and xor (of rows taken in parts)."""
    return hash((token, rows, key_sum, doc_sum, key_xor)) & ((1 << 62) - 1)


def _ordered_rows(keys: np.ndarray, docs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(keys, docs, order): the rows sorted by key then doc, and the order that sorts them, as
    ``np.lexsort((docs, keys))`` gives it. Rows that come as runs sorted by (key, doc) with each key's docs ascending
    from run to run (a merge's segments, oldest first; a lookup's parts) need only one stable sort of their keys,
    which merges the runs in about linear time; lexsort sorts the docs first, in no order across keys, then the keys
    again: two full sorts (a merge of 5.6M rows spent half its CPU there). Other rows fall back to lexsort."""
    order = np.argsort(keys, kind="stable")
    sorted_keys, sorted_docs = keys[order], docs[order]
    if len(order) > 1:
        falls = sorted_docs[1:] < sorted_docs[:-1]
        falls &= sorted_keys[1:] == sorted_keys[:-1]
        if falls.any():
            order = np.lexsort((docs, keys))
            return keys[order], docs[order], order
    return sorted_keys, sorted_docs, order


def _by_key(keys: np.ndarray, docs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows in key order (a stable sort: concatenated sorted runs merge in linear time)."""
    order = np.argsort(keys, kind="stable")
    return keys[order], docs[order]


def _merged_runs(keys: Sequence[np.ndarray], docs: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Runs in key order (each run's docs ascending within a key, but for re-indexed pages) merged into one, in key
    order: by the compiled kernel (``merge_rows``) straight into the result, or by ``_by_key``, whose concatenation,
    order and gathered copy held two and a half times the rows beside the runs (the transient peak of the recent
    runs' merges and flushes)."""
    compiled = _kernels()
    if compiled is None or len(keys) < 2:
        return _by_key(np.concatenate(keys), np.concatenate(docs)) if len(keys) != 1 else (keys[0], docs[0])
    merged_keys = np.empty(sum(len(k) for k in keys), dtype=np.int64)
    merged_docs = np.empty(len(merged_keys), dtype=np.int64)
    compiled.merge_rows([_int64(k) for k in keys], [_int64(d) for d in docs], merged_keys, merged_docs)
    return merged_keys, merged_docs


def _gather(keys: np.ndarray, sorted_keys: np.ndarray) -> np.ndarray:
    """Positions in ``sorted_keys`` of every row whose key is one of ``keys`` (distinct), key by key."""
    first = np.searchsorted(sorted_keys, keys, side="left")
    sizes = np.searchsorted(sorted_keys, keys, side="right") - first
    return np.repeat(first - np.cumsum(sizes) + sizes, sizes) + np.arange(int(sizes.sum()))


def _gathered(queries: Sequence[np.ndarray], runs: Sequence[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """The (key, doc) rows of each run (keys sorted) whose key is one of its sorted distinct ``queries`` (``_gather``),
    stacked, run after run: by the compiled kernel (``gather_rows``, one call for all the runs: a batch's lookup has
    a dozen recent tiers and half a dozen segments, each five numpy calls here), or in numpy."""
    compiled = _kernels()
    if compiled is not None and hasattr(compiled, "gather_rows") and runs:
        made = compiled.gather_rows([_int64(q) for q in queries], [_int64(k) for k, _ in runs],
                                    [_int64(d) for _, d in runs])
        if made is not None:  # (None: queries that do not rise)
            return np.frombuffer(made, dtype=np.int64).reshape(-1, 2)
    parts = [np.empty((0, 2), np.int64)]
    for sought, (run_keys, run_docs) in zip(queries, runs):
        at = _gather(sought, run_keys)
        parts.append(np.stack((run_keys[at], run_docs[at]), axis=1))
    return np.concatenate(parts)


class _WordFilter:
    """A Bloom filter of 64-bit words for the recent runs' keys (in memory only): a key sets RECENT_FILTER_HASHES
    bits of one word, the word chosen by the key's top bits (so sorted keys set words in order, and the bits of a
    batch's keys that share a word are OR-ed together in one pass: no bit-level scatter). RECENT_FILTER_BITS bits a
    key; past ``capacity`` keys it is rebuilt twice as large from the rows (``rows``). May only say "maybe"."""

    def __init__(self, capacity: int):
        self.capacity, self.keys = capacity, 0
        self.words = np.zeros(max(1, capacity * RECENT_FILTER_BITS // 64), dtype=np.uint64)

    def _at(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        u = keys.astype(np.uint64)
        word = ((((u >> np.uint64(15)) & np.uint64(0xFFFFFFFF)) * np.uint64(len(self.words))) >> np.uint64(32))
        mixed = u * _MIX[0]
        mask = np.zeros(len(u), dtype=np.uint64)
        for i in range(RECENT_FILTER_HASHES):
            mask |= np.uint64(1) << ((mixed >> np.uint64(58 - 6 * i)) & np.uint64(63))
        return word.astype(np.intp), mask

    def add(self, keys: np.ndarray, rows: Callable[[], np.ndarray]) -> None:
        """Put the sorted ``keys`` in (``rows()``: every key held, for a rebuild)."""
        if not len(keys):
            return
        self.keys += len(keys)
        if self.keys > self.capacity:
            held = rows()
            self.__init__(max(2 * self.capacity, len(held)))
            keys, self.keys = held, len(held)
        self._put(keys)

    def _put(self, keys: np.ndarray) -> None:
        if (compiled := _kernels()) is not None:
            compiled.word_add(self.words, _int64(keys), RECENT_FILTER_HASHES)
            return
        word, mask = self._at(keys)
        if len(word) > 1 and (word[1:] < word[:-1]).any():  # (keys come sorted: words in order)
            order = np.argsort(word, kind="stable")
            word, mask = word[order], mask[order]
        starts = np.flatnonzero(np.r_[True, word[1:] != word[:-1]])
        self.words[word[starts]] |= np.bitwise_or.reduceat(mask, starts)

    def may_hold(self, keys: np.ndarray) -> np.ndarray:
        if (compiled := _kernels()) is not None:
            return np.frombuffer(compiled.word_has(self.words, _int64(keys), RECENT_FILTER_HASHES), dtype=np.bool_)
        word, mask = self._at(keys)
        return (self.words[word] & mask) == mask


class _Recent:
    """lsh_runs in memory: a few (keys, docs) tiers in key order, read as of ``token``. A batch's run is a tier of
    level 0; when RECENT_TIER_FANOUT tiers of one level end the list they merge into one of the next level (one
    stable sort of their keys, oldest first), so every row is merged about log4(runs) times (a binary counter of
    merges took twice as many). Docs are in no order within a key: readers sort what they take."""

    def __init__(self, token: int, runs: Sequence[tuple[np.ndarray, np.ndarray]] = ()):
        self.token = token
        self.tiers: list[tuple[np.ndarray, np.ndarray]] = []
        self.levels: list[int] = []
        self.filter = _WordFilter(RECENT_FILTER_KEYS)  # its keys: most of a batch's are in no tier
        self.size = 0  # rows held
        if runs:
            self.add(*_by_key(np.concatenate([k for k, _ in runs]), np.concatenate([d for _, d in runs])))

    def clear(self) -> None:
        self.tiers, self.levels, self.filter, self.size = [], [], _WordFilter(RECENT_FILTER_KEYS), 0

    def add(self, keys: np.ndarray, docs: np.ndarray, distinct: np.ndarray | None = None) -> None:
        """A run in key order (``distinct``: its distinct keys, when known)."""
        self.tiers.append((keys, docs))
        self.levels.append(0)
        self.size += len(keys)
        self.filter.add(_distinct_sorted(keys) if distinct is None else distinct, lambda: self.rows()[0])
        fan = RECENT_TIER_FANOUT
        while len(self.levels) >= fan and len(set(self.levels[-fan:])) == 1:
            parts, level = self.tiers[-fan:], self.levels[-1] + 1
            del self.tiers[-fan:], self.levels[-fan:]
            self.tiers.append(_merged_runs([k for k, _ in parts], [d for _, d in parts]))
            self.levels.append(level)

    def find(self, keys: np.ndarray) -> np.ndarray:
        """(key, doc) rows of the distinct sorted ``keys`` (unordered)."""
        keys = keys[self.filter.may_hold(keys)] if len(keys) and self.tiers else keys[:0]
        return _gathered([keys] * len(self.tiers), self.tiers) if len(keys) else np.empty((0, 2), np.int64)

    def rows(self) -> tuple[np.ndarray, np.ndarray]:
        """Every row, in key order."""
        if not self.tiers:
            return np.empty(0, np.int64), np.empty(0, np.int64)
        return _merged_runs([k for k, _ in self.tiers], [d for _, d in self.tiers])

    def drop(self, docs: np.ndarray) -> None:
        kept = [((k[keep], d[keep]), level) for (k, d), level in zip(self.tiers, self.levels) if len(k)
                for keep in [~np.isin(d, docs)]]
        self.tiers, self.levels = [t for t, _ in kept], [level for _, level in kept]
        self.size = sum(len(k) for k, _ in self.tiers)


def _distinct_sorted(keys: np.ndarray) -> np.ndarray:
    """The distinct values of sorted ``keys``."""
    return keys[np.r_[True, keys[1:] != keys[:-1]]] if len(keys) else keys


def _state(db: sqlite_utils.Database, name: str) -> int:
    return db.conn.execute("SELECT value FROM lsh_state WHERE name = ?", [name]).fetchone()[0]


def _set_state(db: sqlite_utils.Database, name: str, value: int) -> None:
    db.conn.execute("UPDATE lsh_state SET value = ? WHERE name = ?", [value, name])


def _recent(db: sqlite_utils.Database) -> _Recent:
    """The recent runs in memory, read again when lsh_state's token says they changed (another connection wrote,
    or a transaction that wrote them rolled back)."""
    token = _state(db, "recent_token")
    held = vars(db).get("_lsh_recent")
    if held is None or held.token != token:
        held = _Recent(token, [(np.frombuffer(k, dtype=np.int64), np.frombuffer(d, dtype=np.int64))
                               for k, d in db.conn.execute("SELECT keys, docs FROM lsh_runs ORDER BY run")])
        vars(db)["_lsh_recent"] = held
    return held


def _append_run(db: sqlite_utils.Database, recent: _Recent, keys: np.ndarray, docs: np.ndarray,
                distinct: np.ndarray | None = None) -> None:
    """A batch's sorted (key, doc) rows as one run: one INSERT, and the tiers in memory (``distinct``: its distinct
    keys, when known)."""
    if not len(keys):
        return
    db.conn.execute("INSERT INTO lsh_runs (keys, docs) VALUES (?, ?)", [keys.tobytes(), docs.tobytes()])
    recent.add(keys, docs, distinct)
    recent.token = _token_after(recent.token, keys, docs)
    _set_state(db, "recent_token", recent.token)


def _drop_recent(db: sqlite_utils.Database, docs: Sequence[int]) -> None:
    """Take the rows of ``docs`` out of the recent runs (the runs that hold any are rewritten)."""
    recent = _recent(db)
    gone = np.array(sorted(docs), dtype=np.int64)
    if not any(np.isin(d, gone).any() for _, d in recent.tiers):
        return
    conn = db.conn
    for run, key_blob, doc_blob in conn.execute("SELECT run, keys, docs FROM lsh_runs").fetchall():
        run_docs = np.frombuffer(doc_blob, dtype=np.int64)
        keep = ~np.isin(run_docs, gone)
        if keep.all():
            continue
        if keep.any():
            conn.execute("UPDATE lsh_runs SET keys = ?, docs = ? WHERE run = ?",
                         [np.frombuffer(key_blob, dtype=np.int64)[keep].tobytes(), run_docs[keep].tobytes(), run])
        else:
            conn.execute("DELETE FROM lsh_runs WHERE run = ?", [run])
    recent.drop(gone)
    recent.token = _token_after(recent.token, np.array([-1], np.int64), gone)
    _set_state(db, "recent_token", recent.token)


_MIX = (np.uint64(0x9E3779B97F4A7C15), np.uint64(0xC2B2AE3D27D4EB4F))


def _kernels():
    """The compiled kernels of the band index (``templater._pairs``: the filters' probes and adds, the merge of
    sorted runs), or None without the build: then the numpy functions here, which define them (a test holds the two
    to the same bits and rows)."""
    return native.pairs if native.pairs is not None and hasattr(native.pairs, "merge_rows") else None


def _int64(keys: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(keys, dtype=np.int64)


BLOOM_BLOCK_BITS = 512  # a key's bits all lie in one block of this many bits (a 64-byte cache line)


def _bloom_positions(keys: np.ndarray, size: int) -> np.ndarray:
    """(FILTER_HASHES, keys) bit positions in a filter of ``size`` bits (a multiple of BLOOM_BLOCK_BITS, below
    2**32): a blocked Bloom filter, every bit of a key in one block, so a probe or an add costs one cache miss, not
    FILTER_HASHES. The block is the key's top 32 bits (of 47) scaled to the blocks (multiply and shift): keys in
    order (a merge's, a batch's sorted keys) walk the filter in order. The bits in it are 9-bit slices of the top
    of the key times an odd constant."""
    u = keys.astype(np.uint64, copy=False)
    block = u >> np.uint64(15)  # (in place from here: a merge makes the positions of a million keys at a time)
    block &= np.uint64(0xFFFFFFFF)
    block *= np.uint64(size // BLOOM_BLOCK_BITS)
    block >>= np.uint64(32)
    block *= np.uint64(BLOOM_BLOCK_BITS)
    mixed = u * _MIX[0]
    out = np.empty((FILTER_HASHES, len(u)), dtype=np.uint64)
    for i in range(FILTER_HASHES):
        np.right_shift(mixed, np.uint64(55 - 9 * i), out=out[i])
        out[i] &= np.uint64(511)
        out[i] += block
    return out.view(np.intp)  # (positions below 2**32)


def _bloom_add(bits: np.ndarray, keys: np.ndarray) -> None:
    """Set the bits of ``keys`` in the filter ``bits`` (uint8), BLOOM_CHUNK_KEYS keys at a time. Keys in order (a
    segment's, written by a flush or a merge) touch one run of blocks a chunk: its bits are set in a boolean array of
    that span, packed (least significant bit first, as a position p is bit p & 7 of byte p >> 3) and OR-ed into the
    filter's slice, three passes in all (a merge spent a third of its CPU in the sparse way). Keys spread over the
    whole filter (a batch's keys into the recent runs' large filter): positions grouped by their bit in a byte (a
    radix sort of 8 values), one fancy assignment per group, whose repeated bytes all write the same value
    (``np.bitwise_or.at`` was 10% of a batch). Compiled (``_kernels``): one pass, a key's bits set in its block."""
    if (compiled := _kernels()) is not None:
        compiled.bloom_add(bits, _int64(keys), FILTER_HASHES)
        return
    for start in range(0, len(keys), BLOOM_CHUNK_KEYS):
        at = _bloom_positions(keys[start:start + BLOOM_CHUNK_KEYS], len(bits) * 8).ravel()
        low_block, high_block = int(at.min()) // BLOOM_BLOCK_BITS, int(at.max()) // BLOOM_BLOCK_BITS + 1
        span = (high_block - low_block) * BLOOM_BLOCK_BITS
        if span <= BLOOM_DENSE_SPAN * len(at):
            hit = np.zeros(span, dtype=bool)
            at -= low_block * BLOOM_BLOCK_BITS
            hit[at] = True
            first = low_block * BLOOM_BLOCK_BITS // 8
            bits[first:first + span // 8] |= np.packbits(hit, bitorder="little")
            continue
        low = (at & 7).astype(np.uint8)
        at = at[np.argsort(low, kind="stable")]
        ends = np.cumsum(np.bincount(low, minlength=8)).tolist()
        for bit, (first, end) in enumerate(zip([0, *ends[:-1]], ends)):
            bits[at[first:end] >> 3] |= np.uint8(1 << bit)


def _bloom_has(bits: np.ndarray, keys: np.ndarray, positions: dict | None = None) -> np.ndarray:
    """Whether the filter ``bits`` may hold each key: all its FILTER_HASHES bits (``_bloom_positions``) set.
    ``positions``: what the probe makes of the keys whatever the filter's size (their top bits, and their bits'
    offsets in a block), kept between calls on the same keys (a batch probes every segment's filter). The bits are
    tested one hash at a time, each on the keys that passed the ones before: most absent keys fail the first or
    second (a filter is about 40% ones), so a probe costs about 1.6 passes over the keys instead of 5. Compiled
    (``_kernels``): one pass, a key's probe ending at its first bit unset."""
    if (compiled := _kernels()) is not None:
        return np.frombuffer(compiled.bloom_has(bits, _int64(keys), FILTER_HASHES), dtype=np.bool_)
    top, offsets = _probe_parts(keys, positions)
    block = (top * np.uint64(len(bits) * 8 // BLOOM_BLOCK_BITS)) >> np.uint64(32)
    block *= np.uint64(BLOOM_BLOCK_BITS)
    alive: np.ndarray | None = None
    for i in range(FILTER_HASHES):
        at = block + offsets[i] if alive is None else block[alive] + offsets[i, alive]
        hit = ((bits[at >> np.uint64(3)] >> (at & np.uint64(7)).astype(np.uint8)) & 1).astype(bool)
        alive = np.flatnonzero(hit) if alive is None else alive[hit]
        if not len(alive):
            break
    found = np.zeros(len(keys), dtype=bool)
    found[alive] = True
    return found


def _probe_parts(keys: np.ndarray, cache: dict | None) -> tuple[np.ndarray, np.ndarray]:
    """(the keys' top 32 of 47 bits, which choose the block; (FILTER_HASHES, keys) offsets of their bits in it), as
    ``_bloom_positions`` makes them (kept in ``cache``)."""
    if cache is not None and "offsets" in cache:
        return cache["top"], cache["offsets"]
    u = keys.astype(np.uint64, copy=False)
    top = (u >> np.uint64(15)) & np.uint64(0xFFFFFFFF)
    mixed = u * _MIX[0]
    offsets = np.empty((FILTER_HASHES, len(u)), dtype=np.uint64)
    for i in range(FILTER_HASHES):
        np.right_shift(mixed, np.uint64(55 - 9 * i), out=offsets[i])
        offsets[i] &= np.uint64(511)
    if cache is not None:
        cache["top"], cache["offsets"] = top, offsets
    return top, offsets


class _Filters:
    """Bloom filters in parts: part i holds ``capacity`` keys in capacity * FILTER_BITS_PER_KEY bits, FILTER_HASHES
    bits a key; a full part is followed by one as large as all before it (at least ``first`` keys), so no part is
    ever rebuilt and a probe reads a few parts. The recent runs' keys (in memory), and migration 5's filters of the
    row table lsh_bands (gone since migration 6). A filter may only say "maybe"."""

    def __init__(self, token: int, parts: list[list], *, first: int | None = None):
        self.token = token
        self.parts = parts  # [capacity, keys, bits (uint8)]
        self.first = first  # the first part's capacity (None: FILTER_FIRST_KEYS)

    def may_hold(self, keys: np.ndarray) -> np.ndarray:
        found = np.zeros(len(keys), dtype=bool)
        for _, _, bits in self.parts:
            found |= _bloom_has(bits, keys)
        return found

    def add(self, keys: np.ndarray) -> list[int]:
        """Put ``keys`` in; returns the parts changed."""
        changed = []
        while len(keys):
            if not self.parts or self.parts[-1][1] >= self.parts[-1][0]:
                capacity = max(self.first or FILTER_FIRST_KEYS, sum(p[0] for p in self.parts))
                size = -(-capacity * FILTER_BITS_PER_KEY // BLOOM_BLOCK_BITS) * BLOOM_BLOCK_BITS // 8  # whole blocks
                self.parts.append([capacity, 0, np.zeros(size, dtype=np.uint8)])
            part = self.parts[-1]
            take, keys = keys[:part[0] - part[1]], keys[part[0] - part[1]:]
            _bloom_add(part[2], take)
            part[1] += len(take)
            changed.append(len(self.parts) - 1)
        return sorted(set(changed))


def _store_filters(db: sqlite_utils.Database, filters: _Filters, parts: Sequence[int]) -> None:
    """Migration 5's filters of lsh_bands into lsh_filter (both dropped by migration 6)."""
    for i in parts:
        capacity, count, bits = filters.parts[i]
        db.execute("INSERT OR REPLACE INTO lsh_filter (part, capacity, keys, bits) VALUES (?, ?, ?, ?)",
                   [i, capacity, count, bits.tobytes()])


def _capped(rows: np.ndarray, cap: int) -> np.ndarray:
    """(key, doc) rows sorted by key then doc, each key's first ``cap`` docs."""
    if not len(rows):
        return rows
    starts = np.flatnonzero(np.r_[True, rows[1:, 0] != rows[:-1, 0]])
    sizes = np.diff(np.r_[starts, len(rows)])
    rank = np.arange(len(rows)) - np.repeat(starts, sizes)
    return rows[rank < cap]


# --- the band index on disk: segments of sorted blocks, merged by level ----------------------------------------

BLOCK_ID_SHIFT = 32  # a block's row id in lsh_blocks: segment << 32 | block number


@dataclass(slots=True)
class _Segment:
    """A segment of the band index as held in memory: its blocks' first keys and its Bloom filter (the key rows
    stay on disk, in lsh_blocks, SEGMENT_BLOCK_ROWS rows a block sorted by key then doc)."""

    segment: int
    level: int
    rows: int
    fences: np.ndarray  # int64: the first key of each block
    bits: np.ndarray  # uint8: the Bloom filter of its keys

    @property
    def base(self) -> int:
        return self.segment << BLOCK_ID_SHIFT

    def blocks_of(self, keys: np.ndarray, cap: int | None,
                  positions: dict | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(the keys its filter may hold and that lie in its key range, the distinct blocks that hold their rows;
        with ``cap``, enough blocks for each band key's first ``cap`` rows). ``positions``: see ``_bloom_has``."""
        if not len(self.fences) or not len(keys):
            return keys[:0], np.empty(0, np.int64)
        compiled = _kernels()
        if compiled is not None and hasattr(compiled, "segment_blocks"):  # (one pass; None: keys not rising)
            made = compiled.segment_blocks(self.bits, _int64(self.fences), _int64(keys), FILTER_HASHES,
                                           -1 if cap is None else cap // SEGMENT_BLOCK_ROWS + 1, PAGE_KEY_BASE)
            if made is not None:
                return np.frombuffer(made[0], dtype=np.int64), np.frombuffer(made[1], dtype=np.int64)
        keys = keys[_bloom_has(self.bits, keys, positions)]
        first = np.maximum(np.searchsorted(self.fences, keys, side="left") - 1, 0)
        last = np.searchsorted(self.fences, keys, side="right") - 1  # (-1: below the first key, not here)
        if cap is not None:  # (a page key's rows all: it finds a page, not candidates)
            last = np.where(keys < PAGE_KEY_BASE, np.minimum(last, first + cap // SEGMENT_BLOCK_ROWS + 1), last)
        inside = last >= first
        keys, first, last = keys[inside], first[inside], last[inside]
        sizes = last - first + 1
        blocks = np.repeat(first - np.cumsum(sizes) + sizes, sizes) + np.arange(int(sizes.sum()))
        return keys, sorted_set(blocks)


class _Segments:
    """lsh_segments in memory (oldest first), read again when lsh_state's token says they changed."""

    def __init__(self, token: int, items: list[_Segment]):
        self.token, self.items = token, items

    def next_id(self) -> int:
        return max((s.segment for s in self.items), default=0) + 1

    def filter_bytes(self, leaving: Sequence[_Segment] = ()) -> int:
        gone = {s.segment for s in leaving}
        return sum(len(s.bits) for s in self.items if s.segment not in gone)

    def changed(self, db: sqlite_utils.Database) -> None:
        """Record a change (a token made from the segments' ids and sizes)."""
        shape = np.array([v for s in self.items for v in (s.segment, s.level, s.rows)], dtype=np.int64)
        self.token = _token_after(self.token, shape, shape[::-1].copy())
        _set_state(db, "segments_token", self.token)


def _segments(db: sqlite_utils.Database) -> _Segments:
    token = _state(db, "segments_token")
    held = vars(db).get("_lsh_segments")
    if held is None or held.token != token:
        # (a filter is read into memory numpy allocates, which asks for huge pages for large arrays: a probe reads
        # one random block a key; ``length`` reads no BLOB)
        held = _Segments(token, [_Segment(s, level, rows, np.frombuffer(fences, dtype=np.int64),
                                          _read_filter(db.conn, s, size))
                                 for s, level, rows, fences, size in db.conn.execute(
                                     "SELECT segment, level, rows, fences, length(filter) FROM lsh_segments"
                                     " ORDER BY segment").fetchall()])
        vars(db)["_lsh_segments"] = held
    return held


def _incremental(conn) -> bool:
    """Whether the connection has SQLite's incremental BLOB I/O (``blobopen``: Python 3.11 and later)."""
    return hasattr(conn, "blobopen")


def _filter_value(conn, bits: np.ndarray) -> tuple[str, object]:
    """(the SQL value, its parameter) that puts a filter into its row of lsh_segments: a zeroblob of its size, which
    ``_write_filter`` then fills (where Python has SQLite's incremental BLOB I/O: 3.11), else the filter bound at once
    (as a buffer: no bytes copy)."""
    return ("zeroblob(?)", len(bits)) if _incremental(conn) else ("?", memoryview(bits))


def _write_filter(conn, segment: int, bits: np.ndarray) -> None:
    """Fill a segment's filter BLOB (the zeroblob ``_filter_value`` put there) FILTER_IO_BYTES at a time: a filter
    bound as one value is held three times over as it is written (Python's bytes, SQLite's copy, the record SQLite
    builds), which was the peak of a merge into the top (+360 MiB for a 120 MiB filter)."""
    if not _incremental(conn) or not len(bits):
        return
    view = memoryview(np.ascontiguousarray(bits, dtype=np.uint8))
    with conn.blobopen("lsh_segments", "filter", segment) as blob:
        for start in range(0, len(view), FILTER_IO_BYTES):
            blob.write(view[start:start + FILTER_IO_BYTES])


def _read_filter(conn, segment: int, size: int) -> np.ndarray:
    """A segment's filter (``size`` bytes) read from its BLOB FILTER_IO_BYTES at a time (SQLite's incremental BLOB
    I/O; read whole without it), so it is not held twice."""
    bits = np.empty(size, dtype=np.uint8)
    if not _incremental(conn):
        bits[:] = np.frombuffer(conn.execute("SELECT filter FROM lsh_segments WHERE segment = ?",
                                             [segment]).fetchone()[0], dtype=np.uint8)
        return bits
    if size:
        with conn.blobopen("lsh_segments", "filter", segment, readonly=True) as blob:
            for start in range(0, size, FILTER_IO_BYTES):
                chunk = blob.read(FILTER_IO_BYTES)
                bits[start:start + len(chunk)] = np.frombuffer(chunk, dtype=np.uint8)
    return bits


def _fair_bits(total_rows: int) -> float:
    """Bits a key row every segment's filter may take when the index holds ``total_rows`` key rows: the filters
    share FILTER_MEMORY_BYTES evenly (SEGMENT_FILTER_BITS when that much fits), never fewer than FILTER_MIN_BITS (a
    filter thinner than that answers "maybe" for most keys: past it memory grows rather than block reads)."""
    return max(FILTER_MIN_BITS, min(SEGMENT_FILTER_BITS, FILTER_MEMORY_BYTES * 8 / max(total_rows, 1)))


def _filter_size(rows: int, bits: float) -> int:
    """Bytes of a filter of ``rows`` key rows at ``bits`` a row (whole blocks; at least 1 KiB, at most 2**29 bytes:
    positions are 32-bit)."""
    size = min(int(max(rows, 1) * bits) // 8, 1 << 29)
    return max(1024, size // (BLOOM_BLOCK_BITS // 8) * (BLOOM_BLOCK_BITS // 8))


_LN2_SQUARED = math.log(2) ** 2  # a Bloom filter's false rate falls as exp(-bits a row * _LN2_SQUARED)


def _filter_targets(rows: Sequence[int]) -> list[float]:
    """Bits a key row of the filter of each segment of the index (``rows``: every segment's key rows).

    The filters together take what ``_fair_bits`` gives every row (SEGMENT_FILTER_BITS, or their share of
    FILTER_MEMORY_BYTES past it), shared so that the false "maybe" answers summed over the segments are fewest: every
    key of a batch is probed in every segment and each false "maybe" costs a block read, so what counts is the sum
    of the segments' false rates, not each one's. The sum is least when each segment's rate is in proportion to its
    rows (a Bloom filter's rate falls as exp(-bits * ln(2)**2)): a segment ``ratio`` times smaller than
    the rows' mean (by rows, of the log) gets ln(ratio) / ln(2)**2 bits a row more, 2.9 for a ratio of 4, which cost
    little memory, and the sum of the rates is about the largest segments', not the number of segments times theirs
    (an even share gave the three level-0 segments of 1.4M rows the rate of the level-3 ones of 93M). Never fewer
    than FILTER_MIN_BITS, never more than SEGMENT_FILTER_MAX_BITS."""
    sizes = [max(int(n), 1) for n in rows]
    total = sum(sizes)
    base = _fair_bits(total)
    mean_log = sum(n * math.log(n) for n in sizes) / max(total, 1)
    return [min(SEGMENT_FILTER_MAX_BITS, max(FILTER_MIN_BITS, base + (mean_log - math.log(n)) / _LN2_SQUARED))
            for n in sizes]



def _new_filter_bits(held: _Segments, rows: int, leaving: Sequence[_Segment] = ()) -> float:
    """Bits a row of the filter of a new segment of ``rows`` rows (the segments ``leaving`` merged into it): its
    share (``_filter_targets`` of the index's segments with it), or FILTER_HEADROOM less when that would pass
    FILTER_MEMORY_BYTES (``_share_filters`` then thins the others to theirs)."""
    gone = {s.segment for s in leaving}
    share = _filter_targets([s.rows for s in held.items if s.segment not in gone and s.rows] + [rows])[-1]
    if held.filter_bytes(leaving) + _filter_size(rows, share) > FILTER_MEMORY_BYTES:
        share = max(FILTER_MIN_BITS, share / FILTER_HEADROOM)
    return share


def _share_filters(db: sqlite_utils.Database, held: _Segments) -> None:
    """Keep the segments' filters within FILTER_MEMORY_BYTES, each near its share (``_filter_targets``), as the
    index grows.

    When the filters pass the budget, or a segment's filter has less than half its share (an index written before
    the budget was shared, whose newest segments got 1 KiB filters), every filter outside [share / 2, share /
    FILTER_HEADROOM] bits a row is rebuilt from its segment's keys at share / FILTER_HEADROOM (the bytes a filter of
    that size made at the segment's writing would have). So the filters then take at most about
    FILTER_MEMORY_BYTES / FILTER_HEADROOM, the next rebuild comes after the index grows by about FILTER_HEADROOM,
    and no segment is left with a filter that cannot answer."""
    live = [s for s in held.items if s.rows]
    shares = _filter_targets([s.rows for s in live])

    def bits_a_row(s: _Segment) -> float:
        return len(s.bits) * 8 / s.rows

    if held.filter_bytes() <= FILTER_MEMORY_BYTES and all(bits_a_row(s) >= share / 2 for s, share in zip(live, shares)):
        return
    try:
        for s, share in zip(live, shares):
            low = max(FILTER_MIN_BITS, share / FILTER_HEADROOM)
            size = _filter_size(s.rows, low)
            if (size < len(s.bits) and bits_a_row(s) > low) or (size > len(s.bits) and bits_a_row(s) < share / 2):
                s.bits = np.zeros(0, dtype=np.uint8)  # (the old filter goes before the new one is made)
                s.bits = _rebuilt_filter(db, s, size)
                value, parameter = _filter_value(db.conn, s.bits)
                db.conn.execute(f"UPDATE lsh_segments SET filter = {value} WHERE segment = ?", [parameter, s.segment])
                _write_filter(db.conn, s.segment, s.bits)
    except BaseException:  # (a segment may be left without its filter in memory: read them again from the database)
        vars(db).pop("_lsh_segments", None)
        raise


def _rebuilt_filter(db: sqlite_utils.Database, segment: _Segment, size: int) -> np.ndarray:
    """The filter of ``size`` bytes of a segment's keys, read from its blocks (keys only) FILTER_REBUILD_BLOCKS at a
    time, in key order."""
    bits = np.zeros(size, dtype=np.uint8)
    for first in range(0, len(segment.fences), FILTER_REBUILD_BLOCKS):
        rows = db.conn.execute("SELECT keys FROM lsh_blocks WHERE id BETWEEN ? AND ? ORDER BY id",
                               [segment.base + first, segment.base + first + FILTER_REBUILD_BLOCKS - 1]).fetchall()
        _bloom_add(bits, np.frombuffer(b"".join(r[0] for r in rows), dtype=np.int64))
    return bits


class _SegmentWriter:
    """Writes one segment from (key, doc) rows given in (key, doc) order, in as many calls as wanted: blocks of
    SEGMENT_BLOCK_ROWS rows (one INSERT each), their first keys, and the filter of the keys."""

    def __init__(self, db: sqlite_utils.Database, segment: int, level: int, rows: int, bits: float):
        self.db, self.segment, self.level = db, segment, level
        self.bits = np.zeros(_filter_size(rows, bits), dtype=np.uint8)  # (``bits``: its bits a row)
        self.keys: list[np.ndarray] = []
        self.docs: list[np.ndarray] = []
        self.fences: list[np.ndarray] = []
        self.blocks = self.rows = self.pending = 0
        self.last: tuple[int, int] | None = None

    def write(self, keys: np.ndarray, docs: np.ndarray) -> None:
        if not len(keys):
            return
        again = np.empty(len(keys), dtype=bool)  # a row given twice is kept once
        np.equal(keys[1:], keys[:-1], out=again[1:])
        again[1:] &= docs[1:] == docs[:-1]
        again[0] = self.last == (int(keys[0]), int(docs[0]))
        if again.any():
            keys, docs = keys[~again], docs[~again]
        if not len(keys):
            return
        self.last = int(keys[-1]), int(docs[-1])
        _bloom_add(self.bits, keys)
        step = SEGMENT_BLOCK_ROWS * 256  # (rows are written as they come, this many at a time: a flush or a merge's
        # key range is not held twice, as pending rows and as their concatenation)
        for start in range(0, len(keys), step):
            self.keys.append(keys[start:start + step])
            self.docs.append(docs[start:start + step])
            self.pending += len(self.keys[-1])
            if self.pending >= step:
                self._blocks(final=False)
        # rows left pending: copies, not views of the caller's rows (those already copied are kept as they are)
        self.keys = [k if k.base is None else k.copy() for k in self.keys]
        self.docs = [d if d.base is None else d.copy() for d in self.docs]

    def _blocks(self, *, final: bool) -> None:
        empty = [np.empty(0, np.int64)]
        keys, docs = np.concatenate(self.keys or empty), np.concatenate(self.docs or empty)
        size = SEGMENT_BLOCK_ROWS
        whole = len(keys) if final else len(keys) // size * size
        count = -(-whole // size)
        if count:
            base = (self.segment << BLOCK_ID_SHIFT) + self.blocks
            self.db.conn.executemany("INSERT INTO lsh_blocks (id, keys, docs) VALUES (?, ?, ?)",
                                     [(base + i, keys[i * size:(i + 1) * size].tobytes(),
                                       docs[i * size:(i + 1) * size].tobytes()) for i in range(count)])
            self.fences.append(keys[:whole:size].copy())  # (a view would keep every row of the merge alive)
            self.blocks += count
            self.rows += whole
        self.keys, self.docs = ([keys[whole:].copy()], [docs[whole:].copy()]) if whole < len(keys) else ([], [])
        self.pending = len(keys) - whole

    def close(self) -> _Segment:
        self._blocks(final=True)
        fences = np.concatenate(self.fences) if self.fences else np.empty(0, np.int64)
        value, parameter = _filter_value(self.db.conn, self.bits)
        self.db.conn.execute(f"INSERT INTO lsh_segments (segment, level, rows, fences, filter) VALUES (?, ?, ?, ?, {value})",
                             [self.segment, self.level, self.rows, memoryview(fences), parameter])
        _write_filter(self.db.conn, self.segment, self.bits)
        return _Segment(self.segment, self.level, self.rows, fences, self.bits)


def _read_blocks(db: sqlite_utils.Database, segment: _Segment, first: int, last: int) -> tuple[np.ndarray, np.ndarray]:
    rows = db.conn.execute("SELECT keys, docs FROM lsh_blocks WHERE id BETWEEN ? AND ? ORDER BY id",
                           [segment.base + first, segment.base + last]).fetchall()
    return (np.frombuffer(b"".join(r[0] for r in rows), dtype=np.int64),
            np.frombuffer(b"".join(r[1] for r in rows), dtype=np.int64))


def _range_rows(db: sqlite_utils.Database, segment: _Segment, low: int | None,
                high: int | None) -> tuple[np.ndarray, np.ndarray]:
    """A segment's rows whose key is in [low, high) (None: no bound), in (key, doc) order."""
    fences = segment.fences
    first = 0 if low is None else max(int(np.searchsorted(fences, low, side="left")) - 1, 0)
    last = len(fences) - 1 if high is None else int(np.searchsorted(fences, high, side="left")) - 1
    if last < first:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    keys, docs = _read_blocks(db, segment, first, last)
    start = 0 if low is None else int(np.searchsorted(keys, low, side="left"))  # (a segment's keys are sorted)
    end = len(keys) if high is None else int(np.searchsorted(keys, high, side="left"))
    return keys[start:end], docs[start:end]


def _key_ranges(segments: Sequence[_Segment], extra: int, rows: int) -> list[tuple[int | None, int | None]]:
    """[low, high) key ranges that cut ``segments`` (and ``extra`` rows more) into pieces of about ``rows`` rows:
    the first keys of evenly spaced blocks of the largest segment (keys are uniform hashes)."""
    total = sum(s.rows for s in segments) + extra
    largest = max(segments, key=lambda s: s.rows, default=None)
    pieces = -(-total // max(rows, 1))
    if largest is None or pieces < 2 or len(largest.fences) < 2:
        return [(None, None)]
    at = np.linspace(0, len(largest.fences), min(pieces, len(largest.fences)) + 1)[1:-1].astype(np.int64)
    cuts = np.unique(largest.fences[at]).tolist()
    return list(zip([None, *cuts], [*cuts, None]))


def _merge_segments(db: sqlite_utils.Database, held: _Segments, merged: list[_Segment], level: int) -> _Segment:
    """One segment of ``level`` from the rows of ``merged`` (one key range at a time); theirs go.

    Memory: the merged segments' filters are let go as the merge starts (nothing reads them during it; a merge that
    fails drops the segments held in memory, read again from the database), so the filters never take the old and
    the new at once; a key range's rows are merged by the compiled kernel straight into their order (``merge_rows``),
    without the concatenation and the sort order beside them."""
    rows = sum(s.rows for s in merged)
    writer = _SegmentWriter(db, held.next_id(), level, rows, _new_filter_bits(held, rows, merged))
    compiled = _kernels()
    try:
        for s in merged:
            s.bits = np.zeros(0, dtype=np.uint8)
        for low, high in _key_ranges(merged, 0, SEGMENT_SLICE_ROWS):
            parts = [_range_rows(db, s, low, high) for s in merged]
            if compiled is not None:
                keys = np.empty(sum(len(k) for k, _ in parts), dtype=np.int64)
                docs = np.empty(len(keys), dtype=np.int64)
                compiled.merge_rows([k for k, _ in parts], [d for _, d in parts], keys, docs)
            else:
                keys, docs = _ordered_rows(np.concatenate([k for k, _ in parts]),
                                           np.concatenate([d for _, d in parts]))[:2]
            del parts
            writer.write(keys, docs)
            del keys, docs
        made = writer.close()
    except BaseException:
        vars(db).pop("_lsh_segments", None)
        raise
    for s in merged:
        db.conn.execute("DELETE FROM lsh_blocks WHERE id BETWEEN ? AND ?", [s.base, s.base + (1 << BLOCK_ID_SHIFT) - 1])
        db.conn.execute("DELETE FROM lsh_segments WHERE segment = ?", [s.segment])
    gone = {s.segment for s in merged}
    held.items = [s for s in held.items if s.segment not in gone] + [made]
    return made


def _add_segment(db: sqlite_utils.Database, keys: np.ndarray, docs: np.ndarray) -> None:
    """Rows in (key, doc) order as a new segment of level 0; then every level holding SEGMENT_FANOUT segments
    merges them into one of the next level (each row is rewritten once a level: log(pages) times in all), except
    at the top past the filters' budget: the highest level then holds one segment (``_merged_with_top``)."""
    _add_segment_rows(db, len(keys), [(keys, docs)])


def _add_segment_rows(db: sqlite_utils.Database, rows: int, parts: Iterable[tuple[np.ndarray, np.ndarray]]) -> None:
    """``_add_segment`` of ``rows`` rows given in parts, each in (key, doc) order and above the one before."""
    held = _segments(db)
    writer = _SegmentWriter(db, held.next_id(), 0, rows, _new_filter_bits(held, rows))
    for keys, docs in parts:
        writer.write(keys, docs)
    held.items.append(writer.close())
    level = 0
    while len(same := [s for s in held.items if s.level == level]) >= SEGMENT_FANOUT:
        merged, made = _merged_with_top(held, same, level + 1)
        _merge_segments(db, held, merged, made)
        level += 1
    _share_filters(db, held)
    held.changed(db)


def _merged_with_top(held: _Segments, same: list[_Segment], level: int) -> tuple[list[_Segment], int]:
    """(the segments to merge, oldest first; the level of the segment they make) when ``same``, SEGMENT_FANOUT
    segments of one level, merge into one of ``level``.

    Once the filters share FILTER_MEMORY_BYTES (fewer than SEGMENT_FILTER_BITS a row: ``_fair_bits``), where
    ``level`` is the highest level of the index its segments are merged in too, so the top level holds one segment,
    which grows (tiered levels below it, leveled at the top): it goes up a level when it holds SEGMENT_FANOUT times
    the rows of a merge from below. A batch probes every segment and the false "maybe" answers of the large ones are
    most of its block reads past the budget (at 10M pages, three level-3 segments of 93M rows each at 5-6 bits a
    row: about 8% each); one top segment costs a third of those, for a merge that rewrites the top's rows too. Below
    the budget (10 bits a row, about 1% each) the top level stays tiered: there the extra rewriting cost more than
    the block reads it saved (3M pages: 18.3 against 10.3 us a page of merges, 17.3 against 27.2 of lookups). An
    index with several segments at its top level takes them all in at its next merge into that level."""
    top = max((s.level for s in held.items), default=0)
    if level != top or _fair_bits(sum(s.rows for s in held.items)) >= SEGMENT_FILTER_BITS:
        return same, level
    taken = {s.segment for s in same} | {s.segment for s in held.items if s.level == level}
    merged = [s for s in held.items if s.segment in taken]  # (oldest first: ids rise)
    below = sum(s.rows for s in same)
    return merged, level + 1 if sum(s.rows for s in merged) >= SEGMENT_FANOUT * below else level


def _segment_rows(db: sqlite_utils.Database, keys: np.ndarray, cap: int | None = BUCKET_CAP) -> np.ndarray:
    """(key, doc) rows of the distinct sorted ``keys`` in the segments (with ``cap``: at least each key's first
    ``cap`` docs of each segment), unordered. Only the blocks of keys that a segment's filter may hold are read,
    all in one statement."""
    wanted = []
    positions: dict = {}  # every segment's filter probes the same keys: their parts made once
    for s in _segments(db).items:
        sought, blocks = s.blocks_of(keys, cap, positions)
        if len(blocks):
            wanted.append((s, sought, blocks))
    if not wanted:
        return np.empty((0, 2), np.int64)
    ids = np.concatenate([s.base + blocks for s, _, blocks in wanted])
    fetched = _select_in(db, "SELECT id, keys, docs FROM lsh_blocks WHERE id IN ({ids})", ids.tolist())
    if len(fetched) != len(ids) or any(row[0] != i for row, i in zip(fetched, ids.tolist())):
        fetched.sort()  # (an IN list of row ids gives its rows in id order: blocks are asked for in that order)
    # every block's rows end to end, cut by segment: one join of all the blocks, not one list a segment
    block_keys = np.frombuffer(b"".join([r[1] for r in fetched]), dtype=np.int64)
    block_docs = np.frombuffer(b"".join([r[2] for r in fetched]), dtype=np.int64)
    ends = np.cumsum([len(r[1]) >> 3 for r in fetched]).tolist()
    runs = []
    done = 0
    for s, sought, blocks in wanted:
        start, end = ends[done - 1] if done else 0, ends[done + len(blocks) - 1]
        done += len(blocks)
        runs.append((block_keys[start:end], block_docs[start:end]))
    return _gathered([sought for _, sought, _ in wanted], runs)


def _drop_segment_rows(db: sqlite_utils.Database, keys: np.ndarray, docs: np.ndarray) -> None:
    """Take the (key, doc) rows out of the segments: the blocks that hold any are rewritten (their first keys
    stay bounds, the filters may still say "maybe")."""
    held = _segments(db)
    gone = set(zip(keys.tolist(), docs.tolist()))
    changed = False
    for s in held.items:
        _, blocks = s.blocks_of(sorted_set(keys), None)
        dropped = 0
        for block in blocks.tolist():
            block_keys, block_docs = _read_blocks(db, s, block, block)
            drop = np.array([(k, d) in gone for k, d in zip(block_keys.tolist(), block_docs.tolist())], dtype=bool)
            if drop.any():
                db.conn.execute("UPDATE lsh_blocks SET keys = ?, docs = ? WHERE id = ?",
                                [block_keys[~drop].tobytes(), block_docs[~drop].tobytes(), s.base + block])
                dropped += int(drop.sum())
        if dropped:  # (one UPDATE a segment: it rewrites the segment's row, filter and all)
            s.rows -= dropped
            db.conn.execute("UPDATE lsh_segments SET rows = ? WHERE segment = ?", [s.rows, s.segment])
            changed = True
    if changed:
        held.changed(db)


def _bucket_rows(db: sqlite_utils.Database, keys: np.ndarray, cap: int = BUCKET_CAP) -> np.ndarray:
    """(key, doc) of the first ``cap`` docs of each of the distinct ``keys``, from the segments and the recent runs,
    sorted by key then doc."""
    rows = np.concatenate((_segment_rows(db, keys, cap), _recent(db).find(keys)))
    rows = rows[np.lexsort((rows[:, 1], rows[:, 0]))]
    return _capped(rows, cap)


def _lookup_rows(db: sqlite_utils.Database, keys: np.ndarray) -> np.ndarray:
    """(key, doc) of the distinct sorted ``keys``, band keys and page keys together, sorted by key then doc: a band
    key's first BUCKET_CAP docs (``_bucket_rows``), every doc of a page key (``_page_docs``); the page keys' rows
    follow the band keys' (above them all)."""
    rows = np.concatenate((_segment_rows(db, keys, BUCKET_CAP), _recent(db).find(keys)))
    rows = rows[np.lexsort((rows[:, 1], rows[:, 0]))]
    split = int(np.searchsorted(rows[:, 0], PAGE_KEY_BASE, side="left"))
    return np.concatenate((_capped(rows[:split], BUCKET_CAP), rows[split:]))


def _insert_docs(db: sqlite_utils.Database, docs: np.ndarray, pages: list[IndexedPage], values: np.ndarray,
                 first_seen: list[int], settings: ShingleSettings, sets: list[np.ndarray] | None,
                 set_blobs: list[bytes] | None, own_keys: np.ndarray, band: np.ndarray,
                 anchor_rows: tuple[np.ndarray, np.ndarray], bucket: np.ndarray | None = None) -> int:
    """Insert band and anchor keys (``band``: the pages' band keys; ``anchor_rows``: their anchor keys end to end
    and each page's count, ``_anchor_rows``; and the pages' page keys, ``own_keys``), find and verify candidates
    (``bucket``: the stored rows of their keys, when looked up already), then store the pages with their clusters
    (``sets``: their verification sets, None with verify="estimate"; ``set_blobs``: their bytes)."""
    if not len(docs):
        return 0
    pairs = _candidate_pairs(db, *_band_rows(band, docs, joined=anchor_rows), len(docs),
                             _page_rows(docs, [], own_keys), bucket)
    source = _SignatureSource(db, settings, docs, values,
                              dict(zip(docs.tolist(), sets)) if sets is not None else None, [p.url for p in pages])
    edges, sizes = _verified_edges(db, pairs, docs, source)
    labels, links, merged = _merge(docs, edges, sizes, {d: p.text_chars for d, p in zip(docs.tolist(), pages)},
                                   source)
    doc_list = docs.tolist()
    # the page rows' anchor keys cut from one bytes object (``_cut_blobs``), as their verification sets were
    ends = np.cumsum(anchor_rows[1]).tolist()
    anchor_blobs = _cut_blobs(anchor_rows[0], [0, *ends], range(len(ends)))
    set_blobs = [None] * len(doc_list) if set_blobs is None else set_blobs
    db.conn.executemany(
        "INSERT INTO lsh_signatures (doc, page_id, url, signature, first_seen, boilerplate_chars, text_chars,"
        " cluster, fetched_at, anchors, hashes) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [(d, p.page_id, p.url, v, s, p.boilerplate_chars, p.text_chars, labels.get(d, d), p.fetched_at, a or None, h)
         for d, p, v, s, a, h in zip(doc_list, pages, _blobs(values), first_seen, anchor_blobs, set_blobs)])
    _relabel(db, merged)
    _add_links(db, links)
    return len(links)


def _blobs(arrays: np.ndarray | Sequence[np.ndarray]) -> list[bytes]:
    """Each row of a 2-D array (cut from one bytes object of them all), or each array of a list of 1-D arrays, as
    bytes (``tobytes``: a batch's 200 arrays one by one take a fifth of the time of their concatenation and cuts)."""
    if isinstance(arrays, np.ndarray) and arrays.ndim == 2:
        data, width = np.ascontiguousarray(arrays).tobytes(), arrays.shape[1] * arrays.itemsize
        return [data[i:i + width] for i in range(0, len(data), width)] if width else [b""] * len(arrays)
    return [a.tobytes() for a in arrays]


def _candidate_pairs(db: sqlite_utils.Database, keys: np.ndarray, docs: np.ndarray, pages: int,
                     page_rows: tuple[np.ndarray, np.ndarray] | None = None,
                     bucket: np.ndarray | None = None) -> np.ndarray:
    """(new page, earlier page) rows, one per shared band: stored pages from the index (looked up before the
    batch's keys go in), pages of the batch from its own sorted keys. Then the batch's keys go in as one run, with
    its pages' page key rows (``page_rows``, sorted: above every band key, so they follow the band rows)
    (``pages``: the batch's pages, each with rows here; ``bucket``: the stored rows of a lookup of the batch's keys,
    or of more keys, made already: see ``_stored_partners``)."""
    distinct = _distinct_sorted(keys)
    stored = _stored_partners(db, keys, docs, distinct, bucket)
    if page_rows is not None and len(page_rows[0]):
        _append_run(db, _recent(db), np.concatenate((keys, page_rows[0])), np.concatenate((docs, page_rows[1])),
                    np.concatenate((distinct, _distinct_sorted(page_rows[0]))))
    else:
        _append_run(db, _recent(db), keys, docs, distinct)
    _merge_recent(db, pages)
    within = bucket_pairs(keys, docs)[:, ::-1]
    return np.concatenate((stored, within))


def _merge_recent(db: sqlite_utils.Database, added: int, *, limit: int | None = None) -> None:
    """Count ``added`` pages into the recent runs; when they hold RECENT_PAGES (``limit``) or RECENT_ROWS key rows
    (what they take in memory), write their rows as a new segment (``_add_segment``: the levels merge as they
    fill) and empty them. Both counts are the database's (lsh_state, lsh_runs' rows): a run resumed after a kill
    flushes where an uninterrupted one does."""
    recent = _next(db, "recent_docs", added) + added
    held = _recent(db)
    if recent < (RECENT_PAGES if limit is None else limit) and held.size < RECENT_ROWS:
        return
    tiers, rows = held.tiers, held.size
    held.clear()  # (a flush that fails leaves memory's token ahead of the database's, which rolls back: the runs are
    # read again)
    summed = [0, 0, 0]  # the rows' count, key sum and doc sum (with ``xor``: what ``_token_after`` makes of them)
    xor = [0]

    def parts() -> Iterator[tuple[np.ndarray, np.ndarray]]:
        # one key range of about SEGMENT_SLICE_ROWS rows at a time, merged from every tier: the flush holds the
        # tiers and one range's rows, not a second copy of them all in order
        largest = max(tiers, key=lambda t: len(t[0]))[0]
        pieces = min(-(-rows // SEGMENT_SLICE_ROWS), len(largest))
        cuts = np.unique(largest[np.linspace(0, len(largest), pieces + 1)[1:-1].astype(np.int64)]).tolist()
        for low, high in zip([None, *cuts], [*cuts, None]):
            sliced = [(k[lo:hi], d[lo:hi]) for k, d in tiers
                      for lo, hi in [(0 if low is None else int(np.searchsorted(k, low, side="left")),
                                      len(k) if high is None else int(np.searchsorted(k, high, side="left")))]]
            keys, docs = _merged_runs([k for k, _ in sliced], [d for _, d in sliced])
            if ((keys[1:] == keys[:-1]) & (docs[1:] < docs[:-1])).any():  # (docs come in order unless pages were
                order = np.lexsort((docs, keys))  # re-indexed)
                keys, docs = keys[order], docs[order]
            summed[0] += len(keys)
            summed[1] = _wrapped(summed[1] + (int(keys.sum()) if len(keys) else 0))  # (as numpy sums all the rows)
            summed[2] = _wrapped(summed[2] + (int(docs.sum()) if len(docs) else 0))
            xor[0] ^= int(np.bitwise_xor.reduce(keys)) if len(keys) else 0
            yield keys, docs

    if tiers:
        _add_segment_rows(db, rows, parts())
    db.conn.execute("DELETE FROM lsh_runs")
    held.token = _tokens_after(held.token, summed[0], summed[1], _wrapped(-summed[2]), xor[0])
    _set_state(db, "recent_token", held.token)
    _set_state(db, "recent_docs", 0)


def _stored_partners(db: sqlite_utils.Database, keys: np.ndarray, docs: np.ndarray,
                     distinct: np.ndarray | None = None, bucket: np.ndarray | None = None) -> np.ndarray:
    """(new page, stored page) for every key of the batch (sorted; ``distinct``: its distinct keys) found in the
    index: each found key's bucket (its first BUCKET_CAP pages), matched to the batch's keys in numpy (``bucket``:
    the buckets of these keys, and maybe of others, looked up already; sorted by key then doc)."""
    if bucket is None:
        bucket = _bucket_rows(db, _distinct_sorted(keys) if distinct is None else distinct)
    if not len(bucket):
        return np.empty((0, 2), np.int64)
    first = np.searchsorted(bucket[:, 0], keys, side="left")
    sizes = np.searchsorted(bucket[:, 0], keys, side="right") - first
    row = np.repeat(np.arange(len(keys)), sizes)
    at = np.arange(int(sizes.sum())) - np.repeat(np.cumsum(sizes) - sizes, sizes) + np.repeat(first, sizes)
    return np.stack((docs[row], bucket[at, 1]), axis=1)


def _verified_edges(db: sqlite_utils.Database, pairs: np.ndarray, docs: np.ndarray,
                    source: _SignatureSource) -> tuple[list[tuple[int, int, int]], dict[int, int]]:
    """(new page, group, verified partner) for every group a new page links to, and the sizes of the stored clusters
    among those groups.

    ``pairs`` are (new page, stored page) and (new page, earlier new page), one row per shared band. A group is an
    existing cluster (by its label) or another page of this batch. The pairs are verified a slice of new pages at a
    time (``_verification_slices``: each slice's stored partners read and held together, then let go), so what a
    batch holds is bounded by VERIFY_BYTES, not by its candidates; a new page's edges are its own pairs' (a verdict
    is its pair's alone), so the edges, and their order, are those of one slice.
    """
    codes, shared = np.unique((pairs[:, 0] << PAIR_SHIFT) | pairs[:, 1], return_counts=True)
    if not len(codes):
        return [], {}
    x, y = codes >> PAIR_SHIFT, codes & ((1 << PAIR_SHIFT) - 1)  # (x ascending: a slice of new pages is a range)
    stored = ~np.isin(y, docs)
    found: list[tuple[int, int, int]] = []
    labels: set[int] = set()
    for n, (low, high) in enumerate(_verification_slices(x, y, stored, _partner_bytes(source))):
        if n:
            source.release()
        found += _verified_slice(db, x[low:high], y[low:high], shared[low:high], stored[low:high], source, labels)
    # the sizes of the clusters an edge reaches: joining and the references need no other (most candidates fail, and
    # the clusters of the pages they name were read, with each one's references, for nothing)
    return found, _cluster_sizes(db, sorted({g for _, g, _ in found if g in labels}))


def _partner_bytes(source: _SignatureSource) -> int:
    """What reading one stored partner for verification takes, in bytes: its verification set at its largest
    (``sample`` hashes, verifying by sample), the batch's own sets' mean (verify "exact": a whole set's size is
    not known before it is read), or its signature (verify "estimate")."""
    settings = source.settings
    width = 4 if settings.hash_bits == 32 else 8
    if settings.verify == "sample":
        return settings.sample * width
    if settings.verify == "estimate":
        return settings.permutations * 4
    sizes = [len(s) for s in source.sets.values()]
    return max(1, width * sum(sizes) // max(len(sizes), 1))


def _verification_slices(x: np.ndarray, y: np.ndarray, stored: np.ndarray, partner_bytes: int,
                         budget: int | None = None) -> list[tuple[int, int]]:
    """Ranges [low, high) of the pairs (x[i], y[i]) (x ascending) that are verified together: whole runs of one new
    page x, as many as keep the distinct stored partners (y where ``stored``) of a range within ``budget`` bytes
    (VERIFY_BYTES) at ``partner_bytes`` each. One range when all fit (the common case: nothing counted); a new page
    whose own partners do not fit is a range of its own."""
    limit = max(1, (VERIFY_BYTES if budget is None else budget) // max(partner_bytes, 1))
    if len(np.unique(y[stored])) <= limit:
        return [(0, len(x))]
    starts = np.flatnonzero(np.r_[True, x[1:] != x[:-1]]).tolist()
    ys, mask = y.tolist(), stored.tolist()
    cuts, held = [0], set()
    for start, end in zip(starts, [*starts[1:], len(x)]):
        mine = {ys[i] for i in range(start, end) if mask[i]}
        if held and len(held) + len(mine - held) > limit:
            cuts.append(start)
            held = mine
        else:
            held |= mine
    return list(zip(cuts, [*cuts[1:], len(x)]))


def _verified_slice(db: sqlite_utils.Database, x: np.ndarray, y: np.ndarray, shared: np.ndarray, stored: np.ndarray,
                    source: _SignatureSource, labels: set[int]) -> list[tuple[int, int, int]]:
    """``_first_passing`` of a slice of the pairs, their stored partners (y where ``stored``) read and held for it
    (their clusters added to ``labels``)."""
    old = sorted_set(y[stored])
    # the partners' clusters and sets in one statement, taken column by column: no Python step a partner
    # (verification needs every partner's set; the URLs of the few whose similarity reaches a threshold are read
    # when their sites are asked for, ``_same_where_needed``)
    sets = source.settings.verify != "estimate"
    rows = _select_in(db, f"SELECT doc, cluster, {'hashes' if sets else 'NULL'} FROM lsh_signatures"
                          " WHERE doc IN ({ids})", old.tolist())
    row_docs, clusters, blobs = zip(*rows) if rows else ((), (), ())
    del rows
    if sets:
        older = [doc for doc, blob in zip(row_docs, blobs) if blob is None]  # stored before migration 7: their sets
        if older:  # are in lsh_shingles
            kept = stored_sets(db, older, source.settings)
            blobs = [kept[doc].tobytes() if blob is None else blob for doc, blob in zip(row_docs, blobs)]
        source.hold(row_docs, blobs)
    del blobs
    partners, cluster_of = np.array(row_docs, dtype=np.int64), np.array(clusters, dtype=np.int64)
    labels.update(clusters)
    order = np.argsort(partners)
    partners, cluster_of = partners[order], cluster_of[order]
    at = np.minimum(np.searchsorted(partners, y), max(len(partners) - 1, 0))
    group = np.where(partners[at] == y, cluster_of[at], y) if len(partners) else y.copy()  # (a new page is its own
    # group)
    return _first_passing(x, group, y, shared, source)


def _cluster_sizes(db: sqlite_utils.Database, labels: list[int]) -> dict[int, int]:
    sizes = dict(_select_in(db, "SELECT cluster, size FROM dup_clusters WHERE cluster IN ({ids})", labels))
    return {label: sizes.get(label, 1) for label in labels}


def _first_passing(x: np.ndarray, group: np.ndarray, y: np.ndarray, shared: np.ndarray,
                   source: _SignatureSource) -> list[tuple[int, int, int]]:
    """For each (x, group): the first partner (most shared keys first) whose similarity reaches its threshold.

    Candidates are verified in rounds (1, then up to 4, 16, ... per pair of x and group); a (x, group) stops at
    its first verified partner and is given up only when all its candidates failed.
    """
    order = np.lexsort((y, -shared, group, x))
    x, group, y = x[order], group[order], y[order]
    starts = np.flatnonzero(np.r_[True, (x[1:] != x[:-1]) | (group[1:] != group[:-1])])
    segment = np.repeat(np.arange(len(starts)), np.diff(np.r_[starts, len(x)]))
    rank = np.arange(len(x)) - starts[segment]
    winner = np.full(len(starts), -1, dtype=np.int64)
    low = 0
    for high in ROUND_LIMITS:
        todo = np.flatnonzero((rank >= low) & (rank < high) & (winner[segment] < 0))
        if len(todo):
            passed = todo[source.passing(x[todo], y[todo])]
            segs = segment[passed]  # (ascending: ``passed`` is, and so are the segments by position)
            first = np.flatnonzero(np.r_[True, segs[1:] != segs[:-1]]) if len(segs) else segs
            winner[segs[first]] = passed[first]
        low = high
        if low > rank.max():
            break
    hits = winner[winner >= 0]
    return list(zip(x[hits].tolist(), group[hits].tolist(), y[hits].tolist()))


References = dict[str, tuple[int, int]]  # a group's reference pages: site -> (doc, text_chars) of its longest text


def _references(db: sqlite_utils.Database, sizes: dict[int, int], source: _SignatureSource) -> dict[int, References]:
    """label -> the reference pages of each stored cluster: per site, its member with the longest text (then the
    smallest doc), among its REFERENCE_MEMBERS longest. A cut or partial copy is contained in the longest version
    of its story, so a page that belongs to a cluster reaches the threshold with its references."""
    rows: list[tuple] = []
    conn = db.conn
    for label, size in sizes.items():
        if size > 1:
            rows += [(label, *r) for r in conn.execute(
                "SELECT doc, url, text_chars FROM lsh_signatures WHERE cluster = ? AND cluster != doc"
                f" ORDER BY text_chars DESC, doc LIMIT {REFERENCE_MEMBERS}", [label])]
    rows += [(doc, doc, url, chars) for doc, url, chars in _select_in(
        db, "SELECT doc, url, text_chars FROM lsh_signatures WHERE doc IN ({ids})", list(sizes))]
    out: dict[int, References] = {label: {} for label in sizes}
    for label, doc, url, chars in rows:
        site = source.sites.setdefault(doc, site_of(url))
        out[label][site] = max(out[label].get(site, (doc, chars)), (doc, chars), key=_reference_key)
    return out


def _reference_key(ref: tuple[int, int]) -> tuple[int, int]:
    """The longer text wins, then the smaller doc number."""
    return ref[1], -ref[0]


def _longest(refs: References) -> int:
    return max(refs.values(), key=_reference_key)[0]


def _compatible(mine: References, theirs: References, source: _SignatureSource) -> bool:
    """Whether two groups may be one: their longest pages pass with each other, and so do their longest pages of
    every site both hold (pages of one site pass only with that site's rules: a short page inside a longer page
    of its site is not a copy of it, even when a copy of the longer one on another site contains it)."""
    pairs = {(_longest(mine), _longest(theirs))} | {(mine[s][0], theirs[s][0]) for s in mine.keys() & theirs.keys()}
    pairs = [(a, b) for a, b in pairs if a != b]
    return all(source.verdicts_of(pairs)) if pairs else True


class _NewReferences(dict):
    """References by group: the stored clusters' as given, and a new page's (itself, on its site) made when first
    needed (most pages of a batch have no verified edge: their sites are never read)."""

    def __init__(self, references: dict[int, References], new: set[int], chars: dict[int, int],
                 source: _SignatureSource):
        super().__init__(references)
        self.new, self.chars, self.source = new, chars, source

    def __missing__(self, doc: int) -> References:
        if doc not in self.new:
            raise KeyError(doc)
        refs = self[doc] = {self.source.site(doc): (doc, self.chars.get(doc, 0))}
        return refs


def _join(docs: np.ndarray, edges: list[tuple[int, int, int]], references: dict[int, References],
          chars: dict[int, int], source: _SignatureSource) -> tuple[UnionFind, list[tuple[int, int]]]:
    """Join the new pages (in doc order) to the groups their verified edges (new page, group, partner) reach.

    Nodes are new pages and old cluster labels. A page joins a group (a cluster, or new pages joined already) only
    when it also passes with the group's reference pages (``_references``, ``_compatible``), and two groups become
    one only when their references pass with each other: a page that passes with two different stories (a short
    cut copy inside two longer articles of one site) joins the one whose longest page it is most similar to
    instead of chaining them.
    """
    uf = UnionFind()
    refs = _NewReferences(references, set(docs.tolist()), chars, source)
    links: list[tuple[int, int]] = []
    _first_checks(edges, refs, source)
    for x, items in groupby(sorted(edges), key=lambda e: e[0]):
        options: dict[int, int] = {}
        for _, group, partner in items:
            options.setdefault(uf.find(group), partner)
        roots = [r for r in options if r != uf.find(x) and _compatible(refs[x], refs[r], source)]
        if not roots:
            continue
        targets = [_longest(refs[r]) for r in roots]
        sims = source.similarities([(x, t) for t in targets])
        ranked = sorted(zip([-sim for sim in sims], targets, roots))
        for rank, (_, _, met) in enumerate(ranked):
            root, mine = uf.find(met), uf.find(x)
            if root == mine or (rank and not _compatible(refs[mine], refs[root], source)):
                continue  # joined already, or the two groups tell different stories: x stays with the first
            merged = dict(refs[mine])
            for site, ref in refs[root].items():
                merged[site] = max(merged.get(site, ref), ref, key=_reference_key)
            uf.union(x, root)
            refs[uf.find(x)] = merged
            links.append((x, options[met]))
    return uf, links


def _first_checks(edges: list[tuple[int, int, int]], refs: _NewReferences, source: _SignatureSource) -> None:
    """The verdicts (and similarities) that ``_join`` asks for first, all in one ``passing`` call: each new page x of
    an edge against its group's longest page and its group's longest page of x's site, as the groups stand before any
    join (``_compatible`` and the ranking ask for these pairs one or two at a time; pairs of groups that joins have
    changed are measured when asked, as before). Only fills the caches: every verdict is the pair's own."""
    if not edges:
        return
    new = np.array(sorted({x for x, _, _ in edges}), dtype=np.int64)
    sites = dict(zip(new.tolist(), source.site_list(new)))
    wanted: dict[tuple[int, int], None] = {}
    for x, group, _ in edges:
        theirs = refs[group]
        wanted[x, _longest(theirs)] = None
        if sites[x] in theirs:
            wanted[x, theirs[sites[x]][0]] = None
    pairs = [p for p in wanted if p[0] != p[1]]
    if pairs:
        a, b = (np.array(side, dtype=np.int64) for side in zip(*pairs))
        ok = source.passing(a, b).tolist()
        if source.settings.verify != "estimate":
            # the similarities of the pairs that pass, which ``_join`` ranks a page's groups by: those that pass by
            # resemblance (below both thresholds, so not kept by verification) measured in one call here, where
            # the ranking measured each alone (about four a 200-page batch, each a call with its own arrays)
            unmeasured = [p for p, good in zip(pairs, ok) if good and p not in source.pair_similarity]
            if unmeasured:
                source.similarities(unmeasured)


def _merge(docs: np.ndarray, edges: list[tuple[int, int, int]], sizes: dict[int, int], chars: dict[int, int],
           source: _SignatureSource) -> tuple[dict[int, int], list[tuple[int, int]], list[tuple[int, list[int], int]]]:
    """Join the batch's edges (``_join``): labels of new pages, the links that joined groups, and old clusters to
    merge.

    A component keeps the label of its largest old cluster (ties: the smallest label); one made of new pages only
    takes its smallest doc number.
    """
    uf, links = _join(docs, edges, _references(source.db, sizes, source), chars, source)
    new = set(docs.tolist())
    labels: dict[int, int] = {}
    merged: list[tuple[int, list[int], int]] = []
    for nodes in uf.components().values():
        old = [n for n in nodes if n not in new]
        fresh = [n for n in nodes if n in new]
        if not fresh:
            continue
        final = max(old, key=lambda label: (sizes[label], -label)) if old else min(fresh)
        labels.update({d: final for d in fresh})
        merged.append((final, [n for n in old if n != final], sum(sizes[n] for n in old) + len(fresh)))
    return labels, links, merged


def _relabel(db: sqlite_utils.Database, merged: list[tuple[int, list[int], int]]) -> None:
    """Move every page of the absorbed clusters to the surviving label and record the new sizes."""
    conn = db.conn
    for final, absorbed, size in merged:
        for label in absorbed:
            conn.execute("UPDATE lsh_signatures SET cluster = ? WHERE cluster = ? AND cluster != doc", [final, label])
            conn.execute("UPDATE lsh_signatures SET cluster = ? WHERE doc = ?", [final, label])
            conn.execute("DELETE FROM dup_clusters WHERE cluster = ?", [label])
    conn.executemany("INSERT OR REPLACE INTO dup_clusters (cluster, size) VALUES (?, ?)",
                     [(final, size) for final, _, size in merged])


def _add_links(db: sqlite_utils.Database, links: list[tuple[int, int]]) -> None:
    db.conn.executemany("INSERT OR IGNORE INTO lsh_links (doc, other) VALUES (?, ?)",
                        links + [(b, a) for a, b in links])


# --- removing pages --------------------------------------------------------------------------------------------

def remove_pages(db: sqlite_utils.Database, page_ids: Sequence[str]) -> int:
    """Remove pages from the index and repair the clusters they were in; returns how many were indexed."""
    prepare(db)
    settings = load_settings(db)
    if settings is None:
        return 0
    with transaction(db, name="lsh"):
        docs = [row[0] for row in _page_docs(db, list(dict.fromkeys(page_ids)))]
        _remove_docs(db, docs, settings)
    return len(docs)


def _remove_docs(db: sqlite_utils.Database, docs: list[int], settings: ShingleSettings) -> None:
    if not docs:
        return
    rows = _select_in(db, "SELECT doc, cluster, signature, anchors, page_id FROM lsh_signatures WHERE doc IN ({ids})",
                      docs)
    values = np.stack([np.frombuffer(r[2], dtype=np.uint32) for r in rows])
    row_docs = np.array([r[0] for r in rows], dtype=np.int64)
    keys, key_docs = _band_rows(band_keys(values, settings), row_docs, [_anchors_of(r[3]) for r in rows])
    own_keys, own_docs = _page_rows(row_docs, [r[4] for r in rows])
    keys, key_docs = np.concatenate((keys, own_keys)), np.concatenate((key_docs, own_docs))
    conn = db.conn
    _drop_segment_rows(db, keys, key_docs)
    _drop_recent(db, docs)
    for doc in docs:
        neighbours = [n for (n,) in conn.execute("SELECT other FROM lsh_links WHERE doc = ?", [doc])]
        conn.executemany("DELETE FROM lsh_links WHERE doc = ? AND other = ?", [(n, doc) for n in neighbours])
        conn.execute("DELETE FROM lsh_links WHERE doc = ?", [doc])
        conn.execute("DELETE FROM lsh_signatures WHERE doc = ?", [doc])
        conn.execute("DELETE FROM lsh_shingles WHERE doc = ?", [doc])
    clustered = _cluster_sizes(db, sorted({r[1] for r in rows}))
    for label in sorted(label for label, size in clustered.items() if size > 1):
        _repair(db, label, settings)


def _members(db: sqlite_utils.Database, label: int) -> list[int]:
    rows = db.conn.execute("SELECT doc FROM lsh_signatures WHERE cluster = ? AND cluster != doc", [label]).fetchall()
    root = db.conn.execute("SELECT doc FROM lsh_signatures WHERE doc = ? AND cluster = doc", [label]).fetchall()
    return sorted(r[0] for r in rows + root)


def _repair(db: sqlite_utils.Database, label: int, settings: ShingleSettings) -> None:
    """Re-establish the cluster ``label`` after some of its pages were removed.

    If the remaining pages' links still form one piece the cluster only shrinks (and takes a member's doc number
    as label if its label page left); otherwise its pages are clustered again from their band keys.
    """
    members = _members(db, label)
    conn = db.conn
    conn.execute("DELETE FROM dup_clusters WHERE cluster = ?", [label])
    if len(members) < 2:
        _assign(db, {m: m for m in members})
        return
    links = _select_in(db, "SELECT doc, other FROM lsh_links WHERE doc IN ({ids})", members)
    uf = UnionFind()
    for a, b in links:
        uf.union(a, b)
    if len({uf.find(m) for m in members}) == 1:
        final = label if label in members else members[0]
        if final != label:
            _assign(db, {m: final for m in members})
        conn.execute("INSERT INTO dup_clusters (cluster, size) VALUES (?, ?)", [final, len(members)])
        return
    conn.executemany("DELETE FROM lsh_links WHERE doc = ? AND other = ?", links)
    _recluster(db, members, settings, keep_label=label)


def _assign(db: sqlite_utils.Database, labels: dict[int, int]) -> None:
    db.conn.executemany("UPDATE lsh_signatures SET cluster = ? WHERE doc = ?",
                        [(label, doc) for doc, label in labels.items()])


def _recluster(db: sqlite_utils.Database, members: list[int], settings: ShingleSettings, *, keep_label: int) -> None:
    """Cluster ``members`` from scratch, in doc order, against the earlier members that share a band key."""
    docs = np.array(members, dtype=np.int64)
    source = _SignatureSource(db, settings, np.empty(0, np.int64), np.empty((0, settings.permutations), np.uint32))
    values = source.signatures(docs)
    anchors = dict(_select_in(db, "SELECT doc, anchors FROM lsh_signatures WHERE doc IN ({ids})", members))
    candidates = _bucket_heads(docs, *_band_rows(band_keys(values, settings), docs,
                                                 [_anchors_of(anchors.get(d)) for d in members]))
    edges: list[tuple[int, int, int]] = []
    for i, doc in enumerate(members):
        if not candidates[i]:
            continue
        partners, shared = np.unique(np.concatenate(candidates[i]), return_counts=True)
        partners, shared = partners[partners < doc], shared[partners < doc]
        if len(partners):
            edges += _first_passing(np.full(len(partners), doc), partners, partners, shared, source)
    chars = dict(_select_in(db, "SELECT doc, text_chars FROM lsh_signatures WHERE doc IN ({ids})", members))
    uf, links = _join(docs, edges, {}, chars, source)
    labels: dict[int, int] = {m: m for m in members}
    for nodes in uf.components().values():
        final = keep_label if keep_label in nodes else min(nodes)
        labels.update({n: final for n in nodes})
        db.conn.execute("INSERT INTO dup_clusters (cluster, size) VALUES (?, ?)", [final, len(nodes)])
    _assign(db, labels)
    _add_links(db, links)


def _bucket_heads(docs: np.ndarray, keys: np.ndarray, key_docs: np.ndarray) -> list[list[np.ndarray]]:
    """For each doc, the first BUCKET_CAP docs of every bucket (of 2+) it is in: one array per shared key. ``keys``
    and ``key_docs`` are the docs' (key, doc) rows sorted by key then doc (``_band_rows``)."""
    out: list[list[np.ndarray]] = [[] for _ in docs]
    position = {d: i for i, d in enumerate(docs.tolist())}
    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]]) if len(keys) else np.empty(0, np.int64)
    ends = np.r_[starts[1:], len(keys)]
    for s, e in zip(starts.tolist(), ends.tolist()):
        if e - s > 1:
            heads = key_docs[s:min(e, s + BUCKET_CAP)]
            for doc in key_docs[s:e].tolist():
                out[position[doc]].append(heads)
    return out


# --- reading ---------------------------------------------------------------------------------------------------

def page_row(db: sqlite_utils.Database, id_or_url: str) -> Member | None:
    """A stored page by page id, else by URL (a URL lookup scans the table)."""
    prepare(db)
    columns = "doc, page_id, url, signature, first_seen, boilerplate_chars, text_chars, fetched_at"
    found = _page_docs(db, [id_or_url], columns)
    row = found[0] if found else db.conn.execute(
        f"SELECT {columns} FROM lsh_signatures WHERE url = ? ORDER BY doc LIMIT 1", [id_or_url]).fetchone()
    return _member(row) if row else None


def _member(row: tuple) -> Member:
    doc, page_id, url, blob, first_seen, boilerplate, chars, fetched_at = row
    return Member(doc, page_id, url, np.frombuffer(blob, dtype=np.uint32), first_seen, boilerplate, chars, fetched_at)


def query(db: sqlite_utils.Database, signature: np.ndarray, settings: ShingleSettings, *,
          shingle_set: np.ndarray | None = None, exclude: int | None = None, anchors: np.ndarray | None = None,
          url: str | None = None) -> list[tuple[Member, float]]:
    """Stored pages whose similarity to ``signature`` reaches the threshold, most similar first: the pair's
    verdict (``accepted``) of its pair when the page's ``url`` is known, else as on one site. ``anchors``: the page's
    anchor keys (more candidates)."""
    keys = band_keys(signature[None, :], settings)[0].tolist()
    if anchors is not None:
        keys += [k for k in anchors.tolist() if k not in keys]
    capped = _bucket_rows(db, sorted_set(np.array(keys, dtype=np.int64)))
    docs = sorted(set(capped[:, 1].tolist()) - {exclude})
    columns = "doc, page_id, url, signature, first_seen, boilerplate_chars, text_chars, fetched_at"
    rows = _select_in(db, f"SELECT {columns} FROM lsh_signatures WHERE doc IN ({{ids}}) ORDER BY doc", docs)
    if not rows:
        return []
    members = [_member(r) for r in rows]
    source = _SignatureSource(db, settings, np.empty(0, np.int64), np.empty((0, settings.permutations)))
    source.sites.update({m.doc: site_of(m.url) for m in members})
    source.sites[-1] = site_of(url)
    me, them = np.full(len(members), -1), np.array([m.doc for m in members])
    if settings.verify != "estimate" and shingle_set is not None:
        source.sets[-1] = shingle_set
        sims = source.similarity(me, them)
    else:
        sims = estimate_similarity(np.stack([m.signature for m in members]), signature[None, :])
        source.settings = replace(settings, same_site_jaccard=0.0, resemblance=0.0)  # no sets: neither the floor
        # nor the resemblance can be checked
    found = [(m, float(s)) for m, s, ok in zip(members, sims, source.passing(me, them, sims)) if ok]
    return sorted(found, key=lambda pair: (-pair[1], pair[0].doc))


def iter_clusters(db: sqlite_utils.Database) -> Iterator[tuple[int, list[Member]]]:
    """(label, members in doc order) for every cluster of two or more pages, by label."""
    prepare(db)
    columns = "s.doc, s.page_id, s.url, s.signature, s.first_seen, s.boilerplate_chars, s.text_chars, s.fetched_at"
    rows = db.conn.execute(
        f"SELECT s.cluster, {columns} FROM lsh_signatures s WHERE s.cluster != s.doc"
        f" UNION ALL SELECT s.cluster, {columns} FROM dup_clusters c JOIN lsh_signatures s ON s.doc = c.cluster"
        " ORDER BY 1, 2")
    for label, group in groupby(rows, key=lambda r: r[0]):
        yield label, [_member(r[1:]) for r in group]


def stored_anchors(db: sqlite_utils.Database, doc: int) -> np.ndarray:
    """A stored page's anchor keys."""
    row = db.conn.execute("SELECT anchors FROM lsh_signatures WHERE doc = ?", [doc]).fetchone()
    return _anchors_of(row[0] if row else None)


def stored_sets(db: sqlite_utils.Database, docs: Sequence[int], settings: ShingleSettings) -> dict[int, np.ndarray]:
    """Stored verification sets (samples or all shingle hashes; none with verify = "estimate")."""
    if not len(docs):
        return {}
    dtype = np.uint32 if settings.hash_bits == 32 else np.uint64
    rows = _select_in(db, "SELECT doc, hashes FROM lsh_signatures WHERE doc IN ({ids})", list(docs))
    older = [doc for doc, blob in rows if blob is None]  # stored before migration 7: in lsh_shingles
    if older:
        rows = [r for r in rows if r[1] is not None] + \
            _select_in(db, "SELECT doc, hashes FROM lsh_shingles WHERE doc IN ({ids})", older)
    return {doc: np.frombuffer(blob, dtype=dtype) for doc, blob in rows}


def iter_candidate_pairs(db: sqlite_utils.Database, *, chunk_rows: int = SEGMENT_SLICE_ROWS) -> Iterator[np.ndarray]:
    """Every candidate pair of the index as (n, 2) arrays of doc numbers (a < b; a pair sharing several bands
    repeats). One key range at a time (``_key_ranges``: about ``chunk_rows`` rows), the rows of every segment and of
    the recent runs in that range, sorted by key then doc; a bucket offers its first BUCKET_CAP pages, as on insert.
    """
    prepare(db)
    recent_keys, recent_docs = _recent(db).rows()
    segments = list(_segments(db).items)
    for low, high in _key_ranges(segments, len(recent_keys), chunk_rows):
        parts = [_range_rows(db, s, low, high) for s in segments]
        start = 0 if low is None else int(np.searchsorted(recent_keys, low, side="left"))
        end = len(recent_keys) if high is None else int(np.searchsorted(recent_keys, high, side="left"))
        parts.append((recent_keys[start:end], recent_docs[start:end]))
        keys, docs = np.concatenate([k for k, _ in parts]), np.concatenate([d for _, d in parts])
        if len(keys) and keys.max() >= PAGE_KEY_BASE:  # (page keys: no candidates)
            band = keys < PAGE_KEY_BASE
            keys, docs = keys[band], docs[band]
        yield bucket_pairs(*_ordered_rows(keys, docs)[:2])


def bucket_pairs(keys: np.ndarray, docs: np.ndarray, *, cap: int = BUCKET_CAP) -> np.ndarray:
    """Pairs (head, later page) within runs of equal keys; keys sorted, docs ascending within a run. A run's
    first ``cap`` pages are its heads."""
    if not len(keys):
        return np.empty((0, 2), np.int64)
    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
    sizes = np.diff(np.r_[starts, len(keys)])
    run = np.repeat(np.arange(len(starts)), sizes)
    position = np.arange(len(keys)) - starts[run]
    partners = np.where(position < cap, sizes[run] - 1 - position, 0)
    first = np.repeat(np.arange(len(keys)) + 1, partners)
    offset = np.arange(int(partners.sum())) - np.repeat(np.cumsum(partners) - partners, partners)
    return np.stack((np.repeat(docs, partners), docs[first + offset]), axis=1)


def iter_verified_pairs(db: sqlite_utils.Database) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """(docs a, docs b, similarity) of every distinct candidate pair whose similarity reaches its threshold."""
    settings = load_settings(db)
    if settings is None:
        return
    codes = sorted_set(np.concatenate([(p[:, 0] << PAIR_SHIFT) | p[:, 1] for p in iter_candidate_pairs(db)]
                                      or [np.empty(0, np.int64)]))
    source = _SignatureSource(db, settings, np.empty(0, np.int64), np.empty((0, settings.permutations), np.uint32))
    for chunk in _chunks(codes, ID_CHUNK * 10):
        a, b = chunk >> PAIR_SHIFT, chunk & ((1 << PAIR_SHIFT) - 1)
        sims = source.similarity(a, b)
        keep = source.passing(a, b, sims)
        yield a[keep], b[keep], sims[keep]


def page_ids(db: sqlite_utils.Database, docs: Sequence[int]) -> dict[int, tuple[str, str]]:
    """doc -> (page id, url)."""
    return {doc: (page_id, url) for doc, page_id, url in _select_in(
        db, "SELECT doc, page_id, url FROM lsh_signatures WHERE doc IN ({ids})", list(docs))}


def stats(db: sqlite_utils.Database) -> dict:
    """Counts: pages indexed, clusters, pages in clusters."""
    prepare(db)
    conn = db.conn
    pages = conn.execute("SELECT count(*) FROM lsh_signatures").fetchone()[0]
    clusters, clustered = conn.execute("SELECT count(*), coalesce(sum(size), 0) FROM dup_clusters").fetchone()
    return {"pages": pages, "clusters": clusters, "pages_in_clusters": clustered}
