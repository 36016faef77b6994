"""Near-duplicate quality: as people see near-duplicates (``--typed``), and against exact Jaccard >= 0.8.

    python bench/neardup.py --typed [--per-type 100] [--seed 16] [--keep DIR [--reuse [--reindex JSON]]]
    python bench/neardup.py [--corpus ../shared/corpus] [--variants 1000] [--seed 4] [--write-set FILE.jsonl.gz]

``--typed``: the typed truth set of ``bench/typed_set.py`` (every dev-corpus page, ``--per-type`` edited copies of
each edit type: scattered word replacements at 1/2/3%, cuts of 10/20/30% from the end or the start, paragraphs
reordered, headline and boilerplate changed, the story syndicated on another site's template; and hard negatives:
pages of one site, follow-up stories, pages of one series), built as HTML at bench time, run as a user runs it:
``templater run SET --db DB --output OUT`` then ``templater dups --db DB``, as processes. Every pair of pages in
one reported cluster is a reported pair; it is right when both pages tell one story (a base and its copy, or pages
the corpus already holds twice). Printed: recall per edit type (the base and its copy in one cluster), precision
over every reported pair, the false-pair rate per negative type, how often the canonical page is the original
(fetched a month before its copies), and for each missed copy whether its extracted text still reaches the
threshold (exact, on the whole shingle sets: then the index missed it) or not (the extraction made the texts
differ). Then the threshold each held-out half of the sites would choose (the lowest with no false pair of one
site's articles and precision >= 0.995, exact measures on the extracted texts) and the recall it gives the other.

Without ``--typed``, the older text-level set:

The set, rebuilt the same way from the dev corpus by anyone with this script:

* Documents: every gold text of the dev corpus with at least MIN_WORDS words (page id "<dataset>/<id>"), plus
  ``--variants`` edited copies of gold texts drawn at random (seeded) among those with at least MIN_BASE_WORDS
  words (page id "<dataset>/<id>~<kind>").
* Each copy gets one edit kind, chosen uniformly, with a rate drawn uniformly from its range. Edits work on the
  whitespace-separated words of the gold text; new words are drawn from the words of the whole gold corpus.

      substitute  replace 0.5-5% of the words at random positions
      insert      insert 0.5-5% new words at random positions
      delete      delete 0.5-5% of the words at random positions
      truncate    cut the last 1-30% of the words
      embed       the article inside another site's page: before and after it, runs of 1-15% of its length taken
                  from a gold text of another site (a stand-in for that site's template text)
      mixed       substitute 0.5-2% of the words, then truncate 1-10%

  (Word 5-gram Jaccard falls fast: one substituted word in 100 removes up to 5 shingles in 100, so 0.5-5% edits
  span Jaccard of about 0.95 down to 0.6, the range that tests a 0.8 threshold.)
* Truth: every pair of documents (originals among themselves included) whose exact Jaccard of word 5-gram sets
  (templater's normalization, 64-bit shingle hashes, so no collisions) is at least 0.8, found exhaustively with a
  prefix filter (a pair at or above the threshold shares a shingle among the rarest |x| - ceil(0.8|x|) + 1 of each
  set).
* System: ``templater.dedup.index_texts`` into a fresh SQLite index with the settings of that definition (word
  5-grams, 16 x 6 bands, measure "jaccard"; ``JACCARD``) and verify="sample"
  (bottom-256 samples of the shingle sets), then ``iter_candidate_pairs`` (LSH candidates before verification) and
  ``iter_similar_pairs`` (verified pairs); again with ``verify="exact"`` (every shingle hash stored) and
  ``verify="estimate"`` (signatures only). Precision = found and true / found; recall = found and true / true.
  ``--sample K`` sets the sample size of the default run.
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from store import lsh  # noqa: E402
from store.db import open_db  # noqa: E402
from templater import dedup  # noqa: E402
from templater.unionfind import UnionFind  # noqa: E402
from templater.shingles import (ShingleSettings, containment_of_sets, jaccard_of_sets, shingle_hashes,  # noqa: E402
                                sorted_set)

DEFAULT_CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus"
MIN_WORDS = 20  # gold texts shorter than this are left out
MIN_BASE_WORDS = 100  # edited copies are made of texts at least this long
THRESHOLD = 0.8
EDIT_RATE = (0.005, 0.05)
TRUNCATE = (0.01, 0.30)
EMBED = (0.01, 0.15)
MIXED_SUBSTITUTE = (0.005, 0.02)
MIXED_TRUNCATE = (0.01, 0.10)
KINDS = ("substitute", "insert", "delete", "truncate", "embed", "mixed")
J_BINS = (0.8, 0.85, 0.9, 0.95, 1.0001)


@dataclass(frozen=True, slots=True)
class Doc:
    id: str
    site: str
    text: str
    kind: str = "original"
    rate: float = 0.0


def load_gold(corpus: Path) -> list[Doc]:
    docs = []
    for path in sorted(corpus.glob("*/pages.jsonl.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as f:
            for line in f:
                record = json.loads(line)
                gold = record.get("gold") or ""
                if len(gold.split()) >= MIN_WORDS:
                    docs.append(Doc(f"{record['dataset']}/{record['id']}", record.get("site", ""), gold))
    return docs


# --- edits ----------------------------------------------------------------------------------------------------

def _positions(rng: np.random.Generator, length: int, rate: float) -> np.ndarray:
    return rng.choice(length, size=max(1, round(rate * length)), replace=False)


def substitute(rng, words: list[str], rate: float, vocabulary: list[str]) -> list[str]:
    out = list(words)
    for p in _positions(rng, len(out), rate).tolist():
        out[p] = vocabulary[rng.integers(len(vocabulary))]
    return out


def insert(rng, words: list[str], rate: float, vocabulary: list[str]) -> list[str]:
    out = list(words)
    for p in sorted(_positions(rng, len(out), rate).tolist(), reverse=True):
        out.insert(p, vocabulary[rng.integers(len(vocabulary))])
    return out


def delete(rng, words: list[str], rate: float) -> list[str]:
    gone = set(_positions(rng, len(words), rate).tolist())
    return [w for i, w in enumerate(words) if i not in gone]


def truncate(words: list[str], rate: float) -> list[str]:
    return words[:len(words) - max(1, round(rate * len(words)))]


def embed(rng, words: list[str], rate: float, host: list[str]) -> list[str]:
    """Runs of ``rate`` x len(words) words from ``host`` before and after the article."""
    size = max(1, round(rate * len(words)))
    start = rng.integers(0, max(1, len(host) - 2 * size))
    return host[start:start + size] + words + host[start + size:start + 2 * size]


def make_variant(rng: np.random.Generator, base: Doc, kind: str, vocabulary: list[str], hosts: list[Doc]) -> Doc:
    words = base.text.split()
    if kind in ("substitute", "insert", "delete"):
        rate = rng.uniform(*EDIT_RATE)
        out = delete(rng, words, rate) if kind == "delete" else \
            (substitute if kind == "substitute" else insert)(rng, words, rate, vocabulary)
    elif kind == "truncate":
        rate = rng.uniform(*TRUNCATE)
        out = truncate(words, rate)
    elif kind == "embed":
        rate = rng.uniform(*EMBED)
        others = [h for h in hosts if h.site != base.site]
        out = embed(rng, words, rate, others[rng.integers(len(others))].text.split())
    else:
        rate = rng.uniform(*MIXED_SUBSTITUTE)
        out = truncate(substitute(rng, words, rate, vocabulary), rng.uniform(*MIXED_TRUNCATE))
    return Doc(f"{base.id}~{kind}", base.site, " ".join(out), kind, round(float(rate), 4))


def build_set(corpus: Path, variants: int, seed: int) -> list[Doc]:
    """The originals and ``variants`` edited copies (see the module docstring)."""
    originals = load_gold(corpus)
    rng = np.random.default_rng(seed)
    vocabulary = [w for d in originals for w in d.text.split()]
    bases = [d for d in originals if len(d.text.split()) >= MIN_BASE_WORDS]
    chosen = rng.choice(len(bases), size=min(variants, len(bases)), replace=False)
    copies = [make_variant(rng, bases[i], KINDS[rng.integers(len(KINDS))], vocabulary, originals)
              for i in chosen.tolist()]
    return originals + copies


# --- truth: exact Jaccard >= threshold, exhaustively --------------------------------------------------------------

def shingle_sets(texts: list[str], settings: ShingleSettings) -> list[np.ndarray]:
    shingles = shingle_hashes(texts, settings)
    return [np.unique(shingles.of(i)) for i in range(len(texts))]


def exact_pairs(sets: list[np.ndarray], threshold: float = THRESHOLD) -> dict[tuple[int, int], float]:
    """Every pair (i < j) with exact Jaccard >= threshold: prefix-filter candidates, then exact Jaccard."""
    frequency = Counter(h for s in sets for h in s.tolist())
    postings: dict[int, list[int]] = {}
    for i, s in enumerate(sets):
        if not len(s):
            continue
        ranked = sorted(s.tolist(), key=lambda h: (frequency[h], h))
        for h in ranked[:len(s) - math.ceil(threshold * len(s)) + 1]:
            postings.setdefault(h, []).append(i)
    candidates = {(a, b) for docs in postings.values() for k, b in enumerate(docs) for a in docs[:k]}
    out = {}
    for a, b in candidates:
        small, large = sorted((len(sets[a]), len(sets[b])))
        if small < threshold * large:
            continue
        inter = len(np.intersect1d(sets[a], sets[b], assume_unique=True))
        jaccard = inter / (len(sets[a]) + len(sets[b]) - inter)
        if jaccard >= threshold:
            out[(a, b)] = jaccard
    return out


def score(found: Iterable[tuple[int, int]], truth: Iterable[tuple[int, int]]) -> tuple[float, float, int, int]:
    """(precision, recall, found, true); an empty side scores 1."""
    found, truth = set(found), set(truth)
    hit = len(found & truth)
    return (hit / len(found) if found else 1.0, hit / len(truth) if truth else 1.0, len(found), len(truth))


# --- the system under test --------------------------------------------------------------------------------------

def system_pairs(docs: list[Doc], settings: ShingleSettings) -> tuple[set, set, float]:
    """(LSH candidate pairs, verified pairs, seconds to index) as pairs of positions in ``docs``."""
    position = {d.id: i for i, d in enumerate(docs)}
    with tempfile.TemporaryDirectory() as folder:
        db = open_db(Path(folder) / "neardup.db")
        began = time.perf_counter()
        dedup.index_texts(db, [(d.id, d.id, d.text) for d in docs], settings)
        seconds = time.perf_counter() - began
        names = lsh.page_ids(db, range(1, len(docs) + 1))
        candidates = {tuple(sorted((position[names[a][0]], position[names[b][0]])))
                      for chunk in lsh.iter_candidate_pairs(db) for a, b in chunk.tolist()}
        verified = {tuple(sorted((position[p["a"]], position[p["b"]]))) for p in dedup.iter_similar_pairs(db)}
        db.conn.close()
    return candidates, verified, seconds


def report(name: str, found: set, truth: dict, docs: list[Doc]) -> None:
    precision, recall, n_found, n_true = score(found, truth)
    print(f"  {name:28s} precision {precision:.4f}  recall {recall:.4f}  ({n_found:,} found, {n_true:,} true)")


def breakdown(found: set, truth: dict, docs: list[Doc]) -> None:
    """Recall by edit kind (pairs of a copy and its original) and by exact-Jaccard bin (all true pairs)."""
    by_kind: dict[str, list[bool]] = {}
    for (a, b) in truth:
        kinds = {docs[a].kind, docs[b].kind} - {"original"}
        key = kinds.pop() if len(kinds) == 1 else ("natural" if not kinds else "copy-copy")
        by_kind.setdefault(key, []).append((a, b) in found)
    print("    recall by kind: " + ", ".join(f"{k} {np.mean(v):.3f} ({len(v)})" for k, v in sorted(by_kind.items())))
    bins = np.digitize([truth[p] for p in truth], J_BINS)
    hits = np.array([p in found for p in truth])
    print("    recall by exact J: " + ", ".join(
        f"[{J_BINS[i - 1]:.2f},{min(J_BINS[i], 1):.2f}) {hits[bins == i].mean():.3f} ({(bins == i).sum()})"
        for i in range(1, len(J_BINS)) if (bins == i).any()))


# --- the typed truth set, run as a user runs it -------------------------------------------------------------------

JACCARD = {"n": 5, "rows": 6, "measure": "jaccard"}  # the text-level set measures the index against its own
# definition of before the typed set: word 5-gram Jaccard >= 0.8, 16 x 6 bands (index settings an index keeps)
TYPED_SEED = 16
TEXT_SEED = 4
PRECISION_GOAL = 0.995  # a held-out half chooses the lowest threshold with this precision and no same-site pair
EXTRACT_BATCH = 200  # texts per index call of `templater extract` (pipeline.BATCH_PAGES)
ARTICLE_WORDS = MIN_WORDS  # a page whose gold text is shorter has no article: its same-site pairs are counted apart


def run_cli(folder: Path, pages: Path, *, reuse: bool = False) -> tuple[dict[str, str], dict[str, int],
                                                                         dict[str, str], float]:
    """`templater run` then `templater dups`: (id -> extracted text, id -> cluster, cluster -> canonical, seconds).
    With ``reuse``, the outputs already in ``folder`` are read instead."""
    templater = Path(sys.executable).with_name("templater")
    db, out, dups = folder / "typed.db", folder / "extracted.jsonl", folder / "dups.jsonl"
    began = time.perf_counter()
    if not reuse:
        for path in (db, out, dups):
            path.unlink(missing_ok=True)
        subprocess.run([str(templater), "run", str(pages), "--db", str(db), "--output", str(out), "--quiet"],
                       check=True)
        subprocess.run([str(templater), "dups", "--db", str(db), "--output", str(dups)], check=True)
    seconds = time.perf_counter() - began
    with open(out, encoding="utf-8") as f:
        texts = {r["id"]: r["text"] for r in map(json.loads, f)}
    cluster, canonical = {}, {}
    with open(dups, encoding="utf-8") as f:
        for r in map(json.loads, f):
            cluster[r["id"]] = r["cluster"]
            canonical[r["cluster"]] = r["canonical"]
    return texts, cluster, canonical, seconds


def reindex(texts: dict[str, str], typed, path: Path, changes: dict) -> tuple[dict[str, int], dict[int, str], float]:
    """Index the extracted texts of a kept run again (in the order and batches ``extract`` indexes them, with the
    fetch times the run gave) with the default settings changed by ``changes``: (id -> cluster, cluster ->
    canonical, seconds). With no change it gives what the run's `templater dups` gave."""
    import typed_set
    url = {p.id: p.url for p in typed.pages}
    fetched = {p.id: typed_set.ORIGINAL_TIME if p.kind == "original" else typed_set.COPY_TIME for p in typed.pages}
    began = time.perf_counter()
    db = open_db(path)
    dedup.index_texts(db, [dedup.TextItem(x, url[x], text, 0, fetched[x]) for x, text in texts.items()],
                      ShingleSettings(**changes), batch_size=EXTRACT_BATCH)
    cluster, canonical = {}, {}
    for row in dedup.iter_duplicates(db):
        cluster[row["id"]] = row["cluster"]
        canonical[row["cluster"]] = row["canonical"]
    db.conn.close()
    return cluster, canonical, time.perf_counter() - began


