"""Pages, skipped records and extractions.

A page keeps its HTML (UTF-8, zstd-compressed), a content hash (re-ingesting an unchanged page only touches
last_seen), its block vector and shape vector (uint32 blobs) so that grouping and layout clustering need no
re-parse, and the group it was assigned to by the last build.

Databases written before zstd hold zlib-compressed HTML: those blobs are read as they are (a zstd frame starts
with its magic number, a zlib stream never does), and a page rewritten by a later ingest is stored with zstd.
"""

from __future__ import annotations

import json
import re
import threading
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import zstandard

from templater import config
from templater.datatypes import METADATA_FIELDS

from .db import migrate, transaction

if TYPE_CHECKING:  # annotations only: a store opens without sqlite-utils (store.db.Database)
    import sqlite_utils

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"  # the first bytes of a zstd frame; a zlib stream starts with 0x78
_SURROGATE = re.compile("[\ud800-\udfff]")  # code points UTF-8 cannot encode (lone surrogates)


def _v1(db: sqlite_utils.Database) -> None:
    db.execute("""CREATE TABLE pages (
        id TEXT PRIMARY KEY, url TEXT NOT NULL, host TEXT NOT NULL, content_hash TEXT NOT NULL,
        fetched_at TEXT, first_seen TEXT NOT NULL, last_seen TEXT NOT NULL, encoding TEXT,
        html BLOB NOT NULL, block_hashes BLOB NOT NULL, block_shapes BLOB NOT NULL, n_blocks INTEGER NOT NULL,
        text_chars INTEGER NOT NULL, group_key TEXT, site TEXT, retired INTEGER NOT NULL DEFAULT 0)""")
    db.execute("CREATE INDEX pages_host ON pages(host)")
    db.execute("CREATE INDEX pages_site ON pages(site)")
    db.execute("""CREATE TABLE extractions (
        page_id TEXT PRIMARY KEY REFERENCES pages(id) ON DELETE CASCADE, site TEXT, method TEXT NOT NULL,
        template TEXT, coverage REAL, text TEXT NOT NULL, boilerplate_chars INTEGER NOT NULL,
        content_hash TEXT NOT NULL, extracted_at TEXT NOT NULL)""")
    db.execute("CREATE INDEX extractions_template ON extractions(template)")
    db.execute("""CREATE TABLE skips (
        source TEXT NOT NULL, reason TEXT NOT NULL, detail TEXT, page_id TEXT, url TEXT,
        seen_at TEXT NOT NULL, PRIMARY KEY (source, reason))""")


MIGRATIONS = [_v1]


def _fields_v1(db: sqlite_utils.Database) -> None:
    """Each extraction's headline and metadata (the record's ``title`` and metadata fields, a JSON object), in
    their own table and component: a database written before them opens as it is, read-only commands too (a new
    component is made empty in memory there, where a new version of ``pages`` would be refused until a command
    that writes upgrades the file)."""
    db.execute("""CREATE TABLE extraction_fields (
        page_id TEXT PRIMARY KEY REFERENCES pages(id) ON DELETE CASCADE, title TEXT, metadata TEXT)""")


FIELDS_MIGRATIONS = [_fields_v1]


def ensure_schema(db: sqlite_utils.Database) -> None:
    migrate(db, "pages", MIGRATIONS)
    migrate(db, "extraction_fields", FIELDS_MIGRATIONS)


@dataclass(frozen=True, slots=True)
class StoredPage:
    """A page as the store keeps it: its HTML as UTF-8 bytes, where and when it was fetched, its site."""

    id: str
    url: str
    html_bytes: bytes  # the HTML as stored: valid UTF-8 (``encode_page``), parse.parse_html takes it as it is
    fetched_at: str | None
    encoding: str | None
    group_key: str | None
    site: str | None
    content_hash: str

    @property
    def html(self) -> str:
        """The HTML decoded (on each access: keep it when it is needed more than once)."""
        return self.html_bytes.decode("utf-8", "replace")


def content_hash(html: str) -> str:
    import hashlib  # (here, not at the top: a command that hashes no page does not load OpenSSL, ~6 ms)

    return hashlib.sha1(html.encode("utf-8", "surrogatepass")).hexdigest()


