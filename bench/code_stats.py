#!/usr/bin/env python3
"""The codebase's size and shape, at the working tree or at any commit: what issue 18's notes report.

    python bench/code_stats.py [--rev COMMIT] [--json]

- lines: physical lines of the compiled code (templater/*.c, *.pyx, *.pxd, *.h) and of the library's Python
  (templater/, store/, cli.py);
- functions: every ``def`` of that Python (methods and nested functions included), its length from the ``def``
  line to its last line (decorators not counted): count, median, 90th percentile, max, and how many fall in
  1-10, 11-20, 21-30, 31-50, 51-100, over 100 lines;
- README.md's size in bytes;
- the import graph of templater/, store/ and cli.py (module level and inside functions, as tests/test_layering.py
  reads it): modules per layer, edges, edges between layers and how many run upward, where the commit states its
  layers (templater.APPLICATION_MODULES).
Without --rev the working tree is read; with it, the commit's files (git show), so a before/after pair comes from
one command each.
"""

from __future__ import annotations

import argparse
import ast
import json
import math
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COMPILED_SUFFIXES = (".c", ".pyx", ".pxd", ".h")
BUCKETS = ((1, 10), (11, 20), (21, 30), (31, 50), (51, 100), (101, None))


def files(rev: str | None) -> dict[str, str]:
    """Path -> text of the files counted (templater/, store/, cli.py, README.md) at rev or in the working tree."""
    if rev is None:
        paths = [p.relative_to(ROOT).as_posix() for p in [*ROOT.glob("templater/**/*"), *ROOT.glob("store/**/*"),
                                                          ROOT / "cli.py", ROOT / "README.md"] if p.is_file()]
        read = lambda path: (ROOT / path).read_text(encoding="utf-8", errors="replace")  # noqa: E731
    else:
        listing = subprocess.run(["git", "-C", str(ROOT), "ls-tree", "-r", "--name-only", rev], check=True,
                                 capture_output=True, text=True).stdout.split()
        paths = [p for p in listing if p.startswith(("templater/", "store/")) or p in ("cli.py", "README.md")]
        read = lambda path: subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:{path}"], check=True,  # noqa: E731
                                           capture_output=True).stdout.decode("utf-8", "replace")
    wanted = [p for p in paths if p.endswith((".py", *COMPILED_SUFFIXES)) or p == "README.md"]
    # generated C beside a .pyx (Cython's output of an in-place build) is not source
    pyx = {p[:-4] for p in wanted if p.endswith(".pyx")}
    return {p: read(p) for p in sorted(wanted) if not (p.endswith(".c") and p[:-2] in pyx)}


def line_count(text: str) -> int:
    return text.count("\n") + (0 if not text or text.endswith("\n") else 1)


def function_lengths(sources: dict[str, str]) -> list[int]:
    lengths = []
    for text in sources.values():
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lengths.append(node.end_lineno - node.lineno + 1)
    return sorted(lengths)


def percentile(values: list[int], share: float) -> int:
    """The nearest-rank percentile."""
    return values[max(0, math.ceil(len(values) * share) - 1)] if values else 0


LAYERS = ("core", "store", "application", "cli")  # bottom to top: an edge from a layer to one after it is upward


def import_graph(sources: dict[str, str]) -> dict | None:
    """Modules per layer and the edges between our modules, where templater/__init__.py names its layers."""
    init = sources.get("templater/__init__.py", "")
    application = None
    for node in ast.walk(ast.parse(init)):
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "APPLICATION_MODULES" for t in node.targets):
            application = {n.value for n in ast.walk(node.value) if isinstance(n, ast.Constant)}
    if application is None:
        return None
    ours = {("cli" if p == "cli.py" else p[:-3].replace("/", ".")): p for p in sources
            if p.endswith(".py") and p.count("/") <= 1}
    edges = set()
    for name, path in ours.items():
        package = path.split("/")[0] if "/" in path else ""
        for node in ast.walk(ast.parse(sources[path])):
            if isinstance(node, ast.Import):
                targets = {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = f"{package}.{base}" if base else package
                targets = {base} | {f"{base}.{alias.name}" for alias in node.names}
            else:
                continue
            edges |= {(name, t) for t in targets if t in ours and t != name}
    store = [m for m in ours if m.startswith("store.")]
    app = [m for m in ours if m.startswith("templater.") and m.split(".")[1] in application]
    core = [m for m in ours if m.startswith("templater.") and m not in app]
    layer = {**{m: "core" for m in core}, **{m: "store" for m in store}, **{m: "application" for m in app},
             "cli": "cli"}
    between = Counter(f"{layer[a]} -> {layer[b]}" for a, b in edges)
    upward = sum(1 for a, b in edges if LAYERS.index(layer[a]) < LAYERS.index(layer[b]))
    return {"core": len(core), "store": len(store), "application": len(app), "cli": int("cli" in ours),
            "edges": len(edges), "layer_edges": dict(sorted(between.items())), "upward": upward}


def stats(rev: str | None) -> dict:
    sources = files(rev)
    python = {p: t for p, t in sources.items() if p.endswith(".py")}
    compiled = {p: line_count(t) for p, t in sources.items() if p.endswith(COMPILED_SUFFIXES)}
    lengths = function_lengths(python)
    buckets = {f"{low}-{high}" if high else f">{low - 1}": sum(1 for n in lengths if n >= low and (not high or n <= high))
               for low, high in BUCKETS}
    return {"rev": rev or "working tree",
            "python_lines": sum(line_count(t) for t in python.values()),
            "python_lines_by_part": {part: sum(line_count(t) for p, t in python.items() if p.startswith(part))
                                     for part in ("templater/", "store/", "cli.py")},
            "compiled_lines": compiled,
            "functions": len(lengths), "median": percentile(lengths, 0.5), "p90": percentile(lengths, 0.9),
            "max": lengths[-1] if lengths else 0, "length_buckets": buckets,
            "readme_bytes": len(sources.get("README.md", "").encode("utf-8")),
            "import_graph": import_graph(python)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rev", default=None, help="a commit (default: the working tree)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    s = stats(args.rev)
    if args.json:
        print(json.dumps(s, indent=1))
        return 0
    print(f"{s['rev']}:")
    parts = ", ".join(f"{k} {v:,}" for k, v in s["python_lines_by_part"].items())
    print(f"  Python lines {s['python_lines']:,} ({parts})")
    print("  compiled lines " + (", ".join(f"{p} {n:,}" for p, n in s["compiled_lines"].items()) or "none"))
    print(f"  functions {s['functions']:,}: median {s['median']} lines, p90 {s['p90']}, max {s['max']} ("
          + ", ".join(f"{k}: {v}" for k, v in s["length_buckets"].items()) + ")")
    print(f"  README.md {s['readme_bytes']:,} bytes")
    graph = s["import_graph"]
    print("  import graph: " + (f"{graph['core']} core, {graph['store']} store, {graph['application']} application "
                                f"modules + cli, {graph['edges']} edges" if graph else "no layers stated"))
    if graph:
        print("  edges by layer: " + ", ".join(f"{k} {v}" for k, v in graph["layer_edges"].items())
              + f"; upward {graph['upward']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
