"""The persistent signature index (store/signature_index.py, templater/signature_run.py) on hand-made documents."""

from __future__ import annotations

import json
from collections import defaultdict

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from store import signature_index as sig_store
from store.db import open_db
from templater import dedup, signature_run
from templater.dedup import TextItem
from templater.errors import InputError, SettingsMismatchError, StoreError
from templater.signatures import TFIDF, make_method, signature_components
from sitegen import store_extracted

ARTICLE = ("The harbor lights were switched on long before the fishing boats came home. Nobody in the village "
           "remembered a winter as cold as the one that followed the flood, and the old men said so every day.")
OTHER = "Trains left the valley station every hour. The timetable changed in spring, and nobody noticed."
THIRD = "A recipe for bread needs flour, water, salt and time. Bakers say the dough must rest overnight."


def save_pages(db, texts: dict[str, str], *, boilerplate: dict[str, int] | None = None) -> None:
    """Store pages and their extractions, as `templater extract` leaves them."""
    store_extracted(db, texts, boilerplate=boilerplate)


def clusters(db, method: str) -> set[frozenset]:
    groups = defaultdict(set)
    for row in signature_run.iter_signature_duplicates(db, method=method):
        groups[row["cluster"]].add(row["id"])
    return {frozenset(g) for g in groups.values()}


@pytest.fixture
def path(tmp_path):
    return tmp_path / "sig.db"


@pytest.fixture
def db(path):
    return open_db(path)


# --- clusters -------------------------------------------------------------------------------------------------

def test_pages_sharing_a_signature_form_clusters_with_their_canonical_page(db):
    save_pages(db, {"a": ARTICLE, "b": ARTICLE.upper(), "c": ARTICLE + "!!", "d": OTHER, "e": OTHER, "f": THIRD},
               boilerplate={"a": 500, "b": 20, "c": 20})
    report = signature_run.index_signatures(db, method="md5")
    assert (report.pages, report.judged, report.added, report.removed) == (6, 6, 6, 0)
    assert clusters(db, "md5") == {frozenset("abc"), frozenset("de")}
    rows = list(signature_run.iter_signature_duplicates(db, method="md5"))
    assert set(rows[0]) == {"id", "url", "cluster", "canonical", "similarity"}
    by_id = {r["id"]: r for r in rows}
    # one add call: less boilerplate wins (b and c tie), then the shorter URL (same length), then the URL
    assert by_id["a"]["canonical"] == "b" and rows[0]["id"] == "b"
    assert by_id["e"]["canonical"] == "d"
    assert {r["similarity"] for r in rows} == {1.0}
    assert by_id["a"]["url"] == "https://example.com/a"


def test_the_first_seen_page_is_canonical_whatever_its_boilerplate(db):
    signature_run.add_signatures(db, [TextItem("late", "https://example.com/a-much-longer-url", ARTICLE, 900)],
                                 method="md5")
    signature_run.add_signatures(db, [TextItem("early", "https://e.com/1", ARTICLE, 0),
                                      TextItem("x", "https://e.com/2", OTHER, 0)], method="md5")
    assert {r["id"]: r["canonical"] for r in signature_run.iter_signature_duplicates(db, method="md5")} == {
        "late": "late", "early": "late"}


def test_lex_rand_links_pages_through_a_shared_member(db):
    """A page can share a signature with a member but not with the canonical page: similarity 0.0."""
    sig_store.save_model(db, "lex-rand", version=1, params={}, state={"lexicons": []}, fitted_pages=0)
    pages = [sig_store.SignedPage("a", "u/a", (1, 2)), sig_store.SignedPage("b", "u/b", (2, 3)),
             sig_store.SignedPage("c", "u/c", (3, 4)), sig_store.SignedPage("d", "u/d", (9,))]
    sig_store.add_pages(db, "lex-rand", pages)
    rows = list(signature_run._iter_clusters(db, "lex-rand"))
    assert [(r["id"], r["canonical"], r["similarity"]) for r in rows] == [
        ("a", "a", 1.0), ("b", "a", 1.0), ("c", "a", 0.0)]


