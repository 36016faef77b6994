"""Inputs -> raw pages: JSON Lines (plain or gzipped), WARC (plain or gzipped) and .html files, or folders of them.

``iter_records`` checks every path before reading any (a missing, unreadable or unknown input is a bad
argument: InputError), then yields a RawPage for each page and a Skip, with its reason, for each record that
is not one (bad JSON, bad URL, HTTP status other than 200, a non-HTML Content-Type, a truncated gzip member
or WARC record, a WARC revisit record). A broken record never ends the run: the file goes on where the library
can, else one Skip ends that file and the next file is read. Reading the same inputs twice yields equal records,
in the same order.

A page of a folder has the id ``SITE/relative/path.html``, where SITE is the folder's name (or the ``site``
given): two folders that both hold index.html give two pages, and the site names the pages' group (a page
without a host is grouped by its id: ``grouping.url_prefixes``). A JSON Lines ``html`` field that starts with an
HTTP response's status line and headers is read as that response: the headers are cut off and judged as a WARC
response's are. WARC ``resource`` records of HTML are pages like responses (their Content-Type is the record's).
"""

from __future__ import annotations

import gzip
import io
import itertools
import json
import logging
import os
import re
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, BinaryIO
from urllib.parse import urlsplit

if TYPE_CHECKING:  # warcio is imported when a WARC file is read: the other inputs and commands do not pay for it
    from warcio.recordloader import ArcWarcRecord

from . import config
from .errors import InputError
from .datatypes import RawPage, Skip, SkipReason

log = logging.getLogger(__name__)

_FORMATS = {  # file name ending -> format
    ".jsonl": "jsonl", ".jsonl.gz": "jsonl", ".ndjson": "jsonl", ".ndjson.gz": "jsonl",
    ".warc": "warc", ".warc.gz": "warc",
    ".html": "html", ".htm": "html", ".xhtml": "html",
}
_EXPECTED = "a .jsonl, .jsonl.gz, .warc, .warc.gz, .html or .htm file, or a folder of them"
_GZIP_MAGIC = b"\x1f\x8b"
_GZIP_ERRORS = (EOFError, gzip.BadGzipFile, zlib.error)
_PAYLOAD_ERRORS = (OSError, EOFError, ValueError, zlib.error)  # with warcio's ChunkedDataException (_payload_errors)
_NOT_PAGES = ("dns:", "whois:", "ntp:")  # response records of these schemes are no web pages
_HTTP_SCHEMES = ("http", "https")
_SCHEMELESS_HOST = re.compile(  # host.tld[:port][/...], where the "tld" is no file extension (page.html)
    r"^[\w-]+(\.[\w-]+)*\.(?!(?:s?html?|php\d?|aspx?|jsp|cgi|xml|json|txt)\b)[a-z]{2,}\.?(:\d+)?([/?#]|$)",
    re.IGNORECASE)
_HOST = re.compile(r"^[\w-]+(\.[\w-]+)*\.?$|^[0-9a-f:.]*:[0-9a-f:.]*$", re.IGNORECASE)  # name or IPv6
_URL_IGNORED = re.compile(r"[\t\r\n]")  # dropped from URLs, as browsers do
_HTTP_HEAD = re.compile(r"\A\s*HTTP/\d(?:\.\d)?[ \t]+(\d{3})[^\r\n]*\r?\n")  # status line of a response
_HEADER_END = re.compile(r"\r?\n\r?\n")
_HEADER_LINE = re.compile(r"^([!#$%&'*+.^_`|~0-9A-Za-z-]+)[ \t]*:[ \t]*(.*?)[ \t]*$")
_WARC_PAGE_TYPES = ("response", "resource")  # records that may hold a page; "revisit" is counted as a skip
_SURROGATE = re.compile("[\ud800-\udfff]")  # code points UTF-8 cannot encode


