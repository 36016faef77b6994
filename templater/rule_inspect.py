"""Rule inspection: what each site's template removes, why a block went missing, what changed between versions,
and rules pinned by hand.

Each public function is what one ``templater rules`` command calls; they read the store and write to it only to
import or remove pinned rules. A page is explained by running the same code extraction runs (``match_template``,
``extract_page``) and then naming, for each block, the first rule that removed it, in the order the template
applies them: learned static rule, learned shape rule, learned container rule, pinned XPath rule, content
region, then the single-page classifier.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import multiprocessing
import re
import statistics
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from lxml import etree

from store import inspection as views
from store import pages as page_store
from store import pins as pin_store
from store.db import transaction

from . import config
from .config import PIN_SAMPLE_PAGES, REPORT_MAX_PAGES, SAMPLE_CHARS, LearnSettings
from .errors import InputError, RuleError
from .extract import (CompiledTemplate, container_mask, extract_page, match_regions, name_line, nested_rule,
                      pinned_mask, without_paragraphs)
from .fallback import OUTSIDE_TRUSTED, drop_reasons, select_blocks
from .metadata import META_ACTIONS
from .parse import compile_xpath
from .pipeline import Progress, TemplateIndex, now, segment_file, stored_segment
from .template import (content_ancestry, declared_content, interleaved_blocks, link_runs, repeated_chrome,
                       varying_rows)
from .report import (CLASSIFIER, FALLBACK_PREFIX, NAME_LINE, OUTSIDE_REGION, PINNED_RULE, TEMPLATE_ONLY,
                     BlockDecision, PageCoverage, PageExplanation, ReportData, TemplateSummary, render_report, shorten)
from .datatypes import MATCH_ACTIONS, Rule, RuleAction, RuleMatch, Segmented, Skip

if TYPE_CHECKING:  # annotations only: a store opens without sqlite-utils (store.db.Database)
    import sqlite_utils

log = logging.getLogger(__name__)

matched_by = pin_store.matched_by
__all__ = ["BlockDecision", "PageExplanation", "TemplateSummary", "SiteRules", "RuleDiff", "RuleChange",
           "list_templates", "show_rules", "explain_page", "explain_blocks", "test_rules", "diff_rules",
           "export_rules", "read_rules_file", "import_rules", "remove_pinned", "build_report", "check_xpath",
           "matched_by", "rule_json", "shorten"]

ACTIONS = tuple(RuleAction)
RULE_KEYS = frozenset({"action", "matched_by", "xpath", "tag_path", "hash", "support", "sample", "note"})
EXPORT_FORMAT = 1  # version of the rules file layout
EXPORT_HELP = ("Edit, then `templater rules import --db DB FILE`: the rules become the site's pinned rules and "
               "replace its learned ones until `templater rules remove-pinned --db DB SITE`. matched_by: 'xpath' "
               "(default) evaluates the XPath on every page: action 'drop' removes the blocks at or under what it "
               "selects, 'content' keeps only those, 'meta-author' and 'meta-date' read the page's byline and "
               "publication date from the first element it selects (when the page declares none); 'hash', 'shape', "
               "'container', 'region' and 'meta' are learned rules "
               "kept as they were learned (the XPath of a 'hash' rule is where it was seen). Delete a rule to stop "
               "it.")


# --- what the commands return ------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class SiteRules:
    """A template version's rules and the site's pinned rules (with their notes)."""

    site: str
    version: int
    current: bool
    learned_at: str
    pages: int
    learned: tuple[Rule, ...]
    pinned: tuple[tuple[Rule, str], ...]
    settings: dict = dataclasses.field(default_factory=dict)  # the learning settings saved with the version

    def to_json(self) -> dict:
        return {"site": self.site, "version": self.version, "current": self.current, "learned_at": self.learned_at,
                "pages": self.pages, "settings": self.settings,
                "rules": [rule_json(r, i) for i, r in enumerate(self.learned)],
                "pinned_rules": [rule_json(r, i, note=n) for i, (r, n) in enumerate(self.pinned)]}


@dataclass(frozen=True, slots=True)
class RuleChange:
    position_before: int
    position_after: int
    before: Rule
    after: Rule
    fields: tuple[str, ...]  # what changed: "xpath", "support"

    def to_json(self) -> dict:
        return {"fields": list(self.fields), "before": rule_json(self.before, self.position_before),
                "after": rule_json(self.after, self.position_after)}


@dataclass(frozen=True, slots=True)
class RuleDiff:
    site: str
    old: int
    new: int
    added: tuple[tuple[int, Rule], ...]
    removed: tuple[tuple[int, Rule], ...]
    changed: tuple[RuleChange, ...]
    unchanged: int

    def to_json(self) -> dict:
        return {"site": self.site, "old": self.old, "new": self.new,
                "added": [rule_json(r, i) for i, r in self.added],
                "removed": [rule_json(r, i) for i, r in self.removed],
                "changed": [c.to_json() for c in self.changed], "unchanged": self.unchanged}


def rule_json(rule: Rule, position: int, *, note: str | None = None) -> dict:
    """A rule as the JSON the commands print and the rules file holds."""
    out = {"position": position, "action": rule.action, "matched_by": pin_store.matched_by(rule), "xpath": rule.xpath,
           "support": rule.support, "sample": rule.sample}
    if not rule.pinned and rule.action in (RuleAction.DROP, RuleAction.DROP_SHAPE):
        out["tag_path"] = rule.tag_path
    if not rule.pinned and rule.action == RuleAction.DROP:
        out["hash"] = rule.hash
    if note is not None:
        out["note"] = note
    return out


# --- list, show, diff ---------------------------------------------------------------------------------------

def list_templates(db: sqlite_utils.Database) -> list[TemplateSummary]:
    """Every site group's current template with its page count, rule count, median coverage and staleness."""
    pin_store.ensure_schema(db)
    counts, coverages, pins = views.site_page_counts(db), views.template_coverages(db), pin_store.pinned_sites(db)
    return [_summary(row, counts, coverages, pins) for row in views.current_templates(db)]


