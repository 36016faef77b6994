"""What `templater eval dedup` and `templater eval extract` call: read the inputs, run, score.

``evaluate_dedup`` reads the extracted texts from the database (table ``extractions``: page_id, text) and a gold
clustering (TRUTH: JSON Lines ``{"id", "cluster"}``, one line per page that has duplicates; ids are the pages' ids
in the database), runs every duplicate method over the texts and scores each method's pairs, timing each run
(fit + signatures + pairing). ``evaluate_extract`` scores a prediction file against a gold corpus file with the
measure of ../shared/eval/score.py.
"""

from __future__ import annotations

import gzip
import json
import logging
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from store import lsh

from .errors import InputError, StoreError
from .evaluation import (
    DEDUP_METHODS,
    MINHASH,
    ExtractionScore,
    PairScore,
    cluster_pairs,
    find_pairs,
    score_extraction,
    score_pairs,
    scored_text,
)
from .shingles import ShingleSettings, normalize

if TYPE_CHECKING:  # annotations only: a store opens without sqlite-utils (store.db.Database)
    import sqlite_utils

log = logging.getLogger(__name__)

Progress = Callable[[int, int | None], None]  # (methods done, methods in all)


@dataclass(frozen=True, slots=True)
class MethodRun:
    """One method's figures on one collection: pair scores, pairs found, texts judged, seconds taken."""

    method: str
    score: PairScore
    seconds: float
    judged: int

    def to_json(self) -> dict:
        return {"method": self.method, "precision": self.score.precision, "recall": self.score.recall,
                "f1": self.score.f1, "seconds": round(self.seconds, 4), "pairs": self.score.predicted_pairs,
                "true_pairs": self.score.true_pairs, "gold_pairs": self.score.gold_pairs, "judged": self.judged}


@dataclass(frozen=True, slots=True)
class DedupReport:
    """Every method's run; ``pages`` texts were read, ``unknown`` TRUTH ids had no text and were left out."""

    pages: int
    truth_pages: int
    unknown: int
    runs: tuple[MethodRun, ...]


def read_jsonl(path: str | Path) -> Iterator[tuple[int, dict]]:
    """(line number, object) of each non-blank line of a JSON Lines file, optionally gzipped."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as e:
                raise InputError(f"{path}:{number}: not JSON ({e}); each line must be one JSON object") from None
            if not isinstance(record, dict):
                raise InputError(f"{path}:{number}: a JSON object is expected, not {type(record).__name__}")
            yield number, record


def read_truth(path: str | Path) -> dict[str, str]:
    """Page id -> cluster label from TRUTH ({"id", "cluster"} a line); labels compare as JSON text."""
    clusters = {}
    for number, record in read_jsonl(path):
        if "id" not in record or "cluster" not in record:
            raise InputError(f"{path}:{number}: each line needs \"id\" and \"cluster\", got {sorted(record)}")
        clusters[str(record["id"])] = json.dumps(record["cluster"], sort_keys=True)
    if not clusters:
        raise InputError(f"{path} holds no {{\"id\", \"cluster\"}} line: give a gold clustering")
    return clusters


def load_texts(db: sqlite_utils.Database) -> tuple[list[str], list[str]]:
    """(page ids, extracted texts) of every extraction in the database, in page id order."""
    if not db["extractions"].exists():
        raise StoreError("the database has no extractions table: run `templater extract` (or `run`) first")
    rows = db.execute("SELECT page_id, text FROM extractions ORDER BY page_id").fetchall()
    if not rows:
        raise StoreError("the database holds no extracted text: run `templater extract` (or `run`) first")
    return [str(r[0]) for r in rows], [r[1] or "" for r in rows]


def run_method(method: str, ids: Sequence[str], texts: Sequence[str], gold: set, *,
               shingle_settings: ShingleSettings | None = None) -> MethodRun:
    """Find ``method``'s pairs among ``texts`` (timed) and score them against the ``gold`` pairs."""
    start = time.perf_counter()
    found = find_pairs(method, ids, texts, shingle_settings=shingle_settings)
    seconds = time.perf_counter() - start
    return MethodRun(method, score_pairs(found.pairs, gold), seconds, found.judged)


def evaluate_dedup(db: sqlite_utils.Database, truth: str | Path, *, methods: Sequence[str] | None = None,
                   progress: Progress | None = None) -> DedupReport:
    """Score every duplicate method (or ``methods``) on the database's extracted texts against TRUTH.

    minhash-lsh uses the settings of the database's near-duplicate index when it has one (else the defaults),
    verifying candidates as they say (exact Jaccard of the shingle sets, or the signature estimate).
    """
    methods = list(methods or DEDUP_METHODS)
    unknown_methods = [m for m in methods if m not in DEDUP_METHODS]
    if unknown_methods:
        raise InputError(f"unknown duplicate method(s) {unknown_methods}: choose from {', '.join(DEDUP_METHODS)}")
    clusters = read_truth(truth)
    ids, texts = load_texts(db)
    known = set(ids)
    unknown = sorted(set(clusters) - known)
    if unknown:
        log.warning("%d TRUTH ids have no extracted text in the database (first: %s); their pairs are left out",
                    len(unknown), unknown[0])
    gold = cluster_pairs({k: v for k, v in clusters.items() if k in known})
    settings = lsh.load_settings(db) if MINHASH in methods else None
    normalize("")  # builds the normalizer's character tables once, so no method's time carries them
    runs = []
    for done, method in enumerate(methods, 1):
        runs.append(run_method(method, ids, texts, gold, shingle_settings=settings))
        if progress:
            progress(done, len(methods))
    return DedupReport(pages=len(ids), truth_pages=len(clusters), unknown=len(unknown), runs=tuple(runs))


def evaluate_extract(gold: str | Path, predicted: str | Path) -> ExtractionScore:
    """Score PRED ({"id", "text"} a line, optionally "title") against GOLD (a corpus file with "id", "gold" and
    optionally "dataset"), as score.py does."""
    records = {}
    for number, record in read_jsonl(predicted):
        if "id" not in record:
            raise InputError(f"{predicted}:{number}: each line needs an \"id\" (and a \"text\")")
        records[str(record["id"])] = record
    pages, texts = [], {}
    for number, record in read_jsonl(gold):
        if "id" not in record:
            raise InputError(f"{gold}:{number}: each line needs an \"id\" and a \"gold\" text")
        page_id = str(record["id"])
        pages.append((page_id, record.get("gold")))
        if page_id in records:
            found = records[page_id]
            texts[page_id] = scored_text(found.get("text"), found.get("title"), record.get("dataset"))
    score = score_extraction(pages, texts)
    if not score.pages:
        raise InputError(f"no page with gold text in {gold}: give a corpus file whose lines have \"gold\"")
    return score
