"""Fuzzing: mutated pages and mutated JSON Lines / WARC framing never raise out of the pipeline, and every record
ends up stored or counted as a skip (bench/bench_fuzz.py does the same at 100k records through the CLI)."""

from __future__ import annotations

import gzip
import json
import uuid
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from templater import config, native, parse, pipeline, sources
from templater.blocks import fill_xpaths
from templater.config import LearnSettings
from templater.template import learn_template
from templater.datatypes import Page, RawPage, Segmented, Skip, SkipReason

ROOT = Path(__file__).resolve().parent.parent
with gzip.open(ROOT / "samples" / "pages.jsonl.gz", "rt", encoding="utf-8") as _f:
    SAMPLE_PAGES = [json.loads(line)["html"] for line in _f]

# What breaks parsers: markup fragments spliced into pages at random places.
SNIPPETS = ["<", ">", "</", "<!--", "-->", "<script>", "</script>", "<style>", '"', "'", "=", "<p", "<div " * 40,
            "<div>" * (config.MAX_DEPTH + 10), "<br>" * 500, "<p " + " ".join(f"a{i}=1" for i in range(300)) + ">",
            "\x00", "\x1b[31m", "\ufeff", "\udc80", "\ud800x", "&#0;", "&#xD800;", "&nbsp;" * 50, "<?xml version='1.0' "
            "encoding='utf-16'?>", "<meta charset=utf-7>", "<title>", "</html>", "<html>", "<body>", "<table><tr><td>",
            "<![CDATA[", "]]>", "<svg><foreignObject>", "<math>", "<template>", "\r\n", "\t" * 100, "é" * 30, "中文"]

page_text = st.builds(lambda page, start, length: page[start:start + length],
                      st.sampled_from(SAMPLE_PAGES), st.integers(0, 20_000), st.integers(0, 12_000))
splice = st.tuples(st.integers(0, 12_000), st.one_of(st.sampled_from(SNIPPETS), st.text(max_size=40)))


@st.composite
def mutated_page(draw) -> str:
    text = draw(page_text)
    for at, piece in draw(st.lists(splice, max_size=6)):
        at = min(at, len(text))
        text = text[:at] + piece + text[at:]
    return text


def field_value(draw, good):
    return draw(st.one_of(st.just(good), st.none(), st.integers(-10**30, 10**30), st.floats(allow_nan=True),
                          st.text(max_size=20), st.lists(st.integers(), max_size=3), st.just({"nested": [1]})))


@st.composite
def jsonl_line(draw, number: int) -> str:
    """One line of a JSON Lines file: mostly a record with a mutated page, sometimes broken framing."""
    url = f"http://fuzz{number}.example/{draw(st.sampled_from(['a', 'b/c', 'd/e/f']))}/{number}.html"
    record = {"url": url, "html": draw(mutated_page())}
    kind = draw(st.sampled_from(["page", "page", "page", "page", "fields", "framing", "surrogate"]))
    if kind == "fields":
        for name in draw(st.lists(st.sampled_from(["url", "html", "id", "fetched_at"]), max_size=2)):
            record[name] = field_value(draw, record.get(name))
    line = json.dumps(record, ensure_ascii=draw(st.booleans()))
    if kind == "surrogate":
        name = draw(st.sampled_from(["url", "id", "fetched_at"]))
        record.setdefault(name, "x")
        line = json.dumps(record).replace(json.dumps(record[name]), json.dumps(record[name])[:-1] + '\\udc80"', 1)
    if kind == "framing":
        cut = draw(st.integers(0, len(line)))
        line = draw(st.sampled_from([line[:cut], "[" * 5000, json.dumps([record]), "null", "\ufeff" + line,
                                     line[:cut] + "\x00" + line[cut:], "{" * 3000 + "}" * 3000]))
    return line.replace("\n", " ").replace("\r", " ")


@st.composite
def jsonl_file(draw) -> list[str]:
    return [draw(jsonl_line(number)) for number in range(draw(st.integers(1, 6)))]


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return pipeline.open_store(tmp_path_factory.mktemp("fuzz") / "fuzz.db")


FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                       HealthCheck.function_scoped_fixture,
                                                                       HealthCheck.data_too_large])


