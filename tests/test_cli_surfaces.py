"""What a user meets first, tried from the command line: the package name, page ids and site names of folders,
what run/recrawl/extract write, all-skipped runs and `templater skips`, options checked before work, --version,
--weights/--fdr-q, --log, control characters in tables, Ctrl-C, and inputs (HTTP headers in JSON Lines, WARC
resource and revisit records, Spark inputs)."""

from __future__ import annotations

import io
import json
import signal
import sqlite3
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

import templater
from cli import app
from templater import native

from conftest import ROOT, SAMPLES
from sitegen import article_html

runner = CliRunner()
ESC = "\x1b"


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def rows_of(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def write_site(path: Path, host: str, count: int, *, start: int = 0, section: str = "story") -> Path:
    """JSON Lines of ``count`` article pages of one generated site."""
    with open(path, "w", encoding="utf-8") as f:
        for seed in range(start, start + count):
            html, _ = article_html(seed)
            f.write(json.dumps({"id": f"{host}-{seed}", "url": f"https://{host}/{section}/{seed}.html",
                                "html": html}) + "\n")
    return path


def html_folder(folder: Path, count: int, *, start: int = 0) -> Path:
    folder.mkdir(parents=True)
    for seed in range(start, start + count):
        (folder / f"page{seed}.html").write_text(article_html(seed)[0], encoding="utf-8")
    (folder / "index.html").write_text(article_html(start + 100)[0], encoding="utf-8")
    return folder


# --- the distribution name -------------------------------------------------------------------------------

def test_the_distribution_name_is_free_and_used_everywhere_a_user_installs_from():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["name"] == templater.DISTRIBUTION != "templater"  # "templater" on PyPI is another project
    assert project["scripts"] == {"templater": "cli:main"}
    from templater import spark_job

    assert f"'{templater.DISTRIBUTION}[spark]'" in spark_job.SPARK_MISSING
    for path in [ROOT / "README.md", ROOT / "cli.py", *sorted((ROOT / "docs").glob("*.md"))]:
        assert "'templater[spark]'" not in path.read_text(), path
    assert f"'{templater.DISTRIBUTION}[spark]'" in (ROOT / "docs" / "spark.md").read_text()
    assert templater.DISTRIBUTION in (ROOT / "README.md").read_text()


def test_version_names_the_distribution_and_the_walk():
    result = invoke("--version")
    assert result.exit_code == 0
    assert templater.__version__ in result.stdout and templater.DISTRIBUTION in result.stdout
    assert native.STATUS in result.stdout


def test_long_work_on_the_slow_path_starts_with_one_warning(tmp_path, monkeypatch):
    import cli

    monkeypatch.setattr(native, "slow_path_warning", lambda: "pure Python: the compiled walk did not load (test)")
    monkeypatch.setattr(cli, "_slow_path_warned", [])
    pages = write_site(tmp_path / "a.jsonl", "a.example", 3)
    result = invoke("run", pages, "--db", tmp_path / "a.db", "--output", tmp_path / "a.out", "-q")
    assert result.exit_code == 0
    assert result.stderr.count("warning: pure Python: the compiled walk did not load (test)") == 1


# --- folders: ids and site names ---------------------------------------------------------------------------

def test_two_folders_with_the_same_file_names_store_both_pages_under_their_folder_names(tmp_path):
    a, b = tmp_path / "alpha", tmp_path / "beta"
    for folder, seed in ((a, 1), (b, 2)):
        folder.mkdir()
        (folder / "index.html").write_text(article_html(seed)[0], encoding="utf-8")
    out = tmp_path / "out.jsonl"
    result = invoke("run", a, b, "--db", tmp_path / "s.db", "--output", out, "-q")
    assert result.exit_code == 0, result.output
    rows = rows_of(out.read_text())
    assert [(r["id"], r["site"]) for r in rows] == [("alpha/index.html", "alpha/"), ("beta/index.html", "beta/")]
    assert rows[0]["text"] != rows[1]["text"]


def test_a_folder_is_a_site_named_after_it_or_by_site(tmp_path):
    docs = html_folder(tmp_path / "handbook", 6)
    db = tmp_path / "s.db"
    assert invoke("run", docs, "--db", db, "--output", tmp_path / "o.jsonl", "-q").exit_code == 0
    listed = invoke("rules", "list", "--db", db, "--json")
    assert [s["site"] for s in json.loads(listed.stdout)] == ["handbook/"]
    shown = invoke("rules", "show", "--db", db, "handbook/")
    assert shown.exit_code == 0 and shown.stdout.startswith("handbook/  version 1")
    named = tmp_path / "n.db"
    result = invoke("run", docs, "--db", named, "--site", "docs.example.org", "--output", tmp_path / "n.jsonl", "-q")
    assert result.exit_code == 0, result.output
    rows = rows_of((tmp_path / "n.jsonl").read_text())
    assert {r["site"] for r in rows} == {"docs.example.org/"} and "docs.example.org/index.html" in {r["id"] for r in rows}
    assert invoke("rules", "show", "--db", named, "docs.example.org/").exit_code == 0


def test_two_folders_of_one_name_keep_the_first_page_and_count_the_other(tmp_path):
    for parent, seed in (("x", 1), ("y", 2)):
        folder = tmp_path / parent / "docs"
        folder.mkdir(parents=True)
        (folder / "index.html").write_text(article_html(seed)[0], encoding="utf-8")
    db = tmp_path / "s.db"
    result = invoke("ingest", tmp_path / "x" / "docs", tmp_path / "y" / "docs", "--db", db)
    assert result.exit_code == 0 and "duplicate-id=1" in result.stderr
    skipped = rows_of(invoke("skips", "--db", db, "--json").stdout)
    assert [(r["reason"], r["count"]) for r in skipped] == [("duplicate-id", 1)]
    assert "--site" in skipped[0]["examples"][0]["detail"]


# --- what run, recrawl and extract write ---------------------------------------------------------------------

def test_run_writes_the_pages_of_its_inputs_only(tmp_path):
    db = tmp_path / "s.db"
    first = write_site(tmp_path / "a.jsonl", "a.example", 5)
    second = write_site(tmp_path / "b.jsonl", "b.example", 4)
    assert invoke("run", first, "--db", db, "--output", tmp_path / "a.out", "-q").exit_code == 0
    assert invoke("run", second, "--db", db, "--output", tmp_path / "b.out", "-q").exit_code == 0
    assert [r["id"] for r in rows_of((tmp_path / "b.out").read_text())] == [f"b.example-{i}" for i in range(4)]
    everything = invoke("extract", "--db", db, "-q")
    assert len(rows_of(everything.stdout)) == 9  # extract keeps "every stored page"


def test_two_concurrent_runs_on_one_database_write_their_own_pages(tmp_path):
    db = tmp_path / "s.db"
    inputs = {name: write_site(tmp_path / f"{name}.jsonl", f"{name}.example", 40) for name in ("one", "two")}
    procs = {name: subprocess.Popen([sys.executable, "-m", "cli", "run", str(path), "--db", str(db), "--output",
                                     str(tmp_path / f"{name}.out"), "-q"], cwd=ROOT, stderr=subprocess.PIPE)
             for name, path in inputs.items()}
    for name, proc in procs.items():
        _, stderr = proc.communicate(timeout=300)
        assert proc.returncode == 0, stderr.decode()
        ids = {r["id"] for r in rows_of((tmp_path / f"{name}.out").read_text())}
        assert ids == {f"{name}.example-{i}" for i in range(40)}


def test_recrawl_output_holds_the_crawl_pages_unchanged_ones_included(tmp_path):
    db = tmp_path / "s.db"
    assert invoke("run", write_site(tmp_path / "a.jsonl", "a.example", 5), "--db", db, "-o", tmp_path / "x",
                  "-q").exit_code == 0
    crawl = write_site(tmp_path / "b.jsonl", "b.example", 3)
    with open(crawl, "a", encoding="utf-8") as f:  # a page of the first site, unchanged
        f.write((tmp_path / "a.jsonl").read_text().splitlines()[0] + "\n")
    out = tmp_path / "r.jsonl"
    result = invoke("recrawl", crawl, "--db", db, "--output", out, "-q")
    assert result.exit_code == 0, result.output
    rows = rows_of(out.read_text())
    assert [r["id"] for r in rows] == ["a.example-0", "b.example-0", "b.example-1", "b.example-2"]
    assert all(r["text"] for r in rows)


def test_extract_filters_by_site_and_since(tmp_path):
    db = tmp_path / "s.db"
    assert invoke("run", write_site(tmp_path / "a.jsonl", "a.example", 5), "--db", db, "-o", tmp_path / "x",
                  "-q").exit_code == 0
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE pages SET last_seen = '2020-01-01T00:00:00+00:00'")
    assert invoke("run", write_site(tmp_path / "b.jsonl", "b.example", 4), "--db", db, "-o", tmp_path / "y",
                  "-q").exit_code == 0
    by_site = rows_of(invoke("extract", "--db", db, "--site", "a.example/story/", "-q", "--no-index").stdout)
    assert [r["id"] for r in by_site] == [f"a.example-{i}" for i in range(5)]
    recent = rows_of(invoke("extract", "--db", db, "--since", "2021-06-01", "-q", "--no-index").stdout)
    assert {r["id"] for r in recent} == {f"b.example-{i}" for i in range(4)}
    unknown = invoke("extract", "--db", db, "--site", "nowhere.example/")
    assert unknown.exit_code == 1 and "rules list" in unknown.stderr
    bad = invoke("extract", "--db", db, "--since", "last tuesday")
    assert bad.exit_code == 1 and "ISO 8601" in bad.stderr and "Traceback" not in bad.output


# --- skipped records ---------------------------------------------------------------------------------------------

def test_a_run_that_skips_every_record_exits_1_with_the_top_reasons(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"url": "https://a.example/x", "html": ""}\n{"url": "https://a.example/y", "html": " "}\n'
                   '{"url": "nourl", "html": "<p>text</p>"}\n', encoding="utf-8")
    out = tmp_path / "o.jsonl"
    result = invoke("run", bad, "--db", tmp_path / "s.db", "--output", out, "-q")
    assert result.exit_code == 1
    assert "all 3 records of the inputs were skipped" in result.stderr
    assert "empty=2, e.g. " in result.stderr and "bad-url=1" in result.stderr and "has no usable scheme" in result.stderr
    assert "templater skips --db" in result.stderr and not out.exists()
    ingest = invoke("ingest", bad, "--db", tmp_path / "t.db", "-q")
    assert ingest.exit_code == 1 and "Top reasons" in ingest.stderr


