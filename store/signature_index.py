"""The persistent signature index: each signature method's fitted model, pages and signatures in SQLite.

Tables (component "sigindex"); every row carries its method, so several methods live side by side:

    sig_models  method PK, version (of the signature code), params (JSON: every parameter of the method),
                state (zlib-compressed JSON: the fitted collection statistics, NULL for a method without any),
                fitted_pages (how many texts the model was fitted on; 0 without statistics), fitted_at,
                next_doc and generation (counters: doc numbers are not reused until drop_method; a generation per add)
    sig_pages   (method, page_id) WITHOUT ROWID: doc (an internal number within the method), url,
                first_seen (the generation: one per add call), boilerplate_chars, text_chars, signatures (how
                many: 0 when the method could not judge the page)
    sig_index   (method, signature, page_id) WITHOUT ROWID, and sig_index_page on (method, page_id)

Signatures are stored as the methods make them (an MD5 hex string or an integer below 2**63); the column has
BLOB affinity so SQLite keeps each value's type (a numeric affinity would turn an all-digit hex string into a
number). Params are fixed when a method's model is first stored: other params are refused with
SettingsMismatchError, and only ``drop_method`` clears them.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Hashable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from itertools import groupby
from typing import TYPE_CHECKING

from store.db import db_name, migrate, transaction
from templater import config
from templater.errors import SettingsMismatchError, StoreError

if TYPE_CHECKING:  # annotations only: a store opens without sqlite-utils (store.db.Database)
    import sqlite_utils

ID_CHUNK = config.SIGNATURE_ID_CHUNK


@dataclass(frozen=True, slots=True)
class StoredModel:
    """A method's persisted model: its params and fitted state (JSON values), and what it was fitted on."""

    method: str
    version: int
    params: dict
    state: dict | None
    fitted_pages: int
    fitted_at: str


@dataclass(frozen=True, slots=True)
class SignedPage:
    """A page to store with its signatures (an empty tuple: the method could not judge it)."""

    page_id: str
    url: str
    signatures: tuple[Hashable, ...]
    boilerplate_chars: int = 0
    text_chars: int = 0


@dataclass(frozen=True, slots=True)
class SignedAddResult:
    """What one batch of pages did to a signature index, counted by outcome."""

    added: int = 0
    updated: int = 0  # stored before with other signatures: replaced, first_seen and doc kept
    unchanged: int = 0  # stored before with the same signatures: only url and counts refreshed
    unjudged: int = 0  # stored without a signature (the method could not judge the text)


@dataclass(frozen=True, slots=True)
class IndexedMember:
    """A stored page, with what choosing a cluster's canonical page needs."""

    doc: int
    page_id: str
    url: str
    first_seen: int
    boilerplate_chars: int
    text_chars: int


# --- schema and transactions ---------------------------------------------------------------------------------

def _create_tables(db: sqlite_utils.Database) -> None:
    for sql in (
        "CREATE TABLE sig_models (method TEXT PRIMARY KEY, version INTEGER NOT NULL, params TEXT NOT NULL,"
        " state BLOB, fitted_pages INTEGER NOT NULL, fitted_at TEXT NOT NULL, next_doc INTEGER NOT NULL,"
        " generation INTEGER NOT NULL)",
        "CREATE TABLE sig_pages (method TEXT NOT NULL, page_id TEXT NOT NULL, doc INTEGER NOT NULL,"
        " url TEXT NOT NULL, first_seen INTEGER NOT NULL, boilerplate_chars INTEGER NOT NULL,"
        " text_chars INTEGER NOT NULL, signatures INTEGER NOT NULL, PRIMARY KEY (method, page_id)) WITHOUT ROWID",
        "CREATE TABLE sig_index (method TEXT NOT NULL, signature BLOB NOT NULL, page_id TEXT NOT NULL,"
        " PRIMARY KEY (method, signature, page_id)) WITHOUT ROWID",
        "CREATE INDEX sig_index_page ON sig_index (method, page_id)",
    ):
        db.execute(sql)


STEPS = [_create_tables]


def prepare(db: sqlite_utils.Database) -> None:
    """Create or migrate the signature index tables."""
    migrate(db, "sigindex", STEPS)


def _chunks(values: Sequence, size: int = ID_CHUNK) -> Iterator[Sequence]:
    for i in range(0, len(values), size):
        yield values[i:i + size]


def _select_in(db: sqlite_utils.Database, sql: str, method: str, ids: Sequence) -> list[tuple]:
    """Rows of ``sql`` (parameters: the method, then one ``{ids}`` list) for every id, ID_CHUNK at a time."""
    rows: list[tuple] = []
    for chunk in _chunks(list(ids)):
        rows.extend(db.conn.execute(sql.format(ids=",".join("?" * len(chunk))), [method, *chunk]).fetchall())
    return rows


