#!/usr/bin/env python3
"""Template matching alone: the template lookup (each template read and compiled as a crawl reads it),
match_regions and drop_repeats, page by page, each page parsed, segmented and classified outside what is measured.

    python bench/bench_match.py DB [--limit N] [--repeat R]

DB: a database `templater ingest` and `templater build` made. Prints CPU ms a page and a digest of the outputs (two
versions that give the same digest gave the same masks and coverages). Under valgrind's callgrind,
`--collect-atstart=no --toggle-collect=functools_reduce` counts the measured calls alone: each runs inside a
functools.reduce. A few pages are run first, not measured (lazy imports, first calls).
"""

from __future__ import annotations

import argparse
import functools
import gc
import hashlib
import os
import sys
import time
from pathlib import Path

for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"):  # one core, before numpy loads
    os.environ.setdefault(_variable, "1")

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

from store import pages as page_store  # noqa: E402
from templater import extract, fallback, pipeline  # noqa: E402
from templater.blocks import segment  # noqa: E402
from templater.datatypes import Page  # noqa: E402
from templater.parse import parse_html  # noqa: E402

WARM_PAGES = 5  # pages run first, not measured


def measured(fn):
    """fn() inside a functools.reduce: what callgrind's --toggle-collect=functools_reduce counts."""
    return functools.reduce(lambda _, __: fn(), (None,), None)


def segmented(stored):
    root = parse_html(stored.html_bytes)
    if root is None:
        return None
    return segment(root, Page(stored.id, stored.url, stored.html_bytes, stored.fetched_at, stored.encoding or "utf-8"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("db", help="a database templater ingest and build made")
    parser.add_argument("--limit", type=int, default=None, help="the first N stored pages")
    parser.add_argument("--repeat", type=int, default=1, help="rounds (each with templates read afresh)")
    args = parser.parse_args()
    db = pipeline.open_store(args.db)
    ids = [pid for pid, _, _ in page_store.iter_page_keys(db)][: args.limit]
    stored_pages = list(page_store.load_pages(db, ids))
    gc.collect()
    gc.freeze()
    warm = pipeline.TemplateIndex(db)
    for stored in stored_pages[:WARM_PAGES]:
        seg = segmented(stored)
        compiled = warm.find(seg, stored.site) if seg is not None else None
        if compiled is not None and seg.blocks:
            allowed, _, in_region, _ = extract.match_regions(seg, compiled)
            keep = fallback.select_blocks(seg, allowed=allowed, trusted=in_region, settings=compiled.settings)
            extract.drop_repeats(seg, keep, in_region, compiled.settings)
    del warm
    clock = time.process_time_ns
    digest = hashlib.sha256()
    load = spent = pages = 0
    for round_ in range(args.repeat):
        index = pipeline.TemplateIndex(db)
        for stored in stored_pages:
            seg = segmented(stored)
            if seg is None:
                continue
            start = clock()
            if stored.site in index.sources and stored.site not in index.cache:
                measured(lambda: index.compiled(stored.site))
                load += clock() - start
                start = clock()
            compiled = measured(lambda: index.find(seg, stored.site))
            if compiled is None or not seg.blocks:
                continue
            allowed, coverage, in_region, trusted = measured(lambda: extract.match_regions(seg, compiled))
            spent += clock() - start
            keep = fallback.select_blocks(seg, allowed=allowed, trusted=in_region, settings=compiled.settings)
            start = clock()
            kept = measured(lambda: extract.drop_repeats(seg, keep, in_region, compiled.settings))
            spent += clock() - start
            pages += 1
            if round_ == 0:
                for mask in (allowed, in_region, trusted, kept):
                    digest.update(np.asarray(mask, dtype=bool).tobytes())
                digest.update(repr(coverage).encode())
    pages = max(pages // args.repeat, 1)
    print(f"pages {pages} x{args.repeat}: templates read and compiled {load / args.repeat / pages / 1e6:.4f} ms/page; "
          f"find + match_regions + drop_repeats {spent / args.repeat / pages / 1e6:.4f} ms/page (CPU); "
          f"digest {digest.hexdigest()[:16]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
