"""templater's command line: typer commands only. The only module that prints, exits or draws progress."""

from __future__ import annotations

import contextlib
import json
import logging
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from templater import inspect as rule_inspect
from templater import pipeline
from templater.errors import TemplaterError

app = typer.Typer(add_completion=False, no_args_is_help=True, rich_markup_mode=None,
                  help="Learn each site's template from its own pages, extract main content, find near-duplicates.")
err = Console(stderr=True)

DB_HELP = "SQLite database file (created when missing)."
DbOption = typer.Option(Path("templater.db"), "--db", help=DB_HELP)
QuietOption = typer.Option(False, "--quiet", "-q", help="No progress bars or summary on stderr.")
InputsArgument = typer.Argument(..., help="JSON Lines (.jsonl, .jsonl.gz), WARC (.warc, .warc.gz), .html files or "
                                          "folders of them.")


@contextlib.contextmanager
def progress_bar(description: str, quiet: bool) -> Iterator[pipeline.Progress | None]:
    """A rich progress bar on stderr; a callback for the library, or None when quiet."""
    if quiet:
        yield None
        return
    columns = [SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
               TimeElapsedColumn()]
    with Progress(*columns, console=err, transient=True) as bar:
        task = bar.add_task(description, total=None)

        def update(done: int, total: int | None) -> None:
            bar.update(task, completed=done, total=total)

        yield update


@contextlib.contextmanager
def handled_errors() -> Iterator[None]:
    """Turn templater's errors into a message on stderr and exit status 1, never a traceback."""
    try:
        yield
    except TemplaterError as e:
        err.print(f"[red]error:[/red] {escape(str(e))}", highlight=False, soft_wrap=True)
        raise typer.Exit(1) from None
    except OSError as e:
        err.print(f"[red]error:[/red] {escape(str(e.strerror or e))}: {escape(str(e.filename or ''))}",
                  highlight=False, soft_wrap=True)
        raise typer.Exit(1) from None


def report(title: str, summary: pipeline.Summary, quiet: bool) -> None:
    if quiet:
        return
    parts = [f"{k}={v}" for k, v in sorted(summary.counts.items())]
    skipped = sum(summary.skipped.values())
    if skipped:
        parts.append(f"skipped={skipped} (" + ", ".join(f"{k}={v}" for k, v in sorted(summary.skipped.items())) + ")")
    err.print(f"{title}: " + ", ".join(parts), highlight=False, soft_wrap=True)


@contextlib.contextmanager
def output_stream(path: Optional[Path]) -> Iterator:
    if path is None or str(path) == "-":
        yield sys.stdout
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        yield f


def write_jsonl(stream, record: dict) -> None:
    stream.write(json.dumps(record, ensure_ascii=False) + "\n")


@app.command()
def ingest(inputs: list[Path] = InputsArgument, db: Path = DbOption, quiet: bool = QuietOption) -> None:
    """Read pages into the database (bad records are skipped and counted by reason).

    Example: templater ingest crawl.warc.gz pages.jsonl.gz --db crawl.db
    """
    with handled_errors():
        store = pipeline.open_store(db)
        with progress_bar("ingest", quiet) as progress:
            summary = pipeline.ingest(store, inputs, progress=progress)
        report("ingest", summary, quiet)


@app.command()
def build(db: Path = DbOption, quiet: bool = QuietOption) -> None:
    """Group stored pages by URL prefix and layout and learn each group's template.

    Example: templater build --db crawl.db
    """
    with handled_errors():
        store = pipeline.open_store(db, create=False)
        with progress_bar("build", quiet) as progress:
            summary = pipeline.build(store, progress=progress)
        report("build", summary, quiet)


FallbackOption = typer.Option("auto", "--fallback", help="Single-page method: density, ann, fdr or auto.")
OutputOption = typer.Option(None, "--output", "-o", help="JSON Lines output file (default: standard output).")


