"""Fit the single-page classifiers on pages with gold text (pure: pages in, weights out).

A block's label comes from the gold: a block is content when most of its tokens are still unclaimed in the
gold's bag of tokens, read in document order (a token claimed by one block cannot vouch for another).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import multiprocessing
import os
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

import numpy as np

from . import ann, fallback
from .ann import Weights, read_weights, save_weights
from .blocks import segment
from .config import (AUTO_HIDDEN, AUTO_L2, ENSEMBLE, EPOCHS, EXPERT_SOURCE, FOLDS, LABEL_SHARE, LINE_HIDDEN,
                     SOURCE_WEIGHTS, TRAIN_SEED)
from .errors import InputError
from .evaluation import tokens
from .features import CONTEXT_NAMES, FEATURE_NAMES, Tree, block_features, context_features, line_features, number_tree
from .parse import parse_html
from .datatypes import Page, Segmented

__all__ = ["LabelledPage", "SOURCE_WEIGHTS", "describe_page", "iter_labelled", "label_blocks", "page_source",
           "read_weights", "save_weights", "train_ann", "train_mixture", "training_data", "with_expert"]


@dataclass(frozen=True, slots=True)
class LabelledPage:
    """One training page, described once: block features, line features, labels and label weights."""

    seg: Segmented
    tree: Tree
    blocks: np.ndarray  # block_features
    lines: np.ndarray  # line_features
    labels: np.ndarray
    weights: np.ndarray  # log1p of each block's tokens: long blocks weigh more, as in the token metric


def iter_labelled(records: Iterable[Mapping]) -> Iterator[tuple[Segmented, str]]:
    """(segmented page, gold text) per record with ``html`` and non-blank ``gold`` (``url`` and ``id``
    optional); a record without gold, or whose HTML does not parse, is passed over."""
    for number, record in enumerate(records):
        gold = record.get("gold") or ""
        root = parse_html(record.get("html") or "") if gold.strip() else None
        if root is None:
            continue
        url = record.get("url") or ""
        yield segment(root, Page(str(record.get("id", number)), url, record["html"])), gold


def label_blocks(seg: Segmented, gold: str) -> np.ndarray:
    """1.0 for blocks whose tokens are mostly in the gold, else 0.0, in document order."""
    remaining = Counter(tokens(gold))
    labels = np.zeros(len(seg.blocks))
    for row, block in enumerate(seg.blocks):
        words = Counter(tokens(block.text))
        total = sum(words.values())
        if total and sum((words & remaining).values()) > LABEL_SHARE * total:
            labels[row] = 1.0
            remaining -= words
    return labels


def describe_page(seg: Segmented, gold: str) -> LabelledPage:
    """A training page's features, labels and label weights, computed once."""
    tree = number_tree(seg)
    counts = np.fromiter((len(tokens(b.text)) for b in seg.blocks), dtype=np.float64, count=len(seg.blocks))
    return LabelledPage(seg=seg, tree=tree, blocks=block_features(seg, tree), lines=line_features(seg),
                        labels=label_blocks(seg, gold), weights=np.log1p(counts))


def train_ann(pages: Iterable[tuple[Segmented, str]], *, seed: int = TRAIN_SEED, hidden: int = LINE_HIDDEN,
              auto_hidden: int = AUTO_HIDDEN, epochs: int = EPOCHS, ensemble: int = ENSEMBLE,
              folds: int = FOLDS, source_weights: Mapping[str, float] | None = None, jobs: int = 1) -> Weights:
    """Fit every network the single-page methods use on (segmented page, gold text) pairs.

    Steps: label the blocks from the gold; fit the nine-input line network; score each page with
    first-stage networks that did not see it (page folds) and fit the first stage on all pages; fit the
    second stage on the block features plus the out-of-fold first-stage context; keep the out-of-fold
    second-stage scores of boilerplate blocks as the FDR method's null distribution. A page's label weights are
    multiplied by ``source_weights`` of its source (default ``SOURCE_WEIGHTS``; 1 for a source not named).
    Networks are fitted in ``jobs`` worker processes (the same weights, byte for byte, for any number).
    """
    return _train(pages, seed=seed, hidden=hidden, auto_hidden=auto_hidden, epochs=epochs, ensemble=ensemble,
                  folds=folds, source_weights=source_weights, jobs=jobs).weights


@dataclass(frozen=True, slots=True)
class _Trained:
    """train_ann's weights with the pages they were fitted on, described, and each page's out-of-fold score."""

    weights: Weights
    pages: list[LabelledPage]
    held_out: list[np.ndarray]  # per page: the second stage's scores from networks fitted on the other folds


