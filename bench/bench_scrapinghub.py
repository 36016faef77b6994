#!/usr/bin/env python3
"""ScrapingHub's article-extraction-benchmark measure on the dev corpus's ScrapingHub pages, templater against
trafilatura in the same run; and how often the headline (``title``) is found exactly.

    python bench/bench_scrapinghub.py [--pages FILE] [--headlines SUITE|none] [--bootstrap N]

Body (``--pages``, default ../shared/corpus/scrapinghub/pages.jsonl.gz): `templater run` on the pages, as a user
runs it (a fresh database, a subprocess), and trafilatura.extract (comments excluded) on the same pages. Both are
scored the way the benchmark describes its evaluation: the article body (gold: the body without its headline; the
prediction: ``text``, the headline being ``title``) cut into word tokens (``\\w+``, lower-cased), the set of its
4-token shingles compared with the gold's: per page precision = shared / predicted shingles, recall = shared /
gold shingles; precision and recall averaged over pages, F1 their harmonic mean, with the standard deviation of
F1 over bootstrap resamplings of the pages; accuracy is the share of pages whose shingle set equals the gold's.
The shared bag-of-tokens score (../shared/eval/score.py) is printed beside it.

Headlines (``--headlines``, default the ``all`` suite): templater's ``title`` and trafilatura's metadata title on
the pages of the suite that have an <h1> or an og:title and whose headline is known. Where the gold text holds
the headline (every dataset but ScrapingHub), the headline is the annotators': one of the gold's first
GOLD_HEADLINE_LINES lines that is the og:title, the <title> (as it is, less its first or last part, or its
longest part: "Headline | Site") or an <h1>; a page whose gold has no such line is left out. On ScrapingHub
pages (gold without headline) the og:title's forms and the <h1>s that they or the <title> name are the headline.
A title matches when, with Unicode, case, quotes, dashes and whitespace normalised, it equals the headline.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import re
import subprocess
import sys
import tempfile
import unicodedata
from pathlib import Path

from lxml import etree, html

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
sys.path.insert(0, str(SHARED / "eval"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from suites import suite_file  # noqa: E402

SHINGLE = 4
TOKEN = re.compile(r"\w+")
SEPARATOR = re.compile(r"\s+(?:\||-|::|•|·|»)\s+")
GOLD_WITHOUT_HEADLINE = {"scrapinghub"}
GOLD_HEADLINE_LINES = 5  # the annotated headline is looked for in the gold's first lines
QUOTES = str.maketrans({"‘": "'", "’": "'", "‚": "'", "“": '"', "”": '"', "„": '"', "«": '"', "»": '"',
                        "–": "-", "—": "-", "‐": "-", "‑": "-", "\xa0": " "})


def shingles(text: str) -> set[tuple[str, ...]]:
    words = TOKEN.findall((text or "").lower())
    if len(words) < SHINGLE:
        return {tuple(words)} if words else set()
    return {tuple(words[i:i + SHINGLE]) for i in range(len(words) - SHINGLE + 1)}


def page_figures(predicted: str, gold: str) -> tuple[float, float, bool]:
    """(precision, recall, exact) of one page's 4-shingle sets."""
    pred, true = shingles(predicted), shingles(gold)
    shared = len(pred & true)
    precision = shared / len(pred) if pred else 1.0
    recall = shared / len(true) if true else 1.0
    return precision, recall, pred == true


def summarise(rows: list[tuple[float, float, bool]], bootstrap: int) -> dict:
    def f1_of(sample) -> float:
        p = sum(r[0] for r in sample) / len(sample)
        r = sum(r[1] for r in sample) / len(sample)
        return 2 * p * r / (p + r) if p + r else 0.0

    rng = random.Random(0)
    f1s = [f1_of([rng.choice(rows) for _ in rows]) for _ in range(bootstrap)]
    mean = sum(f1s) / len(f1s) if f1s else 0.0
    spread = (sum((x - mean) ** 2 for x in f1s) / len(f1s)) ** 0.5 if f1s else 0.0
    return {"pages": len(rows), "f1": f1_of(rows), "f1_std": spread,
            "precision": sum(r[0] for r in rows) / len(rows), "recall": sum(r[1] for r in rows) / len(rows),
            "accuracy": sum(r[2] for r in rows) / len(rows)}


def read(path: Path) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def run_templater(pages: Path, workdir: Path) -> dict[str, dict]:
    """`templater run` as a user runs it; the predictions by id."""
    out = workdir / "templater.jsonl"
    subprocess.run([sys.executable, str(ROOT / "cli.py"), "run", str(pages), "--db", str(workdir / "bench.db"),
                    "--output", str(out), "--quiet", "--no-index"], check=True)
    with open(out, encoding="utf-8") as f:
        return {r["id"]: r for r in map(json.loads, f)}


def run_trafilatura(records: list[dict]) -> dict[str, dict]:
    """trafilatura's body (its default text) and its metadata's title."""
    import trafilatura

    out = {}
    for r in records:
        try:
            found = trafilatura.bare_extraction(r["html"], url=r["url"], include_comments=False, with_metadata=True)
            found = found.as_dict() if hasattr(found, "as_dict") else (found or {})
        except Exception:  # a peer failing on a page counts as an empty extraction
            found = {}
        out[r["id"]] = {"id": r["id"], "title": found.get("title"), "text": found.get("text") or ""}
    return out