def test_a_recrawl_that_skips_every_record_exits_1_and_retires_nothing(tmp_path):
    db = tmp_path / "s.db"
    assert invoke("run", write_site(tmp_path / "a.jsonl", "a.example", 4), "--db", db, "-o", tmp_path / "o",
                  "-q").exit_code == 0
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"url": "https://a.example/story/0.html", "html": ""}\n', encoding="utf-8")
    result = invoke("recrawl", bad, "--db", db, "--retire-missing", "-q")
    assert result.exit_code == 1 and "all 1 records of the inputs were skipped" in result.stderr
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT count(*) FROM pages WHERE retired = 0").fetchone() == (4,)


def test_skips_counts_every_skipped_record_with_examples(tmp_path):
    lines = [{"url": "https://a.example/same", "html": "<html><body></body></html>"}] * 3 + [
        {"url": "https://a.example/ok", "html": "<p>Some text to keep.</p>"}, {"url": "nourl", "html": "<p>x</p>"}]
    data = tmp_path / "p.jsonl"
    data.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    db = tmp_path / "s.db"
    assert invoke("ingest", data, "--db", db, "-q").exit_code == 0
    assert invoke("ingest", data, "--db", db, "-q").exit_code == 0  # the same records again: not counted twice
    report = rows_of(invoke("skips", "--db", db, "--json").stdout)
    assert [(r["reason"], r["count"]) for r in report] == [("no-text", 3), ("bad-url", 1)]
    # latest first, then by source: records skipped across a second's boundary come in another order
    assert sorted(e["source"] for e in report[0]["examples"]) == [f"{data}#{n}" for n in (1, 2, 3)]
    table = invoke("skips", "--db", db, "--reason", "bad-url")
    assert table.exit_code == 0 and "bad-url" in table.stdout and "no-text" not in table.stdout
    assert table.stdout.startswith("4 records skipped")
    assert invoke("skips", "--db", db, "--reason", "huge").exit_code == 1


