"""The pipeline on Apache Spark: the same pure functions as a local run, distributed (``pip install
'site-templater[spark]'``; ``templater spark`` starts it, in local mode or, run by ``spark-submit cli.py spark``, on
a cluster).

    read        every input file through Spark (``binaryFiles``: local, HDFS, s3a), records by the local readers
                (``sources.iter_file_bytes``)
    ingest      decode and segment (``pipeline.prepare_record``); bad records counted by reason; one version of
                each page id, the one a local ingest of the same inputs keeps; pages cached where they are
                (partitioned by id): what is joined with them later is partitioned the same way, so it comes to them
    group       the pages of each URL prefix counted (a shuffle), then each page's group (``grouping.choose_group``)
    layouts     per group: layout clusters and the pages to learn from (``pipeline.plan_layouts``, ``learn_sample``)
    learn       per layout cluster: its sampled pages -> template (``pipeline.learn_cluster``); the templates are
                saved on the driver into a templater database (``store.templates.save_template``), in the order a
                local build saves them
    extract     the current templates broadcast, compiled once per Python worker into a ``pipeline.TemplateIndex``;
                each page with its group and site -> ``TemplateIndex.find``, ``extract.extract_page`` (templates
                beyond ``broadcast_bytes`` are joined with the pages instead, by site or longest template prefix)
    sign        pages in id order (one sort), numbered into the local run's index batches -> signatures, band keys
                and verification sets (``dedup.sign_texts``, ``shingles.band_keys``, ``lsh.stored_form``)
    band keys   a shuffle on band keys (16 rows a page by default): the buckets two or more pages share
    candidates  each bucket offers its pairs as the index does (``lsh.bucket_pairs``: a
                bucket's first BUCKET_CAP pages, and within an index batch the batch's first BUCKET_CAP)
    verify      each pair joined with both pages' sets -> ``shingles.set_similarity`` >= threshold
    components  connected components of the verified pairs: a union-find on the driver up to
                ``driver_components`` pairs, else min-label propagation on DataFrames
    clusters    each component's canonical page and similarities (``dedup.cluster_rows``)

Outputs: Parquet datasets ``pages``, ``extractions``, ``clusters`` and ``skips`` under ``out``, and the templates in
the SQLite database ``db`` (the driver's local file). A local run indexes texts incrementally, so its clusters are
the connected components of its verified candidate pairs and its canonical page is the earliest fetched (when
known), else the first seen (index batch), then less boilerplate, shorter URL, URL, doc number: the job reproduces
exactly that, except cluster labels (here the smallest doc number of the cluster).
"""

from __future__ import annotations

import os
import sys
import logging
import time
import pickle
import zlib
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from operator import add
from pathlib import Path

import numpy as np

from store import lsh
from store import pages as page_store
from store import pins as pin_store
from store import templates as template_store
from store.db import transaction
from templater import dedup, pipeline
from templater.config import BROADCAST_BYTES, DRIVER_COMPONENTS, JOIN_SALTS, PARTITIONS_PER_CORE, LearnSettings
from templater.errors import InputError
from templater.extract import extract_page
from templater.grouping import choose_group, host_of, shape_set, url_prefixes
from templater.shingles import (ShingleSettings, band_keys, comparable_set, estimate_similarity, set_jaccard,
                                set_similarity)
from templater.sources import check_input, input_format, iter_file_bytes
from templater.datatypes import Extraction, Page, Segmented, Skip
from templater.unionfind import UnionFind

log = logging.getLogger(__name__)

LOCAL_MASTER = "local[2]"  # the master when none is given outside spark-submit
SPARK_MISSING = "pyspark is not installed: pip install 'site-templater[spark]' (and Java 17 or later)"


@dataclass(frozen=True, slots=True)
class JobOptions:
    """What shapes a run besides its inputs and outputs."""

    method: str = "auto"  # the single-page method (extract --fallback)
    learn: LearnSettings = LearnSettings()
    shingles: ShingleSettings = ShingleSettings()
    index_batch: int = pipeline.BATCH_PAGES  # pages per index batch of the local run it reproduces
    bucket_cap: int = lsh.BUCKET_CAP
    partitions: int | None = None  # partitions of each stage; default PARTITIONS_PER_CORE per core
    broadcast_bytes: int = BROADCAST_BYTES  # templates up to this size (pickled) are broadcast, above it joined
    driver_components: int = DRIVER_COMPONENTS  # verified pairs up to this many: components found on the driver


@dataclass
class JobSummary:
    """Counts (``pipeline.Summary``), seconds per stage and the outputs written."""

    summary: pipeline.Summary = field(default_factory=pipeline.Summary)
    seconds: dict[str, float] = field(default_factory=dict)
    outputs: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict:
        return {**self.summary.to_json(), "seconds": {k: round(v, 3) for k, v in self.seconds.items()},
                "outputs": self.outputs}