def _train(pages: Iterable[tuple[Segmented, str]], *, seed: int, hidden: int, auto_hidden: int, epochs: int,
           ensemble: int, folds: int, source_weights: Mapping[str, float] | None, jobs: int) -> _Trained:
    source_weights = dict(SOURCE_WEIGHTS if source_weights is None else source_weights)
    pages = [(seg, gold) for seg, gold in pages if seg.blocks]
    described = [_weighted(describe_page(seg, gold), source_weights.get(page_source(seg.page.id), 1.0))
                 for seg, gold in pages]
    if len(described) < folds:
        raise InputError(f"training needs at least {folds} pages with text blocks and gold text, got "
                         f"{len(described)}; add labelled pages (JSON Lines with url, html, gold)")
    fold_of = np.random.default_rng(seed).permutation(len(described)) % folds
    settings = dict(hidden=auto_hidden, epochs=epochs, seeds=[seed + k for k in range(ensemble)], l2=AUTO_L2)
    with _Fitter(jobs) as fitter:
        # first round: the line network, the first stage on all pages and out of fold (independent fits)
        line = fitter.submit(described, [p.lines for p in described], hidden=hidden, epochs=epochs, seeds=[seed],
                             l2=ann.L2_PENALTY)
        first = fitter.submit(described, [p.blocks for p in described], **settings)
        first_oof = _out_of_fold(fitter, described, [p.blocks for p in described], fold_of, **settings)
        second_inputs = [np.hstack([p.blocks, context_features(p.seg, p.tree, scores)])
                         for p, scores in zip(described, first_oof)]
        second = fitter.submit(described, second_inputs, **settings)
        second_oof = _out_of_fold(fitter, described, second_inputs, fold_of, **settings)
        line, first, second = line()[0], tuple(first()), tuple(second())
    labels = np.concatenate([p.labels for p in described])
    null = np.sort(np.concatenate(second_oof)[labels == 0])
    info = json.dumps({"seed": seed, "hidden": hidden, "auto_hidden": auto_hidden, "epochs": epochs,
                       "ensemble": ensemble, "folds": folds, "pages": len(described),
                       "source_weights": dict(sorted(source_weights.items())),
                       "blocks": int(len(labels)), "content_blocks": int(labels.sum()),
                       **training_data(pages)}, sort_keys=True)
    return _Trained(Weights(line=line, first=first, second=second, null_scores=null,
                            features=FEATURE_NAMES + CONTEXT_NAMES, info=info), described, second_oof)


def train_mixture(pages: Iterable[tuple[Segmented, str]], *, expert_source: str = EXPERT_SOURCE,
                  seed: int = TRAIN_SEED, epochs: int = EPOCHS, jobs: int = 1, **settings) -> Weights:
    """train_ann on every page, plus an expert where the pages mix ``expert_source`` with other sources: train_ann on
    the ``expert_source`` pages alone (in their order, the same settings). The default classifier then scores a
    block with the mean of both (fallback), and the FDR method's null scores are that mean's (mixture_null); the
    line network is the one fitted on every page. With pages of one source only (or too few of ``expert_source``
    for the folds), this is train_ann."""
    pages = [(seg, gold) for seg, gold in pages if seg.blocks]
    chosen = [page for page in pages if page_source(page[0].page.id) == expert_source]
    settings = {"hidden": LINE_HIDDEN, "auto_hidden": AUTO_HIDDEN, "ensemble": ENSEMBLE, "folds": FOLDS,
                "source_weights": None, **settings}
    mixed = _train(pages, seed=seed, epochs=epochs, jobs=jobs, **settings)
    if len(chosen) < json.loads(mixed.weights.info)["folds"] or len(chosen) == len(pages):
        return mixed.weights
    expert = _train(chosen, seed=seed, epochs=epochs, jobs=jobs, **settings)
    return dataclasses.replace(with_expert(mixed.weights, expert.weights, expert_source),
                               null_scores=mixture_null(mixed, expert, expert_source))


def mixture_null(mixed: _Trained, expert: _Trained, expert_source: str) -> np.ndarray:
    """The FDR method's null scores as the default classifier scores with an expert (fallback.score_blocks): the
    mean of both pairs' scores of each boilerplate block of the training pages, each pair's from networks that
    never saw the block's page: the pair fitted on every page out of fold; the expert out of fold on its
    source's pages and with its own stages on the other pages (which it was not fitted on)."""
    own = iter(expert.held_out)
    scores = []
    for page, held_out in zip(mixed.pages, mixed.held_out):
        if page_source(page.seg.page.id) == expert_source:
            theirs = next(own)
        else:
            theirs = fallback.stage_scores(page.seg, page.tree, page.blocks, expert.weights.first,
                                           expert.weights.second)
        scores.append((held_out + theirs) / 2)
    labels = np.concatenate([p.labels for p in mixed.pages])
    return np.sort(np.concatenate(scores)[labels == 0])


