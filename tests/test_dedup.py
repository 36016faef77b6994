"""templater.dedup: texts in, duplicate clusters and similar pages out, through a real SQLite index."""

from __future__ import annotations

import numpy as np
import pytest

from store import lsh
from store.db import open_db
from templater import dedup
from templater.dedup import TextItem
from templater.errors import InputError, SettingsMismatchError
from templater.shingles import ShingleSettings

WORDS = [f"w{i}" for i in range(5000)]


def article(rng: np.random.Generator, length: int = 300) -> list[str]:
    return list(rng.choice(WORDS, size=length))


def edited(rng: np.random.Generator, words: list[str], share: float) -> str:
    """Substitute ``share`` of the words at random positions."""
    out = list(words)
    for position in rng.choice(len(out), size=max(1, int(share * len(out))), replace=False):
        out[position] = str(rng.choice(WORDS))
    return " ".join(out)


def corpus(seed: int = 1, families: int = 12, copies: int = 3) -> list[TextItem]:
    rng = np.random.default_rng(seed)
    items = []
    for f in range(families):
        words = article(rng)
        items.append(TextItem(f"f{f}-0", f"http://site{f}.example/a/{f}", " ".join(words), 100))
        for c in range(1, copies):
            items.append(TextItem(f"f{f}-{c}", f"http://mirror{c}.example/{f}", edited(rng, words, 0.005), 50 + c))
    for s in range(10):
        items.append(TextItem(f"single-{s}", f"http://single.example/{s}", " ".join(article(rng)), 0))
    return items


def clusters(db) -> set[frozenset]:
    groups: dict[int, set] = {}
    for row in dedup.iter_duplicates(db):
        groups.setdefault(row["cluster"], set()).add(row["id"])
    return {frozenset(g) for g in groups.values()}


@pytest.fixture
def db(tmp_path):
    return open_db(tmp_path / "dedup.db")


def test_near_duplicate_texts_form_clusters(db):
    items = corpus()
    result = dedup.index_texts(db, items)
    assert result.added == len(items)
    assert clusters(db) == {frozenset(f"f{f}-{c}" for c in range(3)) for f in range(12)}
    rows = list(dedup.iter_duplicates(db))
    assert set(rows[0]) == {"id", "url", "cluster", "canonical", "similarity"}
    assert all(0.8 <= r["similarity"] <= 1.0 for r in rows)


def test_canonical_is_first_seen_then_less_boilerplate_then_shorter_url(db):
    text = " ".join(article(np.random.default_rng(2)))
    dedup.index_texts(db, [("late", "http://a.example/1", text, 0)])
    dedup.index_texts(db, [("long-url", "http://b.example/very/long/path", text, 10),
                           ("short-url", "http://c.example/x", text, 10),
                           ("boilerplate", "http://d.example/x", text, 99)])
    assert {r["canonical"] for r in dedup.iter_duplicates(db)} == {"late"}
    dedup.remove_pages(db, ["late"])
    assert {r["canonical"] for r in dedup.iter_duplicates(db)} == {"short-url"}
    first = next(dedup.iter_duplicates(db))
    assert first["id"] == first["canonical"] and first["similarity"] == 1.0


def test_update_and_remove_keep_clusters_right(db):
    items = corpus(seed=3)
    dedup.index_texts(db, items)
    rng = np.random.default_rng(4)
    moved = TextItem("f0-1", "http://mirror1.example/0", " ".join(article(rng)))
    result = dedup.index_texts(db, [moved, items[5]])
    assert (result.updated, result.unchanged) == (1, 1)
    assert dedup.remove_pages(db, ["f1-0", "nope"]) == 1
    expected = {frozenset(f"f{f}-{c}" for c in range(3)) for f in range(2, 12)}
    expected |= {frozenset({"f0-0", "f0-2"}), frozenset({"f1-1", "f1-2"})}
    assert clusters(db) == expected


def test_restart_between_inserts_gives_the_same_duplicates(tmp_path):
    items = corpus(seed=5)
    one = open_db(tmp_path / "one.db")
    dedup.index_texts(one, items)
    for start in range(0, len(items), 7):
        many = open_db(tmp_path / "many.db")
        dedup.index_texts(many, items[start:start + 7])
        many.conn.close()
    many = open_db(tmp_path / "many.db")
    assert clusters(many) == clusters(one)


