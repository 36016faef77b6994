"""The local pipeline over a store (an application module, templater/__init__.py): ingest, build, extract, run.

Each public function is what one CLI command calls. Work is committed in batches, so a killed run keeps what it
committed and a rerun continues (an unchanged page is recognised by its content hash and only touched).
"""

from __future__ import annotations

import dataclasses
import functools
import gc
import itertools
import logging
import sqlite3
import time
from collections import Counter, OrderedDict, defaultdict, deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import numpy as np

from store import lsh as lsh_store
from store import pages as page_store
from store import pins as pin_store
from store import signature_index as sig_store
from store import templates as template_store
from store.db import begin_immediate, db_path, open_db, open_reader, transaction
from store.db import describe_error  # noqa: F401 -- for the CLI

from . import config, dedup, document, fallback, metadata, native, workers
from .blocks import segment
from .config import LearnSettings
from .encoding import decode_page
from .shingles import ShingleSettings
from .errors import InputError
from .extract import CompiledTemplate, extract_page
from .grouping import (assign_groups, cluster_layouts, host_of, layout_containment, shape_set, url_prefixes,
                       url_root)
from .parse import parse_checked
from .sources import check_input, input_format, iter_records
from .template import learn_template, pages_once
from .datatypes import Extraction, Page, RawPage, Segmented, Skip, SkipReason, Template

if TYPE_CHECKING:  # annotations only: a store opens without sqlite-utils (store.db.Database)
    import sqlite_utils

log = logging.getLogger(__name__)

BATCH_PAGES = config.PIPELINE_BATCH_PAGES  # module names kept (tests and other modules set and read them here)
# What one record's values can make SQLite raise (the record is skipped; the batch goes on). A full disk, a lock or
# a read-only file (sqlite3.OperationalError) is the store's failure, not the record's: it ends the command.
RECORD_DATA_ERRORS = (sqlite3.DataError, sqlite3.IntegrityError, sqlite3.InterfaceError, sqlite3.ProgrammingError,
                      UnicodeError, OverflowError, ValueError)
WORK_CHUNK = config.WORK_CHUNK
WORK_AHEAD = config.WORK_AHEAD

Progress = Callable[[int, int | None], None]  # (items done so far, total if known)
T = TypeVar("T")

page_clock = time.thread_time  # a page's time budget counts the CPU time of its own work: a loaded machine
# neither skips pages nor changes what a run stores


@dataclass
class Summary:
    """Counts of what a command did; ``skipped`` holds the reasons of records not processed, ``examples`` the first
    skip of each reason ("source: detail"), ``pages`` the ids of the pages read (ingest: in input order)."""

    counts: Counter = field(default_factory=Counter)
    skipped: Counter = field(default_factory=Counter)
    examples: dict[str, str] = field(default_factory=dict)
    pages: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"counts": dict(sorted(self.counts.items())), "skipped": dict(sorted(self.skipped.items()))}

    def merge(self, other: Summary) -> Summary:
        self.counts.update(other.counts)
        self.skipped.update(other.skipped)
        for reason, example in other.examples.items():
            self.examples.setdefault(reason, example)
        self.pages += other.pages
        return self

    def add_skip(self, skip: Skip) -> None:
        self.skipped[skip.reason] += 1
        self.examples.setdefault(skip.reason, f"{skip.source}: {skip.detail}" if skip.detail else skip.source)

    def all_skipped(self) -> bool:
        """Whether records were read and every one of them was skipped."""
        return not self.counts and bool(self.skipped)


def now() -> str:
    """The current UTC time to the second, ISO 8601 (``datetime.now(timezone.utc).isoformat(timespec="seconds")``:
    made once a second, not once a stored page)."""
    return _utc_second(int(time.time()))


@functools.lru_cache(maxsize=1)
def _utc_second(second: int) -> str:
    return datetime.fromtimestamp(second, timezone.utc).isoformat(timespec="seconds")


def open_store(path: str | Path, *, create: bool = True, readonly: bool = False) -> sqlite_utils.Database:
    """Open a templater database and bring its schema up to date; ``readonly``: never write to it (the commands
    that only read), a schema the file lacks is seen as empty tables."""
    db = open_db(path, create=create, readonly=readonly)
    page_store.ensure_schema(db)
    template_store.ensure_schema(db)
    pin_store.ensure_schema(db)
    if not readonly and lsh_store.held(db):  # an older index is upgraded by any command that writes
        lsh_store.prepare(db)
    return db


def segment_page(page: Page, *, started: float | None = None, limits: bool = True) -> Segmented | Skip:
    """Parse and segment a page (decoded, or a stored page's UTF-8 bytes); a Skip with the reason when it yields
    nothing to work with, is over a page limit (``limits``: stored pages were checked when they were ingested) or
    the time budget (counted from ``started``, a ``page_clock`` reading, else from now), or fails in any way (reason
    "error": an exception never ends a run)."""
    started = page_clock() if started is None else started
    try:
        return _segment_page(page, started, limits)
    except Exception as exc:  # noqa: BLE001 -- one page's failure is that page's skip, with the exception named
        return error_skip(page.id, page.url, exc)


def _segment_page(page: Page, started: float, limits: bool) -> Segmented | Skip:
    root, problem = parse_checked(page.html, limits=limits)
    if problem is not None:
        return Skip(SkipReason.OVER_LIMIT, page.url, problem, id=page.id, url=page.url)
    if root is None:
        return Skip(SkipReason.UNPARSABLE, page.url, "lxml built no tree", id=page.id, url=page.url)
    late = over_time(page.id, page.url, started, "parse")
    if late is not None:
        return late
    seg = segment(root, page)
    if not seg.blocks:
        return Skip(SkipReason.NO_TEXT, page.url, "no text blocks in the body", id=page.id, url=page.url)
    if len(seg.blocks) > config.MAX_BLOCKS:
        return Skip(SkipReason.OVER_LIMIT, page.url, f"{len(seg.blocks)} blocks (limit {config.MAX_BLOCKS})",
                    id=page.id, url=page.url)
    return over_time(page.id, page.url, started, "segment") or seg


