"""Kill a recrawl (SIGKILL, no chance to clean up) at random points, resume it, and compare the database with an
uninterrupted run's: pages, extractions, templates and rules, near-duplicate clusters and band keys, health and
run records (timestamps aside)."""

import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
import traceback

import pytest

from store import pages as page_store
from templater import dedup, document, pipeline, recrawl

from conftest import ROOT
from test_recrawl import first_crawl, second_crawl, snapshot, write_crawl

BATCH = 4  # small batches: many commits, many places to die
KILLS_PER_CRAWL = 10
RUN_TABLES = ("runs", "run_seen")  # a second pass adds a run: left out where a kill may land after the end


@pytest.fixture
def crawls(tmp_path):
    return (write_crawl(tmp_path / "crawl1.jsonl", first_crawl()),
            write_crawl(tmp_path / "crawl2.jsonl", second_crawl(), broken=True))


class KillSwitch:
    """A recrawl checkpoint: names every kill point passed, and SIGKILLs the process at number ``kill_at`` (after
    appending that point's name to the file ``record``)."""

    def __init__(self, kill_at: int | None = None, record=None) -> None:
        self.kill_at, self.record, self.passed = kill_at, record, []

    def __call__(self, label: str) -> None:
        self.passed.append(label)
        if len(self.passed) == self.kill_at:
            if self.record is not None:
                with open(self.record, "a") as f:
                    f.write(label + "\n")
            os.kill(os.getpid(), signal.SIGKILL)


def recrawl_with(db_path, crawl, switch: KillSwitch, jobs: int = 1) -> None:
    """Recrawl with the switch at every kill point, and one more after each template the core pipeline commits
    while relearning a group (its own transactions)."""
    learn = pipeline._learn_cluster

    def learn_then_checkpoint(*args, **kwargs):
        site = learn(*args, **kwargs)
        switch("template committed")
        return site

    pipeline._learn_cluster = learn_then_checkpoint
    try:
        recrawl.recrawl(pipeline.open_store(db_path), [crawl], retire_missing=True, batch_size=BATCH,
                        checkpoint=switch, jobs=jobs)
    finally:
        pipeline._learn_cluster = learn


def run_in_child(db_path, crawl, *, kill_at: int | None, record=None, jobs: int = 1) -> int:
    """Recrawl in a forked child that kills itself at kill point ``kill_at``; the child's wait status."""
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            recrawl_with(db_path, crawl, KillSwitch(kill_at, record), jobs=jobs)
        except BaseException:
            traceback.print_exc()
            code = 1
        os._exit(code)
    return os.waitpid(pid, 0)[1]


def finished(status: int) -> bool:
    """True when the child ran to the end, False when it was killed; fails when the recrawl raised."""
    if os.WIFSIGNALED(status):
        assert os.WTERMSIG(status) == signal.SIGKILL
        return False
    assert os.WEXITSTATUS(status) == 0, "the recrawl failed: see its traceback"
    return True


def reference(tmp_path, crawls) -> tuple[dict, list[list[str]]]:
    """The uninterrupted run's snapshot, and the names of the kill points each crawl passed, in order."""
    path = tmp_path / "reference.db"
    passed = []
    for crawl in crawls:
        switch = KillSwitch()
        recrawl_with(path, crawl, switch)
        passed.append(switch.passed)
    return snapshot(pipeline.open_store(path)), passed


def copy_database(source, target) -> None:
    with sqlite3.connect(source) as src, sqlite3.connect(target) as dst:
        src.backup(dst)