def test_find_similar_by_text_and_by_page(db):
    items = corpus(seed=6)
    dedup.index_texts(db, items, batch_size=5)
    found = dedup.find_similar(db, items[0].text)
    assert [f["id"] for f in found][:1] == ["f0-0"] and {f["id"] for f in found} == {"f0-0", "f0-1", "f0-2"}
    assert {f["id"] for f in dedup.find_similar_page(db, "http://site0.example/a/0")} == {"f0-1", "f0-2"}
    assert dedup.find_similar(db, "") == []
    with pytest.raises(InputError, match="not in the near-duplicate index"):
        dedup.find_similar_page(db, "http://unknown.example/")


def test_empty_texts_are_counted_not_indexed(db):
    result = dedup.index_texts(db, [("a", "http://a/", "   ...  "), ("b", "http://b/", "one two three")])
    assert (result.added, result.empty) == (1, 1)
    with pytest.raises(InputError, match="page_id, url, text"):
        dedup.index_texts(db, [("only-two", "values")])


def test_settings_are_fixed_by_the_first_call(db):
    dedup.index_texts(db, corpus(seed=7)[:3], ShingleSettings(kind="char", n=7))
    described = dedup.describe_settings(db)
    assert described["kind"] == "char" and described["stored"] is True
    assert described["s_curve_threshold"] == pytest.approx((1 / 16) ** (1 / ShingleSettings().rows), abs=1e-4)
    with pytest.raises(SettingsMismatchError, match="kind: 'char' != 'word'"):
        dedup.index_texts(db, corpus(seed=7)[3:4], ShingleSettings())
    dedup.index_texts(db, corpus(seed=7)[3:4])  # no settings: the stored ones


def test_estimate_verification(db):
    items = corpus(seed=8)
    dedup.index_texts(db, items, ShingleSettings(verify="estimate"))
    assert clusters(db) == {frozenset(f"f{f}-{c}" for c in range(3)) for f in range(12)}
    assert all(r["similarity"] >= 0.8 for r in dedup.iter_duplicates(db))
    assert {f["id"] for f in dedup.find_similar_page(db, "f3-0")} == {"f3-1", "f3-2"}
    assert len(list(dedup.iter_similar_pairs(db))) == 12 * 3
    assert db.conn.execute("SELECT count(*) FROM lsh_shingles").fetchone() == (0,)
    assert db.conn.execute("SELECT count(*) FROM lsh_signatures WHERE hashes IS NOT NULL").fetchone() == (0,)


def test_sample_verification_is_the_default_and_stores_bottom_k_samples(db):
    items = corpus(seed=9)[:3]
    dedup.index_texts(db, items)
    described = dedup.describe_settings(db)
    assert described["verify"] == "sample" and described["sample"] == 256
    blobs = [np.frombuffer(b, dtype=np.uint32) for (b,) in db.conn.execute("SELECT hashes FROM lsh_signatures")]
    assert len(blobs) == 3 and all(len(b) == 256 and (np.diff(b.astype(np.int64)) > 0).all() for b in blobs)
    rows = list(dedup.iter_duplicates(db))
    assert len(rows) == 3 and all(r["similarity"] >= 0.8 for r in rows)


def test_exact_verification_stores_every_shingle_hash(db):
    items = corpus(seed=9)[:3]
    dedup.index_texts(db, items, ShingleSettings(verify="exact"))
    sizes = [n for (n,) in db.conn.execute("SELECT length(hashes) / 4 FROM lsh_signatures ORDER BY doc")]
    assert sizes == [len(it.text.split()) - ShingleSettings().n + 1 for it in items]
    rows = list(dedup.iter_duplicates(db))
    assert len(rows) == 3 and all(r["similarity"] >= 0.8 for r in rows)


@pytest.mark.parametrize("verify", ["sample", "exact"])
def test_set_verification_finds_the_planted_families(db, verify):
    dedup.index_texts(db, corpus(seed=8), ShingleSettings(verify=verify))
    assert clusters(db) == {frozenset(f"f{f}-{c}" for c in range(3)) for f in range(12)}
    assert {f["id"] for f in dedup.find_similar_page(db, "f3-0")} == {"f3-1", "f3-2"}
    text = next(it.text for it in corpus(seed=8) if it.page_id == "f5-1")
    assert {f["id"] for f in dedup.find_similar(db, text)} == {"f5-0", "f5-1", "f5-2"}


