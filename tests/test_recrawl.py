"""Recrawls: outcomes per page, template health and drift, retirement, history, locking and the CLI."""

import json
import random
import sqlite3

import pytest
from typer.testing import CliRunner

from templater import dedup, pipeline, recrawl
from templater import rule_inspect as rule_inspect
from templater.errors import InputError, StoreError

from sitegen import article_html, sentence

NEWS = "https://news.example.com/story/{}.html"
BLOG = "https://blog.example.org/post/{}.html"

# The blog's layout, and the news site's layout after its redesign: other tags, other boilerplate.
BLOG_LAYOUT = """<html><head><title>{title} | Blog Example</title></head><body>
<header class="masthead"><a href="/">Blog Example</a><nav><a href="/archive">Archive</a> <a href="/about">About</a>
<a href="/feed">Feed</a></nav></header>
<main><article><h1>{title}</h1><p class="meta">Posted {date}</p>{paragraphs}</article>
<aside class="sidebar"><h3>Popular posts</h3><ul>{related}</ul></aside></main>
<footer><p>Blog Example runs on coffee and is licensed CC BY.</p></footer></body></html>"""
REDESIGN = """<html><head><title>{title} - Example News</title></head><body>
<div class="topbar"><span>Example News, now redesigned</span> <a href="/subscribe">Subscribe today</a></div>
<table class="frame"><tr><td class="nav"><p><a href="/world/">World news</a></p><p><a href="/sport/">Sport news</a></p>
<p><a href="/weather/">Weather</a></p></td>
<td class="body"><h2>{title}</h2><span class="when">{date}</span>{paragraphs}
<div class="more"><h4>More from Example News</h4>{related}</div></td></tr></table>
<div class="legal"><p>Example News Group. Terms of service apply.</p><p>Privacy policy and cookie notice.</p></div>
</body></html>"""


def render(layout: str, seed: int) -> tuple[str, str]:
    """(html, article text) of a page in one of the layouts above."""
    rng = random.Random(seed)
    title = sentence(rng, 6)[:-1]
    paras = [" ".join(sentence(rng, rng.randint(8, 16)) for _ in range(3)) for _ in range(3)]
    related = "".join(f'<li><a href="/p/{rng.randint(1, 999)}">{sentence(rng, 5)}</a></li>' for _ in range(3))
    html = layout.format(title=title, date=f"May {rng.randint(1, 28)}, 2024", related=related,
                         paragraphs="\n".join(f"<p>{p}</p>" for p in paras))
    return html, "\n".join([title] + paras)


def news_old(seed):
    return article_html(seed)[0]


def news_new(seed):
    return render(REDESIGN, seed)[0]


def blog(seed):
    return render(BLOG_LAYOUT, 500 + seed)[0]


def first_crawl() -> list[dict]:
    """Twelve news stories in the old layout, eight blog posts, and a copy of blog post 0 under another URL."""
    pages = [{"id": f"n{i}", "url": NEWS.format(i), "html": news_old(i)} for i in range(12)]
    pages += [{"id": f"b{i}", "url": BLOG.format(i), "html": blog(i)} for i in range(8)]
    pages.append({"id": "b0-copy", "url": BLOG.format("copy-0"), "html": blog(0)})
    return pages


def second_crawl() -> list[dict]:
    """The news site redesigned (n0-n9 changed, n10 unchanged, n11 gone, n12-n14 new); the blog: b4 edited,
    b5-b7 gone; one broken record."""
    pages = [{"id": f"n{i}", "url": NEWS.format(i), "html": news_new(i)} for i in range(10)]
    pages.append({"id": "n10", "url": NEWS.format(10), "html": news_old(10)})
    pages += [{"id": f"n{i}", "url": NEWS.format(i), "html": news_new(i)} for i in range(12, 15)]
    pages += [{"id": f"b{i}", "url": BLOG.format(i), "html": blog(i)} for i in range(4)]
    pages.append({"id": "b4", "url": BLOG.format(4), "html": blog(40)})
    pages.append({"id": "b0-copy", "url": BLOG.format("copy-0"), "html": blog(0)})
    return pages