def normal(text: str | None) -> str:
    text = unicodedata.normalize("NFKC", text or "").translate(QUOTES).casefold()
    return " ".join(text.split()).strip(" ¶#")


def variants(title: str) -> set[str]:
    """A declared title as it is, less its last or first part (a site name), and its longest part."""
    parts = [p for p in SEPARATOR.split(title) if p]
    out = {title}
    if len(parts) > 1:
        out |= {max(parts, key=len), normal(" - ".join(parts[:-1])), normal(" - ".join(parts[1:]))}
    return out


def accepted_titles(record: dict) -> set[str] | None:
    """The headlines a title may match on this page (see the module's docstring); None for a page without h1 and
    og:title, or whose headline is not determined."""
    try:
        root = html.fromstring(record["html"])
    except (etree.ParserError, ValueError):
        return None
    og = [normal(t) for t in root.xpath("//meta[@property='og:title' or @name='og:title']/@content")]
    h1s = [t for t in (normal(e.text_content()) for e in root.iter("h1")) if t]
    if not (og and og[0]) and not h1s:
        return None
    declared = variants(og[0]) if og and og[0] else set()
    titles = [normal(t) for t in root.xpath("//title/text()")]
    candidates = declared | (variants(titles[0]) if titles and titles[0] else set()) | set(h1s)
    if record.get("dataset") not in GOLD_WITHOUT_HEADLINE:  # the annotators' headline: a gold line up top
        lines = [normal(line) for line in (record.get("gold") or "").split("\n")[:GOLD_HEADLINE_LINES]]
        return {line for line in lines if line in candidates} or None
    confirmed = {t for t in h1s if t in candidates - set(h1s)}  # an <h1> that og:title or <title> names
    return (declared | confirmed) or None


def headline_rates(records: list[dict], predictions: dict[str, dict[str, dict]],
                   by_dataset: dict | None = None) -> tuple[int, dict[str, float]]:
    """(pages counted, each system's exact-match rate); ``by_dataset``, a dict, gets dataset -> [pages, hits of
    each system in the order of ``predictions``]."""
    counted = 0
    hits = dict.fromkeys(predictions, 0)
    for r in records:
        accepted = accepted_titles(r)
        if not accepted:
            continue
        counted += 1
        row = by_dataset.setdefault(r.get("dataset") or "-", [0] + [0] * len(predictions)) if by_dataset is not None \
            else [0] * (len(predictions) + 1)
        row[0] += 1
        for i, (name, predicted) in enumerate(predictions.items(), 1):
            hit = normal((predicted.get(r["id"]) or {}).get("title")) in accepted
            hits[name] += hit
            row[i] += hit
    return counted, {name: n / max(counted, 1) for name, n in hits.items()}


def body_table(records: list[dict], predictions: dict[str, dict[str, dict]], bootstrap: int) -> None:
    import score

    print(f"body: {len(records)} ScrapingHub pages; 4-shingle measure of the benchmark (gold: body without headline)")
    print(f"{'system':12} {'F1':>14} {'precision':>9} {'recall':>7} {'accuracy':>8}   score.py P/R/F1")
    for name, predicted in predictions.items():
        rows = [page_figures(predicted.get(r["id"], {}).get("text") or "", r["gold"]) for r in records]
        s = summarise(rows, bootstrap)
        bag = [score.prf(score.scored_text(predicted.get(r["id"], {}), r), r["gold"]) for r in records]
        p, rc, f = (sum(x[i] for x in bag) / len(bag) for i in range(3))
        print(f"{name:12} {s['f1']:.3f} ± {s['f1_std']:.3f} {s['precision']:9.3f} {s['recall']:7.3f} "
              f"{s['accuracy']:8.3f}   {p:.3f} {rc:.3f} {f:.3f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=Path, default=SHARED / "corpus" / "scrapinghub" / "pages.jsonl.gz")
    parser.add_argument("--headlines", default="all", help="suite for the headline rate (sites|all|single|none)")
    parser.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamplings for F1's spread")
    args = parser.parse_args()
    records = [r for r in read(args.pages) if (r.get("gold") or "").strip()]
    with tempfile.TemporaryDirectory() as tmp:
        body = {"templater": run_templater(args.pages, Path(tmp)), "trafilatura": run_trafilatura(records)}
    body_table(records, body, args.bootstrap)
    if args.headlines != "none":
        suite = suite_file(args.headlines)
        pages = read(suite)
        with tempfile.TemporaryDirectory() as tmp:
            titles = {"templater": run_templater(suite, Path(tmp)), "trafilatura": run_trafilatura(pages)}
        datasets: dict = {}
        counted, rates = headline_rates(pages, titles, datasets)
        print(f"headline: {counted} of {len(pages)} pages of the {args.headlines} suite have an <h1> or og:title "
              "and a known headline; exact match " + ", ".join(f"{name} {rate:.3f}" for name, rate in rates.items()))
        for dataset, (n, *hits) in sorted(datasets.items()):
            print(f"  {dataset:16} {n:5} pages: " + ", ".join(f"{name} {h / n:.3f}" for name, h in zip(titles, hits)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
