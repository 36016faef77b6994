"""The one place that chooses how templater runs: compiled, or the pure-Python definitions the compiled code is
tested against.

Two extensions are built by ``pip install`` where a C compiler is at hand:
- ``walk``: ``templater._walk``, the walks (segmentation, tree numbering, the container rules, the size
  test, and the language model's byte automaton), in Cython against lxml's public C API, compiled against the
  installed lxml;
- ``numeric``: ``templater._numeric``, the single-page classifier's numeric passes (feature matrices, text counts,
  the ensemble's forward pass) and two byte scans of the parse, in C, kept because numpy's per-call overhead makes
  them several times slower on pages of a few hundred blocks; and the near-duplicate signing path (text to shingle
  hashes, MinHash signatures, anchor keys, bottom-k samples), several times faster in C one text at a time than
  numpy over a batch. numpy stays the definition and test oracle of each.

A third, ``pairs`` (``templater._pairs``), verifies the near-duplicate index's candidate pairs in C (the measures of
``templater.shingles`` stay the definition); it loads on its own, so an install that predates it runs the rest
compiled.

Every module reads ``native.walk`` / ``native.numeric`` / ``native.pairs`` when it runs (None: the pure path), so
the choice is made once, here, and a test can switch the library to the pure path by setting them to None.
``STATUS`` says which path is active and why, for ``templater --version`` and for the warning the CLI gives on the
slow path.
"""

from __future__ import annotations

import os

PURE_ENV = "TEMPLATER_PURE_PYTHON"


def _load():
    if os.environ.get(PURE_ENV):
        return None, None, f"pure Python ({PURE_ENV} is set)"
    try:
        from . import _numeric, _walk
    except (ImportError, ValueError) as e:  # not built (no C compiler at install time), or built against an lxml
        # whose element type is laid out otherwise (Cython's type import raises ValueError)
        return None, None, (f"pure Python: the compiled walk did not load ({e}); reinstall with a C compiler for "
                            "~3x speed")
    return _walk, _numeric, "compiled (templater._walk: Cython over lxml; templater._numeric: C{pairs})"


walk, numeric, STATUS = _load()


def _load_pairs():
    if os.environ.get(PURE_ENV):
        return None
    try:
        from . import _pairs
    except ImportError:  # not built (no C compiler, or installed before it existed): pair by pair in Python
        return None
    return _pairs


pairs = _load_pairs()
if walk is not None:  # the pair verification is its own module: say when it is missing (pairs checked in Python)
    STATUS = STATUS.format(pairs="; templater._pairs: C" if pairs is not None else
                           "; templater._pairs not built: pairs verified in Python")
COMPILED = walk is not None


_heap_tuned = False


def tune_heap() -> None:
    """Set the process's allocators for page work, once: glibc's fast bins off (``numeric.tune_heap``, which saves
    merging a freed page's tree twice), and lxml's libxml2 allocating from chunks of its own (``numeric.xml_heap``:
    a page's tree laid out in the order it is built, freed chunk by chunk); nothing on the pure path or without
    glibc. Outputs do not depend on it. Called where page work starts (no other thread parsing then)."""
    global _heap_tuned
    if not _heap_tuned and numeric is not None:
        from lxml import etree

        numeric.tune_heap()
        numeric.xml_heap(etree.__file__)
    _heap_tuned = True


_malloc_trim: object = None  # glibc's malloc_trim, found at the first ``trim_heap`` (False: not glibc, or not found)


def trim_heap() -> bool:
    """Give the free memory of glibc's heap back to the system (``malloc_trim(0)``: the free top of the heap, and the
    whole pages of free blocks within it), True where that was done; nothing on another C library. glibc keeps the
    free top while it is below its trim threshold, which rises with its dynamic mmap threshold (up to twice the
    largest block it mapped apart and freed: 64 MiB on 64-bit), so the space that a batch's large arrays left, and
    the free blocks between live ones, stayed resident and grew with a long run. Outputs do not depend on it.
    ctypes loads at the first call only (no start-up cost)."""
    global _malloc_trim
    if _malloc_trim is None:
        _malloc_trim = False
        try:
            glibc = bool(os.confstr("CS_GNU_LIBC_VERSION"))
        except (ValueError, OSError, AttributeError):  # (another C library, or a system without confstr)
            glibc = False
        if glibc:
            import ctypes

            try:
                function = ctypes.CDLL(None).malloc_trim
            except (OSError, AttributeError):
                function = None
            if function is not None:
                function.argtypes, function.restype = [ctypes.c_size_t], ctypes.c_int
                _malloc_trim = function
    if _malloc_trim is False:
        return False
    _malloc_trim(0)
    return True


def slow_path_warning() -> str | None:
    """A warning for users on the pure path who did not ask for it, else None."""
    if COMPILED or os.environ.get(PURE_ENV):
        return None
    return STATUS
