"""Recrawls: a crawl that comes back costs what changed, notices redesigns, and survives being killed.

    recrawl            each fetched page is unchanged (same content hash: only its last-seen time moves), changed
                       or new (extracted with the stored templates, its near-duplicate index entry replaced), or
                       revived (a retired page back in the crawl); with ``retire_missing`` the live pages the crawl
                       did not fetch are retired and leave the index
    template health    every extraction a recrawl makes is an observation of its group's templates: its coverage,
                       or "low" when no template fitted; when at least DRIFT_SHARE of a group's recent pages are low
                       its templates are stale: a new version is learned from those pages, the old one is kept and
                       flagged, and the pages extracted with it are extracted again (a group without any template
                       is learned the same way once it has DRIFT_MIN_PAGES pages)
    resumption         records are committed in batches of ``batch_size`` together with the run's progress; a
                       relearn is recorded as an intent in the batch that detected it and finished by later
                       transactions; re-extractions go through a queue. Rerunning the same command after a kill
                       continues at the first uncommitted record, and gives the database an uninterrupted run gives
    template_history   every version of a site's template, why it was made, and when and why it went stale

A new page joins the longest URL-prefix group the store knows, else its host's group: layout clustering, not the
URL, separates a host's layouts.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import logging
import sqlite3
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from store import lsh
from store import pages as page_store
from store import runs as run_store
from store.db import is_busy, transaction
from store.pages import blob_vector

from . import config, dedup, pipeline, signature_run, workers
from .config import LearnSettings
from .encoding import decode_page
from .errors import InputError, StoreError
from .extract import extract_page
from .grouping import host_of, layout_containment, match_prefix, shape_set, url_prefixes
from .pipeline import Progress, Summary
from .sources import iter_records
from .datatypes import METADATA_FIELDS, Extraction, Metadata, Skip

if TYPE_CHECKING:  # annotations only: a store opens without sqlite-utils (store.db.Database)
    import sqlite_utils

log = logging.getLogger(__name__)

COMMAND = "recrawl"
Checkpoint = Callable[[str], None]  # called at each point a run can be killed: tests kill the process there
Clock = Callable[[], str]


@dataclass(slots=True)
class _Fetched:
    """One record after the work done outside the transaction: classified, and extracted when it changed."""

    kind: str  # "skip", "unchanged", "new", "changed" or "revived"
    id: str = ""
    url: str = ""
    fetched_at: str | None = None
    skip: Skip | None = None
    html: bytes = b""  # the UTF-8 bytes the store keeps (page_store.encode_page)
    encoding: str = "utf-8"
    digest: str = ""
    hashes: np.ndarray | None = None
    shapes: np.ndarray | None = None
    text_chars: int = 0
    group: str = ""
    site: str | None = None
    result: Extraction | None = None
    signed: dedup.SignedText | None = None  # the result's text signed for the near-duplicate index (by a worker)


@dataclass(slots=True)
class _PreparedBatch:
    """What one batch writes, gathered while its records are prepared."""

    records: list[_Fetched] = field(default_factory=list)
    by_group: dict[str, Counter] = field(default_factory=lambda: defaultdict(Counter))


def recrawl(db: sqlite_utils.Database, inputs: Sequence[str | Path], *, retire_missing: bool = False,
            method: str = "auto", batch_size: int = config.RECRAWL_BATCH_PAGES,
            settings: LearnSettings = LearnSettings(), progress: Progress | None = None, clock: Clock = pipeline.now,
            checkpoint: Checkpoint | None = None, site: str | None = None, jobs: int = 1) -> Summary:
    """Bring the store up to date with a crawl; rerun after a kill to continue where it stopped.

    The summary's ``pages`` lists the ids of the crawl's pages (sorted), resumed runs included; ``site`` names the
    pages of folders and .html files (``sources.iter_records``). With ``jobs`` above 1, worker processes decode,
    classify and extract each batch's records while this process alone writes: the same store as ``jobs=1``."""
    if batch_size < 1:
        raise InputError(f"batch size {batch_size} is not a positive number of records: give --batch-size 1 or more")
    records = iter_records(inputs, site=site)
    prepare_store(db)
    with run_store.writer_lock(db, command=COMMAND), busy_as_store_error(db), contextlib.ExitStack() as stack:
        crawl = _Crawl(db, settings=settings, method=method, batch_size=batch_size, clock=clock,
                       checkpoint=checkpoint or _no_checkpoint)
        crawl.open_run(run_key(inputs, method=method), inputs)
        crawl.finish_pending()
        if jobs > 1 and crawl.run.stage == "records":
            pipeline.warm_models()
            crawl.pool = stack.enter_context(workers.pool(jobs, _Classifier, db, method))
            crawl.jobs = jobs
        crawl.process(records, progress)
        crawl.retire(retire_missing)
        crawl.close_run()
        crawl.summary.pages = run_store.seen_pages(db, crawl.run.id)
    return crawl.summary