def write_crawl(path, pages, *, broken: bool = False):
    lines = [json.dumps(p) for p in pages]
    if broken:
        lines.insert(3, "{not json")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def crawls(tmp_path):
    return (write_crawl(tmp_path / "crawl1.jsonl", first_crawl()),
            write_crawl(tmp_path / "crawl2.jsonl", second_crawl(), broken=True))


@pytest.fixture
def db(tmp_path):
    return pipeline.open_store(tmp_path / "t.db")


def extraction(db, page_id):
    row = db.execute("SELECT template, coverage, text, method FROM extractions WHERE page_id = ?", [page_id]).fetchone()
    return dict(zip(("template", "coverage", "text", "method"), row))


TIMESTAMPS = ("first_seen", "last_seen", "extracted_at", "learned_at", "seen_at", "checked_at", "detected_at", "at",
              "started_at", "updated_at", "finished_at", "applied_at")


def snapshot(db, *, skip_tables=(), skip_columns=TIMESTAMPS):
    """Every table's rows without timestamp columns, sorted: what two equal runs must agree on."""
    out = {}
    for (table,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
                               " ORDER BY name"):
        if table in skip_tables:
            continue
        columns = [c[1] for c in db.execute(f"PRAGMA table_info({table})") if c[1] not in skip_columns]
        rows = db.execute(f"SELECT {', '.join(columns)} FROM {table}").fetchall()
        out[table] = sorted(rows, key=repr)
    return out


# --- outcomes per page -------------------------------------------------------------------------------------------

def test_a_first_crawl_into_an_empty_database_learns_each_site_and_indexes_its_pages(db, crawls):
    summary = recrawl.recrawl(db, [crawls[0]])
    assert summary.counts["new"] == 21
    assert summary.counts["sites learned"] == 2
    assert summary.counts["re-extracted"] == 21
    story = extraction(db, "n3")
    assert story["template"] == "news.example.com/@v1" and story["coverage"] == 1.0
    assert article_html(3)[1].split("\n")[1][:40] in story["text"]
    assert "Copyright Example News" not in story["text"]
    assert db.execute("SELECT count(*) FROM lsh_signatures").fetchone()[0] == 21
    copies = {d["id"] for d in dedup.iter_duplicates(db)}
    assert copies == {"b0", "b0-copy"}


def test_a_second_pass_over_the_same_crawl_only_touches_last_seen(db, crawls):
    recrawl.recrawl(db, [crawls[0]])
    before = snapshot(db, skip_tables=("runs", "run_seen"))
    seen = dict(db.execute("SELECT id, last_seen FROM pages").fetchall())
    db.execute("UPDATE pages SET last_seen = '2000-01-01T00:00:00+00:00'")
    summary = recrawl.recrawl(db, [crawls[0]])
    assert summary.counts == {"unchanged": 21}
    after = snapshot(db, skip_tables=("runs", "run_seen"))
    assert after == before
    assert all(last > "2000" for last in dict(db.execute("SELECT id, last_seen FROM pages").fetchall()).values())
    assert set(seen) == {r[0] for r in db.execute("SELECT id FROM pages")}


def test_changed_new_and_unchanged_pages_and_retirement(db, crawls):
    recrawl.recrawl(db, [crawls[0]])
    old_b4 = extraction(db, "b4")["text"]
    summary = recrawl.recrawl(db, [crawls[1]], retire_missing=True)
    assert summary.counts["unchanged"] == 6  # n10, b0-b3, b0-copy
    assert summary.counts["changed"] == 11  # n0-n9, b4
    assert summary.counts["new"] == 3  # n12-n14
    assert summary.counts["retired"] == 4  # n11, b5-b7
    assert summary.skipped == {"bad-record": 1}
    new_b4 = extraction(db, "b4")["text"]
    assert new_b4 != old_b4 and render(BLOG_LAYOUT, 540)[1].split("\n")[1] in new_b4  # its first paragraph
    assert [r["id"] for r in dedup.find_similar(db, new_b4)] == ["b4"]
    assert dedup.find_similar(db, old_b4) == []
    retired = {r[0] for r in db.execute("SELECT id FROM pages WHERE retired = 1")}
    assert retired == {"n11", "b5", "b6", "b7"}
    indexed = {r[0] for r in db.execute("SELECT page_id FROM lsh_signatures")}
    assert not indexed & retired and {"n12", "n13", "n14"} <= indexed


