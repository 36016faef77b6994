"""Worker processes for ``--jobs``: the parent process is the only writer of the database; each worker opens a
read-only connection of its own, builds its state once (``factory(reader, *args)``, e.g. the templates it
needs), and turns tasks into results, which ``Pool.imap`` hands back in the order of the tasks.

Workers are forked where the platform can (no start-up imports), ignore Ctrl-C (the parent stops them), and on
Linux die with the parent: a killed run leaves no worker behind. A pool left early (an error in the parent, such
as a full disk, or Ctrl-C) first lets the tasks it handed out finish, for at most config.POOL_STOP_S, and only
then stops its workers: ``Pool.terminate`` kills a worker wherever it is, and one killed in the middle of sending
its result (ingest's results are the pages' compressed HTML, far larger than a pipe's buffer) left the pool's
result thread waiting for the rest of that message forever, and ``terminate`` with it.
"""

from __future__ import annotations

import contextlib
import gc
import os
import signal
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from itertools import islice
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # multiprocessing and ctypes are imported when a pool starts: one process does not pay for them
    from multiprocessing.pool import Pool

    import sqlite_utils

from store.db import db_path, open_reader
from templater.config import POOL_STOP_S
from templater.errors import InputError

PR_SET_PDEATHSIG = 1  # prctl option: the signal a process gets when its parent dies (Linux)

_state: Callable | None = None  # the worker's own state, made once by ``_start``


def _die_with_parent(parent: int) -> None:
    """Ask the kernel for SIGKILL when the parent dies; a parent already dead (killed between the fork and this
    call, when the request comes too late) ends the worker at once."""
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:
        os._exit(1)


def _start(parent: int, path: str | None, factory: Callable, args: tuple) -> None:
    global _state
    from store import runs as run_store  # (imported by ``pool`` before the fork: inherited)

    _die_with_parent(parent)
    run_store.close_inherited_locks()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})  # blocked by ``pool`` across the fork
    _state = factory(open_reader(path), *args) if path else factory(*args)


def run(task):
    """Run one task in a worker with the state its pool was started with."""
    return _state(task)


class Workers:
    """A pool's workers with the tasks handed to them and not known to be done (``apply_async`` as the pool's)."""

    def __init__(self, pool: Pool) -> None:
        self.pool = pool
        self.handed: deque = deque()

    def apply_async(self, func: Callable, args: tuple = ()):
        result = self.pool.apply_async(func, args)
        self.handed.append(result)
        while self.handed and self.handed[0].ready():  # those done in order are forgotten: the deque stays short
            self.handed.popleft()
        return result

    def settle(self, seconds: float) -> bool:
        """Wait until every task handed out is done (its result received whole), for at most ``seconds``;
        whether they all are."""
        deadline = time.monotonic() + seconds
        for result in self.handed:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            result.wait(left)
        return all(result.ready() for result in self.handed)


@contextlib.contextmanager
def pool(jobs: int, factory: Callable, db: sqlite_utils.Database | None, *args) -> Iterator[Workers]:
    """A pool of ``jobs`` workers, each with ``factory(its read-only connection to db, *args)`` (``factory(*args)``
    without db) as state; ``imap_ordered`` (or the pool's ``apply_async``) hands it tasks. On leaving, the tasks
    handed out finish (for at most POOL_STOP_S) before the workers are stopped."""
    path = None
    if db is not None:
        path = db_path(db)
        if path is None:
            raise InputError("--jobs above 1 needs a database file (workers read it), not an in-memory database")
    import multiprocessing

    from store import runs  # noqa: F401 -- what each worker's ``_start`` uses, imported once before the fork
    # (its locks and dataclasses: not imported by a run without workers)

    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    initargs = (os.getpid(), str(path) if path else None, factory, args)
    # Ctrl-C stays blocked while the workers are forked: a worker interrupted before ``_start`` ignores it would
    # print a traceback; the parent gets a Ctrl-C of that moment once the pool is made.
    # The objects the workers inherit (modules, models, templates) are frozen out of the garbage collector across the
    # fork: a worker's full collections neither walk them nor write to them (each write would copy a memory page).
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    gc.freeze()
    try:
        made = multiprocessing.get_context(method).Pool(jobs, initializer=_start, initargs=initargs)
    finally:
        gc.unfreeze()
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
    with made as p:  # Pool.__exit__ terminates the workers
        handed = Workers(p)
        try:
            yield handed
        finally:
            handed.settle(POOL_STOP_S)  # none is then killed in the middle of sending its result


def imap_ordered(workers: Workers, tasks: Iterable, *, ahead: int) -> Iterator:
    """The results of ``tasks`` run in the pool, in the order of the tasks, with at most ``ahead`` tasks handed out
    and not yet taken back (Pool.imap reads all its tasks at once and keeps every result until it is asked for:
    memory would grow with the input when the writer is the slower side). A task's exception is raised here."""
    pending: deque = deque()
    for task in tasks:
        pending.append(workers.apply_async(run, (task,)))
        if len(pending) >= ahead:
            yield pending.popleft().get()
    while pending:
        yield pending.popleft().get()


def chunked(items: Iterable, size: int) -> Iterator[list]:
    """Consecutive lists of ``size`` items (the last may be shorter)."""
    iterator = iter(items)
    while chunk := list(islice(iterator, size)):
        yield chunk