def prepare_store(db: sqlite_utils.Database) -> None:
    """Create the tables a recrawl writes (outside any transaction: migrations open their own)."""
    run_store.ensure_schema(db)
    lsh.prepare(db)


def run_key(inputs: Sequence[str | Path], *, method: str) -> str:
    """What makes two invocations the same run: the inputs (path, size, modification time) and the method."""
    parts = []
    for path in map(Path, inputs):
        stat = path.stat()
        parts.append([str(path.resolve()), None if path.is_dir() else stat.st_size, stat.st_mtime_ns])
    text = json.dumps({"command": COMMAND, "inputs": parts, "method": method}, sort_keys=True)
    return hashlib.sha1(text.encode()).hexdigest()


@contextlib.contextmanager
def busy_as_store_error(db: sqlite_utils.Database) -> Iterator[None]:
    """SQLite's "database is locked" (another writer held it past the busy timeout) as a StoreError that says so."""
    try:
        yield
    except sqlite3.OperationalError as e:
        if not is_busy(e):
            raise
        path = run_store.database_path(db) or "the database"
        raise StoreError(f"{path} stayed locked by another writer (a build, ingest or rules import?) past the busy "
                         f"timeout ({e}): wait for it to finish and rerun; a rerun continues where this run "
                         "stopped") from None


def _no_checkpoint(_: str) -> None:
    return None


