"""Check that parsing a stored page from its UTF-8 bytes hands lxml the same bytes as parsing its decoded text.

    python bench/check_stored_parse.py INPUT... (e.g. the all suite's all.jsonl.gz)

Ingests the inputs into a fresh database, makes a copy of it whose pages are
zlib-compressed as databases written before zstd are, and for every stored page compares what the parser is
handed (``parse._parse``'s argument, the bytes lxml parses, title repair included):

  old path  the zlib blob decompressed and decoded to text (as load_pages gave it before), ``parse_html(str)``
  new path  ``load_pages(...).html_bytes`` from the zstd database, ``parse_html(bytes)``
  legacy    ``load_pages(...).html_bytes`` from the zlib copy, ``parse_html(bytes)``

and each stored content hash with ``content_hash`` of the old path's text. Run it with and without
TEMPLATER_PURE_PYTHON=1: the old path's encoding step is in C or in Python. Prints the counts; exits 1 on any
difference.
"""

from __future__ import annotations

import argparse
import shutil
import sqlite3
import sys
import tempfile
import zlib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from store import pages as page_store  # noqa: E402
from templater import parse, pipeline  # noqa: E402
from templater import native  # noqa: E402


def handed_to_lxml(markup: str | bytes) -> list[bytes]:
    """Every byte string ``parse_html(markup)`` hands lxml (two when it repairs an unclosed <title>)."""
    seen: list[bytes] = []
    original = parse._parse

    def spy(data: bytes):
        seen.append(data)
        return original(data)

    parse._parse = spy
    try:
        parse.parse_html(markup)
    finally:
        parse._parse = original
    return seen


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("inputs", nargs="+", type=Path)
    args = ap.parse_args()
    print(f"encoding step: {native.STATUS}")
    with tempfile.TemporaryDirectory() as tmp:
        new_path, legacy_path = Path(tmp) / "zstd.db", Path(tmp) / "zlib.db"
        db = pipeline.open_store(new_path)
        summary = pipeline.ingest(db, args.inputs)
        db.conn.close()
        print(f"ingested: {summary.to_json()}")
        shutil.copy(new_path, legacy_path)
        with sqlite3.connect(legacy_path) as conn:  # the blobs as upsert_page wrote them before zstd
            rows = conn.execute("SELECT id, html FROM pages").fetchall()
            conn.executemany("UPDATE pages SET html = ? WHERE id = ?",
                             [(zlib.compress(page_store.decompress_html(blob), 6), pid) for pid, blob in rows])
        new, legacy = pipeline.open_store(new_path), pipeline.open_store(legacy_path)
        ids = [pid for pid, _, _ in page_store.iter_page_keys(new)]
        blobs = dict(legacy.execute("SELECT id, html FROM pages"))
        assert all(blob[:1] == b"\x78" for blob in blobs.values()), "the copy holds zlib streams"
        counts = dict(pages=0, xml_declarations=0, controls=0, non_ascii=0, repaired_titles=0, unparsable=0)
        differences = []
        for stored, old_db_page in zip(page_store.load_pages(new, ids), page_store.load_pages(legacy, ids)):
            text = zlib.decompress(blobs[stored.id]).decode("utf-8", "replace")  # what load_pages gave before
            old = handed_to_lxml(text)
            if old != handed_to_lxml(stored.html_bytes):
                differences.append((stored.id, "new path"))
            if old != handed_to_lxml(old_db_page.html_bytes):
                differences.append((stored.id, "legacy zlib database"))
            if stored.content_hash != page_store.content_hash(text) or old_db_page.content_hash != stored.content_hash:
                differences.append((stored.id, "content hash"))
            if stored.html != text:
                differences.append((stored.id, "StoredPage.html"))
            counts["pages"] += 1
            counts["xml_declarations"] += parse._XML_DECL.match(text) is not None
            counts["controls"] += stored.html_bytes != stored.html_bytes.translate(parse._CONTROL_TO_SPACE)
            counts["non_ascii"] += not text.isascii()
            counts["repaired_titles"] += len(old) == 2
            counts["unparsable"] += not old
        new.conn.close()
        legacy.conn.close()
    print(f"compared: {counts}")
    for pid, what in differences[:20]:
        print(f"DIFFERENT ({what}): {pid}")
    print(f"differences: {len(differences)}")
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main())
