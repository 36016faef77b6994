"""The command line's process ends without the cyclic collector's passes over every module's objects
(cli.before_teardown): what it leaves on disk and writes is what it left and wrote before, command by command."""

from __future__ import annotations

import gc
import gzip
import json
import os
import re
import subprocess
import sys
import weakref
from pathlib import Path

import pytest

import cli
from sitegen import article_html

OURS = [sys.executable, "-c", "import cli; cli.main()"]
TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00")
WITHOUT = [sys.executable, "-c", "import cli; cli.before_teardown = lambda: None; cli.main()"]  # as before
# as the console script runs it (argv[0] named templater): the cyclic collector paused while modules load
PROGRAM = [sys.executable, "-c", "import sys; sys.argv[0] = 'templater'; import cli; cli.main()"]


def _pages(path, count=8):
    with gzip.open(path, "wt", encoding="utf-8") as f:
        for seed in range(count):
            html, _ = article_html(seed)
            f.write(json.dumps({"id": f"p{seed}", "url": f"https://news.example.com/story/{seed}.html",
                                "html": html}) + "\n")
    return path


def _run(argv, cwd):
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return TIME.sub("TIME", done.stdout)  # (`rules list` shows when each template was learned)


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_every_command_leaves_the_files_and_output_it_left_before(tmp_path, jobs):
    pages = _pages(tmp_path / "pages.jsonl.gz")
    left = {}
    for name, argv in (("ours", OURS), ("program", PROGRAM), ("before", WITHOUT)):
        folder = tmp_path / name
        folder.mkdir()
        files, outputs = [], []
        for command in (["ingest", str(pages)], ["build"], ["extract", "--output", "out.jsonl"],
                        ["run", str(pages), "--output", "run.jsonl"], ["rules", "list"]):
            outputs.append(_run([*argv, *command, "--db", "t.db", "--jobs", jobs, "--quiet"]
                                if command[0] != "rules" else [*argv, *command, "--db", "t.db"], folder))
            files.append(sorted(p.name for p in folder.iterdir()))
        outputs += [(folder / "out.jsonl").read_text(), (folder / "run.jsonl").read_text()]
        left[name] = files, outputs
    assert left["ours"] == left["program"] == left["before"]
    writers = left["ours"][0][:4]  # ingest, build, extract, run: their WAL checkpointed as their connection closed
    assert all(not name.endswith(("-wal", "-shm")) for names in writers for name in names)
    assert len(left["ours"][1][-2].splitlines()) == 8


def test_before_teardown_collects_the_garbage_then_freezes_what_is_left():
    class Cycle:
        pass

    first, second = Cycle(), Cycle()
    first.other, second.other = second, first
    gone = weakref.ref(first)
    del first, second
    kept = Cycle()
    kept.itself = kept
    frozen = gc.get_freeze_count()
    try:
        cli.before_teardown()
        assert gone() is None  # collected, not frozen
        assert gc.get_freeze_count() > frozen and kept not in gc.get_objects()  # frozen: out of the collections
    finally:
        gc.unfreeze()


PAUSED_PROBE = """
import gc, sys
sys.argv[0] = {name!r}
import cli
at_import = gc.isenabled()
with cli.handled_errors():
    in_body = gc.isenabled()
print(cli.PAUSED_COLLECTOR, at_import, in_body)
"""


def test_the_collector_is_paused_while_the_program_loads_and_on_in_a_command_body():
    def probe(name):
        done = subprocess.run([sys.executable, "-c", PAUSED_PROBE.format(name=name)], capture_output=True, text=True,
                              check=True, timeout=120)
        return done.stdout.split()

    assert probe("/usr/local/bin/templater") == ["True", "False", "True"]
    assert probe("-c") == ["False", "True", "True"]  # imported by another program: left as it is
    enabled, frozen = gc.isenabled(), gc.get_freeze_count()
    with cli.handled_errors():  # (this test process: not paused, nothing frozen)
        assert gc.isenabled() == enabled and gc.get_freeze_count() == frozen


