"""Each compiled function against its pure-Python definition, in the flow of extraction: what keeping it pays.

    python bench/bench_native.py DB [--limit 300] [--rounds 3] [--only NAME]

DB is a store templater built (`templater run ... --db DB`, or ingest + build). For each compiled function
(templater/_walk.pyx, templater/_numeric.c) the Python function that dispatches to it (native.walk or
native.numeric, read at each call) is wrapped, one at a time, and the stored pages are extracted with their
templates (`pipeline.extract_stored_page`: parse, segment, template, classifier, metadata), each site's first
pages are parsed and learned from, and the classifier's stages are run step by step (FLOWS). Every call of the
wrapped function runs twice on the same arguments, compiled and with its part of templater.native set to None (its
pure definition: numpy, lxml, the regexes), the order alternating from call to call; the CPU time of each side is
summed (time.process_time_ns). A pure run takes the pure path all the way down (what dropping that compiled code
would cost); the compiled result is the one the flow goes on with. Prints per function and flow: calls, compiled
and pure ms per stored page, and pure / compiled.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

# (compiled function, the module and name of the Python function that dispatches to it, the part of native)
WRAPPERS = [
    ("_walk.segment (+ crc32)", "blocks", "segment", "walk"),
    ("_walk.head_title", "blocks", "head_title", "walk"),
    ("_walk.number_tree", "features", "number_tree", "walk"),
    ("_walk.inside (extract)", "extract", "_inside", "walk"),
    ("_walk.inside (template)", "template", "_owned_by", "walk"),
    ("_walk.inside (metadata)", "metadata", "_times_inside", "walk"),
    ("_walk.match_rules (containers)", "extract", "_rule_elements", "walk"),
    ("_walk.match_rules (meta rules)", "metadata", "rule_metadata", "walk"),
    ("_walk.normalized_length (size_limit)", "template", "size_limit", "walk"),
    ("_walk.normalized_length (fits)", "template", "fits", "walk"),
    ("_walk.dfa_visits", "metadata", "detect_language", "walk"),
    ("_walk.may_be_named_author", "metadata", "looks_like_byline", "walk"),
    ("_walk.named_candidates", "metadata", "named_candidates", "walk"),
    ("_walk.short_text", "metadata", "_short_text", "walk"),
    ("_numeric.markup_counts", "parse", "markup_counts", "numeric"),
    ("_numeric.utf8_controls_to_space", "parse", "clean_text", "numeric"),
    ("_numeric.text_matrix", "features", "_text_columns", "numeric"),
    ("_numeric.tree_inside", "features", "inside", "numeric"),
    ("_numeric.tree_sum_up", "features", "sum_up", "numeric"),
    ("_numeric.block_features (+ text_matrix)", "features", "block_features", "numeric"),
    ("_numeric.context_features", "features", "context_features", "numeric"),
    ("_numeric.ensemble", "ann", "predict_mean", "numeric"),
    ("_numeric.two_stage (ensemble, context_features)", "fallback", "stage_scores", "numeric"),
    ("_numeric.first_places", "metadata", "find_in", "numeric"),
]


class Timed:
    """Wraps one dispatching function: each call runs compiled and pure, alternately first."""

    def __init__(self, function, part: str) -> None:
        self.function, self.part = function, part
        self.calls = self.compiled_ns = self.pure_ns = 0
        self.active = False

    def __call__(self, *args, **kwargs):
        from templater import native

        if self.active or getattr(native, self.part) is None:  # a call inside the pure run: no second timing
            return self.function(*args, **kwargs)
        self.active = True
        try:
            self.calls += 1
            saved = getattr(native, self.part)
            result = None
            for pure in ((False, True) if self.calls % 2 else (True, False)):
                setattr(native, self.part, None if pure else saved)
                try:
                    start = time.process_time_ns()
                    value = self.function(*args, **kwargs)
                    spent = time.process_time_ns() - start
                finally:
                    setattr(native, self.part, saved)
                if pure:
                    self.pure_ns += spent
                else:
                    self.compiled_ns += spent
                    result = value
            return result
        finally:
            self.active = False


def patch(module_name: str, name: str, timed: Timed) -> list:
    """Bind ``timed`` wherever templater's modules hold the function (module globals and from-imports)."""
    original = timed.function
    done = []
    for module in list(sys.modules.values()):
        if module is None or not getattr(module, "__name__", "").startswith(("templater.", "store.")):
            continue
        for attr, value in list(vars(module).items()):
            if value is original:
                setattr(module, attr, timed)
                done.append((module, attr))
    assert done, f"templater.{module_name}.{name} not found"
    return done


