#!/usr/bin/env python3
"""What the near-duplicate index costs a page as its candidates grow: bench_scale's copies indexed into a grown index.

    python bench/bench_candidates.py STORE TEXTS [--copies 60 62] [--work FILE [--keep]] [--steps] [--checkout DIR]
                                     [--memory]

STORE is a store whose index holds bench_scale's pages (copies 0, 1, 2, ... of the suite's pages, extracted with
the index on, or grown further by an earlier run of this script: --copies 9 33 --work GROWN --keep); TEXTS is an
extract output (JSON Lines) that holds copy 0's pages (ids `k0/...`). The texts of copy 0 are perturbed as
bench_scale perturbs a copy's words, for each copy of --copies FIRST LAST (copies not in the index yet: each copy of
a page is a candidate of about three quarters of the earlier copies of the page, and refused), signed, and indexed
into a copy of STORE (--work) 200 pages a call inside extract's growing transactions (`dedup.index_signed`, what
extract's writer does). Printed: per copy, the CPU time of the index calls a page and the candidates verified a
page; with --steps, the CPU time a page of the index's steps (the band lookups, the candidate pairs with the flushes
of the recent runs, the verification: reading the candidates and measuring them, `_first_passing`; clustering,
`_merge`); and a digest of every page's cluster, the clusters' sizes and the links, which two checkouts must give
alike. Run it over two stores grown to different sizes: the difference of the cost a page divided by the difference
of the candidates a page is what one more candidate costs. With --memory, each index call is traced by tracemalloc
(Python's allocations and numpy's arrays; not SQLite's or glibc's free space) and its peak over what was held
before it is printed per copy (largest and median call), so a batch's memory can be set against its candidates (the
CPU figures then carry the tracing's cost); with --steps too, each step's own peak (median and largest of its calls).
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_commands import remove_db  # noqa: E402
from bench_scale import LETTERS, copy_db, perturbed_word  # noqa: E402
from cpu_timer import time_attribute  # noqa: E402

STEPS = ("_lookup_rows", "_candidate_pairs", "_merge_recent", "_verified_edges", "_first_passing", "_merge",
         "_insert_docs")


def count_candidates(counts: dict[str, int]) -> Callable[..., None]:
    """What runs before each ``_first_passing`` call: its candidates (its first argument) counted."""
    def count(candidates, *args, **kwargs) -> None:
        counts["candidates"] += len(candidates)
    return count


def trace_peaks(module, name: str, peaks: dict[str, list[float]], stack: list[list[int]]) -> None:
    """Wrap ``module.name`` so that each call's peak over what was held when it began (tracemalloc) goes to
    ``peaks[name]`` (``stack``: the calls under way, whose peaks a nested call's reset of tracemalloc's peak must not
    lose)."""
    function = getattr(module, name)

    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        held, peak = tracemalloc.get_traced_memory()
        if stack:
            stack[-1][1] = max(stack[-1][1], peak)
        tracemalloc.reset_peak()
        stack.append([held, 0])
        try:
            return function(*args, **kwargs)
        finally:
            held, highest = stack.pop()
            highest = max(highest, tracemalloc.get_traced_memory()[1])
            peaks.setdefault(name, []).append((highest - held) / 2**20)
            if stack:
                stack[-1][1] = max(stack[-1][1], highest)
            tracemalloc.reset_peak()

    setattr(module, name, wrapper)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("store", help="a store whose index holds bench_scale's pages")
    parser.add_argument("texts", help="extract output (JSON Lines) holding copy 0's pages (ids k0/...)")
    parser.add_argument("--copies", type=int, nargs=2, metavar=("FIRST", "LAST"), default=(60, 62),
                        help="index copies FIRST .. LAST - 1 (default: 60 62)")
    parser.add_argument("--work", default=None,
                        help="the copy of STORE indexed into (default: a temporary file, removed after)")
    parser.add_argument("--keep", action="store_true", help="keep --work (grown) for later runs")
    parser.add_argument("--steps", action="store_true", help="also print the CPU time of the index's steps")
    parser.add_argument("--memory", action="store_true",
                        help="trace each index call's peak memory over what was held before it (tracemalloc)")
    parser.add_argument("--checkout", default=str(Path(__file__).resolve().parent.parent),
                        help="the checkout whose templater and store.lsh index the pages (default: this one)")
    cli = parser.parse_args()
    if not Path(cli.store).exists():
        parser.error(f"{cli.store} does not exist")
    sys.path.insert(0, cli.checkout)

    from store import lsh
    from templater import dedup, pipeline

    folder = None
    work = cli.work
    if work is None:
        folder = tempfile.mkdtemp(prefix="bench-candidates-")
        work = os.path.join(folder, "index.db")
    remove_db(Path(work))
    copy_db(Path(cli.store), Path(work))  # (with its -wal and -shm files, where it has them)
    spent: dict[str, float] = {}
    counts = {"candidates": 0}
    peaks: dict[str, list[float]] | None = {} if cli.memory and cli.steps else None
    calls: list[list[int]] = []  # (the index call's own entry, then the steps under way)
    for name in STEPS:
        time_attribute(lsh, name, spent, before=count_candidates(counts) if name == "_first_passing" else None)
        if peaks is not None:  # (outside the CPU clock)
            trace_peaks(lsh, name, peaks, calls)
    try:
        db = pipeline.open_store(work)
        settings = pipeline.index_settings(db)
        held = db.execute("SELECT count(*) FROM lsh_signatures").fetchone()[0]
        with open(cli.texts, encoding="utf-8") as lines:
            base = [r for r in map(json.loads, lines) if r["id"].startswith("k0/")]
        vocabulary = sorted({w for r in base for w in LETTERS.findall(r["text"])})
        total, pages, candidates = 0.0, 0, 0
        if cli.memory:
            tracemalloc.start()
        with pipeline.GrowingBatch(db) as batch:
            for copy in range(*cli.copies):
                words = {w: perturbed_word(copy, w) for w in vocabulary}
                items = [dedup.TextItem(f"k{copy}/" + r["id"][3:], r["url"].replace("://k0.", f"://k{copy}.", 1),
                                        LETTERS.sub(lambda m: words[m.group()], r["text"]), 0, None) for r in base]
                signed = dedup.sign_each([item.text for item in items], settings)
                cpu, before, call_peaks = 0.0, counts["candidates"], []
                for start in range(0, len(items), 200):
                    batch.begin()
                    if cli.memory:
                        tracemalloc.reset_peak()
                        calls.append([tracemalloc.get_traced_memory()[0], 0])
                    started = time.process_time()
                    dedup.index_signed(db, items[start:start + 200], signed[start:start + 200], settings)
                    cpu += time.process_time() - started
                    if cli.memory:
                        held, highest = calls.pop()
                        call_peaks.append((max(highest, tracemalloc.get_traced_memory()[1]) - held) / 2**20)
                    batch.step(len(items[start:start + 200]))
                total, pages, candidates = total + cpu, pages + len(items), candidates + counts["candidates"] - before
                print(f"copy {copy}: {1000 * cpu / len(items):.3f} ms a page, "
                      f"{(counts['candidates'] - before) / len(items):.1f} candidates a page"
                      + (f"; an index call's peak over what it found held: largest {max(call_peaks):.2f} MiB, median "
                         f"{statistics.median(call_peaks):.2f} MiB" if call_peaks else ""), flush=True)
        digest = hashlib.sha256()
        for sql in ("SELECT doc, page_id, cluster FROM lsh_signatures ORDER BY doc",
                    "SELECT * FROM dup_clusters ORDER BY cluster", "SELECT * FROM lsh_links ORDER BY doc, other"):
            for row in db.execute(sql):
                digest.update(repr(row).encode())
        print(f"{pages} pages into an index of {held} pages: {1000 * total / max(pages, 1):.3f} ms a page, "
              f"{candidates / max(pages, 1):.1f} candidates a page; clusters and links digest "
              f"{digest.hexdigest()[:16]}")
        if cli.steps:
            print("steps, ms a page (nested steps are inside the steps that call them): " + ", ".join(
                f"{name.lstrip('_')} {1000 * spent.get(name, 0.0) / max(pages, 1):.3f}" for name in STEPS))
        if peaks:
            print("steps' peaks over what each call found held, MiB, median (largest) of the calls: " + ", ".join(
                f"{name.lstrip('_')} {statistics.median(peaks[name]):.2f} ({max(peaks[name]):.2f})"
                for name in STEPS if name in peaks))
        db.conn.close()
    finally:
        if folder is not None and not cli.keep:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
