#!/usr/bin/env python3
"""Extraction speed with learned templates, against trafilatura and plain lxml parsing, in the same run.

    python bench/bench_extract.py [CORPUS.jsonl.gz] [--limit N] [--interleave K] [--repeat K] [--clock wall|cpu]
                                  [--stages] [--peers own|same]

Default corpus: the dev corpus's `sites` suite cut by ../shared/eval/suites.py (written to a temp folder when
missing). Stages timed, on one core, over the same pages:
  lxml        lxml.html.fromstring on every page (the parsing floor)
  trafilatura trafilatura.extract on every page (the peer)
  learn       templater ingest + build into a fresh SQLite database (pages/s of learning)
  extract     templater extract over the stored pages (decompress, parse, segment, apply template, classify, store)
Prints pages/s, ratios to trafilatura and lxml, and peak memory (ru_maxrss) after templater's stages.
The three timed contestants (extract, lxml, trafilatura) run interleaved: the pages are cut into --interleave K
chunks (default 10) in their stored order, and each chunk is extracted by templater (the next pages of one
`pipeline.extract` over all of them, as a user runs it: templates read once a site), parsed by lxml and extracted
by trafilatura in turn, the order rotating from chunk to chunk. A shared
machine that slows down or speeds up during the run then slows all three alike, which one long pass each (the
previous way, still there as --interleave 1) did not: two such passes a minute apart read 7.45x and 5.68x
trafilatura on a machine with nothing else of ours running. The chunks' own ratios (min, median, max) are printed
beside the total so the spread shows. --repeat K (with --interleave 1 only) times extract, lxml and trafilatura K
times each and keeps the best (trafilatura's lru_caches flatter its second pass over the same pages); --clock cpu
counts the process's CPU time instead of wall time (steadier on a shared machine); --stages adds extraction's
per-stage breakdown (ms/page, the same work as extract, timed step by step).
--peers own (the default) runs the lxml loop and trafilatura in a process of their own, started before templater
sets its allocators in this one (native.tune_heap: glibc's fast bins off, libxml2's blocks from chunks of its own),
so the peers run as their own users run them; each chunk is still timed in turn with templater's, and the time is
taken inside the peers' process. --peers same runs them in this process, after ingest has set those allocators,
which lxml's parser in the peers then uses too (the way of earlier versions of this bench).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
import sys
import tempfile
import time
from itertools import islice
from pathlib import Path

# One core, as the issue measures it: BLAS reads its thread count when numpy loads, so set it before the imports
# below (else numpy's OpenBLAS runs a second thread that spins on the other core).
for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from templater import pipeline  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from suites import suite_file  # noqa: E402



def load(path: Path, limit: int | None) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        records = [json.loads(line) for line in f if line.strip()]
    return records[:limit] if limit else records


CLOCK = time.perf_counter


def timed(fn, repeat: int = 1) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = CLOCK()
        fn()
        best = min(best, CLOCK() - start)
    return best


def lxml_loop(records: list[dict]) -> None:
    import lxml.html

    for r in records:
        if r["html"].strip():
            lxml.html.fromstring(r["html"].encode("utf-8", "replace"))


def trafilatura_loop(records: list[dict]) -> None:
    import trafilatura

    for r in records:
        trafilatura.extract(r["html"], url=r["url"])


class PeerProcess:
    """The lxml loop and trafilatura in a process of their own (spawned, so nothing of this process's allocators
    goes with it), each run timed there on request over records [lo, hi) of the same corpus."""

    def __init__(self, path: Path, limit: int | None, clock: str) -> None:
        import multiprocessing

        context = multiprocessing.get_context("spawn")
        self.conn, child = context.Pipe()
        self.process = context.Process(target=_peer_main, args=(child, str(path), limit, clock), daemon=True)
        self.process.start()
        child.close()
        self.conn.recv()  # (ready: the records loaded, lxml and trafilatura imported)

    def run(self, name: str, lo: int, hi: int, repeat: int = 1) -> float:
        self.conn.send((name, lo, hi, repeat))
        return self.conn.recv()

    def close(self) -> None:
        self.conn.send(None)
        self.process.join()


def _peer_main(conn, path: str, limit: int | None, clock: str) -> None:
    global CLOCK
    CLOCK = time.process_time if clock == "cpu" else time.perf_counter
    run = in_process_peers(load(Path(path), limit))
    import lxml.html  # noqa: F401  (imported before the clock runs)
    import trafilatura  # noqa: F401

    conn.send("ready")
    while (task := conn.recv()) is not None:
        conn.send(run(*task))


def in_process_peers(records: list[dict]):
    """The peers' runs in the calling process: name, lo, hi, repeat -> seconds (--peers same, and the peers' own
    process)."""
    loops = {"lxml": lxml_loop, "trafilatura": trafilatura_loop}
    return lambda name, lo, hi, repeat=1: timed(lambda: loops[name](records[lo:hi]), repeat)


def interleaved(db, records: list[dict], ids: list[str], chunks: int, peers) -> tuple[float, float, float, tuple]:
    """Seconds of templater extract, the lxml loop and trafilatura over all pages, taken chunk by chunk in turn
    (the order rotating), and (min, median, max) of the chunks' extract-to-trafilatura ratios. ``peers(name, lo,
    hi)`` times a peer's run (in this process or in the peers' own)."""
    import statistics

    import lxml.html  # noqa: F401  (imported before the clock runs, as for the whole-pass way)
    import trafilatura  # noqa: F401

    # One extract over all the pages, as a user runs it, consumed chunk by chunk: an extract a chunk read every
    # template again in each chunk (225 template reads for the sites suite's 1,113 pages instead of one a site)
    stream = pipeline.extract(db, ids=ids)

    def extract_chunk(lo: int, hi: int) -> int:
        done = sum(1 for _ in islice(stream, hi - lo))
        return done + (sum(1 for _ in stream) if hi == len(ids) else 0)  # (the last chunk runs its end too)

    runs = {
        "extract": lambda lo, hi: timed(lambda: extract_chunk(lo, hi)),
        "lxml": lambda lo, hi: peers("lxml", lo, hi),
        "trafilatura": lambda lo, hi: peers("trafilatura", lo, hi),
    }
    names = list(runs)
    spent = dict.fromkeys(names, 0.0)
    ratios = []
    bounds = [round(i * len(ids) / chunks) for i in range(chunks + 1)]
    for k, (lo, hi) in enumerate(zip(bounds, bounds[1:])):
        if hi == lo:
            continue
        chunk = {}
        for name in names[k % 3:] + names[:k % 3]:
            chunk[name] = runs[name](lo, hi)
            spent[name] += chunk[name]
        ratios.append(chunk["trafilatura"] / chunk["extract"])
    return (spent["extract"], spent["lxml"], spent["trafilatura"],
            (min(ratios), statistics.median(ratios), max(ratios)))


FREED = "page freed (tree, blocks)"  # where no module holds a page past its extraction, its tree goes here


def stage_breakdown(db) -> dict[str, float]:
    """Seconds per extraction stage over all stored pages (extract's work, step by step)."""
    import numpy as np

    from store import pages as page_store
    from templater import extract as extract_mod
    from templater import fallback, features, headline, metadata
    from templater.blocks import segment
    from templater.parse import parse_html
    from templater.datatypes import Page

    spent: dict[str, float] = {}

    def step(name, fn, *args, **kwargs):
        start = CLOCK()
        result = fn(*args, **kwargs)
        spent[name] = spent.get(name, 0.0) + CLOCK() - start
        return result

    ids = [pid for pid, _, _ in page_store.iter_page_keys(db)]
    index = step("load templates", pipeline.TemplateIndex, db)
    step("language model (once a process)", metadata.detect_language, "x" * metadata.LANG_MIN_CHARS)
    weights = fallback.default_weights()
    pages = iter(page_store.load_pages(db, ids))

    def one(stored) -> float:
        """One page, step by step; the clock at the end of its last step (what follows until the caller has control
        again is the page going: its tree, blocks and arrays freed, as when extract is done with a page)."""
        root = step("parse", parse_html, stored.html_bytes)
        if root is None:
            return CLOCK()
        page = Page(stored.id, stored.url, stored.html_bytes, stored.fetched_at, stored.encoding or "utf-8")
        seg = step("segment", segment, root, page)
        compiled = step("find template", index.find, seg, stored.site)
        if compiled is None or not seg.blocks:
            step("fallback pages (all steps)", extract_mod.extract_page, seg, None, site=stored.site)
            return CLOCK()
        allowed, coverage, in_region = step("match template", extract_mod.match_template, seg, compiled)
        tree = step("number tree", features.number_tree, seg)
        feats = step("features", features.block_features, seg, tree, rows=allowed | fallback.headings(seg))
        scores = step("score (two-stage MLP)", fallback._score, seg, tree, feats, weights, allowed, rows=allowed)
        keep = step("keep + headline", lambda: headline.keep_headline(
            seg, feats, _keep(seg, tree, scores, allowed, in_region, compiled.settings)))
        result = step("text + repeats", extract_mod._extraction, seg, keep, site=stored.site, method="template",
                      template=compiled.name, coverage=round(coverage, 4), trusted=in_region,
                      settings=compiled.settings)
        step("metadata (declared, rules, shown, language)", metadata.read_metadata, seg, rules=compiled.meta,
             text=result.text)
        return CLOCK()

    while True:
        stored = step("load page (sqlite, zstd)", next, pages, None)
        if stored is None:
            break
        done = one(stored)
        spent[FREED] = spent.get(FREED, 0.0) + CLOCK() - done
    return spent


def _keep(seg, tree, scores, allowed, trusted, settings):
    """fallback.classify_blocks' choice behind a template (with its settings), from the scores already computed."""
    from templater import fallback

    keep = (scores > settings.allowed_threshold) & allowed
    if trusted.any():
        vouched = trusted & allowed
        doubtful = vouched & (scores <= settings.trusted_threshold)
        if doubtful.any():  # region_chrome is asked only where it can change a block
            vouched &= ~(doubtful & fallback.region_chrome(seg, tree, trusted, settings))
        keep |= vouched
    return keep & ~fallback.captions(seg)


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus", nargs="?")
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--interleave", type=int, default=10,
                        help="chunks the three timed contestants take in turn (1: one whole pass each)")
    parser.add_argument("--repeat", type=int, default=1,
                        help="with --interleave 1: time the extract/parse/peer stages K times, keep the best")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall")
    parser.add_argument("--stages", action="store_true", help="print extraction's per-stage breakdown")
    parser.add_argument("--peers", choices=("own", "same"), default="own",
                        help="run lxml and trafilatura in a process of their own (as their users run them) or in "
                             "this one, after templater has set its allocators")
    args = parser.parse_args()
    if args.interleave < 1 or args.repeat < 1:
        parser.error("--interleave and --repeat take a positive number")
    if args.repeat > 1 and args.interleave > 1:
        parser.error("--repeat needs --interleave 1 (the interleaved chunks are timed once each)")
    global CLOCK
    CLOCK = time.process_time if args.clock == "cpu" else time.perf_counter
    path = Path(args.corpus) if args.corpus else suite_file("sites")
    records = load(path, args.limit)
    n = len(records)
    own = PeerProcess(path, args.limit, args.clock) if args.peers == "own" else None  # (before ingest sets the heap)
    peers = own.run if own else in_process_peers(records)
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "pages.jsonl"
        corpus.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
        db = pipeline.open_store(Path(tmp) / "bench.db")
        ingested = []
        learn = timed(lambda: (ingested.append(pipeline.ingest(db, [corpus])), pipeline.build(db)))
        ids = ingested[0].pages
        if len(ids) != n:  # the chunks pair stored pages with records by position
            parser.error(f"{n - len(ids)} of the {n} pages were skipped by ingest: give a corpus of readable pages")
        if args.interleave > 1:
            extract, parse, peer, spread = interleaved(db, records, ids, args.interleave, peers)
        else:
            extract = timed(lambda: sum(1 for _ in pipeline.extract(db)), args.repeat)
            parse = peers("lxml", 0, n, args.repeat)
            peer = peers("trafilatura", 0, n, args.repeat)
            spread = None
        if own:
            own.close()
        methods = dict(db.execute("SELECT method, count(*) FROM extractions GROUP BY method").fetchall())
        memory = peak_mb()
        stages = stage_breakdown(db) if args.stages else {}

    rate = {"lxml parse": n / parse, "trafilatura": n / peer, "templater learn (ingest+build)": n / learn,
            "templater extract": n / extract}
    print(f"pages={n} corpus={path.name} extraction methods={methods} clock={args.clock} repeat={args.repeat} "
          f"interleave={args.interleave} peers={args.peers}")
    print(f"{'stage':34} {'pages/s':>9} {'x trafilatura':>14} {'x lxml parse':>13}")
    for name, value in rate.items():
        print(f"{name:34} {value:9.1f} {value / rate['trafilatura']:14.2f} {value / rate['lxml parse']:13.2f}")
    if spread:
        print("templater extract x trafilatura per chunk: min {:.2f}  median {:.2f}  max {:.2f}".format(*spread))
    print(f"peak memory after templater stages: {memory:.0f} MB (ru_maxrss)")
    if stages:
        print(f"extraction stages (ms/page over {n} pages; their sum {1000 * sum(stages.values()) / n:.2f}):")
        for name, seconds in stages.items():
            print(f"  {name:30} {1000 * seconds / n:7.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
