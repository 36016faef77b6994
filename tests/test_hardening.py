"""Bad input never stops a run, no page hangs one, no command writes where it should not: each case from the user's
side (the CLI through typer's runner, or a subprocess where the process itself matters)."""

from __future__ import annotations

import gc
import gzip
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli import app
from store import pages as page_store
from store import templates as template_store
from templater import config

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples" / "pages.jsonl.gz"
TEMPLATER = [sys.executable, "-c", "import cli; cli.main()"]
GOOD = '<html><head><title>Page {n}</title></head><body><h1>Page {n}</h1><p>Some words of page {n}, long enough ' \
       'to be a paragraph of text worth keeping.</p></body></html>'


def invoke(*args: str):
    return CliRunner().invoke(app, [str(a) for a in args])


def good(n: int, host: str = "ok.example") -> str:
    return json.dumps({"url": f"http://{host}/p{n}.html", "html": GOOD.format(n=n)})


def one_line_error(result) -> str:
    """The run failed with one clear line on stderr and no traceback."""
    assert result.exit_code != 0
    assert "Traceback" not in result.output and result.exception is None or isinstance(result.exception, SystemExit)
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), result.output
    return lines[0]


def rows(db: Path, sql: str) -> list:
    conn = sqlite3.connect(db)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def copy_db(source: Path, target: Path) -> None:
    """A consistent copy of a WAL database (its -wal file included), by SQLite's backup."""
    src, dst = sqlite3.connect(source), sqlite3.connect(target)
    try:
        src.backup(dst)
    finally:
        src.close()
        dst.close()


def skipped(db: Path) -> dict[str, int]:
    return dict(rows(db, "SELECT reason, count(*) FROM skips GROUP BY reason"))


# --- one record never stops a run ------------------------------------------------------------------------------

def test_a_100k_deep_json_line_is_a_skip_and_the_pages_around_it_are_kept(tmp_path):
    crawl = tmp_path / "deep.jsonl"
    crawl.write_text(good(1) + "\n" + "[" * 100_000 + "]" * 100_000 + "\n" + good(2) + "\n", encoding="utf-8")
    db, out = tmp_path / "t.db", tmp_path / "out.jsonl"
    result = invoke("run", crawl, "--db", db, "--output", out)
    assert result.exit_code == 0, result.output
    assert "bad-record=1" in result.output and "Traceback" not in result.output
    assert sorted(json.loads(line)["url"] for line in out.read_text().splitlines()) == [
        "http://ok.example/p1.html", "http://ok.example/p2.html"]
    assert skipped(db) == {"bad-record": 1}


@pytest.mark.parametrize("field", ["id", "url", "fetched_at"])
def test_a_lone_surrogate_in_a_field_is_a_bad_text_skip(tmp_path, field):
    record = {"url": "http://ok.example/a", "id": "a", "fetched_at": "2024-01-01", "html": "<p>x y z</p>"}
    line = json.dumps(record).replace(f'"{record[field]}"', f'"{record[field][:-1]}\\udc80{record[field][-1]}"')
    crawl = tmp_path / "surrogate.jsonl"
    crawl.write_text(good(1) + "\n" + line + "\n" + good(2) + "\n", encoding="utf-8")
    db = tmp_path / "t.db"
    result = invoke("run", crawl, "--db", db, "--output", tmp_path / "out.jsonl")
    assert result.exit_code == 0, result.output
    assert skipped(db) == {"bad-text": 1}
    assert rows(db, "SELECT count(*) FROM pages") == [(2,)]
    (detail,) = rows(db, "SELECT detail FROM skips")[0]
    assert field in detail and "surrogate" in detail


def test_an_exception_inside_one_record_is_a_counted_skip_and_its_batch_commits(tmp_path, monkeypatch):
    from templater import pipeline
    real = pipeline.segment
    def failing(root, page):
        if page.url.endswith("/p2.html"):
            raise ZeroDivisionError("a bug met on one page")
        return real(root, page)
    monkeypatch.setattr(pipeline, "segment", failing)
    crawl = tmp_path / "c.jsonl"
    crawl.write_text("\n".join(good(n) for n in range(1, 5)) + "\n", encoding="utf-8")
    db = tmp_path / "t.db"
    result = invoke("ingest", crawl, "--db", db)
    assert result.exit_code == 0, result.output
    assert "error=1" in result.output
    assert rows(db, "SELECT count(*) FROM pages") == [(3,)]
    assert rows(db, "SELECT reason, detail FROM skips") == [("error", "ZeroDivisionError: a bug met on one page")]