def _summary(row: views.TemplateRow, counts: dict, coverages: dict, pins: dict) -> TemplateSummary:
    t = row.template
    values = coverages.get(f"{t.site}@v{t.version}")
    return TemplateSummary(site=t.site, version=t.version, pages=counts.get(t.site, 0), rules=len(t.rules),
                           pinned=pins.get(t.site, (0, ""))[0],
                           median_coverage=round(statistics.median(values), 4) if values else None,
                           learned_at=t.learned_at, stale=t.stale, learned_from=t.page_count)


def show_rules(db: sqlite_utils.Database, site: str, *, version: int | None = None) -> SiteRules:
    """A site's rules (the current version unless one is given) and its pinned rules."""
    pin_store.ensure_schema(db)
    row = _template_row(db, site, version)
    pages = views.site_page_counts(db).get(site, 0)
    return SiteRules(site=site, version=row.template.version, current=row.current,
                     learned_at=row.template.learned_at, pages=pages, learned=row.template.rules,
                     pinned=tuple(pin_store.load_pins(db, site)), settings=row.settings)


def _template_row(db: sqlite_utils.Database, site: str, version: int | None = None) -> views.TemplateRow:
    row = views.load_template(db, site, version)
    if row is not None:
        return row
    versions = views.site_versions(db, site)
    if versions:
        raise InputError(f"site {site!r} has no template version {version}: it has versions "
                         f"{', '.join(map(str, versions))}")
    raise InputError(f"no template for site {site!r}: `templater rules list --db DB` lists the sites "
                     "(run `templater build` first if it lists none)")


def diff_rules(db: sqlite_utils.Database, site: str, old: int, new: int) -> RuleDiff:
    """Rules added, removed and changed (same rule, other XPath or support) from version ``old`` to ``new``."""
    before, after = _template_row(db, site, old).template.rules, _template_row(db, site, new).template.rules
    left, right = _keyed(before), _keyed(after)
    changed = []
    for key in left.keys() & right.keys():
        (i, a), (j, b) = left[key], right[key]
        fields = tuple(f for f in ("xpath", "support") if getattr(a, f) != getattr(b, f))
        if fields:
            changed.append(RuleChange(i, j, a, b, fields))
    return RuleDiff(site=site, old=old, new=new,
                    added=tuple(sorted(right[k] for k in right.keys() - left.keys())),
                    removed=tuple(sorted(left[k] for k in left.keys() - right.keys())),
                    changed=tuple(sorted(changed, key=lambda c: c.position_after)),
                    unchanged=len(left.keys() & right.keys()) - len(changed))


