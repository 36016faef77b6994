"""Rule actions and match words are defined once (templater.datatypes: RuleAction, RuleMatch, LEARNED_MATCH,
MATCH_ACTIONS): no module compares with, chooses or maps to one of their words as a string literal. These tests
read the code of templater/, store/ and cli.py."""

from __future__ import annotations

import ast
from pathlib import Path

from templater.datatypes import LEARNED_MATCH, MATCH_ACTIONS, RuleAction, RuleMatch

ROOT = Path(__file__).resolve().parent.parent
DEFINED_IN = ROOT / "templater" / "datatypes.py"
WORDS = frozenset(RuleAction) | frozenset(RuleMatch)
ENUMS = frozenset({"RuleAction", "RuleMatch"})


def _words(node: ast.AST) -> list[ast.Constant]:
    """The vocabulary's string literals at node, or directly inside a tuple, list or set there."""
    items = node.elts if isinstance(node, (ast.Tuple, ast.List, ast.Set)) else [node]
    return [n for n in items if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value in WORDS]


def _names_enum(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in ENUMS


def _is_tag(node: ast.AST) -> bool:
    """element.tag: an HTML tag name ("meta"), not the rules' vocabulary."""
    return isinstance(node, ast.Attribute) and node.attr == "tag"


_VALUES = (ast.Name, ast.Attribute, ast.Call, ast.Subscript, ast.UnaryOp)  # what a tuple built with values holds


def stray_literals(source: str) -> list[tuple[int, str]]:
    """(line, word) of each vocabulary word written as a literal where the code compares with it (==, in), chooses
    it (a conditional expression, a lookup's default) or maps to or from it beside an enum member (a dict literal
    with RuleAction.X or RuleMatch.X in it, a tuple built with values)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare) and not any(map(_is_tag, [node.left, *node.comparators])):
            for side in (node.left, *node.comparators):
                found += _words(side)
        elif isinstance(node, ast.IfExp):
            found += _words(node.body) + _words(node.orelse)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
            found += _words(node.args[1]) if len(node.args) > 1 else []
        elif isinstance(node, ast.Dict):
            parts = [n for n in (*node.keys, *node.values) if n is not None]
            if any(_names_enum(n) or any(map(_names_enum, getattr(n, "elts", []))) for n in parts):
                for part in parts:
                    found += _words(part)
        elif isinstance(node, ast.Tuple) and any(isinstance(n, _VALUES) for n in node.elts):
            found += _words(node)
    return sorted({(n.lineno, n.value) for n in found})


def test_no_module_spells_a_rule_action_or_match_word_as_a_literal():
    paths = [*sorted((ROOT / "templater").glob("*.py")), *sorted((ROOT / "store").glob("*.py")), ROOT / "cli.py"]
    strays = {str(p.relative_to(ROOT)): stray_literals(p.read_text(encoding="utf-8")) for p in paths
              if p != DEFINED_IN}
    assert {path: lines for path, lines in strays.items() if lines} == {}


def test_the_check_finds_each_kind_of_stray_literal():
    source = '''
if rule.action == "drop-shape": pass
if match in ("region", "container"): pass
kind = "xpath" if rule.pinned else learned
match = item.get("matched_by", "hash")
BY = {RuleAction.DROP: "hash", RuleAction.CONTENT: "region"}
identity = ("shape", rule.tag_path)
json_fields = {"xpath": rule.xpath, "hash": rule.hash}
is_meta = element.tag == "meta"
fields = ("xpath", "support")
GROUPS = (("meta", ("byline", "author")), ("content", ("article",)))
'''
    assert stray_literals(source) == [(2, "drop-shape"), (3, "container"), (3, "region"), (4, "xpath"), (5, "hash"),
                                      (6, "hash"), (6, "region"), (7, "shape")]


def test_every_action_has_its_learned_match_and_every_match_its_actions():
    assert set(LEARNED_MATCH) == set(RuleAction)
    assert set(MATCH_ACTIONS) == set(RuleMatch)
    for action, match in LEARNED_MATCH.items():
        assert action in MATCH_ACTIONS[match]