def story_groups(typed) -> dict[str, str]:
    """Page id -> a story label: a base and its copies, and corpus duplicates, share one."""
    uf = UnionFind()
    for _, base, copy in typed.positives():
        uf.union(base, copy)
    for a, b in typed.natural:
        uf.union(a, b)
    return {p.id: str(uf.find(p.id)) for p in typed.pages}


def pair_measures(texts: dict[str, str], pairs: list[tuple[str, str]], settings: ShingleSettings) -> list[tuple]:
    """(containment, Jaccard) of each pair's extracted texts, exact on the whole shingle sets."""
    ids = sorted({x for pair in pairs for x in pair if x in texts})
    position = {x: i for i, x in enumerate(ids)}
    shingles = shingle_hashes([texts[x] for x in ids], ShingleSettings(kind=settings.kind, n=settings.n, hash_bits=64,
                                                                        keep_numbers=settings.keep_numbers,
                                                                        lines=settings.lines))
    sets = [sorted_set(shingles.of(i)) for i in range(len(ids))]
    out = []
    for a, b in pairs:
        if a not in position or b not in position or not len(sets[position[a]]) or not len(sets[position[b]]):
            out.append((0.0, 0.0))
            continue
        x, y = sets[position[a]], sets[position[b]]
        out.append((containment_of_sets(x, y), jaccard_of_sets(x, y)))
    return out


