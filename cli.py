"""templater's command line: typer commands only. The only module that prints, exits or draws progress."""

from __future__ import annotations

import gc
import os
import sys

BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")  # what BLAS libraries read


def one_blas_thread(argv: list[str], environ) -> bool:
    """Ask numpy's BLAS for one thread (OPENBLAS_NUM_THREADS=1 in ``environ``, before numpy loads) unless the user
    chose a thread count or the command is `train`: templater's work is one page at a time, with a few small
    products a page (the language model's), and it runs processes, not threads, on more cores (--jobs), whose
    workers inherit the setting. Left alone, OpenBLAS starts a thread per core at numpy's import and spins them at
    each product: about 0.11 s of CPU of a 3-page extract's 0.48 on an idle 2-core machine. `train`'s large
    products keep the library's default. Whether it was set."""
    command = next((arg for arg in argv[1:] if not arg.startswith("-")), None)
    if command == "train" or any(name in environ for name in BLAS_THREAD_VARIABLES):
        return False
    environ["OPENBLAS_NUM_THREADS"] = "1"
    return True


# Run as the `templater` program (its console script, not cli imported by a test or another program): one BLAS
# thread, and no cyclic garbage collection while the modules load (see imports_done)
AS_PROGRAM = os.path.basename((getattr(sys, "argv", None) or [""])[0]) == "templater"
if AS_PROGRAM:
    one_blas_thread(sys.argv, os.environ)
PAUSED_COLLECTOR = AS_PROGRAM and gc.isenabled()
if PAUSED_COLLECTOR:
    gc.disable()

# numpy's modules that only attach docstrings (and the text signatures inside them) to its compiled functions, types
# and scalar types: ~0.05 G instructions, 8% of a 3-page extract, at every import of numpy. The program prints no
# numpy help, so it imports numpy without them (``skip_numpy_docstrings``); a test or another program importing cli
# gets numpy whole.
NUMPY_DOCSTRING_MODULES = ("numpy._core._add_newdocs", "numpy._core._add_newdocs_scalars")
# numpy's major versions whose ``_core`` imports those modules for their side effect alone (checked by a test on the
# installed one); under any other (1.x names them otherwise, a later one may use them) numpy is imported whole
NUMPY_DOCSTRING_MAJORS = ("2",)


def installed_numpy_major(find_spec=None) -> str | None:
    """The major version of the numpy that an import would load, read from its ``version.py`` without importing it;
    None when there is none or the file does not say."""
    if find_spec is None:
        from importlib.util import find_spec
    try:
        spec = find_spec("numpy")
        with open(os.path.join(os.path.dirname(spec.origin), "version.py"), encoding="utf-8") as handle:
            text = handle.read(8192)
    except (ImportError, OSError, ValueError, TypeError, AttributeError):
        return None
    for line in text.splitlines():
        name, equals, value = line.partition("=")
        if equals and name.strip() == "version":
            return value.strip().strip("\"'").split(".")[0] or None
    return None


def skip_numpy_docstrings(modules, major=None) -> bool:
    """Before numpy is imported, stand empty modules in ``modules`` (``sys.modules``) for the two modules of numpy
    whose only work is adding docstrings to its compiled objects (numpy's own documentation build mocks the second
    one out the same way): numpy's ``_core`` package imports them for that side effect alone and uses no name of
    theirs. Nothing computed changes; ``help()`` on numpy's compiled functions would show no text. Whether the stand-ins
    were put in: not when numpy is loaded already, nor when the numpy installed (``major``, else read from its files)
    is not of a major version in ``NUMPY_DOCSTRING_MAJORS``."""
    if any(name.split(".")[0] == "numpy" for name in modules):
        return False
    if (major if major is not None else installed_numpy_major()) not in NUMPY_DOCSTRING_MAJORS:
        return False
    import types

    for name in NUMPY_DOCSTRING_MODULES:
        modules[name] = types.ModuleType(name, "numpy's docstrings, not loaded by the templater program")
    return True


NUMPY_MAJOR = installed_numpy_major() if AS_PROGRAM else None
if AS_PROGRAM:
    skip_numpy_docstrings(sys.modules, NUMPY_MAJOR)

from templater import codecache  # noqa: E402

if AS_PROGRAM:  # modules the start imports but a command seldom uses (numpy.linalg, subprocess...): run on first use
    from templater import deferred  # (before the cache, whose dataclasses import inspect: tokenize, linecache)

    deferred.install(NUMPY_MAJOR)
codecache.install()  # first: the patterns and dataclass methods of the modules imported below come compiled
if AS_PROGRAM:
    deferred.first()  # (ahead of the cache's module map, which would answer the deferred names itself)

import contextlib  # noqa: E402 -- (and every import below) after the cache is installed
import copy
import importlib.util
import json
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Optional

import typer

from templater import DISTRIBUTION, __version__

try:  # the signal module's own functions, without the enums its import makes (~0.6% of a 3-page extract); the
    import _signal as signals  # handlers and numbers are the same (the module wraps these)
except ImportError:  # (an interpreter without it)
    import signal as signals
from templater.errors import InputError, TemplaterError


def lazy_module(name: str):
    """The module ``name``, run on first attribute access: `templater --help` and a small job do not pay for the
    imports (numpy, lxml, sqlite-utils, the signature methods) of commands they do not run."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec(name)
    spec.loader = importlib.util.LazyLoader(spec.loader)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    parent, _, child = name.rpartition(".")
    setattr(sys.modules[parent], child, module)
    return module


_INT_TEXT = re.compile(r"-?(?:0|[1-9][0-9]{0,17})")  # plain decimal integers that fit in 64 bits
_FLOAT_TEXT = re.compile(r"-?(?:0|[1-9][0-9]{0,14})(?:\.[0-9]{1,15})?")  # plain decimals, no exponent, no nan/inf


class _PlainValues:
    """Typer (0.29) converts every option's value with a pydantic TypeAdapter built at parse time: importing
    pydantic and building the adapters is ~80 ms of a short command's CPU. This stands in for typer's converter on
    the plain values our commands take (str, int, float, Path, lists of them) and gives the value pydantic gives;
    for anything else - a value outside an option's range, text that is not a plain decimal, an enum, a parser -
    and on any error it hands the value to typer's own converter, so messages and results stay typer's
    (tests/test_cli_values.py compares both on every option)."""

    def __init__(self, descriptor, build):
        self.descriptor, self._build, self._typer = descriptor, build, None

    @staticmethod
    def handles(descriptor) -> bool:
        info = descriptor.parameter_info
        if descriptor.file_annotation is not None or info.parser is not None or getattr(info, "click_type", None):
            return False
        kind = descriptor.annotation
        if getattr(kind, "__origin__", None) is list and len(getattr(kind, "__args__", ())) == 1:
            kind = kind.__args__[0]
        if kind in (int, float):
            return not info.clamp
        return kind in (str, bool) or kind is Path

    def typer_param(self):
        if self._typer is None:
            self._typer = self._build(self.descriptor)
        return self._typer

    def coerce(self, value, param, ctx):
        multiple = param.multiple or param.nargs == -1
        if value is None:  # typer's rule for a missing value, without building its converter
            return () if multiple else None
        if multiple and isinstance(value, str):
            return self.typer_param().coerce(value, param=param, ctx=ctx)  # typer's "must be an iterable" error
        try:
            return self.plain(value, param, ctx)
        except Exception:  # noqa: BLE001 -- whatever it is, typer's converter decides and words the error
            return self.typer_param().coerce(value, param=param, ctx=ctx)

    def plain(self, value, param, ctx):
        kind, info = self.descriptor.annotation, self.descriptor.parameter_info
        if getattr(kind, "__origin__", None) is list:
            if not isinstance(value, (list, tuple)):
                value = [value]
            return [self.leaf(kind.__args__[0], info, item, param, ctx) for item in value]
        return self.leaf(kind, info, value, param, ctx)

    @staticmethod
    def leaf(kind, info, value, param, ctx):
        if kind is str or kind is bool:  # (typer's flags come as bools already; --help's is None)
            if type(value) is not kind:
                raise TypeError
            return value
        if kind is Path:
            from typer._param_types import coerce_cli_path
            path_type = info.path_type or Path
            if not (isinstance(value, path_type) or (type(value) is str and value and "\x00" not in value)):
                raise TypeError
            return coerce_cli_path(value if isinstance(value, path_type) else path_type(value), info,
                                   path_type=path_type, param=param, ctx=ctx)
        if type(value) is str and (_INT_TEXT if kind is int else _FLOAT_TEXT).fullmatch(value):
            value = kind(value)
        if type(value) is not kind or (info.min is not None and value < info.min) or \
                (info.max is not None and value > info.max):
            raise ValueError
        return value


def _plain_values() -> None:
    """Install _PlainValues in typer's parameters; leaves typer as it is when its internals are not the ones known."""
    try:
        from typer import core as typer_core
        build = typer_core.build_runtime_param
        typer_core._TyperParameter.get_runtime_param  # noqa: B018 -- the method the converter is built in
    except (ImportError, AttributeError):
        return
    if getattr(build, "plain_values", False):
        return

    def build_runtime_param(descriptor):
        return _PlainValues(descriptor, build) if _PlainValues.handles(descriptor) else build(descriptor)

    build_runtime_param.plain_values = True
    typer_core.build_runtime_param = build_runtime_param