def test_killed_again_and_again_at_random_points_and_resumed_equals_an_uninterrupted_run(tmp_path, crawls):
    expected, passed = reference(tmp_path, crawls)
    rng = random.Random(5)
    path, record = tmp_path / "killed.db", tmp_path / "kills.txt"
    for crawl, points in zip(crawls, passed):
        for _ in range(KILLS_PER_CRAWL):
            if finished(run_in_child(path, crawl, kill_at=rng.randint(1, len(points) // 4), record=record)):
                break  # it finished before its kill point: rerunning now would be a second pass
        else:
            assert finished(run_in_child(path, crawl, kill_at=None))
    kills = record.read_text().splitlines()
    assert len(kills) >= 10 and "write record" in kills  # ... the last inside a transaction
    got = snapshot(pipeline.open_store(path))
    assert got == expected
    assert got["templates"] and got["lsh_signatures"] and got["dup_clusters"] and got["template_events"]


def test_killed_while_relearning_re_extracting_or_retiring_and_resumed_equals_an_uninterrupted_run(tmp_path, crawls):
    """A kill at each kind of point the drift path passes (and a few random ones) of the second crawl."""
    expected, passed = reference(tmp_path, crawls)
    base = tmp_path / "after-first-crawl.db"
    assert finished(run_in_child(base, crawls[0], kill_at=None))
    points = passed[1]
    targeted = {points.index(label) + 1 for label in ("template committed", "relearned", "commit relearn",
                                                      "commit re-extraction", "commit retire")}
    for kill_at in sorted(targeted | set(random.Random(7).sample(range(1, len(points) + 1), 4))):
        path = tmp_path / f"killed-{kill_at}.db"
        copy_database(base, path)
        assert not finished(run_in_child(path, crawls[1], kill_at=kill_at))
        assert finished(run_in_child(path, crawls[1], kill_at=None))
        assert snapshot(pipeline.open_store(path)) == expected, f"killed at point {kill_at}: {points[kill_at - 1]}"


def test_the_cli_killed_with_sigkill_continues_on_rerun(tmp_path, crawls):
    expected, _ = reference(tmp_path, crawls)
    path = tmp_path / "cli.db"
    rng = random.Random(11)
    killed = 0

    def command(crawl, db=path):
        return [sys.executable, "cli.py", "recrawl", str(crawl), "--db", str(db), "--retire-missing",
                "--batch-size", str(BATCH), "--quiet"]

    # Kill at random moments within what an uninterrupted run takes on this machine (start-up included).
    started = time.perf_counter()
    subprocess.run(command(crawls[0], tmp_path / "timing.db"), cwd=ROOT, capture_output=True, check=True)
    full = time.perf_counter() - started
    for crawl in crawls:
        for _ in range(3):
            proc = subprocess.Popen(command(crawl), cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            time.sleep(rng.uniform(0.3, 0.95) * full)
            proc.send_signal(signal.SIGKILL)
            _, err = proc.communicate()
            assert proc.returncode in (0, -signal.SIGKILL), err.decode()
            if proc.returncode == 0:
                full /= 2  # the timing run was slowed by a loaded machine: the next kill comes sooner
                break
            killed += 1
        else:
            done = subprocess.run(command(crawl), cwd=ROOT, capture_output=True, text=True)
            assert done.returncode == 0, done.stderr
    assert killed >= 1
    # A kill that lands after the run finished but before the process exits makes the next invocation a second
    # pass (a new run that changes nothing else): the run records are left out of this comparison.
    assert snapshot(pipeline.open_store(path), skip_tables=RUN_TABLES) == \
        {table: rows for table, rows in expected.items() if table not in RUN_TABLES}


def test_a_copy_of_the_reference_is_equal_and_a_lost_batch_is_not(tmp_path, crawls):
    """The comparison itself: it sees one page's extraction missing."""
    expected, _ = reference(tmp_path, crawls)
    copy = tmp_path / "copy.db"
    copy_database(tmp_path / "reference.db", copy)
    db = pipeline.open_store(copy)
    assert snapshot(db) == expected
    db.execute("DELETE FROM extractions WHERE page_id = 'n13'")
    assert snapshot(db) != expected


# --- worker processes (--jobs) ---------------------------------------------------------------------------------

def built_store(tmp_path, crawls, name="built.db", jobs=1):
    """Both crawls ingested and their templates learned: what `extract` starts from."""
    path = tmp_path / name
    db = pipeline.open_store(path)
    pipeline.ingest(db, list(crawls), jobs=jobs)
    pipeline.build(db, jobs=jobs)
    return path


def test_ingest_and_build_with_worker_processes_store_what_one_process_does(tmp_path, crawls, monkeypatch):
    monkeypatch.setattr(pipeline, "WORK_CHUNK", 2)
    stores = [snapshot(pipeline.open_store(built_store(tmp_path, crawls, f"ingest{jobs}.db", jobs=jobs)))
              for jobs in (1, 2, 3)]
    assert stores[0]["pages"] and stores[0]["skips"] and len(stores[0]["templates"]) >= 2
    assert stores[1] == stores[0] and stores[2] == stores[0]


def test_extract_with_worker_processes_stores_and_yields_what_one_process_does(tmp_path, crawls, monkeypatch):
    monkeypatch.setattr(pipeline, "WORK_CHUNK", 2)  # many tasks, handed out to the workers in any order
    monkeypatch.setattr(pipeline, "BATCH_PAGES", 3)  # several index calls and transactions
    base = built_store(tmp_path, crawls)
    outputs, snapshots = {}, {}
    for jobs in (1, 2, 3):
        path = tmp_path / f"jobs{jobs}.db"
        copy_database(base, path)
        db = pipeline.open_store(path)
        outputs[jobs] = [r.to_json() for r in pipeline.extract(db, index=True, jobs=jobs)]
        snapshots[jobs] = snapshot(db)
    assert len(outputs[1]) >= 20 and snapshots[1]["lsh_signatures"] and snapshots[1]["extractions"]
    assert outputs[2] == outputs[1] and outputs[3] == outputs[1]
    assert snapshots[2] == snapshots[1] and snapshots[3] == snapshots[1]


def test_extract_trims_the_heap_every_heap_trim_pages_and_stores_what_it_stores_without(tmp_path, crawls,
                                                                                         monkeypatch):
    """extract gives glibc's free heap back (native.trim_heap) once HEAP_TRIM_PAGES pages were written since the last
    time, after an index batch; the results and every stored byte are those of a run that never trims."""
    monkeypatch.setattr(pipeline, "BATCH_PAGES", 3)
    base = built_store(tmp_path, crawls)
    trims, outputs, snapshots = [], {}, {}
    monkeypatch.setattr(pipeline.native, "trim_heap", lambda: trims.append(1) or True)
    for every in (7, 10**9):
        monkeypatch.setattr(pipeline.config, "HEAP_TRIM_PAGES", every)
        path = tmp_path / f"trim{every}.db"
        copy_database(base, path)
        db = pipeline.open_store(path)
        trims.clear()
        outputs[every] = [r.to_json() for r in pipeline.extract(db, index=True)]
        snapshots[every] = snapshot(db)
        indexed = 3 * (sum(1 for _ in outputs[every]) // 3)  # (pages written in full batches)
        assert len(trims) == (indexed // 9 if every == 7 else 0)  # (a trim after the batch that reaches 7 pages)
    assert outputs[7] == outputs[10**9] and snapshots[7] == snapshots[10**9] and len(outputs[7]) >= 20


def test_texts_signed_by_the_workers_index_as_index_texts_indexes_them(tmp_path, crawls, monkeypatch):
    """Extract signs each text where it extracts it (in the workers with --jobs) and the writer only stores the
    signatures: the index is the one ``dedup.index_texts`` makes of the same texts in the same batches."""
    monkeypatch.setattr(pipeline, "WORK_CHUNK", 2)  # chunks signed apart, batches that cut across chunks
    monkeypatch.setattr(pipeline, "BATCH_PAGES", 3)
    base = built_store(tmp_path, crawls)
    indexes = {}
    for jobs in (1, 2):
        path = tmp_path / f"signed{jobs}.db"
        copy_database(base, path)
        db = pipeline.open_store(path)
        list(pipeline.extract(db, index=True, jobs=jobs))
        indexes[jobs] = {k: v for k, v in snapshot(db).items() if k.startswith(("lsh_", "dup_"))}
    path = tmp_path / "texts.db"
    copy_database(base, path)
    db = pipeline.open_store(path)
    results = list(pipeline.extract(db))
    fetched = page_store.fetch_times(db, [r.id for r in results])
    for start in range(0, len(results), 3):
        dedup.index_texts(db, [dedup.TextItem(r.id, r.url, r.text, r.boilerplate_chars, fetched.get(r.id))
                               for r in results[start:start + 3]])
    expected = {k: v for k, v in snapshot(db).items() if k.startswith(("lsh_", "dup_"))}
    assert expected["lsh_signatures"] and expected["lsh_runs"] and expected["dup_clusters"]
    assert indexes[1] == expected and indexes[2] == expected


def test_rendered_extractions_come_without_their_document_and_as_one_process_renders_them(tmp_path, crawls,
                                                                                           monkeypatch):
    """``extract_rendered`` hands on each result rendered where it was extracted, without its document (the writer
    has the rendered text): with 1 and 2 processes the same results and texts, and each text is what rendering the
    full result (``extract``) gives."""
    monkeypatch.setattr(pipeline, "WORK_CHUNK", 2)
    base = built_store(tmp_path, crawls)

    def render(result):
        return document.to_markdown(result.document) + "|" + result.to_json()["text"]

    rendered = {}
    for jobs in (1, 2):
        path = tmp_path / f"rendered{jobs}.db"
        copy_database(base, path)
        rendered[jobs] = list(pipeline.extract_rendered(pipeline.open_store(path), render, index=True, jobs=jobs))
    path = tmp_path / "plain.db"
    copy_database(base, path)
    plain = list(pipeline.extract(pipeline.open_store(path), index=True))
    assert len(plain) >= 20 and all(r.document is not None for r in plain)
    assert all(result.document is None for result, _ in rendered[1] + rendered[2])
    assert [(r.to_json(), text) for r, text in rendered[2]] == [(r.to_json(), text) for r, text in rendered[1]]
    assert [(r.to_json(), text) for r, text in rendered[1]] == [(r.to_json(), render(r)) for r in plain]


@pytest.mark.parametrize("options", [["--with-markdown", "--links"], ["--format", "markdown"]])
def test_extract_with_jobs_writes_what_one_process_writes(tmp_path, crawls, options):
    """`templater extract --jobs 2` renders each page (its JSON line, its Markdown) in the workers: the files
    written are the bytes `--jobs 1` writes."""
    base = built_store(tmp_path, crawls)
    written = {}
    for jobs in (1, 2):
        path, out = tmp_path / f"cli{jobs}.db", tmp_path / f"out{jobs}"
        copy_database(base, path)
        subprocess.run([sys.executable, "cli.py", "extract", "--db", str(path), "--output", str(out), *options,
                        "--jobs", str(jobs), "--quiet"], cwd=ROOT, capture_output=True, check=True)
        written[jobs] = {f.name: f.read_bytes() for f in sorted(out.iterdir())} if out.is_dir() else \
            {"jsonl": out.read_bytes()}
    assert len(written[1]) >= (20 if "markdown" in options else 1) and all(written[1].values())
    assert written[2] == written[1]


def test_run_with_jobs_killed_with_sigkill_continues_on_rerun(tmp_path, crawls):
    """`templater run --jobs 2` killed at random moments and rerun ends as one uninterrupted `--jobs 1` run: the
    same output file and the same store; no worker outlives its parent."""

    def command(db, jobs):
        return [sys.executable, "cli.py", "run", *map(str, crawls), "--db", str(db), "--output", f"{db}.jsonl",
                "--jobs", str(jobs), "--quiet"]

    reference_db = tmp_path / "reference.db"
    started = time.perf_counter()
    subprocess.run(command(reference_db, 1), cwd=ROOT, capture_output=True, check=True)
    full = time.perf_counter() - started
    path, rng, killed = tmp_path / "killed.db", random.Random(3), 0
    for _ in range(4):
        proc = subprocess.Popen(command(path, 2), cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        time.sleep(rng.uniform(0.4, 0.95) * full)
        proc.send_signal(signal.SIGKILL)
        _, err = proc.communicate()
        assert proc.returncode in (0, -signal.SIGKILL), err.decode()
        killed += proc.returncode != 0
        time.sleep(0.2)
        orphans = subprocess.run(["pgrep", "-f", str(path)], capture_output=True, text=True).stdout.split()
        assert not orphans, f"workers left behind: {orphans}"
    done = subprocess.run(command(path, 2), cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert killed >= 1
    assert (tmp_path / "killed.db.jsonl").read_bytes() == (tmp_path / "reference.db.jsonl").read_bytes()
    assert snapshot(pipeline.open_store(path)) == snapshot(pipeline.open_store(reference_db))


def test_recrawl_with_worker_processes_stores_what_one_process_does(tmp_path, crawls, monkeypatch):
    """Both crawls (new pages, changed ones, a redesign relearned, broken records, retired pages) recrawled with 1,
    2 and 3 processes: the same store."""
    monkeypatch.setattr(pipeline, "WORK_CHUNK", 2)  # several tasks a batch, handed out to the workers in any order
    snapshots = {}
    for jobs in (1, 2, 3):
        path = tmp_path / f"recrawl{jobs}.db"
        for crawl in crawls:
            recrawl_with(path, crawl, KillSwitch(), jobs=jobs)
        snapshots[jobs] = snapshot(pipeline.open_store(path))
    assert snapshots[1]["template_events"] and snapshots[1]["lsh_signatures"] and snapshots[1]["skips"]
    assert snapshots[2] == snapshots[1] and snapshots[3] == snapshots[1]


def test_recrawl_with_a_record_twice_in_a_batch_and_worker_processes_stores_what_one_process_does(tmp_path):
    """A record repeated within a batch (changed the second time) is classified against the state its first copy
    left: a worker saw the state before the batch, so the writer classifies it again itself."""
    records = first_crawl()
    twice = [records[0], {**records[0], "html": records[0]["html"].replace("</body>", "<p>Changed again.</p></body>")},
             *records[1:]]
    crawl = write_crawl(tmp_path / "twice.jsonl", twice)
    snapshots = {}
    for jobs in (1, 2):
        path = tmp_path / f"twice{jobs}.db"
        recrawl.recrawl(pipeline.open_store(path), [crawl], batch_size=BATCH, jobs=jobs)
        snapshots[jobs] = snapshot(pipeline.open_store(path))
    assert snapshots[1]["pages"]
    assert snapshots[2] == snapshots[1]


def test_recrawl_with_jobs_killed_at_random_points_and_resumed_equals_an_uninterrupted_run(tmp_path, crawls):
    """`recrawl` with two worker processes killed (SIGKILL) at random points of the writer and resumed, also with
    two: the store of an uninterrupted one-process run."""
    expected, passed = reference(tmp_path, crawls)
    rng = random.Random(11)
    path = tmp_path / "killed-jobs.db"
    for crawl, points in zip(crawls, passed):
        for _ in range(KILLS_PER_CRAWL // 2):
            if finished(run_in_child(path, crawl, kill_at=rng.randint(1, len(points) // 4), jobs=2)):
                break
        else:
            assert finished(run_in_child(path, crawl, kill_at=None, jobs=2))
    assert snapshot(pipeline.open_store(path)) == expected


def test_build_learns_the_layouts_of_one_group_on_worker_processes_as_one_process_does(tmp_path):
    """One URL group holding two layouts (the news site before and after its redesign, under one prefix): each
    layout cluster is learned as a task of its own, and the store is the one a single process makes."""
    from test_recrawl import NEWS, news_new, news_old

    records = [{"id": f"n{i}", "url": NEWS.format(i), "html": (news_old if i % 2 else news_new)(i)} for i in range(16)]
    crawl = write_crawl(tmp_path / "mixed.jsonl", records)
    snapshots = [snapshot(pipeline.open_store(built_store(tmp_path, [crawl], f"mixed{jobs}.db", jobs=jobs)))
                 for jobs in (1, 2)]
    assert len({row[2] for row in snapshots[0]["templates"]}) == 1 and len(snapshots[0]["templates"]) >= 2
    assert snapshots[1] == snapshots[0]


def test_recrawl_with_worker_processes_signs_the_texts_in_the_workers(tmp_path, crawls, monkeypatch):
    """With --jobs the workers sign the extracted texts for the near-duplicate index (as extract does): the writer
    signs only the pages it re-extracts itself after learning templates, and the index is a single process's."""
    monkeypatch.setattr(pipeline, "WORK_CHUNK", 2)
    signed_by_writer = {}
    sign_each = dedup.sign_each

    def counted(texts, settings):  # forked workers count in their own copy: this one counts the writer's
        signed_by_writer[jobs] = signed_by_writer.get(jobs, 0) + len(texts)
        return sign_each(texts, settings)

    monkeypatch.setattr(dedup, "sign_each", counted)
    indexes, summaries = {}, {}
    for jobs in (1, 2):
        path = tmp_path / f"signs{jobs}.db"
        summaries[jobs] = recrawl.recrawl(pipeline.open_store(path), [crawls[0]], batch_size=BATCH, jobs=jobs)
        indexes[jobs] = {k: v for k, v in snapshot(pipeline.open_store(path)).items() if k.startswith(("lsh_", "dup_"))}
    assert indexes[1]["lsh_signatures"] and indexes[2] == indexes[1]
    re_extracted = summaries[2].counts["re-extracted"]
    assert signed_by_writer[1] >= 10 + re_extracted and signed_by_writer.get(2, 0) == re_extracted
