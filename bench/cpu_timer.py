"""CPU timers around functions, for the benches that time a library's steps inside their own process
(bench_candidates.py, bench_index.py): each call's CPU time (``time.process_time``) added up under a key.

Imports nothing of the project, so a bench can import it before it reads its arguments and loads the checkout
they name (bench_candidates.py's --checkout).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Hashable
from typing import Any


def timed(function: Callable, spent: dict, key: Hashable, *, calls: dict | None = None,
          before: Callable[..., Any] | None = None) -> Callable:
    """``function`` wrapped (its name and docstring kept) to add the CPU time of each call to ``spent[key]`` (from
    0.0), whether it returns or raises, and 1 to ``calls[key]`` where ``calls`` is given; ``before`` is called with
    the call's arguments first, outside the clock (to count what the call is given)."""
    @functools.wraps(function)
    def run(*args, **kwargs):
        if before is not None:
            before(*args, **kwargs)
        began = time.process_time()
        try:
            return function(*args, **kwargs)
        finally:
            spent[key] = spent.get(key, 0.0) + time.process_time() - began
            if calls is not None:
                calls[key] = calls.get(key, 0) + 1
    return run


def time_attribute(owner: Any, name: str, spent: dict, key: Hashable | None = None, **options) -> None:
    """Replace ``owner.name`` (a module's function, a class's method) by ``timed`` of it, under ``key`` (default:
    ``name``)."""
    setattr(owner, name, timed(getattr(owner, name), spent, name if key is None else key, **options))
