"""decode_page: codec choice, charset labels, and every kind of bad input skipped with its reason."""

from __future__ import annotations

import codecs
import gzip
import json
from pathlib import Path

import pytest
from conftest import shared_corpus
from hypothesis import given, settings
from hypothesis import strategies as st

from templater import config
from templater.blocks import segment
from templater.encoding import TEXT_INPUT, decode_body, decode_page, declared_charsets, normalize_charset
from templater.parse import parse_html
from templater.datatypes import Page, RawPage, Skip, SkipReason

FIXTURES = Path(__file__).parent / "fixtures" / "pages"


def raw(body: bytes | str, content_type: str | None = None) -> RawPage:
    return RawPage(id="p1", url="http://example.com/p1", body=body, content_type=content_type, source="test#1")


def html(title: str, *paras: str, meta: str = "") -> str:
    body = "".join(f"<p>{p}</p>" for p in paras)
    return f"<html><head>{meta}<title>{title}</title></head><body><h1>{title}</h1>{body}</body></html>"


def texts(page: Page | Skip) -> list[str]:
    """Block texts of a decoded page, through the parse boundary and segmentation."""
    assert isinstance(page, Page), page
    root = parse_html(page.html)
    assert root is not None
    return [block.text for block in segment(root, page).blocks]


def skip_reason(page: Page | Skip) -> str:
    assert isinstance(page, Skip), page
    assert page.reason in set(SkipReason)
    return page.reason


# --- charset labels ----------------------------------------------------------------------------------------

@pytest.mark.parametrize(("label", "codec"), [
    ("iso-1252", "cp1252"), ("windows-874", "cp874"), ("b'euc_kr'", "cp949"), ('b"gbk"', "gb18030"),
    ("latin1", "cp1252"), ("ISO-8859-1", "cp1252"), ("ascii", "cp1252"), ("us-ascii", "cp1252"),
    ("x-sjis", "cp932"), ("Shift_JIS", "cp932"), ("gb2312", "gb18030"), ("big5", "big5hkscs"),
    ("ks_c_5601-1987", "cp949"), ("iso-8859-9", "cp1254"), ("tis-620", "cp874"), ("utf8", "utf-8"),
    (' "UTF-8" ', "utf-8"), ("utf-8'", "utf-8"), ("windows-1251", "cp1251"), ("utf-16", "utf-16"),
])
def test_normalize_charset_maps_web_labels(label, codec):
    assert normalize_charset(label) == codec


@pytest.mark.parametrize("label", ["0", "", "  ", "none", "b''", "base64", "rot13", "unicode-escape", "idna",
                                   "utf-7", "cp037", "x-unknown-charset", None])
def test_normalize_charset_ignores_bogus_and_non_text_labels(label):
    assert normalize_charset(label) is None


@given(st.text(max_size=40))
def test_normalize_charset_returns_a_python_text_codec_or_none(label):
    codec = normalize_charset(label)
    assert codec is None or codecs.lookup(codec)._is_text_encoding


# --- the corpus's odd labels, in a <meta> of bytes and of text -------------------------------------------

@pytest.mark.parametrize(("name", "codec", "expected"), [
    ("cafe-iso-1252.html", "cp1252", "Les élèves ont goûté la crème brûlée à 5 € la part."),
    ("thai-windows-874.html", "cp874", "สวัสดีครับ ยินดีต้อนรับสู่เว็บไซต์ของเรา"),
    ("korean-b-euc-kr.html", "cp949", "안녕하세요. 저희 웹사이트에 오신 것을 환영합니다."),
    ("zero-label.html", "cp1252", "Schöne Grüße aus München, wo die Straßen im Frühling blühen."),
])
def test_odd_meta_labels_in_bytes_decode(name, codec, expected):
    page = decode_page(raw((FIXTURES / name).read_bytes()))
    assert page.encoding == codec
    assert expected in texts(page)


@pytest.mark.parametrize(("label", "words"), [
    ("iso-1252", "Déjà l’été, 5 €"), ("windows-874", "สวัสดีครับ"), ("b'euc_kr'", "안녕하세요"), ("0", "Grüße"),
])
def test_odd_meta_labels_in_text_keep_the_text(label, words):
    markup = html("Title", words, meta=f'<meta http-equiv="Content-Type" content="text/html; charset={label}">')
    page = decode_page(raw(markup))
    assert page.encoding == TEXT_INPUT
    assert words in texts(page)


