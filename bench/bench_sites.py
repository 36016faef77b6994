#!/usr/bin/env python3
"""Quality of `templater run` on a dev-corpus suite, per dataset or site, with trafilatura on the same pages.

    python bench/bench_sites.py [--suite sites|all|single|PATH] [--by dataset|site] [--template-alone]
                                [--no-peer] [--out DIR] [--peer-from DIR]

A named suite is cut from ../shared/corpus by ../shared/eval/suites.py (into a temp folder when missing); a PATH
is any suite file in the corpus format (the documentation suite of bench/build_docs_suite.py). templater
ingests, learns and extracts the whole suite in one fresh database, exactly as `templater run` does; with
--template-alone it extracts the same pages again with the template's rules alone (`--fallback none`).
trafilatura (comments excluded, with its metadata's title) extracts the same pages. Every prediction (title and
text) is scored with ../shared/eval/score.py, overall and per dataset (or per site): title + text, or the body
alone where the gold is the body alone; the table prints P/R/F1 and the F1 difference.
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


def run_templater(suite: Path, out: Path, workdir: Path, *, alone: Path | None = None) -> None:
    """`templater run` into ``out``; with ``alone``, the template-alone extraction of the same store too."""
    db = pipeline.open_store(workdir / "bench.db")
    pipeline.ingest(db, [suite])
    pipeline.build(db)
    for path, method in ((out, "auto"), (alone, "none")):
        if path is None:
            continue
        with open(path, "w", encoding="utf-8") as f:
            for result in pipeline.extract(db, method=method):
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


def per_dataset(records: list[dict], predictions: Path, *, by: str = "dataset"
                ) -> dict[str, tuple[float, float, float, int]]:
    import score

    predicted = {str(r["id"]): r for r in score.read_jsonl(str(predictions))}
    rows = defaultdict(list)
    for r in records:
        if (r.get("gold") or "").strip():  # title + text, or the body alone where the gold is (score.py decides)
            figures = score.prf(score.scored_text(predicted.get(r["id"], {}), r), r["gold"])
            rows[r.get(by) or "?"].append(figures)
            rows["(all)"].append(figures)
    return {k: tuple(sum(x[i] for x in v) / len(v) for i in range(3)) + (len(v),) for k, v in sorted(rows.items())}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--suite", default="sites", help="sites, all, single, or the path of a suite file")
    parser.add_argument("--by", choices=("dataset", "site"), default="dataset", help="rows per dataset or site")
    parser.add_argument("--template-alone", action="store_true",
                        help="also score the template's rules alone (`--fallback none`) on the same store")
    parser.add_argument("--no-peer", action="store_true", help="templater only")
    parser.add_argument("--out", type=Path, default=None, help="keep the predictions in this folder")
    parser.add_argument("--peer-from", type=Path, default=None,
                        help="score trafilatura's predictions kept by an earlier run's --out in this folder "
                             "(its trafilatura.jsonl) instead of running it again on the same suite")
    args = parser.parse_args()
    suite = Path(args.suite) if Path(args.suite).is_file() else suite_file(args.suite)
    with gzip.open(suite, "rt", encoding="utf-8") as f:
        records = [json.loads(line) for line in f if line.strip()]
    with tempfile.TemporaryDirectory() as tmp:
        out = args.out or Path(tmp)
        out.mkdir(parents=True, exist_ok=True)
        alone = out / "template-alone.jsonl" if args.template_alone else None
        run_templater(suite, out / "templater.jsonl", Path(tmp), alone=alone)
        ours = per_dataset(records, out / "templater.jsonl", by=args.by)
        only = per_dataset(records, alone, by=args.by) if alone else {}
        peer = {}
        if args.peer_from is not None:
            peer = per_dataset(records, args.peer_from / "trafilatura.jsonl", by=args.by)
        elif not args.no_peer:
            run_trafilatura(records, out / "trafilatura.jsonl")
            peer = per_dataset(records, out / "trafilatura.jsonl", by=args.by)
    print(f"suite={args.suite} pages={len(records)} (scored by shared/eval/score.py)")
    print(f"{args.by:22} {'pages':>5}  {'templater P/R/F1':>22}  {'trafilatura P/R/F1':>22}  {'F1 diff':>7}"
          + (f"  {'template alone P/R/F1':>22}" if only else ""))
    for name, (p, r, f1, n) in ours.items():
        other = peer.get(name)
        theirs = f"{other[0]:.3f} {other[1]:.3f} {other[2]:.3f}" if other else "-"
        diff = f"{f1 - other[2]:+.3f}" if other else ""
        line = f"{name[:22]:22} {n:5}  {p:.3f} {r:.3f} {f1:.3f}{'':4}  {theirs:>22}  {diff:>7}"
        if only:
            line += "  {:>22}".format("{:.3f} {:.3f} {:.3f}".format(*only[name][:3]))
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
