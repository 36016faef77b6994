"""Opening a templater database and migrating its schema.

Each component (pages, templates, lsh, ...) owns its tables and an ordered list of migration steps. The
versions applied are recorded in ``schema_migrations`` so a step runs once, inside a transaction.

What is safe to open: a missing or empty file (a new store), or a file that holds ``schema_migrations`` with
templater's columns. A SQLite file of another application is refused before anything is written to it, and so
is a store whose schema is newer than this code's. A read-only open (the commands that only read) never writes:
the file is opened with SQLite's ``mode=ro``, and a component the file does not hold yet is seen as empty
tables in an attached in-memory database, so an empty file stays empty.
"""

from __future__ import annotations

import itertools
import os
import re
import sqlite3
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from templater.config import BUSY_TIMEOUT_MS, FOREIGN_TABLES_SHOWN, HEAP_LIMIT_BYTES  # noqa: F401 -- read here too
from templater.errors import StoreError

if TYPE_CHECKING:
    import sqlite_utils

MIGRATIONS_TABLE = "schema_migrations"
MIGRATIONS_COLUMNS = frozenset({"component", "version"})  # what makes a schema_migrations table templater's
SHADOW = "templater_empty"  # the attached in-memory database holding a read-only store's missing components

Migration = Callable[["Database"], None]


class Connection(sqlite3.Connection):
    """sqlite3's connection as the store opens every one of its own: the same connection, weakly referenceable,
    so that ``close_all`` can find those still open when a process ends without its interpreter's teardown."""


_opened: weakref.WeakValueDictionary = weakref.WeakValueDictionary()  # opening number -> a connection opened here
_openings = itertools.count()  # and not freed yet


def _connect_file(database: str, **options) -> Connection:
    conn = sqlite3.connect(database, factory=Connection, **options)
    _opened[next(_openings)] = conn
    return conn


def close_all() -> None:
    """Close every connection opened here that is still open, the last opened first (a process's readers before
    the writer they were opened after), as the interpreter's teardown closes each as it frees it: what was not
    committed is rolled back, and the last connection to a file checkpoints its WAL. For a process about to end
    without that teardown (``cli.quick_exit``)."""
    for _, conn in sorted(_opened.items(), reverse=True):
        conn.close()


class Database:
    """A store's connection with the part of sqlite-utils' Database templater uses (``conn``, ``execute``,
    ``table_names``), made without importing sqlite-utils: with click, pluggy and dateutil that import is ~30 ms of
    every command's start-up. Anything else (``db[table]``, ``db.query``, ...) goes to sqlite-utils' own Database
    over the same connection, made on first use. The store's functions take either."""

    templater_readonly = False  # set by open_db
    templater_shadowed: set[str] | frozenset = frozenset()  # (open_db's own set: components seen as empty tables)
    _utils: sqlite_utils.Database | None = None

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        conn.execute("PRAGMA recursive_triggers=on;")  # what sqlite-utils' Database sets on a connection it wraps

    def execute(self, sql: str, parameters=None) -> sqlite3.Cursor:
        """``conn.execute``: what sqlite-utils' execute does on a connection in autocommit mode (every connection
        made here: isolation_level None)."""
        return self.conn.execute(sql) if parameters is None else self.conn.execute(sql, parameters)

    def table_names(self) -> list[str]:
        return [row[0] for row in self.conn.execute("select name from sqlite_master where type = 'table'")]

    def utils(self) -> sqlite_utils.Database:
        """sqlite-utils' Database over this connection (imported and made on first use)."""
        if self._utils is None:
            import sqlite_utils

            self._utils = sqlite_utils.Database(self.conn, execute_plugins=False)  # no scan of installed packages
        return self._utils

    def __getitem__(self, name: str):
        return self.utils()[name]

    def __getattr__(self, name: str):
        if name.startswith("__"):  # (copy, pickle and friends probe for these)
            raise AttributeError(name)
        return getattr(self.utils(), name)