# --- no page hangs a run ---------------------------------------------------------------------------------------

def test_pages_over_the_limits_are_skipped_before_lxml_parses_them(tmp_path):
    attributes = "<html><body><p " + " ".join(f"a{i}=1" for i in range(100_000)) + ">x</p></body></html>"
    quoted = "<html><body><p " + " ".join(f'a{i}=">"' for i in range(config.MAX_ATTRIBUTES + 1)) + ">x</p></body>"
    breaks = "<html><body>" + "<br>" * (config.MAX_START_TAGS + 1) + "</body></html>"
    records = [good(1), json.dumps({"url": "http://big.example/attrs", "html": attributes}),
               json.dumps({"url": "http://big.example/quoted", "html": quoted}),
               json.dumps({"url": "http://big.example/breaks", "html": breaks}), good(2)]
    crawl = tmp_path / "big.jsonl"
    crawl.write_text("\n".join(records) + "\n", encoding="utf-8")
    db = tmp_path / "t.db"
    result = invoke("run", crawl, "--db", db, "--output", tmp_path / "out.jsonl")
    assert result.exit_code == 0, result.output
    assert skipped(db) == {"over-limit": 3}
    details = dict(rows(db, "SELECT url, detail FROM skips"))
    assert details["http://big.example/attrs"] == f"100000 attributes in one tag (limit {config.MAX_ATTRIBUTES})"
    assert "start tags" in details["http://big.example/breaks"]
    assert rows(db, "SELECT count(*) FROM extractions") == [(2,)]


def test_a_page_with_more_blocks_than_the_limit_is_skipped(tmp_path):
    page = "<html><body>" + "<p>x</p>" * (config.MAX_BLOCKS + 1) + "</body></html>"
    crawl = tmp_path / "blocks.jsonl"
    crawl.write_text(json.dumps({"url": "http://big.example/p", "html": page}) + "\n" + good(1) + "\n")
    db = tmp_path / "t.db"
    assert invoke("ingest", crawl, "--db", db).exit_code == 0
    assert rows(db, "SELECT reason, detail FROM skips") == [
        ("over-limit", f"{config.MAX_BLOCKS + 1} blocks (limit {config.MAX_BLOCKS})")]


def test_a_page_over_the_time_budget_is_skipped_with_its_reason(tmp_path, monkeypatch):
    monkeypatch.setattr(config, "PAGE_TIME_BUDGET", -1.0)  # every page is late: the check itself is what is tested
    crawl = tmp_path / "c.jsonl"
    crawl.write_text(good(1) + "\n", encoding="utf-8")
    db = tmp_path / "t.db"
    result = invoke("ingest", crawl, "--db", db)  # its only record skipped: the run exits 1 and names the reason
    assert result.exit_code == 1 and "over-time=1" in result.output
    (detail,) = rows(db, "SELECT detail FROM skips WHERE reason = 'over-time'")[0]
    assert "by the end of parse" in detail


def test_deep_nesting_is_cut_at_libxml2s_depth_limit(tmp_path):
    depth = config.MAX_DEPTH * 4
    page = "<html><body><p>Before the nest, a paragraph.</p>" + "<div>" * depth + "deep" + "</div>" * depth + \
           "</body></html>"
    crawl = tmp_path / "deep.jsonl"
    crawl.write_text(json.dumps({"url": "http://deep.example/a", "html": page}) + "\n", encoding="utf-8")
    out = tmp_path / "out.jsonl"
    result = invoke("run", crawl, "--db", tmp_path / "t.db", "--output", out, "--fallback", "none")
    assert result.exit_code == 0, result.output
    assert "Before the nest" in json.loads(out.read_text())["text"]