def test_minhash_is_the_near_duplicate_index(db):
    items = [TextItem("a", "u/a", ARTICLE * 3), TextItem("b", "u/b", ARTICLE * 3 + " one more"),
             TextItem("c", "u/c", OTHER * 3)]
    dedup.index_texts(db, items)
    expected = list(dedup.iter_duplicates(db))
    assert expected and list(signature_run.iter_signature_duplicates(db)) == expected
    assert list(signature_run.iter_signature_duplicates(db, method="minhash-lsh")) == expected


def test_index_signatures_minhash_fills_the_near_duplicate_index_from_the_extractions(db):
    save_pages(db, {"a": ARTICLE * 3, "b": ARTICLE * 3 + " one more", "c": OTHER * 3})
    report = signature_run.index_signatures(db, method="minhash")
    assert (report.method, report.pages, report.added) == ("minhash", 3, 3)
    assert clusters(db, "minhash") == {frozenset("ab")}
    with pytest.raises(InputError, match="new --db"):
        signature_run.index_signatures(db, method="minhash", replace=True)


# --- persistence and the stored model -----------------------------------------------------------------------

def test_the_index_and_its_fitted_model_survive_reopening(path):
    db = open_db(path)
    save_pages(db, {"a": ARTICLE, "b": ARTICLE, "c": OTHER, "d": THIRD})
    signature_run.index_signatures(db, method="tfidf", params={"terms": 3})
    before = clusters(db, "tfidf")
    model = sig_store.load_model(db, "tfidf")
    db.conn.close()

    again = open_db(path)
    assert before == {frozenset("ab")} and clusters(again, "tfidf") == before
    stored = sig_store.load_model(again, "tfidf")
    assert stored == model and stored.params["terms"] == 3 and stored.fitted_pages == 4
    assert stored.state["documents"] == 4 and stored.state["df"]["harbor"] == 2
    described = signature_run.describe_signature_indexes(again)
    assert [(d["method"], d["pages"], d["judged"], d["signatures"]) for d in described] == [("tfidf", 4, 4, 4)]


def test_an_incremental_add_signs_with_the_stored_model_not_a_refit(path):
    collection = ["alpha words here"] * 6
    db = open_db(path)
    save_pages(db, {f"p{i}": text for i, text in enumerate(collection)})
    signature_run.index_signatures(db, method="tfidf", params={"terms": 1})
    db.conn.close()

    db = open_db(path)
    new = [TextItem(f"n{i}", f"u/n{i}", "alpha alpha beta") for i in range(10)]
    result = signature_run.add_signatures(db, new, method="tfidf")
    assert (result.added, result.updated, result.unchanged) == (10, 0, 0)
    stored = sig_store.stored_signatures(db, "tfidf", ["n0"])["n0"]
    # fitted on the six pages, beta is rare and wins; fitted on all sixteen, alpha would
    assert stored == set(TFIDF(terms=1).fit(collection).signatures("alpha alpha beta"))
    assert stored != set(TFIDF(terms=1).fit(collection + [i.text for i in new]).signatures("alpha alpha beta"))
    assert sig_store.load_model(db, "tfidf").fitted_pages == 6
    assert clusters(db, "tfidf") == {frozenset(f"p{i}" for i in range(6)), frozenset(f"n{i}" for i in range(10))}


def test_every_method_restored_from_the_store_signs_as_when_fitted(db):
    texts = {f"p{i}": t for i, t in enumerate([ARTICLE, OTHER, THIRD, ARTICLE + " " + OTHER, THIRD + " " + OTHER,
                                               ARTICLE.replace("winter", "summer")])}
    save_pages(db, texts)
    params = {"lex-rand": {"max_df_share": 1.0, "min_terms": 2}, "descr-words": {"min_df": 2, "min_bits": 1}}
    for name in signature_run.INDEX_METHODS[1:]:
        signature_run.index_signatures(db, method=name, params=params.get(name))
        fitted = make_method(name, **params.get(name, {})).fit(texts.values())
        stored = sig_store.stored_signatures(db, name, list(texts))
        assert {pid: set(fitted.signatures(t)) for pid, t in texts.items() if fitted.signatures(t)} == stored, name
        signature_run.add_signatures(db, [TextItem("late", "u/late", ARTICLE + " " + THIRD)], method=name)
        assert sig_store.stored_signatures(db, name, ["late"]).get("late", set()) == \
            set(fitted.signatures(ARTICLE + " " + THIRD)), name