def encode_page(html: str) -> tuple[bytes, str]:
    """(the UTF-8 bytes the store keeps of a page's HTML, its ``content_hash``), the text encoded once when it can
    be. Unencodable characters (lone surrogates) are stored replaced, but hashed as they are."""
    import hashlib

    try:
        data = html.encode("utf-8")
    except UnicodeEncodeError:
        return html.encode("utf-8", "replace"), content_hash(html)
    return data, hashlib.sha1(data).hexdigest()  # strict UTF-8 is what surrogatepass gives without surrogates


# zstandard's compressor and decompressor objects must not be used by two threads at once: one pair a thread.
_codecs = threading.local()


def _compressor() -> zstandard.ZstdCompressor:
    try:
        return _codecs.compressor
    except AttributeError:
        _codecs.compressor = zstandard.ZstdCompressor(level=config.HTML_ZSTD_LEVEL)
        return _codecs.compressor


def _decompressor() -> zstandard.ZstdDecompressor:
    try:
        return _codecs.decompressor
    except AttributeError:
        _codecs.decompressor = zstandard.ZstdDecompressor()
        return _codecs.decompressor


def compress_html(data: bytes) -> bytes:
    return _compressor().compress(data)


def decompress_html(blob: bytes) -> bytes:
    """A stored HTML blob's UTF-8 bytes: a zstd frame, or the zlib stream of a database written before zstd."""
    if blob[:4] == ZSTD_MAGIC:
        return _decompressor().decompress(blob)  # the frame states its size (the compressor writes it)
    return zlib.decompress(blob)


def vector_blob(values: np.ndarray) -> bytes:
    return np.asarray(values, dtype="<u4").tobytes()


def blob_vector(blob: bytes) -> np.ndarray:
    return np.frombuffer(blob, dtype="<u4")


