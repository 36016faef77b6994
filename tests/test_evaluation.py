"""Pair precision/recall/F1 against a gold clustering, and the extraction metric (the same figures as score.py)."""

import json
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from templater.evaluation import cluster_pairs, score_extraction, score_pairs, score_text, tokens

from conftest import SHARED
from sitegen import store_extracted


def test_cluster_pairs_are_every_pair_within_a_cluster():
    clusters = {"a": 1, "b": 1, "c": 1, "d": "x", "e": "x", "f": 9}
    assert cluster_pairs(clusters) == {("a", "b"), ("a", "c"), ("b", "c"), ("d", "e")}


def test_score_pairs_by_hand():
    gold = {("a", "b"), ("a", "c"), ("b", "c"), ("d", "e")}
    predicted = {("b", "a"), ("c", "b"), ("a", "z")}  # order inside a pair does not matter
    score = score_pairs(predicted, gold)
    assert (score.true_pairs, score.predicted_pairs, score.gold_pairs) == (2, 3, 4)
    assert score.precision == pytest.approx(2 / 3)
    assert score.recall == pytest.approx(2 / 4)
    assert score.f1 == pytest.approx(2 * (2 / 3) * 0.5 / (2 / 3 + 0.5))


def test_score_pairs_edge_cases():
    nothing = score_pairs(set(), {("a", "b")})
    assert (nothing.precision, nothing.recall, nothing.f1) == (1.0, 0.0, 0.0)
    wrong = score_pairs({("a", "c")}, {("a", "b")})
    assert (wrong.precision, wrong.recall, wrong.f1) == (0.0, 0.0, 0.0)


pairs = st.sets(st.tuples(st.integers(0, 6), st.integers(0, 6)).filter(lambda p: p[0] != p[1]), max_size=15)


@given(pairs, pairs)
def test_pair_scores_are_shares(predicted, gold):
    score = score_pairs(predicted, gold)
    assert 0 <= score.precision <= 1 and 0 <= score.recall <= 1 and 0 <= score.f1 <= 1
    if score.true_pairs:
        assert min(score.precision, score.recall) - 1e-12 <= score.f1 <= max(score.precision, score.recall) + 1e-12
    else:
        assert score.f1 == 0.0
    assert score_pairs(gold, gold).f1 == (1.0 if gold else 0.0)


def test_tokens_split_words_and_cjk_characters():
    assert tokens("Hello, World_2 x") == ["hello", "world", "2", "x"]
    assert tokens("東京は大きい") == ["東", "京", "は", "大", "き", "い"]
    assert tokens(None) == []


def test_score_text_on_token_bags():
    assert score_text("a b c c", "a c d") == pytest.approx((2 / 4, 2 / 3, 2 * 0.5 * (2 / 3) / (0.5 + 2 / 3)))
    assert score_text("", "a b") == (1.0, 0.0, 0.0)
    assert score_text("x", "a b") == (0.0, 0.0, 0.0)


def test_score_extraction_counts_missing_pages_and_skips_pages_without_gold():
    gold = [("1", "a b c"), ("2", "d e"), ("3", None), ("4", "  ")]
    score = score_extraction(gold, {"1": "a b c"})
    assert (score.pages, score.missing) == (2, 1)
    assert (score.precision, score.recall, score.f1, score.f1_median) == (1.0, 0.5, 0.5, 0.5)


GOLD = [
    {"id": "1", "site": "a.com", "gold": "The quick brown fox jumps.\nOver the lazy dog."},
    {"id": "2", "site": "a.com", "gold": "東京は大きい 都市 です"},
    {"id": "3", "site": "b.com", "gold": None},
    {"id": "4", "site": "b.com", "gold": "Nothing was predicted for this page"},
    {"id": 5, "site": "c.com", "gold": "Snake_case words and numbers 3.14 count"},
    {"id": "6", "site": "c.com", "gold": "Empty prediction here"},
]
PRED = [
    {"id": "1", "text": "Menu Home The quick brown fox jumps over the dog"},
    {"id": "2", "text": "東京は 都市"},
    {"id": "5", "text": "snake case words 3 14 count count"},
    {"id": "6", "text": ""},
    {"id": "7", "text": "a page without gold"},
]


def test_extraction_metric_gives_the_figures_of_score_py(tmp_path):
    script = SHARED / "eval" / "score.py"
    if not script.is_file():
        pytest.skip("../shared/eval/score.py is absent (a user's clone has none)")
    gold_file, pred_file = tmp_path / "gold.jsonl", tmp_path / "pred.jsonl"
    gold_file.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in GOLD), encoding="utf-8")
    pred_file.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in PRED), encoding="utf-8")
    run = subprocess.run([sys.executable, str(script), str(gold_file), str(pred_file), "--json"],
                         capture_output=True, text=True, check=True)
    theirs = json.loads(run.stdout[: run.stdout.rindex("}") + 1])
    ours = score_extraction([(str(r["id"]), r["gold"]) for r in GOLD], {str(r["id"]): r["text"] for r in PRED})
    assert ours.pages == theirs["pages"] == 5
    assert ours.missing == theirs["missing"] == 1
    for key in ("precision", "recall", "f1", "f1_median"):
        assert getattr(ours, key) == pytest.approx(theirs[key], abs=1e-12), key


