"""Versioned templates and their rules.

Tables: ``templates`` (one row per version of a site layout's template) and ``rules`` (its XPath rules, in a
stable order). Browsable with ordinary SQLite tools: ``sqlite-utils rows templater.db rules``.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np

from templater.config import LearnSettings
from templater.datatypes import Rule, RuleAction, Template

from .db import migrate
from .pages import blob_vector, vector_blob

if TYPE_CHECKING:  # annotations only: a store opens without sqlite-utils (store.db.Database)
    import sqlite_utils


def _v1(db: sqlite_utils.Database) -> None:
    db.execute("""CREATE TABLE templates (
        id INTEGER PRIMARY KEY, site TEXT NOT NULL, group_key TEXT NOT NULL, layout INTEGER NOT NULL,
        version INTEGER NOT NULL, page_count INTEGER NOT NULL, rule_count INTEGER NOT NULL,
        learned_at TEXT NOT NULL, reason TEXT NOT NULL, stale INTEGER NOT NULL DEFAULT 0, current INTEGER NOT NULL,
        layout_shapes BLOB NOT NULL, settings TEXT NOT NULL, UNIQUE (site, version))""")
    db.execute("CREATE INDEX templates_group ON templates(group_key, current)")
    db.execute("""CREATE TABLE rules (
        template_id INTEGER NOT NULL REFERENCES templates(id) ON DELETE CASCADE, position INTEGER NOT NULL,
        action TEXT NOT NULL, xpath TEXT NOT NULL, tag_path TEXT, hash INTEGER, support REAL NOT NULL,
        sample TEXT, pinned INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (template_id, position))""")


# The settings a template saved before the thresholds extraction reads were saved with it (and before some of
# learning's) was made and applied with: the values of config.py on the day of migration 2, written into each
# template's settings where it lacks them (literals: a later config.py must not change what old templates extract)
V2_SETTINGS = {
    "min_group_pages": 3, "min_template_pages": 3, "layout_similarity": 0.30, "layout_match": 0.6,
    "static_support": 0.5, "min_static_pages": 2, "shape_support": 0.5, "shape_max_chars": 60,
    "shape_max_link_density": 0.5, "max_learn_pages": 60, "comment_support": 0.2, "meta_support": 0.5,
    "meta_precision": 0.8, "meta_visible_support": 0.5, "meta_min_values": 2, "layout_sample": 200, "learn_seed": 7,
    "reference_candidates": 15, "near_copy": 0.8, "near_copy_chars": 80, "near_copy_common_pages": 3,
    "region_text_share": 0.8, "region_page_share": 0.5, "linked_headings_per_page": 2, "region_chrome_share": 0.1,
    "row_cells": 2, "link_run": 3, "wrapper_depth": 3, "region_min_share": 0.5, "paragraph_chars": 80,
    "own_content_gap": 3, "own_content_links": 0.5,
}


def _v2(db: sqlite_utils.Database) -> None:
    """Every template's settings complete: what it lacks, the values it was made and applied with (V2_SETTINGS)."""
    _complete_settings(db, V2_SETTINGS)


def _complete_settings(db: sqlite_utils.Database, values: dict) -> None:
    """Each template's saved settings with ``values`` where it lacks them."""
    rows = db.execute("SELECT id, settings FROM templates").fetchall()
    db.conn.executemany("UPDATE templates SET settings = ? WHERE id = ?",
                        [(json.dumps({**values, **settings_dict(text)}, sort_keys=True), template_id)
                         for template_id, text in rows])


# What templates saved before migration 3 were chosen, applied and learned with besides (the layout match already
# was saved): the single-page classifier's thresholds behind a template, the repeat length, the tag lists learning
# and extraction read, the related boxes' share and the layout signature's, as config.py had them on the day of
# migration 3 (literals, as V2_SETTINGS)
V3_SETTINGS = {
    "repeat_min_chars": 100, "text_structure_paths": ["/dl/", "/pre/"],
    "list_items": [["dl", "dd"], ["dl", "dt"], ["ol", "li"], ["ul", "li"]], "allowed_threshold": 0.3,
    "trusted_threshold": 0.05, "region_link_density": 0.5,
    "region_chrome_groups": ["nav", "related", "share", "account", "ad", "comment", "hidden"],
    "region_chrome_tags": ["aside", "footer", "form", "header", "nav"], "protected_tags": ["dl", "pre", "table"],
    "chrome_tags": ["aside", "footer", "form", "header", "nav"], "heading_tags": ["h1", "h2", "h3", "h4", "h5", "h6"],
    "label_tags": ["caption", "dt", "h1", "h2", "h3", "h4", "h5", "h6", "legend", "summary", "th"],
    "content_tags": ["article", "main"], "structure_tags": ["dl", "pre", "table"], "list_tags": ["menu", "ol", "ul"],
    "nav_paths": ["/nav/", "/aside/"], "related_max_share": 0.3, "layout_shape_share": 0.5, "name_line_blocks": 3,
}


