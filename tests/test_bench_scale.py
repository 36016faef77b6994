"""bench/bench_scale.py --reuse: extract measured again on fresh copies of databases an earlier run kept (the kept
ones never written), with another installation in turn (--baseline) and in rounds."""

import hashlib
import subprocess
import sys

from conftest import ROOT

sys.path.insert(0, str(ROOT / "bench"))
import bench_commands  # noqa: E402
from test_bench_commands import _pages  # noqa: E402

TEMPLATER = str(bench_commands.BIN / "templater")
SCRIPT = str(ROOT / "bench" / "bench_scale.py")


def _kept_store(folder, size=6):
    """DIR/scale-N.db as `--stages ingest build --keep DIR` leaves it: ingested and built, not extracted."""
    pages = _pages(folder / "pages.jsonl.gz", size)
    kept = folder / "kept"
    kept.mkdir()
    db = kept / f"scale-{size}.db"
    for argv in (["ingest", str(pages)], ["build"]):
        subprocess.run([TEMPLATER, *argv, "--db", str(db), "--quiet"], check=True, capture_output=True)
    return kept, db


def _digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_reuse_extracts_copies_of_the_kept_databases_in_rounds_with_the_baseline(tmp_path):
    kept, db = _kept_store(tmp_path)
    before = _digest(db)
    out = subprocess.run([sys.executable, SCRIPT, "--sizes", "6", "--reuse", str(kept), "--baseline", TEMPLATER,
                          "--rounds", "2", "--keep", str(tmp_path / "work")], capture_output=True, text=True,
                         check=True).stdout
    runs = [line for line in out.splitlines() if line.strip().startswith("6 pages")]
    assert [("baseline extract" in line) for line in runs] == [False, True, True, False]  # (alternating by round)
    assert all("peak RSS" in line for line in runs)
    assert any(line.startswith("extract ") for line in out.splitlines())
    assert any(line.startswith("baseline extract ") for line in out.splitlines())
    assert _digest(db) == before  # (the kept database is never written)
    copies = sorted(p.name for p in (tmp_path / "work").glob("*.db"))
    assert copies == ["scale-6-baseline.db", "scale-6.db"]
    for name in copies:  # (each copy was extracted: the extraction rows are there)
        assert subprocess.run([sys.executable, "-c", "import sqlite3, sys; print(sqlite3.connect(sys.argv[1])"
                               ".execute('SELECT count(*) FROM extractions').fetchone()[0])",
                               str(tmp_path / "work" / name)], capture_output=True, text=True).stdout.strip() == "6"


def test_reuse_refuses_its_own_folder_as_keep_and_a_missing_database(tmp_path):
    kept, db = _kept_store(tmp_path)
    same = subprocess.run([sys.executable, SCRIPT, "--sizes", "6", "--reuse", str(kept), "--keep", str(kept)],
                          capture_output=True, text=True)
    assert same.returncode == 2 and "--keep must be another folder" in same.stderr and db.exists()
    missing = subprocess.run([sys.executable, SCRIPT, "--sizes", "7", "--reuse", str(kept)], capture_output=True,
                             text=True)
    assert missing.returncode != 0 and "scale-7.db does not exist" in missing.stderr