# --- rules import ------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def samples_db(tmp_path_factory) -> Path:
    db = tmp_path_factory.mktemp("samples") / "s.db"
    assert invoke("run", SAMPLES, "--db", db, "--output", db.with_suffix(".jsonl"), "--quiet").exit_code == 0
    return db


def _rules_file(tmp_path: Path, rules: list[dict]) -> Path:
    path = tmp_path / f"rules-{uuid.uuid4().hex}.json"
    path.write_text(json.dumps({"site": "sqlite.org/", "rules": rules}), encoding="utf-8")
    return path


def test_rules_import_refuses_an_xpath_that_runs_too_long(samples_db, tmp_path):
    db = tmp_path / "s.db"
    copy_db(samples_db, db)
    slow = _rules_file(tmp_path, [{"action": "drop", "xpath": "//*[count(//*[count(//*) > 0]) > 0]"}])
    line = one_line_error(invoke("rules", "import", slow, "--db", db))
    assert "rule 0" in line and f"ran over {config.RULE_TIME_BUDGET:g} s" in line
    assert rows(db, "SELECT count(*) FROM pinned_rules") == [(0,)]
    cheap = _rules_file(tmp_path, [{"action": "drop", "xpath": "//div[@class='menu']"}])
    assert invoke("rules", "import", cheap, "--db", db).exit_code == 0


def test_rules_import_refuses_too_many_rules_and_too_large_files(samples_db, tmp_path):
    db = tmp_path / "s.db"
    copy_db(samples_db, db)
    many = _rules_file(tmp_path, [{"action": "drop", "xpath": f"/html/body/div[{i}]"}
                                  for i in range(config.MAX_IMPORT_RULES + 1)])
    assert f"{config.MAX_IMPORT_RULES + 1:,} rules" in one_line_error(invoke("rules", "import", many, "--db", db))
    large = tmp_path / "large.json"
    large.write_text(json.dumps({"site": "sqlite.org/", "rules": [], "pad": "x" * config.MAX_RULES_FILE_BYTES}))
    assert "bytes, over the" in one_line_error(invoke("rules", "import", large, "--db", db))
    assert rows(db, "SELECT count(*) FROM pinned_rules") == [(0,)]


# --- the store --------------------------------------------------------------------------------------------------

READ_ONLY_COMMANDS = [["rules", "list"], ["rules", "show", "x.example/"], ["rules", "history", "x.example/"],
                      ["rules", "export", "x.example/"], ["dups"], ["dups-settings"], ["similar", "http://x.example/"],
                      ["rules", "explain", "http://x.example/"]]


@pytest.mark.parametrize("command", READ_ONLY_COMMANDS, ids=lambda c: " ".join(c))
def test_read_only_commands_leave_an_empty_file_empty(tmp_path, command):
    db = tmp_path / "empty.db"
    db.touch()
    result = invoke(*command, "--db", db)
    assert "Traceback" not in result.output
    assert db.stat().st_size == 0 and sorted(p.name for p in tmp_path.iterdir()) == ["empty.db"]


def _foreign(tmp_path: Path, *tables: str) -> Path:
    db = tmp_path / "other.db"
    conn = sqlite3.connect(db)
    for table in tables:
        conn.execute(f"CREATE TABLE {table} (x)")
    conn.commit()
    conn.close()
    return db


@pytest.mark.parametrize("command", [["run", SAMPLES], ["ingest", SAMPLES], ["build"], ["rules", "list"], ["dups"]],
                         ids=lambda c: c[0] if len(c) == 1 or c[0] != "rules" else "rules list")
def test_another_applications_database_is_refused_untouched(tmp_path, command):
    db = _foreign(tmp_path, "users", "pages")
    before = db.read_bytes()
    line = one_line_error(invoke(*command, "--db", db))
    assert str(db) in line and "not a templater database" in line and "pages, users" in line
    assert db.read_bytes() == before
    assert rows(db, "SELECT name FROM sqlite_master ORDER BY name") == [("pages",), ("users",)]


