"""The one place that chooses how templater runs: the compiled walk (the C extension ``templater._walk``, built by
``pip install`` where a C compiler is at hand) or the pure-Python definitions it is tested against.

Every module reads ``native.walk`` when it runs (None: the pure path), so the choice is made once, here, and a
test can switch the whole library to the pure path by setting ``native.walk`` to None. ``STATUS`` says which path
is active and why, for ``templater --version`` and for the warning the CLI gives on the slow path.
"""

from __future__ import annotations

import os

PURE_ENV = "TEMPLATER_PURE_PYTHON"


def _load():
    if os.environ.get(PURE_ENV):
        return None, f"pure Python ({PURE_ENV} is set)"
    try:
        from . import _walk
    except ImportError as e:  # not built (no C compiler at install time), or built for another lxml's layout
        return None, f"pure Python: the compiled walk did not load ({e}); reinstall with a C compiler for ~3x speed"
    return _walk, "compiled (templater._walk)"


walk, STATUS = _load()
COMPILED = walk is not None


def slow_path_warning() -> str | None:
    """A warning for users on the pure path who did not ask for it, else None."""
    if COMPILED or os.environ.get(PURE_ENV):
        return None
    return STATUS
