"""The SQLite near-duplicate index at scale: incremental inserts, all candidates, single lookups, size, memory.

    python bench/bench_index.py [--n 1000000] [--batch 50000] [--commit each|growing] [--dup-share 0.1]
                                [--lookups 2000] [--db FILE]
                                [--page-size 0] [--verify sample|exact|estimate] [--set-size 1000] [--sample 256]
                                [--anchor-rate 16] [--anchor-keys 12]
                                [--keep]
                                [--phases] [--filter-memory-mib 192] [--recent-pages 50000] [--recent-rows 524288]
                                [--min-free-gib 0] [--no-pairs] [--every 0] [--existing]
    python bench/bench_index.py --merge-rows 1400000


Synthetic signatures (default settings: 128 slots, 16 bands x 6 rows, threshold 0.8) with planted near-duplicates:
``--dup-share`` of the pages copy an earlier page (from a rolling pool of recent originals) with each slot
replaced at random with probability q, q uniform in [0, 0.35] (so the expected agreement is 1 - q). Page ids are
URL-like and arrive in no particular key order, as crawled URLs do. Every page also has a synthetic set of
``--set-size`` random 32-bit shingle hashes (a planted copy replaces the same share q of its original's set).
``--verify`` is how candidates are verified: "sample" (the default of a real index) stores each page's
``--sample`` smallest hashes, given to the index already sampled as ``dedup.index_texts`` gives them (sampling is
part of signing, timed by bench_minhash.py); "exact" stores the whole set; "estimate" stores no set.

Phases, each timed on its own:
  insert    ``store.lsh.add_signatures`` per batch: band keys into the live index, candidates of the batch, their
            verification, cluster updates, all in one transaction per batch (the path ``index_texts`` takes);
            with ``--commit growing``, the batches go in inside the transactions ``templater extract`` commits
            (``pipeline.GrowingBatch``: 1 batch, then 2, 4, ... up to config.GROWING_PAGES pages): run it with
            ``--batch 200`` (pipeline.BATCH_PAGES) for the batches and commits ``extract`` really makes
  pairs     every candidate pair of the index (``iter_candidate_pairs``: one pass over the band index finds the
            shared keys, then their rows in key order), then every verified pair (``iter_verified_pairs``)
  lookup    ``store.lsh.query`` for ``--lookups`` random indexed pages, one at a time: p50 and p99 latency (wall, and
            CPU: on a shared machine the wall clock measures the load)
Then the bytes per page on disk (database file after a checkpoint) and the process's peak resident memory.
``--phases`` prints where the inserts' CPU went: each step of ``add_signatures`` timed by CPU (nested steps count in
their callers too: merges of segments and filter rebuilds within the flushes) and the commits, and per page the keys
that passed a segment's filter, the blocks read and the keys found (the difference: false "maybe" answers); and
a line at each merge of segments: its CPU, resident memory before it, the rise of the peak (VmHWM, reset before
the merge: what the merge itself held) and resident memory after it, and SQLite's own peak during it. ``--every N``
prints the progress line (rates since the last line, peak RSS so far) every N pages.
``--merge-rows N`` times one merge of the band index alone instead: SEGMENT_FANOUT - 1 segments of level 0 with N
random (key, doc) rows each, then the N rows of a flush, inside a caller's transaction (the merge runs in the
savepoint ``add_signatures`` makes): CPU per merged row, and by part (ordering the rows, setting the new segment's
filter, writing its blocks, reading the merged ones), then the commit and the checkpoint, and the rise of resident
memory during the flush and the merge (the peak, VmHWM, reset before them; Linux).
``--filter-memory-mib``, ``--recent-pages`` and ``--recent-rows`` set config.FILTER_MEMORY_BYTES, RECENT_PAGES and
RECENT_ROWS for the run: a scale model of a larger index (``--n 400000 --recent-pages 2000 --filter-memory-mib
7.68`` makes the segments and the filters' share of memory that 10M pages make with the defaults, at a 25th of the
pages). The end of the run prints
the segments' filters (memory, bits a key row).
``--page-size`` creates the database with that SQLite page size before ``open_db`` (0: open_db's default).
``--min-free-gib G`` stops inserting (after committing what is in) when the database's disk has less than G GiB free,
checked every 100 batches; the later phases then run on the pages inserted. ``--no-pairs`` leaves out the pairs
phase (a pass over every key row: long at 10M pages). ``--existing`` inserts nothing: the index in ``--db`` (one
this benchmark wrote, kept with ``--keep`` or left by a run that was stopped) is measured as it is: its filters,
clusters, pairs (unless ``--no-pairs``), lookups, size.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from store import lsh  # noqa: E402
from store.db import open_db  # noqa: E402
from store.lsh import IndexedPage  # noqa: E402
from templater.pipeline import GrowingBatch  # noqa: E402
from templater.shingles import ShingleSettings, Shingles, Signatures, anchor_keys  # noqa: E402
from cpu_timer import time_attribute, timed  # noqa: E402

POOL = 20_000  # recent originals a planted duplicate may copy
CHUNK = 5_000  # synthetic pages whose full shingle sets are made at once
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


class Pool:
    """The signatures and full sets of the last POOL pages, oldest first, in ring buffers (appending a batch used to
    copy the whole pool, 80 MB, at every batch: 16 GB of copying for 200-page batches at 200k pages, untimed but slow)."""

    def __init__(self, permutations: int, set_size: int):
        self.values = np.empty((POOL, permutations), np.uint32)
        self.sets = np.empty((POOL, set_size), np.uint32)
        self.size = self.end = 0  # pages held; where the next one goes

    def __len__(self) -> int:
        return self.size

    def _at(self, index: np.ndarray) -> np.ndarray:
        return (self.end - self.size + index) % POOL

    def signatures(self, index: np.ndarray) -> np.ndarray:
        return self.values[self._at(index)]

    def shingle_sets(self, index: np.ndarray) -> np.ndarray:
        return self.sets[self._at(index)]

    def push(self, values: np.ndarray, sets: np.ndarray) -> None:
        values, sets = values[-POOL:], sets[-POOL:]
        at = (self.end + np.arange(len(values))) % POOL
        self.values[at], self.sets[at] = values, sets
        self.end, self.size = (self.end + len(values)) % POOL, min(POOL, self.size + len(values))

    @property
    def nbytes(self) -> int:
        return self.values.nbytes + self.sets.nbytes


def make_batch(rng: np.random.Generator, count: int, pool: Pool, args,
               settings: ShingleSettings) -> tuple[np.ndarray, Shingles | None, np.ndarray, int, Shingles]:
    """Signatures of ``count`` pages (some planted copies of the pool's pages), what the index is given to verify
    them, the full synthetic sets of the last POOL pages (the next pool), and the pages' anchor keys (the set in its
    drawn order standing for text order). Sets are made CHUNK pages at a time, so the benchmark's own arrays stay
    small beside the index's memory."""
    k = settings.permutations
    values = rng.integers(0, 2**32, size=(count, k), dtype=np.uint32)
    dups = np.flatnonzero(rng.random(count) < args.dup_share) if len(pool) else np.empty(0, np.int64)
    source = rng.integers(0, len(pool), size=len(dups)) if len(dups) else dups
    share = rng.uniform(0, MAX_NOISE, size=len(dups))
    if len(dups):
        values[dups] = perturb(rng, pool.signatures(source), share)
    parts, tail, anchors = [], [], []
    for start in range(0, count, CHUNK):
        sets = rng.integers(0, 2**32, size=(min(CHUNK, count - start), args.set_size), dtype=np.uint32)
        mine = (dups >= start) & (dups < start + len(sets))
        if mine.any():
            sets[dups[mine] - start] = perturb(rng, pool.shingle_sets(source[mine]), share[mine])
        parts.append(verification_input(sets, args.verify, args.sample))
        anchors.append(anchor_keys(Shingles(sets.ravel().astype(np.uint64), np.arange(len(sets) + 1) * args.set_size),
                                   settings))
        if start + len(sets) > count - POOL:
            tail.append(sets[max(0, count - POOL - start):])
    return values, _joined(parts), np.concatenate(tail), len(dups), _joined(anchors)