def test_without_the_option_missing_pages_stay_live_and_a_retired_page_that_returns_is_revived(db, crawls):
    recrawl.recrawl(db, [crawls[0]])
    assert "retired" not in recrawl.recrawl(db, [crawls[1]]).counts
    assert db.execute("SELECT count(*) FROM pages WHERE retired = 1").fetchone()[0] == 0
    recrawl.recrawl(db, [crawls[1]], retire_missing=True)
    summary = recrawl.recrawl(db, [crawls[0]], retire_missing=True)
    assert summary.counts["revived"] == 4
    assert db.execute("SELECT retired FROM pages WHERE id = 'b5'").fetchone()[0] == 0
    assert "b5" in {r[0] for r in db.execute("SELECT page_id FROM lsh_signatures")}


def test_recrawl_after_build_uses_the_built_groups(db, tmp_path):
    first = write_crawl(tmp_path / "a.jsonl", first_crawl())
    pipeline.ingest(db, [first])
    pipeline.build(db)
    more = write_crawl(tmp_path / "b.jsonl", [{"id": "n50", "url": NEWS.format(50), "html": news_old(50)}])
    summary = recrawl.recrawl(db, [more])
    assert summary.counts == {"new": 1}
    assert extraction(db, "n50")["template"] == "news.example.com/story/@v1"


# --- template health -------------------------------------------------------------------------------------------

def test_a_redesign_makes_the_template_stale_and_a_new_version_is_learned(db, crawls):
    recrawl.recrawl(db, [crawls[0]])
    summary = recrawl.recrawl(db, [crawls[1]], retire_missing=True)
    assert summary.counts["drift detected"] == 1
    history = recrawl.template_history(db, "news.example.com/")
    assert [(v.version, v.current, v.stale) for v in history] == [(1, False, True), (2, True, False)]
    assert history[0].reason.startswith("new site")
    assert history[1].reason.startswith("drift: ") and history[1].reason.endswith("(replaces v1)")
    assert history[0].stale_at and "replaced by v2" in history[0].stale_reason
    for pid in ("n0", "n9", "n13"):
        got = extraction(db, pid)
        assert got["template"] == "news.example.com/@v2" and got["coverage"] >= 0.9
        assert "Terms of service" not in got["text"] and "Subscribe today" not in got["text"]
        assert render(REDESIGN, int(pid[1:]))[1].split("\n")[1] in got["text"]  # its first paragraph
    assert extraction(db, "n10")["template"] == "news.example.com/@v1"  # still the old layout: kept its extraction
    assert [v.version for v in recrawl.template_history(db, "blog.example.org/")] == [1]


def test_changed_content_in_the_same_layout_is_no_drift(db, tmp_path, crawls):
    recrawl.recrawl(db, [crawls[0]])
    edited = [{"id": f"n{i}", "url": NEWS.format(i), "html": news_old(100 + i)} for i in range(12)]
    summary = recrawl.recrawl(db, [write_crawl(tmp_path / "edits.jsonl", edited)])
    assert summary.counts == {"changed": 12}
    assert db.execute("SELECT count(*) FROM templates").fetchone()[0] == 2
    assert extraction(db, "n5")["coverage"] == 1.0


def test_history_of_an_unknown_site_names_the_close_ones(db, crawls):
    recrawl.recrawl(db, [crawls[0]])
    with pytest.raises(InputError, match=r"news.example.com/\?"):
        recrawl.template_history(db, "news.example.com")


def test_history_of_a_database_never_recrawled_shows_its_built_versions(db, tmp_path):
    pipeline.ingest(db, [write_crawl(tmp_path / "a.jsonl", first_crawl())])
    pipeline.build(db)
    history = recrawl.template_history(db, "news.example.com/story/")
    assert [(v.version, v.reason, v.stale_at) for v in history] == [(1, "learned", None)]
    assert "template_events" not in db.table_names()


# --- runs, locking and concurrency -------------------------------------------------------------------------------

