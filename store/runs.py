"""Recrawl bookkeeping: run progress, which run last saw each page, template health, template history.

Tables (component "runs"):

    runs                one row per recrawl: its key (inputs and options), stage (records, retire, done,
                        abandoned), records done, batches done, counts so far (JSON); a rerun of the same
                        command finds its unfinished row and skips the records already committed
    run_seen            page id -> the run that last fetched it (what --retire-missing compares against)
    health_observations one row per page extracted by a recrawl: its group, template, coverage and whether it
                        was low (under the coverage threshold, or no template fitted); seq orders them
    health_groups       per group: the last observation a learning attempt used (mark_seq) and how many new
                        observations the next check needs
    relearn_intents     a group whose template drifted, with the pages to learn from: written in the batch that
                        detected the drift, removed in the transaction that finishes the relearn
    reextract_queue     pages to extract again after a relearn, with the site whose template to use
    template_events     what happened to a template version after it was made (went stale: when and why)

Every write here is meant to run inside the caller's transaction, so that progress and the work it records are
committed together.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from templater import config
from templater.errors import StoreError

from . import templates as template_store
from .db import migrate

if TYPE_CHECKING:  # annotations only: a store opens without sqlite-utils (store.db.Database)
    import sqlite_utils

STAGES = ("records", "retire", "done", "abandoned")


def _v1(db: sqlite_utils.Database) -> None:
    db.execute("""CREATE TABLE runs (
        id INTEGER PRIMARY KEY, command TEXT NOT NULL, key TEXT NOT NULL, inputs TEXT NOT NULL,
        options TEXT NOT NULL, stage TEXT NOT NULL, records_done INTEGER NOT NULL DEFAULT 0,
        batches_done INTEGER NOT NULL DEFAULT 0, counts TEXT NOT NULL DEFAULT '{}', started_at TEXT NOT NULL,
        updated_at TEXT NOT NULL, finished_at TEXT)""")
    db.execute("CREATE INDEX runs_key ON runs(key, stage)")
    db.execute("CREATE TABLE run_seen (page_id TEXT PRIMARY KEY, run_id INTEGER NOT NULL)")
    db.execute("""CREATE TABLE health_observations (
        seq INTEGER PRIMARY KEY, group_key TEXT NOT NULL, page_id TEXT NOT NULL, template TEXT,
        coverage REAL, low INTEGER NOT NULL)""")
    db.execute("CREATE INDEX health_observations_group ON health_observations(group_key, seq)")
    db.execute("""CREATE TABLE health_groups (
        group_key TEXT PRIMARY KEY, mark_seq INTEGER NOT NULL, need INTEGER NOT NULL, attempts INTEGER NOT NULL,
        checked_at TEXT NOT NULL)""")
    db.execute("""CREATE TABLE relearn_intents (
        group_key TEXT PRIMARY KEY, page_ids TEXT NOT NULL, reason TEXT NOT NULL, drift INTEGER NOT NULL,
        last_template_id INTEGER NOT NULL, mark_seq INTEGER NOT NULL, candidates TEXT NOT NULL,
        detected_at TEXT NOT NULL)""")
    db.execute("CREATE TABLE reextract_queue (page_id TEXT PRIMARY KEY, site TEXT)")
    db.execute("""CREATE TABLE template_events (
        site TEXT NOT NULL, version INTEGER NOT NULL, event TEXT NOT NULL, detail TEXT NOT NULL,
        at TEXT NOT NULL, PRIMARY KEY (site, version, event))""")


MIGRATIONS = [_v1]


def ensure_schema(db: sqlite_utils.Database) -> None:
    migrate(db, "runs", MIGRATIONS)


# --- the writer lock --------------------------------------------------------------------------------------------

def database_path(db: sqlite_utils.Database) -> Path | None:
    """The file behind the connection, or None for an in-memory database."""
    row = db.conn.execute("PRAGMA database_list").fetchone()
    return Path(row[2]) if row and row[2] else None


@contextlib.contextmanager
def writer_lock(db: sqlite_utils.Database, *, command: str) -> Iterator[None]:
    """Hold ``<database>-lock`` exclusively for a long run; StoreError at once when another process holds it.

    The operating system releases the lock when its holder dies (even by kill -9), so a killed run never leaves
    the database locked. In-memory databases need no lock.
    """
    path = database_path(db)
    if path is None:
        yield
        return
    lock_path = path.with_name(path.name + "-lock")
    handle = open(lock_path, "a+")  # noqa: SIM115 -- closed below
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            raise StoreError(f"{path} is being written by {holder}: wait for it to finish (or stop it) and run "
                             f"`templater {command}` again; a rerun continues where a stopped run left off") from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"templater {command} (pid {os.getpid()})")
        handle.flush()
        _held.append(handle)
        yield
    finally:
        if handle in _held:
            _held.remove(handle)
        handle.close()


_held: list = []  # the lock files this process holds (writer_lock), which forked workers must not keep open


def close_inherited_locks() -> None:
    """In a forked worker: close its copies of the parent's lock files. The lock belongs to the open file, which a
    fork shares: a worker outliving a killed parent for a moment would otherwise still hold it, and the rerun
    that follows the kill would be refused."""
    while _held:
        _held.pop().close()


# --- runs -------------------------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Run:
    id: int
    key: str
    stage: str
    records_done: int
    batches_done: int
    counts: dict
    started_at: str


def _run(row: tuple) -> Run:
    return Run(id=row[0], key=row[1], stage=row[2], records_done=row[3], batches_done=row[4],
               counts=json.loads(row[5]), started_at=row[6])


_RUN_COLUMNS = "id, key, stage, records_done, batches_done, counts, started_at"


def open_run(db: sqlite_utils.Database, key: str) -> Run | None:
    """The unfinished run with this key, if any (the newest)."""
    row = db.execute(f"SELECT {_RUN_COLUMNS} FROM runs WHERE key = ? AND stage IN ('records', 'retire')"
                     " ORDER BY id DESC LIMIT 1", [key]).fetchone()
    return _run(row) if row else None


def abandon_runs(db: sqlite_utils.Database, *, keep: int | None, now: str) -> list[int]:
    """Mark every unfinished run but ``keep`` abandoned; returns their ids."""
    ids = [r[0] for r in db.execute("SELECT id FROM runs WHERE stage IN ('records', 'retire') AND id IS NOT ?"
                                    " ORDER BY id", [keep])]
    db.conn.executemany("UPDATE runs SET stage = 'abandoned', updated_at = ? WHERE id = ?", [(now, i) for i in ids])
    return ids


def start_run(db: sqlite_utils.Database, *, command: str, key: str, inputs: Sequence[str], options: dict,
              now: str) -> Run:
    cursor = db.execute("INSERT INTO runs (command, key, inputs, options, stage, started_at, updated_at)"
                        " VALUES (?, ?, ?, ?, 'records', ?, ?)",
                        [command, key, json.dumps(list(inputs)), json.dumps(options, sort_keys=True), now, now])
    return Run(id=cursor.lastrowid, key=key, stage="records", records_done=0, batches_done=0, counts={},
               started_at=now)


def record_progress(db: sqlite_utils.Database, run_id: int, *, records_done: int, counts: dict, now: str) -> None:
    """Records committed so far and the run's counts: written in the transaction of the batch they describe."""
    db.execute("UPDATE runs SET records_done = ?, batches_done = batches_done + 1, counts = ?, updated_at = ?"
               " WHERE id = ?", [records_done, json.dumps(counts, sort_keys=True), now, run_id])