class _Classifier:
    """What classifying a record needs: the templates in force, their layouts and the URL groups known. The writing
    process has one; with --jobs each worker process has its own, on its read-only connection, and turns tasks
    (templates generation, the stored state of the records' ids, records) into (classification, the state it
    looked up, the URL groups it looked up) for the writer to check against its own state (``_Crawl._take``)."""

    def __init__(self, db: sqlite_utils.Database, method: str) -> None:
        self.db, self.method = db, method
        self.signing = pipeline.index_settings(db)  # what the extracted texts are signed with for the index
        self.load_templates()
        self.groups = run_store.group_keys(db)
        self.generation = 0
        self.looked: tuple[str, tuple | None] | None = None  # (page id, stored state) the last record looked up
        self.calls: list[tuple[str, str, str]] = []  # (url, page id, group) of the last record's group lookups

    def load_templates(self) -> None:
        self.index = pipeline.TemplateIndex(self.db)
        # site -> (its layout signature, the share of it a page must hold: its template's layout_match)
        self.layouts = {site: (shapes, threshold) for layouts in self.index.layouts.values()
                        for shapes, site, threshold in layouts}

    def __call__(self, task: tuple[int, dict, list]) -> list[tuple[_Fetched, tuple | None, list]]:
        generation, state, records = task
        if generation != self.generation:  # the writer relearned: read the templates (and groups) it committed
            self.load_templates()
            self.groups |= run_store.group_keys(self.db)
            self.generation = generation
        classified = [(self.classify(record, state), self.looked, self.calls) for record in records]
        extracted = [f for f, _, _ in classified if f.result is not None and f.result.text.strip()]
        if extracted:
            for f, signed in zip(extracted, dedup.sign_each([f.result.text for f in extracted], self.signing)):
                f.signed = signed  # signed here, in the worker: the writer only stores
        return classified

    def classify(self, record, state: dict) -> _Fetched:
        """The record classified (and extracted when it changed); any exception makes it a skip ("error")."""
        self.looked, self.calls = None, []
        try:
            return self._classify_record(record, state)
        except Exception as exc:  # noqa: BLE001 -- one record's failure is its skip, never the run's end
            return _Fetched("skip", skip=pipeline.error_skip(getattr(record, "id", None), getattr(record, "url", None),
                                                              exc))

    def _classify_record(self, record, state: dict) -> _Fetched:
        started = pipeline.page_clock()
        page = record if isinstance(record, Skip) else decode_page(record)
        if isinstance(page, Skip):
            return _Fetched("skip", skip=page)
        data, digest = page_store.encode_page(page.html)
        known = state.get(page.id)
        self.looked = (page.id, known)
        if known is not None and known[0] == digest and not known[1]:
            return _Fetched("unchanged", id=page.id, url=page.url, fetched_at=page.fetched_at, digest=digest,
                            group=known[2] or self.group_of(page.url, page.id), site=known[3])
        seg = pipeline.segment_page(page, started=started)
        if isinstance(seg, Skip):
            return _Fetched("skip", skip=dataclasses.replace(seg, source=record.source))
        kind = "new" if known is None else "revived" if known[1] else "changed"
        group = (known[2] if known else None) or self.group_of(page.url, page.id)
        compiled = self._choose_template(seg, known[3] if known else None)
        site = compiled.site if compiled is not None else None
        result = extract_page(seg, compiled, site=site or group, method=self.method)
        late = pipeline.over_time(page.id, page.url, started, "extract")
        if late is not None:
            return _Fetched("skip", skip=late)
        shapes = pipeline.block_shapes(seg)
        return _Fetched(kind, id=page.id, url=page.url, fetched_at=page.fetched_at, html=data,
                        encoding=page.encoding, digest=digest, hashes=seg.vector, shapes=shapes,
                        text_chars=sum(len(b.text) for b in seg.blocks), group=group, site=site, result=result)

    def _choose_template(self, seg, site: str | None):
        """The stored site's template while the page still fits its layout, else the template whose layout it fits
        (a changed page may have moved to another layout), else the stored one (its coverage will tell)."""
        stored = self.index.compiled(site) if site else None
        if stored is not None:
            shapes = shape_set(pipeline.block_shapes(seg))
            layout, threshold = self.layouts[site]
            if layout_containment(layout, shapes) >= threshold:
                return stored
        return self.index.find(seg, None) or stored

    def group_of(self, url: str, page_id: str) -> str:
        """The longest known URL-prefix group of a new page, else its host's group (known from now on)."""
        group = match_prefix(url, self.groups, page_id)
        if group is None:
            prefixes = url_prefixes(url, page_id)
            group = prefixes[-1] if prefixes else ""
            self.groups.add(group)
        self.calls.append((url, page_id, group))
        return group


