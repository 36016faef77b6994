import gzip
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from templater import pipeline
from templater.errors import StoreError

from conftest import SAMPLES
from sitegen import article_html


def write_site(path, count, *, start=0):
    with gzip.open(path, "wt", encoding="utf-8") as f:
        for seed in range(start, start + count):
            html, _ = article_html(seed)
            f.write(json.dumps({"id": f"p{seed}", "url": f"https://news.example.com/story/{seed}.html",
                                "html": html}) + "\n")


def test_run_learns_a_template_and_extracts_every_page(tmp_path):
    write_site(tmp_path / "site.jsonl.gz", 6)
    db = pipeline.open_store(tmp_path / "t.db")
    assert pipeline.ingest(db, [tmp_path / "site.jsonl.gz"]).counts["new"] == 6
    built = pipeline.build(db)
    assert built.counts["templates learned"] == 1
    results = list(pipeline.extract(db))
    assert {r.method for r in results} == {"template"}
    assert {r.template for r in results} == {"news.example.com/story/@v1"}
    assert all(r.coverage == 1.0 for r in results)
    assert all("Copyright" not in r.text for r in results)


@pytest.mark.parametrize("jobs", [1, 2])
def test_every_page_is_extracted_once_in_id_order_whatever_the_chunks_its_ids_are_read_in(tmp_path, monkeypatch, jobs):
    """extract of every live page reads their ids a chunk at a time (config.PAGE_ID_CHUNK): chunks that do not
    divide the work's (WORK_CHUNK) give the same pages, in the same order, with the same progress total."""
    write_site(tmp_path / "site.jsonl.gz", 23)
    db = pipeline.open_store(tmp_path / "t.db")
    pipeline.ingest(db, [tmp_path / "site.jsonl.gz"])
    pipeline.build(db)
    pipeline.page_store.retire_pages(db, ["p7"])
    whole = [(r.id, r.text) for r in pipeline.extract(db, jobs=jobs)]
    assert [i for i, _ in whole] == sorted(f"p{seed}" for seed in range(23) if seed != 7)
    monkeypatch.setattr(pipeline.config, "PAGE_ID_CHUNK", 5)
    monkeypatch.setattr(pipeline, "WORK_CHUNK", 3)
    totals = set()
    chunked = [(r.id, r.text) for r in pipeline.extract(db, jobs=jobs, progress=lambda done, total: totals.add(total))]
    assert chunked == whole and totals == {22}


def test_reingest_is_idempotent_and_rebuild_keeps_the_version(tmp_path):
    write_site(tmp_path / "site.jsonl.gz", 5)
    db = pipeline.open_store(tmp_path / "t.db")
    pipeline.ingest(db, [tmp_path / "site.jsonl.gz"])
    pipeline.build(db)
    again = pipeline.ingest(db, [tmp_path / "site.jsonl.gz"])
    assert again.counts == {"unchanged": 5}
    assert pipeline.build(db).counts["templates unchanged"] == 1
    assert db.execute("SELECT count(*) FROM pages").fetchone()[0] == 5
    assert db.execute("SELECT count(*) FROM templates").fetchone()[0] == 1


def test_a_new_page_of_a_known_site_gets_its_template_without_a_rebuild(tmp_path):
    write_site(tmp_path / "site.jsonl.gz", 5)
    write_site(tmp_path / "later.jsonl.gz", 1, start=40)
    db = pipeline.open_store(tmp_path / "t.db")
    pipeline.ingest(db, [tmp_path / "site.jsonl.gz"])
    pipeline.build(db)
    pipeline.ingest(db, [tmp_path / "later.jsonl.gz"])
    result = list(pipeline.extract(db, ids=["p40"]))[0]
    assert result.method == "template" and result.template == "news.example.com/story/@v1"


def test_bad_records_are_counted_and_stored_pages_survive(tmp_path):
    write_site(tmp_path / "site.jsonl.gz", 4)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"url": "https://news.example.com/x.html", "html": ""}\nnot json\n'
                   '{"url": "nope", "html": "<p>hello</p>"}\n', encoding="utf-8")
    db = pipeline.open_store(tmp_path / "t.db")
    pipeline.ingest(db, [tmp_path / "site.jsonl.gz"])
    summary = pipeline.ingest(db, [bad])
    assert sum(summary.skipped.values()) == 3 and not summary.counts
    assert db.execute("SELECT count(*) FROM pages").fetchone()[0] == 4


def test_a_corrupt_database_is_a_clear_error(tmp_path):
    path = tmp_path / "broken.db"
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreError, match="not a usable SQLite database"):
        pipeline.open_store(path)
    with pytest.raises(StoreError, match="no database"):
        pipeline.open_store(tmp_path / "missing.db", create=False)


