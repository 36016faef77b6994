"""bench/bench_commands.py --baseline: each installation's rounds start from a database its own ingest + build made,
so an A/B across a schema migration runs (an older installation refuses a newer schema)."""

import gzip
import json
import os
import subprocess
import sys

import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT / "bench"))
import bench_commands  # noqa: E402

# A stand-in for an older installation: our templater, except that its extract refuses a database its own ingest did
# not make (as an older templater refuses a schema newer than its own)
OLDER = """\
import os, sqlite3, subprocess, sys
TEMPLATER = {templater!r}
args = sys.argv[1:]
db = args[args.index("--db") + 1] if "--db" in args else "templater.db"
if args[:1] == ["ingest"]:
    code = subprocess.call([TEMPLATER, *args])
    with sqlite3.connect(db) as con:
        con.execute("CREATE TABLE IF NOT EXISTS older_installation (made INTEGER)")
    con.close()
    sys.exit(code)
if args[:1] == ["extract"]:
    con = sqlite3.connect(db)
    mine = con.execute("SELECT 1 FROM sqlite_master WHERE name = 'older_installation'").fetchone()
    con.close()
    if not mine:
        sys.exit(f"error: {{db}}: its pages schema is newer than this templater's")
os.execv(TEMPLATER, [TEMPLATER, *args])
"""


def _pages(path, n=3):
    with gzip.open(path, "wt", encoding="utf-8") as f:
        for i in range(n):
            body = " ".join(f"Sentence {i} {w} of an article about gardens and rivers." for w in range(30))
            f.write(json.dumps({"id": f"s/{i}", "url": f"https://example.org/posts/{i}.html",
                                "html": f"<html><head><title>Post {i}</title></head><body><nav>Home About"
                                        f"</nav><article><h1>Post {i}</h1><p>{body}</p></article>"
                                        "<footer>(c) Example</footer></body></html>"}) + "\n")
    return path


@pytest.fixture
def older(tmp_path):
    folder = tmp_path / "older" / "bin"  # laid out as an installation: its python beside its templater
    folder.mkdir(parents=True)
    (folder / "python").symlink_to(sys.executable)
    script = folder / "templater"
    script.write_text(f"#!{sys.executable}\n" + OLDER.format(templater=str(bench_commands.BIN / "templater")))
    script.chmod(0o755)
    return script


def test_each_installation_has_a_database_of_its_own(tmp_path):
    ours, theirs = tmp_path / "ours.db", tmp_path / "theirs.db"
    assert bench_commands.database_of("templater extract", ours, theirs) == ours
    assert bench_commands.database_of("templater extract --jobs 2", ours, theirs) == ours
    assert bench_commands.database_of("lxml loop", ours, theirs) == ours
    assert bench_commands.database_of("baseline templater extract", ours, theirs) == theirs
    assert bench_commands.database_of("baseline templater extract --jobs 2", ours, theirs) == theirs
    assert bench_commands.database_of("baseline templater extract", ours, None) == ours


def test_the_older_installation_extracts_from_its_own_database_and_refuses_ours(tmp_path, older):
    pages = _pages(tmp_path / "pages.jsonl.gz")
    env = {**os.environ, **bench_commands.ONE_THREAD}
    ours, theirs = tmp_path / "ours.db", tmp_path / "theirs.db"
    bench_commands.prepare_db(pages, ours, env)
    bench_commands.prepare_db(pages, theirs, env, older)
    round_db = tmp_path / "round.db"
    extract = [str(older), "extract", "--db", str(round_db), "--output", str(tmp_path / "out.jsonl"), "--quiet"]
    bench_commands.fresh_db(bench_commands.database_of("baseline templater extract", ours, theirs), round_db)
    wall, cpu, rss = bench_commands.timed_process(extract, env=env)
    assert wall > 0 and cpu > 0 and rss > 0
    assert len((tmp_path / "out.jsonl").read_text().splitlines()) == 3
    bench_commands.fresh_db(ours, round_db)  # what the bench did before: the older installation on our database
    with pytest.raises(SystemExit, match="newer than this templater"):
        bench_commands.timed_process(extract, env=env)


def test_the_bench_runs_an_a_b_against_an_installation_that_refuses_our_schema(tmp_path, older):
    pytest.importorskip("trafilatura")  # a contestant of every run (the bench extra)
    pages = _pages(tmp_path / "pages.jsonl.gz", n=4)
    run = subprocess.run([sys.executable, str(ROOT / "bench" / "bench_commands.py"), str(pages), "--rounds", "1",
                          "--baseline", str(older)], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    rows = {line.split("  ")[0].strip() for line in run.stdout.splitlines()}
    assert {"baseline templater extract", "baseline templater --help", "baseline templater extract, 3 pages",
            "templater extract"} <= rows
    assert "against the baseline" in run.stdout
