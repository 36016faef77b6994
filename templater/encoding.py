"""Raw page -> decoded Page, or a Skip that says why not.

The steps of ``decode_page``: refuse what is not a page (empty, huge, binary by magic number or control
bytes), find the codec, decode, then refuse text that is binary, undecodable, empty or not HTML.

The codec, first that works:
  1. a byte order mark (it cannot be wrong, so it comes first, as in the WHATWG encoding standard);
  2. valid UTF-8, when the body has any non-ASCII byte (a page whose bytes are valid UTF-8 is UTF-8 whatever
     it declares: "iso-8859-1" left in a header over UTF-8 content is a common mistake, the reverse is not);
  3. the HTTP Content-Type charset, then each <meta charset> / <meta http-equiv> and a leading
     <?xml encoding?> in the first config.META_SCAN_BYTES, each decoded strictly;
  4. UTF-16 without a BOM, told by its NUL bytes;
  5. UTF-8 (an ASCII body);
  6. the charset-normalizer detector (windows-1252 preferred among Latin code pages it cannot tell apart);
  7. windows-1252, the web's default legacy encoding, when it decodes strictly;
  8. the first usable declared codec, else the detected one, else UTF-8, with replacement characters.
Labels are normalized the WHATWG way by our own table (``normalize_charset``): bogus labels (``0``, empty,
unknown) are ignored, ``b'euc_kr'`` loses its Python bytes wrapper, latin-1/ascii mean cp1252, gb2312 means
gb18030 and so on.

Text bodies (JSON Lines) are already decoded: they are checked the same way but kept as they are; control
characters and XML declarations are the parsing boundary's business (templater/parse.py).
"""

from __future__ import annotations

import codecs
import json
import logging
import re

from . import config
from .datatypes import Page, RawPage, Skip, SkipReason

log = logging.getLogger(__name__)

TEXT_INPUT = "text"  # Page.encoding of a page that arrived decoded (a JSON Lines record)

_BOMS = (
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF32_LE, "utf-32-le"),  # before UTF-16 LE: it starts with the same two bytes
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
_MAGIC = {
    b"%PDF-": "PDF", b"\x89PNG\r\n\x1a\n": "PNG", b"\xff\xd8\xff": "JPEG", b"GIF87a": "GIF", b"GIF89a": "GIF",
    b"PK\x03\x04": "ZIP", b"\x1f\x8b": "gzip", b"BZh": "bzip2", b"7z\xbc\xaf\x27\x1c": "7z", b"Rar!": "RAR",
    b"\x7fELF": "ELF", b"RIFF": "RIFF", b"OggS": "Ogg", b"ID3": "MP3", b"wOFF": "WOFF", b"wOF2": "WOFF2",
    b"\xd0\xcf\x11\xe0": "OLE (MS Office)", b"%!PS": "PostScript", b"\x00\x00\x01\x00": "ICO",
}
_CONTROL_BYTES = bytes([*range(0x00, 0x09), 0x0B, *range(0x0E, 0x20), 0x7F])  # not \t \n \f \r
_REPLACEMENT = "\ufffd"
_CP1252 = "cp1252"

_META_CHARSET = re.compile(rb"""<meta\s[^>]*?charset\s*=\s*["']?\s*([^\s"/>;]*)""", re.IGNORECASE)
_XML_ENCODING = re.compile(rb"""^\s*<\?xml[^>]*?encoding\s*=\s*["']([^"']*)["']""", re.IGNORECASE)
_HEADER_CHARSET = re.compile(r"""charset\s*=\s*([^;]*)""", re.IGNORECASE)
_TAG = re.compile(r"<[a-zA-Z!?/]")
_LABEL_NOISE = re.compile(r"[^a-z0-9]")