def verification_input(sets: np.ndarray, verify: str, sample: int) -> Shingles | None:
    """What the index is given to store: nothing (estimate), every hash (exact) or each page's sample."""
    count, size = sets.shape
    if verify == "estimate":
        return None
    if verify == "exact" or sample >= size:
        return Shingles(sets.ravel().astype(np.uint64), np.arange(count + 1) * size)
    smallest = np.sort(np.partition(sets, sample - 1, axis=1)[:, :sample], axis=1)
    rows = list(smallest)
    for i in np.flatnonzero((np.diff(smallest, axis=1) == 0).any(axis=1)).tolist():  # a value drawn twice (rare)
        rows[i] = np.unique(sets[i])[:sample]
    counts = np.array([len(r) for r in rows])
    return Shingles(np.concatenate(rows).astype(np.uint64), np.concatenate(([0], np.cumsum(counts))))


def _joined(parts: list[Shingles | None]) -> Shingles | None:
    if parts[0] is None:
        return None
    counts = np.concatenate([p.counts for p in parts])
    return Shingles(np.concatenate([p.hashes for p in parts]), np.concatenate(([0], np.cumsum(counts))))


def create(path: Path, page_size: int):
    if page_size:
        conn = sqlite3.connect(path)
        conn.execute(f"PRAGMA page_size = {page_size}")
        conn.execute("CREATE TABLE bench_page_size (x)")
        conn.close()
    return open_db(path)


