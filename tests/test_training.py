"""The genre-mixed training set (bench/build_training_set.py), training's reproducibility through the CLI, and
the shipped weights' recorded provenance."""

import dataclasses
import gzip
import hashlib
import json
import re
import sys

import pytest
from typer.testing import CliRunner

from cli import app
import numpy as np

from templater import fallback, training
from templater.evaluation import tokens

from conftest import ROOT
from sitegen import GENRES, VARIANTS, article_html, genre_page

sys.path.insert(0, str(ROOT / "bench"))
import build_training_set  # noqa: E402

runner = CliRunner()



def small_corpus(tmp_path, pages=6):
    """A stand-in for the dev corpus: scrapinghub/pages.jsonl.gz made of generated news articles."""
    folder = tmp_path / "corpus" / "scrapinghub"
    folder.mkdir(parents=True)
    with gzip.open(folder / "pages.jsonl.gz", "wt", encoding="utf-8") as handle:
        for number in range(pages):
            html, text = article_html(number)
            handle.write(json.dumps({"id": f"a{number}", "url": f"https://news.example.com/{number}",
                                     "site": "news.example.com", "html": html, "gold": text}) + "\n")
    return tmp_path / "corpus"


def build(tmp_path, name, corpus, generated=2):
    out = tmp_path / name
    assert build_training_set.main([str(out), "--corpus", str(corpus), "--no-docs",
                                    "--generated", str(generated)]) == 0
    return out


def read(path):
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


def test_builder_writes_genres_split_by_whole_sites_and_the_same_bytes_twice(tmp_path):
    corpus = small_corpus(tmp_path)
    first, again = build(tmp_path, "one", corpus), build(tmp_path, "two", corpus)
    for name in ("train.jsonl.gz", "heldout.jsonl.gz", "manifest.json"):
        assert (first / name).read_bytes() == (again / name).read_bytes(), name
    train, heldout = read(first / "train.jsonl.gz"), read(first / "heldout.jsonl.gz")
    assert {r["genre"] for r in train} == {"news", *GENRES}
    assert {r["genre"] for r in heldout} == set(GENRES)
    assert len(train) == 6 + len(GENRES) * 2 * 2 and len(heldout) == len(GENRES) * 2
    assert not {r["site"] for r in train} & {r["site"] for r in heldout}  # whole sites are held out
    assert all(r["id"].split("/")[0] == r["genre"] for r in train + heldout)
    manifest = json.loads((first / "manifest.json").read_text())
    assert manifest["pages"] == {"train": len(train), "heldout": len(heldout)}
    assert all(site["licence"] and site["source"] for site in manifest["sites"])


@pytest.mark.parametrize("genre", GENRES)
def test_generated_gold_is_text_of_the_page_and_leaves_its_chrome_out(genre):
    for variant in range(VARIANTS):
        page = genre_page(genre, variant, 3)
        assert page == genre_page(genre, variant, 3)  # the same arguments, the same page
        text = set(tokens(re.sub(r"<[^>]+>", " ", page["html"])))
        gold = tokens(page["gold"])
        assert len(gold) > 50 and set(gold) <= text
        assert not {"cookies", "subscribe", "rights"} & set(gold)


def test_gold_of_a_documentation_page_is_its_content_container():
    html = ("<html><head><title>Options</title></head><body><div class='sphinxsidebar'><ul><li><a href='a'>Intro"
            "</a></li><li><a href='b'>Options</a></li></ul></div><div class='body' role='main'><h1>Options</h1>"
            "<p>Every option of the tool.</p><div class='sidemenu'>Menu of the page</div><pre>tool --all</pre>"
            "<table><tr><td>-v</td><td>verbose</td></tr></table></div><div class='footer'>Built with Sphinx"
            "</div></body></html>")
    gold = build_training_set.container_text(html, "div.body", "div.sidemenu", "https://docs.example/options")
    assert gold.splitlines() == ["Options", "Every option of the tool.", "tool --all", "-v", "verbose"]


def test_builder_never_uses_the_reserved_documentation_sets():
    assert not {site.package for site in build_training_set.DOC_SITES} & build_training_set.RESERVED
    assert all(site.split in ("train", "heldout") and site.licence for site in build_training_set.DOC_SITES)


def test_train_command_gives_the_same_bytes_from_the_same_set(tmp_path):
    data = build(tmp_path, "set", small_corpus(tmp_path), generated=1) / "train.jsonl.gz"
    outputs = []
    for name, jobs in (("a.npz", "1"), ("b.npz", "3")):  # fits in worker processes: the same bytes
        result = runner.invoke(app, ["train", str(data), "--output", str(tmp_path / name), "--epochs", "20", "-q",
                                     "--jobs", jobs])
        assert result.exit_code == 0, result.output
        outputs.append((tmp_path / name).read_bytes())
    assert outputs[0] == outputs[1]
    info = json.loads(fallback.load_weights(tmp_path / "a.npz").info)
    assert info["sources"] == {"news": 6, "forum": 2, "product": 2, "encyclopedia": 2}
    assert info["pages"] == 12 and info["epochs"] == 20
    assert info["expert"]["pages"] == 6  # news with other genres: a news expert beside
    assert len(fallback.load_weights(tmp_path / "a.npz").expert_second) == 3
    result = runner.invoke(app, ["train", str(data), "--output", str(tmp_path / "c.npz"), "--epochs", "20", "-q",
                                 "--no-expert"])
    assert result.exit_code == 0, result.output
    assert not fallback.load_weights(tmp_path / "c.npz").expert_first
    records = read(data)
    expected = hashlib.sha256()
    for record in records:
        for part in (record["id"], record["url"], record["html"], record["gold"]):
            expected.update(part.encode("utf-8") + b"\0")
    assert info["data_sha256"] == expected.hexdigest()