@dataclass(frozen=True, slots=True)
class StoredRow:
    """A page as a local ingest stores it: its order in the inputs decides which version of an id is kept."""

    order: tuple[int, str, int]  # (input number, file, record number)
    id: str
    url: str
    html: bytes  # the UTF-8 bytes the store keeps (page_store.encode_page), parsed as a stored page is
    encoding: str
    fetched_at: str | None
    digest: str
    shapes: np.ndarray  # tag-path hash of each block (uint32)
    text_chars: int
    source: str

    def segment(self) -> Segmented | Skip:
        """Parsed and segmented again, as the local build and extraction do from the stored page."""
        return pipeline.segment_page(Page(id=self.id, url=self.url, html=self.html, fetched_at=self.fetched_at,
                                          encoding=self.encoding or "utf-8"))


# --- the session ------------------------------------------------------------------------------------------------

def spark_session(master: str | None = LOCAL_MASTER, *, partitions: int | None = None, app_name: str = "templater"):
    """A SparkSession on ``master`` (None: the one spark-submit gives when it started this process, else
    LOCAL_MASTER). In local mode, with what these machines need: the loopback address, and this Python for the
    workers."""
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise InputError(SPARK_MISSING) from None
    builder = (SparkSession.builder.appName(app_name).config("spark.ui.showConsoleProgress", "false")
               .config("spark.rdd.compress", "true"))  # cached pages (pickled HTML) lz4-compressed, as shuffles are
    if master is None and "PYSPARK_GATEWAY_PORT" in os.environ:  # started by spark-submit: its master
        return builder.getOrCreate()
    master = master or LOCAL_MASTER
    if master.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
        shuffle = str(partitions or PARTITIONS_PER_CORE * _cores(master))
        builder = builder.config("spark.sql.shuffle.partitions", shuffle).config("spark.driver.host", "127.0.0.1")
    elif partitions:
        builder = builder.config("spark.sql.shuffle.partitions", str(partitions))
    try:
        return builder.master(master).getOrCreate()
    except Exception as e:  # noqa: BLE001 -- py4j and pyspark raise several types when the JVM does not start
        raise InputError(f"Spark did not start on {master} ({type(e).__name__}: {str(e)[:300]}): it needs Java 17 "
                         "or later on PATH or in JAVA_HOME, and SPARK_LOCAL_IP set where the host name does not "
                         "resolve") from None


def _cores(master: str) -> int:
    inside = master[master.find("[") + 1:master.find("]")] if "[" in master else "1"
    return (os.cpu_count() or 1) if inside.strip() == "*" else int(inside.split(",")[0])


@contextmanager
def _stage(result: JobSummary, sc, name: str) -> Iterator[None]:
    """Time one stage (its actions run inside) and tag its Spark jobs with its name."""
    sc.setJobGroup(name, f"templater {name}")
    start = time.perf_counter()
    yield
    result.seconds[name] = result.seconds.get(name, 0.0) + time.perf_counter() - start


# --- the job ----------------------------------------------------------------------------------------------------