def over_time(page_id: str, url: str, started: float, stage: str) -> Skip | None:
    """An "over-time" Skip when the page's work since ``started`` passed the time budget, else None."""
    spent = page_clock() - started
    if spent <= config.PAGE_TIME_BUDGET:
        return None
    return Skip(SkipReason.OVER_TIME, url,
                f"{spent:.1f} s by the end of {stage} (budget {config.PAGE_TIME_BUDGET:g} s)", id=page_id, url=url)


def error_skip(page_id: str | None, url: str | None, exc: BaseException) -> Skip:
    """The Skip of a record whose processing raised: reason "error", the exception named in the detail."""
    log.warning("%s: %s while processing it: %s", url or page_id, type(exc).__name__, exc)
    return Skip(SkipReason.ERROR, url or page_id or "", f"{type(exc).__name__}: {exc}"[:config.SKIP_DETAIL_CHARS],
                id=page_id, url=url)


class _Batch:
    """Commit every ``size`` writes: one transaction per batch."""

    def __init__(self, db: sqlite_utils.Database, size: int = BATCH_PAGES) -> None:
        self.db, self.size, self.pending = db, size, 0

    def __enter__(self) -> _Batch:
        return self

    def write(self) -> None:
        if self.pending == 0:
            begin_immediate(self.db.conn)
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
        elif self.pending and self.db.conn.in_transaction:  # SQLite ends it itself on some errors (a full disk)
            self.db.execute("ROLLBACK")


def ingest(db: sqlite_utils.Database, inputs: Sequence[str | Path], *, site: str | None = None,
           progress: Progress | None = None, jobs: int = 1, mark: bool = False) -> Summary:
    """Read pages from files and folders into the store; bad records are skipped and counted by reason.

    ``site`` names the pages of folders and .html files (``sources.iter_records``); the summary's ``pages`` lists
    the ids of the pages read, in input order, or with ``mark`` they are marked on the connection instead
    (``store.pages.mark_ids``; ``extract(marked=True)`` takes them a chunk at a time): not held all at once. With
    ``jobs`` above 1, worker processes decode, segment and compress the records while this process reads the inputs
    and alone writes, in the order of the inputs: the same store as ``jobs=1``.
    """
    summary = Summary()
    read = [] if mark else summary.pages  # (marked config.PAGE_ID_CHUNK ids at a time)
    with _Batch(db) as batch:
        for done, prepared in enumerate(iter_prepared(inputs, site=site, jobs=jobs), 1):
            outcome = _store_prepared(db, prepared, batch)
            if isinstance(outcome, Skip):
                summary.add_skip(outcome)
                log.info("skipped %s: %s %s", outcome.source, outcome.reason, outcome.detail)
            else:
                summary.counts[outcome] += 1
                read.append(prepared.page.id)
                if mark and len(read) >= config.PAGE_ID_CHUNK:
                    page_store.mark_ids(db, read)
                    read.clear()
            if progress:
                progress(done, None)
        if mark:
            page_store.mark_ids(db, read)
    return summary


@dataclass(frozen=True, slots=True)
class PreparedPage:
    """What ingest stores of a record: its fields, compressed HTML, content hash, block hashes and shapes."""

    page: Page  # with its html left out (``data`` holds it)
    host: str
    data: bytes
    digest: str
    vector: np.ndarray
    shapes: np.ndarray
    text_chars: int


def prepare_ingest(item: RawPage | Skip) -> PreparedPage | Skip:
    """A record decoded, segmented and compressed for storing: the unit of work of ingest (and of its workers)."""
    seg = prepare_record(item)
    if isinstance(seg, Skip):
        return seg
    page = seg.page
    try:
        data, digest = page_store.encode_page(page.html)
        return PreparedPage(page=dataclasses.replace(page, html=""), host=host_of(page.url), data=data,
                            digest=digest, vector=seg.vector, shapes=block_shapes(seg),
                            text_chars=sum(len(b.text) for b in seg.blocks))
    except Exception as exc:  # noqa: BLE001 -- one record's failure is its skip
        return error_skip(page.id, page.url, exc)


def _ingest_worker() -> Callable[[list], list]:
    native.tune_heap()
    return _prepare_chunk


def _prepare_chunk(items: list) -> list[PreparedPage | Skip]:
    return [prepare_ingest(item) for item in items]


def iter_prepared(inputs: Sequence[str | Path], *, site: str | None = None,
                  jobs: int = 1) -> Iterator[PreparedPage | Skip]:
    """``prepare_ingest`` of every record of the inputs, in order (in WORK_CHUNK chunks on ``jobs`` workers)."""
    records = iter_records(inputs, site=site)
    if jobs <= 1:
        native.tune_heap()
        yield from map(prepare_ingest, records)
        return
    with workers.pool(jobs, _ingest_worker, None) as pool:
        for prepared in workers.imap_ordered(pool, workers.chunked(records, WORK_CHUNK), ahead=WORK_AHEAD * jobs):
            yield from prepared


def _store_prepared(db: sqlite_utils.Database, prepared: PreparedPage | Skip, batch: _Batch) -> str | Skip:
    stamp = now()
    batch.write()
    if isinstance(prepared, Skip):
        page_store.record_skip(db, source=prepared.source, reason=prepared.reason, detail=prepared.detail,
                               page_id=prepared.id, url=prepared.url, now=stamp)
        return prepared
    page = prepared.page
    try:  # one statement: when the record's values fail, nothing of it was written and the batch goes on
        return page_store.upsert_page(
            db, id=page.id, url=page.url, host=prepared.host, html=prepared.data, digest=prepared.digest,
            fetched_at=page.fetched_at, encoding=page.encoding, hashes=prepared.vector, shapes=prepared.shapes,
            text_chars=prepared.text_chars, now=stamp)
    except RECORD_DATA_ERRORS as exc:
        return _store_prepared(db, error_skip(page.id, page.url, exc), batch)