def test_reindexing_refits_keeps_first_seen_and_drops_pages_no_longer_extracted(db):
    signature_run.add_signatures(db, [TextItem("old", "https://example.com/zzzzzzzzzz", ARTICLE, 999)],
                                 method="md5")
    save_pages(db, {"old": ARTICLE, "new": ARTICLE, "gone": OTHER})
    first = signature_run.index_signatures(db, method="md5")
    assert (first.added, first.unchanged) == (2, 1)
    assert {r["id"]: r["canonical"] for r in signature_run.iter_signature_duplicates(db, method="md5")} == {
        "old": "old", "new": "old"}  # first seen, though it has more boilerplate
    db.execute("DELETE FROM extractions WHERE page_id = 'gone'")
    db.execute("UPDATE pages SET retired = 1 WHERE id = 'new'")
    second = signature_run.index_signatures(db, method="md5")
    assert (second.pages, second.removed, second.unchanged) == (1, 2, 1)
    assert sig_store.page_ids(db, "md5") == {"old"} and clusters(db, "md5") == set()


def test_a_changed_text_replaces_the_pages_signatures(db):
    signature_run.add_signatures(db, [("a", "u/a", ARTICLE), ("b", "u/b", OTHER)], method="md5")
    result = signature_run.add_signatures(db, [("b", "u/b", ARTICLE), ("a", "u/a", ARTICLE)], method="md5")
    assert (result.added, result.updated, result.unchanged) == (0, 1, 1)
    assert clusters(db, "md5") == {frozenset("ab")}
    assert signature_run.remove_signature_pages(db, ["a", "nope"]) == 1
    assert clusters(db, "md5") == set() and sig_store.stats(db, "md5")["signatures"] == 1


def test_signatures_keep_their_type_in_sqlite(db):
    sig_store.save_model(db, "md5", version=1, params={}, state=None, fitted_pages=0)
    sig_store.add_pages(db, "md5", [sig_store.SignedPage("a", "u", ("0123", "1e5", 2**62))])
    assert sig_store.stored_signatures(db, "md5", ["a"]) == {"a": {"0123", "1e5", 2**62}}


# --- refusals ---------------------------------------------------------------------------------------------------

def test_other_params_are_refused_unless_replaced(db):
    save_pages(db, {"a": ARTICLE, "b": OTHER})
    signature_run.index_signatures(db, method="tf", params={"terms": 3})
    with pytest.raises(SettingsMismatchError, match=r"terms: 3 != 4.*--replace"):
        signature_run.index_signatures(db, method="tf", params={"terms": 4})
    with pytest.raises(SettingsMismatchError, match="terms"):
        signature_run.add_signatures(db, [("c", "u/c", THIRD)], method="tf", params={"terms": 4})
    assert signature_run.index_signatures(db, method="tf").unchanged == 2  # no params: the stored ones
    assert signature_run.index_signatures(db, method="tf", params={"terms": 3}).unchanged == 2
    replaced = signature_run.index_signatures(db, method="tf", params={"terms": 4, "stem": True}, replace=True)
    assert replaced.added == 2
    params = sig_store.load_model(db, "tf").params
    assert params["terms"] == 4 and params["options"]["stem"] is True


def test_a_model_of_another_signature_version_is_refused_for_adding(db):
    signature_run.add_signatures(db, [("a", "u/a", ARTICLE)], method="md5")
    db.execute("UPDATE sig_models SET version = 0 WHERE method = 'md5'")
    with pytest.raises(SettingsMismatchError, match="version 0.*index-signatures"):
        signature_run.add_signatures(db, [("b", "u/b", ARTICLE)], method="md5")


def test_methods_with_collection_statistics_need_an_index_before_adding(db):
    with pytest.raises(StoreError, match="index-signatures --method tfidf"):
        signature_run.add_signatures(db, [("a", "u/a", ARTICLE)], method="tfidf")
    assert sig_store.methods(db) == []