def set_stage(db: sqlite_utils.Database, run_id: int, stage: str, *, counts: dict, now: str) -> None:
    if stage not in STAGES:
        raise StoreError(f"unknown run stage {stage!r}: one of {', '.join(STAGES)}")
    finished = now if stage == "done" else None
    db.execute("UPDATE runs SET stage = ?, counts = ?, updated_at = ?, finished_at = ? WHERE id = ?",
               [stage, json.dumps(counts, sort_keys=True), now, finished, run_id])


# --- pages seen by a run ----------------------------------------------------------------------------------------

def known_hashes(db: sqlite_utils.Database, ids: Sequence[str]) -> dict[str, tuple[str, bool, str | None, str | None]]:
    """id -> (content hash, retired, group_key, site) of the stored pages among ``ids``."""
    out = {}
    for chunk in _chunks(list(dict.fromkeys(ids)), config.STORE_ID_CHUNK):
        marks = ",".join("?" * len(chunk))
        for pid, digest, retired, group, site in db.execute(
                f"SELECT id, content_hash, retired, group_key, site FROM pages WHERE id IN ({marks})", chunk):
            out[pid] = (digest, bool(retired), group, site)
    return out


def mark_seen(db: sqlite_utils.Database, run_id: int, page_ids: Iterable[str]) -> None:
    db.conn.executemany("INSERT INTO run_seen (page_id, run_id) VALUES (?, ?)"
                        " ON CONFLICT (page_id) DO UPDATE SET run_id = excluded.run_id",
                        [(pid, run_id) for pid in page_ids])