def prepare_record(item: RawPage | Skip) -> Segmented | Skip:
    """A record as ingest sees it: decoded and segmented, or a Skip with the reason (named by the record's source;
    an exception included)."""
    if isinstance(item, Skip):
        return item
    started = page_clock()
    try:
        page = decode_page(item)
    except Exception as exc:  # noqa: BLE001 -- one record's failure is its skip
        return error_skip(item.id, item.url, exc)
    if isinstance(page, Skip):
        return page
    seg = segment_page(page, started=started)
    return dataclasses.replace(seg, source=item.source) if isinstance(seg, Skip) else seg


def block_shapes(seg: Segmented) -> np.ndarray:
    """The page's tag-path hashes (uint32), one per block: what layout clustering compares."""
    return np.fromiter((b.shape for b in seg.blocks), dtype=np.uint32, count=len(seg.blocks))


def site_name(group_key: str, layout: int) -> str:
    """A template's site name: the URL prefix, with the layout cluster number when it is not the first."""
    return group_key if layout == 0 else f"{group_key}#{layout}"


def build(db: sqlite_utils.Database, *, settings: LearnSettings = LearnSettings(),
          progress: Progress | None = None, jobs: int = 1) -> Summary:
    """Group stored pages by URL prefix and layout, and learn a template for each large enough cluster.

    With ``jobs`` above 1, worker processes cluster and learn URL groups (``plan_group``) while this process
    alone writes, group after group in the same order: the same store as ``jobs=1``.
    """
    summary = Summary()
    total, done = page_store.live_page_count(db), 0
    for (group, ids), plan in _iter_plans(db, iter_groups(db, settings), settings, jobs):
        summary.merge(learn_group(db, group, ids, settings, plan=plan))
        done += len(ids)
        if progress:
            progress(done, total)
    summary.counts["pages"] = total
    return summary


def iter_groups(db: sqlite_utils.Database, settings: LearnSettings) -> Iterator[tuple[str, list[str]]]:
    """(URL group, its page ids in id order) of every live page, by group: ``assign_groups`` over the whole
    crawl, read one host (a URL's shortest prefix: every prefix of it begins with it, so a group's count is its
    host's pages') at a time. Hosts come in the order of their prefixes, and a host's groups all begin with its
    prefix, so the groups come sorted, as sorting the crawl's would give them."""
    for _, ids, urls in page_store.iter_pages_by_key(db, url_root):
        members: dict[str, list[str]] = defaultdict(list)
        for pid, group in zip(ids, assign_groups(urls, min_pages=settings.min_group_pages, ids=ids)):
            members[group].append(pid)
        yield from sorted(members.items())


NOT_LEARNED = ...  # a plan's template before learning (None: a cluster that could not be learned); a singleton that
# survives pickling to and from worker processes
Plan = list[tuple[int, list[str], list[np.ndarray], "tuple[Template | None, Counter] | type(...)"]]


def _iter_plans(db: sqlite_utils.Database, groups: Iterable[tuple[str, list[str]]], settings: LearnSettings,
                jobs: int) -> Iterator[tuple[tuple[str, list[str]], Plan | None]]:
    """Each (group, ids) with its plan learned by worker processes, or None (learned by ``learn_group``): a worker
    clusters a group's pages by layout, then each cluster is learned as a task of its own, so the layouts of one
    large group are learned in parallel too. Groups come back in order, at most WORK_AHEAD tasks a worker ahead."""
    if jobs <= 1:
        yield from ((item, None) for item in groups)
        return
    ahead = WORK_AHEAD * jobs
    groups, tasks = itertools.tee(groups)  # (what one holds and the other has not taken yet: at most ``ahead``)
    with workers.pool(jobs, _GroupPlanner, db, settings) as pool:
        planned = workers.imap_ordered(pool, (("cluster", group, ids) for group, ids in tasks), ahead=ahead)
        pending: deque = deque()  # (group, ids), plan, the learning tasks of its clusters
        for item, plan in zip(groups, planned):
            learning = [] if plan is None else [
                pool.apply_async(workers.run, (("learn", item[0], layout, cluster),))
                if len(cluster) >= settings.min_template_pages else None for layout, cluster, _, _ in plan]
            pending.append((item, plan, learning))
            while sum(len(tasks) for _, _, tasks in pending) > ahead and len(pending) > 1:
                yield _learned(*pending.popleft())
        while pending:
            yield _learned(*pending.popleft())


def _learned(item: tuple[str, list[str]], plan: Plan | None,
             learning: list) -> tuple[tuple[str, list[str]], Plan | None]:
    """A group's plan with the templates its clusters' learning tasks returned."""
    if plan is None:
        return item, None
    return item, [(layout, cluster, sets, template if task is None else task.get())
                  for (layout, cluster, sets, template), task in zip(plan, learning)]


class _GroupPlanner:
    """A worker's state for build: its read-only store and the settings. Its tasks: ("cluster", group, ids): the
    group's layout clusters, nothing learned (None for a group too small for a template); ("learn", group, layout,
    ids): one cluster's ``cluster_template``."""

    def __init__(self, db: sqlite_utils.Database, settings: LearnSettings) -> None:
        self.db, self.settings = db, settings

    def __call__(self, task: tuple) -> Plan | tuple[Template | None, Counter] | None:
        if task[0] == "learn":
            _, group, layout, ids = task
            return cluster_template(self.db, group, layout, ids, self.settings)
        _, group, ids = task
        if len(ids) < self.settings.min_template_pages:
            return None
        return plan_group(self.db, group, ids, self.settings, learn=False)


