#!/usr/bin/env python3
"""What the near-duplicate index costs a page as its candidates grow: bench_scale's copies indexed into a grown index.

    python bench/bench_candidates.py STORE TEXTS [--copies 60 62] [--work FILE [--keep]] [--steps] [--checkout DIR]

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
of the candidates a page is what one more candidate costs.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_scale import LETTERS, perturbed_word  # noqa: E402
from cpu_timer import time_attribute  # noqa: E402

STEPS = ("_lookup_rows", "_candidate_pairs", "_merge_recent", "_verified_edges", "_first_passing", "_merge",
         "_insert_docs")


def count_candidates(counts: dict[str, int]) -> Callable[..., None]:
    """What runs before each ``_first_passing`` call: its candidates (its first argument) counted."""
    def count(candidates, *args, **kwargs) -> None:
        counts["candidates"] += len(candidates)
    return count


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
    parser.add_argument("--checkout", default=str(Path(__file__).resolve().parent.parent),
                        help="the checkout whose templater and store.lsh index the pages (default: this one)")
    cli = parser.parse_args()
    sys.path.insert(0, cli.checkout)

    from store import lsh
    from templater import dedup, pipeline

    folder = None
    work = cli.work
    if work is None:
        folder = tempfile.mkdtemp(prefix="bench-candidates-")
        work = os.path.join(folder, "index.db")
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(work + suffix):
            os.remove(work + suffix)
    shutil.copy(cli.store, work)
    spent: dict[str, float] = {}
    counts = {"candidates": 0}
    for name in STEPS:
        time_attribute(lsh, name, spent, before=count_candidates(counts) if name == "_first_passing" else None)
    try:
        db = pipeline.open_store(work)
        settings = pipeline.index_settings(db)
        held = db.execute("SELECT count(*) FROM lsh_signatures").fetchone()[0]
        with open(cli.texts, encoding="utf-8") as lines:
            base = [r for r in map(json.loads, lines) if r["id"].startswith("k0/")]
        vocabulary = sorted({w for r in base for w in LETTERS.findall(r["text"])})
        total, pages, candidates = 0.0, 0, 0
        with pipeline.GrowingBatch(db) as batch:
            for copy in range(*cli.copies):
                words = {w: perturbed_word(copy, w) for w in vocabulary}
                items = [dedup.TextItem(f"k{copy}/" + r["id"][3:], r["url"].replace("://k0.", f"://k{copy}.", 1),
                                        LETTERS.sub(lambda m: words[m.group()], r["text"]), 0, None) for r in base]
                signed = dedup.sign_each([item.text for item in items], settings)
                cpu, before = 0.0, counts["candidates"]
                for start in range(0, len(items), 200):
                    batch.begin()
                    started = time.process_time()
                    dedup.index_signed(db, items[start:start + 200], signed[start:start + 200], settings)
                    cpu += time.process_time() - started
                    batch.step(len(items[start:start + 200]))
                total, pages, candidates = total + cpu, pages + len(items), candidates + counts["candidates"] - before
                print(f"copy {copy}: {1000 * cpu / len(items):.3f} ms a page, "
                      f"{(counts['candidates'] - before) / len(items):.1f} candidates a page", flush=True)
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
        db.conn.close()
    finally:
        if folder is not None and not cli.keep:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
