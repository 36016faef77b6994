"""What the rule-inspection commands show, and the one-file HTML report a person reads instead of tables.

The dataclasses here are the data of ``templater rules ...`` (a template's summary, each block of a page with
the rule that kept or dropped it) and ``render_report`` turns them into a self-contained HTML page: inline CSS,
no scripts, fonts or images from anywhere, every piece of page text escaped.
"""

from __future__ import annotations

import html
import statistics
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .config import GROUP_PREVIEW_CHARS, REPORT_SAMPLE_CHARS, SHORT_TEXT
from .datatypes import LEARNED_MATCH, Rule, RuleAction, RuleMatch

# Why a block was kept or dropped. Dropped: a learned static rule, a learned dynamic (shape) rule, a learned
# container rule (reader comments), a pinned XPath rule, the learned content region, the single-page classifier
# on what the template allowed, or the single-page fallback where there is no template ("fallback:<method>").
# Kept: the classifier (on what the template allowed), the template alone (method "none"), or the fallback.
PINNED_RULE = "pinned"  # a pinned rule dropped the block (or left it outside pinned content)
OUTSIDE_REGION = "region"  # the block lies outside the learned content region
TEMPLATE_REASONS = (RuleAction.DROP, RuleAction.DROP_SHAPE, RuleAction.DROP_XPATH, PINNED_RULE, OUTSIDE_REGION)
CLASSIFIER = "classifier"
TEMPLATE_ONLY = "template"
NAME_LINE = "name line"  # kept: the page's name line under its title, past shape rules and the region
FALLBACK_PREFIX = "fallback:"



@dataclass(frozen=True, slots=True)
class TemplateSummary:
    """One site group's current template, as `templater rules list` shows it."""

    site: str
    version: int
    pages: int  # live pages the last build assigned to the site
    rules: int  # learned rules of this version
    pinned: int  # pinned rules in force instead of the learned ones (0: none)
    median_coverage: float | None  # over the stored extractions made with this version; None before `extract`
    learned_at: str
    stale: bool
    learned_from: int  # pages the template was learned from

    def to_json(self) -> dict:
        return {"site": self.site, "version": self.version, "pages": self.pages, "rules": self.rules,
                "pinned": self.pinned, "median_coverage": self.median_coverage, "learned_at": self.learned_at,
                "stale": self.stale, "learned_from": self.learned_from}


@dataclass(frozen=True, slots=True)
class BlockDecision:
    """One block of a page, whether it was kept, and what decided it (see the reasons above)."""

    index: int
    xpath: str
    tag: str
    text: str
    kept: bool
    reason: str
    rule: int | None = None  # position of the deciding rule in the template (as in `rules show`)
    action: str = ""  # that rule's action
    support: float | None = None  # that rule's support
    why: str = ""  # why a dropped block was dropped, in words: its support, position, shape or classifier score

    @property
    def label(self) -> str:
        """The decision in words: "drop rule #3 (support 100%)", "outside content region #9", "classifier"."""
        support = f" (support {self.support:.0%})" if self.support is not None else ""
        if self.reason in (RuleAction.DROP, RuleAction.DROP_SHAPE):
            return f"{self.reason} rule #{self.rule}{support}"
        if self.reason == RuleAction.DROP_XPATH:
            return f"container rule #{self.rule}{support}"
        if self.reason == PINNED_RULE:
            return (f"pinned drop rule #{self.rule}" if self.action == RuleAction.DROP else
                    f"outside pinned content #{self.rule}")
        if self.reason == OUTSIDE_REGION:
            return f"outside content region #{self.rule}"
        return self.reason

    def to_json(self) -> dict:
        return {"index": self.index, "xpath": self.xpath, "tag": self.tag, "text": self.text, "kept": self.kept,
                "reason": self.reason, "rule": self.rule, "action": self.action or None, "support": self.support,
                "label": self.label, "why": self.why}


@dataclass(frozen=True, slots=True)
class PageExplanation:
    """A page's blocks with their decisions, and the text that results."""

    url: str
    site: str | None
    template: str | None  # "<site>@v<version>", or None when no template applied
    pinned: bool  # the template's rules were the site's pinned rules
    coverage: float | None
    method: str  # the single-page method asked for
    blocks: tuple[BlockDecision, ...]
    text: str

    @property
    def kept_chars(self) -> int:
        return sum(len(b.text) for b in self.blocks if b.kept)

    @property
    def total_chars(self) -> int:
        return sum(len(b.text) for b in self.blocks)

    def to_json(self) -> dict:
        return {"url": self.url, "site": self.site, "template": self.template, "pinned": self.pinned,
                "coverage": self.coverage, "method": self.method, "kept_chars": self.kept_chars,
                "total_chars": self.total_chars, "blocks": [b.to_json() for b in self.blocks], "text": self.text}