def typed_report(args) -> None:
    import pickle

    import typed_set
    began = time.perf_counter()
    saved = args.keep / "typed.pickle" if args.keep else None
    reuse = bool(args.reuse and saved and saved.exists() and (args.keep / "dups.jsonl").exists())
    if reuse:
        with open(saved, "rb") as f:
            typed = pickle.load(f)
    else:
        typed = typed_set.build(args.corpus, per_type=args.per_type, seed=args.seed)
    originals = typed_set.load_originals(args.corpus)
    gold_words = {o.id: len(o.gold.split()) for o in originals}
    if reuse:  # the corpus's own duplicates as this code defines them (a kept set may predate a change of it)
        typed.natural = typed_set.natural_pairs(originals)
    kinds = Counter(p.kind for p in typed.pages)
    print(f"typed set: {len(typed.pages):,} pages ({dict(sorted(kinds.items()))}); built in "
          f"{time.perf_counter() - began:.0f} s; seed {args.seed}")
    with tempfile.TemporaryDirectory() as scratch:
        folder = args.keep or Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        pages = folder / "typed.jsonl.gz"
        if not reuse:
            typed_set.write(typed, pages)
            if saved:
                with open(saved, "wb") as f:
                    pickle.dump(typed_set.TypedSet([replace(p, html="") for p in typed.pages], typed.natural), f)
        texts, cluster, canonical, seconds = run_cli(folder, pages, reuse=reuse)
        index_db = folder / "typed.db"
        if args.reindex is not None:  # the same extracted texts, indexed again with other settings
            index_db = folder / "reindexed.db"
            for suffix in ("", "-wal", "-shm"):
                Path(f"{index_db}{suffix}").unlink(missing_ok=True)
            cluster, canonical, seconds = reindex(texts, typed, index_db, args.reindex)
        settings = json.loads(subprocess.run(
            [str(Path(sys.executable).with_name("templater")), "dups-settings", "--db", str(index_db),
             "--json"], check=True, capture_output=True, text=True).stdout)
    settings = ShingleSettings.from_dict({k: settings[k] for k in ShingleSettings.__dataclass_fields__})
    print(f"templater run + dups: {seconds:.0f} s; index: {settings.kind} {settings.n}-grams, {settings.bands} x "
          f"{settings.rows} bands, {settings.measure} >= {settings.threshold} ({settings.verify})")
    story = story_groups(typed)
    together = lambda a, b: a in cluster and cluster.get(a) == cluster.get(b)  # noqa: E731
    half = {p.id: p.half for p in typed.pages}
    positives = list(typed.positives())
    negatives = [(("no-article" if k == "same-site" and min(gold_words.get(a, 99), gold_words.get(b, 99))
                   < ARTICLE_WORDS else k), a, b) for k, a, b in typed.negatives()]
    measures = dict(zip([(a, b) for _, a, b in positives + negatives],
                        pair_measures(texts, [(a, b) for _, a, b in positives + negatives], settings)))
    print(f"\n{'edit type':14s} {'recall':>7s} {'half 0':>7s} {'half 1':>7s} {'pairs':>6s}  missed: extraction / index")
    for kind in typed_set.EDITS:
        rows = [(a, b) for k, a, b in positives if k == kind]
        hits = [together(a, b) for a, b in rows]
        by_half = [[h for (a, _), h in zip(rows, hits) if half[a] == side] for side in (0, 1)]
        missed = [(a, b) for (a, b), h in zip(rows, hits) if not h]
        index_missed = sum(measures[p][0] >= settings.threshold for p in missed)
        print(f"{kind:14s} {np.mean(hits):7.3f} " + " ".join(f"{np.mean(h) if h else float('nan'):7.3f}"
                                                             for h in by_half) +
              f" {len(rows):6d}  {len(missed) - index_missed} / {index_missed}")
    members: dict[int, list[str]] = {}
    for page, label in cluster.items():
        members.setdefault(label, []).append(page)
    reported = [(a, b) for m in members.values() for i, a in enumerate(m) for b in m[i + 1:]]
    right = sum(story[a] == story[b] for a, b in reported)
    print(f"\nprecision {right / len(reported) if reported else 1.0:.4f} ({right:,} of {len(reported):,} reported "
          f"pairs tell one story; {len(members):,} clusters)")
    print(f"{'negative type':14s} {'false pairs':>11s} {'of':>7s} {'rate':>8s}")
    for kind in ("same-site", "no-article", "follow-up", "series"):
        rows = [(a, b) for k, a, b in negatives if k == kind]
        false = [(a, b) for a, b in rows if together(a, b)]
        print(f"{kind:14s} {len(false):11d} {len(rows):7,d} {len(false) / max(1, len(rows)):8.5f}" +
              (f"  e.g. {false[0]}" if false else ""))
    pairs = [(base, copy) for _, base, copy in positives if together(base, copy)]
    original_first = sum(canonical[cluster[base]] == base for base, _ in pairs)
    print(f"\ncanonical page is the original (fetched first) in {original_first} of {len(pairs)} found pairs' clusters")
    choose_threshold(positives, negatives, measures, half, settings)
    choose_cross_site_threshold(texts, typed, half, settings, index_db)
    compare_shingles(texts, positives, negatives, settings)