def test_describe_settings_of_an_empty_index(db):
    described = dedup.describe_settings(db)
    assert described["stored"] is False and described["pages"] == 0
    assert described["candidate_probability_at_threshold"] > 0.99


def test_canonical_is_the_earliest_fetched_when_known(db):
    text = " ".join(article(np.random.default_rng(5)))
    dedup.index_texts(db, [TextItem("first-indexed", "http://a.example/1", text, 0)])  # no fetch time
    dedup.index_texts(db, [TextItem("later", "http://b.example/x", text, 0, "2024-05-02T00:00:00Z"),
                           TextItem("earliest", "http://c.example/very/long/url", text, 50,
                                    "Thu, 01 Feb 2024 10:00:00 GMT")])
    assert {r["canonical"] for r in dedup.iter_duplicates(db)} == {"earliest"}
    assert [r["id"] for r in dedup.iter_duplicates(db, canonical_only=True)] == ["earliest"]
    assert dedup.duplicate_ids(db) == {"first-indexed", "later"}


def test_web_time_reads_iso_and_http_dates_as_utc():
    assert dedup.web_time("2017-05-01T12:00:00Z") == "2017-05-01T12:00:00+00:00"
    assert dedup.web_time("2017-05-01T14:00:00+02:00") == "2017-05-01T12:00:00+00:00"
    assert dedup.web_time("2017-05-01") == "2017-05-01T00:00:00+00:00"
    assert dedup.web_time("Mon, 01 May 2017 12:00:00 GMT") == "2017-05-01T12:00:00+00:00"
    assert dedup.web_time("yesterday") is None and dedup.web_time(None) is None and dedup.web_time("") is None


def test_a_cut_copy_is_a_near_duplicate_by_containment(db, tmp_path):
    rng = np.random.default_rng(6)
    words = article(rng, 600)
    dedup.index_texts(db, [TextItem("whole", "http://a.example/1", " ".join(words)),
                           TextItem("cut", "http://b.example/1", " ".join(words[:int(0.7 * len(words))])),
                           TextItem("replaced", "http://c.example/1", edited(rng, words, 0.03))])
    assert clusters(db) == {frozenset({"whole", "cut", "replaced"})}
    jaccard = open_db(tmp_path / "jaccard.db")
    dedup.index_texts(jaccard, [TextItem("whole", "http://a.example/1", " ".join(words)),
                                TextItem("cut", "http://b.example/1", " ".join(words[:int(0.7 * len(words))]))],
                      ShingleSettings(measure="jaccard", n=5, rows=6))
    assert clusters(jaccard) == set()  # Jaccard 0.7: below 0.8


def test_the_old_index_settings_are_kept_and_new_defaults_refused(tmp_path):
    import shutil
    from pathlib import Path

    path = tmp_path / "old.db"
    shutil.copy(Path(__file__).parent / "fixtures" / "lsh_v1.db", path)
    db = open_db(path)
    described = dedup.describe_settings(db)
    assert (described["measure"], described["n"], described["rows"]) == ("jaccard", 5, 6)
    migrated = {row[0] for row in db.conn.execute("SELECT version FROM schema_migrations WHERE component = 'lsh'")}
    assert migrated == set(range(1, len(lsh.STEPS) + 1))
    assert {"fetched_at", "anchors"} <= {row[1] for row in db.conn.execute("PRAGMA table_info(lsh_signatures)")}
    # what it was built with: no anchor keys, one threshold for every pair, no Jaccard floor
    assert (described["anchor_rate"], described["anchor_keys"], described["same_site_jaccard"]) == (0, 0, 0.0)
    assert described["sample_min_hashes"] == 0  # migration 4: no minimum of sampled hashes, as it verified
    assert described["resemblance"] == 0.0  # migration 9: no pair passes by its Jaccard alone, as it verified
    assert described["cross_site_threshold"] == described["threshold"]
    assert clusters(db) == {frozenset({"a", "b"})}
    assert db.conn.execute("SELECT count(*) FROM lsh_signatures").fetchone()[0] == 3
    text = " ".join(article(np.random.default_rng(8)))
    dedup.index_texts(db, [TextItem("d", "http://example.org/d", text), TextItem("e", "http://example.org/e", text,
                                                                                0, "2020-01-01T00:00:00Z")])
    assert frozenset({"d", "e"}) in clusters(db)
    assert next(r for r in dedup.iter_duplicates(db) if r["id"] == "d")["canonical"] == "e"
    with pytest.raises(SettingsMismatchError, match="measure: 'jaccard' != 'containment'"):
        dedup.index_texts(db, [TextItem("f", "http://example.org/f", text)], ShingleSettings())


