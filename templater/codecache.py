"""Code compiled at run time, kept between processes: the regular expressions and the dataclass methods that every
start compiles again.

Python keeps a module's bytecode (``__pycache__``) but not what the module makes when it runs: each ``re.compile``
parses its pattern and compiles it to the regular expression engine's code in pure Python, and each ``@dataclass``
writes the source of ``__init__``, ``__repr__``, ``__eq__``, ... and compiles it with ``exec``. A short command pays
for all of it at every start (the modules of a 3-page ``templater extract`` compile ~140 patterns and ~210 dataclass
methods: a quarter of its instructions). ``install()`` keeps the results in one file of the user's cache folder, written
by the first process that compiled them and read by the next ones:

- a pattern's engine code (what ``re._compiler.compile`` hands to ``_sre.compile``), keyed by the pattern and its
  flags, given to ``_sre.compile`` as compiled;
- a dataclass method's code object, keyed by the source text ``dataclasses`` generated, run by ``exec`` as that
  text would be;
- where each module's file was found (``ModuleFiles``), keyed by ``sys.path``, with the modification time of every
  folder searched: a start whose folders are all unchanged imports from those files without searching ``sys.path``;
- the code of typer's modules named in ``POSTPONED_ANNOTATIONS``, compiled with the annotations postponed (PEP 563:
  kept as their text, as ``from __future__ import annotations`` keeps them), keyed by the source file's path,
  modification time and size (``PostponedAnnotations``).

Each is what the interpreter would compute from the same key, so nothing behaves otherwise: the file is named
after the interpreter's version, bytecode tag, optimisation level and the engine's magic number, a file that does
not check out (its CRC, its layout) is ignored, a miss compiles as Python does, and anything unexpected in the
interpreter's internals leaves them unpatched. Only the process that installed the cache writes it (never a forked
worker), by an atomic rename, and only when it compiled or found something new; the file holds at most
``config.CODE_CACHE_ENTRIES`` entries. ``TEMPLATER_CODE_CACHE=0`` turns it off. The folder is the language model's
cache folder ($TEMPLATER_CACHE, else $XDG_CACHE_HOME/templater, else ~/.cache/templater).

Imported by the command line before anything else (it needs only the standard library's modules that are loaded
at every start); the library itself never installs it.
"""

from __future__ import annotations

import _thread
import marshal
import os
import sys
import zlib

ENV = "TEMPLATER_CODE_CACHE"  # "0": no cache (every start compiles, as Python does)
FORMAT = 2  # the file's layout: crc32 of the payload (4 bytes, little-endian), then marshal((FORMAT, entries)), each
# entry's value itself marshalled (read when it is used: --help reads few of the entries an extract wrote)