def compare_shingles(texts, positives, negatives, settings) -> None:
    """Per edit type, the 5th percentile of containment and Jaccard of the extracted texts with word 3- and
    5-grams, and the candidate probability that 16 x 3 and 16 x 6 bands give the 5th-percentile pair; the
    highest same-site and follow-up values: what the measure, n and the banding were chosen from."""
    print("\nexact measures of the extracted texts (5th percentile over each type's pairs; for negatives the "
          "largest), and P(candidate) of that pair's Jaccard with 16 x 3 and 16 x 6 bands:")
    by_n = {n: dict(zip([(a, b) for _, a, b in positives + negatives], pair_measures(
        texts, [(a, b) for _, a, b in positives + negatives], ShingleSettings(n=n)))) for n in (3, 5)}
    curve = lambda j, rows: 1 - (1 - j ** rows) ** settings.bands  # noqa: E731
    print(f"  {'type':14s} " + " ".join(f"{'C' + str(n):>6s} {'J' + str(n):>6s} {'x3':>6s} {'x6':>6s}" for n in (3, 5)))
    for kind in [k for k in dict.fromkeys(k for k, _, _ in positives)]:
        cells = []
        for n in (3, 5):
            values = np.array([by_n[n][(a, b)] for k, a, b in positives if k == kind])
            c, j = np.percentile(values[:, 0], 5), np.percentile(values[:, 1], 5)
            cells.append(f"{c:6.2f} {j:6.2f} {curve(j, 3):6.3f} {curve(j, 6):6.3f}")
        print(f"  {kind:14s} " + " ".join(cells))
    for kind in ("same-site", "follow-up", "series", "no-article"):
        cells = []
        for n in (3, 5):
            values = np.array([by_n[n][(a, b)] for k, a, b in negatives if k == kind] or [(0.0, 0.0)])
            c, j = values[:, 0].max(), values[:, 1].max()
            cells.append(f"{c:6.2f} {j:6.2f} {curve(j, 3):6.3f} {curve(j, 6):6.3f}")
        print(f"  {kind + ' (max)':14s} " + " ".join(cells))


