"""The only templater module that talks to the store: ingest, build, extract, run.

Each public function is what one CLI command calls. Work is committed in batches, so a killed run keeps what it
committed and a rerun continues (an unchanged page is recognised by its content hash and only touched).
"""

from __future__ import annotations

import dataclasses
import logging
import random
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import sqlite_utils

from store import pages as page_store
from store import pins as pin_store
from store import templates as template_store
from store.db import open_db

from . import config, dedup, signature_run
from .blocks import segment
from .config import LearnSettings
from .encoding import decode_page
from .errors import InputError
from .extract import CompiledTemplate, extract_page
from .grouping import assign_groups, cluster_layouts, host_of, layout_containment, match_prefix, shape_set
from .parse import parse_html
from .sources import check_input, input_format, iter_records
from .template import learn_template
from .types import Extraction, Page, RawPage, Segmented, Skip, Template

log = logging.getLogger(__name__)

BATCH_PAGES = 200  # pages per committed transaction
LAYOUT_SHAPE_SHARE = 0.5  # a tag path on this share of a cluster's pages belongs to its layout signature

Progress = Callable[[int, int | None], None]  # (items done so far, total if known)


@dataclass
class Summary:
    """Counts of what a command did; ``skipped`` holds the reasons of records not processed."""

    counts: Counter = field(default_factory=Counter)
    skipped: Counter = field(default_factory=Counter)

    def to_json(self) -> dict:
        return {"counts": dict(sorted(self.counts.items())), "skipped": dict(sorted(self.skipped.items()))}

    def merge(self, other: Summary) -> Summary:
        self.counts.update(other.counts)
        self.skipped.update(other.skipped)
        return self


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def open_store(path: str | Path, *, create: bool = True) -> sqlite_utils.Database:
    """Open a templater database and bring its schema up to date."""
    db = open_db(path, create=create)
    page_store.ensure_schema(db)
    template_store.ensure_schema(db)
    pin_store.ensure_schema(db)
    return db


def segment_page(page: Page) -> Segmented | Skip:
    """Parse and segment a page (decoded, or a stored page's UTF-8 bytes); a Skip with the reason when it yields
    nothing to work with."""
    root = parse_html(page.html)
    if root is None:
        return Skip("unparsable", page.url, "lxml built no tree", id=page.id, url=page.url)
    seg = segment(root, page)
    if not seg.blocks:
        return Skip("no-text", page.url, "no text blocks in the body", id=page.id, url=page.url)
    return seg


class _Batch:
    """Commit every ``size`` writes: one transaction per batch."""

    def __init__(self, db: sqlite_utils.Database, size: int = BATCH_PAGES) -> None:
        self.db, self.size, self.pending = db, size, 0

    def __enter__(self) -> _Batch:
        return self

    def write(self) -> None:
        if self.pending == 0:
            self.db.execute("BEGIN IMMEDIATE")
        self.pending += 1
        if self.pending >= self.size:
            self.commit()

    def commit(self) -> None:
        if self.pending:
            self.db.execute("COMMIT")
            self.pending = 0

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.commit()
        elif self.pending:
            self.db.execute("ROLLBACK")


def ingest(db: sqlite_utils.Database, inputs: Sequence[str | Path], *, progress: Progress | None = None) -> Summary:
    """Read pages from files and folders into the store; bad records are skipped and counted by reason."""
    summary = Summary()
    with _Batch(db) as batch:
        for done, item in enumerate(iter_records(inputs), 1):
            outcome = _ingest_one(db, item, batch)
            if isinstance(outcome, Skip):
                summary.skipped[outcome.reason] += 1
                log.info("skipped %s: %s %s", outcome.source, outcome.reason, outcome.detail)
            else:
                summary.counts[outcome] += 1
            if progress:
                progress(done, None)
    return summary


