"""Thresholds and limits are named in templater/config.py (its docstring): a module keeps at its top only its own
format (bit masks, hash constants, file layouts, versions) and vocabulary. Read from the sources of templater/,
store/ and cli.py: every module-level name bound to a number outside config.py is one of FORMAT_NAMES or an alias
of a config name (``BATCH_PAGES = config.DEDUP_BATCH_PAGES``)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted([*ROOT.glob("templater/*.py"), *ROOT.glob("store/*.py"), ROOT / "cli.py"])
FORMAT_NAMES = {
    "store/lsh.py": {"PAD_KEY", "PAIR_SHIFT", "DOC_SPAN_BITS",  # the band key packing, a batch's rows packed
                     "BLOCK_ID_SHIFT", "BLOOM_BLOCK_BITS",  # lsh_blocks' row ids, the segment filters' layout
                     "PAGE_KEY_BASE"},  # the page keys' range in the band index
    "templater/chartable.py": {"UNICODE_SIZE", "TABLE_BYTES", "FORMAT_VERSION"},  # the table file's layout
    "templater/ann.py": {"WEIGHTS_CACHE_FORMAT"},  # the cached archive's layout
    "templater/codecache.py": {"FORMAT"},  # the cache file's layout
    "templater/parse.py": {"PARSE_OPTIONS"},  # libxml2's option bits of lxml's parser (as lxml derives them)
    "templater/rule_inspect.py": {"EXPORT_FORMAT"},
    "templater/shingles.py": {"ALGORITHM_VERSION", "VALUE_BITS", "GOLDEN", "MIX1", "MIX2", "CHAR_PRIME",
                              "NGRAM_BASE", "BAND_BASE", "MASK64", "SPACE", "BMP_END", "ANCHOR_TAG"},
    "templater/signatures.py": {"SIGNATURE_VERSION", "MASK32", "MASK63"},
    "templater/signature_run.py": {"SHARED", "LINKED"},  # the similarity labels of a signature cluster's members
    "templater/workers.py": {"PR_SET_PDEATHSIG"},  # Linux's prctl option
}


def numeric_names(path: Path) -> set[str]:
    """Module-level names bound to an expression of number literals (not containers, calls or other names)."""
    names = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if not isinstance(node, (ast.Assign, ast.AnnAssign)) or node.value is None:
            continue
        parts = list(ast.walk(node.value))
        if (any(isinstance(p, ast.Constant) and type(p.value) in (int, float) for p in parts)
                and all(isinstance(p, (ast.Constant, ast.BinOp, ast.UnaryOp, ast.operator, ast.unaryop, ast.Name,
                                       ast.Load)) for p in parts)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
    return names


@pytest.mark.parametrize("path", [p for p in SOURCES if p.name != "config.py"],
                         ids=lambda p: p.relative_to(ROOT).as_posix())
def test_numbers_at_a_module_top_are_its_format(path: Path):
    extra = numeric_names(path) - FORMAT_NAMES.get(path.relative_to(ROOT).as_posix(), set())
    assert not extra, f"{path.relative_to(ROOT)} names thresholds outside config.py: {sorted(extra)}"


def test_the_scan_finds_a_bare_threshold(tmp_path: Path):
    module = tmp_path / "module.py"
    module.write_text("LIMIT = 10\nSHARE = 1 - 0.25\nALIAS = config.LIMIT\nTAGS = {'p': 1}\n_CACHE = 1 << 16\n")
    assert numeric_names(module) == {"LIMIT", "SHARE", "_CACHE"}
