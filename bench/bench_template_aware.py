#!/usr/bin/env python3
"""Template-aware near-duplicates: index extracted text versus whole-page text, judged on the gold texts.

    python bench/bench_template_aware.py [SUITE.jsonl.gz] [--whole html-text|blocks] [--limit N] [--keep DIR]

Default suite: the dev corpus's ``sites`` suite (/work/data/suites/sites.jsonl.gz, or cut by
../shared/eval/suites.py into a temp folder when missing). Two databases over the same pages:

  extracted  what ``templater run`` does, through the library: ``pipeline.open_store``, ``ingest``, ``build``,
             ``extract(db, index=True)`` (the extracted main text of every page goes into the index)
  whole      ``dedup.index_texts`` of each page's whole text: ``--whole html-text`` (default) is
             ``html_text.extract_text`` of the record's HTML; ``--whole blocks`` joins every block templater
             segments the stored page into (its own view of the page, before any template is applied)

Both use the index's default settings (word 5-grams, 128 slots, 16 x 6 bands, verification at 0.8). For every
pair of pages that ends up in one cluster, the word-5-gram Jaccard of their GOLD texts (templater's normalization,
64-bit shingle hashes) says what they are:

  different articles   gold Jaccard < 0.5: pages merged by their shared template text (what must not happen)
  true duplicates      gold Jaccard >= 0.8: found (out of every gold pair at or above 0.8, found exhaustively)

Pages whose gold text has no shingle are counted apart. Pairs in a cluster are all pairs of its members (clusters
are connected components, so two members need not be a verified pair themselves); the verified pairs
(``dedup.iter_similar_pairs``) are counted the same way.
"""

from __future__ import annotations

import argparse
import gzip
import json
import shlex
import sys
import tempfile
import time
from itertools import combinations
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from neardup import exact_pairs, shingle_sets  # noqa: E402
from suites import suite_file  # noqa: E402

from store import lsh  # noqa: E402
from store import pages as page_store  # noqa: E402
from templater import dedup, pipeline  # noqa: E402
from templater.shingles import ShingleSettings  # noqa: E402
from templater.datatypes import Skip  # noqa: E402

SUITES = ROOT.parent / "data" / "suites"
DIFFERENT = 0.5  # gold Jaccard below this: two different articles
DUPLICATE = 0.8  # gold Jaccard at or above this: true near-duplicates
EXAMPLES = 5


def sites_suite() -> Path:
    """/work/data/suites/sites.jsonl.gz, else the suite cut from ../shared/corpus into a temp folder."""
    path = SUITES / "sites.jsonl.gz"
    return path if path.exists() else suite_file("sites")


def load(path: Path, limit: int | None) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        records = [json.loads(line) for line in f if line.strip()]
    return records[:limit] if limit else records


def run_extracted(db_path: Path, suite: Path) -> float:
    """`templater run SUITE --db DB` (index on) through the library; returns seconds."""
    began = time.perf_counter()
    db = pipeline.open_store(db_path)
    pipeline.ingest(db, [suite])
    pipeline.build(db)
    for _ in pipeline.extract(db, index=True):
        pass
    db.conn.close()
    return time.perf_counter() - began


def html_text_items(records: list[dict]) -> list[tuple[str, str, str]]:
    import html_text

    return [(r["id"], r["url"], html_text.extract_text(r["html"]) if r["html"].strip() else "") for r in records]


def block_items(extracted_db: Path) -> list[tuple[str, str, str]]:
    """Every block's text of each stored page (as ingested into the extracted database), joined."""
    db = pipeline.open_store(extracted_db)
    ids = [pid for pid, _, _ in page_store.iter_page_keys(db)]
    items = []
    for stored in page_store.load_pages(db, ids):
        seg = pipeline.stored_segment(stored)
        text = "" if isinstance(seg, Skip) else "\n".join(b.text for b in seg.blocks)
        items.append((stored.id, stored.url, text))
    db.conn.close()
    return items


def run_whole(db_path: Path, items: list[tuple[str, str, str]]) -> float:
    began = time.perf_counter()
    db = pipeline.open_store(db_path)
    dedup.index_texts(db, items)
    db.conn.close()
    return time.perf_counter() - began


def cluster_pairs(db_path: Path) -> tuple[set[tuple[str, str]], set[tuple[str, str]], int]:
    """(every pair of pages in one cluster, every verified pair, pages indexed), as sorted id pairs."""
    db = pipeline.open_store(db_path, create=False)
    in_cluster = {tuple(sorted((a.page_id, b.page_id)))
                  for _, members in lsh.iter_clusters(db) for a, b in combinations(members, 2)}
    verified = {tuple(sorted((p["a"], p["b"]))) for p in dedup.iter_similar_pairs(db)}
    pages = lsh.stats(db)["pages"]
    db.conn.close()
    return in_cluster, verified, pages