def _keyed(rules: Sequence[Rule]) -> dict[tuple, tuple[int, Rule]]:
    """Rules by identity (what they match, not where they were seen), numbered when an identity repeats."""
    seen: Counter = Counter()
    out = {}
    for position, rule in enumerate(rules):
        if rule.pinned:
            identity = (RuleMatch.XPATH, rule.action, rule.xpath)
        elif rule.action == RuleAction.DROP:
            identity = (RuleMatch.HASH, rule.tag_path, rule.hash)
        elif rule.action == RuleAction.DROP_SHAPE:
            identity = (RuleMatch.SHAPE, rule.tag_path)
        elif rule.action == RuleAction.DROP_XPATH:
            identity = (RuleMatch.CONTAINER, rule.xpath)
        elif rule.action in META_ACTIONS:
            identity = (RuleMatch.META, rule.action)
        else:
            identity = (RuleMatch.REGION,)
        out[identity + (seen[identity],)] = (position, rule)
        seen[identity] += 1
    return out


# --- explain and test ---------------------------------------------------------------------------------------

def explain_page(db: sqlite_utils.Database, target: str, *, url: str | None = None,
                 method: str = "auto") -> PageExplanation:
    """Each block of a stored page (by URL) or of a local .html file, kept or dropped, and what decided it.

    A file is matched to a template by ``url`` (else its file:// URL), the way a new page of a known site is (each
    template's saved layout_match); the template's saved settings explain it.
    """
    pin_store.ensure_schema(db)
    if not Path(target).exists() and re.match(r"^[a-z][a-z0-9+.-]*://", target, re.IGNORECASE):
        seg, site = _stored_page(db, target)
    else:
        seg, site = segment_file(Path(target), url=url), None
    return explain_blocks(seg, TemplateIndex(db).find(seg, site), method=method)


def test_rules(db: sqlite_utils.Database, site: str, path: str | Path, *, url: str | None = None,
               method: str = "auto") -> PageExplanation:
    """Apply a site's current template (with its pinned rules) to a local page; nothing is stored."""
    pin_store.ensure_schema(db)
    compiled = CompiledTemplate(pin_store.apply_pins(db, _template_row(db, site).template))
    return explain_blocks(segment_file(Path(path), url=url), compiled, method=method)


def _stored_page(db: sqlite_utils.Database, url: str) -> tuple[Segmented, str | None]:
    page_id = views.page_id_for_url(db, url)
    if page_id is None:
        raise InputError(f"no stored page has the URL {url}: ingest it first, or explain a saved copy with "
                         f"`templater rules explain --db DB page.html --url {url}`")
    stored = next(page_store.load_pages(db, [page_id]))
    return _segmented(stored_segment(stored), url), stored.site


def _segmented(outcome: Segmented | Skip, where: str) -> Segmented:
    if isinstance(outcome, Skip):
        detail = f": {outcome.detail}" if outcome.detail else ""
        raise InputError(f"{where}: nothing to explain ({outcome.reason}{detail})")
    return outcome


def explain_blocks(seg: Segmented, compiled: CompiledTemplate | None, *, method: str = "auto") -> PageExplanation:
    """Extract the page as ``extract`` does and name, for each block, what kept or dropped it and why."""
    result = extract_page(seg, compiled, method=method)
    kept = np.zeros(len(seg.blocks), dtype=bool)
    kept[list(result.kept)] = True
    if compiled is None or result.method == "fallback":  # no template, or one that allowed nothing
        reason, why = FALLBACK_PREFIX + method, f"no template fits the page: the single-page {method} method's choice"
        decisions = tuple(_decision(b, bool(kept[b.index]), reason, why="" if kept[b.index] else why)
                          for b in seg.blocks)
    else:
        allowed, _, trusted, region = match_regions(seg, compiled)
        causes = _template_causes(seg, compiled, allowed)
        why = _classifier_why(seg, kept, allowed, trusted, method, compiled.settings)
        why = [w[: -len(OUTSIDE_TRUSTED)] + OUTSIDE_OWN if region[i] and w.endswith(OUTSIDE_TRUSTED) else w
               for i, w in enumerate(why)]
        survivor = TEMPLATE_ONLY if method == "none" or without_paragraphs(seg, compiled.settings) else CLASSIFIER
        named = name_line(seg, allowed & kept, compiled.settings) if compiled.shapes else kept[:0]
        decisions = tuple(_decision(b, True, NAME_LINE, why=NAME_LINE_WHY) if len(named) and named[b.index]
                          else _decision(b, bool(kept[b.index]), survivor, why=why[b.index]) if allowed[b.index]
                          else _decision(b, False, *causes[b.index], rules=compiled.template.rules)
                          for b in seg.blocks)
    return PageExplanation(url=seg.page.url, site=result.site if compiled else None, template=result.template,
                           pinned=compiled is not None and compiled.template.reason == pin_store.PINNED_REASON,
                           coverage=result.coverage, method=method, blocks=decisions, text=result.text)


