"""Imports run one way: cli -> the application modules -> store -> templater's core; the library never prints.

The layers are stated once, in templater/__init__.py (APPLICATION_MODULES names the templater modules that work
over a store; every other templater module is core). These tests read the import statements (module level and
inside functions) of templater/, store/ and cli.py.
"""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from templater import APPLICATION_MODULES

ROOT = Path(__file__).resolve().parent.parent
FRONT_ENDS = ("cli", "typer", "rich", "click")
STORAGE = ("store", "sqlite_utils", "sqlite3", "pyspark")
NATIVE_CHOOSER = "templater.native"  # the one module that loads the compiled parts (templater._walk, _numeric) by name
CYCLES_LEFT: set[frozenset] = set()  # no import cycle is left


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


def dotted(path: Path) -> str:
    return "cli" if path == ROOT / "cli.py" else f"{path.parent.name}.{path.stem}"


OURS = {dotted(p): p for p in modules("templater") + modules("store") + [ROOT / "cli.py"]}
CORE = [p for p in modules("templater") if p.stem not in APPLICATION_MODULES]
APPLICATION = [p for p in modules("templater") if p.stem in APPLICATION_MODULES]


def test_application_modules_exist():
    assert APPLICATION_MODULES <= {p.stem for p in modules("templater")}


@pytest.mark.parametrize("path", CORE, ids=lambda p: p.stem)
def test_core_modules_touch_no_store_cli_or_application(path: Path):
    for name in imported(path):
        assert top(name) not in FRONT_ENDS + STORAGE, f"templater/{path.name} imports {name}"
        assert templater_module(name) not in APPLICATION_MODULES, f"templater/{path.name} imports {name} (upward)"


@pytest.mark.parametrize("path", modules("store"), ids=lambda p: p.stem)
def test_store_imports_only_core_modules(path: Path):
    for name in imported(path):
        assert top(name) not in FRONT_ENDS, f"store/{path.name} imports {name}"
        assert templater_module(name) not in APPLICATION_MODULES, f"store/{path.name} imports {name} (upward)"


@pytest.mark.parametrize("path", APPLICATION, ids=lambda p: p.stem)
def test_application_modules_never_import_the_cli(path: Path):
    for name in imported(path):
        assert top(name) not in FRONT_ENDS, f"templater/{path.name} imports {name}"


def module_aliases(tree: ast.AST, path: Path) -> dict[str, str]:
    """Local name -> our module, for every import of one of our modules (``from templater import pipeline``)."""
    package, aliases = path.parent.name, {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = f"{package}.{base}" if base else package
            aliases.update({alias.asname or alias.name: f"{base}.{alias.name}" for alias in node.names
                            if f"{base}.{alias.name}" in OURS})
        elif isinstance(node, ast.Import):
            aliases.update({alias.asname or alias.name: alias.name for alias in node.names if alias.name in OURS})
    return aliases


def private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_uses(path: Path) -> list[str]:
    """Private names of our other modules this one uses: ``from x import _y`` and ``x._y``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package, found = path.parent.name, []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = f"{package}.{base}" if base else package
            if top(base) in ("templater", "store", "cli"):
                found += [f"{base}.{alias.name}" for alias in node.names if private(alias.name)]
    aliases = module_aliases(tree, path)
    found += [f"{aliases[node.value.id]}.{node.attr}" for node in ast.walk(tree)
              if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases
              and private(node.attr)]
    if dotted(path) == NATIVE_CHOOSER:
        found = [name for name in found if name not in ("templater._walk", "templater._numeric", "templater._pairs")]
    return found


@pytest.mark.parametrize("path", list(OURS.values()), ids=dotted)
def test_no_private_name_crosses_modules(path: Path):
    assert not private_uses(path), f"{dotted(path)} uses private names of other modules: make them public"


def import_graph() -> dict[str, set[str]]:
    """Our module -> the modules of ours it imports (module level and inside functions)."""
    graph = defaultdict(set)
    for name, path in OURS.items():
        graph[name] |= {other for other in imported(path) if other in OURS and other != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> set[frozenset]:
    """The modules of every import cycle (as the sets of modules on it)."""
    found, state = set(), {}

    def visit(node: str, path: list[str]) -> None:
        state[node] = "open"
        path.append(node)
        for other in sorted(graph[node]):
            if state.get(other) == "open":
                found.add(frozenset(path[path.index(other):]))
            elif other not in state:
                visit(other, path)
        path.pop()
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [])
    return found


def test_no_new_import_cycle():
    assert cycles(import_graph()) <= CYCLES_LEFT


@pytest.mark.parametrize("path", modules("templater") + modules("store"), ids=lambda p: f"{p.parent.name}.{p.stem}")
def test_library_never_prints(path: Path):
    calls = [node.lineno for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
             if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print"]
    assert not calls, f"{path.parent.name}/{path.name} prints at lines {calls}: log, or return values to cli.py"


def test_no_module_is_named_like_a_standard_library_one():
    """A module named like one of the standard library's (types, inspect) shadows it where its folder comes first
    on sys.path (spark-submit runs cli.py as a script): none of ours is."""
    names = {path.stem for path in OURS.values()} | {"templater", "store", "cli"}
    assert not names & set(sys.stdlib_module_names)


def test_path_independent_modules_exist():
    """CI's pure-Python pass leaves out the modules conftest names PATH_INDEPENDENT: each name is a test module."""
    from conftest import PATH_INDEPENDENT

    modules = {path.stem for path in (ROOT / "tests").glob("test_*.py")}
    assert PATH_INDEPENDENT <= modules, sorted(PATH_INDEPENDENT - modules)
