#!/usr/bin/env python3
"""Whole-command speed: `templater extract` as a user runs it, against trafilatura and a plain lxml loop.

    python bench/bench_commands.py [CORPUS.jsonl.gz] [--suite all|sites|single] [--limit N] [--rounds K]
                                   [--variant ARGS ...] [--baseline TEMPLATER] [--startup-only] [--stages]

Every contestant is a separate process over the same pages, started the same way, in interleaved rounds (one
run of each per round, in a rotating order), so start-up, imports, reading the input, writing the output and,
for templater, the near-duplicate index and the stores are all counted:

  templater   `templater extract --db DB --output OUT --quiet` (index on) on a copy of a database that
              `templater ingest` + `templater build` filled before the rounds (not timed; a fresh copy each round)
  trafilatura a Python process reading the same pages (JSON Lines) and writing `trafilatura.extract(html, url=url)`
              of each as JSON Lines: what trafilatura's command line does per page
  lxml        a Python process reading the same pages and calling `lxml.html.fromstring` on each page's UTF-8
              bytes (the parsing floor; nothing written)

Start-up is timed the same way on the first STARTUP_PAGES pages: `templater --help`, `templater extract` of those
pages (its own database, ingested and built before the rounds; once more without the BLAS thread variables that
every other row gets, as a user's shell starts it) and the two loops on them; `--baseline
OTHER/bin/templater` adds another installation's two start-up commands and its `templater extract` (and each
variant) to the same rounds (e.g. the main branch's checkout, to compare a change in one run), each installation on
a database of its own that its own `ingest` + `build` filled (not timed): an older installation refuses a newer
schema, so an A/B across a migration cannot share one; each row is also printed against its baseline row, per round
and as the median of the per-round ratios. `--startup-only` times the start-up rows alone. Before the rounds the
project's modules are compiled to bytecode (what pip does when it installs a package; an editable install under
PYTHONDONTWRITEBYTECODE would otherwise compile them from source in every process), the baseline's into a bytecode
folder of the bench's own (PYTHONPYCACHEPREFIX), so nothing is written into the other checkout; each installation also
gets a cache folder of its own (TEMPLATER_CACHE: compiled regexes and code objects, the language model), written by
untimed warm-up runs, as one user's install has.

Wall time and CPU time (user + system of the child, from os.wait4's rusage) and each child's peak RSS are taken
per run; the table shows the median of the rounds, pages per second and per CPU second, and ratios to
trafilatura and to the lxml loop. `--variant "--no-index"` or `--variant "--jobs 2"` adds `templater extract`
with those options as further contestants (default: the plain command only). The machine's load average is
printed before and after: other processes on the machine slow every contestant, CPU time least.

Each `--jobs N` variant (N above 1) also runs once in a wrapper that reads, at exit, the CPU time of the writing
process itself and of its workers (getrusage SELF and CHILDREN): with those, the wall throughput against one process
is projected for W workers on W idle cores as T1 / max(writer, (writer + workers) / W), T1 being the `--jobs 1`
(or plain) command's CPU time: what a loaded machine's wall clock cannot show.

`--stages` runs `templater extract --jobs 1` once more after the rounds, on a fresh copy of the same database, under
bench/command_stages.py (each step of a page's extraction wrapped with a CPU clock in that process only) and prints
each step's CPU time a page; `--rounds 0 --stages` prints that alone.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from suites import suite_file  # noqa: E402

BIN = Path(sys.executable).parent
ONE_THREAD = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}  # BLAS spins a second thread otherwise
STARTUP_PAGES = 3  # pages of the start-up runs
STARTUP_GOAL_S = 0.3  # CPU seconds the start-up rows are measured against

TRAFILATURA_LOOP = """
import gzip, json, sys
import trafilatura
with gzip.open(sys.argv[1], "rt", encoding="utf-8") as f, open(sys.argv[2], "w", encoding="utf-8") as out:
    for number, line in enumerate(f):
        if number >= int(sys.argv[3]):
            break
        record = json.loads(line)
        text = trafilatura.extract(record["html"], url=record["url"])
        out.write(json.dumps({"url": record["url"], "text": text}, ensure_ascii=False) + "\\n")
