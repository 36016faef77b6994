"""Measures: duplicate pairs against a gold clustering, and extracted text against gold text.

Pure functions over values already read; the files and the database are read by ``evaluation_run``.

Duplicate pairs: a gold clustering maps page ids to cluster labels; every two pages of one cluster are a gold pair.
A predicted pair is true when both pages sit in the same gold cluster, so a pair that touches a page outside the
clustering is false. Pairs are unordered: ``(a, b)`` with ``a < b``.

Duplicate methods: ``find_pairs`` runs one method over a collection of texts: the seven signature methods of
``templater.signatures`` (fitted on the collection itself) or "minhash-lsh", the near-duplicate index's own
MinHash + LSH banding with candidates kept when their Jaccard (exact or estimated, as the settings say) reaches
the settings' threshold.

Extraction: bag-of-tokens precision, recall and F1 per page, macro-averaged over pages, the measure of
../shared/eval/score.py (tokens are lower-cased Unicode word runs, every CJK character a token of its own; an
empty extraction scores precision 1, recall 0, F1 0; a gold page with no prediction counts as empty; pages whose
gold is null or blank are not scored; a prediction's ``title`` is scored with its text, ``scored_text``).
"""

from __future__ import annotations

import re
import statistics
from collections import Counter, defaultdict
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np

from .errors import InputError
from .shingles import (ShingleSettings, band_keys, comparable_set, iter_batches, set_similarity, shingle_hashes,
                       sign_shingles)
from .signatures import METHODS, make_method, pairs_from_signatures

Pair = tuple[Hashable, Hashable]
MINHASH = "minhash-lsh"
DEDUP_METHODS = (*METHODS, MINHASH)

GOLD_WITHOUT_HEADLINE = frozenset({"scrapinghub"})  # datasets whose gold is the article body alone (as score.py)
CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")
WORD = re.compile(r"[^\W_]+")


@dataclass(frozen=True, slots=True)
class PairScore:
    """Precision, recall and F1 of predicted duplicate pairs; counts of pairs behind them.

    With no predicted pair precision is 1 (nothing claimed, nothing wrong); with no gold pair recall is 1.
    """

    precision: float
    recall: float
    f1: float
    true_pairs: int
    predicted_pairs: int
    gold_pairs: int


@dataclass(frozen=True, slots=True)
class ExtractionScore:
    """Macro-averaged bag-of-tokens figures over the scored pages (the fields of score.py's --json summary)."""

    pages: int
    missing: int
    precision: float
    recall: float
    f1: float
    f1_median: float


@dataclass(frozen=True, slots=True)
class FoundPairs:
    """What one method found in a collection: its candidate pairs and how many texts it could judge."""

    method: str
    pairs: frozenset
    judged: int


def find_pairs(method: str, ids: Sequence[Hashable], texts: Sequence[str], *,
               shingle_settings: ShingleSettings | None = None) -> FoundPairs:
    """The duplicate pairs ``method`` (a name from DEDUP_METHODS) finds among ``texts`` (fitted on them)."""
    if len(ids) != len(texts):
        raise InputError(f"{len(ids)} ids but {len(texts)} texts: give one text per id")
    if method == MINHASH:
        return minhash_pairs(ids, texts, shingle_settings or ShingleSettings())
    if method not in METHODS:
        raise InputError(f"unknown duplicate method {method!r}: choose from {', '.join(DEDUP_METHODS)}")
    signer = make_method(method).fit(texts)
    signatures = [signer.signatures(text) for text in texts]
    return FoundPairs(method, frozenset(pairs_from_signatures(ids, signatures)), sum(1 for s in signatures if s))