class Gold:
    """Gold word-5-gram sets of every page, and every gold pair at or above DUPLICATE."""

    def __init__(self, records: list[dict]) -> None:
        self.ids = [r["id"] for r in records]
        self.urls = {r["id"]: r["url"] for r in records}
        self.position = {pid: i for i, pid in enumerate(self.ids)}
        self.sets = shingle_sets([r.get("gold") or "" for r in records], ShingleSettings(hash_bits=64))
        self.duplicates = {tuple(sorted((self.ids[a], self.ids[b]))) for a, b in exact_pairs(self.sets, DUPLICATE)}

    def jaccard(self, a: str, b: str) -> float | None:
        x, y = self.sets[self.position[a]], self.sets[self.position[b]]
        if not len(x) or not len(y):
            return None
        inter = len(np.intersect1d(x, y, assume_unique=True))
        return inter / (len(x) + len(y) - inter)


def judge(pairs: set[tuple[str, str]], gold: Gold) -> dict:
    """Counts of ``pairs`` by gold Jaccard, and the worst merges (lowest gold Jaccard) as examples."""
    scored = [(gold.jaccard(a, b), a, b) for a, b in pairs]
    known = [s for s in scored if s[0] is not None]
    different = sorted(s for s in known if s[0] < DIFFERENT)
    return {"pairs": len(pairs), "different": len(different),
            "between": sum(DIFFERENT <= s[0] < DUPLICATE for s in known),
            "duplicates": len(pairs & gold.duplicates), "no_gold": len(scored) - len(known),
            "examples": different[:EXAMPLES], "missed": sorted(gold.duplicates - pairs)[:EXAMPLES]}


def report(name: str, seconds: float, pages: int, in_cluster: dict, verified: dict, gold: Gold) -> None:
    print(f"{name}: {pages:,} pages indexed in {seconds:.1f} s (text and index)")
    for label, c in (("pairs in one cluster", in_cluster), ("verified pairs", verified)):
        print(f"  {label:21s} {c['pairs']:6,}: different articles (gold J < {DIFFERENT}) {c['different']:5,}; "
              f"true duplicates found (gold J >= {DUPLICATE}) {c['duplicates']:4,} of {len(gold.duplicates):,}; "
              f"gold J in [{DIFFERENT}, {DUPLICATE}) {c['between']:,}; no gold text {c['no_gold']:,}")
    for j, a, b in in_cluster["examples"]:
        same = " (one URL: two records of one page)" if gold.urls[a] == gold.urls[b] else ""
        print(f"    different articles, e.g. gold J {j:.2f}: {a}  {b}{same}")
    for a, b in in_cluster["missed"]:
        print(f"    true duplicate missed: {a}  {b} (gold J {gold.jaccard(a, b):.2f})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("suite", nargs="?", type=Path, help="suite file (default: the dev corpus's sites suite)")
    parser.add_argument("--whole", choices=("html-text", "blocks"), default="html-text",
                        help="whole-page text: html_text.extract_text, or every templater block joined")
    parser.add_argument("--limit", type=int, default=None, help="only the first N records (a quick look)")
    parser.add_argument("--keep", type=Path, default=None, help="write both databases into this folder and keep them")
    args = parser.parse_args()
    print("command: python " + " ".join(shlex.quote(a) for a in sys.argv))
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        suite = args.suite or sites_suite()
        records = load(suite, args.limit)
        if args.limit:
            suite = Path(tmp) / "suite.jsonl.gz"
            with gzip.open(suite, "wt", encoding="utf-8") as f:
                f.writelines(json.dumps(r) + "\n" for r in records)
        extracted_db, whole_db = folder / "extracted.db", folder / "whole.db"
        for path in (extracted_db, whole_db):
            if path.exists():
                sys.exit(f"{path} exists: give --keep a new folder")
        gold = Gold(records)
        print(f"{len(records):,} pages from {suite}; {len(gold.duplicates):,} gold pairs with word-5-gram Jaccard "
              f">= {DUPLICATE}")
        extracted_seconds = run_extracted(extracted_db, suite)
        began = time.perf_counter()
        items = html_text_items(records) if args.whole == "html-text" else block_items(extracted_db)
        whole_seconds = time.perf_counter() - began + run_whole(whole_db, items)
        for name, path, seconds in (("extracted text (templater run)", extracted_db, extracted_seconds),
                                    (f"whole-page text ({args.whole})", whole_db, whole_seconds)):
            in_cluster, verified, pages = cluster_pairs(path)
            report(name, seconds, pages, judge(in_cluster, gold), judge(verified, gold), gold)
    return 0


if __name__ == "__main__":
    sys.exit(main())
