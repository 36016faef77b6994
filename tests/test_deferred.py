"""The modules the program defers to their first use (templater/deferred.py): a 3-page extract runs none of them,
each runs whole when used, and numpy computes the same with its linear algebra deferred."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import cli
from templater import deferred

WATCHED = (*deferred.DEFERRED, *deferred.NUMPY_DEFERRED, *deferred.TYPER_IMPORTERS, "numpy.linalg", "numpy._typing")

EXTRACT_PROBE = """
import atexit, json, sys
sys.argv = ['templater', 'extract', '--db', sys.argv[1], '--jobs', '1', '--quiet', '--output', sys.argv[2]]
import cli
from templater import deferred
atexit.register(lambda: print(json.dumps({{name: [name in sys.modules, deferred.ran(name)] for name in {watched!r}}}),
                              file=sys.stderr))  # (the program ends in main: its atexit handlers run)
cli.main()
"""


def test_an_extract_runs_none_of_the_deferred_modules_and_writes_the_same(tmp_path):
    """Run as the program, an `extract` of the samples (the index on) imports numpy without running numpy.linalg
    (nor numpy._typing, which only it loads), and runs none of subprocess, pickle, tempfile, ctypes, shellingham,
    bz2 and lzma, which typer, numpy and py3langid import at their top; its output is the bytes of an extract by
    cli imported as a library (every module run at once)."""
    pages, db = Path(cli.__file__).parent / "samples" / "pages.jsonl.gz", tmp_path / "t.db"
    environment = {**os.environ, "TEMPLATER_CACHE": str(tmp_path / "cache")}
    library = [sys.executable, "-c", "import cli; cli.main()"]
    for argv in (["ingest", str(pages)], ["build"]):
        subprocess.run([*library, *argv, "--db", str(db), "--quiet", "--jobs", "1"], cwd=tmp_path, env=environment,
                       check=True, capture_output=True)
    for name in ("first.db", "library.db"):
        shutil.copyfile(db, tmp_path / name)
    subprocess.run([*library, "extract", "--db", str(tmp_path / "first.db"), "--quiet", "--jobs", "1", "--output",
                    os.devnull], cwd=tmp_path, env=environment, check=True, capture_output=True)  # (the cache written)
    done = subprocess.run([sys.executable, "-c", EXTRACT_PROBE.format(watched=WATCHED), str(db),
                           str(tmp_path / "out.jsonl")], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env=environment)
    assert done.returncode == 0, done.stderr
    state = json.loads(done.stderr.strip().splitlines()[-1])
    assert state["numpy.linalg"] == [True, False]  # imported (numpy's modules take names from it), not run
    assert not any(ran for _, ran in state.values()), state
    subprocess.run([*library, "extract", "--db", str(tmp_path / "library.db"), "--quiet", "--jobs", "1", "--output",
                    str(tmp_path / "library.jsonl")], cwd=tmp_path, env=environment, check=True, capture_output=True)
    with gzip.open(pages, "rt") as f:
        assert len((tmp_path / "out.jsonl").read_text().splitlines()) == sum(1 for line in f if line.strip())
    assert (tmp_path / "out.jsonl").read_bytes() == (tmp_path / "library.jsonl").read_bytes()


NUMPY_PROBE = """
import json, sys
sys.argv[0] = {name!r}
import cli
import numpy as np
from templater import deferred
ran_before = deferred.ran("numpy.linalg")
a = np.array([[4.0, 1.5, -2.0], [1.0, 3.25, 0.5], [-2.5, 0.75, 5.0]])
x, y = np.linspace(-1.0, 2.0, 17), np.cos(np.linspace(-1.0, 2.0, 17)) * 3.5
polynomial = np.lib._polynomial_impl
matrices = sys.modules["numpy.matrixlib.defmatrix"]
out = [np.polyfit(x, y, 3).tobytes().hex(), np.roots([1.0, -6.0, 11.0, -6.0]).tobytes().hex(),
       (np.asmatrix(a) ** 3).tobytes().hex(), (np.asmatrix(a) ** -1).tobytes().hex(),
       np.linalg.inv(a).tobytes().hex(), np.linalg.eigvals(a).tobytes().hex(),
       np.linalg.lstsq(a, x[:3], rcond=None)[0].tobytes().hex(), str(np.linalg.matrix_power(a, 2))]
try:
    np.linalg.inv(np.zeros((2, 2)))
except np.linalg.LinAlgError as e:
    out.append(repr(e))