def test_a_story_inside_a_longer_page_of_another_site_is_found(db):
    rng = np.random.default_rng(21)
    story = article(rng, 150)
    long_page = " ".join(story[:-20] + article(rng, 900))  # the story, then four times as much other text
    syndicated = " ".join(article(rng, 12) + story[:-20] + article(rng, 30))  # new headline and last paragraph
    dedup.index_texts(db, [TextItem("long", "http://news.example/a", long_page),
                           TextItem("copy", "https://www.agency.example/b", syndicated)])
    assert clusters(db) == {frozenset({"long", "copy"})}
    row = next(r for r in dedup.iter_duplicates(db) if r["id"] == "copy")
    assert 0.75 <= row["similarity"] < 0.8  # containment: across sites 0.75 is enough
    assert [f["id"] for f in dedup.find_similar_page(db, "copy")] == ["long"]


def test_a_copy_that_kept_other_boilerplate_on_each_side_passes_by_resemblance(db, tmp_path):
    rng = np.random.default_rng(23)
    story = article(rng, 300)
    original = " ".join(article(rng, 100) + story)  # what extraction kept of the page around the story ...
    copy = " ".join(article(rng, 100) + story)  # ... rewritten in the copy: containment 0.75, Jaccard 0.6
    dedup.index_texts(db, [TextItem("original", "http://site.example/a", original),
                           TextItem("copy", "http://site.example/b", copy)])
    assert clusters(db) == {frozenset({"original", "copy"})}
    assert 0.7 <= next(r for r in dedup.iter_duplicates(db) if r["id"] == "copy")["similarity"] < 0.8
    off = open_db(tmp_path / "off.db")
    dedup.index_texts(off, [TextItem("original", "http://site.example/a", original),
                            TextItem("copy", "http://site.example/b", copy)], ShingleSettings(resemblance=0.0))
    assert clusters(off) == set()
    short = open_db(tmp_path / "short.db")  # the same shape in 40 words: under resemblance_min_shingles
    story = article(rng, 24)
    dedup.index_texts(short, [TextItem("original", "http://site.example/a", " ".join(article(rng, 8) + story)),
                              TextItem("copy", "http://site.example/b", " ".join(article(rng, 8) + story))])
    assert clusters(short) == set()


def test_two_articles_sharing_a_third_of_their_text_do_not_pass_by_resemblance(db):
    rng = np.random.default_rng(24)
    shared = article(rng, 150)  # an author box, a comment policy: Jaccard about 0.25
    dedup.index_texts(db, [TextItem("a", "http://site.example/a", " ".join(article(rng, 300) + shared)),
                           TextItem("b", "http://site.example/b", " ".join(article(rng, 300) + shared))])
    assert clusters(db) == set()


def test_a_short_page_inside_a_longer_one_of_its_own_site_is_not_a_copy(db):
    rng = np.random.default_rng(22)
    leftovers = article(rng, 120)  # what a site's short page keeps, repeated inside a long page of the site
    dedup.index_texts(db, [TextItem("short", "http://site.example/a", " ".join(leftovers)),
                           TextItem("long", "http://site.example/b", " ".join(leftovers + article(rng, 800)))])
    assert clusters(db) == set()  # containment 1.0, Jaccard 0.1: below the same-site floor
    other = open_db(db.conn.execute("PRAGMA database_list").fetchone()[2] + "-other.db")
    dedup.index_texts(other, [TextItem("short", "http://site.example/a", " ".join(leftovers)),
                              TextItem("long", "http://site.example/b", " ".join(leftovers + article(rng, 800)))],
                      ShingleSettings(same_site_jaccard=0.0))
    assert clusters(other) == {frozenset({"short", "long"})}