# --- options checked before work ---------------------------------------------------------------------------------

def test_an_output_where_no_file_can_be_written_is_refused_before_any_work(tmp_path):
    db = tmp_path / "s.db"
    (tmp_path / "a-file").write_text("not a folder")
    commands = (["run", SAMPLES / "pages.jsonl.gz", "--db", db], ["extract", "--db", db],
                ["recrawl", SAMPLES / "pages.jsonl.gz", "--db", db], ["dups", "--db", db],
                ["report", "--db", db, "sqlite.org/"], ["rules", "export", "--db", db, "sqlite.org/"],
                ["train", SAMPLES / "gold.jsonl"])
    for command in commands:
        result = invoke(*command, "--output", tmp_path / "a-file" / "out.jsonl")
        assert result.exit_code == 1 and "cannot make its folder" in result.stderr, result.output
        assert len(result.stderr.strip().splitlines()) == 1
        folder = invoke(*command, "--output", tmp_path)
        assert folder.exit_code == 1 and "is a folder" in folder.stderr, folder.output
    assert not db.exists()
    made = invoke("run", SAMPLES / "pages.jsonl.gz", "--db", db, "--output", tmp_path / "new" / "deep" / "o.jsonl",
                  "-q")
    assert made.exit_code == 0 and (tmp_path / "new" / "deep" / "o.jsonl").stat().st_size > 0
    for command in ("ingest", "run", "recrawl"):
        missing = invoke(command, tmp_path / "nope.jsonl", "--db", tmp_path / "other.db")
        assert missing.exit_code == 1 and "no such file" in missing.stderr and not (tmp_path / "other.db").exists()


