#!/usr/bin/env python3
"""Where a templater command's memory goes as it runs: the command in-process, sampled every few seconds.

    python bench/probe_memory.py [--every SECONDS] [--count FILE] [--trace A B] [--grow A B] -- COMMAND ARGS...
    python bench/probe_memory.py --count OUT --trace 4000 9000 -- extract --db S.db --output OUT --quiet --jobs 1

Each line: the lines written so far to --count (the pages done, for a command writing JSON Lines there), the
process's anonymous and file-backed resident memory (/proc/self/status RssAnon, RssFile), SQLite's memory
(sqlite3_memory_used, process-wide; and each open connection's page cache and prepared statements, by its file's
name, from sqlite3_db_status), glibc's heap (mallinfo2: arena, in use, free, and its blocks mapped apart: mmapped),
Python's object arenas and the bytes of the blocks in use within them (sys._debugmallocstats), the chunks the xml
heap (native.tune_heap) holds live and the peak resident memory so far (VmHWM). --no-index
beside the same command shows what the near-duplicate index holds. --trace A B: tracemalloc snapshots when --count reaches A and B
lines, and the 15 allocation sites whose memory grew most between them (Python's allocations and numpy's arrays;
not libxml2's or SQLite's); with --trace-late, tracing starts only at A (the run before it at full speed), so the
second snapshot holds what was allocated since A and is still held at B. --grow A B (no tracing, so at full
speed): the lists, dicts and sets whose length grew most between A and B lines, with what holds each (the types and
names of the objects that refer to it) and its last items: a structure that gains an item a page shows at once, and
a bounded cache shows how full it is. Linux only.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import os
import sys
import tempfile
import threading
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


class _Mallinfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                                      "fsmblks", "uordblks", "fordblks", "keepcost")]


def _libraries():
    """(glibc's mallinfo2, SQLite's sqlite3_memory_used, SQLite's sqlite3_db_status), each None where it cannot be
    found."""
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
        status = sqlite.sqlite3_db_status
        status.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int),
                           ctypes.c_int]
        sqlite.sqlite3_db_filename.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
        sqlite.sqlite3_db_filename.restype = ctypes.c_char_p
        status = (status, sqlite.sqlite3_db_filename)
    except (OSError, AttributeError):
        used = status = None
    return mallinfo, used, status


def _connections(status) -> str:
    """Each open sqlite3 connection's page cache and prepared statements (MiB), named by its file's name."""
    import sqlite3

    if status is None or sys.implementation.name != "cpython":
        return ""
    parts, (db_status, filename) = [], status
    for conn in (o for o in gc.get_objects() if type(o) is sqlite3.Connection):
        handle = ctypes.c_void_p.from_address(id(conn) + object.__basicsize__).value  # (pysqlite's sqlite3 *db)
        if not handle:  # closed
            continue
        values = []
        for op in (1, 3):  # SQLITE_DBSTATUS_CACHE_USED, SQLITE_DBSTATUS_STMT_USED
            current, high = ctypes.c_int(), ctypes.c_int()
            db_status(handle, op, ctypes.byref(current), ctypes.byref(high), 0)
            values.append(current.value / 2**20)
        name = Path((filename(handle, b"main") or b"").decode(errors="replace")).name or ":memory:"
        parts.append(f"{name} cache {values[0]:.0f} stmt {values[1]:.1f}")
    return "  [" + "; ".join(parts) + "]" if parts else ""


def _python_arenas() -> tuple[float, float]:
    """MiB of Python's object arenas in use and of the blocks in use within them (sys._debugmallocstats, written to
    the C stderr: read back from a file); the difference is what its arenas hold free (they are given back only
    when empty)."""
    if not hasattr(sys, "_debugmallocstats"):
        return 0.0, 0.0
    sys.stderr.flush()
    with tempfile.TemporaryFile() as out:
        saved = os.dup(2)
        try:
            os.dup2(out.fileno(), 2)
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        out.seek(0)
        text = out.read().decode(errors="replace")
    arenas = blocks = 0.0
    for line in text.splitlines():
        if line.startswith("# arenas allocated current"):
            arenas = int(line.split("=")[1])  # (arenas of 1 MiB: CPython 3.10 on)
        elif line.startswith("# bytes in allocated blocks"):
            blocks = int(line.split("=")[1].replace(",", "")) / 2**20
    return arenas, blocks


def _xml_chunks() -> float:
    """MiB of the xml heap's chunks holding live blocks (made, less those free: resident or given back)."""
    try:
        from templater import native

        resident, given_back, made = native.numeric.xml_heap_chunks()
    except (ImportError, AttributeError):
        return 0.0
    return (made - resident - given_back) * 2**16 / 2**20


def _lines(path: Path | None) -> int:
    try:
        with open(path, "rb") as f:
            return sum(1 for _ in f)
    except (OSError, TypeError):
        return 0


