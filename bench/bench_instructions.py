#!/usr/bin/env python3
"""Instructions, not seconds: `templater extract --jobs 1` (index on) counted by valgrind's callgrind, for this
installation and optionally another one, on the same pages.

    python bench/bench_instructions.py [CORPUS.jsonl.gz] [--limit 300] [--baseline OTHER/.venv/bin/templater]
                                       [--jobs N]

Default corpus: the dev corpus's `all` suite (bench/suites.py). Each installation ingests and builds the first
--limit pages into a database of its own (not counted: each writes the schema it knows) and extracts a copy of it
once (not counted: what a first start writes, bytecode and the copies in its cache folder, one of the bench's own for
each installation, is written), then its
`extract` runs under callgrind with every child process traced; the instructions of all its processes are summed.
The project's modules are compiled to bytecode first, the baseline's into a folder of the bench's own
(PYTHONPYCACHEPREFIX, as bench_commands.py does): where PYTHONDONTWRITEBYTECODE is set, an installation without
bytecode would otherwise be counted compiling its sources. A count does not
move with the load of a shared machine, so two installations compare like for like where timed rounds cannot; it
weighs every instruction alike (a cache miss costs no more than an add), so it is a check beside the timed
benchmarks (bench_commands.py, bench_extract.py), not a replacement. The outputs of the two installations are
compared byte for byte. Needs `valgrind` on PATH.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_commands import BIN, CACHE_VARIABLE, ONE_THREAD, baseline_env, compile_project, limited_copy  # noqa: E402
from suites import suite_file  # noqa: E402

COLLECTED = re.compile(r"Collected : (\d+)")


def count(templater: str, pages: Path, folder: Path, env: dict[str, str], jobs: int = 1) -> tuple[int, Path]:
    """(instructions of `extract --jobs JOBS` over ``pages``, its processes summed, and its output file) for one
    installation, after an uncounted extract of a copy of the same database (what a start writes once, the bytecode
    of the modules it imports and the user's cache folder's copies, is written by then: the count is a user's next
    run's)."""
    folder.mkdir(parents=True)
    db, out = folder / "bench.db", folder / "out.jsonl"
    for argv in ([templater, "ingest", str(pages)], [templater, "build"]):
        subprocess.run([*argv, "--db", str(db), "--jobs", "1", "--quiet"], check=True, env=env)
    warm = folder / "warm-up.db"
    shutil.copyfile(db, warm)
    subprocess.run([templater, "extract", "--db", str(warm), "--jobs", str(jobs), "--output", os.devnull, "--quiet"],
                   check=True, env=env)
    run = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", "--trace-children=yes",
                          templater, "extract", "--db", str(db), "--jobs", str(jobs), "--output", str(out), "--quiet"],
                         env=env, capture_output=True, text=True)
    if run.returncode:
        sys.exit(f"{templater} extract failed under callgrind:\n{run.stderr[-2000:]}")
    return sum(int(n) for n in COLLECTED.findall(run.stderr)), out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("corpus", nargs="?", type=Path)
    parser.add_argument("--limit", type=int, default=300)
    parser.add_argument("--baseline", help="another installation's templater executable")
    parser.add_argument("--jobs", type=int, default=1, help="extract's --jobs (default 1; workers' counts are summed)")
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        sys.exit("valgrind is not on PATH")
    with tempfile.TemporaryDirectory(prefix="bench-instructions-") as tmp:
        folder = Path(tmp)
        pages = limited_copy(args.corpus or suite_file("all"), args.limit, folder)
        env = {**os.environ, **ONE_THREAD}
        compile_project()  # our bytecode beside the sources, the baseline's in a folder of the bench's own
        # ours gets a cache folder of its own too (compiled regexes and code objects, the language model), written by
        # its uncounted run: the home folder's is shared by every checkout on the machine, and other checkouts' runs
        # between our warm-up and our count rewrote it, leaving our start-up to compile again (counted against us)
        ours, our_out = count(str(BIN / "templater"), pages, folder / "ours",
                              {**env, CACHE_VARIABLE: str(folder / "ours-cache")}, args.jobs)
        print(f"templater extract --jobs {args.jobs}, {args.limit} pages: {ours:,} instructions ({ours / args.limit:,.0f} a page)")
        if args.baseline:
            theirs, their_out = count(args.baseline, pages, folder / "baseline",
                                      baseline_env(Path(args.baseline), folder, env), args.jobs)
            same = our_out.read_bytes() == their_out.read_bytes()
            print(f"baseline {args.baseline}: {theirs:,} instructions ({theirs / args.limit:,.0f} a page)")
            print(f"ours / baseline: {ours / theirs:.3f} ({100 * (ours / theirs - 1):+.1f}%); "
                  f"outputs {'identical' if same else 'DIFFERENT'}")


if __name__ == "__main__":
    main()