def _v3(db: sqlite_utils.Database) -> None:
    """Every template's settings complete again: what it lacks, the values of V3_SETTINGS."""
    _complete_settings(db, V3_SETTINGS)


# What templates saved before migration 4 were learned with besides: the share of the larger own text that the
# smaller must have for two pages to count as one when learning (near_copy_size; config.py's value that day), and
# no second near-copy test (near_copy_shared 1.0: only a page wholly inside the other passes it, which the first
# test passes too), with blocks of links in the own text (near_copy_links 1.0)
V4_SETTINGS = {"near_copy_size": 0.3, "near_copy_links": 1.0, "near_copy_shared": 1.0}


def _v4(db: sqlite_utils.Database) -> None:
    """Every template's settings complete again: what it lacks, the values of V4_SETTINGS."""
    _complete_settings(db, V4_SETTINGS)


# What templates saved before migration 5 were learned with besides: the second near-copy test's last share read
# near_copy (0.8 in every template saved: V2_SETTINGS) where it now reads near_copy_lone
V5_SETTINGS = {"near_copy_lone": 0.8}


def _v5(db: sqlite_utils.Database) -> None:
    """Every template's settings complete again: what it lacks, the values of V5_SETTINGS."""
    _complete_settings(db, V5_SETTINGS)


# What templates saved before migration 6 were learned with besides: the near-copy tests read block by block
# (near_copy_lines off: a run of one element's lines was as many short texts)
V6_SETTINGS = {"near_copy_lines": False}


def _v6(db: sqlite_utils.Database) -> None:
    """Every template's settings complete again: what it lacks, the values of V6_SETTINGS."""
    _complete_settings(db, V6_SETTINGS)


# What templates saved before migration 7 were learned with besides: a heading named like comments was dropped
# itself, and what follows it was not (comment_headings off)
V7_SETTINGS = {"comment_headings": False}


def _v7(db: sqlite_utils.Database) -> None:
    """Every template's settings complete again: what it lacks, the values of V7_SETTINGS."""
    _complete_settings(db, V7_SETTINGS)


MIGRATIONS = [_v1, _v2, _v3, _v4, _v5, _v6, _v7]


def ensure_schema(db: sqlite_utils.Database) -> None:
    migrate(db, "templates", MIGRATIONS)


def save_template(db: sqlite_utils.Database, template: Template, *, group_key: str,
                  layout_shapes: np.ndarray) -> tuple[Template, bool]:
    """Store a template (with its settings) as the site's new current version unless its rules and settings equal
    the current ones.

    Returns the stored template (with its version) and whether a new version was written. Call inside a
    transaction.
    """
    current = db.execute("SELECT id, version, settings FROM templates WHERE site = ? AND current = 1",
                         [template.site]).fetchone()
    settings = template.settings.to_dict()
    if current is not None and _rule_key(load_rules(db, current[0])) == _rule_key(template.rules) and settings_dict(
            current[2]) == settings:
        db.execute("UPDATE templates SET page_count = ?, layout_shapes = ? WHERE id = ?",
                   [template.page_count, vector_blob(layout_shapes), current[0]])
        return _with_version(template, current[1]), False
    last = db.execute("SELECT max(version) FROM templates WHERE site = ?", [template.site]).fetchone()[0] or 0
    db.execute("UPDATE templates SET current = 0 WHERE site = ?", [template.site])
    cursor = db.execute(
        "INSERT INTO templates (site, group_key, layout, version, page_count, rule_count, learned_at, reason, stale,"
        " current, layout_shapes, settings) VALUES (?,?,?,?,?,?,?,?,0,1,?,?)",
        [template.site, group_key, template.layout, last + 1, template.page_count, len(template.rules),
         template.learned_at, template.reason, vector_blob(layout_shapes), json.dumps(settings, sort_keys=True)])
    db.conn.executemany(
        "INSERT INTO rules (template_id, position, action, xpath, tag_path, hash, support, sample, pinned)"
        " VALUES (?,?,?,?,?,?,?,?,?)",
        [(cursor.lastrowid, i, r.action, r.xpath, r.tag_path, r.hash, r.support, r.sample, int(r.pinned))
         for i, r in enumerate(template.rules)])
    return _with_version(template, last + 1), True


def _rule_key(rules) -> list:
    return [(r.action, r.tag_path, r.hash, r.xpath if r.action != RuleAction.DROP else "") for r in rules]


def _with_version(template: Template, version: int) -> Template:
    return Template(site=template.site, version=version, rules=template.rules, page_count=template.page_count,
                    learned_at=template.learned_at, layout=template.layout, reason=template.reason,
                    stale=template.stale, settings=template.settings)


def load_rules(db: sqlite_utils.Database, template_id: int) -> tuple[Rule, ...]:
    return tuple(Rule(xpath=r[0], action=r[1], support=r[2], tag_path=r[3] or "", hash=r[4], sample=r[5] or "",
                      pinned=bool(r[6]))
                 for r in db.execute("SELECT xpath, action, support, tag_path, hash, sample, pinned FROM rules"
                                     " WHERE template_id = ? ORDER BY position", [template_id]))