def run_job(spark, inputs: Sequence[str], *, out: str, db_path: str | Path,
            options: JobOptions = JobOptions()) -> JobSummary:
    """Read ``inputs``, learn templates, extract, find near-duplicate clusters; write Parquet under ``out`` and the
    templates into the templater database ``db_path``.

    Pages stay where the read shuffle put them (partitioned by id, cached): what is joined with them (a learning
    sample's ids, each page's group and site) is partitioned the same way, so their HTML does not move again except
    for the learning samples; the templates go to the executors as a broadcast (``options.broadcast_bytes``)."""
    from pyspark import StorageLevel

    disk = StorageLevel.MEMORY_AND_DISK  # what does not fit in memory spills instead of being computed again
    sc = spark.sparkContext
    parts = options.partitions or int(sc.defaultParallelism) * PARTITIONS_PER_CORE
    result = JobSummary()
    counts = result.summary.counts
    with _stage(result, sc, "read+ingest"):
        ingested = _read(sc, inputs, parts).groupByKey(parts).mapValues(settle_versions).persist(disk)
        # what grouping and layout clustering read, cached beside the pages (both filled by this stage's one job),
        # so that they do not read every page's HTML again: (id, (url, shape set, records, skips))
        slim = ingested.mapValues(lambda v: (v[0].url if v[0] else None, shape_set(v[0].shapes) if v[0] else None,
                                             v[1], v[2])).persist(disk)
        tally = _sum_counters(slim.mapPartitions(_ingest_tally).collect())
        counts["records"], counts["pages"] = tally.pop("records", 0), tally.pop("pages", 0)
        result.summary.skipped.update(tally)
        pages = ingested.filter(lambda kv: kv[1][0] is not None).mapValues(lambda v: v[0])  # partitioned by id
        shapes = slim.filter(lambda kv: kv[1][0] is not None)
        skips = slim.flatMap(lambda kv: kv[1][3])
    with _stage(result, sc, "group+learn"):
        groups = assign_groups_rdd(shapes.mapValues(lambda v: v[0]), min_pages=options.learn.min_group_pages,
                                   parts=parts)
        plans = (groups.join(shapes.mapValues(lambda v: v[1]), parts)
                 .map(lambda kv: (kv[1][0], (kv[0], kv[1][1]))).groupByKey(parts)
                 .flatMap(lambda gv: plan_group(gv[0], gv[1], options.learn)).persist(disk))
        learned = _learn(plans, pages, options.learn, parts)
    with _stage(result, sc, "save templates"):
        entries, sites = _save_templates(db_path, learned, options, result)
        with_template = sum(size for group, layout, template, _, size in learned if template is not None)
        counts["pages with template"] = with_template
        counts["pages without template"] = counts["pages"] - with_template
    with _stage(result, sc, "extract"):
        sites_bc = sc.broadcast(sites)
        assigned = plans.flatMap(lambda plan: [(pid, (plan[0], sites_bc.value.get((plan[0], plan[1]))))
                                               for pid in plan[2]]).partitionBy(parts)  # pages' partitioning
        extracted = _extract(sc, pages, assigned, entries, options, parts).persist(disk)
        counts.update(_sum_counters(extracted.mapPartitions(
            lambda items: [Counter(e.method for _, e in items if e is not None)]).collect()))
        plans.unpersist()
        ingested.unpersist()  # the pages' HTML is not read again
    with _stage(result, sc, "sign"):
        extractions = extracted.flatMap(lambda me: [me[1]] if me[1] is not None else [])
        by_doc, signed = _sign(extracted, options, parts)
        counts["indexed"] = by_doc.persist(disk).count()
    with _stage(result, sc, "band keys"):
        buckets = band_buckets(by_doc.values(), options.shingles, parts).persist(disk)
        counts["shared band keys"] = buckets.count()
    with _stage(result, sc, "candidates+verify"):
        edges = _verified_edges(buckets, by_doc, options, parts).persist(disk)
        counts["verified pairs"] = edges.count()
    with _stage(result, sc, "components"):
        if counts["verified pairs"] <= options.driver_components:
            labels = driver_components(edges.collect())
            labels_bc = sc.broadcast(labels)
            members = by_doc.filter(lambda kv: kv[0] in labels_bc.value).map(
                lambda kv: (labels_bc.value[kv[0]], kv[1]))
        else:
            labels = connected_components(spark, edges).partitionBy(parts)  # by_doc's partitioning: no shuffle
            members = labels.join(by_doc, parts).map(lambda kv: (kv[1][0], kv[1][1]))
    with _stage(result, sc, "clusters"):
        clusters = _clusters(members, options.shingles, parts).persist(disk)
        found = _sum_counters(clusters.mapPartitions(
            lambda rows: [Counter("clusters" if row["id"] == row["canonical"] else "other" for row in rows)])
            .collect())
        counts["pages in clusters"] = found["clusters"] + found["other"]
        counts["clusters"] = found["clusters"]
    with _stage(result, sc, "write"):
        result.outputs = _write(spark, out, extracted=extracted, extractions=extractions, clusters=clusters,
                                skips=skips)
    for rdd in (ingested, slim, extracted, signed, by_doc, buckets, edges, clusters):
        rdd.unpersist()
    return result


def _sum_counters(counters: Iterable[Counter]) -> Counter:
    total = Counter()
    for c in counters:
        total.update(c)
    return total


def _read(sc, inputs: Sequence[str], parts: int):
    """(page id, StoredRow | Skip) of every record of every input file (folders and globs as Spark reads them).

    Records go to their page id's partition before they are parsed: one shuffle spreads the parsing over every
    core and brings the versions of a page id together (a record skipped by its reader goes by its source)."""
    files = sc.union([sc.binaryFiles(path).map(lambda nf, i=i: (i, nf[0], nf[1])) for i, path in enumerate(inputs)])
    records = files.filter(lambda f: input_format(Path(f[1])) in SPARK_FORMATS).flatMap(
        lambda f: ((r.id or r.source, ((f[0], f[1], n), r)) for n, r in enumerate(iter_file_bytes(f[1], f[2]))))
    return records.partitionBy(parts).mapValues(lambda item: ingest_record(*item))


