#!/usr/bin/env python3
"""Fuzzing `templater run` at scale: mutated dev-corpus pages in mutated JSON Lines and WARC framing.

    python bench/bench_fuzz.py [--records 100000] [--seed 7] [--workdir DIR] [--no-timing]
    python bench/bench_fuzz.py --learn-blocks 5000,20000,40000

Records are cut from ../shared/corpus pages (a slice of a page, or all of it) and mutated: markup fragments spliced
in (tags cut open, quotes, comments, control characters, lone surrogates, charset declarations, deep nesting), bad
field values (no URL, numbers, lists, surrogates in id/url/fetched_at), broken JSON lines, and a few pages built to
hang a parser (100k attributes on one element, 300k <br>, 60k <p>, 100k-deep nesting). They are written as JSON
Lines (plain and gzipped) and WARC (plain and gzipped) files of 5,000 records, each record with its own URL; the last
record of some WARC files has its framing broken (cut short, wrong Content-Length, garbage after it).

Then, as a user runs it, one `templater run FILES... --db DB --output OUT --quiet` process, and the figures:
crashes (exit status, a traceback on stderr), lost records (written, but neither stored nor counted as a skip),
pages stored but neither extracted nor counted, the skips by reason, wall time and peak memory. With timing (the
default), every record is also processed in this process the way the run does (decode, parse, segment, extract
without a template) and timed: the slowest records and how many went over config.PAGE_TIME_BUDGET.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import resource
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "corpus"
sys.path.insert(0, str(ROOT))

from templater import config, pipeline, sources  # noqa: E402
from templater.extract import extract_page  # noqa: E402
from templater.datatypes import Segmented, Skip  # noqa: E402

FILE_RECORDS = 5_000
SITE_PAGES = 8  # records per fuzzed "site" (a URL prefix), so that build learns templates from mutated pages
SLICE_MAX = 16_000  # characters of a page a sliced record keeps at most
SLICE_RATE = 0.8  # share of records that are a slice of a page (the others: the whole page)
SNIPPETS = ["<", ">", "</", "<!--", "-->", "<script>", "</script>", "<style>", '"', "'", "=", "<p", "<div " * 40,
            "<div>" * 300, "<br>" * 500, "<p " + " ".join(f"a{i}=1" for i in range(300)) + ">", "\x00", "\x1b[31m",
            "\ufeff", "\udc80", "&#0;", "&#xD800;", "<?xml version='1.0' encoding='utf-16'?>",
            "<meta charset=utf-7>", "<title>", "</html>", "<html>", "<body>", "<table><tr><td>", "<![CDATA[",
            "<svg><foreignObject>", "<math>", "<template>", "\r\n", "\t" * 100, "é" * 30, "中文", "<plaintext>"]
BOMBS = {  # pages built to hang a parser or the learning
    "attributes": lambda: "<html><body><p " + " ".join(f"a{i}=1" for i in range(100_000)) + ">x</p></body></html>",
    "breaks": lambda: "<html><body>" + "x<br>" * 300_000 + "</body></html>",
    "paragraphs": lambda: "<html><body>" + "".join(f"<p>paragraph {i}</p>" for i in range(60_000)) + "</body></html>",
    "nesting": lambda: "<html><body><p>before</p>" + "<div>" * 100_000 + "x" + "</body></html>",
    "quoted-attributes": lambda: "<html><body><p " + " ".join(f'a{i}=">"' for i in range(20_000)) + ">x</p></body>",
}
BOMB_RATE = 0.0005
FIELD_RATE = 0.03
FRAMING_RATE = 0.02
SURROGATE_RATE = 0.005


def load_pages() -> list[str]:
    pages = []
    for path in sorted(CORPUS.glob("*/pages.jsonl.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as f:
            pages += [json.loads(line)["html"] for line in f]
    return pages


def mutated_html(rng: random.Random, pages: list[str]) -> tuple[str, str]:
    """(kind, html) of one record's page."""
    if rng.random() < BOMB_RATE:
        kind = rng.choice(sorted(BOMBS))
        return f"bomb:{kind}", BOMBS[kind]()
    page = rng.choice(pages)
    if rng.random() < SLICE_RATE:
        start = rng.randrange(len(page) or 1)
        page = page[start:start + rng.randrange(1, SLICE_MAX)]
    for _ in range(rng.choice((0, 0, 1, 2, 5))):
        at = rng.randrange(len(page) + 1)
        page = page[:at] + rng.choice(SNIPPETS) + page[at:]
    return "page", page