def test_one_blas_thread_unless_the_user_chose_a_count_or_trains():
    environ = {}
    assert cli.one_blas_thread(["templater", "extract", "--db", "t.db"], environ)
    assert environ == {"OPENBLAS_NUM_THREADS": "1"}
    for chosen in ({"OMP_NUM_THREADS": "4"}, {"OPENBLAS_NUM_THREADS": "2"}, {"MKL_NUM_THREADS": "3"}):
        environ = dict(chosen)
        assert not cli.one_blas_thread(["templater", "run", "pages.jsonl"], environ) and environ == chosen
    environ = {}
    assert not cli.one_blas_thread(["templater", "train", "set.jsonl"], environ) and environ == {}
    assert cli.one_blas_thread(["templater", "--version"], environ)


BLAS_PROBE = """
import os, sys
sys.argv = [{name!r}, "extract"]
import cli
import numpy
print(os.environ.get("OPENBLAS_NUM_THREADS"))
"""


def test_the_program_asks_for_one_blas_thread_before_numpy_loads():
    """Run as `templater`, cli sets OPENBLAS_NUM_THREADS=1 at its first line, before any import that loads numpy
    (OpenBLAS reads it once, as it loads); imported by another program, it leaves the environment alone."""
    environment = {k: v for k, v in os.environ.items() if k not in cli.BLAS_THREAD_VARIABLES}

    def probe(name):
        return subprocess.run([sys.executable, "-c", BLAS_PROBE.format(name=name)], capture_output=True, text=True,
                              check=True, timeout=120, env=environment).stdout.split()

    assert probe("/usr/local/bin/templater") == ["1"]
    assert probe("-c") == ["None"]


def test_the_program_logs_warnings_on_stderr_in_its_format_and_help_does_without_logging():
    """main() sets up the stderr log as a command's body starts (handled_errors), not before: --help does not
    import logging."""
    def run(script):
        return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)

    done = run("import sys\nsys.argv = ['templater', '--help']\nimport cli\ntry:\n    cli.main()\n"
               "except SystemExit:\n    pass\nprint('logging' in sys.modules, file=sys.stderr)")
    assert done.stderr == "False\n" and done.stdout.startswith("Usage: ")
    done = run("import cli\ncli._STDERR_LOG_WANTED.append(True)  # (as main() does)\nfrom templater import pipeline\n"
               "with cli.handled_errors():\n    pipeline.log.warning('a warning from %s', 'the library')\n")
    assert done.stderr == "WARNING templater.pipeline: a warning from the library\n"