def iter_records(paths: Sequence[str | Path], *, site: str | None = None) -> Iterator[RawPage | Skip]:
    """RawPage or Skip for every record of the given files and folders; InputError on a bad path, at once.

    ``site`` names the pages of folders and .html files (default: a folder's own name; a lone file keeps its
    file:// URL as id). Two .html files that would get one id (two folders of the same name, or one folder given
    twice) are read once: the second is a "duplicate-id" skip."""
    inputs = check_inputs(paths)
    if site is not None and not site.strip("/ "):
        raise InputError(f"--site {site!r}: give a site name, e.g. --site docs.example.org")
    return _unique_file_ids(_iter_inputs(inputs, site.strip("/ ") if site else None))


def _unique_file_ids(records: Iterator[RawPage | Skip]) -> Iterator[RawPage | Skip]:
    """The records, with an .html file whose id an earlier file of the run already had made a skip."""
    first: dict[str, str] = {}
    for record in records:
        if isinstance(record, RawPage) and input_format(Path(record.source)) == "html":  # not "pages.jsonl#3"
            earlier = first.setdefault(record.id, record.source)
            if earlier != record.source:
                yield Skip(SkipReason.DUPLICATE_ID, record.source, id=record.id, url=record.url,
                           detail=f"{earlier} has the id {record.id!r} already: give the folders different names "
                                  "or read them in separate runs with --site")
                continue
        yield record


def check_inputs(paths: Sequence[str | Path]) -> list[Path]:
    """Every input checked (``check_input``) before any is read."""
    return [check_input(Path(path)) for path in paths]


def read_text_file(path: Path) -> str:
    """A local text file's UTF-8 text; InputError when it cannot be read as such."""
    with _open(path) as stream:
        data = stream.read(config.MAX_PAGE_BYTES + 1)
    if len(data) > config.MAX_PAGE_BYTES:
        raise InputError(f"{path}: over {config.MAX_PAGE_BYTES} bytes; give a shorter text")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start}); give an .html file or "
                         "UTF-8 text") from None


def check_input(path: Path) -> Path:
    """The path itself when it is a readable folder or a file of a known format; InputError otherwise."""
    if not path.exists():
        raise InputError(f"{path}: no such file or folder; give {_EXPECTED}")
    if path.is_dir():
        if not os.access(path, os.R_OK | os.X_OK):
            raise InputError(f"{path}: cannot list this folder; check its permissions")
        return path
    if input_format(path) is None:
        raise InputError(f"{path}: unknown input format; give {_EXPECTED}")
    if not os.access(path, os.R_OK):
        raise InputError(f"{path}: cannot read this file; check its permissions")
    return path


def input_format(path: Path) -> str | None:
    """'jsonl', 'warc' or 'html' from the file name's ending, or None."""
    name = path.name.lower()
    return next((kind for ending, kind in _FORMATS.items() if name.endswith(ending)), None)


def repair_url(url: object) -> str | None:
    """The URL, with "http://" added to "//host/..." or "host.tld/...", or None when no host can be found."""
    if not isinstance(url, str):
        return None
    text = _URL_IGNORED.sub("", url).strip()
    if text.startswith("//"):
        text = "http:" + text
    elif "://" not in text and _SCHEMELESS_HOST.match(text):
        text = "http://" + text
    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018 -- raises ValueError on a bad port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme in _HTTP_SCHEMES and parts.hostname and _HOST.match(parts.hostname):
        return text
    if scheme == "file" and parts.path:
        return text
    return None


def _iter_inputs(inputs: list[Path], site: str | None) -> Iterator[RawPage | Skip]:
    for path in inputs:
        records = _iter_folder(path, site or folder_site(path)) if path.is_dir() else _iter_file(
            path, page_id=f"{site}/{path.name}" if site else None)
        yield from _checked(records)


def _checked(records: Iterator[RawPage | Skip]) -> Iterator[RawPage | Skip]:
    return (record if isinstance(record, Skip) else check_text(record) for record in records)


