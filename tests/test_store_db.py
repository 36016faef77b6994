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
