"""Two indexes in lockstep: the same synthetic batches into index A and index B, batch by batch, each timed by CPU.

    python bench/bench_index_paired.py [--a JSON] [--b JSON] [--checkout-a DIR] [--checkout-b DIR]
                                       [--n 1000000] [--batch 200] [--dir DIR] [--keep]

    python bench/bench_index_paired.py --checkout-a ../base --b '{"anchor_keys": 10, "anchor_tail_keys": 2}'

``bench/bench_index.py`` compares two codes or settings by two runs, one after the other: on a shared machine the
load (and with it the CPU time a page costs: caches and cores are shared) moves between runs by more than many
changes cost (two 1M runs of one code 10-15% apart). Here each side is a process of its own (with ``--checkout-a``
or ``--checkout-b``, that checkout's code and virtual environment, ``DIR/.venv/bin/python``; else this checkout's)
that makes ``bench_index``'s synthetic batches (the same seed: the same signatures, samples and planted copies on
both sides, each side's anchor keys made with its own settings, outside the timed call) and inserts them with
``store.lsh.add_signatures`` inside ``extract``'s growing transactions (``pipeline.GrowingBatch``), as
``bench_index --commit growing`` does. The two sides take turns, one batch at a time (A first on even batches, B
first on odd ones; never both at once), so whatever the machine does falls on both alike. ``--a`` and ``--b``:
each side's settings, changes to its code's defaults. Printed: per tenth of the run, each side's pages per CPU second
and their ratio; for the whole run the same, and the mean per-batch CPU difference with its standard error; then
each index's clusters and key rows (the same planted copies found on both sides).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve()


def worker(checkout: Path, settings_json: str, n: int, batch: int, path: Path) -> None:
    """One side: read a batch number a line, insert that batch, answer its CPU seconds; "end": answer the stats."""
    sys.path.insert(0, str(checkout))
    sys.path.insert(0, str(checkout / "bench"))
    import bench_index
    from store import lsh
    from store.lsh import IndexedPage
    from templater.pipeline import GrowingBatch
    from templater.shingles import ShingleSettings, Signatures

    settings = ShingleSettings(**json.loads(settings_json))
    args = argparse.Namespace(dup_share=0.1, set_size=1000, verify=settings.verify, sample=settings.sample)
    db = bench_index.create(path, 0)
    growing = GrowingBatch(db)
    rng = np.random.default_rng(bench_index.SEED)
    pool = bench_index.Pool(settings.permutations, args.set_size)
    starts = range(0, n, batch)
    for line in sys.stdin:
        if line.strip() == "end":
            stats = lsh.stats(db)
            print(json.dumps({"clusters": stats["clusters"], "pages_in_clusters": stats["pages_in_clusters"],
                              "key_rows": sum(s.rows for s in lsh._segments(db).items)}), flush=True)
            db.conn.close()
            return
        start = starts[int(line)]
        count = min(batch, n - start)
        values, shingles, sets, _, anchors = bench_index.make_batch(rng, count, pool, args, settings)
        pages = [IndexedPage(bench_index.page_id(j), bench_index.page_id(j)) for j in range(start, start + count)]
        signatures = Signatures(values, np.zeros(count, bool), settings, anchors)
        began = time.process_time()
        growing.begin()
        lsh.add_signatures(db, pages, signatures, shingles=shingles)
        growing.step(count)
        if start + count >= n:
            growing.commit()
        spent = time.process_time() - began
        pool.push(values, sets)
        print(spent, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--a", default="{}", help="settings of index A: changes to its code's defaults (JSON)")
    parser.add_argument("--b", default="{}", help="settings of index B: changes to its code's defaults (JSON)")
    parser.add_argument("--checkout-a", type=Path, default=HERE.parents[1], help="the checkout whose code A runs")
    parser.add_argument("--checkout-b", type=Path, default=HERE.parents[1], help="the checkout whose code B runs")
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--batch", type=int, default=200, help="pages a call (pipeline.BATCH_PAGES)")
    parser.add_argument("--dir", type=Path, default=None, help="where the two databases go (default: a new temporary "
                                                                "folder)")
    parser.add_argument("--keep", action="store_true", help="keep the two databases")
    parser.add_argument("--worker", nargs=2, metavar=("CHECKOUT", "DB"), help=argparse.SUPPRESS)
    parser.add_argument("--settings", default="{}", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(Path(args.worker[0]), args.settings, args.n, args.batch, Path(args.worker[1]))
        return
    folder = args.dir or Path(tempfile.mkdtemp(prefix="bench-paired-"))
    folder.mkdir(parents=True, exist_ok=True)
    paths = [folder / "a.db", folder / "b.db"]
    for path in paths:
        if path.exists():
            sys.exit(f"{path} exists: give a new --dir")
    sides = []
    for checkout, settings, path in ((args.checkout_a, args.a, paths[0]), (args.checkout_b, args.b, paths[1])):
        checkout = checkout.resolve()
        python = checkout / ".venv" / "bin" / "python"
        sides.append(subprocess.Popen(
            [str(python if python.exists() else sys.executable), str(HERE), "--worker", str(checkout), str(path),
             "--settings", settings, "--n", str(args.n), "--batch", str(args.batch)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1))
    print(f"{args.n:,} synthetic pages in batches of {args.batch} (growing commits), in lockstep: A {args.checkout_a} "
          f"{args.a}, B {args.checkout_b} {args.b}; {folder}", flush=True)
    cpu: tuple[list[float], list[float]] = ([], [])
    batches = len(range(0, args.n, args.batch))
    step, reported = max(1, batches // 10), 0
    for i in range(batches):
        for side in ((0, 1) if i % 2 == 0 else (1, 0)):
            sides[side].stdin.write(f"{i}\n")
            sides[side].stdin.flush()
            cpu[side].append(float(sides[side].stdout.readline()))
        if (i + 1) % step == 0 or i + 1 == batches:
            pages = sum(min(args.batch, args.n - j * args.batch) for j in range(reported, i + 1))
            a, b = (pages / sum(c[reported:]) for c in cpu)
            reported = i + 1
            print(f"  {min(args.n, (i + 1) * args.batch):>9,} pages  A {a:8,.0f}  B {b:8,.0f} per CPU second (this "
                  f"tenth)  B/A {b / a - 1:+.1%}  load {os.getloadavg()[0]:.1f}", flush=True)
    a, b = (args.n / sum(c) for c in cpu)
    difference = np.array(cpu[1]) - np.array(cpu[0])
    print(f"whole run: A {a:,.0f}, B {b:,.0f} pages per CPU second (B/A {b / a - 1:+.2%}); a batch's CPU B - A "
          f"{difference.mean() * 1e3:+.3f} ms (standard error {difference.std() / np.sqrt(len(difference)) * 1e3:.3f} ms;"
          f" A's batch {np.mean(cpu[0]) * 1e3:.3f} ms)")
    for name, process in zip("AB", sides):
        process.stdin.write("end\n")
        process.stdin.flush()
        stats = json.loads(process.stdout.readline())
        process.wait()
        print(f"  {name}: {stats['clusters']:,} clusters holding {stats['pages_in_clusters']:,} pages; "
              f"{stats['key_rows']:,} key rows in segments")
    if not args.keep:
        for path in paths:
            for suffix in ("", "-wal", "-shm"):
                Path(f"{path}{suffix}").unlink(missing_ok=True)


if __name__ == "__main__":
    main()
