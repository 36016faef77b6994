"""Text -> MinHash signature throughput: templater against datasketch and rensa, in the same run.

    python bench/bench_minhash.py [--docs 2000] [--repeat 5] [--corpus ../shared/corpus] [--n 3]

Input: the first ``--docs`` gold texts of the dev corpus (datasets in name order, records in file order). Every
method starts from the raw text and ends with a 128-slot signature, word n-grams (``--n``, default the index's
default: 3), fixed seed:

    templater oph     templater.shingles.sign (one-permutation MinHash, the default scheme)
    templater kperm   the same with 128 independent multiply-add-shift hash functions
    templater+sample  oph signature and the bottom-256 sample of the shingle hashes that the index stores to verify
                      candidates (verify="sample", the default): what ``dedup.index_texts`` computes per text
    datasketch        MinHash.bulk over the n-gram strings (encoded to bytes)
    rensa             RMinHash(128, seed).update(n-gram strings) per text; rensa batch: digest_matrix_from_token_sets
    python shingles   lower-case + regex tokens + n-gram strings alone: the peers' front end (not a signature)

The peers get the fastest pure-Python front end (``re.findall`` over the lower-cased text, n-grams joined by
``map(" ".join, zip(...))``); their timings include it because turning text into shingles is the real cost.
Two more rows time the kernels alone on the same precomputed 64-bit shingle hashes: templater's
``sign_shingles`` and rensa's ``digest_matrix_from_flat_token_hashes``. Each method runs ``--repeat`` times,
interleaved; the best run counts (the machine is shared). rensa may use its own threads; templater uses one.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from templater import shingles as sh  # noqa: E402

DEFAULT_CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus"
TOKEN = re.compile(r"[^\W_]+")
N, PERMUTATIONS, SEED = sh.ShingleSettings().n, 128, 1  # N: --n


def load_gold_texts(corpus: Path, limit: int) -> list[str]:
    """The first ``limit`` non-empty gold texts, datasets in name order."""
    texts: list[str] = []
    for path in sorted(corpus.glob("*/pages.jsonl.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as f:
            for line in f:
                gold = json.loads(line).get("gold")
                if gold and gold.strip():
                    texts.append(gold)
                    if len(texts) >= limit:
                        return texts
    return texts


def python_shingles(text: str) -> list[str]:
    tokens = TOKEN.findall(text.lower())
    return list(map(" ".join, zip(*(tokens[i:] for i in range(N))))) or [" ".join(tokens)]


def run_datasketch(texts: list[str]) -> None:
    from datasketch import MinHash
    MinHash.bulk([[s.encode("utf-8") for s in python_shingles(t)] for t in texts], num_perm=PERMUTATIONS, seed=SEED)


def run_rensa(texts: list[str]) -> None:
    from rensa import RMinHash
    for text in texts:
        m = RMinHash(PERMUTATIONS, SEED)
        m.update(python_shingles(text))
        m.digest()


def run_rensa_batch(texts: list[str]) -> None:
    from rensa import RMinHash
    RMinHash.digest_matrix_from_token_sets([python_shingles(t) for t in texts], PERMUTATIONS, SEED)


def run_templater(scheme: str) -> Callable[[list[str]], None]:
    settings = sh.ShingleSettings(scheme=scheme, permutations=PERMUTATIONS, seed=SEED, n=N)
    return lambda texts: sh.sign(texts, settings)


def run_templater_sampled(texts: list[str]) -> None:
    settings = sh.ShingleSettings(permutations=PERMUTATIONS, seed=SEED, n=N)
    for batch in sh.iter_batches(texts):
        shingles = sh.shingle_hashes(batch, settings)
        sh.sign_shingles(shingles, settings)
        sh.verification_sets(shingles, settings)


def kernels(texts: list[str]) -> dict[str, Callable[[list[str]], None]]:
    """Kernels on precomputed shingle hashes (hashing done once, outside the timing)."""
    from rensa import RMinHash
    settings = sh.ShingleSettings(permutations=PERMUTATIONS, seed=SEED, n=N)
    parts = [sh.shingle_hashes(b, settings) for b in sh.iter_batches(texts)]
    hashes = np.concatenate([p.hashes for p in parts])
    offsets = np.concatenate(([0], np.cumsum(np.concatenate([p.counts for p in parts])))).astype(np.uint64)
    return {
        "templater kernel": lambda _: [sh.sign_shingles(p, settings) for p in parts],
        "rensa kernel": lambda _: RMinHash.digest_matrix_from_flat_token_hashes(hashes, offsets, PERMUTATIONS, SEED),
    }


def measure(methods: dict[str, Callable[[list[str]], None]], texts: list[str],
            repeat: int) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Wall-clock and CPU seconds (all threads of the process) of every run of every method."""
    wall: dict[str, list[float]] = {name: [] for name in methods}
    cpu: dict[str, list[float]] = {name: [] for name in methods}
    for _ in range(repeat):
        for name, run in methods.items():
            start, start_cpu = time.perf_counter(), time.process_time()
            run(texts)
            wall[name].append(time.perf_counter() - start)
            cpu[name].append(time.process_time() - start_cpu)
    return wall, cpu


def main() -> None:
    global N
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--n", type=int, default=sh.ShingleSettings().n, help="word n-grams (every method)")
    args = parser.parse_args()
    N = args.n
    if not args.corpus.is_dir():
        sys.exit(f"no corpus at {args.corpus}: give --corpus DIR (the dev corpus folder with */pages.jsonl.gz)")
    texts = load_gold_texts(args.corpus, args.docs)
    sh._char_tables()  # built once per process (~0.25 s), not part of any run
    words = sum(len(TOKEN.findall(t)) for t in texts)
    print(f"{len(texts)} gold texts, {words / len(texts):.0f} words each on average; word {N}-grams, "
          f"{PERMUTATIONS} permutations, best of {args.repeat}")
    methods = {"templater oph": run_templater("oph"), "templater+sample": run_templater_sampled,
               "templater kperm": run_templater("kperm"),
               "datasketch": run_datasketch, "rensa": run_rensa, "rensa batch": run_rensa_batch,
               "python shingles": lambda ts: [python_shingles(t) for t in ts], **kernels(texts)}
    times, cpu = measure(methods, texts, args.repeat)
    rate = {name: len(texts) / min(ts) for name, ts in times.items()}
    for name, ts in times.items():
        print(f"  {name:18s} {rate[name]:>10,.0f} docs/s  (median {len(texts) / np.median(ts):,.0f}; "
              f"{len(texts) / min(cpu[name]):,.0f} per CPU second)")
    rensa = max(rate["rensa"], rate["rensa batch"])
    ours = rate["templater oph"]
    print(f"templater oph / datasketch = {ours / rate['datasketch']:.1f}x (goal >= 10x); "
          f"/ best rensa = {ours / rensa:.2f}x (goal >= 1x); "
          f"kernels: templater / rensa = {rate['templater kernel'] / rate['rensa kernel']:.2f}x; "
          f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