def test_a_newer_schema_is_refused_with_both_versions(samples_db, tmp_path):
    db = tmp_path / "s.db"
    copy_db(samples_db, db)
    conn = sqlite3.connect(db)
    conn.execute("UPDATE schema_migrations SET version = 99 WHERE component = 'templates' AND version = "
                 "(SELECT max(version) FROM schema_migrations WHERE component = 'templates')")
    conn.commit()
    conn.close()
    known = len(template_store.MIGRATIONS)
    for command in (["rules", "list"], ["build"], ["run", SAMPLES]):
        line = one_line_error(invoke(*command, "--db", db))
        assert "templates schema is version 99" in line and f"(version {known})" in line


def _can_mount() -> bool:
    if os.geteuid() != 0 or not shutil.which("mount"):
        return False
    probe = Path(f"/tmp/templater-mount-probe-{uuid.uuid4().hex}")
    probe.mkdir()
    try:
        ok = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(probe)],
                            capture_output=True).returncode == 0
        if ok:
            subprocess.run(["umount", str(probe)], capture_output=True)
        return ok
    finally:
        probe.rmdir()


CAN_MOUNT = _can_mount()


def _tmpfs(size: str):
    """A tmpfs of ``size`` (root only), unmounted after the test."""
    if not CAN_MOUNT:
        pytest.skip("cannot mount a tmpfs here (needs root): the fault-injected tests cover the same")
    folder = Path(f"/tmp/templater-small-disk-{uuid.uuid4().hex}")
    folder.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)], check=True)
    yield folder
    gc.collect()  # the commands the runner invoked leave their connections to the collector
    subprocess.run(["umount", "--lazy", str(folder)], check=True)
    folder.rmdir()


@pytest.fixture
def small_disk():
    yield from _tmpfs("512k")


@pytest.fixture
def spare_disk():
    yield from _tmpfs("16m")


def test_a_full_disk_is_one_line_and_a_non_zero_exit_with_the_store_intact(small_disk, tmp_path):
    db = small_disk / "full.db"
    done = subprocess.run([*TEMPLATER, "run", str(SAMPLES), "--db", str(db), "--output", str(tmp_path / "o.jsonl"),
                           "--quiet"], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 1
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "disk is full" in done.stderr
    assert rows(db, "PRAGMA integrity_check") == [("ok",)]


def test_a_read_only_file_system_is_one_line_for_writers_and_still_readable(spare_disk, samples_db):
    db = spare_disk / "s.db"
    copy_db(samples_db, db)
    subprocess.run(["mount", "-o", "remount,ro", str(spare_disk)], check=True)
    line = one_line_error(invoke("build", "--db", db))
    assert str(db) in line and "read-only" in line
    listed = invoke("rules", "list", "--db", db)
    assert listed.exit_code == 0 and "sqlite.org/" in listed.output


def test_a_full_disk_mid_run_fault_injected(tmp_path, monkeypatch):
    """Where no tmpfs can be mounted: SQLite's own error, raised by the store on the 300th page."""
    real, calls = page_store.upsert_page, {"n": 0}
    def filling(db, **kwargs):
        calls["n"] += 1
        if calls["n"] == 300:
            db.execute("ROLLBACK")  # what SQLite does itself on SQLITE_FULL
            raise sqlite3.OperationalError("database or disk is full")
        return real(db, **kwargs)
    from templater import pipeline
    monkeypatch.setattr(pipeline.page_store, "upsert_page", filling)
    crawl = tmp_path / "c.jsonl"
    crawl.write_text("\n".join(good(n) for n in range(400)) + "\n", encoding="utf-8")
    db = tmp_path / "t.db"
    line = one_line_error(invoke("ingest", crawl, "--db", db))
    assert "disk is full" in line
    assert rows(db, "PRAGMA integrity_check") == [("ok",)]
    assert rows(db, "SELECT count(*) FROM pages") == [(pipeline.BATCH_PAGES,)]  # the committed batch is kept


def test_a_read_only_file_fault_injected(tmp_path, monkeypatch):
    """Where no read-only mount is possible (root writes any file): os.access says the file is read-only."""
    db = tmp_path / "t.db"
    crawl = tmp_path / "c.jsonl"
    crawl.write_text(good(1) + "\n", encoding="utf-8")
    assert invoke("ingest", crawl, "--db", db).exit_code == 0
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda path, mode, **kw: False if Path(path) == db and mode & os.W_OK
                        else real_access(path, mode, **kw))
    line = one_line_error(invoke("ingest", crawl, "--db", db))
    assert str(db) in line and "read-only" in line