def _decision(block, kept: bool, reason: str, rule: int | None = None, why: str = "", *,
              rules: Sequence[Rule] = ()) -> BlockDecision:
    decided = rules[rule] if rule is not None else None
    return BlockDecision(index=block.index, xpath=block.xpath, tag=block.tag, text=block.text, kept=kept,
                         reason=reason, rule=rule, action=decided.action if decided else "",
                         support=decided.support if decided and not decided.pinned else None, why=why)


def _classifier_why(seg: Segmented, kept: np.ndarray, allowed: np.ndarray, trusted: np.ndarray,
                    method: str, settings: LearnSettings) -> list[str]:
    """Why each allowed block that was not kept was dropped: a repeat of a kept block's text, or the
    classifier's decision (fallback.drop_reasons for the default method), with the template's settings."""
    chosen = allowed if method == "none" or without_paragraphs(seg, settings) else select_blocks(
        seg, method=method, allowed=allowed, trusted=trusted, settings=settings)
    reasons = drop_reasons(seg, allowed=allowed, trusted=trusted, settings=settings) if method == "auto" else (
        [f"method {method}"] * len(seg.blocks))
    first: dict[str, int] = {}
    out = []
    for b in seg.blocks:
        if kept[b.index] or not allowed[b.index]:
            first.setdefault(b.text, b.index)
            out.append("")
        elif chosen[b.index]:
            out.append(f"repeat of block #{first.get(b.text, '?')}'s text")
        else:
            out.append(reasons[b.index])
    return out


def _template_causes(seg: Segmented, compiled: CompiledTemplate, allowed: np.ndarray) -> dict[int, tuple]:
    """For each block the template removed: (reason, position of the rule, why in words), first rule in the
    order applied: static, shape, container, pinned, region."""
    rules = compiled.template.rules
    by_hash: dict[int, int] = {}
    by_shape: dict[str, int] = {}
    for i, r in enumerate(rules):
        if r.action == RuleAction.DROP and r.hash is not None:
            by_hash.setdefault(r.hash, i)
        elif r.action == RuleAction.DROP_SHAPE:
            by_shape.setdefault(r.tag_path, i)
    containers = [i for i, r in enumerate(rules) if r.action == RuleAction.DROP_XPATH and not r.pinned]
    masks = [(RuleAction.DROP_XPATH, i, container_mask(seg, (xpath,)))
             for i, xpath in zip(containers, compiled.containers)]
    position = {id(r): i for i, r in enumerate(rules)}
    masks += [(PINNED_RULE, position[id(rule)], ~pinned_mask(seg, rule, xpath)) for rule, xpath in compiled.pinned]
    region = next((i for i, r in enumerate(rules) if r.action == RuleAction.CONTENT and not r.pinned), None)
    roots = _content_roots(seg, compiled)
    settings = compiled.settings
    runs, rows = link_runs(seg, settings), varying_rows(seg, ~allowed, settings)
    among = interleaved_blocks(seg, ~allowed, roots, settings)
    causes = {}
    for b in seg.blocks:
        if allowed[b.index]:
            continue
        shape = repeated_chrome(b, content_ancestry(b.element, roots), bool(runs[b.index]), rows, settings,
                                interleaved=bool(among[b.index])) or (
            "inside the content here, chrome where the rule was learned")
        if b.hash in by_hash:
            i = by_hash[b.hash]
            causes[b.index] = (RuleAction.DROP, i,
                               f"same tag path and text on {rules[i].support:.0%} of the learned pages; {shape}")
        elif b.tag_path in by_shape:
            i = by_shape[b.tag_path]
            causes[b.index] = (RuleAction.DROP_SHAPE, i, f"tag path on {rules[i].support:.0%} of the learned pages, "
                               f"its text varying and short, link-heavy or in <nav>/<aside>; {shape}")
        elif (outer := nested_rule(b, compiled.nested, settings)) in by_shape:
            i = by_shape[outer]
            causes[b.index] = (RuleAction.DROP_SHAPE, i, f"a link-heavy entry of a list nested in the list whose "
                               f"entries the rule drops (tag path on {rules[i].support:.0%} of the learned pages); "
                               f"{shape}")
        else:
            causes[b.index] = next(((reason, i, _WHY[reason]) for reason, i, mask in masks if mask[b.index]),
                                   (OUTSIDE_REGION, region, _WHY[OUTSIDE_REGION]))
    return causes