class _Crawl:
    """One recrawl run: its progress row, the templates in force and the counts so far."""

    def __init__(self, db: sqlite_utils.Database, *, settings: LearnSettings, method: str, batch_size: int,
                 clock: Clock, checkpoint: Checkpoint) -> None:
        self.db, self.settings, self.method, self.batch_size = db, settings, method, batch_size
        self.clock, self.checkpoint = clock, checkpoint
        self.summary = Summary()
        self.classifier = _Classifier(db, method)
        self.generation = 0  # the templates in force: counted up at each reload, so workers reload theirs
        self.pool, self.jobs = None, 1  # worker processes classifying records (--jobs)
        self.run: run_store.Run | None = None

    @property
    def index(self) -> pipeline.TemplateIndex:
        return self.classifier.index

    def _load_templates(self) -> None:
        self.classifier.load_templates()
        self.generation += 1

    # --- the run's progress row -------------------------------------------------------------------------------

    def open_run(self, key: str, inputs: Sequence[str | Path]) -> None:
        """Continue the unfinished run of the same command, or start one (abandoning other unfinished runs)."""
        run = run_store.open_run(self.db, key)
        with transaction(self.db):
            abandoned = run_store.abandon_runs(self.db, keep=run.id if run else None, now=self.clock())
            if run is None:
                run = run_store.start_run(self.db, command=COMMAND, key=key, inputs=[str(p) for p in inputs],
                                          options={"method": self.method}, now=self.clock())
        for other in abandoned:
            log.warning("run %d with other inputs did not finish: abandoned (its committed work stays)", other)
        self.run = run
        self.summary.counts.update(run.counts.get("counts", {}))
        self.summary.skipped.update(run.counts.get("skipped", {}))
        if run.records_done or run.stage != "records":
            log.info("run %d: resuming at record %d (stage %s)", run.id, run.records_done, run.stage)
            self.summary.counts["resumed at record"] = run.records_done
        else:
            log.info("run %d: started", run.id)

    def _save_counts(self, *, records_done: int | None = None) -> None:
        counts = {"counts": dict(self.summary.counts), "skipped": dict(self.summary.skipped)}
        counts["counts"].pop("resumed at record", None)
        if records_done is None:
            run_store.set_stage(self.db, self.run.id, self.run.stage, counts=counts, now=self.clock())
        else:
            run_store.record_progress(self.db, self.run.id, records_done=records_done, counts=counts,
                                      now=self.clock())

    def _set_stage(self, stage: str) -> None:
        self.run = run_store.Run(self.run.id, self.run.key, stage, self.run.records_done, self.run.batches_done,
                                 self.run.counts, self.run.started_at)
        self._save_counts()

    def close_run(self) -> None:
        with transaction(self.db):
            self._set_stage("done")
        by_outcome = ", ".join(f"{k}={v}" for k, v in sorted(self.summary.counts.items()))
        log.info("run %d: done: %s", self.run.id, by_outcome)

    # --- records ----------------------------------------------------------------------------------------------

    def process(self, records: Iterator, progress: Progress | None) -> None:
        """Every record not yet committed, batch by batch; each batch is one transaction with its progress."""
        if self.run.stage != "records":
            return
        done = self.run.records_done
        records = islice(records, done, None)
        while chunk := list(islice(records, self.batch_size)):
            batch = self._prepare(chunk)
            with transaction(self.db):
                self._write(batch)
                self._check_health(sorted(batch.by_group))
                done += len(chunk)
                self._save_counts(records_done=done)
                self.checkpoint("commit batch")
            self.checkpoint("batch committed")
            self._log_batch(done, batch)
            if progress:
                progress(done, None)
            self.finish_pending()

    def _prepare(self, chunk: list) -> _PreparedBatch:
        batch = _PreparedBatch()
        ids = [r.id for r in chunk if not isinstance(r, Skip)]
        state = run_store.known_hashes(self.db, ids)
        classified = self._classify_in_workers(chunk, state) if self.pool is not None else None
        for number, record in enumerate(chunk):
            fetched = None if classified is None else self._take(classified[number], state)
            if fetched is None:  # no workers, or a worker saw another state than this record's turn has
                fetched = self.classifier.classify(record, state)
            self.checkpoint("prepare record")
            batch.records.append(fetched)
            if fetched.kind != "skip":
                state[fetched.id] = (fetched.digest, False, fetched.group, fetched.site)
                batch.by_group[fetched.group][fetched.kind] += 1
        return batch

    def _classify_in_workers(self, chunk: list, state: dict) -> list[tuple[_Fetched, tuple | None, list]]:
        """Each record classified by a worker against the batch's state as it was read (``_Classifier.__call__``),
        in the order of the records."""
        tasks = ((self.generation, {r.id: state[r.id] for r in part if not isinstance(r, Skip) and r.id in state},
                  part) for part in workers.chunked(chunk, pipeline.WORK_CHUNK))
        return [item for results in workers.imap_ordered(self.pool, tasks, ahead=pipeline.WORK_AHEAD * self.jobs)
                for item in results]

    def _take(self, classified: tuple[_Fetched, tuple | None, list], state: dict) -> _Fetched | None:
        """A worker's classification, if it is the one this process would make now: the record's stored state is
        the one the worker saw (an earlier record of the batch may have the same id) and every URL group it
        looked up is the one this process finds (its groups may have grown meanwhile); else None."""
        fetched, looked, calls = classified
        if looked is not None and state.get(looked[0]) != looked[1]:
            return None
        for url, page_id, group in calls:
            if self.classifier.group_of(url, page_id) != group:
                return None
        return fetched

    def _has_template(self, group: str) -> bool:
        return bool(self.index.layouts.get(group))

    def _write(self, batch: _PreparedBatch) -> None:
        now = self.clock()
        touched, extracted = [], []
        for fetched in batch.records:
            self.checkpoint("write record")
            if fetched.kind == "skip":
                self._write_skip(fetched.skip, now)
            elif fetched.kind == "unchanged":
                touched.append((fetched.id, fetched.fetched_at))
            else:
                self._write_page(fetched, now)
                extracted.append(fetched)
            if fetched.kind != "skip":
                self.summary.counts[fetched.kind] += 1
        page_store.touch_pages(self.db, touched, now=now)
        run_store.mark_seen(self.db, self.run.id, [f.id for f in batch.records if f.kind != "skip"])
        run_store.add_observations(self.db, [_observation(f) for f in extracted])
        self._index([f.result for f in extracted], [f.result.boilerplate_chars for f in extracted],
                    [f.signed for f in extracted])

    def _write_skip(self, skip: Skip, now: str) -> None:
        page_store.record_skip(self.db, source=skip.source, reason=skip.reason, detail=skip.detail, page_id=skip.id,
                               url=skip.url, now=now)
        self.summary.add_skip(skip)
        log.debug("skipped %s: %s %s", skip.source, skip.reason, skip.detail)

    def _write_page(self, f: _Fetched, now: str) -> None:
        page_store.upsert_page(self.db, id=f.id, url=f.url, host=host_of(f.url), html=f.html, digest=f.digest,
                               fetched_at=f.fetched_at, encoding=f.encoding, hashes=f.hashes, shapes=f.shapes,
                               text_chars=f.text_chars, now=now)
        page_store.assign_sites(self.db, [(f.id, f.group, f.site)])
        self._save_extraction(f.result, f.digest, now)

    def _save_extraction(self, result: Extraction, digest: str, now: str) -> None:
        page_store.save_extraction(self.db, page_id=result.id, site=result.site, method=result.method,
                                   template=result.template, coverage=result.coverage, text=result.text,
                                   boilerplate_chars=result.boilerplate_chars, digest=digest, now=now,
                                   title=result.title, metadata=result.metadata.to_json())

    def _index(self, results: list[Extraction], boilerplate: list[int],
               signed: list[dedup.SignedText | None] | None = None) -> None:
        """Replace the pages' near-duplicate index entries with their new extracted text: with the signatures the
        workers made (``signed``, None where a text was not signed), the rest signed here; stored as
        ``dedup.index_texts`` stores them (same signatures, same batches of dedup.BATCH_PAGES)."""
        blank = [r.id for r in results if not r.text.strip()]
        if blank:
            dedup.remove_pages(self.db, blank)
            signature_run.remove_signature_pages(self.db, blank)
        fetched = page_store.fetch_times(self.db, [r.id for r in results])
        kept = [(r, b, s) for r, b, s in zip(results, boilerplate, signed or [None] * len(results)) if r.text.strip()]
        items = [dedup.TextItem(r.id, r.url, r.text, b, fetched.get(r.id)) for r, b, _ in kept]
        if items:
            signs = [s for _, _, s in kept]
            unsigned = [i for i, s in enumerate(signs) if s is None]
            if unsigned:  # classified here (--jobs 1, a worker's answer not taken) or re-extracted (_drain)
                for i, s in zip(unsigned, dedup.sign_each([items[i].text for i in unsigned], self.classifier.signing)):
                    signs[i] = s
            for start in range(0, len(items), dedup.BATCH_PAGES):
                dedup.index_signed(self.db, items[start:start + dedup.BATCH_PAGES],
                                   signs[start:start + dedup.BATCH_PAGES], self.classifier.signing)
            signature_run.add_to_signature_indexes(self.db, items)

    def _log_batch(self, done: int, batch: _PreparedBatch) -> None:
        totals = Counter(f.kind for f in batch.records)
        sites = "; ".join(f"{group or '(no host)'} " + " ".join(f"{k}={v}" for k, v in sorted(counts.items()))
                          for group, counts in sorted(batch.by_group.items()))
        log.info("run %d: %d records committed (this batch: %s) by site: %s", self.run.id, done,
                 " ".join(f"{k}={v}" for k, v in sorted(totals.items())), sites)

    # --- template health --------------------------------------------------------------------------------------

    def _check_health(self, groups: Iterable[str]) -> None:
        """Judge each group's recent pages; a group whose templates drifted (or that has none) gets an intent."""
        for group in groups:
            mark, need = run_store.group_state(self.db, group, default_need=config.DRIFT_MIN_PAGES)
            seen = run_store.observations_since(self.db, group, mark)
            recent = seen[-config.DRIFT_WINDOW:]
            low = sum(o.low for o in recent)
            if len(recent) < need or low < config.DRIFT_SHARE * len(recent):
                run_store.prune_observations(self.db, group, keep=config.DRIFT_WINDOW)
                continue
            self._plan_relearn(group, recent, seen, low)

    def _plan_relearn(self, group: str, recent: list, seen: list, low: int) -> None:
        drift = self._has_template(group)
        learn = tuple(dict.fromkeys(o.page_id for o in recent))
        learning = set(learn)
        others = tuple(pid for pid in dict.fromkeys(o.page_id for o in seen) if pid not in learning)
        if drift:
            reason = (f"drift: {low} of {len(recent)} recent pages fitted no layout or kept under "
                      f"{config.DRIFT_COVERAGE:.0%} of the template's blocks")
        else:
            reason = f"new site: learned from {len(learn)} pages without a template"
        intent = run_store.Intent(group, learn, reason, drift, run_store.last_template_id(self.db), seen[-1].seq,
                                  others)
        run_store.add_intent(self.db, intent, now=self.clock())
        log.info("%s: %s", group or "(no host)", reason)

    def finish_pending(self) -> None:
        """Relearn the groups recorded as drifted, then extract again the pages queued for it."""
        pending = run_store.intents(self.db)
        for intent in pending:
            self._relearn(intent)
        if pending:
            self._load_templates()
        self._drain()

    def _relearn(self, intent: run_store.Intent) -> None:
        live = set(run_store.known_live(self.db, intent.page_ids))
        ids = [pid for pid in intent.page_ids if pid in live]
        pipeline.learn_group(self.db, intent.group_key, ids, self.settings, reason=intent.reason)
        self.checkpoint("relearned")
        with transaction(self.db):
            written = self._record_versions(intent, ids)
            queued = self._queue_reextraction(intent, ids, written)
            need = config.DRIFT_MIN_PAGES if written else config.DRIFT_WINDOW
            run_store.set_group_state(self.db, intent.group_key, mark_seq=intent.mark_seq, need=need,
                                      now=self.clock())
            run_store.remove_intent(self.db, intent.group_key)
            self.summary.counts["drift detected" if intent.drift else "sites learned"] += 1
            self.summary.counts["template versions learned"] += len(written)
            self._save_counts()
            self.checkpoint("commit relearn")
        log.info("%s: %d new template versions (%s); %d pages queued for extraction", intent.group_key,
                 len(written), ", ".join(f"{v.site}@v{v.version}" for v in written) or "none", queued)

    def _record_versions(self, intent: run_store.Intent, learned: list[str]) -> list[run_store.Version]:
        """Give the new versions their reason, and flag stale what the drift made so (with when and why)."""
        written = run_store.versions_after(self.db, intent.group_key, intent.last_template_id)
        now = self.clock()
        for version in written:
            previous = run_store.previous_version(self.db, version.site, version.version)
            suffix = f" (replaces v{previous.version})" if previous else ""
            run_store.set_reason(self.db, version.id, intent.reason + suffix)
            if previous is not None and intent.drift:
                run_store.mark_stale(self.db, previous.site, previous.version, now=now,
                                     detail=f"{intent.reason}; replaced by v{version.version}")
        if intent.drift:
            relearned = run_store.sites_of(self.db, learned)
            for version in run_store.current_versions(self.db, intent.group_key):
                if version.site not in relearned:
                    run_store.mark_stale(self.db, version.site, version.version, now=now,
                                         detail=f"{intent.reason}; no layout of the recent pages matched it")
        return written

    def _queue_reextraction(self, intent: run_store.Intent, learned: list[str],
                            written: list[run_store.Version]) -> int:
        """Queue the pages learned from, and the pages extracted with a replaced version that fit a new one."""
        rows = dict(run_store.sites_of_pages(self.db, learned))
        replaced = [f"{v.site}@v{prev.version}" for v in written
                    if (prev := run_store.previous_version(self.db, v.site, v.version)) is not None]
        candidates = [pid for pid in dict.fromkeys(list(intent.candidates) +
                                                   run_store.pages_extracted_with(self.db, replaced))
                      if pid not in rows]
        fitted = self._fit_layouts(intent.group_key, candidates, {v.site for v in written})
        page_store.assign_sites(self.db, [(pid, intent.group_key, site) for pid, site in fitted.items()])
        rows.update(fitted)
        run_store.enqueue(self.db, sorted(rows.items()))
        return len(rows)

    def _fit_layouts(self, group: str, ids: list[str], sites: set[str]) -> dict[str, str]:
        """Of the given pages, those whose stored layout fits one of the named sites' new layouts, with that site."""
        layouts = [(v.site, blob_vector(v.layout_shapes), v.layout_match)
                   for v in run_store.current_versions(self.db, group) if v.site in sites]
        if not layouts:
            return {}
        threshold = {site: share for site, _, share in layouts}  # each template's own layout_match
        fitted = {}
        for pid, shapes in page_store.page_shapes(self.db, ids).items():
            page_set = shape_set(shapes)
            score, site = max((layout_containment(layout, page_set), site) for site, layout, _ in layouts)
            if score >= threshold[site]:
                fitted[pid] = site
        return dict(sorted(fitted.items()))

    def _drain(self) -> None:
        """Extract the queued pages again, a batch per transaction."""
        while rows := run_store.queued(self.db, limit=self.batch_size):
            sites = dict(rows)
            results = []
            for stored in page_store.load_pages(self.db, [pid for pid, _ in rows]):
                seg = pipeline.stored_segment(stored)
                if isinstance(seg, Skip):
                    continue
                site = sites[stored.id]
                try:
                    compiled = self.index.find(seg, site)
                    result = extract_page(seg, compiled, site=site or stored.site or stored.group_key,
                                          method=self.method)
                except Exception as exc:  # noqa: BLE001 -- the page keeps its last extraction
                    pipeline.error_skip(stored.id, stored.url, exc)
                    continue
                results.append((result, stored.content_hash))
            with transaction(self.db):
                now = self.clock()
                for result, digest in results:
                    self._save_extraction(result, digest, now)
                self._index([r for r, _ in results], [r.boilerplate_chars for r, _ in results])
                run_store.dequeue(self.db, [pid for pid, _ in rows])
                self.summary.counts["re-extracted"] += len(results)
                self._save_counts()
                self.checkpoint("commit re-extraction")

    # --- pages gone from the crawl ----------------------------------------------------------------------------

    def retire(self, retire_missing: bool) -> None:
        """With ``retire_missing``: retire the live pages this run did not fetch, a batch per transaction (none when
        it fetched no page at all: a crawl whose every record was skipped says nothing of what is gone)."""
        if not retire_missing or self.run.stage == "done":
            return
        if self.run.stage == "records" and not run_store.seen_pages(self.db, self.run.id, limit=1):
            log.warning("run %d: no page of this crawl was read: nothing retired", self.run.id)
            return
        if self.run.stage != "retire":
            with transaction(self.db):
                self._set_stage("retire")
        while ids := run_store.unseen_pages(self.db, self.run.id, limit=self.batch_size):
            with transaction(self.db):
                page_store.retire_pages(self.db, ids)
                dedup.remove_pages(self.db, ids)
                signature_run.remove_signature_pages(self.db, ids)
                self.summary.counts["retired"] += len(ids)
                self._save_counts()
                self.checkpoint("commit retire")
            log.info("run %d: retired %d pages not in this crawl", self.run.id, len(ids))


