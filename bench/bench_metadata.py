#!/usr/bin/env python3
"""Dates and authors without the page's declarations: templater (learned rules + visible evidence) against
trafilatura's metadata and htmldate, in the same run, on the same pages.

    python bench/bench_metadata.py [CORPUS.jsonl.gz] [--mode split|stripped|both] [--limit N] [--keep DIR]

Default corpus: the dev corpus's `all` suite (../shared/eval/suites.py). A page is scored when it declares a
publication date (JSON-LD datePublished, og:/article:published_time) or an author (JSON-LD author,
article:author): those values are the gold, read here by this script's own plain reader. Every
such declaration is then removed from the page's HTML (ld+json scripts, <meta> tags naming a date, time or
author, itemprop attributes of dates and authors, <time pubdate>), and every system gets the same stripped HTML.

templater runs as a user runs it: `templater run SUITE --db DB --output OUT` over the whole suite, as a process.
Modes:
  split     each site's declaring pages are cut in two halves (by id); in one run the first half is stripped and
            the second keeps its declarations (the site's pages that teach the meta rules), then the other way
            round: every declaring page is scored once, stripped, with its site's other half declared;
  stripped  every declaring page is stripped at once (only visible evidence and rules learned from it).
Scores: % correct dates (the same day as the declared date, the declared moment's day where it declares a time:
see date_ok; "declared day": the day the declaration is written with, a UTC day where the time is declared in UTC;
"dates+-1d": within a day) and % correct authors (the declared first author's
name among the predicted names, case, punctuation and word order aside), over the pages with that gold;
"dev" and "held-out" split whole sites by a hash of their name (heuristics were chosen on dev only).
"""

from __future__ import annotations

import argparse
import gzip
import html as html_lib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import zlib
from datetime import datetime, timedelta
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
from suites import suite_file  # noqa: E402

HOLDOUT_MODULUS = 3  # a site is held out when crc32(site) % HOLDOUT_MODULUS == 0
_LD = re.compile(r"<script\b[^>]*?application/ld\+json[^>]*>(.*?)</script\s*>", re.IGNORECASE | re.DOTALL)
_META = re.compile(r"<meta\b[^>]*>", re.IGNORECASE)
_ATTR = re.compile(r"""([\w:.-]+)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))""")
_DECLARES = re.compile(r"(?i)date|time|author|creator|publish|modified|byl|\bcreated")
_ITEMPROP = re.compile(r"""\sitemprop\s*=\s*["']?(?:datePublished|dateCreated|dateModified|author|creator)["']?""",
                       re.IGNORECASE)
_PUBDATE = re.compile(r"(<time\b[^>]*?)\spubdate(?:=\"[^\"]*\"|='[^']*'|=\S+)?", re.IGNORECASE)
_STAMP = re.compile(r"(?:19|20)\d\d-\d\d-\d\d(?:[T ]\d\d:\d\d(?::\d\d(?:\.\d+)?)?\s*((?:Z|[+-]\d\d:?\d\d)))?")
GOLD_DATE_META = ("article:published_time", "og:published_time", "og:article:published_time")
GOLD_AUTHOR_META = ("article:author",)  # <meta name=author> is often the site or the CMS user: not gold


# --- gold: the page's own declarations, read plainly ------------------------------------------------------------

def meta_tags(html: str) -> dict[str, str]:
    """name/property -> content of the page's <meta> tags (first of each)."""
    out: dict[str, str] = {}
    for tag in _META.findall(html):
        attrs = {m.group(1).lower(): m.group(2) if m.group(2) is not None else m.group(3) if m.group(3) is not None
                 else m.group(4) for m in _ATTR.finditer(tag)}
        key = (attrs.get("property") or attrs.get("name") or "").lower()
        if key and attrs.get("content") and key not in out:
            out[key] = attrs["content"].strip()
    return out


