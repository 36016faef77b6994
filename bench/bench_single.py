"""Single-page extraction: templater's fallback methods beside peer extractors, measured in the same run.

    python bench/bench_single.py [--suite ../data/suites/single.jsonl.gz] [--limit N] [--methods a,b,...]
                                 [--fdr-q 0.05,0.2] [--template] [--exclude scrapinghub/]

Every method turns each page's HTML string into text (templater's methods include parsing and
segmentation). Each method's predictions are written as JSON Lines and scored by the shared evaluation
script (../shared/eval/score.py), so every figure is that script's. Printed per method: precision, recall
and F1 (macro over pages), pages per second, and both as ratios to trafilatura's.

Peers: trafilatura (comments excluded: the gold holds none), readability-lxml (the summary's text),
goose3, jusText (English stop list), and a plain 0.5 cut on templater's block text density. A peer that is
not installed is reported as missing; a page a peer fails on counts as an empty extraction.

With --template (for the `sites` suite), the suite's pages also go through templater's pipeline in a
temporary store (ingest, build: site templates learned from these pages), and each page is extracted with its
template alone (`template-only`) and with the template plus each single-page method (`template+auto`, ...);
a page no template covers gets the default fallback in every variant. Their pages/s cover extraction (parse,
segment, apply the template, classify), not learning.
"""

from __future__ import annotations

import argparse
import gzip
import json
import logging
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from templater import fallback  # noqa: E402
from templater.blocks import segment  # noqa: E402
from templater.parse import parse_html  # noqa: E402
from templater.datatypes import Page  # noqa: E402

DEFAULT_SUITE = REPO.parent / "data" / "suites" / "single.jsonl.gz"
DEFAULT_SCORER = REPO.parent / "shared" / "eval" / "score.py"
BASELINE = "trafilatura"
PLAIN_DENSITY_CUT = 0.5


def read_pages(path: Path, limit: int | None, exclude: tuple[str, ...] = ()) -> list[dict]:
    """The suite's pages that have gold text (the scorer ignores the others), less ids starting with ``exclude``."""
    pages = []
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        for line in handle:
            record = json.loads(line)
            if (record.get("gold") or "").strip() and not record["id"].startswith(exclude):
                pages.append(record)
                if limit and len(pages) >= limit:
                    break
    return pages


def templater_method(method: str):
    def run(record: dict) -> str:
        seg = _segment(record)
        return fallback.extract_text(seg, fallback.select_blocks(seg, method=method)) if seg else ""
    return run


def plain_density(record: dict) -> str:
    seg = _segment(record)
    if seg is None:
        return ""
    return "\n".join(b.text for b in seg.blocks if b.text_density > PLAIN_DENSITY_CUT)


def _segment(record: dict):
    root = parse_html(record["html"])
    return segment(root, Page(record["id"], record["url"], record["html"])) if root is not None else None


def peer_methods() -> dict:
    """The peers that are installed, by name."""
    peers = {}
    try:
        import trafilatura
        peers["trafilatura"] = lambda r: trafilatura.extract(r["html"], url=r["url"], include_comments=False) or ""
    except ImportError:
        pass
    try:
        import html_text
        from readability import Document
        peers["readability"] = lambda r: html_text.extract_text(Document(r["html"]).summary(html_partial=True))
    except ImportError:
        pass
    try:
        from goose3 import Goose
        goose = Goose()
        peers["goose3"] = lambda r: goose.extract(raw_html=r["html"]).cleaned_text or ""
    except ImportError:
        pass
    try:
        import justext
        stoplist = justext.get_stoplist("English")
        peers["justext"] = lambda r: "\n".join(
            p.text for p in justext.justext(r["html"].encode("utf-8", "replace"), stoplist) if not p.is_boilerplate)
    except ImportError:
        pass
    return peers


def fdr_method(q: float):
    def run(record: dict) -> str:
        seg = _segment(record)
        return fallback.extract_text(seg, fallback.select_blocks(seg, method="fdr", q=q)) if seg else ""
    return run


def all_methods(fdr_levels: list[float]) -> dict:
    methods = {f"templater-{m}": templater_method(m) for m in fallback.METHODS}
    methods.update({f"templater-fdr-q{q:g}": fdr_method(q) for q in fdr_levels if q != fallback.FDR_Q})
    methods["density-0.5"] = plain_density
    methods.update(peer_methods())
    return methods


def run_method(run, pages: list[dict], out: Path) -> tuple[float, int]:
    """Write the method's predictions to ``out``; return (seconds spent extracting, pages that failed)."""
    failures = 0
    spent = 0.0
    with open(out, "w", encoding="utf-8") as handle:
        for record in pages:
            start = time.perf_counter()
            try:
                text = run(record)
            except Exception:  # a peer's crash on one page is its empty extraction, counted
                text = ""
                failures += 1
            spent += time.perf_counter() - start
            handle.write(json.dumps({"id": record["id"], "text": text}, ensure_ascii=False) + "\n")
    return spent, failures