def check_text(page: RawPage) -> RawPage | Skip:
    """The page, or a "bad-text" Skip when its id, URL or fetch time is not valid Unicode (a lone surrogate, from a
    JSON escape such as \\udc80, that no UTF-8 store can keep)."""
    for name in ("url", "id", "fetched_at"):
        value = getattr(page, name)
        if value is not None and not value.isascii() and _SURROGATE.search(value):
            return Skip(SkipReason.BAD_TEXT, page.source,
                        detail=f"{name} {value!r} holds a lone surrogate: not valid Unicode")
    return page


def folder_site(folder: Path) -> str:
    """The site name of a folder's pages: the folder's own name."""
    return folder.resolve().name or "files"  # "/" has no name


def _iter_folder(folder: Path, site: str) -> Iterator[RawPage | Skip]:
    """Every known file under the folder, recursively, in sorted order; hidden files and folders left out."""
    for top, folders, files in os.walk(folder):
        folders[:] = sorted(name for name in folders if not name.startswith("."))
        for name in sorted(files):
            path = Path(top) / name
            if name.startswith(".") or input_format(path) is None:
                log.debug("%s: not an input format, left out", path)
                continue
            try:
                yield from _iter_file(path, page_id=f"{site}/{path.relative_to(folder).as_posix()}")
            except (InputError, OSError) as exc:  # one file of a folder that cannot be read is its skip
                log.warning("%s: cannot read it: %s", path, exc)
                yield Skip(SkipReason.UNREADABLE, str(path), detail=str(exc)[:config.SKIP_DETAIL_CHARS])


def iter_file_bytes(name: str, data: bytes) -> Iterator[RawPage | Skip]:
    """The records of one JSON Lines or WARC file already read into memory, by the same readers as a local file:
    what a distributed reader (Spark's ``binaryFiles``: local, HDFS, s3a) hands over. ``name`` (a path or URI)
    gives the format by its ending and names the records in skips."""
    kind = input_format(PurePosixPath(name))
    stream = io.BufferedReader(io.BytesIO(data))
    if kind == "jsonl":
        return _checked(_iter_jsonl_stream(stream, name))
    if kind == "warc":
        return _checked(_iter_warc_stream(stream, name, size=len(data)))
    raise InputError(f"{name}: give JSON Lines (.jsonl, .jsonl.gz) or WARC (.warc, .warc.gz) files here")


def _iter_file(path: Path, *, page_id: str | None) -> Iterator[RawPage | Skip]:
    kind = input_format(path)
    if kind == "jsonl":
        yield from _iter_jsonl(path)
    elif kind == "warc":
        yield from _iter_warc(path)
    else:
        yield _read_html_file(path, page_id=page_id)


def _open(path: Path) -> BinaryIO:
    try:
        return open(path, "rb")  # noqa: SIM115 -- closed by the caller's with
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror}); check the path and its permissions") from exc


# --- JSON Lines ------------------------------------------------------------------------------------------

def _iter_jsonl(path: Path) -> Iterator[RawPage | Skip]:
    with _open(path) as raw:
        yield from _iter_jsonl_stream(raw, path)


def _iter_jsonl_stream(raw: io.BufferedIOBase, path: Path | str) -> Iterator[RawPage | Skip]:
    stream = gzip.GzipFile(fileobj=raw) if raw.peek(2)[:2] == _GZIP_MAGIC else raw
    number = 0
    try:
        for number, line in enumerate(stream, 1):
            if line.strip():
                yield _json_record(line, f"{path}#{number}")
    except _GZIP_ERRORS as exc:
        yield Skip(SkipReason.BAD_RECORD, f"{path}#{number + 1}",
                   detail=f"truncated or corrupt gzip data ({exc}); the rest of the file is not read")
    except OSError as exc:
        raise InputError(f"{path}: read failed after line {number} ({exc}); check the file") from exc