def ld_objects(html: str) -> list[dict]:
    out = []

    def walk(data):
        if isinstance(data, list):
            for x in data:
                walk(x)
        elif isinstance(data, dict):
            out.append(data)
            walk(data.get("@graph"))

    for block in _LD.findall(html):
        try:
            walk(json.loads(block.strip().removeprefix("<!--").removesuffix("-->"), strict=False))
        except ValueError:
            continue
    return out


def names(value) -> list[str]:
    items = value if isinstance(value, list) else [value]
    out = []
    for item in items:
        if isinstance(item, dict):
            item = item.get("name")
        if isinstance(item, str) and item.strip():
            out.append(" ".join(item.split()))
    return out


def gold_of(html: str) -> tuple[str | None, str | None]:
    """(declared publication date: YYYY-MM-DD, with its time and offset when declared; declared first author)."""
    day = author = None
    objects = ld_objects(html)
    articles = [o for o in objects if re.search(r"(?i)article|posting|webpage|report", json.dumps(o.get("@type")))]
    for obj in articles or [o for o in objects if "image" not in json.dumps(o.get("@type")).lower()]:
        if day is None and isinstance(obj.get("datePublished"), str):
            found = _STAMP.search(obj["datePublished"])
            day = found.group(0) if found else None
        if author is None and obj.get("author"):
            found = names(obj["author"])
            author = found[0] if found else None
    metas = meta_tags(html)
    if day is None:
        value = next((metas[k] for k in GOLD_DATE_META if k in metas), "")
        found = _STAMP.search(value)
        day = found.group(0) if found else None
    if author is None:
        value = next((metas[k] for k in GOLD_AUTHOR_META if k in metas and "/" not in metas[k]), None)
        author = re.split(r"\s*(?:,|;|\band\b|&)\s*", value)[0] if value else None
    if author:  # HTML left in a declaration, a trailing role ("Jane Doe, Staff Writer"), a "By"
        author = re.sub(r"<[^>]*>", " ", html_lib.unescape(author))
        author = re.split(r"\s*(?:,|;|\band\b|&)\s*", " ".join(author.split()))[0]
        author = re.sub(r"(?i)^by\s+", "", author).strip()
    return day, author or None


def strip_declarations(html: str) -> str:
    """The page without its ld+json, its date/time/author <meta> tags, date/author itemprops and pubdate."""
    html = _LD.sub("", html)
    html = _META.sub(lambda m: "" if _DECLARES.search(" ".join(
        v for k, v in meta_tags(m.group(0)).items()) + " " + " ".join(meta_tags(m.group(0)))) else m.group(0), html)
    html = _ITEMPROP.sub("", html)
    return _PUBDATE.sub(r"\1", html)


# --- scoring ----------------------------------------------------------------------------------------------------

def name_key(name: str) -> str:
    name = re.sub(r"(?i)^\W*by\s+", "", name)
    return " ".join(sorted(re.sub(r"[^\w\s]", " ", name.lower()).split()))


def author_ok(gold: str, predicted: str | None) -> bool:
    if not predicted:
        return False
    parts = re.split(r"\s*(?:;|,|\band\b|&)\s*", predicted)
    return name_key(gold) in {name_key(p) for p in parts} or name_key(gold) == name_key(predicted)


def declared_day(gold: str, predicted: str | None) -> bool:
    """The day the declaration is written with (a time declared in UTC names the UTC day)."""
    return bool(predicted) and str(predicted)[:10] == gold[:10]


def date_ok(gold: str, predicted: str | None) -> bool:
    """The same day: the declared day; or, where the page declares a time, the day of that moment wherever the page
    is read from. A predicted time with its offset is the same moment seen in the declared offset; a time declared
    in UTC (Z, +00:00: the offset normalised away) names no local day, and the page's own day is that of the moment
    in one of the world's offsets, UTC-12:00 to UTC+14:00 (a New York page's 21:57 on the 4th is declared as
    01:57Z on the 5th, and shows the 4th), whether the prediction names a day or a time."""
    if declared_day(gold, predicted):
        return True
    moment = _moment(gold)
    if moment is None or not predicted:
        return False
    shown = _moment(str(predicted))
    if shown is not None and shown.astimezone(moment.tzinfo).date().isoformat() == gold[:10]:
        return True
    if moment.utcoffset() != timedelta(0):
        return False
    return (moment - timedelta(hours=12)).date().isoformat() <= str(predicted)[:10] <= (
        moment + timedelta(hours=14)).date().isoformat()


