"""Imports run one way: cli -> the pipeline layer -> store -> templater's pure modules; the library never prints.

The pipeline layer is the set of templater modules that talk to the store (PIPELINE_LAYER); every other templater
module is pure: no SQLite, no CLI, no Spark. A new module is pure unless it is added to that set on purpose.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PIPELINE_LAYER = {"pipeline", "recrawl", "dedup", "signature_run", "rule_inspect", "evaluation_run", "spark_job",
                  "workers"}
FRONT_ENDS = ("cli", "typer", "rich", "click")
STORAGE = ("store", "sqlite_utils", "sqlite3", "pyspark")


def imported(path: Path) -> set[str]:
    """Absolute dotted names of what a module imports: each module, and module.name for every `from` import."""
    package = path.parent.name
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = f"{package}.{base}" if base else package
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


def top(name: str) -> str:
    return name.split(".")[0]


def templater_module(name: str) -> str | None:
    parts = name.split(".")
    return parts[1] if parts[0] == "templater" and len(parts) > 1 else None


def modules(package: str) -> list[Path]:
    return sorted((ROOT / package).glob("*.py"))


@pytest.mark.parametrize("path", [p for p in modules("templater") if p.stem not in PIPELINE_LAYER],
                         ids=lambda p: p.stem)
def test_pure_modules_touch_no_store_cli_or_pipeline(path: Path):
    for name in imported(path):
        assert top(name) not in FRONT_ENDS + STORAGE, f"templater/{path.name} imports {name}"
        assert templater_module(name) not in PIPELINE_LAYER, f"templater/{path.name} imports {name} (upward)"


@pytest.mark.parametrize("path", modules("store"), ids=lambda p: p.stem)
def test_store_imports_only_pure_modules(path: Path):
    for name in imported(path):
        assert top(name) not in FRONT_ENDS, f"store/{path.name} imports {name}"
        assert templater_module(name) not in PIPELINE_LAYER, f"store/{path.name} imports {name} (upward)"


@pytest.mark.parametrize("path", [p for p in modules("templater") if p.stem in PIPELINE_LAYER], ids=lambda p: p.stem)
def test_pipeline_layer_never_imports_the_cli(path: Path):
    for name in imported(path):
        assert top(name) not in FRONT_ENDS, f"templater/{path.name} imports {name}"


@pytest.mark.parametrize("path", modules("templater") + modules("store"), ids=lambda p: f"{p.parent.name}.{p.stem}")
def test_library_never_prints(path: Path):
    calls = [node.lineno for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
             if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print"]
    assert not calls, f"{path.parent.name}/{path.name} prints at lines {calls}: log, or return values to cli.py"
