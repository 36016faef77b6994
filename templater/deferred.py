"""Modules that the program's start imports but its commands seldom use, run on their first use instead.

typer, numpy and py3langid import at their top, for what a few of their functions do, modules a command like a
3-page ``extract`` never uses: ``subprocess`` (typer's completion and ``launch``), ``pickle`` (numpy's ``save`` of
objects), ``tempfile`` (py3langid's model writer), ``ctypes`` (numpy's ``ctypeslib`` helpers), ``shellingham``
(typer's shell detection), ``bz2`` and ``lzma`` (``shutil``'s archive formats), and numpy's linear algebra
(``numpy.linalg``, with the ``numpy._typing`` annotations it loads: 9% of a 3-page extract's instructions), which
``numpy.matrixlib`` and numpy's polynomial functions import at their top for ``matrix ** n``, ``roots`` and ``polyfit``.
Likewise modules that their importers read in functions only: ``tokenize``, ``token`` and ``linecache`` (imported by
``inspect`` and ``traceback`` for showing source), ``textwrap``, ``signal`` (the worker pool's; the command line
sets its Ctrl-C handler through ``_signal``, which ``signal`` wraps), typer's ``colors``, and, under the numpy
majors checked, ``numpy.lib``'s facade modules, numpy's buffer-format parser and ctypes helpers (``NUMPY_DEFERRED``):
a 3-page extract reads none of them.

``install()`` puts a finder first on ``sys.meta_path`` that gives each of these modules, when first imported, the
standard library's lazy loading (``importlib.util.LazyLoader``: the module is made, and its code runs on the first
attribute read), with two additions:

- the import system reads ``__spec__`` of a module found in ``sys.modules`` at every further ``import name``;
  that read does not run the module here (with ``LazyLoader`` alone the second ``import subprocess`` ran it);
- numpy's two importers of ``numpy.linalg`` take four functions by name at their top (``from numpy.linalg import
  matrix_power``; ``eigvals, inv, lstsq``): they get functions that run ``numpy.linalg`` on their first call and
  call numpy's own with the same arguments; once it has run, the importers' names are numpy's functions again.
  Only under a numpy major version checked (``NUMPY_MAJORS``: ``tests/test_deferred.py`` checks on the installed
  one that these are all the names numpy's modules take from it at import); a module taking another name from
  ``numpy.linalg`` at import just runs it there, as without this.

typer's ``difflib`` (its close-match suggestion for a misspelt command), ``typer.completion`` (shell completion,
for an app that asks for it) and ``shutil`` (the terminal's width, for help text and progress bars) are forwarded
the same way (``TYPER_IMPORTERS``), in any typer version.

Each module runs as it would have, only later: what it computes is the same. A module whose compiled part cannot
be found (``NEEDS``: ``ctypes`` without ``_ctypes``...) is imported at once as before, so that an importer's
``try: import ctypes / except ImportError`` still sees the error. Imported by the command line only, run as the
program (the library never installs it); worker processes forked by it inherit the modules as they are.
"""

from __future__ import annotations

import sys
from importlib.util import LazyLoader

DEFERRED = ("subprocess", "pickle", "tempfile", "ctypes", "shellingham", "bz2", "lzma",
            # read in functions only by their importers (traceback, inspect, logging, typer's vendored click, the
            # worker pool): a 3-page extract never reads them
            "tokenize", "token", "linecache", "textwrap", "signal", "typer.colors")
NEEDS = {"subprocess": ("_posixsubprocess",), "ctypes": ("_ctypes",), "bz2": ("_bz2",), "lzma": ("_lzma",),
         "signal": ("_signal",)}
# numpy's modules that ``import numpy`` imports as modules and reads nothing of at import (its ctypes helpers, the
# facades of ``numpy.lib``), under the numpy majors checked
NUMPY_DEFERRED = ("numpy._core._internal", "numpy._core._dtype_ctypes", "numpy.lib.introspect", "numpy.lib.mixins",
                  "numpy.lib.npyio", "numpy.lib.scimath", "numpy.lib.stride_tricks")
# numpy's modules that take functions from numpy.linalg at their top, under the numpy majors checked
NUMPY_LINALG_IMPORTERS = {"numpy.matrixlib.defmatrix": ("matrix_power",),
                          "numpy.lib._polynomial_impl": ("eigvals", "inv", "lstsq")}
NUMPY_MAJORS = ("2",)
# typer's modules that take a function by name at their top from a module they use in one case only: typer.core
# suggests close command names after a misspelt one (difflib's ``get_close_matches``), typer.main sets up shell
# completion (typer.completion, with its shells' classes) for an app that asks for it; forwarded as numpy.linalg's
# are (any other name taken at import just runs the module there)
TYPER_IMPORTERS = {"difflib": {"typer.core": ("get_close_matches",)},
                   "typer.completion": {"typer.main": ("get_completion_inspect_parameters",)},
                   # typer's package takes shutil's terminal size by name (its and click's other uses of shutil, and
                   # py3langid's, are in functions: help text, progress bars, shell completion, the model writer)
                   "shutil": {"typer": ("get_terminal_size",)}}

_plain_module = type(sys)
_module_dict = _plain_module.__dict__["__dict__"].__get__  # a module's namespace, read without its __getattribute__
# what the import system reads of a module in sys.modules at a further import of it: ``__spec__`` (whether it is
# being loaded) and, for ``from package import name``, ``__path__`` (whether it is a package)
_MODULE_ATTRIBUTES = frozenset({"__spec__", "__path__"})
_forwarded: dict[str, dict] = {}  # module name -> {name: the function standing in until the module runs}


