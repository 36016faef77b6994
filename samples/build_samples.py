#!/usr/bin/env python3
"""Rebuild samples/ from installed Debian documentation packages and the shared ScrapingHub corpus.

    python samples/build_samples.py [--corpus PATH] [--out DIR]

Needs (maintainers only; the tests read the files this writes and need none of this):
  apt-get install python3.11-doc postgresql-doc-15 sqlite3-doc
  the MIT-licensed ScrapingHub dev corpus at ../shared/corpus/scrapinghub/pages.jsonl.gz (or --corpus)

Writes into samples/ (or --out):
  pages.jsonl.gz   one JSON object a line: id, url, html, fetched_at, site, source, licence
  gold.jsonl       one JSON object a line: id, site, gold (main-content text, one paragraph a line; the headline
                   included, except on ScrapingHub pages, whose gold is the article body alone), dataset
  docs.warc.gz     the documentation pages again, as WARC/1.0 HTTP response records
  LICENSES/        the licence notices of every source, copied verbatim

The gold of a documentation page is derived from its own HTML by `derive_gold` (see samples/README.md):
a fixed main-content element per site, fixed elements dropped inside it, block-level elements as lines.
The script is deterministic: same packages and corpus in, same bytes out.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import re
import shutil
import subprocess
import sys
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from lxml import etree, html as lxml_html

SAMPLES_DIR = Path(__file__).resolve().parent
DEFAULT_CORPUS = SAMPLES_DIR.parent.parent / "shared" / "corpus" / "scrapinghub" / "pages.jsonl.gz"
SCRAPINGHUB_SOURCE = "scrapinghub/article-extraction-benchmark@4a3bc979f76c0df73cb95fe272e2fc1b96f9f010"

# Elements that start and end a line of gold text. Table cells (td, th) are separated by a space
# within their row's line; <br> ends a line; <pre> keeps its own line breaks.
BLOCK_TAGS = frozenset(
    "address article aside blockquote body caption center dd details dialog div dl dt fieldset figcaption "
    "figure footer form h1 h2 h3 h4 h5 h6 header hgroup hr li main nav ol p section summary table tbody "
    "tfoot thead tr ul".split()
)
CELL_TAGS = frozenset({"td", "th"})
# Never text, on any site: code and styling, drawings, form controls.
SKIP_TAGS = ("script", "style", "noscript", "template", "svg", "button", "select", "input", "textarea")
PERMALINK_SIGN = "\u00b6"  # the "¶" after headings and definitions
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class DocSite:
    """One documentation site: where its pages are installed and how its main content is marked up."""

    key: str  # id prefix
    site: str  # URL host without "www."
    package: str  # the Debian package that ships the files
    expected_version: str  # the version samples/ was built from (README); others only warn
    root: str  # installed HTML directory
    base_url: str  # the public URL of `root`
    licence: str  # SPDX-style name
    copyright_file: str
    main_xpath: str  # the main-content element(s)
    drop_xpaths: tuple[str, ...]  # removed inside the main content before the text is taken
    pages: tuple[str, ...]  # paths under `root`


DOC_SITES = (
    DocSite(
        key="python",
        site="docs.python.org",
        package="python3.11-doc",
        expected_version="3.11.2-6+deb12u9",
        root="/usr/share/doc/python3.11/html",
        base_url="https://docs.python.org/3.11/",
        licence="PSF-2.0",
        copyright_file="/usr/share/doc/python3.11-doc/copyright",
        main_xpath="//div[@role='main']",
        drop_xpaths=(".//a[@class='headerlink']",),
        pages=(
            "library/json.html",
            "library/csv.html",
            "library/bisect.html",
            "library/filecmp.html",
            "library/contextvars.html",
            "library/quopri.html",
            "library/platform.html",
            "tutorial/appetite.html",
            "tutorial/venv.html",
            "tutorial/errors.html",
        ),
    ),
    DocSite(
        key="postgresql",
        site="postgresql.org",
        package="postgresql-doc-15",
        expected_version="15.20-0+deb12u1",
        root="/usr/share/doc/postgresql-doc-15/html",
        base_url="https://www.postgresql.org/docs/15/",
        licence="PostgreSQL",
        copyright_file="/usr/share/doc/postgresql-doc-15/copyright",
        main_xpath="/html/body/div[not(@class='navheader') and not(@class='navfooter')]",
        drop_xpaths=(".//div[@class='toc']",),
        pages=(
            "sql-select.html",
            "sql-insert.html",
            "sql-truncate.html",
            "sql-vacuum.html",
            "functions-math.html",
            "datatype-boolean.html",
            "indexes-partial.html",
            "mvcc-intro.html",
            "tutorial-join.html",
            "tutorial-transactions.html",
        ),
    ),
    DocSite(
        key="sqlite",
        site="sqlite.org",
        package="sqlite3-doc",
        expected_version="3.40.1-2+deb12u2",
        root="/usr/share/doc/sqlite3",
        base_url="https://sqlite.org/",
        licence="public-domain",
        copyright_file="/usr/share/doc/sqlite3-doc/copyright",
        # Newer pages wrap their content in div.fancy; older ones put it straight into <body>.
        main_xpath="(//div[@class='fancy'] | /html/body[not(.//div[@class='fancy'])])",
        drop_xpaths=(
            "self::body/div[@class='nosearch']",  # logo, tagline, menus, search form (pages without div.fancy)
            ".//div[@class='fancy_toc']",  # "Table Of Contents" box
            ".//p[.//a[@id='mtimelink']]",  # "This page last modified on ..." footer
        ),
        pages=(
            "autoinc.html",
            "datatype3.html",
            "different.html",
            "expridx.html",
            "foreignkeys.html",
            "lang_vacuum.html",
            "lang_transaction.html",
            "lts.html",
            "cpu.html",
            "whentouse.html",
        ),
    ),
)

# Single pages of different sites from the MIT-licensed ScrapingHub benchmark (dev side of the shared
# corpus): each site has one page there, so they exercise the single-page fallback.
SCRAPINGHUB_IDS = (
    "4648a420af9984d45b76a4afedf4f74965f8a2e0bf1c69bd3da2dc189020f3c9",  # expapp.com
    "ff0f958ade714ebfaf5c0b42b1c0152a62063f4e6f72141406ccefc4a2677f21",  # vse-diety.com (Russian)
    "1ee91d1fce65e09be8b8d2d29eab771546d98ca2ba5c862941e660e9fec12432",  # polygraph.info
    "3cb22bfabed8de715c0813a7bb5052363c96bd71ccce3bb2dfb3ab9d1d7a9bbc",  # slashgear.com
    "82b6d780c792df78dcfb00484d50c86fbc7f324a9eb5835b7615f028edb9a574",  # hosted.ap.org
    "f105de6e63ca91ea482f60193f6252092557f969f2fd128ff68c0d4d6b90dd7d",  # note100yen.com
    "63db31a161b3c5b64e88c2978635cbc38d342ba82fd2c5335321203dcc55c76f",  # vg247.com
    "e1c7023ee2148901b086256fdd30a0893d10b0720b510d5ff07a021109347266",  # phys.org
)

SCRAPINGHUB_MIT_NOTICE = """\
MIT License