# Labels Python does not know, or knows as something else (keys: lower case, letters and digits only).
_ALIASES = {
    "iso1252": "cp1252", "xcp1252": "cp1252", "windows874": "cp874", "dos874": "cp874", "xcp1250": "cp1250",
    "xcp1251": "cp1251", "xsjis": "cp932", "sjis": "cp932", "windows31j": "cp932", "mskanji": "cp932",
    "csshiftjis": "cp932", "xeucjp": "euc_jp", "cseucpkdfmtjapanese": "euc_jp", "xgbk": "gb18030",
    "csgb2312": "gb18030", "chinese": "gb18030", "isoir58": "gb18030", "xxbig5": "big5hkscs",
    "cnbig5": "big5hkscs", "csbig5": "big5hkscs", "xeuckr": "cp949", "windows949": "cp949", "ksc5601": "cp949",
    "ksc56011989": "cp949", "csksc56011987": "cp949", "isoir149": "cp949", "korean": "cp949",
    "xmacroman": "mac-roman", "xmaccyrillic": "mac-cyrillic", "xmacukrainian": "mac-cyrillic",
    "iso88598i": "iso8859-8", "csiso88598i": "iso8859-8", "logical": "iso8859-8", "visual": "iso8859-8",
    "utf8mb4": "utf-8", "unicode11utf8": "utf-8", "xunicode20utf8": "utf-8", "unicode20utf8": "utf-8",
}
# Python's canonical codec names -> the codec decoded with (WHATWG supersets); anything else is not a web
# text encoding (base64, rot13, idna, unicode-escape, utf-7, EBCDIC...) and is ignored.
_WEB_CODECS = {
    "utf-8": "utf-8", "ascii": "cp1252", "iso8859-1": "cp1252", "cp1252": "cp1252",
    "iso8859-9": "cp1254", "iso8859-11": "cp874", "tis-620": "cp874", "cp874": "cp874",
    "gb2312": "gb18030", "gbk": "gb18030", "gb18030": "gb18030", "hz": "hz",
    "big5": "big5hkscs", "big5hkscs": "big5hkscs", "cp950": "big5hkscs",
    "euc_kr": "cp949", "cp949": "cp949", "johab": "johab",
    "shift_jis": "cp932", "cp932": "cp932", "shift_jis_2004": "shift_jis_2004", "shift_jisx0213": "shift_jisx0213",
    "euc_jp": "euc_jp", "euc_jis_2004": "euc_jis_2004", "euc_jisx0213": "euc_jisx0213",
    "iso2022_jp": "iso2022_jp", "iso2022_jp_2": "iso2022_jp_2", "iso2022_kr": "iso2022_kr",
    "koi8-r": "koi8-r", "koi8-u": "koi8-u", "mac-roman": "mac-roman", "mac-cyrillic": "mac-cyrillic",
    "utf-16": "utf-16", "utf-16-le": "utf-16-le", "utf-16-be": "utf-16-be",
    "utf-32": "utf-32", "utf-32-le": "utf-32-le", "utf-32-be": "utf-32-be",
    **{f"iso8859-{n}": f"iso8859-{n}" for n in (2, 3, 4, 5, 6, 7, 8, 10, 13, 14, 15, 16)},
    **{f"cp{n}": f"cp{n}" for n in (437, 850, 852, 855, 857, 858, 860, 861, 862, 863, 865, 866, 869, 1125,
                                    1250, 1251, 1253, 1254, 1255, 1256, 1257, 1258)},
}
_WIDE = ("utf-16", "utf-32")  # codecs a label found by scanning ASCII bytes cannot truly mean


def decode_page(raw: RawPage) -> Page | Skip:
    """Decode a raw page into text; a Skip with its reason when it is not a usable HTML page."""
    if isinstance(raw.body, str):
        problem = _check_size(len(raw.body), raw.body.strip())
        text, codec = _repair_text(raw.body), TEXT_INPUT
    else:
        problem = _check_size(len(raw.body), raw.body.strip()) or _check_magic(raw.body) or _check_bytes(raw.body)
        text, codec = ("", "") if problem else decode_body(raw.body, raw.content_type)
    problem = problem or _check_text(text)
    if problem:
        reason, detail = problem
        return Skip(reason, raw.source, detail=detail, id=raw.id, url=raw.url)
    return Page(id=raw.id, url=raw.url, html=text, fetched_at=raw.fetched_at, encoding=codec)