def with_expert(mixed: Weights, expert: Weights, expert_source: str = EXPERT_SOURCE) -> Weights:
    """``mixed`` (train_ann on every page) with the stages of ``expert`` (train_ann on the ``expert_source`` pages)
    beside its own; the expert's settings, pages and data digest recorded in the info."""
    expert_info = json.loads(expert.info)
    info = {**json.loads(mixed.info), "expert": {"source": expert_source, **{
        key: expert_info[key] for key in ("pages", "blocks", "content_blocks", "data_sha256", "source_weights")}}}
    return dataclasses.replace(mixed, info=json.dumps(info, sort_keys=True), expert_first=expert.first,
                               expert_second=expert.second)


def training_data(pages: list[tuple[Segmented, str]]) -> dict:
    """What the weights were trained on, for their recorded provenance: the SHA-256 of the pages (id, URL, HTML
    and gold of each, in order) and the number of pages per source, read as the part of each page id before
    its first ``/`` (bench/build_training_set.py names pages ``news/...``, ``docs/...``, ``forum/...``)."""
    digest = hashlib.sha256()
    for seg, gold in pages:
        for part in (seg.page.id, seg.page.url, seg.page.html, gold):
            value = part if isinstance(part, str) else bytes(part).decode("utf-8", "replace")
            digest.update(value.encode("utf-8", "surrogatepass"))
            digest.update(b"\0")
    sources = Counter(page_source(seg.page.id) for seg, _ in pages)
    return {"data_sha256": digest.hexdigest(), "sources": dict(sorted(sources.items()))}


def page_source(page_id: str) -> str:
    """A page's source: its id's part before the first ``/`` (``(no prefix)`` without one)."""
    return page_id.split("/", 1)[0] if "/" in page_id else "(no prefix)"


def _weighted(page: LabelledPage, factor: float) -> LabelledPage:
    return page if factor == 1.0 else dataclasses.replace(page, weights=page.weights * factor)


class _Fitter:
    """Fits networks in ``jobs`` worker processes started with one BLAS thread each: a fit's floating-point sums
    then do not depend on the machine's cores, and each fit is seeded and sees the same arrays, so the weights
    are the same bytes for any number of jobs and cores (on the same numpy build and CPU family)."""

    def __init__(self, jobs: int):
        self.saved = {name: os.environ.get(name) for name in _THREAD_VARIABLES}
        os.environ.update({name: "1" for name in _THREAD_VARIABLES})  # read by the workers as they start
        self.pool = ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn"))

    def __enter__(self) -> _Fitter:
        return self

    def __exit__(self, *exc) -> None:
        self.pool.shutdown(cancel_futures=True)
        for name, value in self.saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value

    def submit(self, pages: list[LabelledPage], inputs: list[np.ndarray], *, hidden: int, epochs: int,
               seeds: list[int], l2: float, score: np.ndarray | None = None) -> Callable[[], list]:
        """Start fitting one network per seed on the pages' stacked inputs; returns a function that waits for
        them: the networks, or with ``score`` the ensemble's mean probability on those inputs."""
        stacked = np.vstack(inputs)
        labels = np.concatenate([p.labels for p in pages])
        weights = np.concatenate([p.weights for p in pages])
        futures = [self.pool.submit(_fit, (stacked, labels, weights, hidden, epochs, s, l2, score)) for s in seeds]
        if score is None:
            return lambda: [future.result() for future in futures]
        return lambda: sum(future.result() for future in futures) / len(futures)


_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def _fit(task):
    inputs, labels, weights, hidden, epochs, seed, l2, score = task
    network = ann.fit_network(inputs, labels, weights=weights, hidden=hidden, epochs=epochs, seed=seed, l2=l2)
    return network if score is None else ann.predict(network, score)


def _out_of_fold(fitter: _Fitter, pages: list[LabelledPage], inputs: list[np.ndarray], fold_of: np.ndarray,
                 **settings) -> list[np.ndarray]:
    """Each page's ensemble score from networks fitted on the other folds (scored in the worker, by numpy)."""
    scores: list[np.ndarray] = [np.zeros(0)] * len(pages)
    folds = range(int(fold_of.max()) + 1)
    pending = []
    for fold in folds:
        train, held = np.flatnonzero(fold_of != fold), np.flatnonzero(fold_of == fold)
        pending.append((held, fitter.submit([pages[i] for i in train], [inputs[i] for i in train], **settings,
                                            score=np.vstack([inputs[i] for i in held]))))
    for held, result in pending:
        fold_scores = result()
        ends = np.cumsum([len(inputs[i]) for i in held])
        for i, part in zip(held, np.split(fold_scores, ends[:-1])):
            scores[i] = part
    return scores