def open_db(path: str | Path, *, create: bool = True, readonly: bool = False) -> Database:
    """Open (or create) a templater database in WAL mode; a clear StoreError when it cannot be used.

    ``readonly``: the file must exist and is never written (no schema is created or migrated)."""
    path = Path(path)
    if (readonly or not create) and not path.exists():
        raise StoreError(f"no database at {path}: run `templater build` or `templater run` first, or check --db")
    if path.exists() and path.is_dir():
        raise StoreError(f"{path} is a folder, not a database file: give --db a file path")
    if not readonly:
        _check_writable(path)
    try:
        conn = _connect(path, readonly=readonly)
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        _check_ours(conn, path, tables)
        if not readonly:
            conn.execute("PRAGMA page_size = 16384")  # new files only; faster for the band index in every run measured
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
    except sqlite3.DatabaseError as e:
        raise StoreError(describe_error(e, path, what=f"{path} is not a usable SQLite database ({e}); give --db "
                                                      "another file or restore it")) from None
    db = Database(conn)
    db.templater_readonly = readonly
    db.templater_shadowed = set()  # components a read-only open sees as empty tables in SHADOW
    if readonly:
        conn.execute(f"ATTACH DATABASE ':memory:' AS {SHADOW}")
        if MIGRATIONS_TABLE not in tables:
            _ensure_migrations_table(db, schema=SHADOW)
    else:
        _ensure_migrations_table(db)
    return db