def queried_and_extended(db, monkeypatch, *, sets_in_rows: frozenset = frozenset({"d", "e"})) -> None:
    """A fixture index (a, c, then b a cut copy of a) finds b's copy, takes two new pages that go into a new
    segment of the band index at once (with the recent runs), and clusters them (``sets_in_rows``: the pages whose
    verification sets are in their rows then)."""
    assert [r["id"] for r in dedup.find_similar_page(db, "b")] == ["a"]
    monkeypatch.setattr(lsh, "RECENT_PAGES", 2)
    words = article(np.random.default_rng(9))
    dedup.index_texts(db, [TextItem("d", "http://example.org/d", " ".join(words)),
                           TextItem("e", "http://example.org/e", " ".join(words[:250]))])
    assert clusters(db) == {frozenset({"a", "b"}), frozenset({"d", "e"})}
    assert db.conn.execute("SELECT count(*) FROM lsh_runs").fetchone()[0] == 0
    assert len(segment_rows(db)) and len({doc for _, doc in segment_rows(db)}) == 5
    # migration 7: the new pages' verification sets are in their rows, the older pages' stay in lsh_shingles, and
    # verification reads both
    assert {r[0] for r in db.conn.execute("SELECT page_id FROM lsh_signatures WHERE hashes IS NOT NULL")} == sets_in_rows
    docs = [r[0] for r in db.conn.execute("SELECT doc FROM lsh_signatures")]
    settings = lsh.load_settings(db)
    sets = lsh.stored_sets(db, docs, settings)
    assert sorted(sets) == sorted(docs) and all(len(h) for h in sets.values())
    assert [r["id"] for r in dedup.find_similar_page(db, "d")] == ["e"]
    assert sorted(segment_rows(db, pages=True)) == page_key_rows(db)  # every page found by its id through the band index


def test_an_index_found_by_a_unique_page_id_index_migrates_to_page_keys(tmp_path, monkeypatch):
    """tests/fixtures/lsh_v7.db (made by make_lsh_v7.py with the code of 6b35ed3: pages found by page id through
    lsh_signatures' UNIQUE index): migration 8 rebuilds the table without that index (the same rows) and puts every
    page's page key in the band index; its pages are found by id again (the same text again is unchanged, a lookup
    by id, a removal by id), and new pages, lookups and clusters work as on an index built today."""
    import random

    db, before = migrated_fixture(tmp_path, "lsh_v7.db", "SELECT * FROM lsh_signatures ORDER BY doc")
    assert db.conn.execute("SELECT * FROM lsh_signatures ORDER BY doc").fetchall() == before
    assert not [r for r in db.conn.execute("PRAGMA index_list(lsh_signatures)") if r[2]]  # no UNIQUE index left
    assert sorted(segment_rows(db, pages=True)) == page_key_rows(db)
    rng = random.Random(17)  # make_lsh_v3.py's texts
    words = [f"w{i}" for i in range(400)]
    base = [rng.choice(words) for _ in range(150)]
    again = dedup.index_texts(db, [("a", "http://example.org/a", " ".join(base), 10)])
    assert (again.added, again.unchanged) == (0, 1)
    assert lsh.page_row(db, "c").doc == 2 and lsh.page_row(db, "http://example.org/copy-of-a").page_id == "b"
    assert lsh.page_row(db, "nowhere") is None
    queried_and_extended(db, monkeypatch, sets_in_rows=frozenset("abcde"))
    assert lsh.remove_pages(db, ["c", "nowhere"]) == 1
    assert lsh.stats(db)["pages"] == 4 and lsh.page_row(db, "c") is None
    assert sorted(segment_rows(db, pages=True)) == page_key_rows(db)