@dataclass(frozen=True, slots=True)
class PageCoverage:
    """How the template fits one of its site's pages."""

    url: str
    coverage: float | None
    kept_chars: int
    total_chars: int
    blocks: int
    dropped_blocks: int


@dataclass(frozen=True, slots=True)
class ReportData:
    summary: TemplateSummary
    rules: tuple[Rule, ...]  # the rules in force (the pinned ones when the site has any)
    page: PageExplanation
    pages: tuple[PageCoverage, ...]
    generated_at: str


def shorten(text: str, limit: int = SHORT_TEXT) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"


def render_report(data: ReportData) -> str:
    """The whole report as one HTML document."""
    parts = [_head(data), "<main>", _summary_cards(data), _page_section(data.page), _rules_section(data),
             _pages_section(data), "</main>", _footer(data), "</body></html>"]
    return "\n".join(parts)


# --- pieces -----------------------------------------------------------------------------------------------

def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


_CSS = """
*{box-sizing:border-box}
body{margin:0;background:#eef1f5;color:#1d2330;font:15px/1.5 "DejaVu Sans",system-ui,sans-serif}
header{background:#1f3a5f;color:#fff;padding:22px 36px 18px}
header h1{margin:0;font-size:24px;font-weight:600;word-break:break-all}
header p{margin:4px 0 0;color:#c9d6e8;font-size:14px}
main{max-width:1200px;margin:0 auto;padding:22px 28px}
section{background:#fff;border-radius:10px;box-shadow:0 1px 3px rgba(20,30,50,.12);padding:18px 24px;
margin:0 0 22px}
section h2{margin:0 0 12px;font-size:18px;color:#1f3a5f}
.cards{display:flex;flex-wrap:wrap;gap:14px;margin:0 0 22px}
.card{flex:1 1 160px;background:#fff;border-radius:10px;box-shadow:0 1px 3px rgba(20,30,50,.12);padding:12px 16px}
.card b{display:block;font-size:24px;color:#1f3a5f}
.card span{color:#5a6475;font-size:13px}
.badge{display:inline-block;border-radius:4px;padding:0 7px;font-size:12px;font-weight:600;color:#fff;
vertical-align:middle}
.b-current{background:#2e9e5b}.b-stale{background:#c0392b}.b-pinned{background:#8e44ad}
.legend{display:flex;flex-wrap:wrap;gap:16px;font-size:13px;color:#5a6475;margin:0 0 12px}
.legend i{display:inline-block;width:14px;height:14px;border-radius:3px;vertical-align:-2px;margin-right:5px}
.meter{display:flex;height:12px;border-radius:6px;overflow:hidden;background:#e3e7ee;margin:4px 0 14px}
.meter span{display:block;height:100%}
.url{font-family:"DejaVu Sans Mono",monospace;font-size:13px;color:#5a6475;word-break:break-all}
.doc{border:1px solid #dde2ea;border-radius:8px;padding:10px 0;background:#fbfcfd}
.kept{background:#e6f5ea;border-left:5px solid #2e9e5b;padding:3px 14px;margin:0}
.drop{border-left:5px solid #c0392b;padding:4px 14px;margin:0;color:#6b7280;font-size:13px;
background:repeating-linear-gradient(135deg,#eceef1 0 8px,#e3e6ea 8px 16px)}
.drop .tag{float:right;margin-left:10px}
.tag{display:inline-block;border-radius:4px;padding:0 7px;font-size:11px;font-weight:600;color:#fff}
.r-drop{background:#c0392b;border-color:#c0392b}.r-drop-shape{background:#d35400;border-color:#d35400}
.r-drop-xpath{background:#a0522d;border-color:#a0522d}
.r-pinned{background:#8e44ad;border-color:#8e44ad}.r-region{background:#7f8c8d;border-color:#7f8c8d}
.r-classifier{background:#2c7be5;border-color:#2c7be5}.r-fallback{background:#2c7be5;border-color:#2c7be5}
.r-kept{background:#2e9e5b}
.t-h1{font-size:24px;font-weight:700}.t-h2{font-size:20px;font-weight:700}.t-h3{font-size:17px;font-weight:700}
.t-h4,.t-h5,.t-h6,.t-th,.t-dt{font-weight:700}.t-li:before{content:"• ";color:#2e9e5b}
.t-pre{font-family:"DejaVu Sans Mono",monospace;font-size:13px;white-space:pre-wrap}
details summary{cursor:pointer;color:#1f3a5f}
table{border-collapse:collapse;width:100%;font-size:13px}
th{text-align:left;color:#5a6475;font-weight:600;border-bottom:2px solid #dde2ea;padding:6px 8px}
td{border-bottom:1px solid #eef0f4;padding:5px 8px;vertical-align:top}
td.x{font-family:"DejaVu Sans Mono",monospace;font-size:12px;word-break:break-all;max-width:420px}
.bar{width:110px;height:10px;background:#e3e7ee;border-radius:5px;overflow:hidden;display:inline-block;
vertical-align:middle;margin-right:6px}
.bar span{display:block;height:100%;background:#2c7be5}
.bar.g span{background:#2e9e5b}
tr.here td{background:#fff8dc}
footer{text-align:center;color:#7a8494;font-size:12px;padding:0 0 24px}
"""