def _ingest_one(db: sqlite_utils.Database, item, batch: _Batch) -> str | Skip:
    stamp = now()
    seg = prepare_record(item)
    if isinstance(seg, Skip):
        batch.write()
        page_store.record_skip(db, source=seg.source, reason=seg.reason, detail=seg.detail, page_id=seg.id,
                               url=seg.url, now=stamp)
        return seg
    page = seg.page
    host = host_of(page.url)
    data, digest = page_store.encode_page(page.html)
    batch.write()
    return page_store.upsert_page(
        db, id=page.id, url=page.url, host=host, html=data, digest=digest, fetched_at=page.fetched_at,
        encoding=page.encoding, hashes=seg.vector, shapes=block_shapes(seg),
        text_chars=sum(len(b.text) for b in seg.blocks), now=stamp)


def prepare_record(item: RawPage | Skip) -> Segmented | Skip:
    """A record as ingest sees it: decoded and segmented, or a Skip with the reason."""
    page = item if isinstance(item, Skip) else decode_page(item)
    return page if isinstance(page, Skip) else segment_page(page)


def block_shapes(seg: Segmented) -> np.ndarray:
    """The page's tag-path hashes (uint32), one per block: what layout clustering compares."""
    return np.fromiter((b.shape for b in seg.blocks), dtype=np.uint32, count=len(seg.blocks))


def site_name(group_key: str, layout: int) -> str:
    """A template's site name: the URL prefix, with the layout cluster number when it is not the first."""
    return group_key if layout == 0 else f"{group_key}#{layout}"


def build(db: sqlite_utils.Database, *, settings: LearnSettings = LearnSettings(),
          progress: Progress | None = None) -> Summary:
    """Group stored pages by URL prefix and layout, and learn a template for each large enough cluster."""
    summary = Summary()
    keys = list(page_store.iter_page_keys(db))
    groups = assign_groups([url for _, url, _ in keys], min_pages=settings.min_group_pages)
    members: dict[str, list[str]] = defaultdict(list)
    for (pid, _, _), group in zip(keys, groups):
        members[group].append(pid)
    done = 0
    for group, ids in sorted(members.items()):
        summary.merge(learn_group(db, group, ids, settings))
        done += len(ids)
        if progress:
            progress(done, len(keys))
    summary.counts["pages"] = len(keys)
    return summary


def learn_group(db: sqlite_utils.Database, group: str, ids: list[str], settings: LearnSettings, *,
                reason: str = "learned") -> Summary:
    """Cluster one URL group's pages by layout, learn a template for each large enough cluster (each committed on
    its own, a new version only when its rules changed) and assign the pages to their sites."""
    summary = Summary()
    assignments: list[tuple[str, str | None, str | None]] = []
    if len(ids) < settings.min_template_pages:
        assignments = [(pid, group, None) for pid in ids]
        summary.counts["pages without template"] += len(ids)
    else:
        shapes = page_store.page_shapes(db, ids)
        for layout, cluster, cluster_sets in plan_layouts(ids, [shape_set(shapes[pid]) for pid in ids], settings):
            site = _learn_cluster(db, group, layout, cluster, cluster_sets, settings, summary, reason=reason)
            assignments += [(pid, group, site) for pid in cluster]
    db.execute("BEGIN IMMEDIATE")
    try:
        page_store.assign_sites(db, assignments)
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    return summary


def plan_layouts(ids: list[str], sets: list[np.ndarray],
                 settings: LearnSettings) -> list[tuple[int, list[str], list[np.ndarray]]]:
    """(layout number, page ids, their shape sets) of each layout cluster of one URL group's pages (ids in order)."""
    labels = cluster_layouts(sets, threshold=settings.layout_similarity)
    labels = _adopt_strays(labels, sets, settings)
    return [(layout, [pid for pid, label in zip(ids, labels) if label == layout],
             [s for s, label in zip(sets, labels) if label == layout]) for layout in sorted(set(labels))]


