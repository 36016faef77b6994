"""Read-only queries behind the rule-inspection commands: template versions, a site's pages, coverage figures."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from templater.datatypes import Template

from .templates import load_rules, settings_dict, stored_settings

if TYPE_CHECKING:  # annotations only: a store opens without sqlite-utils (store.db.Database)
    import sqlite_utils


@dataclass(frozen=True, slots=True)
class TemplateRow:
    """One stored template version with its bookkeeping columns."""

    template: Template
    group_key: str
    current: bool
    settings: dict = field(default_factory=dict)  # the learning settings saved with it (config.LearnSettings)


_TEMPLATE_COLUMNS = "id, site, group_key, layout, version, page_count, learned_at, reason, stale, current, settings"


def _row(db: sqlite_utils.Database, r: tuple) -> TemplateRow:
    template = Template(site=r[1], version=r[4], rules=load_rules(db, r[0]), page_count=r[5], learned_at=r[6],
                        layout=r[3], reason=r[7], stale=bool(r[8]), settings=stored_settings(r[10]))
    return TemplateRow(template=template, group_key=r[2], current=bool(r[9]), settings=settings_dict(r[10]))


def current_templates(db: sqlite_utils.Database) -> list[TemplateRow]:
    """Every site's current template, by site."""
    return [_row(db, r) for r in db.execute(
        f"SELECT {_TEMPLATE_COLUMNS} FROM templates WHERE current = 1 ORDER BY site")]


def load_template(db: sqlite_utils.Database, site: str, version: int | None = None) -> TemplateRow | None:
    """A site's template: the given version, else the current one; None when there is no such template."""
    if version is None:
        r = db.execute(f"SELECT {_TEMPLATE_COLUMNS} FROM templates WHERE site = ? AND current = 1", [site]).fetchone()
    else:
        r = db.execute(f"SELECT {_TEMPLATE_COLUMNS} FROM templates WHERE site = ? AND version = ?",
                       [site, version]).fetchone()
    return _row(db, r) if r is not None else None


def site_versions(db: sqlite_utils.Database, site: str) -> list[int]:
    return [r[0] for r in db.execute("SELECT version FROM templates WHERE site = ? ORDER BY version", [site])]


def site_page_counts(db: sqlite_utils.Database) -> dict[str, int]:
    """Site -> number of live pages the last build assigned to it."""
    return dict(db.execute("SELECT site, count(*) FROM pages WHERE retired = 0 AND site IS NOT NULL GROUP BY site"))


def site_page_ids(db: sqlite_utils.Database, site: str) -> list[str]:
    """Ids of a site's live pages, in id order."""
    return [r[0] for r in db.execute("SELECT id FROM pages WHERE site = ? AND retired = 0 ORDER BY id", [site])]


def template_coverages(db: sqlite_utils.Database) -> dict[str, list[float]]:
    """Template name ("<site>@v<version>") -> coverage of each stored extraction made with it."""
    out: dict[str, list[float]] = {}
    for name, coverage in db.execute("SELECT template, coverage FROM extractions"
                                     " WHERE template IS NOT NULL AND coverage IS NOT NULL ORDER BY template"):
        out.setdefault(name, []).append(coverage)
    return out


def page_id_for_url(db: sqlite_utils.Database, url: str) -> str | None:
    """Id of the live stored page with this URL (the first by id when several share it), or None."""
    row = db.execute("SELECT id FROM pages WHERE url = ? AND retired = 0 ORDER BY id LIMIT 1", [url]).fetchone()
    return row[0] if row is not None else None