def ingest_record(order: tuple[int, str, int], item) -> StoredRow | Skip:
    """A record as a local ingest stores it, or the Skip it records."""
    seg = pipeline.prepare_record(item)
    if isinstance(seg, Skip):
        return seg
    page = seg.page
    data, digest = page_store.encode_page(page.html)
    return StoredRow(order=order, id=page.id, url=page.url, html=data, encoding=page.encoding,
                     fetched_at=page.fetched_at, digest=digest, shapes=pipeline.block_shapes(seg),
                     text_chars=sum(len(b.text) for b in seg.blocks), source=item.source)


def settle_versions(items: Iterable[StoredRow | Skip]) -> tuple[StoredRow | None, int, list[Skip]]:
    """What the records of one page id (or one unreadable record) leave: the page version a local ingest keeps
    (None if every record was skipped), how many records were ingested, the skips (in input order)."""
    items = list(items)
    rows = [r for r in items if isinstance(r, StoredRow)]
    skips = [s for s in items if isinstance(s, Skip)]
    return (keep_version(rows) if rows else None), len(rows), skips


def _ingest_tally(items) -> list[Counter]:
    tally = Counter()
    for _, (url, _, n, skips) in items:
        tally["records"] += n + len(skips)
        tally["pages"] += url is not None
        tally.update(s.reason for s in skips)
    return [tally]


def keep_version(rows: Iterable[StoredRow]) -> StoredRow:
    """The version of a page id the store keeps after ingesting its records in order (``upsert_page``): a record
    with other content replaces the page; one with the same content only moves its fetch time."""
    kept = None
    for row in sorted(rows, key=lambda r: r.order):
        if kept is not None and kept.digest == row.digest:
            kept = replace(kept, fetched_at=row.fetched_at or kept.fetched_at)
        else:
            kept = row
    return kept


def assign_groups_rdd(urls, *, min_pages: int, parts: int):
    """(id, group) for (id, url) pairs: ``grouping.assign_groups`` with its prefix counts made by a shuffle."""
    chains = urls.map(lambda iu: (iu[0], url_prefixes(iu[1], iu[0])))  # a local file is grouped by its id
    counts = (chains.flatMap(lambda ic: ((p, 1) for p in ic[1])).reduceByKey(add, parts)
              .filter(lambda pc: pc[1] >= min_pages))  # choose_group looks at no other prefix
    known = (chains.flatMap(lambda ic: ((p, ic[0]) for p in ic[1])).join(counts, parts)
             .map(lambda kv: (kv[1][0], (kv[0], kv[1][1]))).groupByKey(parts))
    return chains.leftOuterJoin(known, parts).mapValues(
        lambda ck: choose_group(ck[0], dict(ck[1] or ()), min_pages=min_pages))


def plan_group(group: str, members: Iterable[tuple[str, np.ndarray]],
               settings: LearnSettings) -> list[tuple[str, int | None, list[str], list[str], np.ndarray | None]]:
    """(group, layout, page ids, ids to learn from, layout signature) of each layout cluster of a group, as
    ``pipeline.learn_group`` plans them; layout None for pages no template can be learned for."""
    ordered = sorted(members, key=lambda m: m[0])
    ids = [pid for pid, _ in ordered]
    if len(ids) < settings.min_template_pages:
        return [(group, None, ids, [], None)]
    plans = []
    for layout, cluster, sets in pipeline.plan_layouts(ids, [s for _, s in ordered], settings):
        if len(cluster) < settings.min_template_pages:
            plans.append((group, None, cluster, [], None))
        else:
            plans.append((group, layout, cluster, pipeline.learn_sample(cluster, settings),
                          pipeline.layout_signature(sets, settings)))
    return plans


def _learn(plans, pages, settings: LearnSettings, parts: int) -> list[tuple]:
    """(group, layout, template or None, layout signature, cluster size) of every cluster large enough."""
    clusters = plans.filter(lambda p: p[1] is not None)
    # partitioned as the pages are: only the ids move to the pages, and then the sampled pages to their cluster
    wanted = clusters.flatMap(lambda p: [(pid, (p[0], p[1])) for pid in p[3]]).partitionBy(parts)
    samples = wanted.join(pages, parts).map(lambda kv: (kv[1][0], kv[1][1])).groupByKey(parts)
    templates = samples.map(lambda kv: (kv[0], _learn_one(kv[0], kv[1], settings)))
    shapes = clusters.map(lambda p: ((p[0], p[1]), (p[4], len(p[2]))))
    return shapes.leftOuterJoin(templates, parts).map(
        lambda kv: (kv[0][0], kv[0][1], kv[1][1], kv[1][0][0], kv[1][0][1])).collect()


def _learn_one(key: tuple[str, int], rows: Iterable[StoredRow], settings: LearnSettings):
    ordered = sorted(rows, key=lambda r: r.id)  # learn_sample's order
    return pipeline.learn_cluster(key[0], key[1], [row.segment() for row in ordered], settings)