def sample(path: Path | None, mallinfo, used, status=None) -> str:
    """One line of the probe (MiB)."""
    rss = {}
    with open("/proc/self/status") as f:
        for line in f:
            name, _, value = line.partition(":")
            if name in ("RssAnon", "RssFile", "VmHWM"):
                rss[name] = int(value.split()[0]) / 1024
    heap = ""
    if mallinfo is not None:
        m = mallinfo()
        heap = (f"  heap arena {m.arena / 2**20:.0f} in use {m.uordblks / 2**20:.0f} free {m.fordblks / 2**20:.0f}"
                f" mmapped {m.hblkhd / 2**20:.0f}")
    sqlite = f"  SQLite {used() / 2**20:.0f}" if used is not None else ""
    arenas, blocks = _python_arenas()
    return (f"{_lines(path):>8} lines  RssAnon {rss.get('RssAnon', 0):.0f} RssFile {rss.get('RssFile', 0):.0f}"
            f"{sqlite}{heap}  Python arenas {arenas:.0f} (blocks in use {blocks:.1f})  xml chunks {_xml_chunks():.0f}"
            f"  peak RSS {rss.get('VmHWM', 0):.0f}  (MiB){_connections(status)}")


def _grown(first, second) -> str:
    diff = second.compare_to(first, "traceback")
    out = [f"tracemalloc: {sum(s.size_diff for s in diff) / 1e6:+.2f} MB between the snapshots; most grown:"]
    for stat in diff[:15]:
        out.append(f"  {stat.size_diff / 1e6:+.2f} MB {stat.count_diff:+d} blocks")
        out.extend("      " + line for line in stat.traceback.format()[-8:])
    return "\n".join(out)


GROW_MIN = 50  # containers shorter than this at the second count are not compared (``--grow``)


def _lengths() -> dict[tuple[int, type], int]:
    """(id, type) -> length of every list, dict and set the collector tracks that holds at least GROW_MIN items."""
    return {(id(o), type(o)): len(o) for o in gc.get_objects()
            if isinstance(o, (list, dict, set)) and len(o) >= GROW_MIN}


def _holder(o) -> str:
    """What holds a container: the types (and names, for functions and classes) of the objects that refer to it."""
    names = []
    for ref in gc.get_referrers(o):
        if isinstance(ref, type(sys._getframe())):
            continue
        name = getattr(ref, "__qualname__", None) or getattr(ref, "__name__", None) or ""
        names.append(f"{type(ref).__name__}{' ' + name if isinstance(name, str) and name else ''}")
    return ", ".join(sorted(set(names))[:4])


def _longer(first: dict[tuple[int, type], int], count: int = 15) -> str:
    """The containers whose length grew most since ``first`` (``_lengths``), with their last items and holders."""
    grown = []
    for o in gc.get_objects():
        if isinstance(o, (list, dict, set)) and len(o) >= GROW_MIN:
            before = first.get((id(o), type(o)), 0)
            if len(o) > before:
                grown.append((len(o) - before, before, o))
    grown.sort(key=lambda g: -g[0])
    out = [f"containers: {sum(g[0] for g in grown):+d} items in {len(grown)} containers grown; most grown:"]
    for more, before, o in grown[:count]:
        items = list(o.items() if isinstance(o, dict) else o)[-2:] if not isinstance(o, set) else list(o)[:2]
        out.append(f"  {more:+d} items ({before} -> {len(o)}) {type(o).__name__} held by [{_holder(o)}]: "
                   f"{repr(items)[:160]}")
    return "\n".join(out)


def main() -> None:
    argv = sys.argv[1:]
    cut = argv.index("--") if "--" in argv else len(argv)
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--every", type=float, default=15.0, help="seconds between samples")
    parser.add_argument("--count", type=Path, default=None, help="a file whose lines count the pages done")
    parser.add_argument("--trace", type=int, nargs=2, metavar=("A", "B"), default=None)
    parser.add_argument("--trace-late", action="store_true", help="start tracing at A, not at the start")
    parser.add_argument("--grow", type=int, nargs=2, metavar=("A", "B"), default=None,
                        help="the lists, dicts and sets whose length grew most from A to B lines (no tracing)")
    args = parser.parse_args(argv[:cut])
    if cut == len(argv):
        parser.error("no command: give it after --")
    mallinfo, used, status = _libraries()
    if args.trace and not args.trace_late:
        tracemalloc.start(8)
    done = threading.Event()
    lengths: list = []  # --grow: the lengths at A, then None once compared

    def probe() -> None:
        snapshots = []
        while not done.wait(args.every):
            print(sample(args.count, mallinfo, used, status), file=sys.stderr, flush=True)
            if args.grow and len(lengths) < 2 and _lines(args.count) >= args.grow[len(lengths)]:
                lengths.append(_lengths() if not lengths else None)
                if len(lengths) == 2:
                    print(_longer(lengths[0]), file=sys.stderr, flush=True)
            if args.trace and len(snapshots) < 2 and _lines(args.count) >= args.trace[len(snapshots)]:
                if not tracemalloc.is_tracing():
                    tracemalloc.start(8)
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
        if len(lengths) == 1:  # (the command ended before B lines: compared at its end)
            print(_longer(lengths[0]), file=sys.stderr, flush=True)
        print("end: " + sample(args.count, mallinfo, used, status), file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