def test_samples_run_end_to_end(tmp_path):
    db = pipeline.open_store(tmp_path / "s.db")
    pipeline.ingest(db, [SAMPLES / "pages.jsonl.gz"])
    assert pipeline.build(db).counts["templates learned"] >= 3
    results = {r.id: r for r in pipeline.extract(db)}
    assert len(results) == 38
    assert sum(r.method == "template" for r in results.values()) >= 25


def test_the_models_workers_share_are_loaded_before_they_are_forked():
    from templater import fallback, metadata

    fallback.default_weights.cache_clear()
    metadata._identifier.cache_clear()
    pipeline.warm_models()
    assert fallback.default_weights.cache_info().currsize == 1  # the shipped weights: read once, in the parent
    assert metadata._identifier.cache_info().currsize == 1  # the language model


def test_extracting_pages_leaves_no_cyclic_garbage_so_the_collector_may_run_rarely(tmp_path):
    """tune_collector's premise: a page's extraction (template and fallback pages, the document, the metadata)
    frees what it made by reference counting alone."""
    import gc

    db = pipeline.open_store(tmp_path / "s.db")
    pipeline.ingest(db, [SAMPLES / "pages.jsonl.gz"])
    pipeline.build(db)
    list(pipeline.extract(db, ids=[pid for pid, _, _ in pipeline.page_store.iter_page_keys(db)][:2]))  # warm
    thresholds = gc.get_threshold()
    gc.collect()
    gc.disable()
    try:
        results = list(pipeline.extract(db))
        assert {r.method for r in results} == {"template", "fallback"}
        del results
        assert gc.collect() == 0
    finally:
        gc.enable()
        gc.set_threshold(*thresholds)


def test_the_collector_is_tuned_up_and_never_down():
    import gc

    thresholds = gc.get_threshold()
    try:
        gc.set_threshold(700, 10, 10)
        pipeline.tune_collector(5000)
        assert gc.get_threshold() == (5000, 10, 10)
        gc.set_threshold(90_000, 10, 10)
        pipeline.tune_collector(5000)  # a caller's larger threshold stays
        assert gc.get_threshold() == (90_000, 10, 10)
    finally:
        gc.set_threshold(*thresholds)


_HOSTS = ["a.com", "a.com.b", "a.com-x", "www.a.com", "A.com", "a.co", "b.org", ""]
_PATHS = ["/", "/x/", "/x/y/p.html", "/x/2017/p", "/y/q", "/x/y/", "/z/1/2"]


def _crawl_urls(draw_pairs):
    """(id, url) of made-up pages: hosts that are prefixes of each other (their order and their prefixes' order
    differ), upper case and www., local files (grouped by their id) and URLs without a host."""
    pages = []
    for n, (host, path) in enumerate(draw_pairs):
        if host:
            pages.append((f"p{n:03d}", f"https://{host}{path}"))
        elif n % 2:
            pages.append((f"site{n % 3}{path}p{n}.html", f"file:///tmp/p{n}.html"))
        else:
            pages.append((f"p{n:03d}", "not a url"))
    return pages


def _store_urls(path, pages, *, retired=()):
    import numpy as np

    db = pipeline.open_store(path)
    with pipeline.transaction(db):
        for pid, url in pages:
            pipeline.page_store.upsert_page(db, id=pid, url=url, host=pipeline.host_of(url), html="<p>x</p>",
                                            digest=pid, fetched_at=None, encoding="utf-8",
                                            hashes=np.zeros(1, np.uint32), shapes=np.zeros(1, np.uint32),
                                            text_chars=1, now="2026-01-01T00:00:00+00:00")
    pipeline.page_store.retire_pages(db, list(retired))
    return db


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(_HOSTS), st.sampled_from(_PATHS)), max_size=40), st.integers(1, 5),
       st.integers(1, 4))
