"""The compiled parts of templater, built where a C compiler is at hand (else templater runs in pure Python):
templater._walk (Cython over lxml's public C API, compiled against the installed lxml), templater._numeric
(C: the classifier's numeric passes) and templater._pairs (C: the near-duplicate index's verification of candidate
pairs). The shingles' character tables (templater/chartable.py) are written into
the package at build time."""

import importlib.util
from pathlib import Path

import lxml
from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


def _chartable():
    """templater/chartable.py loaded on its own (the package's other modules need what is not installed yet)."""
    spec = importlib.util.spec_from_file_location("_templater_chartable", Path(__file__).parent / "templater" /
                                                  "chartable.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class BuildWithTables(build_ext):
    """build_ext that first writes templater/data/char_tables.bin beside the package being built."""

    def run(self):
        chartable = _chartable()
        package = Path("templater") if self.inplace else Path(self.build_lib) / "templater"
        target = package / "data" / chartable.FILE_NAME
        if chartable.read_tables(target) is None:
            chartable.write_tables(target)
        super().run()


_WALK = Extension("templater._walk", ["templater/_walk.pyx"], include_dirs=lxml.get_include(), optional=True)
_NUMERIC = Extension("templater._numeric", ["templater/_numeric.c"], optional=True)
_PAIRS = Extension("templater._pairs", ["templater/_pairs.c"], optional=True)

setup(ext_modules=[*cythonize([_WALK], compiler_directives={"language_level": 3}, quiet=True), _NUMERIC, _PAIRS],
      cmdclass={"build_ext": BuildWithTables})