NAME_LINE_WHY = ("the page's name line under its title (\"name - summary\", a manual page's NAME): kept past shape "
                 "rules and the content region")
OUTSIDE_OWN = ("(in the trusted content region, but not among the page's own content: past a run of the site's "
               "repeated blocks before its first or after its last paragraph)")
_WHY = {RuleAction.DROP_XPATH: "under a container named like comments or related articles",
        PINNED_RULE: "a rule pinned by hand", OUTSIDE_REGION: "outside the content region the template learned"}


def _content_roots(seg: Segmented, compiled: CompiledTemplate) -> list:
    """The page's content containers as the template sees them: its learned region, <main>, <article> and
    [role=main]."""
    roots = [e for e in compiled.region(seg.root) if isinstance(e, etree._Element)][:1] if compiled.region else []
    return roots + declared_content(seg.root, compiled.settings)


# --- export, import, remove ---------------------------------------------------------------------------------

def export_rules(db: sqlite_utils.Database, site: str, *, version: int | None = None) -> dict:
    """A site's rules in force (its pinned rules, else the current version's) as an editable document.

    With ``version``: that learned version's rules.
    """
    pin_store.ensure_schema(db)
    row = _template_row(db, site, version)
    pins = pin_store.load_pins(db, site) if version is None else []
    rules = pins or [(r, "") for r in row.template.rules]
    return {"format": EXPORT_FORMAT, "site": site, "version": row.template.version,
            "source": "pinned" if pins else "learned", "exported_at": now(), "help": EXPORT_HELP,
            "settings": row.settings, "rules": [rule_json(r, i, note=n) for i, (r, n) in enumerate(rules)]}


def read_rules_file(path: str | Path) -> dict:
    """A rules file's document; RuleError naming the line and column where its JSON is broken."""
    path = Path(path)
    try:
        size = path.stat().st_size
        if size > config.MAX_RULES_FILE_BYTES:
            raise RuleError(f"{path}: {size:,} bytes, over the {config.MAX_RULES_FILE_BYTES:,} a rules file may have; a "
                            "site's rules are a few kilobytes: keep the rules that matter")
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise InputError(f"{path}: cannot read the rules file ({e.strerror})") from None
    except UnicodeDecodeError:
        raise RuleError(f"{path}: a rules file is UTF-8 JSON; save it as UTF-8") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise RuleError(f"{path}: not valid JSON at line {e.lineno} column {e.colno}: {e.msg}") from None


def import_rules(db: sqlite_utils.Database, document: dict, *, site: str | None = None,
                 source: str = "rules file") -> SiteRules:
    """Pin a site's rules from a rules document (as ``export_rules`` writes it), replacing any pinned before.

    Every rule is checked first (action, how it matches, its XPath); nothing is stored if one is refused.
    """
    pin_store.ensure_schema(db)
    if not isinstance(document, dict) or not isinstance(document.get("rules"), list):
        raise RuleError(f"{source}: expected a JSON object with a \"rules\" list, as `templater rules export` writes")
    site = site or document.get("site")
    if not isinstance(site, str) or not site:
        raise RuleError(f"{source}: no site: give it in the file (\"site\") or with --site")
    _template_row(db, site)
    if not document["rules"]:
        raise RuleError(f"{source}: no rules; to go back to the learned rules run "
                        f"`templater rules remove-pinned --db DB {site}`")
    if len(document["rules"]) > config.MAX_IMPORT_RULES:
        raise RuleError(f"{source}: {len(document['rules']):,} rules, over the {config.MAX_IMPORT_RULES:,} a site may "
                        "pin; a site's learned template has tens: keep the rules that matter")
    pins = [_parse_rule(item, number, source) for number, item in enumerate(document["rules"])]
    pins = _measure_pins(db, site, pins, source)
    with transaction(db):
        pin_store.save_pins(db, site, pins, now=now())
    log.info("pinned %d rules for %s from %s", len(pins), site, source)
    return show_rules(db, site)