def extract_flow(stored, index) -> None:
    """The stored pages extracted with their templates, as `templater extract` does."""
    from templater import pipeline

    for page in stored:
        pipeline.extract_stored_page(page, index, method="auto")


def learn_flow(stored, index) -> None:
    """Each site's first eight stored pages parsed from their HTML with the page limits checked (as ingest does)
    and learned from (as build does)."""
    from templater.blocks import segment
    from templater.datatypes import Page
    from templater.parse import parse_checked
    from templater.template import learn_template

    by_site: dict[str, list] = {}
    for page in stored:
        by_site.setdefault(page.site or page.group_key or "", []).append(page)
    for site, pages in sorted(by_site.items()):
        segs = []
        for page in pages[:8]:
            root, _ = parse_checked(page.html)
            if root is not None:
                segs.append(segment(root, Page(id=page.id, url=page.url, html=page.html_bytes)))
        if len(segs) >= 3:
            learn_template(segs, site=site)


def steps_flow(stored, index) -> None:
    """The default classifier's two stages step by step (stage_scores' numpy path: the first ensemble, the
    context columns), on each stored page's allowed blocks: ensemble and context_features outside two_stage."""
    from templater import ann, features, fallback, pipeline
    from templater.extract import apply_template

    weights = fallback.default_weights()
    for page in stored:
        seg = pipeline.stored_segment(page)
        if not getattr(seg, "blocks", None):
            continue
        compiled = index.find(seg, page.site)
        tree = features.number_tree(seg)
        feats = features.block_features(seg, tree)
        first = ann.predict_mean(weights.first, feats)
        if compiled is not None:
            first = first * apply_template(seg, compiled)[0]
        features.context_features(seg, tree, first)


FLOWS = {"extract": extract_flow, "learn": learn_flow, "steps": steps_flow}


def run(db_path: Path, limit: int, only: str | None) -> tuple[int, list[tuple]]:
    import importlib

    from store import pages as page_store
    from templater import native, pipeline

    if not native.COMPILED:
        raise SystemExit(f"the compiled parts are not loaded: {native.STATUS}")
    db = pipeline.open_store(db_path, readonly=True)
    ids = [pid for pid, _, _ in page_store.iter_page_keys(db)][:limit]
    stored = list(page_store.load_pages(db, ids))
    index = pipeline.TemplateIndex(db)
    pipeline.warm_models()
    for flow in FLOWS.values():  # warm caches (compiled templates, the language model) before any timing
        flow(stored[:20], index)
    rows = []
    for label, module_name, name, part in WRAPPERS:
        if only and only not in label:
            continue
        module = importlib.import_module(f"templater.{module_name}")
        for flow_name, flow in FLOWS.items():
            timed = Timed(getattr(module, name), part)
            bound = patch(module_name, name, timed)
            try:
                flow(stored, index)
            finally:
                for owner, attr in bound:
                    setattr(owner, attr, timed.function)
            if timed.calls:
                rows.append((label, f"{module_name}.{name}", flow_name, timed.calls, timed.compiled_ns,
                             timed.pure_ns))
    db.conn.close()
    return len(stored), rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("db", type=Path, help="a store templater built from the pages (ingest + build)")
    parser.add_argument("--limit", type=int, default=300, help="stored pages extracted (default 300)")
    parser.add_argument("--rounds", type=int, default=3, help="passes over the pages; medians are shown")
    parser.add_argument("--only", default=None, help="only the functions whose label holds this")
    args = parser.parse_args()
    results: dict[tuple, list] = {}
    pages = 0
    for _ in range(args.rounds):
        pages, rows = run(args.db, args.limit, args.only)
        for label, wrapper, flow, calls, compiled_ns, pure_ns in rows:
            results.setdefault((label, wrapper, flow), []).append((calls, compiled_ns, pure_ns))
    print("| compiled function | wraps | flow | calls a page | compiled ms/page | pure ms/page | pure / compiled |")
    print("| --- | --- | --- | ---: | ---: | ---: | ---: |")
    for (label, wrapper, flow), runs in results.items():
        calls = runs[0][0]
        compiled = statistics.median(r[1] for r in runs) / 1e6 / pages
        pure = statistics.median(r[2] for r in runs) / 1e6 / pages
        ratio = f"{pure / compiled:.2f}x" if compiled else "-"
        print(f"| {label} | `{wrapper}` | {flow} | {calls / pages:.2f} | {compiled:.4f} | {pure:.4f} | {ratio} |")
    print(f"\n{pages} stored pages, {args.rounds} rounds (medians), CPU time, in-flow A/B; flows: "
          + "; ".join(f"{name}: {flow.__doc__.split(chr(10))[0]}" for name, flow in FLOWS.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
