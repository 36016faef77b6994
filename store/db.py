"""Opening a templater database and migrating its schema.

Each component (pages, templates, lsh, ...) owns its tables and an ordered list of migration steps. The
versions applied are recorded in ``schema_migrations`` so a step runs once, inside a transaction.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import sqlite_utils

from templater.errors import StoreError

BUSY_TIMEOUT_MS = 30_000

Migration = Callable[[sqlite_utils.Database], None]


def open_db(path: str | Path, *, create: bool = True) -> sqlite_utils.Database:
    """Open (or create) a templater database in WAL mode; a clear StoreError when it cannot be used."""
    path = Path(path)
    if not create and not path.exists():
        raise StoreError(f"no database at {path}: run `templater build` or `templater run` first, or check --db")
    if path.exists() and path.is_dir():
        raise StoreError(f"{path} is a folder, not a database file: give --db a file path")
    try:
        conn = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA page_size = 16384")  # new files only; faster for the band index in every run measured
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.DatabaseError as e:
        raise StoreError(f"{path} is not a usable SQLite database ({e}); give --db another file or restore it"
                         ) from None
    db = sqlite_utils.Database(conn)
    _ensure_migrations_table(db)
    return db


def open_reader(path: str | Path) -> sqlite_utils.Database:
    """A read-only connection to an existing database: what worker processes read through while one process
    writes (WAL lets them read the last committed state meanwhile)."""
    try:
        conn = sqlite3.connect(f"{Path(path).resolve().as_uri()}?mode=ro", uri=True,
                               timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.DatabaseError as e:
        raise StoreError(f"{path} cannot be read ({e}); give --db another file or restore it") from None
    return sqlite_utils.Database(conn)


def db_path(db: sqlite_utils.Database) -> Path | None:
    """The database's file (None for an in-memory database)."""
    row = db.conn.execute("PRAGMA database_list").fetchone()
    return Path(row[2]) if row[2] else None


def _ensure_migrations_table(db: sqlite_utils.Database) -> None:
    db.execute("CREATE TABLE IF NOT EXISTS schema_migrations (component TEXT NOT NULL, version INTEGER NOT NULL,"
               " applied_at TEXT DEFAULT (datetime('now')), PRIMARY KEY (component, version))")


def migrate(db: sqlite_utils.Database, component: str, steps: Sequence[Migration]) -> None:
    """Apply the steps of ``component`` not yet applied, each in its own transaction."""
    done = {row[0] for row in db.execute(
        "SELECT version FROM schema_migrations WHERE component = ?", [component]).fetchall()}
    for version, step in enumerate(steps, 1):
        if version in done:
            continue
        with transaction(db, name="migrate"):  # inside a caller's batch, it commits or rolls back with it
            step(db)
            db.conn.execute("INSERT INTO schema_migrations (component, version) VALUES (?, ?)",
                            [component, version])


@contextmanager
def transaction(db: sqlite_utils.Database, *, name: str = "work") -> Iterator[None]:
    """One write transaction, committed together or not at all (a savepoint when the caller holds one)."""
    conn = db.conn
    if conn.in_transaction:
        conn.execute(f"SAVEPOINT {name}")
        try:
            yield
        except BaseException:
            conn.execute(f"ROLLBACK TO {name}")
            conn.execute(f"RELEASE {name}")
            raise
        conn.execute(f"RELEASE {name}")
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def db_name(db: sqlite_utils.Database) -> str:
    """The database file's path, for messages."""
    row = db.conn.execute("PRAGMA database_list").fetchone()
    return row[2] or "the in-memory database"
