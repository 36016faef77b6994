"""bench/probe_memory.py: a command run in-process with its memory sampled."""

import re
import subprocess
import sys

from conftest import ROOT


def test_the_probe_samples_the_command_and_the_command_does_its_work(tmp_path):
    db, out = tmp_path / "s.db", tmp_path / "out.jsonl"
    subprocess.run([sys.executable, "-m", "cli", "run", str(ROOT / "samples" / "docs.warc.gz"), "--db", str(db),
                    "--output", str(tmp_path / "run.jsonl"), "-q"], cwd=ROOT, check=True, timeout=600)
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "probe_memory.py"), "--every", "0.05", "--count",
                           str(out), "--grow", "0", "1000000", "--", "extract", "--db", str(db), "--output", str(out),
                           "--quiet", "--jobs", "1"],
                          capture_output=True, text=True, timeout=600, check=True)
    pages = sum(1 for _ in out.open())
    assert pages > 0
    last = re.search(r"^end: +(\d+) lines  RssAnon (\d+) RssFile \d+  SQLite \d+  heap arena.*"
                     r"Python arenas \d+ \(blocks in use ([\d.]+)\).*peak RSS (\d+)", done.stderr, re.M)
    assert last and int(last.group(1)) == pages and int(last.group(2)) > 0
    assert float(last.group(3)) > 0 and int(last.group(4)) >= int(last.group(2))
    # --grow: taken at the first sample (0 lines), compared at the end (the run never reached B): the containers that
    # grew, each with its holder
    grown = re.search(r"^containers: \+(\d+) items in (\d+) containers grown; most grown:\n  \+\d+ items "
                      r"\(\d+ -> \d+\) (list|dict|set) held by \[", done.stderr, re.M)
    assert grown and int(grown.group(1)) > 0, done.stderr[-2000:]