def test_a_finished_run_is_not_resumed_and_other_inputs_start_a_new_run(db, crawls):
    recrawl.recrawl(db, [crawls[0]])
    recrawl.recrawl(db, [crawls[0]])
    recrawl.recrawl(db, [crawls[1]])
    rows = db.execute("SELECT id, stage, records_done FROM runs ORDER BY id").fetchall()
    assert rows == [(1, "done", 21), (2, "done", 21), (3, "done", 21)]  # 20 pages and a broken line


def test_bad_batch_size_and_missing_inputs_are_refused(db, tmp_path):
    with pytest.raises(InputError, match="batch size"):
        recrawl.recrawl(db, [tmp_path], batch_size=0)
    with pytest.raises(InputError, match="no such file"):
        recrawl.recrawl(db, [tmp_path / "nope.jsonl"])


def test_readers_work_while_a_recrawl_holds_its_write_transaction(tmp_path, crawls):
    path = tmp_path / "t.db"
    db = pipeline.open_store(path)
    recrawl.recrawl(db, [crawls[0]])
    reader = pipeline.open_store(path, create=False)
    seen = []

    def read_inside_the_batch(label):
        if label == "write record" and db.conn.in_transaction:
            versions = recrawl.template_history(reader, "news.example.com/")
            similar = dedup.find_similar(reader, extraction(reader, "b1")["text"])
            listed = rule_inspect.list_templates(reader)
            seen.append((len(versions), [s["id"] for s in similar], len(listed)))

    recrawl.recrawl(db, [crawls[1]], checkpoint=read_inside_the_batch)
    assert len(seen) == 21 and seen[0] == (1, ["b1"], 2)


def test_a_second_recrawl_on_the_same_database_gets_a_clear_error(tmp_path, crawls):
    path = tmp_path / "t.db"
    first = pipeline.open_store(path)
    second = pipeline.open_store(path)
    errors = []

    def start_another(done, total):
        with pytest.raises(StoreError, match=r"being written by templater recrawl \(pid \d+\).*continues") as e:
            recrawl.recrawl(second, [crawls[0]])
        errors.append(str(e.value))

    recrawl.recrawl(first, [crawls[0]], progress=start_another)
    assert errors
    assert recrawl.recrawl(second, [crawls[0]]).counts == {"unchanged": 21}


def test_a_writer_holding_the_database_past_the_busy_timeout_gives_a_clear_error(tmp_path, crawls):
    path = tmp_path / "t.db"
    db = pipeline.open_store(path)
    recrawl.prepare_store(db)
    other = sqlite3.connect(str(path), isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    db.execute("PRAGMA busy_timeout = 50")
    try:
        with pytest.raises(StoreError, match="locked by another writer.*rerun"):
            recrawl.recrawl(db, [crawls[0]])
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert recrawl.recrawl(db, [crawls[0]]).counts["new"] == 21


# --- the command line -------------------------------------------------------------------------------------------

def test_cli_recrawl_logs_per_site_counts_and_rules_history_shows_why(tmp_path, crawls):
    from cli import app

    runner = CliRunner()
    database, log = tmp_path / "t.db", tmp_path / "logs" / "recrawl.log"
    for crawl in crawls:
        done = runner.invoke(app, ["recrawl", str(crawl), "--db", str(database), "--retire-missing",
                                   "--log", str(log), "--batch-size", "8"])
        assert done.exit_code == 0, done.output
    assert "recrawl: " in done.output and "drift detected=1" in done.output
    text = log.read_text()
    assert "news.example.com/ changed=" in text and "blog.example.org/ " in text
    assert "news.example.com/: drift: " in text and "retired 4 pages" in text
    shown = runner.invoke(app, ["rules", "history", "news.example.com/", "--db", str(database)])
    assert shown.exit_code == 0
    lines = shown.output.splitlines()
    assert lines[0].split()[:2] == ["VERSION", "LEARNED"]
    assert "new site" in lines[1] and "stale" in lines[2] and "replaced by v2" in lines[2]
    assert "current" in lines[3] and "drift: " in lines[3]
    as_json = json.loads(runner.invoke(app, ["rules", "history", "news.example.com/", "--db", str(database),
                                             "--json"]).output)
    assert [v["version"] for v in as_json] == [1, 2] and as_json[0]["stale_reason"]
    missing = runner.invoke(app, ["rules", "history", "nowhere.example/", "--db", str(database)])
    assert missing.exit_code == 1 and "no template for site" in missing.output