# --- running the methods, and the pipeline-layer functions ---------------------------------------------------

import random  # noqa: E402


from store import pages as page_store  # noqa: E402
from store.db import open_db  # noqa: E402

from templater.errors import InputError, StoreError  # noqa: E402
from templater.evaluation import DEDUP_METHODS, MINHASH, find_pairs  # noqa: E402
from templater.evaluation_run import evaluate_dedup, evaluate_extract, read_truth  # noqa: E402

VOCAB = [f"word{i}" for i in range(2000)]


def open_store(path):
    db = open_db(path)
    page_store.ensure_schema(db)
    return db


def article(seed: int, words: int = 300) -> str:
    rng = random.Random(seed)
    sentences = [" ".join(rng.choice(VOCAB) for _ in range(rng.randint(6, 20))).capitalize() + "."
                 for _ in range(words // 12)]
    return "\n".join(" ".join(sentences[i:i + 3]) for i in range(0, len(sentences), 3))


def test_minhash_lsh_pairs_a_near_copy_and_not_unrelated_texts():
    base = article(1)
    texts = [base, base.replace(base.split()[9], "changed", 1) + " Appended words here.", article(2), article(3), ""]
    found = find_pairs(MINHASH, ["a", "b", "c", "d", "e"], texts)
    assert found.pairs == {("a", "b")}
    assert found.judged == 4  # the empty text has no shingle


def test_every_method_finds_exact_copies_and_refuses_unknown_names():
    texts = [article(seed) for seed in range(8)] + [article(5)]
    ids = [f"p{i}" for i in range(9)]
    for method in DEDUP_METHODS:
        assert ("p5", "p8") in find_pairs(method, ids, texts).pairs, method
    with pytest.raises(InputError, match="simhash"):
        find_pairs("simhash", ids, texts)


def make_db(path, texts: dict[str, str]):
    db = open_store(path)
    store_extracted(db, texts)
    return db


def test_evaluate_dedup_scores_each_method_on_the_database_texts(tmp_path):
    base = article(10)
    edited = base.replace(base.split()[5], "changed", 1)
    db = make_db(tmp_path / "t.db", {"a": base, "b": base, "c": edited, "d": article(11), "e": article(12)})
    truth = tmp_path / "truth.jsonl"
    truth.write_text('{"id": "a", "cluster": 1}\n{"id": "b", "cluster": 1}\n{"id": "c", "cluster": 1}\n'
                     '{"id": "zz", "cluster": 2}\n', encoding="utf-8")
    report = evaluate_dedup(db, truth, methods=["md5", MINHASH])
    assert (report.pages, report.truth_pages, report.unknown) == (5, 4, 1)
    md5, minhash = report.runs
    assert md5.score.true_pairs == 1 and md5.score.precision == 1.0 and md5.score.recall == pytest.approx(1 / 3)
    assert minhash.score.f1 == 1.0
    assert set(md5.to_json()) >= {"method", "precision", "recall", "f1", "seconds", "pairs"}
    with pytest.raises(InputError, match="simhash"):
        evaluate_dedup(db, truth, methods=["simhash"])


def test_evaluate_dedup_explains_bad_inputs(tmp_path):
    truth = tmp_path / "truth.jsonl"
    truth.write_text('{"id": "a"}\n', encoding="utf-8")
    with pytest.raises(InputError, match="cluster"):
        read_truth(truth)
    truth.write_text("not json\n", encoding="utf-8")
    with pytest.raises(InputError, match=":1: not JSON"):
        read_truth(truth)
    truth.write_text('{"id": "a", "cluster": 1}\n', encoding="utf-8")
    with pytest.raises(StoreError, match="templater extract"):
        evaluate_dedup(open_store(tmp_path / "empty.db"), truth)


def test_evaluate_extract_reads_gold_and_predictions(tmp_path):
    gold_file, pred_file = tmp_path / "gold.jsonl", tmp_path / "pred.jsonl"
    gold_file.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in GOLD), encoding="utf-8")
    pred_file.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in PRED), encoding="utf-8")
    ours = score_extraction([(str(r["id"]), r["gold"]) for r in GOLD], {str(r["id"]): r["text"] for r in PRED})
    assert evaluate_extract(gold_file, pred_file) == ours
    with pytest.raises(InputError, match="no page with gold"):
        evaluate_extract(pred_file, pred_file)
