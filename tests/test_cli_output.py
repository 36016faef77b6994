"""--format, --with-markdown, --links and --output DIR on extract, run and recrawl, through typer's runner."""

import json
import re

import pytest
from markdown_it import MarkdownIt
from typer.testing import CliRunner

from cli import PAGE_SEPARATOR, app
from templater import document

from conftest import SAMPLES

runner = CliRunner()
PAGES = str(SAMPLES / "pages.jsonl.gz")


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    path = tmp_path_factory.mktemp("output") / "s.db"
    done = runner.invoke(app, ["run", PAGES, "--db", str(path), "--output", str(path.parent / "x.jsonl"), "-q"])
    assert done.exit_code == 0, done.output
    return str(path)


def extract(db, *args):
    return runner.invoke(app, ["extract", "--db", db, "--no-index", "-q", *args])


def test_markdown_folder_has_one_safe_file_a_page(db, tmp_path):
    out = tmp_path / "md"
    done = extract(db, "--format", "markdown", "--output", str(out))
    assert done.exit_code == 0, done.output
    files = sorted(out.iterdir())
    assert len(files) == 38
    assert all(re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*-[0-9a-f]{8}\.md", f.name) for f in files)
    page = (out / document.file_name("postgresql/datatype-boolean", "md")).read_text(encoding="utf-8")
    tokens = MarkdownIt("commonmark").enable("table").parse(page)
    assert tokens[0].type == "heading_open" and tokens[1].content == "8.6. Boolean Type"
    assert "table_open" in [t.type for t in tokens] and "fence" in [t.type for t in tokens]


def test_links_are_kept_only_with_links(db, tmp_path):
    plain, linked = tmp_path / "plain", tmp_path / "linked"
    assert extract(db, "--format", "markdown", "--output", str(plain)).exit_code == 0
    assert extract(db, "--format", "markdown", "--links", "--output", str(linked)).exit_code == 0
    name = document.file_name("postgresql/datatype-boolean", "md")
    assert "](https://www.postgresql.org/docs/15/" in (linked / name).read_text(encoding="utf-8")
    assert "](" not in (plain / name).read_text(encoding="utf-8")


def test_text_and_html_to_standard_output_separate_pages(db):
    text = extract(db, "--format", "text")
    assert text.exit_code == 0
    pages = text.stdout.split(PAGE_SEPARATOR)
    assert len(pages) == 38 and pages[0].startswith("8.6. Boolean Type\n\n")
    assert "\nName\tStorage Size\tDescription\n" in pages[0]
    html = extract(db, "--format", "html")
    assert html.stdout.count("<!DOCTYPE html>") == 38 and "<table><thead><tr><th>Name</th>" in html.stdout


def test_with_markdown_adds_a_field_and_keeps_the_record(db):
    done = extract(db, "--with-markdown")
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(rows) == 38
    assert all(set(r) == {"id", "url", "site", "text", "method", "template", "coverage", "title", "markdown",
                          "author", "date", "date_modified", "sitename", "description", "language",
                          "canonical_url", "image", "tags"} for r in rows)
    first = rows[0]
    assert first["markdown"].startswith("# " + first["title"] + "\n")


def test_format_mistakes_are_one_line_errors(db, tmp_path):
    wrong = extract(db, "--format", "pdf")
    assert wrong.exit_code == 2 and "choose one of jsonl, markdown, text, html" in wrong.output
    fields = extract(db, "--format", "text", "--with-markdown")
    assert fields.exit_code == 2 and "--with-markdown" in fields.output
    folder = extract(db, "--output", str(tmp_path))
    assert folder.exit_code == 1 and "is a folder" in folder.stderr and "Traceback" not in folder.output
    afile = tmp_path / "file.md"
    afile.write_text("x")
    onfile = extract(db, "--format", "markdown", "--output", str(afile))
    assert onfile.exit_code == 1 and "is a file" in onfile.stderr


def test_run_checks_the_output_before_any_work(tmp_path):
    afile = tmp_path / "taken"
    afile.write_text("x")
    done = runner.invoke(app, ["run", PAGES, "--db", str(tmp_path / "r.db"), "--format", "html", "--output",
                               str(afile), "-q"])
    assert done.exit_code == 1 and not (tmp_path / "r.db").exists()


def test_recrawl_writes_each_page_of_its_crawl_once(db, tmp_path):
    fresh = tmp_path / "fresh.db"
    out = tmp_path / "recrawl.jsonl"
    done = runner.invoke(app, ["recrawl", PAGES, "--db", str(fresh), "--output", str(out), "-q"])
    assert done.exit_code == 0, done.output
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert len({r["id"] for r in rows}) == 38 and all(r["title"] and "text" in r for r in rows)
    assert len(rows) == 38 and {r["method"] for r in rows} == {"template", "fallback"}  # as the store has them
    again = tmp_path / "again"
    done = runner.invoke(app, ["recrawl", PAGES, "--db", str(fresh), "--format", "markdown", "--output",
                               str(again), "-q"])
    assert done.exit_code == 0, done.output
    assert len(list(again.iterdir())) == 38  # nothing changed: the crawl's pages all the same, one file each