@app.command()
def extract(db: Path = DbOption, output: Optional[Path] = OutputOption, fallback: str = FallbackOption,
            quiet: bool = QuietOption) -> None:
    """Extract the main content of every stored page as JSON Lines.

    Each line: {"id", "url", "site", "text", "method", "template", "coverage"}.

    Example: templater extract --db crawl.db --output extracted.jsonl
    """
    with handled_errors():
        store = pipeline.open_store(db, create=False)
        summary = pipeline.Summary()
        with progress_bar("extract", quiet) as progress, output_stream(output) as stream:
            for result in pipeline.extract(store, method=fallback, progress=progress):
                write_jsonl(stream, result.to_json())
                summary.counts[result.method] += 1
        report("extract", summary, quiet)


@app.command()
def run(inputs: list[Path] = InputsArgument, db: Path = DbOption, output: Optional[Path] = OutputOption,
        fallback: str = FallbackOption, quiet: bool = QuietOption) -> None:
    """Ingest, learn templates and extract, in one go.

    Example: templater run samples/pages.jsonl.gz --db samples.db --output extracted.jsonl
    """
    with handled_errors():
        store = pipeline.open_store(db)
        with progress_bar("ingest", quiet) as progress:
            report("ingest", pipeline.ingest(store, inputs, progress=progress), quiet)
        with progress_bar("build", quiet) as progress:
            report("build", pipeline.build(store, progress=progress), quiet)
        summary = pipeline.Summary()
        with progress_bar("extract", quiet) as progress, output_stream(output) as stream:
            for result in pipeline.extract(store, method=fallback, progress=progress):
                write_jsonl(stream, result.to_json())
                summary.counts[result.method] += 1
        report("extract", summary, quiet)


rules_app = typer.Typer(add_completion=False, no_args_is_help=True, rich_markup_mode=None,
                        help="See, test, compare, export and pin each site's template rules.")
app.add_typer(rules_app, name="rules")

JsonOption = typer.Option(False, "--json", help="Print JSON instead of text.")
SiteArgument = typer.Argument(..., help="Site group, as `templater rules list` shows it (e.g. sqlite.org/).")
UrlOption = typer.Option(None, "--url", help="The page's real URL, to match a local file to its site's template.")


def _print_json(data) -> None:
    typer.echo(json.dumps(data, ensure_ascii=False, indent=2))


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


@rules_app.command("list")
def list_templates(db: Path = DbOption, as_json: bool = JsonOption) -> None:
    """Every site group with its template version, pages, rules, median coverage, when learned, and staleness.

    Example: templater rules list --db samples.db
    """
    with handled_errors():
        summaries = rule_inspect.list_templates(pipeline.open_store(db, create=False))
    if as_json:
        _print_json([s.to_json() for s in summaries])
        return
    typer.echo(f"{'SITE':<34} {'VERSION':>7} {'PAGES':>5} {'RULES':>5} {'PINNED':>6} {'COVERAGE':>8}  "
               f"{'LEARNED AT':<25} STALE")
    for s in summaries:
        typer.echo(f"{s.site:<34} {s.version:>7} {s.pages:>5} {s.rules:>5} {s.pinned or '-':>6} "
                   f"{_percent(s.median_coverage):>8}  {s.learned_at:<25} {'yes' if s.stale else 'no'}")


@rules_app.command("show")
def show_rules(site: str = SiteArgument, db: Path = DbOption,
               version: Optional[int] = typer.Option(None, "--version", help="Template version (default: current)."),
               as_json: bool = JsonOption) -> None:
    """A site's rules: action, support, XPath and a sample of the text each matched.

    Example: templater rules show --db samples.db sqlite.org/
    """
    with handled_errors():
        shown = rule_inspect.show_rules(pipeline.open_store(db, create=False), site, version=version)
    if as_json:
        _print_json(shown.to_json())
        return
    typer.echo(f"{shown.site}  version {shown.version}{' (current)' if shown.current else ''}  learned "
               f"{shown.learned_at}  pages {shown.pages}")
    if shown.pinned:
        typer.echo(f"pinned rules in force instead of the learned ones ({len(shown.pinned)}):")
        _print_rules([rule for rule, _ in shown.pinned], notes=[note for _, note in shown.pinned])
        typer.echo("learned rules (not applied while pinned rules exist):")
    _print_rules(shown.learned)