def jsonl_line(rng: random.Random, number: int, pages: list[str]) -> tuple[str, str]:
    """(kind, line) of one JSON Lines record."""
    kind, html = mutated_html(rng, pages)
    record = {"url": f"http://s{number // SITE_PAGES}.fuzz.example/{rng.choice(['a', 'b/c'])}/{number}.html",
              "html": html, "id": f"r{number}"}
    roll = rng.random()
    if roll < FIELD_RATE:
        kind = "fields"
        name = rng.choice(["url", "html", "id", "fetched_at"])
        record[name] = rng.choice([None, 12345678901234567890, 1.5, [1, 2], {"a": 1}, "", "not a url", "  "])
        if name == "id" and record["id"] not in (None, ""):
            record["id"] = f"r{number}-{record['id']}"  # a bad id value stays unique
    line = json.dumps(record, ensure_ascii=rng.random() < 0.5)
    if FIELD_RATE <= roll < FIELD_RATE + SURROGATE_RATE:
        kind = "surrogate"
        line = line.replace(f'"r{number}"', f'"r{number}\\udc80"', 1)
    elif FIELD_RATE + SURROGATE_RATE <= roll < FIELD_RATE + SURROGATE_RATE + FRAMING_RATE:
        kind = "framing"
        cut = rng.randrange(len(line) + 1)
        line = rng.choice([line[:cut], "[" * 100_000 + "]" * 100_000, json.dumps([record]), "null",
                           "\ufeff" + line, line[:cut] + "\x00" + line[cut:], "{" * 50_000])
    return kind, line.replace("\n", " ").replace("\r", " ")


def warc_record(url: str, html: bytes, *, length_delta: int = 0) -> bytes:
    payload = b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\n\r\n" + html
    head = (f"WARC/1.0\r\nWARC-Type: response\r\nWARC-Target-URI: {url}\r\nWARC-Record-ID: <urn:uuid:{uuid.uuid4()}>"
            f"\r\nWARC-Date: 2024-01-01T00:00:00Z\r\nContent-Type: application/http; msgtype=response\r\n"
            f"Content-Length: {len(payload) + length_delta}\r\n\r\n").encode()
    return head + payload + b"\r\n\r\n"


def write_inputs(folder: Path, records: int, seed: int) -> tuple[list[Path], int, Counter]:
    """The input files; (paths, records whose accounting is exact, kinds written)."""
    rng, pages = random.Random(seed), load_pages()
    paths, exact, kinds = [], 0, Counter()
    for index, start in enumerate(range(0, records, FILE_RECORDS)):
        numbers = range(start, min(start + FILE_RECORDS, records))
        form = ["jsonl", "jsonl.gz", "jsonl", "jsonl.gz", "warc", "warc.gz"][index % 6]
        path = folder / f"part-{index:03d}.{form}"
        if form.startswith("jsonl"):
            lines = []
            for number in numbers:
                kind, line = jsonl_line(rng, number, pages)
                kinds[kind] += 1
                lines.append(line)
            data = ("\n".join(lines) + "\n").encode("utf-8", "surrogatepass")
            exact += sum(1 for line in lines if line.strip())
        else:
            members, broken = [], rng.random() < 0.5
            for number in numbers:
                kind, html = mutated_html(rng, pages)
                kinds[kind] += 1
                last = number == numbers[-1]
                members.append(warc_record(f"http://s{number // SITE_PAGES}.fuzz.example/w/{number}.html",
                                           html.encode("utf-8", "surrogatepass"),
                                           length_delta=rng.choice([-7, 9, 10**6]) if broken and last else 0))
            if broken:
                kinds["framing:warc-last-record"] += 1
            exact += len(members) - (1 if broken else 0)
            if form.endswith(".gz"):
                members = [gzip.compress(m) for m in members]
            data = b"".join(members)
            if broken:
                data = data[:len(data) - rng.randrange(1, 200)] + rng.randbytes(rng.randrange(0, 40))
        path.write_bytes(gzip.compress(data) if form == "jsonl.gz" else data)
        paths.append(path)
    return paths, exact, kinds