def _connect(path: Path, *, readonly: bool) -> sqlite3.Connection:
    if readonly:
        uri = f"{path.resolve().as_uri()}?mode=ro"
        conn = _connect_file(uri, uri=True, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
        try:
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except sqlite3.OperationalError:
            if os.access(path, os.W_OK):
                raise
            # read-only media: SQLite cannot make the WAL index beside the file, and nothing can write the file
            conn.close()
            conn = _connect_file(uri + "&immutable=1", uri=True, isolation_level=None)
    else:
        conn = _connect_file(str(path), timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    conn.execute("PRAGMA foreign_keys = ON")
    limit_heap(conn)
    return conn


def limit_heap(conn: sqlite3.Connection) -> None:
    """Bound the memory SQLite keeps in this process (its page caches above all) to HEAP_LIMIT_BYTES."""
    conn.execute(f"PRAGMA soft_heap_limit = {HEAP_LIMIT_BYTES}")


def _check_writable(path: Path) -> None:
    """A command that writes needs the file (or, for a new file, its folder) writable: say so before starting."""
    if path.exists() and not os.access(path, os.W_OK):
        raise StoreError(f"{path} is read-only: this command writes to the database; check the file's permissions and its file system "
                         "(commands that only read, such as `templater rules list`, can use it as it is)")
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise StoreError(f"{path}: no folder {folder} to put the database in: create it, or give --db another path")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise StoreError(f"{path}: its folder {folder} is not writable (SQLite keeps its journal beside the database);"
                         " check the folder's permissions or give --db a path in another folder")


def _check_ours(conn: sqlite3.Connection, path: Path, tables: set[str]) -> None:
    """Refuse a database that holds tables of another application (nothing is written to it)."""
    user_tables = sorted(t for t in tables if not t.startswith("sqlite_"))
    if not user_tables:
        return
    if MIGRATIONS_TABLE in tables:
        columns = {row[1] for row in conn.execute(f"PRAGMA table_info({MIGRATIONS_TABLE})")}
        if MIGRATIONS_COLUMNS <= columns:
            return
    shown = ", ".join(user_tables[:FOREIGN_TABLES_SHOWN]) + (", ..." if len(user_tables) > FOREIGN_TABLES_SHOWN
                                                             else "")
    raise StoreError(f"{path} is not a templater database (it holds other tables: {shown}); templater leaves it "
                     "untouched: give --db a new file or a database templater made")


def describe_error(e: sqlite3.Error, path: str | Path | None, *, what: str | None = None) -> str:
    """One line saying what a SQLite error means for the user and what to do."""
    name = str(path) if path else "the database"
    text = str(e).lower()
    if "disk is full" in text or "disk i/o error" in text:
        return (f"{name}: the disk is full or failing ({e}); free space (or give --db a file on another disk) and "
                "rerun: the database keeps what was committed")
    if "readonly" in text or "read-only" in text:
        return f"{name} is read-only ({e}): check the file's and its folder's permissions"
    if "locked" in text or "busy" in text:
        return f"{name} stayed locked by another writer past the busy timeout ({e}): wait for it and rerun"
    if "unable to open" in text:
        return f"{name}: SQLite cannot open it ({e}): check the path and its folder's permissions"
    return what or f"{name}: {e}"


def open_reader(path: str | Path) -> Database:
    """A read-only connection to an existing database: what worker processes read through while one process
    writes (WAL lets them read the last committed state meanwhile)."""
    try:
        conn = _connect_file(f"{Path(path).resolve().as_uri()}?mode=ro", uri=True,
                               timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        limit_heap(conn)
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.DatabaseError as e:
        raise StoreError(f"{path} cannot be read ({e}); give --db another file or restore it") from None
    return Database(conn)


def db_path(db: sqlite_utils.Database) -> Path | None:
    """The database's file (None for an in-memory database)."""
    row = db.conn.execute("PRAGMA database_list").fetchone()
    return Path(row[2]) if row[2] else None


def _ensure_migrations_table(db: sqlite_utils.Database, *, schema: str = "main") -> None:
    db.execute(f"CREATE TABLE IF NOT EXISTS {schema}.{MIGRATIONS_TABLE} (component TEXT NOT NULL, version INTEGER"
               " NOT NULL, applied_at TEXT DEFAULT (datetime('now')), PRIMARY KEY (component, version))")


def migrate(db: sqlite_utils.Database, component: str, steps: Sequence[Migration], *,
            fresh: Migration | None = None) -> None:
    """Apply the steps of ``component`` not yet applied, each in its own transaction; ``fresh``, where given, makes
    a component the file does not hold at the latest version at once (what the steps make of it), in one
    transaction that records every version.

    A schema newer than ``steps`` is refused. On a read-only open nothing is applied: a component the file does not
    hold is made, empty, in the attached in-memory database; one that is only older is refused."""
    if component in getattr(db, "templater_shadowed", ()):
        return
    done = {row[0] for row in db.execute(
        f"SELECT version FROM {MIGRATIONS_TABLE} WHERE component = ?", [component]).fetchall()}
    if done and max(done) > len(steps):
        raise StoreError(f"{db_name(db)}: its {component} schema is version {max(done)}, newer than this templater's "
                         f"(version {len(steps)}): upgrade templater, or give --db another file")
    missing = [version for version in range(1, len(steps) + 1) if version not in done]
    if not missing:
        return
    if getattr(db, "templater_readonly", False):
        if done:
            raise StoreError(f"{db_name(db)}: its {component} schema is version {max(done)}, older than this "
                             f"templater's (version {len(steps)}), and this command only reads: run a command that "
                             "writes (`templater build --db ...`) to upgrade it")
        _shadow(db, component, steps)
        return
    if fresh is not None and not done and _made_fresh(db, component, len(steps), fresh):
        return
    for version, step in enumerate(steps, 1):
        if version in done:
            continue
        with transaction(db, name="migrate"):  # inside a caller's batch, it commits or rolls back with it
            if db.execute(f"SELECT 1 FROM {MIGRATIONS_TABLE} WHERE component = ? AND version = ?",
                          [component, version]).fetchone():
                continue  # another process applied it between our look and our write lock
            step(db)
            db.conn.execute(f"INSERT INTO {MIGRATIONS_TABLE} (component, version) VALUES (?, ?)",
                            [component, version])


def _made_fresh(db: sqlite_utils.Database, component: str, version: int, fresh: Migration) -> bool:
    """Make ``component`` at ``version`` with ``fresh`` and record versions 1 to ``version``, in one transaction;
    False (nothing done) when another process made the component between our look and our write lock."""
    with transaction(db, name="migrate"):
        if db.execute(f"SELECT 1 FROM {MIGRATIONS_TABLE} WHERE component = ? LIMIT 1", [component]).fetchone():
            return False
        fresh(db)
        db.conn.executemany(f"INSERT INTO {MIGRATIONS_TABLE} (component, version) VALUES (?, ?)",
                            [(component, v) for v in range(1, version + 1)])
    return True


def _shadow(db: sqlite_utils.Database, component: str, steps: Sequence[Migration]) -> None:
    """A read-only store's missing component as empty tables (with their initial rows) in the attached in-memory
    database, where SQLite finds them by their plain names: the file is not written."""
    scratch = Database(sqlite3.connect(":memory:", isolation_level=None))
    for step in steps:
        step(scratch)
    conn = db.conn
    for name, sql in scratch.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table' AND sql IS NOT NULL"
                                     " AND name NOT LIKE 'sqlite_%' ORDER BY rowid").fetchall():
        exists = conn.execute(f"SELECT 1 FROM {SHADOW}.sqlite_master WHERE type = 'table' AND name = ?",
                              [name]).fetchone()
        if exists:
            continue
        conn.execute(re.sub(r"^CREATE TABLE\s+", f"CREATE TABLE {SHADOW}.", sql, count=1, flags=re.IGNORECASE))
        rows = scratch.execute(f"SELECT * FROM [{name}]").fetchall()
        if rows:
            marks = ",".join("?" * len(rows[0]))
            conn.executemany(f"INSERT INTO {SHADOW}.[{name}] VALUES ({marks})", rows)
    db.templater_shadowed.add(component)


def is_busy(error: sqlite3.OperationalError) -> bool:
    """Whether SQLite gave up waiting for another connection's lock."""
    text = str(error).lower()
    return "locked" in text or "busy" in text


def begin_immediate(conn: sqlite3.Connection) -> None:
    """``BEGIN IMMEDIATE`` that waits for as long as the writer holding the lock makes progress.

    SQLite's busy handler sleeps and retries, so a writer that commits and begins again at once can take the lock
    back every time while another process sleeps, and that process fails after the busy timeout although the first
    was working, not stuck (two runs on one database). Here a busy error ends the wait only when no other connection
    committed during a whole busy timeout (``PRAGMA data_version`` unchanged): a writer stuck in one transaction still
    gets the error after one timeout; one that keeps committing is waited for."""
    version = conn.execute("PRAGMA data_version").fetchone()[0]
    while True:
        try:
            conn.execute("BEGIN IMMEDIATE")
            return
        except sqlite3.OperationalError as error:
            if not is_busy(error):
                raise
            now = conn.execute("PRAGMA data_version").fetchone()[0]
            if now == version:
                raise
            version = now


@contextmanager
def transaction(db: sqlite_utils.Database, *, name: str = "work") -> Iterator[None]:
    """One write transaction, committed together or not at all (a savepoint when the caller holds one)."""
    conn = db.conn
    if conn.in_transaction:
        conn.execute(f"SAVEPOINT {name}")
        try:
            yield
        except BaseException:
            if conn.in_transaction:  # SQLite ends the transaction itself on some errors (a full disk)
                conn.execute(f"ROLLBACK TO {name}")
                conn.execute(f"RELEASE {name}")
            raise
        conn.execute(f"RELEASE {name}")
        return
    begin_immediate(conn)
    try:
        yield
    except BaseException:
        if conn.in_transaction:  # SQLite ends the transaction itself on some errors (a full disk)
            conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def db_name(db: sqlite_utils.Database) -> str:
    """The database file's path, for messages."""
    row = db.conn.execute("PRAGMA database_list").fetchone()
    return row[2] or "the in-memory database"