def test_odd_label_in_http_header_is_normalized():
    body = html("소식", "안녕하세요 여러분").encode("euc_kr")
    page = decode_page(raw(body, content_type="text/html; charset=b'euc_kr'"))
    assert page.encoding == "cp949"
    assert "안녕하세요 여러분" in texts(page)


# --- codec sources and their order ---------------------------------------------------------------------------

def test_http_header_charset_beats_meta():
    body = html("Новости", "Привет, как дела?", meta='<meta charset="windows-1252">').encode("cp1251")
    text, codec = decode_body(body, "text/html; charset=windows-1251")
    assert codec == "cp1251"
    assert "Привет, как дела?" in text


def test_declared_charset_that_fails_strictly_falls_through():
    body = html("Новости", "Привет, как дела?", meta='<meta charset="windows-1251">').encode("cp1251")
    text, codec = decode_body(body, "text/html; charset=utf-8")  # the header is wrong: not valid UTF-8
    assert codec == "cp1251"
    assert "Привет, как дела?" in text


def test_declared_charsets_in_order_without_duplicates():
    body = b'<?xml version="1.0" encoding="iso-8859-2"?><meta charset="0"><meta charset="latin1"><meta charset=cp1252>'
    assert declared_charsets(body, "text/html; charset=koi8-r") == ["koi8-r", "cp1252", "iso8859-2"]


def test_xml_declaration_names_the_codec_of_bytes():
    page = decode_page(raw((FIXTURES / "xml-declaration.xhtml").read_bytes()))
    assert page.encoding == "cp1252"
    assert "Año nuevo, vida nueva: ¡olé!" in texts(page)


def test_valid_utf8_wins_over_a_latin1_declaration():
    body = html("Café", "Déjà vu", meta='<meta charset="iso-8859-1">').encode("utf-8")
    page = decode_page(raw(body, "text/html; charset=ISO-8859-1"))
    assert page.encoding == "utf-8"
    assert "Déjà vu" in texts(page)


def test_wrong_declaration_over_legacy_bytes_still_decodes():
    body = html("Café", "Les élèves à l’école", meta='<meta charset="utf-8">').encode("cp1252")
    page = decode_page(raw(body))
    assert "Les élèves à l’école" in texts(page)


def test_missing_declaration_uses_the_detector():
    body = html("Новости", *["Привет, как дела? Это тестовая страница на русском языке."] * 3).encode("cp1251")
    page = decode_page(raw(body))
    assert page.encoding == "cp1251"
    assert "Привет, как дела? Это тестовая страница на русском языке." in texts(page)


@pytest.mark.parametrize("bom_codec", ["utf-8-sig", "utf-16", "utf-32"])
def test_byte_order_mark_decides(bom_codec):
    page = decode_page(raw(html("Ünïcode", "Ελληνικά").encode(bom_codec), "text/html; charset=iso-8859-1"))
    assert "Ελληνικά" in texts(page)
    assert not page.html.startswith("\ufeff")


def test_utf16_without_bom_is_told_by_its_nul_bytes():
    page = decode_page(raw((FIXTURES / "nested" / "utf16-no-bom.htm").read_bytes()))
    assert page.encoding == "utf-16-le"
    assert "Ελληνικά και русский." in texts(page)
    big_endian = decode_page(raw(html("Ünïcode", "русский").encode("utf-16-be")))
    assert big_endian.encoding == "utf-16-be"


def test_utf16_label_in_markup_of_ascii_bytes_is_ignored():
    body = html("Title", "Plain text", meta='<meta charset="utf-16">').encode("ascii")
    assert decode_body(body) == (body.decode("ascii"), "utf-8")


# --- the dev corpus's hard cases, as small pages of our own ----------------------------------------------

def test_nul_and_control_characters_extract():
    page = decode_page(raw((FIXTURES / "controls.html").read_bytes()))
    joined = " ".join(texts(page))
    assert "a bell there." in joined and "feeds." in joined
    text_page = decode_page(raw(html("T", "NUL\x00here", "vertical\x0btab", "group\x1dsep")))
    assert len(texts(text_page)) == 4


@pytest.mark.parametrize("declaration", [
    '<?xml version="1.0" encoding="iso-8859-1"?>\n',
    '<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0 Strict//EN" '
    '"http://www.w3.org/TR/xhtml1/DTD/xhtml1-strict.dtd">\n',
    '<!DOCTYPE html>\n<?xml version="1.0" encoding="iso-8859-1"?>\n',  # after the doctype (cleaneval)
])
def test_xml_encoding_declaration_inside_a_decoded_string_extracts(declaration):
    page = decode_page(raw(declaration + html("Señor", "Año nuevo")))
    assert "Año nuevo" in texts(page)