def plan_group(db: sqlite_utils.Database, group: str, ids: list[str], settings: LearnSettings, *,
               reason: str = "learned", learn: bool = False) -> Plan:
    """(layout, page ids, shape sets, template) of each layout cluster of one URL group: the template learned
    (None when it could not be) with ``learn``, else NOT_LEARNED; nothing is written."""
    shapes = page_store.page_shapes(db, ids)
    return [(layout, cluster, sets, cluster_template(db, group, layout, cluster, settings, reason=reason)
             if learn and len(cluster) >= settings.min_template_pages else NOT_LEARNED)
            for layout, cluster, sets in plan_layouts(ids, [shape_set(shapes[pid]) for pid in ids], settings)]


def learn_group(db: sqlite_utils.Database, group: str, ids: list[str], settings: LearnSettings, *,
                reason: str = "learned", plan: Plan | None = None) -> Summary:
    """Cluster one URL group's pages by layout, learn a template for each large enough cluster (each committed on
    its own, a new version only when its rules changed) and assign the pages to their sites. ``plan``: the
    group's ``plan_group`` made elsewhere (a worker process), else it is made here."""
    summary = Summary()
    assignments: list[tuple[str, str | None, str | None]] = []
    if len(ids) < settings.min_template_pages:
        assignments = [(pid, group, None) for pid in ids]
        summary.counts["pages without template"] += len(ids)
    else:
        for layout, cluster, cluster_sets, template in plan or plan_group(db, group, ids, settings, reason=reason):
            site = _learn_cluster(db, group, layout, cluster, cluster_sets, settings, summary, reason=reason,
                                  template=template)
            assignments += [(pid, group, site) for pid in cluster]
    with transaction(db):
        page_store.assign_sites(db, assignments)
    return summary


def plan_layouts(ids: list[str], sets: list[np.ndarray],
                 settings: LearnSettings) -> list[tuple[int, list[str], list[np.ndarray]]]:
    """(layout number, page ids, their shape sets) of each layout cluster of one URL group's pages (ids in order)."""
    labels = cluster_layouts(sets, threshold=settings.layout_similarity, sample=settings.layout_sample)
    labels = _adopt_strays(labels, sets, settings)
    return [(layout, [pid for pid, label in zip(ids, labels) if label == layout],
             [s for s, label in zip(sets, labels) if label == layout]) for layout in sorted(set(labels))]


def _adopt_strays(labels: list[int], sets: list[np.ndarray], settings: LearnSettings) -> list[int]:
    """Pages of clusters too small for a template join the large cluster whose layout they contain, if any."""
    sizes = Counter(labels)
    large = [label for label, n in sorted(sizes.items()) if n >= settings.min_template_pages]
    signatures = {label: layout_signature([s for s, x in zip(sets, labels) if x == label], settings)
                  for label in large}
    adopted = list(labels)
    for i, (label, shapes) in enumerate(zip(labels, sets)):
        if sizes[label] >= settings.min_template_pages or not large:
            continue
        score, best = max((layout_containment(signatures[x], shapes), x) for x in large)
        if score >= settings.layout_match:
            adopted[i] = best
    return adopted


def _learn_cluster(db: sqlite_utils.Database, group: str, layout: int, ids: list[str], sets: list[np.ndarray],
                   settings: LearnSettings, summary: Summary, *, reason: str = "learned",
                   template: tuple[Template | None, Counter] | type(...) = NOT_LEARNED) -> str | None:
    if len(ids) < settings.min_template_pages:
        summary.counts["pages without template"] += len(ids)
        return None
    template, notes = cluster_template(db, group, layout, ids, settings, reason=reason) \
        if template is NOT_LEARNED else template
    summary.counts.update(notes)
    if template is None:
        summary.counts["pages without template"] += len(ids)
        return None
    with transaction(db):
        _, written = template_store.save_template(db, template, group_key=group,
                                                  layout_shapes=layout_signature(sets, settings))
    summary.counts["templates learned" if written else "templates unchanged"] += 1
    summary.counts["pages with template"] += len(ids)
    return template.site


def cluster_template(db: sqlite_utils.Database, group: str, layout: int, ids: list[str], settings: LearnSettings,
                     *, reason: str = "learned") -> tuple[Template | None, Counter]:
    """The template of a layout cluster learned from its stored sample pages (None when too few segment, or when
    learning failed), with the counts of what was left out ("pages too long to learn from", "templates failed")."""
    notes: Counter = Counter()
    segs = [stored_segment(p) for p in page_store.load_pages(db, learn_sample(ids, settings))]
    too_long = sum(1 for s in segs if isinstance(s, Segmented) and len(s.blocks) > config.MAX_LEARN_BLOCKS)
    if too_long:
        notes["pages too long to learn from"] += too_long
    try:
        return learn_cluster(group, layout, segs, settings, reason=reason), notes
    except Exception as exc:  # noqa: BLE001 -- one cluster's failure leaves it without a template, not the build
        log.warning("%s: learning layout %d failed (%s: %s): its pages go without a template", group, layout,
                    type(exc).__name__, exc)
        notes["templates failed"] += 1
        return None, notes


def learn_sample(ids: list[str], settings: LearnSettings) -> list[str]:
    """The ids of a layout cluster's pages to learn from, sorted: all of them, or a seeded sample of
    ``max_learn_pages``."""
    sample = sorted(ids)
    if len(sample) > settings.max_learn_pages:
        import random  # (build alone samples: an extract does not import it)

        sample = sorted(random.Random(settings.learn_seed).sample(sample, settings.max_learn_pages))
    return sample


def learn_cluster(group: str, layout: int, segs: Sequence[Segmented | Skip], settings: LearnSettings, *,
                  reason: str = "learned") -> Template | None:
    """The template of one layout cluster from its sampled pages (in ``learn_sample`` order), or None when too few
    of them could be segmented. A page fetched twice is learned from once (``pages_once``)."""
    segs = [s for s in segs if isinstance(s, Segmented) and len(s.blocks) <= config.MAX_LEARN_BLOCKS]
    if len(segs) < settings.min_template_pages:
        return None
    return learn_template(pages_once(segs), site=site_name(group, layout), layout=layout, settings=settings,
                          reason=reason)


