import html
import os
import re
import shutil
import struct
import subprocess
import tempfile
import zlib

import numpy as np
import pytest

from templater import rule_inspect as rules
from templater.extract import CompiledTemplate
from templater.report import (BlockDecision, PageCoverage, PageExplanation, ReportData, TemplateSummary, _ranges,
                              render_report)
from templater.template import learn_template

from sitegen import site_pages

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
HEADER_RGB = (0x1F, 0x3A, 0x5F)  # the report's header band
KEPT_RGB = (0xE6, 0xF5, 0xEA)  # the background of kept blocks
DROP_LABEL_RGB = (0xC0, 0x39, 0x2B)  # the label of a block a static rule dropped
WINDOW = (1000, 900)


def summary(**changes) -> TemplateSummary:
    values = dict(site="news.example.com/story/", version=2, pages=6, rules=3, pinned=0, median_coverage=1.0,
                  learned_at="2024-03-01T00:00:00+00:00", stale=False, learned_from=6)
    values.update(changes)
    return TemplateSummary(**values)


def decision(index, text, kept, reason, rule=None, action=""):
    return BlockDecision(index=index, xpath=f"/html/body/div/p[{index + 1}]", tag="p", text=text, kept=kept,
                         reason=reason, rule=rule, action=action, support=1.0 if rule is not None else None)


def page(blocks, url="https://news.example.com/story/1.html") -> PageExplanation:
    return PageExplanation(url=url, site="news.example.com/story/", template="news.example.com/story/@v2",
                           pinned=False, coverage=1.0, method="auto", blocks=tuple(blocks),
                           text="\n".join(b.text for b in blocks if b.kept))


def data_for(explained: PageExplanation, *, rules_in_force=(), pages=(), **changes) -> ReportData:
    return ReportData(summary=summary(**changes), rules=tuple(rules_in_force), page=explained, pages=tuple(pages),
                      generated_at="2024-03-02T00:00:00+00:00")


def site_report_data() -> ReportData:
    """A real template learned from the test site, explaining one of its pages."""
    segs = [seg for seg, _ in site_pages(6)]
    compiled = CompiledTemplate(learn_template(segs, site="news.example.com/story/", version=2))
    explained = [rules.explain_blocks(seg, compiled) for seg in segs]
    coverage = tuple(PageCoverage(url=e.url, coverage=e.coverage, kept_chars=e.kept_chars, total_chars=e.total_chars,
                                  blocks=len(e.blocks), dropped_blocks=sum(not b.kept for b in e.blocks))
                     for e in explained)
    return data_for(explained[0], rules_in_force=compiled.template.rules, pages=coverage,
                    rules=len(compiled.template.rules))


def test_page_text_is_escaped_and_nothing_is_loaded_from_elsewhere():
    hostile = decision(0, '<script>alert("x")</script> & <img src=x onerror=alert(1)>', True, "classifier")
    document = render_report(data_for(page([hostile]), site="<b>site</b>"))
    assert "<script" not in document and "<img" not in document and "<b>site" not in document
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &lt;img" in document
    assert not re.search(r"<(link|script|img|iframe)\b|<[^>]*\s(src|href)=|@import|url\(", document)
    assert document.startswith("<!DOCTYPE html>") and document.rstrip().endswith("</html>")


def test_dropped_runs_are_shaded_and_labelled_by_rule():
    blocks = [decision(0, "Home", False, "drop", 0, "drop"), decision(1, "World", False, "drop", 1, "drop"),
              decision(2, "Sport", False, "drop", 2, "drop"), decision(3, "A headline", True, "classifier"),
              decision(4, "By Ann Lee", False, "drop-shape", 5, "drop-shape"),
              decision(5, "Body text.", True, "classifier"), decision(6, "Share this", False, "classifier")]
    document = render_report(data_for(page(blocks)))
    assert document.count('<div class="drop">') == 3
    assert "drop rule #0–#2 · 3 blocks" in document
    assert "drop-shape rule #5 (support 100%)" in document and ">classifier</span>" in document
    assert document.count('<p class="kept') == 2


def test_a_long_run_folds_its_tail_into_details():
    blocks = [decision(i, f"Menu entry number {i}", False, "drop", i, "drop") for i in range(60)]
    document = render_report(data_for(page(blocks)))
    assert "<details><summary>show all 60 blocks</summary>" in document
    assert all(f"Menu entry number {i}<" in document for i in range(60))


def test_summary_and_coverage_of_a_learned_template():
    data = site_report_data()
    document = render_report(data)
    assert "Learned rules" in document and "Coverage across the site's pages" in document
    assert document.count("<tr class=\"here\">") == 1
    for rule in data.rules:
        assert html.escape(rule.xpath) in document
    assert "Copyright Example News" in document  # the footer, shaded


def test_pinned_templates_say_so():
    data = data_for(page([decision(0, "x", True, "classifier")]), pinned=3)
    document = render_report(data)
    assert "3 pinned rules in force" in document and "Pinned rules (in force instead of the learned ones)" in document


