"""The SQLite near-duplicate index at scale: incremental inserts, all candidates, single lookups, size, memory.

    python bench/bench_index.py [--n 1000000] [--batch 50000] [--dup-share 0.1] [--lookups 2000] [--db FILE]
                                [--page-size 0] [--exact --set-size 500] [--keep]

Synthetic signatures (default settings: 128 slots, 16 bands x 6 rows, threshold 0.8) with planted near-duplicates:
``--dup-share`` of the pages copy an earlier page (from a rolling pool of recent originals) with each slot
replaced at random with probability q, q uniform in [0, 0.35] (so the expected agreement is 1 - q). Page ids are
URL-like and arrive in no particular key order, as crawled URLs do. Verification is by estimated Jaccard
(signatures only); with ``--exact`` every page also gets a synthetic set of ``--set-size`` 32-bit shingle hashes
(a planted copy replaces the same share q of its original's set) and candidates are verified by exact Jaccard,
the default of a real index.

Phases, each timed on its own:
  insert    ``store.lsh.add_signatures`` per batch: band keys into the live index, candidates of the batch, their
            verification, cluster updates, all in one transaction per batch (the path ``index_texts`` takes)
  pairs     every candidate pair of the index (``iter_candidate_pairs``: one scan of the band index), then every
            verified pair (``iter_verified_pairs``)
  lookup    ``store.lsh.query`` for ``--lookups`` random indexed pages, one at a time: p50 and p99 latency
Then the bytes per page on disk (database file after a checkpoint) and the process's peak resident memory.
``--page-size`` creates the database with that SQLite page size before ``open_db`` (0: open_db's default).
"""

from __future__ import annotations

import argparse
import os
import resource
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from store import lsh  # noqa: E402
from store.db import open_db  # noqa: E402
from store.lsh import IndexedPage  # noqa: E402
from templater.shingles import ShingleSettings, Shingles, Signatures  # noqa: E402

POOL = 20_000  # recent originals a planted duplicate may copy
MAX_NOISE = 0.35
SEED = 11


def page_id(i: int) -> str:
    return f"http://site{(i * 7919) % 5003}.example/articles/{i}"


def perturb(rng: np.random.Generator, rows: np.ndarray, share: np.ndarray) -> np.ndarray:
    """Each value replaced by a random one with its row's probability ``share``."""
    rows = rows.copy()
    noise = rng.random(rows.shape) < share[:, None]
    rows[noise] = rng.integers(0, 2**32, size=int(noise.sum()), dtype=np.uint32)
    return rows


def make_batch(rng: np.random.Generator, count: int, pool: tuple[np.ndarray, np.ndarray | None], dup_share: float,
               k: int, set_size: int) -> tuple[np.ndarray, np.ndarray | None, int]:
    """Signatures (and synthetic shingle sets when set_size) of ``count`` pages, some planted copies of the pool."""
    values = rng.integers(0, 2**32, size=(count, k), dtype=np.uint32)
    sets = rng.integers(0, 2**32, size=(count, set_size), dtype=np.uint32) if set_size else None
    dups = np.flatnonzero(rng.random(count) < dup_share) if len(pool[0]) else np.empty(0, np.int64)
    if len(dups):
        source = rng.integers(0, len(pool[0]), size=len(dups))
        share = rng.uniform(0, MAX_NOISE, size=len(dups))
        values[dups] = perturb(rng, pool[0][source], share)
        if sets is not None:
            sets[dups] = perturb(rng, pool[1][source], share)
    return values, sets, len(dups)


def create(path: Path, page_size: int):
    if page_size:
        conn = sqlite3.connect(path)
        conn.execute(f"PRAGMA page_size = {page_size}")
        conn.execute("CREATE TABLE bench_page_size (x)")
        conn.close()
    return open_db(path)