def layout_signature(sets: list[np.ndarray], settings: LearnSettings) -> np.ndarray:
    """Tag paths on at least settings.layout_shape_share of a cluster's pages: what a new page is matched against."""
    counts = Counter(x for s in sets for x in s.tolist())
    need = settings.layout_shape_share * len(sets)
    return np.array(sorted(x for x, n in counts.items() if n >= need), dtype=np.uint32)


def stored_segment(stored: page_store.StoredPage, *, started: float | None = None) -> Segmented | Skip:
    """Parse and segment a stored page from its stored UTF-8 bytes (never decoded)."""
    page = Page(id=stored.id, url=stored.url, html=stored.html_bytes, fetched_at=stored.fetched_at,
                encoding=stored.encoding or "utf-8")
    return segment_page(page, started=started, limits=False)


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


def extract_file(db: sqlite_utils.Database, path: Path, *, url: str | None = None,
                 method: str = "auto") -> Extraction:
    """Extract a local .html file with the template of the site its URL (or layout) matches; nothing is stored."""
    seg = segment_file(path, url=url)
    return extract_page(seg, TemplateIndex(db).find(seg, None), method=method)


class TemplateIndex:
    """The current templates, by site and by URL prefix, read as pages need them: a site's template id and a URL
    group's layout signatures are read when a page first asks for them and kept for the ``heads`` sites and groups
    asked for last, and a site's template is read and compiled when a page first needs it and kept in a cache of
    ``cache_size`` sites (the least recently used leave first), so memory is bounded whatever the number of sites.
    ``sources`` and ``layouts`` read every site's head at once and keep them (a snapshot: what recrawl, whose
    writer commits new templates while its workers classify, reads); from ``entries`` everything is held too."""

    def __init__(self, db: sqlite_utils.Database | None,
                 entries: Iterable[tuple[str, np.ndarray, Template]] | None = None, *,
                 cache_size: int = config.TEMPLATE_CACHE, heads: int = config.LAYOUT_CACHE) -> None:
        """From a database's current templates (pins applied), or from ``entries`` already read from one (the
        (group, layout signature, pinned template) rows a Spark job broadcasts), in ``iter_current`` order."""
        self.db, self.cache_size, self.heads = db, cache_size, heads
        self.cache: OrderedDict[str, CompiledTemplate] = OrderedDict()
        self._site_ids: OrderedDict[str, int | None] = OrderedDict()  # site -> its current template id, or None
        self._group_layouts: OrderedDict[str, list[tuple[np.ndarray, str, float]]] = OrderedDict()
        self._held: tuple[dict[str, int | Template], dict[str, list[tuple[np.ndarray, str, float]]]] | None = None
        if entries is not None:
            self._hold((group, shapes, template.site, template, template.settings.layout_match)
                       for group, shapes, template in entries)

    def _hold(self, heads: Iterable[tuple[str, np.ndarray, str, int | Template, float]]) -> None:
        sources: dict[str, int | Template] = {}  # site -> its template id in db, or the template itself
        layouts: dict[str, list[tuple[np.ndarray, str, float]]] = defaultdict(list)  # group -> [(layout
        for group, shapes, site, source, threshold in heads:  # signature, site, the share of it a page must hold)]
            sources[site] = source
            layouts[group].append((shapes, site, threshold))
        self._held = sources, dict(layouts)

    @property
    def sources(self) -> dict[str, int | Template]:
        """Every site's template id (or template), all read now and kept."""
        if self._held is None:
            self._hold(template_store.iter_current_heads(self.db))
        return self._held[0]

    @property
    def layouts(self) -> dict[str, list[tuple[np.ndarray, str, float]]]:
        """group -> [(layout signature, site, the share of it a page must hold: the template's layout_match)] of
        every group with a template, in ``iter_current`` order, all read now and kept."""
        if self._held is None:
            self._hold(template_store.iter_current_heads(self.db))
        return self._held[1]

    def _source(self, site: str) -> int | Template | None:
        """A site's current template id (or template), None for a site without one."""
        if self._held is not None:
            return self._held[0].get(site)
        return _cached(self._site_ids, site, self.heads, lambda: template_store.current_id(self.db, site))

    def group_layouts(self, group: str) -> list[tuple[np.ndarray, str, float]]:
        """A URL group's (layout signature, site, threshold) triples in ``layouts`` order; empty without one."""
        if self._held is not None:
            return self._held[1].get(group, [])
        return _cached(self._group_layouts, group, self.heads,
                       lambda: list(template_store.current_layouts(self.db, group)))

    def compiled(self, site: str) -> CompiledTemplate | None:
        """A site's compiled template (None for a site without one), from the cache or read now."""
        if site in self.cache:
            self.cache.move_to_end(site)
            return self.cache[site]
        source = self._source(site)
        if source is None:
            return None
        if isinstance(source, Template):
            compiled = CompiledTemplate(source)
        elif pin_store.load_pins(self.db, site):  # pinned rules replace the learned ones: read them all
            compiled = CompiledTemplate(pin_store.apply_pins(self.db, template_store.load_template(self.db, source)))
        else:  # the static rules as hashes alone; the whole template read if someone asks for it
            lean, static = template_store.load_template_lean(self.db, source)
            compiled = CompiledTemplate(lean, static=static, load=functools.partial(
                _whole_template, self.db, source))
        self.cache[site] = compiled
        if len(self.cache) > self.cache_size:
            self.cache.popitem(last=False)
        return compiled

    @property
    def by_site(self) -> dict[str, CompiledTemplate]:
        """Every site's compiled template (all read now: for inspection and tests, not for a crawl)."""
        return {site: self.compiled(site) for site in self.sources}

    def find(self, seg: Segmented, site: str | None) -> CompiledTemplate | None:
        """The page's template: the one its build assigned, else the best layout of its longest known prefix
        where the page holds the share of it that template saved (its settings' layout_match)."""
        assigned = self.compiled(site) if site is not None else None  # (None: the site has no template)
        if assigned is not None:
            return assigned
        layouts = next((found for found in map(self.group_layouts, url_prefixes(seg.page.url, seg.page.id))
                        if found), None)
        if layouts is None:
            return None
        best = best_layout(seg, layouts)
        return None if best is None else self.compiled(best)


