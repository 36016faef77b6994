import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
SHARED = Path(os.environ.get("TEMPLATER_SHARED", ROOT.parent / "shared"))
SAMPLES = ROOT / "samples"

# Test modules whose outcome does not depend on which path runs (native.py: compiled, or the pure-Python
# definitions): command-line surfaces and option values, stores, reports, recrawl bookkeeping, kill-and-resume,
# the bench scripts, the sources' framing, the codebase's own checks. Everything they compute goes through modules
# whose pure path the other tests run. CI's pure-Python pass leaves them out (`-m "not path_independent"`); the
# compiled pass runs every test.
PATH_INDEPENDENT = frozenset({
    "test_bench_commands", "test_bench_cpu_timer", "test_bench_index_paired", "test_bench_probe_memory", "test_bench_scale",
    "test_cli_eval", "test_cli_output", "test_cli_rules", "test_cli_surfaces", "test_cli_teardown",
    "test_cli_values", "test_codecache", "test_config", "test_docs", "test_evaluation", "test_layering",
    "test_recrawl", "test_recrawl_output", "test_report", "test_resume", "test_rule_inspect",
    "test_samples_meta", "test_sources", "test_spark", "test_store_db", "test_store_pages", "test_typed_set",
    "test_unionfind", "test_workers",
})


def pytest_configure(config):
    config.addinivalue_line("markers", "path_independent: the test's outcome is the same on the compiled and the "
                                       "pure-Python path (tests/conftest.py: PATH_INDEPENDENT)")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.path.stem in PATH_INDEPENDENT:
            item.add_marker(pytest.mark.path_independent)


def shared_corpus() -> Path:
    corpus = SHARED / "corpus"
    if not corpus.is_dir():
        pytest.skip("../shared/corpus is absent (a user's clone has none)")
    return corpus
