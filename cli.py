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
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

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
        err.print(f"[red]error:[/red] {e}", highlight=False)
        raise typer.Exit(1) from None
    except OSError as e:
        err.print(f"[red]error:[/red] {e.strerror or e}: {e.filename or ''}", highlight=False)
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


def main() -> None:
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    app()


if __name__ == "__main__":
    main()