def choose_threshold(positives, negatives, measures, half, settings) -> None:
    """The threshold each held-out half would choose, and what it gives the other half (exact measures)."""
    candidates = np.round(np.arange(0.5, 0.951, 0.01), 2)
    print(f"\nthreshold chosen on one half of the sites ({settings.measure}, exact on the extracted texts; the "
          "lowest with no false pair of one site's articles and precision >= 0.995; pairs of one site also need "
          f"Jaccard >= {settings.same_site_jaccard}), checked on the other:")
    column = 0 if settings.measure == "containment" else 1
    floor = settings.same_site_jaccard if settings.measure == "containment" else 0.0
    measures = {pair: (value if value[1] >= floor else (0.0, 0.0)) for pair, value in measures.items()}
    for side in (0, 1):
        def split(rows, wanted):
            return [(k, a, b) for k, a, b in rows if (half[a] == wanted)]
        train_pos, train_neg = split(positives, side), split(negatives, side)
        chosen = None
        for t in candidates:
            tp = sum(measures[(a, b)][column] >= t for _, a, b in train_pos)
            fp = sum(measures[(a, b)][column] >= t for k, a, b in train_neg if k != "no-article")
            same_site = sum(measures[(a, b)][column] >= t for k, a, b in train_neg if k == "same-site")
            if same_site == 0 and tp / max(1, tp + fp) >= PRECISION_GOAL:
                chosen = float(t)
                break
        test_pos = split(positives, 1 - side)
        recall = {}
        for k, a, b in test_pos:
            recall.setdefault(k, []).append(measures[(a, b)][column] >= (chosen or 1.0))
        false = sum(measures[(a, b)][column] >= (chosen or 1.0) for k, a, b in split(negatives, 1 - side)
                    if k == "same-site")
        print(f"  half {side} chooses {chosen}; half {1 - side}: " +
              ", ".join(f"{k} {np.mean(v):.3f}" for k, v in recall.items()) + f"; same-site false pairs {false}")


