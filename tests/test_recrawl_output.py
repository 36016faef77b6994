"""`recrawl --output` writes an unchanged page's stored extraction (fields from the store, the page not parsed
again), byte for byte what extracting it again writes; pages whose stored extraction is not current are extracted
again."""

import time

from typer.testing import CliRunner

import store.pages as page_store
from cli import app
from templater import pipeline

from conftest import SAMPLES

runner = CliRunner()
PAGES = str(SAMPLES / "pages.jsonl.gz")


def invoke(*args):
    done = runner.invoke(app, [*map(str, args), "-q"])
    assert done.exit_code == 0, done.output
    return done


def test_unchanged_pages_come_from_the_store_byte_identical(tmp_path, monkeypatch):
    db = tmp_path / "s.db"
    invoke("ingest", PAGES, "--db", db)
    invoke("build", "--db", db)
    time.sleep(1.1)  # extractions stamped after the templates' second: current
    invoke("extract", "--db", db, "--output", tmp_path / "x.jsonl")
    reextracted = []
    again = pipeline.iter_crawl_extractions

    def counting(store, ids, **kwargs):
        reextracted.extend(ids)
        return again(store, ids, **kwargs)

    monkeypatch.setattr(pipeline, "iter_crawl_extractions", counting)
    stored = tmp_path / "stored.jsonl"
    invoke("recrawl", PAGES, "--db", db, "--output", stored)
    assert reextracted == []  # all 38 pages from the store, none parsed again
    monkeypatch.setattr(page_store, "current_extraction_ids", lambda store, ids: set())
    made = tmp_path / "made.jsonl"
    invoke("recrawl", PAGES, "--db", db, "--output", made)
    assert len(reextracted) == 38
    assert stored.read_bytes() == made.read_bytes()
    assert len(stored.read_bytes().splitlines()) == 38


def test_a_template_newer_than_the_extraction_makes_it_again(tmp_path):
    db = tmp_path / "s.db"
    invoke("ingest", PAGES, "--db", db)
    invoke("build", "--db", db)
    time.sleep(1.1)
    invoke("extract", "--db", db, "--output", tmp_path / "x.jsonl")
    store = pipeline.open_store(db)
    ids = [pid for pid, _, _ in page_store.iter_page_keys(store)]
    assert page_store.current_extraction_ids(store, ids) == set(ids)
    store.execute("UPDATE templates SET learned_at = '2999-01-01T00:00:00+00:00' WHERE id = (SELECT min(id) FROM"
                  " templates)")
    store.conn.commit()
    stale = set(ids) - page_store.current_extraction_ids(store, ids)
    assert stale and len(stale) < len(ids)
    store.execute("UPDATE pages SET content_hash = 'other' WHERE id = ?", [ids[0]])
    store.conn.commit()
    assert ids[0] not in page_store.current_extraction_ids(store, ids)
