"""store.lsh: persisted settings, band rows, and clusters that stay equal to a from-scratch computation."""

from __future__ import annotations

import functools
import math

from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings as hsettings, strategies as st

from store import lsh
from store.db import open_db
from store.lsh import IndexedPage
from templater import native
from templater.errors import SettingsMismatchError
from templater.shingles import (ShingleSettings, Shingles, Signatures, band_keys, comparable_set, estimate_similarity,
                                set_jaccard, set_similarity, sign_shingles, sorted_set)

SETTINGS = ShingleSettings(permutations=32, bands=8, rows=4, threshold=0.7, verify="estimate")


def make_signatures(rng: np.random.Generator, count: int, families: int, noise: float,
                    k: int = SETTINGS.permutations) -> np.ndarray:
    """``count`` signatures drawn around ``families`` random bases, each slot replaced with probability ``noise``."""
    bases = rng.integers(0, 2**32, size=(families, k), dtype=np.uint32)
    values = bases[rng.integers(0, families, size=count)].copy()
    replace = rng.random((count, k)) < rng.uniform(0, noise, size=(count, 1))
    values[replace] = rng.integers(0, 2**32, size=int(replace.sum()), dtype=np.uint32)
    return values


def add(db, ids: list[str], values: np.ndarray, settings: ShingleSettings = SETTINGS) -> lsh.AddResult:
    pages = [IndexedPage(i, f"http://example.org/{i}") for i in ids]
    return lsh.add_signatures(db, pages, Signatures(values, np.zeros(len(ids), bool), settings))


def reference_clusters(pages: dict[str, np.ndarray], settings: ShingleSettings = SETTINGS) -> set[frozenset]:
    """Connected components of (shares a band key) and (estimated similarity >= threshold), all pairs."""
    ids = sorted(pages)
    values = np.stack([pages[i] for i in ids]) if ids else np.empty((0, settings.permutations), np.uint32)
    keys = band_keys(values, settings)
    return components(ids, lambda i, j: (keys[i] == keys[j]).any()
                      and estimate_similarity(values[i], values[j]) >= settings.threshold)


def root(parent: list[int], a: int) -> int:
    """The root of a in a plain union-find forest (the tests' own oracle, apart from templater.unionfind)."""
    while parent[a] != a:
        a = parent[a]
    return a


def greedy_clusters(pages: dict[str, np.ndarray], settings: SETTINGS.__class__ = SETTINGS) -> set[frozenset]:
    """The clusters the index keeps, computed page by page in id order (= doc order; every text of length 0, so a
    group's reference page is its first): a page joins the groups holding a candidate partner it passes with, only
    those whose reference it passes with too, the most similar first; a further group only when the two references
    pass with each other."""
    ids = sorted(pages)
    values = np.stack([pages[i] for i in ids]) if ids else np.empty((0, settings.permutations), np.uint32)
    keys = band_keys(values, settings)
    sim = lambda i, j: float(estimate_similarity(values[i], values[j]))  # noqa: E731
    ok = lambda i, j: sim(i, j) >= settings.threshold  # noqa: E731
    parent = list(range(len(ids)))
    find = functools.partial(root, parent)

    for i in range(len(ids)):
        groups = {find(j) for j in range(i) if (keys[i] == keys[j]).any() and ok(i, j)}
        ranked = sorted((-sim(i, g), g) for g in groups if ok(i, g))  # a group's root is its first page
        for rank, (_, g) in enumerate(ranked):
            if find(g) == find(i) or (rank and not ok(find(i), find(g))):
                continue
            a, b = find(i), find(g)
            parent[max(a, b)] = min(a, b)
    found: dict[int, set] = {}
    for i, name in enumerate(ids):
        found.setdefault(find(i), set()).add(name)
    return {frozenset(g) for g in found.values() if len(g) > 1}


def within_components(clusters: set[frozenset], pages: dict[str, np.ndarray]) -> bool:
    """Every cluster lies inside one connected component of the verified candidate pairs."""
    reference = reference_clusters(pages)
    return all(any(c <= r for r in reference) for c in clusters)


def components(ids: list[str], linked) -> set[frozenset]:
    """Connected components (of two or more) of the pairs (i, j) of positions in ids that ``linked`` accepts."""
    parent = list(range(len(ids)))
    find = functools.partial(root, parent)

    for i in range(len(ids)):
        for j in range(i):
            if linked(i, j):
                parent[find(i)] = find(j)
    groups: dict[int, set] = {}
    for i, name in enumerate(ids):
        groups.setdefault(find(i), set()).add(name)
    return {frozenset(g) for g in groups.values() if len(g) > 1}


def stored_clusters(db) -> set[frozenset]:
    return {frozenset(m.page_id for m in members) for _, members in lsh.iter_clusters(db)}