def test_weights_written_by_train_are_loaded_by_extract_and_run(tmp_path):
    data = tmp_path / "labelled.jsonl"
    with open(data, "w", encoding="utf-8") as f:
        for seed in range(6):
            html, text = article_html(seed)
            f.write(json.dumps({"url": f"https://a.example/{seed}.html", "html": html, "gold": text}) + "\n")
    weights = tmp_path / "w.npz"
    assert invoke("train", data, "--output", weights, "--epochs", "3", "-q").exit_code == 0
    db = tmp_path / "s.db"
    single = tmp_path / "single.jsonl"
    single.write_text(json.dumps({"url": "https://b.example/x.html", "html": article_html(9)[0]}) + "\n")
    run = invoke("run", single, "--db", db, "--weights", weights, "--fallback", "fdr", "--fdr-q", "0.2",
                 "--output", tmp_path / "o.jsonl", "-q")
    assert run.exit_code == 0, run.output
    assert rows_of((tmp_path / "o.jsonl").read_text())[0]["method"] == "fallback"
    assert invoke("extract", "--db", db, "--weights", weights, "-q").exit_code == 0
    missing = invoke("extract", "--db", db, "--weights", tmp_path / "none.npz")
    assert missing.exit_code == 1 and "cannot read weights" in missing.stderr
    assert invoke("extract", "--db", db, "--fdr-q", "0").exit_code == 2
    assert invoke("extract", "--db", db, "--fdr-q", "1.5").exit_code == 2


def test_every_long_command_takes_log(tmp_path):
    for command in (["train"], ["ingest"], ["build"], ["extract"], ["run"], ["recrawl"], ["spark"],
                    ["index-signatures"], ["report"], ["eval", "dedup"]):
        assert "--log" in invoke(*command, "--help").stdout, command
    log = tmp_path / "run.log"
    data = tmp_path / "p.jsonl"
    data.write_text('{"url": "https://a.example/x", "html": ""}\n'
                    '{"url": "https://a.example/y", "html": "<p>Some text to keep.</p>"}\n', encoding="utf-8")
    result = invoke("run", data, "--db", tmp_path / "s.db", "--log", log, "-o", tmp_path / "o.jsonl", "-q")
    assert result.exit_code == 0
    assert "skipped" in log.read_text() and "empty" in log.read_text()


