#!/usr/bin/env python3
"""Build the dev documentation suite from installed Debian documentation packages.

    python bench/build_docs_suite.py OUT.jsonl.gz [--pages N] [--seed S]

Needs (root): apt-get install python3.11-doc postgresql-doc-15 sqlite3-doc git-doc debian-reference-en \
libcommons-lang3-java-doc

Six documentation sites, each from one generator: the Python 3.11 manual (Sphinx), the PostgreSQL 15 manual
(DocBook), the SQLite documentation (its own generator), git's manual pages (asciidoc), the Debian Reference
(DocBook) and the Apache Commons Lang 3 API reference (Javadoc). Each site's pages are sampled
deterministically (seeded shuffle of the sorted candidate files, the first N whose gold has at least
MIN_GOLD_CHARS characters); each page gets its upstream URL. Gold = the text of the generator's own content
container (Sphinx `div[@role='main']`, DocBook's chapter / section / refentry divisions between the navigation
header and footer, asciidoc's header and content divisions, javadoc's `<main>`), with the container's own
navigation (tables of contents, permalink signs) removed, one block-level element a line, as
samples/build_samples.py derives the samples' gold.

Writes one JSON object a line in the shared corpus format (id, url, html, site, dataset "docs", gold) plus
fetched_at, source and licence; the file is generated, so it lives outside the repository. Score with
`../shared/eval/score.py OUT.jsonl.gz PRED`; benchmark with `python bench/bench_sites.py --suite OUT.jsonl.gz
--by site`.

Kept apart: the Rust toolchain's and Node.js's HTML documentation are reserved for an independent check and are
never read here.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import re
import sys
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "samples"))

from build_samples import BuildError, derive_gold, package_version  # noqa: E402

DATASET = "docs"
DEFAULT_PAGES = 35  # pages sampled per site (a site with fewer candidates gives all it has)
DEFAULT_SEED = 13
MIN_GOLD_CHARS = 200  # a page whose content container holds less (a part's table of contents) is not sampled
MAX_HTML_BYTES = 4 * 1024 * 1024  # larger files are not sampled (the changelog of a whole release series)


@dataclass(frozen=True)
class DocSet:
    """One documentation site: where its files are installed, which of them are pages, where the content is."""

    key: str  # id prefix
    site: str  # URL host without "www."
    package: str  # the Debian package that ships the files
    root: str  # installed HTML directory
    base_url: str  # the public URL of `root`
    licence: str
    include: str  # regular expression a path under `root` must match in full
    exclude: str  # ... and must not match anywhere
    main_xpath: str  # the generator's content container(s)
    drop_xpaths: tuple[str, ...] = ()  # the container's own navigation, removed before the text is taken


DOC_SETS = (
    DocSet(key="python", site="docs.python.org", package="python3.11-doc", root="/usr/share/doc/python3.11/html",
           base_url="https://docs.python.org/3.11/", licence="PSF-2.0",
           include=r"(library|tutorial|reference|howto|faq|using|c-api|extending|installing|distributing)/.*\.html",
           exclude=r"^$", main_xpath="//div[@role='main']", drop_xpaths=(".//a[@class='headerlink']",)),
    DocSet(key="postgresql", site="postgresql.org", package="postgresql-doc-15",
           root="/usr/share/doc/postgresql-doc-15/html", base_url="https://www.postgresql.org/docs/15/",
           licence="PostgreSQL", include=r"[a-z0-9-]+\.html", exclude=r"^(index|bookindex|release-.*)\.html$",
           main_xpath="/html/body/div[not(@class='navheader') and not(@class='navfooter')]",
           drop_xpaths=(".//div[@class='toc']",)),
    DocSet(key="sqlite", site="sqlite.org", package="sqlite3-doc", root="/usr/share/doc/sqlite3",
           base_url="https://sqlite.org/", licence="public-domain", include=r"[a-z0-9_]+\.html",
           exclude=r"^(index|docs|doclist|sitemap|keyword_index|toc|changes|chronology|releaselog.*|doc_.*)\.html$",
           main_xpath="(//div[@class='fancy'] | /html/body[not(.//div[@class='fancy'])])",
           drop_xpaths=("self::body/div[@class='nosearch']", ".//div[@class='fancy_toc']",
                        ".//p[.//a[@id='mtimelink']]")),
    DocSet(key="git", site="kernel.org", package="git-doc", root="/usr/share/doc/git-doc",
           base_url="https://www.kernel.org/pub/software/scm/git/docs/", licence="GPL-2.0",
           include=r"git[a-z0-9-]*\.html", exclude=r"^$",
           main_xpath="//div[@id='header'] | //div[@id='content']"),
    DocSet(key="debian-reference", site="debian.org", package="debian-reference-en",
           root="/usr/share/debian-reference", base_url="https://www.debian.org/doc/manuals/debian-reference/",
           licence="GPL-2.0+", include=r"(pr|ch|ap)[a-z0-9]+\.en\.html", exclude=r"^$",
           main_xpath="/html/body/div[not(@class='navheader') and not(@class='navfooter')]",
           drop_xpaths=(".//div[@class='toc']",)),
    DocSet(key="commons-lang", site="commons.apache.org", package="libcommons-lang3-java-doc",
           root="/usr/share/doc/libcommons-lang3-java/api",
           base_url="https://commons.apache.org/proper/commons-lang/apidocs/", licence="Apache-2.0",
           include=r"org/apache/commons/lang3/(.*/)?([A-Z][A-Za-z0-9.]*|package-summary)\.html",
           exclude=r"/class-use/", main_xpath="//main[@role='main']"),
)


def candidates(doc: DocSet) -> list[str]:
    """Paths under the site's root that are pages of the suite, sorted."""
    root = Path(doc.root)
    if not root.is_dir():
        raise BuildError(f"{root} missing: apt-get install {doc.package}")
    include, exclude = re.compile(doc.include), re.compile(doc.exclude)
    paths = (p.relative_to(root).as_posix() for p in root.rglob("*.html") if p.is_file())
    return sorted(p for p in paths if include.fullmatch(p) and not exclude.search(p))


