#!/usr/bin/env python3
"""How `templater` scales with the crawl: ingest, build and extract (index on) as processes at growing sizes.

    python bench/bench_scale.py [--sizes 2500 10000 40000] [--jobs 1] [--suite sites] [--keep DIR] [--cache DIR]
                                [--stages ingest build extract] [--reuse DIR] [--baseline TEMPLATER] [--rounds N]

The pages are the dev corpus suite's (default `sites`: sites with 3+ pages), replicated into distinct sites: copy
k of a page gets the host `k<k>.<host>` and its words rewritten by a substitution of copy k (each word of the copy
replaced with probability PERTURB by a word made from a hash of (k, word), the same in every page of the copy):
a copy's pages still share their template with each other, but its text is not a near-duplicate of the other
copies' (about 0.85**3 of its word 3-grams survive: most copies of a page are still candidates of each other in the
index's bands, refused by verification). Each size takes the first N pages of copies 0, 1, 2, ...
The inputs are written once per size into the cache folder (--cache; gzip level 1) and reused by later runs: each
page is cut once into chunks and words and each copy's substitution computed once over the distinct words, so a
page of a copy is a join (about 1.5 ms per page with the compression: 40k pages in about a minute).

For every size, each stage runs as a process on a fresh database, timed by wall clock and by its CPU time
(os.wait4's rusage: user + system, workers included) with its peak RSS; printed as pages/s and pages per CPU
second, and the time exponent between consecutive sizes (log(t2 / t1) / log(n2 / n1); 1.0 is linear). The
machine's load average is printed: other processes slow wall time, CPU time least.

--stages runs some of the stages only: `--stages ingest build --keep DIR` keeps each size's database ingested and
built, not extracted, as DIR/scale-N.db. --reuse DIR then runs the stages (default with --reuse: extract alone) on a
fresh copy of each size's DIR/scale-N.db (with its -wal and -shm files; DIR is never written), so extract is measured
again without ingesting and building again. --baseline TEMPLATER (another installation's `templater` executable) runs
each stage with it too, on a copy of its own, in turn with this installation's (the order alternating by round);
--rounds N repeats each size's stages N times (a fresh copy each), and the exponents are taken from the medians.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Iterable
from urllib.parse import urlsplit, urlunsplit

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_commands import BIN, ONE_THREAD, load_average, remove_db, timed_process  # noqa: E402
from suites import suite_file  # noqa: E402

PERTURB = 0.15  # share of a copy's distinct words replaced
WORD = re.compile(r"(?<=>)[^<]+")  # text between tags (script and style bodies too: harmless)
LETTERS = re.compile(r"[A-Za-z]{3,}")
GENERATOR = 2  # version of the generated pages: part of the cache's file names


def perturbed_word(copy: int, word: str) -> str:
    """The word copy ``copy`` puts in place of ``word``: itself, or (with probability PERTURB) a made-up word."""
    digest = hashlib.blake2b(f"{copy}:{word}".encode(), digest_size=8).digest()
    if int.from_bytes(digest[:4], "little") / 2**32 >= PERTURB:
        return word
    return "".join(chr(97 + b % 26) for b in digest[4:]) + word[:3]


def replicate(record: dict, copy: int) -> dict:
    """Copy ``copy`` of a page, word by word (the reference for the fast writer below: same result)."""
    parts = urlsplit(record["url"])
    url = urlunsplit(parts._replace(netloc=f"k{copy}.{parts.netloc}"))
    html = WORD.sub(lambda m: LETTERS.sub(lambda w: perturbed_word(copy, w.group()), m.group()), record["html"])
    return {"id": f"k{copy}/{record.get('id') or record['url']}", "url": url, "html": html}


class Page:
    """A page cut once into JSON-escaped chunks around its words: html == c0 + w0 + c1 + w1 + ... + cn."""

    __slots__ = ("record", "chunks", "words")

    def __init__(self, record: dict, vocabulary: dict[str, str]) -> None:
        self.record = record
        html, chunks, words, start = record["html"], [], [], 0
        escape = json.encoder.encode_basestring  # what json.dumps(text, ensure_ascii=False) writes, in C
        for text in WORD.finditer(html):
            for word in LETTERS.finditer(html, text.start(), text.end()):
                chunks.append(escape(html[start:word.start()])[1:-1])
                words.append(vocabulary.setdefault(word.group(), word.group()))  # one string per distinct word
                start = word.end()
        chunks.append(escape(html[start:])[1:-1])
        self.chunks, self.words = chunks, words

    def line(self, copy: int, substitution: dict[str, str]) -> bytes:
        """The JSON line of copy ``copy`` (what json.dumps(replicate(record, copy)) writes)."""
        pieces = [""] * (2 * len(self.words) + 1)
        pieces[0::2] = self.chunks
        pieces[1::2] = map(substitution.get, self.words, self.words)  # a word not in the substitution stays
        record = self.record
        parts = urlsplit(record["url"])
        url = urlunsplit(parts._replace(netloc=f"k{copy}.{parts.netloc}"))
        ident = f"k{copy}/{record.get('id') or record['url']}"
        head = (f'{{"id": {json.dumps(ident, ensure_ascii=False)}, '
                f'"url": {json.dumps(url, ensure_ascii=False)}, "html": "')
        return (head + "".join(pieces) + '"}\n').encode("utf-8")


def substitution(copy: int, vocabulary: Iterable[str]) -> dict[str, str]:
    """The words copy ``copy`` replaces, with their replacements (about PERTURB of the distinct words)."""
    changed = {}
    for word in vocabulary:
        other = perturbed_word(copy, word)
        if other is not word:
            changed[word] = other
    return changed


def write_pages(source: Path, size: int, out: Path) -> None:
    """The first ``size`` pages of copies 0, 1, 2, ... of the suite's pages, gzipped (level 1) into ``out``.

    Each page is cut once into chunks and words, and each copy's substitution is computed once over the distinct
    words: a copy's page is then a join of chunks and substituted words (json.dumps of the replicated record,
    byte for byte, without running the regular expressions, hashes and JSON escaping again per page)."""
    with gzip.open(source, "rt", encoding="utf-8") as f:
        records = [json.loads(line) for line in f if line.strip()]
    vocabulary: dict[str, str] = {}
    pages = [Page(record, vocabulary) for record in records[:size]]
    partial = out.with_name(out.name + ".partial")
    with open(partial, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=1, mtime=0) as w:
        for copy in range(math.ceil(size / len(pages))):
            changed = substitution(copy, vocabulary)
            w.write(b"".join(page.line(copy, changed) for page in pages[:size - copy * len(pages)]))
    partial.replace(out)


def cached_pages(source: Path, size: int, cache: Path) -> Path:
    """The input of ``size`` pages, written once into ``cache`` (named by the source file and the generator)."""
    stat = source.stat()
    key = hashlib.blake2b(f"{GENERATOR}:{source.resolve()}:{stat.st_size}:{stat.st_mtime_ns}".encode(),
                          digest_size=6).hexdigest()
    pages = cache / f"pages-{source.name.split('.')[0]}-{size}-{key}.jsonl.gz"
    if not pages.exists():  # in a child: this process stays small (a forked child's peak RSS starts at ours)
        cache.mkdir(parents=True, exist_ok=True)
        wall, cpu, _ = timed_process([sys.executable, __file__, "--write", str(source), str(size), str(pages)],
                                     env=dict(os.environ))
        print(f"{size:>7} pages  written in {wall:.1f} s wall, {cpu:.1f} s CPU: {pages}", flush=True)
    return pages


def main() -> int:
    if sys.argv[1:2] == ["--write"]:
        write_pages(Path(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4]))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[2500, 10000, 40000])
    parser.add_argument("--jobs", type=int, default=1, help="--jobs of every stage (default 1: one core)")
    parser.add_argument("--suite", default="sites", choices=("all", "sites", "single"))
    parser.add_argument("--keep", type=Path, default=None, help="folder for the databases (kept; default: removed)")
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "templater-bench-scale",
                        help="folder of the generated inputs, written once per size (default: %(default)s)")
    parser.add_argument("--stages", nargs="+", choices=STAGES, default=None,
                        help="the stages to run, in their order (default: all three; with --reuse: extract)")
    parser.add_argument("--reuse", type=Path, default=None,
                        help="folder of databases an earlier run kept (DIR/scale-N.db, e.g. with --stages ingest "
                             "build --keep DIR): the stages run on a fresh copy of each, DIR is not written")
    parser.add_argument("--baseline", type=Path, default=None,
                        help="another installation's templater executable: each stage runs with it too, on a copy "
                             "of its own, in turn with this one")
    parser.add_argument("--rounds", type=int, default=1, help="runs of each size's stages (default 1)")
    args = parser.parse_args()
    if args.reuse and args.keep and args.reuse.resolve() == args.keep.resolve():
        parser.error("--keep must be another folder than --reuse (the copies would replace the kept databases)")
    stages = args.stages or (["extract"] if args.reuse else list(STAGES))
    stages = [stage for stage in STAGES if stage in stages]
    env = {**os.environ, **ONE_THREAD}
    folder = args.keep or Path(tempfile.mkdtemp(prefix="bench-scale-"))
    folder.mkdir(parents=True, exist_ok=True)
    installs = {"": (str(BIN / "templater"), env)}
    if args.baseline:
        installs["baseline "] = (str(args.baseline), env)  # (its bytecode and caches where it keeps them)
    print(f"sizes {args.sizes}, stages {stages}, --jobs {args.jobs}, suite {args.suite}"
          f"{f', databases from {args.reuse}' if args.reuse else ''}, {args.rounds} round(s); load average at start "
          f"{load_average()}", flush=True)
    rows: dict[str, dict[int, list[tuple[float, float, float]]]] = {}
    for size in args.sizes:
        pages = cached_pages(suite_file(args.suite), size, args.cache) if "ingest" in stages else None
        for round_ in range(args.rounds):
            names = list(installs) if round_ % 2 == 0 else list(installs)[::-1]
            for name in names:
                templater, install_env = installs[name]
                db = folder / f"scale-{size}{'-baseline' if name else ''}.db"
                remove_db(db)
                if args.reuse:
                    copy_db(args.reuse / f"scale-{size}.db", db)
                jobs = ["--jobs", str(args.jobs)]
                argvs = {"ingest": [templater, "ingest", str(pages), "--db", str(db), "--quiet", *jobs],
                         "build": [templater, "build", "--db", str(db), "--quiet", *jobs],
                         "extract": [templater, "extract", "--db", str(db), "--output", os.devnull, "--quiet",
                                     *jobs]}
                for stage in stages:
                    wall, cpu, rss = timed_process(argvs[stage], env=install_env)
                    rows.setdefault(f"{name}{stage}", {}).setdefault(size, []).append((wall, cpu, rss))
                    print(f"{size:>7} pages  {name}{stage:8} {wall:8.1f} s wall {cpu:8.1f} s CPU  "
                          f"{size / wall:7.1f} pages/s {size / cpu:7.1f} pages/CPU s  peak RSS {rss:6.0f} MB  "
                          f"(load {load_average()})", flush=True)
                if not args.keep:
                    remove_db(db)
    print(f"\n{'stage':17} {'pages':>7} {'pages/s':>8} {'pages/CPU s':>11} {'peak RSS MB':>11} "
          f"{'exponent wall':>13} {'exponent CPU':>12}  (medians of the rounds)")
    for stage, results in rows.items():
        medians = [(size, *(statistics.median(run[k] for run in runs) for k in range(3)))
                   for size, runs in results.items()]
        for i, (size, wall, cpu, rss) in enumerate(medians):
            exponents = ("", "")
            if i:
                n0, w0, c0, _ = medians[i - 1]
                exponents = tuple(f"{math.log(t / t0) / math.log(size / n0):.2f}" for t, t0 in ((wall, w0), (cpu, c0)))
            print(f"{stage:17} {size:>7} {size / wall:8.1f} {size / cpu:11.1f} {rss:11.0f} {exponents[0]:>13} "
                  f"{exponents[1]:>12}")
    print(f"load average at end {load_average()}")
    if not args.keep:
        shutil.rmtree(folder, ignore_errors=True)  # (its databases went after each size)
    return 0


STAGES = ("ingest", "build", "extract")


def copy_db(source: Path, target: Path) -> None:
    """A copy of a kept database with its -wal and -shm files (where it has them)."""
    if not source.exists():
        raise SystemExit(f"{source} does not exist: keep the databases of an earlier run (--keep DIR)")
    for suffix in ("", "-wal", "-shm"):
        if Path(f"{source}{suffix}").exists():
            shutil.copyfile(f"{source}{suffix}", f"{target}{suffix}")


if __name__ == "__main__":
    sys.exit(main())