def _head(data: ReportData) -> str:
    s = data.summary
    badges = [f'<span class="badge {"b-stale" if s.stale else "b-current"}">{"stale" if s.stale else "current"}'
              "</span>"]
    if s.pinned:
        badges.append(f'<span class="badge b-pinned">{s.pinned} pinned rules in force</span>')
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width,initial-scale=1">'
            f"<title>templater report: {_e(s.site)}</title><style>{_CSS}</style></head><body>"
            f"<header><h1>{_e(s.site)} {' '.join(badges)}</h1>"
            f"<p>template version {s.version} · learned {_e(s.learned_at)} from {s.learned_from} pages</p></header>")


def _summary_cards(data: ReportData) -> str:
    s = data.summary
    by_action = Counter(r.action for r in data.rules)
    actions = " · ".join(f"{n} {a}" for a, n in sorted(by_action.items())) or "none"
    measured = [p.coverage for p in data.pages if p.coverage is not None]
    coverage = f"{statistics.median(measured):.0%}" if measured else "–"
    cards = [(s.pages, "pages in the site group"), (len(data.rules), f"rules in force: {actions}"),
             (coverage, f"median template coverage over {len(measured)} pages"),
             (_share(data.page.kept_chars, data.page.total_chars), "of this page's text kept")]
    return '<div class="cards">' + "".join(f'<div class="card"><b>{_e(v)}</b><span>{_e(t)}</span></div>'
                                           for v, t in cards) + "</div>"


def _share(part: int, whole: int) -> str:
    return f"{part / whole:.0%}" if whole else "–"


def _reason_class(reason: str) -> str:
    return "r-fallback" if reason.startswith(FALLBACK_PREFIX) else f"r-{reason}"


def _page_section(page: PageExplanation) -> str:
    template = _e(page.template) if page.template else "no template (single-page fallback)"
    head = (f'<section><h2>The page, as the template sees it</h2><div class="url">{_e(page.url)}</div>'
            f"<p>template {template}{' (pinned rules)' if page.pinned else ''} · coverage "
            f"{_e(f'{page.coverage:.0%}') if page.coverage is not None else '–'} · single-page method "
            f"{_e(page.method)}</p>")
    return head + _meter(page) + _legend() + '<div class="doc">' + "".join(_render_runs(page.blocks)) + \
        "</div></section>"


def _meter(page: PageExplanation) -> str:
    """One bar of the page's characters: kept, then dropped by each kind of decision."""
    chars = Counter()
    for b in page.blocks:
        chars["kept" if b.kept else b.reason.split(":")[0]] += len(b.text)
    total = max(sum(chars.values()), 1)
    order = ["kept", *TEMPLATE_REASONS, CLASSIFIER, FALLBACK_PREFIX.rstrip(":")]
    spans = "".join(f'<span class="{"r-kept" if k == "kept" else _reason_class(k)}" '
                    f'style="width:{100 * chars[k] / total:.2f}%" title="{_e(k)}: {chars[k]} characters"></span>'
                    for k in order if chars[k])
    return f'<div class="meter">{spans}</div>'


def _legend() -> str:
    items = [("r-kept", "kept content"), ("r-drop", "learned static rule"), ("r-drop-shape", "learned shape rule"),
             ("r-drop-xpath", "learned container rule"), ("r-region", "outside the content region"),
             ("r-pinned", "pinned rule"), ("r-classifier", "single-page classifier")]
    return '<div class="legend">' + "".join(f'<span><i class="{c}"></i>{_e(t)}</span>' for c, t in items) + "</div>"