def _json_record(line: bytes, source: str) -> RawPage | Skip:
    """One JSON Lines record -> RawPage, or a Skip: bad-record (not a JSON object, no html, or any failure to read
    it), bad-url, empty."""
    try:
        return _json_page(line, source)
    except Exception as exc:  # noqa: BLE001 -- one line's failure is its skip, never the run's end
        return Skip(SkipReason.BAD_RECORD, source, detail=f"unreadable record ({type(exc).__name__}: {exc})"[:config.SKIP_DETAIL_CHARS])


def _json_page(line: bytes, source: str) -> RawPage | Skip:
    record = _json_object(line)
    if isinstance(record, str):
        return Skip(SkipReason.BAD_RECORD, source, detail=record)
    given_id = record.get("id")
    page_id = str(given_id) if given_id not in (None, "") else None
    url = repair_url(record.get("url"))
    if url is None:
        return Skip(SkipReason.BAD_URL, source, detail=f"url {record.get('url')!r} has no usable scheme and host",
                    id=page_id)
    problem = _html_problem(record)
    if problem:
        reason, detail = problem
        return Skip(reason, source, detail=detail, id=page_id or url, url=url)
    html, content_type, problem = split_http_response(record["html"])
    if problem:
        reason, detail = problem
        return Skip(reason, source, detail=detail, id=page_id or url, url=url)
    fetched_at = record.get("fetched_at")
    return RawPage(id=page_id or url, url=url, body=html, source=source, content_type=content_type,
                   fetched_at=str(fetched_at) if fetched_at is not None else None)


def split_http_response(html: str) -> tuple[str, str | None, tuple[str, str] | None]:
    """(body, Content-Type, problem) of an ``html`` field: an HTTP response (status line, headers, blank line,
    body) is cut to its body and judged as a WARC response is (a status other than 200 or a Content-Type that is
    not HTML is a problem: (reason, detail)); any other text is returned as it is."""
    status = _HTTP_HEAD.match(html)
    end = _HEADER_END.search(html, status.end() - 1) if status else None
    if end is None:
        return html, None, None
    headers = {}
    for line in html[status.end():end.start()].splitlines():
        if match := _HEADER_LINE.match(line):
            headers.setdefault(match[1].lower(), match[2])
        elif line.strip():
            return html, None, None  # not a header block after all: the text is the page
    body, content_type = html[end.end():], headers.get("content-type")
    if status[1] != config.HTTP_OK_STATUS:
        location = headers.get("location")
        return body, content_type, (SkipReason.HTTP_STATUS, f"HTTP {status[1]} in the html field's headers"
                                    + (f", redirected to {location}" if location else ""))
    mime = (content_type or "").split(";")[0].strip().lower()
    if mime not in config.HTML_CONTENT_TYPES and mime not in config.SNIFFED_CONTENT_TYPES:
        return body, content_type, (SkipReason.NOT_HTML, f"Content-Type {content_type} in the html field's headers")
    if not body.strip():
        return body, content_type, (SkipReason.EMPTY, "html holds HTTP headers and no body")
    return body, content_type, None


def _json_object(line: bytes) -> dict | str:
    """The line's JSON object, or why there is none."""
    try:
        record = json.loads(line.decode("utf-8", "replace").removeprefix("\ufeff"))
    except ValueError as exc:
        return f"not JSON ({exc})"
    except RecursionError:
        return "JSON nested too deeply to read"
    return record if isinstance(record, dict) else f"a JSON {type(record).__name__}, not an object"


def _html_problem(record: dict) -> tuple[str, str] | None:
    if "html" not in record:
        return SkipReason.BAD_RECORD, "no html field"
    html = record["html"]
    if html is not None and not isinstance(html, str):
        return SkipReason.BAD_RECORD, f"html is a JSON {type(html).__name__}, not a string"
    if not html or not html.strip():
        return SkipReason.EMPTY, "html is empty"
    return None