"""

LXML_LOOP = """
import gzip, json, sys
import lxml.html
with gzip.open(sys.argv[1], "rt", encoding="utf-8") as f:
    for number, line in enumerate(f):
        if number >= int(sys.argv[3]):
            break
        html = json.loads(line)["html"]
        if html.strip():
            lxml.html.fromstring(html.encode("utf-8", "replace"))
"""

SPLIT_WRAPPER = """
import atexit, json, resource, sys
RECORD = sys.argv[1]
def report():
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    with open(RECORD, "w") as f:
        json.dump({"writer": own.ru_utime + own.ru_stime, "workers": children.ru_utime + children.ru_stime}, f)
atexit.register(report)
sys.argv = ["templater", *sys.argv[2:]]
import cli
cli.main()
"""
PROJECTED_WORKERS = (2, 8, 16)


@dataclass
class Runs:
    """The measurements of one contestant, one entry per round."""

    name: str
    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    rss_mb: list[float] = field(default_factory=list)


def timed_process(argv: list[str], *, env: dict[str, str]) -> tuple[float, float, float]:
    """Run a command to its end: (wall seconds, CPU seconds of the child, its peak RSS in MB)."""
    start = time.perf_counter()
    child = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    error = child.stderr.read().decode(errors="replace")
    child.stderr.close()
    if child.returncode != 0:
        raise SystemExit(f"{shlex.join(argv)} failed ({child.returncode}):\n{error}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def count_pages(path: Path, limit: int | None) -> int:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        n = sum(1 for line in f if line.strip())
    return min(n, limit) if limit else n


def limited_copy(path: Path, limit: int | None, folder: Path) -> Path:
    """The corpus itself, or its first ``limit`` records in a gzipped copy (what every contestant reads)."""
    if not limit:
        return path
    out = folder / "pages.jsonl.gz"
    with gzip.open(path, "rt", encoding="utf-8") as f, gzip.open(out, "wt", encoding="utf-8") as w:
        for number, line in enumerate(f):
            if number >= limit:
                break
            w.write(line)
    return out


PROJECT_MODULES = ("templater", "store", "cli")
COMPILE_PROJECT = """
import compileall, importlib.util, sys
from pathlib import Path
for name in sys.argv[1:]:
    spec = importlib.util.find_spec(name)
    for location in (spec.submodule_search_locations or [spec.origin]) if spec else []:
        target = Path(location)
        (compileall.compile_dir if target.is_dir() else compileall.compile_file)(target, quiet=1)
"""


CACHE_VARIABLE = "TEMPLATER_CACHE"  # each installation's cache folder (compiled regexes and code objects, the language
# model) is one of the bench's own: one user's install has a cache of its own, while the folder in the home
# directory is shared by every checkout on a machine (entries of all of them, written by whichever ran last)


def baseline_env(baseline: Path, folder: Path, env: dict[str, str]) -> dict[str, str]:
    """The environment of the baseline's runs: bytecode in a folder of our own (PYTHONPYCACHEPREFIX, written by the
    warm-up runs: nothing is written into the other checkout), as ours is beside its sources; without it, where
    PYTHONDONTWRITEBYTECODE is set, every baseline run would compile its project's modules from source."""
    baseline_env = {**env, "PYTHONPYCACHEPREFIX": str(folder / "baseline-pycache"),
                    CACHE_VARIABLE: str(folder / "baseline-cache")}
    baseline_env.pop("PYTHONDONTWRITEBYTECODE", None)
    subprocess.run([str(baseline.parent / "python"), "-c", COMPILE_PROJECT, *PROJECT_MODULES], env=baseline_env,
                   check=True, stdout=subprocess.DEVNULL)
    return baseline_env


def compile_project() -> None:
    """The project's modules compiled to bytecode beside their sources, as an install does."""
    subprocess.run([sys.executable, "-c", COMPILE_PROJECT, *PROJECT_MODULES], check=True, stdout=subprocess.DEVNULL)