def _render_runs(blocks: Sequence[BlockDecision]) -> Iterable[str]:
    """Kept blocks one by one; consecutive dropped blocks of one reason as one shaded, labelled run."""
    run: list[BlockDecision] = []
    for block in blocks:
        if run and (block.kept or block.reason != run[0].reason):
            yield _dropped_run(run)
            run = []
        if block.kept:
            yield f'<p class="kept t-{_e(block.tag)}" title="{_e(block.xpath)}">{_e(block.text)}</p>'
        else:
            run.append(block)
    if run:
        yield _dropped_run(run)


def _dropped_run(run: Sequence[BlockDecision]) -> str:
    rules = sorted({b.rule for b in run if b.rule is not None})
    label = run[0].label if len(run) == 1 else _run_label(run[0], rules, len(run))
    spans = [f'<span title="{_e(b.label)} · {_e(b.xpath)}">{_e(b.text)}</span>' for b in run]
    shown, chars = 0, 0
    while shown < len(spans) and chars < GROUP_PREVIEW_CHARS:
        chars += len(run[shown].text)
        shown += 1
    body = " · ".join(spans[:shown])
    if shown < len(spans):
        body += (f"<details><summary>show all {len(spans)} blocks</summary>{' · '.join(spans[shown:])}"
                 "</details>")
    return f'<div class="drop"><span class="tag {_reason_class(run[0].reason)}">{_e(label)}</span>{body}</div>'


def _run_label(first: BlockDecision, rules: list[int], count: int) -> str:
    if not rules:
        return f"{first.label} · {count} blocks"
    kind = first.label.split(" #")[0]
    return f"{kind} {_ranges(rules)} · {count} blocks"


def _ranges(numbers: list[int]) -> str:
    """[0, 1, 2, 5] -> "#0–#2, #5"."""
    spans: list[list[int]] = []
    for n in numbers:
        if spans and n == spans[-1][1] + 1:
            spans[-1][1] = n
        else:
            spans.append([n, n])
    return ", ".join(f"#{a}" if a == b else f"#{a}–#{b}" for a, b in spans)


def _rules_section(data: ReportData) -> str:
    title = "Pinned rules (in force instead of the learned ones)" if data.summary.pinned else "Learned rules"
    rows = "".join(
        f"<tr><td>#{i}</td><td><span class='tag {_rule_class(r)}'>{_e(r.action)}</span></td>"
        f"<td>{RuleMatch.XPATH if r.pinned else _LEARNED_MATCH.get(r.action, '')}</td><td class='x'>{_e(r.xpath)}</td>"
        f"<td>{_bar(r.support)}{r.support:.0%}</td>"
        f"<td>{_e(shorten(r.sample, REPORT_SAMPLE_CHARS))}</td></tr>" for i, r in enumerate(data.rules))
    return (f"<section><h2>{_e(title)}</h2><table><tr><th>#</th><th>action</th><th>matched by</th><th>XPath</th>"
            f"<th>support</th><th>sample of the text it matched</th></tr>{rows}</table></section>")


_LEARNED_MATCH = {**LEARNED_MATCH, RuleAction.DROP: "tag path + text", RuleAction.DROP_SHAPE: "tag path",
                  RuleAction.META_AUTHOR: "byline", RuleAction.META_DATE: "date"}  # the report's words


def _rule_class(rule: Rule) -> str:
    return "r-pinned" if rule.pinned else {RuleAction.CONTENT: "r-kept"}.get(rule.action, f"r-{rule.action}")


def _bar(value: float | None, *, green: bool = False) -> str:
    width = 0.0 if value is None else max(0.0, min(1.0, value)) * 100
    return f'<span class="bar{" g" if green else ""}"><span style="width:{width:.1f}%"></span></span>'


def _pages_section(data: ReportData) -> str:
    rows = []
    for p in data.pages:
        kept = p.kept_chars / p.total_chars if p.total_chars else None
        coverage = f"{p.coverage:.0%}" if p.coverage is not None else "–"
        here = ' class="here"' if p.url == data.page.url else ""
        rows.append(f"<tr{here}><td class='x'>{_e(p.url)}</td><td>{_bar(p.coverage)}{coverage}</td>"
                    f"<td>{_bar(kept, green=True)}{_share(p.kept_chars, p.total_chars)}</td>"
                    f"<td>{p.dropped_blocks} of {p.blocks}</td></tr>")
    return ("<section><h2>Coverage across the site's pages</h2><p>Coverage: share of the template's static rules "
            "found on the page, in order. Kept: share of the page's text left after the template and the "
            "classifier.</p><table><tr><th>page</th><th>coverage</th><th>text kept</th><th>blocks dropped</th>"
            f"</tr>{''.join(rows)}</table></section>")


def _footer(data: ReportData) -> str:
    return f"<footer>templater rules report · generated {_e(data.generated_at)}</footer>"