Copyright (c) 2020 Scrapinghub

Permission is hereby granted, free of charge, to any person obtaining a copy
of this software and associated documentation files (the "Software"), to deal
in the Software without restriction, including without limitation the rights
to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
SOFTWARE.
"""


class BuildError(Exception):
    """A missing input or an assumption about an input that no longer holds."""


# ---------------------------------------------------------------- gold: main content -> lines of text


def derive_gold(markup: str, *, main_xpath: str, drop_xpaths: tuple[str, ...]) -> str:
    """The main-content text of a page: one block-level element a line (see samples/README.md)."""
    root = parse_document(markup)
    mains = root.xpath(main_xpath)
    if not mains:
        raise BuildError(f"main-content XPath {main_xpath!r} matches nothing; fix the site's main_xpath")
    for main in mains:
        drop_elements(main, drop_xpaths)
    lines = [line for main in mains for line in linearize(main)]
    return "\n".join(lines)


def parse_document(markup: str) -> etree._Element:
    """Parse decoded HTML (an XML declaration inside the string is allowed) into an lxml tree."""
    parser = lxml_html.HTMLParser(encoding="utf-8")
    return lxml_html.document_fromstring(markup.encode("utf-8"), parser=parser)


def drop_elements(main: etree._Element, drop_xpaths: tuple[str, ...]) -> None:
    """Remove the site's non-content elements and SKIP_TAGS, keeping the text that follows each."""
    doomed = [el for xpath in drop_xpaths for el in main.xpath(xpath)]
    doomed += [el for el in main.iter(*SKIP_TAGS)]
    for element in doomed:
        if element.getparent() is not None:
            element.drop_tree()