def _parse_rule(item: object, number: int, source: str) -> tuple[Rule, str]:
    where = f"{source}: rule {number}"
    if not isinstance(item, dict):
        raise RuleError(f"{where}: expected an object with \"action\" and \"xpath\"")
    unknown = sorted(set(item) - RULE_KEYS - {"position"})
    if unknown:
        raise RuleError(f"{where}: unknown field {', '.join(unknown)}; known: {', '.join(sorted(RULE_KEYS))}")
    action, match, xpath = item.get("action"), item.get("matched_by", RuleMatch.XPATH), item.get("xpath")
    if action not in ACTIONS:
        raise RuleError(f"{where}: action {action!r} is not one of {', '.join(ACTIONS)}")
    if match not in MATCH_ACTIONS or action not in MATCH_ACTIONS[match]:
        allowed = [m for m, acts in MATCH_ACTIONS.items() if action in acts]
        raise RuleError(f"{where}: matched_by {match!r} does not go with action {action!r}; use "
                        f"{' or '.join(allowed)}")
    if not isinstance(xpath, str) or not xpath.strip():
        raise RuleError(f"{where}: \"xpath\" must be a non-empty string")
    check_xpath(xpath, where=where)
    return _rule_of(item, action, match, xpath, where), str(item.get("note") or "")


def _rule_of(item: dict, action: str, match: str, xpath: str, where: str) -> Rule:
    support = item.get("support") or 0.0
    sample = str(item.get("sample") or "")
    if match == RuleMatch.XPATH:
        return Rule(xpath=xpath, action=action, support=float(support), sample=sample, pinned=True)
    if match in (RuleMatch.REGION, RuleMatch.CONTAINER, RuleMatch.META):
        return Rule(xpath=xpath, action=action, support=float(support), sample=sample)
    tag_path = item.get("tag_path") or (xpath if match == RuleMatch.SHAPE else None)
    if not isinstance(tag_path, str) or not tag_path.startswith("/"):
        raise RuleError(f"{where}: a {match!r} rule needs its \"tag_path\" (like /html/body/div/p) as exported")
    digest = item.get("hash")
    if match == RuleMatch.HASH and (not isinstance(digest, int) or isinstance(digest, bool)
                                    or not 0 <= digest < 2 ** 32):
        raise RuleError(f"{where}: a 'hash' rule needs its \"hash\" (a 32-bit number) as exported; to match by "
                        "XPath instead, set \"matched_by\": \"xpath\"")
    return Rule(xpath=xpath, action=action, support=float(support), tag_path=tag_path,
                hash=digest if match == RuleMatch.HASH else None, sample=sample)


def _measure_pins(db: sqlite_utils.Database, site: str, pins: list[tuple[Rule, str]],
                  source: str) -> list[tuple[Rule, str]]:
    """Every rule extraction runs as an XPath is run on the site's sampled pages within the time budget (else
    refused); pinned XPath rules get their support (share of those pages where they select something) and a
    sample."""
    timed = [number for number, (rule, _) in enumerate(pins) if _runs_xpath(rule)]
    if not timed:
        return pins
    pages = [seg for seg in (_usable_segment(p) for p in page_store.load_pages(
        db, views.site_page_ids(db, site)[:PIN_SAMPLE_PAGES])) if seg is not None]
    measured = _run_rules(pages, [(number, pins[number][0].xpath) for number in timed], source)
    out = []
    for number, (rule, note) in enumerate(pins):
        if rule.pinned:
            hits, sample = measured[number]
            support = round(hits / len(pages), 4) if pages else rule.support
            rule = dataclasses.replace(rule, support=support, sample=sample or rule.sample)
        out.append((rule, note))
    return out


def _runs_xpath(rule: Rule) -> bool:
    """Whether extraction evaluates the rule's XPath (pinned XPath, region and container rules)."""
    return rule.pinned or rule.action in (RuleAction.CONTENT, RuleAction.DROP_XPATH)


def _run_rules(pages: Sequence[Segmented], rules: list[tuple[int, str]], source: str) -> dict[int, tuple[int, str]]:
    """(pages matched, sample text) of each (number, XPath) on the pages, each rule within RULE_TIME_BUDGET and all
    within IMPORT_TIME_BUDGET: run in a forked child that is killed at the budget (libxml2 cannot stop an XPath),
    or in this process, checked after each rule, where fork is not available."""
    if not pages:
        return {number: (0, "") for number, _ in rules}
    if "fork" not in multiprocessing.get_all_start_methods():
        return _run_rules_here(pages, rules, source)
    context = multiprocessing.get_context("fork")
    reader, writer = context.Pipe(duplex=False)
    child = context.Process(target=_rules_child, args=(pages, rules, source, writer), daemon=True)
    child.start()
    writer.close()
    results: dict[int, tuple[int, str]] = {}
    expressions = dict(rules)
    current, started, everything = None, time.monotonic(), time.monotonic() + config.IMPORT_TIME_BUDGET
    try:
        while True:
            left = min(started + config.RULE_TIME_BUDGET, everything) - time.monotonic()
            if left <= 0 or not reader.poll(left):
                raise _too_slow(source, current, expressions.get(current, ""), len(pages))
            message = reader.recv()
            if message[0] == "start":
                current, started = message[1], time.monotonic()
            elif message[0] == "done":
                results[message[1]] = (message[2], message[3])
            elif message[0] == "error":
                raise RuleError(message[1])
            else:
                return results
    except EOFError:
        raise RuleError(f"{source}: rule {current}: running its XPath ended the measuring process; check the rule")\
            from None
    finally:
        if child.is_alive():
            child.kill()
        child.join()
        reader.close()