def _adopt_strays(labels: list[int], sets: list[np.ndarray], settings: LearnSettings) -> list[int]:
    """Pages of clusters too small for a template join the large cluster whose layout they contain, if any."""
    sizes = Counter(labels)
    large = [label for label, n in sorted(sizes.items()) if n >= settings.min_template_pages]
    signatures = {label: layout_signature([s for s, x in zip(sets, labels) if x == label]) for label in large}
    adopted = list(labels)
    for i, (label, shapes) in enumerate(zip(labels, sets)):
        if sizes[label] >= settings.min_template_pages or not large:
            continue
        score, best = max((layout_containment(signatures[x], shapes), x) for x in large)
        if score >= settings.layout_match:
            adopted[i] = best
    return adopted


def _learn_cluster(db: sqlite_utils.Database, group: str, layout: int, ids: list[str], sets: list[np.ndarray],
                   settings: LearnSettings, summary: Summary, *, reason: str = "learned") -> str | None:
    if len(ids) < settings.min_template_pages:
        summary.counts["pages without template"] += len(ids)
        return None
    pages = page_store.load_pages(db, learn_sample(ids, settings))
    template = learn_cluster(group, layout, [stored_segment(p) for p in pages], settings, reason=reason)
    if template is None:
        summary.counts["pages without template"] += len(ids)
        return None
    db.execute("BEGIN IMMEDIATE")
    try:
        _, written = template_store.save_template(db, template, group_key=group,
                                                  layout_shapes=layout_signature(sets), settings=asdict(settings))
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    summary.counts["templates learned" if written else "templates unchanged"] += 1
    summary.counts["pages with template"] += len(ids)
    return template.site


def learn_sample(ids: list[str], settings: LearnSettings) -> list[str]:
    """The ids of a layout cluster's pages to learn from, sorted: all of them, or a seeded sample of
    ``max_learn_pages``."""
    sample = sorted(ids)
    if len(sample) > settings.max_learn_pages:
        sample = sorted(random.Random(config.LEARN_SEED).sample(sample, settings.max_learn_pages))
    return sample


def learn_cluster(group: str, layout: int, segs: Sequence[Segmented | Skip], settings: LearnSettings, *,
                  reason: str = "learned") -> Template | None:
    """The template of one layout cluster from its sampled pages (in ``learn_sample`` order), or None when too few
    of them could be segmented."""
    segs = [s for s in segs if isinstance(s, Segmented)]
    if len(segs) < settings.min_template_pages:
        return None
    return learn_template(segs, site=site_name(group, layout), layout=layout, settings=settings, reason=reason)


def layout_signature(sets: list[np.ndarray]) -> np.ndarray:
    """Tag paths on at least LAYOUT_SHAPE_SHARE of a cluster's pages: what a new page is matched against."""
    counts = Counter(x for s in sets for x in s.tolist())
    need = LAYOUT_SHAPE_SHARE * len(sets)
    return np.array(sorted(x for x, n in counts.items() if n >= need), dtype=np.uint32)


def stored_segment(stored: page_store.StoredPage) -> Segmented | Skip:
    """Parse and segment a stored page from its stored UTF-8 bytes (never decoded)."""
    page = Page(id=stored.id, url=stored.url, html=stored.html_bytes, fetched_at=stored.fetched_at,
                encoding=stored.encoding or "utf-8")
    return segment_page(page)


def segment_file(path: Path, *, url: str | None = None) -> Segmented:
    """Read, decode and segment one local .html file (its URL is ``url``, else its file:// URL)."""
    check_input(path)
    if input_format(path) != "html" or path.is_dir():
        raise InputError(f"{path}: give one .html or .htm file")
    raw = next(iter_records([path]))
    if url:
        raw = dataclasses.replace(raw, url=url, id=url)
    seg = prepare_record(raw)
    if isinstance(seg, Skip):
        detail = f": {seg.detail}" if seg.detail else ""
        raise InputError(f"{path}: no text to work with ({seg.reason}{detail})")
    return seg


def extract_file(db: sqlite_utils.Database, path: Path, *, url: str | None = None, method: str = "auto",
                 settings: LearnSettings = LearnSettings()) -> Extraction:
    """Extract a local .html file with the template of the site its URL (or layout) matches; nothing is stored."""
    seg = segment_file(path, url=url)
    return extract_page(seg, TemplateIndex(db).find(seg, None, threshold=settings.layout_match), method=method)