def test_an_index_with_blocks_of_256_rows_indexes_on_as_one_built_today(tmp_path, monkeypatch):
    """tests/fixtures/lsh_v9.db (made by make_lsh_v9.py with the code of 7078a15: segment blocks of 256 rows, before
    SEGMENT_BLOCK_ROWS became 254) and an index built today from the same texts in the same batches hold the same
    pages, clusters, links, candidate pairs and buckets (each key's rows, whole and capped, read across the 256-row
    blocks); so they do after more pages go into the recent runs, and after the flush whose merge rewrites the old
    segments in blocks of 254 rows."""
    import runpy
    import shutil
    from pathlib import Path

    fixtures = Path(__file__).parent / "fixtures"
    stories = runpy.run_path(str(fixtures / "make_lsh_v9.py"), run_name="fixture")["stories"]
    monkeypatch.setattr(lsh, "RECENT_PAGES", 12)
    shutil.copy(fixtures / "lsh_v9.db", tmp_path / "v9.db")
    old, today = open_db(tmp_path / "v9.db"), open_db(tmp_path / "today.db")
    block_rows = lambda db: sorted({len(k) >> 3 for (k,) in db.conn.execute("SELECT keys FROM lsh_blocks")})  # noqa: E731
    assert block_rows(old)[-1] == 256 and len(lsh._segments(old).items) == 3
    items = stories()
    for start in range(0, len(items), 6):
        dedup.index_texts(today, items[start:start + 6])
    assert block_rows(today)[-1] == lsh.SEGMENT_BLOCK_ROWS == 254
    more = stories(4, seed=29)  # 12 pages: 6 into the recent runs, then 6 more and a flush that merges
    for step in range(3):
        dumps = [index_dump(db) for db in (old, today)]
        assert dumps[0] == dumps[1], step
        assert len(dumps[0]["dup_clusters"]) == 12 + 2 * step
        if step < 2:
            for db in (old, today):
                dedup.index_texts(db, more[6 * step:6 * step + 6])
    assert [(s.level, block_rows(old)[-1]) for s in lsh._segments(old).items] == [(1, 254)]  # all rewritten


def index_dump(db) -> dict:
    """Pages, clusters, links, candidate pairs, and every key's bucket whole and capped at 1 and 2 rows."""
    out = {t: db.conn.execute(f"SELECT * FROM {t} ORDER BY 1, 2").fetchall()
           for t in ("lsh_signatures", "lsh_links", "dup_clusters")}
    out["pairs"] = sorted(p for chunk in lsh.iter_candidate_pairs(db) for p in map(tuple, chunk.tolist()))
    keys = np.unique(np.concatenate([lsh._recent(db).rows()[0], *[
        np.frombuffer(k, dtype=np.int64) for (k,) in db.conn.execute("SELECT keys FROM lsh_blocks")]]))
    for cap in (1, 2, 10**6):
        out[f"rows{cap}"] = lsh._bucket_rows(db, keys, cap=cap).tolist()
    return out


def segment_rows(db, *, pages: bool = False) -> list[tuple[int, int]]:
    """Every (key, doc) row of the band index's segments, in block order: the band and anchor keys' rows, or
    (``pages``) the page keys' rows."""
    return [pair for keys, docs in db.conn.execute("SELECT keys, docs FROM lsh_blocks ORDER BY id")
            for pair in zip(np.frombuffer(keys, np.int64).tolist(), np.frombuffer(docs, np.int64).tolist())
            if (pair[0] >= lsh.PAGE_KEY_BASE) == pages]


def page_key_rows(db) -> list[tuple[int, int]]:
    """What migration 8 must have put in the band index: a (page key, doc) row for every stored page."""
    rows = db.conn.execute("SELECT doc, page_id FROM lsh_signatures ORDER BY doc").fetchall()
    return sorted(zip(lsh.page_keys([p for _, p in rows]).tolist(), [d for d, _ in rows]))


def test_an_index_written_before_the_reference_clustering_keeps_working(tmp_path, monkeypatch):
    """tests/fixtures/lsh_v3.db (made by make_lsh_v3.py with the code of 4d7d034, whose clusters were connected
    components): keys in lsh_bands and lsh_recent; lookups, clusters and new pages work, and lsh_recent still
    merges into lsh_bands."""
    import shutil
    from pathlib import Path

    path = tmp_path / "v3.db"
    shutil.copy(Path(__file__).parent / "fixtures" / "lsh_v3.db", path)
    db = open_db(path)
    assert dedup.describe_settings(db)["anchor_rate"] == ShingleSettings().anchor_rate
    conn = db.conn
    assert {row[0] for row in conn.execute("SELECT version FROM schema_migrations WHERE component = 'lsh'")} == \
        set(range(1, len(lsh.STEPS) + 1))
    assert dedup.describe_settings(db)["sample_min_hashes"] == 0  # verifies as it was built to
    assert dedup.describe_settings(db)["resemblance"] == 0.0
    assert clusters(db) == {frozenset({"a", "b"})}
    queried_and_extended(db, monkeypatch)