def seen_pages(db: sqlite_utils.Database, run_id: int, *, limit: int = -1) -> list[str]:
    """The ids of the pages the run fetched (skipped records aside), sorted (the first ``limit`` of them)."""
    return [r[0] for r in db.execute("SELECT page_id FROM run_seen WHERE run_id = ? ORDER BY page_id LIMIT ?",
                                     [run_id, limit])]


def unseen_pages(db: sqlite_utils.Database, run_id: int, *, limit: int) -> list[str]:
    """Ids of live pages the run did not fetch, in id order (at most ``limit``)."""
    return [r[0] for r in db.execute(
        "SELECT p.id FROM pages p LEFT JOIN run_seen s ON s.page_id = p.id WHERE p.retired = 0"
        " AND (s.run_id IS NULL OR s.run_id != ?) ORDER BY p.id LIMIT ?", [run_id, limit])]


def known_live(db: sqlite_utils.Database, ids: Sequence[str]) -> list[str]:
    """Those of ``ids`` that are stored, live pages."""
    out = []
    for chunk in _chunks(list(dict.fromkeys(ids)), config.STORE_ID_CHUNK):
        marks = ",".join("?" * len(chunk))
        out += [r[0] for r in db.execute(f"SELECT id FROM pages WHERE retired = 0 AND id IN ({marks})", chunk)]
    return out


def sites_of_pages(db: sqlite_utils.Database, ids: Sequence[str]) -> list[tuple[str, str | None]]:
    """(id, site) of the stored pages among ``ids``, in id order."""
    out = []
    for chunk in _chunks(list(dict.fromkeys(ids)), config.STORE_ID_CHUNK):
        marks = ",".join("?" * len(chunk))
        out += db.execute(f"SELECT id, site FROM pages WHERE id IN ({marks})", chunk).fetchall()
    return sorted((r[0], r[1]) for r in out)


def sites_of(db: sqlite_utils.Database, ids: Sequence[str]) -> set[str]:
    """The sites the given pages are assigned to."""
    return {site for _, site in sites_of_pages(db, ids) if site is not None}


def group_keys(db: sqlite_utils.Database) -> set[str]:
    """Every group key stored pages were assigned to."""
    return {r[0] for r in db.execute("SELECT DISTINCT group_key FROM pages WHERE group_key IS NOT NULL")}


# --- template health ----------------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Observation:
    seq: int
    page_id: str
    template: str | None
    coverage: float | None
    low: bool


def add_observations(db: sqlite_utils.Database, rows: Iterable[tuple[str, str, str | None, float | None, bool]]
                     ) -> None:
    """Rows of (group_key, page_id, template name, coverage, low), in the order the pages were extracted."""
    db.conn.executemany("INSERT INTO health_observations (group_key, page_id, template, coverage, low)"
                        " VALUES (?, ?, ?, ?, ?)", [(g, p, t, c, int(low)) for g, p, t, c, low in rows])


def group_state(db: sqlite_utils.Database, group: str, *, default_need: int) -> tuple[int, int]:
    """(mark_seq, need) of a group: observations after mark_seq count, and a check needs ``need`` of them."""
    row = db.execute("SELECT mark_seq, need FROM health_groups WHERE group_key = ?", [group]).fetchone()
    return (row[0], row[1]) if row else (0, default_need)