def _observation(f: _Fetched) -> tuple[str, str, str | None, float | None, bool]:
    """(group, page, template, coverage, low): low when no template fitted, or its coverage fell under the bar."""
    result = f.result
    low = result.coverage is None or result.coverage < config.DRIFT_COVERAGE
    return f.group, f.id, result.template, result.coverage, low


# --- history ------------------------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class TemplateVersion:
    """One version of a site's template as `templater rules history` shows it."""

    site: str
    version: int
    learned_at: str
    reason: str
    current: bool
    stale: bool
    stale_at: str | None
    stale_reason: str | None
    pages: int
    rules: int

    def to_json(self) -> dict:
        return {"site": self.site, "version": self.version, "learned_at": self.learned_at, "reason": self.reason,
                "current": self.current, "stale": self.stale, "stale_at": self.stale_at,
                "stale_reason": self.stale_reason, "pages": self.pages, "rules": self.rules}


def template_history(db: sqlite_utils.Database, site: str) -> list[TemplateVersion]:
    """Every version of a site's template, oldest first: when and why it was made, when and why it went stale."""
    rows = run_store.template_history(db, site)
    if not rows:
        near = run_store.sites_like(db, site)
        hint = f" (did you mean {', '.join(near)}?)" if near else ""
        raise InputError(f"no template for site {site!r}{hint}: `templater rules list` shows the sites")
    return [TemplateVersion(site=r.version.site, version=r.version.version, learned_at=r.version.learned_at,
                            reason=r.version.reason, current=r.version.current, stale=r.version.stale,
                            stale_at=r.stale_at, stale_reason=r.stale_detail, pages=r.version.page_count,
                            rules=r.version.rule_count) for r in rows]