def _save_templates(db_path, learned: list[tuple], options: JobOptions,
                    result: JobSummary) -> tuple[list[tuple], dict[tuple[str, int], str]]:
    """Save the learned templates as a local build does (groups and layouts in order, a version only when the rules
    changed); returns the current templates as the local extraction sees them, and each cluster's site."""
    db = pipeline.open_store(db_path)
    try:
        lsh.ensure_settings(db, options.shingles)
        sites = {}
        for group, layout, template, signature, _size in sorted(learned, key=lambda t: (t[0], t[1])):
            if template is None:
                continue
            with transaction(db, name="template"):
                _, written = template_store.save_template(db, template, group_key=group, layout_shapes=signature)
            result.summary.counts["templates learned" if written else "templates unchanged"] += 1
            sites[(group, layout)] = template.site
        entries = [(group, shapes, pin_store.apply_pins(db, template))
                   for group, shapes, template in template_store.iter_current(db)]
    finally:
        db.conn.close()
    return entries, sites


def _extract(sc, pages, assigned, entries: list[tuple], options: JobOptions, parts: int):
    """(page metadata row, Extraction or None) of every page, extracted with the template a local
    ``TemplateIndex.find`` gives it. ``assigned`` ((id, (group, site)), partitioned as ``pages`` are) joins the
    pages where they are; the templates go to the executors as a broadcast when they fit in
    ``options.broadcast_bytes``, else they are joined with the pages (salted keys)."""
    method = options.method
    # (id, (row, group, site)); assigned is partitioned as the pages are: no shuffle of pages
    keyed = assigned.join(pages, parts).mapValues(lambda gs_row: (gs_row[1], gs_row[0][0], gs_row[0][1]))
    packed = pickle.dumps(entries, protocol=pickle.HIGHEST_PROTOCOL)
    if len(packed) <= options.broadcast_bytes:
        templates = (os.urandom(8).hex(), sc.broadcast(packed))  # a worker caches its compiled index by the token
        return keyed.values().mapPartitions(lambda items: _extract_partition(
            ((row, group, site, None) for row, group, site in items), templates, method))
    template_groups = sc.parallelize(sorted({group for group, _, _ in entries}), parts).map(lambda g: (g, True))
    unassigned = keyed.filter(lambda kv: kv[1][2] is None).mapValues(lambda rgs: rgs[0].url)
    longest = (unassigned.flatMap(lambda iu: ((p, (iu[0], depth))
                                              for depth, p in enumerate(url_prefixes(iu[1], iu[0]))))
               .join(template_groups, parts).map(lambda kv: (kv[1][0][0], (kv[1][0][1], kv[0])))
               .reduceByKey(min, parts).mapValues(lambda dp: dp[1]).partitionBy(parts))
    by_key = (keyed.leftOuterJoin(longest, parts).values()
              .map(lambda rl: ((("site", rl[0][2]) if rl[0][2] is not None else
                                ("group", rl[1]) if rl[1] is not None else None,
                                zlib.crc32(rl[0][0].id.encode()) % JOIN_SALTS), rl[0])))
    lists = sc.parallelize(_template_lists(entries), parts)
    with_lists = by_key.filter(lambda kv: kv[0][0] is not None).join(lists, parts).values()
    without = by_key.filter(lambda kv: kv[0][0] is None).values().map(lambda rgs: (rgs, []))
    return with_lists.union(without).mapPartitions(lambda items: _extract_partition(
        ((row, group, site, layouts) for (row, group, site), layouts in items), None, method))


def _template_lists(entries: list[tuple]) -> list[tuple]:
    """((key, salt), [(group, layout signature, template)]) for every site and every template group (in site
    order, as ``TemplateIndex.layouts`` holds them)."""
    by_key: dict[tuple, list] = {}
    for entry in sorted(entries, key=lambda e: e[2].site):
        by_key.setdefault(("site", entry[2].site), []).append(entry)
        by_key.setdefault(("group", entry[0]), []).append(entry)
    return [((key, salt), layouts) for key, layouts in by_key.items() for salt in range(JOIN_SALTS)]


_BROADCAST_INDEX: dict[str, pipeline.TemplateIndex] = {}  # per Python worker: the broadcast templates, compiled


def _broadcast_index(templates: tuple) -> pipeline.TemplateIndex:
    """The broadcast templates ((token, broadcast)) as a ``TemplateIndex``, compiled once per Python worker
    (workers are reused from task to task)."""
    token, broadcast = templates
    if token not in _BROADCAST_INDEX:
        _BROADCAST_INDEX.clear()
        _BROADCAST_INDEX[token] = pipeline.TemplateIndex(None, entries=pickle.loads(broadcast.value))
    return _BROADCAST_INDEX[token]