def test_param_of_the_wrong_kind_is_a_clear_error(tmp_path):
    db = tmp_path / "s.db"
    assert invoke("run", write_site(tmp_path / "a.jsonl", "a.example", 4), "--db", db, "-o", tmp_path / "o",
                  "-q").exit_code == 0
    result = invoke("index-signatures", "--db", db, "--method", "tfidf", "--param", "terms=abc")
    assert result.exit_code == 1
    assert "terms takes a whole number" in result.stderr and "not supported" not in result.stderr
    assert invoke("index-signatures", "--db", db, "--method", "tfidf", "--param", "terms=4", "-q").exit_code == 0


# --- what tables print -----------------------------------------------------------------------------------------

def test_tables_escape_terminal_control_characters_from_urls(tmp_path):
    section = f"{ESC}]0;owned{ESC}\\{ESC}[31m"
    data = write_site(tmp_path / "a.jsonl", "a.example", 5, section=section)
    with open(data, "a", encoding="utf-8") as f:
        f.write(json.dumps({"url": f"https://a.example/{ESC}[2J", "html": "<html><body></body></html>"}) + "\n")
    db = tmp_path / "s.db"
    assert invoke("run", data, "--db", db, "-o", tmp_path / "o.jsonl", "-q").exit_code == 0
    listed = invoke("rules", "list", "--db", db)
    assert listed.exit_code == 0 and "\\x1b]0;owned" in listed.stdout
    site = json.loads(invoke("rules", "list", "--db", db, "--json").stdout)[0]["site"]
    url = rows_of((tmp_path / "o.jsonl").read_text())[0]["url"]
    outputs = [listed, invoke("rules", "show", "--db", db, site), invoke("rules", "history", "--db", db, site),
               invoke("rules", "explain", "--db", db, url), invoke("skips", "--db", db),
               invoke("rules", "show", "--db", db, f"nowhere{ESC}[31m/")]
    for result in outputs:
        assert ESC not in result.output and "\x07" not in result.output, result.output


# --- Ctrl-C ---------------------------------------------------------------------------------------------------

def test_ctrl_c_prints_one_line_and_exits_130(tmp_path):
    data = tmp_path / "big.jsonl"
    with open(data, "w", encoding="utf-8") as f:
        for seed in range(4000):
            html, _ = article_html(seed, paragraphs=12)
            f.write(json.dumps({"url": f"https://a.example/story/{seed}.html", "html": html}) + "\n")
    db = tmp_path / "s.db"
    proc = subprocess.Popen([sys.executable, "-m", "cli", "run", str(data), "--db", str(db), "-o",
                             str(tmp_path / "o.jsonl"), "-q"], cwd=ROOT, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not db.exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    time.sleep(0.5)
    assert proc.poll() is None, "the run ended before it could be interrupted"
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert stderr.strip().splitlines() == [
        "interrupted: what was committed is kept; run the same command again to continue"]
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)


# --- similar with a text file -------------------------------------------------------------------------------

def test_similar_takes_a_text_file(tmp_path):
    db = tmp_path / "s.db"
    data = write_site(tmp_path / "a.jsonl", "a.example", 5)
    out = tmp_path / "o.jsonl"
    assert invoke("run", data, "--db", db, "-o", out, "-q").exit_code == 0
    text = tmp_path / "story.txt"
    text.write_text(rows_of(out.read_text())[2]["text"], encoding="utf-8")
    result = invoke("similar", "--db", db, text)
    assert result.exit_code == 0, result.output
    assert rows_of(result.stdout)[0]["id"] == "a.example-2"
    binary = tmp_path / "blob.txt"
    binary.write_bytes(b"\xff\xfe\x00bad")
    refused = invoke("similar", "--db", db, binary)
    assert refused.exit_code == 1 and "not UTF-8 text" in refused.stderr