def run_cli(paths: list[Path], workdir: Path) -> dict:
    db, out = workdir / "fuzz.db", workdir / "out.jsonl"
    started = time.perf_counter()
    with tempfile.TemporaryFile("w+") as stderr:
        process = subprocess.Popen([sys.executable, "-c", "import cli; cli.main()", "run", *map(str, paths), "--db",
                                    str(db), "--output", str(out), "--quiet"], stdout=subprocess.DEVNULL,
                                   stderr=stderr, text=True, cwd=ROOT)
        peak = 0.0
        while process.poll() is None:
            peak = max(peak, high_water_mb(process.pid))
            time.sleep(0.5)
        wall = time.perf_counter() - started
        stderr.seek(0)
        done = subprocess.CompletedProcess(process.args, process.returncode, "", stderr.read())
    if not peak:  # no /proc: the largest child's peak (inflated by this process's own memory where it forked)
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    conn = sqlite3.connect(db)
    pages = conn.execute("SELECT count(*) FROM pages").fetchone()[0]
    skips = dict(conn.execute("SELECT reason, count(*) FROM skips WHERE page_id IS NULL OR page_id NOT IN "
                              "(SELECT id FROM pages) GROUP BY reason").fetchall())
    late = dict(conn.execute("SELECT reason, count(*) FROM skips WHERE page_id IN (SELECT id FROM pages) "
                             "GROUP BY reason").fetchall())
    conn.close()
    extracted = sum(1 for _ in open(out, encoding="utf-8")) if out.exists() else 0
    return {"exit": done.returncode, "traceback": "Traceback" in done.stderr, "stderr": done.stderr[-2000:],
            "wall": wall, "peak_mb": peak, "pages": pages, "skips": skips, "extract_skips": late,
            "extracted": extracted}