def _print_rules(rules, *, notes=None) -> None:
    typer.echo(f"{'#':>4}  {'ACTION':<10} {'MATCH':<6} {'SUPPORT':>7}  {'XPATH':<44} SAMPLE")
    for i, rule in enumerate(rules):
        note = f"  [{notes[i]}]" if notes and notes[i] else ""
        typer.echo(f"{i:>4}  {rule.action:<10} {rule_inspect.matched_by(rule):<6} "
                   f"{_percent(rule.support):>7}  {rule.xpath:<44} {rule_inspect.shorten(rule.sample, 50)}{note}")


@rules_app.command("explain")
def explain_page(target: str = typer.Argument(..., help="A stored page's URL, or a local .html file."),
                 db: Path = DbOption, url: Optional[str] = UrlOption, fallback: str = FallbackOption,
                 as_json: bool = JsonOption) -> None:
    """Each block of a page, kept or dropped, and the rule (or fallback decision) that decided it.

    Example: templater rules explain --db samples.db https://sqlite.org/lts.html
    """
    with handled_errors():
        explained = rule_inspect.explain_page(pipeline.open_store(db, create=False), target, url=url,
                                              method=fallback)
    _print_explanation(explained, as_json)


@rules_app.command("test")
def test_rules(site: str = SiteArgument, file: Path = typer.Argument(..., help="A local .html page."),
               db: Path = DbOption, url: Optional[str] = UrlOption, fallback: str = FallbackOption,
               as_json: bool = JsonOption) -> None:
    """Apply a site's template (with its pinned rules) to a local page; nothing is stored.

    Example: templater rules test --db samples.db sqlite.org/ saved/lts.html
    """
    with handled_errors():
        explained = rule_inspect.test_rules(pipeline.open_store(db, create=False), site, file, url=url,
                                            method=fallback)
    _print_explanation(explained, as_json)


def _print_explanation(page, as_json: bool) -> None:
    if as_json:
        _print_json(page.to_json())
        return
    template = f"{page.template}{' (pinned rules)' if page.pinned else ''}" if page.template else "none (fallback)"
    typer.echo(f"page      {page.url}\ntemplate  {template}  coverage {_percent(page.coverage)}  "
               f"method {page.method}\nkept      {page.kept_chars} of {page.total_chars} characters, "
               f"{sum(b.kept for b in page.blocks)} of {len(page.blocks)} blocks")
    typer.echo(f"{'#':>4}  {'':<4}  {'DECIDED BY':<36}  {'TEXT':<50}  XPATH")
    for b in page.blocks:
        typer.echo(f"{b.index:>4}  {'kept' if b.kept else 'DROP'}  {b.label:<36}  "
                   f"{rule_inspect.shorten(b.text, 50):<50}  {b.xpath}")


@rules_app.command("diff")
def diff_rules(site: str = SiteArgument, old: int = typer.Argument(..., help="Older version."),
               new: int = typer.Argument(..., help="Newer version."), db: Path = DbOption,
               as_json: bool = JsonOption) -> None:
    """Rules added, removed and changed between two versions of a site's template.

    Example: templater rules diff --db samples.db sqlite.org/ 1 2
    """
    with handled_errors():
        diff = rule_inspect.diff_rules(pipeline.open_store(db, create=False), site, old, new)
    if as_json:
        _print_json(diff.to_json())
        return
    typer.echo(f"{diff.site}  v{diff.old} -> v{diff.new}: {len(diff.added)} added, {len(diff.removed)} removed, "
               f"{len(diff.changed)} changed, {diff.unchanged} unchanged")
    for sign, rules in (("+", diff.added), ("-", diff.removed)):
        for position, rule in rules:
            typer.echo(f"{sign} #{position:<4} {rule.action:<10} {_percent(rule.support):>5}  {rule.xpath}  "
                       f"{rule_inspect.shorten(rule.sample, 40)!r}")
    for change in diff.changed:
        what = "; ".join(f"{f} {getattr(change.before, f)} -> {getattr(change.after, f)}" for f in change.fields)
        typer.echo(f"~ #{change.position_before}->#{change.position_after} {change.after.action:<10} {what}")