# --- output -------------------------------------------------------------------------------------------------------

def crawl_extractions(db: sqlite_utils.Database, ids: Sequence[str], *, method: str = "auto", links: bool = False,
                      stored: bool = True, jobs: int = 1) -> Iterator[Extraction]:
    """What `recrawl --output` writes: the extractions of the crawl's pages, each once, in the order given.

    With ``stored`` (the output needs the record's fields alone, not the document's structure), a page whose stored
    extraction is current (``store.pages.current_extraction_ids``: made from its content, after its site's last
    template and pins) comes from the store as it is, fields included, without being parsed again; the others
    are extracted again from the store with their templates (``pipeline.iter_crawl_extractions``)."""
    ids = list(dict.fromkeys(ids))
    kept = page_store.current_extraction_ids(db, ids) if stored else set()
    position = {pid: i for i, pid in enumerate(ids)}
    again = iter(pipeline.iter_crawl_extractions(db, [i for i in ids if i not in kept], method=method, links=links,
                                                 jobs=jobs))
    pending = next(again, None)
    for record in page_store.load_extractions(db, [i for i in ids if i in kept]) if kept else ():
        while pending is not None and position[pending.id] < position[record["id"]]:
            yield pending
            pending = next(again, None)
        yield _from_record(record)
    while pending is not None:
        yield pending
        pending = next(again, None)


def _from_record(record: dict) -> Extraction:
    """A stored output record (``store.pages.load_extractions``) as the Extraction it was made from (no document:
    its structure is not stored)."""
    fields = {key: record[key] for key in METADATA_FIELDS}
    if fields["tags"] is not None:
        fields["tags"] = tuple(fields["tags"])
    return Extraction(id=record["id"], url=record["url"], site=record["site"], text=record["text"],
                      method=record["method"], template=record["template"], coverage=record["coverage"],
                      title=record["title"], metadata=Metadata(**fields))