def test_gzipped_jsonl_with_a_deep_line_still_counts_every_record(tmp_path):
    crawl = tmp_path / "c.jsonl.gz"
    with gzip.open(crawl, "wt", encoding="utf-8") as f:
        f.write(good(1) + "\n" + "{" * 50_000 + "\n" + '{"url": "http://ok.example/\\ud800"}' + "\n" + good(2) + "\n")
    db = tmp_path / "t.db"
    assert invoke("ingest", crawl, "--db", db).exit_code == 0
    assert rows(db, "SELECT count(*) FROM pages") == [(2,)] and sum(skipped(db).values()) == 2


def test_recrawl_counts_the_records_that_would_have_stopped_it(tmp_path):
    first = tmp_path / "first.jsonl"
    first.write_text("\n".join(good(n) for n in range(1, 4)) + "\n", encoding="utf-8")
    db = tmp_path / "t.db"
    assert invoke("run", first, "--db", db, "--output", tmp_path / "o.jsonl", "--quiet").exit_code == 0
    again = tmp_path / "again.jsonl"
    again.write_text("\n".join([good(4), "[" * 100_000, '{"url": "http://ok.example/x\\udc80", "html": "<p>x</p>"}',
                                json.dumps({"url": "http://big.example/a", "html": "<p " + "a " * 100_000 + ">x"}),
                                good(5)]) + "\n", encoding="utf-8")
    result = invoke("recrawl", again, "--db", db)
    assert result.exit_code == 0, result.output
    assert "bad-record=1" in result.output and "bad-text=1" in result.output and "over-limit=1" in result.output
    assert rows(db, "SELECT count(*) FROM pages") == [(5,)]


def test_pages_too_long_to_learn_from_are_counted_and_still_extracted(tmp_path):
    long_page = "<html><body><div id=nav><a href=/>Home</a></div>" + \
        "".join(f"<p>paragraph {{n}} {i}</p>" for i in range(config.MAX_LEARN_BLOCKS + 1)) + "</body></html>"
    crawl = tmp_path / "long.jsonl"
    crawl.write_text("\n".join(json.dumps({"url": f"http://long.example/d/{n}.html", "html": long_page.format(n=n)})
                               for n in range(3)) + "\n", encoding="utf-8")
    out = tmp_path / "out.jsonl"
    result = invoke("run", crawl, "--db", tmp_path / "t.db", "--output", out)
    assert result.exit_code == 0, result.output
    assert "pages too long to learn from=3" in result.output
    assert len(out.read_text().splitlines()) == 3


def test_a_page_with_too_many_attributes_in_all_is_skipped(tmp_path):
    per_tag = config.MAX_ATTRIBUTES // 2
    tags = config.MAX_PAGE_ATTRIBUTES // per_tag + 1
    page = "<html><body>" + ("<p " + " ".join(f"a{i}=1" for i in range(per_tag)) + ">x</p>") * tags + "</body>"
    crawl = tmp_path / "attrs.jsonl"
    crawl.write_text(json.dumps({"url": "http://big.example/p", "html": page}) + "\n" + good(1) + "\n")
    db = tmp_path / "t.db"
    assert invoke("ingest", crawl, "--db", db).exit_code == 0
    assert rows(db, "SELECT reason, detail FROM skips") == [
        ("over-limit", f"{tags * per_tag} attributes (limit {config.MAX_PAGE_ATTRIBUTES})")]


def test_an_unreadable_file_in_a_folder_is_a_skip_not_a_stopped_run(tmp_path):
    folder = tmp_path / "site"
    folder.mkdir()
    (folder / "a.html").write_text("<html><body><p>" + "A readable page with some words. " * 5 + "</p></body></html>",
                                   encoding="utf-8")
    (folder / "b.html").symlink_to(tmp_path / "gone.html")  # a broken link: reading it fails even as root
    db = tmp_path / "t.db"
    result = invoke("ingest", folder, "--db", db)
    assert result.exit_code == 0, result.output
    assert "unreadable=1" in result.output
    assert rows(db, "SELECT id FROM pages") == [("site/a.html",)]
