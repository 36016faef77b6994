"""Pinned rules: a site's rule set edited by a person and imported from a rules file.

While a site has pinned rules they replace its learned rules, whatever version a later build learns, until they
are removed. Table ``pinned_rules``, one row a rule in the file's order::

    sqlite-utils rows templater.db pinned_rules --where "site = 'sqlite.org/'"

``matched_by`` says how a rule finds blocks: ``hash`` (a learned static rule: this tag path with this text),
``shape`` (a learned dynamic rule: this tag path), ``container`` (a learned container rule, such as reader
comments: blocks under what its XPath selects, unless that holds the headline), ``region`` (a learned content
region: blocks under this XPath, when it holds most of the text) or ``xpath`` (a hand-written rule: its XPath is
evaluated on every page; ``drop`` removes the blocks at or under what it selects, ``content`` keeps only those).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING

from templater.datatypes import LEARNED_MATCH, Rule, RuleMatch, Template

from .db import migrate

if TYPE_CHECKING:  # annotations only: a store opens without sqlite-utils (store.db.Database)
    import sqlite_utils

PINNED_REASON = "pinned"  # Template.reason of a template whose rules are the site's pinned rules


def _v1(db: sqlite_utils.Database) -> None:
    db.execute("""CREATE TABLE pinned_rules (
        site TEXT NOT NULL, position INTEGER NOT NULL, action TEXT NOT NULL, matched_by TEXT NOT NULL,
        xpath TEXT NOT NULL, tag_path TEXT, hash INTEGER, support REAL, sample TEXT, note TEXT,
        imported_at TEXT NOT NULL, PRIMARY KEY (site, position))""")


MIGRATIONS = [_v1]


def ensure_schema(db: sqlite_utils.Database) -> None:
    migrate(db, "pins", MIGRATIONS)


def matched_by(rule: Rule) -> RuleMatch:
    """How a rule finds its blocks: RuleMatch.XPATH for a pinned XPath rule, else its learned kind."""
    return RuleMatch.XPATH if rule.pinned else LEARNED_MATCH[rule.action]


def save_pins(db: sqlite_utils.Database, site: str, pins: Sequence[tuple[Rule, str]], *, now: str) -> None:
    """Replace a site's pinned rules with ``pins`` ((rule, note) pairs, in order). Call inside a transaction."""
    db.execute("DELETE FROM pinned_rules WHERE site = ?", [site])
    db.conn.executemany(
        "INSERT INTO pinned_rules (site, position, action, matched_by, xpath, tag_path, hash, support, sample, note,"
        " imported_at) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
        [(site, i, r.action, matched_by(r), r.xpath, r.tag_path or None, r.hash, r.support, r.sample, note or None,
          now) for i, (r, note) in enumerate(pins)])


def load_pins(db: sqlite_utils.Database, site: str) -> list[tuple[Rule, str]]:
    """A site's pinned rules with their notes, in order; empty when it has none."""
    rows = db.execute("SELECT action, matched_by, xpath, tag_path, hash, support, sample, note FROM pinned_rules"
                      " WHERE site = ? ORDER BY position", [site])
    return [(Rule(xpath=r[2], action=r[0], support=r[5] or 0.0, tag_path=r[3] or "", hash=r[4], sample=r[6] or "",
                  pinned=r[1] == RuleMatch.XPATH), r[7] or "") for r in rows]


def pinned_sites(db: sqlite_utils.Database) -> dict[str, tuple[int, str]]:
    """Site -> (number of pinned rules, when they were imported)."""
    return {r[0]: (r[1], r[2]) for r in db.execute(
        "SELECT site, count(*), max(imported_at) FROM pinned_rules GROUP BY site ORDER BY site")}


def remove_pins(db: sqlite_utils.Database, site: str) -> int:
    """Delete a site's pinned rules (its learned rules apply again); returns how many were removed."""
    return db.execute("DELETE FROM pinned_rules WHERE site = ?", [site]).rowcount


def apply_pins(db: sqlite_utils.Database, template: Template) -> Template:
    """The template with its site's pinned rules in place of the learned ones, when the site has any."""
    pins = load_pins(db, template.site)
    if not pins:
        return template
    return dataclasses.replace(template, rules=tuple(rule for rule, _ in pins), reason=PINNED_REASON)