def cache_folder() -> str:
    """The user's cache folder of templater: $TEMPLATER_CACHE, else $XDG_CACHE_HOME/templater, else
    ~/.cache/templater (made when something is written there)."""
    return os.environ.get("TEMPLATER_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "templater")


def cache_file() -> str:
    """The cache file of this interpreter: one per Python version, bytecode tag, optimisation level, marshal version
    and regular expression engine."""
    import _sre

    tag = (f"{sys.implementation.cache_tag}-{sys.hexversion:x}-O{sys.flags.optimize}-m{marshal.version}"
           f"-sre{_sre.MAGIC}")
    return os.path.join(cache_folder(), f"code-{tag}.bin")


def write_atomically(path: str, parts) -> bool:
    """Write the byte strings ``parts`` to ``path`` through a private temporary file renamed into place (a reader
    sees the old file or the whole new one; writers race safely). False, and nothing left behind, when the folder
    cannot be written."""
    temporary = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(temporary, "wb") as f:
            for part in parts:
                f.write(part)
        os.replace(temporary, path)
    except OSError:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        return False
    return True


class CodeCache:
    """The entries read from ``path`` and those compiled since (``added``); ``save`` writes them back."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.entries: dict = read_entries(path)
        self.added = 0
        self.owner = os.getpid()
        self.hits = 0

    def get(self, key):
        """The value kept under ``key``, or None."""
        raw = self.entries.get(key)
        if raw is None:
            return None
        try:
            found = marshal.loads(raw)
        except (ValueError, EOFError, TypeError):
            return None
        self.hits += 1
        return found

    def add(self, key, value) -> None:
        """Keep ``value`` under ``key`` unless a value is kept there already."""
        if key not in self.entries:
            self.put(key, value)

    def put(self, key, value) -> None:
        """Keep ``value`` under ``key`` in place of what was there (as the newest entry)."""
        self.entries.pop(key, None)
        self.entries[key] = marshal.dumps(value)
        self.added += 1

    def save(self) -> bool:
        """Write the entries when this process compiled anything new (and is the one that installed the cache):
        at most ``config.CODE_CACHE_ENTRIES``, the newest kept. Returns whether the file was written; a folder that
        cannot be written is no error (the next start compiles again)."""
        if not self.added or os.getpid() != self.owner:
            return False
        from templater.config import CODE_CACHE_ENTRIES

        entries = self.entries
        if len(entries) > CODE_CACHE_ENTRIES:
            entries = dict(list(entries.items())[-CODE_CACHE_ENTRIES:])
        try:
            payload = marshal.dumps((FORMAT, entries))
        except ValueError:  # an entry marshal cannot write (not expected: patterns, engine code, code objects)
            return False
        if not write_atomically(self.path, (zlib.crc32(payload).to_bytes(4, "little"), payload)):
            return False
        self.added = 0
        return True


def read_entries(path: str) -> dict:
    """The entries of a cache file; empty when it is missing, unreadable, corrupt or of another layout."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return {}
    if len(data) < 4 or zlib.crc32(data[4:]) != int.from_bytes(data[:4], "little"):
        return {}
    try:
        found = marshal.loads(data[4:])
    except (ValueError, EOFError, TypeError):
        return {}
    if not (isinstance(found, tuple) and len(found) == 2 and found[0] == FORMAT and isinstance(found[1], dict)):
        return {}
    return found[1]


_active: CodeCache | None = None


def install() -> CodeCache | None:
    """Read the cache and route the regular expression compiler and dataclasses' ``exec`` through it (once a
    process); None when turned off or already installed."""
    global _active
    if _active is not None or os.environ.get(ENV) == "0":
        return None
    try:
        cache = CodeCache(cache_file())
    except Exception:  # noqa: BLE001 -- an interpreter without the expected parts: no cache, nothing changes
        return None
    _patch_regex_compiler(cache)
    _patch_dataclasses(cache)
    _patch_cleandoc(cache)
    _install_module_finder(cache)
    sys.meta_path.insert(0, PostponedAnnotations(cache))
    _active = cache
    return cache


def save() -> bool:
    """Write the installed cache if this process compiled something new (see ``CodeCache.save``)."""
    if _active is None:
        return False
    _record_module_files(_active)
    return _active.save()


class ModuleFiles:
    """Where the previous starts found their modules' files: a finder first on ``sys.meta_path`` that answers a
    module's name with the spec the standard path finder gave for it, without searching ``sys.path`` (each import of
    a file searched the folders before its own: ~0.1 M instructions a module, ~230 modules a 3-page extract).

    Kept under the interpreter's ``sys.path`` with the modification time of every folder searched: ``sys.path``'s
    folders and each one that holds a module of the map (a package's). A file added, removed or renamed in any of them (an install, an upgrade, a module
    that would now shadow one found before) changes its folder's time, and the whole map is dropped for that start
    and recorded again. Only modules loaded from a source (``.py``, its bytecode checked against it as always) or
    an extension file by the standard loaders, at the top level or in a package of the map, are kept; any other
    name is left to the finders after this one. Workers forked by the process use it too."""

    def __init__(self, times: dict, specs: dict) -> None:
        from importlib.machinery import ExtensionFileLoader, ModuleSpec, SourceFileLoader

        self.times = times
        self.specs = specs
        self.loaders = (SourceFileLoader, ExtensionFileLoader)
        self.spec_type = ModuleSpec

    def find_spec(self, name, path=None, target=None):
        """The spec ``importlib.util.spec_from_file_location`` makes for the file found before (what the standard
        path finder returns), or None for a name not in the map."""
        found = self.specs.get(name)
        if found is None:
            return None
        extension, origin, package, cached = found
        spec = self.spec_type(name, self.loaders[extension](name, origin), origin=origin, is_package=package)
        spec._set_fileattr = True  # has_location, as a file's spec has
        if package:
            spec.submodule_search_locations = [os.path.dirname(origin)]
        spec.cached = cached
        return spec


# typer's modules whose functions carry annotations that nothing reads at run time (``Annotated[..., Doc("...")]``
# for each parameter of ``typer.Option``, ``Typer.command``...: typing builds ~1,000 of them at each import, ~0.011 G
# instructions of a start); typer reads the annotations of the command line's functions, not these. A module that
# reads its own annotations (typer.completion's placeholder function) is not among them.
POSTPONED_ANNOTATIONS = frozenset({"typer.params", "typer.main", "typer.core", "typer.models", "typer.utils",
                                   "typer._param_types"})


class PostponedAnnotations:
    """A finder first on ``sys.meta_path`` for the modules of ``POSTPONED_ANNOTATIONS``: the spec the finders after
    it give, loaded by ``PostponedAnnotationsLoader`` when it is a plain source file's. Each function and class of
    the module is what its source makes, its annotations apart: they are the text of the source (``typing.
    get_type_hints`` evaluates them to the objects the module made before, ``tests/test_codecache.py``)."""

    def __init__(self, cache: CodeCache) -> None:
        self.cache = cache

    def find_spec(self, name, path=None, target=None):
        if name not in POSTPONED_ANNOTATIONS:
            return None
        from importlib.machinery import SourceFileLoader

        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            if finder is self or find is None:
                continue
            spec = find(name, path, target)
            if spec is None:
                continue
            if type(spec.loader) is SourceFileLoader and spec.origin == spec.loader.path:
                spec.loader = _postponed_loader()(spec.loader.name, spec.loader.path)
                spec.loader.cache = self.cache
            return spec
        return None


_postponed_loader_type = None


def _postponed_loader():
    """The loader class: a source file's, its code compiled with the annotations postponed and kept in the cache."""
    global _postponed_loader_type
    if _postponed_loader_type is None:
        from importlib.machinery import SourceFileLoader

        class PostponedAnnotationsLoader(SourceFileLoader):
            cache: CodeCache

            def get_code(self, fullname):
                import __future__

                path = self.get_filename(fullname)
                try:
                    status = os.stat(path)
                except OSError:
                    return super().get_code(fullname)
                key = ("postponed", path, status.st_mtime_ns, status.st_size)
                code = self.cache.get(key)
                if type(code) is not type(self.get_code.__code__):
                    code = compile(self.get_data(path), path, "exec", dont_inherit=True,
                                   flags=__future__.annotations.compiler_flag)
                    self.cache.add(key, code)
                return code

        _postponed_loader_type = PostponedAnnotationsLoader
    return _postponed_loader_type


def _module_files_key() -> tuple | None:
    """The key of the module map for this ``sys.path``; None when an entry is not text or names a folder relative
    to the working folder (which differs from start to start). A relative entry that is no folder (the marker an
    editable install puts there for its path hook) is kept in the key only."""
    paths = tuple(sys.path)
    if not all(isinstance(p, str) and (os.path.isabs(p) or (p and not os.path.isdir(p))) for p in paths):
        return None
    return ("modules", paths)


def _folder_times(folders) -> dict:
    """Each folder's modification time (ns), -1 for one that cannot be read (a ``sys.path`` entry that does not
    exist: one made later is a change)."""
    times = {}
    for folder in folders:
        try:
            times[folder] = os.stat(folder).st_mtime_ns
        except OSError:
            times[folder] = -1
    return times


_module_files: ModuleFiles | None = None


def _install_module_finder(cache: CodeCache) -> None:
    """Put the previous starts' module map first on ``sys.meta_path`` when every folder it searched is unchanged."""
    global _module_files
    key = _module_files_key()
    found = cache.get(key) if key is not None else None
    if not (isinstance(found, tuple) and len(found) == 2 and isinstance(found[0], dict)
            and isinstance(found[1], dict)):
        return
    times, specs = found
    if not all(type(entry) is tuple and len(entry) == 4 and entry[0] in (0, 1) and type(entry[1]) is str
               and type(entry[2]) is bool and (entry[3] is None or type(entry[3]) is str)
               for entry in specs.values()) or _folder_times(times) != times:
        return
    _module_files = ModuleFiles(times, specs)
    sys.meta_path.insert(0, _module_files)


def _record_module_files(cache: CodeCache) -> None:
    """Add the modules this process loaded from files to the map (a new map when the one read was dropped), with
    the times of the folders searched for them."""
    from importlib.machinery import ExtensionFileLoader, SourceFileLoader

    key = _module_files_key()
    if key is None or os.getpid() != cache.owner:
        return
    known = _module_files.specs if _module_files is not None else {}
    specs = dict(known)
    folders = {p for p in sys.path if os.path.isabs(p)} | set(_module_files.times if _module_files else ())
    new = 0
    module_type = type(sys)
    # the modules not in the map yet (a lazy module, not run yet, is not looked at), packages first
    candidates = [(name, module) for name, module in sys.modules.items()
                  if name not in specs and type(module) is module_type]
    for name, module in sorted(candidates, key=lambda item: item[0].count(".")):
        parent = name.rpartition(".")[0]
        if parent and not specs.get(parent, (0, "", False))[2]:
            continue  # in a package the map does not hold (a namespace package's): left to the standard finders
        spec = module.__dict__.get("__spec__")
        loader = getattr(spec, "loader", None)
        kind = type(loader)
        if kind is _postponed_loader_type:  # (a source file all the same; the finder compiles it as it did)
            kind = SourceFileLoader
        if (kind is not SourceFileLoader and kind is not ExtensionFileLoader) or spec.name != name:
            continue
        origin = spec.origin
        if not (isinstance(origin, str) and os.path.isabs(origin)):
            continue
        locations = spec.submodule_search_locations
        package = locations is not None
        if package and (list(locations) != [os.path.dirname(origin)]
                        or not os.path.basename(origin).startswith("__init__.")):
            continue  # a package whose search path is not its own folder alone: left to the standard finders
        specs[name] = (int(kind is ExtensionFileLoader), origin, package, spec.cached)
        new += 1
        folders.add(os.path.dirname(origin))
    if not new:
        return
    cache.put(key, (_folder_times(sorted(folders)), specs))


def _patch_regex_compiler(cache: CodeCache) -> None:
    """``re._compiler.compile`` answered from the cache: on a miss, the real compiler runs with ``_sre`` seen
    through a recorder, so the arguments it gives ``_sre.compile`` (the pattern's flags, engine code, group count
    and names) are kept under (pattern, flags); on a hit, ``_sre.compile`` gets them at once."""
    import re

    compiler = getattr(re, "_compiler", None)
    engine = getattr(compiler, "_sre", None)
    original = getattr(compiler, "compile", None)
    if engine is None or original is None or getattr(original, "code_cache", None) is not None:
        return
    debug = re.DEBUG.value
    native_words = engine.CODESIZE == 4 and memoryview(bytes(4)).cast("I").itemsize == 4
    lock = _thread.allocate_lock()
    seen: list = []

    class Recorder:
        """``_sre`` with ``compile`` recording its arguments."""

        def __getattr__(self, name):
            return getattr(engine, name)

        @staticmethod
        def compile(*args):
            seen.append(args)
            return engine.compile(*args)

    recorder = Recorder()

    def compile(p, flags=0):
        kind = type(p)
        if (kind is not str and kind is not bytes) or type(flags) is not int or flags & debug:
            return original(p, flags)
        key = ("re", p, flags)
        found = cache.get(key)
        if found is not None:
            final_flags, code, groups, groupindex, indexgroup = found
            return engine.compile(p, final_flags, memoryview(code).cast("I").tolist(), groups, groupindex,
                                  indexgroup)
        with lock:
            seen.clear()
            compiler._sre = recorder
            try:
                result = original(p, flags)
            finally:
                compiler._sre = engine
            if len(seen) == 1 and len(seen[0]) == 6 and seen[0][0] is p and native_words:
                _, final_flags, code, groups, groupindex, indexgroup = seen[0]
                # the engine's code as native unsigned ints (one bytes object, not an int object each), the rest
                # as the ints they are (the engine's opcodes are int subclasses, which marshal does not write)
                cache.add(key, (int(final_flags), b"".join(int(c).to_bytes(4, sys.byteorder) for c in code),
                                int(groups), {name: int(number) for name, number in groupindex.items()},
                                tuple(indexgroup)))
        return result

    compile.code_cache = cache
    compiler.compile = compile


def _patch_dataclasses(cache: CodeCache) -> None:
    """``exec`` as dataclasses calls it (a module global shadowing the builtin, in that module only): the source
    text it generated, compiled once and kept; the code object is run in the same namespaces."""
    import builtins
    import dataclasses

    if "exec" in vars(dataclasses):  # patched already, or dataclasses defines an exec of its own
        return

    def exec(source, globals=None, locals=None, /):  # noqa: A001 -- stands in for the builtin in dataclasses
        if type(source) is not str:
            return builtins.exec(source, globals, locals)
        key = ("py", source)
        code = cache.get(key)
        if code is None:
            code = compile(source, "<string>", "exec", dont_inherit=True)
            cache.add(key, code)
        return builtins.exec(code, globals, locals)

    exec.code_cache = cache
    dataclasses.exec = exec


def _patch_cleandoc(cache: CodeCache) -> None:
    """``inspect.cleandoc`` answered from the cache: numpy cleans the docstrings of ~40 of its
    compiled functions at its import (to attach them), typer the help of each command; the cleaned text is kept
    under the docstring itself, so what a caller gets is the string ``cleandoc`` returns for it."""
    import inspect

    original = inspect.cleandoc
    if getattr(original, "code_cache", None) is not None:
        return

    def cleandoc(doc):
        if type(doc) is not str:
            return original(doc)
        key = ("doc", doc)
        found = cache.get(key)
        if type(found) is str:
            return found
        cleaned = original(doc)
        if type(cleaned) is str:
            cache.add(key, cleaned)
        return cleaned

    cleandoc.__doc__, cleandoc.__wrapped__ = original.__doc__, original
    cleandoc.code_cache = cache
    inspect.cleandoc = cleandoc
