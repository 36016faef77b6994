"""The lecture's duplicate-signature methods against MinHash LSH and datasketch, on the real-text near-duplicate set.

    python bench/bench_signatures.py [--corpus ../shared/corpus] [--variants 1000] [--seed 4] [--keep-lines]
                                     [--no-index] [--json FILE]

The set is bench/neardup.py's (the one built for the near-duplicate index): every gold text of the dev corpus
with 20+ words, plus ``--variants`` seeded edited copies (substitute / insert / delete 0.5-5% of the words,
truncate 1-30%, embed in 1-15% of another site's text before and after, or a mix).

Gold clustering (the ideal answer): an edited copy is a duplicate of its original; gold texts are duplicates of
each other when their word 5-gram Jaccard is at least 0.8 (the few natural duplicates of the corpus, found
exhaustively by neardup.exact_pairs); clusters are the connected components. Every method is scored on pairs
(templater.evaluation.score_pairs): precision, recall and F1 of the pairs it reports. A second table gives each
method's recall by edit kind (pairs of a copy and its original).

Rows (each timed from raw texts to pairs, fitting included, on one core):
    md5 ... descr-words   templater.signatures, fitted on the whole set, pairs = a shared signature
    minhash-lsh           templater.evaluation.minhash_pairs with the index's default settings (now word 3-grams,
                          16 bands x 3 rows, containment >= 0.8; docs/signatures.md was measured with 5-grams,
                          16 x 6 and Jaccard >= 0.8): what `eval dedup` runs
    minhash-lsh index     the persistent SQLite index (templater.dedup.index_texts into a fresh database, then
                          iter_similar_pairs) with the settings of the gold definition (``neardup.JACCARD``: word
                          5-grams, 16 x 6, Jaccard >= 0.8), as datasketch below
    datasketch            datasketch MinHash (same permutations, same normalized word 5-grams) + MinHashLSH with
                          the same bands, candidates verified the same way (exact Jaccard of the 5-gram sets, or
                          MinHash.jaccard when the settings verify by estimate)

A third table (leave it out with --no-index) runs every method through its persistent SQLite index, as
`templater index-signatures --method M` then `templater dups --method M` do: the set is stored as pages with
extractions, templater.signature_run.index_signatures fits and signs, iter_signature_duplicates gives the clusters
(connected components of pages sharing a signature), and every pair within a cluster counts. For all methods
but lex-rand (up to ten signatures a page) and minhash (verified links) those are exactly the shared-signature
pairs of the first table; each time covers fitting, signing, storing and reading the clusters.

--keep-lines: neardup edits the whitespace-separated words of a text and joins them with spaces, so an edited
copy loses its line breaks while its original keeps them; a heading or list line without a full stop then merges
into the next sentence, and the sentence methods (long-sent, heavy-sent) see different sentences. With the option
each gold text's line ends are glued to their last word (LINE_MARK) while neardup edits, then restored: the
documents, the edits and the gold clustering are the same (normalized texts are equal), only the line breaks
survive. Run with and without it to see both.

Prints markdown tables.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import replace
from pathlib import Path
from unittest import mock

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import neardup  # noqa: E402

from store import pages as page_store  # noqa: E402
from store import signature_index as sig_store  # noqa: E402
from store.db import open_db  # noqa: E402
from templater import dedup, signature_run  # noqa: E402
from templater.evaluation import DEDUP_METHODS, cluster_pairs, find_pairs, score_pairs  # noqa: E402
from templater.shingles import ShingleSettings, normalize  # noqa: E402


LINE_MARK = "\u00b6"  # ends the last word of a line while neardup edits whitespace-separated words


def mark_lines(text: str) -> str:
    """The text's words with LINE_MARK glued to the last word of each line: the same words, so neardup draws the
    same edits at the same positions; blank lines go (every remaining line is still a paragraph)."""
    return " ".join(" ".join(words[:-1] + [words[-1] + LINE_MARK])
                    for words in (line.split() for line in text.splitlines()) if words)


def unmark_lines(text: str) -> str:
    return "\n".join(line.strip() for line in text.split(LINE_MARK) if line.strip())


def build_docs(corpus: Path, variants: int, seed: int, *, keep_lines: bool) -> list[neardup.Doc]:
    """neardup's set; with ``keep_lines`` its texts' line breaks survive the edits (see --keep-lines)."""
    if not keep_lines:
        return neardup.build_set(corpus, variants, seed)
    load = neardup.load_gold

    def marked(folder: Path) -> list[neardup.Doc]:
        return [replace(d, text=mark_lines(d.text)) for d in load(folder)]

    with mock.patch.object(neardup, "load_gold", marked):
        docs = neardup.build_set(corpus, variants, seed)
    return [replace(d, text=unmark_lines(d.text)) for d in docs]


def gold_clusters(docs: list[neardup.Doc], settings: ShingleSettings) -> dict[str, str]:
    """Page id -> cluster: copies join their original; originals with word-5-gram Jaccard >= 0.8 join each other."""
    originals = [d for d in docs if d.kind == "original"]
    parent = {d.id: d.id for d in docs}

    def root(x: str) -> str:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in neardup.exact_pairs(neardup.shingle_sets([d.text for d in originals], settings)):
        parent[root(originals[a].id)] = root(originals[b].id)
    for d in docs:
        if d.kind != "original":
            parent[root(d.id)] = root(d.id.rsplit("~", 1)[0])
    return {d.id: root(d.id) for d in docs}


def run_index(ids: list[str], texts: list[str], settings: ShingleSettings) -> set:
    with tempfile.TemporaryDirectory() as folder:
        db = open_db(Path(folder) / "bench.db")
        dedup.index_texts(db, [(i, i, t) for i, t in zip(ids, texts)], settings)
        pairs = {tuple(sorted((p["a"], p["b"]))) for p in dedup.iter_similar_pairs(db)}
        db.conn.close()
    return pairs


def save_extractions(db, ids: list[str], texts: list[str]) -> None:
    """The set as stored pages with their extractions, as `templater extract` leaves them."""
    page_store.ensure_schema(db)
    empty = np.zeros(1, np.uint32)
    with sig_store.transaction(db):
        for page_id, text in zip(ids, texts):
            page_store.upsert_page(db, id=page_id, url=page_id, host="bench", html="", digest=page_id,
                                   fetched_at=None, encoding="utf-8", hashes=empty, shapes=empty, text_chars=len(text),
                                   now="bench")
            page_store.save_extraction(db, page_id=page_id, site="bench", method="gold", template=None,
                                       coverage=None, text=text, boilerplate_chars=0, digest=page_id, now="bench")


def run_signature_index(db, method: str) -> set:
    """index_signatures then iter_signature_duplicates: every pair within a cluster (connected components)."""
    signature_run.index_signatures(db, method=method)
    rows = signature_run.iter_signature_duplicates(db, method=method)
    return cluster_pairs({row["id"]: row["cluster"] for row in rows})


def run_datasketch(ids: list[str], texts: list[str], settings: ShingleSettings) -> set:
    from datasketch import MinHash, MinHashLSH

    def grams(text: str) -> list[bytes]:
        words = normalize(text).split()
        n = settings.n
        return [" ".join(words[i:i + n]).encode("utf-8") for i in range(max(1, len(words) - n + 1))] if words else []

    shingled = [grams(t) for t in texts]
    sketches = MinHash.bulk(shingled, num_perm=settings.permutations, seed=settings.seed)
    lsh = MinHashLSH(num_perm=settings.permutations, params=(settings.bands, settings.rows))
    by_id = dict(zip(ids, sketches))
    sets = dict(zip(ids, map(set, shingled)))

    def similarity(a: str, b: str) -> float:
        if settings.verify == "exact":
            return len(sets[a] & sets[b]) / len(sets[a] | sets[b])
        return by_id[a].jaccard(by_id[b])

    pairs = set()
    for page_id, sketch, grams_of in zip(ids, sketches, shingled):
        if not grams_of:
            continue
        for other in lsh.query(sketch):
            if similarity(page_id, other) >= settings.threshold:
                pairs.add(tuple(sorted((page_id, other))))
        lsh.insert(page_id, sketch)
    return pairs


def timed(fn, *args):
    start = time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - start


def recall_by_kind(pairs: set, docs: list[neardup.Doc]) -> dict[str, float]:
    hits: dict[str, list[bool]] = defaultdict(list)
    for d in docs:
        if d.kind != "original":
            hits[d.kind].append(tuple(sorted((d.id, d.id.rsplit("~", 1)[0]))) in pairs)
    return {kind: float(np.mean(v)) for kind, v in sorted(hits.items())}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=neardup.DEFAULT_CORPUS)
    parser.add_argument("--variants", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=4)
    parser.add_argument("--keep-lines", action="store_true",
                        help="keep the gold texts' line breaks in the edited copies (neardup joins the edited "
                             "words with spaces, which merges a heading or list line into the next sentence)")
    parser.add_argument("--no-index", dest="index", action="store_false",
                        help="leave out the table of every method through the persistent SQLite signature index")
    parser.add_argument("--json", type=Path, default=None, help="also write the rows as JSON Lines")
    args = parser.parse_args()
    if not args.corpus.is_dir():
        sys.exit(f"no corpus at {args.corpus}: give --corpus DIR (the dev corpus folder with */pages.jsonl.gz)")
    settings = ShingleSettings(**neardup.JACCARD)  # the gold definition: word-5-gram Jaccard >= 0.8
    docs = build_docs(args.corpus, args.variants, args.seed, keep_lines=args.keep_lines)
    ids, texts = [d.id for d in docs], [d.text for d in docs]
    gold = cluster_pairs(gold_clusters(docs, settings))
    normalize("warm-up")  # builds the character tables once, outside every timing

    rows = []
    for method in DEDUP_METHODS:
        found, seconds = timed(find_pairs, method, ids, texts)
        rows.append((method, set(found.pairs), seconds))
    rows.append(("minhash-lsh index", *timed(run_index, ids, texts, settings)))
    rows.append(("datasketch", *timed(run_datasketch, ids, texts, settings)))
    indexed = []
    if args.index:
        with tempfile.TemporaryDirectory() as folder:
            db = open_db(Path(folder) / "signatures.db")
            save_extractions(db, ids, texts)
            for method in signature_run.INDEX_METHODS:
                indexed.append((method, *timed(run_signature_index, db, method)))
            db.conn.close()

    copies = sum(d.kind != "original" for d in docs)
    print(f"{len(docs):,} documents ({len(docs) - copies:,} gold texts, {copies:,} edited copies"
          f"{', line breaks kept' if args.keep_lines else ''}); {len(gold):,} gold duplicate pairs\n")
    print("| method | precision | recall | F1 | seconds | pairs |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    records = []
    for name, pairs, seconds in rows:
        s = score_pairs(pairs, gold)
        print(f"| {name} | {s.precision:.3f} | {s.recall:.3f} | {s.f1:.3f} | {seconds:.2f} | {s.predicted_pairs:,} |")
        records.append({"method": name, "precision": s.precision, "recall": s.recall, "f1": s.f1,
                        "seconds": round(seconds, 3), "pairs": s.predicted_pairs,
                        "recall_by_kind": recall_by_kind(pairs, docs)})
    kinds = list(records[0]["recall_by_kind"])
    print("\nRecall by edit kind (a copy paired with its original):\n")
    print("| method | " + " | ".join(kinds) + " |")
    print("| --- |" + " ---: |" * len(kinds))
    for r in records:
        print(f"| {r['method']} | " + " | ".join(f"{r['recall_by_kind'][k]:.3f}" for k in kinds) + " |")
    if indexed:
        print("\nThrough the persistent index (`templater index-signatures` then `dups --method`: every pair within "
              "a cluster):\n")
        print("| method | precision | recall | F1 | seconds | pairs |")
        print("| --- | ---: | ---: | ---: | ---: | ---: |")
        for name, pairs, seconds in indexed:
            s = score_pairs(pairs, gold)
            print(f"| {name} | {s.precision:.3f} | {s.recall:.3f} | {s.f1:.3f} | {seconds:.2f} | "
                  f"{s.predicted_pairs:,} |")
            records.append({"method": f"{name} (signature index)", "precision": s.precision, "recall": s.recall,
                            "f1": s.f1, "seconds": round(seconds, 3), "pairs": s.predicted_pairs,
                            "recall_by_kind": recall_by_kind(pairs, docs)})
    if args.json:
        args.json.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