def test_extract_loads_no_module_it_does_not_use(tmp_path):
    """An `extract` with the index on (the samples: sites with templates and with several layouts) loads neither
    numpy.ma (np.unique imports it on its first call: ~15 ms of a start) nor hashlib's OpenSSL library (~4 ms): the
    index's page keys take BLAKE2b from its own module; nor, once a first run has written the cache folder (the
    classifier weights' uncompressed copy), zipfile, nor the html package (its entity table) where no HTML is
    written."""
    import shutil

    pages, db = Path(cli.__file__).parent / "samples" / "pages.jsonl.gz", tmp_path / "t.db"
    environment = {**os.environ, "TEMPLATER_CACHE": str(tmp_path / "cache")}
    for argv in (["ingest", str(pages)], ["build"]):
        subprocess.run([*OURS, *argv, "--db", str(db), "--quiet", "--jobs", "1"], cwd=tmp_path, env=environment,
                       check=True, capture_output=True)
    shutil.copyfile(db, tmp_path / "first.db")
    subprocess.run([*OURS, "extract", "--db", str(tmp_path / "first.db"), "--quiet", "--jobs", "1", "--output",
                    os.devnull], cwd=tmp_path, env=environment, check=True, capture_output=True)
    script = ("import atexit, sys\nsys.argv = ['templater', 'extract', '--db', sys.argv[1], '--jobs', '1', '--quiet',"
              " '--output', sys.argv[2]]\nimport cli\n"  # (the program ends in main: the handler reports)
              "atexit.register(lambda: print(sorted({'numpy.ma', 'hashlib', '_hashlib', 'zipfile', 'html',"
              " 'html.entities'} & set(sys.modules)), file=sys.stderr))\ncli.main()\n")
    done = subprocess.run([sys.executable, "-c", script, str(db), str(tmp_path / "out.jsonl")], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300, env=environment)
    assert done.returncode == 0 and done.stderr.strip().splitlines()[-1] == "[]", done.stderr
    with gzip.open(pages, "rt") as f:  # (every page extracted: the path was run)
        assert len((tmp_path / "out.jsonl").read_text().splitlines()) == sum(1 for line in f if line.strip())
    import sqlite3

    with sqlite3.connect(db) as conn:  # (the index at its latest version)
        assert conn.execute("SELECT count(*) FROM schema_migrations WHERE component = 'lsh'").fetchone()[0] == 9
        assert {"lsh_signatures", "lsh_runs", "lsh_segments", "lsh_blocks"} <= {
            row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


NUMPY_PROBE = """
import json, sys
sys.argv[0] = {name!r}
import cli
import numpy as np
vector, table = np.arange(1, 65, dtype=np.float32) / 7, np.arange(64 * 9, dtype=np.float32).reshape(64, 9) / 3
print(json.dumps([np.ndarray.all.__doc__ is not None, np.float64.__doc__ is not None,
                  (np.log1p(vector) @ table).tobytes().hex(), np.unique([3, 1, 3, 2]).tolist(),
                  np.sort(np.array([2.5, -1.0, 7.25])).tolist(), str(np.ones((2, 3)).sum(axis=0))]))
"""


def test_the_program_imports_numpy_without_the_modules_that_only_add_its_docstrings():
    """Run as `templater`, cli stands empty modules in for numpy's two docstring modules before numpy loads
    (cli.skip_numpy_docstrings): numpy's compiled functions and scalar types have no docstrings, and what numpy
    computes (a float32 product through BLAS, as the language model's, sorts, sums) is the same bit for bit;
    imported by another program, cli leaves numpy whole."""
    def probe(name):
        done = subprocess.run([sys.executable, "-c", NUMPY_PROBE.format(name=name)], capture_output=True, text=True,
                              check=True, timeout=120)
        return json.loads(done.stdout)

    program, library = probe("/usr/local/bin/templater"), probe("-c")
    assert library[:2] == [True, True]
    assert program[2:] == library[2:]
    import importlib.util

    assert all(importlib.util.find_spec(name) is not None for name in cli.NUMPY_DOCSTRING_MODULES)  # numpy's names
    assert cli.skip_numpy_docstrings({"numpy": object()}) is False  # numpy loaded already: nothing stood in
    import numpy

    assert cli.installed_numpy_major() == numpy.__version__.split(".")[0]
    checked = numpy.__version__.split(".")[0] in cli.NUMPY_DOCSTRING_MAJORS
    assert program[:2] == ([False, False] if checked else [True, True])  # stand-ins only for a major checked


def test_numpy_is_imported_whole_under_a_major_version_not_checked():
    """A numpy of another major version (1.x names the modules otherwise; a later one may use them) meets no
    stand-ins, and a numpy that cannot be found or whose version file does not say is left alone too."""
    modules = {}
    assert cli.skip_numpy_docstrings(modules, major="3") is False and modules == {}
    assert cli.skip_numpy_docstrings(modules, major="1") is False and modules == {}
    assert cli.installed_numpy_major(find_spec=lambda name: None) is None
    assert cli.skip_numpy_docstrings(modules, major="2") is True and set(modules) == set(cli.NUMPY_DOCSTRING_MODULES)


QUICK_EXIT_PROBE = """
import atexit, os, sys, threading, time
sys.argv = ["templater", "extract"]
import cli
from store.db import open_db, open_reader
db = open_db("t.db")
db.execute("CREATE TABLE t (x)")
db.execute("INSERT INTO t VALUES (1)")
reader = open_reader("t.db")
db.execute("BEGIN")
db.execute("INSERT INTO t VALUES (2)")  # not committed: rolled back as the connection closes
kept = db.conn, reader.conn  # (alive to the end, as a connection a module holds)
atexit.register(lambda: print("handler ran", flush=True))
threading.Thread(target=lambda: (time.sleep(0.3), print("thread ended"))).start()
sys.stdout.write("buffered, no newline")
sys.stderr.write("on stderr")
real_exit = os._exit
os._exit = lambda status: (sys.__stderr__.write(f" [os._exit {status}]"), sys.__stderr__.flush(), real_exit(status))
cli.quick_exit(CODE)
print("returned")
"""


@pytest.mark.parametrize("code", ["None", "0", "3", "130", "'a message'"])
def test_quick_exit_ends_the_process_as_the_interpreter_would(tmp_path, code):
    """The threads joined, atexit handlers run, the store's connections closed (the uncommitted row rolled back,
    the WAL checkpointed: no -wal file left), stdout and stderr flushed, and the status of sys.exit(code); a code
    that is text is left to the interpreter (it prints it)."""
    done = subprocess.run([sys.executable, "-c", QUICK_EXIT_PROBE.replace("CODE", code)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    if code == "'a message'":  # (quick_exit returns: the script goes on and the interpreter ends it, as before)
        assert done.returncode == 0 and "returned" in done.stdout and "[os._exit" not in done.stderr
        return
    status = 0 if code == "None" else int(code)
    assert done.returncode == status
    assert done.stdout == "buffered, no newlinethread ended\nhandler ran\n"
    assert done.stderr == f"on stderr [os._exit {status}]"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.db"]
    import sqlite3

    conn = sqlite3.connect(tmp_path / "t.db")
    assert conn.execute("SELECT x FROM t").fetchall() == [(1,)]
    conn.close()


def test_quick_exit_leaves_a_failed_flush_to_the_interpreter(tmp_path):
    """stdout that cannot be written (a full device): quick_exit returns, and the interpreter's own end reports it
    and status, as a script that does not call quick_exit ends."""
    script = "import sys\nsys.argv = ['templater', 'extract']\nimport cli\nsys.stdout.write('lost')\n{}\n"
    ends = []
    for call in ("cli.quick_exit(0)", "pass"):
        with open("/dev/full", "w") as full:
            done = subprocess.run([sys.executable, "-c", script.format(call)], cwd=tmp_path, stdout=full,
                                  stderr=subprocess.PIPE, text=True, timeout=120)
        ends.append((done.returncode, done.stderr))
    assert ends[0] == ends[1] and ends[0][0] != 0 and "No space left on device" in ends[0][1]


def test_the_program_ends_its_store_commands_by_quick_exit(tmp_path):
    """ingest, build, extract and run end by quick_exit when run as the program (what they write is the same as
    with the interpreter's end: test_every_command_leaves_the_files_and_output_it_left_before); other commands and
    cli imported by another program end as before."""
    pages = _pages(tmp_path / "pages.jsonl.gz", count=3)
    probe = ("import os, sys\nsys.argv[0] = sys.argv.pop(1)\nimport cli\nreal = os._exit\n"
             "os._exit = lambda status: (sys.stderr.write(f'quick {status}'), sys.stderr.flush(), real(status))\n"
             "cli.main()\n")

    def ended(name, *argv):
        done = subprocess.run([sys.executable, "-c", probe, name, *argv, "--db", "t.db"], cwd=tmp_path,
                              capture_output=True, text=True, timeout=300)
        return done.returncode, done.stderr.endswith(f"quick {done.returncode}")

    assert ended("templater", "ingest", str(pages), "--quiet") == (0, True)
    assert ended("templater", "extract", "--quiet", "--output", os.devnull) == (0, True)
    assert ended("templater", "extract", "--quiet", "--no-such-option") == (2, True)
    assert ended("templater", "rules", "list") == (0, False)
    assert ended("-c", "extract", "--quiet", "--output", os.devnull) == (0, False)
    assert not any(p.name.endswith(("-wal", "-shm")) for p in tmp_path.iterdir())


def test_close_all_closes_the_connections_the_store_opened(tmp_path):
    from store import db as store_db

    writer, reader = store_db.open_db(tmp_path / "a.db"), None
    reader = store_db.open_reader(tmp_path / "a.db")
    assert isinstance(writer.conn, store_db.Connection) and {writer.conn, reader.conn} <= set(store_db._opened.values())
    store_db.close_all()
    import sqlite3

    for conn in (writer.conn, reader.conn):
        with pytest.raises(sqlite3.ProgrammingError):
            conn.execute("SELECT 1")
    writer_conn, reader_conn = weakref.ref(writer.conn), weakref.ref(reader.conn)
    del writer, reader, conn
    gc.collect()
    assert writer_conn() is None and reader_conn() is None  # (held weakly)
