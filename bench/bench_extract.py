#!/usr/bin/env python3
"""Extraction speed with learned templates, against trafilatura and plain lxml parsing, in the same run.

    python bench/bench_extract.py [CORPUS.jsonl.gz] [--limit N] [--repeat K]

Default corpus: the dev corpus's `sites` suite cut by ../shared/eval/suites.py (written to a temp folder when
missing). Stages timed, on one core, over the same pages:
  lxml        lxml.html.fromstring on every page (the parsing floor)
  trafilatura trafilatura.extract on every page (the peer)
  learn       templater ingest + build into a fresh SQLite database (pages/s of learning)
  extract     templater extract over the stored pages (decompress, parse, segment, apply template, classify, store)
Prints pages/s, ratios to trafilatura and lxml, and peak memory (ru_maxrss) after templater's stages.
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
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from templater import pipeline  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from suites import suite_file  # noqa: E402



def load(path: Path, limit: int | None) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        records = [json.loads(line) for line in f if line.strip()]
    return records[:limit] if limit else records


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus", nargs="?")
    parser.add_argument("--limit", type=int, default=None)
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    path = Path(args.corpus) if args.corpus else suite_file("sites")
    records = load(path, args.limit)
    n = len(records)
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "pages.jsonl"
        corpus.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
        db = pipeline.open_store(Path(tmp) / "bench.db")
        learn = timed(lambda: (pipeline.ingest(db, [corpus]), pipeline.build(db)))
        extract = timed(lambda: sum(1 for _ in pipeline.extract(db)))
        methods = dict(db.execute("SELECT method, count(*) FROM extractions GROUP BY method").fetchall())
        memory = peak_mb()

    import lxml.html
    import trafilatura

    parse = timed(lambda: [lxml.html.fromstring(r["html"].encode("utf-8", "replace")) for r in records
                           if r["html"].strip()])
    peer = timed(lambda: [trafilatura.extract(r["html"], url=r["url"]) for r in records])

    rate = {"lxml parse": n / parse, "trafilatura": n / peer, "templater learn (ingest+build)": n / learn,
            "templater extract": n / extract}
    print(f"pages={n} corpus={path.name} extraction methods={methods}")
    print(f"{'stage':34} {'pages/s':>9} {'x trafilatura':>14} {'x lxml parse':>13}")
    for name, value in rate.items():
        print(f"{name:34} {value:9.1f} {value / rate['trafilatura']:14.2f} {value / rate['lxml parse']:13.2f}")
    print(f"peak memory after templater stages: {memory:.0f} MB (ru_maxrss)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