def _extract_partition(items, templates, method: str) -> Iterator[tuple[tuple, Extraction | None]]:
    """Each (row, group, site, joined templates) -> (page metadata row, extraction), by ``TemplateIndex.find``:
    over the broadcast templates, or over the templates joined with the page (its site's, or its longest template
    prefix's layouts)."""
    index = _broadcast_index(templates) if templates is not None else None
    compiled: dict[tuple[str, int], pipeline.TemplateIndex] = {}
    for row, group, site, layouts in items:
        meta = (row.id, row.url, host_of(row.url), group, site, row.digest, row.fetched_at, row.encoding,
                len(row.shapes), row.text_chars, row.source)
        seg = row.segment()
        if isinstance(seg, Skip):
            yield meta, None
            continue
        if layouts is not None:  # the joined templates: an index of just them, compiled once per partition
            key = tuple((t.site, t.version) for _, _, t in layouts)
            if key not in compiled:
                compiled[key] = pipeline.TemplateIndex(None, entries=layouts)
            index = compiled[key]
        try:
            yield meta, extract_page(seg, index.find(seg, site), site=site or group,
                                     method=method)
        except Exception as exc:  # noqa: BLE001 -- one page's failure leaves it unextracted, not the job stopped
            log.warning("%s: %s while extracting it: %s", row.url, type(exc).__name__, exc)
            yield meta, None


# --- near-duplicates ----------------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class SignedPage:
    """An indexed page: its doc number and index batch (generation) as a local run numbers them."""

    doc: int
    batch: int
    page_id: str
    url: str
    boilerplate_chars: int
    text_chars: int
    signature: np.ndarray
    verify_set: np.ndarray | None  # the stored verification set (None when verifying by estimate)
    fetched_at: str | None = None  # as the index keeps it (``dedup.web_time``)
    anchors: np.ndarray | None = None  # its anchor keys (``shingles.anchor_keys``), index keys besides the bands

    def member(self) -> lsh.Member:
        return lsh.Member(self.doc, self.page_id, self.url, self.signature, self.batch, self.boilerplate_chars,
                          self.text_chars, self.fetched_at)


