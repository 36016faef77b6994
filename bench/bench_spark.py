"""The Spark job in local mode against the single-process `templater run`, on the same pages, in one run.

    python bench/bench_spark.py [--pages ../data/suites/sites.jsonl.gz] [--limit N] [--modes local[1],local[2]]

Each Spark mode runs in its own process, one after the other (never two JVMs at once), so that its start-up is
measured from nothing. Printed: pages/s end to end and without the session's start-up, the ratio to the local
run, seconds per stage, and from Spark's own metrics (its REST API, read before the session stops) the executor
time and shuffle bytes per stage; the band-key shuffle per page is what the sizing model in docs/spark.md uses.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import defaultdict
from itertools import islice
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

DEFAULT_PAGES = ROOT.parent / "data" / "suites" / "sites.jsonl.gz"


def write_sample(source: Path, limit: int | None, folder: Path) -> tuple[Path, int]:
    """The first ``limit`` records of ``source`` (all when None) as one .jsonl.gz file."""
    target = folder / "pages.jsonl.gz"
    with gzip.open(source, "rt", encoding="utf-8") as f, gzip.open(target, "wt", encoding="utf-8") as out:
        lines = list(islice(f, limit))
        out.writelines(lines)
    return target, len(lines)


def process_tree_cpu(root: int) -> float:
    """CPU seconds (user + system) of process ``root`` and every live descendant, with the children they reaped:
    for the JVM, its threads and the Python workers it started. Unlike wall time, this does not grow when another
    program shares the cores."""
    stats = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            stats[int(entry)] = (int(fields[1]), sum(int(x) for x in fields[11:15]))  # ppid; utime..cstime
    tree, todo = set(), [root]
    while todo:
        pid = todo.pop()
        tree.add(pid)
        todo += [p for p, (ppid, _) in stats.items() if ppid == pid and p not in tree]
    return sum(stats[p][1] for p in tree if p in stats) / os.sysconf("SC_CLK_TCK")


def own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def run_local(pages: Path, folder: Path) -> dict:
    """ingest + build + extract with indexing: what `templater run` does, in this process."""
    from templater import pipeline

    cpu = own_cpu()
    start = time.perf_counter()
    db = pipeline.open_store(folder / "local.db")
    times = {}
    t = time.perf_counter()
    pipeline.ingest(db, [pages])
    times["ingest"] = time.perf_counter() - t
    t = time.perf_counter()
    pipeline.build(db)
    times["build"] = time.perf_counter() - t
    t = time.perf_counter()
    extracted = sum(1 for _ in pipeline.extract(db, index=True))
    times["extract+index"] = time.perf_counter() - t
    return {"seconds": time.perf_counter() - start, "pages": extracted, "stages": times, "cpu": own_cpu() - cpu}


def stage_metrics(sc) -> dict[str, dict]:
    """Per job group (a stage of the job): Spark jobs, the Spark stages they ran (not those skipped because their
    output was reused), executor seconds, shuffle bytes written and read, from the REST API."""
    base = f"{sc.uiWebUrl}/api/v1/applications/{sc.applicationId}"
    jobs = json.load(urllib.request.urlopen(f"{base}/jobs"))
    stages = {s["stageId"]: s for s in json.load(urllib.request.urlopen(f"{base}/stages?status=complete"))}
    out: dict[str, dict] = defaultdict(lambda: defaultdict(float))
    seen = set()
    for job in jobs:
        group = job.get("jobGroup") or "(none)"
        out[group]["jobs"] += 1
        for sid in job["stageIds"]:
            if sid in seen or sid not in stages:
                continue  # a stage skipped (its shuffle output reused) is not in the complete list
            seen.add(sid)
            s = stages[sid]
            out[group]["stages"] += 1
            out[group]["executor_s"] += s["executorRunTime"] / 1000
            out[group]["shuffle_write_bytes"] += s["shuffleWriteBytes"]
            out[group]["shuffle_read_bytes"] += s["shuffleReadBytes"]
            out[group]["tasks"] += s["numTasks"]
    return {k: dict(v) for k, v in out.items()}


def run_spark_worker(master: str, pages: Path, folder: Path) -> dict:
    """One Spark mode, in this (child) process: start-up, the job, Spark's metrics, the outputs' sizes."""
    from templater import spark_job

    start, cpu = time.perf_counter(), own_cpu()
    spark = spark_job.spark_session(master)
    started = time.perf_counter() - start
    jvm = spark.sparkContext._gateway.proc.pid
    try:
        started_cpu = own_cpu() + process_tree_cpu(jvm) - cpu
        result = spark_job.run_job(spark, [str(pages)], out=str(folder / "out"), db_path=folder / "spark.db")
        metrics = stage_metrics(spark.sparkContext)
        job_cpu = own_cpu() + process_tree_cpu(jvm) - cpu - started_cpu
    finally:
        spark.stop()
    sizes = {name: sum(f.stat().st_size for f in Path(path).rglob("*.parquet"))
             for name, path in result.outputs.items()}
    return {"master": master, "startup": started, "seconds": time.perf_counter() - start, "job": result.to_json(),
            "startup_cpu": started_cpu, "job_cpu": job_cpu,
            "metrics": metrics, "parquet_bytes": sizes}


def spark_in_child(master: str, pages: Path, folder: Path) -> dict:
    done = subprocess.run([sys.executable, __file__, "--worker", master, "--pages", str(pages), "--folder",
                           str(folder)], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{master} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def report(n: int, local: dict, runs: list[dict]) -> None:
    local_rate = n / local["seconds"]
    print(f"\npages: {n}")
    print(f"{'run':<12} {'wall s':>8} {'start-up s':>10} {'job s':>8} {'pages/s':>8} {'job pages/s':>11} "
          f"{'x local':>8} {'job x local':>11}")
    print(f"{'local':<12} {local['seconds']:>8.1f} {'-':>10} {local['seconds']:>8.1f} {local_rate:>8.1f} "
          f"{local_rate:>11.1f} {1.0:>8.2f} {1.0:>11.2f}")
    for r in runs:
        job = r["seconds"] - r["startup"]
        print(f"{r['master']:<12} {r['seconds']:>8.1f} {r['startup']:>10.1f} {job:>8.1f} {n / r['seconds']:>8.1f} "
              f"{n / job:>11.1f} {local['seconds'] / r['seconds']:>8.2f} {local['seconds'] / job:>11.2f}")
    print(f"\nCPU seconds (every process and thread, so not inflated by other programs on the cores): local "
          f"{local['cpu']:.1f} ({local['cpu'] / n * 1000:.1f} ms a page)" + "".join(
              f"; {r['master']} start-up {r['startup_cpu']:.1f}, job {r['job_cpu']:.1f} "
              f"({r['job_cpu'] / n * 1000:.1f} ms a page)" for r in runs))
    print("\nlocal stages (s): " + ", ".join(f"{k} {v:.1f}" for k, v in local["stages"].items()))
    for r in runs:
        print(f"\n{r['master']}: stage (wall s, executor s, shuffle write KiB, shuffle read KiB, Spark jobs, "
              "Spark stages run)")
        for stage, wall in r["job"]["seconds"].items():
            m = r["metrics"].get(stage, {})
            print(f"  {stage:<18} {wall:>7.1f} {m.get('executor_s', 0):>8.1f} "
                  f"{m.get('shuffle_write_bytes', 0) / 1024:>10.1f} {m.get('shuffle_read_bytes', 0) / 1024:>10.1f} "
                  f"{m.get('jobs', 0):>4.0f} {m.get('stages', 0):>4.0f}")
        print(f"  all: {sum(m.get('jobs', 0) for m in r['metrics'].values()):.0f} Spark jobs, "
              f"{sum(m.get('stages', 0) for m in r['metrics'].values()):.0f} stages run")
        indexed = r["job"]["counts"].get("indexed", 0)
        band = r["metrics"].get("band keys", {}).get("shuffle_write_bytes", 0)
        if indexed:
            print(f"  band-key shuffle: {band / indexed:.1f} bytes a page ({band / indexed / 16:.1f} a row of 16), "
                  f"all shuffles {sum(m.get('shuffle_write_bytes', 0) for m in r['metrics'].values()) / n:.0f} "
                  "bytes a page")
        print("  parquet bytes a page: " + ", ".join(f"{k} {v / n:.0f}" for k, v in r["parquet_bytes"].items()))
        print("  counts: " + json.dumps(r["job"]["counts"], sort_keys=True))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=Path, default=DEFAULT_PAGES)
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--modes", default="local[1],local[2]")
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--folder", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        folder = args.folder / args.worker.replace("[", "").replace("]", "")
        folder.mkdir(parents=True, exist_ok=True)
        print(json.dumps(run_spark_worker(args.worker, args.pages, folder)))
        return
    folder = Path(tempfile.mkdtemp(prefix="bench-spark-"))
    try:
        pages, n = write_sample(args.pages, args.limit, folder)
        local = run_local(pages, folder)
        runs = [spark_in_child(master, pages, folder) for master in args.modes.split(",")]
        report(n, local, runs)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
