import json
from pathlib import Path

from typer.testing import CliRunner

from cli import app

from conftest import SAMPLES

runner = CliRunner()


def test_run_writes_the_documented_fields(tmp_path):
    out = tmp_path / "out.jsonl"
    result = runner.invoke(app, ["run", str(SAMPLES / "pages.jsonl.gz"), "--db", str(tmp_path / "s.db"),
                                 "--output", str(out), "--quiet"])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 38
    assert all(set(r) == {"id", "url", "site", "text", "method", "template", "coverage", "author", "date",
                          "date_modified", "sitename", "description", "language", "canonical_url", "image", "tags", "title"}
               for r in rows)
    assert {r["method"] for r in rows} == {"template", "fallback"}
    # metadata: the ScrapingHub news pages declare theirs; every page's language is detected from its text
    assert all(r["language"] for r in rows)
    news = {r["url"]: r for r in rows if "vg247.com" in r["url"]}
    page = next(iter(news.values()))
    assert page["author"] == "Sherif Saed" and page["date"].startswith("2019-11-20") and page["sitename"] == "VG247"
    assert all(r["tags"] is None or isinstance(r["tags"], list) for r in rows)


def test_ingest_build_extract_match_run(tmp_path):
    db = str(tmp_path / "s.db")
    assert runner.invoke(app, ["ingest", str(SAMPLES / "docs.warc.gz"), "--db", db, "-q"]).exit_code == 0
    assert runner.invoke(app, ["build", "--db", db, "-q"]).exit_code == 0
    result = runner.invoke(app, ["extract", "--db", db, "-q"])
    assert result.exit_code == 0
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(rows) == 30
    # the two pages of SQLite's older layout are too few for a template of their own
    fallback = sorted(r["url"] for r in rows if r["method"] == "fallback")
    assert fallback == ["https://sqlite.org/different.html", "https://sqlite.org/whentouse.html"]


def test_summary_counts_skips(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"url": "https://a.example/x", "html": ""}\n'
                   '{"url": "https://a.example/y", "html": "<p>A page with text.</p>"}\n', encoding="utf-8")
    result = runner.invoke(app, ["ingest", str(bad), "--db", str(tmp_path / "s.db")])
    assert result.exit_code == 0
    assert "empty=1" in result.stderr


def test_errors_are_messages_not_tracebacks(tmp_path):
    missing = runner.invoke(app, ["ingest", str(tmp_path / "nope.jsonl"), "--db", str(tmp_path / "s.db")])
    assert missing.exit_code != 0 and "Traceback" not in missing.output
    no_db = runner.invoke(app, ["extract", "--db", str(tmp_path / "none.db")])
    assert no_db.exit_code == 1 and "no database" in no_db.stderr
    broken = tmp_path / "broken.db"
    broken.write_bytes(b"garbage" * 500)
    corrupt = runner.invoke(app, ["build", "--db", str(broken)])
    assert corrupt.exit_code == 1 and "not a usable SQLite database" in corrupt.stderr


def test_every_command_has_help_with_an_example():
    for command in ("ingest", "build", "extract", "run"):
        result = runner.invoke(app, [command, "--help"])
        assert result.exit_code == 0 and "Example:" in result.stdout


def test_run_indexes_and_dups_lists_clusters(tmp_path):
    import gzip

    from sitegen import article_html

    pages = tmp_path / "site.jsonl.gz"
    with gzip.open(pages, "wt", encoding="utf-8") as f:
        for seed in range(6):
            html, _ = article_html(seed, paragraphs=8)
            f.write(json.dumps({"id": f"p{seed}", "url": f"https://news.example.com/story/{seed}.html",
                                "html": html}) + "\n")
        html, _ = article_html(2, paragraphs=8)  # the same article again under another URL
        f.write(json.dumps({"id": "copy", "url": "https://news.example.com/story/copy.html", "html": html}) + "\n")
    db = str(tmp_path / "d.db")
    assert runner.invoke(app, ["run", str(pages), "--db", db, "-q", "--output", str(tmp_path / "o.jsonl")]).exit_code == 0
    result = runner.invoke(app, ["dups", "--db", db])
    assert result.exit_code == 0
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert {r["id"] for r in rows} == {"p2", "copy"}
    assert all(set(r) == {"id", "url", "cluster", "canonical", "similarity"} for r in rows)
    assert {r["canonical"] for r in rows} == {"p2"}  # first seen
    similar = runner.invoke(app, ["similar", "--db", db, "p2"])
    assert similar.exit_code == 0 and json.loads(similar.stdout.splitlines()[0])["id"] == "copy"
    page = tmp_path / "copy.html"
    page.write_text(article_html(2, paragraphs=8)[0], encoding="utf-8")
    by_file = runner.invoke(app, ["similar", "--db", db, str(page), "--url", "https://news.example.com/story/x.html"])
    assert by_file.exit_code == 0 and {json.loads(x)["id"] for x in by_file.stdout.splitlines()} >= {"p2", "copy"}
    settings = runner.invoke(app, ["dups-settings", "--db", db, "--json"])
    assert settings.exit_code == 0 and 0 < json.loads(settings.stdout)["s_curve_threshold"] < 1