def linearize(element: etree._Element) -> list[str]:
    """Text of `element` as lines: every block-level element starts and ends a line."""
    lines: list[str] = []
    buffer: list[str] = []
    walk_text(element, lines, buffer)
    flush_line(lines, buffer)
    return lines


def walk_text(node: etree._Element, lines: list[str], buffer: list[str]) -> None:
    tag = node.tag if isinstance(node.tag, str) else None  # comments and PIs have no str tag
    if tag is None:
        return
    if tag == "pre":
        flush_line(lines, buffer)
        lines.extend(clean_line(line) for line in node.text_content().splitlines() if clean_line(line))
        return
    if tag == "br":
        flush_line(lines, buffer)
        return
    is_block = tag in BLOCK_TAGS
    if is_block:
        flush_line(lines, buffer)
    if tag in CELL_TAGS:
        buffer.append(" ")
    buffer.append(node.text or "")
    for child in node:
        walk_text(child, lines, buffer)
        buffer.append(child.tail or "")
    if is_block:
        flush_line(lines, buffer)


def flush_line(lines: list[str], buffer: list[str]) -> None:
    line = clean_line("".join(buffer))
    if line:
        lines.append(line)
    buffer.clear()


def clean_line(text: str) -> str:
    """Drop permalink signs and collapse whitespace."""
    return _SPACE.sub(" ", text.replace(PERMALINK_SIGN, "")).strip()


# ---------------------------------------------------------------- inputs


def package_version(package: str) -> str:
    """The installed version of a Debian package, or raise with the install command."""
    try:
        done = subprocess.run(["dpkg-query", "-W", "-f=${Status}|${Version}", package],
                              capture_output=True, text=True, check=False)
    except FileNotFoundError:
        raise BuildError(f"dpkg-query not found: build samples on Debian with {package} installed") from None
    status, _, version = done.stdout.partition("|")
    if done.returncode != 0 or "installed" not in status.split():
        raise BuildError(f"Debian package {package} is not installed; run: apt-get install {package}")
    return version