_plain_values()


class _BuiltOnUse:
    """A command's ``params`` or ``callback``, built with the other on its first read (see ``_deferred_options``)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(self, command, owner=None):
        if command is None:
            return self
        state = command.__dict__
        if self.name not in state:
            params_of, callback_of, command_info, short = state.pop("_options_of")
            params, context_param_name = params_of(command_info.callback)
            state.setdefault("params", params)
            state.setdefault("callback", callback_of(callback=command_info.callback, params=params,
                                                     context_param_name=context_param_name,
                                                     pretty_exceptions_short=short))
        return state[self.name]

    def __set__(self, command, value) -> None:
        command.__dict__[self.name] = value


def _parameter_names(function) -> tuple[str, ...] | None:
    """The names of a function's parameters, positional then keyword-only (None for what has no code)."""
    code = getattr(function, "__code__", None)
    return None if code is None else code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]


_OPTIONS_ON_USE: dict[type, type] = {}  # a command class -> its subclass with the options built on use


def _deferred_options() -> None:
    """typer makes every command of a group with its options (the function's signature and type hints, a click
    parameter each: ~0.05 G instructions for our 24 commands) when it makes the group, where `templater --help` shows
    a line of each command's help only. Here a command is made as typer makes it, with its ``params`` and
    ``callback`` built by typer's own functions when first read (parsing its arguments, its help, running it), so
    what any of them gives is typer's. Leaves typer as it is when its internals are not the ones known."""
    try:
        from typer import main as typer_main
        build, params_of, callback_of = (typer_main.get_command_from_info, typer_main._get_params_name_from_function,
                                         typer_main.get_callback)
    except (ImportError, AttributeError):
        return
    if getattr(build, "options_on_use", False):
        return
    if any(_parameter_names(function) != names for function, names in zip((build, params_of, callback_of), (
            ("command_info", "pretty_exceptions_short", "rich_markup_mode"), ("callback",),
            ("callback", "params", "context_param_name", "pretty_exceptions_short")))):
        return  # another typer's functions: called as this code calls them, they might fail

    def no_params(callback):
        return [], None

    def no_callback(**kwargs):
        return None

    def get_command_from_info(command_info, *, pretty_exceptions_short, rich_markup_mode):
        typer_main._get_params_name_from_function, typer_main.get_callback = no_params, no_callback
        try:
            command = build(command_info, pretty_exceptions_short=pretty_exceptions_short,
                            rich_markup_mode=rich_markup_mode)
        finally:
            typer_main._get_params_name_from_function, typer_main.get_callback = params_of, callback_of
        kind = type(command)
        if kind not in _OPTIONS_ON_USE:
            _OPTIONS_ON_USE[kind] = type(kind.__name__, (kind,), {"__module__": kind.__module__,
                                                                  "params": _BuiltOnUse("params"),
                                                                  "callback": _BuiltOnUse("callback")})
        command.__class__ = _OPTIONS_ON_USE[kind]
        del command.__dict__["params"], command.__dict__["callback"]
        command.__dict__["_options_of"] = (params_of, callback_of, command_info, pretty_exceptions_short)
        return command

    get_command_from_info.options_on_use, get_command_from_info.typer_own = True, build
    typer_main.get_command_from_info = get_command_from_info


_deferred_options()

config, dedup, evaluation_run, pipeline, signature_run, sources, training, rule_inspect, recrawls, fallback, \
    extract_module = (lazy_module(f"templater.{name}") for name in (
        "config", "dedup", "evaluation_run", "pipeline", "signature_run", "sources", "training", "rule_inspect",
        "recrawl", "fallback", "extract"))
document = lazy_module("templater.document")
native = lazy_module("templater.native")

app = typer.Typer(add_completion=False, no_args_is_help=True, rich_markup_mode=None,
                  help="Learn each site's template from its own pages, extract main content, find near-duplicates.")


class _Stderr:
    """rich's Console on stderr, made on first use: a command that prints nothing there (a --quiet job) does not
    import rich's console and markup (~20 ms of start-up)."""

    _console = None

    def rich_console(self):
        if _Stderr._console is None:
            from rich.console import Console
            _Stderr._console = Console(stderr=True)
        return _Stderr._console

    def __getattr__(self, name):
        return getattr(self.rich_console(), name)


err = _Stderr()


def escape(text: str) -> str:
    """rich's markup escaping (imported when an error is printed)."""
    from rich.markup import escape as rich_escape
    return rich_escape(text)

DB_HELP = "SQLite database file (created when missing by the commands that write; those that only read need it)."
DbOption = typer.Option(Path("templater.db"), "--db", help=DB_HELP)
QuietOption = typer.Option(False, "--quiet", "-q", help="No progress bars or summary on stderr.")
JobsOption = typer.Option(None, "--jobs", "-j", min=1,
                          help="Worker processes that parse pages (default: the machine's cores); one "
                               "process writes the database, and the output is the same for any number.")
InputsArgument = typer.Argument(..., help="JSON Lines (.jsonl, .jsonl.gz), WARC (.warc, .warc.gz), .html files or "
                                          "folders of them.")
LogOption = typer.Option(None, "--log", help="Append a log to this file (INFO and above: skipped records, what was "
                                             "learned); stderr keeps warnings only.")
SiteNameOption = typer.Option(None, "--site", help="Site name of the pages of folders and .html files (default: each "
                                                   "folder's name); their ids are SITE/path/in/folder.html.")
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def safe(value) -> str:
    """Text for a terminal: control characters (escape sequences, carriage returns, bidi overrides) as \\xNN."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m[0]):02x}" if ord(m[0]) < 0x100 else f"\\u{ord(m[0]):04x}",
                        str(value))


class Interrupted(BaseException):
    """SIGINT (Ctrl-C): a BaseException, so that click does not take it for its own abort."""


INTERRUPTED_LINE = "interrupted: what was committed is kept; run the same command again to continue"


def _interrupted(signum, frame) -> None:
    signals.signal(signals.SIGINT, signals.SIG_DFL)  # a second Ctrl-C ends the process at once
    watchdog = threading.Timer(config.INTERRUPT_GRACE_S, _exit_interrupted)  # an unwinding that hangs (a worker pool
    watchdog.daemon = True  # stopped mid-task) still ends: SQLite keeps only what was committed either way
    watchdog.start()
    raise Interrupted


def _exit_interrupted() -> None:
    err.print(INTERRUPTED_LINE, highlight=False, soft_wrap=True, markup=False)
    os._exit(130)


def _show_version(value: bool) -> None:
    if value:
        typer.echo(f"templater {__version__} ({DISTRIBUTION}); block walk: {native.STATUS}")
        raise typer.Exit()


@app.callback()
def main_options(version: bool = typer.Option(False, "--version", callback=_show_version, is_eager=True,
                                              help="Print the version and whether the compiled walk is active.")
                 ) -> None:
    """Learn each site's template from its own pages, extract main content, find near-duplicates."""


_slow_path_warned: list[str] = []  # the slow path's warning is given once a process


def imports_done() -> None:
    """Run as the program, the command line keeps the cyclic garbage collector off from its first line (a start
    makes modules, functions and tables, not cyclic garbage, and each collection traversed more of them as they
    grew: ~4% of a 3-page extract's instructions); here, as a command's body starts (``handled_errors``: typer, the
    command line and what its option callbacks loaded are in), every object alive is frozen out of the collector's
    way (``gc.freeze``: kept, never traversed again) and the collector is turned on for what the command makes: a
    store it opens is collected by ``before_teardown`` as before. Nothing changes where the collector was not paused
    (cli imported by a test or another program)."""
    if PAUSED_COLLECTOR:
        gc.freeze()
        gc.enable()