def insert_all(db, args, settings: ShingleSettings) -> tuple[int, list[float], list[float], int]:
    rng = np.random.default_rng(SEED)
    pool = Pool(settings.permutations, args.set_size)
    batch_times, cpu_times, planted, own_bytes = [], [], 0, 0
    reported = 0  # batches timed at the last progress line
    growing = GrowingBatch(db) if args.commit == "growing" else None
    folder = Path(db.conn.execute("PRAGMA database_list").fetchone()[2]).parent
    for start in range(0, args.n, args.batch):
        if args.min_free_gib and batch_times and len(batch_times) % 100 == 0 and \
                shutil.disk_usage(folder).free < args.min_free_gib * 2**30:
            if growing:
                growing.commit()
            print(f"  stopped at {start:,} pages: less than {args.min_free_gib} GiB free on the disk", flush=True)
            break
        count = min(args.batch, args.n - start)
        values, shingles, sets, dups, anchors = make_batch(rng, count, pool, args, settings)
        planted += dups
        pages = [IndexedPage(page_id(i), page_id(i)) for i in range(start, start + count)]
        signatures = Signatures(values, np.zeros(count, bool), settings, anchors)
        began, cpu = time.perf_counter(), time.process_time()
        if growing:
            growing.begin()
        lsh.add_signatures(db, pages, signatures, shingles=shingles)
        if growing:
            growing.step(count)
            if start + count >= args.n:
                growing.commit()
        batch_times.append(time.perf_counter() - began)
        cpu_times.append(time.process_time() - cpu)
        own_bytes = max(own_bytes, pool.nbytes + values.nbytes + sets.nbytes +
                        (shingles.hashes.nbytes if shingles is not None else 0))
        pool.push(values, sets)
        done = start + count
        if (done % args.every < count if args.every else
                len(batch_times) % max(1, len(range(0, args.n, args.batch)) // 10) == 0) or done == args.n:
            step = len(batch_times) - reported
            print(f"  {done:>9,} pages  {done / sum(batch_times):>8,.0f} docs/s so far  "
                  f"(last batch {count / batch_times[-1]:,.0f} docs/s); per CPU second {done / sum(cpu_times):,.0f} so "
                  f"far, {args.batch * step / sum(cpu_times[-step:]):,.0f} since the last line; max RSS "
                  f"{max_rss():,.0f} MiB", flush=True)
            reported = len(batch_times)
    args.n = min(args.n, sum(min(args.batch, args.n - i * args.batch) for i in range(len(batch_times))))
    return planted, batch_times, cpu_times, own_bytes


def time_pairs(db) -> None:
    began, cpu = time.perf_counter(), time.process_time()
    pairs = np.concatenate(list(lsh.iter_candidate_pairs(db)) or [np.empty((0, 2), np.int64)])
    candidates, candidates_cpu = time.perf_counter() - began, time.process_time() - cpu
    distinct = len(np.unique((pairs[:, 0] << 31) | pairs[:, 1]))
    began, cpu = time.perf_counter(), time.process_time()
    verified = sum(len(a) for a, _, _ in lsh.iter_verified_pairs(db))
    total, total_cpu = time.perf_counter() - began, time.process_time() - cpu
    print(f"pairs: all candidates in {candidates:.1f} s ({candidates_cpu:.1f} s CPU; {len(pairs):,} pair rows, "
          f"{distinct:,} distinct pairs); candidates + verification in {total:.1f} s ({total_cpu:.1f} s CPU; "
          f"{verified:,} pairs at or above the threshold)")


def time_lookups(db, settings: ShingleSettings, n: int, lookups: int) -> None:
    rng = np.random.default_rng(SEED + 1)
    docs = rng.integers(1, n + 1, size=lookups)
    rows = dict(db.conn.execute(f"SELECT doc, signature FROM lsh_signatures WHERE doc IN "
                                f"({','.join(map(str, docs.tolist()))})").fetchall())
    sets = lsh.stored_sets(db, docs.tolist(), settings)
    latencies, cpu_times, found = [], [], 0
    for doc in docs.tolist():
        signature = np.frombuffer(rows[doc], dtype=np.uint32)
        began, cpu = time.perf_counter(), time.process_time()
        found += len(lsh.query(db, signature, settings, shingle_set=sets.get(doc), exclude=doc))
        latencies.append(time.perf_counter() - began)
        cpu_times.append(time.process_time() - cpu)
    ms, cpu_ms = np.array(latencies) * 1000, np.array(cpu_times) * 1000
    print(f"lookup: {lookups} pages, p50 {np.percentile(ms, 50):.2f} ms, p99 {np.percentile(ms, 99):.2f} ms, "
          f"max {ms.max():.1f} ms ({found} near-duplicates found); CPU p50 {np.percentile(cpu_ms, 50):.2f} ms, "
          f"p99 {np.percentile(cpu_ms, 99):.2f} ms")


PHASES = {  # store.lsh's steps of an insert, by function (nested: a step's time counts in its callers' too)
    "add_signatures": "add_signatures (the whole call)",
    "_lookup_rows": "  lookups of the batch's page and band keys",
    "_segment_rows": "    in the segments (filters, blocks)",
    "find": "    in the recent runs",
    "_insert_docs": "  _insert_docs (after the known pages' lookup)",
    "_candidate_pairs": "    candidates: stored buckets matched, new run",
    "_stored_partners": "      stored candidates (lookups, if not made)",
    "_append_run": "      the batch's run (INSERT, memory, filter)",
    "_merge_recent": "      flushes and merges of segments",
    "_merge_segments": "        merges of segments",
    "_rebuilt_filter": "        filters rebuilt to share the memory",
    "_verified_edges": "    verification of candidates",
    "_merge": "    clustering (references, joins)",
    "_relabel": "    relabelled clusters",
    "_band_rows": "    band rows of the batch",
}


def timed_phases() -> dict[str, dict]:
    """Wrap PHASES' functions with CPU timers: {"seconds": name -> CPU seconds, "calls": name -> calls, "probes":
    [keys passing a segment's filter, blocks read, keys found]}."""
    seconds: dict[str, float] = dict.fromkeys(PHASES, 0.0)
    calls: dict[str, int] = dict.fromkeys(PHASES, 0)
    probes = [0, 0, 0]
    spent = {"seconds": seconds, "calls": calls, "probes": probes}
    blocks_of = lsh._Segment.blocks_of

    def counted_blocks_of(self, keys, cap, positions=None):
        sought, blocks = blocks_of(self, keys, cap, positions)
        probes[0] += len(sought)
        probes[1] += len(blocks)
        return sought, blocks

    lsh._Segment.blocks_of = counted_blocks_of
    segment_rows = lsh._segment_rows

    def counted_segment_rows(db, keys, cap=lsh.BUCKET_CAP):
        rows = segment_rows(db, keys, cap)
        probes[2] += len(np.unique(rows[:, 0])) if len(rows) else 0
        return rows

    lsh._segment_rows = counted_segment_rows
    for name in PHASES:
        owner = lsh._Recent if name == "find" else lsh
        if not hasattr(owner, name):  # (an older store.lsh, linked in for a comparison)
            continue
        time_attribute(owner, name, seconds, calls=calls)
    lsh._merge_segments = merge_memory(lsh._merge_segments)
    return spent


def merge_memory(function):
    """``_merge_segments`` printing each merge's memory as it ends: resident memory before it, the rise of the peak
    (VmHWM, reset before the merge; the run's peak is kept by ``max_rss``) over it, resident memory after it, and
    SQLite's own peak during it (sqlite3_memory_highwater)."""
    def run(db, held, merged, level):
        before = peak_reset()
        sqlite_peak(reset=True)
        began = time.process_time()
        made = function(db, held, merged, level)
        print(f"    merge of {len(merged)} segments ({sum(s.rows for s in merged) / 1e6:,.1f}M rows) into level {level}: "
              f"{time.process_time() - began:.1f} s CPU; resident {before:,.0f} MiB before, peak +"
              f"{memory_status('VmHWM') - before:,.0f}, {memory_status('VmRSS'):,.0f} after; SQLite's peak "
              f"{sqlite_peak():,.0f} MiB", flush=True)
        return made
    return run


def sqlite_peak(reset: bool = False) -> float:
    """SQLite's peak memory (sqlite3_memory_highwater, MiB) since the last reset, from the library the sqlite3 module
    uses (0 where it cannot be found)."""
    global _SQLITE
    if _SQLITE is None:
        import ctypes
        import _sqlite3
        try:
            _SQLITE = ctypes.CDLL(_sqlite3.__file__)  # (its symbols, and those of the libsqlite3 it links)
            _SQLITE.sqlite3_memory_highwater.restype = ctypes.c_int64
            _SQLITE.sqlite3_memory_highwater.argtypes = [ctypes.c_int]
        except (OSError, AttributeError):
            _SQLITE = False
    return _SQLITE.sqlite3_memory_highwater(1 if reset else 0) / 2**20 if _SQLITE else 0.0


_SQLITE = None


def print_phases(spent: dict[str, dict], total_cpu: float, pages: int) -> None:
    """Print ``timed_phases``' figures."""
    print(f"phases (CPU; of the timed inserts, {total_cpu:.1f} s):")
    seconds_of = spent["seconds"]
    sought, blocks, found = spent["probes"]
    print(f"  segment lookups: {sought / pages:.2f} keys a page passed a segment's filter, {blocks / pages:.2f} blocks "
          f"read a page, {found / pages:.2f} keys a page found (about {(sought - found) / pages:.2f} false \"maybe\")")
    for name, label in PHASES.items():
        seconds, calls = seconds_of[name], spent["calls"][name]
        print(f"  {label:<50} {seconds:8.2f} s {100 * seconds / total_cpu:5.1f}%  {seconds / pages * 1e6:6.1f} us a page "
              f"({calls:,} calls)")
    children = ("_candidate_pairs", "_verified_edges", "_merge", "_relabel", "_band_rows")
    for label, seconds in (
            ("    the pages' rows (INSERT lsh_signatures), rest",
             seconds_of["_insert_docs"] - sum(seconds_of[name] for name in children)),
            ("  known pages, verification sets, rest",
             seconds_of["add_signatures"] - seconds_of["_insert_docs"] - seconds_of["_lookup_rows"])):
        print(f"  {label:<50} {seconds:8.2f} s {100 * seconds / total_cpu:5.1f}%  {seconds / pages * 1e6:6.1f} us a page")
    rest = total_cpu - seconds_of["add_signatures"]
    print(f"  {'commits (GrowingBatch) and the timing itself':<50} {rest:8.2f} s {100 * rest / total_cpu:5.1f}%  "
          f"{rest / pages * 1e6:6.1f} us a page")


def print_filters(db) -> None:
    """The segments (level, rows) and their filters: memory against FILTER_MEMORY_BYTES, bits a key row."""
    items = lsh._segments(db).items
    shares = ", ".join(f"L{s.level} {s.rows / 1e6:.1f}M rows {len(s.bits) * 8 / max(s.rows, 1):.1f}" for s in items)
    print(f"filters: {sum(len(s.bits) for s in items) / 2**20:,.1f} MiB of {lsh.FILTER_MEMORY_BYTES / 2**20:,.1f}; "
          f"segments and bits a row: {shares}")


def time_merge(rows: int) -> None:
    from store.db import transaction
    path = Path(tempfile.mkdtemp(prefix="bench-merge-")) / "merge.db"
    db = open_db(path)
    lsh.prepare(db)
    rng = np.random.default_rng(SEED)
    spent: dict[str, float] = {}

    def flush(first_doc: int) -> None:  # a flush's rows: a page's 28 keys under one doc, in (key, doc) order
        keys, docs = rng.integers(0, 2**47, size=rows), first_doc + np.arange(rows) // 28
        order = np.lexsort((docs, keys))
        lsh._add_segment(db, keys[order], docs[order])

    db.conn.execute("BEGIN IMMEDIATE")
    for i in range(lsh.SEGMENT_FANOUT - 1):
        flush(1 + i * rows)
    db.conn.execute("COMMIT")
    order = "_ordered_rows" if hasattr(lsh, "_ordered_rows") else "_row_order"
    parts = {order: "ordering the rows", "_bloom_add": "setting filters", "_range_rows": "reading blocks"}
    for name, label in parts.items():
        if hasattr(lsh, name):
            time_attribute(lsh, name, spent, label)
    if not hasattr(lsh, order):  # an older store.lsh (a checkout linked in for a comparison): np.lexsort
        proxy = type(np)("numpy_timed")
        proxy.__dict__.update(np.__dict__)
        proxy.lexsort = timed(np.lexsort, spent, "ordering the rows")
        lsh.np = proxy
    time_attribute(lsh._SegmentWriter, "_blocks", spent, "writing blocks")
    first = 1 + (lsh.SEGMENT_FANOUT - 1) * rows
    keys, docs = rng.integers(0, 2**47, size=rows), first + np.arange(rows) // 28
    order = np.lexsort((docs, keys))
    keys, docs = keys[order], docs[order]
    del order
    resident = peak_reset()
    db.conn.execute("BEGIN IMMEDIATE")
    began = time.process_time()
    with transaction(db, name="lsh"):
        lsh._add_segment(db, keys, docs)
    merge = time.process_time() - began
    peak = memory_status("VmHWM")
    began = time.process_time()
    db.conn.execute("COMMIT")
    commit = time.process_time() - began
    began = time.process_time()
    db.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    checkpoint = time.process_time() - began
    merged = rows * lsh.SEGMENT_FANOUT
    shares = ", ".join(f"{label} {seconds:.2f} s" for label, seconds in sorted(spent.items(), key=lambda i: -i[1]))
    levels = [(s.level, s.rows) for s in lsh._segments(db).items]
    print(f"merge: {rows:,} rows flushed, then {merged:,} rows merged in {merge:.2f} s CPU ({merge / merged * 1e9:.0f} "
          f"ns a merged row; {shares}); commit {commit:.2f} s, checkpoint {checkpoint:.2f} s CPU; segments (level, "
          f"rows) {levels}; resident memory {resident:,.0f} MiB before the flush, peak {peak:,.0f} during it and the "
          f"merge (+{peak - resident:,.0f})")
    db.conn.close()
    for suffix in ("", "-wal", "-shm"):  # (the database of a 1.45M-row merge takes 250 MB)
        Path(str(path) + suffix).unlink(missing_ok=True)
    path.parent.rmdir()


def memory_status(name: str) -> float:
    """A /proc/self/status memory figure, MiB (0 where there is none)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(name + ":"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


_PEAK = [0.0]  # the process's peak resident memory before the last reset of VmHWM, MiB


def max_rss() -> float:
    """The process's peak resident memory, MiB (getrusage, VmHWM and the peaks before VmHWM's resets)."""
    return max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, memory_status("VmHWM"), _PEAK[0])


def peak_reset() -> float:
    """Reset the process's peak resident memory (VmHWM, Linux) to its resident memory now, which it returns (the
    peak until now is kept for ``max_rss``)."""
    _PEAK[0] = max_rss()
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass
    return memory_status("VmRSS")


def measure_existing(path: Path, args) -> None:
    """The phases after the inserts, on an index this benchmark wrote before (``--existing``)."""
    if not path.exists():
        sys.exit(f"{path} does not exist: --existing measures an index written before")
    db = open_db(path)
    settings = lsh.load_settings(db)
    stats = lsh.stats(db)
    pages = int(db.conn.execute("SELECT max(doc) FROM lsh_signatures").fetchone()[0] or 0)
    print(f"{path}: {stats['pages']:,} pages (docs 1-{pages:,}); load average {os.getloadavg()[0]:.1f}")
    print_filters(db)
    print(f"clusters: {stats['clusters']:,} holding {stats['pages_in_clusters']:,} pages")
    if not args.no_pairs:
        time_pairs(db)
    time_lookups(db, settings, pages, args.lookups)
    size = path.stat().st_size
    print(f"disk: {size / 2**20:,.0f} MiB, {size / max(pages, 1):,.0f} bytes per page; peak memory (max RSS) "
          f"{max_rss():,.0f} MiB")
    db.conn.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--batch", type=int, default=50_000)
    parser.add_argument("--commit", choices=("each", "growing"), default="each",
                        help="a transaction per batch, or extract's growing transactions of several batches")
    parser.add_argument("--dup-share", type=float, default=0.1)
    parser.add_argument("--lookups", type=int, default=2000)
    parser.add_argument("--db", type=Path, default=None, help="database file (default: a new temporary file)")
    parser.add_argument("--page-size", type=int, default=0)
    parser.add_argument("--verify", choices=("sample", "exact", "estimate"), default=ShingleSettings().verify,
                        help="how candidates are verified (the index's setting)")
    parser.add_argument("--set-size", type=int, default=1000, help="distinct shingles a synthetic page has")
    parser.add_argument("--sample", type=int, default=ShingleSettings().sample,
                        help="hashes a page keeps with --verify sample")
    parser.add_argument("--anchor-rate", type=int, default=ShingleSettings().anchor_rate,
                        help="one shingle in this many is an anchor (0: no anchor keys, band keys only)")
    parser.add_argument("--anchor-keys", type=int, default=ShingleSettings().anchor_keys,
                        help="anchor keys a page keeps at most")
    parser.add_argument("--anchor-tail-keys", type=int, default=ShingleSettings().anchor_tail_keys,
                        help="anchor keys a page keeps from its end besides (0: none)")
    parser.add_argument("--keep", action="store_true", help="keep the database file")
    parser.add_argument("--phases", action="store_true", help="print where the inserts' CPU went, by step")
    parser.add_argument("--filter-memory-mib", type=float, default=lsh.FILTER_MEMORY_BYTES / 2**20,
                        help="the segments' filters' memory budget (config.FILTER_MEMORY_BYTES), MiB")
    parser.add_argument("--recent-pages", type=int, default=lsh.RECENT_PAGES,
                        help="pages between flushes of the recent runs into a segment (config.RECENT_PAGES)")
    parser.add_argument("--recent-rows", type=int, default=getattr(lsh, "RECENT_ROWS", 0),
                        help="key rows the recent runs hold at most before a flush (config.RECENT_ROWS)")
    parser.add_argument("--min-free-gib", type=float, default=0,
                        help="stop inserting when the database's disk has less free (0: never)")
    parser.add_argument("--no-pairs", action="store_true", help="leave out the pairs phase")
    parser.add_argument("--every", type=int, default=0,
                        help="print a progress line every this many pages (0: every 10%% of the batches)")
    parser.add_argument("--existing", action="store_true",
                        help="insert nothing: measure the index in --db as it is (filters, clusters, pairs, lookups)")
    parser.add_argument("--merge-rows", type=int, default=0,
                        help="time one merge of segments of this many rows instead (see above)")
    args = parser.parse_args()
    lsh.FILTER_MEMORY_BYTES, lsh.RECENT_PAGES = int(args.filter_memory_mib * 2**20), args.recent_pages
    if hasattr(lsh, "RECENT_ROWS"):  # (an older store.lsh, linked in for a comparison, flushes by pages alone)
        lsh.RECENT_ROWS = args.recent_rows
    if args.merge_rows:
        time_merge(args.merge_rows)
        return
    path = args.db or Path(tempfile.mkdtemp(prefix="bench-index-")) / "index.db"
    if args.existing:
        measure_existing(path, args)
        return
    if path.exists():
        sys.exit(f"{path} exists: give a new --db path")
    settings = ShingleSettings(verify=args.verify, sample=args.sample, anchor_rate=args.anchor_rate,
                               anchor_keys=args.anchor_keys, anchor_tail_keys=args.anchor_tail_keys)
    db = create(path, args.page_size)
    page_size = db.conn.execute("PRAGMA page_size").fetchone()[0]
    print(f"{args.n:,} synthetic signatures in batches of {args.batch:,} ({args.commit} commits), "
          f"{args.dup_share:.0%} planted duplicates; "
          f"{settings.bands} bands x {settings.rows} rows, anchor keys 1 in {settings.anchor_rate} (up to "
          f"{settings.anchor_keys} a page and its last {settings.anchor_tail_keys}; 0: none); verify={settings.verify}"
          f"{f' ({args.sample} of {args.set_size} shingles a page)' if args.verify == 'sample' else ''}"
          f"{f' ({args.set_size} shingles a page)' if args.verify == 'exact' else ''}; SQLite page size {page_size}; "
          f"{path}")
    spent = timed_phases() if args.phases else None
    began = time.perf_counter()
    planted, batch_times, cpu_times, own_bytes = insert_all(db, args, settings)
    if spent is not None:
        print_phases(spent, sum(cpu_times), args.n)
    wall = time.perf_counter() - began
    last = max(1, len(batch_times) // 10)
    tail, tail_cpu = sum(batch_times[-last:]), sum(cpu_times[-last:])
    print(f"insert: {args.n / sum(batch_times):,.0f} docs/s over the whole run ({args.n / sum(cpu_times):,.0f} per "
          f"CPU second; {wall:.0f} s wall, {planted:,} planted); the last 10% of batches at "
          f"{args.batch * last / tail:,.0f} docs/s ({args.batch * last / tail_cpu:,.0f} per CPU second); "
          f"load average {os.getloadavg()[0]:.1f}")
    print_filters(db)
    stats = lsh.stats(db)
    print(f"clusters: {stats['clusters']:,} holding {stats['pages_in_clusters']:,} pages")
    if not args.no_pairs:
        time_pairs(db)
    time_lookups(db, settings, args.n, args.lookups)
    db.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    size = path.stat().st_size
    print(f"disk: {size / 2**20:,.0f} MiB, {size / args.n:,.0f} bytes per page; peak memory (max RSS) "
          f"{max_rss():,.0f} MiB, of which the benchmark's own synthetic "
          f"arrays take up to {own_bytes / 2**20:,.0f} MiB")
    db.conn.close()
    if not args.keep:
        for suffix in ("", "-wal", "-shm"):
            Path(str(path) + suffix).unlink(missing_ok=True)


if __name__ == "__main__":
    main()