def read_doc_page(site: DocSite, path: str) -> tuple[str, str]:
    """The page's HTML (strict UTF-8) and its file time as an ISO 8601 UTC string."""
    file = Path(site.root) / path
    if not file.is_file():
        raise BuildError(f"{file} missing: reinstall {site.package} (apt-get install --reinstall {site.package})"
                         f" or change the page list of {site.key!r}")
    try:
        markup = file.read_bytes().decode("utf-8")
    except UnicodeDecodeError as e:
        raise BuildError(f"{file} is not UTF-8 ({e}); samples/ stores text, pick another page") from None
    stamp = datetime.fromtimestamp(file.stat().st_mtime, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return markup, stamp


def page_id(site: DocSite, path: str) -> str:
    """'library/email.utils.html' -> 'python/library-email-utils'."""
    stem = path.removesuffix(".html")
    return f"{site.key}/" + re.sub(r"[^A-Za-z0-9_]+", "-", stem)


def build_doc_records(site: DocSite) -> tuple[list[dict], list[dict]]:
    version = package_version(site.package)
    if version != site.expected_version:
        print(f"warning: {site.package} {version} installed, README documents {site.expected_version}",
              file=sys.stderr)
    pages, golds = [], []
    for path in site.pages:
        markup, stamp = read_doc_page(site, path)
        record_id = page_id(site, path)
        gold = derive_gold(markup, main_xpath=site.main_xpath, drop_xpaths=site.drop_xpaths)
        if not gold:
            raise BuildError(f"{record_id}: empty gold from {site.main_xpath!r}; check the page's markup")
        pages.append({"id": record_id, "url": site.base_url + path, "html": markup, "fetched_at": stamp,
                      "site": site.site, "source": f"Debian {site.package} {version}: {site.root}/{path}",
                      "licence": site.licence})
        golds.append({"id": record_id, "site": site.site, "gold": gold, "dataset": "docs"})
    return pages, golds


def build_scrapinghub_records(corpus: Path) -> tuple[list[dict], list[dict]]:
    if not corpus.is_file():
        raise BuildError(f"ScrapingHub corpus {corpus} missing; pass --corpus PATH to its pages.jsonl.gz")
    wanted = set(SCRAPINGHUB_IDS)
    found = {}
    with gzip.open(corpus, "rt", encoding="utf-8") as f:
        for line in f:
            record = json.loads(line)
            if record["id"] in wanted:
                found[record["id"]] = record
    missing = wanted - found.keys()
    if missing:
        raise BuildError(f"{corpus} lacks ids {sorted(missing)}; update SCRAPINGHUB_IDS")
    pages, golds = [], []
    for source_id in SCRAPINGHUB_IDS:
        record = found[source_id]
        record_id = f"scrapinghub/{source_id}"
        pages.append({"id": record_id, "url": record["url"], "html": record["html"], "fetched_at": None,
                      "site": record["site"], "source": f"{SCRAPINGHUB_SOURCE}: html/{source_id}.html.gz",
                      "licence": "MIT"})
        golds.append({"id": record_id, "site": record["site"], "gold": record["gold"], "dataset": "scrapinghub"})
    return pages, golds


# ---------------------------------------------------------------- outputs


def write_jsonl(path: Path, records: list[dict]) -> None:
    data = "".join(json.dumps(r, ensure_ascii=False, sort_keys=False) + "\n" for r in records).encode("utf-8")
    if path.suffix == ".gz":
        with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as f:
            f.write(data)
    else:
        path.write_bytes(data)


def write_warc(path: Path, records: list[dict]) -> None:
    """WARC/1.0, gzipped per record: one warcinfo record, then an HTTP 200 response per page."""
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    with open(path, "wb") as out:
        writer = WARCWriter(out, gzip=True)
        writer.write_record(warcinfo_record(writer, records))
        for record in records:
            body = record["html"].encode("utf-8")
            http_headers = StatusAndHeaders("200 OK", [("Content-Type", "text/html; charset=utf-8"),
                                                       ("Content-Length", str(len(body)))], protocol="HTTP/1.1")
            warc_headers = {"WARC-Date": record["fetched_at"], "WARC-Record-ID": record_uuid(record["url"])}
            writer.write_record(writer.create_warc_record(record["url"], "response", payload=io.BytesIO(body),
                                                          length=len(body), http_headers=http_headers,
                                                          warc_headers_dict=warc_headers))


def warcinfo_record(writer, records: list[dict]):
    info = (f"software: templater samples/build_samples.py\r\n"
            f"description: {len(records)} documentation pages; see samples/README.md for sources and licences\r\n"
            ).encode("utf-8")
    date = max(r["fetched_at"] for r in records)
    return writer.create_warc_record("", "warcinfo", payload=io.BytesIO(info), length=len(info),
                                     warc_content_type="application/warc-fields",
                                     warc_headers_dict={"WARC-Date": date, "WARC-Filename": "docs.warc.gz",
                                                        "WARC-Record-ID": record_uuid("warcinfo:docs.warc.gz")})


def record_uuid(name: str) -> str:
    return f"<urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, name)}>"


def copy_licences(out: Path) -> None:
    folder = out / "LICENSES"
    folder.mkdir(exist_ok=True)
    for site in DOC_SITES:
        shutil.copyfile(site.copyright_file, folder / f"{site.package}.copyright")
    (folder / "scrapinghub-article-extraction-benchmark.MIT").write_text(SCRAPINGHUB_MIT_NOTICE, encoding="utf-8")


def build(out: Path, corpus: Path) -> None:
    doc_pages, doc_golds = [], []
    for site in DOC_SITES:
        pages, golds = build_doc_records(site)
        doc_pages += pages
        doc_golds += golds
    sh_pages, sh_golds = build_scrapinghub_records(corpus)
    out.mkdir(parents=True, exist_ok=True)
    write_jsonl(out / "pages.jsonl.gz", doc_pages + sh_pages)
    write_jsonl(out / "gold.jsonl", doc_golds + sh_golds)
    write_warc(out / "docs.warc.gz", doc_pages)
    copy_licences(out)
    report(out, doc_pages + sh_pages)


def report(out: Path, pages: list[dict]) -> None:
    counts: dict[str, int] = {}
    for page in pages:
        counts[page["site"]] = counts.get(page["site"], 0) + 1
    for site, count in counts.items():
        print(f"{site}: {count} pages")
    size = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    print(f"samples/ holds {size / 1e6:.2f} MB")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS, help="ScrapingHub pages.jsonl.gz")
    parser.add_argument("--out", type=Path, default=SAMPLES_DIR, help="output folder (default: samples/)")
    args = parser.parse_args(argv)
    try:
        build(args.out, args.corpus)
    except BuildError as e:
        print(f"build_samples.py: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