def prepare_db(pages: Path, db: Path, env: dict[str, str], templater: Path | None = None) -> None:
    """Ingest and build once with ``templater`` (default: ours; not timed): the stored pages and templates every
    extract round of that installation starts from."""
    templater = str(templater or BIN / "templater")
    for argv in ([templater, "ingest", str(pages), "--db", str(db), "--quiet"],
                 [templater, "build", "--db", str(db), "--quiet"]):
        timed_process(argv, env=env)


BASELINE_PREFIX = "baseline "  # the baseline installation's contestants are named so


def database_of(name: str, ours: Path, baselines: Path | None) -> Path:
    """The database a contestant's rounds start from: the baseline installation's own for its contestants (filled
    by its own ingest + build, in the schema it knows), ours for the others."""
    return baselines if name.startswith(BASELINE_PREFIX) and baselines is not None else ours


def remove_db(db: Path) -> None:
    """A database gone with its -wal and -shm files."""
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)


def fresh_db(base: Path, target: Path) -> None:
    remove_db(target)
    shutil.copyfile(base, target)


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", nargs="?", type=Path, help="JSON Lines pages (default: the dev corpus suite)")
    parser.add_argument("--suite", default="all", choices=("all", "sites", "single"),
                        help="dev-corpus suite when no corpus is given (default: all)")
    parser.add_argument("--limit", type=int, default=None, help="first N pages only")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (default 3); medians are shown")
    parser.add_argument("--variant", action="append", default=[],
                        help='further `templater extract` options to time as another contestant, e.g. "--jobs 2"')
    parser.add_argument("--baseline", type=Path, default=None,
                        help="another installation's templater executable: its start-up rows and its extract (and "
                             "variants) in the same rounds")
    parser.add_argument("--startup-only", action="store_true", help="time the start-up rows only")
    parser.add_argument("--stages", action="store_true",
                        help="after the rounds, one more `extract --jobs 1` with each step's CPU time a page")
    args = parser.parse_args()

    corpus = args.corpus or suite_file(args.suite)
    compile_project()
    with tempfile.TemporaryDirectory(prefix="bench-commands-") as tmp:
        folder = Path(tmp)
        env = {**os.environ, **ONE_THREAD, CACHE_VARIABLE: str(folder / "cache")}
        pages = limited_copy(corpus, args.limit, folder)
        n = count_pages(pages, None)
        limit = str(n)
        envs: dict[str, dict[str, str]] = {}
        theirs_env = baseline_env(args.baseline, folder, env) if args.baseline else None
        base = folder / "base.db"
        their_base = folder / "baseline-base.db" if args.baseline else None
        if not args.startup_only:
            prepare_db(pages, base, env)
            if args.baseline:
                prepare_db(pages, their_base, theirs_env, args.baseline)
        small_folder = folder / "startup"
        small_folder.mkdir()
        small_pages = limited_copy(pages, STARTUP_PAGES, small_folder)
        small_base, small_db = small_folder / "base.db", small_folder / "round.db"
        prepare_db(small_pages, small_base, env)
        their_small_base = small_folder / "baseline-base.db" if args.baseline else None
        if args.baseline:
            prepare_db(small_pages, their_small_base, theirs_env, args.baseline)
        small = str(STARTUP_PAGES)
        startup = {
            "templater --help": ([str(BIN / "templater"), "--help"], None),
            f"templater extract, {small} pages": ([str(BIN / "templater"), "extract", "--db", str(small_db),
                                                   "--output", str(small_folder / "out.jsonl"), "--quiet"], small_base),
            f"trafilatura loop, {small} pages": ([sys.executable, "-c", TRAFILATURA_LOOP, str(small_pages),
                                                  str(small_folder / "out.jsonl"), small], None),
            f"lxml loop, {small} pages": ([sys.executable, "-c", LXML_LOOP, str(small_pages), os.devnull, small], None),
        }
        # the same extract as a user's shell starts it, without the thread variables every other row gets: what the
        # program's own BLAS setting (cli.one_blas_thread) leaves of OpenBLAS's threads
        plain = f"templater extract, {small} pages, thread variables unset"
        startup[plain] = startup[f"templater extract, {small} pages"]
        envs[plain] = {k: v for k, v in env.items() if k not in ONE_THREAD}
        warm = ["templater --help", f"templater extract, {small} pages"]
        if args.baseline:
            startup[f"{BASELINE_PREFIX}templater --help"] = ([str(args.baseline), "--help"], None)
            startup[f"{BASELINE_PREFIX}templater extract, {small} pages"] = (
                [str(args.baseline), *startup[f"templater extract, {small} pages"][0][1:]], their_small_base)
            envs.update(dict.fromkeys((f"{BASELINE_PREFIX}templater --help",
                                       f"{BASELINE_PREFIX}templater extract, {small} pages"), theirs_env))
            warm += list(envs)
        for name in warm:  # warm-up runs (not timed): the bytecode of every module they import and each
            argv, start_db = startup[name]  # installation's own caches (code, language model) are written
            if start_db is not None:
                fresh_db(start_db, small_db)
            timed_process(argv, env=envs.get(name, env))
        started = {name: Runs(name) for name in startup}
        db, out = folder / "round.db", folder / "out.jsonl"
        templater = [str(BIN / "templater"), "extract", "--db", str(db), "--output", str(out), "--quiet"]
        contestants: dict[str, list[str]] = {
            "templater extract": templater,
            **{f"templater extract {v}": templater + shlex.split(v) for v in args.variant},
            "trafilatura loop": [sys.executable, "-c", TRAFILATURA_LOOP, str(pages), str(out), limit],
            "lxml loop": [sys.executable, "-c", LXML_LOOP, str(pages), str(out), limit],
        }
        if args.baseline:  # the other installation's extract (and each variant) on its own database, same rounds
            theirs = [str(args.baseline), *templater[1:]]
            contestants.update({f"{BASELINE_PREFIX}templater extract": theirs,
                                **{f"{BASELINE_PREFIX}templater extract {v}": theirs + shlex.split(v)
                                   for v in args.variant}})
            envs.update(dict.fromkeys([name for name in contestants if name.startswith(BASELINE_PREFIX)], theirs_env))
        if args.startup_only:
            contestants = {}
        runs = {name: Runs(name) for name in contestants}
        print(f"{n} pages ({corpus.name}), {args.rounds} rounds; load average at start {load_average()}",
              flush=True)
        names = list(contestants)
        for round_number in range(args.rounds):
            shift = round_number % max(len(names), 1)
            for name in names[shift:] + names[:shift]:
                fresh_db(database_of(name, base, their_base), db)
                wall, cpu, rss = timed_process(contestants[name], env=envs.get(name, env))
                runs[name].wall.append(wall)
                runs[name].cpu.append(cpu)
                runs[name].rss_mb.append(rss)
            order = list(startup)
            order = order[round_number % len(order):] + order[:round_number % len(order)]
            for name in order:
                argv, start_db = startup[name]
                if start_db is not None:
                    fresh_db(start_db, small_db)
                wall, cpu, rss = timed_process(argv, env=envs.get(name, env))
                started[name].wall.append(wall)
                started[name].cpu.append(cpu)
                started[name].rss_mb.append(rss)
            print(f"round {round_number + 1}: " + ", ".join(
                f"{name} {runs[name].wall[-1]:.2f}s/{runs[name].cpu[-1]:.2f}cpu" for name in names), flush=True)
        splits = {}
        for variant in args.variant:
            jobs = job_count(variant)
            if jobs > 1:
                fresh_db(base, db)
                record = folder / "split.json"
                timed_process([sys.executable, "-c", SPLIT_WRAPPER, str(record), *templater[1:],
                               *shlex.split(variant)], env=env)
                splits[variant] = json.loads(record.read_text())
        if args.stages:
            fresh_db(base, db)
            print(f"\nsteps of `templater extract --jobs 1` (bench/command_stages.py), load average {load_average()}",
                  flush=True)
            subprocess.run([sys.executable, str(Path(__file__).resolve().parent / "command_stages.py"), "--pages",
                            limit, "--", *templater[1:], "--jobs", "1"], env=env, check=True)
        print(f"load average at end {load_average()}")
    if args.rounds == 0:
        return 0
    if runs:
        print_table(runs, n)
        print_against_baseline(runs)
    print_startup(started)
    print_against_baseline(started)
    print_projection(runs, splits, args.variant)
    return 0