def _lazy_module_type():
    """``importlib.util``'s lazy module type, made to answer ``__spec__`` and the forwarded names without running
    the module, and to give the importers numpy's functions back once it has run; None where it is not there."""
    import importlib.util

    base = getattr(importlib.util, "_LazyModule", None)
    if not isinstance(base, type):
        return None

    class Deferred(base):
        def __getattribute__(self, attr):
            namespace = _module_dict(self)
            if attr in _MODULE_ATTRIBUTES or attr in _forwarded.get(namespace.get("__name__"), ()):
                if attr not in namespace:  # (__path__ of a module that is not a package)
                    raise AttributeError(f"module {namespace.get('__name__')!r} has no attribute {attr!r}")
                return namespace[attr]
            value = super().__getattribute__(attr)  # (runs the module, which becomes a plain module)
            _restore(namespace.get("__name__"))
            return value

    return Deferred


def _forwarder(module, name: str):
    def forward(*args, **kwargs):
        if type(module) is not _plain_module:
            module.__name__  # noqa: B018 -- a read that runs the module (its forwarded names answer without)
        function = _module_dict(module).get(name)
        if function is forward:  # (the module's run did not define it)
            raise AttributeError(f"module {module.__name__!r} has no attribute {name!r}")
        return function(*args, **kwargs)

    forward.__name__ = forward.__qualname__ = name
    forward.__module__ = module.__name__
    return forward


def _restore(name) -> None:
    """Once a module with forwarded names has run: its importers' names are its own functions again."""
    stand_ins = _forwarded.pop(name, None)
    if not stand_ins:
        return
    module = sys.modules.get(name)
    for importer_name, names in TYPER_IMPORTERS.get(name, NUMPY_LINALG_IMPORTERS).items():
        importer = sys.modules.get(importer_name)
        for attr in names:
            if importer is not None and attr in stand_ins and getattr(importer, attr, None) is stand_ins[attr]:
                setattr(importer, attr, getattr(module, attr))


class _DeferredLoader(LazyLoader):
    def __init__(self, loader, module_type, forwarded: tuple[str, ...]) -> None:
        super().__init__(loader)
        self.module_type, self.forwarded = module_type, forwarded

    def exec_module(self, module) -> None:
        if self.forwarded:
            stand_ins = {name: _forwarder(module, name) for name in self.forwarded}
            module.__dict__.update(stand_ins)  # before LazyLoader's snapshot: the module's run replaces them
            _forwarded[module.__name__] = stand_ins
        super().exec_module(module)
        module.__class__ = self.module_type


class DeferredImports:
    """The finder: the spec the finders after it give, its loader made lazy, for the names of ``self.names``
    (name -> the names forwarded); None for any other name."""

    def __init__(self, names: dict[str, tuple[str, ...]], module_type) -> None:
        self.names, self.module_type = names, module_type

    def _find(self, name, path=None, target=None):
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            if finder is self or find is None:
                continue
            spec = find(name, path, target)
            if spec is not None:
                return spec
        return None

    def find_spec(self, name, path=None, target=None):
        if name not in self.names:
            return None
        spec = self._find(name, path, target)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module") or \
                any(need not in sys.modules and self._find(need) is None for need in NEEDS.get(name, ())):
            return spec
        spec.loader = _DeferredLoader(spec.loader, self.module_type, self.names[name])
        return spec


def deferred_names(modules, numpy_major: str | None) -> dict[str, tuple[str, ...]]:
    """The modules to defer (name -> the names forwarded): those not loaded yet; ``numpy.linalg`` under a numpy
    major checked, when numpy is not loaded yet (the docstring stand-ins of cli may be in ``modules``)."""
    names = {name: () for name in DEFERRED if name not in modules}
    for name, importers in TYPER_IMPORTERS.items():
        if name not in modules and not any(importer in modules for importer in importers):
            names[name] = tuple(sorted({attr for found in importers.values() for attr in found}))
    if numpy_major in NUMPY_MAJORS and "numpy" not in modules and "numpy.linalg" not in modules:
        names["numpy.linalg"] = tuple(sorted({name for found in NUMPY_LINALG_IMPORTERS.values() for name in found}))
        names.update((name, ()) for name in NUMPY_DEFERRED if name not in modules)
    return names


def install(numpy_major: str | None) -> DeferredImports | None:
    """Put the finder first on ``sys.meta_path`` (once); None when already there or the lazy module type of this
    Python is not the one known."""
    if any(isinstance(finder, DeferredImports) for finder in sys.meta_path):
        return None
    module_type = _lazy_module_type()
    if module_type is None:
        return None
    finder = DeferredImports(deferred_names(sys.modules, numpy_major), module_type)
    sys.meta_path.insert(0, finder)
    return finder


def first() -> bool:
    """Put the installed finder back first on ``sys.meta_path`` (a finder inserted after it, such as the code
    cache's module map, would answer the deferred names itself); whether one is installed."""
    found = [finder for finder in sys.meta_path if isinstance(finder, DeferredImports)]
    for finder in found:
        sys.meta_path.remove(finder)
        sys.meta_path.insert(0, finder)
    return bool(found)


def ran(name: str) -> bool:
    """Whether module ``name`` is loaded and has run (not waiting for its first use)."""
    module = sys.modules.get(name)
    return module is not None and type(module) is type(sys)
