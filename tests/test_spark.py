"""The Spark job in local mode gives what a local run gives: templates (rules), extracted texts, clusters.

One SparkSession for the module (starting one costs seconds), one Spark run, compared with one local run of the
same inputs. Skipped when pyspark or Java is missing; CI installs '.[test,spark]' so it runs there.
"""

import gzip
import json
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT, SAMPLES

pytest.importorskip("pyspark")
if shutil.which("java") is None:
    pytest.skip("no java on PATH: the Spark job needs Java 17 or later", allow_module_level=True)

from typer.testing import CliRunner  # noqa: E402

from cli import app  # noqa: E402
from store import templates as template_store  # noqa: E402
from templater import dedup, pipeline, recrawl, spark_job  # noqa: E402

INDEX_BATCH = 16  # small index batches, so that pages are first seen in different batches


@pytest.fixture(scope="module")
def spark():
    session = spark_job.spark_session("local[2]", partitions=2, app_name="templater-test")
    yield session
    session.stop()


def _extra_records(path):
    """Bad records, a page id fetched twice (changed, then unchanged), and near-copies of one article."""
    pages = {}
    with gzip.open(SAMPLES / "pages.jsonl.gz", "rt", encoding="utf-8") as f:
        for line in f:
            record = json.loads(line)
            pages[record["id"]] = record
    article = next(r for r in pages.values() if "phys.org" in r["url"])
    lts = pages["sqlite/lts"]
    changed = dict(lts, html=lts["html"].replace("<body>", "<body><p>A notice added on the second fetch.</p>", 1))
    copies = [dict(article, id=pid, url=f"https://copy{i}.example/{'x' * (4 - i)}.html",  # single pages
                   html=article["html"].replace("subject of initial", "subject of " + "much " * i + "initial"))
              for i, pid in enumerate(["aa/copy", "copy/2", "zz/copy"], 1)]  # first and last index batch
    lines = ["{not json", json.dumps({"id": "empty", "url": "https://example.org/e.html", "html": "  "}),
             json.dumps(changed), json.dumps(dict(changed, fetched_at="2024-01-02T00:00:00Z")),
             *map(json.dumps, copies)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    extra = _extra_records(tmp_path_factory.mktemp("inputs") / "extra.jsonl")
    return [str(SAMPLES / "pages.jsonl.gz"), str(SAMPLES / "docs.warc.gz"), str(extra)]


@pytest.fixture(scope="module")
def local(inputs, tmp_path_factory):
    """A local `templater run` of the inputs (ingest, build, extract and index), in index batches of INDEX_BATCH."""
    db = pipeline.open_store(tmp_path_factory.mktemp("local") / "local.db")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(pipeline, "BATCH_PAGES", INDEX_BATCH)
        ingested = pipeline.ingest(db, inputs)
        pipeline.build(db)
        extractions = list(pipeline.extract(db, index=True))
    return {"db": db, "skipped": dict(ingested.skipped), "extractions": extractions,
            "dups": list(dedup.iter_duplicates(db))}


def _run_spark(spark, inputs, folder, **options):
    result = spark_job.run_job(spark, inputs, out=str(folder / "out"), db_path=folder / "spark.db",
                               options=spark_job.JobOptions(index_batch=INDEX_BATCH, partitions=2, **options))

    def rows(name):
        return [row.asDict() for row in spark.read.parquet(result.outputs[name]).collect()]

    return {"db_path": folder / "spark.db", "result": result, "extractions": rows("extractions"),
            "clusters": rows("clusters"), "pages": rows("pages")}


@pytest.fixture(scope="module")
def distributed(spark, inputs, tmp_path_factory):
    """The default run: templates broadcast, components of the few verified pairs found on the driver."""
    return _run_spark(spark, inputs, tmp_path_factory.mktemp("spark"))


@pytest.fixture(scope="module")
def distributed_at_scale(spark, inputs, tmp_path_factory):
    """The paths a large run takes: templates joined with the pages (too large to broadcast), components by
    label propagation on DataFrames (too many pairs for the driver)."""
    return _run_spark(spark, inputs, tmp_path_factory.mktemp("spark-scale"), broadcast_bytes=0, driver_components=-1)


def _templates(db):
    return [(group, shapes.tolist(), t.site, t.version, t.layout, t.page_count, t.rules)
            for group, shapes, t in template_store.iter_current(db)]


def _clusters(rows):
    members = {}
    for row in rows:
        members.setdefault(row["canonical"], set()).add(row["id"])
    return {canonical: frozenset(ids) for canonical, ids in members.items()}


@pytest.mark.parametrize("run", ["distributed", "distributed_at_scale"])
def test_spark_job_gives_the_local_run(local, run, request):
    distributed = request.getfixturevalue(run)
    db = pipeline.open_store(distributed["db_path"], create=False)
    assert _templates(db) == _templates(local["db"])
    assert len(_templates(db)) >= 5

    fields = ("url", "site", "text", "method", "template", "coverage", "boilerplate_chars", "author", "date",
              "date_modified", "sitename", "description", "language", "canonical_url", "image", "title")
    expected = {e.id: tuple(getattr(e, f) for f in fields) for e in local["extractions"]}
    assert {r["id"]: tuple(r[f] for f in fields) for r in distributed["extractions"]} == expected
    tags = {e.id: list(e.tags) if e.tags else None for e in local["extractions"]}
    assert {r["id"]: r["tags"] or None for r in distributed["extractions"]} == tags
    assert any(e.language for e in local["extractions"])

    local_groups = dict(((pid, (group, site)) for pid, group, site in
                         local["db"].execute("SELECT id, group_key, site FROM pages")))
    assert {r["id"]: (r["group_key"], r["site"]) for r in distributed["pages"]} == local_groups

    # clusters: the same members, the same canonical page, the same similarity to it (labels are numbered apart)
    assert _clusters(distributed["clusters"]) == _clusters(local["dups"])
    assert {r["id"]: r["similarity"] for r in distributed["clusters"]} == \
        {r["id"]: r["similarity"] for r in local["dups"]}
    sizes = sorted(len(ids) for ids in _clusters(local["dups"]).values())
    assert sizes[-1] == 4 and len(sizes) == 31  # the article and its 3 copies; 30 pages both in JSON and WARC
    assert len(_clusters(local["dups"])["copy/2"]) == 4  # first index batch, then the shorter URL

    summary = distributed["result"].summary
    assert dict(summary.skipped) == local["skipped"] == {"bad-record": 1, "empty": 1}
    assert summary.counts["pages"] == len(local["extractions"])


def test_rules_and_recrawl_continue_from_a_spark_database(distributed):
    runner = CliRunner()
    listed = runner.invoke(app, ["rules", "list", "--db", str(distributed["db_path"])])
    assert listed.exit_code == 0, listed.output
    assert "sqlite.org/" in listed.output
    shown = runner.invoke(app, ["rules", "show", "sqlite.org/", "--db", str(distributed["db_path"])])
    assert shown.exit_code == 0 and "Small. Fast. Reliable." in shown.output

    db = pipeline.open_store(distributed["db_path"], create=False)
    before = _templates(db)
    summary = recrawl.recrawl(db, [SAMPLES / "pages.jsonl.gz"])
    assert summary.counts["new"] == 38
    assert _templates(db) == before  # no template learned again: the cluster-built ones fit
    used = {pid: template for pid, template in db.execute("SELECT page_id, template FROM extractions")}
    spark_used = {r["id"]: r["template"] for r in distributed["extractions"] if r["id"] in used}
    # a new page takes the layout it fits best; the build also adopted two pages that fit no layout on their own
    agree = [pid for pid, template in used.items() if template == spark_used[pid]]
    assert sum(t is not None for t in used.values()) >= 28 and len(agree) >= 34
    assert {t for t in used.values() if t} <= {f"{t[2]}@v{t[3]}" for t in before}


def test_package_declares_the_spark_extra():
    text = (ROOT / "pyproject.toml").read_text()
    assert 'spark = ["pyspark>=4.0,<5"]' in text


def test_spark_submit_runs_the_cli():
    """spark-submit runs a file as a script: `spark-submit cli.py spark ...` runs the one CLI, and no module of the
    package is named like a standard-library one (its folder may come first on sys.path)."""
    done = subprocess.run([sys.executable, str(ROOT / "cli.py"), "spark", "--help"], capture_output=True,
                          text=True, timeout=60, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert "--out" in done.stdout and "spark-submit" in done.stdout
    shadowing = {p.stem for p in (ROOT / "templater").glob("*.py")} & set(sys.stdlib_module_names)
    assert not shadowing


def test_cli_starts_the_job(monkeypatch, tmp_path):
    """`templater spark` checks its inputs, starts a session on --master and reports the job's counts."""
    calls = {}

    class Session:
        def stop(self):
            calls["stopped"] = True

    def run_job(session, inputs, *, out, db_path, options):
        calls.update(inputs=inputs, out=out, db=db_path, options=options)
        result = spark_job.JobSummary(outputs={"extractions": out + "/extractions"})
        result.summary.counts["template"] = 30
        return result

    monkeypatch.setattr(spark_job, "spark_session", lambda master, partitions=None: calls.update(master=master)
                        or Session())
    monkeypatch.setattr(spark_job, "run_job", run_job)
    done = CliRunner().invoke(app, ["spark", str(SAMPLES / "pages.jsonl.gz"), "--out", str(tmp_path / "out"),
                                    "--db", str(tmp_path / "x.db"), "--master", "local[1]", "--fallback", "density"])
    assert done.exit_code == 0, done.output
    assert calls["master"] == "local[1]" and calls["stopped"] and calls["options"].method == "density"
    assert calls["inputs"] == [str(SAMPLES / "pages.jsonl.gz")]
    assert "template=30" in done.output
    missing = CliRunner().invoke(app, ["spark", str(tmp_path / "nope.jsonl"), "--out", "o", "--db", "x.db"])
    assert missing.exit_code == 1 and "no such file" in missing.output