def test_ranges():
    assert _ranges([0, 1, 2, 5, 7, 8]) == "#0–#2, #5, #7–#8"
    assert _ranges([4]) == "#4"


# --- the report in a real browser ---------------------------------------------------------------------------

def find_browser() -> str | None:
    if os.environ.get("TEMPLATER_BROWSER"):
        return os.environ["TEMPLATER_BROWSER"]
    return next((path for path in map(shutil.which, BROWSERS) if path), None)


def screenshot(browser: str, html_path, png_path) -> None:
    with tempfile.TemporaryDirectory() as profile:
        command = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                   "--disable-background-networking", "--disable-component-update", "--disable-sync",
                   f"--user-data-dir={profile}", f"--screenshot={png_path}", f"--window-size={WINDOW[0]},{WINDOW[1]}",
                   html_path.as_uri()]
        done = subprocess.run(command, capture_output=True, text=True, timeout=180)
    assert png_path.exists(), f"{browser} wrote no screenshot (exit {done.returncode}): {done.stderr[-2000:]}"


def decode_png(data: bytes) -> np.ndarray:
    """An 8-bit RGB or RGBA PNG as a (height, width, 3) array: chunks, zlib, then the five row filters."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat = 8, []
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        pos += 12 + length
    assert depth == 8 and colour in (2, 6) and interlace == 0
    channels = 3 if colour == 2 else 4
    raw = np.frombuffer(zlib.decompress(b"".join(idat)), dtype=np.uint8).reshape(height, width * channels + 1)
    rows = np.zeros((height, width * channels), dtype=np.uint8)
    prior = np.zeros(width * channels, dtype=np.int64)
    for y in range(height):
        kind, line = raw[y, 0], raw[y, 1:].astype(np.int64)
        if kind == 0:
            row = line
        elif kind == 1:
            row = line.reshape(-1, channels).cumsum(axis=0).reshape(-1) % 256
        elif kind == 2:
            row = (line + prior) % 256
        else:
            row = np.array(_unfilter_row(line.tolist(), prior.tolist(), channels, kind), dtype=np.int64)
        rows[y] = row
        prior = row
    return rows.reshape(height, width, channels)[:, :, :3]


def _unfilter_row(line: list, prior: list, bpp: int, kind: int) -> list:
    out = [0] * len(line)
    for i, value in enumerate(line):
        left = out[i - bpp] if i >= bpp else 0
        up = prior[i]
        if kind == 3:
            out[i] = (value + (left + up) // 2) % 256
            continue
        corner = prior[i - bpp] if i >= bpp else 0
        p = left + up - corner
        pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
        predictor = left if pa <= pb and pa <= pc else up if pb <= pc else corner
        out[i] = (value + predictor) % 256
    return out


def colour_share(pixels: np.ndarray, rgb: tuple[int, int, int]) -> float:
    return float(np.all(pixels == np.array(rgb, dtype=np.uint8), axis=2).mean())


def test_decode_png_reads_every_filter():
    height, width = 5, 3
    pixels = np.arange(height * width * 3, dtype=np.uint8).reshape(height, width, 3) * 7
    filtered = b""
    for y, kind in enumerate((0, 1, 2, 3, 4)):
        line = pixels[y].reshape(-1).astype(np.int64)
        prior = pixels[y - 1].reshape(-1).astype(np.int64) if y else np.zeros_like(line)
        left = np.concatenate([np.zeros(3, dtype=np.int64), line[:-3]])
        corner = np.concatenate([np.zeros(3, dtype=np.int64), prior[:-3]])
        if kind == 4:
            predictor = [a if abs(b - c) <= abs(a - c) and abs(b - c) <= abs(a + b - 2 * c) else
                         b if abs(a - c) <= abs(a + b - 2 * c) else c for a, b, c in zip(left, prior, corner)]
        else:
            predictor = {0: 0, 1: left, 2: prior, 3: (left + prior) // 2}[kind]
        filtered += bytes([kind]) + ((line - predictor) % 256).astype(np.uint8).tobytes()

    def chunk(kind, body):
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
           + chunk(b"IDAT", zlib.compress(filtered)) + chunk(b"IEND", b""))
    assert np.array_equal(decode_png(png), pixels)


def test_the_report_renders_in_a_real_browser(tmp_path):
    browser = find_browser()
    if browser is None:
        pytest.skip("no headless browser here (.ci/run installs Debian's chromium when it can)")
    html_path = tmp_path / "report.html"
    html_path.write_text(render_report(site_report_data()), encoding="utf-8")
    png_path = tmp_path / "report.png"
    screenshot(browser, html_path, png_path)
    pixels = decode_png(png_path.read_bytes())
    assert pixels.shape == (WINDOW[1], WINDOW[0], 3)
    distinct = np.unique(pixels.reshape(-1, 3), axis=0)
    assert len(distinct) > 50  # text, antialiased: not a blank or one-colour page
    assert colour_share(pixels, HEADER_RGB) > 0.02
    assert colour_share(pixels, KEPT_RGB) > 0.02
    assert colour_share(pixels, DROP_LABEL_RGB) > 0.0005