def test_unknown_methods_params_and_missing_indexes_are_refused(db):
    with pytest.raises(InputError, match="descr-words"):
        signature_run.iter_signature_duplicates(db, method="simhash")
    with pytest.raises(StoreError, match="index-signatures --method tf"):
        signature_run.iter_signature_duplicates(db, method="tf")
    with pytest.raises(StoreError, match="extract"):
        signature_run.index_signatures(db, method="tf")
    save_pages(db, {"a": ARTICLE})
    with pytest.raises(InputError, match="has no parameter sentences"):
        signature_run.index_signatures(db, method="tf", params={"sentences": 2})
    with pytest.raises(InputError, match="KEY=VALUE"):
        signature_run.parse_params(["terms"])
    assert signature_run.parse_params(["terms=8", "stem=true", "coverage=[0.3, 0.7]", "x=abc"]) == {
        "terms": 8, "stem": True, "coverage": [0.3, 0.7], "x": "abc"}


# --- components -------------------------------------------------------------------------------------------------

@settings(max_examples=100, deadline=None)
@given(st.lists(st.lists(st.integers(0, 15), min_size=1, max_size=4), max_size=12))
def test_signature_components_are_the_connected_components(buckets):
    neighbours = defaultdict(set)
    for bucket in buckets:
        for x in bucket:
            neighbours[x] |= set(bucket)
    expected, seen = set(), set()
    for start in neighbours:  # breadth-first search from every id not yet reached
        group, todo = set(), [start]
        while todo:
            x = todo.pop()
            if x not in group:
                group.add(x)
                todo.extend(neighbours[x])
        if start not in seen and len(group) > 1:
            expected.add(frozenset(group))
        seen |= group
    assert {frozenset(c) for c in signature_components(buckets)} == expected


# --- the CLI (runs once the commands of /work/notes/cli_sigindex.py are in cli.py) ---------------------------

def _cli_has(name: str) -> bool:
    from cli import app
    return any((c.name or c.callback.__name__.replace("_", "-")) == name for c in app.registered_commands)


needs_cli = pytest.mark.skipif(not _cli_has("index-signatures"), reason="index-signatures is not in cli.py yet")


@needs_cli
def test_cli_index_signatures_then_dups_by_method(path):
    from cli import app
    db = open_db(path)
    save_pages(db, {"a": ARTICLE, "b": ARTICLE, "c": OTHER})
    db.conn.close()
    runner = CliRunner()
    built = runner.invoke(app, ["index-signatures", "--db", str(path), "--method", "tf", "--param", "terms=4",
                                "--json", "-q"])
    assert built.exit_code == 0, built.output
    assert json.loads(built.output)["added"] == 3
    rows = [json.loads(line) for line in runner.invoke(app, ["dups", "--db", str(path), "--method", "tf"]
                                                       ).output.splitlines()]
    assert {r["id"] for r in rows} == {"a", "b"} and {r["canonical"] for r in rows} == {"a"}
    refused = runner.invoke(app, ["index-signatures", "--db", str(path), "-m", "tf", "-p", "terms=5"])
    assert refused.exit_code == 1 and "--replace" in refused.output and "Traceback" not in refused.output


@needs_cli
def test_cli_dups_keeps_the_minhash_default(path):
    from cli import app
    db = open_db(path)
    dedup.index_texts(db, [TextItem("a", "u/a", ARTICLE * 3), TextItem("b", "u/b", ARTICLE * 3 + " more")])
    db.conn.close()
    runner = CliRunner()
    default = runner.invoke(app, ["dups", "--db", str(path)])
    assert default.exit_code == 0 and default.output == runner.invoke(
        app, ["dups", "--db", str(path), "--method", "minhash"]).output
    assert {json.loads(line)["id"] for line in default.output.splitlines()} == {"a", "b"}
    missing = runner.invoke(app, ["dups", "--db", str(path), "--method", "lex-rand"])
    assert missing.exit_code == 1 and "index-signatures" in missing.output
