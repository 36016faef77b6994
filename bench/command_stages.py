#!/usr/bin/env python3
"""Where a page's CPU goes in the whole command: runs a `templater` command line in this process, as the program
runs it, with a CPU clock (time.thread_time) read on entering and leaving each step of a page's extraction, and
prints each step's CPU time a page.

    python bench/command_stages.py [--json FILE] [--pages N] -- extract --db DB --jobs 1 --output OUT --quiet

The steps are the library's own functions, wrapped in this process only (the library has no timing code): each
is charged its self time (what it spent less the wrapped steps it called), so the rows add up to the command's
thread time; "between the steps" is what the command did outside every wrapped step while pages were extracted
(the loop, freeing trees and arrays, the writer's bookkeeping) and "start-up and the rest" what came before the
first step and after the last. The garbage collector's runs are a row of their own (gc.callbacks). With --jobs
above 1 the workers' steps are not seen (they run in other processes): time `--jobs 1`. Each wrapped call costs two
clock reads (a system call: ~4 microseconds each on a virtual machine), about 60 a page; each row is given less that
cost (measured at the start), its count of clock intervals times one read.

bench_commands.py `--stages` runs this on a copy of its database after its rounds.
"""

from __future__ import annotations

import argparse
import functools
import gc
import importlib
import json
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CLOCK = time.thread_time

# (row, "module:qualified name") of every wrapped step, in the order a page meets them; a function imported by name
# into other modules is replaced there too (every module of the project holding the same object)
STEPS = (
    ("read stored page (sqlite, zstd)", "store.pages:load_pages"),
    ("parse", "templater.parse:parse_checked"),
    ("segmentation walk", "templater.blocks:segment"),
    ("find template", "templater.pipeline:TemplateIndex.find"),
    ("match template", "templater.extract:match_template"),
    ("classifier: tree numbering", "templater.features:number_tree"),
    ("classifier: block features", "templater.features:block_features"),
    ("classifier: networks (score)", "templater.fallback:_score"),
    ("classifier: region chrome", "templater.fallback:region_chrome"),
    ("classifier: captions", "templater.fallback:captions"),
    ("classifier: headline", "templater.headline:keep_headline"),
    ("classifier: headings", "templater.fallback:headings"),
    ("classifier: the rest", "templater.fallback:select_blocks"),
    ("name line", "templater.extract:name_line"),
    ("repeats", "templater.extract:drop_repeats"),
    ("document", "templater.document:build_document"),
    ("text", "templater.document:to_text"),
    ("extraction: the rest", "templater.extract:extract_content"),
    ("metadata: JSON-LD", "templater.metadata:jsonld_metadata"),
    ("metadata: declared (meta, microdata)", "templater.metadata:declared_metadata"),
    ("metadata: visible", "templater.metadata:visible_metadata"),
    ("metadata: learned rules", "templater.metadata:rule_metadata"),
    ("metadata: script date", "templater.metadata:script_date"),
    ("metadata: script author", "templater.metadata:script_author"),
    ("metadata: language", "templater.metadata:detect_language"),
    ("metadata: the rest", "templater.metadata:read_metadata"),
    ("page: the rest (checks, results, the tree freed)", "templater.pipeline:extract_stored_page"),
    ("signing for the index", "templater.dedup:sign_each"),
    ("storing (SQLite)", "store.pages:save_extraction"),
    ("index inserts", "templater.pipeline:_index"),
    ("output line (JSON, Markdown)", "cli:Rendering.text"),
)
FIRST_CALLS = {"metadata: language": "metadata: language model's load (first call)"}  # a step whose first call
# loads what every later call uses: that call is a row of its own
STARTUP = "start-up (before the first step)"
BETWEEN = "between the steps, and the end"
COLLECTOR = "garbage collector"


class Clock:
    """Self CPU time per row: a stack of the rows entered; each clock reading is charged to the row on top (outside
    every step: start-up until a first step was entered, then "between the steps")."""

    def __init__(self) -> None:
        self.spent: dict[str, float] = {}
        self.calls: dict[str, int] = {}
        self.charges: dict[str, int] = {}
        self.stack: list[str] = [STARTUP]
        self.read_cost = clock_cost()
        self.last = CLOCK()

    def _charge(self, now: float) -> None:
        top = self.stack[-1]
        self.spent[top] = self.spent.get(top, 0.0) + now - self.last
        self.charges[top] = self.charges.get(top, 0) + 1
        self.last = now

    def corrected(self) -> dict[str, float]:
        """Each row less the clock's own cost: every interval charged holds about one clock read (the end of the
        read that opened it and the start of the one that closed it)."""
        return {row: max(0.0, spent - self.charges.get(row, 0) * self.read_cost) for row, spent in self.spent.items()}

    def enter(self, row: str) -> None:
        self._charge(CLOCK())
        if self.stack == [STARTUP] and row != COLLECTOR:
            self.stack[0] = BETWEEN
        self.stack.append(row)
        self.calls[row] = self.calls.get(row, 0) + 1

    def leave(self) -> None:
        self._charge(CLOCK())
        self.stack.pop()

    def stop(self) -> None:
        self._charge(CLOCK())

    def collector(self, phase: str, info: dict) -> None:
        if phase == "start":
            self.enter(COLLECTOR)
        else:
            self.leave()