def minhash_pairs(ids: Sequence[Hashable], texts: Sequence[str], settings: ShingleSettings) -> FoundPairs:
    """LSH candidates (a shared band key) whose Jaccard reaches ``settings.threshold``: the exact Jaccard of the
    shingle sets ("exact"), of their bottom-k samples ("sample"), or the MinHash estimate, as the index verifies."""
    parts = [shingle_hashes(batch, settings) for batch in iter_batches(texts)]
    signed = [sign_shingles(part, settings) for part in parts]
    values = np.concatenate([s.values for s in signed]) if signed else np.empty((0, settings.permutations))
    empty = np.concatenate([s.empty for s in signed]) if signed else np.empty(0, bool)
    keys = band_keys(values, settings)
    buckets = [[] if blank else row.tolist() for row, blank in zip(keys, empty)]
    position = {page_id: i for i, page_id in enumerate(ids)}
    candidates = sorted(pairs_from_signatures(ids, buckets))
    left = [position[a] for a, _ in candidates]
    right = [position[b] for _, b in candidates]
    if settings.verify != "estimate":  # "exact" or "sample": the sets the index itself compares
        sets = [comparable_set(part.of(i), settings) for part in parts for i in range(len(part.offsets) - 1)]
        similarity = [set_similarity(sets[a], sets[b], settings) for a, b in zip(left, right)]
    else:
        similarity = np.mean(values[left] == values[right], axis=1).tolist() if candidates else []
    kept = frozenset(pair for pair, sim in zip(candidates, similarity) if sim >= settings.threshold)
    return FoundPairs(MINHASH, kept, int((~empty).sum()))


def ordered_pair(a: Hashable, b: Hashable) -> Pair:
    return (a, b) if a <= b else (b, a)  # type: ignore[operator]


def cluster_pairs(clusters: Mapping[Hashable, Hashable]) -> set[Pair]:
    """Every unordered pair of ids that share a cluster label (id -> label)."""
    members: dict[Hashable, list] = defaultdict(list)
    for page_id, label in clusters.items():
        members[label].append(page_id)
    return {ordered_pair(a, b) for ids in members.values() for a, b in combinations(sorted(ids), 2)}


def score_pairs(predicted: Iterable[Pair], gold: Iterable[Pair]) -> PairScore:
    """Pair precision, recall and F1 of ``predicted`` against ``gold`` (both sets of unordered pairs)."""
    predicted_set = {ordered_pair(a, b) for a, b in predicted if a != b}
    gold_set = {ordered_pair(a, b) for a, b in gold if a != b}
    true = len(predicted_set & gold_set)
    precision = true / len(predicted_set) if predicted_set else 1.0
    recall = true / len(gold_set) if gold_set else 1.0
    return PairScore(precision=precision, recall=recall, f1=harmonic_mean(precision, recall, nonzero=bool(true)),
                     true_pairs=true, predicted_pairs=len(predicted_set), gold_pairs=len(gold_set))


def harmonic_mean(precision: float, recall: float, *, nonzero: bool = True) -> float:
    if not nonzero or precision + recall == 0:
        return 0.0
    return 2 * precision * recall / (precision + recall)


def tokens(text: str | None) -> list[str]:
    """Lower-cased Unicode word runs; each CJK character is a token of its own (as score.py)."""
    return WORD.findall(CJK.sub(lambda m: f" {m.group(0)} ", (text or "").lower()))


def scored_text(text: str | None, title: str | None, dataset: str | None) -> str:
    """The predicted text held against a page's gold, as score.py chooses it: title + text, or the body alone on a
    dataset whose gold has no headline (GOLD_WITHOUT_HEADLINE)."""
    if title and dataset not in GOLD_WITHOUT_HEADLINE:
        return title + "\n" + (text or "")
    return text or ""


def score_text(predicted: str | None, gold: str | None) -> tuple[float, float, float]:
    """(precision, recall, F1) of one page's extracted text against its gold text, on token bags."""
    pred, want = Counter(tokens(predicted)), Counter(tokens(gold))
    n_pred, n_gold = sum(pred.values()), sum(want.values())
    overlap = sum((pred & want).values())
    precision = overlap / n_pred if n_pred else 1.0
    recall = overlap / n_gold if n_gold else 1.0
    return precision, recall, harmonic_mean(precision, recall, nonzero=bool(overlap))


def score_extraction(gold: Iterable[tuple[str, str | None]], predicted: Mapping[str, str]) -> ExtractionScore:
    """Macro P/R/F1 over the gold pages ((id, gold text) pairs) of the predicted texts (id -> text)."""
    scored = [(page_id, text) for page_id, text in gold if (text or "").strip()]
    rows = [score_text(predicted.get(page_id, ""), text) for page_id, text in scored]
    missing = sum(page_id not in predicted for page_id, _ in scored)
    return ExtractionScore(pages=len(rows), missing=missing, precision=_mean(r[0] for r in rows),
                           recall=_mean(r[1] for r in rows), f1=_mean(r[2] for r in rows),
                           f1_median=statistics.median([r[2] for r in rows]) if rows else 0.0)


def _mean(values: Iterable[float]) -> float:
    values = list(values)
    return statistics.fmean(values) if values else 0.0
