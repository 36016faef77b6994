"""Stored HTML: zstd-compressed UTF-8, zlib blobs of older databases still read, content hashes unchanged."""

import gzip
import hashlib
import json
import threading
import zlib

import numpy as np
import pytest

from store import pages as page_store
from templater import pipeline
from templater.encoding import decode_page
from templater.sources import iter_records

from sitegen import article_html

# Non-ASCII text, a control character, a leading no-break space and XML declaration, a lone surrogate.
ODD_PAGES = {
    2: lambda html: html.replace("<p>", "<p>Café naïve — 東京の川 😀 ", 1),
    3: lambda html: "\u00a0\u2028<?xml version='1.0' encoding='utf-16'?>" + html.replace("<p>", "<p>\x01 x\x00", 1),
    4: lambda html: html.replace("<p>", "<p>broken \ud83d emoji ", 1),
}


def site_html(seed: int) -> str:
    html, _ = article_html(seed)
    return ODD_PAGES.get(seed, lambda h: h)(html)


def write_site(path, seeds):
    with gzip.open(path, "wt", encoding="utf-8", errors="surrogatepass") as f:
        for seed in seeds:
            f.write(json.dumps({"id": f"p{seed}", "url": f"https://news.example.com/story/{seed}.html",
                                "html": site_html(seed)}) + "\n")


def upsert(db, page_id: str, html: str | bytes, digest: str) -> str:
    return page_store.upsert_page(db, id=page_id, url=f"https://example.com/{page_id}", host="example.com",
                                  html=html, digest=digest, fetched_at=None, encoding="utf-8",
                                  hashes=np.zeros(1, np.uint32), shapes=np.zeros(1, np.uint32), text_chars=1,
                                  now="2024-01-01")


def blobs(db) -> dict[str, bytes]:
    return dict(db.execute("SELECT id, html FROM pages"))


def test_pages_are_stored_as_zstd_and_read_back_as_their_utf8_bytes(tmp_path):
    db = pipeline.open_store(tmp_path / "t.db")
    texts = {"ascii": "<p>plain</p>", "utf8": "<p>Café — 東京 😀</p>", "surrogate": "<p>a\ud800b</p>", "empty": ""}
    for page_id, html in texts.items():
        upsert(db, page_id, html, page_store.content_hash(html))
    assert all(blob[:4] == page_store.ZSTD_MAGIC for blob in blobs(db).values())
    stored = {p.id: p for p in page_store.load_pages(db, list(texts))}
    for page_id, html in texts.items():
        assert stored[page_id].html_bytes == html.encode("utf-8", "replace")
        assert stored[page_id].html == html.encode("utf-8", "replace").decode("utf-8")
    assert stored["surrogate"].html == "<p>a?b</p>" and stored["empty"].html_bytes == b""


def test_encode_page_gives_the_stored_bytes_and_the_content_hash():
    for html in ("<p>plain</p>", "<p>Café — 東京 😀</p>", "<p>a\ud800b \udfff</p>", ""):
        data, digest = page_store.encode_page(html)
        assert data == html.encode("utf-8", "replace")
        assert digest == page_store.content_hash(html) == hashlib.sha1(
            html.encode("utf-8", "surrogatepass")).hexdigest()
    # a lone surrogate is hashed as it is (as before), not as the "?" it is stored as
    assert page_store.encode_page("a\ud800")[1] != page_store.content_hash("a?")


def test_decompress_html_tells_zstd_from_zlib():
    data = "<p>Café — 東京</p>".encode() * 50
    assert page_store.decompress_html(page_store.compress_html(data)) == data
    assert page_store.decompress_html(zlib.compress(data, 6)) == data
    assert page_store.decompress_html(zlib.compress(b"", 6)) == b""
    assert page_store.decompress_html(page_store.compress_html(b"")) == b""
    with pytest.raises(zlib.error):
        page_store.decompress_html(b"not a blob")