def clock_cost(reads: int = 20000) -> float:
    """CPU seconds of one read of CLOCK (a system call on some machines: ~4 microseconds on a virtual one, more than
    some steps take), the least of five runs of ``reads`` reads."""
    best = float("inf")
    for _ in range(5):
        start = CLOCK()
        for _ in range(reads):
            CLOCK()
        best = min(best, (CLOCK() - start) / reads)
    return best


def wrapped(clock: Clock, row: str, fn):
    if getattr(fn, "__code__", None) is not None and fn.__code__.co_flags & 0x20:  # a generator: each step timed
        @functools.wraps(fn)
        def generator(*args, **kwargs):
            clock.enter(row)
            try:
                inner = fn(*args, **kwargs)
            finally:
                clock.leave()
            while True:
                clock.enter(row)
                try:
                    item = next(inner)
                except StopIteration:
                    return
                finally:
                    clock.leave()
                yield item
        return generator

    first = [FIRST_CALLS.get(row)]

    @functools.wraps(fn)
    def step(*args, **kwargs):
        clock.enter(first[0] or row)
        first[0] = None
        try:
            return fn(*args, **kwargs)
        finally:
            clock.leave()
    return step


def install(clock: Clock) -> None:
    """Wrap every step of STEPS where the project's modules look it up."""
    for row, target in STEPS:
        module_name, qualified = target.split(":")
        module = importlib.import_module(module_name)
        *owners, name = qualified.split(".")
        holder = module
        for owner in owners:
            holder = getattr(holder, owner)
        original = holder.__dict__[name] if isinstance(holder, type) else getattr(holder, name)
        replacement = wrapped(clock, row, original)
        setattr(holder, name, replacement)
        if owners:
            continue
        for other in list(sys.modules.values()):  # the same function imported by name elsewhere
            other_name = getattr(other, "__name__", "") or ""
            if other is module or not other_name.split(".")[0] in ("templater", "store", "cli"):
                continue
            if other.__dict__.get(name) is original:
                setattr(other, name, replacement)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", type=Path, help="also write the rows (seconds) as JSON to this file")
    parser.add_argument("--pages", type=int, default=None,
                        help="pages the command extracts (default: the stored extractions counted afterwards)")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the templater command line (after --)")
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the templater command after --")
    sys.path.insert(0, str(ROOT))
    sys.argv = ["templater", *command]  # run as the program (cli reads its name: one BLAS thread, the collector)
    import cli  # noqa: F401 (before the wrapping; the modules it loads at first use are loaded by install)

    clock = Clock()
    install(clock)
    gc.callbacks.append(clock.collector)
    status = 0
    try:
        cli.main()
    except SystemExit as exit_:
        status = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
    clock.stop()
    gc.callbacks.remove(clock.collector)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    process_cpu = usage.ru_utime + usage.ru_stime
    pages = args.pages if args.pages is not None else _extracted_pages(command)
    rows = clock.corrected()
    print(report(rows, clock.calls, pages, process_cpu))
    print(f"(each row less the clock's cost, {1e6 * clock.read_cost:.2f} microseconds a read: "
          f"{sum(clock.spent.values()) - sum(rows.values()):.2f} s in all)")
    if args.json:
        args.json.write_text(json.dumps({"pages": pages, "process_cpu": process_cpu, "rows": rows,
                                         "calls": clock.calls, "clock_read_s": clock.read_cost}, indent=1))
    return status


def _extracted_pages(command: list[str]) -> int:
    import sqlite3

    db = command[command.index("--db") + 1] if "--db" in command else "templater.db"
    with sqlite3.connect(db) as con:
        return con.execute("SELECT count(*) FROM extractions").fetchone()[0]


def report(spent: dict[str, float], calls: dict[str, int], pages: int, process_cpu: float) -> str:
    """The rows, ms a page, in the order of STEPS, then the collector's and what lay between the steps."""
    n = max(pages, 1)
    per_page = sum(v for k, v in spent.items() if k != STARTUP)
    lines = [f"{pages} pages; the command's CPU (user + system) {process_cpu:.2f} s, of which start-up "
             f"{spent.get(STARTUP, 0.0):.2f} s and {per_page:.2f} s = {1000 * per_page / n:.3f} ms a page after it "
             f"(thread time)",
             f"{'step':46} {'ms a page':>9} {'share':>6} {'calls a page':>12}"]
    for row in [row for row, _ in STEPS] + [*FIRST_CALLS.values(), COLLECTOR, BETWEEN]:
        if row in spent:
            lines.append(f"{row:46} {1000 * spent[row] / n:9.3f} {100 * spent[row] / per_page:5.1f}% "
                         f"{calls.get(row, 0) / n:12.2f}")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