def _cached(cache: OrderedDict, key: str, size: int, read: Callable[[], T]) -> T:
    """``cache[key]``, read now (``read()``) when absent, in a cache of ``size`` keys that drops the least recently
    used first."""
    if key in cache:
        cache.move_to_end(key)
        return cache[key]
    value = cache[key] = read()
    if len(cache) > size:
        cache.popitem(last=False)
    return value


def _whole_template(db: sqlite_utils.Database, template_id: int) -> Template:
    """A stored template with all its rules and its site's pins (what TemplateIndex compiles, read again whole)."""
    return pin_store.apply_pins(db, template_store.load_template(db, template_id))


def best_layout(seg: Segmented, layouts: Sequence[tuple[np.ndarray, T, float]]) -> T | None:
    """Of a group's (layout signature, template or site, threshold) triples, the one whose layout the page fits
    best (the first of equals), if the page holds its threshold's share of that layout."""
    shapes = shape_set(block_shapes(seg))
    scored = [(layout_containment(layout, shapes), item, threshold) for layout, item, threshold in layouts]
    score, best, threshold = max(scored, key=lambda sc: sc[0])
    return best if score >= threshold else None


def extract(db: sqlite_utils.Database, *, method: str = "auto", ids: Sequence[str] | None = None,
            index: bool = False, progress: Progress | None = None,
            weights: fallback.ann.Weights | None = None, q: float = fallback.FDR_Q,
            skipped: Counter | None = None, jobs: int = 1, links: bool = False,
            marked: bool = False) -> Iterator[Extraction]:
    """Extract every stored page (or the given ids, or with ``marked`` those the connection marked: ``ingest``'s
    ``mark``) with its template, store the result, and yield it.

    With ``index``, each BATCH_PAGES extracted texts (signed where they were extracted: in the workers) go into the
    near-duplicate index (one ``dedup.index_signed`` call) in the transaction of their extractions. Transactions
    grow (``GrowingBatch``), so a large crawl commits a few times, not once per BATCH_PAGES pages; a killed run
    loses at most its open transaction (rerun to continue). With ``jobs`` above 1, worker processes parse and
    extract while this process alone writes: the same results, stored and yielded in the same order, as
    ``jobs=1``. ``weights`` and ``q`` go to the single-page classifier (``extract.extract_page``). A page that fails
    (over the time budget, an exception) is recorded as a skip and counted in ``skipped``. With ``links``, each
    result's document carries its links' URLs. Each template is chosen and applied with the settings saved with it
    (``Template.settings``: what it was learned with).
    """
    for result, _ in _extracted(db, method=method, ids=ids, index=index, progress=progress,
                                weights=weights, q=q, skipped=skipped, jobs=jobs, links=links, marked=marked):
        yield result


def extract_rendered(db: sqlite_utils.Database, render: Callable[[Extraction], str] | None, *, method: str = "auto",
                     ids: Sequence[str] | None = None, index: bool = False, progress: Progress | None = None,
                     weights: fallback.ann.Weights | None = None, q: float = fallback.FDR_Q,
                     skipped: Counter | None = None, jobs: int = 1, links: bool = False,
                     marked: bool = False) -> Iterator[tuple[Extraction, str | None]]:
    """``extract``, each result with ``render(result)`` (what the command writes of it: a JSON line, a Markdown
    page; None without ``render``), made where the page was extracted (in the workers with ``jobs`` above 1: the
    writing process only writes). With ``render``, the results carry no ``document`` (it is rendered): the same
    for any ``jobs``. ``render`` must be picklable where workers are spawned rather than forked."""
    yield from _extracted(db, method=method, ids=ids, index=index, progress=progress,
                          weights=weights, q=q, skipped=skipped, jobs=jobs, links=links, render=render, marked=marked)


def _extracted(db: sqlite_utils.Database, *, method: str, ids: Sequence[str] | None, index: bool,
               progress: Progress | None, weights: fallback.ann.Weights | None, q: float,
               skipped: Counter | None, jobs: int, links: bool,
               render: Callable[[Extraction], str] | None = None,
               marked: bool = False) -> Iterator[tuple[Extraction, str | None]]:
    if marked:  # the pages the connection marked, in id order, read a chunk at a time
        total, chunks = page_store.marked_count(db), _work_chunks(page_store.iter_marked_ids(db))
    elif ids is None:  # every live page, its ids read a chunk at a time as the work goes (not held all at once)
        total, chunks = page_store.live_page_count(db), _work_chunks(page_store.iter_live_ids(db))
    else:  # each page once, in the order given
        ids = list(dict.fromkeys(ids))
        total, chunks = len(ids), _work_chunks([ids])
    skipped = Counter() if skipped is None else skipped
    classifier = {"weights": weights, "q": q, "links": links}  # extract_page's options
    signing = index_settings(db) if index else None
    pending: list[Extraction] = []
    signed: list[dedup.SignedText] = []
    untrimmed = 0  # pages written since glibc's heap was last trimmed (``native.trim_heap``)
    with GrowingBatch(db) as batch:
        for done, (digest, result, signature, rendered) in enumerate(_iter_chunks_extracted(
                db, chunks, total, method=method, classifier=classifier, jobs=jobs, signing=signing,
                render=render), 1):
            if isinstance(result, Skip):
                batch.begin()
                page_store.record_skip(db, source=result.source, reason=result.reason, detail=result.detail,
                                       page_id=result.id, url=result.url, now=now())
                skipped[result.reason] += 1
                if progress:
                    progress(done, total)
                continue
            batch.begin()
            page_store.save_extraction(db, page_id=result.id, site=result.site, method=result.method,
                                       template=result.template, coverage=result.coverage, text=result.text,
                                       boilerplate_chars=result.boilerplate_chars, digest=digest, now=now(),
                                       title=result.title, metadata=result.metadata.to_json())
            pending.append(result)
            signed.append(signature)
            if len(pending) >= BATCH_PAGES:
                if index:
                    _index(db, pending, signed, signing)
                batch.step(len(pending))
                untrimmed += len(pending)
                pending.clear()
                signed.clear()
                if untrimmed >= config.HEAP_TRIM_PAGES:  # (what the batches freed given back: a long run's heap
                    native.trim_heap()  # kept its free space resident, growing with the crawl)
                    untrimmed = 0
            if progress:
                progress(done, total)
            yield result, rendered
        if index and pending:
            _index(db, pending, signed, signing)