def _rules_child(pages: Sequence[Segmented], rules: list[tuple[int, str]], source: str, writer) -> None:
    try:
        for number, expression in rules:
            writer.send(("start", number))
            writer.send(("done", number, *_run_rule(pages, expression, f"{source}: rule {number}")))
        writer.send(("end",))
    except RuleError as e:
        writer.send(("error", str(e)))
    finally:
        writer.close()


def _run_rules_here(pages: Sequence[Segmented], rules: list[tuple[int, str]],
                    source: str) -> dict[int, tuple[int, str]]:
    results = {}
    for number, expression in rules:
        started = time.monotonic()
        results[number] = _run_rule(pages, expression, f"{source}: rule {number}")
        if time.monotonic() - started > config.RULE_TIME_BUDGET:
            raise _too_slow(source, number, expression, len(pages))
    return results


def _too_slow(source: str, number: int | None, expression: str, pages: int) -> RuleError:
    return RuleError(f"{source}: rule {number}: XPath {expression!r} ran over {config.RULE_TIME_BUDGET:g} s on the "
                     f"site's {pages} sample pages; extraction would run it on every page: write a cheaper XPath "
                     "(a path from an element with an id, no // inside a [predicate])")


def _run_rule(pages: Sequence[Segmented], expression: str, where: str) -> tuple[int, str]:
    xpath = compile_xpath(expression)
    hits, sample = 0, ""
    for seg in pages:
        found = xpath(seg.root)
        if not isinstance(found, list) or any(not isinstance(e, etree._Element) for e in found):
            raise RuleError(f"{where}: XPath {expression!r} selects text, attributes or a value on "
                            f"{seg.page.url}, not elements (column 1); select the elements themselves")
        if found:
            hits += 1
            sample = sample or " ".join(" ".join(found[0].itertext()).split())[:SAMPLE_CHARS]
    return hits, sample


def _usable_segment(stored: page_store.StoredPage) -> Segmented | None:
    seg = stored_segment(stored)
    return None if isinstance(seg, Skip) else seg


def remove_pinned(db: sqlite_utils.Database, site: str) -> int:
    """Remove a site's pinned rules (its learned rules apply again); the number removed."""
    pin_store.ensure_schema(db)
    with transaction(db):
        removed = pin_store.remove_pins(db, site)
    if not removed:
        raise InputError(f"site {site!r} has no pinned rules; `templater rules list --db DB` shows which have")
    return removed


# --- XPath checks -------------------------------------------------------------------------------------------

_PROBE = etree.fromstring("<html><head><title>t</title></head><body><div><p>x</p></div></body></html>")
_CLOSERS = {")": "(", "]": "["}
_CORE_FUNCTIONS = frozenset(
    "last position count id local-name namespace-uri name string concat starts-with contains substring-before "
    "substring-after substring string-length normalize-space translate boolean not true false lang number sum "
    "floor ceiling round node text comment processing-instruction".split())
_NAME_CALL = re.compile(r"(?<![\w.:-])([A-Za-z_][\w.-]*(?::[A-Za-z_][\w.-]*)?)\s*\(")
_PREFIX = re.compile(r"(?<![\w.:-])([A-Za-z_][\w.-]*):(?!:)")


def check_xpath(expr: str, *, where: str = "rule") -> etree.XPath:
    """The compiled XPath; RuleError naming the column where it is wrong when it does not compile or run."""
    try:
        compiled = etree.XPath(expr)
    except etree.XPathSyntaxError as e:
        offsets = [entry.column for entry in e.error_log if entry.column >= 0]
        column = offsets[-1] + 1 if offsets else _scan_column(expr, str(e))[0]
        raise RuleError(_xpath_message(where, expr, column, str(e))) from None
    try:
        result = compiled(_PROBE)
    except etree.XPathError as e:
        raise RuleError(_xpath_message(where, expr, _scan_column(expr, str(e))[0], str(e))) from None
    if not isinstance(result, list):
        raise RuleError(_xpath_message(where, expr, 1, f"selects a {type(result).__name__} value, not elements"))
    return compiled


