"""bench/bench_scale.py's fast input writer makes, byte for byte, the JSON lines of its per-word reference."""

import gzip
import json
import sys

from conftest import ROOT

sys.path.insert(0, str(ROOT / "bench"))
import bench_scale  # noqa: E402


def test_the_fast_writer_writes_what_replicate_makes(tmp_path):
    records = [
        {"id": "a", "url": "https://example.org/a", "html": "<html><body><h1>Hello wide world</h1>"
                                                          "<p>Quoted \"text\" with\u2028a line separator, tabs\tand "
                                                          "accents: café naïve.</p></body></html>"},
        {"url": "http://example.net:8080/b?q=1", "html": "<p>Second page, same words: Hello wide world again"
                                                         "</p><script>var x = 'abc';</script>"},
        {"id": "c", "url": "https://example.org/c", "html": "no tags at all"},
    ]
    source = tmp_path / "suite.jsonl.gz"
    with gzip.open(source, "wt", encoding="utf-8") as f:
        f.write("".join(json.dumps(r) + "\n" for r in records))
    out = tmp_path / "pages.jsonl.gz"
    bench_scale.write_pages(source, 8, out)  # copies 0, 1 and two pages of copy 2
    with gzip.open(out, "rt", encoding="utf-8", newline="") as f:
        lines = f.read().split("\n")
    expected = [json.dumps(bench_scale.replicate(records[i % 3], i // 3), ensure_ascii=False) for i in range(8)]
    assert lines == [*expected, ""]
    assert len({json.loads(line)["url"] for line in expected}) == 8  # every copy's pages are pages of their own
    html = [json.loads(line)["html"] for line in expected]
    assert html[3] != html[0] and html[6] != html[0]  # later copies have words of their own
