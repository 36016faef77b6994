"""Fit the single-page classifiers on pages with gold text (pure: pages in, weights out).

A block's label comes from the gold: a block is content when most of its tokens are still unclaimed in the
gold's bag of tokens, read in document order (a token claimed by one block cannot vouch for another).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

import numpy as np

from . import ann
from .ann import Weights, read_weights, save_weights
from .blocks import segment
from .config import EPOCHS, TRAIN_SEED  # in config: the command line shows them without loading numpy
from .errors import InputError
from .evaluation import tokens
from .features import CONTEXT_NAMES, FEATURE_NAMES, Tree, block_features, context_features, line_features, number_tree
from .parse import parse_html
from .types import Page, Segmented

__all__ = ["LabelledPage", "SOURCE_WEIGHTS", "describe_page", "iter_labelled", "label_blocks", "page_source",
           "read_weights", "save_weights", "train_ann", "training_data"]

# --- training settings (the shipped weights were made with these) -------------------------------------------
LINE_HIDDEN = 6  # hidden units of the nine-input line network
AUTO_HIDDEN = 8  # hidden units of each default-classifier network
ENSEMBLE = 3  # networks averaged per stage of the default classifier
FOLDS = 5  # page folds for the out-of-fold scores the second stage and the FDR null are fitted on
AUTO_L2 = 3e-3  # weight decay of the default classifier's networks (its inputs are many, its pages few)
LABEL_SHARE = 0.5  # a block is content when more than this share of its tokens is found in the gold
# Label weight multiplier per page source (the part of a page id before its first "/"): news pages are the most
# varied and the genre the product is judged on first; other genres' long pages would otherwise pull the networks
# toward keeping more. Chosen on news sites held out of the training set (docs/single-page.md).
SOURCE_WEIGHTS: Mapping[str, float] = {"news": 2.0}


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
              folds: int = FOLDS, source_weights: Mapping[str, float] | None = None) -> Weights:
    """Fit every network the single-page methods use on (segmented page, gold text) pairs.

    Steps: label the blocks from the gold; fit the nine-input line network; score each page with
    first-stage networks that did not see it (page folds) and fit the first stage on all pages; fit the
    second stage on the block features plus the out-of-fold first-stage context; keep the out-of-fold
    second-stage scores of boilerplate blocks as the FDR method's null distribution. A page's label weights are
    multiplied by ``source_weights`` of its source (default ``SOURCE_WEIGHTS``; 1 for a source not named).
    """
    source_weights = dict(SOURCE_WEIGHTS if source_weights is None else source_weights)
    pages = [(seg, gold) for seg, gold in pages if seg.blocks]
    described = [_weighted(describe_page(seg, gold), source_weights.get(page_source(seg.page.id), 1.0))
                 for seg, gold in pages]
    if len(described) < folds:
        raise InputError(f"training needs at least {folds} pages with text blocks and gold text, got "
                         f"{len(described)}; add labelled pages (JSON Lines with url, html, gold)")
    fold_of = np.random.default_rng(seed).permutation(len(described)) % folds
    line = _fit_stage(described, [p.lines for p in described], hidden=hidden, epochs=epochs, seeds=[seed],
                      l2=ann.L2_PENALTY)[0]
    settings = dict(hidden=auto_hidden, epochs=epochs, seeds=[seed + k for k in range(ensemble)], l2=AUTO_L2)
    first_oof = _out_of_fold(described, [p.blocks for p in described], fold_of, **settings)
    second_inputs = [np.hstack([p.blocks, context_features(p.seg, p.tree, scores)])
                     for p, scores in zip(described, first_oof)]
    second_oof = _out_of_fold(described, second_inputs, fold_of, **settings)
    labels = np.concatenate([p.labels for p in described])
    null = np.sort(np.concatenate(second_oof)[labels == 0])
    info = json.dumps({"seed": seed, "hidden": hidden, "auto_hidden": auto_hidden, "epochs": epochs,
                       "ensemble": ensemble, "folds": folds, "pages": len(described),
                       "source_weights": dict(sorted(source_weights.items())),
                       "blocks": int(len(labels)), "content_blocks": int(labels.sum()),
                       **training_data(pages)}, sort_keys=True)
    return Weights(line=line, first=tuple(_fit_stage(described, [p.blocks for p in described], **settings)),
                   second=tuple(_fit_stage(described, second_inputs, **settings)), null_scores=null,
                   features=FEATURE_NAMES + CONTEXT_NAMES, info=info)


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


def _fit_stage(pages: list[LabelledPage], inputs: list[np.ndarray], *, hidden: int, epochs: int,
               seeds: list[int], l2: float) -> list[ann.Network]:
    stacked = np.vstack(inputs)
    labels = np.concatenate([p.labels for p in pages])
    weights = np.concatenate([p.weights for p in pages])
    return [ann.fit_network(stacked, labels, weights=weights, hidden=hidden, epochs=epochs, seed=s, l2=l2)
            for s in seeds]


def _out_of_fold(pages: list[LabelledPage], inputs: list[np.ndarray], fold_of: np.ndarray,
                 **settings) -> list[np.ndarray]:
    """Each page's ensemble score from networks fitted on the other folds."""
    scores: list[np.ndarray] = [np.zeros(0)] * len(pages)
    for fold in range(int(fold_of.max()) + 1):
        train = [i for i in range(len(pages)) if fold_of[i] != fold]
        networks = _fit_stage([pages[i] for i in train], [inputs[i] for i in train], **settings)
        for i in np.flatnonzero(fold_of == fold):
            scores[i] = ann.predict_mean(networks, inputs[i])
    return scores