# --- WARC ------------------------------------------------------------------------------------------------

def _iter_warc(path: Path) -> Iterator[RawPage | Skip]:
    """Response records of a WARC file; a truncated or corrupt record yields one Skip and ends the file."""
    with _open(path) as stream:
        yield from _iter_warc_stream(stream, path, size=os.fstat(stream.fileno()).st_size)


def _iter_warc_stream(stream: io.BufferedIOBase, path: Path | str, *, size: int) -> Iterator[RawPage | Skip]:
    from warcio.archiveiterator import ArchiveIterator

    records = ArchiveIterator(stream)
    for number in itertools.count(1):
        try:
            record = next(records, None)
        except Exception as exc:  # noqa: BLE001 -- warcio raises many types on broken input; kept in detail
            yield _warc_broken(path, number, f"unreadable WARC record ({type(exc).__name__}: {exc})")
            return
        if record is None:
            break
        length = (record.rec_headers.get_header("Content-Length") or "").strip()
        if record.format != "warc" or not record.rec_type or not length.isdigit():
            yield _warc_broken(path, number, "not a whole WARC record (no WARC-Type or Content-Length)")
            return
        source = f"{path}#{number}"
        try:
            page = _warc_revisit(record, source) or _warc_page(record, source)
            if page is None:  # not a page, but a cut record all the same
                page = _check_whole(record, source, url=None)
        except Exception as exc:  # noqa: BLE001 -- warcio raises many types on broken input; kept in detail
            yield _warc_broken(path, number, f"unreadable WARC record ({type(exc).__name__}: {exc})")
            return
        if page is not None:
            yield page
    if records.offset < size:  # the iterator stopped short of the end: a member or record was cut
        yield _warc_broken(path, number, f"truncated or corrupt data from byte {records.offset} of {size}")


def _warc_broken(path: Path, number: int, why: str) -> Skip:
    return Skip(SkipReason.BAD_RECORD, f"{path}#{number}", detail=f"{why}; the rest of the file is not read")


def _warc_revisit(record: ArcWarcRecord, source: str) -> Skip | None:
    """A revisit record (the page was fetched again, its payload stored in an earlier record) -> a Skip."""
    if record.rec_type != "revisit":
        return None
    target = record.rec_headers.get_header("WARC-Target-URI") or ""
    url = repair_url(target)
    refers = record.rec_headers.get_header("WARC-Refers-To-Target-URI") or record.rec_headers.get_header(
        "WARC-Refers-To") or "an earlier record"
    _check_whole(record, source, url)
    return Skip(SkipReason.REVISIT, source, detail=f"revisit of {refers}: its payload is not in this record", id=url,
                url=url)


def _warc_page(record: ArcWarcRecord, source: str) -> RawPage | Skip | None:
    """A response or resource record -> RawPage or Skip; None for records that are no pages (requests, metadata,
    DNS)."""
    if record.rec_type not in _WARC_PAGE_TYPES:
        return None
    target = record.rec_headers.get_header("WARC-Target-URI") or ""
    if target.startswith(_NOT_PAGES):
        return None
    url = repair_url(target)
    if record.rec_type == "resource" and (skip := _check_resource(record, source, url)):
        return _check_whole(record, source, url) or skip
    if url is None:
        return Skip(SkipReason.BAD_URL, source, detail=f"WARC-Target-URI {target!r} has no usable scheme and host")
    skip = _check_http(record, source, url)
    if skip is not None:
        return _check_whole(record, source, url) or skip  # a cut record can show any status: say it is cut
    body_or_skip = _read_warc_body(record, source, url)
    if isinstance(body_or_skip, Skip):
        return body_or_skip
    content_type = (record.http_headers.get_header("Content-Type") if record.http_headers else
                    record.rec_headers.get_header("Content-Type") if record.rec_type == "resource" else None)
    return RawPage(id=url, url=url, body=body_or_skip, source=source, content_type=content_type,
                   fetched_at=record.rec_headers.get_header("WARC-Date"))


