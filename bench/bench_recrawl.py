#!/usr/bin/env python3
"""The big9 replay: four successive crawls by year, recrawled into one database, against learning each year alone.

    python bench/bench_recrawl.py [--corpus ../shared/corpus/big9/pages.jsonl.gz] [--keep DIR]

big9 holds nine news sites' pages of 2005, 2009, 2013 and 2017 (the year is the id's prefix); the sites were
redesigned between those years. The synthetic URLs (http://host/2005/slug.htm) lose their year segment, so that
a site's pages of every year fall under one URL group as a real recrawl's would; real URLs are kept as they are.
Each year is one crawl file (written to a temp folder: the corpus's licences keep it out of the project).

Measured, in the same run:
  replay    `recrawl --retire-missing` of each year in turn into one database (the first year into an empty one),
            then a second pass over the same crawl (which must change nothing)
  scratch   ingest + build + extract of that year alone into a fresh database (the core pipeline)
Prints, per year: the sites whose templates drifted (a new version learned from the recent pages) or that were
learned as new sites; F1 of the year's pages (shared/eval/score.py) for replay and scratch, and their difference;
first-pass and second-pass times and their ratio.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from templater import pipeline, recrawl  # noqa: E402
from templater.grouping import host_of  # noqa: E402

SHARED = ROOT.parent / "shared"
YEARS = ("2005", "2009", "2013", "2017")
SYNTHETIC_YEAR = re.compile(r"^(https?://[^/]+)/(?:2005|2009|2013|2017)/")


def write_crawls(corpus: Path, folder: Path) -> dict[str, tuple[Path, Path]]:
    """Year -> (crawl file, gold file) of that year's pages."""
    with gzip.open(corpus, "rt", encoding="utf-8") as f:
        records = [json.loads(line) for line in f if line.strip()]
    out = {}
    for year in YEARS:
        mine = [r for r in records if r["id"].startswith(year + "_")]
        crawl, gold = folder / f"crawl-{year}.jsonl", folder / f"gold-{year}.jsonl"
        with open(crawl, "w", encoding="utf-8") as c, open(gold, "w", encoding="utf-8") as g:
            for r in mine:
                url = SYNTHETIC_YEAR.sub(r"\1/", r["url"]) if r.get("url_synthetic") else r["url"]
                c.write(json.dumps({"id": r["id"], "url": url, "html": r["html"]}) + "\n")
                g.write(json.dumps({"id": r["id"], "site": r["site"], "gold": r["gold"]}) + "\n")
        out[year] = (crawl, gold)
    return out


def score(gold: Path, predictions: list[dict], folder: Path, name: str) -> float:
    pred = folder / f"pred-{name}.jsonl"
    with open(pred, "w", encoding="utf-8") as f:
        for p in predictions:
            f.write(json.dumps(p, ensure_ascii=False) + "\n")
    done = subprocess.run([sys.executable, str(SHARED / "eval" / "score.py"), str(gold), str(pred)], check=True,
                          capture_output=True, text=True)
    last = done.stdout.strip().splitlines()[-1]
    return float(dict(part.split("=") for part in last.split())["f1"])


def stored_texts(db, ids: set[str]) -> list[dict]:
    return [{"id": pid, "text": text} for pid, text in db.execute("SELECT page_id, text FROM extractions")
            if pid in ids]


def year_ids(crawl: Path) -> set[str]:
    with open(crawl, encoding="utf-8") as f:
        return {json.loads(line)["id"] for line in f}


def learned_since(db, template_id: int) -> dict[str, list[str]]:
    """Host -> what the run learned: "drift" or "new" per template version stored after ``template_id``."""
    out: dict[str, list[str]] = defaultdict(list)
    for site, reason in db.execute("SELECT site, reason FROM templates WHERE id > ? ORDER BY id", [template_id]):
        out[host_of("http://" + site)].append("drift" if reason.startswith("drift") else "new")
    return out


def scratch(crawl: Path, folder: Path, year: str) -> tuple[list[dict], float]:
    db = pipeline.open_store(folder / f"scratch-{year}.db")
    start = time.perf_counter()
    pipeline.ingest(db, [crawl])
    pipeline.build(db)
    predictions = [{"id": r.id, "text": r.text} for r in pipeline.extract(db)]
    return predictions, time.perf_counter() - start


def replay(crawls: dict[str, tuple[Path, Path]], folder: Path) -> None:
    db = pipeline.open_store(folder / "replay.db")
    print(f"{'year':<5} {'pages':>5} {'F1 replay':>9} {'F1 scratch':>10} {'diff':>7} {'pass 1 s':>8} {'pass 2 s':>8} "
          f"{'ratio':>6}  2nd pass changes / drift detected (sites) / learned as new sites")
    for year in YEARS:
        crawl, gold = crawls[year]
        before = db.execute("SELECT coalesce(max(id), 0) FROM templates").fetchone()[0]
        start = time.perf_counter()
        recrawl.recrawl(db, [crawl], retire_missing=True)
        first = time.perf_counter() - start
        learned = learned_since(db, before)
        ids = year_ids(crawl)
        f1_replay = score(gold, stored_texts(db, ids), folder, f"replay-{year}")
        start = time.perf_counter()
        again = recrawl.recrawl(db, [crawl], retire_missing=True)
        second = time.perf_counter() - start
        changes = {k: v for k, v in again.counts.items() if k != "unchanged"}
        predictions, _ = scratch(crawl, folder, year)
        f1_scratch = score(gold, predictions, folder, f"scratch-{year}")
        drift = ", ".join(sorted(h for h, kinds in learned.items() if "drift" in kinds)) or "-"
        new = ", ".join(sorted(h for h, kinds in learned.items() if "drift" not in kinds)) or "-"
        print(f"{year:<5} {len(ids):>5} {f1_replay:9.4f} {f1_scratch:10.4f} {f1_replay - f1_scratch:+7.4f} "
              f"{first:8.2f} {second:8.3f} {first / second:6.1f}  {json.dumps(changes) if changes else 'none'} / "
              f"drift: {drift} / new: {new}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=SHARED / "corpus" / "big9" / "pages.jsonl.gz")
    parser.add_argument("--keep", type=Path, help="write crawls, databases and predictions here (default: a temp "
                                                  "folder, removed)")
    args = parser.parse_args()
    if not args.corpus.exists():
        print(f"no corpus at {args.corpus}: give --corpus (big9's pages.jsonl.gz)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        replay(write_crawls(args.corpus, folder), folder)
    return 0


if __name__ == "__main__":
    sys.exit(main())
