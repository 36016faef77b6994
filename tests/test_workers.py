"""Worker processes: a worker whose parent died before it could ask to die with it ends at once."""

import os

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
