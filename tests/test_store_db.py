"""store.db: what every connection templater opens is set up with."""

from store.db import HEAP_LIMIT_BYTES, open_db, open_reader


def test_every_connection_bounds_sqlites_memory_whatever_cache_it_asks_for(tmp_path):
    """The writer's and the readers' connections set SQLite's soft heap limit (process-wide): a cache_size such as
    the index's 512 MiB cannot grow the process beyond it (bench/bench_scale.py measures the peak RSS)."""
    path = tmp_path / "limited.db"
    writer = open_db(path)
    writer.conn.execute("PRAGMA cache_size = -524288")
    assert writer.conn.execute("PRAGMA soft_heap_limit").fetchone()[0] == HEAP_LIMIT_BYTES
    writer.conn.execute("PRAGMA soft_heap_limit = 0")  # the limit is the process's: a reader sets it again
    reader = open_reader(path)
    assert reader.conn.execute("PRAGMA soft_heap_limit").fetchone()[0] == HEAP_LIMIT_BYTES
    assert 0 < HEAP_LIMIT_BYTES <= 256 * 2**20


def test_a_forked_worker_does_not_keep_the_writer_lock_of_its_dead_parent(tmp_path):
    """A worker forked under writer_lock closes its copy of the lock file (workers do it at start): once the
    parent lets go, a new writer gets the lock although the worker still lives."""
    import os

    import pytest

    from store import runs as run_store
    from templater.errors import StoreError

    db = open_db(tmp_path / "t.db")
    ready_r, ready_w = os.pipe()  # the worker says it closed its copies (however loaded the machine)
    done_r, done_w = os.pipe()  # the parent says the worker may end
    with run_store.writer_lock(db, command="extract"):
        child = os.fork()
        if child == 0:  # the worker
            run_store.close_inherited_locks()
            os.write(ready_w, b"1")
            os.read(done_r, 1)
            os._exit(0)
        assert os.read(ready_r, 1) == b"1"
        with pytest.raises(StoreError):
            with run_store.writer_lock(open_db(tmp_path / "t.db"), command="extract"):
                pass
    try:
        with run_store.writer_lock(open_db(tmp_path / "t.db"), command="extract"):
            assert os.waitpid(child, os.WNOHANG) == (0, 0)  # the worker still runs
    finally:
        os.write(done_w, b"1")
        os.waitpid(child, 0)
        for fd in (ready_r, ready_w, done_r, done_w):
            os.close(fd)


def _wal(path, timeout_ms):
    import sqlite3

    conn = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute(f"PRAGMA busy_timeout = {timeout_ms}")
    return conn


def test_begin_immediate_waits_for_a_writer_that_keeps_committing(tmp_path):
    """Another writer that commits and begins again at once (a long run's batches) holds the lock far longer than
    the busy timeout in all, but it makes progress: begin_immediate waits for it instead of failing."""
    import threading
    import time

    from store.db import begin_immediate

    path = tmp_path / "w.db"
    first = _wal(path, 5_000)
    first.execute("CREATE TABLE t (x)")
    holding, done = threading.Event(), threading.Event()

    def busy_writer():
        for i in range(60):  # 60 transactions of 20 ms, back to back: 1.2 s against a 300 ms timeout (a timeout
            # near one transaction's length fails on a loaded machine, where a commit comes late: no progress seen)
            first.execute("BEGIN IMMEDIATE")
            first.execute("INSERT INTO t VALUES (?)", (i,))
            holding.set()
            time.sleep(0.02)
            first.execute("COMMIT")
        done.set()

    thread = threading.Thread(target=busy_writer)
    thread.start()
    holding.wait()
    second = _wal(path, 300)
    try:
        begin_immediate(second)
        second.execute("INSERT INTO t VALUES (-1)")
        second.execute("COMMIT")
    finally:
        thread.join()
    assert done.is_set()
    assert second.execute("SELECT count(*) FROM t").fetchone()[0] == 61


def test_begin_immediate_gives_up_on_a_writer_stuck_in_one_transaction(tmp_path):
    import sqlite3

    import pytest

    from store.db import begin_immediate, is_busy

    path = tmp_path / "s.db"
    first = _wal(path, 5_000)
    first.execute("CREATE TABLE t (x)")
    first.execute("BEGIN IMMEDIATE")
    first.execute("INSERT INTO t VALUES (1)")
    second = _wal(path, 50)
    with pytest.raises(sqlite3.OperationalError) as error:
        begin_immediate(second)
    assert is_busy(error.value) and not second.in_transaction
    first.execute("COMMIT")
    begin_immediate(second)  # free again
    second.execute("COMMIT")
