"""templater.codecache: patterns and dataclass methods compiled once and kept, behaving as freshly compiled ones.

Each case runs in a process of its own (the cache patches the interpreter's regular expression compiler and
dataclasses' exec for the whole process), twice over one cache folder: the first run compiles and writes, the second
reads; both must give what a process without the cache gives."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from templater import codecache

ROOT = Path(__file__).resolve().parent.parent

PROBE = r'''
import json, sys
from templater import codecache
cache = codecache.install()
import dataclasses, re

PATTERNS = [("(?P<y>(?:19|20)\\d\\d)-(?P<m>[01]?\\d)", 0), ("caf\u00e9|na\u00efve", re.IGNORECASE),
            (b"<script\\b[^>]*>(.*?)</script\\s*>", re.IGNORECASE | re.DOTALL), ("^\\s*(\\w+)$", re.MULTILINE),
            ("(?i)author|byline", 0), ("[\\W_]+", 0), ("(a)(b)?(?P<c>c)", 0)]
TEXTS = ["2024-05 and 1999-1", "CAF\u00c9 NA\u00cfVE", b"<SCRIPT type=x>a\nb</script >", "  word\nx y\n", "By line",
         "a_b-c", "ac abc"]
out = {"patterns": []}
for (pattern, flags), text in zip(PATTERNS, TEXTS):
    compiled = re.compile(pattern, flags)
    found = [m.group(0) for m in compiled.finditer(text)]
    out["patterns"].append([compiled.flags, compiled.groups, dict(compiled.groupindex),
                            [f.decode("latin-1") if isinstance(f, bytes) else f for f in found]])

@dataclasses.dataclass(frozen=True, slots=True)
class Frozen:
    a: int
    b: str = "x"
    c: tuple = dataclasses.field(default_factory=tuple)

@dataclasses.dataclass(order=True)
class Ordered:
    n: int
    name: str

f = Frozen(1)
try:
    f.a = 2
    frozen = False
except dataclasses.FrozenInstanceError:
    frozen = True
out["dataclasses"] = [repr(f), f == Frozen(1, "x", ()), hash(Frozen(1, "y")) == hash(Frozen(1, "y")), frozen,
                      sorted([Ordered(2, "b"), Ordered(1, "z")]) == [Ordered(1, "z"), Ordered(2, "b")],
                      repr(Ordered(3, "q"))]
import inspect
DOCS = ["\tFirst line.\n\n" + "\n".join("    " * (i % 3) + f"line {i}\t tab" for i in range(60)) + "\n   \n",
        "  " + "x" * 600, "short\n   doc", inspect.getsource(codecache)[:2000]]
out["docs"] = [inspect.cleandoc(doc) for doc in DOCS] + [inspect.getdoc(codecache.install)]
if cache is not None:
    out["hits"], out["saved"] = cache.hits, codecache.save()
print(json.dumps(out))
'''


def probe(tmp_path: Path, **env) -> dict:
    environment = {name: value for name, value in os.environ.items() if name != codecache.ENV}
    environment.update(TEMPLATER_CACHE=str(tmp_path), **env)
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=environment, capture_output=True, text=True,
                          check=True)
    return json.loads(done.stdout)


def without_counts(result: dict) -> dict:
    return {k: v for k, v in result.items() if k not in ("hits", "saved")}


def cache_files(folder: Path) -> list[Path]:
    return sorted(folder.glob("code-*.bin"))


def test_cached_patterns_dataclasses_and_docstrings_behave_as_freshly_compiled_ones(tmp_path):
    plain = probe(tmp_path / "off", **{codecache.ENV: "0"})
    assert "hits" not in plain and not cache_files(tmp_path / "off")
    first = probe(tmp_path)
    assert first["saved"] is True and len(cache_files(tmp_path)) == 1
    second = probe(tmp_path)
    assert second["hits"] > 0 and second["saved"] is False  # everything came from the file; nothing new to write
    assert without_counts(first) == without_counts(second) == plain
    assert plain["dataclasses"][1:5] == [True, True, True, True]


def test_a_corrupt_or_foreign_file_is_ignored_and_rewritten(tmp_path):
    probe(tmp_path)
    [file] = cache_files(tmp_path)
    reference = without_counts(probe(tmp_path))
    for damaged in (file.read_bytes()[:-7], b"", b"\x00" * 40, file.read_bytes()[:4] + b"x" * 100):
        file.write_bytes(damaged)
        assert codecache.read_entries(str(file)) == {}
        result = probe(tmp_path)
        assert result["hits"] == 0 and result["saved"] is True
        assert without_counts(result) == reference
        assert codecache.read_entries(str(file))


def test_save_writes_only_new_entries_of_the_installing_process_and_at_most_the_limit(tmp_path, monkeypatch):
    path = str(tmp_path / "code.bin")
    cache = codecache.CodeCache(path)
    assert cache.entries == {} and cache.save() is False  # nothing compiled: nothing written
    assert not os.path.exists(path)
    monkeypatch.setattr("templater.config.CODE_CACHE_ENTRIES", 3)
    for n in range(5):
        cache.add(("py", f"x = {n}"), compile(f"x = {n}", "<string>", "exec"))
    cache.owner = os.getpid() + 1  # as in a forked worker: never writes
    assert cache.save() is False and not os.path.exists(path)
    cache.owner = os.getpid()
    assert cache.save() is True
    kept = codecache.read_entries(path)
    assert list(kept) == [("py", "x = 2"), ("py", "x = 3"), ("py", "x = 4")]  # the newest
    assert cache.save() is False  # written already


def test_an_unwritable_folder_is_no_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    cache = codecache.CodeCache(str(blocker / "sub" / "code.bin"))
    cache.add(("py", "x = 1"), compile("x = 1", "<string>", "exec"))
    assert cache.save() is False


def test_the_cli_installs_the_cache_before_its_imports():
    source = (ROOT / "cli.py").read_text(encoding="utf-8")
    assert source.index("codecache.install()") < source.index("import typer")
    assert source.index("codecache.install()") < source.index("import json")


MODULES_PROBE = r'''
import json, sys
from templater import codecache
codecache.install()
import email.utils, helper, json.decoder, sqlite3
out = {"used": codecache._module_files is not None, "helper": helper.WHERE, "specs": {}}
for name in ("helper", "email", "email.utils", "json.decoder", "sqlite3", "_sqlite3", "templater.codecache"):
    module = sys.modules[name]
    spec = module.__spec__
    out["specs"][name] = [type(spec.loader).__name__, spec.name, spec.origin, spec.cached, spec.has_location,
                          spec.parent, spec.submodule_search_locations, module.__file__, getattr(module, "__cached__", None),
                          getattr(module, "__path__", None), module.__package__]
codecache.save()
print(json.dumps(out))
'''


def modules_probe(tmp_path: Path) -> dict:
    environment = {name: value for name, value in os.environ.items() if name != codecache.ENV}
    environment.update(TEMPLATER_CACHE=str(tmp_path / "cache"), PYTHONPATH=str(tmp_path / "lib"))
    done = subprocess.run([sys.executable, str(tmp_path / "app" / "probe.py")], cwd=tmp_path, env=environment,
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def test_modules_are_found_where_the_previous_start_found_them_until_a_folder_changes(tmp_path):
    (tmp_path / "app").mkdir()
    (tmp_path / "lib").mkdir()
    (tmp_path / "app" / "probe.py").write_text(MODULES_PROBE, encoding="utf-8")
    (tmp_path / "lib" / "helper.py").write_text("WHERE = 'lib'\n", encoding="utf-8")
    first = modules_probe(tmp_path)  # the standard finders; the map is written
    second = modules_probe(tmp_path)  # the map
    assert not first["used"] and second["used"]
    assert second["specs"] == first["specs"] and second["helper"] == "lib"
    # a module put in a folder searched before the one the map names (the script's, first on sys.path) shadows it
    # again: the folder's time changed, the map is dropped for that start and written anew
    (tmp_path / "app" / "helper.py").write_text("WHERE = 'app'\n", encoding="utf-8")
    shadowed = modules_probe(tmp_path)
    again = modules_probe(tmp_path)
    assert not shadowed["used"] and again["used"]
    assert shadowed["helper"] == again["helper"] == "app"
    assert again["specs"] == shadowed["specs"] and again["specs"]["helper"][2] == str(tmp_path / "app" / "helper.py")


def test_a_relative_folder_on_sys_path_turns_the_module_map_off(monkeypatch):
    monkeypatch.setattr(sys, "path", ["", *sys.path])
    assert codecache._module_files_key() is None
    monkeypatch.setattr(sys, "path", ["/usr/lib/python3", "__a-path-hook-marker-that-is-no-folder__"])
    assert codecache._module_files_key() == ("modules", ("/usr/lib/python3", "__a-path-hook-marker-that-is-no-folder__"))


def test_a_map_of_another_layout_is_ignored(tmp_path, monkeypatch):
    cache = codecache.CodeCache(str(tmp_path / "code.bin"))
    cache.put(codecache._module_files_key(), ({}, {"json": ("not", "a", "spec")}))
    meta_path = list(sys.meta_path)
    monkeypatch.setattr(codecache, "_module_files", None)
    codecache._install_module_finder(cache)
    assert sys.meta_path == meta_path and codecache._module_files is None


TYPER_PROBE = r'''
import importlib, inspect, json, re, sys, typing
from templater import codecache
cache = codecache.install()
import typer
out = {}
for name in sorted(codecache.POSTPONED_ANNOTATIONS):
    module = importlib.import_module(name)
    functions = []
    for attr, value in vars(module).items():
        if inspect.isfunction(value) and value.__module__ == name:
            functions.append((attr, value))
        elif inspect.isclass(value) and value.__module__ == name:
            functions += [(f"{attr}.{key}", item) for key, item in vars(value).items() if inspect.isfunction(item)]
    for qualified, function in functions:
        try:
            hints = repr(typing.get_type_hints(function, include_extras=True))
        except Exception as error:  # (a name imported for type checkers only: the same either way)
            hints = type(error).__name__
        texts = [isinstance(a, str) for a in function.__annotations__.values()]
        out[f"{name}.{qualified}"] = [hints, all(texts) if texts else None, function.__doc__,
                                      re.sub(" at 0x[0-9a-f]+", "", repr(function.__defaults__)),
                                      sorted(function.__kwdefaults__ or ())]
out["loaders"] = sorted({type(sys.modules[name].__spec__.loader).__name__ for name in codecache.POSTPONED_ANNOTATIONS})
if cache is not None:
    out["saved"] = codecache.save()
print(json.dumps(out))
'''


def test_typer_s_modules_with_postponed_annotations_are_typer_s_modules(tmp_path):
    """typer's modules of POSTPONED_ANNOTATIONS, loaded through the cache (compiled, then kept), hold each function
    of typer's with its defaults and docstring, and its annotations as text that evaluates to the objects typer
    makes without the cache."""
    def run(**env):
        environment = {name: value for name, value in os.environ.items() if name != codecache.ENV}
        environment.update(TEMPLATER_CACHE=str(tmp_path), **env)
        done = subprocess.run([sys.executable, "-c", TYPER_PROBE], cwd=ROOT, env=environment, capture_output=True,
                              text=True, check=True)
        return json.loads(done.stdout)

    plain, first, second = run(**{codecache.ENV: "0"}), run(), run()
    assert first.pop("saved") is True and second.pop("saved") is False  # compiled once, then read
    assert plain.pop("loaders") == ["SourceFileLoader"]
    assert first.pop("loaders") == second.pop("loaders") == ["PostponedAnnotationsLoader"]
    assert first == second and first.keys() == plain.keys() and len(plain) > 100
    annotated = [name for name, (_, texts, *_) in plain.items() if texts is not None]
    assert len(annotated) > 50 and not any(plain[name][1] for name in annotated)  # objects without the cache
    assert all(first[name][1] for name in annotated)  # text with it
    assert {name: [hints, *rest] for name, (hints, _, *rest) in first.items()} == \
        {name: [hints, *rest] for name, (hints, _, *rest) in plain.items()}
