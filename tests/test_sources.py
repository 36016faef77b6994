"""iter_records: JSON Lines, WARC and .html inputs; bad records skipped with a reason, bad paths refused."""

from __future__ import annotations

import gzip
import io
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from warcio.archiveiterator import ArchiveIterator
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from templater import config
from templater.encoding import decode_page
from templater.errors import InputError
from templater.sources import iter_records, repair_url
from templater.datatypes import Page, RawPage, Skip, SkipReason

FIXTURES = Path(__file__).parent / "fixtures" / "pages"
PAGE = "<html><head><title>{0}</title></head><body><p>{0}: some words of text.</p></body></html>"
WARC_DATE = "2024-05-01T10:00:00Z"


def pages(items: list) -> list[RawPage]:
    return [item for item in items if isinstance(item, RawPage)]


def skips(items: list) -> list[Skip]:
    found = [item for item in items if isinstance(item, Skip)]
    assert all(skip.reason in set(SkipReason) for skip in found)
    return found


def write_jsonl(path: Path, lines: list) -> Path:
    text = "".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines)
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "wt", encoding="utf-8") as out:
        out.write(text)
    return path


def response(url: str, body: bytes, *, status: str = "200 OK", content_type: str | None = "text/html",
             headers: tuple = ()) -> dict:
    return {"type": "response", "url": url, "body": body, "status": status,
            "headers": ([("Content-Type", content_type)] if content_type else []) + list(headers)}


def write_warc(path: Path, records: list[dict], *, compress: bool = True) -> Path:
    with open(path, "wb") as out:
        writer = WARCWriter(out, gzip=compress)
        writer.write_record(writer.create_warcinfo_record(path.name, {"software": "templater tests"}))
        for spec in records:
            http = StatusAndHeaders(spec["status"], spec["headers"], protocol="HTTP/1.1")
            if spec["type"] == "request":
                http = StatusAndHeaders(f"GET {spec['url']} HTTP/1.1", [("Host", "example.com")], is_http_request=True)
            record = writer.create_warc_record(
                spec["url"], spec["type"], payload=io.BytesIO(spec["body"]), http_headers=http,
                warc_headers_dict={"WARC-Date": WARC_DATE})
            writer.write_record(record)
    return path


# --- JSON Lines ------------------------------------------------------------------------------------------

def test_jsonl_records_become_raw_pages(tmp_path):
    path = write_jsonl(tmp_path / "pages.jsonl", [
        {"id": "a1", "url": "https://example.com/a", "html": PAGE.format("A"), "fetched_at": "2024-01-02"},
        {"url": "https://example.com/b", "html": PAGE.format("B")},
        {"id": 7, "url": "www.example.com/c", "html": PAGE.format("C")},
    ])
    first, second, third = pages(list(iter_records([path])))
    assert (first.id, first.url, first.fetched_at, first.body) == (
        "a1", "https://example.com/a", "2024-01-02", PAGE.format("A"))
    assert first.source == f"{path}#1"
    assert (second.id, second.url, second.fetched_at) == ("https://example.com/b", "https://example.com/b", None)
    assert (third.id, third.url) == ("7", "http://www.example.com/c")


def test_jsonl_bad_lines_are_skipped_with_reasons(tmp_path):
    path = write_jsonl(tmp_path / "pages.jsonl", [
        {"id": "ok", "url": "https://example.com/ok", "html": PAGE.format("OK")},
        "{not json",
        "[1, 2, 3]",
        "",
        {"id": "no-url", "html": PAGE.format("X")},
        {"id": "bad-url", "url": "/relative/path", "html": PAGE.format("X")},
        {"id": "no-html", "url": "https://example.com/x"},
        {"id": "empty", "url": "https://example.com/e", "html": "  "},
        {"id": "number", "url": "https://example.com/n", "html": 42},
        {"id": "last", "url": "https://example.com/last", "html": PAGE.format("Last")},
    ])
    items = list(iter_records([path]))
    assert [page.id for page in pages(items)] == ["ok", "last"]
    assert [(skip.reason, skip.source.rsplit("#")[1]) for skip in skips(items)] == [
        ("bad-record", "2"), ("bad-record", "3"), ("bad-url", "5"), ("bad-url", "6"), ("bad-record", "7"),
        ("empty", "8"), ("bad-record", "9")]