# --- models ----------------------------------------------------------------------------------------------------

def load_model(db: sqlite_utils.Database, method: str) -> StoredModel | None:
    """The method's stored model, or None when the method has no index in this database."""
    prepare(db)
    row = db.conn.execute("SELECT version, params, state, fitted_pages, fitted_at FROM sig_models WHERE method = ?",
                          [method]).fetchone()
    if row is None:
        return None
    version, params, state, fitted_pages, fitted_at = row
    return StoredModel(method, version, json.loads(params),
                       None if state is None else json.loads(zlib.decompress(state)), fitted_pages, fitted_at)


def save_model(db: sqlite_utils.Database, method: str, *, version: int, params: dict, state: dict | None,
               fitted_pages: int) -> None:
    """Store (or refit) the method's model. Stored params can only be replaced after ``drop_method``."""
    prepare(db)
    blob = None if state is None else zlib.compress(json.dumps(state, separators=(",", ":")).encode("utf-8"))
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    with transaction(db):
        stored = load_model(db, method)
        if stored is not None and stored.params != params:
            raise SettingsMismatchError(mismatch_message(db, method, stored.params, params))
        db.conn.execute(
            "INSERT INTO sig_models (method, version, params, state, fitted_pages, fitted_at, next_doc, generation)"
            " VALUES (?, ?, ?, ?, ?, ?, 1, 1) ON CONFLICT (method) DO UPDATE SET version = excluded.version,"
            " state = excluded.state, fitted_pages = excluded.fitted_pages, fitted_at = excluded.fitted_at",
            [method, version, json.dumps(params, sort_keys=True), blob, fitted_pages, now])


def mismatch_message(db: sqlite_utils.Database, method: str, stored: dict, given: dict) -> str:
    differences = "; ".join(f"{key}: {_short(stored.get(key))} != {_short(given.get(key))}"
                            for key in sorted(set(stored) | set(given)) if stored.get(key) != given.get(key))
    return (f"the {method} signature index in {db_name(db)} was made with other params (stored != given: "
            f"{differences}): leave out the params to use the stored ones, or rebuild it with "
            f"`templater index-signatures --method {method} --replace`")


def _short(value: object) -> str:
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= 60 else text[:57] + "..."


def drop_method(db: sqlite_utils.Database, method: str) -> int:
    """Remove the method's model, pages and signatures; returns how many pages it held."""
    prepare(db)
    with transaction(db):
        (pages,) = db.conn.execute("SELECT count(*) FROM sig_pages WHERE method = ?", [method]).fetchone()
        for table in ("sig_index", "sig_pages", "sig_models"):
            db.conn.execute(f"DELETE FROM {table} WHERE method = ?", [method])
    return pages


def methods(db: sqlite_utils.Database) -> list[str]:
    """The methods that have a stored model, by name."""
    prepare(db)
    return [m for (m,) in db.conn.execute("SELECT method FROM sig_models ORDER BY method")]


def _take(db: sqlite_utils.Database, method: str, column: str, count: int = 1) -> int:
    """Take ``count`` values of the model's counter ``column`` (next_doc or generation); returns the first."""
    row = db.conn.execute(f"SELECT {column} FROM sig_models WHERE method = ?", [method]).fetchone()
    if row is None:
        raise StoreError(f"no {method} signature model in {db_name(db)}: store the model before its pages")
    db.conn.execute(f"UPDATE sig_models SET {column} = ? WHERE method = ?", [row[0] + count, method])
    return row[0]


# --- pages -----------------------------------------------------------------------------------------------------

def next_generation(db: sqlite_utils.Database, method: str) -> int:
    """A new generation (first_seen value) for the pages of one add call."""
    with transaction(db):
        return _take(db, method, "generation")