def job_count(variant: str) -> int:
    words = shlex.split(variant)
    for flag in ("--jobs", "-j"):
        if flag in words and words.index(flag) + 1 < len(words):
            return int(words[words.index(flag) + 1])
    return 0


def print_projection(runs: dict[str, Runs], splits: dict[str, dict], variants: list[str]) -> None:
    if not splits:
        return
    one = next((f"templater extract {v}" for v in variants if job_count(v) == 1), "templater extract")
    t1 = statistics.median(runs[one].cpu)
    print(f"\n--jobs: CPU of the writing process and of its workers (one run each); projected wall throughput "
          f"against one process ({one}: {t1:.2f} CPU s) for W workers on W idle cores")
    for variant, split in splits.items():
        writer, workers = split["writer"], split["workers"]
        projected = "  ".join(f"W={w}: {t1 / max(writer, (writer + workers) / w):.2f}x" for w in PROJECTED_WORKERS)
        print(f"{variant:12} writer {writer:6.2f} s  workers {workers:6.2f} s  total {writer + workers:6.2f} s "
              f"({(writer + workers) / t1:.2f}x one process's)  {projected}")


def print_against_baseline(runs: dict[str, Runs]) -> None:
    """Each templater row against the baseline's row of the same options: CPU and wall, per round and the median
    of the per-round ratios (the two ran in the same round, on the same machine load)."""
    pairs = [(name, f"baseline {name}") for name in runs if f"baseline {name}" in runs]
    if not pairs:
        return
    print("\nagainst the baseline (its time / ours: above 1, ours is faster), per round and median")
    for ours, theirs in pairs:
        cpu = [b / a for a, b in zip(runs[ours].cpu, runs[theirs].cpu)]
        wall = [b / a for a, b in zip(runs[ours].wall, runs[theirs].wall)]
        print(f"{ours:34} CPU {statistics.median(cpu):.3f}x ({' '.join(f'{x:.3f}' for x in cpu)})  "
              f"wall {statistics.median(wall):.3f}x ({' '.join(f'{x:.3f}' for x in wall)})")