def run_with_templates(pages: list[dict], out: Path) -> tuple[dict[str, float], int]:
    """Learn templates from the pages in a temporary store, then extract every page with its template alone
    and with the template plus each single-page method (a page no template covers gets the default fallback
    in every variant); write each variant's predictions. Returns pages/s per variant (parse, segment, apply,
    classify; not learning) and the number of pages a template covers."""
    from store import pages as page_store
    from templater import pipeline
    from templater.extract import extract_page

    speeds = {}
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "pages.jsonl"
        with open(corpus, "w", encoding="utf-8") as handle:
            for record in pages:
                handle.write(json.dumps({k: record[k] for k in ("id", "url", "html")}, ensure_ascii=False) + "\n")
        db = pipeline.open_store(Path(tmp) / "bench.db")
        pipeline.ingest(db, [corpus])
        pipeline.build(db)
        index = pipeline.TemplateIndex(db)
        stored = list(page_store.load_pages(db, [pid for pid, _, _ in page_store.iter_page_keys(db)]))
    covered = 0
    for method in ("none", *fallback.METHODS):
        name = "template-only" if method == "none" else f"template+{method}"
        start = time.perf_counter()
        results = []
        for page in stored:
            seg = pipeline.stored_segment(page)
            if not hasattr(seg, "blocks"):
                continue
            compiled = index.find(seg, page.site)
            covered += method == "none" and compiled is not None
            results.append(extract_page(seg, compiled, site=page.site, method=method if compiled else "auto"))
        speeds[name] = len(results) / (time.perf_counter() - start)
        with open(out / f"{name}.jsonl", "w", encoding="utf-8") as handle:
            for result in results:
                handle.write(json.dumps({"id": result.id, "text": result.text}, ensure_ascii=False) + "\n")
    return speeds, covered


def score(scorer: Path, gold: Path, predictions: Path) -> dict:
    result = subprocess.run([sys.executable, str(scorer), str(gold), str(predictions), "--json"],
                            capture_output=True, text=True, check=True)
    return json.loads(result.stdout[: result.stdout.rindex("}") + 1])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--suite", type=Path, default=DEFAULT_SUITE)
    parser.add_argument("--scorer", type=Path, default=DEFAULT_SCORER)
    parser.add_argument("--limit", type=int, default=None, help="only the first N pages with gold")
    parser.add_argument("--methods", default="", help="comma-separated subset of the method names")
    parser.add_argument("--exclude", default="", help="comma-separated id prefixes to leave out (scrapinghub/)")
    parser.add_argument("--out", type=Path, default=None, help="keep the predictions in this folder")
    parser.add_argument("--fdr-q", default=str(fallback.FDR_Q),
                        help="comma-separated FDR levels; each other than the default adds a templater-fdr-qX row")
    parser.add_argument("--template", action="store_true",
                        help="also learn site templates from the suite and score template alone and template+method")
    args = parser.parse_args(argv)
    logging.disable(logging.WARNING)  # peers log per-page chatter (dates, languages)
    if not args.suite.exists() or not args.scorer.exists():
        print(f"bench_single: need {args.suite} and {args.scorer} (see README: cutting the suites)", file=sys.stderr)
        return 2
    methods = all_methods([float(q) for q in args.fdr_q.split(",")])
    if args.methods:
        wanted = args.methods.split(",")
        unknown = sorted(set(wanted) - set(methods))
        if unknown:
            print(f"bench_single: unknown or missing methods {unknown}; have {sorted(methods)}", file=sys.stderr)
            return 2
        methods = {name: methods[name] for name in wanted}
    pages = read_pages(args.suite, args.limit, tuple(p for p in args.exclude.split(",") if p))
    out = args.out or Path(tempfile.mkdtemp(prefix="bench_single_"))
    out.mkdir(parents=True, exist_ok=True)
    gold = out / "gold.jsonl"
    with open(gold, "w", encoding="utf-8") as handle:
        for record in pages:
            handle.write(json.dumps({"id": record["id"], "site": record["site"], "gold": record["gold"]},
                                    ensure_ascii=False) + "\n")
    fallback.default_weights()  # load once, outside the timing
    rows = {}
    for name, run in methods.items():
        seconds, failures = run_method(run, pages, out / f"{name}.jsonl")
        figures = score(args.scorer, gold, out / f"{name}.jsonl")
        rows[name] = (figures, len(pages) / seconds, failures)
        print(f"  {name}: f1={figures['f1']:.4f} {len(pages) / seconds:.1f} pages/s", file=sys.stderr, flush=True)
    if args.template:
        speeds, covered = run_with_templates(pages, out)
        print(f"  pages a learned template covers: {covered} of {len(pages)}", file=sys.stderr)
        for name, speed in speeds.items():
            rows[name] = (score(args.scorer, gold, out / f"{name}.jsonl"), speed, 0)
            print(f"  {name}: f1={rows[name][0]['f1']:.4f} {speed:.1f} pages/s", file=sys.stderr, flush=True)
    print_table(rows, suite=args.suite.name, pages=len(pages))
    return 0


def print_table(rows: dict, *, suite: str, pages: int) -> None:
    base = rows.get(BASELINE)
    print(f"suite={suite} pages={pages}")
    print(f"| method | precision | recall | F1 | pages/s | F1 / {BASELINE} | speed / {BASELINE} | failed |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, (figures, speed, failures) in rows.items():
        f1_ratio = f"{figures['f1'] / base[0]['f1']:.3f}" if base else "-"
        speed_ratio = f"{speed / base[1]:.2f}" if base else "-"
        print(f"| {name} | {figures['precision']:.3f} | {figures['recall']:.3f} | {figures['f1']:.3f} | "
              f"{speed:.1f} | {f1_ratio} | {speed_ratio} | {failures} |")


if __name__ == "__main__":
    sys.exit(main())