import io, linecache, signal, textwrap, token, tokenize  # (the other modules deferred: they run on use)
out += [np.lib.stride_tricks.sliding_window_view(np.arange(6.0), 3).tobytes().hex(), repr(np.lib.scimath.sqrt(-4.0)),
        np.asarray(memoryview(bytearray(b"abcdefgh")).cast("i")).tobytes().hex(),
        str(np.asarray(memoryview(bytearray(b"abcdefgh")).cast("i")).dtype), np.lib.mixins.NDArrayOperatorsMixin.__name__,
        np.lib.npyio.DataSource.__name__, sorted(np.lib.introspect.opt_func_info("add", "float64")),
        textwrap.dedent("  a\\n   b"), linecache.getline(cli.__file__, 1), signal.Signals(signal.SIGINT).name,
        [t.string for t in tokenize.generate_tokens(io.StringIO("x = 1\\n").readline)], token.tok_name[token.NAME]]
print(json.dumps([ran_before, out, polynomial.inv is np.linalg.inv, polynomial.eigvals is np.linalg.eigvals,
                  polynomial.lstsq is np.linalg.lstsq, matrices.matrix_power is np.linalg.matrix_power]))
"""


def _numpy_probe(name):
    done = subprocess.run([sys.executable, "-c", NUMPY_PROBE.format(name=name)], capture_output=True, text=True,
                          check=True, timeout=120)
    return json.loads(done.stdout)


def test_numpy_computes_the_same_with_its_linear_algebra_deferred():
    """numpy's functions that use numpy.linalg (polyfit, roots, a matrix's powers) and numpy.linalg's own give the
    bytes and errors of a whole numpy's; once numpy.linalg has run, numpy's modules hold its functions again. The
    other modules deferred (numpy's facades and buffer-format parser, tokenize, signal...) give the same on use."""
    program, library = _numpy_probe("/usr/local/bin/templater"), _numpy_probe("-c")
    assert library[0] is True and program[1] == library[1] and program[2:] == library[2:] == [True] * 4
    import numpy

    if numpy.__version__.split(".")[0] in deferred.NUMPY_MAJORS:
        assert program[0] is False  # numpy imported, its linear algebra not run until used


LINALG_PROBE = """
import json, sys
import numpy, numpy.linalg
own = {id(value) for value in vars(numpy.linalg._linalg).values()
       if callable(value) and getattr(value, "__module__", "").startswith("numpy.linalg")}
found = {}
for name, module in sorted(sys.modules.items()):
    if name.startswith("numpy.") and not name.startswith("numpy.linalg") and module is not None:
        taken = sorted(key for key, value in vars(module).items() if id(value) in own)
        if taken:
            found[name] = taken
print(json.dumps(found))
"""


def test_the_forwarded_names_are_all_that_numpy_takes_from_its_linear_algebra_at_import():
    """Under the numpy major checked, the modules `import numpy` loads take from numpy.linalg at their top exactly
    the functions deferred.NUMPY_LINALG_IMPORTERS forwards (another name would run numpy.linalg at import)."""
    import numpy

    if numpy.__version__.split(".")[0] not in deferred.NUMPY_MAJORS:
        return
    done = subprocess.run([sys.executable, "-c", LINALG_PROBE], capture_output=True, text=True, check=True,
                          timeout=120)
    assert json.loads(done.stdout) == {name: sorted(names) for name, names in deferred.NUMPY_LINALG_IMPORTERS.items()}


def test_what_is_deferred_and_when():
    """numpy.linalg only under a numpy major checked and before numpy loads (cli's docstring stand-ins aside);
    modules loaded already are left alone."""
    everything, numpys = {*deferred.DEFERRED, *deferred.TYPER_IMPORTERS}, {"numpy.linalg", *deferred.NUMPY_DEFERRED}
    assert set(deferred.deferred_names({}, "2")) == everything | numpys
    assert set(deferred.deferred_names({}, "1")) == everything
    assert set(deferred.deferred_names({}, None)) == everything
    assert set(deferred.deferred_names({"numpy": object()}, "2")) == everything
    assert set(deferred.deferred_names(dict.fromkeys(cli.NUMPY_DOCSTRING_MODULES), "2")) == everything | numpys
    assert "pickle" not in deferred.deferred_names({"pickle": object()}, "2")
    assert "difflib" not in deferred.deferred_names({"typer.core": object()}, "2")  # (its importer ran already)


def test_a_module_whose_compiled_part_is_missing_is_imported_at_once(monkeypatch):
    """An importer's `try: import ctypes / except ImportError` must see the error: a module whose compiled part
    cannot be found is not deferred; one whose part is there is."""
    finder = deferred.DeferredImports({"json": (), "csv": ()}, deferred._lazy_module_type())
    monkeypatch.setitem(deferred.NEEDS, "json", ("templater_no_such_module",))
    monkeypatch.setitem(deferred.NEEDS, "csv", ("_csv",))
    assert not isinstance(finder.find_spec("json").loader, deferred._DeferredLoader)
    assert isinstance(finder.find_spec("csv").loader, deferred._DeferredLoader)
    assert finder.find_spec("os.path") is None


DEFERRED_IMPORT_PROBE = """
import json, sys
from templater import deferred
sys.modules.pop("csv", None)
finder = deferred.DeferredImports({"csv": ()}, deferred._lazy_module_type())
sys.meta_path.insert(0, finder)
import csv
first = deferred.ran("csv")
import csv  # a further import reads __spec__ only
from importlib import import_module
import_module("csv")
second = deferred.ran("csv")
dialect = csv.excel.delimiter
sys.modules.pop("shlex", None)
finder.names["shlex"] = ()
import shlex
package = hasattr(shlex, "__path__")
from shlex import quote  # (the import system asks a module it finds whether it is a package: not run by that)
print(json.dumps([first, second, deferred.ran("csv"), dialect, package, quote("a b")]))
"""


def test_a_deferred_module_runs_at_its_first_attribute_read_not_at_a_further_import():
    done = subprocess.run([sys.executable, "-c", DEFERRED_IMPORT_PROBE], capture_output=True, text=True, check=True,
                          timeout=120, cwd=Path(cli.__file__).parent)
    assert json.loads(done.stdout) == [False, False, True, ",", False, "'a b'"]


def test_first_puts_the_finder_back_ahead_of_finders_inserted_after_it(monkeypatch):
    """The program installs the finder before the code cache, whose module map then goes first on sys.meta_path:
    first() puts the finder ahead of it again (else the map would answer the deferred names itself)."""
    finder, other = deferred.DeferredImports({"csv": ()}, deferred._lazy_module_type()), object()
    monkeypatch.setattr(sys, "meta_path", [other, finder, *sys.meta_path])
    assert deferred.first() is True
    assert sys.meta_path[:2] == [finder, other]
    monkeypatch.setattr(sys, "meta_path", [other])
    assert deferred.first() is False


def _eager_app(monkeypatch):
    """typer's own get_command_from_info in place of the command line's (every command made with its options)."""
    from typer import main as typer_main

    monkeypatch.setattr(typer_main, "get_command_from_info", typer_main.get_command_from_info.typer_own)


def _usages(app):
    """Every command's and group's --help, bare runs, usage errors and suggestions, as argument lists."""
    from typer.main import get_command_name

    names = [[c.name or get_command_name(c.callback.__name__)] for c in app.registered_commands]
    for group in app.registered_groups:
        names.append([group.name])
        names += [[group.name, c.name or get_command_name(c.callback.__name__)]
                  for c in group.typer_instance.registered_commands]
    return ([["--help"], [], ["--version"], ["--bogus"], ["extrat"], ["rules", "shw"], ["--help", "extract"]]
            + [[*name, "--help"] for name in names] + names + [[*name, "--bogus"] for name in names]
            + [["extract", "--jobs", "0"], ["extract", "--format", "pdf"], ["extract", "--fallback", "nope"],
               ["dups", "--method", "nope", "--db", "missing.db"], ["rules", "show"]])


def _commands(group, prefix=""):
    """The commands of a click group and of its groups, by their words."""
    found = {}
    for name, command in group.commands.items():
        if hasattr(command, "commands"):
            found.update(_commands(command, f"{prefix}{name} "))
        else:
            found[prefix + name] = command
    return found


def _described(command):
    """A command's parameters as plain values (each kind, names, default, help...)."""
    return [(type(p).__name__, p.name, p.opts, p.secondary_opts, repr(p.default), p.required, p.multiple, p.nargs,
             getattr(p, "help", None), p.expose_value, p.is_eager) for p in command.params]


def test_a_command_s_options_are_built_on_first_use_as_typer_builds_them(monkeypatch):
    """The app's group lists each command's help without building its options (`templater --help`); a command's
    `params` and `callback`, built on their first read, are typer's: the same parameters, and the same output and
    exit code as typer's own way for every command's --help, bare run and usage errors."""
    from typer.main import get_command
    from typer.testing import CliRunner

    group = get_command(cli.app)
    runner = CliRunner()
    with group.make_context("templater", [], resilient_parsing=True) as context:
        assert "extract" in group.get_help(context)
    commands = _commands(group)
    assert commands and all("_options_of" in vars(command) for command in commands.values())  # none built
    built = {name: _described(command) for name, command in commands.items()}
    assert all("_options_of" not in vars(command) and command.callback is not None for command in commands.values())
    lazy = [(argv, runner.invoke(cli.app, argv, prog_name="templater")) for argv in _usages(cli.app)]
    _eager_app(monkeypatch)
    eager_group = get_command(cli.app)
    eager_commands = _commands(eager_group)
    assert all("_options_of" not in vars(command) for command in eager_commands.values())
    assert built == {name: _described(command) for name, command in eager_commands.items()}
    for argv, result in lazy:
        eager = runner.invoke(cli.app, argv, prog_name="templater")
        assert (result.exit_code, result.output) == (eager.exit_code, eager.output), argv


def test_options_on_use_leave_another_typer_as_it_is(monkeypatch):
    """With typer functions whose parameters are not the ones this code calls them with (another typer version),
    typer is left to build every command with its options, as it does."""
    from typer import main as typer_main

    own = typer_main.get_command_from_info.typer_own
    monkeypatch.setattr(typer_main, "get_command_from_info", own)

    def get_callback(*, callback=None, params=(), convertors=None, context_param_name=None,
                     pretty_exceptions_short=True):
        return None

    monkeypatch.setattr(typer_main, "get_callback", get_callback)
    cli._deferred_options()
    assert typer_main.get_command_from_info is own
    assert cli._parameter_names(own) == ("command_info", "pretty_exceptions_short", "rich_markup_mode")
    assert cli._parameter_names(len) is None


def test_the_program_s_help_builds_no_command_s_options():
    """`templater --help` run as the program reads no command function's signature (inspect.signature is typer's
    way to a command's options) and prints the bytes typer prints when it builds them all."""
    probe = ("import sys\nsys.argv = ['templater', '--help']\nimport cli, inspect\nseen = []\n"
             "signature = inspect.signature\n"
             "inspect.signature = lambda f, *a, **k: (seen.append(f.__name__), signature(f, *a, **k))[1]\n"
             "{eager}try:\n    cli.main()\nexcept SystemExit:\n    pass\nprint(seen, file=sys.stderr)\n")
    eager = "import typer.main as m\nm.get_command_from_info = m.get_command_from_info.typer_own\n"
    runs = [subprocess.run([sys.executable, "-c", probe.format(eager=variant)], capture_output=True, text=True,
                           timeout=120) for variant in ("", eager)]
    assert runs[0].stdout == runs[1].stdout and runs[0].stdout.startswith("Usage: ")
    assert set(eval(runs[0].stderr)) == {"main_options", "_show_version"}  # the group's own option (--version) only
    assert "'extract'" in runs[1].stderr and "'dups'" in runs[1].stderr


def test_typer_s_suggestion_runs_difflib_on_first_use_and_gives_typer_s_words():
    """Run as the program, typer's close-match suggestion for a misspelt command runs the deferred difflib at its
    call, prints typer's words, and typer.core holds difflib's own function after; typer.completion never runs."""
    probe = ("import sys\nsys.argv = ['templater', 'extrat']\nimport cli\ntry:\n    cli.main()\n"
             "except SystemExit as e:\n    code = e.code\nimport difflib, typer.core\nfrom templater import deferred\n"
             "print(code, typer.core.get_close_matches is difflib.get_close_matches, deferred.ran('typer.completion'),"
             " file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert "No such command 'extrat'. Did you mean 'extract'?" in done.stderr
    assert done.stderr.splitlines()[-1] == "2 True False"


def test_typer_s_terminal_size_runs_shutil_on_first_use_and_gives_shutil_s_function_after():
    """Run as the program, shutil waits for its first use: typer's package takes get_terminal_size from it by name
    and gets a function that runs shutil at its call, gives shutil's answer, and is shutil's own function after."""
    probe = ("import sys\nsys.argv[0] = 'templater'\nimport cli, typer\nfrom templater import deferred\n"
             "before = deferred.ran('shutil')\nsize = typer.get_terminal_size(fallback=(91, 17))\nimport shutil\n"
             "print(before, deferred.ran('shutil'), typer.get_terminal_size is shutil.get_terminal_size,"
             " size == shutil.get_terminal_size(fallback=(91, 17)))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["False", "True", "True", "True"], done.stderr