def _xpath_message(where: str, expr: str, column: int, problem: str) -> str:
    hint = _scan_column(expr, problem)[1]
    pointer = expr + "\n    " + " " * (column - 1) + "^"
    return (f"{where}: invalid XPath at column {column}: {problem}{'; ' + hint if hint else ''}\n    {pointer}\n"
            "fix the XPath (it must select elements, e.g. //div[@id='content']) and import again")


def _scan_column(expr: str, problem: str) -> tuple[int, str]:
    """(1-based column, hint) of the likely fault: an unclosed quote or bracket, an unknown prefix, function or
    variable; else the end of the expression."""
    stack: list[tuple[str, int]] = []
    quote: tuple[str, int] | None = None
    masked = []
    for i, ch in enumerate(expr):
        if quote:
            masked.append(" ")
            if ch == quote[0]:
                quote = None
            continue
        masked.append(ch)
        if ch in "'\"":
            quote = (ch, i)
        elif ch in "([":
            stack.append((ch, i))
        elif ch in _CLOSERS:
            if not stack or stack[-1][0] != _CLOSERS[ch]:
                return i + 1, f"'{ch}' at column {i + 1} closes nothing"
            stack.pop()
    if quote:
        return quote[1] + 1, f"the string opened at column {quote[1] + 1} is never closed"
    if stack:
        return stack[-1][1] + 1, f"'{stack[-1][0]}' at column {stack[-1][1] + 1} is never closed"
    return _name_column(expr, "".join(masked), problem)


def _name_column(expr: str, masked: str, problem: str) -> tuple[int, str]:
    lowered = problem.lower()
    if "function" in lowered:
        for m in _NAME_CALL.finditer(masked):
            if m.group(1) not in _CORE_FUNCTIONS:
                return m.start(1) + 1, f"{m.group(1)}() is not an XPath 1.0 function"
    if "namespace" in lowered and (m := _PREFIX.search(masked)):
        return m.start(1) + 1, f"the prefix {m.group(1)!r} is not declared (HTML elements have none)"
    if "variable" in lowered and "$" in masked:
        return masked.index("$") + 1, "variables cannot be used in rules"
    return len(expr) + 1 if "expression" in lowered else 1, ""


# --- report -------------------------------------------------------------------------------------------------

def build_report(db: sqlite_utils.Database, site: str, *, page_url: str | None = None, method: str = "auto",
                 progress: Progress | None = None) -> str:
    """A self-contained HTML report of a site's template: one page's blocks with what decided each, the rules,
    and how the template fits each of the site's pages."""
    pin_store.ensure_schema(db)
    row = _template_row(db, site)
    summary = _summary(row, views.site_page_counts(db), views.template_coverages(db), pin_store.pinned_sites(db))
    compiled = CompiledTemplate(pin_store.apply_pins(db, row.template))
    ids = views.site_page_ids(db, site)[:REPORT_MAX_PAGES]
    shown_id = _report_page_id(db, site, ids, page_url)
    explained: dict[str, PageExplanation] = {}
    for done, stored in enumerate(page_store.load_pages(db, list(dict.fromkeys(ids + [shown_id]))), 1):
        seg = _usable_segment(stored)
        if seg is not None:
            explained[stored.id] = explain_blocks(seg, compiled, method=method)
        if progress:
            progress(done, len(ids))
    if shown_id not in explained:
        raise InputError(f"the page {page_url or shown_id} has no text blocks to show; pick another with --page")
    pages = tuple(_page_coverage(explained[i]) for i in ids if i in explained)
    return render_report(ReportData(summary=summary, rules=compiled.template.rules, page=explained[shown_id],
                                    pages=pages, generated_at=now()))


def _report_page_id(db: sqlite_utils.Database, site: str, ids: list[str], page_url: str | None) -> str:
    if page_url is None:
        if not ids:
            raise InputError(f"site {site!r} has no stored pages: run `templater build` after ingesting them")
        return ids[0]
    page_id = views.page_id_for_url(db, page_url)
    if page_id is None:
        raise InputError(f"no stored page has the URL {page_url}; `templater rules report` shows stored pages only")
    return page_id


def _page_coverage(page: PageExplanation) -> PageCoverage:
    return PageCoverage(url=page.url, coverage=page.coverage, kept_chars=page.kept_chars,
                        total_chars=page.total_chars, blocks=len(page.blocks),
                        dropped_blocks=sum(not b.kept for b in page.blocks))