def test_build_reads_the_groups_a_host_at_a_time_as_the_whole_crawl_gives_them(tmp_path_factory, drawn, chunk,
                                                                               min_pages):
    """iter_groups (build's groups, read one URL root at a time through a temporary table) gives the groups, their
    order and their pages' order that assign_groups over every live page and a sort give, whatever the chunks the
    pages are read in; the temporary table is gone after."""
    from collections import defaultdict

    pages = _crawl_urls(drawn)
    retired = [pid for pid, _ in pages[::7]]
    db = _store_urls(tmp_path_factory.mktemp("g") / "g.db", pages, retired=retired)
    live = sorted((pid, url) for pid, url in dict(pages).items() if pid not in retired)
    members = defaultdict(list)
    for (pid, _), group in zip(live, pipeline.assign_groups([u for _, u in live], min_pages=min_pages,
                                                            ids=[p for p, _ in live])):
        members[group].append(pid)
    settings_ = pipeline.LearnSettings(min_group_pages=min_pages)
    assert list(pipeline.iter_groups(db, settings_)) == sorted(members.items())
    by_root = list(pipeline.page_store.iter_pages_by_key(db, pipeline.url_root, chunk=chunk))
    assert [root for root, _, _ in by_root] == sorted({pipeline.url_root(u, p) for p, u in live})
    assert sorted((p, u) for _, ids, urls in by_root for p, u in zip(ids, urls)) == live
    assert all(ids == sorted(ids) for _, ids, _ in by_root)
    assert "page_keys" not in {r[0] for r in db.execute("SELECT name FROM temp.sqlite_master")}


@pytest.mark.parametrize("heads", [1, 2, 4096])
def test_templates_read_as_pages_need_them_are_those_read_up_front(tmp_path, heads):
    """TemplateIndex reads a site's template id and a URL group's layouts when a page first needs them (kept for
    ``heads`` sites and groups): each page finds the template it finds with every site's read up front, the pages
    of a site without its stored site too (by URL prefix and layout), and a page of no known group none."""
    write_site(tmp_path / "site.jsonl.gz", 6)
    with gzip.open(tmp_path / "other.jsonl.gz", "wt", encoding="utf-8") as f:
        for seed in range(6):
            html, _ = article_html(100 + seed)
            f.write(json.dumps({"id": f"q{seed}", "url": f"https://blog.example.org/post/{seed}.html",
                                "html": html}) + "\n")
    db = pipeline.open_store(tmp_path / "t.db")
    pipeline.ingest(db, [tmp_path / "site.jsonl.gz", tmp_path / "other.jsonl.gz"])
    pipeline.build(db)
    held = pipeline.TemplateIndex(db)
    assert len(held.sources) == 2  # (read whole)
    lazy = pipeline.TemplateIndex(db, heads=heads)
    stored = list(pipeline.page_store.load_pages(db, [f"p{i}" for i in range(6)] + [f"q{i}" for i in range(6)]))
    for page in stored * 2:
        seg = pipeline.stored_segment(page)
        for site in (page.site, None, "no such site/"):
            want, got = held.find(seg, site), lazy.find(seg, site)
            assert (want and want.site) == (got and got.site) and want is not None
    assert len(lazy._site_ids) <= heads and len(lazy._group_layouts) <= heads
    seg = pipeline.stored_segment(stored[0])
    moved = pipeline.dataclasses.replace(seg, page=pipeline.dataclasses.replace(seg.page, url="https://else.net/x"))
    assert lazy.find(moved, None) is None and held.find(moved, None) is None


@pytest.mark.parametrize("jobs", [1, 2])
def test_run_extracts_the_pages_ingest_marked_in_id_order_a_chunk_at_a_time(tmp_path, monkeypatch, jobs):
    """`run` extracts the pages of its inputs: ingest marks their ids on the connection (not in the summary) and
    extract takes them a chunk at a time, each page once and in id order, as the ids given sorted would; pages
    stored before and not read again are left out."""
    write_site(tmp_path / "old.jsonl.gz", 4, start=50)
    write_site(tmp_path / "site.jsonl.gz", 9)
    write_site(tmp_path / "again.jsonl.gz", 3, start=2)  # pages read twice
    monkeypatch.setattr(pipeline.config, "PAGE_ID_CHUNK", 4)
    given = pipeline.open_store(tmp_path / "given.db")
    pipeline.ingest(given, [tmp_path / "old.jsonl.gz"])
    read = pipeline.ingest(given, [tmp_path / "site.jsonl.gz", tmp_path / "again.jsonl.gz"]).pages
    pipeline.build(given)
    want = [(r.id, r.text) for r in pipeline.extract(given, ids=sorted(set(read)), jobs=jobs)]
    db = pipeline.open_store(tmp_path / "marked.db")
    pipeline.ingest(db, [tmp_path / "old.jsonl.gz"])
    summary = pipeline.ingest(db, [tmp_path / "site.jsonl.gz", tmp_path / "again.jsonl.gz"], mark=True)
    assert summary.pages == [] and summary.counts == {"new": 9, "unchanged": 3}
    pipeline.build(db)
    totals = set()
    got = [(r.id, r.text) for r in pipeline.extract(db, marked=True, jobs=jobs,
                                                    progress=lambda done, total: totals.add(total))]
    assert got == want and [i for i, _ in got] == [f"p{seed}" for seed in sorted(range(9), key=str)]
    assert totals == {9}
