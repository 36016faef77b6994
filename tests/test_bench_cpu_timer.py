"""bench/cpu_timer.py: the CPU timers the in-process benches wrap a library's steps with."""

import subprocess
import sys
import time
import types

import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT / "bench"))
from cpu_timer import time_attribute, timed  # noqa: E402


def busy(seconds: float) -> float:
    """Spin for about ``seconds`` of CPU time; the CPU time it took."""
    began = time.process_time()
    while time.process_time() - began < seconds:
        pass
    return time.process_time() - began


def test_timed_adds_each_calls_cpu_time_under_its_key_and_counts_calls():
    spent, calls, seen = {}, {}, []

    def work(seconds, label="x"):
        """Some work."""
        return busy(seconds), label

    run = timed(work, spent, "work", calls=calls, before=lambda *a, **k: seen.append((a, k)))
    assert run.__name__ == "work" and run.__doc__ == "Some work." and run.__wrapped__ is work
    took = [run(0.02)[0], run(0.01, label="y")[0]]
    assert run(0.0, label="z")[1] == "z"
    assert calls == {"work": 3}
    assert seen == [((0.02,), {}), ((0.01,), {"label": "y"}), ((0.0,), {"label": "z"})]
    assert sum(took) <= spent["work"] < sum(took) + 0.05


def test_timed_records_a_call_that_raises():
    spent, calls = {"boom": 1.0}, {}

    def boom():
        busy(0.005)
        raise ValueError("no")

    with pytest.raises(ValueError, match="no"):
        timed(boom, spent, "boom", calls=calls)()
    assert spent["boom"] >= 1.005 and calls == {"boom": 1}


def test_time_attribute_wraps_a_modules_function_and_a_classs_method():
    module = types.ModuleType("steps")
    module.step = lambda n: n + 1

    class Owner:
        def method(self, n):
            return 2 * n

    spent, calls = {}, {}
    time_attribute(module, "step", spent)
    time_attribute(Owner, "method", spent, "the method", calls=calls)
    assert module.step(1) == 2 and Owner().method(3) == 6
    assert set(spent) == {"step", "the method"} and calls == {"the method": 1}


def test_the_timer_imports_nothing_of_the_project():
    """A bench can import it before it loads the checkout its arguments name."""
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import cpu_timer; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('templater', 'store', 'cli')))")
    out = subprocess.run([sys.executable, "-c", code, str(ROOT / "bench")], capture_output=True, text=True,
                         check=True, cwd="/")
    assert out.stdout.strip() == "[]"
