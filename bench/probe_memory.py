#!/usr/bin/env python3
"""Where a templater command's memory goes as it runs: the command in-process, sampled every few seconds.

    python bench/probe_memory.py [--every SECONDS] [--count FILE] [--trace A B] -- COMMAND ARGS...
    python bench/probe_memory.py --count OUT --trace 4000 9000 -- extract --db S.db --output OUT --quiet --jobs 1

Each line: the lines written so far to --count (the pages done, for a command writing JSON Lines there), the
process's anonymous and file-backed resident memory (/proc/self/status RssAnon, RssFile), SQLite's memory
(sqlite3_memory_used, process-wide) and glibc's heap (mallinfo2: arena, in use, free). --no-index beside the same
command shows what the near-duplicate index holds. --trace A B: tracemalloc snapshots when --count reaches A and B
lines, and the 15 allocation sites whose memory grew most between them (Python's allocations and numpy's arrays;
not libxml2's or SQLite's). Linux only.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import sys
import threading
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


class _Mallinfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                                      "fsmblks", "uordblks", "fordblks", "keepcost")]


def _libraries():
    """(glibc's mallinfo2, SQLite's sqlite3_memory_used), either None where it cannot be found."""
    import _sqlite3
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallinfo2.restype = _Mallinfo2
        mallinfo = libc.mallinfo2
    except (OSError, AttributeError):
        mallinfo = None
    try:
        sqlite = ctypes.CDLL(_sqlite3.__file__)  # (its symbols, and those of the libsqlite3 it links)
        sqlite.sqlite3_memory_used.restype = ctypes.c_int64
        used = sqlite.sqlite3_memory_used
    except (OSError, AttributeError):
        used = None
    return mallinfo, used


def _lines(path: Path | None) -> int:
    try:
        with open(path, "rb") as f:
            return sum(1 for _ in f)
    except (OSError, TypeError):
        return 0


def sample(path: Path | None, mallinfo, used) -> str:
    """One line of the probe (MiB)."""
    status = {}
    with open("/proc/self/status") as f:
        for line in f:
            name, _, value = line.partition(":")
            if name in ("RssAnon", "RssFile"):
                status[name] = int(value.split()[0]) / 1024
    heap = ""
    if mallinfo is not None:
        m = mallinfo()
        heap = f"  heap arena {m.arena / 2**20:.0f} in use {m.uordblks / 2**20:.0f} free {m.fordblks / 2**20:.0f}"
    sqlite = f"  SQLite {used() / 2**20:.0f}" if used is not None else ""
    return (f"{_lines(path):>8} lines  RssAnon {status.get('RssAnon', 0):.0f} RssFile {status.get('RssFile', 0):.0f}"
            f"{sqlite}{heap}  (MiB)")


def _grown(first, second) -> str:
    diff = second.compare_to(first, "traceback")
    out = [f"tracemalloc: {sum(s.size_diff for s in diff) / 1e6:+.2f} MB between the snapshots; most grown:"]
    for stat in diff[:15]:
        out.append(f"  {stat.size_diff / 1e6:+.2f} MB {stat.count_diff:+d} blocks")
        out.extend("      " + line for line in stat.traceback.format()[-8:])
    return "\n".join(out)


def main() -> None:
    argv = sys.argv[1:]
    cut = argv.index("--") if "--" in argv else len(argv)
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--every", type=float, default=15.0, help="seconds between samples")
    parser.add_argument("--count", type=Path, default=None, help="a file whose lines count the pages done")
    parser.add_argument("--trace", type=int, nargs=2, metavar=("A", "B"), default=None)
    args = parser.parse_args(argv[:cut])
    if cut == len(argv):
        parser.error("no command: give it after --")
    mallinfo, used = _libraries()
    if args.trace:
        tracemalloc.start(8)
    done = threading.Event()

    def probe() -> None:
        snapshots = []
        while not done.wait(args.every):
            print(sample(args.count, mallinfo, used), file=sys.stderr, flush=True)
            if args.trace and len(snapshots) < 2 and _lines(args.count) >= args.trace[len(snapshots)]:
                snapshots.append(tracemalloc.take_snapshot().filter_traces(
                    [tracemalloc.Filter(False, tracemalloc.__file__)]))
                if len(snapshots) == 2:
                    print(_grown(*snapshots), file=sys.stderr, flush=True)

    thread = threading.Thread(target=probe, daemon=True)
    thread.start()
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    from cli import app
    try:
        app(argv[cut + 1:], prog_name="templater", standalone_mode=False)
    finally:
        done.set()
        thread.join()
        print("end: " + sample(args.count, mallinfo, used), file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
