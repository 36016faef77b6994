"""templater: learn each site's template from its own pages, extract main content, find near-duplicates.

The layers, top to bottom; a module imports only from its own layer or the ones below it
(``tests/test_layering.py`` checks it, and that no private ``_name`` of a module is imported by another):

    cli.py        the command line (typer, rich): the one place that prints and turns errors into messages
    application   the templater modules named in APPLICATION_MODULES: they run the work over a store
                  (ingest, build, extract, recrawl, the near-duplicate index, rule inspection, evaluations, Spark)
    store/        SQLite storage (sqlite-utils): schema, pages, templates and rules, LSH buckets, runs
    core          every other templater module: pure functions over pages, blocks, templates and texts (parse,
                  blocks, align, grouping, template, extract, fallback, shingles, metadata, document, ...), with
                  no SQLite, no command line and no Spark. A new module is core unless added to
                  APPLICATION_MODULES on purpose.

Data crossing module lines is in ``templater.datatypes``; thresholds and limits in ``templater.config``; errors
derive from ``templater.errors.TemplaterError``.
"""

__version__ = "0.1.0"
DISTRIBUTION = "site-templater"  # the name on the package index ("templater" there is another project)

APPLICATION_MODULES = frozenset({"pipeline", "recrawl", "dedup", "signature_run", "rule_inspect", "evaluation_run",
                                 "spark_job", "workers"})
