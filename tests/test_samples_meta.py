"""samples/ is what the golden tests stand on: check its shape, its gold and its WARC copy.

None of this needs the Debian packages samples/build_samples.py reads; the ScrapingHub check needs
../shared and skips without it.
"""

from __future__ import annotations

import gzip
import importlib.util
import json
import sys
from collections import Counter
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
SHARED_CORPUS = SAMPLES.parent.parent / "shared" / "corpus" / "scrapinghub" / "pages.jsonl.gz"
REQUIRED_FIELDS = ("id", "url", "html", "fetched_at", "site", "source", "licence")
LICENCE_NOTICES = {
    "PSF-2.0": "python3.11-doc.copyright",
    "PostgreSQL": "postgresql-doc-15.copyright",
    "public-domain": "sqlite3-doc.copyright",
    "MIT": "scrapinghub-article-extraction-benchmark.MIT",
}
MIN_SITES = 3
MIN_PAGES_PER_SITE = 5
MAX_SAMPLES_BYTES = 3_000_000


def read_jsonl(path: Path) -> list[dict]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


@pytest.fixture(scope="module")
def pages() -> list[dict]:
    return read_jsonl(SAMPLES / "pages.jsonl.gz")


@pytest.fixture(scope="module")
def gold() -> dict[str, dict]:
    return {record["id"]: record for record in read_jsonl(SAMPLES / "gold.jsonl")}


@pytest.fixture(scope="module")
def builder():
    name = "samples_build_samples"
    spec = importlib.util.spec_from_file_location(name, SAMPLES / "build_samples.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the file runs
    spec.loader.exec_module(module)
    return module


def doc_pages(pages: list[dict]) -> list[dict]:
    return [page for page in pages if not page["id"].startswith("scrapinghub/")]


def test_at_least_three_sites_have_five_pages(pages):
    per_site = Counter(page["site"] for page in pages)
    big = [site for site, count in per_site.items() if count >= MIN_PAGES_PER_SITE]
    assert len(big) >= MIN_SITES, per_site


def test_every_record_has_its_fields(pages):
    for page in pages:
        missing = [name for name in REQUIRED_FIELDS if name not in page]
        assert not missing, f"{page.get('id')}: missing {missing}"
        assert page["html"].strip() and page["url"].startswith(("http://", "https://")), page["id"]
        assert page["licence"] in LICENCE_NOTICES, f"{page['id']}: licence {page['licence']!r}"
    ids = [page["id"] for page in pages]
    assert len(ids) == len(set(ids))


def test_every_licence_has_its_notice(pages):
    for licence in {page["licence"] for page in pages}:
        assert (SAMPLES / "LICENSES" / LICENCE_NOTICES[licence]).is_file(), licence


def test_every_page_has_gold(pages, gold):
    assert set(gold) == {page["id"] for page in pages}
    for page in pages:
        assert gold[page["id"]]["site"] == page["site"]
        assert gold[page["id"]]["gold"].strip(), page["id"]


def test_doc_gold_is_the_readme_definition(pages, gold, builder):
    """The stored gold of every doc page is what derive_gold gives on the stored HTML."""
    sites = {site.site: site for site in builder.DOC_SITES}
    for page in doc_pages(pages):
        site = sites[page["site"]]
        derived = builder.derive_gold(page["html"], main_xpath=site.main_xpath, drop_xpaths=site.drop_xpaths)
        assert derived == gold[page["id"]]["gold"], page["id"]


def test_derive_gold_lines_blocks_and_drops_permalinks(builder):
    markup = ("<html><body><nav>Menu</nav><div id='main'><h1>Title<a class='p'>\u00b6</a></h1>"
              "<p>One <b>two</b></p><table><tr><td>a</td><td>b</td></tr></table>"
              "<pre>x = 1\n\n  y = 2</pre><script>var z;</script>tail</div></body></html>")
    text = builder.derive_gold(markup, main_xpath="//div[@id='main']", drop_xpaths=(".//a[@class='p']",))
    assert text.splitlines() == ["Title", "One two", "a b", "x = 1", "y = 2", "tail"]


def test_warc_holds_the_doc_pages(pages):
    expected = {page["url"]: page for page in doc_pages(pages)}
    found = {}
    with open(SAMPLES / "docs.warc.gz", "rb") as f:
        for record in ArchiveIterator(f):
            if record.rec_type != "response":
                continue
            url = record.rec_headers.get_header("WARC-Target-URI")
            assert record.http_headers.get_statuscode() == "200", url
            assert record.http_headers.get_header("Content-Type") == "text/html; charset=utf-8", url
            assert record.rec_headers.get_header("WARC-Date") == expected[url]["fetched_at"], url
            found[url] = record.content_stream().read()
    assert found.keys() == expected.keys()
    for url, body in found.items():
        assert body == expected[url]["html"].encode("utf-8"), url


@pytest.mark.skipif(not SHARED_CORPUS.is_file(), reason="../shared corpus absent")
def test_scrapinghub_pages_match_the_corpus(pages, gold):
    corpus = {f"scrapinghub/{r['id']}": r for r in read_jsonl(SHARED_CORPUS)}
    copied = [page for page in pages if page["id"].startswith("scrapinghub/")]
    assert copied
    for page in copied:
        source = corpus[page["id"]]
        assert (page["url"], page["html"], page["site"]) == (source["url"], source["html"], source["site"])
        assert gold[page["id"]]["gold"] == source["gold"]


def test_samples_stay_small():
    size = sum(f.stat().st_size for f in SAMPLES.rglob("*") if f.is_file())
    assert size < MAX_SAMPLES_BYTES, f"samples/ holds {size} bytes"
