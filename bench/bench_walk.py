#!/usr/bin/env python3
"""The tree walks alone: blocks.segment and features.number_tree timed in-process over a suite's parsed pages.

    python bench/bench_walk.py [CORPUS.jsonl.gz] [--limit N] [--rounds R] [--clock cpu|wall]
                               [--baseline CHECKOUT [--baseline-python PYTHON]]

Default corpus: the dev corpus's `sites` suite (bench/suites.py). Each checkout is timed in a worker process of its
own (its interpreter, its built modules): the worker parses every page once (templater.parse.parse_html), segments
each, then on every round times segment over all the parsed pages, and number_tree over all the segmented pages, on
the process's CPU clock (or the wall clock). With --baseline, a second worker runs the other checkout (its
interpreter: CHECKOUT/.venv/bin/python unless --baseline-python) and the rounds alternate between the two workers,
the first of each round alternating too, so both see the same machine. Prints per round and the best of the rounds
in ms per page, the ratio to the baseline, and a digest of each side's output (blocks' hashes and texts, the tree
columns) so the two sides are seen to compute the same thing (or not).
"""

from __future__ import annotations

import argparse
import gc
import gzip
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STAGES = ("segment", "number_tree")


def load(path: Path, limit: int | None) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        records = [json.loads(line) for line in f if line.strip()]
    return records[:limit] if limit else records


# --- the worker: one checkout's modules in one process ---------------------------------------------------------
def _checkout_modules(checkout: Path):
    """(blocks, features, parse, Page, status) of the checkout's templater (the data module's name changed once),
    whatever the interpreter has installed in editable mode (its finders are dropped)."""
    sys.meta_path[:] = [f for f in sys.meta_path if not type(f).__module__.startswith("__editable__")]
    sys.path.insert(0, str(checkout))
    import templater
    from templater import blocks, features, native, parse

    if Path(templater.__file__).resolve().parent != (checkout / "templater").resolve():
        raise SystemExit(f"templater was imported from {templater.__file__}, not from {checkout}")

    try:
        from templater.datatypes import Page
    except ImportError:  # before templater/types.py was renamed
        from templater.types import Page
    return blocks, features, parse, Page, native.STATUS


def _digest(segs, trees) -> str:
    h = hashlib.sha256()
    for seg, tree in zip(segs, trees):
        for block in seg.blocks:
            h.update(f"{block.hash}\0{block.tag_path}\0{block.text}\0{block.link_chars}\0".encode("utf-8"))
        for column in (tree.parent, tree.depth, tree.owner, tree.tag_bits, tree.class_bits, tree.hint):
            h.update(column.tobytes())
    return h.hexdigest()[:16]


def worker(checkout: Path, corpus: Path, limit: int | None, clock_name: str) -> int:
    """Parse and segment the pages once, then answer each "round" line on stdin with one JSON line of seconds."""
    blocks, features, parse, Page, status = _checkout_modules(checkout)
    clock = time.process_time if clock_name == "cpu" else time.perf_counter
    pages = []
    for record in load(corpus, limit):
        root = parse.parse_html(record["html"])
        if root is not None:
            pages.append((root, Page(record.get("id", record["url"]), record["url"], record["html"])))
    segs = [blocks.segment(root, page) for root, page in pages]
    trees = [features.number_tree(seg) for seg in segs]
    n_blocks = sum(len(seg.blocks) for seg in segs)
    ready = {"status": status, "pages": len(pages), "blocks": n_blocks, "digest": _digest(segs, trees)}
    del trees
    gc.collect()
    gc.freeze()  # the held trees and blocks are not scanned by the collections the timed work triggers
    print(json.dumps(ready), flush=True)
    for line in sys.stdin:
        if line.strip() != "round":
            break
        spent = {}
        start = clock()
        for root, page in pages:
            blocks.segment(root, page)
        spent["segment"] = clock() - start
        gc.collect()
        start = clock()
        for seg in segs:
            features.number_tree(seg)
        spent["number_tree"] = clock() - start
        gc.collect()
        print(json.dumps(spent), flush=True)
    return 0


# --- the driver ---------------------------------------------------------------------------------------------------
class Side:
    """A worker process timing one checkout."""

    def __init__(self, name: str, python: str, checkout: Path, corpus: Path, args) -> None:
        command = [python, str(Path(__file__).resolve()), str(corpus), "--worker", str(checkout), "--clock", args.clock]
        if args.limit:
            command += ["--limit", str(args.limit)]
        env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
        self.name = name
        self.checkout = checkout
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        self.ready = self._answer()
        self.rounds: list[dict] = []

    def _answer(self) -> dict:
        line = self.process.stdout.readline()
        if not line:
            raise SystemExit(f"the {self.name} worker stopped (exit {self.process.wait()})")
        return json.loads(line)

    def round(self) -> dict:
        self.process.stdin.write("round\n")
        self.process.stdin.flush()
        spent = self._answer()
        self.rounds.append(spent)
        return spent

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait()

    def best(self, stage: str) -> float:
        return min(spent[stage] for spent in self.rounds)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus", nargs="?")
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--clock", choices=("cpu", "wall"), default="cpu")
    parser.add_argument("--baseline", type=Path, default=None, help="another checkout, timed in the same rounds")
    parser.add_argument("--baseline-python", default=None, help="its interpreter (default CHECKOUT/.venv/bin/python)")
    parser.add_argument("--worker", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.corpus:
        corpus = Path(args.corpus)
    else:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from suites import suite_file

        corpus = suite_file("sites")
    if args.worker is not None:
        return worker(args.worker, corpus, args.limit, args.clock)

    sides = [Side("this", sys.executable, ROOT, corpus, args)]
    if args.baseline is not None:
        python = args.baseline_python or str(args.baseline / ".venv" / "bin" / "python")
        sides.append(Side("baseline", python, args.baseline.resolve(), corpus, args))
    for side in sides:
        ready = side.ready
        print(f"{side.name:8} {side.checkout}: {ready['status']}; {ready['pages']} pages, {ready['blocks']} blocks, "
              f"output digest {ready['digest']}")
    if len(sides) == 2:
        same = sides[0].ready["digest"] == sides[1].ready["digest"]
        print("outputs: " + ("identical" if same else "differ (the checkouts segment or number differently)"))
    pages = sides[0].ready["pages"]
    print(f"clock={args.clock} rounds={args.rounds} corpus={corpus.name}; ms per page")
    for r in range(args.rounds):
        order = sides if r % 2 == 0 else sides[::-1]
        for side in order:
            spent = side.round()
            print(f"round {r + 1} {side.name:8} " + " ".join(f"{s} {1000 * spent[s] / pages:.4f}" for s in STAGES),
                  flush=True)
    for side in sides:
        side.close()
    print(f"best of {args.rounds} (ms per page):")
    for stage in STAGES:
        row = " ".join(f"{side.name} {1000 * side.best(stage) / pages:.4f}" for side in sides)
        if len(sides) == 2:
            row += f"  this/baseline {sides[0].best(stage) / sides[1].best(stage):.3f}"
        print(f"  {stage:12} {row}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