def migrated_fixture(tmp_path, name: str, *queries: str) -> tuple:
    """(a copy of tests/fixtures/NAME opened again, then each query's rows as the file held them before): any read
    migrates it, keeping its clusters and recording every migration of the lsh component."""
    import shutil
    from pathlib import Path

    path = tmp_path / name
    shutil.copy(Path(__file__).parent / "fixtures" / name, path)
    old = open_db(path)
    before = [old.conn.execute(sql).fetchall() for sql in queries]
    old.conn.close()
    assert all(before)
    db = open_db(path)
    assert clusters(db) == {frozenset({"a", "b"})}  # any read migrates
    assert {row[0] for row in db.conn.execute("SELECT version FROM schema_migrations WHERE component = 'lsh'")} == \
        set(range(1, len(lsh.STEPS) + 1))
    return (db, *before)


def test_an_index_with_row_tables_of_keys_migrates_to_runs_and_filters(tmp_path, monkeypatch):
    """tests/fixtures/lsh_v4.db (made by make_lsh_v4.py with the code of 3cf8f85: keys in the row tables lsh_bands
    and lsh_recent): migration 5 turns lsh_recent into one run (and migration 6 lsh_bands into a segment);
    lookups, clusters, new pages and the next flush work as on an index built today."""
    db, recent, bands = migrated_fixture(tmp_path, "lsh_v4.db", "SELECT key, doc FROM lsh_recent ORDER BY key, doc",
                                         "SELECT key, doc FROM lsh_bands ORDER BY key, doc")
    assert "lsh_recent" not in db.table_names()
    (keys, docs), = db.conn.execute("SELECT keys, docs FROM lsh_runs").fetchall()
    assert list(zip(np.frombuffer(keys, np.int64).tolist(), np.frombuffer(docs, np.int64).tolist())) == recent
    assert segment_rows(db) == bands  # migration 6: lsh_bands became one segment
    assert sorted(segment_rows(db, pages=True)) == page_key_rows(db)  # migration 8: the page keys, another
    queried_and_extended(db, monkeypatch)


def test_an_index_with_a_row_table_of_band_keys_migrates_to_segments(tmp_path, monkeypatch):
    """tests/fixtures/lsh_v5.db (made by make_lsh_v5.py with the code of 1a61856: band keys in the row table
    lsh_bands with Bloom filters in lsh_filter, recent keys in lsh_runs): migration 6 makes lsh_bands one segment
    of sorted blocks (its filter holding every key), drops lsh_bands and lsh_filter, keeps the runs; lookups,
    clusters, new pages and the next flush work as on an index built today."""
    db, bands, runs = migrated_fixture(tmp_path, "lsh_v5.db", "SELECT key, doc FROM lsh_bands ORDER BY key, doc",
                                       "SELECT run, keys, docs FROM lsh_runs ORDER BY run")
    assert not {"lsh_bands", "lsh_filter"} & set(db.table_names())
    assert db.conn.execute("SELECT run, keys, docs FROM lsh_runs ORDER BY run").fetchall() == runs
    assert segment_rows(db) == bands
    assert sorted(segment_rows(db, pages=True)) == page_key_rows(db)
    segment, pages = lsh._segments(db).items
    assert segment.rows == len(bands) and segment.level == 0 and pages.rows == len(page_key_rows(db))
    assert lsh._bloom_has(segment.bits, np.array([k for k, _ in bands], dtype=np.int64)).all()
    queried_and_extended(db, monkeypatch)


def test_line_shingles_are_a_stored_setting_and_older_indexes_keep_crossing_lines(tmp_path):
    """``lines`` is persisted like every setting: an index built with it refuses texts signed without it, and an
    index stored before the setting existed (tests/fixtures/lsh_v4.db, written by 3cf8f85) loads lines=False, what
    its shingles were, and refuses lines=True with the difference named."""
    import shutil
    from dataclasses import replace
    from pathlib import Path

    rng = np.random.default_rng(31)
    paragraphs = [" ".join(article(rng, 40)) for _ in range(8)]
    moved = paragraphs[4:] + paragraphs[:4]
    lined = open_db(tmp_path / "lines.db")
    dedup.index_texts(lined, [TextItem("a", "http://example.org/a", "\n".join(paragraphs)),
                              TextItem("b", "http://example.org/b", "\n".join(moved))], ShingleSettings(lines=True))
    assert dedup.describe_settings(lined)["lines"] is True
    assert clusters(lined) == {frozenset({"a", "b"})}
    row = next(r for r in dedup.iter_duplicates(lined) if r["id"] == "b")
    assert row["similarity"] == 1.0  # every shingle stays inside its paragraph
    with pytest.raises(SettingsMismatchError, match="lines: True != False"):
        dedup.index_texts(lined, [TextItem("c", "http://example.org/c", paragraphs[0])], ShingleSettings(lines=False))
    path = tmp_path / "v4.db"
    shutil.copy(Path(__file__).parent / "fixtures" / "lsh_v4.db", path)
    old = open_db(path)
    assert dedup.describe_settings(old)["lines"] is False
    assert "lines" not in {name for (name,) in old.conn.execute("SELECT name FROM lsh_settings")}
    with pytest.raises(SettingsMismatchError, match="lines: False != True"):
        dedup.index_texts(old, [TextItem("c", "http://example.org/c", paragraphs[0])],
                          replace(lsh.load_settings(old), lines=True))