def build_site(doc: DocSet, *, pages: int, seed: int) -> list[dict]:
    """The site's sampled pages as suite records."""
    version = package_version(doc.package)
    paths = candidates(doc)
    random.Random(f"{seed}:{doc.key}").shuffle(paths)
    records = []
    for path in paths:
        if len(records) >= pages:
            break
        record = page_record(doc, path, version)
        if record is not None:
            records.append(record)
    return sorted(records, key=lambda r: r["id"])


def page_record(doc: DocSet, path: str, version: str) -> dict | None:
    """The page as a record, or None when it is not usable (not UTF-8, too large, too little gold)."""
    file = Path(doc.root) / path
    data = file.read_bytes()
    if len(data) > MAX_HTML_BYTES:
        return None
    try:
        markup = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    try:
        gold = derive_gold(markup, main_xpath=doc.main_xpath, drop_xpaths=doc.drop_xpaths)
    except BuildError:
        return None
    if len(gold) < MIN_GOLD_CHARS:
        return None
    stamp = datetime.fromtimestamp(file.stat().st_mtime, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {"id": f"{doc.key}/" + re.sub(r"[^A-Za-z0-9_]+", "-", path.removesuffix(".html")),
            "url": doc.base_url + path, "html": markup, "site": doc.site, "dataset": DATASET, "gold": gold,
            "fetched_at": stamp, "source": f"Debian {doc.package} {version}: {doc.root}/{path}",
            "licence": doc.licence}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="the suite file to write (.jsonl.gz)")
    parser.add_argument("--pages", type=int, default=DEFAULT_PAGES, help="pages sampled per site")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    args = parser.parse_args(argv)
    try:
        sites = [(doc, build_site(doc, pages=args.pages, seed=args.seed)) for doc in DOC_SETS]
    except BuildError as e:
        print(f"build_docs_suite: {e}", file=sys.stderr)
        return 2
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(args.out, "wt", encoding="utf-8", compresslevel=6) as f:
        for _, records in sites:
            for record in records:
                f.write(json.dumps(record, ensure_ascii=False) + "\n")
    for doc, records in sites:
        print(f"{doc.site:22} {doc.package:28} {len(records):4} pages")
    print(f"{sum(len(r) for _, r in sites)} pages -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