def decode_body(body: bytes, content_type: str | None = None) -> tuple[str, str]:
    """Bytes -> (text, codec used), trying the sources in the module's order; never raises."""
    if bom := _bom(body):
        codec, size = bom
        return body[size:].decode(codec, "replace"), codec
    if not body.isascii() and (text := _decode_strict(body, "utf-8")) is not None:
        return text, "utf-8"
    declared = declared_charsets(body, content_type)
    for codec in declared:
        if (text := _decode_strict(body, codec)) is not None:
            return text, codec
    if codec := sniff_utf16(body):
        return body.decode(codec, "replace"), codec
    if body.isascii():
        return body.decode("ascii"), "utf-8"
    detected = detect_charset(body)
    for codec in (detected, _CP1252):
        if codec and (text := _decode_strict(body, codec)) is not None:
            return text, codec
    codec = next((c for c in declared if not c.startswith(_WIDE)), None) or detected or "utf-8"
    log.debug("no codec decodes the body strictly; using %s with replacement characters", codec)
    return body.decode(codec, "replace"), codec


def normalize_charset(label: str | bytes | None) -> str | None:
    """A charset label as found on the web -> the Python codec to decode with, or None to ignore it."""
    if isinstance(label, bytes):
        label = label.decode("ascii", "replace")
    text = (label or "").strip().strip("\"'").strip().lower()
    if text[:2] in ("b'", 'b"'):  # str(bytes) written into a header: b'euc_kr'
        text = text[2:].strip("\"'").strip()
    key = _LABEL_NOISE.sub("", text)
    if not key:
        return None
    if key in _ALIASES:
        return _ALIASES[key]
    try:
        name = codecs.lookup(text).name
    except (LookupError, ValueError):
        return None
    return _WEB_CODECS.get(name)


def declared_charsets(body: bytes, content_type: str | None = None) -> list[str]:
    """Codecs the page declares, in order: HTTP header, <meta> tags, a leading <?xml encoding?>."""
    head = body[: config.META_SCAN_BYTES]
    labels: list[tuple[str | bytes, bool]] = []
    if content_type and (match := _HEADER_CHARSET.search(content_type)):
        labels.append((match.group(1), False))
    labels.extend((label, True) for label in _META_CHARSET.findall(head))
    labels.extend((label, True) for label in _XML_ENCODING.findall(head))
    codecs_found: list[str] = []
    for label, in_markup in labels:
        codec = normalize_charset(label)
        if codec is None or (codec.startswith(_WIDE) and in_markup) or codec in codecs_found:
            continue  # a UTF-16 label read from ASCII-compatible bytes is wrong by construction (WHATWG)
        codecs_found.append(codec)
    return codecs_found


def sniff_utf16(body: bytes) -> str | None:
    """"utf-16-le" or "utf-16-be" when the body's NUL bytes sit on one side of its code units, else None."""
    sample = body[: config.UTF16_SNIFF_BYTES]
    units = len(sample) // 2
    if not units:
        return None
    even, odd = sample[0::2].count(0) / units, sample[1::2].count(0) / units
    if odd >= config.UTF16_MIN_NUL_SHARE and even <= config.UTF16_MAX_OTHER_NUL_SHARE:
        return "utf-16-le"
    if even >= config.UTF16_MIN_NUL_SHARE and odd <= config.UTF16_MAX_OTHER_NUL_SHARE:
        return "utf-16-be"
    return None