def observations_since(db: sqlite_utils.Database, group: str, mark_seq: int) -> list[Observation]:
    """The group's observations after ``mark_seq``, oldest first."""
    return [Observation(*r[:4], bool(r[4])) for r in db.execute(
        "SELECT seq, page_id, template, coverage, low FROM health_observations WHERE group_key = ? AND seq > ?"
        " ORDER BY seq", [group, mark_seq])]


def prune_observations(db: sqlite_utils.Database, group: str, *, keep: int) -> None:
    """Keep only the group's last ``keep`` observations."""
    db.execute("DELETE FROM health_observations WHERE group_key = ? AND seq <= coalesce((SELECT seq FROM"
               " health_observations WHERE group_key = ? ORDER BY seq DESC LIMIT 1 OFFSET ?), -1)",
               [group, group, keep])


def set_group_state(db: sqlite_utils.Database, group: str, *, mark_seq: int, need: int, now: str) -> None:
    db.execute("INSERT INTO health_groups (group_key, mark_seq, need, attempts, checked_at) VALUES (?, ?, ?, 1, ?)"
               " ON CONFLICT (group_key) DO UPDATE SET mark_seq = excluded.mark_seq, need = excluded.need,"
               " attempts = attempts + 1, checked_at = excluded.checked_at", [group, mark_seq, need, now])


# --- relearning and re-extraction --------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Intent:
    """A group to learn again: from ``page_ids``; ``candidates`` are further pages to re-extract if they fit."""

    group_key: str
    page_ids: tuple[str, ...]
    reason: str
    drift: bool
    last_template_id: int
    mark_seq: int
    candidates: tuple[str, ...]


def last_template_id(db: sqlite_utils.Database) -> int:
    return db.execute("SELECT coalesce(max(id), 0) FROM templates").fetchone()[0]


def add_intent(db: sqlite_utils.Database, intent: Intent, *, now: str) -> None:
    db.execute("INSERT OR REPLACE INTO relearn_intents (group_key, page_ids, reason, drift, last_template_id,"
               " mark_seq, candidates, detected_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
               [intent.group_key, json.dumps(intent.page_ids), intent.reason, int(intent.drift),
                intent.last_template_id, intent.mark_seq, json.dumps(intent.candidates), now])


def intents(db: sqlite_utils.Database) -> list[Intent]:
    """Pending relearns, by group."""
    return [Intent(r[0], tuple(json.loads(r[1])), r[2], bool(r[3]), r[4], r[5], tuple(json.loads(r[6])))
            for r in db.execute("SELECT group_key, page_ids, reason, drift, last_template_id, mark_seq, candidates"
                                " FROM relearn_intents ORDER BY group_key")]


def remove_intent(db: sqlite_utils.Database, group: str) -> None:
    db.execute("DELETE FROM relearn_intents WHERE group_key = ?", [group])


@dataclass(frozen=True, slots=True)
class Version:
    """A template version as the history shows it."""

    id: int
    site: str
    group_key: str
    version: int
    current: bool
    stale: bool
    learned_at: str
    reason: str
    page_count: int
    rule_count: int
    layout_shapes: bytes
    layout_match: float  # the share of its layout a page must hold to be given it (saved with its settings)


_VERSION_COLUMNS = ("id, site, group_key, version, current, stale, learned_at, reason, page_count, rule_count,"
                    " layout_shapes, settings")


def _version(r: tuple) -> Version:
    return Version(r[0], r[1], r[2], r[3], bool(r[4]), bool(r[5]), r[6], r[7], r[8], r[9], r[10],
                   template_store.layout_match(r[11]))


def versions_after(db: sqlite_utils.Database, group: str, template_id: int) -> list[Version]:
    """Versions of the group's sites stored after template row ``template_id``, by site."""
    return [_version(r) for r in db.execute(
        f"SELECT {_VERSION_COLUMNS} FROM templates WHERE group_key = ? AND id > ? ORDER BY site, version",
        [group, template_id])]