class GrowingBatch:
    """Transactions of BATCH_PAGES pages, then twice as many, and so on up to ``most`` pages: a small job commits
    early and often, a large one rarely (a commit of the near-duplicate index writes pages all over its band index,
    whatever the number of pages added). The boundaries depend on the count of pages alone."""

    def __init__(self, db: sqlite_utils.Database, *, most: int = config.GROWING_PAGES) -> None:
        self.db, self.size, self.most, self.pages = db, BATCH_PAGES, most, 0

    def __enter__(self) -> GrowingBatch:
        return self

    def begin(self) -> None:
        if not self.db.conn.in_transaction:
            begin_immediate(self.db.conn)

    def step(self, pages: int) -> None:
        """``pages`` more written: commit when the transaction has its size."""
        self.pages += pages
        if self.pages >= self.size:
            self.commit()
            self.size = min(self.size * 2, self.most)

    def commit(self) -> None:
        if self.db.conn.in_transaction:
            self.db.execute("COMMIT")
        self.pages = 0

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.commit()
        elif self.db.conn.in_transaction:
            self.db.execute("ROLLBACK")


def skip_report(db: sqlite_utils.Database, *, reason: str | None = None,
                examples: int = 3) -> tuple[list[tuple[str, int]], list[dict]]:
    """(reason, count) of every skip reason recorded, and for each reason shown (all, or ``reason``) a JSON-ready
    {"reason", "count", "examples": [{"source", "url", "id", "detail", "seen_at"}]}."""
    counts = page_store.skip_counts(db)
    if reason is not None and reason not in dict(counts):
        known = ", ".join(r for r, _ in counts) or "none recorded"
        raise InputError(f"no record was skipped for reason {reason!r} (reasons recorded: {known})")
    shown = []
    for name, count in counts:
        if reason is None or name == reason:
            rows = page_store.skip_examples(db, name, limit=examples)
            shown.append({"reason": name, "count": count, "examples": [
                {"source": src, "url": url, "id": pid, "detail": detail or "", "seen_at": seen}
                for src, detail, pid, url, seen in rows]})
    return counts, shown


def iter_crawl_extractions(db: sqlite_utils.Database, ids: Sequence[str], *, method: str = "auto",
                           links: bool = False, jobs: int = 1) -> Iterator[Extraction]:
    """The extractions of the given stored pages made again from the store with their templates, nothing written:
    what `recrawl --output` writes (title, structure and metadata included, each page once, in the order given;
    on ``jobs`` worker processes above 1)."""
    for _, result, _, _ in iter_extracted(db, list(ids), method=method, classifier={"links": links}, jobs=jobs):
        if not isinstance(result, Skip):
            yield result


def select_pages(db: sqlite_utils.Database, *, site: str | None = None, since: str | None = None) -> list[str]:
    """Ids of the stored pages to extract: every live page, or a site's (as `templater rules list` names it, or its
    URL group), or those seen at or after ``since`` (ISO 8601 date or time; UTC when it names no zone)."""
    if since is not None:
        since = _utc_iso(since)
    ids = page_store.select_page_ids(db, site=site, since=since)
    if not ids and site is not None and not page_store.select_page_ids(db, site=site):
        raise InputError(f"no stored page of site {site!r}: `templater rules list` shows the sites")
    return ids


def _utc_iso(text: str) -> str:
    try:
        moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise InputError(f"--since {text!r}: give an ISO 8601 date or time, e.g. 2024-06-01 or "
                         "2024-06-01T12:00:00+02:00") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc).isoformat(timespec="seconds")


def extract_stored_page(stored: page_store.StoredPage, index: TemplateIndex, *, method: str,
                        classifier: dict | None = None) -> Extraction | Skip:
    """One stored page extracted with its template; a Skip when it fails or goes over the time budget."""
    started = page_clock()
    seg = stored_segment(stored, started=started)
    if isinstance(seg, Skip):
        return seg
    try:
        compiled = index.find(seg, stored.site)
        result = extract_page(seg, compiled, site=stored.site or stored.group_key, method=method,
                              **(classifier or {}))
    except Exception as exc:  # noqa: BLE001 -- one page's failure is its skip
        return error_skip(stored.id, stored.url, exc)
    return over_time(stored.id, stored.url, started, "extract") or result


def index_settings(db: sqlite_utils.Database) -> ShingleSettings:
    """The settings extracted texts are signed with for the near-duplicate index: those it was built with, else
    the defaults (which its first batch stores)."""
    return (lsh_store.load_settings(db) if lsh_store.held(db) else None) or ShingleSettings()


def _index(db: sqlite_utils.Database, results: list[Extraction], signed: list[dedup.SignedText],
           settings: ShingleSettings) -> None:
    """Extracted texts, signed by ``iter_extracted`` (in the workers), into the near-duplicate index, and into
    every signature index the database has."""
    fetched = page_store.fetch_times(db, [r.id for r in results])
    items = [dedup.TextItem(r.id, r.url, r.text, r.boilerplate_chars, fetched.get(r.id)) for r in results]
    dedup.index_signed(db, items, signed, settings)
    if sig_store.methods(db):  # (signature_run and its methods load only for a database that has such an index)
        from . import signature_run

        signature_run.add_to_signature_indexes(db, items)