def choose_cross_site_threshold(texts: dict[str, str], typed, half: dict[str, int], settings: ShingleSettings,
                                index_db: Path) -> None:
    """The cross-site threshold each held-out half would choose: over every candidate pair of the run's index (pages
    sharing a band or anchor key) whose pages are of two sites, exact containment of the extracted texts; the lowest
    threshold with precision >= 0.995 on that half's pairs (a pair belongs to the half of its first page), and the
    syndicated recall (exact, among the candidates) it gives the other half."""
    story = story_groups(typed)
    site = {p.id: p.site for p in typed.pages}
    db = open_db(index_db)
    codes = np.unique(np.concatenate([(p[:, 0] << 31) | p[:, 1] for p in lsh.iter_candidate_pairs(db)]
                                     or [np.empty(0, np.int64)]))
    names = lsh.page_ids(db, np.unique(np.r_[codes >> 31, codes & ((1 << 31) - 1)]).tolist())
    db.conn.close()
    pairs = [(names[a][0], names[b][0]) for a, b in zip((codes >> 31).tolist(), (codes & ((1 << 31) - 1)).tolist())]
    pairs = [(a, b) for a, b in pairs if site.get(a) != site.get(b)]
    rows = [(a, b, c) for (a, b), (c, _) in zip(pairs, pair_measures(texts, pairs, settings))]
    syndicated = {frozenset((p.base, p.id)) for p in typed.pages if p.kind == "syndicated"}
    print(f"\ncross-site threshold chosen on one half (exact containment of the {len(rows):,} candidate pairs of two "
          f"sites' pages; precision >= {PRECISION_GOAL} on the half), checked on the other:")
    for side in (0, 1):
        mine = [r for r in rows if half.get(r[0]) == side]
        chosen = None
        for t in np.round(np.arange(0.5, 0.951, 0.01), 2):
            kept = [story[x] == story[y] for x, y, c in mine if c >= t]
            if not kept or np.mean(kept) >= PRECISION_GOAL:
                chosen = float(t)
                break
        other = [r for r in rows if half.get(r[0]) != side and r[2] >= (chosen or 1.0)]
        found = {frozenset((x, y)) for x, y, _ in other}
        targets = [pair for pair in syndicated if half.get(min(pair, key=lambda x: "~" in x)) != side]
        false = sum(story[x] != story[y] for x, y, _ in other)
        recall = np.mean([p in found for p in targets])
        print(f"  half {side} chooses {chosen}; half {1 - side}: syndicated {recall:.3f} of {len(targets)}; "
              f"cross-site false pairs {false} of {len(other)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--typed", action="store_true", help="the typed truth set, run through the CLI")
    parser.add_argument("--per-type", type=int, default=100, help="--typed: copies of each edit type")
    parser.add_argument("--reindex", type=json.loads, default=None, metavar="JSON",
                        help='--typed --keep DIR --reuse: index the kept extracted texts again with these settings '
                             'changed (a JSON object of ShingleSettings fields, e.g. \'{"anchor_rate": 0}\'; {}: the '
                             'defaults), in-process, and score that instead of the run\'s `templater dups`')
    parser.add_argument("--reuse", action="store_true",
                        help="--typed: score the set and outputs already kept in --keep DIR (no new run)")
    parser.add_argument("--keep", type=Path, default=None,
                        help="--typed: keep the set, database and outputs in this folder (local only: research-only "
                             "licences)")
    parser.add_argument("--variants", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=None,
                        help=f"edits' seed (default {TEXT_SEED}; with --typed {TYPED_SEED})")
    parser.add_argument("--sample", type=int, default=ShingleSettings().sample,
                        help="shingle hashes kept a page in the verify=sample run")
    parser.add_argument("--write-set", type=Path, default=None,
                        help="also write the documents (id, kind, rate, text) as JSON Lines (keep it local: "
                             "research-only licences)")
    args = parser.parse_args()
    if not args.corpus.is_dir():
        sys.exit(f"no corpus at {args.corpus}: give --corpus DIR (the dev corpus folder with */pages.jsonl.gz)")
    if args.typed:
        typed_report(args if args.seed is not None else argparse.Namespace(**{**vars(args), "seed": TYPED_SEED}))
        return
    args.seed = TEXT_SEED if args.seed is None else args.seed
    docs = build_set(args.corpus, args.variants, args.seed)
    if args.write_set:
        with gzip.open(args.write_set, "wt", encoding="utf-8") as f:
            for d in docs:
                f.write(json.dumps({"id": d.id, "kind": d.kind, "rate": d.rate, "text": d.text}) + "\n")
    settings = ShingleSettings(verify="sample", sample=args.sample, **JACCARD)
    began = time.perf_counter()
    truth = exact_pairs(shingle_sets([d.text for d in docs], ShingleSettings(hash_bits=64, **JACCARD)))
    kinds = Counter(d.kind for d in docs if d.kind != "original")
    print(f"{len(docs):,} documents ({len(docs) - sum(kinds.values()):,} gold texts, {dict(sorted(kinds.items()))}); "
          f"{len(truth):,} pairs with exact word-5-gram Jaccard >= {THRESHOLD} (found in "
          f"{time.perf_counter() - began:.1f} s)")
    for variant in (settings, ShingleSettings(verify="exact", **JACCARD), ShingleSettings(verify="estimate", **JACCARD)):
        label = f"{variant.verify}{f' ({variant.sample} hashes a page)' if variant.verify == 'sample' else ''}"
        candidates, verified, seconds = system_pairs(docs, variant)
        print(f"verify={label} ({settings.bands} bands x {settings.rows} rows, S-curve threshold "
              f"{settings.s_curve_threshold:.3f}; indexed in {seconds:.1f} s)")
        report("LSH candidates", candidates, truth, docs)
        breakdown(candidates, truth, docs)
        report("verified pairs", verified, truth, docs)
        breakdown(verified, truth, docs)


if __name__ == "__main__":
    main()
