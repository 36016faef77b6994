"""The optional C walk (templater._walk): built when a C compiler is at hand, else templater runs in pure Python."""

import lxml
from setuptools import Extension, setup

setup(ext_modules=[Extension("templater._walk", ["templater/_walk.c"], include_dirs=lxml.get_include(),
                             optional=True)])