def print_startup(runs: dict[str, Runs]) -> None:
    width = max(34, *map(len, runs))
    print(f"\n{'start-up (median of rounds)':{width}} {'wall s':>7} {'CPU s':>7} {'peak RSS MB':>11}  goal "
          f"{STARTUP_GOAL_S} CPU s (templater rows)")
    for name, r in runs.items():
        print(f"{name:{width}} {statistics.median(r.wall):7.2f} {statistics.median(r.cpu):7.3f} {max(r.rss_mb):11.0f}")


def print_table(runs: dict[str, Runs], n: int) -> None:
    wall = {name: statistics.median(r.wall) for name, r in runs.items()}
    cpu = {name: statistics.median(r.cpu) for name, r in runs.items()}
    print(f"\n{'command (median of rounds)':34} {'wall s':>7} {'CPU s':>7} {'pages/s':>8} {'pages/CPU s':>11} "
          f"{'x traf wall':>11} {'x traf CPU':>10} {'x lxml wall':>11} {'x lxml CPU':>10} {'peak RSS MB':>11}")
    for name, r in runs.items():
        print(f"{name:34} {wall[name]:7.2f} {cpu[name]:7.2f} {n / wall[name]:8.1f} {n / cpu[name]:11.1f} "
              f"{wall['trafilatura loop'] / wall[name]:11.2f} {cpu['trafilatura loop'] / cpu[name]:10.2f} "
              f"{wall['lxml loop'] / wall[name]:11.2f} {cpu['lxml loop'] / cpu[name]:10.2f} "
              f"{max(r.rss_mb):11.0f}")
    print("\nx traf / x lxml: how many times faster than trafilatura's / the lxml loop's process "
          "(above 1: faster; per CPU second in the CPU columns)")


if __name__ == "__main__":
    sys.exit(main())