def add_pages(db: sqlite_utils.Database, method: str, pages: Sequence[SignedPage], *,
              generation: int | None = None) -> SignedAddResult:
    """Store pages with their signatures, in one transaction (the last of repeated page ids wins).

    New pages get ``generation`` as first_seen (a new one when None). A page id stored before keeps its doc number
    and first_seen; its signatures are replaced when they changed.
    """
    prepare(db)
    latest = list({p.page_id: p for p in pages}.values())
    with transaction(db):
        if generation is None:
            generation = _take(db, method, "generation")
        stored = {pid: (doc, seen) for pid, doc, seen in _select_in(
            db, "SELECT page_id, doc, first_seen FROM sig_pages WHERE method = ? AND page_id IN ({ids})", method,
            [p.page_id for p in latest])}
        old = stored_signatures(db, method, list(stored))
        fresh = [p for p in latest if p.page_id not in stored]
        first_doc = _take(db, method, "next_doc", len(fresh))
        docs = {p.page_id: first_doc + i for i, p in enumerate(fresh)}
        changed = [p for p in latest if p.page_id in stored and set(p.signatures) != old.get(p.page_id, set())]
        _delete_signatures(db, method, [p.page_id for p in changed])
        db.conn.executemany(
            "INSERT OR REPLACE INTO sig_pages (method, page_id, doc, first_seen, url, boilerplate_chars, text_chars,"
            " signatures) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [(method, p.page_id, *(stored.get(p.page_id) or (docs[p.page_id], generation)), p.url,
              p.boilerplate_chars, p.text_chars, len(set(p.signatures))) for p in latest])
        db.conn.executemany("INSERT OR IGNORE INTO sig_index (method, signature, page_id) VALUES (?, ?, ?)",
                            [(method, s, p.page_id) for p in fresh + changed for s in p.signatures])
    return SignedAddResult(added=len(fresh), updated=len(changed), unchanged=len(latest) - len(fresh) - len(changed),
                           unjudged=sum(1 for p in latest if not p.signatures))


def _delete_signatures(db: sqlite_utils.Database, method: str, page_ids: Sequence[str]) -> None:
    for chunk in _chunks(list(page_ids)):
        db.conn.execute(f"DELETE FROM sig_index WHERE method = ? AND page_id IN ({','.join('?' * len(chunk))})",
                        [method, *chunk])


def remove_pages(db: sqlite_utils.Database, method: str, page_ids: Sequence[str]) -> int:
    """Remove pages (and their signatures) from the method's index; returns how many were stored."""
    prepare(db)
    with transaction(db):
        before = db.conn.total_changes
        for chunk in _chunks(list(dict.fromkeys(page_ids))):
            db.conn.execute(f"DELETE FROM sig_pages WHERE method = ? AND page_id IN ({','.join('?' * len(chunk))})",
                            [method, *chunk])
        removed = db.conn.total_changes - before
        _delete_signatures(db, method, page_ids)
    return removed


# --- reading ---------------------------------------------------------------------------------------------------

def page_ids(db: sqlite_utils.Database, method: str) -> set[str]:
    """Every page id stored for the method."""
    prepare(db)
    return {pid for (pid,) in db.conn.execute("SELECT page_id FROM sig_pages WHERE method = ?", [method])}


def stored_signatures(db: sqlite_utils.Database, method: str, ids: Sequence[str]) -> dict[str, set]:
    """page id -> its stored signatures (pages without any are left out)."""
    rows = _select_in(db, "SELECT page_id, signature FROM sig_index WHERE method = ? AND page_id IN ({ids})",
                      method, ids)
    out: dict[str, set] = {}
    for page_id, signature in rows:
        out.setdefault(page_id, set()).add(signature)
    return out


def iter_shared(db: sqlite_utils.Database, method: str) -> Iterator[list[str]]:
    """The page ids of every signature that two or more pages share (each list in page id order)."""
    prepare(db)
    rows = db.conn.execute(
        "SELECT signature, page_id FROM (SELECT signature, page_id, count(*) OVER (PARTITION BY signature) AS n"
        " FROM sig_index WHERE method = ?) WHERE n > 1 ORDER BY signature, page_id", [method])
    for _, group in groupby(rows, key=lambda r: r[0]):
        yield [page_id for _, page_id in group]


def members(db: sqlite_utils.Database, method: str, ids: Sequence[str]) -> dict[str, IndexedMember]:
    """page id -> its stored row."""
    rows = _select_in(db, "SELECT doc, page_id, url, first_seen, boilerplate_chars, text_chars FROM sig_pages"
                          " WHERE method = ? AND page_id IN ({ids})", method, ids)
    return {r[1]: IndexedMember(*r) for r in rows}


def stats(db: sqlite_utils.Database, method: str) -> dict:
    """Counts of the method's index: pages, pages judged, signature rows, pages the model was fitted on."""
    prepare(db)
    pages, judged = db.conn.execute("SELECT count(*), coalesce(sum(signatures > 0), 0) FROM sig_pages"
                                    " WHERE method = ?", [method]).fetchone()
    (rows,) = db.conn.execute("SELECT count(*) FROM sig_index WHERE method = ?", [method]).fetchone()
    return {"pages": pages, "judged": judged, "signatures": rows}
