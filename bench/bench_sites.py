#!/usr/bin/env python3
"""Quality of `templater run` on a dev-corpus suite, per dataset, with trafilatura on the same pages.

    python bench/bench_sites.py [--suite sites|all|single] [--no-peer] [--out DIR]

The suite is cut from ../shared/corpus by ../shared/eval/suites.py (into a temp folder when missing). templater
ingests, learns and extracts the whole suite in one fresh database, exactly as `templater run` does; trafilatura
(comments excluded, with its metadata's title) extracts the same pages. Both predictions (title and text) are
scored by ../shared/eval/score.py, overall and per dataset (title + text, or the body alone where the gold is
the body alone); the table prints P/R/F1 and the F1 difference.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(SHARED / "eval"))

from templater import pipeline  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from suites import suite_file  # noqa: E402


def run_templater(suite: Path, out: Path, workdir: Path) -> None:
    db = pipeline.open_store(workdir / "bench.db")
    pipeline.ingest(db, [suite])
    pipeline.build(db)
    with open(out, "w", encoding="utf-8") as f:
        for result in pipeline.extract(db):
            f.write(json.dumps({"id": result.id, "title": result.title, "text": result.text}) + "\n")


def run_trafilatura(records: list[dict], out: Path) -> None:
    """trafilatura's body text and its metadata's title (the headline it finds), as templater gives both."""
    import trafilatura

    with open(out, "w", encoding="utf-8") as f:
        for r in records:
            try:
                found = trafilatura.extract(r["html"], url=r["url"], include_comments=False, output_format="json",
                                            with_metadata=True)
                found = json.loads(found) if found else {}
            except Exception:  # a peer failing on a page counts as an empty extraction
                found = {}
            f.write(json.dumps({"id": r["id"], "title": found.get("title"), "text": found.get("text") or ""}) + "\n")


def per_dataset(records: list[dict], predictions: Path) -> dict[str, tuple[float, float, float, int]]:
    import score

    predicted = {str(r["id"]): r for r in score.read_jsonl(str(predictions))}
    rows = defaultdict(list)
    for r in records:
        if (r.get("gold") or "").strip():  # title + text, or the body alone where the gold is (score.py decides)
            figures = score.prf(score.scored_text(predicted.get(r["id"], {}), r), r["gold"])
            rows[r["dataset"]].append(figures)
            rows["(all)"].append(figures)
    return {k: tuple(sum(x[i] for x in v) / len(v) for i in range(3)) + (len(v),) for k, v in sorted(rows.items())}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--suite", default="sites")
    parser.add_argument("--no-peer", action="store_true", help="templater only")
    parser.add_argument("--out", type=Path, default=None, help="keep the predictions in this folder")
    args = parser.parse_args()
    suite = suite_file(args.suite)
    with gzip.open(suite, "rt", encoding="utf-8") as f:
        records = [json.loads(line) for line in f if line.strip()]
    with tempfile.TemporaryDirectory() as tmp:
        out = args.out or Path(tmp)
        out.mkdir(parents=True, exist_ok=True)
        run_templater(suite, out / "templater.jsonl", Path(tmp))
        ours = per_dataset(records, out / "templater.jsonl")
        peer = {}
        if not args.no_peer:
            run_trafilatura(records, out / "trafilatura.jsonl")
            peer = per_dataset(records, out / "trafilatura.jsonl")
    print(f"suite={args.suite} pages={len(records)} (scored by shared/eval/score.py)")
    print(f"{'dataset':18} {'pages':>5}  {'templater P/R/F1':>22}  {'trafilatura P/R/F1':>22}  {'F1 diff':>7}")
    for name, (p, r, f1, n) in ours.items():
        other = peer.get(name)
        theirs = f"{other[0]:.3f} {other[1]:.3f} {other[2]:.3f}" if other else "-"
        diff = f"{f1 - other[2]:+.3f}" if other else ""
        print(f"{name:18} {n:5}  {p:.3f} {r:.3f} {f1:.3f}{'':4}  {theirs:>22}  {diff:>7}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