def test_each_thread_has_its_own_zstd_objects():
    """zstandard's objects must not be shared by threads at once."""
    mine = (page_store._compressor(), page_store._decompressor())
    assert mine == (page_store._compressor(), page_store._decompressor())  # reused within a thread
    data = [f"<p>page {i} Café</p>".encode() * 200 for i in range(200)]
    found = {}

    def work(name):
        found[name] = ((page_store._compressor(), page_store._decompressor()),
                       all(page_store.decompress_html(page_store.compress_html(d)) == d for d in data))

    threads = [threading.Thread(target=work, args=(n,)) for n in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(ok for _, ok in found.values())
    objects = [id(o) for codecs, _ in found.values() for o in codecs] + [id(o) for o in mine]
    assert len(set(objects)) == len(objects)


def as_written_before_zstd(db, html_by_id: dict[str, str]) -> None:
    """Rewrite the pages' blobs as upsert_page wrote them before zstd: zlib level 6 of the UTF-8 ("replace")."""
    db.conn.executemany("UPDATE pages SET html = ? WHERE id = ?",
                        [(zlib.compress(html.encode("utf-8", "replace"), 6), pid)
                         for pid, html in html_by_id.items()])
    db.conn.commit()


def extraction_rows(db):
    return db.execute("SELECT page_id, site, method, template, coverage, text, boilerplate_chars, content_hash"
                      " FROM extractions ORDER BY page_id").fetchall()


def test_a_database_written_with_zlib_still_reads_builds_and_extracts(tmp_path):
    write_site(tmp_path / "site.jsonl.gz", range(6))
    html_by_id = {page.id: page.html for page in map(decode_page, iter_records([tmp_path / "site.jsonl.gz"]))}
    assert "\ufffd" in html_by_id["p4"]  # the lone surrogate, replaced by decode_page
    fresh = pipeline.open_store(tmp_path / "fresh.db")
    pipeline.ingest(fresh, [tmp_path / "site.jsonl.gz"])
    pipeline.build(fresh)
    expected = [(r.id, r.text, r.method, r.template) for r in pipeline.extract(fresh)]
    assert {method for _, _, method, _ in expected} == {"template"}
    assert any("Café naïve — 東京の川 😀" in text for _, text, _, _ in expected)

    old = pipeline.open_store(tmp_path / "old.db")
    pipeline.ingest(old, [tmp_path / "site.jsonl.gz"])
    as_written_before_zstd(old, html_by_id)
    assert all(blob[:1] == b"\x78" for blob in blobs(old).values())
    ids = sorted(html_by_id)
    for stored, new in zip(page_store.load_pages(old, ids), page_store.load_pages(fresh, ids)):
        assert stored.html_bytes == new.html_bytes == html_by_id[stored.id].encode("utf-8", "replace")
    assert pipeline.build(old).counts["templates learned"] == 1  # learned from the zlib pages
    assert [(r.id, r.text, r.method, r.template) for r in pipeline.extract(old)] == expected
    assert extraction_rows(old) == extraction_rows(fresh)

    # Re-ingesting recognises every page by its content hash (the surrogate page's included): nothing rewritten.
    assert pipeline.ingest(old, [tmp_path / "site.jsonl.gz"]).counts == {"unchanged": 6}
    assert all(blob[:1] == b"\x78" for blob in blobs(old).values())
    # A changed page is stored with zstd next to the zlib ones; both kinds extract.
    write_site(tmp_path / "changed.jsonl.gz", [7])
    changed = tmp_path / "changed.jsonl"
    with gzip.open(tmp_path / "changed.jsonl.gz", "rt", encoding="utf-8") as f:
        record = json.loads(f.read())
    changed.write_text(json.dumps(dict(record, id="p1", url="https://news.example.com/story/1.html")) + "\n")
    assert pipeline.ingest(old, [changed]).counts == {"changed": 1}
    kinds = {pid: blob[:4] == page_store.ZSTD_MAGIC for pid, blob in blobs(old).items()}
    assert kinds == {pid: pid == "p1" for pid in html_by_id}
    results = {r.id: r for r in pipeline.extract(old)}
    assert results["p1"].method == "template" and record["html"].split("<p>")[1][:40] in results["p1"].text
    assert all(results[pid].text == text for pid, text, _, _ in expected if pid != "p1")


def test_extractions_keep_their_title_and_metadata_and_older_databases_still_open(tmp_path):
    write_site(tmp_path / "site.jsonl.gz", range(5))
    db = pipeline.open_store(tmp_path / "t.db")
    pipeline.ingest(db, [tmp_path / "site.jsonl.gz"])
    pipeline.build(db)
    records = {r.id: r.to_json() for r in pipeline.extract(db)}
    assert any(r["title"] for r in records.values())
    assert {r["id"]: r for r in page_store.load_extractions(db, sorted(records))} == records
    assert list(page_store.load_extractions(db, ["missing"])) == []

    # A database written before the fields were kept: no extraction_fields table, no such component.
    db.execute("DROP TABLE extraction_fields")
    db.execute("DELETE FROM schema_migrations WHERE component = 'extraction_fields'")
    db.conn.commit()
    db.conn.close()
    reader = pipeline.open_store(tmp_path / "t.db", readonly=True)
    old = list(page_store.load_extractions(reader, sorted(records)))  # read-only: the new table made in memory
    assert [r["text"] for r in old] == [records[pid]["text"] for pid in sorted(records)]
    assert all(r["title"] is None and r["author"] is None for r in old)
    reader.conn.close()
    writer = pipeline.open_store(tmp_path / "t.db")  # a command that writes adds the table
    assert {r.id: r.to_json() for r in pipeline.extract(writer)} == records
    assert {r["id"]: r for r in page_store.load_extractions(writer, sorted(records))} == records


@pytest.mark.parametrize("chunk", [1, 2, 3, 5, 64])
def test_live_ids_come_a_chunk_at_a_time_in_id_order_without_the_retired(tmp_path, chunk):
    db = pipeline.open_store(tmp_path / "t.db")
    ids = ["b", "a", "a1", "Z", "é", "a/b", "k10/x", "k2/x", "k1/x", "", "c"]
    for page_id in ids:
        upsert(db, page_id, "<p>x</p>", page_store.content_hash("<p>x</p>"))
    page_store.retire_pages(db, ["a1", "k2/x"])
    lists = list(page_store.iter_live_ids(db, chunk=chunk))
    live = [pid for pid, _, _ in page_store.iter_page_keys(db)]
    assert [pid for part in lists for pid in part] == live and len(live) == len(ids) - 2
    assert all(len(part) == chunk for part in lists[:-1]) and 0 < len(lists[-1]) <= chunk
    assert page_store.live_page_count(db) == len(live)