def test_train_writes_weights_that_extract_can_load(tmp_path):
    import gzip

    from templater import fallback

    from sitegen import article_html

    data = tmp_path / "labelled.jsonl.gz"
    with gzip.open(data, "wt", encoding="utf-8") as f:
        for seed in range(6):
            html, text = article_html(seed)
            f.write(json.dumps({"url": f"https://a.example/{seed}.html", "html": html, "gold": text}) + "\n")
    out = tmp_path / "w.npz"
    result = runner.invoke(app, ["train", str(data), "--output", str(out), "--epochs", "5", "-q"])
    assert result.exit_code == 0, result.output
    assert fallback.load_weights(out) is not None
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json\n", encoding="utf-8")
    refused = runner.invoke(app, ["train", str(bad), "--output", str(out)])
    assert refused.exit_code == 1 and "not JSON" in refused.stderr


def test_an_unknown_fallback_is_refused_before_any_work(tmp_path):
    result = runner.invoke(app, ["run", str(SAMPLES / "pages.jsonl.gz"), "--db", str(tmp_path / "s.db"),
                                 "--fallback", "bogus"])
    assert result.exit_code == 2 and "choose one of" in result.output
    assert not (tmp_path / "s.db").exists()


def _site_with_copies(tmp_path):
    """A generated site of six articles, a copy of article 2 fetched later, and a copy of article 4 cut short."""
    import gzip

    from sitegen import article_html

    pages = tmp_path / "site.jsonl.gz"
    with gzip.open(pages, "wt", encoding="utf-8") as f:
        for seed in range(6):
            html, _ = article_html(seed, paragraphs=8)
            f.write(json.dumps({"id": f"p{seed}", "url": f"https://news.example.com/story/{seed}.html", "html": html,
                                "fetched_at": "2024-03-01T10:00:00Z"}) + "\n")
        html, _ = article_html(2, paragraphs=8)
        f.write(json.dumps({"id": "copy", "url": "https://news.example.com/s/2.html", "html": html,
                            "fetched_at": "2024-02-01T10:00:00Z"}) + "\n")  # on the web first, shorter URL
    return pages


def test_dups_canonical_only_gives_one_page_a_cluster_the_earliest_fetched(tmp_path):
    pages, db = _site_with_copies(tmp_path), str(tmp_path / "d.db")
    assert runner.invoke(app, ["run", str(pages), "--db", db, "-q", "--output", str(tmp_path / "o.jsonl")]).exit_code == 0
    every = [json.loads(line) for line in runner.invoke(app, ["dups", "--db", db]).stdout.splitlines()]
    assert {r["id"] for r in every} == {"p2", "copy"} and {r["canonical"] for r in every} == {"copy"}
    result = runner.invoke(app, ["dups", "--db", db, "--canonical-only"])
    assert result.exit_code == 0
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(r["id"], r["canonical"], r["similarity"]) for r in rows] == [("copy", "copy", 1.0)]


def test_run_and_extract_drop_duplicates_write_a_deduplicated_corpus(tmp_path):
    pages, db = _site_with_copies(tmp_path), str(tmp_path / "d.db")
    out = tmp_path / "o.jsonl"
    result = runner.invoke(app, ["run", str(pages), "--db", db, "--output", str(out), "--drop-duplicates"])
    assert result.exit_code == 0, result.output
    ids = [json.loads(line)["id"] for line in out.read_text().splitlines()]
    assert sorted(ids) == ["copy", "p0", "p1", "p3", "p4", "p5"]  # p2 is a later copy of "copy"
    assert "duplicate=1" in result.stderr
    again = runner.invoke(app, ["extract", "--db", db, "--drop-duplicates", "-q"])
    assert again.exit_code == 0
    assert sorted(json.loads(line)["id"] for line in again.stdout.splitlines()) == sorted(ids)
    refused = runner.invoke(app, ["extract", "--db", db, "--drop-duplicates", "--no-index"])
    assert refused.exit_code == 1 and "needs the near-duplicate index" in refused.stderr
    assert "Traceback" not in refused.output


def test_dups_settings_prints_the_s_curve(tmp_path):
    from templater import pipeline

    pipeline.open_store(tmp_path / "new.db").conn.close()
    result = runner.invoke(app, ["dups-settings", "--db", str(tmp_path / "new.db")])
    assert result.exit_code == 0
    assert "measure: containment" in result.stdout and "P(candidate)" in result.stdout
    curve = json.loads(runner.invoke(app, ["dups-settings", "--db", str(tmp_path / "new.db"), "--json"]).stdout)["s_curve"]
    values = [curve[k] for k in sorted(curve)]
    assert values == sorted(values) and values[-1] == 1.0


def test_a_database_indexed_before_the_measure_setting_keeps_working(tmp_path):
    import shutil

    db = tmp_path / "old.db"
    shutil.copy(Path(__file__).parent / "fixtures" / "lsh_v1.db", db)
    refused = runner.invoke(app, ["dups-settings", "--db", str(db), "--json"])  # a command that only reads
    assert refused.exit_code == 1 and "older than this templater's" in refused.output
    assert runner.invoke(app, ["build", "--db", str(db), "--quiet"]).exit_code == 0  # any command that writes upgrades
    settings = json.loads(runner.invoke(app, ["dups-settings", "--db", str(db), "--json"]).stdout)
    assert (settings["measure"], settings["n"], settings["rows"], settings["pages"]) == ("jaccard", 5, 6, 3)
    rows = [json.loads(line) for line in runner.invoke(app, ["dups", "--db", str(db)]).stdout.splitlines()]
    assert {r["id"] for r in rows} == {"a", "b"} and {r["canonical"] for r in rows} == {"a"}