def current_versions(db: sqlite_utils.Database, group: str) -> list[Version]:
    return [_version(r) for r in db.execute(
        f"SELECT {_VERSION_COLUMNS} FROM templates WHERE group_key = ? AND current = 1 ORDER BY site", [group])]


def previous_version(db: sqlite_utils.Database, site: str, version: int) -> Version | None:
    row = db.execute(f"SELECT {_VERSION_COLUMNS} FROM templates WHERE site = ? AND version < ?"
                     " ORDER BY version DESC LIMIT 1", [site, version]).fetchone()
    return _version(row) if row else None


def set_reason(db: sqlite_utils.Database, template_id: int, reason: str) -> None:
    db.execute("UPDATE templates SET reason = ? WHERE id = ?", [reason, template_id])


def mark_stale(db: sqlite_utils.Database, site: str, version: int, *, detail: str, now: str) -> None:
    """Flag a version stale and record when and why (the first time only)."""
    db.execute("UPDATE templates SET stale = 1 WHERE site = ? AND version = ?", [site, version])
    db.execute("INSERT OR IGNORE INTO template_events (site, version, event, detail, at) VALUES (?, ?, 'stale', ?, ?)",
               [site, version, detail, now])


def pages_extracted_with(db: sqlite_utils.Database, names: Sequence[str]) -> list[str]:
    """Ids of live pages whose stored extraction was made with one of the named template versions."""
    out: list[str] = []
    for chunk in _chunks(list(names), config.STORE_ID_CHUNK):
        marks = ",".join("?" * len(chunk))
        out += [r[0] for r in db.execute(
            f"SELECT e.page_id FROM extractions e JOIN pages p ON p.id = e.page_id WHERE p.retired = 0"
            f" AND e.template IN ({marks}) ORDER BY e.page_id", chunk)]
    return out


def enqueue(db: sqlite_utils.Database, rows: Iterable[tuple[str, str | None]]) -> None:
    """Pages to extract again, with the site whose template to use (None: match by URL and layout)."""
    db.conn.executemany("INSERT OR REPLACE INTO reextract_queue (page_id, site) VALUES (?, ?)", list(rows))


def queued(db: sqlite_utils.Database, *, limit: int) -> list[tuple[str, str | None]]:
    return [(r[0], r[1]) for r in db.execute("SELECT page_id, site FROM reextract_queue ORDER BY page_id LIMIT ?",
                                             [limit])]


def dequeue(db: sqlite_utils.Database, ids: Sequence[str]) -> None:
    db.conn.executemany("DELETE FROM reextract_queue WHERE page_id = ?", [(pid,) for pid in ids])


# --- history ------------------------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class HistoryRow:
    version: Version
    stale_at: str | None
    stale_detail: str | None


def template_history(db: sqlite_utils.Database, site: str) -> list[HistoryRow]:
    """Every version of a site's template, oldest first, with when and why it went stale."""
    columns = ", ".join("t." + c.strip() for c in _VERSION_COLUMNS.split(","))
    if "template_events" not in db.table_names():  # never recrawled: no events, and a reader creates no table
        rows = db.execute(f"SELECT {columns}, NULL, NULL FROM templates t WHERE t.site = ? ORDER BY t.version",
                          [site]).fetchall()
    else:
        rows = db.execute(f"SELECT {columns}, e.at, e.detail FROM templates t LEFT JOIN template_events e"
                          " ON e.site = t.site AND e.version = t.version AND e.event = 'stale' WHERE t.site = ?"
                          " ORDER BY t.version", [site]).fetchall()
    width = len(_VERSION_COLUMNS.split(","))
    return [HistoryRow(_version(r[:width]), r[width], r[width + 1]) for r in rows]


def sites_like(db: sqlite_utils.Database, site: str) -> list[str]:
    """Sites whose name starts with the given text (to suggest one when a name is not found)."""
    return [r[0] for r in db.execute("SELECT DISTINCT site FROM templates WHERE site LIKE ? ORDER BY site LIMIT 5",
                                     [site.rstrip("/") + "%"])]


def _chunks(items: list, size: int) -> Iterator[list]:
    for start in range(0, len(items), size):
        yield items[start:start + size]