# --- inputs ---------------------------------------------------------------------------------------------------

def test_http_headers_in_a_jsonl_html_field_are_cut_off(tmp_path):
    html = article_html(3)[0]
    lines = [{"id": "ok", "url": "https://a.example/ok", "html": "HTTP/1.1 200 OK\r\nContent-Type: text/html; "
              "charset=utf-8\r\nX-Powered-By: PHP/7.4\r\nSet-Cookie: session=abc123\r\n\r\n" + html},
             {"id": "gone", "url": "https://a.example/gone", "html": "HTTP/1.1 404 Not Found\r\n"
              "Content-Type: text/html\r\n\r\n<html><body><p>Not found here at all.</p></body></html>"},
             {"id": "plain", "url": "https://a.example/plain", "html": "HTTP/1.1 200 OK\nContent-Type: image/png\n\n"
              "PNG"}]
    data = tmp_path / "p.jsonl"
    data.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    out = tmp_path / "o.jsonl"
    result = invoke("run", data, "--db", tmp_path / "s.db", "-o", out, "--fallback", "none")
    assert result.exit_code == 0, result.output
    assert "http-status=1" in result.stderr and "not-html=1" in result.stderr
    [row] = rows_of(out.read_text())
    assert row["id"] == "ok"
    assert "Set-Cookie" not in row["text"] and "X-Powered-By" not in row["text"] and "HTTP/1.1" not in row["text"]


def _warc(path: Path) -> Path:
    page = article_html(5)[0].encode()
    with open(path, "wb") as out:
        writer = WARCWriter(out, gzip=True)
        http = StatusAndHeaders("200 OK", [("Content-Type", "text/html")], protocol="HTTP/1.1")
        writer.write_record(writer.create_warc_record("https://a.example/r", "response", payload=io.BytesIO(page),
                                                      http_headers=http))
        writer.write_record(writer.create_warc_record("https://a.example/res", "resource",
                                                      payload=io.BytesIO(article_html(6)[0].encode()),
                                                      warc_content_type="text/html"))
        writer.write_record(writer.create_warc_record("https://a.example/logo.png", "resource",
                                                      payload=io.BytesIO(b"\x89PNG\r\n"), warc_content_type="image/png"))
        revisit = writer.create_revisit_record("https://a.example/r", digest="sha1:AAAA",
                                               refers_to_uri="https://a.example/r", refers_to_date="2024-01-01T00:00:00Z",
                                               http_headers=http)
        writer.write_record(revisit)
    return path


def test_warc_resource_records_are_pages_and_revisits_are_counted(tmp_path):
    out = tmp_path / "o.jsonl"
    result = invoke("run", _warc(tmp_path / "c.warc.gz"), "--db", tmp_path / "s.db", "-o", out)
    assert result.exit_code == 0, result.output
    assert [r["url"] for r in rows_of(out.read_text())] == ["https://a.example/r", "https://a.example/res"]
    assert "revisit=1" in result.stderr and "not-html=1" in result.stderr
    report = {r["reason"]: r for r in rows_of(invoke("skips", "--db", tmp_path / "s.db", "--json").stdout)}
    assert "https://a.example/r" in report["revisit"]["examples"][0]["detail"]


def test_spark_input_errors_are_one_line_before_spark_starts(tmp_path):
    pytest.importorskip("pyspark")
    html_folder(tmp_path / "pages", 2)
    for given, expected in ((tmp_path / "pages", "only .html files"), (tmp_path / "nope", "no such file"),
                            (tmp_path / "pages" / "index.html", "reads JSON Lines and WARC")):
        started = time.monotonic()
        result = invoke("spark", given, "--out", tmp_path / "out", "--db", tmp_path / "s.db")
        assert result.exit_code == 1 and expected in result.stderr, result.output
        assert len(result.stderr.strip().splitlines()) == 1 and time.monotonic() - started < 10
    assert not (tmp_path / "out").exists()