@FUZZ
@given(lines=jsonl_file(), gz=st.booleans())
def test_every_jsonl_record_is_stored_or_counted_and_nothing_raises(store, tmp_path_factory, lines, gz):
    folder = tmp_path_factory.mktemp("in")
    path = folder / f"{uuid.uuid4().hex}.jsonl{'.gz' if gz else ''}"
    data = ("\n".join(lines) + "\n").encode("utf-8", "surrogatepass")
    path.write_bytes(gzip.compress(data) if gz else data)
    summary = pipeline.ingest(store, [path])
    records = sum(1 for line in lines if line.strip())
    assert sum(summary.counts.values()) + sum(summary.skipped.values()) == records
    assert set(summary.skipped) <= set(SkipReason)
    segs = [pipeline.prepare_record(item) for item in sources.iter_records([path])]
    usable = [seg for seg in segs if isinstance(seg, Segmented)]
    if len(usable) >= 3:
        learn_template(usable, site="fuzz/", settings=LearnSettings())
    stored = [seg.page.id for seg in usable]
    skipped: Counter = Counter()
    results = list(pipeline.extract(store, ids=stored, skipped=skipped))
    assert len(results) + sum(skipped.values()) == len(set(stored))


def _warc_record(url: str, html: bytes, *, length_delta: int = 0) -> bytes:
    payload = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n" + html
    head = (f"WARC/1.0\r\nWARC-Type: response\r\nWARC-Target-URI: {url}\r\nWARC-Record-ID: <urn:uuid:{uuid.uuid4()}>"
            f"\r\nWARC-Date: 2024-01-01T00:00:00Z\r\nContent-Type: application/http; msgtype=response\r\n"
            f"Content-Length: {len(payload) + length_delta}\r\n\r\n").encode()
    return head + payload + b"\r\n\r\n"


@FUZZ
@given(pages=st.lists(mutated_page(), min_size=1, max_size=4), cut=st.integers(0, 10**6),
       delta=st.sampled_from([0, 0, 0, -5, 7, 10**6]), gz=st.booleans(), noise=st.binary(max_size=30))
def test_mutated_warc_framing_yields_pages_or_skips_never_an_exception(pages, cut, delta, gz, noise):
    members = [_warc_record(f"http://warc.example/{i}.html", page.encode("utf-8", "surrogatepass"),
                            length_delta=delta if i == len(pages) - 1 else 0) for i, page in enumerate(pages)]
    data = b"".join(gzip.compress(m) for m in members) if gz else b"".join(members)
    data = data[:cut] + noise + data[cut:] if noise else data[:cut]
    items = list(sources.iter_file_bytes("fuzz.warc.gz" if gz else "fuzz.warc", data))
    assert all(isinstance(item, (RawPage, Skip)) for item in items)
    assert len(items) <= len(pages) + 1
    for item in items:
        seg = pipeline.prepare_record(item)
        assert isinstance(seg, (Segmented, Skip))


@settings(max_examples=200, deadline=None)
@given(page=mutated_page())
def test_markup_counts_in_c_equals_its_definition(page):
    if native.numeric is None:
        pytest.skip("the compiled walk is not built")
    data = parse.clean_text(page)
    assert native.numeric.markup_counts(data) == parse._markup_counts_plain(data)


@settings(max_examples=100, deadline=None)
@given(page=mutated_page())
def test_fill_xpaths_equals_lxmls_getpath(page):
    seg = pipeline.segment_page(Page(id="x", url="http://x.example/", html=page, fetched_at=None, encoding="utf-8"))
    if not isinstance(seg, Segmented):
        return
    fill_xpaths(seg.blocks)
    for block in seg.blocks:
        assert block.xpath == block.element.getroottree().getpath(block.element)


def test_over_limits_names_the_limit():
    assert parse.over_limits(b"<p>" * (config.MAX_START_TAGS + 1)).startswith(f"{config.MAX_START_TAGS + 1} start")
    flood = b"<p " + b" ".join(b'a%d=">"' % i for i in range(config.MAX_ATTRIBUTES + 1)) + b">x"
    assert parse.over_limits(flood) == f"{config.MAX_ATTRIBUTES + 1} attributes in one tag (limit " \
                                       f"{config.MAX_ATTRIBUTES})"
    script = b"<script>" + b"<p " * 1000 + b"</script><p a=1>x"
    assert parse.markup_counts(script) == (2, 1, 1)
    assert parse.over_limits(b"<html><body><p class=a id=b>x</p></body></html>") is None