def test_xml_declaration_in_the_middle_of_a_page_extracts():
    markup = html("Logo", "Before", '<?xml version="1.0" encoding="utf-16"?><svg><title>x</title></svg>After')
    assert "Before" in texts(decode_page(raw(markup)))


def test_lone_surrogate_in_text_is_replaced():
    page = decode_page(raw(html("T", "broken \ud83d emoji")))
    assert "\ud83d" not in page.html
    page.html.encode("utf-8")


def test_malformed_html_that_still_parses():
    markup = "<html><body><p>Hello <b>world</p><div>unclosed <table><tr><td>cell one<td>cell two</table>"
    assert {"Hello world", "cell one", "cell two"} <= set(texts(decode_page(raw(markup))))


# --- bad input: skipped with a counted reason ------------------------------------------------------------

@pytest.mark.parametrize("body", [b"", b"  \n\t ", "", "   ", b"<p></p>"])
def test_empty(body):
    assert skip_reason(decode_page(raw(body))) == "empty"


def test_huge(monkeypatch):
    monkeypatch.setattr(config, "MAX_PAGE_BYTES", 1000)
    body = html("Big", "word " * 400)
    assert skip_reason(decode_page(raw(body))) == "huge"
    assert skip_reason(decode_page(raw(body.encode()))) == "huge"


@pytest.mark.parametrize("body", [
    b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj <</Type /Catalog>> endobj <html>",
    b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR<html>", b"\xff\xd8\xff\xe0\x00\x10JFIF<html>",
    b"GIF89a\x01\x00\x01\x00<html><body>", b"PK\x03\x04\x14\x00\x00\x00<html><body>",
    gzip.compress(b"<html><body><p>compressed twice</p></body></html>"),
])
def test_binary_by_magic_number(body):
    assert skip_reason(decode_page(raw(body))) == "binary"


def test_binary_by_control_share():
    body = b"<html>" + bytes(range(0, 8)) * 200 + b"</html>"
    assert skip_reason(decode_page(raw(body))) == "binary"
    assert skip_reason(decode_page(raw(body.decode("latin-1")))) == "binary"


def test_undecodable_text():
    assert skip_reason(decode_page(raw("<html><body>" + "\ufffd" * 200 + "</body></html>"))) == "undecodable"


@pytest.mark.parametrize("body", [
    json.dumps({"html": "<p>a page inside JSON</p>", "items": list(range(20))}),
    "Just some plain text without any markup, long enough to count.",
    b"User-agent: *\nDisallow: /private/\n",
])
def test_not_html(body):
    assert skip_reason(decode_page(raw(body))) == "not-html"


def test_skip_keeps_id_url_and_source():
    skip = decode_page(raw(b""))
    assert (skip.id, skip.url, skip.source) == ("p1", "http://example.com/p1", "test#1")


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=2000), st.one_of(st.none(), st.text(max_size=30)))
def test_decode_page_never_raises_on_bytes(body, content_type):
    page = decode_page(raw(body, f"text/html; charset={content_type}" if content_type else None))
    assert isinstance(page, Page) or page.reason in set(SkipReason)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=2000))
def test_decode_page_never_raises_on_text(body):
    page = decode_page(raw("<html><body>" + body))
    assert isinstance(page, Page) or page.reason in set(SkipReason)
    if isinstance(page, Page):
        page.html.encode("utf-8")


def test_decoding_twice_gives_equal_pages():
    body = (FIXTURES / "zero-label.html").read_bytes()
    assert decode_page(raw(body)) == decode_page(raw(body))


# --- the whole dev corpus ----------------------------------------------------------------------------------

def test_every_corpus_page_decodes_parses_and_segments():
    """Every page of every dataset goes through decode -> parse -> segment without an exception.

    Every page also yields text (none did not when this was written); a failure lists the pages that do not.
    """
    pages = 0
    no_text: list[str] = []
    for path in sorted(shared_corpus().glob("*/pages.jsonl.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as lines:
            for line in lines:
                record = json.loads(line)
                page_id = f"{path.parent.name}/{record['id']}"
                page = decode_page(RawPage(id=page_id, url=record["url"], body=record["html"]))
                assert isinstance(page, Page), page
                root = parse_html(page.html)
                if root is None or not any(block.text for block in segment(root, page).blocks):
                    no_text.append(page_id)
                pages += 1
    assert pages > 0
    assert not no_text, f"{len(no_text)} of {pages} corpus pages yield no text: {', '.join(no_text)}"