@contextlib.contextmanager
def progress_bar(description: str, quiet: bool) -> Iterator[pipeline.Progress | None]:
    """A rich progress bar on stderr; a callback for the library, or None when quiet. Long work on the slow path
    (the compiled walk not built, and not asked for with TEMPLATER_PURE_PYTHON) starts with a warning."""
    warning = native.slow_path_warning()
    if warning is not None and not _slow_path_warned:
        _slow_path_warned.append(warning)
        err.print(f"warning: {warning}", highlight=False, soft_wrap=True, markup=False)
    if quiet:
        yield None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    columns = [SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
               TimeElapsedColumn()]
    with Progress(*columns, console=err.rich_console(), transient=True) as bar:
        task = bar.add_task(description, total=None)

        def update(done: int, total: int | None) -> None:
            bar.update(task, completed=done, total=total)

        yield update


@contextlib.contextmanager
def handled_errors() -> Iterator[None]:
    """Turn templater's errors into a message on stderr and exit status 1, never a traceback. (Entered first by
    every command's body: the collector and the log are set up here, see ``imports_done`` and ``stderr_log``.)"""
    import sqlite3

    imports_done()
    stderr_log()
    try:
        yield
    except TemplaterError as e:
        err.print(f"[red]error:[/red] {escape(safe(e))}", highlight=False, soft_wrap=True)
        raise typer.Exit(1) from None
    except BrokenPipeError:  # the reader of our output went away (`| head`): stop quietly
        sys.stdout = open(os.devnull, "w")
        raise typer.Exit(1) from None
    except OSError as e:
        err.print(f"[red]error:[/red] {escape(safe(e.strerror or e))}: {escape(safe(e.filename or ''))}",
                  highlight=False, soft_wrap=True)
        raise typer.Exit(1) from None
    except sqlite3.Error as e:  # the store failed under the command (a full disk, a file made read-only meanwhile)
        err.print(f"[red]error:[/red] {escape(pipeline.describe_error(e, None))}", highlight=False, soft_wrap=True)
        raise typer.Exit(1) from None


def fail_if_all_skipped(summary: pipeline.Summary, db: Path) -> None:
    """Exit 1 with the top reasons when records were read and every one was skipped."""
    if not summary.all_skipped():
        return
    total = sum(summary.skipped.values())
    err.print(f"error: all {total} records of the inputs were skipped; no page was stored. Top reasons:",
              highlight=False, soft_wrap=True, markup=False)
    for reason, count in summary.skipped.most_common(config.TOP_SKIP_REASONS):
        err.print(f"  {reason}={count}, e.g. {safe(summary.examples.get(reason, ''))}", highlight=False,
                  soft_wrap=True, markup=False)
    err.print(f"all of them: templater skips --db {db}", highlight=False, soft_wrap=True, markup=False)
    raise typer.Exit(1)