def high_water_mb(pid: int) -> float:
    """The process's peak resident memory so far (Linux's VmHWM), in MB; 0 where /proc does not say."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def time_records(paths: list[Path]) -> tuple[list[tuple[float, str, str]], int]:
    """(seconds, reason or "ok", source) of every record, processed as the run does; and the count."""
    timed, count = [], 0
    for item in sources.iter_records(paths):
        count += 1
        started = time.perf_counter()
        seg = pipeline.prepare_record(item)
        outcome = seg.reason if isinstance(seg, Skip) else "ok"
        if isinstance(seg, Segmented):
            extract_page(seg, None, site="fuzz", method="auto")
        spent = time.perf_counter() - started
        source = item.source if isinstance(item, Skip) else f"{item.source} ({len(item.body):,} chars)"
        timed.append((spent, outcome, source))
    return timed, count


def learn_times(sizes: list[int]) -> None:
    """Learning a template from 3 pages of n <p> each: templater's linear XPaths against lxml's getpath (what
    learning used before), in the same run."""
    from templater import template
    from templater.datatypes import Page

    for n in sizes:
        figures = []
        for fill in (template.fill_xpaths, lambda blocks: None):
            segs = []
            for k in range(3):
                html = "<html><body><div id=nav><a href=/>Home</a></div>" + "".join(
                    f"<p>paragraph {k} {i} of the page</p>" for i in range(n)) + "</body></html>"
                segs.append(pipeline.segment_page(Page(id=str(k), url=f"http://learn.example/d/{k}.html", html=html,
                                                       fetched_at=None, encoding="utf-8")))
            template.fill_xpaths, saved = fill, template.fill_xpaths
            try:
                started = time.perf_counter()
                template.learn_template(segs, site="learn.example/d/")
                figures.append(time.perf_counter() - started)
            finally:
                template.fill_xpaths = saved
        print(f"learn 3 pages x {n:,} <p>: {figures[0]:.2f} s (lxml getpath: {figures[1]:.2f} s, "
              f"{figures[1] / figures[0]:.1f}x)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--workdir", type=Path, default=None,
                        help="Keep the inputs and the database here (a rerun with the same --records and --seed "
                             "reuses the inputs).")
    parser.add_argument("--no-timing", action="store_true", help="Skip the per-record timing pass.")
    parser.add_argument("--learn-blocks", default=None,
                        help="Only time learning from 3 pages of these many <p> (comma-separated), and stop.")
    args = parser.parse_args()
    if args.learn_blocks:
        learn_times([int(n) for n in args.learn_blocks.split(",")])
        return
    if not CORPUS.exists():
        sys.exit(f"no dev corpus at {CORPUS}: this benchmark mutates its pages")
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="templater-fuzz-"))
    workdir.mkdir(parents=True, exist_ok=True)
    marker = workdir / f"inputs-{args.records}-{args.seed}.json"
    if marker.exists():  # the same inputs, written by an earlier run with this --workdir
        written = json.loads(marker.read_text())
        paths, exact, kinds = [Path(p) for p in written["paths"]], written["exact"], Counter(written["kinds"])
    else:
        paths, exact, kinds = write_inputs(workdir, args.records, args.seed)
        marker.write_text(json.dumps({"paths": list(map(str, paths)), "exact": exact, "kinds": kinds}))
    for stale in workdir.glob("fuzz.db*"):
        stale.unlink()
    size = sum(p.stat().st_size for p in paths) / 1e6
    print(f"inputs: {args.records:,} records in {len(paths)} files ({size:,.0f} MB) under {workdir}")
    print("  kinds: " + ", ".join(f"{k}={v:,}" for k, v in sorted(kinds.items())))
    run = run_cli(paths, workdir)
    counted = run["pages"] + sum(run["skips"].values())
    print(f"templater run: exit {run['exit']}, traceback {'yes' if run['traceback'] else 'no'}, "
          f"{run['wall']:,.0f} s wall, peak {run['peak_mb']:,.0f} MB")
    if run["exit"] != 0:
        print(run["stderr"])
    print(f"  records: {args.records:,} written; {run['pages']:,} stored + {sum(run['skips'].values()):,} skipped "
          f"= {counted:,} counted; lost (exact-accounting records not counted): {max(exact - counted, 0):,}; "
          f"cut by a broken WARC frame and counted as its file's one skip: {args.records - exact:,}")
    print("  skips: " + ", ".join(f"{k}={v:,}" for k, v in sorted(run["skips"].items())))
    print(f"  extraction: {run['extracted']:,} extracted + {sum(run['extract_skips'].values()):,} skipped of "
          f"{run['pages']:,} stored ({', '.join(f'{k}={v}' for k, v in sorted(run['extract_skips'].items()))})")
    if args.no_timing:
        return
    timed, count = time_records(paths)
    timed.sort(reverse=True)
    over = sum(1 for t, _, _ in timed if t > config.PAGE_TIME_BUDGET)
    total = sum(t for t, _, _ in timed)
    print(f"per record (decode + parse + segment + extract, in-process): {count:,} records, {total:,.0f} s, "
          f"over the {config.PAGE_TIME_BUDGET:g} s budget: {over}; median {timed[len(timed) // 2][0] * 1e3:.1f} ms, "
          f"p99.9 {timed[len(timed) // 1000][0] * 1e3:.0f} ms")
    for spent, outcome, source in timed[:5]:
        print(f"  slowest: {spent:6.2f} s  {outcome:<12} {source}")


if __name__ == "__main__":
    main()