def test_a_mixture_adds_an_expert_fitted_on_the_news_pages_alone(tmp_path):
    pages = list(training.iter_labelled(read(build(tmp_path, "set", small_corpus(tmp_path), generated=1)
                                              / "train.jsonl.gz")))
    news = [page for page in pages if page[0].page.id.startswith("news/")]
    mixture = training.train_mixture(pages, epochs=5)
    plain, expert = training.train_ann(pages, epochs=5), training.train_ann(news, epochs=5)
    # the stages fitted on every page are train_ann's, the expert is train_ann on the news pages alone
    for ours, theirs in ((mixture.first, plain.first), (mixture.second, plain.second),
                         (mixture.expert_first, expert.first), (mixture.expert_second, expert.second)):
        assert len(ours) == len(theirs)
        assert all(np.array_equal(a.hidden_weights, b.hidden_weights) for a, b in zip(ours, theirs))
    # the FDR null: every boilerplate block once, scored as the classifier scores (the mean of both pairs), not
    # by the pair fitted on every page alone
    assert len(mixture.null_scores) == len(plain.null_scores)
    assert not np.array_equal(mixture.null_scores, plain.null_scores)
    assert np.all(np.diff(mixture.null_scores) >= 0)
    recorded = json.loads(mixture.info)
    assert recorded["pages"] == len(pages) and recorded["expert"]["source"] == "news"
    assert recorded["expert"]["pages"] == len(news) == 6
    assert recorded["expert"]["data_sha256"] == json.loads(expert.info)["data_sha256"]
    assert not training.train_mixture(news, epochs=5).expert_first  # one source: no expert


def test_the_mixtures_null_scores_are_the_mean_of_both_pairs_on_pages_they_did_not_see(tmp_path):
    pages = list(training.iter_labelled(read(build(tmp_path, "set", small_corpus(tmp_path), generated=1)
                                              / "train.jsonl.gz")))
    news = [page for page in pages if page[0].page.id.startswith("news/")]
    settings = dict(seed=7, hidden=4, auto_hidden=4, epochs=5, ensemble=2, folds=3, source_weights=None, jobs=1)
    mixed, expert = training._train(pages, **settings), training._train(news, **settings)
    own = dict(zip([p.seg.page.id for p in expert.pages], expert.held_out))
    expected = []
    for page, held_out in zip(mixed.pages, mixed.held_out):
        theirs = own.get(page.seg.page.id)  # the expert out of fold on the news pages, fitted on them ...
        if theirs is None:  # ... and as the classifier runs it on the pages it never saw
            theirs = fallback.stage_scores(page.seg, page.tree, page.blocks, expert.weights.first,
                                           expert.weights.second)
        expected.append(((held_out + theirs) / 2)[page.labels == 0])
    assert np.array_equal(training.mixture_null(mixed, expert, "news"), np.sort(np.concatenate(expected)))
    unseen = next(p for p in mixed.pages if not p.seg.page.id.startswith("news/"))
    assert np.allclose(fallback.stage_scores(unseen.seg, unseen.tree, unseen.blocks, expert.weights.first,
                                             expert.weights.second),
                       fallback.score_blocks(unseen.seg, dataclasses.replace(expert.weights, expert_first=())))


def test_a_different_seed_gives_different_weights(tmp_path):
    pages = list(training.iter_labelled(read(build(tmp_path, "set", small_corpus(tmp_path), generated=1)
                                              / "train.jsonl.gz")))
    first = training.train_ann(pages, epochs=5, seed=1)
    other = training.train_ann(pages, epochs=5, seed=2)
    assert not (first.line.hidden_weights == other.line.hidden_weights).all()
    assert json.loads(first.info)["data_sha256"] == json.loads(other.info)["data_sha256"]


def test_source_weights_scale_a_source_s_pages_and_are_recorded(tmp_path):
    pages = list(training.iter_labelled(read(build(tmp_path, "set", small_corpus(tmp_path), generated=1)
                                              / "train.jsonl.gz")))
    assert training.page_source("news/a1") == "news" and training.page_source("a1") == "(no prefix)"
    plain = training.train_ann(pages, epochs=5, source_weights={})
    default = training.train_ann(pages, epochs=5)
    heavier = training.train_ann(pages, epochs=5, source_weights={"news": 4.0})
    assert json.loads(default.info)["source_weights"] == dict(training.SOURCE_WEIGHTS)
    assert json.loads(heavier.info)["source_weights"] == {"news": 4.0}
    assert json.loads(plain.info)["source_weights"] == {}
    assert not (plain.first[0].hidden_weights == heavier.first[0].hidden_weights).all()
    # a source no page has changes nothing
    again = training.train_ann(pages, epochs=5, source_weights={"docs": 3.0})
    assert (again.first[0].hidden_weights == plain.first[0].hidden_weights).all()