def upsert_page(db: sqlite_utils.Database, *, id: str, url: str, host: str, html: str | bytes, digest: str,
                fetched_at: str | None, encoding: str, hashes: np.ndarray, shapes: np.ndarray, text_chars: int,
                now: str) -> str:
    """Insert or update one page; returns "new", "changed" or "unchanged". Call inside a transaction.

    ``html`` is the decoded HTML, or the bytes ``encode_page`` gave for it (and ``digest`` its content hash)."""
    row = db.execute("SELECT content_hash FROM pages WHERE id = ?", [id]).fetchone()
    if row is not None and row[0] == digest:
        db.execute("UPDATE pages SET last_seen = ?, retired = 0, fetched_at = coalesce(?, fetched_at) WHERE id = ?",
                   [now, fetched_at, id])
        return "unchanged"
    data = html if isinstance(html, bytes) else html.encode("utf-8", "replace")
    values = [url, host, digest, fetched_at, now, encoding, compress_html(data),
              vector_blob(hashes), vector_blob(shapes), len(hashes), text_chars]
    if row is None:
        db.execute("INSERT INTO pages (url, host, content_hash, fetched_at, last_seen, encoding, html, block_hashes,"
                   " block_shapes, n_blocks, text_chars, id, first_seen) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                   values + [id, now])
        return "new"
    db.execute("UPDATE pages SET url=?, host=?, content_hash=?, fetched_at=?, last_seen=?, encoding=?, html=?,"
               " block_hashes=?, block_shapes=?, n_blocks=?, text_chars=?, retired=0 WHERE id = ?", values + [id])
    return "changed"


def touch_pages(db: sqlite_utils.Database, rows: Iterable[tuple[str, str | None]], *, now: str) -> None:
    """An unchanged page fetched again: only its last-seen time (and fetch time, when given) change."""
    db.conn.executemany("UPDATE pages SET last_seen = ?, fetched_at = coalesce(?, fetched_at) WHERE id = ?",
                        [(now, fetched_at, pid) for pid, fetched_at in rows])


def retire_pages(db: sqlite_utils.Database, ids: Sequence[str]) -> None:
    db.conn.executemany("UPDATE pages SET retired = 1 WHERE id = ?", [(pid,) for pid in ids])


def record_skip(db: sqlite_utils.Database, *, source: str, reason: str, detail: str, page_id: str | None,
                url: str | None, now: str) -> None:
    """One skipped record; text that is not valid Unicode (a lone surrogate) is stored with U+FFFD in its place."""
    db.execute("INSERT OR REPLACE INTO skips (source, reason, detail, page_id, url, seen_at) VALUES (?,?,?,?,?,?)",
               [storable(source), reason, storable((detail or "")[:config.STORED_DETAIL_CHARS]), storable(page_id), storable(url), now])


def storable(text: str | None) -> str | None:
    """``text`` as SQLite can take it: lone surrogates (which UTF-8 cannot encode) replaced by U+FFFD."""
    if text is None or text.isascii():
        return text
    return _SURROGATE.sub("\ufffd", text)


def skip_counts(db: sqlite_utils.Database) -> list[tuple[str, int]]:
    """(reason, skipped records) of every reason recorded, most frequent first."""
    return db.execute("SELECT reason, count(*) FROM skips GROUP BY reason ORDER BY count(*) DESC, reason").fetchall()


def skip_examples(db: sqlite_utils.Database, reason: str, *, limit: int) -> list[tuple]:
    """(source, detail, page_id, url, seen_at) of up to ``limit`` skipped records of a reason, latest first."""
    return db.execute("SELECT source, detail, page_id, url, seen_at FROM skips WHERE reason = ?"
                      " ORDER BY seen_at DESC, source LIMIT ?", [reason, limit]).fetchall()


def select_page_ids(db: sqlite_utils.Database, *, site: str | None = None, since: str | None = None) -> list[str]:
    """Ids of the live pages of a site (its name, or its URL group: every layout's pages) last seen at or after
    ``since`` (an ISO time in UTC), in id order."""
    where, args = ["retired = 0"], []
    if site is not None:
        where.append("(coalesce(site, group_key) = ? OR group_key = ?)")
        args += [site, site]
    if since is not None:
        where.append("last_seen >= ?")
        args.append(since)
    return [r[0] for r in db.execute(f"SELECT id FROM pages WHERE {' AND '.join(where)} ORDER BY id", args)]


def iter_page_keys(db: sqlite_utils.Database) -> Iterator[tuple[str, str, str | None]]:
    """(id, url, site) of every live page, in id order."""
    yield from db.execute("SELECT id, url, site FROM pages WHERE retired = 0 ORDER BY id")


def live_page_count(db: sqlite_utils.Database) -> int:
    """How many live pages the store holds."""
    return db.execute("SELECT count(*) FROM pages WHERE retired = 0").fetchone()[0]


def iter_live_ids(db: sqlite_utils.Database, *, chunk: int | None = None) -> Iterator[list[str]]:
    """The ids of every live page, in id order, ``chunk`` at a time: each list read by its own short query (the
    ids after the last one given), so a caller holds one list at a time, not every id of the crawl, and no read
    stays open between lists (a writer may commit meanwhile). ``chunk``: config.PAGE_ID_CHUNK unless given."""
    for rows in _iter_by_id(db, "id", "pages WHERE retired = 0", chunk or config.PAGE_ID_CHUNK):
        yield [r[0] for r in rows]


def _iter_by_id(db: sqlite_utils.Database, columns: str, source: str, chunk: int) -> Iterator[list[tuple]]:
    """Rows of ``columns`` (the first one ``id``) of ``source`` (a table and its WHERE clause) in id order,
    ``chunk`` rows per query (each the rows after the last one given)."""
    rows = db.execute(f"SELECT {columns} FROM {source} ORDER BY id LIMIT ?", [chunk]).fetchall()
    while rows:
        yield rows
        if len(rows) < chunk:
            return
        rows = db.execute(f"SELECT {columns} FROM {source} AND id > ? ORDER BY id LIMIT ?",
                          [rows[-1][0], chunk]).fetchall()


def mark_ids(db: sqlite_utils.Database, ids: Iterable[str]) -> None:
    """Add page ids to the connection's marked pages (a temporary table: gone with the connection), each once."""
    db.execute("CREATE TEMP TABLE IF NOT EXISTS marked_pages (id TEXT PRIMARY KEY) WITHOUT ROWID")
    with transaction(db, name="marks"):  # (one transaction: each insert would otherwise be its own)
        db.conn.executemany("INSERT OR IGNORE INTO temp.marked_pages VALUES (?)", ((pid,) for pid in ids))


def marked_count(db: sqlite_utils.Database) -> int:
    """How many page ids the connection has marked (``mark_ids``)."""
    if not db.execute("SELECT 1 FROM temp.sqlite_master WHERE name = 'marked_pages'").fetchone():
        return 0
    return db.execute("SELECT count(*) FROM temp.marked_pages").fetchone()[0]


def iter_marked_ids(db: sqlite_utils.Database, *, chunk: int | None = None) -> Iterator[list[str]]:
    """The ids the connection has marked (``mark_ids``), in id order, ``chunk`` at a time (config.PAGE_ID_CHUNK
    unless given), each list read by its own short query, as ``iter_live_ids`` reads the live ones."""
    if marked_count(db):
        for rows in _iter_by_id(db, "id", "temp.marked_pages WHERE 1", chunk or config.PAGE_ID_CHUNK):
            yield [r[0] for r in rows]


def iter_pages_by_key(db: sqlite_utils.Database, key: Callable[[str, str], str], *,
                      chunk: int | None = None) -> Iterator[tuple[str, list[str], list[str]]]:
    """(key, ids, urls) of every live page, grouped by ``key(url, id)``: each key once, in key order (as Python
    orders strings), its pages in id order. The (key, id) pairs go into a temporary table first (read ``chunk``
    pages at a time, config.PAGE_ID_CHUNK unless given), so a caller holds one key's pages at a time, not the
    crawl's; no read stays open between queries (a writer may commit meanwhile)."""
    chunk = chunk or config.PAGE_ID_CHUNK
    db.execute("DROP TABLE IF EXISTS temp.page_keys")
    db.execute("CREATE TEMP TABLE page_keys (key TEXT NOT NULL, id TEXT NOT NULL, url TEXT NOT NULL,"
               " PRIMARY KEY (key, id)) WITHOUT ROWID")
    try:
        with transaction(db, name="page_keys"):  # (one transaction: each insert would otherwise be its own)
            for rows in _iter_by_id(db, "id, url", "pages WHERE retired = 0", chunk):
                db.conn.executemany("INSERT INTO temp.page_keys VALUES (?, ?, ?)",
                                    [(key(url, pid), pid, url) for pid, url in rows])
        current, ids, urls = None, [], []
        rows = db.execute("SELECT key, id, url FROM temp.page_keys ORDER BY key, id LIMIT ?", [chunk]).fetchall()
        while rows:
            for name, pid, url in rows:
                if name != current:
                    if ids:
                        yield current, ids, urls
                    current, ids, urls = name, [], []
                ids.append(pid)
                urls.append(url)
            if len(rows) < chunk:
                break
            rows = db.execute("SELECT key, id, url FROM temp.page_keys WHERE (key, id) > (?, ?) ORDER BY key, id"
                              " LIMIT ?",
                              [rows[-1][0], rows[-1][1], chunk]).fetchall()
        if ids:
            yield current, ids, urls
    finally:
        db.execute("DROP TABLE IF EXISTS temp.page_keys")


def page_shapes(db: sqlite_utils.Database, ids: Iterable[str]) -> dict[str, np.ndarray]:
    out = {}
    for chunk in _chunks(list(ids), config.STORE_ID_CHUNK):
        marks = ",".join("?" * len(chunk))
        for pid, blob in db.execute(f"SELECT id, block_shapes FROM pages WHERE id IN ({marks})", chunk):
            out[pid] = blob_vector(blob)
    return out


def fetch_times(db: sqlite_utils.Database, ids: Iterable[str]) -> dict[str, str | None]:
    """id -> fetched_at as stored (None when the record had none) for the given ids."""
    out = {}
    for chunk in _chunks(list(ids), config.STORE_ID_CHUNK):
        marks = ",".join("?" * len(chunk))
        out.update(db.execute(f"SELECT id, fetched_at FROM pages WHERE id IN ({marks})", chunk).fetchall())
    return out


def load_pages(db: sqlite_utils.Database, ids: Iterable[str]) -> Iterator[StoredPage]:
    """The stored pages with the given ids, in the order given."""
    for chunk in _chunks(list(ids), config.PAGE_READ_CHUNK):
        marks = ",".join("?" * len(chunk))
        rows = {r[0]: r for r in db.execute(
            "SELECT id, url, html, fetched_at, encoding, group_key, site, content_hash FROM pages"
            f" WHERE id IN ({marks})", chunk)}
        for pid in chunk:
            r = rows.get(pid)
            if r is not None:
                yield StoredPage(r[0], r[1], decompress_html(r[2]), r[3], r[4], r[5], r[6], r[7])


def assign_sites(db: sqlite_utils.Database, assignments: Iterable[tuple[str, str | None, str | None]]) -> None:
    """Set (group_key, site) of pages: rows of (id, group_key, site)."""
    db.conn.executemany("UPDATE pages SET group_key = ?, site = ? WHERE id = ?",
                        [(g, s, pid) for pid, g, s in assignments])


def save_extraction(db: sqlite_utils.Database, *, page_id: str, site: str, method: str, template: str | None,
                    coverage: float | None, text: str, boilerplate_chars: int, digest: str, now: str,
                    title: str | None = None, metadata: dict | None = None) -> None:
    """Store a page's extraction (replacing its previous one): its text and figures, and its headline and
    metadata fields (``metadata``: field -> value, as the output record spells them)."""
    db.execute("INSERT OR REPLACE INTO extractions (page_id, site, method, template, coverage, text,"
               " boilerplate_chars, content_hash, extracted_at) VALUES (?,?,?,?,?,?,?,?,?)",
               [page_id, site, method, template, coverage, text, boilerplate_chars, digest, now])
    found = {k: v for k, v in (metadata or {}).items() if v is not None}
    db.execute("INSERT OR REPLACE INTO extraction_fields (page_id, title, metadata) VALUES (?,?,?)",
               [page_id, title, json.dumps(found, ensure_ascii=False, separators=(",", ":")) if found else None])


def load_extractions(db: sqlite_utils.Database, ids: Iterable[str]) -> Iterator[dict]:
    """The stored extractions of the given pages (in the order given, those that have one) as output records:
    id, url, site, text, method, template, coverage, title and the metadata fields (null where the extraction was
    stored without them, by a templater before they were kept, or has no value)."""
    for chunk in _chunks(list(ids), config.PAGE_READ_CHUNK):
        marks = ",".join("?" * len(chunk))
        rows = {r[0]: r for r in db.execute(
            "SELECT e.page_id, p.url, e.site, e.text, e.method, e.template, e.coverage, f.title, f.metadata"
            " FROM extractions e JOIN pages p ON p.id = e.page_id"
            f" LEFT JOIN extraction_fields f ON f.page_id = e.page_id WHERE e.page_id IN ({marks})", chunk)}
        for pid in chunk:
            r = rows.get(pid)
            if r is None:
                continue
            try:
                stored = json.loads(r[8]) if r[8] else {}
            except ValueError:
                stored = {}
            stored = stored if isinstance(stored, dict) else {}
            yield {"id": r[0], "url": r[1], "site": r[2], "text": r[3], "method": r[4], "template": r[5],
                   "coverage": r[6], "title": r[7], **{k: stored.get(k) for k in METADATA_FIELDS}}


def _chunks(items: list, size: int) -> Iterator[list]:
    for start in range(0, len(items), size):
        yield items[start:start + size]


def current_extraction_ids(db: sqlite_utils.Database, ids: Iterable[str]) -> set[str]:
    """Those of the given pages whose stored extraction is what extracting them now gives: made from the page's
    stored content, with its headline and metadata kept, and after the last template version learned for its site
    or URL group and the last rules pinned for its site."""
    out: set[str] = set()
    for chunk in _chunks(list(ids), 200):
        marks = ",".join("?" * len(chunk))
        out.update(r[0] for r in db.execute(
            "SELECT e.page_id FROM extractions e JOIN pages p ON p.id = e.page_id"
            " JOIN extraction_fields f ON f.page_id = e.page_id"
            f" WHERE e.page_id IN ({marks}) AND e.content_hash = p.content_hash"
            " AND NOT EXISTS (SELECT 1 FROM templates t WHERE (t.site = p.site OR t.group_key = p.group_key"
            " OR t.site = e.site) AND t.learned_at >= e.extracted_at)"
            " AND NOT EXISTS (SELECT 1 FROM pinned_rules r WHERE (r.site = p.site OR r.site = e.site)"
            " AND r.imported_at >= e.extracted_at)", chunk))
    return out