Extracted = tuple[str, "Extraction | Skip", "dedup.SignedText | None", "str | None"]


class _ChunkExtractor:
    """Extracts chunks of stored pages by id: one per process, with its own templates (read as needed); with
    ``signing``, signs the extracted texts for the near-duplicate index too, and with ``render``, renders each
    result as it will be written (so the writer only stores and writes them)."""

    def __init__(self, db: sqlite_utils.Database, method: str, classifier: dict | None = None,
                 signing: ShingleSettings | None = None, render: Callable[[Extraction], str] | None = None) -> None:
        self.db, self.method, self.index = db, method, TemplateIndex(db)
        self.classifier, self.signing, self.render = classifier, signing, render
        native.tune_heap()
        tune_collector()

    def __call__(self, ids: Sequence[str]) -> list[Extracted]:
        """(content hash, extraction or Skip, signed text or None, rendered text or None) of each stored page of
        ``ids``, in order."""
        rows = [(stored.content_hash, extract_stored_page(stored, self.index, method=self.method,
                                                          classifier=self.classifier))
                for stored in page_store.load_pages(self.db, ids)]
        done = [r for _, r in rows if not isinstance(r, Skip)]
        signed = iter(dedup.sign_each([r.text for r in done], self.signing) if self.signing else [None] * len(done))
        rendered = iter([self.render(r) for r in done] if self.render else [None] * len(done))
        return [(digest, result, None, None) if isinstance(result, Skip) else
                (digest, self._sent(result), next(signed), next(rendered)) for digest, result in rows]

    def _sent(self, result: Extraction) -> Extraction:
        """What is handed on of an extraction: without its document once it is rendered (the writer has the
        rendered text; the document was two thirds of a result's pickle, made by a worker and read by the
        writer)."""
        return result if self.render is None or result.document is None else \
            result.with_parts(document=None)


def tune_collector(threshold: int = config.GC_YOUNG_OBJECTS) -> None:
    """Let the cyclic garbage collector's youngest generation grow to ``threshold`` objects (Python's default: 700)
    where pages are extracted. A page's work makes and drops thousands of tracked objects (blocks, lists, tuples,
    element proxies) that reference counting frees and that hold no cycle (a test extracts pages with the collector
    off and finds nothing for it to collect), so at 700 the collector ran every few pages (205 young and 18 middle
    collections, 2 full ones, over the 1,113 pages of the sites suite) only to find them live. Never lowers a
    threshold a caller raised; the older generations keep theirs. Outputs do not depend on it."""
    young, middle, old = gc.get_threshold()
    if young and young < threshold:
        gc.set_threshold(threshold, middle, old)


def iter_extracted(db: sqlite_utils.Database, ids: Sequence[str], *, method: str,
                   classifier: dict | None = None, jobs: int = 1, signing: ShingleSettings | None = None,
                   render: Callable[[Extraction], str] | None = None) -> Iterator[Extracted]:
    """(content hash, extraction or Skip, its text signed with ``signing`` or None, ``render`` of it or None) of
    every stored page of ``ids``, in order; nothing is written.

    With ``jobs`` above 1, worker processes read and extract chunks of WORK_CHUNK pages (each with a read-only
    connection of its own) and the results come back in the order of ``ids``: the same values as ``jobs=1``.
    """
    yield from _iter_chunks_extracted(db, _work_chunks([ids]), len(ids), method=method, classifier=classifier,
                                      jobs=jobs, signing=signing, render=render)


def _work_chunks(lists: Iterable[Sequence[str]]) -> Iterator[list[str]]:
    """The ids of ``lists``, one after the other, in chunks of WORK_CHUNK (the last one shorter)."""
    return workers.chunked(itertools.chain.from_iterable(lists), WORK_CHUNK)


def _iter_chunks_extracted(db: sqlite_utils.Database, chunks: Iterable[Sequence[str]], total: int, *, method: str,
                           classifier: dict | None = None, jobs: int = 1, signing: ShingleSettings | None = None,
                           render: Callable[[Extraction], str] | None = None) -> Iterator[Extracted]:
    """``iter_extracted`` of the ids in ``chunks`` (of WORK_CHUNK ids, the last one shorter; ``total`` ids in
    all), the chunks taken as the work goes."""
    if jobs <= 1 or total <= WORK_CHUNK:
        path = db_path(db)  # pages are read through a connection of their own: the writer's cache (sized for the
        reader = open_reader(path) if path else db  # index) would otherwise keep every page read, up to its size
        try:
            extractor = _ChunkExtractor(reader, method, classifier, signing, render)
            for chunk in chunks:
                yield from extractor(chunk)
        finally:
            if reader is not db:
                reader.conn.close()
        return
    warm_models()
    with workers.pool(jobs, _ChunkExtractor, db, method, classifier, signing, render) as pool:
        for results in workers.imap_ordered(pool, chunks, ahead=WORK_AHEAD * jobs):
            yield from results


def warm_models() -> None:
    """Load the language detector's model (read once a process, about 0.5 s CPU), the date parser's modules (30
    modules, ~40 ms), the classifier's shipped weights and the modules workers use before worker processes are
    forked: they share them instead of each loading its own, and no worker's first page has the load counted in its
    time budget (on a loaded machine that made pages "over-time")."""
    metadata.detect_language("warm " * (metadata.LANG_MIN_CHARS // 5 + 1))
    metadata.warm_date_parser()
    fallback.default_weights()
    for module in (document, dedup):  # modules the command line leaves to run at first use (each worker ran them)
        getattr(module, "__name__")  # (any attribute runs a lazily loaded module)