def load_rules_lean(db: sqlite_utils.Database, template_id: int) -> tuple[list[int], tuple[Rule, ...]]:
    """(the hashes of the template's static rules (drop, with a hash) in order, its other rules in order): what
    extraction compiles, without making a Rule of each of the many static rules (``load_rules`` makes them all)."""
    static = [r[0] for r in db.execute("SELECT hash FROM rules WHERE template_id = ? AND action = ? AND hash IS NOT"
                                       " NULL ORDER BY position", [template_id, RuleAction.DROP])]
    others = tuple(Rule(xpath=r[0], action=r[1], support=r[2], tag_path=r[3] or "", hash=r[4], sample=r[5] or "",
                        pinned=bool(r[6]))
                   for r in db.execute("SELECT xpath, action, support, tag_path, hash, sample, pinned FROM rules"
                                       " WHERE template_id = ? AND NOT (action = ? AND hash IS NOT NULL)"
                                       " ORDER BY position", [template_id, RuleAction.DROP]))
    return static, others


def settings_dict(text: str | None) -> dict:
    """A template's saved settings as a dict (empty when the text is not a JSON object)."""
    try:
        values = json.loads(text or "{}")
    except json.JSONDecodeError:
        return {}
    return values if isinstance(values, dict) else {}


@functools.lru_cache(maxsize=256)
def stored_settings(text: str | None) -> LearnSettings:
    """The settings saved with a template, as the dataclass extraction applies it with (made once a distinct
    text: a crawl's templates mostly share theirs; LearnSettings is frozen)."""
    return LearnSettings.from_stored(settings_dict(text))


_TEMPLATE_COLUMNS = ("id, site, group_key, layout, version, page_count, learned_at, reason, stale, layout_shapes,"
                     " settings")


def _template(db: sqlite_utils.Database, row: tuple, rules: tuple[Rule, ...] | None = None) -> Template:
    return Template(site=row[1], version=row[4], rules=load_rules(db, row[0]) if rules is None else rules,
                    page_count=row[5], learned_at=row[6], layout=row[3], reason=row[7], stale=bool(row[8]),
                    settings=stored_settings(row[10]))


def iter_current(db: sqlite_utils.Database) -> Iterator[tuple[str, np.ndarray, Template]]:
    """(group_key, layout shape set, template) of every site's current version."""
    for row in db.execute(f"SELECT {_TEMPLATE_COLUMNS} FROM templates WHERE current = 1 ORDER BY site"):
        yield row[2], blob_vector(row[9]), _template(db, row)


def iter_current_heads(db: sqlite_utils.Database) -> Iterator[tuple[str, np.ndarray, str, int, float]]:
    """(group_key, layout shape set, site, template id, its layout_match: the share of its layout a page must hold
    to be given it) of every site's current version, in ``iter_current`` order, without the rules
    (``load_template`` reads them)."""
    for group, blob, site, template_id, text in db.execute(
            "SELECT group_key, layout_shapes, site, id, settings FROM templates WHERE current = 1 ORDER BY site"):
        yield group, blob_vector(blob), site, template_id, layout_match(text)


def current_id(db: sqlite_utils.Database, site: str) -> int | None:
    """The id of a site's current template version, None for a site without one."""
    row = db.execute("SELECT id FROM templates WHERE site = ? AND current = 1", [site]).fetchone()
    return None if row is None else row[0]


def current_layouts(db: sqlite_utils.Database, group: str) -> Iterator[tuple[np.ndarray, str, float]]:
    """(layout shape set, site, layout_match) of each current template of a URL group, in ``iter_current_heads``
    order (by site): that group's share of it, read alone."""
    for blob, site, text in db.execute("SELECT layout_shapes, site, settings FROM templates WHERE group_key = ? AND"
                                       " current = 1 ORDER BY site", [group]):
        yield blob_vector(blob), site, layout_match(text)


def layout_match(text: str | None) -> float:
    """The layout_match a template saved (``text``: its settings), LearnSettings' default where it saved none."""
    value = settings_dict(text).get("layout_match")
    return LearnSettings.layout_match if value is None else value


def load_template(db: sqlite_utils.Database, template_id: int) -> Template:
    """One stored template version with its rules."""
    row = db.execute(f"SELECT {_TEMPLATE_COLUMNS} FROM templates WHERE id = ?", [template_id]).fetchone()
    return _template(db, row)


def load_template_lean(db: sqlite_utils.Database, template_id: int) -> tuple[Template, list[int]]:
    """One stored template version without its static rules: (the template with its other rules, the static
    rules' hashes in order), as load_rules_lean reads them."""
    row = db.execute(f"SELECT {_TEMPLATE_COLUMNS} FROM templates WHERE id = ?", [template_id]).fetchone()
    static, others = load_rules_lean(db, template_id)
    return _template(db, row, others), static
