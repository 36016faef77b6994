"""The command line's process ends without the cyclic collector's passes over every module's objects
(cli.before_teardown): what it leaves on disk and writes is what it left and wrote before, command by command."""

from __future__ import annotations

import gc
import gzip
import json
import re
import subprocess
import sys
import weakref

import pytest

import cli
from sitegen import article_html

OURS = [sys.executable, "-c", "import cli; cli.main()"]
TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00")
WITHOUT = [sys.executable, "-c", "import cli; cli.before_teardown = lambda: None; cli.main()"]  # as before


def _pages(path, count=8):
    with gzip.open(path, "wt", encoding="utf-8") as f:
        for seed in range(count):
            html, _ = article_html(seed)
            f.write(json.dumps({"id": f"p{seed}", "url": f"https://news.example.com/story/{seed}.html",
                                "html": html}) + "\n")
    return path


def _run(argv, cwd):
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return TIME.sub("TIME", done.stdout)  # (`rules list` shows when each template was learned)


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_every_command_leaves_the_files_and_output_it_left_before(tmp_path, jobs):
    pages = _pages(tmp_path / "pages.jsonl.gz")
    left = {}
    for name, argv in (("ours", OURS), ("before", WITHOUT)):
        folder = tmp_path / name
        folder.mkdir()
        files, outputs = [], []
        for command in (["ingest", str(pages)], ["build"], ["extract", "--output", "out.jsonl"],
                        ["run", str(pages), "--output", "run.jsonl"], ["rules", "list"]):
            outputs.append(_run([*argv, *command, "--db", "t.db", "--jobs", jobs, "--quiet"]
                                if command[0] != "rules" else [*argv, *command, "--db", "t.db"], folder))
            files.append(sorted(p.name for p in folder.iterdir()))
        outputs += [(folder / "out.jsonl").read_text(), (folder / "run.jsonl").read_text()]
        left[name] = files, outputs
    assert left["ours"] == left["before"]
    writers = left["ours"][0][:4]  # ingest, build, extract, run: their WAL checkpointed as their connection closed
    assert all(not name.endswith(("-wal", "-shm")) for names in writers for name in names)
    assert len(left["ours"][1][-2].splitlines()) == 8


def test_before_teardown_collects_the_garbage_then_freezes_what_is_left():
    class Cycle:
        pass

    first, second = Cycle(), Cycle()
    first.other, second.other = second, first
    gone = weakref.ref(first)
    del first, second
    kept = Cycle()
    kept.itself = kept
    frozen = gc.get_freeze_count()
    try:
        cli.before_teardown()
        assert gone() is None  # collected, not frozen
        assert gc.get_freeze_count() > frozen and kept not in gc.get_objects()  # frozen: out of the collections
    finally:
        gc.unfreeze()
