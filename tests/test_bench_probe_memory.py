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
                           str(out), "--", "extract", "--db", str(db), "--output", str(out), "--quiet", "--jobs", "1"],
                          capture_output=True, text=True, timeout=600, check=True)
    pages = sum(1 for _ in out.open())
    assert pages > 0
    last = re.search(r"^end: +(\d+) lines  RssAnon (\d+) RssFile \d+  SQLite \d+  heap arena", done.stderr, re.M)
    assert last and int(last.group(1)) == pages and int(last.group(2)) > 0
