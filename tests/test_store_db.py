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
