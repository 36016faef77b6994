"""Worker processes: a worker whose parent died before it could ask to die with it ends at once."""

import os
import time

import pytest

from templater import workers


def test_a_worker_whose_parent_is_already_gone_ends_at_once():
    child = os.fork()
    if child == 0:  # the worker: its parent "at fork time" is not the one it has now
        try:
            workers._die_with_parent(os.getppid() + 1)
        finally:
            os._exit(0)  # reached only if _die_with_parent let a worker with a dead parent live
    _, status = os.waitpid(child, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 1


def test_a_worker_whose_parent_lives_goes_on():
    child = os.fork()
    if child == 0:
        try:
            workers._die_with_parent(os.getppid())
        finally:
            os._exit(0)
    _, status = os.waitpid(child, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


class _Large:
    """A worker's state whose every result is far larger than a pipe's buffer (as ingest's prepared pages are)."""

    def __call__(self, task):
        time.sleep(0.01)
        return [f"record {task} {i} " * 20 for i in range(3000)]


def test_a_pool_left_early_lets_the_tasks_it_handed_out_finish_before_it_stops_its_workers():
    """Pool.terminate kills a worker wherever it is: one killed while it sends a result leaves the pool's result
    thread waiting for the rest of the message, and terminate with it (a full disk in the middle of an ingest hung
    that way). The pool first waits for what it handed out."""
    handed = []
    with pytest.raises(OSError):
        with workers.pool(2, _Large, None) as pool:
            for _ in workers.imap_ordered(pool, range(40), ahead=8):
                handed = list(pool.handed)
                raise OSError("database or disk is full")
    assert len(handed) >= 2 and all(result.ready() for result in handed)
