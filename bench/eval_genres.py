#!/usr/bin/env python3
"""The single-page classifier per genre on sites it was not trained on, beside trafilatura, in the same run.

    python bench/eval_genres.py HELDOUT.jsonl.gz [--weights NAME=PATH ...] [--news-suite SINGLE] [--by-site]
                                [--no-news] [--no-peer] [--out DIR]

HELDOUT is bench/build_training_set.py's heldout.jsonl.gz (docs, forum, product and encyclopedia sites kept out
of training). The news row is the dev corpus's `single` suite without its scrapinghub pages (the news pages the
shipped weights were trained on): news and blog pages of sites with fewer than three pages. Every page goes
through `auto` (fallback.select_blocks, no template) with each weights file (default: the shipped one) and
through trafilatura (comments excluded); each method's predictions per genre are scored by
../shared/eval/score.py, so every figure is that script's (bag-of-tokens P/R/F1, macro over pages).
"""

from __future__ import annotations

import argparse
import gzip
import json
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from templater import fallback  # noqa: E402
from templater.blocks import segment  # noqa: E402
from templater.parse import parse_html  # noqa: E402
from templater.datatypes import Page  # noqa: E402

DEFAULT_SCORER = REPO.parent / "shared" / "eval" / "score.py"
GENRE_ORDER = ("news", "docs", "forum", "product", "encyclopedia")
NEWS_EXCLUDE = "scrapinghub/"  # the trained-on news pages of the single suite


def read_records(heldout: Path, news_suite: Path | None) -> dict[str, list[dict]]:
    """Held-out pages with gold, by genre (news from the single suite, less the trained-on pages)."""
    by_genre: dict[str, list[dict]] = defaultdict(list)
    if news_suite is not None:
        for record in _read(news_suite):
            if not record["id"].startswith(NEWS_EXCLUDE):
                by_genre["news"].append(record)
    for record in _read(heldout):
        by_genre[record["genre"]].append(record)
    return by_genre


def _read(path: Path):
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        for line in handle:
            record = json.loads(line)
            if (record.get("gold") or "").strip():
                yield record


def auto_method(weights):
    def run(record: dict) -> str:
        root = parse_html(record["html"])
        if root is None:
            return ""
        seg = segment(root, Page(record["id"], record["url"], record["html"]))
        return fallback.extract_text(seg, fallback.select_blocks(seg, method="auto", weights=weights))
    return run


def trafilatura_method(record: dict) -> str:
    import trafilatura
    try:
        return trafilatura.extract(record["html"], url=record["url"], include_comments=False) or ""
    except Exception:  # a peer failing on a page counts as an empty extraction
        return ""


def score(scorer: Path, gold: Path, predictions: Path) -> dict:
    result = subprocess.run([sys.executable, str(scorer), str(gold), str(predictions), "--json"],
                            capture_output=True, text=True, check=True)
    return json.loads(result.stdout[: result.stdout.rindex("}") + 1])


def _cell(figures: dict) -> str:
    return f"{figures['precision']:.3f} {figures['recall']:.3f} {figures['f1']:.3f}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("heldout", type=Path)
    parser.add_argument("--weights", action="append", default=[],
                        help="NAME=PATH of a weights file to score (repeatable; default: the shipped weights)")
    parser.add_argument("--news-suite", type=Path, default=None,
                        help="the single suite (default: cut from ../shared/corpus into a temp folder)")
    parser.add_argument("--no-news", action="store_true", help="leave the news row out")
    parser.add_argument("--no-peer", action="store_true", help="leave trafilatura out")
    parser.add_argument("--scorer", type=Path, default=DEFAULT_SCORER)
    parser.add_argument("--by-site", action="store_true", help="also a row per site (not for news)")
    parser.add_argument("--out", type=Path, default=None, help="keep gold and predictions in this folder")
    args = parser.parse_args(argv)
    methods = {}
    for spec in args.weights or ["shipped=" + ""]:
        name, _, path = spec.partition("=")
        methods[name] = auto_method(fallback.load_weights(path) if path else fallback.default_weights())
    if not args.no_peer:
        methods["trafilatura"] = trafilatura_method
    news = None
    if not args.no_news:
        from suites import suite_file
        news = args.news_suite or suite_file("single")
    by_genre = read_records(args.heldout, news)
    out = args.out or Path(tempfile.mkdtemp(prefix="eval-genres-"))
    out.mkdir(parents=True, exist_ok=True)
    print(f"{'genre':13} {'pages':>5} {'sites':>5}  " + "  ".join(f"{m:>26}" for m in methods))
    print(f"{'':13} {'':5} {'':5}  " + "  ".join(f"{'P     R     F1':>26}" for _ in methods))
    for genre in sorted(by_genre, key=lambda g: GENRE_ORDER.index(g) if g in GENRE_ORDER else 99):
        records = by_genre[genre]
        gold = out / f"{genre}.gold.jsonl"
        with open(gold, "w", encoding="utf-8") as handle:
            for r in records:
                handle.write(json.dumps({"id": r["id"], "site": r["site"], "gold": r["gold"],
                                         "dataset": r.get("dataset", genre)}, ensure_ascii=False) + "\n")
        cells, by_site = [], []
        for name, run in methods.items():
            predictions = out / f"{genre}.{name}.jsonl"
            with open(predictions, "w", encoding="utf-8") as handle:
                for r in records:
                    handle.write(json.dumps({"id": r["id"], "text": run(r)}, ensure_ascii=False) + "\n")
            figures = score(args.scorer, gold, predictions)
            cells.append(_cell(figures))
            by_site.append(figures["sites"])
        sites = len({r["site"] for r in records})
        print(f"{genre:13} {len(records):5} {sites:5}  " + "  ".join(f"{c:>26}" for c in cells), flush=True)
        if args.by_site and genre != "news":
            for site in by_site[0]:
                print(f"  {site[:31]:31}  " + "  ".join(f"{_cell(figures[site]):>26}" for figures in by_site))
    return 0


if __name__ == "__main__":
    sys.exit(main())