def insert_all(db, args, settings: ShingleSettings) -> tuple[int, list[float], list[float]]:
    rng = np.random.default_rng(SEED)
    set_size = args.set_size if args.exact else 0
    pool = (np.empty((0, settings.permutations), np.uint32), np.empty((0, set_size), np.uint32))
    batch_times, cpu_times, planted = [], [], 0
    for start in range(0, args.n, args.batch):
        count = min(args.batch, args.n - start)
        values, sets, dups = make_batch(rng, count, pool, args.dup_share, settings.permutations, set_size)
        planted += dups
        pages = [IndexedPage(page_id(i), page_id(i)) for i in range(start, start + count)]
        signatures = Signatures(values, np.zeros(count, bool), settings)
        shingles = Shingles(sets.ravel(), np.arange(count + 1) * set_size) if set_size else None
        began, cpu = time.perf_counter(), time.process_time()
        lsh.add_signatures(db, pages, signatures, shingles=shingles)
        batch_times.append(time.perf_counter() - began)
        cpu_times.append(time.process_time() - cpu)
        pool = (np.concatenate((pool[0], values))[-POOL:],
                np.concatenate((pool[1], sets))[-POOL:] if set_size else pool[1])
        done = start + count
        if len(batch_times) % max(1, len(range(0, args.n, args.batch)) // 10) == 0 or done == args.n:
            print(f"  {done:>9,} pages  {done / sum(batch_times):>8,.0f} docs/s so far  "
                  f"(last batch {count / batch_times[-1]:,.0f} docs/s)", flush=True)
    return planted, batch_times, cpu_times


def time_pairs(db) -> None:
    began = time.perf_counter()
    pairs = np.concatenate(list(lsh.iter_candidate_pairs(db)) or [np.empty((0, 2), np.int64)])
    candidates = time.perf_counter() - began
    distinct = len(np.unique((pairs[:, 0] << 31) | pairs[:, 1]))
    began = time.perf_counter()
    verified = sum(len(a) for a, _, _ in lsh.iter_verified_pairs(db))
    total = time.perf_counter() - began
    print(f"pairs: all candidates in {candidates:.1f} s ({len(pairs):,} pair rows, {distinct:,} distinct pairs); "
          f"candidates + verification in {total:.1f} s ({verified:,} pairs at or above the threshold)")


def time_lookups(db, settings: ShingleSettings, n: int, lookups: int) -> None:
    rng = np.random.default_rng(SEED + 1)
    docs = rng.integers(1, n + 1, size=lookups)
    rows = dict(db.conn.execute(f"SELECT doc, signature FROM lsh_signatures WHERE doc IN "
                                f"({','.join(map(str, docs.tolist()))})").fetchall())
    sets = lsh.exact_shingles(db, docs.tolist(), settings) if settings.verify == "exact" else {}
    latencies, found = [], 0
    for doc in docs.tolist():
        signature = np.frombuffer(rows[doc], dtype=np.uint32)
        began = time.perf_counter()
        found += len(lsh.query(db, signature, settings, shingle_set=sets.get(doc), exclude=doc))
        latencies.append(time.perf_counter() - began)
    ms = np.array(latencies) * 1000
    print(f"lookup: {lookups} pages, p50 {np.percentile(ms, 50):.2f} ms, p99 {np.percentile(ms, 99):.2f} ms, "
          f"max {ms.max():.1f} ms ({found} near-duplicates found)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--batch", type=int, default=50_000)
    parser.add_argument("--dup-share", type=float, default=0.1)
    parser.add_argument("--lookups", type=int, default=2000)
    parser.add_argument("--db", type=Path, default=None, help="database file (default: a new temporary file)")
    parser.add_argument("--page-size", type=int, default=0)
    parser.add_argument("--exact", action="store_true", help="verify by exact Jaccard of synthetic shingle sets")
    parser.add_argument("--set-size", type=int, default=500, help="shingles per page with --exact")
    parser.add_argument("--keep", action="store_true", help="keep the database file")
    args = parser.parse_args()
    path = args.db or Path(tempfile.mkdtemp(prefix="bench-index-")) / "index.db"
    if path.exists():
        sys.exit(f"{path} exists: give a new --db path")
    settings = ShingleSettings(verify="exact" if args.exact else "estimate")
    db = create(path, args.page_size)
    page_size = db.conn.execute("PRAGMA page_size").fetchone()[0]
    print(f"{args.n:,} synthetic signatures in batches of {args.batch:,}, {args.dup_share:.0%} planted duplicates; "
          f"{settings.bands} bands x {settings.rows} rows; verify={settings.verify}"
          f"{f' ({args.set_size} shingles a page)' if args.exact else ''}; SQLite page size {page_size}; {path}")
    began = time.perf_counter()
    planted, batch_times, cpu_times = insert_all(db, args, settings)
    wall = time.perf_counter() - began
    last = max(1, len(batch_times) // 10)
    tail, tail_cpu = sum(batch_times[-last:]), sum(cpu_times[-last:])
    print(f"insert: {args.n / sum(batch_times):,.0f} docs/s over the whole run ({args.n / sum(cpu_times):,.0f} per "
          f"CPU second; {wall:.0f} s wall, {planted:,} planted); the last 10% of batches at "
          f"{args.batch * last / tail:,.0f} docs/s ({args.batch * last / tail_cpu:,.0f} per CPU second); "
          f"load average {os.getloadavg()[0]:.1f}")
    stats = lsh.stats(db)
    print(f"clusters: {stats['clusters']:,} holding {stats['pages_in_clusters']:,} pages")
    time_pairs(db)
    time_lookups(db, settings, args.n, args.lookups)
    db.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    size = path.stat().st_size
    print(f"disk: {size / 2**20:,.0f} MiB, {size / args.n:,.0f} bytes per page; peak memory (max RSS) "
          f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:,.0f} MiB")
    db.conn.close()
    if not args.keep:
        for suffix in ("", "-wal", "-shm"):
            Path(str(path) + suffix).unlink(missing_ok=True)


if __name__ == "__main__":
    main()