@rules_app.command("export")
def export_rules(site: str = SiteArgument, db: Path = DbOption,
                 version: Optional[int] = typer.Option(None, "--version",
                                                       help="Export this learned version (default: the rules in "
                                                            "force: pinned, else current)."),
                 output: Optional[Path] = typer.Option(None, "--output", "-o", help="JSON file (default: stdout).")
                 ) -> None:
    """A site's rules as an editable JSON file, to pin with `templater rules import`.

    Example: templater rules export --db samples.db sqlite.org/ --output sqlite-rules.json
    """
    with handled_errors():
        document = rule_inspect.export_rules(pipeline.open_store(db, create=False), site, version=version)
        with output_stream(output) as stream:
            stream.write(json.dumps(document, ensure_ascii=False, indent=2) + "\n")


@rules_app.command("import")
def import_rules(file: Path = typer.Argument(..., help="A rules file written by `templater rules export`."),
                 db: Path = DbOption,
                 site: Optional[str] = typer.Option(None, "--site", help="Pin for this site (default: the file's)."),
                 as_json: bool = JsonOption) -> None:
    """Pin a site's rules from a rules file: they replace its learned rules until `rules remove-pinned`.

    Every XPath is checked first; an invalid one is refused with its column, and nothing is stored.

    Example: templater rules import --db samples.db sqlite-rules.json
    """
    with handled_errors():
        store = pipeline.open_store(db, create=False)
        shown = rule_inspect.import_rules(store, rule_inspect.read_rules_file(file), site=site, source=str(file))
    if as_json:
        _print_json(shown.to_json())
        return
    err.print(f"pinned {len(shown.pinned)} rules for {shown.site}; they replace its learned rules until "
              f"`templater rules remove-pinned --db {db} {shown.site}`", highlight=False, soft_wrap=True, markup=False)


@rules_app.command("remove-pinned")
def remove_pinned(site: str = SiteArgument, db: Path = DbOption) -> None:
    """Remove a site's pinned rules: its learned rules apply again.

    Example: templater rules remove-pinned --db samples.db sqlite.org/
    """
    with handled_errors():
        removed = rule_inspect.remove_pinned(pipeline.open_store(db, create=False), site)
    err.print(f"removed {removed} pinned rules of {site}; its learned rules apply again", highlight=False, markup=False)


@app.command("report")
def report_html(site: str = SiteArgument, db: Path = DbOption,
                page: Optional[str] = typer.Option(None, "--page", help="URL of the stored page to show "
                                                                         "(default: the site's first page)."),
                output: Path = typer.Option(..., "--output", "-o", help="HTML file to write."),
                fallback: str = FallbackOption, quiet: bool = QuietOption) -> None:
    """One self-contained HTML page showing a site's template at work: a page's blocks shaded by the rule that
    dropped them, the rules with their support, and the template's coverage across the site's pages.

    Example: templater report --db samples.db sqlite.org/ --output sqlite-report.html
    """
    with handled_errors():
        store = pipeline.open_store(db, create=False)
        with progress_bar("report", quiet) as progress:
            document = rule_inspect.build_report(store, site, page_url=page, method=fallback, progress=progress)
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(document, encoding="utf-8")
    if not quiet:
        err.print(f"report: wrote {output}", highlight=False, soft_wrap=True, markup=False)


def main() -> None:
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    app()


if __name__ == "__main__":
    main()
