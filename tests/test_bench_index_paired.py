"""bench/bench_index_paired.py: two indexes fed the same synthetic batches in lockstep, one process a side."""

import re
import subprocess
import sys

from conftest import ROOT


def test_two_sides_get_the_same_batches_and_find_the_same_copies(tmp_path):
    """With one setting apart (the anchor keys: 12 first against 10 first + 2 last), both sides index the same
    planted copies (same clusters, same key rows: the keys a page has are as many), every tenth is reported, and
    the databases go unless kept."""
    out = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "bench_index_paired.py"), "--n", "2000", "--batch", "200",
         "--a", '{"anchor_keys": 12, "anchor_tail_keys": 0}', "--b", '{"anchor_keys": 10, "anchor_tail_keys": 2}',
         "--dir", str(tmp_path / "paired")],
        check=True, capture_output=True, text=True, timeout=300).stdout
    assert len(re.findall(r"^ +[\d,]+ pages  A +[\d,]+  B +[\d,]+ per CPU second", out, re.M)) == 10
    assert re.search(r"^whole run: A [\d,]+, B [\d,]+ pages per CPU second \(B/A [+-]\d+\.\d\d%\)", out, re.M)
    sides = re.findall(r"^  ([AB]): ([\d,]+) clusters holding ([\d,]+) pages; ([\d,]+) key rows", out, re.M)
    assert [s[0] for s in sides] == ["A", "B"]
    assert sides[0][1:] == sides[1][1:] and int(sides[0][1].replace(",", "")) > 0
    assert not list((tmp_path / "paired").glob("*.db"))