def _sign(extracted, options: JobOptions, parts: int):
    """(doc, SignedPage) of every page with shingles, numbered like a local run: extracted in id order, indexed in
    batches of ``index_batch`` extractions, doc numbers in that order; partitioned by doc (hash), so that the
    verification and cluster joins move only pairs and labels.

    One sort by id; each sorted partition signs its texts and counts them; the counts (one small job) give every
    partition the position of its first extraction and its first doc number."""
    from pyspark import StorageLevel

    settings, size = options.shingles, options.index_batch
    ordered = extracted.flatMap(lambda me: [(me[1].id, (me[1].url, me[1].text, me[1].boilerplate_chars,
                                                        dedup.web_time(me[0][6])))] if me[1] is not None else []
                                ).sortByKey(numPartitions=parts)
    signed = ordered.mapPartitions(lambda items: _sign_partition(list(items), settings)).persist(
        StorageLevel.MEMORY_AND_DISK)
    sizes = dict(signed.mapPartitionsWithIndex(lambda i, items: [(i, _partition_sizes(items))]).collect())
    starts, position, doc = {}, 0, 0
    for i in sorted(sizes):
        starts[i] = (position, doc)
        position, doc = position + sizes[i][0], doc + sizes[i][1]

    def number(i, items):
        position, doc = starts[i]
        for sp in items:
            if sp is not None:
                doc += 1
                yield doc, replace(sp, doc=doc, batch=position // size + 1)
            position += 1

    return signed.mapPartitionsWithIndex(number).partitionBy(parts), signed


def _partition_sizes(items) -> tuple[int, int]:
    extractions = signed = 0
    for sp in items:
        extractions += 1
        signed += sp is not None
    return extractions, signed


def _sign_partition(items: list[tuple[str, tuple[str, str, int, str | None]]],
                    settings: ShingleSettings) -> Iterator[SignedPage | None]:
    """A SignedPage (numbered later) for each extraction in order, None for one without shingles."""
    if not items:
        return
    signatures, shingles = dedup.sign_texts([text for _, (_, text, _, _) in items], settings)
    sets = lsh.stored_form(shingles, list(range(len(items))), settings) if shingles is not None else None
    for i, (pid, (url, text, boilerplate, fetched_at)) in enumerate(items):
        if signatures.empty[i]:
            yield None
            continue
        yield SignedPage(0, 0, pid, url, boilerplate, len(text), signatures.values[i],
                         sets[i] if sets is not None else None, fetched_at, signatures.anchors_of(i))


def band_buckets(signed, settings: ShingleSettings, parts: int):
    """(band key, [(doc, batch)]) of every band key two or more pages share: the shuffle of the LSH stage (one row
    per page and band)."""
    keyed = signed.mapPartitions(lambda pages: _band_rows(list(pages), settings))
    return keyed.groupByKey(parts).mapValues(list).filter(lambda kv: len(kv[1]) > 1)


def _verified_edges(buckets, by_doc, options: JobOptions, parts: int):
    """(doc a, doc b) of every candidate pair whose similarity reaches the threshold. ``by_doc`` is partitioned by
    doc: the pairs go to their pages' sets, not the sets to the pairs."""
    settings, cap = options.shingles, options.bucket_cap
    pairs = buckets.flatMap(lambda kv: bucket_candidates(kv[1], cap)).distinct(parts)
    values = by_doc.mapValues(lambda sp: (sp.verify_set if sp.verify_set is not None else sp.signature,
                                          lsh.site_of(sp.url)))
    joined = (pairs.join(values, parts).map(lambda kv: (kv[1][0], (kv[0], kv[1][1])))
              .join(values, parts).map(lambda kv: (kv[1][0][0], kv[0], kv[1][0][1], kv[1][1])))
    return joined.filter(lambda p: accepted(p[2], p[3], settings)).map(lambda p: (p[0], p[1]))


def _band_rows(pages: list[SignedPage], settings: ShingleSettings) -> Iterator[tuple[int, tuple[int, int]]]:
    if not pages:
        return
    keys = band_keys(np.stack([p.signature for p in pages]), settings)
    for page, row in zip(pages, keys.tolist()):
        anchors = [] if page.anchors is None else [k for k in page.anchors.tolist() if k not in row]
        for key in row + anchors:
            yield key, (page.doc, page.batch)


def bucket_candidates(bucket: Iterable[tuple[int, int]], cap: int) -> list[tuple[int, int]]:
    """(earlier doc, later doc) pairs one band key's pages give a local run's index: the bucket's first ``cap``
    pages pair with every later page (what a stored bucket offers a new batch), and within one index batch its
    first ``cap`` pages pair with the batch's later pages (the batch's own sorted keys)."""
    members = sorted(bucket)
    if len(members) < 2:
        return []
    docs = np.array([d for d, _ in members], dtype=np.int64)
    batches = np.array([b for _, b in members], dtype=np.int64)
    zeros = np.zeros(len(docs), dtype=np.int64)
    found = [lsh.bucket_pairs(zeros, docs, cap=cap)]
    for batch in np.unique(batches).tolist():
        mine = docs[batches == batch]
        found.append(lsh.bucket_pairs(zeros[:len(mine)], mine, cap=cap))
    return sorted(set(map(tuple, np.concatenate(found).tolist())))


def similarity(a: np.ndarray, b: np.ndarray, settings: ShingleSettings) -> float:
    """What a candidate pair is verified with: stored verification sets, or signatures when verifying by estimate."""
    if settings.verify == "estimate":
        return float(estimate_similarity(a, b))
    return set_similarity(comparable_set(a, settings), comparable_set(b, settings), settings)


def accepted(a: tuple[np.ndarray, str], b: tuple[np.ndarray, str], settings: ShingleSettings) -> bool:
    """Whether a candidate pair of (verification set or signature, site) is a near-duplicate, as the index decides
    (``lsh.accepted``: the threshold of one site or of two, the Jaccard floor on one site, resemblance)."""
    same = np.array([lsh.same_sites([a[1]], [b[1]])[0]])
    if settings.verify == "estimate":
        return bool(lsh.accepted(settings, same, np.array([similarity(a[0], b[0], settings)]), None)[0])
    x, y = comparable_set(a[0], settings), comparable_set(b[0], settings)
    return bool(lsh.accepted(settings, same, np.array([set_similarity(x, y, settings)]),
                             lambda mask: np.array([set_jaccard(x, y, settings)]),
                             lambda mask: np.array([min(len(x), len(y))]))[0])


def driver_components(edges: Iterable[tuple[int, int]]) -> dict[int, int]:
    """{doc: label} for every doc with an edge, the label the smallest doc of its component: what
    ``connected_components`` gives, by a union-find on the driver (for up to ``driver_components`` pairs)."""
    sets = UnionFind()
    for a, b in edges:
        sets.union(a, b)  # a root is always its component's smallest doc
    return sets.labels()


def connected_components(spark, edges):
    """(doc, label) for every doc with an edge: the smallest doc of its component, by min-label propagation (a
    DataFrame join and group-by per round; rounds: the components' largest diameter, plus one)."""
    from pyspark.sql import functions as F

    both = spark.createDataFrame(edges.flatMap(lambda e: [e, (e[1], e[0])]), "src long, dst long").persist()
    labels = both.select(F.col("src").alias("id")).distinct().withColumn("label", F.col("id")).localCheckpoint()
    while True:
        offered = both.join(labels, both.src == labels.id).select(F.col("dst").alias("id"), "label")
        updated = (labels.unionByName(offered).groupBy("id").agg(F.min("label").alias("label"))
                   .localCheckpoint())
        changed = (updated.join(labels.withColumnRenamed("label", "old"), "id")
                   .where(F.col("label") != F.col("old")).count())
        labels = updated
        if changed == 0:
            break
    both.unpersist()
    return labels.rdd.map(lambda row: (row["id"], row["label"]))


def _clusters(members, settings: ShingleSettings, parts: int):
    """The rows ``templater dups`` gives for every page of a cluster, from (label, SignedPage) of its members
    (label: the smallest doc of the cluster)."""
    return members.groupByKey(parts).flatMap(lambda kv: dedup.cluster_rows(
        kv[0], [sp.member() for sp in sorted(kv[1], key=lambda sp: sp.doc)], settings,
        {sp.doc: sp.verify_set for sp in kv[1]} if settings.verify != "estimate" else None))


# --- outputs ------------------------------------------------------------------------------------------------------

PAGES_SCHEMA = ("id string, url string, host string, group_key string, site string, content_hash string, "
                "fetched_at string, encoding string, n_blocks int, text_chars int, source string")
EXTRACTIONS_SCHEMA = ("id string, url string, site string, text string, method string, template string, "
                      "coverage double, boilerplate_chars int, author string, date string, date_modified string, "
                      "sitename string, description string, language string, canonical_url string, image string, "
                      "tags array<string>, title string")
CLUSTERS_SCHEMA = "id string, url string, cluster long, canonical string, similarity double"
SKIPS_SCHEMA = "source string, reason string, detail string, id string, url string"


def _metadata_row(metadata) -> tuple:
    """The metadata's fields in EXTRACTIONS_SCHEMA's order (tags as a list)."""
    return (metadata.author, metadata.date, metadata.date_modified, metadata.sitename, metadata.description,
            metadata.language, metadata.canonical_url, metadata.image,
            list(metadata.tags) if metadata.tags is not None else None)


def _write(spark, out: str, *, extracted, extractions, clusters, skips) -> dict[str, str]:
    """The Parquet datasets under ``out`` (overwritten)."""
    rows = {
        "pages": (extracted.map(lambda me: me[0]), PAGES_SCHEMA),
        "extractions": (extractions.map(lambda e: (e.id, e.url, e.site, e.text, e.method, e.template, e.coverage,
                                                   e.boilerplate_chars, *_metadata_row(e.metadata), e.title)),
                        EXTRACTIONS_SCHEMA),
        "clusters": (clusters.map(lambda r: (r["id"], r["url"], r["cluster"], r["canonical"], r["similarity"])),
                     CLUSTERS_SCHEMA),
        "skips": (skips.map(lambda s: (s.source, s.reason, s.detail, s.id, s.url)), SKIPS_SCHEMA),
    }
    written = {}
    for name, (rdd, schema) in rows.items():
        path = out.rstrip("/") + "/" + name
        spark.createDataFrame(rdd, schema).write.mode("overwrite").parquet(path)
        written[name] = path
    return written


# --- inputs ---------------------------------------------------------------------------------------------------------

SPARK_FORMATS = ("jsonl", "warc")  # what the job reads; .html files are for `templater run`


def check_inputs(inputs: Sequence[str]) -> list[str]:
    """Local paths are checked at once (a clear error instead of a Spark stack trace); URIs are left to Spark."""
    for path in inputs:
        if "://" not in path and not any(c in path for c in "*?["):
            _check_local(check_input(Path(path)))
    return [str(Path(p).resolve()) if "://" not in p else p for p in inputs]


def _check_local(path: Path) -> None:
    """InputError for an .html file, or a folder without JSON Lines or WARC files; its .html files are left out."""
    hint = f"`templater spark` reads JSON Lines and WARC files: run `templater run {path}` for .html pages"
    if path.is_file():
        if input_format(path) not in SPARK_FORMATS:
            raise InputError(f"{path}: {hint}")
        return
    kinds = Counter(input_format(Path(top) / name) for top, _, names in os.walk(path) for name in names)
    if not any(kinds[kind] for kind in SPARK_FORMATS):
        found = (f"only .html files ({kinds['html']})" if kinds["html"] else
                 "no .jsonl, .jsonl.gz, .warc or .warc.gz file")
        raise InputError(f"{path} holds {found}: {hint}")
    if kinds["html"]:
        log.warning("%s: %d .html files left out (%s)", path, kinds["html"], hint)