class TemplateIndex:
    """The current templates, by site and by URL prefix, compiled for extraction."""

    def __init__(self, db: sqlite_utils.Database | None,
                 entries: Iterable[tuple[str, np.ndarray, Template]] | None = None) -> None:
        """From a database's current templates (pins applied), or from ``entries`` already read from one (the
        (group, layout signature, pinned template) rows a Spark job broadcasts), in ``iter_current`` order."""
        self.by_site: dict[str, CompiledTemplate] = {}
        self.by_group: dict[str, list[tuple[np.ndarray, CompiledTemplate]]] = defaultdict(list)
        if entries is None:
            entries = ((group, shapes, pin_store.apply_pins(db, template))
                       for group, shapes, template in template_store.iter_current(db))
        for group, shapes, template in entries:
            compiled = CompiledTemplate(template)
            self.by_site[template.site] = compiled
            self.by_group[group].append((shapes, compiled))

    def find(self, seg: Segmented, site: str | None, *, threshold: float) -> CompiledTemplate | None:
        """The page's template: the one its build assigned, else the best layout of its longest known prefix."""
        if site in self.by_site:
            return self.by_site[site]
        group = match_prefix(seg.page.url, self.by_group)
        if group is None:
            return None
        return best_layout(seg, self.by_group[group], threshold=threshold)


def best_layout(seg: Segmented, layouts: Sequence[tuple[np.ndarray, CompiledTemplate]], *,
                threshold: float) -> CompiledTemplate | None:
    """Of a group's (layout signature, template) pairs, the template whose layout the page fits best, if it fits."""
    shapes = shape_set(block_shapes(seg))
    scored = [(layout_containment(layout, shapes), compiled) for layout, compiled in layouts]
    score, best = max(scored, key=lambda sc: sc[0])
    return best if score >= threshold else None


def extract(db: sqlite_utils.Database, *, method: str = "auto", ids: Sequence[str] | None = None,
            settings: LearnSettings = LearnSettings(), index: bool = False, links: bool = False,
            progress: Progress | None = None) -> Iterator[Extraction]:
    """Extract every stored page (or the given ids) with its template, store the result, and yield it.

    With ``index``, the extracted texts also go into the near-duplicate index, one batch per committed batch.
    With ``links``, each result's document carries its links' URLs.
    """
    if ids is None:
        ids = [pid for pid, _, _ in page_store.iter_page_keys(db)]
    results = _extract_stored(db, ids, method=method, settings=settings, links=links, progress=progress)
    if not index:
        yield from results
        return
    pending: list[Extraction] = []
    for result in results:
        pending.append(result)
        if len(pending) >= BATCH_PAGES:
            _index(db, pending)
            pending.clear()
        yield result
    if pending:
        _index(db, pending)


def _index(db: sqlite_utils.Database, results: list[Extraction]) -> None:
    """Extracted texts into the near-duplicate index and into every signature index the database has."""
    items = [dedup.TextItem(r.id, r.url, r.text, r.boilerplate_chars) for r in results]
    dedup.index_texts(db, items)
    signature_run.add_to_signature_indexes(db, items)


def _extract_stored(db: sqlite_utils.Database, ids: Sequence[str], *, method: str, settings: LearnSettings,
                    links: bool, progress: Progress | None) -> Iterator[Extraction]:
    index = TemplateIndex(db)
    with _Batch(db) as batch:
        for done, stored in enumerate(page_store.load_pages(db, ids), 1):
            seg = stored_segment(stored)
            if isinstance(seg, Skip):
                continue
            compiled = index.find(seg, stored.site, threshold=settings.layout_match)
            result = extract_page(seg, compiled, site=stored.site or stored.group_key, method=method, links=links)
            batch.write()
            page_store.save_extraction(db, page_id=result.id, site=result.site, method=result.method,
                                       template=result.template, coverage=result.coverage, text=result.text,
                                       boilerplate_chars=result.boilerplate_chars, digest=stored.content_hash,
                                       now=now())
            if progress:
                progress(done, len(ids))
            yield result