def check_output(path: Optional[Path]) -> None:
    """An --output file that cannot be written is a bad argument, found before any work (its missing folders are
    made here, as they always were, so that one that cannot be made is found first too)."""
    if path is None or str(path) == "-":
        return
    if path.is_dir():
        raise InputError(f"--output {path} is a folder: give a file path")
    folder = path.parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise InputError(f"--output {path}: cannot make its folder {folder} ({e.strerror or e}); give another "
                         "path") from None
    if not os.access(folder, os.W_OK | os.X_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise InputError(f"--output {path}: cannot write there; check the permissions or give another path")


def load_weights(path: Optional[Path]):
    """Classifier weights from `templater train`'s file, or None for the shipped ones."""
    return None if path is None else fallback.load_weights(path, source=str(path))


def report(title: str, summary: pipeline.Summary, quiet: bool) -> None:
    if quiet:
        return
    parts = [f"{k}={v}" for k, v in sorted(summary.counts.items())]
    skipped = sum(summary.skipped.values())
    if skipped:
        parts.append(f"skipped={skipped} (" + ", ".join(f"{k}={v}" for k, v in sorted(summary.skipped.items())) + ")")
    err.print(f"{title}: " + (", ".join(parts) or "nothing to do"), highlight=False, soft_wrap=True)


@contextlib.contextmanager
def output_stream(path: Optional[Path]) -> Iterator:
    if path is None or str(path) == "-":
        yield sys.stdout
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        yield f


@contextlib.contextmanager
def log_to_file(path: Optional[Path]) -> Iterator[None]:
    """With --log FILE: INFO and above of every templater logger appended to FILE; stderr keeps warnings only."""
    if path is None:
        yield
        return
    import logging

    path.parent.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    quieted = [h for h in root.handlers if h.level == logging.NOTSET]
    for h in quieted:
        h.setLevel(logging.WARNING)
    previous = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    try:
        yield
    finally:
        root.removeHandler(handler)
        root.setLevel(previous)
        for h in quieted:
            h.setLevel(logging.NOTSET)
        handler.close()


def write_jsonl(stream, record: dict) -> None:
    stream.write(document.json_line(record) + "\n")  # json.dumps(record, ensure_ascii=False), escaped in C


def cores(jobs: Optional[int]) -> int:
    """--jobs as given, else the machine's cores."""
    return jobs or os.cpu_count() or 1


FORMATS = {"jsonl": "jsonl", "markdown": "md", "text": "txt", "html": "html"}  # format -> file name extension
PAGE_SEPARATOR = "\f\n"  # between pages of a non-JSONL format written to standard output


class Rendering:
    """How extractions are written: --format, --with-markdown, --links and --output, checked before any work."""

    def __init__(self, output: Optional[Path], format: str, *, with_markdown: bool, links: bool) -> None:
        if with_markdown and format != "jsonl":
            raise typer.BadParameter(f"--with-markdown adds a field to JSON Lines; --format {format} has no fields",
                                     param_hint="--with-markdown")
        self.output = None if output is None or str(output) == "-" else output
        self.format, self.with_markdown, self.links = format, with_markdown, links
        if format == "jsonl":
            check_output(self.output)
        if self.output is not None and format == "jsonl" and self.output.is_dir():
            raise InputError(f"{self.output} is a folder; give a file for JSON Lines (folders are for --format "
                             "markdown, text or html)")
        if self.output is not None and format != "jsonl" and self.output.exists() and not self.output.is_dir():
            raise InputError(f"{self.output} is a file; --format {format} writes one file a page into a folder")

    @contextlib.contextmanager
    def open(self) -> Iterator:
        """A function that writes one extraction: ``write(result, text)``, ``text`` its ``self.text`` made
        elsewhere (a worker process) or None (made now)."""
        if self.format == "jsonl":
            with output_stream(self.output) as stream:
                yield lambda result, text=None: stream.write(self.text(result) if text is None else text)
            return
        if self.output is None:
            first = [True]

            def to_stdout(result, text=None) -> None:
                text = self.text(result) if text is None else text
                sys.stdout.write(("" if first[0] else PAGE_SEPARATOR) + text)
                first[0] = False

            yield to_stdout
            return
        self.output.mkdir(parents=True, exist_ok=True)
        extension = FORMATS[self.format]
        yield lambda result, text=None: (self.output / document.file_name(result.id, extension)).write_text(
            self.text(result) if text is None else text, encoding="utf-8")

    def text(self, result) -> str:
        """What is written of one extraction: its JSON line, or its page (Markdown, text, HTML)."""
        if self.format == "jsonl":
            return document.json_line(self.record(result)) + "\n"
        return self.render(result)

    def record(self, result) -> dict:
        record = result.to_json()
        if self.with_markdown:
            record["markdown"] = document.to_markdown(result.document, links=self.links)
        return record

    def render(self, result) -> str:
        if self.format == "markdown":
            return document.to_markdown(result.document, links=self.links)
        if self.format == "html":
            return document.to_html(result.document, links=self.links)
        return document.render_text(result.document)


def check_format(value: str) -> str:
    if value not in FORMATS:
        raise typer.BadParameter(f"{value!r}: choose one of {', '.join(FORMATS)}")
    return value


FormatOption = typer.Option("jsonl", "--format", "-f", callback=check_format,
                            help="jsonl (one JSON record a page), markdown, text or html (one file a page in the "
                                 "--output folder, or every page on standard output separated by form feeds).")
WithMarkdownOption = typer.Option(False, "--with-markdown", help="JSON Lines: add each page as Markdown in a "
                                                                 "\"markdown\" field.")
LinksOption = typer.Option(False, "--links", help="Markdown and HTML: keep the links, with their URLs.")
PagesOutputOption = typer.Option(None, "--output", "-o", help="JSON Lines file for --format jsonl, else a folder "
                                                              "(one file a page, named after its id); default: "
                                                              "standard output.")


def extract_all(store, rendering: Rendering, *, fallback: str, index: bool, quiet: bool, ids=None, weights=None,
                q: float | None = None, drop_duplicates: bool = False, jobs: Optional[int] = 1,
                marked: bool = False) -> None:
    """Extract the given stored pages (default: every one; ``marked``: those ingest marked on the connection) and
    write them as --format says (the shared body of `extract` and `run`). With ``drop_duplicates`` the extractions
    wait in a temporary file until the index has every page, then only pages that are not a cluster's non-canonical
    member are written."""
    if drop_duplicates and not index:
        raise InputError("--drop-duplicates needs the near-duplicate index: leave out --no-index")
    summary = pipeline.Summary()
    with rendering.open() as write, contextlib.ExitStack() as stack:
        held = None
        if drop_duplicates:  # (pickle and tempfile are imported for this alone: a plain run does without them)
            import pickle
            import tempfile
            held = stack.enter_context(tempfile.TemporaryFile())
        with progress_bar("extract", quiet) as progress:  # each result rendered where it is extracted (workers)
            render = rendering.text if held is None else None  # --drop-duplicates: written later, from ``held``
            for result, text in pipeline.extract_rendered(
                    store, render, method=fallback, index=index, links=rendering.links, progress=progress, ids=ids,
                    weights=weights, q=config.FDR_Q if q is None else q, skipped=summary.skipped, jobs=cores(jobs),
                    marked=marked):
                if held is None:
                    write(result, text)
                else:
                    pickle.dump(result, held)
                summary.counts[result.method] += 1
        if held is not None:
            held.seek(0)
            summary.counts["duplicate"] = write_without(held, write, dedup.duplicate_ids(store))
    report("extract", summary, quiet)


def write_without(held, write, dropped: set[str]) -> int:
    """Write the extractions pickled in ``held``, leaving out those whose id is in ``dropped``; returns how many."""
    import pickle

    left_out = 0
    while True:
        try:
            result = pickle.load(held)
        except EOFError:
            return left_out
        if result.id in dropped:
            left_out += 1
            continue
        write(result)


def read_labelled(path: Path) -> list[dict]:
    """JSON Lines records of a training file; a line that is not JSON is a clear error."""
    import gzip

    path = sources.check_input(path)
    opener = gzip.open if path.name.endswith(".gz") else open
    records = []
    with opener(path, "rt", encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if line.strip():
                try:
                    records.append(json.loads(line))
                except json.JSONDecodeError as e:
                    raise InputError(f"{path}:{number}: not JSON ({e}); give JSON Lines with url, html and gold")
    return records


@app.command()
def train(inputs: list[Path] = typer.Argument(..., help="JSON Lines (.jsonl, .jsonl.gz) with url, html and gold."),
          output: Path = typer.Option(..., "--output", "-o", help="Weights file to write (.npz)."),
          seed: int = typer.Option(config.TRAIN_SEED, "--seed", help="Random seed: the same seed, the same weights."),
          epochs: int = typer.Option(config.EPOCHS, "--epochs", min=1, help="Training epochs of each network."),
          jobs: int = typer.Option(1, "--jobs", "-j", min=1,
                                   help="Processes that fit networks side by side (the same weights for any number)."),
          expert: bool = typer.Option(True, "--expert/--no-expert",
                                      help="Where the pages mix news (ids news/...) with other sources, also fit "
                                           "a news expert whose scores are averaged with the others'."),
          log: Optional[Path] = LogOption, quiet: bool = QuietOption) -> None:
    """Train the single-page line classifiers on labelled pages (gold text gives the labels).

    The shipped weights were made from the genre-mixed training set (news, documentation, forum, product and
    encyclopaedia pages whose licences allow it) that bench/build_training_set.py writes to SET with
    `--docs-pages 10 --generated 8`, by `templater train SET/train.jsonl.gz --output ann_weights.npz --seed 7`
    (docs/single-page.md).

    Then `templater extract --weights my-weights.npz` (or run) extracts with them.

    Example: templater train labelled.jsonl.gz --output my-weights.npz
    """
    with handled_errors(), log_to_file(log):
        check_output(output)
        records = [record for path in inputs for record in read_labelled(path)]
        with progress_bar("train", quiet):
            fit = training.train_mixture if expert else training.train_ann
            weights = fit(training.iter_labelled(records), seed=seed, epochs=epochs, jobs=jobs)
        output.parent.mkdir(parents=True, exist_ok=True)
        training.save_weights(weights, output)
        if not quiet:
            err.print(f"train: {len(records)} pages -> {output}", highlight=False)


@app.command()
def ingest(inputs: list[Path] = InputsArgument, db: Path = DbOption, site: Optional[str] = SiteNameOption,
           log: Optional[Path] = LogOption, quiet: bool = QuietOption, jobs: Optional[int] = JobsOption) -> None:
    """Read pages into the database (bad records are skipped and counted by reason: `templater skips`).

    Exits 1, with the top reasons, when every record was skipped.

    Example: templater ingest crawl.warc.gz pages.jsonl.gz --db crawl.db
    """
    with handled_errors(), log_to_file(log):
        sources.check_inputs(inputs)
        store = pipeline.open_store(db)
        with progress_bar("ingest", quiet) as progress:
            summary = pipeline.ingest(store, inputs, site=site, progress=progress, jobs=cores(jobs))
        report("ingest", summary, quiet)
        fail_if_all_skipped(summary, db)


@app.command()
def build(db: Path = DbOption, log: Optional[Path] = LogOption, quiet: bool = QuietOption,
          jobs: Optional[int] = JobsOption) -> None:
    """Group stored pages by URL prefix and layout and learn each group's template.

    Example: templater build --db crawl.db
    """
    with handled_errors(), log_to_file(log):
        store = pipeline.open_store(db, create=False)
        with progress_bar("build", quiet) as progress:
            summary = pipeline.build(store, progress=progress, jobs=cores(jobs))
        report("build", summary, quiet)


IndexOption = typer.Option(True, "--index/--no-index", help="Add the extracted texts to the near-duplicate index.")
DropDuplicatesOption = typer.Option(False, "--drop-duplicates",
                                    help="Write one page a near-duplicate cluster (its canonical page): a "
                                         "deduplicated corpus. Needs the index.")
def check_fallback(value: str) -> str:
    choices = (*fallback.METHODS, extract_module.NO_CLASSIFIER)
    if value not in choices:
        raise typer.BadParameter(f"{value!r}: choose one of {', '.join(choices)}")
    return value


FallbackOption = typer.Option("auto", "--fallback", callback=check_fallback,
                              help="Single-page method: density, ann, fdr or auto (the best); none for the template's "
                                   "rules alone.")
OutputOption = typer.Option(None, "--output", "-o", help="JSON Lines output file (default: standard output).")
WeightsOption = typer.Option(None, "--weights", help="Single-page classifier weights written by `templater train` "
                                                     "(default: the shipped ones).")
def check_fdr_q(value: float) -> float:
    if not 0 < value <= 1:
        raise typer.BadParameter(f"{value}: the false-discovery rate lies in (0, 1], e.g. 0.05")
    return value


FdrQOption = typer.Option(config.FDR_Q, "--fdr-q", callback=check_fdr_q,
                          help="False-discovery rate of the fdr method (0 < q <= 1).")


@app.command()
def extract(db: Path = DbOption, output: Optional[Path] = PagesOutputOption, fallback: str = FallbackOption,
            index: bool = IndexOption, drop_duplicates: bool = DropDuplicatesOption,
            site: Optional[str] = typer.Option(None, "--site", help="Only this site's pages (a name `templater rules "
                                                                    "list` shows, or its URL group)."),
            since: Optional[str] = typer.Option(None, "--since", help="Only pages seen at or after this ISO 8601 "
                                                                      "date or time (UTC unless it names a zone)."),
            format: str = FormatOption, with_markdown: bool = WithMarkdownOption, links: bool = LinksOption,
            weights: Optional[Path] = WeightsOption, fdr_q: float = FdrQOption, log: Optional[Path] = LogOption,
            quiet: bool = QuietOption, jobs: Optional[int] = JobsOption) -> None:
    """Extract the main content of every stored page (or a site's, or those seen since a time) as JSON Lines (or
    Markdown, text or HTML with --format).

    Each line: {"id", "url", "site", "text", "method", "template", "coverage", "title", "author", "date", ...};
    `title` is the headline, `text` the body without it. With --drop-duplicates, pages that are near-duplicates of
    another page (not their cluster's canonical page) are left out.

    Example: templater extract --db crawl.db --output extracted.jsonl
    Example: templater extract --db crawl.db --format markdown --links --output pages/
    """
    with handled_errors(), log_to_file(log):
        rendering = Rendering(output, format, with_markdown=with_markdown, links=links)
        classifier = load_weights(weights)
        store = pipeline.open_store(db, create=False)
        ids = None if site is None and since is None else pipeline.select_pages(store, site=site, since=since)
        extract_all(store, rendering, fallback=fallback, index=index, quiet=quiet, ids=ids, weights=classifier,
                    q=fdr_q, drop_duplicates=drop_duplicates, jobs=jobs)


@app.command()
def run(inputs: list[Path] = InputsArgument, db: Path = DbOption, output: Optional[Path] = PagesOutputOption,
        fallback: str = FallbackOption, index: bool = IndexOption, drop_duplicates: bool = DropDuplicatesOption,
        format: str = FormatOption, with_markdown: bool = WithMarkdownOption, links: bool = LinksOption,
        site: Optional[str] = SiteNameOption, weights: Optional[Path] = WeightsOption, fdr_q: float = FdrQOption,
        log: Optional[Path] = LogOption, quiet: bool = QuietOption, jobs: Optional[int] = JobsOption) -> None:
    """Ingest, learn templates and extract, in one go; the output holds the pages of these inputs.

    Templates are learned from every stored page; exits 1, with the top reasons, when every record was skipped.

    Example: templater run samples/pages.jsonl.gz --db samples.db --output extracted.jsonl
    """
    with handled_errors(), log_to_file(log):
        if drop_duplicates and not index:
            raise InputError("--drop-duplicates needs the near-duplicate index: leave out --no-index")
        rendering = Rendering(output, format, with_markdown=with_markdown, links=links)
        classifier = load_weights(weights)
        sources.check_inputs(inputs)
        store = pipeline.open_store(db)
        with progress_bar("ingest", quiet) as progress:
            ingested = pipeline.ingest(store, inputs, site=site, progress=progress, jobs=cores(jobs), mark=True)
        report("ingest", ingested, quiet)
        fail_if_all_skipped(ingested, db)
        with progress_bar("build", quiet) as progress:
            report("build", pipeline.build(store, progress=progress, jobs=cores(jobs)), quiet)
        extract_all(store, rendering, fallback=fallback, index=index, quiet=quiet, marked=True,
                    weights=classifier, q=fdr_q, drop_duplicates=drop_duplicates, jobs=jobs)


@app.command()
def recrawl(inputs: list[Path] = InputsArgument, db: Path = DbOption,
            retire_missing: bool = typer.Option(False, "--retire-missing",
                                                help="Retire the stored pages this crawl did not fetch (they leave "
                                                     "the near-duplicate index; a page that comes back is revived)."),
            log: Optional[Path] = typer.Option(None, "--log", help="Append a log to this file: each committed batch "
                                                                  "with counts per site, drift, relearning."),
            fallback: str = FallbackOption,
            batch_size: int = typer.Option(config.RECRAWL_BATCH_PAGES, "--batch-size",
                                           help="Records per committed batch: a killed run loses at most one."),
            output: Optional[Path] = typer.Option(None, "--output", "-o",
                                                  help="Write the extractions of this crawl's pages (new, changed "
                                                       "and unchanged), each once: a JSON Lines file for --format "
                                                       "jsonl, else a folder (one file a page); - for standard "
                                                       "output."),
            format: str = FormatOption, with_markdown: bool = WithMarkdownOption, links: bool = LinksOption,
            site: Optional[str] = SiteNameOption, quiet: bool = QuietOption,
            jobs: Optional[int] = JobsOption) -> None:
    """Bring the database up to date with a crawl that came back; rerun the same command after a kill to continue.

    An unchanged page (same content hash) only has its last-seen time updated; a changed or new page is extracted
    with the stored templates and its near-duplicate index entry replaced. When a share of a site's recent pages
    no longer fit its template (a redesign), a new template version is learned from them, the old one is kept
    and marked stale (see `templater rules history`), and its pages are extracted again. Work is committed in
    batches with the run's progress, so a rerun after a kill (even kill -9) continues where it stopped.

    Exits 1, with the top reasons, when every record was skipped. With --output, the crawl's pages are written
    as `extract` writes them, each once, after the run (a rerun after a kill writes them all).

    Example: templater recrawl crawl-2024-06.warc.gz --db crawl.db --retire-missing --log recrawl.log
    """
    with handled_errors(), log_to_file(log):
        rendering = Rendering(output, format, with_markdown=with_markdown, links=links) if output else None
        sources.check_inputs(inputs)
        store = pipeline.open_store(db)
        with progress_bar("recrawl", quiet) as progress:
            summary = recrawls.recrawl(store, inputs, retire_missing=retire_missing, method=fallback,
                                       batch_size=batch_size, progress=progress, site=site, jobs=cores(jobs))
        report("recrawl", summary, quiet)
        fail_if_all_skipped(summary, db)
        if rendering is not None:
            with rendering.open() as write:
                for result in recrawls.crawl_extractions(store, summary.pages, method=fallback, links=links,
                                                         stored=format == "jsonl" and not with_markdown,
                                                         jobs=cores(jobs)):
                    write(result)


@app.command()
def spark(inputs: list[str] = typer.Argument(..., help="JSON Lines (.jsonl, .jsonl.gz) or WARC (.warc, .warc.gz) files "
                                                      "or folders: local paths, or any URI Spark reads (hdfs://, "
                                                      "s3a://)."),
          out: str = typer.Option(..., "--out", help="Folder (any Spark path) for the Parquet outputs: pages, "
                                                     "extractions, clusters, skips."),
          db: Path = DbOption,
          master: Optional[str] = typer.Option(None, "--master", help="Spark master; local[N] runs on N cores here "
                                                                    "(default: spark-submit's, else local[2])."),
          partitions: Optional[int] = typer.Option(None, "--partitions",
                                                   help="Partitions per stage (default: 2 per core)."),
          fallback: str = FallbackOption, log: Optional[Path] = LogOption, quiet: bool = QuietOption) -> None:
    """Run the whole pipeline on Apache Spark (pip install 'site-templater[spark]'): the same templates, extractions and
    near-duplicate clusters as `templater run`, written as Parquet under --out, the templates into --db.

    Example: templater spark samples/pages.jsonl.gz --out spark-out --db spark.db --master local[2]
    On a cluster: spark-submit cli.py spark INPUT... --out DIR --db DB (client deploy mode).
    """
    from templater import spark_job

    with handled_errors(), log_to_file(log):
        inputs = spark_job.check_inputs(inputs)
        session = spark_job.spark_session(master, partitions=partitions)
        try:
            result = spark_job.run_job(session, inputs, out=out, db_path=db,
                                       options=spark_job.JobOptions(method=fallback, partitions=partitions))
        finally:
            session.stop()
    report("spark", result.summary, quiet)
    if not quiet:
        seconds = ", ".join(f"{k}={v:.1f}s" for k, v in result.seconds.items())
        err.print(f"spark: {seconds}; wrote {', '.join(result.outputs.values())}", highlight=False, soft_wrap=True)


DupsMethodOption = typer.Option(
    "minhash", "--method", "-m",
    help="minhash (the near-duplicate index, default) or a signature method indexed by `templater "
         "index-signatures`: md5, tf, tfidf, long-sent, heavy-sent, lex-rand, descr-words.")


@app.command()
def dups(db: Path = DbOption, output: Optional[Path] = OutputOption, method: str = DupsMethodOption,
         canonical_only: bool = typer.Option(False, "--canonical-only",
                                             help="One line a cluster: its canonical page."),
         log: Optional[Path] = LogOption) -> None:
    """Pages in near-duplicate clusters, as JSON Lines: {"id", "url", "cluster", "canonical", "similarity"}.

    With --method minhash (the default) clusters come from the near-duplicate index and similarity is to the
    canonical page (by the index's measure: containment by default). With a signature method, pages that share a
    signature form a cluster (connected components) and similarity is 1.0 for a page sharing a signature with the
    canonical page (0.0 when linked to it only through other pages, which only lex-rand can do). The canonical
    page is the earliest on the web (fetched_at when known; minhash only), else the first seen, then the one with
    less boilerplate, then the shorter URL.

    Example: templater dups --db crawl.db --method tfidf --output dups.jsonl
    """
    with handled_errors(), log_to_file(log):
        check_output(output)
        store = pipeline.open_store(db, readonly=True)
        rows = signature_run.iter_signature_duplicates(store, method=method, canonical_only=canonical_only)
        with output_stream(output) as stream:
            for row in rows:
                write_jsonl(stream, row)


IndexMethodOption = typer.Option(..., "--method", "-m",
                                 help="md5, tf, tfidf, long-sent, heavy-sent, lex-rand, descr-words or minhash.")
ParamOption = typer.Option(None, "--param", "-p",
                           help="A method parameter KEY=VALUE (repeatable; values read as JSON), e.g. terms=8, "
                                "stem=true, coverage=[0.3,0.7]. Default: the stored params, else the method's.")


@app.command("index-signatures")
def index_signatures(db: Path = DbOption, method: str = IndexMethodOption, param: Optional[list[str]] = ParamOption,
                     replace: bool = typer.Option(False, "--replace",
                                                  help="Drop the method's index first, so new params can replace "
                                                       "the stored ones."),
                     as_json: bool = typer.Option(False, "--json", help="Print the summary as one JSON object."),
                     log: Optional[Path] = LogOption, quiet: bool = QuietOption) -> None:
    """Fit a duplicate-signature method on the stored extractions and index every page's signatures.

    The fitted model (params, IDF, dictionaries, descriptive words) is stored beside the signatures; rerunning
    refits it on the current extractions and re-signs every page. Params are fixed by the first run: other params
    are refused unless --replace. Then `templater dups --method METHOD` lists the clusters. minhash fills the
    near-duplicate index from the stored extractions instead (params: its shingle/LSH settings).

    Example: templater index-signatures --db crawl.db --method tfidf --param terms=8
    """
    with handled_errors(), log_to_file(log):
        store = pipeline.open_store(db, create=False)
        params = signature_run.parse_params(param or [])
        with progress_bar(f"index {method}", quiet) as progress:
            result = signature_run.index_signatures(store, method=method, params=params or None, replace=replace,
                                                    progress=progress)
    if as_json:
        write_jsonl(sys.stdout, result.to_json())
    elif not quiet:
        err.print("index-signatures: " + ", ".join(f"{k}={v}" for k, v in result.to_json().items()),
                  highlight=False, soft_wrap=True)


@app.command()
def similar(target: str = typer.Argument(..., metavar="URL|FILE",
                                         help="A stored page's id or URL, or an .html or text file."),
            db: Path = DbOption, url: Optional[str] = typer.Option(None, "--url", help="The file's real URL."),
            limit: int = typer.Option(10, "--limit", min=1, help="At most this many pages."),
            fallback: str = FallbackOption) -> None:
    """A page's near-duplicates, as JSON Lines {"id", "url", "similarity"}.

    An .html file is extracted first (with its site's template when --url or its content matches one); any other
    file is read as UTF-8 text.

    Example: templater similar --db crawl.db https://example.org/news/a.html
    """
    with handled_errors():
        store = pipeline.open_store(db, readonly=True)
        path = Path(target)
        if path.is_file():
            text = (pipeline.extract_file(store, path, url=url, method=fallback).text
                    if sources.input_format(path) == "html" else sources.read_text_file(path))
            rows = dedup.find_similar(store, text, limit=limit)
        else:
            rows = dedup.find_similar_page(store, target, limit=limit)
        for row in rows:
            write_jsonl(sys.stdout, row)


@app.command("dups-settings")
def dups_settings(db: Path = DbOption, as_json: bool = typer.Option(False, "--json", help="One JSON object.")) -> None:
    """The near-duplicate index's settings, with its S-curve: the probability that a pair of Jaccard J becomes a
    candidate, 1 - (1 - J^rows)^bands, and its threshold (1/b)^(1/r).

    Example: templater dups-settings --db crawl.db
    """
    with handled_errors():
        described = dedup.describe_settings(pipeline.open_store(db, readonly=True))
    if as_json:
        write_jsonl(sys.stdout, described)
        return
    curve = described.pop("s_curve")
    for key, value in described.items():
        typer.echo(f"{safe(key)}: {safe(value)}")
    typer.echo("s_curve: P(candidate) = 1 - (1 - J^rows)^bands")
    for jaccard, probability in curve.items():
        typer.echo(f"  J {jaccard}  {probability:6.4f}  {'#' * round(40 * probability)}")



@app.command()
def skips(db: Path = DbOption,
          reason: Optional[str] = typer.Option(None, "--reason", help="Only this reason (e.g. bad-url, http-status)."),
          examples: int = typer.Option(3, "--examples", min=0, help="Examples shown per reason."),
          as_json: bool = typer.Option(False, "--json", help='JSON Lines: {"reason", "count", "examples"} a reason.')
          ) -> None:
    """The records ingest, run and recrawl skipped: how many of each reason, with examples (source, URL, why).

    Each skipped record is kept once (by its source, file#record, and reason), whichever run skipped it.

    Example: templater skips --db crawl.db --reason bad-url --examples 10
    """
    with handled_errors():
        counts, shown = pipeline.skip_report(pipeline.open_store(db, readonly=True), reason=reason, examples=examples)
    if as_json:
        for row in shown:
            write_jsonl(sys.stdout, row)
        return
    typer.echo(f"{sum(count for _, count in counts)} records skipped" if counts else "no record was skipped")
    for row in shown:
        typer.echo(f"{safe(row['reason']):<14} {row['count']:>8}")
        for example in row["examples"]:
            where = safe(example["source"]) + (f"  {safe(example['url'])}" if example["url"] else "")
            typer.echo(f"    {where}: {safe(example['detail'])}")


rules_app = typer.Typer(add_completion=False, no_args_is_help=True, rich_markup_mode=None,
                        help="See, test, compare, export and pin each site's template rules.")
app.add_typer(rules_app, name="rules")

JsonOption = typer.Option(False, "--json", help="Print JSON instead of text.")
SiteArgument = typer.Argument(..., help="Site group, as `templater rules list` shows it (e.g. sqlite.org/).")
UrlOption = typer.Option(None, "--url", help="The page's real URL, to match a local file to its site's template.")


def _print_json(data) -> None:
    typer.echo(json.dumps(data, ensure_ascii=False, indent=2))


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


@rules_app.command("list")
def list_templates(db: Path = DbOption, as_json: bool = JsonOption) -> None:
    """Every site group with its template version, pages, rules, median coverage, when learned, and staleness.

    Example: templater rules list --db samples.db
    """
    with handled_errors():
        summaries = rule_inspect.list_templates(pipeline.open_store(db, readonly=True))
    if as_json:
        _print_json([s.to_json() for s in summaries])
        return
    typer.echo(f"{'SITE':<34} {'VERSION':>7} {'PAGES':>5} {'RULES':>5} {'PINNED':>6} {'COVERAGE':>8}  "
               f"{'LEARNED AT':<25} STALE")
    for s in summaries:
        typer.echo(f"{safe(s.site):<34} {s.version:>7} {s.pages:>5} {s.rules:>5} {s.pinned or '-':>6} "
                   f"{_percent(s.median_coverage):>8}  {safe(s.learned_at):<25} {'yes' if s.stale else 'no'}")


@rules_app.command("show")
def show_rules(site: str = SiteArgument, db: Path = DbOption,
               version: Optional[int] = typer.Option(None, "--version", help="Template version (default: current)."),
               as_json: bool = JsonOption) -> None:
    """A site's rules: action, support, XPath and a sample of the text each matched.

    Example: templater rules show --db samples.db sqlite.org/
    """
    with handled_errors():
        shown = rule_inspect.show_rules(pipeline.open_store(db, readonly=True), site, version=version)
    if as_json:
        _print_json(shown.to_json())
        return
    typer.echo(f"{safe(shown.site)}  version {shown.version}{' (current)' if shown.current else ''}  learned "
               f"{safe(shown.learned_at)}  pages {shown.pages}")
    typer.echo("settings  " + (" ".join(f"{k}={v}" for k, v in sorted(shown.settings.items())) or "(none saved)"))
    if shown.pinned:
        typer.echo(f"pinned rules in force instead of the learned ones ({len(shown.pinned)}):")
        _print_rules([rule for rule, _ in shown.pinned], notes=[note for _, note in shown.pinned])
        typer.echo("learned rules (not applied while pinned rules exist):")
    _print_rules(shown.learned)


def _print_rules(rules, *, notes=None) -> None:
    typer.echo(f"{'#':>4}  {'ACTION':<10} {'MATCH':<6} {'SUPPORT':>7}  {'XPATH':<44} SAMPLE")
    for i, rule in enumerate(rules):
        note = f"  [{safe(notes[i])}]" if notes and notes[i] else ""
        typer.echo(f"{i:>4}  {rule.action:<10} {rule_inspect.matched_by(rule):<6} "
                   f"{_percent(rule.support):>7}  {safe(rule.xpath):<44} "
                   f"{safe(rule_inspect.shorten(rule.sample, 50))}{note}")


@rules_app.command("explain")
def explain_page(target: str = typer.Argument(..., help="A stored page's URL, or a local .html file."),
                 db: Path = DbOption, url: Optional[str] = UrlOption, fallback: str = FallbackOption,
                 as_json: bool = JsonOption) -> None:
    """Each block of a page, kept or dropped, and the rule (or fallback decision) that decided it.

    Example: templater rules explain --db samples.db https://sqlite.org/lts.html
    """
    with handled_errors():
        explained = rule_inspect.explain_page(pipeline.open_store(db, readonly=True), target, url=url,
                                              method=fallback)
    _print_explanation(explained, as_json)


@rules_app.command("test")
def test_rules(site: str = SiteArgument, file: Path = typer.Argument(..., help="A local .html page."),
               db: Path = DbOption, url: Optional[str] = UrlOption, fallback: str = FallbackOption,
               as_json: bool = JsonOption) -> None:
    """Apply a site's template (with its pinned rules) to a local page; nothing is stored.

    Example: templater rules test --db samples.db sqlite.org/ saved/lts.html
    """
    with handled_errors():
        explained = rule_inspect.test_rules(pipeline.open_store(db, readonly=True), site, file, url=url,
                                            method=fallback)
    _print_explanation(explained, as_json)


def _print_explanation(page, as_json: bool) -> None:
    if as_json:
        _print_json(page.to_json())
        return
    template = f"{page.template}{' (pinned rules)' if page.pinned else ''}" if page.template else "none (fallback)"
    typer.echo(f"page      {safe(page.url)}\ntemplate  {safe(template)}  coverage {_percent(page.coverage)}  "
               f"method {page.method}\nkept      {page.kept_chars} of {page.total_chars} characters, "
               f"{sum(b.kept for b in page.blocks)} of {len(page.blocks)} blocks")
    typer.echo(f"{'#':>4}  {'':<4}  {'DECIDED BY':<36}  {'TEXT':<50}  XPATH  (WHY)")
    for b in page.blocks:
        typer.echo(f"{b.index:>4}  {'kept' if b.kept else 'DROP'}  {safe(b.label):<36}  "
                   f"{safe(rule_inspect.shorten(b.text, 50)):<50}  {safe(b.xpath)}"
                   + (f"  ({safe(b.why)})" if b.why else ""))


@rules_app.command("diff")
def diff_rules(site: str = SiteArgument, old: int = typer.Argument(..., help="Older version."),
               new: int = typer.Argument(..., help="Newer version."), db: Path = DbOption,
               as_json: bool = JsonOption) -> None:
    """Rules added, removed and changed between two versions of a site's template.

    Example: templater rules diff --db samples.db sqlite.org/ 1 2
    """
    with handled_errors():
        diff = rule_inspect.diff_rules(pipeline.open_store(db, readonly=True), site, old, new)
    if as_json:
        _print_json(diff.to_json())
        return
    typer.echo(f"{safe(diff.site)}  v{diff.old} -> v{diff.new}: {len(diff.added)} added, {len(diff.removed)} removed, "
               f"{len(diff.changed)} changed, {diff.unchanged} unchanged")
    for sign, rules in (("+", diff.added), ("-", diff.removed)):
        for position, rule in rules:
            typer.echo(f"{sign} #{position:<4} {rule.action:<10} {_percent(rule.support):>5}  {safe(rule.xpath)}  "
                       f"{safe(repr(rule_inspect.shorten(rule.sample, 40)))}")
    for change in diff.changed:
        what = "; ".join(f"{f} {getattr(change.before, f)} -> {getattr(change.after, f)}" for f in change.fields)
        typer.echo(f"~ #{change.position_before}->#{change.position_after} {change.after.action:<10} {safe(what)}")


@rules_app.command("export")
def export_rules(site: str = SiteArgument, db: Path = DbOption,
                 version: Optional[int] = typer.Option(None, "--version",
                                                       help="Export this learned version (default: the rules in "
                                                            "force: pinned, else current)."),
                 output: Optional[Path] = typer.Option(None, "--output", "-o", help="JSON file (default: stdout).")
                 ) -> None:
    """A site's rules as an editable JSON file, to pin with `templater rules import`.

    Example: templater rules export --db samples.db sqlite.org/ --output sqlite-rules.json
    """
    with handled_errors():
        check_output(output)
        document = rule_inspect.export_rules(pipeline.open_store(db, readonly=True), site, version=version)
        with output_stream(output) as stream:
            stream.write(json.dumps(document, ensure_ascii=False, indent=2) + "\n")


@rules_app.command("import")
def import_rules(file: Path = typer.Argument(..., help="A rules file written by `templater rules export`."),
                 db: Path = DbOption,
                 site: Optional[str] = typer.Option(None, "--site", help="Pin for this site (default: the file's)."),
                 as_json: bool = JsonOption) -> None:
    """Pin a site's rules from a rules file: they replace its learned rules until `rules remove-pinned`.

    Every XPath is checked first; an invalid one is refused with its column, and nothing is stored.

    Example: templater rules import --db samples.db sqlite-rules.json
    """
    with handled_errors():
        store = pipeline.open_store(db, create=False)
        shown = rule_inspect.import_rules(store, rule_inspect.read_rules_file(file), site=site, source=str(file))
    if as_json:
        _print_json(shown.to_json())
        return
    err.print(f"pinned {len(shown.pinned)} rules for {safe(shown.site)}; they replace its learned rules until "
              f"`templater rules remove-pinned --db {safe(db)} {safe(shown.site)}`", highlight=False, soft_wrap=True,
              markup=False)


@rules_app.command("remove-pinned")
def remove_pinned(site: str = SiteArgument, db: Path = DbOption) -> None:
    """Remove a site's pinned rules: its learned rules apply again.

    Example: templater rules remove-pinned --db samples.db sqlite.org/
    """
    with handled_errors():
        removed = rule_inspect.remove_pinned(pipeline.open_store(db, create=False), site)
    err.print(f"removed {removed} pinned rules of {safe(site)}; its learned rules apply again", highlight=False,
              markup=False)


@app.command("report")
def report_html(site: str = SiteArgument, db: Path = DbOption,
                page: Optional[str] = typer.Option(None, "--page", help="URL of the stored page to show "
                                                                         "(default: the site's first page)."),
                output: Path = typer.Option(..., "--output", "-o", help="HTML file to write."),
                fallback: str = FallbackOption, log: Optional[Path] = LogOption, quiet: bool = QuietOption) -> None:
    """One self-contained HTML page showing a site's template at work: a page's blocks shaded by the rule that
    dropped them, the rules with their support, and the template's coverage across the site's pages.

    Example: templater report --db samples.db sqlite.org/ --output sqlite-report.html
    """
    with handled_errors(), log_to_file(log):
        check_output(output)
        store = pipeline.open_store(db, readonly=True)
        with progress_bar("report", quiet) as progress:
            document = rule_inspect.build_report(store, site, page_url=page, method=fallback, progress=progress)
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(document, encoding="utf-8")
    if not quiet:
        err.print(f"report: wrote {output}", highlight=False, soft_wrap=True, markup=False)


eval_app = typer.Typer(no_args_is_help=True, rich_markup_mode=None,
                       help="Measure duplicate search and extraction against gold data.")
app.add_typer(eval_app, name="eval")

TruthOption = typer.Option(..., "--truth", help='Gold clustering: JSON Lines {"id", "cluster"}, one line per page '
                                                "that has duplicates; ids are the pages' ids in the database.")
MethodOption = typer.Option(None, "--method", "-m", help="Only this method (repeatable): md5, tf, tfidf, long-sent, "
                                                         "heavy-sent, lex-rand, descr-words, minhash-lsh.")
EvalJsonOption = typer.Option(False, "--json", help="JSON Lines on stdout instead of a table.")


@eval_app.command("dedup")
def eval_dedup(db: Path = DbOption, truth: Path = TruthOption, method: Optional[list[str]] = MethodOption,
               as_json: bool = EvalJsonOption, log: Optional[Path] = LogOption, quiet: bool = QuietOption) -> None:
    """Precision, recall and F1 of each duplicate method's pairs against a gold clustering, with its time.

    Reads the extracted texts of the database (run `templater extract` first). Each method is fitted on those
    texts, signs them and pairs the pages that share a signature; minhash-lsh is the near-duplicate index's
    MinHash + LSH. A pair is right when both pages are in one gold cluster.

    Example: templater eval dedup --db crawl.db --truth clusters.jsonl --json
    """
    with handled_errors(), log_to_file(log):
        store = pipeline.open_store(db, readonly=True)
        with progress_bar("eval dedup", quiet) as progress:
            report = evaluation_run.evaluate_dedup(store, truth, methods=method or None, progress=progress)
        if as_json:
            for run in report.runs:
                write_jsonl(sys.stdout, run.to_json())
        else:
            print_dedup_table(report.runs)
        if not quiet:
            err.print(f"eval dedup: pages={report.pages} truth_pages={report.truth_pages} "
                      f"unknown_truth_ids={report.unknown} gold_pairs={report.runs[0].score.gold_pairs}",
                      highlight=False)


def print_dedup_table(runs) -> None:
    typer.echo(f"{'method':<12} {'precision':>9} {'recall':>7} {'f1':>6} {'seconds':>8} {'pairs':>8} {'judged':>7}")
    for run in runs:
        s = run.score
        typer.echo(f"{safe(run.method):<12} {s.precision:9.3f} {s.recall:7.3f} {s.f1:6.3f} {run.seconds:8.2f} "
                   f"{s.predicted_pairs:8d} {run.judged:7d}")


@eval_app.command("extract")
def eval_extract(gold: Path = typer.Argument(..., help='Gold corpus: JSON Lines (.gz too) with "id" and "gold".'),
                 predicted: Path = typer.Argument(..., help='Predictions: JSON Lines with "id" and "text".'),
                 as_json: bool = typer.Option(False, "--json", help="Print the figures as one JSON object.")) -> None:
    """Bag-of-tokens precision, recall and F1 per page, macro-averaged (the dev corpus's measure; a
    prediction's "title" is scored with its "text", except where the gold is the body alone).

    A gold page with no prediction counts as an empty extraction; pages without gold text are not scored.

    Example: templater eval extract gold.jsonl.gz extracted.jsonl
    """
    with handled_errors():
        score = evaluation_run.evaluate_extract(gold, predicted)
        if as_json:
            typer.echo(json.dumps({"pages": score.pages, "missing": score.missing, "precision": score.precision,
                                   "recall": score.recall, "f1": score.f1, "f1_median": score.f1_median}))
            return
        if score.missing:
            typer.echo(f"{score.missing} gold pages had no prediction (scored as empty)")
        typer.echo(f"pages={score.pages} precision={score.precision:.4f} recall={score.recall:.4f} f1={score.f1:.4f}")


@rules_app.command("history")
def rules_history(site: str = SiteArgument, db: Path = DbOption, as_json: bool = JsonOption) -> None:
    """Every version of a site's template: when it was learned and why, and when and why it went stale.

    Example: templater rules history --db crawl.db nytimes.com/
    """
    with handled_errors():
        versions = recrawls.template_history(pipeline.open_store(db, readonly=True), site)
    if as_json:
        _print_json([v.to_json() for v in versions])
        return
    typer.echo(f"{'VERSION':>7}  {'LEARNED AT':<25}  {'STATE':<7} {'PAGES':>5} {'RULES':>5}  WHY")
    for v in versions:
        state = "current" if v.current else "old"
        typer.echo(f"{v.version:>7}  {safe(v.learned_at):<25}  {state:<7} {v.pages:>5} {v.rules:>5}  {safe(v.reason)}")
        if v.stale:
            typer.echo(f"{'':>7}  {safe(v.stale_at or ''):<25}  {'stale':<7} {'':>5} {'':>5}  "
                       f"{safe(v.stale_reason or '')}")


def command_app(argv: list[str]) -> typer.Typer:
    """The app to run ``argv`` (the words after the program's name): typer makes a click command of every
    registered command and group at each start (their options and help: ~10 ms of a short job's CPU), so when the
    first word names a command or a group exactly, a copy of the app holding that one alone; else (no word, an option
    first, a misspelt name) the whole app, so help lists, suggestions and errors stay typer's own."""
    from typer.main import get_command_name

    name = argv[0] if argv else None
    commands = [c for c in app.registered_commands if (c.name or get_command_name(c.callback.__name__)) == name]
    groups = [g for g in app.registered_groups if g.name == name]
    if not commands and not groups:
        return app
    one = copy.copy(app)
    one.registered_commands, one.registered_groups = commands, groups
    return one


_STDERR_LOG_WANTED: list[bool] = []  # main() asks for stderr_log; a test's runner leaves the logging as it is


def stderr_log() -> None:
    """The program's log on stderr (warnings and above, as "LEVEL logger: message"), set up once as a command's body
    starts (``handled_errors``) when main() asked for it: --help and usage errors, which log nothing, do not import
    logging (with traceback, string and threading: ~4% of --help)."""
    if _STDERR_LOG_WANTED:
        _STDERR_LOG_WANTED.clear()
        import logging

        logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")


def main() -> None:
    quick = AS_PROGRAM and sys.argv[1:2] and sys.argv[1] in QUICK_EXIT_COMMANDS
    try:
        _main()
    except SystemExit as done:
        if quick:
            quick_exit(done.code)
        raise
    if quick:
        quick_exit(None)


def _main() -> None:
    _STDERR_LOG_WANTED.append(True)
    signals.signal(signals.SIGINT, _interrupted)
    try:
        command_app(sys.argv[1:])()
    except Interrupted:
        err.print(INTERRUPTED_LINE, highlight=False, soft_wrap=True, markup=False)
        sys.exit(130)
    finally:
        codecache.save()
        before_teardown()


# the commands whose files are all closed by the time their body returns (their output, their --log; what else they
# write is the store's): the program ends them by quick_exit
QUICK_EXIT_COMMANDS = frozenset({"ingest", "build", "extract", "run"})


def quick_exit(code) -> None:
    """End the program as the interpreter's teardown would end it, without its freeing of every module's objects
    one by one (~11 M instructions, 2.4% of a 3-page extract): non-daemon threads are joined and the atexit handlers
    run (logging's, the worker pool's), the store's connections still open are closed (the last one to a file
    checkpoints its WAL, as at the teardown), stdout and stderr are flushed, and the process ends with the status the
    interpreter gives ``sys.exit(code)``. Returns, leaving the end to the interpreter as before, where the code is not
    a plain status (text to print), the interpreter's parts are not the ones known, or a flush fails (the
    interpreter then reports it and ends with its status 120, as it did)."""
    import atexit

    shutdown = getattr(threading, "_shutdown", None)
    run_handlers = getattr(atexit, "_run_exitfuncs", None)
    if not (code is None or (type(code) is int and -2 ** 31 <= code < 2 ** 31)) or shutdown is None or \
            run_handlers is None or sys.flags.inspect:
        return
    shutdown()
    run_handlers()
    store_db = sys.modules.get("store.db")
    if store_db is not None:
        store_db.close_all()
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except Exception:  # noqa: BLE001 -- the interpreter's own end reports it and gives its status
            return
    os._exit(0 if code is None else code)


def before_teardown() -> None:
    """The command is over and the process ends: what is garbage now is collected once (a store's connection left
    in a reference cycle is closed here, as the teardown would close it: its WAL is checkpointed), and every object
    left is frozen out of the cyclic garbage collector, whose collections in the interpreter's teardown otherwise
    traverse all of numpy's, lxml's, typer's and our modules' objects (~50 ms, a sixth of a 3-page extract's CPU).
    Objects are still freed as their last reference goes and atexit handlers run as before. Where no command's body
    ran (--help, a usage error: the collector was never turned on, see ``imports_done``) no store was opened, and
    nothing is collected."""
    if gc.isenabled():
        gc.collect()
    gc.freeze()


if __name__ == "__main__":
    main()