def check_invariants(db, bands: int = SETTINGS.bands, anchors: bool = False) -> None:
    """Labels are members' doc numbers, sizes are right, links are a spanning tree of each cluster."""
    conn = db.conn
    sizes = dict(conn.execute("SELECT cluster, size FROM dup_clusters"))
    counts = dict(conn.execute("SELECT cluster, count(*) FROM lsh_signatures GROUP BY cluster HAVING count(*) > 1"))
    assert sizes == counts
    for label in sizes:
        assert conn.execute("SELECT cluster FROM lsh_signatures WHERE doc = ?", [label]).fetchone() == (label,)
    links = conn.execute("SELECT count(*) FROM lsh_links").fetchone()[0]
    assert links == 2 * sum(size - 1 for size in sizes.values())
    rows = conn.execute("SELECT a.cluster, b.cluster FROM lsh_links l JOIN lsh_signatures a ON a.doc = l.doc"
                        " JOIN lsh_signatures b ON b.doc = l.other").fetchall()
    assert all(x == y for x, y in rows)
    rows = sum(s.rows for s in lsh._segments(db).items) + len(lsh._recent(db).rows()[0])
    assert sum(s.rows for s in lsh._segments(db).items) == sum(
        len(blob) // 8 for (blob,) in conn.execute("SELECT keys FROM lsh_blocks"))
    pages = conn.execute("SELECT count(*) FROM lsh_signatures").fetchone()[0]
    assert rows >= pages * (bands + 1) if anchors else rows == pages * (bands + 1)  # (and a page key row a page)


@pytest.fixture
def db(tmp_path):
    return open_db(tmp_path / "index.db")


def test_settings_are_persisted_and_other_settings_refused(db, tmp_path):
    rng = np.random.default_rng(1)
    add(db, ["a", "b"], make_signatures(rng, 2, 1, 0.1))
    db.conn.close()
    db = open_db(tmp_path / "index.db")
    assert lsh.load_settings(db) == SETTINGS
    other = ShingleSettings(permutations=32, bands=4, rows=8, threshold=0.7, verify="estimate")
    with pytest.raises(SettingsMismatchError, match="bands: 8 != 4"):
        add(db, ["c"], make_signatures(rng, 1, 1, 0.1), settings=other)
    assert lsh.stats(db)["pages"] == 2


def test_batches_match_the_reference(db):
    rng = np.random.default_rng(2)
    values = make_signatures(rng, 300, 40, 0.5)
    ids = [f"p{i:03d}" for i in range(300)]
    for start in range(0, 300, 70):
        add(db, ids[start:start + 70], values[start:start + 70])
    expected = greedy_clusters(dict(zip(ids, values)))
    assert len(expected) > 10 and expected != reference_clusters(dict(zip(ids, values)))  # some chains cut
    assert stored_clusters(db) == expected
    check_invariants(db)


def test_removal_and_update_keep_clusters_right(db):
    rng = np.random.default_rng(3)
    values = make_signatures(rng, 200, 15, 0.5)
    ids = [f"p{i:03d}" for i in range(200)]
    pages = dict(zip(ids, values))
    add(db, ids, values)
    order = rng.permutation(200)
    gone = [ids[i] for i in order[:40]]
    assert lsh.remove_pages(db, gone) == 40
    for name in gone:
        del pages[name]
    changed = [ids[i] for i in order[40:70]]
    new_values = make_signatures(rng, 30, 5, 0.3)
    result = add(db, changed, new_values)
    assert result.updated == 30 and result.added == 0
    pages.update(zip(changed, new_values))
    assert within_components(stored_clusters(db), pages)
    check_invariants(db)


def test_a_batch_of_changed_unchanged_and_new_pages_finds_what_separate_batches_find(tmp_path):
    """One lookup serves a batch's page keys and band keys; a batch that also re-indexes pages with another text looks
    its band keys up again once those pages have left the index: the same candidates and clusters as the changed,
    unchanged and new pages given in three batches."""
    rng = np.random.default_rng(8)
    values = make_signatures(rng, 120, 6, 0.3)
    ids = [f"p{i:03d}" for i in range(120)]
    mixed, split = open_db(tmp_path / "mixed.db"), open_db(tmp_path / "split.db")
    for db in (mixed, split):
        add(db, ids[:80], values[:80])
    changed = make_signatures(rng, 20, 3, 0.3)
    batch_ids = ids[:20] + ids[20:40] + ids[80:]
    batch_values = np.concatenate((changed, values[20:40], values[80:]))
    current = dict(zip(ids, values)) | dict(zip(ids[:20], changed))
    doc_of = {page.page_id: page.doc for page in (lsh.page_row(mixed, i) for i in ids[:80])}
    doc_of |= {i: 81 + n for n, i in enumerate(ids[80:])}
    keys_of = {doc_of[i]: set(band_keys(v[None, :], SETTINGS)[0].tolist()) for i, v in current.items()}
    found: list[tuple[int, int]] = []
    real = lsh._candidate_pairs

    def spy(db_, *rest):
        pairs = real(db_, *rest)
        found.extend(map(tuple, pairs.tolist()))
        return pairs

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(lsh, "_candidate_pairs", spy)
        result = add(mixed, batch_ids, batch_values)
    assert (result.updated, result.unchanged, result.added) == (20, 20, 40)
    assert found and all(keys_of[a] & keys_of[b] for a, b in found)  # (no pair through a key a page no longer has)
    add(split, ids[:20], changed)
    add(split, ids[20:40], values[20:40])
    add(split, ids[80:], values[80:])
    assert stored_clusters(mixed) == stored_clusters(split)
    pairs = [sorted(map(tuple, np.concatenate(list(lsh.iter_candidate_pairs(db))).tolist())) for db in (mixed, split)]
    assert pairs[0] == pairs[1]
    check_invariants(mixed)


def test_unchanged_pages_keep_first_seen_and_refresh_url(db):
    rng = np.random.default_rng(4)
    values = make_signatures(rng, 3, 1, 0.0)
    add(db, ["a", "b", "c"], values)
    result = lsh.add_signatures(db, [IndexedPage("a", "http://new/a", 7, 9)],
                                Signatures(values[:1], np.zeros(1, bool), SETTINGS))
    assert result.unchanged == 1
    member = lsh.page_row(db, "a")
    assert (member.url, member.boilerplate_chars, member.first_seen) == ("http://new/a", 7, 1)


def test_a_batch_indexed_again_leaves_the_counters_as_they_were(db):
    """A resumed run indexes again the batch a kill cut off after the index committed it: nothing is added, and the
    counters (generation, next_doc) stay those of an uninterrupted run, so the next new page's first_seen too."""
    rng = np.random.default_rng(5)
    values = make_signatures(rng, 4, 2, 0.1)
    add(db, ["a", "b"], values[:2])
    state = lambda: dict(db.conn.execute("SELECT name, value FROM lsh_state"))  # noqa: E731
    before = state()
    assert add(db, ["a", "b"], values[:2]).unchanged == 2
    assert state() == before
    add(db, ["c", "d"], values[2:])
    assert lsh.page_row(db, "c").first_seen == before["generation"]  # (the next generation to give)


def test_restart_between_inserts_gives_the_same_clusters(tmp_path):
    rng = np.random.default_rng(5)
    values = make_signatures(rng, 240, 30, 0.5)
    ids = [f"p{i:03d}" for i in range(240)]
    one = open_db(tmp_path / "one.db")
    add(one, ids, values)
    for start in range(0, 240, 60):
        many = open_db(tmp_path / "many.db")
        add(many, ids[start:start + 60], values[start:start + 60])
        many.conn.close()
    many = open_db(tmp_path / "many.db")
    assert stored_clusters(many) == stored_clusters(one) == greedy_clusters(dict(zip(ids, values)))


def test_removing_a_hub_reconnects_the_rest(db):
    """Pages all close to each other: removing the page every other one linked to leaves one cluster."""
    rng = np.random.default_rng(6)
    values = make_signatures(rng, 12, 1, 0.1)
    ids = [f"p{i:02d}" for i in range(12)]
    add(db, ids[:1], values[:1])
    add(db, ids[1:], values[1:])
    lsh.remove_pages(db, ["p00"])
    assert stored_clusters(db) == greedy_clusters(dict(zip(ids[1:], values[1:])))
    check_invariants(db)


def test_a_bucket_above_the_cap_still_clusters(db, monkeypatch):
    monkeypatch.setattr(lsh, "BUCKET_CAP", 3)
    values = np.repeat(make_signatures(np.random.default_rng(7), 1, 1, 0.0), 10, axis=0)
    add(db, [f"p{i}" for i in range(10)], values)
    assert stored_clusters(db) == {frozenset(f"p{i}" for i in range(10))}
    lsh.remove_pages(db, ["p0", "p1"])
    assert stored_clusters(db) == {frozenset(f"p{i}" for i in range(2, 10))}
    add(db, [f"q{i}" for i in range(4)], values[:4])  # stored buckets of 8 offer their first 3 pages
    assert stored_clusters(db) == {frozenset([f"p{i}" for i in range(2, 10)] + [f"q{i}" for i in range(4)])}
    check_invariants(db)
    pairs = np.concatenate(list(lsh.iter_candidate_pairs(db)))
    assert len(pairs) and (pairs[:, 0] < pairs[:, 1]).all()


def replay(db, ops, make, add_pages) -> dict:
    """Apply (kind, page numbers, seed) add/remove operations; returns what each live page was added with."""
    pages: dict = {}
    for kind, which, seed in ops:
        names = [f"p{i:02d}" for i in dict.fromkeys(which)]
        if kind == "add" and names:
            values = make(np.random.default_rng(seed), len(names))
            add_pages(db, names, values)
            pages.update(zip(names, values))
        elif names:
            lsh.remove_pages(db, names)
            for name in names:
                pages.pop(name, None)
    return pages


@hsettings(max_examples=25, deadline=None)
@given(ops=st.lists(st.tuples(st.sampled_from(["add", "remove"]), st.lists(st.integers(0, 39), max_size=12),
                              st.integers(0, 2**32 - 1)), min_size=1, max_size=8))
def test_any_sequence_of_adds_and_removes_matches_the_reference(tmp_path_factory, ops):
    db = open_db(tmp_path_factory.mktemp("ops") / "index.db")
    pages = replay(db, ops, lambda rng, n: make_signatures(rng, n, 3, 0.6), add)
    assert within_components(stored_clusters(db), pages)
    check_invariants(db)


def test_candidate_pairs_cover_every_shared_key(db):
    rng = np.random.default_rng(8)
    values = make_signatures(rng, 150, 20, 0.6)
    ids = [f"p{i:03d}" for i in range(150)]
    add(db, ids, values)
    pairs = {tuple(p) for chunk in lsh.iter_candidate_pairs(db, chunk_rows=50) for p in chunk.tolist()}
    keys = band_keys(values, SETTINGS)
    expected = {(i + 1, j + 1) for j in range(150) for i in range(j) if (keys[i] == keys[j]).any()}
    assert pairs == expected
    verified = {(a, b) for x, y, _ in lsh.iter_verified_pairs(db) for a, b in zip(x.tolist(), y.tolist())}
    assert verified == {(a, b) for a, b in expected
                        if estimate_similarity(values[a - 1], values[b - 1]) >= SETTINGS.threshold}


SAMPLED = ShingleSettings(permutations=32, bands=8, rows=4, threshold=0.7, verify="sample", sample=24)


def make_sets(rng: np.random.Generator, count: int, families: int, noise: float) -> list[np.ndarray]:
    """Shingle sets of 40 hashes around ``families`` bases, each hash replaced with probability up to ``noise``."""
    bases = rng.integers(0, 2**32, size=(families, 40), dtype=np.uint64)
    sets = bases[rng.integers(0, families, size=count)].copy()
    replace = rng.random(sets.shape) < rng.uniform(0, noise, size=(count, 1))
    sets[replace] = rng.integers(0, 2**32, size=int(replace.sum()), dtype=np.uint64)
    return list(sets)


def add_sets(db, ids: list[str], sets: list[np.ndarray]) -> None:
    shingles = Shingles(np.concatenate(sets), np.arange(len(sets) + 1) * 40)
    signatures = sign_shingles(shingles, SAMPLED)
    lsh.add_signatures(db, [IndexedPage(i, f"http://example.org/{i}") for i in ids], signatures, shingles=shingles)


def reference_sample_clusters(pages: dict[str, np.ndarray]) -> set[frozenset]:
    """Components of (shares a band key) and (bottom-k sample similarity, the settings' measure, >= threshold),
    all pairs."""
    ids = sorted(pages)
    if not ids:
        return set()
    shingles = Shingles(np.concatenate([pages[i] for i in ids]), np.arange(len(ids) + 1) * 40)
    signed = sign_shingles(shingles, SAMPLED)
    keys = band_keys(signed.values, SAMPLED)
    anchors = [set(signed.anchors_of(i).tolist()) for i in range(len(ids))]
    sets = [comparable_set(pages[i], SAMPLED) for i in ids]
    # one site (example.org): containment >= threshold and Jaccard >= same_site_jaccard, or Jaccard >= resemblance
    # when the smaller set has resemblance_min_shingles
    def passes(i, j):
        jaccard = set_jaccard(sets[i], sets[j], SAMPLED)
        return (set_similarity(sets[i], sets[j], SAMPLED) >= SAMPLED.threshold
                and jaccard >= SAMPLED.same_site_jaccard) or \
            (jaccard >= SAMPLED.resemblance and min(len(sets[i]), len(sets[j])) >= SAMPLED.resemblance_min_shingles)
    return components(ids, lambda i, j: ((keys[i] == keys[j]).any() or bool(anchors[i] & anchors[j]))
                      and passes(i, j))


@hsettings(max_examples=20, deadline=None)
@given(ops=st.lists(st.tuples(st.sampled_from(["add", "remove"]), st.lists(st.integers(0, 29), max_size=10),
                              st.integers(0, 2**32 - 1)), min_size=1, max_size=6))
def test_sample_verification_matches_the_reference(tmp_path_factory, ops):
    db = open_db(tmp_path_factory.mktemp("sample") / "index.db")
    pages = replay(db, ops, lambda rng, n: make_sets(rng, n, 2, 0.4), add_sets)
    reference = reference_sample_clusters(pages)
    assert all(any(c <= r for r in reference) for c in stored_clusters(db))
    stored = lsh.stored_sets(db, [m.doc for _, ms in lsh.iter_clusters(db) for m in ms], SAMPLED)
    assert all(len(s) <= SAMPLED.sample and (np.diff(s.astype(np.int64)) > 0).all() for s in stored.values())


@pytest.mark.parametrize("order", [("r", "a", "cut"), ("r", "cut", "a"), ("cut", "r", "a"), ("a", "r", "cut")])
@pytest.mark.parametrize("batched", [False, True])
def test_a_cut_copy_inside_two_articles_does_not_chain_them(tmp_path, order, batched):
    """Two articles of one site that share a passage (a reminder and an announcement quoting it) and a cut copy of
    the reminder contained in both: the copy joins its own article and the two articles stay apart, whenever the
    reminder comes before its copy or the copy before both (a copy indexed after the announcement but before its
    own article joins the announcement: the only group it has then)."""
    rng = np.random.default_rng(9)
    shared, own_r, own_a = (rng.integers(0, 2**32, size=n, dtype=np.uint64) for n in (20, 20, 25))
    texts = {"r": np.concatenate((shared, own_r)), "a": np.concatenate((shared, own_a))}
    texts["cut"] = texts["r"][:22]  # contained in r (1.0) and in a (20 of 22); r in a: 0.5
    chars = {"r": 400, "a": 550, "cut": 320}
    db = open_db(tmp_path / "index.db")
    settings = replace(SAMPLED, sample=64)

    def index(names):
        sets = [texts[n] for n in names]
        shingles = Shingles(np.concatenate(sets), np.concatenate(([0], np.cumsum([len(x) for x in sets]))))
        lsh.add_signatures(db, [IndexedPage(n, f"http://example.org/{n}", 0, chars[n]) for n in names],
                           sign_shingles(shingles, settings), shingles=shingles)

    for part in ([list(order)] if batched else [[n] for n in order]):
        index(part)
    assert stored_clusters(db) == {frozenset({"r", "cut"})}
    check_invariants(db, bands=settings.bands, anchors=True)


def test_recent_keys_merge_into_the_band_index_and_lookups_read_both(tmp_path, monkeypatch):
    monkeypatch.setattr(lsh, "RECENT_PAGES", 7)  # a merge every 7 pages or more
    db = open_db(tmp_path / "index.db")
    values = make_signatures(np.random.default_rng(5), 40, 4, 0.5)
    names = [f"p{i:02d}" for i in range(40)]
    for start in range(0, 40, 5):
        add(db, names[start:start + 5], values[start:start + 5])
    lsh.remove_pages(db, names[3:9])
    add(db, names[3:6], values[3:6])  # back again, into the recent runs
    live = {n: v for i, (n, v) in enumerate(zip(names, values)) if not 6 <= i < 9}
    assert within_components(stored_clusters(db), live)
    check_invariants(db)
    conn = db.conn
    recent = sorted_set(lsh._recent(db).rows()[1])
    assert conn.execute("SELECT count(*) FROM lsh_blocks").fetchone()[0] and 0 < len(recent) < 7
    doc, signature = conn.execute("SELECT doc, signature FROM lsh_signatures WHERE doc = ?",
                                  [int(recent[0])]).fetchone()
    assert doc in {m.doc for m, _ in lsh.query(db, np.frombuffer(signature, dtype=np.uint32), SETTINGS)}
    pairs = np.concatenate(list(lsh.iter_candidate_pairs(db)))
    keys = band_keys(np.stack(list(live.values())), SETTINGS)
    assert len({tuple(p) for p in pairs.tolist()}) == sum(
        (keys[i] == keys[j]).any() for j in range(len(live)) for i in range(j))


def _index_dump(db) -> dict:
    """Everything the index stores about pages, clusters and candidates (not how its key rows are laid out)."""
    tables = {t: db.conn.execute(f"SELECT * FROM {t} ORDER BY 1, 2").fetchall()
              for t in ("lsh_signatures", "lsh_links", "dup_clusters")}
    pairs = np.concatenate(list(lsh.iter_candidate_pairs(db)))
    rows = lsh._bucket_rows(db, sorted_set(np.concatenate([lsh._recent(db).rows()[0], *[
        np.frombuffer(k, dtype=np.int64) for (k,) in db.conn.execute("SELECT keys FROM lsh_blocks")]])), cap=10**6)
    return {**tables, "pairs": sorted(map(tuple, pairs.tolist())), "rows": rows.tolist(),
            "clusters": stored_clusters(db)}


@pytest.mark.parametrize("compiled", [True, False])
def test_the_recent_runs_hold_at_most_recent_rows_and_index_as_unbounded_runs_do(tmp_path, monkeypatch, compiled):
    """With RECENT_ROWS, the recent runs (the key rows held in memory) stay under it after every batch, in memory and
    in lsh_runs, however many pages come; pages, clusters, links, candidates and buckets are those of runs that
    only RECENT_PAGES bounds (here never reached), through changed and removed pages; and an index whose runs
    outgrew the bound (written before it) is flushed at its next batch and goes on as if bounded from the start.
    A flush writes the rows key range by key range, merged from the tiers: the segments hold every row once, in
    order. The same with the numpy merges (whose tiers hold a re-indexed page's rows out of doc order within a key)."""
    if not compiled:
        monkeypatch.setattr(lsh, "_kernels", lambda: None)
    monkeypatch.setattr(lsh, "RECENT_PAGES", 10**9)
    monkeypatch.setattr(lsh, "SEGMENT_SLICE_ROWS", 16)  # a flush (and a merge) writes its rows in many key ranges
    bound = 120  # (8 bands and a page key: 9 rows a page, a flush every 14 pages or so)
    values = make_signatures(np.random.default_rng(21), 260, 12, 0.5)
    names = [f"p{i:03d}" for i in range(260)]
    batches = [(start, min(start + size, 260)) for start, size in zip(range(0, 260, 9), [9] * 29)]
    bounded, unbounded, older = (open_db(tmp_path / f"{n}.db") for n in ("bounded", "unbounded", "older"))
    for n, (start, end) in enumerate(batches):
        for db, rows in ((bounded, bound), (unbounded, 1 << 40), (older, 1 << 40 if n < 15 else bound)):
            monkeypatch.setattr(lsh, "RECENT_ROWS", rows)
            add(db, names[start:end], values[start:end])
            if n % 7 == 3:  # a page changed (re-indexed) and a page removed: rows leave the runs and the segments
                add(db, names[start:start + 1], values[end - 1:end])
                lsh.remove_pages(db, names[start + 1:start + 2])
            held = lsh._recent(db)
            stored = sum(len(k) // 8 for (k,) in db.conn.execute("SELECT keys FROM lsh_runs"))
            assert held.size == stored == len(held.rows()[0])
            if rows == bound:
                assert held.size < bound  # a batch that fills them flushes them
                assert sum(k.nbytes + d.nbytes for k, d in held.tiers) < 16 * bound
                assert len(held.filter.words) * 64 == lsh.RECENT_FILTER_KEYS * lsh.RECENT_FILTER_BITS  # never rebuilt
    monkeypatch.setattr(lsh, "RECENT_ROWS", bound)
    assert not lsh._segments(unbounded).items and len(lsh._segments(bounded).items) > 2
    expected = _index_dump(unbounded)
    assert expected["clusters"] and _index_dump(bounded) == expected and _index_dump(older) == expected
    check_invariants(bounded)
    for s in lsh._segments(bounded).items:
        keys, docs = lsh._read_blocks(bounded, s, 0, len(s.fences) - 1)
        assert len(keys) == s.rows and np.array_equal(np.lexsort((docs, keys)), np.arange(len(keys)))
        assert not ((keys[1:] == keys[:-1]) & (docs[1:] == docs[:-1])).any()


@given(st.lists(st.integers(0, 60), min_size=1, max_size=40), st.sampled_from([1 << k for k in range(7)]))
@hsettings(max_examples=60, deadline=None)
def test_select_in_pads_its_lists_to_few_statements_with_the_same_rows(tmp_path_factory, ids, chunk):
    """Whatever the list and the bound on a statement's list (IN_LIST_IDS), the rows of one statement over the whole
    list, in its order, from statements whose lists are powers of two no longer than the bound."""
    store = open_db(tmp_path_factory.mktemp("sel") / "t.db")
    store.conn.execute("CREATE TABLE links (doc INTEGER, other INTEGER, PRIMARY KEY (doc, other)) WITHOUT ROWID")
    store.conn.executemany("INSERT INTO links VALUES (?, ?)", [(d, o) for d in range(0, 50, 3) for o in (1, 2, d)
                                                                if o <= d])
    issued = []
    store.conn.set_trace_callback(issued.append)
    sql = "SELECT doc, other FROM links WHERE doc IN ({ids})"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(lsh, "IN_LIST_IDS", chunk)
        rows = lsh._select_in(store, sql, ids)
    store.conn.set_trace_callback(None)
    assert rows == store.conn.execute(sql.format(ids=",".join("?" * len(ids))), ids).fetchall()
    lengths = [s.partition(" IN (")[2].count(",") + 1 for s in issued]  # (the trace shows the values bound)
    assert all(n in (1 << k for k in range(7)) and n <= chunk for n in lengths)


@hsettings(max_examples=30, deadline=None)
@given(batches=st.lists(st.integers(1, 9), min_size=1, max_size=8), recent=st.integers(1, 12),
       block=st.sampled_from([1, 2, 8, 256]), fanout=st.integers(2, 4), memory=st.sampled_from([0, 3000, 1 << 30]),
       seed=st.integers(0, 2**32 - 1), recent_rows=st.sampled_from([1, 20, 50, 1 << 30]))
def test_the_stored_keys_give_the_candidates_of_brute_force_banding(tmp_path_factory, batches, recent, block, fanout,
                                                                    memory, seed, recent_rows):
    """Whatever the batches, flushes of the recent runs (RECENT_PAGES, RECENT_ROWS), blocks (SEGMENT_BLOCK_ROWS),
    merges of segments (SEGMENT_FANOUT) and filter sizes (FILTER_MEMORY_BYTES 0: the smallest filters; 3000: filters thinned as the index grows), the index's buckets
    (whole, and capped), the candidates it finds on insert and all its candidate pairs are those of banding every
    page by brute force."""
    import pytest as _pytest

    with _pytest.MonkeyPatch.context() as patch:
        patch.setattr(lsh, "RECENT_PAGES", recent)
        patch.setattr(lsh, "RECENT_ROWS", recent_rows)
        patch.setattr(lsh, "SEGMENT_BLOCK_ROWS", block)
        patch.setattr(lsh, "SEGMENT_FANOUT", fanout)
        patch.setattr(lsh, "FILTER_MEMORY_BYTES", memory)
        patch.setattr(lsh, "FILTER_MIN_BITS", 0 if memory == 0 else lsh.FILTER_MIN_BITS)
        db = open_db(tmp_path_factory.mktemp("band") / "index.db")
        rng = np.random.default_rng(seed)
        values = make_signatures(rng, sum(batches), 4, 0.6)
        keys = band_keys(values, SETTINGS)
        found: set[tuple[int, int]] = set()
        real = lsh._candidate_pairs

        def spy(db_, batch_keys, batch_docs, *rest):
            pairs = real(db_, batch_keys, batch_docs, *rest)
            found.update((int(a), int(b)) for a, b in pairs.tolist())
            return pairs

        patch.setattr(lsh, "_candidate_pairs", spy)
        start = 0
        for size in batches:
            add(db, [f"p{i:03d}" for i in range(start, start + size)], values[start:start + size])
            start += size
        n = len(values)
        shared = {(j + 1, i + 1) for j in range(n) for i in range(j) if (keys[i] == keys[j]).any()}
        assert found == shared  # (new page, earlier page) for every pair sharing a key, nothing else
        probe = np.unique(np.concatenate((keys.ravel(), rng.integers(0, 2**47, size=20))))
        rows = lsh._bucket_rows(db, probe, cap=10**6)
        expected = sorted((int(k), d + 1) for d in range(n) for k in np.unique(keys[d]).tolist())
        assert sorted(map(tuple, rows.tolist())) == expected
        heads = {}
        for k, d in expected:
            heads.setdefault(k, []).append(d)
        capped = lsh._bucket_rows(db, probe, cap=2)
        assert sorted(map(tuple, capped.tolist())) == [(k, d) for k, ds in sorted(heads.items()) for d in ds[:2]]
        pairs = {tuple(p) for chunk in lsh.iter_candidate_pairs(db, chunk_rows=7) for p in chunk.tolist()}
        assert pairs == {(b, a) for a, b in shared}


def test_four_segment_blocks_fill_a_database_page(db):
    """A block of SEGMENT_BLOCK_ROWS rows is a cell small enough that four fill a 16 KiB page of lsh_blocks, whatever
    its row id (segment << 32 | block: a varint of 5 to 9 bytes); blocks of 256 rows took a page each three."""
    lsh.prepare(db)
    conn = db.conn
    assert conn.execute("PRAGMA page_size").fetchone()[0] == 16384
    rng = np.random.default_rng(5)
    blocks = 400
    for segment in (1, 1 << 20, 1 << 30):
        keys = np.sort(rng.integers(0, 2**47, size=blocks * lsh.SEGMENT_BLOCK_ROWS))
        before = conn.execute("PRAGMA page_count").fetchone()[0]
        conn.execute("BEGIN")
        writer = lsh._SegmentWriter(db, segment, 0, len(keys), 10.0)
        writer.write(keys, np.arange(len(keys), dtype=np.int64))
        writer._blocks(final=True)
        conn.execute("COMMIT")
        pages = conn.execute("PRAGMA page_count").fetchone()[0] - before
        assert writer.blocks == blocks and blocks / 4 <= pages <= blocks / 4 + 3, (segment, pages)  # (+ interior pages)


def test_segments_of_256_row_blocks_give_whole_capped_buckets(db, monkeypatch):
    """An index whose older segments have blocks of 256 rows (as written before SEGMENT_BLOCK_ROWS was 254) and newer
    ones of 254: each key's first BUCKET_CAP docs, wherever a block boundary cuts its rows, and all of them uncapped,
    are those of the rows written."""
    lsh.prepare(db)
    rng = np.random.default_rng(8)
    written = []
    for segment, block in ((1, 256), (2, 254), (3, 256)):
        monkeypatch.setattr(lsh, "SEGMENT_BLOCK_ROWS", block)
        keys = np.concatenate([rng.integers(0, 1000, size=3000), np.repeat([500, 501, 502], [300, 260, 700]),
                               rng.integers(1000, 2**40, size=2000)])
        docs = segment * 100_000 + rng.permutation(len(keys))
        order = np.lexsort((docs, keys))
        lsh._add_segment(db, keys[order], docs[order])
        written += list(zip(keys[order].tolist(), docs[order].tolist()))
    monkeypatch.setattr(lsh, "SEGMENT_BLOCK_ROWS", 254)
    probe = sorted_set(np.array([k for k, _ in written], dtype=np.int64))
    heads: dict[int, list[int]] = {}
    for k, d in sorted(set(written)):
        heads.setdefault(k, []).append(d)
    capped = lsh._bucket_rows(db, probe, cap=lsh.BUCKET_CAP)
    assert capped.tolist() == [[k, d] for k, ds in sorted(heads.items()) for d in ds[:lsh.BUCKET_CAP]]
    assert lsh._bucket_rows(db, probe, cap=10**6).tolist() == [[k, d] for k, ds in sorted(heads.items()) for d in ds]


def test_filters_never_miss_a_key_and_grow_in_parts(monkeypatch):
    monkeypatch.setattr(lsh, "FILTER_FIRST_KEYS", 1 << 10)
    rng = np.random.default_rng(3)
    filters = lsh._Filters(0, [])
    stored = rng.integers(0, 2**47, size=5000)
    for chunk in np.array_split(stored, 7):
        filters.add(chunk)
    assert [p[0] for p in filters.parts] == [1024, 1024, 2048, 4096]  # each as large as all before it
    assert sum(p[1] for p in filters.parts) == 5000
    assert filters.may_hold(stored).all()
    absent = rng.integers(0, 2**47, size=20000)
    assert filters.may_hold(absent).mean() < 0.1  # at most a few percent a part (2.2% when full)


def test_a_segment_filter_of_any_size_never_misses_a_key_and_is_made_the_same_in_chunks(monkeypatch):
    rng = np.random.default_rng(8)
    stored = rng.integers(0, 2**47, size=30_000)
    size = lsh._filter_size(len(stored), lsh.SEGMENT_FILTER_BITS)
    assert size % 64 == 0 and size == len(stored) * lsh.SEGMENT_FILTER_BITS // 8 // 64 * 64  # not a power of two
    whole = np.zeros(size, np.uint8)
    lsh._bloom_add(whole, stored)
    monkeypatch.setattr(lsh, "BLOOM_CHUNK_KEYS", 1000)
    chunked = np.zeros(size, np.uint8)
    for part in np.array_split(stored, 3):
        lsh._bloom_add(chunked, part)
    assert np.array_equal(whole, chunked)
    assert lsh._bloom_has(whole, stored).all()
    absent = rng.integers(0, 2**47, size=50_000)
    assert lsh._bloom_has(whole, absent).mean() < 0.02  # 0.9% for a plain filter of 10 bits a key, 5 hashes
    at = lsh._bloom_positions(np.sort(stored), size * 8)
    assert (np.diff(at[0] // lsh.BLOOM_BLOCK_BITS) >= 0).all()  # keys in order walk the blocks in order
    assert (at // lsh.BLOOM_BLOCK_BITS == at[0] // lsh.BLOOM_BLOCK_BITS).all()  # a key's bits in one block
    assert lsh._filter_size(len(stored), 0.5) == 1856 and lsh._filter_size(len(stored), 0) == 1024  # whole blocks, 1 KiB
    monkeypatch.setattr(lsh, "FILTER_MEMORY_BYTES", 3000)
    assert lsh._fair_bits(1000) == lsh.SEGMENT_FILTER_BITS and lsh._fair_bits(4000) == 6.0
    assert lsh._fair_bits(10**6) == lsh.FILTER_MIN_BITS  # never thinner than that


def test_the_filters_bits_go_where_they_save_the_most_false_answers(monkeypatch):
    """Segments' shares of the filters' memory (``_filter_targets``): together what the even share gives (10 bits a
    row, or the budget), each segment's false rate in proportion to its rows (bits differ by ln(ratio) / ln(2)**2
    between two sizes), so the rates summed over the segments are fewer than with an even share; one segment alone
    gets the even share."""
    rows = [92_800_000] * 3 + [23_200_000] * 2 + [5_800_000, 1_450_000]
    for budget in (1 << 40, 192 * 2**20):
        monkeypatch.setattr(lsh, "FILTER_MEMORY_BYTES", budget)
        shares = lsh._filter_targets(rows)
        even = lsh._fair_bits(sum(rows))
        assert sum(n * b for n, b in zip(rows, shares)) == pytest.approx(even * sum(rows))
        assert shares[0] < even < shares[-1] <= lsh.SEGMENT_FILTER_MAX_BITS
        assert shares[3] - shares[0] == pytest.approx(math.log(4) / math.log(2) ** 2)
        rate = [math.exp(-b * math.log(2) ** 2) for b in shares]  # (a Bloom filter's, with the best number of hashes)
        assert rate[3] / rate[0] == pytest.approx(rows[3] / rows[0])
        assert sum(rate) < len(rows) * math.exp(-even * math.log(2) ** 2)
        assert lsh._filter_targets([5000]) == [lsh._fair_bits(5000)]
    monkeypatch.setattr(lsh, "FILTER_MEMORY_BYTES", 3000)
    assert min(lsh._filter_targets([10**6, 10**4])) == lsh.FILTER_MIN_BITS  # never thinner than that


def _filter_state(db) -> list[tuple[int, int, bytes]]:
    return db.conn.execute("SELECT segment, rows, filter FROM lsh_segments ORDER BY segment").fetchall()


def test_the_filters_share_their_memory_as_the_index_grows_and_none_is_left_unable_to_answer(tmp_path, monkeypatch):
    """A budget that the index outgrows: after every batch the filters take at most FILTER_MEMORY_BYTES, every segment
    has at least half the fair share of bits a row (the cap taken in turn left the newest segments 1 KiB filters),
    thinned filters hold the bytes of a filter of that size made from the segment's keys, memory holds what the
    database holds, and the index finds the candidates an index with room for every filter finds."""
    monkeypatch.setattr(lsh, "RECENT_PAGES", 200)
    monkeypatch.setattr(lsh, "SEGMENT_FANOUT", 3)
    budget = 24 * 1024
    values = make_signatures(np.random.default_rng(12), 4000, 400, 0.5)
    roomy, tight = open_db(tmp_path / "roomy.db"), open_db(tmp_path / "tight.db")
    thinned = False
    for start in range(0, 4000, 250):
        names = [f"p{i:04d}" for i in range(start, start + 250)]
        add(roomy, names, values[start:start + 250])
        monkeypatch.setattr(lsh, "FILTER_MEMORY_BYTES", budget)
        add(tight, names, values[start:start + 250])
        monkeypatch.undo()
        monkeypatch.setattr(lsh, "RECENT_PAGES", 200)
        monkeypatch.setattr(lsh, "SEGMENT_FANOUT", 3)
        held = lsh._segments(tight)
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(lsh, "FILTER_MEMORY_BYTES", budget)
            shares = lsh._filter_targets([s.rows for s in held.items])
        assert held.filter_bytes() <= budget
        for s, share in zip(held.items, shares):
            assert len(s.bits) * 8 / s.rows >= share / 2, (start, s.segment, len(s.bits), s.rows)
            assert np.array_equal(lsh._rebuilt_filter(tight, s, len(s.bits)), s.bits)
            thinned |= len(s.bits) < lsh._filter_size(s.rows, lsh.SEGMENT_FILTER_BITS)
        assert [(s.segment, s.rows, s.bits.tobytes()) for s in held.items] == _filter_state(tight)
    assert thinned  # (the budget was outgrown: 32,000 key rows at 10 bits would take 40 KB)
    pairs = [np.concatenate(list(lsh.iter_candidate_pairs(db))) for db in (roomy, tight)]
    assert np.array_equal(*pairs)
    assert lsh.stats(roomy) == lsh.stats(tight)
    assert list(lsh.iter_clusters(roomy)).__repr__() == list(lsh.iter_clusters(tight)).__repr__()


def test_an_index_whose_newest_segments_got_1_kib_filters_gets_them_rebuilt(tmp_path, monkeypatch):
    """An index written while the cap went to the segments in turn (here: no budget and no floor, every filter 1 KiB)
    gets filters of the fair share back at its next flush, each the filter of its keys at that size."""
    monkeypatch.setattr(lsh, "RECENT_PAGES", 1000)
    values = make_signatures(np.random.default_rng(13), 3000, 300, 0.5)
    db = open_db(tmp_path / "index.db")
    monkeypatch.setattr(lsh, "FILTER_MEMORY_BYTES", 0)
    monkeypatch.setattr(lsh, "FILTER_MIN_BITS", 0)
    for start in (0, 1000):
        add(db, [f"p{i:04d}" for i in range(start, start + 1000)], values[start:start + 1000])
    assert [len(f) for _, _, f in _filter_state(db)] == [1024, 1024]  # 9,000 rows each (8 bands, a page key)
    monkeypatch.undo()
    monkeypatch.setattr(lsh, "RECENT_PAGES", 1000)
    add(db, [f"p{i:04d}" for i in range(2000, 3000)], values[2000:])
    held = lsh._segments(db)
    assert len(held.items) == 3 and [s.rows for s in held.items] == [9000] * 3
    for s in held.items:
        assert len(s.bits) * 8 / s.rows >= lsh.SEGMENT_FILTER_BITS / lsh.FILTER_HEADROOM - 0.1
        assert np.array_equal(lsh._rebuilt_filter(db, s, len(s.bits)), s.bits)
    assert [(s.segment, s.rows, s.bits.tobytes()) for s in held.items] == _filter_state(db)


def test_a_rolled_back_batch_leaves_no_trace_in_memory_or_on_disk(tmp_path, monkeypatch):
    """The recent runs and filters held in memory follow the database: after a rollback (a failed batch, or a
    savepoint of a caller's transaction) they are read again, and the index equals one that never saw the batch."""
    from store.db import transaction

    monkeypatch.setattr(lsh, "RECENT_PAGES", 6)
    values = make_signatures(np.random.default_rng(4), 30, 3, 0.4)
    names = [f"p{i:02d}" for i in range(30)]
    clean, failed = open_db(tmp_path / "clean.db"), open_db(tmp_path / "failed.db")
    for start in range(0, 30, 4):
        add(clean, names[start:start + 4], values[start:start + 4])
        if start in (8, 20):  # 20: the batch that fails ends with a new segment and a merge of segments
            with pytest.raises(RuntimeError), transaction(failed):
                add(failed, ["x1", "x2"], values[start:start + 2])
                add(failed, ["x3", "x4"], values[start + 2:start + 4])
                raise RuntimeError("the caller's transaction fails")
        add(failed, names[start:start + 4], values[start:start + 4])
    assert not lsh.query(failed, values[0], SETTINGS) or all(
        m.page_id.startswith("p") for m, _ in lsh.query(failed, values[0], SETTINGS))
    dump = lambda db: {t: db.conn.execute(f"SELECT * FROM {t} ORDER BY 1, 2").fetchall()  # noqa: E731
                       for t in ("lsh_signatures", "lsh_segments", "lsh_blocks", "lsh_runs", "lsh_links",
                                 "dup_clusters")}
    state = lambda db: dict(db.conn.execute("SELECT name, value FROM lsh_state WHERE name != 'generation'"))  # noqa
    assert dump(failed) == dump(clean) and state(failed) == state(clean)


def _index_in_child(path, batches, values, kill_at: int | None) -> int:
    """Index ``batches`` (skipping those already stored) in a forked child that SIGKILLs itself at the
    ``kill_at``-th write of the key storage (a run, a segment's blocks, a whole segment, a merge of segments); its
    wait status."""
    import os
    import signal

    pid = os.fork()
    if pid == 0:
        try:
            count = [0]
            for owner, name in ((lsh, "_append_run"), (lsh._SegmentWriter, "close"), (lsh, "_merge_segments"),
                                (lsh._SegmentWriter, "_blocks")):
                real = getattr(owner, name)

                def wrapped(*args, _real=real, **kwargs):
                    result = _real(*args, **kwargs)
                    count[0] += 1
                    if count[0] == kill_at:
                        os.kill(os.getpid(), signal.SIGKILL)
                    return result

                setattr(owner, name, wrapped)
            db = open_db(path)
            done = db.conn.execute("SELECT count(*) FROM lsh_signatures").fetchone()[0] if lsh.held(db) else 0
            start = 0
            for names in batches:
                if start >= done:
                    add(db, names, values[start:start + len(names)])
                start += len(names)
            os._exit(0)
        except BaseException:
            os._exit(3)
    return os.waitpid(pid, 0)[1]


def test_killed_while_writing_keys_and_resumed_equals_an_uninterrupted_index(tmp_path, monkeypatch):
    import os

    monkeypatch.setattr(lsh, "RECENT_PAGES", 5)
    monkeypatch.setattr(lsh, "SEGMENT_FANOUT", 2)  # merges after the 2nd and 4th segments, a second level after the 4th
    monkeypatch.setattr(lsh, "SEGMENT_BLOCK_ROWS", 8)
    monkeypatch.setattr(lsh, "FILTER_MEMORY_BYTES", 1)  # past the filters' budget: the top level holds one segment
    values = make_signatures(np.random.default_rng(6), 34, 4, 0.5)
    names = [f"p{i:02d}" for i in range(34)]
    batches = [names[i:i + 3] for i in range(0, 34, 3)]  # merges after 6, 12, ... 30 pages; 4 left in runs
    assert _index_in_child(tmp_path / "whole.db", batches, values, None) == 0
    dump = lambda path: {t: open_db(path).conn.execute(f"SELECT * FROM {t} ORDER BY 1, 2").fetchall()  # noqa: E731
                         for t in ("lsh_signatures", "lsh_segments", "lsh_blocks", "lsh_runs", "lsh_links",
                                   "dup_clusters")}
    expected = dump(tmp_path / "whole.db")
    assert expected["lsh_blocks"] and expected["lsh_runs"] and len(expected["lsh_segments"]) == 2
    # 5 flushes: a merge into level 1 after the 2nd; after the 4th, the two of level 0 and the top (level 1) into
    # one segment of level 2 (the top level holds one segment)
    assert sorted(row[1] for row in expected["lsh_segments"]) == [0, 2]
    for kill_at in range(1, 29):  # all 28 writes: 12 runs, 7 segments made (blocks, then the row), 2 merges
        path = tmp_path / f"killed{kill_at}.db"
        status = _index_in_child(path, batches, values, kill_at)
        assert os.WIFSIGNALED(status)
        assert _index_in_child(path, batches, values, None) == 0
        got = dump(path)
        got["lsh_signatures"] = [r[:4] + r[5:] for r in got["lsh_signatures"]]  # first_seen: the generation
        assert got == {**expected, "lsh_signatures": [r[:4] + r[5:] for r in expected["lsh_signatures"]]}, kill_at


@pytest.mark.parametrize("in_order", [True, False])
def test_a_filter_set_as_packed_slices_has_the_bits_set_position_by_position(monkeypatch, in_order):
    """Keys in order (a segment's) are set in one packed slice per chunk, keys spread over the filter one position at
    a time: the two ways give the same bytes, whatever the chunk size and filter size."""
    rng = np.random.default_rng(9)
    keys = rng.integers(0, 2**47, size=20_000)
    keys = np.sort(keys) if in_order else keys
    for size in (lsh._filter_size(len(keys), lsh.SEGMENT_FILTER_BITS), 1 << 16, 1024):
        monkeypatch.setattr(lsh, "BLOOM_CHUNK_KEYS", 3_000)
        dense, sparse = np.zeros(size, np.uint8), np.zeros(size, np.uint8)
        monkeypatch.setattr(lsh, "BLOOM_DENSE_SPAN", 1 << 40)
        lsh._bloom_add(dense, keys)
        monkeypatch.setattr(lsh, "BLOOM_DENSE_SPAN", 0)
        lsh._bloom_add(sparse, keys)
        assert np.array_equal(dense, sparse)
        assert lsh._bloom_has(dense, keys).all()


@hsettings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.tuples(st.integers(0, 6), st.integers(0, 30)), max_size=12), max_size=5))
def test_rows_are_ordered_by_key_then_doc_as_lexsort_orders_them(runs):
    """``_ordered_rows`` gives lexsort's order (and rows) for any rows: runs sorted by (key, doc) with docs rising
    from run to run (its fast path), runs whose docs do not (a re-indexed page's old doc number: the fallback),
    repeated rows."""
    parts = [sorted(run) for run in runs]
    rows = [row for run in parts for row in run]
    keys = np.array([k for k, _ in rows], dtype=np.int64)
    docs = np.array([d for _, d in rows], dtype=np.int64)
    sorted_keys, sorted_docs, order = lsh._ordered_rows(keys, docs)
    assert np.array_equal(keys[order], keys[np.lexsort((docs, keys))])
    assert np.array_equal(docs[order], docs[np.lexsort((docs, keys))])
    assert np.array_equal(sorted_keys, keys[order]) and np.array_equal(sorted_docs, docs[order])


@pytest.mark.skipif(native.pairs is None, reason="templater._pairs is not built")
@given(st.lists(st.tuples(st.integers(0, 80), st.integers(0, 80), st.integers(0, 80)), min_size=1, max_size=12),
       st.sampled_from(["sample", "exact"]), st.sampled_from(["containment", "jaccard"]), st.integers(0, 30),
       st.sampled_from([32, 64]), st.integers(0, 2**32 - 1))
@hsettings(max_examples=80, deadline=None)
def test_compiled_pair_measures_equal_the_python_measures(shapes, verify, measure, min_hashes, bits, seed):
    """templater._pairs gives set_similarity and set_jaccard exactly, for samples cut at either end (small hash values
    shared), exact sets, empty sets, 32- and 64-bit hashes."""
    settings = ShingleSettings(verify=verify, measure=measure, sample=24, sample_min_hashes=min_hashes, hash_bits=bits)
    rng = np.random.default_rng(seed)
    dtype = np.uint32 if bits == 32 else np.uint64
    top = 2**32 if bits == 32 else 2**63
    docs: dict[int, np.ndarray] = {}
    pairs = []
    for i, (shared, only_a, only_b) in enumerate(shapes):
        common = rng.integers(0, top if seed % 2 else 200, size=shared, dtype=np.uint64)
        docs[2 * i] = np.concatenate((common, rng.integers(0, top, size=only_a, dtype=np.uint64))).astype(dtype)
        docs[2 * i + 1] = np.concatenate((common, rng.integers(0, top, size=only_b, dtype=np.uint64))).astype(dtype)
        pairs += [(2 * i, 2 * i + 1), (2 * i + 1, 2 * i), (2 * i, 2 * i)]
    source = lsh._SignatureSource(None, settings, np.empty(0, np.int64), np.empty((0, settings.permutations)))
    source.sorted = {d: comparable_set(h, settings) for d, h in docs.items()}
    expected = {}
    for jaccard, pair_by_pair in ((False, set_similarity), (True, set_jaccard)):
        expected[jaccard] = [pair_by_pair(source.sorted[x], source.sorted[y], settings) for x, y in pairs]
        assert [v.tolist() for v in source._compiled_measures(pairs, jaccard=jaccard)] == [expected[jaccard]]
    # the Jaccard measured on the sets copied for the similarity: the same values as on their own
    assert [v.tolist() for v in source._compiled_measures(pairs, jaccard=False, jaccard_too=True)] == \
        [expected[False], expected[True]]
    # both from one merge of each pair (flag 2): the containment values, then the Jaccard values
    if measure == "containment":
        docs = sorted(source.sorted)
        hashes = np.concatenate([source.sorted[d] for d in docs]).astype(dtype)
        offsets = np.r_[0, np.cumsum([len(source.sorted[d]) for d in docs])].astype(np.int64)
        a, b = (np.array([docs.index(p[side]) for p in pairs], dtype=np.int64) for side in (0, 1))
        both = native.pairs.pair_measures(hashes, offsets, a, b, hashes.itemsize, settings.sample if verify == "sample"
                                          else 0, min_hashes, 2)
        assert np.frombuffer(both, dtype=np.float64).tolist() == expected[False] + expected[True]


@pytest.mark.skipif(lsh._kernels() is None, reason="templater._pairs is not built")
@given(st.integers(1, 64), st.integers(0, 3_000), st.integers(0, 2**32 - 1), st.booleans())
@hsettings(max_examples=60, deadline=None)
def test_compiled_filters_and_merge_equal_the_numpy_definitions(blocks, count, seed, spread):
    """The compiled kernels set and probe the very bits of store.lsh's numpy filters (blocked Bloom filters of every
    size, the recent runs' word filter) and merge sorted (key, doc) runs into lexsort's order, repeated rows and
    empty runs included."""
    rng = np.random.default_rng(seed)
    top = 1 << 48 if spread else 1 << 20  # (page keys above 2**47; or few distinct keys, many repeats)
    keys = rng.integers(0, top, size=count)
    probe = np.concatenate((keys[: count // 2], rng.integers(0, top, size=500)))
    compiled = lsh._kernels()
    bits = {}
    for kernels in (compiled, None):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(native, "pairs", kernels)
            filter_bits = np.zeros(blocks * lsh.BLOOM_BLOCK_BITS // 8, dtype=np.uint8)
            lsh._bloom_add(filter_bits, np.sort(keys))
            words = lsh._WordFilter(max(1, blocks * 8))
            words.add(np.sort(keys), lambda: np.sort(keys))
            bits[kernels is None] = (filter_bits, lsh._bloom_has(filter_bits, probe), words.words.copy(),
                                     words.may_hold(probe))
    for mine, theirs in zip(bits[False], bits[True]):
        assert np.array_equal(mine, theirs)
    assert bits[False][1][: count // 2].all()  # (no false "no")
    runs = []
    for _ in range(rng.integers(0, 6)):
        run_keys = rng.integers(0, 40, size=rng.integers(0, 50))
        run_docs = rng.integers(0, 30, size=len(run_keys))
        order = np.lexsort((run_docs, run_keys))
        runs.append((run_keys[order], run_docs[order]))
    all_keys = np.concatenate([k for k, _ in runs] or [np.empty(0, np.int64)])
    all_docs = np.concatenate([d for _, d in runs] or [np.empty(0, np.int64)])
    out_keys, out_docs = np.empty(len(all_keys), np.int64), np.empty(len(all_keys), np.int64)
    compiled.merge_rows([k for k, _ in runs], [d for _, d in runs], out_keys, out_docs)
    order = np.lexsort((all_docs, all_keys))
    assert np.array_equal(out_keys, all_keys[order]) and np.array_equal(out_docs, all_docs[order])


@pytest.mark.skipif(lsh._kernels() is None, reason="templater._pairs is not built")
@given(st.integers(1, 16), st.integers(0, 2_000), st.integers(0, 400), st.integers(0, 2**32 - 1),
       st.sampled_from([None, 1, 256, 600]))
@hsettings(max_examples=80, deadline=None)
def test_compiled_segment_blocks_equal_the_numpy_definition(blocks, rows, probes, seed, cap):
    """``_Segment.blocks_of`` by the compiled kernel (one pass: the filter's probe, the fences' searches, the blocks'
    union) gives the keys and blocks of the numpy path: keys repeated over several blocks (spans capped or not), page
    keys (never capped), keys below the first fence and past the last, a filter that passes everything; and keys that
    do not rise go the numpy way."""
    rng = np.random.default_rng(seed)
    few = rng.integers(0, 50, size=rows)  # (many repeats: a key's rows span blocks)
    wide = rng.integers(0, 1 << 48, size=rows)  # (band keys and page keys)
    keys = np.sort(np.where(rng.random(rows) < 0.5, few, wide))
    fences = keys[::lsh.SEGMENT_BLOCK_ROWS].copy() if rows else np.empty(0, np.int64)
    bits = np.zeros(blocks * lsh.BLOOM_BLOCK_BITS // 8, dtype=np.uint8)
    if rng.random() < 0.2:
        bits[:] = 255
    else:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(native, "pairs", None)
            lsh._bloom_add(bits, keys)
    segment = lsh._Segment(1, 0, rows, fences, bits)
    sought = np.unique(np.concatenate((keys[rng.integers(0, max(rows, 1), size=probes)] if rows else keys[:0],
                                       rng.integers(0, 60, size=probes), rng.integers(0, 1 << 48, size=probes))))
    got = segment.blocks_of(sought, cap)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(native, "pairs", None)
        want = segment.blocks_of(sought, cap)
    assert got[0].tolist() == want[0].tolist() and got[1].tolist() == want[1].tolist()
    if len(sought) > 1:  # (keys that do not rise: the kernel declines, the numpy way answers)
        falling = sought[::-1].copy()
        assert lsh._kernels().segment_blocks(bits, fences.astype(np.int64), falling, lsh.FILTER_HASHES, -1,
                                             lsh.PAGE_KEY_BASE) is None


@pytest.mark.skipif(lsh._kernels() is None, reason="templater._pairs is not built")
@given(st.integers(0, 6), st.integers(0, 2**32 - 1))
@hsettings(max_examples=80, deadline=None)
def test_compiled_gather_equals_the_numpy_definition(runs, seed):
    """``_gathered`` by the compiled kernel (every run's rows whose key is one of its sorted query keys, in one call)
    gives the rows, in the order, of ``_gather`` run by run: keys repeated in a run, keys absent, empty runs and
    empty queries; queries that do not rise go the numpy way."""
    rng = np.random.default_rng(seed)
    made, queries = [], []
    for _ in range(runs):
        keys = np.sort(rng.integers(0, 60, size=rng.integers(0, 80)))
        made.append((keys, rng.integers(0, 1000, size=len(keys))))
        queries.append(np.unique(rng.integers(0, 70, size=rng.integers(0, 30))))
    got = lsh._gathered(queries, made)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(native, "pairs", None)
        want = lsh._gathered(queries, made)
    assert got.shape == want.shape and got.tolist() == want.tolist()
    if any(len(q) > 1 for q in queries):
        falling = [q[::-1].copy() for q in queries]
        assert lsh._kernels().gather_rows(falling, [k for k, _ in made], [d for _, d in made]) is None


def test_first_checks_measure_the_similarities_of_pairs_that_pass_by_resemblance(monkeypatch):
    """A new page that passes with its group's longest page by resemblance alone (containment below both thresholds,
    Jaccard at least ``resemblance``) has that pair's similarity measured by ``_first_checks`` with the others, so
    the ranking of ``_join`` reads it from the cache instead of measuring the pair alone: the same value."""
    settings = ShingleSettings(verify="exact")
    rng = np.random.default_rng(5)
    common = rng.integers(0, 2**32, size=280, dtype=np.uint64)  # (containment 0.7, Jaccard 280 / 520)
    sets = {doc: np.concatenate((common, rng.integers(0, 2**32, size=120, dtype=np.uint64))).astype(np.uint32)
            for doc in (1, 2)}
    urls = ["https://a.example/1", "https://a.example/2"]
    source = lsh._SignatureSource(None, settings, np.array([1]), np.zeros((1, 4), np.uint32), {1: sets[1]}, urls[:1])
    source.sites[2] = "a.example"
    source.hold([2], [sets[2].tobytes()])
    refs = lsh._NewReferences({2: {"a.example": (2, 400)}}, {1}, {1: 400}, source)
    lsh._first_checks([(1, 2, 2)], refs, source)
    ordered = {d: comparable_set(h, settings) for d, h in sets.items()}
    value = set_similarity(ordered[1], ordered[2], settings)
    assert value < min(settings.threshold, settings.cross_site_threshold) and source.verdicts[1, 2]  # (resemblance)
    assert source.pair_similarity[1, 2] == value
    monkeypatch.setattr(lsh._SignatureSource, "similarity", lambda *a: pytest.fail("measured again"))
    assert source.similarities([(1, 2)]) == [value]


def test_verification_without_the_compiled_pairs_gives_the_same_clusters(tmp_path, monkeypatch):
    """The pure path (pair by pair in Python, the filters and merges in numpy) and templater._pairs build the same
    index."""
    settings = ShingleSettings(permutations=32, bands=8, rows=4, threshold=0.6, verify="sample", sample=16)
    rng = np.random.default_rng(3)
    base = rng.integers(0, 2**32, size=(6, 60), dtype=np.uint64)
    texts = [np.unique(np.where(rng.random(60) < 0.15, rng.integers(0, 2**32, 60, dtype=np.uint64), base[i % 6]))
             for i in range(40)]
    shingles = Shingles(np.concatenate(texts), np.r_[0, np.cumsum([len(t) for t in texts])])
    signatures = sign_shingles(shingles, settings)
    pages = [IndexedPage(f"p{i}", f"http://site{i % 3}.example/{i}") for i in range(40)]
    found = []
    for compiled in (native.pairs, None):
        monkeypatch.setattr(native, "pairs", compiled)
        db = open_db(tmp_path / f"{compiled is None}.db")
        for start in range(0, 40, 10):
            part = slice(start, start + 10)
            lsh.add_signatures(db, pages[part], Signatures(signatures.values[part], signatures.empty[part], settings,
                                                           None), shingles=Shingles(
                np.concatenate(texts[part]), np.r_[0, np.cumsum([len(t) for t in texts[part]])]))
        found.append([(label, [m.doc for m in members]) for label, members in lsh.iter_clusters(db)])
    assert found[0] == found[1] and found[0]


@given(st.lists(st.lists(st.integers(0, 2**47 - 1), max_size=60), min_size=1, max_size=8), st.integers(8, 200))
@hsettings(max_examples=40, deadline=None)
def test_the_recent_runs_word_filter_never_misses_a_key_and_grows(runs, capacity):
    held = lsh._WordFilter(capacity)
    added: list[int] = []
    for run in runs:
        added += run
        keys = np.array(sorted(set(run)), dtype=np.int64)
        held.add(keys, lambda: np.array(sorted(added), dtype=np.int64))
        assert held.may_hold(np.array(added, dtype=np.int64)).all()


@given(st.lists(st.integers(0, 300), min_size=1, max_size=30, unique=True), st.integers(0, 2**32 - 1),
       st.booleans(), st.booleans())
@hsettings(max_examples=60, deadline=None)
def test_band_rows_are_the_distinct_rows_in_lexsort_order(doc_list, seed, spread, few_keys):
    rng = np.random.default_rng(seed)
    docs = np.array(sorted(doc_list), dtype=np.int64) * (1_000 if spread else 1)  # spread: past 2**16, lexsort
    keys = rng.integers(0, 40 if few_keys else 2**47, size=(len(docs), 4)).astype(np.int64)
    anchors = [rng.integers(0, 40 if few_keys else 2**47, size=rng.integers(0, 4)).astype(np.int64) for _ in docs]
    flat_keys = np.concatenate([keys.ravel(), *anchors])
    flat_docs = np.concatenate([np.repeat(docs, 4), np.repeat(docs, [len(a) for a in anchors])])
    rows = sorted(set(zip(flat_keys.tolist(), flat_docs.tolist())))
    got_keys, got_docs = lsh._band_rows(keys, docs, anchors)
    assert list(zip(got_keys.tolist(), got_docs.tolist())) == rows
    # the anchors end to end with their counts, as add_signatures gathers them (``_anchor_rows``): the same rows
    offsets = np.r_[0, np.cumsum([len(a) for a in anchors])]
    order = rng.permutation(len(docs)).tolist()
    gathered = lsh._anchor_rows(SimpleNamespace(anchors=Shingles(np.concatenate(anchors).astype(np.uint64), offsets)),
                                order)
    assert gathered[1].tolist() == [len(anchors[i]) for i in order]
    assert gathered[0].tolist() == [k for i in order for k in anchors[i].tolist()]
    got_keys, got_docs = lsh._band_rows(keys[order], docs[order], joined=gathered)
    assert list(zip(got_keys.tolist(), got_docs.tolist())) == rows


@given(st.lists(st.lists(st.integers(0, 2**32 - 1), max_size=6), max_size=12), st.sampled_from([np.uint32, np.int64]),
       st.integers(0, 2**32 - 1))
@hsettings(max_examples=60, deadline=None)
def test_blobs_cut_from_one_buffer_are_each_arrays_bytes(arrays, dtype, seed):
    """``_cut_blobs``: the pages' stored bytes cut from one buffer of them all, in any order, as each array's own
    ``tobytes`` (what the INSERT of the pages' rows bound before)."""
    flat = np.array([v for a in arrays for v in a], dtype=dtype)
    offsets = np.r_[0, np.cumsum([len(a) for a in arrays])].astype(np.int64).tolist()
    order = np.random.default_rng(seed).permutation(len(arrays)).tolist()
    assert lsh._cut_blobs(flat, offsets, order) == [np.array(arrays[i], dtype=dtype).tobytes() for i in order]


@given(st.lists(st.integers(0, 2**47 - 1), max_size=80), st.lists(st.integers(0, 2**47 - 1), max_size=80),
       st.integers(2, 40))
@hsettings(max_examples=60, deadline=None)
def test_a_filter_probe_hash_by_hash_answers_as_all_positions_at_once(held, probed, blocks):
    """``_bloom_has`` (bits tested one hash at a time on the keys still passing, parts kept between filters of other
    sizes) says "maybe" exactly for the keys whose FILTER_HASHES positions (``_bloom_positions``) are all set."""
    bits = np.zeros(blocks * lsh.BLOOM_BLOCK_BITS // 8, dtype=np.uint8)
    lsh._bloom_add(bits, np.array(sorted(held), dtype=np.int64))
    keys = np.array(probed + held, dtype=np.int64)
    at = lsh._bloom_positions(keys, len(bits) * 8)
    expected = (((bits[at >> 3] >> (at & 7).astype(np.uint8)) & 1) == 1).all(axis=0)
    cache: dict = {}
    other = np.zeros(len(bits) * 2, dtype=np.uint8)
    lsh._bloom_has(other, keys, cache)  # parts made for another filter size, then used for this one
    assert lsh._bloom_has(bits, keys, cache).tolist() == expected.tolist()
    assert lsh._bloom_has(bits, keys).tolist() == expected.tolist()
    assert expected[len(probed):].all()


@hsettings(max_examples=25, deadline=None)
@given(ids=st.lists(st.text(min_size=1, max_size=6), min_size=1, max_size=30, unique=True),
       removed=st.sets(st.integers(0, 29), max_size=8), collide=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_pages_are_found_by_page_id_through_their_page_keys(tmp_path_factory, ids, removed, collide, seed):
    """Pages are found by id through their page key rows (migration 8) whatever the ids, even when every id shares its
    page key with others (``collide``): indexed again unchanged or changed, looked up, removed; page keys lie above
    every band key and never make a candidate pair."""
    import pytest as _pytest

    with _pytest.MonkeyPatch.context() as patch:
        patch.setattr(lsh, "RECENT_PAGES", 7)
        if collide:
            patch.setattr(lsh, "page_keys", lambda page_ids: np.array(
                [lsh.PAGE_KEY_BASE | (len(p) % 2) for p in page_ids], dtype=np.int64))
        db = open_db(tmp_path_factory.mktemp("pages") / "index.db")
        rng = np.random.default_rng(seed)
        values = make_signatures(rng, len(ids), 3, 0.5)
        for start in range(0, len(ids), 4):
            add(db, ids[start:start + 4], values[start:start + 4])
        again = add(db, ids, values)  # every page again, the same signatures: nothing added
        assert (again.added, again.updated, again.unchanged) == (0, 0, len(ids))
        changed = add(db, ids[:2], make_signatures(rng, len(ids[:2]), 1, 0.0))
        assert (changed.added, changed.updated) == (0, len(ids[:2]))
        gone = [ids[i] for i in sorted(removed) if i < len(ids)]
        assert lsh.remove_pages(db, gone + ["not indexed"]) == len(gone)
        for i, page in enumerate(ids):
            row = lsh.page_row(db, page)
            assert (row is None) == (page in gone) and (row is None or row.page_id == page)
        assert lsh.stats(db)["pages"] == len(ids) - len(gone)
        pairs = np.concatenate(list(lsh.iter_candidate_pairs(db)) or [np.empty((0, 2), np.int64)])
        stored = dict(db.conn.execute("SELECT doc, signature FROM lsh_signatures").fetchall())
        keys = {d: set(band_keys(np.frombuffer(v, np.uint32)[None, :], SETTINGS)[0].tolist()) for d, v in stored.items()}
        assert all(keys[a] & keys[b] for a, b in pairs.tolist())  # every candidate shares a band key


def test_accepted_passes_a_failed_containment_pair_by_resemblance():
    settings = ShingleSettings()
    same = np.array([True, True, True, False, True])
    containment = np.array([0.75, 0.75, 0.75, 0.70, 0.90])
    jaccard = np.array([0.60, 0.45, 0.60, 0.55, 0.20])
    smaller = np.array([400, 400, 40, 300, 400])
    ok = lsh.accepted(settings, same, containment, lambda mask: jaccard[mask], lambda mask: smaller[mask])
    # resemblance; Jaccard under 0.5; too few shingles; across sites too; containment passes, but under the floor
    assert ok.tolist() == [True, False, False, True, False]
    off = lsh.accepted(ShingleSettings(resemblance=0.0), same, containment, lambda mask: jaccard[mask],
                       lambda mask: smaller[mask])
    assert off.tolist() == [False, False, False, False, False]
    assert lsh.accepted(settings, same, containment, lambda mask: jaccard[mask]).tolist() == [False] * 5


def test_past_the_filters_budget_the_top_level_holds_one_segment(monkeypatch):
    """``_merged_with_top``: below the budget a merge into the highest level leaves its segments as they are
    (tiered); past it the merge takes them in (oldest first), and the top goes up a level once it holds
    SEGMENT_FANOUT times the rows of a merge from below."""
    def segment(i, level, rows):
        return lsh._Segment(i, level, rows, np.zeros(1, np.int64), np.zeros(64, np.uint8))

    top = segment(1, 2, 3 * 4 * 400)
    same = [segment(i, 1, 400) for i in range(2, 6)]
    held = lsh._Segments(0, [top, *same])
    monkeypatch.setattr(lsh, "FILTER_MEMORY_BYTES", 1 << 40)
    assert lsh._merged_with_top(held, same, 2) == (same, 2)
    monkeypatch.setattr(lsh, "FILTER_MEMORY_BYTES", 1000)
    assert lsh._merged_with_top(held, same, 2) == ([top, *same], 3)  # 12 + 4 units of 400: four merges from below
    smaller = lsh._Segments(0, [segment(1, 2, 2 * 4 * 400), *same])
    assert lsh._merged_with_top(smaller, same, 2) == (smaller.items, 2)
    below = lsh._Segments(0, [segment(1, 3, 10**6), top, *same])  # a merge into a level under the top: tiered
    assert lsh._merged_with_top(below, same, 2) == (same, 2)


def test_filters_written_and_read_through_blob_io_hold_the_bytes_a_whole_value_holds(tmp_path, monkeypatch):
    """A segment's filter goes in and out of its BLOB FILTER_IO_BYTES at a time (SQLite's incremental BLOB I/O): the
    same stored bytes as a filter bound as one value (the path without ``blobopen``), whatever the chunk size, with
    flushes, merges and filters thinned to a budget; an index reopened reads back what memory held, whichever way
    it was written."""
    monkeypatch.setattr(lsh, "RECENT_PAGES", 200)
    monkeypatch.setattr(lsh, "SEGMENT_FANOUT", 3)
    monkeypatch.setattr(lsh, "FILTER_MEMORY_BYTES", 24 * 1024)
    monkeypatch.setattr(lsh, "FILTER_IO_BYTES", 1000)  # (not a multiple of a filter's size: a short last chunk)
    values = make_signatures(np.random.default_rng(14), 3000, 300, 0.5)
    stored = []
    for incremental in (True, False):
        monkeypatch.setattr(lsh, "_incremental", lambda conn, on=incremental: on)
        db = open_db(tmp_path / f"{incremental}.db")
        for start in range(0, 3000, 250):
            add(db, [f"p{i:04d}" for i in range(start, start + 250)], values[start:start + 250])
        held = [(s.segment, s.rows, s.bits.tobytes()) for s in lsh._segments(db).items]
        assert held == _filter_state(db) and len(held) >= 2
        stored.append(held)
        db.conn.close()
    assert stored[0] == stored[1]
    for incremental in (True, False):  # (each way reads what the other wrote)
        monkeypatch.setattr(lsh, "_incremental", lambda conn, on=incremental: on)
        reopened = open_db(tmp_path / f"{not incremental}.db")
        assert [(s.segment, s.rows, s.bits.tobytes()) for s in lsh._segments(reopened).items] == stored[0]


def test_verdicts_and_similarities_as_lists_are_the_array_answers():
    """Clustering's list questions (``verdicts_of``, ``similarities``: one pair at a time, read from the caches or
    measured) give what ``passing`` and ``similarity`` give for all the pairs at once."""
    settings = ShingleSettings()
    rng = np.random.default_rng(3)
    base = rng.integers(0, 2**32, 400, dtype=np.uint64).astype(np.uint32)
    sets = {d: sorted_set(np.concatenate([base[:320 - 40 * d], rng.integers(0, 2**32, 12 * d, dtype=np.uint64)
                                          .astype(np.uint32)])) for d in range(1, 7)}

    def source():
        made = lsh._SignatureSource(None, settings, np.empty(0, np.int64), np.empty((0, settings.permutations)))
        made.sets, made.sites = dict(sets), {d: "a.example" if d % 2 else "b.example" for d in sets}
        return made

    pairs = [(x, y) for x in sets for y in sets if x != y]
    a, b = (np.array(side, dtype=np.int64) for side in zip(*pairs))
    verdicts, similarities = source().passing(a, b).tolist(), source().similarity(a, b).tolist()
    assert any(verdicts) and not all(verdicts)
    one = source()
    assert [one.verdicts_of([p])[0] for p in pairs] == verdicts
    assert one.similarities(pairs) == similarities  # (read from the cache)
    assert source().similarities(pairs) == similarities
    assert source().verdicts_of(pairs + pairs[:3]) == verdicts + verdicts[:3]
    assert source().verdicts_of([]) == [] and source().similarities([]) == []


def _lsh_schema_and_rows(db) -> dict:
    """Each lsh table's and index's columns (table_info, index_info, WITHOUT ROWID or not, partial index's clause),
    every row of the index's tables, and the versions recorded: what a new index is, apart from the SQL's spelling
    and the tables' order in sqlite_master."""
    conn = db.conn
    names = sorted(r[0] for r in conn.execute(
        "SELECT name FROM sqlite_master WHERE type IN ('table', 'index') AND (name LIKE 'lsh%' OR name LIKE 'dup%')"))
    out: dict = {"versions": conn.execute(
        "SELECT version FROM schema_migrations WHERE component = 'lsh' ORDER BY version").fetchall()}
    for name in names:
        kind, sql = conn.execute("SELECT type, sql FROM sqlite_master WHERE name = ?", [name]).fetchone()
        if kind == "table":
            out[name] = (conn.execute(f"PRAGMA table_info({name})").fetchall(), "WITHOUT ROWID" in (sql or ""),
                         sorted(conn.execute(f"SELECT * FROM {name}").fetchall()))
        else:
            out[name] = (conn.execute(f"PRAGMA index_xinfo({name})").fetchall(),
                         sql and sql.partition(" WHERE ")[2])
    return out


def test_a_new_index_is_made_at_the_latest_version_as_the_steps_make_it(tmp_path):
    """A file without the index gets it at the latest version in one transaction (``_create_latest``), with the
    tables, columns, indexes, state rows and recorded versions that the steps one after the other give; a file
    that holds an older version still goes through the steps."""
    from store.db import migrate

    stepped = open_db(tmp_path / "stepped.db")
    migrate(stepped, "lsh", lsh.STEPS)
    fresh = open_db(tmp_path / "fresh.db")
    statements = []
    fresh.conn.set_trace_callback(statements.append)
    lsh.prepare(fresh)
    fresh.conn.set_trace_callback(None)
    assert _lsh_schema_and_rows(fresh) == _lsh_schema_and_rows(stepped)
    assert "lsh_bands" not in str(statements) and statements.count("COMMIT") == 1
    assert lsh._state(fresh, "recent_token") == lsh._token_after(0, np.empty(0, np.int64), np.empty(0, np.int64))
    # both work alike from there on
    settings = ShingleSettings()
    for db in (stepped, fresh):
        lsh.ensure_settings(db, settings)
    assert _lsh_schema_and_rows(fresh) == _lsh_schema_and_rows(stepped)
    # an older version is migrated step by step, not remade
    old = open_db(tmp_path / "old.db")
    migrate(old, "lsh", lsh.STEPS[:4])
    lsh.prepare(old)
    again = open_db(tmp_path / "again.db")
    migrate(again, "lsh", lsh.STEPS)
    assert _lsh_schema_and_rows(old) == _lsh_schema_and_rows(again)


@given(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 5),
                          st.sampled_from([0.0, 0.5, 0.7, 0.75, 0.79, 0.8, 0.9, 1.0]), st.floats(0, 1),
                          st.integers(0, 40)), min_size=1, max_size=30),
       st.sampled_from([0.6, 0.8, 0.9]), st.sampled_from([0.5, 0.75, 0.8]), st.sampled_from([0.0, 0.5]),
       st.sampled_from([0.0, 0.6]), st.sampled_from(["containment", "jaccard"]))
@hsettings(max_examples=120, deadline=None)
def test_sites_asked_only_where_a_verdict_needs_them(pairs, threshold, cross, same_jaccard, resemblance, measure):
    """The verdicts made with sites only for the pairs reaching the lower threshold (``_same_where_needed``) are those
    made with every pair's sites: same site or not, at and around both thresholds, with the same-site Jaccard check
    and resemblance on and off; and the sites of pairs below both thresholds are never made."""
    settings = ShingleSettings(threshold=threshold, cross_site_threshold=min(cross, threshold),
                               same_site_jaccard=same_jaccard, resemblance=resemblance, measure=measure,
                               resemblance_min_shingles=10)
    hosts = ["a.example", "b.example", "www.a.example", "", "c.example", "a.example"]
    urls = [f"https://{h}/page{d}" if h else "not a url" for d, h in enumerate(hosts)]
    a = np.array([p[0] for p in pairs], dtype=np.int64)
    b = np.array([p[1] for p in pairs], dtype=np.int64)
    sims = np.array([p[2] for p in pairs])
    jaccard, smaller = np.array([p[3] for p in pairs]), np.array([p[4] for p in pairs])
    docs = np.arange(len(hosts), dtype=np.int64)

    def verdicts(same):
        return lsh.accepted(settings, same, sims.copy(), lambda mask: jaccard[mask], lambda mask: smaller[mask])

    everything = lsh._SignatureSource(None, settings, docs, np.zeros((len(docs), 4), np.uint32), None, urls)
    needed = lsh._SignatureSource(None, settings, docs, np.zeros((len(docs), 4), np.uint32), None, urls)
    assert verdicts(needed._same_where_needed(a, b, sims)).tolist() == verdicts(everything.same(a, b)).tolist()
    low = min(settings.threshold, settings.cross_site_threshold)
    assert set(needed.sites) == set(a[sims >= low].tolist()) | set(b[sims >= low].tolist())


@pytest.mark.skipif(native.pairs is None, reason="templater._pairs is not built")
@given(st.lists(st.tuples(st.integers(0, 40), st.integers(0, 40), st.integers(0, 40), st.booleans(), st.booleans()),
                min_size=1, max_size=10),
       st.sampled_from(["sample", "exact"]), st.sampled_from(["containment", "jaccard"]), st.sampled_from([0.0, 0.5]),
       st.sampled_from([32, 64]), st.integers(0, 2**32 - 1))
@hsettings(max_examples=80, deadline=None)
def test_held_sets_give_the_measures_and_verdicts_of_the_sets_one_by_one(shapes, verify, measure, resemblance, bits,
                                                                          seed):
    """The sets held as one array (``hold``: stored blobs and the batch's own sets) give every pair the similarity,
    Jaccard, smaller size and verdict that the sets taken one by one give, whatever the stored form: samples as stored
    (ascending), sets out of order or with repeats, longer than the sample, empty; and the views ``sorted`` takes
    from them are ``comparable_set``'s. A pair whose set is not held is measured from the sets as before."""
    settings = ShingleSettings(verify=verify, measure=measure, sample=16, resemblance=resemblance, hash_bits=bits,
                               same_site_jaccard=0.0 if resemblance == 0.0 else SAMPLED.same_site_jaccard,
                               resemblance_min_shingles=5)
    rng = np.random.default_rng(seed)
    dtype = np.uint32 if bits == 32 else np.uint64
    sets: dict[int, np.ndarray] = {}
    for i, (shared, only_a, only_b, shuffled, repeated) in enumerate(shapes):
        common = rng.integers(0, 300, size=shared, dtype=np.uint64)
        for doc, only in ((2 * i, only_a), (2 * i + 1, only_b)):
            hashes = np.concatenate((common, rng.integers(0, 2**32, size=only, dtype=np.uint64))).astype(dtype)
            hashes = np.unique(hashes) if not shuffled else rng.permutation(hashes)
            sets[doc] = np.concatenate((hashes, hashes[:2])) if repeated else hashes
    docs = sorted(sets)
    pairs = [(x, y) for x in docs for y in docs if x % 3 == 0 or y % 2 == 0]
    a, b = (np.array(side, dtype=np.int64) for side in zip(*pairs))
    urls = [f"https://{'ab'[d % 2]}.example/{d}" for d in docs]
    batch = docs[:len(docs) // 2]
    one_by_one = lsh._SignatureSource(None, settings, np.array(docs), np.zeros((len(docs), 4), np.uint32), sets, urls)
    held = lsh._SignatureSource(None, settings, np.array(docs), np.zeros((len(docs), 4), np.uint32),
                                {d: sets[d] for d in batch}, urls)
    stored = [d for d in docs if d not in batch]
    held.hold(stored, [sets[d].tobytes() for d in stored])
    measured = held._measured(a, b, pairs)
    one_by_one._load_sorted(set(docs))
    ordered = {d: comparable_set(h, settings) for d, h in sets.items()}
    assert measured[0].tolist() == [set_similarity(ordered[x], ordered[y], settings) for x, y in pairs]
    assert measured[2].tolist() == [min(len(ordered[x]), len(ordered[y])) for x, y in pairs]
    if held._jaccard_asked:
        assert measured[1].tolist() == [set_jaccard(ordered[x], ordered[y], settings) for x, y in pairs]
        assert all(held.pair_jaccard[p] == set_jaccard(ordered[p[0]], ordered[p[1]], settings) for p in held.pair_jaccard)
    assert all(held.pair_similarity[p] == set_similarity(ordered[p[0]], ordered[p[1]], settings)
               for p in held.pair_similarity)  # (kept for the pairs that reach a threshold, measured again otherwise)
    assert held.similarities(pairs) == measured[0].tolist()
    fresh = lsh._SignatureSource(None, settings, np.array(docs), np.zeros((len(docs), 4), np.uint32),
                                 {d: sets[d] for d in batch}, urls)
    fresh.hold(stored, [sets[d].tobytes() for d in stored])
    assert fresh.passing(a, b).tolist() == one_by_one.passing(a, b).tolist()
    views = held.held.views(docs)
    assert set(views) == set(docs) and all(np.array_equal(views[d], ordered[d]) for d in docs)
    assert held.held.numbers(np.array([max(docs) + 1], dtype=np.int64)) is None
    extra = max(docs) + 1  # a set given after the others were held: its pairs measured from the sets one by one
    fresh.sets[extra] = one_by_one.sets[extra] = sets[docs[0]]
    fresh.urls[extra] = one_by_one.urls[extra] = urls[0]
    a, b = np.full(len(docs), extra), np.array(docs, dtype=np.int64)
    assert fresh.passing(a, b).tolist() == one_by_one.passing(a, b).tolist()
    assert fresh.similarity(a, b).tolist() == one_by_one.similarity(a, b).tolist()


def test_references_are_read_for_the_clusters_an_edge_reaches_only(tmp_path, monkeypatch):
    """A batch's candidates name many stored clusters, most of which no new page joins (their candidates fail): only
    the clusters a verified edge reaches have their sizes and reference pages read, and every cluster lies within one of
    the reference's."""
    rng = np.random.default_rng(5)
    db = open_db(tmp_path / "index.db")
    asked, candidates, reached = [], set(), set()
    references, first_passing = lsh._references, lsh._first_passing

    def spy_references(db_, sizes, source):
        asked.append(set(sizes))
        return references(db_, sizes, source)

    def spy_first_passing(x, group, y, shared, source):
        found = first_passing(x, group, y, shared, source)
        candidates.update(group.tolist())
        reached.update(g for _, g, _ in found)
        return found

    monkeypatch.setattr(lsh, "_references", spy_references)
    monkeypatch.setattr(lsh, "_first_passing", spy_first_passing)
    pages: dict[str, np.ndarray] = {}
    for batch in range(6):
        sets = make_sets(rng, 25, 3, 0.7)
        ids = [f"p{batch}-{i}" for i in range(len(sets))]
        add_sets(db, ids, sets)
        pages.update(zip(ids, sets))
    assert asked and all(labels <= reached for labels in asked)
    assert candidates - reached  # (candidates that reached no group: their clusters were not read)
    reference = reference_sample_clusters(pages)
    assert all(any(c <= r for r in reference) for c in stored_clusters(db))
    check_invariants(db, anchors=True)


@pytest.mark.skipif(native.pairs is None, reason="templater._pairs is not built")
@given(st.lists(st.tuples(st.integers(0, 60), st.integers(0, 60), st.integers(0, 60)), min_size=1, max_size=10),
       st.sampled_from(["sample", "exact"]), st.sampled_from(["containment", "jaccard"]), st.sampled_from([0.0, 0.5]),
       st.integers(0, 2**32 - 1))
@hsettings(max_examples=60, deadline=None)
def test_measured_arrays_are_the_pair_by_pair_measures(shapes, verify, measure, resemblance, seed):
    """``_measured`` (every pair's similarity, Jaccard and smaller set measured at once, in arrays) gives what
    set_similarity, set_jaccard and the smaller set's size give pair by pair, and fills the caches with them; with a
    pair repeated, a pair of a set with itself, and sets in any order (sorted as comparable_set sorts them)."""
    settings = ShingleSettings(verify=verify, measure=measure, sample=16, resemblance=resemblance,
                               same_site_jaccard=0.0 if resemblance == 0.0 else SAMPLED.same_site_jaccard)
    rng = np.random.default_rng(seed)
    sets: dict[int, np.ndarray] = {}
    pairs = []
    for i, (shared, only_a, only_b) in enumerate(shapes):
        common = rng.integers(0, 300, size=shared, dtype=np.uint64)
        sets[2 * i] = np.concatenate((common, rng.integers(0, 2**32, size=only_a, dtype=np.uint64)))
        sets[2 * i + 1] = np.concatenate((common, rng.integers(0, 2**32, size=only_b, dtype=np.uint64)))
        pairs += [(2 * i + 1, 2 * i), (2 * i, 2 * i), (2 * i + 1, 2 * i)]
    source = lsh._SignatureSource(None, settings, np.empty(0, np.int64), np.empty((0, settings.permutations)), sets)
    a, b = (np.array(side, dtype=np.int64) for side in zip(*pairs))
    sims, jaccards, smaller = source._measured(a, b, pairs)
    ordered = {d: comparable_set(h, settings) for d, h in sets.items()}
    assert sims.tolist() == [set_similarity(ordered[x], ordered[y], settings) for x, y in pairs]
    assert smaller.tolist() == [min(len(ordered[x]), len(ordered[y])) for x, y in pairs]
    if source._jaccard_asked:
        assert jaccards.tolist() == [set_jaccard(ordered[x], ordered[y], settings) for x, y in pairs]
        assert all(source.pair_jaccard[p] == j for p, j in zip(pairs, jaccards.tolist()))
    else:
        assert jaccards is None
    assert all(source.pair_similarity[p] == v for p, v in zip(pairs, sims.tolist()))


@given(st.lists(st.tuples(st.integers(1, 30), st.integers(0, 12), st.booleans()), min_size=2, max_size=50),
       st.lists(st.integers(0, 400), min_size=1, max_size=80))
@hsettings(max_examples=60, deadline=None)
def test_verification_slices_are_whole_pages_within_the_budget(pages, partners):
    """``_verification_slices`` cuts the pairs (x ascending) only between new pages, covers them all in order, and
    keeps each slice's distinct stored partners within the budget unless they are all one page's; one slice when all
    fit."""
    x, y, stored = [], [], []
    for page, (doc, count, mixed) in enumerate(pages):
        for k in range(count):
            x.append(page)
            y.append(partners[(page * 7 + k) % len(partners)])
            stored.append(not (mixed and k % 3 == 0))
    x, y, stored = np.array(x, np.int64), np.array(y, np.int64), np.array(stored, bool)
    for limit in (1, 2, 5, 1000):
        ranges = lsh._verification_slices(x, y, stored, 8, budget=8 * limit)
        assert ranges[0][0] == 0 and ranges[-1][1] == len(x)
        assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:]))
        assert all(low < high or len(x) == 0 for low, high in ranges)
        for low, high in ranges:
            assert low == 0 or x[low] != x[low - 1]  # (whole pages)
            held = len(set(y[low:high][stored[low:high]].tolist()))
            assert held <= limit or len(set(x[low:high][stored[low:high]].tolist())) == 1
        if len(set(y[stored].tolist())) <= limit:
            assert ranges == [(0, len(x))]


@pytest.mark.parametrize("verify", ["sample", "exact", "estimate"])
def test_verification_a_slice_at_a_time_gives_what_one_slice_gives(tmp_path, monkeypatch, verify):
    """The same batches indexed with a budget of one stored partner a slice (every new page's pairs verified apart,
    the sets read again and again), a few partners, and the default: the same edges in the same order from every
    batch's verification, and the same stored bytes (pages, clusters, links, band index)."""
    settings = ShingleSettings(permutations=32, bands=8, rows=4, threshold=0.6, verify=verify, sample=16)
    rng = np.random.default_rng(11)
    base = rng.integers(0, 2**32, size=(5, 60), dtype=np.uint64)
    texts = [np.unique(np.where(rng.random(60) < rng.uniform(0.05, 0.4), rng.integers(0, 2**32, 60, dtype=np.uint64),
                                base[i % 5])) for i in range(90)]
    shingles = Shingles(np.concatenate(texts), np.r_[0, np.cumsum([len(t) for t in texts])])
    signatures = sign_shingles(shingles, settings)
    pages = [IndexedPage(f"p{i}", f"http://site{i % 4}.example/{i}", text_chars=len(texts[i])) for i in range(90)]
    verified, cut = lsh._verified_edges, lsh._verification_slices
    results = []
    for budget in (None, 1, 5 * 16 * 8):
        if budget is not None:
            monkeypatch.setattr(lsh, "VERIFY_BYTES", budget)
        edges: list = []
        slices: list = []
        monkeypatch.setattr(lsh, "_verified_edges", lambda *a: edges.append(verified(*a)) or edges[-1])
        monkeypatch.setattr(lsh, "_verification_slices", lambda *a: slices.append(cut(*a)) or slices[-1])
        db = open_db(tmp_path / f"{budget}.db")
        for start in range(0, 90, 30):
            part = slice(start, start + 30)
            lsh.add_signatures(db, pages[part], Signatures(signatures.values[part], signatures.empty[part], settings,
                                                           None),
                               shingles=None if verify == "estimate" else Shingles(
                                   np.concatenate(texts[part]), np.r_[0, np.cumsum([len(t) for t in texts[part]])]))
        tables = [db.conn.execute(f"SELECT * FROM {t} ORDER BY 1, 2").fetchall()
                  for t in ("lsh_signatures", "dup_clusters", "lsh_links", "lsh_blocks", "lsh_runs", "lsh_state")]
        results.append((edges, tables))
        assert budget is None or max(len(s) for s in slices) > 1  # (the small budgets cut the batches)
    assert results[0][0][-1][0]  # (edges found)
    assert results[1] == results[0] and results[2] == results[0]