def test_tail_anchor_keys_are_a_stored_setting_and_older_indexes_keep_none(tmp_path):
    """``anchor_tail_keys`` is persisted like every setting: an index stored before it existed (tests/fixtures/
    lsh_v5.db, default settings of 1a61856) loads 0, the keys its pages have, and refuses 4 with the difference
    named; a new index stores its value, and with 4 finds a copy cut from the start by its last keys alone."""
    import shutil
    from dataclasses import replace
    from pathlib import Path

    path = tmp_path / "v5.db"
    shutil.copy(Path(__file__).parent / "fixtures" / "lsh_v5.db", path)
    old = open_db(path)
    assert dedup.describe_settings(old)["anchor_tail_keys"] == 0
    with pytest.raises(SettingsMismatchError, match="anchor_tail_keys: 0 != 4"):
        dedup.index_texts(old, [TextItem("c", "http://example.org/c", "a b c d e f")],
                          replace(lsh.load_settings(old), anchor_tail_keys=4))
    rng = np.random.default_rng(8)
    words = [f"w{i}" for i in rng.integers(0, 50_000, size=1500)]
    original, cut = " ".join(words), " ".join(words[1000:])  # the last third: Jaccard 0.33, containment 1
    settings = ShingleSettings(bands=1, rows=128, permutations=128)  # no band key can pair them: anchor keys alone
    for tail, pairs in ((0, set()), (4, {frozenset({"a", "b"})})):
        db = open_db(tmp_path / f"tail{tail}.db")
        dedup.index_texts(db, [TextItem("a", "http://a.example/1", original), TextItem("b", "http://b.example/2", cut)],
                          replace(settings, anchor_tail_keys=tail))
        assert dedup.describe_settings(db)["anchor_tail_keys"] == tail
        assert clusters(db) == pairs


@pytest.mark.parametrize("fixture", ["lsh_v5.db", "lsh_v7.db"])
def test_an_index_built_with_twelve_first_anchor_keys_keeps_them(tmp_path, fixture):
    """The default became 10 first and 2 last anchor keys; an index stored with 12 + 0 (tests/fixtures/lsh_v5.db:
    anchor_tail_keys not stored; lsh_v7.db: stored) keeps 12 + 0: ``pipeline.index_settings`` (what run and extract
    sign with) gives them, and new pages go in with them, while a new index stores the defaults."""
    import shutil
    from pathlib import Path

    from templater import config
    from templater.pipeline import index_settings

    assert (config.ANCHOR_KEYS, config.ANCHOR_TAIL_KEYS) == (10, 2)
    path = tmp_path / fixture
    shutil.copy(Path(__file__).parent / "fixtures" / fixture, path)
    old = open_db(path)
    settings = index_settings(old)
    assert (settings.anchor_keys, settings.anchor_tail_keys) == (12, 0)
    pages = lsh.stats(old)["pages"]
    rng = np.random.default_rng(3)
    dedup.index_texts(old, [TextItem("new-page", "http://example.org/new", " ".join(article(rng)))], settings)
    assert lsh.stats(old)["pages"] == pages + 1
    with pytest.raises(SettingsMismatchError, match="anchor_keys: 12 != 10"):
        dedup.index_texts(old, [TextItem("other", "http://example.org/other", " ".join(article(rng)))],
                          ShingleSettings())
    new = open_db(tmp_path / "new.db")
    dedup.index_texts(new, [TextItem("a", "http://example.org/a", " ".join(article(rng)))])
    assert (dedup.describe_settings(new)["anchor_keys"], dedup.describe_settings(new)["anchor_tail_keys"]) == (10, 2)