def _check_http(record: ArcWarcRecord, source: str, url: str) -> Skip | None:
    """Skip for an HTTP status other than 200 (redirects included) or a Content-Type that is not HTML."""
    headers = record.http_headers
    if headers is None:
        return None  # a response of another protocol (ftp:): the body decides
    status = headers.get_statuscode()
    if status != config.HTTP_OK_STATUS:
        location = headers.get_header("Location")
        detail = f"HTTP {status or '(no status)'}" + (f", redirected to {location}" if location else "")
        return Skip(SkipReason.HTTP_STATUS, source, detail=detail, id=url, url=url)
    content_type = headers.get_header("Content-Type") or ""
    mime = content_type.split(";")[0].strip().lower()
    if mime not in config.HTML_CONTENT_TYPES and mime not in config.SNIFFED_CONTENT_TYPES:
        return Skip(SkipReason.NOT_HTML, source, detail=f"Content-Type {content_type}", id=url, url=url)
    return None


def _check_resource(record: ArcWarcRecord, source: str, url: str | None) -> Skip | None:
    """Skip for a resource record (a stored file, no HTTP headers) whose own Content-Type is not HTML."""
    content_type = record.rec_headers.get_header("Content-Type") or ""
    mime = content_type.split(";")[0].strip().lower()
    if mime in config.HTML_CONTENT_TYPES or mime in config.SNIFFED_CONTENT_TYPES:
        return None
    return Skip(SkipReason.NOT_HTML, source, detail=f"resource record of Content-Type {content_type}", id=url, url=url)


def _read_warc_body(record: ArcWarcRecord, source: str, url: str) -> bytes | Skip:
    """The payload (chunked and Content-Encoding undone), at most one byte over the page limit."""
    truncated = record.rec_headers.get_header("WARC-Truncated")
    if truncated:
        return Skip(SkipReason.BAD_RECORD, source, detail=f"WARC-Truncated: {truncated}", id=url, url=url)
    try:
        body = record.content_stream().read(config.MAX_PAGE_BYTES + 1)
    except _payload_errors() as exc:
        return Skip(SkipReason.BAD_RECORD, source, detail=f"unreadable payload ({exc})", id=url, url=url)
    if len(body) > config.MAX_PAGE_BYTES:
        return body  # "huge" for decode_page; the iterator skips the rest of the record
    return _check_whole(record, source, url) or body


def _payload_errors() -> tuple[type[BaseException], ...]:
    """What reading a WARC record's payload raises on broken input."""
    from warcio.bufferedreaders import ChunkedDataException

    return (*_PAYLOAD_ERRORS, ChunkedDataException)


def _check_whole(record: ArcWarcRecord, source: str, url: str | None) -> Skip | None:
    """Skip when the record holds fewer bytes than its Content-Length says (read to its end first)."""
    while record.raw_stream.read(io.DEFAULT_BUFFER_SIZE):
        pass  # what the payload decoders left (a chunked trailer), or all of a record that was not read
    missing = getattr(record.raw_stream, "limit", 0)
    if missing > 0:
        return Skip(SkipReason.BAD_RECORD, source,
                    detail=f"record cut short: {missing} bytes of its Content-Length missing", id=url, url=url)
    return None


# --- .html files -----------------------------------------------------------------------------------------

def _read_html_file(path: Path, *, page_id: str | None) -> RawPage:
    """A file's bytes (at most one over the page limit); URL: its file:// URI; id: given, else the URL."""
    with _open(path) as stream:
        try:
            body = stream.read(config.MAX_PAGE_BYTES + 1)
        except OSError as exc:
            raise InputError(f"{path}: cannot read ({exc.strerror}); check the file") from exc
    url = path.resolve().as_uri()
    return RawPage(id=page_id or url, url=url, body=body, source=str(path))