def _moment(stamp: str):
    """A date-time with its offset, else None."""
    found = _STAMP.fullmatch(stamp.strip())
    if found is None or not found.group(1):
        return None
    try:
        return datetime.fromisoformat(stamp.strip().replace("Z", "+00:00").replace(" ", "T"))
    except ValueError:
        return None


def date_near(gold: str, predicted: str | None) -> bool:
    """Within a day: a declared UTC time and a page's local date can name neighbouring days."""
    from datetime import date

    try:
        return abs((date.fromisoformat(str(predicted)[:10]) - date.fromisoformat(gold[:10])).days) <= 1
    except (TypeError, ValueError):
        return False


def held_out(site: str) -> bool:
    return zlib.crc32(site.encode("utf-8")) % HOLDOUT_MODULUS == 0


# --- systems ----------------------------------------------------------------------------------------------------

def run_templater(records: list[dict], stripped_ids: set[str], work: Path, name: str) -> tuple[dict, float]:
    """templater run over the suite (the given pages stripped), as a process: id -> (date, author), seconds."""
    suite = work / f"{name}.jsonl.gz"
    with gzip.open(suite, "wt", encoding="utf-8") as f:
        for r in records:
            html = r["stripped"] if r["id"] in stripped_ids else r["html"]
            f.write(json.dumps({"id": r["id"], "url": r["url"], "html": html}) + "\n")
    out, db = work / f"{name}.out.jsonl", work / f"{name}.db"
    start = time.perf_counter()
    subprocess.run([str(Path(sys.executable).parent / "templater"), "run", str(suite), "--db", str(db), "--output",
                    str(out), "--quiet"], check=True)
    seconds = time.perf_counter() - start
    found = {}
    with open(out, encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            if row["id"] in stripped_ids:
                found[row["id"]] = (row.get("date"), row.get("author"))
    return found, seconds


def run_peers(scored: list[dict]) -> dict[str, dict]:
    import htmldate
    import trafilatura

    peers: dict[str, dict] = {"trafilatura": {}, "htmldate": {}}
    for r in scored:
        try:
            doc = trafilatura.extract_metadata(r["stripped"], default_url=r["url"])
        except Exception:  # a peer's failure is its miss, never the run's end
            doc = None
        peers["trafilatura"][r["id"]] = (getattr(doc, "date", None), getattr(doc, "author", None))
        try:
            day = htmldate.find_date(r["stripped"], url=r["url"], original_date=True)
        except Exception:
            day = None
        peers["htmldate"][r["id"]] = (day, None)
    return peers


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus", nargs="?")
    parser.add_argument("--mode", choices=("split", "stripped", "both"), default="both")
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--keep", type=Path, default=None, help="keep the suites, databases and outputs here")
    parser.add_argument("--misses", type=Path, default=None, help="write templater's misses (dev sites) here")
    args = parser.parse_args()
    path = Path(args.corpus) if args.corpus else suite_file("all")
    with gzip.open(path, "rt", encoding="utf-8") as f:
        records = [json.loads(line) for line in f if line.strip()]
    records = records[:args.limit] if args.limit else records
    for r in records:
        r["gold_date"], r["gold_author"] = gold_of(r["html"])
        r["site_key"] = f"{r.get('dataset', '')}/{r.get('site') or r['url'].split('/')[2]}"
        if r["gold_date"] or r["gold_author"]:
            r["stripped"] = strip_declarations(r["html"])
    scored = [r for r in records if "stripped" in r]
    modes = ("split", "stripped") if args.mode == "both" else (args.mode,)
    with tempfile.TemporaryDirectory() as tmp:
        work = args.keep or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        predictions: dict[str, dict] = {}
        seconds: dict[str, float] = {}
        if "split" in modes:
            halves = split_halves(scored)
            first, s1 = run_templater(records, halves[0], work, "split-a")
            second, s2 = run_templater(records, halves[1], work, "split-b")
            predictions["templater (site half declared)"] = {**first, **second}
            seconds["templater (site half declared)"] = s1 + s2
        if "stripped" in modes:
            found, s = run_templater(records, {r["id"] for r in scored}, work, "stripped")
            predictions["templater (all stripped)"] = found
            seconds["templater (all stripped)"] = s
        start = time.perf_counter()
        predictions.update(run_peers(scored))
        seconds["peers"] = time.perf_counter() - start
    print_table(scored, predictions, len(records), path.name)
    print("seconds: " + ", ".join(f"{k} {v:.1f}" for k, v in seconds.items()))
    if args.misses:
        write_misses(args.misses, scored, predictions)
    return 0


def split_halves(scored: list[dict]) -> tuple[set[str], set[str]]:
    by_site = defaultdict(list)
    for r in scored:
        by_site[r["site_key"]].append(r["id"])
    first, second = set(), set()
    for ids in by_site.values():
        for i, pid in enumerate(sorted(ids)):
            (first if i % 2 == 0 else second).add(pid)
    return first, second


def print_table(scored: list[dict], predictions: dict[str, dict], total: int, corpus: str) -> None:
    dated = [r for r in scored if r["gold_date"]]
    authored = [r for r in scored if r["gold_author"]]
    print(f"corpus={corpus} pages={total} scored: {len(dated)} with a declared date "
          f"({sum(held_out(r['site_key']) for r in dated)} on held-out sites), {len(authored)} with a declared author "
          f"({sum(held_out(r['site_key']) for r in authored)} on held-out sites)")
    print(f"{'system':34} {'dates':>7} {'dev':>7} {'held-out':>9} {'authors':>8} {'dev':>7} {'held-out':>9}"
          f" {'dates+-1d':>10} {'declared day':>13}")
    for name, found in predictions.items():
        row = []
        for gold_key, ok, pool in (("gold_date", date_ok, dated), ("gold_author", author_ok, authored),
                                   ("gold_date", date_near, dated), ("gold_date", declared_day, dated)):
            index = 0 if gold_key == "gold_date" else 1
            for part in (pool, [r for r in pool if not held_out(r["site_key"])],
                         [r for r in pool if held_out(r["site_key"])]):
                hits = sum(ok(r[gold_key], found.get(r["id"], (None, None))[index]) for r in part)
                row.append(f"{100 * hits / len(part):6.1f}%" if part else "      -")
        if name == "htmldate":
            row[3:6] = ["      -"] * 3
        print(f"{name:34} {row[0]:>7} {row[1]:>7} {row[2]:>9} {row[3]:>8} {row[4]:>7} {row[5]:>9} {row[6]:>10}"
              f" {row[9]:>13}")


def write_misses(path: Path, scored: list[dict], predictions: dict[str, dict]) -> None:
    name = next(iter(predictions))
    with open(path, "w", encoding="utf-8") as f:
        for r in scored:
            if held_out(r["site_key"]):
                continue
            date, author = predictions[name].get(r["id"], (None, None))
            miss = Counter()
            if r["gold_date"] and not date_ok(r["gold_date"], date):
                miss["date"] += 1
            if r["gold_author"] and not author_ok(r["gold_author"], author):
                miss["author"] += 1
            if miss:
                f.write(json.dumps({"id": r["id"], "url": r["url"], "site": r["site_key"], "miss": sorted(miss),
                                    "gold": [r["gold_date"], r["gold_author"]], "got": [date, author]}) + "\n")


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    sys.exit(main())