def test_jsonl_gz_and_plain_give_equal_records(tmp_path):
    lines = [{"id": str(n), "url": f"https://example.com/{n}", "html": PAGE.format(n)} for n in range(5)]
    plain = [(r.id, r.url, r.body) for r in iter_records([write_jsonl(tmp_path / "p.jsonl", lines)])]
    packed = [(r.id, r.url, r.body) for r in iter_records([write_jsonl(tmp_path / "p.jsonl.gz", lines)])]
    assert plain == packed and len(plain) == len(lines)


def test_truncated_gzip_keeps_what_was_read_and_skips_the_rest(tmp_path):
    lines = [{"id": str(n), "url": f"https://example.com/{n}", "html": PAGE.format(n) * 40} for n in range(40)]
    whole = write_jsonl(tmp_path / "whole.jsonl.gz", lines).read_bytes()
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(whole[: len(whole) * 2 // 3])
    after = write_jsonl(tmp_path / "after.jsonl", lines[:1])
    items = list(iter_records([cut, after]))
    [skip] = skips(items)
    assert skip.reason == "bad-record" and "gzip" in skip.detail
    read = [page.id for page in pages(items)]
    assert read[-1] == "0" and 0 < len(read) - 1 < len(lines)  # the next file is read after the broken one
    assert read[:-1] == [str(n) for n in range(len(read) - 1)]


# --- WARC ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("compress", [True, False])
def test_warc_responses_become_raw_pages(tmp_path, compress):
    body = PAGE.format("Warc").encode("utf-8")
    path = write_warc(tmp_path / ("crawl.warc.gz" if compress else "crawl.warc"), [
        {"type": "request", "url": "https://example.com/a", "body": b"", "status": "", "headers": []},
        response("https://example.com/a", body, content_type="text/html; charset=utf-8"),
    ], compress=compress)
    [page] = list(iter_records([path]))
    assert (page.id, page.url, page.body, page.fetched_at) == (
        "https://example.com/a", "https://example.com/a", body, WARC_DATE)
    assert page.content_type == "text/html; charset=utf-8"
    assert decode_page(page).encoding == "utf-8"


def test_warc_undoes_chunked_and_gzip_transfer(tmp_path):
    html = PAGE.format("Chunked").encode()
    packed = gzip.compress(html)
    chunked = b"%x\r\n%s\r\n0\r\n\r\n" % (len(packed), packed)
    path = write_warc(tmp_path / "t.warc.gz", [response(
        "https://example.com/c", chunked, headers=(("Transfer-Encoding", "chunked"), ("Content-Encoding", "gzip")))])
    [page] = list(iter_records([path]))
    assert page.body == html


def test_warc_non_200_and_non_html_are_skipped(tmp_path):
    path = write_warc(tmp_path / "t.warc.gz", [
        response("https://example.com/missing", b"<html>gone</html>", status="404 Not Found"),
        response("https://example.com/moved", b"", status="301 Moved Permanently",
                 headers=(("Location", "https://example.com/new"),)),
        response("https://example.com/logo.png", b"\x89PNG\r\n\x1a\n", content_type="image/png"),
        response("https://example.com/doc.pdf", b"%PDF-1.4", content_type="application/pdf"),
        response("https://example.com/api", b'{"a": 1}', content_type="application/json; charset=utf-8"),
        response("https://example.com/ok", PAGE.format("OK").encode(), content_type="text/plain"),
        response("https://example.com/xhtml", PAGE.format("X").encode(), content_type="application/xhtml+xml"),
        response("no host at all", PAGE.format("?").encode()),
    ])
    items = list(iter_records([path]))
    assert [page.url for page in pages(items)] == ["https://example.com/ok", "https://example.com/xhtml"]
    found = [(skip.reason, skip.url) for skip in skips(items)]
    assert found == [("http-status", "https://example.com/missing"), ("http-status", "https://example.com/moved"),
                     ("not-html", "https://example.com/logo.png"), ("not-html", "https://example.com/doc.pdf"),
                     ("not-html", "https://example.com/api"), ("bad-url", None)]
    assert "https://example.com/new" in skips(items)[1].detail


def test_truncated_gzip_warc_member_is_one_skip(tmp_path):
    records = [response(f"https://example.com/{n}", PAGE.format(n).encode() * 30) for n in range(6)]
    whole = write_warc(tmp_path / "whole.warc.gz", records).read_bytes()
    cut = tmp_path / "cut.warc.gz"
    cut.write_bytes(whole[: len(whole) * 2 // 3])
    items = list(iter_records([cut, tmp_path / "whole.warc.gz"]))
    [skip] = skips(items)
    assert skip.reason == "bad-record" and skip.source.startswith(str(cut))
    urls = [page.url for page in pages(items)]
    assert 0 < len(urls) - len(records) < len(records)
    assert urls[-len(records):] == [f"https://example.com/{n}" for n in range(6)]


def test_truncated_uncompressed_warc_record_is_skipped(tmp_path):
    records = [response(f"https://example.com/{n}", PAGE.format(n).encode() * 30) for n in range(3)]
    whole = write_warc(tmp_path / "whole.warc", records, compress=False).read_bytes()
    cut = tmp_path / "cut.warc"
    cut.write_bytes(whole[:-500])  # inside the last record's body
    items = list(iter_records([cut]))
    assert [page.url for page in pages(items)] == ["https://example.com/0", "https://example.com/1"]
    [skip] = skips(items)
    assert (skip.reason, skip.url) == ("bad-record", "https://example.com/2")
    assert "missing" in skip.detail


def test_corrupt_warc_is_one_skip(tmp_path):
    path = tmp_path / "garbage.warc"
    path.write_bytes(b"this is not a WARC file at all\r\n\r\n" * 10)
    [skip] = list(iter_records([path]))
    assert skip.reason == "bad-record"


# --- .html files and folders -------------------------------------------------------------------------------

def test_folder_of_pages_recursively_with_relative_ids():
    items = list(iter_records([FIXTURES]))
    assert [item.id for item in items] == [f"pages/{name}" for name in (
        "cafe-iso-1252.html", "controls.html", "korean-b-euc-kr.html", "thai-windows-874.html",
        "xml-declaration.xhtml", "zero-label.html", "nested/utf16-no-bom.htm")]
    first = items[0]
    assert first.url == (FIXTURES / "cafe-iso-1252.html").resolve().as_uri()
    assert first.body == (FIXTURES / "cafe-iso-1252.html").read_bytes()
    assert all(isinstance(decode_page(item), Page) for item in items)


def test_single_html_file_has_its_url_as_id(tmp_path):
    path = tmp_path / "one.htm"
    path.write_text(PAGE.format("One"), encoding="utf-8")
    [page] = list(iter_records([str(path)]))
    assert page.id == page.url == path.resolve().as_uri()


def test_folder_reads_jsonl_and_warc_inside_and_leaves_other_files_out(tmp_path):
    write_jsonl(tmp_path / "a.jsonl", [{"id": "j", "url": "https://example.com/j", "html": PAGE.format("J")}])
    write_warc(tmp_path / "b.warc.gz", [response("https://example.com/w", PAGE.format("W").encode())])
    (tmp_path / "c.html").write_text(PAGE.format("H"))
    (tmp_path / "d.pdf").write_bytes(b"%PDF-1.4")
    (tmp_path / ".hidden.html").write_text(PAGE.format("Hidden"))
    assert [item.id for item in iter_records([tmp_path])] == ["j", "https://example.com/w", f"{tmp_path.name}/c.html"]


def test_empty_and_huge_files_reach_decode_as_skips(tmp_path, monkeypatch):
    monkeypatch.setattr(config, "MAX_PAGE_BYTES", 100)
    (tmp_path / "empty.html").write_bytes(b"")
    (tmp_path / "huge.html").write_text(PAGE.format("x" * 200))
    empty, huge = iter_records([tmp_path])
    assert len(huge.body) == config.MAX_PAGE_BYTES + 1  # never read past the limit
    assert [decode_page(empty).reason, decode_page(huge).reason] == ["empty", "huge"]


# --- bad arguments -------------------------------------------------------------------------------------------

def test_missing_path_is_an_input_error_before_anything_is_read(tmp_path):
    good = write_jsonl(tmp_path / "good.jsonl", [{"url": "https://example.com/", "html": PAGE.format("G")}])
    with pytest.raises(InputError, match="no such file"):
        iter_records([good, tmp_path / "missing.jsonl"])


def test_unknown_format_given_explicitly_is_an_input_error(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("hello")
    with pytest.raises(InputError, match="unknown input format"):
        iter_records([path])


# --- idempotence ---------------------------------------------------------------------------------------------

def test_reading_the_same_inputs_twice_gives_equal_records(tmp_path):
    jsonl = write_jsonl(tmp_path / "p.jsonl.gz", [
        {"id": "a", "url": "https://example.com/a", "html": PAGE.format("A")}, "{broken"])
    warc = write_warc(tmp_path / "w.warc.gz", [response("https://example.com/w", PAGE.format("W").encode()),
                                               response("https://example.com/x", b"", status="500 Oops")])
    inputs = [jsonl, warc, FIXTURES]
    first, second = list(iter_records(inputs)), list(iter_records(inputs))
    assert first == second and len(first) == 2 + 2 + 7
    assert [decode_page(item) for item in pages(first)] == [decode_page(item) for item in pages(second)]


# --- URLs ----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("url", "repaired"), [
    ("https://example.com/a?b=1#c", "https://example.com/a?b=1#c"),
    ("  http://example.com/a\n", "http://example.com/a"),
    ("//cdn.example.com/x", "http://cdn.example.com/x"),
    ("www.example.co.uk/news/1", "http://www.example.co.uk/news/1"),
    ("example.com:8080/path", "http://example.com:8080/path"),
    ("http://[::1]:8080/", "http://[::1]:8080/"),
    ("http://bücher.example/straße", "http://bücher.example/straße"),
    ("file:///tmp/page.html", "file:///tmp/page.html"),
])
def test_repair_url_accepts_and_repairs(url, repaired):
    assert repair_url(url) == repaired


@pytest.mark.parametrize("url", [
    None, "", "   ", 42, "/relative/path", "page.html", "http://", "http:///path", "mailto:someone@example.com",
    "javascript:void(0)", "http://exa mple.com/", "http://example.com:99999/", "http://[::1/", "about:blank",
])
def test_repair_url_refuses_urls_without_a_host(url):
    assert repair_url(url) is None


# --- broken files never crash ----------------------------------------------------------------------------------

def _broken_inputs(tmp_path_factory, name: str) -> tuple[Path, bytes]:
    folder = tmp_path_factory.mktemp("broken")
    lines = [{"id": str(n), "url": f"https://example.com/{n}", "html": PAGE.format(n) * 5} for n in range(8)]
    records = [response(f"https://example.com/{n}", PAGE.format(n).encode() * 5) for n in range(8)]
    whole = folder / f"whole-{name}"
    if "jsonl" in name:
        write_jsonl(whole, lines)
    else:
        write_warc(whole, records, compress=name.endswith(".gz"))
    return folder / name, whole.read_bytes()


@pytest.mark.parametrize("name", ["p.jsonl.gz", "p.warc.gz", "p.warc"])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut=st.floats(0, 1), flip=st.floats(0, 1), flips=st.integers(0, 3))
def test_cut_or_corrupted_files_yield_records_or_skips_never_errors(tmp_path_factory, name, cut, flip, flips):
    path, data = _broken_inputs(tmp_path_factory, name)
    data = bytearray(data[: int(len(data) * cut)])
    for n in range(flips):
        if data:
            data[int((len(data) - 1) * flip) // (n + 1)] ^= 0xFF
    path.write_bytes(bytes(data))
    items = list(iter_records([path]))
    assert all(isinstance(item, RawPage) or item.reason in set(SkipReason) for item in items)
    assert all(isinstance(decode_page(item), (Page, Skip)) for item in pages(items))


def test_a_cut_warc_never_loses_a_record_silently(tmp_path):
    records = [response(f"https://example.com/{n}", PAGE.format(n).encode() * 5) for n in range(4)]
    data = write_warc(tmp_path / "whole.warc", records, compress=False).read_bytes()
    bounds = []
    with open(tmp_path / "whole.warc", "rb") as stream:
        iterator = ArchiveIterator(stream)
        for record in iterator:
            record.content_stream().read()
            bounds.append((iterator.get_record_offset(), iterator.get_record_length(), record.rec_type))
    cut_file = tmp_path / "cut.warc"
    for cut in range(0, len(data), 13):
        cut_file.write_bytes(data[:cut])
        items = list(iter_records([cut_file]))
        whole = sum(kind == "response" and start + length <= cut for start, length, kind in bounds)
        partial = any(start < cut < start + length for start, length, _ in bounds)
        assert len(pages(items)) == whole, cut
        assert len(skips(items)) == partial, cut


# --- HTTP headers in JSON Lines, WARC resource and revisit records -----------------------------------------------

def test_an_http_response_in_the_html_field_is_cut_to_its_body():
    from templater.sources import split_http_response

    body = "<html><body><p>Body</p></body></html>"
    assert split_http_response("HTTP/1.1 200 OK\nContent-Type: text/html; charset=koi8-r\n\n" + body) == (
        body, "text/html; charset=koi8-r", None)
    assert split_http_response("HTTP/2 200\r\n\r\n" + body) == (body, None, None)
    assert split_http_response(body) == (body, None, None)
    for text in ("HTTP/1.1 200 OK\n" + body, "HTTP/1.1 200 OK\nnot a header line\n\n" + body,
                 "<p>HTTP/1.1 200 OK</p>\n\n" + body):
        assert split_http_response(text) == (text, None, None)  # no header block: the text is the page
    assert split_http_response("HTTP/1.1 301 Moved\nLocation: https://a.example/b\n\n")[2] == (
        "http-status", "HTTP 301 in the html field's headers, redirected to https://a.example/b")


@given(st.text(max_size=200))
@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
def test_text_without_a_status_line_is_never_cut(text):
    from templater.sources import split_http_response

    if not text.lstrip().startswith("HTTP/"):
        assert split_http_response(text) == (text, None, None)


def test_warc_resource_records_of_other_types_and_urns_are_not_html_skips(tmp_path):
    path = tmp_path / "r.warc.gz"
    with open(path, "wb") as out:
        writer = WARCWriter(out, gzip=True)
        writer.write_record(writer.create_warc_record("urn:pageinfo:https://a.example/", "resource",
                                                      payload=io.BytesIO(b'{"a": 1}'),
                                                      warc_content_type="application/json"))
        writer.write_record(writer.create_warc_record("https://a.example/p", "resource",
                                                      payload=io.BytesIO(PAGE.format("P").encode()),
                                                      warc_content_type="text/html; charset=utf-8"))
    items = list(iter_records([path]))
    assert [s.reason for s in skips(items)] == ["not-html"]
    [page] = pages(items)
    assert page.url == "https://a.example/p" and page.content_type == "text/html; charset=utf-8"