def detect_charset(body: bytes) -> str | None:
    """The detector's codec for the body's first config.DETECT_BYTES (cut at a line end), or None.

    charset-normalizer cannot tell the Latin code pages apart on short texts (English with curly quotes comes
    out as cp1250, French as cp1257): when windows-1252, the web's default legacy encoding, is among its
    candidates and nearly as clean as the best single-byte pick, windows-1252 is taken.
    """
    import charset_normalizer  # imported here: most pages declare their charset, and a start-up skips ~10 ms
    from charset_normalizer.utils import is_multi_byte_encoding

    sample = body[: config.DETECT_BYTES]
    if len(body) > len(sample) and (cut := sample.rfind(b"\n")) > 0:
        sample = sample[: cut + 1]  # never split a multibyte character: a newline is one byte in them all
    matches = charset_normalizer.from_bytes(sample)
    best = matches.best()
    if best is None:
        return None
    if is_multi_byte_encoding(best.encoding):
        return normalize_charset(best.encoding)
    if any(_CP1252 in match.could_be_from_charset and match.chaos <= best.chaos + config.DETECT_CP1252_CHAOS
           for match in matches):
        return "cp1252"
    return normalize_charset(best.encoding)


def _bom(body: bytes) -> tuple[str, int] | None:
    for mark, codec in _BOMS:
        if body.startswith(mark):
            return codec, len(mark)
    return None


def _decode_strict(body: bytes, codec: str) -> str | None:
    if codec.startswith(_WIDE) and codec != sniff_utf16(body):
        return None  # UTF-16/32 with neither BOM nor NUL pattern: any even byte count "decodes"
    try:
        return body.decode(codec)
    except (UnicodeDecodeError, LookupError):
        return None


def _repair_text(text: str) -> str:
    """Drop a leading BOM; lone surrogates (possible in JSON) become U+FFFD so the text encodes anywhere."""
    text = text.removeprefix("\ufeff")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    return text


def _check_size(size: int, stripped: bytes | str) -> tuple[str, str] | None:
    if size > config.MAX_PAGE_BYTES:
        return SkipReason.HUGE, f"{size} bytes or characters, over the limit of {config.MAX_PAGE_BYTES}"
    if len(stripped) < config.MIN_PAGE_CHARS:
        return SkipReason.EMPTY, f"{len(stripped)} characters besides white space"
    return None


def _check_magic(body: bytes) -> tuple[str, str] | None:
    for magic, kind in _MAGIC.items():
        if body.startswith(magic):
            return SkipReason.BINARY, f"starts like a {kind} file"
    return None


def _check_bytes(body: bytes) -> tuple[str, str] | None:
    """Binary by its control bytes, unless it is UTF-16 or UTF-32 (whose NUL bytes are text)."""
    if _bom(body) or sniff_utf16(body):
        return None
    return _check_controls(body[: config.SNIFF_BYTES], len(body[: config.SNIFF_BYTES]))


def _check_controls(data: bytes, length: int) -> tuple[str, str] | None:
    controls = (len(data) - len(data.translate(None, _CONTROL_BYTES))) / max(length, 1)
    if controls > config.BINARY_CONTROL_SHARE:
        return SkipReason.BINARY, f"{controls:.0%} control characters at the start"
    return None


def _check_text(text: str) -> tuple[str, str] | None:
    """Reasons found in the decoded text itself: binary, undecodable, empty, not HTML."""
    sample = text[: config.SNIFF_BYTES]
    binary = _check_controls(sample.encode("utf-8", "surrogatepass"), len(sample))
    if binary:
        return binary
    replaced = sample.count(_REPLACEMENT) / max(len(sample), 1)
    if replaced > config.MAX_REPLACEMENT_SHARE:
        return SkipReason.UNDECODABLE, f"{replaced:.0%} of the start is bytes no codec decodes"
    stripped = sample.strip()
    if len(stripped) < config.MIN_PAGE_CHARS:
        return SkipReason.EMPTY, f"{len(stripped)} characters besides white space"
    return _check_markup(stripped, text)


def _check_markup(stripped: str, text: str) -> tuple[str, str] | None:
    if stripped[0] in "{[" and _is_json(text):
        return SkipReason.NOT_HTML, "the body is JSON"
    if not _TAG.search(stripped):
        return SkipReason.NOT_HTML, "no HTML tag at the start"
    return None


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True
